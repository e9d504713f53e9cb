//! `oprec workers`: the workers running now (seen within a minute), the kinds each handles and
//! which one leads maintenance, then the pending work of kinds that none of them handles.

use clap::Args;
use oprec::WORKER_LIVE_SECS;
use oprec::maintenance::MAINTENANCE_LEADER;
use oprec::operator::WorkerListParams;

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::output::{self, Table, count};

/// `oprec workers`.
#[derive(Debug, Args)]
pub(crate) struct WorkersArgs {
    /// Print the workers and the unhandled kinds as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Lists live workers.
pub(crate) async fn run(global: &Global, args: WorkersArgs) -> anyhow::Result<()> {
    let backend = Backend::open(global).await?;
    let live = chrono::Duration::seconds(WORKER_LIVE_SECS);
    let mut workers = backend
        .store
        .worker_list(WorkerListParams { seen_within: live })
        .await
        .map_err(store_error)?;
    let unhandled = backend
        .store
        .operation_unhandled(WorkerListParams { seen_within: live })
        .await
        .map_err(store_error)?;
    let leader = backend
        .store
        .leader_list()
        .await
        .map_err(store_error)?
        .into_iter()
        .find(|l| l.name == MAINTENANCE_LEADER);
    // One read decides both the leader line and the LEADS column: two reads could disagree when
    // a lease runs out between them (a killed leader's row says it leads; the later read, not).
    for w in &mut workers {
        w.leader = leader.as_ref().is_some_and(|l| l.holder == w.id);
    }
    if args.json {
        return output::json(&serde_json::json!({
            "workers": workers,
            "leader": leader,
            "unhandled": unhandled,
            "live_within_seconds": WORKER_LIVE_SECS,
        }));
    }
    let now = chrono::Utc::now();
    let mut out = if workers.is_empty() {
        format!("no worker seen in the last {WORKER_LIVE_SECS} s\n")
    } else {
        let mut t = Table::new(&[
            "WORKER",
            "LEADS",
            "HOST",
            "PID",
            "VERSION",
            "STARTED",
            "LAST SEEN",
            "KINDS",
        ]);
        for w in &workers {
            t.row(vec![
                w.id.clone(),
                if w.leader { "maintenance" } else { "-" }.to_owned(),
                w.host.clone(),
                w.pid.to_string(),
                w.code_version.clone().unwrap_or_else(|| "-".into()),
                output::when(w.started_at, now),
                output::when(w.last_seen_at, now),
                w.kinds.join(", "),
            ]);
        }
        t.render("")
    };
    out.push_str(&match &leader {
        Some(l) => format!(
            "\nmaintenance leader: {} (since {}, lease until {})\n",
            l.holder,
            output::when(l.since, now),
            output::when(l.lease_until, now)
        ),
        None => {
            "\nmaintenance leader: none (no worker runs the scheduler, rescuer and alerts now)\n"
                .to_owned()
        }
    });
    out.push_str(&unhandled_text(&unhandled));
    output::human(&out)
}

/// The unhandled kinds as a short section (shared with `oprec stats`).
pub(crate) fn unhandled_text(unhandled: &[oprec::UnhandledKind]) -> String {
    let mut out =
        "\nunhandled (pending operations of a kind no live worker handles; nobody claims them)\n"
            .to_owned();
    if unhandled.is_empty() {
        out.push_str("  none\n");
        return out;
    }
    let mut t = Table::new(&["KIND", "PENDING", "ELIGIBLE", "OLDEST ENQUEUED"]);
    for u in unhandled {
        t.row(vec![
            u.kind.clone(),
            count(u.pending),
            if u.eligible_at_least {
                format!("{}+", count(u.eligible))
            } else {
                count(u.eligible)
            },
            output::time(u.oldest_created_at),
        ]);
    }
    out.push_str(&t.render("  "));
    out
}
