//! The filter flags that re-drive, quarantine and release share: which operations an action
//! touches. Every value is checked here (a class or id that cannot exist is bad input, exit 2)
//! and reaches SQL only as a bind parameter, inside an [`OperationFilter`].

use clap::Args;
use oprec::operator::OperationFilter;
use oprec::{FailureClass, OperationId};

use crate::exit::BadInput;

/// The most `--id` values one command takes.
const MAX_IDS: usize = 10_000;
/// The most `--kind` values one command takes.
const MAX_KINDS: usize = 100;
/// The longest kind or dependency name accepted.
const MAX_NAME: usize = 200;
/// The longest `--error-contains` text accepted: error summaries are short sentences.
pub(crate) const MAX_SEARCH: usize = 1_000;

/// `--kind`, `--class`, `--error-contains`, `--dependency`, `--id` and `--limit`.
#[derive(Debug, Default, Args)]
pub(crate) struct FilterArgs {
    /// Only operations of this kind (repeatable).
    #[arg(long = "kind", value_name = "KIND", help_heading = "Filters")]
    pub kinds: Vec<String>,
    /// Only operations whose last failure had this class (repeatable): transient, rate_limited,
    /// backpressure, permanent, configuration, unknown.
    #[arg(long = "class", value_name = "CLASS", help_heading = "Filters")]
    pub classes: Vec<String>,
    /// Only operations whose last error summary contains this text (case-insensitive; taken
    /// literally, `%` and `_` included).
    #[arg(long, value_name = "TEXT", help_heading = "Filters")]
    pub error_contains: Option<String>,
    /// Only operations that call this dependency.
    #[arg(long, value_name = "NAME", help_heading = "Filters")]
    pub dependency: Option<String>,
    /// Only this operation (repeatable).
    #[arg(long = "id", value_name = "ID", help_heading = "Filters")]
    pub ids: Vec<String>,
    /// At most N operations in all.
    #[arg(long, value_name = "N", help_heading = "Filters")]
    pub limit: Option<u64>,
}

impl FilterArgs {
    /// The filter, every value checked.
    pub(crate) fn filter(&self) -> Result<OperationFilter, BadInput> {
        if self.kinds.len() > MAX_KINDS {
            return Err(BadInput(format!("at most {MAX_KINDS} --kind values")));
        }
        if self.ids.len() > MAX_IDS {
            return Err(BadInput(format!(
                "at most {MAX_IDS} --id values; narrow by --kind, --class or --error-contains instead"
            )));
        }
        let kinds = self
            .kinds
            .iter()
            .map(|k| name("--kind", k))
            .collect::<Result<_, _>>()?;
        let mut classes: Vec<FailureClass> = self
            .classes
            .iter()
            .map(|c| class("--class", c))
            .collect::<Result<_, _>>()?;
        classes.dedup();
        let ids = self
            .ids
            .iter()
            .map(|i| id("--id", i))
            .collect::<Result<_, _>>()?;
        let error_contains = self.error_contains.as_deref().map(search).transpose()?;
        let dependency = self
            .dependency
            .as_deref()
            .map(|d| name("--dependency", d))
            .transpose()?;
        Ok(OperationFilter {
            ids,
            kinds,
            classes,
            dependency,
            error_contains,
            ..OperationFilter::default()
        })
    }

    /// `--limit`, when given; zero is refused.
    pub(crate) fn limit(&self) -> Result<Option<u64>, BadInput> {
        match self.limit {
            Some(0) => Err(BadInput("--limit must be at least 1".into())),
            other => Ok(other),
        }
    }
}

/// Whether `f` narrows anything (an empty filter matches every operation).
pub(crate) fn narrows(f: &OperationFilter) -> bool {
    f != &OperationFilter::default()
}

/// A failure class named by `flag`.
pub(crate) fn class(flag: &str, text: &str) -> Result<FailureClass, BadInput> {
    text.trim()
        .parse()
        .map_err(|e| BadInput(format!("{flag}: {e}")))
}

/// An operation id named by `flag`.
pub(crate) fn id(flag: &str, text: &str) -> Result<OperationId, BadInput> {
    text.trim().parse().map_err(|_| {
        BadInput(format!(
            "{flag} {:?} is not an operation id (a UUID such as \
             0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a)",
            cut(text)
        ))
    })
}

/// A kind or dependency name: not blank, not absurdly long, no control characters.
pub(crate) fn name(flag: &str, text: &str) -> Result<String, BadInput> {
    let t = text.trim();
    if t.is_empty() {
        return Err(BadInput(format!("{flag} must not be empty")));
    }
    if t.chars().count() > MAX_NAME {
        return Err(BadInput(format!(
            "{flag} is longer than {MAX_NAME} characters; no kind or dependency is named like that"
        )));
    }
    if t.chars().any(char::is_control) {
        return Err(BadInput(format!(
            "{flag} {:?} contains control characters",
            cut(t)
        )));
    }
    Ok(t.to_owned())
}

/// `--error-contains`: any text (it is bound, never spliced into SQL), but not empty and not
/// longer than [`MAX_SEARCH`].
fn search(text: &str) -> Result<String, BadInput> {
    if text.is_empty() {
        return Err(BadInput("--error-contains must not be empty".into()));
    }
    let n = text.chars().count();
    if n > MAX_SEARCH {
        return Err(BadInput(format!(
            "--error-contains is {n} characters long; error summaries are short sentences, so \
             give at most {MAX_SEARCH}"
        )));
    }
    Ok(text.to_owned())
}

/// A value cut for quoting in a message.
fn cut(text: &str) -> String {
    crate::output::cut(text, 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_a_checked_filter() {
        let args = FilterArgs {
            kinds: vec!["demo.flaky".into()],
            classes: vec!["transient".into(), "transient".into()],
            error_contains: Some("'; DROP TABLE operations; --".into()),
            ids: vec!["0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a".into()],
            ..FilterArgs::default()
        };
        let f = args.filter().unwrap();
        assert_eq!(f.classes, vec![FailureClass::Transient]);
        assert_eq!(f.ids.len(), 1);
        assert!(narrows(&f));
        assert!(!narrows(&FilterArgs::default().filter().unwrap()));
    }

    #[test]
    fn bad_values_are_refused() {
        let with = |f: fn(&mut FilterArgs)| {
            let mut a = FilterArgs::default();
            f(&mut a);
            a.filter().unwrap_err().0
        };
        assert!(with(|a| a.classes = vec!["flaky".into()]).contains("unknown failure class"));
        assert!(with(|a| a.ids = vec!["42".into()]).contains("not an operation id"));
        assert!(with(|a| a.error_contains = Some("x".repeat(MAX_SEARCH + 1))).contains("at most"));
        assert!(with(|a| a.kinds = vec![" ".into()]).contains("empty"));
        assert!(
            FilterArgs {
                limit: Some(0),
                ..FilterArgs::default()
            }
            .limit()
            .is_err()
        );
    }
}
