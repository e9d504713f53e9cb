//! Re-driving dead operations: the dry run of a filter (how many would be re-driven, grouped,
//! with sample errors, and how many matches are refused because they are not terminal), the
//! confirmation with a mode, a rate and a note, and the start of the re-drive as a background job
//! whose progress [`crate::redrive_progress`] shows.

use std::collections::HashMap;

use axum::Form;
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use axum::response::{IntoResponse, Redirect, Response};
use chrono::Duration;
use maud::{Markup, html};
use oprec_core::operator::{RedriveMode, RedrivePreview};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::dead_page::{describe, dry_run, groups_table, samples};
use crate::error::{AppError, store};
use crate::filters::{FilterForm, duration};
use crate::html::count;
use crate::jobs::RedrivePlan;
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// The highest rate accepted, per second.
const MAX_RATE: f64 = 100_000.0;

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
