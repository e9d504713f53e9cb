//! A model test of the operation state machine: proptest-state-machine generates sequences of
//! actions (enqueue, claims, heartbeats, completions with every outcome, lease expiry and rescue,
//! deadlines, cancel, quarantine, release, pause, reconcile, re-drive in place and as new, and
//! the scheduler's wake-up pick), a reference model
//! predicts what each does, and the driver applies them to a real store and compares, row by row,
//! after every step. A backend runs it with [`model_tests!`](crate::model_tests).
//!
//! Besides agreeing with the model, every step must keep the store's own invariants: a terminal
//! operation changes only by re-drive; a status changes only along an edge of
//! [`Status::can_transition_to`](oprec_core::Status::can_transition_to) (or by re-drive); the attempt count never goes down except by a
//! snooze's refund or a re-drive; a stale token changes nothing; an operation is running exactly
//! when it has a claim token and a lease.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;

use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use proptest_state_machine::ReferenceStateMachine;

use crate::Harness;

mod driver;
mod reference;

pub use reference::{Action, Ending, KIND, Model, ModelOp, TokenPick};

use driver::Driver;

/// How many sequences a backend runs unless it says otherwise.
pub const DEFAULT_CASES: u32 = 48;
/// The most steps in a sequence.
pub const MAX_STEPS: usize = 30;

/// A boxed future of a fresh harness, as the backend's setup makes it.
pub type SetupFuture<S> = Pin<Box<dyn Future<Output = Harness<S>>>>;

/// Runs the model test: `cases` sequences (`OPREC_MODEL_CASES` overrides) of up to [`MAX_STEPS`] actions, each on a fresh store
/// from `setup`, shrinking a failure to a short sequence and persisting its seed next to
/// `source_file` (`<file>.proptest-regressions`), so it runs first from then on.
pub fn run<S, F>(setup: F, cases: u32, source_file: &'static str)
where
    S: oprec_core::FullStore,
    F: Fn() -> SetupFuture<S>,
{
    let cases = std::env::var("OPREC_MODEL_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(cases);
    let config = Config {
        cases,
        max_shrink_iters: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        source_file: Some(source_file),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(
        &Model::sequential_strategy(1..=MAX_STEPS),
        |(initial, actions, seen)| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let harness = setup().await;
                let mut driver = Driver {
                    harness,
                    model: initial,
                    ids: Vec::new(),
                    tokens: Vec::new(),
                };
                for (i, action) in actions.iter().enumerate() {
                    if let Some(seen) = &seen {
                        seen.fetch_add(1, Ordering::SeqCst);
                    }
                    if std::env::var("OPREC_MODEL_TRACE").is_ok() {
                        eprintln!("step {i}: {action:?}");
                    }
                    driver
                        .step(action)
                        .await
                        .map_err(|e| TestCaseError::fail(format!("step {i} {action:?}: {e}")))?;
                }
                Ok(())
            })
        },
    );
    if let Err(e) = result {
        panic!("the store disagrees with the operation model: {e}");
    }
}

/// Expands into one `#[test]` that runs the operation model test ([`model::run`](crate::model::run))
/// on stores from `$setup().await` (a fresh, migrated, empty [`Harness`](crate::Harness) per
/// sequence), [`DEFAULT_CASES`](crate::model::DEFAULT_CASES) sequences unless `cases = N` is
/// given. Failing seeds are kept in `<calling file>.proptest-regressions`.
#[macro_export]
macro_rules! model_tests {
    ($setup:path) => {
        $crate::model_tests!($setup, cases = $crate::model::DEFAULT_CASES);
    };
    ($setup:path, cases = $cases:expr) => {
        #[test]
        fn operation_model_matches_the_store() {
            $crate::model::run(|| ::std::boxed::Box::pin($setup()), $cases, file!());
        }
    };
}
