//! What a rig made on a shared broker is removed when the rig's transport is dropped, whether the
//! test passed or failed: the Redis keys of its prefix (every kind's stream, with its consumer
//! group, and the set of kinds) or the RabbitMQ exchange and the queues of the test kinds.
//!
//! The guard lives inside the transport handle ([`Cleaned`]), so it runs only after the last user
//! of the transport (a worker task still running when a test panics, say) is gone: nothing can
//! recreate the stream or queue after it was deleted.

use std::time::Duration;

use async_trait::async_trait;
use oprec_core::{AckToken, Delivery, KindDepth, Result, Transport, WakeUp};

/// Every kind the scenarios register: the queues an AMQP rig deletes.
pub const KINDS: [&str; 11] = [
    "t.noop",
    "t.flaky",
    "t.needed",
    "t.shipment",
    "t.slow",
    "t.steps",
    "t.panics",
    "t.hangs",
    "t.hangs_local",
    "t.unclassified",
    "t.unclassified_keyed",
];

/// A transport that deletes its stream or queue when dropped.
pub struct Cleaned<T> {
    // Dropped first: its connections close before the guard deletes what they used.
    inner: T,
    _guard: BrokerGuard,
}

impl<T> Cleaned<T> {
    pub fn new(inner: T, guard: BrokerGuard) -> Self {
        Cleaned {
            inner,
            _guard: guard,
        }
    }
}

#[async_trait]
impl<T: Transport> Transport for Cleaned<T> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn publish(&self, wakeups: &[WakeUp]) -> Result<()> {
        self.inner.publish(wakeups).await
    }

    async fn receive(&self, kinds: &[String], max: usize, wait: Duration) -> Result<Vec<Delivery>> {
        self.inner.receive(kinds, max, wait).await
    }

    async fn ack(&self, tokens: Vec<AckToken>) -> Result<()> {
        self.inner.ack(tokens).await
    }

    async fn purge(&self, kind: Option<&str>) -> Result<u64> {
        self.inner.purge(kind).await
    }

    async fn depth(&self, kind: Option<&str>) -> Result<u64> {
        self.inner.depth(kind).await
    }

    async fn depths(&self) -> Result<Vec<KindDepth>> {
        self.inner.depths().await
    }

    fn know_kinds(&self, kinds: &[String]) {
        self.inner.know_kinds(kinds);
    }
}

/// Deletes a Redis prefix's keys, or a RabbitMQ prefix's exchange and the queues of [`KINDS`],
/// when dropped. Best effort and bounded: a broker that is gone by then costs a few seconds, never
/// a hang or a second panic.
pub enum BrokerGuard {
    RedisPrefix { url: String, prefix: String },
    AmqpPrefix { url: String, prefix: String },
}

impl Drop for BrokerGuard {
    fn drop(&mut self) {
        match self {
            BrokerGuard::RedisPrefix { url, prefix } => delete_redis_prefix(url, prefix),
            BrokerGuard::AmqpPrefix { url, prefix } => delete_amqp_prefix(url, prefix),
        }
    }
}

/// Deletes every key of `prefix` (`{prefix}:*`) on a connection of its own.
pub fn delete_redis_prefix(url: &str, prefix: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    if let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(2)) {
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{{{prefix}}}:*"))
            .query(&mut conn)
            .unwrap_or_default();
        for key in keys {
            let _ = redis::cmd("DEL").arg(key).exec(&mut conn);
        }
    }
}

/// Deletes the queues of [`KINDS`] and the exchange of `prefix`, consumers or not, on a thread
/// and runtime of its own (a guard may be dropped on a runtime's thread, where blocking on
/// another runtime is refused).
pub fn delete_amqp_prefix(url: &str, prefix: &str) {
    use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
    use lapin::{Connection, ConnectionProperties};
    let (url, prefix) = (url.to_owned(), prefix.to_owned());
    let _ = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            let _ = tokio::time::timeout(Duration::from_secs(5), async {
                let conn = Connection::connect(&url, ConnectionProperties::default())
                    .await
                    .ok()?;
                let channel = conn.create_channel().await.ok()?;
                for kind in KINDS {
                    let queue = format!("{prefix}.{kind}");
                    let _ = channel
                        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                        .await;
                }
                let _ = channel
                    .exchange_delete(prefix.as_str().into(), ExchangeDeleteOptions::default())
                    .await;
                let _ = conn.close(200, "OK".into()).await;
                Some(())
            })
            .await;
        });
    })
    .join();
}
