//! oprec's error: what a core or store call can fail with, and whether trying again may help.

use crate::OperationId;

/// Every way a core or store call can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The claim token no longer matches: the lease was taken over or the operation moved on.
    /// The write changed nothing.
    #[error(
        "stale claim on operation {id}: the lease was taken over or the operation already moved on"
    )]
    StaleClaim {
        /// The operation whose claim was stale.
        id: OperationId,
    },
    /// No operation has this id.
    #[error("operation {0} not found")]
    NotFound(OperationId),
    /// The database has no oprec tables (or not all of them): `oprec migrate` (or
    /// [`Store::migrate`](crate::Store::migrate)) has not been run against it.
    #[error("the database has no oprec tables: run `oprec migrate` first ({detail})")]
    SchemaMissing {
        /// What the database said.
        detail: String,
    },
    /// A value given by a caller is not acceptable (bad policy, bad filter, oversized payload).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The backend (database, broker) failed. `transient` says whether the same call may succeed
    /// later, which feeds failure classification.
    #[error("backend error ({}): {source}", if *.transient { "transient" } else { "permanent" })]
    Backend {
        /// Whether retrying the same call later may succeed (connection lost, pool timeout).
        transient: bool,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl Error {
    /// Wraps a driver error, stating whether it is transient.
    pub fn backend(
        transient: bool,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Error::Backend {
            transient,
            source: source.into(),
        }
    }

    /// Whether the same call may succeed later.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Backend {
                transient: true,
                ..
            }
        )
    }
}

/// Result with oprec's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
