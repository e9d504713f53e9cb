//! Which operations an operator action touches: an [`OperationFilter`] as SQL conditions on the
//! table aliased `o`, every value a bind parameter.
//!
//! Each list of the filter (ids, kinds, classes, reasons) is one bind parameter, a JSON array read
//! back by `json_each`, so that no list, however long, meets SQLite's limit on bind parameters,
//! and ordering and limits still apply to the whole selection (chunking the list would not).

use std::collections::BTreeMap;

use oprec_core::operator::OperationFilter;
use oprec_core::{Result, Status};
use serde::Serialize;
use sqlx::{QueryBuilder, Sqlite};

use crate::row::{Columns, json_text, uuid_text};
use crate::{SqliteStore, backend_error, time};

/// Appends ` AND ...` for every narrowing field of `f`, on the table aliased `o`.
pub(crate) fn push_filter(q: &mut QueryBuilder<Sqlite>, f: &OperationFilter) -> Result<()> {
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
        q.push(" AND o.dependency = ").push_bind(dependency.clone());
    }
    if let Some(text) = &f.error_contains {
        // instr, not LIKE: the operator's text is literal, `%` and `_` included. SQLite's lower()
        // folds ASCII letters only.
        q.push(" AND instr(lower(json_extract(o.last_error, '$.summary')), lower(")
            .push_bind(text.clone())
            .push(")) > 0");
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

/// The statuses a re-drive takes operations from, as an SQL list.
pub(crate) fn terminal_statuses(include_cancelled: bool) -> &'static str {
    if include_cancelled {
        "('dead', 'cancelled')"
    } else {
        "('dead')"
    }
}

/// Appends the condition (with no leading `AND`) that `o` is a terminal match of `f` not already
/// re-driven as new. `NOT IN` over the children rather than a correlated `NOT EXISTS`: SQLite
/// reads the children once instead of once per row (`redrive_of` has no index).
pub(crate) fn push_redrivable(
    q: &mut QueryBuilder<Sqlite>,
    f: &OperationFilter,
    include_cancelled: bool,
) -> Result<()> {
    q.push(" o.status IN ")
        .push(terminal_statuses(include_cancelled))
        .push(
            " AND o.id NOT IN (SELECT c.redrive_of FROM operations c \
             WHERE c.redrive_of IS NOT NULL)",
        );
    push_filter(q, f)
}

impl SqliteStore {
    /// See [`OperatorStore::operation_count_matching`](oprec_core::OperatorStore::operation_count_matching).
    pub(crate) async fn count_matching(
        &self,
        filter: &OperationFilter,
    ) -> Result<BTreeMap<Status, u64>> {
        let mut q: QueryBuilder<Sqlite> =
            QueryBuilder::new("SELECT o.status, count(*) AS n FROM operations o WHERE 1 = 1");
        push_filter(&mut q, filter)?;
        q.push(" GROUP BY o.status");
        let rows = q
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        rows.iter()
            .map(|r| {
                let c = Columns(r);
                Ok((c.parsed("status")?, u64::try_from(c.int("n")?).unwrap_or(0)))
            })
            .collect()
    }
}
