//! The runtime's operator loops against a real PostgreSQL: the reconciler asks kinds' hooks
//! about unknown outcomes, and the alerter announces every promotion to dead exactly once,
//! retrying a webhook that fails.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::{Json, Router, routing::post};
use oprec_core::store::OperationGetParams;
use oprec_core::{
    Clock, EnqueueOptions, Failure, FullStore, Ladder, ManualClock, OperationError, RetryPolicy,
    Status, SystemClock, TerminalReason, Transition,
};
use oprec_e2e::end::end_with;
use oprec_runtime::{
    AlertReport, AlerterConfig, Client, DeadLetterSink, Kind, Reconciled, ReconcilerConfig,
    Registry, WebhookSink, alert_once, reconcile_once,
};
use serde::Deserialize;
use serde_json::{Value, json};

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(3)
        .external_io(Ladder::schedule_secs(&[0, 1, 1]))
        .jitter(oprec_core::Jitter::None)
        .build()
        .unwrap()
}

#[derive(Deserialize)]
struct Pay {
    reconcile: String,
}

fn registry() -> Arc<Registry> {
    let pay = Kind::new("pay", policy(), |_ctx, _p: Pay| async {
        Err(Failure::unknown("timed out after the request was written").into())
    })
    .reconcile(|ctx, p: Pay| async move {
        match p.reconcile.as_str() {
            "applied" => Reconciled::Applied {
                remote_id: Some(format!("ch-{}", ctx.id())),
            },
            "not_applied" => Reconciled::NotApplied,
            _ => Reconciled::StillUnknown,
        }
    });
    Arc::new(Registry::new().register(pay))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconciler_asks_the_kind_and_records_its_answer() {
    let store: Arc<dyn FullStore> = Arc::new(oprec_e2e::rigs::postgres_store().await);
    let reg = registry();
    let client = Client::new(store.clone(), None, reg.clone());
    let mut ids = Vec::new();
    for answer in ["applied", "not_applied", "unknown"] {
        let id = client
            .enqueue(
                "pay",
                json!({"reconcile": answer}),
                EnqueueOptions::default(),
            )
            .await
            .unwrap()
            .id;
        end_with(
            store.as_ref(),
            id,
            Transition::reconcile(Failure::unknown("timeout after write")),
        )
        .await;
        ids.push(id);
    }
    let report = reconcile_once(&store, &reg, &SystemClock, &ReconcilerConfig::default())
        .await
        .unwrap();
    assert_eq!(
        (report.applied, report.not_applied, report.still_unknown),
        (1, 1, 1)
    );
    let applied = store
        .operation_get(OperationGetParams { id: ids[0] })
        .await
        .unwrap()
        .unwrap()
        .operation;
    assert_eq!(applied.status, Status::Succeeded);
    assert_eq!(applied.remote_id, Some(format!("ch-{}", ids[0])));
    let retry = store
        .operation_get(OperationGetParams { id: ids[1] })
        .await
        .unwrap()
        .unwrap()
        .operation;
    assert_eq!(retry.status, Status::Pending, "not applied: safe to retry");
    let unknown = store
        .operation_get(OperationGetParams { id: ids[2] })
        .await
        .unwrap()
        .unwrap()
        .operation;
    assert_eq!(unknown.status, Status::Reconciling);
    assert!(unknown.next_eligible_at > SystemClock.now() + chrono::Duration::minutes(4));
    // Asked again only when its time comes.
    let again = reconcile_once(&store, &reg, &SystemClock, &ReconcilerConfig::default())
        .await
        .unwrap();
    assert_eq!(again.still_unknown, 0);
}

#[derive(Clone, Default)]
struct Received {
    bodies: Arc<Mutex<Vec<Value>>>,
    calls: Arc<Mutex<u32>>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_promotion_to_dead_is_announced_once_even_when_the_webhook_fails() {
    // A webhook that fails its first call with a 500, then accepts.
    let received = Received::default();
    let r = received.clone();
    let app = Router::new().route(
        "/hook",
        post(move |Json(body): Json<Value>| {
            let r = r.clone();
            async move {
                let mut calls = r.calls.lock().unwrap();
                *calls += 1;
                if *calls == 1 {
                    return StatusCode::INTERNAL_SERVER_ERROR;
                }
                r.bodies.lock().unwrap().push(body);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    // The store judges time by a clock the test moves, so the back-off needs no waiting.
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let store: Arc<dyn FullStore> = Arc::new(
        oprec_e2e::rigs::postgres_store()
            .await
            .with_clock(clock.clone()),
    );
    let reg = registry();
    let client = Client::new(store.clone(), None, reg.clone()).with_clock(clock.clone());
    let mut ids = Vec::new();
    for field in ["postal_code", "amount"] {
        let id = client
            .enqueue("pay", json!({"reconcile": "x"}), EnqueueOptions::default())
            .await
            .unwrap()
            .id;
        let error = OperationError::new(format!("{field} is malformed")).field(field);
        end_with(
            store.as_ref(),
            id,
            Transition::dead(TerminalReason::Permanent, Some(Failure::permanent(error))),
        )
        .await;
        ids.push(id);
    }
    let sink: Arc<dyn DeadLetterSink> =
        Arc::new(WebhookSink::new(&format!("http://{addr}/hook")).unwrap());
    let config = AlerterConfig {
        default_sinks: vec![sink],
        ..AlerterConfig::default()
    };
    let pass = || alert_once(store.as_ref(), &reg, &config);
    let first = pass().await.unwrap();
    assert_eq!(
        (first.announced, first.deferred),
        (1, 1),
        "the first post failed"
    );
    // The failed one waits for its retry time (10 s after a first failure), not the next pass.
    assert_eq!(pass().await.unwrap(), AlertReport::default(), "backed off");
    clock.advance(chrono::Duration::seconds(9));
    assert_eq!(
        pass().await.unwrap(),
        AlertReport::default(),
        "still backed off"
    );
    clock.advance(chrono::Duration::seconds(1));
    assert_eq!(pass().await.unwrap().announced, 1, "retried at its time");
    clock.advance(chrono::Duration::hours(2));
    assert_eq!(
        pass().await.unwrap(),
        AlertReport::default(),
        "announced once"
    );
    let bodies = received.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    let mut got: Vec<String> = bodies
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_owned())
        .collect();
    got.sort();
    let mut want: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
    for b in &bodies {
        assert_eq!(b["kind"], "pay");
        assert_eq!(b["reason"], "permanent");
        assert_eq!(b["attempts"], 1);
        assert_eq!(b["code_version"], "v9");
        assert!(
            b["error"]["summary"]
                .as_str()
                .unwrap()
                .ends_with("is malformed")
        );
    }
    assert_eq!(*received.calls.lock().unwrap(), 3);
}
