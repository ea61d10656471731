//! The `airlock` program.

use std::process::ExitCode;

use clap::Parser;

/// Exposes a command-line program's commands to AI agents over MCP, safely.
#[derive(Debug, Parser)]
#[command(name = "airlock", version)]
struct Cli {}

fn main() -> ExitCode {
    let _cli = Cli::parse();
    ExitCode::SUCCESS
}
