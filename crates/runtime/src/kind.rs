//! Kinds: a name, a payload type, a handler and a retry policy — plus the optional classifier,
//! reconcile hook, dependency and still-needed check. The [`Registry`] erases the payload type so a
//! worker can run many kinds.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use oprec_core::{Failure, KindPolicy, OperationError, PayloadMode, RetryPolicy, Schedule};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Context;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type HandlerFn = dyn Fn(Context, Value) -> BoxFuture<anyhow::Result<()>> + Send + Sync;
type ReconcileFn = dyn Fn(Context, Value) -> BoxFuture<Reconciled> + Send + Sync;
type StillNeededFn = dyn Fn(Value) -> BoxFuture<bool> + Send + Sync;
type ClassifierFn = dyn Fn(&anyhow::Error) -> Failure + Send + Sync;

/// What a reconcile hook found out about an effect whose outcome was unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciled {
    /// The effect happened; its remote identity, if known.
    Applied {
        /// The remote identity of the effect.
        remote_id: Option<String>,
    },
    /// The effect did not happen: safe to retry.
    NotApplied,
    /// Still cannot tell.
    StillUnknown,
}

/// One kind of operation: how to run it and how to treat its failures.
#[derive(Clone)]
pub struct Kind {
    name: String,
    policy: RetryPolicy,
    payload_mode: PayloadMode,
    dependency: Option<String>,
    handler: Arc<HandlerFn>,
    classifier: Option<Arc<ClassifierFn>>,
    reconcile: Option<Arc<ReconcileFn>>,
    still_needed: Option<Arc<StillNeededFn>>,
    dead_letter_sinks: Vec<Arc<dyn crate::DeadLetterSink>>,
    retention: Option<oprec_core::Retention>,
    schedule: Option<Schedule>,
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kind")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .field("payload_mode", &self.payload_mode)
            .field("dependency", &self.dependency)
            .field("retention", &self.retention)
            .field("schedule", &self.schedule)
            .finish_non_exhaustive()
    }
}

/// Says where in a payload deserialization failed: serde's message names the field.
fn malformed(kind: &str, e: serde_json::Error) -> anyhow::Error {
    let text = e.to_string();
    let field = text
        .split('`')
        .nth(1)
        .map(str::to_owned)
        .filter(|_| text.contains("field"));
    let mut err = OperationError::new(format!("malformed payload for {kind}: {text}"));
    if let Some(field) = field {
        err = err.field(field);
    }
    Failure::permanent(err.next_action("correct the payload and enqueue a new operation")).into()
}

impl Kind {
    /// A kind named `name`, whose payload deserializes to `P` and whose handler is `handler`.
    ///
    /// The handler returns `anyhow::Result<()>`: return a [`Failure`] (through `?` or `.into()`) to
    /// say which class a failure is; any other error goes through the classifier, or is
    /// `unknown` if there is none — never silently "transient".
    pub fn new<P, F, Fut>(name: impl Into<String>, policy: RetryPolicy, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let name = name.into();
        let kind_name = name.clone();
        let handler = Arc::new(handler);
        Kind {
            name,
            policy,
            payload_mode: PayloadMode::Snapshot,
            dependency: None,
            handler: Arc::new(move |ctx, payload| {
                let parsed = serde_json::from_value::<P>(payload);
                let handler = handler.clone();
                let kind_name = kind_name.clone();
                Box::pin(async move {
                    match parsed {
                        Ok(p) => handler(ctx, p).await,
                        Err(e) => Err(malformed(&kind_name, e)),
                    }
                })
            }),
            classifier: None,
            reconcile: None,
            still_needed: None,
            dead_letter_sinks: Vec::new(),
            retention: None,
            schedule: None,
        }
    }

    /// Declares the payload a reference to current state (the default is a snapshot).
    pub fn reference_payload(mut self) -> Self {
        self.payload_mode = PayloadMode::Reference;
        self
    }

    /// Names the dependency the kind calls, for pause/postpone and per-dependency rates.
    pub fn dependency(mut self, name: impl Into<String>) -> Self {
        self.dependency = Some(name.into());
        self
    }

    /// Keeps this kind's succeeded and cancelled operations as `retention` says, instead of the
    /// worker's [`RetentionConfig::policy`](crate::RetentionConfig::policy) default (dead ones
    /// are never removed by age).
    pub fn retention(mut self, retention: oprec_core::Retention) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Makes the kind recurring: the maintenance leader enqueues one operation per tick of
    /// `schedule` (idempotency key `schedule:<tick>`, payload the schedule's with `tick` added),
    /// however many workers run it. The schedule is declared to the store when a worker starts.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// The kind's schedule, if it is recurring.
    pub fn own_schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref()
    }

    /// The kind's own retention, if it declares one.
    pub fn own_retention(&self) -> Option<oprec_core::Retention> {
        self.retention
    }

    /// Maps the handler's unclassified errors onto failure classes.
    pub fn classifier(
        mut self,
        f: impl Fn(&anyhow::Error) -> Failure + Send + Sync + 'static,
    ) -> Self {
        self.classifier = Some(Arc::new(f));
        self
    }

    /// Looks an effect up after an unknown outcome.
    pub fn reconcile<P, F, Fut>(mut self, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reconciled> + Send + 'static,
    {
        let f = Arc::new(f);
        self.reconcile = Some(Arc::new(move |ctx, payload| {
            let f = f.clone();
            Box::pin(async move {
                match serde_json::from_value::<P>(payload) {
                    Ok(p) => f(ctx, p).await,
                    Err(_) => Reconciled::StillUnknown,
                }
            })
        }));
        self
    }

    /// Checked at claim: when it says no, the operation ends cancelled (obsolete) and the handler
    /// is not called.
    pub fn still_needed<P, F, Fut>(mut self, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        let f = Arc::new(f);
        self.still_needed = Some(Arc::new(move |payload| {
            let f = f.clone();
            Box::pin(async move {
                match serde_json::from_value::<P>(payload) {
                    Ok(p) => f(p).await,
                    // A malformed payload is the handler's to report.
                    Err(_) => true,
                }
            })
        }));
        self
    }

    /// Announces this kind's promotions to dead through `sink` (instead of the worker's default
    /// sinks); call again to add more.
    pub fn dead_letter_sink(mut self, sink: Arc<dyn crate::DeadLetterSink>) -> Self {
        self.dead_letter_sinks.push(sink);
        self
    }

    /// The kind's own dead-letter sinks (empty: the worker's defaults apply).
    pub fn dead_letter_sinks(&self) -> &[Arc<dyn crate::DeadLetterSink>] {
        &self.dead_letter_sinks
    }

    /// The kind's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind's retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Snapshot or reference.
    pub fn payload_mode(&self) -> PayloadMode {
        self.payload_mode
    }

    /// The named dependency, if any.
    pub fn dependency_name(&self) -> Option<&str> {
        self.dependency.as_deref()
    }

    /// The enqueue-time part of the kind's policy, as a worker publishes it for producers
    /// outside Rust (PostgreSQL's `oprec_enqueue` reads it from `operation_kinds`).
    pub fn published_policy(&self) -> KindPolicy {
        KindPolicy::new(
            &self.name,
            &self.policy,
            self.payload_mode,
            self.dependency.as_deref(),
        )
    }

    /// Whether the kind has a reconcile hook.
    pub fn can_reconcile(&self) -> bool {
        self.reconcile.is_some()
    }

    pub(crate) async fn run(&self, ctx: Context, payload: Value) -> Result<(), Failure> {
        match (self.handler)(ctx, payload).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.classify(e)),
        }
    }

    pub(crate) fn classify(&self, e: anyhow::Error) -> Failure {
        match e.downcast::<Failure>() {
            Ok(f) => f,
            Err(e) => match &self.classifier {
                Some(c) => c(&e),
                None => Failure::unknown(format!("unclassified error: {e:#}")),
            },
        }
    }

    pub(crate) async fn run_reconcile(&self, ctx: Context, payload: Value) -> Option<Reconciled> {
        match &self.reconcile {
            Some(r) => Some(r(ctx, payload).await),
            None => None,
        }
    }

    pub(crate) async fn is_still_needed(&self, payload: Value) -> bool {
        match &self.still_needed {
            Some(f) => f(payload).await,
            None => true,
        }
    }
}

/// The kinds a process knows, by name.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    kinds: BTreeMap<String, Kind>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a kind.
    pub fn register(mut self, kind: Kind) -> Self {
        self.kinds.insert(kind.name.clone(), kind);
        self
    }

    /// The kind named `name`.
    pub fn get(&self, name: &str) -> Option<&Kind> {
        self.kinds.get(name)
    }

    /// The names of every kind, sorted.
    pub fn names(&self) -> Vec<String> {
        self.kinds.keys().cloned().collect()
    }

    /// Every kind.
    pub fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.values()
    }

    /// Only the kinds named (a worker of one pool); fails, naming them, when some are not
    /// registered.
    pub fn only(mut self, names: &[String]) -> oprec_core::Result<Registry> {
        let unknown: Vec<&str> = names
            .iter()
            .filter(|n| !self.kinds.contains_key(n.as_str()))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(oprec_core::Error::InvalidInput(format!(
                "unknown kind{} {}; registered kinds: {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown
                    .iter()
                    .map(|k| format!("{k:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.names().join(", ")
            )));
        }
        self.kinds.retain(|name, _| names.contains(name));
        Ok(self)
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;
    use oprec_core::RetryPolicy;

    fn kind(name: &str) -> Kind {
        let policy = RetryPolicy::builder()
            .timeout(chrono::Duration::seconds(5))
            .max_attempts(1)
            .local_only()
            .jitter(oprec_core::Jitter::None)
            .build()
            .unwrap();
        Kind::new(name, policy, |_ctx, _p: serde_json::Value| async { Ok(()) })
    }

    #[test]
    fn only_keeps_the_named_kinds_and_refuses_unknown_ones() {
        let all = Registry::new()
            .register(kind("a"))
            .register(kind("b"))
            .register(kind("c"));
        let some = all.clone().only(&["c".to_owned(), "a".to_owned()]).unwrap();
        assert_eq!(some.names(), ["a", "c"]);
        let e = all
            .only(&["a".to_owned(), "zz".to_owned()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown kind \"zz\"; registered kinds: a, b, c"),
            "{e}"
        );
    }
}
