//! A rolling deploy across one migration on PostgreSQL: the release before the newest migration
//! (the "old binary", built from this repository's history) migrates a schema and drains work;
//! the new release migrates the schema under it while the old worker runs; then an old and a new
//! worker drain the same operations side by side, and every operation succeeds.
//!
//! The old binary is the `oprec` of the newest commit on HEAD's first-parent line that has one
//! PostgreSQL migration fewer than the working tree, extracted with `git archive` into
//! `/var/tmp/oprec-old-src/<commit>` and built with `cargo build -p oprec-cli` into the cached
//! target folder `/var/tmp/oprec-target-old` (override with `OPREC_OLD_TARGET_DIR`). Cost: the
//! first build on a machine is a full debug build of the CLI (3 min 34 s on a shared 2-core
//! machine, 287 CPU-seconds, 984 MB of disk); afterwards cargo finds it built in about half a
//! second, and a new old commit rebuilds only oprec's own crates. The test itself then takes
//! about 7 s. It fails, never skips, when git, cargo or the build fails, and so it needs the
//! repository's history (a shallow clone has no older commit to build).

mod common;
mod pg;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pg::Pg;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn git(args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(root())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?} cannot run: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The PostgreSQL migrations in `commit`'s tree.
fn migrations_at(commit: &str) -> usize {
    git(&["ls-tree", "--name-only", commit, "migrations/postgres/"])
        .lines()
        .filter(|l| l.ends_with(".sql"))
        .count()
}

/// The newest commit on HEAD's first-parent line with fewer PostgreSQL migrations than the
/// working tree: the release before the newest migrations (a merge may bring several at once).
fn old_commit() -> String {
    let now = std::fs::read_dir(root().join("migrations/postgres"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sql"))
        })
        .count();
    git(&["rev-list", "--first-parent", "HEAD"])
        .lines()
        .find(|c| migrations_at(c) < now)
        .unwrap_or_else(|| panic!("no commit on HEAD's line has fewer than {now} migrations"))
        .to_owned()
}

/// The commit before the newest migration, and the binary built from it.
fn old_binary() -> (String, PathBuf) {
    let old = old_commit();
    let src = PathBuf::from("/var/tmp/oprec-old-src").join(&old);
    if !src.join(".extracted").exists() {
        std::fs::create_dir_all(&src).unwrap();
        let mut archive = Command::new("git")
            .current_dir(root())
            .args(["archive", "--format=tar", &old])
            .stdout(Stdio::piped())
            .spawn()
            .expect("git archive");
        // `-m`: the files take the extraction time, not the commit's. Cargo judges oprec's own
        // crates fresh by their sources' times against its last build, and the cached target
        // folder's last build (of the previous old commit) is usually later than this commit:
        // with the commit's times, cargo kept that build's crates, and this commit's binary
        // failed to compile against them (or, worse, was built of the previous commit's code).
        let status = Command::new("tar")
            .args(["-x", "-m", "-C"])
            .arg(&src)
            .stdin(archive.stdout.take().unwrap())
            .status()
            .expect("tar");
        assert!(
            status.success() && archive.wait().expect("git archive").success(),
            "extracting {old} into {} failed",
            src.display()
        );
        std::fs::write(src.join(".extracted"), &old).unwrap();
    }
    let target = std::env::var("OPREC_OLD_TARGET_DIR")
        .unwrap_or_else(|_| "/var/tmp/oprec-target-old".to_owned());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let began = Instant::now();
    let mut build = Command::new(cargo);
    // The variables cargo sets for this test (the package's name, version, manifest, binaries)
    // would reach the old build's build scripts and change its fingerprints: a rebuild on every
    // run. Cargo's settings (CARGO_HOME, CARGO_NET_OFFLINE, ...) pass through.
    const SET_FOR_THE_TEST: &[&str] = &[
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "OUT_DIR",
    ];
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if SET_FOR_THE_TEST.iter().any(|p| name.starts_with(p)) {
            build.env_remove(name.as_ref());
        }
    }
    let out = build
        .current_dir(&src)
        .args(["build", "-p", "oprec-cli", "--bin", "oprec"])
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .expect("cargo build of the old binary");
    assert!(
        out.status.success(),
        "building the old binary (commit {old}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "old binary of {old}: built or found in {:?}",
        began.elapsed()
    );
    (old, PathBuf::from(target).join("debug/oprec"))
}

/// A binary against the test's schema.
fn oprec(bin: &Path, url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.env_remove("OPREC_TRANSPORT_URL")
        .env_remove("RUST_LOG")
        .env("OPREC_DATABASE_URL", url)
        .args(args);
    c
}

fn run_ok(bin: &Path, url: &str, args: &[&str]) -> String {
    let out = oprec(bin, url, args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A worker process, stopped with SIGTERM (and reaped) when dropped.
struct Worker(Child);

impl Worker {
    fn start(bin: &Path, url: &str, version: &str) -> Self {
        let child = oprec(
            bin,
            url,
            &[
                "--transport",
                "poll",
                "worker",
                "--demo",
                "--concurrency",
                "4",
                "--code-version",
                version,
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        Worker(child)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn enqueue(bin: &Path, url: &str, n: u32) {
    run_ok(
        bin,
        url,
        &[
            "enqueue",
            "--kind",
            "demo.slow",
            "--payload",
            r#"{"ms": 20}"#,
            "--count",
            &n.to_string(),
        ],
    );
}

/// What a migration can change in the test's schema: the newest recorded migration, every
/// index's definition, every function's body and every table's columns, as one digest.
fn schema_fingerprint(db: &Pg) -> String {
    db.text(
        "SELECT md5(concat_ws('|', \
             (SELECT max(version)::text FROM _sqlx_migrations), \
             (SELECT string_agg(indexdef, ';' ORDER BY indexname) FROM pg_indexes \
              WHERE schemaname = current_schema()), \
             (SELECT string_agg(p.oid::regprocedure::text || ':' || md5(p.prosrc), ';' \
                                ORDER BY p.oid::regprocedure::text) \
              FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace), \
             (SELECT string_agg(table_name || '.' || column_name || ' ' || data_type, ';' \
                                ORDER BY table_name, column_name) \
              FROM information_schema.columns WHERE table_schema = current_schema())))",
    )
    .expect("the schema's digest")
}

#[test]
fn an_old_and_a_new_worker_drain_side_by_side_across_the_newest_migration() {
    let (old_commit, old) = old_binary();
    let new = PathBuf::from(env!("CARGO_BIN_EXE_oprec"));
    let began = Instant::now();
    let (db, _) = Pg::fresh_unmigrated();
    let url = db.url.clone();

    // The old release's schema, with work on it and its worker draining.
    run_ok(&old, &url, &["migrate"]);
    let old_version = db.int("SELECT max(version) FROM _sqlx_migrations");
    let old_schema = schema_fingerprint(&db);
    enqueue(&old, &url, 600);
    let old_worker = Worker::start(&old, &url, "old");
    db.wait_for(
        "SELECT least(count(*), 1) FROM operation_attempts",
        1,
        Duration::from_secs(60),
    );

    // The new release migrates under the running old worker.
    let migrated = Instant::now();
    run_ok(&new, &url, &["migrate"]);
    let new_version = db.int("SELECT max(version) FROM _sqlx_migrations");
    eprintln!(
        "migrated {old_version} -> {new_version} under the old worker in {:?} (old commit {old_commit})",
        migrated.elapsed()
    );
    // A `-- no-transaction` migration (an index built or dropped concurrently) is run on every
    // migrate and recorded only afterwards: the schema itself tells whether the new release
    // changed it.
    let new_schema = schema_fingerprint(&db);
    assert_ne!(
        new_schema, old_schema,
        "no migration between the two releases"
    );
    assert_eq!(
        db.int(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE c.relname = 'operations_redrive_of' AND i.indisvalid \
             AND c.relnamespace = current_schema()::regnamespace"
        ),
        1,
        "the concurrently built index is valid"
    );
    assert!(
        db.int("SELECT count(*) FROM operations WHERE status = 'pending'") > 0,
        "the old worker had not drained everything before the migration: it ran across it"
    );
    let after = db.text("SELECT now()::text").unwrap();

    // Work enqueued by both releases; a new worker beside the old one; everything drains.
    enqueue(&new, &url, 600);
    enqueue(&old, &url, 200);
    let new_worker = Worker::start(&new, &url, "new");
    let drain = Instant::now();
    db.wait_for(
        "SELECT count(*) FROM operations WHERE status <> 'succeeded'",
        0,
        Duration::from_secs(120),
    );
    eprintln!("both workers drained the rest in {:?}", drain.elapsed());
    let stop = Instant::now();
    drop(new_worker);
    drop(old_worker);
    eprintln!("both workers stopped in {:?}", stop.elapsed());
    assert_eq!(db.int("SELECT count(*) FROM operations"), 1_400);
    for version in ["old", "new"] {
        let n = db.int(&format!(
            "SELECT count(*) FROM operation_attempts WHERE code_version = '{version}' \
             AND outcome = 'succeeded' AND ended_at > '{after}'::timestamptz"
        ));
        eprintln!("{version} worker: {n} attempts after the migration");
        assert!(
            n > 0,
            "the {version} worker drained nothing after the migration"
        );
    }

    eprintln!(
        "the deploy, from the old schema to drained: {:?}",
        began.elapsed()
    );

    // The rule the README states: only the new release migrates. The old one refuses a schema
    // with a migration it does not know, loudly, and changes nothing.
    // (A release whose runner skipped unknown versions instead ends successfully having applied
    // nothing; from this one on it refuses. Either way, nothing changes.)
    let out = oprec(&old, &url, &["migrate"]).output().unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("missing"), "{err}");
    }
    assert_eq!(
        schema_fingerprint(&db),
        new_schema,
        "the old release's migrate changed the new schema"
    );
    // The old release's reads still work on the new schema.
    run_ok(&old, &url, &["stats", "--json"]);
    eprintln!("the whole test after the build: {:?}", began.elapsed());
}
