//! A re-drive's progress: how many of the confirmed operations are re-driven so far, at what pace,
//! how many of them have become eligible under the confirmed rate, and what became of them. The
//! page follows itself (in place with the script, by reloading without it) until the job is done
//! and the last one is eligible; then its outcome keeps following the workers, slower.

use axum::extract::Path;
use chrono::{DateTime, Utc};
use maud::html;
use oprec_core::Status;
use oprec_core::operator::{CountMatchingParams, OperationFilter};

use crate::State;
use crate::dead_page::describe;
use crate::error::{AppError, store};
use crate::html::{badge, count, or_dash, span, time};
use crate::jobs::JobState;
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

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
    let status = match (job.finished, &job.error) {
        (false, _) => "running",
        (true, Some(_)) => "stopped",
        (true, None) => "done",
    };
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
