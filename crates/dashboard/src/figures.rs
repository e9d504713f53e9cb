//! The overview's figures, as `oprec stats` reports them: cards for the counts that need a
//! decision (pending, dead, reconciling, held, oldest eligible, backlog age, attempts per
//! success), the tables of counts by status, class, dependency, code version and age, and dead
//! operations per kind.

use std::collections::BTreeMap;

use chrono::Duration;
use maud::{Markup, Render, html};
use oprec_core::operator::StatsReport;
use oprec_core::{LimitUse, Status};

use crate::html::{badge, count, span};
use crate::query_string::query;

/// One figure: what it is, its value, and a note that explains it; `tone` (`warn` or `bad`)
/// marks it for attention.
fn card(title: &str, value: impl Render, note: impl Render, tone: Option<&str>) -> Markup {
    html! {
        div class={ "card" @if let Some(tone) = tone { " " (tone) } } {
            div.card-t { (title) }
            div.card-v { (value) }
            div.card-n { (note) }
        }
    }
}

/// A typed count map with its keys as they are shown.
pub(crate) fn named<K: ToString>(m: &BTreeMap<K, u64>) -> BTreeMap<String, u64> {
    m.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A two-column table of counts, in `order` first.
pub(crate) fn counts(
    map: &BTreeMap<String, u64>,
    order: &[&str],
    empty: &str,
    link: impl Fn(&str) -> Option<String>,
) -> Markup {
    if map.values().all(|n| *n == 0) {
        return html! { p.muted { (empty) } };
    }
    let mut keys: Vec<&str> = order
        .iter()
        .copied()
        .filter(|k| map.contains_key(*k))
        .collect();
    keys.extend(
        map.keys()
            .map(String::as_str)
            .filter(|k| !order.contains(k)),
    );
    html! {
        table.kv {
            @for k in keys {
                tr {
                    td {
                        @match link(k) {
                            Some(href) => a href=(href) { (badge(k)) },
                            None => (badge(k)),
                        }
                    }
                    td.num { (count(map[k])) }
                }
            }
        }
    }
}

/// The cards of the figures that need a decision.
pub(crate) fn figures(r: &StatsReport) -> Markup {
    let now = r.at.unwrap_or_else(chrono::Utc::now);
    let g = |k: &str| {
        k.parse::<Status>()
            .ok()
            .and_then(|s| r.by_status.get(&s))
            .copied()
            .unwrap_or(0)
    };
    let dead_hour: u64 = r.dead_last_hour_by_kind.values().sum();
    let dead_day: u64 = r.dead_last_day_by_kind.values().sum();
    let tone = |attention: bool, tone: &'static str| attention.then_some(tone);
    html! {
        div.cards {
            (card(
                "Pending",
                count(g("pending")),
                format!("{} running", count(g("running"))),
                None,
            ))
            (card(
                "Dead",
                count(g("dead")),
                format!("+{} last hour · +{} last day", count(dead_hour), count(dead_day)),
                tone(dead_hour > 0, "bad"),
            ))
            (card(
                "Reconciling",
                count(r.reconciling),
                "unknown outcomes awaiting a decision",
                tone(r.reconciling > 0, "warn"),
            ))
            (card(
                "Held",
                count(g("held")),
                "quarantined or awaiting repair",
                tone(g("held") > 0, "warn"),
            ))
            (card(
                "Oldest eligible",
                match &r.oldest_eligible {
                    Some(o) => span(now - o.next_eligible_at),
                    None => "—".into(),
                },
                html! {
                    @match &r.oldest_eligible {
                        Some(o) => { "overdue: " a href={ "/operations/" (o.id) } { (o.kind) } },
                        None => "nothing overdue",
                    }
                    // Work a control holds back is not overdue, but it waits: named apart.
                    @if let Some(h) = r
                        .held_back
                        .iter()
                        .filter_map(|h| h.oldest.as_ref())
                        .min_by_key(|o| o.next_eligible_at)
                    {
                        " · held back: " a href={ "/operations/" (h.id) } { (h.kind) }
                        " for " (span(now - h.next_eligible_at))
                    }
                },
                None,
            ))
            (card(
                "Backlog age",
                match r.backlog_age_seconds {
                    Some(a) => span(Duration::seconds(a)),
                    None => "—".into(),
                },
                "oldest unfinished, by creation",
                None,
            ))
            (card(
                "Attempts per success",
                match r.attempts_per_success {
                    Some(a) => format!("{a:.2}"),
                    None => "—".into(),
                },
                "1.00: every effect on its first attempt",
                None,
            ))
        }
    }
}

/// Dead operations per kind: in all, in the last hour and in the last day.
pub(crate) fn dead_table(r: &StatsReport) -> Markup {
    if r.dead_by_kind.is_empty() {
        return html! { p.muted { "No dead operations." } };
    }
    let of = |m: &BTreeMap<String, u64>, kind: &str| count(m.get(kind).copied().unwrap_or(0));
    html! {
        div.scroll data-scroll {
            table.grid {
                thead {
                    tr {
                        th { "Kind" } th.num { "Dead" } th.num { "Last hour" } th.num { "Last day" }
                        th {}
                    }
                }
                tbody {
                    @for (kind, n) in &r.dead_by_kind {
                        tr {
                            td { a href={ "/dead" (query(&[("kind", kind)])) } { (kind) } }
                            td.num { (count(*n)) }
                            td.num { (of(&r.dead_last_hour_by_kind, kind)) }
                            td.num { (of(&r.dead_last_day_by_kind, kind)) }
                            td.right {
                                a.button.small
                                    href={ "/controls" (query(&[("scope", "kind"), ("value", kind)])) "#pause-form" }
                                    aria-label={ "Pause " (kind) "…" } { "Pause…" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The limits across the fleet with their use now (`oprec limits`), and with `stats`, each
/// dependency's attempts in the last hour beside its limit (`oprec stats`).
pub(crate) fn limits_table(limits: &[LimitUse], stats: Option<&StatsReport>) -> Markup {
    if limits.is_empty() {
        return html! {
            p.muted #no-limits {
                "No limits: claims take what workers have room for. "
                code { "oprec limit" } " sets one."
            }
        };
    }
    html! {
        div.scroll data-scroll {
            table.grid #limits {
                thead {
                    tr {
                        th { "Limited" } th { "Limit" } th { "Use now" }
                        @if stats.is_some() { th { "Last hour" } }
                        th { "Reason" }
                    }
                }
                tbody {
                    @for u in limits {
                        tr {
                            td { (u.limit.scope) " " (u.limit.value) }
                            td { (oprec_ops::limits::bounds(&u.limit)) }
                            td { (oprec_ops::limits::usage(u)) }
                            @if let Some(r) = stats {
                                td {
                                    (oprec_ops::limits::last_hour(u, r)
                                        .unwrap_or_else(|| "-".into()))
                                }
                            }
                            td { (u.limit.reason.as_deref().unwrap_or("-")) }
                        }
                    }
                }
            }
        }
    }
}
