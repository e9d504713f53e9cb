//! Who may change things, and how a session proves it: the operator token, the key that signs
//! session cookies and CSRF tokens, the sessions open in this process, and the signed-in operator
//! a valid cookie names. Checking a
//! request against them is [`crate::authorize`]'s job; signing in is [`crate::sign_in`]'s.

use std::fmt;

use axum::http::{HeaderMap, header};
use chrono::Utc;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::sessions::Sessions;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "oprec_session";
/// How long a sign-in lasts.
pub(crate) const SESSION_SECONDS: i64 = 12 * 3600;
/// The shortest token accepted: a guessable token is no protection.
pub const MIN_TOKEN_LEN: usize = 16;

/// The operator token. Its `Debug` never shows it, so it cannot leak into logs.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// A token, refused (with a reason a person can act on) when too short or not printable.
    pub fn new(token: impl Into<String>) -> Result<Self, String> {
        let token = token.into();
        if token.chars().count() < MIN_TOKEN_LEN {
            return Err(format!(
                "the dashboard token must be at least {MIN_TOKEN_LEN} characters (a random one: \
                 `openssl rand -hex 24`)"
            ));
        }
        if token.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err("the dashboard token must not contain spaces or control characters".into());
        }
        Ok(Token(token))
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The token, the key that signs sessions and CSRF tokens, and the sessions opened with it. The
/// key mixes a secret drawn at start with the token, so a restart (or a new token) ends every
/// session; signing out ends one (see [`Sessions`]).
pub(crate) struct Keys {
    token_digest: [u8; 32],
    key: [u8; 32],
    sessions: Sessions,
}

impl Keys {
    pub(crate) fn new(token: Token) -> Self {
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        Keys {
            token_digest: Sha256::digest(token.0.as_bytes()).into(),
            key: hmac_sha256(&secret, token.0.as_bytes()),
            sessions: Sessions::default(),
        }
    }

    /// Whether `given` is the token, compared in constant time.
    pub(crate) fn is_token(&self, given: &str) -> bool {
        let d: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        same(&d, &self.token_digest)
    }

    fn sign(&self, what: &str) -> String {
        hex::encode(hmac_sha256(&self.key, what.as_bytes()))
    }

    /// A new session cookie value for `name`; the session is open until it expires or
    /// [`Keys::end_session`] ends it.
    pub(crate) fn session_cookie(&self, name: &str) -> String {
        let mut nonce = [0u8; 16];
        rand::rng().fill_bytes(&mut nonce);
        let nonce = hex::encode(nonce);
        let now = Utc::now().timestamp();
        let body = format!("{now}.{}.{nonce}", hex::encode(name.as_bytes()));
        let mac = self.sign(&format!("session|{body}"));
        self.sessions.open(&nonce, now + SESSION_SECONDS, now);
        format!("{body}.{mac}")
    }

    /// The session a cookie value carries, if it is ours, open and not expired.
    pub(crate) fn session(&self, value: &str) -> Option<Session> {
        let (name, nonce) = self.verified(value)?;
        if !self.sessions.is_open(&nonce, Utc::now().timestamp()) {
            return None;
        }
        Some(Session {
            csrf: self.sign(&format!("csrf|{nonce}")),
            name,
        })
    }

    /// Ends the session a cookie value carries (signing out): the same cookie, replayed later,
    /// no longer names a session. Whether there was one to end.
    pub(crate) fn end_session(&self, value: &str) -> bool {
        self.verified(value)
            .is_some_and(|(_, nonce)| self.sessions.end(&nonce))
    }

    /// The name and nonce of a cookie value signed by us and not past its age.
    fn verified(&self, value: &str) -> Option<(String, String)> {
        let (body, mac) = value.rsplit_once('.')?;
        if !same(
            self.sign(&format!("session|{body}")).as_bytes(),
            mac.as_bytes(),
        ) {
            return None;
        }
        let mut parts = body.split('.');
        let issued: i64 = parts.next()?.parse().ok()?;
        let name = String::from_utf8(hex::decode(parts.next()?).ok()?).ok()?;
        let nonce = parts.next()?.to_owned();
        let age = Utc::now().timestamp() - issued;
        if !(0..=SESSION_SECONDS).contains(&age) {
            return None;
        }
        Some((name, nonce))
    }
}

/// A signed-in operator.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// The name they gave at sign-in.
    pub name: String,
    /// The CSRF token their forms carry.
    pub csrf: String,
}

/// The session cookie's value in a request, if it carries one.
pub(crate) fn cookie_value(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_owned())
}

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

/// Equal, in time that does not depend on where the first difference is.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn sessions_are_signed_and_carry_the_name() {
        let keys = Keys::new(Token::new("0123456789abcdef-token").unwrap());
        let cookie = keys.session_cookie("alice.o'hara");
        let s = keys.session(&cookie).expect("a valid session");
        assert_eq!(s.name, "alice.o'hara");
        let tampered = cookie.replacen(&hex::encode("alice.o'hara"), &hex::encode("mallory"), 1);
        assert!(
            keys.session(&tampered).is_none(),
            "a changed name breaks the signature"
        );
        let other = Keys::new(Token::new("0123456789abcdef-token").unwrap());
        assert!(other.session(&cookie).is_none(), "a restart ends sessions");
        assert!(keys.end_session(&cookie), "signing out ends it");
        assert!(
            keys.session(&cookie).is_none(),
            "a replayed cookie is refused"
        );
        assert!(!keys.end_session(&tampered), "a forged cookie ends nothing");
    }

    #[test]
    fn tokens_are_checked_and_never_shown() {
        assert!(Token::new("short").is_err());
        assert!(Token::new("has a space in it, long").is_err());
        let t = Token::new("s3cret-s3cret-s3cret").unwrap();
        assert!(!format!("{t:?}").contains("s3cret"));
        let keys = Keys::new(t);
        assert!(keys.is_token("s3cret-s3cret-s3cret"));
        assert!(!keys.is_token("s3cret-s3cret-s3cre"));
    }
}
