//! What the conformance suite cannot show: redelivery to another consumer, the prefetch bound,
//! outages (unreachable broker, refused credentials, a connection closed by the broker) and that
//! the password never shows.

mod common;

use std::collections::HashSet;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::{QueueGuard, amqp_url, fresh_config, transport};
use oprec_amqp::{AmqpTransport, AmqpTransportConfig};
use oprec_core::{AckToken, Error, OperationId, Transport};
use oprec_testkit::transport_cases::receive_n;
use tokio::time::Instant;

fn ids(n: usize) -> Vec<OperationId> {
    (0..n).map(|_| OperationId::new()).collect()
}

fn frames(deliveries: &[oprec_core::Delivery]) -> HashSet<OperationId> {
    deliveries
        .iter()
        .map(|d| d.frame.clone().expect("a good frame"))
        .collect()
}

fn acks(deliveries: &[oprec_core::Delivery]) -> Vec<AckToken> {
    deliveries.iter().map(|d| d.ack.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacknowledged_deliveries_come_back_to_the_next_transport() {
    let config = fresh_config();
    let _queue = QueueGuard::new(&config);
    let first = transport(config.clone()).await;
    let published = ids(5);
    first
        .publish(&common::wakeups(&published))
        .await
        .expect("publish");
    let taken = receive_n(&first, 5).await;
    assert_eq!(frames(&taken), published.iter().copied().collect());
    drop(first);

    let second = transport(config.clone()).await;
    let again = receive_n(&second, 5).await;
    assert_eq!(frames(&again), published.iter().copied().collect());
    // The first transport's tokens mean nothing here; acknowledging them changes nothing.
    second.ack(acks(&taken)).await.expect("stale ack");
    assert_eq!(second.depth(None).await.expect("depth"), 5);
    second.ack(acks(&again)).await.expect("ack");
    assert_eq!(second.depth(None).await.expect("depth"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetch_bounds_what_one_receive_takes() {
    let config = AmqpTransportConfig {
        prefetch: 10,
        ..fresh_config()
    };
    let _queue = QueueGuard::new(&config);
    let t = transport(config.clone()).await;
    t.publish(&common::wakeups(&ids(100)))
        .await
        .expect("publish");
    // Depth is the ready messages plus the ten held here.
    assert_eq!(t.depth(None).await.expect("depth"), 100);
    let got = t
        .receive(&common::kinds(), 1000, Duration::from_millis(500))
        .await
        .expect("receive");
    assert!(
        (1..=10).contains(&got.len()),
        "prefetch 10, yet one receive took {}",
        got.len()
    );
    let mut seen = got.len();
    t.ack(acks(&got)).await.expect("ack");
    // Acknowledging lets the broker send more; the rest arrive in later receives.
    while seen < 100 {
        let got = t
            .receive(&common::kinds(), 1000, Duration::from_secs(2))
            .await
            .expect("receive");
        assert!(!got.is_empty(), "stalled after {seen} of 100");
        assert!(
            got.len() <= 10,
            "prefetch 10, yet one receive took {}",
            got.len()
        );
        seen += got.len();
        t.ack(acks(&got)).await.expect("ack");
    }
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

/// What another process's consumer holds prefetched is not in this process's depth; the bound
/// of it is the other consumers' prefetch windows (its own consumer is not counted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_consumers_prefetch_windows_bound_what_depth_cannot_see() {
    let config = AmqpTransportConfig {
        prefetch: 10,
        ..fresh_config()
    };
    let _queue = QueueGuard::new(&config);
    let watcher = transport(config.clone()).await;
    let worker = transport(config.clone()).await;
    let kind = common::kinds()[0].clone();
    watcher
        .publish(&common::wakeups(&ids(30)))
        .await
        .expect("publish");
    assert_eq!(watcher.depth_unseen_bound(&kind).await.expect("bound"), 0);
    // The worker's consumer starts with its first receive and is pushed up to 10.
    let got = worker
        .receive(&common::kinds(), 1, Duration::from_millis(500))
        .await
        .expect("receive");
    assert_eq!(got.len(), 1);
    let seen = poll_depth(&watcher, 20).await;
    assert_eq!(seen, 20, "the watcher sees the ready messages only");
    assert_eq!(
        watcher.depth_unseen_bound(&kind).await.expect("bound"),
        10,
        "one other consumer, a window of 10"
    );
    assert_eq!(
        worker.depth_unseen_bound(&kind).await.expect("bound"),
        0,
        "its own consumer's deliveries are in its own depth"
    );
    assert_eq!(worker.depth(None).await.expect("depth"), 30);
    worker.ack(acks(&got)).await.expect("ack");
}

/// The watcher's depth once it reads `want` (the broker moves prefetched messages out of the
/// ready count as it sends them), 5 s at most; the last depth read otherwise.
async fn poll_depth(t: &AmqpTransport, want: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let d = t.depth(None).await.expect("depth");
        if d == want || Instant::now() >= deadline {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depth_and_purge_do_not_wait_for_a_waiting_receive() {
    let config = fresh_config();
    let _queue = QueueGuard::new(&config);
    let t = Arc::new(transport(config.clone()).await);
    let waiting = tokio::spawn({
        let t = t.clone();
        async move {
            t.receive(&common::kinds(), 10, Duration::from_secs(20))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    assert_eq!(t.purge(None).await.expect("purge"), 0);
    // The receive waits 20 s: anything well under that did not queue behind it.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "depth and purge waited {:?} behind a receive",
        started.elapsed()
    );
    // The receive kept waiting and gets what is published next.
    let id = OperationId::new();
    t.publish(&common::wakeups(&[id])).await.expect("publish");
    let got = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the receive returns once a wake-up arrives")
        .expect("receive task")
        .expect("receive");
    assert_eq!(frames(&got), HashSet::from([id]));
    t.ack(acks(&got)).await.expect("ack");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_is_a_prompt_transient_error() {
    let url = "amqp://guest:pw-unreachable-42@127.0.0.1:1/%2f";
    let config = AmqpTransportConfig {
        connect_timeout: Duration::from_secs(2),
        ..fresh_config()
    };
    let started = Instant::now();
    let error = AmqpTransport::connect(url, config.clone())
        .await
        .expect_err("nothing listens on port 1");
    assert_transient_and_redacted(&error, "pw-unreachable-42");

    // Built lazily, the transport answers every call with a transient error, and keeps doing so.
    let lazy = AmqpTransport::connect_lazy(url, config).expect("a well-formed URL");
    assert!(
        !format!("{lazy:?}").contains("pw-unreachable-42"),
        "{lazy:?}"
    );
    for _ in 0..2 {
        let error = lazy
            .publish(&common::wakeups(&ids(1)))
            .await
            .expect_err("publish");
        assert_transient_and_redacted(&error, "pw-unreachable-42");
        let error = lazy
            .receive(&common::kinds(), 10, Duration::from_secs(30))
            .await
            .expect_err("receive");
        assert_transient_and_redacted(&error, "pw-unreachable-42");
        let error = lazy.depth(None).await.expect_err("depth");
        assert_transient_and_redacted(&error, "pw-unreachable-42");
        let error = lazy.purge(None).await.expect_err("purge");
        assert_transient_and_redacted(&error, "pw-unreachable-42");
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_are_a_permanent_error_without_the_password() {
    let url = with_credentials(&amqp_url(), "oprec-nobody", "pw-refused-42");
    let error = AmqpTransport::connect(&url, fresh_config())
        .await
        .expect_err("RabbitMQ refuses an unknown user");
    assert!(
        !error.is_transient(),
        "RabbitMQ (OPREC_TEST_AMQP_URL) must be reachable to refuse the login: {error}"
    );
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("pw-refused-42"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_url_is_refused_without_its_password() {
    let error =
        AmqpTransport::connect_lazy("amqp://u:pw-malformed-42@host:notaport/%2f", fresh_config())
            .expect_err("the port is not a number");
    assert!(matches!(error, Error::InvalidInput(_)), "{error:?}");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("pw-malformed-42"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_the_broker_closes_the_connection() {
    let config = fresh_config();
    let _queue = QueueGuard::new(&config);
    let t = transport(config.clone()).await;
    let before = OperationId::new();
    t.publish(&common::wakeups(&[before]))
        .await
        .expect("publish");
    let held = receive_n(&t, 1).await;
    assert_eq!(frames(&held), HashSet::from([before]));

    close_connection_named(&config.connection_name);

    // Calls fail with transient errors until the transport has reconnected, then work.
    let after = OperationId::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match t.publish(&common::wakeups(&[after])).await {
            Ok(()) => break,
            Err(e) => {
                assert!(e.is_transient(), "{e:?}");
                assert!(Instant::now() < deadline, "no reconnect within 10 s: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    // The delivery the old connection held comes back, beside the new one.
    let got = receive_n(&t, 2).await;
    assert_eq!(frames(&got), HashSet::from([before, after]));
    t.ack(acks(&held)).await.expect("a stale ack is skipped");
    assert_eq!(t.depth(None).await.expect("depth"), 2);
    t.ack(acks(&got)).await.expect("ack");
    assert_eq!(t.depth(None).await.expect("depth"), 0);
}

fn assert_transient_and_redacted(error: &Error, password: &str) {
    assert!(error.is_transient(), "{error:?}");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(password), "{shown}");
}

/// `url` with its user and password replaced.
fn with_credentials(url: &str, user: &str, password: &str) -> String {
    let start = url.find("://").expect("a URL") + 3;
    let host = url[start..].find('@').map_or(start, |at| start + at + 1);
    format!("{}{user}:{password}@{}", &url[..start], &url[host..])
}

/// Closes, from the broker's side, only the connection that carries `name` in its client
/// properties (never anyone else's).
fn close_connection_named(name: &str) {
    let listing = rabbitmqctl(&["list_connections", "--silent", "pid", "client_properties"]);
    let ours: Vec<&str> = listing
        .lines()
        .filter(|line| line.contains(name))
        .filter_map(|line| line.split('\t').next())
        .collect();
    assert_eq!(
        ours.len(),
        1,
        "expected one connection named {name:?}:\n{listing}"
    );
    rabbitmqctl(&["close_connection", ours[0], "oprec test: forced close"]);
}

fn rabbitmqctl(args: &[&str]) -> String {
    let output = Command::new("rabbitmqctl")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("rabbitmqctl is required for this test: {e}"));
    assert!(
        output.status.success(),
        "rabbitmqctl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Receives `n` deliveries of `kind` alone.
async fn receive_of(t: &AmqpTransport, kind: &str, n: usize) -> Vec<oprec_core::Delivery> {
    let mut all = Vec::new();
    while all.len() < n {
        let got = t
            .receive(&[kind.to_owned()], n - all.len(), Duration::from_secs(2))
            .await
            .expect("receive");
        assert!(
            !got.is_empty(),
            "{kind}'s wake-ups stalled at {}",
            all.len()
        );
        all.extend(got);
    }
    all
}

/// Two kinds' consumers share the receiving channel, whose delivery tags count both: acknowledging
/// one kind's deliveries never covers the other's that wait unseen in the client (a `multiple`
/// acknowledgement up to the newest tag would, and the broker then closes the channel on the
/// other's own acknowledgement: "unknown delivery tag").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledging_one_kind_leaves_the_other_kinds_deliveries_alone() {
    let config = fresh_config();
    let (a, b) = (
        oprec_testkit::transport_cases::KIND,
        oprec_testkit::transport_cases::OTHER_KINDS[0],
    );
    let _queue = QueueGuard::new(&config);
    let t = transport(config.clone()).await;
    let of = |kind: &str, n: usize| -> Vec<oprec_core::WakeUp> {
        oprec_testkit::transport_cases::wakeups(&ids(n), kind)
    };
    t.publish(&of(b, 5)).await.expect("publish b");
    // b's consumer starts first: the broker sends b's five (the channel's lowest tags), and
    // the client keeps the four not taken.
    let first_b = t
        .receive(&[b.to_owned()], 1, Duration::from_secs(2))
        .await
        .expect("receive b");
    assert_eq!(first_b.len(), 1);
    t.publish(&of(a, 5)).await.expect("publish a");
    let got_a = receive_of(&t, a, 5).await;
    // With the first of b acknowledged, this link holds only a's, whose tags are all newer than
    // b's four waiting in the client.
    t.ack(acks(&first_b)).await.expect("ack the first of b");
    t.ack(acks(&got_a)).await.expect("ack a");
    let got_b = receive_of(&t, b, 4).await;
    t.ack(acks(&got_b))
        .await
        .expect("b's own acknowledgement: its tags were not covered by a's");
    // The channel is still open: everything was acknowledged once, and nothing is left.
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    let more = t
        .receive(
            &[a.to_owned(), b.to_owned()],
            10,
            Duration::from_millis(300),
        )
        .await
        .expect("the channel still works");
    assert!(more.is_empty(), "nothing was left to deliver: {more:?}");
}
