//! SIGHUP reloads the manifest of `airlock serve` (issue 41): a manifest that passes every
//! check replaces the tools and legacy clients are told (`notifications/tools/list_changed`,
//! on stdio and on an HTTP session's `GET` stream); one that fails leaves the tools in force,
//! says why at ERROR, and the server goes on. SIGTERM still ends it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fixtures::ServeTree;
use crate::support::http::{HttpServer, initialize, post, scratch_manifest, session_headers};
use crate::support::processes::signal;
use crate::support::sse::{Stream, listen_headers};
use crate::support::stdio::{REPLY_TIMEOUT, Server, airlock, call, request, text, tool_names};

const ONE_TOOL: &str = r#"
[[tool]]
name = "first"
description = "Says first"
command = ["echo", "first"]

[[tool]]
name = "slow"
description = "Sleeps a second"
command = ["sleep", "1"]
"#;

const TWO_TOOLS: &str = r#"
[[tool]]
name = "first"
description = "Says first"
command = ["echo", "first"]

[[tool]]
name = "second"
description = "Says second"
command = ["echo", "second"]
"#;

/// Refused by the manifest's own checks: a key the schema does not have.
const BROKEN: &str = r#"
[[tool]]
name = "first"
description = "Says first"
command = ["echo", "first"]
no_such_key = 1
"#;

const LIST_CHANGED: &str =
    r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}"#;

fn listed(server: &mut Server, id: i64) -> Vec<String> {
    let list = server.request(&request(id, "tools/list", json!({})));
    tool_names(&list).into_iter().map(str::to_owned).collect()
}

#[test]
fn sighup_with_a_good_manifest_serves_the_new_tools_and_tells_the_client() {
    let sandbox = ServeTree::new("reload-good");
    let manifest = sandbox.manifest(ONE_TOOL);
    let manifest = manifest.to_str().unwrap();
    let mut server = Server::start(&airlock(), &["serve", "--manifest", manifest]);
    let init = server.initialize("2025-11-25");
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": true}),
        "a server that reloads declares it"
    );
    assert_eq!(listed(&mut server, 1), ["first", "slow"]);
    // A call in flight when the tools change finishes on the tool it started with.
    server.send(&call(2, "slow", json!({})));
    std::fs::write(sandbox.dir.join("tools.toml"), TWO_TOOLS).unwrap();
    signal(server.pid(), "HUP");
    let lines = [server.recv_line(), server.recv_line()];
    let (notifications, replies): (Vec<&String>, Vec<&String>) =
        lines.iter().partition(|line| line.contains("\"method\""));
    assert_eq!(notifications, [LIST_CHANGED], "{lines:?}");
    let reply: Value = serde_json::from_str(replies[0]).unwrap();
    assert_eq!(reply["id"], 2, "{reply}");
    assert_eq!(
        reply["result"]["content"],
        json!([{"type": "text", "text": ""}]),
        "{reply}"
    );
    assert_eq!(listed(&mut server, 3), ["first", "second"]);
    let second = server.request(&call(4, "second", json!({})));
    assert_eq!(text(&second), "second\n", "{second}");
    let gone = server.request(&call(5, "slow", json!({})));
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    signal(server.pid(), "TERM");
    assert_eq!(server.wait(REPLY_TIMEOUT).code(), Some(0));
    let stderr = server.stderr();
    assert!(stderr.contains("tools reloaded"), "{stderr}");
}

#[test]
fn sighup_with_a_bad_manifest_keeps_the_old_tools_and_logs_why_at_error() {
    let sandbox = ServeTree::new("reload-bad");
    let manifest = sandbox.manifest(ONE_TOOL);
    let manifest = manifest.to_str().unwrap();
    let mut server = Server::start(&airlock(), &["serve", "--manifest", manifest]);
    server.initialize("2025-11-25");
    std::fs::write(sandbox.dir.join("tools.toml"), BROKEN).unwrap();
    signal(server.pid(), "HUP");
    // Still alive, still the old tools; no notification came before the ping's reply.
    let mut waited = 0;
    loop {
        let ping = server.request(&request(10 + waited, "ping", json!({})));
        assert_eq!(ping["result"], json!({}), "{ping}");
        assert_eq!(listed(&mut server, 100 + waited), ["first", "slow"]);
        waited += 1;
        if waited == 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let first = server.request(&call(2, "first", json!({})));
    assert_eq!(text(&first), "first\n", "{first}");
    // Then a good one is taken: the refusal changed nothing for later reloads.
    std::fs::write(sandbox.dir.join("tools.toml"), TWO_TOOLS).unwrap();
    signal(server.pid(), "HUP");
    assert_eq!(server.recv_line(), LIST_CHANGED);
    assert_eq!(listed(&mut server, 3), ["first", "second"]);
    let stderr = server.stderr();
    let refused: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("reload refused"))
        .collect();
    assert_eq!(refused.len(), 1, "{stderr}");
    assert!(refused[0].contains("ERROR"), "{stderr}");
    assert!(refused[0].contains("no_such_key"), "says why: {stderr}");
}

#[test]
fn sighup_ends_a_server_of_the_embedded_default_which_has_nothing_to_reload() {
    let dir =
        std::env::temp_dir().join(format!("airlock-it-reload-default-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = Server::start_in(&airlock(), &["serve"], &dir);
    let init = server.initialize("2025-11-25");
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": false})
    );
    signal(server.pid(), "HUP");
    assert_eq!(server.wait(REPLY_TIMEOUT).code(), Some(0));
    let _removed = std::fs::remove_dir_all(&dir);
}

#[test]
fn sighup_over_http_tells_each_legacy_session_on_its_get_stream() {
    let (dir, manifest) = scratch_manifest("reload", ONE_TOOL);
    let server = HttpServer::airlock(&["--manifest", manifest.to_str().unwrap()], &[]);
    let addr = server.addr;
    let session = initialize(addr);
    let mut stream = Stream::get(addr, None, &listen_headers(&session));
    assert_eq!(stream.status(), 200, "{stream:?}");
    std::fs::write(&manifest, TWO_TOOLS).unwrap();
    signal(server.pid(), "HUP");
    assert!(
        stream.hears("notifications/tools/list_changed", REPLY_TIMEOUT),
        "{stream:?}"
    );
    let list = post(
        addr,
        &session_headers(&session),
        &request(2, "tools/list", json!({})),
    );
    assert_eq!(tool_names(&list.json()), ["first", "second"]);
    // A bad manifest: the listener stays up with the tools in force.
    std::fs::write(&manifest, BROKEN).unwrap();
    signal(server.pid(), "HUP");
    let deadline = std::time::Instant::now() + REPLY_TIMEOUT;
    while !server
        .log
        .lock()
        .unwrap()
        .iter()
        .any(|line| line.contains("reload refused") && line.contains("ERROR"))
    {
        assert!(std::time::Instant::now() < deadline, "no ERROR line");
        std::thread::sleep(Duration::from_millis(50));
    }
    let list = post(
        addr,
        &session_headers(&session),
        &request(3, "tools/list", json!({})),
    );
    assert_eq!(tool_names(&list.json()), ["first", "second"]);
    let _removed = std::fs::remove_dir_all(&dir);
}
