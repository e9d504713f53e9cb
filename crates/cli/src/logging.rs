//! Tracing to stderr: `-v` for info, `-vv` for debug; `RUST_LOG`, when set, decides instead.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the subscriber. `default` is the level used without `-v` and without `RUST_LOG`.
pub(crate) fn init(verbose: u8, default: &str) {
    let level = match verbose {
        0 => default,
        1 => "info",
        _ => "debug",
    };
    // lapin logs every channel the broker closes at ERROR, the expected NOT_FOUND of asking the
    // depth of a kind that has no queue yet included; every call that fails is reported by oprec
    // through the error it returns, so lapin's channel log is left out unless RUST_LOG asks.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{level},lapin::channel=off")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
