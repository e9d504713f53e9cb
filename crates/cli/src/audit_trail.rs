//! `--actor`: who acts, for the audit entry every command that changes operations leaves
//! (written by the operator library, [`oprec::ops`]).

use clap::Args;
use oprec::ops::{InputError, Who};

/// `--actor`, shared by every command that changes something.
#[derive(Debug, Args)]
pub(crate) struct ActorArgs {
    /// Who is acting, for the audit log [default: the login name from $USER or $LOGNAME, else
    /// the system account; refused when none is known].
    #[arg(long, env = "OPREC_ACTOR", value_name = "NAME")]
    pub actor: Option<String>,
}

impl ActorArgs {
    /// The operator: `--actor` (or `OPREC_ACTOR`), else the login name, else the account.
    pub(crate) fn who(&self) -> Result<Who, InputError> {
        match &self.actor {
            Some(given) => Who::named("--actor", given, None),
            None => Who::login("--actor"),
        }
    }
}

/// Checks a `--reason` (or `--note`): not blank, not too long.
pub(crate) fn reason(flag: &str, given: Option<&str>) -> Result<Option<String>, InputError> {
    oprec::ops::reason(flag, given)
}

/// Tells the user when an action was done but its audit entry could not be written.
pub(crate) fn check(audit_failure: Option<oprec::Error>) -> anyhow::Result<()> {
    match audit_failure {
        None => Ok(()),
        Some(e) => Err(anyhow::Error::new(e)
            .context("the action was done, but its audit entry could not be written")),
    }
}
