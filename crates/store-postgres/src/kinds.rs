//! The `operation_kinds` table ([`WorkerStore::kind_publish`](oprec_core::WorkerStore::kind_publish)
//! and [`OperatorStore::kind_list`](oprec_core::OperatorStore::kind_list)): the enqueue-time
//! policy of every kind, as the workers that run it last published it. The schema's
//! `oprec_enqueue(kind, payload, options)` (migration 0021) reads it to enqueue from SQL with the
//! Rust client's rules.

use chrono::Duration;
use oprec_core::{KindPolicy, KindPublishParams, KindRecord, Result};

use crate::row::Columns;
use crate::{PgStore, backend_error, sql};

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

/// Upserts one row per kind in one statement; a kind named twice keeps its last policy.
pub(crate) async fn kind_publish(store: &PgStore, params: KindPublishParams) -> Result<()> {
    let mut kinds: Vec<KindPolicy> = Vec::with_capacity(params.kinds.len());
    for k in params.kinds {
        kinds.retain(|seen| seen.kind != k.kind);
        kinds.push(k);
    }
    if kinds.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = kinds.iter().map(|k| k.kind.as_str()).collect();
    let bounds: Vec<Option<i32>> = kinds
        .iter()
        .map(|k| k.max_attempts.map(|m| i32::try_from(m).unwrap_or(i32::MAX)))
        .collect();
    let give_up: Vec<Option<i64>> = kinds
        .iter()
        .map(|k| k.give_up_after.map(stored_ms))
        .collect();
    let first: Vec<i64> = kinds.iter().map(|k| stored_ms(k.first_delay)).collect();
    let modes: Vec<&str> = kinds.iter().map(|k| k.payload_mode.as_str()).collect();
    let dependencies: Vec<Option<&str>> = kinds.iter().map(|k| k.dependency.as_deref()).collect();
    sqlx::query(sql::KINDS_PUBLISH)
        .bind(store.now_bind())
        .bind(names)
        .bind(bounds)
        .bind(give_up)
        .bind(first)
        .bind(modes)
        .bind(dependencies)
        .bind(&params.published_by)
        .bind(&params.code_version)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// Every published kind, by name.
pub(crate) async fn kind_list(store: &PgStore) -> Result<Vec<KindRecord>> {
    let rows = sqlx::query(sql::KINDS_LIST)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(KindRecord {
                policy: KindPolicy {
                    kind: c.get("kind")?,
                    max_attempts: c.opt_count("max_attempts")?,
                    give_up_after: c
                        .get::<Option<i64>>("give_up_after_ms")?
                        .map(Duration::milliseconds),
                    first_delay: Duration::milliseconds(c.get("first_delay_ms")?),
                    payload_mode: c.parsed("payload_mode")?,
                    dependency: c.get("dependency")?,
                },
                published_by: c.get("published_by")?,
                code_version: c.get("code_version")?,
                published_at: c.get("published_at")?,
            })
        })
        .collect()
}
