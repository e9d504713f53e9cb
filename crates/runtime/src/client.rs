//! Enqueueing: the row commits first, then a wake-up is published. A broker that is down does not
//! fail the enqueue; the scheduler wakes the operation once the broker is back.
//!
//! With a transport, an operation due at once is inserted already marked woken (`last_woken_at`),
//! in the insert's own transaction: no second write per enqueue, and no window in which the
//! worker that takes the wake-up finds the row locked by that write and skips it. Should the
//! publish fail, the scheduler publishes the wake-up again once the re-wake interval has passed.

use std::collections::HashSet;
use std::sync::Arc;

use oprec_core::store::Enqueued;
use oprec_core::{
    Clock, DEFAULT_MAX_PAYLOAD_BYTES, EnqueueOptions, EnqueueStore, Error, NewOperation,
    OperationId, Result, SystemClock, TransactionalEnqueue, Transport, WakeUp,
};
use serde::Serialize;
use serde_json::Value;

use crate::group_commit::GroupCommit;
use crate::{Registry, Stats};

/// Operations enqueued inside a caller's transaction ([`Client::enqueue_in`]), whose wake-ups wait
/// for the caller's commit: call [`AfterCommit::wake`] once it has committed. Dropped without it
/// (a rollback, or a crash before the publish), nothing is published; committed operations are
/// then woken by the scheduler after its re-wake interval.
#[must_use = "publish the wake-ups with .wake() after the commit; otherwise the operations wait for \
              the scheduler's re-wake interval"]
pub struct AfterCommit {
    client: Client,
    enqueued: Vec<Enqueued>,
    wake_ups: Vec<WakeUp>,
}

impl std::fmt::Debug for AfterCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AfterCommit")
            .field("enqueued", &self.enqueued)
            .field("wake_ups", &self.wake_ups.len())
            .finish_non_exhaustive()
    }
}

impl AfterCommit {
    /// The first operation enqueued (the only one of [`Client::enqueue_in`]): its id, and whether
    /// it was created or an idempotency key found it.
    pub fn first(&self) -> Option<&Enqueued> {
        self.enqueued.first()
    }

    /// Every operation enqueued, in input order.
    pub fn enqueued(&self) -> &[Enqueued] {
        &self.enqueued
    }

    /// Publishes the wake-ups of the operations created due at once; call it after the commit.
    /// A publish failure is logged, not returned, as for [`Client::enqueue_many`]: the rows are
    /// committed, and the scheduler wakes them after its re-wake interval.
    pub async fn wake(self) -> Vec<Enqueued> {
        self.client.wake(self.wake_ups).await;
        self.enqueued
    }
}

/// Enqueues operations of registered kinds.
#[derive(Clone)]
pub struct Client {
    store: Arc<dyn EnqueueStore>,
    transport: Option<Arc<dyn Transport>>,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    stats: Arc<Stats>,
    max_payload_bytes: usize,
    /// Single enqueues from concurrent callers, shared by every clone of this client.
    group: Arc<GroupCommit>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("kinds", &self.registry.names())
            .field("transport", &self.transport.as_ref().map(|t| t.name()))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client over `store`, publishing to `transport` when there is one (poll-only otherwise).
    pub fn new(
        store: Arc<dyn EnqueueStore>,
        transport: Option<Arc<dyn Transport>>,
        registry: Arc<Registry>,
    ) -> Self {
        Client {
            store,
            transport,
            registry,
            clock: Arc::new(SystemClock),
            stats: Arc::new(Stats::default()),
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            group: Arc::default(),
        }
    }

    /// Refuses payloads larger than `bytes` of JSON at enqueue (default
    /// [`DEFAULT_MAX_PAYLOAD_BYTES`], 256 KiB): a large input belongs elsewhere, referenced by the
    /// payload.
    pub fn with_max_payload_bytes(mut self, bytes: usize) -> Self {
        self.max_payload_bytes = bytes;
        self
    }

    /// Uses `clock` for enqueue times.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Enqueues one operation of `kind`; returns once its row is committed. Concurrent calls
    /// (on this client or its clones) share one insert and one commit (group commit), each
    /// getting its own result: its id, a repeated idempotency key's existing operation, or its
    /// own error.
    pub async fn enqueue(
        &self,
        kind: &str,
        payload: impl Serialize,
        options: EnqueueOptions,
    ) -> Result<Enqueued> {
        let payload = serde_json::to_value(payload)
            .map_err(|e| Error::InvalidInput(format!("payload is not JSON: {e}")))?;
        let (mut ops, due, _span) = self.prepare(kind, vec![payload], options)?;
        let op = ops
            .pop()
            .ok_or_else(|| Error::InvalidInput("nothing enqueued".into()))?;
        let due = due.contains(&op.id);
        self.group.enqueue(self, op, due).await
    }

    /// Enqueues one operation per payload, in one transaction, then publishes their wake-ups as
    /// one batch. A publish failure is logged, not returned: the rows are committed, and the
    /// scheduler wakes them after its re-wake interval.
    pub async fn enqueue_many(
        &self,
        kind: &str,
        payloads: Vec<Value>,
        options: EnqueueOptions,
    ) -> Result<Vec<Enqueued>> {
        let (ops, due, _span) = self.prepare(kind, payloads, options)?;
        let enqueued = self.store.operation_insert_many(ops).await?;
        let fresh: Vec<WakeUp> = enqueued
            .iter()
            .filter(|e| e.created && due.contains(&e.id))
            .map(|e| WakeUp::new(e.id, kind))
            .collect();
        self.wake(fresh).await;
        Ok(enqueued)
    }

    /// Enqueues one operation of `kind` inside a transaction the caller owns, on `conn` (on
    /// PostgreSQL `&mut *tx` of a `sqlx::Transaction<'_, Postgres>`, on SQLite of a
    /// `sqlx::Transaction<'_, Sqlite>` begun with `BEGIN IMMEDIATE`), with the same checks as
    /// [`Client::enqueue`]. The operation exists if and only if the caller commits. Publish its
    /// wake-up after the commit with [`AfterCommit::wake`]; if the process dies in between, or
    /// the caller rolls back or forgets, nothing is lost: a committed operation is woken by the
    /// scheduler after its re-wake interval, a rolled-back one never existed.
    ///
    /// ```text
    /// let mut tx = pool.begin().await?;
    /// sqlx::query("INSERT INTO orders (id) VALUES ($1)").bind(42_i64).execute(&mut *tx).await?;
    /// let shipment = client
    ///     .enqueue_in(&store, &mut *tx, "shipment.create", json!({"order": 42}), options)
    ///     .await?;
    /// tx.commit().await?;
    /// shipment.wake().await;
    /// ```
    ///
    /// `examples/transactional.rs` runs it on SQLite.
    pub async fn enqueue_in<S: TransactionalEnqueue + ?Sized>(
        &self,
        store: &S,
        conn: &mut S::Conn,
        kind: &str,
        payload: impl Serialize,
        options: EnqueueOptions,
    ) -> Result<AfterCommit> {
        let payload = serde_json::to_value(payload)
            .map_err(|e| Error::InvalidInput(format!("payload is not JSON: {e}")))?;
        self.enqueue_many_in(store, conn, kind, vec![payload], options)
            .await
    }

    /// Enqueues one operation per payload inside a transaction the caller owns; see
    /// [`Client::enqueue_in`].
    pub async fn enqueue_many_in<S: TransactionalEnqueue + ?Sized>(
        &self,
        store: &S,
        conn: &mut S::Conn,
        kind: &str,
        payloads: Vec<Value>,
        options: EnqueueOptions,
    ) -> Result<AfterCommit> {
        let (ops, due, _span) = self.prepare(kind, payloads, options)?;
        let enqueued = store.operation_insert_many_on(conn, ops).await?;
        let wake_ups = enqueued
            .iter()
            .filter(|e| e.created && due.contains(&e.id))
            .map(|e| WakeUp::new(e.id, kind))
            .collect();
        Ok(AfterCommit {
            client: self.clone(),
            enqueued,
            wake_ups,
        })
    }

    /// The store this client enqueues into.
    pub(crate) fn store(&self) -> &Arc<dyn EnqueueStore> {
        &self.store
    }

    /// The operations for `payloads`, checked, inserted already marked woken when a transport
    /// will publish their wake-ups, which of them are due at once, and the `oprec.enqueue` span
    /// (a child of the caller's) whose trace context they store when the caller gave none: the
    /// caller holds it until the insert is done, so the trace shows the request, its enqueue,
    /// and every attempt under the enqueue.
    fn prepare(
        &self,
        kind: &str,
        payloads: Vec<Value>,
        options: EnqueueOptions,
    ) -> Result<(Vec<NewOperation>, HashSet<OperationId>, tracing::Span)> {
        let k = self.registry.get(kind).ok_or_else(|| {
            Error::InvalidInput(format!(
                "unknown kind {kind:?}; known kinds: {}",
                self.registry.names().join(", ")
            ))
        })?;
        let now = self.clock.now();
        let mut options = options;
        if options.dependency.is_none() {
            options.dependency = k.dependency_name().map(str::to_owned);
        }
        // The enqueue's own span, under the caller's, when it passed no trace context.
        let span = if options.traceparent.is_none() {
            tracing::info_span!("oprec.enqueue", kind = kind, operations = payloads.len())
        } else {
            tracing::Span::none()
        };
        #[cfg(feature = "otel")]
        if options.traceparent.is_none() {
            options.traceparent = span.in_scope(crate::otel::current_traceparent);
        }
        let mut ops = payloads
            .into_iter()
            .map(|p| {
                let mut op = NewOperation::with_payload_limit(
                    kind,
                    p,
                    k.policy(),
                    options.clone(),
                    now,
                    self.max_payload_bytes,
                )?;
                op.payload_mode = k.payload_mode();
                Ok(op)
            })
            .collect::<Result<Vec<_>>>()?;
        if self.transport.is_some() {
            for op in ops.iter_mut().filter(|o| o.next_eligible_at <= now) {
                op.last_woken_at = Some(now);
            }
        }
        let due: HashSet<OperationId> = ops
            .iter()
            .filter(|o| o.next_eligible_at <= now)
            .map(|o| o.id)
            .collect();
        Ok((ops, due, span))
    }

    /// Publishes the wake-ups of operations inserted already marked woken; failures are logged
    /// and left to the scheduler.
    pub(crate) async fn wake(&self, ids: Vec<WakeUp>) {
        let Some(t) = &self.transport else { return };
        if ids.is_empty() {
            return;
        }
        match t.publish(&ids).await {
            Ok(()) => {
                Stats::add(&self.stats.published, ids.len() as u64);
            }
            Err(e) => {
                Stats::add(&self.stats.publish_errors, 1);
                tracing::warn!(error = %e, transport = t.name(), count = ids.len(),
                    "publishing wake-ups failed; the operations are committed and the scheduler will wake them");
            }
        }
    }
}
