//! Least privilege: the README's SQL, run as written (with unique role and
//! schema names), makes an owner role and a runtime role without DDL rights. `oprec migrate` runs
//! as the owner; enqueue, a demo worker to completion, stats, workers, ops, pause/resume,
//! re-drive and audit run as the runtime role; a producer role with only the README's two grants
//! enqueues from SQL with `oprec_enqueue` (refused to the runtime role) and reads no table; the
//! runtime role cannot CREATE, ALTER, DROP or TRUNCATE (permission denied), and `oprec migrate`
//! as it fails. Roles and schema are dropped afterwards. Needs the shared PostgreSQL (trust auth
//! on 127.0.0.1).

mod common;

use std::time::Duration;

use common::Oprec;
use sqlx::postgres::{PgPool, PgPoolOptions};

/// The server the tests use.
fn database_url() -> String {
    std::env::var("OPREC_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// `base` with another user (and no password: the test server trusts 127.0.0.1).
fn url_as(base: &str, user: &str) -> String {
    let (scheme, rest) = base.split_once("://").expect("a URL");
    let host = rest.rsplit_once('@').map(|(_, h)| h).unwrap_or(rest);
    format!("{scheme}://{user}@{host}")
}

/// The README's least-privilege SQL block, with its names replaced.
fn readme_sql(owner: &str, runtime: &str, schema: &str) -> String {
    readme_block(
        1,
        &[("oprec_owner", owner), ("oprec_runtime", runtime)],
        schema,
    )
}

/// The `n`-th SQL block (1-based) of the README's Least privilege section, with the names
/// `names` and the schema `oprec` replaced.
fn readme_block(n: usize, names: &[(&str, &str)], schema: &str) -> String {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("### Least privilege")
        .nth(1)
        .and_then(|s| s.split("\n### ").next())
        .expect("README has a Least privilege section");
    let mut sql = section
        .split("```sql\n")
        .nth(n)
        .and_then(|s| s.split("```").next())
        .unwrap_or_else(|| panic!("no sql block {n} in the Least privilege section"))
        .to_owned();
    for (name, with) in names {
        sql = sql.replace(name, with);
    }
    // The schema is the bare word `oprec`; the role names above now start with `oprec_`.
    let mut out = String::new();
    let mut rest = sql.as_str();
    while let Some(i) = rest.find("oprec") {
        let (before, after) = rest.split_at(i);
        out.push_str(before);
        let word_before = before
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let word_after = after[5..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(if word_before || word_after {
            "oprec"
        } else {
            schema
        });
        rest = &after[5..];
    }
    out.push_str(rest);
    out
}

struct Roles {
    rt: tokio::runtime::Runtime,
    admin: PgPool,
    owner: String,
    runtime: String,
    producer: String,
    schema: String,
}

impl Drop for Roles {
    fn drop(&mut self) {
        let statements = [
            format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema),
            format!("DROP OWNED BY {}, {}", self.owner, self.runtime),
            format!("DROP OWNED BY {}", self.producer),
            format!("DROP ROLE IF EXISTS {}", self.producer),
            format!("DROP ROLE IF EXISTS {}", self.runtime),
            format!("DROP ROLE IF EXISTS {}", self.owner),
        ];
        self.rt.block_on(async {
            for sql in statements {
                if let Err(e) = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
                    .execute(&self.admin)
                    .await
                {
                    eprintln!("cleanup: {sql}: {e}");
                }
            }
            self.admin.close().await;
        });
    }
}

#[test]
fn the_runtime_role_works_without_ddl_rights() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let base = database_url();
    let admin = rt
        .block_on(
            PgPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_secs(10))
                .connect(&base),
        )
        .unwrap_or_else(|e| panic!("PostgreSQL at {base} is required for this test: {e}"));
    let tag = uuid::Uuid::now_v7().simple().to_string();
    let tag = &tag[tag.len() - 12..];
    let roles = Roles {
        rt,
        admin,
        owner: format!("oprec_test_owner_{tag}"),
        runtime: format!("oprec_test_runtime_{tag}"),
        producer: format!("oprec_test_producer_{tag}"),
        schema: format!("oprec_test_lp_{tag}"),
    };
    let setup = readme_sql(&roles.owner, &roles.runtime, &roles.schema);
    assert!(
        setup.contains(&roles.schema) && !setup.contains(" oprec "),
        "{setup}"
    );
    roles
        .rt
        .block_on(sqlx::raw_sql(sqlx::AssertSqlSafe(setup.clone())).execute(&roles.admin))
        .unwrap_or_else(|e| panic!("the README's SQL failed: {e}\n{setup}"));

    // The owner migrates.
    let owner = Oprec::with_url(url_as(&base, &roles.owner));
    owner.run(&["migrate", "--demo"]).ok();
    // The README's optional step: the runtime role never reads the migrations' own table.
    let revoke = format!(
        "REVOKE ALL ON {}._sqlx_migrations FROM {}",
        roles.schema, roles.runtime
    );
    roles
        .rt
        .block_on(sqlx::raw_sql(sqlx::AssertSqlSafe(revoke)).execute(&roles.admin))
        .expect("revoke on _sqlx_migrations");

    // The runtime role does everything else.
    let o = Oprec::with_url(url_as(&base, &roles.runtime));
    let ids: Vec<String> = (0..3).map(|_| o.enqueue("demo.noop", "{}")).collect();
    let effect = o.enqueue("demo.effect", "{}");
    o.enqueue("demo.flaky", r#"{"fail_times": 99, "class": "permanent"}"#);
    o.run(&["pause", "--kind", "demo.slow", "--reason", "test"])
        .ok();
    o.run(&["resume", "--kind", "demo.slow"]).ok();
    o.work_until_idle();
    for id in ids.iter().chain([&effect]) {
        assert_eq!(o.show(id)["operation"]["status"], "succeeded", "{id}");
    }
    let stats = o.run(&["stats", "--json"]).json();
    assert_eq!(stats["by_status"]["succeeded"], 4, "{stats}");
    assert_eq!(stats["by_status"]["dead"], 1, "{stats}");
    o.run(&["workers", "--json"]).json();
    let listed = o.run(&["ops", "list", "--json"]).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(5), "{listed}");
    let redriven = o
        .run(&["redrive", "--kind", "demo.flaky", "--yes", "--json"])
        .json();
    assert_eq!(redriven["redriven"], 1, "{redriven}");
    let audit = o.run(&["audit", "--json"]).json();
    assert_eq!(audit.as_array().map(Vec::len), Some(3), "{audit}");

    // Enqueueing from SQL: the worker, as the runtime role, published the demo kinds. The
    // function runs with its owner's rights and no role may execute it until granted: the
    // runtime role is refused, a producer role with only the README's two grants enqueues (by
    // the qualified name: its search path lacks the schema) and can read no table.
    let grants = readme_block(2, &[("shop_app", &roles.producer)], &roles.schema);
    roles
        .rt
        .block_on(sqlx::raw_sql(sqlx::AssertSqlSafe(grants.clone())).execute(&roles.admin))
        .unwrap_or_else(|e| panic!("the README's producer grants failed: {e}\n{grants}"));
    let enqueue = format!("SELECT {}.oprec_enqueue('demo.noop', '{{}}')", roles.schema);
    let connect = |role: &str| {
        roles
            .rt
            .block_on(
                PgPoolOptions::new()
                    .max_connections(1)
                    .connect(&url_as(&base, role)),
            )
            .expect("connect")
    };
    let denied = |pool: &PgPool, sql: &str| {
        let e = roles
            .rt
            .block_on(sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).execute(pool))
            .expect_err(sql);
        let code = e
            .as_database_error()
            .and_then(|d| d.code())
            .map(|c| c.into_owned());
        assert_eq!(code.as_deref(), Some("42501"), "{sql}: {e}");
    };
    let runtime = connect(&roles.runtime);
    denied(&runtime, &enqueue);
    roles.rt.block_on(runtime.close());
    let producer = connect(&roles.producer);
    let id: uuid::Uuid = roles
        .rt
        .block_on(sqlx::query_scalar(sqlx::AssertSqlSafe(enqueue.clone())).fetch_one(&producer))
        .unwrap_or_else(|e| panic!("the producer role enqueues from SQL: {e}"));
    assert_eq!(o.show(&id.to_string())["operation"]["status"], "pending");
    for table in ["operations", "operation_kinds", "operation_counts"] {
        denied(
            &producer,
            &format!("SELECT count(*) FROM {}.{table}", roles.schema),
        );
    }
    roles.rt.block_on(producer.close());

    // ... and cannot change the schema.
    let runtime_pool = roles
        .rt
        .block_on(
            PgPoolOptions::new()
                .max_connections(1)
                .connect(&url_as(&base, &roles.runtime)),
        )
        .expect("connect as the runtime role");
    for ddl in [
        "CREATE TABLE intruder (id int)",
        "ALTER TABLE operations ADD COLUMN intruder int",
        "DROP TABLE operations",
        "CREATE INDEX intruder ON operations (kind)",
        "TRUNCATE operations",
        "DROP TABLE demo_effects",
    ] {
        let e = roles
            .rt
            .block_on(sqlx::query(sqlx::AssertSqlSafe(ddl)).execute(&runtime_pool))
            .expect_err(ddl);
        let code = e
            .as_database_error()
            .and_then(|d| d.code())
            .map(|c| c.into_owned());
        assert_eq!(code.as_deref(), Some("42501"), "{ddl}: {e}");
        assert!(
            e.to_string().contains("permission denied") || e.to_string().contains("must be owner"),
            "{ddl}: {e}"
        );
    }
    roles.rt.block_on(runtime_pool.close());
    let refused = o.run(&["migrate"]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(refused.stderr.contains("permission denied"), "{refused:?}");
    // Nothing the runtime role ran left it owning anything.
    let owned: i64 = roles
        .rt
        .block_on(
            sqlx::query_scalar(
                "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
                 WHERE r.rolname = $1",
            )
            .bind(&roles.runtime)
            .fetch_one(&roles.admin),
        )
        .expect("count owned relations");
    assert_eq!(owned, 0);
}
