//! The operations listing picks its plan from the trigger-kept counts, not from statistics: a
//! status with more than 20,000 operations walks the primary key in id order, one with fewer is
//! found through `(status, kind, id)` and fetched by id, and a status or kind with none reads
//! nothing. Each way must list exactly what the plain statement lists, in order and across
//! pages; the table here is never analyzed.

mod common;

use chrono::Duration;
use oprec_core::store::{ClaimEligibleParams, Claimant, ListParams};
use oprec_core::{
    EnqueueOptions, EnqueueStore, NewOperation, RetryPolicy, Status, Store, WorkerStore,
};
use oprec_postgres::PgStore;
use serde_json::json;

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(3)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .unwrap()
}

async fn add(store: &PgStore, kind: &str, n: usize) {
    let now = store.now().await.unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1_000) {
        let ops = chunk
            .iter()
            .map(|i| {
                NewOperation::new(
                    kind,
                    json!({ "i": i }),
                    &policy(),
                    EnqueueOptions::default(),
                    now,
                )
                .unwrap()
            })
            .collect();
        store.operation_insert_many(ops).await.unwrap();
    }
}

/// Every page of a listing, followed by its cursor.
async fn pages(store: &PgStore, params: ListParams) -> Vec<String> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .operation_list(ListParams {
                after,
                ..params.clone()
            })
            .await
            .unwrap();
        if page.is_empty() {
            return all;
        }
        after = page.last().map(|o| o.id);
        all.extend(page.into_iter().map(|o| o.id.to_string()));
    }
}

/// What the plain statement lists, newest or oldest first.
async fn plain(store: &PgStore, condition: &str, newest_first: bool) -> Vec<String> {
    let order = if newest_first { "DESC" } else { "ASC" };
    sqlx::query_scalar::<_, uuid::Uuid>(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM operations WHERE {condition} ORDER BY id {order}"
    )))
    .fetch_all(store.pool())
    .await
    .unwrap()
    .into_iter()
    .map(|id| id.to_string())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_plan_lists_what_the_plain_statement_lists() {
    let store = common::fresh_store(4).await;
    add(&store, "many", 20_500).await;
    add(&store, "few", 300).await;
    let claimed = store
        .operation_claim_eligible(ClaimEligibleParams {
            kinds: vec!["few".into()],
            limit: 120,
            claimant: Claimant {
                worker_id: "w".into(),
                code_version: None,
                lease: Duration::seconds(60),
            },
            above_default_only: false,
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 120);
    for newest_first in [true, false] {
        let list = |status: Option<Status>, kind: Option<&str>, limit: u32| ListParams {
            status,
            kind: kind.map(str::to_owned),
            newest_first,
            limit,
            ..Default::default()
        };
        // More than 20,000 pending: the primary key walked in order (first page only: the whole
        // listing pages 20,680 rows).
        let many = store
            .operation_list(list(Some(Status::Pending), None, 500))
            .await
            .unwrap();
        let want = plain(&store, "status = 'pending'", newest_first).await;
        assert_eq!(want.len(), 20_680);
        let got: Vec<String> = many.iter().map(|o| o.id.to_string()).collect();
        assert_eq!(got, want[..500], "newest first: {newest_first}");
        // Few: found by (status, kind, id), paged across chunks and pages.
        let running = pages(&store, list(Some(Status::Running), None, 50)).await;
        assert_eq!(
            running,
            plain(&store, "status = 'running'", newest_first).await
        );
        let few_pending = pages(&store, list(Some(Status::Pending), Some("few"), 70)).await;
        assert_eq!(
            few_pending,
            plain(&store, "status = 'pending' AND kind = 'few'", newest_first).await
        );
        let kind_only = pages(&store, list(None, Some("few"), 1_000)).await;
        assert_eq!(kind_only, plain(&store, "kind = 'few'", newest_first).await);
        // None counted: nothing read, nothing listed.
        assert!(
            pages(&store, list(Some(Status::Dead), None, 50))
                .await
                .is_empty()
        );
        assert!(
            pages(&store, list(None, Some("no.such.kind"), 50))
                .await
                .is_empty()
        );
        // Other filters still narrow the few.
        let filtered = store
            .operation_list(ListParams {
                error_contains: Some("nothing failed".into()),
                ..list(Some(Status::Running), None, 50)
            })
            .await
            .unwrap();
        assert!(filtered.is_empty());
    }
}

/// Adds `n` operations of kind `kind` created at `created_at`, with ids made at `id_time` (a
/// restore or an import keeps an old id with a new creation time, or the reverse): the id's
/// time and the creation time need not agree.
async fn add_created(
    store: &PgStore,
    kind: &str,
    n: usize,
    created_at: chrono::DateTime<chrono::Utc>,
    id_time: chrono::DateTime<chrono::Utc>,
) {
    let ops = (0..n)
        .map(|i| {
            let mut op = NewOperation::new(
                kind,
                json!({ "i": i }),
                &policy(),
                EnqueueOptions::default(),
                created_at,
            )
            .unwrap();
            let ts = uuid::Timestamp::from_unix(
                uuid::NoContext,
                u64::try_from(id_time.timestamp()).unwrap(),
                id_time.timestamp_subsec_nanos(),
            );
            op.id = oprec_core::OperationId::from(uuid::Uuid::new_v7(ts));
            op
        })
        .collect();
    store.operation_insert_many(ops).await.unwrap();
}

/// A creation-time range walks the primary key between the ids created in the five-minute slots
/// it touches (`creation_slots`, kept by the insert trigger), and a range that no slot touches
/// reads nothing. The ids are UUID v7, but here their times disagree with the creation times
/// (operations restored with old ids, others created with a past time): every range still lists
/// exactly what the plain statement lists, before and after the upkeep removed the slot whose
/// operations retention removed (and only it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creation_time_range_lists_what_the_plain_statement_lists() {
    use oprec_core::RetentionStore;
    use oprec_core::retention::BacklogSlotsCompactParams;

    let store = common::fresh_store(4).await;
    let now = store.now().await.unwrap();
    // Created three hours ago, ids of now.
    add_created(&store, "past", 300, now - Duration::hours(3), now).await;
    // Created now.
    add(&store, "now", 200).await;
    // Created half an hour ago with ids of ten days ago (restored from an archive).
    add_created(
        &store,
        "restored",
        50,
        now - Duration::minutes(30),
        now - Duration::days(10),
    )
    .await;
    let at = |t: chrono::DateTime<chrono::Utc>| format!("'{}'::timestamptz", t.to_rfc3339());
    let ranges = [
        (Some(now - Duration::hours(1)), None),
        (None, Some(now - Duration::hours(1))),
        (
            Some(now - Duration::hours(4)),
            Some(now - Duration::hours(2)),
        ),
        (
            Some(now - Duration::hours(1)),
            Some(now - Duration::minutes(20)),
        ),
        // Touching no slot: nothing.
        (None, Some(now - Duration::days(10))),
        (Some(now + Duration::hours(1)), None),
    ];
    let check = |store: PgStore| async move {
        for newest_first in [true, false] {
            for (since, until) in ranges {
                let mut condition = vec!["true".to_owned()];
                if let Some(t) = since {
                    condition.push(format!("created_at >= {}", at(t)));
                }
                if let Some(t) = until {
                    condition.push(format!("created_at < {}", at(t)));
                }
                for (status, kind) in [
                    (None, None),
                    (Some(Status::Pending), None),
                    (None, Some("restored")),
                ] {
                    let mut cond = condition.clone();
                    if status.is_some() {
                        cond.push("status = 'pending'".into());
                    }
                    if let Some(k) = kind {
                        cond.push(format!("kind = '{k}'"));
                    }
                    let want = plain(&store, &cond.join(" AND "), newest_first).await;
                    let got = pages(
                        &store,
                        ListParams {
                            status,
                            kind: kind.map(str::to_owned),
                            created_since: since,
                            created_until: until,
                            newest_first,
                            limit: 40,
                            ..Default::default()
                        },
                    )
                    .await;
                    assert_eq!(got, want, "{since:?}..{until:?} {status:?} {kind:?}");
                }
            }
        }
        // What each range lists, by count: the restored and the new in the last hour, the past
        // ones before it.
        let count = |since, until| {
            let store = store.clone();
            async move {
                pages(
                    &store,
                    ListParams {
                        created_since: since,
                        created_until: until,
                        newest_first: true,
                        limit: 1_000,
                        ..Default::default()
                    },
                )
                .await
                .len()
            }
        };
        (
            count(Some(now - Duration::hours(1)), None).await,
            count(None, Some(now - Duration::hours(1))).await,
        )
    };
    assert_eq!(check(store.clone()).await, (250, 300));
    let slots = |store: PgStore| async move {
        sqlx::query_scalar::<_, chrono::DateTime<chrono::Utc>>(
            "SELECT slot FROM creation_slots ORDER BY slot",
        )
        .fetch_all(store.pool())
        .await
        .unwrap()
    };
    let before = slots(store.clone()).await;
    assert!(before.len() >= 3, "{before:?}");
    // Retention removes the past ones; the upkeep removes their slot, and only theirs.
    sqlx::query("DELETE FROM operations WHERE kind = 'past'")
        .execute(store.pool())
        .await
        .unwrap();
    // Slots older than a day (here: than an hour from now) are looked at 200 at a time from a
    // random place: a few passes reach them all.
    let want: Vec<_> = before
        .iter()
        .copied()
        .filter(|slot| *slot > now - Duration::hours(2))
        .collect();
    let mut after = Vec::new();
    for _ in 0..200 {
        store
            .backlog_slots_compact(BacklogSlotsCompactParams {
                before: now + Duration::days(1) + Duration::hours(1),
            })
            .await
            .unwrap();
        after = slots(store.clone()).await;
        if after.len() < before.len() {
            break;
        }
    }
    assert_eq!(after, want, "the past ones' slot is gone, and only it");
    assert_eq!(check(store.clone()).await, (250, 0));
    // An insert whose ids lie in its slot's own five minutes, into a slot already made, writes
    // nothing there (the row version stays the one the slot's first insert wrote).
    // A minute into its slot: one second later is the same slot.
    let six = {
        let t = now - Duration::hours(6);
        t - Duration::seconds(t.timestamp().rem_euclid(300)) + Duration::minutes(1)
    };
    let version = |store: PgStore| async move {
        sqlx::query_scalar::<_, String>(
            "SELECT xmin::text || ctid::text FROM creation_slots WHERE slot = backlog_slot($1)",
        )
        .bind(six)
        .fetch_one(store.pool())
        .await
        .unwrap()
    };
    add_created(&store, "six", 10, six, six).await;
    let made = version(store.clone()).await;
    add_created(&store, "six", 10, six, six + Duration::seconds(1)).await;
    assert_eq!(version(store.clone()).await, made);
}

/// An insert of an operation created long ago (a restore) holds the lock that the upkeep's
/// removal of empty creation slots takes exclusively, until it commits: the removal then sees
/// it, or comes first and the insert makes its slot again. A new operation takes no lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_insert_and_the_removal_of_empty_slots_take_turns() {
    let store = common::fresh_store(4).await;
    let insert = |days: i64| {
        format!(
            "INSERT INTO operations (id, kind, payload, next_eligible_at, created_at, updated_at) \
             VALUES (gen_random_uuid(), 'k', '{{}}', now(), now() - interval '{days} days', now())"
        )
    };
    let free = || async {
        let mut tx = store.pool().begin().await.unwrap();
        let got: bool =
            sqlx::query_scalar("SELECT pg_try_advisory_xact_lock(creation_slots_lock())")
                .fetch_one(&mut *tx)
                .await
                .unwrap();
        tx.rollback().await.unwrap();
        got
    };
    for (days, locks) in [(2, true), (0, false)] {
        let mut restore = store.pool().begin().await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(insert(days)))
            .execute(&mut *restore)
            .await
            .unwrap();
        assert_eq!(!free().await, locks, "created {days} days ago");
        restore.commit().await.unwrap();
        assert!(free().await, "released at commit");
    }
}
