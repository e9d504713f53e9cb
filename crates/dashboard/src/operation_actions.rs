//! The actions an operation's page offers where its status calls for them, each the operator
//! library's own (as `oprec release`, `oprec cancel` and `oprec reconcile resolve` run it) and
//! audited as the person signed in: release a held operation, cancel one that is waiting, and
//! record what became of an unknown outcome (applied, with the remote id when known, or not
//! applied, so that it is retried).

use std::collections::HashMap;

use axum::Form;
use axum::extract::Path;
use axum::extract::rejection::FormRejection;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_core::operator::OperationFilter;
use oprec_core::{Operation, OperationId, Resolution, Status};
use oprec_ops::moves::MoveRequest;
use oprec_ops::resolve::MAX_REMOTE_ID;
use oprec_ops::{CancellationToken, MAX_REASON, Who};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::{AppError, store as store_error};
use crate::viewer::Viewer;

/// What the page says after an action (a fixed list: no text from the address reaches the
/// page).
pub(crate) fn notice(done: &str) -> Option<(&'static str, &'static str)> {
    Some(match done {
        "released" => ("good", "Released: pending again and eligible now."),
        "cancelled" => ("good", "Cancelled: no worker will take it again."),
        "not-cancelled" => (
            "warn",
            "Not cancelled: it was claimed or ended meanwhile (see its status).",
        ),
        "applied" => ("good", "Recorded as applied: the operation succeeded."),
        "not-applied" => (
            "good",
            "Recorded as not applied: pending again and eligible now, safe to retry.",
        ),
        "nothing" => (
            "warn",
            "Nothing changed: its status changed before the action (see it below).",
        ),
        _ => return None,
    })
}

/// The actions for `o` in its status, or why the viewer cannot act; nothing for statuses that
/// need none here (running, succeeded, cancelled; a dead one offers its re-drive at the top).
pub(crate) fn panel(o: &Operation, viewer: &Viewer) -> Markup {
    let can_cancel = matches!(o.status, Status::Pending | Status::Held);
    let offered = can_cancel || o.status == Status::Reconciling;
    if !offered {
        return html! {};
    }
    let action = format!("/operations/{}/act", o.id);
    let reason = html! {
        label {
            "Reason "
            input name="reason" maxlength=(MAX_REASON) placeholder="why, for the audit log";
        }
    };
    html! {
        section.panel #actions {
            h2 { "Actions" }
            @if let Some(why) = viewer.why_not(&format!("/operations/{}", o.id)) {
                p.notice { (why) }
            } @else {
                @if o.status == Status::Reconciling {
                    form.stack #resolve-form method="post" action=(action) {
                        (viewer.csrf_field())
                        p.muted.small {
                            "The last attempt's outcome is unknown. Look the effect up at the \
                             dependency (by its idempotency key), then record what you found."
                        }
                        label {
                            "Remote id, if applied "
                            input name="remote_id" maxlength=(MAX_REMOTE_ID)
                                placeholder="the dependency's id for the effect";
                        }
                        (reason)
                        div.actions {
                            button.primary type="submit" name="action" value="applied"
                                aria-label="Record as applied" { "Applied" }
                            " "
                            button type="submit" name="action" value="not_applied"
                                aria-label="Record as not applied" { "Not applied: retry it" }
                        }
                    }
                }
                @if o.status == Status::Held {
                    form.stack #release-form method="post" action=(action) {
                        (viewer.csrf_field())
                        input type="hidden" name="action" value="release";
                        p.muted.small {
                            "Held for a person. Release it once the cause is fixed: it is pending \
                             again and eligible at once."
                        }
                        (reason)
                        div.actions {
                            button.primary type="submit" aria-label="Release this operation" {
                                "Release"
                            }
                        }
                    }
                }
                @if can_cancel {
                    form.stack #cancel-form method="post" action=(action) {
                        (viewer.csrf_field())
                        input type="hidden" name="action" value="cancel";
                        p.muted.small {
                            "Or cancel it: it will never run, and its record stays."
                        }
                        (reason)
                        div.actions {
                            button.danger type="submit" aria-label="Cancel this operation" {
                                "Cancel"
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /operations/{id}/act`: release, cancel or resolve one operation, then back to its page
/// with what happened.
pub(crate) async fn act(
    state: State,
    caller: Caller,
    Path(id): Path<String>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let id: OperationId = id
        .trim()
        .parse()
        .map_err(|_| AppError::bad_request("That is not an operation id: nothing was changed."))?;
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    let field = |k: &str| m.get(k).map(|s| s.trim()).filter(|s| !s.is_empty());
    let reason = oprec_ops::reason("reason", field("reason"))?;
    let store = state.store.as_ref();
    let done = match field("action").unwrap_or("") {
        "release" => {
            let request = MoveRequest::release(
                OperationFilter {
                    ids: vec![id],
                    ..OperationFilter::default()
                },
                Some(1),
            );
            let moved = request
                .apply(
                    store,
                    &who,
                    reason.as_deref(),
                    &CancellationToken::new(),
                    |_| {},
                )
                .await;
            if let Some(e) = moved.run.failure {
                return Err(store_error(e));
            }
            if let Some(e) = moved.audit_failure {
                tracing::error!(error = %e, "the release's audit entry could not be written");
            }
            if moved.run.done == 1 {
                "released"
            } else {
                "nothing"
            }
        }
        "cancel" => {
            let c = oprec_ops::cancel::cancel(store, &[id], &who, reason.as_deref()).await?;
            if let Some(e) = &c.audit_failure {
                tracing::error!(error = %e, "the cancel's audit entry could not be written");
            }
            if c.cancelled.contains(&id) {
                "cancelled"
            } else {
                "not-cancelled"
            }
        }
        a @ ("applied" | "not_applied") => {
            let resolution = if a == "applied" {
                let remote_id = field("remote_id").map(str::to_owned);
                if remote_id
                    .as_ref()
                    .is_some_and(|r| r.chars().count() > MAX_REMOTE_ID)
                {
                    return Err(AppError::bad_request(format!(
                        "The remote id is longer than {MAX_REMOTE_ID} characters: nothing was \
                         changed."
                    )));
                }
                Resolution::Applied { remote_id }
            } else {
                Resolution::NotApplied
            };
            let r =
                oprec_ops::resolve::resolve(store, id, resolution, &who, reason.as_deref()).await?;
            if let Some(e) = &r.audit_failure {
                tracing::error!(error = %e, "the resolution's audit entry could not be written");
            }
            if a == "applied" {
                "applied"
            } else {
                "not-applied"
            }
        }
        _ => {
            return Err(AppError::bad_request(
                "Say what to do: release, cancel, applied or not_applied. Nothing was changed.",
            ));
        }
    };
    Ok(Redirect::to(&format!("/operations/{id}?done={done}")).into_response())
}
