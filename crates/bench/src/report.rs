//! The figures of a run, the targets they are held against (BENCHMARKS.md), and the table printed for a
//! person (the `--json` output is the [`BenchReport`] itself).

use std::fmt::Write;

use serde::Serialize;

use crate::{BenchConfig, Ceiling, ClaimCost, Drain, EnqueueRate, Latency, LimitCost, Machine};

/// Drain target at a service's concurrency (at most [`FEW_HANDLERS`]) with poll-only and Redis,
/// operations per second.
const DRAIN_TARGET: f64 = 40_000.0;
/// The same with AMQP.
const DRAIN_TARGET_AMQP: f64 = 25_000.0;
/// Up to this many handlers a drain is held to the absolute targets; with more, to a fraction of
/// the claim + complete ceiling of the same run.
const FEW_HANDLERS: usize = 64;
/// A drain with many handlers reaches at least this fraction of the claim + complete ceiling.
const DRAIN_OF_CLAIM_CEILING: f64 = 0.75;
/// Batched enqueue target, operations per second.
const ENQUEUE_TARGET: f64 = 70_000.0;
/// Single-operation enqueues from several producers, operations per second.
const ENQUEUE_SINGLE_TARGET: f64 = 27_000.0;
/// Latency targets with a broker, milliseconds.
const P50_TARGET_MS: f64 = 5.0;
const P99_TARGET_MS: f64 = 25.0;
/// The claim with many finished rows may cost at most this much more than with few.
const CLAIM_RATIO_TARGET: f64 = 1.2;
/// The worker's memory while draining, bytes.
const WORKER_MEMORY_TARGET: u64 = 64 << 20;

/// The settings a run used.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    /// Operations per enqueue and drain phase.
    pub ops: u64,
    /// The worker's concurrencies, one drain phase each.
    pub concurrencies: Vec<usize>,
    /// Producers of single-operation enqueues.
    pub producers: usize,
    /// Enqueues per second in the latency phase.
    pub latency_rate: u32,
    /// Seconds measured in the latency phase.
    pub latency_secs: u64,
    /// Finished rows for the claim-cost phase (0: skipped).
    pub finished_rows: u64,
    /// Timed rounds of the limit-cost phase (0: skipped, with the limited drain).
    pub limit_samples: usize,
}

/// One target and whether the run met it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// What was asked, e.g. `drain redis ≥ 30,000 ops/s`.
    pub target: String,
    /// What was measured.
    pub measured: String,
    /// Whether the measurement meets the target.
    pub met: bool,
}

/// Everything a run measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    /// The machine and database settings.
    pub machine: Machine,
    /// The run's settings.
    pub settings: Settings,
    /// PostgreSQL's own ceiling for the bare batched life cycle.
    pub ceiling: Ceiling,
    /// PostgreSQL's own ceiling for claiming and completing from a full table (a drain's work).
    pub claim_ceiling: Ceiling,
    /// PostgreSQL's own ceiling for one-row commits from as many connections as there are
    /// single-operation producers, each waiting for its commit: what they can reach without
    /// sharing commits.
    pub single_ceiling: Ceiling,
    /// Batched enqueue.
    pub enqueue_batched: EnqueueRate,
    /// One operation per transaction from several producers.
    pub enqueue_single: EnqueueRate,
    /// One drain per concurrency and transport, then (unless the limit-cost phase was skipped)
    /// the first of them again under limits with room for everything.
    pub drains: Vec<Drain>,
    /// One latency run per transport.
    pub latencies: Vec<Latency>,
    /// The claim's cost with many finished rows, unless skipped.
    pub claim_cost: Option<ClaimCost>,
    /// What limits across the fleet add to a claim, unless skipped.
    pub limit_cost: Option<LimitCost>,
    /// Each target against what was measured.
    pub verdicts: Vec<Verdict>,
}

/// `1234567.8` as `1,234,568`.
fn thousands(v: f64) -> String {
    let n = v.round() as i128;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// `ops_per_sec` as a fraction of `ceiling` (0 when the ceiling measured nothing).
fn fraction(ops_per_sec: f64, ceiling: &Ceiling) -> f64 {
    if ceiling.ops_per_sec > 0.0 {
        ops_per_sec / ceiling.ops_per_sec
    } else {
        0.0
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

impl BenchReport {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        machine: Machine,
        config: &BenchConfig,
        ceiling: Ceiling,
        claim_ceiling: Ceiling,
        single_ceiling: Ceiling,
        enqueue_batched: EnqueueRate,
        enqueue_single: EnqueueRate,
        drains: Vec<Drain>,
        latencies: Vec<Latency>,
        claim_cost: Option<ClaimCost>,
        limit_cost: Option<LimitCost>,
    ) -> Self {
        let mut r = BenchReport {
            machine,
            settings: Settings {
                ops: config.ops,
                concurrencies: config.concurrencies.clone(),
                producers: config.producers,
                latency_rate: config.latency_rate,
                latency_secs: config.latency_secs,
                finished_rows: config.finished_rows,
                limit_samples: config.limit_samples,
            },
            ceiling,
            claim_ceiling,
            single_ceiling,
            enqueue_batched,
            enqueue_single,
            drains,
            latencies,
            claim_cost,
            limit_cost,
            verdicts: Vec::new(),
        };
        r.verdicts = r.judge();
        r
    }

    /// `ops_per_sec` as a fraction of the ceiling.
    pub fn of_ceiling(&self, ops_per_sec: f64) -> f64 {
        fraction(ops_per_sec, &self.ceiling)
    }

    /// `ops_per_sec` as a fraction of the claim + complete ceiling.
    pub fn of_claim_ceiling(&self, ops_per_sec: f64) -> f64 {
        fraction(ops_per_sec, &self.claim_ceiling)
    }

    /// `ops_per_sec` as a fraction of the one-row commit ceiling.
    pub fn of_single_ceiling(&self, ops_per_sec: f64) -> f64 {
        fraction(ops_per_sec, &self.single_ceiling)
    }

    /// The drain run under limits with room, and the same drain without them.
    pub fn limited_drain(&self) -> Option<(&Drain, &Drain)> {
        let limited = self.drains.iter().find(|d| d.limited)?;
        let free = self.drains.iter().find(|d| {
            !d.limited && d.transport == limited.transport && d.concurrency == limited.concurrency
        })?;
        Some((free, limited))
    }

    fn judge(&self) -> Vec<Verdict> {
        let mut v = Vec::new();
        for d in self.drains.iter().filter(|d| !d.limited) {
            if d.concurrency <= FEW_HANDLERS {
                let target = if d.transport == "amqp" {
                    DRAIN_TARGET_AMQP
                } else {
                    DRAIN_TARGET
                };
                v.push(Verdict {
                    target: format!(
                        "drain {}, {} handlers ≥ {} ops/s",
                        d.transport,
                        d.concurrency,
                        thousands(target)
                    ),
                    measured: format!("{} ops/s", thousands(d.ops_per_sec)),
                    met: d.ops_per_sec >= target,
                });
            } else {
                let of = self.of_claim_ceiling(d.ops_per_sec);
                v.push(Verdict {
                    target: format!(
                        "drain {}, {} handlers ≥ {:.0}% of claim+complete ceiling",
                        d.transport,
                        d.concurrency,
                        DRAIN_OF_CLAIM_CEILING * 100.0
                    ),
                    measured: format!("{:.0}%", of * 100.0),
                    met: of >= DRAIN_OF_CLAIM_CEILING,
                });
            }
        }
        v.push(Verdict {
            target: format!("batched enqueue ≥ {} ops/s", thousands(ENQUEUE_TARGET)),
            measured: format!("{} ops/s", thousands(self.enqueue_batched.ops_per_sec)),
            met: self.enqueue_batched.ops_per_sec >= ENQUEUE_TARGET,
        });
        v.push(Verdict {
            target: format!(
                "single enqueues, {} producers ≥ {} ops/s",
                self.enqueue_single.producers,
                thousands(ENQUEUE_SINGLE_TARGET)
            ),
            measured: format!(
                "{} ops/s ({:.0}% of 1-row)",
                thousands(self.enqueue_single.ops_per_sec),
                self.of_single_ceiling(self.enqueue_single.ops_per_sec) * 100.0
            ),
            met: self.enqueue_single.ops_per_sec >= ENQUEUE_SINGLE_TARGET,
        });
        for l in self.latencies.iter().filter(|l| l.transport != "poll") {
            v.push(Verdict {
                target: format!(
                    "latency {} p50 ≤ {P50_TARGET_MS} ms, p99 ≤ {P99_TARGET_MS} ms",
                    l.transport
                ),
                measured: format!("p50 {:.2} ms, p99 {:.2} ms", l.p50_ms, l.p99_ms),
                met: l.p50_ms <= P50_TARGET_MS && l.p99_ms <= P99_TARGET_MS,
            });
        }
        if let Some(c) = &self.claim_cost {
            v.push(Verdict {
                target: format!(
                    "claim with {} finished rows within {:.0}% of {}",
                    thousands(c.finished_rows as f64),
                    (CLAIM_RATIO_TARGET - 1.0) * 100.0,
                    thousands(c.baseline_rows as f64)
                ),
                measured: format!(
                    "{:.3} ms vs {:.3} ms (×{:.2})",
                    c.median_ms, c.baseline_median_ms, c.ratio
                ),
                met: c.ratio <= CLAIM_RATIO_TARGET,
            });
        }
        for d in self.drains.iter().filter(|d| !d.limited) {
            v.push(Verdict {
                target: format!(
                    "worker memory while draining ({}, {} handlers) < {:.0} MiB",
                    d.transport,
                    d.concurrency,
                    mib(WORKER_MEMORY_TARGET)
                ),
                measured: format!("{:.1} MiB", mib(d.worker_peak_rss_bytes)),
                met: d.worker_peak_rss_bytes < WORKER_MEMORY_TARGET,
            });
        }
        v
    }

    /// The report as a table for a terminal.
    pub fn table(&self) -> String {
        let m = &self.machine;
        let mut t = String::new();
        let _ = writeln!(
            t,
            "oprec bench: {} CPUs, {:.1} GiB, PostgreSQL {} (synchronous_commit={}, shared_buffers={}, {})",
            m.cpus,
            m.memory_bytes as f64 / (1u64 << 30) as f64,
            m.postgres_version,
            m.synchronous_commit,
            m.shared_buffers,
            m.connection()
        );
        let _ = writeln!(
            t,
            "{} operations per phase, worker concurrency {}\n",
            thousands(self.settings.ops as f64),
            self.settings
                .concurrencies
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            t,
            "{:<60} {:>10} {:>11} {:>15}",
            "throughput", "ops/s", "of ceiling", "of claim+compl."
        );
        let mut row = |name: String, rate: f64, claim: bool| {
            let of_claim = if claim {
                format!("{:>14.0}%", self.of_claim_ceiling(rate) * 100.0)
            } else {
                String::new()
            };
            let _ = writeln!(
                t,
                "{:<60} {:>10} {:>10.0}% {}",
                name,
                thousands(rate),
                self.of_ceiling(rate) * 100.0,
                of_claim
            );
        };
        let best = |c: &Ceiling| {
            c.runs
                .iter()
                .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec))
                .map_or(0, |r| r.connections)
        };
        row(
            format!(
                "ceiling: bare life cycle, batches of {}, {} conns",
                self.ceiling.batch,
                best(&self.ceiling)
            ),
            self.ceiling.ops_per_sec,
            false,
        );
        row(
            format!(
                "ceiling: bare claim+complete, batches of {}, {} conns",
                self.claim_ceiling.batch,
                best(&self.claim_ceiling)
            ),
            self.claim_ceiling.ops_per_sec,
            true,
        );
        let e = &self.enqueue_batched;
        row(
            format!(
                "enqueue, batches of {} ({} producer{})",
                thousands(e.batch as f64),
                e.producers,
                if e.producers == 1 { "" } else { "s" }
            ),
            e.ops_per_sec,
            false,
        );
        row(
            format!(
                "ceiling: bare 1-row commits, {} conns",
                self.single_ceiling
                    .runs
                    .first()
                    .map_or(0, |r| r.connections)
            ),
            self.single_ceiling.ops_per_sec,
            false,
        );
        let e = &self.enqueue_single;
        row(
            format!(
                "enqueue, 1 per call ({} producers, {:.0}% of 1-row, {:.1}/insert)",
                e.producers,
                self.of_single_ceiling(e.ops_per_sec) * 100.0,
                e.ops_per_insert()
            ),
            e.ops_per_sec,
            false,
        );
        for d in &self.drains {
            row(
                format!(
                    "drain {}, {} handlers{}",
                    d.transport,
                    d.concurrency,
                    if d.limited {
                        ", under limits with room"
                    } else {
                        ""
                    }
                ),
                d.ops_per_sec,
                true,
            );
        }
        let _ = writeln!(
            t,
            "\n{:<10} {:>9} {:>14} {:>10} {:>10} {:>14} {:>15}",
            "drain", "handlers", "commits/op", "WAL B/op", "CPU µs/op", "attempts", "worker peak"
        );
        for d in &self.drains {
            let _ = writeln!(
                t,
                "{:<10} {:>9} {:>14.4} {:>10.0} {:>10} {:>14} {:>11.1} MiB",
                if d.limited {
                    format!("{}+limit", d.transport)
                } else {
                    d.transport.clone()
                },
                d.concurrency,
                d.commits_per_op,
                d.wal_bytes_per_op,
                d.cpu_us_per_op_text(),
                thousands(d.attempts as f64),
                mib(d.worker_peak_rss_bytes)
            );
        }
        if let Some(l) = self.latencies.first() {
            let _ = writeln!(
                t,
                "\n{:<10} {:>12} {:>12} {:>12}   (enqueue → claim at {}/s)",
                "latency", "p50 ms", "p99 ms", "max ms", l.rate
            );
        }
        for l in &self.latencies {
            let _ = writeln!(
                t,
                "{:<10} {:>12.2} {:>12.2} {:>12.2}",
                l.transport, l.p50_ms, l.p99_ms, l.max_ms
            );
        }
        if let Some(c) = &self.claim_cost {
            let _ = writeln!(
                t,
                "\nclaim of 100, median: {:.3} ms with {} finished rows, {:.3} ms with {} (×{:.2})",
                c.baseline_median_ms,
                thousands(c.baseline_rows as f64),
                c.median_ms,
                thousands(c.finished_rows as f64),
                c.ratio
            );
        }
        if let Some(c) = &self.limit_cost {
            let _ = writeln!(
                t,
                "\nclaim of {}, median, with limits across the fleet: {:.3} ms with none, {:.3} ms under limits with room (×{:.2}), {:.3} ms capped to half (×{:.2})",
                c.claim,
                c.none_median_ms,
                c.room_median_ms,
                c.room_ratio,
                c.capped_median_ms,
                c.capped_ratio
            );
            let _ = writeln!(
                t,
                "claim of {}, median, with priorities: {:.3} ms spread over five levels (×{:.2}); the claim ahead of a broker's backlog, finding nothing: {:.3} ms (×{:.2})",
                c.claim, c.levels_median_ms, c.levels_ratio, c.ahead_median_ms, c.ahead_ratio
            );
            if let Some((free, limited)) = self.limited_drain() {
                let _ = writeln!(
                    t,
                    "drain {}, {} handlers: {} ops/s under limits with room, {} without (×{:.2})",
                    limited.transport,
                    limited.concurrency,
                    thousands(limited.ops_per_sec),
                    thousands(free.ops_per_sec),
                    limited.ops_per_sec / free.ops_per_sec
                );
            }
        }
        let _ = writeln!(t, "\n{:<58} {:<28} met", "target", "measured");
        for v in &self.verdicts {
            let _ = writeln!(
                t,
                "{:<58} {:<28} {}",
                v.target,
                v.measured,
                if v.met { "yes" } else { "NO" }
            );
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(72_000_000.0), "72,000,000");
        assert_eq!(thousands(-1234.0), "-1,234");
    }
}
