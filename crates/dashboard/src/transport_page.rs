//! The transport: how many wake-ups wait on the broker, per kind, and the purge. Purging drops wake-ups
//! only; the operations stay in the store, and the confirmation says how many are pending there.

use std::collections::HashMap;

use axum::Form;
use axum::extract::rejection::FormRejection;
use maud::{Markup, html};
use oprec_core::{OperatorStore, Status};
use oprec_ops::Who;
use oprec_ops::purge;

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::AppError;
use crate::html::count;
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

async fn pending(store: &dyn OperatorStore) -> Result<u64, AppError> {
    Ok(store
        .operation_count()
        .await
        .map_err(crate::error::store)?
        .iter()
        .filter(|r| r.status == Status::Pending)
        .map(|r| r.count)
        .sum())
}

fn no_broker() -> Markup {
    html! {
        p.notice {
            "No broker is configured (" code { "--transport poll" } "): workers claim straight \
             from the store, so there is nothing to measure or purge."
        }
    }
}

/// `GET /transport`.
pub(crate) async fn page(state: State, viewer: Viewer) -> Result<Page, AppError> {
    let head = html! {
        div.head {
            h1 { "Transport" }
            p.muted {
                "The broker carries only wake-ups (“attempt operation N now”). The store keeps \
                 every operation; purging loses no intent."
            }
        }
    };
    let (Some(t), Some(name)) = (&state.transport, &state.transport_name) else {
        return Ok(Page::new("Transport", Nav::Transport, &viewer).body(html! {
            (head)
            (no_broker())
        }));
    };
    let waiting = pending(state.store.as_ref()).await?;
    if let Err(e) = purge::know_store_kinds(state.store.as_ref(), t.as_ref()).await {
        tracing::warn!(error = %e, "listing the store's kinds for the transport depth");
    }
    let per_kind = t.depths().await;
    if let Err(e) = &per_kind {
        tracing::warn!(error = %e, "transport depth");
    }
    let mut per_kind = per_kind.ok();
    if let Some(kinds) = per_kind.as_mut() {
        kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
    }
    let depth: Result<u64, ()> = per_kind
        .as_ref()
        .map(|kinds| kinds.iter().map(|k| k.depth).sum())
        .ok_or(());
    let body = html! {
        (head)
        section.panel {
            h2 { (name) }
            @match depth {
                Ok(d) => p.big #depth { (count(d)) " wake-ups waiting" },
                Err(_) => p.notice.bad {
                    "The broker did not answer: its depth is unknown. The operations are safe in \
                     the store."
                },
            }
            @if let Some(kinds) = per_kind.as_ref().filter(|k| !k.is_empty()) {
                table.kv #depth-by-kind {
                    @for k in kinds {
                        tr { td.mono { (k.kind) } td { (count(k.depth)) " waiting" } }
                    }
                }
            }
            p #pending {
                (count(waiting)) " operation" @if waiting == 1 { " is" } @else { "s are" }
                " pending in the store."
            }
        }
        section.panel.confirm {
            h2 { "Purge" }
            @match viewer.why_not("/transport") {
                Some(why) => p.notice { (why) },
                None => (purge_form(&viewer, name, waiting)),
            }
        }
    };
    Ok(Page::new("Transport", Nav::Transport, &viewer).body(body))
}

/// What a purge does and does not lose, and the typed confirmation.
fn purge_form(viewer: &Viewer, name: &str, waiting: u64) -> Markup {
    html! {
        p {
            "Purging drops every waiting wake-up on " (name) ". "
            strong {
                (count(waiting)) " operation" @if waiting != 1 { "s" }
                " will remain pending in the store"
            }
            "; the scheduler wakes the eligible ones again."
        }
        form.stack #purge-form method="post" action="/transport/purge" {
            (viewer.csrf_field())
            label {
                "Type " code { "purge" } " to confirm "
                input name="confirm" autocomplete="off" required pattern="purge";
            }
            div.actions { button.danger type="submit" { "Purge wake-ups" } }
        }
    }
}

/// `POST /transport/purge`.
pub(crate) async fn purge(
    state: State,
    viewer: Viewer,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Page, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let (Some(t), Some(name)) = (&state.transport, &state.transport_name) else {
        return Err(AppError::bad_request(
            "No broker is configured, so there is nothing to purge.",
        ));
    };
    if m.get("confirm").map(|c| c.trim()) != Some("purge") {
        return Err(AppError::bad_request(
            "Type purge in the confirmation box to purge the wake-ups. Nothing was changed.",
        ));
    }
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    let done = purge::purge(state.store.as_ref(), t.as_ref(), name, None, &who).await?;
    if let Some(e) = &done.audit_failure {
        tracing::error!(error = %e, "the purge's audit entry could not be written");
    }
    let (purged, waiting) = (done.purged, done.pending_in_store);
    let body = html! {
        div.head { h1 { "Transport purged" } }
        section.panel {
            p.notice.good #purged {
                "Purged " (count(purged)) " wake-ups from " (name) "; " (count(waiting))
                " operation" @if waiting == 1 { " is" } @else { "s are" }
                " still pending in the store: no intent was lost. The scheduler wakes them again on its next pass."
            }
            p { a href="/transport" { "Back to the transport" } }
        }
    };
    Ok(Page::new("Transport purged", Nav::Transport, &viewer).body(body))
}
