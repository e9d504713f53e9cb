//! Re-drive: the dry run, and bringing terminal operations back in batches, oldest terminal first,
//! in place (the same row, reset) or as new (a copy linked by `redrive_of`). An operation already
//! re-driven as new is never taken again, so a re-drive interrupted and run again goes on with
//! the rest. The selection follows the operator's filter (built in [`crate::filter`]); the
//! writes are `redrive_in_place.sql` and `redrive_as_new.sql`.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{
    PreviewGroup, PreviewSample, RedriveMode, RedriveParams, RedrivePreview, RedrivePreviewParams,
    Redriven,
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

/// See [`OperatorStore::redrive_preview`](oprec_core::OperatorStore::redrive_preview).
pub(crate) async fn redrive_preview(
    store: &SqliteStore,
    params: RedrivePreviewParams,
) -> Result<RedrivePreview> {
    let (f, cancelled) = (&params.filter, params.include_cancelled);
    let mut groups = filter::redrive_groups(f, cancelled)?;
    let mut refused = filter::redrive_not_terminal(f)?;
    let mut sampled = filter::redrive_samples(f, cancelled, params.samples)?;
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
            count,
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
    let mut pick = filter::redrive_pick(&params.filter, params.include_cancelled, params.limit)?;
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
