//! The recurring kinds: each schedule with its next tick, its last tick and that tick's
//! operation with its status, and whether it is served (the same read as `oprec schedules`).

use maud::html;
use oprec_ops::schedules::{self, ScheduleState};

use crate::State;
use crate::error::AppError;
use crate::html::{badge, or_dash, short_id, when};
use crate::layout::{Nav, Page};
use crate::viewer::Viewer;

/// `GET /schedules`.
pub(crate) async fn page(state: State, viewer: Viewer) -> Result<Page, AppError> {
    let (now, views) = schedules::list(state.store.as_ref()).await?;
    let body = html! {
        div.head {
            h1 { "Schedules" }
            p.muted {
                "Recurring kinds: the maintenance leader enqueues one operation per tick (key "
                code { "schedule:<tick>" } "), whatever the number of workers. Ticks missed while "
                "nothing ran follow the kind's rule: " code { "run_once" } " makes one operation, "
                "for the latest; " code { "skip" } " makes none."
            }
        }
        @if views.is_empty() {
            p.empty { "No schedule: no worker has declared a recurring kind." }
        } @else {
            div.scroll data-scroll {
                table.grid #schedules {
                    thead {
                        tr {
                            th { "Kind" } th { "Schedule" } th { "Zone" } th { "Missed" }
                            th { "Next tick" } th { "Last tick" } th { "Last operation" }
                            th { "Status" } th { "State" }
                        }
                    }
                    tbody {
                        @for v in &views {
                            @let r = &v.record;
                            tr {
                                td { strong { (r.kind) } }
                                td { code { (r.expression) } }
                                td { (r.timezone) }
                                td { (r.missed.as_str()) }
                                td { @match r.next_tick { Some(t) => (when(t, now)), None => (or_dash(None)) } }
                                td { @match r.last_enqueued_tick { Some(t) => (when(t, now)), None => (or_dash(None)) } }
                                td {
                                    @match r.last_operation_id {
                                        Some(id) => a href={ "/operations/" (id) } { code { (short_id(&id)) } },
                                        None => (or_dash(None)),
                                    }
                                }
                                td {
                                    @match (r.last_operation_id, r.last_operation_status) {
                                        (Some(_), Some(s)) => (badge(s.as_str())),
                                        (Some(_), None) => span.muted { "removed" },
                                        (None, _) => (or_dash(None)),
                                    }
                                }
                                td {
                                    @if v.state == ScheduleState::OnTime {
                                        (v.state.as_str())
                                    } @else {
                                        strong.state-warn { (v.state.as_str()) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Page::new("Schedules", Nav::Schedules, &viewer).body(body))
}
