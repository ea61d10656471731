//! The `airlock` program: serve a manifest's commands over MCP, check a manifest, or audit
//! any stdio MCP server; try and set it up: `call`, `client-config`, `init`, `schema`,
//! `completions`, `man` (`cli/`).
//!
//! This file is the dispatch: the flags are `cli::flags`, what each command does is beside
//! them in `cli/`, and the serving policy (the manifest served, the sandbox gate, the
//! variables no tool may get, the HTTP configuration, the reload) is the manifest crate's
//! `plan`.
//!
//! Exit statuses: 0 normal end; 1 a manifest or start-up error; 2 a usage error (clap);
//! 3 the peer was cut off for sending only invalid messages; 4 stdin/stdout failed or the HTTP
//! address could not be bound.
//! `airlock audit`: 0 no finding fails the run; 1 one does (at or over `--fail-on`, not in the
//! `--baseline`); 2 a usage error; 3 the server could not be audited (did not start or
//! complete its handshake) or a report could not be written; 130 interrupted.
//! `airlock call`: 0 the tool succeeded; 1 it returned an error or the call was refused; 2
//! its arguments cannot be read.

use std::process::ExitCode;

use airlock_manifest::manifest;
use airlock_manifest::plan::LOCAL_MANIFEST;
use airlock_manifest::sandbox;
use clap::{CommandFactory as _, Parser as _};

mod cli;

use cli::flags::{Cli, Command};
use cli::output::{emit, emit_bytes};

fn main() -> ExitCode {
    // First, before any thread starts: a sandbox launcher re-executed by a serving airlock.
    if let Some(status) = sandbox::launcher::run_if_launched() {
        return status;
    }
    let cli = Cli::parse();
    if !cli.test_hosts.is_empty()
        && let Err(why) = cli::test_hosts::set(&cli.test_hosts)
    {
        return emit(
            std::io::stderr().lock(),
            &format!("airlock: --test-hosts: {why}\n"),
            ExitCode::from(2),
        );
    }
    match cli.command {
        Command::Serve(flags) => cli::serve::run(*flags),
        Command::Check {
            manifest,
            manifest_file,
            try_call,
            audit_rules,
        } => {
            if audit_rules {
                return cli::check::audit_rules();
            }
            let manifest = manifest.or(manifest_file);
            match try_call.as_deref() {
                Some([tool, arguments]) => cli::check::try_call(&cli::check::Try {
                    manifest: manifest.as_deref(),
                    tool,
                    arguments,
                    test_hosts: &cli.test_hosts,
                }),
                _ => cli::check::run(manifest.as_deref()),
            }
        }
        Command::Call {
            manifest,
            sandbox,
            json,
            raw,
            tool,
            arguments,
        } => cli::call::run(&cli::call::Request {
            manifest: manifest.as_deref(),
            sandbox: sandbox.word(),
            tool: &tool,
            pairs: &arguments,
            json: json.as_deref(),
            raw,
            test_hosts: &cli.test_hosts,
        }),
        Command::ClientConfig {
            client,
            manifest,
            url,
            token_env,
        } => cli::client_config::run(&cli::client_config::Request {
            client: &client,
            manifest: manifest.as_deref(),
            url: &url,
            token_env: &token_env,
        }),
        Command::Audit(flags) => cli::audit::run(*flags),
        Command::Init { dir } => match cli::init::run(&dir, LOCAL_MANIFEST) {
            Ok(text) => emit(std::io::stdout().lock(), &text, ExitCode::SUCCESS),
            Err(text) => emit(
                std::io::stderr().lock(),
                &format!("airlock init: {text}\n"),
                ExitCode::FAILURE,
            ),
        },
        Command::Schema => emit(
            std::io::stdout().lock(),
            &manifest::json_schema(),
            ExitCode::SUCCESS,
        ),
        Command::Completions { shell } => emit_bytes(
            std::io::stdout().lock(),
            &cli::docs::completions(Cli::command(), shell),
        ),
        Command::Man { command } => match cli::docs::man_page(Cli::command(), command.as_deref()) {
            Some(Ok(page)) => emit_bytes(std::io::stdout().lock(), &page),
            Some(Err(_)) => ExitCode::FAILURE,
            None => emit(
                std::io::stderr().lock(),
                "airlock man: no such subcommand (see airlock --help)\n",
                ExitCode::from(2),
            ),
        },
    }
}
