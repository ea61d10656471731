//! What an attacker sends, over real pipes: every case ends with the server still serving
//! (or, for a garbage flood, cut off on purpose) and nothing unexpected on stdout.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::stdio::{Server, call, code, example, request};

fn ready() -> Server {
    let mut server = Server::start(&example("fixture_server"), &[]);
    server.initialize("2025-11-25");
    server
}

fn ping_works(server: &mut Server, id: u64) {
    let reply = server.request(&request(id, "ping", json!({})));
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
}

#[test]
fn a_64_mib_line_is_refused_without_being_held_and_the_next_line_is_served() {
    let mut server = ready();
    let chunk = vec![b'a'; 1024 * 1024];
    for _ in 0..64 {
        server.write(&chunk);
    }
    server.write(b"\n");
    let refused = server.recv();
    assert_eq!(refused["id"], Value::Null);
    assert_eq!(refused["error"]["code"], -32600);
    assert_eq!(
        refused["error"]["data"],
        json!({"limit": "max_frame_bytes", "value": 1_048_576})
    );
    ping_works(&mut server, 1);
    let peak_kib = server.peak_rss_kib();
    eprintln!("peak RSS after a 64 MiB line: {peak_kib} KiB");
    // The line is 65,536 KiB; the server may hold one frame (1 MiB) and its buffers.
    assert!(peak_kib < 32 * 1024, "peak RSS {peak_kib} KiB");
}

#[test]
fn a_frame_just_under_the_limit_is_parsed_and_one_just_over_is_refused() {
    let mut server = ready();
    let pad = |len: usize| {
        let head = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_":""#;
        let tail = r#""}}"#;
        format!("{head}{}{tail}", "p".repeat(len - head.len() - tail.len()))
    };
    // `_` is not a member ping defines, but ping ignores its params: the frame is parsed.
    assert_eq!(server.request(&pad(1024 * 1024))["result"], json!({}));
    assert_eq!(code(&server.request(&pad(1024 * 1024 + 1))), -32600);
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let mut server = ready();
    server.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}\n");
    let reply = server.recv();
    assert_eq!((code(&reply), reply["id"].clone()), (-32700, Value::Null));
    server.write(b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    assert_eq!(
        code(&server.recv()),
        -32700,
        "a byte-order mark is not JSON"
    );
    ping_works(&mut server, 2);
}

#[test]
fn deep_nesting_is_a_parse_error_at_any_depth() {
    let mut server = ready();
    for depth in [65, 1000, 100_000] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{}1{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let reply = server.request(&line);
        assert_eq!(code(&reply), -32700, "depth {depth}");
        assert_eq!(
            reply["error"]["message"],
            "Parse error: the message is nested too deeply."
        );
    }
    ping_works(&mut server, 2);
}

#[test]
fn a_batch_is_refused_with_one_error_and_no_id() {
    let mut server = ready();
    server.send(
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
    );
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: batches are not accepted; send one message per line."}}"#
    );
    ping_works(&mut server, 3);
}

#[test]
fn notifications_and_unsolicited_responses_are_never_answered() {
    let mut server = ready();
    for silent in [
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"not an object"}"#,
        r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":42}"#,
        r#"{"jsonrpc":"2.0","method":"no/such/notification"}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"x"}}"#,
    ] {
        server.send(silent);
    }
    // The next line out is the ping's reply: nothing was written for the lines above.
    ping_works(&mut server, 7);
}

#[test]
fn a_duplicate_in_flight_id_is_refused_and_the_first_call_still_answers() {
    let mut server = ready();
    server.send(&call(7, "sleep", json!({"ms": 400})));
    let duplicate = server.request(&call(7, "echo", json!({"text": "second"})));
    assert_eq!(duplicate["id"], 7);
    assert_eq!(duplicate["error"]["code"], -32600);
    let first = server.recv();
    assert_eq!(
        (
            first["id"].clone(),
            first["result"]["content"][0]["text"].clone()
        ),
        (json!(7), json!("slept"))
    );
    // Once finished, the id may be used again.
    assert_eq!(
        server.request(&call(7, "echo", json!({"text": "again"})))["result"]["content"][0]["text"],
        "again"
    );
}

#[test]
fn a_panicking_tool_answers_internal_error_and_the_next_call_works() {
    let mut server = ready();
    let reply = server.request(&call("p", "panic", json!({})));
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": "p", "error": {"code": -32603, "message": "Internal error."}})
    );
    let next = server.request(&call("q", "echo", json!({"text": "still here"})));
    assert_eq!(next["result"]["content"][0]["text"], "still here");
    let stderr = server.stderr();
    assert!(stderr.contains("tool handler panicked"), "{stderr}");
    assert!(
        !stderr.contains("secret-panic-payload"),
        "the panic message leaked to the log"
    );
}

#[test]
fn end_of_input_with_a_call_in_flight_answers_it_then_exits_cleanly() {
    let mut server = ready();
    server.send(&call(1, "sleep", json!({"ms": 300})));
    server.close_stdin();
    let reply = server.recv();
    assert_eq!(reply["result"]["content"][0]["text"], "slept");
    let status = server.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
}

#[test]
fn end_of_input_inside_a_message_ends_cleanly() {
    let mut server = ready();
    server.write(br#"{"jsonrpc":"2.0","id":1,"meth"#);
    server.close_stdin();
    // The unterminated last line is a frame like any other: here, not JSON.
    assert_eq!(code(&server.recv()), -32700);
    assert_eq!(server.wait(Duration::from_secs(10)).code(), Some(0));
}

#[test]
fn crlf_and_blank_lines_are_accepted() {
    let mut server = ready();
    server.write(b"\r\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n");
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
}

#[test]
fn a_peer_sending_only_garbage_is_cut_off_with_a_distinct_status() {
    let mut server = ready();
    let garbage = "garbage\n".repeat(300);
    server.write(garbage.as_bytes());
    let mut answered = 0;
    while answered < 256 {
        assert_eq!(code(&server.recv()), -32700);
        answered += 1;
    }
    let status = server.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(3));
    let stderr = server.stderr();
    assert!(stderr.contains("cut off"), "{stderr}");
}

#[test]
fn ids_are_echoed_verbatim() {
    let mut server = ready();
    for id in [
        "0",
        "-9223372036854775808",
        "18446744073709551615",
        r#""ä\u00e4""#,
        r#""""#,
    ] {
        server.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_eq!(
            server.recv_line(),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
        );
    }
    for bad in [
        "null",
        "1.0",
        "1e2",
        "18446744073709551616",
        "true",
        "{}",
        "[]",
    ] {
        let reply = server.request(&format!(
            r#"{{"jsonrpc":"2.0","id":{bad},"method":"ping"}}"#
        ));
        assert_eq!(
            (code(&reply), reply["id"].clone()),
            (-32600, Value::Null),
            "{bad}"
        );
    }
}

#[test]
fn a_client_that_never_reads_stdout_cannot_grow_the_servers_memory() {
    use std::io::Write;
    let mut server = crate::support::stdio::Unread::start(&example("fixture_server"), &[]);
    let mut stdin = server.stdin.take().expect("stdin");
    let pid = server.child.id();
    // 64 MiB of requests whose replies are never read. The writer blocks once the server
    // stops reading (because its own writes block): that is the backpressure under test.
    let writer = std::thread::spawn(move || {
        let ping = format!("{}\n", request(1, "ping", json!({}))).repeat(10_000);
        let mut written = 0usize;
        while written < 64 * 1024 * 1024 {
            if stdin.write_all(ping.as_bytes()).is_err() {
                break;
            }
            written += ping.len();
        }
        written
    });
    std::thread::sleep(Duration::from_secs(2));
    let peak = crate::support::processes::peak_rss_kib(pid);
    eprintln!("peak RSS with an unread stdout: {peak} KiB");
    assert!(peak < 32 * 1024, "peak RSS {peak} KiB");
    assert!(
        !writer.is_finished(),
        "the server kept reading although nobody read its replies"
    );
    drop(server);
    let written = writer.join().expect("writer");
    assert!(
        written < 64 * 1024 * 1024,
        "all input was consumed: {written}"
    );
}

/// Review finding R1: a blank line right after a request held its reply back until more
/// input came (a client using Python's print() on a line that already ends in "\n").
#[test]
fn a_blank_line_after_a_request_does_not_hold_back_its_reply() {
    let mut server = ready();
    server.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n\r\n");
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
}

/// An agent that keeps calling a tool name it hallucinated is making a
/// client mistake, not sending garbage. It is slowed by the call quota (`-31429`), never
/// disconnected.
#[test]
fn an_agent_calling_a_hallucinated_tool_300_times_in_a_row_is_not_cut_off() {
    let mut server = ready();
    for id in 1..=300 {
        let reply = server.request(&call(id, "read_the_file_please", json!({"path": "x"})));
        assert_eq!(reply["id"], id);
        let error = &reply["error"];
        match error["code"].as_i64() {
            Some(-32602) => assert_eq!(error["message"], "Invalid params: unknown tool."),
            Some(-31429) => assert!(error["data"]["retryAfterMs"].is_u64(), "{reply}"),
            _ => panic!("call {id}: {reply}"),
        }
    }
    ping_works(&mut server, 301);
    let next = server.request(&call(302, "no_such_tool", json!({})));
    assert_eq!(next["id"], 302, "still served: {next}");
}

/// Unknown-tool calls do not count as garbage, and they do not reset the
/// count either: a peer cannot keep a garbage stream alive by slipping them in between.
#[test]
fn unknown_tool_calls_between_garbage_lines_do_not_hold_off_the_cut_off() {
    let mut server = ready();
    let mut lines = String::new();
    for id in 0..300 {
        lines.push_str("garbage\n");
        lines.push_str(&call(id, "no_such_tool", json!({})));
        lines.push('\n');
    }
    server.write(lines.as_bytes());
    // 256 garbage lines are answered, with the 255 calls between them; then the cut-off.
    for n in 0..511 {
        let reply = server.recv();
        let code = code(&reply);
        if n % 2 == 0 {
            assert_eq!(code, -32700, "reply {n}: {reply}");
        } else {
            assert!(code == -32602 || code == -31429, "reply {n}: {reply}");
        }
    }
    let status = server.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(3));
}

/// An unknown tool's call is charged to the server's call quota, so an
/// agent looping on one is slowed like any other caller.
#[test]
fn unknown_tool_calls_are_charged_to_the_call_quota() {
    let dir = std::env::temp_dir().join(format!("airlock-it-quota-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = Server::start_in(
        &crate::support::stdio::airlock(),
        &["serve", "--calls-per-minute", "1", "--call-burst", "2"],
        &dir,
    );
    server.initialize("2025-11-25");
    for id in 1..=2 {
        let reply = server.request(&call(id, "no_such_tool", json!({})));
        assert_eq!(code(&reply), -32602, "{reply}");
    }
    let slowed = server.request(&call(3, "no_such_tool", json!({})));
    assert_eq!(code(&slowed), -31429, "{slowed}");
    let real = server.request(&call(4, "list_directory", json!({})));
    assert_eq!(code(&real), -31429, "the quota is the server's: {real}");
    ping_works(&mut server, 5);
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Numbers beyond what a 64-bit float holds are valid JSON (RFC 8259 §9
/// lets an implementation limit their range), so they are never `-32700`: each is answered
/// by the rule of the member it is in.
#[test]
fn numbers_out_of_range_are_answered_by_the_rule_of_their_member() {
    let mut server = ready();
    let digits_400 = "7".repeat(400);
    let digits_100k = "9".repeat(100_000);
    // In the id: -32600 with id null (DESIGN §4: an integer id must fit in 64 bits).
    for id in ["1e400", "-1e400", &digits_400, &digits_100k, "[1e400]"] {
        let reply = server.request(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_eq!(
            (code(&reply), reply["id"].clone()),
            (-32600, Value::Null),
            "id of {} bytes: {reply}",
            id.len()
        );
    }
    let reply = server.request(r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#);
    assert_eq!(
        reply["error"]["message"],
        "Invalid request: a numeric \"id\" must be an integer that fits in 64 bits."
    );
    // In the arguments of a call: -32602, an argument bound, before the tool's schema.
    for number in ["1e400", "-1e400", &digits_400, "[1, {\"a\": 2e308}]"] {
        let reply = server.request(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":{number}}}}}}}"#
        ));
        assert_eq!(reply["id"], 2, "{reply}");
        assert_eq!(
            reply["error"],
            json!({"code": -32602,
                   "message": "Invalid params: a number in the arguments is too large to represent."}),
            "{number}"
        );
    }
    // In a member the method ignores: served.
    let reply = server.request(
        r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":1e400,"y":[-1e999999]}}"#,
    );
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    // Elsewhere in the envelope: the envelope's rule, -32600.
    let reply = server.request(r#"{"jsonrpc":"2.0","id":4,"method":"ping","extra":1e400}"#);
    assert_eq!((code(&reply), reply["id"].clone()), (-32600, json!(4)));
    let reply = server.request(r#"{"jsonrpc":"2.0","id":5,"method":1e400}"#);
    assert_eq!((code(&reply), reply["id"].clone()), (-32600, json!(5)));
    // The progress token: refused like an over-long one (-32602).
    let reply = server.request(
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"progressToken":1e400}}}"#,
    );
    assert_eq!((code(&reply), reply["id"].clone()), (-32602, json!(6)));
    // A notification and a response are never answered, out-of-range numbers or not.
    server.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e400}}"#,
    );
    server.send(r#"{"jsonrpc":"2.0","id":7,"result":{"n":1e400}}"#);
    ping_works(&mut server, 8);
    // Not JSON at all stays -32700.
    for token in ["NaN", "Infinity", "-Infinity", "1e", "01"] {
        let reply = server.request(&format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":{token}}}}}"#
        ));
        assert_eq!(
            (code(&reply), reply["id"].clone()),
            (-32700, Value::Null),
            "{token}"
        );
    }
    // A number in range next to one out of range is still read as itself.
    let reply = server.request(&call(10, "echo", json!({"text": "still exact"})));
    assert_eq!(reply["result"]["content"][0]["text"], "still exact");
}

/// `--auth-token-env` takes a variable's name. Given the token itself by
/// mistake, airlock refuses to start with a hint, and the token appears nowhere in what it
/// writes, at any log level.
#[test]
fn a_literal_token_given_to_auth_token_env_is_refused_without_being_echoed() {
    for (literal, status) in [
        // Not a variable name: a usage error.
        ("s3cr3t-Token/with.symbols+MORE==", 2),
        ("9f86d081884c7d659a2feaa0c55ad015", 2),
        ("", 2),
        ("--looks-like-a-flag-0123456789", 2),
        // A valid name (many tokens are) that is not set: not echoed either.
        ("ghp_Zx81kQ7TnPq2LmW9vB4cR6yH0sJ3dF5gA1eK", 1),
    ] {
        let joined = format!("--auth-token-env={literal}");
        let forms: [&[&str]; 2] = [&[&joined], &["--auth-token-env", literal]];
        for form in forms {
            let mut args = vec!["serve", "--http", "127.0.0.1:0"];
            args.extend_from_slice(form);
            let output = crate::support::stdio::run(
                &crate::support::stdio::airlock(),
                &args,
                &[("AIRLOCK_LOG", "trace")],
            );
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(status), "{args:?}: {stderr}");
            assert!(stdout.is_empty(), "{stdout}");
            assert!(stderr.contains("--auth-token-env"), "{stderr}");
            if !literal.is_empty() {
                assert!(!stderr.contains(literal), "the token was echoed: {stderr}");
                // Not even a piece of it.
                assert!(!stderr.contains(&literal[4..20]), "{stderr}");
            }
        }
    }
}

/// Ids reused and cancelled around calls answered at once and calls still running, all in one
/// pipelined write: a call answered at once frees its id for the next line, a running call's
/// id is refused until it ends, a cancel of a call already answered changes nothing, and a
/// running call's reply comes once, after twenty calls answered at once around it.
#[test]
fn ids_reused_and_cancelled_around_calls_answered_at_once_and_running_ones_each_get_one_answer() {
    let mut server = ready();
    let cancel = |id: u64| {
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
            .to_string()
    };
    let mut lines = vec![
        call(1, "echo", json!({"text": "a"})),
        call(1, "echo", json!({"text": "b"})),
        call(2, "sleep", json!({"ms": 300})),
        call(2, "echo", json!({"text": "dup"})),
        cancel(1),
        call(1, "echo", json!({"text": "c"})),
    ];
    lines.extend((100..120).map(|id| call(id, "echo", json!({"text": id.to_string()}))));
    lines.push(call(2, "echo", json!({"text": "dup again"})));
    server.write(format!("{}\n", lines.join("\n")).as_bytes());
    let replies: Vec<Value> = (0..25).map(|_| server.recv()).collect();
    let text = |reply: &Value| {
        reply["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
    };
    let of = |id: u64| -> Vec<&Value> { replies.iter().filter(|r| r["id"] == id).collect() };
    assert_eq!(
        of(1).iter().map(|r| text(r)).collect::<Vec<_>>(),
        [Some("a".into()), Some("b".into()), Some("c".into())]
    );
    // While the sleeper runs, both lines reusing its id are refused.
    let twos = of(2);
    assert_eq!(twos.len(), 2, "{twos:?}");
    assert!(twos.iter().all(|r| code(r) == -32_600), "{twos:?}");
    for id in 100..120 {
        assert_eq!(of(id).len(), 1);
        assert_eq!(text(of(id)[0]), Some(id.to_string()));
    }
    // The sleeper's own reply, once, after all of them.
    let slept = server.recv_within(Duration::from_secs(5));
    assert_eq!(slept["id"], 2);
    assert!(slept["result"]["content"].is_array(), "{slept}");
    ping_works(&mut server, 3);
}
