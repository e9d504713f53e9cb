use oprec_core::Error;

/// Maps a sqlx error onto oprec's, saying whether retrying the same call later may succeed:
/// lost connections, pool timeouts, serialization failures, deadlocks, lack of resources and
/// administrator shutdowns are transient; everything else is not.
pub fn backend_error(e: sqlx::Error) -> Error {
    let transient = match &e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // 08: connection exception; 40001/40P01: serialization/deadlock; 53: insufficient
            // resources; 57P01-03: shutdown or cannot connect now.
            code.starts_with("08")
                || code == "40001"
                || code == "40P01"
                || code.starts_with("53")
                || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    };
    Error::backend(transient, e)
}
