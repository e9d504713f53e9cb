//! Counts as every front end prints them: grouped by thousands (`1,234,567`), and an
//! operation's attempts against its bound (`3 of 8`).

/// `1234567` as `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Attempts made against the bound, the same in every list and record: `3 of 8`, or `3` for
/// an operation whose attempts are bounded only by its deadline.
pub fn attempts(attempt: u32, max_attempts: Option<u32>) -> String {
    match max_attempts {
        Some(max) => format!("{attempt} of {max}"),
        None => attempt.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{attempts, count};

    #[test]
    fn attempts_read_against_their_bound() {
        assert_eq!(attempts(3, Some(8)), "3 of 8");
        assert_eq!(attempts(0, None), "0");
    }

    #[test]
    fn groups_by_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(72_000_000), "72,000,000");
    }
}
