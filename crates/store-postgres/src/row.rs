//! Reading rows back into core types.

use oprec_core::{Attempt, Error, Operation, OperationId, Result};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::backend_error;

/// The columns of `operations`, in the order [`operation`] reads them.
macro_rules! operation_columns {
    () => {
        "id, kind, idempotency_key, payload, status, attempt, max_attempts, next_eligible_at, \
         give_up_at, lease_until, claim_token, claimed_at, worker_id, last_failure_class, \
         last_error, remote_id, dependency, terminal_reason, code_version, enqueue_params, \
         redrive_of, redrive_count, vanished_streak, last_woken_at, created_at, updated_at, \
         terminal_at"
    };
}
pub(crate) use operation_columns;

fn parse<T: std::str::FromStr>(s: Option<String>) -> Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    s.map(|s| s.parse::<T>())
        .transpose()
        .map_err(|e| Error::backend(false, format!("unreadable stored value: {e}")))
}

fn json<T: serde::de::DeserializeOwned>(v: Option<serde_json::Value>) -> Result<Option<T>> {
    v.map(serde_json::from_value)
        .transpose()
        .map_err(|e| Error::backend(false, format!("unreadable stored JSON: {e}")))
}

fn count(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

/// Reads one `operations` row.
pub(crate) fn operation(row: &PgRow) -> Result<Operation> {
    let get = |e: sqlx::Error| backend_error(e);
    Ok(Operation {
        id: OperationId::from_uuid(row.try_get("id").map_err(get)?),
        kind: row.try_get("kind").map_err(get)?,
        idempotency_key: row.try_get("idempotency_key").map_err(get)?,
        payload: row.try_get("payload").map_err(get)?,
        status: parse(Some(row.try_get::<String, _>("status").map_err(get)?))?
            .expect("status is NOT NULL"),
        attempt: count(row.try_get("attempt").map_err(get)?),
        max_attempts: row
            .try_get::<Option<i32>, _>("max_attempts")
            .map_err(get)?
            .map(count),
        next_eligible_at: row.try_get("next_eligible_at").map_err(get)?,
        give_up_at: row.try_get("give_up_at").map_err(get)?,
        lease_until: row.try_get("lease_until").map_err(get)?,
        claim_token: row.try_get("claim_token").map_err(get)?,
        claimed_at: row.try_get("claimed_at").map_err(get)?,
        worker_id: row.try_get("worker_id").map_err(get)?,
        last_failure_class: parse(row.try_get("last_failure_class").map_err(get)?)?,
        last_error: json(row.try_get("last_error").map_err(get)?)?,
        remote_id: row.try_get("remote_id").map_err(get)?,
        dependency: row.try_get("dependency").map_err(get)?,
        terminal_reason: parse(row.try_get("terminal_reason").map_err(get)?)?,
        code_version: row.try_get("code_version").map_err(get)?,
        enqueue_params: row.try_get("enqueue_params").map_err(get)?,
        redrive_of: row
            .try_get::<Option<uuid::Uuid>, _>("redrive_of")
            .map_err(get)?
            .map(OperationId::from_uuid),
        redrive_count: count(row.try_get("redrive_count").map_err(get)?),
        vanished_streak: count(row.try_get("vanished_streak").map_err(get)?),
        last_woken_at: row.try_get("last_woken_at").map_err(get)?,
        created_at: row.try_get("created_at").map_err(get)?,
        updated_at: row.try_get("updated_at").map_err(get)?,
        terminal_at: row.try_get("terminal_at").map_err(get)?,
    })
}

/// Reads one `operation_attempts` row.
pub(crate) fn attempt(row: &PgRow) -> Result<Attempt> {
    let get = |e: sqlx::Error| backend_error(e);
    Ok(Attempt {
        attempt: count(row.try_get("attempt").map_err(get)?),
        claimed_at: row.try_get("claimed_at").map_err(get)?,
        ended_at: row.try_get("ended_at").map_err(get)?,
        outcome: parse(Some(row.try_get::<String, _>("outcome").map_err(get)?))?
            .expect("outcome is NOT NULL"),
        failure_class: parse(row.try_get("failure_class").map_err(get)?)?,
        error: json(row.try_get("error").map_err(get)?)?,
        worker_id: row.try_get("worker_id").map_err(get)?,
        code_version: row.try_get("code_version").map_err(get)?,
    })
}
