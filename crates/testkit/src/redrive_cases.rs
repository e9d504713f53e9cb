//! The re-drive job conformance cases, run with the operator cases
//! ([`operator_conformance_tests!`](crate::operator_conformance_tests)): a pick that leaves out
//! what a control holds back, the jobs' rows (save, stop, resume, list), and the dry run's
//! answers to "is it safe?" (first and last death, distinct errors, a success since).

use chrono::Duration;
use oprec_core::operator::{
    ControlAction, ControlRemoveParams, ControlScope, ControlSetParams, OperationFilter,
    RedriveJobListParams, RedriveJobSaveParams, RedriveJobState, RedriveJobStopParams, RedriveMode,
    RedriveParams, RedrivePreviewParams,
};
use oprec_core::{
    Clock, EnqueueOptions, Failure, FailureClass, FullStore, OperationId, TerminalReason,
    Transition,
};
use serde_json::json;

use crate::Harness;
use crate::operator_cases::{dead_ops, finish};
use crate::store_cases::enqueue;

/// One re-drive batch of everything, leaving out what a control holds back.
async fn pick<S: FullStore>(h: &Harness<S>, as_new: bool) -> Vec<OperationId> {
    let mut out: Vec<OperationId> = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter::default(),
            include_cancelled: false,
            mode: if as_new {
                RedriveMode::AsNew { deadline: None }
            } else {
                RedriveMode::InPlace {
                    extend_deadline: None,
                }
            },
            limit: 100,
            start_at: h.clock.now(),
            spacing: Duration::zero(),
            skip_held_back: true,
        })
        .await
        .unwrap()
        .iter()
        .map(|r| r.from)
        .collect();
    out.sort();
    out
}

async fn set<S: FullStore>(h: &Harness<S>, scope: ControlScope, value: &str, minutes: Option<i64>) {
    h.store
        .control_set(ControlSetParams {
            scope,
            value: value.into(),
            action: if minutes.is_some() {
                ControlAction::Postpone
            } else {
                ControlAction::Pause
            },
            until: minutes.map(|m| h.clock.now() + Duration::minutes(m)),
            reason: None,
            actor: "tester".into(),
        })
        .await
        .unwrap();
}

async fn lift<S: FullStore>(h: &Harness<S>, scope: ControlScope, value: &str) {
    h.store
        .control_remove(ControlRemoveParams {
            scope,
            value: value.into(),
        })
        .await
        .unwrap();
}

/// With `skip_held_back`, a re-drive leaves out the operations a control in force would hold
/// back once re-driven, as the claim sees them: in place, the row's kind, last failure class and
/// the dependency its failure named; as new, only the copy's kind (a copy has no failure yet).
/// A lapsed postponement holds nothing back.
pub async fn redrive_leaves_out_what_a_control_holds_back<S: FullStore>(h: Harness<S>) {
    let mut a = dead_ops(&h, "a", 2, FailureClass::Transient, "503").await;
    let b = dead_ops(&h, "b", 1, FailureClass::Permanent, "bad field").await;
    let about = enqueue(&h, "c", EnqueueOptions::default()).await;
    let failure = Failure::transient("catalogue incomplete").about_dependency("catalogue");
    finish(
        &h,
        about,
        Transition::dead(TerminalReason::AttemptsExhausted, Some(failure)),
    )
    .await;
    a.sort();

    set(&h, ControlScope::Kind, "b", None).await;
    set(&h, ControlScope::FailureClass, "transient", Some(10)).await;
    set(&h, ControlScope::Dependency, "catalogue", None).await;
    assert!(
        pick(&h, false).await.is_empty(),
        "each is held back in place"
    );

    // As new: the copies of `a` and `c` carry no failure, so neither the class nor the
    // dependency their failures named holds them back; the kind's pause still holds `b`.
    let mut copies = a.clone();
    copies.push(about);
    copies.sort();
    assert_eq!(pick(&h, true).await, copies);

    // The postponement of the class lapses: `a` has been copied already, so nothing; lifting the
    // kind's pause lets `b` go in place.
    h.clock.advance(Duration::minutes(11));
    lift(&h, ControlScope::Kind, "b").await;
    assert_eq!(pick(&h, false).await, b);
    lift(&h, ControlScope::Dependency, "catalogue").await;
}

/// A job's row: created running, a stop asked for is kept (and its first asker) while it runs,
/// cleared when a stopped job runs again, refused quietly for a job not running; jobs list
/// newest first, or one by id.
pub async fn redrive_jobs_keep_state_stops_and_resumption<S: FullStore>(h: Harness<S>) {
    let save = |id: &str, state, released, reason: Option<&str>| RedriveJobSaveParams {
        id: id.into(),
        actor: "alice".into(),
        state,
        request: json!({"filter": {"kinds": ["k"]}, "rate": "20/s"}),
        ended_before: h.clock.now(),
        planned: 100,
        released,
        reason: reason.map(str::to_owned),
    };
    let first = "01a00000-0000-7000-8000-000000000001";
    let second = "01a00000-0000-7000-8000-000000000002";
    let job = h
        .store
        .redrive_job_save(save(first, RedriveJobState::Running, 0, None))
        .await
        .unwrap();
    assert_eq!(
        (job.state, job.released, job.planned),
        (RedriveJobState::Running, 0, 100)
    );
    assert_eq!(job.request["rate"], "20/s");
    assert_eq!(job.ended_before, h.clock.now());
    assert_eq!(job.created_at, h.clock.now());

    let stop = |by: &str| RedriveJobStopParams {
        id: first.into(),
        actor: by.into(),
    };
    let asked = h
        .store
        .redrive_job_stop(stop("bob"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(asked.stop_requested_by.as_deref(), Some("bob"));
    let asked = h
        .store
        .redrive_job_stop(stop("carol"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        asked.stop_requested_by.as_deref(),
        Some("bob"),
        "the first asker"
    );
    h.clock.advance(Duration::seconds(1));
    let saved = h
        .store
        .redrive_job_save(save(first, RedriveJobState::Running, 20, None))
        .await
        .unwrap();
    assert_eq!(
        saved.stop_requested_by.as_deref(),
        Some("bob"),
        "the running job sees the stop when it saves"
    );
    assert_eq!(saved.updated_at, h.clock.now());
    assert_eq!(saved.created_at, job.created_at);
    let stopped = h
        .store
        .redrive_job_save(save(
            first,
            RedriveJobState::Stopped,
            20,
            Some("stopped by bob"),
        ))
        .await
        .unwrap();
    assert_eq!(stopped.reason.as_deref(), Some("stopped by bob"));
    let unchanged = h
        .store
        .redrive_job_stop(stop("dave"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unchanged.state, RedriveJobState::Stopped);
    assert_eq!(unchanged.stop_requested_by.as_deref(), Some("bob"));
    let resumed = h
        .store
        .redrive_job_save(save(first, RedriveJobState::Running, 20, None))
        .await
        .unwrap();
    assert_eq!(
        resumed.stop_requested_by, None,
        "a resumption clears the stop"
    );
    assert_eq!(resumed.reason, None);
    assert!(
        h.store
            .redrive_job_stop(RedriveJobStopParams {
                id: "no-such-job".into(),
                actor: "bob".into(),
            })
            .await
            .unwrap()
            .is_none()
    );

    h.store
        .redrive_job_save(save(second, RedriveJobState::Done, 100, None))
        .await
        .unwrap();
    let all = h
        .store
        .redrive_job_list(RedriveJobListParams {
            id: None,
            limit: 10,
        })
        .await
        .unwrap();
    let ids: Vec<&str> = all.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, vec![second, first], "newest first");
    let one = h
        .store
        .redrive_job_list(RedriveJobListParams {
            id: Some(first.into()),
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].released, 20);
}

/// The dry run of everything.
async fn preview<S: FullStore>(h: &Harness<S>) -> oprec_core::operator::RedrivePreview {
    h.store
        .redrive_preview(RedrivePreviewParams {
            filter: OperationFilter::default(),
            include_cancelled: false,
            samples: 5,
        })
        .await
        .unwrap()
}

/// The dry run answers "is it safe?": per group its dependency and first and last death, and
/// whether an operation of that dependency (of the kind, when it names none) succeeded since the
/// last death; the distinct errors with their counts (the most frequent first) and their first
/// and last death.
pub async fn redrive_preview_says_whether_it_is_safe<S: FullStore>(h: Harness<S>) {
    let t0 = h.clock.now();
    dead_ops(&h, "k", 3, FailureClass::Transient, "provider answered 503").await;
    h.clock.advance(Duration::minutes(5));
    dead_ops(&h, "k", 1, FailureClass::Transient, "connection refused").await;
    let t1 = h.clock.now();
    dead_ops(&h, "j", 1, FailureClass::Permanent, "bad field").await;
    let p = preview(&h).await;
    let k = p.groups.iter().find(|g| g.kind == "k").unwrap();
    assert_eq!(k.count, 4);
    assert_eq!((k.first_ended_at, k.last_ended_at), (Some(t0), Some(t1)));
    assert_eq!(k.dependency, None);
    assert_eq!(k.recovered_at, None, "nothing of k succeeded since");
    let errors: Vec<(&str, Option<&str>, u64)> = p
        .errors
        .iter()
        .map(|e| (e.kind.as_str(), e.error.as_deref(), e.count))
        .collect();
    assert_eq!(errors[0], ("k", Some("provider answered 503"), 3));
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors.contains(&("k", Some("connection refused"), 1)));
    assert!(errors.contains(&("j", Some("bad field"), 1)));
    // Each distinct error is a group of its own, with its first and last death.
    let deaths = |text: &str| {
        let e = p
            .errors
            .iter()
            .find(|e| e.error.as_deref() == Some(text))
            .unwrap();
        (e.first_ended_at, e.last_ended_at)
    };
    assert_eq!(deaths("provider answered 503"), (Some(t0), Some(t0)));
    assert_eq!(deaths("connection refused"), (Some(t1), Some(t1)));

    // An operation of k succeeds after the last death: the group has recovered since.
    h.clock.advance(Duration::minutes(1));
    let ok = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, ok, Transition::succeeded(None)).await;
    let p = preview(&h).await;
    let k = p.groups.iter().find(|g| g.kind == "k").unwrap();
    assert_eq!(k.recovered_at, Some(h.clock.now()));
    let j = p.groups.iter().find(|g| g.kind == "j").unwrap();
    assert_eq!(
        j.recovered_at, None,
        "another kind's success says nothing of j"
    );
    assert_eq!(j.reason, Some(TerminalReason::Permanent));
}

/// A group whose operations call a dependency has recovered when an operation of any kind that
/// calls the same dependency succeeded since its last death: the earliest such success counts,
/// however many kinds there are (more than one statement's worth of kinds here), and neither a
/// success of the same kind without the dependency nor one of another dependency does.
pub async fn redrive_preview_asks_about_the_dependency_across_kinds<S: FullStore>(h: Harness<S>) {
    let calls = |dependency: &str| EnqueueOptions {
        dependency: Some(dependency.into()),
        ..EnqueueOptions::default()
    };
    let id = enqueue(&h, "charge", calls("stripe")).await;
    finish(
        &h,
        id,
        Transition::dead(
            TerminalReason::AttemptsExhausted,
            Some(Failure::new(
                FailureClass::Transient,
                oprec_core::OperationError::new("stripe answered 503"),
            )),
        ),
    )
    .await;
    let group = |p: &oprec_core::operator::RedrivePreview| {
        p.groups
            .iter()
            .find(|g| g.kind == "charge")
            .cloned()
            .unwrap()
    };
    assert_eq!(
        group(&preview(&h).await).dependency.as_deref(),
        Some("stripe")
    );
    h.clock.advance(Duration::minutes(1));
    // Successes that say nothing of stripe: the same kind without it, another dependency, and
    // seventy kinds that call nothing.
    let ok = enqueue(&h, "charge", EnqueueOptions::default()).await;
    finish(&h, ok, Transition::succeeded(None)).await;
    let ok = enqueue(&h, "refund", calls("paypal")).await;
    finish(&h, ok, Transition::succeeded(None)).await;
    for i in 0..70 {
        let ok = enqueue(&h, &format!("other.{i:02}"), EnqueueOptions::default()).await;
        finish(&h, ok, Transition::succeeded(None)).await;
    }
    assert_eq!(group(&preview(&h).await).recovered_at, None);
    // Two successes through stripe, in kinds far apart in name order: the earlier one counts.
    h.clock.advance(Duration::minutes(1));
    let first = h.clock.now();
    let ok = enqueue(&h, "zz.payout", calls("stripe")).await;
    finish(&h, ok, Transition::succeeded(None)).await;
    h.clock.advance(Duration::minutes(1));
    let ok = enqueue(&h, "aa.invoice", calls("stripe")).await;
    finish(&h, ok, Transition::succeeded(None)).await;
    assert_eq!(group(&preview(&h).await).recovered_at, Some(first));
}
