//! What every caller reads ([`Store`](oprec_core::Store)): the schema, the store's "now", one
//! operation with its history, listings and counts.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use oprec_core::store::{CountRow, ListParams, OperationGetParams};
use oprec_core::{Error, Operation, OperationDetail, Result};

use crate::row::{self, Columns};
use crate::{MIGRATOR, PgStore, backend_error, filter, sql};

/// Creates or upgrades the schema with the embedded migrations: first every transactional one,
/// under sqlx's migration lock (neither run nor locked when all are recorded already); then the
/// `-- no-transaction` ones (each a single `CREATE INDEX CONCURRENTLY IF NOT EXISTS`, or
/// `DROP INDEX CONCURRENTLY IF EXISTS`), outside it: each index build whose index the catalog
/// does not show built and valid, on every run (and recorded once they ran, [`record_online`]),
/// and never an index that a later one drops. A concurrent build waits for every older
/// transaction in the database, and another process waiting for the migration lock holds one:
/// building under the lock deadlocks whenever two processes migrate at once (a fleet starting,
/// tests in parallel). Outside the lock, two processes building the same index are harmless: the
/// loser finds it made, which [`online_index`] treats as done. An online index that a failed
/// concurrent build left invalid is dropped and built again ([`drop_invalid_index`]).
pub(crate) async fn migrate(store: &PgStore) -> Result<()> {
    let applied = refuse_newer_schema(store).await?;
    // Every transactional migration recorded as applied with this release's checksum: nothing
    // for the locked run to do, and its lock is not taken. sqlx's lock is one per database, not
    // per schema, so a migrate of an up-to-date schema waited for any process migrating another
    // schema of the database (another application's, tests in parallel, each in its own). A
    // mismatch or a gap goes to the locked run, which applies or reports it.
    let pending = MIGRATOR.iter().filter(|m| !m.no_tx).any(|m| {
        !applied
            .iter()
            .any(|(v, checksum)| *v == m.version && *checksum == *m.checksum)
    });
    if pending {
        let mut locked = sqlx::migrate::Migrator::with_migrations(
            MIGRATOR.iter().filter(|m| !m.no_tx).cloned().collect(),
        );
        // An online index another process recorded is not "missing".
        locked.set_ignore_missing(true);
        locked
            .run(&store.pool)
            .await
            .map_err(|e| Error::backend(false, e))?;
    }
    let online: Vec<_> = MIGRATOR.iter().filter(|m| m.no_tx).collect();
    let names: Vec<&str> = online.iter().filter_map(|m| online_index_name(m)).collect();
    // Each online index that is there, by name: whether it is valid.
    let valid: HashMap<String, bool> = sqlx::query_as(sql::MIGRATE_INDEX_STATES)
        .bind(names)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?
        .into_iter()
        .collect();
    for (i, m) in online.iter().enumerate() {
        let name = online_index_name(m);
        // An index a later migration drops is not built again on every run only to be dropped.
        if name.is_some_and(|name| {
            online[i + 1..]
                .iter()
                .any(|later| dropped_index_name(later) == Some(name))
        }) {
            continue;
        }
        if let Some(name) = name {
            match valid.get(name) {
                // Built: left alone (see online_index for why the statement is not run again).
                Some(true) => continue,
                Some(false) => drop_invalid_index(store, m, name).await?,
                None => {}
            }
        }
        online_index(store, m).await?;
    }
    record_online(store, &online).await
}

/// Records the online migrations once they ran, as sqlx records the others, so that a release
/// that does not know one refuses to migrate ([`refuse_newer_schema`]) instead of running its
/// own online migrations again (it would build an index a newer one dropped). They still run
/// on every migrate: a record says a migration ran once, not that its index is valid now.
async fn record_online(store: &PgStore, online: &[&sqlx::migrate::Migration]) -> Result<()> {
    let versions: Vec<i64> = online.iter().map(|m| m.version).collect();
    let descriptions: Vec<&str> = online.iter().map(|m| &*m.description).collect();
    let checksums: Vec<&[u8]> = online.iter().map(|m| &*m.checksum).collect();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         SELECT v, d, true, c, 0 FROM UNNEST($1::int8[], $2::text[], $3::bytea[]) AS t(v, d, c)
         ON CONFLICT (version) DO NOTHING",
    )
    .bind(versions)
    .bind(descriptions)
    .bind(checksums)
    .execute(&store.pool)
    .await
    .map_err(backend_error)?;
    Ok(())
}

/// The index a `-- no-transaction` migration drops: the name after `DROP INDEX CONCURRENTLY IF
/// EXISTS`.
fn dropped_index_name(m: &sqlx::migrate::Migration) -> Option<&str> {
    let (_, rest) = m
        .sql
        .as_str()
        .split_once("DROP INDEX CONCURRENTLY IF EXISTS")?;
    rest.split_whitespace()
        .next()
        .map(|name| name.trim_end_matches(';'))
}

/// The index a `-- no-transaction` migration builds: the name after `IF NOT EXISTS`.
fn online_index_name(m: &sqlx::migrate::Migration) -> Option<&str> {
    let (_, rest) = m.sql.as_str().split_once("IF NOT EXISTS")?;
    rest.split_whitespace().next()
}

/// Drops the migration's index `name`, which a concurrent build that failed half-way (or was
/// interrupted) left invalid: PostgreSQL keeps such an index, updates it on every write and never
/// reads it, and `IF NOT EXISTS` would take it for built. Dropped concurrently, so that writers
/// never wait; [`online_index`] then builds it again. A build still running in another process
/// shows as invalid too: the drop waits for it to end, and the index is built once more.
async fn drop_invalid_index(
    store: &PgStore,
    m: &sqlx::migrate::Migration,
    name: &str,
) -> Result<()> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP INDEX CONCURRENTLY IF EXISTS {name}"
    )))
    .execute(&store.pool)
    .await
    .map_err(|e| {
        Error::backend(
            false,
            format!(
                "migration {} ({}): the index {name} is invalid (a concurrent build failed) and \
                 could not be dropped to be built again: {e}; drop it (DROP INDEX CONCURRENTLY \
                 {name}) and migrate again",
                m.version, m.description
            ),
        )
    })?;
    Ok(())
}

/// Refuses a schema that a newer release migrated: an applied migration this binary does not know
/// (the locked run below ignores missing ones, because it leaves the online indexes out). Only the
/// newest release migrates; an older one changes nothing and says so. Otherwise, the migrations
/// recorded as applied successfully: their versions and checksums (none on a new schema).
async fn refuse_newer_schema(store: &PgStore) -> Result<Vec<(i64, Vec<u8>)>> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    if !exists {
        return Ok(Vec::new());
    }
    let applied: Vec<(i64, Vec<u8>, bool)> =
        sqlx::query_as("SELECT version, checksum, success FROM _sqlx_migrations")
            .fetch_all(&store.pool)
            .await
            .map_err(backend_error)?;
    match applied
        .iter()
        .map(|(v, _, _)| v)
        .find(|v| !MIGRATOR.iter().any(|m| m.version == **v))
    {
        Some(v) => Err(Error::backend(
            false,
            format!(
                "migration {v} was previously applied but is missing in this release: the schema \
                 is newer than this binary; migrate with the newer release"
            ),
        )),
        None => Ok(applied
            .into_iter()
            .filter(|(_, _, success)| *success)
            .map(|(v, checksum, _)| (v, checksum))
            .collect()),
    }
}

/// Below this many operations an online index is built in place: it takes a moment, and a
/// concurrent build would wait for every older transaction in the whole database (another
/// schema's tests, another application's long report) for nothing.
const BUILD_IN_PLACE_BELOW: i64 = 100_000;

/// Builds one online index if it is not there yet: concurrently on a table of
/// [`BUILD_IN_PLACE_BELOW`] operations or more, in place on a smaller one. A build of the same
/// index by another process at the same moment (duplicate name) counts as built.
///
/// [`migrate`] does not call it for an index already there and valid (one catalog read for all
/// of them, `migrate_index_states.sql`): the statement itself, even with `IF NOT EXISTS`, takes
/// the table's SHARE lock before it finds the name taken when it builds in place, so a migrate
/// of an up-to-date schema (a deploy step run on every release, a service that migrates as it
/// starts) waited behind every open write transaction on `operations` (a handler's fenced
/// transaction, a large enqueue; a stalled one until its session's 15 s idle timeout) while
/// every claim, completion and enqueue queued behind it, once per online migration.
async fn online_index(store: &PgStore, m: &sqlx::migrate::Migration) -> Result<()> {
    let rows: i64 = sqlx::query_scalar(sql::MIGRATE_OPERATIONS_AT_LEAST)
        .bind(BUILD_IN_PLACE_BELOW)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    let statement = if rows < BUILD_IN_PLACE_BELOW {
        // `CREATE [UNIQUE] INDEX CONCURRENTLY` without the word: the first occurrence only, the
        // statement's (the file's comments say "concurrently" in lower case).
        m.sql.as_str().replacen("INDEX CONCURRENTLY", "INDEX", 1)
    } else {
        m.sql.as_str().to_owned()
    };
    match sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
        .execute(&store.pool)
        .await
    {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(e))
            if matches!(e.code().as_deref(), Some("42P07") | Some("23505")) =>
        {
            Ok(())
        }
        Err(e) => Err(Error::backend(
            false,
            format!("migration {} ({}): {e}", m.version, m.description),
        )),
    }
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

/// A listing whose status and kind match at most this many operations (by the trigger-kept
/// counts) finds their ids through `(status, kind, id)` first; one that matches more walks the
/// primary key in id order, where matches are dense.
const FEW: u64 = 20_000;

/// Operations fetched per statement once their ids are known.
const CHUNK: usize = 1_000;

/// Operations matching the listing's filters, one keyset page.
///
/// The plan is chosen from the exact, trigger-kept counts (operation_counts), never from the
/// planner's statistics, which may be stale or missing (a table loaded or drained since its last
/// ANALYZE, autovacuum off): a planner that takes a rare status for a common one walks the whole
/// primary key for a handful of rows, and one that takes a common status for a rare one sorts
/// all of them for a page of 50. With a status or kind named:
///
/// - none counted: nothing is read;
/// - at most [`FEW`]: their ids come from `(status, kind, id)` (the statuses the counts name),
///   the page is cut from them in order, and its rows fetched by primary key [`CHUNK`] at a time
///   until the page is full (the other filters apply there);
/// - more, with a status: the primary key is walked in id order (no bitmap, no sort), finding
///   a page within a few rows per match.
///
/// Otherwise (no status or kind, or many of a kind) the listing walks the primary key as
/// written.
pub(crate) async fn operation_list(store: &PgStore, params: ListParams) -> Result<Vec<Operation>> {
    let limit = filter::list_limit(&params) as usize;
    // A creation-time range walks only the ids created in the slots it touches; none, nothing.
    let within = if params.created_since.is_some() || params.created_until.is_some() {
        match creation_bounds(store, &params).await? {
            Some(bounds) => Some(bounds),
            None => return Ok(Vec::new()),
        }
    } else {
        None
    };
    let counted = listed_counts(store, &params).await?;
    let total: u64 = counted.iter().map(|(_, n)| n).sum();
    let named = params.status.is_some() || params.kind.is_some();
    if named && total == 0 {
        return Ok(Vec::new());
    }
    if named && total <= FEW {
        return list_few(store, params, &counted, limit, within).await;
    }
    let rows = if params.status.is_some() || within.is_some() {
        let mut tx = store.begin_with(sql::WALK_IN_ID_ORDER).await?;
        let rows = filter::list(params, None, within)
            .build()
            .fetch_all(&mut *tx)
            .await
            .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)?;
        rows
    } else {
        filter::list(params, None, None)
            .build()
            .fetch_all(&store.pool)
            .await
            .map_err(backend_error)?
    };
    rows.iter().map(row::operation).collect()
}

/// The id bounds of the operations created in the listing's creation-time range, from the
/// trigger-kept `creation_slots` (the five-minute slots the range touches); `None` when no
/// operation was created in those slots.
async fn creation_bounds(store: &PgStore, p: &ListParams) -> Result<Option<filter::IdBounds>> {
    let (first, last): (Option<uuid::Uuid>, Option<uuid::Uuid>) =
        sqlx::query_as(sql::LIST_CREATION_BOUNDS)
            .bind(p.created_since)
            .bind(p.created_until)
            .fetch_one(&store.pool)
            .await
            .map_err(backend_error)?;
    Ok(first
        .zip(last)
        .map(|(first, last)| filter::IdBounds { first, last }))
}

/// The listed statuses (of its kind, its re-driven choice applied) with their counts, from the
/// trigger-kept counts; empty when the listing names neither a status nor a kind.
async fn listed_counts(store: &PgStore, p: &ListParams) -> Result<Vec<(String, u64)>> {
    if p.status.is_none() && p.kind.is_none() {
        return Ok(Vec::new());
    }
    let shown = p.redriven_shown();
    let rows: Vec<(String, i64)> = sqlx::query_as(sql::LIST_COUNTS)
        .bind(p.status.map(|s| s.as_str()))
        .bind(p.kind.as_deref())
        .bind(shown != oprec_core::store::RedrivenShown::Only)
        .bind(shown != oprec_core::store::RedrivenShown::Hide)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(rows
        .into_iter()
        .map(|(s, n)| (s, u64::try_from(n).unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect())
}

/// A listing of few operations: their ids through `(status, kind, id)`, in the page's order
/// past its cursor, then their rows by primary key until the page is full.
async fn list_few(
    store: &PgStore,
    params: ListParams,
    counted: &[(String, u64)],
    limit: usize,
    within: Option<filter::IdBounds>,
) -> Result<Vec<Operation>> {
    let statuses: Vec<&str> = counted.iter().map(|(s, _)| s.as_str()).collect();
    let mut tx = store.begin_with(sql::FIND_BY_STATUS_INDEX).await?;
    let found = match params.kind.as_deref() {
        Some(kind) => sqlx::query_scalar(sql::LIST_IDS_OF_KIND)
            .bind(&statuses)
            .bind(kind),
        None => sqlx::query_scalar(sql::LIST_IDS).bind(&statuses),
    };
    let mut ids: Vec<uuid::Uuid> = found.fetch_all(&mut *tx).await.map_err(backend_error)?;
    // Outside the creation range's bounds, not worth fetching.
    if let Some(b) = within {
        ids.retain(|id| (b.first..=b.last).contains(id));
    }
    let after = params.after.map(|a| *a.as_uuid());
    if params.newest_first {
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.retain(|id| after.is_none_or(|a| *id < a));
    } else {
        ids.sort_unstable();
        ids.retain(|id| after.is_none_or(|a| *id > a));
    }
    let mut page: Vec<Operation> = Vec::with_capacity(limit);
    for chunk in ids.chunks(CHUNK) {
        let rows = filter::list(params.clone(), Some(chunk), within)
            .build()
            .fetch_all(&mut *tx)
            .await
            .map_err(backend_error)?;
        // In id order (the statement's ORDER BY); the page shows the newest first.
        let mut found: Vec<Operation> = rows.iter().map(row::operation).collect::<Result<_>>()?;
        if params.newest_first {
            found.reverse();
        }
        page.extend(found);
        if page.len() >= limit {
            page.truncate(limit);
            break;
        }
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(page)
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
                redriven: c.big_count("redriven")?,
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

    /// `body` (upper case) without its `CREATE INDEX` statements on the tables it creates.
    fn without_indexes_on_new_tables(body: &str) -> String {
        let created: Vec<&str> = body
            .split("CREATE TABLE ")
            .skip(1)
            .filter_map(|rest| rest.split_whitespace().next())
            .collect();
        body.split_inclusive(';')
            .filter(|statement| {
                let on = statement
                    .split(" ON ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next());
                !(statement.contains("CREATE INDEX") && on.is_some_and(|t| created.contains(&t)))
            })
            .collect()
    }

    #[test]
    fn an_index_on_a_table_the_migration_creates_needs_no_concurrent_build() {
        let body = "CREATE TABLE ALERTS (ID INT);\nCREATE INDEX A ON ALERTS (ID) WHERE X;\n\
                    CREATE INDEX B ON OPERATIONS (ID);";
        let kept = without_indexes_on_new_tables(body);
        assert!(!kept.contains("CREATE INDEX A"), "{kept}");
        assert!(kept.contains("CREATE INDEX B ON OPERATIONS"), "{kept}");
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
                // A unique index is an index too. An index on a table the same migration
                // creates is built before any writer can reach the table: no lock to avoid.
                let body = without_indexes_on_new_tables(
                    &statements(&sql)
                        .to_uppercase()
                        .replace("CREATE UNIQUE INDEX", "CREATE INDEX"),
                );
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
