//! Migration 0009/0010 on a table that already holds re-drive lineages: every copy gets its
//! lineage's first operation as root (the effect key), a second copy of one parent made by two
//! concurrent re-drives before the fix is kept but marked, and from then on the database refuses
//! any further second copy. Migration 0016 on originals that already have a copy: each is marked
//! with it and counted apart from the dead awaiting action.

mod common;

use oprec_core::store::OperationGetParams;
use oprec_core::{OperationId, Store};
use oprec_postgres::MIGRATOR;
use sqlx::migrate::Migrator;
use uuid::Uuid;

/// Inserts a dead operation, re-driven from `of` when given, created `age_s` seconds ago.
async fn dead(pool: &sqlx::PgPool, of: Option<Uuid>, age_s: i64) -> Uuid {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, status, next_eligible_at, created_at, \
         updated_at, terminal_at, terminal_reason, redrive_of) \
         VALUES ($1, 'k', '{}', 'dead', now(), now() - $2 * interval '1 second', now(), now(), \
         'permanent', $3)",
    )
    .bind(id)
    .bind(age_s as f64)
    .bind(of)
    .execute(pool)
    .await
    .expect("insert");
    id
}

#[tokio::test]
async fn lineages_get_their_root_and_earlier_duplicates_are_marked() {
    let store = common::empty_schema(4).await;
    // The table as it stood before 0009 (its online indexes aside: `migrate` builds those).
    let before: Vec<_> = MIGRATOR
        .iter()
        .filter(|m| m.version < 9 && !m.no_tx)
        .cloned()
        .collect();
    assert!(
        before.iter().any(|m| m.version == 5),
        "the migrations before this one, 0005 among them"
    );
    Migrator::with_migrations(before)
        .run(store.pool())
        .await
        .expect("migrate to 0008");
    let pool = store.pool();
    let original = dead(pool, None, 50).await;
    let first = dead(pool, Some(original), 40).await;
    let second = dead(pool, Some(original), 30).await;
    let grandchild = dead(pool, Some(first), 20).await;
    let orphan_parent = dead(pool, None, 10).await;

    store.migrate().await.expect("migrate to the end");

    let get = |id: Uuid| {
        let store = &store;
        async move {
            store
                .operation_get(OperationGetParams {
                    id: OperationId::from_uuid(id),
                })
                .await
                .expect("get")
                .expect("present")
                .operation
        }
    };
    for (copy, root) in [
        (first, original),
        (second, original),
        (grandchild, original),
    ] {
        let o = get(copy).await;
        assert_eq!(o.redrive_root, Some(OperationId::from_uuid(root)), "{copy}");
        assert_eq!(o.effect_root(), OperationId::from_uuid(root));
    }
    assert_eq!(get(original).await.redrive_root, None);
    let marked: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM operations WHERE redrive_duplicate ORDER BY id")
            .fetch_all(pool)
            .await
            .expect("marked");
    assert_eq!(marked, vec![second], "only the later copy of one parent");

    let valid: bool = sqlx::query_scalar(
        "SELECT i.indisvalid AND i.indisunique FROM pg_index i \
         JOIN pg_class c ON c.oid = i.indexrelid \
         WHERE c.relname = 'operations_redrive_of_once' \
           AND c.relnamespace = current_schema()::regnamespace",
    )
    .fetch_one(pool)
    .await
    .expect("index");
    assert!(valid, "the unique index is built and valid");
    // Another copy of a parent that has one is refused; a first copy of another is not.
    let refused = sqlx::query(
        "INSERT INTO operations (id, kind, payload, next_eligible_at, created_at, updated_at, \
         redrive_of) VALUES ($1, 'k', '{}', now(), now(), now(), $2)",
    )
    .bind(Uuid::now_v7())
    .bind(original)
    .execute(pool)
    .await;
    let err = refused.expect_err("a second copy of one parent");
    assert!(
        err.to_string().contains("operations_redrive_of_once"),
        "{err}"
    );
    dead(pool, Some(orphan_parent), 0).await;
}

/// Migration 0016 on a table that already holds re-driven originals: each is marked with its
/// (first) copy, and the trigger-kept counts move it from dead to dead re-driven, agreeing with a
/// count of the table.
#[tokio::test]
async fn originals_with_a_copy_are_marked_and_counted_apart() {
    let store = common::empty_schema(4).await;
    let before: Vec<_> = MIGRATOR
        .iter()
        .filter(|m| m.version < 16 && !m.no_tx)
        .cloned()
        .collect();
    assert!(before.iter().any(|m| m.version == 15), "up to 0015");
    Migrator::with_migrations(before)
        .run(store.pool())
        .await
        .expect("migrate to 0015");
    let pool = store.pool();
    let original = dead(pool, None, 50).await;
    let copy = dead(pool, Some(original), 40).await;
    let lone = dead(pool, None, 30).await;

    store.migrate().await.expect("migrate to the end");

    let get = |id: Uuid| {
        let store = &store;
        async move {
            store
                .operation_get(OperationGetParams {
                    id: OperationId::from_uuid(id),
                })
                .await
                .expect("get")
                .expect("present")
                .operation
        }
    };
    assert_eq!(
        get(original).await.redriven_as,
        Some(OperationId::from_uuid(copy))
    );
    assert_eq!(get(copy).await.redriven_as, None);
    assert_eq!(get(lone).await.redriven_as, None);

    let stats = oprec_core::OperatorStore::stats(&store)
        .await
        .expect("stats");
    assert_eq!(
        stats.by_status.get(&oprec_core::Status::Dead),
        Some(&2),
        "the copy and the lone one await action"
    );
    assert_eq!(stats.dead_by_kind.get("k"), Some(&2));
    assert_eq!(stats.dead_redriven_by_kind.get("k"), Some(&1));
    let (kept, counted): (Vec<String>, Vec<String>) = (
        sqlx::query_scalar(
            "SELECT concat_ws('/', kind, status, failure_class, redriven, sum(operations)) \
             FROM operation_counts GROUP BY kind, status, failure_class, redriven \
             HAVING sum(operations) <> 0 ORDER BY 1",
        )
        .fetch_all(pool)
        .await
        .expect("kept counts"),
        sqlx::query_scalar(
            "SELECT concat_ws('/', kind, status, coalesce(last_failure_class, ''), \
             redriven_as IS NOT NULL, count(*)) \
             FROM operations GROUP BY kind, status, last_failure_class, redriven_as IS NOT NULL \
             ORDER BY 1",
        )
        .fetch_all(pool)
        .await
        .expect("counted"),
    );
    assert_eq!(kept, counted);
}
