//! The [`Transport`] trait: a doorbell, not a record. It carries wake-up frames ("attempt
//! operation N now"), can publish a batch, hand out deliveries to acknowledge, purge and report its
//! depth. Losing, purging or duplicating what it carries never loses or repeats work, because the
//! store decides what is claimable.
//!
//! Wake-ups are routed by kind: each kind has a stream or queue of its own, so a worker receives
//! only the wake-ups of the kinds it runs and pools split by kind never take each other's. The
//! frame itself stays a version and an id; the kind is where the frame travels.

use std::time::Duration;

use async_trait::async_trait;

use crate::frame::FrameError;
use crate::{Error, OperationId, Result};

/// The longest kind name a transport routes (in UTF-8 bytes). AMQP names queues and routing keys
/// with at most 255 bytes, and a queue name is the kind behind a prefix.
pub const MAX_KIND_BYTES: usize = 200;

/// One wake-up to publish: the operation to attempt, and its kind, which picks the stream or
/// queue it travels on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WakeUp {
    /// The operation to attempt.
    pub id: OperationId,
    /// Its kind.
    pub kind: String,
}

impl WakeUp {
    /// The wake-up of operation `id` of `kind`.
    pub fn new(id: OperationId, kind: impl Into<String>) -> Self {
        WakeUp {
            id,
            kind: kind.into(),
        }
    }
}

/// What acknowledging a delivery needs; opaque to callers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AckToken {
    /// A numeric delivery tag (AMQP, in-memory).
    Tag(u64),
    /// A stream entry (Redis Streams): the kind whose stream holds it, and the entry id.
    Entry {
        /// The kind whose stream the entry is in.
        kind: String,
        /// The entry id.
        id: String,
    },
}

/// One message taken off the transport: a decoded wake-up, or the reason its bytes were not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Acknowledges this delivery.
    pub ack: AckToken,
    /// The kind whose stream or queue it came from.
    pub kind: String,
    /// The operation to attempt, or why the frame is garbage.
    pub frame: std::result::Result<OperationId, FrameError>,
}

/// How many wake-ups wait for one kind.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KindDepth {
    /// The kind.
    pub kind: String,
    /// Its wake-ups waiting, or delivered and not yet acknowledged.
    pub depth: u64,
}

/// Checks that `kind` can name a stream or queue: not empty, at most [`MAX_KIND_BYTES`], and no
/// control characters. A transport refuses (as invalid input, never a panic) a wake-up or a
/// receive whose kind fails this.
pub fn check_kind(kind: &str) -> Result<()> {
    let shown: String = kind.chars().take(60).collect();
    if kind.is_empty() {
        return Err(Error::InvalidInput(
            "a wake-up needs a kind: the kind names its stream or queue, and it is empty".into(),
        ));
    }
    if kind.len() > MAX_KIND_BYTES {
        return Err(Error::InvalidInput(format!(
            "kind {shown:?}... is {} bytes; a transport routes kinds of at most {MAX_KIND_BYTES}",
            kind.len()
        )));
    }
    if kind.chars().any(char::is_control) {
        return Err(Error::InvalidInput(format!(
            "kind {shown:?} holds a control character; it cannot name a stream or queue"
        )));
    }
    Ok(())
}

/// A carrier of wake-ups. Implemented by the in-memory transport (oprec-runtime), Redis Streams
/// (oprec-redis) and AMQP (oprec-amqp); each passes `oprec-testkit`'s transport suite.
///
/// Each kind travels on a stream or queue of its own. `depth` and `purge` act on one kind, or on
/// every kind the transport knows of: those it finds on the broker where the broker can list them
/// (Redis), those published or received through it, and those named by
/// [`know_kinds`](Transport::know_kinds).
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// A short name for logs and metrics ("memory", "redis", "amqp").
    fn name(&self) -> &'static str;

    /// Publishes the wake-ups, each on its kind's stream or queue, as one batch. Returns once the
    /// broker has accepted them (publisher confirms where the broker has them). A kind that fails
    /// [`check_kind`] fails the batch before anything is sent.
    async fn publish(&self, wakeups: &[WakeUp]) -> Result<()>;

    /// Waits up to `wait` for deliveries of the given kinds and returns at most `max` of them
    /// (possibly none). Wake-ups of other kinds stay on the broker for the workers that run them.
    /// A delivery not acknowledged may be delivered again, to this or another consumer.
    async fn receive(&self, kinds: &[String], max: usize, wait: Duration) -> Result<Vec<Delivery>>;

    /// Acknowledges deliveries: they will not be delivered again.
    async fn ack(&self, tokens: Vec<AckToken>) -> Result<()>;

    /// Drops every waiting wake-up of `kind`, or of every kind known when `None`; returns how many
    /// were dropped. Intent stays in the store.
    async fn purge(&self, kind: Option<&str>) -> Result<u64>;

    /// How many wake-ups of `kind` (of every kind known when `None`) wait to be delivered (or
    /// delivered and not yet acknowledged, where the broker counts them so).
    async fn depth(&self, kind: Option<&str>) -> Result<u64>;

    /// The depth of every kind known, by kind name.
    async fn depths(&self) -> Result<Vec<KindDepth>>;

    /// At most how many wake-ups of `kind` other processes' consumers may hold that
    /// [`depth`](Transport::depth) does not count: deliveries a broker pushed ahead to them
    /// (AMQP's prefetch window of each other consumer of the queue). 0, the default, where the
    /// depth counts every consumer's deliveries (Redis's pending entries) or there are no others.
    /// The scheduler allows for them before it takes wake-ups for lost.
    async fn depth_unseen_bound(&self, _kind: &str) -> Result<u64> {
        Ok(0)
    }

    /// Whether two receives at once each take up to their own `max` of the wake-ups waiting
    /// (Redis Streams, whose reads in a consumer group each get entries of their own; the
    /// in-memory queues), rather than share one window of deliveries (AMQP, whose consumers hold
    /// at most the prefetch window, which two receives split). A worker keeps a second claim in
    /// flight only on a transport where this holds: there the second claim's broker round trips
    /// overlap the first's; elsewhere it only halved each claim. `false`, the default.
    fn overlapping_receives(&self) -> bool {
        false
    }

    /// Names kinds that may have wake-ups waiting, for a broker that cannot list its queues
    /// (AMQP): `depth(None)`, `depths()` and `purge(None)` then cover them too. Transports that
    /// find every kind on the broker ignore it.
    fn know_kinds(&self, _kinds: &[String]) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_that_cannot_name_a_queue_are_refused() {
        assert!(check_kind("payment.capture").is_ok());
        assert!(check_kind("émail:envoi/1").is_ok());
        for bad in ["", "a\nb", "\u{7f}"] {
            assert!(
                matches!(check_kind(bad), Err(Error::InvalidInput(_))),
                "{bad:?}"
            );
        }
        let long = "k".repeat(MAX_KIND_BYTES + 1);
        let e = check_kind(&long).unwrap_err().to_string();
        assert!(e.contains("at most 200"), "{e}");
        assert!(check_kind(&long[..MAX_KIND_BYTES]).is_ok());
    }
}
