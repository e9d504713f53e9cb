//! Re-drive: bringing dead (and, if asked, cancelled) operations back, by filter, after a dry run,
//! at a bounded pace. Only terminal operations are touched, so a re-drive never overlaps a late
//! attempt. The work goes in batches, one store call each; an interrupted re-drive run again goes
//! on with the rest and re-drives nothing twice: in place, a re-driven operation is no longer
//! terminal; as new, one with a child is skipped; and only operations that ended before the run
//! began are taken, so one that dies again meanwhile waits for the next decision.
//!
//! The shape is plan → review (the dry run) → apply (batches, progress, stop) → audit.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use oprec_core::operator::{
    AuditEntry, Control, OperationFilter, RedriveJob, RedriveJobListParams, RedriveJobSaveParams,
    RedriveJobState, RedriveJobStopParams, RedriveMode, RedrivePreview, RedrivePreviewParams,
};
use oprec_core::{OperatorStore, PayloadMode, TerminalReason};
use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::batches::{Batches, DEFAULT_BATCH, MAX_BATCH};
use crate::filter::{self, FilterInput};
use crate::redrive_job::{self, JobEvent, JobSpec};
use crate::{InputError, Pace, Result, Spelling, Who, time};

/// Errors shown in a dry run.
pub const SAMPLES: u32 = 5;

/// A re-drive as typed.
#[derive(Clone, Debug, Default)]
pub struct RedriveInput {
    /// Which operations.
    pub filter: FilterInput,
    /// Cancelled operations too.
    pub include_cancelled: bool,
    /// As new operations linked by `redrive_of` (otherwise in place).
    pub as_new: bool,
    /// A new deadline this long after each operation becomes eligible.
    pub extend_deadline: Option<String>,
    /// At most this many per second (`500/s`).
    pub rate: Option<String>,
    /// Spread evenly over this long (`10m`).
    pub spread: Option<String>,
    /// At most this many in all.
    pub limit: Option<u64>,
    /// Operations per store call.
    pub batch: Option<u64>,
}

/// A checked re-drive.
#[derive(Clone, Debug, PartialEq)]
pub struct RedriveRequest {
    /// Which operations.
    pub filter: OperationFilter,
    /// Cancelled operations too.
    pub include_cancelled: bool,
    /// In place or as new.
    pub mode: RedriveMode,
    /// How fast they become eligible.
    pub pace: Pace,
    /// At most this many.
    pub limit: Option<u64>,
    /// Operations per store call.
    pub batch: u64,
}

impl RedriveRequest {
    /// Checks every field; bad input is refused before anything is opened. `now` anchors times
    /// typed as "a duration ago".
    pub fn check(
        input: &RedriveInput,
        spelling: Spelling,
        now: DateTime<Utc>,
    ) -> Result<Self, InputError> {
        let filter = input.filter.check(spelling, now)?;
        let extend = input
            .extend_deadline
            .as_deref()
            .map(|d| time::positive_duration(&spelling.label("extend-deadline"), d))
            .transpose()?;
        let mode = if input.as_new {
            RedriveMode::AsNew { deadline: extend }
        } else {
            RedriveMode::InPlace {
                extend_deadline: extend,
            }
        };
        let batch = match input.batch {
            None => DEFAULT_BATCH,
            Some(n @ 1..=MAX_BATCH) => n,
            Some(_) => {
                return Err(InputError(format!(
                    "{} must be between 1 and {MAX_BATCH}",
                    spelling.label("batch")
                )));
            }
        };
        Ok(RedriveRequest {
            filter,
            include_cancelled: input.include_cancelled,
            mode,
            pace: Pace::parse(spelling, input.rate.as_deref(), input.spread.as_deref())?,
            limit: filter::limit(&spelling.label("limit"), input.limit)?,
            batch,
        })
    }

    /// `in_place` or `as_new`.
    pub fn mode_name(&self) -> &'static str {
        match self.mode {
            RedriveMode::InPlace { .. } => "in_place",
            RedriveMode::AsNew { .. } => "as_new",
        }
    }

    /// The mode in words.
    pub fn mode_text(&self) -> &'static str {
        match self.mode {
            RedriveMode::InPlace { .. } => "in place (attempts reset, same ids)",
            RedriveMode::AsNew { .. } => "as new operations linked by redrive_of",
        }
    }

    /// "dead", or "dead or cancelled".
    pub fn terminal_text(&self) -> &'static str {
        if self.include_cancelled {
            "dead or cancelled"
        } else {
            "dead"
        }
    }

    /// The dry run: what matches now, grouped, with samples; changes nothing.
    pub async fn review<S: OperatorStore + ?Sized>(&self, store: &S) -> Result<RedriveReview> {
        let began = store.now().await?;
        let preview = store
            .redrive_preview(RedrivePreviewParams {
                filter: self.filter.clone(),
                include_cancelled: self.include_cancelled,
                samples: SAMPLES,
            })
            .await?;
        let planned = self
            .limit
            .map_or(preview.matched, |l| l.min(preview.matched));
        let as_new = matches!(self.mode, RedriveMode::AsNew { .. });
        let controls = redrive_job::delaying_controls(
            &store.control_list().await?,
            &preview.groups,
            &self.filter,
            as_new,
            began,
        );
        Ok(RedriveReview {
            request: self.clone(),
            began,
            preview,
            planned,
            controls,
        })
    }
}

/// What a dry run found, and what applying it would do.
#[derive(Clone, Debug, PartialEq)]
pub struct RedriveReview {
    /// The request reviewed.
    pub request: RedriveRequest,
    /// The store's time of the review: only what ended before it is re-driven, and the first
    /// operation becomes eligible at it.
    pub began: DateTime<Utc>,
    /// The matches, grouped, with samples.
    pub preview: RedrivePreview,
    /// How many would be re-driven (the matches, capped by the limit).
    pub planned: u64,
    /// The pauses and postponements in force that hold back some of the matches once
    /// re-driven, each with how many: the re-drive waits for them and keeps its pace after.
    pub controls: Vec<(Control, u64)>,
}

/// Something a person should know before applying a re-drive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The kind it is about.
    pub kind: String,
    /// `permanent`, `crash_loop` or `not_recovered`.
    pub what: &'static str,
    /// In words.
    pub text: String,
}

/// How a kind's payload reads on re-drive, in words.
pub fn payload_text(mode: Option<PayloadMode>) -> &'static str {
    match mode {
        Some(PayloadMode::Snapshot) => {
            "snapshot: the re-drive replays the payload taken at enqueue"
        }
        Some(PayloadMode::Reference) => {
            "reference: the re-drive acts on today's data, not the data at enqueue"
        }
        None => "unknown (enqueued before oprec kept the payload mode)",
    }
}

impl RedriveReview {
    /// Per kind, whether its payloads are snapshots or references, as kept on the operations
    /// (`mixed` when the matches of a kind disagree, `unknown` for operations enqueued before the
    /// mode was kept).
    pub fn payload_modes(&self) -> BTreeMap<String, &'static str> {
        let mut modes: BTreeMap<String, &'static str> = BTreeMap::new();
        for g in &self.preview.groups {
            let m = g.payload_mode.map_or("unknown", |m| m.as_str());
            modes
                .entry(g.kind.clone())
                .and_modify(|seen| {
                    if *seen != m {
                        *seen = "mixed";
                    }
                })
                .or_insert(m);
        }
        modes
    }

    /// The pace in words, for the planned count.
    pub fn pace_text(&self) -> String {
        self.request.pace.describe(self.planned)
    }

    /// The dry run as JSON, as the CLI prints it and a script reads it.
    pub fn to_json(&self) -> Value {
        json!({
            "dry_run": true,
            "changed": false,
            "matched": self.preview.matched,
            "would_redrive": self.planned,
            "not_terminal": self.preview.not_terminal,
            "groups": self.preview.groups,
            "samples": self.preview.samples,
            "payloads": self.payload_modes(),
            "mode": self.request.mode_name(),
            "pace": self.request.pace.to_json(self.planned),
            "controls": self.controls_json(),
            "errors": self.preview.errors,
            "warnings": self.warnings(),
        })
    }

    /// What a person should know before applying, per group: a permanent failure (the request
    /// itself was refused: a replay fails again unless the payload or the remote side changed),
    /// a crash loop (the handler took its worker down: a replay takes workers down again), and a
    /// dependency (or kind) that has not succeeded since the group's last death.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut out = Vec::new();
        for g in &self.preview.groups {
            let n = g.count;
            let (what, text) = match g.reason {
                Some(TerminalReason::Permanent) => (
                    "permanent",
                    format!(
                        "{n} {} operations died of a permanent failure: the request itself was \
                         refused, so a re-drive replays it and fails again unless the payload \
                         or the remote side has changed",
                        g.kind
                    ),
                ),
                Some(TerminalReason::CrashLoop) => (
                    "crash_loop",
                    format!(
                        "{n} {} operations died in a crash loop: their handler took its worker \
                         down attempt after attempt, so a re-drive takes workers down again \
                         unless the crash is fixed",
                        g.kind
                    ),
                ),
                _ => ("", String::new()),
            };
            if !what.is_empty() {
                out.push(Warning {
                    kind: g.kind.clone(),
                    what,
                    text,
                });
            }
            if g.recovered_at.is_none()
                && let Some(last) = g.last_ended_at
            {
                let of = match &g.dependency {
                    Some(d) => format!("of dependency {d}"),
                    None => format!("of kind {}", g.kind),
                };
                out.push(Warning {
                    kind: g.kind.clone(),
                    what: "not_recovered",
                    text: format!(
                        "no operation {of} has succeeded since the last of these {n} died ({}): \
                         the cause may still be there; a paced re-drive brakes if they die again",
                        last.format("%Y-%m-%d %H:%M:%S UTC")
                    ),
                });
            }
        }
        out
    }

    /// The delaying controls for JSON: each control with `operations`, how many it holds back.
    pub fn controls_json(&self) -> Value {
        Value::Array(
            self.controls
                .iter()
                .map(|(c, n)| {
                    let mut v = serde_json::to_value(c).unwrap_or(json!({}));
                    if let Value::Object(m) = &mut v {
                        m.insert("operations".into(), json!(n));
                    }
                    v
                })
                .collect(),
        )
    }

    /// Applies the reviewed re-drive as a job ([`crate::redrive_job`]): its row is created,
    /// operations that ended before the review are released at the pace from now (those a
    /// control in force holds back once it lifts), until all are released, `stop` is cancelled,
    /// the job is stopped from elsewhere, or the brake says so; then the audit entry.
    /// `on_event` sees each batch released and each wait.
    pub async fn apply<S: OperatorStore + ?Sized>(
        &self,
        store: &S,
        who: &Who,
        note: Option<&str>,
        stop: &CancellationToken,
        on_event: impl FnMut(JobEvent<'_>),
    ) -> RedriveDone {
        let job = match redrive_job::create(
            store,
            &self.request,
            note,
            &who.actor,
            self.began,
            self.planned,
        )
        .await
        {
            Ok(job) => job,
            Err(e) => return RedriveDone::failed_to_start(e),
        };
        run_and_audit(store, &self.request, job, who, note, stop, on_event, false).await
    }
}

/// The filter and options, for the audit log.
fn audit_filter(request: &RedriveRequest) -> Value {
    let mut v = serde_json::to_value(&request.filter).unwrap_or(json!({}));
    if let Value::Object(m) = &mut v {
        m.insert("include_cancelled".into(), json!(request.include_cancelled));
    }
    v
}

/// Runs `job` and writes its audit entry: when it released something, or ended stopped or
/// braked (the reason is worth keeping even when nothing was released).
#[allow(clippy::too_many_arguments)]
async fn run_and_audit<S: OperatorStore + ?Sized>(
    store: &S,
    request: &RedriveRequest,
    job: RedriveJob,
    who: &Who,
    note: Option<&str>,
    stop: &CancellationToken,
    on_event: impl FnMut(JobEvent<'_>),
    resumed: bool,
) -> RedriveDone {
    let end = redrive_job::run(store, request, job, stop, on_event).await;
    let state = end.job.state;
    let worth =
        end.released > 0 || matches!(state, RedriveJobState::Stopped | RedriveJobState::Braked);
    let audit = if worth {
        store
            .audit_insert(AuditEntry {
                actor: who.actor.clone(),
                action: "redrive".to_owned(),
                filter: audit_filter(request),
                affected: end.released,
                reason: note.map(str::to_owned),
                details: who.details(json!({
                    "job": end.job.id,
                    "resumed": resumed,
                    "state": state.as_str(),
                    "why": end.job.reason,
                    "mode": request.mode,
                    "pace": request.pace.to_json(end.job.planned),
                    "limit": request.limit,
                    "ended_before": end.job.ended_before,
                    "planned": end.job.planned,
                    "released_in_all": end.job.released,
                    "first_eligible_at": end.first_eligible_at,
                    "last_eligible_at": end.last_eligible_at,
                    "batches": end.batches,
                    "batch": request.batch,
                    "complete": state == RedriveJobState::Done,
                })),
            })
            .await
            .err()
    } else {
        None
    };
    RedriveDone {
        run: Batches {
            done: end.released,
            batches: end.batches,
            interrupted: matches!(
                state,
                RedriveJobState::Interrupted | RedriveJobState::Stopped | RedriveJobState::Braked
            ),
            failure: end.failure,
        },
        job: Some(end.job),
        first_eligible_at: end.first_eligible_at,
        last_eligible_at: end.last_eligible_at,
        audit_failure: audit,
    }
}

/// A job to resume: its row, its request, and the operations still to re-drive now.
#[derive(Debug)]
pub struct Resumption {
    /// The job as stored.
    pub job: RedriveJob,
    /// Its request, as first checked.
    pub request: RedriveRequest,
    /// Why, for the audit log, as first given.
    pub note: Option<String>,
}

impl Resumption {
    /// Loads job `id` and checks that it may be resumed: it exists, it is not done, and it is not
    /// running in a live process (a running row not saved for
    /// [`RedriveJob::ABANDONED_AFTER_SECS`] is taken over).
    pub async fn load<S: OperatorStore + ?Sized>(store: &S, id: &str) -> Result<Self> {
        let job = find(store, id).await?;
        let now = store.now().await?;
        if job.state == RedriveJobState::Done {
            return Err(InputError(format!(
                "re-drive job {} is done: it released all {} it matched; there is nothing to \
                 resume",
                job.id, job.released
            ))
            .into());
        }
        if job.state == RedriveJobState::Running && !job.abandoned(now) {
            return Err(InputError(format!(
                "re-drive job {} is running in another process (saved {} ago); stop it first \
                 (oprec redrive stop {}), or wait {}s after its process is gone",
                job.id,
                time::human(now - job.updated_at),
                job.id,
                RedriveJob::ABANDONED_AFTER_SECS
            ))
            .into());
        }
        let spec = JobSpec::from_job(&job)?;
        Ok(Resumption {
            request: spec.request()?,
            note: spec.note,
            job,
        })
    }

    /// Runs the job again from where it stopped, with the same filter, pace and limit, only
    /// operations that ended before its first dry run; then an audit entry.
    pub async fn apply<S: OperatorStore + ?Sized>(
        self,
        store: &S,
        who: &Who,
        stop: &CancellationToken,
        on_event: impl FnMut(JobEvent<'_>),
    ) -> RedriveDone {
        let Resumption {
            mut job,
            request,
            note,
        } = self;
        if job.state == RedriveJobState::Running {
            // Taken over from a process that is gone: recorded as interrupted first, so that
            // turning running again clears a stop asked of that process.
            let ended = store
                .redrive_job_save(RedriveJobSaveParams {
                    id: job.id.clone(),
                    actor: job.actor.clone(),
                    state: RedriveJobState::Interrupted,
                    request: job.request.clone(),
                    ended_before: job.ended_before,
                    planned: job.planned,
                    released: job.released,
                    reason: Some("its process was gone".to_owned()),
                })
                .await;
            match ended {
                Ok(saved) => job = saved,
                Err(e) => return RedriveDone::failed_to_start(e),
            }
        }
        run_and_audit(
            store,
            &request,
            job,
            who,
            note.as_deref(),
            stop,
            on_event,
            true,
        )
        .await
    }
}

/// Job `id`, or a refusal naming it.
pub async fn find<S: OperatorStore + ?Sized>(store: &S, id: &str) -> Result<RedriveJob> {
    let id = id.trim();
    store
        .redrive_job_list(RedriveJobListParams {
            id: Some(id.to_owned()),
            limit: 1,
        })
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| {
            InputError(format!(
                "no re-drive job {:?}; oprec redrive status lists them",
                crate::cut(id, 100)
            ))
            .into()
        })
}

/// Asks running job `id` to stop on behalf of `who`; returns the job as stored. A job that is not
/// running is refused (it has nothing to stop).
pub async fn stop<S: OperatorStore + ?Sized>(store: &S, id: &str, who: &Who) -> Result<RedriveJob> {
    let found = find(store, id).await?;
    let job = store
        .redrive_job_stop(RedriveJobStopParams {
            id: found.id.clone(),
            actor: who.actor.clone(),
        })
        .await?
        .unwrap_or(found);
    if job.state != RedriveJobState::Running {
        return Err(InputError(format!(
            "re-drive job {} is not running ({}); there is nothing to stop",
            job.id, job.state
        ))
        .into());
    }
    Ok(job)
}

/// The newest jobs first.
pub async fn list<S: OperatorStore + ?Sized>(store: &S, limit: u32) -> Result<Vec<RedriveJob>> {
    Ok(store
        .redrive_job_list(RedriveJobListParams { id: None, limit })
        .await?)
}

/// What an applied re-drive did.
#[derive(Debug)]
pub struct RedriveDone {
    /// The batches: how many were re-driven, whether it was interrupted (or stopped, or braked)
    /// or failed.
    pub run: Batches,
    /// The job's row as it ended (`None`: it could not be created).
    pub job: Option<RedriveJob>,
    /// When the first re-driven operation becomes eligible.
    pub first_eligible_at: Option<DateTime<Utc>>,
    /// When the last one does.
    pub last_eligible_at: Option<DateTime<Utc>>,
    /// The audit entry could not be written (the re-drive itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

impl RedriveDone {
    /// A re-drive whose job could not be created: nothing was done.
    fn failed_to_start(e: oprec_core::Error) -> Self {
        RedriveDone {
            run: Batches {
                failure: Some(e),
                ..Batches::default()
            },
            job: None,
            first_eligible_at: None,
            last_eligible_at: None,
            audit_failure: None,
        }
    }

    /// How the job ended.
    pub fn state(&self) -> Option<RedriveJobState> {
        self.job.as_ref().map(|j| j.state)
    }
}

/// What to tell a person who runs an interrupted or failed re-drive: running it again re-drives
/// the rest and nothing twice.
pub const AGAIN: &str =
    "run the same re-drive again to re-drive the rest; nothing is re-driven twice";

#[cfg(test)]
mod tests {
    use oprec_core::operator::PreviewGroup;

    use super::*;

    fn group(kind: &str, reason: TerminalReason, recovered: bool) -> PreviewGroup {
        let at = Utc::now();
        PreviewGroup {
            kind: kind.to_owned(),
            payload_mode: Some(PayloadMode::Snapshot),
            class: None,
            reason: Some(reason),
            dependency: Some("provider".to_owned()),
            count: 7,
            first_ended_at: Some(at),
            last_ended_at: Some(at),
            recovered_at: recovered.then_some(at),
        }
    }

    #[test]
    fn permanent_and_crash_loop_groups_warn_and_so_does_no_success_since() {
        let now = Utc::now();
        let request =
            RedriveRequest::check(&RedriveInput::default(), Spelling::Flags, now).unwrap();
        let review = RedriveReview {
            request,
            began: now,
            preview: RedrivePreview {
                matched: 21,
                groups: vec![
                    group("a", TerminalReason::Permanent, true),
                    group("b", TerminalReason::CrashLoop, true),
                    group("c", TerminalReason::AttemptsExhausted, false),
                ],
                ..RedrivePreview::default()
            },
            planned: 21,
            controls: Vec::new(),
        };
        let warnings = review.warnings();
        let what: Vec<(&str, &str)> = warnings.iter().map(|w| (w.kind.as_str(), w.what)).collect();
        assert_eq!(
            what,
            vec![
                ("a", "permanent"),
                ("b", "crash_loop"),
                ("c", "not_recovered")
            ]
        );
        assert!(warnings[1].text.contains("took its worker down"));
        assert!(
            warnings[2]
                .text
                .contains("no operation of dependency provider has succeeded since")
        );
        assert_eq!(review.to_json()["warnings"][0]["what"], "permanent");
    }
}
