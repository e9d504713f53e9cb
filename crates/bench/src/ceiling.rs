//! The ceilings: the same PostgreSQL doing a job queue's bare work with no oprec in the way — a
//! plain table, a claim of 100 with `FOR UPDATE SKIP LOCKED` and a completion of 100, each its own
//! transaction, from several connections at once; for the life cycle a batched insert of 100
//! before each claim, for claim + complete a table filled beforehand (the work of a drain). No
//! history, no leases, no wake-ups: what the database itself can do on this machine. A third
//! ceiling commits one inserted row at a time from as many connections as the benchmark has
//! single-operation producers: the commit round trip that bounds them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use sqlx::postgres::PgPool;
use sqlx::{AssertSqlSafe, Executor};

use crate::Result;
use crate::schema::{Database, with_schema};

/// Rows per insert, claim and completion.
const BATCH: i64 = 100;
/// The connection counts tried; the best run is the ceiling.
const CONNECTIONS: &[usize] = &[2, 4, 8];

/// The bare work a ceiling measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CeilingWork {
    /// Insert 100, claim 100, complete 100, round and round.
    LifeCycle,
    /// Claim 100 and complete 100 from a table filled beforehand, until it is empty or the time
    /// is up: the ceiling of a drain.
    ClaimComplete,
    /// One row inserted and committed per statement, each connection waiting for its commit
    /// before the next: the most that as many producers enqueueing one operation at a time can
    /// reach without sharing commits (each commit round trip carries one row).
    SingleCommit,
}

impl CeilingWork {
    /// Rows per statement.
    fn batch(self) -> i64 {
        match self {
            CeilingWork::SingleCommit => 1,
            CeilingWork::LifeCycle | CeilingWork::ClaimComplete => BATCH,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            CeilingWork::LifeCycle => "bare insert → claim (SKIP LOCKED) → complete",
            CeilingWork::ClaimComplete => "bare claim (SKIP LOCKED) → complete from a full table",
            CeilingWork::SingleCommit => "bare one-row insert, one commit each",
        }
    }
}

/// One run of the bare work.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CeilingRun {
    /// Connections working at once.
    pub connections: usize,
    /// Rows inserted, claimed and completed.
    pub ops: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// `ops / seconds`.
    pub ops_per_sec: f64,
}

/// The best of the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ceiling {
    /// What was measured.
    pub work: CeilingWork,
    /// Completed operations per second in the best run.
    pub ops_per_sec: f64,
    /// Rows per statement.
    pub batch: i64,
    /// Every run.
    pub runs: Vec<CeilingRun>,
}

/// One connection's loop: (insert,) claim, complete, until `stop` or, from a full table, until
/// nothing is left to claim.
async fn cycle(
    pool: PgPool,
    table: String,
    work: CeilingWork,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
) -> Result<()> {
    let mut conn = pool.acquire().await?;
    let insert = format!("INSERT INTO {table} (payload) SELECT p FROM UNNEST($1::jsonb[]) AS t(p)");
    let claim = format!(
        "WITH picked AS (
            SELECT id FROM {table} WHERE state = 'pending'
            ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
        )
        UPDATE {table} j SET state = 'running', claimed_at = now()
        FROM picked WHERE j.id = picked.id
        RETURNING j.id"
    );
    let complete =
        format!("UPDATE {table} SET state = 'done', finished_at = now() WHERE id = ANY($1)");
    let payloads = vec![serde_json::json!({}); BATCH as usize];
    let one = format!("INSERT INTO {table} (payload) VALUES ($1)");
    while !stop.load(Ordering::Relaxed) {
        if work == CeilingWork::SingleCommit {
            sqlx::query(AssertSqlSafe(one.as_str()))
                .bind(&payloads[0])
                .execute(&mut *conn)
                .await?;
            done.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if work == CeilingWork::LifeCycle {
            sqlx::query(AssertSqlSafe(insert.as_str()))
                .bind(&payloads)
                .execute(&mut *conn)
                .await?;
        }
        let ids: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(claim.as_str()))
            .bind(BATCH)
            .fetch_all(&mut *conn)
            .await?;
        if ids.is_empty() && work == CeilingWork::ClaimComplete {
            stop.store(true, Ordering::Relaxed);
            break;
        }
        sqlx::query(AssertSqlSafe(complete.as_str()))
            .bind(&ids)
            .execute(&mut *conn)
            .await?;
        done.fetch_add(ids.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

async fn run_once(
    db: &Database,
    pool: &PgPool,
    work: CeilingWork,
    connections: usize,
    secs: u64,
    fill: u64,
) -> Result<CeilingRun> {
    let table = match work {
        CeilingWork::LifeCycle => format!("bare_jobs_{connections}"),
        CeilingWork::ClaimComplete => format!("bare_full_{connections}"),
        CeilingWork::SingleCommit => format!("bare_single_{connections}"),
    };
    pool.execute(AssertSqlSafe(format!(
        "CREATE TABLE {table} (
            id          bigserial   PRIMARY KEY,
            state       text        NOT NULL DEFAULT 'pending',
            payload     jsonb       NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now(),
            claimed_at  timestamptz,
            finished_at timestamptz
        );
        CREATE INDEX {table}_pending ON {table} (id) WHERE state = 'pending';"
    )))
    .await?;
    if work == CeilingWork::ClaimComplete {
        pool.execute(AssertSqlSafe(format!(
            "INSERT INTO {table} (payload) SELECT '{{}}'::jsonb FROM generate_series(1, {fill})"
        )))
        .await?;
        pool.execute(AssertSqlSafe(format!("VACUUM ANALYZE {table}")))
            .await?;
    }
    db.checkpoint().await;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            tokio::spawn(cycle(
                pool.clone(),
                table.clone(),
                work,
                stop.clone(),
                done.clone(),
            ))
        })
        .collect();
    let deadline = started + Duration::from_secs(secs);
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await
            .map_err(|e| crate::Error::Check(format!("a ceiling task failed: {e}")))??;
    }
    let ops = done.load(Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    Ok(CeilingRun {
        connections,
        ops,
        seconds,
        ops_per_sec: ops as f64 / seconds,
    })
}

/// The best of the runs at 2, 4 and 8 connections; a claim + complete run starts from a table of
/// `fill` pending rows (at least 200,000).
pub(crate) async fn measure(
    db: &Database,
    work: CeilingWork,
    secs: u64,
    fill: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Ceiling> {
    measure_at(db, work, CONNECTIONS, secs, fill, progress).await
}

/// One-row commits from `producers` connections: the ceiling of single-operation enqueues from
/// that many producers.
pub(crate) async fn measure_single_commits(
    db: &Database,
    producers: usize,
    secs: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Ceiling> {
    measure_at(
        db,
        CeilingWork::SingleCommit,
        &[producers.max(1)],
        secs,
        0,
        progress,
    )
    .await
}

/// The best of the runs at each of `connections`.
async fn measure_at(
    db: &Database,
    work: CeilingWork,
    connections: &[usize],
    secs: u64,
    fill: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Ceiling> {
    let fill = fill.max(200_000);
    let max = *connections.iter().max().unwrap_or(&4) as u32;
    let runs = with_schema(db, max, false, async |s| {
        let mut runs = Vec::new();
        for &connections in connections {
            let run = run_once(db, &s.pool, work, connections, secs, fill).await?;
            progress(&format!(
                "ceiling: {}, batches of {}, {connections} connections: {:.0} ops/s",
                work.describe(),
                work.batch(),
                run.ops_per_sec
            ));
            runs.push(run);
        }
        Ok(runs)
    })
    .await?;
    let best = runs.iter().map(|r| r.ops_per_sec).fold(0.0, f64::max);
    Ok(Ceiling {
        work,
        ops_per_sec: best,
        batch: work.batch(),
        runs,
    })
}
