//! `oprec worker --metrics-listen ADDR`: Prometheus metrics over HTTP. The worker itself emits
//! them (the runtime's `metrics` feature: its counters, the handler histogram, and every few
//! seconds the store's figures as gauges); this module only installs the Prometheus exporter.

use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use oprec::runtime::metrics::{LATENCY_BUCKETS, describe, names};

use crate::exit::BadInput;

/// How often the store's figures are read.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

/// Parses `--metrics-listen` (`127.0.0.1:9464`, `[::]:9464`).
pub(crate) fn address(text: &str) -> Result<SocketAddr, BadInput> {
    text.trim().parse().map_err(|_| {
        BadInput(format!(
            "--metrics-listen {:?} is not an address to listen on; write it like 127.0.0.1:9464 \
             or 0.0.0.0:9464",
            crate::output::cut(text, 64)
        ))
    })
}

/// Installs the Prometheus recorder and starts its HTTP listener on `addr` (any path answers),
/// with the runtime's names, help texts and latency buckets.
pub(crate) fn install(addr: SocketAddr) -> anyhow::Result<()> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(
            Matcher::Full(names::HANDLER_DURATION.into()),
            &LATENCY_BUCKETS,
        )?
        .install()
        .map_err(|e| anyhow::anyhow!("cannot serve metrics on {addr}: {e}"))?;
    describe();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked() {
        assert_eq!(address("127.0.0.1:9464").unwrap().port(), 9464);
        assert!(address("[::1]:9464").is_ok());
        assert!(address("localhost").is_err());
        assert!(address("127.0.0.1:99999").is_err());
    }
}
