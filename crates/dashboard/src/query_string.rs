//! Query strings for the links that carry a filter from one page to the next (a dead-letter group
//! to its dry run, a kind to its operations). Values are percent-encoded here, by the
//! percent-encoding crate; escaping the finished address for HTML is the templates' job.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but RFC 3986's unreserved characters (letters, digits, `-`, `_`, `.`, `~`) is
/// encoded, so a value can never end its pair or start another.
const VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encoding for a query-string value.
pub(crate) fn encode(value: &str) -> String {
    utf8_percent_encode(value, VALUE).to_string()
}

/// A query string from pairs, leaving out empty values: `?kind=a%20b&status=dead`, or nothing.
pub(crate) fn query(pairs: &[(&str, &str)]) -> String {
    let q: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_values_and_leaves_out_empty_ones() {
        assert_eq!(query(&[("kind", "a b&c"), ("x", "")]), "?kind=a%20b%26c");
        assert_eq!(query(&[("x", "")]), "");
        assert_eq!(
            encode("/dead?kind=é~-_.*"),
            "%2Fdead%3Fkind%3D%C3%A9~-_.%2A"
        );
    }
}
