//! The query parameters of a transport URL that are oprec's own (which key prefix, group or
//! exchange carries the wake-ups), split off before the URL reaches the broker's driver.

use std::collections::BTreeMap;

use oprec_core::{Error, Result};

use crate::redact_url;

/// Every parameter oprec reads, with the URL kind that takes it. `prefix` is both brokers';
/// `stream` (Redis) and `queue` (AMQP) are its older names.
const OURS: &[(&str, &str)] = &[
    ("prefix", "redis"),
    ("prefix", "amqp"),
    ("stream", "redis"),
    ("group", "redis"),
    ("queue", "amqp"),
    ("queue_expires", "amqp"),
    ("queue_type", "amqp"),
    ("prefetch", "amqp"),
];

/// The parameters the brokers' drivers read from the URL (redis-rs and amq-protocol-uri), with
/// the URL kind that takes them. Anything else is a typo: the drivers would ignore it silently, so
/// `?strem=orders` would quietly mean the shared default stream, and a purge with it would empty
/// someone else's.
const DRIVERS: &[(&str, &str)] = &[
    ("protocol", "redis"),
    ("db", "redis"),
    ("user", "redis"),
    ("pass", "redis"),
    ("frame_max", "amqp"),
    ("channel_max", "amqp"),
    ("heartbeat", "amqp"),
    ("connection_timeout", "amqp"),
    ("auth_mechanism", "amqp"),
];

/// Splits `url` into the URL for the driver (without oprec's parameters; the driver's own and
/// the fragment kept as written) and the values of the parameters `kind` (`"redis"` or `"amqp"`)
/// takes, percent-decoded. A parameter neither oprec nor the driver reads, one for the other
/// kind, an empty value or a repeated parameter is invalid input; messages show the URL redacted.
pub(crate) fn take(url: &str, kind: &str) -> Result<(String, BTreeMap<String, String>)> {
    let invalid = |what: String| Error::InvalidInput(format!("{what} in {}", redact_url(url)));
    let (head, fragment) = match url.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (url, None),
    };
    let Some((base, query)) = head.split_once('?') else {
        return Ok((url.to_owned(), BTreeMap::new()));
    };
    let mut kept = Vec::new();
    let mut taken = BTreeMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some((_, for_kind)) = OURS
            .iter()
            .filter(|(name, _)| *name == key)
            .min_by_key(|(_, k)| *k != kind)
        else {
            if !DRIVERS.iter().any(|(name, k)| *name == key && *k == kind) {
                return Err(invalid(unknown(key, kind)));
            }
            kept.push(pair);
            continue;
        };
        if *for_kind != kind {
            let takes: Vec<String> = OURS
                .iter()
                .filter(|(_, k)| *k == kind)
                .map(|(n, _)| format!("{n}="))
                .collect();
            return Err(invalid(format!(
                "{key}= is for {for_kind}:// URLs; a {kind}:// URL takes {}",
                takes.join(", ")
            )));
        }
        let value = decode(value)
            .ok_or_else(|| invalid(format!("{key}= is not valid percent-encoded UTF-8")))?;
        if value.is_empty() {
            return Err(invalid(format!("{key}= needs a value")));
        }
        if taken.insert(key.to_owned(), value).is_some() {
            return Err(invalid(format!("{key}= is given twice")));
        }
    }
    let mut driver = base.to_owned();
    if !kept.is_empty() {
        driver.push('?');
        driver.push_str(&kept.join("&"));
    }
    if let Some(f) = fragment {
        driver.push('#');
        driver.push_str(f);
    }
    Ok((driver, taken))
}

/// Why `key` is refused on a `kind` URL: the parameters it takes, and the likeliest one meant.
fn unknown(key: &str, kind: &str) -> String {
    let names = |table: &[(&'static str, &'static str)]| -> Vec<&'static str> {
        table
            .iter()
            .filter(|(_, k)| *k == kind)
            .map(|(n, _)| *n)
            .collect()
    };
    let (ours, driver) = (names(OURS), names(DRIVERS));
    let list = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("{n}="))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let meant = ours
        .iter()
        .chain(&driver)
        .map(|n| (strsim::jaro_winkler(key, n), *n))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| format!(" (did you mean {n}=?)"))
        .unwrap_or_default();
    format!(
        "unknown parameter {key}={meant}: a {kind}:// URL takes {} (oprec's) and {} (the driver's)",
        list(&ours),
        list(&driver)
    )
}

/// Decodes `%XX` escapes; `None` for a broken escape or bytes that are not UTF-8.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::take;

    fn ok(url: &str, kind: &str) -> (String, Vec<(String, String)>) {
        let (u, p) = take(url, kind).unwrap();
        (u, p.into_iter().collect())
    }

    #[test]
    fn oprec_parameters_are_taken_and_the_rest_passed_on() {
        let p = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(
            ok("redis://127.0.0.1:6379/9", "redis"),
            ("redis://127.0.0.1:6379/9".into(), vec![])
        );
        assert_eq!(
            ok("redis://h/0?stream=oprec%3Atest&group=g1", "redis"),
            (
                "redis://h/0".into(),
                vec![p("group", "g1"), p("stream", "oprec:test")]
            )
        );
        assert_eq!(
            ok(
                "amqp://u:pw@h:5672/%2f?heartbeat=10&queue=q.1&frame_max=8192#x",
                "amqp"
            ),
            (
                "amqp://u:pw@h:5672/%2f?heartbeat=10&frame_max=8192#x".into(),
                vec![p("queue", "q.1")]
            )
        );
        assert_eq!(ok("amqp://h/%2f?", "amqp"), ("amqp://h/%2f".into(), vec![]));
    }

    #[test]
    fn mistakes_are_invalid_input_without_the_password() {
        for (url, kind, needle) in [
            (
                "redis://:s3cret@h?queue=q",
                "redis",
                "queue= is for amqp:// URLs; a redis:// URL takes prefix=, stream=, group=",
            ),
            (
                "amqp://u:s3cret@h?stream=s",
                "amqp",
                "stream= is for redis://",
            ),
            (
                "redis://:s3cret@h?stream=",
                "redis",
                "stream= needs a value",
            ),
            (
                "redis://:s3cret@h?stream=a&stream=b",
                "redis",
                "stream= is given twice",
            ),
            (
                "redis://:s3cret@h?stream=%zz",
                "redis",
                "not valid percent-encoded",
            ),
            (
                "redis://:s3cret@h?strem=orders",
                "redis",
                "unknown parameter strem= (did you mean stream=?): a redis:// URL takes prefix=, \
                 stream=, group= (oprec's) and protocol=, db=, user=, pass= (the driver's)",
            ),
            (
                "amqp://u:s3cret@h?heartbeat=10&prefech=5",
                "amqp",
                "unknown parameter prefech= (did you mean prefetch=?)",
            ),
            (
                "redis://:s3cret@h?zzz=1",
                "redis",
                "unknown parameter zzz=: a redis:// URL takes",
            ),
        ] {
            let e = take(url, kind).unwrap_err();
            assert!(matches!(e, oprec_core::Error::InvalidInput(_)), "{e:?}");
            let text = e.to_string();
            assert!(text.contains(needle), "{text}");
            assert!(!text.contains("s3cret"), "{text}");
        }
    }
}
