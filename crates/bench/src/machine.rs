//! What the figures were measured on.

use serde::Serialize;

use crate::Result;
use crate::schema::Database;

/// The machine and the database settings that decide the figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// Physical memory (`MemTotal`), in bytes; 0 when unknown.
    pub memory_bytes: u64,
    /// `SHOW server_version`.
    pub postgres_version: String,
    /// `SHOW synchronous_commit`: `on` waits for the WAL flush at every commit.
    pub synchronous_commit: String,
    /// `SHOW shared_buffers`.
    pub shared_buffers: String,
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

pub(crate) async fn describe(db: &Database) -> Result<Machine> {
    let show = |name: &'static str| async move {
        sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(format!("SHOW {name}")))
            .fetch_one(&db.admin)
            .await
    };
    Ok(Machine {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: memory_bytes(),
        postgres_version: show("server_version").await?,
        synchronous_commit: show("synchronous_commit").await?,
        shared_buffers: show("shared_buffers").await?,
    })
}
