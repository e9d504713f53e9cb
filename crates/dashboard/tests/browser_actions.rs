//! End-to-end tests in headless Chromium of what an operator does to operations, each by hand in
//! the browser as a signed-in person, and each checked in the database afterwards, with the
//! audit entry that names the person: release a held operation and cancel a waiting one from its
//! page; record what became of an unknown outcome (applied, with the remote id, or not applied,
//! so that it is retried); postpone a dependency until a time; pause a kind from its row on the
//! overview, confirmed on the controls page (and workers then claim none of it); from a list
//! narrowed to a kind, release the matching held or cancel the matching waiting operations
//! through the review, which changes nothing until confirmed and touches only what it counted;
//! stop a paced re-drive from its progress page, after which the job stays stopped with the
//! rest still dead.
//!
//! Needs Debian's `chromium` and `chromium-driver`, as `browser.rs` does: a missing browser fails
//! these tests with a message, it never skips them. With `OPREC_DASHBOARD_SCREENSHOTS=DIR` the
//! pages where these actions are taken are saved there as PNGs: an operation's page with its
//! action forms (also at a phone's width, 700 px), an unknown outcome's page, the bulk review and
//! a running re-drive with its Stop button.

mod common;

use chrono::{DateTime, Duration, Utc};
use common::browser::{
    choose, click_to, open, present, screenshot, serve, sign_in, text, type_into, until_text,
    url_of, value_of,
};
use common::{
    TOKEN, count_in, dashboard, enqueue, fresh_store, insert, insert_and_claim, reconciling, seed,
};
use fantoccini::Locator;
use oprec_core::operator::{
    AuditEntry, AuditListParams, ControlAction, ControlScope, OperationFilter, QuarantineParams,
    RedriveJobListParams, RedriveJobState,
};
use oprec_core::prelude::*;
use oprec_core::store::{ClaimEligibleParams, Claimant, ListParams, OperationGetParams};
use oprec_core::{Operation, OperationId, OperatorStore, Status, Store};
use oprec_postgres::PgStore;
use serde_json::json;

/// The operation as stored now.
async fn stored(store: &PgStore, id: OperationId) -> Operation {
    store
        .operation_get(OperationGetParams { id })
        .await
        .expect("read the operation")
        .unwrap_or_else(|| panic!("operation {id} is gone"))
        .operation
}

/// The ids of `kind` (any kind when `None`) in `status`, oldest first.
async fn ids_in(store: &PgStore, kind: Option<&str>, status: Status) -> Vec<OperationId> {
    store
        .operation_list(ListParams {
            status: Some(status),
            kind: kind.map(str::to_owned),
            limit: 1000,
            ..ListParams::default()
        })
        .await
        .expect("list")
        .into_iter()
        .map(|o| o.id)
        .collect()
}

/// Every audit entry, newest first.
async fn audit(store: &PgStore) -> Vec<AuditEntry> {
    store
        .audit_list(AuditListParams {
            limit: 100,
            ..AuditListParams::default()
        })
        .await
        .expect("audit list")
        .into_iter()
        .map(|a| a.entry)
        .collect()
}

/// The only audit entry, which must be `action` by `actor`.
async fn the_audit_entry(store: &PgStore, action: &str, actor: &str) -> AuditEntry {
    let mut entries = audit(store).await;
    let seen: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e.action.as_str(), e.actor.as_str()))
        .collect();
    assert_eq!(seen, [(action, actor)], "the audit log");
    entries.remove(0)
}

/// What a worker of `kinds` gets when it asks for up to 100 operations now.
async fn claim(store: &PgStore, kinds: &[&str]) -> Vec<oprec_core::Claimed> {
    store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            limit: 100,
            claimant: Claimant {
                worker_id: "worker-e2e".into(),
                code_version: None,
                lease: Duration::seconds(30),
            },
        })
        .await
        .expect("claim")
}

fn kind(k: &str) -> OperationFilter {
    OperationFilter {
        kinds: vec![k.into()],
        ..OperationFilter::default()
    }
}

/// Holds up to `n` pending operations of `k`, as a quarantine does.
async fn hold(store: &PgStore, k: &str, n: u32) {
    let held = store
        .operation_quarantine(QuarantineParams {
            filter: kind(k),
            reason: "bad import".into(),
            actor: "test".into(),
            limit: n,
        })
        .await
        .expect("quarantine");
    assert_eq!(held, u64::from(n), "held {k}");
}

/// The operation ids an audit entry's filter names.
fn named_ids(entry: &AuditEntry) -> Vec<String> {
    entry.filter["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids in {}", entry.filter))
        .iter()
        .map(|v| v.as_str().expect("an id").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_releases_a_held_operation_from_its_page() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    seed(&store, 20).await;
    let held = ids_in(&store, None, Status::Held).await;
    assert_eq!(
        held.len(),
        1,
        "the seed holds one email for its SMTP credentials"
    );
    let held = held[0];
    let base = serve(dashboard(&store, Some(TOKEN))).await;
    let page = format!("/operations/{held}");

    // Not signed in: the actions say to sign in, and offer no form.
    c.goto(&format!("{base}{page}")).await.unwrap();
    assert!(text(&c, "#actions").await.contains("Sign in"));
    assert!(!present(&c, "#release-form").await);

    sign_in(&c, &base, "e2e-rosa", &page).await;
    assert!(text(&c, ".errbox").await.contains("535 5.7.8"));
    assert!(present(&c, "#release-form").await && present(&c, "#cancel-form").await);
    screenshot(&c, "operation-actions").await;
    c.set_window_size(700, 1000).await.expect("a phone's width");
    screenshot(&c, "operation-actions-phone").await;
    c.set_window_size(1440, 1000).await.expect("resize back");
    assert_eq!(
        stored(&store, held).await.status,
        Status::Held,
        "nothing yet"
    );

    click_to(&c, "#release-form button[type=submit]", "release").await;
    assert_eq!(
        text(&c, "#notice").await,
        "Released: pending again and eligible now."
    );
    assert!(!present(&c, "#release-form").await, "released once");
    assert!(present(&c, "#cancel-form").await, "still cancellable");

    let op = stored(&store, held).await;
    assert_eq!(op.status, Status::Pending);
    let now = store.now().await.unwrap();
    assert!(op.next_eligible_at <= now, "eligible at once");
    let entry = the_audit_entry(&store, "release", "dashboard:e2e-rosa").await;
    assert_eq!(entry.affected, 1);
    assert_eq!(named_ids(&entry), [held.to_string()]);
    // A worker gets it again.
    let claimed = claim(&store, &["email.send"]).await;
    assert!(claimed.iter().any(|o| o.id == held), "claimable again");
    c.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_cancels_a_waiting_operation_from_its_page() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    insert(&store, "report.build", 2, None).await;
    let waiting = ids_in(&store, Some("report.build"), Status::Pending).await;
    assert_eq!(waiting.len(), 2);
    let (target, other) = (waiting[0], waiting[1]);
    let base = serve(dashboard(&store, Some(TOKEN))).await;
    let page = format!("/operations/{target}");

    sign_in(&c, &base, "e2e-rosa", &page).await;
    assert_eq!(text(&c, "main h1").await, target.to_string());
    assert!(
        !present(&c, "#release-form").await,
        "a pending one is not released"
    );
    type_into(
        &c,
        "#cancel-form input[name=reason]",
        "duplicate of a later report",
    )
    .await;
    click_to(&c, "#cancel-form button[type=submit]", "cancel").await;
    assert_eq!(
        text(&c, "#notice").await,
        "Cancelled: no worker will take it again."
    );
    assert!(!present(&c, "#actions").await, "nothing left to do to it");

    assert_eq!(stored(&store, target).await.status, Status::Cancelled);
    assert_eq!(
        stored(&store, other).await.status,
        Status::Pending,
        "only the one whose page it was"
    );
    let entry = the_audit_entry(&store, "cancel", "dashboard:e2e-rosa").await;
    assert_eq!(entry.affected, 1);
    assert_eq!(named_ids(&entry), [target.to_string()]);
    assert_eq!(entry.reason.as_deref(), Some("duplicate of a later report"));
    let claimed = claim(&store, &["report.build"]).await;
    let claimed: Vec<OperationId> = claimed.iter().map(|o| o.id).collect();
    assert_eq!(claimed, [other], "no worker takes the cancelled one");
    c.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_records_unknown_outcomes_as_applied_and_as_not_applied() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    let applied = reconciling(&store, "refund.issue").await;
    let not_applied = reconciling(&store, "refund.issue").await;
    assert_ne!(applied, not_applied);
    for id in [applied, not_applied] {
        assert_eq!(stored(&store, id).await.status, Status::Reconciling);
    }
    let base = serve(dashboard(&store, Some(TOKEN))).await;

    // Found at the provider: applied, with its id there.
    let page = format!("/operations/{applied}");
    sign_in(&c, &base, "e2e-rosa", &page).await;
    assert!(
        text(&c, "#resolve-form")
            .await
            .contains("outcome is unknown")
    );
    assert!(
        !present(&c, "#release-form").await,
        "a reconciling one is not released"
    );
    type_into(&c, "#resolve-form input[name=remote_id]", "re_3Q8812").await;
    type_into(
        &c,
        "#resolve-form input[name=reason]",
        "refund found in the provider's dashboard",
    )
    .await;
    screenshot(&c, "operation-reconcile").await;
    click_to(
        &c,
        "#resolve-form button[value=applied]",
        "record as applied",
    )
    .await;
    assert_eq!(
        text(&c, "#notice").await,
        "Recorded as applied: the operation succeeded."
    );
    assert!(!present(&c, "#resolve-form").await, "decided once");
    let op = stored(&store, applied).await;
    assert_eq!(op.status, Status::Succeeded);
    assert_eq!(op.remote_id.as_deref(), Some("re_3Q8812"));
    assert_eq!(
        stored(&store, not_applied).await.status,
        Status::Reconciling,
        "the other one is untouched"
    );
    let entry = the_audit_entry(&store, "reconcile_resolve", "dashboard:e2e-rosa").await;
    assert_eq!(named_ids(&entry), [applied.to_string()]);
    assert_eq!(
        entry.details["resolution"],
        json!({"resolution": "applied", "remote_id": "re_3Q8812"})
    );
    assert_eq!(
        entry.reason.as_deref(),
        Some("refund found in the provider's dashboard")
    );

    // Not found: not applied, so pending again and retried.
    c.goto(&format!("{base}/operations/{not_applied}"))
        .await
        .unwrap();
    type_into(
        &c,
        "#resolve-form input[name=reason]",
        "no such refund at the provider",
    )
    .await;
    click_to(
        &c,
        "#resolve-form button[value=not_applied]",
        "record as not applied",
    )
    .await;
    assert_eq!(
        text(&c, "#notice").await,
        "Recorded as not applied: pending again and eligible now, safe to retry."
    );
    let op = stored(&store, not_applied).await;
    assert_eq!(op.status, Status::Pending);
    assert_eq!(op.remote_id, None);
    assert!(op.next_eligible_at <= store.now().await.unwrap());
    let entries = audit(&store).await;
    assert_eq!(entries.len(), 2, "one entry per decision");
    let entry = &entries[0];
    assert_eq!(
        (entry.action.as_str(), entry.actor.as_str()),
        ("reconcile_resolve", "dashboard:e2e-rosa")
    );
    assert_eq!(named_ids(entry), [not_applied.to_string()]);
    assert_eq!(entry.details["resolution"]["resolution"], "not_applied");
    let claimed = claim(&store, &["refund.issue"]).await;
    let claimed: Vec<OperationId> = claimed.iter().map(|o| o.id).collect();
    assert_eq!(claimed, [not_applied], "retried; the applied one is done");
    c.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_postpones_a_dependency_until_a_time() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    insert(&store, "payment.capture", 4, Some("stripe")).await;
    insert(&store, "email.send", 2, Some("smtp")).await;
    let base = serve(dashboard(&store, Some(TOKEN))).await;
    // A time three hours ahead, as a browser's date-time field writes it (UTC, to the minute).
    let now = store.now().await.unwrap();
    let until = (now + Duration::hours(3))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    let until_at: DateTime<Utc> = chrono::NaiveDateTime::parse_from_str(&until, "%Y-%m-%dT%H:%M")
        .unwrap()
        .and_utc();

    sign_in(&c, &base, "e2e-rosa", "/controls").await;
    assert!(present(&c, "#no-controls").await, "nothing in force yet");
    choose(&c, "#pause-form select[name=action]", "postpone").await;
    choose(&c, "#pause-form select[name=scope]", "dependency").await;
    type_into(&c, "#pause-form input[name=value]", "stripe").await;
    type_into(&c, "#pause-form input[name=until]", &until).await;
    type_into(
        &c,
        "#pause-form input[name=reason]",
        "stripe maintenance window",
    )
    .await;
    click_to(&c, "#pause-form button[type=submit]", "postpone").await;
    assert_eq!(
        text(&c, "#notice").await,
        "Postponed. 4 unfinished operations of the dependency wait until the time given."
    );
    let row = text(&c, "#controls tbody tr").await;
    assert!(
        row.contains("stripe") && row.contains("postpone") && row.contains("dashboard:e2e-rosa"),
        "{row}"
    );

    let controls = store.control_list().await.unwrap();
    assert_eq!(controls.len(), 1, "{controls:?}");
    let control = &controls[0];
    assert_eq!(control.scope, ControlScope::Dependency);
    assert_eq!(control.value, "stripe");
    assert_eq!(control.action, ControlAction::Postpone);
    assert_eq!(control.until, Some(until_at));
    assert_eq!(control.actor, "dashboard:e2e-rosa");
    assert_eq!(control.reason.as_deref(), Some("stripe maintenance window"));
    let entry = the_audit_entry(&store, "postpone", "dashboard:e2e-rosa").await;
    assert_eq!(entry.affected, 4);
    assert_eq!(entry.reason.as_deref(), Some("stripe maintenance window"));
    // Workers leave the dependency's operations until then; the others run.
    let claimed = claim(&store, &[]).await;
    let kinds: Vec<&str> = claimed.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["email.send", "email.send"], "stripe's wait");
    c.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_pauses_a_kind_from_its_row_on_the_overview() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    seed(&store, 20).await;
    enqueue(&store, "webhook.deliver", 3).await;
    enqueue(&store, "report.build", 1).await;
    let base = serve(dashboard(&store, Some(TOKEN))).await;

    sign_in(&c, &base, "e2e-rosa", "/").await;
    assert_eq!(text(&c, "main h1").await, "Overview");
    click_to(
        &c,
        "a[aria-label='Pause webhook.deliver…']",
        "propose a pause",
    )
    .await;
    // The controls page, its form filled in with the kind; nothing paused until it is sent.
    let at = c.current_url().await.unwrap();
    assert_eq!(at.path(), "/controls");
    assert_eq!(
        at.query(),
        url_of(&format!("{base}/controls?scope=kind&value=webhook.deliver")).query()
    );
    assert_eq!(at.fragment(), Some("pause-form"));
    assert_eq!(
        value_of(&c, "#pause-form select[name=action]").await,
        "pause"
    );
    assert_eq!(value_of(&c, "#pause-form select[name=scope]").await, "kind");
    assert_eq!(
        value_of(&c, "#pause-form input[name=value]").await,
        "webhook.deliver"
    );
    assert!(
        store.control_list().await.unwrap().is_empty(),
        "nothing yet"
    );
    assert!(audit(&store).await.is_empty());

    type_into(
        &c,
        "#pause-form input[name=reason]",
        "partner endpoint gone (INC-977)",
    )
    .await;
    click_to(&c, "#pause-form button[type=submit]", "pause").await;
    assert_eq!(
        text(&c, "#notice").await,
        "Paused. 3 unfinished operations in scope are neither claimed nor woken."
    );
    let row = text(&c, "#controls tbody tr").await;
    assert!(
        row.contains("webhook.deliver") && row.contains("until resumed"),
        "{row}"
    );

    let controls = store.control_list().await.unwrap();
    assert_eq!(controls.len(), 1, "{controls:?}");
    let control = &controls[0];
    assert_eq!(control.scope, ControlScope::Kind);
    assert_eq!(control.value, "webhook.deliver");
    assert_eq!(control.action, ControlAction::Pause);
    assert_eq!(control.until, None);
    assert_eq!(control.actor, "dashboard:e2e-rosa");
    let entry = the_audit_entry(&store, "pause", "dashboard:e2e-rosa").await;
    assert_eq!(entry.affected, 3);
    assert_eq!(
        entry.reason.as_deref(),
        Some("partner endpoint gone (INC-977)")
    );
    // Workers claim none of the kind; another kind still runs.
    assert!(claim(&store, &["webhook.deliver"]).await.is_empty());
    assert_eq!(claim(&store, &["report.build"]).await.len(), 1);
    // The overview says what is in force.
    c.goto(&format!("{base}/")).await.unwrap();
    assert!(text(&c, "main").await.contains("1 control in force"));
    c.close().await.expect("close the browser");
}

/// Narrows the operations list to `k` with its filter form, as a person does.
async fn list_kind(c: &fantoccini::Client, base: &str, k: &str) {
    c.goto(&format!("{base}/operations")).await.unwrap();
    type_into(c, "#filters input[name=kind]", k).await;
    let form = c.form(Locator::Id("filters")).await.expect("filter form");
    common::browser::navigate(c, form.submit(), "filter").await;
    let at = c.current_url().await.unwrap();
    assert_eq!(
        at.query(),
        Some(format!("kind={k}").as_str()),
        "only the kind is sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_releases_the_matching_held_from_a_narrowed_list() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    insert(&store, "ledger.post", 5, None).await;
    hold(&store, "ledger.post", 3).await;
    insert(&store, "audit.export", 2, None).await;
    hold(&store, "audit.export", 2).await;
    let ledger = kind("ledger.post");
    let base = serve(dashboard(&store, Some(TOKEN))).await;

    sign_in(&c, &base, "e2e-rosa", "/operations").await;
    list_kind(&c, &base, "ledger.post").await;
    assert_eq!(
        c.find_all(Locator::Css("#ops tbody tr"))
            .await
            .unwrap()
            .len(),
        5
    );
    click_to(
        &c,
        "#bulk a[href*='action=release']",
        "release the matching held",
    )
    .await;
    let at = c.current_url().await.unwrap();
    assert_eq!(
        (at.path(), at.query()),
        ("/bulk", Some("kind=ledger.post&action=release"))
    );
    assert_eq!(
        text(&c, "#bulk-count").await,
        "3 held operations would be released"
    );
    let statuses = text(&c, "#bulk-statuses").await;
    assert!(
        statuses.contains("held 3") && statuses.contains("pending 2"),
        "{statuses}"
    );
    assert_eq!(
        count_in(&store, &ledger, Status::Held).await,
        3,
        "nothing yet"
    );
    assert!(audit(&store).await.is_empty());
    type_into(
        &c,
        "#bulk-form input[name=note]",
        "importer fixed (INC-981)",
    )
    .await;
    screenshot(&c, "bulk-review").await;
    let button = text(&c, "#bulk-form button[type=submit]").await;
    assert_eq!(button, "Release 3 operations");
    click_to(&c, "#bulk-form button[type=submit]", "confirm the release").await;

    let at = c.current_url().await.unwrap();
    assert_eq!(
        (at.path(), at.query()),
        ("/operations", Some("kind=ledger.post&done=release&n=3"))
    );
    assert_eq!(
        text(&c, "#notice").await,
        "Released 3: pending again and eligible now."
    );
    assert_eq!(count_in(&store, &ledger, Status::Held).await, 0);
    assert_eq!(count_in(&store, &ledger, Status::Pending).await, 5);
    assert_eq!(
        count_in(&store, &kind("audit.export"), Status::Held).await,
        2,
        "another kind's held stay held"
    );
    let entry = the_audit_entry(&store, "release", "dashboard:e2e-rosa").await;
    assert_eq!(entry.affected, 3);
    assert_eq!(entry.filter["kinds"], json!(["ledger.post"]));
    assert_eq!(entry.reason.as_deref(), Some("importer fixed (INC-981)"));
    c.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_cancels_the_matching_waiting_from_a_narrowed_list() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    // ledger.post: one reconciling, one running, one held, two pending.
    reconciling(&store, "ledger.post").await;
    let running = insert_and_claim(&store, "ledger.post", 4, None, 1).await;
    assert_eq!(running.len(), 1);
    hold(&store, "ledger.post", 1).await;
    insert(&store, "audit.export", 2, None).await;
    let ledger = kind("ledger.post");
    for (s, n) in [
        (Status::Reconciling, 1),
        (Status::Running, 1),
        (Status::Held, 1),
        (Status::Pending, 2),
    ] {
        assert_eq!(count_in(&store, &ledger, s).await, n, "{s} before");
    }
    let base = serve(dashboard(&store, Some(TOKEN))).await;

    sign_in(&c, &base, "e2e-rosa", "/operations").await;
    list_kind(&c, &base, "ledger.post").await;
    click_to(
        &c,
        "#bulk a[href*='action=cancel']",
        "cancel the matching waiting",
    )
    .await;
    let at = c.current_url().await.unwrap();
    assert_eq!(
        (at.path(), at.query()),
        ("/bulk", Some("kind=ledger.post&action=cancel"))
    );
    assert_eq!(
        text(&c, "#bulk-count").await,
        "4 waiting (pending, held or reconciling) operations would be cancelled"
    );
    let statuses = text(&c, "#bulk-statuses").await;
    for s in ["pending 2", "held 1", "reconciling 1", "running 1"] {
        assert!(statuses.contains(s), "{s}: {statuses}");
    }
    assert_eq!(
        count_in(&store, &ledger, Status::Cancelled).await,
        0,
        "nothing yet"
    );
    click_to(&c, "#bulk-form button[type=submit]", "confirm the cancel").await;
    assert_eq!(
        text(&c, "#notice").await,
        "Cancelled 4: no worker will take them again."
    );

    assert_eq!(count_in(&store, &ledger, Status::Cancelled).await, 4);
    for s in [Status::Pending, Status::Held, Status::Reconciling] {
        assert_eq!(count_in(&store, &ledger, s).await, 0, "{s}");
    }
    assert_eq!(
        stored(&store, running[0].id).await.status,
        Status::Running,
        "a running attempt is not cancelled"
    );
    assert_eq!(
        count_in(&store, &kind("audit.export"), Status::Pending).await,
        2,
        "another kind is untouched"
    );
    let entry = the_audit_entry(&store, "cancel", "dashboard:e2e-rosa").await;
    assert_eq!(entry.affected, 4);
    assert_eq!(entry.filter["kinds"], json!(["ledger.post"]));
    c.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_stops_a_running_redrive_from_its_progress_page() {
    let (_driver, c) = open().await;
    let store = fresh_store().await;
    let seeded = seed(&store, 40).await;
    let dead = seeded.dead_webhooks.len() as u64;
    assert!(dead >= 3, "the seed kills {dead} webhooks");
    let webhooks = kind("webhook.deliver");
    let base = serve(dashboard(&store, Some(TOKEN))).await;

    // One a minute: the job releases the first at once, then waits a minute for the next.
    sign_in(&c, &base, "e2e-rosa", "/redrive?kind=webhook.deliver").await;
    assert_eq!(
        text(&c, "#matched").await.replace(',', ""),
        dead.to_string()
    );
    type_into(&c, "#redrive-form input[name=rate]", "1").await;
    choose(&c, "#redrive-form select[name=per]", "minute").await;
    type_into(&c, "#redrive-form input[name=note]", "partner back, slowly").await;
    click_to(&c, "#confirm-redrive", "confirm the re-drive").await;
    until_text(&c, "#job-status", 15, |t| {
        t == format!("1 of {dead} re-driven")
    })
    .await;
    assert_eq!(text(&c, "main h1").await, "Re-drive running");
    assert!(text(&c, "#stop-form").await.contains("Stop"));
    screenshot(&c, "redrive-running").await;
    let jobs = store
        .redrive_job_list(RedriveJobListParams { id: None, limit: 5 })
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state, RedriveJobState::Running);
    assert_eq!(count_in(&store, &webhooks, Status::Dead).await, dead - 1);

    click_to(&c, "#stop-form button[type=submit]", "stop the re-drive").await;
    until_text(&c, "main h1", 15, |t| t == "Re-drive stopped").await;
    let job_page = text(&c, "#job").await;
    assert!(
        job_page.contains("stopped by dashboard:e2e-rosa after releasing 1 of"),
        "{job_page}"
    );
    assert_eq!(
        text(&c, "#job-status").await,
        format!("1 of {dead} re-driven")
    );
    assert!(!present(&c, "#stop-form").await, "nothing more to stop");

    let jobs = store
        .redrive_job_list(RedriveJobListParams { id: None, limit: 5 })
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.state, RedriveJobState::Stopped);
    assert_eq!((job.released, job.planned), (1, dead));
    assert_eq!(job.actor, "dashboard:e2e-rosa");
    assert_eq!(count_in(&store, &webhooks, Status::Dead).await, dead - 1);
    assert_eq!(count_in(&store, &webhooks, Status::Pending).await, 1);
    let entry = the_audit_entry(&store, "redrive", "dashboard:e2e-rosa").await;
    assert_eq!(entry.affected, 1);
    assert_eq!(entry.details["state"], "stopped");
    assert_eq!(entry.details["job"], json!(job.id));
    assert_eq!(entry.reason.as_deref(), Some("partner back, slowly"));
    c.close().await.expect("close the browser");
}
