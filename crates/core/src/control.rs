//! Pauses and postponements: a control names a kind, a last failure class or a dependency and
//! holds back claims and wake-ups of the operations it matches, nothing else, until it is removed
//! or its `until` passes.
//!
//! The matching rule is defined once, here: [`Control::holds_back`] in Rust, and
//! [`ControlScope::matches_sql`] (with [`not_held_back_sql`] built on it), generated from the same
//! scope-to-column table, as the condition every store's claim, wake-up, work-exists and
//! wake-reset statements splice in.
//!
//! A dependency control covers the operations of kinds that call the dependency (the
//! `dependency` column) and the operations whose last failure named it
//! ([`Failure::about_dependency`](crate::Failure::about_dependency), kept in `last_error`): a
//! validation failure caused by an incomplete catalogue belongs to the catalogue.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::Operation;
use crate::status::named_enum;

named_enum! {
    /// What a control applies to.
    ControlScope, "control scope" {
        /// Operations of one kind.
        Kind => "kind",
        /// Operations whose last failure has one class.
        FailureClass => "failure_class",
        /// Operations that call one dependency.
        Dependency => "dependency",
    }
}

impl ControlScope {
    /// The `operations` column a control of this scope compares its value with.
    pub const fn operation_column(self) -> &'static str {
        match self {
            ControlScope::Kind => "kind",
            ControlScope::FailureClass => "last_failure_class",
            ControlScope::Dependency => "dependency",
        }
    }

    /// The operation's value in this scope's column, as stored.
    pub fn value_of(self, op: &Operation) -> Option<&str> {
        match self {
            ControlScope::Kind => Some(op.kind.as_str()),
            ControlScope::FailureClass => op.last_failure_class.map(|c| c.as_str()),
            ControlScope::Dependency => op.dependency.as_deref(),
        }
    }

    /// Whether a control of this scope with `value` covers `op`: its column holds the value, or,
    /// for a dependency, its last failure named it.
    pub fn covers(self, op: &Operation, value: &str) -> bool {
        self.value_of(op) == Some(value)
            || (self == ControlScope::Dependency
                && op.last_error.as_ref().and_then(|e| e.dependency.as_deref()) == Some(value))
    }

    /// The SQL condition that a control of this scope with the value `value` (an SQL expression:
    /// a bind parameter, `c.value`) covers the `operations` row named `row`, as
    /// [`ControlScope::covers`] says; plain SQL that PostgreSQL (`last_error` is `jsonb`) and
    /// SQLite (JSON text) both read.
    pub fn matches_sql(self, row: &str, value: &str) -> String {
        let column = format!("{value} = {row}.{}", self.operation_column());
        match self {
            ControlScope::Dependency => {
                format!("({column} OR {value} = ({row}.last_error ->> 'dependency'))")
            }
            ControlScope::Kind | ControlScope::FailureClass => column,
        }
    }
}

named_enum! {
    /// What a control does. Both stop claims and wake-ups of the matching operations; nothing else.
    ControlAction, "control action" {
        /// Stopped until resumed (or until `until`).
        Pause => "pause",
        /// Stopped until a stated time.
        Postpone => "postpone",
    }
}

/// A pause or postponement in force (or expired, when listed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Control {
    /// What it applies to.
    pub scope: ControlScope,
    /// The kind, class or dependency name.
    pub value: String,
    /// Pause or postpone.
    pub action: ControlAction,
    /// When it lapses by itself, if ever.
    pub until: Option<DateTime<Utc>>,
    /// Why.
    pub reason: Option<String>,
    /// Who set it.
    pub actor: String,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

impl Control {
    /// Whether the control is in force at `now`: no `until`, or an `until` still ahead.
    pub fn in_force(&self, now: DateTime<Utc>) -> bool {
        self.until.is_none_or(|u| u > now)
    }

    /// Whether the control holds `op` back at `now`.
    pub fn holds_back(&self, op: &Operation, now: DateTime<Utc>) -> bool {
        self.in_force(now) && self.scope.covers(op, &self.value)
    }
}

/// The SQL condition that no control in force at `now` holds back the `operations` row named
/// `row`: plain SQL that PostgreSQL and SQLite both read, with `now` the caller's expression for
/// the time (a bind parameter, or `coalesce($1::timestamptz, now())`). With no controls at all
/// (the usual case) the first arm decides once per statement, not once per row.
pub fn not_held_back_sql(row: &str, now: &str) -> String {
    let matches: Vec<String> = ControlScope::ALL
        .iter()
        .map(|s| {
            format!(
                "(c.scope = '{}' AND {})",
                s.as_str(),
                s.matches_sql(row, "c.value")
            )
        })
        .collect();
    none_in_force(&matches, now)
}

/// The SQL condition that no control in force at `now` would hold back a copy of the
/// `operations` row named `row` re-driven as new: the copy has the row's kind and dependency but
/// no failure yet, so only kind and dependency controls (by the `dependency` column) reach it.
pub fn not_held_back_copy_sql(row: &str, now: &str) -> String {
    let matches: Vec<String> = [ControlScope::Kind, ControlScope::Dependency]
        .iter()
        .map(|s| {
            format!(
                "(c.scope = '{}' AND c.value = {row}.{})",
                s.as_str(),
                s.operation_column()
            )
        })
        .collect();
    none_in_force(&matches, now)
}

/// `NOT EXISTS` a control in force at `now` that one of `matches` (conditions on `c`) names.
fn none_in_force(matches: &[String], now: &str) -> String {
    format!(
        "(NOT EXISTS (SELECT 1 FROM controls) OR NOT EXISTS (SELECT 1 FROM controls c \
         WHERE (c.until IS NULL OR c.until > {now}) AND ({})))",
        matches.join(" OR ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sql_names_every_scope_and_its_column() {
        let sql = not_held_back_sql("o", "?1");
        for s in ControlScope::ALL {
            assert!(sql.contains(&format!(
                "c.scope = '{}' AND {}",
                s.as_str(),
                s.matches_sql("o", "c.value")
            )));
        }
        assert!(sql.contains("c.until > ?1"));
        assert!(sql.contains("c.value = (o.last_error ->> 'dependency')"));
    }

    #[test]
    fn a_dependency_control_covers_a_failure_that_names_it() {
        use crate::OperationError;
        let now = chrono::Utc::now();
        let mut op: Operation = serde_json::from_value(serde_json::json!({
            "id": crate::OperationId::new(),
            "kind": "k",
            "payload": {},
            "status": "pending",
            "attempt": 1,
            "next_eligible_at": now,
            "enqueue_params": {},
            "redrive_count": 0,
            "vanished_streak": 0,
            "created_at": now,
            "updated_at": now,
        }))
        .unwrap();
        op.dependency = Some("shipping".to_owned());
        let control = |value: &str| Control {
            scope: ControlScope::Dependency,
            value: value.to_owned(),
            action: ControlAction::Pause,
            until: None,
            reason: None,
            actor: "t".to_owned(),
            created_at: now,
        };
        assert!(control("shipping").holds_back(&op, now));
        assert!(!control("catalogue").holds_back(&op, now));
        op.last_error = Some(OperationError::new("incomplete").dependency("catalogue"));
        assert!(control("catalogue").holds_back(&op, now));
        assert!(
            control("shipping").holds_back(&op, now),
            "the kind's own still"
        );
    }
}
