//! What an operator workflow can fail with: input a person typed that cannot be used (said in a
//! sentence that names what is accepted), the store, or the broker.

/// A value a person typed that cannot be used. The message names the field as the front end
/// spells it and says what is accepted; front ends turn it into their own refusal (the CLI's
/// exit code 2, the dashboard's 400 page). Nothing has been changed when it is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl InputError {
    /// A refusal saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        InputError(message.into())
    }
}

/// Every way an operator workflow can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad input: nothing was done.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] oprec_core::Error),
    /// The broker failed (a purge it refused or did not answer).
    #[error("the broker failed: {0}")]
    Transport(#[source] oprec_core::Error),
}

/// Result with the operator workflows' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
