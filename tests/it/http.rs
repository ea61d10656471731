//! `airlock serve --http` over real TCP on loopback: the HTTP boundary (Host, Origin, body and
//! header caps, bearer tokens), both eras on the wire, per-client quotas, and a thousand open
//! connections. Requests are written by hand so that every byte on the wire is the test's.

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::http::{
    HttpServer, exchange, initialize, modern, modern_bytes, post, read_reply, scratch_manifest,
};
use crate::support::processes;
use crate::support::processes::{raise_open_files, runs_a_descendant};
use crate::support::stdio::{self, REPLY_TIMEOUT};

/// Peak resident memory allowed to the server holding 1,000 open connections (SECURITY.md).
const THOUSAND_CONNECTIONS_RSS_KIB: u64 = 64 * 1024;

#[test]
fn a_bad_origin_is_403_and_a_loopback_one_is_served() {
    let server = HttpServer::airlock(&[], &[]);
    let body = stdio::request(1, "tools/list", json!({}));
    for origin in [
        "http://evil.example.com",
        "null",
        "http://localhost.evil.com:80",
    ] {
        let reply = post(server.addr, &[("Origin", origin)], &body);
        assert_eq!(reply.status, 403, "{origin}");
        assert_eq!(reply.code(), -32_600);
        assert_eq!(reply.json()["id"], Value::Null);
    }
    let origin = format!("http://localhost:{}", server.addr.port());
    let reply = modern(
        server.addr,
        1,
        "tools/list",
        json!({}),
        &[("Origin", &origin)],
    );
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[test]
fn a_dns_rebinding_host_is_refused_unless_allowed() {
    let server = HttpServer::airlock(&["--allow-host", "mcp.internal"], &[]);
    let body = stdio::request(1, "ping", json!({}));
    let request = |host: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let rebound = exchange(server.addr, request("evil.example.com:80").as_bytes());
    assert_eq!(rebound.status, 421);
    assert_eq!(rebound.code(), -32_600);
    let rebound = exchange(server.addr, request("127.0.0.1.nip.io").as_bytes());
    assert_eq!(rebound.status, 421);
    // A listed host passes the Host check (and is then a legacy request without a session).
    let listed = exchange(server.addr, request("mcp.internal:8080").as_bytes());
    assert_eq!(listed.status, 400);
    assert_eq!(listed.code(), -32_600);
}

#[test]
fn an_oversized_body_is_413_without_being_read() {
    let server = HttpServer::airlock(&[], &[]);
    // 100 MiB declared and never sent: a server that read the body before refusing would
    // wait for it, past this test's timeout.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 104857600\r\n\r\n{{\"jsonrpc\":",
        server.addr
    );
    let started = Instant::now();
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let reply = read_reply(&mut stream);
    assert!(started.elapsed() < REPLY_TIMEOUT);
    assert_eq!(reply.status, 413);
    assert_eq!(reply.code(), -32_600);
    assert_eq!(
        reply.json()["error"]["data"],
        json!({"limit": "max_frame_bytes", "value": 1_048_576})
    );
    assert_eq!(reply.header("connection"), Some("close"));
    // Chunked, with no length announced: refused once the cap is passed, the rest unread.
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n",
        server.addr
    );
    stream.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b' '; 64 * 1024];
    for _ in 0..17 {
        if stream
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .is_err()
            || stream.write_all(&chunk).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let reply = read_reply(&mut stream);
    assert_eq!(reply.status, 413);
}

#[test]
fn oversized_headers_are_431() {
    let server = HttpServer::airlock(&[], &[]);
    let filler = "x".repeat(20 * 1024);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nX-Filler: {filler}\r\nContent-Length: 0\r\n\r\n",
        server.addr
    );
    assert_eq!(exchange(server.addr, request.as_bytes()).status, 431);
}

#[test]
fn a_batch_is_400_with_32600_in_both_eras() {
    let server = HttpServer::airlock(&[], &[]);
    let batch = format!("[{}]", stdio::request(1, "ping", json!({})));
    for extra in [vec![], vec![("MCP-Protocol-Version", "2026-07-28")]] {
        let reply = post(server.addr, &extra, &batch);
        assert_eq!(reply.status, 400);
        assert_eq!(reply.code(), -32_600);
        assert_eq!(reply.json()["id"], Value::Null);
    }
}

#[test]
fn modern_headers_must_match_the_body() {
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    let ok = modern(addr, 1, "tools/list", json!({}), &[]);
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["result"]["resultType"], "complete");
    type Case<'a> = (&'a str, Value, Vec<(&'a str, &'a str)>, &'a str);
    let cases: [Case<'_>; 6] = [
        (
            "tools/list",
            json!({}),
            vec![("MCP-Protocol-Version", "")],
            "no version header",
        ),
        (
            "tools/list",
            json!({}),
            vec![("MCP-Protocol-Version", "2099-01-01")],
            "other version",
        ),
        (
            "tools/list",
            json!({}),
            vec![("Mcp-Method", "")],
            "no method header",
        ),
        (
            "tools/list",
            json!({}),
            vec![("Mcp-Method", "server/discover")],
            "other method",
        ),
        (
            "tools/call",
            json!({"name": "count_lines", "arguments": {"path": "README.md"}}),
            vec![("Mcp-Name", "read_file")],
            "other name",
        ),
        (
            "tools/call",
            json!({"name": "count_lines", "arguments": {"path": "README.md"}}),
            vec![("Mcp-Name", "")],
            "no name header",
        ),
    ];
    for (method, params, extra, what) in cases {
        let reply = modern(addr, 7, method, params, &extra);
        assert_eq!(reply.status, 400, "{what}");
        assert_eq!(reply.code(), -32_020, "{what}");
        assert_eq!(reply.json()["id"], 7, "{what}");
    }
    // The name may come base64-encoded.
    let reply = modern(
        addr,
        8,
        "tools/call",
        json!({"name": "count_lines", "arguments": {"path": "README.md"}}),
        &[("Mcp-Name", "=?base64?Y291bnRfbGluZXM=?=")],
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.json()["result"]["content"][0]["text"].is_string());
}

#[test]
fn modern_refusals_have_the_spec_codes_and_statuses() {
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    // A 2026-07-28 header with no protocol fields in the body: -32602, 400.
    let reply = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "server/discover"),
        ],
        &stdio::request(1, "server/discover", json!({})),
    );
    assert_eq!((reply.status, reply.code()), (400, -32_602));
    // Unsupported version, header and body agreeing: -32022, 400.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let reply = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "server/discover"),
        ],
        &body.to_string(),
    );
    assert_eq!((reply.status, reply.code()), (400, -32_022));
    // Removed and unknown methods: -32601, 404, with the request's id.
    for method in ["ping", "initialize", "logging/setLevel", "unknown/method"] {
        let reply = modern(addr, 3, method, json!({}), &[]);
        assert_eq!((reply.status, reply.code()), (404, -32_601), "{method}");
        assert_eq!(reply.json()["id"], 3);
    }
    // GET and DELETE without a session: 405.
    for method in ["GET", "DELETE"] {
        let request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Connection: close\r\n\r\n"
        );
        assert_eq!(exchange(addr, request.as_bytes()).status, 405, "{method}");
    }
    // Not JSON: 415.
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nConnection: close\r\n\
         Content-Length: 2\r\n\r\n{{}}"
    );
    assert_eq!(exchange(addr, request.as_bytes()).status, 415);
}

#[test]
fn legacy_sessions_need_their_id_and_end_on_delete() {
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    let list = stdio::request(1, "tools/list", json!({}));
    let reply = post(addr, &[], &list);
    assert_eq!((reply.status, reply.code()), (400, -32_600));
    let session = initialize(addr);
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let reply = post(addr, &headers, &list);
    assert_eq!(reply.status, 200);
    assert!(reply.json()["result"]["tools"].is_array());
    // A version header that is not the session's: 400.
    let reply = post(
        addr,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-03-26"),
        ],
        &list,
    );
    assert_eq!(reply.status, 400);
    // An unknown id: 404.
    let reply = post(addr, &[("Mcp-Session-Id", "0123456789abcdef")], &list);
    assert_eq!(reply.status, 404);
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(exchange(addr, delete.as_bytes()).status, 204);
    assert_eq!(post(addr, &headers, &list).status, 404);
}

#[test]
fn without_a_valid_token_requests_are_401() {
    let env = [("IT_TOKEN_ALICE", "alice-secret-token-0123456789")];
    let server = HttpServer::airlock(&["--auth-token-env", "IT_TOKEN_ALICE"], &env);
    let body = stdio::request(1, "tools/list", json!({}));
    let none = post(server.addr, &[], &body);
    assert_eq!(none.status, 401);
    assert_eq!(
        none.header("www-authenticate"),
        Some(r#"Bearer realm="airlock""#)
    );
    let wrong = post(
        server.addr,
        &[("Authorization", "Bearer alice-secret-token-0123456780")],
        &body,
    );
    assert_eq!(wrong.status, 401);
    assert!(
        wrong
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    assert!(!String::from_utf8_lossy(&wrong.body).contains("secret"));
    let right = modern(
        server.addr,
        1,
        "tools/list",
        json!({}),
        &[("Authorization", "Bearer alice-secret-token-0123456789")],
    );
    assert_eq!(right.status, 200);
    // Two credentials, the right one among them: refused (which one a proxy checked is not
    // known), as a presented credential.
    let twice = modern(
        server.addr,
        2,
        "tools/list",
        json!({}),
        &[
            ("Authorization", "Bearer alice-secret-token-0123456789"),
            ("X-Pad", "1"),
        ],
    );
    assert_eq!(twice.status, 200, "one header: served");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nConnection: close\r\n\
         Authorization: Bearer alice-secret-token-0123456789\r\n\
         Authorization: Bearer mallory\r\nContent-Length: {}\r\n\r\n{body}",
        body.len(),
        addr = server.addr,
    );
    let twice = exchange(server.addr, request.as_bytes());
    assert_eq!(twice.status, 401);
    assert!(
        twice
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    // Another scheme is no Bearer credential: no error code (RFC 6750 §3.1); one or more
    // spaces after the scheme are one credential.
    let basic = post(
        server.addr,
        &[("Authorization", "Basic YWxpY2U6c2VjcmV0")],
        &body,
    );
    assert_eq!(basic.status, 401);
    assert_eq!(
        basic.header("www-authenticate"),
        Some(r#"Bearer realm="airlock""#)
    );
    let spaced = modern(
        server.addr,
        3,
        "tools/list",
        json!({}),
        &[("Authorization", "Bearer   alice-secret-token-0123456789")],
    );
    assert_eq!(spaced.status, 200);
}

#[test]
fn a_token_variable_passed_to_a_tool_is_refused_at_start() {
    let (dir, manifest) = scratch_manifest(
        "leak",
        "[[tool]]\nname = \"env\"\ndescription = \"prints\"\ncommand = [\"true\"]\n\
         env_allow = [\"IT_TOKEN_LEAK\"]\n",
    );
    let output = stdio::run(
        &stdio::airlock(),
        &[
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
            "--auth-token-env",
            "IT_TOKEN_LEAK",
        ],
        &[("IT_TOKEN_LEAK", "leak-secret-token-0123456789")],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bearer token"), "{stderr}");
    assert!(!stderr.contains("leak-secret"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_remote_bind_needs_allow_remote() {
    let output = stdio::run(&stdio::airlock(), &["serve", "--http", "0.0.0.0:0"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--allow-remote"));
}

#[test]
fn a_client_over_its_quota_is_refused_while_another_is_served() {
    let env = [
        ("IT_TOKEN_A", "token-of-client-a-0123456789"),
        ("IT_TOKEN_B", "token-of-client-b-0123456789"),
    ];
    let server = HttpServer::airlock(
        &[
            "--auth-token-env",
            "IT_TOKEN_A",
            "--auth-token-env",
            "IT_TOKEN_B",
            "--client-calls-per-minute",
            "1",
        ],
        &env,
    );
    let call = |token: &str, id: i64| {
        modern(
            server.addr,
            id,
            "tools/call",
            json!({"name": "count_lines", "arguments": {"path": "."}}),
            &[("Authorization", &format!("Bearer {token}"))],
        )
    };
    // Client A spends its burst, then is refused with -31429 and a Retry-After.
    let mut refused = None;
    for id in 0..30 {
        let reply = call(env[0].1, id);
        if reply.status == 429 {
            refused = Some(reply);
            break;
        }
        assert_eq!(reply.status, 200, "{reply:?}");
    }
    let refused = refused.expect("client A is refused within 30 calls");
    assert_eq!(refused.code(), -31_429);
    assert!(refused.header("retry-after").is_some());
    // Client B, on the same server at the same moment, is served.
    let served = call(env[1].1, 100);
    assert_eq!(served.status, 200, "{served:?}");
    assert!(served.json()["result"]["content"].is_array());
    // And A is still refused.
    assert_eq!(call(env[0].1, 101).status, 429);
}

#[test]
fn a_client_at_its_in_flight_cap_is_refused_while_another_is_served() {
    let (dir, manifest) = scratch_manifest(
        "busy",
        "[[tool]]\nname = \"nap\"\ndescription = \"Sleeps a minute\"\n\
         command = [\"sleep\", \"60\"]\n\n\
         [[tool]]\nname = \"quick\"\ndescription = \"Returns at once\"\n\
         command = [\"true\"]\n",
    );
    let env = [
        ("IT_TOKEN_A", "token-of-client-a-0123456789"),
        ("IT_TOKEN_B", "token-of-client-b-0123456789"),
    ];
    let server = HttpServer::airlock(
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--auth-token-env",
            "IT_TOKEN_A",
            "--auth-token-env",
            "IT_TOKEN_B",
            "--client-in-flight",
            "1",
        ],
        &env,
    );
    let bearer = |token: &str| format!("Bearer {token}");
    let call = |token: &str, id: i64, tool: &str| {
        modern(
            server.addr,
            id,
            "tools/call",
            json!({"name": tool, "arguments": {}}),
            &[("Authorization", &bearer(token))],
        )
    };
    // Client A's first call runs a command that does not end by itself: it holds A's only
    // slot for as long as A keeps the connection open.
    let mut held = TcpStream::connect(server.addr).unwrap();
    let nap = modern_bytes(
        server.addr,
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {}}),
        &[("Authorization", &bearer(env[0].1))],
    );
    held.write_all(&nap).unwrap();
    let started = Instant::now();
    while !runs_a_descendant(server.pid(), "sleep") {
        assert!(
            started.elapsed() < REPLY_TIMEOUT,
            "the slow call never started"
        );
        thread::sleep(Duration::from_millis(10));
    }
    // A second call of A, even of another tool, is refused at once: 503 with -31503.
    let busy = call(env[0].1, 2, "quick");
    assert_eq!(busy.status, 503, "{busy:?}");
    assert_eq!(busy.code(), -31_503);
    assert_eq!(busy.json()["error"]["data"]["limit"], "client_in_flight");
    // Client B, at the same moment, is served.
    let served = call(env[1].1, 3, "quick");
    assert_eq!(served.status, 200, "{served:?}");
    assert!(served.json()["result"]["content"].is_array());
    // A gives up: closing the connection cancels its call, which kills the command and frees
    // the slot.
    drop(held);
    let started = Instant::now();
    while runs_a_descendant(server.pid(), "sleep") {
        assert!(
            started.elapsed() < REPLY_TIMEOUT,
            "the command outlived its client's connection"
        );
        thread::sleep(Duration::from_millis(10));
    }
    // The slot may be handed back a moment after the command is reaped; never much later.
    let mut id = 4;
    loop {
        let again = call(env[0].1, id, "quick");
        if again.status == 200 {
            break;
        }
        assert_eq!(again.status, 503, "{again:?}");
        assert!(
            started.elapsed() < REPLY_TIMEOUT,
            "the slot was never freed"
        );
        thread::sleep(Duration::from_millis(10));
        id += 1;
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn connections_past_the_cap_get_503() {
    let server = HttpServer::airlock(&["--max-connections", "4"], &[]);
    let held: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    // Give the server time to accept all four before the fifth arrives.
    thread::sleep(Duration::from_millis(300));
    let mut extra = TcpStream::connect(server.addr).unwrap();
    extra.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    let reply = read_reply(&mut extra);
    assert_eq!(reply.status, 503);
    assert_eq!(reply.code(), -31_503);
    drop(held);
}

#[test]
fn a_thousand_open_connections_stay_within_the_memory_bound() {
    raise_open_files(4096);
    // All from 127.0.0.1: lifted past the per-address cap, which `http_abuse` tests.
    let server = HttpServer::airlock(&["--max-connections-per-address", "1024"], &[]);
    let addr = server.addr;
    let partial =
        format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n");
    let mut held = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let mut stream = TcpStream::connect(addr).expect("connect");
        // Half a request head: the server must hold the connection without a full request.
        stream.write_all(partial.as_bytes()).unwrap();
        held.push(stream);
    }
    thread::sleep(Duration::from_millis(500));
    // Served while the thousand are open.
    let reply = modern(addr, 1, "tools/list", json!({}), &[]);
    assert_eq!(reply.status, 200);
    let peak = processes::peak_rss_kib(server.pid());
    eprintln!("http: peak RSS with 1,000 open connections: {peak} KiB");
    assert!(
        peak < THOUSAND_CONNECTIONS_RSS_KIB,
        "peak RSS {peak} KiB with 1,000 connections"
    );
    drop(held);
}

#[test]
fn fixture_tools_return_media_and_progress_over_sse() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let reply = modern(
        addr,
        1,
        "tools/call",
        json!({"name": "test_image_content"}),
        &[],
    );
    let block = &reply.json()["result"]["content"][0];
    assert_eq!(block["type"], "image");
    assert_eq!(block["mimeType"], "image/png");
    // Progress: an SSE stream of increasing notifications, then the result.
    let mut params = json!({"name": "test_tool_with_progress", "arguments": {}});
    let mut meta = stdio::modern_meta();
    meta["progressToken"] = json!("p1");
    params["_meta"] = meta;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params});
    let reply = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "test_tool_with_progress"),
        ],
        &body.to_string(),
    );
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = reply.events();
    let progress: Vec<f64> = events
        .iter()
        .filter(|e| e["method"] == "notifications/progress")
        .map(|e| e["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    let last = events.last().unwrap();
    assert_eq!(last["id"], 9);
    assert_eq!(last["result"]["resultType"], "complete");
}
