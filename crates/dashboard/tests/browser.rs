//! End-to-end tests in headless Chromium, driven through chromedriver with fantoccini: an
//! operator loads the overview, filters operations, opens one, signs in, re-drives dead
//! operations through the dry run and the confirmation, and the database shows them re-driven;
//! then pauses and resumes a dependency;
//! a form posted from another site is refused in the browser too; the overview and a list follow
//! new operations without a reload, and stop while paused; at a phone's width (700 px) no page
//! overflows sideways; a skip link leads to the content, the non-text colours (input borders, the
//! focus ring, the chart) have 3:1 contrast or more, and row buttons name what they act on.
//!
//! Needs Debian's `chromium` and `chromium-driver` (scripts/test installs them). A missing
//! browser fails these tests with a message; it never skips them. With
//! `OPREC_DASHBOARD_SCREENSHOTS=DIR` the main pages are also saved there as PNGs (the README's
//! screenshots come from this run).

mod common;

use std::time::Duration as StdDuration;

use chrono::Duration;
use common::browser::{
    binaries, browser, live_and_marked, navigate, not_reloaded, screenshot, serve, sign_in,
    start_driver, text, until_text, url_of,
};
use common::{TOKEN, count_in, dashboard, enqueue, fresh_store, seed};
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use oprec_core::operator::{AuditListParams, OperationFilter};
use oprec_core::prelude::*;
use oprec_core::store::OperationGetParams;
use oprec_core::{OperatorStore, Status, Store};
use serde_json::json;

fn webhooks() -> OperationFilter {
    OperationFilter {
        kinds: vec!["webhook.deliver".into()],
        ..OperationFilter::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_redrives_dead_operations_through_the_dry_run_in_a_browser() {
    let (chromedriver, chromium) = binaries();
    let store = fresh_store().await;
    let seeded = seed(&store, 180).await;
    let dead_webhooks = seeded.dead_webhooks.len() as u64;
    assert!(
        dead_webhooks > 20,
        "the seed killed {dead_webhooks} webhooks"
    );
    // Two live workers, as `oprec worker` registers them.
    for (id, host) in [("worker-a7f3", "app-1"), ("worker-b210", "app-2")] {
        store
            .worker_beat(oprec_core::WorkerBeatParams {
                id: id.into(),
                host: host.into(),
                pid: 4100,
                kinds: [
                    "email.send",
                    "payment.capture",
                    "invoice.render",
                    "webhook.deliver",
                    "shipment.create",
                ]
                .map(String::from)
                .to_vec(),
                code_version: Some("v1.9.0".into()),
                started_at: chrono::Utc::now() - Duration::hours(3),
            })
            .await
            .unwrap();
    }
    // A broker with a wake-up for each pending operation, so the overview shows its depth.
    let transport = std::sync::Arc::new(oprec_runtime::MemoryTransport::new());
    let pending = store
        .operation_list(oprec_core::store::ListParams {
            status: Some(Status::Pending),
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap();
    let ids: Vec<_> = pending
        .iter()
        .map(|o| oprec_core::WakeUp::new(o.id, o.kind.clone()))
        .collect();
    oprec_core::Transport::publish(transport.as_ref(), &ids)
        .await
        .unwrap();
    let mut d = dashboard(&store, Some(TOKEN));
    d.transport = Some(transport);
    d.transport_name = Some("memory://".into());
    let base = serve(d).await;
    let driver = start_driver(&chromedriver).await;
    let c = browser(&driver, &chromium).await;

    // The overview: the figures of `oprec stats` and the chart.
    c.goto(&format!("{base}/")).await.expect("overview");
    assert_eq!(text(&c, "main h1").await, "Overview");
    let stats = store.stats().await.unwrap();
    let dead_total = stats.by_status.get(&Status::Dead).copied().unwrap_or(0);
    let dead_card = text(&c, ".card.bad .card-v").await;
    assert_eq!(dead_card.replace(',', ""), dead_total.to_string());
    let chart = c
        .find(Locator::Css("svg.chart"))
        .await
        .expect("the activity chart")
        .attr("aria-label")
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(chart.contains("promoted to dead"), "{chart}");
    assert!(text(&c, "#workers").await.contains("worker-b210"));
    assert!(
        c.find(Locator::Id("unhandled")).await.is_err(),
        "every kind has a worker"
    );
    screenshot(&c, "overview").await;

    // Filter the operations: dead webhooks.
    c.goto(&format!("{base}/operations")).await.unwrap();
    let form = c.form(Locator::Id("filters")).await.expect("filter form");
    form.set_by_name("kind", "webhook.deliver").await.unwrap();
    form.set_by_name("status", "dead").await.unwrap();
    navigate(&c, form.submit(), "filter").await;
    c.wait()
        .at_most(StdDuration::from_secs(10))
        .for_url(&url_of(&format!(
            "{base}/operations?kind=webhook.deliver&status=dead"
        )))
        .await
        .expect("filtered address");
    let rows = c
        .find_all(Locator::Css("#ops tbody tr"))
        .await
        .expect("rows");
    assert_eq!(rows.len() as u64, dead_webhooks.min(50));
    for r in &rows {
        let t = r.text().await.unwrap();
        assert!(t.contains("webhook.deliver") && t.contains("dead"), "{t}");
    }
    screenshot(&c, "operations").await;

    // Open one: the record, the payload, the timeline, the error with its next action.
    let link = rows[0].find(Locator::Css("td a")).await.unwrap();
    navigate(&c, link.click(), "open the operation").await;
    let attempts = text(&c, "#attempts").await;
    assert!(attempts.contains("Attempt 1"), "{attempts}");
    assert!(attempts.contains("410 Gone"), "{attempts}");
    assert!(text(&c, "#payload").await.contains("hooks.partner.example"));
    assert!(
        text(&c, ".errbox")
            .await
            .contains("ask the partner for the new endpoint")
    );
    screenshot(&c, "operation").await;

    // Not signed in: the dry run shows, the confirmation asks to sign in.
    c.goto(&format!("{base}/redrive?kind=webhook.deliver"))
        .await
        .unwrap();
    assert!(text(&c, ".confirm").await.contains("Sign in"));
    assert!(c.find(Locator::Id("redrive-form")).await.is_err());

    // Sign in, then go through dead letters.
    sign_in(&c, &base, "e2e-alice", "/dead").await;
    assert_eq!(text(&c, "main h1").await, "Dead letters");
    screenshot(&c, "dead-letters").await;
    let mut review = None;
    for row in c.find_all(Locator::Css("#groups tbody tr")).await.unwrap() {
        if row.text().await.unwrap().contains("webhook.deliver") {
            review = Some(row.find(Locator::Css("a.button")).await.unwrap());
        }
    }
    let review = review.expect("a webhook.deliver group");
    navigate(&c, review.click(), "review the group").await;

    // The dry run: how many, and a sample of errors. Nothing changed yet.
    assert_eq!(
        text(&c, "#matched").await.replace(',', ""),
        dead_webhooks.to_string()
    );
    assert!(text(&c, "#samples").await.contains("410 Gone"));
    assert_eq!(
        count_in(&store, &webhooks(), Status::Dead).await,
        dead_webhooks
    );
    let form = c.form(Locator::Id("redrive-form")).await.unwrap();
    form.set_by_name("rate", "600").await.unwrap();
    form.set_by_name("note", "partner restored the endpoint (INC-412)")
        .await
        .unwrap();
    screenshot(&c, "redrive-dry-run").await;
    navigate(
        &c,
        form.submit_with(Locator::Id("confirm-redrive")),
        "confirm",
    )
    .await;

    // The progress page, until it says done.
    let mut finished = false;
    for _ in 0..100 {
        if let Ok(e) = c.find(Locator::Css("#job-status")).await
            && e.attr("data-finished").await.ok().flatten().as_deref() == Some("true")
        {
            finished = true;
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(150)).await;
    }
    assert!(finished, "the re-drive did not finish within 15 s");
    assert_eq!(
        text(&c, "#job-status").await,
        format!("{dead_webhooks} of {dead_webhooks} re-driven")
    );
    assert!(text(&c, "#outcome").await.contains("pending"));
    screenshot(&c, "redrive-progress").await;

    // Pause a dependency from the controls page, then resume it.
    c.goto(&format!("{base}/controls")).await.unwrap();
    let pause = c.form(Locator::Id("pause-form")).await.unwrap();
    pause.set_by_name("scope", "dependency").await.unwrap();
    pause.set_by_name("value", "stripe").await.unwrap();
    pause.set_by_name("until", "2h").await.unwrap();
    pause
        .set_by_name("reason", "stripe degraded (status page incident)")
        .await
        .unwrap();
    navigate(&c, pause.submit(), "pause").await;
    assert!(text(&c, "#notice").await.starts_with("Paused."));
    assert!(text(&c, "#controls").await.contains("stripe"));
    let controls = store.control_list().await.unwrap();
    assert_eq!(controls.len(), 1);
    assert_eq!(controls[0].value, "stripe");
    assert_eq!(controls[0].actor, "dashboard:e2e-alice");
    screenshot(&c, "controls").await;
    let resume = c.find(Locator::Css("#controls button")).await.unwrap();
    navigate(&c, resume.click(), "resume").await;
    assert!(text(&c, "#notice").await.starts_with("Resumed"));
    assert!(store.control_list().await.unwrap().is_empty());
    c.close().await.expect("close the browser");

    // In the database: re-driven in place, attempts reset, eligible times 0.1 s apart (600 a
    // minute), and the audit log names the operator.
    assert_eq!(count_in(&store, &webhooks(), Status::Dead).await, 0);
    assert_eq!(
        count_in(&store, &webhooks(), Status::Pending).await,
        dead_webhooks
    );
    let mut eligible = Vec::new();
    for id in &seeded.dead_webhooks {
        let op = store
            .operation_get(OperationGetParams { id: *id })
            .await
            .unwrap()
            .unwrap()
            .operation;
        assert_eq!(op.status, Status::Pending);
        assert_eq!(op.attempt, 0, "attempts reset");
        assert_eq!(op.redrive_count, 1);
        eligible.push(op.next_eligible_at);
    }
    eligible.sort();
    let spread = *eligible.last().unwrap() - eligible[0];
    let expected = Duration::milliseconds(100) * (dead_webhooks as i32 - 1);
    assert!(
        (spread - expected).num_milliseconds().abs() <= 5,
        "eligible over {spread}, expected {expected}"
    );
    let audit = store
        .audit_list(AuditListParams {
            limit: 5,
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
            ("resume", "dashboard:e2e-alice"),
            ("pause", "dashboard:e2e-alice"),
            ("redrive", "dashboard:e2e-alice")
        ]
    );
    let redrive = &audit[2].entry;
    assert_eq!(redrive.affected, dead_webhooks);
    assert_eq!(
        redrive.reason.as_deref(),
        Some("partner restored the endpoint (INC-412)")
    );
}

/// The page another site serves: a form that posts to the dashboard by itself.
async fn evil_site(target: String) -> String {
    use axum::response::Html;
    let page = format!(
        r#"<!doctype html><html><body><form id="f" method="post" action="{target}/controls/pause">
<input name="scope" value="kind"><input name="value" value="email.send"><input name="csrf" value="guess">
<button type="submit">Win a prize</button></form></body></html>"#
    );
    let app = axum::Router::new().route("/", axum::routing::get(move || async move { Html(page) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    // `localhost` is another site than `127.0.0.1` to the browser.
    format!("http://localhost:{port}/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_posted_from_another_site_is_refused_in_the_browser() {
    let (chromedriver, chromium) = binaries();
    let store = fresh_store().await;
    seed(&store, 10).await;
    let base = serve(dashboard(&store, Some(TOKEN))).await;
    let evil = evil_site(base.clone()).await;
    let driver = start_driver(&chromedriver).await;
    let c = browser(&driver, &chromium).await;
    // Signed in on the dashboard, as a victim would be.
    sign_in(&c, &base, "victim", "/").await;
    // The other site's form, submitted in the same browser.
    c.goto(&evil).await.unwrap();
    let prize = c.find(Locator::Css("#f button")).await.unwrap();
    navigate(&c, prize.click(), "submit the other site's form").await;
    let h1 = text(&c, "main h1").await;
    assert_eq!(h1, "Cross-site request refused");
    c.close().await.expect("close the browser");
    assert!(
        store.control_list().await.unwrap().is_empty(),
        "nothing paused"
    );
    assert!(
        store
            .audit_list(AuditListParams {
                limit: 5,
                ..Default::default()
            })
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_and_a_list_follow_new_operations_without_a_reload() {
    let (chromedriver, chromium) = binaries();
    let store = fresh_store().await;
    seed(&store, 10).await;
    let base = serve(dashboard(&store, Some(TOKEN))).await;
    let driver = start_driver(&chromedriver).await;
    let c = browser(&driver, &chromium).await;

    // The overview's Pending card moves by itself when work arrives.
    c.goto(&format!("{base}/")).await.unwrap();
    live_and_marked(&c).await;
    let figure = |t: &str| t.replace(',', "").trim().parse::<u64>().ok();
    let before = figure(&text(&c, ".card .card-v").await).expect("the pending figure");
    enqueue(&store, "report.build", 25).await;
    let after = until_text(&c, ".card .card-v", 30, |t| figure(t) == Some(before + 25)).await;
    assert_eq!(figure(&after), Some(before + 25));
    assert!(not_reloaded(&c).await, "updated in place, not reloaded");
    assert!(text(&c, "#live-state").await.contains("updated"));

    // A list follows too, except while paused.
    c.goto(&format!("{base}/operations?kind=export.csv"))
        .await
        .unwrap();
    live_and_marked(&c).await;
    assert!(text(&c, "#ops-live").await.contains("No operation matches"));
    let toggle = c.find(Locator::Id("live-toggle")).await.unwrap();
    assert_eq!(toggle.text().await.unwrap(), "Pause live updates");
    toggle.click().await.unwrap();
    let toggle = c.find(Locator::Id("live-toggle")).await.unwrap();
    assert_eq!(
        toggle.attr("aria-pressed").await.unwrap().as_deref(),
        Some("true")
    );
    enqueue(&store, "export.csv", 3).await;
    // Longer than a list's interval (5 s): nothing moves while paused.
    tokio::time::sleep(StdDuration::from_secs(7)).await;
    assert!(text(&c, "#ops-live").await.contains("No operation matches"));
    toggle.click().await.unwrap();
    until_text(&c, "#ops-live", 15, |t| {
        t.matches("export.csv").count() == 3
    })
    .await;
    assert_eq!(
        c.find_all(Locator::Css("#ops tbody tr"))
            .await
            .unwrap()
            .len(),
        3
    );
    assert!(not_reloaded(&c).await, "updated in place, not reloaded");
    c.close().await.expect("close the browser");
}

/// The elements sticking out past the viewport's right edge, for the failure message.
const OVERFLOWING: &str = r##"
const w = document.documentElement.clientWidth;
const out = [];
for (const el of document.querySelectorAll("body *")) {
  const r = el.getBoundingClientRect();
  if (r.right > w + 0.5 && !el.closest("[data-scroll]")) {
    out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.className && typeof el.className === "string" ? "." + el.className.trim().replace(/\s+/g, ".") : "") +
      " right=" + Math.round(r.right));
  }
}
return [document.documentElement.scrollWidth, window.innerWidth, out.slice(0, 12).join("; ")];
"##;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_phone_s_width_no_page_overflows_sideways() {
    let (chromedriver, chromium) = binaries();
    let store = fresh_store().await;
    let seeded = seed(&store, 60).await;
    let base = serve(dashboard(&store, Some(TOKEN))).await;
    let driver = start_driver(&chromedriver).await;
    let c = browser(&driver, &chromium).await;
    c.set_window_size(700, 1000).await.expect("resize");
    // Signed in, so that the action forms show too.
    sign_in(&c, &base, "phone-operator", "/").await;
    let op = seeded.dead_webhooks[0];
    for path in [
        "/".to_owned(),
        "/operations".into(),
        "/operations?kind=webhook.deliver&status=dead".into(),
        format!("/operations/{op}"),
        "/dead".into(),
        "/redrive?kind=webhook.deliver".into(),
        "/controls".into(),
        "/quarantine?kind=email.send".into(),
        "/transport".into(),
        "/schedules".into(),
        "/audit".into(),
        "/alerts".into(),
        "/no-such-page".into(),
    ] {
        c.goto(&format!("{base}{path}")).await.unwrap();
        let m = c.execute(OVERFLOWING, vec![]).await.expect("measure");
        let (scroll, inner) = (m[0].as_u64().unwrap(), m[1].as_u64().unwrap());
        assert!(
            inner <= 700 && inner > 600,
            "the viewport is {inner} px wide"
        );
        assert!(
            scroll <= 700,
            "{path}: the page is {scroll} px wide in a {inner} px viewport; sticking out: {}",
            m[2]
        );
    }
    // A table wider than a phone scrolls inside its panel instead.
    c.goto(&format!("{base}/operations")).await.unwrap();
    let inside = c
        .execute(
            "const s = document.querySelector('#ops').closest('[data-scroll]'); \
             return [getComputedStyle(s).overflowX, s.scrollWidth > s.clientWidth];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        inside,
        json!(["auto", true]),
        "the operations table scrolls in its panel"
    );
    c.close().await.expect("close the browser");
}

/// Presses and releases `key` in the page.
async fn press(c: &Client, key: Key) {
    let k: char = key.into();
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: k })
        .then(KeyAction::Up { value: k });
    c.perform_actions(keys).await.expect("press a key");
}

/// Contrast (WCAG 2) of two computed colours, `rgb(...)`, the second opaque.
const CONTRAST: &str = r##"
function rgb(c) { return c.match(/[\d.]+/g).slice(0, 3).map(Number); }
function lum(c) {
  const [r, g, b] = rgb(c).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function contrast(a, b) { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); }
function background(el) {
  for (; el; el = el.parentElement) {
    const c = getComputedStyle(el).backgroundColor;
    if (c && !c.startsWith("rgba(0, 0, 0, 0)") && c !== "transparent") { return c; }
  }
  return "rgb(255, 255, 255)";
}
"##;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_link_contrast_and_button_names() {
    let (chromedriver, chromium) = binaries();
    let store = fresh_store().await;
    seed(&store, 60).await;
    for dep in ["stripe", "smtp"] {
        store
            .control_set(oprec_core::operator::ControlSetParams {
                scope: oprec_core::operator::ControlScope::Dependency,
                value: dep.into(),
                action: oprec_core::operator::ControlAction::Pause,
                until: None,
                reason: Some("incident".into()),
                actor: "test".into(),
            })
            .await
            .unwrap();
    }
    let base = serve(dashboard(&store, Some(TOKEN))).await;
    let driver = start_driver(&chromedriver).await;
    let c = browser(&driver, &chromium).await;
    sign_in(&c, &base, "a11y", "/").await;

    // The first thing a keyboard reaches is the skip link, and it leads to the content.
    c.goto(&format!("{base}/operations")).await.unwrap();
    let skip = c
        .execute(
            "const a = document.body.firstElementChild; \
             return [a.tagName, a.getAttribute('href'), a.textContent, \
                     !!document.querySelector(a.getAttribute('href'))];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(skip, json!(["A", "#main", "Skip to content", true]));
    press(&c, Key::Tab).await;
    let first = c
        .execute("return document.activeElement.className;", vec![])
        .await
        .unwrap();
    assert_eq!(first, json!("skip"), "the first Tab reaches the skip link");
    let visible = c
        .execute(
            "const r = document.activeElement.getBoundingClientRect(); \
             return r.left >= 0 && r.top >= 0 && r.width > 0;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(visible, json!(true), "the focused skip link shows");
    press(&c, Key::Enter).await;
    let focused = c
        .execute("return document.activeElement.id;", vec![])
        .await
        .unwrap();
    assert_eq!(
        focused,
        json!("main"),
        "the skip link moves the focus to the content"
    );

    // Inputs' borders and the focus ring stand out 3:1 from what is around them.
    let ratios = c
        .execute(
            &format!(
                "{CONTRAST} const i = document.querySelector('#filters input[name=kind]'); \
                 i.focus(); const s = getComputedStyle(i); \
                 return [contrast(s.borderTopColor, background(i.parentElement)), \
                         contrast(s.outlineColor, background(i.parentElement)), \
                         s.outlineStyle];"
            ),
            vec![],
        )
        .await
        .unwrap();
    let r = |i: usize| ratios[i].as_f64().unwrap();
    assert!(r(0) >= 3.0, "input border {ratios}");
    assert!(r(1) >= 3.0, "focus ring {ratios}");
    assert_eq!(ratios[2], json!("solid"), "a visible focus ring");
    // The chart's colours against its panel.
    c.goto(&format!("{base}/")).await.unwrap();
    let chart = c
        .execute(
            &format!(
                "{CONTRAST} const svg = document.querySelector('svg.chart'); \
                 const bg = background(svg); \
                 const fills = [...new Set([...svg.querySelectorAll('rect[fill]')] \
                     .map(r => getComputedStyle(r).fill))]; \
                 return fills.map(f => [f, contrast(f, bg)]);"
            ),
            vec![],
        )
        .await
        .unwrap();
    let fills = chart.as_array().unwrap();
    assert!(fills.len() >= 3, "{chart}");
    for f in fills {
        assert!(f[1].as_f64().unwrap() >= 3.0, "chart colour {f}");
    }

    // A button in a table row says which row it acts on.
    for (path, css, must) in [
        (
            "/controls",
            "#controls button",
            ["Resume dependency stripe", "Resume dependency smtp"],
        ),
        (
            "/dead",
            "#groups a.button",
            ["Review re-drive of webhook.deliver", "Review re-drive of"],
        ),
    ] {
        c.goto(&format!("{base}{path}")).await.unwrap();
        let labels = c
            .execute(
                &format!(
                    "return [...document.querySelectorAll('{css}')] \
                     .map(b => b.getAttribute('aria-label'));"
                ),
                vec![],
            )
            .await
            .unwrap();
        let labels: Vec<String> = labels
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                l.as_str()
                    .unwrap_or_else(|| panic!("{path}: a button without a name"))
                    .to_owned()
            })
            .collect();
        assert!(labels.len() >= 2, "{path}: {labels:?}");
        let distinct: std::collections::BTreeSet<_> = labels.iter().collect();
        assert_eq!(distinct.len(), labels.len(), "{path}: {labels:?}");
        for m in must {
            assert!(
                labels.iter().any(|l| l.starts_with(m)),
                "{path}: {m} in {labels:?}"
            );
        }
    }
    let sign_out = c
        .find(Locator::Css(".session button"))
        .await
        .unwrap()
        .attr("aria-label")
        .await
        .unwrap();
    assert_eq!(sign_out.as_deref(), Some("Sign out a11y"));
    c.close().await.expect("close the browser");
}
