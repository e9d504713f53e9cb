//! A re-drive as a job: it releases its operations a little ahead of their eligible times, at its
//! pace, for as long as the pace takes, with a row in `redrive_jobs` that another process reads
//! (`oprec redrive status`), stops (`oprec redrive stop`) and resumes (`oprec redrive resume`).
//!
//! Why release over time instead of storing every eligible time up front: a control (a pause of
//! the kind, a postponement of the dependency) holds back claims, and when it lifts every
//! operation whose time had passed meanwhile became claimable in the same second, whatever pace
//! the re-drive had stored (150 re-driven at 20/s onto a postponed dependency all ran at once).
//! Staggering from a control's end cannot work for a pause, which has no end, nor for a control
//! set or lifted after the re-drive began. So the job leaves out what a control in force would
//! hold back, waits while only such operations are left, and releases them at its pace once the
//! control lifts; at most [`LOOKAHEAD`] of work is ever stored ahead of the clock. A re-drive with
//! no pace (all at once) has none to keep: it releases everything, and the claim holds back what
//! a control names until it lifts. Releasing over
//! time is also what lets a stop or the brake ([`BrakeRule`]) keep the rest back.

use std::collections::BTreeMap;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{
    BrakeRule, Control, CountMatchingParams, OperationFilter, PreviewGroup, RedriveJob,
    RedriveJobSaveParams, RedriveJobState, RedriveMode, RedriveParams, RedrivePreviewParams,
    Redriven,
};
use oprec_core::{ControlScope, OperationId, OperatorStore, Status};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::redrive::RedriveRequest;
use crate::{InputError, Pace, Spelling};

/// How far ahead of the clock a paced job stores eligible times: one second of work.
pub const LOOKAHEAD: Duration = Duration::seconds(1);

/// How long before the next operation's time a pass releases the next batch.
const MARGIN: Duration = Duration::milliseconds(100);

/// How long a job waits before looking again while only held-back operations are left.
const WAIT_TICK: StdDuration = StdDuration::from_secs(1);

/// What a job does, as its row keeps it for resumption.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// Which operations.
    pub filter: OperationFilter,
    /// Cancelled operations too.
    pub include_cancelled: bool,
    /// As new operations (otherwise in place).
    pub as_new: bool,
    /// A new deadline this many microseconds after each becomes eligible.
    pub deadline_us: Option<i64>,
    /// The rate as typed (`20/s`).
    pub rate: Option<String>,
    /// The spread, in microseconds.
    pub spread_us: Option<i64>,
    /// At most this many in all.
    pub limit: Option<u64>,
    /// Operations per store call.
    pub batch: u64,
    /// Why, for the audit log.
    pub note: Option<String>,
}

impl JobSpec {
    /// The spec of a checked request.
    pub fn of(request: &RedriveRequest, note: Option<&str>) -> Self {
        let (as_new, deadline) = match request.mode {
            RedriveMode::InPlace { extend_deadline } => (false, extend_deadline),
            RedriveMode::AsNew { deadline } => (true, deadline),
        };
        JobSpec {
            filter: request.filter.clone(),
            include_cancelled: request.include_cancelled,
            as_new,
            deadline_us: deadline.and_then(|d| d.num_microseconds()),
            rate: match &request.pace {
                Pace::Rate { text, .. } => Some(text.clone()),
                _ => None,
            },
            spread_us: match &request.pace {
                Pace::Spread(d) => d.num_microseconds(),
                _ => None,
            },
            limit: request.limit,
            batch: request.batch,
            note: note.map(str::to_owned),
        }
    }

    /// The request back, as it was checked.
    pub fn request(&self) -> Result<RedriveRequest, InputError> {
        let deadline = self.deadline_us.map(Duration::microseconds);
        let pace = match (&self.rate, self.spread_us) {
            (Some(rate), _) => Pace::parse(Spelling::Flags, Some(rate), None)?,
            (None, Some(us)) => Pace::Spread(Duration::microseconds(us)),
            (None, None) => Pace::AllAtOnce,
        };
        Ok(RedriveRequest {
            filter: self.filter.clone(),
            include_cancelled: self.include_cancelled,
            mode: if self.as_new {
                RedriveMode::AsNew { deadline }
            } else {
                RedriveMode::InPlace {
                    extend_deadline: deadline,
                }
            },
            pace,
            limit: self.limit,
            batch: self.batch,
        })
    }

    /// The spec from a job's row.
    pub fn from_job(job: &RedriveJob) -> Result<Self, InputError> {
        serde_json::from_value(job.request.clone()).map_err(|e| {
            InputError(format!(
                "re-drive job {} was saved by another version of oprec and cannot be resumed \
                 by this one ({e}); run the re-drive again instead",
                job.id
            ))
        })
    }
}

/// Whether `control` holds back the operations of `group` once re-driven (as the claim sees
/// them: in place the row keeps its last failure, a copy has none) or every match of a filter
/// on its dependency.
pub fn control_covers(
    control: &Control,
    group: &PreviewGroup,
    filter: &OperationFilter,
    as_new: bool,
) -> bool {
    let v = control.value.as_str();
    match control.scope {
        ControlScope::Kind => group.kind == v,
        ControlScope::FailureClass => !as_new && group.class.is_some_and(|c| c.as_str() == v),
        ControlScope::Dependency => {
            group.dependency.as_deref() == Some(v)
                || (!as_new && filter.dependency.as_deref() == Some(v))
        }
    }
}

/// The controls in force that hold back some of `groups` once re-driven, each with how many of
/// them it holds back; a paced re-drive waits for them and keeps its pace after.
pub fn delaying_controls(
    controls: &[Control],
    groups: &[PreviewGroup],
    filter: &OperationFilter,
    as_new: bool,
    now: DateTime<Utc>,
) -> Vec<(Control, u64)> {
    controls
        .iter()
        .filter(|c| c.in_force(now))
        .filter_map(|c| {
            let n: u64 = groups
                .iter()
                .filter(|g| control_covers(c, g, filter, as_new))
                .map(|g| g.count)
                .sum();
            (n > 0).then(|| (c.clone(), n))
        })
        .collect()
}

/// A control in words: `postpone of dependency shipping until 2026-…`.
pub fn control_text(c: &Control) -> String {
    let until = match c.until {
        Some(u) => format!("until {}", u.format("%Y-%m-%d %H:%M:%S UTC")),
        None => "until resumed".to_owned(),
    };
    format!(
        "{} of {} {} {until}",
        c.action,
        c.scope.as_str().replace('_', " "),
        c.value
    )
}

/// What a running job reports.
#[derive(Debug)]
pub enum JobEvent<'a> {
    /// The job starts (or resumes) releasing.
    Started(&'a RedriveJob),
    /// A batch was released.
    Released(&'a [Redriven]),
    /// Nothing can be released now: what is left is held back by these controls (or locked by
    /// another re-drive); the job looks again every second.
    Waiting {
        /// Operations left to re-drive.
        left: u64,
        /// The controls in force that hold them back.
        controls: &'a [(Control, u64)],
    },
}

/// How a job ended.
#[derive(Debug)]
pub struct JobEnd {
    /// The job's row as last saved.
    pub job: RedriveJob,
    /// Released by this run (a resumption counts from its start).
    pub released: u64,
    /// Store calls that released something.
    pub batches: u64,
    /// When the first released operation becomes eligible.
    pub first_eligible_at: Option<DateTime<Utc>>,
    /// When the last one does.
    pub last_eligible_at: Option<DateTime<Utc>>,
    /// The store failure that ended it.
    pub failure: Option<oprec_core::Error>,
}

/// The windows of released operations the brake watches.
#[derive(Default)]
struct Brake {
    /// (index, ids, still watched), in release order.
    windows: Vec<(u64, Vec<OperationId>, bool)>,
}

impl Brake {
    /// Adds released operations to the windows.
    fn add(&mut self, ids: impl IntoIterator<Item = OperationId>) {
        for id in ids {
            match self.windows.last_mut() {
                Some((_, w, _)) if (w.len() as u64) < BrakeRule::WINDOW => w.push(id),
                _ => {
                    let index = self.windows.last().map_or(0, |(i, _, _)| i + 1);
                    self.windows.push((index, vec![id], true));
                }
            }
        }
        // The first window and the most recent ones are watched; older ones are let go.
        let keep_from = self
            .windows
            .len()
            .saturating_sub(BrakeRule::WATCHED_WINDOWS);
        for (i, w) in self.windows.iter_mut().enumerate() {
            if i > 0 && i < keep_from {
                w.2 = false;
                w.1 = Vec::new();
            }
        }
    }

    /// The reason to brake, if a watched window says so.
    async fn check<S: OperatorStore + ?Sized>(
        &mut self,
        store: &S,
    ) -> oprec_core::Result<Option<String>> {
        for (index, ids, watched) in self.windows.iter_mut() {
            if !*watched || ids.is_empty() {
                continue;
            }
            let counts: BTreeMap<Status, u64> = store
                .operation_count_matching(CountMatchingParams {
                    filter: OperationFilter {
                        ids: ids.clone(),
                        ..OperationFilter::default()
                    },
                })
                .await?;
            let n = |s| counts.get(&s).copied().unwrap_or(0);
            let dead = n(Status::Dead);
            if let Some(why) = BrakeRule::decide(*index, ids.len() as u64, dead) {
                return Ok(Some(why));
            }
            let full = ids.len() as u64 == BrakeRule::WINDOW;
            if full && !BrakeRule::can_still_brake(n(Status::Succeeded) + n(Status::Cancelled)) {
                *watched = false;
            }
        }
        Ok(None)
    }
}

/// Sleeps `d` unless `stop` is cancelled first.
async fn nap(d: StdDuration, stop: &CancellationToken) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = stop.cancelled() => {}
    }
}

/// Runs job `job` (saved as running) for `request`: releases at the pace from now, only
/// operations that ended before `job.ended_before`, until they are all released (or
/// `request.limit` is reached), `stop` is cancelled (ctrl-c: interrupted), the job's row asks for
/// a stop (stopped), the brake says so (braked) or a store call fails (failed). Saves the row
/// every pass (at least every second) and at the end.
pub(crate) async fn run<S: OperatorStore + ?Sized>(
    store: &S,
    request: &RedriveRequest,
    mut job: RedriveJob,
    stop: &CancellationToken,
    mut on_event: impl FnMut(JobEvent<'_>),
) -> JobEnd {
    let spacing = request.pace.spacing(job.planned);
    let mut filter = request.filter.clone();
    filter.terminal_until = Some(
        filter
            .terminal_until
            .map_or(job.ended_before, |u| u.min(job.ended_before)),
    );
    let as_new = matches!(request.mode, RedriveMode::AsNew { .. });
    let total = request.limit.unwrap_or(u64::MAX);
    let per_pass = if spacing.is_zero() {
        request.batch
    } else {
        let micros = spacing.num_microseconds().unwrap_or(i64::MAX).max(1);
        let ahead = LOOKAHEAD.num_microseconds().unwrap_or(1_000_000);
        u64::try_from(ahead / micros)
            .unwrap_or(1)
            .clamp(1, request.batch)
    };
    let mut end = JobEnd {
        job: job.clone(),
        released: 0,
        batches: 0,
        first_eligible_at: None,
        last_eligible_at: None,
        failure: None,
    };
    let mut brake = Brake::default();
    let mut next_at: Option<DateTime<Utc>> = None;
    let mut waiting_said = false;
    on_event(JobEvent::Started(&job));
    let (state, reason) = loop {
        if stop.is_cancelled() {
            break (
                RedriveJobState::Interrupted,
                Some(format!(
                    "interrupted after releasing {} of {}",
                    job.released, job.planned
                )),
            );
        }
        match save(store, &job, RedriveJobState::Running, None).await {
            Ok(saved) => {
                if let Some(by) = saved.stop_requested_by.clone() {
                    job = saved;
                    break (
                        RedriveJobState::Stopped,
                        Some(format!(
                            "stopped by {by} after releasing {} of {}",
                            job.released, job.planned
                        )),
                    );
                }
                job = saved;
            }
            Err(e) => {
                end.failure = Some(e);
                break (RedriveJobState::Failed, None);
            }
        }
        match brake.check(store).await {
            Ok(Some(why)) => break (RedriveJobState::Braked, Some(why)),
            Ok(None) => {}
            Err(e) => {
                end.failure = Some(e);
                break (RedriveJobState::Failed, None);
            }
        }
        if job.released >= total {
            break (RedriveJobState::Done, None);
        }
        let now = match store.now().await {
            Ok(t) => t,
            Err(e) => {
                end.failure = Some(e);
                break (RedriveJobState::Failed, None);
            }
        };
        // The next operation's time: the pace goes on exactly where the last batch ended, unless
        // that is more than [`LOOKAHEAD`] past (a slow store); then, as after a wait, from now,
        // so that a late pass never catches up in a burst.
        let at = match next_at {
            Some(t) if t >= now - LOOKAHEAD => t,
            _ => now,
        };
        if at > now + MARGIN {
            let d = (at - now - MARGIN).to_std().unwrap_or_default();
            nap(d.min(WAIT_TICK), stop).await;
            continue;
        }
        let ask = per_pass.min(total - job.released);
        let params = RedriveParams {
            filter: filter.clone(),
            include_cancelled: request.include_cancelled,
            mode: request.mode.clone(),
            limit: u32::try_from(ask).unwrap_or(u32::MAX),
            start_at: at,
            spacing,
            // All at once has no pace to keep: what a control holds back is released too, and
            // the claim holds it until the control lifts (the job need not wait for a pause).
            skip_held_back: !spacing.is_zero(),
        };
        let batch = match store.operation_redrive(params).await {
            Ok(b) => b,
            Err(e) => {
                end.failure = Some(e);
                break (RedriveJobState::Failed, None);
            }
        };
        if batch.is_empty() {
            // Nothing to release now: done, or what is left is held back (or held by another
            // re-drive's transaction).
            let left = match store
                .redrive_preview(RedrivePreviewParams {
                    filter: filter.clone(),
                    include_cancelled: request.include_cancelled,
                    samples: 0,
                })
                .await
            {
                Ok(p) => p,
                Err(e) => {
                    end.failure = Some(e);
                    break (RedriveJobState::Failed, None);
                }
            };
            if left.matched == 0 {
                break (RedriveJobState::Done, None);
            }
            let controls = match store.control_list().await {
                Ok(c) => delaying_controls(&c, &left.groups, &filter, as_new, now),
                Err(e) => {
                    end.failure = Some(e);
                    break (RedriveJobState::Failed, None);
                }
            };
            if !waiting_said {
                on_event(JobEvent::Waiting {
                    left: left.matched,
                    controls: &controls,
                });
                waiting_said = true;
            }
            // After the wait, the pace starts again from the time the work is released.
            next_at = None;
            nap(WAIT_TICK, stop).await;
            continue;
        }
        waiting_said = false;
        let n = batch.len() as u64;
        job.released += n;
        end.released += n;
        end.batches += 1;
        if let Some(f) = batch.first() {
            end.first_eligible_at.get_or_insert(f.next_eligible_at);
        }
        if let Some(l) = batch.last() {
            end.last_eligible_at = Some(l.next_eligible_at);
            next_at = Some(l.next_eligible_at + spacing);
        }
        brake.add(batch.iter().map(|r| r.to));
        on_event(JobEvent::Released(&batch));
    };
    let reason = reason.or_else(|| {
        end.failure
            .as_ref()
            .map(|e| format!("failed after releasing {}: {e}", job.released))
    });
    // The final save; when even it fails, the row says running and resumption takes it over
    // once it is abandoned.
    if let Ok(saved) = save(store, &job, state, reason.clone()).await {
        job = saved;
    } else {
        job.state = state;
        job.reason = reason;
    }
    end.job = job;
    end
}

/// Saves `job` with `state` and `reason`.
async fn save<S: OperatorStore + ?Sized>(
    store: &S,
    job: &RedriveJob,
    state: RedriveJobState,
    reason: Option<String>,
) -> oprec_core::Result<RedriveJob> {
    store
        .redrive_job_save(RedriveJobSaveParams {
            id: job.id.clone(),
            actor: job.actor.clone(),
            state,
            request: job.request.clone(),
            ended_before: job.ended_before,
            planned: job.planned,
            released: job.released,
            reason,
        })
        .await
}

/// Creates a job's row for `request`, running, and returns it.
pub(crate) async fn create<S: OperatorStore + ?Sized>(
    store: &S,
    request: &RedriveRequest,
    note: Option<&str>,
    actor: &str,
    ended_before: DateTime<Utc>,
    planned: u64,
) -> oprec_core::Result<RedriveJob> {
    let request_json = serde_json::to_value(JobSpec::of(request, note))
        .map_err(|e| oprec_core::Error::InvalidInput(format!("re-drive job: {e}")))?;
    store
        .redrive_job_save(RedriveJobSaveParams {
            id: OperationId::new().to_string(),
            actor: actor.to_owned(),
            state: RedriveJobState::Running,
            request: request_json,
            ended_before,
            planned,
            released: 0,
            reason: None,
        })
        .await
}
