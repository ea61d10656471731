//! The `airlock` program: serve a manifest's commands over MCP, or check a manifest.
//!
//! Exit statuses: 0 normal end; 1 a manifest or start-up error; 2 a usage error (clap);
//! 3 the peer was cut off for sending only invalid messages; 4 stdin/stdout failed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use airlock::manifest::{self, Manifest, ManifestError};
use airlock::{command, telemetry};

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
    },
    /// Validate a manifest and print what it lets agents run.
    Check {
        /// The manifest to check (default: ./airlock.toml, else the embedded default).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
    },
}

/// The file `serve` and `check` use when none is named.
const LOCAL_MANIFEST: &str = "airlock.toml";

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { manifest } => serve(manifest.as_deref()),
        Command::Check { manifest } => check(manifest.as_deref()),
    }
}

fn load(path: Option<&Path>) -> Result<Manifest, ManifestError> {
    match path {
        Some(path) => manifest::load(path),
        None if Path::new(LOCAL_MANIFEST).is_file() => manifest::load(Path::new(LOCAL_MANIFEST)),
        None => manifest::load_default(),
    }
}

fn serve(path: Option<&Path>) -> ExitCode {
    telemetry::init();
    let manifest = match load(path) {
        Ok(manifest) => manifest,
        Err(error) => {
            tracing::error!("{error}");
            return ExitCode::FAILURE;
        }
    };
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
