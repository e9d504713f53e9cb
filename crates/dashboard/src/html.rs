//! Building pages: escaping, and the small pieces pages share (times, counts, badges, tables). Every value that came from a record or a request goes
//! through [`esc`] before it reaches the page.

use std::fmt::Write;

use chrono::{DateTime, Duration, Utc};

/// Text made safe for HTML element content and double-quoted attributes.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Percent-encoding for a query-string value.
pub(crate) fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A query string from pairs, leaving out empty values.
pub(crate) fn query(pairs: &[(&str, &str)]) -> String {
    let q: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", url_encode(v)))
        .collect();
    if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    }
}

/// `1,234,567`.
pub(crate) fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `2026-01-05 09:00:00 UTC`.
pub(crate) fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A time with how long ago (or from now) it is, as a `<time>` element.
pub(crate) fn when(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let d = now - t;
    let rel = if d >= Duration::zero() {
        format!("{} ago", span(d))
    } else {
        format!("in {}", span(-d))
    };
    format!(
        r#"<time datetime="{}" title="{}">{}</time>"#,
        t.to_rfc3339(),
        time(t),
        esc(&rel)
    )
}

/// `3d 4h`, `12m 5s`, `40s`.
pub(crate) fn span(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    let (days, hours, mins, secs) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    if days > 0 {
        format!("{days}d {hours}h")
    } else if hours > 0 {
        format!("{hours}h {mins}m")
    } else if mins > 0 {
        format!("{mins}m {secs}s")
    } else {
        format!("{secs}s")
    }
}

/// A status or class as a coloured label.
/// The `<option>`s of a filter's `<select>`: "any" first, then each of `all`, with `current`
/// selected. The values are the product's own names (kinds of status, class, reason), not input.
pub(crate) fn select_options(current: &str, all: &[&str]) -> String {
    let mut s = String::from(r#"<option value="">any</option>"#);
    for o in all {
        let selected = if *o == current.trim() {
            " selected"
        } else {
            ""
        };
        let _ = write!(s, r#"<option value="{o}"{selected}>{o}</option>"#);
    }
    s
}

pub(crate) fn badge(text: &str) -> String {
    format!(r#"<span class="badge b-{0}">{0}</span>"#, esc(text))
}

/// An operation id cut for a table: the time-ordered start and the random end, which together
/// tell apart operations created in the same millisecond.
pub(crate) fn short_id(id: &oprec_core::OperationId) -> String {
    let s = id.to_string();
    format!("{}…{}", &s[..8], &s[24..])
}

/// An optional value, or a dash.
pub(crate) fn or_dash(v: Option<&str>) -> String {
    match v {
        Some(v) if !v.is_empty() => esc(v),
        _ => r#"<span class="muted">—</span>"#.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<script>alert("x&'y")</script>"#),
            "&lt;script&gt;alert(&quot;x&amp;&#39;y&quot;)&lt;/script&gt;"
        );
    }

    #[test]
    fn formats_counts_and_spans() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(span(Duration::seconds(93784)), "1d 2h");
        assert_eq!(span(Duration::seconds(125)), "2m 5s");
        assert_eq!(query(&[("kind", "a b&c"), ("x", "")]), "?kind=a%20b%26c");
    }
}
