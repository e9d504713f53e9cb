//! Attempts per minute over time as a self-contained SVG a browser opens: one panel per policy,
//! stacked on one time axis and one logarithmic attempts axis, so the fixed loop's tens of
//! thousands a minute and a ladder's handful can be read side by side without one line hiding
//! another. Each panel says what its policy came to: attempts, the storm after recovery, dead and
//! succeeded.

use std::fmt::Write;

use crate::SimReport;

const W: f64 = 960.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 66.0;
const PANEL: f64 = 132.0;
/// The panel's caption band: the policy's name, then its figures.
const CAPTION: f64 = 34.0;
const GAP: f64 = 14.0;
const BOTTOM: f64 = 48.0;
const COLOURS: [&str; 6] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `1234567` as `1,234,567`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A decade's label: `1`, `100`, `10k`, `1M`.
fn decade(d: u32) -> String {
    match d {
        0..=2 => 10u64.pow(d).to_string(),
        3..=5 => format!("{}k", 10u64.pow(d - 3)),
        _ => format!("{}M", 10u64.pow(d - 6)),
    }
}

/// What a panel says about its policy.
fn summary(r: &SimReport) -> String {
    let end = match r.backlog_gone_after_seconds {
        Some(s) => format!("backlog gone after {}h{:02}m", s / 3600, s % 3600 / 60),
        None => format!("{} still waiting", count(r.unresolved)),
    };
    format!(
        "{} attempts ({} while down) · peak {}/s after recovery · {} succeeded, {} dead · {end}",
        count(r.attempts),
        count(r.attempts_during_outage),
        count(r.peak_per_second_after_recovery),
        count(r.succeeded),
        count(r.dead),
    )
}

/// The chart of `reports` (attempts per minute, log scale, a panel each), with the outage's end
/// marked at `outage_minutes`.
pub fn chart(reports: &[SimReport], outage_minutes: usize, title: &str) -> String {
    let minutes = reports
        .iter()
        .map(|r| r.per_minute.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let peak = reports
        .iter()
        .flat_map(|r| r.per_minute.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1);
    let decades = (peak as f64).log10().ceil().max(1.0) as u32;
    let h = TOP + reports.len().max(1) as f64 * (PANEL + GAP) - GAP + BOTTOM;
    let plot_bottom = h - BOTTOM;
    let x = |m: usize| LEFT + (W - LEFT - RIGHT) * m as f64 / minutes as f64;
    // Within a panel whose top is `top`: 0 attempts on its floor, n ≥ 1 at log10(n) + 1 "decades"
    // above it, leaving room at the top for the panel's caption.
    let y = |top: f64, n: u64| {
        let v = if n == 0 {
            0.0
        } else {
            (n as f64).log10() + 1.0
        };
        let floor = top + PANEL;
        floor - (PANEL - CAPTION - 4.0) * v / (f64::from(decades) + 1.0)
    };

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(svg, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let _ = write!(
        svg,
        r#"<text x="{}" y="24" font-size="16" text-anchor="middle">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    let _ = write!(
        svg,
        r##"<text x="{}" y="42" font-size="11" fill="#555" text-anchor="middle">attempts per minute, logarithmic; one panel per retry policy, all on the same scales</text>"##,
        W / 2.0
    );
    // Decade lines, labelled on the left (every other one when there are many).
    let every = if decades > 4 { 2 } else { 1 };

    // Hours along the shared time axis, with faint guides through every panel.
    let hours = minutes / 60;
    let step = (hours / 12).max(1).div_ceil(6) * 6;
    for hr in (0..=hours).step_by(step.max(1)) {
        let xx = x(hr * 60);
        let _ = write!(
            svg,
            r##"<line x1="{xx}" y1="{TOP}" x2="{xx}" y2="{plot_bottom}" stroke="#eee"/>"##
        );
        let _ = write!(
            svg,
            r#"<text x="{xx}" y="{}" text-anchor="middle">{hr}h</text>"#,
            plot_bottom + 16.0
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">hours since the dependency went down</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        h - 10.0
    );

    // The recovery, through every panel (the captions are drawn over it).
    let rx = x(outage_minutes);
    let _ = write!(
        svg,
        r#"<line x1="{rx}" y1="{}" x2="{rx}" y2="{plot_bottom}" stroke="black" stroke-dasharray="5 4"/>"#,
        TOP - 6.0
    );
    let _ = write!(
        svg,
        r#"<text x="{rx}" y="{}" text-anchor="middle" font-size="11">dependency recovers</text>"#,
        TOP - 9.0
    );
    for (i, r) in reports.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let top = TOP + i as f64 * (PANEL + GAP);
        let floor = top + PANEL;
        let _ = write!(
            svg,
            r##"<rect x="{LEFT}" y="{top}" width="{}" height="{PANEL}" fill="none" stroke="#ccc"/>"##,
            W - LEFT - RIGHT
        );
        for d in (0..=decades).filter(|d| d % every == 0) {
            let yy = y(top, 10u64.pow(d));
            let _ = write!(
                svg,
                r##"<line x1="{LEFT}" y1="{yy}" x2="{}" y2="{yy}" stroke="#e4e4e4"/>"##,
                W - RIGHT
            );
            let _ = write!(
                svg,
                r##"<text x="{}" y="{}" text-anchor="end" font-size="10" fill="#555">{}</text>"##,
                LEFT - 5.0,
                yy + 3.5,
                decade(d)
            );
        }
        let _ = write!(
            svg,
            r##"<text x="{}" y="{}" text-anchor="end" font-size="10" fill="#555">0</text>"##,
            LEFT - 5.0,
            floor + 3.5
        );
        // The series as a filled step area: a minute's attempts span that minute; a run of
        // equal minutes is one segment.
        let mut d = format!("M{:.1},{floor:.1}", x(0));
        let mut m = 0;
        while m < r.per_minute.len() {
            let n = r.per_minute[m];
            let run = r.per_minute[m..].iter().take_while(|v| **v == n).count();
            let yy = y(top, n);
            let _ = write!(d, " L{:.1},{yy:.1} L{:.1},{yy:.1}", x(m), x(m + run));
            m += run;
        }
        let _ = write!(d, " L{:.1},{floor:.1} Z", x(r.per_minute.len()));
        let _ = write!(
            svg,
            r#"<path class="series" d="{d}" fill="{colour}" fill-opacity="0.35" stroke="{colour}" stroke-width="1" stroke-linejoin="round"/>"#
        );
        // The caption, on a white band so no series runs through it.
        let _ = write!(
            svg,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="white" fill-opacity="0.85"/>"##,
            LEFT + 1.0,
            top + 1.0,
            W - LEFT - RIGHT - 2.0,
            CAPTION - 2.0
        );
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" font-weight="bold" fill="{colour}">{}</text>"#,
            LEFT + 6.0,
            top + 14.0,
            escape(&r.policy)
        );
        let _ = write!(
            svg,
            r##"<text x="{}" y="{}" font-size="11" fill="#333">{}</text>"##,
            LEFT + 6.0,
            top + 28.0,
            escape(&summary(r))
        );
    }

    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outage, simulate};
    use chrono::Duration;

    #[test]
    fn draws_one_panel_per_policy_and_escapes_names() {
        let o = Outage {
            ops: 10,
            outage: Duration::hours(2),
            enqueue_over: Duration::zero(),
            after: Duration::hours(1),
            seed: 1,
        };
        let a = simulate(&o, &"fixed:60s".parse().unwrap());
        let mut b = simulate(&o, &"ladder:0,60".parse().unwrap());
        b.policy = "<script>".into();
        let svg = chart(&[a, b], 120, "test & chart");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches(r#"class="series""#).count(), 2);
        assert!(svg.contains("&lt;script&gt;") && svg.contains("test &amp; chart"));
        assert!(!svg.contains("<script>"));
        // 120 attempts while down, one at recovery, for each of 10 operations.
        assert!(svg.contains("1,210 attempts (1,200 while down)"), "{svg}");
    }

    #[test]
    fn labels_decades_compactly() {
        assert_eq!(
            (0..=7).map(decade).collect::<Vec<_>>(),
            ["1", "10", "100", "1k", "10k", "100k", "1M", "10M"]
        );
    }
}
