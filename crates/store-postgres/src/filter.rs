//! Statements whose shape depends on the caller's filters: an operator's [`OperationFilter`] and
//! the listing's [`ListParams`] become SQL conditions with every value a bind parameter (lists as
//! one array each, `= ANY($n)`), and text searches are literal (`strpos`, not `LIKE`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use oprec_core::operator::{CountMatchingParams, OperationFilter, RedriveMode, RedriveParams};
use oprec_core::store::{ListParams, RedrivenShown};
use oprec_core::{Ending, OperationId, Result, Status};
use sqlx::{Postgres, QueryBuilder};

use crate::row::{self, Columns};
use crate::{PgStore, backend_error};

/// Where the time goes in core's pause rule, spliced with a bind parameter (the rule names it once).
const NOW_MARK: &str = "/*now*/";

/// The most rows one listing returns, whatever the caller asks.
const LIST_LIMIT_MAX: u32 = 10_000;

/// Appends `AND ...` for every narrowing field of `f`, on the `operations` row aliased `o`.
pub(crate) fn push_conditions(q: &mut QueryBuilder<Postgres>, f: &OperationFilter) {
    if !f.ids.is_empty() {
        q.push(" AND o.id = ANY(")
            .push_bind(row::uuids(&f.ids))
            .push(")");
    }
    if !f.kinds.is_empty() {
        q.push(" AND o.kind = ANY(")
            .push_bind(f.kinds.clone())
            .push(")");
    }
    if !f.classes.is_empty() {
        let v: Vec<&'static str> = f.classes.iter().map(|c| c.as_str()).collect();
        q.push(" AND o.last_failure_class = ANY(")
            .push_bind(v)
            .push(")");
    }
    if !f.reasons.is_empty() {
        let v: Vec<&'static str> = f.reasons.iter().map(|r| r.as_str()).collect();
        q.push(" AND o.terminal_reason = ANY(")
            .push_bind(v)
            .push(")");
    }
    if let Some(d) = &f.dependency {
        // The kind's dependency, or the one its last failure named, as a control's rule says.
        q.push(" AND (o.dependency = ")
            .push_bind(d.clone())
            .push(" OR (o.last_error ->> 'dependency') = ")
            .push_bind(d.clone())
            .push(")");
    }
    if let Some(text) = &f.error_contains {
        push_error_contains(q, text.clone());
    }
    if let Some(t) = f.terminal_since {
        q.push(" AND o.terminal_at >= ").push_bind(t);
    }
    if let Some(t) = f.terminal_until {
        q.push(" AND o.terminal_at < ").push_bind(t);
    }
}

/// Appends the condition that the last error's summary contains `text`, case-insensitively and
/// literally: `strpos`, not `LIKE`, so `%` and `_` are only characters.
fn push_error_contains(q: &mut QueryBuilder<Postgres>, text: String) {
    // Stated, so that the planner may walk `operations_errored` (the rows that failed) instead of
    // every row; the text condition implies it.
    q.push(" AND o.last_error IS NOT NULL AND strpos(lower(o.last_error->>'summary'), lower(")
        .push_bind(text)
        .push(")) > 0");
}

/// The listing: every filter narrows, ids page the result (oldest or newest first), and the
/// page size is capped at [`LIST_LIMIT_MAX`]. Which index serves it is read.rs's choice
/// (`operation_list`). With `among`, only those ids, in id order and unlimited: the caller cuts
/// the page. With `within`, only ids in that closed range (the creation-time range's bounds, from
/// `creation_slots`): the primary key is walked between them.
pub(crate) fn list(
    p: ListParams,
    among: Option<&[uuid::Uuid]>,
    within: Option<IdBounds>,
) -> QueryBuilder<Postgres> {
    let redriven = p.redriven_shown();
    let limit = list_limit(&p);
    let mut q = QueryBuilder::new("SELECT o.* FROM operations o WHERE true");
    if let Some(status) = p.status {
        q.push(" AND o.status = ").push_bind(status.as_str());
    }
    if let Some(kind) = p.kind {
        q.push(" AND o.kind = ").push_bind(kind);
    }
    if let Some(class) = p.failure_class {
        q.push(" AND o.last_failure_class = ")
            .push_bind(class.as_str());
    }
    if let Some(reason) = p.terminal_reason {
        q.push(" AND o.terminal_reason = ")
            .push_bind(reason.as_str());
    }
    if let Some(text) = p.error_contains {
        push_error_contains(&mut q, text);
    }
    if let Some(t) = p.created_since {
        q.push(" AND o.created_at >= ").push_bind(t);
    }
    if let Some(t) = p.created_until {
        q.push(" AND o.created_at < ").push_bind(t);
    }
    if let Some(IdBounds { first, last }) = within {
        q.push(" AND o.id BETWEEN ")
            .push_bind(first)
            .push(" AND ")
            .push_bind(last);
    }
    push_conditions(&mut q, &p.filter);
    // Re-driven as new: hidden from a listing of dead operations unless asked for, as core says.
    match redriven {
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
        q.push(after).push_bind(*id.as_uuid());
    }
    if let Some(ids) = among {
        // In the primary key's order, so that with sorts priced out it is read by id.
        q.push(" AND o.id = ANY(")
            .push_bind(ids.to_vec())
            .push(") ORDER BY o.id");
        return q;
    }
    q.push(order).push_bind(i64::from(limit));
    q
}

/// The smallest and the largest id of the operations created in a time range (a superset: every
/// operation created in the range has its id between them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdBounds {
    pub first: uuid::Uuid,
    pub last: uuid::Uuid,
}

/// The page size a listing asks, capped.
pub(crate) fn list_limit(p: &ListParams) -> u32 {
    p.limit.clamp(1, LIST_LIMIT_MAX)
}

/// Appends the condition (with no leading `AND`) that the row aliased `o` is a terminal match of
/// `f` not already re-driven as new.
fn push_redrivable(q: &mut QueryBuilder<Postgres>, f: &OperationFilter, include_cancelled: bool) {
    let mut terminal = vec![Status::Dead.as_str()];
    if include_cancelled {
        terminal.push(Status::Cancelled.as_str());
    }
    // (The literal list says what the bound array cannot: operations_terminal_at, of dead and
    // cancelled rows by finish time, can serve it whatever the plan.)
    q.push(" o.status = ANY(").push_bind(terminal).push(
        ") AND o.status IN ('dead', 'cancelled') AND NOT EXISTS (SELECT 1 FROM operations c \
             WHERE c.redrive_of = o.id AND NOT c.redrive_duplicate)",
    );
    push_conditions(q, f);
}

/// A re-drive's matches grouped by kind, payload mode, last failure class and terminal reason,
/// the largest group first.
pub(crate) fn redrive_groups(
    f: &OperationFilter,
    include_cancelled: bool,
) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new(
        "SELECT o.kind, o.payload_mode, o.last_failure_class, o.terminal_reason, o.dependency,
                count(*) AS count, min(o.terminal_at) AS first_ended_at,
                max(o.terminal_at) AS last_ended_at
         FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled);
    q.push(" GROUP BY 1, 2, 3, 4, 5 ORDER BY 6 DESC, 1");
    q
}

/// A re-drive's matches' distinct last errors per kind, the most frequent first, at most
/// `limit`, each with one example.
pub(crate) fn redrive_errors(
    f: &OperationFilter,
    include_cancelled: bool,
    limit: u32,
) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new(
        "SELECT o.kind, o.last_error->>'summary' AS error, count(*) AS count,
                min(o.terminal_at) AS first_ended_at, max(o.terminal_at) AS last_ended_at,
                min(o.id::text)::uuid AS example
         FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled);
    q.push(" GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT ")
        .push_bind(i64::from(limit));
    q
}

/// How many of the filter's matches are not terminal, and so refused by a re-drive.
pub(crate) fn redrive_not_terminal(f: &OperationFilter) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new(
        "SELECT count(*) FROM operations o
         WHERE o.status IN ('pending', 'running', 'reconciling', 'held')",
    );
    push_conditions(&mut q, f);
    q
}

/// Up to `limit` of a re-drive's matches, oldest terminal first, with their last error summary.
pub(crate) fn redrive_samples(
    f: &OperationFilter,
    include_cancelled: bool,
    limit: u32,
) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new(
        "SELECT o.id, o.kind, o.last_error->>'summary' AS error FROM operations o WHERE",
    );
    push_redrivable(&mut q, f, include_cancelled);
    q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
        .push_bind(i64::from(limit));
    q
}

/// The ids of up to `params.limit` of a re-drive's matches, oldest terminal first, locked (rows
/// another transaction holds are skipped); with `skip_held_back`, only those no control in force
/// at `now` (NULL: the database's clock) would hold back once re-driven.
pub(crate) fn redrive_pick(
    params: &RedriveParams,
    now: Option<DateTime<Utc>>,
) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new("SELECT o.id FROM operations o WHERE");
    push_redrivable(&mut q, &params.filter, params.include_cancelled);
    if params.skip_held_back {
        let rule = match params.mode {
            RedriveMode::InPlace { .. } => oprec_core::not_held_back_sql("o", NOW_MARK),
            RedriveMode::AsNew { .. } => oprec_core::not_held_back_copy_sql("o", NOW_MARK),
        };
        let (before, after) = rule.split_once(NOW_MARK).unwrap_or((&rule, ""));
        q.push(" AND ")
            .push(before)
            .push("coalesce(")
            .push_bind(now)
            .push("::timestamptz, now())")
            .push(after);
    }
    q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
        .push_bind(i64::from(params.limit))
        .push(" FOR UPDATE OF o SKIP LOCKED");
    q
}

/// Up to `limit` archive matches of `f` after `after`, in id order, every column of the row: only
/// those among `statuses` (terminal ones, as the caller chose).
pub(crate) fn archive_pick(
    f: &OperationFilter,
    statuses: Vec<&'static str>,
    after: Option<OperationId>,
    limit: u32,
) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new("SELECT o.* FROM operations o WHERE o.status = ANY(");
    q.push_bind(statuses).push(")");
    push_conditions(&mut q, f);
    if let Some(after) = after {
        q.push(" AND o.id > ").push_bind(*after.as_uuid());
    }
    q.push(" ORDER BY o.id LIMIT ").push_bind(i64::from(limit));
    q
}

/// Starts `WITH now AS (...), picked AS (...)`: up to `limit` operations in `status` that match
/// `filter`, in id order, locked.
fn pick(
    now: Option<DateTime<Utc>>,
    status: Status,
    filter: &OperationFilter,
    limit: u32,
) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new("WITH now AS (SELECT coalesce(");
    q.push_bind(now)
        .push("::timestamptz, now()) AS t), picked AS (SELECT o.id AS pid FROM operations o WHERE o.status = ")
        .push_bind(status.as_str());
    push_conditions(&mut q, filter);
    q.push(" ORDER BY o.id LIMIT ")
        .push_bind(i64::from(limit))
        .push(" FOR UPDATE OF o SKIP LOCKED) ");
    q
}

/// Applies `ending` at the store's time to up to `limit` pending matches of `f`, in id order,
/// skipping locked rows: status and terminal reason from the ending, `last_error` patched by its
/// [`ErrorPatch`](oprec_core::ErrorPatch) rule.
pub(crate) fn quarantine(
    now: Option<DateTime<Utc>>,
    ending: Ending,
    f: &OperationFilter,
    limit: u32,
) -> QueryBuilder<Postgres> {
    let mut q = pick(now, Status::Pending, f, limit);
    q.push("UPDATE operations o SET status = ")
        .push_bind(ending.status.as_str())
        .push(", terminal_reason = ")
        .push_bind(ending.terminal_reason.map(|r| r.as_str()))
        .push(", terminal_at = CASE WHEN ")
        .push_bind(ending.status.is_terminal())
        .push(" THEN now.t END, updated_at = now.t")
        // ErrorPatch's rule, as in rescue_end_past_deadline.sql: the stored summary kept (or the
        // default when there was no error), decision and next action replaced, other keys kept.
        .push(", last_error = jsonb_build_object('summary', ")
        .push_bind(ending.patch.default_summary)
        .push("::text) || coalesce(o.last_error, '{}'::jsonb) || jsonb_build_object('decision', ")
        .push_bind(ending.patch.decision)
        .push("::text, 'next_action', ")
        .push_bind(ending.patch.next_action)
        .push("::text) FROM picked, now WHERE o.id = picked.pid");
    q
}

/// Returns up to `limit` held matches of `f`, in id order, skipping locked rows, to pending:
/// eligible now or at the later time they were already waiting for, and due for a wake-up.
pub(crate) fn release(
    now: Option<DateTime<Utc>>,
    f: &OperationFilter,
    limit: u32,
) -> QueryBuilder<Postgres> {
    let mut q = pick(now, Status::Held, f, limit);
    q.push(
        "UPDATE operations o SET status = 'pending', \
         next_eligible_at = greatest(o.next_eligible_at, now.t), \
         last_woken_at = NULL, updated_at = now.t FROM picked, now WHERE o.id = picked.pid",
    );
    q
}

/// How many operations match the filter, per status (statuses with none left out).
pub(crate) async fn operation_count_matching(
    store: &PgStore,
    params: CountMatchingParams,
) -> Result<BTreeMap<Status, u64>> {
    let f = &params.filter;
    // Narrowed by kind and failure class only (or by nothing): the counts the triggers keep say
    // it exactly, without reading the operations.
    let counted = f.ids.is_empty()
        && f.reasons.is_empty()
        && f.dependency.is_none()
        && f.error_contains.is_none()
        && f.terminal_since.is_none()
        && f.terminal_until.is_none();
    let rows = if counted {
        let classes: Vec<&'static str> = f.classes.iter().map(|c| c.as_str()).collect();
        sqlx::query(crate::sql::COUNT_MATCHING_COUNTED)
            .bind(&f.kinds)
            .bind(classes)
            .fetch_all(&store.pool)
            .await
            .map_err(backend_error)?
    } else {
        let mut q =
            QueryBuilder::new("SELECT o.status, count(*) AS count FROM operations o WHERE true");
        push_conditions(&mut q, f);
        q.push(" GROUP BY o.status");
        q.build()
            .fetch_all(&store.pool)
            .await
            .map_err(backend_error)?
    };
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok((c.parsed("status")?, c.big_count("count")?))
        })
        .collect()
}
