//! How results look: aligned tables for people, JSON for tools, and the small formats they share
//! (times, counts with thousands separators, cut text).

use std::io::Write;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Writes `text` to standard output. Unlike `print!`, a closed pipe (`oprec ops list | head`)
/// is an error that `main` turns into a quiet exit, not a panic.
pub(crate) fn text(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Writes one formatted line to standard output; see [`text`].
macro_rules! line {
    ($($arg:tt)*) => {
        $crate::output::text(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use line;

/// Writes `value` as pretty JSON to standard output.
pub(crate) fn json(value: &impl Serialize) -> anyhow::Result<()> {
    text(&format!("{}\n", serde_json::to_string_pretty(value)?))
}

/// Whether the error is standard output's reader going away.
pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `50000` as `50,000`.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A time to the second, in UTC.
pub(crate) fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%SZ").to_string()
}

/// `text` on one line, cut to `max` characters, marking the cut with `…` (the operator
/// library's rule, so the CLI and the dashboard cut alike).
pub(crate) use oprec::ops::cut;

/// A table of text cells with a header row, columns padded to their widest cell.
#[derive(Debug)]
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub(crate) fn new(headers: &[&str]) -> Self {
        Table {
            rows: vec![headers.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    /// Adds a row.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as lines, each prefixed by `indent`.
    pub(crate) fn render(&self, indent: &str) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = indent.to_owned();
            for (c, cell) in row.iter().enumerate() {
                if c + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_cuts() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(50_000), "50,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("a\nb", 10), "a b");
    }

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["ID", "KIND"]);
        t.row(vec!["1".into(), "demo.noop".into()]);
        t.row(vec!["1234".into(), "x".into()]);
        assert_eq!(t.render(""), "ID    KIND\n1     demo.noop\n1234  x\n");
    }
}
