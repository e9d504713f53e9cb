//! Limit cost: what a limit across the fleet adds to a claim. The same claim of [`LIMIT`]
//! `demo.noop` operations is timed in three settings, taken in turn within each round so that a
//! noisy machine weighs on all three alike:
//!
//! - **none**: no limit row exists (the store looks once whether any does, and skips the rest);
//! - **room**: a running limit on the kind and a rate on its dependency, both far above what a
//!   claim takes, so the claim locks the limit rows, counts what runs, and writes the rate's
//!   window, yet claims all it asked for;
//! - **capped**: a running limit of half a claim, so the claim takes the capped statement (a
//!   `row_number` per kind and per dependency) and gets [`CAPPED`] operations.
//!
//! Every claim's operations are completed (untimed) before the next, so nothing runs between
//! rounds and each setting claims from the same backlog.

use std::time::{Duration, Instant};

use oprec::limit::{LimitRemoveParams, LimitSetParams};
use oprec::store::{ClaimEligibleParams, Claimant};
use oprec::{EnqueueOptions, EnqueueStore, LimitScope, LimitStore, NewOperation, WorkerStore};
use serde::Serialize;

use crate::claim_cost::{complete, median_ms};
use crate::schema::{Database, Schema, with_schema};
use crate::{Error, Result, noop};

/// Operations per claim.
const LIMIT: u32 = 100;
/// The capped setting's running limit: what its claim gets.
const CAPPED: u32 = LIMIT / 2;
/// A limit no claim of the phase comes near.
const ROOMY: u32 = 1_000_000;
/// Untimed rounds before the timed ones.
const WARM_UP: usize = 10;
/// Pending operations kept in the table behind the claimed ones.
const BACKLOG: u64 = 10_000;

/// The three settings of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    None,
    Room,
    Capped,
}

impl Setting {
    const ALL: [Setting; 3] = [Setting::None, Setting::Room, Setting::Capped];

    fn expected(self) -> usize {
        match self {
            Setting::Capped => CAPPED as usize,
            _ => LIMIT as usize,
        }
    }
}

/// What a limit adds to a claim.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LimitCost {
    /// Operations asked for by each claim.
    pub claim: u32,
    /// Timed rounds (one claim of each setting per round).
    pub samples: usize,
    /// Pending operations behind the claimed ones.
    pub backlog: u64,
    /// Median claim with no limit row, in milliseconds.
    pub none_median_ms: f64,
    /// Median claim under a running limit on the kind and a rate on its dependency, both with
    /// room for the whole claim, in milliseconds.
    pub room_median_ms: f64,
    /// Median claim capped by a running limit to half of it, in milliseconds.
    pub capped_median_ms: f64,
    /// `room_median_ms / none_median_ms`.
    pub room_ratio: f64,
    /// `capped_median_ms / none_median_ms` (for half the operations).
    pub capped_ratio: f64,
}

fn set(scope: LimitScope, value: &str, running: Option<u32>, rate: Option<u32>) -> LimitSetParams {
    LimitSetParams {
        scope,
        value: value.to_owned(),
        max_running: running,
        per_second: rate,
        reason: Some("oprec bench: limit cost".into()),
        actor: "bench".into(),
    }
}

async fn remove_all(s: &Schema) -> Result<()> {
    for (scope, value) in [
        (LimitScope::Kind, noop::KIND),
        (LimitScope::Dependency, noop::DEPENDENCY),
    ] {
        s.store
            .limit_remove(LimitRemoveParams {
                scope,
                value: value.to_owned(),
            })
            .await?;
    }
    Ok(())
}

/// A running limit on `demo.noop` and a rate on its dependency, each of [`ROOMY`]: limits that
/// every claim must lock, count and record, and that never hold one back.
pub(crate) async fn roomy_limits(s: &Schema) -> Result<()> {
    s.store
        .limit_set(set(LimitScope::Kind, noop::KIND, Some(ROOMY), None))
        .await?;
    s.store
        .limit_set(set(
            LimitScope::Dependency,
            noop::DEPENDENCY,
            None,
            Some(ROOMY),
        ))
        .await?;
    Ok(())
}

/// Puts the limits of `setting` in place (through the store, which so learns of them at once).
async fn arrange(s: &Schema, setting: Setting) -> Result<()> {
    remove_all(s).await?;
    match setting {
        Setting::None => {}
        Setting::Room => roomy_limits(s).await?,
        Setting::Capped => {
            s.store
                .limit_set(set(LimitScope::Kind, noop::KIND, Some(CAPPED), None))
                .await?;
        }
    }
    Ok(())
}

fn claimant() -> Claimant {
    Claimant {
        worker_id: "bench".into(),
        code_version: None,
        lease: chrono::Duration::seconds(30),
    }
}

async fn claim(s: &Schema, limit: u32) -> Result<Vec<oprec::Claimed>> {
    claim_of(s, noop::KIND, limit).await
}

/// A claim of up to `limit` operations of `kind`.
async fn claim_of(s: &Schema, kind: &str, limit: u32) -> Result<Vec<oprec::Claimed>> {
    Ok(s.store
        .operation_claim_eligible(ClaimEligibleParams {
            kinds: vec![kind.to_owned()],
            limit,
            claimant: claimant(),
        })
        .await?)
}

/// Adds `n` pending `demo.noop` operations, eligible now.
async fn add_pending(s: &Schema, n: u64) -> Result<()> {
    let policy = noop::policy()?;
    let now = chrono::Utc::now() - chrono::Duration::seconds(1);
    let mut at = 0;
    while at < n {
        let chunk = (n - at).min(1_000);
        let ops = (at..at + chunk)
            .map(|i| {
                NewOperation::new(
                    noop::KIND,
                    noop::payload(i),
                    &policy,
                    EnqueueOptions {
                        dependency: Some(noop::DEPENDENCY.to_owned()),
                        ..EnqueueOptions::default()
                    },
                    now,
                )
            })
            .collect::<oprec::Result<Vec<_>>>()?;
        s.store.operation_insert_many(ops).await?;
        at += chunk;
    }
    Ok(())
}

/// One claim in `setting`, timed; its operations completed afterwards, untimed (and, capped, as
/// many again claimed and completed without the limit, so that every round takes out what it
/// added).
async fn round(s: &Schema, setting: Setting) -> Result<Duration> {
    arrange(s, setting).await?;
    add_pending(s, u64::from(LIMIT)).await?;
    // Setting or removing a limit through the store makes it look again whether any limit
    // exists; a worker's claims trust that look for a second. An untimed claim of a kind with
    // nothing pending makes the look, so the timed claim pays what a worker's claims pay.
    claim_of(s, "bench.nothing", 1).await?;
    let started = Instant::now();
    let claimed = claim(s, LIMIT).await?;
    let took = started.elapsed();
    if claimed.len() != setting.expected() {
        return Err(Error::Check(format!(
            "a claim of {LIMIT} under the {setting:?} limits returned {} operations (expected {})",
            claimed.len(),
            setting.expected()
        )));
    }
    complete(s, claimed).await?;
    if setting == Setting::Capped {
        remove_all(s).await?;
        let rest = claim(s, LIMIT - CAPPED).await?;
        complete(s, rest).await?;
    }
    Ok(took)
}

pub(crate) async fn measure(
    db: &Database,
    samples: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<LimitCost> {
    with_schema(db, 2, true, async |s| {
        // The backlog is enqueued oldest, so each round's claim takes the backlog's oldest rows
        // and leaves as many new ones: the pending rows keep their number (finished ones pile
        // up, 300 a round).
        add_pending(s, BACKLOG).await?;
        db.checkpoint().await;
        let mut times: [Vec<Duration>; 3] = Default::default();
        for i in 0..WARM_UP + samples {
            for (n, setting) in Setting::ALL.into_iter().enumerate() {
                let took = round(s, setting).await?;
                if i >= WARM_UP {
                    times[n].push(took);
                }
            }
        }
        remove_all(s).await?;
        let [none, room, capped] = times.each_mut().map(|t| median_ms(t));
        let cost = LimitCost {
            claim: LIMIT,
            samples,
            backlog: BACKLOG,
            none_median_ms: none,
            room_median_ms: room,
            capped_median_ms: capped,
            room_ratio: room / none,
            capped_ratio: capped / none,
        };
        progress(&format!(
            "limit cost: median claim of {LIMIT}: {none:.3} ms with no limit, {room:.3} ms under limits with room (×{:.2}), {capped:.3} ms capped to {CAPPED} (×{:.2})",
            cost.room_ratio, cost.capped_ratio
        ));
        Ok(cost)
    })
    .await
}
