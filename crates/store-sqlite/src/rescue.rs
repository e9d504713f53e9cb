//! The rescuer's writes: expired leases become vanished attempts (retried, or dead after a crash
//! loop, the attempt bound or the deadline), and waiting operations past their deadline end dead.

use oprec_core::store::{RescueParams, RescueReport};
use oprec_core::{OperationError, Result, Status, TerminalReason};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::attempts::{self, AttemptRow};
use crate::row::json_text;
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

/// A running operation whose lease has expired, as read for the decision.
#[derive(sqlx::FromRow)]
struct Expired {
    id: String,
    attempt: i64,
    max_attempts: Option<i64>,
    give_up_at: Option<String>,
    vanished_streak: i64,
    claimed_at: String,
    worker_id: Option<String>,
    code_version: Option<String>,
}

/// What happens to one expired claim, as the stored text of what it writes.
struct Vanished {
    id: String,
    reason: Option<TerminalReason>,
    next_eligible_at: Option<String>,
    error: String,
}

/// Why an expired claim ends the operation, if it does: the same rule, in the same order, as
/// the PostgreSQL store.
fn decide(e: &Expired, vanish_limit: u32, retry_at: &str) -> Option<TerminalReason> {
    if e.vanished_streak + 1 >= i64::from(vanish_limit.max(1)) {
        Some(TerminalReason::CrashLoop)
    } else if e.max_attempts.is_some_and(|max| e.attempt >= max) {
        Some(TerminalReason::AttemptsExhausted)
    } else if e.give_up_at.as_deref().is_some_and(|g| g < retry_at) {
        Some(TerminalReason::DeadlinePassed)
    } else {
        None
    }
}

/// The `last_error` of a vanished attempt, word for word as the PostgreSQL store writes it.
fn vanished_error(streak: i64, reason: Option<TerminalReason>) -> OperationError {
    let decision = match reason {
        Some(TerminalReason::CrashLoop) => {
            format!("dead: {streak} attempts in a row vanished (crash loop)")
        }
        Some(TerminalReason::AttemptsExhausted) => "dead: attempts exhausted".to_owned(),
        Some(TerminalReason::DeadlinePassed) => "dead: the deadline passed".to_owned(),
        _ => "retry".to_owned(),
    };
    let next_action = match reason {
        None => "none: retried automatically",
        Some(_) => "inspect the input for what kills or stalls the worker, then re-drive",
    };
    OperationError::new(
        "the lease expired with no outcome: the attempt vanished \
         (worker crashed, was killed, or ran past its lease)",
    )
    .decision(decision)
    .next_action(next_action)
}

impl SqliteStore {
    /// See [`Store::operation_rescue_expired`](oprec_core::Store::operation_rescue_expired).
    pub(crate) async fn rescue_expired(&self, params: RescueParams) -> Result<RescueReport> {
        let now = self.clock_now();
        let now_text = time::text(now)?;
        let retry_at = time::text(time::after(now, params.retry_delay)?)?;
        let mut tx = self.begin_write().await?;
        // INDEXED BY the partial index of running rows, for the reason given in claim.rs.
        let expired: Vec<Expired> = sqlx::query_as(
            "SELECT id, attempt, max_attempts, give_up_at, vanished_streak, claimed_at, worker_id,
                    code_version
             FROM operations INDEXED BY operations_running_lease
             WHERE status = 'running' AND lease_until < ?
             ORDER BY lease_until
             LIMIT ?",
        )
        .bind(&now_text)
        .bind(i64::from(params.limit))
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;

        let mut report = RescueReport::default();
        let mut vanished = Vec::with_capacity(expired.len());
        let mut history = Vec::with_capacity(expired.len());
        for e in expired {
            let reason = decide(&e, params.vanish_limit, &retry_at);
            let error = json_text(&vanished_error(e.vanished_streak + 1, reason))?;
            report.vanished += 1;
            match reason {
                Some(_) => report.dead += 1,
                None => report.retried += 1,
            }
            vanished.push(Vanished {
                id: e.id.clone(),
                reason,
                next_eligible_at: reason.is_none().then(|| retry_at.clone()),
                error: error.clone(),
            });
            history.push(AttemptRow {
                operation_id: e.id,
                attempt: e.attempt,
                claimed_at: e.claimed_at,
                ended_at: now_text.clone(),
                outcome: "vanished",
                failure_class: None,
                error: Some(error),
                worker_id: e.worker_id,
                code_version: e.code_version,
            });
        }
        for chunk in vanished.chunks(ROWS_PER_STATEMENT) {
            release(tx.conn(), chunk, &now_text).await?;
        }
        attempts::insert(tx.conn(), &history).await?;
        tx.commit().await?;
        Ok(report)
    }

    /// See [`Store::operation_end_past_deadline`](oprec_core::Store::operation_end_past_deadline).
    pub(crate) async fn end_past_deadline(&self, limit: u32) -> Result<u64> {
        let now = time::text(self.clock_now())?;
        let _turn = self.write_turn().await;
        // One statement, so atomic on its own. The summary of the failure that kept the
        // operation waiting (a held one's, say) stays; the decision and next action are new.
        let done = sqlx::query(
            "UPDATE operations
             SET status = 'dead', terminal_reason = 'deadline_passed', terminal_at = ?1,
                 updated_at = ?1,
                 last_error = json_patch(
                     json_patch(json_object('summary', 'the deadline passed before any attempt'),
                                coalesce(last_error, '{}')),
                     json_object(
                         'decision', 'dead: the deadline passed before the next attempt',
                         'next_action', 're-drive with a later deadline if the result is still useful'))
             WHERE id IN (SELECT id FROM operations INDEXED BY operations_waiting_deadline
                          WHERE status IN ('pending', 'held') AND give_up_at < ?1
                          ORDER BY give_up_at
                          LIMIT ?2)",
        )
        .bind(&now)
        .bind(i64::from(limit))
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(done.rows_affected())
    }
}

/// Writes the decided state of expired claims (distinct operations) on the caller's write
/// transaction.
async fn release(conn: &mut SqliteConnection, vanished: &[Vanished], now: &str) -> Result<()> {
    let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
        "WITH input (op_id, new_status, new_reason, new_terminal_at, new_eligible_at, new_error) \
         AS (",
    );
    q.push_values(vanished, |mut v, x| {
        let status = match x.reason {
            Some(_) => Status::Dead,
            None => Status::Pending,
        };
        v.push_bind(&x.id)
            .push_bind(status.as_str())
            .push_bind(x.reason.map(|r| r.as_str()))
            .push_bind(x.reason.map(|_| now))
            .push_bind(&x.next_eligible_at)
            .push_bind(&x.error);
    });
    q.push(
        ") UPDATE operations SET
            status = input.new_status,
            terminal_reason = input.new_reason,
            terminal_at = input.new_terminal_at,
            next_eligible_at = coalesce(input.new_eligible_at, operations.next_eligible_at),
            vanished_streak = operations.vanished_streak + 1,
            last_error = input.new_error,
            claim_token = NULL, lease_until = NULL, updated_at = ",
    )
    .push_bind(now)
    .push(" FROM input WHERE operations.id = input.op_id AND operations.status = 'running'");
    q.build().execute(&mut *conn).await.map_err(backend_error)?;
    Ok(())
}
