//! Command tools: a checked manifest entry as a [`Handler`] that runs a program.
//!
//! A call builds argv from the arguments ([`argv`]), runs the program through the one spawn
//! site ([`crate::process`]), which keeps at most what a reply can show, redacts from it every
//! secret the server knows (one redactor for all tools and both streams), and reports
//! (`reply`): the output its `stderr` mode asks for, under the reply's cap, and on failure
//! (`isError: true`) how it ended. Dropping the call's future (timeout, cancellation,
//! shutdown) kills the command's process group.

pub mod argv;
mod reply;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::manifest::checked::StderrMode;
use crate::manifest::{CommandTool, Manifest};
use crate::process::{self, CommandSpec, Stderr};
use airlock::secrets::{Redactor, Secret};
use airlock::{
    BoxFuture, BuildError, CallContext, CallLog, Handler, RunNote, Server, ServerBuilder, Tool,
    ToolOutput,
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
    let Manifest {
        name,
        version,
        title,
        instructions,
        limits,
        tools,
        ..
    } = manifest;
    let redactor = Arc::new(Redactor::new(
        tools.iter().flat_map(|tool| &tool.secrets).chain(&more),
    ));
    let mut builder: ServerBuilder = Server::builder(name, version).limits(limits);
    if let Some(log) = call_log {
        builder = builder.call_log(log);
    }
    if let Some(title) = title {
        builder = builder.title(title);
    }
    if let Some(instructions) = instructions {
        builder = builder.instructions(instructions);
    }
    for tool in tools {
        builder = builder.tool(tool_of(tool, Arc::clone(&redactor)));
    }
    builder.build()
}

fn tool_of(tool: CommandTool, redactor: Arc<Redactor>) -> Tool {
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
    if let Some(rate) = tool.rate {
        builder = builder.rate(rate);
    }
    if !tool.scopes.is_empty() {
        builder = builder.scopes(tool.scopes.iter().map(String::as_str));
    }
    builder.dynamic(
        schema,
        None,
        Arc::new(CommandHandler {
            tool: Arc::new(tool),
            redactor,
        }),
    )
}

/// Runs one command tool.
struct CommandHandler {
    tool: Arc<CommandTool>,
    /// The server's one redactor: every secret of every tool, and the HTTP tokens.
    redactor: Arc<Redactor>,
}

impl Handler for CommandHandler {
    fn call(&self, arguments: Map<String, Value>, _context: CallContext) -> BoxFuture<ToolOutput> {
        let tool = Arc::clone(&self.tool);
        let redactor = Arc::clone(&self.redactor);
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
