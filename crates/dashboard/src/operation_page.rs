//! One operation: the record, its payload, its last error with the decision and next action, its
//! attempt history as a timeline, its durable steps, its remote id and its lineage (the chain of
//! operations it was re-driven from).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query};
use maud::{Markup, Render, html};
use oprec_core::store::{OperationGetParams, Step, StepsGetParams};
use oprec_core::{Attempt, Operation, OperationId, Status};

use crate::error::{AppError, store};
use crate::html::{badge, or_dash, pretty, time, when};
use crate::layout::{Nav, Page};
use crate::query_string::query;
use crate::viewer::Viewer;
use crate::{State, operation_actions};

/// What the page was sent back with after an action.
#[derive(serde::Deserialize, Default)]
pub(crate) struct Done {
    #[serde(default)]
    done: String,
}

/// How far up the re-drive chain the lineage goes.
const LINEAGE_DEPTH: usize = 10;

fn field(label: &str, value: impl Render) -> Markup {
    html! { dt { (label) } dd { (value) } }
}

fn record(o: &Operation, now: chrono::DateTime<chrono::Utc>) -> Markup {
    let t = |v: Option<chrono::DateTime<chrono::Utc>>| match v {
        Some(v) => when(v, now),
        None => or_dash(None),
    };
    html! {
        dl.record {
            (field("Kind", &o.kind))
            (field("Status", badge(o.status.as_str())))
            (field(
                "Attempts",
                oprec_ops::number::attempts(o.attempt, o.max_attempts),
            ))
            (field(
                "Last failure class",
                o.last_failure_class
                    .map(|c| badge(c.as_str()))
                    .unwrap_or_else(|| or_dash(None)),
            ))
            (field("Terminal reason", or_dash(o.terminal_reason.map(|r| r.as_str()))))
            (field("Remote id", or_dash(o.remote_id.as_deref())))
            (field("Dependency", or_dash(o.dependency.as_deref())))
            (field("Idempotency key", or_dash(o.idempotency_key.as_deref())))
            (field("Code version", or_dash(o.code_version.as_deref())))
            (field("Created", t(Some(o.created_at))))
            (field("Updated", t(Some(o.updated_at))))
            (field(
                if o.status == Status::Pending {
                    "Next eligible"
                } else {
                    "Next eligible (when pending)"
                },
                t(Some(o.next_eligible_at)),
            ))
            (field("Deadline", t(o.give_up_at)))
            (field("Lease until", t(o.lease_until)))
            (field("Worker", or_dash(o.worker_id.as_deref())))
            (field("Ended", t(o.terminal_at)))
            (field("Last woken", t(o.last_woken_at)))
        }
    }
}

fn last_error(o: &Operation) -> Markup {
    let Some(e) = &o.last_error else {
        return html! {};
    };
    html! {
        section.panel.errbox {
            h2 { "Last error" }
            p.summary { (e.summary) }
            dl.record {
                @if let Some(f) = &e.field { (field("Field", f)) }
                @if let Some(d) = &e.decision { (field("Decision", d)) }
                @if let Some(n) = &e.next_action { (field("Next action", n)) }
            }
        }
    }
}

/// The attempt history, oldest first.
fn timeline(attempts: &[Attempt]) -> Markup {
    if attempts.is_empty() {
        return html! { p.muted { "No attempt has ended yet." } };
    }
    html! {
        ol.timeline #attempts {
            @for a in attempts {
                @let took = (a.ended_at - a.claimed_at).num_milliseconds() as f64 / 1000.0;
                li class={ "t-" (a.outcome.as_str()) } {
                    div.t-h {
                        strong { "Attempt " (a.attempt) } " "
                        (badge(a.outcome.as_str())) " "
                        @if let Some(c) = a.failure_class { (badge(c.as_str())) }
                        span.muted {
                            " · claimed " (time(a.claimed_at)) " · ended " (time(a.ended_at))
                            " · took " (format!("{took:.3}")) "s"
                        }
                    }
                    @if let Some(e) = &a.error {
                        div.t-e { (e.to_string()) }
                    }
                    div.t-m.muted {
                        "worker " (or_dash(a.worker_id.as_deref()))
                        " · code version " (or_dash(a.code_version.as_deref()))
                    }
                }
            }
        }
    }
}

/// The durable steps completed so far.
fn steps_table(steps: &[Step], now: chrono::DateTime<chrono::Utc>) -> Markup {
    if steps.is_empty() {
        return html! { p.muted { "No durable step completed." } };
    }
    html! {
        div.scroll data-scroll {
            table.grid {
                thead { tr { th { "Step" } th { "Attempt" } th { "Completed" } th { "Output" } } }
                tbody {
                    @for s in steps {
                        tr {
                            td { (s.name) }
                            td.num { (s.attempt) }
                            td { (when(s.completed_at, now)) }
                            td { code { (s.output.to_string().chars().take(120).collect::<String>()) } }
                        }
                    }
                }
            }
        }
    }
}

/// How often it was re-driven, and the operations it was re-driven from.
fn lineage(o: &Operation, chain: &[Operation], now: chrono::DateTime<chrono::Utc>) -> Markup {
    html! {
        p { "Re-driven " (o.redrive_count) " time" @if o.redrive_count != 1 { "s" } "." }
        @if let Some(copy) = o.redriven_as {
            p #redriven-as {
                "Re-driven as new: " a.mono href={ "/operations/" (copy) } { (copy) }
                " carries the work on, so this one no longer awaits action."
            }
        }
        @if chain.is_empty() {
            p.muted { "Not a re-drive of another operation." }
        } @else {
            ol.lineage {
                @for p in chain {
                    li {
                        "re-driven from " a.mono href={ "/operations/" (p.id) } { (p.id) } " "
                        (badge(p.status.as_str())) " "
                        @if let Some(t) = p.terminal_at { (when(t, now)) }
                    }
                }
            }
        }
    }
}

/// `GET /operations/{id}`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    Path(id): Path<String>,
    q: Result<Query<Done>, QueryRejection>,
) -> Result<Page, AppError> {
    let done = q.map(|q| q.0.done).unwrap_or_default();
    let id: OperationId = id.trim().parse().map_err(|_| {
        AppError::bad_request(
            "That is not an operation id: ids are UUIDs such as \
             0190c3e4-8a7b-7c3d-9e2f-0123456789ab.",
        )
    })?;
    let Some(detail) = state
        .store
        .operation_get(OperationGetParams { id })
        .await
        .map_err(store)?
    else {
        return Err(AppError::not_found(format!(
            "No operation has the id {id}. It may be in another database than {}.",
            state.store_name
        )));
    };
    let now = state.store.now().await.map_err(store)?;
    let steps = state
        .store
        .operation_steps_get(StepsGetParams { id })
        .await
        .map_err(store)?;
    let o = &detail.operation;

    // Lineage: up the redrive_of chain.
    let mut chain: Vec<Operation> = Vec::new();
    let mut parent = o.redrive_of;
    while let Some(p) = parent {
        if chain.len() >= LINEAGE_DEPTH {
            break;
        }
        match state
            .store
            .operation_get(OperationGetParams { id: p })
            .await
            .map_err(store)?
        {
            Some(d) => {
                parent = d.operation.redrive_of;
                chain.push(d.operation);
            }
            None => break,
        }
    }

    let body = html! {
        div.head {
            p.crumbs {
                a href="/operations" { "Operations" } " / "
                a href={ "/operations" (query(&[("kind", &o.kind)])) } { (o.kind) }
            }
            h1.mono { (o.id) }
            p {
                (badge(o.status.as_str())) " "
                @if let Some(copy) = o.redriven_as {
                    "re-driven as new → " a.mono href={ "/operations/" (copy) } { (copy) }
                } @else if o.status == Status::Dead {
                    a.button #redrive-one href={ "/redrive" (query(&[("id", &o.id.to_string())])) } {
                        "Re-drive this operation…"
                    }
                }
            }
        }
        @if let Some((tone, text)) = operation_actions::notice(&done) {
            p #notice class={ "notice " (tone) } { (text) }
        }
        (last_error(o))
        (operation_actions::panel(o, &viewer))
        div.cols {
            section.panel { h2 { "Record" } (record(o, now)) }
            section.panel {
                h2 { "Payload" }
                pre.json #payload { (pretty(&o.payload)) }
                h2 { "Enqueue options" }
                pre.json { (pretty(&o.enqueue_params)) }
            }
        }
        section.panel { h2 { "Attempts" } (timeline(&detail.attempts)) }
        div.cols {
            section.panel { h2 { "Steps" } (steps_table(&steps, now)) }
            section.panel { h2 { "Lineage" } (lineage(o, &chain, now)) }
        }
    };
    Ok(Page::new(&format!("Operation {}", o.id), Nav::Operations, &viewer).body(body))
}
