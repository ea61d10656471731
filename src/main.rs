//! The `airlock` program: serve a manifest's commands over MCP, check a manifest, or audit
//! any stdio MCP server.
//!
//! Exit statuses: 0 normal end; 1 a manifest or start-up error; 2 a usage error (clap);
//! 3 the peer was cut off for sending only invalid messages; 4 stdin/stdout failed.
//! `airlock audit`: 0 no case failed; 1 a case failed; 2 a usage error; 3 the server could not
//! be audited (did not start or complete its handshake); 130 interrupted.

use std::ffi::OsString;
use std::io::Write;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use airlock::manifest::{self, Manifest, ManifestError};
use airlock::{Limits, Rate, audit, command, telemetry};

/// Exposes a command-line program's commands to AI agents over MCP, treating every agent as
/// hostile.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a manifest's tools over MCP on stdin/stdout.
    ///
    /// Without --manifest, serves ./airlock.toml if it exists, else the embedded default:
    /// read-only tools over the current directory.
    Serve {
        /// The manifest (TOML) declaring the tools.
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        #[command(flatten)]
        overrides: LimitFlags,
    },
    /// Validate a manifest and print what it lets agents run.
    Check {
        /// The manifest to check (default: ./airlock.toml, else the embedded default).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
    },
    /// Review any stdio MCP server with a battery of hostile inputs.
    ///
    /// Starts the server once per case, sends the case's input, judges the replies against
    /// JSON-RPC 2.0 and MCP, checks that it still answers ping and tools/list within the
    /// memory limit, and kills its process tree. Prints a table on stdout and a progress line
    /// per case on stderr. Exit status 0 only when no case fails.
    Audit(AuditFlags),
}

/// Options of `airlock audit`.
#[derive(Debug, clap::Args)]
struct AuditFlags {
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Run only these cases: ids, categories or prefixes (json.nan,batch,huge.line-*).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    only: Vec<String>,
    /// Leave out these cases (same forms as --only).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    skip: Vec<String>,
    /// Peak resident memory allowed to the server's process tree, in MiB.
    #[arg(long, value_name = "N", default_value_t = audit::DEFAULT_MAX_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    max_memory_mib: u64,
    /// Time limit of one case, in milliseconds (slow cases get a few).
    #[arg(long, value_name = "MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    case_timeout_ms: u64,
    /// Leave out the slow cases (huge streamed lines, the unread-replies flood).
    #[arg(long)]
    quick: bool,
    /// The tool that cases needing a real call use (default: the first read-only one).
    #[arg(long, value_name = "NAME", conflicts_with = "no_tool_calls")]
    call_tool: Option<String>,
    /// Arguments (a JSON object) for --call-tool.
    #[arg(long, value_name = "JSON", requires = "call_tool", value_parser = parse_json_object)]
    call_args: Option<serde_json::Value>,
    /// Never call a real tool; calls go to a tool name that cannot exist.
    #[arg(long)]
    no_tool_calls: bool,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
    /// The server's command and its arguments.
    #[arg(last = true, value_name = "COMMAND", required_unless_present = "list")]
    command: Vec<OsString>,
}

fn parse_json_object(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) if value.is_object() => Ok(value),
        Ok(_) => Err("not a JSON object".to_owned()),
        Err(error) => Err(format!("not JSON: {error}")),
    }
}

/// Limits given on the command line; they override the manifest's.
#[derive(Debug, clap::Args)]
struct LimitFlags {
    /// Quota on tools/call across the server: calls per minute, sustained.
    #[arg(long, value_name = "N")]
    calls_per_minute: Option<NonZeroU32>,
    /// Quota on tools/call: calls admitted back to back (default 40, or the manifest's).
    #[arg(long, value_name = "N", requires = "calls_per_minute")]
    call_burst: Option<NonZeroU32>,
    /// Quota on cheap methods (ping, tools/list, …): requests per minute.
    #[arg(long, value_name = "N")]
    cheap_per_minute: Option<NonZeroU32>,
    /// Most tool calls running at once.
    #[arg(long, value_name = "N")]
    max_in_flight: Option<NonZeroUsize>,
    /// Deadline of a tool call that sets none of its own, in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    tool_timeout_ms: Option<u64>,
}

impl LimitFlags {
    fn apply(&self, limits: &mut Limits) {
        if let Some(per_minute) = self.calls_per_minute {
            let burst = self
                .call_burst
                .or(limits.tool_call_rate.map(|rate| rate.burst))
                .unwrap_or(airlock::limits::TOOL_CALL_RATE.burst);
            limits.tool_call_rate = Some(Rate { per_minute, burst });
        }
        if let Some(per_minute) = self.cheap_per_minute {
            let burst = limits
                .cheap_method_rate
                .map_or(airlock::limits::CHEAP_METHOD_RATE.burst, |rate| rate.burst);
            limits.cheap_method_rate = Some(Rate { per_minute, burst });
        }
        if let Some(max) = self.max_in_flight {
            limits.max_in_flight = max;
        }
        if let Some(ms) = self.tool_timeout_ms {
            limits.tool_timeout = Duration::from_millis(ms);
        }
    }
}

/// The file `serve` and `check` use when none is named.
const LOCAL_MANIFEST: &str = "airlock.toml";

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            manifest,
            overrides,
        } => serve(manifest.as_deref(), &overrides),
        Command::Check { manifest } => check(manifest.as_deref()),
        Command::Audit(flags) => run_audit(flags),
    }
}

fn load(path: Option<&Path>) -> Result<Manifest, ManifestError> {
    match path {
        Some(path) => manifest::load(path),
        None if Path::new(LOCAL_MANIFEST).is_file() => {
            // Whoever controls the working directory chooses the tools: say so.
            tracing::warn!(
                manifest = LOCAL_MANIFEST,
                "serving the manifest found in the working directory"
            );
            manifest::load(Path::new(LOCAL_MANIFEST))
        }
        None => manifest::load_default(),
    }
}

fn serve(path: Option<&Path>, overrides: &LimitFlags) -> ExitCode {
    telemetry::init();
    let mut manifest = match load(path) {
        Ok(manifest) => manifest,
        Err(error) => {
            tracing::error!("{error}");
            return ExitCode::FAILURE;
        }
    };
    overrides.apply(&mut manifest.limits);
    tracing::info!(
        manifest = manifest.source.as_str(),
        tools = manifest.tools.len(),
        "manifest loaded"
    );
    match command::server(manifest) {
        Ok(server) => ExitCode::from(server.run_stdio()),
        Err(error) => {
            tracing::error!("the manifest's tools were refused: {error}");
            ExitCode::FAILURE
        }
    }
}

fn check(path: Option<&Path>) -> ExitCode {
    let (text, status) = match load(path) {
        Ok(manifest) => {
            let description = manifest.describe();
            match command::server(manifest) {
                Ok(_) => (format!("{description}\nOK\n"), ExitCode::SUCCESS),
                Err(error) => (
                    format!("{description}\nrefused: {error}\n"),
                    ExitCode::FAILURE,
                ),
            }
        }
        Err(error) => (format!("{error}\n"), ExitCode::FAILURE),
    };
    let written = if status == ExitCode::SUCCESS {
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
    if written.is_err() {
        return ExitCode::FAILURE;
    }
    status
}

fn run_audit(flags: AuditFlags) -> ExitCode {
    if flags.list {
        return emit(std::io::stdout().lock(), &audit::list(), ExitCode::SUCCESS);
    }
    let options = audit::Options {
        max_memory_mib: flags.max_memory_mib,
        case_timeout: Duration::from_millis(flags.case_timeout_ms),
        quick: flags.quick,
        only: flags.only,
        skip: flags.skip,
        call_tool: flags.call_tool,
        call_arguments: flags.call_args,
        no_tool_calls: flags.no_tool_calls,
        progress: true,
        handle_signals: true,
        ..audit::Options::new(flags.command)
    };
    let report = match audit::run(&options) {
        Ok(report) => report,
        Err(error) => {
            return emit(
                std::io::stderr().lock(),
                &format!("airlock audit: {error}\n"),
                ExitCode::from(2),
            );
        }
    };
    if let Some(path) = &flags.json {
        let written = report
            .to_json()
            .map_err(std::io::Error::other)
            .and_then(|json| std::fs::write(path, json));
        if let Err(error) = written {
            let text = format!("airlock audit: cannot write {}: {error}\n", path.display());
            return emit(std::io::stderr().lock(), &text, ExitCode::from(3));
        }
    }
    emit(
        std::io::stdout().lock(),
        &report.table(),
        ExitCode::from(report.exit_code()),
    )
}

/// Writes `text` and returns `status`, or failure if the write failed.
fn emit(mut out: impl Write, text: &str, status: ExitCode) -> ExitCode {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => status,
        Err(_) => ExitCode::FAILURE,
    }
}
