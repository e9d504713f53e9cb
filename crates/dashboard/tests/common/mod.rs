//! What the dashboard tests share: a fresh PostgreSQL schema per test, realistic seeded history
//! (written through the store on a manual clock, so that attempts and deaths spread over the
//! last hours), and small helpers to read pages.

#![allow(dead_code)]

pub mod browser;

use std::sync::Arc;

use chrono::{Duration, Utc};
use oprec_core::operator::{CountMatchingParams, OperationFilter};
use oprec_core::prelude::*;
use oprec_core::store::{ClaimEligibleParams, Claimant, CompleteParams};
use oprec_core::{
    Clock, EnqueueOptions, Failure, ManualClock, NewOperation, OperationError, OperationId,
    OperatorStore, RetryPolicy, Status, Store, TerminalReason, Transition,
};
use oprec_dashboard::{Dashboard, Token};
use oprec_postgres::PgStore;
use serde_json::json;
use sqlx::postgres::PgConnectOptions;

/// The token the tests configure.
pub const TOKEN: &str = "test-operator-token-0123456789";

/// The database the tests use.
pub fn database_url() -> String {
    std::env::var("OPREC_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A store over a new, migrated schema, on the database's clock.
pub async fn fresh_store() -> PgStore {
    let url = database_url();
    let schema = format!("oprec_test_{}", uuid::Uuid::now_v7().simple());
    let admin = PgStore::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {url} is required for these tests: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(admin.pool())
        .await
        .expect("create schema");
    admin.pool().close().await;
    let options: PgConnectOptions = url.parse().expect("database url");
    let store = PgStore::connect_with(options.options([("search_path", schema.as_str())]), 4)
        .await
        .expect("connect to test schema");
    store.migrate().await.expect("migrate");
    store
}

/// The dashboard over `store`, with the test token or none.
pub fn dashboard(store: &PgStore, token: Option<&str>) -> Dashboard {
    Dashboard {
        store: Arc::new(store.clone()),
        transport: None,
        transport_name: None,
        store_name: "postgres://postgres@127.0.0.1:5432/test".into(),
        token: token.map(|t| Token::new(t).expect("test token")),
        allowed_hosts: Vec::new(),
        read_requires_token: false,
        sign_in_limits: Default::default(),
    }
}

pub fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(4)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .expect("policy")
}

/// What the seed made, for the tests to check against.
pub struct Seeded {
    /// The `webhook.deliver` operations, all dead with a permanent 410.
    pub dead_webhooks: Vec<OperationId>,
    /// Every operation.
    pub total: usize,
}

fn payload(kind: &str, i: usize) -> serde_json::Value {
    match kind {
        "email.send" => {
            json!({"to": format!("customer{i}@example.com"), "template": "order_confirmation", "order_id": 41000 + i})
        }
        "payment.capture" => {
            json!({"payment_intent": format!("pi_3Q{i:06}"), "amount_cents": 1250 + i * 7 % 900, "currency": "eur"})
        }
        "invoice.render" => json!({"invoice_id": format!("INV-2026-{i:05}"), "format": "pdf"}),
        "webhook.deliver" => {
            json!({"endpoint": "https://hooks.partner.example/orders", "event": "order.shipped", "order_id": 41000 + i})
        }
        _ => {
            json!({"order_id": 41000 + i, "carrier": "dhl", "destination": if i.is_multiple_of(2) { json!({"country": "DE"}) } else { json!({"country": "DE", "postal_code": "10115"}) }})
        }
    }
}

fn dependency(kind: &str) -> Option<String> {
    match kind {
        "email.send" => Some("smtp".into()),
        "payment.capture" => Some("stripe".into()),
        "webhook.deliver" => Some("partner-api".into()),
        "shipment.create" => Some("carrier".into()),
        _ => None,
    }
}

/// Seeds `minutes` of history ending now: five kinds, most attempts succeeding; a payment
/// provider outage in the middle whose operations end dead (attempts exhausted); a partner
/// webhook that answers 410 (dead, permanent); shipments missing a postal code (dead,
/// permanent); a few unknown outcomes (reconciling), one configuration failure (held) and a
/// backlog of pending retries.
pub async fn seed(store: &PgStore, minutes: i64) -> Seeded {
    let end = Utc::now();
    let clock = Arc::new(ManualClock::new(end - Duration::minutes(minutes)));
    let s = store.clone().with_clock(clock.clone());
    let policy = policy();
    let mut dead_webhooks = Vec::new();
    let mut total = 0usize;
    let mut n = 0usize;
    let step = 2;
    let steps = minutes / step;
    for k in 0..steps {
        let progress = k as f64 / steps as f64;
        let outage = (0.45..0.62).contains(&progress);
        let now = clock.now();
        let mut batch = Vec::new();
        let mut kinds = vec!["email.send"; 4];
        kinds.extend(["payment.capture"; 3]);
        kinds.extend(["invoice.render"; 2]);
        if k % 2 == 0 {
            kinds.push("webhook.deliver");
        }
        if k % 3 == 0 {
            kinds.push("shipment.create");
        }
        for kind in kinds {
            n += 1;
            let op = NewOperation::new(
                kind,
                payload(kind, n),
                &policy,
                EnqueueOptions {
                    idempotency_key: Some(format!("{kind}-{n}")),
                    dependency: dependency(kind),
                    ..Default::default()
                },
                now,
            )
            .expect("new operation");
            batch.push(op);
        }
        total += batch.len();
        s.operation_insert_many(batch).await.expect("enqueue");
        let version = if progress < 0.7 { "v1.8.2" } else { "v1.9.0" };
        let claimed = s
            .operation_claim_eligible(ClaimEligibleParams {
                above_default_only: false,
                kinds: vec![],
                limit: 1000,
                claimant: Claimant {
                    worker_id: format!("worker-{}", ["a7f3", "b210", "c9e4"][k as usize % 3]),
                    code_version: Some(version.into()),
                    lease: Duration::seconds(30),
                },
            })
            .await
            .expect("claim");
        let mut done = Vec::new();
        for (j, op) in claimed.iter().enumerate() {
            let t = match op.kind.as_str() {
                "webhook.deliver" => {
                    dead_webhooks.push(op.id);
                    Transition::dead(
                        TerminalReason::Permanent,
                        Some(Failure::permanent(
                            OperationError::new(
                                "410 Gone: partner endpoint https://hooks.partner.example/orders was removed",
                            )
                            .field("endpoint")
                            .decision("dead at once: a 410 will not change by retrying")
                            .next_action("ask the partner for the new endpoint, then re-drive"),
                        )),
                    )
                }
                "shipment.create" if op.payload["destination"].get("postal_code").is_none() => {
                    Transition::dead(
                        TerminalReason::Permanent,
                        Some(Failure::permanent(
                            OperationError::new("destination postal code is missing")
                                .field("destination.postal_code")
                                .next_action("fix the order's address, then re-drive"),
                        )),
                    )
                }
                "payment.capture" if outage => {
                    let f = Failure::transient(
                        "stripe: 503 Service Unavailable (upstream connect error)",
                    );
                    if op.attempt >= 4 {
                        Transition::dead(TerminalReason::AttemptsExhausted, Some(f))
                    } else {
                        Transition::retry(now + Duration::minutes(1), f)
                    }
                }
                "invoice.render" if (n + j).is_multiple_of(17) => Transition::reconcile(
                    Failure::unknown("timed out after the request was written"),
                ),
                "email.send" if (n + j).is_multiple_of(9) => Transition::retry(
                    now + Duration::minutes(1),
                    Failure::transient("smtp: connection reset by peer"),
                ),
                _ => Transition::succeeded(Some(format!("re_{}", &op.id.to_string()[24..]))),
            };
            done.push(CompleteParams {
                id: op.id,
                claim_token: op.claim_token.expect("claimed"),
                transition: t,
            });
        }
        s.operation_complete_many(done).await.expect("complete");
        clock.advance(Duration::minutes(step));
    }
    // Now: a backlog of pending work, one held, a few rate-limited retries.
    clock.set(end);
    let mut batch = Vec::new();
    for i in 0..6 {
        n += 1;
        batch.push(
            NewOperation::new(
                "email.send",
                payload("email.send", n),
                &policy,
                EnqueueOptions {
                    delay: Some(Duration::minutes(5 + i)),
                    dependency: dependency("email.send"),
                    ..Default::default()
                },
                end - Duration::minutes(40),
            )
            .expect("new operation"),
        );
    }
    total += batch.len();
    s.operation_insert_many(batch)
        .await
        .expect("enqueue backlog");
    let smtp = s
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec!["email.send".into()],
            limit: 1,
            claimant: Claimant {
                worker_id: "worker-a7f3".into(),
                code_version: Some("v1.9.0".into()),
                lease: Duration::seconds(30),
            },
        })
        .await
        .expect("claim");
    for op in smtp {
        s.operation_complete(CompleteParams {
            id: op.id,
            claim_token: op.claim_token.expect("claimed"),
            transition: Transition::hold(Failure::configuration(
                "535 5.7.8 SMTP authentication failed: credentials rejected",
            )),
        })
        .await
        .expect("hold");
    }
    Seeded {
        dead_webhooks,
        total,
    }
}

/// Enqueues `n` new `kind` operations, eligible now, as a service would.
pub async fn enqueue(store: &PgStore, kind: &str, n: usize) {
    let now = store.now().await.expect("the store's clock");
    let batch = (0..n)
        .map(|i| {
            NewOperation::new(
                kind,
                json!({ "n": i }),
                &policy(),
                EnqueueOptions::default(),
                now,
            )
            .expect("new operation")
        })
        .collect();
    store.operation_insert_many(batch).await.expect("enqueue");
}

/// How many operations matching `filter` are in `status`.
pub async fn count_in(store: &PgStore, filter: &OperationFilter, status: Status) -> u64 {
    store
        .operation_count_matching(CountMatchingParams {
            filter: filter.clone(),
        })
        .await
        .expect("count")
        .get(&status)
        .copied()
        .unwrap_or(0)
}

/// The value of the first `name="csrf"` field on a page.
pub fn csrf_of(page: &str) -> String {
    let at = page
        .find(r#"name="csrf" value=""#)
        .unwrap_or_else(|| panic!("no CSRF field on the page:\n{page}"));
    let rest = &page[at + r#"name="csrf" value=""#.len()..];
    rest[..rest.find('"').expect("end of the CSRF value")].to_owned()
}

/// The newest `limit` audit entries as (action, actor), newest first.
pub async fn audit_actions(store: &PgStore, limit: u32) -> Vec<(String, String)> {
    store
        .audit_list(oprec_core::operator::AuditListParams {
            limit,
            ..Default::default()
        })
        .await
        .expect("audit list")
        .into_iter()
        .map(|a| (a.entry.action, a.entry.actor))
        .collect()
}

/// `n` operations of `kind` calling `dependency` (if any), eligible now.
pub async fn insert(store: &PgStore, kind: &str, n: usize, dependency: Option<&str>) {
    let now = store.now().await.expect("now");
    let ops = (0..n)
        .map(|i| {
            NewOperation::new(
                kind,
                json!({ "n": i }),
                &policy(),
                EnqueueOptions {
                    dependency: dependency.map(str::to_owned),
                    ..EnqueueOptions::default()
                },
                now - Duration::seconds(1),
            )
        })
        .collect::<oprec_core::Result<Vec<_>>>()
        .expect("operations");
    store.operation_insert_many(ops).await.expect("insert");
}

/// [`insert`], then one claim of up to `claim` of them by worker `w1` (its lease a minute).
pub async fn insert_and_claim(
    store: &PgStore,
    kind: &str,
    n: usize,
    dependency: Option<&str>,
    claim: u32,
) -> Vec<oprec_core::Claimed> {
    insert(store, kind, n, dependency).await;
    store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![kind.to_owned()],
            limit: claim,
            claimant: Claimant {
                worker_id: "w1".into(),
                code_version: None,
                lease: Duration::seconds(60),
            },
        })
        .await
        .expect("claim")
}

/// One `kind` operation whose attempt timed out after its request was written: its outcome is
/// unknown, so it is reconciling until a person (or a reconciler) says what became of it.
pub async fn reconciling(store: &PgStore, kind: &str) -> OperationId {
    let claimed = insert_and_claim(store, kind, 1, None, 1).await;
    let c = &claimed[0];
    store
        .operation_complete_many(vec![CompleteParams {
            id: c.id,
            claim_token: c.claim_token.expect("claimed"),
            transition: Transition::reconcile(Failure::unknown(
                "timed out after the request was written",
            )),
        }])
        .await
        .expect("reconcile");
    c.id
}
