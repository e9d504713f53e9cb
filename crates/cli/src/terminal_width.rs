//! How wide a person's terminal is, so that tables and lines fit it: the terminal's own width
//! when standard output is one, else `COLUMNS`, else none (a pipe or a file gets every value
//! whole); `--wide` asks for none. Read once per process.

use std::io::IsTerminal;
use std::sync::OnceLock;

/// No narrower than this, whatever `COLUMNS` says: below it nothing readable fits.
const NARROWEST: usize = 40;

static WIDTH: OnceLock<Option<usize>> = OnceLock::new();

/// Decides the width for this process: none with `--wide`.
pub(crate) fn init(wide: bool) {
    let _ = WIDTH.set(if wide { None } else { detect() });
}

/// The width output must fit, if any.
pub(crate) fn get() -> Option<usize> {
    *WIDTH.get_or_init(detect)
}

fn detect() -> Option<usize> {
    let terminal = std::io::stdout()
        .is_terminal()
        .then(|| {
            console::Term::stdout()
                .size_checked()
                .map(|(_, c)| c as usize)
        })
        .flatten();
    let columns = || {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|c| *c > 0)
    };
    terminal.or_else(columns).map(|w| w.max(NARROWEST))
}

/// `text` with every line longer than `width` wrapped at spaces, its continuation indented two
/// more than the line; a word longer than a whole line is cut with `…`.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let more = " ".repeat((indent + 2).min(width / 2));
        let mut current = body[..indent].to_owned();
        let mut first = true;
        for word in body[indent..].split(' ') {
            let len = current.chars().count();
            let fresh = len == if first { indent } else { more.len() };
            if !fresh && len + 1 + word.chars().count() > width {
                out.push_str(&current);
                out.push('\n');
                current = more.clone();
                first = false;
            }
            let len = current.chars().count();
            let fresh = len == if first { indent } else { more.len() };
            if !fresh {
                current.push(' ');
            }
            let room = width.saturating_sub(current.chars().count());
            current.push_str(&crate::output::cut(word, room.max(1)));
        }
        out.push_str(&current);
        out.push_str(newline);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_at_spaces_and_long_words_are_cut() {
        assert_eq!(wrap("short\n", 10), "short\n");
        assert_eq!(wrap("aaa bbb ccc ddd\n", 8), "aaa bbb\n  ccc\n  ddd\n");
        assert_eq!(wrap("  aaaa bbbb\n", 8), "  aaaa\n    bbbb\n");
        assert_eq!(wrap("abcdefghijkl\n", 6), "abcde…\n");
        for line in wrap("x ".repeat(100).as_str(), 20).lines() {
            assert!(line.chars().count() <= 20, "{line}");
        }
    }
}
