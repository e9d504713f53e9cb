//! The ceiling: the same PostgreSQL doing a job queue's bare work with no oprec in the way — a
//! plain table, a batched insert of 100, a claim of 100 with `FOR UPDATE SKIP LOCKED`, a
//! completion of 100, each its own transaction, from several connections at once. No history, no
//! leases, no wake-ups: what the database itself can do on this machine.

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

/// One run of the bare life cycle.
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
    /// Completed operations per second in the best run.
    pub ops_per_sec: f64,
    /// Rows per statement.
    pub batch: i64,
    /// Every run.
    pub runs: Vec<CeilingRun>,
}

/// One connection's loop: insert, claim, complete, until `stop`.
async fn cycle(
    pool: PgPool,
    table: String,
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
    while !stop.load(Ordering::Relaxed) {
        sqlx::query(AssertSqlSafe(insert.as_str()))
            .bind(&payloads)
            .execute(&mut *conn)
            .await?;
        let ids: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(claim.as_str()))
            .bind(BATCH)
            .fetch_all(&mut *conn)
            .await?;
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
    connections: usize,
    secs: u64,
) -> Result<CeilingRun> {
    let table = format!("bare_jobs_{connections}");
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
    db.checkpoint().await;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            tokio::spawn(cycle(
                pool.clone(),
                table.clone(),
                stop.clone(),
                done.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let ops = done.load(Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await
            .map_err(|e| crate::Error::Check(format!("a ceiling task failed: {e}")))??;
    }
    Ok(CeilingRun {
        connections,
        ops,
        seconds,
        ops_per_sec: ops as f64 / seconds,
    })
}

pub(crate) async fn measure(
    db: &Database,
    secs: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Ceiling> {
    let max = *CONNECTIONS.iter().max().unwrap_or(&4) as u32;
    let runs = with_schema(db, max, false, async |s| {
        let mut runs = Vec::new();
        for &connections in CONNECTIONS {
            let run = run_once(db, &s.pool, connections, secs).await?;
            progress(&format!(
                "ceiling: bare insert → claim (SKIP LOCKED) → complete, batches of {BATCH}, {connections} connections: {:.0} ops/s",
                run.ops_per_sec
            ));
            runs.push(run);
        }
        Ok(runs)
    })
    .await?;
    let best = runs.iter().map(|r| r.ops_per_sec).fold(0.0, f64::max);
    Ok(Ceiling {
        ops_per_sec: best,
        batch: BATCH,
        runs,
    })
}
