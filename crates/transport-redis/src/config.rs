//! Where the wake-ups live (the key prefix of the per-kind streams, the group, the consumer) and
//! how long to wait on Redis.

use std::time::Duration;

/// Names and timings of a [`RedisTransport`](crate::RedisTransport).
///
/// Every worker of one deployment uses the same `prefix` and `group` and its own `consumer`;
/// the defaults give exactly that. Each kind has a stream of its own, `{<prefix>}:kind:<kind>`,
/// and the kinds ever published or received are listed in the set `{<prefix>}:kinds`. The braces
/// are a Redis Cluster hash tag: every key of one prefix lives in one slot, so one `XREADGROUP`
/// reads all the kinds a worker runs, and one `MULTI` can touch several of them. A stream belongs
/// to one group: acknowledging deletes the entry, and purging recreates the stream with only this
/// group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisTransportConfig {
    /// What every key of this transport starts with, inside a hash tag (no `{` or `}` in it).
    pub prefix: String,
    /// The consumer group (one per kind stream, all of this name) that shares the wake-ups among
    /// workers.
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
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = "oprec:wakeups";
    /// The default consumer group.
    pub const DEFAULT_GROUP: &'static str = "oprec-workers";

    /// The defaults, under another key prefix (tests, or several deployments on one Redis).
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        RedisTransportConfig {
            prefix: prefix.into(),
            ..Self::default()
        }
    }

    /// The stream of `kind`'s wake-ups: `{<prefix>}:kind:<kind>`.
    pub fn stream_key(&self, kind: &str) -> String {
        format!("{}{kind}", self.stream_key_start())
    }

    /// What every kind's stream key starts with: `{<prefix>}:kind:`.
    pub fn stream_key_start(&self) -> String {
        format!("{{{}}}:kind:", self.prefix)
    }

    /// The set of the kinds that have a stream: `{<prefix>}:kinds`.
    pub fn kinds_key(&self) -> String {
        format!("{{{}}}:kinds", self.prefix)
    }

    /// The kind whose stream `key` is, if it is one of this prefix's.
    pub fn kind_of_key(&self, key: &str) -> Option<String> {
        key.strip_prefix(&self.stream_key_start())
            .map(str::to_owned)
    }
}

impl Default for RedisTransportConfig {
    fn default() -> Self {
        RedisTransportConfig {
            prefix: Self::DEFAULT_PREFIX.to_owned(),
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
    fn every_key_of_a_prefix_shares_one_hash_tag() {
        let c = RedisTransportConfig::with_prefix("billing");
        assert_eq!(
            c.stream_key("payment.capture"),
            "{billing}:kind:payment.capture"
        );
        assert_eq!(c.kinds_key(), "{billing}:kinds");
        assert_eq!(
            c.kind_of_key("{billing}:kind:a{b}:c").as_deref(),
            Some("a{b}:c")
        );
        assert_eq!(c.kind_of_key("{other}:kind:a"), None);
        let slot = |key: &str| redis::cluster_routing::Slot::for_key(key);
        assert_eq!(slot(&c.stream_key("a")), slot(&c.stream_key("zzz{x}")));
        assert_eq!(slot(&c.stream_key("a")), slot(&c.kinds_key()));
    }

    #[test]
    fn each_default_config_has_its_own_consumer() {
        let a = RedisTransportConfig::default();
        let b = RedisTransportConfig::with_prefix("s");
        assert_eq!(a.prefix, "oprec:wakeups");
        assert_eq!(a.group, "oprec-workers");
        assert_eq!(b.prefix, "s");
        assert_ne!(a.consumer, b.consumer);
        assert!(a.consumer.contains(&format!("-{}-", std::process::id())));
    }
}
