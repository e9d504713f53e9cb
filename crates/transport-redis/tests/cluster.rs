//! The transport on a Redis Cluster (`redis+cluster://`): a three-master cluster of the test's
//! own on loopback ports, started here and torn down at the end, passes the whole transport
//! conformance suite. Every key of a prefix shares one hash tag, so the streams of all kinds sit
//! in one slot: one `XREADGROUP` reads them all and one `MULTI` acknowledges or purges them.

use std::time::Duration;

use oprec_core::{OperationId, Transport};
use oprec_redis::{RedisTransport, RedisTransportConfig};
use oprec_testkit::services::PrivateRedisCluster;
use oprec_testkit::transport_cases::{self as cases, KIND, TransportHarness};
use redis::cluster::ClusterClient;

/// A transport under a fresh prefix on `cluster`, and an injector writing raw entries there.
async fn setup(cluster: &PrivateRedisCluster) -> TransportHarness<RedisTransport> {
    let prefix = format!("oprec:cluster:{}", uuid::Uuid::now_v7().simple());
    let config = RedisTransportConfig::with_prefix(&prefix);
    let transport = RedisTransport::connect(&cluster.url(), config.clone())
        .await
        .expect("the cluster answers");
    let raw = ClusterClient::new(cluster.node_urls())
        .expect("cluster client")
        .get_async_connection()
        .await
        .expect("cluster connection");
    TransportHarness {
        transport,
        inject: Box::new(move |kind, bytes| {
            let (mut raw, stream) = (raw.clone(), config.stream_key(&kind));
            Box::pin(async move {
                let _: String = redis::cmd("XADD")
                    .arg(stream)
                    .arg("*")
                    .arg("f")
                    .arg(bytes)
                    .query_async(&mut raw)
                    .await
                    .expect("XADD on the cluster");
            })
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes_on_a_three_node_redis_cluster() {
    let cluster = tokio::task::spawn_blocking(PrivateRedisCluster::start)
        .await
        .expect("start the cluster");
    cases::publish_then_receive_delivers_each_id(setup(&cluster).await).await;
    cases::a_batch_of_a_thousand_arrives_whole(setup(&cluster).await).await;
    cases::purge_drops_waiting_wakeups_and_counts_them(setup(&cluster).await).await;
    cases::garbage_frames_are_delivered_as_errors(setup(&cluster).await).await;
    cases::duplicate_wakeups_are_all_delivered(setup(&cluster).await).await;
    cases::wakeups_reach_only_receivers_of_their_kind(setup(&cluster).await).await;
    cases::a_receive_of_several_kinds_wakes_for_any_of_them(setup(&cluster).await).await;
    cases::purge_and_depth_act_per_kind(setup(&cluster).await).await;
    cases::a_kind_that_cannot_be_routed_is_refused(setup(&cluster).await).await;
    drop(cluster);
}

/// Prefixes hash to different slots, spread over the three masters, and a transport reaches each:
/// keys are routed by their prefix's slot, whichever node the URL names first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefixes_in_different_slots_all_work() {
    let cluster = tokio::task::spawn_blocking(PrivateRedisCluster::start)
        .await
        .expect("start the cluster");
    let mut slots = std::collections::BTreeSet::new();
    for n in 0..12 {
        let prefix = format!("oprec:cluster:{n}:{}", uuid::Uuid::now_v7().simple());
        let config = RedisTransportConfig::with_prefix(&prefix);
        let stream = config.stream_key(KIND);
        let slot = redis::cluster_routing::Route::with_key(
            &stream,
            redis::cluster_routing::SlotAddr::Master,
        );
        slots.insert(format!("{slot:?}"));
        let t = RedisTransport::connect(&cluster.url(), config)
            .await
            .expect("connect");
        let id = OperationId::new();
        t.publish(&cases::wakeups(&[id], KIND))
            .await
            .expect("publish");
        let got = t
            .receive(&[KIND.to_owned()], 10, Duration::from_secs(2))
            .await
            .expect("receive");
        assert_eq!(got.len(), 1, "{prefix}: {got:?}");
        assert_eq!(got[0].frame, Ok(id));
        t.ack(vec![got[0].ack.clone()]).await.expect("ack");
        assert_eq!(t.depth(None).await.expect("depth"), 0);
    }
    assert!(
        slots.len() > 1,
        "every prefix hashed to one slot: {slots:?}"
    );
    drop(cluster);
}
