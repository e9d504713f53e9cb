//! The overview's activity chart, drawn on the server as inline SVG (no script, no library): two
//! panels over the same minutes — attempts per minute with the failed ones, and promotions to
//! dead per minute.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, DurationRound, Utc};
use maud::{Markup, html};
use oprec_core::operator::ActivityMinute;

use crate::html::count;

const W: f64 = 960.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 12.0;
const TOP_H: f64 = 150.0;
const BOTTOM_H: f64 = 70.0;
const GAP: f64 = 34.0;

/// A "nice" axis maximum at or above `v`.
fn nice_max(v: u64) -> u64 {
    let v = v.max(1);
    let mut step = 1u64;
    loop {
        for m in [1, 2, 4, 6, 8] {
            if step * m >= v {
                return step * m;
            }
        }
        step *= 10;
    }
}

/// The colour of attempts (and of their legend).
const ATTEMPTS_FILL: &str = "#4f7cff";
/// The colour of failed attempts: a dark amber, 5:1 against the panel (non-text contrast wants
/// 3:1), and unlike the dead red beside it.
const FAILED_FILL: &str = "#b45309";
/// The colour of promotions to dead.
const DEAD_FILL: &str = "#dc2626";
/// The colour of the grid lines.
const GRID_STROKE: &str = "#e5e7eb";

/// A coordinate with `digits` decimals.
fn fixed(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

/// The chart of `points` over the `minutes` before `now`.
pub(crate) fn activity(points: &[ActivityMinute], now: DateTime<Utc>, minutes: i64) -> Markup {
    let end = now.duration_trunc(Duration::minutes(1)).unwrap_or(now);
    let start = end - Duration::minutes(minutes - 1);
    let by_minute: BTreeMap<DateTime<Utc>, &ActivityMinute> =
        points.iter().map(|p| (p.minute, p)).collect();
    let series: Vec<(DateTime<Utc>, u64, u64, u64)> = (0..minutes)
        .map(|i| {
            let m = start + Duration::minutes(i);
            by_minute
                .get(&m)
                .map(|p| (m, p.attempts, p.failed, p.dead))
                .unwrap_or((m, 0, 0, 0))
        })
        .collect();
    let max_a = nice_max(series.iter().map(|s| s.1).max().unwrap_or(0));
    let max_d = nice_max(series.iter().map(|s| s.3).max().unwrap_or(0));
    let total_a: u64 = series.iter().map(|s| s.1).sum();
    let total_f: u64 = series.iter().map(|s| s.2).sum();
    let total_d: u64 = series.iter().map(|s| s.3).sum();
    let plot_w = W - LEFT - RIGHT;
    let bw = plot_w / minutes as f64;
    let bar_w = fixed((bw - 0.6).max(0.6), 2);
    let x = |i: usize| LEFT + i as f64 * bw;
    let top0 = 22.0;
    let bot0 = top0 + TOP_H + GAP;
    let h = bot0 + BOTTOM_H + 24.0;
    let axis_y = fixed(bot0 + BOTTOM_H + 16.0, 1);
    // Time labels: about six, on whole minutes.
    let every = (minutes / 6).max(1) as usize;
    let label = format!(
        "Attempts and promotions to dead per minute over the last {minutes} minutes: {} \
         attempts, {} failed, {} promoted to dead",
        count(total_a),
        count(total_f),
        count(total_d)
    );

    html! {
        svg.chart viewBox={ "0 0 " (W) " " (h) } role="img" aria-label=(label)
            xmlns="http://www.w3.org/2000/svg" {
            // Panel titles and legends.
            text.ct x=(LEFT) y="14" { "Attempts per minute" }
            rect x=(LEFT + 170.0) y="5" width="10" height="10" fill=(ATTEMPTS_FILL) {}
            text.cl x=(LEFT + 184.0) y="14" {
                "succeeded or retried (" (count(total_a - total_f)) ")"
            }
            rect x=(LEFT + 360.0) y="5" width="10" height="10" fill=(FAILED_FILL) {}
            text.cl x=(LEFT + 374.0) y="14" { "failed (" (count(total_f)) ")" }
            text.ct x=(LEFT) y=(bot0 - 8.0) {
                "Promoted to dead per minute (" (count(total_d)) ")"
            }
            // Grid and axis labels.
            @for (y0, ph, max) in [(top0, TOP_H, max_a), (bot0, BOTTOM_H, max_d)] {
                @let fracs: &[f64] = if max < 2 { &[0.0, 1.0] } else { &[0.0, 0.5, 1.0] };
                @for frac in fracs {
                    @let y = y0 + ph - ph * frac;
                    line x1=(LEFT) x2=(W - RIGHT) y1=(fixed(y, 1)) y2=(fixed(y, 1))
                        stroke=(GRID_STROKE) {}
                    text.ax x=(LEFT - 6.0) y=(fixed(y + 4.0, 1)) text-anchor="end" {
                        (count((max as f64 * frac).round() as u64))
                    }
                }
            }
            // Bars.
            @for (i, (m, a, f, d)) in series.iter().enumerate() {
                @let tip = format!(
                    "{} — {} attempts, {} failed, {} dead",
                    m.format("%H:%M"),
                    count(*a),
                    count(*f),
                    count(*d)
                );
                @if *a > 0 {
                    @let ha = TOP_H * *a as f64 / max_a as f64;
                    @let hf = TOP_H * *f as f64 / max_a as f64;
                    g {
                        title { (tip) }
                        rect x=(fixed(x(i), 2)) y=(fixed(top0 + TOP_H - ha, 2)) width=(bar_w)
                            height=(fixed(ha, 2)) fill=(ATTEMPTS_FILL) {}
                        @if *f > 0 {
                            rect x=(fixed(x(i), 2)) y=(fixed(top0 + TOP_H - hf, 2)) width=(bar_w)
                                height=(fixed(hf, 2)) fill=(FAILED_FILL) {}
                        }
                    }
                }
                @if *d > 0 {
                    @let hd = BOTTOM_H * *d as f64 / max_d as f64;
                    rect x=(fixed(x(i), 2)) y=(fixed(bot0 + BOTTOM_H - hd, 2)) width=(bar_w)
                        height=(fixed(hd, 2)) fill=(DEAD_FILL) {
                        title { (tip) }
                    }
                }
            }
            @for (i, (m, ..)) in series.iter().enumerate().step_by(every) {
                text.ax x=(fixed(x(i), 1)) y=(axis_y) { (m.format("%H:%M")) }
            }
            text.ax x=(fixed(W - RIGHT, 1)) y=(axis_y) text-anchor="end" { "UTC" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn draws_every_minute_and_the_totals() {
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 30, 20).unwrap();
        let p = ActivityMinute {
            minute: Utc.with_ymd_and_hms(2026, 1, 5, 9, 29, 0).unwrap(),
            attempts: 40,
            failed: 10,
            dead: 3,
        };
        let svg = activity(&[p], now, 60).into_string();
        assert!(svg.contains("40 attempts, 10 failed, 3 dead"));
        assert!(svg.contains("Promoted to dead per minute (3)"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(nice_max(40), 40);
        assert_eq!(nice_max(41), 60);
        assert_eq!(nice_max(5), 6);
        assert_eq!(nice_max(0), 1);
    }
}
