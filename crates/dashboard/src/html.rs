//! The small pieces pages share: counts, times and spans as text; badges, relative times, dashes
//! and select options as maud markup. Pages splice them into their own templates, where every
//! value that came from a record or a request is escaped by maud.

use chrono::{DateTime, Utc};
use maud::{Markup, html};

pub(crate) use oprec_ops::number::count;

/// A JSON value indented for a `pre` block.
pub(crate) fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// `2026-01-05 09:00:00 UTC`.
pub(crate) fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A time with how long ago (or from now) it is, as a `<time>` element (the operator library's
/// rule, so the dashboard and the CLI say it alike).
pub(crate) fn when(t: DateTime<Utc>, now: DateTime<Utc>) -> Markup {
    let rel = oprec_ops::time::relative(t, now);
    html! { time datetime=(t.to_rfc3339()) title=(time(t)) { (rel) } }
}

/// A duration as people read it (`3d 4h`, `12m 5s`, `40s`): the rule `oprec ops` shares.
pub(crate) use oprec_ops::time::span;

/// The `<option>`s of a filter's `<select>`: "any" first, then each of `all`, with `current`
/// selected.
pub(crate) fn select_options(current: &str, all: &[&str]) -> Markup {
    html! {
        option value="" { "any" }
        @for o in all {
            option value=(o) selected[*o == current.trim()] { (o) }
        }
    }
}

/// A status, class, outcome or action as a coloured label.
pub(crate) fn badge(text: &str) -> Markup {
    html! { span class={ "badge b-" (text) } { (text) } }
}

/// An operation id cut for a table: the time-ordered start and the random end, which together
/// tell apart operations created in the same millisecond.
pub(crate) fn short_id(id: &oprec_core::OperationId) -> String {
    let s = id.to_string();
    format!("{}…{}", &s[..8], &s[24..])
}

/// An optional value, or a dash.
pub(crate) fn or_dash(v: Option<&str>) -> Markup {
    html! {
        @match v {
            Some(v) if !v.is_empty() => (v),
            _ => span.muted { "—" },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn formats_counts_and_spans() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(span(Duration::seconds(93784)), "1d 2h");
        assert_eq!(span(Duration::seconds(125)), "2m 5s");
    }

    #[test]
    fn pieces_escape_what_they_are_given() {
        let hostile = r#"<script>alert("x&'y")</script>"#;
        assert_eq!(
            badge(hostile).into_string(),
            "<span class=\"badge b-&lt;script&gt;alert(&quot;x&amp;'y&quot;)&lt;/script&gt;\">\
             &lt;script&gt;alert(&quot;x&amp;'y&quot;)&lt;/script&gt;</span>"
        );
        assert_eq!(
            or_dash(Some(hostile)).into_string(),
            "&lt;script&gt;alert(&quot;x&amp;'y&quot;)&lt;/script&gt;"
        );
        assert_eq!(
            or_dash(Some("")).into_string(),
            r#"<span class="muted">—</span>"#
        );
        assert_eq!(
            select_options(" dead ", &["pending", "dead"]).into_string(),
            r#"<option value="">any</option><option value="pending">pending</option><option value="dead" selected>dead</option>"#
        );
    }
}
