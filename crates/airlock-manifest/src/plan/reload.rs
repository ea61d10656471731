//! The reload on SIGHUP: the served file read and checked again as at start, with the same
//! checks, limits and extra secrets; only its tools are replaced.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use airlock::CallLog;
use secrecy::SecretString;

use super::LimitOverrides;
use super::vetting::Vetting;
use crate::manifest::{self, Manifest};
use crate::{command, secrets};

/// What a reload needs from the start: the same checks, the same command-line limits, the
/// same extra secrets for the redactor (tokens, the Redis URL).
#[derive(Debug)]
pub(super) struct Reloading {
    vetting: Vetting,
    overrides: LimitOverrides,
    /// The secrets the redactor knows besides the manifest's, by variable name.
    known: Vec<(String, SecretString)>,
}

impl Reloading {
    /// The checks a manifest must pass (`vetting`), the limits given on the command line
    /// (`overrides`) and the secrets the redactor knows besides the manifest's (`known`).
    pub(super) fn new(
        vetting: Vetting,
        overrides: LimitOverrides,
        known: Vec<(String, SecretString)>,
    ) -> Self {
        Self {
            vetting,
            overrides,
            known,
        }
    }

    /// The extra secrets, as the redactor takes them.
    fn known(&self) -> Vec<secrets::Secret> {
        self.known
            .iter()
            .map(|(name, value)| secrets::Secret::new(name.clone(), value.clone()))
            .collect()
    }

    /// The tools of the manifest at `path`, read and checked whole as at start; what the
    /// manifest changed besides its tools is said (it applies at the next start).
    fn tools(&self, path: &Path, fixed: &str) -> Result<Vec<airlock::Tool>, airlock::ReloadError> {
        let mut manifest = manifest::load(path)?;
        self.overrides.apply(&mut manifest.limits);
        if !self.vetting.passes(&manifest) {
            return Err("the manifest was refused (the line before says why)".into());
        }
        if fixed_parts(&manifest) != fixed {
            tracing::warn!(
                manifest = manifest.source.as_str(),
                "the manifest changed outside its tools ([limits], prompts, resources, name or \
                 instructions): a reload replaces the tools only; the rest applies at the next \
                 start"
            );
        }
        tracing::info!(
            manifest = manifest.source.as_str(),
            tools = manifest.tools.len(),
            "manifest loaded"
        );
        Ok(command::reloaded_tools(manifest, self.known())?)
    }
}

/// What a reload does not change, as text to compare: everything but the tools.
fn fixed_parts(manifest: &Manifest) -> String {
    format!(
        "{:?}",
        (
            &manifest.name,
            &manifest.version,
            &manifest.title,
            &manifest.instructions,
            &manifest.limits,
            &manifest.shared_store,
            &manifest.prompts,
            &manifest.resources,
        )
    )
}

/// The server of `manifest`, reloading the file at `reload_path` on SIGHUP when there is one.
///
/// # Errors
///
/// A [`airlock::BuildError`] if the manifest's tools are refused.
pub(super) fn built(
    manifest: Manifest,
    reload_path: Option<PathBuf>,
    reloading: Reloading,
    call_log: Arc<CallLog>,
    metrics: Option<Arc<airlock::metrics::Metrics>>,
    traces: Option<Arc<airlock::otel::Traces>>,
) -> Result<airlock::Server, airlock::BuildError> {
    let fixed = fixed_parts(&manifest);
    let mut builder = command::builder_with(manifest, reloading.known(), Some(call_log))?;
    if let Some(metrics) = metrics {
        builder = builder.metrics(metrics);
    }
    if let Some(traces) = traces {
        builder = builder.traces(traces);
    }
    match reload_path {
        Some(path) => builder
            .reload(move || reloading.tools(&path, &fixed))
            .build(),
        None => builder.build(),
    }
}
