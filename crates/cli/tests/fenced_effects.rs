//! Exactly-once effects through the fenced transaction, with real `oprec` worker processes that
//! are SIGKILLed and SIGSTOPped (past their lease, then SIGCONTinued) over and over while they
//! work: every `demo.effect {"fenced": true}` operation counts exactly one call in
//! `demo_effects`, however many of its attempts were cut, rescued, retried or resumed as zombies.
//! Beside them, the same number of unfenced `demo.effect` operations show what the fence prevents:
//! their calls are at least one each (at-least-once), and more whenever a cut landed after the
//! effect.
//!
//! Each effect pauses 400 ms after it is written and before the attempt's outcome, inside the
//! fenced transaction for the fenced ones, so that the kills and stops land between effect and
//! outcome. Leases are 1 s; one worker is never disturbed (it starts first, so it leads the
//! maintenance and its rescuer runs throughout), two others are, in turn. On every rig, SQLite
//! poll-only included: there a worker stopped inside its fenced transaction holds the database's
//! one write lock while it is stopped (1.8 s here), and the other workers wait for it.
//!
//! A stop lands on a worker holding a fenced claim, and on PostgreSQL on a handler inside its
//! fenced transaction, and lasts until the rescuer has taken that claim over. Resumed, the
//! zombie's late write must change nothing, every time: either its commit is refused by the fence
//! (noted as the rescued attempt's `stale_outcome`), or its heartbeat finds the claim lost first
//! and the attempt is abandoned with its transaction. Which one comes first is the runtime's
//! choice at SIGCONT (both timers have expired), so the run reports how many of each and does not
//! require a refusal; the refusal itself is tested deterministically by
//! `store-postgres/tests/fenced.rs`. On SQLite nobody can take the claim over while the zombie
//! holds the write lock, so its commit usually applies.

#![cfg(unix)]

mod common;
mod rig;

use std::cell::Cell;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use rig::{Proc, Rig, RigKind, SIGKILL, poll};

/// Operations of each flavour, fenced and unfenced, in one wave of work.
const WAVE: i64 = 4;

/// Waves enqueued at least (so that a run whose faults all came early still ends many operations
/// under them) and at most (so that a run whose faults cannot land still ends).
const WAVES: (i64, i64) = (15, 100);

/// Operations left unended below which another wave is enqueued: about three seconds of the
/// three workers' work, the longest a fault waits for its victim to hold the right claim. On
/// SQLite two waves: there the fenced operations run one at a time (each holds the write lock
/// through its pause), and a long queue of them keeps every other writer waiting.
const BACKLOG: (i64, i64) = (6 * 2 * WAVE, 2 * 2 * WAVE);

/// Enqueues a wave of `payload`, as a producer would: a transient failure is tried again (up to
/// ten times, 200 ms apart). On SQLite the fenced transactions hold the one write lock through
/// their 400 ms pauses, one after another, and an enqueue in a CI run once waited past its 5 s
/// busy timeout ("database is locked", transient): nothing was written, so trying again
/// enqueues the wave once.
fn enqueue_wave(rig: &Rig, payload: &str) {
    for _ in 0..10 {
        match rig.try_enqueue_count("demo.effect", payload, WAVE) {
            Ok(()) => return,
            Err(err) => assert!(err.contains("(transient)"), "enqueue of {payload}: {err}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("the enqueue of a wave of {payload} failed ten times");
}

/// The workers' flags: short leases, a few handlers each, and at most one operation claimed
/// ahead, so that no worker's claim buffer takes a whole wave (8 operations) and the victims
/// hold claims when the faults come (with the default buffer, on SQLite poll-only, the steady
/// worker took whole waves and a run could end with too few faults).
const FLAGS: &[&str] = &[
    "--lease",
    "1s",
    "--concurrency",
    "2",
    "--claim-ahead-max",
    "1",
];

/// Waits (3 s at most) until the worker named `prefix` holds a running claim beside others (not
/// a suspect's isolated one: cutting those again and again would end the operation dead after its
/// four attempts, and this test counts the effects of operations that all succeed), and with
/// `fenced`, a claim of a fenced operation: a kill then cuts a fenced attempt. Before kills
/// waited for any claim, and on SQLite poll-only (where a stop cannot cut a fenced attempt: the
/// zombie holds the one write lock, and its commit applies) three kills could all land on
/// workers holding only unfenced claims (a CI run: "no fenced attempt was cut").
/// `work` is called as it waits, to keep work coming.
fn holds_claims(rig: &Rig, prefix: &str, fenced: bool, work: &dyn Fn()) -> bool {
    let only_fenced = if fenced {
        "AND (payload ->> 'fenced') IS NOT NULL"
    } else {
        ""
    };
    poll(Duration::from_secs(3), Duration::from_millis(5), || {
        work();
        let held = rig.scalar(&format!(
            "SELECT count(*) FROM operations WHERE status = 'running' AND NOT isolated \
             AND worker_id LIKE '{prefix}-%' {only_fenced}"
        ));
        (held > 0).then_some(())
    })
    .is_some()
}

/// Whether the worker named `prefix` (`fe`: any of this test's workers) runs a suspect's isolated
/// claim. A kill or a stop then would count toward its crash loop, and this test's operations
/// must all succeed: the worker is stopped first (SIGSTOP, so that it cannot take such a claim
/// between the look and the fault) and resumed untouched when it does.
fn runs_isolated(rig: &Rig, prefix: &str) -> bool {
    rig.scalar(&format!(
        "SELECT count(*) FROM operations WHERE status = 'running' AND isolated \
         AND worker_id LIKE '{prefix}-%'"
    )) > 0
}

fn fenced_effects_under_kills_and_stops(kind: RigKind) {
    let rig = Rig::new(kind, "fenced_effects_under_kills_and_stops");
    let mut steady = rig.worker("fe-steady", FLAGS);
    steady.wait_until_up();
    let mut victims: Vec<(String, Proc)> = (0..2)
        .map(|n| {
            let name = format!("fe-v{n}");
            let w = rig.worker(&name, FLAGS);
            (name, w)
        })
        .collect();
    for (_, w) in &mut victims {
        w.wait_until_up();
    }
    // Enqueued once every worker listens, so that each broker spreads the work over all three
    // (the first AMQP consumer would otherwise prefetch the whole backlog), and a wave or two at a
    // time whenever fewer than BACKLOG operations are left unended, so that work lasts through
    // every kill and stop however long they take (a stop can last several seconds: until the
    // rescuer has taken the zombie's claims and its late write came). Fifteen waves enqueued up
    // front on a timetable could all end before the faults did: on SQLite poll-only the steady
    // worker, which claims again as soon as an attempt ends while the victims wait for their next
    // poll, once ran 98 of the 120 operations, and the run ended with one kill and one stop.
    let waves = Cell::new(0i64);
    let ended = || {
        rig.scalar(
            "SELECT count(*) FROM operations WHERE status IN ('succeeded', 'dead', 'cancelled')",
        )
    };
    let backlog = if kind == RigKind::SqlitePoll {
        BACKLOG.1
    } else {
        BACKLOG.0
    };
    let looked = Cell::new(None::<Instant>);
    let top_up = || {
        if looked
            .get()
            .is_some_and(|at| at.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        looked.set(Some(Instant::now()));
        // Two waves at most at a time: the workers drain as the test enqueues.
        for _ in 0..2 {
            if waves.get() >= WAVES.1 || 2 * WAVE * waves.get() - ended() >= backlog {
                break;
            }
            for payload in [
                r#"{"fenced": true, "sleep_after_ms": 400}"#,
                r#"{"sleep_after_ms": 400}"#,
            ] {
                enqueue_wave(&rig, payload);
            }
            waves.set(waves.get() + 1);
        }
    };
    top_up();
    let (mut kills, mut stops, mut started) = (0, 0, 2);
    // What became of the zombies' late writes (PostgreSQL): refused by the fence, abandoned.
    let (mut late, mut abandoned) = (0i64, 0i64);
    // Three kills and three stops, in turn: each kill of a victim holding a fenced claim, each
    // stop of one holding claims.
    let chaos_until = Instant::now() + Duration::from_secs(80);
    let mut round = 0usize;
    // Which victim to try: the round's, shifted past one that holds nothing. A worker may hold
    // nothing for a while (while the two others take the new work first, which one claim ahead
    // each still allows), so the test turns to the other victim instead of waiting.
    let mut shift = 0usize;
    // On PostgreSQL, stops go on until a zombie's late write has been refused, so that the run
    // usually shows the fence at work beside the abandons: the zombie races its own heartbeat,
    // which may find the claim lost first and abandon the attempt.
    let wants_late = kind != RigKind::SqlitePoll;
    while (kills + stops < 6 || (wants_late && late == 0 && stops < 12))
        && Instant::now() < chaos_until
    {
        top_up();
        let (name, w) = &mut victims[(round / 2 + shift) % 2];
        if !holds_claims(&rig, name, round.is_multiple_of(2), &top_up) {
            shift += 1;
            continue;
        }
        if round.is_multiple_of(2) {
            w.signal("STOP");
            if runs_isolated(&rig, name) {
                w.signal("CONT");
                shift += 1;
                continue;
            }
            assert_eq!(w.sigkill().signal(), Some(SIGKILL), "{name}");
            kills += 1;
            *name = format!("fe-v{started}");
            started += 1;
            *w = rig.worker(name, FLAGS);
        } else {
            match zombie(&rig, kind, name, w, &top_up) {
                Some(what) => {
                    late += i64::from(what == Some(Late::Refused));
                    abandoned += i64::from(what == Some(Late::Abandoned));
                    stops += 1;
                }
                // No handler of this worker entered a fenced transaction: try the other.
                None => {
                    shift += 1;
                    continue;
                }
            }
        }
        round += 1;
        std::thread::sleep(Duration::from_millis(150));
    }
    // The rest of the work, at least WAVES.0 waves, runs out beside the faults' aftermath.
    while waves.get() < WAVES.0 {
        top_up();
        std::thread::sleep(Duration::from_millis(100));
    }
    let ops = WAVE * waves.get();
    let all_ended = poll(Duration::from_secs(40), Duration::from_millis(100), || {
        (ended() == 2 * ops).then_some(())
    });
    assert!(
        all_ended.is_some(),
        "not every operation ended: {:?}",
        rig.statuses()
    );
    for w in std::iter::once(&mut steady).chain(victims.iter_mut().map(|(_, w)| w)) {
        w.sigterm();
        let Some(status) = w.wait_for_exit(Duration::from_secs(15)) else {
            panic!("{} did not stop after SIGTERM", w.name);
        };
        assert!(status.success(), "{}: {status}", w.name);
    }
    assert!(kills >= 2 && stops >= 2, "kills {kills}, stops {stops}");
    // Should one not succeed, its story says which rule ended it (a CI run once found one dead).
    let unsucceeded: Vec<_> = rig
        .counts("SELECT CAST(id AS TEXT), 1 FROM operations WHERE status <> 'succeeded'")
        .into_iter()
        .map(|(id, _)| {
            let story = rig.history(&id);
            (id, story)
        })
        .collect();
    assert_eq!(
        rig.statuses(),
        [("succeeded".to_owned(), 2 * ops)],
        "(status, reason, attempt outcomes, attempt workers) of those that did not succeed: \
         {unsucceeded:?}"
    );

    let fenced = "(o.payload ->> 'fenced') IS NOT NULL";
    let of = |flavour: &str, what: &str| {
        rig.scalar(&format!(
            "SELECT CAST(coalesce({what}, 0) AS BIGINT) FROM operations o \
             JOIN demo_effects e ON e.effect_key = o.remote_id WHERE {flavour}"
        ))
    };
    // Exactly once: one effect row per fenced operation, and one call each.
    assert_eq!(of(fenced, "count(*)"), ops, "fenced effect rows");
    assert_eq!(of(fenced, "sum(e.calls)"), ops, "fenced calls");
    assert_eq!(
        of(fenced, "sum(CASE WHEN e.calls <> 1 THEN 1 ELSE 0 END)"),
        0
    );
    // The faults reached fenced work: attempts of fenced operations vanished (cut by a kill, or
    // rescued from a stopped worker), and every zombie's late write was refused or abandoned
    // (checked at each stop); each refusal is noted on its rescued attempt.
    let cut = |outcome_filter: &str| {
        rig.scalar(&format!(
            "SELECT count(*) FROM operation_attempts a JOIN operations o ON o.id = a.operation_id \
             WHERE {fenced} AND {outcome_filter}"
        ))
    };
    let vanished = cut("a.outcome = 'vanished'");
    let refused = cut("a.stale_outcome IS NOT NULL");
    assert!(vanished >= 1, "no fenced attempt was cut");
    if wants_late {
        assert!(refused >= late, "late {late}, refused {refused}");
    }
    // At least once without the fence: every unfenced operation's effect, some perhaps twice.
    let plain = "(o.payload ->> 'fenced') IS NULL";
    // Seen once in about twenty local runs of postgres_amqp (not reproduced in ten more): the
    // unfenced operations without their effect row, and their attempts, say what happened.
    assert_eq!(
        of(plain, "count(*)"),
        ops,
        "unfenced effect rows; the unfenced operations without one, and their attempts:\n{:#?}",
        rig.counts(&format!(
            "SELECT CAST(o.id AS TEXT) || ' ' || o.status || ', remote id ' || \
             coalesce(o.remote_id, '-') || ', attempts ' || CAST(o.attempt AS TEXT) || \
             ', vanished ' || CAST((SELECT count(*) FROM operation_attempts a \
             WHERE a.operation_id = o.id AND a.outcome = 'vanished') AS TEXT), \
             CAST(1 AS BIGINT) \
             FROM operations o LEFT JOIN demo_effects e ON e.effect_key = o.remote_id \
             WHERE {plain} AND e.effect_key IS NULL"
        ))
    );
    let plain_calls = of(plain, "sum(e.calls)");
    assert!(plain_calls >= ops, "{plain_calls}");
    rig.report(&format!(
        "{kills} SIGKILLs and {stops} SIGSTOP/SIGCONTs of workers at 1 s leases, {ops} fenced and \
         {ops} unfenced operations, all succeeded; fenced: {vanished} attempts cut, {refused} late \
         outcomes refused ({late} from a zombie resumed after its claim's rescue, {abandoned} zombies \
         abandoned theirs first), {ops} calls for {ops} operations (exactly once); unfenced: \
         {plain_calls} calls for {ops} operations"
    ));
}

mod fenced_effects_under_kills_and_stops {
    #[test]
    fn postgres_redis() {
        super::fenced_effects_under_kills_and_stops(super::RigKind::PostgresRedis);
    }
    #[test]
    fn postgres_amqp() {
        super::fenced_effects_under_kills_and_stops(super::RigKind::PostgresAmqp);
    }
    #[test]
    fn sqlite_poll() {
        super::fenced_effects_under_kills_and_stops(super::RigKind::SqlitePoll);
    }
}

/// The fenced operations the worker named `prefix` holds running claims on (the oldest first):
/// each one's id and claim token, as text.
fn fenced_claims(rig: &Rig, prefix: &str) -> Vec<(String, String)> {
    rig.counts(&format!(
        "SELECT CAST(id AS TEXT) || ' ' || CAST(claim_token AS TEXT), CAST(1 AS BIGINT) \
         FROM operations WHERE status = 'running' AND NOT isolated \
         AND worker_id LIKE '{prefix}-%' AND (payload ->> 'fenced') IS NOT NULL \
         ORDER BY claimed_at"
    ))
    .into_iter()
    .filter_map(|(s, _)| {
        s.split_once(' ')
            .map(|(id, token)| (id.to_owned(), token.to_owned()))
    })
    .collect()
}

/// How many of `claims` (id, claim token) have an attempt ended with `outcome`.
fn attempts_where(rig: &Rig, claims: &[(String, String)], outcome: &str) -> usize {
    claims
        .iter()
        .filter(|(id, token)| {
            rig.scalar(&format!(
                "SELECT count(*) FROM operation_attempts WHERE operation_id = '{id}' \
                 AND CAST(claim_token AS TEXT) = '{token}' AND {outcome}"
            )) == 1
        })
        .count()
}

/// What became of a zombie's late write, once resumed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Late {
    /// Its fenced transaction committed and the fence refused the outcome (noted on the rescued
    /// attempt as its `stale_outcome`): the effect rolled back with it.
    Refused,
    /// Its heartbeat found the claim lost first and the attempt was abandoned, its fenced
    /// transaction dropped (rolled back) before the commit.
    Abandoned,
}

/// The session's query shape of a handler stopped inside its fenced transaction, between its
/// effect and its outcome: idle in a transaction whose last statement wrote the effect.
const INSIDE_FENCE: &str =
    "state = 'idle in transaction' AND query LIKE 'INSERT INTO demo_effects%'";

/// Stops the worker `w` (named `name`) while one of its handlers is inside a fenced transaction,
/// between its effect and its outcome, keeps it stopped until the rescuer has taken each of its
/// fenced claims over (the lease is 1 s; up to 30 s allowed), then resumes it as a zombie, and
/// waits for what became of its late write: refused by the fence, or abandoned unwritten. `None`
/// when no handler of the worker was stopped inside a fenced transaction (it is resumed at once).
/// `work` is called while it waits for a handler to enter one, to keep work coming.
///
/// On PostgreSQL the worker's sessions carry its name, and a handler inside its fenced transaction
/// adds its operation's id, so the stop waits for one of them to be idle in a transaction whose
/// last statement wrote the effect (the handler then sleeps 400 ms before its outcome), checks
/// again once the process is stopped (it cannot move then), and follows those operations only: a
/// claim still waiting in the worker's buffer would only be skipped on resume, with no late write.
/// Resumed, the handler's commit races its heartbeat: at SIGCONT the handler's timer and the
/// heartbeat's have both expired, and the runtime may fire either first. The commit is refused by
/// the fence, or the heartbeat finds the claim lost and the attempt is abandoned with its
/// transaction; either way the zombie logs a stale claim naming the operation, and its write
/// changes nothing. Never may it apply.
///
/// On SQLite the rescue cannot happen while the zombie is stopped inside its fenced transaction
/// (it holds the database's one write lock): it is stopped while it holds claims and resumed
/// after 1.8 s regardless, and its commit then applies (its claim token is still the
/// current one).
fn zombie(
    rig: &Rig,
    kind: RigKind,
    name: &str,
    w: &mut Proc,
    work: &dyn Fn(),
) -> Option<Option<Late>> {
    if kind == RigKind::SqlitePoll {
        w.signal("STOP");
        // Not while any worker runs a suspect's isolated claim, this one or another: stopped
        // while it holds the database's one write lock, this worker holds back every other
        // worker's heartbeats past their 1 s leases, and the rescuer then finds their claims
        // lapsed. A CI run ended an operation dead so (crash loop): its three isolated attempts
        // lapsed on workers that were not stopped, each after a heartbeat that had waited.
        if runs_isolated(rig, "fe") {
            w.signal("CONT");
            return None;
        }
        std::thread::sleep(Duration::from_millis(1800));
        w.signal("CONT");
        return Some(None);
    }
    // The operations whose fenced transactions the worker's handlers are inside, between effect
    // and outcome: the demo handler names each in its session (`<name> op <id>`).
    let inside = || -> Vec<String> {
        rig.counts(&format!(
            "SELECT substr(application_name, {}), CAST(1 AS BIGINT) FROM pg_stat_activity \
             WHERE application_name LIKE '{name} op %' AND {INSIDE_FENCE}",
            name.len() + " op ".len() + 1
        ))
        .into_iter()
        .map(|(id, _)| id)
        .collect()
    };
    // Not while the worker runs a suspect's isolated claim: rescued again and again, it would
    // end dead (crash loop), and every operation here must succeed.
    let isolated = || runs_isolated(rig, name);
    let entered = poll(Duration::from_secs(3), Duration::from_millis(2), || {
        work();
        (!inside().is_empty() && !isolated()).then_some(())
    });
    entered?;
    w.signal("STOP");
    // Looked at again with the process stopped (it cannot move then): the handler may have
    // committed between the look and the stop, or the fenced transaction was an isolated
    // claim's. Only the claims inside a fence are followed: one still waiting in the buffer is
    // only skipped on resume, with no late write, and one inside a fence whose lease had lapsed
    // before the stop (a heartbeat late on a loaded machine) is rescued already, so it is not
    // among the worker's claims (a CI run followed only a buffered claim then, and waited for
    // its late write in vain).
    let now_inside = inside();
    let claims: Vec<(String, String)> = fenced_claims(rig, name)
        .into_iter()
        .filter(|(id, _)| now_inside.contains(id))
        .collect();
    if claims.is_empty() || isolated() {
        w.signal("CONT");
        return None;
    }
    // 30 s: the stopped worker may be the maintenance leader (its 6 s lease must lapse before
    // another worker rescues), and on a machine whose disk stalls a statement can take 10 s.
    let rescued = poll(Duration::from_secs(30), Duration::from_millis(10), || {
        (attempts_where(rig, &claims, "outcome = 'vanished'") == claims.len()).then_some(())
    });
    // What the zombie logs from here on is what it did once resumed.
    let before = w.stderr().len();
    w.signal("CONT");
    assert!(
        rescued.is_some(),
        "{name}'s fenced claims {claims:?} were not all rescued while it was stopped"
    );
    let late = poll(Duration::from_secs(15), Duration::from_millis(10), || {
        if attempts_where(rig, &claims, "stale_outcome IS NOT NULL") > 0 {
            return Some(Late::Refused);
        }
        let log = w.stderr();
        log.get(before..)
            .unwrap_or_default()
            .lines()
            .any(|l| {
                l.contains("stale claim: the lease was taken over; abandoning the attempt")
                    && claims.iter().any(|(id, _)| l.contains(id.as_str()))
            })
            .then_some(Late::Abandoned)
    });
    let Some(late) = late else {
        panic!(
            "{name} was stopped inside the fenced transaction of one of {claims:?}; resumed after \
             their rescue, it neither had its late write refused nor abandoned the attempt:\n{}",
            w.stderr()
        );
    };
    Some(Some(late))
}
