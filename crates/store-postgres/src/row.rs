//! Reading rows back into core types, and the column values bound for core types. A stored value
//! that does not fit its core type (an unknown status name, a negative count, JSON of the wrong
//! shape) is an error, never clamped or defaulted.

use chrono::Duration;
use oprec_core::{Attempt, Claimed, Error, Operation, OperationId, Result};
use sqlx::postgres::PgRow;
use sqlx::{Decode, Postgres, Row, Type};
use uuid::Uuid;

use crate::backend_error;

/// The error for a stored value that does not read back as its core type.
pub(crate) fn unreadable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::backend(false, format!("unreadable stored {what}: {e}"))
}

/// A stored integer as the unsigned count it stands for; a negative or oversized one is an error.
pub(crate) fn unsigned<T: TryFrom<i64>>(what: &str, n: i64) -> Result<T>
where
    T::Error: std::fmt::Display,
{
    T::try_from(n).map_err(|e| unreadable(what, format!("{n}: {e}")))
}

/// A stored name as the core enum it names.
pub(crate) fn parse<T: std::str::FromStr>(what: &str, s: &str) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    s.parse().map_err(|e| unreadable(what, e))
}

/// Typed access to one row's columns, by name.
pub(crate) struct Columns<'r>(pub(crate) &'r PgRow);

impl Columns<'_> {
    /// A column as its PostgreSQL type decodes.
    pub(crate) fn get<'r, T: Decode<'r, Postgres> + Type<Postgres>>(
        &'r self,
        column: &str,
    ) -> Result<T> {
        self.0.try_get(column).map_err(backend_error)
    }

    pub(crate) fn opt_parsed<T: std::str::FromStr>(&self, column: &str) -> Result<Option<T>>
    where
        T::Err: std::fmt::Display,
    {
        self.get::<Option<&str>>(column)?
            .map(|s| parse(column, s))
            .transpose()
    }

    pub(crate) fn parsed<T: std::str::FromStr>(&self, column: &str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        parse(column, self.get::<&str>(column)?)
    }

    pub(crate) fn opt_json<T: serde::de::DeserializeOwned>(
        &self,
        column: &str,
    ) -> Result<Option<T>> {
        self.get::<Option<serde_json::Value>>(column)?
            .map(|v| serde_json::from_value(v).map_err(|e| unreadable(column, e)))
            .transpose()
    }

    /// An `integer` count (attempts, bounds, streaks).
    pub(crate) fn opt_count(&self, column: &str) -> Result<Option<u32>> {
        self.get::<Option<i32>>(column)?
            .map(|n| unsigned(column, i64::from(n)))
            .transpose()
    }

    pub(crate) fn count(&self, column: &str) -> Result<u32> {
        unsigned(column, i64::from(self.get::<i32>(column)?))
    }

    /// A `bigint` count (`count(*)`, affected rows, a pid).
    pub(crate) fn big_count<T: TryFrom<i64>>(&self, column: &str) -> Result<T>
    where
        T::Error: std::fmt::Display,
    {
        unsigned(column, self.get::<i64>(column)?)
    }

    pub(crate) fn id(&self, column: &str) -> Result<OperationId> {
        self.get::<Uuid>(column).map(OperationId::from_uuid)
    }
}

/// Reads one `operations` row.
pub(crate) fn operation(row: &PgRow) -> Result<Operation> {
    let c = Columns(row);
    Ok(Operation {
        id: c.id("id")?,
        kind: c.get("kind")?,
        idempotency_key: c.get("idempotency_key")?,
        payload: c.get("payload")?,
        payload_mode: c.opt_parsed("payload_mode")?,
        status: c.parsed("status")?,
        attempt: c.count("attempt")?,
        max_attempts: c.opt_count("max_attempts")?,
        next_eligible_at: c.get("next_eligible_at")?,
        give_up_at: c.get("give_up_at")?,
        lease_until: c.get("lease_until")?,
        claim_token: c.get("claim_token")?,
        claimed_at: c.get("claimed_at")?,
        worker_id: c.get("worker_id")?,
        last_failure_class: c.opt_parsed("last_failure_class")?,
        last_error: c.opt_json("last_error")?,
        remote_id: c.get("remote_id")?,
        dependency: c.get("dependency")?,
        terminal_reason: c.opt_parsed("terminal_reason")?,
        code_version: c.get("code_version")?,
        enqueue_params: c.get("enqueue_params")?,
        redrive_of: c
            .get::<Option<Uuid>>("redrive_of")?
            .map(OperationId::from_uuid),
        redrive_root: c
            .get::<Option<Uuid>>("redrive_root")?
            .map(OperationId::from_uuid),
        redriven_as: c
            .get::<Option<Uuid>>("redriven_as")?
            .map(OperationId::from_uuid),
        // A trace context is a hint for tracing, never a reason to refuse the row: one the
        // column's check let in (written by hand) but core refuses (all-zero ids) is dropped,
        // or the claim batch it is in would fail on every try.
        traceparent: c.opt_parsed("traceparent").ok().flatten(),
        redrive_count: c.count("redrive_count")?,
        vanished_streak: c.count("vanished_streak")?,
        suspect: c.get("suspect")?,
        isolated: c.get("isolated")?,
        snoozes: c.count("snoozes")?,
        unknowns: c.count("unknowns")?,
        last_woken_at: c.get("last_woken_at")?,
        created_at: c.get("created_at")?,
        updated_at: c.get("updated_at")?,
        terminal_at: c.get("terminal_at")?,
    })
}

/// Reads one `operations` row that a claim returned (or the rescuer listed) as running.
pub(crate) fn claimed(row: &PgRow) -> Result<Claimed> {
    Claimed::from_operation(operation(row)?)
}

/// Reads one `operation_attempts` row.
pub(crate) fn attempt(row: &PgRow) -> Result<Attempt> {
    let c = Columns(row);
    Ok(Attempt {
        attempt: c.count("attempt")?,
        claimed_at: c.get("claimed_at")?,
        ended_at: c.get("ended_at")?,
        outcome: c.parsed("outcome")?,
        failure_class: c.opt_parsed("failure_class")?,
        error: c.opt_json("error")?,
        worker_id: c.get("worker_id")?,
        code_version: c.get("code_version")?,
        isolated: c.get("isolated")?,
        stale_outcome: c.opt_parsed("stale_outcome")?,
        stale_at: c.get("stale_at")?,
    })
}

/// The ids as bound to a `uuid[]` parameter.
pub(crate) fn uuids(ids: &[OperationId]) -> Vec<Uuid> {
    ids.iter().map(|id| *id.as_uuid()).collect()
}

/// A duration as bound to an `int8` of milliseconds (`$n::int8 * interval '1 millisecond'`).
pub(crate) fn millis(d: Duration) -> i64 {
    d.num_milliseconds()
}

/// A duration as bound to an `int8` of microseconds, saturating.
pub(crate) fn micros(d: Duration) -> i64 {
    d.num_microseconds().unwrap_or(i64::MAX)
}

/// A JSON value as bound to a `jsonb` parameter.
pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value)
        .map_err(|e| Error::InvalidInput(format!("not storable as JSON: {e}")))
}
