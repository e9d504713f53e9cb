//! A fresh PostgreSQL schema per test, for running the `oprec` binary against PostgreSQL and
//! checking its work with SQL of our own. The database is `OPREC_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); a missing server fails the test loudly. The
//! schema is named `oprec_test_cli_*` (scripts/test drops leftovers) and dropped at the end.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::common::Oprec;

/// The server the tests use.
pub fn database_url() -> String {
    std::env::var("OPREC_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A schema of its own, a pool whose search path is that schema, and the binary pointed at it.
pub struct Pg {
    rt: tokio::runtime::Runtime,
    pub pool: PgPool,
    admin: PgPool,
    pub schema: String,
    pub url: String,
}

impl Pg {
    /// Creates the schema and migrates it with `oprec migrate`.
    pub fn fresh() -> (Pg, Oprec) {
        let (pg, o) = Self::fresh_unmigrated();
        o.run(&["migrate"]).ok();
        (pg, o)
    }

    /// Creates the schema, empty: a test migrates it with the binary it chooses.
    pub fn fresh_unmigrated() -> (Pg, Oprec) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let base = database_url();
        let schema = format!("oprec_test_cli_{}", uuid::Uuid::now_v7().simple());
        let admin = rt
            .block_on(
                PgPoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect(&base),
            )
            .unwrap_or_else(|e| {
                panic!("PostgreSQL at {base} is required for these tests (set OPREC_TEST_DATABASE_URL): {e}")
            });
        rt.block_on(
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&admin),
        )
        .expect("create schema");
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
        let pool = rt
            .block_on(PgPoolOptions::new().max_connections(2).connect(&url))
            .expect("connect to the test schema");
        let o = Oprec::with_url(url.clone());
        (
            Pg {
                rt,
                pool,
                admin,
                schema,
                url,
            },
            o,
        )
    }

    /// One number from SQL.
    pub fn int(&self, sql: &str) -> i64 {
        self.rt
            .block_on(
                sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_one(&self.pool),
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// One floating-point number from SQL (NULL as None).
    pub fn float(&self, sql: &str) -> Option<f64> {
        self.rt
            .block_on(
                sqlx::query_scalar::<_, Option<f64>>(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_one(&self.pool),
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Rows of (text, count) from SQL, e.g. a `GROUP BY`.
    pub fn counts(&self, sql: &str) -> std::collections::BTreeMap<String, u64> {
        self.rt
            .block_on(
                sqlx::query_as::<_, (String, i64)>(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_all(&self.pool),
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .into_iter()
            .map(|(k, n)| (k, n as u64))
            .collect()
    }

    /// One optional text from SQL.
    pub fn text(&self, sql: &str) -> Option<String> {
        self.rt
            .block_on(
                sqlx::query_scalar::<_, Option<String>>(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_one(&self.pool),
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Waits until `sql` returns `want`, up to `limit`; panics with the last value otherwise.
    pub fn wait_for(&self, sql: &str, want: i64, limit: Duration) {
        let began = Instant::now();
        loop {
            let got = self.int(sql);
            if got == want {
                return;
            }
            assert!(
                began.elapsed() < limit,
                "waited {limit:?} for {sql} = {want}; it is {got}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema);
        self.rt.block_on(async {
            self.pool.close().await;
            let _ = sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&self.admin)
                .await;
            self.admin.close().await;
        });
    }
}
