//! Reading rows back into core types: ids and tokens from hyphenated text, JSON from text, times
//! through [`crate::time`].

use chrono::{DateTime, Utc};
use oprec_core::{Attempt, Error, Operation, OperationId, Result};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use uuid::Uuid;

use crate::{backend_error, time};

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

fn unreadable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::backend(false, format!("unreadable stored {what}: {e}"))
}

/// Typed access to one row's columns, each stored as SQLite keeps it.
pub(crate) struct Columns<'r>(pub(crate) &'r SqliteRow);

impl Columns<'_> {
    pub(crate) fn opt_text(&self, column: &str) -> Result<Option<String>> {
        self.0.try_get(column).map_err(backend_error)
    }

    pub(crate) fn text(&self, column: &str) -> Result<String> {
        self.opt_text(column)?
            .ok_or_else(|| unreadable(column, "NULL in a NOT NULL column"))
    }

    pub(crate) fn opt_parsed<T: std::str::FromStr>(&self, column: &str) -> Result<Option<T>>
    where
        T::Err: std::fmt::Display,
    {
        self.opt_text(column)?
            .map(|s| s.parse::<T>().map_err(|e| unreadable(column, e)))
            .transpose()
    }

    pub(crate) fn parsed<T: std::str::FromStr>(&self, column: &str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        self.text(column)?
            .parse()
            .map_err(|e| unreadable(column, e))
    }

    pub(crate) fn opt_uuid(&self, column: &str) -> Result<Option<Uuid>> {
        self.opt_parsed(column)
    }

    pub(crate) fn opt_json<T: serde::de::DeserializeOwned>(
        &self,
        column: &str,
    ) -> Result<Option<T>> {
        self.opt_text(column)?
            .map(|s| serde_json::from_str(&s).map_err(|e| unreadable(column, e)))
            .transpose()
    }

    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self, column: &str) -> Result<T> {
        serde_json::from_str(&self.text(column)?).map_err(|e| unreadable(column, e))
    }

    pub(crate) fn opt_time(&self, column: &str) -> Result<Option<DateTime<Utc>>> {
        self.opt_text(column)?.map(|s| time::parse(&s)).transpose()
    }

    pub(crate) fn time(&self, column: &str) -> Result<DateTime<Utc>> {
        time::parse(&self.text(column)?)
    }

    pub(crate) fn int(&self, column: &str) -> Result<i64> {
        self.0
            .try_get::<Option<i64>, _>(column)
            .map_err(backend_error)?
            .ok_or_else(|| unreadable(column, "NULL in a NOT NULL column"))
    }

    pub(crate) fn opt_count(&self, column: &str) -> Result<Option<u32>> {
        self.0
            .try_get::<Option<i64>, _>(column)
            .map_err(backend_error)?
            .map(|n| u32::try_from(n).map_err(|e| unreadable(column, e)))
            .transpose()
    }

    pub(crate) fn count(&self, column: &str) -> Result<u32> {
        self.opt_count(column)?
            .ok_or_else(|| unreadable(column, "NULL in a NOT NULL column"))
    }
}

/// Reads one `operations` row.
pub(crate) fn operation(row: &SqliteRow) -> Result<Operation> {
    let c = Columns(row);
    Ok(Operation {
        id: OperationId::from_uuid(c.parsed("id")?),
        kind: c.text("kind")?,
        idempotency_key: c.opt_text("idempotency_key")?,
        payload: c.json("payload")?,
        status: c.parsed("status")?,
        attempt: c.count("attempt")?,
        max_attempts: c.opt_count("max_attempts")?,
        next_eligible_at: c.time("next_eligible_at")?,
        give_up_at: c.opt_time("give_up_at")?,
        lease_until: c.opt_time("lease_until")?,
        claim_token: c.opt_uuid("claim_token")?,
        claimed_at: c.opt_time("claimed_at")?,
        worker_id: c.opt_text("worker_id")?,
        last_failure_class: c.opt_parsed("last_failure_class")?,
        last_error: c.opt_json("last_error")?,
        remote_id: c.opt_text("remote_id")?,
        dependency: c.opt_text("dependency")?,
        terminal_reason: c.opt_parsed("terminal_reason")?,
        code_version: c.opt_text("code_version")?,
        enqueue_params: c.json("enqueue_params")?,
        redrive_of: c.opt_uuid("redrive_of")?.map(OperationId::from_uuid),
        redrive_count: c.count("redrive_count")?,
        vanished_streak: c.count("vanished_streak")?,
        last_woken_at: c.opt_time("last_woken_at")?,
        created_at: c.time("created_at")?,
        updated_at: c.time("updated_at")?,
        terminal_at: c.opt_time("terminal_at")?,
    })
}

/// Reads one `operation_attempts` row.
pub(crate) fn attempt(row: &SqliteRow) -> Result<Attempt> {
    let c = Columns(row);
    Ok(Attempt {
        attempt: c.count("attempt")?,
        claimed_at: c.time("claimed_at")?,
        ended_at: c.time("ended_at")?,
        outcome: c.parsed("outcome")?,
        failure_class: c.opt_parsed("failure_class")?,
        error: c.opt_json("error")?,
        worker_id: c.opt_text("worker_id")?,
        code_version: c.opt_text("code_version")?,
    })
}

/// The stored text of an id or token: hyphenated lowercase, so text order is id order.
pub(crate) fn uuid_text(id: &Uuid) -> String {
    id.hyphenated().to_string()
}

/// The ids as stored text, each once, in the order first given.
pub(crate) fn distinct_texts(ids: &[OperationId]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    ids.iter()
        .filter(|id| seen.insert(**id))
        .map(|id| uuid_text(id.as_uuid()))
        .collect()
}

/// The stored text of a JSON value.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::InvalidInput(format!("not storable as JSON: {e}")))
}

/// Reads back an id or token written as text (by this store, or returned by a statement).
pub(crate) fn parse_uuid(s: &str) -> Result<Uuid> {
    s.parse().map_err(|e| unreadable("id", e))
}
