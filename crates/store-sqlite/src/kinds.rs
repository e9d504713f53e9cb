//! The `operation_kinds` table: the enqueue-time policy of every kind, as the workers that run it
//! last published it. SQLite has no SQL enqueue function (PostgreSQL's `oprec_enqueue` reads the
//! same table); the table is kept alike so that both stores answer the same questions.

use chrono::Duration;
use oprec_core::{KindPolicy, KindPublishParams, KindRecord, Result};
use serde_json::json;

use crate::row::{Columns, json_text};
use crate::{SqliteStore, backend_error, sql, time};

/// A duration as the table keeps it, in whole milliseconds; a positive one never rounds down
/// to zero (the columns' CHECKs).
fn stored_ms(d: Duration) -> i64 {
    let ms = d.num_milliseconds();
    if ms == 0 && d > Duration::zero() {
        1
    } else {
        ms
    }
}

/// See [`WorkerStore::kind_publish`](oprec_core::WorkerStore::kind_publish): one statement, a
/// kind named twice keeping its last policy.
pub(crate) async fn kind_publish(store: &SqliteStore, params: KindPublishParams) -> Result<()> {
    let mut kinds: Vec<KindPolicy> = Vec::with_capacity(params.kinds.len());
    for k in params.kinds {
        kinds.retain(|seen| seen.kind != k.kind);
        kinds.push(k);
    }
    if kinds.is_empty() {
        return Ok(());
    }
    let rows: Vec<serde_json::Value> = kinds
        .iter()
        .map(|k| {
            json!({
                "kind": k.kind,
                "max_attempts": k.max_attempts,
                "give_up_after_ms": k.give_up_after.map(stored_ms),
                "first_delay_ms": stored_ms(k.first_delay),
                "payload_mode": k.payload_mode.as_str(),
                "dependency": k.dependency,
            })
        })
        .collect();
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    sqlx::query(sql::KINDS_PUBLISH)
        .bind(json_text(&rows)?)
        .bind(&params.published_by)
        .bind(&params.code_version)
        .bind(now)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// See [`OperatorStore::kind_list`](oprec_core::OperatorStore::kind_list).
pub(crate) async fn kind_list(store: &SqliteStore) -> Result<Vec<KindRecord>> {
    let rows = sqlx::query(sql::KINDS_LIST)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(KindRecord {
                policy: KindPolicy {
                    kind: c.text("kind")?,
                    max_attempts: c.opt_u32("max_attempts")?,
                    give_up_after: c.opt_int("give_up_after_ms")?.map(Duration::milliseconds),
                    first_delay: Duration::milliseconds(c.int("first_delay_ms")?),
                    payload_mode: c.parsed("payload_mode")?,
                    dependency: c.opt_text("dependency")?,
                },
                published_by: c.text("published_by")?,
                code_version: c.opt_text("code_version")?,
                published_at: c.time("published_at")?,
            })
        })
        .collect()
}
