//! `oprec dashboard`: serves the operator web dashboard (crate `oprec-dashboard`) over the store
//! `--database-url` names and the broker `--transport` names. Loopback by default; without a
//! token it is read-only; a non-loopback address must be asked for explicitly, and draws a
//! warning at start, because the pages travel as plain HTTP (and, without
//! `--read-requires-token`, are readable by anyone who reaches them). Requests must name the
//! dashboard as `Host` (its address, localhost, loopback, or an `--allowed-host`).

use std::net::SocketAddr;

use anyhow::Context as _;
use clap::Args;
use oprec_dashboard::{Dashboard, Token};

use crate::backend::{self, Backend};
use crate::cli::Global;
use crate::exit::bad;

/// `oprec dashboard --help`: what it serves and the security rules it enforces.
pub(crate) const LONG_ABOUT: &str = "\
Serve the operator dashboard: the stats, the operations list, one operation with its attempt \
history, dead letters with the re-drive flow (dry run, confirm with a rate, progress), pauses, \
quarantine and the transport purge.\n\n\
Reading needs nothing unless --read-requires-token is given. Every action needs the operator \
token: sign in with it on the page (an HttpOnly, SameSite=Strict session cookie; every form \
carries a CSRF token), or send `Authorization: Bearer TOKEN`. Without a token the dashboard is \
read-only. Signing out ends the session on the server: a copied cookie stops working (sessions \
live in the process; a restart ends them all). Wrong tokens are throttled per client address and \
in all: past 5 from one address (or 30 in all) the next tries get 429 with Retry-After. Prefer \
OPREC_DASHBOARD_TOKEN to --token: command lines are visible to other users of the machine.\n\n\
Against DNS rebinding, a request is answered only when its Host is the listen address, localhost \
or a loopback address (any address when listening on all of them), or a name given with \
--allowed-host; others get 421 naming the flag.";

/// `oprec dashboard`.
#[derive(Debug, Args)]
pub(crate) struct DashboardArgs {
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// The operator token that actions need (at least 16 characters); without one the dashboard
    /// is read-only.
    #[arg(
        long,
        env = "OPREC_DASHBOARD_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        value_parser = token
    )]
    pub token: Option<TokenArg>,
    /// Listen on an address other than loopback. The pages are plain HTTP (readable without the
    /// token unless --read-requires-token): put the dashboard behind a TLS proxy. A warning says
    /// so at start.
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// A host name (or address) requests may name as Host besides the listen address, localhost
    /// and loopback: the name people reach the dashboard by, e.g. through a proxy. Repeatable.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Every page but sign-in needs the operator token (a sign-in, or Authorization: Bearer),
    /// payloads included. Needs --token.
    #[arg(long)]
    pub read_requires_token: bool,
}

/// The token as given, checked by `run` so that a bad one is a one-line message that does not
/// repeat it (clap's own error would echo the value). Its `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct TokenArg(String);

impl std::fmt::Debug for TokenArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenArg(<redacted>)")
    }
}

fn token(s: &str) -> Result<TokenArg, String> {
    Ok(TokenArg(s.to_owned()))
}

/// Runs `oprec dashboard` until SIGTERM or ctrl-c.
pub(crate) async fn run(global: &Global, args: DashboardArgs) -> anyhow::Result<()> {
    let token = args
        .token
        .map(|t| Token::new(t.0).map_err(|e| bad(format!("--token: {e}"))))
        .transpose()?;
    let addr: SocketAddr = args.listen.trim().parse().map_err(|_| {
        bad(format!(
            "--listen {:?} is not an address: give IP:PORT, such as 127.0.0.1:8080",
            args.listen
        ))
    })?;
    let allowed_hosts = args
        .allowed_hosts
        .iter()
        .map(|h| allowed_host(h))
        .collect::<Result<Vec<_>, _>>()?;
    if args.read_requires_token && token.is_none() {
        return Err(bad(
            "--read-requires-token needs the operator token (--token or OPREC_DASHBOARD_TOKEN): \
             without it nobody could sign in to read",
        ));
    }
    if !addr.ip().is_loopback() && !args.allow_non_loopback {
        return Err(bad(format!(
            "refusing to listen on {addr}, which is not loopback: the pages are plain HTTP and \
             readable without the token{}. Add --allow-non-loopback to do it anyway (behind a TLS \
             proxy), or listen on 127.0.0.1",
            if token.is_none() {
                ", and with no --token nothing else is asked either"
            } else {
                ""
            }
        )));
    }
    let backend = Backend::open(global).await?;
    backend.ensure_schema().await?;
    let shown_transport = oprec::redact_url(&global.transport);
    let transport = if global.transport.starts_with("memory:") {
        None
    } else {
        backend::transport(&global.transport)?
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().unwrap_or(addr);
    let read_only = token.is_none();
    if !local.ip().is_loopback() {
        eprintln!(
            "oprec dashboard: warning: listening on {local}, which is not loopback, over plain \
             HTTP without TLS: the token, session cookies and pages cross the network \
             unencrypted{}. Put a TLS proxy in front.{}",
            if args.read_requires_token {
                ""
            } else {
                ", and the pages are readable by anyone who reaches the port (see \
                 --read-requires-token)"
            },
            if allowed_hosts.is_empty() {
                " Requests naming it by a host name need --allowed-host NAME."
            } else {
                ""
            },
        );
    }
    eprintln!(
        "oprec dashboard: http://{local}/ over {}{}{}",
        backend.url,
        match &transport {
            Some(_) => format!(" and {shown_transport}"),
            None => String::new(),
        },
        if read_only {
            " (read-only: no --token or OPREC_DASHBOARD_TOKEN)"
        } else {
            ""
        }
    );
    let dashboard = Dashboard {
        store: backend.store.clone(),
        transport_name: transport.as_ref().map(|_| shown_transport.clone()),
        transport,
        store_name: backend.url.clone(),
        token,
        allowed_hosts,
        read_requires_token: args.read_requires_token,
        sign_in_limits: Default::default(),
    };
    dashboard
        .serve(listener, shutdown_signal())
        .await
        .context("the dashboard stopped")?;
    Ok(())
}

/// An `--allowed-host` value: a name or address without scheme, port, path or spaces.
fn allowed_host(h: &str) -> anyhow::Result<String> {
    let name = h.trim();
    let bare_v6 = name.starts_with('[') && name.ends_with(']');
    let ok = !name.is_empty()
        && name.len() <= 253
        && (bare_v6 || !name.contains(':'))
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
    if !ok {
        return Err(bad(format!(
            "--allowed-host {h:?} is not a host name: give a name or address as it appears in \
             the browser's address bar, without scheme or port (ops.example.com, 10.0.0.5, \
             [2001:db8::5])"
        )));
    }
    Ok(name.to_owned())
}

/// Resolves on SIGTERM or ctrl-c.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = async {
                match term.as_mut() {
                    Some(t) => { t.recv().await; }
                    None => std::future::pending().await,
                }
            } => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
