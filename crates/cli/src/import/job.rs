//! One legacy message: its idempotency key and the payload its operation gets.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How much of a malformed body its operation keeps (the rest is summarised by length and hash).
const MALFORMED_BODY_KEPT: usize = 16 * 1024;

/// A legacy message, parsed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Job {
    /// A JSON job: its payload is the job as it was.
    Valid {
        /// The job's id field, or `sha256:` and the hash of its body.
        key: String,
        /// The job.
        payload: Value,
    },
    /// A message that is not JSON (or holds an integer wider than 64 bits, which JSON would
    /// round): imported as a held operation carrying the parse error.
    Malformed {
        /// `sha256:` and the hash of the body.
        key: String,
        /// The body (lossy UTF-8, truncated), its length and the parse error.
        payload: Value,
        /// Why it did not parse.
        error: String,
    },
}

fn body_hash(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl Job {
    /// Parses a body; the key is the string or number in `id_field` when there is one.
    pub(crate) fn parse(body: &[u8], id_field: &str) -> Job {
        let parsed = std::str::from_utf8(body)
            .map_err(|e| format!("not UTF-8 text: {e}"))
            .and_then(|text| oprec::ops::payload::parse("the body", text).map_err(|e| e.0));
        match parsed {
            Ok(payload) => {
                let key = match payload.get(id_field) {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => body_hash(body),
                };
                Job::Valid { key, payload }
            }
            Err(e) => {
                let text = String::from_utf8_lossy(body);
                let kept: String = text.chars().take(MALFORMED_BODY_KEPT).collect();
                Job::Malformed {
                    key: body_hash(body),
                    payload: json!({
                        "legacy_body": kept,
                        "legacy_body_bytes": body.len(),
                        "parse_error": e,
                    }),
                    error: e,
                }
            }
        }
    }

    /// The idempotency key.
    pub(crate) fn key(&self) -> &str {
        match self {
            Job::Valid { key, .. } | Job::Malformed { key, .. } => key,
        }
    }

    /// The operation's payload.
    pub(crate) fn payload(&self) -> Value {
        match self {
            Job::Valid { payload, .. } | Job::Malformed { payload, .. } => payload.clone(),
        }
    }

    /// Whether the body was not JSON (or held an integer JSON would round).
    pub(crate) fn is_malformed(&self) -> bool {
        matches!(self, Job::Malformed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_id_or_the_body_hash() {
        assert_eq!(Job::parse(br#"{"id":"j-1","x":1}"#, "id").key(), "j-1");
        assert_eq!(Job::parse(br#"{"id":42}"#, "id").key(), "42");
        assert_eq!(Job::parse(br#"{"jid":"a"}"#, "jid").key(), "a");
        let a = Job::parse(br#"{"x":1}"#, "id");
        assert!(a.key().starts_with("sha256:") && a.key().len() == 7 + 64);
        assert_eq!(a.key(), Job::parse(br#"{"x":1}"#, "id").key());
        assert_ne!(a.key(), Job::parse(br#"{"x":2}"#, "id").key());
    }

    #[test]
    fn a_body_that_is_not_json_keeps_its_text_and_the_error() {
        let j = Job::parse(b"{not json", "id");
        let Job::Malformed { payload, error, .. } = &j else {
            panic!("{j:?}")
        };
        assert!(error.contains("line 1"), "{error}");
        assert_eq!(payload["legacy_body"], "{not json");
        assert_eq!(payload["parse_error"], error.as_str());
    }

    #[test]
    fn an_integer_wider_than_64_bits_is_held_not_rounded() {
        let j = Job::parse(br#"{"id":123456789012345678901234567890}"#, "id");
        let Job::Malformed { error, .. } = &j else {
            panic!("{j:?}")
        };
        assert!(error.contains("wider than 64 bits"), "{error}");
    }
}
