//! Archive: taking ended operations out of the store with their whole history, into a JSON Lines
//! file an operator keeps ([`crate::archive_line`] says its format), and putting them back
//! ([`crate::restore`]).
//!
//! Nothing is removed unless it was written and read back. Each batch is read from the store (in
//! id order), appended to the file, synced to disk (`fsync`), read back from the file and
//! compared with what was read (every line parses, its checksum holds, its record equals the
//! row, attempts and steps read); only then does the store remove exactly those operations, each
//! fenced by how it was read, so that one re-driven, announced or attempted meanwhile stays. A
//! record whose operation stayed gets a keep note after it, so a restore never brings back a
//! stale copy. Only ended operations (succeeded, dead, cancelled) are ever read for removal.
//!
//! The shape is plan → review (the dry run) → apply (batches, progress, stop) → audit.

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use oprec_core::archive::{ArchivedOperation, OperationExportParams, OperationRemoveParams};
use oprec_core::operator::{AuditEntry, CountMatchingParams, OperationFilter};
use oprec_core::{OperationId, OperatorStore, Status};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::archive_line::{self, Entry};
use crate::batches::{DEFAULT_BATCH, MAX_BATCH};
use crate::filter::{self, FilterInput};
use crate::{Error, InputError, Result, Spelling, Who};

/// Why a keep note is written.
pub const KEPT_REASON: &str = "changed while it was being archived (re-driven, announced or re-drove another), so it stayed in the store";

/// An archive as typed.
#[derive(Clone, Debug, Default)]
pub struct ArchiveInput {
    /// Which operations (`until` is "ended before").
    pub filter: FilterInput,
    /// The ended statuses to take: succeeded, dead, cancelled.
    pub statuses: Vec<String>,
    /// The file to write.
    pub to: PathBuf,
    /// Add to an existing file instead of refusing it.
    pub append: bool,
    /// At most this many in all.
    pub limit: Option<u64>,
    /// Operations per batch.
    pub batch: Option<u64>,
}

/// A checked archive.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchiveRequest {
    /// Which operations.
    pub filter: OperationFilter,
    /// Ended statuses only.
    pub statuses: Vec<Status>,
    /// The file.
    pub to: PathBuf,
    /// Whether the file may exist already.
    pub append: bool,
    /// At most this many.
    pub limit: Option<u64>,
    /// Operations per batch (one store read, one write and sync, one removal).
    pub batch: u64,
}

impl ArchiveRequest {
    /// Checks every field, and that the file can be what is asked (absent, or `append`); bad
    /// input is refused before anything is opened.
    pub fn check(
        input: &ArchiveInput,
        spelling: Spelling,
        now: DateTime<Utc>,
    ) -> Result<Self, InputError> {
        let filter = input.filter.check(spelling, now)?;
        let label = spelling.label("status");
        if input.statuses.is_empty() {
            return Err(InputError(format!(
                "{label} is required: which ended operations to archive (succeeded, dead, \
                 cancelled; repeatable)"
            )));
        }
        let mut statuses = Vec::new();
        for s in &input.statuses {
            let status = filter::status(&label, s)?;
            if !status.is_terminal() {
                return Err(InputError(format!(
                    "{label} {status}: only ended operations are archived (succeeded, dead, \
                     cancelled); a {status} operation is still being worked on"
                )));
            }
            if !statuses.contains(&status) {
                statuses.push(status);
            }
        }
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
        check_target(&spelling.label("to"), &input.to, input.append)?;
        Ok(ArchiveRequest {
            filter,
            statuses,
            to: input.to.clone(),
            append: input.append,
            limit: filter::limit(&spelling.label("limit"), input.limit)?,
            batch,
        })
    }

    /// The statuses in words: "dead", "succeeded or cancelled".
    pub fn status_text(&self) -> String {
        let names: Vec<&str> = self.statuses.iter().map(Status::as_str).collect();
        names.join(" or ")
    }

    /// The dry run: how many match now, per status; changes nothing and writes no file.
    pub async fn review<S: OperatorStore + ?Sized>(&self, store: &S) -> Result<ArchiveReview> {
        let began = store.now().await?;
        let counts = store
            .operation_count_matching(CountMatchingParams {
                filter: self.filter.clone(),
            })
            .await?;
        let matched: BTreeMap<Status, u64> = counts
            .into_iter()
            .filter(|(s, _)| self.statuses.contains(s))
            .collect();
        let total: u64 = matched.values().sum();
        Ok(ArchiveReview {
            request: self.clone(),
            began,
            planned: self.limit.map_or(total, |l| l.min(total)),
            matched,
        })
    }
}

/// Refuses a target that cannot be written as asked: an existing file without `append`, a
/// directory, or a folder that does not exist.
fn check_target(label: &str, to: &Path, append: bool) -> Result<(), InputError> {
    if to.as_os_str().is_empty() {
        return Err(InputError(format!("{label} must name a file")));
    }
    match std::fs::metadata(to) {
        Ok(m) if m.is_dir() => Err(InputError(format!(
            "{label} {} is a directory; name a file",
            to.display()
        ))),
        Ok(_) if !append => Err(InputError(format!(
            "{label} {} exists; an archive never overwrites a file: choose a new file, or add \
             --append to add to this one",
            to.display()
        ))),
        Ok(_) => Ok(()),
        Err(_) => {
            let parent = to.parent().filter(|p| !p.as_os_str().is_empty());
            match parent {
                Some(p) if !p.is_dir() => Err(InputError(format!(
                    "{label} {}: the folder {} does not exist",
                    to.display(),
                    p.display()
                ))),
                _ => Ok(()),
            }
        }
    }
}

/// What a dry run found.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchiveReview {
    /// The request reviewed.
    pub request: ArchiveRequest,
    /// The store's time of the review.
    pub began: DateTime<Utc>,
    /// Matches per requested status.
    pub matched: BTreeMap<Status, u64>,
    /// How many would be archived (the matches, capped by the limit).
    pub planned: u64,
}

/// One batch done, for progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArchiveBatch {
    /// Records written and verified.
    pub written: u64,
    /// Operations removed from the store.
    pub removed: u64,
    /// Operations that changed meanwhile and stayed.
    pub kept: u64,
}

/// What an applied archive did.
#[derive(Debug, Default)]
pub struct ArchiveDone {
    /// Records written to the file and verified.
    pub written: u64,
    /// Operations removed from the store (with their attempts and steps).
    pub removed: u64,
    /// Operations written but kept in the store because they changed meanwhile (or another
    /// operation staying in the store re-drives them); a keep note follows each record.
    pub kept: u64,
    /// Batches done.
    pub batches: u64,
    /// A stop was asked for with work left.
    pub interrupted: bool,
    /// The failure that ended the run; what was removed before it stands, and nothing of the
    /// failed batch was removed.
    pub failure: Option<Error>,
    /// The audit entry could not be written (the archive itself stands).
    pub audit_failure: Option<oprec_core::Error>,
}

impl ArchiveDone {
    /// Whether every planned operation was taken.
    pub fn complete(&self) -> bool {
        self.failure.is_none() && !self.interrupted
    }

    /// The result as JSON, as the CLI prints it and a script reads it.
    pub fn to_json(&self, file: &Path) -> Value {
        json!({
            "file": file.display().to_string(),
            "written": self.written,
            "removed": self.removed,
            "kept": self.kept,
            "batches": self.batches,
            "complete": self.complete(),
            "changed": self.removed > 0,
        })
    }
}

impl ArchiveReview {
    /// The dry run as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "dry_run": true,
            "changed": false,
            "matched": self.matched.values().sum::<u64>(),
            "by_status": self.matched,
            "would_archive": self.planned,
            "file": self.request.to.display().to_string(),
            "ended_before": self.request.filter.terminal_until,
        })
    }

    /// Applies the archive batch by batch, stopping between two batches when `stop` is
    /// cancelled; then the audit entry. `on_batch` sees each batch.
    pub async fn apply<S: OperatorStore + ?Sized>(
        &self,
        store: &S,
        who: &Who,
        stop: &CancellationToken,
        mut on_batch: impl FnMut(ArchiveBatch),
    ) -> ArchiveDone {
        let mut done = ArchiveDone::default();
        match self.run(store, stop, &mut done, &mut on_batch).await {
            Ok(()) => {}
            Err(e) => done.failure = Some(e),
        }
        if done.written > 0 {
            let r = &self.request;
            done.audit_failure = store
                .audit_insert(AuditEntry {
                    actor: who.actor.clone(),
                    action: "archive".to_owned(),
                    filter: self.audit_filter(),
                    affected: done.removed,
                    reason: None,
                    details: who.details(json!({
                        "file": r.to.display().to_string(),
                        "written": done.written,
                        "removed": done.removed,
                        "kept": done.kept,
                        "batches": done.batches,
                        "batch": r.batch,
                        "limit": r.limit,
                        "matched": self.matched.values().sum::<u64>(),
                        "complete": done.complete(),
                        "failure": done.failure.as_ref().map(|e| e.to_string()),
                    })),
                })
                .await
                .err();
        }
        done
    }

    async fn run<S: OperatorStore + ?Sized>(
        &self,
        store: &S,
        stop: &CancellationToken,
        done: &mut ArchiveDone,
        on_batch: &mut impl FnMut(ArchiveBatch),
    ) -> Result<()> {
        let r = &self.request;
        // Opened with the first records: an archive that matches nothing creates no file.
        let mut file: Option<File> = None;
        let total = r.limit.unwrap_or(u64::MAX);
        let mut after: Option<OperationId> = None;
        let mut taken = 0u64;
        let mut filter = r.filter.clone();
        // Only what ended before the review: an operation that ends while the run goes on waits
        // for the next archive.
        filter.terminal_until = Some(
            filter
                .terminal_until
                .map_or(self.began, |u| u.min(self.began)),
        );
        while taken < total {
            if stop.is_cancelled() {
                done.interrupted = true;
                break;
            }
            let ask = r.batch.min(total - taken);
            let records = store
                .operation_export(OperationExportParams {
                    filter: filter.clone(),
                    statuses: r.statuses.clone(),
                    after,
                    limit: ask as u32,
                })
                .await?;
            let Some(last) = records.last() else { break };
            after = Some(last.operation.id);
            taken += records.len() as u64;
            let target = match &mut file {
                Some(f) => f,
                None => file.insert(open_target(&r.to, r.append)?),
            };
            let batch = archive_batch(store, target, &r.to, &records).await?;
            done.written += batch.written;
            done.removed += batch.removed;
            done.kept += batch.kept;
            done.batches += 1;
            on_batch(batch);
            if (records.len() as u64) < ask {
                break;
            }
        }
        Ok(())
    }

    /// The filter and statuses, for the audit log.
    fn audit_filter(&self) -> Value {
        let mut v = serde_json::to_value(&self.request.filter).unwrap_or(json!({}));
        if let Value::Object(m) = &mut v {
            m.insert("statuses".into(), json!(self.request.statuses));
            m.insert("ended_before".into(), json!(self.began));
        }
        v
    }
}

/// Opens the archive file for appending: created new (refusing one that appeared since the
/// check) unless `append`; a file that does not end with a whole line is refused, so a record is
/// never glued to a torn one.
fn open_target(to: &Path, append: bool) -> Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    if append {
        options.create(true);
    } else {
        options.create_new(true);
    }
    let mut file = options
        .open(to)
        .map_err(|e| Error::file(format!("cannot create {}", to.display()), e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::file(format!("cannot read {}", to.display()), e))?
        .len();
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))
            .and_then(|_| file.read_exact(&mut last))
            .map_err(|e| Error::file(format!("cannot read {}", to.display()), e))?;
        if last[0] != b'\n' {
            return Err(Error::Input(InputError(format!(
                "{} does not end with a whole line (a torn write?); archive to a new file",
                to.display()
            ))));
        }
    }
    // The new file's name is durable too, not only its contents.
    if !append && let Some(dir) = to.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(file)
}

/// Writes, syncs and verifies one batch, then removes what the file holds; notes what stayed.
async fn archive_batch<S: OperatorStore + ?Sized>(
    store: &S,
    file: &mut File,
    path: &Path,
    records: &[ArchivedOperation],
) -> Result<ArchiveBatch> {
    let io = |what: &str, e| Error::file(format!("cannot {what} {}", path.display()), e);
    let start = file.seek(SeekFrom::End(0)).map_err(|e| io("seek in", e))?;
    let text: String = records.iter().map(archive_line::record_line).collect();
    file.write_all(text.as_bytes())
        .map_err(|e| io("write to", e))?;
    file.sync_all().map_err(|e| io("sync", e))?;
    let mut back = Vec::with_capacity(text.len());
    file.seek(SeekFrom::Start(start))
        .map_err(|e| io("seek in", e))?;
    file.read_to_end(&mut back)
        .map_err(|e| io("read back", e))?;
    verify(&back, records)?;
    let removed = store
        .operation_remove(OperationRemoveParams {
            fences: records.iter().map(ArchivedOperation::fence).collect(),
        })
        .await?;
    let gone: HashSet<OperationId> = removed.iter().copied().collect();
    let kept: String = records
        .iter()
        .filter(|r| !gone.contains(&r.operation.id))
        .map(|r| archive_line::kept_line(r.operation.id, KEPT_REASON))
        .collect();
    if !kept.is_empty() {
        file.write_all(kept.as_bytes())
            .map_err(|e| io("write to", e))?;
        file.sync_all().map_err(|e| io("sync", e))?;
    }
    Ok(ArchiveBatch {
        written: records.len() as u64,
        removed: removed.len() as u64,
        kept: (records.len() - removed.len()) as u64,
    })
}

/// Checks that `back`, the bytes read back from where a batch was written, is exactly one line
/// per record, each parsing with its checksum and equal to the record written: same id, same
/// attempt count, same everything.
pub fn verify(back: &[u8], records: &[ArchivedOperation]) -> Result<()> {
    let text = std::str::from_utf8(back).map_err(|e| Error::Verify(format!("not UTF-8: {e}")))?;
    let Some(body) = text.strip_suffix('\n') else {
        return Err(Error::Verify(
            "the batch does not end with a newline".to_owned(),
        ));
    };
    let lines: Vec<&str> = body.split('\n').collect();
    if lines.len() != records.len() {
        return Err(Error::Verify(format!(
            "{} lines read back for {} records written",
            lines.len(),
            records.len()
        )));
    }
    for (i, (line, want)) in lines.iter().zip(records).enumerate() {
        let got = match archive_line::parse(line) {
            Ok(Entry::Record(r)) => r,
            Ok(Entry::Kept(_)) => {
                return Err(Error::Verify(format!(
                    "line {} of the batch is a keep note",
                    i + 1
                )));
            }
            Err(e) => return Err(Error::Verify(format!("line {} of the batch: {e}", i + 1))),
        };
        if got.operation.id != want.operation.id
            || got.attempts.len() != want.attempts.len()
            || *got != *want
        {
            return Err(Error::Verify(format!(
                "line {} of the batch holds {} with {} attempts, not {} with {} as written",
                i + 1,
                got.operation.id,
                got.attempts.len(),
                want.operation.id,
                want.attempts.len()
            )));
        }
    }
    Ok(())
}
