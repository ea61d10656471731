//! What a command prints: its text written whole to stdout or stderr, and the exit status
//! that follows (failure when the write failed).

use std::io::Write;
use std::process::ExitCode;

/// Writes `bytes` to stdout's lock `out`: success, or failure if the write failed.
pub(crate) fn emit_bytes(mut out: impl Write, bytes: &[u8]) -> ExitCode {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Writes `text` and returns `status`, or failure if the write failed.
pub(crate) fn emit(mut out: impl Write, text: &str, status: ExitCode) -> ExitCode {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => status,
        Err(_) => ExitCode::FAILURE,
    }
}
