//! The transport conformance suite on quorum queues (`amqp://...?queue_type=quorum`), the queue
//! type a RabbitMQ cluster wants, on the single local node; and proof that the kind queues are
//! declared as quorum queues.

mod common;

use common::setup_quorum;
use lapin::options::QueueDeclareOptions;
use lapin::types::{AMQPValue, FieldTable, LongString};
use oprec_amqp::AmqpTransportConfig;
use oprec_core::{OperationId, Transport};
use oprec_testkit::transport_cases::{KIND, receive_n};

oprec_testkit::transport_conformance_tests!(setup_quorum);

/// A kind's queue is a quorum queue: declaring it again as a classic one is refused by the
/// broker (`PRECONDITION_FAILED`, inequivalent `x-queue-type`), and the transport works on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_queues_are_declared_as_quorum_queues() {
    let config = AmqpTransportConfig {
        queue_type: Some("quorum".to_owned()),
        ..common::fresh_config()
    };
    let _guard = common::QueueGuard::new(&config);
    let t = common::transport(config.clone()).await;
    let id = OperationId::new();
    t.publish(&common::wakeups(&[id])).await.expect("publish");
    assert_eq!(t.depth(Some(KIND)).await.expect("depth"), 1);

    let connection = common::raw_connection().await;
    let channel = connection.create_channel().await.expect("channel");
    let mut classic = FieldTable::default();
    classic.insert(
        "x-queue-type".into(),
        AMQPValue::LongString(LongString::from("classic")),
    );
    // The same expiry as the transport's, so that the queue type is the only difference.
    classic.insert("x-expires".into(), AMQPValue::LongLongInt(60_000));
    let refused = channel
        .queue_declare(
            config.queue_of(KIND).as_str().into(),
            QueueDeclareOptions {
                durable: true,
                ..QueueDeclareOptions::default()
            },
            classic,
        )
        .await
        .expect_err("the queue exists as a quorum queue");
    assert!(refused.to_string().contains("x-queue-type"), "{refused}");

    let got = receive_n(&t, 1).await;
    assert_eq!(got[0].frame, Ok(id));
    t.ack(vec![got[0].ack.clone()]).await.expect("ack");
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}
