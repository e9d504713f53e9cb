//! Which operations an operator action touches, as a person types it: every value checked here
//! (a class, reason or id that cannot exist is refused, with what is accepted) and reaching SQL
//! only as a bind parameter, inside an [`OperationFilter`]. The CLI's flags and the dashboard's
//! form fields go through the same rules and limits.

use chrono::{DateTime, Utc};
use oprec_core::operator::OperationFilter;
use oprec_core::{FailureClass, OperationId, Status, TerminalReason};

use crate::spelling::shown;
use crate::{InputError, Spelling, time};

/// The most ids one action names.
pub const MAX_IDS: usize = 10_000;
/// The most kinds one action names.
pub const MAX_KINDS: usize = 100;
/// The longest kind or dependency name accepted.
pub const MAX_NAME: usize = 200;
/// The longest error text searched for: error summaries are short sentences.
pub const MAX_SEARCH: usize = 1_000;

/// The filter as typed: text, so that nothing a person types is refused before it can be
/// explained. `None` (or no element) is "not given"; a given value that is empty is refused, so a
/// form front end leaves out the fields a person left blank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterInput {
    /// Kinds.
    pub kinds: Vec<String>,
    /// Last failure classes.
    pub classes: Vec<String>,
    /// Terminal reasons.
    pub reasons: Vec<String>,
    /// Text the last error's summary contains.
    pub error_contains: Option<String>,
    /// The dependency.
    pub dependency: Option<String>,
    /// Operation ids.
    pub ids: Vec<String>,
    /// Ended at or after: a time, or a duration ago.
    pub since: Option<String>,
    /// Ended before: a time, or a duration ago.
    pub until: Option<String>,
}

impl FilterInput {
    /// The checked filter; `now` anchors "a duration ago".
    pub fn check(
        &self,
        spelling: Spelling,
        now: DateTime<Utc>,
    ) -> Result<OperationFilter, InputError> {
        let label = |n: &str| spelling.label(n);
        if self.kinds.len() > MAX_KINDS {
            return Err(InputError(format!(
                "at most {MAX_KINDS} {} values",
                label("kind")
            )));
        }
        if self.ids.len() > MAX_IDS {
            return Err(InputError(format!(
                "at most {MAX_IDS} {} values; narrow by kind, class or error text instead",
                label("id")
            )));
        }
        let mut filter = OperationFilter {
            kinds: self
                .kinds
                .iter()
                .map(|k| name(&label("kind"), k))
                .collect::<Result<_, _>>()?,
            ids: dedup(
                self.ids
                    .iter()
                    .map(|i| id(&label("id"), i))
                    .collect::<Result<_, _>>()?,
            ),
            classes: dedup(
                self.classes
                    .iter()
                    .map(|c| class(&label("class"), c))
                    .collect::<Result<_, _>>()?,
            ),
            reasons: dedup(
                self.reasons
                    .iter()
                    .map(|r| reason(&label("reason"), r))
                    .collect::<Result<_, _>>()?,
            ),
            ..OperationFilter::default()
        };
        if let Some(t) = self.error_contains.as_deref() {
            filter.error_contains = Some(search(&label("error-contains"), t)?);
        }
        if let Some(d) = self.dependency.as_deref() {
            filter.dependency = Some(name(&label("dependency"), d)?);
        }
        if let Some(s) = self.since.as_deref() {
            filter.terminal_since = Some(time::ago(&label("since"), s, now)?);
        }
        if let Some(u) = self.until.as_deref() {
            filter.terminal_until = Some(time::ago(&label("until"), u, now)?);
        }
        if let (Some(s), Some(u)) = (filter.terminal_since, filter.terminal_until)
            && s >= u
        {
            return Err(InputError(format!(
                "{} ({}) is not before {} ({}): nothing could match",
                label("since"),
                s.format("%Y-%m-%dT%H:%M:%SZ"),
                label("until"),
                u.format("%Y-%m-%dT%H:%M:%SZ"),
            )));
        }
        Ok(filter)
    }
}

fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Whether `f` narrows anything (an empty filter matches every operation).
pub fn narrows(f: &OperationFilter) -> bool {
    f != &OperationFilter::default()
}

/// Refuses to `action` every `what` operation on an empty filter unless `all` says so: an
/// operator who forgot the filter (or mistyped a variable that held it) would otherwise act on
/// the whole table. A dry run needs no such word; only the change does.
pub fn scope(
    f: &OperationFilter,
    all: bool,
    action: &str,
    what: &str,
    spelling: Spelling,
) -> Result<(), InputError> {
    if all || narrows(f) {
        return Ok(());
    }
    Err(InputError(format!(
        "{action} with no filter would touch every {what} operation: narrow it ({}, {}, {}, {} \
         or {}) or add {} to mean all of them",
        spelling.label("kind"),
        spelling.label("class"),
        spelling.label("error-contains"),
        spelling.label("dependency"),
        spelling.label("id"),
        spelling.label("all")
    )))
}

/// A limit on how many operations an action touches: at least 1 when given.
pub fn limit(label: &str, given: Option<u64>) -> Result<Option<u64>, InputError> {
    match given {
        Some(0) => Err(InputError(format!("{label} must be at least 1"))),
        other => Ok(other),
    }
}

/// A failure class.
pub fn class(label: &str, text: &str) -> Result<FailureClass, InputError> {
    text.trim()
        .parse()
        .map_err(|e| InputError(format!("{label}: {e}")))
}

/// A terminal reason.
pub fn reason(label: &str, text: &str) -> Result<TerminalReason, InputError> {
    text.trim()
        .parse()
        .map_err(|e| InputError(format!("{label}: {e}")))
}

/// A status.
pub fn status(label: &str, text: &str) -> Result<Status, InputError> {
    text.trim()
        .parse()
        .map_err(|e| InputError(format!("{label}: {e}")))
}

/// An operation id.
pub fn id(label: &str, text: &str) -> Result<OperationId, InputError> {
    text.trim().parse().map_err(|_| {
        InputError(format!(
            "{label} {:?} is not an operation id (a UUID such as \
             0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a)",
            shown(text)
        ))
    })
}

/// A kind or dependency name: not blank, not absurdly long, no control characters.
pub fn name(label: &str, text: &str) -> Result<String, InputError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(InputError(format!("{label} must not be empty")));
    }
    if t.chars().count() > MAX_NAME {
        return Err(InputError(format!(
            "{label} is longer than {MAX_NAME} characters; no kind or dependency is named like that"
        )));
    }
    if t.chars().any(char::is_control) {
        return Err(InputError(format!(
            "{label} {:?} contains control characters",
            shown(t)
        )));
    }
    Ok(t.to_owned())
}

/// Text to search error summaries for: any text (it is bound, never spliced into SQL), but not
/// empty and not longer than [`MAX_SEARCH`].
pub fn search(label: &str, text: &str) -> Result<String, InputError> {
    if text.is_empty() {
        return Err(InputError(format!("{label} must not be empty")));
    }
    let n = text.chars().count();
    if n > MAX_SEARCH {
        return Err(InputError(format!(
            "{label} is {n} characters long; error summaries are short sentences, so give at \
             most {MAX_SEARCH}"
        )));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
    }

    #[test]
    fn typed_values_become_a_checked_filter() {
        let input = FilterInput {
            kinds: vec!["demo.flaky".into()],
            classes: vec!["transient".into(), "transient".into()],
            error_contains: Some("'; DROP TABLE operations; --".into()),
            ids: vec!["0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a".into()],
            since: Some("2h".into()),
            ..FilterInput::default()
        };
        let f = input.check(Spelling::Flags, now()).unwrap();
        assert_eq!(f.classes, vec![FailureClass::Transient]);
        assert_eq!(f.ids.len(), 1);
        assert_eq!(f.terminal_since, Some(now() - chrono::Duration::hours(2)));
        assert!(narrows(&f));
        assert!(!narrows(
            &FilterInput::default()
                .check(Spelling::Fields, now())
                .unwrap()
        ));
    }

    #[test]
    fn bad_values_are_refused_in_the_front_ends_words() {
        let with = |f: fn(&mut FilterInput), s: Spelling| {
            let mut a = FilterInput::default();
            f(&mut a);
            a.check(s, now()).unwrap_err().0
        };
        let e = with(|a| a.classes = vec!["flaky".into()], Spelling::Flags);
        assert!(e.starts_with("--class: unknown failure class"), "{e}");
        let e = with(|a| a.classes = vec!["flaky".into()], Spelling::Fields);
        assert!(e.starts_with("class: unknown failure class"), "{e}");
        assert!(
            with(|a| a.ids = vec!["42".into()], Spelling::Flags).contains("not an operation id")
        );
        assert!(
            with(
                |a| a.error_contains = Some("x".repeat(MAX_SEARCH + 1)),
                Spelling::Fields
            )
            .contains("error contains is")
        );
        assert!(
            with(|a| a.kinds = vec![" ".into()], Spelling::Flags).contains("must not be empty")
        );
        assert!(with(|a| a.kinds = vec!["a\u{7}".into()], Spelling::Flags).contains("control"));
        assert!(
            with(
                |a| {
                    a.since = Some("1h".into());
                    a.until = Some("2h".into());
                },
                Spelling::Flags
            )
            .contains("is not before")
        );
        assert!(limit("--limit", Some(0)).is_err());
    }
}
