//! One module per command; each parses what it was given, calls the facade, and prints.

mod demo;
mod enqueue;
mod migrate;
mod ops;
mod transport;
mod worker;

use crate::cli::{Cli, Command, OpsCommand, TransportCommand};

/// Runs the command. `explicit_database` says whether `--database-url` was on the command line
/// (the demo ignores the environment's).
pub(crate) async fn run(cli: Cli, explicit_database: bool) -> anyhow::Result<()> {
    let g = &cli.global;
    match cli.command {
        Command::Migrate(a) => migrate::run(g, a).await,
        Command::Enqueue(a) => enqueue::run(g, a).await,
        Command::Ops(OpsCommand::Show(a)) => ops::show(g, a).await,
        Command::Ops(OpsCommand::List(a)) => ops::list(g, a).await,
        Command::Transport(TransportCommand::Purge(a)) => transport::purge(g, a).await,
        Command::Transport(TransportCommand::Depth(a)) => transport::depth(g, a).await,
        Command::Worker(a) => worker::run(g, a).await,
        Command::Demo(a) => demo::run(g, a, explicit_database).await,
    }
}
