//! The controls page: the pauses and postponements in force (each with its resume button), the
//! pause form (handled in [`crate::pause`]), and the quarantine's filter form, which leads to
//! [`crate::quarantine_page`].

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use maud::{Markup, html};
use oprec_core::operator::Control;
use oprec_ops::MAX_REASON;
use oprec_ops::filter::MAX_NAME;
use serde::Deserialize;

use crate::State;
use crate::error::{AppError, store};
use crate::figures::limits_table;
use crate::html::{badge, count, or_dash, when};
use crate::layout::{Nav, Page};
use crate::quarantine_page::quarantine_filter_form;
use crate::viewer::Viewer;

/// Which message to show after an action (a fixed list: no text from the address reaches the
/// page).
#[derive(Deserialize, Default)]
pub(crate) struct Done {
    #[serde(default)]
    done: String,
    #[serde(default)]
    n: Option<u64>,
    /// A pause to propose (from a kind's row elsewhere): its scope and name, filled in.
    #[serde(default)]
    scope: String,
    #[serde(default)]
    value: String,
}

/// `GET /controls`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    q: Result<Query<Done>, QueryRejection>,
) -> Result<Page, AppError> {
    let done = q.map(|q| q.0).unwrap_or_default();
    let now = state.store.now().await.map_err(store)?;
    let controls = state.store.control_list().await.map_err(store)?;
    let limits = state.store.limit_list().await.map_err(store)?;
    let n = done.n.map(count).unwrap_or_default();
    let notice = match done.done.as_str() {
        "pause" => {
            format!("Paused. {n} unfinished operations in scope are neither claimed nor woken.")
        }
        "postpone" => format!(
            "Postponed. {n} unfinished operations of the dependency wait until the time given."
        ),
        "resume" => "Resumed: the operations are claimed and woken again.".to_owned(),
        "resume-none" => "Nothing to resume: no control was in force there.".to_owned(),
        "quarantine" => format!("Quarantined {n} operations: they are held until released."),
        _ => String::new(),
    };
    let body = html! {
        div.head {
            h1 { "Controls" }
            p.muted {
                "A pause stops claims and wake-ups of the operations it names, nothing else; \
                 resuming starts them again. Quarantine moves pending operations to held until \
                 they are released."
            }
        }
        @if !notice.is_empty() {
            p.notice.good #notice { (notice) }
        }
        section.panel {
            h2 { "In force" }
            (controls_table(&controls, &viewer, now))
        }
        section.panel {
            h2 { "Limits across the fleet" }
            p.muted.small {
                "At most so many running at once, or started per second, over every worker; \
                 work beyond a limit waits, its attempt unspent. "
                code { "oprec limit" } " sets and removes them."
            }
            (limits_table(&limits, None))
        }
        div.cols {
            section.panel {
                h2 { "Pause" }
                @match viewer.why_not("/controls") {
                    Some(why) => p.notice { (why) },
                    None => (pause_form(&viewer, &done.scope, &done.value)),
                }
            }
            section.panel {
                h2 { "Quarantine" }
                p.muted.small {
                    "Count the pending operations a filter matches first; nothing moves until you \
                     confirm."
                }
                (quarantine_filter_form())
            }
        }
    };
    Ok(Page::new("Controls", Nav::Controls, &viewer).body(body))
}

/// The controls in force, each with its resume button when the viewer can act.
fn controls_table(
    controls: &[Control],
    viewer: &Viewer,
    now: chrono::DateTime<chrono::Utc>,
) -> Markup {
    if controls.is_empty() {
        return html! { p.muted #no-controls { "Nothing is paused or postponed." } };
    }
    let can_act = viewer.why_not("/controls").is_none();
    html! {
        div.scroll data-scroll {
            table.grid #controls {
                thead {
                    tr {
                        th { "Scope" } th { "Value" } th { "Action" } th { "Until" } th { "By" }
                        th { "Since" } th { "Reason" } th {}
                    }
                }
                tbody {
                    @for c in controls {
                        tr {
                            td { (c.scope.as_str()) }
                            td { (c.value) }
                            td { (badge(c.action.as_str())) }
                            td {
                                @match c.until {
                                    Some(u) => (when(u, now)),
                                    None => "until resumed",
                                }
                            }
                            td { (c.actor) }
                            td { (when(c.created_at, now)) }
                            td { (or_dash(c.reason.as_deref())) }
                            td.right {
                                @if can_act {
                                    form.inline method="post" action="/controls/resume" {
                                        (viewer.csrf_field())
                                        input type="hidden" name="scope" value=(c.scope.as_str());
                                        input type="hidden" name="value" value=(c.value);
                                        button.small type="submit"
                                            aria-label={
                                                "Resume " (c.scope.as_str()) " " (c.value)
                                            } { "Resume" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Pause by kind, failure class or dependency, until a time or until resumed; or postpone a
/// dependency until a time. `scope` and `value` fill it in when a kind's row proposed it.
fn pause_form(viewer: &Viewer, scope: &str, value: &str) -> Markup {
    let scopes = [
        ("kind", "kind"),
        ("failure_class", "failure class"),
        ("dependency", "dependency"),
    ];
    html! {
        form.stack #pause-form method="post" action="/controls/pause" {
            (viewer.csrf_field())
            div.row {
                label {
                    "Action "
                    select name="action" {
                        option value="pause" { "pause" }
                        option value="postpone" { "postpone (a dependency, until a time)" }
                    }
                }
                label {
                    "By "
                    select name="scope" {
                        @for (v, text) in scopes {
                            option value=(v) selected[v == scope] { (text) }
                        }
                    }
                }
                label {
                    "Name "
                    input name="value" required maxlength=(MAX_NAME) value=(value)
                        placeholder="e.g. email.send or stripe";
                }
            }
            label {
                "Until "
                input name="until" placeholder="until resumed, or 2h, or 2026-01-05T18:00";
            }
            label {
                "Reason "
                input name="reason" maxlength=(MAX_REASON) placeholder="why, for the audit log";
            }
            div.actions { button.primary type="submit" { "Pause" } }
        }
    }
}
