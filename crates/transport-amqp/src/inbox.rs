//! The consuming side of a [`Link`]: lapin's consumer stream and the deliveries taken off it
//! ahead of a `receive` (by `depth` or `purge`, which must see everything the broker sent).

use std::collections::VecDeque;
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

/// What the consumer stream yields: a delivery, a channel error, or `None` once cancelled.
type Next = Option<lapin::Result<lapin::message::Delivery>>;

/// The consumer (once the first `receive` started it) and the decoded deliveries not yet handed
/// out.
pub(crate) struct Inbox {
    consumer: Option<Consumer>,
    buffered: VecDeque<Delivery>,
}

impl Inbox {
    pub(crate) fn new() -> Self {
        Inbox {
            consumer: None,
            buffered: VecDeque::new(),
        }
    }

    /// Moves everything lapin already holds into the buffer, without waiting.
    pub(crate) fn drain(&mut self, link: &Link) -> Result<(), AmqpError> {
        while let Some(next) = self.poll_now() {
            let delivery = intake(link, next)?;
            self.buffered.push_back(delivery);
        }
        Ok(())
    }

    /// Empties the buffer, returning the tags of what it held.
    pub(crate) fn take_buffered(&mut self) -> Vec<AckTag> {
        self.buffered
            .drain(..)
            .filter_map(|delivery| match delivery.ack {
                AckToken::Tag(token) => Some(AckTag::from_token(token)),
                AckToken::Id(_) => None,
            })
            .collect()
    }

    /// Hands out up to `max - out.len()` deliveries available now: buffered ones first, then what
    /// lapin holds.
    fn take_available(
        &mut self,
        link: &Link,
        max: usize,
        out: &mut Vec<Delivery>,
    ) -> Result<(), AmqpError> {
        while out.len() < max {
            if let Some(delivery) = self.buffered.pop_front() {
                out.push(delivery);
                continue;
            }
            match self.poll_now() {
                Some(next) => out.push(intake(link, next)?),
                None => break,
            }
        }
        Ok(())
    }

    /// The next item of the consumer stream if lapin already holds one (never, before the
    /// consumer started).
    fn poll_now(&mut self) -> Option<Next> {
        let consumer = self.consumer.as_mut()?;
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(consumer).poll_next(&mut cx) {
            Poll::Ready(next) => Some(next),
            Poll::Pending => None,
        }
    }

    /// The next item of the consumer stream, waiting for it (forever, before the consumer
    /// started).
    async fn next(&mut self) -> Next {
        match self.consumer.as_mut() {
            Some(consumer) => {
                std::future::poll_fn(|cx| Pin::new(&mut *consumer).poll_next(cx)).await
            }
            None => std::future::pending().await,
        }
    }
}

/// Waits up to `wait` for a first delivery, then takes whatever else is already there, up to
/// `max` in all. Lets go of the inbox while waiting whenever `depth` or `purge` asks for it;
/// concurrent receives take turns, none waiting past its own `wait`.
pub(crate) async fn receive(
    link: &Link,
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
    if inbox.consumer.is_none() {
        inbox.consumer = Some(link.consume().await?);
    }
    loop {
        inbox.take_available(link, max, &mut out)?;
        if !out.is_empty() || Instant::now() >= deadline {
            return Ok(out);
        }
        let woken = tokio::select! {
            biased;
            () = link.inbox_wanted.notified() => Woken::Wanted,
            next = inbox.next() => Woken::Delivered(intake(link, next)),
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

/// Turns an item of the consumer stream into a [`Delivery`] held until acknowledged, or into the
/// error that ended the stream (which retires the link).
fn intake(link: &Link, next: Next) -> Result<Delivery, AmqpError> {
    match next {
        Some(Ok(delivery)) => {
            link.hold(delivery.delivery_tag);
            let tag = AckTag {
                generation: link.generation,
                delivery_tag: delivery.delivery_tag,
            };
            Ok(Delivery {
                ack: AckToken::Tag(tag.to_token()),
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
                queue: link.queue().to_owned(),
            })
        }
    }
}
