//! The audit log: every operator action, newest first, with its actor, filter and count.

use maud::html;
use oprec_core::operator::AuditListParams;

use crate::State;
use crate::error::{AppError, store};
use crate::html::{count, or_dash, when};
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// Rows shown.
const ROWS: u32 = 200;

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
                            th { "Filter" } th { "Reason" } th { "Details" }
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
                                // Compact JSON has no spaces: it may wrap after a comma, never
                                // inside a value.
                                td.details {
                                    code {
                                        @for (i, part) in details.split(',').enumerate() {
                                            @if i > 0 { "," wbr; }
                                            (part)
                                        }
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
