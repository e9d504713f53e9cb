//! The maintenance side of a store: what the elected maintenance process does for the whole
//! fleet: publish due wake-ups, take back expired leases, end operations past their deadline,
//! hand unknown outcomes to reconcile hooks, and announce promotions to dead.
//!
//! One process at a time runs the loops for the whole fleet: the one that holds the
//! [`MAINTENANCE_LEADER`] leadership ([`MaintenanceStore::leader_acquire`]). Leadership saves
//! work; it is not what keeps the loops safe: each of their writes is fenced (claims, tokens,
//! statuses), so two leaders for a moment, while a lease runs out, do no harm.
//!
//! Every decision is core's: the rescue applies [`Transition::vanished`](crate::Transition::vanished)
//! transitions, the deadline pass writes [`Ending::deadline_passed`](crate::Ending::deadline_passed),
//! a resolution writes its [`Settlement`].

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::store::{CompleteParams, CompleteResult};
use crate::{Claimed, Operation, OperationId, Result, Settlement, Status, Store, WakeUp};

/// Pick pending, eligible operations that are due a wake-up, mark them woken now, and return
/// them for publishing. Fresh ones (never woken, or woken before they became eligible: a retry)
/// always; stale ones (woken longer than `rewake_after` ago, unclaimed since) only with
/// `stale`, since a scheduler with a budget re-wakes those per kind
/// ([`MaintenanceStore::operation_rewake`]).
#[derive(Clone, Debug)]
pub struct WakeDueParams {
    /// How long a published wake-up is trusted before the operation is woken again.
    pub rewake_after: Duration,
    /// The most operations per call.
    pub limit: u32,
    /// Also re-wake the stale ones, of every kind, oldest eligible first.
    pub stale: bool,
    /// Only kinds that a worker seen within this long handles (the `workers` table); `None`:
    /// every kind. A kind nobody runs is not woken (it shows as unhandled).
    pub handled_within: Option<Duration>,
}

impl WakeDueParams {
    /// Every due operation, fresh or stale, of every kind: the pick without a budget.
    pub fn all(rewake_after: Duration, limit: u32) -> Self {
        WakeDueParams {
            rewake_after,
            limit,
            stale: true,
            handled_within: None,
        }
    }
}

/// Re-wake up to `limit` stale operations of one kind: pending, eligible, held back by nothing,
/// woken for their current eligibility longer than `rewake_after` ago and not claimed since.
#[derive(Clone, Debug)]
pub struct RewakeParams {
    /// The kind.
    pub kind: String,
    /// How long a published wake-up is trusted.
    pub rewake_after: Duration,
    /// The most operations re-woken (the budget).
    pub limit: u32,
}

/// What the scheduler needs to size its re-wakes, per kind.
#[derive(Clone, Copy, Debug)]
pub struct WakeFiguresParams {
    /// How long a published wake-up is trusted.
    pub rewake_after: Duration,
    /// A kind counts as handled when a worker seen within this long runs it.
    pub handled_within: Duration,
}

/// One kind's wake-ups in flight, as the store sees them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KindWakeFigures {
    /// The kind.
    pub kind: String,
    /// Pending, eligible operations held back by nothing, whose wake-up for their current
    /// eligibility was published and which nobody claimed since: the wake-ups that should be on
    /// the broker.
    pub signalled: u64,
    /// Of those, the ones woken longer than `rewake_after` ago.
    pub stale: u64,
    /// Whether a worker seen lately runs the kind.
    pub handled: bool,
}

/// The fewest re-wakes a kind is allowed per pass when its consumers' pace is not known yet.
pub const REWAKE_FLOOR: u64 = 100;

/// What the scheduler sees of one kind on the broker at a look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BrokerLook {
    /// The wake-ups the broker says it holds ([`Transport::depth`](crate::Transport::depth)),
    /// `None` when it cannot say.
    pub depth: Option<u64>,
    /// At most how many more other consumers may hold without the depth counting them
    /// ([`Transport::depth_unseen_bound`](crate::Transport::depth_unseen_bound)).
    pub unseen: u64,
    /// How many wake-ups the kind's consumers took in the last re-wake interval, once known.
    pub pace: Option<u64>,
}

/// How many of a kind's stale operations to re-wake now: never more than are stale, never more
/// than the broker seems to have lost (wake-ups that should be there, `signalled`, less those
/// it holds, `depth`), and never more than the consumers can take before the next look (their
/// pace over one re-wake interval, at least [`REWAKE_FLOOR`], less what already waits). When the
/// broker cannot say its depth, only the stale count and the consumers' pace bound it. A kind no
/// live worker handles gets nothing.
///
/// While the consumers are taking wake-ups (a pace above zero), the deliveries other consumers
/// may hold unseen (`unseen`: AMQP's prefetch windows of other processes) are not taken for
/// lost: a busy consumer's window is full of wake-ups it will work. Once the consumers take
/// nothing, nothing is held back for them, so a wake-up truly lost is re-woken all the same.
pub fn rewake_budget(figures: &KindWakeFigures, look: BrokerLook) -> u32 {
    if !figures.handled {
        return 0;
    }
    let room = look.pace.unwrap_or(0).max(REWAKE_FLOOR);
    let unseen = if look.pace.unwrap_or(0) > 0 {
        look.unseen
    } else {
        0
    };
    let budget = match look.depth {
        Some(depth) => figures
            .stale
            .min(figures.signalled.saturating_sub(depth + unseen))
            .min(room.saturating_sub(depth)),
        None => figures.stale.min(room),
    };
    u32::try_from(budget).unwrap_or(u32::MAX)
}

/// Mark pending operations never woken, so that the scheduler wakes them on its next pass. Both
/// filters apply; an empty one matches everything.
#[derive(Clone, Debug, Default)]
pub struct WakeResetParams {
    /// The kinds whose pending operations are reset; empty: every kind.
    pub kinds: Vec<String>,
    /// The operations reset; empty: every pending operation of `kinds`.
    pub ids: Vec<OperationId>,
}

/// List running operations whose lease has expired, longest expired first.
#[derive(Clone, Copy, Debug)]
pub struct LeaseExpiredListParams {
    /// The most operations per call.
    pub limit: u32,
}

/// Apply decided [`Transition::vanished`](crate::Transition::vanished) transitions to expired
/// claims.
#[derive(Clone, Debug)]
pub struct RescueManyParams {
    /// One per expired claim, with the token the listing returned.
    pub rescues: Vec<CompleteParams>,
}

/// End pending and held operations whose deadline has passed.
#[derive(Clone, Copy, Debug)]
pub struct EndPastDeadlineParams {
    /// The most operations per call.
    pub limit: u32,
}

/// Take reconciling operations whose reconcile time has come, for the kind's reconcile hook.
/// Each one's next reconcile time is pushed to now + `lease` in the same statement, so two
/// reconcilers do not run the same hook at once.
#[derive(Clone, Debug)]
pub struct ReconcileDueParams {
    /// Only these kinds (the ones with a hook here).
    pub kinds: Vec<String>,
    /// The most operations.
    pub limit: u32,
    /// How long the hook has before another reconciler may take the operation.
    pub lease: Duration,
}

/// Write a decided resolution of a reconciling operation (see
/// [`Resolution::settle`](crate::Resolution::settle)); fenced by the operation still being
/// reconciling.
#[derive(Clone, Debug)]
pub struct ReconcileResolveParams {
    /// The operation (must be reconciling).
    pub id: OperationId,
    /// What core decided from the row and the resolution.
    pub settlement: Settlement,
}

/// Claim dead operations whose promotion is due to be announced: not announced yet, and not
/// claimed by another announcer (or its claim ran out, or its retry time came).
#[derive(Clone, Copy, Debug)]
pub struct AlertClaimParams {
    /// The most operations.
    pub limit: u32,
    /// How long the announcer has before another may take the same announcement.
    pub lease: Duration,
}

/// A promotion to dead to announce, claimed.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertDue {
    /// The dead operation.
    pub operation: Operation,
    /// Announcements of it that failed so far.
    pub failures: u32,
}

/// Record that promotions were announced.
#[derive(Clone, Debug)]
pub struct MarkAlertedParams {
    /// The operations announced.
    pub ids: Vec<OperationId>,
}

/// Record that announcements failed: each is tried again at its time (see [`alert_retry_at`]).
#[derive(Clone, Debug)]
pub struct AlertDeferParams {
    /// The operations and when to try each again.
    pub retries: Vec<(OperationId, DateTime<Utc>)>,
}

/// When to try again an announcement that failed `failures` times (counting this one): 10 s after
/// the first failure, doubling up to an hour, so a webhook that is down is asked (and its failure
/// logged) a few times an hour, not on every pass.
pub fn alert_retry_at(failures: u32, now: DateTime<Utc>) -> DateTime<Utc> {
    let secs = 10i64.saturating_mul(1i64 << failures.saturating_sub(1).min(20));
    now + Duration::seconds(secs.min(3600))
}

/// The leadership of the maintenance loops: one process at a time runs them for the fleet.
pub const MAINTENANCE_LEADER: &str = "maintenance";

/// Take a named leadership, or keep it: the caller leads if nobody does, if the leader's lease
/// ran out, or if it already leads (its lease is extended).
#[derive(Clone, Debug)]
pub struct LeaderAcquireParams {
    /// The leadership ([`MAINTENANCE_LEADER`]).
    pub name: String,
    /// Who asks (a worker id).
    pub holder: String,
    /// How long the leadership lasts unless renewed: a leader that dies is replaced after it.
    pub lease: Duration,
    /// What the holder applies, published for operators with the leadership (a JSON object:
    /// the maintenance leader's `{"retention": ...}`, see
    /// [`RetentionPolicy::to_settings`](crate::RetentionPolicy::to_settings)); written on every
    /// renewal.
    pub settings: Option<serde_json::Value>,
}

/// Give a leadership up (a clean shutdown), so that another candidate takes it at once.
#[derive(Clone, Debug)]
pub struct LeaderReleaseParams {
    /// The leadership.
    pub name: String,
    /// Who gives it up; someone else's leadership is left alone.
    pub holder: String,
}

/// Who holds a leadership, and until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Leadership {
    /// The leadership.
    pub name: String,
    /// Its holder (a worker id).
    pub holder: String,
    /// When it lapses unless renewed.
    pub lease_until: DateTime<Utc>,
    /// Since when this holder leads.
    pub since: DateTime<Utc>,
    /// What the holder published that it applies (see [`LeaderAcquireParams::settings`]).
    pub settings: Option<serde_json::Value>,
}

/// The maintenance side of a store.
#[async_trait]
pub trait MaintenanceStore: Store {
    /// Marks due operations woken and returns them for publishing: pending, eligible, within
    /// their deadline, held back by no control, and never woken, woken before they became
    /// eligible, or woken longer than `rewake_after` ago. Two schedulers never get the same
    /// operation from one call each. Each comes with its kind, which routes its wake-up.
    async fn operation_wake_due(&self, params: WakeDueParams) -> Result<Vec<WakeUp>>;

    /// Marks pending operations never woken (of `kinds`, among `ids`; an empty filter matches
    /// all), so that the scheduler wakes them on its next pass rather than after the re-wake
    /// interval: their wake-ups were purged from the broker, or never reached it. Returns how
    /// many rows it reset.
    async fn operation_wake_reset(&self, params: WakeResetParams) -> Result<u64>;

    /// Marks up to `limit` stale operations of one kind woken now and returns them: the
    /// scheduler's re-wake, within the budget [`rewake_budget`] decided.
    async fn operation_rewake(&self, params: RewakeParams) -> Result<Vec<crate::WakeUp>>;

    /// Per kind with wake-ups out: how many should be on the broker, how many of those are
    /// stale, and whether anybody runs the kind.
    async fn operation_wake_figures(
        &self,
        params: WakeFiguresParams,
    ) -> Result<Vec<KindWakeFigures>>;

    /// Running operations whose lease has expired, for the rescuer to decide on.
    async fn operation_lease_expired_list(
        &self,
        params: LeaseExpiredListParams,
    ) -> Result<Vec<Claimed>>;

    /// Applies vanished transitions, each recorded as a vanished attempt; one whose claim moved
    /// on, or whose lease was extended meanwhile, changes nothing. Results are in input order.
    async fn operation_rescue_many(&self, params: RescueManyParams) -> Result<Vec<CompleteResult>>;

    /// Ends pending and held operations whose deadline has passed, with
    /// [`Ending::deadline_passed`](crate::Ending::deadline_passed); returns how many.
    async fn operation_end_past_deadline(&self, params: EndPastDeadlineParams) -> Result<u64>;

    /// Takes reconciling operations due for their reconcile hook.
    async fn operation_reconcile_due(&self, params: ReconcileDueParams) -> Result<Vec<Operation>>;

    /// Writes a resolution; [`Error::NotFound`](crate::Error::NotFound) when there is no such
    /// operation and [`Error::InvalidInput`](crate::Error::InvalidInput) when it is not
    /// reconciling. Returns the new status.
    async fn operation_reconcile_resolve(&self, params: ReconcileResolveParams) -> Result<Status>;

    /// Claims promotions to dead due to be announced, oldest first: each is the caller's for
    /// `lease`, so two announcers never send the same one (but a crashed announcer's claims are
    /// sent again after the lease: at least once).
    async fn operation_alert_claim(&self, params: AlertClaimParams) -> Result<Vec<AlertDue>>;

    /// Records that these promotions were announced.
    async fn operation_mark_alerted(&self, params: MarkAlertedParams) -> Result<()>;

    /// Records that these announcements failed, each to be tried again at its time.
    async fn operation_alert_defer(&self, params: AlertDeferParams) -> Result<()>;

    /// Records alerts in the alert log, one per subject: a subject already recorded is left as
    /// it is, except that a delivery given with it updates its outcome. Returns the rows
    /// recorded now (not the ones already there).
    async fn alert_record(
        &self,
        params: crate::alert::AlertRecordParams,
    ) -> Result<Vec<crate::alert::AlertEntry>>;

    /// Records a `held` alert for each recent attempt that failed for configuration; returns
    /// the rows recorded now.
    async fn alert_holds_record(
        &self,
        params: crate::alert::AlertHoldsParams,
    ) -> Result<Vec<crate::alert::AlertEntry>>;

    /// Takes recorded alerts due to be sent (pending, or failed and due again), oldest first,
    /// each the caller's for the lease.
    async fn alert_due(
        &self,
        params: crate::alert::AlertDueParams,
    ) -> Result<Vec<crate::alert::AlertEntry>>;

    /// Records how sends went.
    async fn alert_settle(&self, params: crate::alert::AlertSettleParams) -> Result<()>;

    /// Removes old sent alerts; returns how many.
    async fn alert_trim(&self, params: crate::alert::AlertTrimParams) -> Result<u64>;

    /// Takes or keeps a leadership; returns who leads after the attempt (the caller when
    /// `holder` is its id). Judged by the store's clock.
    async fn leader_acquire(&self, params: LeaderAcquireParams) -> Result<Leadership>;

    /// Gives a leadership up; false when the caller did not hold it.
    async fn leader_release(&self, params: LeaderReleaseParams) -> Result<bool>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_alert_is_tried_again_later_each_time_up_to_an_hour() {
        let now = Utc::now();
        let waits: Vec<i64> = [0, 1, 2, 3, 4, 8, 9, 30, u32::MAX]
            .into_iter()
            .map(|n| (alert_retry_at(n, now) - now).num_seconds())
            .collect();
        assert_eq!(waits, [10, 10, 20, 40, 80, 1280, 2560, 3600, 3600]);
    }

    fn look(depth: Option<u64>, pace: Option<u64>) -> BrokerLook {
        BrokerLook {
            depth,
            unseen: 0,
            pace,
        }
    }

    fn figures(signalled: u64, stale: u64, handled: bool) -> KindWakeFigures {
        KindWakeFigures {
            kind: "k".into(),
            signalled,
            stale,
            handled,
        }
    }

    #[test]
    fn a_saturated_kind_whose_wake_ups_all_wait_on_the_broker_gets_no_re_wakes() {
        // 2,000 waiting, every wake-up still queued, consumers taking 60 per interval.
        assert_eq!(
            rewake_budget(&figures(2000, 2000, true), look(Some(2000), Some(60))),
            0
        );
        // The broker holds more than its consumers take in an interval: adding more only queues.
        assert_eq!(
            rewake_budget(&figures(2000, 2000, true), look(Some(150), Some(60))),
            0
        );
    }

    #[test]
    fn lost_wake_ups_are_re_woken_no_faster_than_the_consumers_take_them() {
        // A purge or a restart without persistence lost them all: the broker holds none.
        assert_eq!(
            rewake_budget(&figures(5000, 5000, true), look(Some(0), Some(600))),
            600
        );
        // Before the pace is known, the floor.
        assert_eq!(
            rewake_budget(&figures(5000, 5000, true), look(Some(0), None)),
            REWAKE_FLOOR as u32
        );
        // Only what seems lost: 300 should be there, 280 are.
        assert_eq!(
            rewake_budget(&figures(300, 300, true), look(Some(280), Some(1000))),
            20
        );
        // Never more than are stale.
        assert_eq!(
            rewake_budget(&figures(300, 5, true), look(Some(0), Some(1000))),
            5
        );
    }

    #[test]
    fn without_a_depth_only_the_pace_bounds_it_and_an_unhandled_kind_gets_nothing() {
        assert_eq!(
            rewake_budget(&figures(5000, 5000, true), look(None, Some(700))),
            700
        );
        assert_eq!(rewake_budget(&figures(50, 50, true), look(None, None)), 50);
        assert_eq!(
            rewake_budget(&figures(5000, 5000, false), look(Some(0), Some(700))),
            0
        );
    }

    #[test]
    fn what_other_busy_consumers_may_hold_unseen_is_not_taken_for_lost() {
        // 178 should be on the broker, 50 are ready, another process's consumer may hold 128
        // prefetched: while the consumers take wake-ups, none is lost.
        let busy = BrokerLook {
            depth: Some(50),
            unseen: 128,
            pace: Some(120),
        };
        assert_eq!(rewake_budget(&figures(178, 178, true), busy), 0);
        // More are missing than the windows can hold: the rest are re-woken.
        assert_eq!(rewake_budget(&figures(278, 278, true), busy), 70);
        // Consumers that take nothing hold nothing back: everything missing is re-woken.
        let idle = BrokerLook {
            pace: Some(0),
            ..busy
        };
        assert_eq!(rewake_budget(&figures(178, 178, true), idle), 50);
        let unknown = BrokerLook { pace: None, ..busy };
        assert_eq!(rewake_budget(&figures(178, 178, true), unknown), 50);
    }
}
