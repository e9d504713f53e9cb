//! The last line of defence for secrets: every error message is scrubbed of the database and
//! transport URLs as given (replaced by [`oprec::redact_url`]'s form) and of their passwords.
//! Commands never format a raw URL in the first place; this catches drivers that might.

/// Scrubs known secrets out of text before it is printed.
#[derive(Debug, Default)]
pub(crate) struct Redactor {
    replacements: Vec<(String, String)>,
}

impl Redactor {
    /// A redactor for these URLs.
    pub(crate) fn new<'a>(urls: impl IntoIterator<Item = &'a String>) -> Self {
        let mut replacements = Vec::new();
        for url in urls {
            let redacted = oprec::redact_url(url);
            if redacted != *url {
                replacements.push((url.clone(), redacted));
            }
            // Very short "passwords" would mangle ordinary words; they are no secret anyway.
            for pw in oprec::url_secrets(url).into_iter().filter(|p| p.len() >= 4) {
                replacements.push((pw, "***".to_owned()));
            }
        }
        Redactor { replacements }
    }

    /// The text with every known secret replaced.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (secret, shown) in &self.replacements {
            out = out.replace(secret.as_str(), shown);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_passwords_are_scrubbed() {
        let db = "postgres://u:s3cret@h/x".to_owned();
        let t = "amqp://guest:hunter22@rabbit:5672/%2f".to_owned();
        let r = Redactor::new([&db, &t]);
        let text = format!("cannot reach {db} nor {t}; password s3cret was refused");
        let out = r.redact(&text);
        assert!(
            !out.contains("s3cret") && !out.contains("hunter22"),
            "{out}"
        );
        assert!(out.contains("postgres://u:***@h/x"));
    }
}
