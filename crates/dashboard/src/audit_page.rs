//! The audit log: every operator action, newest first, with its actor, filter and count.

use std::fmt::Write as _;

use maud::PreEscaped;

use crate::State;
use crate::error::{AppError, store};
use crate::html::{count, esc, or_dash, when};
use crate::layout::{Nav, Page};
use crate::security::Viewer;

/// Rows shown.
const ROWS: u32 = 200;

/// `GET /audit`.
pub(crate) async fn page(state: State, viewer: Viewer) -> Result<Page, AppError> {
    let now = state.store.now().await.map_err(store)?;
    let rows = state.store.audit_list(ROWS).await.map_err(store)?;
    let mut b = format!(
        r#"<div class="head"><h1>Audit log</h1><p class="muted">The newest {ROWS} operator actions, from the dashboard and the command line.</p></div>"#
    );
    if rows.is_empty() {
        b.push_str(r#"<p class="empty">No operator action yet.</p>"#);
    } else {
        b.push_str(r#"<table class="grid" id="audit"><thead><tr><th>When</th><th>Actor</th><th>Action</th><th class="num">Affected</th><th>Filter</th><th>Reason</th><th>Details</th></tr></thead><tbody>"#);
        for r in &rows {
            let _ = write!(
                b,
                r#"<tr><td>{}</td><td>{}</td><td><strong>{}</strong></td><td class="num">{}</td><td><code>{}</code></td><td>{}</td><td class="details"><code>{}</code></td></tr>"#,
                when(r.at, now),
                esc(&r.entry.actor),
                esc(&r.entry.action),
                count(r.entry.affected),
                esc(&r.entry.filter.to_string()),
                or_dash(r.entry.reason.as_deref()),
                esc(&r
                    .entry
                    .details
                    .to_string()
                    .chars()
                    .take(240)
                    .collect::<String>()),
            );
        }
        b.push_str("</tbody></table>");
    }
    Ok(Page::new("Audit log", Nav::Audit, &viewer).body(PreEscaped(b)))
}
