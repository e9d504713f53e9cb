//! `oprec ops show` and `oprec ops list`: operations and their attempt history, as readable
//! layouts or as JSON.

use oprec::ops::Spelling;
use oprec::ops::filter;
use oprec::store::{ListParams, OperationGetParams, RedrivenShown};
use oprec::{Control, ControlAction, Operation, OperationDetail, OperationId, Status};

use crate::backend::{Backend, store_error};
use crate::cli::{Global, ListArgs, ShowArgs};
use crate::exit::bad;
use crate::output::{self, Table, cut};

/// Parses an operation id given as `what`.
fn parse_id(what: &str, text: &str) -> anyhow::Result<OperationId> {
    text.parse()
        .map_err(|_| bad(format!("{what} {:?} is not an operation id (a UUID such as 0194c2a1-7b3e-7c4d-9a2b-3f1e5d6c7b8a)", cut(text, 64))))
}

/// `3 of 8`, or just `3` (the operator library's one spelling).
fn attempts_of(op: &Operation) -> String {
    oprec::ops::number::attempts(op.attempt, op.max_attempts)
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
    let backend = Backend::open(global).await?;
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
    output::human(&render_detail(&detail, chrono::Utc::now()))?;
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
fn render_detail(d: &OperationDetail, now: chrono::DateTime<chrono::Utc>) -> String {
    let when = |t| output::when(t, now);
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
    opt("created", Some(when(o.created_at)));
    if o.status == Status::Pending {
        opt("next eligible", Some(when(o.next_eligible_at)));
    }
    opt("deadline", o.give_up_at.map(when));
    opt("ended", o.terminal_at.map(when));
    if o.status == Status::Running {
        opt(
            "lease",
            o.lease_until.map(|t| {
                format!(
                    "until {} by {}",
                    when(t),
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
    opt("traceparent", o.traceparent.as_ref().map(|t| t.to_string()));
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
            when(a.claimed_at),
            when(a.ended_at),
            outcome_of(a),
            a.failure_class.map(|c| c.to_string()).unwrap_or_default(),
            a.error.as_ref().map(|e| e.to_string()).unwrap_or_default(),
            a.worker_id.clone().unwrap_or_default(),
        ]);
    }
    out.push_str(&t.render("  "));
    out
}

/// The controls in force when a listing was read, to mark the pending operations they hold back.
struct HeldBy {
    controls: Vec<Control>,
    now: chrono::DateTime<chrono::Utc>,
}

impl HeldBy {
    /// The controls in force, read only when the listing holds a pending operation.
    async fn read(backend: &Backend, ops: &[Operation]) -> anyhow::Result<Self> {
        let now = chrono::Utc::now();
        if !ops.iter().any(|o| o.status == Status::Pending) {
            return Ok(HeldBy {
                controls: Vec::new(),
                now,
            });
        }
        let now = backend.store.now().await.map_err(store_error)?;
        let controls = backend.store.control_list().await.map_err(store_error)?;
        Ok(HeldBy { controls, now })
    }

    /// The control that holds `op` back, if it is pending and one does.
    fn of(&self, op: &Operation) -> Option<&Control> {
        if op.status != Status::Pending {
            return None;
        }
        self.controls.iter().find(|c| c.holds_back(op, self.now))
    }
}

/// How the listing marks an operation a control holds back: `paused: kind demo.noop`,
/// `postponed until 2026-01-05 10:00:00Z: dependency bank`.
fn held_text(c: &Control) -> String {
    match (c.action, c.until) {
        (ControlAction::Pause, None) => format!("paused: {} {}", c.scope, c.value),
        (ControlAction::Pause, Some(t)) => {
            format!("paused until {}: {} {}", output::time(t), c.scope, c.value)
        }
        (ControlAction::Postpone, until) => format!(
            "postponed{}: {} {}",
            until
                .map(|t| format!(" until {}", output::time(t)))
                .unwrap_or_default(),
            c.scope,
            c.value
        ),
    }
}

/// The page size of `ops list` when `--limit` is not given.
const PAGE: u32 = 50;
/// The largest page `ops list` shows.
const PAGE_MAX: u64 = 10_000;

/// The listing `args` ask for, every value checked.
fn list_params(args: &ListArgs) -> anyhow::Result<ListParams> {
    let status = args
        .status
        .as_deref()
        .map(|s| filter::status("--status", s))
        .transpose()?;
    let now = chrono::Utc::now();
    let mut input = args.filter.input();
    input.reasons = args.reasons.clone();
    input.since = args.since.clone();
    input.until = args.until.clone();
    let operation_filter = input.check(Spelling::Flags, now)?;
    let created = |label: &str, t: &Option<String>| {
        t.as_deref()
            .map(|t| oprec::ops::time::ago(label, t, now))
            .transpose()
    };
    let created_since = created("--created-since", &args.created_since)?;
    let created_until = created("--created-until", &args.created_until)?;
    if let (Some(s), Some(u)) = (created_since, created_until)
        && s >= u
    {
        return Err(bad(
            "--created-since is not before --created-until: nothing could match",
        ));
    }
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
    let limit = match args.filter.limit {
        None => PAGE,
        Some(n @ 1..=PAGE_MAX) => n as u32,
        Some(_) => return Err(bad("--limit must be between 1 and 10,000")),
    };
    Ok(ListParams {
        status,
        created_since,
        created_until,
        filter: operation_filter,
        redriven,
        after,
        newest_first: !args.oldest_first,
        limit,
        ..ListParams::default()
    })
}

/// Prints the operations matching the filters.
pub(crate) async fn list(global: &Global, args: ListArgs) -> anyhow::Result<()> {
    let params = list_params(&args)?;
    let (limit, status, redriven) = (params.limit, params.status, params.redriven);
    let backend = Backend::open(global).await?;
    let ops = backend
        .store
        .operation_list(params)
        .await
        .map_err(store_error)?;
    let holds = HeldBy::read(&backend, &ops).await?;
    if args.json {
        // Each operation as stored, with `held_back` naming the control that holds it back.
        let listed: Vec<serde_json::Value> = ops
            .iter()
            .map(|o| {
                let mut v = serde_json::to_value(o)?;
                if let (Some(c), serde_json::Value::Object(m)) = (holds.of(o), &mut v) {
                    m.insert(
                        "held_back".to_owned(),
                        serde_json::json!({
                            "scope": c.scope,
                            "value": c.value,
                            "action": c.action,
                            "until": c.until,
                        }),
                    );
                }
                Ok(v)
            })
            .collect::<Result<_, serde_json::Error>>()?;
        return output::json(&listed);
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
    ])
    .whole(0);
    for o in &ops {
        t.row(vec![
            o.id.to_string(),
            o.kind.clone(),
            match holds.of(o) {
                Some(c) => format!("{} ({})", status_of(o), held_text(c)),
                None => status_of(o),
            },
            attempts_of(o),
            if o.status == Status::Pending {
                output::when(o.next_eligible_at, holds.now)
            } else {
                "-".to_owned()
            },
            o.last_failure_class
                .map(|c| c.to_string())
                .unwrap_or_default(),
            o.last_error
                .as_ref()
                .map(|e| e.summary.clone())
                .unwrap_or_default(),
        ]);
    }
    output::human(&t.render(""))?;
    if ops.len() as u32 == limit
        && let Some(last) = ops.last()
    {
        output::line!(
            "({} shown, {} first; next page: --after {})",
            ops.len(),
            if args.oldest_first {
                "oldest"
            } else {
                "newest"
            },
            last.id
        )?;
    }
    Ok(())
}
