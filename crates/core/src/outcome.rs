//! What a handler's attempt produced, before the policy decides what follows: success (with the
//! effect's remote identity) or a classified failure.

use crate::Failure;

/// What a handler's attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The effect happened; `remote_id` is its identity on the remote side, when known.
    Succeeded {
        /// The remote identity of the effect.
        remote_id: Option<String>,
    },
    /// The attempt failed with a class that decides what happens next.
    Failed(Failure),
}

impl Outcome {
    /// Success with no remote identity.
    pub fn success() -> Self {
        Outcome::Succeeded { remote_id: None }
    }
}

impl From<Failure> for Outcome {
    fn from(f: Failure) -> Self {
        Outcome::Failed(f)
    }
}
