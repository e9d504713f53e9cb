//! How a sqlx error becomes oprec's: a missing schema is [`Error::SchemaMissing`]; every other
//! error is a backend error that says whether trying again later may help.

use oprec_core::Error;

/// SQLSTATE `undefined_table`: a statement named a table the database does not have.
const UNDEFINED_TABLE: &str = "42P01";
/// SQLSTATE `undefined_column`: a statement named a column the database does not have yet (a
/// schema migrated by an older oprec).
const UNDEFINED_COLUMN: &str = "42703";

/// Maps a sqlx error onto oprec's. A statement on a database without the oprec tables, or with
/// tables an older oprec made, is [`Error::SchemaMissing`] (the remedy is to migrate, not to
/// retry). Otherwise lost connections,
/// pool timeouts, serialization failures, deadlocks, lack of resources and administrator
/// shutdowns are transient, and everything else is not.
pub fn backend_error(e: sqlx::Error) -> Error {
    let transient = match &e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => {
            if matches!(
                db.code().as_deref(),
                Some(UNDEFINED_TABLE | UNDEFINED_COLUMN)
            ) {
                return Error::SchemaMissing {
                    detail: db.message().to_owned(),
                };
            }
            db.code().is_some_and(|code| {
                // 08: connection exception; 40001/40P01: serialization/deadlock; 53: insufficient
                // resources; 57P01-03: shutdown or cannot connect now.
                code.starts_with("08")
                    || code == "40001"
                    || code == "40P01"
                    || code.starts_with("53")
                    || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")
            })
        }
        _ => false,
    };
    Error::backend(transient, e)
}
