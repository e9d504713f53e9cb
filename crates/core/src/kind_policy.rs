//! What a producer outside Rust must know of a kind to enqueue it as the Rust client does: the
//! enqueue-time part of its policy. Every worker publishes it for the kinds it runs when it
//! starts (the `operation_kinds` table, the latest publication winning), and PostgreSQL's
//! `oprec_enqueue(kind, payload, options)` reads it there, so an application in any language
//! enqueues inside its own transaction with the same bound, deadline, first rung, payload mode
//! and dependency as [`NewOperation`](crate::NewOperation) would give the row.

use chrono::{DateTime, Duration, Utc};

use crate::{PayloadMode, RetryPolicy};

/// The enqueue-time part of one kind's policy: what [`NewOperation::new`](crate::NewOperation::new)
/// reads of the kind, and nothing else (the ladder's later rungs, the timeout and the classes'
/// rules are the worker's business, at each attempt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindPolicy {
    /// The kind's name.
    pub kind: String,
    /// The policy's attempt bound ([`RetryPolicy::max_attempts`]); a caller's bound only lowers it.
    pub max_attempts: Option<u32>,
    /// How long after enqueue the kind gives up unless the caller gives a deadline.
    pub give_up_after: Option<Duration>,
    /// The wait before the first attempt ([`RetryPolicy::first_delay`]).
    pub first_delay: Duration,
    /// Whether the payload is a snapshot or a reference.
    pub payload_mode: PayloadMode,
    /// The named dependency the kind calls, unless the caller names another.
    pub dependency: Option<String>,
}

impl KindPolicy {
    /// The enqueue-time part of `policy`, for the kind `kind` declaring `payload_mode` and
    /// `dependency`.
    pub fn new(
        kind: impl Into<String>,
        policy: &RetryPolicy,
        payload_mode: PayloadMode,
        dependency: Option<&str>,
    ) -> Self {
        KindPolicy {
            kind: kind.into(),
            max_attempts: policy.max_attempts(),
            give_up_after: policy.give_up_after(),
            first_delay: policy.first_delay(),
            payload_mode,
            dependency: dependency.map(str::to_owned),
        }
    }
}

/// Publish the enqueue-time policies of the kinds a worker runs (each upserted: the latest
/// publication of a kind wins), noting who published them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindPublishParams {
    /// The publishing worker's id (as in its claims and its `workers` row).
    pub published_by: String,
    /// The application code version it runs.
    pub code_version: Option<String>,
    /// One per kind it runs.
    pub kinds: Vec<KindPolicy>,
}

/// A row of the `operation_kinds` table: a kind's policy as a worker last published it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindRecord {
    /// The policy.
    pub policy: KindPolicy,
    /// The worker that published it.
    pub published_by: String,
    /// That worker's application code version.
    pub code_version: Option<String>,
    /// When, by the store's clock.
    pub published_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EnqueueOptions, Exponential, Jitter, Ladder, NewOperation};
    use chrono::TimeZone;

    /// What a producer outside Rust computes from the published policy is what the Rust client
    /// writes: the same bound, deadline and first eligible time.
    #[test]
    fn the_published_policy_gives_the_row_the_rust_client_writes() {
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let policies = [
            RetryPolicy::builder()
                .timeout(Duration::seconds(30))
                .max_attempts(9)
                .give_up_after(Duration::hours(48))
                .external_io(Ladder::schedule_secs(&[15, 60, 300]))
                .jitter(Jitter::Equal)
                .build()
                .unwrap(),
            RetryPolicy::builder()
                .timeout(Duration::seconds(30))
                .give_up_after(Duration::minutes(90))
                .external_io(Ladder::exponential(Exponential::new(
                    Duration::seconds(5),
                    2.0,
                    Duration::hours(1),
                )))
                .jitter(Jitter::Full)
                .build()
                .unwrap(),
        ];
        for policy in &policies {
            let published = KindPolicy::new("k", policy, PayloadMode::Reference, Some("provider"));
            for asked in [None, Some(2), Some(50)] {
                let options = EnqueueOptions {
                    max_attempts: asked,
                    delay: Some(Duration::seconds(90)),
                    ..EnqueueOptions::default()
                };
                let op =
                    NewOperation::new("k", serde_json::json!({}), policy, options.clone(), now)
                        .unwrap();
                // The leader enqueueing a scheduled kind it does not run writes the same row.
                let from_published =
                    NewOperation::from_published(&published, serde_json::json!({}), options, now)
                        .unwrap();
                assert_eq!(from_published.max_attempts, op.max_attempts);
                assert_eq!(from_published.next_eligible_at, op.next_eligible_at);
                assert_eq!(from_published.give_up_at, op.give_up_at);
                assert_eq!(from_published.dependency.as_deref(), Some("provider"));
                assert_eq!(from_published.payload_mode, PayloadMode::Reference);
                let bound = match (asked, published.max_attempts) {
                    (Some(a), Some(p)) => Some(a.min(p)),
                    (a, p) => a.or(p),
                };
                assert_eq!(op.max_attempts, bound);
                assert_eq!(
                    op.next_eligible_at,
                    now + Duration::seconds(90) + published.first_delay
                );
                assert_eq!(
                    op.give_up_at,
                    published.give_up_after.map(|after| now + after)
                );
            }
        }
        assert_eq!(
            KindPolicy::new("k", &policies[0], PayloadMode::Snapshot, None).first_delay,
            Duration::seconds(15)
        );
        assert_eq!(
            KindPolicy::new("k", &policies[1], PayloadMode::Snapshot, None).max_attempts,
            None
        );
    }
}
