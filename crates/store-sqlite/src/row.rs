//! Rows read back into core types, and core values written as the text SQLite keeps: ids and
//! tokens as hyphenated text, JSON as text, times through [`crate::time`]. A stored value that
//! does not fit its type (a negative count, a status no enum names, a malformed time) is an
//! error, never clamped or guessed: the PostgreSQL store decodes the same way.

use oprec_core::operator::{AuditEntry, AuditRecord, Control};
use oprec_core::store::{CountRow, Step};
use oprec_core::{Attempt, Error, Operation, OperationId, Result, UnhandledKind, WorkerRecord};
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use uuid::Uuid;

use crate::{backend_error, time};

fn unreadable(column: &str, e: impl std::fmt::Display) -> Error {
    Error::backend(false, format!("unreadable stored {column}: {e}"))
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

    pub(crate) fn opt_json<T: DeserializeOwned>(&self, column: &str) -> Result<Option<T>> {
        self.opt_text(column)?
            .map(|s| serde_json::from_str(&s).map_err(|e| unreadable(column, e)))
            .transpose()
    }

    pub(crate) fn json<T: DeserializeOwned>(&self, column: &str) -> Result<T> {
        serde_json::from_str(&self.text(column)?).map_err(|e| unreadable(column, e))
    }

    pub(crate) fn opt_time(&self, column: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
        self.opt_text(column)?.map(|s| time::parse(&s)).transpose()
    }

    pub(crate) fn time(&self, column: &str) -> Result<chrono::DateTime<chrono::Utc>> {
        time::parse(&self.text(column)?)
    }

    pub(crate) fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        self.0.try_get(column).map_err(backend_error)
    }

    pub(crate) fn int(&self, column: &str) -> Result<i64> {
        self.opt_int(column)?
            .ok_or_else(|| unreadable(column, "NULL in a NOT NULL column"))
    }

    pub(crate) fn opt_u32(&self, column: &str) -> Result<Option<u32>> {
        self.opt_int(column)?
            .map(|n| u32::try_from(n).map_err(|_| unreadable(column, n)))
            .transpose()
    }

    pub(crate) fn flag(&self, column: &str) -> Result<bool> {
        Ok(self.int(column)? != 0)
    }

    pub(crate) fn u32(&self, column: &str) -> Result<u32> {
        self.opt_u32(column)?
            .ok_or_else(|| unreadable(column, "NULL in a NOT NULL column"))
    }

    pub(crate) fn u64(&self, column: &str) -> Result<u64> {
        let n = self.int(column)?;
        u64::try_from(n).map_err(|_| unreadable(column, n))
    }

    pub(crate) fn id(&self, column: &str) -> Result<OperationId> {
        self.parsed(column).map(OperationId::from_uuid)
    }
}

/// Reads one `operations` row.
pub(crate) fn operation(row: &SqliteRow) -> Result<Operation> {
    let c = Columns(row);
    Ok(Operation {
        id: c.id("id")?,
        kind: c.text("kind")?,
        idempotency_key: c.opt_text("idempotency_key")?,
        payload: c.json("payload")?,
        payload_mode: c.opt_parsed("payload_mode")?,
        status: c.parsed("status")?,
        attempt: c.u32("attempt")?,
        max_attempts: c.opt_u32("max_attempts")?,
        next_eligible_at: c.time("next_eligible_at")?,
        give_up_at: c.opt_time("give_up_at")?,
        lease_until: c.opt_time("lease_until")?,
        claim_token: c.opt_parsed("claim_token")?,
        claimed_at: c.opt_time("claimed_at")?,
        worker_id: c.opt_text("worker_id")?,
        last_failure_class: c.opt_parsed("last_failure_class")?,
        last_error: c.opt_json("last_error")?,
        remote_id: c.opt_text("remote_id")?,
        dependency: c.opt_text("dependency")?,
        terminal_reason: c.opt_parsed("terminal_reason")?,
        code_version: c.opt_text("code_version")?,
        enqueue_params: c.json("enqueue_params")?,
        redrive_of: c.opt_parsed("redrive_of")?.map(OperationId::from_uuid),
        redrive_root: c.opt_parsed("redrive_root")?.map(OperationId::from_uuid),
        redriven_as: c.opt_parsed("redriven_as")?.map(OperationId::from_uuid),
        // A trace context is a hint for tracing, never a reason to refuse the row: one the
        // column's check let in (written by hand) but core refuses (all-zero ids) is dropped,
        // or the claim batch it is in would fail on every try.
        traceparent: c.opt_parsed("traceparent").ok().flatten(),
        redrive_count: c.u32("redrive_count")?,
        vanished_streak: c.u32("vanished_streak")?,
        suspect: c.flag("suspect")?,
        isolated: c.flag("isolated")?,
        snoozes: c.u32("snoozes")?,
        unknowns: c.u32("unknowns")?,
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
        attempt: c.u32("attempt")?,
        claimed_at: c.time("claimed_at")?,
        ended_at: c.time("ended_at")?,
        outcome: c.parsed("outcome")?,
        failure_class: c.opt_parsed("failure_class")?,
        error: c.opt_json("error")?,
        worker_id: c.opt_text("worker_id")?,
        code_version: c.opt_text("code_version")?,
        isolated: c.flag("isolated")?,
        stale_outcome: c.opt_parsed("stale_outcome")?,
        stale_at: c.opt_time("stale_at")?,
    })
}

/// Reads one group of `read_count.sql`.
pub(crate) fn count_row(row: &SqliteRow) -> Result<CountRow> {
    let c = Columns(row);
    Ok(CountRow {
        status: c.parsed("status")?,
        kind: c.text("kind")?,
        failure_class: c.opt_parsed("last_failure_class")?,
        count: c.u64("n")?,
        redriven: c.u64("redriven")?,
    })
}

/// Reads one `operation_steps` row.
pub(crate) fn step(row: &SqliteRow) -> Result<Step> {
    let c = Columns(row);
    Ok(Step {
        name: c.text("name")?,
        output: c.json("output")?,
        attempt: c.u32("attempt")?,
        completed_at: c.time("completed_at")?,
    })
}

/// Reads one `controls` row.
pub(crate) fn control(row: &SqliteRow) -> Result<Control> {
    let c = Columns(row);
    Ok(Control {
        scope: c.parsed("scope")?,
        value: c.text("value")?,
        action: c.parsed("action")?,
        until: c.opt_time("until")?,
        reason: c.opt_text("reason")?,
        actor: c.text("actor")?,
        created_at: c.time("created_at")?,
    })
}

/// Reads one `audit_log` row.
pub(crate) fn audit_record(row: &SqliteRow) -> Result<AuditRecord> {
    let c = Columns(row);
    Ok(AuditRecord {
        id: c.int("id")?,
        at: c.time("at")?,
        entry: AuditEntry {
            actor: c.text("actor")?,
            action: c.text("action")?,
            filter: c.json("filter")?,
            affected: c.u64("affected")?,
            reason: c.opt_text("reason")?,
            details: c.json("details")?,
        },
    })
}

/// Reads one `workers` row.
pub(crate) fn worker_record(row: &SqliteRow) -> Result<WorkerRecord> {
    let c = Columns(row);
    Ok(WorkerRecord {
        id: c.text("id")?,
        host: c.text("host")?,
        pid: c.u32("pid")?,
        kinds: c.json("kinds")?,
        code_version: c.opt_text("code_version")?,
        started_at: c.time("started_at")?,
        last_seen_at: c.time("last_seen_at")?,
        leader: c.int("leader")? != 0,
    })
}

/// Reads one group of `workers_unhandled.sql`.
pub(crate) fn unhandled_kind(row: &SqliteRow) -> Result<UnhandledKind> {
    let c = Columns(row);
    let (pending, scanned) = (c.u64("pending")?, c.u64("scanned")?);
    Ok(UnhandledKind {
        kind: c.text("kind")?,
        pending: pending.max(scanned),
        eligible: c.u64("eligible")?,
        eligible_at_least: pending > scanned,
        oldest_created_at: c.time("oldest")?,
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

/// The stored text of a JSON value, or of a list bound as one JSON array.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::InvalidInput(format!("not storable as JSON: {e}")))
}

/// Reads back an id written as text (by this store, or returned by a statement).
pub(crate) fn parse_id(s: &str) -> Result<OperationId> {
    s.parse()
        .map(OperationId::from_uuid)
        .map_err(|e| unreadable("id", e))
}
