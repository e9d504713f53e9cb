//! Completions: each claim ends with its transition, fenced by the claim token and
//! `status = 'running'`, and its attempt row is written in the same transaction.

use std::collections::HashMap;

use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{Error, Result};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::attempts::{self, AttemptRow};
use crate::row::{json_text, uuid_text};
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

/// One completion as the stored text of what it writes.
struct Ending {
    /// Index into the caller's batch.
    index: usize,
    id: String,
    token: String,
    status: &'static str,
    next_eligible_at: Option<String>,
    failure_class: Option<&'static str>,
    error: Option<String>,
    terminal_reason: Option<&'static str>,
    refund: bool,
    remote_id: Option<String>,
    terminal_at: Option<String>,
    outcome: &'static str,
}

impl Ending {
    fn new(index: usize, p: &CompleteParams, now: &str) -> Result<Self> {
        let t = &p.transition;
        Ok(Ending {
            index,
            id: uuid_text(p.id.as_uuid()),
            token: uuid_text(&p.claim_token),
            status: t.status().as_str(),
            next_eligible_at: time::opt_text(t.next_eligible_at())?,
            failure_class: t.failure().map(|(c, _)| c.as_str()),
            error: t.failure().map(|(_, e)| json_text(e)).transpose()?,
            terminal_reason: t.terminal_reason().map(|r| r.as_str()),
            refund: t.refunds_attempt(),
            remote_id: t.remote_id().map(str::to_owned),
            terminal_at: t.status().is_terminal().then(|| now.to_owned()),
            outcome: t.attempt_outcome().as_str(),
        })
    }
}

/// What an applied completion returns for its history row: the claim as it was.
#[derive(sqlx::FromRow)]
struct Ended {
    id: String,
    attempt: i64,
    claimed_at: String,
    worker_id: Option<String>,
    code_version: Option<String>,
}

impl SqliteStore {
    /// See [`Store::operation_complete_many`](oprec_core::Store::operation_complete_many).
    pub(crate) async fn complete_many(
        &self,
        params: Vec<CompleteParams>,
    ) -> Result<Vec<CompleteResult>> {
        if params.is_empty() {
            return Ok(Vec::new());
        }
        let now = time::text(self.clock_now())?;
        // One multi-row statement cannot apply two endings to the same row, so the n-th
        // completion of an operation in this batch goes in round n: rounds run in batch order,
        // as if the completions were written one by one.
        let mut rounds: Vec<Vec<Ending>> = Vec::new();
        let mut seen: HashMap<_, usize> = HashMap::new();
        for (i, p) in params.iter().enumerate() {
            let round = seen.entry(p.id).or_insert(0);
            if rounds.len() <= *round {
                rounds.push(Vec::new());
            }
            rounds[*round].push(Ending::new(i, p, &now)?);
            *round += 1;
        }
        let mut results = vec![CompleteResult::Stale; params.len()];
        let mut tx = self.begin_write().await?;
        for round in &rounds {
            for chunk in round.chunks(ROWS_PER_STATEMENT) {
                for index in end_claims(tx.conn(), chunk, &now).await? {
                    results[index] = CompleteResult::Applied;
                }
            }
        }
        tx.commit().await?;
        Ok(results)
    }
}

/// Applies `endings` (distinct operations) whose token still holds a running claim, writes their
/// attempt rows, and returns the batch indexes of those applied.
async fn end_claims(
    conn: &mut SqliteConnection,
    endings: &[Ending],
    now: &str,
) -> Result<Vec<usize>> {
    let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
        "WITH input (op_id, token, new_status, new_eligible_at, new_class, new_error, \
         new_reason, refund, new_remote_id, new_terminal_at) AS (",
    );
    q.push_values(endings, |mut v, e| {
        v.push_bind(&e.id)
            .push_bind(&e.token)
            .push_bind(e.status)
            .push_bind(&e.next_eligible_at)
            .push_bind(e.failure_class)
            .push_bind(&e.error)
            .push_bind(e.terminal_reason)
            .push_bind(i64::from(e.refund))
            .push_bind(&e.remote_id)
            .push_bind(&e.terminal_at);
    });
    q.push(
        ") UPDATE operations SET
            status = input.new_status,
            attempt = operations.attempt - input.refund,
            next_eligible_at = coalesce(input.new_eligible_at, operations.next_eligible_at),
            last_failure_class = coalesce(input.new_class, operations.last_failure_class),
            last_error = coalesce(input.new_error, operations.last_error),
            terminal_reason = input.new_reason,
            remote_id = coalesce(input.new_remote_id, operations.remote_id),
            terminal_at = input.new_terminal_at,
            claim_token = NULL, lease_until = NULL, vanished_streak = 0, updated_at = ",
    )
    .push_bind(now)
    .push(
        " FROM input
         WHERE operations.id = input.op_id AND operations.claim_token = input.token
           AND operations.status = 'running'
         RETURNING id, attempt, claimed_at, worker_id, code_version",
    );
    let done: Vec<Ended> = q
        .build_query_as()
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?;

    let by_id: HashMap<&str, &Ending> = endings.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut applied = Vec::with_capacity(done.len());
    let mut history = Vec::with_capacity(done.len());
    for d in done {
        let e = by_id.get(d.id.as_str()).ok_or_else(|| {
            Error::backend(
                false,
                format!("completion returned an operation not asked for: {}", d.id),
            )
        })?;
        applied.push(e.index);
        history.push(AttemptRow {
            operation_id: d.id,
            // The attempt as claimed, before a refund gave it back.
            attempt: d.attempt + i64::from(e.refund),
            claimed_at: d.claimed_at,
            ended_at: now.to_owned(),
            outcome: e.outcome,
            failure_class: e.failure_class,
            error: e.error.clone(),
            worker_id: d.worker_id,
            code_version: d.code_version,
        });
    }
    attempts::insert(conn, &history).await?;
    Ok(applied)
}
