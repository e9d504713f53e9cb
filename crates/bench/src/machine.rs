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
    /// Whether the benchmark's connections are encrypted (`pg_stat_ssl` of its own session).
    /// With `sslmode` unset it is `prefer`, as in libpq: TLS whenever the server offers it, even
    /// on loopback, which costs the bulk phases (batched enqueue) a good part of their speed.
    pub tls: bool,
}

impl Machine {
    /// How the benchmark reaches PostgreSQL, for the report's first line.
    pub fn connection(&self) -> &'static str {
        if self.tls {
            "connections over TLS"
        } else {
            "connections unencrypted"
        }
    }
}

/// Seconds the machine's CPUs have been busy since boot (`/proc/stat`: user, nice, system, irq
/// and softirq time; idle, I/O wait and time stolen by the hypervisor left out), summed over
/// every CPU and every process: PostgreSQL's backends, the worker, the broker and the benchmark
/// alike. `None` off Linux. The kernel counts in USER_HZ, 100 a second on Linux whatever the
/// kernel's own tick.
pub(crate) fn busy_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal ...
    let busy = [0, 1, 2, 5, 6]
        .iter()
        .map(|&i| ticks.get(i).copied())
        .sum::<Option<u64>>()?;
    Some(busy as f64 / 100.0)
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
        tls: sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_optional(&db.admin)
            .await?
            .unwrap_or(false),
    })
}
