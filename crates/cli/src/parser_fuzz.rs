//! Property tests (a fuzzer that runs in CI without nightly) of what operators type: the
//! duration and time flags (`--delay`, `--deadline`, `--since`, `--until`, `--outage`, ...), the
//! ladder flag, re-drive's `--rate`/`--spread` and the filter flags. No text may panic; a value is
//! either accepted or refused with a message that names the flag; round-trips hold where a value
//! has a printed form. Inputs that failed are kept in `proptest-regressions/parser_fuzz.txt` and
//! run first from then on.

use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;

use crate::duration;
use crate::filter::{self, FilterArgs};
use crate::pace::Pace;

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
        "[0-9, -]{0,30}",
        "\\PC{0,40}",
        ".{0,40}",
        "[0-9a-z%]{300,3000}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn duration_flags_never_panic(text in operator_text()) {
        for result in [
            duration::parse("--delay", &text).map(|_| ()),
            duration::parse_positive("--lease", &text).map(|_| ()),
            duration::deadline("--deadline", &text, now()).map(|_| ()),
            duration::ago("--since", &text, now()).map(|_| ()),
            duration::future("--until", &text, now()).map(|_| ()),
            duration::ladder("--demo-ladder", &text).map(|_| ()),
        ] {
            if let Err(e) = result {
                prop_assert!(e.0.starts_with("--"), "the message names no flag: {}", e.0);
                // The value is quoted cut short, never echoed whole.
                prop_assert!(e.0.len() < 400, "the message is {} bytes long", e.0.len());
            }
        }
    }

    #[test]
    fn whole_seconds_round_trip(secs in 0u64..10_000_000_000) {
        prop_assert_eq!(
            duration::parse("--delay", &format!("{secs}s")).unwrap(),
            Duration::seconds(secs as i64)
        );
    }

    #[test]
    fn human_durations_parse_back(ms in 0i64..1_000_000_000_000) {
        // Above a minute `human` keeps whole seconds; below, milliseconds.
        let d = Duration::milliseconds(ms);
        let back = duration::parse("--delay", &duration::human(d)).unwrap();
        let kept = if ms >= 60_000 { ms / 1000 * 1000 } else { ms };
        prop_assert_eq!(back, Duration::milliseconds(kept));
    }

    #[test]
    fn ladders_round_trip(rungs in proptest::collection::vec(0u32..=u32::MAX, 1..10)) {
        let text = rungs.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let want: Vec<i64> = rungs.iter().map(|r| i64::from(*r)).collect();
        prop_assert_eq!(duration::ladder("--demo-ladder", &text).unwrap(), want);
    }

    #[test]
    fn rate_and_spread_never_panic(text in operator_text(), total in 0u64..u64::MAX) {
        for pace in [Pace::from_flags(Some(&text), None), Pace::from_flags(None, Some(&text))] {
            match pace {
                Ok(p) => {
                    let spacing = p.spacing(total);
                    prop_assert!(spacing >= Duration::zero());
                    let _ = p.describe(total);
                    let _ = p.to_json(total);
                }
                Err(e) => prop_assert!(e.0.starts_with("--"), "no flag named: {}", e.0),
            }
        }
    }

    #[test]
    fn filter_flags_never_panic(
        kind in "\\PC{0,250}|.{0,20}",
        class in "\\PC{0,20}",
        text in ".{0,1100}",
        dependency in ".{0,40}",
        id in "\\PC{0,40}|[0-9a-fA-F-]{36}",
    ) {
        let args = FilterArgs {
            kinds: vec![kind],
            classes: vec![class],
            error_contains: Some(text),
            dependency: Some(dependency),
            ids: vec![id],
            limit: Some(1),
        };
        match args.filter() {
            Ok(f) => {
                for name in f.kinds.iter().chain(&f.dependency) {
                    prop_assert!(!name.is_empty() && name.trim() == name);
                    prop_assert!(!name.chars().any(char::is_control));
                    prop_assert!(name.chars().count() <= 200);
                }
                prop_assert!(f.error_contains.is_some_and(|t| t.chars().count() <= filter::MAX_SEARCH));
            }
            Err(e) => prop_assert!(e.0.starts_with("--"), "no flag named: {}", e.0),
        }
    }

    #[test]
    fn ids_round_trip(raw in any::<u128>()) {
        let id = oprec::OperationId::from_uuid(uuid::Uuid::from_u128(raw));
        prop_assert_eq!(filter::id("--id", &id.to_string()).unwrap(), id);
    }
}
