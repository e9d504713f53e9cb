//! The statements whose shape depends on what a person asked for: listings by [`ListParams`]
//! and operator actions by [`OperationFilter`] (count, re-drive dry run and pick, quarantine,
//! release), built with sqlx's `QueryBuilder` on the table aliased `o`, every value a bind
//! parameter. Every other statement is a file under `src/sql/`.
//!
//! Each list of a filter (ids, kinds, classes, reasons) is one bind parameter, a JSON array read
//! back by `json_each`, so that no list, however long, meets SQLite's limit on bind parameters,
//! and ordering and limits still apply to the whole selection (chunking the list would not).

use std::collections::BTreeMap;

use oprec_core::operator::{CountMatchingParams, OperationFilter, RedriveMode, RedriveParams};
use oprec_core::store::{ListParams, RedrivenShown};
use oprec_core::{Ending, Result, Status};
use serde::Serialize;
use sqlx::{QueryBuilder, Sqlite};

use crate::row::{Columns, json_text, uuid_text};
use crate::{SqliteStore, backend_error, time};

/// The columns of `operations` that [`crate::row::operation`] reads, for built statements (the
/// files under `src/sql/` name them themselves).
const OPERATION_COLUMNS: &str = "o.id, o.kind, o.idempotency_key, o.payload, o.payload_mode, \
     o.status, o.attempt, o.max_attempts, o.next_eligible_at, o.give_up_at, o.lease_until, \
     o.claim_token, o.claimed_at, o.worker_id, o.last_failure_class, o.last_error, o.remote_id, \
     o.dependency, o.terminal_reason, o.code_version, o.enqueue_params, o.redrive_of, \
     o.redrive_root, o.redriven_as, o.traceparent, o.redrive_count, o.vanished_streak, o.suspect, o.isolated, o.snoozes, o.unknowns, o.last_woken_at, o.created_at, o.updated_at, \
     o.terminal_at";

/// Where the time goes in core's pause rule, spliced with a bind parameter (the rule names it once).
const NOW_MARK: &str = "/*now*/";

/// The statuses of operations not yet ended.
const NOT_TERMINAL: &str = "('pending', 'running', 'reconciling', 'held')";

/// Appends ` AND ...` for every narrowing field of `f`.
fn push_filter(q: &mut QueryBuilder<Sqlite>, f: &OperationFilter) -> Result<()> {
    if !f.ids.is_empty() {
        let ids: Vec<String> = f.ids.iter().map(|id| uuid_text(id.as_uuid())).collect();
        push_in(q, "o.id", &ids)?;
    }
    if !f.kinds.is_empty() {
        push_in(q, "o.kind", &f.kinds)?;
    }
    if !f.classes.is_empty() {
        let classes: Vec<&str> = f.classes.iter().map(|c| c.as_str()).collect();
        push_in(q, "o.last_failure_class", &classes)?;
    }
    if !f.reasons.is_empty() {
        let reasons: Vec<&str> = f.reasons.iter().map(|r| r.as_str()).collect();
        push_in(q, "o.terminal_reason", &reasons)?;
    }
    if let Some(dependency) = &f.dependency {
        // The kind's dependency, or the one its last failure named, as a control's rule says.
        q.push(" AND (o.dependency = ")
            .push_bind(dependency.clone())
            .push(" OR (o.last_error ->> 'dependency') = ")
            .push_bind(dependency.clone())
            .push(")");
    }
    if let Some(text) = &f.error_contains {
        push_error_contains(q, text);
    }
    if let Some(t) = f.terminal_since {
        q.push(" AND o.terminal_at >= ").push_bind(time::text(t)?);
    }
    if let Some(t) = f.terminal_until {
        q.push(" AND o.terminal_at < ").push_bind(time::text(t)?);
    }
    Ok(())
}

/// Appends ` AND column IN (values)`, the values bound as one JSON array.
fn push_in<T: Serialize>(
    q: &mut QueryBuilder<Sqlite>,
    column: &'static str,
    values: &[T],
) -> Result<()> {
    q.push(" AND ")
        .push(column)
        .push(" IN (SELECT value FROM json_each(")
        .push_bind(json_text(values)?)
        .push("))");
    Ok(())
}

/// Appends that the last error's summary contains `text`: instr, not LIKE, so the text is
/// literal, `%` and `_` included. SQLite's lower() folds ASCII letters only.
fn push_error_contains(q: &mut QueryBuilder<Sqlite>, text: &str) {
    q.push(" AND instr(lower(json_extract(o.last_error, '$.summary')), lower(")
        .push_bind(text.to_owned())
        .push(")) > 0");
}

/// Appends the condition (with no leading `AND`) that `o` is a terminal match of `f` not already
/// re-driven as new. `NOT IN` over the children rather than a correlated `NOT EXISTS`: SQLite
/// reads the children once (from `operations_redrive_of_once`) instead of once per row.
fn push_redrivable(
    q: &mut QueryBuilder<Sqlite>,
    f: &OperationFilter,
    include_cancelled: bool,
) -> Result<()> {
    q.push(if include_cancelled {
        " o.status IN ('dead', 'cancelled')"
    } else {
        " o.status = 'dead'"
    })
    .push(
        " AND o.id NOT IN (SELECT c.redrive_of FROM operations c \
         WHERE c.redrive_of IS NOT NULL AND c.redrive_duplicate = 0)",
    );
    push_filter(q, f)
}

/// Up to `limit` archive matches of `f` after `after`, in id order, every column of the row:
/// only terminal ones among `statuses`.
pub(crate) fn archive_pick(
    f: &OperationFilter,
    statuses: &[&str],
    after: Option<String>,
    limit: u32,
) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new(format!(
        "SELECT {OPERATION_COLUMNS}, o.reconcile_attempts, o.alerted_at, o.alert_due_at, \
         o.alert_failures FROM operations o WHERE o.status IN ('succeeded', 'dead', 'cancelled')"
    ));
    push_in(&mut q, "o.status", statuses)?;
    push_filter(&mut q, f)?;
    if let Some(after) = after {
        q.push(" AND o.id > ").push_bind(after);
    }
    q.push(" ORDER BY o.id LIMIT ").push_bind(i64::from(limit));
    Ok(q)
}

/// The page of operations `p` asks for, in id (creation) order, at most 10,000.
pub(crate) fn list(p: &ListParams) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new(format!(
        "SELECT {OPERATION_COLUMNS} FROM operations o WHERE true"
    ));
    if let Some(status) = p.status {
        q.push(" AND o.status = ").push_bind(status.as_str());
    }
    if let Some(kind) = &p.kind {
        q.push(" AND o.kind = ").push_bind(kind.clone());
    }
    if let Some(class) = p.failure_class {
        q.push(" AND o.last_failure_class = ")
            .push_bind(class.as_str());
    }
    if let Some(reason) = p.terminal_reason {
        q.push(" AND o.terminal_reason = ")
            .push_bind(reason.as_str());
    }
    if let Some(text) = &p.error_contains {
        push_error_contains(&mut q, text);
    }
    if let Some(t) = p.created_since {
        q.push(" AND o.created_at >= ").push_bind(time::text(t)?);
    }
    if let Some(t) = p.created_until {
        q.push(" AND o.created_at < ").push_bind(time::text(t)?);
    }
    push_filter(&mut q, &p.filter)?;
    // Re-driven as new: hidden from a listing of dead operations unless asked for, as core says.
    match p.redriven_shown() {
        RedrivenShown::Hide => q.push(" AND o.redriven_as IS NULL"),
        RedrivenShown::Only => q.push(" AND o.redriven_as IS NOT NULL"),
        RedrivenShown::Show => &mut q,
    };
    let (after, order) = if p.newest_first {
        (" AND o.id < ", " ORDER BY o.id DESC LIMIT ")
    } else {
        (" AND o.id > ", " ORDER BY o.id LIMIT ")
    };
    if let Some(id) = p.after {
        // Hyphenated lowercase text sorts as the ids do.
        q.push(after).push_bind(uuid_text(id.as_uuid()));
    }
    q.push(order).push_bind(i64::from(p.limit.clamp(1, 10_000)));
    Ok(q)
}

/// See [`OperatorStore::operation_count_matching`](oprec_core::OperatorStore::operation_count_matching).
pub(crate) async fn operation_count_matching(
    store: &SqliteStore,
    params: CountMatchingParams,
) -> Result<BTreeMap<Status, u64>> {
    let mut q = QueryBuilder::new("SELECT o.status, count(*) AS n FROM operations o WHERE true");
    push_filter(&mut q, &params.filter)?;
    q.push(" GROUP BY o.status");
    let rows = q
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok((c.parsed("status")?, c.u64("n")?))
        })
        .collect()
}

/// A re-drive's matches grouped by kind, payload mode, last failure class and terminal reason:
/// the largest group first, then PostgreSQL's order (its NULLs last), for a stable order.
pub(crate) fn redrive_groups(
    f: &OperationFilter,
    include_cancelled: bool,
) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new(
        "SELECT o.kind, o.payload_mode, o.last_failure_class, o.terminal_reason, o.dependency, \
         count(*) AS n, min(o.terminal_at) AS first_ended_at, max(o.terminal_at) AS last_ended_at \
         FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled)?;
    q.push(
        " GROUP BY 1, 2, 3, 4, 5 \
         ORDER BY 6 DESC, 1, 2 NULLS LAST, 3 NULLS LAST, 4 NULLS LAST, 5 NULLS LAST",
    );
    Ok(q)
}

/// A re-drive's matches' distinct last errors per kind, the most frequent first, at most
/// `limit`, each with one example.
pub(crate) fn redrive_errors(
    f: &OperationFilter,
    include_cancelled: bool,
    limit: u32,
) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new(
        "SELECT o.kind, json_extract(o.last_error, '$.summary') AS summary, count(*) AS n, \
         min(o.terminal_at) AS first_ended_at, max(o.terminal_at) AS last_ended_at, \
         min(o.id) AS example FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled)?;
    q.push(" GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT ")
        .push_bind(i64::from(limit));
    Ok(q)
}

/// How many of the filter's matches are not terminal, and so refused by a re-drive.
pub(crate) fn redrive_not_terminal(f: &OperationFilter) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new(format!(
        "SELECT count(*) AS n FROM operations o WHERE o.status IN {NOT_TERMINAL}"
    ));
    push_filter(&mut q, f)?;
    Ok(q)
}

/// Up to `limit` of a re-drive's matches, oldest terminal first, with their last error summary.
pub(crate) fn redrive_samples(
    f: &OperationFilter,
    include_cancelled: bool,
    limit: u32,
) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new(
        "SELECT o.id, o.kind, json_extract(o.last_error, '$.summary') AS summary \
         FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled)?;
    q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
        .push_bind(i64::from(limit));
    Ok(q)
}

/// The ids of up to `params.limit` of a re-drive's matches, oldest terminal first; with
/// `skip_held_back`, only those no control in force at `now` would hold back once re-driven.
pub(crate) fn redrive_pick(params: &RedriveParams, now: &str) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new("SELECT o.id FROM operations o WHERE");
    push_redrivable(&mut q, &params.filter, params.include_cancelled)?;
    if params.skip_held_back {
        // Only those no control in force would hold back once re-driven, as the claim sees them.
        let rule = match params.mode {
            RedriveMode::InPlace { .. } => oprec_core::not_held_back_sql("o", NOW_MARK),
            RedriveMode::AsNew { .. } => oprec_core::not_held_back_copy_sql("o", NOW_MARK),
        };
        let (before, after) = rule.split_once(NOW_MARK).unwrap_or((&rule, ""));
        q.push(" AND ")
            .push(before)
            .push_bind(now.to_owned())
            .push(after);
    }
    q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
        .push_bind(i64::from(params.limit));
    Ok(q)
}

/// Applies `ending` at `now` to up to `limit` pending matches of `f`, in id order: status and
/// terminal reason from the ending, `last_error` patched by its [`ErrorPatch`] rule (the
/// summary kept, or the default when there was no error; decision and next action replaced;
/// every other key kept: json_insert and json_set change only the keys they name).
///
/// [`ErrorPatch`]: oprec_core::ErrorPatch
pub(crate) fn quarantine(
    f: &OperationFilter,
    ending: &Ending,
    now: &str,
    limit: u32,
) -> Result<QueryBuilder<Sqlite>> {
    let mut q = QueryBuilder::new("UPDATE operations SET status = ");
    q.push_bind(ending.status.as_str())
        .push(", terminal_reason = ")
        .push_bind(ending.terminal_reason.map(|r| r.as_str()))
        .push(", terminal_at = ")
        .push_bind(ending.status.is_terminal().then(|| now.to_owned()))
        .push(", last_error = json_set(json_insert(coalesce(last_error, '{}'), '$.summary', ")
        .push_bind(ending.patch.default_summary.clone())
        .push("), '$.decision', ")
        .push_bind(ending.patch.decision.clone())
        .push(", '$.next_action', ")
        .push_bind(ending.patch.next_action.clone())
        .push("), updated_at = ")
        .push_bind(now.to_owned())
        .push(" WHERE id IN (SELECT o.id FROM operations o WHERE o.status = 'pending'");
    push_filter(&mut q, f)?;
    q.push(" ORDER BY o.id LIMIT ")
        .push_bind(i64::from(limit))
        .push(")");
    Ok(q)
}

/// Returns up to `limit` held matches of `f`, in id order, to pending, eligible at `now` and
/// due for a wake-up at once.
pub(crate) fn release(f: &OperationFilter, now: &str, limit: u32) -> Result<QueryBuilder<Sqlite>> {
    // Times are stored in one fixed-width format, so max() of the texts is the later time.
    let mut q = QueryBuilder::new(
        "UPDATE operations SET status = 'pending', next_eligible_at = max(next_eligible_at, ",
    );
    q.push_bind(now.to_owned())
        .push(")")
        .push(", last_woken_at = NULL, updated_at = ")
        .push_bind(now.to_owned())
        .push(" WHERE id IN (SELECT o.id FROM operations o WHERE o.status = 'held'");
    push_filter(&mut q, f)?;
    q.push(" ORDER BY o.id LIMIT ")
        .push_bind(i64::from(limit))
        .push(")");
    Ok(q)
}
