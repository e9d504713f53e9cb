//! Re-drive: the dry run, and bringing terminal operations back in batches, oldest terminal first,
//! in place (the same row, reset) or as new (a copy linked by `redrive_of`). An operation already
//! re-driven as new is never taken again, so a re-drive interrupted and run again goes on with
//! the rest. The selection follows the operator's filter (built in [`crate::filter`]); the
//! writes are `redrive_in_place.sql` and `redrive_as_new.sql`.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{
    PreviewError, PreviewGroup, PreviewSample, RedriveJob, RedriveJobListParams,
    RedriveJobSaveParams, RedriveJobStopParams, RedriveMode, RedriveParams, RedrivePreview,
    RedrivePreviewParams, Redriven,
};
use oprec_core::{Error, OperationId, Result};
use serde::Serialize;

use crate::row::{Columns, json_text, parse_id, uuid_text};
use crate::{SqliteStore, backend_error, filter, sql, time};

/// One operation to re-drive, as stored text: a row of the re-drive statements' input.
#[derive(Serialize)]
struct Target {
    /// The terminal operation.
    from: String,
    /// The operation that will run: `from` in place, a new id as new.
    to: String,
    /// When it becomes eligible.
    at: String,
    /// Its new deadline, in place with `extend_deadline`.
    deadline: Option<String>,
}

/// When the `i`-th re-driven operation becomes eligible: `start + spacing × i`, to the
/// microsecond the store keeps.
fn eligible_at(start: DateTime<Utc>, spacing: Duration, i: usize) -> Result<DateTime<Utc>> {
    let offset = i32::try_from(i)
        .ok()
        .and_then(|i| spacing.checked_mul(i))
        .ok_or_else(|| {
            Error::InvalidInput(format!("re-drive spacing {spacing} × {i} overflows"))
        })?;
    time::after(start, offset).map(time::truncate)
}

/// `t + d`, with `d` cut to the millisecond as the PostgreSQL store does.
fn after_millis(t: DateTime<Utc>, d: Duration) -> Result<String> {
    time::text(time::after(
        t,
        Duration::milliseconds(d.num_milliseconds()),
    )?)
}

/// A dry run's question "has it succeeded since?": the dependency, or the kind when there is
/// none (empty otherwise), and the last death as stored.
type Question = (Option<String>, String, String);

/// See [`OperatorStore::redrive_preview`](oprec_core::OperatorStore::redrive_preview).
pub(crate) async fn redrive_preview(
    store: &SqliteStore,
    params: RedrivePreviewParams,
) -> Result<RedrivePreview> {
    let (f, cancelled) = (&params.filter, params.include_cancelled);
    let mut groups = filter::redrive_groups(f, cancelled)?;
    let mut refused = filter::redrive_not_terminal(f)?;
    let mut sampled = filter::redrive_samples(f, cancelled, params.samples)?;
    let mut errors = filter::redrive_errors(f, cancelled, params.samples)?;
    // One read transaction: the three figures are of the same moment.
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let mut preview = RedrivePreview::default();
    for r in groups
        .build()
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
    {
        let c = Columns(&r);
        let count = c.u64("n")?;
        preview.matched += count;
        preview.groups.push(PreviewGroup {
            kind: c.text("kind")?,
            payload_mode: c.opt_parsed("payload_mode")?,
            class: c.opt_parsed("last_failure_class")?,
            reason: c.opt_parsed("terminal_reason")?,
            dependency: c.opt_text("dependency")?,
            count,
            first_ended_at: c.opt_time("first_ended_at")?,
            last_ended_at: c.opt_time("last_ended_at")?,
            recovered_at: None,
        });
    }
    let r = refused
        .build()
        .fetch_one(&mut *tx)
        .await
        .map_err(backend_error)?;
    preview.not_terminal = Columns(&r).u64("n")?;
    for r in sampled
        .build()
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
    {
        let c = Columns(&r);
        preview.samples.push(PreviewSample {
            id: c.id("id")?,
            kind: c.text("kind")?,
            error: c.opt_text("summary")?,
        });
    }
    for r in errors
        .build()
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
    {
        let c = Columns(&r);
        preview.errors.push(PreviewError {
            kind: c.text("kind")?,
            error: c.opt_text("summary")?,
            count: c.u64("n")?,
            first_ended_at: c.opt_time("first_ended_at")?,
            last_ended_at: c.opt_time("last_ended_at")?,
            example: c.id("example")?,
        });
    }
    // Whether each group's dependency (or kind) has succeeded since its last death: one walk of
    // the finished operations per distinct question.
    let mut found: HashMap<Question, Option<String>> = HashMap::new();
    for g in &mut preview.groups {
        let Some(last) = g.last_ended_at else {
            continue;
        };
        let kind = if g.dependency.is_some() {
            String::new()
        } else {
            g.kind.clone()
        };
        let key = (g.dependency.clone(), kind, time::text(last)?);
        let at = match found.get(&key) {
            Some(at) => at.clone(),
            None => {
                let at: Option<String> = sqlx::query_scalar(sql::REDRIVE_RECOVERED)
                    .bind(&g.dependency)
                    .bind(&g.kind)
                    .bind(&key.2)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(backend_error)?;
                found.insert(key, at.clone());
                at
            }
        };
        g.recovered_at = at.as_deref().map(time::parse).transpose()?;
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(preview)
}

/// See [`OperatorStore::operation_redrive`](oprec_core::OperatorStore::operation_redrive).
pub(crate) async fn operation_redrive(
    store: &SqliteStore,
    params: RedriveParams,
) -> Result<Vec<Redriven>> {
    if params.limit == 0 {
        return Ok(Vec::new());
    }
    let now = store.clock_now();
    let now_text = time::text(now)?;
    let mut pick = filter::redrive_pick(&params, &now_text)?;
    // Picking and re-driving happen under one write lock, so nothing else can end, re-drive or
    // claim a picked row in between.
    let mut tx = store.begin_write().await?;
    let ids: Vec<String> = pick
        .build_query_scalar()
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    let targets = ids
        .into_iter()
        .enumerate()
        .map(|(i, from)| {
            let at = eligible_at(params.start_at, params.spacing, i)?;
            let (to, deadline) = match params.mode {
                // A spread re-drive extends each deadline from its own start, so its tail is
                // never stranded behind its own deadline.
                RedriveMode::InPlace { extend_deadline } => (
                    from.clone(),
                    extend_deadline.map(|d| after_millis(at, d)).transpose()?,
                ),
                RedriveMode::AsNew { .. } => (uuid_text(OperationId::new().as_uuid()), None),
            };
            Ok(Target {
                from,
                to,
                at: time::text(at)?,
                deadline,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let done: HashSet<String> = match params.mode {
        RedriveMode::InPlace { .. } => sqlx::query_scalar(sql::REDRIVE_IN_PLACE)
            .bind(&now_text)
            .bind(json_text(&targets)?),
        RedriveMode::AsNew { deadline } => sqlx::query_scalar(sql::REDRIVE_AS_NEW)
            .bind(&now_text)
            .bind(deadline.map(|d| after_millis(now, d)).transpose()?)
            .bind(json_text(&targets)?),
    }
    .fetch_all(tx.conn())
    .await
    .map_err(backend_error)?
    .into_iter()
    .collect();
    tx.commit().await?;

    // In the order picked (oldest terminal first), then by eligible time; the sort is stable.
    let mut out = targets
        .iter()
        .filter(|t| done.contains(&t.to))
        .map(|t| {
            Ok(Redriven {
                from: parse_id(&t.from)?,
                to: parse_id(&t.to)?,
                next_eligible_at: time::parse(&t.at)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by_key(|r| r.next_eligible_at);
    Ok(out)
}

/// One `redrive_jobs` row.
fn job(r: &sqlx::sqlite::SqliteRow) -> Result<RedriveJob> {
    let c = Columns(r);
    Ok(RedriveJob {
        id: c.text("id")?,
        actor: c.text("actor")?,
        state: c.parsed("state")?,
        request: c.json("request")?,
        ended_before: c.time("ended_before")?,
        planned: c.u64("planned")?,
        released: c.u64("released")?,
        reason: c.opt_text("reason")?,
        stop_requested_by: c.opt_text("stop_requested_by")?,
        created_at: c.time("created_at")?,
        updated_at: c.time("updated_at")?,
    })
}

/// A count as the integer a job's row keeps.
fn big(what: &str, n: u64) -> Result<i64> {
    i64::try_from(n).map_err(|e| Error::InvalidInput(format!("{what}: {e}")))
}

/// See [`OperatorStore::redrive_job_save`](oprec_core::OperatorStore::redrive_job_save).
pub(crate) async fn redrive_job_save(
    store: &SqliteStore,
    params: RedriveJobSaveParams,
) -> Result<RedriveJob> {
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    let r = sqlx::query(sql::REDRIVE_JOB_SAVE)
        .bind(&params.id)
        .bind(&params.actor)
        .bind(params.state.as_str())
        .bind(json_text(&params.request)?)
        .bind(time::text(time::truncate(params.ended_before))?)
        .bind(big("planned", params.planned)?)
        .bind(big("released", params.released)?)
        .bind(&params.reason)
        .bind(now)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    job(&r)
}

/// See [`OperatorStore::redrive_job_stop`](oprec_core::OperatorStore::redrive_job_stop).
pub(crate) async fn redrive_job_stop(
    store: &SqliteStore,
    params: RedriveJobStopParams,
) -> Result<Option<RedriveJob>> {
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    let r = sqlx::query(sql::REDRIVE_JOB_STOP)
        .bind(&params.id)
        .bind(&params.actor)
        .bind(now)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    r.as_ref().map(job).transpose()
}

/// See [`OperatorStore::redrive_job_list`](oprec_core::OperatorStore::redrive_job_list).
pub(crate) async fn redrive_job_list(
    store: &SqliteStore,
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
