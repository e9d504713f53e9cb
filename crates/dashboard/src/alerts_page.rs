//! The alert log: what was told to which owner (deaths, configuration holds, the dependency
//! pauses they opened), through which route, and whether it arrived, newest first; `?status=`
//! narrows it to pending, sent or failed alerts.

use axum::extract::Query;
use maud::html;
use oprec_core::alert::{AlertEvent, AlertListParams, AlertStatus};
use serde::Deserialize;

use crate::State;
use crate::error::{AppError, store};
use crate::html::{or_dash, when};
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// Rows shown.
const ROWS: u32 = 200;

/// The page's query.
#[derive(Deserialize)]
pub(crate) struct AlertsQuery {
    #[serde(default)]
    status: Option<String>,
}

/// `GET /alerts`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    Query(q): Query<AlertsQuery>,
) -> Result<Page, AppError> {
    let status = match q.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(
            s.parse::<AlertStatus>()
                .map_err(|e| AppError::bad_request(format!("status: {e}")))?,
        ),
    };
    let now = state.store.now().await.map_err(store)?;
    let rows = state
        .store
        .alert_list(AlertListParams {
            statuses: status.into_iter().collect(),
            limit: ROWS,
            ..AlertListParams::default()
        })
        .await
        .map_err(store)?;
    let body = html! {
        div.head {
            h1 { "Alerts" }
            p.muted {
                "The newest " (ROWS) " alerts told to an owner: deaths, configuration holds and \
                 the dependency pauses they opened, each sent once to its kind's route, else its \
                 dependency's, else the default one, and retried until a route accepts it."
            }
            nav aria-label="Alert status" {
                a href="/alerts" aria-current=[status.is_none().then_some("page")] { "All" }
                @for s in AlertStatus::ALL {
                    a href={ "/alerts?status=" (s) }
                        aria-current=[(status == Some(*s)).then_some("page")] { (s) }
                }
            }
        }
        @if rows.is_empty() {
            p.empty { "No alert matches: nothing has been told to an owner." }
        } @else {
            div {
                div.scroll data-scroll {
                    table.grid #alerts {
                        thead {
                            tr {
                                th { "When" } th { "Event" } th { "About" } th { "Route" }
                                th { "Status" } th.num { "Tries" } th { "Summary" }
                                th { "Next action" } th { "Last error" }
                            }
                        }
                        tbody {
                            @for a in &rows {
                                tr {
                                    td { (when(a.source_at, now)) }
                                    td { strong { (a.event) } }
                                    td {
                                        @match (&a.operation_id, &a.dependency) {
                                            (_, Some(d)) if a.event == AlertEvent::Paused => {
                                                "dependency " code { (d) }
                                            }
                                            (Some(id), _) => {
                                                a href={ "/operations/" (id) } { code { (id) } }
                                            }
                                            (None, Some(d)) => { "dependency " code { (d) } }
                                            (None, None) => { "—" }
                                        }
                                    }
                                    td {
                                        (or_dash(a.route.as_deref()))
                                        @if let Some(t) = a.target.as_deref().filter(|t| !t.is_empty()) {
                                            br; span.muted { (t) }
                                        }
                                    }
                                    td {
                                        @match a.status {
                                            AlertStatus::Sent => {
                                                "sent "
                                                @if let Some(at) = a.sent_at { (when(at, now)) }
                                            }
                                            AlertStatus::Failed => {
                                                strong { "failed" } ", next try " (when(a.due_at, now))
                                            }
                                            AlertStatus::Pending => { "pending" }
                                        }
                                    }
                                    td.num { (a.tries) }
                                    td { (a.summary) }
                                    td { (or_dash(a.next_action.as_deref())) }
                                    td { (or_dash(a.last_error.as_deref())) }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Page::new("Alerts", Nav::Alerts, &viewer).body(body))
}
