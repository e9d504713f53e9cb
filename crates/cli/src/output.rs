//! How results look: aligned tables for people, fitted to the terminal's width (see
//! [`crate::terminal_width`]), JSON for tools, and the small formats they share (times with how
//! long ago they are, counts with thousands separators, cut text).

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

/// Writes text for a person to standard output, its long lines wrapped to the terminal's width
/// (tables fit it already: see [`Table::render`]); see [`text`].
pub(crate) fn human(text: &str) -> anyhow::Result<()> {
    match crate::terminal_width::get() {
        Some(width) => self::text(&crate::terminal_width::wrap(text, width)),
        None => self::text(text),
    }
}

/// Writes one formatted line for a person to standard output; see [`human`].
macro_rules! line {
    ($($arg:tt)*) => {
        $crate::output::human(&format!("{}\n", format_args!($($arg)*)))
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

pub(crate) use oprec::ops::number::count;

/// A time to the second, in UTC.
pub(crate) fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%SZ").to_string()
}

/// A time with how far it is from `now` first (the operator library's rule, as the dashboard
/// shows it), so that a cell cut to fit keeps the part a person reads first:
/// `3m 5s ago (2026-01-05 09:00:00Z)`.
pub(crate) fn when(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    format!("{} ({})", oprec::ops::time::relative(t, now), time(t))
}

/// `text` on one line, cut to `max` characters, marking the cut with `…` (the operator
/// library's rule, so the CLI and the dashboard cut alike).
pub(crate) use oprec::ops::cut;

/// A table of text cells with a header row, columns padded to their widest cell.
#[derive(Debug)]
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
    /// Columns cut only when cutting every other one to the narrowest is not enough (ids that
    /// a person copies into the next command).
    whole: Vec<usize>,
}

impl Table {
    /// A table with these column headers.
    pub(crate) fn new(headers: &[&str]) -> Self {
        Table {
            rows: vec![headers.iter().map(|h| (*h).to_owned()).collect()],
            whole: Vec::new(),
        }
    }

    /// Keeps `column` whole unless nothing else fits (see [`Table::render`]).
    pub(crate) fn whole(mut self, column: usize) -> Self {
        self.whole.push(column);
        self
    }

    /// Adds a row; a cell's line breaks become spaces.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|c| {
                    if c.contains(['\n', '\r']) {
                        c.replace(['\n', '\r'], " ")
                    } else {
                        c
                    }
                })
                .collect(),
        );
    }

    /// The table as lines, each prefixed by `indent`, fitted to the terminal's width.
    pub(crate) fn render(&self, indent: &str) -> String {
        self.render_within(indent, crate::terminal_width::get())
    }

    /// The table as lines no wider than `width` (when given): the widest column is cut first,
    /// its cells ending in `…`, down to a few characters each.
    pub(crate) fn render_within(&self, indent: &str, width: Option<usize>) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        if let Some(width) = width {
            let room = width.saturating_sub(indent.chars().count() + 2 * columns.saturating_sub(1));
            // The other columns first, then, if they are not enough, every column.
            let mut others: Vec<usize> = widths.clone();
            for c in &self.whole {
                if let Some(w) = others.get_mut(*c) {
                    *w = 0;
                }
            }
            let kept: usize = widths.iter().sum::<usize>() - others.iter().sum::<usize>();
            narrow(&mut others, room.saturating_sub(kept));
            for (c, w) in others.into_iter().enumerate() {
                if !self.whole.contains(&c) {
                    widths[c] = w;
                }
            }
            narrow(&mut widths, room);
        }
        let mut out = String::new();
        for row in &self.rows {
            let mut line = indent.to_owned();
            for (c, cell) in row.iter().enumerate() {
                let cell = if cell.chars().count() > widths[c] {
                    cut(cell, widths[c])
                } else {
                    cell.clone()
                };
                if c + 1 == row.len() {
                    line.push_str(&cell);
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

/// The narrowest a column is cut to.
const NARROWEST_COLUMN: usize = 4;

/// Cuts the widest column, again and again, until the columns fit in `room` or none can be cut.
fn narrow(widths: &mut [usize], room: usize) {
    loop {
        let total: usize = widths.iter().sum();
        if total <= room {
            return;
        }
        let Some((widest, &w)) = widths.iter().enumerate().max_by_key(|(i, w)| (**w, *i)) else {
            return;
        };
        if w <= NARROWEST_COLUMN {
            return;
        }
        let next = widths
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != widest)
            .map(|(_, w)| *w)
            .max()
            .unwrap_or(0);
        let to = w
            .saturating_sub(total - room)
            .max(next)
            .max(NARROWEST_COLUMN);
        widths[widest] = if to < w { to } else { w - 1 };
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
        assert_eq!(
            t.render_within("", None),
            "ID    KIND\n1     demo.noop\n1234  x\n"
        );
    }

    #[test]
    fn tables_fit_a_width_by_cutting_the_widest_column() {
        let mut t = Table::new(&["ID", "ERROR"]);
        t.row(vec!["1".into(), "a very long error message indeed".into()]);
        assert_eq!(
            t.render_within("", Some(16)),
            "ID  ERROR\n1   a very long…\n"
        );
        for line in t.render_within("  ", Some(12)).lines() {
            assert!(line.chars().count() <= 12, "{line}");
        }
        let mut t = Table::new(&["ID", "ERROR"]).whole(0);
        t.row(vec!["0123456789".into(), "a long error".into()]);
        assert_eq!(
            t.render_within("", Some(18)),
            "ID          ERROR\n0123456789  a lon…\n"
        );
    }
}
