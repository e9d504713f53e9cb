//! `oprec pause`, `oprec resume`, `oprec postpone` and `oprec controls`: stopping claims and
//! wake-ups of one kind, failure class or dependency (nothing else stops), and starting them
//! again. `resume --dependency` also releases the operations held for a configuration failure of
//! that dependency: resuming it says the repair is done.

use clap::Args;
use oprec::operator::{Control, ControlAction};
use oprec::ops::controls::{self as workflow, ControlTarget};
use oprec::ops::{InputError, Spelling};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::duration;
use crate::output::{self, Table, count, cut};

/// What a control applies to: exactly one of `--kind`, `--class`, `--dependency`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct TargetArgs {
    /// Operations of this kind.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Operations whose last failure had this class (transient, rate_limited, backpressure,
    /// permanent, configuration, unknown).
    #[arg(long, value_name = "CLASS")]
    pub class: Option<String>,
    /// Operations that call this dependency.
    #[arg(long, value_name = "NAME")]
    pub dependency: Option<String>,
}

impl TargetArgs {
    fn target(&self) -> Result<ControlTarget, InputError> {
        ControlTarget::parse(
            Spelling::Flags,
            self.kind.as_deref(),
            self.class.as_deref(),
            self.dependency.as_deref(),
        )
    }
}

/// `oprec pause`.
#[derive(Debug, Args)]
pub(crate) struct PauseArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Resume by itself at this time: an RFC 3339 time or a duration from now (`2h`)
    /// [default: until `oprec resume`].
    #[arg(long, value_name = "TIME|DURATION")]
    pub until: Option<String>,
    /// Why, for the audit log and `oprec controls`.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec resume`.
#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Why, for the audit log.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec postpone`.
#[derive(Debug, Args)]
pub(crate) struct PostponeArgs {
    /// The dependency whose operations wait.
    #[arg(long, value_name = "NAME")]
    pub dependency: String,
    /// Until when: an RFC 3339 time or a duration from now (`30m`).
    #[arg(long, value_name = "TIME|DURATION")]
    pub until: String,
    /// Why, for the audit log and `oprec controls`.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub actor: ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec controls`.
#[derive(Debug, Args)]
pub(crate) struct ControlsArgs {
    /// Print the controls as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Sets a control, audits it and prints it.
async fn set(
    global: &Global,
    target: ControlTarget,
    action: ControlAction,
    until: Option<&str>,
    reason: Option<&str>,
    actor: &ActorArgs,
    json: bool,
) -> anyhow::Result<()> {
    let reason = audit_trail::reason("--reason", reason)?;
    let who = actor.who()?;
    let backend = Backend::open(global).await?;
    let store = backend.store.as_ref();
    let now = store.now().await.map_err(store_error)?;
    let until = until
        .map(|u| duration::future("--until", u, now))
        .transpose()?;
    let done = workflow::set(store, &target, action, until, &who, reason.as_deref()).await?;
    audit_trail::check(done.audit_failure)?;
    let warning = done.unknown_kind.as_ref().map(|known| {
        format!(
            "no operation of kind {} exists and no live worker runs it (a typo?); the kinds \
             known here: {}. The control stands: `oprec resume` removes it",
            cut(&target.value, 64),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )
    });
    if let Some(w) = &warning {
        eprintln!("oprec: warning: {w}");
    }
    if json {
        return output::json(&json!({
            "control": done.control,
            "in_scope": done.in_scope,
            "warning": warning,
        }));
    }
    let verb = match action {
        ControlAction::Pause => "paused",
        ControlAction::Postpone => "postponed",
    };
    let when = match until {
        Some(t) => format!(" until {}", output::time(t)),
        None => " until `oprec resume`".to_owned(),
    };
    output::line!(
        "{verb} {}{when}: {} unfinished operations in scope are neither claimed nor woken; \
         nothing else stops",
        target.describe(),
        count(done.in_scope)
    )
}

/// `oprec pause`.
pub(crate) async fn pause(global: &Global, args: PauseArgs) -> anyhow::Result<()> {
    let target = args.target.target()?;
    set(
        global,
        target,
        ControlAction::Pause,
        args.until.as_deref(),
        args.reason.as_deref(),
        &args.actor,
        args.json,
    )
    .await
}

/// `oprec postpone`.
pub(crate) async fn postpone(global: &Global, args: PostponeArgs) -> anyhow::Result<()> {
    let target = ControlTarget::parse(Spelling::Flags, None, None, Some(&args.dependency))?;
    set(
        global,
        target,
        ControlAction::Postpone,
        Some(&args.until),
        args.reason.as_deref(),
        &args.actor,
        args.json,
    )
    .await
}

/// `oprec resume`.
pub(crate) async fn resume(global: &Global, args: ResumeArgs) -> anyhow::Result<()> {
    let target = args.target.target()?;
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let who = args.actor.who()?;
    let backend = Backend::open(global).await?;
    let done = workflow::resume(backend.store.as_ref(), &target, &who, reason.as_deref()).await?;
    audit_trail::check(done.audit_failure)?;
    let (removed, released) = (done.removed, done.released_held);
    if args.json {
        return output::json(&json!({
            "scope": target.scope.as_str(),
            "value": target.value,
            "control_removed": removed,
            "released_held": released,
        }));
    }
    let mut text = if removed {
        format!(
            "resumed {}: its operations are claimed and woken again",
            target.describe()
        )
    } else {
        format!(
            "no pause or postponement on {} was in force",
            target.describe()
        )
    };
    if let Some(n) = released {
        text.push_str(&format!(
            "; released {} held operations whose last failure was a configuration failure \
             (pending again, eligible now)",
            count(n)
        ));
    }
    output::line!("{text}")
}

/// `oprec controls`.
pub(crate) async fn list(global: &Global, args: ControlsArgs) -> anyhow::Result<()> {
    let backend = Backend::open(global).await?;
    let controls = backend.store.control_list().await.map_err(store_error)?;
    if args.json {
        return output::json(&controls);
    }
    if controls.is_empty() {
        return output::line!("no controls in force: nothing is paused or postponed");
    }
    output::human(&render(&controls, chrono::Utc::now()))
}

fn render(controls: &[Control], now: chrono::DateTime<chrono::Utc>) -> String {
    let mut t = Table::new(&["SCOPE", "VALUE", "ACTION", "UNTIL", "BY", "SINCE", "REASON"]);
    for c in controls {
        t.row(vec![
            c.scope.to_string(),
            c.value.clone(),
            c.action.to_string(),
            c.until
                .map(|t| output::when(t, now))
                .unwrap_or_else(|| "resumed by hand".into()),
            c.actor.clone(),
            output::when(c.created_at, now),
            c.reason.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    t.render("")
}
