//! The Transport conformance cases: what every broker adapter must do with wake-up frames.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use oprec_core::frame::{self, FrameError};
use oprec_core::{Delivery, OperationId, Transport};

/// Puts raw bytes on the broker, bypassing the frame encoder (garbage-frame tests).
pub type Injector = Box<dyn Fn(Vec<u8>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A fresh, empty transport (its own stream, queue or channel) and a way to inject raw bytes.
pub struct TransportHarness<T> {
    /// The transport under test.
    pub transport: T,
    /// Publishes raw bytes as one message.
    pub inject: Injector,
}

/// Receives until `n` deliveries arrived or 20 empty waits passed.
pub async fn receive_n<T: Transport>(t: &T, n: usize) -> Vec<Delivery> {
    let mut got = Vec::new();
    let mut idle = 0;
    while got.len() < n && idle < 20 {
        let batch = t
            .receive(n - got.len(), Duration::from_millis(250))
            .await
            .expect("receive");
        if batch.is_empty() {
            idle += 1;
        }
        got.extend(batch);
    }
    got
}

async fn assert_quiet<T: Transport>(t: &T) {
    let extra = t
        .receive(100, Duration::from_millis(300))
        .await
        .expect("receive");
    assert!(extra.is_empty(), "unexpected deliveries: {extra:?}");
}

/// Each published id is delivered; acknowledged, it is not delivered again.
pub async fn publish_then_receive_delivers_each_id<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let ids: Vec<OperationId> = (0..3).map(|_| OperationId::new()).collect();
    t.publish(&ids).await.expect("publish");
    let got = receive_n(t, 3).await;
    let got_ids: HashSet<OperationId> = got
        .iter()
        .map(|d| d.frame.clone().expect("a good frame"))
        .collect();
    assert_eq!(got_ids, ids.iter().copied().collect());
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_quiet(t).await;
    assert_eq!(t.depth().await.expect("depth"), 0);
    t.publish(&[]).await.expect("an empty batch is fine");
    t.ack(vec![]).await.expect("an empty ack is fine");
}

/// A batch of 1,000 is one publish and arrives whole; depth counts it until acknowledged.
pub async fn a_batch_of_a_thousand_arrives_whole<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let ids: Vec<OperationId> = (0..1000).map(|_| OperationId::new()).collect();
    t.publish(&ids).await.expect("publish");
    assert_eq!(t.depth().await.expect("depth"), 1000);
    let got = receive_n(t, 1000).await;
    assert_eq!(got.len(), 1000);
    let unique: HashSet<_> = got.iter().map(|d| d.frame.clone().unwrap()).collect();
    assert_eq!(unique.len(), 1000);
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(t.depth().await.expect("depth"), 0);
}

/// Purge drops what waits and says how many; nothing is delivered afterwards.
pub async fn purge_drops_waiting_wakeups_and_counts_them<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let ids: Vec<OperationId> = (0..50).map(|_| OperationId::new()).collect();
    t.publish(&ids).await.expect("publish");
    assert_eq!(t.purge().await.expect("purge"), 50);
    assert_eq!(t.depth().await.expect("depth"), 0);
    assert_quiet(t).await;
    assert_eq!(t.purge().await.expect("purge again"), 0);
    // The transport still works after a purge.
    let id = OperationId::new();
    t.publish(&[id]).await.expect("publish");
    let got = receive_n(t, 1).await;
    assert_eq!(got[0].frame, Ok(id));
    t.ack(vec![got[0].ack.clone()]).await.expect("ack");
}

/// Empty, garbage, truncated, non-UTF-8, unknown-version and oversized frames arrive as errors
/// that can be acknowledged; the good frame among them is unaffected.
pub async fn garbage_frames_are_delivered_as_errors<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let good = OperationId::new();
    let truncated = frame::encode(OperationId::new())[..20].to_vec();
    let garbage: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"hello world".to_vec(),
        truncated,
        vec![0xff, 0x00, 0xfe, b':'],
        b"9:01938f6e-7a51-7c3a-9d2e-5b7f0c1d2e3f".to_vec(),
        vec![b'1'; 100_000],
    ];
    for g in garbage.iter().cloned() {
        (h.inject)(g).await;
    }
    t.publish(&[good]).await.expect("publish");
    let got = receive_n(t, garbage.len() + 1).await;
    assert_eq!(got.len(), garbage.len() + 1);
    let errors: Vec<&FrameError> = got.iter().filter_map(|d| d.frame.as_ref().err()).collect();
    assert_eq!(errors.len(), garbage.len(), "{got:?}");
    assert!(errors.iter().any(|e| matches!(e, FrameError::Oversized(_))));
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, FrameError::UnknownVersion(_)))
    );
    assert!(got.iter().any(|d| d.frame == Ok(good)));
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_quiet(t).await;
    assert_eq!(t.depth().await.expect("depth"), 0);
}

/// Duplicates are the store's business: a transport delivers each publish, even of the same id.
pub async fn duplicate_wakeups_are_all_delivered<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let id = OperationId::new();
    t.publish(&[id, id]).await.expect("publish");
    t.publish(&[id]).await.expect("publish");
    let got = receive_n(t, 3).await;
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|d| d.frame == Ok(id)));
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
}

/// Expands into one `#[tokio::test]` per transport case, each calling `$setup().await` for a fresh
/// [`TransportHarness`].
#[macro_export]
macro_rules! transport_conformance_tests {
    ($setup:path) => {
        $crate::transport_conformance_tests!(@cases $setup;
            publish_then_receive_delivers_each_id,
            a_batch_of_a_thousand_arrives_whole,
            purge_drops_waiting_wakeups_and_counts_them,
            garbage_frames_are_delivered_as_errors,
            duplicate_wakeups_are_all_delivered,
        );
    };
    (@cases $setup:path; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = $setup().await;
                $crate::transport_cases::$case(harness).await;
            }
        )+
    };
}
