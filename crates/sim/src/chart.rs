//! Attempts per minute over time, one line per policy, as a self-contained SVG a browser opens.
//! The y axis is logarithmic: the fixed loop's tens of thousands a minute and a ladder's handful
//! belong on one chart.

use std::fmt::Write;

use crate::SimReport;

const W: f64 = 960.0;
const H: f64 = 480.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 6] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart of `reports` (attempts per minute, log scale), with the outage's end marked at
/// `outage_minutes`.
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
    let decades = (peak as f64).log10().ceil().max(1.0);
    let x = |m: usize| LEFT + (W - LEFT - RIGHT) * m as f64 / minutes as f64;
    // 0 attempts sit on the axis; n ≥ 1 at log10(n) + 1 "decades" above it.
    let y = |n: u64| {
        let v = if n == 0 {
            0.0
        } else {
            (n as f64).log10() + 1.0
        };
        H - BOTTOM - (H - TOP - BOTTOM) * v / (decades + 1.0)
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(svg, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = write!(
        svg,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    // Axes and grid.
    let _ = write!(
        svg,
        r#"<line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="black"/>"#,
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM
    );
    let _ = write!(
        svg,
        r#"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="black"/>"#,
        H - BOTTOM
    );
    for d in 0..=(decades as u32) {
        let n = 10u64.pow(d);
        let yy = y(n);
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{yy}" x2="{}" y2="{yy}" stroke="#ddd"/>"##,
            W - RIGHT
        );
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end">{n}</text>"#,
            LEFT - 6.0,
            yy + 4.0
        );
    }
    let hours = minutes / 60;
    let step = (hours / 12).max(1).div_ceil(6) * 6;
    for h in (0..=hours).step_by(step.max(1)) {
        let xx = x(h * 60);
        let _ = write!(
            svg,
            r#"<text x="{xx}" y="{}" text-anchor="middle">{h}h</text>"#,
            H - BOTTOM + 18.0
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">hours since the outage began</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 10.0
    );
    let _ = write!(
        svg,
        r#"<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">attempts per minute (log)</text>"#,
        H / 2.0,
        H / 2.0
    );
    let rx = x(outage_minutes);
    let _ = write!(
        svg,
        r#"<line x1="{rx}" y1="{TOP}" x2="{rx}" y2="{}" stroke="black" stroke-dasharray="4 4"/>"#,
        H - BOTTOM
    );
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}">dependency recovers</text>"#,
        rx + 4.0,
        TOP + 12.0
    );
    // One polyline per policy.
    for (i, r) in reports.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = r
            .per_minute
            .iter()
            .enumerate()
            .map(|(m, n)| format!("{:.1},{:.1}", x(m), y(*n)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
            points.join(" ")
        );
        let ly = TOP + 14.0 + 16.0 * (i as f64 + 1.0);
        let _ = write!(
            svg,
            r#"<rect x="{}" y="{}" width="12" height="3" fill="{colour}"/>"#,
            W - RIGHT - 300.0,
            ly - 4.0
        );
        let _ = write!(
            svg,
            r#"<text x="{}" y="{ly}">{}</text>"#,
            W - RIGHT - 282.0,
            escape(&r.policy)
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
    fn draws_one_line_per_policy_and_escapes_names() {
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
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("&lt;script&gt;") && svg.contains("test &amp; chart"));
        assert!(!svg.contains("<script>"));
    }
}
