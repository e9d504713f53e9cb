//! What an enqueue writes, decided before it is written: the options a caller gives, their
//! checks, and how a batch that repeats an idempotency key resolves.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::Enqueued;
use crate::{Error, OperationId, PayloadMode, Result, RetryPolicy, TraceParent};

/// What a caller may say about one enqueue; kept verbatim in `enqueue_params`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnqueueOptions {
    /// Enqueueing the same key for the same kind again returns the existing operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Not claimable before this much time has passed.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_secs")]
    pub delay: Option<Duration>,
    /// The caller's deadline; overrides the kind's give-up duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// Overrides the kind's attempt bound (only downwards: the policy is the ceiling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// The named dependency the operation calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
    /// The producer's W3C trace context (`traceparent`), stored on the operation so that every
    /// attempt's span links back to the request that enqueued it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<TraceParent>,
    /// The claim order among eligible operations, from [`PRIORITY_MIN`](crate::PRIORITY_MIN)
    /// (claimed last) to [`PRIORITY_MAX`](crate::PRIORITY_MAX) (claimed first); `None` is
    /// [`PRIORITY_DEFAULT`](crate::PRIORITY_DEFAULT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i16>,
}

mod opt_secs {
    use chrono::Duration;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.num_milliseconds() as f64 / 1000.0),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.map(|s| Duration::milliseconds((s * 1000.0) as i64)))
    }
}

/// The largest payload accepted by default (256 KiB of JSON).
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 256 * 1024;

/// An operation about to be enqueued: everything the store writes, decided before it is written.
#[derive(Clone, Debug, PartialEq)]
pub struct NewOperation {
    /// The new id.
    pub id: OperationId,
    /// The kind.
    pub kind: String,
    /// The idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// The payload snapshot.
    pub payload: Value,
    /// The attempt bound.
    pub max_attempts: Option<u32>,
    /// First eligible time: enqueue time + delay + the ladder's first rung.
    pub next_eligible_at: DateTime<Utc>,
    /// The deadline.
    pub give_up_at: Option<DateTime<Utc>>,
    /// The named dependency.
    pub dependency: Option<String>,
    /// Whether the payload is a snapshot or a reference (the kind's declaration).
    pub payload_mode: PayloadMode,
    /// The producer's trace context.
    pub traceparent: Option<TraceParent>,
    /// The claim order among eligible operations (README, "Priorities").
    pub priority: i16,
    /// The options as given.
    pub enqueue_params: Value,
    /// Enqueue time.
    pub created_at: DateTime<Utc>,
    /// When the enqueuer publishes the wake-up itself right after the insert commits, the time
    /// to record it as published, written with the row: the scheduler then leaves the operation
    /// alone until the wake-up is due again, and a worker claiming it at once never finds the
    /// row locked by a later write. `None` (the default) leaves waking it to the scheduler.
    pub last_woken_at: Option<DateTime<Utc>>,
}

impl NewOperation {
    /// Prepares an operation of `kind` under `policy` at time `now`.
    ///
    /// Refuses an empty kind, a payload larger than [`DEFAULT_MAX_PAYLOAD_BYTES`], a deadline
    /// already past and an attempt bound of zero, so nothing half-valid is stored.
    pub fn new(
        kind: impl Into<String>,
        payload: Value,
        policy: &RetryPolicy,
        options: EnqueueOptions,
        now: DateTime<Utc>,
    ) -> Result<Self> {
        Self::with_payload_limit(
            kind,
            payload,
            policy,
            options,
            now,
            DEFAULT_MAX_PAYLOAD_BYTES,
        )
    }

    /// Prepares an operation of a kind known only by its published enqueue-time policy (the
    /// maintenance leader enqueueing a scheduled kind it does not run): the same bound, deadline,
    /// first rung, payload mode and dependency as [`NewOperation::new`] under the kind's policy.
    pub fn from_published(
        published: &crate::KindPolicy,
        payload: Value,
        options: EnqueueOptions,
        now: DateTime<Utc>,
    ) -> Result<Self> {
        // The checks of `new`, under a policy that adds nothing; the kind's part is applied after.
        let neutral = RetryPolicy::builder()
            .timeout(Duration::seconds(1))
            .max_attempts(u32::MAX)
            .local_only()
            .jitter(crate::Jitter::None)
            .build()?;
        let asked_bound = options.max_attempts;
        let has_deadline = options.deadline.is_some();
        let mut op = Self::new(published.kind.clone(), payload, &neutral, options, now)?;
        op.max_attempts = match (asked_bound, published.max_attempts) {
            (Some(a), Some(p)) => Some(a.min(p)),
            (a, p) => a.or(p),
        };
        if !has_deadline && let Some(after) = published.give_up_after {
            op.give_up_at = Some(now.checked_add_signed(after).ok_or_else(|| {
                Error::InvalidInput("the kind's give-up duration is too long".into())
            })?);
        }
        op.next_eligible_at += published.first_delay;
        if op.dependency.is_none() {
            op.dependency = published.dependency.clone();
        }
        op.payload_mode = published.payload_mode;
        Ok(op)
    }

    /// [`NewOperation::new`] with a payload limit of `max_payload_bytes`.
    pub fn with_payload_limit(
        kind: impl Into<String>,
        payload: Value,
        policy: &RetryPolicy,
        options: EnqueueOptions,
        now: DateTime<Utc>,
        max_payload_bytes: usize,
    ) -> Result<Self> {
        let kind = kind.into();
        let invalid = |m: String| Err(Error::InvalidInput(m));
        if kind.trim().is_empty() || kind.len() > 200 {
            return invalid("kind must be 1 to 200 characters".into());
        }
        let size = serde_json::to_vec(&payload)
            .map_err(|e| Error::InvalidInput(format!("payload is not serializable: {e}")))?
            .len();
        if size > max_payload_bytes {
            return invalid(format!(
                "payload is {size} bytes, over the limit of {max_payload_bytes} bytes; store large inputs elsewhere and enqueue a reference"
            ));
        }
        if options
            .idempotency_key
            .as_ref()
            .is_some_and(|k| k.is_empty() || k.len() > 1000)
        {
            return invalid("idempotency key must be 1 to 1000 characters".into());
        }
        // PostgreSQL keeps no NUL in text or jsonb; refused here, every store takes the same input.
        if kind.contains('\0')
            || options
                .idempotency_key
                .as_ref()
                .is_some_and(|k| k.contains('\0'))
        {
            return invalid(
                "the kind and the idempotency key must not contain NUL characters".into(),
            );
        }
        if contains_nul(&payload) {
            return invalid(
                "the payload contains a NUL character (\\u0000), which the stores cannot keep"
                    .into(),
            );
        }
        if options.max_attempts == Some(0) {
            return invalid("max attempts must be positive".into());
        }
        let priority = options
            .priority
            .map(crate::check_priority)
            .transpose()?
            .unwrap_or(crate::PRIORITY_DEFAULT);
        if options.delay.is_some_and(|d| d < Duration::zero()) {
            return invalid("delay must not be negative".into());
        }
        let too_far =
            || Error::InvalidInput("the delay or deadline is too far in the future".into());
        let give_up_at = match options.deadline {
            Some(d) => Some(d),
            None => policy
                .give_up_after()
                .map(|d| now.checked_add_signed(d).ok_or_else(too_far))
                .transpose()?,
        };
        if let Some(deadline) = give_up_at
            && deadline <= now
        {
            return invalid(format!("deadline {deadline} is not in the future"));
        }
        let first_rung = policy.first_delay();
        let max_attempts = policy.attempt_bound(options.max_attempts);
        let enqueue_params = serde_json::to_value(&options)
            .map_err(|e| Error::InvalidInput(format!("enqueue options: {e}")))?;
        Ok(NewOperation {
            id: OperationId::new(),
            kind,
            idempotency_key: options.idempotency_key,
            payload,
            max_attempts,
            next_eligible_at: now
                .checked_add_signed(options.delay.unwrap_or_default())
                .and_then(|t| t.checked_add_signed(first_rung))
                .ok_or_else(too_far)?,
            give_up_at,
            dependency: options.dependency,
            traceparent: options.traceparent,
            priority,
            payload_mode: PayloadMode::Snapshot,
            enqueue_params,
            created_at: now,
            last_woken_at: None,
        })
    }
}

/// Whether any string or key in `v` holds a NUL character.
fn contains_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(contains_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

/// How a batch that names the same (kind, idempotency key) more than once is enqueued: the first
/// occurrence is inserted (or finds the stored operation), and every repeat returns the same
/// operation with `created: false`. Stores insert [`IdempotentBatch::unique`] and hand their
/// results to [`IdempotentBatch::resolve`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotentBatch {
    /// Indices of the operations to insert, in input order.
    unique: Vec<usize>,
    /// For each input, the index into `unique` of the operation it resolves to.
    slot: Vec<usize>,
}

impl IdempotentBatch {
    /// Plans `ops`.
    pub fn plan(ops: &[NewOperation]) -> Self {
        let mut first_of_key: HashMap<(&str, &str), usize> = HashMap::new();
        let mut unique = Vec::with_capacity(ops.len());
        let mut slot = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            if let Some(key) = op.idempotency_key.as_deref() {
                if let Some(&s) = first_of_key.get(&(op.kind.as_str(), key)) {
                    slot.push(s);
                    continue;
                }
                first_of_key.insert((op.kind.as_str(), key), unique.len());
            }
            slot.push(unique.len());
            unique.push(i);
        }
        IdempotentBatch { unique, slot }
    }

    /// The indices (into the planned batch) of the operations to insert, in input order.
    pub fn unique(&self) -> &[usize] {
        &self.unique
    }

    /// One result per input operation, in input order, from `inserted[k]`, the store's result
    /// for `unique()[k]`. A repeat within the batch is never `created`.
    pub fn resolve(&self, inserted: &[Enqueued]) -> Result<Vec<Enqueued>> {
        if inserted.len() != self.unique.len() {
            return Err(Error::backend(
                false,
                format!(
                    "enqueue returned {} results for {} operations",
                    inserted.len(),
                    self.unique.len()
                ),
            ));
        }
        let mut seen = vec![false; inserted.len()];
        Ok(self
            .slot
            .iter()
            .map(|&s| {
                let first = !std::mem::replace(&mut seen[s], true);
                Enqueued {
                    id: inserted[s].id,
                    created: inserted[s].created && first,
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ladder;
    use chrono::TimeZone;

    fn policy() -> RetryPolicy {
        RetryPolicy::builder()
            .timeout(Duration::seconds(30))
            .max_attempts(3)
            .external_io(Ladder::schedule_secs(&[0, 60, 300]))
            .jitter(crate::Jitter::None)
            .build()
            .unwrap()
    }

    #[test]
    fn a_key_repeated_in_a_batch_resolves_to_its_first_occurrence() {
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let op = |kind: &str, key: Option<&str>| {
            let options = EnqueueOptions {
                idempotency_key: key.map(str::to_owned),
                ..EnqueueOptions::default()
            };
            NewOperation::new(kind, Value::Null, &policy(), options, now).unwrap()
        };
        let ops = vec![
            op("a", Some("k")),
            op("a", None),
            op("a", Some("k")),
            op("b", Some("k")),
        ];
        let plan = IdempotentBatch::plan(&ops);
        assert_eq!(plan.unique(), &[0, 1, 3]);
        let inserted: Vec<Enqueued> = plan
            .unique()
            .iter()
            .map(|&i| Enqueued {
                id: ops[i].id,
                created: true,
            })
            .collect();
        let out = plan.resolve(&inserted).unwrap();
        assert_eq!(out[2].id, ops[0].id);
        assert!(out[0].created && !out[2].created && out[3].created);
        assert!(plan.resolve(&inserted[..2]).is_err());
    }

    #[test]
    fn a_delay_past_the_calendar_is_refused_not_a_panic() {
        // Found by the CLI's parser_fuzz: `--delay 300000y` parses as a duration.
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let options = EnqueueOptions {
            delay: Some(Duration::days(300_000 * 365)),
            ..EnqueueOptions::default()
        };
        let err = NewOperation::new("k", Value::Null, &policy(), options, now).unwrap_err();
        assert!(err.to_string().contains("too far in the future"), "{err}");
    }

    #[test]
    fn nul_characters_are_refused_on_every_store() {
        // Found by hostile_filters: PostgreSQL's jsonb refused `\u0000` as a backend error while
        // SQLite stored it.
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let new = |payload: Value, key: Option<&str>| {
            let options = EnqueueOptions {
                idempotency_key: key.map(str::to_owned),
                ..EnqueueOptions::default()
            };
            NewOperation::new("k", payload, &policy(), options, now)
        };
        let err = new(serde_json::json!({"a": [1, {"b": "x\u{0}y"}]}), None).unwrap_err();
        assert!(err.to_string().contains("NUL character"), "{err}");
        assert!(new(serde_json::json!({"a\u{0}": 1}), None).is_err());
        assert!(new(serde_json::json!({}), Some("a\u{0}b")).is_err());
        assert!(new(serde_json::json!({"a": "\\u0000"}), Some("k")).is_ok());
    }

    #[test]
    fn the_payload_limit_is_the_callers() {
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let payload = serde_json::json!({ "text": "x".repeat(100) });
        let at = |limit| {
            NewOperation::with_payload_limit(
                "k",
                payload.clone(),
                &policy(),
                EnqueueOptions::default(),
                now,
                limit,
            )
        };
        let size = serde_json::to_vec(&payload).unwrap().len();
        assert!(at(size).is_ok());
        let err = at(size - 1).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "payload is {size} bytes, over the limit of {}",
                size - 1
            )),
            "{err}"
        );
    }
}
