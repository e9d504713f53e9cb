//! The overview: the figures of `oprec stats` (what is failing and why), the transport's depth,
//! the controls in force, and the activity chart.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use axum::extract::Query;
use chrono::Duration;
use oprec_core::Status;
use oprec_core::operator::StatsReport;
use serde::Deserialize;

use maud::PreEscaped;

use crate::error::{AppError, store};
use crate::html::{badge, count, esc, query, span, when};
use crate::layout::{Nav, Page};
use crate::security::Viewer;
use crate::{State, chart};

/// The chart's window.
#[derive(Deserialize, Default)]
pub(crate) struct OverviewQuery {
    #[serde(default)]
    hours: Option<String>,
}

fn hours(q: &OverviewQuery) -> Result<i64, AppError> {
    match q.hours.as_deref().map(str::trim) {
        None | Some("") => Ok(3),
        Some(h) => match h.parse::<i64>() {
            Ok(n @ 1..=24) => Ok(n),
            _ => Err(AppError::bad_request(
                "The chart covers 1 to 24 hours: give hours=1 … hours=24.",
            )),
        },
    }
}

fn card(title: &str, value: &str, note: &str, tone: &str) -> String {
    format!(
        r#"<div class="card {tone}"><div class="card-t">{}</div><div class="card-v">{value}</div><div class="card-n">{note}</div></div>"#,
        esc(title)
    )
}

/// A two-column table of counts, in `order` first.
fn counts(
    map: &BTreeMap<String, u64>,
    order: &[&str],
    empty: &str,
    link: impl Fn(&str) -> Option<String>,
) -> String {
    if map.values().all(|n| *n == 0) {
        return format!(r#"<p class="muted">{}</p>"#, esc(empty));
    }
    let mut keys: Vec<&str> = order
        .iter()
        .copied()
        .filter(|k| map.contains_key(*k))
        .collect();
    keys.extend(
        map.keys()
            .map(String::as_str)
            .filter(|k| !order.contains(k)),
    );
    let mut t = String::from(r#"<table class="kv">"#);
    for k in keys {
        let n = map[k];
        let label = match link(k) {
            Some(href) => format!(r#"<a href="{}">{}</a>"#, esc(&href), badge(k)),
            None => badge(k),
        };
        let _ = write!(
            t,
            r#"<tr><td>{label}</td><td class="num">{}</td></tr>"#,
            count(n)
        );
    }
    t.push_str("</table>");
    t
}

fn figures(r: &StatsReport) -> String {
    let now = r.at.unwrap_or_else(chrono::Utc::now);
    let g = |k: &str| r.by_status.get(k).copied().unwrap_or(0);
    let dead_hour: u64 = r.dead_last_hour_by_kind.values().sum();
    let dead_day: u64 = r.dead_last_day_by_kind.values().sum();
    let mut s = String::from(r#"<div class="cards">"#);
    s.push_str(&card(
        "Pending",
        &count(g("pending")),
        &format!("{} running", count(g("running"))),
        "",
    ));
    s.push_str(&card(
        "Dead",
        &count(g("dead")),
        &format!(
            "+{} last hour · +{} last day",
            count(dead_hour),
            count(dead_day)
        ),
        if dead_hour > 0 { "bad" } else { "" },
    ));
    s.push_str(&card(
        "Reconciling",
        &count(r.reconciling),
        "unknown outcomes awaiting a decision",
        if r.reconciling > 0 { "warn" } else { "" },
    ));
    s.push_str(&card(
        "Held",
        &count(g("held")),
        "quarantined or awaiting repair",
        if g("held") > 0 { "warn" } else { "" },
    ));
    s.push_str(&card(
        "Oldest eligible",
        &match &r.oldest_eligible {
            Some(o) => esc(&span(now - o.next_eligible_at)),
            None => "—".into(),
        },
        &match &r.oldest_eligible {
            Some(o) => format!(
                r#"overdue: <a href="/operations/{}">{}</a>"#,
                o.id,
                esc(&o.kind)
            ),
            None => "nothing overdue".into(),
        },
        "",
    ));
    s.push_str(&card(
        "Backlog age",
        &match r.backlog_age_seconds {
            Some(a) => esc(&span(Duration::seconds(a))),
            None => "—".into(),
        },
        "oldest unfinished, by creation",
        "",
    ));
    s.push_str(&card(
        "Attempts per success",
        &match r.attempts_per_success {
            Some(a) => format!("{a:.2}"),
            None => "—".into(),
        },
        "1.00: every effect on its first attempt",
        "",
    ));
    s.push_str("</div>");
    s
}

fn dead_table(r: &StatsReport) -> String {
    if r.dead_by_kind.is_empty() {
        return r#"<p class="muted">No dead operations.</p>"#.into();
    }
    let mut t = String::from(
        r#"<table class="grid"><thead><tr><th>Kind</th><th class="num">Dead</th><th class="num">Last hour</th><th class="num">Last day</th></tr></thead><tbody>"#,
    );
    for (kind, n) in &r.dead_by_kind {
        let of = |m: &BTreeMap<String, u64>| count(m.get(kind).copied().unwrap_or(0));
        let _ = write!(
            t,
            r#"<tr><td><a href="/dead{}">{}</a></td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            esc(&query(&[("kind", kind)])),
            esc(kind),
            count(*n),
            of(&r.dead_last_hour_by_kind),
            of(&r.dead_last_day_by_kind)
        );
    }
    t.push_str("</tbody></table>");
    t
}

/// The live workers: who runs which kinds, on which code version.
fn workers_list(
    workers: &[oprec_core::WorkerRecord],
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    if workers.is_empty() {
        return format!(
            r#"<p class="muted" id="workers">No worker seen in the last {} s.</p>"#,
            oprec_core::WORKER_LIVE_SECS
        );
    }
    let mut t = String::from(r#"<table class="kv" id="workers">"#);
    for w in workers {
        let _ = write!(
            t,
            r#"<tr><td><span class="mono">{}</span><div class="muted small">{} · {} · seen {}</div></td><td class="small">{}</td></tr>"#,
            esc(&w.id),
            esc(&w.host),
            esc(w.code_version.as_deref().unwrap_or("no version")),
            when(w.last_seen_at, now),
            esc(&w.kinds.join(", "))
        );
    }
    t.push_str("</table>");
    t
}

/// `GET /`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    q: Result<Query<OverviewQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Page, AppError> {
    let q = q.map(|q| q.0).unwrap_or_default();
    let hours = hours(&q)?;
    let r = state.store.stats().await.map_err(store)?;
    let now = r.at.unwrap_or_else(chrono::Utc::now);
    let activity = state
        .store
        .activity_per_minute(now - Duration::hours(hours))
        .await
        .map_err(store)?;
    let controls = state.store.control_list().await.map_err(store)?;
    let workers = state
        .store
        .worker_list(Duration::seconds(oprec_core::WORKER_LIVE_SECS))
        .await
        .map_err(store)?;
    let depth = match &state.transport {
        Some(t) => Some(t.depth().await),
        None => None,
    };

    let mut b = String::new();
    let _ = write!(
        b,
        r#"<div class="head"><h1>Overview</h1><p class="muted">{} · figures at {}</p></div>"#,
        esc(&state.store_name),
        when(now, now)
    );
    if !controls.is_empty() {
        let _ = write!(
            b,
            r#"<p class="notice warn"><strong>{} control{} in force:</strong> {} — <a href="/controls">manage</a></p>"#,
            controls.len(),
            if controls.len() == 1 { "" } else { "s" },
            controls
                .iter()
                .map(|c| format!(
                    "{} {} {}",
                    esc(c.action.as_str()),
                    esc(c.scope.as_str()),
                    esc(&c.value)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !r.unhandled.is_empty() {
        let _ = write!(
            b,
            r#"<p class="notice bad" id="unhandled"><strong>No live worker handles:</strong> {} — these wait until a worker that registers their kind runs.</p>"#,
            r.unhandled
                .iter()
                .map(|u| format!(
                    r#"<a href="/operations{}">{}</a> ({} pending, {} eligible, oldest created {})"#,
                    esc(&query(&[("kind", &u.kind), ("status", "pending")])),
                    esc(&u.kind),
                    count(u.pending),
                    count(u.eligible),
                    when(u.oldest_created_at, now)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    b.push_str(&figures(&r));

    let _ = write!(
        b,
        r#"<section class="panel"><div class="panel-h"><h2>Activity</h2><nav class="seg">{}</nav></div>{}</section>"#,
        [1, 3, 6, 12, 24]
            .iter()
            .map(|h| format!(
                r#"<a href="/?hours={h}"{}>{h}h</a>"#,
                if *h == hours {
                    r#" class="active""#
                } else {
                    ""
                }
            ))
            .collect::<String>(),
        chart::activity(&activity, now, hours * 60)
    );

    b.push_str(r#"<div class="cols">"#);
    // Status declares its variants in the order work flows through them.
    let statuses: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    let _ = write!(
        b,
        r#"<section class="panel"><h2>Operations by status</h2>{}</section>"#,
        counts(&r.by_status, &statuses, "No operations yet.", |k| Some(
            format!("/operations?status={k}")
        ))
    );
    let _ = write!(
        b,
        r#"<section class="panel"><h2>Pending by failure class</h2><p class="muted small">none: not failed yet</p>{}</section>"#,
        counts(
            &r.pending_by_class,
            &["none"],
            "No pending operations.",
            |k| { (k != "none").then(|| format!("/operations?status=pending&class={k}")) }
        )
    );
    let transport = match (&state.transport_name, depth) {
        (Some(name), Some(Ok(d))) => format!(
            r#"<p class="big">{}</p><p class="muted">wake-ups waiting on {}</p><p><a href="/transport">Transport →</a></p>"#,
            count(d),
            esc(name)
        ),
        (Some(name), Some(Err(e))) => {
            tracing::warn!(error = %e, "transport depth");
            format!(
                r#"<p class="notice bad">{} did not answer: its depth is unknown. Operations are safe in the store.</p>"#,
                esc(name)
            )
        }
        _ => r#"<p class="muted">No broker configured: workers poll the store.</p>"#.to_owned(),
    };
    let _ = write!(
        b,
        r#"<section class="panel"><h2>Transport</h2>{transport}<h2>Workers</h2>{}</section>"#,
        workers_list(&workers, now)
    );
    b.push_str("</div>");

    b.push_str(r#"<div class="cols">"#);
    let _ = write!(
        b,
        r#"<section class="panel wide"><h2>Dead per kind</h2>{}</section>"#,
        dead_table(&r)
    );
    let _ = write!(
        b,
        r#"<section class="panel"><h2>Attempts last hour by dependency</h2>{}<h2>Dead last day by code version</h2>{}<h2>Backlog by age</h2>{}</section>"#,
        counts(
            &r.attempts_last_hour_by_dependency,
            &[],
            "No attempts in the last hour.",
            |_| None
        ),
        counts(
            &r.dead_last_day_by_code_version,
            &[],
            "No deaths in the last day.",
            |_| None
        ),
        counts(
            &r.backlog_by_age,
            &["<1h", "1h-1d", "1d-7d", ">7d"],
            "No unfinished operations.",
            |_| None
        ),
    );
    b.push_str("</div>");
    Ok(Page::new("Overview", Nav::Overview, &viewer).body(PreEscaped(b)))
}
