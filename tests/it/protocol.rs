//! The protocol as a well-behaved client sees it, over real pipes.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::stdio::{Server, call, code, example, modern_meta, request};

fn fixture() -> Server {
    Server::start(&example("fixture_server"), &[])
}

#[test]
fn the_handshake_echoes_each_legacy_version_and_counters_unknown_ones() {
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let mut server = fixture();
        let reply = server.initialize(version);
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": version,
                "capabilities": {"logging": {}, "tools": {"listChanged": false}},
                "serverInfo": {"name": "fixture", "version": "0.0.0"}
            }}),
            "{version}"
        );
    }
    let mut server = fixture();
    assert_eq!(
        server.initialize("2030-01-01")["result"]["protocolVersion"],
        "2025-11-25"
    );
}

#[test]
fn ping_is_answered_with_an_empty_result_before_and_after_the_handshake() {
    let mut server = fixture();
    server.send(r#"{"jsonrpc":"2.0","id":"before","method":"ping"}"#);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":"before","result":{}}"#
    );
    server.initialize("2025-11-25");
    server.send(r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#
    );
}

#[test]
fn a_modern_request_is_served_without_a_handshake() {
    let mut server = fixture();
    let discover = server.request(&request(
        1,
        "server/discover",
        json!({"_meta": modern_meta()}),
    ));
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        result["capabilities"],
        json!({"logging": {}, "tools": {"listChanged": false}})
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "fixture"
    );
    assert_eq!(
        (result["ttlMs"].as_u64(), result["cacheScope"].as_str()),
        (Some(300_000), Some("public"))
    );

    let list = server.request(&request(2, "tools/list", json!({"_meta": modern_meta()})));
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["cacheScope"], "public");
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(5));

    let echo = server.request(&request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "modern"}, "_meta": modern_meta()}),
    ));
    assert_eq!(
        echo["result"]["content"],
        json!([{"type": "text", "text": "modern"}])
    );
    assert_eq!(echo["result"]["resultType"], "complete");

    let unsupported = server.request(&request(
        4,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2027-01-01",
                         "io.modelcontextprotocol/clientCapabilities": {}}}),
    ));
    assert_eq!(
        unsupported["error"],
        json!({"code": -32022, "message": "Unsupported protocol version.",
               "data": {"supported": ["2026-07-28"], "requested": "2027-01-01"}})
    );
    let removed = server.request(&request(5, "ping", json!({"_meta": modern_meta()})));
    assert_eq!(code(&removed), -32601);
}

#[test]
fn tools_list_pages_follow_the_cursor_to_the_end() {
    let mut server = Server::start(&example("fixture_server"), &["--fillers"]);
    server.initialize("2025-11-25");
    let first = server.request(&request(1, "tools/list", json!({})));
    let tools = first["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 50);
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = server.request(&request(2, "tools/list", json!({"cursor": cursor})));
    assert_eq!(second["result"]["tools"].as_array().map(Vec::len), Some(15));
    assert!(second["result"].get("nextCursor").is_none());
    let forged = server.request(&request(
        3,
        "tools/list",
        json!({"cursor": "0000000000000000000000ff"}),
    ));
    assert_eq!(code(&forged), -32602);
}

#[test]
fn a_good_call_is_answered_with_exact_bytes() {
    let mut server = fixture();
    server.initialize("2025-11-25");
    server.send(r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi \"there\"\n"}}}"#);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"hi \"there\"\n"}]}}"#
    );
}

#[test]
fn each_row_of_the_error_table_is_reachable() {
    let mut server = fixture();
    let parse = server.request("{not json");
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    assert_eq!(
        code(&server.request(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#)),
        -32600
    );
    let before = server.request(&request(2, "tools/list", json!({})));
    assert_eq!(code(&before), -32602);
    server.initialize("2025-11-25");
    assert_eq!(
        code(&server.request(&request(3, "resources/list", json!({})))),
        -32601
    );
    assert_eq!(
        code(&server.request(&call(4, "no_such_tool", json!({})))),
        -32602
    );
    assert_eq!(code(&server.request(&call(5, "panic", json!({})))), -32603);
    let unsupported = server.request(&request(
        6,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01",
                         "io.modelcontextprotocol/clientCapabilities": {}}}),
    ));
    assert_eq!(code(&unsupported), -32022);

    // -31503: eight calls in flight fill the cap; the ninth is refused at once.
    for id in 100..108 {
        server.send(&call(id, "sleep", json!({"ms": 1500})));
    }
    let refused = server.request(&call(108, "sleep", json!({"ms": 1})));
    assert_eq!(refused["id"], 108);
    assert_eq!(refused["error"]["code"], -31503);
    assert_eq!(
        refused["error"]["data"],
        json!({"limit": "max_in_flight", "value": 8})
    );
    // Control messages are still answered while the cap is full.
    let ping = server.request(&request(109, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
    let mut done = 0;
    while done < 8 {
        assert_eq!(server.recv()["result"]["content"][0]["text"], "slept");
        done += 1;
    }
}

#[test]
fn a_schema_violation_is_a_tool_error_naming_the_argument_not_its_value() {
    let mut server = fixture();
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "sleep", json!({"ms": "SECRET-TOKEN-123"})));
    assert_eq!(
        reply["result"],
        json!({"content": [{"type": "text",
                "text": "Invalid arguments for tool `sleep`: `ms` must be an integer."}],
               "isError": true})
    );
    // An argument the tool does not have is named (a plain identifier only), so
    // that the agent can correct its call; its value never is.
    let reply = server.request(&call(
        2,
        "sleep",
        json!({"ms": 1, "extra-key": "SECRET-VALUE"}),
    ));
    assert!(!reply.to_string().contains("SECRET"));
    assert_eq!(reply["result"]["isError"], true);
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("does not accept: `extra-key` (it accepts `ms`"),
        "{text}"
    );
    let reply = server.request(&call(3, "sleep", json!({"ms": 1, "SECRET KEY\n": 1})));
    assert!(!reply.to_string().contains("SECRET"), "{reply}");
}

/// A signal ends an idle session with status 0, whichever signal, and `run_stdio` returns to
/// its caller (it used to end the process from its signal thread, so that nothing
/// after it ran).
#[test]
fn a_signal_ends_an_idle_session_with_status_0() {
    for signal in ["TERM", "INT", "HUP"] {
        let mut server = fixture();
        server.initialize("2025-11-25");
        let ping = server.request(&request(1, "ping", json!({})));
        assert_eq!(ping["result"], json!({}));
        // Give the session time to block in its read (not a timing assertion: the signal
        // must end it whether it has blocked yet or not).
        std::thread::sleep(Duration::from_millis(200));
        crate::support::processes::signal(server.pid(), signal);
        assert_eq!(
            server.wait(Duration::from_secs(10)).code(),
            Some(0),
            "{signal}"
        );
        let stderr = server.stderr();
        assert!(stderr.contains("stopping on signal"), "{signal}: {stderr}");
        assert!(
            stderr.contains("fixture: run_stdio returned"),
            "{signal}: {stderr}"
        );
    }
}

/// A signal that arrives while a call waits (the session is in the reactor, not blocked):
/// the call is dropped unanswered and the session ends with status 0.
#[test]
fn a_signal_during_a_waiting_call_ends_the_session_without_its_reply() {
    let mut server = fixture();
    server.initialize("2025-11-25");
    server.send(&call(1, "sleep", json!({"ms": 1_500})));
    std::thread::sleep(Duration::from_millis(200));
    crate::support::processes::signal(server.pid(), "TERM");
    assert_eq!(server.wait(Duration::from_secs(10)).code(), Some(0));
    let stderr = server.stderr();
    assert!(stderr.contains("calls in flight are cancelled"), "{stderr}");
}

#[test]
fn a_timed_out_call_is_a_tool_error_and_the_session_continues() {
    let mut server = fixture();
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "sleep", json!({"ms": 10_000})));
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "The tool did not finish within its time limit of 2000 ms and was stopped."
    );
    let ping = server.request(&request(2, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

#[test]
fn a_call_over_quota_is_refused_at_once_with_the_wait_and_pings_still_pass() {
    let dir = std::env::temp_dir();
    let mut server = Server::start_in(
        &crate::support::stdio::airlock(),
        &["serve", "--calls-per-minute", "1", "--call-burst", "2"],
        &dir,
    );
    server.initialize("2025-11-25");
    for id in 1..=2 {
        let reply = server.request(&call(id, "list_directory", json!({})));
        assert!(reply.get("result").is_some(), "{reply}");
    }
    let refused = server.request(&call(3, "list_directory", json!({})));
    assert_eq!(refused["error"]["code"], -31429);
    assert_eq!(
        refused["error"]["message"],
        "Rate limit exceeded; retry later."
    );
    let wait = refused["error"]["data"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert!((1..=60_000).contains(&wait), "{wait}");
    // The cheap-method quota is separate: pings and listings still pass.
    assert_eq!(
        server.request(&request(4, "ping", json!({})))["result"],
        json!({})
    );
    assert!(server.request(&request(5, "tools/list", json!({})))["result"]["tools"].is_array());
}

#[test]
fn progress_notifications_come_before_the_reply_and_only_when_asked() {
    let mut server = fixture();
    server.initialize("2025-11-25");
    server.send(&request(
        1,
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 3}, "_meta": {"progressToken": 42}}),
    ));
    let mut seen = Vec::new();
    let reply = loop {
        let line = server.recv();
        if line.get("method") == Some(&json!("notifications/progress")) {
            assert_eq!(line["params"]["progressToken"], 42);
            assert_eq!(line["params"]["total"], 3.0);
            seen.push(line["params"]["progress"].as_f64().unwrap());
        } else {
            break line;
        }
    };
    assert_eq!(reply["result"]["content"][0]["text"], "done");
    assert_eq!(seen, [1.0, 2.0, 3.0]);
    // Without a token: the reply is the next line.
    let reply = server.request(&call(2, "progress", json!({"steps": 2})));
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["content"][0]["text"], "done");
}

/// A request sent after the `initialize` reply but before
/// `notifications/initialized` is refused with a message that says what to send.
#[test]
fn an_operation_before_notifications_initialized_is_told_to_send_it() {
    let mut server = fixture();
    let before = server.request(&request(1, "tools/list", json!({})));
    assert_eq!(
        before["error"]["message"],
        "Invalid params: send \"initialize\" first, or protocol fields in \"_meta\"."
    );
    let init = server.request(&request(
        2,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "it", "version": "1"}}),
    ));
    assert!(init.get("result").is_some(), "{init}");
    let early = server.request(&request(3, "tools/list", json!({})));
    assert_eq!(
        early,
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602,
               "message": "Invalid params: send the \"notifications/initialized\" notification first."}})
    );
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let list = server.request(&request(4, "tools/list", json!({})));
    assert!(list["result"]["tools"].is_array(), "{list}");
}

/// A progress token is echoed on every progress notification, so it is
/// bounded like an id: a string of at most 128 bytes or an integer that fits in 64 bits.
#[test]
fn a_progress_token_is_bounded_like_an_id() {
    let mut server = fixture();
    server.initialize("2025-11-25");
    let longest = "t".repeat(128);
    server.send(&request(
        1,
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 1}, "_meta": {"progressToken": longest}}),
    ));
    let progress = server.recv();
    assert_eq!(progress["params"]["progressToken"], longest.as_str());
    assert_eq!(server.recv()["result"]["content"][0]["text"], "done");
    let refused_message = json!({"code": -32602,
        "message": "Invalid params: \"progressToken\" must be a string of at most 128 bytes or an integer that fits in 64 bits.",
        "data": {"limit": "max_progress_token_bytes", "value": 128}});
    for (id, token) in [
        (2, json!("t".repeat(129))),
        (3, json!("t".repeat(900_000))),
        (4, json!(18_446_744_073_709_551_616_f64)),
        (5, json!(1.5)),
        (6, json!(null)),
        (7, json!({"a": 1})),
    ] {
        let reply = server.request(&request(
            id,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 1}, "_meta": {"progressToken": token}}),
        ));
        assert_eq!(reply["id"], id);
        assert_eq!(reply["error"], refused_message, "token {id}");
    }
    // An integer token at the edge of 64 bits is fine.
    server.send(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"progress","arguments":{"steps":1},"_meta":{"progressToken":-9223372036854775808}}}"#,
    );
    let progress = server.recv_line();
    assert!(
        progress.contains(r#""progressToken":-9223372036854775808"#),
        "{progress}"
    );
    assert_eq!(server.recv()["id"], 8);
}
