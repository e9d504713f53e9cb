//! What a handler knows about the attempt it runs, and the durable writes it may make during it:
//! its remote id, its steps, and its effect in a fenced transaction ([`Context::fenced`]). For
//! effects elsewhere it can narrow the at-least-once window: [`Context::claim_current`] just before
//! an irreversible call, and [`Context::cancelled`], which fires as soon as the worker's heartbeat
//! finds the lease lost (or the attempt ends: timeout, shutdown).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use oprec_core::store::{ClaimCurrentParams, RemoteIdSetParams, StepSaveParams, StepsGetParams};
use oprec_core::{ClaimContext, Clock, FencedStore, OperationId, RetryPolicy, WorkerStore};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};
use uuid::Uuid;

use crate::fenced::{Fenced, FencedState};

/// The handler's view of one attempt.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    id: OperationId,
    kind: String,
    attempt: u32,
    deadline: Option<DateTime<Utc>>,
    effect_key: String,
    claim_token: Uuid,
    store: Arc<dyn WorkerStore>,
    steps: Mutex<Option<HashMap<String, Value>>>,
    /// Fires when the attempt is over for this worker (see [`Context::cancelled`]).
    cancel: CancellationToken,
    /// What a fenced completion needs to decide its transition; `None` outside an attempt (a
    /// reconcile hook holds no claim).
    rules: Option<AttemptRules>,
    /// Whether this attempt opened a fenced transaction, and how it ended.
    fenced: std::sync::Mutex<FencedState>,
}

/// How core decides an attempt's transition (the kind's policy, the claim as it was, the clock),
/// and how the worker lets the claim go once a fenced commit has written the outcome, so that a
/// drain that aborts the attempt right after does not release a claim already ended.
#[derive(Clone)]
pub(crate) struct AttemptRules {
    pub policy: RetryPolicy,
    pub claim: ClaimContext,
    pub clock: Arc<dyn Clock>,
    pub let_go: Arc<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.inner.id)
            .field("kind", &self.inner.kind)
            .field("attempt", &self.inner.attempt)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// The context of an attempt: `cancel` fires when it is over for this worker, and `rules`
    /// decide a fenced completion's transition.
    pub(crate) fn for_attempt(
        op: &oprec_core::Operation,
        claim_token: Uuid,
        store: Arc<dyn WorkerStore>,
        cancel: CancellationToken,
        rules: AttemptRules,
    ) -> Self {
        Self::new(op, claim_token, store, cancel, Some(rules))
    }

    /// The context of a reconcile hook: no claim, so every fenced write is refused as stale.
    pub(crate) fn for_reconcile(op: &oprec_core::Operation, store: Arc<dyn WorkerStore>) -> Self {
        Self::new(op, Uuid::nil(), store, CancellationToken::new(), None)
    }

    fn new(
        op: &oprec_core::Operation,
        claim_token: Uuid,
        store: Arc<dyn WorkerStore>,
        cancel: CancellationToken,
        rules: Option<AttemptRules>,
    ) -> Self {
        Context {
            inner: Arc::new(Inner {
                id: op.id,
                kind: op.kind.clone(),
                attempt: op.attempt,
                deadline: op.give_up_at,
                // Stable across attempts and across in-place re-drives; an operation re-driven as
                // new keeps its ancestor's key, so the remote side can still deduplicate.
                effect_key: op.effect_key(),
                claim_token,
                store,
                steps: Mutex::new(None),
                cancel,
                rules,
                fenced: std::sync::Mutex::new(FencedState::None),
            }),
        }
    }

    /// The operation's id.
    pub fn id(&self) -> OperationId {
        self.inner.id
    }

    /// The operation's kind.
    pub fn kind(&self) -> &str {
        &self.inner.kind
    }

    /// This attempt's number (1-based, counted at claim).
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// The caller's deadline, if any: no attempt is scheduled after it.
    pub fn deadline(&self) -> Option<DateTime<Utc>> {
        self.inner.deadline
    }

    /// The idempotency key to hand to the remote side (e.g. an `Idempotency-Key` header): the
    /// same on every attempt of this operation, so a retried effect can be deduplicated there.
    pub fn effect_key(&self) -> &str {
        &self.inner.effect_key
    }

    /// Resolves when the attempt is over for this worker: the heartbeat found the lease lost
    /// (another worker may run the operation now), the attempt timed out, the worker shut down
    /// without waiting for it, or it ended. The handler's future is dropped at once in the first
    /// three cases; work the handler spawned should select on this and stop.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.inner.cancel.cancelled()
    }

    /// Whether [`Context::cancelled`] has fired.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// The token behind [`Context::cancelled`], to hand to spawned work.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// Whether this attempt's claim is still current: the operation is running under this
    /// attempt's token and its lease has not expired, by the store's clock (one read of the
    /// store, unless [`Context::cancelled`] has already fired). Ask just before an irreversible
    /// call to a remote side: false means another worker may run (or has run) the operation, so
    /// the call should not be made. True narrows the window; it cannot close it (the worker may
    /// stop between the answer and the call): only an effect written through
    /// [`Context::fenced`] is exactly-once.
    pub async fn claim_current(&self) -> oprec_core::Result<bool> {
        if self.is_cancelled() {
            return Ok(false);
        }
        self.inner
            .store
            .operation_claim_current(ClaimCurrentParams {
                id: self.inner.id,
                claim_token: self.inner.claim_token,
            })
            .await
    }

    /// Opens a transaction on `store`'s database (the one the worker runs on), in which the
    /// handler writes its effect; [`Fenced::commit`] then applies this attempt's successful
    /// completion in the same transaction, only if the claim is still current, so the effect and
    /// the operation's `succeeded` commit together or not at all: the effect is applied exactly
    /// once, whatever crashes, stops or duplicate wake-ups happen. A claim that is no longer
    /// current is [`Error::StaleClaim`](oprec_core::Error::StaleClaim) here already.
    ///
    /// The transaction holds a connection of the store's pool (on SQLite, its one write lock)
    /// while it is open: keep it to the effect's statements, with remote calls outside it.
    ///
    /// One fenced transaction per attempt. Dropping it uncommitted (an error, a `?`) rolls the
    /// effect back; the handler's error is then recorded as usual. Returning `Ok` without
    /// committing it is a handler bug, recorded as a transient failure.
    pub async fn fenced<S: FencedStore + Clone>(&self, store: &S) -> oprec_core::Result<Fenced<S>> {
        let Some(rules) = self.inner.rules.clone() else {
            return Err(oprec_core::Error::InvalidInput(
                "a fenced transaction needs an attempt's claim; a reconcile hook holds none"
                    .to_owned(),
            ));
        };
        self.fenced_open()?;
        let tx = store
            .operation_fenced_begin(oprec_core::fenced::FencedBeginParams {
                id: self.inner.id,
                claim_token: self.inner.claim_token,
            })
            .await;
        match tx {
            Ok(tx) => Ok(Fenced::new(self.clone(), store.clone(), tx, rules)),
            Err(e) => {
                self.set_fenced(FencedState::RolledBack);
                Err(e)
            }
        }
    }

    /// Marks a fenced transaction open, refusing a second one.
    fn fenced_open(&self) -> oprec_core::Result<()> {
        let mut state = self.inner.fenced.lock().unwrap_or_else(|e| e.into_inner());
        match *state {
            FencedState::None | FencedState::RolledBack => {
                *state = FencedState::Open;
                Ok(())
            }
            FencedState::Open | FencedState::Committed(_) => {
                Err(oprec_core::Error::InvalidInput(format!(
                    "operation {}: one fenced transaction per attempt, and this attempt has \
                     already opened one",
                    self.inner.id
                )))
            }
        }
    }

    /// Records how the attempt's fenced transaction ended.
    pub(crate) fn set_fenced(&self, state: FencedState) {
        *self.inner.fenced.lock().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// How the attempt's fenced transaction stands.
    pub(crate) fn fenced_state(&self) -> FencedState {
        *self.inner.fenced.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The operation's id and this attempt's claim token.
    pub(crate) fn claim(&self) -> (OperationId, Uuid) {
        (self.inner.id, self.inner.claim_token)
    }

    /// Records the remote identity of the effect now, before the attempt ends, so that a crash
    /// after the remote call does not lose it. Fenced: a stale claim changes nothing.
    pub async fn set_remote_id(&self, remote_id: impl Into<String>) -> oprec_core::Result<()> {
        self.inner
            .store
            .operation_remote_id_set(RemoteIdSetParams {
                id: self.inner.id,
                claim_token: self.inner.claim_token,
                remote_id: remote_id.into(),
            })
            .await
    }

    /// Runs `f` once per operation as the step `name`: its output is stored when it completes,
    /// and a later attempt gets the stored output back instead of running `f` again. Steps make
    /// the retried boundary the smallest safe one: a retry resumes after the last completed step.
    pub async fn step<T, F, Fut>(&self, name: &str, f: F) -> anyhow::Result<T>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let mut steps = self.inner.steps.lock().await;
        if steps.is_none() {
            let loaded = self
                .inner
                .store
                .operation_steps_get(StepsGetParams { id: self.inner.id })
                .await?;
            *steps = Some(loaded.into_iter().map(|s| (s.name, s.output)).collect());
        }
        if let Some(done) = steps.as_ref().and_then(|m| m.get(name)) {
            return Ok(serde_json::from_value(done.clone())?);
        }
        drop(steps);
        let out = f().await?;
        let value = serde_json::to_value(&out)?;
        self.inner
            .store
            .operation_step_save(StepSaveParams {
                id: self.inner.id,
                claim_token: self.inner.claim_token,
                name: name.to_owned(),
                output: value.clone(),
            })
            .await?;
        if let Some(m) = self.inner.steps.lock().await.as_mut() {
            m.insert(name.to_owned(), value);
        }
        Ok(out)
    }
}
