//! Payload text as a person or a legacy queue gives it: parsed as JSON, with integers kept exact.
//! A JSON integer wider than 64 bits (an order number of 30 digits, a 128-bit id) would become
//! a floating-point number in the stored payload, silently changed; it is refused instead, with
//! its position and the remedy (send it as a string).

use serde_json::Value;

use crate::InputError;

/// Parses `text` (named `source` in errors) as a JSON payload. Refuses invalid JSON and integer
/// literals that fit neither `i64` nor `u64`.
pub fn parse(source: &str, text: &str) -> Result<Value, InputError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| InputError(format!("{source} is not valid JSON: {e}")))?;
    if let Some((offset, literal)) = wide_integer(text) {
        return Err(InputError(format!(
            "{source} holds the integer {} (at byte {offset}), wider than 64 bits: stored as JSON \
             it would become an approximate floating-point number; send it as a string \
             (\"{}\") to keep it exact",
            crate::cut(literal, 48),
            crate::cut(literal, 48),
        )));
    }
    Ok(value)
}

/// Whether two payloads are the same effect's input: equal as JSON values, numbers compared by
/// value (a store may give `1e2` back as `100`, and `1.0` as `1`), object keys in any order. An
/// idempotency key met again with a payload that is not the same is a conflict, not a repeat.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), ..) => x == y,
                (.., Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The first integer literal of valid JSON `text` outside strings that fits neither `i64` nor
/// `u64`, with its byte offset.
fn wide_integer(text: &str) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string, escapes included.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let literal = &text[start..i];
                let integer = !literal.contains(['.', 'e', 'E']);
                if integer && literal.parse::<i64>().is_err() && literal.parse::<u64>().is_err() {
                    return Some((start, literal));
                }
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn payloads_are_the_same_by_value_not_by_spelling() {
        use serde_json::json;
        let v = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        assert!(super::same(
            &v(r#"{"a":1e2,"b":[1.0]}"#),
            &json!({"b": [1], "a": 100})
        ));
        assert!(!super::same(&json!({"a": 1}), &json!({"a": 2})));
        assert!(!super::same(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!super::same(&json!({"a": "1"}), &json!({"a": 1})));
        assert!(!super::same(&json!(u64::MAX), &json!(-1)));
    }

    use super::*;

    #[test]
    fn integers_of_64_bits_and_floats_pass() {
        for ok in [
            r#"{"a": 9223372036854775807, "b": -9223372036854775808}"#,
            r#"{"u": 18446744073709551615}"#,
            r#"[1.5, 1e300, -2.5E-10, 0]"#,
            r#"{"s": "123456789012345678901234567890", "e": "\"9999999999999999999999\""}"#,
        ] {
            assert!(parse("p", ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn wider_integers_are_refused_with_their_place() {
        let e = parse(
            "--payload",
            r#"{"id": "x", "order": 123456789012345678901234567890}"#,
        )
        .unwrap_err();
        assert!(e.0.contains("--payload"), "{e}");
        assert!(e.0.contains("123456789012345678901234567890"), "{e}");
        assert!(e.0.contains("at byte 21"), "{e}");
        assert!(e.0.contains("as a string"), "{e}");
        for bad in ["18446744073709551616", "[-9223372036854775809]"] {
            assert!(parse("p", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn invalid_json_is_refused() {
        let e = parse("the body", "{nope").unwrap_err();
        assert!(e.0.starts_with("the body is not valid JSON"), "{e}");
    }
}
