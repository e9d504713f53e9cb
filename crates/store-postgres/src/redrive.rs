//! Re-drive ([`OperatorStore`](oprec_core::OperatorStore)): the dry run, and bringing terminal
//! operations back in batches, in place or as new linked operations, spread over time.
//!
//! Only terminal operations are touched (dead, and cancelled when asked), so a re-drive never
//! overlaps a late attempt; one already re-driven as new is skipped, so running the same re-drive
//! again after an interruption re-drives nothing twice.

use chrono::{DateTime, Utc};
use oprec_core::operator::{
    PreviewGroup, PreviewSample, RedriveMode, RedriveParams, RedrivePreview, RedrivePreviewParams,
    Redriven,
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
            count: c.big_count("count")?,
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
    Ok(preview)
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
    let ids: Vec<Uuid> =
        filter::redrive_pick(&params.filter, params.include_cancelled, params.limit)
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
