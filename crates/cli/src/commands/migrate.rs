//! `oprec migrate`: creates or upgrades the schema of the store `--database-url` names (the
//! oprec tables and the demo kinds' `demo_effects`).

use serde_json::json;

use crate::backend::{Backend, store_error};
use crate::cli::{Global, MigrateArgs};
use crate::demo_kinds::EffectTable;
use crate::output;

/// Runs the embedded migrations, and creates the demo kinds' `demo_effects` table, so that every
/// piece of DDL runs here, as the schema's owner, and workers need no DDL rights.
pub(crate) async fn run(global: &Global, args: MigrateArgs) -> anyhow::Result<()> {
    let backend = Backend::connect(&global.database_url).await?;
    backend.store.migrate().await.map_err(store_error)?;
    EffectTable::new(backend.concrete.clone()).create().await?;
    if args.json {
        output::json(&json!({"migrated": true, "database": backend.url}))
    } else {
        output::line!("migrated {}: the schema is up to date", backend.url)?;
        Ok(())
    }
}
