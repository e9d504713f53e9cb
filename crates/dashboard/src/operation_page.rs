//! One operation: the record, its payload, its last error with the decision and next action, its
//! attempt history as a timeline, its durable steps, its remote id and its lineage (the chain of
//! operations it was re-driven from).

use std::fmt::Write as _;

use axum::extract::Path;
use oprec_core::{Operation, OperationId, Status};

use maud::PreEscaped;

use crate::State;
use crate::error::{AppError, store};
use crate::html::{badge, esc, or_dash, query, time, when};
use crate::layout::{Nav, Page};
use crate::security::Viewer;

/// How far up the re-drive chain the lineage goes.
const LINEAGE_DEPTH: usize = 10;

fn field(label: &str, value: String) -> String {
    format!("<dt>{}</dt><dd>{value}</dd>", esc(label))
}

fn pretty(v: &serde_json::Value) -> String {
    esc(&serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()))
}

fn record(o: &Operation, now: chrono::DateTime<chrono::Utc>) -> String {
    let t = |v: Option<chrono::DateTime<chrono::Utc>>| match v {
        Some(v) => when(v, now),
        None => or_dash(None),
    };
    let mut s = String::from(r#"<dl class="record">"#);
    s.push_str(&field("Kind", esc(&o.kind)));
    s.push_str(&field("Status", badge(o.status.as_str())));
    s.push_str(&field(
        "Attempts",
        match o.max_attempts {
            Some(m) => format!("{} of at most {}", o.attempt, m),
            None => o.attempt.to_string(),
        },
    ));
    s.push_str(&field(
        "Last failure class",
        o.last_failure_class
            .map(|c| badge(c.as_str()))
            .unwrap_or_else(|| or_dash(None)),
    ));
    s.push_str(&field(
        "Terminal reason",
        or_dash(o.terminal_reason.map(|r| r.as_str())),
    ));
    s.push_str(&field("Remote id", or_dash(o.remote_id.as_deref())));
    s.push_str(&field("Dependency", or_dash(o.dependency.as_deref())));
    s.push_str(&field(
        "Idempotency key",
        or_dash(o.idempotency_key.as_deref()),
    ));
    s.push_str(&field("Code version", or_dash(o.code_version.as_deref())));
    s.push_str(&field("Created", t(Some(o.created_at))));
    s.push_str(&field("Updated", t(Some(o.updated_at))));
    s.push_str(&field(
        if o.status == Status::Pending {
            "Next eligible"
        } else {
            "Next eligible (when pending)"
        },
        t(Some(o.next_eligible_at)),
    ));
    s.push_str(&field("Deadline", t(o.give_up_at)));
    s.push_str(&field("Lease until", t(o.lease_until)));
    s.push_str(&field("Worker", or_dash(o.worker_id.as_deref())));
    s.push_str(&field("Ended", t(o.terminal_at)));
    s.push_str(&field("Last woken", t(o.last_woken_at)));
    s.push_str("</dl>");
    s
}

fn last_error(o: &Operation) -> String {
    let Some(e) = &o.last_error else {
        return String::new();
    };
    let mut s = format!(
        r#"<section class="panel errbox"><h2>Last error</h2><p class="summary">{}</p><dl class="record">"#,
        esc(&e.summary)
    );
    if let Some(f) = &e.field {
        s.push_str(&field("Field", esc(f)));
    }
    if let Some(d) = &e.decision {
        s.push_str(&field("Decision", esc(d)));
    }
    if let Some(n) = &e.next_action {
        s.push_str(&field("Next action", esc(n)));
    }
    s.push_str("</dl></section>");
    s
}

/// `GET /operations/{id}`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Page, AppError> {
    let id: OperationId = id.trim().parse().map_err(|_| {
        AppError::bad_request(
            "That is not an operation id: ids are UUIDs such as \
             0190c3e4-8a7b-7c3d-9e2f-0123456789ab.",
        )
    })?;
    let Some(detail) = state.store.operation_get(id).await.map_err(store)? else {
        return Err(AppError::not_found(format!(
            "No operation has the id {id}. It may be in another database than {}.",
            state.store_name
        )));
    };
    let now = state.store.now().await.map_err(store)?;
    let steps = state.store.operation_steps_get(id).await.map_err(store)?;
    let o = &detail.operation;

    // Lineage: up the redrive_of chain.
    let mut chain: Vec<Operation> = Vec::new();
    let mut parent = o.redrive_of;
    while let Some(p) = parent {
        if chain.len() >= LINEAGE_DEPTH {
            break;
        }
        match state.store.operation_get(p).await.map_err(store)? {
            Some(d) => {
                parent = d.operation.redrive_of;
                chain.push(d.operation);
            }
            None => break,
        }
    }

    let mut b = format!(
        r#"<div class="head"><p class="crumbs"><a href="/operations">Operations</a> / <a href="/operations{}">{}</a></p><h1 class="mono">{}</h1><p>{} {}</p></div>"#,
        esc(&query(&[("kind", &o.kind)])),
        esc(&o.kind),
        o.id,
        badge(o.status.as_str()),
        match o.status {
            Status::Dead => format!(
                r#"<a class="button" href="/redrive{}" id="redrive-one">Re-drive this operation…</a>"#,
                esc(&query(&[("id", &o.id.to_string())]))
            ),
            _ => String::new(),
        }
    );
    b.push_str(&last_error(o));
    b.push_str(r#"<div class="cols">"#);
    let _ = write!(
        b,
        r#"<section class="panel"><h2>Record</h2>{}</section>"#,
        record(o, now)
    );
    let _ = write!(
        b,
        r#"<section class="panel"><h2>Payload</h2><pre class="json" id="payload">{}</pre><h2>Enqueue options</h2><pre class="json">{}</pre></section>"#,
        pretty(&o.payload),
        pretty(&o.enqueue_params)
    );
    b.push_str("</div>");

    // The attempt timeline.
    b.push_str(r#"<section class="panel"><h2>Attempts</h2>"#);
    if detail.attempts.is_empty() {
        b.push_str(r#"<p class="muted">No attempt has ended yet.</p>"#);
    } else {
        b.push_str(r#"<ol class="timeline" id="attempts">"#);
        for a in &detail.attempts {
            let took = a.ended_at - a.claimed_at;
            let _ = write!(
                b,
                r#"<li class="t-{outcome}"><div class="t-h"><strong>Attempt {n}</strong> {ob} {cb}<span class="muted"> · claimed {claimed} · ended {ended} · took {took:.3}s</span></div>{err}<div class="t-m muted">worker {worker} · code version {code}</div></li>"#,
                outcome = a.outcome.as_str(),
                n = a.attempt,
                ob = badge(a.outcome.as_str()),
                cb = a
                    .failure_class
                    .map(|c| badge(c.as_str()))
                    .unwrap_or_default(),
                claimed = esc(&time(a.claimed_at)),
                ended = esc(&time(a.ended_at)),
                took = took.num_milliseconds() as f64 / 1000.0,
                err = match &a.error {
                    Some(e) => format!(r#"<div class="t-e">{}</div>"#, esc(&e.to_string())),
                    None => String::new(),
                },
                worker = or_dash(a.worker_id.as_deref()),
                code = or_dash(a.code_version.as_deref()),
            );
        }
        b.push_str("</ol>");
    }
    b.push_str("</section>");

    b.push_str(r#"<div class="cols">"#);
    b.push_str(r#"<section class="panel"><h2>Steps</h2>"#);
    if steps.is_empty() {
        b.push_str(r#"<p class="muted">No durable step completed.</p>"#);
    } else {
        b.push_str(r#"<table class="grid"><thead><tr><th>Step</th><th>Attempt</th><th>Completed</th><th>Output</th></tr></thead><tbody>"#);
        for s in &steps {
            let _ = write!(
                b,
                r#"<tr><td>{}</td><td class="num">{}</td><td>{}</td><td><code>{}</code></td></tr>"#,
                esc(&s.name),
                s.attempt,
                when(s.completed_at, now),
                esc(&s.output.to_string().chars().take(120).collect::<String>())
            );
        }
        b.push_str("</tbody></table>");
    }
    b.push_str("</section>");
    b.push_str(r#"<section class="panel"><h2>Lineage</h2>"#);
    let _ = write!(
        b,
        r#"<p>Re-driven {} time{}.</p>"#,
        o.redrive_count,
        if o.redrive_count == 1 { "" } else { "s" }
    );
    if chain.is_empty() {
        b.push_str(r#"<p class="muted">Not a re-drive of another operation.</p>"#);
    } else {
        b.push_str(r#"<ol class="lineage">"#);
        for p in &chain {
            let _ = write!(
                b,
                r#"<li>re-driven from <a class="mono" href="/operations/{}">{}</a> {} {}</li>"#,
                p.id,
                p.id,
                badge(p.status.as_str()),
                p.terminal_at.map(|t| when(t, now)).unwrap_or_default()
            );
        }
        b.push_str("</ol>");
    }
    b.push_str("</section></div>");
    Ok(Page::new(&format!("Operation {}", o.id), Nav::Operations, &viewer).body(PreEscaped(b)))
}
