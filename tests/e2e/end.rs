//! Ending an operation as a test needs it: claimed by a test worker, then completed with the
//! transition the test names.

use oprec_core::store::{ClaimByIdsParams, Claimant, CompleteParams};
use oprec_core::{FullStore, OperationId, Transition};

/// Claims `id` as worker `t` (code version `v9`) and ends the claim with `t`.
pub async fn end_with(store: &dyn FullStore, id: OperationId, t: Transition) {
    let c = store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![id],
            kinds: vec![],
            claimant: Claimant {
                worker_id: "t".into(),
                code_version: Some("v9".into()),
                lease: chrono::Duration::seconds(30),
            },
        })
        .await
        .unwrap()
        .remove(0);
    store
        .operation_complete(CompleteParams {
            id,
            claim_token: c.claim_token.unwrap(),
            transition: t,
        })
        .await
        .unwrap();
}
