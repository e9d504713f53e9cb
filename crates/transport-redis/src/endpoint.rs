//! The Redis server a transport talks to: a `redis::Client` with the socket options a long-lived
//! worker wants, and a description of it that is safe to log.

use std::fmt;
use std::time::Duration;

use oprec_core::Result;
use redis::io::tcp::socket2::TcpKeepalive;
use redis::{Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo};

use crate::error::backend_error;

/// A parsed Redis URL. Its `Display` and `Debug` never show the password.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// Opens connections; holds the credentials.
    pub client: Client,
    redacted: String,
}

impl Endpoint {
    /// Parses `redis://`, `rediss://` (TLS) or `unix://` URLs. Sockets get `TCP_NODELAY` (wake-ups
    /// are small and latency-bound) and keepalive probes, so a peer that vanished without closing
    /// the connection is noticed and the connection replaced.
    pub fn parse(url: &str) -> Result<Self> {
        let info = url.into_connection_info().map_err(backend_error)?;
        let tcp = info.tcp_settings().clone().set_nodelay(true).set_keepalive(
            TcpKeepalive::new()
                .with_time(Duration::from_secs(30))
                .with_interval(Duration::from_secs(10)),
        );
        let info = info.set_tcp_settings(tcp);
        if matches!(info.addr(), ConnectionAddr::TcpTls { .. }) {
            // redis builds its rustls config from the process-wide crypto provider and panics
            // when there is none (or when two are compiled in and none was chosen). An error here
            // only means another part of the program installed one first, which is as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let redacted = redact(&info);
        let client = Client::open(info).map_err(backend_error)?;
        Ok(Endpoint { client, redacted })
    }
}

/// `scheme://[user:***@]host:port/db`, rebuilt from the parsed URL so that nothing secret in it
/// (password, `?pass=` of a unix socket URL) can leak through.
fn redact(info: &ConnectionInfo) -> String {
    let scheme = match info.addr() {
        ConnectionAddr::TcpTls { .. } => "rediss",
        ConnectionAddr::Unix(_) => "unix",
        _ => "redis",
    };
    let settings = info.redis_settings();
    let credentials = match (settings.username(), settings.password()) {
        (Some(user), Some(_)) => format!("{user}:***@"),
        (Some(user), None) => format!("{user}@"),
        (None, Some(_)) => ":***@".to_owned(),
        (None, None) => String::new(),
    };
    format!("{scheme}://{credentials}{}/{}", info.addr(), settings.db())
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.redacted, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(url: &str) -> String {
        Endpoint::parse(url).expect("parses").to_string()
    }

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            shown("redis://alice:s3cret@127.0.0.1:6380/2"),
            "redis://alice:***@127.0.0.1:6380/2"
        );
        assert_eq!(
            shown("redis://:s3cret@localhost"),
            "redis://:***@localhost:6379/0"
        );
        assert_eq!(
            shown("rediss://bob:p%40ss@cache.internal:6380"),
            "rediss://bob:***@cache.internal:6380/0"
        );
        assert_eq!(
            shown("unix:///run/redis.sock?pass=s3cret&db=1"),
            "unix://:***@/run/redis.sock/1"
        );
        let parsed = Endpoint::parse("redis://alice:s3cret@127.0.0.1").unwrap();
        assert!(!format!("{parsed:?}").contains("s3cret"));
        assert!(!format!("{:?}", parsed.client).contains("s3cret"));
    }

    #[test]
    fn a_bad_url_is_a_permanent_error_without_the_url() {
        let e = Endpoint::parse("http://alice:s3cret@x").unwrap_err();
        assert!(!e.is_transient());
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
