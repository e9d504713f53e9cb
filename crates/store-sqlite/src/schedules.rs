//! The `operation_schedules` table ([`ScheduleStore`](oprec_core::ScheduleStore)): the schedules
//! of recurring kinds, declared by the workers that run them, advanced by the maintenance leader
//! at each tick, listed by operators with their last operation's status.

use oprec_core::Result;
use oprec_core::schedule::{
    ScheduleAdvanceParams, ScheduleDeclaration, ScheduleDeclareParams, ScheduleRecord,
};
use serde_json::json;

use crate::row::{Columns, json_text, uuid_text};
use crate::{SqliteStore, backend_error, sql, time};

/// Upserts the declared schedules in one statement (a kind named twice keeps its last
/// schedule), then removes the unscheduled kinds' rows.
pub(crate) async fn schedule_declare(
    store: &SqliteStore,
    params: ScheduleDeclareParams,
) -> Result<()> {
    let mut declared: Vec<ScheduleDeclaration> = Vec::with_capacity(params.schedules.len());
    for d in params.schedules {
        declared.retain(|seen| seen.kind != d.kind);
        declared.push(d);
    }
    let now = store.clock_now();
    let rows = declared
        .iter()
        .map(|d| {
            Ok(json!({
                "kind": d.kind,
                "expression": d.schedule.expression(),
                "timezone": d.schedule.zone(),
                "missed": d.schedule.missed_rule().as_str(),
                "grace_secs": d.schedule.grace_period().num_seconds(),
                "payload": d.schedule.fixed_payload().to_string(),
                "next_tick": time::opt_text(d.schedule.next_after(now))?,
            }))
        })
        .collect::<Result<Vec<_>>>()?;
    let now = time::text(now)?;
    let _turn = store.write_turn().await;
    if !rows.is_empty() {
        sqlx::query(sql::SCHEDULES_DECLARE)
            .bind(json_text(&rows)?)
            .bind(&params.declared_by)
            .bind(&now)
            .execute(&store.pool)
            .await
            .map_err(backend_error)?;
    }
    if !params.unscheduled.is_empty() {
        sqlx::query(sql::SCHEDULES_REMOVE)
            .bind(json_text(&params.unscheduled)?)
            .execute(&store.pool)
            .await
            .map_err(backend_error)?;
    }
    Ok(())
}

/// Records a pass, fenced by the last tick it read.
pub(crate) async fn schedule_advance(
    store: &SqliteStore,
    params: ScheduleAdvanceParams,
) -> Result<bool> {
    let (tick, id) = match params.enqueued {
        Some((tick, id)) => (Some(tick), Some(uuid_text(id.as_uuid()))),
        None => (None, None),
    };
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::SCHEDULES_ADVANCE)
        .bind(now)
        .bind(&params.kind)
        .bind(time::text(params.last_tick)?)
        .bind(time::opt_text(tick)?)
        .bind(id)
        .bind(time::opt_text(params.next_tick)?)
        .bind(time::opt_text(params.read_last_tick)?)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected() == 1)
}

/// Every schedule, by kind.
pub(crate) async fn schedule_list(store: &SqliteStore) -> Result<Vec<ScheduleRecord>> {
    let rows = sqlx::query(sql::SCHEDULES_LIST)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(ScheduleRecord {
                kind: c.text("kind")?,
                expression: c.text("expression")?,
                timezone: c.text("timezone")?,
                missed: c.parsed("missed")?,
                grace_secs: c.int("grace_secs")?,
                payload: c.json("payload")?,
                declared_at: c.time("declared_at")?,
                declared_by: c.text("declared_by")?,
                last_tick: c.opt_time("last_tick")?,
                last_enqueued_tick: c.opt_time("last_enqueued_tick")?,
                last_operation_id: c
                    .opt_text("last_operation_id")?
                    .map(|s| crate::row::parse_id(&s))
                    .transpose()?,
                last_operation_status: c.opt_parsed("last_operation_status")?,
                next_tick: c.opt_time("next_tick")?,
                updated_at: c.time("updated_at")?,
            })
        })
        .collect()
}
