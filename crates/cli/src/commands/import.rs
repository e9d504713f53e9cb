//! `oprec import`: moves a legacy queue's backlog (a Redis list of JSON jobs, or an AMQP queue of
//! JSON messages) into operations of one kind, idempotently, removing the legacy messages with
//! `--then-purge` only after their operations committed. See `crate::import` for how.

use std::path::PathBuf;

use chrono::Duration;
use clap::{ArgGroup, Args};
use oprec::operator::AuditEntry;
use oprec::{Ladder, RetryPolicy};
use serde_json::json;

use crate::audit_trail::ActorArgs;
use crate::backend::{self, Backend, store_error};
use crate::cli::Global;
use crate::demo_kinds::{self, DemoPolicy};
use crate::exit::bad;
use crate::import::{Importer, Tally, amqp_queue, redis_list};
use crate::{kinds_file, output, progress};

/// `oprec import`.
#[derive(Debug, Args)]
#[command(
    long_about = "Import a legacy queue's jobs as operations of one kind.\n\nEach job becomes an \
operation whose idempotency key is the job's id field (--id-field, default `id`), or, without \
one, `sha256:` and the hash of its body, so running the import twice creates nothing twice. Jobs \
are committed in batches of 1,000. With --then-purge the legacy messages are removed only after \
their operations committed (Redis: the imported head of the list, checked and trimmed in one \
script; AMQP: acknowledged after the commit, otherwise returned to the queue). A message that is \
not JSON becomes a held operation whose last error carries the parse error (`oprec release` once \
repaired); it is never dropped.\n\nA job whose id already names an operation with a different \
payload (two legacy jobs with one id and different bodies, or a job changed since an earlier \
import) is a conflict: nothing is created for it, it is counted and named with the operation that \
holds its id, and it stays in the legacy queue even with --then-purge, for someone to decide. \
The same job again (same id, same payload) is counted as already present.\n\nThe kind must be a demo kind, a kind --kinds-file declares (its operations \
get that kind's policy and dependency), or, with --any-kind, any name: its operations get \
the default import policy (30 s timeout, at most 6 attempts, the ladder 0, 60, 300, 1500, \
7500, 37500 s, give up after 7 days); the workers that run the kind apply their own ladder \
within that bound."
)]
#[command(group(ArgGroup::new("source").required(true).args(["list", "queue"])))]
pub(crate) struct ImportArgs {
    /// The legacy broker: `redis://HOST[:PORT]/DB` (with --list) or
    /// `amqp://USER:PASS@HOST[:PORT]/VHOST` (with --queue). Passwords are never printed; give
    /// the URL in the environment (OPREC_IMPORT_FROM) to keep it out of `ps` too.
    #[arg(
        long,
        value_name = "URL",
        env = "OPREC_IMPORT_FROM",
        hide_env_values = true
    )]
    pub from: String,
    /// The Redis list that holds the jobs (one JSON job per element).
    #[arg(long, value_name = "KEY")]
    pub list: Option<String>,
    /// The AMQP queue that holds the jobs (one JSON job per message); it must exist.
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
    /// The kind the operations get.
    #[arg(long, value_name = "KIND")]
    pub kind: String,
    /// Accept a kind this CLI does not know, under the default import policy (see above).
    #[arg(long)]
    pub any_kind: bool,
    /// Also accept the kinds this TOML file declares, with their own policies and dependencies
    /// (see `oprec worker --kinds-file`).
    #[arg(long, value_name = "PATH", env = "OPREC_KINDS_FILE")]
    pub kinds_file: Option<PathBuf>,
    /// The job field that holds its id (a string or a number).
    #[arg(long, value_name = "FIELD", default_value = "id")]
    pub id_field: String,
    /// Remove the legacy messages once their operations committed (conflicts stay in the
    /// source).
    #[arg(long)]
    pub then_purge: bool,
    /// Print the counts as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub actor: ActorArgs,
}

/// The policy of a kind this CLI does not know (`--any-kind`): bounded in attempts and time.
fn any_kind_policy() -> oprec::Result<RetryPolicy> {
    RetryPolicy::builder()
        .timeout(Duration::seconds(30))
        .max_attempts(6)
        .give_up_after(Duration::days(7))
        .external_io(Ladder::schedule_secs(&[0, 60, 300, 1500, 7500, 37500]))
        .jitter(oprec::Jitter::None)
        .build()
}

/// Imports as asked and prints the counts.
pub(crate) async fn run(global: &Global, args: ImportArgs) -> anyhow::Result<()> {
    let file = args
        .kinds_file
        .as_deref()
        .map(kinds_file::load)
        .transpose()?;
    let declared = match &file {
        Some(file) => kinds_file::enqueue_kinds(file)?
            .into_iter()
            .find(|k| k.name() == args.kind),
        None => None,
    };
    let (policy, dependency) = if demo_kinds::NAMES.contains(&args.kind.as_str()) {
        (
            DemoPolicy::default().retry_policy()?,
            Some(demo_kinds::DEPENDENCY.to_owned()),
        )
    } else if let Some(kind) = declared {
        (
            kind.policy().clone(),
            kind.dependency_name().map(str::to_owned),
        )
    } else if args.any_kind && !args.kind.trim().is_empty() {
        // The kind names the stream or queue its wake-ups travel on.
        oprec::transport::check_kind(&args.kind).map_err(|e| match e {
            oprec::Error::InvalidInput(why) => bad(format!("--kind: {why}")),
            other => other.into(),
        })?;
        (any_kind_policy()?, None)
    } else {
        return Err(bad(format!(
            "unknown kind {:?}; accepted kinds: {}; give --any-kind to import under the \
             default import policy{}",
            args.kind,
            kinds_file::accepted(file.as_ref()),
            if file.is_none() {
                ", or --kinds-file FILE to import a kind a file declares"
            } else {
                ""
            }
        )));
    };
    // A mistyped source URL is refused before any driver reads it: lapin and the Redis driver
    // take `amqp:/user:pass@host` for a virtual host or path and print it, password and all.
    if let Some(why) = oprec::url_shape_error(&args.from) {
        return Err(bad(format!("--from: {why}")));
    }
    let scheme = args.from.split_once(':').map(|(s, _)| s).unwrap_or("");
    let shown = oprec::redact_url(&args.from);
    match (scheme, &args.list, &args.queue) {
        ("redis" | "rediss", Some(_), None) | ("amqp" | "amqps", None, Some(_)) => {}
        ("redis" | "rediss", ..) => return Err(bad("a redis:// source takes --list KEY")),
        ("amqp" | "amqps", ..) => return Err(bad("an amqp:// source takes --queue NAME")),
        _ => {
            return Err(bad(format!(
                "unsupported --from {shown}; use redis://HOST/DB or amqp://HOST/VHOST"
            )));
        }
    }
    let actor = args.actor.who()?.actor;

    let backend = Backend::open(global).await?;
    backend.ensure_schema().await?;
    let importer = Importer {
        store: backend.store.clone(),
        transport: backend::transport(&global.transport)?,
        kind: args.kind.clone(),
        policy,
        dependency,
        id_field: args.id_field.clone(),
        actor: actor.clone(),
    };
    let bar = progress::bar(0, "imported");
    let result = match (&args.list, &args.queue) {
        (Some(list), _) => {
            redis_list::import(&args.from, list, &importer, args.then_purge, &bar).await
        }
        (_, Some(queue)) => {
            amqp_queue::import(&args.from, queue, &importer, args.then_purge, &bar).await
        }
        (None, None) => unreachable!("clap requires --list or --queue"),
    };
    bar.finish_and_clear();
    let tally = result.map_err(|e| match e.downcast::<oprec::Error>() {
        Ok(e) => store_error(e),
        Err(e) => e,
    })?;

    let source = json!({
        "from": shown,
        "list": args.list,
        "queue": args.queue,
    });
    backend
        .store
        .audit_insert(AuditEntry {
            actor,
            action: "import".into(),
            filter: source.clone(),
            affected: tally.imported,
            reason: None,
            details: json!({
                "kind": args.kind,
                "then_purge": args.then_purge,
                "counts": &tally,
            }),
        })
        .await
        .map_err(store_error)?;
    print(&args, &shown, &tally)
}

fn print(args: &ImportArgs, shown: &str, t: &Tally) -> anyhow::Result<()> {
    if args.json {
        return output::json(&json!({
            "from": shown,
            "list": args.list,
            "queue": args.queue,
            "kind": args.kind,
            "read": t.read,
            "imported": t.imported,
            "already_present": t.already_present,
            "conflicts": t.conflicts,
            "conflicting": t.conflicting,
            "malformed_held": t.malformed_held,
            "purged": t.purged,
        }));
    }
    output::line!(
        "read {}: imported {}, already present {}, conflicts {}, malformed (held) {}, purged {}",
        t.read,
        t.imported,
        t.already_present,
        t.conflicts,
        t.malformed_held,
        t.purged
    )?;
    for c in &t.conflicting {
        output::line!(
            "conflict: id {:?} is taken by operation {} with a different payload; the message \
             stays in the source (see `oprec ops show {}`)",
            output::cut(&c.key, 64),
            c.existing,
            c.existing
        )?;
    }
    if t.conflicts > t.conflicting.len() as u64 {
        output::line!(
            "... and {} more conflicts (the first {} are named)",
            t.conflicts - t.conflicting.len() as u64,
            t.conflicting.len()
        )?;
    }
    Ok(())
}
