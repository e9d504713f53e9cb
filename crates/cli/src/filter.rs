//! The filter flags that re-drive, quarantine and release share: which operations an action
//! touches. They are read by the operator library's grammar ([`oprec::ops::filter`]), the same
//! the dashboard uses, and reach SQL only as bind parameters.

use clap::Args;
use oprec::operator::OperationFilter;
use oprec::ops::filter::{self as grammar, FilterInput};
use oprec::ops::{InputError, Spelling};

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
    /// The filter as typed, for the grammar.
    pub(crate) fn input(&self) -> FilterInput {
        FilterInput {
            kinds: self.kinds.clone(),
            classes: self.classes.clone(),
            error_contains: self.error_contains.clone(),
            dependency: self.dependency.clone(),
            ids: self.ids.clone(),
            ..FilterInput::default()
        }
    }

    /// The filter, every value checked.
    pub(crate) fn filter(&self) -> Result<OperationFilter, InputError> {
        self.input().check(Spelling::Flags, chrono::Utc::now())
    }

    /// `--limit`, when given; zero is refused.
    pub(crate) fn limit(&self) -> Result<Option<u64>, InputError> {
        grammar::limit("--limit", self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_a_checked_filter_in_the_flags_words() {
        let args = FilterArgs {
            kinds: vec!["demo.flaky".into()],
            classes: vec!["flaky".into()],
            ..FilterArgs::default()
        };
        assert!(args.filter().unwrap_err().0.starts_with("--class:"));
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
