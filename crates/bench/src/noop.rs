//! `demo.noop` as the benchmark enqueues it: the same name and policy as `oprec worker --demo`
//! registers (ladder 0, 1, 2, 4 s; 4 attempts; 30 s timeout), so the worker process runs what the
//! benchmark enqueued.

use std::sync::Arc;

use oprec::{Client, Kind, Ladder, Registry, RetryPolicy, Transport};

/// The kind's name.
pub(crate) const KIND: &str = "demo.noop";
/// The dependency it names.
pub(crate) const DEPENDENCY: &str = "demo-provider";

/// The kind's policy.
pub(crate) fn policy() -> oprec::Result<RetryPolicy> {
    RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(30))
        .max_attempts(4)
        .external_io(Ladder::schedule_secs(&[0, 1, 2, 4]))
        .jitter(oprec::Jitter::None)
        .build()
}

/// The registry of `oprec worker --demo`'s `demo.noop` alone.
pub(crate) fn registry() -> oprec::Result<Registry> {
    let policy = policy()?;
    Ok(Registry::new().register(
        Kind::new(KIND, policy, |_ctx, _payload: serde_json::Value| async {
            Ok(())
        })
        .dependency(DEPENDENCY),
    ))
}

/// A client that enqueues `demo.noop` into `store`, publishing to `transport` if there is one.
pub(crate) fn client(
    store: Arc<dyn oprec::EnqueueStore>,
    transport: Option<Arc<dyn Transport>>,
) -> crate::Result<Client> {
    Ok(Client::new(store, transport, Arc::new(registry()?)))
}

/// The payload of the `i`-th operation.
pub(crate) fn payload(i: u64) -> serde_json::Value {
    serde_json::json!({ "n": i })
}
