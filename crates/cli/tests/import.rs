//! `oprec import` against the real services: a legacy Redis list (OPREC_TEST_REDIS_URL) and a
//! legacy AMQP queue (OPREC_TEST_AMQP_URL), each fresh per test, into a fresh SQLite store.
//! Importing twice creates nothing twice; `--then-purge` empties the source only after the
//! commit; malformed messages become held operations carrying the parse error; a job whose id is
//! taken by another body is a conflict, reported and left in the source.

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
    // "a" twice with two bodies: the second is a conflict, left in the list.
    assert_eq!(figures(&v), (6, 5, 0, 2, 5), "{v}");
    assert_eq!(v["conflicts"], 1, "{v}");
    assert_eq!(llen(&key).await, 1);
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

    // The same messages again (a legacy producer re-sent them): nothing new, nothing re-held;
    // the conflict left by the first run and its copy stay.
    rpush(&key, &items).await;
    let again = import(&o, &["--from", &from, "--list", &key, "--then-purge"]);
    assert_eq!(figures(&again), (7, 0, 5, 0, 5), "{again}");
    assert_eq!(again["conflicts"], 2, "{again}");
    assert_eq!(llen(&key).await, 2);
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

async fn lrange(key: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(&mut redis().await)
        .await
        .expect("LRANGE")
}

fn job(id: &str, n: i64) -> Vec<u8> {
    json!({"id": id, "n": n}).to_string().into_bytes()
}

/// The operation that holds key `key`, with its payload and its wake-up mark.
async fn by_key(o: &Oprec, key: &str) -> (String, String, Option<String>) {
    let r = rows(
        o,
        &format!(
            "SELECT id, payload, last_woken_at FROM operations WHERE idempotency_key = '{key}'"
        ),
    )
    .await;
    assert_eq!(r.len(), 1, "{key}: {r:?}");
    r[0].clone()
}

#[tokio::test]
async fn a_redis_job_whose_id_is_taken_by_another_body_is_a_conflict_left_in_the_list() {
    let o = Oprec::migrated();
    let key = format!("oprec-test:import:{}", uuid::Uuid::now_v7().simple());
    let _list = RedisKeyGuard {
        url: redis_url(),
        key: key.clone(),
    };
    // 1,200 jobs over two batches: in the first, job-5 again with another body (a conflict)
    // and job-7 again as it was (already present); in the second, job-3 with another body.
    let mut items: Vec<Vec<u8>> = (0..1200).map(|i| job(&format!("job-{i}"), i)).collect();
    items.insert(10, job("job-5", -5));
    items.insert(11, job("job-7", 7));
    items.insert(1100, job("job-3", -3));
    rpush(&key, &items).await;
    let from = redis_url();

    let v = import(
        &o,
        &[
            "--transport",
            "memory://",
            "--from",
            &from,
            "--list",
            &key,
            "--then-purge",
        ],
    );
    assert_eq!(figures(&v), (1203, 1200, 1, 0, 1201), "{v}");
    assert_eq!(v["conflicts"], 2, "{v}");
    let (job5, payload5, woken) = by_key(&o, "job-5").await;
    let (job3, ..) = by_key(&o, "job-3").await;
    assert_eq!(
        v["conflicting"],
        json!([{"key": "job-5", "existing": job5}, {"key": "job-3", "existing": job3}]),
        "{v}"
    );
    // The first body is the operation's; the other stays in the list, in its order.
    assert_eq!(serde_json::from_str::<Value>(&payload5).unwrap()["n"], 5);
    assert_eq!(
        lrange(&key).await,
        vec![
            json!({"id": "job-5", "n": -5}).to_string(),
            json!({"id": "job-3", "n": -3}).to_string()
        ]
    );
    // Inserted already marked woken (the wake-up is published right after the commit), so the
    // scheduler never waits a re-wake interval for them.
    assert!(woken.is_some(), "job-5 was not marked woken");
    let unwoken = rows(
        &o,
        "SELECT CAST(count(*) AS TEXT), '', NULL FROM operations WHERE last_woken_at IS NULL",
    )
    .await;
    assert_eq!(unwoken[0].0, "0");
    assert_eq!(total(&o).await, 1200);

    // Run again: the conflicts are read, reported again, and still left.
    let human = o.run(&[
        "import",
        "--kind",
        "demo.noop",
        "--from",
        &from,
        "--list",
        &key,
        "--then-purge",
    ]);
    let out = human.ok();
    assert!(
        out.contains("read 2: imported 0, already present 0, conflicts 2"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "conflict: id \"job-5\" is taken by operation {job5} with a different payload"
        )),
        "{out}"
    );
    assert_eq!(llen(&key).await, 2);
    assert_eq!(total(&o).await, 1200);
}

#[tokio::test]
async fn an_amqp_message_whose_id_is_taken_by_another_body_is_never_purged() {
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
    // Two batches: the conflict (m-1 with another body) in the first, a repeat of m-2 as it
    // was in the second, so the second batch's acknowledgements must leave the first's
    // conflict alone.
    let mut bodies: Vec<Vec<u8>> = (0..1100).map(|i| job(&format!("m-{i}"), i)).collect();
    bodies.insert(3, job("m-1", -1));
    bodies.push(job("m-2", 2));
    let mut confirms = Vec::new();
    for body in &bodies {
        confirms.push(
            ch.basic_publish(
                ShortString::from(""),
                ShortString::from(queue.as_str()),
                BasicPublishOptions::default(),
                body,
                BasicProperties::default(),
            )
            .await
            .expect("publish"),
        );
    }
    for c in confirms {
        c.await.expect("confirm");
    }

    let v = import(&o, &["--from", &url, "--queue", &queue, "--then-purge"]);
    assert_eq!(figures(&v), (1102, 1100, 1, 0, 1101), "{v}");
    assert_eq!(v["conflicts"], 1, "{v}");
    let (m1, ..) = by_key(&o, "m-1").await;
    assert_eq!(
        v["conflicting"],
        json!([{"key": "m-1", "existing": m1}]),
        "{v}"
    );

    // The conflict comes back to the queue (the requeue is asynchronous: wait, bounded), and it
    // is the only message there.
    let mut left = Vec::new();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < until && left.is_empty() {
        if let Some(m) = ch
            .basic_get(
                ShortString::from(queue.as_str()),
                lapin::options::BasicGetOptions { no_ack: true },
            )
            .await
            .expect("get")
        {
            left.push(m.delivery.data.clone());
        } else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    assert_eq!(left, vec![job("m-1", -1)]);
    let more = ch
        .basic_get(
            ShortString::from(queue.as_str()),
            lapin::options::BasicGetOptions { no_ack: true },
        )
        .await
        .expect("get");
    assert!(more.is_none(), "only the conflict is left");
    assert_eq!(total(&o).await, 1100);
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

#[tokio::test]
async fn a_kind_a_kinds_file_declares_is_imported_under_its_own_policy() {
    let o = Oprec::migrated();
    std::fs::write(
        o.path("kinds.toml"),
        r#"[[kind]]
name = "shipment.create"
dependency = "shipping-provider"
timeout = "30s"
max_attempts = 3
give_up_after = "2h"
ladder = ["0s", "1m", "5m"]
jitter = "equal"

[kind.http]
url = "http://127.0.0.1:9/ship"
headers = { Authorization = "env:SHIPPER_TOKEN_NOT_SET_HERE" }
"#,
    )
    .unwrap();
    let key = format!("oprec-test:import:{}", uuid::Uuid::now_v7().simple());
    let _list = RedisKeyGuard {
        url: redis_url(),
        key: key.clone(),
    };
    // Sidekiq's shape: the job id is its `jid`.
    let jobs: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            json!({"class": "ShipmentJob", "args": [i], "jid": format!("jid-{i}")})
                .to_string()
                .into_bytes()
        })
        .collect();
    rpush(&key, &jobs).await;
    let from = redis_url();
    let args = |kind: &'static str| {
        [
            "import",
            "--from",
            &from,
            "--list",
            &key,
            "--id-field",
            "jid",
            "--kind",
            kind,
            "--kinds-file",
            "kinds.toml",
            "--json",
        ]
        .map(str::to_owned)
    };
    // Importing needs no secret: the header's variable is not set here.
    let v = o
        .run(&args("shipment.create").each_ref().map(String::as_str))
        .json();
    assert_eq!(figures(&v), (3, 3, 0, 0, 0), "{v}");
    let ops = rows(
        &o,
        "SELECT idempotency_key, CAST(max_attempts AS TEXT) || ' ' || dependency, \
         CAST(give_up_at IS NOT NULL AS TEXT) FROM operations ORDER BY idempotency_key",
    )
    .await;
    assert_eq!(ops.len(), 3);
    for (i, (id, policy, deadline)) in ops.iter().enumerate() {
        assert_eq!(id, &format!("jid-{i}"));
        assert_eq!(
            policy, "3 shipping-provider",
            "the file's bound and dependency"
        );
        assert_eq!(deadline.as_deref(), Some("1"), "the file's give_up_after");
    }
    o.run(&args("shipment.cancel").each_ref().map(String::as_str))
        .bad_input("accepted kinds: demo.crash, demo.effect, demo.flaky, demo.noop, demo.slow; from kinds.toml: shipment.create");
}

/// The source URL can come from the environment (OPREC_IMPORT_FROM, out of `ps`), and a job
/// holding an integer wider than 64 bits is held with the parse error rather than stored
/// rounded: the body is kept as it was, and nothing else of the list is lost.
#[tokio::test]
async fn the_source_comes_from_the_environment_and_wide_integers_are_held() {
    let o = Oprec::migrated();
    let key = format!("oprec-test:import:{}", uuid::Uuid::now_v7().simple());
    let _list = RedisKeyGuard {
        url: redis_url(),
        key: key.clone(),
    };
    let wide = br#"{"id": "job-wide", "order": 123456789012345678901234567890}"#.to_vec();
    rpush(
        &key,
        &[
            br#"{"id": "job-1"}"#.to_vec(),
            wide,
            br#"{"id": "job-2"}"#.to_vec(),
        ],
    )
    .await;
    let run = o.run_with_env(
        &["import", "--kind", "demo.noop", "--json", "--list", &key],
        &[("OPREC_IMPORT_FROM", Some(&redis_url()))],
    );
    let tally = run.json();
    assert_eq!(figures(&tally), (3, 3, 0, 1, 0), "{tally}");
    let held = rows(
        &o,
        "SELECT status, json_extract(payload, '$.legacy_body'), \
         json_extract(payload, '$.parse_error') FROM operations WHERE status = 'held'",
    )
    .await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(
        held[0].1.contains("123456789012345678901234567890"),
        "the body is kept digit for digit: {held:?}"
    );
    assert!(
        held[0]
            .2
            .as_deref()
            .is_some_and(|e| e.contains("wider than 64 bits")),
        "{held:?}"
    );
}
