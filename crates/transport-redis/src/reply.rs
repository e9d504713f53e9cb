//! Stream entries out of raw `XREADGROUP` and `XAUTOCLAIM` replies, as deliveries of the kind
//! whose stream held them.
//!
//! Parsed by hand rather than through redis's typed stream replies: those key fields by `String`,
//! so one entry with a non-UTF-8 field name would fail the whole batch (and be read again, and
//! fail again), and `StreamReadReply` clones the whole reply while trying its formats, copying
//! every oversized entry. Here each entry becomes a delivery, good or garbage, and the frame's
//! bytes are moved out of the reply into [`frame::decode`], never copied.

use oprec_core::frame::{self, FrameError};
use oprec_core::{AckToken, Delivery, OperationId};
use redis::Value;

/// The entry field that holds the frame.
pub(crate) const FRAME_FIELD: &str = "f";

/// What one `XAUTOCLAIM` call took over.
#[derive(Debug)]
pub(crate) struct Autoclaimed {
    /// Where the next call continues its scan of the pending entries; `0-0` once it went round.
    pub cursor: String,
    /// The entries now delivered to this consumer.
    pub deliveries: Vec<Delivery>,
    /// Pending entries that no longer existed in the stream (Redis 7 drops them from the group).
    pub deleted: usize,
}

/// The reply of `XREADGROUP ... STREAMS <stream> ... > ...`: nil when the wait ran out, else
/// (RESP2) `[[stream, [entry, ...]], ...]` or (RESP3) `{stream: [entry, ...], ...}`. `kind_of`
/// names the kind of a stream key; entries of a key it does not know are skipped (with a warning),
/// since they cannot have come from a read of this transport's streams.
pub(crate) fn read_reply(reply: Value, kind_of: impl Fn(&str) -> Option<String>) -> Vec<Delivery> {
    let per_stream: Vec<(Value, Value)> = match reply {
        Value::Nil => return Vec::new(),
        Value::Array(streams) => streams
            .into_iter()
            .filter_map(|stream| match stream {
                Value::Array(pair) if pair.len() == 2 => {
                    let mut pair = pair.into_iter();
                    Some((pair.next()?, pair.next()?))
                }
                other => {
                    tracing::warn!(reply = ?other, "XREADGROUP: unexpected stream shape, skipped");
                    None
                }
            })
            .collect(),
        Value::Map(pairs) => pairs,
        other => {
            tracing::warn!(reply = ?other, "XREADGROUP: unexpected reply, skipped");
            return Vec::new();
        }
    };
    per_stream
        .into_iter()
        .flat_map(|(key, list)| {
            let kind = text(key).and_then(|key| {
                let kind = kind_of(&key);
                if kind.is_none() {
                    tracing::warn!(key, "XREADGROUP: entries of a stream not read, skipped");
                }
                kind
            });
            match kind {
                Some(kind) => entries(list, &kind),
                None => Vec::new(),
            }
        })
        .collect()
}

/// The reply of `XAUTOCLAIM`: `[cursor, [entry, ...]]`, plus `[deleted id, ...]` from Redis 7 on.
/// Redis 6.2 puts a nil where a claimed entry was deleted; it is skipped.
pub(crate) fn autoclaim_reply(reply: Value, kind: &str) -> Autoclaimed {
    let Value::Array(mut parts) = reply else {
        tracing::warn!(reply = ?reply, "XAUTOCLAIM: unexpected reply, skipped");
        return Autoclaimed::nothing();
    };
    if !(2..=3).contains(&parts.len()) {
        tracing::warn!(reply = ?parts, "XAUTOCLAIM: unexpected reply, skipped");
        return Autoclaimed::nothing();
    }
    let deleted = match parts.len() {
        3 => match parts.pop() {
            Some(Value::Array(ids)) => ids.len(),
            _ => 0,
        },
        _ => 0,
    };
    let claimed = parts.pop().unwrap_or(Value::Nil);
    let cursor = parts
        .pop()
        .and_then(text)
        .unwrap_or_else(|| "0-0".to_owned());
    Autoclaimed {
        cursor,
        deliveries: entries(claimed, kind),
        deleted,
    }
}

impl Autoclaimed {
    fn nothing() -> Self {
        Autoclaimed {
            cursor: "0-0".to_owned(),
            deliveries: Vec::new(),
            deleted: 0,
        }
    }
}

/// `[[id, [field, value, ...]], ...]`; an entry without an id cannot be acknowledged and is
/// skipped, every other entry becomes a delivery.
fn entries(list: Value, kind: &str) -> Vec<Delivery> {
    let Value::Array(list) = list else {
        return Vec::new();
    };
    list.into_iter().filter_map(|e| entry(e, kind)).collect()
}

fn entry(entry: Value, kind: &str) -> Option<Delivery> {
    let Value::Array(parts) = entry else {
        // Nil: an entry deleted while pending (Redis 6.2 XAUTOCLAIM).
        return None;
    };
    let mut parts = parts.into_iter();
    let Some(id) = parts.next().and_then(text) else {
        tracing::warn!("stream entry without a readable id, skipped");
        return None;
    };
    let frame = frame_of(parts.next().unwrap_or(Value::Nil));
    Some(Delivery {
        ack: AckToken::Entry {
            kind: kind.to_owned(),
            id,
        },
        kind: kind.to_owned(),
        frame,
    })
}

/// The decoded `f` field of an entry's field list (flat pairs in RESP2, a map in RESP3).
fn frame_of(fields: Value) -> Result<OperationId, FrameError> {
    let value = match fields {
        Value::Array(flat) => {
            let mut flat = flat.into_iter();
            let mut found = None;
            while let (Some(name), Some(value)) = (flat.next(), flat.next()) {
                if is_frame_field(&name) {
                    found = Some(value);
                    break;
                }
            }
            found
        }
        Value::Map(pairs) => pairs
            .into_iter()
            .find(|(name, _)| is_frame_field(name))
            .map(|(_, value)| value),
        Value::Nil => {
            return Err(FrameError::Malformed(
                "the entry was deleted from the stream".into(),
            ));
        }
        _ => None,
    };
    match value {
        Some(Value::BulkString(bytes)) => frame::decode(&bytes),
        Some(Value::SimpleString(text)) => frame::decode(text.as_bytes()),
        Some(_) => Err(FrameError::Malformed(format!(
            "field {FRAME_FIELD:?} is not a byte string"
        ))),
        None => Err(FrameError::Malformed(format!(
            "the entry has no field {FRAME_FIELD:?}"
        ))),
    }
}

fn is_frame_field(name: &Value) -> bool {
    match name {
        Value::BulkString(bytes) => bytes == FRAME_FIELD.as_bytes(),
        Value::SimpleString(text) => text == FRAME_FIELD,
        _ => false,
    }
}

/// An id or cursor: ASCII digits and a dash, sent as a bulk or simple string.
fn text(value: Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
        Value::SimpleString(text) => Some(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(bytes: &[u8]) -> Value {
        Value::BulkString(bytes.to_vec())
    }

    fn entry(id: &str, fields: Vec<Value>) -> Value {
        Value::Array(vec![bulk(id.as_bytes()), Value::Array(fields)])
    }

    fn good(id: OperationId) -> Vec<Value> {
        vec![bulk(b"f"), Value::BulkString(frame::encode(id))]
    }

    fn kind_of(key: &str) -> Option<String> {
        key.strip_prefix("{p}:kind:").map(str::to_owned)
    }

    fn token(id: &str) -> AckToken {
        AckToken::Entry {
            kind: "k".into(),
            id: id.into(),
        }
    }

    #[test]
    fn a_resp2_read_reply_yields_each_entry() {
        let (a, b) = (OperationId::new(), OperationId::new());
        let reply = Value::Array(vec![
            Value::Array(vec![
                bulk(b"{p}:kind:k"),
                Value::Array(vec![entry("1-0", good(a)), entry("1-1", good(b))]),
            ]),
            Value::Array(vec![
                bulk(b"{p}:kind:other"),
                Value::Array(vec![entry("1-2", good(a))]),
            ]),
            Value::Array(vec![
                bulk(b"not-ours"),
                Value::Array(vec![entry("1-3", good(a))]),
            ]),
        ]);
        let got = read_reply(reply, kind_of);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].ack, token("1-0"));
        assert_eq!(got[0].frame, Ok(a));
        assert_eq!(got[0].kind, "k");
        assert_eq!(got[1].frame, Ok(b));
        assert_eq!(got[2].kind, "other");
    }

    #[test]
    fn a_resp3_read_reply_yields_each_entry() {
        let a = OperationId::new();
        let fields = Value::Map(vec![(bulk(b"f"), Value::BulkString(frame::encode(a)))]);
        let reply = Value::Map(vec![(
            bulk(b"{p}:kind:k"),
            Value::Array(vec![Value::Array(vec![bulk(b"2-0"), fields])]),
        )]);
        assert_eq!(read_reply(reply, kind_of)[0].frame, Ok(a));
    }

    #[test]
    fn a_timed_out_read_is_empty() {
        assert!(read_reply(Value::Nil, kind_of).is_empty());
    }

    #[test]
    fn odd_entries_are_garbage_deliveries_not_failures() {
        let reply = Value::Array(vec![Value::Array(vec![
            bulk(b"{p}:kind:k"),
            Value::Array(vec![
                entry("1-0", vec![bulk(b"g"), bulk(b"1:x")]),
                entry("1-1", vec![bulk(&[0xff, 0xfe]), bulk(b"x")]),
                entry("1-2", vec![bulk(b"f"), Value::Int(7)]),
                entry("1-3", vec![bulk(b"f")]),
                Value::Array(vec![bulk(b"1-4"), Value::Nil]),
                entry("1-5", vec![bulk(b"f"), bulk(&[b'1'; 10_000])]),
                Value::Nil,
                Value::Array(vec![Value::Int(3)]),
            ]),
        ])]);
        let got = read_reply(reply, kind_of);
        let ids: Vec<_> = got.iter().map(|d| d.ack.clone()).collect();
        assert_eq!(
            ids,
            ["1-0", "1-1", "1-2", "1-3", "1-4", "1-5"]
                .map(token)
                .to_vec()
        );
        for d in &got[..5] {
            assert!(matches!(d.frame, Err(FrameError::Malformed(_))), "{d:?}");
        }
        assert_eq!(got[5].frame, Err(FrameError::Oversized(10_000)));
    }

    #[test]
    fn autoclaim_keeps_the_cursor_and_skips_deleted_entries() {
        let a = OperationId::new();
        let reply = Value::Array(vec![
            bulk(b"5-0"),
            Value::Array(vec![Value::Nil, entry("3-0", good(a))]),
            Value::Array(vec![bulk(b"4-0")]),
        ]);
        let got = autoclaim_reply(reply, "k");
        assert_eq!(got.cursor, "5-0");
        assert_eq!(got.deleted, 1);
        assert_eq!(got.deliveries.len(), 1);
        assert_eq!(got.deliveries[0].frame, Ok(a));

        // Redis 6.2: no list of deleted ids.
        let reply = Value::Array(vec![bulk(b"0-0"), Value::Array(vec![])]);
        let got = autoclaim_reply(reply, "k");
        assert_eq!((got.cursor.as_str(), got.deleted), ("0-0", 0));
        assert!(got.deliveries.is_empty());

        assert_eq!(autoclaim_reply(Value::Okay, "k").cursor, "0-0");
    }
}
