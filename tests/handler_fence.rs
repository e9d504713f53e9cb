//! What a handler's context offers against a lost claim, through a real worker on PostgreSQL
//! (poll-only): the claim-current read, the cancellation token that fires when the heartbeat finds
//! the lease lost, and the fenced transaction, whose effect commits with the attempt's success or
//! rolls back with a stale claim, the handler learning which.
//!
//! "Another worker takes the claim over" is played by the test: it gives the running operation a
//! new claim token, as a rescue and a new claim would after the worker stalled past its lease.

use std::sync::Arc;
use std::time::Duration;

use oprec_core::{EnqueueOptions, Error, Jitter, RetryPolicy, Status};
use oprec_e2e::{Rig, Running};
use oprec_postgres::PgStore;
use oprec_runtime::{Context, Kind, Registry};
use serde_json::json;
use tokio::sync::{Mutex, mpsc, oneshot};

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(chrono::Duration::seconds(60))
        .max_attempts(3)
        .local_only()
        .jitter(Jitter::None)
        .build()
        .expect("policy")
}

/// A rig on a fresh schema, its store also as its own type, with the test's effect table.
async fn rig() -> (Rig, PgStore) {
    let pg = oprec_e2e::rigs::postgres_store().await;
    sqlx::query("CREATE TABLE effects (key TEXT NOT NULL)")
        .execute(pg.pool())
        .await
        .expect("create effects");
    let rig = Rig {
        store: Arc::new(pg.clone()),
        transport: None,
        inject: None,
    };
    (rig, pg)
}

/// Gives the running operation a new claim token: its claim is no longer this worker's.
async fn take_over(pg: &PgStore) {
    let n = sqlx::query(
        "UPDATE operations SET claim_token = gen_random_uuid() WHERE status = 'running'",
    )
    .execute(pg.pool())
    .await
    .expect("take over")
    .rows_affected();
    assert_eq!(n, 1, "one running operation to take over");
}

async fn effects(pg: &PgStore) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM effects")
        .fetch_one(pg.pool())
        .await
        .expect("count effects")
}

/// The handler sees its claim current; once the claim is taken over, the worker's next heartbeat
/// (every third of the 3 s lease) fires the handler's cancellation token, which work it spawned
/// hears, and the attempt is abandoned as a stale claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_fires_the_cancellation_token() {
    let (rig, pg) = rig().await;
    let (tx, mut rx) = mpsc::unbounded_channel::<&'static str>();
    let kind = Kind::new(
        "t.hold",
        policy(),
        move |ctx: Context, _p: serde_json::Value| {
            let tx = tx.clone();
            async move {
                let current = ctx.claim_current().await?;
                let _ = tx.send(if current { "current" } else { "not current" });
                let token = ctx.cancellation_token();
                let spawned = tx.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    let _ = spawned.send("cancelled");
                });
                tokio::time::sleep(Duration::from_secs(50)).await;
                Ok(())
            }
        },
    );
    let reg = Arc::new(Registry::new().register(kind));
    rig.client(&reg)
        .enqueue("t.hold", json!({}), EnqueueOptions::default())
        .await
        .expect("enqueue");
    let running = Running::start(rig.worker(&reg, |c| c.lease = chrono::Duration::seconds(3)));
    let first = tokio::time::timeout(Duration::from_secs(20), rx.recv()).await;
    assert_eq!(first.ok().flatten(), Some("current"));
    take_over(&pg).await;
    let heard = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
    assert_eq!(
        heard.ok().flatten(),
        Some("cancelled"),
        "within a heartbeat"
    );
    let report = running.stop().await;
    assert_eq!(report.stats.stale_claims, 1, "{report:?}");
    assert_eq!(report.stats.succeeded, 0, "{report:?}");
}

/// A fenced effect commits with the attempt's success: one effect row, the operation succeeded
/// with its remote id, one attempt, and the worker's summary counts it as any success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_effect_commits_with_the_success() {
    let (rig, pg) = rig().await;
    let store = pg.clone();
    let kind = Kind::new(
        "t.fx",
        policy(),
        move |ctx: Context, _p: serde_json::Value| {
            let store = store.clone();
            async move {
                let mut tx = ctx.fenced(&store).await?;
                sqlx::query("INSERT INTO effects (key) VALUES ($1)")
                    .bind(ctx.effect_key())
                    .execute(tx.conn())
                    .await?;
                tx.set_remote_id("fx-1");
                tx.commit().await?;
                Ok(())
            }
        },
    );
    let reg = Arc::new(Registry::new().register(kind));
    let id = rig
        .client(&reg)
        .enqueue("t.fx", json!({}), EnqueueOptions::default())
        .await
        .expect("enqueue")
        .id;
    let running = Running::start(rig.worker(&reg, |_| {}));
    rig.wait_for(Status::Succeeded, 1, 30).await;
    let report = running.stop().await;
    assert_eq!(effects(&pg).await, 1);
    let d = rig.get(id).await;
    assert_eq!(d.operation.remote_id.as_deref(), Some("fx-1"));
    assert_eq!(d.attempts.len(), 1);
    assert_eq!(
        (
            report.stats.succeeded,
            report.stats.completions,
            report.stats.stale_claims
        ),
        (1, 1, 0),
        "{report:?}"
    );
}

/// A claim taken over while the fenced transaction is open: the commit is refused, the effect
/// rolls back, and the handler learns it from the commit ([`Error::StaleClaim`]); the worker
/// writes nothing more for the attempt and counts a stale claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_fenced_commit_rolls_the_effect_back() {
    let (rig, pg) = rig().await;
    let store = pg.clone();
    let (opened_tx, opened_rx) = oneshot::channel::<()>();
    let (go_tx, go_rx) = oneshot::channel::<()>();
    let (learned_tx, learned_rx) = oneshot::channel::<bool>();
    let gates = Arc::new(Mutex::new(Some((opened_tx, go_rx, learned_tx))));
    let kind = Kind::new(
        "t.zombie",
        policy(),
        move |ctx: Context, _p: serde_json::Value| {
            let (store, gates) = (store.clone(), gates.clone());
            async move {
                let Some((opened, go, learned)) = gates.lock().await.take() else {
                    // A later attempt (the test does not run one) would have no gates.
                    return Ok(());
                };
                let mut tx = ctx.fenced(&store).await?;
                sqlx::query("INSERT INTO effects (key) VALUES ('zombie')")
                    .execute(tx.conn())
                    .await?;
                let _ = opened.send(());
                let _ = go.await;
                let result = tx.commit().await;
                let _ = learned.send(matches!(result, Err(Error::StaleClaim { .. })));
                result?;
                Ok(())
            }
        },
    );
    let reg = Arc::new(Registry::new().register(kind));
    let id = rig
        .client(&reg)
        .enqueue("t.zombie", json!({}), EnqueueOptions::default())
        .await
        .expect("enqueue")
        .id;
    // A long lease: no heartbeat comes between the take-over and the commit.
    let running = Running::start(rig.worker(&reg, |c| c.lease = chrono::Duration::seconds(60)));
    tokio::time::timeout(Duration::from_secs(20), opened_rx)
        .await
        .expect("the handler opened its transaction")
        .expect("opened");
    take_over(&pg).await;
    let _ = go_tx.send(());
    let learned = tokio::time::timeout(Duration::from_secs(10), learned_rx)
        .await
        .expect("the handler committed")
        .expect("learned");
    assert!(learned, "the commit said the claim was stale");
    let report = running.stop().await;
    assert_eq!(effects(&pg).await, 0, "the effect rolled back");
    let d = rig.get(id).await;
    assert_eq!(d.operation.status, Status::Running, "still the taker's");
    assert!(d.attempts.is_empty(), "{:?}", d.attempts);
    assert_eq!(
        (
            report.stats.stale_claims,
            report.stats.succeeded,
            report.stats.completions
        ),
        (1, 0, 0),
        "{report:?}"
    );
}
