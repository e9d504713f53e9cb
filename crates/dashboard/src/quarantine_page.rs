//! Quarantine: move pending operations that cannot succeed as they are to held, after a count.
//! A filter (which must narrow) leads to how many pending operations match; the confirmation
//! carries that count and a reason, kept on each operation and in the audit log.

use std::collections::HashMap;

use axum::Form;
use axum::extract::Query;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_core::operator::{AuditEntry, OperationFilter, QuarantineParams};
use oprec_core::{FailureClass, Status};
use serde_json::json;

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::{AppError, store};
use crate::filters::FilterForm;
use crate::html::{count, select_options};
use crate::layout::{Nav, Page};
use crate::operations_page::form;
use crate::pause::BATCH;
use crate::viewer::Viewer;

/// The filter whose pending operations quarantine would move: it leads to the count.
pub(crate) fn quarantine_filter_form() -> Markup {
    let classes: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
    html! {
        form.stack #quarantine-filter method="get" action="/quarantine" {
            div.row {
                label { "Kind " input name="kind" maxlength="200"; }
                label { "Dependency " input name="dependency" maxlength="200"; }
            }
            div.row {
                label {
                    "Failure class "
                    select name="class" { (select_options("", &classes)) }
                }
                label { "Error contains " input name="error" maxlength="200"; }
            }
            div.actions { button type="submit" { "Count pending operations…" } }
        }
    }
}

/// The quarantine filter, which must narrow (to stop everything, pause).
fn quarantine_filter(f: &FilterForm) -> Result<OperationFilter, AppError> {
    let filter = OperationFilter {
        ids: f.id()?.into_iter().collect(),
        kinds: f.kind()?.into_iter().collect(),
        classes: f.class()?.into_iter().collect(),
        dependency: f.dependency()?,
        error_contains: f.error_text()?,
        ..OperationFilter::default()
    };
    if filter == OperationFilter::default() {
        return Err(AppError::bad_request(
            "Quarantine needs a filter (kind, failure class, dependency or error text). To stop \
             all work for a while, pause instead.",
        ));
    }
    Ok(filter)
}

/// `GET /quarantine`: how many pending operations match, and the confirmation.
pub(crate) async fn quarantine_preview(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let f = form(q)?;
    let filter = quarantine_filter(&f)?;
    let counts = state
        .store
        .operation_count_matching(&filter)
        .await
        .map_err(store)?;
    let pending = counts.get(&Status::Pending).copied().unwrap_or(0);
    let others: Vec<String> = counts
        .iter()
        .filter(|(s, _)| **s != Status::Pending)
        .map(|(s, n)| format!("{} {}", count(*n), s.as_str()))
        .collect();
    let body = html! {
        div.head {
            p.crumbs { a href="/controls" { "Controls" } " / quarantine" }
            h1 { "Quarantine" }
        }
        section.panel {
            p.big #q-count {
                (count(pending)) " pending operation" @if pending != 1 { "s" } " match"
            }
            @if !others.is_empty() {
                p.muted { "Also matching, and left alone: " (others.join(", ")) "." }
            }
            @if pending > 0 {
                @match viewer.why_not(&format!("/quarantine{}", f.query())) {
                    Some(why) => p.notice { (why) },
                    None => (quarantine_form(&viewer, &f, pending)),
                }
            }
        }
    };
    Ok(Page::new("Quarantine", Nav::Controls, &viewer).body(body))
}

/// The confirmation: the filter again, the count the viewer saw, and the reason.
fn quarantine_form(viewer: &Viewer, f: &FilterForm, pending: u64) -> Markup {
    html! {
        form.stack #quarantine-form method="post" action="/quarantine" {
            (viewer.csrf_field())
            (f.hidden_inputs())
            input type="hidden" name="expected" value=(pending);
            label {
                "Reason (kept on each operation and in the audit log) "
                input name="reason" required maxlength="500"
                    placeholder="e.g. malformed payloads from importer v2";
            }
            div.actions {
                button.danger type="submit" {
                    "Quarantine " (count(pending)) " operation" @if pending != 1 { "s" }
                }
                " "
                a.button href="/controls" { "Cancel" }
            }
        }
    }
}

/// `POST /quarantine`.
pub(crate) async fn quarantine(
    state: State,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let f = FilterForm::from_map(&m);
    let filter = quarantine_filter(&f)?;
    let reason = m.get("reason").map(|r| r.trim()).unwrap_or("");
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(AppError::bad_request(
            "Say why these operations are quarantined (up to 500 characters): the reason is kept \
             on each one.",
        ));
    }
    let expected: u64 = m
        .get("expected")
        .and_then(|e| e.trim().parse().ok())
        .ok_or_else(|| AppError::bad_request("Count the operations again before confirming."))?;
    let mut moved = 0u64;
    let mut failure = None;
    while moved < expected {
        let ask = BATCH.min(expected - moved);
        match state
            .store
            .operation_quarantine(QuarantineParams {
                filter: filter.clone(),
                reason: reason.to_owned(),
                actor: actor.clone(),
                limit: ask as u32,
            })
            .await
        {
            Ok(n) => {
                moved += n;
                if n < ask {
                    break;
                }
            }
            Err(e) => {
                failure = Some(store(e));
                break;
            }
        }
    }
    state
        .store
        .audit_insert(AuditEntry {
            actor,
            action: "quarantine".into(),
            filter: serde_json::to_value(&filter).unwrap_or(json!({})),
            affected: moved,
            reason: Some(reason.to_owned()),
            details: json!({"limit": expected, "via": "dashboard", "complete": failure.is_none()}),
        })
        .await
        .map_err(store)?;
    if let Some(mut e) = failure {
        e.message = format!(
            "{} {} operations were quarantined before the failure; count again and confirm to \
             quarantine the rest.",
            e.message,
            count(moved)
        );
        return Err(e);
    }
    Ok(Redirect::to(&format!("/controls?done=quarantine&n={moved}")).into_response())
}
