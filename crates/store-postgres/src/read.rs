//! What every caller reads ([`Store`](oprec_core::Store)): the schema, the store's "now", one
//! operation with its history, listings and counts.

use chrono::{DateTime, Utc};
use oprec_core::store::{CountRow, ListParams, OperationGetParams};
use oprec_core::{Error, Operation, OperationDetail, Result};

use crate::row::{self, Columns};
use crate::{MIGRATOR, PgStore, backend_error, filter, sql};

/// How long a migration waits between two tries of the migration lock.
const MIGRATE_LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Creates or upgrades the schema with the embedded migrations, one migrating process per
/// database and schema at a time. The lock is sqlx's idea with two changes: it is taken per
/// schema, and by polling (see `read_migrate_lock.sql`), because a migration that builds an index
/// concurrently waits for every older statement in the database, and sqlx's blocking lock would
/// make a second `oprec migrate` started meanwhile such a statement: a deadlock.
pub(crate) async fn migrate(store: &PgStore) -> Result<()> {
    let mut conn = store.pool.acquire().await.map_err(backend_error)?;
    while !sqlx::query_scalar::<_, bool>(sql::READ_MIGRATE_LOCK)
        .fetch_one(&mut *conn)
        .await
        .map_err(backend_error)?
    {
        tokio::time::sleep(MIGRATE_LOCK_POLL).await;
    }
    let mut migrator = sqlx::migrate::Migrator::with_migrations(MIGRATOR.migrations.to_vec());
    migrator.set_locking(false);
    // `run_direct` is what `run` calls once it has a connection; `run(&mut *conn)` itself trips
    // the compiler's "Acquire is not general enough" inside the store traits' futures (the
    // workaround sqlx's own comment names).
    let ran = migrator
        .run_direct(None, &mut *conn, false)
        .await
        .map_err(|e| Error::backend(false, e));
    let unlocked = sqlx::query_scalar::<_, bool>(sql::READ_MIGRATE_UNLOCK)
        .fetch_one(&mut *conn)
        .await
        .map_err(backend_error);
    ran?;
    unlocked.map(|_| ())
}

/// The store's clock, or with the system clock the database's, so that every host judges
/// eligibility and leases by one clock.
pub(crate) async fn now(store: &PgStore) -> Result<DateTime<Utc>> {
    match store.now_bind() {
        Some(now) => Ok(now),
        None => sqlx::query_scalar("SELECT now()")
            .fetch_one(&store.pool)
            .await
            .map_err(backend_error),
    }
}

/// One operation with its attempt history, oldest first.
pub(crate) async fn operation_get(
    store: &PgStore,
    params: OperationGetParams,
) -> Result<Option<OperationDetail>> {
    let id = params.id.as_uuid();
    let Some(op) = sqlx::query(sql::READ_OPERATION)
        .bind(id)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?
    else {
        return Ok(None);
    };
    let attempts = sqlx::query(sql::READ_ATTEMPTS)
        .bind(id)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(Some(OperationDetail {
        operation: row::operation(&op)?,
        attempts: attempts.iter().map(row::attempt).collect::<Result<_>>()?,
    }))
}

/// Operations matching the listing's filters, one keyset page.
pub(crate) async fn operation_list(store: &PgStore, params: ListParams) -> Result<Vec<Operation>> {
    let mut query = filter::list_query(params);
    let rows = query
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::operation).collect()
}

/// Operations counted by status, kind and last failure class.
pub(crate) async fn operation_count(store: &PgStore) -> Result<Vec<CountRow>> {
    let rows = sqlx::query(sql::READ_COUNT)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(CountRow {
                status: c.parsed("status")?,
                kind: c.get("kind")?,
                failure_class: c.opt_parsed("last_failure_class")?,
                count: c.big_count("count")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The SQL of a migration without its comment lines.
    fn statements(sql: &str) -> String {
        sql.lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The rolling-deploy rule of the README, on every migration written since it (after 0005:
    /// the earlier ones cannot be edited, sqlx keeps their checksums): a header saying whether it
    /// is safe while workers run; on PostgreSQL, an index only concurrently, alone in its file,
    /// outside a transaction (which sqlx must have read from the file's first line).
    #[test]
    fn migrations_state_their_rolling_deploy_safety() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
        let mut checked = 0;
        for db in ["postgres", "sqlite"] {
            for entry in std::fs::read_dir(root.join(db)).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let version: u32 = name[..4].parse().unwrap();
                if version <= 5 {
                    continue;
                }
                checked += 1;
                let sql = std::fs::read_to_string(&path).unwrap();
                assert!(
                    sql.lines().any(|l| l.starts_with("-- Rolling deploy: ")),
                    "{db}/{name} does not say whether it is safe while workers run \
                     (a `-- Rolling deploy: ...` header)"
                );
                let body = statements(&sql).to_uppercase();
                if db == "postgres" && body.contains("CREATE INDEX") {
                    assert!(
                        body.matches("CREATE INDEX").count()
                            == body.matches("CREATE INDEX CONCURRENTLY").count(),
                        "{db}/{name}: indexes are built CONCURRENTLY on PostgreSQL"
                    );
                    assert!(
                        sql.starts_with("-- no-transaction"),
                        "{db}/{name}: a concurrent build runs outside a transaction"
                    );
                    assert_eq!(
                        body.matches(';').count(),
                        1,
                        "{db}/{name}: one statement (several would run as one implicit \
                         transaction, which a concurrent build refuses)"
                    );
                    let migration = crate::MIGRATOR
                        .iter()
                        .find(|m| i64::from(version) == m.version)
                        .unwrap();
                    assert!(migration.no_tx, "{name}: sqlx reads it as no-transaction");
                }
            }
        }
        assert!(checked >= 2, "the migrations after 0005 were found");
    }
}
