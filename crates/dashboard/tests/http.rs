//! The dashboard over HTTP against a real PostgreSQL (a fresh schema per test): who may change
//! things (token, session, CSRF, cross-site refusal, read-only mode), who may read (the Host a
//! request names, read-requires-token), sessions ended by signing out, throttled wrong tokens,
//! that a refused request changes nothing in the database, hostile filters, keyset pagination
//! and readable errors.

mod common;

use std::time::Duration as StdDuration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{TOKEN, count_in, csrf_of, dashboard, fresh_store, seed};
use oprec_core::operator::{AuditListParams, OperationFilter, RedriveMode, RedriveParams};
use oprec_core::store::ListParams;
use oprec_core::{OperatorStore, Status, Store};
use tower::ServiceExt;

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn send(app: &Router, req: Request<Body>) -> Reply {
    let res = app.clone().oneshot(req).await.expect("response");
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = axum::body::to_bytes(res.into_body(), 8 << 20)
        .await
        .expect("body");
    Reply {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).expect("utf-8 body"),
    }
}

async fn get(app: &Router, path: &str, cookie: Option<&str>) -> Reply {
    let mut r = Request::get(path).header(header::HOST, "127.0.0.1:8080");
    if let Some(c) = cookie {
        r = r.header(header::COOKIE, c);
    }
    send(app, r.body(Body::empty()).unwrap()).await
}

/// The address a page's link with this element id points to, unescaped.
fn link(body: &str, id: &str) -> Option<String> {
    let marker = format!(r#"id="{id}" href=""#);
    body.find(&marker).map(|at| {
        let rest = &body[at + marker.len()..];
        rest[..rest.find('"').unwrap()].replace("&amp;", "&")
    })
}

/// The operation ids a list page links to, top to bottom.
fn listed_ids(body: &str) -> Vec<String> {
    body.match_indices(r#"<a href="/operations/"#)
        .map(|(i, m)| body[i + m.len()..i + m.len() + 36].to_owned())
        .collect()
}

fn form_post(path: &str) -> axum::http::request::Builder {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "127.0.0.1:8080")
}

async fn post(app: &Router, req: axum::http::request::Builder, body: &str) -> Reply {
    send(app, req.body(Body::from(body.to_owned())).unwrap()).await
}

/// Signs in as `name`; returns the cookie header value and a CSRF token from a page.
async fn sign_in(app: &Router, name: &str) -> (String, String) {
    let r = post(
        app,
        form_post("/login").header("sec-fetch-site", "same-origin"),
        &format!("name={name}&token={TOKEN}&next=%2Fcontrols"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.headers[header::LOCATION], "/controls");
    let set = r.headers[header::SET_COOKIE].to_str().unwrap().to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap().to_owned();
    let page = get(app, "/controls", Some(&cookie)).await;
    assert!(page.body.contains(name), "signed in as {name}");
    (cookie.clone(), csrf_of(&page.body))
}

/// The filter of one kind's operations.
fn of_kind(kind: &str) -> OperationFilter {
    OperationFilter {
        kinds: vec![kind.to_owned()],
        ..Default::default()
    }
}

fn webhooks() -> OperationFilter {
    of_kind("webhook.deliver")
}

const REDRIVE_FORM: &str = "kind=webhook.deliver&expected=1000&mode=in_place";

/// Waits for a re-drive job page to say it finished.
async fn wait_job(app: &Router, location: &str, cookie: Option<&str>) -> String {
    for _ in 0..100 {
        let page = get(app, location, cookie).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        if page.body.contains(r#"data-finished="true""#) {
            return page.body;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    panic!("the re-drive at {location} did not finish in 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutating_route_without_the_token_is_401_and_changes_nothing() {
    let store = fresh_store().await;
    let seeded = seed(&store, 40).await;
    let dead_before = count_in(&store, &webhooks(), Status::Dead).await;
    assert_eq!(dead_before, seeded.dead_webhooks.len() as u64);
    // Every route gets a wrong token: more than the sign-in throttle lets one address try, which
    // `wrong_tokens_are_throttled_then_trying_recovers` tests on its own.
    let app = oprec_dashboard::Dashboard {
        sign_in_limits: oprec_dashboard::SignInLimits {
            per_address_burst: 100,
            global_burst: 100,
            ..Default::default()
        },
        ..dashboard(&store, Some(TOKEN))
    }
    .router();
    for (path, body) in [
        ("/redrive", REDRIVE_FORM),
        ("/controls/pause", "scope=kind&value=email.send"),
        ("/controls/resume", "scope=kind&value=email.send"),
        ("/quarantine", "kind=email.send&reason=x&expected=10"),
        ("/transport/purge", "confirm=purge"),
        ("/jobs/0123/stop", ""),
        ("/bulk", "kind=email.send&action=cancel&expected=100"),
        (
            "/operations/0190c3e4-8a7b-7c3d-9e2f-0123456789ab/act",
            "action=cancel",
        ),
    ] {
        // No credentials at all, a wrong bearer token, and a forged cookie.
        for auth in [
            None,
            Some((
                header::AUTHORIZATION,
                "Bearer not-the-token-at-all".to_owned(),
            )),
            Some((header::COOKIE, "oprec_session=1.61.00.ff".to_owned())),
        ] {
            let mut req = form_post(path);
            if let Some((h, v)) = &auth {
                req = req.header(h, v);
            }
            let r = post(&app, req, body).await;
            assert_eq!(
                r.status,
                StatusCode::UNAUTHORIZED,
                "{path} {auth:?}: {}",
                r.body
            );
            assert!(r.body.contains("Nothing was changed"), "{}", r.body);
            assert!(
                !r.body.contains("panicked") && !r.body.contains("src/"),
                "{}",
                r.body
            );
        }
    }
    assert_eq!(
        count_in(&store, &webhooks(), Status::Dead).await,
        dead_before
    );
    assert!(store.control_list().await.unwrap().is_empty(), "no pause");
    assert_eq!(
        count_in(&store, &of_kind("email.send"), Status::Held).await,
        1,
        "only the seeded configuration hold"
    );
    assert!(
        store
            .audit_list(AuditListParams {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap()
            .is_empty(),
        "no audit entry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_site_and_csrf_less_posts_are_refused() {
    let store = fresh_store().await;
    seed(&store, 30).await;
    let dead_before = count_in(&store, &webhooks(), Status::Dead).await;
    let app = dashboard(&store, Some(TOKEN)).router();
    let (cookie, csrf) = sign_in(&app, "alice").await;
    let body = format!("{REDRIVE_FORM}&csrf={csrf}");

    // A form posted from another site: the browser says so, or the Origin gives it away.
    for (h, v) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("origin", "http://evil.example"),
        ("origin", "null"),
    ] {
        let r = post(
            &app,
            form_post("/redrive")
                .header(header::COOKIE, &cookie)
                .header(h, v),
            &body,
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{h}: {v}");
        assert!(r.body.contains("Cross-site request refused"), "{}", r.body);
    }
    // Even a bearer token does not make a cross-site request acceptable.
    let r = post(
        &app,
        form_post("/controls/pause")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header("sec-fetch-site", "cross-site"),
        "scope=kind&value=email.send",
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // The session cookie without the form's CSRF token, or with another one.
    for bad in ["", "&csrf=", "&csrf=0000", &format!("&csrf={}x", csrf)] {
        let body = format!("{REDRIVE_FORM}{bad}");
        let r = post(
            &app,
            form_post("/redrive")
                .header(header::COOKIE, &cookie)
                .header("sec-fetch-site", "same-origin")
                .header("origin", "http://127.0.0.1:8080"),
            &body,
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "csrf {bad:?}");
        assert!(r.body.contains("CSRF"), "{}", r.body);
    }
    assert_eq!(
        count_in(&store, &webhooks(), Status::Dead).await,
        dead_before
    );
    assert!(
        store
            .audit_list(AuditListParams {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap()
            .is_empty()
    );

    // The same form, same-origin with its token, goes through: the refusals above were not
    // refusing everything.
    let r = post(
        &app,
        form_post("/redrive")
            .header(header::COOKIE, &cookie)
            .header("sec-fetch-site", "same-origin")
            .header("origin", "http://127.0.0.1:8080"),
        &body,
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let job = r.headers[header::LOCATION].to_str().unwrap().to_owned();
    let page = wait_job(&app, &job, Some(&cookie)).await;
    assert!(
        page.contains(&format!("{dead_before} of {dead_before} re-driven")),
        "{page}"
    );
    assert_eq!(count_in(&store, &webhooks(), Status::Dead).await, 0);
    assert_eq!(
        count_in(&store, &webhooks(), Status::Pending).await,
        dead_before
    );
    let audit = store
        .audit_list(AuditListParams {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.actor, "dashboard:alice");
    assert_eq!(audit[0].entry.action, "redrive");
    assert_eq!(audit[0].entry.affected, dead_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_the_dashboard_is_read_only() {
    let store = fresh_store().await;
    seed(&store, 30).await;
    let dead_before = count_in(&store, &webhooks(), Status::Dead).await;
    let app = dashboard(&store, None).router();
    let overview = get(&app, "/", None).await;
    assert_eq!(overview.status, StatusCode::OK);
    assert!(overview.body.contains("read-only"));
    // No worker ran the seeded backlog: the overview says so first.
    assert!(
        overview.body.contains(r#"id="unhandled""#),
        "{}",
        overview.body
    );
    assert!(overview.body.contains("No worker seen"));
    let preview = get(&app, "/redrive?kind=webhook.deliver", None).await;
    assert_eq!(preview.status, StatusCode::OK);
    assert!(
        preview
            .body
            .contains(&format!(r#"id="matched">{dead_before}<"#)),
        "{}",
        preview.body
    );
    assert!(!preview.body.contains("redrive-form"), "no confirm form");
    assert!(preview.body.contains("Read-only"));
    let controls = get(&app, "/controls", None).await;
    assert!(!controls.body.contains("pause-form"));
    assert_eq!(
        get(&app, "/login", None).await.status,
        StatusCode::FORBIDDEN
    );
    for (path, body) in [
        ("/redrive", REDRIVE_FORM),
        ("/controls/pause", "scope=kind&value=email.send"),
    ] {
        let r = post(
            &app,
            form_post(path).header(header::AUTHORIZATION, format!("Bearer {TOKEN}")),
            body,
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}");
        assert!(r.body.contains("Read-only dashboard"), "{}", r.body);
    }
    assert_eq!(
        count_in(&store, &webhooks(), Status::Dead).await,
        dead_before
    );
    assert!(store.control_list().await.unwrap().is_empty());
    assert!(
        store
            .audit_list(AuditListParams {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_acts_and_the_audit_log_names_the_actor() {
    let store = fresh_store().await;
    seed(&store, 30).await;
    let app = dashboard(&store, Some(TOKEN)).router();
    let r = post(
        &app,
        form_post("/controls/pause")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header("x-oprec-actor", "runbook-bot"),
        "scope=dependency&value=stripe&until=2h&reason=provider+incident+412",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let controls = store.control_list().await.unwrap();
    assert_eq!(controls.len(), 1);
    assert_eq!(controls[0].value, "stripe");
    assert_eq!(controls[0].actor, "dashboard:runbook-bot");
    assert!(controls[0].until.is_some());
    let page = get(&app, "/controls?done=pause&n=3", None).await;
    assert!(page.body.contains("Paused. 3 unfinished"));
    assert!(page.body.contains("stripe"));
    // Resume with a bad scope is a readable 400, and changes nothing.
    let r = post(
        &app,
        form_post("/controls/resume").header(header::AUTHORIZATION, format!("Bearer {TOKEN}")),
        "scope=everything&value=stripe",
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("kind, failure_class or dependency"));
    assert_eq!(store.control_list().await.unwrap().len(), 1);
    let r = post(
        &app,
        form_post("/controls/resume")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header("x-oprec-actor", "runbook-bot"),
        "scope=dependency&value=stripe",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(store.control_list().await.unwrap().is_empty());
    let audit = store
        .audit_list(AuditListParams {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let actions: Vec<(&str, &str)> = audit
        .iter()
        .map(|a| (a.entry.action.as_str(), a.entry.actor.as_str()))
        .collect();
    assert_eq!(
        actions,
        vec![
            ("resume", "dashboard:runbook-bot"),
            ("pause", "dashboard:runbook-bot")
        ]
    );
    let audit_page = get(&app, "/audit", None).await;
    assert!(audit_page.body.contains("dashboard:runbook-bot"));
    assert!(audit_page.body.contains("provider incident 412"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_at_sign_in_is_refused() {
    let store = fresh_store().await;
    let app = dashboard(&store, Some(TOKEN)).router();
    let r = post(
        &app,
        form_post("/login"),
        "name=mallory&token=guess-guess-guess-guess",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers.get(header::SET_COOKIE).is_none());
    assert!(r.body.contains("not the operator token"));
    let r = post(&app, form_post("/login"), &format!("name=&token={TOKEN}")).await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "a name is needed for the audit log"
    );
    assert!(r.headers.get(header::SET_COOKIE).is_none());
    // After sign-in, a redirect never leaves the dashboard.
    let r = post(
        &app,
        form_post("/login"),
        &format!("name=alice&token={TOKEN}&next=%2F%2Fevil.example"),
    )
    .await;
    assert_eq!(r.headers[header::LOCATION], "/");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_filters_get_a_clear_answer_or_nothing() {
    let store = fresh_store().await;
    seed(&store, 20).await;
    let app = dashboard(&store, Some(TOKEN)).router();
    for (path, expect) in [
        (
            "/operations?status=dead%27%20OR%201%3D1%20--",
            "unknown status",
        ),
        ("/operations?class=%3Cscript%3E", "unknown failure class"),
        ("/operations?reason=x", "unknown terminal reason"),
        (
            "/operations?after=..%2F..%2Fetc%2Fpasswd",
            "not an operation id",
        ),
        ("/operations?limit=99999999", "from 1 to 500"),
        ("/operations?since=yesterday", "that long ago"),
        ("/operations?since=1h&until=2h", "not before"),
        ("/operations/not-a-uuid", "not an operation id"),
        ("/dead?class=fatal", "unknown failure class"),
        ("/?hours=1000", "1 to 24 hours"),
        ("/quarantine", "needs a filter"),
    ] {
        let r = get(&app, path, None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}: {}", r.body);
        assert!(r.body.contains(expect), "{path}: {}", r.body);
        assert!(!r.body.contains("<script>"), "{path} echoed markup");
    }
    let long = "x".repeat(5000);
    let r = get(&app, &format!("/operations?error={long}"), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // The same limit as the CLI's `--error-contains`.
    assert!(r.body.contains("at most 1000"), "{}", r.body);
    // Text that looks like SQL or markup is only data: nothing matches, the table is intact.
    for path in [
        "/operations?kind=%27%3B%20DROP%20TABLE%20operations%3B%20--",
        "/operations?error=%25%25%25",
        "/operations?error=%27%20OR%20%271%27%3D%271",
        "/operations?kind=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E",
        "/dead?error=_%25",
    ] {
        let r = get(&app, path, None).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
        assert!(
            r.body.contains("No operation matches") || r.body.contains("No dead operation matches"),
            "{path}"
        );
        assert!(
            !r.body.contains("<img src=x"),
            "{path} echoed markup unescaped"
        );
    }
    let r = get(&app, "/operations?kind=%3Cimg%20src%3Dx%3E", None).await;
    assert!(
        r.body.contains("&lt;img src=x&gt;"),
        "the filter is shown escaped"
    );
    assert!(
        store.operation_count().await.unwrap().len() > 1,
        "operations intact"
    );
    // A known id that does not exist is a 404 with a sentence, not a trace.
    let r = get(&app, &format!("/operations/{}", uuid::Uuid::now_v7()), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.body.contains("No operation has the id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operations_list_pages_by_keyset_newest_first() {
    let store = fresh_store().await;
    let seeded = seed(&store, 24).await;
    let app = dashboard(&store, None).router();
    let all: Vec<String> = store
        .operation_list(ListParams {
            newest_first: true,
            limit: 10_000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.id.to_string())
        .collect();
    assert_eq!(all.len(), seeded.total);
    let mut seen = Vec::new();
    let mut path = "/operations?limit=40".to_owned();
    for page_no in 0.. {
        assert!(page_no < 10, "too many pages");
        let r = get(&app, &path, None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let ids = listed_ids(&r.body);
        assert!(ids.len() <= 40);
        seen.extend(ids);
        match link(&r.body, "older") {
            Some(older) => path = older,
            None => break,
        }
    }
    assert_eq!(seen, all, "every operation once, newest first");
    // And back up from the oldest page by the newer links, each page newest first.
    let mut back: Vec<String> = Vec::new();
    let mut path = Some(path);
    while let Some(p) = path {
        let r = get(&app, &p, None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        back.splice(0..0, listed_ids(&r.body));
        path = link(&r.body, "newer");
    }
    assert_eq!(
        back, all,
        "the newer links climb back to the newest, none skipped"
    );
    // Tabs count per status what each status's list shows (dead: not re-driven as new).
    let page = get(&app, "/operations", None).await.body;
    let tabs = &page[page.find(r#"id="status-tabs""#).expect("status tabs")..];
    let tabs = &tabs[..tabs.find("</nav>").unwrap()];
    for status in Status::ALL {
        let listed = store
            .operation_list(ListParams {
                status: Some(*status),
                limit: 10_000,
                ..Default::default()
            })
            .await
            .unwrap()
            .len();
        assert!(
            tabs.contains(&format!(
                ">{} {}</a>",
                status.as_str(),
                oprec_ops::number::count(listed as u64)
            )),
            "{status}: {listed} listed; {tabs}"
        );
    }
    let all = oprec_ops::number::count(seeded.total as u64);
    assert!(tabs.contains(&format!(">All {all}</a>")), "{tabs}");
    // Attempts read the same on the list and on the record (and in `oprec ops list`: the
    // operator library's one spelling).
    let dead = store
        .operation_list(ListParams {
            status: Some(Status::Dead),
            newest_first: true,
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .remove(0);
    assert!(dead.max_attempts.is_some(), "the seeded kinds are bounded");
    let spelled = oprec_ops::number::attempts(dead.attempt, dead.max_attempts);
    let list = get(&app, "/operations?status=dead&limit=1", None)
        .await
        .body;
    assert!(
        list.contains(&format!(r#"<td class="num">{spelled}</td>"#)),
        "{spelled}: {list}"
    );
    let record = get(&app, &format!("/operations/{}", dead.id), None)
        .await
        .body;
    assert!(
        record.contains(&format!("<dd>{spelled}</dd>")),
        "{spelled}: {record}"
    );
    // Filters hold across pages.
    let r = get(
        &app,
        "/operations?kind=webhook.deliver&status=dead&limit=5",
        None,
    )
    .await;
    assert!(
        r.body
            .contains("kind=webhook.deliver&amp;status=dead&amp;after=")
    );
    assert_eq!(r.body.matches(r#"<a href="/operations/"#).count(), 5);
}

/// A dead operation re-driven as new leaves the dead list (unless asked for), counts apart on the
/// overview, and links to its copy, which links back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redriven_original_links_to_its_copy_and_leaves_the_dead_list() {
    let store = fresh_store().await;
    let seeded = seed(&store, 12).await;
    let original = seeded.dead_webhooks[0];
    let now = store.now().await.unwrap();
    let out = store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: vec![original],
                ..Default::default()
            },
            include_cancelled: false,
            mode: RedriveMode::AsNew { deadline: None },
            limit: 1,
            start_at: now,
            spacing: chrono::Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    let copy = out[0].to;
    let app = dashboard(&store, None).router();

    let page = get(&app, &format!("/operations/{original}"), None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains(r#"id="redriven-as""#), "{}", page.body);
    assert!(page.body.contains(&format!(r#"href="/operations/{copy}""#)));
    assert!(
        !page.body.contains("redrive-one"),
        "no re-drive offered twice"
    );
    let back = get(&app, &format!("/operations/{copy}"), None).await;
    assert!(
        back.body
            .contains(&format!(r#"href="/operations/{original}""#))
    );

    let dead = get(&app, "/operations?status=dead&limit=500", None).await;
    assert!(
        !dead.body.contains(&original.to_string()),
        "awaiting action only"
    );
    assert!(dead.body.contains(&seeded.dead_webhooks[1].to_string()));
    let only = get(&app, "/operations?status=dead&redriven=only", None).await;
    assert!(only.body.contains(&original.to_string()), "{}", only.body);
    assert!(only.body.contains("re-driven →"), "{}", only.body);
    let bad = get(&app, "/operations?redriven=maybe", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    let dead_webhooks = seeded.dead_webhooks.len() as u64;
    let stats = store.stats().await.unwrap();
    assert_eq!(
        stats.dead_by_kind.get("webhook.deliver"),
        Some(&(dead_webhooks - 1))
    );
    assert_eq!(stats.dead_redriven_by_kind.get("webhook.deliver"), Some(&1));
    // The kind's dead tab counts the dead awaiting action, as the list and the overview do.
    let list = get(&app, "/operations?kind=webhook.deliver&status=dead", None).await;
    let tabs = &list.body[list.body.find(r#"id="status-tabs""#).unwrap()..];
    let tabs = &tabs[..tabs.find("</nav>").unwrap()];
    assert!(
        tabs.contains(&format!(">dead {}</a>", dead_webhooks - 1)),
        "{tabs}"
    );
    assert!(
        tabs.contains(r#"href="/operations?kind=webhook.deliver&amp;status=pending""#),
        "a tab keeps the other filters: {tabs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_schema_reads_as_a_next_step_not_a_trace() {
    let store = fresh_store().await;
    sqlx::query("DROP TABLE operation_attempts, operation_steps, operations CASCADE")
        .execute(store.pool())
        .await
        .expect("drop tables");
    let app = dashboard(&store, None).router();
    let r = get(&app, "/operations", None).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.body.contains("oprec migrate"), "{}", r.body);
    assert!(
        !r.body.contains("42P01") && !r.body.contains("relation"),
        "{}",
        r.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quarantine_and_purge_go_through_a_count_and_a_confirmation() {
    use oprec_core::Transport;
    let store = fresh_store().await;
    seed(&store, 20).await;
    let transport = std::sync::Arc::new(oprec_runtime::MemoryTransport::new());
    let pending_ids: Vec<_> = store
        .operation_list(ListParams {
            status: Some(Status::Pending),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|o| oprec_core::WakeUp::new(o.id, o.kind))
        .collect();
    assert!(!pending_ids.is_empty());
    transport.publish(&pending_ids).await.unwrap();
    let mut d = dashboard(&store, Some(TOKEN));
    d.transport = Some(transport.clone());
    d.transport_name = Some("memory://".into());
    let app = d.router();
    let (cookie, csrf) = sign_in(&app, "bob").await;
    let same_origin = |path: &str| {
        form_post(path)
            .header(header::COOKIE, &cookie)
            .header("sec-fetch-site", "same-origin")
    };

    // The transport page says how many wake-ups wait and how many operations stay pending.
    let pending = pending_ids.len();
    let page = get(&app, "/transport", Some(&cookie)).await;
    assert!(
        page.body
            .contains(&format!(r#"id="depth">{pending} wake-ups waiting"#)),
        "{}",
        page.body
    );
    assert!(page.body.contains(r#"id="depth-by-kind""#), "{}", page.body);
    assert!(
        page.body.contains(&format!(
            "{pending} operations will remain pending in the store"
        )),
        "{}",
        page.body
    );
    // Without the typed confirmation nothing is purged.
    let r = post(
        &app,
        same_origin("/transport/purge"),
        &format!("csrf={csrf}&confirm=yes"),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(transport.depth(None).await.unwrap(), pending as u64);
    let r = post(
        &app,
        same_origin("/transport/purge"),
        &format!("csrf={csrf}&confirm=purge"),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(
        r.body.contains(&format!(
            "Purged {pending} wake-ups from memory://; {pending} operations are still pending"
        )),
        "{}",
        r.body
    );
    assert_eq!(transport.depth(None).await.unwrap(), 0);
    assert_eq!(
        count_in(&store, &OperationFilter::default(), Status::Pending).await,
        pending as u64,
        "no intent was lost"
    );

    // Quarantine: count, then confirm with a reason.
    let emails = OperationFilter {
        kinds: vec!["email.send".into()],
        ..Default::default()
    };
    let waiting = count_in(&store, &emails, Status::Pending).await;
    assert!(waiting > 0);
    let page = get(&app, "/quarantine?kind=email.send", Some(&cookie)).await;
    assert!(
        page.body
            .contains(&format!(r#"id="q-count">{waiting} pending operation"#)),
        "{}",
        page.body
    );
    let r = post(
        &app,
        same_origin("/quarantine"),
        &format!("csrf={csrf}&kind=email.send&expected={waiting}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "a reason is needed");
    assert_eq!(count_in(&store, &emails, Status::Pending).await, waiting);
    let r = post(
        &app,
        same_origin("/quarantine"),
        &format!("csrf={csrf}&kind=email.send&expected={waiting}&reason=smtp+relay+misrouted"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(count_in(&store, &emails, Status::Pending).await, 0);
    let page = get(
        &app,
        r.headers[header::LOCATION].to_str().unwrap(),
        Some(&cookie),
    )
    .await;
    assert!(
        page.body
            .contains(&format!("Quarantined {waiting} operations")),
        "{}",
        page.body
    );

    let audit = store
        .audit_list(AuditListParams {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let got: Vec<(&str, &str, u64)> = audit
        .iter()
        .map(|a| {
            (
                a.entry.action.as_str(),
                a.entry.actor.as_str(),
                a.entry.affected,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("quarantine", "dashboard:bob", waiting),
            ("transport_purge", "dashboard:bob", pending as u64)
        ]
    );
}

/// The alert log page: what was told to whom, newest first, escaped, filtered by status, and a
/// status it does not know is a readable 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alerts_page_says_what_was_told_to_whom() {
    use oprec_core::MaintenanceStore;
    use oprec_core::alert::{AlertDelivery, AlertEvent, AlertRecordParams, NewAlert};
    let store = fresh_store().await;
    let app = dashboard(&store, None).router();
    let empty = get(&app, "/alerts", None).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("No alert matches"), "{}", empty.body);
    let now = store.now().await.unwrap();
    let alert = |subject: &str, summary: &str, delivery: Option<AlertDelivery>| NewAlert {
        event: AlertEvent::Held,
        subject: subject.into(),
        operation_id: Some(oprec_core::OperationId::new()),
        kind: Some("charge".into()),
        dependency: Some("stripe".into()),
        summary: summary.into(),
        next_action: Some("rotate the key".into()),
        source_at: now,
        delivery,
    };
    store
        .alert_record(AlertRecordParams {
            alerts: vec![
                alert(
                    "held:a:1",
                    "<script>alert(1)</script> key revoked",
                    Some(AlertDelivery {
                        route: "dependency:stripe".into(),
                        target: Some("https://hooks.example".into()),
                        failure: None,
                    }),
                ),
                alert(
                    "held:b:1",
                    "second hold",
                    Some(AlertDelivery {
                        route: "default".into(),
                        target: Some("log".into()),
                        failure: Some(("webhook answered 503".into(), now)),
                    }),
                ),
            ],
        })
        .await
        .unwrap();
    let page = get(&app, "/alerts", None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("dependency:stripe"), "{}", page.body);
    assert!(page.body.contains("https://hooks.example"));
    assert!(page.body.contains("rotate the key"));
    assert!(page.body.contains("webhook answered 503"));
    assert!(!page.body.contains("<script>alert(1)</script>"));
    assert!(page.body.contains("&lt;script&gt;"));
    let failed = get(&app, "/alerts?status=failed", None).await;
    assert!(failed.body.contains("second hold"));
    assert!(!failed.body.contains("key revoked"));
    let bad = get(&app, "/alerts?status=exploded", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body.contains("expected one of: pending, sent, failed"),
        "{}",
        bad.body
    );
}

/// A GET naming `host` (or no Host at all), from `peer` when given.
async fn get_as(app: &Router, path: &str, host: Option<&str>, auth: Option<&str>) -> Reply {
    let mut r = Request::get(path);
    if let Some(h) = host {
        r = r.header(header::HOST, h);
    }
    if let Some(a) = auth {
        r = r.header(header::AUTHORIZATION, a);
    }
    send(app, r.body(Body::empty()).unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_requests_naming_the_dashboard_are_answered() {
    let store = fresh_store().await;
    let seeded = seed(&store, 10).await;
    let op = format!("/operations/{}", seeded.dead_webhooks[0]);
    let app = dashboard(&store, Some(TOKEN)).router();
    for host in [
        "127.0.0.1:8080",
        "127.0.0.1",
        "127.9.9.9:8080",
        "localhost:8080",
        "LocalHost",
        "[::1]:8080",
        "[::1]",
    ] {
        let r = get_as(&app, &op, Some(host), None).await;
        assert_eq!(r.status, StatusCode::OK, "{host}: {}", r.body);
        assert!(r.body.contains("hooks.partner.example"), "{host}");
    }
    // A page on attacker.example whose name now points at 127.0.0.1 (DNS rebinding).
    for host in [
        "attacker.example",
        "attacker.example:8080",
        "localhost.attacker.example:8080",
        "10.1.2.3:8080",
    ] {
        for path in [op.as_str(), "/", "/login", "/assets/style.css"] {
            let r = get_as(&app, path, Some(host), None).await;
            assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST, "{host}{path}");
            assert_eq!(r.headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
            assert_eq!(r.body.lines().count(), 1, "one line: {}", r.body);
            assert!(r.body.contains("--allowed-host"), "{}", r.body);
            assert!(!r.body.contains("hooks.partner.example") && !r.body.contains("<"));
            assert_eq!(r.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        }
    }
    // Nor may such a page sign in or act, even with the token.
    let r = post(
        &app,
        Request::post("/controls/pause")
            .header(header::HOST, "attacker.example")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}")),
        "scope=kind&value=email.send",
    )
    .await;
    assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST);
    assert!(store.control_list().await.unwrap().is_empty());
    // No Host, or one that is not a host.
    for host in [None, Some("localhost:8080:80"), Some("[::1")] {
        let r = get_as(&app, "/", host, None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{host:?}");
        assert!(r.body.contains("--allowed-host"), "{}", r.body);
    }
    // A configured name (a proxy's, or the machine's) is answered, and only that one.
    let mut d = dashboard(&store, Some(TOKEN));
    d.allowed_hosts = vec!["ops.example.com".into(), "[2001:db8::5]".into()];
    let app = d.router();
    for host in [
        "ops.example.com",
        "OPS.example.com:8443",
        "[2001:db8::5]:8080",
        "[::1]:8080",
    ] {
        let r = get_as(&app, &op, Some(host), None).await;
        assert_eq!(r.status, StatusCode::OK, "{host}: {}", r.body);
    }
    for host in ["attacker.example", "www.ops.example.com", "[2001:db8::6]"] {
        let r = get_as(&app, &op, Some(host), None).await;
        assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST, "{host}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_on_ipv6_loopback_it_answers_its_address_and_refuses_other_names() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let store = fresh_store().await;
    let listener = tokio::net::TcpListener::bind("[::1]:0")
        .await
        .expect("bind ::1");
    let addr = listener.local_addr().unwrap();
    tokio::spawn(dashboard(&store, None).serve(listener, std::future::pending()));
    let ask = |host: String| async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        answer
    };
    let ok = ask(addr.to_string()).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let refused = ask(format!("attacker.example:{}", addr.port())).await;
    assert!(refused.starts_with("HTTP/1.1 421"), "{refused}");
    assert!(refused.contains("--allowed-host"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captured_cookie_stops_working_after_sign_out() {
    let store = fresh_store().await;
    seed(&store, 10).await;
    let app = dashboard(&store, Some(TOKEN)).router();
    let (cookie, csrf) = sign_in(&app, "alice").await;
    let (other, _) = sign_in(&app, "bob").await;
    let r = post(
        &app,
        form_post("/logout")
            .header("sec-fetch-site", "same-origin")
            .header(header::COOKIE, &cookie),
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(
        r.headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    // Someone who copied the cookie before sign-out replays it, with the form's CSRF token.
    let r = post(
        &app,
        form_post("/controls/pause").header(header::COOKIE, &cookie),
        &format!("scope=kind&value=email.send&reason=x&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert!(r.body.contains("Nothing was changed"));
    let page = get(&app, "/controls", Some(&cookie)).await;
    assert!(!page.body.contains("alice") && page.body.contains("Sign in"));
    assert!(
        !page.body.contains(r#"name="csrf""#),
        "no form for a dead session"
    );
    assert!(
        store.control_list().await.unwrap().is_empty(),
        "nothing paused"
    );
    // Signing out again, or with a forged cookie, is harmless; bob's session is untouched.
    for c in [cookie.as_str(), "oprec_session=1.61.00.ff"] {
        let r = post(&app, form_post("/logout").header(header::COOKIE, c), "").await;
        assert_eq!(r.status, StatusCode::SEE_OTHER);
    }
    let page = get(&app, "/controls", Some(&other)).await;
    assert!(page.body.contains("bob"), "another session stays open");
}

fn from(addr: &str, req: axum::http::request::Builder) -> axum::http::request::Builder {
    let peer: std::net::SocketAddr = addr.parse().unwrap();
    req.extension(axum::extract::ConnectInfo(peer))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_are_throttled_then_trying_recovers() {
    let store = fresh_store().await;
    let mut d = dashboard(&store, Some(TOKEN));
    d.sign_in_limits = oprec_dashboard::SignInLimits {
        per_address_burst: 3,
        per_address_every: StdDuration::from_secs(1),
        global_burst: 100,
        global_every: StdDuration::from_secs(1),
    };
    let app = d.router();
    let attacker = "192.0.2.66:50000";
    let wrong = "name=mallory&token=guess-guess-guess-guess";
    for i in 0..3 {
        let r = post(&app, from(attacker, form_post("/login")), wrong).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "guess {i}");
    }
    // The fourth try is refused before the token is looked at: even the right one.
    for body in [wrong.to_owned(), format!("name=mallory&token={TOKEN}")] {
        let r = post(&app, from(attacker, form_post("/login")), &body).await;
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
        assert_eq!(r.headers[header::RETRY_AFTER], "1");
        assert!(r.headers.get(header::SET_COOKIE).is_none());
        assert!(r.body.contains("try again in 1 s"), "{}", r.body);
    }
    // A bearer token from the same address is the same guess by other means.
    let r = post(
        &app,
        from(attacker, form_post("/controls/pause"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}")),
        "scope=kind&value=email.send",
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(store.control_list().await.unwrap().is_empty());
    // The operator at another address signs in meanwhile.
    let r = post(
        &app,
        from("192.0.2.10:40000", form_post("/login")),
        &format!("name=alice&token={TOKEN}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    // After Retry-After, trying works again.
    tokio::time::sleep(StdDuration::from_millis(1100)).await;
    let r = post(
        &app,
        from(attacker, form_post("/login")),
        &format!("name=alice&token={TOKEN}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);

    // Guesses spread over many addresses run out the global budget.
    let mut d = dashboard(&store, Some(TOKEN));
    d.sign_in_limits = oprec_dashboard::SignInLimits {
        per_address_burst: 100,
        per_address_every: StdDuration::from_secs(1),
        global_burst: 4,
        global_every: StdDuration::from_secs(30),
    };
    let app = d.router();
    for i in 0..4 {
        let addr = format!("198.51.100.{i}:1000");
        let r = post(&app, from(&addr, form_post("/login")), wrong).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
    let r = post(
        &app,
        from("203.0.113.9:1000", form_post("/login")),
        &format!("name=alice&token={TOKEN}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers[header::RETRY_AFTER], "30");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_can_require_the_token() {
    let store = fresh_store().await;
    let seeded = seed(&store, 10).await;
    let op = format!("/operations/{}", seeded.dead_webhooks[0]);
    let mut d = dashboard(&store, Some(TOKEN));
    d.read_requires_token = true;
    let app = d.router();
    // Every page, the payload's included, sends a browser to sign in and back.
    for path in [
        "/",
        "/operations",
        op.as_str(),
        "/dead",
        "/redrive?kind=webhook.deliver",
        "/controls",
        "/transport",
        "/schedules",
        "/audit",
        "/alerts",
        "/no-such-page",
    ] {
        let r = get(&app, path, None).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}: {}", r.body);
        let to = r.headers[header::LOCATION].to_str().unwrap();
        assert!(to.starts_with("/login?next=%2F"), "{to}");
        assert!(!r.body.contains("hooks.partner.example") && !r.body.contains("webhook"));
    }
    // Sign-in and the assets stay readable.
    let login = get(&app, "/login?next=%2Fdead", None).await;
    assert_eq!(login.status, StatusCode::OK);
    assert!(login.body.contains("shows nothing without sign-in"));
    assert_eq!(
        get(&app, "/assets/style.css", None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(&app, "/assets/app.js", None).await.status,
        StatusCode::OK
    );
    // A script reads with the bearer token; a wrong one is a 401.
    let r = get_as(
        &app,
        &op,
        Some("localhost"),
        Some(&format!("Bearer {TOKEN}")),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("hooks.partner.example"));
    let r = get_as(
        &app,
        &op,
        Some("localhost"),
        Some("Bearer not-the-token-at-all"),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(!r.body.contains("hooks.partner.example"));
    // A forged cookie reads nothing; a session reads everything, until it signs out.
    let r = get(&app, &op, Some("oprec_session=1.61.00.ff")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let (cookie, _) = sign_in(&app, "alice").await;
    let r = get(&app, &op, Some(&cookie)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("hooks.partner.example"));
    post(
        &app,
        form_post("/logout").header(header::COOKIE, &cookie),
        "",
    )
    .await;
    let r = get(&app, &op, Some(&cookie)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    // A post without a session is refused before any handler looks at it.
    let r = post(
        &app,
        form_post("/controls/pause"),
        "scope=kind&value=email.send",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(store.control_list().await.unwrap().is_empty());
    // Without a token there is nothing to sign in with: nothing is readable.
    let mut d = dashboard(&store, None);
    d.read_requires_token = true;
    let r = get(&d.router(), &op, None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(!r.body.contains("hooks.partner.example"));
}

/// The limits across the fleet, with their use now, on the overview (beside each dependency's
/// attempts in the last hour) and on the controls page; none says how to set one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_and_their_use_are_shown_on_the_overview_and_the_controls() {
    use oprec_core::limit::LimitSetParams;
    use oprec_core::{LimitScope, LimitStore};
    let store = fresh_store().await;
    let app = dashboard(&store, None).router();
    let none = get(&app, "/controls", None).await;
    assert_eq!(none.status, StatusCode::OK);
    assert!(none.body.contains("id=\"no-limits\""), "{}", none.body);

    let set = |scope, value: &str, running, rate| LimitSetParams {
        scope,
        value: value.into(),
        max_running: running,
        per_second: rate,
        reason: Some("<b>provider quota</b>".into()),
        actor: "test".into(),
    };
    store
        .limit_set(set(LimitScope::Kind, "charge", Some(2), None))
        .await
        .unwrap();
    store
        .limit_set(set(LimitScope::Dependency, "stripe", None, Some(50)))
        .await
        .unwrap();
    let claimed = common::insert_and_claim(&store, "charge", 3, Some("stripe"), 10).await;
    assert_eq!(claimed.len(), 2, "the kind's limit of 2 holds the claim");

    for path in ["/", "/controls"] {
        let page = get(&app, path, None).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        let b = &page.body;
        assert!(b.contains("Limits across the fleet"), "{path}: {b}");
        assert!(
            b.contains("kind charge") && b.contains("2 of 2 running"),
            "{path}: {b}"
        );
        assert!(
            b.contains("dependency stripe") && b.contains("2 of 50 started in the last second"),
            "{path}: {b}"
        );
        assert!(!b.contains("<b>provider quota</b>") && b.contains("&lt;b&gt;provider"));
    }
    // The overview also shows the dependency's attempts of the last hour beside its limit.
    let overview = get(&app, "/", None).await.body;
    assert!(overview.contains("attempts (0.0/s)"), "{overview}");
}

/// The dry run answers "is it safe?" (first and last death, whether the dependency succeeded
/// since, distinct errors, a warning for a permanent group); a paced re-drive can be stopped from
/// its progress page, which then says who stopped it; the job's row records the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_says_whether_it_is_safe_and_a_running_redrive_can_be_stopped() {
    let store = fresh_store().await;
    let seeded = seed(&store, 40).await;
    let dead = seeded.dead_webhooks.len() as u64;
    assert!(dead >= 3, "the seed kills some webhooks");
    let app = dashboard(&store, Some(TOKEN)).router();
    let review = get(&app, "/redrive?kind=webhook.deliver", None).await;
    assert_eq!(review.status, StatusCode::OK, "{}", review.body);
    let b = &review.body;
    assert!(b.contains("Is it safe?"), "{b}");
    assert!(b.contains("First death") && b.contains("Last death"), "{b}");
    assert!(b.contains("Succeeded since"), "{b}");
    assert!(
        b.contains(r#"data-what="permanent""#) && b.contains("died of a permanent failure"),
        "the seeded 410s are permanent: {b}"
    );
    assert!(
        b.contains(r#"id="errors""#) && b.contains("Distinct errors"),
        "{b}"
    );

    // One a minute: the job releases the first and then waits for the next.
    let auth = format!("Bearer {TOKEN}");
    let r = post(
        &app,
        form_post("/redrive")
            .header(header::AUTHORIZATION, &auth)
            .header("x-oprec-actor", "oncall"),
        &format!("kind=webhook.deliver&expected={dead}&mode=in_place&rate=1&per=minute"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let location = r.headers[header::LOCATION].to_str().unwrap().to_owned();
    let mut running = String::new();
    for _ in 0..100 {
        running = get(&app, &location, None).await.body;
        if running.contains("1 of ") {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    assert!(running.contains("Re-drive running"), "{running}");
    // Without the token the page shows no stop button.
    assert!(!running.contains(r#"id="stop-form""#), "{running}");
    let r = post(
        &app,
        form_post(&format!("{location}/stop"))
            .header(header::AUTHORIZATION, &auth)
            .header("x-oprec-actor", "oncall"),
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let ended = wait_job(&app, &location, None).await;
    assert!(ended.contains("Re-drive stopped"), "{ended}");
    assert!(
        ended.contains("stopped by dashboard:oncall after releasing 1 of"),
        "{ended}"
    );
    assert!(ended.contains(r#"id="summary""#), "{ended}");
    // Stopping what has ended is refused, readably.
    let again = post(
        &app,
        form_post(&format!("{location}/stop")).header(header::AUTHORIZATION, &auth),
        "",
    )
    .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert!(again.body.contains("already ended"), "{}", again.body);
    assert_eq!(
        count_in(&store, &webhooks(), Status::Dead).await,
        dead - 1,
        "only the first was re-driven"
    );
}

/// The id of one operation of `status`.
async fn one_of(store: &oprec_postgres::PgStore, status: Status) -> String {
    store
        .operation_list(ListParams {
            status: Some(status),
            limit: 1,
            ..ListParams::default()
        })
        .await
        .unwrap()
        .first()
        .unwrap_or_else(|| panic!("the seed has a {status} operation"))
        .id
        .to_string()
}

/// A `refund.issue` operation whose attempt timed out after its request was written: reconciling.
async fn reconciling(store: &oprec_postgres::PgStore) -> String {
    use oprec_core::store::CompleteParams;
    use oprec_core::{Failure, Transition, WorkerStore};
    let claimed = common::insert_and_claim(store, "refund.issue", 1, None, 1).await;
    let c = &claimed[0];
    store
        .operation_complete_many(vec![CompleteParams {
            id: c.id,
            claim_token: c.claim_token.unwrap(),
            transition: Transition::reconcile(Failure::unknown(
                "timed out after the request was written",
            )),
        }])
        .await
        .unwrap();
    c.id.to_string()
}

/// An operation's page offers the actions its status calls for to a signed-in person: release
/// and cancel a held one, record an unknown outcome as applied (with the remote id) or not; each
/// changes the record and is audited under that person's name. Read-only viewers get no form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_page_releases_cancels_and_records_a_reconcile_decision() {
    let store = fresh_store().await;
    seed(&store, 40).await;
    let app = dashboard(&store, Some(TOKEN)).router();
    let (cookie, csrf) = sign_in(&app, "alice").await;
    let held = one_of(&store, Status::Held).await;
    let path = format!("/operations/{held}");
    let anonymous = get(&app, &path, None).await.body;
    assert!(anonymous.contains(r#"id="actions""#), "{anonymous}");
    assert!(!anonymous.contains(r#"id="release-form""#), "{anonymous}");
    let page = get(&app, &path, Some(&cookie)).await.body;
    assert!(page.contains(r#"id="release-form""#) && page.contains(r#"id="cancel-form""#));
    let act = |body: String| {
        let (app, cookie, path) = (app.clone(), cookie.clone(), path.clone());
        async move {
            post(
                &app,
                form_post(&format!("{path}/act"))
                    .header(header::COOKIE, &cookie)
                    .header("sec-fetch-site", "same-origin"),
                &body,
            )
            .await
        }
    };
    let r = act(format!("action=release&csrf={csrf}")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.headers[header::LOCATION], format!("{path}?done=released"));
    let after = get(&app, &format!("{path}?done=released"), Some(&cookie))
        .await
        .body;
    assert!(after.contains("Released: pending again"), "{after}");
    let status = |id: &str| {
        let (store, id) = (store.clone(), id.parse().unwrap());
        async move {
            store
                .operation_get(oprec_core::store::OperationGetParams { id })
                .await
                .unwrap()
                .unwrap()
                .operation
                .status
        }
    };
    assert_eq!(status(&held).await, Status::Pending);
    // Releasing again changes nothing and says so.
    let r = act(format!("action=release&csrf={csrf}")).await;
    assert_eq!(r.headers[header::LOCATION], format!("{path}?done=nothing"));
    let r = act(format!("action=cancel&reason=obsolete+config&csrf={csrf}")).await;
    assert_eq!(
        r.headers[header::LOCATION],
        format!("{path}?done=cancelled")
    );
    assert_eq!(status(&held).await, Status::Cancelled);
    // A word that is no action is refused, readably.
    let r = act(format!("action=explode&csrf={csrf}")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("Nothing was changed"), "{}", r.body);

    let unknown = reconciling(&store).await;
    let upath = format!("/operations/{unknown}");
    let page = get(&app, &upath, Some(&cookie)).await.body;
    assert!(page.contains(r#"id="resolve-form""#), "{page}");
    let r = post(
        &app,
        form_post(&format!("{upath}/act"))
            .header(header::COOKIE, &cookie)
            .header("sec-fetch-site", "same-origin"),
        &format!("action=applied&remote_id=inv_8812&reason=found+it&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.headers[header::LOCATION], format!("{upath}?done=applied"));
    let o = store
        .operation_get(oprec_core::store::OperationGetParams {
            id: unknown.parse().unwrap(),
        })
        .await
        .unwrap()
        .unwrap()
        .operation;
    assert_eq!(o.status, Status::Succeeded);
    assert_eq!(o.remote_id.as_deref(), Some("inv_8812"));
    // Resolving what is no longer reconciling is refused, and changes nothing.
    let r = post(
        &app,
        form_post(&format!("{upath}/act"))
            .header(header::COOKIE, &cookie)
            .header("sec-fetch-site", "same-origin"),
        &format!("action=not_applied&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let actions = common::audit_actions(&store, 10).await;
    let actions: Vec<(&str, &str)> = actions
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("reconcile_resolve", "dashboard:alice"),
            ("cancel", "dashboard:alice"),
            ("release", "dashboard:alice"),
        ]
    );
    // The audit log links each entry to the operations it names.
    let audit = get(&app, "/audit", None).await.body;
    for id in [&held, &unknown] {
        assert!(
            audit.contains(&format!(r#"href="/operations/{id}""#)),
            "{audit}"
        );
    }
}

/// A kind's row on the overview proposes a pause of that kind (the controls page's form filled
/// in, nothing changed until it is sent); the form also postpones a dependency until a time, and
/// refuses a postponement without one, or of a kind, as `oprec postpone` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_row_proposes_a_pause_and_a_dependency_is_postponed() {
    let store = fresh_store().await;
    seed(&store, 40).await;
    let app = dashboard(&store, Some(TOKEN)).router();
    let (cookie, csrf) = sign_in(&app, "alice").await;
    let overview = get(&app, "/", Some(&cookie)).await.body;
    let href = "/controls?scope=kind&amp;value=webhook.deliver#pause-form";
    assert!(overview.contains(href), "{overview}");
    let proposed = get(
        &app,
        "/controls?scope=kind&value=webhook.deliver",
        Some(&cookie),
    )
    .await
    .body;
    assert!(
        proposed.contains(r#"value="webhook.deliver""#)
            && proposed.contains(r#"<option value="kind" selected>"#),
        "{proposed}"
    );
    assert!(
        store.control_list().await.unwrap().is_empty(),
        "nothing yet"
    );
    let send = |body: String| {
        let (app, cookie) = (app.clone(), cookie.clone());
        async move {
            post(
                &app,
                form_post("/controls/pause")
                    .header(header::COOKIE, &cookie)
                    .header("sec-fetch-site", "same-origin"),
                &body,
            )
            .await
        }
    };
    for (body, says) in [
        (
            "action=postpone&scope=dependency&value=stripe",
            "needs a time to end",
        ),
        (
            "action=postpone&scope=kind&value=email.send&until=1h",
            "only a dependency is postponed",
        ),
        (
            "action=explode&scope=kind&value=email.send",
            "pauses or postpones",
        ),
    ] {
        let r = send(format!("{body}&csrf={csrf}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert!(r.body.contains(says), "{body}: {}", r.body);
    }
    assert!(store.control_list().await.unwrap().is_empty());
    let r = send(format!(
        "action=postpone&scope=dependency&value=stripe&until=30m&reason=incident&csrf={csrf}"
    ))
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert!(
        r.headers[header::LOCATION]
            .to_str()
            .unwrap()
            .starts_with("/controls?done=postpone&n="),
        "{:?}",
        r.headers
    );
    let controls = store.control_list().await.unwrap();
    assert_eq!(controls.len(), 1);
    assert_eq!(controls[0].action.as_str(), "postpone");
    assert!(controls[0].until.is_some());
}

/// The list shows the columns a status calls for (who holds a running operation and until when,
/// when a dead one ended, why a held one waits) and offers the kinds that exist to the kind field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_shows_the_columns_each_status_calls_for() {
    let store = fresh_store().await;
    seed(&store, 40).await;
    common::insert_and_claim(&store, "ledger.post", 2, None, 2).await;
    let app = dashboard(&store, None).router();
    let running = get(&app, "/operations?status=running", None).await.body;
    assert!(
        running.contains(">Worker<")
            && running.contains(">Lease until<")
            && running.contains(">w1<"),
        "{running}"
    );
    let dead = get(&app, "/operations?status=dead", None).await.body;
    assert!(
        dead.contains(">Ended<") && dead.contains(">Reason<"),
        "{dead}"
    );
    let held = get(&app, "/operations?status=held", None).await.body;
    assert!(
        held.contains(">Why held<") && held.contains(">Next action<"),
        "{held}"
    );
    let any = get(&app, "/operations", None).await.body;
    assert!(any.contains(">Created<"), "{any}");
    for kind in ["ledger.post", "webhook.deliver", "email.send"] {
        assert!(
            any.contains(&format!(r#"<option value="{kind}">"#)),
            "{kind} offered: {any}"
        );
    }
}

/// A filtered list offers to act on every match: the review counts what the action would touch
/// per status and changes nothing; confirming releases (or cancels) at most that many, audited
/// as the person; an action on no filter is refused, as on the command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_list_releases_and_cancels_its_matches_after_a_review() {
    use oprec_core::operator::QuarantineParams;
    let store = fresh_store().await;
    seed(&store, 40).await;
    common::insert(&store, "ledger.post", 5, None).await;
    let ledger = OperationFilter {
        kinds: vec!["ledger.post".into()],
        ..OperationFilter::default()
    };
    let held = store
        .operation_quarantine(QuarantineParams {
            filter: ledger.clone(),
            reason: "bad ledger import".into(),
            actor: "test".into(),
            limit: 3,
        })
        .await
        .unwrap();
    assert_eq!(held, 3);
    let app = dashboard(&store, Some(TOKEN)).router();
    let (cookie, csrf) = sign_in(&app, "alice").await;
    let list = get(&app, "/operations?kind=ledger.post", Some(&cookie))
        .await
        .body;
    assert!(
        list.contains("/bulk?kind=ledger.post&amp;action=release"),
        "{list}"
    );
    assert!(
        !get(&app, "/operations", None)
            .await
            .body
            .contains(r#"id="bulk""#)
    );

    let review = get(&app, "/bulk?kind=ledger.post&action=release", Some(&cookie)).await;
    assert_eq!(review.status, StatusCode::OK, "{}", review.body);
    assert!(
        review.body.contains("3 held operations would be released"),
        "{}",
        review.body
    );
    assert!(review.body.contains(r#"id="bulk-form""#));
    assert_eq!(
        count_in(&store, &ledger, Status::Held).await,
        3,
        "nothing yet"
    );
    let post_bulk = |body: String| {
        let (app, cookie) = (app.clone(), cookie.clone());
        async move {
            post(
                &app,
                form_post("/bulk")
                    .header(header::COOKIE, &cookie)
                    .header("sec-fetch-site", "same-origin"),
                &body,
            )
            .await
        }
    };
    // Confirming at most what the review showed: 2 of the 3.
    let r = post_bulk(format!(
        "kind=ledger.post&action=release&expected=2&note=fixed+importer&csrf={csrf}"
    ))
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(
        r.headers[header::LOCATION],
        "/operations?kind=ledger.post&done=release&n=2"
    );
    let after = get(
        &app,
        "/operations?kind=ledger.post&done=release&n=2",
        Some(&cookie),
    )
    .await
    .body;
    assert!(after.contains("Released 2"), "{after}");
    assert_eq!(count_in(&store, &ledger, Status::Held).await, 1);
    // Cancel: the waiting ones (4 pending, 1 held).
    let review = get(&app, "/bulk?kind=ledger.post&action=cancel", Some(&cookie))
        .await
        .body;
    assert!(
        review.contains("5 waiting (pending, held or reconciling) operations would be cancelled"),
        "{review}"
    );
    let r = post_bulk(format!(
        "kind=ledger.post&action=cancel&expected=5&csrf={csrf}"
    ))
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(count_in(&store, &ledger, Status::Cancelled).await, 5);
    // No filter, a bad action, or no count: refused, nothing changed.
    for (body, says) in [
        ("action=cancel&expected=10".to_owned(), "narrow it"),
        (
            "kind=email.send&action=purge&expected=1".to_owned(),
            "release or cancel",
        ),
        (
            "kind=email.send&action=cancel".to_owned(),
            "review it again",
        ),
    ] {
        let r = post_bulk(format!("{body}&csrf={csrf}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert!(r.body.contains(says), "{body}: {}", r.body);
    }
    let actions = common::audit_actions(&store, 10).await;
    let ours: Vec<&str> = actions
        .iter()
        .filter(|(_, actor)| actor == "dashboard:alice")
        .map(|(a, _)| a.as_str())
        .collect();
    assert_eq!(ours, ["cancel", "release"]);
}

/// The audit log filters by action and actor and pages older and newer by entry id, each page
/// newest first, the filter kept across pages; a hostile filter finds nothing and a page that
/// is not a number is a readable refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_filters_and_pages() {
    let store = fresh_store().await;
    for n in 0..250u64 {
        store
            .audit_insert(oprec_core::operator::AuditEntry {
                actor: if n % 2 == 0 { "alice" } else { "bob" }.into(),
                action: if n % 5 == 0 { "redrive" } else { "pause" }.into(),
                filter: serde_json::json!({ "n": n }),
                affected: n,
                reason: None,
                details: serde_json::json!({}),
            })
            .await
            .unwrap();
    }
    let app = dashboard(&store, None).router();
    // The entries' numbers on a page, top to bottom.
    let numbers = |body: &str| -> Vec<u64> {
        body.match_indices("{&quot;n&quot;:")
            .map(|(i, m)| {
                let rest = &body[i + m.len()..];
                rest[..rest.find('}').unwrap()].parse().unwrap()
            })
            .collect()
    };
    let first = get(&app, "/audit", None).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(numbers(&first.body), (150..250).rev().collect::<Vec<_>>());
    assert!(
        link(&first.body, "newer").is_none(),
        "the newest page has no newer"
    );
    // Older pages down to the first entry, every entry once.
    let (mut seen, mut path) = (numbers(&first.body), link(&first.body, "older"));
    let mut last_page = String::new();
    while let Some(p) = path {
        let r = get(&app, &p, None).await;
        assert_eq!(r.status, StatusCode::OK, "{p}: {}", r.body);
        seen.extend(numbers(&r.body));
        path = link(&r.body, "older");
        last_page = r.body;
    }
    assert_eq!(
        seen,
        (0..250).rev().collect::<Vec<_>>(),
        "every entry once, newest first"
    );
    // Back from the oldest page: the page just newer, still newest first.
    let newer = link(&last_page, "newer").expect("a newer link on an older page");
    let r = get(&app, &newer, None).await;
    assert_eq!(
        numbers(&r.body),
        (50..150).rev().collect::<Vec<_>>(),
        "{newer}"
    );
    // Filters, kept across pages.
    let r = get(&app, "/audit?action=redrive&actor=alice", None).await;
    let want: Vec<u64> = (0..250).rev().filter(|n| n % 10 == 0).collect();
    assert_eq!(numbers(&r.body), want);
    assert!(link(&r.body, "older").is_none(), "25 entries fit one page");
    let r = get(&app, "/audit?actor=bob", None).await;
    assert_eq!(numbers(&r.body).len(), 100);
    let older = link(&r.body, "older").unwrap();
    assert!(older.starts_with("/audit?actor=bob&older="), "{older}");
    let r = get(&app, &older, None).await;
    assert!(numbers(&r.body).iter().all(|n| n % 2 == 1), "only bob's");
    assert_eq!(numbers(&r.body).len(), 25);
    // Hostile and bad input.
    let r = get(&app, "/audit?action=pause%27%20OR%20%271%27%3D%271", None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("No audit entry matches."), "{}", r.body);
    let r = get(&app, "/audit?older=yesterday", None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(r.body.contains("could not be read"), "{}", r.body);
    let long = "x".repeat(201);
    let r = get(&app, &format!("/audit?actor={long}"), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(r.body.contains("printable characters"), "{}", r.body);
    assert_eq!(
        store
            .audit_list(AuditListParams {
                limit: 1000,
                ..Default::default()
            })
            .await
            .unwrap()
            .len(),
        250,
        "nothing was lost"
    );
    // Long details expand in place, whole; the operations an entry names link to them.
    let id = uuid::Uuid::now_v7().to_string();
    let notes: Vec<String> = (0..40).map(|i| format!("note {i}")).collect();
    store
        .audit_insert(oprec_core::operator::AuditEntry {
            actor: "carol".into(),
            action: "cancel".into(),
            filter: serde_json::json!({ "ids": [id] }),
            affected: 1,
            reason: None,
            details: serde_json::json!({ "notes": notes, "zz_tail": "the end of it" }),
        })
        .await
        .unwrap();
    let r = get(&app, "/audit?actor=carol", None).await;
    let row = &r.body[r.body.find("<strong>cancel</strong>").expect("the entry")..];
    let row = &row[..row.find("</tr>").unwrap()];
    let details = &row[row.find("<details>").expect("expandable details")..];
    let (summary, whole) = details.split_at(details.find("</summary>").unwrap());
    assert!(!summary.contains("the end of it"), "{summary}");
    assert!(whole.contains("the end of it"), "the whole entry: {whole}");
    assert!(
        row.contains(&format!(r#"href="/operations/{id}""#)),
        "linked to the operation it touched: {row}"
    );
}

/// A narrowed operations list offers the re-drive and quarantine reviews of what it matches (the
/// same filter, nothing moved until confirmed there); not with a time range, which bounds the
/// creation here and the end there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_narrowed_list_leads_to_the_redrive_and_quarantine_reviews() {
    let store = fresh_store().await;
    let seeded = seed(&store, 12).await;
    let app = dashboard(&store, None).router();
    let dead_now = || async {
        store
            .operation_list(ListParams {
                status: Some(Status::Dead),
                limit: 10_000,
                ..Default::default()
            })
            .await
            .unwrap()
            .len()
    };
    let dead_before = dead_now().await;
    let list = get(&app, "/operations?kind=webhook.deliver&status=dead", None)
        .await
        .body;
    let href = |id: &str| link(&list, id);
    let redrive = href("bulk-redrive").expect("a re-drive link");
    assert_eq!(redrive, "/redrive?kind=webhook.deliver");
    assert!(
        href("bulk-quarantine").is_none(),
        "dead operations are not quarantined"
    );
    let review = get(&app, &redrive, None).await;
    assert_eq!(review.status, StatusCode::OK, "{}", review.body);
    let dead = oprec_ops::number::count(seeded.dead_webhooks.len() as u64);
    assert!(
        review.body.contains(&dead),
        "the review counts the dead webhooks ({dead})"
    );
    let pending = get(
        &app,
        "/operations?kind=webhook.deliver&status=pending",
        None,
    )
    .await
    .body;
    assert!(
        pending.contains(r#"id="bulk-quarantine" href="/quarantine?kind=webhook.deliver""#),
        "{pending}"
    );
    let timed = get(&app, "/operations?kind=webhook.deliver&since=2h", None)
        .await
        .body;
    assert!(!timed.contains("bulk-redrive") && !timed.contains("bulk-quarantine"));
    assert_eq!(dead_now().await, dead_before, "nothing moved by looking");
}

/// The address of the link a screen reader names `label`, unescaped.
fn labelled(body: &str, label: &str) -> Option<String> {
    let at = body.find(&format!(r#"aria-label="{label}""#))?;
    let before = &body[..at];
    let start = before.rfind(r#"href=""#)? + r#"href=""#.len();
    let rest = &body[start..];
    Some(rest[..rest.find('"')?].replace("&amp;", "&"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_grouped_by_error_message_with_their_deaths_and_links() {
    let store = fresh_store().await;
    let seeded = seed(&store, 40).await;
    let app = dashboard(&store, None).router();
    let dead = get(&app, "/dead", None).await;
    assert_eq!(dead.status, StatusCode::OK, "{}", dead.body);
    let b = &dead.body;
    let table = &b[b.find(r#"id="errors""#).expect("the errors table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(
        table.contains("First death") && table.contains("Last death"),
        "{table}"
    );
    // The partner's 410: a group of its own, its first and last death those of the dead webhooks.
    let error = "410 Gone: partner endpoint https://hooks.partner.example/orders was removed";
    let row = &table[table.find(error).expect("the 410 group")..];
    let row = &row[..row.find("</tr>").unwrap()];
    let (first, last): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) =
        sqlx::query_as(
            "SELECT min(terminal_at), max(terminal_at) FROM operations \
             WHERE kind = 'webhook.deliver' AND status = 'dead'",
        )
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert!(first < last, "the seed kills webhooks over its 40 minutes");
    let times: Vec<&str> = row
        .match_indices(r#"<time datetime=""#)
        .map(|(i, m)| {
            let rest = &row[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(
        times,
        [first.to_rfc3339(), last.to_rfc3339()],
        "first and last death: {row}"
    );
    // Its list shows exactly those operations; its review re-drives exactly those.
    let group = format!("webhook.deliver, {error}");
    let list = labelled(table, &format!("List {group}")).expect("a list link");
    let listed = get(&app, &list, None).await;
    assert_eq!(listed.status, StatusCode::OK, "{list}: {}", listed.body);
    let mut ids = listed_ids(&listed.body);
    ids.sort();
    let mut want: Vec<String> = seeded.dead_webhooks.iter().map(|i| i.to_string()).collect();
    want.sort();
    assert_eq!(ids, want, "{list}");
    let review = labelled(table, &format!("Review re-drive of {group}")).expect("a review link");
    assert!(review.starts_with("/redrive?"), "{review}");
    let r = get(&app, &review, None).await;
    assert_eq!(r.status, StatusCode::OK, "{review}: {}", r.body);
    assert!(
        r.body.contains(&format!(r#"id="matched">{}<"#, want.len())),
        "the review counts the group's {}: {}",
        want.len(),
        r.body
    );
    // Another group's error is not in it.
    assert!(!r.body.contains("stripe: 503"), "{}", r.body);
}

/// Claims every eligible `kind` operation (up to 100) and ends each dead with `reason`.
async fn kill_eligible(
    store: &oprec_postgres::PgStore,
    kind: &str,
    reason: oprec_core::TerminalReason,
    error: &str,
) -> usize {
    use oprec_core::WorkerStore;
    use oprec_core::store::{ClaimEligibleParams, Claimant, CompleteParams};
    let claimed = store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![kind.to_owned()],
            limit: 100,
            claimant: Claimant {
                worker_id: "w1".into(),
                code_version: None,
                lease: chrono::Duration::seconds(60),
            },
        })
        .await
        .expect("claim");
    let n = claimed.len();
    let done = claimed
        .into_iter()
        .map(|op| CompleteParams {
            id: op.id,
            claim_token: op.claim_token.expect("claimed"),
            transition: oprec_core::Transition::dead(
                reason,
                Some(oprec_core::Failure::transient(error)),
            ),
        })
        .collect();
    store.operation_complete_many(done).await.expect("complete");
    n
}

/// [`kill_eligible`] for the SMS operations of the test below.
async fn kill_sms(store: &oprec_postgres::PgStore) -> usize {
    kill_eligible(
        store,
        "sms.send",
        oprec_core::TerminalReason::AttemptsExhausted,
        "sms gateway: 502 Bad Gateway",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_warns_of_crash_loops_and_controls_and_a_braked_redrive_says_what_became_of_them()
 {
    use oprec_core::TerminalReason;
    use oprec_core::operator::{
        ControlAction, ControlRemoveParams, ControlScope, ControlSetParams,
    };
    let store = fresh_store().await;
    common::insert(&store, "sms.send", 60, Some("sms-gw")).await;
    let dead = kill_sms(&store).await;
    assert_eq!(dead, 60);
    common::insert(&store, "pdf.render", 1, None).await;
    kill_eligible(
        &store,
        "pdf.render",
        TerminalReason::CrashLoop,
        "its attempts took the worker down",
    )
    .await;
    let pause = ControlSetParams {
        scope: ControlScope::Dependency,
        value: "sms-gw".into(),
        action: ControlAction::Pause,
        until: None,
        reason: Some("gateway down".into()),
        actor: "oncall".into(),
    };
    store.control_set(pause).await.unwrap();
    let app = dashboard(&store, Some(TOKEN)).router();

    // Is it safe? A crash-loop group is warned of, and the pause that would hold the 60 back.
    let review = get(&app, "/redrive", None).await;
    assert_eq!(review.status, StatusCode::OK, "{}", review.body);
    let b = &review.body;
    assert!(b.contains(r#"data-what="crash_loop""#), "{b}");
    let controls = &b[b
        .find(r#"id="redrive-controls""#)
        .expect("controls in force")..];
    let controls = &controls[..controls.find("</table>").unwrap()];
    assert!(
        controls.contains("pause dependency sms-gw") && controls.contains("holds back 60"),
        "{controls}"
    );
    store
        .control_remove(ControlRemoveParams {
            scope: ControlScope::Dependency,
            value: "sms-gw".into(),
        })
        .await
        .unwrap();

    // Re-driven at 5 a second, and each one dies again as soon as it is eligible: the brake
    // stops the re-drive within its first window of 50.
    let auth = format!("Bearer {TOKEN}");
    let r = post(
        &app,
        form_post("/redrive")
            .header(header::AUTHORIZATION, &auth)
            .header("x-oprec-actor", "oncall"),
        "kind=sms.send&expected=60&mode=in_place&rate=5&per=second",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let location = r.headers[header::LOCATION].to_str().unwrap().to_owned();
    let mut page = String::new();
    let mut killed = 0;
    for _ in 0..300 {
        killed += kill_sms(&store).await;
        page = get(&app, &location, None).await.body;
        if page.contains(r#"data-finished="true""#) {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    assert!(page.contains("Re-drive braked"), "{page}");
    assert!(
        page.contains(r#"id="job-error""#) && page.contains("are dead again"),
        "the page says why it braked: {page}"
    );
    // What became of them: every one released died again (some may still be pending, eligible
    // later at the pace, and not yet claimed by the loop above).
    let released: u64 = {
        let at = page.find(r#"id="job-status""#).unwrap();
        let rest = &page[page[at..].find('>').unwrap() + at + 1..];
        rest[..rest.find(" of ").unwrap()].trim().parse().unwrap()
    };
    assert!(
        (26..60).contains(&released),
        "braked before the end: {released}"
    );
    killed += kill_sms(&store).await;
    let page = get(&app, &location, None).await.body;
    let summary = &page[page.find(r#"id="summary""#).expect("the outcome")..];
    let summary = &summary[..summary.find("</p>").unwrap()];
    assert!(
        summary.contains(&format!("· 0 succeeded · {killed} died again")),
        "{summary}"
    );
    assert_eq!(
        count_in(&store, &of_kind("sms.send"), Status::Dead).await,
        60,
        "the ones not released are still dead, the released ones dead again"
    );
}
