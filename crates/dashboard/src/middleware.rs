//! The layers every request passes (besides [`crate::allowed_hosts`]): mutating requests from
//! another site are refused before they reach a handler, pages need a sign-in when the dashboard
//! is told so, and every response carries the security headers (no framing, no sniffing, no
//! inline scripts, no caching of pages).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use crate::AppState;
use crate::authorize::{bearer, check_token};
use crate::error::AppError;
use crate::query_string;
use crate::security::cookie_value;

/// What stays readable when reading needs a sign-in: the sign-in form itself, signing out, and
/// the stylesheet and script.
fn open_without_sign_in(path: &str) -> bool {
    matches!(path, "/login" | "/logout") || path.starts_with("/assets/")
}

/// With [`crate::Dashboard::read_requires_token`], lets a request through only with a session
/// or the bearer token (a wrong one is throttled like a sign-in); a browser without one is sent
/// to sign in and then back, a script gets a 401.
pub(crate) async fn require_token_to_read(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    if !state.read_requires_token || open_without_sign_in(req.uri().path()) {
        return next.run(req).await;
    }
    let Some(keys) = &state.keys else {
        return AppError::new(
            StatusCode::FORBIDDEN,
            "Nothing readable",
            "This dashboard was told that reading needs the operator token, but it was started \
             without one, so there is nothing to sign in with. Restart it with --token (or \
             OPREC_DASHBOARD_TOKEN).",
        )
        .into_response();
    };
    if let Some(auth) = req.headers().get(header::AUTHORIZATION) {
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip());
        return match check_token(&state, peer, bearer(auth)) {
            Ok(()) => next.run(req).await,
            Err(e) => e.into_response(),
        };
    }
    if cookie_value(req.headers()).is_some_and(|c| keys.session(&c).is_some()) {
        return next.run(req).await;
    }
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        let here = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        return Redirect::to(&format!("/login?next={}", query_string::encode(&here)))
            .into_response();
    }
    AppError::new(
        StatusCode::UNAUTHORIZED,
        "Sign-in needed",
        "This dashboard shows nothing and changes nothing without the operator token: sign in \
         with it, or send it as `Authorization: Bearer <token>`. Nothing was changed.",
    )
    .into_response()
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
/// of pages; the script may fetch this dashboard's own pages (live updates), nothing else.
pub(crate) async fn headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
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
