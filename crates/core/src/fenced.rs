//! The fenced transaction: a capability of the stores whose database can hold a handler's effect
//! beside the operation record (PostgreSQL and SQLite both can). A handler writes its effect in a
//! transaction the store opens for its claim; the attempt's completion, a [`Transition`] core
//! decided as for any other attempt, is applied in that same transaction, fenced by the claim
//! token. If the claim is stale by then (the lease was lost and the operation taken over), the
//! whole transaction rolls back, effect included. So an effect written this way lands exactly once,
//! whatever crashes, stops or duplicate wake-ups happen: it commits only together with the one
//! completion the fence admits.
//!
//! The transaction's type is the store's own (a `sqlx` transaction on its pool, wrapped), named by
//! [`FencedStore::Tx`], so that core stays free of drivers.
//!
//! [`Transition`]: crate::Transition

use async_trait::async_trait;
use uuid::Uuid;

use crate::store::{CompleteParams, CompleteResult};
use crate::{OperationId, Result, WorkerStore};

/// Open a fenced transaction for a running claim.
#[derive(Clone, Copy, Debug)]
pub struct FencedBeginParams {
    /// The operation.
    pub id: OperationId,
    /// The claim's token.
    pub claim_token: Uuid,
}

/// Apply a claim's completion inside its fenced transaction, and commit both, or neither.
#[derive(Debug)]
pub struct FencedCompleteParams<Tx> {
    /// The transaction [`FencedStore::operation_fenced_begin`] opened, holding the effect.
    pub tx: Tx,
    /// The completion, decided by core as for any attempt; its token is the fence.
    pub completion: CompleteParams,
}

/// A store that can open a transaction on its own database for a claim and complete the claim
/// inside it (see the module's documentation). Implemented by `oprec-postgres` and
/// `oprec-sqlite`.
#[async_trait]
pub trait FencedStore: WorkerStore {
    /// The store's transaction, through which the handler writes its effect.
    type Tx: Send + 'static;

    /// Begins a transaction for the claim, once the claim is current (see
    /// [`WorkerStore::operation_claim_current`]); a claim that is not is
    /// [`Error::StaleClaim`](crate::Error::StaleClaim), and no transaction is left open.
    async fn operation_fenced_begin(&self, params: FencedBeginParams) -> Result<Self::Tx>;

    /// Applies the completion with the same statements as
    /// [`WorkerStore::operation_complete_many`], inside the transaction, and commits the effect
    /// and the completion together when the fence admits the token ([`CompleteResult::Applied`]).
    /// A stale token rolls the whole transaction back, effect included, and is written to the
    /// history of the attempt its claim belonged to, as an ordinary stale completion is
    /// ([`CompleteResult::Stale`]).
    async fn operation_fenced_complete(
        &self,
        params: FencedCompleteParams<Self::Tx>,
    ) -> Result<CompleteResult>;
}
