//! The HTTP handler of a declared kind: the operation's payload POSTed as JSON to the kind's URL,
//! with the effect key as `Idempotency-Key` and the headers the environment values; the answer
//! read through the kind's [`Mapping`]. How the request itself fails decides too: a connection
//! that could not be made sent nothing (transient), while a request that got no answer in time
//! may have been applied (unknown: reconcile, no blind retry). The optional reconcile URL is asked
//! with a GET, keyed the same way, whether an unknown effect happened.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use oprec_core::{Failure, Outcome};
use oprec_runtime::Reconciled;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::HeaderName;
use serde_json::Value;

use crate::mapping::{Answer, Mapping};
use crate::secret::EnvHeader;

/// The most of a response body read: enough for any id or error message, never a provider's
/// runaway answer read into memory.
const BODY_LIMIT: usize = 1 << 20;

/// Characters of an effect key left as they are in a reconcile URL's path.
const KEY_SAFE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.');

/// The placeholder of a reconcile URL replaced by the effect key.
pub(crate) const EFFECT_KEY_PLACEHOLDER: &str = "{effect_key}";

/// What a declared kind's handler needs to make its requests.
#[derive(Clone, Debug)]
pub(crate) struct HttpSettings {
    pub kind: String,
    pub dependency: String,
    pub url: reqwest::Url,
    /// The reconcile URL, possibly holding [`EFFECT_KEY_PLACEHOLDER`].
    pub reconcile_url: Option<String>,
    pub idempotency_header: HeaderName,
    pub headers: Vec<EnvHeader>,
    pub mapping: Mapping,
    /// How long a request may wait for its answer (less than the attempt's timeout, so that the
    /// handler, not the worker, notices a slow answer and says what it means).
    pub request_timeout: Duration,
}

/// Runs one declared kind's requests. Cheap to clone.
#[derive(Clone, Debug)]
pub struct HttpHandler {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: HttpSettings,
    /// `POST http://host:port/path`, for messages: no query, no user or password.
    shown: String,
    client: reqwest::Client,
}

/// `scheme://host[:port]/path` of `url`: what messages and logs may show of it.
pub(crate) fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    shown
}

/// `e` and its causes on one line, without the URL (reqwest's errors quote it whole).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut parts = vec![e.to_string()];
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    crate::error::one_line(&parts.join(": "))
}

impl HttpHandler {
    pub(crate) fn new(settings: HttpSettings) -> anyhow::Result<Self> {
        // reqwest is built with rustls and no crypto provider of its own: one for the process
        // (ring, as the rest of oprec uses); a second call changes nothing.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            // A redirect would turn the POST into a GET elsewhere: the answer is the kind's to
            // map (3xx is unknown unless the kind says otherwise).
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout((settings.request_timeout / 2).min(Duration::from_secs(10)))
            .build()?;
        let shown = format!("POST {}", shown_url(&settings.url));
        Ok(HttpHandler {
            inner: Arc::new(Inner {
                settings,
                shown,
                client,
            }),
        })
    }

    /// Whether the kind has a reconcile URL.
    pub fn can_reconcile(&self) -> bool {
        self.inner.settings.reconcile_url.is_some()
    }

    /// Makes one attempt's request: succeeded, with the remote id when the answer names one, or
    /// the classified failure.
    pub async fn call(&self, effect_key: &str, payload: &Value) -> Outcome {
        let s = &self.inner.settings;
        let mut request = self
            .inner
            .client
            .post(s.url.clone())
            .timeout(s.request_timeout)
            .header(s.idempotency_header.clone(), effect_key)
            .json(payload);
        for h in &s.headers {
            match h.value() {
                Ok(v) => request = request.header(h.name.clone(), v),
                Err(why) => return Outcome::Failed(Failure::configuration(why)),
            }
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(self.unanswered(e)),
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = match read_body(response).await {
            Ok(body) => body,
            Err(e) => {
                // The status is the answer; a body cut off only loses what it would have said.
                tracing::warn!(kind = %s.kind, status, error = %describe(e),
                    "the answer's body could not be read; classifying by its status alone");
                Vec::new()
            }
        };
        s.mapping.outcome(&Answer {
            status,
            headers: &headers,
            body: &body,
            request: &self.inner.shown,
            dependency: &s.dependency,
            now: Utc::now(),
        })
    }

    /// What a request that got no answer means: nothing sent, or an effect that may have
    /// happened.
    fn unanswered(&self, e: reqwest::Error) -> Failure {
        let s = &self.inner.settings;
        let shown = &self.inner.shown;
        if e.is_connect() {
            return Failure::transient(format!(
                "{shown}: could not connect to {} ({}): nothing was sent",
                s.dependency,
                describe(e)
            ));
        }
        if e.is_builder() {
            return Failure::configuration(format!(
                "{shown}: the request could not be built ({})",
                describe(e)
            ));
        }
        if e.is_timeout() {
            return Failure::unknown(format!(
                "{shown}: no answer within {:?} after the request was sent: the effect may \
                 have happened",
                s.request_timeout
            ));
        }
        Failure::unknown(format!(
            "{shown}: the request failed after it may have been sent ({}): the effect may have \
             happened",
            describe(e)
        ))
    }

    /// Asks the reconcile URL whether the effect keyed `effect_key` happened: a success is
    /// applied (with the remote id where the kind's mapping finds it), 404 or 410 not applied,
    /// anything else (or no reconcile URL) still unknown.
    pub async fn reconcile(&self, effect_key: &str) -> Reconciled {
        let s = &self.inner.settings;
        let Some(template) = &s.reconcile_url else {
            return Reconciled::StillUnknown;
        };
        let url = template.replace(
            EFFECT_KEY_PLACEHOLDER,
            &utf8_percent_encode(effect_key, KEY_SAFE).to_string(),
        );
        let mut request = self
            .inner
            .client
            .get(url)
            .timeout(s.request_timeout)
            .header(s.idempotency_header.clone(), effect_key);
        for h in &s.headers {
            match h.value() {
                Ok(v) => request = request.header(h.name.clone(), v),
                Err(why) => {
                    tracing::warn!(kind = %s.kind, error = %why, "cannot reconcile");
                    return Reconciled::StillUnknown;
                }
            }
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                tracing::info!(kind = %s.kind, error = %describe(e),
                    "the reconcile request got no answer; asking again later");
                return Reconciled::StillUnknown;
            }
        };
        match response.status().as_u16() {
            200..=299 => {
                let headers = response.headers().clone();
                let body = read_body(response).await.unwrap_or_default();
                Reconciled::Applied {
                    remote_id: s.mapping.remote_id(&headers, &body),
                }
            }
            404 | 410 => Reconciled::NotApplied,
            status => {
                tracing::info!(kind = %s.kind, status,
                    "the reconcile URL gave no decision; asking again later");
                Reconciled::StillUnknown
            }
        }
    }
}

/// The body, up to [`BODY_LIMIT`] bytes.
async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = BODY_LIMIT - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= BODY_LIMIT {
            break;
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_keep_no_query_and_no_password() {
        let url = reqwest::Url::parse("https://u:pw@p.example:8443/v1/ship?token=abc").unwrap();
        assert_eq!(shown_url(&url), "https://p.example:8443/v1/ship");
    }
}
