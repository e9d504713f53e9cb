//! [`WebhookSink`]: alerts (promotions to dead, configuration holds, pauses) posted as JSON over HTTP(S) (feature `webhook`,
//! which brings reqwest and rustls with the ring provider).

use std::time::Duration;

use async_trait::async_trait;

use crate::{Alert, AlertSink};

/// Posts each announcement as JSON to a URL; any non-2xx answer or transport error is retried on
/// a later pass. Its `Debug` and its errors never show a password in the URL.
#[derive(Clone)]
pub struct WebhookSink {
    url: reqwest::Url,
    client: reqwest::Client,
}

impl std::fmt::Debug for WebhookSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSink")
            .field("url", &oprec_core::redact_url(self.url.as_str()))
            .finish_non_exhaustive()
    }
}

impl WebhookSink {
    /// A sink posting to `url` (http or https), with a 10-second timeout per post.
    pub fn new(url: &str) -> anyhow::Result<Self> {
        // One crypto provider for every rustls user in the process (ring); a second call is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = reqwest::Url::parse(url)
            .map_err(|e| anyhow::anyhow!("webhook URL is not valid: {e}"))?;
        anyhow::ensure!(
            matches!(url.scheme(), "http" | "https"),
            "webhook URL must be http or https"
        );
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(WebhookSink { url, client })
    }
}

#[async_trait]
impl AlertSink for WebhookSink {
    fn target(&self) -> String {
        let host = self.url.host_str().unwrap_or("");
        match self.url.port() {
            Some(p) => format!("{}://{host}:{p}", self.url.scheme()),
            None => format!("{}://{host}", self.url.scheme()),
        }
    }

    async fn announce(&self, a: &Alert) -> anyhow::Result<()> {
        // reqwest's errors quote the URL, password and all: leave it out.
        let resp = self
            .client
            .post(self.url.clone())
            .json(a)
            .send()
            .await
            .map_err(reqwest::Error::without_url)?;
        anyhow::ensure!(
            resp.status().is_success(),
            "webhook answered {}",
            resp.status()
        );
        Ok(())
    }
}
