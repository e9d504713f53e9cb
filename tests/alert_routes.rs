//! Alerts routed to their owner, on both stores: a kind's route, a dependency's route and the
//! default one, each a real local webhook receiver. A death goes to its kind's route; a hold for
//! a configuration failure of a kind without a route goes to its dependency's, and pauses the
//! dependency (alerted to the dependency's owner); everything else goes to the default. Two
//! alerters running at once (a leadership changing hands) tell each event once, and the alert
//! log says what went where.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::{Json, Router, routing::post};
use oprec_core::alert::{AlertEvent, AlertListParams, AlertStatus};
use oprec_core::operator::{ControlAction, ControlScope};
use oprec_core::{
    EnqueueOptions, Failure, FullStore, OperationError, OperationId, TerminalReason, Transition,
};
use oprec_e2e::end::end_with;
use oprec_runtime::{
    AlertReport, AlertRoutes, AlertSink, AlerterConfig, CONFIGURATION_PAUSE_ACTOR, Client, Kind,
    Registry, WebhookSink, alert_once,
};
use serde_json::{Value, json};

/// A local webhook receiver: the bodies it accepted, and its address.
async fn receiver() -> (Arc<Mutex<Vec<Value>>>, String) {
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let g = got.clone();
    let app = Router::new().route(
        "/hook/secret-path",
        post(move |Json(body): Json<Value>| {
            let g = g.clone();
            async move {
                g.lock().unwrap().push(body);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (got, format!("http://{addr}/hook/secret-path"))
}

fn sink(url: &str) -> Vec<Arc<dyn AlertSink>> {
    vec![Arc::new(WebhookSink::new(url).unwrap())]
}

async fn routes_reach_their_owners(store: Arc<dyn FullStore>) {
    let (by_kind, kind_url) = receiver().await;
    let (by_dependency, dependency_url) = receiver().await;
    let (by_default, default_url) = receiver().await;
    let policy = oprec_core::RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(10))
        .max_attempts(3)
        .external_io(oprec_core::Ladder::schedule_secs(&[0, 1, 1]))
        .jitter(oprec_core::Jitter::None)
        .build()
        .unwrap();
    let noop = |name: &str| Kind::new(name, policy.clone(), |_ctx, _p: Value| async { Ok(()) });
    let reg = Arc::new(
        Registry::new()
            .register(noop("mail.send"))
            .register(noop("charge"))
            .register(noop("report")),
    );
    let client = Client::new(store.clone(), None, reg.clone());
    let with_dependency = |d: &str| EnqueueOptions {
        dependency: Some(d.into()),
        ..EnqueueOptions::default()
    };
    let enqueue = |kind: &'static str, options: EnqueueOptions| {
        let client = client.clone();
        async move { client.enqueue(kind, json!({}), options).await.unwrap().id }
    };
    // mail.send has a route of its own; charge calls stripe, which has one; report has neither.
    let mail = enqueue("mail.send", with_dependency("smtp")).await;
    let charge = enqueue("charge", with_dependency("stripe")).await;
    let report = enqueue("report", EnqueueOptions::default()).await;
    let permanent = |s: &str| {
        Transition::dead(
            TerminalReason::Permanent,
            Some(Failure::permanent(OperationError::new(s))),
        )
    };
    end_with(store.as_ref(), mail, permanent("address rejected")).await;
    end_with(
        store.as_ref(),
        charge,
        Transition::hold(Failure::new(
            oprec_core::FailureClass::Configuration,
            OperationError::new("401: API key revoked"),
        )),
    )
    .await;
    end_with(store.as_ref(), report, permanent("template missing")).await;

    let config = AlerterConfig {
        default_sinks: sink(&default_url),
        routes: AlertRoutes {
            kinds: [("mail.send".to_owned(), sink(&kind_url))].into(),
            dependencies: [("stripe".to_owned(), sink(&dependency_url))].into(),
        },
        pause_on_configuration: true,
        ..AlerterConfig::default()
    };
    // Two alerters at once, as while a leadership changes hands.
    let (a, b) = tokio::join!(
        alert_once(store.as_ref(), &reg, &config),
        alert_once(store.as_ref(), &reg, &config)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.announced + b.announced, 2, "{a:?} {b:?}");
    assert_eq!(a.held + b.held, 1, "{a:?} {b:?}");
    assert_eq!(a.paused + b.paused, 1, "{a:?} {b:?}");
    // What one pass recorded and the other had not yet taken is sent by the next.
    let c = alert_once(store.as_ref(), &reg, &config).await.unwrap();
    assert_eq!(a.sent + b.sent + c.sent, 2, "{a:?} {b:?} {c:?}");
    assert_eq!(a.failed + b.failed + c.failed, 0);
    assert_eq!(
        alert_once(store.as_ref(), &reg, &config).await.unwrap(),
        AlertReport::default(),
        "each told once"
    );

    let kind_got = by_kind.lock().unwrap().clone();
    assert_eq!(kind_got.len(), 1, "{kind_got:?}");
    assert_eq!(kind_got[0]["event"], "dead");
    assert_eq!(kind_got[0]["id"], mail.to_string());
    assert_eq!(kind_got[0]["dependency"], "smtp");

    let dependency_got = by_dependency.lock().unwrap().clone();
    let events: Vec<&str> = dependency_got
        .iter()
        .map(|b| b["event"].as_str().unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{dependency_got:?}");
    assert!(
        events.contains(&"held") && events.contains(&"paused"),
        "{events:?}"
    );
    let held = dependency_got
        .iter()
        .find(|b| b["event"] == "held")
        .unwrap();
    assert_eq!(held["operation"], charge.to_string());
    assert_eq!(held["kind"], "charge");
    assert_eq!(held["summary"], "401: API key revoked");
    assert!(
        held["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("oprec release --id {charge}")),
        "{held}"
    );
    let paused = dependency_got
        .iter()
        .find(|b| b["event"] == "paused")
        .unwrap();
    assert_eq!(paused["dependency"], "stripe");
    assert!(paused["kind"].is_null(), "a pause has no kind: {paused}");
    assert!(
        paused["next_action"]
            .as_str()
            .unwrap()
            .contains("oprec resume --dependency stripe"),
        "{paused}"
    );

    let default_got = by_default.lock().unwrap().clone();
    assert_eq!(default_got.len(), 1, "{default_got:?}");
    assert_eq!(default_got[0]["id"], report.to_string());

    // The pause stands, set by the alerter, and is audited.
    let controls = store.control_list().await.unwrap();
    let pause = controls
        .iter()
        .find(|c| c.scope == ControlScope::Dependency && c.value == "stripe")
        .expect("stripe paused");
    assert_eq!(pause.action, ControlAction::Pause);
    assert_eq!(pause.actor, CONFIGURATION_PAUSE_ACTOR);
    assert!(pause.reason.as_deref().unwrap().contains("API key revoked"));
    let audit = store
        .audit_list(oprec_core::operator::AuditListParams {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        audit
            .iter()
            .any(|e| e.entry.actor == CONFIGURATION_PAUSE_ACTOR && e.entry.action == "pause"),
        "{audit:?}"
    );

    // The log: four alerts, all sent, each to its route, no secret path kept.
    let log = store
        .alert_list(AlertListParams {
            limit: 100,
            ..AlertListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(log.len(), 4, "{log:?}");
    assert!(log.iter().all(|e| e.status == AlertStatus::Sent), "{log:?}");
    let route_of = |event: AlertEvent, id: OperationId| {
        log.iter()
            .find(|e| e.event == event && e.operation_id == Some(id))
            .and_then(|e| e.route.clone())
    };
    assert_eq!(
        route_of(AlertEvent::Dead, mail).as_deref(),
        Some("kind:mail.send")
    );
    assert_eq!(
        route_of(AlertEvent::Held, charge).as_deref(),
        Some("dependency:stripe")
    );
    assert_eq!(
        route_of(AlertEvent::Paused, charge).as_deref(),
        Some("dependency:stripe")
    );
    assert_eq!(
        route_of(AlertEvent::Dead, report).as_deref(),
        Some("default")
    );
    for e in &log {
        let target = e.target.as_deref().unwrap_or_default();
        assert!(target.starts_with("http://127.0.0.1:"), "{target}");
        assert!(!target.contains("secret-path"), "{target}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_reach_their_owners_on_postgres() {
    routes_reach_their_owners(oprec_e2e::rigs::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_reach_their_owners_on_sqlite() {
    routes_reach_their_owners(oprec_e2e::rigs::sqlite().await).await;
}
