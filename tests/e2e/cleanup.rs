//! What a rig made on a shared broker is removed when the rig's transport is dropped, whether the
//! test passed or failed: the Redis stream (with its consumer group) or the RabbitMQ queue.
//!
//! The guard lives inside the transport handle ([`Cleaned`]), so it runs only after the last user
//! of the transport (a worker task still running when a test panics, say) is gone: nothing can
//! recreate the stream or queue after it was deleted.

use std::time::Duration;

use async_trait::async_trait;
use oprec_core::{AckToken, Delivery, OperationId, Result, Transport};

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

    async fn publish(&self, ids: &[OperationId]) -> Result<()> {
        self.inner.publish(ids).await
    }

    async fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>> {
        self.inner.receive(max, wait).await
    }

    async fn ack(&self, tokens: Vec<AckToken>) -> Result<()> {
        self.inner.ack(tokens).await
    }

    async fn purge(&self) -> Result<u64> {
        self.inner.purge().await
    }

    async fn depth(&self) -> Result<u64> {
        self.inner.depth().await
    }
}

/// Deletes one Redis key or one RabbitMQ queue when dropped. Best effort and bounded: a broker
/// that is gone by then costs a few seconds, never a hang or a second panic.
pub enum BrokerGuard {
    RedisKey { url: String, key: String },
    AmqpQueue { url: String, queue: String },
}

impl Drop for BrokerGuard {
    fn drop(&mut self) {
        match self {
            BrokerGuard::RedisKey { url, key } => delete_redis_key(url, key),
            BrokerGuard::AmqpQueue { url, queue } => delete_amqp_queue(url, queue),
        }
    }
}

/// `DEL key` on a connection of its own.
pub fn delete_redis_key(url: &str, key: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    if let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(2)) {
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = redis::cmd("DEL").arg(key).exec(&mut conn);
    }
}

/// Deletes a queue, consumers or not, on a thread and runtime of its own (a guard may be dropped
/// on a runtime's thread, where blocking on another runtime is refused).
pub fn delete_amqp_queue(url: &str, queue: &str) {
    use lapin::options::QueueDeleteOptions;
    use lapin::{Connection, ConnectionProperties};
    let (url, queue) = (url.to_owned(), queue.to_owned());
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
                let _ = channel
                    .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                    .await;
                let _ = conn.close(200, "OK".into()).await;
                Some(())
            })
            .await;
        });
    })
    .join();
}
