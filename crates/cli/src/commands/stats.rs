//! `oprec stats`: the figures that say what is failing, why, and whether it is safe, at a glance
//! (the observations a retry incident needs): operations by status, pending by failure class,
//! attempts per success, the most overdue eligible operation, dead per kind with their promotion
//! rate and by code version, unknown outcomes awaiting reconciliation, attempts by dependency,
//! backlog age, pending work of kinds no live worker handles (unhandled), and the pauses and
//! postponements in force with the eligible work each holds back (the oldest eligible figure
//! leaves that work out), and the limits across the fleet with their use. `--json` prints the
//! store's `StatsReport` with the limits added as `limits`.

use std::collections::BTreeMap;

use clap::Args;
use oprec::LimitUse;
use oprec::operator::StatsReport;

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::duration;
use crate::output::{self, Table, count};

/// `oprec stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// Print the store's figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Prints the figures.
pub(crate) async fn run(global: &Global, args: StatsArgs) -> anyhow::Result<()> {
    let backend = Backend::open(global).await?;
    let report = backend.store.stats().await.map_err(store_error)?;
    let limits = oprec::ops::limits::list(backend.store.as_ref()).await?;
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        v["limits"] = serde_json::to_value(&limits)?;
        return output::json(&v);
    }
    let mut text = render(&report, &backend.url);
    text.push_str(&limits_text(&limits, &report));
    output::human(&text)
}

/// The limits across the fleet with their use now, and, for a dependency, the attempts against
/// it in the last hour per second (the seeds' "rate by dependency") beside its rate limit.
fn limits_text(limits: &[LimitUse], r: &StatsReport) -> String {
    let mut out = "\nlimits across the fleet (work beyond them waits, unspent)\n".to_owned();
    if limits.is_empty() {
        out.push_str("  no limits (`oprec limit` sets one)\n");
        return out;
    }
    let mut t = Table::new(&["LIMITED", "LIMIT", "USE NOW", "LAST HOUR"]);
    for u in limits {
        let last_hour = oprec::ops::limits::last_hour(u, r).unwrap_or_else(|| "-".into());
        t.row(vec![
            format!("{} {}", u.limit.scope, u.limit.value),
            oprec::ops::limits::bounds(&u.limit),
            oprec::ops::limits::usage(u),
            last_hour,
        ]);
    }
    out.push_str(&t.render("  "));
    out
}

/// A two-column table of a count map in its keys' order (a typed key's declaration order: the
/// statuses as work flows through them, the age buckets youngest first; names alphabetically);
/// `empty` when there is nothing to count.
fn counts<K: std::fmt::Display>(map: &BTreeMap<K, u64>, empty: &str) -> String {
    if map.values().all(|n| *n == 0) {
        return format!("  {empty}\n");
    }
    let mut t = Table::new(&["", ""]);
    for (key, n) in map {
        t.row(vec![key.to_string(), count(*n)]);
    }
    // The header row of blanks is left out.
    t.render("  ")
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A pending operation's last failure class as the table shows it (`none`: not failed yet).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct PendingClass(Option<oprec::FailureClass>);

impl std::fmt::Display for PendingClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.map_or(oprec::NO_CLASS, |c| c.as_str()))
    }
}

/// The readable layout.
fn render(r: &StatsReport, url: &str) -> String {
    let mut out = format!(
        "oprec stats for {url}{}\n",
        r.at.map(|t| format!(" at {}", output::time(t)))
            .unwrap_or_default()
    );

    out.push_str("\noperations by status (dead: awaiting action)\n");
    out.push_str(&counts(&r.by_status, "no operations"));
    let redriven: u64 = r.dead_redriven_by_kind.values().sum();
    if redriven > 0 {
        out.push_str(&format!(
            "  and {} dead re-driven as new (their copies carry the work on; \
             `oprec ops list --status dead --redriven only`)\n",
            count(redriven)
        ));
    }

    out.push_str("\npending by failure class (none: not failed yet)\n");
    // No class (not failed yet) first, then the classes in their order.
    let pending: BTreeMap<PendingClass, u64> = r
        .pending_by_class
        .iter()
        .map(|(c, n)| (PendingClass(*c), *n))
        .collect();
    out.push_str(&counts(&pending, "no pending operations"));

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
        (None, _) => {
            "none (every pending operation no control holds back is waiting for its time)\n"
                .to_owned()
        }
    });
    out.push_str(&held_back(r));

    out.push_str("\ndead per kind (awaiting action; re-driven as new apart)\n");
    let kinds: std::collections::BTreeSet<&String> = r
        .dead_by_kind
        .keys()
        .chain(r.dead_redriven_by_kind.keys())
        .collect();
    if kinds.is_empty() {
        out.push_str("  no dead operations\n");
    } else {
        let mut t = Table::new(&["KIND", "DEAD", "LAST HOUR", "LAST DAY", "RE-DRIVEN"]);
        for kind in kinds {
            let of = |m: &BTreeMap<String, u64>| count(m.get(kind).copied().unwrap_or(0));
            t.row(vec![
                kind.clone(),
                of(&r.dead_by_kind),
                of(&r.dead_last_hour_by_kind),
                of(&r.dead_last_day_by_kind),
                of(&r.dead_redriven_by_kind),
            ]);
        }
        out.push_str(&t.render("  "));
    }

    out.push_str("\ndead in the last day by code version\n");
    out.push_str(&counts(&r.dead_last_day_by_code_version, "no deaths"));

    out.push_str(&format!(
        "\nreconciling (unknown outcomes awaiting a hook or `oprec reconcile resolve`): {}\n",
        count(r.reconciling)
    ));

    out.push_str("\nattempts in the last hour by dependency\n");
    out.push_str(&counts(&r.attempts_last_hour_by_dependency, "no attempts"));

    out.push_str("\nbacklog (unfinished operations by creation time): ");
    out.push_str(&match r.backlog_age_seconds {
        Some(s) => format!(
            "the oldest was created {} ago\n",
            duration::human(chrono::Duration::seconds(s))
        ),
        None => "empty\n".to_owned(),
    });
    if !r.backlog_by_age.is_empty() {
        out.push_str(&counts(&r.backlog_by_age, "empty"));
    }
    out.push_str(&crate::commands::workers::unhandled_text(&r.unhandled));
    out
}

/// The pauses and postponements in force with the eligible work each holds back: what explains
/// an overdue backlog that nobody claims.
fn held_back(r: &StatsReport) -> String {
    let mut out =
        "\nheld back by controls in force (not claimed or woken until lifted or lapsed)\n"
            .to_owned();
    if r.held_back.is_empty() {
        out.push_str("  no pause or postponement in force\n");
        return out;
    }
    let mut t = Table::new(&[
        "CONTROL",
        "ACTION",
        "UNTIL",
        "ELIGIBLE",
        "OLDEST OVERDUE BY",
    ]);
    for h in &r.held_back {
        let eligible = if h.at_least {
            format!("{}+", count(h.eligible))
        } else {
            count(h.eligible)
        };
        let overdue = match (&h.oldest, r.at) {
            (Some(o), Some(at)) => duration::human(at - o.next_eligible_at),
            _ => "-".to_owned(),
        };
        t.row(vec![
            format!("{} {}", h.scope, h.value),
            h.action.to_string(),
            h.until.map_or_else(|| "-".to_owned(), output::time),
            eligible,
            overdue,
        ]);
    }
    out.push_str(&t.render("  "));
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
            "no pause or postponement in force",
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
    fn counts_follow_the_keys_order() {
        let m: BTreeMap<oprec::Status, u64> =
            [(oprec::Status::Dead, 2), (oprec::Status::Pending, 10)].into();
        assert_eq!(counts(&m, "-"), "  pending  10\n  dead     2\n");
        let none: BTreeMap<String, u64> = BTreeMap::new();
        assert_eq!(counts(&none, "no deaths"), "  no deaths\n");
    }
}
