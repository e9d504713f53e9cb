//! The transport: how many wake-ups wait on the broker, and the purge. Purging drops wake-ups
//! only; the operations stay in the store, and the confirmation says how many are pending there.

use std::collections::HashMap;
use std::fmt::Write as _;

use axum::Form;
use axum::extract::rejection::FormRejection;
use oprec_core::{OperatorStore, Status};
use serde_json::json;

use maud::PreEscaped;

use crate::State;
use crate::error::{AppError, store};
use crate::html::{count, esc};
use crate::layout::{Nav, Page};
use crate::security::{Caller, Viewer, authorize_form};
use oprec_core::operator::AuditEntry;

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

fn no_broker() -> String {
    r#"<p class="notice">No broker is configured (<code>--transport poll</code>): workers claim straight from the store, so there is nothing to measure or purge.</p>"#.to_owned()
}

/// `GET /transport`.
pub(crate) async fn page(state: State, viewer: Viewer) -> Result<Page, AppError> {
    let mut b = String::from(
        r#"<div class="head"><h1>Transport</h1><p class="muted">The broker carries only wake-ups (“attempt operation N now”). The store keeps every operation; purging loses no intent.</p></div>"#,
    );
    let (Some(t), Some(name)) = (&state.transport, &state.transport_name) else {
        b.push_str(&no_broker());
        return Ok(Page::new("Transport", Nav::Transport, &viewer).body(PreEscaped(b)));
    };
    let waiting = pending(state.store.as_ref()).await?;
    let depth = t.depth().await;
    let _ = write!(b, r#"<section class="panel"><h2>{}</h2>"#, esc(name));
    match depth {
        Ok(d) => {
            let _ = write!(
                b,
                r#"<p class="big" id="depth">{} wake-ups waiting</p>"#,
                count(d)
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "transport depth");
            b.push_str(r#"<p class="notice bad">The broker did not answer: its depth is unknown. The operations are safe in the store.</p>"#);
        }
    }
    let _ = write!(
        b,
        r#"<p id="pending">{} operation{} pending in the store.</p></section>"#,
        count(waiting),
        if waiting == 1 { " is" } else { "s are" }
    );
    b.push_str(r#"<section class="panel confirm"><h2>Purge</h2>"#);
    match viewer.why_not("/transport") {
        Some(why) => {
            let _ = write!(b, r#"<p class="notice">{why}</p>"#);
        }
        None => {
            let _ = write!(
                b,
                r#"<p>Purging drops every waiting wake-up on {}. <strong>{} operation{} will remain pending in the store</strong>; the scheduler wakes the eligible ones again.</p>
<form method="post" action="/transport/purge" class="stack" id="purge-form">{}
<label>Type <code>purge</code> to confirm <input name="confirm" autocomplete="off" required pattern="purge"></label>
<div class="actions"><button type="submit" class="danger">Purge wake-ups</button></div></form>"#,
                esc(name),
                count(waiting),
                if waiting == 1 { "" } else { "s" },
                viewer.csrf_field()
            );
        }
    }
    b.push_str("</section>");
    Ok(Page::new("Transport", Nav::Transport, &viewer).body(PreEscaped(b)))
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
    // The store first: the report that no intent was lost needs it.
    pending(state.store.as_ref()).await?;
    let purged = t.purge().await.map_err(|e| {
        tracing::warn!(error = %e, "transport purge");
        AppError::new(
            axum::http::StatusCode::BAD_GATEWAY,
            "The broker did not purge",
            "The broker refused or did not answer the purge; the wake-ups may still be there. \
             The operations are safe in the store. Try again when the broker is reachable.",
        )
    })?;
    let waiting = pending(state.store.as_ref()).await?;
    state
        .store
        .audit_insert(AuditEntry {
            actor,
            action: "transport_purge".into(),
            filter: json!({"transport": name}),
            affected: purged,
            reason: None,
            details: json!({"pending_in_store": waiting, "via": "dashboard"}),
        })
        .await
        .map_err(store)?;
    let b = format!(
        r#"<div class="head"><h1>Transport purged</h1></div><section class="panel"><p class="notice good" id="purged">Purged {} wake-ups from {}; {} operation{} still pending in the store: no intent was lost.</p><p><a href="/transport">Back to the transport</a></p></section>"#,
        count(purged),
        esc(name),
        count(waiting),
        if waiting == 1 { " is" } else { "s are" }
    );
    Ok(Page::new("Transport purged", Nav::Transport, &viewer).body(PreEscaped(b)))
}
