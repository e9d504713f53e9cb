//! What the Redis transport promises beyond the conformance suite: dead consumers' entries are
//! taken over, acknowledged entries leave the stream (all of them once none is in flight), an
//! unreachable or lost Redis fails fast and recovers, and no password is ever shown.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Raw, config, fresh_prefix, transport};
use oprec_core::{Delivery, OperationId, Transport};
use oprec_redis::{RedisTransport, RedisTransportConfig};
use oprec_testkit::transport_cases::receive_n;

/// Receives from `t` until `n` deliveries arrived; panics after `within`.
async fn poll_for(t: &RedisTransport, n: usize, within: Duration) -> Vec<Delivery> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} deliveries within {within:?}: {got:?}",
            got.len()
        );
        got.extend(
            t.receive(&common::kinds(), n - got.len(), Duration::from_millis(100))
                .await
                .expect("receive"),
        );
    }
    got
}

fn short_claim_idle(prefix: &str, claim_idle: Duration) -> RedisTransportConfig {
    RedisTransportConfig {
        claim_idle,
        ..config(prefix)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacknowledged_entries_of_a_dead_consumer_go_to_another_after_claim_idle() {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let claim_idle = Duration::from_millis(300);
    let dead = transport(short_claim_idle(&prefix, claim_idle)).await;
    let heir = transport(short_claim_idle(&prefix, claim_idle)).await;
    assert_ne!(dead.config().consumer, heir.config().consumer);

    let ids: Vec<OperationId> = (0..3).map(|_| OperationId::new()).collect();
    dead.publish(&common::wakeups(&ids)).await.expect("publish");
    let before_delivery = Instant::now();
    let taken = receive_n(&dead, 3).await;
    assert_eq!(taken.len(), 3);
    drop(dead); // dies without acknowledging

    let early = heir
        .receive(&common::kinds(), 10, Duration::ZERO)
        .await
        .expect("receive");
    assert!(early.is_empty(), "taken over before claim_idle: {early:?}");

    let got = poll_for(&heir, 3, Duration::from_secs(10)).await;
    assert!(before_delivery.elapsed() >= claim_idle);
    let frames: HashSet<OperationId> = got.iter().map(|d| d.frame.clone().unwrap()).collect();
    assert_eq!(frames, ids.iter().copied().collect());
    let tokens: HashSet<_> = got.iter().map(|d| d.ack.clone()).collect();
    assert_eq!(
        tokens,
        taken.into_iter().map(|d| d.ack).collect(),
        "the same entries, not copies"
    );

    heir.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(raw.pending(&heir.config().group).await, 0);
    assert_eq!(heir.depth(None).await.expect("depth"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_of_workers_that_are_gone_leave_the_group_once_their_entries_are_taken_over() {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let claim_idle = Duration::from_millis(500);
    let gone = transport(short_claim_idle(&prefix, claim_idle)).await;
    let holder = transport(short_claim_idle(&prefix, claim_idle)).await;
    let heir = transport(short_claim_idle(&prefix, claim_idle)).await;
    let group = heir.config().group.clone();

    // `gone` read and acknowledged; `holder` died holding one entry unacknowledged.
    gone.publish(&common::wakeups(&[OperationId::new()]))
        .await
        .expect("publish");
    let got = receive_n(&gone, 1).await;
    gone.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    let held = OperationId::new();
    holder
        .publish(&common::wakeups(&[held]))
        .await
        .expect("publish");
    assert_eq!(receive_n(&holder, 1).await.len(), 1);
    let (gone_name, holder_name) = (
        gone.config().consumer.clone(),
        holder.config().consumer.clone(),
    );
    drop((gone, holder));
    assert!(raw.consumers(&group).await.contains(&holder_name));

    // Well within the silence limit, a completed pass removes no one.
    let early = heir
        .receive(&common::kinds(), 10, Duration::ZERO)
        .await
        .expect("receive");
    assert!(early.is_empty(), "taken over too early: {early:?}");
    assert!(raw.consumers(&group).await.contains(&gone_name));

    // The heir takes the held entry over; once both are silent for 4 × claim_idle with nothing
    // pending, the next completed pass removes them.
    let taken = poll_for(&heir, 1, Duration::from_secs(10)).await;
    assert_eq!(taken[0].frame.clone().unwrap(), held);
    heir.ack(taken.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let names = raw.consumers(&group).await;
        if names == vec![heir.config().consumer.clone()] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "silent consumers still in the group: {names:?}"
        );
        heir.receive(&common::kinds(), 10, Duration::from_millis(100))
            .await
            .expect("receive");
    }
    assert_eq!(raw.pending(&group).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_entries_are_trimmed_from_the_stream() {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let t = transport(config(&prefix)).await;
    let ids: Vec<OperationId> = (0..5).map(|_| OperationId::new()).collect();
    t.publish(&common::wakeups(&ids)).await.expect("publish");
    assert_eq!(raw.xlen().await, 5);

    let got = receive_n(&t, 5).await;
    assert_eq!(got.len(), 5);
    assert_eq!(raw.xlen().await, 5, "in flight until acknowledged");
    assert_eq!(t.depth(None).await.expect("depth"), 5);

    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(raw.xlen().await, 0);
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

/// An acknowledgement trims the stream below the oldest entry still in flight, never past it nor
/// past what was never delivered, and the depth still counts what waits and what is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_entries_after_one_in_flight_wait_for_it() {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let t = transport(config(&prefix)).await;
    let ids: Vec<OperationId> = (0..20).map(|_| OperationId::new()).collect();
    t.publish(&common::wakeups(&ids[..10]))
        .await
        .expect("publish");
    let mut got = receive_n(&t, 4).await;
    assert_eq!(got.len(), 4);
    let oldest = got.remove(0);
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(raw.xlen().await, 10, "held by the oldest entry in flight");
    assert_eq!(
        t.depth(None).await.expect("depth"),
        7,
        "6 waiting, 1 in flight"
    );

    t.ack(vec![oldest.ack]).await.expect("ack");
    assert_eq!(raw.xlen().await, 6, "only the undelivered are left");
    assert_eq!(t.depth(None).await.expect("depth"), 6);

    t.publish(&common::wakeups(&ids[10..]))
        .await
        .expect("publish");
    let rest = receive_n(&t, 16).await;
    let frames: HashSet<OperationId> = rest
        .iter()
        .map(|d| *d.frame.as_ref().expect("frame"))
        .collect();
    assert_eq!(frames, ids[4..].iter().copied().collect::<HashSet<_>>());
    t.ack(rest.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(raw.xlen().await, 0);
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

/// The depth is what the broker holds: wake-ups trimmed from the stream (by hand, or by a
/// `MAXLEN`) no longer count, though the group's lag (entries added less entries read, once it
/// has read) still remembers them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_depth_after_a_trim_is_what_the_stream_holds() {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let t = transport(config(&prefix)).await;
    let ids: Vec<OperationId> = (0..50).map(|_| OperationId::new()).collect();
    t.publish(&common::wakeups(&ids)).await.expect("publish");
    assert_eq!(t.depth(None).await.expect("depth"), 50);
    // Once the group has read, its lag is entries added less entries read: a trim leaves it.
    let got = receive_n(&t, 5).await;
    assert_eq!(got.len(), 5);
    assert_eq!(
        t.depth(None).await.expect("depth"),
        50,
        "45 waiting, 5 in flight"
    );
    raw.xtrim(10).await;
    assert_eq!(raw.xlen().await, 10);
    assert_eq!(t.depth(None).await.expect("depth"), 10);
    raw.xtrim(0).await;
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    // What comes after counts again.
    t.publish(&common::wakeups(&ids[..3]))
        .await
        .expect("publish");
    assert_eq!(t.depth(None).await.expect("depth"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_redis_fails_fast_with_a_transient_error() {
    let url = "redis://alice:s3cret@127.0.0.1:1/0";
    let limit = Duration::from_secs(10);

    let started = Instant::now();
    let lazy = RedisTransport::connect_lazy(url, config(&fresh_prefix()))
        .expect("a lazy transport needs no server");
    let e = tokio::time::timeout(limit, lazy.publish(&common::wakeups(&[OperationId::new()])))
        .await
        .expect("publish hung instead of failing")
        .expect_err("nothing listens on port 1");
    assert!(e.is_transient(), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    for shown in [e.to_string(), format!("{e:?}"), format!("{lazy:?}")] {
        assert!(!shown.contains("s3cret"), "password shown: {shown}");
    }
    assert!(format!("{lazy:?}").contains("alice:***@127.0.0.1:1"));

    let started = Instant::now();
    let e = tokio::time::timeout(limit, RedisTransport::connect(url, config(&fresh_prefix())))
        .await
        .expect("connect hung instead of failing")
        .expect_err("nothing listens on port 1");
    assert!(e.is_transient(), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!format!("{e:?}").contains("s3cret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_entry_deleted_before_it_is_taken_over_is_skipped() {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let claim_idle = Duration::from_millis(200);
    let dead = transport(short_claim_idle(&prefix, claim_idle)).await;
    let heir = transport(short_claim_idle(&prefix, claim_idle)).await;
    let ids = [OperationId::new(), OperationId::new()];
    dead.publish(&common::wakeups(&ids)).await.expect("publish");
    let taken = receive_n(&dead, 2).await;
    drop(dead);
    let oprec_core::AckToken::Entry { id: deleted, .. } = &taken[0].ack else {
        panic!("not an entry id: {:?}", taken[0].ack);
    };
    raw.xdel(deleted).await;

    let got = poll_for(&heir, 1, Duration::from_secs(10)).await;
    assert_eq!(got[0].frame, Ok(ids[1]));
    assert_eq!(got[0].ack, taken[1].ack);
    heir.ack(vec![got[0].ack.clone()]).await.expect("ack");
    assert_eq!(
        raw.pending(&heir.config().group).await,
        0,
        "the deleted entry left the pending list"
    );
    assert_eq!(heir.depth(None).await.expect("depth"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_lost_with_its_group_is_recreated_on_next_use() {
    let prefix = fresh_prefix();
    let raw = Raw::connect(&prefix).await;
    let t = transport(config(&prefix)).await;
    // A first receive makes the stream and its group.
    assert!(
        t.receive(&common::kinds(), 10, Duration::ZERO)
            .await
            .expect("receive")
            .is_empty()
    );
    raw.del().await; // as a Redis restarted without persistence would
    assert_eq!(t.depth(None).await.expect("depth of a lost stream"), 0);

    let id = OperationId::new();
    t.publish(&common::wakeups(&[id]))
        .await
        .expect("publish recreates the stream");
    assert_eq!(t.depth(None).await.expect("depth"), 1);
    let got = receive_n(&t, 1).await;
    assert_eq!(got.len(), 1, "delivered once the group is recreated");
    assert_eq!(got[0].frame, Ok(id));
    t.ack(vec![got[0].ack.clone()]).await.expect("ack");
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_receive_holds_up_no_other_call() {
    let prefix = fresh_prefix();
    let _raw = Raw::connect(&prefix).await;
    let t = Arc::new(transport(config(&prefix)).await);
    let blocked = tokio::spawn({
        let t = t.clone();
        async move {
            t.receive(&common::kinds(), 10, Duration::from_secs(5))
                .await
        }
    });
    // Long enough for the read to block in Redis; the assertions are about seconds.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let started = Instant::now();
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    let id = OperationId::new();
    t.publish(&common::wakeups(&[id])).await.expect("publish");
    // The read blocks for 5 s: anything well under that did not queue behind it (2.5 s leaves
    // room for a loaded CI machine).
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "depth and publish waited {:?} behind the blocked read",
        started.elapsed()
    );
    let got = tokio::time::timeout(Duration::from_secs(3), blocked)
        .await
        .expect("the blocked read wakes on publish")
        .expect("join")
        .expect("receive");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].frame, Ok(id));
    t.ack(vec![got[0].ack.clone()]).await.expect("ack");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_wait_never_blocks() {
    let prefix = fresh_prefix();
    let _raw = Raw::connect(&prefix).await;
    let t = transport(config(&prefix)).await;
    let got = tokio::time::timeout(
        Duration::from_secs(2),
        t.receive(&common::kinds(), 10, Duration::ZERO),
    )
    .await
    .expect("a zero wait returned at once")
    .expect("receive");
    assert!(got.is_empty());
    assert!(
        t.receive(&common::kinds(), 0, Duration::from_secs(60))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `rediss://` goes through rustls, which needs a crypto provider; without one, redis panics.
/// A listener that hangs up makes the handshake fail, as an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rediss_url_fails_the_handshake_without_panicking() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hang_up = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            drop(socket);
        }
    });
    let t = RedisTransport::connect_lazy(
        &format!("rediss://127.0.0.1:{port}"),
        config(&fresh_prefix()),
    )
    .expect("a rediss URL is accepted");
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        t.publish(&common::wakeups(&[OperationId::new()])),
    )
    .await
    .expect("the handshake failed in time");
    assert!(result.is_err(), "no TLS server there");
    hang_up.abort();
}

/// One `XREADGROUP` of several streams takes up to COUNT of each; what it read beyond the
/// receive's `max` goes back to the streams at once, rather than waiting pending to this consumer
/// for `claim_idle` (30 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_of_several_kinds_hands_back_what_it_read_beyond_max() {
    let prefix = fresh_prefix();
    let _raw = Raw::connect(&prefix).await;
    let t = transport(config(&prefix)).await;
    let kinds = vec!["k.a".to_owned(), "k.b".to_owned()];
    assert!(
        t.receive(&kinds, 10, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    let ids: Vec<OperationId> = (0..6).map(|_| OperationId::new()).collect();
    let mut batch = oprec_testkit::transport_cases::wakeups(&ids[..3], "k.a");
    batch.extend(oprec_testkit::transport_cases::wakeups(&ids[3..], "k.b"));
    t.publish(&batch).await.expect("publish");

    let first = t
        .receive(&kinds, 4, Duration::from_secs(1))
        .await
        .expect("receive");
    assert_eq!(first.len(), 4, "{first:?}");
    t.ack(first.iter().map(|d| d.ack.clone()).collect())
        .await
        .expect("ack");
    let started = Instant::now();
    let rest = t
        .receive(&kinds, 10, Duration::from_secs(1))
        .await
        .expect("receive");
    assert_eq!(rest.len(), 2, "handed back at once: {rest:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let all: HashSet<OperationId> = first
        .iter()
        .chain(&rest)
        .map(|d| d.frame.clone().unwrap())
        .collect();
    assert_eq!(all, ids.iter().copied().collect());
    t.ack(rest.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}
