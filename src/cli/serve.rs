//! `airlock serve`: its flags' plan checked, the log installed, then the plan served
//! (`airlock_manifest::plan`, where the serving policy lives). Statuses: 2 for a plan refused
//! before anything is logged, 1 for the rest.

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use airlock_manifest::plan::ServeError;

use crate::cli::flags::ServeFlags;
use crate::cli::output::emit;

/// Serves what `flags` describe until the end of input or a signal.
pub(crate) fn run(flags: ServeFlags) -> ExitCode {
    let (plan, log) = flags.plan();
    // Before anything is logged: what the plan refuses here may be a secret given in its
    // variable's place, and must not reach the log.
    if let Err(error) = plan.check() {
        let text = format!("airlock serve: {error}\n");
        return emit(std::io::stderr().lock(), &text, ExitCode::from(2));
    }
    if let Err(error) = log.init() {
        let text = format!("airlock serve: {error}\n");
        return emit(std::io::stderr().lock(), &text, ExitCode::FAILURE);
    }
    let vetted = match plan.vet() {
        Ok(vetted) => vetted,
        // Its reasons are logged as they are found.
        Err(ServeError::Refused) => return ExitCode::FAILURE,
        Err(error) => return failed(&error),
    };
    if vetted.is_stdio() && std::io::stdin().is_terminal() {
        // A new user typing `airlock serve` sees a silent terminal: say what it waits for.
        let note = "airlock serve: waiting for MCP JSON-RPC messages on stdin, one per line. \
                    This is what an MCP client runs (see README, \"Use it with a client\"); \
                    to try it by hand, pipe requests in (README, \"Try it\"), or serve \
                    HTTP with --http 127.0.0.1:8080. Ctrl-D ends.\n";
        if std::io::stderr().lock().write_all(note.as_bytes()).is_err() {
            return ExitCode::FAILURE;
        }
    }
    match vetted.build() {
        Ok(prepared) => prepared.run(),
        Err(error) => failed(&error),
    }
}

/// Says why the plan was not served, at ERROR.
fn failed(error: &ServeError) -> ExitCode {
    tracing::error!("{error}");
    ExitCode::FAILURE
}
