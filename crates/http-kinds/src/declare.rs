//! From the file as written to kinds that can run: each kind's policy built by the same builder,
//! under the same rules, as a kind written in Rust (a timeout, an attempt bound and/or a give-up
//! duration, a ladder since an HTTP kind calls out, a stated jitter), and its HTTP settings
//! checked. Every refusal points at the line and column of the value at fault.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::time::Duration as StdDuration;

use chrono::Duration;
use oprec_core::{
    Exponential, FailureClass, Jitter, Ladder, Missed, PayloadMode, RetryPolicy, Schedule,
};
use reqwest::header::HeaderName;
use toml::Spanned;

use crate::error::{Error, Location, Result, Source};
use crate::handler::{EFFECT_KEY_PLACEHOLDER, HttpSettings};
use crate::mapping::{Mapping, RemoteId, Verdict};
use crate::secret::{ENV_PREFIX, EnvHeader, valid_var};
use crate::spec::{FileSpec, HttpSpec, KindSpec, LadderSpec};

/// A kind's alert webhook. Its `Debug` shows the scheme and host only: the path or the query may
/// carry a token, and a `{:?}` of the loaded file must not print it.
pub(crate) struct RouteUrl(pub String);

impl std::fmt::Debug for RouteUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match reqwest::Url::parse(&self.0) {
            Ok(u) => write!(f, "{}://{}/…", u.scheme(), u.host_str().unwrap_or("")),
            Err(_) => f.write_str("…"),
        }
    }
}

/// A kind as the file declares it, checked; its secrets not read yet.
#[derive(Debug)]
pub(crate) struct Declared {
    pub name: String,
    /// Where the file names it.
    pub at: Location,
    pub dependency: String,
    pub policy: RetryPolicy,
    pub payload_mode: PayloadMode,
    /// Its schedule, when it is recurring.
    pub schedule: Option<Schedule>,
    /// Where its alerts go (a webhook), before the worker's routes and default.
    pub alert_route: Option<RouteUrl>,
    pub http: HttpSettings,
}

/// Checks every kind of `file`.
pub(crate) fn declare(src: &Source<'_>, file: FileSpec) -> Result<Vec<Declared>> {
    if file.kind.is_empty() {
        return Err(src.error(
            0..0,
            "the file declares no kinds; declare each in a [[kind]] table (see \
             examples/kinds.toml)",
        ));
    }
    let mut seen = BTreeSet::new();
    let mut kinds = Vec::new();
    for spec in file.kind {
        let name = &spec.get_ref().name;
        if !seen.insert(name.get_ref().clone()) {
            return Err(src.error(
                name.span(),
                format!("kind {:?} is declared twice", name.get_ref()),
            ));
        }
        let span = spec.span();
        kinds.push(declare_kind(src, span, spec.into_inner())?);
    }
    Ok(kinds)
}

fn declare_kind(src: &Source<'_>, table: Range<usize>, k: KindSpec) -> Result<Declared> {
    let name_span = k.name.span();
    let name = k.name.into_inner();
    oprec_core::transport::check_kind(&name).map_err(|e| src.error(name_span.clone(), why(e)))?;
    let missing =
        |what: &str| src.error(table.clone(), format!("kind {name:?} declares no {what}"));
    let at =
        |span: Range<usize>, message: String| src.error(span, format!("kind {name:?}: {message}"));
    let schedule = declare_schedule(
        &at,
        ScheduleKeys {
            schedule: &k.schedule,
            timezone: &k.timezone,
            missed: &k.missed,
            grace: &k.grace,
            payload: &k.schedule_payload,
        },
    )?;

    let alert_route = match k.alert_route {
        Some(route) => {
            let ok = reqwest::Url::parse(route.get_ref().trim())
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
            if !ok {
                // Never quoted: a webhook URL may carry a token.
                return Err(at(
                    route.span(),
                    "alert_route must be an http(s) webhook URL (alert_route = \
                     \"https://hooks.example/oncall\")"
                        .into(),
                ));
            }
            Some(RouteUrl(route.into_inner().trim().to_owned()))
        }
        None => None,
    };

    let dependency = k.dependency.ok_or_else(|| {
        missing(
            "dependency: name what it calls (dependency = \"shipping-provider\"), the name that \
             `oprec pause --dependency` and the per-dependency figures use",
        )
    })?;
    if dependency.get_ref().trim().is_empty() {
        return Err(at(dependency.span(), "the dependency name is empty".into()));
    }
    let dependency = dependency.into_inner();

    // The policy: the same declarations, in the same builder, as a kind written in Rust.
    let timeout = k
        .timeout
        .ok_or_else(|| missing("timeout: how long one attempt may run (timeout = \"30s\")"))?;
    if timeout.get_ref().0 <= Duration::zero() {
        return Err(at(
            timeout.span(),
            "the timeout must be longer than zero".into(),
        ));
    }
    let max_attempts = match k.max_attempts {
        Some(n) if *n.get_ref() <= 0 => {
            return Err(at(n.span(), "max_attempts must be at least 1".into()));
        }
        Some(n) => Some(u32::try_from(*n.get_ref()).map_err(|_| {
            at(
                n.span(),
                format!("max_attempts {} is too large", n.get_ref()),
            )
        })?),
        None => None,
    };
    let give_up_after = match k.give_up_after {
        Some(d) if d.get_ref().0 <= Duration::zero() => {
            return Err(at(
                d.span(),
                "give_up_after must be longer than zero".into(),
            ));
        }
        Some(d) => Some(d.into_inner().0),
        None => None,
    };
    let ladder = k.ladder.ok_or_else(|| {
        missing(
            "ladder: an HTTP kind calls out, so its retries need a ladder (ladder = [\"0s\", \
             \"1m\", \"5m\"] or ladder = { base = \"30s\", factor = 2, ceiling = \"1h\" })",
        )
    })?;
    let ladder_span = ladder.span();
    let ladder = match ladder.into_inner() {
        LadderSpec::Schedule(rungs) => Ladder::schedule(rungs.into_iter().map(|r| r.0)),
        LadderSpec::Exponential(e) => {
            let mut curve = Exponential::new(e.base.0, e.factor, e.ceiling.0);
            for (class, base) in e.base_for {
                let class = class.parse::<FailureClass>().map_err(|_| {
                    at(
                        ladder_span.clone(),
                        format!(
                            "base_for names {class:?}, which is not a failure class (transient, \
                             rate_limited, backpressure, permanent, configuration, unknown)"
                        ),
                    )
                })?;
                curve = curve.base_for(class, base.0);
            }
            Ladder::exponential(curve)
        }
    };
    let jitter = k.jitter.ok_or_else(|| {
        missing(
            "jitter: state how retries that failed together spread (jitter = \"none\", \
             \"full\", \"equal\" or { proportional = 0.2 })",
        )
    })?;
    if let Jitter::Proportional(p) = jitter.get_ref().0
        && !(p.is_finite() && p > 0.0 && p <= 1.0)
    {
        return Err(at(
            jitter.span(),
            format!("proportional jitter must lie in (0, 1], not {p}"),
        ));
    }
    let mut builder = RetryPolicy::builder()
        .timeout(timeout.get_ref().0)
        .external_io(ladder)
        .jitter(jitter.into_inner().0);
    if let Some(max) = k.rate_limit_max {
        builder = builder.rate_limit_max(max.into_inner().0);
    }
    if k.remote_honours_effect_key == Some(true) {
        builder = builder.remote_honours_effect_key();
    }
    if let Some(n) = k.unknown_retries {
        let value = u32::try_from(*n.get_ref())
            .map_err(|_| at(n.span(), "unknown_retries must be 0 or more".into()))?;
        builder = builder.unknown_retries(value);
    }
    let built = match (max_attempts, give_up_after) {
        (Some(n), Some(d)) => builder.max_attempts(n).give_up_after(d).build(),
        (Some(n), None) => builder.max_attempts(n).build(),
        (None, Some(d)) => builder.give_up_after(d).build(),
        (None, None) => {
            return Err(missing(
                "bound: give max_attempts, give_up_after or both, so that its retries end",
            ));
        }
    };
    // The values checked above are sound, so what the builder still refuses is the ladder's.
    let policy = built.map_err(|e| at(ladder_span, why(e)))?;

    let payload_mode = match k.payload.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
        None | Some(("snapshot", _)) => PayloadMode::Snapshot,
        Some(("reference", _)) => PayloadMode::Reference,
        Some((other, span)) => {
            return Err(at(
                span,
                format!("payload is {other:?}; use \"snapshot\" or \"reference\""),
            ));
        }
    };

    let http = k.http.ok_or_else(|| {
        missing("[kind.http] table: the URL its payload is POSTed to (url = \"https://...\")")
    })?;
    // The request must end before the attempt does, so that the handler says what a slow
    // answer means: a tenth of the timeout, at most a second, is left for the rest.
    let timeout = timeout
        .into_inner()
        .0
        .to_std()
        .unwrap_or(StdDuration::from_secs(30));
    let request_timeout = timeout - (timeout / 10).min(StdDuration::from_secs(1));
    let http = declare_http(src, &name, &dependency, request_timeout, http.into_inner())?;
    Ok(Declared {
        at: src.location(name_span.start),
        name,
        dependency,
        policy,
        payload_mode,
        schedule,
        alert_route,
        http,
    })
}

/// A kind's schedule settings as the file writes them.
struct ScheduleKeys<'a> {
    schedule: &'a Option<Spanned<String>>,
    timezone: &'a Option<Spanned<String>>,
    missed: &'a Option<Spanned<String>>,
    grace: &'a Option<Spanned<crate::spec::DurationSpec>>,
    payload: &'a Option<Spanned<toml::Table>>,
}

/// The kind's schedule (`schedule`, `timezone`, `missed`, `grace`, `schedule_payload`), or none;
/// a schedule's setting without a schedule is refused, naming the setting.
fn declare_schedule(
    at: &dyn Fn(Range<usize>, String) -> Error,
    k: ScheduleKeys<'_>,
) -> Result<Option<Schedule>> {
    let Some(expression) = k.schedule else {
        let stray = [
            k.timezone.as_ref().map(|v| ("timezone", v.span())),
            k.missed.as_ref().map(|v| ("missed", v.span())),
            k.grace.as_ref().map(|v| ("grace", v.span())),
            k.payload.as_ref().map(|v| ("schedule_payload", v.span())),
        ];
        if let Some((key, span)) = stray.into_iter().flatten().next() {
            return Err(at(
                span,
                format!(
                    "{key} is a schedule's setting, and the kind declares no schedule (schedule = \"*/5 * * * *\")"
                ),
            ));
        }
        return Ok(None);
    };
    let mut schedule = Schedule::cron(expression.get_ref())
        .map_err(|e| at(expression.span(), format!("schedule: {}", why(e))))?;
    if let Some(zone) = k.timezone {
        schedule = schedule
            .in_zone(zone.get_ref())
            .map_err(|e| at(zone.span(), format!("timezone: {}", why(e))))?;
    }
    if let Some(missed) = k.missed {
        let rule = missed.get_ref().parse::<Missed>().map_err(|_| {
            at(
                missed.span(),
                format!(
                    "missed is {:?}; use \"run_once\" (one operation for the latest missed tick) or \"skip\" (none)",
                    missed.get_ref().chars().take(40).collect::<String>()
                ),
            )
        })?;
        schedule = schedule.missed(rule);
    }
    if let Some(grace) = k.grace {
        schedule = schedule
            .grace(grace.get_ref().0)
            .map_err(|e| at(grace.span(), format!("grace: {}", why(e))))?;
    }
    if let Some(payload) = k.payload {
        let json = serde_json::to_value(payload.get_ref())
            .map_err(|e| at(payload.span(), format!("schedule_payload: {e}")))?;
        schedule = schedule
            .payload(json)
            .map_err(|e| at(payload.span(), format!("schedule_payload: {}", why(e))))?;
    }
    Ok(Some(schedule))
}

/// An `http(s)://` URL from the file: no password in it (credentials come from the
/// environment, in headers).
fn url(src: &Source<'_>, kind: &str, key: &str, value: &Spanned<String>) -> Result<reqwest::Url> {
    let text = value
        .get_ref()
        .replace(EFFECT_KEY_PLACEHOLDER, "effect-key");
    let at = |message: String| src.error(value.span(), format!("kind {kind:?}: {message}"));
    let url = reqwest::Url::parse(&text).map_err(|e| at(format!("{key} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(at(format!("{key} must be http:// or https://")));
    }
    if url.password().is_some() || !url.username().is_empty() {
        return Err(at(format!(
            "{key} holds credentials; a kinds file never does: send them in a header valued \
             from the environment (headers = {{ Authorization = \"env:NAME\" }})"
        )));
    }
    Ok(url)
}

fn declare_http(
    src: &Source<'_>,
    kind: &str,
    dependency: &str,
    request_timeout: StdDuration,
    h: HttpSpec,
) -> Result<HttpSettings> {
    let at =
        |span: Range<usize>, message: String| src.error(span, format!("kind {kind:?}: {message}"));
    if h.url.get_ref().contains(EFFECT_KEY_PLACEHOLDER) {
        return Err(at(
            h.url.span(),
            "url is the same for every operation (the effect key goes in its header); \
             {effect_key} belongs in reconcile_url"
                .into(),
        ));
    }
    let post_url = url(src, kind, "url", &h.url)?;
    let reconcile_url = match &h.reconcile_url {
        Some(r) => {
            url(src, kind, "reconcile_url", r)?;
            Some(r.get_ref().clone())
        }
        None => None,
    };
    let idempotency_header = match &h.idempotency_header {
        Some(name) => header_name(src, kind, name)?,
        None => HeaderName::from_static("idempotency-key"),
    };
    let mut headers = Vec::new();
    for (name, value) in &h.headers {
        let header = header_name(src, kind, name)?;
        if header == idempotency_header {
            return Err(at(
                name.span(),
                format!(
                    "header {} carries the effect key; the handler sets it",
                    name.get_ref()
                ),
            ));
        }
        if matches!(header.as_str(), "content-type" | "content-length" | "host") {
            return Err(at(
                name.span(),
                format!("header {} is the handler's to set", name.get_ref()),
            ));
        }
        let var = value
            .get_ref()
            .strip_prefix(ENV_PREFIX)
            .filter(|v| valid_var(v))
            .ok_or_else(|| {
                // Never quote the value: it may be the secret the author meant to hide.
                at(
                    value.span(),
                    format!(
                        "header {} must name an environment variable, as \"env:NAME\"; \
                         header values (secrets above all) come from the environment, never \
                         from the file",
                        name.get_ref()
                    ),
                )
            })?;
        headers.push(EnvHeader::new(
            header,
            name.get_ref().clone(),
            var.to_owned(),
            src.location(value.span().start),
        ));
    }
    let remote_id = match &h.remote_id {
        None => None,
        Some(r) => Some(match (&r.get_ref().header, &r.get_ref().json) {
            (Some(name), None) => RemoteId::Header(name.parse::<HeaderName>().map_err(|_| {
                at(
                    r.span(),
                    format!("remote_id header {name:?} is not a header name"),
                )
            })?),
            (None, Some(field)) => RemoteId::Json(pointer(field)),
            _ => {
                return Err(at(
                    r.span(),
                    "remote_id names one place: { header = \"Location\" } or { json = \"id\" }"
                        .into(),
                ));
            }
        }),
    };
    let mut overrides = BTreeMap::new();
    for (code, verdict) in &h.status {
        let status = code
            .get_ref()
            .parse::<u16>()
            .ok()
            .filter(|s| (100..=599).contains(s))
            .ok_or_else(|| {
                at(
                    code.span(),
                    format!(
                        "status {:?} is not an HTTP status code (100 to 599)",
                        code.get_ref().chars().take(20).collect::<String>()
                    ),
                )
            })?;
        let verdict = Verdict::parse(verdict.get_ref())
            .map_err(|why| at(verdict.span(), format!("status {status}: {why}")))?;
        overrides.insert(status, verdict);
    }
    Ok(HttpSettings {
        kind: kind.to_owned(),
        dependency: dependency.to_owned(),
        url: post_url,
        reconcile_url,
        idempotency_header,
        headers,
        mapping: Mapping {
            overrides,
            remote_id,
            error_message: h.error_message.as_ref().map(|p| pointer(p.get_ref())),
            error_field: h.error_field.as_ref().map(|p| pointer(p.get_ref())),
        },
        request_timeout,
    })
}

/// What core's error says, without its "invalid input: " prefix (the location says it).
fn why(e: oprec_core::Error) -> String {
    match e {
        oprec_core::Error::InvalidInput(m) => m,
        other => other.to_string(),
    }
}

/// A JSON Pointer from what the file says: `/data/id` as it is, a bare `id` as `/id`.
fn pointer(text: &str) -> String {
    if text.starts_with('/') {
        text.to_owned()
    } else {
        format!("/{}", text.replace('~', "~0").replace('/', "~1"))
    }
}

fn header_name(src: &Source<'_>, kind: &str, name: &Spanned<String>) -> Result<HeaderName> {
    name.get_ref().parse::<HeaderName>().map_err(|_| {
        src.error(
            name.span(),
            format!(
                "kind {kind:?}: {:?} is not an HTTP header name",
                name.get_ref().chars().take(40).collect::<String>()
            ),
        )
    })
}

/// The error for a file the TOML parser refused (syntax, unknown keys, wrong types).
pub(crate) fn parse_error(src: &Source<'_>, e: &toml::de::Error) -> Error {
    src.error(e.span().unwrap_or(0..0), e.message())
}
