//! The names stored in SQL and typed by operators (statuses, terminal reasons, attempt outcomes),
//! each defined once with its parsing and printing, and the state machine's edges.

/// The error when a stored or typed name is not one of an enum's names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}; expected one of: {expected}")]
pub struct ParseEnumError {
    /// What was being parsed ("status", "failure class", ...).
    pub what: &'static str,
    /// The rejected text (cut to 64 characters).
    pub value: String,
    /// The accepted names, comma-separated.
    pub expected: &'static str,
}

/// Defines a fieldless enum whose names, as stored in SQL and typed by operators, are written once.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored name.
            pub const fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::status::ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(crate::status::ParseEnumError {
                        what: $what,
                        value: s.chars().take(64).collect(),
                        expected: crate::status::join!($($text),+),
                    }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use named_enum;

/// `"a, b, c"` from string literals, at compile time.
macro_rules! join {
    ($first:literal $(, $rest:literal)*) => { concat!($first $(, ", ", $rest)*) };
}
pub(crate) use join;

named_enum! {
    /// Where an operation stands. Succeeded, dead and cancelled are terminal: no claim ever takes
    /// them again.
    Status, "status" {
        /// Waiting until `next_eligible_at`, then claimable.
        Pending => "pending",
        /// Claimed by a worker holding a lease.
        Running => "running",
        /// The last attempt's outcome is unknown; no blind retry until reconciled.
        Reconciling => "reconciling",
        /// Stopped for a human (configuration failure, quarantine); resumes when released.
        Held => "held",
        /// Done.
        Succeeded => "succeeded",
        /// Will not be done; `terminal_reason` and the history say why.
        Dead => "dead",
        /// Withdrawn by an operator or found obsolete.
        Cancelled => "cancelled",
    }
}

impl Status {
    /// Terminal statuses are excluded from every claim.
    pub const fn is_terminal(&self) -> bool {
        matches!(self, Status::Succeeded | Status::Dead | Status::Cancelled)
    }

    /// Whether DESIGN.md's state machine has an edge from `self` to `next`.
    pub fn can_transition_to(&self, next: Status) -> bool {
        use Status::*;
        match (self, next) {
            // claim
            (Pending, Running) => true,
            // outcomes of an attempt, the rescuer's vanished/crash-loop rule, drain
            (Running, Pending | Succeeded | Dead | Held | Reconciling | Cancelled) => true,
            // reconcile: applied, not applied (and an operator giving up)
            (Reconciling, Succeeded | Pending | Dead) => true,
            // operator re-drive or resume
            (Held | Dead, Pending) => true,
            // deadline passed while waiting; quarantine of pending work
            (Pending | Held, Dead) => true,
            (Pending, Held) => true,
            // cancel any non-terminal operation
            (Pending | Held | Reconciling, Cancelled) => true,
            _ => false,
        }
    }
}

named_enum! {
    /// Why an operation ended dead (or cancelled).
    TerminalReason, "terminal reason" {
        /// A permanent failure: the input cannot succeed later.
        Permanent => "permanent",
        /// The attempt bound or the ladder ran out.
        AttemptsExhausted => "attempts_exhausted",
        /// The caller's deadline (`give_up_at`) passed.
        DeadlinePassed => "deadline_passed",
        /// Too many attempts in a row vanished (lease expired with no outcome).
        CrashLoop => "crash_loop",
        /// An operator decided.
        Operator => "operator",
        /// The kind's still-needed check said the work is no longer needed.
        Obsolete => "obsolete",
    }
}

named_enum! {
    /// How one attempt (one claim) ended, as kept in `operation_attempts`.
    AttemptOutcome, "attempt outcome" {
        /// The handler succeeded.
        Succeeded => "succeeded",
        /// The handler returned a classified error.
        Error => "error",
        /// The attempt was refused before the handler ran (no longer needed).
        Rejected => "rejected",
        /// The lease expired with no outcome written: the worker crashed or hung.
        Vanished => "vanished",
        /// Released unfinished on shutdown.
        Released => "released",
        /// Deferred by backpressure; the attempt was refunded.
        Snoozed => "snoozed",
        /// The effect may or may not have happened.
        Unknown => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>().unwrap(), *s);
        }
        for r in TerminalReason::ALL {
            assert_eq!(r.as_str().parse::<TerminalReason>().unwrap(), *r);
        }
        for o in AttemptOutcome::ALL {
            assert_eq!(o.as_str().parse::<AttemptOutcome>().unwrap(), *o);
        }
        let err = "Pending; DROP TABLE operations"
            .parse::<Status>()
            .unwrap_err();
        assert!(err.to_string().ends_with(
            "expected one of: pending, running, reconciling, held, succeeded, dead, cancelled"
        ));
    }

    #[test]
    fn terminal_states_have_no_way_out_but_redrive() {
        for from in Status::ALL.iter().filter(|s| s.is_terminal()) {
            for to in Status::ALL {
                let allowed = from.can_transition_to(*to);
                let redrive = *from == Status::Dead && *to == Status::Pending;
                assert_eq!(allowed, redrive, "{from} -> {to}");
            }
        }
        assert!(!Status::Pending.can_transition_to(Status::Succeeded));
        assert!(Status::Pending.can_transition_to(Status::Running));
    }
}
