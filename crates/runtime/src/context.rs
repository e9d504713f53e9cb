//! What a handler knows about the attempt it runs, and the durable writes it may make during it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use oprec_core::store::{RemoteIdSetParams, StepSaveParams, StepsGetParams};
use oprec_core::{OperationId, WorkerStore};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Mutex;
use uuid::Uuid;

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
    pub(crate) fn new(
        op: &oprec_core::Operation,
        claim_token: Uuid,
        store: Arc<dyn WorkerStore>,
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
