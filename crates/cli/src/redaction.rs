//! The last line of defence for secrets: every error message is scrubbed of the database and
//! transport URLs as given (replaced by [`oprec::redact_url`]'s form) and of their passwords.
//! Commands never format a raw URL in the first place; this catches drivers that might.

/// Scrubs known secrets out of text before it is printed.
#[derive(Debug, Default)]
pub(crate) struct Redactor {
    replacements: Vec<(String, String)>,
}

/// The password in a URL's user info or `password=` query parameter, if any.
fn password(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Some((_, rest)) = url.split_once("://") {
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && let Some((_, pw)) = userinfo.split_once(':')
        {
            found.push(pw.to_owned());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        for kv in query.split('&') {
            if let Some((k, v)) = kv.split_once('=')
                && (k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword"))
            {
                found.push(v.to_owned());
            }
        }
    }
    found
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
            for pw in password(url).into_iter().filter(|p| p.len() >= 4) {
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
