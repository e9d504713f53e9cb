//! Who may change things: the operator token, the signed session cookie a sign-in sets, the CSRF
//! token each form carries, the refusal of cross-site requests, and the actor every audit entry
//! names. Reads need none of these; every mutating request needs the token one way or another.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use chrono::Utc;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use maud::{Markup, html};

use crate::error::AppError;
use crate::layout::{Nav, Page};
use crate::query_string;
use crate::{AppState, State};

/// The session cookie's name.
const COOKIE: &str = "oprec_session";
/// How long a sign-in lasts.
const SESSION_SECONDS: i64 = 12 * 3600;
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

/// The token and the key that signs sessions and CSRF tokens. The key mixes a secret drawn at
/// start with the token, so a restart (or a new token) ends every session.
pub(crate) struct Keys {
    token_digest: [u8; 32],
    key: [u8; 32],
}

impl Keys {
    pub(crate) fn new(token: Token) -> Self {
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        Keys {
            token_digest: Sha256::digest(token.0.as_bytes()).into(),
            key: hmac_sha256(&secret, token.0.as_bytes()),
        }
    }

    /// Whether `given` is the token, compared in constant time.
    fn is_token(&self, given: &str) -> bool {
        let d: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        same(&d, &self.token_digest)
    }

    fn sign(&self, what: &str) -> String {
        hex::encode(hmac_sha256(&self.key, what.as_bytes()))
    }

    /// A new session cookie value for `name`.
    fn session_cookie(&self, name: &str) -> String {
        let mut nonce = [0u8; 16];
        rand::rng().fill_bytes(&mut nonce);
        let body = format!(
            "{}.{}.{}",
            Utc::now().timestamp(),
            hex::encode(name.as_bytes()),
            hex::encode(nonce)
        );
        let mac = self.sign(&format!("session|{body}"));
        format!("{body}.{mac}")
    }

    /// The session a cookie value carries, if it is ours and not expired.
    fn session(&self, value: &str) -> Option<Session> {
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
        let nonce = parts.next()?;
        let age = Utc::now().timestamp() - issued;
        if !(0..=SESSION_SECONDS).contains(&age) {
            return None;
        }
        Some(Session {
            csrf: self.sign(&format!("csrf|{nonce}")),
            name,
        })
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

/// Who is looking: whether actions are possible at all, and the session if signed in.
#[derive(Clone, Debug)]
pub(crate) struct Viewer {
    /// A token is configured (otherwise the dashboard is read-only).
    pub can_act: bool,
    /// The signed-in operator.
    pub session: Option<Session>,
}

impl Viewer {
    /// The hidden CSRF field for a form.
    pub fn csrf_field(&self) -> Markup {
        html! {
            @if let Some(s) = &self.session {
                input type="hidden" name="csrf" value=(s.csrf);
            }
        }
    }

    /// What to show instead of an action's button when the viewer cannot act; `None` when
    /// they can.
    pub fn why_not(&self, here: &str) -> Option<Markup> {
        if !self.can_act {
            Some(html! {
                "Read-only: the dashboard was started without an operator token ("
                code { "--token" } " or " code { "OPREC_DASHBOARD_TOKEN" } ")."
            })
        } else if self.session.is_none() {
            Some(html! {
                a href={ "/login?next=" (query_string::encode(here)) } { "Sign in" }
                " with the operator token to act."
            })
        } else {
            None
        }
    }
}

fn cookie_value(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_owned())
}

impl FromRequestParts<Arc<AppState>> for Viewer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let session = state
            .keys
            .as_ref()
            .and_then(|k| cookie_value(&parts.headers).and_then(|c| k.session(&c)));
        Ok(Viewer {
            can_act: state.keys.is_some(),
            session,
        })
    }
}

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
        let given = auth
            .to_str()
            .ok()
            .and_then(|a| a.strip_prefix("Bearer "))
            .unwrap_or("");
        if !keys.is_token(given.trim()) {
            return Err(unauthorized());
        }
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

/// A name for the audit log: 1 to 64 printable characters.
pub(crate) fn actor_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(AppError::bad_request(
            "Give your name (1 to 64 printable characters): it is recorded with every action \
             in the audit log.",
        ));
    }
    Ok(name.to_owned())
}

/// Refuses requests that change things when the browser says they come from another site
/// (`Sec-Fetch-Site`), or whose `Origin` is not this host. Requests without either header
/// (scripts, old browsers) pass on to the token and CSRF checks.
pub(crate) async fn refuse_cross_site(req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let h = req.headers();
    let fetch_site = h.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    let cross = match fetch_site {
        Some("same-origin") | Some("none") | None => false,
        Some(_) => true,
    };
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin_ok = match h.get(header::ORIGIN).map(|v| v.to_str().unwrap_or("null")) {
        None => true,
        Some(origin) => host.is_some_and(|host| {
            origin == format!("http://{host}") || origin == format!("https://{host}")
        }),
    };
    if cross || !origin_ok {
        return AppError::new(
            StatusCode::FORBIDDEN,
            "Cross-site request refused",
            "This request came from another site (or an origin the dashboard does not know), \
             so it was refused and nothing was changed. Open the dashboard itself and act from \
             its pages.",
        )
        .into_response();
    }
    next.run(req).await
}

/// Security headers on every response: no framing, no sniffing, no inline scripts, no caching
/// of pages.
pub(crate) async fn headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// The sign-in form's query.
#[derive(Deserialize)]
pub(crate) struct LoginQuery {
    next: Option<String>,
}

fn login_form(next: &str, message: Option<&str>) -> Markup {
    html! {
        section.narrow {
            h1 { "Sign in" }
            @if let Some(m) = message {
                p.notice.bad { (m) }
            }
            p.muted {
                "Reading needs no sign-in. Actions (re-drive, pause, quarantine, purge) need the \
                 operator token the dashboard was started with; your name goes into the audit log \
                 with each action."
            }
            form.stack method="post" action="/login" {
                input type="hidden" name="next" value=(next);
                label {
                    "Your name "
                    input name="name" required maxlength="64" autocomplete="username"
                        placeholder="e.g. alice";
                }
                label {
                    "Operator token "
                    input name="token" type="password" required autocomplete="current-password";
                }
                button.primary type="submit" { "Sign in" }
            }
        }
    }
}

/// Only a local path: never a redirect to another site.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n.to_owned(),
        _ => "/".to_owned(),
    }
}

/// `GET /login`.
pub(crate) async fn login_page(
    viewer: Viewer,
    q: axum::extract::Query<LoginQuery>,
) -> Result<Response, AppError> {
    if !viewer.can_act {
        return Err(authorize_read_only());
    }
    let next = safe_next(q.next.as_deref());
    Ok(Page::new("Sign in", Nav::None, &viewer)
        .body(login_form(&next, None))
        .into_response())
}

fn authorize_read_only() -> AppError {
    AppError::new(
        StatusCode::FORBIDDEN,
        "Read-only dashboard",
        "This dashboard was started without an operator token, so there is nothing to sign in \
         to: every page can be read without it. Restart it with --token (or \
         OPREC_DASHBOARD_TOKEN) to allow actions.",
    )
}

/// The sign-in form.
#[derive(Deserialize)]
pub(crate) struct LoginForm {
    name: String,
    token: String,
    next: Option<String>,
}

/// `POST /login`: checks the token and sets the session cookie.
pub(crate) async fn login(
    state: State,
    viewer: Viewer,
    axum::Form(form): axum::Form<LoginForm>,
) -> Result<Response, AppError> {
    let Some(keys) = &state.keys else {
        return Err(authorize_read_only());
    };
    let next = safe_next(form.next.as_deref());
    let name = match actor_name(&form.name) {
        Ok(n) => n,
        Err(e) => {
            return Ok((
                StatusCode::BAD_REQUEST,
                Page::new("Sign in", Nav::None, &viewer).body(login_form(&next, Some(&e.message))),
            )
                .into_response());
        }
    };
    if !keys.is_token(form.token.trim()) {
        tracing::warn!(name = %name, "dashboard sign-in with a wrong token");
        return Ok((
            StatusCode::UNAUTHORIZED,
            Page::new("Sign in", Nav::None, &viewer).body(login_form(
                &next,
                Some("That is not the operator token. Nothing was changed."),
            )),
        )
            .into_response());
    }
    let cookie = format!(
        "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_SECONDS}",
        keys.session_cookie(&name)
    );
    let mut res = Redirect::to(&next).into_response();
    res.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|_| AppError::internal("bad cookie"))?,
    );
    Ok(res)
}

/// `POST /logout`: forgets the session cookie.
pub(crate) async fn logout() -> Response {
    let mut res = Redirect::to("/").into_response();
    res.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("oprec_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    res
}

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

/// Equal, in time that does not depend on where the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
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

    #[test]
    fn next_is_a_local_path_only() {
        assert_eq!(safe_next(Some("/dead?kind=a")), "/dead?kind=a");
        assert_eq!(safe_next(Some("//evil.example")), "/");
        assert_eq!(safe_next(Some("https://evil.example")), "/");
        assert_eq!(safe_next(None), "/");
    }
}
