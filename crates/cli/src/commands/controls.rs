//! `oprec pause`, `oprec resume`, `oprec postpone` and `oprec controls`: stopping claims and
//! wake-ups of one kind, failure class or dependency (nothing else stops), and starting them
//! again. `resume --dependency` also releases the operations held for a configuration failure of
//! that dependency: resuming it says the repair is done.

use clap::Args;
use oprec::operator::{
    AuditEntry, Control, ControlAction, ControlScope, ControlSetParams, OperationFilter,
    ReleaseParams,
};
use oprec::{FailureClass, OperatorStore};
use serde_json::json;

use crate::audit_trail::{self, ActorArgs};
use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::output::{self, Table, count, cut};
use crate::{duration, filter};

/// Held operations released per store call by `resume --dependency`.
const RELEASE_BATCH: u32 = 500;

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

/// A checked target.
struct Target {
    scope: ControlScope,
    value: String,
}

impl TargetArgs {
    fn target(&self) -> anyhow::Result<Target> {
        let (scope, value) = match (&self.kind, &self.class, &self.dependency) {
            (Some(k), None, None) => (ControlScope::Kind, filter::name("--kind", k)?),
            (None, Some(c), None) => (
                ControlScope::FailureClass,
                filter::class("--class", c)?.as_str().to_owned(),
            ),
            (None, None, Some(d)) => (ControlScope::Dependency, filter::name("--dependency", d)?),
            _ => {
                return Err(crate::exit::bad(
                    "give exactly one of --kind, --class or --dependency",
                ));
            }
        };
        Ok(Target { scope, value })
    }
}

impl Target {
    /// The operations it covers, as a filter.
    fn filter(&self) -> OperationFilter {
        let mut f = OperationFilter::default();
        match self.scope {
            ControlScope::Kind => f.kinds = vec![self.value.clone()],
            ControlScope::FailureClass => {
                f.classes = self.value.parse().into_iter().collect();
            }
            ControlScope::Dependency => f.dependency = Some(self.value.clone()),
        }
        f
    }

    /// `class transient`, `kind demo.flaky`, `dependency stripe`.
    fn describe(&self) -> String {
        let what = match self.scope {
            ControlScope::Kind => "kind",
            ControlScope::FailureClass => "class",
            ControlScope::Dependency => "dependency",
        };
        format!("{what} {}", self.value)
    }

    fn json(&self) -> serde_json::Value {
        json!({"scope": self.scope.as_str(), "value": self.value})
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

/// How many unfinished operations a target covers now.
async fn in_scope(store: &dyn OperatorStore, target: &Target) -> anyhow::Result<u64> {
    let counts = store
        .operation_count_matching(&target.filter())
        .await
        .map_err(store_error)?;
    Ok(counts
        .iter()
        .filter(|(s, _)| !s.is_terminal())
        .map(|(_, n)| n)
        .sum())
}

/// Sets a control, audits it and prints it.
#[allow(clippy::too_many_arguments)]
async fn set(
    global: &Global,
    target: Target,
    action: ControlAction,
    until: Option<&str>,
    reason: Option<&str>,
    actor: &ActorArgs,
    json: bool,
) -> anyhow::Result<()> {
    let reason = audit_trail::reason("--reason", reason)?;
    let actor = actor.name()?;
    let backend = Backend::connect(&global.database_url).await?;
    let store = backend.store.as_ref();
    let now = store.now().await.map_err(store_error)?;
    let until = until
        .map(|u| duration::future("--until", u, now))
        .transpose()?;
    let control = store
        .control_set(ControlSetParams {
            scope: target.scope,
            value: target.value.clone(),
            action,
            until,
            reason: reason.clone(),
            actor: actor.clone(),
        })
        .await
        .map_err(store_error)?;
    let affected = in_scope(store, &target).await?;
    audit_trail::record(
        store,
        AuditEntry {
            actor,
            action: action.as_str().to_owned(),
            filter: target.json(),
            affected,
            reason,
            details: json!({"until": until}),
        },
    )
    .await?;
    if json {
        return output::json(&json!({"control": control, "in_scope": affected}));
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
        count(affected)
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
    let target = Target {
        scope: ControlScope::Dependency,
        value: filter::name("--dependency", &args.dependency)?,
    };
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

/// Returns held operations of `dependency` whose last failure was a configuration failure to
/// pending, in batches; returns how many.
async fn release_repaired(store: &dyn OperatorStore, dependency: &str) -> anyhow::Result<u64> {
    let filter = OperationFilter {
        dependency: Some(dependency.to_owned()),
        classes: vec![FailureClass::Configuration],
        ..OperationFilter::default()
    };
    let mut released = 0;
    loop {
        let n = store
            .operation_release(ReleaseParams {
                filter: filter.clone(),
                limit: RELEASE_BATCH,
            })
            .await
            .map_err(store_error)?;
        released += n;
        if n < u64::from(RELEASE_BATCH) {
            return Ok(released);
        }
    }
}

/// `oprec resume`.
pub(crate) async fn resume(global: &Global, args: ResumeArgs) -> anyhow::Result<()> {
    let target = args.target.target()?;
    let reason = audit_trail::reason("--reason", args.reason.as_deref())?;
    let actor = args.actor.name()?;
    let backend = Backend::connect(&global.database_url).await?;
    let store = backend.store.as_ref();
    let removed = store
        .control_remove(target.scope, &target.value)
        .await
        .map_err(store_error)?;
    let released = match target.scope {
        ControlScope::Dependency => Some(release_repaired(store, &target.value).await?),
        _ => None,
    };
    // Resuming what was not paused, with nothing to release, changed nothing: no entry.
    if removed || released.unwrap_or(0) > 0 {
        audit_trail::record(
            store,
            AuditEntry {
                actor,
                action: "resume".to_owned(),
                filter: target.json(),
                affected: released.unwrap_or(0),
                reason,
                details: json!({"control_removed": removed, "released_held": released}),
            },
        )
        .await?;
    }
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
    let backend = Backend::connect(&global.database_url).await?;
    let controls = backend.store.control_list().await.map_err(store_error)?;
    if args.json {
        return output::json(&controls);
    }
    if controls.is_empty() {
        return output::line!("no controls in force: nothing is paused or postponed");
    }
    output::text(&render(&controls))
}

fn render(controls: &[Control]) -> String {
    let mut t = Table::new(&["SCOPE", "VALUE", "ACTION", "UNTIL", "BY", "SINCE", "REASON"]);
    for c in controls {
        t.row(vec![
            c.scope.to_string(),
            c.value.clone(),
            c.action.to_string(),
            c.until
                .map(output::time)
                .unwrap_or_else(|| "resumed by hand".into()),
            c.actor.clone(),
            output::time(c.created_at),
            cut(c.reason.as_deref().unwrap_or("-"), 60),
        ]);
    }
    t.render("")
}
