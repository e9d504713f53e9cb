//! The maintenance side of a store: what the elected maintenance process does for the whole
//! fleet: publish due wake-ups, take back expired leases, end operations past their deadline,
//! hand unknown outcomes to reconcile hooks, and announce promotions to dead.
//!
//! One process at a time runs the loops for the whole fleet: the one that holds the
//! [`MAINTENANCE_LEADER`] leadership ([`MaintenanceStore::leader_acquire`]). Leadership saves
//! work; it is not what keeps the loops safe: each of their writes is fenced (claims, tokens,
//! statuses), so two leaders for a moment, while a lease runs out, do no harm.
//!
//! Every decision is core's: the rescue applies [`Transition::vanished`](crate::Transition::vanished)
//! transitions, the deadline pass writes [`Ending::deadline_passed`](crate::Ending::deadline_passed),
//! a resolution writes its [`Settlement`].

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::store::{CompleteParams, CompleteResult};
use crate::{Claimed, Operation, OperationId, Result, Settlement, Status, Store};

/// Pick pending, eligible operations whose last wake-up is older than `rewake_after` (or that were
/// never woken), mark them woken now, and return them for publishing.
#[derive(Clone, Debug)]
pub struct WakeDueParams {
    /// How long a published wake-up is trusted before the operation is woken again.
    pub rewake_after: Duration,
    /// The most operations per call.
    pub limit: u32,
}

/// Mark pending operations never woken, so that the scheduler wakes them on its next pass. Both
/// filters apply; an empty one matches everything.
#[derive(Clone, Debug, Default)]
pub struct WakeResetParams {
    /// The kinds whose pending operations are reset; empty: every kind.
    pub kinds: Vec<String>,
    /// The operations reset; empty: every pending operation of `kinds`.
    pub ids: Vec<OperationId>,
}

/// List running operations whose lease has expired, longest expired first.
#[derive(Clone, Copy, Debug)]
pub struct LeaseExpiredListParams {
    /// The most operations per call.
    pub limit: u32,
}

/// Apply decided [`Transition::vanished`](crate::Transition::vanished) transitions to expired
/// claims.
#[derive(Clone, Debug)]
pub struct RescueManyParams {
    /// One per expired claim, with the token the listing returned.
    pub rescues: Vec<CompleteParams>,
}

/// End pending and held operations whose deadline has passed.
#[derive(Clone, Copy, Debug)]
pub struct EndPastDeadlineParams {
    /// The most operations per call.
    pub limit: u32,
}

/// Take reconciling operations whose reconcile time has come, for the kind's reconcile hook.
/// Each one's next reconcile time is pushed to now + `lease` in the same statement, so two
/// reconcilers do not run the same hook at once.
#[derive(Clone, Debug)]
pub struct ReconcileDueParams {
    /// Only these kinds (the ones with a hook here).
    pub kinds: Vec<String>,
    /// The most operations.
    pub limit: u32,
    /// How long the hook has before another reconciler may take the operation.
    pub lease: Duration,
}

/// Write a decided resolution of a reconciling operation (see
/// [`Resolution::settle`](crate::Resolution::settle)); fenced by the operation still being
/// reconciling.
#[derive(Clone, Debug)]
pub struct ReconcileResolveParams {
    /// The operation (must be reconciling).
    pub id: OperationId,
    /// What core decided from the row and the resolution.
    pub settlement: Settlement,
}

/// Claim dead operations whose promotion is due to be announced: not announced yet, and not
/// claimed by another announcer (or its claim ran out, or its retry time came).
#[derive(Clone, Copy, Debug)]
pub struct AlertClaimParams {
    /// The most operations.
    pub limit: u32,
    /// How long the announcer has before another may take the same announcement.
    pub lease: Duration,
}

/// A promotion to dead to announce, claimed.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertDue {
    /// The dead operation.
    pub operation: Operation,
    /// Announcements of it that failed so far.
    pub failures: u32,
}

/// Record that promotions were announced.
#[derive(Clone, Debug)]
pub struct MarkAlertedParams {
    /// The operations announced.
    pub ids: Vec<OperationId>,
}

/// Record that announcements failed: each is tried again at its time (see [`alert_retry_at`]).
#[derive(Clone, Debug)]
pub struct AlertDeferParams {
    /// The operations and when to try each again.
    pub retries: Vec<(OperationId, DateTime<Utc>)>,
}

/// When to try again an announcement that failed `failures` times (counting this one): 10 s after
/// the first failure, doubling up to an hour, so a webhook that is down is asked (and its failure
/// logged) a few times an hour, not on every pass.
pub fn alert_retry_at(failures: u32, now: DateTime<Utc>) -> DateTime<Utc> {
    let secs = 10i64.saturating_mul(1i64 << failures.saturating_sub(1).min(20));
    now + Duration::seconds(secs.min(3600))
}

/// The leadership of the maintenance loops: one process at a time runs them for the fleet.
pub const MAINTENANCE_LEADER: &str = "maintenance";

/// Take a named leadership, or keep it: the caller leads if nobody does, if the leader's lease
/// ran out, or if it already leads (its lease is extended).
#[derive(Clone, Debug)]
pub struct LeaderAcquireParams {
    /// The leadership ([`MAINTENANCE_LEADER`]).
    pub name: String,
    /// Who asks (a worker id).
    pub holder: String,
    /// How long the leadership lasts unless renewed: a leader that dies is replaced after it.
    pub lease: Duration,
}

/// Give a leadership up (a clean shutdown), so that another candidate takes it at once.
#[derive(Clone, Debug)]
pub struct LeaderReleaseParams {
    /// The leadership.
    pub name: String,
    /// Who gives it up; someone else's leadership is left alone.
    pub holder: String,
}

/// Who holds a leadership, and until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Leadership {
    /// The leadership.
    pub name: String,
    /// Its holder (a worker id).
    pub holder: String,
    /// When it lapses unless renewed.
    pub lease_until: DateTime<Utc>,
    /// Since when this holder leads.
    pub since: DateTime<Utc>,
}

/// The maintenance side of a store.
#[async_trait]
pub trait MaintenanceStore: Store {
    /// Marks due operations woken and returns them for publishing: pending, eligible, within
    /// their deadline, held back by no control, and never woken, woken before they became
    /// eligible, or woken longer than `rewake_after` ago. Two schedulers never get the same
    /// operation from one call each.
    async fn operation_wake_due(&self, params: WakeDueParams) -> Result<Vec<OperationId>>;

    /// Marks pending operations never woken (of `kinds`, among `ids`; an empty filter matches
    /// all), so that the scheduler wakes them on its next pass rather than after the re-wake
    /// interval: their wake-ups were purged from the broker, or never reached it. Returns how
    /// many rows it reset.
    async fn operation_wake_reset(&self, params: WakeResetParams) -> Result<u64>;

    /// Running operations whose lease has expired, for the rescuer to decide on.
    async fn operation_lease_expired_list(
        &self,
        params: LeaseExpiredListParams,
    ) -> Result<Vec<Claimed>>;

    /// Applies vanished transitions, each recorded as a vanished attempt; one whose claim moved
    /// on, or whose lease was extended meanwhile, changes nothing. Results are in input order.
    async fn operation_rescue_many(&self, params: RescueManyParams) -> Result<Vec<CompleteResult>>;

    /// Ends pending and held operations whose deadline has passed, with
    /// [`Ending::deadline_passed`](crate::Ending::deadline_passed); returns how many.
    async fn operation_end_past_deadline(&self, params: EndPastDeadlineParams) -> Result<u64>;

    /// Takes reconciling operations due for their reconcile hook.
    async fn operation_reconcile_due(&self, params: ReconcileDueParams) -> Result<Vec<Operation>>;

    /// Writes a resolution; [`Error::NotFound`](crate::Error::NotFound) when there is no such
    /// operation and [`Error::InvalidInput`](crate::Error::InvalidInput) when it is not
    /// reconciling. Returns the new status.
    async fn operation_reconcile_resolve(&self, params: ReconcileResolveParams) -> Result<Status>;

    /// Claims promotions to dead due to be announced, oldest first: each is the caller's for
    /// `lease`, so two announcers never send the same one (but a crashed announcer's claims are
    /// sent again after the lease: at least once).
    async fn operation_alert_claim(&self, params: AlertClaimParams) -> Result<Vec<AlertDue>>;

    /// Records that these promotions were announced.
    async fn operation_mark_alerted(&self, params: MarkAlertedParams) -> Result<()>;

    /// Records that these announcements failed, each to be tried again at its time.
    async fn operation_alert_defer(&self, params: AlertDeferParams) -> Result<()>;

    /// Takes or keeps a leadership; returns who leads after the attempt (the caller when
    /// `holder` is its id). Judged by the store's clock.
    async fn leader_acquire(&self, params: LeaderAcquireParams) -> Result<Leadership>;

    /// Gives a leadership up; false when the caller did not hold it.
    async fn leader_release(&self, params: LeaderReleaseParams) -> Result<bool>;
}
