//! Property tests (a fuzzer that runs in CI without nightly) of the policy specs `oprec simulate`
//! takes (`fixed:60s`, `ladder:0,60,300`, `exp:60s,2,1h[,jitter=..][,max=..][,giveup=..]`): no
//! text panics, either at parsing or when the parsed policy's ladder, jitter and retry decision are
//! used; a refusal quotes the spec and the forms; the plain forms round-trip to their rungs.
//! Failing inputs are kept in `policy_spec_fuzz.proptest-regressions` beside this file.

use chrono::{Duration, TimeZone, Utc};
use oprec_core::{ClaimContext, FailureClass};
use oprec_sim::PolicySpec;
use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Specs of the three forms with numbers and options of every size, and any text at all.
fn spec_text() -> impl Strategy<Value = String> {
    let num = "[0-9]{1,22}(s|m|h|d|ms|y)?";
    prop_oneof![
        num.prop_map(|n| format!("fixed:{n}")),
        proptest::collection::vec(num, 0..6).prop_map(|r| format!("ladder:{}", r.join(","))),
        (
            num,
            "-?[0-9.eE+-]{1,8}|NaN|inf|-inf",
            num,
            "(,(jitter=(full|equal|none|-?[0-9.eE]{1,6}|NaN|inf)|max=-?[0-9]{1,12}|giveup=[0-9]{1,12}[smhd]?|x=1)){0,3}",
        )
            .prop_map(|(b, f, c, opts)| format!("exp:{b},{f},{c}{opts}")),
        "(fixed|ladder|exp)?:?\\PC{0,30}",
        ".{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn specs_never_panic_and_parsed_policies_run(spec in spec_text(), seed in any::<u64>()) {
        match spec.parse::<PolicySpec>() {
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("bad policy") && msg.contains("forms:"), "{}", msg);
            }
            Ok(p) => {
                let mut rng = StdRng::seed_from_u64(seed);
                let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
                let ladder = p.policy.ladder();
                for attempt in [0, 1, 2, 3, 10, 40, 1000, u32::MAX] {
                    for class in [FailureClass::Transient, FailureClass::RateLimited] {
                        if let Some(d) = ladder.delay_before(attempt, class) {
                            prop_assert!(d >= Duration::zero(), "negative rung {d}");
                            let drawn = ladder.jitter().apply(d, &mut rng);
                            prop_assert!(drawn >= Duration::zero(), "negative draw {drawn}");
                        }
                        let claim = ClaimContext { attempt, max_attempts: None, give_up_at: None, snoozes: 0, unknowns: 0 };
                        let _ = p.policy.retry_at(&claim, class, None, now, &mut rng);
                    }
                }
            }
        }
    }

    #[test]
    fn fixed_and_ladder_specs_round_trip(
        first in 0i64..100_000,
        rest in proptest::collection::vec(1i64..100_000, 0..7),
    ) {
        // The first rung (the wait before the first attempt) may be zero; a zero delay before a
        // retry is refused (`zero_delays_after_the_first_rung_are_refused` below).
        let rungs: Vec<i64> = std::iter::once(first).chain(rest).collect();
        let text: Vec<String> = rungs.iter().map(|r| format!("{r}s")).collect();
        let p: PolicySpec = format!("ladder:{}", text.join(",")).parse().unwrap();
        for (i, r) in rungs.iter().enumerate() {
            prop_assert_eq!(
                p.policy.ladder().delay_before(i as u32 + 1, FailureClass::Transient),
                Some(Duration::seconds(*r))
            );
        }
        let every = rungs[0] + 1;
        let p: PolicySpec = format!("fixed:{every}m").parse().unwrap();
        prop_assert_eq!(
            p.policy.ladder().delay_before(5, FailureClass::Transient),
            Some(Duration::minutes(every))
        );
    }
}

#[test]
fn zero_delays_after_the_first_rung_are_refused() {
    for spec in ["ladder:0s,0s", "ladder:5s,0s", "ladder:0s,60s,0s"] {
        let e = spec.parse::<PolicySpec>().unwrap_err().to_string();
        assert!(
            e.starts_with("bad policy") && e.contains("retries at once"),
            "{spec}: {e}"
        );
    }
    assert!("ladder:0s,60s".parse::<PolicySpec>().is_ok());
}
