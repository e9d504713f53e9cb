//! The audit log: every operator action, newest first, with its actor, filter and count;
//! filtered by action and actor, paged older and newer by entry id (an entry appended while one
//! reads never shifts a page); long details expand in place, and entries about operations by id
//! link to them.

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use maud::{Markup, html};
use oprec_core::OperationId;
use oprec_core::operator::{AuditListParams, AuditPage, AuditRecord};
use serde::Deserialize;

use crate::State;
use crate::error::{AppError, store};
use crate::html::{count, or_dash, pretty, short_id, when};
use crate::layout::{Nav, Page};
use crate::operations_page::form;
use crate::query_string::query;
use crate::viewer::Viewer;

/// Rows per page.
const ROWS: u32 = 100;

/// The longest action or actor the filter fields take.
const MAX_FILTER: usize = 200;

/// The actions the operator library writes, offered in the action field (any other is typed).
const ACTIONS: &[&str] = &[
    "pause",
    "resume",
    "postpone",
    "redrive",
    "quarantine",
    "release",
    "cancel",
    "reconcile_resolve",
    "limit",
    "unlimit",
    "archive",
    "archive_restore",
    "transport_purge",
];

/// The audit page's query: the filters and which page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AuditForm {
    #[serde(default)]
    action: String,
    #[serde(default)]
    actor: String,
    /// The entries just older than this id.
    older: Option<i64>,
    /// The entries just newer than this id.
    newer: Option<i64>,
}

impl AuditForm {
    fn params(&self) -> AuditListParams {
        let given = |v: &str| Some(v.trim().to_owned()).filter(|v| !v.is_empty());
        AuditListParams {
            limit: ROWS,
            action: given(&self.action),
            actor: given(&self.actor),
            page: AuditPage::from_cursors(self.older, self.newer),
        }
    }

    /// The filters as a query string ("?action=…" or nothing).
    fn keep(&self) -> String {
        query(&[("action", self.action.trim()), ("actor", self.actor.trim())])
    }
}

fn filter_form(f: &AuditForm) -> Markup {
    html! {
        form.filters #audit-filters method="get" action="/audit" {
            label {
                "Action"
                input name="action" value=(f.action.trim()) placeholder="any" maxlength=(MAX_FILTER)
                    list="audit-actions";
                datalist #audit-actions {
                    @for a in ACTIONS { option value=(a) {} }
                }
            }
            label {
                "Actor"
                input name="actor" value=(f.actor.trim()) placeholder="anyone" maxlength=(MAX_FILTER);
            }
            div.actions {
                button.primary type="submit" { "Filter" } " "
                a.button href="/audit" { "Clear" }
            }
        }
    }
}

/// Newer and older links around a page of `rows` (newest first). Newer is offered unless this
/// is the newest page; older while the page was full or came from a newer link.
fn pager(f: &AuditForm, rows: &[AuditRecord]) -> Markup {
    let keep = f.keep();
    let sep = if keep.is_empty() { "?" } else { "&" };
    let newest = f.older.is_none() && f.newer.is_none();
    let full = rows.len() >= ROWS as usize;
    html! {
        nav.pager {
            // A newer page that was not full reached the newest entry.
            @if let (true, Some(first)) = (!newest && (full || f.newer.is_none()), rows.first()) {
                a.button #newer href={ "/audit" (keep) (sep) "newer=" (first.id) } rel="prev" { "← Newer" } " "
            }
            @if !newest {
                a.button href={ "/audit" (keep) } { "Newest" } " "
            }
            @if let (true, Some(last)) = (full || f.newer.is_some(), rows.last()) {
                a.button #older href={ "/audit" (keep) (sep) "older=" (last.id) } rel="next" { "Older →" }
            }
        }
    }
}

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
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    q: Result<Query<AuditForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let f = form(q)?;
    let params = f.params();
    params
        .check()
        .map_err(|e| AppError::bad_request(format!("{e}; clear the filter and try again.")))?;
    let filtered = params.action.is_some() || params.actor.is_some();
    let now = state.store.now().await.map_err(store)?;
    let rows = state.store.audit_list(params).await.map_err(store)?;
    let body = html! {
        div.head {
            h1 { "Audit log" }
            p.muted {
                "Operator actions from the dashboard and the command line, newest first, "
                (ROWS) " a page (the same as " code { "oprec audit" } ")."
            }
        }
        (filter_form(&f))
        @if rows.is_empty() {
            @if filtered || f.older.is_some() || f.newer.is_some() {
                p.empty { "No audit entry matches." }
                (pager(&f, &rows))
            } @else {
                p.empty { "No operator action yet." }
            }
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
            (pager(&f, &rows))
        }
    };
    Ok(Page::new("Audit log", Nav::Audit, &viewer).body(body))
}
