//! The [`Store`] trait: every read and write of operation records, named noun-first with one
//! params struct per method, in the spirit of River's driver interface.
//!
//! Times: a store holds a [`Clock`](crate::Clock). With the system clock a store may judge leases
//! by the database's own clock (PostgreSQL does); with a manual clock every "now" is the clock's.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::{
    FailureClass, NewOperation, Operation, OperationDetail, OperationId, Result, Status,
    TerminalReason, Transition,
};

/// What an enqueue did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Enqueued {
    /// The operation's id: the new one, or the existing one for a repeated idempotency key.
    pub id: OperationId,
    /// False when the idempotency key already named an operation, which is returned instead.
    pub created: bool,
}

/// Who is claiming, and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimant {
    /// The worker's id, kept on the claim and in the attempt history.
    pub worker_id: String,
    /// The code version, kept in the attempt history.
    pub code_version: Option<String>,
    /// How long the lease lasts before the rescuer may take the operation back.
    pub lease: Duration,
}

/// Claim these operations, if they are pending, eligible and not past their deadline.
#[derive(Clone, Debug)]
pub struct ClaimByIdsParams {
    /// The operations named by wake-ups.
    pub ids: Vec<OperationId>,
    /// Only these kinds (the ones this worker can run); empty means any kind. A wake-up for a
    /// kind the worker does not know claims nothing.
    pub kinds: Vec<String>,
    /// Who claims.
    pub claimant: Claimant,
}

/// Claim up to `limit` eligible operations, oldest eligible first.
#[derive(Clone, Debug)]
pub struct ClaimEligibleParams {
    /// Only these kinds (the ones this worker can run); empty means any kind.
    pub kinds: Vec<String>,
    /// The most to claim.
    pub limit: u32,
    /// Who claims.
    pub claimant: Claimant,
}

/// A claimed operation: the record as of the claim, whose `claim_token` fences every later write.
pub type Claimed = Operation;

/// Extend a claim's lease.
#[derive(Clone, Debug)]
pub struct HeartbeatParams {
    /// The operation.
    pub id: OperationId,
    /// The claim's token.
    pub claim_token: Uuid,
    /// The lease from now.
    pub lease: Duration,
}

/// End a claim with a transition; fenced by the token.
#[derive(Clone, Debug)]
pub struct CompleteParams {
    /// The operation.
    pub id: OperationId,
    /// The claim's token.
    pub claim_token: Uuid,
    /// Where the operation goes.
    pub transition: Transition,
}

/// What a fenced completion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompleteResult {
    /// The transition was applied and the attempt recorded.
    Applied,
    /// The token did not match a running claim: nothing changed.
    Stale,
}

/// Take back expired leases.
#[derive(Clone, Debug)]
pub struct RescueParams {
    /// After this many vanished attempts in a row the operation is dead (crash_loop).
    pub vanish_limit: u32,
    /// How long a rescued operation waits before it is eligible again.
    pub retry_delay: Duration,
    /// The most operations handled per call.
    pub limit: u32,
}

/// What a rescue pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RescueReport {
    /// Expired claims recorded as vanished attempts.
    pub vanished: u64,
    /// Of those, operations returned to pending.
    pub retried: u64,
    /// Of those, operations ended dead (crash_loop, attempts_exhausted or deadline_passed).
    pub dead: u64,
}

/// Filters for listing operations; every value reaches SQL as a bind parameter.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    /// Only this status.
    pub status: Option<Status>,
    /// Only this kind.
    pub kind: Option<String>,
    /// Only this last failure class.
    pub failure_class: Option<FailureClass>,
    /// Only this terminal reason.
    pub terminal_reason: Option<TerminalReason>,
    /// Only operations whose last error summary contains this text (case-insensitive, literal:
    /// no wildcards).
    pub error_contains: Option<String>,
    /// Only operations created at or after this time.
    pub created_since: Option<DateTime<Utc>>,
    /// Only operations created before this time.
    pub created_until: Option<DateTime<Utc>>,
    /// Keyset pagination: only ids after this one in the listing's order (ids are time-ordered).
    pub after: Option<OperationId>,
    /// Newest first (descending ids; `after` then pages towards older operations) instead of
    /// oldest first.
    pub newest_first: bool,
    /// The most rows (capped by the store at 10,000).
    pub limit: u32,
}

/// One group of a count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CountRow {
    /// The status.
    pub status: Status,
    /// The kind.
    pub kind: String,
    /// The last failure class.
    pub failure_class: Option<FailureClass>,
    /// How many operations.
    pub count: u64,
}

/// Record that wake-ups were published for these operations.
#[derive(Clone, Debug)]
pub struct MarkWokenParams {
    /// The operations woken.
    pub ids: Vec<OperationId>,
}

/// The store of operation records. Implemented by `oprec-postgres` and `oprec-sqlite`; both must
/// pass `oprec-testkit`'s conformance suite.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates or upgrades the schema.
    async fn migrate(&self) -> Result<()>;

    /// The store's "now", as used for eligibility and leases.
    async fn now(&self) -> Result<DateTime<Utc>>;

    /// Enqueues operations in one transaction. An idempotency key already present for the kind
    /// returns the existing operation (`created: false`); the results are in input order.
    async fn operation_insert_many(&self, ops: Vec<NewOperation>) -> Result<Vec<Enqueued>>;

    /// Enqueues one operation; see [`Store::operation_insert_many`].
    async fn operation_insert(&self, op: NewOperation) -> Result<Enqueued> {
        let mut v = self.operation_insert_many(vec![op]).await?;
        v.pop()
            .ok_or_else(|| crate::Error::InvalidInput("enqueue returned nothing".into()))
    }

    /// Claims the named operations that are pending, eligible and within their deadline: each gets
    /// attempt + 1, a new claim token and a lease. Others are skipped (and absent from the result).
    async fn operation_claim_by_ids(&self, params: ClaimByIdsParams) -> Result<Vec<Claimed>>;

    /// Claims up to `limit` eligible operations, oldest eligible first, skipping rows another
    /// claimer holds.
    async fn operation_claim_eligible(&self, params: ClaimEligibleParams) -> Result<Vec<Claimed>>;

    /// Extends a running claim's lease. A stale token changes nothing and is
    /// [`Error::StaleClaim`](crate::Error::StaleClaim).
    async fn operation_heartbeat(&self, params: HeartbeatParams) -> Result<DateTime<Utc>>;

    /// Ends claims with their transitions, recording each attempt; a stale token changes nothing.
    /// Results are in input order.
    async fn operation_complete_many(
        &self,
        params: Vec<CompleteParams>,
    ) -> Result<Vec<CompleteResult>>;

    /// Ends one claim; a stale token is [`Error::StaleClaim`](crate::Error::StaleClaim).
    async fn operation_complete(&self, params: CompleteParams) -> Result<()> {
        let id = params.id;
        match self.operation_complete_many(vec![params]).await?.pop() {
            Some(CompleteResult::Applied) => Ok(()),
            _ => Err(crate::Error::StaleClaim { id }),
        }
    }

    /// Turns expired leases into vanished attempts; after `vanish_limit` in a row the operation is
    /// dead (crash_loop); past its bound or deadline it is dead too; otherwise pending again.
    async fn operation_rescue_expired(&self, params: RescueParams) -> Result<RescueReport>;

    /// Ends pending and held operations whose deadline has passed (dead, deadline_passed).
    async fn operation_end_past_deadline(&self, limit: u32) -> Result<u64>;

    /// Cancels operations that are not terminal and not running; returns the ids cancelled.
    async fn operation_cancel(&self, ids: Vec<OperationId>) -> Result<Vec<OperationId>>;

    /// Records that wake-ups were published.
    async fn operation_mark_woken(&self, params: MarkWokenParams) -> Result<()>;

    /// Records the effect's remote identity during an attempt. A stale token changes nothing and
    /// is [`Error::StaleClaim`](crate::Error::StaleClaim).
    async fn operation_remote_id_set(&self, params: RemoteIdSetParams) -> Result<()>;

    /// The operation's completed durable steps.
    async fn operation_steps_get(&self, id: OperationId) -> Result<Vec<Step>>;

    /// Saves a completed step (a step already saved keeps its first output). A stale token
    /// changes nothing and is [`Error::StaleClaim`](crate::Error::StaleClaim).
    async fn operation_step_save(&self, params: StepSaveParams) -> Result<()>;

    /// Marks due operations woken and returns them for publishing: pending, eligible, within
    /// their deadline, and never woken, woken before they became eligible, or woken longer than
    /// `rewake_after` ago. Two schedulers never get the same operation from one call each.
    async fn operation_wake_due(&self, params: WakeDueParams) -> Result<Vec<OperationId>>;

    /// One operation with its attempt history.
    async fn operation_get(&self, id: OperationId) -> Result<Option<OperationDetail>>;

    /// Operations matching the filters, in id (creation) order, oldest or newest first.
    async fn operation_list(&self, params: ListParams) -> Result<Vec<Operation>>;

    /// Counts by status, kind and last failure class.
    async fn operation_count(&self) -> Result<Vec<CountRow>>;
}

/// Record the effect's remote identity during an attempt; fenced by the claim token.
#[derive(Clone, Debug)]
pub struct RemoteIdSetParams {
    /// The operation.
    pub id: OperationId,
    /// The claim's token.
    pub claim_token: Uuid,
    /// The remote identity.
    pub remote_id: String,
}

/// Save a completed durable step; fenced by the claim token.
#[derive(Clone, Debug)]
pub struct StepSaveParams {
    /// The operation.
    pub id: OperationId,
    /// The claim's token.
    pub claim_token: Uuid,
    /// The step's name, unique per operation.
    pub name: String,
    /// What the step produced; returned to later attempts instead of running the step again.
    pub output: serde_json::Value,
}

/// A completed durable step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// The step's name.
    pub name: String,
    /// Its stored output.
    pub output: serde_json::Value,
    /// The attempt that completed it.
    pub attempt: u32,
    /// When it completed.
    pub completed_at: DateTime<Utc>,
}

/// Pick pending, eligible operations whose last wake-up is older than `rewake_after` (or that were
/// never woken), mark them woken now, and return them for publishing.
#[derive(Clone, Debug)]
pub struct WakeDueParams {
    /// How long a published wake-up is trusted before the operation is woken again.
    pub rewake_after: Duration,
    /// The most operations per call.
    pub limit: u32,
}
