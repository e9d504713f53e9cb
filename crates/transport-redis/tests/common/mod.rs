//! A fresh key prefix per test on the Redis at `OPREC_TEST_REDIS_URL`, whose streams are deleted
//! when the test is done.
//! An unreachable Redis fails the test loudly: these tests never skip.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use oprec_core::{OperationId, WakeUp};
use oprec_redis::{RedisTransport, RedisTransportConfig};
use oprec_testkit::transport_cases::{KIND, TransportHarness};
use redis::aio::MultiplexedConnection;

/// The Redis the tests use.
pub fn redis_url() -> String {
    std::env::var("OPREC_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

fn required(e: impl std::fmt::Display) -> ! {
    panic!(
        "Redis is required for these tests (OPREC_TEST_REDIS_URL, default redis://127.0.0.1:6379) \
         and could not be used: {e}"
    )
}

/// A key prefix no other test uses.
pub fn fresh_prefix() -> String {
    format!("oprec:test:{}", uuid::Uuid::now_v7().simple())
}

/// The default configuration under `prefix`, with a consumer of its own.
pub fn config(prefix: &str) -> RedisTransportConfig {
    RedisTransportConfig::with_prefix(prefix)
}

/// The kinds the single-kind tests receive: [`KIND`].
pub fn kinds() -> Vec<String> {
    vec![KIND.to_owned()]
}

/// Wake-ups of [`KIND`].
pub fn wakeups(ids: &[OperationId]) -> Vec<WakeUp> {
    oprec_testkit::transport_cases::wakeups(ids, KIND)
}

/// A transport with `config`, connected (the group exists when this returns).
pub async fn transport(config: RedisTransportConfig) -> RedisTransport {
    RedisTransport::connect(&redis_url(), config)
        .await
        .unwrap_or_else(|e| required(e))
}

/// A plain connection for looking at, and tampering with, [`KIND`]'s stream behind the
/// transport's back. Deletes every key of the prefix when the last clone is dropped.
#[derive(Clone)]
pub struct Raw {
    conn: MultiplexedConnection,
    pub stream: String,
    prefix: String,
    _cleanup: Arc<Cleanup>,
}

impl Raw {
    /// Connects; panics when Redis is unreachable.
    pub async fn connect(prefix: &str) -> Raw {
        let client = redis::Client::open(redis_url()).unwrap_or_else(|e| required(e));
        let conn = tokio::time::timeout(
            Duration::from_secs(5),
            client.get_multiplexed_async_connection(),
        )
        .await
        .unwrap_or_else(|e| required(e))
        .unwrap_or_else(|e| required(e));
        Raw {
            conn,
            stream: config(prefix).stream_key(KIND),
            prefix: prefix.to_owned(),
            _cleanup: Arc::new(Cleanup {
                client,
                prefix: prefix.to_owned(),
            }),
        }
    }

    /// `XADD <stream> * <field> <value>`: an entry the frame encoder did not write.
    pub async fn xadd(&self, field: &[u8], value: Vec<u8>) -> String {
        self.xadd_to(KIND, field, value).await
    }

    /// `XADD` on `kind`'s stream.
    pub async fn xadd_to(&self, kind: &str, field: &[u8], value: Vec<u8>) -> String {
        redis::cmd("XADD")
            .arg(config(&self.prefix).stream_key(kind))
            .arg("*")
            .arg(field)
            .arg(value)
            .query_async(&mut self.conn.clone())
            .await
            .expect("XADD")
    }

    /// `XLEN`: entries in the stream, delivered or not.
    pub async fn xlen(&self) -> u64 {
        redis::cmd("XLEN")
            .arg(&self.stream)
            .query_async(&mut self.conn.clone())
            .await
            .expect("XLEN")
    }

    /// `XTRIM MAXLEN`: the stream cut to its newest `keep` entries, as an operator (or a
    /// `MAXLEN` on `XADD`) would.
    pub async fn xtrim(&self, keep: u64) {
        redis::cmd("XTRIM")
            .arg(&self.stream)
            .arg("MAXLEN")
            .arg(keep)
            .exec_async(&mut self.conn.clone())
            .await
            .expect("XTRIM");
    }

    /// `XDEL` of one entry.
    pub async fn xdel(&self, id: &str) {
        redis::cmd("XDEL")
            .arg(&self.stream)
            .arg(id)
            .exec_async(&mut self.conn.clone())
            .await
            .expect("XDEL");
    }

    /// `DEL` of the whole stream, group and all (what a Redis restart without persistence does).
    pub async fn del(&self) {
        redis::cmd("DEL")
            .arg(&self.stream)
            .exec_async(&mut self.conn.clone())
            .await
            .expect("DEL");
    }

    /// The names of the group's consumers (`XINFO CONSUMERS`).
    pub async fn consumers(&self, group: &str) -> Vec<String> {
        let reply: redis::streams::StreamInfoConsumersReply = redis::cmd("XINFO")
            .arg("CONSUMERS")
            .arg(&self.stream)
            .arg(group)
            .query_async(&mut self.conn.clone())
            .await
            .expect("XINFO CONSUMERS");
        let mut names: Vec<String> = reply.consumers.into_iter().map(|c| c.name).collect();
        names.sort();
        names
    }

    /// How many entries the group has delivered and not had acknowledged.
    pub async fn pending(&self, group: &str) -> u64 {
        let summary: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
            .arg(&self.stream)
            .arg(group)
            .query_async(&mut self.conn.clone())
            .await
            .expect("XPENDING");
        summary.0
    }
}

struct Cleanup {
    client: redis::Client,
    prefix: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // Best effort, and brief: a test that could reach Redis can delete its keys.
        if let Ok(mut conn) = self
            .client
            .get_connection_with_timeout(Duration::from_secs(1))
        {
            delete_prefix(&mut conn, &self.prefix);
        }
    }
}

/// Deletes every key of `prefix`: the kinds' streams and the set of kinds.
pub fn delete_prefix(conn: &mut redis::Connection, prefix: &str) {
    let pattern = format!("{{{prefix}}}:*");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query(conn)
        .unwrap_or_default();
    for key in keys {
        let _ = redis::cmd("DEL").arg(key).exec(conn);
    }
}

/// The conformance harness: a transport under a fresh prefix, and an injector that writes raw
/// bytes as the `f` field of a new entry of a kind's stream.
pub async fn setup() -> TransportHarness<RedisTransport> {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let transport = transport(config(&prefix)).await;
    TransportHarness {
        transport,
        inject: Box::new(move |kind, bytes| {
            let raw = raw.clone();
            Box::pin(async move {
                raw.xadd_to(&kind, b"f", bytes).await;
            })
        }),
    }
}
