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
//! Security: a request is answered only when its `Host` names the dashboard (its listen address,
//! `localhost`, a loopback address, or a configured name), against DNS rebinding. Reads are open
//! to whoever reaches the listener (loopback by default) unless [`Dashboard::read_requires_token`]
//! is set; every mutating request needs the operator token — `Authorization: Bearer` for scripts,
//! or a sign-in that sets an HttpOnly, SameSite=Strict session cookie signed with HMAC-SHA256, in
//! which case each form also carries a CSRF token, compared in constant time. Sessions live in the
//! process (like the key that signs them): signing out ends one for good, a restart ends all.
//! Wrong tokens are throttled per client address and globally (429 with `Retry-After`).
//! Cross-site requests are refused by `Sec-Fetch-Site` and `Origin`. Without a token the dashboard
//! is read-only. Every action lands in the audit log with its actor.

mod alerts_page;
mod allowed_hosts;
mod audit_page;
mod authorize;
mod bulk_page;
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
mod operation_actions;
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
mod sessions;
mod sign_in;
mod sign_in_throttle;
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
pub use sign_in_throttle::SignInLimits;

use crate::allowed_hosts::AllowedHosts;
use crate::jobs::Jobs;
use crate::security::Keys;
use crate::sign_in_throttle::SignInThrottle;

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
    /// Host names (or addresses) requests may name besides `localhost`, the loopback addresses
    /// and the listen address: the names people reach the dashboard by through a proxy or DNS.
    pub allowed_hosts: Vec<String>,
    /// Every page but sign-in (and the stylesheet and script) needs a session or the bearer
    /// token, payloads included. Without a token this leaves nothing readable.
    pub read_requires_token: bool,
    /// How many wrong tokens are tolerated before trying is refused for a while.
    pub sign_in_limits: SignInLimits,
}

/// Shared by every request.
pub(crate) struct AppState {
    pub store: Arc<dyn FullStore>,
    pub transport: Option<Arc<dyn Transport>>,
    pub transport_name: Option<String>,
    pub store_name: String,
    pub keys: Option<Keys>,
    pub jobs: Jobs,
    pub allowed_hosts: AllowedHosts,
    pub read_requires_token: bool,
    pub throttle: SignInThrottle,
}

/// The state handlers see.
pub(crate) type State = axum::extract::State<Arc<AppState>>;

impl Dashboard {
    /// The routes. Serve them with `into_make_service_with_connect_info::<SocketAddr>()` so that
    /// actions by bearer token are audited, and wrong tokens throttled, by the caller's address
    /// (see [`Dashboard::serve`]). The router does not know the listen address: a `Host` other
    /// than `localhost` or a loopback address must be in [`Dashboard::allowed_hosts`].
    pub fn router(self) -> Router {
        self.router_at(None)
    }

    fn router_at(self, listen: Option<SocketAddr>) -> Router {
        let state = Arc::new(AppState {
            store: self.store,
            transport: self.transport,
            transport_name: self.transport_name,
            store_name: self.store_name,
            keys: self.token.map(Keys::new),
            jobs: Jobs::default(),
            allowed_hosts: AllowedHosts::new(&self.allowed_hosts, listen),
            read_requires_token: self.read_requires_token,
            throttle: SignInThrottle::new(self.sign_in_limits),
        });
        Router::new()
            .route("/", get(overview::page))
            .route("/operations", get(operations_page::page))
            .route("/operations/{id}", get(operation_page::page))
            .route("/operations/{id}/act", post(operation_actions::act))
            .route("/bulk", get(bulk_page::preview).post(bulk_page::apply))
            .route("/dead", get(dead_page::groups))
            .route(
                "/redrive",
                get(redrive_page::preview).post(redrive_page::start),
            )
            .route("/jobs/{id}", get(redrive_progress::progress))
            .route("/jobs/{id}/stop", post(redrive_progress::stop))
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
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                middleware::require_token_to_read,
            ))
            .layer(axum::middleware::from_fn(middleware::refuse_cross_site))
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                allowed_hosts::refuse_unknown_host,
            ))
            .layer(axum::middleware::from_fn(middleware::headers))
            .with_state(state)
    }

    /// Serves until `shutdown` resolves; requests may also name the listener's address as `Host`.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let listen = listener.local_addr().ok();
        axum::serve(
            listener,
            self.router_at(listen)
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
