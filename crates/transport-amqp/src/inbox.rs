//! The consuming side of a [`Link`]: lapin's consumer streams, one per kind's queue, and the
//! deliveries taken off them ahead of a `receive` (by `depth` or `purge`, which must see
//! everything the broker sent).

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_core::Stream;
use lapin::Consumer;
use oprec_core::{AckToken, Delivery, frame};
use tokio::time::Instant;

use crate::ack_tag::AckTag;
use crate::error::AmqpError;
use crate::link::Link;

/// What a consumer stream yields: a delivery, a channel error, or `None` once cancelled.
type Next = Option<lapin::Result<lapin::message::Delivery>>;

/// The consumers, one per kind's queue (each started by the first `receive` of its kind), and the
/// decoded deliveries not yet handed out.
pub(crate) struct Inbox {
    consumers: BTreeMap<String, Consumer>,
    buffered: VecDeque<Delivery>,
}

impl Inbox {
    pub(crate) fn new() -> Self {
        Inbox {
            consumers: BTreeMap::new(),
            buffered: VecDeque::new(),
        }
    }

    /// Whether a consumer of `kind`'s queue runs on this link.
    pub(crate) fn consumes(&self, kind: &str) -> bool {
        self.consumers.contains_key(kind)
    }

    /// Moves everything lapin already holds, of every kind, into the buffer, without waiting.
    pub(crate) fn drain(&mut self, link: &Link) -> Result<(), AmqpError> {
        let kinds: Vec<String> = self.consumers.keys().cloned().collect();
        for kind in kinds {
            while let Some(next) = self.poll_now(&kind) {
                let delivery = intake(link, &kind, next)?;
                self.buffered.push_back(delivery);
            }
        }
        Ok(())
    }

    /// Takes the buffered deliveries of `kind` (of every kind for `None`) out of the buffer,
    /// returning their tags.
    pub(crate) fn take_buffered(&mut self, kind: Option<&str>) -> Vec<AckTag> {
        let mut taken = Vec::new();
        self.buffered.retain(|delivery| {
            if kind.is_some_and(|k| k != delivery.kind) {
                return true;
            }
            if let AckToken::Tag(token) = delivery.ack {
                taken.push(AckTag::from_token(token));
            }
            false
        });
        taken
    }

    /// Hands out up to `max - out.len()` deliveries of `kinds` available now: buffered ones first,
    /// then what lapin holds.
    fn take_available(
        &mut self,
        link: &Link,
        kinds: &[String],
        max: usize,
        out: &mut Vec<Delivery>,
    ) -> Result<(), AmqpError> {
        let mut kept = VecDeque::with_capacity(self.buffered.len());
        while let Some(delivery) = self.buffered.pop_front() {
            if out.len() < max && kinds.contains(&delivery.kind) {
                out.push(delivery);
            } else {
                kept.push_back(delivery);
            }
        }
        self.buffered = kept;
        for kind in kinds {
            while out.len() < max {
                match self.poll_now(kind) {
                    Some(next) => out.push(intake(link, kind, next)?),
                    None => break,
                }
            }
        }
        Ok(())
    }

    /// The next item of `kind`'s consumer stream if lapin already holds one.
    fn poll_now(&mut self, kind: &str) -> Option<Next> {
        let consumer = self.consumers.get_mut(kind)?;
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(consumer).poll_next(&mut cx) {
            Poll::Ready(next) => Some(next),
            Poll::Pending => None,
        }
    }

    /// The next item of any of the consumers of `kinds`, with its kind, waiting for it (forever,
    /// when none of them has started).
    async fn next(&mut self, kinds: &[String]) -> (String, Next) {
        let consumers = &mut self.consumers;
        std::future::poll_fn(|cx| {
            for kind in kinds {
                if let Some(consumer) = consumers.get_mut(kind)
                    && let Poll::Ready(next) = Pin::new(consumer).poll_next(cx)
                {
                    return Poll::Ready((kind.clone(), next));
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Waits up to `wait` for a first delivery of any of `kinds`, then takes whatever else of theirs
/// is already there, up to `max` in all. Lets go of the inbox while waiting whenever `depth` or
/// `purge` asks for it; concurrent receives take turns, none waiting past its own `wait`.
pub(crate) async fn receive(
    link: &Link,
    kinds: &[String],
    max: usize,
    wait: Duration,
) -> Result<Vec<Delivery>, AmqpError> {
    enum Woken {
        Wanted,
        Delivered(Result<Delivery, AmqpError>),
        TimedOut,
    }

    let deadline = Instant::now() + wait;
    let mut out = Vec::new();
    // Another receive may hold the inbox; wait for it no longer than for a delivery.
    let Ok(mut inbox) = tokio::time::timeout_at(deadline, link.inbox.lock()).await else {
        return Ok(out);
    };
    for kind in kinds {
        if !inbox.consumers.contains_key(kind) {
            link.declare(kind).await?;
            let consumer = link.consume(kind).await?;
            inbox.consumers.insert(kind.clone(), consumer);
        }
    }
    loop {
        inbox.take_available(link, kinds, max, &mut out)?;
        if !out.is_empty() || Instant::now() >= deadline {
            return Ok(out);
        }
        let woken = tokio::select! {
            biased;
            () = link.inbox_wanted.notified() => Woken::Wanted,
            (kind, next) = inbox.next(kinds) => Woken::Delivered(intake(link, &kind, next)),
            () = tokio::time::sleep_until(deadline) => Woken::TimedOut,
        };
        match woken {
            Woken::Wanted => {
                drop(inbox);
                match tokio::time::timeout_at(deadline, link.inbox.lock()).await {
                    Ok(again) => inbox = again,
                    Err(_) => return Ok(out),
                }
            }
            Woken::Delivered(delivery) => out.push(delivery?),
            Woken::TimedOut => return Ok(out),
        }
    }
}

/// Turns an item of `kind`'s consumer stream into a [`Delivery`] held until acknowledged, or into
/// the error that ended the stream (which retires the link).
fn intake(link: &Link, kind: &str, next: Next) -> Result<Delivery, AmqpError> {
    match next {
        Some(Ok(delivery)) => {
            link.hold(delivery.delivery_tag, kind);
            let tag = AckTag {
                generation: link.generation,
                delivery_tag: delivery.delivery_tag,
            };
            Ok(Delivery {
                ack: AckToken::Tag(tag.to_token()),
                kind: kind.to_owned(),
                frame: frame::decode(&delivery.data),
            })
        }
        Some(Err(source)) => {
            link.mark_broken();
            Err(AmqpError::Broker {
                operation: "basic.consume",
                source,
            })
        }
        None => {
            link.mark_broken();
            Err(AmqpError::ConsumerCancelled {
                queue: link.queue_of(kind),
            })
        }
    }
}
