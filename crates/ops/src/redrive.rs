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
    AuditEntry, OperationFilter, RedriveMode, RedriveParams, RedrivePreview, RedrivePreviewParams,
    Redriven,
};
use oprec_core::{OperatorStore, PayloadMode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::batches::{self, Batches, DEFAULT_BATCH, MAX_BATCH};
use crate::filter::{self, FilterInput};
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
        Ok(RedriveReview {
            request: self.clone(),
            began,
            preview,
            planned,
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
        })
    }

    /// Applies the reviewed re-drive: batches of `request.batch`, eligible times staggered at the
    /// pace from the review's time, only operations that ended before it, stopping between two
    /// batches when `stop` is cancelled; then the audit entry. `on_batch` sees each batch.
    pub async fn apply<S: OperatorStore + ?Sized>(
        &self,
        store: &S,
        who: &Who,
        note: Option<&str>,
        stop: &CancellationToken,
        mut on_batch: impl FnMut(&[Redriven]),
    ) -> RedriveDone {
        let r = &self.request;
        let spacing = r.pace.spacing(self.planned);
        let mut filter = r.filter.clone();
        // Only what ended before this run: an operation that dies again while the run goes on is
        // not taken a second time by a later batch.
        filter.terminal_until = Some(
            filter
                .terminal_until
                .map_or(self.began, |u| u.min(self.began)),
        );
        let total = r.limit.unwrap_or(u64::MAX);
        let (mut first, mut last) = (None, None);
        let run = batches::run(
            total,
            r.batch,
            stop,
            |done, ask| {
                let params = RedriveParams {
                    filter: filter.clone(),
                    include_cancelled: r.include_cancelled,
                    mode: r.mode.clone(),
                    limit: ask,
                    // Batch k starts where batch k-1 ended, so the whole run keeps one pace.
                    start_at: self.began + spacing * i32::try_from(done).unwrap_or(i32::MAX),
                    spacing,
                };
                store.operation_redrive(params)
            },
            |batch: &Vec<Redriven>| {
                if let Some(f) = batch.first() {
                    first.get_or_insert(f.next_eligible_at);
                }
                if let Some(l) = batch.last() {
                    last = Some(l.next_eligible_at);
                }
                on_batch(batch);
            },
        )
        .await;
        let audit = if run.done > 0 {
            store
                .audit_insert(AuditEntry {
                    actor: who.actor.clone(),
                    action: "redrive".to_owned(),
                    filter: self.audit_filter(),
                    affected: run.done,
                    reason: note.map(str::to_owned),
                    details: who.details(json!({
                        "mode": r.mode,
                        "pace": r.pace.to_json(self.planned),
                        "limit": r.limit,
                        "ended_before": self.began,
                        "matched": self.preview.matched,
                        "not_terminal": self.preview.not_terminal,
                        "first_eligible_at": first,
                        "last_eligible_at": last,
                        "batches": run.batches,
                        "batch": r.batch,
                        "complete": run.complete(),
                    })),
                })
                .await
                .err()
        } else {
            None
        };
        RedriveDone {
            run,
            first_eligible_at: first,
            last_eligible_at: last,
            audit_failure: audit,
        }
    }

    /// The filter and options, for the audit log.
    fn audit_filter(&self) -> Value {
        let mut v = serde_json::to_value(&self.request.filter).unwrap_or(json!({}));
        if let Value::Object(m) = &mut v {
            m.insert(
                "include_cancelled".into(),
                json!(self.request.include_cancelled),
            );
        }
        v
    }
}

/// What an applied re-drive did.
#[derive(Debug)]
pub struct RedriveDone {
    /// The batches: how many were re-driven, whether it was interrupted or failed.
    pub run: Batches,
    /// When the first re-driven operation becomes eligible.
    pub first_eligible_at: Option<DateTime<Utc>>,
    /// When the last one does.
    pub last_eligible_at: Option<DateTime<Utc>>,
    /// The audit entry could not be written (the re-drive itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

/// What to tell a person who runs an interrupted or failed re-drive: running it again re-drives
/// the rest and nothing twice.
pub const AGAIN: &str =
    "run the same re-drive again to re-drive the rest; nothing is re-driven twice";
