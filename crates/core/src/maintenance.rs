//! The maintenance side of a store: what the elected maintenance process does for the whole
//! fleet: publish due wake-ups, take back expired leases, end operations past their deadline,
//! hand unknown outcomes to reconcile hooks, and announce promotions to dead.
//!
//! Every decision is core's: the rescue applies [`Transition::vanished`](crate::Transition::vanished)
//! transitions, the deadline pass writes [`Ending::deadline_passed`](crate::Ending::deadline_passed),
//! a resolution writes its [`Settlement`].

use async_trait::async_trait;
use chrono::Duration;

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

/// Read dead operations whose promotion has not been announced yet.
#[derive(Clone, Copy, Debug)]
pub struct DeadUnalertedParams {
    /// The most operations.
    pub limit: u32,
}

/// Record that promotions were announced.
#[derive(Clone, Debug)]
pub struct MarkAlertedParams {
    /// The operations announced.
    pub ids: Vec<OperationId>,
}

/// The maintenance side of a store.
#[async_trait]
pub trait MaintenanceStore: Store {
    /// Marks due operations woken and returns them for publishing: pending, eligible, within
    /// their deadline, held back by no control, and never woken, woken before they became
    /// eligible, or woken longer than `rewake_after` ago. Two schedulers never get the same
    /// operation from one call each.
    async fn operation_wake_due(&self, params: WakeDueParams) -> Result<Vec<OperationId>>;

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

    /// Dead operations whose promotion has not been announced yet, oldest first.
    async fn operation_dead_unalerted(&self, params: DeadUnalertedParams)
    -> Result<Vec<Operation>>;

    /// Records that these promotions were announced.
    async fn operation_mark_alerted(&self, params: MarkAlertedParams) -> Result<()>;
}
