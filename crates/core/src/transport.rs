//! The [`Transport`] trait: a doorbell, not a record. It carries wake-up frames ("attempt
//! operation N now"), can publish a batch, hand out deliveries to acknowledge, purge and report its
//! depth. Losing, purging or duplicating what it carries never loses or repeats work, because the
//! store decides what is claimable.

use std::time::Duration;

use async_trait::async_trait;

use crate::frame::FrameError;
use crate::{OperationId, Result};

/// What acknowledging a delivery needs; opaque to callers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AckToken {
    /// A numeric delivery tag (AMQP, in-memory).
    Tag(u64),
    /// An entry id (Redis Streams).
    Id(String),
}

/// One message taken off the transport: a decoded wake-up, or the reason its bytes were not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Acknowledges this delivery.
    pub ack: AckToken,
    /// The operation to attempt, or why the frame is garbage.
    pub frame: std::result::Result<OperationId, FrameError>,
}

/// A carrier of wake-ups. Implemented by the in-memory transport (oprec-runtime), Redis Streams
/// (oprec-redis) and AMQP (oprec-amqp); each passes `oprec-testkit`'s transport suite.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// A short name for logs and metrics ("memory", "redis", "amqp").
    fn name(&self) -> &'static str;

    /// Publishes one wake-up per id, as one batch. Returns once the broker has accepted them
    /// (publisher confirms where the broker has them).
    async fn publish(&self, ids: &[OperationId]) -> Result<()>;

    /// Waits up to `wait` for deliveries and returns at most `max` of them (possibly none).
    /// A delivery not acknowledged may be delivered again, to this or another consumer.
    async fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>>;

    /// Acknowledges deliveries: they will not be delivered again.
    async fn ack(&self, tokens: Vec<AckToken>) -> Result<()>;

    /// Drops every waiting wake-up; returns how many were dropped. Intent stays in the store.
    async fn purge(&self) -> Result<u64>;

    /// How many wake-ups wait to be delivered (or delivered and not yet acknowledged, where the
    /// broker counts them so).
    async fn depth(&self) -> Result<u64>;
}
