//! Quarantine: move pending operations that cannot succeed as they are to held, after a count.
//! A filter (which must narrow) leads to how many pending operations match; the confirmation
//! carries that count and a reason, kept on each operation and in the audit log.

use std::collections::HashMap;

use axum::Form;
use axum::extract::Query;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_core::{FailureClass, Status};
use oprec_ops::MAX_REASON;
use oprec_ops::filter::{MAX_NAME, MAX_SEARCH};
use oprec_ops::moves::MoveRequest;
use oprec_ops::{CancellationToken, Who};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::{AppError, store};
use crate::filters::FilterForm;
use crate::html::{count, select_options};
use crate::layout::{Nav, Page};
use crate::operations_page::form;
use crate::viewer::Viewer;

/// The filter whose pending operations quarantine would move: it leads to the count.
pub(crate) fn quarantine_filter_form() -> Markup {
    let classes: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
    html! {
        form.stack #quarantine-filter method="get" action="/quarantine" {
            div.row {
                label { "Kind " input name="kind" maxlength=(MAX_NAME); }
                label { "Dependency " input name="dependency" maxlength=(MAX_NAME); }
            }
            div.row {
                label {
                    "Failure class "
                    select name="class" { (select_options("", &classes)) }
                }
                label { "Error contains " input name="error" maxlength=(MAX_SEARCH); }
            }
            div.actions { button type="submit" { "Count pending operations…" } }
        }
    }
}

/// The quarantine asked for: the form's filter (which must narrow: to stop everything, pause).
/// Quarantine takes pending operations, which have no terminal reason or end time, so the form's
/// `reason` is the quarantine's reason, not a filter, and the time range does not apply.
fn request(
    f: &FilterForm,
    reason: String,
    limit: Option<u64>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<MoveRequest, AppError> {
    let f = FilterForm {
        reason: String::new(),
        since: String::new(),
        until: String::new(),
        ..f.clone()
    };
    Ok(MoveRequest::quarantine(
        f.operation_filter(now)?,
        reason,
        limit,
    )?)
}

/// `GET /quarantine`: how many pending operations match, and the confirmation.
pub(crate) async fn quarantine_preview(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let f = form(q)?;
    let now = state.store.now().await.map_err(store)?;
    let review = request(&f, String::new(), None, now)?
        .review(state.store.as_ref())
        .await?;
    let pending = review.matching;
    let others: Vec<String> = review
        .counts
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
                input name="reason" required maxlength=(MAX_REASON)
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
    let reason =
        oprec_ops::reason("reason", m.get("reason").map(String::as_str))?.ok_or_else(|| {
            AppError::bad_request(
                "Say why these operations are quarantined: the reason is kept on each one.",
            )
        })?;
    let expected: u64 = m
        .get("expected")
        .and_then(|e| e.trim().parse().ok())
        .ok_or_else(|| AppError::bad_request("Count the operations again before confirming."))?;
    let now = state.store.now().await.map_err(store)?;
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    let done = request(&f, reason, Some(expected), now)?
        .apply(
            state.store.as_ref(),
            &who,
            None,
            &CancellationToken::new(),
            |_| {},
        )
        .await;
    let moved = done.run.done;
    if let Some(e) = done.run.failure {
        let mut e = store(e);
        e.message = format!(
            "{} {} operations were quarantined before the failure; count again and confirm to \
             quarantine the rest.",
            e.message,
            count(moved)
        );
        return Err(e);
    }
    if let Some(e) = done.audit_failure {
        tracing::error!(error = %e, "the quarantine's audit entry could not be written");
    }
    Ok(Redirect::to(&format!("/controls?done=quarantine&n={moved}")).into_response())
}
