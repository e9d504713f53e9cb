//! Property tests (a fuzzer that runs in CI without nightly) of what operators type, in every
//! front end: durations and times, re-drive's rate and spread, and the filter fields. No text may
//! panic; a value is either accepted or refused with a message that names the field as the front
//! end spells it; round-trips hold where a value has a printed form. Inputs that failed are kept
//! in `grammar_fuzz.proptest-regressions` and run first from then on.

use chrono::{DateTime, Duration, TimeZone, Utc};
use oprec_ops::filter::{self, FilterInput, MAX_SEARCH};
use oprec_ops::{Pace, Spelling, time};
use proptest::prelude::*;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
}

/// Text shaped like a duration, a time or a rate, with numbers of every size — the inputs most
/// likely to overflow — and any text at all.
fn operator_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,25}(ns|us|ms|s|m|min|h|d|w|M|y|years)?",
        "[0-9]{1,20}(y|d|h|m|s) ?[0-9]{0,20}(ms|s|m|h)?",
        "-?[0-9.eE+-]{1,12}/(s|sec|m|min|h|d|)",
        "(inf|NaN|-inf|1e308|1e-308|0.0|-0)/(s|m|h)",
        "[0-9]{4,6}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})",
        "[0-9]{4,6}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}",
        "[0-9, -]{0,30}",
        "\\PC{0,40}",
        ".{0,40}",
        "[0-9a-z%]{300,3000}",
    ]
}

fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![Just(Spelling::Flags), Just(Spelling::Fields)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn durations_and_times_never_panic(text in operator_text()) {
        for result in [
            time::duration("--delay", &text).map(|_| ()),
            time::positive_duration("--lease", &text).map(|_| ()),
            time::deadline("--deadline", &text, now()).map(|_| ()),
            time::ago("--since", &text, now()).map(|_| ()),
            time::future("--until", &text, now()).map(|_| ()),
        ] {
            if let Err(e) = result {
                prop_assert!(e.0.starts_with("--"), "the message names no field: {}", e.0);
                // The value is quoted cut short, never echoed whole.
                prop_assert!(e.0.len() < 400, "the message is {} bytes long", e.0.len());
            }
        }
    }

    #[test]
    fn whole_seconds_round_trip(secs in 0u64..10_000_000_000) {
        prop_assert_eq!(
            time::duration("--delay", &format!("{secs}s")).unwrap(),
            Duration::seconds(secs as i64)
        );
    }

    #[test]
    fn human_durations_parse_back(ms in 0i64..1_000_000_000_000) {
        // Above a minute `human` keeps whole seconds; below, milliseconds.
        let d = Duration::milliseconds(ms);
        let back = time::duration("--delay", &time::human(d)).unwrap();
        let kept = if ms >= 60_000 { ms / 1000 * 1000 } else { ms };
        prop_assert_eq!(back, Duration::milliseconds(kept));
    }

    #[test]
    fn rate_and_spread_never_panic(
        text in operator_text(),
        total in 0u64..u64::MAX,
        spelling in spelling(),
    ) {
        let label = spelling.label("");
        for pace in [
            Pace::parse(spelling, Some(&text), None),
            Pace::parse(spelling, None, Some(&text)),
        ] {
            match pace {
                Ok(p) => {
                    let spacing = p.spacing(total);
                    prop_assert!(spacing >= Duration::zero());
                    let _ = p.describe(total);
                    let _ = p.to_json(total);
                }
                Err(e) => prop_assert!(
                    e.0.starts_with(label.as_str()) && (e.0.contains("rate") || e.0.contains("spread")),
                    "no field named: {}", e.0
                ),
            }
        }
    }

    #[test]
    fn filter_fields_never_panic(
        kind in "\\PC{0,250}|.{0,20}",
        class in "\\PC{0,20}",
        text in ".{0,1100}",
        dependency in ".{0,40}",
        id in "\\PC{0,40}|[0-9a-fA-F-]{36}",
        since in operator_text(),
        spelling in spelling(),
    ) {
        let input = FilterInput {
            kinds: vec![kind],
            classes: vec![class],
            error_contains: Some(text),
            dependency: Some(dependency),
            ids: vec![id],
            since: Some(since),
            ..FilterInput::default()
        };
        match input.check(spelling, now()) {
            Ok(f) => {
                for name in f.kinds.iter().chain(&f.dependency) {
                    prop_assert!(!name.is_empty() && name.trim() == name);
                    prop_assert!(!name.chars().any(char::is_control));
                    prop_assert!(name.chars().count() <= filter::MAX_NAME);
                }
                prop_assert!(f.error_contains.is_some_and(|t| t.chars().count() <= MAX_SEARCH));
            }
            Err(e) => {
                if spelling == Spelling::Flags {
                    prop_assert!(e.0.starts_with("--") || e.0.starts_with("at most"), "no flag named: {}", e.0);
                }
                prop_assert!(e.0.len() < 600, "the message is {} bytes long", e.0.len());
            }
        }
    }

    #[test]
    fn ids_round_trip(raw in any::<u128>()) {
        let id = oprec_core::OperationId::from_uuid(uuid::Uuid::from_u128(raw));
        prop_assert_eq!(filter::id("--id", &id.to_string()).unwrap(), id);
    }
}
