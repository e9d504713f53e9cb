//! A fresh stream per test on the Redis at `OPREC_TEST_REDIS_URL`, deleted when the test is done.
//! An unreachable Redis fails the test loudly: these tests never skip.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use oprec_redis::{RedisTransport, RedisTransportConfig};
use oprec_testkit::transport_cases::TransportHarness;
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

/// A stream name no other test uses.
pub fn fresh_stream() -> String {
    format!("oprec:test:{}", uuid::Uuid::now_v7().simple())
}

/// The default configuration on `stream`, with a consumer of its own.
pub fn config(stream: &str) -> RedisTransportConfig {
    RedisTransportConfig::with_stream(stream)
}

/// A transport with `config`, connected (the group exists when this returns).
pub async fn transport(config: RedisTransportConfig) -> RedisTransport {
    RedisTransport::connect(&redis_url(), config)
        .await
        .unwrap_or_else(|e| required(e))
}

/// A plain connection for looking at, and tampering with, the stream behind the transport's
/// back. Deletes the stream when the last clone is dropped.
#[derive(Clone)]
pub struct Raw {
    conn: MultiplexedConnection,
    pub stream: String,
    _cleanup: Arc<Cleanup>,
}

impl Raw {
    /// Connects; panics when Redis is unreachable.
    pub async fn connect(stream: &str) -> Raw {
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
            stream: stream.to_owned(),
            _cleanup: Arc::new(Cleanup {
                client,
                stream: stream.to_owned(),
            }),
        }
    }

    /// `XADD <stream> * <field> <value>`: an entry the frame encoder did not write.
    pub async fn xadd(&self, field: &[u8], value: Vec<u8>) -> String {
        redis::cmd("XADD")
            .arg(&self.stream)
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
    stream: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // Best effort, and brief: a test that could reach Redis can delete its stream.
        if let Ok(mut conn) = self
            .client
            .get_connection_with_timeout(Duration::from_secs(1))
        {
            let _ = redis::cmd("DEL").arg(&self.stream).exec(&mut conn);
        }
    }
}

/// The conformance harness: a transport on a fresh stream, and an injector that writes raw
/// bytes as the `f` field of a new entry.
pub async fn setup() -> TransportHarness<RedisTransport> {
    let stream = fresh_stream();
    let raw = Raw::connect(&stream).await;
    let transport = transport(config(&stream)).await;
    TransportHarness {
        transport,
        inject: Box::new(move |bytes| {
            let raw = raw.clone();
            Box::pin(async move {
                raw.xadd(b"f", bytes).await;
            })
        }),
    }
}
