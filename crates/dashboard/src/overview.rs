//! The overview: the figures of `oprec stats` (what is failing and why, in
//! [`crate::figures`]), the transport's depth, the live workers, the controls in force, and the
//! activity chart.

use axum::extract::Query;
use chrono::Duration;
use maud::{Markup, html};
use std::collections::BTreeMap;

use oprec_core::operator::{ActivityParams, Control, StatsReport, WorkerListParams};
use oprec_core::{AgeBucket, NO_CLASS, Status};
use serde::Deserialize;

use crate::error::{AppError, store};
use crate::figures::{counts, dead_table, figures, limits_table, named};
use crate::html::{count, when};
use crate::layout::{Nav, Page};
use crate::query_string::query;
use crate::viewer::Viewer;
use crate::{State, chart};

/// How often the overview refreshes itself: its figures are the heaviest query of the dashboard
/// (0.8 s on a million operations), so not more often than this.
const OVERVIEW_LIVE_SECONDS: u32 = 10;

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

/// The live workers: who runs which kinds, on which code version.
fn workers_list(
    workers: &[oprec_core::WorkerRecord],
    now: chrono::DateTime<chrono::Utc>,
) -> Markup {
    if workers.is_empty() {
        return html! {
            p.muted #workers { "No worker seen in the last " (oprec_core::WORKER_LIVE_SECS) " s." }
        };
    }
    html! {
        table.kv #workers {
            @for w in workers {
                tr {
                    td {
                        span.mono { (w.id) }
                        div.muted.small {
                            (w.host) " · " (w.code_version.as_deref().unwrap_or("no version"))
                            " · seen " (when(w.last_seen_at, now))
                        }
                    }
                    td.small { (w.kinds.join(", ")) }
                }
            }
        }
    }
}

/// What needs attention before the figures: controls in force, and kinds no live worker handles.
fn notices(controls: &[Control], r: &StatsReport, now: chrono::DateTime<chrono::Utc>) -> Markup {
    html! {
        @if !controls.is_empty() {
            p.notice.warn {
                strong {
                    (controls.len()) " control" @if controls.len() != 1 { "s" } " in force:"
                }
                " "
                @for (i, c) in controls.iter().enumerate() {
                    @if i > 0 { ", " }
                    (c.action.as_str()) " " (c.scope.as_str()) " " (c.value)
                }
                " — " a href="/controls" { "manage" }
            }
        }
        @if !r.unhandled.is_empty() {
            p.notice.bad #unhandled {
                strong { "No live worker handles:" } " "
                @for (i, u) in r.unhandled.iter().enumerate() {
                    @if i > 0 { "; " }
                    a href={ "/operations" (query(&[("kind", &u.kind), ("status", "pending")])) } {
                        (u.kind)
                    }
                    " (" (count(u.pending)) " pending, " (count(u.eligible))
                    @if u.eligible_at_least { "+" }
                    " eligible, oldest created " (when(u.oldest_created_at, now)) ")"
                }
                " — these wait until a worker that registers their kind runs."
            }
        }
    }
}

/// The broker's depth, or why it is unknown.
fn transport(name: Option<&str>, depth: Option<oprec_core::Result<u64>>) -> Markup {
    match (name, depth) {
        (Some(name), Some(Ok(d))) => html! {
            p.big { (count(d)) }
            p.muted { "wake-ups waiting on " (name) }
            p { a href="/transport" { "Transport →" } }
        },
        (Some(name), Some(Err(e))) => {
            tracing::warn!(error = %e, "transport depth");
            html! {
                p.notice.bad {
                    (name) " did not answer: its depth is unknown. Operations are safe in the store."
                }
            }
        }
        _ => html! { p.muted { "No broker configured: workers poll the store." } },
    }
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
        .activity_per_minute(ActivityParams {
            since: now - Duration::hours(hours),
        })
        .await
        .map_err(store)?;
    let controls = state.store.control_list().await.map_err(store)?;
    let limits = state.store.limit_list().await.map_err(store)?;
    let workers = state
        .store
        .worker_list(WorkerListParams {
            seen_within: Duration::seconds(oprec_core::WORKER_LIVE_SECS),
        })
        .await
        .map_err(store)?;
    let depth = match &state.transport {
        Some(t) => {
            if let Err(e) =
                oprec_ops::purge::know_store_kinds(state.store.as_ref(), t.as_ref()).await
            {
                tracing::warn!(error = %e, "listing the store's kinds for the transport depth");
            }
            Some(t.depth(None).await)
        }
        None => None,
    };
    // The typed keys declare their values in the order people read them (work flows through
    // the statuses in their order; the age buckets run from young to old).
    let statuses: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    let ages: Vec<&str> = AgeBucket::ALL.iter().map(|a| a.as_str()).collect();
    let pending: BTreeMap<String, u64> = r
        .pending_by_class
        .iter()
        .map(|(c, n)| (c.map_or(NO_CLASS, |c| c.as_str()).to_owned(), *n))
        .collect();

    let body = html! {
        div #overview data-live-region {
            div.head {
                h1 { "Overview" }
                p.muted { (state.store_name) " · figures at " (when(now, now)) }
            }
            (notices(&controls, &r, now))
            (figures(&r))
            section.panel {
                div.panel-h {
                    h2 { "Activity" }
                    nav.seg {
                        @for h in [1, 3, 6, 12, 24] {
                            a href={ "/?hours=" (h) } class=[(h == hours).then_some("active")] {
                                (h) "h"
                            }
                        }
                    }
                }
                (chart::activity(&activity, now, hours * 60))
            }
            div.cols {
                section.panel {
                    h2 { "Operations by status" }
                    (counts(&named(&r.by_status), &statuses, "No operations yet.", |k| {
                        Some(format!("/operations?status={k}"))
                    }))
                }
                section.panel {
                    h2 { "Pending by failure class" }
                    p.muted.small { "none: not failed yet" }
                    (counts(&pending, &[NO_CLASS], "No pending operations.", |k| {
                        (k != NO_CLASS).then(|| format!("/operations?status=pending&class={k}"))
                    }))
                }
                section.panel {
                    h2 { "Transport" }
                    (transport(state.transport_name.as_deref(), depth))
                    h2 { "Workers" }
                    (workers_list(&workers, now))
                }
            }
            section.panel {
                h2 { "Limits across the fleet" }
                p.muted.small { "Work beyond a limit waits, its attempt unspent." }
                (limits_table(&limits, Some(&r)))
            }
            div.cols {
                section.panel.wide {
                    h2 { "Dead per kind" }
                    (dead_table(&r))
                }
                section.panel {
                    h2 { "Attempts last hour by dependency" }
                    (counts(
                        &r.attempts_last_hour_by_dependency,
                        &[],
                        "No attempts in the last hour.",
                        |_| None,
                    ))
                    h2 { "Dead last day by code version" }
                    (counts(&r.dead_last_day_by_code_version, &[], "No deaths in the last day.", |_| None))
                    h2 { "Backlog by age" }
                    (counts(
                        &named(&r.backlog_by_age),
                        &ages,
                        "No unfinished operations.",
                        |_| None,
                    ))
                }
            }
        }
    };
    Ok(Page::new("Overview", Nav::Overview, &viewer)
        .body(body)
        .live(OVERVIEW_LIVE_SECONDS))
}
