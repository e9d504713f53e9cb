//! The retry scenarios, run through the embedded SQLite store on a virtual clock.
//!
//! Five operations meet five kinds of trouble — malformed input, a short outage, a long outage,
//! a timeout after the write, a deadline that comes before the next rung — plus a worker that
//! crashes on every attempt. Each is enqueued, claimed, failed and re-scheduled through the real
//! store and the real retry policy; the virtual clock jumps to each `next_eligible_at` so days of
//! ladder take a second. Run it with:
//!
//! ```text
//! cargo run -p oprec --example ladder
//! ```

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use oprec::prelude::*;
use oprec::runtime::{RescuerConfig, Stats, rescue_once};
use oprec::sqlite::SqliteStore;
use oprec::store::{ClaimByIdsParams, Claimant, CompleteParams, OperationGetParams};
use oprec::{
    ClaimContext, Clock, EnqueueOptions, Failure, Ladder, ManualClock, NewOperation,
    OperationError, OperationId, Outcome, RetryPolicy, Status, VanishRule,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

/// A six-rung ladder: at once, then after 60, 300, 1,500, 7,500 and 37,500 seconds.
fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(6)
        .external_io(Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]))
        .jitter(oprec::Jitter::None)
        .build()
        .expect("a valid policy")
}

/// A simulated shipping provider: down until `recovers_at`, optionally timing out after the write.
struct Provider {
    recovers_at: Option<DateTime<Utc>>,
    timeout_after_write: bool,
}

impl Provider {
    fn ship(&self, payload: &Value, now: DateTime<Utc>) -> Outcome {
        let Some(code) = payload.get("postal_code").and_then(Value::as_str) else {
            return Failure::permanent(
                OperationError::new("destination postal code is missing")
                    .field("destination postal code"),
            )
            .into();
        };
        if self.recovers_at.is_some_and(|t| now < t) {
            return Failure::transient("provider answered 503 Service Unavailable").into();
        }
        if self.timeout_after_write {
            return Failure::unknown("timed out after the request was written").into();
        }
        Outcome::Succeeded {
            remote_id: Some(format!("shipment-{code}")),
        }
    }
}

struct Demo {
    store: SqliteStore,
    clock: Arc<ManualClock>,
    start: DateTime<Utc>,
}

impl Demo {
    fn claimant(&self) -> Claimant {
        Claimant {
            worker_id: "demo-worker".into(),
            code_version: Some(env!("CARGO_PKG_VERSION").into()),
            lease: Duration::seconds(30),
        }
    }

    async fn enqueue(
        &self,
        payload: Value,
        options: EnqueueOptions,
    ) -> anyhow::Result<OperationId> {
        let op = NewOperation::new(
            "shipment.create",
            payload,
            &policy(),
            options,
            self.clock.now(),
        )?;
        Ok(self.store.operation_insert(op).await?.id)
    }

    /// Wake the operation at each eligible time until it rests; a crashing worker never writes
    /// an outcome, and the rescuer finds its lease expired.
    async fn run(&self, id: OperationId, provider: &Provider, crash: bool) -> anyhow::Result<()> {
        loop {
            let op = self
                .store
                .operation_get(OperationGetParams { id })
                .await?
                .expect("enqueued")
                .operation;
            if op.status != Status::Pending {
                return Ok(());
            }
            self.clock.set(self.clock.now().max(op.next_eligible_at));
            let ids = vec![id];
            let Some(op) = self
                .store
                .operation_claim_by_ids(ClaimByIdsParams {
                    kinds: vec![],
                    ids,
                    claimant: self.claimant(),
                })
                .await?
                .pop()
            else {
                return Ok(());
            };
            if crash {
                self.clock.advance(Duration::seconds(31));
                // The rescuer's pass, as a worker's maintenance runs it.
                let rescuer = RescuerConfig {
                    rule: VanishRule {
                        vanish_limit: 3,
                        retry_delay: Duration::seconds(60),
                    },
                    ..RescuerConfig::default()
                };
                rescue_once(&self.store, &rescuer, &Stats::default()).await?;
                continue;
            }
            let now = self.clock.now();
            let outcome = provider.ship(&op.payload, now);
            let transition = policy().transition_for(
                &ClaimContext::from(&op),
                outcome,
                now,
                &mut StdRng::seed_from_u64(1),
            );
            let claim_token = op.claim_token();
            self.store
                .operation_complete(CompleteParams {
                    id,
                    claim_token,
                    transition,
                })
                .await?;
        }
    }

    async fn report(&self, title: &str, id: OperationId) -> anyhow::Result<()> {
        let d = self
            .store
            .operation_get(OperationGetParams { id })
            .await?
            .expect("enqueued");
        println!("\n{title}");
        for a in &d.attempts {
            let at = fmt_offset((a.claimed_at - self.start).num_seconds());
            let what = match (&a.failure_class, &a.error) {
                (Some(class), Some(e)) => format!("{} ({class}): {e}", a.outcome),
                (None, Some(e)) => format!("{}: {}", a.outcome, e.summary),
                _ => a.outcome.to_string(),
            };
            println!("  attempt {}  at {at:>9}  {what}", a.attempt);
        }
        let o = &d.operation;
        let mut end = format!("  => {}", o.status);
        if let Some(r) = o.terminal_reason {
            end += &format!(" ({r})");
        }
        if let Some(r) = &o.remote_id {
            end += &format!(", remote id {r}");
        }
        if let Some(next) = o.last_error.as_ref().and_then(|e| e.next_action.as_ref())
            && o.status != Status::Succeeded
        {
            end += &format!("; next action: {next}");
        }
        println!("{end}");
        Ok(())
    }
}

fn fmt_offset(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("+{s}s"),
        s if s < 7200 => format!("+{}m{:02}s", s / 60, s % 60),
        s => format!("+{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("ladder.db").display()
    );
    let start = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let store = SqliteStore::connect(&url).await?.with_clock(clock.clone());
    store.migrate().await?;
    let demo = Demo {
        store,
        clock,
        start,
    };

    println!("oprec ladder demo: SQLite at {url}, virtual clock from {start}");
    println!(
        "ladder: attempt 1 at once, then after 60 s, 300 s, 1,500 s, 7,500 s, 37,500 s; then terminal"
    );

    let ok = json!({"postal_code": "10115"});
    let down_until = |secs| Provider {
        recovers_at: Some(start + Duration::seconds(secs)),
        timeout_after_write: false,
    };
    let scenarios: Vec<(&str, Value, EnqueueOptions, Provider, bool)> = vec![
        (
            "malformed input: one attempt, dead (permanent), the error names the field",
            json!({"street": "1 Main St"}),
            EnqueueOptions::default(),
            down_until(0),
            false,
        ),
        (
            "transient outage of 200 s: attempts at 0, 60 and 360 s, then success",
            ok.clone(),
            EnqueueOptions::default(),
            down_until(200),
            false,
        ),
        (
            "long outage (30 days): six attempts at the ladder's times, then dead",
            ok.clone(),
            EnqueueOptions::default(),
            down_until(30 * 86_400),
            false,
        ),
        (
            "timeout after the write: reconciling, no blind retry",
            ok.clone(),
            EnqueueOptions::default(),
            Provider {
                recovers_at: None,
                timeout_after_write: true,
            },
            false,
        ),
        (
            "deadline 1,000 s after enqueue, earlier than the 4th rung: dead, no late attempt",
            ok.clone(),
            EnqueueOptions {
                deadline: Some(start + Duration::seconds(1000)),
                ..Default::default()
            },
            down_until(86_400),
            false,
        ),
        (
            "a worker that crashes on every attempt: dead (crash_loop) after 3 vanished attempts",
            ok.clone(),
            EnqueueOptions::default(),
            down_until(0),
            true,
        ),
    ];
    for (title, payload, options, provider, crash) in scenarios {
        demo.clock.set(start);
        let id = demo.enqueue(payload, options).await?;
        demo.run(id, &provider, crash).await?;
        demo.report(title, id).await?;
    }
    Ok(())
}
