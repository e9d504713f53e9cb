//! oprec-dashboard: the operator's web page. It answers "what is failing, why, and is it safe to
//! re-drive" — the figures of `oprec stats`, a filterable list of operations, one operation with
//! its attempt history, dead letters grouped by kind, class and reason with a re-drive flow (dry
//! run, confirm with a rate, progress), pauses, quarantine and the transport purge.
//!
//! Server-rendered HTML with every asset embedded (no CDN, no build step), on axum, over any
//! [`OperatorStore`](oprec_core::OperatorStore). Pages are maud templates, checked at compile time, which escape every value
//! spliced into them: no module builds HTML by hand. It is not an API for programs (the `oprec`
//! binary and the library are), and not a place to edit operation records by hand.
//!
//! Security: reads are open to whoever reaches the listener (loopback by default); every mutating
//! request needs the operator token — `Authorization: Bearer` for scripts, or a sign-in that sets
//! an HttpOnly, SameSite=Strict session cookie signed with HMAC-SHA256, in which case each form
//! also carries a CSRF token, compared in constant time.
//! Cross-site requests are refused by `Sec-Fetch-Site` and `Origin`. Without a token the dashboard
//! is read-only. Every action lands in the audit log with its actor.

mod alerts_page;
mod audit_page;
mod authorize;
mod chart;
mod controls_page;
mod dead_page;
mod error;
mod figures;
mod filters;
mod html;
mod jobs;
mod layout;
mod middleware;
mod operation_page;
mod operations_page;
mod overview;
mod pause;
mod quarantine_page;
mod query_string;
mod redrive_page;
mod redrive_progress;
mod schedules_page;
mod security;
mod sign_in;
mod transport_page;
mod viewer;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use oprec_core::{FullStore, Transport};

pub use security::Token;

use crate::jobs::Jobs;
use crate::security::Keys;

/// What the dashboard serves, and who may change things.
pub struct Dashboard {
    /// The store of operation records.
    pub store: Arc<dyn FullStore>,
    /// The broker, when there is one: its depth and purge.
    pub transport: Option<Arc<dyn Transport>>,
    /// The transport URL with any password masked, for display.
    pub transport_name: Option<String>,
    /// The store URL with any password masked, for display.
    pub store_name: String,
    /// The operator token; without one the dashboard is read-only.
    pub token: Option<Token>,
}

/// Shared by every request.
pub(crate) struct AppState {
    pub store: Arc<dyn FullStore>,
    pub transport: Option<Arc<dyn Transport>>,
    pub transport_name: Option<String>,
    pub store_name: String,
    pub keys: Option<Keys>,
    pub jobs: Jobs,
}

/// The state handlers see.
pub(crate) type State = axum::extract::State<Arc<AppState>>;

impl Dashboard {
    /// The routes. Serve them with `into_make_service_with_connect_info::<SocketAddr>()` so that
    /// actions by bearer token are audited with the caller's address (see [`Dashboard::serve`]).
    pub fn router(self) -> Router {
        let state = Arc::new(AppState {
            store: self.store,
            transport: self.transport,
            transport_name: self.transport_name,
            store_name: self.store_name,
            keys: self.token.map(Keys::new),
            jobs: Jobs::default(),
        });
        Router::new()
            .route("/", get(overview::page))
            .route("/operations", get(operations_page::page))
            .route("/operations/{id}", get(operation_page::page))
            .route("/dead", get(dead_page::groups))
            .route(
                "/redrive",
                get(redrive_page::preview).post(redrive_page::start),
            )
            .route("/jobs/{id}", get(redrive_progress::progress))
            .route("/controls", get(controls_page::page))
            .route("/controls/pause", post(pause::pause))
            .route("/controls/resume", post(pause::resume))
            .route(
                "/quarantine",
                get(quarantine_page::quarantine_preview).post(quarantine_page::quarantine),
            )
            .route("/transport", get(transport_page::page))
            .route("/transport/purge", post(transport_page::purge))
            .route("/schedules", get(schedules_page::page))
            .route("/audit", get(audit_page::page))
            .route("/alerts", get(alerts_page::page))
            .route("/login", get(sign_in::login_page).post(sign_in::login))
            .route("/logout", post(sign_in::logout))
            .route("/assets/style.css", get(style))
            .route("/assets/app.js", get(script))
            .fallback(error::not_found)
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(
                error::panicked,
            ))
            .layer(axum::middleware::from_fn(middleware::refuse_cross_site))
            .layer(axum::middleware::from_fn(middleware::headers))
            .with_state(state)
    }

    /// Serves until `shutdown` resolves.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(
            listener,
            self.router()
                .into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown)
        .await
    }
}

const STYLE: &str = include_str!("../assets/style.css");
const SCRIPT: &str = include_str!("../assets/app.js");

async fn style() -> impl IntoResponse {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/css; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("max-age=300"),
            ),
        ],
        STYLE,
    )
}

async fn script() -> impl IntoResponse {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("max-age=300"),
            ),
        ],
        SCRIPT,
    )
}
