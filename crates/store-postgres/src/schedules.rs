//! The `operation_schedules` table ([`ScheduleStore`](oprec_core::ScheduleStore)): the schedules
//! of recurring kinds, declared by the workers that run them, advanced by the maintenance leader
//! at each tick, listed by operators with their last operation's status.

use chrono::{DateTime, Utc};
use oprec_core::Result;
use oprec_core::schedule::{ScheduleAdvanceParams, ScheduleDeclareParams, ScheduleRecord};
use uuid::Uuid;

use crate::row::Columns;
use crate::{PgStore, backend_error, sql};

/// Upserts the declared schedules in one statement (a kind named twice keeps its last
/// schedule), then removes the unscheduled kinds' rows.
pub(crate) async fn schedule_declare(store: &PgStore, params: ScheduleDeclareParams) -> Result<()> {
    let mut declared = Vec::with_capacity(params.schedules.len());
    for d in params.schedules {
        declared.retain(|seen: &oprec_core::schedule::ScheduleDeclaration| seen.kind != d.kind);
        declared.push(d);
    }
    let now = store.now_bind().unwrap_or_else(Utc::now);
    if !declared.is_empty() {
        let kinds: Vec<&str> = declared.iter().map(|d| d.kind.as_str()).collect();
        let expressions: Vec<&str> = declared.iter().map(|d| d.schedule.expression()).collect();
        let zones: Vec<&str> = declared.iter().map(|d| d.schedule.zone()).collect();
        let missed: Vec<&str> = declared
            .iter()
            .map(|d| d.schedule.missed_rule().as_str())
            .collect();
        let grace: Vec<i64> = declared
            .iter()
            .map(|d| d.schedule.grace_period().num_seconds())
            .collect();
        let payloads: Vec<String> = declared
            .iter()
            .map(|d| d.schedule.fixed_payload().to_string())
            .collect();
        let next: Vec<Option<DateTime<Utc>>> = declared
            .iter()
            .map(|d| d.schedule.next_after(now))
            .collect();
        sqlx::query(sql::SCHEDULES_DECLARE)
            .bind(store.now_bind())
            .bind(kinds)
            .bind(expressions)
            .bind(zones)
            .bind(missed)
            .bind(grace)
            .bind(payloads)
            .bind(next)
            .bind(&params.declared_by)
            .execute(&store.pool)
            .await
            .map_err(backend_error)?;
    }
    if !params.unscheduled.is_empty() {
        sqlx::query(sql::SCHEDULES_REMOVE)
            .bind(&params.unscheduled)
            .execute(&store.pool)
            .await
            .map_err(backend_error)?;
    }
    Ok(())
}

/// Records a pass, fenced by the last tick it read.
pub(crate) async fn schedule_advance(
    store: &PgStore,
    params: ScheduleAdvanceParams,
) -> Result<bool> {
    let (tick, id) = match params.enqueued {
        Some((tick, id)) => (Some(tick), Some(*id.as_uuid())),
        None => (None, None::<Uuid>),
    };
    let done = sqlx::query(sql::SCHEDULES_ADVANCE)
        .bind(store.now_bind())
        .bind(&params.kind)
        .bind(params.last_tick)
        .bind(tick)
        .bind(id)
        .bind(params.next_tick)
        .bind(params.read_last_tick)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected() == 1)
}

/// Every schedule, by kind.
pub(crate) async fn schedule_list(store: &PgStore) -> Result<Vec<ScheduleRecord>> {
    let rows = sqlx::query(sql::SCHEDULES_LIST)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(ScheduleRecord {
                kind: c.get("kind")?,
                expression: c.get("expression")?,
                timezone: c.get("timezone")?,
                missed: c.parsed("missed")?,
                grace_secs: c.get("grace_secs")?,
                payload: c.get("payload")?,
                declared_at: c.get("declared_at")?,
                declared_by: c.get("declared_by")?,
                last_tick: c.get("last_tick")?,
                last_enqueued_tick: c.get("last_enqueued_tick")?,
                last_operation_id: c
                    .get::<Option<Uuid>>("last_operation_id")?
                    .map(oprec_core::OperationId::from_uuid),
                last_operation_status: c.opt_parsed("last_operation_status")?,
                next_tick: c.get("next_tick")?,
                updated_at: c.get("updated_at")?,
            })
        })
        .collect()
}
