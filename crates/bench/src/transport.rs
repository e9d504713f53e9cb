//! The transports a benchmark drains with, each phase on its own Redis stream or RabbitMQ queue
//! (named through the facade's `?stream=` / `?queue=` URL parameters) so no run sees another's
//! wake-ups, deleted when the phase ends. On RabbitMQ the prefetch is set to what the worker's
//! claims take at once, at least 2,000 (unless the URL names a `prefetch=` of its own): the
//! default of 128 would cap every claim at 128 wake-ups.

use std::sync::Arc;

use crate::{Error, Result};

/// How long RabbitMQ keeps a benchmark queue after its last consumer leaves, should the benchmark
/// die before it deletes the queue.
const QUEUE_EXPIRES_SECS: u32 = 120;

/// The facade's own URL parameters for RabbitMQ, which the AMQP driver does not take.
const FACADE_AMQP_PARAMS: &[&str] = &["queue", "prefix", "queue_type", "queue_expires", "prefetch"];

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
    /// RabbitMQ: the queue to delete afterwards.
    queue: Option<String>,
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

    /// A fresh stream or queue on this broker for one phase, for a worker running `concurrency`
    /// handlers.
    pub(crate) fn fresh(&self, concurrency: usize) -> PhaseTransport {
        let tag = uuid::Uuid::now_v7().simple().to_string();
        let sep = if self.url.contains('?') { '&' } else { '?' };
        let (url, stream, queue) = match self.family {
            Family::Poll => ("poll".to_owned(), None, None),
            Family::Redis => {
                let stream = format!("oprec:bench:{tag}");
                (
                    format!("{}{sep}stream={stream}&group=oprec-bench", self.url),
                    Some(stream),
                    None,
                )
            }
            Family::Amqp => {
                let prefetch = if self.url.contains("prefetch=") {
                    String::new()
                } else {
                    format!("&prefetch={}", prefetch(concurrency))
                };
                let queue = format!("oprec.bench.{tag}");
                (
                    format!(
                        "{}{sep}queue={queue}&queue_expires={QUEUE_EXPIRES_SECS}{prefetch}",
                        self.url
                    ),
                    None,
                    Some(queue),
                )
            }
        };
        PhaseTransport {
            url,
            stream,
            queue,
            base: self.url.clone(),
        }
    }
}

impl PhaseTransport {
    /// The transport for the benchmark's own client (`None` for poll-only).
    pub(crate) fn connect(&self) -> Result<Option<Arc<dyn oprec::Transport>>> {
        Ok(oprec::connect_transport(&self.url)?)
    }

    /// Removes what the phase left on the broker: the Redis keys of its prefix (each kind's
    /// stream, with its group, and the set of kinds) or the RabbitMQ kind queue and exchange.
    pub(crate) async fn clean_up(&self) -> Result<()> {
        if let Some(prefix) = &self.stream {
            let client = redis::Client::open(self.base.as_str())?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{{{prefix}}}:*"))
                .query_async(&mut conn)
                .await?;
            if !keys.is_empty() {
                let _: i64 = redis::cmd("DEL").arg(keys).query_async(&mut conn).await?;
            }
        }
        if let Some(queue) = &self.queue {
            use lapin::options::QueueDeleteOptions;
            let url = driver_url(&self.base);
            let conn =
                lapin::Connection::connect(&url, lapin::ConnectionProperties::default()).await?;
            let channel = conn.create_channel().await?;
            let kind_queue = format!("{queue}.{}", crate::noop::KIND);
            channel
                .queue_delete(kind_queue.as_str().into(), QueueDeleteOptions::default())
                .await?;
            channel
                .exchange_delete(
                    queue.as_str().into(),
                    lapin::options::ExchangeDeleteOptions::default(),
                )
                .await?;
            let _ = conn.close(200, "OK".into()).await;
        }
        Ok(())
    }
}

/// `url` without the facade's own parameters, for the AMQP driver.
fn driver_url(url: &str) -> String {
    let (head, fragment) = match url.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (url, None),
    };
    let mut out = match head.split_once('?') {
        None => head.to_owned(),
        Some((base, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| {
                    let key = p.split_once('=').map_or(*p, |(k, _)| k);
                    !p.is_empty() && !FACADE_AMQP_PARAMS.contains(&key)
                })
                .collect();
            if kept.is_empty() {
                base.to_owned()
            } else {
                format!("{base}?{}", kept.join("&"))
            }
        }
    };
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// The AMQP prefetch for a worker of `concurrency` handlers: its handlers and its claim buffer
/// are fed by claims of up to 1,000 wake-ups, two in flight, so at least 2,000 (the default of
/// 128 would cap every claim at 128 wake-ups).
fn prefetch(concurrency: usize) -> usize {
    concurrency.max(2000).min(usize::from(u16::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phase_gets_its_own_stream_or_queue() {
        let poll = TransportSpec::parse("poll").unwrap();
        assert_eq!((poll.label(), poll.fresh(8).url.as_str()), ("poll", "poll"));

        let redis = TransportSpec::parse("redis://127.0.0.1:6379/2").unwrap();
        let (a, b) = (redis.fresh(8), redis.fresh(8));
        assert!(
            a.url
                .starts_with("redis://127.0.0.1:6379/2?stream=oprec:bench:")
        );
        assert!(a.url.ends_with("&group=oprec-bench"));
        assert_ne!(a.url, b.url);
        assert_eq!(a.stream.as_deref().map(|s| a.url.contains(s)), Some(true));

        let amqp = TransportSpec::parse("amqp://guest:guest@h/%2f?heartbeat=10").unwrap();
        let url = amqp.fresh(500).url;
        assert!(url.starts_with("amqp://guest:guest@h/%2f?heartbeat=10&queue=oprec.bench."));
        assert!(url.ends_with("&queue_expires=120&prefetch=2000"), "{url}");
        let own = TransportSpec::parse("amqp://h/%2f?prefetch=64").unwrap();
        assert!(!own.fresh(500).url.contains("prefetch=2000"));
        assert!(
            TransportSpec::parse("amqp://h")
                .unwrap()
                .fresh(100_000)
                .url
                .ends_with("&prefetch=65535")
        );
    }

    #[test]
    fn the_driver_gets_the_url_without_the_facades_parameters() {
        assert_eq!(driver_url("amqp://h/%2f"), "amqp://h/%2f");
        assert_eq!(driver_url("amqp://h/%2f?prefetch=64"), "amqp://h/%2f");
        assert_eq!(
            driver_url("amqp://u:p@h/%2f?heartbeat=10&prefetch=64&queue=q&queue_expires=5"),
            "amqp://u:p@h/%2f?heartbeat=10"
        );
        let spec = TransportSpec::parse("amqp://h/%2f?heartbeat=10").unwrap();
        let phase = spec.fresh(8);
        assert_eq!(driver_url(&phase.base), "amqp://h/%2f?heartbeat=10");
        assert!(phase.url.contains(phase.queue.as_deref().unwrap()));
    }

    #[test]
    fn unknown_schemes_are_refused_without_their_password() {
        let e = TransportSpec::parse("nats://u:s3cret@h").unwrap_err();
        assert!(e.is_invalid_input());
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
