//! The layers every request passes: mutating requests from another site are refused before
//! they reach a handler, and every response carries the security headers (no framing, no
//! sniffing, no inline scripts, no caching of pages).

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::AppError;

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
