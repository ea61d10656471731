//! `airlock check`: what a manifest lets agents run, what the sandbox holds on this machine,
//! and whether `serve` would build it (OK on stdout, status 0; a refusal on stderr, status 1).

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use airlock_manifest::plan::load;
use airlock_manifest::{command, sandbox};

/// Checks the manifest at `path` (none: as `serve` chooses it) and prints what it found.
pub(crate) fn run(path: Option<&Path>) -> ExitCode {
    let (text, status) = match load(path) {
        Ok(manifest) => {
            let mut description = manifest.describe();
            let support = sandbox::Support::probe().with_exact_landlock_abi();
            let missing = support.missing();
            description.push_str(&format!(
                "\nsandbox on this machine: {}\n",
                support.describe()
            ));
            if missing.is_empty() {
                description.push_str("sandbox enforcement: complete\n");
            } else {
                description.push_str(&format!(
                    "sandbox enforcement: INCOMPLETE, missing {}; `airlock serve` refuses to \
                     start unless given --sandbox best-effort\n",
                    missing.join("; ")
                ));
            }
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
