//! The attempt history: one `operation_attempts` row per ended claim, written in the transaction
//! that ends it.

use oprec_core::Result;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::{ROWS_PER_STATEMENT, backend_error};

/// One ended claim, as its columns' stored text.
pub(crate) struct AttemptRow {
    pub(crate) operation_id: String,
    pub(crate) attempt: i64,
    pub(crate) claimed_at: String,
    pub(crate) ended_at: String,
    pub(crate) outcome: &'static str,
    pub(crate) failure_class: Option<&'static str>,
    pub(crate) error: Option<String>,
    pub(crate) worker_id: Option<String>,
    pub(crate) code_version: Option<String>,
}

/// Appends `rows` to the history, [`ROWS_PER_STATEMENT`] at a time, on the caller's transaction.
pub(crate) async fn insert(conn: &mut SqliteConnection, rows: &[AttemptRow]) -> Result<()> {
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
            "INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at, \
             outcome, failure_class, error, worker_id, code_version) ",
        );
        q.push_values(chunk, |mut v, r| {
            v.push_bind(&r.operation_id)
                .push_bind(r.attempt)
                .push_bind(&r.claimed_at)
                .push_bind(&r.ended_at)
                .push_bind(r.outcome)
                .push_bind(r.failure_class)
                .push_bind(&r.error)
                .push_bind(&r.worker_id)
                .push_bind(&r.code_version);
        });
        q.build().execute(&mut *conn).await.map_err(backend_error)?;
    }
    Ok(())
}
