//! The upkeep of what removal and churn leave behind, run by the maintenance leader: the
//! per-minute attempt counts of minutes older than
//! [`ATTEMPT_MINUTES_KEPT_DAYS`](oprec_core::retention::ATTEMPT_MINUTES_KEPT_DAYS) are removed,
//! the backlog's counts per creation slot are folded (shards summed, empty slots removed), and, when nothing else does (a PostgreSQL server with autovacuum off, common right after an
//! outage or on a hand-tuned server), oprec's tables are vacuumed, so that the rows retention
//! removes and the versions every claim and completion leave become reusable space instead of
//! bloat that slows the claim and `stats`.
//!
//! Runs whatever the retention policy (even with retention off, every attempt rewrites rows).
//! The store decides whether a vacuum is needed ([`RetentionStore::store_vacuum`]); a failed
//! vacuum (a role that does not own the tables) is logged once per run and tried again later.

use std::sync::Arc;

use oprec_core::RetentionStore;
use oprec_core::retention::{
    AttemptMinutesRemoveParams, BacklogSlotsCompactParams, StoreVacuumParams, VacuumOutcome,
};
use tokio_util::sync::CancellationToken;

use crate::RetentionConfig;

/// One upkeep pass: old attempt minutes removed, then a vacuum if `config.vacuum` and the store
/// needs one. Returns what the vacuum did (`None` when `config.vacuum` is off).
pub async fn upkeep_once(
    store: &dyn RetentionStore,
    config: &RetentionConfig,
) -> oprec_core::Result<Option<VacuumOutcome>> {
    let now = store.now().await?;
    let removed = store
        .attempt_minutes_remove(AttemptMinutesRemoveParams::past_keeping(now))
        .await?;
    if removed > 0 {
        tracing::debug!(removed, "old per-minute attempt counts removed");
    }
    let compacted = store
        .backlog_slots_compact(BacklogSlotsCompactParams::settled_at(now))
        .await?;
    if compacted > 0 {
        tracing::debug!(compacted, "the backlog's counts per creation slot folded");
    }
    if !config.vacuum {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    let outcome = store.store_vacuum(StoreVacuumParams::default()).await?;
    if let VacuumOutcome::Vacuumed { tables } = &outcome {
        tracing::info!(
            tables = %tables.join(", "),
            took_ms = started.elapsed().as_millis() as u64,
            "tables vacuumed: the server's autovacuum is off for them"
        );
    }
    Ok(Some(outcome))
}

/// Runs upkeep passes until `stop` is cancelled.
pub(crate) async fn run(
    store: Arc<dyn RetentionStore>,
    config: RetentionConfig,
    stop: CancellationToken,
) {
    let mut warned = false;
    loop {
        match upkeep_once(store.as_ref(), &config).await {
            Ok(_) => warned = false,
            Err(e) if !warned => {
                warned = true;
                tracing::warn!(error = %e, "the store's upkeep failed; tried again every pass, logged once");
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(config.upkeep_every) => {}
        }
    }
}
