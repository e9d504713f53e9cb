//! The names the dashboard answers to. A page on `attacker.example` whose name is re-pointed to
//! 127.0.0.1 (DNS rebinding) can make a browser fetch the dashboard and read the answer: the
//! browser thinks it is talking to `attacker.example`, and says so in `Host`. So a request is
//! answered only when its `Host` is `localhost`, a loopback address, the address the dashboard
//! listens on (any address literal when it listens on all of them: a rebinding page always
//! carries a name), or a name the operator allowed (`--allowed-host`). Anything else gets a 421
//! with one plain line naming the flag; a request without a usable `Host` gets a 400.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;

/// The names and addresses a request's `Host` may carry.
#[derive(Clone, Debug, Default)]
pub(crate) struct AllowedHosts {
    /// Names the operator allowed, lower case, without brackets or a trailing dot.
    names: Vec<String>,
    /// The address the dashboard listens on, when known.
    listen: Option<IpAddr>,
}

impl AllowedHosts {
    pub(crate) fn new(names: &[String], listen: Option<SocketAddr>) -> Self {
        AllowedHosts {
            names: names.iter().filter_map(|n| normal(n)).collect(),
            listen: listen.map(|a| a.ip().to_canonical()),
        }
    }

    /// Whether a `Host` header's value names this dashboard.
    pub(crate) fn allows(&self, host: &str) -> bool {
        let Some(name) = name_of(host) else {
            return false;
        };
        if name == "localhost" || self.names.contains(&name) {
            return true;
        }
        match name.parse::<IpAddr>().map(|ip| ip.to_canonical()) {
            Ok(ip) => {
                ip.is_loopback()
                    || Some(ip) == self.listen
                    || self.listen.is_some_and(|l| l.is_unspecified())
            }
            Err(_) => false,
        }
    }
}

/// A name as compared: lower case, no brackets around an IPv6 address, no trailing dot.
fn normal(name: &str) -> Option<String> {
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    let name = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .map(str::to_owned)
        .unwrap_or(name);
    (!name.is_empty()).then_some(name)
}

/// The name part of a `Host` value (`name`, `name:port`, `[v6]` or `[v6]:port`).
fn name_of(host: &str) -> Option<String> {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        v6
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) && !name.contains(':') => name,
            Some(_) => return None,
            None => host,
        }
    };
    normal(name)
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// Answers only requests whose `Host` names this dashboard (see the module's documentation).
pub(crate) async fn refuse_unknown_host(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let host = req.headers().get(header::HOST).map(HeaderValue::to_str);
    match host {
        Some(Ok(h)) if state.allowed_hosts.allows(h) => next.run(req).await,
        Some(Ok(h)) if name_of(h).is_some() => {
            let shown: String = h.chars().take(100).collect();
            let name = name_of(h).unwrap_or_default();
            tracing::warn!(host = %shown, "dashboard request for an unknown Host refused");
            refusal(
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "This dashboard does not answer to Host {shown:?} (only to its listen \
                     address, localhost and loopback addresses, against DNS rebinding); if that \
                     name is yours, start it with --allowed-host {name:?}.\n"
                ),
            )
        }
        _ => refusal(
            StatusCode::BAD_REQUEST,
            "This request has no Host header naming a host; the dashboard answers only requests \
             that name it (its listen address, localhost, a loopback address or an \
             --allowed-host name).\n"
                .into(),
        ),
    }
}

fn refusal(status: StatusCode, line: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        line,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str], listen: Option<&str>) -> AllowedHosts {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        AllowedHosts::new(&names, listen.map(|l| l.parse().unwrap()))
    }

    #[test]
    fn loopback_and_localhost_are_always_allowed() {
        let h = hosts(&[], None);
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "localhost.",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:8080",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for refused in [
            "attacker.example",
            "attacker.example:8080",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "10.0.0.5:8080",
            "::1",
            "[::1]x",
            "localhost:80:80",
            "",
            "localhost:http",
        ] {
            assert!(!h.allows(refused), "{refused}");
        }
    }

    #[test]
    fn configured_names_and_the_listen_address_are_allowed() {
        let h = hosts(&["Ops.Example.COM", "[2001:db8::5]"], Some("10.0.0.5:8080"));
        assert!(h.allows("ops.example.com:8080"));
        assert!(h.allows("[2001:db8::5]:8080"));
        assert!(h.allows("10.0.0.5:8080"));
        assert!(!h.allows("10.0.0.6:8080"));
        assert!(!h.allows("other.example.com"));
        let any = hosts(&[], Some("0.0.0.0:8080"));
        assert!(any.allows("10.0.0.6:8080"), "an address literal");
        assert!(any.allows("[2001:db8::7]:8080"));
        assert!(!any.allows("attacker.example:8080"), "never a name");
    }
}
