//! Recurring operations, on the maintenance leader: every second (by default) it reads the
//! schedules (`operation_schedules`), asks core which ticks are due
//! ([`Schedule::plan`](oprec_core::Schedule::plan)), enqueues one operation per due tick with the
//! idempotency key `schedule:<tick>` (so a second leader overlapping during a failover finds the
//! same operations instead of making new ones), publishes their wake-ups, and records the pass
//! in the schedule's row, fenced by the last tick it read.
//!
//! A kind this process does not run is enqueued under the policy its workers published
//! (`operation_kinds`), so a leader in one pool ticks the schedules of every pool.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use oprec_core::schedule::{ScheduleAdvanceParams, ScheduleRecord, tick_key};
use oprec_core::{EnqueueOptions, FullStore, KindPolicy, NewOperation, Result, Transport, WakeUp};
use tokio_util::sync::CancellationToken;

use crate::Registry;

/// How often the leader looks for due ticks: the finest schedule (every second) is enqueued
/// within a second of its tick.
pub const TICK_CHECK_EVERY: Duration = Duration::from_secs(1);

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Operations newly enqueued.
    pub enqueued: u64,
    /// Due ticks whose operation already existed (another leader enqueued it).
    pub existing: u64,
    /// Ticks that made no operation (missed while nothing ran, by the `missed` rule).
    pub dropped: u64,
    /// Schedules that could not be ticked (unreadable row, unknown kind policy).
    pub failed: u64,
}

/// One pass over every schedule at the store's now.
pub async fn tick_once(
    store: &dyn FullStore,
    transport: Option<&dyn Transport>,
    registry: &Registry,
) -> Result<TickReport> {
    let now = store.now().await?;
    let schedules = store.schedule_list().await?;
    let mut report = TickReport::default();
    let mut published: Option<HashMap<String, KindPolicy>> = None;
    for record in schedules {
        match tick_schedule(store, transport, registry, &mut published, &record, now).await {
            Ok(r) => {
                report.enqueued += r.enqueued;
                report.existing += r.existing;
                report.dropped += r.dropped;
            }
            Err(e) => {
                report.failed += 1;
                tracing::warn!(kind = %record.kind, error = %e, "ticking the kind's schedule failed");
            }
        }
    }
    Ok(report)
}

async fn tick_schedule(
    store: &dyn FullStore,
    transport: Option<&dyn Transport>,
    registry: &Registry,
    published: &mut Option<HashMap<String, KindPolicy>>,
    record: &ScheduleRecord,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<TickReport> {
    let schedule = record.schedule()?;
    let plan = schedule.plan(record.handled_up_to(), now);
    let Some(handled) = plan.handled_up_to else {
        return Ok(TickReport::default());
    };
    let policy = match registry.get(&record.kind) {
        Some(k) => k.published_policy(),
        None => {
            if published.is_none() {
                *published = Some(
                    store
                        .kind_list()
                        .await?
                        .into_iter()
                        .map(|k| (k.policy.kind.clone(), k.policy))
                        .collect(),
                );
            }
            published
                .as_ref()
                .and_then(|p| p.get(&record.kind))
                .cloned()
                .ok_or_else(|| {
                    oprec_core::Error::InvalidInput(format!(
                        "no worker has published the policy of kind {}",
                        record.kind
                    ))
                })?
        }
    };
    let ops = plan
        .enqueue
        .iter()
        .map(|tick| {
            let mut op = NewOperation::from_published(
                &policy,
                schedule.payload_for(*tick),
                EnqueueOptions {
                    idempotency_key: Some(tick_key(*tick)),
                    ..EnqueueOptions::default()
                },
                now,
            )?;
            if transport.is_some() && op.next_eligible_at <= now {
                op.last_woken_at = Some(now);
            }
            Ok(op)
        })
        .collect::<Result<Vec<_>>>()?;
    let due: Vec<bool> = ops.iter().map(|o| o.next_eligible_at <= now).collect();
    let enqueued = if ops.is_empty() {
        Vec::new()
    } else {
        store.operation_insert_many(ops).await?
    };
    let mut report = TickReport {
        dropped: plan.dropped,
        ..TickReport::default()
    };
    let mut wake_ups = Vec::new();
    for (e, due) in enqueued.iter().zip(due) {
        if e.created {
            report.enqueued += 1;
            if due {
                wake_ups.push(WakeUp::new(e.id, &record.kind));
            }
        } else {
            report.existing += 1;
        }
    }
    if let (Some(t), false) = (transport, wake_ups.is_empty())
        && let Err(e) = t.publish(&wake_ups).await
    {
        tracing::warn!(error = %e, kind = %record.kind,
            "publishing the wake-ups of scheduled operations failed; the scheduler will wake them");
    }
    let last = plan
        .enqueue
        .last()
        .copied()
        .zip(enqueued.last().map(|e| e.id));
    store
        .schedule_advance(ScheduleAdvanceParams {
            kind: record.kind.clone(),
            read_last_tick: record.last_tick,
            last_tick: handled,
            enqueued: last,
            next_tick: plan.next,
        })
        .await?;
    if plan.dropped > 0 {
        tracing::info!(kind = %record.kind, dropped = plan.dropped, rule = %schedule.missed_rule(),
            "ticks missed while nothing ran made no operation");
    }
    Ok(report)
}

/// Runs passes every `every` until `stop`; a failed pass is logged once until one succeeds.
pub(crate) async fn run(
    store: Arc<dyn FullStore>,
    transport: Option<Arc<dyn Transport>>,
    registry: Arc<Registry>,
    every: Duration,
    stop: CancellationToken,
) {
    let mut warned = false;
    loop {
        match tick_once(store.as_ref(), transport.as_deref(), &registry).await {
            Ok(r) => {
                warned = false;
                if r.enqueued > 0 {
                    tracing::debug!(enqueued = r.enqueued, "scheduled operations enqueued");
                }
            }
            Err(e) if !warned => {
                warned = true;
                tracing::warn!(error = %e, "reading the schedules failed; tried again every second, logged once");
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
