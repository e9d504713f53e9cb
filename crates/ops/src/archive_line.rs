//! The archive file's format: JSON Lines, one line per operation. A line is either a record,
//! `{"format":"oprec-archive/1","sha256":"…","record":{…}}` (the operation with its attempts and
//! steps, and the SHA-256 of the record's JSON), or a keep note,
//! `{"format":"oprec-archive/1","kept":"<id>","reason":"…"}`, written after a record whose
//! operation changed while it was being archived and so stayed in the store: a restore skips
//! the records its notes name.
//!
//! The checksum is taken over the record as serialized (fields in declaration order, JSON
//! objects with sorted keys), so a line read back and serialized again hashes the same, and any
//! edit of a value does not.

use oprec_core::OperationId;
use oprec_core::archive::ArchivedOperation;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The format name every line carries.
pub const FORMAT: &str = "oprec-archive/1";

/// One line of an archive file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record: Option<ArchivedOperation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kept: Option<OperationId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// What a line of an archive file holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// An operation with its whole history, its checksum verified.
    Record(Box<ArchivedOperation>),
    /// The note that this operation stayed in the store: its record above is not to be restored.
    Kept(OperationId),
}

/// The SHA-256 of `record`'s JSON, in hex.
pub fn checksum(record: &ArchivedOperation) -> String {
    let json = serde_json::to_vec(record).unwrap_or_default();
    hex::encode(Sha256::digest(&json))
}

/// The line for `record`, with its newline.
pub fn record_line(record: &ArchivedOperation) -> String {
    line(&Line {
        format: FORMAT.to_owned(),
        sha256: Some(checksum(record)),
        record: Some(record.clone()),
        kept: None,
        reason: None,
    })
}

/// The note that `id` stayed in the store, with its newline.
pub fn kept_line(id: OperationId, reason: &str) -> String {
    line(&Line {
        format: FORMAT.to_owned(),
        sha256: None,
        record: None,
        kept: Some(id),
        reason: Some(reason.to_owned()),
    })
}

fn line(l: &Line) -> String {
    let mut s = serde_json::to_string(l).unwrap_or_default();
    s.push('\n');
    s
}

/// Reads one line (without its newline): a record whose checksum holds, or a keep note. The
/// error says what is wrong, in a sentence.
pub fn parse(text: &str) -> Result<Entry, String> {
    let l: Line = serde_json::from_str(text).map_err(|e| format!("not an archive line: {e}"))?;
    if l.format != FORMAT {
        return Err(format!(
            "format {:?} is not {FORMAT:?}, the only one this oprec reads",
            crate::cut(&l.format, 40)
        ));
    }
    match (l.record, l.sha256, l.kept) {
        (Some(record), Some(sum), None) => {
            let actual = checksum(&record);
            if actual != sum {
                return Err(format!(
                    "checksum mismatch: the line says {}, its record hashes to {actual}; the \
                     line was changed after it was written",
                    crate::cut(&sum, 64)
                ));
            }
            Ok(Entry::Record(Box::new(record)))
        }
        (None, None, Some(id)) => Ok(Entry::Kept(id)),
        _ => Err("neither a record with its sha256 nor a keep note".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use oprec_core::archive::Bookkeeping;
    use oprec_core::{Operation, Status};
    use serde_json::json;

    fn record() -> ArchivedOperation {
        let t = chrono::Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        ArchivedOperation {
            operation: Operation {
                id: OperationId::new(),
                kind: "k".into(),
                idempotency_key: None,
                payload: json!({"amount": 12.5, "to": "x"}),
                payload_mode: None,
                status: Status::Dead,
                attempt: 1,
                max_attempts: Some(1),
                next_eligible_at: t,
                give_up_at: None,
                lease_until: None,
                claim_token: None,
                claimed_at: None,
                worker_id: None,
                last_failure_class: None,
                last_error: None,
                remote_id: None,
                dependency: None,
                terminal_reason: Some(oprec_core::TerminalReason::Permanent),
                code_version: None,
                enqueue_params: json!({}),
                redrive_of: None,
                redrive_root: None,
                redriven_as: None,
                redrive_count: 0,
                vanished_streak: 0,
                suspect: false,
                isolated: false,
                snoozes: 0,
                unknowns: 0,
                last_woken_at: None,
                created_at: t,
                updated_at: t,
                terminal_at: Some(t),
                traceparent: None,
            },
            bookkeeping: Bookkeeping::default(),
            attempts: vec![],
            steps: vec![],
        }
    }

    #[test]
    fn a_line_reads_back_as_written_and_an_edit_breaks_its_checksum() {
        let r = record();
        let line = record_line(&r);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert_eq!(
            parse(line.trim_end()).unwrap(),
            Entry::Record(Box::new(r.clone()))
        );
        let edited = line.replace("12.5", "125");
        assert!(
            parse(edited.trim_end())
                .unwrap_err()
                .contains("checksum mismatch")
        );
        let kept = kept_line(r.operation.id, "changed");
        assert_eq!(parse(kept.trim_end()).unwrap(), Entry::Kept(r.operation.id));
        assert!(parse("{}").unwrap_err().contains("not an archive line"));
        let other = line.replace(FORMAT, "oprec-archive/9");
        assert!(parse(other.trim_end()).unwrap_err().contains("format"));
        assert!(
            parse(&format!("{{\"format\":\"{FORMAT}\"}}"))
                .unwrap_err()
                .contains("neither")
        );
    }

    #[test]
    fn verify_refuses_a_batch_that_did_not_read_back_as_written() {
        use crate::archive::verify;
        let (a, b) = (record(), record());
        let text = record_line(&a) + &record_line(&b);
        verify(text.as_bytes(), &[a.clone(), b.clone()]).unwrap();
        let fail =
            |bytes: &[u8], recs: &[ArchivedOperation]| verify(bytes, recs).unwrap_err().to_string();
        assert!(fail(text.as_bytes(), std::slice::from_ref(&a)).contains("2 lines read back"));
        let swapped = record_line(&b) + &record_line(&a);
        assert!(fail(swapped.as_bytes(), &[a.clone(), b.clone()]).contains("not"));
        let torn = &text.as_bytes()[..text.len() - 5];
        assert!(fail(torn, &[a.clone(), b.clone()]).contains("newline"));
        let edited = text.replace("12.5", "13.5");
        assert!(fail(edited.as_bytes(), &[a, b]).contains("checksum mismatch"));
    }
}
