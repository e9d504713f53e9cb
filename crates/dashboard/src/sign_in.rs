//! Signing in and out: the sign-in form, the check of the operator token, the signed session
//! cookie it sets (HttpOnly, SameSite=Strict), and the redirect back, only ever to a local path.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_ops::MAX_ACTOR;
use serde::Deserialize;

use crate::State;
use crate::authorize::actor_name;
use crate::error::AppError;
use crate::layout::{Nav, Page};
use crate::security::{COOKIE, SESSION_SECONDS};
use crate::viewer::Viewer;

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
