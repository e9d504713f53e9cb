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
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
