//! The `airlock` program: serve a manifest's commands over MCP, or check a manifest.
//!
//! Exit statuses: 0 normal end; 1 a manifest or start-up error; 2 a usage error (clap);
//! 3 the peer was cut off for sending only invalid messages; 4 stdin/stdout failed.

use std::io::Write;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use airlock::manifest::{self, Manifest, ManifestError};
use airlock::{Limits, Rate, command, telemetry};

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
