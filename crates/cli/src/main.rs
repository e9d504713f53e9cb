//! `oprec`: the operator's command line for oprec. It migrates the schema, enqueues operations of
//! the demo kinds and of kinds declared in a file, shows and lists operations with their attempt
//! history, purges or measures the transport, runs a worker (with scheduler, rescuer, reconciler,
//! dead-letter alerts and Prometheus metrics; the declared kinds run by an HTTP handler), runs the
//! retry scenarios as a demo, and acts on operations as an operator: re-drive, pause and resume,
//! quarantine and release, cancel, reconcile, stats, audit.
//!
//! Not a library: commands parse flags, call the `oprec` facade (the operator workflows are
//! `oprec::ops`, shared with the dashboard) and print; the behaviour lives in the crates.
//! Exit codes: 0 ok, 1 failure, 2 bad usage or bad input (see [`exit`]).

mod audit_trail;
mod backend;
mod cli;
mod commands;
mod demo;
mod demo_kinds;
mod duration;
mod exit;
mod filter;
mod import;
mod kinds_file;
mod logging;
mod metrics;
#[cfg(feature = "otel")]
mod otel;
mod output;
#[cfg(test)]
mod parser_fuzz;
mod progress;
mod redaction;
mod terminal_width;

use std::process::ExitCode;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    // clap prints its own usage errors and exits 2 (0 for --help and --version).
    let matches = cli::Cli::command().get_matches();
    let explicit_database = matches.value_source("database_url") == Some(ValueSource::CommandLine);
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Held to the end of main: with the `otel` feature its drop flushes the spans still queued.
    let _logging = logging::init(
        cli.global.verbose,
        cli.command.default_log_level(),
        cli.global.log_format,
    );
    terminal_width::init(cli.global.wide);
    let redactor = redaction::Redactor::new([&cli.global.database_url, &cli.global.transport]);

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("oprec: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(commands::run(cli, explicit_database));
    // Background tasks (a hung demo handler, a signal listener) must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(2));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`oprec ops list | head`): nothing left to say to anyone.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oprec: {}", redactor.redact(&exit::one_line(&e)));
            exit::code(&e)
        }
    }
}
