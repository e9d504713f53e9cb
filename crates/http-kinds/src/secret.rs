//! Headers whose values come from the environment. The kinds file names a variable
//! (`Authorization = "env:SHIPPER_TOKEN"`), never a value; the value lives in this process only,
//! goes out only in the request (marked sensitive, so the HTTP stack's own `Debug` hides it too),
//! and no `Debug`, `Display` or error of this crate shows it.

use reqwest::header::{HeaderName, HeaderValue};

use crate::error::{Error, Location};

/// How a header value names its variable.
pub(crate) const ENV_PREFIX: &str = "env:";

/// Whether `name` can be an environment variable's name as shells write them.
pub(crate) fn valid_var(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One header of a kind's requests, valued from an environment variable.
#[derive(Clone)]
pub(crate) struct EnvHeader {
    pub name: HeaderName,
    /// The name as the file writes it, for messages (`HeaderName` is lowercase).
    pub written: String,
    pub var: String,
    /// Where the file names it, for load errors.
    pub at: Location,
    /// The value, once read (marked sensitive).
    value: Option<HeaderValue>,
}

impl std::fmt::Debug for EnvHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvHeader")
            .field("name", &self.name)
            .field("var", &self.var)
            .field(
                "value",
                &if self.value.is_some() {
                    "***"
                } else {
                    "(read at the request)"
                },
            )
            .finish()
    }
}

/// The variable's value as a header value marked sensitive, or why it cannot be one (never
/// quoting the value).
fn header_value(name: &str, var: &str, value: Option<&str>) -> Result<HeaderValue, String> {
    let Some(value) = value else {
        return Err(format!(
            "header {name} names the environment variable {var}, which is not set; set it in \
             the worker's environment (a kinds file names variables, never values)"
        ));
    };
    if value.trim().is_empty() {
        return Err(format!(
            "header {name} names the environment variable {var}, which is empty"
        ));
    }
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        format!(
            "header {name}: the environment variable {var} does not hold a valid HTTP header \
             value (a newline or another control character?)"
        )
    })?;
    v.set_sensitive(true);
    Ok(v)
}

impl EnvHeader {
    /// A header not read yet.
    pub fn new(name: HeaderName, written: String, var: String, at: Location) -> Self {
        EnvHeader {
            name,
            written,
            var,
            at,
            value: None,
        }
    }

    /// Reads the variable through `env` now; an error (at the file's line) when it is missing,
    /// empty or not a header value.
    pub fn resolve(
        &mut self,
        kind: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), Error> {
        let value =
            header_value(&self.written, &self.var, env(&self.var).as_deref()).map_err(|why| {
                Error::Invalid {
                    at: self.at.clone(),
                    message: format!("kind {kind:?}: {why}"),
                }
            })?;
        self.value = Some(value);
        Ok(())
    }

    /// The value: the one read at load, or (a kind loaded without reading its secrets) the
    /// variable read now; why not, when it is missing (a configuration failure for the caller).
    pub fn value(&self) -> Result<HeaderValue, String> {
        match &self.value {
            Some(v) => Ok(v.clone()),
            None => header_value(
                &self.written,
                &self.var,
                std::env::var(&self.var).ok().as_deref(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> EnvHeader {
        EnvHeader::new(
            HeaderName::from_static("authorization"),
            "Authorization".into(),
            "SHIPPER_TOKEN".into(),
            Location {
                file: "k.toml".into(),
                line: 9,
                column: 13,
            },
        )
    }

    #[test]
    fn variable_names() {
        assert!(valid_var("SHIPPER_TOKEN"));
        assert!(valid_var("_x1"));
        assert!(!valid_var(""));
        assert!(!valid_var("1X"));
        assert!(!valid_var("A-B"));
        assert!(!valid_var("Bearer abc"));
    }

    #[test]
    fn a_resolved_value_is_never_shown() {
        let mut h = header();
        h.resolve("k", &|_| Some("Bearer s3cr3t-value".into()))
            .unwrap();
        let shown = format!("{h:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("SHIPPER_TOKEN"), "{shown}");
        let v = h.value().unwrap();
        assert!(v.is_sensitive());
        assert!(!format!("{v:?}").contains("s3cr3t"));
    }

    #[test]
    fn missing_empty_and_invalid_values_are_errors_at_the_line() {
        let e = header().resolve("ship", &|_| None).unwrap_err().to_string();
        assert_eq!(
            e,
            "k.toml:9:13: kind \"ship\": header Authorization names the environment variable \
             SHIPPER_TOKEN, which is not set; set it in the worker's environment (a kinds file \
             names variables, never values)"
        );
        let e = header().resolve("ship", &|_| Some(" ".into())).unwrap_err();
        assert!(e.to_string().contains("which is empty"), "{e}");
        let e = header()
            .resolve("ship", &|_| Some("Bearer a\nsecret-tail".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not hold a valid HTTP header value"), "{e}");
        assert!(!e.contains("secret-tail"), "{e}");
    }
}
