//! Progress bars for long work (enqueueing thousands, re-driving a dead-letter pile): drawn on
//! standard error when it is a terminal, hidden otherwise, so scripts and logs see only results.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` steps labelled `what` ("enqueued", "re-driven"); hidden off a terminal.
pub(crate) fn bar(total: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let template = format!("{{bar:40}} {{human_pos}}/{{human_len}} {what} ({{per_sec}}, {{eta}})");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// A counter of `what` ("lines restored") for work whose total is not known up front; hidden off
/// a terminal.
pub(crate) fn spinner(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    let template = format!("{{spinner}} {{human_pos}} {what} ({{per_sec}})");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// A line saying what is being done (`what`: "planning the re-drive") while work of no known
/// size runs, ticking with the time spent; clear it with `finish_and_clear` when the work ends.
/// Hidden off a terminal.
pub(crate) fn working(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
