//! `oprec migrate`: creates or upgrades the schema of the store `--database-url` names (the
//! oprec tables; with `--demo`, also the demo kinds' `demo_effects`, which a schema that runs no
//! demo does not need).

use serde_json::json;

use crate::backend::{Backend, store_error};
use crate::cli::{Global, MigrateArgs};
use crate::demo_kinds::EffectTable;
use crate::output;

/// Runs the embedded migrations and, with `--demo`, creates the demo kinds' `demo_effects`
/// table, so that every piece of DDL runs here, as the schema's owner, and workers need no DDL
/// rights.
pub(crate) async fn run(global: &Global, args: MigrateArgs) -> anyhow::Result<()> {
    let backend = Backend::open(global).await?;
    backend.store.migrate().await.map_err(store_error)?;
    if args.demo {
        EffectTable::new(&backend.concrete).create().await?;
    }
    if args.json {
        output::json(&json!({"migrated": true, "demo": args.demo, "database": backend.url}))
    } else {
        let demo = if args.demo {
            " (with the demo kinds' demo_effects table)"
        } else {
            ""
        };
        output::line!("migrated {}: the schema is up to date{demo}", backend.url)?;
        Ok(())
    }
}
