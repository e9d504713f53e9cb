//! The store traits, split by caller, every method named noun-first with one params struct, in the
//! spirit of River's driver interface:
//!
//! | trait | caller |
//! | --- | --- |
//! | [`Store`] | everyone: the schema, the store's clock, reading records back |
//! | [`EnqueueStore`] | producers: inserting operations and recording published wake-ups |
//! | [`WorkerStore`] | workers: claims, heartbeats, completions, steps, presence |
//! | [`MaintenanceStore`](crate::MaintenanceStore) | the maintenance leader: wake-ups, rescue, deadlines, reconcile hand-off, alerts |
//! | [`OperatorStore`](crate::OperatorStore) | operators: controls, re-drive, quarantine, cancel, stats, audit |
//!
//! A store only applies what core decided ([`Transition`], [`Settlement`](crate::Settlement),
//! [`ErrorPatch`](crate::ErrorPatch)); it never chooses a status or writes a text of its own.
//!
//! Times: a store holds a [`Clock`](crate::Clock). With the system clock a store may judge leases
//! by the database's own clock (PostgreSQL does); with a manual clock every "now" is the clock's.

use std::ops::Deref;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::operator::OperationFilter;
use crate::status::named_enum;
use crate::{
    Error, FailureClass, NewOperation, Operation, OperationDetail, OperationId, Result, Status,
    TerminalReason, Transition, WorkerBeatParams,
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

/// A running operation as its claim left it: the record, with a claim token and a lease that are
/// always there (a claim without them cannot be expressed).
#[derive(Clone, Debug, PartialEq)]
pub struct Claimed {
    operation: Operation,
    claim_token: Uuid,
    lease_until: DateTime<Utc>,
}

impl Claimed {
    /// The claim a stored row describes; a row that is not running with a token and a lease is
    /// a backend error (the schema's CHECK makes it impossible).
    pub fn from_operation(operation: Operation) -> Result<Self> {
        match (
            operation.status,
            operation.claim_token,
            operation.lease_until,
        ) {
            (Status::Running, Some(claim_token), Some(lease_until)) => Ok(Claimed {
                operation,
                claim_token,
                lease_until,
            }),
            _ => Err(Error::backend(
                false,
                format!(
                    "operation {} was returned as claimed but is {} without a full claim",
                    operation.id, operation.status
                ),
            )),
        }
    }

    /// The token that fences every write of this claim.
    pub fn claim_token(&self) -> Uuid {
        self.claim_token
    }

    /// When the lease ends unless a heartbeat extends it.
    pub fn lease_until(&self) -> DateTime<Utc> {
        self.lease_until
    }

    /// The record as of the claim.
    pub fn operation(&self) -> &Operation {
        &self.operation
    }

    /// The record, giving up the claim's typed view.
    pub fn into_operation(self) -> Operation {
        self.operation
    }
}

impl Deref for Claimed {
    type Target = Operation;
    fn deref(&self) -> &Operation {
        &self.operation
    }
}

/// Claim these operations, if they are pending, eligible, within their deadline and held back
/// by no control.
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

/// Claim up to `limit` eligible operations: those eligible for longer than
/// [`PRIORITY_AGING`](crate::PRIORITY_AGING) first, then by priority, highest first, oldest
/// eligible first within each (README, "Priorities").
#[derive(Clone, Debug)]
pub struct ClaimEligibleParams {
    /// Only these kinds (the ones this worker can run); empty means any kind.
    pub kinds: Vec<String>,
    /// The most to claim.
    pub limit: u32,
    /// Who claims.
    pub claimant: Claimant,
    /// Only what goes ahead of a broker's backlog of wake-ups: the aged operations (the
    /// starvation guard), then the levels above [`PRIORITY_DEFAULT`](crate::PRIORITY_DEFAULT).
    /// A worker with a broker claims these from the store while its wake-ups come in full
    /// batches, so that priority orders its claims too (README, "Priorities").
    pub above_default_only: bool,
}

impl ClaimEligibleParams {
    /// The priority levels this claim walks after the aged operations, highest first.
    pub fn levels(&self) -> &'static [i16] {
        crate::priority::claim_levels(self.above_default_only)
    }
}

/// Claim one suspect (an operation whose last attempt vanished) to run isolated, alone in its
/// worker: pending, eligible, within its deadline and held back by no control, oldest eligible
/// first. The ordinary claims ([`ClaimByIdsParams`], [`ClaimEligibleParams`]) never return a
/// suspect.
#[derive(Clone, Debug)]
pub struct ClaimSuspectParams {
    /// Only these kinds (the ones this worker can run); empty means any kind.
    pub kinds: Vec<String>,
    /// Who claims.
    pub claimant: Claimant,
}

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

/// Ask whether a claim is still current: the operation is running under this token and its lease
/// has not expired by the store's clock. A handler asks just before an irreversible external call.
#[derive(Clone, Copy, Debug)]
pub struct ClaimCurrentParams {
    /// The operation.
    pub id: OperationId,
    /// The claim's token.
    pub claim_token: Uuid,
}

/// A claim a worker holds: the operation and the token that fences its writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeldClaim {
    /// The operation.
    pub id: OperationId,
    /// The claim's token.
    pub claim_token: Uuid,
}

impl From<&Claimed> for HeldClaim {
    fn from(c: &Claimed) -> Self {
        HeldClaim {
            id: c.id,
            claim_token: c.claim_token(),
        }
    }
}

/// Extend the leases of every claim a worker holds (running or waiting in its claim buffer) in
/// one statement.
#[derive(Clone, Debug)]
pub struct HeartbeatManyParams {
    /// The claims.
    pub claims: Vec<HeldClaim>,
    /// The lease from now.
    pub lease: Duration,
}

/// Give back claims whose attempts never started (operations a worker claimed ahead and holds
/// unstarted when it shuts down): each goes back to pending at once, eligible as before, with
/// its attempt refunded, its lease cleared and marked never woken (so the scheduler wakes it on
/// its next pass); no attempt row is written, since no attempt was made. Fenced by the token.
#[derive(Clone, Debug)]
pub struct ClaimGiveBackParams {
    /// The unstarted claims.
    pub claims: Vec<HeldClaim>,
}

/// End a claim with a transition decided by core; fenced by the token (and, for a vanished
/// attempt, by the lease having expired: see [`Transition::fence`]).
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
    /// The token did not match a running claim (or its lease had not expired, for a vanished
    /// attempt): nothing changed.
    Stale,
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

/// Read an operation's completed durable steps.
#[derive(Clone, Copy, Debug)]
pub struct StepsGetParams {
    /// The operation.
    pub id: OperationId,
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// Remove a worker's presence row (its clean shutdown).
#[derive(Clone, Debug)]
pub struct WorkerRemoveParams {
    /// The worker's id.
    pub id: String,
}

/// Ask whether a worker of these kinds has anything to do.
#[derive(Clone, Debug)]
pub struct WorkExistsParams {
    /// The kinds; empty means any kind.
    pub kinds: Vec<String>,
}

/// Record that wake-ups were published for these operations.
#[derive(Clone, Debug)]
pub struct MarkWokenParams {
    /// The operations woken.
    pub ids: Vec<OperationId>,
}

/// Read one operation with its attempt history.
#[derive(Clone, Copy, Debug)]
pub struct OperationGetParams {
    /// The operation.
    pub id: OperationId,
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
    /// An operator's filter, as re-drive, quarantine and cancel take it (several kinds, classes
    /// or reasons, a dependency, ids, an end-time range), narrowing beside the fields above.
    pub filter: OperationFilter,
    /// Which operations re-driven as new to list; `None` takes
    /// [`RedrivenShown::default_for`] the status asked.
    pub redriven: Option<RedrivenShown>,
    /// Keyset pagination: only ids after this one in the listing's order (ids are time-ordered).
    pub after: Option<OperationId>,
    /// Newest first (descending ids; `after` then pages towards older operations) instead of
    /// oldest first.
    pub newest_first: bool,
    /// The most rows (capped by the store at 10,000).
    pub limit: u32,
}

named_enum! {
    /// Which operations re-driven as new (marked `redriven_as`: their copy carries the work on)
    /// a listing shows.
    RedrivenShown, "re-driven choice" {
        /// Leave them out: a listing of dead operations is then the dead awaiting action.
        Hide => "hide",
        /// List them beside the others.
        Show => "show",
        /// List only them.
        Only => "only",
    }
}

impl RedrivenShown {
    /// What a listing shows when the caller does not say: a listing of dead operations hides
    /// the re-driven ones (they await no action), any other listing shows them.
    pub fn default_for(status: Option<Status>) -> Self {
        if status == Some(Status::Dead) {
            RedrivenShown::Hide
        } else {
            RedrivenShown::Show
        }
    }
}

impl ListParams {
    /// The re-driven choice in force: the caller's, or [`RedrivenShown::default_for`] its status.
    pub fn redriven_shown(&self) -> RedrivenShown {
        self.redriven
            .unwrap_or_else(|| RedrivenShown::default_for(self.status))
    }
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
    /// Of those, dead operations re-driven as new: their copy carries the work on, so they no
    /// longer await action (0 for every other status).
    pub redriven: u64,
}

/// Operations as the lists show them, of one kind or of all: by status, where a dead operation
/// re-driven as new is left out of dead (the dead list, the overview and `oprec stats` leave it
/// out; its copy is counted where it is), and in all (the unfiltered list shows it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListedCounts {
    /// Every operation the unfiltered list shows.
    pub all: u64,
    /// Per status, what that status's list shows; statuses with none are left out.
    pub by_status: std::collections::BTreeMap<Status, u64>,
}

impl ListedCounts {
    /// The counts of `kind` (of every kind when `None`) from [`Store::operation_count`]'s rows.
    pub fn of(rows: &[CountRow], kind: Option<&str>) -> Self {
        let mut counts = ListedCounts::default();
        for r in rows.iter().filter(|r| kind.is_none_or(|k| r.kind == k)) {
            counts.all += r.count;
            let n = r.count.saturating_sub(r.redriven);
            if n > 0 {
                *counts.by_status.entry(r.status).or_insert(0) += n;
            }
        }
        counts
    }
}

/// What every caller reads: the schema, the store's "now", and the records. Implemented by
/// `oprec-postgres` and `oprec-sqlite`; both pass `oprec-testkit`'s conformance suites.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates or upgrades the schema.
    async fn migrate(&self) -> Result<()>;

    /// The store's "now", as used for eligibility and leases.
    async fn now(&self) -> Result<DateTime<Utc>>;

    /// One operation with its attempt history.
    async fn operation_get(&self, params: OperationGetParams) -> Result<Option<OperationDetail>>;

    /// Operations matching the filters, in id (creation) order, oldest or newest first.
    async fn operation_list(&self, params: ListParams) -> Result<Vec<Operation>>;

    /// Counts by status, kind and last failure class. Fails with
    /// [`Error::SchemaMissing`] when the tables do not exist.
    async fn operation_count(&self) -> Result<Vec<CountRow>>;
}

/// The producer's side: enqueueing.
#[async_trait]
pub trait EnqueueStore: Store {
    /// Enqueues operations in one transaction. An idempotency key already present for the kind
    /// returns the existing operation (`created: false`); a key repeated within the batch
    /// resolves as [`IdempotentBatch`](crate::IdempotentBatch) says; the results are in input
    /// order.
    async fn operation_insert_many(&self, ops: Vec<NewOperation>) -> Result<Vec<Enqueued>>;

    /// Enqueues one operation; see [`EnqueueStore::operation_insert_many`].
    async fn operation_insert(&self, op: NewOperation) -> Result<Enqueued> {
        let mut v = self.operation_insert_many(vec![op]).await?;
        v.pop()
            .ok_or_else(|| Error::backend(false, "enqueue returned nothing"))
    }

    /// Records that wake-ups were published.
    async fn operation_mark_woken(&self, params: MarkWokenParams) -> Result<()>;
}

/// A store whose enqueue can join a transaction the caller owns, so that an application's own row
/// and the operation it asks for commit together or not at all (no dual write). The connection's
/// type is the store's driver's (`sqlx`'s `PgConnection` or `SqliteConnection`, which a `sqlx`
/// transaction dereferences to), named by [`TransactionalEnqueue::Conn`], so that core stays free
/// of drivers. Implemented by `oprec-postgres` and `oprec-sqlite`.
///
/// The operations exist if and only if the caller commits. Their wake-ups are the caller's to
/// publish after the commit (the runtime's `Client::enqueue_in` returns them for that); should the
/// process die between the commit and the publish, the scheduler wakes the operations after its
/// re-wake interval, as it does after any failed publish.
#[async_trait]
pub trait TransactionalEnqueue: EnqueueStore {
    /// The caller's connection, inside its transaction.
    type Conn: Send + ?Sized;

    /// Enqueues `ops` with the statements of [`EnqueueStore::operation_insert_many`], on `conn`,
    /// without beginning or ending a transaction: the caller's commit makes them, its rollback
    /// undoes them. An idempotency key already committed (or written earlier in the same
    /// transaction) returns that operation; a key another open transaction has just written
    /// waits for that transaction to end, as any unique key does.
    async fn operation_insert_many_on(
        &self,
        conn: &mut Self::Conn,
        ops: Vec<NewOperation>,
    ) -> Result<Vec<Enqueued>>;
}

/// The worker's side: claims and what a claim may write, and the worker's presence.
#[async_trait]
pub trait WorkerStore: Store {
    /// Claims the named operations that are pending, eligible, within their deadline, held back
    /// by no control and not suspects: each gets attempt + 1, a new claim token and a lease.
    /// Others are skipped (and absent from the result).
    async fn operation_claim_by_ids(&self, params: ClaimByIdsParams) -> Result<Vec<Claimed>>;

    /// Claims up to `limit` eligible operations that are not suspects, in the priority order of
    /// [`ClaimEligibleParams`], skipping rows another claimer holds.
    async fn operation_claim_eligible(&self, params: ClaimEligibleParams) -> Result<Vec<Claimed>>;

    /// Claims one suspect to run isolated, as [`ClaimSuspectParams`] says; the claim is marked
    /// isolated, so that if it vanishes too the vanished attempt counts toward the crash loop.
    async fn operation_claim_suspect(&self, params: ClaimSuspectParams) -> Result<Option<Claimed>>;

    /// Whether a suspect of the kinds waits, claimable now: the worker's cue to run its work
    /// down and take the suspect alone.
    async fn operation_suspect_exists(&self, params: WorkExistsParams) -> Result<bool>;

    /// Extends a running claim's lease. A stale token changes nothing and is
    /// [`Error::StaleClaim`].
    async fn operation_heartbeat(&self, params: HeartbeatParams) -> Result<DateTime<Utc>>;

    /// Extends the leases of many running claims in one statement; returns the operations whose
    /// lease was extended. A claim left out of the result is stale (its token no longer holds).
    async fn operation_heartbeat_many(
        &self,
        params: HeartbeatManyParams,
    ) -> Result<Vec<OperationId>>;

    /// Whether the claim is still current, as [`ClaimCurrentParams`] says: a read, fenced by the
    /// token, that changes nothing. False once the rescuer or another worker could take the
    /// operation over (its lease expired), even before anyone has.
    async fn operation_claim_current(&self, params: ClaimCurrentParams) -> Result<bool>;

    /// Gives back unstarted claims as [`ClaimGiveBackParams`] says; returns the operations given
    /// back (a stale token changes nothing and is left out).
    async fn operation_claim_give_back(
        &self,
        params: ClaimGiveBackParams,
    ) -> Result<Vec<OperationId>>;

    /// Ends claims with their transitions, recording each attempt; a stale token changes nothing
    /// but is written to the history of the attempt its claim belonged to (its late outcome).
    /// Results are in input order.
    async fn operation_complete_many(
        &self,
        params: Vec<CompleteParams>,
    ) -> Result<Vec<CompleteResult>>;

    /// Ends one claim; a stale token is [`Error::StaleClaim`].
    async fn operation_complete(&self, params: CompleteParams) -> Result<()> {
        let id = params.id;
        match self.operation_complete_many(vec![params]).await?.pop() {
            Some(CompleteResult::Applied) => Ok(()),
            _ => Err(Error::StaleClaim { id }),
        }
    }

    /// Records the effect's remote identity during an attempt. A stale token changes nothing and
    /// is [`Error::StaleClaim`].
    async fn operation_remote_id_set(&self, params: RemoteIdSetParams) -> Result<()>;

    /// The operation's completed durable steps.
    async fn operation_steps_get(&self, params: StepsGetParams) -> Result<Vec<Step>>;

    /// Saves a completed step (a step already saved keeps its first output). A stale token
    /// changes nothing and is [`Error::StaleClaim`].
    async fn operation_step_save(&self, params: StepSaveParams) -> Result<()>;

    /// Whether any operation of the kinds is running, or pending, eligible now, within its
    /// deadline and held back by no control: whether a worker of these kinds has work.
    async fn operation_work_exists(&self, params: WorkExistsParams) -> Result<bool>;

    /// Registers a running worker, or refreshes its row (`last_seen_at` = now); see
    /// [`WorkerRecord`](crate::WorkerRecord).
    async fn worker_beat(&self, params: WorkerBeatParams) -> Result<()>;

    /// Removes a worker's row (its clean shutdown); false when there was none.
    async fn worker_remove(&self, params: WorkerRemoveParams) -> Result<bool>;

    /// Publishes the enqueue-time policies of the kinds a worker runs (`operation_kinds`, read
    /// by PostgreSQL's `oprec_enqueue`): each kind's row is upserted, the latest publication
    /// winning, with who published it and when (the store's now).
    async fn kind_publish(&self, params: crate::KindPublishParams) -> Result<()>;
}
