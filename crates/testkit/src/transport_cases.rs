//! The Transport conformance cases: what every broker adapter must do with wake-up frames, and
//! how it routes them by kind.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use oprec_core::frame::{self, FrameError};
use oprec_core::{Delivery, Error, KindDepth, OperationId, Transport, WakeUp};

/// Puts raw bytes on the broker as one message of a kind (its stream or queue), bypassing the
/// frame encoder (garbage-frame tests).
pub type Injector =
    Box<dyn Fn(String, Vec<u8>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The kind the single-kind cases publish and receive.
pub const KIND: &str = "test.kind";

/// The kinds the routing cases use besides [`KIND`].
pub const OTHER_KINDS: [&str; 2] = ["test.other", "test.third:kind"];

fn kinds(names: &[&str]) -> Vec<String> {
    names.iter().map(|k| (*k).to_owned()).collect()
}

/// Wake-ups of `kind` for `ids`.
pub fn wakeups(ids: &[OperationId], kind: &str) -> Vec<WakeUp> {
    ids.iter().map(|id| WakeUp::new(*id, kind)).collect()
}

/// A fresh, empty transport (its own stream, queue or channel) and a way to inject raw bytes.
pub struct TransportHarness<T> {
    /// The transport under test.
    pub transport: T,
    /// Publishes raw bytes as one message.
    pub inject: Injector,
}

/// Receives [`KIND`] until `n` deliveries arrived or 20 empty waits passed.
pub async fn receive_n<T: Transport>(t: &T, n: usize) -> Vec<Delivery> {
    receive_kinds(t, &[KIND], n).await
}

/// Receives the given kinds until `n` deliveries arrived or 20 empty waits passed.
pub async fn receive_kinds<T: Transport>(t: &T, of: &[&str], n: usize) -> Vec<Delivery> {
    let of = kinds(of);
    let mut got = Vec::new();
    let mut idle = 0;
    while got.len() < n && idle < 20 {
        let batch = t
            .receive(&of, n - got.len(), Duration::from_millis(250))
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
    assert_quiet_of(t, &[KIND]).await;
}

async fn assert_quiet_of<T: Transport>(t: &T, of: &[&str]) {
    let extra = t
        .receive(&kinds(of), 100, Duration::from_millis(300))
        .await
        .expect("receive");
    assert!(extra.is_empty(), "unexpected deliveries: {extra:?}");
}

/// Each published id is delivered; acknowledged, it is not delivered again.
pub async fn publish_then_receive_delivers_each_id<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let ids: Vec<OperationId> = (0..3).map(|_| OperationId::new()).collect();
    t.publish(&wakeups(&ids, KIND)).await.expect("publish");
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
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    t.publish(&[]).await.expect("an empty batch is fine");
    t.ack(vec![]).await.expect("an empty ack is fine");
}

/// A batch of 1,000 is one publish and arrives whole; depth counts it until acknowledged.
pub async fn a_batch_of_a_thousand_arrives_whole<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let ids: Vec<OperationId> = (0..1000).map(|_| OperationId::new()).collect();
    t.publish(&wakeups(&ids, KIND)).await.expect("publish");
    assert_eq!(t.depth(None).await.expect("depth"), 1000);
    let got = receive_n(t, 1000).await;
    assert_eq!(got.len(), 1000);
    let unique: HashSet<_> = got.iter().map(|d| d.frame.clone().unwrap()).collect();
    assert_eq!(unique.len(), 1000);
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

/// Purge drops what waits and says how many; nothing is delivered afterwards.
pub async fn purge_drops_waiting_wakeups_and_counts_them<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let ids: Vec<OperationId> = (0..50).map(|_| OperationId::new()).collect();
    t.publish(&wakeups(&ids, KIND)).await.expect("publish");
    assert_eq!(t.purge(None).await.expect("purge"), 50);
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    assert_quiet(t).await;
    assert_eq!(t.purge(None).await.expect("purge again"), 0);
    // The transport still works after a purge.
    let id = OperationId::new();
    t.publish(&wakeups(&[id], KIND)).await.expect("publish");
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
        (h.inject)(KIND.to_owned(), g).await;
    }
    t.publish(&wakeups(&[good], KIND)).await.expect("publish");
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
    assert!(got.iter().all(|d| d.kind == KIND), "{got:?}");
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_quiet(t).await;
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

/// Duplicates are the store's business: a transport delivers each publish, even of the same id.
pub async fn duplicate_wakeups_are_all_delivered<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let id = OperationId::new();
    t.publish(&wakeups(&[id, id], KIND)).await.expect("publish");
    t.publish(&wakeups(&[id], KIND)).await.expect("publish");
    let got = receive_n(t, 3).await;
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|d| d.frame == Ok(id)));
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
}

/// Each kind travels apart: a receive of some kinds gets only theirs, the others stay for the
/// workers that run them; one receive of several kinds gets all of theirs.
pub async fn wakeups_reach_only_receivers_of_their_kind<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let [other, third] = OTHER_KINDS;
    let mine: Vec<OperationId> = (0..4).map(|_| OperationId::new()).collect();
    let theirs: Vec<OperationId> = (0..3).map(|_| OperationId::new()).collect();
    let third_ids: Vec<OperationId> = (0..2).map(|_| OperationId::new()).collect();
    let mut mixed = wakeups(&mine, KIND);
    mixed.extend(wakeups(&theirs, other));
    mixed.extend(wakeups(&third_ids, third));
    t.publish(&mixed).await.expect("publish of mixed kinds");
    assert_eq!(t.depth(Some(KIND)).await.expect("depth"), 4);
    assert_eq!(t.depth(Some(other)).await.expect("depth"), 3);
    assert_eq!(t.depth(None).await.expect("depth"), 9);
    let mut by_kind = t.depths().await.expect("depths");
    by_kind.sort_by(|a, b| a.kind.cmp(&b.kind));
    let mut expected = vec![
        KindDepth {
            kind: KIND.to_owned(),
            depth: 4,
        },
        KindDepth {
            kind: other.to_owned(),
            depth: 3,
        },
        KindDepth {
            kind: third.to_owned(),
            depth: 2,
        },
    ];
    expected.sort_by(|a, b| a.kind.cmp(&b.kind));
    assert_eq!(by_kind, expected);

    let got = receive_n(t, 4).await;
    assert!(got.iter().all(|d| d.kind == KIND), "{got:?}");
    let got_ids: HashSet<OperationId> = got.iter().map(|d| d.frame.clone().unwrap()).collect();
    assert_eq!(got_ids, mine.iter().copied().collect());
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_quiet(t).await;
    assert_eq!(t.depth(Some(other)).await.expect("depth"), 3, "left alone");

    let got = receive_kinds(t, &[other, third], 5).await;
    assert_eq!(got.len(), 5, "{got:?}");
    for d in &got {
        let id = d.frame.clone().unwrap();
        let expected = if theirs.contains(&id) { other } else { third };
        assert_eq!(d.kind, expected, "{d:?}");
    }
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_quiet_of(t, &[KIND, other, third]).await;
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

/// A receive of several kinds returns as soon as one of them has a wake-up, without waiting
/// out its wait on the others.
pub async fn a_receive_of_several_kinds_wakes_for_any_of_them<T: Transport>(
    h: TransportHarness<T>,
) {
    let t = &h.transport;
    let [other, third] = OTHER_KINDS;
    // The streams or queues exist (a first receive made them) before the waiting starts.
    assert_quiet_of(t, &[KIND, other, third]).await;
    let id = OperationId::new();
    let publisher = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        t.publish(&wakeups(&[id], third)).await.expect("publish");
    };
    let all = kinds(&[KIND, other, third]);
    let started = std::time::Instant::now();
    let (got, ()) = tokio::join!(t.receive(&all, 10, Duration::from_secs(8)), publisher);
    let got = got.expect("receive");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "woke after {:?}",
        started.elapsed()
    );
    let got = if got.is_empty() {
        receive_kinds(t, &[third], 1).await
    } else {
        got
    };
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].frame, Ok(id));
    assert_eq!(got[0].kind, third);
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
}

/// Purge and depth act on one kind, or on every kind.
pub async fn purge_and_depth_act_per_kind<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let [other, _] = OTHER_KINDS;
    let a: Vec<OperationId> = (0..5).map(|_| OperationId::new()).collect();
    let b: Vec<OperationId> = (0..7).map(|_| OperationId::new()).collect();
    let mut mixed = wakeups(&a, KIND);
    mixed.extend(wakeups(&b, other));
    t.publish(&mixed).await.expect("publish");
    assert_eq!(t.purge(Some(KIND)).await.expect("purge one kind"), 5);
    assert_eq!(t.depth(Some(KIND)).await.expect("depth"), 0);
    assert_eq!(t.depth(Some(other)).await.expect("depth"), 7);
    assert_quiet(t).await;
    assert_eq!(t.purge(None).await.expect("purge every kind"), 7);
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    assert_eq!(
        t.depth(Some("test.never.published")).await.expect("depth"),
        0
    );
    assert_eq!(
        t.purge(Some("test.never.published")).await.expect("purge"),
        0
    );
    assert_quiet_of(t, &[KIND, other]).await;
}

/// A kind that cannot name a stream or queue (empty, control characters, too long) is refused
/// as invalid input, nothing of the batch is published, and the transport goes on working.
pub async fn a_kind_that_cannot_be_routed_is_refused<T: Transport>(h: TransportHarness<T>) {
    let t = &h.transport;
    let good = OperationId::new();
    for bad in ["", "bad\nkind", &"k".repeat(300)] {
        let batch = vec![
            WakeUp::new(good, KIND),
            WakeUp::new(OperationId::new(), bad),
        ];
        let e = t.publish(&batch).await.expect_err("refused");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        let e = t
            .receive(&kinds(&[KIND, bad]), 10, Duration::from_millis(10))
            .await
            .expect_err("refused");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    }
    assert_eq!(t.depth(None).await.expect("depth"), 0, "nothing was sent");
    t.publish(&wakeups(&[good], KIND)).await.expect("publish");
    let got = receive_n(t, 1).await;
    assert_eq!(got[0].frame, Ok(good));
    t.ack(vec![got[0].ack.clone()]).await.expect("ack");
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
            wakeups_reach_only_receivers_of_their_kind,
            a_receive_of_several_kinds_wakes_for_any_of_them,
            purge_and_depth_act_per_kind,
            a_kind_that_cannot_be_routed_is_refused,
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
