//! What an operator sets airlock up with (issue 22): `[defaults]` and `${VAR}` in paths.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Server, airlock, call};

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

fn text_of(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn defaults_and_a_variable_in_a_path_reach_the_served_tools() {
    let manifest = Path::new(root()).join("tests/data/defaults.toml");
    let manifest = manifest.to_str().unwrap();
    let mut server = Server::start_with(
        &airlock(),
        &["serve", "--manifest", manifest],
        &[("AIRLOCK_TEST_ROOT", root())],
    );
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "greeting", json!({})));
    assert_eq!(reply["result"]["isError"], Value::Null, "{reply}");
    assert_eq!(text_of(&reply), "from-defaults\n");
    let reply = server.request(&call(2, "own_greeting", json!({})));
    assert_eq!(text_of(&reply), "from-the-tool\n");
    let reply = server.request(&call(3, "where", json!({})));
    let data = Path::new(root()).join("tests/data").canonicalize().unwrap();
    assert_eq!(text_of(&reply), format!("{}\n", data.display()));

    // Without the variable, `check` names it, at the line of the path that uses it.
    let output = crate::harness::run(&airlock(), &["check", manifest], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.starts_with(&format!(
            "{manifest}:6:11: `defaults.workdir`: `${{AIRLOCK_TEST_ROOT}}` names the \
             variable AIRLOCK_TEST_ROOT, which is not set in airlock's environment\n"
        )),
        "{stderr}"
    );
}

/// Issue 22: logrotate's `postrotate` sends SIGUSR1 to airlock whatever its flags; without
/// `--audit-log` it used to end the process (no handler was installed).
#[test]
fn sigusr1_without_an_audit_log_leaves_the_server_serving() {
    let mut server = Server::start(&airlock(), &["serve"]);
    server.initialize("2025-11-25");
    crate::harness::signal(server.pid(), "USR1");
    // Twice: a handler that only survives the first signal is no handler.
    crate::harness::signal(server.pid(), "USR1");
    let reply = server.request(&crate::harness::request(7, "ping", json!({})));
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
}
