//! `oprec enqueue`: one operation, or `--count` copies in batches of 1,000, of a demo kind or a
//! kind a `--kinds-file` declares, through `oprec::Client` (the row commits, then a wake-up is
//! published unless the transport is `poll`).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use chrono::Utc;
use oprec::{Client, EnqueueOptions, TraceParent};
use serde_json::{Value, json};

use crate::backend::{self, Backend, store_error};
use crate::cli::{EnqueueArgs, Global};
use crate::demo_kinds::{self, DemoPolicy, EffectTable};
use crate::exit::bad;
use crate::{duration, kinds_file, output, progress};

/// Operations per enqueue call (one transaction, one publish).
const BATCH: u64 = 1000;

/// The most text read for a payload of at most `limit` bytes: room for indentation and
/// spaces around a payload at the limit, but never an endless stream (`/dev/zero`, a pipe that
/// does not end) read until memory runs out.
fn read_cap(limit: usize) -> u64 {
    (limit as u64).saturating_mul(4).max(1 << 20)
}

/// Reads `from` as UTF-8 text, refusing once it passes [`read_cap`] of `limit`.
fn read_bounded(from: impl Read, limit: usize, source: &str) -> anyhow::Result<String> {
    let cap = read_cap(limit);
    let mut bytes = Vec::new();
    from.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("cannot read {source}: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(bad(format!(
            "{source} goes on past {cap} bytes (the payload limit is {limit} bytes, see \
             --max-payload-bytes): refused without reading the rest"
        )));
    }
    String::from_utf8(bytes).map_err(|_| bad(format!("{source} is not UTF-8 text")))
}

/// Reads and parses the payload from `--payload` or `--payload-file` (`-` is standard input),
/// reading no more than the payload limit allows.
fn payload(args: &EnqueueArgs) -> anyhow::Result<Value> {
    let limit = args.max_payload_bytes;
    let (text, source) = match (&args.payload, &args.payload_file) {
        (Some(text), _) => (text.clone(), "--payload".to_owned()),
        (None, Some(path)) if path == Path::new("-") => {
            let source = "the payload on standard input".to_owned();
            (
                read_bounded(std::io::stdin().lock(), limit, &source)?,
                source,
            )
        }
        (None, Some(path)) => {
            let source = format!("--payload-file {}", path.display());
            let file =
                std::fs::File::open(path).map_err(|e| bad(format!("cannot read {source}: {e}")))?;
            (read_bounded(file, limit, &source)?, source)
        }
        (None, None) => return Err(bad("give --payload JSON or --payload-file PATH")),
    };
    oprec::ops::payload::parse(&source, &text).map_err(|e| bad(e.0))
}

/// An idempotency key names one effect: the operation that already holds `key` must have been
/// asked with the same payload, or the new request is a conflict (bad input, exit 2), reported
/// with the operation that holds the key, and nothing is enqueued.
async fn same_payload(
    backend: &Backend,
    existing: oprec::OperationId,
    key: Option<&str>,
    payload: &Value,
) -> anyhow::Result<()> {
    let held = backend
        .store
        .operation_get(oprec::store::OperationGetParams { id: existing })
        .await
        .map_err(store_error)?;
    match held {
        Some(d) if !oprec::ops::payload::same(&d.operation.payload, payload) => Err(bad(format!(
            "the idempotency key {:?} is taken by operation {existing} ({}), enqueued with a \
             different payload; nothing was enqueued: a key names one effect, so give the same \
             payload to get that operation back, or another key for another effect (see it \
             with `oprec ops show {existing}`)",
            output::cut(key.unwrap_or_default(), 64),
            d.operation.status,
        ))),
        _ => Ok(()),
    }
}

/// Enqueues as asked and prints the id(s).
pub(crate) async fn run(global: &Global, args: EnqueueArgs) -> anyhow::Result<()> {
    let file = args
        .kinds_file
        .as_deref()
        .map(kinds_file::load)
        .transpose()?;
    let declared = file
        .as_ref()
        .is_some_and(|f| f.names().contains(&args.kind.as_str()));
    if !demo_kinds::NAMES.contains(&args.kind.as_str()) && !declared {
        return Err(bad(format!(
            "unknown kind {:?}; accepted kinds: {}{}",
            output::cut(&args.kind, 64),
            kinds_file::accepted(file.as_ref()),
            if file.is_none() {
                " (--kinds-file FILE adds the kinds a file declares)"
            } else {
                ""
            }
        )));
    }
    if args.count == Some(0) {
        return Err(bad("--count must be at least 1"));
    }
    let payload = payload(&args)?;
    let options = EnqueueOptions {
        idempotency_key: args.key.clone(),
        delay: args
            .delay
            .as_deref()
            .map(|d| duration::parse("--delay", d))
            .transpose()?,
        deadline: args
            .deadline
            .as_deref()
            .map(|d| duration::deadline("--deadline", d, Utc::now()))
            .transpose()?,
        traceparent: args
            .traceparent
            .as_deref()
            .map(|t| {
                t.parse::<TraceParent>()
                    .map_err(|e| bad(format!("--traceparent: {e}")))
            })
            .transpose()?,
        priority: args.priority,
        ..EnqueueOptions::default()
    };

    let backend = Backend::open(global).await?;
    let policy = DemoPolicy::default().retry_policy()?;
    let mut registry = demo_kinds::registry(&policy, EffectTable::new(&backend.concrete));
    if let Some(file) = &file {
        for kind in kinds_file::enqueue_kinds(file)? {
            registry = registry.register(kind);
        }
    }
    let transport = backend::transport(&global.transport)?;
    let client = Client::new(backend.store.clone(), transport, Arc::new(registry))
        .with_max_payload_bytes(args.max_payload_bytes);

    let Some(count) = args.count else {
        let e = client
            .enqueue(&args.kind, payload.clone(), options)
            .await
            .map_err(store_error)?;
        if !e.created {
            same_payload(&backend, e.id, args.key.as_deref(), &payload).await?;
        }
        return if args.json {
            output::json(&json!({"id": e.id, "created": e.created}))
        } else {
            output::line!("{}{}", e.id, if e.created { "" } else { " (existing)" })?;
            Ok(())
        };
    };

    let bar = progress::bar(count, "enqueued");
    let mut created = 0u64;
    if let Some(key) = &args.key {
        // Each copy has its own key, so each is its own call.
        for i in 1..=count {
            let options = EnqueueOptions {
                idempotency_key: Some(format!("{key}-{i}")),
                ..options.clone()
            };
            let key = options.idempotency_key.clone();
            let e = client
                .enqueue(&args.kind, payload.clone(), options)
                .await
                .map_err(store_error)?;
            if !e.created {
                same_payload(&backend, e.id, key.as_deref(), &payload).await?;
            }
            created += u64::from(e.created);
            bar.inc(1);
        }
    } else {
        let mut done = 0;
        while done < count {
            let n = BATCH.min(count - done);
            let batch = vec![payload.clone(); n as usize];
            let enqueued = client
                .enqueue_many(&args.kind, batch, options.clone())
                .await
                .map_err(store_error)?;
            created += enqueued.iter().filter(|e| e.created).count() as u64;
            done += n;
            bar.inc(n);
        }
    }
    bar.finish_and_clear();
    if args.json {
        return output::json(&json!({"count": count, "created": created}));
    }
    let existing = count - created;
    if existing == 0 {
        output::line!("enqueued {} operations", output::count(count))?;
    } else {
        output::line!(
            "enqueued {} operations ({} new, {} existing)",
            output::count(count),
            output::count(created),
            output::count(existing)
        )?;
    }
    Ok(())
}
