//! Property tests (a fuzzer that runs in CI without nightly) of the wake-up frame decoder: no input
//! makes it panic, every frame it accepts is exactly `1:<canonical lowercase hyphenated uuid>`
//! (so it is what `encode` writes for that id), and every id round-trips. A failing input is kept
//! in `frame_fuzz.proptest-regressions` beside this file and runs first from then on.

use oprec_core::OperationId;
use oprec_core::frame::{MAX_FRAME_BYTES, decode, encode};
use proptest::prelude::*;
use uuid::Uuid;

/// Bytes shaped like a frame: a version, a separator and 36 characters from the UUID alphabet in
/// both cases, with hyphens anywhere — the inputs most likely to slip past a lax parser.
fn frame_like() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![Just("1".to_owned()), "[0-9]{0,3}", "\\PC{0,3}"],
        prop::sample::select(vec![":", ";", "::", ""]),
        prop_oneof![
            "[0-9a-fA-F-]{36}",
            "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}",
            "[0-9a-fA-F{}urn:uid-]{30,40}",
        ],
        prop_oneof![
            prop::sample::select(vec!["", " ", "\n", "\0"]).prop_map(str::to_owned),
            "\\PC{0,2}",
        ],
    )
        .prop_map(|(v, sep, id, tail)| format!("{v}{sep}{id}{tail}").into_bytes())
}

/// Whatever `decode` accepts is the canonical encoding of the id it returns.
fn accepted_only_if_canonical(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(id) = decode(bytes) {
        prop_assert_eq!(
            encode(id),
            bytes.to_vec(),
            "accepted a frame that is not `1:<canonical uuid>`"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
        let result = decode(&bytes);
        if bytes.len() > MAX_FRAME_BYTES || bytes.is_empty() {
            prop_assert!(result.is_err());
        }
        accepted_only_if_canonical(&bytes)?;
    }

    #[test]
    fn frame_shaped_inputs_are_accepted_only_when_canonical(bytes in frame_like()) {
        accepted_only_if_canonical(&bytes)?;
    }

    #[test]
    fn every_id_round_trips(raw in any::<u128>()) {
        let id = OperationId::from_uuid(Uuid::from_u128(raw));
        let frame = encode(id);
        prop_assert!(frame.len() <= MAX_FRAME_BYTES);
        prop_assert_eq!(decode(&frame), Ok(id));
    }

    #[test]
    fn a_damaged_frame_is_refused_or_names_another_id(
        raw in any::<u128>(),
        cut in 0usize..38,
        at in 0usize..38,
        byte in any::<u8>(),
    ) {
        let frame = encode(OperationId::from_uuid(Uuid::from_u128(raw)));
        // Truncated: always refused.
        prop_assert!(decode(&frame[..cut]).is_err(), "accepted a frame cut at {}", cut);
        // One byte changed: refused, or (a hex digit for another) the other id, canonically.
        let mut damaged = frame.clone();
        damaged[at] = byte;
        accepted_only_if_canonical(&damaged)?;
        // Anything appended: refused.
        let mut longer = frame;
        longer.push(byte);
        prop_assert!(decode(&longer).is_err());
    }
}
