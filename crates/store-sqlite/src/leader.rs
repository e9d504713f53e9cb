//! Leaderships ([`MaintenanceStore`](oprec_core::MaintenanceStore)): one process at a time holds
//! a named leadership, judged by the store's clock, and renews it before its lease runs out;
//! another takes it over once it has (or at once, when the holder gives it up). With SQLite the
//! processes share one file on one machine, but the rule is the same.

use chrono::Duration;
use oprec_core::Result;
use oprec_core::maintenance::{LeaderAcquireParams, LeaderReleaseParams, Leadership};
use sqlx::sqlite::SqliteRow;

use crate::row::{Columns, json_text};
use crate::{SqliteStore, backend_error, sql, time};

fn leadership(r: &SqliteRow) -> Result<Leadership> {
    let c = Columns(r);
    Ok(Leadership {
        name: c.text("name")?,
        holder: c.text("holder")?,
        lease_until: c.time("lease_until")?,
        since: c.time("since")?,
        settings: c.opt_json("settings")?,
    })
}

/// See [`MaintenanceStore::leader_acquire`](oprec_core::MaintenanceStore::leader_acquire).
pub(crate) async fn leader_acquire(
    store: &SqliteStore,
    params: LeaderAcquireParams,
) -> Result<Leadership> {
    let now = store.clock_now();
    // The lease to the millisecond, as the PostgreSQL store takes it.
    let lease = Duration::milliseconds(params.lease.num_milliseconds());
    let until = time::text(time::after(now, lease)?)?;
    let _turn = store.write_turn().await;
    let granted = sqlx::query(sql::LEADER_ACQUIRE)
        .bind(&params.name)
        .bind(&params.holder)
        .bind(time::text(now)?)
        .bind(until)
        .bind(params.settings.as_ref().map(json_text).transpose()?)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    if let Some(r) = granted {
        return leadership(&r);
    }
    // Someone else leads: say who.
    let r = sqlx::query(sql::LEADER_GET)
        .bind(&params.name)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    leadership(&r)
}

/// See [`MaintenanceStore::leader_release`](oprec_core::MaintenanceStore::leader_release).
pub(crate) async fn leader_release(
    store: &SqliteStore,
    params: LeaderReleaseParams,
) -> Result<bool> {
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::LEADER_RELEASE)
        .bind(&params.name)
        .bind(&params.holder)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected() > 0)
}

/// See [`OperatorStore::leader_list`](oprec_core::OperatorStore::leader_list).
pub(crate) async fn leader_list(store: &SqliteStore) -> Result<Vec<Leadership>> {
    let rows = sqlx::query(sql::LEADER_LIST)
        .bind(time::text(store.clock_now())?)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(leadership).collect()
}
