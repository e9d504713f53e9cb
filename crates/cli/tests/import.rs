//! `oprec import` against the real services: a legacy Redis list (OPREC_TEST_REDIS_URL) and a
//! legacy AMQP queue (OPREC_TEST_AMQP_URL), each fresh per test, into a fresh SQLite store.
//! Importing twice creates nothing twice; `--then-purge` empties the source only after the
//! commit; malformed messages become held operations carrying the parse error.

mod common;

use common::{AmqpQueueGuard, Oprec, RedisKeyGuard};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use serde_json::{Value, json};

fn redis_url() -> String {
    std::env::var("OPREC_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

fn amqp_url() -> String {
    std::env::var("OPREC_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

async fn redis() -> redis::aio::MultiplexedConnection {
    let url = redis_url();
    redis::Client::open(url.as_str())
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("Redis (OPREC_TEST_REDIS_URL={url}) is required: {e}"))
}

/// Appends `items` to the list `key`.
async fn rpush(key: &str, items: &[Vec<u8>]) {
    let mut conn = redis().await;
    for chunk in items.chunks(1000) {
        let _: () = redis::cmd("RPUSH")
            .arg(key)
            .arg(chunk)
            .query_async(&mut conn)
            .await
            .expect("RPUSH");
    }
}

async fn llen(key: &str) -> u64 {
    redis::cmd("LLEN")
        .arg(key)
        .query_async(&mut redis().await)
        .await
        .expect("LLEN")
}

/// Counts rows of the test store by status (and all).
async fn counts(o: &Oprec) -> Value {
    o.run(&["stats", "--json"]).json()["by_status"].clone()
}

async fn rows(o: &Oprec, sql: &str) -> Vec<(String, String, Option<String>)> {
    use sqlx::Connection as _;
    let mut c = sqlx::SqliteConnection::connect(&o.url)
        .await
        .expect("sqlite");
    sqlx::query_as::<_, (String, String, Option<String>)>(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_all(&mut c)
        .await
        .expect("query")
}

async fn total(o: &Oprec) -> u64 {
    let r = rows(o, "SELECT CAST(count(*) AS TEXT), '', NULL FROM operations").await;
    r[0].0.parse().unwrap()
}

fn import(o: &Oprec, args: &[&str]) -> Value {
    let mut all = vec!["import", "--kind", "demo.noop", "--json"];
    all.extend_from_slice(args);
    o.run(&all).json()
}

fn figures(v: &Value) -> (u64, u64, u64, u64, u64) {
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    (
        n("read"),
        n("imported"),
        n("already_present"),
        n("malformed_held"),
        n("purged"),
    )
}

#[tokio::test]
async fn a_redis_list_of_ten_thousand_imported_twice_is_ten_thousand_operations() {
    let o = Oprec::migrated();
    let key = format!("oprec-test:import:{}", uuid::Uuid::now_v7().simple());
    let _list = RedisKeyGuard {
        url: redis_url(),
        key: key.clone(),
    };
    let jobs: Vec<Vec<u8>> = (0..10_000)
        .map(|i| {
            json!({"id": format!("job-{i}"), "n": i})
                .to_string()
                .into_bytes()
        })
        .collect();
    rpush(&key, &jobs).await;
    let from = redis_url();

    let first = import(&o, &["--from", &from, "--list", &key]);
    assert_eq!(figures(&first), (10_000, 10_000, 0, 0, 0), "{first}");
    let second = import(&o, &["--from", &from, "--list", &key]);
    assert_eq!(figures(&second), (10_000, 0, 10_000, 0, 0), "{second}");
    assert_eq!(total(&o).await, 10_000);
    assert_eq!(
        llen(&key).await,
        10_000,
        "without --then-purge the list stays"
    );

    let third = import(&o, &["--from", &from, "--list", &key, "--then-purge"]);
    assert_eq!(figures(&third), (10_000, 0, 10_000, 0, 10_000), "{third}");
    assert_eq!(llen(&key).await, 0, "purged after the commit");
    assert_eq!(total(&o).await, 10_000);
    let keys = rows(
        &o,
        "SELECT idempotency_key, status, NULL FROM operations WHERE idempotency_key = 'job-9999'",
    )
    .await;
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].1, "pending");
    let audit = o.run(&["audit", "--json"]).json();
    assert!(audit.to_string().contains("\"import\""), "{audit}");
}

#[tokio::test]
async fn malformed_redis_jobs_become_held_operations_with_the_parse_error() {
    let o = Oprec::migrated();
    let key = format!("oprec-test:import:{}", uuid::Uuid::now_v7().simple());
    let _list = RedisKeyGuard {
        url: redis_url(),
        key: key.clone(),
    };
    let items: Vec<Vec<u8>> = vec![
        br#"{"id":"a","to":"x"}"#.to_vec(),
        br#"{"to":"no id"}"#.to_vec(),
        b"{not json".to_vec(),
        br#"{"id":"a","to":"the same id again"}"#.to_vec(),
        b"\xff\xfe binary".to_vec(),
        br#"{"id":7}"#.to_vec(),
    ];
    rpush(&key, &items).await;
    let from = redis_url();
    let v = import(&o, &["--from", &from, "--list", &key, "--then-purge"]);
    // "a" twice: the second is already present.
    assert_eq!(figures(&v), (6, 5, 1, 2, 6), "{v}");
    assert_eq!(llen(&key).await, 0);

    let held = rows(
        &o,
        "SELECT status, json_extract(payload, '$.parse_error'), \
         json_extract(last_error, '$.decision') FROM operations WHERE status = 'held' ORDER BY id",
    )
    .await;
    assert_eq!(held.len(), 2, "{held:?}");
    for (status, parse_error, decision) in &held {
        assert_eq!(status, "held");
        let decision = decision.as_deref().unwrap_or_default();
        assert!(decision.contains("malformed legacy message"), "{decision}");
        assert!(
            decision.contains(parse_error.as_str()),
            "{decision} / {parse_error}"
        );
    }
    let c = counts(&o).await;
    assert!(c.to_string().contains("held"), "{c}");

    // The same messages again (a legacy producer re-sent them): nothing new, nothing re-held.
    rpush(&key, &items).await;
    let again = import(&o, &["--from", &from, "--list", &key, "--then-purge"]);
    assert_eq!(figures(&again), (6, 0, 6, 0, 6), "{again}");
    assert_eq!(total(&o).await, 5);
}

#[tokio::test]
async fn an_amqp_queue_is_imported_once_and_purged_after_the_commit() {
    let o = Oprec::migrated();
    let url = amqp_url();
    let queue = format!("oprec-test.import.{}", uuid::Uuid::now_v7().simple());
    let _queue = AmqpQueueGuard {
        url: url.clone(),
        queue: queue.clone(),
    };
    let conn = Connection::connect(&url, ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ (OPREC_TEST_AMQP_URL={url}) is required: {e}"));
    let ch = conn.create_channel().await.expect("channel");
    ch.confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    let mut args = FieldTable::default();
    // Deleted by the guard; the broker drops it 10 minutes after its last use should the test
    // process die first.
    args.insert("x-expires".into(), AMQPValue::LongInt(600_000));
    ch.queue_declare(
        ShortString::from(queue.as_str()),
        QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        },
        args.clone(),
    )
    .await
    .expect("declare");
    let mut confirms = Vec::new();
    for i in 0..400 {
        let body = if i % 25 == 0 {
            format!("job {i} is not json").into_bytes()
        } else {
            json!({"id": format!("m-{i}"), "n": i})
                .to_string()
                .into_bytes()
        };
        confirms.push(
            ch.basic_publish(
                ShortString::from(""),
                ShortString::from(queue.as_str()),
                BasicPublishOptions::default(),
                &body,
                BasicProperties::default(),
            )
            .await
            .expect("publish"),
        );
    }
    for c in confirms {
        c.await.expect("confirm");
    }
    let depth = |ch: lapin::Channel, queue: String, args: FieldTable| async move {
        ch.queue_declare(
            ShortString::from(queue.as_str()),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            args,
        )
        .await
        .expect("passive declare")
        .message_count()
    };

    let first = import(&o, &["--from", &url, "--queue", &queue]);
    assert_eq!(figures(&first), (400, 400, 0, 16, 0), "{first}");
    // The broker requeues a nacked batch asynchronously: the importer's channel process casts the
    // requeue to the queue process, and our passive declare comes from another channel, so it may
    // briefly count fewer ready messages. Every message comes back; wait for that (bounded).
    let mut ready = 0;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < until {
        ready = depth(ch.clone(), queue.clone(), args.clone()).await;
        if ready == 400 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(ready, 400, "requeued");
    let second = import(&o, &["--from", &url, "--queue", &queue]);
    assert_eq!(figures(&second), (400, 0, 400, 0, 0), "{second}");
    assert_eq!(total(&o).await, 400);

    let third = import(&o, &["--from", &url, "--queue", &queue, "--then-purge"]);
    assert_eq!(figures(&third), (400, 0, 400, 0, 400), "{third}");
    assert_eq!(
        depth(ch.clone(), queue.clone(), args.clone()).await,
        0,
        "purged"
    );
    assert_eq!(total(&o).await, 400);
    let held = rows(
        &o,
        "SELECT status, json_extract(payload, '$.legacy_body'), \
         json_extract(last_error, '$.decision') FROM operations WHERE status = 'held'",
    )
    .await;
    assert_eq!(held.len(), 16);
    assert!(held.iter().all(|(_, body, d)| body.ends_with("is not json")
        && d.as_deref().unwrap_or_default().contains("expected value")));
    let _ = ch.close(200, "done".into()).await;
    let _ = conn.close(200, "done".into()).await;
}

#[test]
fn an_unknown_kind_or_a_mismatched_source_is_bad_input() {
    let o = Oprec::migrated();
    o.run(&[
        "import",
        "--from",
        "redis://127.0.0.1",
        "--list",
        "k",
        "--kind",
        "billing.x",
    ])
    .bad_input("--any-kind");
    o.run(&[
        "import",
        "--from",
        "redis://127.0.0.1",
        "--queue",
        "q",
        "--kind",
        "demo.noop",
    ])
    .bad_input("--list");
    o.run(&[
        "import",
        "--from",
        "kafka://h",
        "--list",
        "k",
        "--kind",
        "demo.noop",
    ])
    .bad_input("unsupported --from");
}
