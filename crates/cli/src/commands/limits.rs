//! `oprec limit` and `oprec limits`: limits that hold across the fleet. At most N operations of
//! a kind (or calling a dependency) running at once, and at most R attempts started per second,
//! over every worker; work beyond a limit stays pending (its attempt unspent) until there is
//! room.

use clap::Args;
use oprec::ops::limits::{self as workflow, LimitTarget};
use oprec::ops::{InputError, Spelling};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::Backend;
use crate::cli::Global;
use crate::output::{self, Table};

/// What `oprec limit` teaches in `--help`.
pub(crate) const LONG_ABOUT: &str = "\
Set, replace or remove a limit that holds across the fleet, for one kind or one dependency:

  --running N   at most N of its operations running (claimed) at once over every worker
  --rate R      at most R attempts started against it in any one second over every worker

Work beyond a limit is not claimed: it stays pending with its attempt unspent, and is claimed as
soon as there is room (nothing fails, nothing is marked). Every worker's claim enforces it, on
PostgreSQL and SQLite alike; a worker of an earlier release does not, so a limit holds across the
fleet once every worker runs this release. A limit set here reaches running workers within a
second.

  oprec limit --dependency payments-api --rate 50 --reason \"provider quota\"
  oprec limit --kind report.render --running 4
  oprec limit --kind report.render --remove
  oprec limits";

/// What a limit applies to: exactly one of `--kind`, `--dependency`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct LimitTargetArgs {
    /// Operations of this kind.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Operations that call this dependency (their `dependency`).
    #[arg(long, value_name = "NAME")]
    pub dependency: Option<String>,
}

/// `oprec limit`.
#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    #[command(flatten)]
    pub target: LimitTargetArgs,
    /// At most this many running at once over the fleet (1 or more).
    #[arg(long, value_name = "N", conflicts_with = "remove")]
    pub running: Option<u32>,
    /// At most this many attempts started in any one second over the fleet (1 or more).
    #[arg(long, value_name = "PER_SECOND", conflicts_with = "remove")]
    pub rate: Option<u32>,
    /// Remove the limit instead.
    #[arg(long)]
    pub remove: bool,
    /// Why, for the audit log and `oprec limits`.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec limits`.
#[derive(Debug, Args)]
pub(crate) struct LimitsArgs {
    /// Print the limits as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// `oprec limit`.
pub(crate) async fn set(global: &Global, args: LimitArgs) -> anyhow::Result<()> {
    let target = LimitTarget::parse(
        Spelling::Flags,
        args.target.kind.as_deref(),
        args.target.dependency.as_deref(),
    )?;
    if !args.remove && args.running.is_none() && args.rate.is_none() {
        return Err(InputError(
            "give --running N, --rate PER_SECOND (or both), or --remove".into(),
        )
        .into());
    }
    for (flag, v) in [("--running", args.running), ("--rate", args.rate)] {
        if v == Some(0) {
            return Err(InputError(format!(
                "{flag} 0 would stop every {} {}: `oprec pause --{} {}` does that, and says so",
                target.scope, target.value, target.scope, target.value
            ))
            .into());
        }
    }
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    if args.remove {
        let done = workflow::remove(store, &target, &who, reason.as_deref()).await?;
        audit_trail::check(done.audit_failure)?;
        if args.json {
            return output::json(&json!({
                "scope": target.scope.as_str(),
                "value": target.value,
                "removed": done.outcome,
            }));
        }
        return if done.outcome {
            output::line!(
                "removed the limit on {}: its operations are claimed without it",
                target.describe()
            )
        } else {
            output::line!("no limit on {} was set", target.describe())
        };
    }
    let done = workflow::set(
        store,
        &target,
        args.running,
        args.rate,
        &who,
        reason.as_deref(),
    )
    .await?;
    audit_trail::check(done.audit_failure)?;
    if args.json {
        return output::json(&done.outcome);
    }
    output::line!(
        "limited {} to {} across the fleet; work beyond it stays pending until there is room",
        target.describe(),
        workflow::bounds(&done.outcome)
    )
}

/// `oprec limits`.
pub(crate) async fn list(global: &Global, args: LimitsArgs) -> anyhow::Result<()> {
    let backend = Backend::open(global).await?;
    let limits = workflow::list(backend.store.as_ref()).await?;
    if args.json {
        return output::json(&limits);
    }
    if limits.is_empty() {
        return output::line!(
            "no limits: claims take whatever is eligible (`oprec limit` sets one)"
        );
    }
    let now = chrono::Utc::now();
    let mut t = Table::new(&[
        "SCOPE", "VALUE", "LIMIT", "USE NOW", "BY", "SINCE", "REASON",
    ]);
    for u in &limits {
        t.row(vec![
            u.limit.scope.to_string(),
            u.limit.value.clone(),
            workflow::bounds(&u.limit),
            workflow::usage(u),
            u.limit.actor.clone(),
            output::when(u.limit.set_at, now),
            u.limit.reason.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    output::human(&t.render(""))
}
