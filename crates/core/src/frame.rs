//! The wake-up frame: a version and an operation id, nothing else. The broker carries only
//! "attempt operation N now"; everything else lives in the row.
//!
//! Wire form (text, so a frame is readable in `redis-cli` or the RabbitMQ console):
//! `1:<uuid>` — e.g. `1:01938f6e-7a51-7c3a-9d2e-5b7f0c1d2e3f`.

use crate::OperationId;

/// The only frame version so far.
pub const FRAME_VERSION: u8 = 1;

/// A frame longer than this is refused without being parsed.
pub const MAX_FRAME_BYTES: usize = 64;

/// Why bytes taken off a broker are not a wake-up frame. The consumer counts, logs and
/// acknowledges such a delivery; it never crashes on one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// No bytes at all.
    #[error("empty frame")]
    Empty,
    /// More bytes than any frame has.
    #[error("oversized frame: {0} bytes (a frame has at most {MAX_FRAME_BYTES})")]
    Oversized(usize),
    /// A version this build does not know.
    #[error("unknown frame version {0:?}")]
    UnknownVersion(String),
    /// Not `<version>:<uuid>`.
    #[error("malformed frame: {0}")]
    Malformed(String),
}

/// Encodes the wake-up for `id`.
pub fn encode(id: OperationId) -> Vec<u8> {
    format!("{FRAME_VERSION}:{id}").into_bytes()
}

/// Decodes a frame; anything but a well-formed, known-version frame is an error.
pub fn decode(bytes: &[u8]) -> Result<OperationId, FrameError> {
    if bytes.is_empty() {
        return Err(FrameError::Empty);
    }
    if bytes.len() > MAX_FRAME_BYTES {
        return Err(FrameError::Oversized(bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| FrameError::Malformed("not UTF-8".into()))?;
    let (version, id) = text
        .split_once(':')
        .ok_or_else(|| FrameError::Malformed("no ':' between version and id".into()))?;
    if version != FRAME_VERSION.to_string() {
        return Err(FrameError::UnknownVersion(
            version.chars().take(16).collect(),
        ));
    }
    // Exactly what `encode` writes: lowercase hex, hyphenated. The uuid parser alone would also
    // take uppercase digits, so one id would have many frames.
    let canonical = id.len() == 36
        && id.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        });
    if !canonical {
        return Err(FrameError::Malformed(
            "the id is not a lowercase hyphenated UUID".into(),
        ));
    }
    id.parse::<OperationId>()
        .map_err(|e| FrameError::Malformed(format!("the id is not a UUID: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let id = OperationId::new();
        assert_eq!(decode(&encode(id)), Ok(id));
        assert_eq!(encode(id).len(), 38);
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        assert_eq!(decode(b""), Err(FrameError::Empty));
        assert_eq!(decode(&[b'x'; 65]), Err(FrameError::Oversized(65)));
        assert!(matches!(decode(b"hello"), Err(FrameError::Malformed(_))));
        assert!(matches!(
            decode(&[0xff, 0xfe, b':']),
            Err(FrameError::Malformed(_))
        ));
        assert!(matches!(
            decode(b"2:01938f6e-7a51-7c3a-9d2e-5b7f0c1d2e3f"),
            Err(FrameError::UnknownVersion(v)) if v == "2"
        ));
        assert!(matches!(
            decode(b"1:not-a-uuid"),
            Err(FrameError::Malformed(_))
        ));
        assert!(matches!(
            decode(b"1:01938f6e7a517c3a9d2e5b7f0c1d2e3f"),
            Err(FrameError::Malformed(_))
        ));
        // Found by tests/frame_fuzz.rs: uppercase digits parse as a UUID but are not a frame.
        assert!(matches!(
            decode(b"1:01938F6E-7A51-7C3A-9D2E-5B7F0C1D2E3F"),
            Err(FrameError::Malformed(_))
        ));
        // Truncated frame.
        let full = encode(OperationId::new());
        for cut in 0..full.len() {
            assert!(decode(&full[..cut]).is_err(), "cut at {cut}");
        }
    }
}
