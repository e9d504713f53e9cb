//! Leaderships ([`MaintenanceStore`](oprec_core::MaintenanceStore)): one process of the fleet at
//! a time holds a named leadership, judged by the database's clock, and renews it before its
//! lease runs out; another takes it over once it has (or at once, when the holder gives it up).

use oprec_core::Result;
use oprec_core::maintenance::{LeaderAcquireParams, LeaderReleaseParams, Leadership};
use sqlx::postgres::PgRow;

use crate::row::{Columns, millis};
use crate::{PgStore, backend_error, sql};

fn leadership(r: &PgRow) -> Result<Leadership> {
    let c = Columns(r);
    Ok(Leadership {
        name: c.get("name")?,
        holder: c.get("holder")?,
        lease_until: c.get("lease_until")?,
        since: c.get("since")?,
        settings: c.get("settings")?,
    })
}

/// See [`MaintenanceStore::leader_acquire`](oprec_core::MaintenanceStore::leader_acquire).
pub(crate) async fn leader_acquire(
    store: &PgStore,
    params: LeaderAcquireParams,
) -> Result<Leadership> {
    let granted = sqlx::query(sql::LEADER_ACQUIRE)
        .bind(store.now_bind())
        .bind(&params.name)
        .bind(&params.holder)
        .bind(millis(params.lease))
        .bind(&params.settings)
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
pub(crate) async fn leader_release(store: &PgStore, params: LeaderReleaseParams) -> Result<bool> {
    let done = sqlx::query(sql::LEADER_RELEASE)
        .bind(&params.name)
        .bind(&params.holder)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected() > 0)
}

/// See [`OperatorStore::leader_list`](oprec_core::OperatorStore::leader_list).
pub(crate) async fn leader_list(store: &PgStore) -> Result<Vec<Leadership>> {
    let rows = sqlx::query(sql::LEADER_LIST)
        .bind(store.now_bind())
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(leadership).collect()
}
