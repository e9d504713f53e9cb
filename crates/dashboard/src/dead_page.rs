//! Dead letters and their re-drive: grouped by kind, failure class and terminal reason; a filter
//! leads to the dry run (how many, grouped, sample errors, how many matches are not terminal and
//! so refused), which leads to the confirmation with a rate, which starts the re-drive and shows
//! its progress.

use std::collections::HashMap;
use std::fmt::Write as _;

use axum::Form;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::Duration;
use oprec_core::operator::{OperationFilter, RedriveMode, RedrivePreview};
use oprec_core::{FailureClass, Status, TerminalReason};

use maud::PreEscaped;

use crate::State;
use crate::error::{AppError, store};
use crate::filters::{FilterForm, duration};
use crate::html::{badge, count, esc, or_dash, query, select_options, short_id, span, time};
use crate::jobs::RedrivePlan;
use crate::layout::{Nav, Page};
use crate::operations_page::form;
use crate::security::{Caller, Viewer, authorize_form};

/// Sample errors shown in a dry run.
const SAMPLES: u32 = 8;
/// The highest rate accepted, per second.
const MAX_RATE: f64 = 100_000.0;

fn filter_form(action: &str, f: &FilterForm, button: &str) -> String {
    let classes: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
    let reasons: Vec<&str> = TerminalReason::ALL.iter().map(|c| c.as_str()).collect();
    format!(
        r#"<form method="get" action="{action}" class="filters" id="dead-filter">
<label>Kind<input name="kind" value="{}" placeholder="any" maxlength="200"></label>
<label>Failure class<select name="class">{}</select></label>
<label>Terminal reason<select name="reason">{}</select></label>
<label>Error contains<input name="error" value="{}" placeholder="text in the last error" maxlength="200"></label>
<label>Dependency<input name="dependency" value="{}" placeholder="any" maxlength="200"></label>
<label>Ended since<input name="since" value="{}" placeholder="24h or 2026-01-05T09:00"></label>
<label>Ended before<input name="until" value="{}" placeholder="10m or RFC 3339"></label>
<div class="actions"><button type="submit" class="primary">{button}</button></div>
</form>"#,
        esc(f.kind.trim()),
        select_options(&f.class, &classes),
        select_options(&f.reason, &reasons),
        esc(f.error.trim()),
        esc(f.dependency.trim()),
        esc(f.since.trim()),
        esc(f.until.trim()),
    )
}

fn groups_table(p: &RedrivePreview, base: &FilterForm) -> String {
    let mut t = String::from(
        r#"<table class="grid" id="groups"><thead><tr><th>Kind</th><th>Class</th><th>Reason</th><th class="num">Dead</th><th></th></tr></thead><tbody>"#,
    );
    for g in &p.groups {
        let mut f = base.clone();
        f.kind = g.kind.clone();
        f.class = g.class.map(|c| c.as_str().to_owned()).unwrap_or_default();
        f.reason = g.reason.map(|r| r.as_str().to_owned()).unwrap_or_default();
        let _ = write!(
            t,
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="num">{}</td><td class="right"><a href="/operations{}">list</a> · <a class="button small" href="/redrive{}">Review re-drive…</a></td></tr>"#,
            esc(&g.kind),
            g.class
                .map(|c| badge(c.as_str()))
                .unwrap_or_else(|| or_dash(None)),
            or_dash(g.reason.map(|r| r.as_str())),
            count(g.count),
            esc(&query(&[
                ("status", "dead"),
                ("kind", &g.kind),
                ("class", &f.class),
                ("reason", &f.reason)
            ])),
            esc(&f.query()),
        );
    }
    t.push_str("</tbody></table>");
    t
}

fn samples(p: &RedrivePreview) -> String {
    if p.samples.is_empty() {
        return String::new();
    }
    let mut t = String::from(
        r#"<h2>Sample errors</h2><table class="grid" id="samples"><thead><tr><th>ID</th><th>Kind</th><th>Last error</th></tr></thead><tbody>"#,
    );
    for s in &p.samples {
        let _ = write!(
            t,
            r#"<tr><td class="mono"><a href="/operations/{}">{}</a></td><td>{}</td><td class="err">{}</td></tr>"#,
            s.id,
            short_id(&s.id),
            esc(&s.kind),
            or_dash(s.error.as_deref())
        );
    }
    t.push_str("</tbody></table>");
    t
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
    let mut b = String::from(
        r#"<div class="head"><h1>Dead letters</h1><p class="muted">Dead operations grouped by kind, last failure class and terminal reason. Pick a group (or filter) to review a re-drive: nothing changes until you confirm.</p></div>"#,
    );
    b.push_str(&filter_form("/dead", &f, "Filter"));
    if p.matched == 0 {
        b.push_str(r#"<p class="empty">No dead operation matches. Nothing to re-drive.</p>"#);
    } else {
        let _ = write!(
            b,
            r#"<section class="panel"><div class="panel-h"><h2>{} dead operation{} in {} group{}</h2><a class="button primary" href="/redrive{}" id="review-all">Review re-drive of all {}…</a></div>{}{}</section>"#,
            count(p.matched),
            if p.matched == 1 { "" } else { "s" },
            p.groups.len(),
            if p.groups.len() == 1 { "" } else { "s" },
            esc(&f.query()),
            count(p.matched),
            groups_table(&p, &f),
            samples(&p)
        );
    }
    Ok(Page::new("Dead letters", Nav::Dead, &viewer).body(PreEscaped(b)))
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
    let mut b = format!(
        r#"<div class="head"><p class="crumbs"><a href="/dead">Dead letters</a> / re-drive</p><h1>Re-drive: dry run</h1><p class="muted">Filter: {}. Nothing has changed yet.</p></div>"#,
        esc(&describe(&filter))
    );
    let _ = write!(
        b,
        r#"<div class="cards"><div class="card"><div class="card-t">Would be re-driven</div><div class="card-v" id="matched">{}</div><div class="card-n">dead operations that match</div></div><div class="card{}"><div class="card-t">Refused</div><div class="card-v" id="not-terminal">{}</div><div class="card-n">match but are not terminal: a re-drive never overlaps an attempt</div></div></div>"#,
        count(p.matched),
        if p.not_terminal > 0 { " warn" } else { "" },
        count(p.not_terminal)
    );
    if p.matched == 0 {
        b.push_str(r#"<p class="empty">No dead operation matches this filter: there is nothing to re-drive. <a href="/dead">Back to dead letters</a></p>"#);
        return Ok(Page::new("Re-drive", Nav::Dead, &viewer).body(PreEscaped(b)));
    }
    let _ = write!(
        b,
        r#"<section class="panel"><h2>Groups</h2>{}{}</section>"#,
        groups_table(&p, &f),
        samples(&p)
    );
    b.push_str(r#"<section class="panel confirm"><h2>Confirm</h2>"#);
    match viewer.why_not(&here) {
        Some(why) => {
            let _ = write!(b, r#"<p class="notice">{why}</p>"#);
        }
        None => {
            let _ = write!(
                b,
                r#"<form method="post" action="/redrive" class="stack" id="redrive-form">
{csrf}{hidden}<input type="hidden" name="expected" value="{matched}">
<fieldset><legend>How</legend>
<label class="radio"><input type="radio" name="mode" value="in_place" checked> In place: the same ids, attempts reset to 0</label>
<label class="radio"><input type="radio" name="mode" value="as_new"> As new operations linked by <code>redrive_of</code>; the dead ones stay as they are</label></fieldset>
<div class="row"><label>Rate <input name="rate" id="rate" inputmode="decimal" placeholder="all at once" size="10"></label>
<label>per <select name="per"><option value="second">second</option><option value="minute" selected>minute</option><option value="hour">hour</option></select></label>
<label>Extend the deadline by <input name="extend" placeholder="e.g. 24h" size="8"></label></div>
<p class="muted small">The rate staggers when the operations become eligible, so a recovered dependency is not hit by the whole pile at once.</p>
<label>Note for the audit log <input name="note" maxlength="500" placeholder="why (e.g. provider fixed in incident 412)"></label>
<div class="actions"><button type="submit" class="danger" id="confirm-redrive">Re-drive {matched_text} operation{s}</button> <a href="/dead" class="button">Cancel</a></div>
</form>"#,
                csrf = viewer.csrf_field(),
                hidden = f.hidden_inputs(),
                matched = p.matched,
                matched_text = count(p.matched),
                s = if p.matched == 1 { "" } else { "s" },
            );
        }
    }
    b.push_str("</section>");
    Ok(Page::new("Re-drive", Nav::Dead, &viewer).body(PreEscaped(b)))
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
    let mut b = format!(
        r#"<div class="head"><p class="crumbs"><a href="/dead">Dead letters</a> / re-drive</p><h1>Re-drive {}</h1><p class="muted">Filter: {} · by {} · confirmed {}</p></div>"#,
        if job.finished {
            if job.error.is_some() {
                "stopped"
            } else {
                "done"
            }
        } else {
            "running"
        },
        esc(&describe(&job.plan.filter)),
        esc(&job.plan.actor),
        esc(&time(job.started)),
    );
    let _ = write!(
        b,
        r#"<section class="panel"><progress max="{}" value="{}" id="progress"></progress><p class="big" id="job-status" data-finished="{}">{} of {} re-driven</p>"#,
        planned.max(1),
        job.done,
        job.finished,
        count(job.done),
        count(planned)
    );
    if let Some(e) = &job.error {
        let _ = write!(b, r#"<p class="notice bad">{}</p>"#, esc(e));
    }
    let mode = match job.plan.mode {
        RedriveMode::InPlace { .. } => "in place (the same ids, attempts reset)",
        RedriveMode::AsNew { .. } => "as new operations linked by redrive_of",
    };
    let pace = match job.plan.rate {
        Some(r) if r >= 1.0 => format!("{r:.1} per second"),
        Some(r) => format!("{:.1} per minute", r * 60.0),
        None => "all at once".into(),
    };
    let _ = write!(
        b,
        r#"<dl class="record"><dt>Mode</dt><dd>{}</dd><dt>Pace</dt><dd>{}</dd><dt>Eligible</dt><dd>{}</dd><dt>Batches</dt><dd>{}</dd></dl>"#,
        esc(mode),
        esc(&pace),
        match (job.first, job.last) {
            (Some(f), Some(l)) => format!("from {} to {}", esc(&time(f)), esc(&time(l))),
            _ => or_dash(None),
        },
        job.batches
    );
    // The rate at work: how many have become eligible so far.
    let now = state.store.now().await.map_err(store)?;
    let mut releasing = false;
    if let (true, Some(first), Some(last)) = (job.finished, job.first, job.last) {
        let spacing = job.plan.spacing.num_microseconds().unwrap_or(0);
        let eligible = if now >= last {
            job.done
        } else if now < first || spacing <= 0 {
            0
        } else {
            let passed = (now - first).num_microseconds().unwrap_or(0);
            (u64::try_from(passed / spacing).unwrap_or(0) + 1).min(job.done)
        };
        releasing = now < last;
        let _ = write!(
            b,
            r#"<p id="released"><progress max="{}" value="{eligible}"></progress>{} of {} eligible now{}</p>"#,
            job.done.max(1),
            count(eligible),
            count(job.done),
            if releasing {
                format!("; the last at {} (in {})", time(last), span(last - now))
            } else {
                String::new()
            }
        );
    }
    if job.finished && !job.ids.is_empty() {
        let counts = state
            .store
            .operation_count_matching(&OperationFilter {
                ids: job.ids.clone(),
                ..OperationFilter::default()
            })
            .await
            .map_err(store)?;
        b.push_str(r#"<h2>What became of them</h2><table class="kv" id="outcome">"#);
        for s in Status::ALL {
            if let Some(n) = counts.get(s) {
                let _ = write!(
                    b,
                    r#"<tr><td>{}</td><td class="num">{}</td></tr>"#,
                    badge(s.as_str()),
                    count(*n)
                );
            }
        }
        b.push_str("</table>");
        if job.ids.len() as u64 == job.done {
            b.push_str(
                r#"<p class="muted small">Reload to follow them as workers pick them up.</p>"#,
            );
        }
    }
    b.push_str("</section>");
    let mut page = Page::new("Re-drive", Nav::Dead, &viewer).body(PreEscaped(b));
    if !job.finished || releasing {
        page = page.refresh(if job.finished { 2 } else { 1 });
    }
    Ok(page)
}
