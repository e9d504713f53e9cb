//! Secrets stay out of logs, errors and help text: one way to show a URL without its password,
//! for every crate that prints one.

/// A URL split where its credentials could be: the scheme with the separator as written
/// (`postgres://`, or the mistaken `postgres:/` and `amqp:`), the user info (up to the **last**
/// `@`, so that a password with an unescaped `/`, `#`, `?` or `@` is taken whole: hiding a little
/// more than the password is the safe side), and the rest. `None` for text without a scheme.
fn split(url: &str) -> Option<(&str, Option<&str>, &str)> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let slashes = url[colon + 1..].chars().take_while(|c| *c == '/').count();
    let (head, rest) = url.split_at(colon + 1 + slashes);
    match rest.rfind('@') {
        Some(at) => Some((head, Some(&rest[..at]), &rest[at..])),
        None => Some((head, None, rest)),
    }
}

/// Whether `text` is a libpq connection string (`host=db user=app password=...`) rather than a URL.
fn libpq_pairs(text: &str) -> bool {
    !text.contains("://") && text.contains('=') && text.contains(' ')
}

/// Whether `key` names a secret in a query string or a libpq `key=value` string: `password`,
/// `sslpassword`, and the `pass` of a Redis unix socket URL (`unix:///run/redis.sock?pass=...`).
fn secret_key(key: &str) -> bool {
    ["password", "sslpassword", "pass"]
        .iter()
        .any(|secret| key.eq_ignore_ascii_case(secret))
}

/// The URL with any password replaced by `***`: `postgres://app:s3cret@db/x` becomes
/// `postgres://app:***@db/x`; the common mistakes are covered too (one slash after the scheme, an
/// unescaped `/`, `#`, `?` or `@` in the password, a libpq `key=value` string). Text that holds no
/// credentials comes back unchanged.
pub fn redact_url(url: &str) -> String {
    if libpq_pairs(url) {
        return redact_pairs(url);
    }
    let Some((head, userinfo, rest)) = split(url) else {
        return url.to_owned();
    };
    let masked = match userinfo {
        Some(info) => match info.split_once(':') {
            Some((user, _)) => format!("{user}:***"),
            None => info.to_owned(),
        },
        None => String::new(),
    };
    format!("{head}{masked}{}", redact_query(rest))
}

/// A libpq connection string (`host=db user=app password=s3cret`) with its secrets masked.
fn redact_pairs(text: &str) -> String {
    text.split(' ')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if secret_key(k.trim()) => format!("{k}=***"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Masks `password=` (and `sslpassword=`, `pass=`) query parameters.
fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if secret_key(k) => format!("{k}=***"),
            _ => kv.to_owned(),
        })
        .collect();
    format!("{path}?{}", params.join("&"))
}

/// The secrets a URL carries, as written in it: the password of its user info and any
/// `password=`, `sslpassword=` or `pass=` query parameter (or libpq pair). For scrubbing text that may
/// quote them.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Some((_, Some(info), _)) = split(url)
        && let Some((_, pw)) = info.split_once(':')
        && !pw.is_empty()
    {
        found.push(pw.to_owned());
    }
    for kv in url.split(['?', '&', '#', ' ']) {
        if let Some((k, v)) = kv.split_once('=')
            && secret_key(k.trim())
            && !v.is_empty()
        {
            found.push(v.to_owned());
        }
    }
    found
}

/// Only where a URL points: its scheme and host (and port), with `/…` standing for a path,
/// query or fragment that may carry a secret (a webhook's token), and no user info at all.
/// `https://hooks.example/services/T0/B0/s3cret` becomes `https://hooks.example/…`.
pub fn url_origin(url: &str) -> String {
    let Some((head, _, rest)) = split(url) else {
        return "(a URL)".to_owned();
    };
    let rest = rest.strip_prefix('@').unwrap_or(rest);
    match rest.find(['/', '?', '#']) {
        Some(end) if end + 1 < rest.len() => format!("{head}{}/…", &rest[..end]),
        Some(end) => format!("{head}{}", &rest[..end]),
        None => format!("{head}{rest}"),
    }
}

/// When the user info of `url` holds a character that ends it early unless percent-encoded (a
/// `/`, `#`, `?` or `@` in the password: drivers then read a wrong host, port or database), the
/// advice to add to the driver's error; empty otherwise.
pub fn url_encoding_hint(url: &str) -> &'static str {
    match split(url) {
        Some((_, Some(info), _))
            if info.split_once(':').is_some_and(|(_, pw)| {
                // `host:5432/db?user=a@b`: a port and a path, not a password.
                let port = pw
                    .split(['/', '?', '#'])
                    .next()
                    .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
                pw.contains(['/', '#', '?', '@']) && !port
            }) =>
        {
            " (the password holds a / # ? or @, which a URL must percent-encode: %2F %23 %3F %40)"
        }
        _ => "",
    }
}

/// For a URL of a network scheme (`postgres`, `redis`, `amqp` and their TLS forms) written with
/// fewer than two slashes after the scheme (`postgres:/db`, `amqp:host`), the correction to
/// offer: drivers read such text as something else (a database or virtual host named after the
/// whole rest, credentials included); and for a libpq `key=value` string, the URL to write
/// instead. `None` when the shape is right or the scheme not one of these.
pub fn url_shape_error(url: &str) -> Option<String> {
    if libpq_pairs(url) {
        return Some(format!(
            "{} looks like a libpq key=value connection string; write it as a URL: \
             postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=...",
            redact_url(url)
        ));
    }
    let (scheme, rest) = url.split_once(':')?;
    let network = ["postgres", "postgresql", "redis", "rediss", "amqp", "amqps"]
        .iter()
        .any(|s| s.eq_ignore_ascii_case(scheme));
    (network && !rest.starts_with("//")).then(|| {
        format!(
            "{} is not a valid {scheme} URL: write {scheme}:// followed by the host (one slash \
             or none after \"{scheme}:\" is read as a path)",
            redact_url(url)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{redact_url, url_encoding_hint, url_origin, url_secrets, url_shape_error};

    #[test]
    fn passwords_never_survive() {
        let cases = [
            (
                "postgres://app:s3cret@db:5432/x",
                "postgres://app:***@db:5432/x",
            ),
            (
                "amqp://guest:guest@127.0.0.1:5672/%2f",
                "amqp://guest:***@127.0.0.1:5672/%2f",
            ),
            (
                "rediss://:p%40ss@cache:6380/0",
                "rediss://:***@cache:6380/0",
            ),
            ("redis://user@cache", "redis://user@cache"),
            (
                "postgres://db/x?user=a&password=s3cret&sslmode=verify-full",
                "postgres://db/x?user=a&password=***&sslmode=verify-full",
            ),
            ("sqlite://oprec.db?mode=rwc", "sqlite://oprec.db?mode=rwc"),
            ("memory://", "memory://"),
            ("poll", "poll"),
            ("postgres://a:b:c@h/x", "postgres://a:***@h/x"),
            ("postgres://a:p@ss@h/x", "postgres://a:***@h/x"),
            ("amqp://u:pa/ss@host/%2f", "amqp://u:***@host/%2f"),
            (
                "amqps://user:p%40ss:w@rd@broker:5671/vh?heartbeat=10",
                "amqps://user:***@broker:5671/vh?heartbeat=10",
            ),
            ("amqp://127.0.0.1:5672", "amqp://127.0.0.1:5672"),
            ("postgres://u:se/cret@h/x", "postgres://u:***@h/x"),
            ("postgres://u:pa#ss@h/x", "postgres://u:***@h/x"),
            ("postgres://u:pa?ss@h/x", "postgres://u:***@h/x"),
            ("postgres:/u:s3cret@h/x", "postgres:/u:***@h/x"),
            ("amqp:/guest:s3cret@127.0.0.1", "amqp:/guest:***@127.0.0.1"),
            ("amqp:guest:s3cret@127.0.0.1", "amqp:guest:***@127.0.0.1"),
            (
                "host=db user=app password=s3cret dbname=x",
                "host=db user=app password=*** dbname=x",
            ),
            ("sqlite::memory:", "sqlite::memory:"),
            ("sqlite:oprec.db", "sqlite:oprec.db"),
            (
                "unix:///run/redis.sock?pass=s3cret&db=1",
                "unix:///run/redis.sock?pass=***&db=1",
            ),
            (
                "unix:///run/redis.sock?db=1&password=s3cret",
                "unix:///run/redis.sock?db=1&password=***",
            ),
            (
                "unix://:s3cret@/run/redis.sock/1",
                "unix://:***@/run/redis.sock/1",
            ),
            (
                "redis+cluster://u:s3cret@h1:7000,h2:7001",
                "redis+cluster://u:***@h1:7000,h2:7001",
            ),
        ];
        for (url, want) in cases {
            let got = redact_url(url);
            assert_eq!(got, want);
            assert!(!got.contains("s3cret") && !got.contains("p%40ss") && !got.contains(":guest@"));
        }
    }

    #[test]
    fn the_secrets_of_a_url_are_found() {
        assert_eq!(url_secrets("amqp://u:pa/ss@h/%2f"), vec!["pa/ss"]);
        assert_eq!(
            url_secrets("postgres://h/x?user=a&password=s3cret"),
            vec!["s3cret"]
        );
        assert!(url_secrets("redis://cache:6379/0").is_empty());
        assert_eq!(url_secrets("amqp:/guest:pw@h"), vec!["pw"]);
        assert_eq!(
            url_secrets("unix:///run/redis.sock?pass=s3cret&db=1"),
            vec!["s3cret"]
        );
        assert_eq!(url_secrets("postgres://u:pa#ss@h/x"), vec!["pa#ss"]);
        assert_eq!(
            url_secrets("host=db password=s3cret user=app"),
            vec!["s3cret"]
        );
    }

    #[test]
    fn an_origin_shows_no_path_query_or_user() {
        assert_eq!(
            url_origin("https://hooks.example/services/T0/B0/s3cret"),
            "https://hooks.example/…"
        );
        assert_eq!(
            url_origin("https://u:pw@hooks.example:8443/x?token=s3cret"),
            "https://hooks.example:8443/…"
        );
        assert_eq!(
            url_origin("http://127.0.0.1:9000/"),
            "http://127.0.0.1:9000"
        );
        assert_eq!(url_origin("http://127.0.0.1:9000"), "http://127.0.0.1:9000");
        assert_eq!(url_origin("not a url"), "(a URL)");
    }

    #[test]
    fn one_slash_after_a_network_scheme_is_a_mistake() {
        let e = url_shape_error("postgres:/u:s3cret@h/x").expect("refused");
        assert!(e.contains("write postgres://"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
        assert!(url_shape_error("amqp:guest@h").is_some());
        let e = url_shape_error("host=db password=s3cret dbname=x").expect("libpq");
        assert!(
            e.contains("postgres://USER:PASSWORD@HOST") && !e.contains("s3cret"),
            "{e}"
        );
        assert!(url_encoding_hint("postgres://u:se/cret@h/x").contains("%2F"));
        assert!(url_encoding_hint("amqp://u:a#b@h").contains("percent-encode"));
        assert_eq!(url_encoding_hint("postgres://u:plain@h:5432/x"), "");
        assert_eq!(url_encoding_hint("postgres://h:5432/x?user=a@b"), "");
        for fine in [
            "postgres://h/x",
            "redis://h",
            "sqlite:oprec.db",
            "sqlite::memory:",
            "poll",
            "memory://",
        ] {
            assert_eq!(url_shape_error(fine), None, "{fine}");
        }
    }
}
