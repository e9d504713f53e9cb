//! The Redis-list source: a list of JSON jobs (one job per element), read from its head in
//! batches of [`super::BATCH`]. Without purging, the list is read by offset and left as it
//! was. With purging, each batch is taken from the head, committed, and then removed by a script
//! that trims the list only if its head still holds exactly those elements, so a legacy worker
//! or producer touching the head meanwhile makes the import stop (committed work stays; run it
//! again) instead of deleting messages that were never imported. Conflicting jobs (a key taken
//! by another payload) are put back at the head in their order by the same script, and the next
//! batch is read after them.

use anyhow::Context as _;
use indicatif::ProgressBar;

use super::{BATCH, Importer, Tally};

/// Removes the batch `ARGV[3..]` (`ARGV[2]` elements) found at offset `ARGV[1]` of `KEYS[1]`
/// if the list still holds exactly it there, keeping the `ARGV[1]` elements before it (conflicts
/// of earlier batches) and the batch's elements marked `1` in `ARGV[#ARGV]` (its conflicts), in
/// their order, at the head. Returns how many it removed, or -1 when the head is not what was
/// read.
const TRIM_IF_HEAD: &str = r"
local s = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local keep_flags = ARGV[n + 3]
local head = redis.call('LRANGE', KEYS[1], 0, s + n - 1)
if #head ~= s + n then return -1 end
for i = 1, n do
  if head[s + i] ~= ARGV[i + 2] then return -1 end
end
local keep = {}
for i = 1, s do keep[#keep + 1] = head[i] end
for i = 1, n do
  if string.sub(keep_flags, i, i) == '1' then keep[#keep + 1] = head[s + i] end
end
redis.call('LTRIM', KEYS[1], s + n, -1)
for i = #keep, 1, -1 do redis.call('LPUSH', KEYS[1], keep[i]) end
return n - (#keep - s)
";

/// Imports every job the list holds when the import starts (jobs pushed later are left for the
/// next run), and removes them with `purge`.
pub(crate) async fn import(
    url: &str,
    key: &str,
    importer: &Importer,
    purge: bool,
    bar: &ProgressBar,
) -> anyhow::Result<Tally> {
    let shown = oprec::redact_url(url);
    let client = redis::Client::open(url).with_context(|| format!("bad Redis URL {shown}"))?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .with_context(|| format!("cannot connect to Redis at {shown}"))?;
    let kind: String = redis::cmd("TYPE").arg(key).query_async(&mut conn).await?;
    anyhow::ensure!(
        kind == "list" || kind == "none",
        "the Redis key {key:?} holds a {kind}, not a list"
    );
    let total: u64 = redis::cmd("LLEN").arg(key).query_async(&mut conn).await?;
    bar.set_length(total);

    let mut tally = Tally::default();
    let mut done = 0u64;
    // Conflicts kept at the head of the list by purging batches: the next batch starts after them.
    let mut kept = 0u64;
    while done < total {
        let want = (total - done).min(BATCH as u64) as isize;
        // Purging takes from the head (after the conflicts kept there) each time; otherwise the
        // offset walks the list.
        let start = if purge { kept as isize } else { done as isize };
        let items: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(key)
            .arg(start)
            .arg(start + want - 1)
            .query_async(&mut conn)
            .await?;
        if items.is_empty() {
            break; // Someone else emptied the list.
        }
        let committed = importer.commit(&items).await?;
        let mut batch = committed.tally;
        if purge {
            let mut eval = redis::cmd("EVAL");
            eval.arg(TRIM_IF_HEAD)
                .arg(1)
                .arg(key)
                .arg(kept)
                .arg(items.len());
            for item in &items {
                eval.arg(item.as_slice());
            }
            let flags: String = committed
                .conflicted
                .iter()
                .map(|&c| if c { '1' } else { '0' })
                .collect();
            eval.arg(flags);
            let removed: i64 = eval.query_async(&mut conn).await?;
            if removed < 0 {
                tally.add(&batch);
                anyhow::bail!(
                    "the head of the list {key:?} changed during the import (a legacy worker or \
                     producer at its head?); {} operations are committed and nothing was removed \
                     from this batch: stop them and run the import again",
                    tally.imported + tally.already_present
                );
            }
            batch.purged = removed as u64;
            kept += batch.conflicts;
        }
        done += items.len() as u64;
        bar.inc(items.len() as u64);
        tally.add(&batch);
    }
    Ok(tally)
}
