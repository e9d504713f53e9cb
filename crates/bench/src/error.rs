//! What can go wrong while benchmarking.

/// Represents all the ways a benchmark can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The settings cannot make a benchmark (bad usage).
    #[error("{0}")]
    Invalid(String),
    /// PostgreSQL refused or failed a statement.
    #[error("PostgreSQL: {0}")]
    Database(#[from] sqlx::Error),
    /// The store or a transport failed.
    #[error(transparent)]
    Store(#[from] oprec::Error),
    /// Redis failed while the benchmark cleaned up its stream.
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// RabbitMQ failed while the benchmark cleaned up its queue.
    #[error("RabbitMQ: {0}")]
    Amqp(#[from] lapin::Error),
    /// The worker process could not be started, failed, or did not finish in time.
    #[error("the worker process: {0}")]
    Worker(String),
    /// A phase did not end as it must (e.g. an operation not succeeded after the drain).
    #[error("check failed: {0}")]
    Check(String),
    /// Reading `/proc` or a pipe failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// Whether the error is the caller's bad usage rather than a failure of the run.
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, Error::Invalid(_))
    }
}

/// The benchmark's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
