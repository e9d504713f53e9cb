//! The in-memory transport: wake-ups in process-local queues, one per kind, for the embedded
//! default (SQLite, one process). Nothing survives the process, which is fine: the store keeps
//! the intent and the scheduler re-wakes whatever was waiting.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use oprec_core::transport::check_kind;
use oprec_core::{AckToken, Delivery, KindDepth, Result, Transport, WakeUp, frame};
use tokio::sync::{Mutex, Notify};

/// Process-local wake-up queues, one per kind. Clones share the queues.
#[derive(Clone, Debug, Default)]
pub struct MemoryTransport {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    queues: Mutex<BTreeMap<String, VecDeque<Vec<u8>>>>,
    notify: Notify,
    tags: AtomicU64,
}

impl MemoryTransport {
    /// No queues yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts raw bytes on `kind`'s queue as one message (for garbage-frame tests and tools).
    pub async fn inject_raw(&self, kind: &str, bytes: Vec<u8>) {
        self.inner
            .queues
            .lock()
            .await
            .entry(kind.to_owned())
            .or_default()
            .push_back(bytes);
        self.inner.notify.notify_waiters();
    }
}

#[async_trait]
impl Transport for MemoryTransport {
    fn name(&self) -> &'static str {
        "memory"
    }

    /// Each receive drains up to its own `max` from the queues.
    fn overlapping_receives(&self) -> bool {
        true
    }

    async fn publish(&self, wakeups: &[WakeUp]) -> Result<()> {
        if wakeups.is_empty() {
            return Ok(());
        }
        for w in wakeups {
            check_kind(&w.kind)?;
        }
        let mut queues = self.inner.queues.lock().await;
        for w in wakeups {
            queues
                .entry(w.kind.clone())
                .or_default()
                .push_back(frame::encode(w.id));
        }
        drop(queues);
        self.inner.notify.notify_waiters();
        Ok(())
    }

    async fn receive(&self, kinds: &[String], max: usize, wait: Duration) -> Result<Vec<Delivery>> {
        for kind in kinds {
            check_kind(kind)?;
        }
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut queues = self.inner.queues.lock().await;
                let mut out = Vec::new();
                for kind in kinds {
                    let Some(q) = queues.get_mut(kind) else {
                        continue;
                    };
                    let n = (max - out.len()).min(q.len());
                    out.extend(q.drain(..n).map(|bytes| Delivery {
                        ack: AckToken::Tag(self.inner.tags.fetch_add(1, Ordering::Relaxed)),
                        kind: kind.clone(),
                        frame: frame::decode(&bytes),
                    }));
                    if out.len() >= max {
                        break;
                    }
                }
                if !out.is_empty() {
                    return Ok(out);
                }
            }
            if max == 0
                || kinds.is_empty()
                || tokio::time::timeout_at(deadline, notified).await.is_err()
            {
                return Ok(Vec::new());
            }
        }
    }

    async fn ack(&self, _tokens: Vec<AckToken>) -> Result<()> {
        // A delivery leaves the queue when received; there is nothing left to acknowledge.
        Ok(())
    }

    async fn purge(&self, kind: Option<&str>) -> Result<u64> {
        let mut queues = self.inner.queues.lock().await;
        let mut n = 0;
        for (k, q) in queues.iter_mut() {
            if kind.is_none_or(|kind| kind == k) {
                n += q.len() as u64;
                q.clear();
            }
        }
        Ok(n)
    }

    async fn depth(&self, kind: Option<&str>) -> Result<u64> {
        let queues = self.inner.queues.lock().await;
        Ok(queues
            .iter()
            .filter(|(k, _)| kind.is_none_or(|kind| kind == k.as_str()))
            .map(|(_, q)| q.len() as u64)
            .sum())
    }

    async fn depths(&self) -> Result<Vec<KindDepth>> {
        let queues = self.inner.queues.lock().await;
        Ok(queues
            .iter()
            .map(|(kind, q)| KindDepth {
                kind: kind.clone(),
                depth: q.len() as u64,
            })
            .collect())
    }
}
