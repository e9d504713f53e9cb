//! Limit and priority cost: what a limit across the fleet, and priorities in use, add to a claim.
//! The same claim of [`LIMIT`] `demo.noop` operations is timed in five settings, taken in turn
//! within each round so that a noisy machine weighs on all five alike:
//!
//! - **none**: no limit row exists (the store looks once whether any does, and skips the rest),
//!   and every operation has the default priority: the claim walks the aged range and the two
//!   empty levels above the default before it finds its operations;
//! - **room**: a running limit on the kind and a rate on its dependency, both far above what a
//!   claim takes, so the claim locks the limit rows, counts what runs, and writes the rate's
//!   window, yet claims all it asked for;
//! - **capped**: a running limit of half a claim, so the claim takes the capped statement (a
//!   `row_number` per kind and per dependency) and gets [`CAPPED`] operations;
//! - **levels**: the round's operations spread over the five priority levels, so the claim takes
//!   its operations from four level walks instead of one;
//! - **ahead**: the claim a worker with a broker backlog makes before each claim through its
//!   wake-ups (only the aged operations and those above the default priority), with none there:
//!   what that look costs each claim while the broker has a backlog.
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

/// The five settings of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    None,
    Room,
    Capped,
    Levels,
    Ahead,
}

impl Setting {
    const ALL: [Setting; 5] = [
        Setting::None,
        Setting::Room,
        Setting::Capped,
        Setting::Levels,
        Setting::Ahead,
    ];

    fn expected(self) -> usize {
        match self {
            Setting::Capped => CAPPED as usize,
            Setting::Ahead => 0,
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
    /// Median claim of operations spread over the five priority levels, in milliseconds.
    pub levels_median_ms: f64,
    /// `levels_median_ms / none_median_ms`.
    pub levels_ratio: f64,
    /// Median claim ahead of a broker's backlog (aged, or above the default priority) that finds
    /// nothing, in milliseconds: paid before each claim through wake-ups while the broker has a
    /// backlog.
    pub ahead_median_ms: f64,
    /// `ahead_median_ms / none_median_ms`.
    pub ahead_ratio: f64,
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
        Setting::None | Setting::Levels | Setting::Ahead => {}
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
    claim_in_order(s, kind, limit, false).await
}

/// A claim of up to `limit` operations of `kind`, of every level or only of what goes ahead of
/// a broker's backlog.
async fn claim_in_order(
    s: &Schema,
    kind: &str,
    limit: u32,
    above_default_only: bool,
) -> Result<Vec<oprec::Claimed>> {
    Ok(s.store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only,
            kinds: vec![kind.to_owned()],
            limit,
            claimant: claimant(),
        })
        .await?)
}

/// Adds `n` pending `demo.noop` operations, eligible now, of the default priority.
async fn add_pending(s: &Schema, n: u64) -> Result<()> {
    add_pending_at(s, n, false).await
}

/// Adds `n` pending `demo.noop` operations, eligible now: of the default priority, or spread
/// over the five levels in turn.
async fn add_pending_at(s: &Schema, n: u64, spread: bool) -> Result<()> {
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
                        priority: spread.then(|| {
                            oprec::PRIORITY_LEVELS[i as usize % oprec::PRIORITY_LEVELS.len()]
                        }),
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
    add_pending_at(s, u64::from(LIMIT), setting == Setting::Levels).await?;
    // Setting or removing a limit through the store makes it look again whether any limit
    // exists; a worker's claims trust that look for a second. An untimed claim of a kind with
    // nothing pending makes the look, so the timed claim pays what a worker's claims pay.
    claim_of(s, "bench.nothing", 1).await?;
    let started = Instant::now();
    let claimed = claim_in_order(s, noop::KIND, LIMIT, setting == Setting::Ahead).await?;
    let took = started.elapsed();
    if claimed.len() != setting.expected() {
        return Err(Error::Check(format!(
            "a claim of {LIMIT} under the {setting:?} limits returned {} operations (expected {})",
            claimed.len(),
            setting.expected()
        )));
    }
    complete(s, claimed).await?;
    if setting == Setting::Ahead {
        let all = claim(s, LIMIT).await?;
        complete(s, all).await?;
    }
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
        let mut times: [Vec<Duration>; 5] = Default::default();
        for i in 0..WARM_UP + samples {
            for (n, setting) in Setting::ALL.into_iter().enumerate() {
                let took = round(s, setting).await?;
                if i >= WARM_UP {
                    times[n].push(took);
                }
            }
        }
        remove_all(s).await?;
        let [none, room, capped, levels, ahead] = times.each_mut().map(|t| median_ms(t));
        let cost = LimitCost {
            claim: LIMIT,
            samples,
            backlog: BACKLOG,
            none_median_ms: none,
            room_median_ms: room,
            capped_median_ms: capped,
            room_ratio: room / none,
            capped_ratio: capped / none,
            levels_median_ms: levels,
            levels_ratio: levels / none,
            ahead_median_ms: ahead,
            ahead_ratio: ahead / none,
        };
        progress(&format!(
            "limit cost: median claim of {LIMIT}: {none:.3} ms with no limit, {room:.3} ms under limits with room (×{:.2}), {capped:.3} ms capped to {CAPPED} (×{:.2})",
            cost.room_ratio, cost.capped_ratio
        ));
        progress(&format!(
            "priority cost: median claim of {LIMIT}: {levels:.3} ms spread over five levels (×{:.2}); a claim ahead of a broker's backlog that finds nothing: {ahead:.3} ms (×{:.2})",
            cost.levels_ratio, cost.ahead_ratio
        ));
        Ok(cost)
    })
    .await
}
