//! One module per command; each parses what it was given, calls the facade, and prints.

pub(crate) mod alerts;
pub(crate) mod archive;
pub(crate) mod audit;
pub(crate) mod bench;
pub(crate) mod cancel;
pub(crate) mod controls;
pub(crate) mod dashboard;
mod demo;
mod enqueue;
pub(crate) mod import;
pub(crate) mod limits;
mod migrate;
mod ops;
pub(crate) mod quarantine;
pub(crate) mod reconcile;
pub(crate) mod redrive;
pub(crate) mod retention;
pub(crate) mod schedules;
pub(crate) mod simulate;
pub(crate) mod stats;
mod transport;
mod worker;
pub(crate) mod workers;

use crate::cli::{Cli, Command, OpsCommand, TransportCommand};
use reconcile::ReconcileCommand;

/// Runs the command. `explicit_database` says whether `--database-url` was on the command line
/// (the demo ignores the environment's).
pub(crate) async fn run(cli: Cli, explicit_database: bool) -> anyhow::Result<()> {
    let g = &cli.global;
    match cli.command {
        Command::Migrate(a) => migrate::run(g, a).await,
        Command::Enqueue(a) => enqueue::run(g, a).await,
        Command::Ops(OpsCommand::Show(a)) => ops::show(g, a).await,
        Command::Ops(OpsCommand::List(a)) => ops::list(g, *a).await,
        Command::Transport(TransportCommand::Purge(a)) => transport::purge(g, a).await,
        Command::Transport(TransportCommand::Depth(a)) => transport::depth(g, a).await,
        Command::Worker(a) => worker::run(g, a).await,
        Command::Demo(a) => demo::run(g, a, explicit_database).await,
        Command::Redrive(a) => redrive::run(g, a).await,
        Command::Pause(a) => controls::pause(g, a).await,
        Command::Resume(a) => controls::resume(g, a).await,
        Command::Postpone(a) => controls::postpone(g, a).await,
        Command::Controls(a) => controls::list(g, a).await,
        Command::Limit(a) => limits::set(g, a).await,
        Command::Limits(a) => limits::list(g, a).await,
        Command::Quarantine(a) => quarantine::quarantine(g, a).await,
        Command::Release(a) => quarantine::release(g, a).await,
        Command::Cancel(a) => cancel::run(g, a).await,
        Command::Reconcile(ReconcileCommand::List(a)) => reconcile::list(g, a).await,
        Command::Reconcile(ReconcileCommand::Resolve(a)) => reconcile::resolve(g, *a).await,
        Command::Stats(a) => stats::run(g, a).await,
        Command::Archive(a) => archive::run(g, a).await,
        Command::Audit(a) => audit::run(g, a).await,
        Command::Alerts(a) => alerts::run(g, a).await,
        Command::Retention(retention::RetentionCommand::Show(a)) => retention::show(g, a).await,
        Command::Workers(a) => workers::run(g, a).await,
        Command::Schedules(a) => schedules::run(g, a).await,
        Command::Dashboard(a) => dashboard::run(g, a).await,
        Command::Import(a) => import::run(g, a).await,
        Command::Bench(a) => bench::run(g, a).await,
        Command::Simulate(c) => simulate::run(g, c).await,
    }
}
