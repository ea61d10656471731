//! The one server of this crate's unit tests and fuzz targets: the engine's tests, the stdio
//! engine's fuzz target and the HTTP fuzz target all run these tools, each with its own
//! limits.
//!
//! `echo` repeats `text` (at most 100 characters) `times` times (1 to 3, default 1), so a
//! call can pass, fail the schema on a length, a range or a type, and answer with a known
//! text; `fail` always returns a tool error. What a test needs besides (a tool that panics,
//! fillers for pagination) it passes as `extra`. The fuzz targets' servers also have the
//! prompt `greet` ([`prompts`]).

use std::sync::Arc;

use crate::engine::Shared;
use crate::limits::Limits;
use crate::output::{ToolError, ToolOutput};
use crate::response::ServerInfo;
use crate::tools::{NoArguments, Registry, Tool};

/// The text `fail` fails with.
pub(crate) const FAILURE: &str = "failed";

/// `echo`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    #[schemars(length(max = 100))]
    text: String,
    #[schemars(range(min = 1, max = 3))]
    times: Option<u8>,
}

/// The server: `echo`, `fail`, then `extra`, under `limits`. Its name is `test` 1.0 (title
/// `Test`) with the instructions `Be nice.`.
///
/// # Errors
///
/// The tools do not build a registry (an `extra` tool named like another, or too many).
#[cfg(test)]
pub(crate) fn shared(
    limits: Limits,
    extra: Vec<Tool>,
) -> Result<Arc<Shared>, crate::tools::BuildError> {
    let mut tools = tools();
    tools.extend(extra);
    let registry = Registry::new(tools)?;
    Ok(crate::state::shared(
        ServerInfo {
            name: "test".into(),
            version: "1.0".into(),
            title: Some("Test".into()),
            meta: None,
        },
        Some("Be nice.".into()),
        registry,
        limits,
    ))
}

/// `echo` and `fail`, for a test that builds its own server (its own quotas' clock).
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        Tool::builder("echo")
            .description("Repeats text")
            .handler(|args: Echo| async move {
                ToolOutput::text(args.text.repeat(usize::from(args.times.unwrap_or(1))))
            }),
        Tool::builder("fail")
            .description("Always fails")
            .handler(|_: NoArguments| async { ToolError::new(FAILURE) }),
    ]
}

/// The server with `prompts` besides its tools.
///
/// # Errors
///
/// The prompts do not build a registry.
#[cfg(test)]
pub(crate) fn with_prompts(
    limits: Limits,
    prompts: Vec<crate::prompts::Prompt>,
) -> Result<Arc<Shared>, crate::tools::BuildError> {
    with_everything(limits, prompts, Vec::new())
}

/// The server with `prompts` and `resources` besides its tools.
///
/// # Errors
///
/// The prompts or resources do not build a registry.
pub(crate) fn with_everything(
    limits: Limits,
    prompts: Vec<crate::prompts::Prompt>,
    resources: Vec<crate::resources::Resource>,
) -> Result<Arc<Shared>, crate::tools::BuildError> {
    served(limits, prompts, resources, None)
}

/// The same, offering resource subscriptions announced through `updates` when given.
///
/// # Errors
///
/// The prompts or resources do not build a registry.
pub(crate) fn served(
    limits: Limits,
    prompts: Vec<crate::prompts::Prompt>,
    resources: Vec<crate::resources::Resource>,
    updates: Option<crate::ResourceUpdates>,
) -> Result<Arc<Shared>, crate::tools::BuildError> {
    served_with(tools(), limits, prompts, resources, updates)
}

/// [`served`] with `tools` instead of the usual ones.
pub(crate) fn served_with(
    tools: Vec<Tool>,
    limits: Limits,
    prompts: Vec<crate::prompts::Prompt>,
    resources: Vec<crate::resources::Resource>,
    updates: Option<crate::ResourceUpdates>,
) -> Result<Arc<Shared>, crate::tools::BuildError> {
    let registry = Registry::new(tools)?;
    let prompts = crate::prompts::PromptRegistry::new(prompts)?;
    let resources = crate::resources::ResourceRegistry::new(resources)?;
    crate::state::shared_logging(
        ServerInfo {
            name: "test".into(),
            version: "1.0".into(),
            title: Some("Test".into()),
            meta: None,
        },
        None,
        registry,
        crate::state::Surface {
            prompts,
            resources,
            updates,
            request_states: None,
            reload: None,
            #[cfg(feature = "metrics")]
            metrics: None,
            #[cfg(feature = "otel")]
            traces: None,
        },
        limits,
        None,
    )
}

/// `greet`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who.
    name: String,
    /// How.
    tone: Option<String>,
}

/// `greet`: a prompt with a required and an optional argument.
pub(crate) fn prompts() -> Vec<crate::prompts::Prompt> {
    use crate::prompts::{Prompt, PromptMessage};
    vec![
        Prompt::builder("greet")
            .description("Greets")
            .handler(|args: Greet| {
                vec![PromptMessage::user(format!(
                    "Greet {} {}",
                    args.name,
                    args.tone.unwrap_or_default()
                ))]
            }),
    ]
}

/// `item`'s template variable.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Item {
    id: String,
}

/// A fixed text resource `test://notes`, a fixed binary one `test://logo`, and the template
/// `test://item/{id}`.
pub(crate) fn resources() -> Vec<crate::resources::Resource> {
    use crate::output::ResourceBody;
    use crate::resources::Resource;
    vec![
        Resource::builder("test://notes", "notes")
            .mime_type("text/plain")
            .fixed(|| ResourceBody::text("Buy milk.")),
        Resource::builder("test://logo", "logo")
            .mime_type("image/png")
            .fixed(|| ResourceBody::blob(b"\x89PNG")),
        Resource::builder("test://item/{id}", "item")
            .description("One item")
            .template(|args: Item| ResourceBody::text(format!("Item {}", args.id))),
    ]
}
