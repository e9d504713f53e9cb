//! The producer's W3C trace context (`traceparent`), kept on an operation from its enqueue so
//! that every later attempt's span can point back at the request that asked for the work.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// A W3C `traceparent` value (<https://www.w3.org/TR/trace-context/#traceparent-header>):
/// `version-trace_id-parent_id-flags`, as `00-` 32 hex digits `-` 16 hex digits `-` 2 hex digits.
/// Only well-formed values are ever stored: a malformed one is refused at enqueue, so a reader
/// never has to guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent(String);

impl TraceParent {
    /// Checks `value` and keeps it (lowercase, as the specification writes it).
    ///
    /// Refuses anything but version `00` with a 32-digit trace id and a 16-digit parent id, both
    /// not all zeros (the specification's invalid values), and two digits of flags.
    pub fn parse(value: &str) -> Result<Self> {
        let refuse = |why: &str| {
            Err(Error::InvalidInput(format!(
                "traceparent {value:?} is not a W3C trace context ({why}); expected \
                 00-<32 hex digits>-<16 hex digits>-<2 hex digits>, such as \
                 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            )))
        };
        let parts: Vec<&str> = value.split('-').collect();
        let [version, trace_id, parent_id, flags] = parts.as_slice() else {
            return refuse("four fields separated by '-' expected");
        };
        let hex = |s: &str, n: usize| {
            s.len() == n
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if *version != "00" {
            return refuse("the version must be 00");
        }
        if !hex(trace_id, 32) {
            return refuse("the trace id must be 32 lowercase hex digits");
        }
        if !hex(parent_id, 16) {
            return refuse("the parent id must be 16 lowercase hex digits");
        }
        if !hex(flags, 2) {
            return refuse("the flags must be 2 lowercase hex digits");
        }
        if trace_id.bytes().all(|b| b == b'0') || parent_id.bytes().all(|b| b == b'0') {
            return refuse("an all-zero trace id or parent id is invalid");
        }
        Ok(TraceParent(value.to_owned()))
    }

    /// The value as stored and sent (`00-...-...-..`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The trace id: 32 hex digits.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }

    /// The parent (span) id: 16 hex digits.
    pub fn parent_id(&self) -> &str {
        &self.0[36..52]
    }

    /// Whether the producer sampled its trace (the flags' lowest bit).
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.0[53..55], 16).is_ok_and(|f| f & 1 == 1)
    }
}

impl FromStr for TraceParent {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        TraceParent::parse(s)
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for TraceParent {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TraceParent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TraceParent::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_w3c_traceparent_is_kept_and_read() {
        let t = TraceParent::parse(GOOD).unwrap();
        assert_eq!(t.as_str(), GOOD);
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_id(), "00f067aa0ba902b7");
        assert!(t.sampled());
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json, serde_json::json!(GOOD));
        assert_eq!(serde_json::from_value::<TraceParent>(json).unwrap(), t);
    }

    #[test]
    fn malformed_traceparents_are_refused_with_the_expected_shape() {
        for bad in [
            "",
            "garbage",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            let err = TraceParent::parse(bad).unwrap_err().to_string();
            assert!(err.contains("is not a W3C trace context"), "{bad}: {err}");
            assert!(err.contains("00-<32 hex digits>"), "{bad}: {err}");
        }
    }
}
