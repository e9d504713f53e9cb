//! The transport conformance suite against [`MemoryTransport`], the in-memory transport of the
//! embedded default: it must behave like the brokers do for every case the suite checks.

use oprec_runtime::MemoryTransport;
use oprec_testkit::transport_cases::TransportHarness;

/// A fresh queue, and an injector that puts raw bytes on it as one message.
async fn setup() -> TransportHarness<MemoryTransport> {
    let transport = MemoryTransport::new();
    let raw = transport.clone();
    TransportHarness {
        transport,
        inject: Box::new(move |kind, bytes| {
            let raw = raw.clone();
            Box::pin(async move { raw.inject_raw(&kind, bytes).await })
        }),
    }
}

oprec_testkit::transport_conformance_tests!(setup);
