//! Turning what a person typed into filters: every field checked, and a bad one answered with a
//! sentence that says what is accepted. Values reach SQL only as bind parameters (the stores'
//! job); here they are only checked for shape and size.

use std::collections::HashMap;

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use maud::{Markup, html};
use oprec_core::operator::OperationFilter;
use oprec_core::{FailureClass, OperationId, Status, TerminalReason};
use serde::Deserialize;

use crate::error::AppError;
use crate::query_string::query;

/// A since/until pair, either end open.
pub(crate) type TimeRange = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// The longest name or search text accepted.
const MAX_TEXT: usize = 200;

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
    pub after: String,
    pub limit: String,
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
            after: String::new(),
            limit: String::new(),
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

    pub fn kind(&self) -> Result<Option<String>, AppError> {
        name("kind", &self.kind)
    }

    pub fn dependency(&self) -> Result<Option<String>, AppError> {
        name("dependency", &self.dependency)
    }

    pub fn status(&self) -> Result<Option<Status>, AppError> {
        parse_enum("status", &self.status)
    }

    pub fn class(&self) -> Result<Option<FailureClass>, AppError> {
        parse_enum("failure class", &self.class)
    }

    pub fn reason(&self) -> Result<Option<TerminalReason>, AppError> {
        parse_enum("terminal reason", &self.reason)
    }

    pub fn error_text(&self) -> Result<Option<String>, AppError> {
        let t = self.error.trim();
        if t.is_empty() {
            return Ok(None);
        }
        if t.chars().count() > MAX_TEXT {
            return Err(AppError::bad_request(format!(
                "The error text to search for is longer than {MAX_TEXT} characters; search for \
                 a shorter part of the message."
            )));
        }
        Ok(Some(t.to_owned()))
    }

    pub fn id(&self) -> Result<Option<OperationId>, AppError> {
        opt_id("id", &self.id)
    }

    pub fn after(&self) -> Result<Option<OperationId>, AppError> {
        opt_id("after", &self.after)
    }

    /// The since/until pair, checked to be in order.
    pub fn range(&self, now: DateTime<Utc>) -> Result<TimeRange, AppError> {
        let since = moment("since", &self.since, now)?;
        let until = moment("until", &self.until, now)?;
        if let (Some(s), Some(u)) = (since, until)
            && s >= u
        {
            return Err(AppError::bad_request(
                "“Since” is not before “until”, so nothing could match; widen the time range.",
            ));
        }
        Ok((since, until))
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

    /// The operator-action filter: kind, class, reason, error text, dependency, id, and the
    /// terminal time range.
    pub fn operation_filter(&self, now: DateTime<Utc>) -> Result<OperationFilter, AppError> {
        let (since, until) = self.range(now)?;
        Ok(OperationFilter {
            ids: self.id()?.into_iter().collect(),
            kinds: self.kind()?.into_iter().collect(),
            classes: self.class()?.into_iter().collect(),
            reasons: self.reason()?.into_iter().collect(),
            dependency: self.dependency()?,
            error_contains: self.error_text()?,
            terminal_since: since,
            terminal_until: until,
        })
    }
}

fn name(what: &str, v: &str) -> Result<Option<String>, AppError> {
    let t = v.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if t.chars().count() > MAX_TEXT || t.chars().any(char::is_control) {
        return Err(AppError::bad_request(format!(
            "The {what} must be at most {MAX_TEXT} printable characters."
        )));
    }
    Ok(Some(t.to_owned()))
}

fn parse_enum<T>(what: &str, v: &str) -> Result<Option<T>, AppError>
where
    T: std::str::FromStr<Err = oprec_core::ParseEnumError>,
{
    let t = v.trim();
    if t.is_empty() {
        return Ok(None);
    }
    t.parse()
        .map(Some)
        .map_err(|e: oprec_core::ParseEnumError| {
            AppError::bad_request(format!(
                "“{}” is not a {what}; use one of: {}.",
                e.value, e.expected
            ))
        })
}

fn opt_id(what: &str, v: &str) -> Result<Option<OperationId>, AppError> {
    let t = v.trim();
    if t.is_empty() {
        return Ok(None);
    }
    t.parse().map(Some).map_err(|_| {
        AppError::bad_request(format!(
            "The {what} value is not an operation id (a UUID such as \
             0190c3e4-8a7b-7c3d-9e2f-0123456789ab)."
        ))
    })
}

/// A point in time: RFC 3339, `YYYY-MM-DDTHH:MM` (as a date-time input sends it; UTC), or a
/// duration ago such as `90s`, `30m`, `2h`, `7d`.
pub(crate) fn moment(
    what: &str,
    v: &str,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, AppError> {
    let t = v.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Ok(Some(d.with_timezone(&Utc)));
    }
    for f in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(n) = NaiveDateTime::parse_from_str(t, f) {
            return Ok(Some(n.and_utc()));
        }
    }
    if let Some(d) = duration(t) {
        return Ok(Some(now - d));
    }
    Err(AppError::bad_request(format!(
        "“{what}” must be a time (2026-01-05T09:00, UTC, or RFC 3339) or a duration ago \
         (90s, 30m, 2h, 7d)."
    )))
}

/// `90s`, `30m`, `2h`, `7d` (whole numbers, at most ten years).
pub(crate) fn duration(t: &str) -> Option<Duration> {
    let split = t.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = t.split_at(split);
    let n: i64 = n.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        "d" => n.checked_mul(86400)?,
        _ => return None,
    };
    (secs <= 10 * 365 * 86400).then(|| Duration::seconds(secs))
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
    fn times_are_absolute_or_ago() {
        assert_eq!(
            moment("since", "2h", now()).unwrap(),
            Some(now() - Duration::hours(2))
        );
        assert_eq!(
            moment("since", "2026-01-04T08:30", now()).unwrap(),
            Some(Utc.with_ymd_and_hms(2026, 1, 4, 8, 30, 0).unwrap())
        );
        assert!(moment("since", "yesterday", now()).is_err());
        let f = FilterForm {
            since: "1h".into(),
            until: "2h".into(),
            ..Default::default()
        };
        assert!(f.range(now()).is_err(), "since after until");
    }
}
