//! Why a kinds file cannot be used, and where: every error names the file, and for what is in it,
//! the line and column, so that a person fixes the right line without reading code.

use std::ops::Range;

/// What is wrong with a kinds file, or with the environment its headers name.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read the kinds file {path}: {source}")]
    Read {
        /// The path as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Something in the file is invalid (or names an environment variable that is not set).
    #[error("{at}: {message}")]
    Invalid {
        /// Where: file, line and column.
        at: Location,
        /// What is wrong, in one sentence that never quotes a secret.
        message: String,
    },
    /// A kind's HTTP client could not be made (the TLS stack did not start).
    #[error("kind {kind:?}: cannot make its HTTP client: {message}")]
    Client {
        /// The kind.
        kind: String,
        /// Why.
        message: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A place in a kinds file: `kinds.toml:12:5`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file's name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// The text of one kinds file and its name, to turn byte spans into locations.
pub(crate) struct Source<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    /// The location of the byte offset `at` (clamped to the text).
    pub fn location(&self, at: usize) -> Location {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Location {
            file: self.name.to_owned(),
            line,
            column: self.text[line_start..at].chars().count() + 1,
        }
    }

    /// An error at the start of `span`.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> Error {
        Error::Invalid {
            at: self.location(span.start),
            message: one_line(&message.into()),
        }
    }
}

/// `text` on one line: a message that spans lines would break the CLI's one-line errors.
pub(crate) fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let s = Source {
            name: "k.toml",
            text: "a = 1\n\nbé = 2\n",
        };
        assert_eq!(s.location(0).to_string(), "k.toml:1:1");
        assert_eq!(s.location(4).to_string(), "k.toml:1:5");
        assert_eq!(s.location(6).to_string(), "k.toml:2:1");
        // Columns count characters, not bytes: "é" is two bytes.
        assert_eq!(s.location(7 + 3).to_string(), "k.toml:3:3");
        assert_eq!(s.location(999).to_string(), "k.toml:4:1");
    }
}
