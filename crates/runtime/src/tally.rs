//! The worker's counts by label: claims per kind, and written outcomes per kind, failure class
//! and dependency, so that an operator can ask which kind fails and why. The label sets are
//! bounded by the registry: a kind it does not run, or a dependency none of its kinds declares,
//! folds into [`OTHER`]; classes and outcomes are fixed enums. Labels travel with a claim as two
//! small indices, and counting is a map update under a lock taken once per batch, so the hot
//! path allocates nothing once a series exists. The metrics task flushes the counts every second.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use oprec_core::{AttemptOutcome, Claimed, FailureClass, TerminalReason, Transition};

use crate::Registry;

/// The label value of a kind or dependency outside the registry's bounded set.
pub(crate) const OTHER: &str = "other";
/// The label value of an operation without a dependency, or of a success's class.
pub(crate) const NONE: &str = "none";

/// An operation's labels, as indices into its worker's [`Tally`] label sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Labels {
    kind: u16,
    dependency: u16,
}

/// What a count is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Series {
    /// Operations claimed (labels: kind, dependency).
    Claims,
    /// Attempts that succeeded (kind, dependency).
    Succeeded,
    /// Attempts that failed (kind, class, dependency); the class is absent for a refusal
    /// without one.
    Failed(Option<FailureClass>),
    /// Outcomes written (kind, outcome).
    Completion(AttemptOutcome),
    /// Promotions to dead the worker wrote, its handlers' outcomes and, while it leads, the
    /// rescuer's (kind, class, dependency, reason).
    Dead(Option<FailureClass>, TerminalReason),
}

/// One labelled count's key.
pub(crate) type Key = (Series, Labels);

/// Counts by label, bounded by the registry the worker runs.
#[derive(Debug)]
pub(crate) struct Tally {
    kinds: Vec<String>,
    kind_index: HashMap<String, u16>,
    dependencies: Vec<String>,
    dependency_index: HashMap<String, u16>,
    counts: Mutex<HashMap<Key, u64>>,
}

impl Tally {
    /// Label sets from the kinds `registry` runs and the dependencies they declare; the last
    /// kind is [`OTHER`], and the dependencies end with [`NONE`] and [`OTHER`].
    pub(crate) fn for_registry(registry: &Registry) -> Self {
        let mut kinds: Vec<String> = registry.names();
        kinds.push(OTHER.to_owned());
        let mut dependencies: Vec<String> = registry
            .kinds()
            .filter_map(|k| k.dependency_name().map(str::to_owned))
            .filter(|d| d != NONE && d != OTHER)
            .collect();
        dependencies.sort();
        dependencies.dedup();
        dependencies.push(NONE.to_owned());
        dependencies.push(OTHER.to_owned());
        let index = |v: &[String]| {
            v.iter()
                .enumerate()
                .map(|(i, s)| (s.clone(), i as u16))
                .collect()
        };
        Tally {
            kind_index: index(&kinds),
            dependency_index: index(&dependencies),
            kinds,
            dependencies,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// The labels of a claimed operation (no allocation: lookups by `&str`).
    pub(crate) fn labels(&self, op: &Claimed) -> Labels {
        let other_kind = (self.kinds.len() - 1) as u16;
        let none = (self.dependencies.len() - 2) as u16;
        let other_dependency = (self.dependencies.len() - 1) as u16;
        Labels {
            kind: self
                .kind_index
                .get(op.kind.as_str())
                .copied()
                .unwrap_or(other_kind),
            dependency: match op.dependency.as_deref() {
                None => none,
                Some(d) => self
                    .dependency_index
                    .get(d)
                    .copied()
                    .filter(|i| *i < none)
                    .unwrap_or(other_dependency),
            },
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, u64>> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a batch of claims.
    pub(crate) fn claimed(&self, claimed: &[Claimed]) {
        if claimed.is_empty() {
            return;
        }
        let mut counts = self.lock();
        for op in claimed {
            *counts.entry((Series::Claims, self.labels(op))).or_default() += 1;
        }
    }

    /// Counts a batch of written (applied) transitions.
    pub(crate) fn applied<'t>(&self, written: impl IntoIterator<Item = (Labels, &'t Transition)>) {
        let mut counts = self.lock();
        for (labels, t) in written {
            let outcome = t.attempt_outcome();
            let mut add = |s: Series| *counts.entry((s, labels)).or_default() += 1;
            add(Series::Completion(outcome));
            // As the worker's unlabelled totals count them (see the completer).
            if t.failed_attempt() {
                add(Series::Failed(t.failure_class()));
            } else if outcome == AttemptOutcome::Succeeded {
                add(Series::Succeeded);
            }
            if let Some(reason) = t.terminal_reason()
                && t.status() == oprec_core::Status::Dead
            {
                add(Series::Dead(t.failure_class(), reason));
            }
        }
    }

    /// Counts the promotions to dead among transitions the rescuer wrote (a crash loop, an
    /// attempt bound reached by vanished attempts): they are promotions like the worker's, but
    /// the rescuer writes no completion of its own (its vanished attempts are counted apart).
    pub(crate) fn rescued<'t>(&self, written: impl IntoIterator<Item = (Labels, &'t Transition)>) {
        let mut counts = self.lock();
        for (labels, t) in written {
            if let Some(reason) = t.terminal_reason()
                && t.status() == oprec_core::Status::Dead
            {
                *counts
                    .entry((Series::Dead(t.failure_class(), reason), labels))
                    .or_default() += 1;
            }
        }
    }

    /// Every count so far.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn snapshot(&self) -> Vec<(Key, u64)> {
        self.lock().iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// The label value of a kind index.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn kind(&self, l: Labels) -> &str {
        &self.kinds[l.kind as usize]
    }

    /// The label value of a dependency index.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn dependency(&self, l: Labels) -> &str {
        &self.dependencies[l.dependency as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_kinds_and_dependencies_fold_into_bounded_values() {
        use crate::Kind;
        use oprec_core::RetryPolicy;
        let policy = RetryPolicy::builder()
            .timeout(chrono::Duration::seconds(5))
            .max_attempts(1)
            .local_only()
            .jitter(oprec_core::Jitter::None)
            .build()
            .unwrap();
        let reg = Registry::new().register(
            Kind::new("a.b", policy, |_ctx, _p: serde_json::Value| async {
                Ok(())
            })
            .dependency("carrier"),
        );
        let t = Tally::for_registry(&reg);
        assert_eq!(t.kinds, ["a.b", OTHER]);
        assert_eq!(t.dependencies, ["carrier", NONE, OTHER]);
        let index = |s: &str| t.dependency_index[s];
        assert_eq!(index("carrier"), 0);
        assert_eq!(t.dependency_index[NONE], 1);
        assert_eq!(t.dependency_index[OTHER], 2);
    }

    #[test]
    fn the_rescuer_counts_its_promotions_to_dead_and_nothing_else() {
        let t = Tally::for_registry(&Registry::new());
        let labels = Labels::default();
        let dead = Transition::dead(TerminalReason::CrashLoop, None);
        let retried = Transition::release(chrono::Utc::now());
        t.rescued([(labels, &dead), (labels, &retried)]);
        let snapshot = t.snapshot();
        assert_eq!(
            snapshot,
            vec![((Series::Dead(None, TerminalReason::CrashLoop), labels), 1)]
        );
    }
}
