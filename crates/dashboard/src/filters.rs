//! Turning what a person typed into filters: the form's fields, read by the operator library's
//! grammar (the same as the CLI's flags), every field checked and a bad one answered with a
//! sentence that says what is accepted. Values reach SQL only as bind parameters.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use maud::{Markup, html};
use oprec_core::operator::OperationFilter;
use oprec_core::store::RedrivenShown;
use oprec_core::{OperationId, ParseEnumError, Status};
use oprec_ops::filter::{self, FilterInput};
use oprec_ops::{InputError, Spelling};
use serde::Deserialize;

use crate::error::AppError;
use crate::query_string::query;

/// The filter fields, as typed: every one optional text, so that nothing a person types is
/// refused by the extractor before it can be explained.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FilterForm {
    pub kind: String,
    pub status: String,
    pub class: String,
    pub reason: String,
    pub error: String,
    pub dependency: String,
    pub id: String,
    pub since: String,
    pub until: String,
    /// `on` to take cancelled operations too (re-drive).
    pub cancelled: String,
    pub after: String,
    /// The page just newer than this id (the list's "newer" link).
    pub before: String,
    pub limit: String,
    /// Operations re-driven as new: `hide`, `show` or `only` (blank: hidden when listing dead).
    pub redriven: String,
}

impl FilterForm {
    /// The filter fields of a posted form.
    pub fn from_map(m: &HashMap<String, String>) -> Self {
        let g = |k: &str| m.get(k).cloned().unwrap_or_default();
        FilterForm {
            kind: g("kind"),
            status: g("status"),
            class: g("class"),
            reason: g("reason"),
            error: g("error"),
            dependency: g("dependency"),
            id: g("id"),
            since: g("since"),
            until: g("until"),
            cancelled: g("cancelled"),
            after: String::new(),
            before: String::new(),
            limit: String::new(),
            redriven: g("redriven"),
        }
    }

    /// The fields as a query string (without `after`), for links that keep the filter.
    pub fn query(&self) -> String {
        query(&self.pairs())
    }

    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        vec![
            ("kind", self.kind.trim()),
            ("status", self.status.trim()),
            ("class", self.class.trim()),
            ("reason", self.reason.trim()),
            ("error", self.error.trim()),
            ("dependency", self.dependency.trim()),
            ("id", self.id.trim()),
            ("since", self.since.trim()),
            ("until", self.until.trim()),
            ("cancelled", self.cancelled.trim()),
            ("redriven", self.redriven.trim()),
        ]
    }

    /// Hidden inputs carrying the filter through a confirmation form.
    pub fn hidden_inputs(&self) -> Markup {
        html! {
            @for (k, v) in self.pairs() {
                @if !v.is_empty() {
                    input type="hidden" name=(k) value=(v);
                }
            }
        }
    }

    /// The filter as typed, for the operator library's grammar: a field left blank is not given.
    pub fn input(&self) -> FilterInput {
        let one = |v: &str| {
            let t = v.trim();
            (!t.is_empty()).then(|| t.to_owned())
        };
        FilterInput {
            kinds: one(&self.kind).into_iter().collect(),
            classes: one(&self.class).into_iter().collect(),
            reasons: one(&self.reason).into_iter().collect(),
            error_contains: one(&self.error),
            dependency: one(&self.dependency),
            ids: one(&self.id).into_iter().collect(),
            since: one(&self.since),
            until: one(&self.until),
        }
    }

    /// The operator-action filter (kind, class, reason, error text, dependency, id, and the
    /// terminal time range), by the grammar every front end shares.
    pub fn operation_filter(&self, now: DateTime<Utc>) -> Result<OperationFilter, AppError> {
        Ok(self.input().check(Spelling::Fields, now)?)
    }

    /// Whether cancelled operations are taken too (a re-drive's option).
    pub fn include_cancelled(&self) -> bool {
        matches!(self.cancelled.trim(), "on" | "true" | "1")
    }

    /// The status to list.
    pub fn status(&self) -> Result<Option<Status>, AppError> {
        blank_or(&self.status, |t| filter::status("status", t))
    }

    /// Which operations re-driven as new to list (blank: core's default for the status).
    pub fn redriven(&self) -> Result<Option<RedrivenShown>, AppError> {
        let t = self.redriven.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse()
            .map(Some)
            .map_err(|e: ParseEnumError| AppError::bad_request(format!("redriven: {e}")))
    }

    /// The page to list after (keyset paging).
    pub fn after(&self) -> Result<Option<OperationId>, AppError> {
        blank_or(&self.after, |t| filter::id("after", t))
    }

    /// The page just newer than this operation, if asked.
    pub fn before(&self) -> Result<Option<OperationId>, AppError> {
        blank_or(&self.before, |t| filter::id("before", t))
    }

    /// Page size: 1 to 500, default 50.
    pub fn limit(&self) -> Result<u32, AppError> {
        let t = self.limit.trim();
        if t.is_empty() {
            return Ok(50);
        }
        match t.parse::<u32>() {
            Ok(n @ 1..=500) => Ok(n),
            _ => Err(AppError::bad_request(
                "The page size must be a whole number from 1 to 500.",
            )),
        }
    }
}

/// `None` for a blank field, else the field read by `read`.
fn blank_or<T>(
    v: &str,
    read: impl FnOnce(&str) -> Result<T, InputError>,
) -> Result<Option<T>, AppError> {
    let t = v.trim();
    if t.is_empty() {
        return Ok(None);
    }
    Ok(Some(read(t)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
    }

    #[test]
    fn bad_values_say_what_is_accepted() {
        let f = FilterForm {
            status: "dead' OR 1=1 --".into(),
            ..Default::default()
        };
        let e = f.status().unwrap_err();
        assert_eq!(e.status, 400);
        assert!(e.message.contains("pending"), "{}", e.message);
        let f = FilterForm {
            after: "../../etc/passwd".into(),
            ..Default::default()
        };
        assert!(f.after().unwrap_err().message.contains("UUID"));
        let f = FilterForm {
            limit: "100000".into(),
            ..Default::default()
        };
        assert!(f.limit().is_err());
    }

    #[test]
    fn the_grammar_is_the_cli_s() {
        let f = FilterForm {
            since: "1h30m".into(),
            error: "x".repeat(1000),
            ..Default::default()
        };
        let filter = f.operation_filter(now()).unwrap();
        assert_eq!(
            filter.terminal_since,
            Some(now() - chrono::Duration::minutes(90))
        );
        let f = FilterForm {
            since: "1h".into(),
            until: "2h".into(),
            ..Default::default()
        };
        assert!(
            f.operation_filter(now())
                .unwrap_err()
                .message
                .contains("not before")
        );
    }
}
