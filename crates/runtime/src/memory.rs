//! The in-memory transport: wake-ups in a process-local queue, for the embedded default (SQLite,
//! one process). Nothing survives the process, which is fine: the store keeps the intent and the
//! scheduler re-wakes whatever was waiting.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use oprec_core::frame;
use oprec_core::{AckToken, Delivery, OperationId, Result, Transport};
use tokio::sync::{Mutex, Notify};

/// A process-local wake-up queue. Clones share the queue.
#[derive(Clone, Debug, Default)]
pub struct MemoryTransport {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    queue: Mutex<VecDeque<Vec<u8>>>,
    notify: Notify,
    tags: AtomicU64,
}

impl MemoryTransport {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts raw bytes on the queue as one message (for garbage-frame tests and tools).
    pub async fn inject_raw(&self, bytes: Vec<u8>) {
        self.inner.queue.lock().await.push_back(bytes);
        self.inner.notify.notify_waiters();
    }
}

#[async_trait]
impl Transport for MemoryTransport {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn publish(&self, ids: &[OperationId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut q = self.inner.queue.lock().await;
        q.extend(ids.iter().map(|id| frame::encode(*id)));
        drop(q);
        self.inner.notify.notify_waiters();
        Ok(())
    }

    async fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut q = self.inner.queue.lock().await;
                if !q.is_empty() {
                    let n = max.min(q.len());
                    return Ok(q
                        .drain(..n)
                        .map(|bytes| Delivery {
                            ack: AckToken::Tag(self.inner.tags.fetch_add(1, Ordering::Relaxed)),
                            frame: frame::decode(&bytes),
                        })
                        .collect());
                }
            }
            if max == 0 || tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Ok(Vec::new());
            }
        }
    }

    async fn ack(&self, _tokens: Vec<AckToken>) -> Result<()> {
        // A delivery leaves the queue when received; there is nothing left to acknowledge.
        Ok(())
    }

    async fn purge(&self) -> Result<u64> {
        let mut q = self.inner.queue.lock().await;
        let n = q.len() as u64;
        q.clear();
        Ok(n)
    }

    async fn depth(&self) -> Result<u64> {
        Ok(self.inner.queue.lock().await.len() as u64)
    }
}
