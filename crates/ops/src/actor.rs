//! Who acts, and why: every workflow that changes operations leaves an audit entry naming the
//! operator and the reason given, so that "who re-drove 50,000 payments at 3 a.m., and why" has
//! an answer in the database.

use serde_json::{Value, json};

use crate::InputError;

/// The longest actor name kept.
pub const MAX_ACTOR: usize = 200;
/// The longest reason kept.
pub const MAX_REASON: usize = 2_000;

/// Who acts, and through which front end: the audit entry's `actor` and its `details.via`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Who {
    /// The operator's name.
    pub actor: String,
    /// The front end (`dashboard`), when it is worth recording; `None` for the CLI and library
    /// callers.
    pub via: Option<&'static str>,
}

impl Who {
    /// `actor`, checked (not blank, at most [`MAX_ACTOR`] characters), acting through `via`.
    pub fn named(label: &str, actor: &str, via: Option<&'static str>) -> Result<Self, InputError> {
        Ok(Who {
            actor: text(label, actor, MAX_ACTOR)?,
            via,
        })
    }

    /// The login name of this process's user: `$USER`, else `$LOGNAME`, else the system's
    /// account name for the process's user. Refused when none is known: an audit entry by
    /// "unknown" tells the next on-call nothing, so `label` (`--actor`) must name someone.
    pub fn login(label: &str) -> Result<Self, InputError> {
        let usable = |v: String| {
            let v = v.trim().to_owned();
            (!v.is_empty() && v.chars().count() <= MAX_ACTOR).then_some(v)
        };
        ["USER", "LOGNAME"]
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .find_map(usable)
            .or_else(|| whoami::account().ok().and_then(usable))
            .map(|actor| Who { actor, via: None })
            .ok_or_else(|| {
                InputError(format!(
                    "who is acting? no login name is known here ($USER, $LOGNAME and the \
                     account are unset): give {label} NAME for the audit log"
                ))
            })
    }

    /// Adds `via` to an audit entry's details.
    pub(crate) fn details(&self, mut details: Value) -> Value {
        if let (Some(via), Value::Object(m)) = (self.via, &mut details) {
            m.insert("via".into(), json!(via));
        }
        details
    }
}

/// A reason (or note) as given: not blank, at most [`MAX_REASON`] characters.
pub fn reason(label: &str, given: Option<&str>) -> Result<Option<String>, InputError> {
    given.map(|r| text(label, r, MAX_REASON)).transpose()
}

/// `value` trimmed; refused when blank or longer than `max` characters.
fn text(label: &str, value: &str, max: usize) -> Result<String, InputError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(InputError(format!("{label} must not be empty")));
    }
    let n = value.chars().count();
    if n > max {
        return Err(InputError(format!(
            "{label} is {n} characters long; at most {max} are kept"
        )));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_and_reasons_are_checked() {
        assert_eq!(
            Who::named("--actor", " alice ", None).unwrap().actor,
            "alice"
        );
        assert!(Who::named("--actor", " ", None).is_err());
        assert!(!Who::login("--actor").unwrap().actor.is_empty());
        assert_eq!(reason("--reason", None).unwrap(), None);
        assert!(reason("--reason", Some("")).is_err());
        assert!(reason("--reason", Some(&"x".repeat(MAX_REASON + 1))).is_err());
        let d = Who::named("actor", "bob", Some("dashboard"))
            .unwrap()
            .details(json!({"n": 1}));
        assert_eq!(d, json!({"n": 1, "via": "dashboard"}));
    }
}
