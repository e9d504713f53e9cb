//! The pool checks a connection before handing it out only when it has sat idle for
//! [`CHECK_CONNECTIONS_IDLE_FOR`] (sqlx checks every one on every acquire by default, a round trip
//! before every statement). A connection the server ended while it sat idle is then found dead
//! and replaced, and the caller's statement runs on a new one.

mod common;

use std::time::Duration;

use oprec_postgres::CHECK_CONNECTIONS_IDLE_FOR;
use sqlx::Connection;
use sqlx::postgres::PgConnection;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_ended_while_idle_is_replaced_unseen() {
    let store = common::fresh_store(1).await;
    let before: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(store.pool())
        .await
        .expect("the pool's connection");

    // The server ends the pool's only connection (a restart, an administrator, a proxy's idle
    // timeout), while it sits idle in the pool.
    let mut admin = PgConnection::connect(&common::database_url())
        .await
        .expect("admin connection");
    let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(before)
        .fetch_one(&mut admin)
        .await
        .expect("terminate");
    assert!(ended);
    tokio::time::sleep(CHECK_CONNECTIONS_IDLE_FOR + Duration::from_millis(200)).await;

    // The next statement goes through: the idle connection was checked, found dead and replaced.
    let after: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(store.pool())
        .await
        .expect("a statement after the connection was ended while idle");
    assert_ne!(after, before, "a new connection");
    let count = oprec_core::Store::operation_count(&store).await;
    assert!(count.is_ok(), "{count:?}");
}
