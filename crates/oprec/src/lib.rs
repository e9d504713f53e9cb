//! oprec: durable operation records for background work.
//!
//! Each unit of work is a row (identity, kind, immutable payload, status, attempts, next eligible
//! time, deadline, failure class, last error, attempt history) in PostgreSQL or SQLite. A broker,
//! when there is one, only carries "attempt operation N now", so purging or losing it never erases
//! intent. This facade re-exports [`oprec_core`] and [`oprec_runtime`] and, by Cargo feature, the
//! stores and transports:
//!
//! | feature | what it adds |
//! | --- | --- |
//! | `sqlite` (default) | [`sqlite::SqliteStore`], the embedded store |
//! | `postgres` | [`postgres::PgStore`], the production store |
//! | `redis` | [`redis::RedisTransport`], wake-ups on Redis Streams |
//! | `amqp` | [`amqp::AmqpTransport`], wake-ups on RabbitMQ |
//!
//! The in-memory transport ([`MemoryTransport`]) is always there, and so are the operator
//! workflows ([`ops`]: re-drive, quarantine, release, cancel, resolve, pause, with their input
//! grammar and audit trail), the same ones the `oprec` CLI and the dashboard run.
//! [`connect`], [`open`] and [`connect_transport`] pick a backend by URL at run time, for
//! binaries that let an operator choose; libraries should use the concrete types.

pub use oprec_core::*;
pub use oprec_ops as ops;
pub use oprec_runtime as runtime;
pub use oprec_runtime::{
    AfterCommit, Client, Context, Fenced, Kind, MemoryTransport, PayloadMode, Reconciled, Registry,
    Worker, WorkerConfig,
};

#[cfg(feature = "amqp")]
pub use oprec_amqp as amqp;
#[cfg(feature = "postgres")]
pub use oprec_postgres as postgres;
#[cfg(feature = "redis")]
pub use oprec_redis as redis;
#[cfg(feature = "sqlite")]
pub use oprec_sqlite as sqlite;

#[cfg(any(feature = "redis", feature = "amqp", test))]
mod transport_url;

use std::sync::Arc;

fn scheme(url: &str) -> &str {
    url.split_once(':').map(|(s, _)| s).unwrap_or(url)
}

/// How [`open`] connects.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// The clock the store judges time by (a manual clock in tests and simulations); `None` is
    /// the system clock (and, on PostgreSQL, the database's own).
    pub clock: Option<Arc<dyn Clock>>,
    /// How long opening a server-backed store may take before it fails: a driver may otherwise
    /// retry a refused connection for much longer.
    pub timeout: std::time::Duration,
    /// The most sessions a PostgreSQL store's pool opens; `None` is the store's default (10).
    /// Each process holds up to that many of the server's `max_connections`. SQLite keeps its own
    /// pool and ignores it.
    pub max_connections: Option<u32>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            clock: None,
            timeout: std::time::Duration::from_secs(10),
            max_connections: None,
        }
    }
}

/// A store a URL named, as its concrete type, for what only that backend can do (its pool).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyStore {
    /// `postgres://` and `postgresql://` URLs.
    #[cfg(feature = "postgres")]
    Postgres(postgres::PgStore),
    /// `sqlite:` URLs.
    #[cfg(feature = "sqlite")]
    Sqlite(sqlite::SqliteStore),
}

impl AnyStore {
    /// The store behind every store trait.
    pub fn to_dyn(&self) -> Arc<dyn FullStore> {
        // A build with no store feature has no store to open: the enum has no values.
        #[cfg(not(any(feature = "postgres", feature = "sqlite")))]
        match *self {}
        #[cfg(any(feature = "postgres", feature = "sqlite"))]
        match self {
            #[cfg(feature = "postgres")]
            AnyStore::Postgres(s) => Arc::new(s.clone()),
            #[cfg(feature = "sqlite")]
            AnyStore::Sqlite(s) => Arc::new(s.clone()),
        }
    }
}

/// Opens the store a URL names: `postgres://` or `postgresql://` (feature `postgres`), `sqlite:`
/// (feature `sqlite`). Does not migrate. Errors never show a password of the URL.
pub async fn open(url: &str, options: &ConnectOptions) -> Result<AnyStore> {
    if let Some(e) = oprec_core::url_shape_error(url) {
        return Err(Error::InvalidInput(e));
    }
    match scheme(url) {
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => {
            let hint = oprec_core::url_encoding_hint(url);
            let sessions = options
                .max_connections
                .unwrap_or(postgres::DEFAULT_MAX_CONNECTIONS);
            let connect = postgres::PgStore::connect_sized(url, sessions);
            let store = tokio::time::timeout(options.timeout, connect)
                .await
                .map_err(|_| {
                    Error::backend(
                        true,
                        format!(
                            "no answer from {} within {} s",
                            redact_url(url),
                            options.timeout.as_secs()
                        ),
                    )
                })?
                .map_err(|e| match e {
                    Error::Backend { transient, source } if !hint.is_empty() => {
                        Error::backend(transient, format!("{source}{hint}"))
                    }
                    Error::InvalidInput(m) => Error::InvalidInput(format!("{m}{hint}")),
                    other => other,
                })?;
            Ok(AnyStore::Postgres(match &options.clock {
                Some(c) => store.with_clock(c.clone()),
                None => store,
            }))
        }
        #[cfg(feature = "sqlite")]
        "sqlite" => {
            let store = sqlite::SqliteStore::connect(url).await?;
            Ok(AnyStore::Sqlite(match &options.clock {
                Some(c) => store.with_clock(c.clone()),
                None => store,
            }))
        }
        other => {
            let _ = options;
            Err(Error::InvalidInput(format!(
                "unsupported database URL {} (scheme {other:?}); use one of: {}",
                redact_url(url),
                supported_database_schemes().join(", ")
            )))
        }
    }
}

/// Connects to the store a URL names with the default options and returns it behind every store
/// trait; see [`open`].
pub async fn connect(url: &str) -> Result<Arc<dyn FullStore>> {
    Ok(open(url, &ConnectOptions::default()).await?.to_dyn())
}

/// The database URL schemes this build was compiled with.
pub fn supported_database_schemes() -> Vec<&'static str> {
    let mut v = Vec::new();
    if cfg!(feature = "postgres") {
        v.push("postgres://");
    }
    if cfg!(feature = "sqlite") {
        v.push("sqlite:");
    }
    v
}

/// The transport a URL names: `memory://` (in this process only), `redis://` / `rediss://`, or a
/// Redis Cluster's `redis+cluster://host:port,host:port` / `rediss+cluster://` (feature `redis`),
/// `amqp://` / `amqps://` (feature `amqp`), or `poll` / `none` for no broker
/// (workers poll the store; `Ok(None)`). Broker transports connect lazily, so an enqueue still
/// commits while the broker is down.
///
/// A few query parameters choose where the wake-ups go, so that several deployments (or tests)
/// can share one broker; they are removed before the URL reaches the driver. The driver's own
/// parameters (`protocol`, `db`, `user`, `pass` for Redis; `heartbeat`, `frame_max`,
/// `channel_max`, `connection_timeout`, `auth_mechanism` for AMQP) are passed on untouched, and
/// any other parameter is refused, naming the likeliest one meant: a typo such as `strem=` would
/// otherwise fall back to the shared default silently.
///
/// | parameter | URL | meaning (default) |
/// | --- | --- | --- |
/// | `prefix=NAME` | `redis://` | the key prefix: kind K's stream is `{NAME}:kind:K`, the set of kinds `{NAME}:kinds` (`oprec:wakeups`); `stream=` is its older name |
/// | `group=NAME` | `redis://` | the consumer group of every kind's stream (`oprec-workers`) |
/// | `prefix=NAME` | `amqp://` | the direct exchange, and the start of kind K's queue `NAME.K` (`oprec.wakeups`); `queue=` is its older name |
/// | `queue_type=classic\|quorum` | `amqp://` | the kind queues' type (the broker's default); quorum for a RabbitMQ cluster |
/// | `prefetch=N` | `amqp://` | unacknowledged deliveries the broker hands one worker per kind (128) |
/// | `queue_expires=SECONDS` | `amqp://` | the broker deletes a kind's queue after it has had no consumer for this long (never) |
///
/// For example `redis://127.0.0.1:6379/0?prefix=billing&group=billing`,
/// `redis+cluster://10.0.0.1:7000,10.0.0.2:7000?prefix=billing` or
/// `amqp://guest:guest@127.0.0.1:5672/%2f?prefix=billing.wakeups&queue_type=quorum`. Values are
/// percent-decoded. Every process sharing a broker must name the prefix (and the queue type)
/// alike. A parameter meant for the other broker, an unknown parameter, an empty value or a
/// repeated parameter is refused as invalid input.
pub fn connect_transport(url: &str) -> Result<Option<Arc<dyn Transport>>> {
    if let Some(e) = oprec_core::url_shape_error(url) {
        return Err(Error::InvalidInput(e));
    }
    // Nothing connects here: an error is the URL's, named with it (never its password).
    #[cfg(any(feature = "redis", feature = "amqp"))]
    let named = |e: Error| match e {
        Error::InvalidInput(m) => {
            Error::InvalidInput(format!("{m}{}", oprec_core::url_encoding_hint(url)))
        }
        other => Error::InvalidInput(format!(
            "the transport URL {}: {other}{}",
            redact_url(url),
            oprec_core::url_encoding_hint(url)
        )),
    };
    match scheme(url) {
        "poll" | "none" | "" => Ok(None),
        "memory" => Ok(Some(Arc::new(MemoryTransport::new()))),
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+cluster" | "rediss+cluster" => {
            let (url, config) = redis_config(url)?;
            Ok(Some(Arc::new(
                redis::RedisTransport::connect_lazy(&url, config).map_err(named)?,
            )))
        }
        #[cfg(feature = "amqp")]
        "amqp" | "amqps" => {
            let (url, config) = amqp_config(url)?;
            Ok(Some(Arc::new(
                amqp::AmqpTransport::connect_lazy(&url, config).map_err(named)?,
            )))
        }
        other => Err(Error::InvalidInput(format!(
            "unsupported transport URL scheme {other:?} in {}; this build supports: {}",
            redact_url(url),
            supported_transport_schemes().join(", ")
        ))),
    }
}

/// The transport URL schemes this build was compiled with.
pub fn supported_transport_schemes() -> Vec<&'static str> {
    let mut v = vec!["memory://", "poll"];
    if cfg!(feature = "redis") {
        v.push("redis://");
        v.push("redis+cluster://");
    }
    if cfg!(feature = "amqp") {
        v.push("amqp://");
    }
    v
}

/// The driver's URL and the Redis transport's settings from a `redis://` URL's parameters.
#[cfg(feature = "redis")]
fn redis_config(url: &str) -> Result<(String, redis::RedisTransportConfig)> {
    let (url, mut p) = transport_url::take(url, "redis")?;
    let mut config = redis::RedisTransportConfig::default();
    match (p.remove("prefix"), p.remove("stream")) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidInput(format!(
                "prefix= and stream= (its older name) are both given in {}",
                redact_url(&url)
            )));
        }
        (Some(prefix), None) | (None, Some(prefix)) => config.prefix = prefix,
        (None, None) => {}
    }
    if let Some(group) = p.remove("group") {
        config.group = group;
    }
    Ok((url, config))
}

/// The driver's URL and the AMQP transport's settings from an `amqp://` URL's parameters.
#[cfg(feature = "amqp")]
fn amqp_config(url: &str) -> Result<(String, amqp::AmqpTransportConfig)> {
    let (url, mut p) = transport_url::take(url, "amqp")?;
    let mut config = amqp::AmqpTransportConfig::default();
    match (p.remove("prefix"), p.remove("queue")) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidInput(format!(
                "prefix= and queue= (its older name) are both given in {}",
                redact_url(&url)
            )));
        }
        (Some(prefix), None) | (None, Some(prefix)) => config.prefix = prefix,
        (None, None) => {}
    }
    if let Some(queue_type) = p.remove("queue_type") {
        if !matches!(queue_type.as_str(), "classic" | "quorum") {
            return Err(Error::InvalidInput(format!(
                "queue_type={queue_type:?} in {} is not classic or quorum",
                redact_url(&url)
            )));
        }
        config.queue_type = Some(queue_type);
    }
    if let Some(secs) = p.remove("queue_expires") {
        let secs: u64 = secs.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
            Error::InvalidInput(format!(
                "queue_expires={secs:?} in {} is not a whole number of seconds above 0",
                redact_url(&url)
            ))
        })?;
        config.queue_expires = Some(std::time::Duration::from_secs(secs));
    }
    if let Some(n) = p.remove("prefetch") {
        config.prefetch = n.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
            Error::InvalidInput(format!(
                "prefetch={n:?} in {} is not a whole number from 1 to 65535",
                redact_url(&url)
            ))
        })?;
    }
    Ok((url, config))
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "redis")]
    #[test]
    fn redis_urls_name_the_prefix_and_group() {
        let (url, c) =
            super::redis_config("redis://:pw@127.0.0.1:6379/9?prefix=a%3Ab&group=g").unwrap();
        assert_eq!(url, "redis://:pw@127.0.0.1:6379/9");
        assert_eq!((c.prefix.as_str(), c.group.as_str()), ("a:b", "g"));
        let (_, c) = super::redis_config("redis://h/0?stream=old").unwrap();
        assert_eq!(c.prefix, "old");
        assert!(super::redis_config("redis://h/0?stream=old&prefix=new").is_err());
        let (url, c) = super::redis_config("redis://127.0.0.1").unwrap();
        assert_eq!(url, "redis://127.0.0.1");
        assert_eq!(c.prefix, super::redis::RedisTransportConfig::DEFAULT_PREFIX);
        assert!(super::redis_config("redis://h?queue=q").is_err());
        let (url, c) = super::redis_config("redis+cluster://h1:7000,h2:7001/?prefix=p").unwrap();
        assert_eq!(url, "redis+cluster://h1:7000,h2:7001/");
        assert_eq!(c.prefix, "p");
    }

    #[cfg(feature = "amqp")]
    #[test]
    fn amqp_urls_name_the_queue() {
        let (url, c) = super::amqp_config(
            "amqp://guest:guest@127.0.0.1:5672/%2f?heartbeat=10&queue=jobs.x&queue_expires=60",
        )
        .unwrap();
        assert_eq!(url, "amqp://guest:guest@127.0.0.1:5672/%2f?heartbeat=10");
        assert_eq!(c.prefix, "jobs.x");
        assert_eq!(c.queue_expires, Some(std::time::Duration::from_secs(60)));
        let (_, c) = super::amqp_config("amqp://h/%2f?prefix=p&queue_type=quorum").unwrap();
        assert_eq!(
            (c.prefix.as_str(), c.queue_type.as_deref()),
            ("p", Some("quorum"))
        );
        assert!(super::amqp_config("amqp://h/%2f?queue_type=lazy").is_err());
        assert!(super::amqp_config("amqp://h/%2f?prefix=a&queue=b").is_err());
        let (_, c) = super::amqp_config("amqp://h/%2f?prefetch=32").unwrap();
        assert_eq!(c.prefetch, 32);
        assert!(super::amqp_config("amqp://h/%2f?prefetch=0").is_err());
        assert!(super::amqp_config("amqp://h/%2f?prefetch=70000").is_err());
        let e = super::amqp_config("amqp://guest:s3cret@h/%2f?queue_expires=soon").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert!(super::amqp_config("amqp://h?stream=s").is_err());
    }
}
