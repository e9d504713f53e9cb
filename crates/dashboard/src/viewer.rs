//! Who is looking at a page: whether the dashboard can act at all (it was started with a token),
//! and the signed-in operator if there is one. Pages ask the viewer for the CSRF field of their
//! forms, and for what to show instead of an action the viewer cannot take.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use maud::{Markup, html};

use crate::AppState;
use crate::query_string;
use crate::security::{Session, cookie_value};

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
