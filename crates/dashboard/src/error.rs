//! What a person sees when a request cannot be answered: a status, a title and a sentence they
//! can act on — never a stack trace. The full error goes to the log.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// A request that failed, as the person will read it.
#[derive(Debug)]
pub(crate) struct AppError {
    pub status: StatusCode,
    pub title: String,
    pub message: String,
    /// Seconds for `Retry-After` (a throttled request).
    pub retry_after: Option<u64>,
}

impl AppError {
    pub fn new(status: StatusCode, title: &str, message: impl Into<String>) -> Self {
        AppError {
            status,
            title: title.to_owned(),
            message: message.into(),
            retry_after: None,
        }
    }

    /// Too many wrong tokens: a 429 that says how long to wait, in `Retry-After` too.
    pub fn throttled(wait: std::time::Duration) -> Self {
        let seconds = crate::sign_in_throttle::retry_after_seconds(wait);
        AppError {
            retry_after: Some(seconds),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many wrong tokens",
                format!(
                    "Too many wrong operator tokens were tried, so trying is paused: try again in \
                     {seconds} s. Nothing was changed."
                ),
            )
        }
    }

    /// Bad input: says what to fix.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "Check the request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not found", message)
    }

    /// A bug on our side; the detail is logged, not shown.
    pub fn internal(detail: &str) -> Self {
        tracing::error!(detail, "dashboard internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong",
            "The dashboard could not build this page; the details are in its log.",
        )
    }
}

/// An operator workflow's error for the person: bad input is a 400 that says what is accepted,
/// a broker that refused is a 502, a store error reads as [`store`] says.
impl From<oprec_ops::Error> for AppError {
    fn from(e: oprec_ops::Error) -> Self {
        match e {
            oprec_ops::Error::Input(i) => AppError::bad_request(i.0),
            oprec_ops::Error::Transport(t) => {
                tracing::warn!(error = %t, "broker error in the dashboard");
                AppError::new(
                    StatusCode::BAD_GATEWAY,
                    "The broker did not answer",
                    "The broker refused or did not answer; the operations are safe in the \
                     store. Try again when the broker is reachable.",
                )
            }
            oprec_ops::Error::Store(s) => store(s),
            other => AppError::internal(&other.to_string()),
        }
    }
}

/// Bad input, refused by the operator library's grammar, is a 400 that says what is accepted.
impl From<oprec_ops::InputError> for AppError {
    fn from(e: oprec_ops::InputError) -> Self {
        AppError::bad_request(e.0)
    }
}

/// A store error for the person: what happened, and what to do.
pub(crate) fn store(e: oprec_core::Error) -> AppError {
    let text = format!("{e:#}");
    tracing::warn!(error = %text, "store error in the dashboard");
    if let oprec_core::Error::InvalidInput(m) = &e {
        return AppError::bad_request(m.clone());
    }
    if matches!(e, oprec_core::Error::SchemaMissing { .. }) {
        return AppError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "The database has no oprec tables",
            "Run `oprec migrate` against this database, then reload.",
        );
    }
    AppError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "The database did not answer",
        if e.is_transient() {
            "The store could not be reached just now; nothing was changed. Reload in a moment; \
             if it persists, check that the database is up."
        } else {
            "The store refused this request; nothing was changed. The dashboard's log has the \
             database's message."
        },
    )
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let viewer = Viewer {
            can_act: false,
            session: None,
        };
        let body = html! {
            section.narrow.error-page {
                h1 { (self.title) }
                p.notice.bad { (self.message) }
                p { a href="/" { "Back to the overview" } }
            }
        };
        let mut res = (
            self.status,
            Page::new(&self.title, Nav::None, &viewer).body(body),
        )
            .into_response();
        if let Some(seconds) = self.retry_after {
            res.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        res
    }
}

/// Any path the dashboard does not serve.
pub(crate) async fn not_found() -> AppError {
    AppError::not_found("There is no page here. The pages are listed at the top.")
}

/// A handler that panicked (a bug): the person gets a sentence, the log gets the message.
pub(crate) fn panicked(payload: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    AppError::internal(detail).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_reads_as_a_sentence_not_its_message() {
        let res = panicked(Box::new("index out of bounds at src/secret.rs:12"));
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains("Something went wrong"));
        assert!(!body.contains("secret.rs"), "{body}");
    }
}
