//! The operations list: filters (kind, status, class, terminal reason, error text, creation time
//! range), newest first, paged by keyset on the time-ordered id so that page 1,000 costs what
//! page 1 does.

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use maud::{Markup, html};
use oprec_core::store::{ListParams, ListedCounts, RedrivenShown};
use oprec_core::{FailureClass, Operation, Status, TerminalReason};
use oprec_ops::filter::{MAX_NAME, MAX_SEARCH};

use crate::State;
use crate::error::{AppError, store};
use crate::filters::FilterForm;
use crate::html::{badge, or_dash, select_options, short_id, when};
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// The query a page was asked with, or a readable refusal.
pub(crate) fn form<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, AppError> {
    q.map(|q| q.0).map_err(|e| {
        AppError::bad_request(format!(
            "The filter in the address could not be read ({}); clear it and filter again.",
            e.body_text()
        ))
    })
}

fn select(name: &str, label: &str, current: &str, options: &[&str]) -> Markup {
    html! {
        label { (label) select name=(name) { (select_options(current, options)) } }
    }
}

fn names<T: Copy>(all: &[T], f: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| f(*v)).collect()
}

/// The filter form; `kinds`, the kinds that exist, offered as the kind field's choices.
fn filter_form(f: &FilterForm, kinds: &[String]) -> Markup {
    html! {
        form.filters #filters method="get" action="/operations" {
            label {
                "Kind"
                input name="kind" value=(f.kind.trim()) placeholder="any" maxlength=(MAX_NAME)
                    list="kinds";
                datalist #kinds {
                    @for k in kinds { option value=(k) {} }
                }
            }
            (select("status", "Status", &f.status, &names(Status::ALL, |s| s.as_str())))
            (select(
                "class",
                "Failure class",
                &f.class,
                &names(FailureClass::ALL, |s| s.as_str()),
            ))
            (select(
                "reason",
                "Terminal reason",
                &f.reason,
                &names(TerminalReason::ALL, |s| s.as_str()),
            ))
            (select(
                "redriven",
                "Re-driven as new (any: hidden when listing dead)",
                &f.redriven,
                &names(RedrivenShown::ALL, |s| s.as_str()),
            ))
            label {
                "Error contains"
                input name="error" value=(f.error.trim()) placeholder="text in the last error"
                    maxlength=(MAX_SEARCH);
            }
            label {
                "Created since"
                input name="since" value=(f.since.trim()) placeholder="2h or 2026-01-05T09:00";
            }
            label {
                "Created before"
                input name="until" value=(f.until.trim()) placeholder="30m or RFC 3339";
            }
            div.actions {
                button.primary type="submit" { "Filter" } " "
                a.button href="/operations" { "Clear" }
            }
        }
    }
}

/// The columns that answer what a person asks of operations in `status`: who holds a running
/// one and until when, when and why a dead one ended, why a held one waits; the last error and
/// the creation time otherwise.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Columns {
    Running,
    Dead,
    Held,
    Any,
}

impl Columns {
    fn of(status: Option<Status>) -> Self {
        match status {
            Some(Status::Running) => Columns::Running,
            Some(Status::Dead) => Columns::Dead,
            Some(Status::Held) => Columns::Held,
            _ => Columns::Any,
        }
    }

    fn head(self) -> Markup {
        html! {
            th { "ID" } th { "Kind" } th { "Status" } th.num { "Attempt" }
            @match self {
                Columns::Running => { th { "Worker" } th { "Lease until" } th { "Claimed" } },
                Columns::Dead => {
                    th { "Class" } th { "Reason" } th { "Last error" } th { "Ended" }
                },
                Columns::Held => { th { "Why held" } th { "Next action" } th { "Since" } },
                Columns::Any => {
                    th { "Class" } th { "Reason" } th { "Last error" } th { "Created" }
                },
            }
        }
    }
}

/// A cell of the last error's `text`, cut to 90 characters (whole in its title).
fn error_cell(text: &str) -> Markup {
    let cut: String = text.chars().take(90).collect();
    html! {
        td.err title=(text) {
            @if cut.is_empty() { (or_dash(None)) } @else { (cut) }
        }
    }
}

/// One row of the list.
fn row(o: &Operation, columns: Columns, now: chrono::DateTime<chrono::Utc>) -> Markup {
    let error = o.last_error.as_ref();
    let summary = error.map(|e| e.summary.as_str()).unwrap_or("");
    let t = |v: Option<chrono::DateTime<chrono::Utc>>| match v {
        Some(v) => when(v, now),
        None => or_dash(None),
    };
    html! {
        tr {
            td.mono { a href={ "/operations/" (o.id) } { (short_id(&o.id)) } }
            td { (o.kind) }
            td {
                (badge(o.status.as_str()))
                @if let Some(copy) = o.redriven_as {
                    " " a.redriven href={ "/operations/" (copy) } title="re-driven as new: its copy carries the work on" {
                        "re-driven → " (short_id(&copy))
                    }
                }
            }
            td.num { (oprec_ops::number::attempts(o.attempt, o.max_attempts)) }
            @match columns {
                Columns::Running => {
                    td { (or_dash(o.worker_id.as_deref())) }
                    td { (t(o.lease_until)) }
                    td { (t(o.claimed_at)) }
                },
                Columns::Held => {
                    // A quarantine's reason is its decision; a configuration hold's, the error.
                    (error_cell(error.and_then(|e| e.decision.as_deref()).unwrap_or(summary)))
                    td { (or_dash(error.and_then(|e| e.next_action.as_deref()))) }
                    td { (t(Some(o.updated_at))) }
                },
                Columns::Dead | Columns::Any => {
                    td {
                        @match o.last_failure_class {
                            Some(c) => (badge(c.as_str())),
                            None => (or_dash(None)),
                        }
                    }
                    td { (or_dash(o.terminal_reason.map(|r| r.as_str()))) }
                    (error_cell(summary))
                    @if columns == Columns::Dead {
                        td { (t(o.terminal_at)) }
                    } @else {
                        td { (when(o.created_at, now)) }
                    }
                },
            }
        }
    }
}

/// How often a list refreshes itself.
pub(crate) const LIST_LIVE_SECONDS: u32 = 5;

/// Which page of the list: from the newest, older than an operation, or just newer than one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ListPage {
    Newest,
    Older,
    Newer,
}

/// The links to the newest page, the newer and the older one, and how many are shown. `older`:
/// whether operations older than the last shown exist; `newer`: newer than the first.
fn pager(
    f: &FilterForm,
    ops: &[Operation],
    page: ListPage,
    older: bool,
    newer: bool,
    limit: u32,
) -> Markup {
    let keep = f.query();
    let sep = if keep.is_empty() { "?" } else { "&" };
    html! {
        nav.pager {
            @if page != ListPage::Newest {
                a.button href={ "/operations" (keep) } { "⇤ Newest" }
            }
            @if newer && let Some(first) = ops.first() {
                a.button #newer href={ "/operations" (keep) (sep) "before=" (first.id) "&limit=" (limit) }
                    rel="prev" { "← Newer" }
            }
            @if older && let Some(last) = ops.last() {
                a.button #older href={ "/operations" (keep) (sep) "after=" (last.id) "&limit=" (limit) }
                    rel="next" { "Older →" }
            }
            span.muted { (ops.len()) " shown" @if !older { " · end of list" } }
        }
    }
}

/// Tabs per status with their counts (the trigger-kept counts: no scan), of the kind filtered
/// or of every kind, each keeping the other filters; dead counts what the dead list shows (a
/// dead operation re-driven as new is left out, as on the overview).
fn status_tabs(f: &FilterForm, counts: &ListedCounts) -> Markup {
    let link = |status: &str| {
        let mut pairs = f.pairs();
        for (name, value) in pairs.iter_mut() {
            if *name == "status" {
                *value = status;
            }
        }
        format!("/operations{}", crate::query_string::query(&pairs))
    };
    let current = f.status.trim();
    let scope = if f.kind.trim().is_empty() {
        "every kind".to_owned()
    } else {
        format!("kind {}", f.kind.trim())
    };
    html! {
        nav.seg.tabs #status-tabs aria-label={ "Operations by status, of " (scope) } {
            a.active[current.is_empty()] href=(link("")) { "All " (crate::html::count(counts.all)) }
            @for status in Status::ALL {
                @let n = counts.by_status.get(status).copied().unwrap_or(0);
                a.active[current == status.as_str()] href=(link(status.as_str())) {
                    (status.as_str()) " " (crate::html::count(n))
                }
            }
        }
    }
}

/// What the list was sent back with after a bulk action (a fixed list of words: no text from
/// the address reaches the page but a number).
#[derive(serde::Deserialize, Default)]
pub(crate) struct Done {
    #[serde(default)]
    done: String,
    #[serde(default)]
    n: Option<u64>,
}

/// Links to act on every operation the filter matches, once it narrows (the review counts them
/// first): release the held ones, cancel the waiting ones, quarantine the pending ones, re-drive
/// the dead ones.
fn bulk_links(f: &FilterForm) -> Markup {
    let narrows = [&f.kind, &f.class, &f.error, &f.dependency, &f.id]
        .iter()
        .any(|v| !v.trim().is_empty());
    if !narrows {
        return html! {};
    }
    let status = f.status.trim();
    let keep = f.query();
    let sep = if keep.is_empty() { "?" } else { "&" };
    let timeless = f.since.trim().is_empty() && f.until.trim().is_empty();
    // The status picks which review; the review takes the statuses its action moves.
    let moved = FilterForm {
        status: String::new(),
        ..f.clone()
    }
    .query();
    html! {
        p.actions #bulk {
            @if matches!(status, "" | "held") {
                a.button href={ "/bulk" (keep) (sep) "action=release" } { "Release matching held…" }
                " "
            }
            @if matches!(status, "" | "pending" | "held" | "reconciling") {
                a.button href={ "/bulk" (keep) (sep) "action=cancel" } { "Cancel matching…" }
                " "
            }
            // The re-drive and quarantine reviews read the same filter, except that their time
            // range bounds the end, not the creation: offered only without one.
            @if timeless {
                @if matches!(status, "" | "pending") {
                    a.button #bulk-quarantine href={ "/quarantine" (moved) } { "Quarantine matching pending…" }
                    " "
                }
                @if matches!(status, "" | "dead") {
                    a.button #bulk-redrive href={ "/redrive" (moved) } { "Re-drive matching dead…" }
                }
            }
        }
    }
}

/// `GET /operations`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
    done: Result<Query<Done>, QueryRejection>,
) -> Result<Page, AppError> {
    let f = form(q)?;
    let done = done.map(|d| d.0).unwrap_or_default();
    let n = crate::html::count(done.n.unwrap_or(0));
    let notice = match done.done.as_str() {
        "release" => format!("Released {n}: pending again and eligible now."),
        "cancel" => format!("Cancelled {n}: no worker will take them again."),
        _ => String::new(),
    };
    let now = state.store.now().await.map_err(store)?;
    // The shared grammar reads the fields; here the time range bounds creation, not the end.
    let filter = f.operation_filter(now)?;
    let limit = f.limit()?;
    let params = ListParams {
        status: f.status()?,
        kind: filter.kinds.into_iter().next(),
        failure_class: filter.classes.first().copied(),
        terminal_reason: filter.reasons.first().copied(),
        error_contains: filter.error_contains,
        created_since: filter.terminal_since,
        created_until: filter.terminal_until,
        filter: Default::default(),
        after: f.after()?,
        redriven: f.redriven()?,
        newest_first: true,
        // One more than shown: whether there is a next page.
        limit: limit + 1,
    };
    let before = f.before()?;
    let page = match (params.after, before) {
        (Some(_), _) => ListPage::Older,
        (None, Some(_)) => ListPage::Newer,
        (None, None) => ListPage::Newest,
    };
    let columns = Columns::of(params.status);
    let (ops, older, newer) = if let (ListPage::Newer, Some(before)) = (page, before) {
        // The page just newer than `before`: the next ids upwards, shown newest first.
        let mut ops = state
            .store
            .operation_list(ListParams {
                after: Some(before),
                newest_first: false,
                ..params
            })
            .await
            .map_err(store)?;
        let newer = ops.len() > limit as usize;
        ops.truncate(limit as usize);
        ops.reverse();
        (ops, true, newer)
    } else {
        let mut ops = state.store.operation_list(params).await.map_err(store)?;
        let older = ops.len() > limit as usize;
        ops.truncate(limit as usize);
        (ops, older, page == ListPage::Older)
    };
    // The kinds that exist, for the kind field's choices, and the counts per status for the
    // tabs (the trigger-kept counts, not a scan).
    let counted = state.store.operation_count().await.map_err(store)?;
    let kinds: Vec<String> = counted
        .iter()
        .map(|c| c.kind.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let kind = Some(f.kind.trim()).filter(|k| !k.is_empty());
    let by_status = ListedCounts::of(&counted, kind);

    let body = html! {
        div.head {
            h1 { "Operations" }
            p.muted {
                "Newest first. Every filter narrows; the error text is matched literally, \
                 case-insensitively."
            }
        }
        @if !notice.is_empty() {
            p.notice.good #notice { (notice) }
        }
        (filter_form(&f, &kinds))
        (status_tabs(&f, &by_status))
        (bulk_links(&f))
        div #ops-live data-live-region {
            @if ops.is_empty() {
                p.empty {
                    @if page == ListPage::Newest {
                        "No operation matches these filters."
                    } @else {
                        "No more operations: this was the last page."
                    }
                }
            } @else {
                div.scroll data-scroll {
                    table.grid.ops #ops {
                        thead { tr { (columns.head()) } }
                        tbody {
                            @for o in &ops { (row(o, columns, now)) }
                        }
                    }
                }
            }
            (pager(&f, &ops, page, older, newer, limit))
        }
    };
    Ok(Page::new("Operations", Nav::Operations, &viewer)
        .body(body)
        .live(LIST_LIVE_SECONDS))
}
