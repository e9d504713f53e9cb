//! `oprec stats`: the figures that say what is failing, why, and whether it is safe, at a glance
//! (the observations a retry incident needs): operations by status, pending by failure class,
//! attempts per success, the most overdue eligible operation, dead per kind with their promotion
//! rate and by code version, unknown outcomes awaiting reconciliation, attempts by dependency,
//! backlog age, and pending work of kinds no live worker handles (unhandled). `--json` prints the
//! store's `StatsReport` as it is.

use std::collections::{BTreeMap, BTreeSet};

use clap::Args;
use oprec::operator::StatsReport;

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::duration;
use crate::output::{self, Table, count};

/// The backlog age buckets, youngest first, as the stores name them.
const AGE_BUCKETS: [&str; 4] = ["<1h", "1h-1d", "1d-7d", ">7d"];

/// The statuses in the order work flows through them.
const STATUSES: [&str; 7] = [
    "pending",
    "running",
    "reconciling",
    "held",
    "succeeded",
    "dead",
    "cancelled",
];

/// `oprec stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// Print the store's figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Prints the figures.
pub(crate) async fn run(global: &Global, args: StatsArgs) -> anyhow::Result<()> {
    let backend = Backend::connect(&global.database_url).await?;
    let report = backend.store.stats().await.map_err(store_error)?;
    if args.json {
        return output::json(&report);
    }
    output::text(&render(&report, &backend.url))
}

/// A two-column table of a count map, in `order` first, then the rest by name; `empty` when
/// there is nothing to count.
fn counts(map: &BTreeMap<String, u64>, order: &[&str], empty: &str) -> String {
    if map.values().all(|n| *n == 0) {
        return format!("  {empty}\n");
    }
    let mut t = Table::new(&["", ""]);
    let mut seen = BTreeSet::new();
    for key in order.iter().copied().chain(map.keys().map(String::as_str)) {
        if let Some(n) = map.get(key)
            && seen.insert(key)
        {
            t.row(vec![key.to_owned(), count(*n)]);
        }
    }
    // The header row of blanks is left out.
    t.render("  ")
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The readable layout.
fn render(r: &StatsReport, url: &str) -> String {
    let mut out = format!(
        "oprec stats for {url}{}\n",
        r.at.map(|t| format!(" at {}", output::time(t)))
            .unwrap_or_default()
    );

    out.push_str("\noperations by status\n");
    out.push_str(&counts(&r.by_status, &STATUSES, "no operations"));

    out.push_str("\npending by failure class (none: not failed yet)\n");
    out.push_str(&counts(
        &r.pending_by_class,
        &["none"],
        "no pending operations",
    ));

    out.push_str("\nattempts per success: ");
    out.push_str(&match r.attempts_per_success {
        Some(a) => format!("{a:.2} (1.00: every effect on its first attempt)\n"),
        None => "- (nothing succeeded yet)\n".to_owned(),
    });

    out.push_str("oldest eligible: ");
    out.push_str(&match (&r.oldest_eligible, r.at) {
        (Some(o), Some(at)) => format!(
            "{} {}, overdue by {}\n",
            o.id,
            o.kind,
            duration::human(at - o.next_eligible_at)
        ),
        (Some(o), None) => format!("{} {}\n", o.id, o.kind),
        (None, _) => "none (every pending operation is waiting for its time)\n".to_owned(),
    });

    out.push_str("\ndead per kind\n");
    if r.dead_by_kind.is_empty() {
        out.push_str("  no dead operations\n");
    } else {
        let mut t = Table::new(&["KIND", "DEAD", "LAST HOUR", "LAST DAY"]);
        for (kind, n) in &r.dead_by_kind {
            let of = |m: &BTreeMap<String, u64>| count(m.get(kind).copied().unwrap_or(0));
            t.row(vec![
                kind.clone(),
                count(*n),
                of(&r.dead_last_hour_by_kind),
                of(&r.dead_last_day_by_kind),
            ]);
        }
        out.push_str(&t.render("  "));
    }

    out.push_str("\ndead in the last day by code version\n");
    out.push_str(&counts(&r.dead_last_day_by_code_version, &[], "no deaths"));

    out.push_str(&format!(
        "\nreconciling (unknown outcomes awaiting a hook or `oprec reconcile resolve`): {}\n",
        count(r.reconciling)
    ));

    out.push_str("\nattempts in the last hour by dependency\n");
    out.push_str(&counts(
        &r.attempts_last_hour_by_dependency,
        &[],
        "no attempts",
    ));

    out.push_str("\nbacklog (unfinished operations by creation time): ");
    out.push_str(&match r.backlog_age_seconds {
        Some(s) => format!(
            "the oldest was created {} ago\n",
            duration::human(chrono::Duration::seconds(s))
        ),
        None => "empty\n".to_owned(),
    });
    if !r.backlog_by_age.is_empty() {
        out.push_str(&counts(&r.backlog_by_age, &AGE_BUCKETS, "empty"));
    }
    out.push_str(&crate::commands::workers::unhandled_text(&r.unhandled));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_store_reads_plainly() {
        let text = render(&StatsReport::default(), "sqlite://x");
        for line in [
            "operations by status",
            "pending by failure class",
            "attempts per success: -",
            "oldest eligible: none",
            "dead per kind",
            "reconciling",
            "attempts in the last hour by dependency",
            "backlog",
            "unhandled",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
    }

    #[test]
    fn counts_follow_the_given_order() {
        let m: BTreeMap<String, u64> = [("dead".into(), 2), ("pending".into(), 10)].into();
        assert_eq!(counts(&m, &STATUSES, "-"), "  pending  10\n  dead     2\n");
        assert_eq!(counts(&BTreeMap::new(), &[], "no deaths"), "  no deaths\n");
    }
}
