//! `tools/task-client`: a small client on the official Rust SDK (rmcp 3.11 for the 2026-07-28
//! tasks extension, rmcp 2.2 for 2025-11-25 tasks) that `tests/clients/setup.sh` builds into
//! `tests/clients/.env/task-client/`. Each run prints one JSON event a line (`created`,
//! `complete`, `poll`, `result`, `cancel`, `error`).
//!
//! The client lives outside cargo's reach (its own workspace and lock file). When it is missing
//! the tests that need it fail if `AIRLOCK_REQUIRE_CLIENTS=1` (CI sets it) and otherwise skip,
//! saying why on stderr.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::support::stdio::Server;

/// The built client, or `None` after saying why it is missing (a failure under
/// `AIRLOCK_REQUIRE_CLIENTS=1`).
pub fn path() -> Option<PathBuf> {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/.env/task-client/release/task-client"
    ));
    if path.is_file() {
        return Some(path);
    }
    let reason = format!(
        "the rmcp task client is not built ({} is missing): run `bash tests/clients/setup.sh`",
        path.display()
    );
    let required = std::env::var_os("AIRLOCK_REQUIRE_CLIENTS").is_some_and(|value| value == "1");
    assert!(
        !required,
        "{reason} (AIRLOCK_REQUIRE_CLIENTS=1 requires it)"
    );
    eprintln!("skipped: {reason}");
    None
}

/// Starts `client` with `args` (its era first) and `env`; its events are read with
/// [`events_until`].
pub fn start(client: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Server {
    Server::start_with(client, args, env)
}

/// The events `client` prints, through the first one named in `last`; then waits for it to
/// exit, successfully.
pub fn events_until(client: &mut Server, last: &[&str]) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = client.recv();
        let done = event["event"]
            .as_str()
            .is_some_and(|name| last.contains(&name));
        events.push(event);
        if done {
            break;
        }
    }
    let status = client.wait(Duration::from_secs(20));
    assert!(status.success(), "task-client failed: {}", client.stderr());
    events
}
