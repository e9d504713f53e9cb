//! Re-drive: the dry run, and bringing terminal operations back in batches, oldest terminal first,
//! in place (the same row, reset) or as new (a copy linked by `redrive_of`). An operation already
//! re-driven as new is never taken again, so a re-drive interrupted and run again goes on with
//! the rest.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{
    OperationFilter, PreviewGroup, PreviewSample, RedriveMode, RedriveParams, RedrivePreview,
    Redriven,
};
use oprec_core::{Error, OperationId, Result};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::filter::{push_filter, push_redrivable};
use crate::row::{Columns, parse_uuid, uuid_text};
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

/// One operation to re-drive, as stored text.
struct Target {
    from: String,
    /// The operation that will run: `from` in place, a new id as new.
    to: String,
    at: String,
}

/// When the `i`-th re-driven operation becomes eligible: `start + spacing × i`, to the
/// microsecond the store keeps.
fn eligible_at(start: DateTime<Utc>, spacing: Duration, i: usize) -> Result<DateTime<Utc>> {
    let offset = i32::try_from(i)
        .ok()
        .and_then(|i| spacing.checked_mul(i))
        .ok_or_else(|| {
            Error::InvalidInput(format!("re-drive spacing {spacing} × {i} overflows"))
        })?;
    time::after(start, offset).map(time::truncate)
}

/// `now + d`, with `d` cut to the millisecond as the PostgreSQL store does.
fn after_millis(now: DateTime<Utc>, d: Duration) -> Result<String> {
    time::text(time::after(
        now,
        Duration::milliseconds(d.num_milliseconds()),
    )?)
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl SqliteStore {
    /// See [`OperatorStore::redrive_preview`](oprec_core::OperatorStore::redrive_preview).
    pub(crate) async fn preview_redrive(
        &self,
        filter: &OperationFilter,
        include_cancelled: bool,
        samples: u32,
    ) -> Result<RedrivePreview> {
        let mut groups: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT o.kind, o.last_failure_class, o.terminal_reason, count(*) AS n \
             FROM operations o WHERE",
        );
        push_redrivable(&mut groups, filter, include_cancelled)?;
        // PostgreSQL's order (count, then kind; its NULLs last), then the rest, for a stable one.
        groups.push(" GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2 NULLS LAST, 3 NULLS LAST");
        let mut refused: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT count(*) FROM operations o \
                 WHERE o.status IN ('pending', 'running', 'reconciling', 'held')",
        );
        push_filter(&mut refused, filter)?;
        let mut sampled: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT o.id, o.kind, json_extract(o.last_error, '$.summary') AS summary \
             FROM operations o WHERE",
        );
        push_redrivable(&mut sampled, filter, include_cancelled)?;
        sampled
            .push(" ORDER BY o.terminal_at, o.id LIMIT ")
            .push_bind(i64::from(samples));

        // One read transaction: the three figures are of the same moment.
        let mut tx = self.pool.begin().await.map_err(backend_error)?;
        let mut preview = RedrivePreview::default();
        for r in groups
            .build()
            .fetch_all(&mut *tx)
            .await
            .map_err(backend_error)?
        {
            let c = Columns(&r);
            let n = count(c.int("n")?);
            preview.matched += n;
            preview.groups.push(PreviewGroup {
                kind: c.text("kind")?,
                class: c.opt_parsed("last_failure_class")?,
                reason: c.opt_parsed("terminal_reason")?,
                count: n,
            });
        }
        let n: i64 = refused
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .map_err(backend_error)?;
        preview.not_terminal = count(n);
        for r in sampled
            .build()
            .fetch_all(&mut *tx)
            .await
            .map_err(backend_error)?
        {
            let c = Columns(&r);
            preview.samples.push(PreviewSample {
                id: OperationId::from_uuid(parse_uuid(&c.text("id")?)?),
                kind: c.text("kind")?,
                error: c.opt_text("summary")?,
            });
        }
        tx.commit().await.map_err(backend_error)?;
        Ok(preview)
    }

    /// See [`OperatorStore::operation_redrive`](oprec_core::OperatorStore::operation_redrive).
    pub(crate) async fn redrive(&self, p: RedriveParams) -> Result<Vec<Redriven>> {
        if p.limit == 0 {
            return Ok(Vec::new());
        }
        let now = self.clock_now();
        let mut pick: QueryBuilder<Sqlite> =
            QueryBuilder::new("SELECT o.id FROM operations o WHERE");
        push_redrivable(&mut pick, &p.filter, p.include_cancelled)?;
        pick.push(" ORDER BY o.terminal_at, o.id LIMIT ")
            .push_bind(i64::from(p.limit));

        // Picking and re-driving happen under one write lock, so nothing else can end, re-drive
        // or claim a picked row in between.
        let mut tx = self.begin_write().await?;
        let ids: Vec<String> = pick
            .build_query_scalar()
            .fetch_all(tx.conn())
            .await
            .map_err(backend_error)?;
        let as_new = matches!(p.mode, RedriveMode::AsNew { .. });
        let targets = ids
            .into_iter()
            .enumerate()
            .map(|(i, from)| {
                Ok(Target {
                    to: if as_new {
                        uuid_text(OperationId::new().as_uuid())
                    } else {
                        from.clone()
                    },
                    from,
                    at: time::text(eligible_at(p.start_at, p.spacing, i)?)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut done = HashSet::with_capacity(targets.len());
        for chunk in targets.chunks(ROWS_PER_STATEMENT) {
            let rows = match p.mode {
                RedriveMode::InPlace { extend_deadline } => {
                    in_place(tx.conn(), chunk, extend_deadline, &time::text(now)?).await?
                }
                RedriveMode::AsNew { deadline } => {
                    let deadline = deadline.map(|d| after_millis(now, d)).transpose()?;
                    as_new_copies(tx.conn(), chunk, deadline, &time::text(now)?).await?
                }
            };
            done.extend(rows);
        }
        tx.commit().await?;

        // In the order picked (oldest terminal first), then by eligible time; the sort is stable.
        let mut out = targets
            .iter()
            .filter(|t| done.contains(&t.to))
            .map(|t| {
                Ok(Redriven {
                    from: OperationId::from_uuid(parse_uuid(&t.from)?),
                    to: OperationId::from_uuid(parse_uuid(&t.to)?),
                    next_eligible_at: time::parse(&t.at)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        out.sort_by_key(|r| r.next_eligible_at);
        Ok(out)
    }
}

/// Resets `targets` in place: pending, attempt 0, eligible at their time, terminal fields, claim,
/// reconciliation tries, alert and wake-up cleared, one more re-drive counted. With `extend`,
/// the deadline becomes each operation's new eligible time + `extend` (so a spread re-drive never
/// strands its tail behind its own deadline); otherwise it is cleared if it falls before the new
/// eligible time, and kept if not. Returns the ids written.
async fn in_place(
    conn: &mut SqliteConnection,
    targets: &[Target],
    extend: Option<chrono::Duration>,
    now: &str,
) -> Result<Vec<String>> {
    let deadlines = targets
        .iter()
        .map(|t| {
            extend
                .map(|d| after_millis(time::parse(&t.at)?, d))
                .transpose()
        })
        .collect::<Result<Vec<Option<String>>>>()?;
    let mut q: QueryBuilder<Sqlite> = QueryBuilder::new("WITH input (op_id, at, deadline) AS (");
    q.push_values(targets.iter().zip(deadlines), |mut v, (t, deadline)| {
        v.push_bind(t.from.clone())
            .push_bind(t.at.clone())
            .push_bind(deadline);
    });
    q.push(
        ") UPDATE operations SET status = 'pending', attempt = 0, next_eligible_at = input.at, \
         terminal_reason = NULL, terminal_at = NULL, vanished_streak = 0, \
         reconcile_attempts = 0, alerted_at = NULL, last_woken_at = NULL, \
         claim_token = NULL, lease_until = NULL, \
         redrive_count = operations.redrive_count + 1, updated_at = ",
    )
    .push_bind(now.to_owned())
    .push(
        ", give_up_at = CASE WHEN input.deadline IS NOT NULL THEN input.deadline \
         WHEN operations.give_up_at < input.at THEN NULL ELSE operations.give_up_at END",
    );
    q.push(" FROM input WHERE operations.id = input.op_id RETURNING id");
    q.build_query_scalar()
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)
}

/// Inserts a new pending operation for each of `targets`, with the original's kind, payload,
/// attempt bound, dependency and enqueue parameters, no idempotency key, `redrive_of` set, one
/// more re-drive counted and the deadline `deadline` (none when not given). Returns the new ids.
async fn as_new_copies(
    conn: &mut SqliteConnection,
    targets: &[Target],
    deadline: Option<String>,
    now: &str,
) -> Result<Vec<String>> {
    let mut q: QueryBuilder<Sqlite> = QueryBuilder::new("WITH input (op_id, new_id, at) AS (");
    q.push_values(targets, |mut v, t| {
        v.push_bind(t.from.clone())
            .push_bind(t.to.clone())
            .push_bind(t.at.clone());
    });
    q.push(
        ") INSERT INTO operations (id, kind, payload, max_attempts, next_eligible_at, \
         give_up_at, dependency, enqueue_params, redrive_of, redrive_count, created_at, \
         updated_at) \
         SELECT input.new_id, o.kind, o.payload, o.max_attempts, input.at, ",
    )
    .push_bind(deadline)
    .push(", o.dependency, o.enqueue_params, o.id, o.redrive_count + 1, ")
    .push_bind(now.to_owned())
    .push(", ")
    .push_bind(now.to_owned())
    .push(" FROM input, operations o WHERE o.id = input.op_id RETURNING id");
    q.build_query_scalar()
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)
}
