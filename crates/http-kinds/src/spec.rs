//! The kinds file as written: the TOML shapes, with the span of every value that a later check
//! may have to point at. Unknown keys are refused here (a misspelt `max_atempts` must not leave a
//! kind unbounded); whether the values make a sound kind is `declare`'s question.

use std::collections::BTreeMap;
use std::fmt;

use chrono::Duration;
use oprec_core::Jitter;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer};
use toml::Spanned;

/// The whole file: `[[kind]]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSpec {
    #[serde(default)]
    pub kind: Vec<Spanned<KindSpec>>,
}

/// One `[[kind]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KindSpec {
    pub name: Spanned<String>,
    pub dependency: Option<Spanned<String>>,
    pub timeout: Option<Spanned<DurationSpec>>,
    pub max_attempts: Option<Spanned<i64>>,
    pub give_up_after: Option<Spanned<DurationSpec>>,
    pub ladder: Option<Spanned<LadderSpec>>,
    pub jitter: Option<Spanned<JitterSpec>>,
    pub rate_limit_max: Option<Spanned<DurationSpec>>,
    pub remote_honours_effect_key: Option<bool>,
    pub unknown_retries: Option<Spanned<i64>>,
    pub payload: Option<Spanned<String>>,
    pub schedule: Option<Spanned<String>>,
    pub timezone: Option<Spanned<String>>,
    pub missed: Option<Spanned<String>>,
    pub grace: Option<Spanned<DurationSpec>>,
    pub schedule_payload: Option<Spanned<toml::Table>>,
    pub alert_route: Option<Spanned<String>>,
    pub http: Option<Spanned<HttpSpec>>,
}

/// A kind's `[kind.http]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HttpSpec {
    pub url: Spanned<String>,
    pub reconcile_url: Option<Spanned<String>>,
    pub idempotency_header: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<Spanned<String>, Spanned<String>>,
    pub remote_id: Option<Spanned<RemoteIdSpec>>,
    pub error_message: Option<Spanned<String>>,
    pub error_field: Option<Spanned<String>>,
    #[serde(default)]
    pub status: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// Where a success names the remote identity of the effect.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoteIdSpec {
    pub header: Option<String>,
    pub json: Option<String>,
}

/// A duration: `"90s"`, `"5m"`, `"1h30m"`, `"250ms"`, or whole seconds.
pub(crate) struct DurationSpec(pub Duration);

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DurationVisitor)
    }
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = DurationSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration like \"90s\", \"5m\" or \"48h\" (or whole seconds)")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<DurationSpec, E> {
        if v < 0 {
            return Err(E::custom(format!("{v} is negative; a duration cannot be")));
        }
        Ok(DurationSpec(Duration::seconds(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<DurationSpec, E> {
        i64::try_from(v)
            .map_err(|_| E::custom(format!("{v} seconds is too long")))
            .and_then(|v| self.visit_i64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationSpec, E> {
        let shown: String = v.chars().take(40).collect();
        let std = humantime::parse_duration(v.trim()).map_err(|e| {
            E::custom(format!(
                "{shown:?} is not a duration ({e}); write it like \"90s\", \"5m\" or \"48h\""
            ))
        })?;
        Duration::from_std(std)
            .map(DurationSpec)
            .map_err(|_| E::custom(format!("{shown:?} is too long")))
    }
}

/// The jitter rule: `"none"`, `"full"`, `"equal"` or `{ proportional = 0.2 }`.
pub(crate) struct JitterSpec(pub Jitter);

impl<'de> Deserialize<'de> for JitterSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JitterVisitor)
    }
}

struct JitterVisitor;

const JITTERS: &str = "\"none\", \"full\", \"equal\" or { proportional = 0.2 }";

impl<'de> Visitor<'de> for JitterVisitor {
    type Value = JitterSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a jitter rule: {JITTERS}")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<JitterSpec, E> {
        match v {
            "none" => Ok(JitterSpec(Jitter::None)),
            "full" => Ok(JitterSpec(Jitter::Full)),
            "equal" => Ok(JitterSpec(Jitter::Equal)),
            "proportional" => Err(E::custom(
                "proportional jitter states its ratio: jitter = { proportional = 0.2 }",
            )),
            other => {
                let shown: String = other.chars().take(40).collect();
                Err(E::custom(format!(
                    "unknown jitter {shown:?}; use {JITTERS}"
                )))
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JitterSpec, A::Error> {
        let mut ratio = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "proportional" if ratio.is_none() => ratio = Some(map.next_value::<f64>()?),
                _ => {
                    return Err(de::Error::custom(format!(
                        "unknown jitter key {key:?}; use {JITTERS}"
                    )));
                }
            }
        }
        ratio
            .map(|p| JitterSpec(Jitter::Proportional(p)))
            .ok_or_else(|| de::Error::custom(format!("an empty jitter table; use {JITTERS}")))
    }
}

/// A ladder: a schedule (`["0s", "1m", "5m"]`, the n-th being the wait before attempt n) or an
/// exponential curve (`{ base = "30s", factor = 2, ceiling = "1h" }`).
pub(crate) enum LadderSpec {
    Schedule(Vec<DurationSpec>),
    Exponential(ExponentialSpec),
}

/// The exponential form of a ladder.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExponentialSpec {
    pub base: DurationSpec,
    pub factor: f64,
    pub ceiling: DurationSpec,
    /// A first-retry delay of its own per failure class (`{ rate_limited = "5s" }`).
    #[serde(default)]
    pub base_for: BTreeMap<String, DurationSpec>,
}

impl<'de> Deserialize<'de> for LadderSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LadderVisitor)
    }
}

struct LadderVisitor;

impl<'de> Visitor<'de> for LadderVisitor {
    type Value = LadderSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a ladder: a schedule like [\"0s\", \"1m\", \"5m\"] or an exponential curve like \
             { base = \"30s\", factor = 2, ceiling = \"1h\" }",
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LadderSpec, A::Error> {
        let mut rungs = Vec::new();
        while let Some(rung) = seq.next_element::<DurationSpec>()? {
            rungs.push(rung);
        }
        Ok(LadderSpec::Schedule(rungs))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LadderSpec, A::Error> {
        ExponentialSpec::deserialize(MapAccessDeserializer::new(map)).map(LadderSpec::Exponential)
    }
}
