//! What an [`AmqpTransport`](crate::AmqpTransport) declares and how long it waits.

use std::time::Duration;

use lapin::types::{AMQPValue, FieldTable, LongString};

/// The names, prefetch and time bounds of an [`AmqpTransport`](crate::AmqpTransport).
///
/// Wake-ups are published to the durable direct exchange `<prefix>` with their kind as the
/// routing key; each kind has a durable queue `<prefix>.<kind>` bound to it with that key, so a
/// worker consumes only the queues of the kinds it runs.
///
/// Every process that shares the queues must declare them alike (`queue_type`, `queue_expires`):
/// RabbitMQ refuses a declaration that differs from the existing queue (`PRECONDITION_FAILED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmqpTransportConfig {
    /// The exchange's name and the start of every kind's queue name (default `oprec.wakeups`:
    /// queues `oprec.wakeups.<kind>`). At most [`MAX_PREFIX_BYTES`] bytes, not starting with
    /// `amq.`.
    pub prefix: String,
    /// How many deliveries the broker may hand each consumer (one per kind) of this transport
    /// before it acknowledges any (`basic.qos`, per consumer; default 128, so a second worker gets
    /// a share of a backlog). 0 means unlimited.
    pub prefetch: u16,
    /// `x-queue-type` for the declaration (`"classic"`, `"quorum"`), or `None` for the broker's
    /// default. Quorum queues (`?queue_type=quorum` in the URL) are what a RabbitMQ cluster
    /// wants: replicated on a majority of nodes, they survive the loss of a minority.
    pub queue_type: Option<String>,
    /// `x-expires`: the broker deletes the queue once it has had no consumer for this long. For
    /// short-lived queues (tests, previews); `None` (the default) keeps the queue forever.
    pub queue_expires: Option<Duration>,
    /// The connection name shown by `rabbitmqctl list_connections client_properties` and the
    /// management UI (default `oprec-amqp`).
    pub connection_name: String,
    /// The longest a (re)connection may take, TCP and AMQP handshake and declarations included,
    /// before the call that needed it fails with a transient error (default 5 s).
    pub connect_timeout: Duration,
    /// The longest a broker round trip (publisher confirms, purge, depth) may take before the call
    /// fails with a transient error and the connection is replaced (default 30 s).
    pub operation_timeout: Duration,
}

impl Default for AmqpTransportConfig {
    fn default() -> Self {
        AmqpTransportConfig {
            prefix: "oprec.wakeups".to_owned(),
            // Small enough that a second worker gets a share of a backlog; the worker acknowledges
            // right after claiming, so the window only covers receive → claim.
            prefetch: 128,
            queue_type: None,
            queue_expires: None,
            connection_name: "oprec-amqp".to_owned(),
            connect_timeout: Duration::from_secs(5),
            operation_timeout: Duration::from_secs(30),
        }
    }
}

/// The longest prefix: with a kind of [`oprec_core::transport::MAX_KIND_BYTES`] and the dot, a
/// queue name stays within AMQP's 255 bytes.
pub const MAX_PREFIX_BYTES: usize = 54;

impl AmqpTransportConfig {
    /// The defaults, under another prefix (another exchange and set of queues).
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        AmqpTransportConfig {
            prefix: prefix.into(),
            ..AmqpTransportConfig::default()
        }
    }

    /// The queue of `kind`'s wake-ups: `<prefix>.<kind>`.
    pub fn queue_of(&self, kind: &str) -> String {
        format!("{}.{kind}", self.prefix)
    }

    /// Checks the prefix: not empty, at most [`MAX_PREFIX_BYTES`], not in the broker's own `amq.`
    /// namespace.
    pub(crate) fn check(&self) -> oprec_core::Result<()> {
        let p = &self.prefix;
        if p.is_empty() || p.len() > MAX_PREFIX_BYTES || p.starts_with("amq.") {
            return Err(oprec_core::Error::InvalidInput(format!(
                "the AMQP prefix {p:?} must be 1 to {MAX_PREFIX_BYTES} bytes and not start with \"amq.\""
            )));
        }
        Ok(())
    }

    /// The `queue.declare` arguments these settings ask for.
    pub(crate) fn queue_arguments(&self) -> FieldTable {
        let mut arguments = FieldTable::default();
        if let Some(queue_type) = &self.queue_type {
            arguments.insert(
                "x-queue-type".into(),
                AMQPValue::LongString(LongString::from(queue_type.as_str())),
            );
        }
        if let Some(expires) = self.queue_expires {
            let millis = i64::try_from(expires.as_millis())
                .unwrap_or(i64::MAX)
                .max(1);
            arguments.insert("x-expires".into(), AMQPValue::LongLongInt(millis));
        }
        arguments
    }
}
