//! Acting on every operation a list's filter matches: release the held ones or cancel the
//! waiting ones (pending, held, reconciling). `GET /bulk` counts what the action would touch,
//! per status, and changes nothing; `POST /bulk` carries that count as the most to touch and
//! applies the operator library's own workflow (`oprec release`, `oprec cancel`: batches, then
//! one audit entry). An action on no filter at all is refused, as on the command line.

use std::collections::{BTreeMap, HashMap};

use axum::Form;
use axum::extract::Query;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use oprec_core::Status;
use oprec_core::operator::OperationFilter;
use oprec_ops::cancel::CancelRequest;
use oprec_ops::filter::scope;
use oprec_ops::moves::MoveRequest;
use oprec_ops::{CancellationToken, MAX_REASON, Spelling, Who};

use crate::State;
use crate::authorize::{Caller, authorize_form};
use crate::dead_page::describe;
use crate::error::{AppError, store};
use crate::filters::FilterForm;
use crate::html::{badge, count};
use crate::layout::{Nav, Page};
use crate::operations_page::form;
use crate::viewer::Viewer;

/// What to do to the matches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Held → pending, eligible now.
    Release,
    /// Pending, held or reconciling → cancelled.
    Cancel,
}

impl Action {
    fn parse(text: &str) -> Result<Self, AppError> {
        match text.trim() {
            "release" => Ok(Action::Release),
            "cancel" => Ok(Action::Cancel),
            _ => Err(AppError::bad_request(
                "Act on matching operations by release or cancel. Nothing was changed.",
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Action::Release => "release",
            Action::Cancel => "cancel",
        }
    }

    /// The statuses it takes.
    fn takes(self) -> &'static str {
        match self {
            Action::Release => "held",
            Action::Cancel => "waiting (pending, held or reconciling)",
        }
    }
}

/// The filter a bulk action takes from a list's: what narrows it (kind, class, error text,
/// dependency, id), without the list's status (the action names what it takes) and time range
/// (the list's is creation time; an action's would be end time), refused when empty.
fn filter(
    f: &FilterForm,
    action: Action,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(FilterForm, OperationFilter), AppError> {
    let f = FilterForm {
        status: String::new(),
        reason: String::new(),
        since: String::new(),
        until: String::new(),
        after: String::new(),
        before: String::new(),
        limit: String::new(),
        ..f.clone()
    };
    let filter = f.operation_filter(now)?;
    scope(
        &filter,
        false,
        action.name(),
        action.takes(),
        Spelling::Fields,
    )?;
    Ok((f, filter))
}

/// How many the action would touch, and every match per status.
async fn review(
    state: &State,
    action: Action,
    filter: OperationFilter,
    limit: Option<u64>,
) -> Result<(u64, BTreeMap<Status, u64>), AppError> {
    let store = state.store.as_ref();
    Ok(match action {
        Action::Release => {
            let r = MoveRequest::release(filter, limit).review(store).await?;
            (r.planned, r.counts)
        }
        Action::Cancel => {
            let r = CancelRequest { filter, limit }.review(store).await?;
            (r.planned, r.counts)
        }
    })
}

/// The query of `GET /bulk`: the list's filter and the action.
#[derive(serde::Deserialize, Default)]
pub(crate) struct BulkQuery {
    #[serde(default)]
    action: String,
    #[serde(flatten)]
    filter: FilterForm,
}

/// `GET /bulk`: the dry run.
pub(crate) async fn preview(
    state: State,
    viewer: Viewer,
    q: Result<Query<BulkQuery>, QueryRejection>,
) -> Result<Page, AppError> {
    let q = form(q)?;
    let action = Action::parse(&q.action)?;
    let now = state.store.now().await.map_err(store)?;
    let (f, op_filter) = filter(&q.filter, action, now)?;
    let described = describe(&op_filter);
    let (planned, counts) = review(&state, action, op_filter, None).await?;
    let here = format!("/bulk{}", f.query());
    let body = html! {
        div.head {
            p.crumbs { a href={ "/operations" (f.query()) } { "Operations" } " / " (action.name()) }
            h1 { "Review: " (action.name()) " matching operations" }
            p.muted { "Filter: " (described) ". Nothing has changed yet." }
        }
        section.panel {
            p.big #bulk-count {
                (count(planned)) " " (action.takes()) " operation" @if planned != 1 { "s" }
                " would be " @if action == Action::Release { "released" } @else { "cancelled" }
            }
            @if counts.values().any(|n| *n > 0) {
                h2 { "Every match, by status" }
                table.kv #bulk-statuses {
                    @for (s, n) in &counts {
                        tr { td { (badge(s.as_str())) } td.num { (count(*n)) } }
                    }
                }
                p.muted.small {
                    "Running operations finish their attempt first and finished ones stay as \
                     they are: only the statuses above that the action takes move."
                }
            }
            @if planned > 0 {
                @match viewer.why_not(&here) {
                    Some(why) => p.notice { (why) },
                    None => (confirm(&viewer, &f, action, planned)),
                }
            }
        }
    };
    Ok(Page::new("Act on matching operations", Nav::Operations, &viewer).body(body))
}

fn confirm(viewer: &Viewer, f: &FilterForm, action: Action, planned: u64) -> Markup {
    html! {
        form.stack #bulk-form method="post" action="/bulk" {
            (viewer.csrf_field())
            (f.hidden_inputs())
            input type="hidden" name="action" value=(action.name());
            input type="hidden" name="expected" value=(planned);
            label {
                "Reason for the audit log "
                input name="note" maxlength=(MAX_REASON) placeholder="why";
            }
            div.actions {
                button.danger type="submit" {
                    @if action == Action::Release { "Release " } @else { "Cancel " }
                    (count(planned)) " operation" @if planned != 1 { "s" }
                }
                " "
                a.button href={ "/operations" (f.query()) } { "Back" }
            }
        }
    }
}

/// `POST /bulk`: applies the reviewed action to at most as many as the review showed.
pub(crate) async fn apply(
    state: State,
    caller: Caller,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, AppError> {
    let (actor, m) = authorize_form(&state, &caller, form)?;
    let action = Action::parse(m.get("action").map(String::as_str).unwrap_or(""))?;
    let expected: u64 = m
        .get("expected")
        .and_then(|e| e.trim().parse().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            AppError::bad_request(
                "The confirmation did not say how many the review showed; review it again. \
                 Nothing was changed.",
            )
        })?;
    let note = oprec_ops::reason(
        "note",
        m.get("note").map(|n| n.trim()).filter(|n| !n.is_empty()),
    )?;
    let now = state.store.now().await.map_err(store)?;
    let (f, op_filter) = filter(&FilterForm::from_map(&m), action, now)?;
    let who = Who::named("actor", &actor, Some("dashboard"))?;
    let stop = CancellationToken::new();
    let store_ref = state.store.as_ref();
    let (run, audit_failure) = match action {
        Action::Release => {
            let done = MoveRequest::release(op_filter, Some(expected))
                .apply(store_ref, &who, note.as_deref(), &stop, |_| {})
                .await;
            (done.run, done.audit_failure)
        }
        Action::Cancel => {
            let done = CancelRequest {
                filter: op_filter,
                limit: Some(expected),
            }
            .apply(store_ref, &who, note.as_deref(), &stop, |_| {})
            .await;
            (done.run, done.audit_failure)
        }
    };
    if let Some(e) = audit_failure {
        tracing::error!(error = %e, "the bulk action's audit entry could not be written");
    }
    if let Some(e) = run.failure {
        let mut e = store(e);
        e.message = format!(
            "{} {} operations were done before the failure; review again and confirm to do the \
             rest.",
            e.message,
            count(run.done)
        );
        return Err(e);
    }
    let back = f.query();
    let sep = if back.is_empty() { "?" } else { "&" };
    Ok(Redirect::to(&format!(
        "/operations{back}{sep}done={}&n={}",
        action.name(),
        run.done
    ))
    .into_response())
}
