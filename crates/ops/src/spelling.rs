//! How a front end names the fields a person fills in, so that one grammar's refusals read right
//! in each: the CLI's flags (`--error-contains`) or a form's fields (`error contains`).

/// How field names are spelt in messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Spelling {
    /// Command-line flags: `--kind`, `--error-contains`.
    #[default]
    Flags,
    /// Form fields, in words: `kind`, `error contains`.
    Fields,
}

impl Spelling {
    /// The label of the field named `name` (its flag name without dashes, `error-contains`).
    pub fn label(self, name: &str) -> String {
        match self {
            Spelling::Flags => format!("--{name}"),
            Spelling::Fields => name.replace('-', " "),
        }
    }
}

/// `text` as messages quote it: cut to 64 characters, so a 100 KB value is not echoed whole.
pub(crate) fn shown(text: &str) -> String {
    cut(text, 64)
}

/// `text` on one line, cut to at most `max` characters, with an ellipsis when it was longer.
pub fn cut(text: &str, max: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_fields() {
        assert_eq!(Spelling::Flags.label("error-contains"), "--error-contains");
        assert_eq!(Spelling::Fields.label("error-contains"), "error contains");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
