//! A fresh prefix (exchange and per-kind queues) per test on the RabbitMQ at
//! `OPREC_TEST_AMQP_URL`, deleted by a [`QueueGuard`] when the test ends, passed or failed. Every helper panics with the URL (password redacted by
//! the transport's errors) when RabbitMQ is unreachable: these tests never skip.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeleteOptions, QueueDeleteOptions,
};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use oprec_amqp::{AmqpTransport, AmqpTransportConfig};
use oprec_core::{OperationId, Transport, WakeUp};
use oprec_testkit::transport_cases::{Injector, KIND, OTHER_KINDS, TransportHarness};

/// The broker the tests use.
pub fn amqp_url() -> String {
    std::env::var("OPREC_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

/// The kinds the single-kind tests receive: [`KIND`].
pub fn kinds() -> Vec<String> {
    vec![KIND.to_owned()]
}

/// Wake-ups of [`KIND`].
pub fn wakeups(ids: &[OperationId]) -> Vec<WakeUp> {
    oprec_testkit::transport_cases::wakeups(ids, KIND)
}

/// Settings for a new prefix. The test deletes its exchange and queues with a [`QueueGuard`];
/// should the test process die first, RabbitMQ deletes the queues a minute after their last
/// consumer left.
pub fn fresh_config() -> AmqpTransportConfig {
    let prefix = format!("oprec.test.{}", uuid::Uuid::now_v7().simple());
    AmqpTransportConfig {
        connection_name: format!("oprec-test {prefix}"),
        prefix,
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

/// Publishes raw bytes to the exchange `prefix` with a kind as routing key, on a channel of its
/// own, waiting for each confirm.
pub async fn injector(prefix: &str) -> Injector {
    let connection = raw_connection().await;
    let channel = connection.create_channel().await.expect("injector channel");
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirm_select");
    let held: Arc<(Connection, Channel)> = Arc::new((connection, channel));
    let prefix = prefix.to_owned();
    Box::new(move |kind: String, bytes: Vec<u8>| {
        let held = held.clone();
        let prefix = prefix.clone();
        Box::pin(async move {
            let confirm = held
                .1
                .basic_publish(
                    prefix.as_str().into(),
                    kind.as_str().into(),
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

/// The harness for the conformance suite: a transport under a new prefix, and an injector that
/// also holds the guard (the harness drops its transport first, then the injector and guard). The
/// queues of the suite's kinds are declared first, so injected messages are routed.
pub async fn setup() -> TransportHarness<AmqpTransport> {
    setup_with(fresh_config()).await
}

/// The harness on quorum queues (`?queue_type=quorum`), as a RabbitMQ cluster wants them.
pub async fn setup_quorum() -> TransportHarness<AmqpTransport> {
    setup_with(AmqpTransportConfig {
        queue_type: Some("quorum".to_owned()),
        ..fresh_config()
    })
    .await
}

/// The harness with `config`.
pub async fn setup_with(config: AmqpTransportConfig) -> TransportHarness<AmqpTransport> {
    let guard = QueueGuard::new(&config);
    let inject = injector(&config.prefix).await;
    let transport = transport(config).await;
    let declare = transport
        .receive(
            &[KIND, OTHER_KINDS[0], OTHER_KINDS[1]].map(str::to_owned),
            1,
            Duration::ZERO,
        )
        .await
        .expect("declaring the queues");
    assert!(declare.is_empty());
    TransportHarness {
        transport,
        inject: Box::new(move |kind, bytes| {
            let _ = &guard;
            inject(kind, bytes)
        }),
    }
}

/// Deletes a test prefix's exchange and its queues of the test kinds ([`KIND`] and
/// [`OTHER_KINDS`], and any added) when dropped, consumers or not. Declare it before the
/// transports that use the queues, so that it is dropped after them. Best effort and bounded
/// (5 s): a broker that is gone by then costs that long, never a hang or a second panic.
pub struct QueueGuard {
    exchange: String,
    queues: Vec<String>,
}

impl QueueGuard {
    pub fn new(config: &AmqpTransportConfig) -> Self {
        QueueGuard {
            exchange: config.prefix.clone(),
            queues: [KIND]
                .into_iter()
                .chain(OTHER_KINDS)
                .map(|k| config.queue_of(k))
                .collect(),
        }
    }

    /// Also deletes `kind`'s queue.
    pub fn with_kind(mut self, config: &AmqpTransportConfig, kind: &str) -> Self {
        self.queues.push(config.queue_of(kind));
        self
    }
}

impl Drop for QueueGuard {
    fn drop(&mut self) {
        // A thread and runtime of its own: this may run on a runtime's thread, where blocking on
        // another runtime is refused.
        let (exchange, queues) = (self.exchange.clone(), self.queues.clone());
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
                    for queue in queues {
                        let _ = channel
                            .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                            .await;
                    }
                    let _ = channel
                        .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
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
