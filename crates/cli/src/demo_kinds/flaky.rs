//! `demo.flaky`: serves the retry, ladder, outage and reconciliation tests. It fails as its
//! payload says, with the failure class it names:
//!
//! - `{"fail_times": N, "class": "transient", "retry_after_s": S}`: attempts 1..=N fail, later
//!   ones succeed (`rate_limited` carries Retry-After S seconds);
//! - `{"fail_until": "<RFC 3339>", "class": ...}`: every attempt before that wall-clock time fails
//!   (an outage that ends).
//!
//! An unknown class name makes the payload malformed: a permanent failure naming the field
//! `class`. `backpressure` refunds the attempt, so with `fail_times` it never gets past the first
//! attempt: use `fail_until` for it. The reconcile hook answers `{"reconcile": "applied" |
//! "not_applied" | "unknown"}` from the payload.

use chrono::{DateTime, Duration, Utc};
use oprec::{Context, Failure, FailureClass, Kind, OperationError, Reconciled, RetryPolicy};
use serde::Deserialize;

use super::DEPENDENCY;

/// `demo.flaky`'s payload.
#[derive(Deserialize)]
struct Flaky {
    #[serde(default)]
    fail_times: u32,
    #[serde(default)]
    fail_until: Option<String>,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    retry_after_s: Option<u32>,
}

/// What the reconcile hook reads.
#[derive(Deserialize)]
struct Script {
    #[serde(default)]
    reconcile: Option<String>,
}

fn malformed(field: &str, summary: String) -> anyhow::Error {
    Failure::permanent(
        OperationError::new(format!("malformed payload for demo.flaky: {summary}"))
            .field(field)
            .next_action("correct the payload and enqueue a new operation"),
    )
    .into()
}

/// The failure of one failing attempt.
fn failure(class: FailureClass, p: &Flaky, attempt: u32) -> Failure {
    let summary = format!("demo.flaky: simulated {class} failure on attempt {attempt}");
    match class {
        FailureClass::RateLimited => Failure::rate_limited(
            format!("{summary} (429 Too Many Requests)"),
            p.retry_after_s.map(|s| Duration::seconds(i64::from(s))),
        ),
        FailureClass::Permanent => Failure::permanent(OperationError::new(summary)),
        other => Failure::new(other, OperationError::new(summary)),
    }
}

async fn run(ctx: Context, p: Flaky) -> anyhow::Result<()> {
    let class = match &p.class {
        None => FailureClass::Transient,
        Some(name) => name
            .parse::<FailureClass>()
            .map_err(|e| malformed("class", e.to_string().trim_end().to_owned()))?,
    };
    let fail_until = p
        .fail_until
        .as_deref()
        .map(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| malformed("fail_until", format!("{t:?} is not an RFC 3339 time: {e}")))
        })
        .transpose()?;
    let by_count = ctx.attempt() <= p.fail_times;
    let by_time = fail_until.is_some_and(|t| Utc::now() < t);
    if by_count || by_time {
        return Err(failure(class, &p, ctx.attempt()).into());
    }
    Ok(())
}

async fn reconcile(ctx: Context, s: Script) -> Reconciled {
    match s.reconcile.as_deref() {
        Some("applied") => Reconciled::Applied {
            remote_id: Some(ctx.effect_key().to_owned()),
        },
        Some("not_applied") => Reconciled::NotApplied,
        _ => Reconciled::StillUnknown,
    }
}

/// The kind.
pub(super) fn kind(policy: &RetryPolicy) -> Kind {
    Kind::new("demo.flaky", policy.clone(), run)
        .reconcile(reconcile)
        .dependency(DEPENDENCY)
}
