//! A broker URL that is safe to print: the password never reaches a log, an error or `Debug`
//! (redacted by [`oprec_core::redact_url`], the one rule every crate uses).

use std::fmt;

/// A broker URL shown with its password replaced by `***`
/// (`amqp://guest:***@127.0.0.1:5672/%2f`).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedactedUrl(String);

impl RedactedUrl {
    /// Redacts `url`; text that does not look like a URL with credentials is kept as it is.
    pub(crate) fn new(url: &str) -> Self {
        RedactedUrl(oprec_core::redact_url(url))
    }

    /// Replaces every occurrence of the raw `url` in `text` (a driver's message may quote it).
    pub(crate) fn scrub(&self, url: &str, text: &str) -> String {
        if url.is_empty() {
            text.to_owned()
        } else {
            text.replace(url, &self.0)
        }
    }
}

impl fmt::Display for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hides_the_password_and_keeps_the_rest() {
        let cases = [
            (
                "amqp://guest:s3cret@127.0.0.1:5672/%2f",
                "amqp://guest:***@127.0.0.1:5672/%2f",
            ),
            (
                "amqps://user:p%40ss:w@rd@broker:5671/vh?heartbeat=10",
                "amqps://user:***@broker:5671/vh?heartbeat=10",
            ),
            ("amqp://user:pw@host", "amqp://user:***@host"),
            ("amqp://user@host/%2f", "amqp://user@host/%2f"),
            ("amqp://u:pa/ss@host/%2f", "amqp://u:***@host/%2f"),
            ("amqp://127.0.0.1:5672", "amqp://127.0.0.1:5672"),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(RedactedUrl::new(url).to_string(), shown, "{url}");
            assert_eq!(format!("{:?}", RedactedUrl::new(url)), format!("{shown:?}"));
        }
    }

    #[test]
    fn scrubs_quoted_urls_out_of_messages() {
        let url = "amqp://u:hunter2@h:1/%2f";
        let redacted = RedactedUrl::new(url);
        let scrubbed = redacted.scrub(url, &format!("Invalid URL: '{url}'"));
        assert_eq!(scrubbed, "Invalid URL: 'amqp://u:***@h:1/%2f'");
    }
}
