//! A process of the `oprec` binary running beside the test (a worker), stopped with SIGTERM and
//! reaped when the test is done with it, even when the test fails.

#![allow(dead_code)]

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::Oprec;

/// A worker running in the background; stopped with SIGTERM (and reaped) when dropped.
pub struct Background {
    child: Child,
}

impl Background {
    /// Starts `oprec ARGS` with its output discarded.
    pub fn start(o: &Oprec, args: &[&str]) -> Self {
        let child = o
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start oprec");
        Background { child }
    }

    /// Sends SIGTERM and waits for the drain.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}
