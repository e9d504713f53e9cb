//! Re-driving dead operations: the dry run of a filter (how many would be re-driven, grouped,
//! with sample errors, and how many matches are refused because they are not terminal), the
//! confirmation with a mode, a rate and a note, and the start of the re-drive as a background job
//! whose progress [`crate::redrive_progress`] shows.

use std::collections::HashMap;

use axum::Form;
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_core::PayloadMode;
use oprec_core::operator::RedrivePreview;
use oprec_ops::MAX_REASON;
use oprec_ops::redrive::{RedriveInput, RedriveRequest, RedriveReview, payload_text};
use oprec_ops::{Spelling, Who};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::dead_page::{describe, dry_run, errors, groups_table, samples};
use crate::error::{AppError, store};
use crate::filters::FilterForm;
use crate::html::count;
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// `GET /redrive`: the dry run, and the confirmation form.
pub(crate) async fn preview(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let (f, review) = dry_run(&state, q).await?;
    let (filter, p) = (&review.request.filter, &review.preview);
    let here = format!("/redrive{}", f.query());
    let body = html! {
        div.head {
            p.crumbs { a href="/dead" { "Dead letters" } " / re-drive" }
            h1 { "Re-drive: dry run" }
            p.muted { "Filter: " (describe(filter)) ". Nothing has changed yet." }
        }
        div.cards {
            div.card {
                div.card-t { "Would be re-driven" }
                div.card-v #matched { (count(p.matched)) }
                div.card-n { (review.request.terminal_text()) " operations that match" }
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
            (safety(&review))
            section.panel {
                h2 { "Groups" }
                (groups_table(p, &f, review.began))
                (errors(&review.preview, &f, review.began))
                (samples(p))
                (payloads(&review))
            }
            section.panel.confirm {
                h2 { "Confirm" }
                @match viewer.why_not(&here) {
                    Some(why) => p.notice { (why) },
                    None => (confirm_form(&viewer, &f, p)),
                }
            }
        }
    };
    Ok(Page::new("Re-drive", Nav::Dead, &viewer).body(body))
}

/// Is it safe? What the operator library warns of (permanent and crash-loop groups, a dependency
/// that has not succeeded since the last death) and the controls in force that would hold some of
/// the re-driven operations back; or that nothing stands in the way.
fn safety(review: &RedriveReview) -> Markup {
    let warnings = review.warnings();
    html! {
        section.panel #safety {
            h2 { "Is it safe?" }
            @if warnings.is_empty() && review.controls.is_empty() {
                p.notice.good #safe {
                    "No warning: no group died of a permanent failure or a crash loop, and every \
                     group's dependency has succeeded since its last death."
                }
            }
            @if !warnings.is_empty() {
                ul.warnings #warnings {
                    @for w in &warnings {
                        li.notice.warn data-what=(w.what) { (w.text) }
                    }
                }
            }
            @if !review.controls.is_empty() {
                h3 { "Controls in force" }
                p.muted.small {
                    "Re-driven operations these hold back wait until the control lifts; the pace \
                     starts from then."
                }
                table.kv #redrive-controls {
                    @for (c, n) in &review.controls {
                        tr {
                            td { (c.action.as_str()) " " (c.scope.as_str()) " " (c.value) }
                            td.num { "holds back " (count(*n)) }
                        }
                    }
                }
            }
        }
    }
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
                    "or spread over "
                    input name="spread" placeholder="e.g. 30m" size="8";
                }
                label {
                    "Extend the deadline by "
                    input name="extend" placeholder="e.g. 24h" size="8";
                }
            }
            p.muted.small {
                "A rate or a spread staggers when the operations become eligible, so a recovered \
                 dependency is not hit by the whole pile at once."
            }
            label {
                "Note for the audit log "
                input name="note" maxlength=(MAX_REASON)
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

/// Whether each kind's payload is replayed as a snapshot or read afresh, as the operations keep
/// it.
fn payloads(review: &RedriveReview) -> Markup {
    let modes = review.payload_modes();
    html! {
        @if !modes.is_empty() {
            h2 { "Payloads" }
            table.kv #payloads {
                @for (kind, mode) in &modes {
                    tr {
                        td { (kind) }
                        td {
                            @match *mode {
                                "mixed" => "mixed: some replay a snapshot, others act on today's data",
                                m => (payload_text(m.parse::<PayloadMode>().ok())),
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The form's pace: a rate (a number per second, minute or hour) or a spread, as the grammar
/// reads it (`500/s`, `30m`).
fn pace(m: &HashMap<String, String>) -> Result<(Option<String>, Option<String>), AppError> {
    let g = |k: &str| m.get(k).map(|s| s.trim()).unwrap_or("");
    let rate = match g("rate") {
        "" => None,
        r => {
            let unit = match g("per") {
                "second" | "" => "s",
                "minute" => "m",
                "hour" => "h",
                _ => {
                    return Err(AppError::bad_request(
                        "The rate is per second, minute or hour.",
                    ));
                }
            };
            Some(format!("{r}/{unit}"))
        }
    };
    let spread = Some(g("spread").to_owned()).filter(|s| !s.is_empty());
    Ok((rate, spread))
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
    let expected: u64 = m
        .get("expected")
        .and_then(|e| e.trim().parse().ok())
        .ok_or_else(|| {
            AppError::bad_request(
                "The confirmation did not say how many operations the dry run showed; review the \
                 re-drive again.",
            )
        })?;
    let as_new = match m.get("mode").map(|s| s.trim()).unwrap_or("in_place") {
        "in_place" => false,
        "as_new" => true,
        _ => {
            return Err(AppError::bad_request(
                "Re-drive either in place or as new operations.",
            ));
        }
    };
    let (rate, spread) = pace(&m)?;
    let input = RedriveInput {
        filter: f.input(),
        include_cancelled: f.include_cancelled(),
        as_new,
        extend_deadline: m
            .get("extend")
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty()),
        rate,
        spread,
        limit: Some(expected),
        batch: None,
    };
    let note = oprec_ops::reason(
        "note",
        m.get("note").map(|n| n.trim()).filter(|n| !n.is_empty()),
    )?;
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    let review = RedriveRequest::check(&input, Spelling::Fields, now)?
        .review(state.store.as_ref())
        .await?;
    let id = state.jobs.start(state.store.clone(), review, who, note);
    Ok(Redirect::to(&format!("/jobs/{id}")).into_response())
}
