//! Re-drive ([`OperatorStore`](oprec_core::OperatorStore)): the dry run, and bringing terminal
//! operations back in batches, in place or as new linked operations, spread over time.
//!
//! Only terminal operations are touched (dead, and cancelled when asked), so a re-drive never
//! overlaps a late attempt; one already re-driven as new is skipped, so running the same re-drive
//! again after an interruption re-drives nothing twice.

use chrono::{DateTime, Utc};
use oprec_core::operator::{
    OperationFilter, PreviewGroup, PreviewSample, RedriveMode, RedriveParams, RedrivePreview,
    RedrivePreviewParams, Redriven,
};
use oprec_core::{OperationId, Result, Status};
use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

use crate::row::{self, Columns};
use crate::{PgStore, backend_error, filter, sql};

/// Appends the condition that the row aliased `o` is a terminal match of `f` not already
/// re-driven as new.
fn push_redrivable(q: &mut QueryBuilder<Postgres>, f: &OperationFilter, include_cancelled: bool) {
    let mut terminal = vec![Status::Dead.as_str()];
    if include_cancelled {
        terminal.push(Status::Cancelled.as_str());
    }
    q.push(" o.status = ANY(").push_bind(terminal).push(
        ") AND NOT EXISTS (SELECT 1 FROM operations c \
             WHERE c.redrive_of = o.id AND NOT c.redrive_duplicate)",
    );
    filter::push_conditions(q, f);
}

/// What a re-drive would touch: matches grouped and sampled, and the non-terminal matches it
/// would refuse. Changes nothing.
pub(crate) async fn redrive_preview(
    store: &PgStore,
    params: RedrivePreviewParams,
) -> Result<RedrivePreview> {
    let (f, include_cancelled) = (&params.filter, params.include_cancelled);
    let mut q = QueryBuilder::new(
        "SELECT o.kind, o.payload_mode, o.last_failure_class, o.terminal_reason, count(*) AS count
         FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled);
    q.push(" GROUP BY 1, 2, 3, 4 ORDER BY 5 DESC, 1");
    let rows = q
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

    let mut q = QueryBuilder::new(
        "SELECT count(*) FROM operations o
         WHERE o.status IN ('pending', 'running', 'reconciling', 'held')",
    );
    filter::push_conditions(&mut q, f);
    let n: i64 = q
        .build_query_scalar()
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    preview.not_terminal = row::unsigned("count", n)?;

    let mut q = QueryBuilder::new(
        "SELECT o.id, o.kind, o.last_error->>'summary' AS error FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled);
    q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
        .push_bind(i64::from(params.samples));
    let rows = q
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
    let mut q = QueryBuilder::new("SELECT o.id FROM operations o WHERE");
    push_redrivable(&mut q, &params.filter, params.include_cancelled);
    q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
        .push_bind(i64::from(params.limit))
        .push(" FOR UPDATE OF o SKIP LOCKED");
    let ids: Vec<Uuid> = q
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
