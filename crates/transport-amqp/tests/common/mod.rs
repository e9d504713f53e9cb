//! A fresh queue per test on the RabbitMQ at `OPREC_TEST_AMQP_URL`, deleted by a [`QueueGuard`]
//! when the test ends, passed or failed. Every helper panics with the URL (password redacted by
//! the transport's errors) when RabbitMQ is unreachable: these tests never skip.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeleteOptions};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use oprec_amqp::{AmqpTransport, AmqpTransportConfig};
use oprec_testkit::transport_cases::{Injector, TransportHarness};

/// The broker the tests use.
pub fn amqp_url() -> String {
    std::env::var("OPREC_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

/// Settings for a new queue. The test deletes it with a [`QueueGuard`]; should the test process
/// die first, RabbitMQ deletes it a minute after its last consumer left.
pub fn fresh_config() -> AmqpTransportConfig {
    let queue = format!("oprec.test.{}", uuid::Uuid::now_v7().simple());
    AmqpTransportConfig {
        connection_name: format!("oprec-test {queue}"),
        queue,
        queue_expires: Some(Duration::from_secs(60)),
        // The suite holds a batch of 1,000 unacknowledged at once.
        prefetch: 1000,
        ..AmqpTransportConfig::default()
    }
}

/// A connected transport; panics if RabbitMQ is unreachable.
pub async fn transport(config: AmqpTransportConfig) -> AmqpTransport {
    AmqpTransport::connect(&amqp_url(), config)
        .await
        .unwrap_or_else(|e| {
            panic!("RabbitMQ (OPREC_TEST_AMQP_URL) is required for these tests: {e}")
        })
}

/// A plain lapin connection, beside the transport under test.
pub async fn raw_connection() -> Connection {
    Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| {
            panic!("RabbitMQ (OPREC_TEST_AMQP_URL) is required for these tests: {e}")
        })
}

/// Publishes raw bytes to `queue` on a channel of its own, waiting for each confirm.
pub async fn injector(queue: &str) -> Injector {
    let connection = raw_connection().await;
    let channel = connection.create_channel().await.expect("injector channel");
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirm_select");
    let held: Arc<(Connection, Channel)> = Arc::new((connection, channel));
    let queue = queue.to_owned();
    Box::new(move |bytes: Vec<u8>| {
        let held = held.clone();
        let queue = queue.clone();
        Box::pin(async move {
            let confirm = held
                .1
                .basic_publish(
                    "".into(),
                    queue.as_str().into(),
                    BasicPublishOptions::default(),
                    &bytes,
                    BasicProperties::default().with_delivery_mode(2),
                )
                .await
                .expect("inject")
                .await
                .expect("inject confirm");
            assert!(confirm.is_ack(), "the broker refused an injected message");
        })
    })
}

/// The harness for the conformance suite: a transport on a new queue, and an injector that also
/// holds the queue's guard (the harness drops its transport first, then the injector and guard).
pub async fn setup() -> TransportHarness<AmqpTransport> {
    let config = fresh_config();
    let guard = QueueGuard::new(&config.queue);
    let inject = injector(&config.queue).await;
    let transport = transport(config).await;
    TransportHarness {
        transport,
        inject: Box::new(move |bytes| {
            let _ = &guard;
            inject(bytes)
        }),
    }
}

/// Deletes a test queue when dropped, consumers or not. Declare it before the transports that use
/// the queue, so that it is dropped after them. Best effort and bounded (5 s): a broker that is
/// gone by then costs that long, never a hang or a second panic.
pub struct QueueGuard {
    queue: String,
}

impl QueueGuard {
    pub fn new(queue: &str) -> Self {
        QueueGuard {
            queue: queue.to_owned(),
        }
    }
}

impl Drop for QueueGuard {
    fn drop(&mut self) {
        // A thread and runtime of its own: this may run on a runtime's thread, where blocking on
        // another runtime is refused.
        let queue = self.queue.clone();
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let _ = tokio::time::timeout(Duration::from_secs(5), async {
                    let connection =
                        Connection::connect(&amqp_url(), ConnectionProperties::default())
                            .await
                            .ok()?;
                    let channel = connection.create_channel().await.ok()?;
                    let _ = channel
                        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                        .await;
                    let _ = connection.close(200, "OK".into()).await;
                    Some(())
                })
                .await;
            });
        })
        .join();
    }
}
