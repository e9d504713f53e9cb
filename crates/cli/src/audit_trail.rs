//! Who acts and why. Every command that changes operations leaves an audit entry naming the
//! operator (`--actor`, else the login name) and the reason given, so that "who re-drove 50,000
//! payments at 3 a.m., and why" has an answer in the database.

use clap::Args;
use oprec::OperatorStore;
use oprec::operator::AuditEntry;

use crate::backend::store_error;
use crate::exit::BadInput;

/// The longest actor name kept.
const MAX_ACTOR: usize = 200;
/// The longest reason kept.
const MAX_REASON: usize = 2_000;

/// `--actor`, shared by every command that changes something.
#[derive(Debug, Args)]
pub(crate) struct ActorArgs {
    /// Who is acting, for the audit log [default: the login name from $USER or $LOGNAME, else
    /// "unknown"].
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
}

impl ActorArgs {
    /// The operator's name: `--actor`, else the login name, else "unknown".
    pub(crate) fn name(&self) -> Result<String, BadInput> {
        if let Some(given) = &self.actor {
            return text("--actor", given, MAX_ACTOR);
        }
        let login = ["USER", "LOGNAME"]
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .map(|v| v.trim().to_owned())
            .find(|v| !v.is_empty() && v.chars().count() <= MAX_ACTOR);
        Ok(login.unwrap_or_else(|| "unknown".to_owned()))
    }
}

/// Checks a `--reason` (or `--note`): not blank, not too long.
pub(crate) fn reason(flag: &str, given: Option<&str>) -> Result<Option<String>, BadInput> {
    given.map(|r| text(flag, r, MAX_REASON)).transpose()
}

/// `value` trimmed; refused when blank or longer than `max` characters.
fn text(flag: &str, value: &str, max: usize) -> Result<String, BadInput> {
    let value = value.trim();
    if value.is_empty() {
        return Err(BadInput(format!("{flag} must not be empty")));
    }
    let n = value.chars().count();
    if n > max {
        return Err(BadInput(format!(
            "{flag} is {n} characters long; at most {max} are kept"
        )));
    }
    Ok(value.to_owned())
}

/// Writes the audit entry of an action.
pub(crate) async fn record(store: &dyn OperatorStore, entry: AuditEntry) -> anyhow::Result<()> {
    store.audit_insert(entry).await.map_err(store_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_and_reasons_are_checked() {
        let given = ActorArgs {
            actor: Some(" alice ".into()),
        };
        assert_eq!(given.name().unwrap(), "alice");
        assert!(
            ActorArgs {
                actor: Some(" ".into())
            }
            .name()
            .is_err()
        );
        assert!(!ActorArgs { actor: None }.name().unwrap().is_empty());
        assert_eq!(reason("--reason", None).unwrap(), None);
        assert!(reason("--reason", Some("")).is_err());
        assert!(reason("--reason", Some(&"x".repeat(MAX_REASON + 1))).is_err());
    }
}
