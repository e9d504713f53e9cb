//! Exit codes, as ripgrep uses them: 0 ok, 1 failure, 2 bad usage or bad input. Clap exits 2 for
//! its own usage errors; [`BadInput`] (and a store's `InvalidInput`) exits 2 for ours.

use std::fmt;
use std::process::ExitCode;

/// A value the user gave that cannot be used: bad JSON, bad duration, unknown kind, oversized
/// payload. Exits 2 with its one-line message.
#[derive(Debug)]
pub(crate) struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

impl From<oprec::ops::InputError> for BadInput {
    fn from(e: oprec::ops::InputError) -> Self {
        BadInput(e.0)
    }
}

/// A [`BadInput`] as an `anyhow::Error`.
pub(crate) fn bad(message: impl Into<String>) -> anyhow::Error {
    BadInput(message.into()).into()
}

/// 2 when the error is the user's input, 1 otherwise.
pub(crate) fn code(e: &anyhow::Error) -> ExitCode {
    let is_input = e.chain().any(|c| {
        c.is::<BadInput>()
            || c.is::<oprec::ops::InputError>()
            || matches!(
                c.downcast_ref::<oprec::ops::Error>(),
                Some(
                    oprec::ops::Error::Input(_)
                        | oprec::ops::Error::Store(oprec::Error::InvalidInput(_))
                )
            )
            || matches!(
                c.downcast_ref::<oprec::Error>(),
                Some(oprec::Error::InvalidInput(_))
            )
    });
    if is_input {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

/// The error and its causes on one line, with no backtrace. A cause whose text its parent
/// already quotes (oprec's backend errors include their driver's message) is not repeated.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts
        .join(": ")
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_errors_exit_2_and_others_1() {
        assert_eq!(code(&bad("no")), ExitCode::from(2));
        let core: anyhow::Error = oprec::Error::InvalidInput("payload too big".into()).into();
        assert_eq!(code(&core.context("enqueueing")), ExitCode::from(2));
        assert_eq!(code(&anyhow::anyhow!("database down")), ExitCode::FAILURE);
        let ops: anyhow::Error = oprec::ops::InputError::new("--rate is bad").into();
        assert_eq!(code(&ops), ExitCode::from(2));
        let refused: anyhow::Error =
            oprec::ops::Error::Store(oprec::Error::InvalidInput("not reconciling".into())).into();
        assert_eq!(code(&refused), ExitCode::from(2));
        assert_eq!(one_line(&anyhow::anyhow!("a\nb").context("c")), "c: a b");
    }
}
