//! `--kinds-file`: the kinds a TOML file declares (oprec-http-kinds), beside the demo kinds, for
//! `oprec worker`, `oprec enqueue` and `oprec import`. A file that cannot be used is bad input
//! (exit 2), its message naming the file, line and column; a file kind may not take a demo
//! kind's name, or `enqueue` could not tell which policy it means.

use std::path::Path;

use oprec::Kind;
use oprec_http_kinds::{Error, KindsFile};

use crate::demo_kinds;
use crate::exit::bad;

/// A load error for the user: bad input, except a TLS stack that would not start.
fn user_error(e: Error) -> anyhow::Error {
    match e {
        Error::Client { .. } => e.into(),
        other => bad(other.to_string()),
    }
}

/// Reads and checks the file at `path`.
pub(crate) fn load(path: &Path) -> anyhow::Result<KindsFile> {
    let file = KindsFile::load(path).map_err(user_error)?;
    if let Some(name) = file
        .names()
        .into_iter()
        .find(|n| demo_kinds::NAMES.contains(n))
    {
        let at = file
            .location(name)
            .map_or_else(|| file.file().to_owned(), ToString::to_string);
        return Err(bad(format!(
            "{at}: kind {name:?} is one of this binary's demo kinds; give it a name of its own"
        )));
    }
    Ok(file)
}

/// The file's kinds for a worker: each header's environment variable read now, so that a missing
/// one stops the worker before it claims anything.
pub(crate) fn worker_kinds(file: &KindsFile) -> anyhow::Result<Vec<Kind>> {
    file.kinds(&|name| std::env::var(name).ok())
        .map_err(user_error)
}

/// The file's kinds for enqueueing: policies and dependencies, no secrets read.
pub(crate) fn enqueue_kinds(file: &KindsFile) -> anyhow::Result<Vec<Kind>> {
    file.kinds_for_enqueue().map_err(user_error)
}

/// Every kind a command accepts: the demo kinds, then the file's (named with it).
pub(crate) fn accepted(file: Option<&KindsFile>) -> String {
    let mut list = demo_kinds::NAMES.join(", ");
    if let Some(file) = file {
        list.push_str(&format!(
            "; from {}: {}",
            file.file(),
            file.names().join(", ")
        ));
    }
    list
}
