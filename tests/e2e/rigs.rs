//! Building a fresh [`Rig`] per test: a new SQLite file or PostgreSQL schema, a new Redis stream
//! or RabbitMQ queue. A missing service fails the test with a message saying which.

use std::sync::Arc;

use oprec_core::{FullStore, Store};
use oprec_postgres::PgStore;
use oprec_runtime::MemoryTransport;
use oprec_sqlite::SqliteStore;
use sqlx::postgres::PgConnectOptions;

use crate::cleanup::{BrokerGuard, Cleaned};
use crate::{Injector, Rig};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// A migrated SQLite store in a temporary folder kept for the life of the test process.
pub async fn sqlite() -> Arc<dyn FullStore> {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("e2e.db").display());
    std::mem::forget(dir);
    let store = SqliteStore::connect(&url).await.expect("sqlite");
    store.migrate().await.expect("migrate");
    Arc::new(store)
}

/// A migrated PostgreSQL store in a new schema.
pub async fn postgres() -> Arc<dyn FullStore> {
    Arc::new(postgres_store().await)
}

/// A migrated PostgreSQL store in a new schema, as its own type.
pub async fn postgres_store() -> PgStore {
    let url = env(
        "OPREC_TEST_DATABASE_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    let schema = format!("oprec_test_{}", uuid::Uuid::now_v7().simple());
    let admin = PgStore::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL (OPREC_TEST_DATABASE_URL) is required: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(admin.pool())
        .await
        .expect("create schema");
    admin.pool().close().await;
    let options: PgConnectOptions = url.parse().expect("database url");
    let store = PgStore::connect_with(options.options([("search_path", schema.as_str())]), 20)
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    store
}

/// The kind whose stream or queue the garbage-frame scenario injects into (one its workers run).
pub const GARBAGE_KIND: &str = "t.noop";

/// SQLite with the in-memory transport: the embedded default.
pub async fn sqlite_memory() -> Rig {
    let transport = MemoryTransport::new();
    let raw = transport.clone();
    let inject: Injector = Arc::new(move |bytes| {
        let raw = raw.clone();
        Box::pin(async move { raw.inject_raw(GARBAGE_KIND, bytes).await })
    });
    Rig {
        store: sqlite().await,
        transport: Some(Arc::new(transport)),
        inject: Some(inject),
    }
}

/// PostgreSQL with no broker: workers poll the store.
pub async fn postgres_poll() -> Rig {
    Rig {
        store: postgres().await,
        transport: None,
        inject: None,
    }
}

/// The Redis URL the tests use.
pub fn redis_url() -> String {
    env("OPREC_TEST_REDIS_URL", "redis://127.0.0.1:6379")
}

/// PostgreSQL with Redis Streams under a new prefix, whose keys are deleted when the transport
/// is.
pub async fn postgres_redis() -> Rig {
    let prefix = format!("oprec:e2e:{}", uuid::Uuid::now_v7().simple());
    let config = oprec_redis::RedisTransportConfig {
        claim_idle: std::time::Duration::from_secs(5),
        ..oprec_redis::RedisTransportConfig::with_prefix(prefix.clone())
    };
    let stream = config.stream_key(GARBAGE_KIND);
    let transport = oprec_redis::RedisTransport::connect(&redis_url(), config)
        .await
        .unwrap_or_else(|e| panic!("Redis (OPREC_TEST_REDIS_URL) is required: {e}"));
    let guard = BrokerGuard::RedisPrefix {
        url: redis_url(),
        prefix,
    };
    let transport = Cleaned::new(transport, guard);
    let client = redis::Client::open(redis_url()).expect("redis url");
    let conn = client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("Redis (OPREC_TEST_REDIS_URL) is required: {e}"));
    let inject: Injector = Arc::new(move |bytes| {
        let (mut conn, stream) = (conn.clone(), stream.clone());
        Box::pin(async move {
            let _: String = redis::cmd("XADD")
                .arg(&stream)
                .arg("*")
                .arg("f")
                .arg(bytes)
                .query_async(&mut conn)
                .await
                .expect("XADD");
        })
    });
    Rig {
        store: postgres().await,
        transport: Some(Arc::new(transport)),
        inject: Some(inject),
    }
}

/// The AMQP URL the tests use.
pub fn amqp_url() -> String {
    env(
        "OPREC_TEST_AMQP_URL",
        "amqp://guest:guest@127.0.0.1:5672/%2f",
    )
}

/// PostgreSQL with RabbitMQ under a new prefix, whose exchange and kind queues are deleted when
/// the transport is (the queues also by the broker a minute after their last consumer left,
/// should the test process die before).
pub async fn postgres_amqp() -> Rig {
    use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
    use lapin::{BasicProperties, Connection, ConnectionProperties};
    use oprec_core::Transport;
    let prefix = format!("oprec.e2e.{}", uuid::Uuid::now_v7().simple());
    let config = oprec_amqp::AmqpTransportConfig {
        queue_expires: Some(std::time::Duration::from_secs(60)),
        ..oprec_amqp::AmqpTransportConfig::with_prefix(prefix.clone())
    };
    let transport = oprec_amqp::AmqpTransport::connect(&amqp_url(), config)
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ (OPREC_TEST_AMQP_URL) is required: {e}"));
    // Declares the garbage kind's queue, so that injected bytes are routed to it.
    transport
        .receive(&[GARBAGE_KIND.to_owned()], 1, std::time::Duration::ZERO)
        .await
        .expect("declare the garbage kind's queue");
    let guard = BrokerGuard::AmqpPrefix {
        url: amqp_url(),
        prefix: prefix.clone(),
    };
    let transport = Cleaned::new(transport, guard);
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ (OPREC_TEST_AMQP_URL) is required: {e}"));
    let channel = connection.create_channel().await.expect("channel");
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    let held = Arc::new((connection, channel));
    let inject: Injector = Arc::new(move |bytes| {
        let (held, prefix) = (held.clone(), prefix.clone());
        Box::pin(async move {
            held.1
                .basic_publish(
                    prefix.as_str().into(),
                    GARBAGE_KIND.into(),
                    BasicPublishOptions::default(),
                    &bytes,
                    BasicProperties::default().with_delivery_mode(2),
                )
                .await
                .expect("publish")
                .await
                .expect("confirm");
        })
    });
    Rig {
        store: postgres().await,
        transport: Some(Arc::new(transport)),
        inject: Some(inject),
    }
}
