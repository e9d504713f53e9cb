//! Which workers are running, and which kinds they handle: each worker upserts its row of the
//! `workers` table at start and on every heartbeat, and removes it on a clean shutdown. A worker
//! that died without a shutdown stops being live once it has not been seen for
//! [`WORKER_LIVE_SECS`]. Operators read it to see who runs what, and the stats use it to find
//! operations of a kind no live worker handles (which would otherwise wait unseen).

use chrono::{DateTime, Utc};
use serde::Serialize;

/// A worker not seen for this many seconds is taken for gone (workers beat every 15 s).
pub const WORKER_LIVE_SECS: i64 = 60;

/// Register (or refresh) a running worker; the store sets `last_seen_at` to its now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerBeatParams {
    /// The worker's id, as in its claims (`operations.worker_id`).
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The kinds it handles (and so claims).
    pub kinds: Vec<String>,
    /// The code version it records with attempts.
    pub code_version: Option<String>,
    /// When it started.
    pub started_at: DateTime<Utc>,
}

/// A row of the `workers` table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerRecord {
    /// The worker's id.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The kinds it handles, sorted.
    pub kinds: Vec<String>,
    /// Its code version.
    pub code_version: Option<String>,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// Its last heartbeat.
    pub last_seen_at: DateTime<Utc>,
    /// Whether it holds the maintenance leadership now.
    pub leader: bool,
}

/// The most pending operations of one unhandled kind read to count its eligible ones: a kind
/// left without workers costs the figures this many rows at most, however large its backlog.
pub const UNHANDLED_READ_MAX: u64 = 10_000;

/// Pending operations of one kind that no live worker handles: nobody will claim them until a
/// worker that knows the kind starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnhandledKind {
    /// The kind.
    pub kind: String,
    /// Its pending operations.
    pub pending: u64,
    /// Of those, the ones already eligible (due now), counted among the oldest
    /// [`UNHANDLED_READ_MAX`] (all of them when there are no more).
    pub eligible: u64,
    /// There were more pending than [`UNHANDLED_READ_MAX`]: `eligible` is a lower bound.
    pub eligible_at_least: bool,
    /// When the oldest of them was enqueued.
    pub oldest_created_at: DateTime<Utc>,
}
