//! The sessions this process has opened and not ended: a signed cookie is honoured only while
//! its session is in this table, so signing out (which removes it) makes a captured copy of the
//! cookie worthless at once. The table lives in memory, like the key that signs the cookies: a
//! restart ends every session anyway, so nothing needs to be shared or stored.

use std::collections::HashMap;
use std::sync::Mutex;

/// At most this many open sessions; past it, the one closest to expiry is dropped first. Only
/// holders of the operator token open sessions, so the bound is a guard, not a working limit.
const MAX_SESSIONS: usize = 10_000;

/// Open sessions by nonce, with the Unix time at which each expires.
pub(crate) struct Sessions {
    open: Mutex<HashMap<String, i64>>,
    max: usize,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            open: Mutex::default(),
            max: MAX_SESSIONS,
        }
    }
}

impl Sessions {
    /// Records a new session, forgetting expired ones (and the nearest to expiry when full).
    pub(crate) fn open(&self, nonce: &str, expires: i64, now: i64) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, e| *e > now);
        if open.len() >= self.max
            && let Some(soonest) = open.iter().min_by_key(|(_, e)| **e).map(|(n, _)| n.clone())
        {
            open.remove(&soonest);
        }
        open.insert(nonce.to_owned(), expires);
    }

    /// Whether the session is open and not expired.
    pub(crate) fn is_open(&self, nonce: &str, now: i64) -> bool {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(nonce).is_some_and(|e| *e > now)
    }

    /// Ends a session; whether it was open.
    pub(crate) fn end(&self, nonce: &str) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.remove(nonce).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_open_until_ended_or_expired() {
        let s = Sessions::default();
        s.open("a", 100, 0);
        s.open("b", 50, 0);
        assert!(s.is_open("a", 10) && s.is_open("b", 10));
        assert!(s.end("a"));
        assert!(!s.is_open("a", 10), "ended");
        assert!(!s.end("a"), "already ended");
        assert!(!s.is_open("b", 50), "expired");
        assert!(!s.is_open("never", 0));
    }

    #[test]
    fn the_table_is_bounded() {
        let s = Sessions {
            max: 10,
            ..Sessions::default()
        };
        for i in 0..15 {
            s.open(&i.to_string(), 1_000 + i, 0);
        }
        assert_eq!(s.open.lock().unwrap().len(), 10);
        assert!(!s.is_open("0", 1), "the nearest to expiry went first");
        assert!(s.is_open("14", 1));
    }
}
