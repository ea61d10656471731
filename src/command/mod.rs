//! Command tools: a checked manifest entry as a [`Handler`] that runs a program.
//!
//! A call builds argv from the arguments ([`argv`]), runs the program through the one spawn
//! site ([`crate::process`]), redacts from what it printed every secret the server knows (one
//! redactor for all tools and both streams), and reports: stdout on success; on failure
//! (`isError: true`), the exit status and the tail of stderr. Dropping the call's future
//! (timeout, cancellation, shutdown) kills the command's process group.

pub mod argv;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::call::CallContext;
use crate::limits::STDERR_TAIL_BYTES;
use crate::manifest::{CommandTool, Manifest, checked};
use crate::process::{self, CommandSpec, Exit, Finished};
use crate::secrets::{Cut, Redactor, Secret};
use crate::server::{Server, ServerBuilder};
use crate::tools::{BoxFuture, BuildError, Handler, Tool, ToolOutput};

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
    let schema = checked::input_schema(&tool);
    let mut builder = Tool::builder(tool.name.as_str(), tool.description.as_str())
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
                    return ToolOutput::error(format!("Invalid arguments: {refusal}"));
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
                sandbox: tool.sandbox.clone(),
            };
            match process::run(&spec).await {
                Ok(finished) => report(&tool, &redactor, &finished),
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

/// The result the model sees.
fn report(tool: &CommandTool, redactor: &Redactor, finished: &Finished) -> ToolOutput {
    // A stopped command was cut mid-write on both streams, whichever passed the cap.
    let stopped = matches!(finished.exit, Exit::Stopped(_));
    let cut = |truncated: bool| Cut {
        start: false,
        end: truncated || stopped,
    };
    let stdout = redactor.redact(&finished.stdout, cut(finished.stdout_truncated));
    let stderr = redactor.redact(&finished.stderr, cut(finished.stderr_truncated));
    let stdout = String::from_utf8_lossy(&stdout);
    let cap = tool.max_output_bytes;
    match finished.exit {
        // Passing the output cap stops the command (`Exit::Stopped`), so a success is whole.
        Exit::Code(code) if tool.success_codes.contains(&code) => ToolOutput::text(stdout),
        exit => {
            let resources = tool
                .sandbox
                .as_ref()
                .map(|sandbox| sandbox.policy().resources);
            let mut text = match exit {
                Exit::SandboxFailed => {
                    "The sandbox could not be set up, so the command did not run.".to_owned()
                }
                Exit::Signal(SIGXCPU) if let Some(limits) = resources => format!(
                    "The command passed the sandbox's CPU limit of {} s per process and was \
                     stopped (signal {SIGXCPU}).",
                    limits.cpu_seconds
                ),
                Exit::Signal(SIGXFSZ) if let Some(limits) = resources => format!(
                    "The command passed the sandbox's file size limit of {} MiB and was \
                     stopped (signal {SIGXFSZ}).",
                    limits.file_size_mib
                ),
                Exit::Code(code) => format!("The command failed with exit status {code}."),
                Exit::Signal(signal) => format!("The command was killed by signal {signal}."),
                Exit::Stopped(_) if redactor.window() > 0 => format!(
                    "The command's output passed the limit of {cap} bytes, so it was stopped; \
                     the output below is truncated, and the last {} bytes before the cut are \
                     withheld, as they could begin a secret.",
                    redactor.window()
                ),
                Exit::Stopped(_) => format!(
                    "The command's output passed the limit of {cap} bytes, so it was stopped; \
                     the output below is truncated."
                ),
            };
            if !stdout.trim().is_empty() {
                text.push_str("\n\nstdout:\n");
                text.push_str(&stdout);
            }
            let tail = tail(&stderr, STDERR_TAIL_BYTES);
            if !tail.trim().is_empty() {
                text.push_str(&format!(
                    "\n\nstderr (last {STDERR_TAIL_BYTES} bytes at most):\n{tail}"
                ));
            }
            if let Some(limits) = resources {
                // A limit the kernel enforces shows up as an error of the program's own
                // (EAGAIN from fork, ENOMEM, EACCES): name them all so the model can tell.
                text.push_str(&format!(
                    "\n\n(The command runs in a sandbox: {}; files, programs and network \
                     outside the tool's policy are refused.)",
                    limits.describe()
                ));
            }
            ToolOutput::error(text)
        }
    }
}

/// `SIGXCPU`: a process passed its CPU time limit.
const SIGXCPU: i32 = libc::SIGXCPU;
/// `SIGXFSZ`: a process wrote past its file size limit.
const SIGXFSZ: i32 = libc::SIGXFSZ;

/// The last `max` bytes of `bytes`, as text.
fn tail(bytes: &[u8], max: usize) -> String {
    let start = bytes.len().saturating_sub(max);
    String::from_utf8_lossy(bytes.get(start..).unwrap_or_default()).into_owned()
}
