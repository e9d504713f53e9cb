//! Re-drives confirmed in the dashboard run as background jobs, so that the page can show their
//! progress. The work is the operator library's re-drive ([`oprec_ops::redrive`], the same the
//! CLI runs): batches, eligible times staggered at the confirmed pace, only operations that ended
//! before the confirmation, and an audit entry at the end. Jobs live in memory; a restart forgets
//! the page, never the work (it is in the store).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use oprec_core::operator::RedriveJobState;
use oprec_core::{FullStore, OperationId};
use oprec_ops::redrive::{AGAIN, RedriveReview};
use oprec_ops::redrive_job::JobEvent;
use oprec_ops::{CancellationToken, Who};

/// Jobs kept for their progress pages.
const KEEP: usize = 100;
/// Re-driven ids kept per job, to show what became of them.
const KEEP_IDS: usize = 10_000;

/// Where a job is.
#[derive(Clone, Debug)]
pub(crate) struct JobState {
    /// The dry run that was confirmed, with its request.
    pub review: RedriveReview,
    /// Who confirmed it.
    pub actor: String,
    /// Re-driven so far.
    pub done: u64,
    /// Store calls so far.
    pub batches: u64,
    /// The job has ended (done, stopped or failed).
    pub finished: bool,
    /// Why it ended early, for the person.
    pub error: Option<String>,
    /// When the first re-driven operation becomes eligible.
    pub first: Option<DateTime<Utc>>,
    /// When the last one does.
    pub last: Option<DateTime<Utc>>,
    /// The operations that will run (capped at [`KEEP_IDS`]).
    pub ids: Vec<OperationId>,
    /// Stops the job between two batches.
    pub stop: CancellationToken,
    /// The job's row in the store (`oprec redrive status` lists it), once it has started.
    pub job_id: Option<String>,
    /// Who asked from this dashboard to stop it, while it is stopping.
    pub stop_asked_by: Option<String>,
    /// How it ended, as the job's row says (done, stopped, braked, interrupted, failed).
    pub end: Option<RedriveJobState>,
    /// Operations left that controls in force hold back now (the job waits for them).
    pub waiting: Option<u64>,
}

impl JobState {
    /// When the re-drive was confirmed (its review's time).
    pub fn started(&self) -> DateTime<Utc> {
        self.review.began
    }
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

    /// Notes that `actor` asked to stop job `id` (once the stop was accepted).
    pub fn stop_asked(&self, id: &str, actor: &str) {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(job) = jobs.get(id) {
            job.lock().unwrap_or_else(|e| e.into_inner()).stop_asked_by = Some(actor.to_owned());
        }
    }

    /// Starts the reviewed re-drive in the background; returns its id.
    pub fn start(
        &self,
        store: Arc<dyn FullStore>,
        review: RedriveReview,
        who: Who,
        note: Option<String>,
    ) -> String {
        let id = uuid::Uuid::now_v7().simple().to_string();
        let state = Arc::new(Mutex::new(JobState {
            review: review.clone(),
            actor: who.actor.clone(),
            done: 0,
            batches: 0,
            finished: false,
            error: None,
            first: None,
            last: None,
            ids: Vec::new(),
            stop: CancellationToken::new(),
            job_id: None,
            stop_asked_by: None,
            end: None,
            waiting: None,
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
        tokio::spawn(run(store, review, who, note, state));
        id
    }
}

async fn run(
    store: Arc<dyn FullStore>,
    review: RedriveReview,
    who: Who,
    note: Option<String>,
    state: Arc<Mutex<JobState>>,
) {
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let stop = lock().stop.clone();
    let done = review
        .apply(store.as_ref(), &who, note.as_deref(), &stop, |event| {
            let batch = match event {
                JobEvent::Started(job) => {
                    lock().job_id = Some(job.id.clone());
                    return;
                }
                JobEvent::Waiting { left, .. } => {
                    lock().waiting = Some(left);
                    return;
                }
                JobEvent::Released(batch) => batch,
            };
            let mut s = lock();
            s.waiting = None;
            s.done += batch.len() as u64;
            s.batches += 1;
            if let Some(f) = batch.first() {
                s.first.get_or_insert(f.next_eligible_at);
            }
            if let Some(l) = batch.last() {
                s.last = Some(l.next_eligible_at);
            }
            let room = KEEP_IDS.saturating_sub(s.ids.len());
            s.ids.extend(batch.iter().take(room).map(|r| r.to));
        })
        .await;
    let mut error = None;
    if let Some(e) = &done.run.failure {
        tracing::warn!(error = %e, "dashboard re-drive batch failed");
        error = Some(format!(
            "The store failed after {} operations were re-driven ({}). Review again and confirm \
             to re-drive the rest: nothing is re-driven twice.",
            done.run.done,
            if e.is_transient() {
                "it could not be reached"
            } else {
                "it refused the batch"
            }
        ));
    } else if done.run.interrupted {
        // Stopped here, by `oprec redrive stop`, or braked: the job's reason says which.
        let why = done.job.as_ref().and_then(|j| j.reason.clone());
        error = Some(match why {
            Some(why) => format!("{why}; {AGAIN}."),
            None => format!(
                "Stopped after {} operations were re-driven; {AGAIN}.",
                done.run.done
            ),
        });
    }
    if let Some(e) = &done.audit_failure {
        tracing::error!(error = %e, "the re-drive's audit entry could not be written");
        error.get_or_insert_with(|| {
            format!(
                "{} operations were re-driven, but the audit entry could not be written.",
                done.run.done
            )
        });
    }
    let mut s = lock();
    s.finished = true;
    s.error = error;
    s.end = done.state();
    s.waiting = None;
}
