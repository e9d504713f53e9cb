//! What an HTTP answer means for the operation: the failure-class table of the seed (2xx
//! succeeded; 429 rate limited, honouring Retry-After; 502/503/504 transient; 400/404/422
//! permanent, naming the body's error; 401/403 configuration; anything else unknown), which a kind
//! may override status by status. Pure: no I/O, so every row is a unit test.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use oprec_core::{Failure, FailureClass, OperationError, Outcome};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

/// The longest Retry-After read (a year): past it, a provider's number is only "very long".
const MAX_RETRY_AFTER_SECS: u64 = 365 * 24 * 3600;

/// The most of a response body an error message quotes.
const QUOTED_BODY_CHARS: usize = 300;

/// What a status means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The effect happened.
    Succeeded,
    /// The attempt failed with this class.
    Failed(FailureClass),
}

impl Verdict {
    /// Parses a verdict as a kinds file writes it: `succeeded` or a failure class other than
    /// `backpressure` (which is this process's own pressure, never a remote answer).
    pub fn parse(text: &str) -> Result<Verdict, String> {
        if text == "succeeded" {
            return Ok(Verdict::Succeeded);
        }
        match text.parse::<FailureClass>() {
            Ok(FailureClass::Backpressure) => Err(
                "backpressure is this worker's own pressure (a local pool exhausted), not \
                 something a remote answer says; use transient or rate_limited"
                    .to_owned(),
            ),
            Ok(class) => Ok(Verdict::Failed(class)),
            Err(_) => Err(format!(
                "unknown outcome {:?}; use succeeded, transient, rate_limited, permanent, \
                 configuration or unknown",
                text.chars().take(40).collect::<String>()
            )),
        }
    }
}

/// The seed's table: what a status means when the kind does not say otherwise.
pub fn default_verdict(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Succeeded,
        429 => Verdict::Failed(FailureClass::RateLimited),
        502..=504 => Verdict::Failed(FailureClass::Transient),
        400 | 404 | 422 => Verdict::Failed(FailureClass::Permanent),
        401 | 403 => Verdict::Failed(FailureClass::Configuration),
        // An answer nobody classified: the effect may have happened (a 500 mid-write). The
        // seed's default for an unrecognised error is "ambiguous", never "transient".
        _ => Verdict::Failed(FailureClass::Unknown),
    }
}

/// Where a success names the remote identity of its effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteId {
    /// A response header (`Location`, `X-Shipment-Id`).
    Header(reqwest::header::HeaderName),
    /// A JSON Pointer into the response body (`/id`, `/data/id`).
    Json(String),
}

/// How one kind reads its answers.
#[derive(Clone, Debug, Default)]
pub struct Mapping {
    /// Statuses whose meaning the kind declares itself.
    pub overrides: BTreeMap<u16, Verdict>,
    /// Where the remote id is, if the provider gives one.
    pub remote_id: Option<RemoteId>,
    /// JSON Pointer to the body's error message; by default the first of `/error` (a string),
    /// `/error/message`, `/message`, `/detail`, `/title`.
    pub error_message: Option<String>,
    /// JSON Pointer to the input field the body blames; by default `/field` or `/error/field`.
    pub error_field: Option<String>,
}

/// One HTTP answer, as the handler received it.
#[derive(Debug)]
pub struct Answer<'a> {
    /// The status code.
    pub status: u16,
    /// The response headers.
    pub headers: &'a HeaderMap,
    /// The body (possibly cut short at the handler's limit).
    pub body: &'a [u8],
    /// `POST http://host/path`: what was asked, for messages (never with a query or password).
    pub request: &'a str,
    /// The kind's dependency, named in messages.
    pub dependency: &'a str,
    /// Now, to turn a Retry-After date into a wait.
    pub now: DateTime<Utc>,
}

impl Mapping {
    /// What `status` means for this kind.
    pub fn verdict(&self, status: u16) -> Verdict {
        self.overrides
            .get(&status)
            .copied()
            .unwrap_or_else(|| default_verdict(status))
    }

    /// The attempt's outcome: succeeded with the remote id (when the answer names one), or the
    /// classified failure.
    pub fn outcome(&self, a: &Answer<'_>) -> Outcome {
        let class = match self.verdict(a.status) {
            Verdict::Succeeded => {
                return Outcome::Succeeded {
                    remote_id: self.remote_id(a.headers, a.body),
                };
            }
            Verdict::Failed(class) => class,
        };
        let said = format!("{} answered {}", a.request, status_line(a.status));
        Outcome::Failed(match class {
            FailureClass::RateLimited => {
                let wait = retry_after(a.headers, a.now);
                let summary = match wait {
                    Some(w) => format!(
                        "{said}: {} asks to wait {}s (Retry-After)",
                        a.dependency,
                        w.num_seconds()
                    ),
                    None => format!("{said}: rate limited, with no Retry-After"),
                };
                Failure::rate_limited(summary, wait)
            }
            FailureClass::Permanent => {
                let (message, field) = self.body_error(a.body);
                let mut error = OperationError::new(match message {
                    Some(m) => format!("{said}: {m}"),
                    None => format!("{said}: the request was refused"),
                })
                .decision("permanent failure: the same request cannot succeed later")
                .next_action("correct the payload and enqueue a new operation");
                if let Some(field) = field {
                    error = error.field(field);
                }
                Failure::permanent(error)
            }
            FailureClass::Configuration => {
                let (message, _) = self.body_error(a.body);
                let mut summary = format!("{said}: {} refused our credentials", a.dependency);
                if let Some(m) = message {
                    summary = format!("{summary} ({m})");
                }
                Failure::new(
                    class,
                    OperationError::new(summary)
                        .decision("held until the owner repairs the configuration")
                        .next_action(format!(
                            "repair the credentials (the environment variables the kind's \
                             headers name), restart the workers, then `oprec resume \
                             --dependency {}`",
                            a.dependency
                        )),
                )
            }
            FailureClass::Unknown if self.overrides.contains_key(&a.status) => {
                Failure::unknown(format!("{said}: the effect may have happened"))
            }
            FailureClass::Unknown => Failure::unknown(format!(
                "{said}, a status this kind's mapping does not name: the effect may have happened"
            )),
            other => Failure::new(other, OperationError::new(said)),
        })
    }

    /// The remote id a success names, if the kind says where and the answer has it.
    pub fn remote_id(&self, headers: &HeaderMap, body: &[u8]) -> Option<String> {
        let found = match self.remote_id.as_ref()? {
            RemoteId::Header(name) => headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            RemoteId::Json(pointer) => serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v.pointer(pointer).and_then(scalar)),
        };
        let found = found.filter(|id| !id.trim().is_empty());
        if found.is_none() {
            tracing::warn!(remote_id = ?self.remote_id,
                "the answer does not carry the remote id where the kind says it is; the \
                 operation succeeds without one");
        }
        found
    }

    /// The body's error message and the field it blames, from JSON; the body's text (cut short)
    /// when it is not JSON.
    fn body_error(&self, body: &[u8]) -> (Option<String>, Option<String>) {
        let Ok(json) = serde_json::from_slice::<Value>(body) else {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            return ((!text.is_empty()).then(|| cut(text)), None);
        };
        let pick = |given: &Option<String>, defaults: &[&str]| -> Option<String> {
            match given {
                Some(p) => json.pointer(p).and_then(scalar),
                None => defaults
                    .iter()
                    .find_map(|p| json.pointer(p).and_then(scalar)),
            }
        };
        let message = pick(
            &self.error_message,
            &["/error", "/error/message", "/message", "/detail", "/title"],
        )
        .map(|m| cut(&m))
        .or_else(|| Some(cut(&json.to_string())));
        let field = pick(&self.error_field, &["/field", "/error/field"]).map(|f| cut(&f));
        (message, field)
    }
}

/// A JSON string or number as text; `None` for anything else.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `text` cut to [`QUOTED_BODY_CHARS`] characters, on one line.
fn cut(text: &str) -> String {
    let one_line = crate::error::one_line(text);
    let mut out: String = one_line.chars().take(QUOTED_BODY_CHARS).collect();
    if out.len() < one_line.len() {
        out.push('…');
    }
    out
}

/// `503 Service Unavailable`.
fn status_line(status: u16) -> String {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason());
    match reason {
        Some(r) => format!("{status} {r}"),
        None => status.to_string(),
    }
}

/// The wait a Retry-After header asks for: whole seconds, or an HTTP date (a date in the past
/// is no wait). The policy caps it (`rate_limit_max`).
pub fn retry_after(headers: &HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = text.parse::<u64>() {
        // A provider's absurd wait is still a wait; the policy caps it long before this.
        return Some(Duration::seconds(secs.min(MAX_RETRY_AFTER_SECS) as i64));
    }
    let at = DateTime::parse_from_rfc2822(text).ok()?.with_timezone(&Utc);
    Some((at - now).max(Duration::zero()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn answer<'a>(status: u16, headers: &'a HeaderMap, body: &'a [u8]) -> Answer<'a> {
        Answer {
            status,
            headers,
            body,
            request: "POST http://p.example/ship",
            dependency: "shipper",
            now: DateTime::parse_from_rfc3339("2026-01-05T09:00:00Z")
                .unwrap()
                .with_timezone(&Utc),
        }
    }

    /// The failure of an outcome that must be one.
    trait Failed {
        fn unwrap_err(self) -> Failure;
        fn unwrap(self) -> Option<String>;
    }

    impl Failed for Outcome {
        fn unwrap_err(self) -> Failure {
            match self {
                Outcome::Failed(f) => f,
                other => panic!("not a failure: {other:?}"),
            }
        }

        fn unwrap(self) -> Option<String> {
            match self {
                Outcome::Succeeded { remote_id } => remote_id,
                Outcome::Failed(f) => panic!("failed: {f}"),
            }
        }
    }

    fn class_of(m: &Mapping, status: u16) -> Option<FailureClass> {
        let h = HeaderMap::new();
        match m.outcome(&answer(status, &h, b"")) {
            Outcome::Failed(f) => Some(f.class),
            Outcome::Succeeded { .. } => None,
        }
    }

    #[test]
    fn the_seed_table() {
        let m = Mapping::default();
        for s in [200, 201, 202, 204, 299] {
            assert_eq!(class_of(&m, s), None, "{s}");
        }
        use FailureClass::*;
        assert_eq!(class_of(&m, 429), Some(RateLimited));
        for s in [502, 503, 504] {
            assert_eq!(class_of(&m, s), Some(Transient), "{s}");
        }
        for s in [400, 404, 422] {
            assert_eq!(class_of(&m, s), Some(Permanent), "{s}");
        }
        for s in [401, 403] {
            assert_eq!(class_of(&m, s), Some(Configuration), "{s}");
        }
        for s in [301, 409, 410, 500, 501, 505] {
            assert_eq!(class_of(&m, s), Some(Unknown), "{s}");
        }
    }

    #[test]
    fn overrides_win_status_by_status() {
        let m = Mapping {
            overrides: BTreeMap::from([
                (409, Verdict::Succeeded),
                (404, Verdict::Failed(FailureClass::Transient)),
                (500, Verdict::Failed(FailureClass::Transient)),
            ]),
            ..Mapping::default()
        };
        assert_eq!(class_of(&m, 409), None);
        assert_eq!(class_of(&m, 404), Some(FailureClass::Transient));
        assert_eq!(class_of(&m, 500), Some(FailureClass::Transient));
        assert_eq!(class_of(&m, 400), Some(FailureClass::Permanent));
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        let f = Mapping::default()
            .outcome(&answer(429, &h, b""))
            .unwrap_err();
        assert_eq!(f.retry_after, Some(Duration::seconds(7)));
        assert!(f.error.summary.contains("wait 7s"), "{}", f.error.summary);
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Mon, 05 Jan 2026 09:02:00 GMT"),
        );
        let f = Mapping::default()
            .outcome(&answer(429, &h, b""))
            .unwrap_err();
        assert_eq!(f.retry_after, Some(Duration::seconds(120)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("18446744073709551615"),
        );
        let f = Mapping::default()
            .outcome(&answer(429, &h, b""))
            .unwrap_err();
        assert_eq!(f.retry_after, Some(Duration::days(365)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        let f = Mapping::default()
            .outcome(&answer(429, &h, b""))
            .unwrap_err();
        assert_eq!(f.retry_after, None);
    }

    #[test]
    fn a_permanent_failure_names_the_body_error_and_field() {
        let h = HeaderMap::new();
        let body = br#"{"error": "postal_code must have 5 digits", "field": "postal_code"}"#;
        let f = Mapping::default()
            .outcome(&answer(400, &h, body))
            .unwrap_err();
        assert_eq!(f.class, FailureClass::Permanent);
        assert_eq!(
            f.error.summary,
            "POST http://p.example/ship answered 400 Bad Request: postal_code must have 5 digits"
        );
        assert_eq!(f.error.field.as_deref(), Some("postal_code"));
        assert!(f.error.next_action.is_some());
        // Problem details (RFC 9457), a nested error, plain text, and a pointer of the kind's own.
        let f = Mapping::default()
            .outcome(&answer(
                422,
                &h,
                br#"{"title": "Invalid", "detail": "weight too high"}"#,
            ))
            .unwrap_err();
        assert!(f.error.summary.ends_with(": weight too high"), "{f}");
        let f = Mapping::default()
            .outcome(&answer(
                400,
                &h,
                br#"{"error": {"message": "no such sku", "field": "sku"}}"#,
            ))
            .unwrap_err();
        assert!(f.error.summary.ends_with(": no such sku"), "{f}");
        assert_eq!(f.error.field.as_deref(), Some("sku"));
        let f = Mapping::default()
            .outcome(&answer(404, &h, b"no such customer\n"))
            .unwrap_err();
        assert!(f.error.summary.ends_with(": no such customer"), "{f}");
        let own = Mapping {
            error_message: Some("/errors/0/msg".into()),
            ..Mapping::default()
        };
        let f = own
            .outcome(&answer(400, &h, br#"{"errors": [{"msg": "bad date"}]}"#))
            .unwrap_err();
        assert!(f.error.summary.ends_with(": bad date"), "{f}");
        let long = "x".repeat(5000);
        let f = Mapping::default()
            .outcome(&answer(400, &h, long.as_bytes()))
            .unwrap_err();
        assert!(f.error.summary.len() < 400, "{}", f.error.summary.len());
    }

    #[test]
    fn configuration_says_what_to_repair() {
        let h = HeaderMap::new();
        let f = Mapping::default()
            .outcome(&answer(401, &h, br#"{"error": "API key revoked"}"#))
            .unwrap_err();
        assert_eq!(f.class, FailureClass::Configuration);
        assert!(
            f.error
                .summary
                .contains("shipper refused our credentials (API key revoked)"),
            "{f}"
        );
        assert!(
            f.error
                .next_action
                .as_deref()
                .unwrap()
                .contains("oprec resume --dependency shipper")
        );
    }

    #[test]
    fn remote_ids_from_a_header_or_a_json_pointer() {
        let mut h = HeaderMap::new();
        h.insert("x-shipment-id", HeaderValue::from_static("shp-9"));
        let by_header = Mapping {
            remote_id: Some(RemoteId::Header("x-shipment-id".parse().unwrap())),
            ..Mapping::default()
        };
        assert_eq!(
            by_header.outcome(&answer(201, &h, b"")).unwrap().as_deref(),
            Some("shp-9")
        );
        let by_json = Mapping {
            remote_id: Some(RemoteId::Json("/data/id".into())),
            ..Mapping::default()
        };
        let body = br#"{"data": {"id": 42}}"#;
        assert_eq!(
            by_json.outcome(&answer(200, &h, body)).unwrap().as_deref(),
            Some("42")
        );
        assert_eq!(
            by_json.outcome(&answer(200, &h, b"not json")).unwrap(),
            None
        );
        assert_eq!(
            Mapping::default().outcome(&answer(200, &h, body)).unwrap(),
            None
        );
    }

    #[test]
    fn verdicts_parse_and_backpressure_is_refused() {
        assert_eq!(Verdict::parse("succeeded"), Ok(Verdict::Succeeded));
        assert_eq!(
            Verdict::parse("transient"),
            Ok(Verdict::Failed(FailureClass::Transient))
        );
        assert!(
            Verdict::parse("backpressure")
                .unwrap_err()
                .contains("own pressure")
        );
        assert!(
            Verdict::parse("retry")
                .unwrap_err()
                .contains("unknown outcome")
        );
    }
}
