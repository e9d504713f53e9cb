//! How an AMQP call fails, and which failures are worth retrying.

use std::time::Duration;

use lapin::ErrorKind;
use lapin::protocol::{AMQPErrorKind, AMQPHardError, AMQPSoftError};

/// Every way the AMQP transport fails. It reaches callers as the source of an
/// [`oprec_core::Error::Backend`], whose `transient` flag comes from [`AmqpError::is_transient`].
/// No variant carries the broker URL's password.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AmqpError {
    /// Connecting, or declaring the queue, channels and consumer on a new connection, failed.
    #[error("connecting to {url}: {source}")]
    Connect {
        /// The broker URL, password redacted.
        url: String,
        /// What lapin or the broker said.
        #[source]
        source: lapin::Error,
    },
    /// Connecting took longer than the configured `connect_timeout`.
    #[error("connecting to {url}: no answer within {after:?}")]
    ConnectTimedOut {
        /// The broker URL, password redacted.
        url: String,
        /// The bound that passed.
        after: Duration,
    },
    /// A call on an open connection failed (connection lost, channel closed by the broker).
    #[error("{operation}: {source}")]
    Broker {
        /// What was being done (`basic.publish`, `queue.purge`...).
        operation: &'static str,
        /// What lapin or the broker said.
        #[source]
        source: lapin::Error,
    },
    /// A broker round trip took longer than the configured `operation_timeout`; the connection is
    /// replaced on the next call.
    #[error("{operation}: no answer from the broker within {after:?}")]
    TimedOut {
        /// What was being done.
        operation: &'static str,
        /// The bound that passed.
        after: Duration,
    },
    /// The broker refused (nacked) some wake-ups of a batch: it could not take responsibility for
    /// them. The whole batch may be published again.
    #[error("the broker refused {refused} of {published} wake-ups (publisher confirm nack)")]
    Refused {
        /// How many were nacked.
        refused: usize,
        /// How many the batch held.
        published: usize,
    },
    /// The broker returned wake-ups as unroutable: the queue no longer exists. It is declared again
    /// on the next call.
    #[error("{returned} wake-ups were returned unroutable: queue {queue:?} does not exist")]
    Unroutable {
        /// The queue published to.
        queue: String,
        /// How many came back.
        returned: usize,
    },
    /// The broker cancelled the consumer (the queue was deleted); it is registered again on the
    /// next call.
    #[error("the broker cancelled the consumer of queue {queue:?}")]
    ConsumerCancelled {
        /// The queue consumed from.
        queue: String,
    },
}

impl AmqpError {
    /// Whether the same call may succeed later: lost connections, timeouts, a broker shutting down
    /// or short of resources, a missing queue (declared again on reconnect) are; refused
    /// credentials, an unknown virtual host or a queue declared with other arguments are not.
    pub fn is_transient(&self) -> bool {
        match self {
            AmqpError::Connect { source, .. } | AmqpError::Broker { source, .. } => {
                lapin_error_is_transient(source)
            }
            AmqpError::ConnectTimedOut { .. }
            | AmqpError::TimedOut { .. }
            | AmqpError::Refused { .. }
            | AmqpError::Unroutable { .. }
            | AmqpError::ConsumerCancelled { .. } => true,
        }
    }
}

fn lapin_error_is_transient(error: &lapin::Error) -> bool {
    match error.kind() {
        ErrorKind::IOError(_)
        | ErrorKind::MissingHeartbeatError
        | ErrorKind::InvalidChannel(_)
        | ErrorKind::InvalidChannelState(..)
        | ErrorKind::InvalidConnectionState(_)
        | ErrorKind::ChannelsLimitReached => true,
        ErrorKind::ProtocolError(amqp) => match amqp.kind() {
            AMQPErrorKind::Soft(soft) => matches!(
                soft,
                AMQPSoftError::NOTFOUND | AMQPSoftError::RESOURCELOCKED
            ),
            AMQPErrorKind::Hard(hard) => matches!(
                hard,
                AMQPHardError::CONNECTIONFORCED
                    | AMQPHardError::RESOURCEERROR
                    | AMQPHardError::INTERNALERROR
                    | AMQPHardError::CHANNELERROR
            ),
        },
        _ => false,
    }
}

impl From<AmqpError> for oprec_core::Error {
    fn from(error: AmqpError) -> Self {
        oprec_core::Error::backend(error.is_transient(), error)
    }
}
