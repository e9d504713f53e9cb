//! End-to-end scenarios run against every store × transport pairing: SQLite + in-memory,
//! PostgreSQL poll-only, PostgreSQL + Redis, PostgreSQL + RabbitMQ. Each test file builds a
//! [`Rig`] and expands [`e2e_scenarios!`]. Scenarios wait on conditions with a deadline, never on
//! bare sleeps, and fail loudly when a service is missing.

#![allow(missing_docs)]

pub mod cleanup;
pub mod end;
pub mod kinds;
pub mod rigs;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use oprec_core::store::{ListParams, OperationGetParams};
use oprec_core::{FullStore, Operation, OperationId, Status, Transport};
use oprec_runtime::{Client, Registry, RunReport, Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

/// Puts raw bytes on the rig's broker.
pub type Injector = Arc<dyn Fn(Vec<u8>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A store and (maybe) a transport, fresh for one test.
#[derive(Clone)]
pub struct Rig {
    pub store: Arc<dyn FullStore>,
    pub transport: Option<Arc<dyn Transport>>,
    pub inject: Option<Injector>,
}

impl Rig {
    pub fn client(&self, registry: &Arc<Registry>) -> Client {
        Client::new(self.store.clone(), self.transport.clone(), registry.clone())
    }

    pub fn client_without_transport(&self, registry: &Arc<Registry>) -> Client {
        Client::new(self.store.clone(), None, registry.clone())
    }

    /// A worker with test-friendly intervals.
    pub fn worker(&self, registry: &Arc<Registry>, tune: impl FnOnce(&mut WorkerConfig)) -> Worker {
        let mut config = WorkerConfig {
            concurrency: 64,
            idle_wait: Duration::from_millis(100),
            drain_timeout: Duration::from_secs(5),
            ..WorkerConfig::default()
        };
        config.scheduler.interval = Duration::from_millis(100);
        config.scheduler.rewake_after = chrono::Duration::seconds(1);
        config.rescuer.interval = Duration::from_millis(200);
        tune(&mut config);
        Worker::new(
            self.store.clone(),
            self.transport.clone(),
            registry.clone(),
            config,
        )
    }

    /// Every operation, in id order (keyset pages of 10,000).
    pub async fn all(&self) -> Vec<Operation> {
        let mut out: Vec<Operation> = Vec::new();
        loop {
            let page = self
                .store
                .operation_list(ListParams {
                    after: out.last().map(|o| o.id),
                    limit: 10_000,
                    ..Default::default()
                })
                .await
                .expect("list");
            let done = page.len() < 10_000;
            out.extend(page);
            if done {
                return out;
            }
        }
    }

    /// How many operations have `status`.
    pub async fn count(&self, status: Status) -> u64 {
        self.store
            .operation_count()
            .await
            .expect("count")
            .iter()
            .filter(|r| r.status == status)
            .map(|r| r.count)
            .sum()
    }

    /// Waits until `n` operations have `status`, or panics after `secs`.
    pub async fn wait_for(&self, status: Status, n: u64, secs: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let got = self.count(status).await;
            if got >= n {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "waited {secs}s for {n} {status} operations; have {got}; all: {:?}",
                self.store.operation_count().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn get(&self, id: OperationId) -> oprec_core::OperationDetail {
        self.store
            .operation_get(OperationGetParams { id })
            .await
            .expect("get")
            .expect("exists")
    }
}

/// A worker running in the background until [`Running::stop`].
pub struct Running {
    stop: CancellationToken,
    handle: tokio::task::JoinHandle<RunReport>,
    pub stats: Arc<oprec_runtime::Stats>,
}

impl Running {
    pub fn start(worker: Worker) -> Self {
        let stop = CancellationToken::new();
        let stats = worker.stats();
        let handle = tokio::spawn(worker.run(stop.clone()));
        Running {
            stop,
            handle,
            stats,
        }
    }

    pub async fn stop(self) -> RunReport {
        self.stop.cancel();
        self.handle.await.expect("worker task")
    }
}

pub mod scenarios;
