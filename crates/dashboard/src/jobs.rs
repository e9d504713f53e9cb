//! Re-drives confirmed in the dashboard run as background jobs, so that the page can show their
//! progress: batches of 500 (one store call each), eligible times staggered at the confirmed
//! rate, only operations that ended before the confirmation, and an audit entry at the end.
//! Jobs live in memory; a restart forgets the page, never the work (it is in the store).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{AuditEntry, OperationFilter, RedriveMode, RedriveParams};
use oprec_core::{OperationId, OperatorStore};
use serde_json::json;

/// Operations re-driven per store call.
const BATCH: u64 = 500;
/// Jobs kept for their progress pages.
const KEEP: usize = 100;
/// Re-driven ids kept per job, to show what became of them.
const KEEP_IDS: usize = 10_000;

/// A confirmed re-drive.
#[derive(Clone, Debug)]
pub(crate) struct RedrivePlan {
    pub filter: OperationFilter,
    pub mode: RedriveMode,
    /// At most this many (what the dry run showed).
    pub limit: u64,
    /// Gap between consecutive eligible times.
    pub spacing: Duration,
    /// Operations per second, as confirmed (none: all at once).
    pub rate: Option<f64>,
    pub actor: String,
    pub note: Option<String>,
    /// What the dry run counted.
    pub matched: u64,
    pub not_terminal: u64,
}

/// Where a job is.
#[derive(Clone, Debug)]
pub(crate) struct JobState {
    pub plan: RedrivePlan,
    pub started: DateTime<Utc>,
    pub done: u64,
    pub batches: u64,
    pub finished: bool,
    pub error: Option<String>,
    pub first: Option<DateTime<Utc>>,
    pub last: Option<DateTime<Utc>>,
    /// The operations that will run (capped at [`KEEP_IDS`]).
    pub ids: Vec<OperationId>,
}

/// The jobs of this process, by id.
#[derive(Default)]
pub(crate) struct Jobs {
    jobs: Mutex<BTreeMap<String, Arc<Mutex<JobState>>>>,
}

impl Jobs {
    /// A job's state now.
    pub fn get(&self, id: &str) -> Option<JobState> {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        jobs.get(id)
            .map(|j| j.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Starts a re-drive in the background; returns its id.
    pub fn start(
        &self,
        store: Arc<dyn OperatorStore>,
        plan: RedrivePlan,
        began: DateTime<Utc>,
    ) -> String {
        let id = uuid::Uuid::now_v7().simple().to_string();
        let state = Arc::new(Mutex::new(JobState {
            plan: plan.clone(),
            started: began,
            done: 0,
            batches: 0,
            finished: false,
            error: None,
            first: None,
            last: None,
            ids: Vec::new(),
        }));
        {
            let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
            while jobs.len() >= KEEP {
                let oldest = jobs.keys().next().cloned();
                match oldest {
                    Some(k) => jobs.remove(&k),
                    None => break,
                };
            }
            jobs.insert(id.clone(), state.clone());
        }
        tokio::spawn(run(store, plan, began, state));
        id
    }
}

async fn run(
    store: Arc<dyn OperatorStore>,
    plan: RedrivePlan,
    began: DateTime<Utc>,
    state: Arc<Mutex<JobState>>,
) {
    let mut filter = plan.filter.clone();
    // Only what ended before the confirmation: an operation that dies again meanwhile waits for
    // the next decision.
    filter.terminal_until = Some(filter.terminal_until.map_or(began, |u| u.min(began)));
    let mut done = 0u64;
    let mut error = None;
    while done < plan.limit {
        let ask = BATCH.min(plan.limit - done);
        let params = RedriveParams {
            filter: filter.clone(),
            include_cancelled: false,
            mode: plan.mode.clone(),
            limit: ask as u32,
            start_at: began + plan.spacing * i32::try_from(done).unwrap_or(i32::MAX),
            spacing: plan.spacing,
        };
        match store.operation_redrive(params).await {
            Ok(batch) => {
                let n = batch.len() as u64;
                done += n;
                let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                s.done = done;
                s.batches += 1;
                if let Some(f) = batch.first() {
                    s.first.get_or_insert(f.next_eligible_at);
                }
                if let Some(l) = batch.last() {
                    s.last = Some(l.next_eligible_at);
                }
                let room = KEEP_IDS.saturating_sub(s.ids.len());
                s.ids.extend(batch.iter().take(room).map(|r| r.to));
                if n < ask {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "dashboard re-drive batch failed");
                error = Some(format!(
                    "The store failed after {done} operations were re-driven ({}). Review again \
                     and confirm to re-drive the rest: nothing is re-driven twice.",
                    if e.is_transient() {
                        "it could not be reached"
                    } else {
                        "it refused the batch"
                    }
                ));
                break;
            }
        }
    }
    let snapshot = state.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut audit_filter = serde_json::to_value(&plan.filter).unwrap_or(json!({}));
    if let serde_json::Value::Object(m) = &mut audit_filter {
        m.insert("include_cancelled".into(), json!(false));
    }
    let audited = store
        .audit_insert(AuditEntry {
            actor: plan.actor.clone(),
            action: "redrive".into(),
            filter: audit_filter,
            affected: done,
            reason: plan.note.clone(),
            details: json!({
                "via": "dashboard",
                "mode": plan.mode,
                "rate_per_second": plan.rate,
                "limit": plan.limit,
                "ended_before": began,
                "matched": plan.matched,
                "not_terminal": plan.not_terminal,
                "first_eligible_at": snapshot.first,
                "last_eligible_at": snapshot.last,
                "batches": snapshot.batches,
                "complete": error.is_none(),
            }),
        })
        .await;
    if let Err(e) = audited {
        tracing::error!(error = %e, "the re-drive's audit entry could not be written");
        error.get_or_insert_with(|| {
            format!("{done} operations were re-driven, but the audit entry could not be written.")
        });
    }
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    s.finished = true;
    s.error = error;
}
