//! `oprec retention show`: what retention would remove, and when, per kind and status (how many
//! operations are past their retention now, the longest finished, the next removal), read-only.
//! The policy is the fleet's: the one the live maintenance leader published with its leadership
//! (kinds' own ages included); the workers' `--retain-succeeded`, `--retain-cancelled` and
//! `--retention` flags, when given, preview another. `--json` prints the preview as it is.

use clap::{Args, Subcommand};
use oprec::RetentionPolicy;
use oprec::ops::retention::{
    PolicySource, RetentionInput, RetentionPreview, policy, preview, published_policy,
};

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::exit::BadInput;
use crate::output::{self, Table, count};

/// `oprec retention ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum RetentionCommand {
    /// What retention would remove, and when, per kind and status (read-only). Previews the
    /// policy the live maintenance leader applies (kinds' own ages included) unless retention
    /// flags are given.
    Show(ShowArgs),
}

/// The retention flags a worker and the preview share.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct RetentionFlags {
    /// How long succeeded operations are kept after they finished (`off`: until an operator
    /// removes them) [default: 7d].
    #[arg(long, value_name = "DURATION")]
    pub retain_succeeded: Option<String>,
    /// How long cancelled operations are kept after they were cancelled (`off`: until an
    /// operator removes them) [default: 7d].
    #[arg(long, value_name = "DURATION")]
    pub retain_cancelled: Option<String>,
    /// `off` keeps every operation (dead ones are never removed by age either way) [default: on].
    #[arg(long, value_name = "on|off")]
    pub retention: Option<String>,
}

impl RetentionFlags {
    /// Whether any retention flag was given.
    pub(crate) fn given(&self) -> bool {
        self.retain_succeeded.is_some()
            || self.retain_cancelled.is_some()
            || self.retention.is_some()
    }

    /// The policy the flags describe; a bad value is bad input.
    pub(crate) fn policy(&self) -> Result<RetentionPolicy, BadInput> {
        Ok(policy(
            &RetentionInput {
                succeeded: self.retain_succeeded.as_deref(),
                cancelled: self.retain_cancelled.as_deref(),
                retention: self.retention.as_deref(),
            },
            ["--retain-succeeded", "--retain-cancelled", "--retention"],
        )?)
    }
}

/// `oprec retention show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// Another policy to preview (the workers' flags) instead of the leader's.
    #[command(flatten)]
    pub flags: RetentionFlags,
    /// Print the preview as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Prints the preview.
pub(crate) async fn show(global: &Global, args: ShowArgs) -> anyhow::Result<()> {
    let flagged = args.flags.given();
    let policy = args.flags.policy()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let store_err = |e| match e {
        oprec::ops::Error::Store(e) => store_error(e),
        other => other.into(),
    };
    // Flags preview their own policy: the leader's is read only when none is given.
    let (policy, source) = if flagged {
        (policy, PolicySource::Flags)
    } else {
        match published_policy(store).await.map_err(store_err)? {
            Some((holder, published)) => (published, PolicySource::Leader { holder }),
            None => (policy, PolicySource::Defaults),
        }
    };
    let p = preview(store, &policy, source).await.map_err(store_err)?;
    if args.json {
        return output::json(&p);
    }
    output::text(&render(&p, &backend.url))
}

/// An age as the table shows it.
fn age(seconds: Option<i64>) -> String {
    match seconds {
        Some(s) => oprec::ops::time::human_age(chrono::Duration::seconds(s)),
        None => "kept".to_owned(),
    }
}

/// The readable layout.
fn render(p: &RetentionPreview, url: &str) -> String {
    let mut out = format!("oprec retention for {url} at {}\n", output::time(p.at));
    out.push_str(&match &p.source {
        PolicySource::Leader { holder } => {
            format!("policy: the fleet's, as the maintenance leader {holder} applies it\n")
        }
        PolicySource::Flags => "policy: the flags given\n".to_owned(),
        PolicySource::Defaults => "policy: the defaults (no live maintenance leader published \
                                   one; give the workers' flags to preview theirs)\n"
            .to_owned(),
    });
    if p.rows.is_empty() {
        out.push_str("\n  no finished or dead operations\n");
        return out;
    }
    let mut t = Table::new(&[
        "kind",
        "status",
        "operations",
        "keep for",
        "past retention",
        "oldest finished",
        "next removal",
    ]);
    for r in &p.rows {
        t.row(vec![
            r.kind.clone(),
            r.status.to_string(),
            count(r.operations),
            age(r.keep_for_seconds),
            count(r.past_retention),
            r.oldest_finished_at.map(output::time).unwrap_or_default(),
            match (r.next_removal_at, r.keep_for_seconds) {
                (Some(t), _) => output::time(t),
                (None, None) => "never by age".to_owned(),
                (None, Some(_)) => String::new(),
            },
        ]);
    }
    out.push('\n');
    out.push_str(&t.render("  "));
    out.push_str(&format!(
        "\n{} operations past their retention; dead, held and reconciling operations are never \
         removed by age.\n",
        count(p.past_retention)
    ));
    out
}
