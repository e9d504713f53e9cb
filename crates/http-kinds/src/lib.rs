//! oprec-http-kinds: kinds declared in a TOML file and run by an HTTP handler, so that a service
//! written in any language gets oprec's durable operations without writing Rust. Each `[[kind]]`
//! declares its retry policy (checked at load by the same builder and rules as a kind written in
//! Rust), its dependency, and where its payload is POSTed; the answer is mapped onto the failure
//! classes by the seed's table, overridable status by status, and an optional reconcile URL
//! settles unknown outcomes. Header values, secrets above all, come from the environment: the
//! file names variables, never values, and nothing here prints one.
//!
//! ```toml
//! [[kind]]
//! name = "shipment.create"
//! dependency = "shipping-provider"
//! timeout = "10s"
//! max_attempts = 6
//! give_up_after = "48h"
//! ladder = ["0s", "1m", "5m", "25m", "2h", "10h"]
//! jitter = "equal"
//!
//! [kind.http]
//! url = "https://shipper.example/v1/shipments"
//! reconcile_url = "https://shipper.example/v1/shipments/by-key/{effect_key}"
//! headers = { Authorization = "env:SHIPPER_TOKEN" }
//! remote_id = { json = "id" }
//! ```
//!
//! Not here: the worker that runs the kinds (oprec-runtime), or kinds whose handler is code.

mod declare;
mod error;
mod handler;
mod mapping;
mod secret;
mod spec;

use std::path::Path;

use oprec_core::Outcome;
use oprec_runtime::{Context, Kind};
use serde_json::Value;

pub use error::{Error, Location, Result};
pub use handler::HttpHandler;
pub use mapping::{Answer, Mapping, RemoteId, Verdict, default_verdict, retry_after};

use crate::declare::Declared;
use crate::error::Source;

/// A kinds file, loaded and checked: every kind's policy is sound and its HTTP settings valid.
/// Its headers' environment variables are read by [`KindsFile::kinds`].
#[derive(Debug)]
pub struct KindsFile {
    file: String,
    declared: Vec<Declared>,
}

impl KindsFile {
    /// Reads and checks the file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<KindsFile> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Checks `text`, a kinds file named `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<KindsFile> {
        let src = Source { name: file, text };
        let spec =
            toml::from_str::<spec::FileSpec>(text).map_err(|e| declare::parse_error(&src, &e))?;
        Ok(KindsFile {
            file: file.to_owned(),
            declared: declare::declare(&src, spec)?,
        })
    }

    /// The file's name as given.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The kinds' names, in the file's order.
    pub fn names(&self) -> Vec<&str> {
        self.declared.iter().map(|d| d.name.as_str()).collect()
    }

    /// Where the file declares the kind `name` (the line of its `name = ...`).
    pub fn location(&self, name: &str) -> Option<&Location> {
        self.declared.iter().find(|d| d.name == name).map(|d| &d.at)
    }

    /// The kinds, ready to register with a worker: each header's variable read through `env`
    /// now (`|name| std::env::var(name).ok()` for the process's own), so that a missing one is an
    /// error naming its line before any operation is claimed.
    pub fn kinds(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Kind>> {
        self.declared
            .iter()
            .map(|d| kind(d, resolved(d, env)?))
            .collect()
    }

    /// The HTTP handler of the kind `name` (`None` if the file does not declare it), its
    /// headers' variables read through `env`: to call a declared endpoint from code, or to try a
    /// file against a provider.
    pub fn handler(
        &self,
        name: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<HttpHandler>> {
        let Some(d) = self.declared.iter().find(|d| d.name == name) else {
            return Ok(None);
        };
        handler_of(d, resolved(d, env)?).map(Some)
    }

    /// The kinds for a process that enqueues them but does not run them (`oprec enqueue`,
    /// `oprec import`): their policies and dependencies, without reading the headers' variables,
    /// which a producer's environment need not hold. Should such a kind run after all, each
    /// request reads its variables then, and a missing one is a configuration failure (held).
    pub fn kinds_for_enqueue(&self) -> Result<Vec<Kind>> {
        self.declared
            .iter()
            .map(|d| kind(d, d.http.clone()))
            .collect()
    }
}

/// The declaration's HTTP settings with each header's variable read through `env`.
fn resolved(d: &Declared, env: &dyn Fn(&str) -> Option<String>) -> Result<handler::HttpSettings> {
    let mut settings = d.http.clone();
    for h in &mut settings.headers {
        h.resolve(&d.name, env)?;
    }
    Ok(settings)
}

fn handler_of(d: &Declared, settings: handler::HttpSettings) -> Result<HttpHandler> {
    HttpHandler::new(settings).map_err(|e| Error::Client {
        kind: d.name.clone(),
        message: format!("{e:#}"),
    })
}

/// The runnable kind of a declaration.
fn kind(d: &Declared, settings: handler::HttpSettings) -> Result<Kind> {
    let handler = handler_of(d, settings)?;
    let run = handler.clone();
    let mut kind = Kind::new(
        d.name.clone(),
        d.policy.clone(),
        move |ctx: Context, payload: Value| {
            let handler = run.clone();
            async move {
                let remote_id = match handler.call(ctx.effect_key(), &payload).await {
                    Outcome::Succeeded { remote_id } => remote_id,
                    Outcome::Failed(failure) => return Err(failure.into()),
                };
                if let Some(id) = remote_id
                    && let Err(e) = ctx.set_remote_id(id).await
                {
                    // The effect happened (the provider said so): the operation succeeds
                    // either way; only its remote id is not kept.
                    tracing::warn!(operation = %ctx.id(), error = %e,
                        "the remote id could not be recorded");
                }
                Ok(())
            }
        },
    )
    .dependency(d.dependency.clone());
    if d.payload_mode == oprec_core::PayloadMode::Reference {
        kind = kind.reference_payload();
    }
    if let Some(schedule) = &d.schedule {
        kind = kind.schedule(schedule.clone());
    }
    if let Some(route) = &d.alert_route {
        // The kind's own route: its alerts go here before the worker's routes and default.
        let sink = oprec_runtime::WebhookSink::new(&route.0).map_err(|e| Error::Client {
            kind: d.name.clone(),
            message: format!("its alert_route: {e:#}"),
        })?;
        kind = kind.dead_letter_sink(std::sync::Arc::new(sink));
    }
    if handler.can_reconcile() {
        kind = kind.reconcile(move |ctx: Context, _payload: Value| {
            let handler = handler.clone();
            async move { handler.reconcile(ctx.effect_key()).await }
        });
    }
    Ok(kind)
}
