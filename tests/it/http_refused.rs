//! Issue 35: what refused HTTP traffic may cost the operator. Refusals are logged as counts,
//! a web page cannot lock the user's own client out, a client cannot pick its key through a
//! forwarding header the proxy does not write, partial bodies are bounded in memory, repeated
//! or mismatched `Mcp-*` headers are `400`, and clients share the server-wide call quota.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_json::json;

use crate::harness;
use crate::http::{HttpServer, Reply, read_reply};
use crate::http_abuse::connect_from;

/// Sends `request` from `from` on a new connection; the reply.
fn send_from(from: IpAddr, server: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = connect_from(from, server, Duration::from_secs(2)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    read_reply(&mut stream)
}

/// A legacy `initialize` with `extra` headers; its status and session id.
fn initialize_via(addr: SocketAddr, extra: &[(&str, &str)]) -> (u16, Option<String>) {
    let body = harness::request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "it", "version": "1"}}),
    );
    let reply = crate::http::post(addr, extra, &body);
    (
        reply.status,
        reply.header("mcp-session-id").map(str::to_owned),
    )
}

/// A legacy `tools/list` in `session` with `extra` headers; the status.
fn list_via(addr: SocketAddr, session: &str, extra: &[(&str, &str)]) -> u16 {
    let mut headers = vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    let body = harness::request(1, "tools/list", json!({}));
    crate::http::post(addr, &headers, &body).status
}

/// Item 3: behind a proxy that appends to `X-Forwarded-For` (nginx, HAProxy, Envoy), a
/// `Forwarded` header the client wrote itself is passed through untouched and must be
/// ignored: it neither picks the client's key (seen through the per-client session cap of 1)
/// nor the address in the audit record. Before, `Forwarded` was believed first.
#[test]
fn a_client_written_forwarded_header_changes_neither_key_nor_audit_record() {
    let dir = std::env::temp_dir().join(format!("airlock-it-forwarded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("audit.jsonl");
    let server = HttpServer::airlock(
        &[
            "--trusted-proxy",
            "127.0.0.1/32",
            "--max-sessions-per-client",
            "1",
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[],
    );
    let addr = server.addr;
    let first = [
        ("X-Forwarded-For", "203.0.113.7"),
        ("Forwarded", "for=192.0.2.1"),
    ];
    let second = [
        ("X-Forwarded-For", "203.0.113.7"),
        ("Forwarded", "for=192.0.2.2"),
    ];
    let (status, session_one) = initialize_via(addr, &first);
    assert_eq!(status, 200);
    let (status, session_two) = initialize_via(addr, &second);
    assert_eq!(status, 200);
    // One client (203.0.113.7): its second session ended its first.
    assert_eq!(list_via(addr, &session_one.unwrap(), &first), 404);
    assert_eq!(list_via(addr, &session_two.unwrap(), &second), 200);
    // The audit record names the address the proxy appended, not the client's claim.
    let call = crate::http::modern_bytes(
        addr,
        2,
        "tools/call",
        json!({"name": "file_info", "arguments": {"path": "."}}),
        &[
            ("X-Forwarded-For", "203.0.113.7"),
            ("Forwarded", "for=192.0.2.3"),
        ],
    );
    let reply = crate::http::exchange(addr, &call);
    assert_eq!(reply.status, 200, "{reply:?}");
    let records = std::fs::read_to_string(&log).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(records.lines().last().expect("an audit record")).unwrap();
    assert_eq!(record["client"]["address"], "203.0.113.7", "{records}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Item 3, the other way: with `--trusted-proxy-header forwarded`, only `Forwarded` is read
/// and an `X-Forwarded-For` the client wrote is ignored.
#[test]
fn with_the_forwarded_header_configured_x_forwarded_for_is_ignored() {
    let server = HttpServer::airlock(
        &[
            "--trusted-proxy",
            "127.0.0.1/32",
            "--trusted-proxy-header",
            "forwarded",
            "--max-sessions-per-client",
            "1",
        ],
        &[],
    );
    let addr = server.addr;
    let first = [
        ("Forwarded", "for=203.0.113.9"),
        ("X-Forwarded-For", "192.0.2.1"),
    ];
    let second = [
        ("Forwarded", "for=203.0.113.9"),
        ("X-Forwarded-For", "192.0.2.2"),
    ];
    let (_, session_one) = initialize_via(addr, &first);
    let (_, session_two) = initialize_via(addr, &second);
    assert_eq!(list_via(addr, &session_one.unwrap(), &first), 404);
    assert_eq!(list_via(addr, &session_two.unwrap(), &second), 200);
    let _unused = send_from;
}

/// Item 5: a repeated `Mcp-Name`, `Mcp-Method` or `MCP-Protocol-Version` is `400` + `-32020`
/// (a gateway reading the last value and airlock the first would see two tools); `Mcp-Name`
/// must match `prompts/get`'s name and `resources/read`'s URI as it does `tools/call`'s; and
/// only the specification's base64 form decodes. Before, the first value was read, only
/// `tools/call` was checked, and `=?BASE64?` was decoded.
#[test]
fn repeated_and_mismatched_mcp_headers_are_400() {
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    let call = json!({"name": "count_lines", "arguments": {"path": "README.md"}});
    let mut body_params = call.clone();
    body_params["_meta"] = harness::modern_meta();
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": body_params})
        .to_string();
    let base = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "count_lines"),
    ];
    for (name, second) in [
        ("Mcp-Name", "read_file"),
        ("Mcp-Name", "count_lines"),
        ("Mcp-Method", "tools/list"),
        ("MCP-Protocol-Version", "2026-07-28"),
    ] {
        let mut headers = base.to_vec();
        headers.push((name, second));
        let reply = crate::http::post(addr, &headers, &body);
        assert_eq!(reply.status, 400, "{name}: {second}: {reply:?}");
        assert_eq!(reply.code(), -32_020, "{name}: {second}");
    }
    // Once each: served.
    assert_eq!(crate::http::post(addr, &base, &body).status, 200);
    // Another name, for each method that carries one.
    for (method, params, other) in [
        ("prompts/get", json!({"name": "review"}), "summary"),
        (
            "resources/read",
            json!({"uri": "file:///a.txt"}),
            "file:///b.txt",
        ),
        ("tools/call", call.clone(), "read_file"),
    ] {
        let reply = crate::http::modern(addr, 4, method, params.clone(), &[("Mcp-Name", other)]);
        assert_eq!(reply.status, 400, "{method}: {reply:?}");
        assert_eq!(reply.code(), -32_020, "{method}");
        let missing = crate::http::modern(addr, 5, method, params.clone(), &[("Mcp-Name", "")]);
        assert_eq!(missing.code(), -32_020, "{method} without Mcp-Name");
        // The right one passes the header check (whatever the engine then says).
        let right = crate::http::modern(addr, 6, method, params, &[]);
        assert!(
            right
                .json()
                .get("error")
                .is_none_or(|e| e["code"] != -32_020),
            "{method}: {right:?}"
        );
    }
    // Base64 only as the specification writes it: "count_lines" is Y291bnRfbGluZXM=.
    for (value, status) in [
        ("=?base64?Y291bnRfbGluZXM=?=", 200),
        ("=?BASE64?Y291bnRfbGluZXM=?=", 400),
        ("=?Base64?Y291bnRfbGluZXM=?=", 400),
        ("=?base64?Y291bnRfbGluZXM?=", 400),
    ] {
        let reply =
            crate::http::modern(addr, 7, "tools/call", call.clone(), &[("Mcp-Name", value)]);
        assert_eq!(reply.status, status, "{value}: {reply:?}");
    }
    // The URL-safe alphabet: "??>" is Pz8+ in the standard one, Pz8- in the URL-safe one.
    let odd = json!({"name": "??>", "arguments": {}});
    let standard = crate::http::modern(
        addr,
        8,
        "tools/call",
        odd.clone(),
        &[("Mcp-Name", "=?base64?Pz8+?=")],
    );
    assert_ne!(standard.json()["error"]["code"], -32_020, "{standard:?}");
    let url_safe = crate::http::modern(
        addr,
        8,
        "tools/call",
        odd,
        &[("Mcp-Name", "=?base64?Pz8-?=")],
    );
    assert_eq!(url_safe.status, 400, "{url_safe:?}");
    assert_eq!(url_safe.code(), -32_020);
}
