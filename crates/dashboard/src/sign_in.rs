//! Signing in and out: the sign-in form, the check of the operator token (throttled, see
//! [`crate::sign_in_throttle`]), the signed session cookie it sets (HttpOnly, SameSite=Strict),
//! the redirect back, only ever to a local path, and signing out, which ends the session in this
//! process so that a captured copy of the cookie stops working.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_ops::MAX_ACTOR;
use serde::Deserialize;

use crate::State;
use crate::authorize::{Caller, actor_name, check_token};
use crate::error::AppError;
use crate::layout::{Nav, Page};
use crate::security::{COOKIE, SESSION_SECONDS, cookie_value};
use crate::viewer::Viewer;

/// The sign-in form's query.
#[derive(Deserialize)]
pub(crate) struct LoginQuery {
    next: Option<String>,
}

fn login_form(next: &str, message: Option<&str>, read_requires_token: bool) -> Markup {
    html! {
        section.narrow {
            h1 { "Sign in" }
            @if let Some(m) = message {
                p.notice.bad { (m) }
            }
            p.muted {
                @if read_requires_token {
                    "This dashboard shows nothing without sign-in. "
                } @else {
                    "Reading needs no sign-in. "
                }
                "Actions (re-drive, pause, quarantine, purge) need the operator token the \
                 dashboard was started with; your name goes into the audit log with each action."
            }
            form.stack method="post" action="/login" {
                input type="hidden" name="next" value=(next);
                label {
                    "Your name "
                    input name="name" required maxlength=(MAX_ACTOR) autocomplete="username"
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
    state: State,
    viewer: Viewer,
    q: axum::extract::Query<LoginQuery>,
) -> Result<Response, AppError> {
    if !viewer.can_act {
        return Err(authorize_read_only());
    }
    let next = safe_next(q.next.as_deref());
    Ok(Page::new("Sign in", Nav::None, &viewer)
        .body(login_form(&next, None, state.read_requires_token))
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
    caller: Caller,
    axum::Form(form): axum::Form<LoginForm>,
) -> Result<Response, AppError> {
    let Some(keys) = &state.keys else {
        return Err(authorize_read_only());
    };
    let gated = state.read_requires_token;
    let next = safe_next(form.next.as_deref());
    let name = match actor_name(&form.name) {
        Ok(n) => n,
        Err(e) => {
            return Ok((
                StatusCode::BAD_REQUEST,
                Page::new("Sign in", Nav::None, &viewer).body(login_form(
                    &next,
                    Some(&e.message),
                    gated,
                )),
            )
                .into_response());
        }
    };
    match check_token(&state, caller.peer_ip(), form.token.trim()) {
        Ok(()) => {}
        Err(e) if e.status == StatusCode::UNAUTHORIZED => {
            tracing::warn!(name = %name, "dashboard sign-in with a wrong token");
            return Ok((
                StatusCode::UNAUTHORIZED,
                Page::new("Sign in", Nav::None, &viewer).body(login_form(
                    &next,
                    Some("That is not the operator token. Nothing was changed."),
                    gated,
                )),
            )
                .into_response());
        }
        Err(e) => {
            tracing::warn!(name = %name, "dashboard sign-in refused: too many wrong tokens");
            return Err(e);
        }
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

/// `POST /logout`: ends the session (a copy of its cookie, replayed, is refused from now on) and
/// clears the cookie.
pub(crate) async fn logout(state: State, headers: axum::http::HeaderMap) -> Response {
    if let (Some(keys), Some(cookie)) = (&state.keys, cookie_value(&headers))
        && keys.end_session(&cookie)
    {
        tracing::info!("dashboard session ended by signing out");
    }
    let mut res = Redirect::to("/").into_response();
    res.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("oprec_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_a_local_path_only() {
        assert_eq!(safe_next(Some("/dead?kind=a")), "/dead?kind=a");
        assert_eq!(safe_next(Some("//evil.example")), "/");
        assert_eq!(safe_next(Some("https://evil.example")), "/");
        assert_eq!(safe_next(None), "/");
    }
}
