//! Re-drive ([`OperatorStore`](oprec_core::OperatorStore)): the dry run, and bringing terminal
//! operations back in batches, in place or as new linked operations, spread over time.
//!
//! Only terminal operations are touched (dead, and cancelled when asked), so a re-drive never
//! overlaps a late attempt; one already re-driven as new is skipped, so running the same re-drive
//! again after an interruption re-drives nothing twice.

use chrono::{DateTime, Utc};
use std::collections::HashMap;

use oprec_core::operator::{
    PreviewError, PreviewGroup, PreviewSample, RedriveJob, RedriveJobListParams,
    RedriveJobSaveParams, RedriveJobStopParams, RedriveMode, RedriveParams, RedrivePreview,
    RedrivePreviewParams, Redriven,
};
use oprec_core::{OperationId, Result};
use uuid::Uuid;

use crate::row::{self, Columns};
use crate::{PgStore, backend_error, filter, sql};

/// What a re-drive would touch: matches grouped and sampled, and the non-terminal matches it
/// would refuse. Changes nothing.
pub(crate) async fn redrive_preview(
    store: &PgStore,
    params: RedrivePreviewParams,
) -> Result<RedrivePreview> {
    let (f, include_cancelled) = (&params.filter, params.include_cancelled);
    let rows = filter::redrive_groups(f, include_cancelled)
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    let mut preview = RedrivePreview::default();
    for r in &rows {
        let c = Columns(r);
        let group = PreviewGroup {
            kind: c.get("kind")?,
            payload_mode: c.opt_parsed("payload_mode")?,
            class: c.opt_parsed("last_failure_class")?,
            reason: c.opt_parsed("terminal_reason")?,
            dependency: c.get("dependency")?,
            count: c.big_count("count")?,
            first_ended_at: c.get("first_ended_at")?,
            last_ended_at: c.get("last_ended_at")?,
            recovered_at: None,
        };
        preview.matched += group.count;
        preview.groups.push(group);
    }

    let n: i64 = filter::redrive_not_terminal(f)
        .build_query_scalar()
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    preview.not_terminal = row::unsigned("count", n)?;

    let rows = filter::redrive_samples(f, include_cancelled, params.samples)
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    preview.samples = rows
        .iter()
        .map(|r| {
            let c = Columns(r);
            Ok(PreviewSample {
                id: c.id("id")?,
                kind: c.get("kind")?,
                error: c.get("error")?,
            })
        })
        .collect::<Result<_>>()?;

    let rows = filter::redrive_errors(f, include_cancelled, params.samples)
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    preview.errors = rows
        .iter()
        .map(|r| {
            let c = Columns(r);
            Ok(PreviewError {
                kind: c.get("kind")?,
                error: c.get("error")?,
                count: c.big_count("count")?,
                first_ended_at: c.get("first_ended_at")?,
                last_ended_at: c.get("last_ended_at")?,
                example: c.id("example")?,
            })
        })
        .collect::<Result<_>>()?;
    recovered(store, &mut preview.groups).await?;
    Ok(preview)
}

/// A dry run's question "has it succeeded since?": the dependency, or the kind when there is
/// none (empty otherwise), and the last death.
type Question = (Option<String>, String, DateTime<Utc>);

/// Fills each group's `recovered_at`: one walk of the finished operations per distinct
/// dependency (or kind) and last death.
async fn recovered(store: &PgStore, groups: &mut [PreviewGroup]) -> Result<()> {
    let mut found: HashMap<Question, Option<DateTime<Utc>>> = HashMap::new();
    let mut tx = store.begin_with(sql::WALK_FINISHED_IN_ORDER).await?;
    // The kinds with successes, read once, when a group first asks about a dependency.
    let mut succeeded_kinds: Option<Vec<String>> = None;
    for g in groups.iter_mut() {
        let Some(last) = g.last_ended_at else {
            continue;
        };
        // The kind matters only when there is no dependency to ask about.
        let kind = if g.dependency.is_some() {
            String::new()
        } else {
            g.kind.clone()
        };
        let key = (g.dependency.clone(), kind, last);
        if let Some(at) = found.get(&key) {
            g.recovered_at = *at;
            continue;
        }
        let at = match &g.dependency {
            None => sqlx::query_scalar(sql::REDRIVE_RECOVERED)
                .bind(&g.kind)
                .bind(last)
                .fetch_optional(&mut *tx)
                .await
                .map_err(backend_error)?,
            Some(dependency) => {
                if succeeded_kinds.is_none() {
                    succeeded_kinds = Some(
                        sqlx::query_scalar(sql::REDRIVE_SUCCEEDED_KINDS)
                            .fetch_all(&mut *tx)
                            .await
                            .map_err(backend_error)?,
                    );
                }
                let kinds = succeeded_kinds.as_deref().unwrap_or_default();
                recovered_dependency(&mut tx, kinds, dependency, last).await?
            }
        };
        found.insert(key, at);
        g.recovered_at = at;
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(())
}

/// Kinds whose walks one statement merges.
const KINDS_PER_WALK: usize = 64;

/// When an operation calling `dependency` first succeeded after `after`, whatever its kind. Each
/// kind's successes are walked in operations_finished_kind (status, kind, terminal_at) from
/// `after`, and the walks of up to [`KINDS_PER_WALK`] kinds are merged in finish order (a merge
/// append under `LIMIT 1`), so that the statement reads the successes of those kinds in the
/// order they happened and stops at the first that called the dependency: the rows a walk of
/// every success in finish order would read, and one probe per kind. A later statement walks
/// only up to the earliest success found so far.
async fn recovered_dependency(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    kinds: &[String],
    dependency: &str,
    after: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>> {
    let mut earliest: Option<DateTime<Utc>> = None;
    for chunk in kinds.chunks(KINDS_PER_WALK) {
        let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new("SELECT m.t FROM (");
        for (i, kind) in chunk.iter().enumerate() {
            if i > 0 {
                q.push(" UNION ALL ");
            }
            // Each walk is a subquery asked in the index's order, so that the planner merges
            // the walks' orders (flattened into one append, it sorted every match instead).
            q.push(
                "(SELECT o.terminal_at AS t FROM operations o \
                 WHERE o.status IN ('succeeded', 'cancelled') AND o.status = 'succeeded' \
                 AND o.kind = ",
            )
            .push_bind(kind.as_str())
            .push(" AND o.terminal_at > ")
            .push_bind(after)
            .push(" AND o.terminal_at < coalesce(")
            .push_bind(earliest)
            .push("::timestamptz, 'infinity') AND o.dependency = ")
            .push_bind(dependency)
            .push(" ORDER BY o.status, o.kind, o.terminal_at)");
        }
        q.push(") AS m ORDER BY m.t LIMIT 1");
        let at: Option<DateTime<Utc>> = q
            .build_query_scalar()
            .fetch_optional(&mut **tx)
            .await
            .map_err(backend_error)?;
        if at.is_some() {
            earliest = at;
        }
    }
    Ok(earliest)
}

/// Re-drives one batch, oldest terminal first, the i-th eligible at `start_at + i * spacing`;
/// returns them in that order. A batch whose every pick another re-drive copied meanwhile (it
/// read them before that one committed) is picked again, since those are now seen as done.
pub(crate) async fn operation_redrive(
    store: &PgStore,
    params: RedriveParams,
) -> Result<Vec<Redriven>> {
    let mut tries = 0;
    loop {
        let (picked, out) = redrive_batch(store, &params).await?;
        tries += 1;
        if picked == 0 || !out.is_empty() || tries == 3 {
            return Ok(out);
        }
    }
}

/// One pick and re-drive: how many were picked, and the re-driven.
async fn redrive_batch(store: &PgStore, params: &RedriveParams) -> Result<(usize, Vec<Redriven>)> {
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let ids: Vec<Uuid> = filter::redrive_pick(params, store.now_bind())
        .build_query_scalar()
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    let ats: Vec<DateTime<Utc>> = (0..ids.len())
        .map(|i| params.start_at + params.spacing * i as i32)
        .collect();
    let rows = match params.mode {
        RedriveMode::InPlace { extend_deadline } => sqlx::query(sql::REDRIVE_IN_PLACE)
            .bind(&ids)
            .bind(&ats)
            .bind(store.now_bind())
            .bind(extend_deadline.map(row::millis)),
        RedriveMode::AsNew { deadline } => {
            let new_ids: Vec<Uuid> = ids.iter().map(|_| *OperationId::new().as_uuid()).collect();
            sqlx::query(sql::REDRIVE_AS_NEW)
                .bind(&ids)
                .bind(new_ids)
                .bind(&ats)
                .bind(store.now_bind())
                .bind(deadline.map(row::millis))
        }
    }
    .fetch_all(&mut *tx)
    .await
    .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    let mut out = rows
        .iter()
        .map(|r| {
            let c = Columns(r);
            Ok(Redriven {
                from: c.id("from_id")?,
                to: c.id("to_id")?,
                next_eligible_at: c.get("at")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by_key(|r| r.next_eligible_at);
    Ok((ids.len(), out))
}

/// One `redrive_jobs` row.
fn job(r: &sqlx::postgres::PgRow) -> Result<RedriveJob> {
    let c = Columns(r);
    Ok(RedriveJob {
        id: c.get("id")?,
        actor: c.get("actor")?,
        state: c.parsed("state")?,
        request: c.get("request")?,
        ended_before: c.get("ended_before")?,
        planned: c.big_count("planned")?,
        released: c.big_count("released")?,
        reason: c.get("reason")?,
        stop_requested_by: c.get("stop_requested_by")?,
        created_at: c.get("created_at")?,
        updated_at: c.get("updated_at")?,
    })
}

/// A count as the `bigint` a job's row keeps.
fn big(what: &str, n: u64) -> Result<i64> {
    i64::try_from(n).map_err(|e| oprec_core::Error::InvalidInput(format!("{what}: {e}")))
}

/// Creates or updates a re-drive job's row; returns it as stored.
pub(crate) async fn redrive_job_save(
    store: &PgStore,
    params: RedriveJobSaveParams,
) -> Result<RedriveJob> {
    let r = sqlx::query(sql::REDRIVE_JOB_SAVE)
        .bind(store.now_bind())
        .bind(&params.id)
        .bind(&params.actor)
        .bind(params.state.as_str())
        .bind(&params.request)
        .bind(params.ended_before)
        .bind(big("planned", params.planned)?)
        .bind(big("released", params.released)?)
        .bind(&params.reason)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    job(&r)
}

/// Asks a running re-drive job to stop; returns the job as stored.
pub(crate) async fn redrive_job_stop(
    store: &PgStore,
    params: RedriveJobStopParams,
) -> Result<Option<RedriveJob>> {
    let r = sqlx::query(sql::REDRIVE_JOB_STOP)
        .bind(store.now_bind())
        .bind(&params.id)
        .bind(&params.actor)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    r.as_ref().map(job).transpose()
}

/// Re-drive jobs, newest first.
pub(crate) async fn redrive_job_list(
    store: &PgStore,
    params: RedriveJobListParams,
) -> Result<Vec<RedriveJob>> {
    let rows = sqlx::query(sql::REDRIVE_JOB_LIST)
        .bind(&params.id)
        .bind(i64::from(params.limit))
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(job).collect()
}
