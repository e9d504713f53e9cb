//! `oprec audit`: the audit log, newest first: who did what to how many operations, and why.

use clap::Args;
use oprec::operator::AuditListParams;

use crate::backend::{Backend, store_error};
use crate::cli::Global;
use crate::exit::bad;
use crate::output::{self, Table, count};

/// `oprec audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// The most entries to show (at most 10,000).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: u32,
    /// Print the entries as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Prints the newest audit entries.
pub(crate) async fn run(global: &Global, args: AuditArgs) -> anyhow::Result<()> {
    if args.limit == 0 || args.limit > 10_000 {
        return Err(bad("--limit must be between 1 and 10,000"));
    }
    let backend = Backend::connect(&global.database_url).await?;
    let entries = backend
        .store
        .audit_list(AuditListParams { limit: args.limit })
        .await
        .map_err(store_error)?;
    if args.json {
        return output::json(&entries);
    }
    if entries.is_empty() {
        return output::line!("the audit log is empty: no operator action yet");
    }
    let now = chrono::Utc::now();
    let mut t = Table::new(&["AT", "ACTOR", "ACTION", "AFFECTED", "REASON", "FILTER"]);
    for e in &entries {
        let filter = match &e.entry.filter {
            serde_json::Value::Object(m) if m.is_empty() => "(all)".to_owned(),
            v => v.to_string(),
        };
        t.row(vec![
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
