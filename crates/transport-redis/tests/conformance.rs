//! The transport conformance suite, against a real Redis.

mod common;

use common::setup;
use oprec_core::Transport;
use oprec_core::frame::FrameError;
use oprec_testkit::transport_cases::receive_n;

oprec_testkit::transport_conformance_tests!(setup);

/// An entry written by something else (another field name, a binary field name, extra fields)
/// is a garbage delivery to acknowledge, and spoils neither its batch nor the good frame in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_without_the_frame_field_is_a_garbage_delivery() {
    let prefix = common::fresh_prefix();
    let raw = common::Raw::connect(&prefix).await;
    let t = common::transport(common::config(&prefix)).await;
    let good = oprec_core::OperationId::new();
    raw.xadd(b"frame", oprec_core::frame::encode(good)).await;
    raw.xadd(&[0xff, 0xfe], b"not utf-8 field name".to_vec())
        .await;
    t.publish(&common::wakeups(&[good])).await.expect("publish");

    let got = receive_n(&t, 3).await;
    assert_eq!(got.len(), 3, "{got:?}");
    for d in &got[..2] {
        assert!(
            matches!(&d.frame, Err(FrameError::Malformed(why)) if why.contains("no field")),
            "{d:?}"
        );
    }
    assert_eq!(got[2].frame, Ok(good));
    t.ack(got.into_iter().map(|d| d.ack).collect())
        .await
        .expect("ack");
    assert_eq!(t.depth(None).await.expect("depth"), 0);
    assert_eq!(raw.xlen().await, 0);
}
