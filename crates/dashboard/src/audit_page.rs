//! The audit log: every operator action, newest first, with its actor, filter and count; long
//! details expand in place, and entries about operations by id link to them.

use maud::{Markup, html};
use oprec_core::OperationId;
use oprec_core::operator::AuditListParams;

use crate::State;
use crate::error::{AppError, store};
use crate::html::{count, or_dash, pretty, short_id, when};
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// Rows shown.
const ROWS: u32 = 200;

/// Operations linked per entry.
const TOUCHED: usize = 5;

/// The operations an entry names by id (an action on one operation, or on a list of them).
fn touched(filter: &serde_json::Value) -> Vec<OperationId> {
    filter
        .get("ids")
        .and_then(|ids| ids.as_array())
        .map(|ids| {
            ids.iter()
                .filter_map(|id| id.as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Compact JSON, which has no spaces, allowed to wrap after a comma, never inside a value.
fn wrapped(json: &str) -> Markup {
    html! {
        code {
            @for (i, part) in json.split(',').enumerate() {
                @if i > 0 { "," wbr; }
                (part)
            }
        }
    }
}

/// `GET /audit`.
pub(crate) async fn page(state: State, viewer: Viewer) -> Result<Page, AppError> {
    let now = state.store.now().await.map_err(store)?;
    let rows = state
        .store
        .audit_list(AuditListParams { limit: ROWS })
        .await
        .map_err(store)?;
    let body = html! {
        div.head {
            h1 { "Audit log" }
            p.muted {
                "The newest " (ROWS) " operator actions, from the dashboard and the command line."
            }
        }
        @if rows.is_empty() {
            p.empty { "No operator action yet." }
        } @else {
            div.scroll data-scroll {
                table.grid #audit {
                    thead {
                        tr {
                            th { "When" } th { "Actor" } th { "Action" } th.num { "Affected" }
                            th { "Filter" } th { "Reason" } th { "Details" } th { "Operations" }
                        }
                    }
                    tbody {
                        @for r in &rows {
                            @let details: String = r.entry.details.to_string().chars().take(240).collect();
                            tr {
                                td { (when(r.at, now)) }
                                td { (r.entry.actor) }
                                td { strong { (r.entry.action) } }
                                td.num { (count(r.entry.affected)) }
                                td { code { (r.entry.filter.to_string()) } }
                                td { (or_dash(r.entry.reason.as_deref())) }
                                td.details {
                                    @if details.chars().count() < 240 {
                                        (wrapped(&details))
                                    } @else {
                                        // The whole entry, on demand.
                                        details {
                                            summary { (wrapped(&details)) "…" }
                                            pre.json { (pretty(&r.entry.details)) }
                                        }
                                    }
                                }
                                td.ops {
                                    @for id in touched(&r.entry.filter).iter().take(TOUCHED) {
                                        a.mono href={ "/operations/" (id) } { (short_id(id)) } " "
                                    }
                                    @if touched(&r.entry.filter).len() > TOUCHED {
                                        span.muted { "…" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Page::new("Audit log", Nav::Audit, &viewer).body(body))
}
