//! The demo kinds `oprec worker --demo` registers (and `oprec enqueue` knows), so that tests,
//! benchmarks and operators can exercise a real worker from outside the process: each behaves as
//! its payload says. All share one policy, built from the `--demo-*` flags, and the dependency
//! `demo-provider`.
//!
//! Not the `oprec demo` scenarios: they run its own kind against a simulated provider on a virtual
//! clock (see `crate::demo`).

mod crash;
mod effect;
mod flaky;

use std::time::Duration as StdDuration;

use chrono::Duration;
use oprec::{Kind, Ladder, Registry, RetryPolicy};
use serde::Deserialize;

pub(crate) use effect::EffectTable;

/// The dependency every demo kind names.
pub(crate) const DEPENDENCY: &str = "demo-provider";

/// The demo kinds' names, sorted as the registry lists them.
pub(crate) const NAMES: &[&str] = &[
    "demo.crash",
    "demo.effect",
    "demo.flaky",
    "demo.noop",
    "demo.slow",
];

/// The demo kinds' policy, as the `--demo-*` flags set it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DemoPolicy {
    /// Seconds before each attempt (the first is usually 0).
    pub ladder: Vec<i64>,
    /// The attempt bound; the ladder's length when absent.
    pub max_attempts: Option<u32>,
    /// The execution timeout of one attempt.
    pub timeout: Duration,
}

impl Default for DemoPolicy {
    fn default() -> Self {
        DemoPolicy {
            ladder: vec![0, 1, 2, 4],
            max_attempts: None,
            timeout: Duration::seconds(30),
        }
    }
}

impl DemoPolicy {
    /// The retry policy; refused (as bad input) when the flags make no valid policy.
    pub(crate) fn retry_policy(&self) -> oprec::Result<RetryPolicy> {
        RetryPolicy::builder()
            .timeout(self.timeout)
            .max_attempts(self.max_attempts.unwrap_or(self.ladder.len() as u32))
            .external_io(Ladder::schedule_secs(&self.ladder))
            .jitter(oprec::Jitter::None)
            .build()
    }
}

/// Serves every test that only needs work to flow: succeeds at once, whatever the payload.
fn noop(policy: &RetryPolicy) -> Kind {
    Kind::new(
        "demo.noop",
        policy.clone(),
        |_ctx, _payload: serde_json::Value| async { Ok(()) },
    )
    .dependency(DEPENDENCY)
}

/// `demo.slow`'s payload.
#[derive(Deserialize)]
struct Slow {
    ms: u64,
}

/// Serves drain and concurrency tests: works for `ms` milliseconds, then succeeds. Longer than
/// the timeout, the attempt times out and, the kind declaring external I/O, its outcome is
/// unknown (reconciling).
fn slow(policy: &RetryPolicy) -> Kind {
    Kind::new("demo.slow", policy.clone(), |_ctx, p: Slow| async move {
        tokio::time::sleep(StdDuration::from_millis(p.ms)).await;
        Ok(())
    })
    .dependency(DEPENDENCY)
}

/// Every demo kind under `policy`; `demo.effect` writes through `effects`.
pub(crate) fn registry(policy: &RetryPolicy, effects: EffectTable) -> Registry {
    Registry::new()
        .register(noop(policy))
        .register(flaky::kind(policy))
        .register(crash::kind(policy))
        .register(slow(policy))
        .register(effect::kind(policy, effects))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_policy_follows_the_ladder() {
        let p = DemoPolicy::default().retry_policy().unwrap();
        assert_eq!(p.max_attempts(), Some(4));
        let bad = DemoPolicy {
            timeout: Duration::zero(),
            ..DemoPolicy::default()
        };
        assert!(bad.retry_policy().is_err());
    }

    #[tokio::test]
    async fn names_match_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
        let backend = crate::backend::Backend::connect(&url).await.unwrap();
        let policy = DemoPolicy::default().retry_policy().unwrap();
        let reg = registry(&policy, EffectTable::new(&backend.concrete));
        assert_eq!(reg.names(), NAMES);
        assert!(reg.kinds().all(|k| k.dependency_name() == Some(DEPENDENCY)));
        assert!(reg.get("demo.flaky").unwrap().can_reconcile());
        assert!(reg.get("demo.effect").unwrap().can_reconcile());
    }
}
