//! `demo.crash`: serves the crash tests (a worker killed mid-handler; a crash loop ending dead
//! after `--vanish-limit` vanished attempts). Attempts 1..=`crash_times` abort the whole process
//! before any outcome is written, so the lease expires and the rescuer records a vanished attempt.

use oprec::{Kind, RetryPolicy};
use serde::Deserialize;

use super::DEPENDENCY;

/// `demo.crash`'s payload.
#[derive(Deserialize)]
struct Crash {
    crash_times: u32,
}

/// The kind.
pub(super) fn kind(policy: &RetryPolicy) -> Kind {
    Kind::new("demo.crash", policy.clone(), |ctx, p: Crash| async move {
        if ctx.attempt() <= p.crash_times {
            eprintln!(
                "demo.crash: aborting the process on attempt {} of operation {} (crash_times {})",
                ctx.attempt(),
                ctx.id(),
                p.crash_times
            );
            std::process::abort();
        }
        Ok(())
    })
    .dependency(DEPENDENCY)
}
