//! Recurring operations through the runtime, on both stores: the leader's pass
//! ([`tick_once`]) run by three processes at once (three connections, as three leaders
//! overlapping during a failover) makes exactly one operation per tick with no gap; after
//! downtime, `run_once` makes one operation for the latest missed tick and `skip` none until the
//! next tick. Then three real workers on PostgreSQL with an every-second schedule for five
//! seconds: one operation per second, no gap, every one run.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, TimeZone, Utc};
use oprec_core::schedule::{ScheduleDeclaration, ScheduleDeclareParams, tick_key};
use oprec_core::store::ListParams;
use oprec_core::{Clock, FullStore, ManualClock, Missed, RetryPolicy, Schedule, Status, Store};
use oprec_e2e::{Rig, Running};
use oprec_postgres::PgStore;
use oprec_runtime::{Kind, Registry, tick_once};
use oprec_sqlite::SqliteStore;
use sqlx::postgres::PgConnectOptions;

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .timeout(Duration::seconds(10))
        .max_attempts(3)
        .local_only()
        .jitter(oprec_core::Jitter::None)
        .build()
        .unwrap()
}

fn kind(name: &str, schedule: Schedule) -> Kind {
    Kind::new(name, policy(), |_ctx, _p: serde_json::Value| async {
        Ok(())
    })
    .schedule(schedule)
}

fn registry() -> Arc<Registry> {
    let every_second = Schedule::cron("* * * * * *")
        .unwrap()
        .grace(Duration::seconds(2))
        .unwrap()
        .payload(serde_json::json!({"job": "pulse"}))
        .unwrap();
    let every_ten = |missed| {
        Schedule::cron("*/10 * * * * *")
            .unwrap()
            .grace(Duration::seconds(2))
            .unwrap()
            .missed(missed)
    };
    Arc::new(
        Registry::new()
            .register(kind("pulse", every_second))
            .register(kind("catch.up", every_ten(Missed::RunOnce)))
            .register(kind("let.go", every_ten(Missed::Skip))),
    )
}

async fn declare(store: &dyn FullStore, registry: &Registry) {
    store
        .schedule_declare(ScheduleDeclareParams {
            declared_by: "test".into(),
            schedules: registry
                .kinds()
                .map(|k| ScheduleDeclaration {
                    kind: k.name().to_owned(),
                    schedule: k.own_schedule().unwrap().clone(),
                })
                .collect(),
            unscheduled: vec![],
        })
        .await
        .unwrap();
}

/// The idempotency keys of `kind`'s operations, sorted.
async fn keys(store: &dyn FullStore, kind: &str) -> Vec<String> {
    let mut keys: Vec<String> = store
        .operation_list(ListParams {
            kind: Some(kind.into()),
            limit: 10_000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.idempotency_key.unwrap())
        .collect();
    keys.sort();
    keys
}

fn ticks(from: DateTime<Utc>, secs: impl IntoIterator<Item = i64>) -> Vec<String> {
    secs.into_iter()
        .map(|s| tick_key(from + Duration::seconds(s)))
        .collect()
}

/// Three leaders' passes at once, every second of a manual clock, then downtime.
async fn once_per_tick_and_the_missed_rules(
    leaders: [Arc<dyn FullStore>; 3],
    clock: Arc<ManualClock>,
) {
    let registry = registry();
    let t0 = clock.now();
    declare(leaders[0].as_ref(), &registry).await;
    let whole = Utc.timestamp_opt(t0.timestamp(), 0).unwrap();
    for _ in 0..12 {
        clock.advance(Duration::seconds(1));
        let passes = leaders
            .iter()
            .map(|s| tick_once(s.as_ref(), None, &registry));
        for report in futures::future::join_all(passes).await {
            let r = report.unwrap();
            assert_eq!(r.failed, 0, "{r:?}");
        }
    }
    let store = leaders[0].as_ref();
    // One operation per second, none missing, none twice, whichever leader made it.
    assert_eq!(keys(store, "pulse").await, ticks(whole, 1..=12));
    let listed = store.schedule_list().await.unwrap();
    let pulse = listed.iter().find(|s| s.kind == "pulse").unwrap();
    assert_eq!(pulse.last_tick, Some(whole + Duration::seconds(12)));
    assert_eq!(pulse.last_operation_status, Some(Status::Pending));
    let last = store
        .operation_get(oprec_core::store::OperationGetParams {
            id: pulse.last_operation_id.unwrap(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        last.operation.payload,
        serde_json::json!({"job": "pulse", "tick": oprec_core::schedule::tick_text(whole + Duration::seconds(12))})
    );
    let tens_before = keys(store, "catch.up").await;
    assert_eq!(tens_before, keys(store, "let.go").await);

    // Everything down past several ticks of the every-ten-seconds kinds, back mid-interval.
    let back = whole + Duration::seconds(12 + 60) + Duration::milliseconds(4300);
    clock.set(back);
    let last_due = Utc
        .timestamp_opt(back.timestamp() - back.timestamp() % 10, 0)
        .unwrap();
    for s in &leaders {
        tick_once(s.as_ref(), None, &registry).await.unwrap();
    }
    let caught = keys(store, "catch.up").await;
    assert_eq!(caught.len(), tens_before.len() + 1, "{caught:?}");
    assert!(caught.contains(&tick_key(last_due)), "{caught:?}");
    assert_eq!(keys(store, "let.go").await, tens_before, "skip makes none");
    // The pulse's missed seconds: one for the latest missed, and each second within the grace.
    let pulse = keys(store, "pulse").await;
    assert_eq!(pulse.len(), 12 + 3, "{pulse:?}");

    // The next tick: each kind gets it.
    clock.set(last_due + Duration::seconds(10) + Duration::milliseconds(300));
    for s in &leaders {
        tick_once(s.as_ref(), None, &registry).await.unwrap();
    }
    let next = tick_key(last_due + Duration::seconds(10));
    assert!(keys(store, "let.go").await.contains(&next));
    assert!(keys(store, "catch.up").await.contains(&next));
    assert_eq!(keys(store, "let.go").await.len(), tens_before.len() + 1);
}

fn start() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap() + Duration::milliseconds(300),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_once_per_tick_and_the_missed_rules() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("s.db").display());
    let clock = start();
    let mut leaders = Vec::new();
    for _ in 0..3 {
        let s = SqliteStore::connect(&url)
            .await
            .unwrap()
            .with_clock(clock.clone());
        s.migrate().await.unwrap();
        leaders.push(Arc::new(s) as Arc<dyn FullStore>);
    }
    once_per_tick_and_the_missed_rules(leaders.try_into().ok().unwrap(), clock).await;
}

/// Three stores (three pools) on one new PostgreSQL schema.
async fn postgres_trio(clock: Option<Arc<ManualClock>>) -> Vec<PgStore> {
    let first = oprec_e2e::rigs::postgres_store().await;
    let schema: String = sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(first.pool())
        .await
        .unwrap();
    let url = std::env::var("OPREC_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let mut out = Vec::new();
    for _ in 0..3 {
        let options: PgConnectOptions = url.parse().unwrap();
        let s = PgStore::connect_with(options.options([("search_path", schema.as_str())]), 5)
            .await
            .unwrap();
        out.push(match &clock {
            Some(c) => s.with_clock(c.clone()),
            None => s,
        });
    }
    first.pool().close().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_once_per_tick_and_the_missed_rules() {
    let clock = start();
    let leaders: Vec<Arc<dyn FullStore>> = postgres_trio(Some(clock.clone()))
        .await
        .into_iter()
        .map(|s| Arc::new(s) as Arc<dyn FullStore>)
        .collect();
    once_per_tick_and_the_missed_rules(leaders.try_into().ok().unwrap(), clock).await;
}

/// Three workers (three pools, each competing for the leadership), an every-second schedule,
/// five seconds: one operation per second from the first to the last, each run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_postgres_workers_make_one_operation_per_second() {
    let registry =
        Arc::new(Registry::new().register(kind("pulse", Schedule::cron("* * * * * *").unwrap())));
    let stores = postgres_trio(None).await;
    let rigs: Vec<Rig> = stores
        .into_iter()
        .map(|s| Rig {
            store: Arc::new(s),
            transport: None,
            inject: None,
        })
        .collect();
    let running: Vec<Running> = rigs
        .iter()
        .enumerate()
        .map(|(i, rig)| {
            Running::start(rig.worker(&registry, |c| {
                c.worker_id = format!("w{i}");
                c.leader_lease = Duration::seconds(3);
            }))
        })
        .collect();
    tokio::time::sleep(StdDuration::from_secs(6)).await;
    for r in running {
        r.stop().await;
    }
    let store = rigs[0].store.as_ref();
    let ops = store
        .operation_list(ListParams {
            kind: Some("pulse".into()),
            limit: 10_000,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut ticks: Vec<DateTime<Utc>> = ops
        .iter()
        .map(|o| {
            let key = o.idempotency_key.as_deref().unwrap();
            DateTime::parse_from_rfc3339(key.strip_prefix("schedule:").unwrap())
                .unwrap()
                .with_timezone(&Utc)
        })
        .collect();
    ticks.sort();
    assert!(ticks.len() >= 4, "{ticks:?}");
    assert!(
        ticks
            .windows(2)
            .all(|w| w[1] - w[0] == Duration::seconds(1)),
        "one per second, no gap, none twice: {ticks:?}"
    );
    // Every one ran (the last may still have been pending when the workers stopped).
    let succeeded = ops.iter().filter(|o| o.status == Status::Succeeded).count();
    assert!(succeeded >= ops.len() - 1, "{ops:?}");
}
