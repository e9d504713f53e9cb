//! [`RedisTransport`]: wake-ups as entries of one stream, shared by the workers of one consumer
//! group.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use oprec_core::{AckToken, Delivery, Error, OperationId, Result, Transport, frame};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::StreamInfoGroupsReply;
use redis::{RedisError, RedisResult, Value};

use crate::config::RedisTransportConfig;
use crate::endpoint::Endpoint;
use crate::error::{backend_error, is_busy_group, is_no_group, timed_out};
use crate::reclaim::ReclaimScan;
use crate::reply::{self, FRAME_FIELD};

/// At most this many stale entries are taken over by one receive.
const MAX_RECLAIM: usize = 1000;

/// A consumer silent for this many `claim_idle`s, with nothing pending, is a worker that is gone.
const FORGET_AFTER_CLAIM_IDLES: u32 = 4;

/// Removes the group's consumers that hold no pending entry and have been silent for at least
/// `ARGV[2]` ms, except the caller (`ARGV[3]`); returns how many. One script, so no entry can be
/// delivered to a consumer between the check and its removal (removing a consumer drops its
/// pending entries). A live consumer removed by mistake costs nothing: its next read recreates it.
const FORGET_SILENT_CONSUMERS: &str = r"
local removed = 0
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local fields = {}
  for i = 1, #c, 2 do fields[c[i]] = c[i + 1] end
  if fields['pending'] == 0 and fields['idle'] >= tonumber(ARGV[2]) and fields['name'] ~= ARGV[3] then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    removed = removed + 1
  end
end
return removed
";

/// The Redis Streams transport. Cheap to share behind an `Arc`; every call may run concurrently.
///
/// It holds two connections, opened on first use and reopened after Redis restarts: one for
/// blocking reads, one for everything else, so that a worker's acknowledgements never queue
/// behind its own `XREADGROUP ... BLOCK`.
pub struct RedisTransport {
    endpoint: Endpoint,
    config: RedisTransportConfig,
    commands: ConnectionManager,
    reads: ConnectionManager,
    group_ready: AtomicBool,
    reclaim: Mutex<ReclaimScan>,
}

impl RedisTransport {
    /// Connects to `url` (`redis://[user:password@]host:port/db`, `rediss://` for TLS) and
    /// creates the consumer group (and the stream) unless they exist. Fails with a transient
    /// error, after `connect_retries` quick retries, when Redis cannot be reached.
    pub async fn connect(url: &str, config: RedisTransportConfig) -> Result<Self> {
        let transport = Self::connect_lazy(url, config)?;
        transport.ensure_group().await?;
        Ok(transport)
    }

    /// Like [`connect`](Self::connect) but touches no network: connections open, and the group
    /// is created, on first use. For processes that must start while Redis is down (a scheduler
    /// whose enqueues commit regardless). Fails only on a malformed URL, or outside a Tokio
    /// runtime.
    pub fn connect_lazy(url: &str, config: RedisTransportConfig) -> Result<Self> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::InvalidInput(
                "a RedisTransport must be created inside a Tokio runtime".into(),
            ));
        }
        let endpoint = Endpoint::parse(url)?;
        let manager = |response_timeout| {
            let options = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(config.connect_timeout))
                .set_number_of_retries(config.connect_retries)
                .set_max_delay(Duration::from_secs(1))
                .set_response_timeout(response_timeout);
            ConnectionManager::new_lazy_with_config(endpoint.client.clone(), options)
                .map_err(backend_error)
        };
        let commands = manager(Some(config.command_timeout))?;
        // A blocking read answers after its own wait; `read_new` bounds it instead.
        let reads = manager(None)?;
        Ok(RedisTransport {
            reclaim: Mutex::new(ReclaimScan::new(config.claim_idle)),
            endpoint,
            config,
            commands,
            reads,
            group_ready: AtomicBool::new(false),
        })
    }

    /// The stream, group, consumer and timings in use.
    pub fn config(&self) -> &RedisTransportConfig {
        &self.config
    }

    /// `XGROUP CREATE <stream> <group> 0 MKSTREAM`, once. Starting at `0` means wake-ups
    /// published before any worker existed are delivered too.
    async fn ensure_group(&self) -> Result<()> {
        if self.group_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let created = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&self.config.stream)
            .arg(&self.config.group)
            .arg("0")
            .arg("MKSTREAM")
            .exec_async(&mut self.commands.clone())
            .await;
        match created {
            Ok(()) => {}
            Err(e) if is_busy_group(&e) => {}
            Err(e) => return Err(backend_error(e)),
        }
        self.group_ready.store(true, Ordering::Release);
        Ok(())
    }

    /// Runs a group command; if the group is gone (the stream was deleted, or Redis restarted
    /// without its data) recreates it and runs the command once more.
    async fn in_group<T, F, Fut>(&self, command: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.ensure_group().await?;
        match command().await {
            Err(e) if is_no_group(&e) => {
                tracing::warn!(
                    stream = %self.config.stream,
                    group = %self.config.group,
                    "the consumer group is gone; recreating it"
                );
                self.group_ready.store(false, Ordering::Release);
                self.scan().restart();
                self.ensure_group().await?;
                command().await.map_err(backend_error)
            }
            result => result.map_err(backend_error),
        }
    }

    fn scan(&self) -> MutexGuard<'_, ReclaimScan> {
        self.reclaim.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes over entries other consumers left unacknowledged for longer than `claim_idle`.
    async fn reclaim(&self, max: usize) -> Result<Vec<Delivery>> {
        let Some(cursor) = self.scan().due(Instant::now()) else {
            return Ok(Vec::new());
        };
        let min_idle = millis(self.config.claim_idle);
        let count = max.min(MAX_RECLAIM);
        let reply: Value = self
            .in_group(|| {
                let mut conn = self.commands.clone();
                let cursor = cursor.clone();
                async move {
                    redis::cmd("XAUTOCLAIM")
                        .arg(&self.config.stream)
                        .arg(&self.config.group)
                        .arg(&self.config.consumer)
                        .arg(min_idle)
                        .arg(cursor)
                        .arg("COUNT")
                        .arg(count)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?;
        let claimed = reply::autoclaim_reply(reply);
        let pass_complete = self.scan().scanned(claimed.cursor, Instant::now());
        if pass_complete {
            // Each worker that ever ran stays a consumer of the group until removed; once a
            // pass has taken over what the silent ones held, the silent ones can go.
            if let Err(e) = self.forget_silent_consumers().await {
                tracing::warn!(stream = %self.config.stream, error = %e, "could not remove silent consumers");
            }
        }
        if !claimed.deliveries.is_empty() || claimed.deleted > 0 {
            tracing::info!(
                stream = %self.config.stream,
                taken_over = claimed.deliveries.len(),
                deleted = claimed.deleted,
                "took over wake-ups left unacknowledged by a silent consumer"
            );
        }
        Ok(claimed.deliveries)
    }

    /// Removes consumers (workers that are gone) silent for `FORGET_AFTER_CLAIM_IDLES` ×
    /// `claim_idle` with nothing pending, so `XINFO CONSUMERS` lists the live workers and the
    /// group does not grow with every worker that ever started.
    async fn forget_silent_consumers(&self) -> Result<u64> {
        let silent_for = millis(self.config.claim_idle * FORGET_AFTER_CLAIM_IDLES);
        let removed: u64 = redis::cmd("EVAL")
            .arg(FORGET_SILENT_CONSUMERS)
            .arg(1)
            .arg(&self.config.stream)
            .arg(&self.config.group)
            .arg(silent_for)
            .arg(&self.config.consumer)
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)?;
        if removed > 0 {
            tracing::info!(stream = %self.config.stream, removed, "removed consumers of workers that are gone");
        }
        Ok(removed)
    }

    /// `XREADGROUP ... COUNT <count> [BLOCK <wait>] STREAMS <stream> >`: entries never delivered.
    async fn read_new(&self, count: usize, wait: Duration) -> Result<Vec<Delivery>> {
        let block = millis(wait);
        let limit = wait + self.config.command_timeout;
        let reply: Value = self
            .in_group(|| {
                let mut conn = self.reads.clone();
                async move {
                    let mut cmd = redis::cmd("XREADGROUP");
                    cmd.arg("GROUP")
                        .arg(&self.config.group)
                        .arg(&self.config.consumer)
                        .arg("COUNT")
                        .arg(count);
                    // BLOCK 0 would wait forever: a zero wait is a plain read.
                    if block > 0 {
                        cmd.arg("BLOCK").arg(block);
                    }
                    cmd.arg("STREAMS").arg(&self.config.stream).arg(">");
                    tokio::time::timeout(limit, cmd.query_async(&mut conn))
                        .await
                        .unwrap_or_else(|_| Err(timed_out("XREADGROUP", limit)))
                }
            })
            .await?;
        Ok(reply::read_reply(reply))
    }

    /// `XLEN`, for Redis versions or states where the group's lag is unknown.
    async fn stream_len(&self) -> Result<u64> {
        redis::cmd("XLEN")
            .arg(&self.config.stream)
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)
    }
}

#[async_trait]
impl Transport for RedisTransport {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn publish(&self, ids: &[OperationId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("XADD")
                .arg(&self.config.stream)
                .arg("*")
                .arg(FRAME_FIELD)
                .arg(frame::encode(*id))
                .ignore();
        }
        pipe.exec_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)
    }

    /// Stale entries of silent consumers first (without blocking), then new entries, waiting up
    /// to `wait` only when there was nothing stale.
    async fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let mut got = self.reclaim(max).await?;
        if got.len() < max {
            let wait = if got.is_empty() { wait } else { Duration::ZERO };
            got.extend(self.read_new(max - got.len(), wait).await?);
        }
        Ok(got)
    }

    /// `XACK` and `XDEL` in one transaction: an acknowledged entry leaves the stream, so the
    /// stream holds only what waits or is in flight.
    async fn ack(&self, tokens: Vec<AckToken>) -> Result<()> {
        let ids = tokens
            .into_iter()
            .map(|token| match token {
                AckToken::Id(id) => Ok(id),
                AckToken::Tag(tag) => Err(Error::InvalidInput(format!(
                    "redis acknowledges stream entry ids, not delivery tag {tag}"
                ))),
            })
            .collect::<Result<Vec<String>>>()?;
        if ids.is_empty() {
            return Ok(());
        }
        redis::pipe()
            .atomic()
            .cmd("XACK")
            .arg(&self.config.stream)
            .arg(&self.config.group)
            .arg(&ids)
            .ignore()
            .cmd("XDEL")
            .arg(&self.config.stream)
            .arg(&ids)
            .ignore()
            .exec_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)
    }

    /// Counts, deletes and recreates the stream (with the group) in one transaction, so nothing
    /// published meanwhile is dropped uncounted. Entries in flight are dropped too: their
    /// acknowledgements become no-ops.
    async fn purge(&self) -> Result<u64> {
        let (dropped,): (u64,) = redis::pipe()
            .atomic()
            .cmd("XLEN")
            .arg(&self.config.stream)
            .cmd("DEL")
            .arg(&self.config.stream)
            .ignore()
            .cmd("XGROUP")
            .arg("CREATE")
            .arg(&self.config.stream)
            .arg(&self.config.group)
            .arg("0")
            .arg("MKSTREAM")
            .ignore()
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)?;
        self.group_ready.store(true, Ordering::Release);
        self.scan().restart();
        Ok(dropped)
    }

    /// Entries not yet delivered (the group's `lag`, Redis 7) plus those delivered and not yet
    /// acknowledged (`pending`). Where the lag is unknown (Redis 6, or after deletions past the
    /// group's position) the stream's length, which counts the same since acknowledged entries
    /// are deleted.
    async fn depth(&self) -> Result<u64> {
        let groups: RedisResult<StreamInfoGroupsReply> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&self.config.stream)
            .query_async(&mut self.commands.clone())
            .await;
        let groups = match groups {
            Ok(groups) => groups,
            Err(e) if is_no_such_key(&e) => {
                // Deleted, or lost in a restart: nothing waits, and the group must be recreated.
                self.group_ready.store(false, Ordering::Release);
                return Ok(0);
            }
            Err(e) => return Err(backend_error(e)),
        };
        let ours = groups
            .groups
            .into_iter()
            .find(|g| g.name == self.config.group);
        match ours {
            Some(group) => match group.lag {
                Some(lag) => Ok((lag + group.pending) as u64),
                None => self.stream_len().await,
            },
            None => {
                self.group_ready.store(false, Ordering::Release);
                self.stream_len().await
            }
        }
    }
}

impl fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTransport")
            .field("endpoint", &self.endpoint)
            .field("stream", &self.config.stream)
            .field("group", &self.config.group)
            .field("consumer", &self.config.consumer)
            .field("claim_idle", &self.config.claim_idle)
            .finish_non_exhaustive()
    }
}

/// `XINFO` on a key that does not exist.
fn is_no_such_key(e: &RedisError) -> bool {
    e.detail().is_some_and(|d| d.contains("no such key"))
}

/// Whole milliseconds, as Redis takes them.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
