//! The runtime's end-to-end scenarios (a broker purge, a broker down at enqueue, duplicate
//! wake-ups, garbage frames, the retry ladder, ...), written once and run on every rig.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use oprec_core::{
    AckToken, AttemptOutcome, Delivery, EnqueueOptions, Error, FailureClass, KindDepth,
    OperationId, Result, Status, TerminalReason, Transport, WakeUp,
};
use serde_json::json;

use crate::kinds::{Counters, registry};
use crate::{Rig, Running};

/// 10,000 operations enqueued while no worker runs; the broker purged; a worker started: all
/// succeed, each with exactly one attempt. The scheduler rebuilt the lost wake-ups from the rows.
pub async fn ten_thousand_survive_a_broker_purge(rig: Rig) {
    const N: usize = 10_000;
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let client = rig.client(&reg);
    for chunk in 0..(N / 1000) {
        let payloads = (0..1000).map(|i| json!({"i": chunk * 1000 + i})).collect();
        client
            .enqueue_many("t.noop", payloads, EnqueueOptions::default())
            .await
            .unwrap();
    }
    if let Some(t) = &rig.transport {
        let purged = t.purge(None).await.unwrap();
        assert_eq!(purged, N as u64, "every wake-up was waiting on the broker");
        assert_eq!(t.depth(None).await.unwrap(), 0);
    }
    assert_eq!(
        rig.count(Status::Pending).await,
        N as u64,
        "purging the broker erased no intent"
    );
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, N as u64, 180).await;
    let report = running.stop().await;
    assert_eq!(
        Counters::get(&counters.noop),
        N as u64,
        "executions = operations"
    );
    let all = rig.all().await;
    assert_eq!(all.len(), N);
    assert!(
        all.iter()
            .all(|o| o.status == Status::Succeeded && o.attempt == 1)
    );
    assert_eq!(report.stats.completions, N as u64);
}

/// A transport that is down: every call fails as a transient backend error.
#[derive(Debug)]
struct DownTransport;

#[async_trait]
impl Transport for DownTransport {
    fn name(&self) -> &'static str {
        "down"
    }
    async fn publish(&self, _wakeups: &[WakeUp]) -> Result<()> {
        Err(Error::backend(true, "connection refused"))
    }
    async fn receive(
        &self,
        _kinds: &[String],
        _max: usize,
        _wait: Duration,
    ) -> Result<Vec<Delivery>> {
        Err(Error::backend(true, "connection refused"))
    }
    async fn ack(&self, _tokens: Vec<AckToken>) -> Result<()> {
        Err(Error::backend(true, "connection refused"))
    }
    async fn purge(&self, _kind: Option<&str>) -> Result<u64> {
        Err(Error::backend(true, "connection refused"))
    }
    async fn depth(&self, _kind: Option<&str>) -> Result<u64> {
        Err(Error::backend(true, "connection refused"))
    }
    async fn depths(&self) -> Result<Vec<KindDepth>> {
        Err(Error::backend(true, "connection refused"))
    }
}

/// The broker is down at enqueue: the enqueue commits anyway, and the operation completes once a
/// worker with a working broker runs, woken by the scheduler.
pub async fn enqueue_commits_while_the_broker_is_down(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let down = oprec_runtime::Client::new(
        rig.store.clone(),
        Some(Arc::new(DownTransport)),
        reg.clone(),
    );
    let e = down
        .enqueue("t.noop", json!({}), EnqueueOptions::default())
        .await
        .unwrap();
    assert!(e.created);
    assert_eq!(rig.get(e.id).await.operation.status, Status::Pending);
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    running.stop().await;
    assert_eq!(Counters::get(&counters.noop), 1);
}

/// Every wake-up published three times: each operation is attempted once; the extra wake-ups are
/// acknowledged and counted as ignored.
pub async fn triple_wakeups_attempt_each_operation_once(rig: Rig) {
    let Some(t) = rig.transport.clone() else {
        return; // Poll-only has no wake-ups to duplicate; its claims are tested by the store suite.
    };
    const N: usize = 300;
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let client = rig.client_without_transport(&reg);
    let ids: Vec<OperationId> = client
        .enqueue_many(
            "t.noop",
            (0..N).map(|i| json!({"i": i})).collect(),
            EnqueueOptions::default(),
        )
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    for _ in 0..3 {
        let wakeups: Vec<WakeUp> = ids.iter().map(|id| WakeUp::new(*id, "t.noop")).collect();
        t.publish(&wakeups).await.unwrap();
    }
    let running = Running::start(rig.worker(&reg, |c| c.run_maintenance = false));
    rig.wait_for(Status::Succeeded, N as u64, 60).await;
    // Let the duplicates drain too, then stop.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while running.stats.snapshot().wakeups_received < 3 * N as u64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "duplicates not delivered: {:?}",
            running.stats.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let report = running.stop().await;
    assert_eq!(
        Counters::get(&counters.noop),
        N as u64,
        "each operation ran once"
    );
    assert_eq!(report.stats.claimed, N as u64);
    assert_eq!(report.stats.wakeups_ignored, 2 * N as u64);
    assert!(rig.all().await.iter().all(|o| o.attempt == 1));
}

/// Garbage frames on the broker are counted and acknowledged; real work is unaffected.
pub async fn garbage_frames_are_counted_and_work_goes_on(rig: Rig) {
    let Some(inject) = rig.inject.clone() else {
        return;
    };
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let garbage: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"DROP TABLE operations".to_vec(),
        vec![0xff; 10],
        b"1:01938f6e-7a51".to_vec(),
        vec![b'x'; 1 << 20],
    ];
    for g in &garbage {
        inject(g.clone()).await;
    }
    let client = rig.client(&reg);
    client
        .enqueue_many(
            "t.noop",
            (0..20).map(|i| json!({"i": i})).collect(),
            EnqueueOptions::default(),
        )
        .await
        .unwrap();
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 20, 60).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while running.stats.snapshot().garbage_frames < garbage.len() as u64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            running.stats.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let report = running.stop().await;
    assert_eq!(report.stats.garbage_frames, garbage.len() as u64);
    assert_eq!(Counters::get(&counters.noop), 20);
    // Acknowledged: nothing is left waiting or unacknowledged on the broker.
    if let Some(t) = &rig.transport {
        assert_eq!(
            t.depth(None).await.expect("depth"),
            0,
            "garbage left on the broker"
        );
    }
}

/// Retries climb the ladder (0, 1, 1 s) through the scheduler and end in success; the remote id
/// set during the attempt is kept.
pub async fn retries_climb_the_ladder_then_succeed(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let id = rig
        .client(&reg)
        .enqueue(
            "t.flaky",
            json!({"fail_times": 2}),
            EnqueueOptions::default(),
        )
        .await
        .unwrap()
        .id;
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    running.stop().await;
    let d = rig.get(id).await;
    assert_eq!(d.operation.attempt, 3);
    assert_eq!(
        d.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>(),
        vec![
            AttemptOutcome::Error,
            AttemptOutcome::Error,
            AttemptOutcome::Succeeded
        ]
    );
    // The 1 s rung counts from when the handler returned, which is after the first claim;
    // `ended_at` is when the completion committed, which batching can put later still.
    assert!(
        d.attempts[1].claimed_at - d.attempts[0].claimed_at >= chrono::Duration::seconds(1),
        "{:?}",
        d.attempts
    );
    assert_eq!(d.operation.remote_id, Some(format!("remote-oprec-{id}")));
    assert_eq!(Counters::get(&counters.flaky), 3);
}

/// A payload that does not fit the kind's type: dead (permanent) at the first attempt, naming
/// the field.
pub async fn malformed_payload_is_dead_at_once(rig: Rig) {
    let reg = registry(Arc::default());
    let id = rig
        .client(&reg)
        .enqueue(
            "t.shipment",
            json!({"street": "1 Main St"}),
            EnqueueOptions::default(),
        )
        .await
        .unwrap()
        .id;
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Dead, 1, 30).await;
    running.stop().await;
    let o = rig.get(id).await.operation;
    assert_eq!(o.attempt, 1);
    assert_eq!(o.terminal_reason, Some(TerminalReason::Permanent));
    assert_eq!(o.last_failure_class, Some(FailureClass::Permanent));
    let err = o.last_error.unwrap();
    assert_eq!(err.field.as_deref(), Some("postal_code"), "{err:?}");
    assert!(err.summary.contains("malformed payload"), "{err:?}");
}

/// A retry resumes after the last completed step: the reservation runs once.
pub async fn steps_resume_after_the_last_completed_step(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    rig.client(&reg)
        .enqueue("t.steps", json!({}), EnqueueOptions::default())
        .await
        .unwrap();
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    running.stop().await;
    assert_eq!(
        counters.step_one.load(Ordering::SeqCst),
        1,
        "reserve ran once"
    );
    assert_eq!(counters.step_two.load(Ordering::SeqCst), 1);
}

/// An operation no longer needed is cancelled as obsolete without running its handler.
pub async fn obsolete_operations_are_cancelled_unrun(rig: Rig) {
    let reg = registry(Arc::default());
    let client = rig.client(&reg);
    let gone = client
        .enqueue(
            "t.needed",
            json!({"needed": false}),
            EnqueueOptions::default(),
        )
        .await
        .unwrap()
        .id;
    let kept = client
        .enqueue(
            "t.needed",
            json!({"needed": true}),
            EnqueueOptions::default(),
        )
        .await
        .unwrap()
        .id;
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    rig.wait_for(Status::Cancelled, 1, 30).await;
    running.stop().await;
    let g = rig.get(gone).await;
    assert_eq!(g.operation.terminal_reason, Some(TerminalReason::Obsolete));
    assert_eq!(g.attempts[0].outcome, AttemptOutcome::Rejected);
    assert_eq!(rig.get(kept).await.operation.status, Status::Succeeded);
}

/// A registry of one kind `name` (one attempt, a no-op handler): another process's kinds.
fn one_kind_registry(name: &str) -> Arc<oprec_runtime::Registry> {
    Arc::new(
        oprec_runtime::Registry::new().register(oprec_runtime::Kind::new(
            name,
            oprec_core::RetryPolicy::builder()
                .timeout(chrono::Duration::seconds(1))
                .max_attempts(1)
                .local_only()
                .jitter(oprec_core::Jitter::None)
                .build()
                .unwrap(),
            |_ctx, _p: serde_json::Value| async { Ok(()) },
        )),
    )
}

/// An operation of a kind this worker does not know is never claimed.
pub async fn unknown_kinds_are_not_claimed(rig: Rig) {
    let reg = registry(Arc::default());
    let other = one_kind_registry("someone.else");
    let foreign = rig
        .client(&other)
        .enqueue("someone.else", json!({}), EnqueueOptions::default())
        .await
        .unwrap()
        .id;
    rig.client(&reg)
        .enqueue("t.noop", json!({}), EnqueueOptions::default())
        .await
        .unwrap();
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.stop().await;
    let o = rig.get(foreign).await.operation;
    assert_eq!((o.status, o.attempt), (Status::Pending, 0));
}

/// Shutdown drains: attempts that finish within the drain timeout succeed; the rest are released
/// (pending again, history says "released"); nothing is left running.
pub async fn shutdown_drains_and_releases(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let client = rig.client(&reg);
    let quick = client
        .enqueue("t.slow", json!({"ms": 200}), EnqueueOptions::default())
        .await
        .unwrap()
        .id;
    let stuck: Vec<OperationId> = client
        .enqueue_many(
            "t.slow",
            (0..3).map(|_| json!({"ms": 60_000})).collect(),
            EnqueueOptions::default(),
        )
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    let running = Running::start(rig.worker(&reg, |c| c.drain_timeout = Duration::from_secs(2)));
    rig.wait_for(Status::Running, 4, 30).await;
    let report = running.stop().await;
    assert_eq!(report.released, 3);
    assert_eq!(rig.count(Status::Running).await, 0, "nothing left running");
    assert_eq!(rig.get(quick).await.operation.status, Status::Succeeded);
    for id in stuck {
        let d = rig.get(id).await;
        assert_eq!(d.operation.status, Status::Pending);
        assert_eq!(d.attempts.last().unwrap().outcome, AttemptOutcome::Released);
    }
}

/// Shutdown with claims waiting in the buffer: two handlers, ten long operations; the worker
/// holds four claims (two running, two buffered: one concurrency ahead before it knows a rate)
/// and, seeing no completion, claims no more. On stop the two buffered ones are given back
/// (pending, attempt refunded, no attempt row) and the two running ones released at the drain
/// timeout (pending, attempt refunded too, a `released` attempt row each): a deploy costs no
/// operation an attempt.
pub async fn shutdown_gives_back_buffered_claims(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    rig.client(&reg)
        .enqueue_many(
            "t.slow",
            (0..10).map(|_| json!({"ms": 60_000})).collect(),
            EnqueueOptions::default(),
        )
        .await
        .unwrap();
    let running = Running::start(rig.worker(&reg, |c| {
        c.concurrency = 2;
        c.drain_timeout = Duration::from_millis(500);
    }));
    rig.wait_for(Status::Running, 4, 30).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        rig.count(Status::Running).await,
        4,
        "claimed past one concurrency ahead"
    );
    let report = running.stop().await;
    assert_eq!((report.given_back, report.released), (2, 2));
    assert_eq!(rig.count(Status::Running).await, 0);
    let all = rig.all().await;
    assert_eq!(all.len(), 10);
    assert!(all.iter().all(|o| o.status == Status::Pending));
    assert_eq!(all.iter().map(|o| u64::from(o.attempt)).sum::<u64>(), 0);
    let mut histories = 0;
    for o in &all {
        let d = rig.get(o.id).await;
        histories += d.attempts.len();
        assert!(
            d.attempts
                .iter()
                .all(|a| a.outcome == AttemptOutcome::Released)
        );
    }
    assert_eq!(histories, 2, "given-back claims leave no attempt row");
}

/// A handler that panics is caught: its attempt is recorded at once (long before its 30 s lease
/// could expire) as an unrecognised error carrying the panic's message, so the operation goes to
/// reconciling like any unknown outcome, never `vanished`, and the worker goes on.
pub async fn a_panicking_handler_is_recorded_at_once(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters);
    let id = rig
        .client(&reg)
        .enqueue("t.panics", json!({}), EnqueueOptions::default())
        .await
        .unwrap()
        .id;
    let started = std::time::Instant::now();
    let running = Running::start(rig.worker(&reg, |c| c.lease = chrono::Duration::seconds(30)));
    rig.wait_for(Status::Reconciling, 1, 20).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "recorded before the lease could expire"
    );
    let report = running.stop().await;
    assert_eq!((report.stats.panicked, report.stats.failed), (1, 1));
    let d = rig.get(id).await;
    let outcomes: Vec<AttemptOutcome> = d.attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, [AttemptOutcome::Unknown]);
    let a = &d.attempts[0];
    assert_eq!(a.failure_class, Some(oprec_core::FailureClass::Unknown));
    let summary = &a.error.as_ref().expect("the panic's error").summary;
    assert!(
        summary.contains("the handler panicked") && summary.contains("a handler bug"),
        "{summary}"
    );
}

/// The paths of an attempt nobody classified, which the seed asks to treat as ambiguous: an
/// attempt past its timeout is an unknown outcome for a kind that calls out (reconciling, no
/// blind retry) and an ordinary retry for a local-only one; an unclassified error reconciles,
/// unless the kind's remote side honours the effect key, when it is retried automatically; so is
/// a timeout of such a kind, within the same small budget, and then it reconciles.
pub async fn unclassified_errors_and_timeouts_take_their_paths(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters);
    let client = rig.client(&reg);
    let mut ids = Vec::new();
    for kind in [
        "t.hangs",
        "t.hangs_local",
        "t.unclassified",
        "t.unclassified_keyed",
        "t.hangs_keyed",
    ] {
        let id = client
            .enqueue(kind, json!({}), EnqueueOptions::default())
            .await
            .unwrap()
            .id;
        ids.push(id);
    }
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Reconciling, 3, 30).await;
    rig.wait_for(Status::Succeeded, 2, 30).await;
    running.stop().await;
    let history = |d: &oprec_core::OperationDetail| -> Vec<(AttemptOutcome, Option<FailureClass>)> {
        d.attempts
            .iter()
            .map(|a| (a.outcome, a.failure_class))
            .collect()
    };
    let [hangs, hangs_local, unclassified, keyed, hangs_keyed] =
        [ids[0], ids[1], ids[2], ids[3], ids[4]];
    let d = rig.get(hangs).await;
    assert_eq!(d.operation.status, Status::Reconciling);
    assert_eq!(
        history(&d),
        [(AttemptOutcome::Unknown, Some(FailureClass::Unknown))]
    );
    assert!(
        d.attempts[0]
            .error
            .as_ref()
            .unwrap()
            .summary
            .contains("exceeded its timeout")
    );
    let d = rig.get(hangs_local).await;
    assert_eq!(d.operation.status, Status::Succeeded);
    assert_eq!(
        history(&d),
        [
            (AttemptOutcome::Error, Some(FailureClass::Transient)),
            (AttemptOutcome::Succeeded, None)
        ]
    );
    let d = rig.get(unclassified).await;
    assert_eq!(d.operation.status, Status::Reconciling);
    assert_eq!(
        history(&d),
        [(AttemptOutcome::Unknown, Some(FailureClass::Unknown))]
    );
    let summary = &d.attempts[0].error.as_ref().unwrap().summary;
    assert!(
        summary.contains("unclassified error: connection reset"),
        "{summary}"
    );
    let d = rig.get(keyed).await;
    assert_eq!(d.operation.status, Status::Succeeded);
    assert_eq!(
        history(&d),
        [
            (AttemptOutcome::Error, Some(FailureClass::Unknown)),
            (AttemptOutcome::Succeeded, None)
        ]
    );
    assert_eq!(
        d.operation.unknowns, 1,
        "one automatic retry of the budget spent"
    );
    // Each timeout of the keyed kind is retried automatically while the budget lasts (with
    // attempts to spare), and the one after it reconciles.
    let budget = oprec_core::DEFAULT_UNKNOWN_RETRIES;
    let d = rig.get(hangs_keyed).await;
    assert_eq!(d.operation.status, Status::Reconciling);
    let mut expected = vec![(AttemptOutcome::Error, Some(FailureClass::Unknown)); budget as usize];
    expected.push((AttemptOutcome::Unknown, Some(FailureClass::Unknown)));
    assert_eq!(history(&d), expected);
    assert_eq!(d.operation.unknowns, budget, "the budget spent");
    assert_eq!(d.operation.attempt, budget + 1);
    for (n, a) in d.attempts.iter().enumerate() {
        let error = a.error.as_ref().unwrap();
        assert!(error.summary.contains("exceeded its timeout"), "{error:?}");
        let decision = error.decision.as_deref().unwrap_or_default();
        if n < budget as usize {
            let retry = format!("automatic retry {} of {budget}", n + 1);
            assert!(decision.contains(&retry), "{decision}");
        } else {
            assert!(decision.contains("no blind retry"), "{decision}");
        }
    }
}

/// 200 callers enqueue one operation each at the same time (group commit shares their inserts):
/// each gets its own result; ten repeating one idempotency key all get the one operation, created
/// once; a payload no store can keep (a NUL character) is refused to its caller alone. Every
/// created operation is stored, and runs.
pub async fn concurrent_single_enqueues_each_get_their_own_result(rig: Rig) {
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let client = rig.client(&reg);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..200 {
        let client = client.clone();
        calls.spawn(async move {
            let (payload, key) = match i {
                0..10 => (json!({"i": i}), Some("shared".to_owned())),
                10 => (json!({"s": "nul \u{0} here"}), None),
                _ => (json!({"i": i}), None),
            };
            let options = EnqueueOptions {
                idempotency_key: key,
                ..EnqueueOptions::default()
            };
            (i, client.enqueue("t.noop", payload, options).await)
        });
    }
    let mut shared = Vec::new();
    let mut created = 0;
    while let Some(joined) = calls.join_next().await {
        let (i, result) = joined.unwrap();
        match (i, result) {
            (0..10, Ok(e)) => shared.push(e),
            (10, Err(e)) => assert!(matches!(e, Error::InvalidInput(_)), "{e}"),
            (_, Ok(e)) => {
                assert!(e.created);
                created += 1;
            }
            (i, Err(e)) => panic!("call {i} failed: {e}"),
        }
    }
    assert_eq!(shared.len(), 10);
    assert!(shared.iter().all(|e| e.id == shared[0].id));
    assert_eq!(shared.iter().filter(|e| e.created).count(), 1);
    created += 1;
    assert_eq!(created, 190);
    assert_eq!(rig.count(Status::Pending).await, created);
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, created, 60).await;
    running.stop().await;
    assert_eq!(Counters::get(&counters.noop), created);
}

/// Counts the inserts a client makes into the store it wraps (every call reaches the store).
struct CountedInserts {
    store: Arc<dyn oprec_core::FullStore>,
    inserts: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl oprec_core::Store for CountedInserts {
    async fn migrate(&self) -> Result<()> {
        self.store.migrate().await
    }

    async fn now(&self) -> Result<chrono::DateTime<chrono::Utc>> {
        self.store.now().await
    }

    async fn operation_get(
        &self,
        params: oprec_core::store::OperationGetParams,
    ) -> Result<Option<oprec_core::OperationDetail>> {
        self.store.operation_get(params).await
    }

    async fn operation_list(
        &self,
        params: oprec_core::store::ListParams,
    ) -> Result<Vec<oprec_core::Operation>> {
        self.store.operation_list(params).await
    }

    async fn operation_count(&self) -> Result<Vec<oprec_core::store::CountRow>> {
        self.store.operation_count().await
    }
}

#[async_trait]
impl oprec_core::EnqueueStore for CountedInserts {
    async fn operation_insert_many(
        &self,
        ops: Vec<oprec_core::NewOperation>,
    ) -> Result<Vec<oprec_core::store::Enqueued>> {
        self.inserts.fetch_add(1, Ordering::Relaxed);
        self.store.operation_insert_many(ops).await
    }

    async fn operation_mark_woken(&self, params: oprec_core::store::MarkWokenParams) -> Result<()> {
        self.store.operation_mark_woken(params).await
    }
}

/// Eight callers each enqueueing one operation at a time, again as soon as the last returned (a
/// busy service's request handlers): their operations go in shared inserts, not one insert per
/// call. While one group commits the other callers queue, and the writer lets the callers it
/// answered queue again before it gives up its turn, so the next turn takes them all: about 8
/// operations per insert here (41 inserts for 320). Before, the first caller back took a turn
/// alone: 91 inserts on PostgreSQL, 121 on SQLite.
pub async fn callers_in_a_loop_share_their_inserts(rig: Rig) {
    const CALLERS: usize = 8;
    const EACH: usize = 40;
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let counted = Arc::new(CountedInserts {
        store: rig.store.clone(),
        inserts: Default::default(),
    });
    let client = oprec_runtime::Client::new(counted.clone(), rig.transport.clone(), reg.clone());
    let mut callers = tokio::task::JoinSet::new();
    for c in 0..CALLERS {
        let client = client.clone();
        callers.spawn(async move {
            for i in 0..EACH {
                let e = client
                    .enqueue("t.noop", json!({"c": c, "i": i}), EnqueueOptions::default())
                    .await
                    .unwrap();
                assert!(e.created);
            }
        });
    }
    while let Some(joined) = callers.join_next().await {
        joined.unwrap();
    }
    let total = CALLERS * EACH;
    assert_eq!(rig.count(Status::Pending).await, total as u64);
    let inserts = counted.inserts.load(Ordering::Relaxed);
    assert!(
        inserts * 5 <= total,
        "{total} single enqueues from {CALLERS} callers took {inserts} inserts"
    );
}

/// An operation of a kind that no stream or queue can carry (a control character in its name,
/// as an import under any name could bring) is left out of the scheduler's publish and named in
/// the log; the other wake-ups of the pass go, and their operations run.
pub async fn an_unroutable_kind_does_not_stall_the_scheduler(rig: Rig) {
    let Some(t) = rig.transport.clone() else {
        return; // Poll-only publishes nothing.
    };
    let counters = Arc::new(Counters::default());
    let reg = registry(counters.clone());
    let odd = one_kind_registry("odd\nkind");
    // Enqueued unwoken, so the scheduler picks both.
    let unroutable = rig
        .client_without_transport(&odd)
        .enqueue("odd\nkind", json!({}), EnqueueOptions::default())
        .await
        .unwrap()
        .id;
    rig.client_without_transport(&reg)
        .enqueue("t.noop", json!({}), EnqueueOptions::default())
        .await
        .unwrap();
    let stats = oprec_runtime::Stats::default();
    let config = oprec_runtime::SchedulerConfig {
        budgeted: false,
        ..oprec_runtime::SchedulerConfig::default()
    };
    let pass = oprec_runtime::schedule_once(rig.store.as_ref(), t.as_ref(), &config, &stats)
        .await
        .expect("a scheduler pass");
    assert_eq!(pass.published, 1, "{pass:?}");
    assert!(!pass.publish_failed, "{pass:?}");
    assert_eq!(t.depth(Some("t.noop")).await.expect("depth"), 1);
    let running = Running::start(rig.worker(&reg, |c| c.run_maintenance = false));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    running.stop().await;
    assert_eq!(Counters::get(&counters.noop), 1);
    let o = rig.get(unroutable).await.operation;
    assert_eq!((o.status, o.attempt), (Status::Pending, 0));
}

/// Expands into one test per scenario for a rig built by `$setup().await`.
#[macro_export]
macro_rules! e2e_scenarios {
    ($setup:path) => {
        $crate::e2e_scenarios!(@cases $setup;
            ten_thousand_survive_a_broker_purge,
            enqueue_commits_while_the_broker_is_down,
            triple_wakeups_attempt_each_operation_once,
            garbage_frames_are_counted_and_work_goes_on,
            retries_climb_the_ladder_then_succeed,
            malformed_payload_is_dead_at_once,
            steps_resume_after_the_last_completed_step,
            obsolete_operations_are_cancelled_unrun,
            unknown_kinds_are_not_claimed,
            shutdown_drains_and_releases,
            concurrent_single_enqueues_each_get_their_own_result,
            callers_in_a_loop_share_their_inserts,
            an_unroutable_kind_does_not_stall_the_scheduler,
            shutdown_gives_back_buffered_claims,
            a_panicking_handler_is_recorded_at_once,
            unclassified_errors_and_timeouts_take_their_paths,
        );
    };
    (@cases $setup:path; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let rig = $setup().await;
                $crate::scenarios::$case(rig).await;
            }
        )+
    };
}
