//! OTLP export of spans (feature `otel`), configured the usual way: on when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and
//! `OTEL_SDK_DISABLED` is not `true`; HTTP/protobuf to that endpoint (`/v1/traces` appended to
//! the first), the service named by `OTEL_SERVICE_NAME` (`oprec` when unset), other resource
//! attributes from `OTEL_RESOURCE_ATTRIBUTES`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::registry::LookupSpan;

/// The exporting layer (info spans and up: oprec's spans, whatever the log level) and its
/// provider, when the environment asks for export; an error says why the exporter failed.
pub(crate) type OtelLayer<S> = (Box<dyn Layer<S> + Send + Sync>, SdkTracerProvider);

/// Builds the exporting layer if the environment asks for it.
pub(crate) fn layer<S>() -> Result<Option<OtelLayer<S>>, String>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    if disabled
        || !(set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    {
        return Ok(None);
    }
    // reqwest is built without a TLS crypto provider of its own (rustls-no-provider): the one
    // the rest of oprec uses, ring, must be in place before the exporter builds its client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("the OTLP exporter: {e}"))?;
    let mut resource = Resource::builder();
    if !set("OTEL_SERVICE_NAME") {
        resource = resource.with_service_name("oprec");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("oprec");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(LevelFilter::INFO)
        .boxed();
    Ok(Some((layer, provider)))
}
