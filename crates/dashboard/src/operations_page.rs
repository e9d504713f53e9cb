//! The operations list: filters (kind, status, class, terminal reason, error text, creation time
//! range), newest first, paged by keyset on the time-ordered id so that page 1,000 costs what
//! page 1 does.

use std::fmt::Write as _;

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use oprec_core::store::ListParams;
use oprec_core::{FailureClass, Operation, Status, TerminalReason};

use maud::PreEscaped;

use crate::State;
use crate::error::{AppError, store};
use crate::filters::FilterForm;
use crate::html::{badge, esc, or_dash, select_options, short_id, when};
use crate::layout::{Nav, Page};
use crate::security::Viewer;

/// The query a page was asked with, or a readable refusal.
pub(crate) fn form(q: Result<Query<FilterForm>, QueryRejection>) -> Result<FilterForm, AppError> {
    q.map(|q| q.0).map_err(|e| {
        AppError::bad_request(format!(
            "The filter in the address could not be read ({}); clear it and filter again.",
            e.body_text()
        ))
    })
}

fn select(name: &str, label: &str, current: &str, options: &[&str]) -> String {
    format!(
        r#"<label>{label}<select name="{name}">{}</select></label>"#,
        select_options(current, options)
    )
}

fn names<T: Copy>(all: &[T], f: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| f(*v)).collect()
}

/// The filter form.
fn filter_form(f: &FilterForm) -> String {
    format!(
        r#"<form method="get" action="/operations" class="filters" id="filters">
<label>Kind<input name="kind" value="{}" placeholder="any" maxlength="200"></label>
{}{}{}
<label>Error contains<input name="error" value="{}" placeholder="text in the last error" maxlength="200"></label>
<label>Created since<input name="since" value="{}" placeholder="2h or 2026-01-05T09:00"></label>
<label>Created before<input name="until" value="{}" placeholder="30m or RFC 3339"></label>
<div class="actions"><button type="submit" class="primary">Filter</button> <a href="/operations" class="button">Clear</a></div>
</form>"#,
        esc(f.kind.trim()),
        select(
            "status",
            "Status",
            &f.status,
            &names(Status::ALL, |s| s.as_str())
        ),
        select(
            "class",
            "Failure class",
            &f.class,
            &names(FailureClass::ALL, |s| s.as_str())
        ),
        select(
            "reason",
            "Terminal reason",
            &f.reason,
            &names(TerminalReason::ALL, |s| s.as_str())
        ),
        esc(f.error.trim()),
        esc(f.since.trim()),
        esc(f.until.trim()),
    )
}

/// One row of the list.
pub(crate) fn row(o: &Operation, now: chrono::DateTime<chrono::Utc>) -> String {
    let error = o
        .last_error
        .as_ref()
        .map(|e| e.summary.as_str())
        .unwrap_or("");
    let cut: String = error.chars().take(90).collect();
    format!(
        r#"<tr><td class="mono"><a href="/operations/{id}">{short}</a></td><td>{kind}</td><td>{status}</td><td class="num">{attempt}</td><td>{class}</td><td>{reason}</td><td class="err" title="{full}">{err}</td><td>{created}</td></tr>"#,
        id = o.id,
        short = short_id(&o.id),
        kind = esc(&o.kind),
        status = badge(o.status.as_str()),
        attempt = match o.max_attempts {
            Some(m) => format!("{}/{}", o.attempt, m),
            None => o.attempt.to_string(),
        },
        class = o
            .last_failure_class
            .map(|c| badge(c.as_str()))
            .unwrap_or_else(|| or_dash(None)),
        reason = or_dash(o.terminal_reason.map(|r| r.as_str())),
        full = esc(error),
        err = if cut.is_empty() {
            or_dash(None)
        } else {
            esc(&cut)
        },
        created = when(o.created_at, now),
    )
}

/// `GET /operations`.
pub(crate) async fn page(
    state: State,
    viewer: Viewer,
    q: Result<Query<FilterForm>, QueryRejection>,
) -> Result<Page, AppError> {
    let f = form(q)?;
    let now = state.store.now().await.map_err(store)?;
    let (since, until) = f.range(now)?;
    let limit = f.limit()?;
    let params = ListParams {
        status: f.status()?,
        kind: f.kind()?,
        failure_class: f.class()?,
        terminal_reason: f.reason()?,
        error_contains: f.error_text()?,
        created_since: since,
        created_until: until,
        after: f.after()?,
        newest_first: true,
        // One more than shown: whether there is a next page.
        limit: limit + 1,
    };
    let first_page = params.after.is_none();
    let mut ops = state.store.operation_list(params).await.map_err(store)?;
    let more = ops.len() > limit as usize;
    ops.truncate(limit as usize);

    let mut b = String::from(
        r#"<div class="head"><h1>Operations</h1><p class="muted">Newest first. Every filter narrows; the error text is matched literally, case-insensitively.</p></div>"#,
    );
    b.push_str(&filter_form(&f));
    if ops.is_empty() {
        b.push_str(&format!(
            r#"<p class="empty">{}</p>"#,
            if first_page {
                "No operation matches these filters."
            } else {
                "No more operations: this was the last page."
            }
        ));
    } else {
        b.push_str(
            r#"<table class="grid ops" id="ops"><thead><tr><th>ID</th><th>Kind</th><th>Status</th><th class="num">Attempt</th><th>Class</th><th>Reason</th><th>Last error</th><th>Created</th></tr></thead><tbody>"#,
        );
        for o in &ops {
            b.push_str(&row(o, now));
        }
        b.push_str("</tbody></table>");
    }
    let keep = f.query();
    let sep = if keep.is_empty() { "?" } else { "&amp;" };
    let mut pager = String::from(r#"<nav class="pager">"#);
    if !first_page {
        let _ = write!(
            pager,
            r#"<a href="/operations{}" class="button">⇤ Newest</a>"#,
            esc(&keep)
        );
    }
    if more && let Some(last) = ops.last() {
        let _ = write!(
            pager,
            r#"<a class="button" rel="next" id="older" href="/operations{}{}after={}&amp;limit={limit}">Older →</a>"#,
            esc(&keep),
            sep,
            last.id
        );
    }
    pager.push_str(&format!(
        r#"<span class="muted">{} shown{}</span></nav>"#,
        ops.len(),
        if more { "" } else { " · end of list" }
    ));
    b.push_str(&pager);
    Ok(Page::new("Operations", Nav::Operations, &viewer).body(PreEscaped(b)))
}
