//! The Redis server (or Redis Cluster) a transport talks to: a client with the socket options a
//! long-lived worker wants, and a description of it that is safe to log.

use std::fmt;
use std::time::Duration;

use oprec_core::Result;
use redis::cluster::ClusterClient;
use redis::io::tcp::socket2::TcpKeepalive;
use redis::{Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo};

use crate::error::backend_error;

/// A parsed Redis URL. Its `Display` and `Debug` never show the password.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// Opens connections; holds the credentials.
    pub target: Target,
    redacted: String,
}

/// One server, or a cluster reached through some of its nodes.
#[derive(Clone)]
pub(crate) enum Target {
    /// A single Redis (or one behind a proxy).
    Single(Box<Client>),
    /// A Redis Cluster: commands go to the node that holds their keys' slot.
    Cluster(Box<ClusterClient>),
}

/// The URL schemes of a Redis Cluster: `redis+cluster://host:port,host:port/`, and
/// `rediss+cluster://` with TLS.
const CLUSTER_SCHEMES: [(&str, &str); 2] = [
    ("redis+cluster://", "redis://"),
    ("rediss+cluster://", "rediss://"),
];

impl Endpoint {
    /// Parses `redis://`, `rediss://` (TLS) or `unix://` URLs, or a cluster's
    /// `redis+cluster://[user:password@]host:port,host:port,...` (`rediss+cluster://` for TLS):
    /// the nodes listed are where the client learns the cluster's layout, and need not be all.
    /// Sockets get `TCP_NODELAY` (wake-ups are small and latency-bound) and keepalive probes, so
    /// a peer that vanished without closing the connection is noticed and the connection replaced.
    pub fn parse(url: &str) -> Result<Self> {
        if let Some((rest, node_scheme)) = CLUSTER_SCHEMES
            .iter()
            .find_map(|(scheme, node)| url.strip_prefix(scheme).map(|rest| (rest, *node)))
        {
            return Self::parse_cluster(rest, node_scheme);
        }
        let info = tuned(url.into_connection_info().map_err(backend_error)?);
        let scheme = match info.addr() {
            ConnectionAddr::TcpTls { .. } => "rediss://",
            ConnectionAddr::Unix(_) => "unix://",
            _ => "redis://",
        };
        let redacted = redact(
            scheme,
            &info,
            &format!("{}/{}", info.addr(), info.redis_settings().db()),
        );
        let client = Client::open(info).map_err(backend_error)?;
        Ok(Endpoint {
            target: Target::Single(Box::new(client)),
            redacted,
        })
    }

    fn parse_cluster(rest: &str, node_scheme: &str) -> Result<Self> {
        let (authority, tail) = match rest.find(['/', '?']) {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let (credentials, hosts) = match authority.rsplit_once('@') {
            Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
            None => (String::new(), authority),
        };
        let hosts: Vec<&str> = hosts.split(',').filter(|h| !h.trim().is_empty()).collect();
        if hosts.is_empty() {
            return Err(oprec_core::Error::InvalidInput(
                "a redis+cluster:// URL names at least one node: redis+cluster://host:port,host:port"
                    .into(),
            ));
        }
        let nodes = hosts
            .iter()
            .map(|host| {
                format!("{node_scheme}{credentials}{host}{tail}")
                    .into_connection_info()
                    .map(tuned)
                    .map_err(backend_error)
            })
            .collect::<Result<Vec<_>>>()?;
        let shown: Vec<String> = nodes.iter().map(|n| n.addr().to_string()).collect();
        let scheme = node_scheme.replace("://", "+cluster://");
        let redacted = redact(&scheme, &nodes[0], &shown.join(","));
        let client = ClusterClient::builder(nodes)
            .build()
            .map_err(backend_error)?;
        Ok(Endpoint {
            target: Target::Cluster(Box::new(client)),
            redacted,
        })
    }
}

/// The socket options every connection gets; installs the TLS crypto provider when needed.
fn tuned(info: ConnectionInfo) -> ConnectionInfo {
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
    info
}

/// `scheme[user:***@]where`, rebuilt from the parsed URL (so that nothing else in it, such as the
/// `?pass=` of a unix socket URL, can leak through) and masked by [`oprec_core::redact_url`].
fn redact(scheme: &str, info: &ConnectionInfo, place: &str) -> String {
    let settings = info.redis_settings();
    let user = settings.username().unwrap_or_default();
    let credentials = match settings.password() {
        Some(password) => format!("{user}:{password}@"),
        None if user.is_empty() => String::new(),
        None => format!("{user}@"),
    };
    oprec_core::redact_url(&format!("{scheme}{credentials}{place}"))
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
        let Target::Single(client) = &parsed.target else {
            panic!("one server");
        };
        assert!(!format!("{client:?}").contains("s3cret"));
        assert_eq!(
            shown("redis+cluster://:s3cret@127.0.0.1:7000,127.0.0.1:7001/"),
            "redis+cluster://:***@127.0.0.1:7000,127.0.0.1:7001"
        );
        assert_eq!(
            shown("redis+cluster://10.0.0.1:7000"),
            "redis+cluster://10.0.0.1:7000"
        );
        let cluster = Endpoint::parse("redis+cluster://u:s3cret@h1:1,h2:2").unwrap();
        assert!(matches!(cluster.target, Target::Cluster(_)));
        assert!(!format!("{cluster:?}").contains("s3cret"));
    }

    #[test]
    fn a_bad_url_is_a_permanent_error_without_the_url() {
        for url in [
            "http://alice:s3cret@x",
            "redis+cluster://alice:s3cret@",
            "redis+cluster://alice:s3cret@h:notaport",
        ] {
            let e = Endpoint::parse(url).unwrap_err();
            assert!(!e.is_transient(), "{url}");
            assert!(!e.to_string().contains("s3cret"), "{e}");
        }
    }
}
