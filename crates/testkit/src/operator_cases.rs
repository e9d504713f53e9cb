//! The OperatorStore conformance cases: controls, re-drive, quarantine, reconciliation, stats,
//! audit and dead-letter alerts.

use chrono::Duration;
use oprec_core::maintenance::{
    AlertClaimParams, AlertDeferParams, KindWakeFigures, LeaderAcquireParams, LeaderReleaseParams,
    MAINTENANCE_LEADER, MarkAlertedParams, ReconcileDueParams, ReconcileResolveParams,
    RewakeParams, WakeDueParams, WakeFiguresParams, WakeResetParams,
};
use oprec_core::operator::{
    ActivityParams, AuditEntry, AuditListParams, AuditPage, AuditRecord, ControlAction,
    ControlRemoveParams, ControlScope, ControlSetParams, CountMatchingParams, OperationFilter,
    QuarantineParams, RedriveMode, RedriveParams, RedrivePreviewParams, ReleaseParams, Resolution,
    WorkerListParams,
};
use oprec_core::store::{
    ClaimByIdsParams, CompleteParams, ListParams, RedrivenShown, WorkerRemoveParams,
};
use oprec_core::{
    AgeBucket, Clock, Ending, EnqueueOptions, Error, Failure, FailureClass, FullStore,
    OperationError, OperationId, PayloadMode, Status, TerminalReason, Transition, WorkerBeatParams,
};
use serde_json::json;

use crate::Harness;
pub use crate::redrive_cases::{
    redrive_jobs_keep_state_stops_and_resumption, redrive_leaves_out_what_a_control_holds_back,
    redrive_preview_asks_about_the_dependency_across_kinds,
    redrive_preview_says_whether_it_is_safe,
};
use crate::store_cases::enqueue;

/// Claims `id` and ends the claim with `t`.
pub async fn finish<S: FullStore>(h: &Harness<S>, id: OperationId, t: Transition) {
    let c = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![id],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap()
        .pop()
        .unwrap_or_else(|| panic!("{id} was not claimable"));
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: c.claim_token.unwrap(),
            transition: t,
        })
        .await
        .unwrap();
}

fn dead(class: FailureClass, summary: &str) -> Transition {
    let reason = if class == FailureClass::Permanent {
        TerminalReason::Permanent
    } else {
        TerminalReason::AttemptsExhausted
    };
    Transition::dead(
        reason,
        Some(Failure::new(class, OperationError::new(summary))),
    )
}

/// Enqueues `n` operations of `kind` and kills each with `class`.
pub async fn dead_ops<S: FullStore>(
    h: &Harness<S>,
    kind: &str,
    n: usize,
    class: FailureClass,
    summary: &str,
) -> Vec<OperationId> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let id = enqueue(h, kind, EnqueueOptions::default()).await;
        finish(h, id, dead(class, summary)).await;
        ids.push(id);
    }
    ids
}

fn control(
    scope: ControlScope,
    value: &str,
    until: Option<chrono::DateTime<chrono::Utc>>,
) -> ControlSetParams {
    ControlSetParams {
        scope,
        value: value.into(),
        action: if until.is_some() {
            ControlAction::Postpone
        } else {
            ControlAction::Pause
        },
        until,
        reason: Some("test".into()),
        actor: "tester".into(),
    }
}

/// A pause by kind stops that kind's claims and wake-ups, and nothing else, until removed; a
/// postponement lapses by itself.
pub async fn pauses_stop_only_what_they_name<S: FullStore>(h: Harness<S>) {
    let a = enqueue(&h, "a", EnqueueOptions::default()).await;
    let b = enqueue(&h, "b", EnqueueOptions::default()).await;
    h.store
        .control_set(control(ControlScope::Kind, "a", None))
        .await
        .unwrap();
    let woken = h
        .store
        .operation_wake_due(WakeDueParams::all(Duration::zero(), 10))
        .await
        .unwrap();
    let woken: Vec<_> = woken.into_iter().map(|w| w.id).collect();
    assert_eq!(woken, vec![b], "a paused kind is not woken");
    let claimed: Vec<_> = h.claim_all("w").await.iter().map(|o| o.id).collect();
    assert_eq!(claimed, vec![b], "a paused kind is not claimed");
    let by_id = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![a],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert!(by_id.is_empty(), "not even by id");
    let listed = h.store.control_list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].scope, listed[0].value.as_str()),
        (ControlScope::Kind, "a")
    );
    assert!(
        h.store
            .control_remove(ControlRemoveParams {
                scope: ControlScope::Kind,
                value: "a".into()
            })
            .await
            .unwrap()
    );
    assert!(
        !h.store
            .control_remove(ControlRemoveParams {
                scope: ControlScope::Kind,
                value: "a".into()
            })
            .await
            .unwrap()
    );
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![a]
    );

    // Postpone a dependency until a time: it lapses by itself.
    let dep = enqueue(
        &h,
        "c",
        EnqueueOptions {
            dependency: Some("smtp".into()),
            ..Default::default()
        },
    )
    .await;
    let until = h.clock.now() + Duration::seconds(60);
    h.store
        .control_set(control(ControlScope::Dependency, "smtp", Some(until)))
        .await
        .unwrap();
    assert!(h.claim_all("w").await.is_empty());
    h.advance_secs(61);
    assert!(
        h.store.control_list().await.unwrap().is_empty(),
        "lapsed controls are not listed"
    );
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![dep]
    );
}

/// A heartbeat of worker `id` on host-1 (pid 4242, code version v7), running `kinds`.
fn beat(id: &str, kinds: &[&str], started_at: chrono::DateTime<chrono::Utc>) -> WorkerBeatParams {
    WorkerBeatParams {
        id: id.to_owned(),
        host: "host-1".to_owned(),
        pid: 4242,
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
        code_version: Some("v7".to_owned()),
        started_at,
    }
}

/// The scheduler's pick without a budget (re-wake interval one hour), as sorted ids.
async fn wake_all<S: FullStore>(h: &Harness<S>) -> Vec<OperationId> {
    let mut ids: Vec<OperationId> = h
        .store
        .operation_wake_due(WakeDueParams::all(Duration::seconds(3600), 10))
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.id)
        .collect();
    ids.sort();
    ids
}

/// Setting and lifting a control marks the pending operations it names as never woken (and no
/// others): wake-ups sent before it are dropped while it holds, so the scheduler must wake the
/// operations again the moment it is lifted, not a re-wake interval later.
pub async fn lifting_a_control_wakes_what_it_held<S: FullStore>(h: Harness<S>) {
    let a = enqueue(&h, "a", EnqueueOptions::default()).await;
    let b = enqueue(&h, "b", EnqueueOptions::default()).await;
    assert_eq!(wake_all(&h).await.len(), 2, "both woken once");
    assert!(wake_all(&h).await.is_empty(), "and not again");
    h.store
        .control_set(control(ControlScope::Kind, "a", None))
        .await
        .unwrap();
    assert_eq!(
        h.get(a).await.operation.last_woken_at,
        None,
        "the paused kind's wake-up is void"
    );
    assert!(
        h.get(b).await.operation.last_woken_at.is_some(),
        "another kind keeps its own"
    );
    assert!(wake_all(&h).await.is_empty(), "held back: not woken");
    // An enqueue during the pause publishes a wake-up the workers drop.
    let c = enqueue(&h, "a", EnqueueOptions::default()).await;
    h.store
        .operation_mark_woken(oprec_core::store::MarkWokenParams { ids: vec![c] })
        .await
        .unwrap();
    h.store
        .control_remove(ControlRemoveParams {
            scope: ControlScope::Kind,
            value: "a".into(),
        })
        .await
        .unwrap();
    let mut expected = vec![a, c];
    expected.sort();
    assert_eq!(
        wake_all(&h).await,
        expected,
        "woken at once when the pause is lifted"
    );
}

/// A wake reset (after a transport purge) makes the pending operations of the kinds it names due
/// for a wake-up at once, and leaves other kinds and other statuses alone.
pub async fn wake_reset_rebuilds_a_purged_backlog<S: FullStore>(h: Harness<S>) {
    let a = enqueue(&h, "a", EnqueueOptions::default()).await;
    let b = enqueue(&h, "b", EnqueueOptions::default()).await;
    let done = enqueue(&h, "a", EnqueueOptions::default()).await;
    finish(&h, done, Transition::succeeded(None)).await;
    assert_eq!(wake_all(&h).await.len(), 2, "both pending woken once");
    assert!(wake_all(&h).await.is_empty(), "and not again");
    let reset = h
        .store
        .operation_wake_reset(WakeResetParams {
            kinds: vec!["a".into()],
            ids: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!(reset, 1, "only the pending operation of kind a");
    assert_eq!(wake_all(&h).await, vec![a], "woken again at once");
    let reset = h
        .store
        .operation_wake_reset(WakeResetParams {
            kinds: Vec::new(),
            ids: vec![b, done],
        })
        .await
        .unwrap();
    assert_eq!(reset, 1, "only the pending one among the ids");
    assert_eq!(wake_all(&h).await, vec![b], "and it alone is woken again");
    let reset = h
        .store
        .operation_wake_reset(WakeResetParams::default())
        .await
        .unwrap();
    assert_eq!(reset, 2, "every kind when none is named");
    let mut both = vec![a, b];
    both.sort();
    assert_eq!(wake_all(&h).await, both);
    assert_eq!(
        h.get(done).await.operation.status,
        Status::Succeeded,
        "a finished operation is not touched"
    );
}

/// The budgeted scheduler's store calls: the fresh pick leaves stale wake-ups and kinds nobody
/// runs alone; the figures say per kind what should be on the broker and what is stale; a re-wake
/// takes one kind's stale operations, oldest first, up to its budget.
pub async fn budgeted_wake_ups_fresh_figures_and_rewake<S: FullStore>(h: Harness<S>) {
    async fn fresh<S: FullStore>(h: &Harness<S>) -> Vec<OperationId> {
        let mut ids = h
            .store
            .operation_wake_due(WakeDueParams {
                rewake_after: Duration::seconds(30),
                limit: 100,
                stale: false,
                handled_within: Some(Duration::seconds(60)),
            })
            .await
            .unwrap()
            .into_iter()
            .map(|w| w.id)
            .collect::<Vec<_>>();
        ids.sort();
        ids
    }
    async fn figures<S: FullStore>(h: &Harness<S>) -> Vec<KindWakeFigures> {
        h.store
            .operation_wake_figures(WakeFiguresParams {
                rewake_after: Duration::seconds(30),
                handled_within: Duration::seconds(60),
            })
            .await
            .unwrap()
    }
    async fn rewake<S: FullStore>(h: &Harness<S>, kind: &str, limit: u32) -> Vec<OperationId> {
        h.store
            .operation_rewake(RewakeParams {
                kind: kind.into(),
                rewake_after: Duration::seconds(30),
                limit,
            })
            .await
            .unwrap()
            .into_iter()
            .map(|w| w.id)
            .collect()
    }
    let t0 = h.clock.now();
    let beat = |id: &str, kinds: &[&str]| beat(id, kinds, t0);
    h.store.worker_beat(beat("w1", &["a"])).await.unwrap();
    let a1 = enqueue(&h, "a", EnqueueOptions::default()).await;
    h.advance_secs(1);
    let a2 = enqueue(&h, "a", EnqueueOptions::default()).await;
    let b = enqueue(&h, "b", EnqueueOptions::default()).await;
    let mut both = vec![a1, a2];
    both.sort();
    assert_eq!(
        fresh(&h).await,
        both,
        "kind b has no live worker: not woken"
    );
    assert!(fresh(&h).await.is_empty(), "woken once");
    assert_eq!(
        figures(&h).await,
        vec![KindWakeFigures {
            kind: "a".into(),
            signalled: 2,
            stale: 0,
            handled: true,
        }],
        "b was never woken, so it has no wake-ups out"
    );
    // Past the re-wake interval: stale, yet the fresh pick leaves them to the budget.
    h.advance_secs(31);
    h.store.worker_beat(beat("w1", &["a"])).await.unwrap();
    assert!(fresh(&h).await.is_empty(), "stale is not fresh");
    let f = figures(&h).await;
    assert_eq!((f[0].signalled, f[0].stale), (2, 2), "{f:?}");
    assert_eq!(
        rewake(&h, "a", 1).await,
        vec![a1],
        "oldest eligible first, one"
    );
    assert_eq!(
        rewake(&h, "a", 5).await,
        vec![a2],
        "then the other stale one"
    );
    assert!(
        rewake(&h, "a", 5).await.is_empty(),
        "re-woken now: not stale"
    );
    assert!(
        rewake(&h, "b", 5).await.is_empty(),
        "never woken is not stale"
    );
    // Claimed: no longer a wake-up out.
    h.store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![a1],
            kinds: vec![],
            claimant: h.claimant("w1"),
        })
        .await
        .unwrap();
    let f = figures(&h).await;
    assert_eq!((f[0].signalled, f[0].stale), (1, 0), "{f:?}");
    // A worker for b starts: b is woken by the fresh pick.
    h.store.worker_beat(beat("w2", &["b"])).await.unwrap();
    assert_eq!(fresh(&h).await, vec![b]);
}

/// A pause by failure class holds back operations whose last failure had that class.
pub async fn pause_by_class_holds_back_that_class<S: FullStore>(h: Harness<S>) {
    let failing = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(
        &h,
        failing,
        Transition::retry(h.clock.now(), Failure::transient("503")),
    )
    .await;
    let fresh = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.store
        .control_set(control(ControlScope::FailureClass, "transient", None))
        .await
        .unwrap();
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![fresh]
    );
    h.store
        .control_remove(ControlRemoveParams {
            scope: ControlScope::FailureClass,
            value: "transient".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![failing]
    );
}

/// A pause of a dependency holds back the operations whose last failure named it, beside those
/// of kinds that call it; the failure's dependency reads back with the error.
pub async fn pause_by_dependency_reaches_failures_that_name_it<S: FullStore>(h: Harness<S>) {
    let about = enqueue(&h, "k", EnqueueOptions::default()).await;
    let failure = Failure::transient("catalogue incomplete").about_dependency("catalogue");
    finish(&h, about, Transition::retry(h.clock.now(), failure)).await;
    let stored = h.get(about).await.operation.last_error.expect("last error");
    assert_eq!(stored.dependency.as_deref(), Some("catalogue"));
    let fresh = enqueue(&h, "k", EnqueueOptions::default()).await;
    h.store
        .control_set(control(ControlScope::Dependency, "catalogue", None))
        .await
        .unwrap();
    let claimed = |v: Vec<oprec_core::Claimed>| v.iter().map(|o| o.id).collect::<Vec<_>>();
    assert_eq!(claimed(h.claim_all("w").await), vec![fresh]);
    h.store
        .control_remove(ControlRemoveParams {
            scope: ControlScope::Dependency,
            value: "catalogue".into(),
        })
        .await
        .unwrap();
    assert_eq!(claimed(h.claim_all("w").await), vec![about]);
}

/// A postponement of a dependency reaches the operations whose last failure named it, as a
/// pause does: setting it voids their wake-ups (and no others'), they are neither woken nor
/// claimable until its time, and then the scheduler wakes them at once; lifting it before its
/// time voids again a wake-up sent while it held, so they are woken at once too.
pub async fn postponing_a_dependency_reaches_failures_that_name_it<S: FullStore>(h: Harness<S>) {
    let failure = || Failure::transient("catalogue incomplete").about_dependency("catalogue");
    let claimed = |v: Vec<oprec_core::Claimed>| v.iter().map(|o| o.id).collect::<Vec<_>>();
    let hr = &h;
    let not_by_id = |id| async move {
        let got = hr
            .store
            .operation_claim_by_ids(ClaimByIdsParams {
                ids: vec![id],
                kinds: vec![],
                claimant: hr.claimant("w"),
            })
            .await
            .unwrap();
        assert!(got.is_empty(), "{id} claimed by id while postponed");
    };
    let about = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, about, Transition::retry(h.clock.now(), failure())).await;
    let fresh = enqueue(&h, "k", EnqueueOptions::default()).await;
    let mut both = vec![about, fresh];
    both.sort();
    assert_eq!(wake_all(&h).await, both, "both woken once");
    let until = h.clock.now() + Duration::seconds(60);
    h.store
        .control_set(control(ControlScope::Dependency, "catalogue", Some(until)))
        .await
        .unwrap();
    assert_eq!(
        h.get(about).await.operation.last_woken_at,
        None,
        "the postponed operation's wake-up is void"
    );
    assert!(
        h.get(fresh).await.operation.last_woken_at.is_some(),
        "an operation that names no dependency keeps its own"
    );
    assert!(wake_all(&h).await.is_empty(), "held back: not woken");
    assert_eq!(claimed(h.claim_all("w").await), vec![fresh]);
    not_by_id(about).await;
    h.advance_secs(59);
    assert!(wake_all(&h).await.is_empty(), "still before its time");
    assert!(h.claim_all("w").await.is_empty());
    not_by_id(about).await;
    h.advance_secs(1);
    assert_eq!(wake_all(&h).await, vec![about], "woken at once at its time");
    assert_eq!(claimed(h.claim_all("w").await), vec![about]);

    // Lifted before its time.
    let later = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, later, Transition::retry(h.clock.now(), failure())).await;
    let until = h.clock.now() + Duration::seconds(60);
    h.store
        .control_set(control(ControlScope::Dependency, "catalogue", Some(until)))
        .await
        .unwrap();
    assert!(h.claim_all("w").await.is_empty());
    not_by_id(later).await;
    // A wake-up sent while it holds (a retry publishes one), which the workers drop.
    h.store
        .operation_mark_woken(oprec_core::store::MarkWokenParams { ids: vec![later] })
        .await
        .unwrap();
    assert!(h.get(later).await.operation.last_woken_at.is_some());
    assert!(
        h.store
            .control_remove(ControlRemoveParams {
                scope: ControlScope::Dependency,
                value: "catalogue".into(),
            })
            .await
            .unwrap()
    );
    assert_eq!(
        h.get(later).await.operation.last_woken_at,
        None,
        "lifting resets the wake-up"
    );
    assert_eq!(wake_all(&h).await, vec![later], "woken at once when lifted");
    assert_eq!(claimed(h.claim_all("w").await), vec![later]);
}

/// The dry run counts and groups without changing anything; in-place re-drive resets, spreads
/// eligibility, is batch-by-batch and never re-drives twice; non-terminal matches are refused.
pub async fn redrive_in_place_resets_spreads_and_is_idempotent<S: FullStore>(h: Harness<S>) {
    let ids = dead_ops(&h, "k", 5, FailureClass::Transient, "provider answered 503").await;
    let pending = enqueue(&h, "k", EnqueueOptions::default()).await;
    let done = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, done, Transition::succeeded(None)).await;
    let filter = OperationFilter {
        kinds: vec!["k".into()],
        ..Default::default()
    };
    let preview = h
        .store
        .redrive_preview(RedrivePreviewParams {
            filter: filter.clone(),
            include_cancelled: false,
            samples: 3,
        })
        .await
        .unwrap();
    assert_eq!(preview.matched, 5);
    assert_eq!(
        preview.not_terminal, 1,
        "the pending one; a succeeded one is neither"
    );
    assert_eq!(preview.groups.len(), 1);
    assert_eq!(preview.groups[0].class, Some(FailureClass::Transient));
    assert_eq!(preview.groups[0].payload_mode, Some(PayloadMode::Snapshot));
    assert_eq!(
        preview.groups[0].reason,
        Some(TerminalReason::AttemptsExhausted)
    );
    assert_eq!(preview.samples.len(), 3);
    assert_eq!(
        preview.samples[0].error.as_deref(),
        Some("provider answered 503")
    );
    assert_eq!(
        h.get(ids[0]).await.operation.status,
        Status::Dead,
        "a dry run changes nothing"
    );

    let start = h.clock.now() + Duration::seconds(10);
    let params = |limit| RedriveParams {
        filter: filter.clone(),
        include_cancelled: false,
        mode: RedriveMode::InPlace {
            extend_deadline: Some(Duration::hours(1)),
        },
        limit,
        start_at: start,
        spacing: Duration::seconds(2),
        skip_held_back: false,
    };
    let first = h.store.operation_redrive(params(3)).await.unwrap();
    assert_eq!(first.len(), 3);
    let times: Vec<_> = first
        .iter()
        .map(|r| (r.next_eligible_at - start).num_seconds())
        .collect();
    assert_eq!(times, vec![0, 2, 4]);
    assert!(first.iter().all(|r| r.from == r.to));
    let second = h.store.operation_redrive(params(10)).await.unwrap();
    assert_eq!(
        second.len(),
        2,
        "the interrupted re-drive goes on with the rest"
    );
    assert!(
        h.store
            .operation_redrive(params(10))
            .await
            .unwrap()
            .is_empty(),
        "nothing twice"
    );
    for id in &ids {
        let o = h.get(*id).await.operation;
        assert_eq!(
            (o.status, o.attempt, o.redrive_count),
            (Status::Pending, 0, 1)
        );
        assert!(o.terminal_reason.is_none() && o.terminal_at.is_none());
        assert_eq!(
            o.give_up_at,
            Some(o.next_eligible_at + Duration::hours(1)),
            "the deadline counts from the operation's own start"
        );
    }
    assert_eq!(h.get(pending).await.operation.redrive_count, 0);
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![pending],
        "spread into the future"
    );
}

/// As-new re-drive creates linked operations and leaves the dead ones as they were, once.
pub async fn redrive_as_new_links_and_leaves_the_original<S: FullStore>(h: Harness<S>) {
    let ids = dead_ops(&h, "k", 2, FailureClass::Permanent, "bad field").await;
    let params = RedriveParams {
        filter: OperationFilter {
            ids: ids.clone(),
            ..Default::default()
        },
        include_cancelled: false,
        mode: RedriveMode::AsNew { deadline: None },
        limit: 100,
        start_at: h.clock.now(),
        spacing: Duration::zero(),
        skip_held_back: false,
    };
    let out = h.store.operation_redrive(params.clone()).await.unwrap();
    assert_eq!(out.len(), 2);
    for r in &out {
        assert_ne!(r.from, r.to);
        let new = h.get(r.to).await.operation;
        let old = h.get(r.from).await.operation;
        assert_eq!(new.redrive_of, Some(r.from));
        assert_eq!(
            (new.status, new.attempt, new.redrive_count),
            (Status::Pending, 0, 1)
        );
        assert_eq!(new.payload, old.payload);
        assert_eq!(old.status, Status::Dead);
    }
    assert!(
        h.store.operation_redrive(params).await.unwrap().is_empty(),
        "nothing twice"
    );
    assert_eq!(
        h.store
            .redrive_preview(RedrivePreviewParams {
                filter: OperationFilter::default(),
                include_cancelled: false,
                samples: 5
            })
            .await
            .unwrap()
            .matched,
        0
    );
}

/// An original re-driven as new is marked with its copy (linked both ways) and is no longer dead
/// awaiting action: the stats count it apart, and a listing of dead operations hides it unless
/// asked; the table's totals still hold it as dead.
pub async fn redrive_as_new_marks_the_original_no_longer_awaiting_action<S: FullStore>(
    h: Harness<S>,
) {
    let ids = dead_ops(&h, "k", 3, FailureClass::Permanent, "bad field").await;
    h.advance_secs(5);
    let out = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: ids[..2].to_vec(),
                ..Default::default()
            },
            include_cancelled: false,
            mode: RedriveMode::AsNew { deadline: None },
            limit: 100,
            start_at: h.clock.now(),
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    assert_eq!(out.len(), 2);
    for r in &out {
        let old = h.get(r.from).await.operation;
        let new = h.get(r.to).await.operation;
        assert_eq!(
            old.redriven_as,
            Some(r.to),
            "the original links to its copy"
        );
        assert_eq!(
            new.redrive_of,
            Some(r.from),
            "the copy links to its original"
        );
        assert_eq!(new.redriven_as, None);
        assert_eq!(old.status, Status::Dead, "the status is kept");
        assert!(!old.is_dead_awaiting_action());
        assert!(old.updated_at >= old.terminal_at.unwrap());
    }
    assert!(h.get(ids[2]).await.operation.is_dead_awaiting_action());

    let r = h.store.stats().await.unwrap();
    assert_eq!(
        r.by_status.get(&Status::Dead),
        Some(&1),
        "{:?}",
        r.by_status
    );
    assert_eq!(r.by_status.get(&Status::Pending), Some(&2));
    assert_eq!(r.dead_by_kind.get("k"), Some(&1));
    assert_eq!(r.dead_redriven_by_kind.get("k"), Some(&2));
    let totals: u64 = h
        .store
        .operation_count()
        .await
        .unwrap()
        .iter()
        .filter(|c| c.status == Status::Dead)
        .map(|c| c.count)
        .sum();
    assert_eq!(totals, 3, "the table's totals still count every dead row");
    // The lists' counts: dead awaiting action as stats says, every row under all.
    let counted = h.store.operation_count().await.unwrap();
    let redriven: u64 = counted.iter().map(|c| c.redriven).sum();
    assert_eq!(redriven, 2, "{counted:?}");
    let listed = oprec_core::store::ListedCounts::of(&counted, Some("k"));
    assert_eq!(
        listed.by_status.get(&Status::Dead),
        r.by_status.get(&Status::Dead)
    );
    assert_eq!(listed.by_status.get(&Status::Pending), Some(&2));
    assert_eq!(listed.all, 5);
    assert_eq!(
        oprec_core::store::ListedCounts::of(&counted, Some("none")).all,
        0
    );

    let list = |status: Option<Status>, redriven: Option<RedrivenShown>| {
        let h = &h;
        async move {
            let mut v: Vec<OperationId> = h
                .store
                .operation_list(ListParams {
                    status,
                    redriven,
                    limit: 100,
                    ..Default::default()
                })
                .await
                .unwrap()
                .iter()
                .map(|o| o.id)
                .collect();
            v.sort();
            v
        }
    };
    let mut redriven: Vec<OperationId> = ids[..2].to_vec();
    redriven.sort();
    assert_eq!(
        list(Some(Status::Dead), None).await,
        vec![ids[2]],
        "awaiting action"
    );
    assert_eq!(
        list(Some(Status::Dead), Some(RedrivenShown::Only)).await,
        redriven
    );
    assert_eq!(
        list(Some(Status::Dead), Some(RedrivenShown::Show))
            .await
            .len(),
        3
    );
    assert_eq!(list(None, None).await.len(), 5, "every operation otherwise");
    assert_eq!(
        list(None, Some(RedrivenShown::Hide)).await.len(),
        3,
        "the one left dead and the two copies"
    );

    // The copy dies and is re-driven as new in turn: it is marked the same way.
    let copy = out[0].to;
    finish(&h, copy, dead(FailureClass::Permanent, "bad field")).await;
    let again = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: vec![copy],
                ..Default::default()
            },
            include_cancelled: false,
            mode: RedriveMode::AsNew { deadline: None },
            limit: 100,
            start_at: h.clock.now(),
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(h.get(copy).await.operation.redriven_as, Some(again[0].to));
    let r = h.store.stats().await.unwrap();
    assert_eq!(r.dead_by_kind.get("k"), Some(&1));
    assert_eq!(r.dead_redriven_by_kind.get("k"), Some(&3));
}

/// Two as-new re-drives of the same dead operations running at once make one copy per parent:
/// the database refuses a second one, whichever run reads a parent first.
pub async fn concurrent_redrives_as_new_copy_each_parent_once<S: FullStore>(h: Harness<S>) {
    let ids = dead_ops(&h, "k", 60, FailureClass::Transient, "503").await;
    let params = RedriveParams {
        filter: OperationFilter::default(),
        include_cancelled: false,
        mode: RedriveMode::AsNew { deadline: None },
        limit: 7,
        start_at: h.clock.now(),
        spacing: Duration::zero(),
        skip_held_back: false,
    };
    // Joined in one task: each run awaits the database between its statements, so the two
    // interleave on two connections.
    let run = |params: RedriveParams| {
        let store = &h.store;
        async move {
            let mut made = Vec::new();
            loop {
                let batch = store.operation_redrive(params.clone()).await.unwrap();
                if batch.is_empty() {
                    return made;
                }
                made.extend(batch);
            }
        }
    };
    let (a, b) = tokio::join!(run(params.clone()), run(params.clone()));
    let mut parents: Vec<OperationId> = a.iter().chain(&b).map(|r| r.from).collect();
    parents.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(
        parents,
        expected,
        "each parent copied exactly once ({} + {} copies)",
        a.len(),
        b.len()
    );
    for r in a.iter().chain(&b) {
        assert_eq!(h.get(r.to).await.operation.redrive_of, Some(r.from));
    }
    assert!(
        h.store.operation_redrive(params).await.unwrap().is_empty(),
        "nothing left to copy"
    );
}

/// A copy of a copy keeps the lineage's first operation as its root, so its effect key is the
/// original's, not its parent's.
pub async fn redrive_as_new_of_a_copy_keeps_the_original_effect_key<S: FullStore>(h: Harness<S>) {
    let original = dead_ops(&h, "k", 1, FailureClass::Permanent, "bad field").await[0];
    let params = |id| RedriveParams {
        filter: OperationFilter {
            ids: vec![id],
            ..Default::default()
        },
        include_cancelled: false,
        mode: RedriveMode::AsNew { deadline: None },
        limit: 10,
        start_at: h.clock.now(),
        spacing: Duration::zero(),
        skip_held_back: false,
    };
    let first = h.store.operation_redrive(params(original)).await.unwrap();
    let copy = first[0].to;
    let o = h.get(copy).await.operation;
    assert_eq!(
        (o.redrive_of, o.redrive_root),
        (Some(original), Some(original))
    );
    finish(&h, copy, dead(FailureClass::Permanent, "bad field again")).await;
    let second = h.store.operation_redrive(params(copy)).await.unwrap();
    let grandchild = h.get(second[0].to).await.operation;
    assert_eq!(grandchild.redrive_of, Some(copy), "linked to its parent");
    assert_eq!(
        grandchild.effect_root(),
        original,
        "the effect key stays the original's"
    );
    assert_eq!(h.get(original).await.operation.effect_root(), original);
}

/// Filters by class, reason and literal error text select exactly their operations.
pub async fn redrive_filters_select_exactly<S: FullStore>(h: Harness<S>) {
    let transient = dead_ops(
        &h,
        "k",
        2,
        FailureClass::Transient,
        "HTTP 503 from provider",
    )
    .await;
    let permanent = dead_ops(
        &h,
        "k",
        3,
        FailureClass::Permanent,
        "field 100%_bad is missing",
    )
    .await;
    let count = |f: OperationFilter| {
        let store = &h.store;
        async move {
            store
                .redrive_preview(RedrivePreviewParams {
                    filter: f.clone(),
                    include_cancelled: false,
                    samples: 0,
                })
                .await
                .unwrap()
                .matched
        }
    };
    assert_eq!(
        count(OperationFilter {
            classes: vec![FailureClass::Transient],
            ..Default::default()
        })
        .await,
        2
    );
    assert_eq!(
        count(OperationFilter {
            reasons: vec![TerminalReason::Permanent],
            ..Default::default()
        })
        .await,
        3
    );
    assert_eq!(
        count(OperationFilter {
            error_contains: Some("http 503".into()),
            ..Default::default()
        })
        .await,
        2
    );
    assert_eq!(
        count(OperationFilter {
            error_contains: Some("100%_bad".into()),
            ..Default::default()
        })
        .await,
        3
    );
    assert_eq!(
        count(OperationFilter {
            error_contains: Some("1%0".into()),
            ..Default::default()
        })
        .await,
        0,
        "% is literal"
    );
    assert_eq!(
        count(OperationFilter {
            error_contains: Some("' OR 1=1 --".into()),
            ..Default::default()
        })
        .await,
        0
    );
    assert_eq!(
        count(OperationFilter {
            terminal_since: Some(h.clock.now() + Duration::seconds(1)),
            ..Default::default()
        })
        .await,
        0
    );
    let out = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                classes: vec![FailureClass::Transient],
                ..Default::default()
            },
            include_cancelled: false,
            mode: RedriveMode::InPlace {
                extend_deadline: None,
            },
            limit: 100,
            start_at: h.clock.now(),
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    let mut got: Vec<_> = out.iter().map(|r| r.from).collect();
    got.sort();
    let mut want = transient.clone();
    want.sort();
    assert_eq!(got, want);
    for id in permanent {
        assert_eq!(
            h.get(id).await.operation.status,
            Status::Dead,
            "other classes untouched"
        );
    }
}

/// Quarantine moves pending matches to held with the reason; release returns them.
pub async fn quarantine_and_release<S: FullStore>(h: Harness<S>) {
    let bad = enqueue(&h, "bad", EnqueueOptions::default()).await;
    let good = enqueue(&h, "good", EnqueueOptions::default()).await;
    let filter = OperationFilter {
        kinds: vec!["bad".into()],
        ..Default::default()
    };
    let n = h
        .store
        .operation_quarantine(QuarantineParams {
            filter: filter.clone(),
            reason: "malformed payloads from importer v2".into(),
            actor: "alice".into(),
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!(n, 1);
    let o = h.get(bad).await.operation;
    assert_eq!(o.status, Status::Held);
    // Core's words, applied to an operation that had no error yet.
    let words = Ending::quarantined("alice", "malformed payloads from importer v2").patch;
    assert_eq!(o.last_error, Some(words.apply(None)));
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![good]
    );
    assert_eq!(
        h.store
            .operation_release(ReleaseParams { filter, limit: 100 })
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![bad]
    );

    // A release keeps an enqueue's delay: quarantined before it was due, released, it is still
    // not eligible before its time.
    let delayed = enqueue(
        &h,
        "bad",
        EnqueueOptions {
            delay: Some(Duration::minutes(10)),
            ..Default::default()
        },
    )
    .await;
    let due = h.get(delayed).await.operation.next_eligible_at;
    let filter = OperationFilter {
        ids: vec![delayed],
        ..Default::default()
    };
    h.store
        .operation_quarantine(QuarantineParams {
            filter: filter.clone(),
            reason: "look first".into(),
            actor: "alice".into(),
            limit: 100,
        })
        .await
        .unwrap();
    h.clock.advance(Duration::minutes(1));
    h.store
        .operation_release(ReleaseParams { filter, limit: 100 })
        .await
        .unwrap();
    let o = h.get(delayed).await.operation;
    assert_eq!((o.status, o.next_eligible_at), (Status::Pending, due));
    assert!(h.claim_all("w").await.is_empty(), "not before its delay");
    h.clock.advance(Duration::minutes(9));
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![delayed]
    );
}

/// Reconciling operations are handed to one reconciler at a time and resolved three ways.
pub async fn reconcile_due_and_resolve<S: FullStore>(h: Harness<S>) {
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = enqueue(&h, "pay", EnqueueOptions::default()).await;
        finish(
            &h,
            id,
            Transition::reconcile(Failure::unknown("timeout after write")),
        )
        .await;
        ids.push(id);
    }
    async fn due<S: FullStore>(h: &Harness<S>) -> oprec_core::Result<Vec<oprec_core::Operation>> {
        h.store
            .operation_reconcile_due(ReconcileDueParams {
                kinds: vec!["pay".into()],
                limit: 10,
                lease: Duration::seconds(60),
            })
            .await
    }
    assert_eq!(due(&h).await.unwrap().len(), 3);
    assert!(due(&h).await.unwrap().is_empty(), "taken for a minute");
    let s = crate::resolve(
        &h.store,
        ids[0],
        Resolution::Applied {
            remote_id: Some("ch_1".into()),
        },
        "bob",
    )
    .await
    .unwrap();
    assert_eq!(s, Status::Succeeded);
    let o = h.get(ids[0]).await.operation;
    assert_eq!(
        (o.status, o.remote_id.as_deref()),
        (Status::Succeeded, Some("ch_1"))
    );
    assert!(o.terminal_at.is_some());
    let s = crate::resolve(&h.store, ids[1], Resolution::NotApplied, "bob")
        .await
        .unwrap();
    assert_eq!(s, Status::Pending);
    assert_eq!(
        h.claim_all("w")
            .await
            .iter()
            .map(|o| o.id)
            .collect::<Vec<_>>(),
        vec![ids[1]]
    );
    let later = h.clock.now() + Duration::minutes(5);
    let s = crate::resolve(
        &h.store,
        ids[2],
        Resolution::StillUnknown { retry_at: later },
        "bob",
    )
    .await
    .unwrap();
    assert_eq!(s, Status::Reconciling);
    h.advance_secs(299);
    assert!(due(&h).await.unwrap().is_empty());
    h.advance_secs(1);
    assert_eq!(due(&h).await.unwrap().len(), 1);
    let again = crate::resolve(&h.store, ids[0], Resolution::NotApplied, "bob").await;
    assert!(matches!(again, Err(Error::InvalidInput(m)) if m.contains("not reconciling")));
    let missing = crate::resolve(&h.store, OperationId::new(), Resolution::NotApplied, "bob").await;
    assert!(matches!(missing, Err(Error::NotFound(_))));
    // The store's own answer for an id it does not have.
    let settlement =
        Resolution::NotApplied.settle(&h.get(ids[0]).await.operation, "bob", h.clock.now());
    let missing = h
        .store
        .operation_reconcile_resolve(ReconcileResolveParams {
            id: OperationId::new(),
            settlement,
        })
        .await;
    assert!(matches!(missing, Err(Error::NotFound(_))));
}

/// The stats figures match a population built by hand.
pub async fn stats_answer_the_retry_questions<S: FullStore>(h: Harness<S>) {
    // Two succeeded (one after a retry), two dead of kind "x" with code version test-1, one
    // pending after a transient failure, one fresh pending, one reconciling.
    let s1 = enqueue(&h, "x", EnqueueOptions::default()).await;
    finish(&h, s1, Transition::succeeded(None)).await;
    let s2 = enqueue(
        &h,
        "x",
        EnqueueOptions {
            dependency: Some("smtp".into()),
            ..Default::default()
        },
    )
    .await;
    finish(
        &h,
        s2,
        Transition::retry(h.clock.now(), Failure::transient("503")),
    )
    .await;
    finish(&h, s2, Transition::succeeded(None)).await;
    dead_ops(&h, "x", 2, FailureClass::Permanent, "bad").await;
    let retrying = enqueue(&h, "y", EnqueueOptions::default()).await;
    finish(
        &h,
        retrying,
        Transition::retry(
            h.clock.now() - Duration::seconds(30),
            Failure::transient("503"),
        ),
    )
    .await;
    h.advance_secs(10);
    enqueue(
        &h,
        "y",
        EnqueueOptions {
            delay: Some(Duration::hours(1)),
            ..Default::default()
        },
    )
    .await;
    let rec = enqueue(&h, "z", EnqueueOptions::default()).await;
    finish(&h, rec, Transition::reconcile(Failure::unknown("?"))).await;
    let r = h.store.stats().await.unwrap();
    assert_eq!(r.by_status.get(&Status::Succeeded), Some(&2));
    assert_eq!(r.by_status.get(&Status::Dead), Some(&2));
    assert_eq!(r.by_status.get(&Status::Pending), Some(&2));
    assert_eq!(r.reconciling, 1);
    assert_eq!(
        r.pending_by_class.get(&Some(FailureClass::Transient)),
        Some(&1)
    );
    assert_eq!(r.pending_by_class.get(&None), Some(&1));
    assert_eq!(r.attempts_per_success, Some(1.5));
    let oldest = r.oldest_eligible.expect("an overdue operation");
    assert_eq!(oldest.id, retrying);
    assert_eq!(r.dead_by_kind.get("x"), Some(&2));
    assert_eq!(r.dead_last_hour_by_kind.get("x"), Some(&2));
    assert_eq!(r.dead_last_day_by_code_version.get("test-1"), Some(&2));
    assert_eq!(r.attempts_last_hour_by_dependency.get("smtp"), Some(&2));
    assert_eq!(r.attempts_last_hour_by_dependency.get("none"), Some(&5));
    assert_eq!(r.backlog_age_seconds, Some(10));
    assert_eq!(r.backlog_by_age.get(&AgeBucket::UnderAnHour), Some(&3));
}

/// Audit entries read back newest first.
pub async fn audit_log_keeps_every_action<S: FullStore>(h: Harness<S>) {
    for (i, action) in ["pause", "redrive"].iter().enumerate() {
        h.store
            .audit_insert(AuditEntry {
                actor: "carol".into(),
                action: (*action).into(),
                filter: json!({"kinds": ["k"]}),
                affected: i as u64 * 10,
                reason: Some("outage over".into()),
                details: json!({"rate": "500/s"}),
            })
            .await
            .unwrap();
    }
    let log = h
        .store
        .audit_list(AuditListParams {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].entry.action, "redrive");
    assert_eq!(log[0].entry.affected, 10);
    assert_eq!(log[0].entry.details, json!({"rate": "500/s"}));
    assert_eq!(log[1].entry.filter, json!({"kinds": ["k"]}));
    assert_eq!(log[0].at, h.clock.now());
}

/// The audit log reads in pages by entry id (older and newer, each newest first) and filters by
/// action and by actor; a filter naming nothing, or a hostile string, finds nothing or is refused
/// with a clear message, and nothing is lost.
pub async fn audit_log_pages_and_filters<S: FullStore>(h: Harness<S>) {
    for i in 0..7u64 {
        h.store
            .audit_insert(AuditEntry {
                actor: if i % 2 == 0 { "carol" } else { "dave" }.into(),
                action: if i < 4 { "pause" } else { "redrive" }.into(),
                filter: json!({"n": i}),
                affected: i,
                reason: None,
                details: json!({}),
            })
            .await
            .unwrap();
    }
    let list = |limit, action: Option<&str>, actor: Option<&str>, page| {
        h.store.audit_list(AuditListParams {
            limit,
            action: action.map(str::to_owned),
            actor: actor.map(str::to_owned),
            page,
        })
    };
    let affected =
        |rows: Vec<AuditRecord>| rows.iter().map(|r| r.entry.affected).collect::<Vec<_>>();
    let first = list(3, None, None, AuditPage::Newest).await.unwrap();
    assert_eq!(affected(first.clone()), vec![6, 5, 4], "the newest page");
    let older = list(3, None, None, AuditPage::Older(first[2].id))
        .await
        .unwrap();
    assert_eq!(
        affected(older.clone()),
        vec![3, 2, 1],
        "the next older page"
    );
    let last = list(3, None, None, AuditPage::Older(older[2].id))
        .await
        .unwrap();
    assert_eq!(affected(last), vec![0], "the oldest page is short");
    let newer = list(3, None, None, AuditPage::Newer(older[0].id))
        .await
        .unwrap();
    assert_eq!(
        affected(newer),
        vec![6, 5, 4],
        "back to the newer page, newest first"
    );
    let newer_short = list(2, None, None, AuditPage::Newer(older[0].id))
        .await
        .unwrap();
    assert_eq!(affected(newer_short), vec![5, 4], "the entries just newer");
    let redrives = list(10, Some("redrive"), None, AuditPage::Newest)
        .await
        .unwrap();
    assert_eq!(affected(redrives), vec![6, 5, 4]);
    let carol_pauses = list(10, Some("pause"), Some("carol"), AuditPage::Newest)
        .await
        .unwrap();
    assert_eq!(affected(carol_pauses), vec![2, 0]);
    let carol_older = list(1, None, Some("carol"), AuditPage::Older(first[1].id))
        .await
        .unwrap();
    assert_eq!(affected(carol_older), vec![4], "pages and filters together");
    let hostile = list(10, Some("pause' OR '1'='1"), None, AuditPage::Newest)
        .await
        .unwrap();
    assert!(
        hostile.is_empty(),
        "a hostile filter is a value: it names no entry"
    );
    for bad in [
        list(0, None, None, AuditPage::Newest).await,
        list(10_001, None, None, AuditPage::Newest).await,
        list(10, Some(""), None, AuditPage::Newest).await,
        list(10, None, Some("a\u{0}b"), AuditPage::Newest).await,
        list(10, Some(&"x".repeat(201)), None, AuditPage::Newest).await,
    ] {
        let err = bad.unwrap_err();
        assert!(matches!(err, oprec_core::Error::InvalidInput(_)), "{err}");
    }
    assert_eq!(
        list(10, None, None, AuditPage::Newest).await.unwrap().len(),
        7,
        "nothing was lost"
    );
}

/// Every promotion to dead is announced once.
pub async fn dead_promotions_are_announced_once<S: FullStore>(h: Harness<S>) {
    let ids = dead_ops(&h, "k", 3, FailureClass::Permanent, "bad").await;
    let claim = |limit| AlertClaimParams {
        limit,
        lease: Duration::seconds(60),
    };
    let first = h.store.operation_alert_claim(claim(10)).await.unwrap();
    assert_eq!(
        first.iter().map(|d| d.operation.id).collect::<Vec<_>>(),
        ids,
        "oldest promotion first"
    );
    assert!(first.iter().all(|d| d.failures == 0));
    // Claimed: a second announcer gets none of them while the claim lasts.
    assert!(
        h.store
            .operation_alert_claim(claim(10))
            .await
            .unwrap()
            .is_empty()
    );
    h.store
        .operation_mark_alerted(MarkAlertedParams {
            ids: ids[..2].to_vec(),
        })
        .await
        .unwrap();
    // The third failed: it comes back at its retry time, with its failure counted.
    let retry = h.clock.now() + Duration::seconds(10);
    h.store
        .operation_alert_defer(AlertDeferParams {
            retries: vec![(ids[2], retry)],
        })
        .await
        .unwrap();
    h.advance_secs(9);
    assert!(
        h.store
            .operation_alert_claim(claim(10))
            .await
            .unwrap()
            .is_empty()
    );
    h.advance_secs(1);
    let again = h.store.operation_alert_claim(claim(10)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].operation.id, again[0].failures), (ids[2], 1));
    // A claim that runs out (its announcer died) is announced again: at least once.
    h.advance_secs(61);
    let orphan = h.store.operation_alert_claim(claim(10)).await.unwrap();
    assert_eq!(
        orphan.iter().map(|d| d.operation.id).collect::<Vec<_>>(),
        vec![ids[2]]
    );
    h.store
        .operation_mark_alerted(MarkAlertedParams { ids: vec![ids[2]] })
        .await
        .unwrap();
    h.advance_secs(61);
    assert!(
        h.store
            .operation_alert_claim(claim(10))
            .await
            .unwrap()
            .is_empty()
    );
}

/// The alert log records each configuration hold once (whatever the number of passes), sends
/// what is due, puts off a failed send to its retry time, logs dead-letter deliveries by subject,
/// lists newest first with filters, and trims old sent rows.
pub async fn alert_log_records_holds_once_and_retries<S: FullStore>(h: Harness<S>) {
    use oprec_core::alert::{
        AlertDelivery, AlertDueParams, AlertEvent, AlertHoldsParams, AlertListParams,
        AlertRecordParams, AlertSettleParams, AlertStatus, AlertTrimParams, NewAlert,
    };
    let holds = |limit| AlertHoldsParams {
        limit,
        slack: Duration::seconds(60),
    };
    let due = |limit| AlertDueParams {
        limit,
        lease: Duration::seconds(60),
    };
    let hold = |summary: &str| {
        Transition::hold(Failure::new(
            FailureClass::Configuration,
            OperationError::new(summary).next_action("rotate the key"),
        ))
    };
    // Nothing held yet: nothing recorded, nothing due.
    assert!(
        h.store
            .alert_holds_record(holds(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(h.store.alert_due(due(10)).await.unwrap().is_empty());
    let a = enqueue(
        &h,
        "mail",
        EnqueueOptions {
            dependency: Some("smtp".into()),
            ..EnqueueOptions::default()
        },
    )
    .await;
    let b = enqueue(&h, "mail", EnqueueOptions::default()).await;
    let c = enqueue(&h, "mail", EnqueueOptions::default()).await;
    finish(&h, a, hold("535 authentication failed")).await;
    h.advance_secs(1);
    finish(
        &h,
        b,
        Transition::retry(
            h.clock.now(),
            Failure::new(FailureClass::Transient, OperationError::new("timeout")),
        ),
    )
    .await;
    finish(&h, c, hold("key revoked")).await;
    // Two holds (not the transient failure), one pass at a time.
    let first = h.store.alert_holds_record(holds(1)).await.unwrap();
    assert_eq!(first.len(), 1, "the limit bounds a pass");
    assert_eq!(first[0].operation_id, Some(a));
    assert_eq!(first[0].event, AlertEvent::Held);
    assert_eq!(first[0].dependency.as_deref(), Some("smtp"));
    assert_eq!(first[0].summary, "535 authentication failed");
    assert_eq!(first[0].next_action.as_deref(), Some("rotate the key"));
    assert_eq!(first[0].status, AlertStatus::Pending);
    let second = h.store.alert_holds_record(holds(10)).await.unwrap();
    assert_eq!(
        second.iter().map(|e| e.operation_id).collect::<Vec<_>>(),
        vec![Some(c)]
    );
    // Once: another pass (another leader) records nothing more.
    assert!(
        h.store
            .alert_holds_record(holds(10))
            .await
            .unwrap()
            .is_empty()
    );
    // A later hold of the same operation (released, held again) is a new alert.
    let taken = h.store.alert_due(due(10)).await.unwrap();
    assert_eq!(
        taken.iter().map(|e| e.operation_id).collect::<Vec<_>>(),
        vec![Some(a), Some(c)],
        "oldest due first"
    );
    assert!(
        h.store.alert_due(due(10)).await.unwrap().is_empty(),
        "taken: another sender gets none while the lease lasts"
    );
    let retry_at = h.clock.now() + Duration::seconds(10);
    h.store
        .alert_settle(AlertSettleParams {
            results: vec![
                (
                    taken[0].id,
                    AlertDelivery {
                        route: "dependency:smtp".into(),
                        target: Some("https://hooks.example".into()),
                        failure: None,
                    },
                ),
                (
                    taken[1].id,
                    AlertDelivery {
                        route: "default".into(),
                        target: Some("log".into()),
                        failure: Some(("webhook answered 503".into(), retry_at)),
                    },
                ),
            ],
        })
        .await
        .unwrap();
    h.advance_secs(9);
    assert!(
        h.store.alert_due(due(10)).await.unwrap().is_empty(),
        "not before its retry time"
    );
    h.advance_secs(1);
    let again = h.store.alert_due(due(10)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].operation_id, again[0].tries), (Some(c), 1));
    assert_eq!(again[0].status, AlertStatus::Failed);
    assert_eq!(again[0].last_error.as_deref(), Some("webhook answered 503"));
    // A dead-letter delivery is logged by subject: a failed try, then the try that worked.
    let dead = |failure: Option<(String, chrono::DateTime<chrono::Utc>)>| NewAlert {
        event: AlertEvent::Dead,
        subject: "dead:x:1".into(),
        operation_id: Some(b),
        kind: Some("mail".into()),
        dependency: None,
        summary: "gave up".into(),
        next_action: None,
        source_at: h.clock.now(),
        delivery: Some(AlertDelivery {
            route: "kind:mail".into(),
            target: None,
            failure,
        }),
    };
    let logged = h
        .store
        .alert_record(AlertRecordParams {
            alerts: vec![dead(Some(("refused".into(), h.clock.now())))],
        })
        .await
        .unwrap();
    assert_eq!(
        (logged[0].status, logged[0].tries),
        (AlertStatus::Failed, 1)
    );
    assert!(
        h.store.alert_due(due(10)).await.unwrap().is_empty(),
        "a dead-letter announcement is retried from its operation, not from the log"
    );
    h.advance_secs(5);
    let logged = h
        .store
        .alert_record(AlertRecordParams {
            alerts: vec![dead(None)],
        })
        .await
        .unwrap();
    assert_eq!(logged.len(), 1);
    assert_eq!((logged[0].status, logged[0].tries), (AlertStatus::Sent, 2));
    assert_eq!(logged[0].sent_at, Some(h.clock.now()));
    // A pending alert recorded twice is one row.
    let paused = NewAlert {
        event: AlertEvent::Paused,
        subject: "paused:dependency:smtp:1".into(),
        operation_id: Some(a),
        kind: None,
        dependency: Some("smtp".into()),
        summary: "configuration failure".into(),
        next_action: Some("resume".into()),
        source_at: h.clock.now(),
        delivery: None,
    };
    let params = || AlertRecordParams {
        alerts: vec![paused.clone()],
    };
    assert_eq!(h.store.alert_record(params()).await.unwrap().len(), 1);
    assert!(h.store.alert_record(params()).await.unwrap().is_empty());
    // The log, newest first, filtered.
    let list = |p: AlertListParams| {
        let store = &h.store;
        async move { store.alert_list(p).await.unwrap() }
    };
    let all = list(AlertListParams {
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(
        all.iter().map(|e| e.event).collect::<Vec<_>>(),
        vec![
            AlertEvent::Paused,
            AlertEvent::Dead,
            AlertEvent::Held,
            AlertEvent::Held
        ]
    );
    let failed = list(AlertListParams {
        statuses: vec![AlertStatus::Failed],
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].operation_id, Some(c));
    let smtp = list(AlertListParams {
        dependency: Some("smtp".into()),
        events: vec![AlertEvent::Held],
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(smtp.len(), 1);
    assert_eq!(smtp[0].route.as_deref(), Some("dependency:smtp"));
    let page = list(AlertListParams {
        before_id: Some(all[1].id),
        limit: 1,
        ..Default::default()
    })
    .await;
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, all[2].id);
    let hostile = list(AlertListParams {
        kind: Some("mail' OR '1'='1".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert!(hostile.is_empty());
    // Trimming removes sent rows older than the cutoff, and nothing else.
    h.advance_secs(100);
    let removed = h
        .store
        .alert_trim(AlertTrimParams {
            before: h.clock.now(),
            limit: 1000,
        })
        .await
        .unwrap();
    assert_eq!(
        removed, 2,
        "the sent hold and the sent dead-letter delivery"
    );
    let left = list(AlertListParams {
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(
        left.iter().map(|e| e.status).collect::<Vec<_>>(),
        vec![AlertStatus::Pending, AlertStatus::Failed]
    );
}

/// One holder at a time: a leadership is granted when free, kept by its holder, refused to others
/// while its lease lasts, taken over once it runs out, and free again at once when given up.
pub async fn leaders_are_held_one_at_a_time<S: FullStore>(h: Harness<S>) {
    let ask = |holder: &str| LeaderAcquireParams {
        name: MAINTENANCE_LEADER.into(),
        holder: holder.into(),
        lease: Duration::seconds(10),
        settings: Some(serde_json::json!({"published_by": holder})),
    };
    let start = h.clock.now();
    let a = h.store.leader_acquire(ask("a")).await.unwrap();
    assert_eq!((a.holder.as_str(), a.since), ("a", start));
    assert_eq!(a.lease_until, start + Duration::seconds(10));
    assert_eq!(a.settings, Some(serde_json::json!({"published_by": "a"})));
    let b = h.store.leader_acquire(ask("b")).await.unwrap();
    assert_eq!(b.holder, "a", "b is refused while a's lease lasts");
    assert_eq!(
        b.settings,
        Some(serde_json::json!({"published_by": "a"})),
        "a refused candidate publishes nothing"
    );
    h.advance_secs(5);
    let renewed = h.store.leader_acquire(ask("a")).await.unwrap();
    assert_eq!((renewed.holder.as_str(), renewed.since), ("a", start));
    assert_eq!(renewed.lease_until, start + Duration::seconds(15));
    let listed = h.store.leader_list().await.unwrap();
    assert_eq!(listed, vec![renewed.clone()]);
    // a stops renewing: once its lease has run out, b takes over.
    h.advance_secs(10);
    assert_eq!(h.store.leader_acquire(ask("b")).await.unwrap().holder, "a");
    h.advance_secs(1);
    let taken = h.store.leader_acquire(ask("b")).await.unwrap();
    assert_eq!((taken.holder.as_str(), taken.since), ("b", h.clock.now()));
    assert_eq!(
        h.store.leader_list().await.unwrap()[0].settings,
        Some(serde_json::json!({"published_by": "b"}))
    );
    // a's release of what it no longer holds changes nothing; b's frees it at once.
    assert!(
        !h.store
            .leader_release(LeaderReleaseParams {
                name: MAINTENANCE_LEADER.into(),
                holder: "a".into(),
            })
            .await
            .unwrap()
    );
    assert!(
        h.store
            .leader_release(LeaderReleaseParams {
                name: MAINTENANCE_LEADER.into(),
                holder: "b".into(),
            })
            .await
            .unwrap()
    );
    assert!(h.store.leader_list().await.unwrap().is_empty());
    assert_eq!(h.store.leader_acquire(ask("a")).await.unwrap().holder, "a");
}

/// Counting matches per status: what an operator action would touch, every value bound (a
/// hostile search text is only text).
pub async fn count_matching_counts_by_status<S: FullStore>(h: Harness<S>) {
    dead_ops(&h, "k", 2, FailureClass::Transient, "provider answered 503").await;
    dead_ops(&h, "k", 1, FailureClass::Permanent, "bad field").await;
    enqueue(&h, "k", EnqueueOptions::default()).await;
    enqueue(&h, "other", EnqueueOptions::default()).await;
    let count = |filter: OperationFilter| {
        let store = &h.store;
        async move {
            store
                .operation_count_matching(CountMatchingParams {
                    filter: filter.clone(),
                })
                .await
                .unwrap()
        }
    };
    let by_kind = count(OperationFilter {
        kinds: vec!["k".into()],
        ..Default::default()
    })
    .await;
    assert_eq!(
        by_kind.into_iter().collect::<Vec<_>>(),
        vec![(Status::Pending, 1), (Status::Dead, 3)]
    );
    let transient = count(OperationFilter {
        classes: vec![FailureClass::Transient],
        ..Default::default()
    })
    .await;
    assert_eq!(
        transient.into_iter().collect::<Vec<_>>(),
        vec![(Status::Dead, 2)]
    );
    let all: u64 = count(OperationFilter::default()).await.values().sum();
    assert_eq!(all, 5);
    let hostile = count(OperationFilter {
        error_contains: Some("503' OR 1=1; DROP TABLE operations; --".into()),
        ..Default::default()
    })
    .await;
    assert!(hostile.is_empty(), "{hostile:?}");
    let literal = count(OperationFilter {
        error_contains: Some("PROVIDER answered".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(
        literal.values().sum::<u64>(),
        2,
        "case-insensitive, literal"
    );
}

/// Expands into one `#[tokio::test]` per operator case.
#[macro_export]
macro_rules! operator_conformance_tests {
    ($setup:path) => {
        $crate::operator_conformance_tests!(@cases $setup;
            pauses_stop_only_what_they_name,
            pause_by_class_holds_back_that_class,
            pause_by_dependency_reaches_failures_that_name_it,
            postponing_a_dependency_reaches_failures_that_name_it,
            lifting_a_control_wakes_what_it_held,
            wake_reset_rebuilds_a_purged_backlog,
            budgeted_wake_ups_fresh_figures_and_rewake,
            redrive_in_place_resets_spreads_and_is_idempotent,
            redrive_as_new_links_and_leaves_the_original,
            redrive_as_new_marks_the_original_no_longer_awaiting_action,
            concurrent_redrives_as_new_copy_each_parent_once,
            redrive_as_new_of_a_copy_keeps_the_original_effect_key,
            redrive_filters_select_exactly,
            count_matching_counts_by_status,
            quarantine_and_release,
            reconcile_due_and_resolve,
            stats_answer_the_retry_questions,
            stats_show_what_controls_hold_back,
            audit_log_keeps_every_action,
            audit_log_pages_and_filters,
            dead_promotions_are_announced_once,
            alert_log_records_holds_once_and_retries,
            leaders_are_held_one_at_a_time,
            activity_counts_attempts_and_deaths_per_minute,
            workers_register_and_unhandled_kinds_show,
            kinds_publish_their_policies_and_the_latest_wins,
            schedules_are_declared_advanced_once_and_listed,
            redrive_leaves_out_what_a_control_holds_back,
            redrive_jobs_keep_state_stops_and_resumption,
            redrive_preview_says_whether_it_is_safe,
            redrive_preview_asks_about_the_dependency_across_kinds,
        );
    };
    (@cases $setup:path; $($case:ident),+ $(,)?) => {
        mod operator {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let harness = $setup().await;
                    $crate::operator_cases::$case(harness).await;
                }
            )+
        }
    };
}

/// Attempts (and failed ones) and promotions to dead, counted per minute for the dashboard chart.
pub async fn activity_counts_attempts_and_deaths_per_minute<S: FullStore>(h: Harness<S>) {
    let t0 = h.clock.now();
    let ok = enqueue(&h, "x", EnqueueOptions::default()).await;
    finish(&h, ok, Transition::succeeded(None)).await;
    let retried = enqueue(&h, "x", EnqueueOptions::default()).await;
    finish(
        &h,
        retried,
        Transition::retry(h.clock.now(), Failure::transient("503")),
    )
    .await;
    h.advance_secs(125);
    finish(&h, retried, Transition::succeeded(None)).await;
    dead_ops(&h, "x", 2, FailureClass::Permanent, "bad").await;
    let all = h
        .store
        .activity_per_minute(ActivityParams {
            since: t0 - Duration::minutes(10),
        })
        .await
        .unwrap();
    let got: Vec<(i64, u64, u64, u64)> = all
        .iter()
        .map(|a| ((a.minute - t0).num_minutes(), a.attempts, a.failed, a.dead))
        .collect();
    assert_eq!(got, vec![(0, 2, 1, 0), (2, 3, 2, 2)]);
    let recent = h
        .store
        .activity_per_minute(ActivityParams {
            since: t0 + Duration::minutes(1),
        })
        .await
        .unwrap();
    assert_eq!(recent.len(), 1, "only minutes since the given time");
    assert_eq!(recent[0].minute, t0 + Duration::minutes(2));
    // A re-drive in place turns the dead rows pending again: their deaths stay in the chart,
    // counted when they happened (migration 0031), and a death after it counts anew.
    h.advance_secs(60);
    let redriven = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                kinds: vec!["x".into()],
                ..Default::default()
            },
            include_cancelled: false,
            mode: RedriveMode::InPlace {
                extend_deadline: None,
            },
            limit: 100,
            start_at: h.clock.now(),
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    assert_eq!(redriven.len(), 2);
    let again = redriven[0].to;
    finish(
        &h,
        again,
        Transition::dead(
            TerminalReason::Permanent,
            Some(Failure::new(
                FailureClass::Permanent,
                OperationError::new("still bad"),
            )),
        ),
    )
    .await;
    let after = h
        .store
        .activity_per_minute(ActivityParams {
            since: t0 - Duration::minutes(10),
        })
        .await
        .unwrap();
    let deaths: Vec<(i64, u64)> = after
        .iter()
        .map(|a| ((a.minute - t0).num_minutes(), a.dead))
        .collect();
    assert_eq!(deaths, vec![(0, 0), (2, 2), (3, 1)]);
}

/// Workers register, beat and leave; pending operations of a kind no live worker handles are
/// reported as unhandled (count, eligible, oldest), and only those.
pub async fn workers_register_and_unhandled_kinds_show<S: FullStore>(h: Harness<S>) {
    use oprec_core::{UnhandledKind, WORKER_LIVE_SECS};
    let live = Duration::seconds(WORKER_LIVE_SECS);
    let t0 = h.clock.now();
    let beat = |id: &str, kinds: &[&str]| beat(id, kinds, t0);
    let kinds_of = |u: &[UnhandledKind]| -> Vec<(String, u64, u64)> {
        u.iter()
            .map(|k| (k.kind.clone(), k.pending, k.eligible))
            .collect()
    };
    let row = |k: &str, p: u64, e: u64| (k.to_owned(), p, e);

    assert!(
        h.store
            .worker_list(WorkerListParams { seen_within: live })
            .await
            .unwrap()
            .is_empty()
    );
    enqueue(&h, "a", EnqueueOptions::default()).await;
    h.advance_secs(1);
    enqueue(&h, "a", EnqueueOptions::default()).await;
    let later = EnqueueOptions {
        delay: Some(Duration::hours(1)),
        ..EnqueueOptions::default()
    };
    enqueue(&h, "b", later).await;
    let done = enqueue(&h, "c", EnqueueOptions::default()).await;
    finish(&h, done, Transition::succeeded(None)).await;

    // No worker: every pending operation is unhandled; finished ones never are.
    let u = h
        .store
        .operation_unhandled(WorkerListParams { seen_within: live })
        .await
        .unwrap();
    assert_eq!(kinds_of(&u), vec![row("a", 2, 2), row("b", 1, 0)]);
    assert_eq!(u[0].oldest_created_at, t0);
    assert!(
        u.iter().all(|k| !k.eligible_at_least),
        "a backlog under the read bound is counted whole"
    );

    // A worker for a (and x) leaves only b unhandled, in the stats too.
    h.store
        .worker_beat(beat("w1", &["x", "a", "a"]))
        .await
        .unwrap();
    let w = h
        .store
        .worker_list(WorkerListParams { seen_within: live })
        .await
        .unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(
        (w[0].id.as_str(), w[0].host.as_str(), w[0].pid, &w[0].kinds),
        ("w1", "host-1", 4242, &vec!["a".to_owned(), "x".to_owned()])
    );
    assert_eq!(w[0].code_version.as_deref(), Some("v7"));
    assert_eq!((w[0].started_at, w[0].last_seen_at), (t0, h.clock.now()));
    assert!(!w[0].leader);
    // Holding the maintenance leadership shows on the worker's row.
    h.store
        .leader_acquire(LeaderAcquireParams {
            name: MAINTENANCE_LEADER.into(),
            holder: "w1".into(),
            lease: Duration::seconds(10),
            settings: None,
        })
        .await
        .unwrap();
    let w = h
        .store
        .worker_list(WorkerListParams { seen_within: live })
        .await
        .unwrap();
    assert!(w[0].leader);
    let u = h
        .store
        .operation_unhandled(WorkerListParams { seen_within: live })
        .await
        .unwrap();
    assert_eq!(kinds_of(&u), vec![row("b", 1, 0)]);
    assert_eq!(h.store.stats().await.unwrap().unhandled, u);

    // A heartbeat moves last_seen_at and keeps one row.
    h.advance_secs(30);
    h.store.worker_beat(beat("w1", &["a", "x"])).await.unwrap();
    let w = h
        .store
        .worker_list(WorkerListParams { seen_within: live })
        .await
        .unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].started_at, w[0].last_seen_at), (t0, h.clock.now()));

    // Silent past the TTL: gone from the list, and a is unhandled again.
    h.advance_secs(WORKER_LIVE_SECS + 1);
    assert!(
        h.store
            .worker_list(WorkerListParams { seen_within: live })
            .await
            .unwrap()
            .is_empty()
    );
    h.store.worker_beat(beat("w2", &["b"])).await.unwrap();
    let u = h
        .store
        .operation_unhandled(WorkerListParams { seen_within: live })
        .await
        .unwrap();
    assert_eq!(kinds_of(&u), vec![row("a", 2, 2)]);
    let ids: Vec<String> = h
        .store
        .worker_list(WorkerListParams {
            seen_within: Duration::hours(1),
        })
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.id)
        .collect();
    assert_eq!(ids, vec!["w1".to_owned(), "w2".to_owned()]);

    // A claimed operation is not pending, so not unhandled.
    h.store.worker_beat(beat("w2", &["b", "a"])).await.unwrap();
    h.advance_secs(3600);
    h.store.worker_beat(beat("w2", &["b"])).await.unwrap();
    let claimed = h.claim_all("w2").await;
    assert_eq!(claimed.len(), 3);
    assert!(
        h.store
            .operation_unhandled(WorkerListParams { seen_within: live })
            .await
            .unwrap()
            .is_empty()
    );

    // A clean shutdown removes the row, once.
    assert!(
        h.store
            .worker_remove(WorkerRemoveParams { id: "w2".into() })
            .await
            .unwrap()
    );
    assert!(
        !h.store
            .worker_remove(WorkerRemoveParams { id: "w2".into() })
            .await
            .unwrap()
    );
    assert!(
        h.store
            .worker_list(WorkerListParams { seen_within: live })
            .await
            .unwrap()
            .is_empty()
    );
}

/// The figures show each control in force with the eligible work it holds back (a pause of a
/// kind, a postponement of a dependency with its end, a pause of a class that holds nothing), and
/// the oldest eligible operation is the oldest that no control holds back.
pub async fn stats_show_what_controls_hold_back<S: FullStore>(h: Harness<S>) {
    let a1 = enqueue(&h, "a", EnqueueOptions::default()).await;
    h.advance_secs(10);
    enqueue(&h, "a", EnqueueOptions::default()).await;
    h.advance_secs(10);
    let banked = enqueue(
        &h,
        "b",
        EnqueueOptions {
            dependency: Some("bank".into()),
            ..Default::default()
        },
    )
    .await;
    h.advance_secs(10);
    let free = enqueue(&h, "c", EnqueueOptions::default()).await;
    // Not eligible yet: held back by nothing so far.
    enqueue(
        &h,
        "a",
        EnqueueOptions {
            delay: Some(Duration::hours(1)),
            ..Default::default()
        },
    )
    .await;
    h.advance_secs(10);
    let until = h.clock.now() + Duration::minutes(30);
    for c in [
        control(ControlScope::Kind, "a", None),
        control(ControlScope::Dependency, "bank", Some(until)),
        control(ControlScope::FailureClass, "permanent", None),
    ] {
        h.store.control_set(c).await.unwrap();
    }
    let r = h.store.stats().await.unwrap();
    assert_eq!(
        r.oldest_eligible.as_ref().map(|o| o.id),
        Some(free),
        "the oldest that no control holds back"
    );
    let held = |r: &oprec_core::StatsReport, value: &str| {
        r.held_back.iter().find(|b| b.value == value).cloned()
    };
    let a = held(&r, "a").expect("the kind's pause");
    assert_eq!(
        (a.scope, a.action, a.until, a.eligible, a.at_least),
        (ControlScope::Kind, ControlAction::Pause, None, 2, false)
    );
    assert_eq!(a.oldest.map(|o| o.id), Some(a1));
    let bank = held(&r, "bank").expect("the dependency's postponement");
    assert_eq!(
        (bank.action, bank.until, bank.eligible),
        (ControlAction::Postpone, Some(until), 1)
    );
    assert_eq!(
        bank.oldest.map(|o| (o.id, o.kind)),
        Some((banked, "b".into()))
    );
    let class = held(&r, "permanent").expect("the class's pause");
    assert_eq!((class.eligible, class.oldest), (0, None));
    assert_eq!(r.held_back.len(), 3);

    // Lifted: the kind's work is the oldest eligible again; lapsed: the postponement is gone.
    h.store
        .control_remove(ControlRemoveParams {
            scope: ControlScope::Kind,
            value: "a".into(),
        })
        .await
        .unwrap();
    let r = h.store.stats().await.unwrap();
    assert_eq!(r.oldest_eligible.as_ref().map(|o| o.id), Some(a1));
    assert!(held(&r, "a").is_none());
    h.advance_secs(31 * 60);
    let r = h.store.stats().await.unwrap();
    assert!(held(&r, "bank").is_none(), "{:?}", r.held_back);
    assert_eq!(r.held_back.len(), 1);
}

/// Workers publish their kinds' enqueue-time policies (`operation_kinds`, which PostgreSQL's
/// `oprec_enqueue` reads): each kind's row is upserted, the latest publication wins, and the row
/// says who published it, running which code version, and when; kinds another worker published
/// stay.
pub async fn kinds_publish_their_policies_and_the_latest_wins<S: FullStore>(h: Harness<S>) {
    use oprec_core::{KindPolicy, KindPublishParams};
    let policy = |kind: &str, max: Option<u32>, give_up: Option<i64>, first: i64| KindPolicy {
        kind: kind.to_owned(),
        max_attempts: max,
        give_up_after: give_up.map(Duration::seconds),
        first_delay: Duration::seconds(first),
        payload_mode: PayloadMode::Snapshot,
        dependency: Some("provider".to_owned()),
    };
    let publish = |by: &str, kinds: Vec<KindPolicy>| KindPublishParams {
        published_by: by.to_owned(),
        code_version: Some(format!("{by}-v1")),
        kinds,
    };
    assert!(h.store.kind_list().await.unwrap().is_empty());

    let t0 = h.clock.now();
    let a = policy("a", Some(6), Some(48 * 3600), 15);
    let b = KindPolicy {
        payload_mode: PayloadMode::Reference,
        dependency: None,
        ..policy("b", None, None, 0)
    };
    h.store
        .kind_publish(publish("w1", vec![a.clone(), b.clone()]))
        .await
        .unwrap();
    let listed = h.store.kind_list().await.unwrap();
    assert_eq!(
        listed.iter().map(|k| k.policy.clone()).collect::<Vec<_>>(),
        vec![a.clone(), b.clone()]
    );
    assert!(listed.iter().all(|k| k.published_by == "w1"
        && k.code_version.as_deref() == Some("w1-v1")
        && k.published_at == t0));

    // A later worker's publication replaces a's policy and adds c; b keeps w1's.
    h.advance_secs(30);
    let a2 = policy("a", Some(3), None, 60);
    let c = policy("c", Some(1), Some(60), 0);
    h.store
        .kind_publish(publish("w2", vec![a2.clone(), c.clone()]))
        .await
        .unwrap();
    let listed = h.store.kind_list().await.unwrap();
    let got: Vec<(&str, &KindPolicy, &str)> = listed
        .iter()
        .map(|k| (k.policy.kind.as_str(), &k.policy, k.published_by.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![("a", &a2, "w2"), ("b", &b, "w1"), ("c", &c, "w2")]
    );
    assert_eq!(listed[0].published_at, t0 + Duration::seconds(30));
    assert_eq!(listed[1].published_at, t0);

    // A kind named twice in one publication keeps its last policy; nothing to publish is no
    // change.
    let a3 = policy("a", Some(9), Some(10), 1);
    h.store
        .kind_publish(publish("w3", vec![a2, a3.clone()]))
        .await
        .unwrap();
    h.store.kind_publish(publish("w4", vec![])).await.unwrap();
    let listed = h.store.kind_list().await.unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(
        (&listed[0].policy, listed[0].published_by.as_str()),
        (&a3, "w3")
    );
}

/// Recurring kinds (`operation_schedules`): workers declare schedules (the latest declaration
/// wins, the last tick is kept, unscheduled kinds' rows are removed), the leader's pass advances
/// a schedule fenced by the last tick it read (a second pass over the same ticks changes
/// nothing), and the listing shows the last operation's status.
pub async fn schedules_are_declared_advanced_once_and_listed<S: FullStore>(h: Harness<S>) {
    use oprec_core::schedule::{
        ScheduleAdvanceParams, ScheduleDeclaration, ScheduleDeclareParams, tick_key,
    };
    use oprec_core::{Missed, Schedule};
    let every_minute = Schedule::cron("* * * * *")
        .unwrap()
        .in_zone("Europe/Paris")
        .unwrap()
        .missed(Missed::Skip)
        .payload(serde_json::json!({"report": "daily"}))
        .unwrap();
    let declare = |by: &str, schedules: Vec<(&str, Schedule)>, unscheduled: Vec<&str>| {
        ScheduleDeclareParams {
            declared_by: by.to_owned(),
            schedules: schedules
                .into_iter()
                .map(|(k, s)| ScheduleDeclaration {
                    kind: k.to_owned(),
                    schedule: s,
                })
                .collect(),
            unscheduled: unscheduled.into_iter().map(str::to_owned).collect(),
        }
    };
    assert!(h.store.schedule_list().await.unwrap().is_empty());
    let t0 = h.clock.now();
    h.store
        .schedule_declare(declare(
            "w1",
            vec![
                ("report", every_minute.clone()),
                ("sweep", Schedule::cron("0 * * * *").unwrap()),
            ],
            vec![],
        ))
        .await
        .unwrap();
    let listed = h.store.schedule_list().await.unwrap();
    assert_eq!(listed.len(), 2);
    let report = &listed[0];
    assert_eq!(
        (
            report.kind.as_str(),
            report.expression.as_str(),
            report.timezone.as_str()
        ),
        ("report", "* * * * *", "Europe/Paris")
    );
    assert_eq!(report.missed, Missed::Skip);
    assert_eq!(report.grace_secs, 60);
    assert_eq!(report.payload, serde_json::json!({"report": "daily"}));
    assert_eq!(report.declared_at, t0);
    assert_eq!(report.declared_by, "w1");
    assert_eq!(report.last_tick, None);
    assert_eq!(report.next_tick, every_minute.next_after(t0));
    assert_eq!(report.schedule().unwrap(), every_minute);
    assert_eq!(report.handled_up_to(), t0);

    // The leader's pass two minutes on: the plan, the operation, the fenced advance.
    h.advance_secs(120);
    let now = h.clock.now();
    let plan = every_minute.plan(report.handled_up_to(), now);
    let tick = *plan.enqueue.last().unwrap();
    let op = oprec_core::NewOperation::new(
        "report",
        every_minute.payload_for(tick),
        &crate::fixture::fixture_policy(),
        EnqueueOptions {
            idempotency_key: Some(tick_key(tick)),
            ..EnqueueOptions::default()
        },
        now,
    )
    .unwrap();
    let id = h.store.operation_insert(op).await.unwrap().id;
    let advance = ScheduleAdvanceParams {
        kind: "report".into(),
        read_last_tick: None,
        last_tick: plan.handled_up_to.unwrap(),
        enqueued: Some((tick, id)),
        next_tick: plan.next,
    };
    assert!(h.store.schedule_advance(advance.clone()).await.unwrap());
    // A second leader that read the same row changes nothing.
    assert!(!h.store.schedule_advance(advance.clone()).await.unwrap());
    let listed = h.store.schedule_list().await.unwrap();
    let report = &listed[0];
    assert_eq!(report.last_tick, plan.handled_up_to);
    assert_eq!(report.last_enqueued_tick, Some(tick));
    assert_eq!(report.last_operation_id, Some(id));
    assert_eq!(report.last_operation_status, Some(Status::Pending));
    assert_eq!(report.next_tick, plan.next);
    assert_eq!(listed[1].last_operation_status, None);

    // A pass that enqueues nothing keeps the last operation.
    h.advance_secs(60);
    let later = h.clock.now();
    assert!(
        h.store
            .schedule_advance(ScheduleAdvanceParams {
                kind: "report".into(),
                read_last_tick: plan.handled_up_to,
                last_tick: later,
                enqueued: None,
                next_tick: Some(later + Duration::seconds(60)),
            })
            .await
            .unwrap()
    );
    let report = h.store.schedule_list().await.unwrap().remove(0);
    assert_eq!(report.last_tick, Some(later));
    assert_eq!(report.last_operation_id, Some(id));

    // Declared again by another worker (a new expression): the last tick stays; a worker that
    // runs "sweep" without a schedule removes its row.
    let every_hour = Schedule::cron("0 0 * * * *").unwrap();
    h.store
        .schedule_declare(declare(
            "w2",
            vec![("report", every_hour.clone())],
            vec!["sweep"],
        ))
        .await
        .unwrap();
    let listed = h.store.schedule_list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].expression, "0 0 * * * *");
    assert_eq!(listed[0].timezone, "UTC");
    assert_eq!(listed[0].declared_by, "w2");
    assert_eq!(listed[0].declared_at, t0);
    assert_eq!(listed[0].last_tick, Some(later));
    assert_eq!(listed[0].schedule().unwrap(), every_hour);
}
