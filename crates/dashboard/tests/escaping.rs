//! Text from records and requests is data, never markup: an operation whose kind, dependency,
//! idempotency key, payload, last error, step and worker all carry a hostile string, a control,
//! a worker and an operator name carrying it, and an audit note carrying it, come out escaped on
//! every page that shows them (overview, operations list, operation page, dead letters, re-drive
//! dry run and progress, controls, quarantine, audit log, schedules), in element text and in
//! attributes.

mod common;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use chrono::{Duration, Utc};
use common::{TOKEN, csrf_of, dashboard, fresh_store};
use oprec_core::prelude::*;
use oprec_core::store::{ClaimEligibleParams, Claimant, CompleteParams, StepSaveParams};
use oprec_core::{
    EnqueueOptions, Failure, NewOperation, OperationError, RetryPolicy, TerminalReason, Transition,
    WorkerBeatParams,
};
use oprec_postgres::PgStore;
use serde_json::json;
use tower::ServiceExt;

/// Markup, an attribute-ending quote, an apostrophe and an ampersand.
const HOSTILE: &str = r#"<script>alert(1)</script>"'&"#;

/// `HOSTILE` for a query string or a form body.
fn encoded() -> String {
    url::form_urlencoded::byte_serialize(HOSTILE.as_bytes()).collect()
}

struct Reply {
    status: StatusCode,
    location: Option<String>,
    cookie: Option<String>,
    body: String,
}

async fn send(app: &Router, req: Request<Body>) -> Reply {
    let res = app.clone().oneshot(req).await.expect("response");
    let header_text = |name| {
        res.headers()
            .get(name)
            .map(|v: &header::HeaderValue| v.to_str().expect("ascii header").to_owned())
    };
    let (status, location, cookie) = (
        res.status(),
        header_text(header::LOCATION),
        header_text(header::SET_COOKIE),
    );
    let bytes = axum::body::to_bytes(res.into_body(), 8 << 20)
        .await
        .expect("body");
    Reply {
        status,
        location,
        cookie,
        body: String::from_utf8(bytes.to_vec()).expect("utf-8 body"),
    }
}

async fn get(app: &Router, path: &str, cookie: &str) -> Reply {
    let req = Request::get(path)
        .header(header::HOST, "127.0.0.1:8080")
        .header(header::COOKIE, cookie);
    send(app, req.body(Body::empty()).unwrap()).await
}

async fn post(app: &Router, path: &str, cookie: Option<&str>, body: String) -> Reply {
    let mut req = Request::post(path)
        .header(header::HOST, "127.0.0.1:8080")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("sec-fetch-site", "same-origin");
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    send(app, req.body(Body::from(body)).unwrap()).await
}

/// Checks that `body` never carries `HOSTILE` as markup, and shows it escaped at least `min`
/// times (the places listed at each page): `<`, `>`, `"` and `&` as entities (a quote inside JSON also keeps its backslash), the
/// apostrophe as itself or as an entity (attributes are always double-quoted).
fn assert_escaped(what: &str, body: &str, min: usize) {
    assert!(
        !body.contains("<script>alert") && !body.contains("</script>\""),
        "{what} carries the hostile markup raw:\n{body}"
    );
    let tail = "alert(1)&lt;/script&gt;";
    let mut shown = 0;
    for (at, _) in body.match_indices(tail) {
        assert!(
            body[..at].ends_with("&lt;script&gt;"),
            "{what}: an unescaped opening tag before {at}"
        );
        let rest = &body[at + tail.len()..];
        let rest = rest.strip_prefix('\\').unwrap_or(rest);
        let rest = rest
            .strip_prefix("&quot;")
            .unwrap_or_else(|| panic!("{what}: an unescaped quote at {at}: {rest:.40}"));
        let rest = rest
            .strip_prefix('\'')
            .or_else(|| rest.strip_prefix("&#39;"))
            .unwrap_or_else(|| panic!("{what}: the apostrophe went missing at {at}: {rest:.40}"));
        assert!(
            rest.starts_with("&amp;"),
            "{what}: an unescaped ampersand at {at}: {rest:.40}"
        );
        shown += 1;
    }
    assert!(
        shown >= min,
        "{what} shows the hostile text {shown} times, expected at least {min}:\n{body}"
    );
}

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(3)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("policy")
}

/// One dead operation carrying `HOSTILE` in every text field an operator sees (with a step and
/// an attempt by a hostile worker), one pending one of the same kind, and a live worker that
/// handles neither.
async fn hostile_records(store: &PgStore) -> String {
    let now = store.now().await.expect("now");
    let new = |key: &str| {
        NewOperation::new(
            HOSTILE,
            json!({ "note": HOSTILE }),
            &policy(),
            EnqueueOptions {
                idempotency_key: Some(format!("{HOSTILE}{key}")),
                dependency: Some(HOSTILE.into()),
                ..Default::default()
            },
            now,
        )
        .expect("new operation")
    };
    store
        .operation_insert_many(vec![new("dead")])
        .await
        .expect("enqueue");
    let claimed = store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![HOSTILE.into()],
            limit: 1,
            claimant: Claimant {
                worker_id: HOSTILE.into(),
                code_version: Some(HOSTILE.into()),
                lease: Duration::seconds(30),
            },
        })
        .await
        .expect("claim");
    let op = &claimed[0];
    let token = op.claim_token.expect("claimed");
    store
        .operation_step_save(StepSaveParams {
            id: op.id,
            claim_token: token,
            name: HOSTILE.into(),
            output: json!({ "echo": HOSTILE }),
        })
        .await
        .expect("step");
    let error = OperationError::new(HOSTILE)
        .field(HOSTILE)
        .decision(HOSTILE)
        .next_action(HOSTILE);
    store
        .operation_complete(CompleteParams {
            id: op.id,
            claim_token: token,
            transition: Transition::dead(
                TerminalReason::Permanent,
                Some(Failure::permanent(error)),
            ),
        })
        .await
        .expect("dead");
    store
        .operation_insert_many(vec![new("pending")])
        .await
        .expect("enqueue");
    store
        .worker_beat(WorkerBeatParams {
            id: HOSTILE.into(),
            host: HOSTILE.into(),
            pid: 1,
            kinds: vec![format!("{HOSTILE}.other")],
            code_version: Some(HOSTILE.into()),
            started_at: Utc::now(),
        })
        .await
        .expect("worker beat");
    op.id.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_in_records_comes_out_escaped_on_every_page_that_shows_it() {
    let store = fresh_store().await;
    let dead = hostile_records(&store).await;
    let app = dashboard(&store, Some(TOKEN)).router();
    let h = encoded();

    // An operator whose name is the hostile string signs in and pauses the hostile kind with a
    // hostile reason.
    let r = post(
        &app,
        "/login",
        None,
        format!("name={h}&token={TOKEN}&next=%2F"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let set = r.cookie.expect("session cookie");
    let cookie = set.split(';').next().unwrap().to_owned();
    let csrf = csrf_of(&get(&app, "/controls", &cookie).await.body);
    let r = post(
        &app,
        "/controls/pause",
        Some(&cookie),
        format!("csrf={csrf}&scope=kind&value={h}&reason={h}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    // Each page, and the places it shows the hostile text; the signed-in name in the header is
    // one on every page.
    for (path, min) in [
        // The control in force, the kind no worker handles, the held-back work beside the
        // oldest eligible, dead per kind;
        // the worker's id, host, version and kinds; attempts by dependency and deaths by code
        // version (badges: class and text).
        ("/".to_owned(), 13),
        // The kind of both operations, and the dead one's last error (text and title).
        ("/operations".to_owned(), 5),
        // The filter's fields echo what was typed; the dead operation matches.
        (format!("/operations?kind={h}&error={h}"), 6),
        // Crumbs; kind, dependency, key, code version, worker; the error's summary, field,
        // decision and next action; the attempt's error, worker and code version; the step's
        // name and output; the payload, and the dependency and key in the enqueue options.
        (format!("/operations/{dead}"), 20),
        // The filter's fields; the group's kind; the sample's kind and error.
        (format!("/dead?kind={h}&dependency={h}"), 6),
        // The filter as a sentence; the group; the sample; the confirmation's hidden fields.
        (format!("/redrive?kind={h}&error={h}"), 8),
        // The control's value, actor and reason, and the resume form's hidden value.
        ("/controls".to_owned(), 5),
        // The confirmation's hidden fields.
        (format!("/quarantine?kind={h}&dependency={h}"), 3),
    ] {
        let r = get(&app, &path, &cookie).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
        assert_escaped(&path, &r.body, min);
    }

    // Re-driving it leaves a note in the audit log; its progress page names the filter and the
    // operator.
    let r = post(
        &app,
        "/redrive",
        Some(&cookie),
        format!("csrf={csrf}&kind={h}&expected=1&mode=as_new&note={h}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let job = r.location.expect("the job's page");
    let mut progress = String::new();
    for _ in 0..100 {
        progress = get(&app, &job, &cookie).await.body;
        if progress.contains(r#"data-finished="true""#) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(progress.contains("1 of 1 re-driven"), "{progress}");
    // The filter, the actor, and the name in the header.
    assert_escaped("the re-drive's progress", &progress, 3);
    // Actor, filter and reason (the note) of the pause and of the re-drive.
    let audit = get(&app, "/audit", &cookie).await.body;
    assert_escaped("/audit", &audit, 7);

    // A recurring kind with the hostile name: the schedules page shows it escaped.
    store
        .schedule_declare(oprec_core::schedule::ScheduleDeclareParams {
            declared_by: HOSTILE.into(),
            schedules: vec![oprec_core::schedule::ScheduleDeclaration {
                kind: HOSTILE.into(),
                schedule: oprec_core::Schedule::cron("*/5 * * * *").unwrap(),
            }],
            unscheduled: vec![],
        })
        .await
        .unwrap();
    let schedules = get(&app, "/schedules", &cookie).await;
    assert_eq!(schedules.status, StatusCode::OK, "{}", schedules.body);
    assert!(schedules.body.contains("*/5 * * * *"), "{}", schedules.body);
    assert!(
        schedules.body.contains("no live worker runs the kind"),
        "{}",
        schedules.body
    );
    assert_escaped("/schedules", &schedules.body, 1);
}
