//! Secrets stay out of logs, errors and help text: one way to show a URL without its password,
//! for every crate that prints one.

/// The URL with any password replaced by `***`: `postgres://app:s3cret@db/x` becomes
/// `postgres://app:***@db/x`. Text that is not a URL with credentials comes back unchanged.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
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

#[cfg(test)]
mod tests {
    use super::redact_url;

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
        ];
        for (url, want) in cases {
            let got = redact_url(url);
            assert_eq!(got, want);
            assert!(!got.contains("s3cret") && !got.contains("p%40ss") && !got.contains(":guest@"));
        }
    }
}
