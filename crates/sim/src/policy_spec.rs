//! Policies written on a command line: `fixed:60s`, `ladder:0,60,300,1500,7500,37500`,
//! `exp:60s,2,1h` with optional `,jitter=full|equal|none|0.2`, `,max=N` and `,giveup=72h`.

use chrono::Duration;
use oprec_core::{Exponential, Jitter, Ladder, RetryPolicy};

/// Why a policy spec was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "bad policy {spec:?}: {why} (forms: fixed:60s, ladder:0,60,300, exp:60s,2,1h[,jitter=full][,max=20][,giveup=72h])"
)]
pub struct SpecError {
    spec: String,
    why: String,
}

/// A named policy to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicySpec {
    /// The spec as written, used as the policy's name.
    pub name: String,
    /// The policy.
    pub policy: RetryPolicy,
}

fn secs(text: &str) -> Option<i64> {
    let text = text.trim();
    let (num, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: i64 = num.parse().ok()?;
    let mult = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    n.checked_mul(mult)
        .filter(|s| *s >= 0 && *s <= 10 * 365 * 86_400)
}

impl std::str::FromStr for PolicySpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Self, SpecError> {
        let bad = |why: &str| SpecError {
            spec: spec.chars().take(80).collect(),
            why: why.into(),
        };
        let (form, args) = spec
            .split_once(':')
            .ok_or_else(|| bad("no ':' after the form"))?;
        let timeout = Duration::seconds(30);
        let policy = match form {
            // The old fire-and-forget loop: every `d`, forever (no attempt bound to speak of).
            "fixed" => {
                let d = secs(args)
                    .filter(|s| *s > 0)
                    .ok_or_else(|| bad("not a positive duration"))?;
                RetryPolicy::builder()
                    .timeout(timeout)
                    .max_attempts(u32::MAX)
                    .external_io(Ladder::exponential(Exponential::new(
                        Duration::seconds(d),
                        1.0,
                        Duration::seconds(d),
                    )))
                    .jitter(oprec_core::Jitter::None)
                    .build()
            }
            "ladder" => {
                let rungs = args
                    .split(',')
                    .map(|r| secs(r).ok_or_else(|| bad("a rung is not a duration")))
                    .collect::<Result<Vec<i64>, _>>()?;
                RetryPolicy::builder()
                    .timeout(timeout)
                    .max_attempts(rungs.len() as u32)
                    .external_io(Ladder::schedule_secs(&rungs))
                    .jitter(oprec_core::Jitter::None)
                    .build()
            }
            "exp" => {
                let mut parts = args.split(',');
                let base = parts.next().and_then(secs).ok_or_else(|| bad("no base"))?;
                let factor: f64 = parts
                    .next()
                    .and_then(|f| f.trim().parse().ok())
                    .ok_or_else(|| bad("no factor"))?;
                let ceiling = parts
                    .next()
                    .and_then(secs)
                    .ok_or_else(|| bad("no ceiling"))?;
                let (mut jitter, mut max, mut giveup) = (Jitter::None, 20u32, None);
                for opt in parts {
                    match opt.trim().split_once('=') {
                        Some(("jitter", "full")) => jitter = Jitter::Full,
                        Some(("jitter", "equal")) => jitter = Jitter::Equal,
                        Some(("jitter", "none")) => jitter = Jitter::None,
                        Some(("jitter", p)) => {
                            jitter = Jitter::Proportional(p.parse().map_err(|_| bad("bad jitter"))?)
                        }
                        Some(("max", n)) => max = n.parse().map_err(|_| bad("bad max"))?,
                        Some(("giveup", d)) => {
                            giveup = Some(secs(d).ok_or_else(|| bad("bad giveup"))?)
                        }
                        _ => return Err(bad("unknown option")),
                    }
                }
                let ladder = Ladder::exponential(Exponential::new(
                    Duration::seconds(base),
                    factor,
                    Duration::seconds(ceiling),
                ));
                let b = RetryPolicy::builder().timeout(timeout).max_attempts(max);
                match giveup {
                    Some(g) => b
                        .give_up_after(Duration::seconds(g))
                        .external_io(ladder)
                        .jitter(jitter)
                        .build(),
                    None => b.external_io(ladder).jitter(jitter).build(),
                }
            }
            _ => return Err(bad("unknown form")),
        }
        .map_err(|e| bad(&e.to_string()))?;
        Ok(PolicySpec {
            name: spec.to_owned(),
            policy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms() {
        let f: PolicySpec = "fixed:60s".parse().unwrap();
        assert_eq!(f.policy.max_attempts(), Some(u32::MAX));
        let l: PolicySpec = "ladder:0,60,300,1500,7500,37500".parse().unwrap();
        assert_eq!(l.policy.max_attempts(), Some(6));
        let e: PolicySpec = "exp:60s,2,1h,jitter=full,max=12,giveup=72h"
            .parse()
            .unwrap();
        assert_eq!(e.policy.max_attempts(), Some(12));
        assert_eq!(e.policy.give_up_after(), Some(Duration::hours(72)));
    }

    #[test]
    fn refuses_garbage_clearly() {
        for bad in [
            "",
            "fixed",
            "fixed:0s",
            "fixed:-5s",
            "ladder:",
            "ladder:1,x",
            "exp:60s",
            "exp:60s,2,1h,jitter=2",
            "nope:1",
            "fixed:99999999999999d",
        ] {
            let e = bad.parse::<PolicySpec>().unwrap_err();
            assert!(e.to_string().contains("forms:"), "{bad}: {e}");
        }
    }
}
