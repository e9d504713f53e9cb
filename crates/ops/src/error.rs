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
    /// A file could not be created, written, synced or read.
    #[error("{context}: {source}")]
    File {
        /// What was being done, and to which file.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An archive file did not read back as it was written: nothing of that batch was removed.
    #[error(
        "the archive file did not read back as written ({0}); nothing of this batch was removed from the store"
    )]
    Verify(String),
}

impl Error {
    /// A file error: `context` says what was being done to which file.
    pub(crate) fn file(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::File {
            context: context.into(),
            source,
        }
    }
}

/// Result with the operator workflows' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
