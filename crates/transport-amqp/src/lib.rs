//! oprec-amqp: the [`Transport`](oprec_core::Transport) on AMQP 0.9.1 / RabbitMQ (lapin, tokio,
//! rustls for `amqps://`), for sites that already run RabbitMQ or a RabbitMQ cluster.
//!
//! Each wake-up is one persistent message, published with publisher confirms (a batch is many
//! publishes and one wait for confirms) to the durable direct exchange `<prefix>` (default
//! `oprec.wakeups`) with its kind as routing key. Each kind has a durable queue
//! `<prefix>.<kind>` bound with that key, so workers consume only the queues of the kinds they
//! run, with manual acknowledgements under a prefetch limit, and pools split by kind never take
//! each other's wake-ups. `?queue_type=quorum` declares quorum queues, for a RabbitMQ cluster. When the broker restarts, the
//! next call reconnects and declares everything again; calls during the outage fail quickly with
//! a transient error, and RabbitMQ redelivers what was unacknowledged (the store makes the
//! repeat harmless).
//!
//! Not here: the operation record, claims or retries (the store and oprec-runtime own those), and
//! dead-lettering: the broker only carries "attempt operation N now".

mod ack_tag;
mod config;
mod error;
mod inbox;
mod link;
mod redacted_url;
mod transport;

pub use config::{AmqpTransportConfig, MAX_PREFIX_BYTES};
pub use error::AmqpError;
pub use transport::AmqpTransport;
