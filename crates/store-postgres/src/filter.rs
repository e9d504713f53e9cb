//! Statements whose shape depends on the caller's filters: an operator's [`OperationFilter`] and
//! the listing's [`ListParams`] become SQL conditions with every value a bind parameter (lists as
//! one array each, `= ANY($n)`), and text searches are literal (`strpos`, not `LIKE`).

use std::collections::BTreeMap;

use oprec_core::operator::{CountMatchingParams, OperationFilter};
use oprec_core::store::ListParams;
use oprec_core::{Result, Status};
use sqlx::{Postgres, QueryBuilder};

use crate::row::{self, Columns};
use crate::{PgStore, backend_error};

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
    q.push(" AND strpos(lower(o.last_error->>'summary'), lower(")
        .push_bind(text)
        .push(")) > 0");
}

/// The listing: every filter narrows, ids page the result (oldest or newest first), and the
/// page size is capped at [`LIST_LIMIT_MAX`]. Walks the primary key in id order, or
/// operations_status_kind when a status narrows it.
pub(crate) fn list_query(p: ListParams) -> QueryBuilder<Postgres> {
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
    let (after, order) = if p.newest_first {
        (" AND o.id < ", " ORDER BY o.id DESC LIMIT ")
    } else {
        (" AND o.id > ", " ORDER BY o.id LIMIT ")
    };
    if let Some(id) = p.after {
        q.push(after).push_bind(*id.as_uuid());
    }
    q.push(order)
        .push_bind(i64::from(p.limit.clamp(1, LIST_LIMIT_MAX)));
    q
}

/// How many operations match the filter, per status (statuses with none left out).
pub(crate) async fn operation_count_matching(
    store: &PgStore,
    params: CountMatchingParams,
) -> Result<BTreeMap<Status, u64>> {
    let mut q =
        QueryBuilder::new("SELECT o.status, count(*) AS count FROM operations o WHERE true");
    push_conditions(&mut q, &params.filter);
    q.push(" GROUP BY o.status");
    let rows = q
        .build()
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok((c.parsed("status")?, c.big_count("count")?))
        })
        .collect()
}
