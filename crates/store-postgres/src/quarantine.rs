//! Setting pending operations aside and letting them go again
//! ([`OperatorStore`](oprec_core::OperatorStore)): a quarantine writes core's
//! [`Ending::quarantined`] (held, saying who and why); a release makes held operations pending
//! and eligible at once, or when they were due anyway if that is later. Both take a batch of an operator's filter's matches, skipping rows
//! another transaction holds.

use oprec_core::operator::{OperationFilter, QuarantineParams, ReleaseParams};
use oprec_core::{Ending, Result, Status};
use sqlx::{Postgres, QueryBuilder};

use crate::{PgStore, backend_error, filter};

/// Starts `WITH now AS (...), picked AS (...)`: up to `limit` operations in `status` that match
/// `filter`, in id order, locked.
fn pick(
    store: &PgStore,
    status: Status,
    filter: &OperationFilter,
    limit: u32,
) -> QueryBuilder<Postgres> {
    let mut q = QueryBuilder::new("WITH now AS (SELECT coalesce(");
    q.push_bind(store.now_bind())
        .push("::timestamptz, now()) AS t), picked AS (SELECT o.id AS pid FROM operations o WHERE o.status = ")
        .push_bind(status.as_str());
    filter::push_conditions(&mut q, filter);
    q.push(" ORDER BY o.id LIMIT ")
        .push_bind(i64::from(limit))
        .push(" FOR UPDATE OF o SKIP LOCKED) ");
    q
}

/// Moves pending matches to held with core's words; returns how many.
pub(crate) async fn operation_quarantine(store: &PgStore, params: QuarantineParams) -> Result<u64> {
    let ending = Ending::quarantined(&params.actor, &params.reason);
    let mut q = pick(store, Status::Pending, &params.filter, params.limit);
    q.push("UPDATE operations o SET status = ")
        .push_bind(ending.status.as_str())
        .push(", terminal_reason = ")
        .push_bind(ending.terminal_reason.map(|r| r.as_str()))
        .push(", terminal_at = CASE WHEN ")
        .push_bind(ending.status.is_terminal())
        .push(" THEN now.t END, updated_at = now.t")
        // ErrorPatch's rule, as in rescue_end_past_deadline.sql: the stored summary kept (or the
        // default when there was no error), decision and next action replaced, other keys kept.
        .push(", last_error = jsonb_build_object('summary', ")
        .push_bind(ending.patch.default_summary)
        .push("::text) || coalesce(o.last_error, '{}'::jsonb) || jsonb_build_object('decision', ")
        .push_bind(ending.patch.decision)
        .push("::text, 'next_action', ")
        .push_bind(ending.patch.next_action)
        .push("::text) FROM picked, now WHERE o.id = picked.pid");
    let done = q
        .build()
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// Returns held matches to pending, eligible now or at the later time they were already waiting
/// for (an enqueue's delay, a ladder's rung), and due for a wake-up; returns how many.
pub(crate) async fn operation_release(store: &PgStore, params: ReleaseParams) -> Result<u64> {
    let mut q = pick(store, Status::Held, &params.filter, params.limit);
    q.push(
        "UPDATE operations o SET status = 'pending', \
         next_eligible_at = greatest(o.next_eligible_at, now.t), \
         last_woken_at = NULL, updated_at = now.t FROM picked, now WHERE o.id = picked.pid",
    );
    let done = q
        .build()
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}
