//! `oprec ops show` and `oprec ops list`: operations and their attempt history, as readable
//! layouts or as JSON.

use oprec::store::{ListParams, OperationGetParams, RedrivenShown};
use oprec::{FailureClass, Operation, OperationDetail, OperationId, Status};

use crate::backend::{Backend, store_error};
use crate::cli::{Global, ListArgs, ShowArgs};
use crate::exit::bad;
use crate::output::{self, Table, cut};

/// Parses an operation id given as `what`.
fn parse_id(what: &str, text: &str) -> anyhow::Result<OperationId> {
    text.parse()
        .map_err(|_| bad(format!("{what} {:?} is not an operation id (a UUID such as 0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a)", cut(text, 64))))
}

/// `attempt/max` or just `attempt`.
fn attempts_of(op: &Operation) -> String {
    match op.max_attempts {
        Some(max) => format!("{}/{max}", op.attempt),
        None => op.attempt.to_string(),
    }
}

/// The status with its terminal reason, marked when the operation was re-driven as new.
fn status_of(op: &Operation) -> String {
    let mut s = match op.terminal_reason {
        Some(r) => format!("{} ({r})", op.status),
        None => op.status.to_string(),
    };
    if op.redriven_as.is_some() {
        s.push_str(", re-driven");
    }
    s
}

/// Prints one operation and its attempts.
pub(crate) async fn show(global: &Global, args: ShowArgs) -> anyhow::Result<()> {
    let id = parse_id("operation id", &args.id)?;
    let backend = Backend::connect(&global.database_url).await?;
    let Some(detail) = backend
        .store
        .operation_get(OperationGetParams { id })
        .await
        .map_err(store_error)?
    else {
        anyhow::bail!("operation {id} not found in {}", backend.url);
    };
    if args.json {
        return output::json(&detail);
    }
    output::text(&render_detail(&detail))?;
    Ok(())
}

/// An attempt's outcome, marked when it ran isolated (a suspect, alone in its worker) and with
/// the outcome of a completion that came after its claim was taken over.
fn outcome_of(a: &oprec::Attempt) -> String {
    let mut s = a.outcome.to_string();
    if a.isolated {
        s.push_str(" (isolated)");
    }
    if let Some(late) = a.stale_outcome {
        s.push_str(&format!(" (late: {late}, refused)"));
    }
    s
}

/// The readable layout of `ops show`: key fields, then a table of attempts.
fn render_detail(d: &OperationDetail) -> String {
    let o = &d.operation;
    let mut fields: Vec<(&str, String)> = vec![
        ("id", o.id.to_string()),
        ("kind", o.kind.clone()),
        ("status", status_of(o)),
        ("attempt", attempts_of(o)),
    ];
    let mut opt = |name, value: Option<String>| {
        if let Some(v) = value {
            fields.push((name, v));
        }
    };
    opt("key", o.idempotency_key.clone());
    opt("dependency", o.dependency.clone());
    opt("created", Some(output::time(o.created_at)));
    if o.status == Status::Pending {
        opt("next eligible", Some(output::time(o.next_eligible_at)));
    }
    opt("deadline", o.give_up_at.map(output::time));
    opt("ended", o.terminal_at.map(output::time));
    if o.status == Status::Running {
        opt(
            "lease",
            o.lease_until.map(|t| {
                format!(
                    "until {} by {}",
                    output::time(t),
                    o.worker_id.as_deref().unwrap_or("?")
                )
            }),
        );
    }
    if o.suspect {
        opt(
            "suspect",
            Some(
                "its last attempt vanished beside other work; the next runs isolated, alone in \
                 its worker"
                    .to_owned(),
            ),
        );
    }
    opt("remote id", o.remote_id.clone());
    opt("last class", o.last_failure_class.map(|c| c.to_string()));
    if let Some(e) = &o.last_error {
        opt("last error", Some(e.to_string()));
        opt("decision", e.decision.clone());
        opt("next action", e.next_action.clone());
    }
    opt("code version", o.code_version.clone());
    opt("redrive of", o.redrive_of.map(|r| r.to_string()));
    opt(
        "re-driven as",
        o.redriven_as
            .map(|c| format!("{c} (a copy carries the work on: this one no longer awaits action)")),
    );
    opt("effect key", Some(o.effect_key()));
    opt("payload", Some(cut(&o.payload.to_string(), 200)));

    let width = fields.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (name, value) in &fields {
        out.push_str(&format!("{name:<width$}  {value}\n"));
    }
    out.push('\n');
    if d.attempts.is_empty() {
        out.push_str("no attempts yet\n");
        return out;
    }
    out.push_str("attempts\n");
    let mut t = Table::new(&[
        "#", "CLAIMED", "ENDED", "OUTCOME", "CLASS", "ERROR", "WORKER",
    ]);
    for a in &d.attempts {
        t.row(vec![
            a.attempt.to_string(),
            output::time(a.claimed_at),
            output::time(a.ended_at),
            outcome_of(a),
            a.failure_class.map(|c| c.to_string()).unwrap_or_default(),
            a.error
                .as_ref()
                .map(|e| cut(&e.to_string(), 60))
                .unwrap_or_default(),
            a.worker_id.clone().unwrap_or_default(),
        ]);
    }
    out.push_str(&t.render("  "));
    out
}

/// Prints the operations matching the filters.
pub(crate) async fn list(global: &Global, args: ListArgs) -> anyhow::Result<()> {
    let status = args
        .status
        .as_deref()
        .map(|s| {
            s.parse::<Status>()
                .map_err(|e| bad(format!("--status: {e}")))
        })
        .transpose()?;
    let failure_class = args
        .class
        .as_deref()
        .map(|s| {
            s.parse::<FailureClass>()
                .map_err(|e| bad(format!("--class: {e}")))
        })
        .transpose()?;
    let redriven = args
        .redriven
        .as_deref()
        .map(|s| {
            s.parse::<RedrivenShown>()
                .map_err(|e| bad(format!("--redriven: {e}")))
        })
        .transpose()?;
    let after = args
        .after
        .as_deref()
        .map(|s| parse_id("--after", s))
        .transpose()?;
    if args.limit == 0 || args.limit > 10_000 {
        return Err(bad("--limit must be between 1 and 10,000"));
    }
    let backend = Backend::connect(&global.database_url).await?;
    let ops = backend
        .store
        .operation_list(ListParams {
            status,
            kind: args.kind,
            failure_class,
            redriven,
            after,
            limit: args.limit,
            ..ListParams::default()
        })
        .await
        .map_err(store_error)?;
    if args.json {
        return output::json(&ops);
    }
    if ops.is_empty() {
        if redriven.is_none() && status == Some(Status::Dead) {
            output::line!(
                "no dead operations await action (those re-driven as new are left out: \
                 --redriven show lists them too)"
            )?;
        } else {
            output::line!("no operations match")?;
        }
        return Ok(());
    }
    let mut t = Table::new(&[
        "ID",
        "KIND",
        "STATUS",
        "ATTEMPT",
        "NEXT ELIGIBLE",
        "LAST CLASS",
        "LAST ERROR",
    ]);
    for o in &ops {
        t.row(vec![
            o.id.to_string(),
            o.kind.clone(),
            status_of(o),
            attempts_of(o),
            if o.status == Status::Pending {
                output::time(o.next_eligible_at)
            } else {
                "-".to_owned()
            },
            o.last_failure_class
                .map(|c| c.to_string())
                .unwrap_or_default(),
            o.last_error
                .as_ref()
                .map(|e| cut(&e.summary, 60))
                .unwrap_or_default(),
        ]);
    }
    output::text(&t.render(""))?;
    if ops.len() as u32 == args.limit
        && let Some(last) = ops.last()
    {
        output::line!(
            "(first {} shown; next page: --after {})",
            ops.len(),
            last.id
        )?;
    }
    Ok(())
}
