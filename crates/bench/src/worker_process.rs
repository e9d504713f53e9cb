//! The worker as a separate process, the way it runs in production: `oprec worker --demo`, with
//! `--exit-when-idle` for a drain, or stopped by SIGTERM (it drains, then exits) after a steady
//! stream, which its idle check could mistake for idleness when each operation waits only a
//! millisecond. Its peak memory is read from `/proc/<pid>/status` (`VmHWM`) while it runs.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::{Error, Result, WorkerCommand};

/// How often the worker's memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// A running worker process.
pub(crate) struct WorkerProcess {
    child: Child,
    pid: u32,
    stderr: Arc<Mutex<Vec<String>>>,
    ready: watch::Receiver<bool>,
    stdout: tokio::task::JoinHandle<String>,
    peak_rss: u64,
}

/// How a worker process ended.
pub(crate) struct Exited {
    /// The peak resident set size seen (`VmHWM`), in bytes.
    pub peak_rss_bytes: u64,
    /// What it printed on stdout (its summary line).
    pub stdout: String,
}

/// `VmHWM` of `pid`, in bytes, if the process is still there.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

impl WorkerProcess {
    /// Starts `oprec worker --demo` on `database_url` and `transport_url`, with
    /// `--exit-when-idle` if `exit_when_idle`.
    pub(crate) fn spawn(
        command: &WorkerCommand,
        database_url: &str,
        transport_url: &str,
        concurrency: usize,
        exit_when_idle: bool,
    ) -> Result<Self> {
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .args([
                "worker",
                "--demo",
                "--kinds",
                crate::noop::KIND,
                "--concurrency",
            ])
            .arg(concurrency.to_string())
            .args(exit_when_idle.then_some("--exit-when-idle"))
            // In the environment, not on the command line, which any user can read in `ps`.
            .env("OPREC_DATABASE_URL", database_url)
            .env("OPREC_TRANSPORT_URL", transport_url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                Error::Worker(format!("cannot start {}: {e}", command.program.display()))
            })?;
        let pid = child
            .id()
            .ok_or_else(|| Error::Worker("the worker exited at once".into()))?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready) = watch::channel(false);
        if let Some(err) = child.stderr.take() {
            let lines = stderr.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(err).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    // `oprec worker ...: running ...` is printed once the worker is about to run.
                    if line.starts_with("oprec worker ") && line.contains(": running ") {
                        let _ = ready_tx.send(true);
                    }
                    let mut lines = lines.lock().unwrap_or_else(|e| e.into_inner());
                    if lines.len() < 200 {
                        lines.push(line);
                    }
                }
            });
        }
        let mut out = child.stdout.take();
        let stdout = tokio::spawn(async move {
            let mut s = String::new();
            if let Some(out) = out.as_mut() {
                let _ = out.read_to_string(&mut s).await;
            }
            s
        });
        Ok(WorkerProcess {
            child,
            pid,
            stderr,
            ready,
            stdout,
            peak_rss: 0,
        })
    }

    fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("\n")
    }

    /// Waits until the worker says it runs (or fails if it exits first or takes over `limit`).
    pub(crate) async fn ready(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        while !*self.ready.borrow() {
            if let Some(status) = self.child.try_wait()? {
                return Err(Error::Worker(format!(
                    "exited ({status}) before it ran: {}",
                    self.stderr_text()
                )));
            }
            if Instant::now() > deadline {
                return Err(Error::Worker(format!(
                    "not running after {limit:?}: {}",
                    self.stderr_text()
                )));
            }
            self.sample();
            let _ = tokio::time::timeout(SAMPLE_EVERY, self.ready.changed()).await;
        }
        Ok(())
    }

    fn sample(&mut self) {
        if let Some(hwm) = vm_hwm(self.pid) {
            self.peak_rss = self.peak_rss.max(hwm);
        }
    }

    /// Asks the worker to drain and stop (SIGTERM, through `kill`), then waits as [`wait`] does.
    ///
    /// [`wait`]: WorkerProcess::wait
    pub(crate) async fn stop(mut self, limit: Duration) -> Result<Exited> {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await;
        if !sent.is_ok_and(|s| s.success()) {
            // No `kill` to be found: stop it the hard way; its work is already recorded.
            self.child.start_kill()?;
            let _ = self.child.wait().await;
            return Ok(Exited {
                peak_rss_bytes: self.peak_rss,
                stdout: String::new(),
            });
        }
        self.wait(limit).await
    }

    /// Waits for the worker to exit on its own (idle, or after [`stop`](Self::stop)), sampling
    /// its memory; kills it and fails after `limit`, or if it exits with a failure.
    pub(crate) async fn wait(mut self, limit: Duration) -> Result<Exited> {
        let deadline = Instant::now() + limit;
        let status = loop {
            self.sample();
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill().await;
                return Err(Error::Worker(format!(
                    "still running after {limit:?}; killed. Its log: {}",
                    self.stderr_text()
                )));
            }
            tokio::time::sleep(SAMPLE_EVERY).await;
        };
        if !status.success() {
            return Err(Error::Worker(format!(
                "exited with {status}: {}",
                self.stderr_text()
            )));
        }
        let stdout = self.stdout.await.unwrap_or_default();
        Ok(Exited {
            peak_rss_bytes: self.peak_rss,
            stdout,
        })
    }
}
