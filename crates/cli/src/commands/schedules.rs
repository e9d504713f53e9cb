//! `oprec schedules`: the recurring kinds, each with its cron expression and zone, its next
//! tick, its last tick with that tick's operation and status, and whether it is served.

use clap::Args;
use oprec::ops::schedules::{self, ScheduleState};

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::output::{self, Table};

/// `oprec schedules`.
#[derive(Debug, Args)]
#[command(after_help = "\
A kind declared with a schedule (Rust: Kind::schedule(Schedule::cron(\"*/5 * * * *\")?...), or
schedule = \"...\" in a kinds file) gets one operation per tick, enqueued by the maintenance
leader with the idempotency key schedule:<tick in RFC 3339, UTC>, whatever the number of workers.
Ticks missed while nothing ran (older than the schedule's grace, default 60 s) follow its rule:
run_once makes one operation, for the latest of them; skip makes none.

A schedule stays listed after its workers stop (STATE says so); a worker that runs the kind
without a schedule removes it.

Examples:
  oprec schedules
  oprec schedules --json | jq '.schedules[] | {kind, next_tick, last_operation_status}'")]
pub(crate) struct SchedulesArgs {
    /// Print the schedules as JSON (each row of `operation_schedules` with its last operation's
    /// status and its state).
    #[arg(long)]
    pub json: bool,
}

/// Lists the schedules.
pub(crate) async fn run(global: &Global, args: SchedulesArgs) -> anyhow::Result<()> {
    let backend = Backend::open(global).await?;
    let (now, views) = schedules::list(backend.store.as_ref())
        .await
        .map_err(|e| match e {
            oprec::ops::Error::Store(e) => store_error(e),
            other => other.into(),
        })?;
    if args.json {
        return output::json(&serde_json::json!({ "now": now, "schedules": views }));
    }
    if views.is_empty() {
        return output::human(
            "no schedules: no worker has declared a recurring kind (see `oprec schedules --help`)\n",
        );
    }
    let mut t = Table::new(&[
        "KIND",
        "SCHEDULE",
        "ZONE",
        "MISSED",
        "NEXT TICK",
        "LAST TICK",
        "LAST OPERATION",
        "STATUS",
        "STATE",
    ]);
    for v in &views {
        let r = &v.record;
        t.row(vec![
            r.kind.clone(),
            r.expression.clone(),
            r.timezone.clone(),
            r.missed.to_string(),
            r.next_tick
                .map(|t| output::when(t, now))
                .unwrap_or_else(|| "none".into()),
            r.last_enqueued_tick
                .map(|t| output::when(t, now))
                .unwrap_or_else(|| "-".into()),
            r.last_operation_id
                .map(|id| id.to_string())
                .unwrap_or_else(|| "-".into()),
            match (r.last_operation_id, r.last_operation_status) {
                (None, _) => "-".to_owned(),
                (Some(_), Some(s)) => s.to_string(),
                (Some(_), None) => "removed".to_owned(),
            },
            v.state.as_str().to_owned(),
        ]);
    }
    let mut out = t.render("");
    if views.iter().any(|v| v.state == ScheduleState::Behind) {
        out.push_str(
            "\nbehind: no maintenance leader is ticking; `oprec workers` shows whether one runs\n",
        );
    }
    output::human(&out)
}
