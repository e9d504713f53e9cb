//! Authorizing a mutating request: the operator token as a bearer token, or a session cookie
//! with the form's CSRF token; and the actor each audit entry names. Every token tried here or at
//! sign-in goes through [`check_token`], which throttles wrong ones.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use oprec_ops::MAX_ACTOR;

use crate::AppState;
use crate::error::AppError;
use crate::security::{cookie_value, same};

/// The request's headers and the peer's address, for [`authorize`].
pub(crate) struct Caller {
    headers: HeaderMap,
    peer: Option<SocketAddr>,
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Caller {
            headers: parts.headers.clone(),
            peer: parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0),
        })
    }
}

impl Caller {
    /// The peer's address, when the server recorded it.
    pub(crate) fn peer_ip(&self) -> Option<IpAddr> {
        self.peer.map(|p| p.ip())
    }
}

/// The token an `Authorization: Bearer` header carries (empty when it carries none).
pub(crate) fn bearer(auth: &HeaderValue) -> &str {
    auth.to_str()
        .ok()
        .and_then(|a| a.strip_prefix("Bearer "))
        .unwrap_or("")
        .trim()
}

/// Checks a token someone offers (at sign-in, or as a bearer token): refused while
/// [`crate::sign_in_throttle`] says the caller has tried too many wrong ones, and counted
/// against them when wrong.
pub(crate) fn check_token(
    state: &AppState,
    peer: Option<IpAddr>,
    given: &str,
) -> Result<(), AppError> {
    let Some(keys) = &state.keys else {
        return Err(unauthorized());
    };
    let now = Instant::now();
    state
        .throttle
        .check(peer, now)
        .map_err(AppError::throttled)?;
    if !keys.is_token(given) {
        state.throttle.failed(peer, now);
        return Err(unauthorized());
    }
    Ok(())
}

/// Reads a mutating request's form (an unreadable one as empty) and authorizes it by its `csrf`
/// field (see [`authorize`]); returns the actor and the form's fields.
pub(crate) fn authorize_form(
    state: &AppState,
    caller: &Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<(String, HashMap<String, String>), AppError> {
    let fields = form.map(|f| f.0).unwrap_or_default();
    let actor = authorize(state, caller, fields.get("csrf").map(String::as_str))?;
    Ok((actor, fields))
}

/// Checks that a mutating request carries the token — as a bearer token, or as a session whose
/// CSRF token `csrf` matches — and returns the actor for the audit log: `dashboard:<name>` for a
/// session, `dashboard:token@<address>` (or the `X-Oprec-Actor` header's name) for a bearer.
fn authorize(state: &AppState, caller: &Caller, csrf: Option<&str>) -> Result<String, AppError> {
    let Some(keys) = &state.keys else {
        return Err(AppError::new(
            StatusCode::FORBIDDEN,
            "Read-only dashboard",
            "This dashboard was started without an operator token, so nothing can be changed \
             from it. Restart it with --token (or OPREC_DASHBOARD_TOKEN) to allow actions, or use \
             the oprec command line.",
        ));
    };
    if let Some(auth) = caller.headers.get(header::AUTHORIZATION) {
        check_token(state, caller.peer_ip(), bearer(auth))?;
        let name = match caller.headers.get("x-oprec-actor") {
            Some(v) => actor_name(v.to_str().unwrap_or("\u{0}"))?,
            None => format!(
                "token@{}",
                caller
                    .peer
                    .map(|p| p.ip().to_string())
                    .unwrap_or_else(|| "unknown".into())
            ),
        };
        return Ok(format!("dashboard:{name}"));
    }
    let Some(session) = cookie_value(&caller.headers).and_then(|c| keys.session(&c)) else {
        return Err(unauthorized());
    };
    match csrf {
        Some(given) if same(given.as_bytes(), session.csrf.as_bytes()) => {
            Ok(format!("dashboard:{}", session.name))
        }
        _ => Err(AppError::new(
            StatusCode::FORBIDDEN,
            "Form expired",
            "This form did not carry a valid CSRF token (it may be from before a restart of the \
             dashboard, or from another site). Nothing was changed. Reload the page and try again.",
        )),
    }
}

fn unauthorized() -> AppError {
    AppError::new(
        StatusCode::UNAUTHORIZED,
        "Sign-in needed",
        "Changing anything needs the operator token: sign in with it, or send it as \
         `Authorization: Bearer <token>`. Nothing was changed.",
    )
}

/// A name for the audit log: 1 to [`MAX_ACTOR`] printable characters, the ops library's bound.
pub(crate) fn actor_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_ACTOR || name.chars().any(char::is_control) {
        return Err(AppError::bad_request(format!(
            "Give your name (1 to {MAX_ACTOR} printable characters): it is recorded with every \
             action in the audit log."
        )));
    }
    Ok(name.to_owned())
}
