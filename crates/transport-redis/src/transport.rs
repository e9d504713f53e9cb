//! [`RedisTransport`]: wake-ups as entries of a stream per kind, each shared by the workers of
//! one consumer group.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use oprec_core::transport::check_kind;
use oprec_core::{AckToken, Delivery, Error, KindDepth, Result, Transport, WakeUp, frame};
use redis::cluster_routing::Slot;
use redis::streams::StreamInfoGroupsReply;
use redis::{RedisError, RedisResult, Value};

use crate::config::RedisTransportConfig;
use crate::conn::Conn;
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

/// Trims the stream `KEYS[1]` below the oldest entry that the group `ARGV[1]` still needs: its
/// oldest pending entry, or, with none pending, the entry after the last one it was delivered
/// (every entry up to that one is acknowledged). Returns how many entries it removed.
///
/// One `XTRIM` per acknowledgement replaces an `XDEL` of every acknowledged entry: a trim frees
/// the stream's nodes whole, where a deletion marks entries one by one (1.9 µs each, more than
/// half of Redis's work in a drain). One script, so no entry can be delivered or taken over
/// between the look and the trim; entries of other groups are treated as the deletions were:
/// the group that acknowledges decides. A sequence number too large for Lua's numbers leaves the
/// last delivered entry in the stream, until the next trim. A stream or group that is gone (a
/// purge, a restart of Redis) has nothing to trim: the acknowledgement is a no-op, as before.
const TRIM_ACKNOWLEDGED: &str = r"
local pending = redis.pcall('XPENDING', KEYS[1], ARGV[1])
if pending['err'] then return 0 end
local keep = pending[2]
if not keep then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local fields = {}
    for i = 1, #g, 2 do fields[g[i]] = g[i + 1] end
    if fields['name'] == ARGV[1] then
      local last = fields['last-delivered-id']
      local ms, seq = string.match(last, '^(%d+)-(%d+)$')
      if ms and #seq < 15 then
        keep = ms .. '-' .. string.format('%d', tonumber(seq) + 1)
      else
        keep = last
      end
    end
  end
end
if not keep then return 0 end
return redis.call('XTRIM', KEYS[1], 'MINID', keep)
";

/// The Redis Streams transport. Cheap to share behind an `Arc`; every call may run concurrently.
///
/// Each kind's wake-ups are entries of the stream `{<prefix>}:kind:<kind>`, read through a
/// consumer group of that stream; a receive reads the streams of the kinds it is given, all in one
/// `XREADGROUP` (on a Redis Cluster, one per slot: the hash tag keeps a prefix's keys in one).
/// The set `{<prefix>}:kinds` lists the kinds that have a stream, for `depth` and `purge` of all.
///
/// It holds two connections, opened on first use and reopened after Redis restarts: one for
/// blocking reads, one for everything else, so that a worker's acknowledgements never queue
/// behind its own `XREADGROUP ... BLOCK`.
pub struct RedisTransport {
    endpoint: Endpoint,
    config: RedisTransportConfig,
    commands: Conn,
    reads: Conn,
    /// The kinds whose stream and group this process has made sure of.
    ready: Mutex<HashSet<String>>,
    /// Per kind, the scan for entries silent consumers left pending.
    scans: Mutex<HashMap<String, ReclaimScan>>,
}

impl RedisTransport {
    /// Connects to `url` (`redis://[user:password@]host:port/db`, `rediss://` for TLS, or a
    /// cluster's `redis+cluster://host:port,host:port`) and checks that Redis answers. Fails with
    /// a transient error, after `connect_retries` quick retries, when Redis cannot be reached.
    pub async fn connect(url: &str, config: RedisTransportConfig) -> Result<Self> {
        let transport = Self::connect_lazy(url, config)?;
        redis::cmd("PING")
            .exec_async(&mut transport.commands.clone())
            .await
            .map_err(backend_error)?;
        Ok(transport)
    }

    /// Like [`connect`](Self::connect) but touches no network: connections open, and each kind's
    /// group is created, on first use. For processes that must start while Redis is down (a
    /// scheduler whose enqueues commit regardless). Fails only on a malformed URL or prefix, or
    /// outside a Tokio runtime.
    pub fn connect_lazy(url: &str, config: RedisTransportConfig) -> Result<Self> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::InvalidInput(
                "a RedisTransport must be created inside a Tokio runtime".into(),
            ));
        }
        if config.prefix.is_empty() || config.prefix.contains(['{', '}']) {
            return Err(Error::InvalidInput(format!(
                "the Redis key prefix {:?} must be non-empty and without braces: the transport \
                 puts it inside a hash tag, {{prefix}}",
                config.prefix
            )));
        }
        let endpoint = Endpoint::parse(url)?;
        let conn = |response_timeout| {
            Conn::lazy(
                &endpoint.target,
                config.connect_timeout,
                config.connect_retries,
                response_timeout,
            )
            .map_err(backend_error)
        };
        let commands = conn(Some(config.command_timeout))?;
        // A blocking read answers after its own wait; `read_new` bounds it instead.
        let reads = conn(None)?;
        Ok(RedisTransport {
            endpoint,
            config,
            commands,
            reads,
            ready: Mutex::new(HashSet::new()),
            scans: Mutex::new(HashMap::new()),
        })
    }

    /// The prefix, group, consumer and timings in use.
    pub fn config(&self) -> &RedisTransportConfig {
        &self.config
    }

    fn ready(&self) -> MutexGuard<'_, HashSet<String>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn scans(&self) -> MutexGuard<'_, HashMap<String, ReclaimScan>> {
        self.scans.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// For each kind not yet seen: `XGROUP CREATE <stream> <group> 0 MKSTREAM` and the kind added
    /// to the set of kinds. Starting at `0` means wake-ups published before any worker existed are
    /// delivered too.
    async fn ensure_groups(&self, kinds: &[String]) -> Result<()> {
        let missing: Vec<String> = {
            let ready = self.ready();
            kinds
                .iter()
                .filter(|k| !ready.contains(*k))
                .cloned()
                .collect()
        };
        for kind in missing {
            let created = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(self.config.stream_key(&kind))
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
            redis::cmd("SADD")
                .arg(self.config.kinds_key())
                .arg(&kind)
                .exec_async(&mut self.commands.clone())
                .await
                .map_err(backend_error)?;
            self.ready().insert(kind);
        }
        Ok(())
    }

    /// Runs a group command on the streams of `kinds`; if a group is gone (a stream was deleted,
    /// or Redis restarted without its data) recreates them and runs the command once more.
    async fn in_groups<T, F, Fut>(&self, kinds: &[String], command: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.ensure_groups(kinds).await?;
        match command().await {
            Err(e) if is_no_group(&e) => {
                tracing::warn!(
                    prefix = %self.config.prefix,
                    group = %self.config.group,
                    ?kinds,
                    "a consumer group is gone; recreating it"
                );
                self.forget(kinds);
                self.ensure_groups(kinds).await?;
                command().await.map_err(backend_error)
            }
            result => result.map_err(backend_error),
        }
    }

    /// Forgets what this process knew of the streams of `kinds` (purged or lost).
    fn forget(&self, kinds: &[String]) {
        let mut ready = self.ready();
        let mut scans = self.scans();
        for kind in kinds {
            ready.remove(kind);
            if let Some(scan) = scans.get_mut(kind) {
                scan.restart();
            }
        }
    }

    /// Takes over entries other consumers left unacknowledged for longer than `claim_idle`, kind
    /// by kind, up to `max` in all.
    async fn reclaim(&self, kinds: &[String], max: usize) -> Result<Vec<Delivery>> {
        let mut got = Vec::new();
        for kind in kinds {
            if got.len() >= max {
                break;
            }
            let cursor = {
                let mut scans = self.scans();
                let scan = scans
                    .entry(kind.clone())
                    .or_insert_with(|| ReclaimScan::new(self.config.claim_idle));
                scan.due(Instant::now())
            };
            let Some(cursor) = cursor else {
                continue;
            };
            got.extend(self.reclaim_kind(kind, cursor, max - got.len()).await?);
        }
        Ok(got)
    }

    async fn reclaim_kind(&self, kind: &str, cursor: String, max: usize) -> Result<Vec<Delivery>> {
        let stream = self.config.stream_key(kind);
        let min_idle = millis(self.config.claim_idle);
        let count = max.min(MAX_RECLAIM);
        let reply: Value = self
            .in_groups(&[kind.to_owned()], || {
                let mut conn = self.commands.clone();
                let (cursor, stream) = (cursor.clone(), stream.clone());
                async move {
                    redis::cmd("XAUTOCLAIM")
                        .arg(stream)
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
        let claimed = reply::autoclaim_reply(reply, kind);
        let pass_complete = self
            .scans()
            .entry(kind.to_owned())
            .or_insert_with(|| ReclaimScan::new(self.config.claim_idle))
            .scanned(claimed.cursor, Instant::now());
        if pass_complete {
            // Each worker that ever ran stays a consumer of the group until removed; once a
            // pass has taken over what the silent ones held, the silent ones can go.
            if let Err(e) = self.forget_silent_consumers(&stream).await {
                tracing::warn!(stream, error = %e, "could not remove silent consumers");
            }
        }
        if !claimed.deliveries.is_empty() || claimed.deleted > 0 {
            tracing::info!(
                stream,
                taken_over = claimed.deliveries.len(),
                deleted = claimed.deleted,
                "took over wake-ups left unacknowledged by a silent consumer"
            );
        }
        Ok(claimed.deliveries)
    }

    /// Removes consumers (workers that are gone) of `stream`'s group silent for
    /// `FORGET_AFTER_CLAIM_IDLES` × `claim_idle` with nothing pending, so `XINFO CONSUMERS` lists
    /// the live workers and the group does not grow with every worker that ever started.
    async fn forget_silent_consumers(&self, stream: &str) -> Result<u64> {
        let silent_for = millis(self.config.claim_idle * FORGET_AFTER_CLAIM_IDLES);
        let removed: u64 = redis::cmd("EVAL")
            .arg(FORGET_SILENT_CONSUMERS)
            .arg(1)
            .arg(stream)
            .arg(&self.config.group)
            .arg(silent_for)
            .arg(&self.config.consumer)
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)?;
        if removed > 0 {
            tracing::info!(
                stream,
                removed,
                "removed consumers of workers that are gone"
            );
        }
        Ok(removed)
    }

    /// Entries never delivered, of every kind in `kinds`: one `XREADGROUP` per slot (so one in
    /// all, but for a cluster whose keys were spread on purpose), run together.
    async fn read_new(
        &self,
        kinds: &[String],
        count: usize,
        wait: Duration,
    ) -> Result<Vec<Delivery>> {
        let groups = slot_groups(
            kinds,
            |k| self.config.stream_key(k),
            self.reads.is_cluster(),
        );
        let reads = groups
            .iter()
            .map(|group| self.read_new_in_slot(group, count, wait));
        let mut got = Vec::new();
        for read in futures::future::join_all(reads).await {
            got.extend(read?);
        }
        // COUNT applies per stream: several streams can give more than asked; the rest stay
        // pending to this consumer and would be taken over only after `claim_idle` (as a
        // crash's would). Hand them back at once instead.
        if got.len() > count {
            let extra = got.split_off(count);
            self.release(extra).await;
        }
        Ok(got)
    }

    /// `XREADGROUP ... COUNT <count> [BLOCK <wait>] STREAMS <stream>... >...`.
    async fn read_new_in_slot(
        &self,
        kinds: &[String],
        count: usize,
        wait: Duration,
    ) -> Result<Vec<Delivery>> {
        let block = millis(wait);
        let limit = wait + self.config.command_timeout;
        let streams: Vec<String> = kinds.iter().map(|k| self.config.stream_key(k)).collect();
        let reply: Value = self
            .in_groups(kinds, || {
                let mut conn = self.reads.clone();
                let streams = &streams;
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
                    cmd.arg("STREAMS").arg(streams);
                    for _ in streams {
                        cmd.arg(">");
                    }
                    tokio::time::timeout(limit, cmd.query_async(&mut conn))
                        .await
                        .unwrap_or_else(|_| Err(timed_out("XREADGROUP", limit)))
                }
            })
            .await?;
        Ok(reply::read_reply(reply, |key| self.config.kind_of_key(key)))
    }

    /// Puts deliveries read beyond what the caller asked for back as new entries (and drops the
    /// read ones), so they are not stuck pending to this consumer until `claim_idle`.
    async fn release(&self, extra: Vec<Delivery>) {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for d in &extra {
            let AckToken::Entry { kind, id } = &d.ack else {
                continue;
            };
            let stream = self.config.stream_key(kind);
            // A garbage frame is dropped with its entry.
            if let Ok(op) = &d.frame {
                pipe.cmd("XADD")
                    .arg(&stream)
                    .arg("*")
                    .arg(FRAME_FIELD)
                    .arg(frame::encode(*op))
                    .ignore();
            }
            pipe.cmd("XACK")
                .arg(&stream)
                .arg(&self.config.group)
                .arg(id)
                .ignore()
                .cmd("XDEL")
                .arg(&stream)
                .arg(id)
                .ignore();
        }
        if let Err(e) = pipe.exec_async(&mut self.commands.clone()).await {
            tracing::warn!(error = %e, count = extra.len(),
                "could not hand back wake-ups read beyond a receive's max; they are taken over after claim_idle");
        }
    }

    /// `XLEN`, for Redis versions or states where the group's lag is unknown.
    async fn stream_len(&self, stream: &str) -> Result<u64> {
        redis::cmd("XLEN")
            .arg(stream)
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)
    }

    /// The kinds with a stream: the set's members, and those this process made sure of.
    async fn known_kinds(&self) -> Result<Vec<String>> {
        let listed: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.config.kinds_key())
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)?;
        let mut all: BTreeSet<String> = listed.into_iter().collect();
        all.extend(self.ready().iter().cloned());
        Ok(all.into_iter().collect())
    }

    /// Entries of `kind` not yet delivered (the group's `lag`, Redis 7) plus those delivered and
    /// not yet acknowledged (`pending`). Where the lag is unknown (Redis 6, or after deletions past
    /// the group's position) the stream's length, which also counts the acknowledged entries
    /// delivered after the oldest one still in flight (see [`TRIM_ACKNOWLEDGED`]).
    async fn kind_depth(&self, kind: &str) -> Result<u64> {
        let stream = self.config.stream_key(kind);
        let groups: RedisResult<StreamInfoGroupsReply> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&stream)
            .query_async(&mut self.commands.clone())
            .await;
        let groups = match groups {
            Ok(groups) => groups,
            Err(e) if is_no_such_key(&e) => {
                // Deleted, or lost in a restart: nothing waits, and the group must be recreated.
                self.forget(&[kind.to_owned()]);
                return Ok(0);
            }
            Err(e) => return Err(backend_error(e)),
        };
        let ours = groups
            .groups
            .into_iter()
            .find(|g| g.name == self.config.group);
        match ours {
            // The group's lag counts entries added and not yet read, trimmed ones too (a
            // `XTRIM` by hand, `MAXLEN` on a full stream): what the stream still holds bounds it.
            Some(group) => match group.lag {
                Some(lag) => {
                    Ok(((lag + group.pending) as u64).min(self.stream_len(&stream).await?))
                }
                None => self.stream_len(&stream).await,
            },
            None => {
                self.forget(&[kind.to_owned()]);
                self.stream_len(&stream).await
            }
        }
    }
}

#[async_trait]
impl Transport for RedisTransport {
    fn name(&self) -> &'static str {
        "redis"
    }

    /// Each `XREADGROUP` gets new entries of its own, up to its `COUNT`.
    fn overlapping_receives(&self) -> bool {
        true
    }

    /// One pipeline: the batch's kinds added to the set of kinds, and one `XADD` per wake-up on
    /// its kind's stream.
    async fn publish(&self, wakeups: &[WakeUp]) -> Result<()> {
        if wakeups.is_empty() {
            return Ok(());
        }
        let kinds: BTreeSet<&str> = wakeups.iter().map(|w| w.kind.as_str()).collect();
        for kind in &kinds {
            check_kind(kind)?;
        }
        let mut pipe = redis::pipe();
        pipe.cmd("SADD")
            .arg(self.config.kinds_key())
            .arg(kinds.into_iter().collect::<Vec<_>>())
            .ignore();
        for w in wakeups {
            pipe.cmd("XADD")
                .arg(self.config.stream_key(&w.kind))
                .arg("*")
                .arg(FRAME_FIELD)
                .arg(frame::encode(w.id))
                .ignore();
        }
        pipe.exec_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)
    }

    /// Stale entries of silent consumers first (without blocking), then new entries of any of
    /// `kinds`, waiting up to `wait` only when there was nothing stale.
    async fn receive(&self, kinds: &[String], max: usize, wait: Duration) -> Result<Vec<Delivery>> {
        for kind in kinds {
            check_kind(kind)?;
        }
        if max == 0 || kinds.is_empty() {
            return Ok(Vec::new());
        }
        let mut got = self.reclaim(kinds, max).await?;
        if got.len() < max {
            let wait = if got.is_empty() { wait } else { Duration::ZERO };
            got.extend(self.read_new(kinds, max - got.len(), wait).await?);
        }
        Ok(got)
    }

    /// `XACK` of each kind's entries, then a trim of its stream below the oldest entry the group
    /// still needs (one `XTRIM MINID`, in a script), in one pipeline: a stream holds what waits,
    /// what is in flight, and the acknowledged entries delivered after the oldest one in flight,
    /// until that one is acknowledged too; with nothing in flight, only what waits.
    async fn ack(&self, tokens: Vec<AckToken>) -> Result<()> {
        let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for token in tokens {
            match token {
                AckToken::Entry { kind, id } => by_kind.entry(kind).or_default().push(id),
                AckToken::Tag(tag) => {
                    return Err(Error::InvalidInput(format!(
                        "redis acknowledges stream entries, not delivery tag {tag}"
                    )));
                }
            }
        }
        if by_kind.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (kind, ids) in &by_kind {
            let stream = self.config.stream_key(kind);
            pipe.cmd("XACK")
                .arg(&stream)
                .arg(&self.config.group)
                .arg(ids)
                .ignore()
                .cmd("EVAL")
                .arg(TRIM_ACKNOWLEDGED)
                .arg(1)
                .arg(&stream)
                .arg(&self.config.group)
                .ignore();
        }
        pipe.exec_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)
    }

    /// Counts, deletes and recreates the stream of `kind` (of every kind listed, for `None`), with
    /// its group, in one transaction, so nothing published meanwhile is dropped uncounted.
    /// Entries in flight are dropped too: their acknowledgements become no-ops.
    async fn purge(&self, kind: Option<&str>) -> Result<u64> {
        let kinds = match kind {
            Some(kind) => {
                check_kind(kind)?;
                vec![kind.to_owned()]
            }
            None => self.known_kinds().await?,
        };
        if kinds.is_empty() {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        for kind in &kinds {
            let stream = self.config.stream_key(kind);
            pipe.cmd("XLEN")
                .arg(&stream)
                .cmd("DEL")
                .arg(&stream)
                .ignore()
                .cmd("XGROUP")
                .arg("CREATE")
                .arg(&stream)
                .arg(&self.config.group)
                .arg("0")
                .arg("MKSTREAM")
                .ignore()
                .cmd("SADD")
                .arg(self.config.kinds_key())
                .arg(kind)
                .ignore();
        }
        let dropped: Vec<u64> = pipe
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend_error)?;
        let mut scans = self.scans();
        let mut ready = self.ready();
        for kind in kinds {
            if let Some(scan) = scans.get_mut(&kind) {
                scan.restart();
            }
            ready.insert(kind);
        }
        Ok(dropped.iter().sum())
    }

    async fn depth(&self, kind: Option<&str>) -> Result<u64> {
        match kind {
            Some(kind) => {
                check_kind(kind)?;
                self.kind_depth(kind).await
            }
            None => Ok(self.depths().await?.iter().map(|d| d.depth).sum()),
        }
    }

    async fn depths(&self) -> Result<Vec<KindDepth>> {
        let mut out = Vec::new();
        for kind in self.known_kinds().await? {
            let depth = self.kind_depth(&kind).await?;
            out.push(KindDepth { kind, depth });
        }
        Ok(out)
    }
}

impl fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTransport")
            .field("endpoint", &self.endpoint)
            .field("prefix", &self.config.prefix)
            .field("group", &self.config.group)
            .field("consumer", &self.config.consumer)
            .field("claim_idle", &self.config.claim_idle)
            .finish_non_exhaustive()
    }
}

/// The kinds grouped so that one `XREADGROUP` can read each group: all in one on a single Redis;
/// on a cluster, one group per slot of their stream keys (the keys of one prefix share a hash tag,
/// so that is one group, unless keys were ever spread over slots on purpose).
fn slot_groups(
    kinds: &[String],
    stream_key: impl Fn(&str) -> String,
    cluster: bool,
) -> Vec<Vec<String>> {
    let mut groups: Vec<(Option<Slot>, Vec<String>)> = Vec::new();
    for kind in kinds {
        let slot = cluster.then(|| Slot::for_key(stream_key(kind)));
        match groups.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, group)) => group.push(kind.clone()),
            None => groups.push((slot, vec![kind.clone()])),
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}

/// `XINFO` on a key that does not exist.
fn is_no_such_key(e: &RedisError) -> bool {
    e.detail().is_some_and(|d| d.contains("no such key"))
}

/// Whole milliseconds, as Redis takes them.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(names: &[&str]) -> Vec<String> {
        names.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn one_read_for_every_kind_of_a_prefix_and_one_per_slot_otherwise() {
        let all = kinds(&["a", "b", "c", "d"]);
        let config = RedisTransportConfig::with_prefix("p");
        let ours = |k: &str| config.stream_key(k);
        assert_eq!(slot_groups(&all, ours, true), vec![all.clone()]);
        assert_eq!(slot_groups(&all, ours, false), vec![all.clone()]);
        // Keys tagged per kind land in several slots: one read per slot, every kind once.
        let spread = |k: &str| format!("{{{k}}}:stream");
        let groups = slot_groups(&all, spread, true);
        assert!(groups.len() > 1, "{groups:?}");
        let mut flat: Vec<String> = groups.concat();
        flat.sort();
        assert_eq!(flat, all);
        for group in &groups {
            let slots: std::collections::HashSet<String> = group
                .iter()
                .map(|k| format!("{:?}", Slot::for_key(spread(k))))
                .collect();
            assert_eq!(slots.len(), 1, "{group:?}");
        }
        // On a single Redis the slot does not matter.
        assert_eq!(slot_groups(&all, spread, false), vec![all]);
    }
}
