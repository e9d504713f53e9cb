//! Kinds the scenarios use, each counting its executions so a test can compare executions with
//! operations.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use oprec_core::{Failure, Ladder, RetryPolicy};
use oprec_runtime::{Kind, Registry};
use serde::Deserialize;

/// Execution counters shared with the test.
#[derive(Debug, Default)]
pub struct Counters {
    pub noop: AtomicU64,
    pub flaky: AtomicU64,
    pub step_one: AtomicU64,
    pub step_two: AtomicU64,
    pub slow: AtomicU64,
}

impl Counters {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::SeqCst)
    }
}

fn policy(ladder: &[i64]) -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(30))
        .max_attempts(ladder.len() as u32)
        .external_io(Ladder::schedule_secs(ladder))
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("policy")
}

#[derive(Deserialize)]
pub struct Flaky {
    pub fail_times: u32,
}

#[derive(Deserialize)]
pub struct Shipment {
    pub postal_code: String,
}

#[derive(Deserialize)]
pub struct Slow {
    pub ms: u64,
}

#[derive(Deserialize)]
pub struct Needed {
    pub needed: bool,
}

/// The scenarios' registry.
pub fn registry(counters: Arc<Counters>) -> Arc<Registry> {
    let c = counters.clone();
    let noop = Kind::new(
        "t.noop",
        policy(&[0, 1, 1]),
        move |_ctx, _p: serde_json::Value| {
            let c = c.clone();
            async move {
                c.noop.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        },
    );
    let c = counters.clone();
    let flaky = Kind::new("t.flaky", policy(&[0, 1, 1, 1]), move |ctx, p: Flaky| {
        let c = c.clone();
        async move {
            c.flaky.fetch_add(1, Ordering::SeqCst);
            if ctx.attempt() <= p.fail_times {
                return Err(Failure::transient("dependency answered 503").into());
            }
            ctx.set_remote_id(format!("remote-{}", ctx.effect_key()))
                .await?;
            Ok(())
        }
    });
    let shipment = Kind::new(
        "t.shipment",
        policy(&[0, 60]),
        |_ctx, p: Shipment| async move {
            anyhow::ensure!(!p.postal_code.is_empty(), Failure::transient("empty"));
            Ok(())
        },
    );
    let c = counters.clone();
    let steps = Kind::new(
        "t.steps",
        policy(&[0, 1, 1]),
        move |ctx, _p: serde_json::Value| {
            let c = c.clone();
            async move {
                let reserved: String = ctx
                    .step("reserve", || async {
                        c.step_one.fetch_add(1, Ordering::SeqCst);
                        Ok(format!("reservation-{}", ctx.id()))
                    })
                    .await?;
                if ctx.attempt() == 1 {
                    return Err(Failure::transient("charge failed after the reservation").into());
                }
                ctx.step("charge", || async {
                    c.step_two.fetch_add(1, Ordering::SeqCst);
                    Ok(reserved.clone())
                })
                .await?;
                Ok(())
            }
        },
    );
    let c = counters.clone();
    let slow = Kind::new(
        "t.slow",
        RetryPolicy::builder()
            .timeout(chrono::Duration::seconds(60))
            .max_attempts(5)
            .local_only()
            .jitter(oprec_core::Jitter::None)
            .build()
            .expect("policy"),
        move |_ctx, p: Slow| {
            let c = c.clone();
            async move {
                c.slow.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(p.ms)).await;
                Ok(())
            }
        },
    );
    // Panics on its first attempt, succeeds on the next: a handler bug on some input.
    let panics = Kind::new(
        "t.panics",
        policy(&[0, 1, 1, 1]),
        |ctx, _p: serde_json::Value| async move {
            assert!(ctx.attempt() > 1, "a handler bug on the first attempt");
            Ok(())
        },
    );
    // The first attempt outlives its 200 ms timeout; the next is quick. For a kind that calls
    // out, whether the effect happened is unknown; a local-only one climbs its ladder.
    let hang_once = |ctx: oprec_runtime::Context, _p: serde_json::Value| async move {
        if ctx.attempt() == 1 {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        Ok(())
    };
    let short =
        |b: oprec_core::PolicyBuilder<_, _, _, _>| b.timeout(chrono::Duration::milliseconds(200));
    let hangs = Kind::new(
        "t.hangs",
        short(RetryPolicy::builder())
            .max_attempts(3)
            .external_io(Ladder::schedule_secs(&[0, 1, 1]))
            .jitter(oprec_core::Jitter::None)
            .build()
            .expect("policy"),
        hang_once,
    );
    let hangs_local = Kind::new(
        "t.hangs_local",
        short(RetryPolicy::builder())
            .max_attempts(3)
            .local_only()
            .ladder(Ladder::schedule_secs(&[0, 1, 1]))
            .jitter(oprec_core::Jitter::None)
            .build()
            .expect("policy"),
        hang_once,
    );
    // Every attempt outlives its timeout, for a kind whose remote side honours the effect key:
    // the budget of automatic retries of an unknown outcome is spent (two attempts left over,
    // so the budget, not the bound, ends the retries), then it reconciles.
    let hangs_keyed = Kind::new(
        "t.hangs_keyed",
        short(RetryPolicy::builder())
            .max_attempts(oprec_core::DEFAULT_UNKNOWN_RETRIES + 3)
            .external_io(Ladder::schedule_secs(&[0, 1, 1, 1, 1]))
            .remote_honours_effect_key()
            .jitter(oprec_core::Jitter::None)
            .build()
            .expect("policy"),
        |_ctx: oprec_runtime::Context, _p: serde_json::Value| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(())
        },
    );
    // The first attempt fails with an error nobody classified (a reset after the bytes were
    // sent); the next succeeds. Without the effect key honoured it reconciles; with it, it is
    // retried automatically.
    let reset_once = |ctx: oprec_runtime::Context, _p: serde_json::Value| async move {
        if ctx.attempt() == 1 {
            anyhow::bail!("connection reset after the request was sent");
        }
        Ok(())
    };
    let unclassified = Kind::new("t.unclassified", policy(&[0, 1, 1]), reset_once);
    let unclassified_keyed = Kind::new(
        "t.unclassified_keyed",
        RetryPolicy::builder()
            .timeout(chrono::Duration::seconds(30))
            .max_attempts(3)
            .external_io(Ladder::schedule_secs(&[0, 1, 1]))
            .remote_honours_effect_key()
            .jitter(oprec_core::Jitter::None)
            .build()
            .expect("policy"),
        reset_once,
    );
    let needed = Kind::new("t.needed", policy(&[0]), |_ctx, _p: Needed| async {
        Ok(())
    })
    .still_needed(|p: Needed| async move { p.needed });
    Arc::new(
        Registry::new()
            .register(noop)
            .register(flaky)
            .register(shipment)
            .register(steps)
            .register(slow)
            .register(panics)
            .register(hangs)
            .register(hangs_local)
            .register(hangs_keyed)
            .register(unclassified)
            .register(unclassified_keyed)
            .register(needed),
    )
}
