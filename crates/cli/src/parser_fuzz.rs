//! Property tests (a fuzzer that runs in CI without nightly) of the one value only this binary
//! reads: the demo's `--demo-ladder`. No text may panic; a ladder is accepted or refused with a
//! message that names the flag; written ladders read back. (Durations, times, paces and filters
//! are the operator library's grammar, fuzzed in `crates/ops/tests/grammar_fuzz.rs`.)

use proptest::prelude::*;

use crate::duration;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn ladder_flags_never_panic(text in "[0-9, -]{0,30}|\\PC{0,40}|[0-9]{1,25}(,[0-9]{1,25}){0,5}") {
        if let Err(e) = duration::ladder("--demo-ladder", &text) {
            prop_assert!(e.0.starts_with("--demo-ladder"), "the message names no flag: {}", e.0);
            prop_assert!(e.0.len() < 400, "the message is {} bytes long", e.0.len());
        }
    }

    #[test]
    fn ladders_round_trip(rungs in proptest::collection::vec(0u32..=u32::MAX, 1..10)) {
        let text = rungs.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let want: Vec<i64> = rungs.iter().map(|r| i64::from(*r)).collect();
        prop_assert_eq!(duration::ladder("--demo-ladder", &text).unwrap(), want);
    }
}
