//! Where the wake-ups live (stream, group, consumer) and how long to wait on Redis.

use std::time::Duration;

/// Names and timings of a [`RedisTransport`](crate::RedisTransport).
///
/// Every worker of one deployment uses the same `stream` and `group` and its own `consumer`;
/// the defaults give exactly that. A stream belongs to one group: acknowledging deletes the entry,
/// and purging recreates the stream with only this group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisTransportConfig {
    /// The stream key the wake-ups are appended to.
    pub stream: String,
    /// The consumer group that shares the wake-ups among workers.
    pub group: String,
    /// This process's name within the group; unique per live process, or two processes would
    /// share (and steal) each other's pending entries.
    pub consumer: String,
    /// An entry delivered to a consumer and not acknowledged for this long is taken over by the
    /// next consumer that receives: its first consumer is presumed dead. Set it above the longest
    /// a worker takes between receiving and acknowledging. The take-over happens between
    /// `claim_idle` and 1.5 × `claim_idle` after the consumer went silent.
    pub claim_idle: Duration,
    /// How long one attempt to open a connection may take.
    pub connect_timeout: Duration,
    /// How many times a failed connection attempt is retried (with a short backoff) before the
    /// call that needed it fails with a transient error.
    pub connect_retries: usize,
    /// How long Redis may take to answer a command (a blocking read gets its wait on top).
    pub command_timeout: Duration,
}

impl RedisTransportConfig {
    /// The default stream key.
    pub const DEFAULT_STREAM: &'static str = "oprec:wakeups";
    /// The default consumer group.
    pub const DEFAULT_GROUP: &'static str = "oprec-workers";

    /// The defaults, on another stream (tests, or several deployments on one Redis).
    pub fn with_stream(stream: impl Into<String>) -> Self {
        RedisTransportConfig {
            stream: stream.into(),
            ..Self::default()
        }
    }
}

impl Default for RedisTransportConfig {
    fn default() -> Self {
        RedisTransportConfig {
            stream: Self::DEFAULT_STREAM.to_owned(),
            group: Self::DEFAULT_GROUP.to_owned(),
            consumer: default_consumer(),
            claim_idle: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(2),
            connect_retries: 2,
            command_timeout: Duration::from_secs(5),
        }
    }
}

/// `hostname-pid-random`: readable in `XINFO CONSUMERS`, and unique even when a restarted
/// process gets its old pid back.
fn default_consumer() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_default_config_has_its_own_consumer() {
        let a = RedisTransportConfig::default();
        let b = RedisTransportConfig::with_stream("s");
        assert_eq!(a.stream, "oprec:wakeups");
        assert_eq!(a.group, "oprec-workers");
        assert_eq!(b.stream, "s");
        assert_ne!(a.consumer, b.consumer);
        assert!(a.consumer.contains(&format!("-{}-", std::process::id())));
    }
}
