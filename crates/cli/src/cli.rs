//! The command line as clap types. Command names and flags are an interface that scripts and
//! tests rely on: keep them. Values that need checking (durations, ids, statuses, JSON) arrive as
//! text and are checked by the commands, so that a bad one is a one-line message and exit 2.
//! The operator commands (re-drive, controls, quarantine, cancel, reconcile, stats, audit) keep
//! their flags beside their code in `commands/`, and share the filter flags of `filter.rs`.

use std::path::PathBuf;

use clap::{ArgAction, ArgGroup, Args, Parser, Subcommand};

use crate::commands::alerts::AlertsArgs;
use crate::commands::archive::ArchiveArgs;
use crate::commands::audit::AuditArgs;
use crate::commands::bench::BenchArgs;
use crate::commands::cancel::CancelArgs;
use crate::commands::controls::{ControlsArgs, PauseArgs, PostponeArgs, ResumeArgs};
use crate::commands::dashboard::DashboardArgs;
use crate::commands::import::ImportArgs;
use crate::commands::limits::{LimitArgs, LimitsArgs};
use crate::commands::quarantine::{QuarantineArgs, ReleaseArgs};
use crate::commands::reconcile::ReconcileCommand;
use crate::commands::redrive::RedriveArgs;
use crate::commands::schedules::SchedulesArgs;
use crate::commands::simulate::SimulateCommand;
use crate::commands::stats::StatsArgs;
use crate::commands::workers::WorkersArgs;

/// The store used when neither `--database-url` nor `OPREC_DATABASE_URL` says otherwise.
pub(crate) const DEFAULT_DATABASE_URL: &str = "sqlite://oprec.db?mode=rwc";

/// Durable operation records for background work: the database row is the intent, the broker
/// only a doorbell.
#[derive(Debug, Parser)]
#[command(name = "oprec", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub(crate) struct Global {
    /// The store: `sqlite://PATH?mode=rwc` (embedded; the file is created) or
    /// `postgres://USER@HOST/DB`. Passwords are never printed.
    #[arg(
        long,
        global = true,
        env = "OPREC_DATABASE_URL",
        hide_env_values = true,
        default_value = DEFAULT_DATABASE_URL,
        value_name = "URL"
    )]
    pub database_url: String,

    /// Where wake-ups go: `poll` (no broker: workers claim from the store), `redis://HOST`,
    /// `amqp://HOST`, or `memory://`, which only connects producers and workers inside one process
    /// (as `oprec demo` does).
    #[arg(
        long_help = "Where wake-ups go: `poll` (no broker: workers claim from the store), \
`redis://HOST[:PORT][/DB]` (also `rediss://` for TLS, `redis+cluster://H1,H2`), \
`amqp://USER:PASS@HOST[:PORT]/VHOST` (also `amqps://`), or `memory://`, which only connects \
producers and workers inside one process (as `oprec demo` does).\n\n\
Parameters (anything else is refused, so a typo never falls back to a shared default):\n  \
redis: prefix= (key prefix of the per-kind streams; older name stream=), group= (consumer \
group), and the driver's protocol=, db=, user=, pass=\n  \
amqp: prefix= (queue name prefix; older name queue=), queue_type=quorum, queue_expires= \
(seconds), prefetch=, and the driver's heartbeat=, frame_max=, channel_max=, \
connection_timeout=, auth_mechanism=",
        long,
        global = true,
        env = "OPREC_TRANSPORT_URL",
        hide_env_values = true,
        default_value = "poll",
        value_name = "URL"
    )]
    pub transport: String,

    /// The most PostgreSQL sessions this process opens (its pool), 1 to 1000; default 10.
    #[arg(
        long_help = "The most PostgreSQL sessions this process opens (its pool), 1 to 1000; \
default 10. Every worker, dashboard and command holds up to that many of the server's \
max_connections (100 in a stock PostgreSQL), so a fleet of more than a few workers on one \
server needs fewer each (or a larger max_connections). A worker uses a session per claim, \
completion and heartbeat batch in flight and one per handler inside a fenced transaction; with \
fewer sessions than it has fenced handlers, they wait for one in turn. SQLite ignores it.",
        long,
        global = true,
        env = "OPREC_DB_CONNECTIONS",
        value_parser = clap::value_parser!(u32).range(1..=1000),
        value_name = "N"
    )]
    pub db_connections: Option<u32>,

    /// Log to stderr (`-vv` for more detail); RUST_LOG, when set, decides instead.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,

    /// Print tables and lines at full width: no cell cut to fit the terminal (whose width comes
    /// from the terminal, else COLUMNS; output to a pipe or file is never cut without COLUMNS).
    #[arg(long, global = true)]
    pub wide: bool,

    /// How log lines are written to stderr: `text` for people, or `json` (one JSON object per
    /// line, with timestamp, level, target, fields and the current spans) for a log collector.
    #[arg(
        long,
        global = true,
        env = "OPREC_LOG_FORMAT",
        value_enum,
        default_value_t = crate::logging::LogFormat::Text,
        value_name = "FORMAT"
    )]
    pub log_format: crate::logging::LogFormat,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Create or upgrade the schema (tables, indexes, constraints).
    Migrate(MigrateArgs),
    /// Enqueue operations of a demo kind or a kind declared in --kinds-file (the row commits
    /// first, then a wake-up is published).
    Enqueue(EnqueueArgs),
    /// Show and list operations with their attempt history.
    #[command(subcommand)]
    Ops(OpsCommand),
    /// Purge or measure the broker's wake-ups (the store keeps every operation).
    #[command(subcommand)]
    Transport(TransportCommand),
    /// Run a worker with its scheduler, rescuer, reconciler and dead-letter alerts until SIGTERM
    /// or ctrl-c, then drain.
    Worker(WorkerArgs),
    /// Run the retry scenarios (outages, bad input, crashes) on a virtual clock with no services.
    Demo(DemoArgs),
    /// Re-drive dead operations by filter, after a dry run, at a bounded pace.
    #[command(
        long_about = crate::commands::redrive::LONG_ABOUT,
        args_conflicts_with_subcommands = true
    )]
    Redrive(RedriveArgs),
    /// Stop claims and wake-ups of a kind, failure class or dependency (nothing else stops).
    Pause(PauseArgs),
    /// Lift a pause or postponement; for a dependency, also release the operations held for its
    /// configuration failure.
    Resume(ResumeArgs),
    /// Hold back a dependency's operations until a stated time.
    Postpone(PostponeArgs),
    /// The pauses and postponements in force.
    Controls(ControlsArgs),
    /// Limit a kind or dependency across the fleet: at most N running, at most R started per
    /// second (or remove the limit).
    #[command(long_about = crate::commands::limits::LONG_ABOUT)]
    Limit(LimitArgs),
    /// The limits across the fleet, with their use now.
    Limits(LimitsArgs),
    /// Move pending operations matching filters to held, with a reason.
    Quarantine(QuarantineArgs),
    /// Return held operations matching filters to pending.
    Release(ReleaseArgs),
    /// Cancel operations that have not finished and are not running.
    Cancel(CancelArgs),
    /// Unknown outcomes: list them, or record a person's decision.
    #[command(subcommand)]
    Reconcile(ReconcileCommand),
    /// What is failing, why, and whether it is safe: the figures at a glance.
    Stats(StatsArgs),
    /// Move ended operations with their whole history to a JSON Lines file (verified before
    /// anything is removed), or restore them from one.
    #[command(long_about = crate::commands::archive::LONG_ABOUT)]
    Archive(ArchiveArgs),
    /// The audit log of operator actions, newest first.
    Audit(AuditArgs),
    /// The alert log, newest first: what was told to which owner (deaths, configuration holds,
    /// dependencies paused by them), and whether it arrived.
    Alerts(AlertsArgs),
    /// Retention of finished operations: what would be removed, and when.
    #[command(subcommand)]
    Retention(crate::commands::retention::RetentionCommand),
    /// The workers running now, the kinds each handles, and pending kinds none of them handles.
    Workers(WorkersArgs),
    /// The recurring kinds: next tick, last tick and its operation's status, whether served.
    Schedules(SchedulesArgs),
    /// Serve the operator web dashboard (loopback; actions need the operator token).
    #[command(long_about = crate::commands::dashboard::LONG_ABOUT)]
    Dashboard(DashboardArgs),
    /// Import a legacy queue (a Redis list or an AMQP queue of JSON jobs) as operations.
    Import(ImportArgs),
    /// Benchmark oprec against PostgreSQL's own ceiling (PostgreSQL, and the brokers named).
    Bench(BenchArgs),
    /// What a retry policy does to a dependency during an outage, on a virtual clock.
    #[command(subcommand)]
    Simulate(SimulateCommand),
}

impl Command {
    /// The log level without `-v`: the demo's expected warnings (vanished attempts, the hung
    /// handler's stale claims) are part of its story, not news.
    pub(crate) fn default_log_level(&self) -> &'static str {
        match self {
            Command::Demo(_) => "error",
            _ => "warn",
        }
    }
}

/// `oprec migrate`.
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// Also create the demo kinds' `demo_effects` table, so that `oprec worker --demo` can run
    /// under a role without DDL rights (a worker that may create it does so itself).
    #[arg(long)]
    pub demo: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec enqueue`.
#[derive(Debug, Args)]
#[command(
    long_about = "Enqueue operations of a demo kind (the row commits first, then a wake-up is \
published unless the transport is `poll`).\n\nThe demo kinds are enqueued under their default \
policy: the ladder 0,1,2,4 s, so at most 4 attempts. A worker's --demo-* flags decide the ladder \
it climbs and may lower that bound, not raise it: the bound is stored with each operation."
)]
#[command(group(ArgGroup::new("input").required(true).args(["payload", "payload_file"])))]
pub(crate) struct EnqueueArgs {
    /// The operation kind: one of the demo kinds (demo.noop, demo.flaky, demo.crash, demo.slow,
    /// demo.effect) or of the kinds --kinds-file declares.
    #[arg(long, value_name = "KIND")]
    pub kind: String,

    /// Also accept the kinds this TOML file declares (see `oprec worker --kinds-file`); their
    /// policies set each operation's attempt bound and deadline. The headers' environment
    /// variables are not read: a producer needs no secrets.
    #[arg(long, value_name = "PATH", env = "OPREC_KINDS_FILE")]
    pub kinds_file: Option<PathBuf>,

    /// The payload, as JSON (at most --max-payload-bytes).
    #[arg(long, value_name = "JSON")]
    pub payload: Option<String>,

    /// Read the payload (JSON) from a file, or from standard input with `-`.
    #[arg(long, value_name = "PATH|-")]
    pub payload_file: Option<PathBuf>,

    /// Idempotency key: enqueueing the same key for the kind again returns the existing
    /// operation. With --count, the keys are KEY-1 .. KEY-N.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,

    /// Not eligible before this much time has passed (`90s`, `5m`, `48h`).
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,

    /// No attempt after this time: a duration from now (`48h`) or an RFC 3339 time.
    #[arg(long, value_name = "DURATION|RFC3339")]
    pub deadline: Option<String>,

    /// Enqueue N copies, in batches of 1,000.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,

    /// Claim order among eligible operations: -2 (claimed last) to 2 (claimed first), 0 by
    /// default. An operation eligible for longer than 5 minutes is claimed before every priority,
    /// oldest first, so low priorities still run under sustained high-priority load (README,
    /// "Priorities").
    #[arg(long, value_name = "-2..=2", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i16).range(-2..=2))]
    pub priority: Option<i16>,

    /// The producer's W3C trace context (`00-<trace id>-<parent id>-<flags>`), stored on the
    /// operation: every attempt's span links to it (README, "Traces"). A malformed value exits 2.
    #[arg(long, value_name = "TRACEPARENT", env = "TRACEPARENT")]
    pub traceparent: Option<String>,

    /// Refuse a payload larger than this many bytes of JSON; nothing is stored. Store large
    /// inputs elsewhere and enqueue a reference.
    #[arg(long, value_name = "BYTES", env = "OPREC_MAX_PAYLOAD_BYTES",
          default_value_t = oprec::DEFAULT_MAX_PAYLOAD_BYTES)]
    pub max_payload_bytes: usize,

    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec ops ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum OpsCommand {
    /// One operation: the record and its attempt history.
    Show(ShowArgs),
    /// Operations matching filters (the filters of redrive, quarantine and cancel), newest first.
    List(Box<ListArgs>),
}

/// `oprec ops show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The operation's id (a UUID).
    pub id: String,
    /// Print the record and its attempts as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec ops list`.
#[derive(Debug, Args)]
#[command(
    long_about = "Operations matching filters, newest first (as the dashboard lists them; \
--oldest-first for the other way), one page at a time: the last line names the --after that \
gives the next page.\n\nThe filters are the ones `oprec redrive`, `oprec quarantine`, \
`oprec release` and `oprec cancel` take, so a listing shows what those would touch. Here --limit \
is the page size (50 unless given, at most 10,000)."
)]
pub(crate) struct ListArgs {
    /// Only this status: pending, running, reconciling, held, succeeded, dead, cancelled.
    #[arg(long, value_name = "STATUS", help_heading = "Filters")]
    pub status: Option<String>,
    #[command(flatten)]
    pub filter: crate::filter::FilterArgs,
    /// Only operations that ended for this terminal reason (repeatable): permanent,
    /// attempts_exhausted, deadline_passed, crash_loop, operator, obsolete.
    #[arg(long = "reason", value_name = "REASON", help_heading = "Filters")]
    pub reasons: Vec<String>,
    /// Only operations that ended at or after this time, as `oprec redrive --since` reads it:
    /// RFC 3339, or a duration ago (`2h`). Operations not ended never match.
    #[arg(long, value_name = "TIME|DURATION", help_heading = "Filters")]
    pub since: Option<String>,
    /// Only operations that ended before this time: RFC 3339, or a duration ago (`30m`).
    #[arg(long, value_name = "TIME|DURATION", help_heading = "Filters")]
    pub until: Option<String>,
    /// Only operations created at or after this time: RFC 3339, or a duration ago (`2h`).
    #[arg(long, value_name = "TIME|DURATION", help_heading = "Filters")]
    pub created_since: Option<String>,
    /// Only operations created before this time: RFC 3339, or a duration ago (`30m`).
    #[arg(long, value_name = "TIME|DURATION", help_heading = "Filters")]
    pub created_until: Option<String>,
    /// The next page: only operations listed after this id (the id the previous page ended
    /// with, in the same order).
    /// Operations re-driven as new (dead or cancelled ones whose copy, linked both ways,
    /// carries the work on): `hide`, `show` (marked "re-driven as ID") or `only`. By default
    /// they are hidden when listing --status dead, so that list is the dead awaiting action,
    /// and shown otherwise.
    #[arg(long, value_name = "WHICH")]
    pub redriven: Option<String>,
    #[arg(long, value_name = "ID")]
    pub after: Option<String>,
    /// Oldest first (by creation) instead of newest first.
    #[arg(long)]
    pub oldest_first: bool,
    /// Print the operations as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// `oprec transport ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum TransportCommand {
    /// Drop every waiting wake-up. The operations stay in the store and the scheduler re-wakes
    /// the eligible ones: no intent is lost.
    Purge(PurgeArgs),
    /// How many wake-ups wait on the broker.
    Depth(DepthArgs),
}

/// `oprec transport purge`.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// Really purge (without it, a dry run: the command says how many wake-ups would go,
    /// changes nothing and exits 0, as every bulk command does without --yes).
    #[arg(long)]
    pub yes: bool,
    /// Purge only this kind's wake-ups (default: every kind's).
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    #[command(flatten)]
    pub actor: crate::audit_trail::ActorArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec transport depth`.
#[derive(Debug, Args)]
pub(crate) struct DepthArgs {
    /// Only this kind's wake-ups (default: every kind's, one row each).
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oprec worker`.
#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// Handlers running at once.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub concurrency: usize,
    /// The claim's lease; heartbeats renew it every third. Between 1s and 24h.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub lease: String,
    /// On shutdown, how long in-flight attempts may finish before they are released.
    #[arg(long, value_name = "DURATION", default_value = "20s")]
    pub drain_timeout: String,
    /// How much work the worker claims ahead of its handlers, in time at the completion rate it
    /// achieves: claimed operations wait in its buffer, on a lease, for a free handler (README,
    /// "Claiming ahead"). `0s` claims only for free handlers.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub claim_ahead: String,
    /// The most claimed operations that buffer holds, whatever the rate; 0 claims only for free
    /// handlers. A small buffer leaves more of a burst to the pool's other workers.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub claim_ahead_max: usize,
    /// How long a published wake-up is trusted before the scheduler wakes the operation again.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub rewake_after: String,
    /// Isolated vanished attempts in a row (lease expired, no outcome, while the operation ran
    /// alone in its worker) before an operation is dead (crash_loop). An attempt that vanished
    /// beside other work only makes its operation a suspect, retried alone.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub vanish_limit: u32,
    /// The application's code version, recorded with each attempt and on the operation: the
    /// version of the code that runs the handlers (a release tag, a commit), not oprec's, so that
    /// dead operations can be counted by the deploy that made them [default: none].
    #[arg(long, value_name = "V", env = "OPREC_CODE_VERSION")]
    pub code_version: Option<String>,
    /// Register the demo kinds (demo.noop, demo.flaky, demo.crash, demo.slow, demo.effect).
    #[arg(long)]
    pub demo: bool,
    /// Register the kinds this TOML file declares, each run by an HTTP handler: its payload
    /// POSTed as JSON to the kind's URL with the effect key as Idempotency-Key, the answer mapped
    /// onto failure classes (see examples/kinds.toml). Beside --demo or instead of it. The file
    /// is checked before anything runs (an error names its line); the headers' values come from
    /// the environment variables it names, which must be set.
    #[arg(long, value_name = "PATH", env = "OPREC_KINDS_FILE")]
    pub kinds_file: Option<PathBuf>,
    /// Run only these of the registered kinds (comma-separated; default: all of them). The
    /// worker then takes only these kinds' wake-ups, so pools split by kind share one broker.
    #[arg(long, value_name = "KIND,...", value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// The demo kinds' ladder in seconds: the n-th number is the delay before attempt n, so the
    /// first is 0 [default: 0,1,2,4].
    #[arg(long, value_name = "SECONDS,...", requires = "demo")]
    pub demo_ladder: Option<String>,
    /// The demo kinds' attempt bound [default: the ladder's length].
    #[arg(long, value_name = "N", requires = "demo")]
    pub demo_max_attempts: Option<u32>,
    /// The demo kinds' execution timeout per attempt [default: 30s].
    #[arg(long, value_name = "DURATION", requires = "demo")]
    pub demo_timeout: Option<String>,
    /// Exit 0 once no operation of a registered kind has been pending-and-eligible or running
    /// for 2 seconds in a row (for tests and scripts).
    #[arg(long)]
    pub exit_when_idle: bool,
    /// Serve Prometheus metrics over HTTP on this address (`127.0.0.1:9464`): the `oprec stats`
    /// figures, the worker's counters and the handler latency.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Also announce every operation promoted to dead by POSTing it as JSON to this URL
    /// (retried until it answers 2xx); the structured log event stays. Webhook URLs often carry
    /// a secret in their path (Slack's do): only the scheme and host are ever printed, and the
    /// environment (OPREC_DEAD_LETTER_WEBHOOK) keeps it out of `ps`.
    #[arg(
        long,
        value_name = "URL",
        env = "OPREC_DEAD_LETTER_WEBHOOK",
        hide_env_values = true
    )]
    pub dead_letter_webhook: Option<String>,
    /// Send the alerts of one kind or one dependency to their owner's webhook instead of the
    /// default (`--dead-letter-webhook` and the log): `kind:NAME=URL` or `dependency:NAME=URL`;
    /// repeat for several. An alert goes to its kind's route, else its dependency's, else the
    /// default. OPREC_ALERT_ROUTES takes them separated by spaces, out of `ps`; only the scheme
    /// and host of a URL are ever printed.
    #[arg(
        long = "alert-route",
        value_name = "SCOPE:NAME=URL",
        env = "OPREC_ALERT_ROUTES",
        hide_env_values = true,
        value_delimiter = ' '
    )]
    pub alert_routes: Vec<String>,
    /// When a configuration failure (rejected credentials) names a dependency, pause the
    /// dependency (nothing that calls it can succeed until its configuration is repaired) and
    /// alert its owner; `oprec resume --dependency NAME` lifts it and releases the held
    /// operations.
    #[arg(long)]
    pub pause_on_configuration: bool,
    /// How often unknown outcomes are handed to their kind's reconcile hook.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub reconcile_interval: String,
    /// How long finished operations are kept (the maintenance leader removes them).
    #[command(flatten)]
    pub retention: crate::commands::retention::RetentionFlags,
    /// `auto`: while this process leads maintenance, it vacuums oprec's tables every minute when
    /// the PostgreSQL server's autovacuum is off for them (never when autovacuum is on); `off`:
    /// leave vacuuming to the database administrator.
    #[arg(long, value_name = "auto|off", default_value = "auto", value_parser = ["auto", "off"])]
    pub vacuum: String,
}

/// `oprec demo`.
#[derive(Debug, Args)]
#[command(
    long_about = "Run the retry scenarios (malformed input, transient outage, long outage, \
unknown remote result, deadline before the next rung, crash loop) with a real worker, scheduler \
and rescuer against a simulated provider, on a virtual clock, and print each scenario's attempts \
and end state.\n\nNo services are needed: the store is SQLite in a temporary folder (unless \
--database-url is given on the command line; OPREC_DATABASE_URL is ignored here, so the demo never \
writes into a configured database) and wake-ups use the in-memory transport."
)]
pub(crate) struct DemoArgs {
    /// Print the scenarios and their attempts as JSON.
    #[arg(long)]
    pub json: bool,
}
