//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!` embeds the files of
//! `migrations/sqlite`, but cargo does not see a new file in that folder by itself.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/sqlite");
}
