//! A handler's fenced transaction ([`Context::fenced`]): the effect written on the store's own
//! database, committed together with the attempt's completion only if the claim is still current.
//!
//! The completion is the one core decides for a successful attempt (the kind's policy, through
//! [`RetryPolicy::transition_for`](oprec_core::RetryPolicy::transition_for)); the store applies it
//! with its ordinary completion statements, inside the transaction
//! ([`FencedStore::operation_fenced_complete`]). It bypasses the worker's batch of completions
//! for this one operation, so the executor, told through the context, writes nothing more.

use std::ops::{Deref, DerefMut};

use oprec_core::fenced::FencedCompleteParams;
use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{Error, FencedStore, Outcome};

use crate::Context;
use crate::context::AttemptRules;

/// Whether an attempt opened a fenced transaction, and how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FencedState {
    /// None was opened.
    None,
    /// One is open.
    Open,
    /// It was dropped or refused at its start: its writes rolled back, nothing was completed.
    RolledBack,
    /// It was committed with the completion (applied), or rolled back by the fence (stale).
    Committed(CompleteResult),
}

/// An open fenced transaction: write the effect through it (it dereferences to the store's
/// transaction, e.g. `PgFencedTx::conn`), then [`Fenced::commit`]. Dropped uncommitted, it rolls
/// back.
#[must_use = "a fenced transaction dropped without commit rolls its effect back"]
pub struct Fenced<S: FencedStore> {
    ctx: Context,
    store: S,
    tx: Option<S::Tx>,
    rules: AttemptRules,
    remote_id: Option<String>,
}

impl<S: FencedStore> std::fmt::Debug for Fenced<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fenced")
            .field("ctx", &self.ctx)
            .field("remote_id", &self.remote_id)
            .finish_non_exhaustive()
    }
}

impl<S: FencedStore> Fenced<S> {
    pub(crate) fn new(ctx: Context, store: S, tx: S::Tx, rules: AttemptRules) -> Self {
        Fenced {
            ctx,
            store,
            tx: Some(tx),
            rules,
            remote_id: None,
        }
    }

    /// Records the effect's remote identity with the completion (in the same transaction).
    pub fn set_remote_id(&mut self, remote_id: impl Into<String>) {
        self.remote_id = Some(remote_id.into());
    }

    /// Ends the attempt as succeeded and commits it with the effect, if the claim is still
    /// current. A stale claim rolls everything back, effect included, and is
    /// [`Error::StaleClaim`]: another worker has (or will have) the operation, and this attempt
    /// changed nothing. Either way the attempt's outcome is written: the handler should return
    /// at once (an `Err` it returns after this is only logged).
    pub async fn commit(mut self) -> oprec_core::Result<()> {
        let tx = self
            .tx
            .take()
            .ok_or_else(|| Error::backend(false, "a fenced transaction without a transaction"))?;
        let (id, claim_token) = self.ctx.claim();
        let rules = &self.rules;
        let transition = rules.policy.transition_for(
            &rules.claim,
            Outcome::Succeeded {
                remote_id: self.remote_id.take(),
            },
            rules.clock.now(),
            &mut rand::rng(),
        );
        let result = self
            .store
            .operation_fenced_complete(FencedCompleteParams {
                tx,
                completion: CompleteParams {
                    id,
                    claim_token,
                    transition,
                },
            })
            .await;
        match result {
            Ok(result) => {
                self.ctx.set_fenced(FencedState::Committed(result));
                (self.rules.let_go)();
                match result {
                    CompleteResult::Applied => Ok(()),
                    CompleteResult::Stale => Err(Error::StaleClaim { id }),
                }
            }
            Err(e) => {
                // Not committed (the store failed before or at the commit): the effect is not
                // there, and the attempt's outcome is the handler's error.
                self.ctx.set_fenced(FencedState::RolledBack);
                Err(e)
            }
        }
    }
}

impl<S: FencedStore> Deref for Fenced<S> {
    type Target = S::Tx;
    fn deref(&self) -> &S::Tx {
        self.tx
            .as_ref()
            .expect("the transaction is there until commit")
    }
}

impl<S: FencedStore> DerefMut for Fenced<S> {
    fn deref_mut(&mut self) -> &mut S::Tx {
        self.tx
            .as_mut()
            .expect("the transaction is there until commit")
    }
}

impl<S: FencedStore> Drop for Fenced<S> {
    fn drop(&mut self) {
        if self.tx.is_some() {
            self.ctx.set_fenced(FencedState::RolledBack);
        }
    }
}
