//! Secrets stay out of logs, errors and help text: one way to show a URL without its password,
//! for every crate that prints one.

/// Where the user info ends: the last `@` before the query or fragment. A password with an
/// unescaped `/` or `@` then hides a little more than the password: over-redacting is the safe
/// side.
fn authority_end(rest: &str) -> usize {
    let before_query = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    match before_query.rfind('@') {
        Some(at) => {
            at + 1
                + rest[at + 1..]
                    .find(['/', '?', '#'])
                    .unwrap_or(rest.len() - at - 1)
        }
        None => rest.find(['/', '?', '#']).unwrap_or(rest.len()),
    }
}

/// The URL with any password replaced by `***`: `postgres://app:s3cret@db/x` becomes
/// `postgres://app:***@db/x`. Text that is not a URL with credentials comes back unchanged.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_at(authority_end(rest));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map(|(u, _)| u).unwrap_or(userinfo);
            let masked = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                user.to_owned()
            };
            format!("{scheme}://{masked}@{host}{}", redact_query(tail))
        }
        None => format!("{scheme}://{authority}{}", redact_query(tail)),
    }
}

/// Masks `password=` (and `sslpassword=`) query parameters.
fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _))
                if k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword") =>
            {
                format!("{k}=***")
            }
            _ => kv.to_owned(),
        })
        .collect();
    format!("{path}?{}", params.join("&"))
}

/// The secrets a URL carries, as written in it: the password of its user info and any
/// `password=` or `sslpassword=` query parameter. For scrubbing text that may quote them.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Some((_, rest)) = url.split_once("://")
        && let Some((userinfo, _)) = rest[..authority_end(rest)].rsplit_once('@')
        && let Some((_, pw)) = userinfo.split_once(':')
    {
        found.push(pw.to_owned());
    }
    if let Some((_, query)) = url.split_once('?') {
        for kv in query.split(['&', '#']) {
            if let Some((k, v)) = kv.split_once('=')
                && (k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword"))
            {
                found.push(v.to_owned());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{redact_url, url_secrets};

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
    }
}
