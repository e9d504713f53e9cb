//! `oprec alerts`: the alert log, newest first: what the fleet told an owner (a promotion to
//! dead, a hold for a configuration failure, a dependency paused by one), to which route, and
//! whether it arrived.

use clap::Args;
use oprec::alert::{AlertEvent, AlertListParams, AlertStatus, check_list_limit};

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::exit::bad;
use crate::output::{self, Table};

/// `oprec alerts`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  oprec alerts                          the newest 50 alerts
  oprec alerts --status failed          alerts no route has accepted yet (retried with back-off)
  oprec alerts --event held --kind mail.send
  oprec alerts --dependency stripe --json")]
pub(crate) struct AlertsArgs {
    /// Only this event: dead, held (a configuration failure) or paused (a dependency paused by
    /// one). Repeat for several.
    #[arg(long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Only this status: pending, sent or failed. Repeat for several.
    #[arg(long = "status", value_name = "STATUS")]
    pub statuses: Vec<String>,
    /// Only alerts about this kind.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Only alerts about this dependency.
    #[arg(long, value_name = "NAME")]
    pub dependency: Option<String>,
    /// Only alerts older than this one (the ID column): the next page.
    #[arg(long, value_name = "ID")]
    pub before: Option<i64>,
    /// The most alerts to show (at most 10,000).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: u32,
    /// Print the alerts as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Prints the newest alerts that match.
pub(crate) async fn run(global: &Global, args: AlertsArgs) -> anyhow::Result<()> {
    let limit = check_list_limit(args.limit).map_err(|_| {
        bad(format!(
            "--limit must be between 1 and 10,000 (got {})",
            args.limit
        ))
    })?;
    let events = args
        .events
        .iter()
        .map(|e| e.parse::<AlertEvent>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("--event: {e}")))?;
    let statuses = args
        .statuses
        .iter()
        .map(|s| s.parse::<AlertStatus>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("--status: {e}")))?;
    let backend = Backend::open(global).await?;
    let entries = backend
        .store
        .alert_list(AlertListParams {
            events,
            statuses,
            kind: args.kind,
            dependency: args.dependency,
            before_id: args.before,
            limit,
        })
        .await
        .map_err(store_error)?;
    if args.json {
        return output::json(&entries);
    }
    if entries.is_empty() {
        return output::line!("no alert matches: nothing has been told to an owner");
    }
    let now = chrono::Utc::now();
    let ago = |t| oprec::ops::time::relative(t, now);
    let mut t = Table::new(&[
        "ID",
        "AT",
        "EVENT",
        "ABOUT",
        "ROUTE",
        "STATUS",
        "TRIES",
        "SUMMARY",
        "NEXT ACTION",
        "SEND ERROR",
    ]);
    for e in &entries {
        let about = match (&e.operation_id, &e.dependency) {
            (_, Some(d)) if e.event == AlertEvent::Paused => format!("dependency {d}"),
            (Some(id), _) => id.to_string(),
            (None, Some(d)) => format!("dependency {d}"),
            (None, None) => "-".into(),
        };
        let route = match (&e.route, &e.target) {
            (Some(r), Some(t)) if !t.is_empty() => format!("{r} → {t}"),
            (Some(r), _) => r.clone(),
            (None, _) => "-".into(),
        };
        let status = match e.status {
            AlertStatus::Sent => e
                .sent_at
                .map_or_else(|| "sent".to_owned(), |at| format!("sent {}", ago(at))),
            AlertStatus::Failed if e.due_at > now => {
                format!("failed, next try {}", ago(e.due_at))
            }
            AlertStatus::Failed => "failed, next try due".to_owned(),
            AlertStatus::Pending => "pending".to_owned(),
        };
        t.row(vec![
            e.id.to_string(),
            output::when(e.source_at, now),
            e.event.to_string(),
            about,
            route,
            status,
            e.tries.to_string(),
            e.summary.clone(),
            e.next_action.clone().unwrap_or_else(|| "-".into()),
            e.last_error.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    output::human(&t.render(""))
}
