//! oprec-amqp: the [`Transport`](oprec_core::Transport) on AMQP 0.9.1 / RabbitMQ (lapin, tokio,
//! rustls for `amqps://`), for sites that already run RabbitMQ or a RabbitMQ cluster.
//!
//! Each wake-up is one persistent message on a durable queue, published through the default
//! exchange with publisher confirms (a batch is many publishes and one wait for confirms) and
//! consumed with manual acknowledgements under a prefetch limit. When the broker restarts, the
//! next call reconnects and declares everything again; calls during the outage fail quickly with
//! a transient error, and RabbitMQ redelivers what was unacknowledged (the store makes the
//! repeat harmless).
//!
//! Not here: the operation record, claims or retries (the store and oprec-runtime own those), and
//! exchanges, routing or dead-lettering: the broker only carries "attempt operation N now".

mod ack_tag;
mod config;
mod error;
mod inbox;
mod link;
mod redacted_url;
mod transport;

pub use config::AmqpTransportConfig;
pub use error::AmqpError;
pub use transport::AmqpTransport;
