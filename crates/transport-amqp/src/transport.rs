//! [`AmqpTransport`]: the [`Transport`] on RabbitMQ, a queue per kind, reconnecting lazily.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use lapin::uri::AMQPUri;
use oprec_core::transport::check_kind;
use oprec_core::{AckToken, Delivery, Error, KindDepth, Result, Transport, WakeUp};
use tokio::time::Instant;

use crate::ack_tag::AckTag;
use crate::config::AmqpTransportConfig;
use crate::error::AmqpError;
use crate::inbox;
use crate::link::Link;
use crate::redacted_url::RedactedUrl;

/// Wake-ups on durable RabbitMQ queues, one per kind: persistent messages published with
/// confirms to a direct exchange with the kind as routing key, consumed with manual acks under a
/// prefetch limit, each kind's queue by a consumer of its own.
///
/// One connection carries two channels, one publishing and one consuming. When the broker goes
/// away or closes a channel, the next call opens a new connection (within `connect_timeout`) and
/// declares the exchange, queues, prefetch and consumers again; until that succeeds, calls fail at once with a
/// transient error. RabbitMQ redelivers what the old connection held unacknowledged.
///
/// AMQP cannot list queues, so "every kind" (`depth(None)`, `depths`, `purge(None)`) means the
/// kinds this transport published or received, and those named by
/// [`know_kinds`](Transport::know_kinds). [`depth`](Transport::depth) is the ready messages plus
/// the deliveries this transport holds
/// unacknowledged; [`purge`](Transport::purge) drops the ready messages and what this transport
/// has prefetched but not yet handed out. Deliveries handed out and not acknowledged, and those
/// prefetched by other processes consuming the same queue, are neither counted by another
/// process's `depth` nor dropped by its `purge`: RabbitMQ does not purge unacknowledged messages.
pub struct AmqpTransport {
    uri: AMQPUri,
    url: RedactedUrl,
    config: AmqpTransportConfig,
    slot: tokio::sync::Mutex<Slot>,
    /// The kinds published, received or named so far.
    kinds: Mutex<BTreeSet<String>>,
}

/// The current link, and what the last attempt to open one said.
struct Slot {
    link: Option<Arc<Link>>,
    last_failure: Option<(Instant, AmqpError)>,
}

/// Numbers every link in the process, so that no two live links (of this transport or another)
/// share a generation (until 65,536 reconnects wrap the counter) and an ack token never
/// acknowledges another link's delivery.
static GENERATIONS: AtomicU16 = AtomicU16::new(0);

impl AmqpTransport {
    /// Connects to `url` (`amqp://user:password@host:5672/%2f`, or `amqps://` for TLS with the
    /// system's root certificates) and declares the queue, so that bad credentials or a queue
    /// declared with other arguments show at start-up.
    pub async fn connect(url: &str, config: AmqpTransportConfig) -> Result<Self> {
        let transport = Self::connect_lazy(url, config)?;
        transport.link().await?;
        Ok(transport)
    }

    /// Checks `url` but connects only on the first call, so a process can start while the broker
    /// is down.
    pub fn connect_lazy(url: &str, config: AmqpTransportConfig) -> Result<Self> {
        config.check()?;
        let redacted = RedactedUrl::new(url);
        let uri: AMQPUri = url.parse().map_err(|reason: String| {
            Error::InvalidInput(format!(
                "invalid AMQP URL {redacted}: {}",
                redacted.scrub(url, &reason)
            ))
        })?;
        Ok(AmqpTransport {
            uri,
            url: redacted,
            config,
            slot: tokio::sync::Mutex::new(Slot {
                link: None,
                last_failure: None,
            }),
            kinds: Mutex::new(BTreeSet::new()),
        })
    }

    /// The settings this transport was built with.
    pub fn config(&self) -> &AmqpTransportConfig {
        &self.config
    }

    /// The usable link, opening a new one if there is none. Callers that waited while another
    /// call's attempt failed get that failure instead of trying again, so an outage costs each
    /// call at most one `connect_timeout`.
    async fn link(&self) -> Result<Arc<Link>, AmqpError> {
        let asked_at = Instant::now();
        let mut slot = self.slot.lock().await;
        if let Some(link) = &slot.link {
            if link.is_usable() {
                return Ok(link.clone());
            }
            tracing::warn!(url = %self.url, prefix = %self.config.prefix, "AMQP connection lost; reconnecting");
            slot.link = None;
        }
        if let Some((failed_at, error)) = &slot.last_failure
            && *failed_at >= asked_at
        {
            return Err(error.clone());
        }
        let generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        let opened = tokio::time::timeout(
            self.config.connect_timeout,
            Link::open(self.uri.clone(), &self.config, generation),
        )
        .await;
        let error = match opened {
            Ok(Ok(link)) => {
                let link = Arc::new(link);
                slot.link = Some(link.clone());
                slot.last_failure = None;
                return Ok(link);
            }
            Ok(Err(source)) => AmqpError::Connect {
                url: self.url.to_string(),
                source,
            },
            Err(_) => AmqpError::ConnectTimedOut {
                url: self.url.to_string(),
                after: self.config.connect_timeout,
            },
        };
        slot.last_failure = Some((Instant::now(), error.clone()));
        Err(error)
    }

    fn note<'a>(&self, kinds: impl IntoIterator<Item = &'a str>) {
        let mut known = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        for kind in kinds {
            if !known.contains(kind) {
                known.insert(kind.to_owned());
            }
        }
    }

    fn known(&self) -> Vec<String> {
        self.kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// The current link if there is one, without connecting.
    async fn current_link(&self) -> Option<Arc<Link>> {
        self.slot.lock().await.link.clone()
    }
}

#[async_trait]
impl Transport for AmqpTransport {
    fn name(&self) -> &'static str {
        "amqp"
    }

    async fn publish(&self, wakeups: &[WakeUp]) -> Result<()> {
        if wakeups.is_empty() {
            return Ok(());
        }
        for w in wakeups {
            check_kind(&w.kind)?;
        }
        self.note(wakeups.iter().map(|w| w.kind.as_str()));
        Ok(self.link().await?.publish(wakeups).await?)
    }

    async fn receive(&self, kinds: &[String], max: usize, wait: Duration) -> Result<Vec<Delivery>> {
        for kind in kinds {
            check_kind(kind)?;
        }
        if max == 0 || kinds.is_empty() {
            return Ok(Vec::new());
        }
        self.note(kinds.iter().map(String::as_str));
        let link = self.link().await?;
        Ok(inbox::receive(&link, kinds, max, wait).await?)
    }

    /// Acknowledges what the current connection delivered. Tokens from a connection that has since
    /// closed, and tokens already acknowledged or purged, are skipped: RabbitMQ has put those
    /// messages back already, and acknowledging a tag twice would close the channel.
    async fn ack(&self, tokens: Vec<AckToken>) -> Result<()> {
        if tokens.is_empty() {
            return Ok(());
        }
        let mut tags = Vec::with_capacity(tokens.len());
        for token in tokens {
            match token {
                AckToken::Tag(token) => tags.push(AckTag::from_token(token)),
                AckToken::Entry { id, .. } => {
                    return Err(Error::InvalidInput(format!(
                        "ack token {id:?} is a stream entry id, not an AMQP delivery tag"
                    )));
                }
            }
        }
        let skipped = match self.current_link().await {
            Some(link) => link.ack(&tags).await?,
            None => tags.len(),
        };
        if skipped > 0 {
            tracing::debug!(
                skipped,
                "acks for deliveries of a closed connection or already acknowledged were skipped"
            );
        }
        Ok(())
    }

    async fn purge(&self, kind: Option<&str>) -> Result<u64> {
        let kinds = match kind {
            Some(kind) => {
                check_kind(kind)?;
                vec![kind.to_owned()]
            }
            None => self.known(),
        };
        let link = self.link().await?;
        let mut purged = 0;
        for kind in &kinds {
            purged += link.purge(kind).await?;
        }
        Ok(purged)
    }

    async fn depth(&self, kind: Option<&str>) -> Result<u64> {
        match kind {
            Some(kind) => {
                check_kind(kind)?;
                Ok(self.link().await?.depth(kind).await?)
            }
            None => Ok(self.depths().await?.iter().map(|d| d.depth).sum()),
        }
    }

    async fn depth_unseen_bound(&self, kind: &str) -> Result<u64> {
        check_kind(kind)?;
        Ok(self.link().await?.depth_unseen_bound(kind).await?)
    }

    async fn depths(&self) -> Result<Vec<KindDepth>> {
        let link = self.link().await?;
        let mut out = Vec::new();
        for kind in self.known() {
            let depth = link.depth(&kind).await?;
            out.push(KindDepth { kind, depth });
        }
        Ok(out)
    }

    fn know_kinds(&self, kinds: &[String]) {
        self.note(
            kinds
                .iter()
                .map(String::as_str)
                .filter(|k| check_kind(k).is_ok()),
        );
    }
}

impl fmt::Debug for AmqpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AmqpTransport")
            .field("url", &self.url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
