//! The transports a benchmark drains with, each phase on its own Redis stream or RabbitMQ queue
//! (named through the facade's `?stream=` / `?queue=` URL parameters) so no run sees another's
//! wake-ups.

use std::sync::Arc;

use crate::{Error, Result};

/// How long RabbitMQ keeps a benchmark queue after its last consumer leaves.
const QUEUE_EXPIRES_SECS: u32 = 120;

/// The broker family of a transport URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// No broker: workers claim from the store.
    Poll,
    /// Redis Streams.
    Redis,
    /// AMQP 0.9.1.
    Amqp,
}

/// A transport as given on the command line.
#[derive(Clone, Debug)]
pub(crate) struct TransportSpec {
    pub family: Family,
    url: String,
}

/// One phase's transport: a fresh stream or queue on the given broker.
pub(crate) struct PhaseTransport {
    /// The URL for the worker process and the client (with the fresh stream or queue).
    pub url: String,
    /// Redis: the stream to delete afterwards.
    stream: Option<String>,
    base: String,
}

impl TransportSpec {
    pub(crate) fn parse(url: &str) -> Result<Self> {
        let family = match url.split_once(':').map_or(url, |(s, _)| s) {
            "poll" | "none" => Family::Poll,
            "redis" | "rediss" => Family::Redis,
            "amqp" | "amqps" => Family::Amqp,
            _ => {
                return Err(Error::Invalid(format!(
                    "unsupported transport {}: use poll, redis://HOST or amqp://HOST",
                    oprec::redact_url(url)
                )));
            }
        };
        Ok(TransportSpec {
            family,
            url: url.to_owned(),
        })
    }

    /// `poll`, `redis` or `amqp`.
    pub(crate) fn label(&self) -> &'static str {
        match self.family {
            Family::Poll => "poll",
            Family::Redis => "redis",
            Family::Amqp => "amqp",
        }
    }

    /// A fresh stream or queue on this broker for one phase.
    pub(crate) fn fresh(&self) -> PhaseTransport {
        let tag = uuid::Uuid::now_v7().simple().to_string();
        let sep = if self.url.contains('?') { '&' } else { '?' };
        let (url, stream) = match self.family {
            Family::Poll => ("poll".to_owned(), None),
            Family::Redis => {
                let stream = format!("oprec:bench:{tag}");
                (
                    format!("{}{sep}stream={stream}&group=oprec-bench", self.url),
                    Some(stream),
                )
            }
            Family::Amqp => (
                format!(
                    "{}{sep}queue=oprec.bench.{tag}&queue_expires={QUEUE_EXPIRES_SECS}",
                    self.url
                ),
                None,
            ),
        };
        PhaseTransport {
            url,
            stream,
            base: self.url.clone(),
        }
    }
}

impl PhaseTransport {
    /// The transport for the benchmark's own client (`None` for poll-only).
    pub(crate) fn connect(&self) -> Result<Option<Arc<dyn oprec::Transport>>> {
        Ok(oprec::connect_transport(&self.url)?)
    }

    /// Removes what the phase left on the broker: the Redis stream (a RabbitMQ queue expires on
    /// its own once its last consumer is gone).
    pub(crate) async fn clean_up(&self) -> Result<()> {
        if let Some(stream) = &self.stream {
            let client = redis::Client::open(self.base.as_str())?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            let _: i64 = redis::cmd("DEL").arg(stream).query_async(&mut conn).await?;
        }
        Ok(())
    }
}
