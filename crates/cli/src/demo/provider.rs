//! A simulated shipping provider on the virtual clock, and `demo.shipment`, the kind that calls
//! it. Each scenario scripts the provider through its payload: down for a while, timing out after
//! the write, or never answering (a hung handler standing in for a crashed worker).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use oprec::store::OperationGetParams;
use oprec::{
    Clock, Context, Failure, FullStore, Kind, Ladder, ManualClock, OperationId, RetryPolicy, Status,
};
use serde::{Deserialize, Serialize};

/// The kind's name.
pub(crate) const KIND: &str = "demo.shipment";

/// The demo's ladder: at once, then after 60, 300, 1,500, 7,500 and 37,500 seconds (13 hours
/// from the first attempt to the sixth).
pub(crate) const LADDER: [i64; 6] = [0, 60, 300, 1500, 7500, 37500];

/// The lease of one attempt; a hung attempt vanishes once it has expired.
pub(crate) const LEASE_SECS: i64 = 30;

/// How the provider behaves for one shipment.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(crate) struct Script {
    /// The provider answers 503 until this many seconds after the demo's start.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub down_for_s: i64,
    /// The request is written, then the answer never comes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timeout_after_write: bool,
    /// The handler never returns, as if the worker had crashed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hang: bool,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// The kind's payload.
#[derive(Deserialize)]
struct Shipment {
    postal_code: String,
    #[serde(default)]
    script: Script,
}

/// The provider: deduplicates by the effect key it is handed, as a real idempotent API would.
#[derive(Debug)]
pub(crate) struct Provider {
    clock: Arc<ManualClock>,
    start: DateTime<Utc>,
    shipments: Mutex<HashMap<String, String>>,
    keys: Mutex<HashMap<OperationId, String>>,
}

impl Provider {
    /// A provider whose outages are measured from `start` on `clock`.
    pub(crate) fn new(clock: Arc<ManualClock>, start: DateTime<Utc>) -> Self {
        Provider {
            clock,
            start,
            shipments: Mutex::default(),
            keys: Mutex::default(),
        }
    }

    /// The effect key the provider was handed for an operation, if it was called.
    pub(crate) fn effect_key(&self, id: OperationId) -> Option<String> {
        self.keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
    }

    /// Creates (or finds) the shipment for `effect_key`.
    fn create(&self, id: OperationId, effect_key: &str, s: &Shipment) -> anyhow::Result<String> {
        self.keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, effect_key.to_owned());
        if self.clock.now() < self.start + Duration::seconds(s.script.down_for_s) {
            return Err(Failure::transient("provider answered 503 Service Unavailable").into());
        }
        let shipment = self
            .shipments
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(effect_key.to_owned())
            .or_insert_with(|| {
                let tail: String = effect_key
                    .chars()
                    .rev()
                    .take(8)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("shp-{}-{tail}", s.postal_code)
            })
            .clone();
        if s.script.timeout_after_write {
            return Err(Failure::unknown(
                "timed out after the request was written: the shipment may exist",
            )
            .into());
        }
        Ok(shipment)
    }
}

/// A hung attempt, as if its worker had crashed: no outcome while the claim is this attempt's.
/// Once the lease has run out on the virtual clock and the rescuer has taken the claim, the
/// attempt wakes and replies late, and the fence refuses the reply. (Hanging for ever instead
/// would keep the task alive in a live worker, which then never runs a suspect alone, and its
/// heartbeats would renew the lease in real time.)
async fn hang(store: &dyn FullStore, ctx: &Context) -> anyhow::Result<()> {
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let op = store
            .operation_get(OperationGetParams { id: ctx.id() })
            .await?
            .map(|d| d.operation);
        match op {
            Some(op) if op.status == Status::Running && op.attempt == ctx.attempt() => {}
            _ => anyhow::bail!("woke after the claim was taken over"),
        }
    }
}

/// The demo's policy: its ladder, six attempts, 30 s per attempt.
pub(crate) fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(LADDER.len() as u32)
        .external_io(Ladder::schedule_secs(&LADDER))
        .jitter(oprec::Jitter::None)
        .build()
        .expect("the demo's policy is valid")
}

/// `demo.shipment`: creates a shipment at the provider, handing it the operation's effect key,
/// and records the provider's shipment id as the remote id.
pub(crate) fn kind(provider: Arc<Provider>, store: Arc<dyn FullStore>) -> Kind {
    Kind::new(KIND, policy(), move |ctx: Context, s: Shipment| {
        let (provider, store) = (provider.clone(), store.clone());
        async move {
            if s.script.hang {
                hang(store.as_ref(), &ctx).await?;
            }
            let shipment = provider.create(ctx.id(), ctx.effect_key(), &s)?;
            ctx.set_remote_id(shipment).await?;
            Ok(())
        }
    })
    .dependency("shipping-provider")
}
