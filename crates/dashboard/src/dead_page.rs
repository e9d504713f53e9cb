//! Dead letters and their re-drive: grouped by kind, failure class and terminal reason; a filter
//! leads to the dry run (how many, grouped, sample errors, how many matches are not terminal and
//! so refused), which leads to the confirmation with a rate, which starts the re-drive and shows
//! its progress.

use std::collections::HashMap;

use axum::Form;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, Duration, Utc};
use maud::{Markup, html};
use oprec_core::operator::{OperationFilter, PreviewGroup, RedriveMode, RedrivePreview};
use oprec_core::{FailureClass, Status, TerminalReason};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::error::{AppError, store};
use crate::filters::{FilterForm, duration};
use crate::html::{badge, count, or_dash, select_options, short_id, span, time};
use crate::jobs::{JobState, RedrivePlan};
use crate::layout::{Nav, Page};
use crate::operations_page::form;
use crate::query_string::query;
use crate::viewer::Viewer;

/// Sample errors shown in a dry run.
const SAMPLES: u32 = 8;
/// The highest rate accepted, per second.
const MAX_RATE: f64 = 100_000.0;

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
                    maxlength="200";
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

fn groups_table(p: &RedrivePreview, base: &FilterForm) -> Markup {
    html! {
        table.grid #groups {
            thead {
                tr { th { "Kind" } th { "Class" } th { "Reason" } th.num { "Dead" } th {} }
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
                        td.right {
                            a href={ "/operations" (list) } { "list" } " · "
                            a.button.small href={ "/redrive" (f.query()) } { "Review re-drive…" }
                        }
                    }
                }
            }
        }
    }
}

fn samples(p: &RedrivePreview) -> Markup {
    if p.samples.is_empty() {
        return html! {};
    }
    html! {
        h2 { "Sample errors" }
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

/// The filter a page was asked with, as the form and as the store's filter, and what re-driving
/// it would do (nothing changes).
async fn dry_run(
    state: &State,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<(FilterForm, OperationFilter, RedrivePreview), AppError> {
    let f = form(q)?;
    let now = state.store.now().await.map_err(store)?;
    let filter = f.operation_filter(now)?;
    let p = state
        .store
        .redrive_preview(&filter, false, SAMPLES)
        .await
        .map_err(store)?;
    Ok((f, filter, p))
}

/// `GET /dead`: dead operations grouped by kind, class and reason.
pub(crate) async fn groups(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let (f, _, p) = dry_run(&state, q).await?;
    let body = html! {
        div.head {
            h1 { "Dead letters" }
            p.muted {
                "Dead operations grouped by kind, last failure class and terminal reason. Pick a \
                 group (or filter) to review a re-drive: nothing changes until you confirm."
            }
        }
        (filter_form("/dead", &f, "Filter"))
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
                (groups_table(&p, &f))
                (samples(&p))
            }
        }
    };
    Ok(Page::new("Dead letters", Nav::Dead, &viewer).body(body))
}

/// The filter as a sentence.
fn describe(f: &OperationFilter) -> String {
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

/// `GET /redrive`: the dry run, and the confirmation form.
pub(crate) async fn preview(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let (f, filter, p) = dry_run(&state, q).await?;
    let here = format!("/redrive{}", f.query());
    let body = html! {
        div.head {
            p.crumbs { a href="/dead" { "Dead letters" } " / re-drive" }
            h1 { "Re-drive: dry run" }
            p.muted { "Filter: " (describe(&filter)) ". Nothing has changed yet." }
        }
        div.cards {
            div.card {
                div.card-t { "Would be re-driven" }
                div.card-v #matched { (count(p.matched)) }
                div.card-n { "dead operations that match" }
            }
            div.card.warn[p.not_terminal > 0] {
                div.card-t { "Refused" }
                div.card-v #not-terminal { (count(p.not_terminal)) }
                div.card-n { "match but are not terminal: a re-drive never overlaps an attempt" }
            }
        }
        @if p.matched == 0 {
            p.empty {
                "No dead operation matches this filter: there is nothing to re-drive. "
                a href="/dead" { "Back to dead letters" }
            }
        } @else {
            section.panel {
                h2 { "Groups" }
                (groups_table(&p, &f))
                (samples(&p))
            }
            section.panel.confirm {
                h2 { "Confirm" }
                @match viewer.why_not(&here) {
                    Some(why) => p.notice { (why) },
                    None => (confirm_form(&viewer, &f, &p)),
                }
            }
        }
    };
    Ok(Page::new("Re-drive", Nav::Dead, &viewer).body(body))
}

/// The confirmation: how to re-drive, at what rate, and why.
fn confirm_form(viewer: &Viewer, f: &FilterForm, p: &RedrivePreview) -> Markup {
    html! {
        form.stack #redrive-form method="post" action="/redrive" {
            (viewer.csrf_field())
            (f.hidden_inputs())
            input type="hidden" name="expected" value=(p.matched);
            fieldset {
                legend { "How" }
                label.radio {
                    input type="radio" name="mode" value="in_place" checked;
                    " In place: the same ids, attempts reset to 0"
                }
                label.radio {
                    input type="radio" name="mode" value="as_new";
                    " As new operations linked by " code { "redrive_of" }
                    "; the dead ones stay as they are"
                }
            }
            div.row {
                label {
                    "Rate "
                    input name="rate" #rate inputmode="decimal" placeholder="all at once" size="10";
                }
                label {
                    "per "
                    select name="per" {
                        option value="second" { "second" }
                        option value="minute" selected { "minute" }
                        option value="hour" { "hour" }
                    }
                }
                label {
                    "Extend the deadline by "
                    input name="extend" placeholder="e.g. 24h" size="8";
                }
            }
            p.muted.small {
                "The rate staggers when the operations become eligible, so a recovered dependency \
                 is not hit by the whole pile at once."
            }
            label {
                "Note for the audit log "
                input name="note" maxlength="500"
                    placeholder="why (e.g. provider fixed in incident 412)";
            }
            div.actions {
                button.danger #confirm-redrive type="submit" {
                    "Re-drive " (count(p.matched)) " operation" @if p.matched != 1 { "s" }
                }
                " "
                a.button href="/dead" { "Cancel" }
            }
        }
    }
}

/// Operations per second from the form's rate and unit; `None` for all at once.
fn rate(m: &HashMap<String, String>) -> Result<Option<f64>, AppError> {
    let r = m.get("rate").map(|s| s.trim()).unwrap_or("");
    if r.is_empty() {
        return Ok(None);
    }
    let per = match m.get("per").map(|s| s.trim()).unwrap_or("second") {
        "second" | "" => 1.0,
        "minute" => 60.0,
        "hour" => 3600.0,
        _ => {
            return Err(AppError::bad_request(
                "The rate is per second, minute or hour.",
            ));
        }
    };
    match r.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n / per <= MAX_RATE => Ok(Some(n / per)),
        _ => Err(AppError::bad_request(format!(
            "The rate must be a positive number (at most {} per second), or empty for all at once.",
            count(MAX_RATE as u64)
        ))),
    }
}

/// `POST /redrive`: starts the confirmed re-drive and goes to its progress page.
pub(crate) async fn start(
    state: State,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, axum::extract::rejection::FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let f = FilterForm::from_map(&m);
    let now = state.store.now().await.map_err(store)?;
    let filter = f.operation_filter(now)?;
    let expected: u64 = m
        .get("expected")
        .and_then(|e| e.trim().parse().ok())
        .ok_or_else(|| {
            AppError::bad_request(
                "The confirmation did not say how many operations the dry run showed; review the \
                 re-drive again.",
            )
        })?;
    let extend = match m.get("extend").map(|s| s.trim()).unwrap_or("") {
        "" => None,
        e => Some(
            duration(e)
                .filter(|d| *d > Duration::zero())
                .ok_or_else(|| {
                    AppError::bad_request(
                        "Extend the deadline by a duration such as 90m, 24h or 7d.",
                    )
                })?,
        ),
    };
    let mode = match m.get("mode").map(|s| s.trim()).unwrap_or("in_place") {
        "in_place" => RedriveMode::InPlace {
            extend_deadline: extend,
        },
        "as_new" => RedriveMode::AsNew { deadline: extend },
        _ => {
            return Err(AppError::bad_request(
                "Re-drive either in place or as new operations.",
            ));
        }
    };
    let rate = rate(&m)?;
    let note = m
        .get("note")
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > 500) {
        return Err(AppError::bad_request("Keep the note under 500 characters."));
    }
    let p = state
        .store
        .redrive_preview(&filter, false, 0)
        .await
        .map_err(store)?;
    let spacing = match rate {
        Some(r) => Duration::microseconds((1_000_000.0 / r).round() as i64),
        None => Duration::zero(),
    };
    let plan = RedrivePlan {
        filter,
        mode,
        limit: expected.min(p.matched),
        spacing,
        rate,
        actor,
        note,
        matched: p.matched,
        not_terminal: p.not_terminal,
    };
    let id = state.jobs.start(state.store.clone(), plan, now);
    Ok(Redirect::to(&format!("/jobs/{id}")).into_response())
}

/// `GET /jobs/{id}`: a re-drive's progress.
pub(crate) async fn progress(
    state: State,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Page, AppError> {
    let Some(job) = state.jobs.get(id.trim()) else {
        return Err(AppError::not_found(
            "No re-drive with this id is known to this dashboard (it keeps the last 100 until it \
             restarts). The audit log has every re-drive.",
        ));
    };
    let planned = job.plan.limit;
    let status = match (job.finished, &job.error) {
        (false, _) => "running",
        (true, Some(_)) => "stopped",
        (true, None) => "done",
    };
    let mode = match job.plan.mode {
        RedriveMode::InPlace { .. } => "in place (the same ids, attempts reset)",
        RedriveMode::AsNew { .. } => "as new operations linked by redrive_of",
    };
    let pace = match job.plan.rate {
        Some(r) if r >= 1.0 => format!("{r:.1} per second"),
        Some(r) => format!("{:.1} per minute", r * 60.0),
        None => "all at once".into(),
    };
    // The rate at work: how many have become eligible so far.
    let now = state.store.now().await.map_err(store)?;
    let release = release(&job, now);
    let outcome = if job.finished && !job.ids.is_empty() {
        let filter = OperationFilter {
            ids: job.ids.clone(),
            ..OperationFilter::default()
        };
        Some(
            state
                .store
                .operation_count_matching(&filter)
                .await
                .map_err(store)?,
        )
    } else {
        None
    };
    let body = html! {
        div.head {
            p.crumbs { a href="/dead" { "Dead letters" } " / re-drive" }
            h1 { "Re-drive " (status) }
            p.muted {
                "Filter: " (describe(&job.plan.filter)) " · by " (job.plan.actor)
                " · confirmed " (time(job.started))
            }
        }
        section.panel {
            progress #progress max=(planned.max(1)) value=(job.done) {}
            p.big #job-status data-finished=(job.finished) {
                (count(job.done)) " of " (count(planned)) " re-driven"
            }
            @if let Some(e) = &job.error {
                p.notice.bad { (e) }
            }
            dl.record {
                dt { "Mode" } dd { (mode) }
                dt { "Pace" } dd { (pace) }
                dt { "Eligible" }
                dd {
                    @match (job.first, job.last) {
                        (Some(f), Some(l)) => { "from " (time(f)) " to " (time(l)) },
                        _ => (or_dash(None)),
                    }
                }
                dt { "Batches" } dd { (job.batches) }
            }
            @if let Some(r) = &release {
                p #released {
                    progress max=(job.done.max(1)) value=(r.eligible) {}
                    (count(r.eligible)) " of " (count(job.done)) " eligible now"
                    @if r.releasing {
                        "; the last at " (time(r.last)) " (in " (span(r.last - now)) ")"
                    }
                }
            }
            @if let Some(counts) = &outcome {
                h2 { "What became of them" }
                table.kv #outcome {
                    @for s in Status::ALL {
                        @if let Some(n) = counts.get(s) {
                            tr { td { (badge(s.as_str())) } td.num { (count(*n)) } }
                        }
                    }
                }
                @if job.ids.len() as u64 == job.done {
                    p.muted.small { "Reload to follow them as workers pick them up." }
                }
            }
        }
    };
    let releasing = release.is_some_and(|r| r.releasing);
    let mut page = Page::new("Re-drive", Nav::Dead, &viewer).body(body);
    if !job.finished || releasing {
        page = page.refresh(if job.finished { 2 } else { 1 });
    }
    Ok(page)
}

/// How far a finished re-drive's staggered eligible times have come.
struct Release {
    /// Operations eligible by now.
    eligible: u64,
    /// When the last one becomes eligible.
    last: DateTime<Utc>,
    /// Some are not eligible yet.
    releasing: bool,
}

fn release(job: &JobState, now: DateTime<Utc>) -> Option<Release> {
    let (true, Some(first), Some(last)) = (job.finished, job.first, job.last) else {
        return None;
    };
    let spacing = job.plan.spacing.num_microseconds().unwrap_or(0);
    let eligible = if now >= last {
        job.done
    } else if now < first || spacing <= 0 {
        0
    } else {
        let passed = (now - first).num_microseconds().unwrap_or(0);
        (u64::try_from(passed / spacing).unwrap_or(0) + 1).min(job.done)
    };
    Some(Release {
        eligible,
        last,
        releasing: now < last,
    })
}
