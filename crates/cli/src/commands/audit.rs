//! `oprec audit`: the audit log, newest first: who did what to how many operations, and why;
//! filtered by action and actor, and read in pages by entry id.

use clap::Args;
use oprec::operator::{AUDIT_LIST_MAX, AuditListParams, AuditPage};

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::exit::bad;
use crate::output::{self, Table, count};

/// `oprec audit`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  oprec audit --action redrive            every re-drive, newest first\n  \
oprec audit --actor alice --limit 20    the last 20 things alice did\n  \
oprec audit --older-than 120            the page after the one whose last ID was 120\n  \
oprec audit --newer-than 171            the page before the one whose first ID was 171"
)]
pub(crate) struct AuditArgs {
    /// The most entries to show (at most 10,000).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: u32,
    /// Only entries of this action (pause, unpause, redrive, quarantine, release, cancel, limit,
    /// ...: the ACTION column).
    #[arg(long, value_name = "ACTION")]
    pub action: Option<String>,
    /// Only entries of this actor (the ACTOR column).
    #[arg(long, value_name = "ACTOR")]
    pub actor: Option<String>,
    /// The page of entries just older than entry ID (the ID column): the next page.
    #[arg(long, value_name = "ID", conflicts_with = "newer_than")]
    pub older_than: Option<i64>,
    /// The page of entries just newer than entry ID, still shown newest first: the previous
    /// page.
    #[arg(long, value_name = "ID")]
    pub newer_than: Option<i64>,
    /// Print the entries as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Prints a page of audit entries, newest first.
pub(crate) async fn run(global: &Global, args: AuditArgs) -> anyhow::Result<()> {
    if args.limit == 0 || args.limit > AUDIT_LIST_MAX {
        return Err(bad("--limit must be between 1 and 10,000"));
    }
    let params = AuditListParams {
        limit: args.limit,
        action: args.action,
        actor: args.actor,
        page: AuditPage::from_cursors(args.older_than, args.newer_than),
    };
    if let Err(e) = params.check() {
        return Err(bad(e.to_string()));
    }
    let filtered = params.action.is_some() || params.actor.is_some();
    let paged = params.page != AuditPage::Newest;
    let backend = Backend::open(global).await?;
    let entries = backend
        .store
        .audit_list(params)
        .await
        .map_err(store_error)?;
    if args.json {
        return output::json(&entries);
    }
    if entries.is_empty() {
        return if filtered || paged {
            output::line!("no audit entry matches")
        } else {
            output::line!("the audit log is empty: no operator action yet")
        };
    }
    let now = chrono::Utc::now();
    let mut t = Table::new(&[
        "ID", "AT", "ACTOR", "ACTION", "AFFECTED", "REASON", "FILTER",
    ]);
    for e in &entries {
        let filter = match &e.entry.filter {
            serde_json::Value::Object(m) if m.is_empty() => "(all)".to_owned(),
            v => v.to_string(),
        };
        t.row(vec![
            e.id.to_string(),
            output::when(e.at, now),
            e.entry.actor.clone(),
            e.entry.action.clone(),
            count(e.entry.affected),
            e.entry.reason.clone().unwrap_or_else(|| "-".into()),
            filter,
        ]);
    }
    output::human(&t.render(""))
}
