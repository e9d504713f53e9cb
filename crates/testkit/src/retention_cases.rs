//! The retention conformance cases: what every store's batch removal must (and must never) do,
//! and the trigger-kept counts that `stats` reads, checked against the rows themselves.

use std::collections::BTreeMap;

use chrono::Duration;
use oprec_core::operator::{
    ActivityParams, CancelParams, OperationFilter, RedriveMode, RedriveParams,
};
use oprec_core::retention::{
    AttemptMinutesRemoveParams, BacklogSlotsCompactParams, FinishedStatus, KindScope,
    RetentionDeleteParams, RetentionFiguresParams,
};
use oprec_core::store::{ClaimByIdsParams, ListParams, StepSaveParams, StepsGetParams};
use oprec_core::{
    AgeBucket, Clock, EnqueueOptions, Failure, FullStore, OperationError, OperationId, Retention,
    RetentionPolicy, Status, TerminalReason, Transition, backlog_slot,
};
use serde_json::json;

use crate::Harness;
use crate::operator_cases::finish;
use crate::store_cases::enqueue;

/// One batch over every kind in `status`, cutting at now less `age`.
fn batch(
    h: &Harness<impl FullStore>,
    status: FinishedStatus,
    age: Duration,
    limit: u32,
) -> RetentionDeleteParams {
    RetentionDeleteParams {
        kinds: KindScope::AllExcept(vec![]),
        status,
        finished_before: h.clock.now() - age,
        limit,
    }
}

/// Removes everything past `age` in both finished statuses; returns how many went.
async fn remove_all<S: FullStore>(h: &Harness<S>, age: Duration) -> u64 {
    let mut n = 0;
    for status in FinishedStatus::ALL {
        n += h
            .store
            .operation_retention_delete(batch(h, *status, age, 1000))
            .await
            .expect("retention batch");
    }
    n
}

/// Whether the operation is still stored.
async fn exists<S: FullStore>(h: &Harness<S>, id: OperationId) -> bool {
    h.store
        .operation_get(oprec_core::store::OperationGetParams { id })
        .await
        .expect("get")
        .is_some()
}

/// One operation in each status, all finished (or last touched) 30 days ago.
async fn one_of_each<S: FullStore>(h: &Harness<S>) -> BTreeMap<Status, OperationId> {
    let mut ids = BTreeMap::new();
    // Claimed first, while it is the only claimable operation.
    let id = enqueue(h, "k", EnqueueOptions::default()).await;
    h.claim_all("w").await;
    ids.insert(Status::Running, id);
    let id = enqueue(h, "k", EnqueueOptions::default()).await;
    finish(h, id, Transition::succeeded(None)).await;
    ids.insert(Status::Succeeded, id);
    let id = enqueue(h, "k", EnqueueOptions::default()).await;
    finish(
        h,
        id,
        Transition::dead(
            TerminalReason::Permanent,
            Some(Failure::permanent(OperationError::new("bad"))),
        ),
    )
    .await;
    ids.insert(Status::Dead, id);
    let id = enqueue(h, "k", EnqueueOptions::default()).await;
    finish(h, id, Transition::hold(Failure::configuration("401"))).await;
    ids.insert(Status::Held, id);
    let id = enqueue(h, "k", EnqueueOptions::default()).await;
    finish(h, id, Transition::reconcile(Failure::unknown("reset"))).await;
    ids.insert(Status::Reconciling, id);
    let id = enqueue(h, "k", EnqueueOptions::default()).await;
    h.store
        .operation_cancel(CancelParams { ids: vec![id] })
        .await
        .expect("cancel");
    ids.insert(Status::Cancelled, id);
    let id = enqueue(h, "k", EnqueueOptions::default()).await;
    ids.insert(Status::Pending, id);
    for (status, id) in &ids {
        assert_eq!(h.get(*id).await.operation.status, *status);
    }
    h.clock.advance(Duration::days(30));
    ids
}

/// Only succeeded and cancelled operations past their age go; dead, held, reconciling, pending
/// and running ones stay however old they are.
pub async fn retention_never_removes_unfinished_or_dead_operations<S: FullStore>(h: Harness<S>) {
    let ids = one_of_each(&h).await;
    assert_eq!(remove_all(&h, Duration::days(7)).await, 2);
    for (status, id) in ids {
        let gone = matches!(status, Status::Succeeded | Status::Cancelled);
        assert_eq!(exists(&h, id).await, !gone, "{status}");
    }
    // Nothing else goes on a second pass, even with an age of zero.
    assert_eq!(remove_all(&h, Duration::zero()).await, 0);
}

/// An operation younger than its age stays; it goes once it is older.
pub async fn retention_waits_for_the_age<S: FullStore>(h: Harness<S>) {
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, id, Transition::succeeded(None)).await;
    h.clock.advance(Duration::days(6));
    assert_eq!(remove_all(&h, Duration::days(7)).await, 0);
    assert!(exists(&h, id).await);
    h.clock.advance(Duration::days(1) + Duration::seconds(1));
    assert_eq!(remove_all(&h, Duration::days(7)).await, 1);
    assert!(!exists(&h, id).await);
}

/// Attempts recorded as ended since a minute before `since`.
async fn attempts_since<S: FullStore>(h: &Harness<S>, since: chrono::DateTime<chrono::Utc>) -> u64 {
    h.store
        .activity_per_minute(ActivityParams {
            since: since - Duration::minutes(1),
        })
        .await
        .expect("activity")
        .iter()
        .map(|m| m.attempts)
        .sum()
}

/// Attempts and steps go with their operation (and only theirs).
pub async fn retention_removes_attempts_and_steps_with_the_operation<S: FullStore>(h: Harness<S>) {
    let start = h.clock.now();
    let old = enqueue(&h, "k", EnqueueOptions::default()).await;
    let c = h.claim_all("w").await.remove(0);
    h.store
        .operation_step_save(StepSaveParams {
            id: old,
            claim_token: c.claim_token(),
            name: "charge".into(),
            output: json!({"charge": "ch_1"}),
        })
        .await
        .expect("step");
    h.store
        .operation_complete(oprec_core::store::CompleteParams {
            id: old,
            claim_token: c.claim_token(),
            transition: Transition::retry(h.clock.now(), Failure::transient("503")),
        })
        .await
        .expect("retry");
    finish(&h, old, Transition::succeeded(None)).await;
    h.clock.advance(Duration::days(10));
    let kept = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, kept, Transition::succeeded(None)).await;

    assert_eq!(attempts_since(&h, start).await, 3);
    assert_eq!(remove_all(&h, Duration::days(7)).await, 1);
    assert!(!exists(&h, old).await);
    assert!(
        h.store
            .operation_steps_get(StepsGetParams { id: old })
            .await
            .expect("steps")
            .is_empty()
    );
    // The per-minute counts are history: the removed operation's two attempts still count.
    assert_eq!(attempts_since(&h, start).await, 3);
    assert_eq!(h.get(kept).await.attempts.len(), 1);
}

/// The per-minute attempt counts behind `stats` and the chart are kept two days, then removed
/// by the upkeep, oldest minutes only.
pub async fn attempt_minutes_go_after_two_days<S: FullStore>(h: Harness<S>) {
    let start = h.clock.now();
    let old = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, old, Transition::succeeded(None)).await;
    h.clock.advance(Duration::days(1));
    let recent = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, recent, Transition::succeeded(None)).await;
    let past = |h: &Harness<S>| AttemptMinutesRemoveParams::past_keeping(h.clock.now());
    assert_eq!(
        h.store
            .attempt_minutes_remove(past(&h))
            .await
            .expect("remove"),
        0,
        "a day old is kept"
    );
    assert_eq!(attempts_since(&h, start).await, 2);
    h.clock.advance(Duration::days(1) + Duration::hours(12));
    assert!(
        h.store
            .attempt_minutes_remove(past(&h))
            .await
            .expect("remove")
            >= 1
    );
    assert_eq!(
        attempts_since(&h, start).await,
        1,
        "only the older minute went"
    );
    assert_eq!(
        h.store
            .attempt_minutes_remove(past(&h))
            .await
            .expect("remove"),
        0
    );
    // The operations themselves are retention's business, not the upkeep's.
    assert!(exists(&h, old).await && exists(&h, recent).await);
}

/// Each kind is cut at its own age; a kind kept forever is never cut.
pub async fn retention_respects_per_kind_ages<S: FullStore>(h: Harness<S>) {
    let mut ids = BTreeMap::new();
    for kind in ["audit", "mail", "forever"] {
        let s = enqueue(&h, kind, EnqueueOptions::default()).await;
        finish(&h, s, Transition::succeeded(None)).await;
        let c = enqueue(&h, kind, EnqueueOptions::default()).await;
        h.store
            .operation_cancel(CancelParams { ids: vec![c] })
            .await
            .expect("cancel");
        ids.insert(kind, (s, c));
    }
    h.clock.advance(Duration::days(3));
    let mut policy = RetentionPolicy {
        default: Retention::both(Duration::days(1)),
        ..RetentionPolicy::default()
    };
    policy.kinds.insert(
        "audit".into(),
        Retention {
            succeeded: Some(Duration::days(90)),
            cancelled: Some(Duration::days(2)),
        },
    );
    policy.kinds.insert("forever".into(), Retention::off());
    let now = h.clock.now();
    let mut removed = 0;
    for rule in policy.rules() {
        removed += h
            .store
            .operation_retention_delete(rule.batch(now, 100))
            .await
            .expect("batch");
    }
    assert_eq!(removed, 3);
    let (audit_s, audit_c) = ids["audit"];
    assert!(exists(&h, audit_s).await, "audit keeps succeeded 90 days");
    assert!(!exists(&h, audit_c).await, "audit keeps cancelled 2 days");
    let (mail_s, mail_c) = ids["mail"];
    assert!(!exists(&h, mail_s).await && !exists(&h, mail_c).await);
    let (forever_s, forever_c) = ids["forever"];
    assert!(exists(&h, forever_s).await && exists(&h, forever_c).await);
}

/// A batch removes at most its limit, the longest finished first.
pub async fn retention_batches_are_bounded_and_oldest_first<S: FullStore>(h: Harness<S>) {
    let mut order = Vec::new();
    for _ in 0..5 {
        let id = enqueue(&h, "k", EnqueueOptions::default()).await;
        finish(&h, id, Transition::succeeded(None)).await;
        order.push(id);
        h.advance_secs(60);
    }
    h.clock.advance(Duration::days(8));
    let b = batch(&h, FinishedStatus::Succeeded, Duration::days(7), 2);
    assert_eq!(
        h.store.operation_retention_delete(b.clone()).await.unwrap(),
        2
    );
    assert!(!exists(&h, order[0]).await && !exists(&h, order[1]).await);
    assert!(exists(&h, order[2]).await);
    assert_eq!(
        h.store.operation_retention_delete(b.clone()).await.unwrap(),
        2
    );
    assert_eq!(
        h.store.operation_retention_delete(b.clone()).await.unwrap(),
        1
    );
    assert_eq!(h.store.operation_retention_delete(b).await.unwrap(), 0);
}

/// An operation a re-drive names stays while the re-drive does, so lineage is never broken.
pub async fn retention_keeps_the_origin_of_a_redrive<S: FullStore>(h: Harness<S>) {
    let origin = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.store
        .operation_cancel(CancelParams { ids: vec![origin] })
        .await
        .expect("cancel");
    let redriven = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: vec![origin],
                ..OperationFilter::default()
            },
            include_cancelled: true,
            mode: RedriveMode::AsNew { deadline: None },
            limit: 10,
            start_at: h.clock.now(),
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .expect("redrive");
    assert_eq!(redriven.len(), 1);
    h.clock.advance(Duration::days(8));
    assert_eq!(remove_all(&h, Duration::days(7)).await, 0);
    assert!(exists(&h, origin).await);
}

/// The preview's figures: how many are past the cutoff, and the longest finished.
pub async fn retention_figures_count_what_is_past_the_cutoff<S: FullStore>(h: Harness<S>) {
    let first_done = h.clock.now();
    for _ in 0..3 {
        let id = enqueue(&h, "k", EnqueueOptions::default()).await;
        finish(&h, id, Transition::succeeded(None)).await;
        h.advance_secs(3600);
    }
    let other = enqueue(&h, "other", EnqueueOptions::default()).await;
    finish(&h, other, Transition::succeeded(None)).await;
    let f = h
        .store
        .operation_retention_figures(RetentionFiguresParams {
            kind: "k".into(),
            status: FinishedStatus::Succeeded,
            finished_before: first_done + Duration::minutes(90),
        })
        .await
        .expect("figures");
    assert_eq!(f.past_retention, 2);
    assert_eq!(f.oldest_finished_at, Some(first_done));
    let none = h
        .store
        .operation_retention_figures(RetentionFiguresParams {
            kind: "k".into(),
            status: FinishedStatus::Cancelled,
            finished_before: h.clock.now(),
        })
        .await
        .expect("figures");
    assert_eq!(none.past_retention, 0);
    assert_eq!(none.oldest_finished_at, None);
}

/// The kept counts equal a count of the rows.
async fn counts_match<S: FullStore>(h: &Harness<S>) {
    let store = &h.store;
    let rows = store
        .operation_list(ListParams {
            limit: 10_000,
            ..ListParams::default()
        })
        .await
        .expect("list");
    let mut expected: BTreeMap<(Status, String, Option<_>), u64> = BTreeMap::new();
    for op in &rows {
        *expected
            .entry((op.status, op.kind.clone(), op.last_failure_class))
            .or_default() += 1;
    }
    let counted: BTreeMap<_, u64> = store
        .operation_count()
        .await
        .expect("count")
        .into_iter()
        .map(|r| ((r.status, r.kind, r.failure_class), r.count))
        .collect();
    assert_eq!(counted, expected);
    let stats = store.stats().await.expect("stats");
    let mut by_status: BTreeMap<Status, u64> = BTreeMap::new();
    for op in &rows {
        *by_status.entry(op.status).or_default() += 1;
    }
    assert_eq!(stats.by_status, by_status);
    let succeeded: Vec<_> = rows
        .iter()
        .filter(|o| o.status == Status::Succeeded)
        .collect();
    let per_success = (!succeeded.is_empty()).then(|| {
        succeeded.iter().map(|o| f64::from(o.attempt)).sum::<f64>() / succeeded.len() as f64
    });
    assert_eq!(stats.attempts_per_success, per_success);
    // The backlog by age, from the counts per creation slot, equals the waiting rows' own.
    let at = stats.at.expect("the time of the figures");
    let waiting = rows
        .iter()
        .filter(|o| !o.status.is_terminal())
        .map(|o| (backlog_slot(o.created_at), 1));
    assert_eq!(stats.backlog_by_age, AgeBucket::fold_slots(waiting, at));
}

/// The backlog by age reads the counts per creation slot: operations of every age land in their
/// bucket, leave it as they end, and the upkeep's compaction changes no figure while it folds
/// shards and removes the slots whose operations have all ended.
pub async fn backlog_by_age_follows_the_slots_through_compaction<S: FullStore>(h: Harness<S>) {
    let old = enqueue_many(&h, 2).await;
    h.clock.advance(Duration::days(8));
    let days = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.clock.advance(Duration::days(2));
    let hours = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.clock.advance(Duration::hours(3));
    let fresh = enqueue(&h, "k", EnqueueOptions::default()).await;
    let running = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![running],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .expect("claim")
        .pop()
        .expect("claimed");
    h.clock.advance(Duration::minutes(10));
    let expected = BTreeMap::from([
        (AgeBucket::UnderAnHour, 2),
        (AgeBucket::UnderADay, 1),
        (AgeBucket::UnderAWeek, 1),
        (AgeBucket::OverAWeek, 2),
    ]);
    assert_eq!(buckets(&h).await, expected);
    counts_match(&h).await;
    compact(&h).await;
    assert_eq!(buckets(&h).await, expected, "compaction changes no figure");
    // One of the oldest ends: its slot still counts the other.
    finish(&h, old[0], Transition::succeeded(None)).await;
    assert_eq!(buckets(&h).await.get(&AgeBucket::OverAWeek), Some(&1));
    finish(
        &h,
        old[1],
        Transition::dead(
            TerminalReason::Permanent,
            Some(Failure::permanent(OperationError::new("bad"))),
        ),
    )
    .await;
    assert_eq!(buckets(&h).await.get(&AgeBucket::OverAWeek), None);
    assert!(
        compact(&h).await >= 1,
        "the slot whose operations all ended is removed"
    );
    assert_eq!(compact(&h).await, 0, "nothing left to fold or remove");
    counts_match(&h).await;
    // Ended ones that come back (a re-drive of the dead one) count in their slot again.
    let redriven = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: vec![old[1]],
                ..OperationFilter::default()
            },
            include_cancelled: false,
            mode: RedriveMode::InPlace {
                extend_deadline: None,
            },
            limit: 10,
            start_at: h.clock.now(),
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .expect("redrive");
    assert_eq!(redriven.len(), 1);
    assert_eq!(buckets(&h).await.get(&AgeBucket::OverAWeek), Some(&1));
    counts_match(&h).await;
    for id in [days, hours, fresh] {
        finish(&h, id, Transition::succeeded(None)).await;
    }
    counts_match(&h).await;
}

/// The backlog by age `stats` reports now.
async fn buckets<S: FullStore>(h: &Harness<S>) -> BTreeMap<AgeBucket, u64> {
    h.store.stats().await.expect("stats").backlog_by_age
}

/// One upkeep compaction of the counts per creation slot, now; returns the rows it went through.
async fn compact<S: FullStore>(h: &Harness<S>) -> u64 {
    h.store
        .backlog_slots_compact(BacklogSlotsCompactParams::settled_at(h.clock.now()))
        .await
        .expect("compact")
}

/// Enqueues `n` operations of kind `k` now.
async fn enqueue_many<S: FullStore>(h: &Harness<S>, n: usize) -> Vec<OperationId> {
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(enqueue(h, "k", EnqueueOptions::default()).await);
    }
    ids
}

/// The counts `stats` and `operation_count` read (kept by the store as rows change) equal a
/// count of the rows themselves, through enqueue, claim, retry, every ending, cancel and
/// retention.
pub async fn counts_follow_every_change<S: FullStore>(h: Harness<S>) {
    let ids = one_of_each(&h).await;
    let retry = enqueue(&h, "other", EnqueueOptions::default()).await;
    finish(
        &h,
        retry,
        Transition::retry(h.clock.now(), Failure::transient("503")),
    )
    .await;
    counts_match(&h).await;
    assert!(ids.contains_key(&Status::Succeeded));
    assert_eq!(remove_all(&h, Duration::days(7)).await, 2);
    counts_match(&h).await;
    let later = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, later, Transition::succeeded(None)).await;
    counts_match(&h).await;
}

/// Expands into one `#[tokio::test]` per retention case, each calling `$setup().await` for a
/// fresh [`Harness`].
#[macro_export]
macro_rules! retention_conformance_tests {
    ($setup:path) => {
        $crate::store_conformance_tests!(@cases $setup;
            retention_cases::retention_never_removes_unfinished_or_dead_operations,
            retention_cases::retention_waits_for_the_age,
            retention_cases::retention_removes_attempts_and_steps_with_the_operation,
            retention_cases::retention_respects_per_kind_ages,
            retention_cases::retention_batches_are_bounded_and_oldest_first,
            retention_cases::retention_keeps_the_origin_of_a_redrive,
            retention_cases::retention_figures_count_what_is_past_the_cutoff,
            retention_cases::counts_follow_every_change,
            retention_cases::attempt_minutes_go_after_two_days,
            retention_cases::backlog_by_age_follows_the_slots_through_compaction,
        );
    };
}
