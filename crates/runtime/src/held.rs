//! The claims a worker holds, running or waiting in its claim buffer, and the one heartbeat that
//! keeps all their leases: every third of the lease, one store call extends every held claim
//! ([`WorkerStore::operation_heartbeat_many`]); a claim the store no longer extends is lost, and
//! its signal tells the attempt (or the buffer) to let it go, since any write it made now would
//! be stale.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use oprec_core::store::{HeartbeatManyParams, HeldClaim};
use oprec_core::{OperationId, WorkerStore};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The most claims one heartbeat statement carries.
const PER_STATEMENT: usize = 5000;

/// Held claims by operation: the claim's token and the signal of its loss.
#[derive(Clone, Default)]
pub(crate) struct Held {
    claims: Arc<Mutex<HashMap<OperationId, (Uuid, CancellationToken)>>>,
}

impl Held {
    fn lock(&self) -> MutexGuard<'_, HashMap<OperationId, (Uuid, CancellationToken)>> {
        self.claims.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds a new claim; returns the signal that fires if its lease is lost.
    pub fn insert(&self, claim: HeldClaim) -> CancellationToken {
        let lost = CancellationToken::new();
        self.lock()
            .insert(claim.id, (claim.claim_token, lost.clone()));
        lost
    }

    /// Lets a claim go (its attempt ended, or it was given back).
    pub fn remove(&self, claim: HeldClaim) {
        let mut claims = self.lock();
        if claims
            .get(&claim.id)
            .is_some_and(|(t, _)| *t == claim.claim_token)
        {
            claims.remove(&claim.id);
        }
    }

    /// Every claim still held, letting them all go.
    pub fn take_all(&self) -> Vec<HeldClaim> {
        self.lock()
            .drain()
            .map(|(id, (claim_token, _))| HeldClaim { id, claim_token })
            .collect()
    }

    fn snapshot(&self) -> Vec<HeldClaim> {
        self.lock()
            .iter()
            .map(|(id, (claim_token, _))| HeldClaim {
                id: *id,
                claim_token: *claim_token,
            })
            .collect()
    }

    /// Signals the loss of every claim of `sent` that the store did not extend and that is still
    /// held under the same token.
    fn lose_unless(&self, sent: &[HeldClaim], extended: &[OperationId]) -> usize {
        let extended: std::collections::HashSet<_> = extended.iter().collect();
        let claims = self.lock();
        let mut lost = 0;
        for c in sent.iter().filter(|c| !extended.contains(&c.id)) {
            if let Some((token, signal)) = claims.get(&c.id)
                && *token == c.claim_token
            {
                signal.cancel();
                lost += 1;
            }
        }
        lost
    }
}

/// Lets a running attempt's claim go if its handler panics, so that its lease is no longer
/// extended and the rescuer takes the operation back, as it would after a crash. An attempt
/// aborted at the drain timeout keeps its claim held: the worker releases it.
pub(crate) struct LetGoOnPanic {
    /// Where the claim is held.
    pub held: Held,
    /// The claim.
    pub claim: HeldClaim,
}

impl Drop for LetGoOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.held.remove(self.claim);
        }
    }
}

/// Extends every held claim's lease each `every` until `stop`. A store error is logged and
/// retried at the next beat: the lease decides.
pub(crate) async fn heartbeat(
    store: Arc<dyn WorkerStore>,
    held: Held,
    lease: chrono::Duration,
    every: Duration,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let all = held.snapshot();
        for sent in all.chunks(PER_STATEMENT) {
            match store
                .operation_heartbeat_many(HeartbeatManyParams {
                    claims: sent.to_vec(),
                    lease,
                })
                .await
            {
                Ok(extended) => {
                    let lost = held.lose_unless(sent, &extended);
                    if lost > 0 {
                        tracing::warn!(lost, "leases lost; abandoning those claims");
                    }
                }
                Err(e) => tracing::warn!(error = %e, claims = sent.len(), "heartbeat failed"),
            }
        }
    }
}
