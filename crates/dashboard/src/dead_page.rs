//! Dead letters: dead operations grouped by kind, failure class and terminal reason, with sample
//! errors, under a filter. A group (or the whole filter) leads to the re-drive's dry run in
//! [`crate::redrive_page`]; the dry run, its groups table and the filter as a sentence are shared
//! with it.

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use maud::{Markup, html};
use oprec_core::operator::{OperationFilter, PreviewGroup, RedrivePreview};
use oprec_core::{FailureClass, TerminalReason};
use oprec_ops::Spelling;
use oprec_ops::redrive::{RedriveInput, RedriveRequest, RedriveReview};

use crate::State;
use crate::error::{AppError, store};
use crate::filters::FilterForm;
use crate::html::{badge, count, or_dash, select_options, short_id, time, when};
use crate::layout::{Nav, Page};
use crate::operations_page::form;
use crate::query_string::query;
use crate::viewer::Viewer;

fn filter_form(action: &str, f: &FilterForm, button: &str) -> Markup {
    let classes: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
    let reasons: Vec<&str> = TerminalReason::ALL.iter().map(|c| c.as_str()).collect();
    html! {
        form.filters #dead-filter method="get" action=(action) {
            label {
                "Kind"
                input name="kind" value=(f.kind.trim()) placeholder="any" maxlength="200";
            }
            label {
                "Failure class"
                select name="class" { (select_options(&f.class, &classes)) }
            }
            label {
                "Terminal reason"
                select name="reason" { (select_options(&f.reason, &reasons)) }
            }
            label {
                "Error contains"
                input name="error" value=(f.error.trim()) placeholder="text in the last error"
                    maxlength="1000";
            }
            label {
                "Dependency"
                input name="dependency" value=(f.dependency.trim()) placeholder="any"
                    maxlength="200";
            }
            label {
                "Ended since"
                input name="since" value=(f.since.trim()) placeholder="24h or 2026-01-05T09:00";
            }
            label {
                "Ended before"
                input name="until" value=(f.until.trim()) placeholder="10m or RFC 3339";
            }
            label.check {
                input type="checkbox" name="cancelled" value="on" checked[f.include_cancelled()];
                " Cancelled ones too"
            }
            div.actions { button.primary type="submit" { (button) } }
        }
    }
}

/// `base` narrowed to one group of the dry run.
fn group_filter(base: &FilterForm, g: &PreviewGroup) -> FilterForm {
    let mut f = base.clone();
    f.kind = g.kind.clone();
    f.class = g.class.map(|c| c.as_str().to_owned()).unwrap_or_default();
    f.reason = g.reason.map(|r| r.as_str().to_owned()).unwrap_or_default();
    f
}

/// A group's links: its dead operations listed (`list`, a query string), and the review of its
/// re-drive (`f`), named for screen readers by `group`.
fn group_links(list: &str, f: &FilterForm, group: &str) -> Markup {
    html! {
        a href={ "/operations" (list) } aria-label={ "List " (group) } { "list" }
        " · "
        a.button.small href={ "/redrive" (f.query()) } aria-label={ "Review re-drive of " (group) } {
            "Review re-drive…"
        }
    }
}

/// When a death was, or a dash.
fn ended(t: Option<chrono::DateTime<chrono::Utc>>, now: chrono::DateTime<chrono::Utc>) -> Markup {
    match t {
        Some(t) => when(t, now),
        None => or_dash(None),
    }
}

/// `base` narrowed to one kind and one last error's text.
fn error_filter(base: &FilterForm, kind: &str, text: &str) -> FilterForm {
    let mut f = base.clone();
    f.kind = kind.to_owned();
    f.error = text.to_owned();
    f
}

/// A group as a screen reader names its links: `webhook.deliver, permanent, permanent`.
fn group_name(g: &PreviewGroup) -> String {
    format!(
        "{}, {}, {}",
        g.kind,
        g.class.map_or("no class", |c| c.as_str()),
        g.reason.map_or("no reason", |r| r.as_str())
    )
}

/// The dry run's groups: each with how many, when the first and the last of them died, and
/// whether their dependency (or kind) has succeeded since, with links to list and to review.
pub(crate) fn groups_table(
    p: &RedrivePreview,
    base: &FilterForm,
    now: chrono::DateTime<chrono::Utc>,
) -> Markup {
    html! {
        div.scroll data-scroll {
            table.grid #groups {
                thead {
                    tr {
                        th { "Kind" } th { "Class" } th { "Reason" } th.num { "Dead" }
                        th { "First death" } th { "Last death" } th { "Succeeded since" } th {}
                    }
                }
                tbody {
                    @for g in &p.groups {
                        @let f = group_filter(base, g);
                        @let list = query(&[
                            ("status", "dead"),
                            ("kind", &g.kind),
                            ("class", &f.class),
                            ("reason", &f.reason),
                        ]);
                        tr {
                            td { (g.kind) }
                            td {
                                @match g.class {
                                    Some(c) => (badge(c.as_str())),
                                    None => (or_dash(None)),
                                }
                            }
                            td { (or_dash(g.reason.map(|r| r.as_str()))) }
                            td.num { (count(g.count)) }
                            td { (ended(g.first_ended_at, now)) }
                            td { (ended(g.last_ended_at, now)) }
                            td.recovered {
                                @match g.recovered_at {
                                    Some(t) => { span.badge.b-succeeded { "yes" } " " (when(t, now)) },
                                    None => span.badge.b-held { "not since" },
                                }
                            }
                            td.right { (group_links(&list, &f, &group_name(g))) }
                        }
                    }
                }
            }
        }
    }
}

/// The distinct last errors of the matches, per kind, the most frequent first: each a group of
/// its own, with how many, when the first and the last of them died, an example, and links to
/// list them and to review their re-drive (`base` narrowed to the kind and the error's text: a
/// literal search, so a longer message that contains it comes too).
pub(crate) fn errors(
    p: &RedrivePreview,
    base: &FilterForm,
    now: chrono::DateTime<chrono::Utc>,
) -> Markup {
    let errors = &p.errors;
    html! {
        @if !errors.is_empty() {
            h2 { "Distinct errors" }
            div.scroll data-scroll {
                table.grid #errors {
                    thead {
                        tr {
                            th { "Kind" } th { "Last error" } th.num { "Operations" }
                            th { "First death" } th { "Last death" } th { "Example" } th {}
                        }
                    }
                    tbody {
                        @for e in errors {
                            tr {
                                td { (e.kind) }
                                td.err { (or_dash(e.error.as_deref())) }
                                td.num { (count(e.count)) }
                                td { (ended(e.first_ended_at, now)) }
                                td { (ended(e.last_ended_at, now)) }
                                td.mono {
                                    a href={ "/operations/" (e.example) } { (short_id(&e.example)) }
                                }
                                td.right {
                                    // An operation without a kept error cannot be narrowed to
                                    // it, nor to an error longer than a search may be. The
                                    // search is literal and case-insensitive: it also takes in a
                                    // longer message that contains this one.
                                    @if let Some(text) = e.error.as_deref().filter(|t| t.chars().count() <= oprec_ops::filter::MAX_SEARCH) {
                                        @let f = error_filter(base, &e.kind, text);
                                        @let list = query(&[
                                            ("status", "dead"),
                                            ("kind", &f.kind),
                                            ("error", &f.error),
                                        ]);
                                        (group_links(&list, &f, &format!("{}, {}", e.kind, text)))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub(crate) fn samples(p: &RedrivePreview) -> Markup {
    if p.samples.is_empty() {
        return html! {};
    }
    html! {
        h2 { "Sample errors" }
        div.scroll data-scroll {
            table.grid #samples {
                thead { tr { th { "ID" } th { "Kind" } th { "Last error" } } }
                tbody {
                    @for s in &p.samples {
                        tr {
                            td.mono { a href={ "/operations/" (s.id) } { (short_id(&s.id)) } }
                            td { (s.kind) }
                            td.err { (or_dash(s.error.as_deref())) }
                        }
                    }
                }
            }
        }
    }
}

/// The filter a page was asked with, and the dry run of re-driving it (nothing changes): the
/// operator library's review, as the CLI makes it.
pub(crate) async fn dry_run(
    state: &State,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<(FilterForm, RedriveReview), AppError> {
    let f = form(q)?;
    let now = state.store.now().await.map_err(store)?;
    let input = RedriveInput {
        filter: f.input(),
        include_cancelled: f.include_cancelled(),
        ..RedriveInput::default()
    };
    let review = RedriveRequest::check(&input, Spelling::Fields, now)?
        .review(state.store.as_ref())
        .await?;
    Ok((f, review))
}

/// `GET /dead`: dead operations grouped by kind, class and reason.
pub(crate) async fn groups(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let (f, review) = dry_run(&state, q).await?;
    let p = &review.preview;
    let body = html! {
        div.head {
            h1 { "Dead letters" }
            p.muted {
                "Dead operations grouped by kind, last failure class and terminal reason. Pick a \
                 group (or filter) to review a re-drive: nothing changes until you confirm."
            }
        }
        (filter_form("/dead", &f, "Filter"))
        div #dead-live data-live-region {
            @if p.matched == 0 {
                p.empty { "No dead operation matches. Nothing to re-drive." }
            } @else {
                section.panel {
                    div.panel-h {
                        h2 {
                            (count(p.matched)) " dead operation" @if p.matched != 1 { "s" }
                            " in " (p.groups.len()) " group" @if p.groups.len() != 1 { "s" }
                        }
                        a.button.primary #review-all href={ "/redrive" (f.query()) } {
                            "Review re-drive of all " (count(p.matched)) "…"
                        }
                    }
                    (groups_table(p, &f, review.began))
                    (errors(p, &f, review.began))
                    (samples(p))
                }
            }
        }
    };
    Ok(Page::new("Dead letters", Nav::Dead, &viewer)
        .body(body)
        .live(crate::operations_page::LIST_LIVE_SECONDS))
}

/// The filter as a sentence.
pub(crate) fn describe(f: &OperationFilter) -> String {
    let mut parts = Vec::new();
    if !f.ids.is_empty() {
        parts.push(format!(
            "id {}",
            f.ids
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !f.kinds.is_empty() {
        parts.push(format!("kind {}", f.kinds.join(", ")));
    }
    if !f.classes.is_empty() {
        parts.push(format!(
            "class {}",
            f.classes
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !f.reasons.is_empty() {
        parts.push(format!(
            "reason {}",
            f.reasons
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(d) = &f.dependency {
        parts.push(format!("dependency {d}"));
    }
    if let Some(e) = &f.error_contains {
        parts.push(format!("error containing “{e}”"));
    }
    if let Some(t) = f.terminal_since {
        parts.push(format!("ended since {}", time(t)));
    }
    if let Some(t) = f.terminal_until {
        parts.push(format!("ended before {}", time(t)));
    }
    if parts.is_empty() {
        "every dead operation".into()
    } else {
        parts.join(" · ")
    }
}
