//! The operation's identity: a UUID v7, time-ordered, generated at enqueue, and the N in
//! "attempt operation N now".

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The identity of an operation: a UUID v7, so ids sort by creation time. It is the N in
/// "attempt operation N now".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OperationId(Uuid);

impl OperationId {
    /// A new time-ordered id.
    pub fn new() -> Self {
        OperationId(Uuid::now_v7())
    }

    /// Wraps an existing UUID (read back from a store or a wake-up frame).
    pub const fn from_uuid(uuid: Uuid) -> Self {
        OperationId(uuid)
    }

    /// The underlying UUID.
    pub const fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl Default for OperationId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for OperationId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s.trim()).map(OperationId)
    }
}

impl From<Uuid> for OperationId {
    fn from(u: Uuid) -> Self {
        OperationId(u)
    }
}
