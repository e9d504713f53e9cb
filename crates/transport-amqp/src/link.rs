//! One connection to the broker and what hangs off it: the publishing channel (publisher
//! confirms) that declares the exchange and each kind's queue and binding, the consuming channel
//! (prefetch, manual acks, a consumer per kind's queue) with its [`Inbox`], and the delivery tags
//! taken off it and not yet acknowledged. A link is never repaired: when it breaks, the
//! transport opens a new one with the next generation.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::Duration;

use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
    QueuePurgeOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::uri::AMQPUri;
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};
use oprec_core::{WakeUp, frame};
use tokio::sync::Notify;

use crate::ack_tag::AckTag;
use crate::config::AmqpTransportConfig;
use crate::error::AmqpError;
use crate::inbox::Inbox;

/// AMQP's persistent delivery mode: the broker writes the message to disk.
const PERSISTENT: u8 = 2;

/// How many times [`Link::depth`] takes the broker's count of ready messages, when deliveries
/// moved while it counted.
const DEPTH_TRIES: usize = 5;

/// A connection, its two channels and the consumer.
pub(crate) struct Link {
    /// Which connection this is, counting reconnects; part of every ack token.
    pub(crate) generation: u16,
    /// The direct exchange every wake-up is published to, with its kind as the routing key; each
    /// kind's queue is named after it too (`<prefix>.<kind>`).
    prefix: String,
    queue_arguments: FieldTable,
    prefetch: u16,
    operation_timeout: Duration,
    /// Held so the connection lives as long as the link; dropping the link closes it.
    connection: Connection,
    publisher: Channel,
    receiver: Channel,
    /// The consumer and deliveries taken off it but not yet handed out. Held by `receive` while
    /// it waits; `inbox_wanted` asks it to let go for a moment (depth, purge).
    pub(crate) inbox: tokio::sync::Mutex<Inbox>,
    pub(crate) inbox_wanted: Notify,
    /// Delivery tags taken off the consumers (buffered or handed out) and not yet acknowledged,
    /// with the kind of each.
    unacked: Mutex<HashMap<u64, String>>,
    /// The kinds whose queue and binding this link has declared.
    declared: tokio::sync::Mutex<HashSet<String>>,
    /// Consumers started on the receiving channel (one per kind received).
    consumers: AtomicUsize,
    /// Held by an acknowledgement from its first frame to its last, so that the frames of two
    /// acknowledgements never interleave (one's `multiple` would cover the other's tag, and the
    /// broker closes the channel on a tag acknowledged twice).
    ack_turn: tokio::sync::Mutex<()>,
    broken: AtomicBool,
}

impl Link {
    /// Connects: publisher confirms on one channel, prefetch on another. The durable direct
    /// exchange and each kind's queue are declared and bound the first time the kind is
    /// published or received (see [`Link::declare`]); its consumer starts with the first
    /// `receive` of the kind, so a process that only publishes (an API server enqueueing) never
    /// holds wake-ups it will not work.
    pub(crate) async fn open(
        uri: AMQPUri,
        config: &AmqpTransportConfig,
        generation: u16,
    ) -> lapin::Result<Link> {
        let properties = ConnectionProperties::default()
            .with_connection_name(config.connection_name.as_str().into());
        let connection = Connection::connect_uri(uri, properties).await?;

        let publisher = connection.create_channel().await?;
        publisher
            .confirm_select(ConfirmSelectOptions::default())
            .await?;

        let receiver = connection.create_channel().await?;
        receiver
            .basic_qos(config.prefetch, BasicQosOptions::default())
            .await?;

        Ok(Link {
            generation,
            prefix: config.prefix.clone(),
            queue_arguments: config.queue_arguments(),
            prefetch: config.prefetch,
            operation_timeout: config.operation_timeout,
            connection,
            publisher,
            receiver,
            inbox: tokio::sync::Mutex::new(Inbox::new()),
            inbox_wanted: Notify::new(),
            unacked: Mutex::new(HashMap::new()),
            declared: tokio::sync::Mutex::new(HashSet::new()),
            consumers: AtomicUsize::new(0),
            ack_turn: tokio::sync::Mutex::new(()),
            broken: AtomicBool::new(false),
        })
    }

    /// The queue of `kind`'s wake-ups: `<prefix>.<kind>`.
    pub(crate) fn queue_of(&self, kind: &str) -> String {
        format!("{}.{kind}", self.prefix)
    }

    /// Declares `kind`'s durable queue and binds it to the exchange with the kind as routing key,
    /// once per link, so that wake-ups published before any worker of the kind started wait in
    /// its queue.
    pub(crate) async fn declare(&self, kind: &str) -> Result<(), AmqpError> {
        let mut declared = self.declared.lock().await;
        if declared.contains(kind) {
            return Ok(());
        }
        let queue = ShortString::from(self.queue_of(kind));
        let first = declared.is_empty();
        self.bounded("queue.declare", async {
            let broker = |operation| move |source| AmqpError::Broker { operation, source };
            if first {
                // The exchange is declared with the first queue, not when the link opens, so
                // that a link only asked for depths (`oprec transport depth`, the scheduler of a
                // process that neither publishes nor consumes) leaves nothing on the broker.
                self.publisher
                    .exchange_declare(
                        ShortString::from(self.prefix.as_str()),
                        ExchangeKind::Direct,
                        ExchangeDeclareOptions {
                            durable: true,
                            ..ExchangeDeclareOptions::default()
                        },
                        FieldTable::default(),
                    )
                    .await
                    .map_err(broker("exchange.declare"))?;
            }
            self.publisher
                .queue_declare(
                    queue.clone(),
                    QueueDeclareOptions {
                        durable: true,
                        ..QueueDeclareOptions::default()
                    },
                    self.queue_arguments.clone(),
                )
                .await
                .map_err(broker("queue.declare"))?;
            self.publisher
                .queue_bind(
                    queue.clone(),
                    ShortString::from(self.prefix.as_str()),
                    ShortString::from(kind),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(broker("queue.bind"))
        })
        .await?;
        declared.insert(kind.to_owned());
        Ok(())
    }

    /// Starts the manual-ack consumer of `kind`'s queue on the receiving channel, under the
    /// operation timeout.
    pub(crate) async fn consume(&self, kind: &str) -> Result<lapin::Consumer, AmqpError> {
        // Counted before it starts: from here on its deliveries may interleave with the others'.
        self.consumers.fetch_add(1, Ordering::AcqRel);
        self.bounded("basic.consume", async {
            self.receiver
                .basic_consume(
                    ShortString::from(self.queue_of(kind)),
                    ShortString::from(""),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(|source| AmqpError::Broker {
                    operation: "basic.consume",
                    source,
                })
        })
        .await
    }

    /// Whether calls may still go through this link.
    pub(crate) fn is_usable(&self) -> bool {
        !self.broken.load(Ordering::Acquire)
            && self.connection.status().connected()
            && self.publisher.status().connected()
            && self.receiver.status().connected()
    }

    /// Retires the link: the next call opens a new one.
    pub(crate) fn mark_broken(&self) {
        self.broken.store(true, Ordering::Release);
    }

    /// Runs one broker exchange under the operation timeout. Any failure retires the link: after
    /// a timeout or a closed channel, lapin's view of the conversation can no longer be trusted.
    async fn bounded<T>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, AmqpError>>,
    ) -> Result<T, AmqpError> {
        let result = match tokio::time::timeout(self.operation_timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(AmqpError::TimedOut {
                operation,
                after: self.operation_timeout,
            }),
        };
        if result.is_err() {
            self.mark_broken();
        }
        result
    }

    /// Publishes every frame to the exchange with its kind as routing key (each kind's queue
    /// declared first), then waits for all the confirms at once.
    pub(crate) async fn publish(&self, wakeups: &[WakeUp]) -> Result<(), AmqpError> {
        let kinds: std::collections::BTreeSet<&str> =
            wakeups.iter().map(|w| w.kind.as_str()).collect();
        for kind in &kinds {
            self.declare(kind).await?;
        }
        let broker = |source| AmqpError::Broker {
            operation: "basic.publish",
            source,
        };
        let options = BasicPublishOptions {
            mandatory: true,
            ..BasicPublishOptions::default()
        };
        let properties = BasicProperties::default().with_delivery_mode(PERSISTENT);
        let exchange = ShortString::from(self.prefix.as_str());
        let (refused, returned) = self
            .bounded("basic.publish", async {
                let mut confirms = Vec::with_capacity(wakeups.len());
                for w in wakeups {
                    let confirm = self
                        .publisher
                        .basic_publish(
                            exchange.clone(),
                            ShortString::from(w.kind.as_str()),
                            options,
                            &frame::encode(w.id),
                            properties.clone(),
                        )
                        .await
                        .map_err(broker)?;
                    confirms.push(confirm);
                }
                let (mut refused, mut returned) = (0, 0);
                for confirm in confirms {
                    match confirm.await.map_err(broker)? {
                        Confirmation::Ack(None) => {}
                        Confirmation::Ack(Some(_)) => returned += 1,
                        // NotRequested cannot happen (confirms are selected on open); treat it as
                        // a refusal rather than claim the broker took the message.
                        Confirmation::Nack(_) | Confirmation::NotRequested => refused += 1,
                    }
                }
                Ok((refused, returned))
            })
            .await?;
        if returned > 0 {
            // A queue is gone; a new link declares them again.
            self.mark_broken();
            return Err(AmqpError::Unroutable {
                queue: kinds
                    .iter()
                    .map(|k| self.queue_of(k))
                    .collect::<Vec<_>>()
                    .join(", "),
                returned,
            });
        }
        if refused > 0 {
            return Err(AmqpError::Refused {
                refused,
                published: wakeups.len(),
            });
        }
        Ok(())
    }

    /// Acknowledges the tags this link delivered and still holds; skips the rest (see
    /// [`AmqpTransport`](crate::AmqpTransport)'s `ack`). Returns how many were skipped.
    ///
    /// When the receiving channel has one consumer and no delivery this link still holds is
    /// older than the newest of `tags` (a worker that acknowledges each batch it received, in
    /// order), one `basic.ack` with `multiple` covers them all; otherwise each is acknowledged
    /// on its own. Delivery tags count the channel's deliveries, whatever their consumer, and
    /// lapin buffers each consumer's apart: with two, a delivery of one kind still in lapin's
    /// buffer can be older than the newest taken of the other, and a `multiple` would cover it
    /// before it was handed out (its own acknowledgement then closed the channel: "unknown
    /// delivery tag", found by the cluster test that drains two kinds).
    pub(crate) async fn ack(&self, tags: &[AckTag]) -> Result<usize, AmqpError> {
        let _turn = self.ack_turn.lock().await;
        let one_consumer = self.consumers.load(Ordering::Acquire) <= 1;
        let mut skipped = 0;
        let mut mine = Vec::with_capacity(tags.len());
        let up_to = {
            let mut unacked = self.unacked();
            for tag in tags {
                if tag.generation != self.generation || unacked.remove(&tag.delivery_tag).is_none()
                {
                    skipped += 1;
                    continue;
                }
                mine.push(tag.delivery_tag);
            }
            // Deliveries still inside lapin's consumer have later tags than any taken off it.
            mine.iter().max().copied().filter(|&newest| {
                one_consumer && mine.len() > 1 && unacked.keys().all(|&held| held > newest)
            })
        };
        let acks: Vec<(u64, bool)> = match up_to {
            Some(newest) => vec![(newest, true)],
            None => mine.into_iter().map(|tag| (tag, false)).collect(),
        };
        if acks.is_empty() {
            return Ok(skipped);
        }
        // All the frames go out together; then every one is awaited.
        self.bounded("basic.ack", async {
            let mut sent: Vec<Pin<Box<dyn Future<Output = lapin::Result<()>> + Send + '_>>> = acks
                .into_iter()
                .map(|(delivery_tag, multiple)| {
                    Box::pin(
                        self.receiver
                            .basic_ack(delivery_tag, BasicAckOptions { multiple }),
                    )
                        as Pin<Box<dyn Future<Output = lapin::Result<()>> + Send + '_>>
                })
                .collect();
            let mut failed = None;
            std::future::poll_fn(|cx| {
                sent.retain_mut(|ack| match ack.as_mut().poll(cx) {
                    Poll::Ready(result) => {
                        if let Err(e) = result {
                            failed.get_or_insert(e);
                        }
                        false
                    }
                    Poll::Pending => true,
                });
                if sent.is_empty() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            match failed {
                None => Ok(()),
                Some(source) => Err(AmqpError::Broker {
                    operation: "basic.ack",
                    source,
                }),
            }
        })
        .await?;
        Ok(skipped)
    }

    /// Ready messages in `kind`'s queue plus deliveries of the kind this link holds
    /// unacknowledged; 0 for a kind with no queue.
    ///
    /// The two are counted apart: the broker counts the ready ones (on a side channel), this link
    /// the ones it holds. A message the broker delivers to this link's consumer between the two
    /// counts would be counted twice (a CI run: 1,050 for 1,000 published, the consumer taking
    /// its prefetch window meanwhile). So the held ones are counted before and after the broker's
    /// count, each after every delivery sent before it has arrived ([`flush_deliveries`]), and
    /// the broker's count is kept only when nothing was delivered or acknowledged in between; it
    /// is taken again otherwise, [`DEPTH_TRIES`] times at most. While deliveries keep flowing
    /// past every try, the last count may include the ones delivered during it.
    ///
    /// [`flush_deliveries`]: Self::flush_deliveries
    pub(crate) async fn depth(&self, kind: &str) -> Result<u64, AmqpError> {
        let mut held = self.held_now(kind).await?;
        let mut tries = 1;
        loop {
            let (ready, _) = self.queue_counts(kind).await?;
            let after = self.held_now(kind).await?;
            if after == held || tries == DEPTH_TRIES {
                return Ok(ready + after);
            }
            held = after;
            tries += 1;
        }
    }

    /// The deliveries of `kind` this link holds unacknowledged, once every delivery the broker
    /// sent it before now has arrived.
    async fn held_now(&self, kind: &str) -> Result<u64, AmqpError> {
        let mut inbox = self.claim_inbox().await;
        self.flush_deliveries().await?;
        inbox.drain(self)?;
        drop(inbox);
        Ok(self.unacked().values().filter(|k| *k == kind).count() as u64)
    }

    /// At most how many of `kind`'s deliveries other consumers hold without [`depth`](Self::depth)
    /// seeing them: each consumer of the queue but this link's own may hold a prefetch window.
    pub(crate) async fn depth_unseen_bound(&self, kind: &str) -> Result<u64, AmqpError> {
        let (_, consumers) = self.queue_counts(kind).await?;
        let own = u32::from(self.claim_inbox().await.consumes(kind));
        Ok(u64::from(consumers.saturating_sub(own)) * u64::from(self.prefetch))
    }

    /// The ready messages and the consumers of `kind`'s queue, as the broker counts them (a
    /// passive declare); zeros for a kind with no queue.
    async fn queue_counts(&self, kind: &str) -> Result<(u64, u32), AmqpError> {
        let queue = ShortString::from(self.queue_of(kind));
        self.on_side_channel("queue.declare", |channel| async move {
            channel
                .queue_declare(
                    queue,
                    QueueDeclareOptions {
                        passive: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
                .map(|q| (u64::from(q.message_count()), q.consumer_count()))
        })
        .await
    }

    /// Purges the ready messages of `kind`'s queue, then drops (acknowledges) what this link has
    /// prefetched of the kind and not handed out. Deliveries handed out and not acknowledged, and
    /// those prefetched by other consumers, stay.
    pub(crate) async fn purge(&self, kind: &str) -> Result<u64, AmqpError> {
        let queue = ShortString::from(self.queue_of(kind));
        let purged = self
            .on_side_channel("queue.purge", |channel| async move {
                channel
                    .queue_purge(queue, QueuePurgeOptions::default())
                    .await
                    .map(u64::from)
            })
            .await?;
        let mut inbox = self.claim_inbox().await;
        self.flush_deliveries().await?;
        inbox.drain(self)?;
        let prefetched: Vec<AckTag> = inbox.take_buffered(Some(kind));
        drop(inbox);
        let skipped = self.ack(&prefetched).await?;
        Ok(purged + (prefetched.len() - skipped) as u64)
    }

    /// Runs one call about a queue that may not exist on a channel of its own: the broker closes
    /// the channel of a call on a missing queue (`NOT_FOUND`), which then counts as 0 and leaves
    /// the link's channels open.
    async fn on_side_channel<T, F, Fut>(
        &self,
        operation: &'static str,
        call: F,
    ) -> Result<T, AmqpError>
    where
        T: Default,
        F: FnOnce(Channel) -> Fut,
        Fut: Future<Output = lapin::Result<T>>,
    {
        let broker = move |source| AmqpError::Broker { operation, source };
        self.bounded(operation, async {
            let channel = self.connection.create_channel().await.map_err(broker)?;
            match call(channel.clone()).await {
                Ok(n) => {
                    let _ = channel.close(200, "OK".into()).await;
                    Ok(n)
                }
                Err(e) if is_not_found(&e) => Ok(T::default()),
                Err(e) => Err(broker(e)),
            }
        })
        .await
    }

    /// Waits until every delivery the broker sent before now has reached the consumer: the broker
    /// answers a `basic.qos` on the consuming channel only after the deliveries it already sent
    /// there, and lapin hands deliveries to the consumer before it resolves the answer.
    async fn flush_deliveries(&self) -> Result<(), AmqpError> {
        self.bounded("basic.qos", async {
            self.receiver
                .basic_qos(self.prefetch, BasicQosOptions::default())
                .await
                .map_err(|source| AmqpError::Broker {
                    operation: "basic.qos",
                    source,
                })
        })
        .await
    }

    /// Takes the inbox from a `receive` that may be waiting on it: queue for the lock first, then
    /// ask the holder to let go (the lock is fair, so it goes to us).
    async fn claim_inbox(&self) -> tokio::sync::MutexGuard<'_, Inbox> {
        let mut lock = std::pin::pin!(self.inbox.lock());
        let polled =
            std::future::poll_fn(|cx| std::task::Poll::Ready(lock.as_mut().poll(cx))).await;
        match polled {
            std::task::Poll::Ready(inbox) => inbox,
            std::task::Poll::Pending => {
                self.inbox_wanted.notify_one();
                lock.await
            }
        }
    }

    /// Records a delivery taken off the consumer as held until acknowledged.
    pub(crate) fn hold(&self, delivery_tag: u64, kind: &str) {
        self.unacked().insert(delivery_tag, kind.to_owned());
    }

    fn unacked(&self) -> MutexGuard<'_, HashMap<u64, String>> {
        self.unacked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The broker's answer to a call on a queue that does not exist.
fn is_not_found(e: &lapin::Error) -> bool {
    matches!(e.kind(), lapin::ErrorKind::ProtocolError(amqp)
        if matches!(amqp.kind(), lapin::protocol::AMQPErrorKind::Soft(lapin::protocol::AMQPSoftError::NOTFOUND)))
}
