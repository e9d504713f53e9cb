//! Restore: putting archived operations back from an archive file, with their original ids,
//! statuses and histories. Nothing is ever overwritten: an operation already in the store is
//! reported as present (the same record, attempts and steps as the line) or as a conflict (it
//! differs: re-driven since, say), and a line that does not parse, or whose checksum does not
//! hold, is reported with its line number and restores nothing. Restoring the same file twice
//! restores nothing the second time.
//!
//! A record followed in the file by a keep note (its operation stayed in the store when it was
//! archived) is skipped; a later record of the same operation (archived again, appended) is not. A re-drive's child whose parent comes later in the file waits for it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use oprec_core::archive::{
    ArchivedOperation, OperationExportParams, OperationRestoreParams, RestoreOutcome,
};
use oprec_core::operator::{AuditEntry, CountMatchingParams, OperationFilter};
use oprec_core::store::OperationGetParams;
use oprec_core::{OperationId, OperatorStore, Status};
use serde::Serialize;
use serde_json::{Value, json};

use crate::archive_line::{self, Entry};
use crate::batches::DEFAULT_BATCH;
use crate::{Error, Result, Who};

/// Records restored per store call (one transaction).
pub const BATCH: usize = DEFAULT_BATCH as usize;

/// A line that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Malformed {
    /// Its line number, from 1.
    pub line: u64,
    /// What is wrong with it.
    pub error: String,
}

/// A record that was not restored because the store holds something else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// Its line number, from 1.
    pub line: u64,
    /// The operation.
    pub id: OperationId,
    /// What is in the way.
    pub why: String,
}

/// What a restore did (or, dry, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Restored {
    /// Lines read.
    pub lines: u64,
    /// Operations put back (dry run: that would be).
    pub restored: u64,
    /// Operations already in the store as the file has them: nothing to do.
    pub present: u64,
    /// Records skipped because a keep note says the operation stayed in the store.
    pub skipped_kept: u64,
    /// Operations in the way of a record.
    pub conflicts: Vec<Conflict>,
    /// Lines that could not be read.
    pub malformed: Vec<Malformed>,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
}

impl Restored {
    /// Whether every line was restored or already present.
    pub fn clean(&self) -> bool {
        self.conflicts.is_empty() && self.malformed.is_empty()
    }
}

/// Restores `file` into `store` (or, with `dry_run`, says what it would do), audited as `who`;
/// `on_progress` sees the lines handled so far.
pub async fn restore<S: OperatorStore + ?Sized>(
    store: &S,
    file: &Path,
    dry_run: bool,
    who: &Who,
    mut on_progress: impl FnMut(u64),
) -> Result<Restored> {
    let kept = kept_ids(file)?;
    let mut report = Restored {
        dry_run,
        ..Restored::default()
    };
    let mut pending: Vec<(u64, ArchivedOperation)> = Vec::new();
    let mut waiting: Vec<(u64, ArchivedOperation)> = Vec::new();
    for (n, line) in lines(file)? {
        report.lines = n;
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                report.malformed.push(Malformed {
                    line: n,
                    error: format!("unreadable: {e}"),
                });
                continue;
            }
        };
        match archive_line::parse(&line) {
            // A keep note names the record before it; a later archive of the same operation
            // (appended to the same file) is restored.
            Ok(Entry::Record(r)) if kept.get(&r.operation.id).is_some_and(|&k| k > n) => {
                report.skipped_kept += 1
            }
            Ok(Entry::Record(r)) => pending.push((n, *r)),
            Ok(Entry::Kept(_)) => {}
            Err(error) => report.malformed.push(Malformed { line: n, error }),
        }
        if pending.len() >= BATCH {
            let batch = std::mem::take(&mut pending);
            waiting.extend(restore_batch(store, batch, dry_run, &mut report).await?);
            on_progress(n);
        }
    }
    waiting.extend(restore_batch(store, pending, dry_run, &mut report).await?);
    on_progress(report.lines);
    // Children whose parent came later in the file: again, until a round restores none.
    while !waiting.is_empty() {
        let before = report.restored;
        let again =
            restore_batch(store, std::mem::take(&mut waiting), dry_run, &mut report).await?;
        if report.restored == before {
            for (line, r) in again {
                report.conflicts.push(Conflict {
                    line,
                    id: r.operation.id,
                    why: format!(
                        "it re-drives {}, which is neither in the store nor in the file",
                        r.operation.redrive_of.map_or("?".into(), |p| p.to_string())
                    ),
                });
            }
            break;
        }
        waiting = again;
    }
    report.conflicts.sort_by_key(|c| c.line);
    if !dry_run && report.restored > 0 {
        store
            .audit_insert(AuditEntry {
                actor: who.actor.clone(),
                action: "archive_restore".to_owned(),
                filter: json!({"file": file.display().to_string()}),
                affected: report.restored,
                reason: None,
                details: who.details(json!({
                    "lines": report.lines,
                    "present": report.present,
                    "skipped_kept": report.skipped_kept,
                    "conflicts": report.conflicts.len(),
                    "malformed": report.malformed.len(),
                })),
            })
            .await?;
    }
    Ok(report)
}

/// The lines of `file`, numbered from 1.
fn lines(file: &Path) -> Result<impl Iterator<Item = (u64, std::io::Result<String>)>> {
    let f =
        File::open(file).map_err(|e| Error::file(format!("cannot open {}", file.display()), e))?;
    Ok((1u64..).zip(BufReader::new(f).lines()))
}

/// The operations the file's keep notes name, each with the line of its last note.
fn kept_ids(file: &Path) -> Result<HashMap<OperationId, u64>> {
    let mut kept = HashMap::new();
    for (n, line) in lines(file)? {
        // A line that does not read is reported by the main pass.
        if let Ok(Ok(Entry::Kept(id))) = line.map(|l| archive_line::parse(&l)) {
            kept.insert(id, n);
        }
    }
    Ok(kept)
}

/// Restores one batch; returns the records whose parent is missing, to try again later. The
/// operations already in the store are looked up first, in one read, so a second restore of a
/// file writes nothing and costs a read per batch.
async fn restore_batch<S: OperatorStore + ?Sized>(
    store: &S,
    batch: Vec<(u64, ArchivedOperation)>,
    dry_run: bool,
    report: &mut Restored,
) -> Result<Vec<(u64, ArchivedOperation)>> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let mut now = current(store, &batch).await?;
    let absent: Vec<usize> = (0..batch.len())
        .filter(|&i| !now.contains_key(&batch[i].1.operation.id))
        .collect();
    let mut outcomes = vec![RestoreOutcome::Exists; batch.len()];
    if dry_run {
        let there = present_unended(store, absent.iter().map(|&i| &batch[i].1)).await?;
        for &i in &absent {
            if !there.contains(&batch[i].1.operation.id) {
                outcomes[i] = RestoreOutcome::Restored;
            }
        }
    } else if !absent.is_empty() {
        let done = store
            .operation_restore(OperationRestoreParams {
                records: absent.iter().map(|&i| batch[i].1.clone()).collect(),
            })
            .await?;
        let raced = done.contains(&RestoreOutcome::Exists);
        for (&i, o) in absent.iter().zip(done) {
            outcomes[i] = o;
        }
        if raced {
            now = current(store, &batch).await?;
        }
    }
    let mut waiting = Vec::new();
    for ((line, r), outcome) in batch.into_iter().zip(outcomes) {
        let id = r.operation.id;
        match outcome {
            RestoreOutcome::Restored => report.restored += 1,
            RestoreOutcome::Exists => match now.get(&id) {
                Some(current) if *current == r => report.present += 1,
                Some(current) => report.conflicts.push(Conflict {
                    line,
                    id,
                    why: format!(
                        "the store holds a different {id} ({} with {} attempts; the file has {} \
                         with {})",
                        current.operation.status,
                        current.attempts.len(),
                        r.operation.status,
                        r.attempts.len()
                    ),
                }),
                None => report.conflicts.push(Conflict {
                    line,
                    id,
                    why: format!("the store holds {id}, and it has not ended"),
                }),
            },
            RestoreOutcome::KeyTaken => report.conflicts.push(Conflict {
                line,
                id,
                why: format!(
                    "another {} operation holds its idempotency key",
                    r.operation.kind
                ),
            }),
            RestoreOutcome::ParentMissing => waiting.push((line, r)),
        }
    }
    Ok(waiting)
}

/// The ended operations in the store now with the batch's ids, in one read.
async fn current<S: OperatorStore + ?Sized>(
    store: &S,
    batch: &[(u64, ArchivedOperation)],
) -> Result<HashMap<OperationId, ArchivedOperation>> {
    let ids: Vec<OperationId> = batch.iter().map(|(_, r)| r.operation.id).collect();
    let found = store
        .operation_export(OperationExportParams {
            filter: OperationFilter {
                ids: ids.clone(),
                ..OperationFilter::default()
            },
            statuses: vec![Status::Succeeded, Status::Dead, Status::Cancelled],
            after: None,
            limit: ids.len() as u32,
        })
        .await?;
    Ok(found.into_iter().map(|r| (r.operation.id, r)).collect())
}

/// Of `records`, the ids in the store that have not ended (a dry run's conflicts): one count,
/// and a look at each id only when the count is not zero.
async fn present_unended<'a, S: OperatorStore + ?Sized>(
    store: &S,
    records: impl Iterator<Item = &'a ArchivedOperation>,
) -> Result<HashSet<OperationId>> {
    let ids: Vec<OperationId> = records.map(|r| r.operation.id).collect();
    let mut there = HashSet::new();
    if ids.is_empty() {
        return Ok(there);
    }
    let counts = store
        .operation_count_matching(CountMatchingParams {
            filter: OperationFilter {
                ids: ids.clone(),
                ..OperationFilter::default()
            },
        })
        .await?;
    if counts.values().sum::<u64>() == 0 {
        return Ok(there);
    }
    for id in ids {
        if store
            .operation_get(OperationGetParams { id })
            .await?
            .is_some()
        {
            there.insert(id);
        }
    }
    Ok(there)
}

/// The report as JSON.
pub fn to_json(file: &Path, r: &Restored) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(json!({}));
    if let Value::Object(m) = &mut v {
        m.insert("file".into(), json!(file.display().to_string()));
        m.insert("changed".into(), json!(!r.dry_run && r.restored > 0));
    }
    v
}
