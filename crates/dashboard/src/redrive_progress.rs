//! A re-drive's progress: how many of the confirmed operations are re-driven so far, at what pace,
//! how many of them have become eligible under the confirmed rate, and what became of them. The
//! page follows itself (in place with the script, by reloading without it) until the job is done
//! and the last one is eligible; then its outcome keeps following the workers, slower.

use std::collections::HashMap;

use axum::Form;
use axum::extract::Path;
use axum::extract::rejection::FormRejection;
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, Utc};
use maud::html;
use oprec_core::Status;
use oprec_core::operator::{CountMatchingParams, OperationFilter, RedriveJobState};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::dead_page::describe;
use crate::error::{AppError, store};
use crate::html::{badge, count, or_dash, span, time};
use crate::jobs::JobState;
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;
use oprec_ops::Who;

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
    let request = &job.review.request;
    let planned = job.review.planned;
    let status = match (job.finished, job.end) {
        (false, _) if job.stop_asked_by.is_some() => "stopping",
        (false, _) => "running",
        (true, Some(RedriveJobState::Braked)) => "braked",
        (true, Some(RedriveJobState::Done)) if job.error.is_none() => "done",
        (true, Some(RedriveJobState::Failed)) => "failed",
        (true, None) if job.error.is_none() => "done",
        (true, _) => "stopped",
    };
    let here = format!("/jobs/{}", id.trim());
    let mode = request.mode_text();
    let pace = request.pace.describe(planned);
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
                .operation_count_matching(CountMatchingParams { filter })
                .await
                .map_err(store)?,
        )
    } else {
        None
    };
    let body = html! {
        div #job data-live-region {
            div.head {
                p.crumbs { a href="/dead" { "Dead letters" } " / re-drive" }
                h1 { "Re-drive " (status) }
                p.muted {
                    "Filter: " (describe(&request.filter)) " · by " (job.actor)
                    " · confirmed " (time(job.started()))
                }
            }
            section.panel {
                progress #progress max=(planned.max(1)) value=(job.done) {}
                p.big #job-status data-finished=(job.finished) {
                    (count(job.done)) " of " (count(planned)) " re-driven"
                }
                @if let Some(e) = &job.error {
                    p.notice.bad #job-error { (e) }
                }
                @if !job.finished {
                    @if let Some(by) = &job.stop_asked_by {
                        p.notice #stopping {
                            "Stopping, as " (by) " asked: the re-drive ends before its next batch. \
                             What it released stays re-driven."
                        }
                    } @else if viewer.why_not(&here).is_none() {
                        form.inline #stop-form method="post" action={ (here) "/stop" } {
                            (viewer.csrf_field())
                            button.danger type="submit" aria-label="Stop this re-drive" { "Stop" }
                            span.muted.small {
                                " before its next batch; what it released stays re-driven, and \
                                 reviewing it again re-drives the rest"
                            }
                        }
                    }
                    @if let Some(left) = job.waiting {
                        p.notice.warn #waiting {
                            "Waiting: " (count(left)) " left to re-drive are held back by a pause \
                             or postponement in force; the re-drive goes on, at its pace, once it \
                             lifts (see " a href="/controls" { "controls" } ")."
                        }
                    }
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
                    @let of = |s: Status| counts.get(&s).copied().unwrap_or(0);
                    p #summary {
                        (count(release.as_ref().map_or(job.done, |r| r.eligible)))
                        " eligible now · " (count(of(Status::Succeeded))) " succeeded · "
                        (count(of(Status::Dead))) " died again"
                    }
                    table.kv #outcome {
                        @for s in Status::ALL {
                            @if let Some(n) = counts.get(s) {
                                tr { td { (badge(s.as_str())) } td.num { (count(*n)) } }
                            }
                        }
                    }
                    @if job.ids.len() as u64 == job.done {
                        p.muted.small { "This follows them as workers pick them up (reload it when scripts are off)." }
                    }
                }
            }
        }
    };
    let releasing = release.is_some_and(|r| r.releasing);
    let mut page = Page::new("Re-drive", Nav::Dead, &viewer).body(body);
    if !job.finished || releasing {
        page = page.refresh(if job.finished { 2 } else { 1 });
    } else {
        page = page.live(crate::operations_page::LIST_LIVE_SECONDS);
    }
    Ok(page)
}

/// `POST /jobs/{id}/stop`: asks a running re-drive to stop before its next batch, as `oprec
/// redrive stop` does (the job's row records who asked), and goes back to its progress.
pub(crate) async fn stop(
    state: State,
    caller: Caller,
    Path(id): Path<String>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, _) = authorize_form(&state, &caller, form)?;
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    let id = id.trim();
    let Some(job) = state.jobs.get(id) else {
        return Err(AppError::not_found(
            "No re-drive with this id is known to this dashboard; `oprec redrive status` lists \
             every re-drive and `oprec redrive stop` stops one.",
        ));
    };
    if job.finished {
        return Err(AppError::bad_request(
            "This re-drive has already ended: there is nothing to stop.",
        ));
    }
    match &job.job_id {
        // Through the job's row, so that it records who stopped it.
        Some(row) => {
            oprec_ops::redrive::stop(state.store.as_ref(), row, &who).await?;
        }
        // Not started yet: it has no row to mark.
        None => job.stop.cancel(),
    }
    // Only once the stop is accepted does the page say it is stopping.
    state.jobs.stop_asked(id, &who.actor);
    Ok(Redirect::to(&format!("/jobs/{id}")).into_response())
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
    let spacing = job
        .review
        .request
        .pace
        .spacing(job.review.planned)
        .num_microseconds()
        .unwrap_or(0);
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
