//! Tracing to stderr: `-v` for info, `-vv` for debug; `RUST_LOG`, when set, decides instead.
//! `--log-format json` writes one JSON object per line for a log collector. With the `otel`
//! feature, spans are also exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set (README, "Traces").

use std::io::IsTerminal;
use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines for people (colours on a terminal).
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`, `span`, `spans`.
    Json,
}

/// The format chosen at start, for the lines a command writes to stderr itself ([`notice`]).
static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Writes a line for the operator to stderr (a worker's banner, its drain notice): as it is in
/// text, and as a JSON object shaped like the log lines (`timestamp`, `level`, `target`,
/// `fields.message`) with `--log-format json`, so a collector reads every stderr line alike.
pub(crate) fn notice(target: &str, message: &str) {
    match FORMAT.get() {
        Some(LogFormat::Json) => eprintln!(
            "{}",
            serde_json::json!({
                "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                "level": "INFO",
                "fields": { "message": message },
                "target": target,
            })
        ),
        _ => eprintln!("{message}"),
    }
}

/// What the subscriber needs kept until the process ends: with the `otel` feature, the tracer
/// provider, whose drop exports the spans still queued.
pub(crate) struct Logging {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Logging {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(p) = self.provider.take()
            && let Err(e) = p.shutdown()
        {
            eprintln!("oprec: exporting the last spans failed: {e}");
        }
    }
}

/// Installs the subscriber. `default` is the level used without `-v` and without `RUST_LOG`.
pub(crate) fn init(verbose: u8, default: &str, format: LogFormat) -> Logging {
    let _ = FORMAT.set(format);
    let level = match verbose {
        0 => default,
        1 => "info",
        _ => "debug",
    };
    // lapin logs every channel the broker closes at ERROR, the expected NOT_FOUND of asking the
    // depth of a kind that has no queue yet included; every call that fails is reported by oprec
    // through the error it returns, so lapin's channel log is left out unless RUST_LOG asks.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{level},lapin::channel=off")));
    let lines = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .boxed(),
    }
    // The log level filters the lines only: the exported spans have their own filter.
    .with_filter(filter);
    #[cfg(feature = "otel")]
    {
        let (otel, provider) = match crate::otel::layer() {
            Ok(Some((layer, provider))) => (Some(layer), Some(provider)),
            Ok(None) => (None, None),
            Err(e) => {
                eprintln!("oprec: OpenTelemetry export is off: {e}");
                (None, None)
            }
        };
        let _ = tracing_subscriber::registry()
            .with(lines)
            .with(otel)
            .try_init();
        Logging { provider }
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = tracing_subscriber::registry().with(lines).try_init();
        Logging {}
    }
}
