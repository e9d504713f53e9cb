//! Redis errors as oprec errors, with the one question the caller asks of them: will the same call
//! succeed later?

use std::time::Duration;

use oprec_core::Error;
use redis::{ErrorKind, RedisError, ServerErrorKind};

/// Maps a redis error onto oprec's, saying whether retrying the same call later may succeed:
/// I/O failures (refused, reset, timed out), a server still loading its data set (`BUSYLOADING`),
/// `TRYAGAIN` and a failover in progress (`MASTERDOWN`, `CLUSTERDOWN`) are transient; wrong
/// credentials, bad configuration and rejected commands are not.
///
/// Redis errors carry the server's message and the client's reason, never the connection URL,
/// so no password reaches the returned error.
pub fn backend_error(e: RedisError) -> Error {
    Error::backend(is_transient(&e), e)
}

/// Whether `e` may go away by itself.
pub(crate) fn is_transient(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_connection_dropped()
        || matches!(
            e.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ClusterDown
            )
        )
}

/// `NOGROUP`: the stream or the group is gone (deleted, or Redis restarted without its data).
pub(crate) fn is_no_group(e: &RedisError) -> bool {
    e.code() == Some("NOGROUP")
}

/// `BUSYGROUP`: the group exists already, which is what creating it wanted.
pub(crate) fn is_busy_group(e: &RedisError) -> bool {
    e.code() == Some("BUSYGROUP")
}

/// A command that outlived its time limit, as the I/O timeout it is (and so transient).
pub(crate) fn timed_out(command: &str, limit: Duration) -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("{command} got no answer within {limit:?}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: &str) -> RedisError {
        redis::make_extension_error(code.to_owned(), Some("detail".to_owned()))
    }

    #[test]
    fn io_failures_are_transient() {
        for kind in [
            std::io::ErrorKind::ConnectionRefused,
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::TimedOut,
            std::io::ErrorKind::UnexpectedEof,
        ] {
            let e = RedisError::from(std::io::Error::from(kind));
            assert!(backend_error(e).is_transient(), "{kind:?}");
        }
    }

    #[test]
    fn a_loading_or_failing_over_server_is_transient() {
        for reply in [
            &b"-LOADING Redis is loading the dataset in memory\r\n"[..],
            b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
            b"-MASTERDOWN Link with MASTER is down\r\n",
        ] {
            let Ok(redis::Value::ServerError(e)) = redis::parse_redis_value(reply) else {
                panic!("not a server error: {reply:?}");
            };
            assert!(
                backend_error(RedisError::from(e)).is_transient(),
                "{reply:?}"
            );
        }
    }

    #[test]
    fn rejected_commands_and_bad_config_are_not_transient() {
        let e = RedisError::from((ErrorKind::InvalidClientConfig, "Redis URL did not parse"));
        assert!(!backend_error(e).is_transient());
        assert!(!backend_error(server("WRONGTYPE")).is_transient());
    }

    #[test]
    fn group_codes_are_recognised() {
        assert!(is_no_group(&server("NOGROUP")));
        assert!(is_busy_group(&server("BUSYGROUP")));
        assert!(!is_no_group(&server("BUSYGROUP")));
    }
}
