//! Claim cost: does claiming get dearer as finished operations pile up? The median time of
//! `operation_claim_eligible(limit 100)` with [`BASELINE_ROWS`] finished rows in the table, then
//! again after `finished_rows` in all (bulk-inserted succeeded operations, each with its attempt,
//! then vacuumed and analyzed as autovacuum would have), as a ratio.

use std::time::{Duration, Instant};

use oprec::store::{ClaimEligibleParams, Claimant, CompleteParams};
use oprec::{EnqueueOptions, EnqueueStore, NewOperation, Transition, WorkerStore};
use serde::Serialize;
use sqlx::Executor;

use crate::schema::{Database, Schema, with_schema};
use crate::{Error, Result, noop};

/// Finished rows in the table for the baseline measurement.
pub const BASELINE_ROWS: u64 = 10_000;
/// Operations per claim.
const LIMIT: u32 = 100;
/// Claims timed per measurement (after [`WARM_UP`] untimed ones).
const SAMPLES: usize = 200;
const WARM_UP: usize = 10;
/// Finished rows per bulk insert statement.
const CHUNK: u64 = 500_000;

/// The claim's cost against the number of finished rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClaimCost {
    /// Finished rows during the baseline measurement.
    pub baseline_rows: u64,
    /// Finished rows during the second measurement.
    pub finished_rows: u64,
    /// Claims timed per measurement.
    pub samples: usize,
    /// Median claim of 100 with the baseline's rows, in milliseconds.
    pub baseline_median_ms: f64,
    /// Median claim of 100 with `finished_rows`, in milliseconds.
    pub median_ms: f64,
    /// `median_ms / baseline_median_ms`.
    pub ratio: f64,
    /// Seconds spent adding the finished rows (insert, vacuum, analyze).
    pub fill_seconds: f64,
}

/// Adds finished operations `from..to` (succeeded, one attempt each), with time-ordered ids in the
/// past, so they sit where years of finished work would.
pub(crate) async fn add_finished(s: &Schema, from: u64, to: u64) -> Result<()> {
    sqlx::query(
        "WITH rows AS (
            SELECT g, (extract(epoch FROM now() - interval '30 days') * 1000)::int8 + g AS ms
            FROM generate_series($1::int8, $2::int8 - 1) g
        ), ops AS (
            INSERT INTO operations (id, kind, payload, status, attempt, max_attempts,
                                    next_eligible_at, claimed_at, worker_id, code_version,
                                    dependency, enqueue_params, created_at, updated_at, terminal_at)
            SELECT (lpad(to_hex(ms), 12, '0') || '7000' || '8' || lpad(to_hex(g), 15, '0'))::uuid,
                   'demo.noop', jsonb_build_object('n', g), 'succeeded', 1, 4,
                   to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0), 'bench', 'bench',
                   'demo-provider', '{}', to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0),
                   to_timestamp(ms / 1000.0)
            FROM rows
            RETURNING id, created_at
        )
        INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, outcome,
                                        worker_id, code_version)
        SELECT id, 1, created_at, created_at, 'succeeded', 'bench', 'bench' FROM ops",
    )
    .bind(from as i64)
    .bind(to as i64)
    .execute(&s.pool)
    .await?;
    Ok(())
}

async fn vacuum(s: &Schema) -> Result<()> {
    for table in ["operations", "operation_attempts"] {
        s.pool
            .execute(sqlx::AssertSqlSafe(format!("VACUUM ANALYZE {table}")))
            .await?;
    }
    Ok(())
}

/// Completes `claimed` as succeeded (untimed work between timed claims).
pub(crate) async fn complete(s: &Schema, claimed: Vec<oprec::Claimed>) -> Result<()> {
    let done = claimed
        .into_iter()
        .filter_map(|o| {
            Some(CompleteParams {
                id: o.id,
                claim_token: o.claim_token?,
                transition: Transition::succeeded(None),
            })
        })
        .collect();
    s.store.operation_complete_many(done).await?;
    Ok(())
}

/// The median of [`SAMPLES`] timed claims of [`LIMIT`], each of a fresh batch of pending rows.
async fn median_claim(s: &Schema) -> Result<f64> {
    let policy = noop::policy()?;
    let claimant = Claimant {
        worker_id: "bench".into(),
        code_version: None,
        lease: chrono::Duration::seconds(30),
    };
    let mut times = Vec::with_capacity(SAMPLES);
    for i in 0..(WARM_UP + SAMPLES) {
        let now = chrono::Utc::now() - chrono::Duration::seconds(1);
        let ops = (0..LIMIT)
            .map(|n| {
                NewOperation::new(
                    noop::KIND,
                    noop::payload(u64::from(n)),
                    &policy,
                    EnqueueOptions::default(),
                    now,
                )
            })
            .collect::<oprec::Result<Vec<_>>>()?;
        s.store.operation_insert_many(ops).await?;
        let started = Instant::now();
        let claimed = s
            .store
            .operation_claim_eligible(ClaimEligibleParams {
                above_default_only: false,
                kinds: vec![noop::KIND.to_owned()],
                limit: LIMIT,
                claimant: claimant.clone(),
            })
            .await?;
        let took = started.elapsed();
        if claimed.len() != LIMIT as usize {
            return Err(Error::Check(format!(
                "a claim of {LIMIT} returned {} operations",
                claimed.len()
            )));
        }
        if i >= WARM_UP {
            times.push(took);
        }
        complete(s, claimed).await?;
    }
    Ok(median_ms(&mut times))
}

/// The median of `times`, in milliseconds (0 when there are none).
pub(crate) fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    times
        .get(times.len() / 2)
        .copied()
        .unwrap_or(Duration::ZERO)
        .as_secs_f64()
        * 1000.0
}

pub(crate) async fn measure(
    db: &Database,
    finished_rows: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<ClaimCost> {
    let finished_rows = finished_rows.max(BASELINE_ROWS);
    with_schema(db, 2, true, async |s| {
        add_finished(s, 0, BASELINE_ROWS).await?;
        vacuum(s).await?;
        db.checkpoint().await;
        let baseline = median_claim(s).await?;
        progress(&format!(
            "claim cost: median claim of {LIMIT} with {BASELINE_ROWS} finished rows: {baseline:.3} ms; adding finished rows up to {finished_rows}"
        ));
        let started = Instant::now();
        let mut at = BASELINE_ROWS;
        while at < finished_rows {
            let to = (at + CHUNK).min(finished_rows);
            add_finished(s, at, to).await?;
            db.checkpoint().await;
            at = to;
            progress(&format!("claim cost: {at} finished rows"));
        }
        vacuum(s).await?;
        db.checkpoint().await;
        let fill_seconds = started.elapsed().as_secs_f64();
        let large = median_claim(s).await?;
        let ratio = large / baseline;
        progress(&format!(
            "claim cost: median claim of {LIMIT} with {finished_rows} finished rows: {large:.3} ms (×{ratio:.2} the baseline)"
        ));
        Ok(ClaimCost {
            baseline_rows: BASELINE_ROWS,
            finished_rows,
            samples: SAMPLES,
            baseline_median_ms: baseline,
            median_ms: large,
            ratio,
            fill_seconds,
        })
    })
    .await
}
