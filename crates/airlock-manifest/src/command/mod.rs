//! Command tools: a checked manifest entry as a [`Handler`] that runs a program.
//!
//! A call builds argv from the arguments ([`argv`]), runs the program through the one spawn
//! site ([`crate::process`]), which keeps at most what a reply can show, redacts from it every
//! secret the server knows (one redactor for all tools and both streams), and reports
//! (`reply`): the output its `stderr` mode asks for, under the reply's cap, and on failure
//! (`isError: true`) how it ended. Dropping the call's future (timeout, cancellation,
//! shutdown) kills the command's process group.
//!
//! A manifest's `[[prompt]]` becomes a dynamic prompt (its texts rendered in one pass), and
//! each file of a `[[resource]]` root a fixed resource read through [`crate::files`].

pub mod argv;
mod catalog;
mod reply;

pub use catalog::{CATALOG_REVISION, DIGEST_META_KEY, catalog, digest_meta};

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::manifest::checked::StderrMode;
use crate::manifest::{CommandTool, Manifest, PromptSpec, ResourceRoot};
use crate::process::{self, CommandSpec, Stderr};
use crate::secrets::{Cut, Redactor, Secret};
use airlock::{
    BoxFuture, BuildError, CallContext, CallLog, Content, Handler, Prompt, PromptMessage, Resource,
    ResourceBody, RunNote, Server, ServerBuilder, Tool, ToolOutput,
};

/// The server a checked manifest describes.
///
/// # Errors
///
/// A [`BuildError`] if the generated schemas are refused (a bug: the manifest layer only
/// generates supported keywords).
pub fn server(manifest: Manifest) -> Result<Server, BuildError> {
    server_redacting(manifest, Vec::new())
}

/// The server a checked manifest describes, whose redactor also knows `more` secrets: over
/// HTTP, the bearer tokens (`Tokens::secrets`), so that a token reaching a command's output
/// (a proxy log it reads) is replaced like a manifest secret.
///
/// One redactor serves every tool, on both streams: it holds every tool's `secret_env` values
/// and `more`, so a tool that prints another tool's secret (from a log file it reads, say) is
/// redacted too.
///
/// # Errors
///
/// As [`server`].
pub fn server_redacting(manifest: Manifest, more: Vec<Secret>) -> Result<Server, BuildError> {
    server_with(manifest, more, None)
}

/// [`server_redacting`], writing each call's audit record to `call_log` when one is given.
///
/// # Errors
///
/// As [`server`].
pub fn server_with(
    manifest: Manifest,
    more: Vec<Secret>,
    call_log: Option<Arc<CallLog>>,
) -> Result<Server, BuildError> {
    builder_with(manifest, more, call_log)?.build()
}

/// [`server_with`] before it is built: a CLI adds what it needs (a reload hook,
/// [`ServerBuilder::reload`]) and builds it. The catalog's digest is in its server info's
/// `_meta` (`airlock/catalogDigest`), read from a twin built from the same parts, with quotas
/// of its own: asking the served server would spend its quotas before its first client, and
/// a second load of the manifest could list a resource root that changed meanwhile.
///
/// # Errors
///
/// As [`server`].
pub fn builder_with(
    manifest: Manifest,
    more: Vec<Secret>,
    call_log: Option<Arc<CallLog>>,
) -> Result<ServerBuilder, BuildError> {
    let (parts, limits) = parts(manifest, more);
    let twin = parts.builder(limits.clone()).build()?;
    let meta = digest_meta(&catalog(&twin));
    drop(twin);
    let mut builder = parts.builder(limits).server_info_meta(meta);
    if let Some(log) = call_log {
        builder = builder.call_log(log);
    }
    Ok(builder)
}

/// The tools a reload of `manifest` puts in force ([`Server::replace_tools`]): the whole
/// manifest is built as [`server_with`] builds it (its prompts and resources too, so a
/// manifest a start would refuse is refused here), and only its tools are kept. Their
/// redactor knows their `secret_env` values and `more`.
///
/// # Errors
///
/// As [`server`].
pub fn reloaded_tools(manifest: Manifest, more: Vec<Secret>) -> Result<Vec<Tool>, BuildError> {
    let (parts, limits) = parts(manifest, more);
    parts.builder(limits).build()?;
    Ok(parts
        .tools
        .iter()
        .map(|tool| tool_of(Arc::clone(tool), Arc::clone(&parts.redactor)))
        .collect())
}

/// What `manifest`'s server is built from, and its limits.
fn parts(manifest: Manifest, more: Vec<Secret>) -> (Parts, airlock::Limits) {
    let Manifest {
        name,
        version,
        title,
        instructions,
        limits,
        tools,
        prompts,
        resources,
        ..
    } = manifest;
    let redactor = Arc::new(Redactor::new(
        tools.iter().flat_map(|tool| &tool.secrets).chain(&more),
    ));
    let limits = task_budget(limits, &tools);
    let parts = Parts {
        name,
        version,
        title,
        instructions,
        tools: tools.into_iter().map(Arc::new).collect(),
        prompts: prompts.into_iter().map(Arc::new).collect(),
        resources,
        redactor,
    };
    (parts, limits)
}

/// `limits` with room for a result of every task tool: each task reserves the largest
/// `max_output_bytes` of the manifest's task tools (with room for a reply's notes) of the
/// task budget, which holds at least one.
fn task_budget(mut limits: airlock::Limits, tools: &[CommandTool]) -> airlock::Limits {
    let largest = tools
        .iter()
        .filter(|tool| tool.task != airlock::TaskMode::Never)
        .map(|tool| tool.max_output_bytes.saturating_add(TASK_RESULT_NOTES))
        .max();
    if let Some(largest) = largest.and_then(std::num::NonZeroUsize::new) {
        limits.max_task_result_bytes = limits.max_task_result_bytes.max(largest);
        limits.max_task_bytes = limits.max_task_bytes.max(limits.max_task_result_bytes);
    }
    limits
}

/// Room in a task's result for what a reply adds to a command's output (how it ended, where
/// it was cut).
const TASK_RESULT_NOTES: usize = 64 * 1024;

/// What a checked manifest's server is built from, shared by the server and its listing twin
/// (the tools and prompts behind `Arc`s, the resource files borrowed).
struct Parts {
    name: String,
    version: String,
    title: Option<String>,
    instructions: Option<String>,
    tools: Vec<Arc<CommandTool>>,
    prompts: Vec<Arc<PromptSpec>>,
    resources: Vec<ResourceRoot>,
    redactor: Arc<Redactor>,
}

impl Parts {
    /// A builder of the server, under `limits`.
    fn builder(&self, limits: airlock::Limits) -> ServerBuilder {
        let mut builder: ServerBuilder =
            Server::builder(self.name.as_str(), self.version.as_str()).limits(limits);
        if let Some(title) = &self.title {
            builder = builder.title(title.as_str());
        }
        if let Some(instructions) = &self.instructions {
            builder = builder.instructions(instructions.as_str());
        }
        for tool in &self.tools {
            builder = builder.tool(tool_of(Arc::clone(tool), Arc::clone(&self.redactor)));
        }
        for prompt in &self.prompts {
            builder = builder.prompt(prompt_of(Arc::clone(prompt)));
        }
        for root in &self.resources {
            for resource in resources_of(root, &self.redactor) {
                builder = builder.resource(resource);
            }
        }
        builder
    }
}

/// A manifest prompt as the library's dynamic prompt: its messages rendered in one pass over
/// the checked arguments.
fn prompt_of(prompt: Arc<PromptSpec>) -> Prompt {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for argument in &prompt.arguments {
        let mut property = Map::new();
        property.insert("type".into(), Value::from("string"));
        if let Some(description) = &argument.description {
            property.insert("description".into(), Value::from(description.as_str()));
        }
        properties.insert(argument.name.clone(), Value::Object(property));
        if argument.required {
            required.push(Value::from(argument.name.as_str()));
        }
    }
    let schema = serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
    });
    let mut builder = Prompt::builder(prompt.name.as_str());
    if let Some(title) = &prompt.title {
        builder = builder.title(title.as_str());
    }
    if let Some(description) = &prompt.description {
        builder = builder.description(description.as_str());
    }
    builder.dynamic(schema, move |values| {
        prompt
            .messages
            .iter()
            .map(|message| PromptMessage::new(message.role, Content::Text(message.render(&values))))
            .collect()
    })
}

/// A resource root's files as the library's fixed resources, each read at `resources/read`
/// time confined beneath the root ([`crate::files`]), redacted like a command's output (and
/// refused if that takes it past `max_bytes`), text when it is UTF-8 and a blob otherwise. A file that cannot be read safely gives nothing:
/// the peer gets `resource not found`, the log (stderr) the reason, without the path.
fn resources_of(root: &ResourceRoot, redactor: &Arc<Redactor>) -> Vec<Resource> {
    let ResourceRoot {
        title,
        description,
        mime_type,
        max_bytes,
        root,
        files,
        ..
    } = root;
    let max_bytes = *max_bytes;
    files
        .iter()
        .map(|file| {
            let mut builder = Resource::builder(file.uri.as_str(), file.name.as_str());
            if let Some(title) = &title {
                builder = builder.title(title.as_str());
            }
            if let Some(description) = &description {
                builder = builder.description(description.as_str());
            }
            if let Some(mime_type) = &mime_type {
                builder = builder.mime_type(mime_type.as_str());
            }
            let root = Arc::clone(root);
            let redactor = Arc::clone(redactor);
            let relative = file.relative.clone();
            let listed = file.id;
            builder.fallible(move || match root.read(&relative, listed, max_bytes) {
                Ok(bytes) => {
                    let bytes = if redactor.is_empty() {
                        bytes
                    } else {
                        redactor.redact(&bytes, Cut::default())
                    };
                    // Whole or not at all: markers longer than the secrets they replace must
                    // not take a read past the cap the operator set.
                    if bytes.len() > max_bytes {
                        tracing::debug!(
                            "a resource file was refused: longer than its cap once redacted"
                        );
                        return None;
                    }
                    Some(match String::from_utf8(bytes) {
                        Ok(text) => ResourceBody::Text(text),
                        Err(binary) => ResourceBody::blob(binary.as_bytes()),
                    })
                }
                Err(why) => {
                    tracing::debug!(?why, "a resource file was refused at read time");
                    None
                }
            })
        })
        .collect()
}

fn tool_of(tool: Arc<CommandTool>, redactor: Arc<Redactor>) -> Tool {
    let schema = crate::manifest::input_schema(&tool);
    let mut builder = Tool::builder(tool.name.as_str())
        .description(tool.description.as_str())
        .annotations(tool.annotations.clone());
    if let Some(title) = &tool.title {
        builder = builder.title(title.as_str());
    }
    if let Some(timeout) = tool.timeout {
        builder = builder.timeout(timeout);
    }
    builder = builder.task(tool.task);
    if let Some(timeout) = tool.task_timeout {
        builder = builder.task_timeout(timeout);
    }
    if let Some(rate) = tool.rate {
        builder = builder.rate(rate);
    }
    if !tool.scopes.is_empty() {
        builder = builder.scopes(tool.scopes.iter().map(String::as_str));
    }
    builder.dynamic(schema, None, Arc::new(CommandHandler { tool, redactor }))
}

/// Runs one command tool.
struct CommandHandler {
    tool: Arc<CommandTool>,
    /// The server's one redactor: every secret of every tool, and the HTTP tokens.
    redactor: Arc<Redactor>,
}

impl Handler for CommandHandler {
    fn call(&self, arguments: Map<String, Value>, context: CallContext) -> BoxFuture<ToolOutput> {
        let tool = Arc::clone(&self.tool);
        let redactor = Arc::clone(&self.redactor);
        // A task's run: its output so far is shown redacted, as a reply would be, with the
        // bytes beside each cut withheld (its start once bytes were dropped, and always its
        // end: the command may go on writing a secret it began).
        let so_far = context.output_so_far().cloned();
        // A traced call: the command is told its own span, as the W3C environment carrier
        // says (after the manifest's variables, so a manifest cannot name another).
        let trace = context
            .trace_parent()
            .map(|trace| (trace.traceparent(), trace.tracestate().map(str::to_owned)));
        if let Some(so_far) = &so_far {
            let redactor = Arc::clone(&redactor);
            so_far.render_with(move |bytes, dropped| {
                let cut = Cut {
                    start: dropped,
                    end: true,
                };
                String::from_utf8_lossy(&redactor.redact(bytes, cut)).into_owned()
            });
        }
        Box::pin(async move {
            // Path checks touch the file system; on a slow mount they must not stall the
            // runtime's workers.
            let built = {
                let tool = Arc::clone(&tool);
                tokio::task::spawn_blocking(move || argv::build(&tool, &arguments)).await
            };
            let invocation = match built {
                Ok(Ok(invocation)) => invocation,
                Ok(Err(refusal)) => {
                    return ToolOutput::error(format!("Invalid arguments: {refusal}"))
                        .noting(RunNote::arguments_refused());
                }
                Err(_) => return ToolOutput::error("The tool could not check its arguments."),
            };
            let mut env = tool.env.clone();
            env.extend(tool.secrets.iter().map(Secret::expose_to_child));
            if let Some((traceparent, tracestate)) = trace {
                env.retain(|(name, _)| name != "TRACEPARENT" && name != "TRACESTATE");
                env.push(("TRACEPARENT".into(), traceparent.into()));
                if let Some(tracestate) = tracestate {
                    env.push(("TRACESTATE".into(), tracestate.into()));
                }
            }
            let spec = CommandSpec {
                program: tool.program.clone(),
                args: invocation.args,
                env,
                workdir: tool.workdir.clone(),
                stdin: invocation.stdin,
                max_stdout_bytes: tool.max_output_bytes,
                max_stderr_bytes: tool.max_output_bytes,
                // What a reply can show: a command that prints more costs no more memory.
                max_kept_bytes: tool.max_output_bytes,
                stderr: match tool.stderr {
                    StderrMode::Separate => Stderr::Separate,
                    StderrMode::Merge => Stderr::Merged,
                    StderrMode::Tail(bytes) => Stderr::Tail(bytes.get()),
                    // Kept, not shown, but for the launcher's line when the sandbox fails.
                    StderrMode::Drop => Stderr::Tail(LAUNCHER_LINE_BYTES),
                },
                sandbox: tool.sandbox.clone(),
                so_far,
            };
            match process::run(&spec).await {
                Ok(finished) => reply::report(&tool, &redactor, &finished),
                Err(process::SpawnError::Sandbox(why)) => {
                    tracing::error!(tool = tool.name.as_str(), why, "sandbox not available");
                    ToolOutput::error(
                        "The sandbox could not be set up, so the command did not run.",
                    )
                }
                Err(error) => {
                    tracing::warn!(tool = tool.name.as_str(), %error, "command could not be run");
                    ToolOutput::error("The command could not be started.")
                }
            }
        })
    }
}

/// Bytes of stderr kept for a tool that drops it (`stderr = "drop"`), shown only when the
/// sandbox could not be set up: the launcher's one fixed line naming the step that failed.
const LAUNCHER_LINE_BYTES: usize = 512;
