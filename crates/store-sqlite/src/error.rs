//! SQLite's errors as oprec's: whether a failure is worth retrying, and "the oprec tables do not
//! exist" as [`Error::SchemaMissing`], so that callers match a variant instead of SQLite's text.

use oprec_core::Error;

/// SQLite's primary result codes (the low byte of an extended code) that say "try again later":
/// the database is busy or a table locked (another connection's write), out of memory, an I/O
/// error, a full disk, or a WAL locking race.
const TRANSIENT_CODES: [i32; 6] = [
    5,  // SQLITE_BUSY
    6,  // SQLITE_LOCKED
    7,  // SQLITE_NOMEM
    10, // SQLITE_IOERR
    13, // SQLITE_FULL
    15, // SQLITE_PROTOCOL
];

/// How SQLite begins the message of a statement that names a table the database does not have,
/// or a column a schema made by an older oprec lacks (result code SQLITE_ERROR, which says
/// nothing more).
const MISSING: [&str; 2] = ["no such table", "no such column"];

/// Maps a sqlx error onto oprec's, saying whether retrying the same call later may succeed:
/// a busy or locked database (a write lock held past the busy timeout), I/O errors, lack of
/// memory or disk, pool timeouts and crashed connection workers are transient; everything else
/// (constraint violations, malformed SQL, unreadable values) is not. A statement that names a
/// missing table, or a column an older schema lacks, is [`Error::SchemaMissing`]: the database
/// was never migrated, or not by this version.
pub fn backend_error(e: sqlx::Error) -> Error {
    let transient = match &e {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) if MISSING.iter().any(|m| db.message().starts_with(m)) => {
            return Error::SchemaMissing {
                detail: db.message().to_owned(),
            };
        }
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| TRANSIENT_CODES.contains(&(code & 0xff))),
        _ => false,
    };
    Error::backend(transient, e)
}
