//! The claims a worker holds, running or waiting in its claim buffer, and the one heartbeat that
//! keeps all their leases: every third of the lease, one store call extends every held claim
//! ([`WorkerStore::operation_heartbeat_many`]); a claim the store no longer extends is lost, and
//! its signal tells the attempt (or the buffer) to let it go, since any write it made now would
//! be stale. A claim no heartbeat has extended for a whole lease (the store did not answer: a
//! partition, a stalled database) is lost too: the rescuer may have given it to another worker,
//! and the handler's cancellation token should say so without waiting for the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use oprec_core::store::{HeartbeatManyParams, HeldClaim};
use oprec_core::{OperationId, WorkerStore};
use tokio_util::sync::CancellationToken;

use crate::tally::Labels;
use uuid::Uuid;

/// The most claims one heartbeat statement carries.
const PER_STATEMENT: usize = 5000;

/// One held claim: its token, the signal of its loss, and when its lease was last set (claimed,
/// or extended by a heartbeat sent at that time).
struct Entry {
    token: Uuid,
    labels: Labels,
    lost: CancellationToken,
    renewed: Instant,
}

/// Held claims by operation.
#[derive(Clone, Default)]
pub(crate) struct Held {
    claims: Arc<Mutex<HashMap<OperationId, Entry>>>,
}

impl Held {
    fn lock(&self) -> MutexGuard<'_, HashMap<OperationId, Entry>> {
        self.claims.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds a new claim, with its operation's labels; returns the signal that fires if its
    /// lease is lost.
    pub fn insert(&self, claim: HeldClaim, labels: Labels) -> CancellationToken {
        let lost = CancellationToken::new();
        self.lock().insert(
            claim.id,
            Entry {
                token: claim.claim_token,
                labels,
                lost: lost.clone(),
                renewed: Instant::now(),
            },
        );
        lost
    }

    /// Lets a claim go (its attempt ended, or it was given back).
    pub fn remove(&self, claim: HeldClaim) {
        let mut claims = self.lock();
        if claims
            .get(&claim.id)
            .is_some_and(|e| e.token == claim.claim_token)
        {
            claims.remove(&claim.id);
        }
    }

    /// Every claim still held, with its labels, letting them all go.
    pub fn take_all(&self) -> Vec<(HeldClaim, Labels)> {
        self.lock()
            .drain()
            .map(|(id, e)| {
                (
                    HeldClaim {
                        id,
                        claim_token: e.token,
                    },
                    e.labels,
                )
            })
            .collect()
    }

    fn snapshot(&self) -> Vec<HeldClaim> {
        self.lock()
            .iter()
            .map(|(id, e)| HeldClaim {
                id: *id,
                claim_token: e.token,
            })
            .collect()
    }

    /// Signals the loss of every claim of `sent` that the store did not extend and that is still
    /// held under the same token; the others' leases count from `sent_at`.
    fn lose_unless(&self, sent: &[HeldClaim], extended: &[OperationId], sent_at: Instant) -> usize {
        let extended: std::collections::HashSet<_> = extended.iter().collect();
        let mut claims = self.lock();
        let mut lost = 0;
        for c in sent {
            let Some(e) = claims.get_mut(&c.id).filter(|e| e.token == c.claim_token) else {
                continue;
            };
            if extended.contains(&c.id) {
                e.renewed = sent_at;
            } else {
                e.lost.cancel();
                lost += 1;
            }
        }
        lost
    }

    /// Signals the loss of every claim of `sent` whose lease, last set at its `renewed` time,
    /// has run out by now: no heartbeat reached the store in time.
    fn lose_expired(&self, sent: &[HeldClaim], lease: Duration) -> usize {
        let claims = self.lock();
        let mut lost = 0;
        for c in sent {
            if let Some(e) = claims.get(&c.id).filter(|e| e.token == c.claim_token)
                && e.renewed.elapsed() >= lease
                && !e.lost.is_cancelled()
            {
                e.lost.cancel();
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
            let sent_at = Instant::now();
            match store
                .operation_heartbeat_many(HeartbeatManyParams {
                    claims: sent.to_vec(),
                    lease,
                })
                .await
            {
                Ok(extended) => {
                    let lost = held.lose_unless(sent, &extended, sent_at);
                    if lost > 0 {
                        tracing::warn!(lost, "leases lost; abandoning those claims");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, claims = sent.len(), "heartbeat failed");
                    let lost = held.lose_expired(sent, lease.to_std().unwrap_or(Duration::MAX));
                    if lost > 0 {
                        tracing::warn!(
                            lost,
                            "leases ran out with no heartbeat answered; abandoning those claims"
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> HeldClaim {
        HeldClaim {
            id: OperationId::from(Uuid::now_v7()),
            claim_token: Uuid::now_v7(),
        }
    }

    #[test]
    fn a_claim_is_lost_when_the_store_refuses_it_or_its_lease_runs_out_unanswered() {
        let held = Held::default();
        let (kept, refused, unanswered) = (claim(), claim(), claim());
        let signals: Vec<_> = [kept, refused, unanswered]
            .iter()
            .map(|c| held.insert(*c, Labels::default()))
            .collect();
        let lost = held.lose_unless(&[kept, refused], &[kept.id], Instant::now());
        assert_eq!(lost, 1);
        assert!(!signals[0].is_cancelled() && signals[1].is_cancelled());
        // The store did not answer: only a claim whose whole lease has passed is lost.
        assert_eq!(held.lose_expired(&[unanswered], Duration::from_secs(60)), 0);
        assert!(!signals[2].is_cancelled());
        assert_eq!(held.lose_expired(&[unanswered], Duration::ZERO), 1);
        assert!(signals[2].is_cancelled());
        // A claim let go is no longer signalled.
        held.remove(kept);
        assert_eq!(held.lose_expired(&[kept], Duration::ZERO), 0);
        assert!(!signals[0].is_cancelled());
    }
}
