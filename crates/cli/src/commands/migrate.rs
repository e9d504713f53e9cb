//! `oprec migrate`: creates or upgrades the schema of the store `--database-url` names.

use serde_json::json;

use crate::backend::{Backend, store_error};
use crate::cli::{Global, MigrateArgs};
use crate::output;

/// Runs the embedded migrations.
pub(crate) async fn run(global: &Global, args: MigrateArgs) -> anyhow::Result<()> {
    let backend = Backend::connect(&global.database_url).await?;
    backend.store.migrate().await.map_err(store_error)?;
    if args.json {
        output::json(&json!({"migrated": true, "database": backend.url}))
    } else {
        output::line!("migrated {}: the schema is up to date", backend.url)?;
        Ok(())
    }
}
