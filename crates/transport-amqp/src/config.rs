//! What an [`AmqpTransport`](crate::AmqpTransport) declares and how long it waits.

use std::time::Duration;

use lapin::types::{AMQPValue, FieldTable, LongString};

/// The queue, prefetch and time bounds of an [`AmqpTransport`](crate::AmqpTransport).
///
/// Every process that shares a queue must declare it alike (`queue_type`, `queue_expires`):
/// RabbitMQ refuses a declaration that differs from the existing queue (`PRECONDITION_FAILED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmqpTransportConfig {
    /// The durable queue that carries the wake-ups (default `oprec.wakeups`). Published to through
    /// the default exchange, so the queue name is the routing key.
    pub queue: String,
    /// How many deliveries the broker may hand this transport before it acknowledges any
    /// (`basic.qos`, per consumer; default 128, so a second worker gets a share of a backlog). 0
    /// means unlimited.
    pub prefetch: u16,
    /// `x-queue-type` for the declaration (`"classic"`, `"quorum"`), or `None` for the broker's
    /// default. Quorum queues are what a RabbitMQ cluster wants.
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
            queue: "oprec.wakeups".to_owned(),
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

impl AmqpTransportConfig {
    /// The defaults, on another queue.
    pub fn for_queue(queue: impl Into<String>) -> Self {
        AmqpTransportConfig {
            queue: queue.into(),
            ..AmqpTransportConfig::default()
        }
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
