//! Red-team regressions for questions a tool asks the client (`CallContext::elicit`,
//! `CallContext::sample`): the client's JSON-RPC responses attacked as hostile input, through
//! the conformance fixture (`crates/airlock/examples/conformance_server.rs`) over real pipes
//! (stdio) and real TCP on loopback (`--http`).
//!
//! Findings (both fixed; each test failed against the code it was written for):
//!
//! 1. a response carrying `"error": null` beside its `result` (or `"result": null` beside
//!    its `error`) is taken as an answer: `answer_parts` reads the members into `Option`s,
//!    and serde reads `null` as `None`, so "both present" is missed. The accepted content
//!    reaches the tool; JSON-RPC 2.0 says both members MUST NOT be present, and SECURITY.md
//!    lists "`result` and `error` together" among the answers refused;
//! 2. over HTTP, a response POSTed to a legacy session is routed to its engine without
//!    checking `MCP-Protocol-Version`: an unsupported (`1999-01-01`), another legacy
//!    (`2025-06-18`) or the modern (`2026-07-28`) header is `202` and the answer reaches the
//!    session's question, while a request with the same header is `400`.
//!
//! Fixed: `answer_parts` keeps a member that is present even when it is `null`; a
//! notification or response POSTed to a legacy session is refused `400` when its version
//! header is not the session's, as a request is.
//!
//! Everything else here held, and is kept so that it goes on holding.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::http::{HttpServer, initialize_declaring, post, session_headers};
use crate::support::processes;
use crate::support::sse::{Stream, call_bytes};
use crate::support::stdio::{self, REPLY_TIMEOUT, Server, text};

const CANARY: &str = "canary-5e1d-answer";

fn fixture() -> Server {
    Server::start(&stdio::example("conformance_server"), &[])
}

/// A legacy stdio session whose client declared elicitation and sampling.
fn asking_fixture() -> Server {
    let mut server = fixture();
    let reply = server.request(
        &json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25",
                       "capabilities": {"elicitation": {}, "sampling": {}},
                       "clientInfo": {"name": "rt", "version": "1"}}
        })
        .to_string(),
    );
    assert!(reply.get("result").is_some(), "{reply}");
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    server
}

/// Calls `tool` and returns the id of the question it asks (the next line).
fn ask(server: &mut Server, call_id: &str, tool: &str, arguments: Value) -> u64 {
    server.send(&stdio::call(call_id, tool, arguments));
    let request = server.recv();
    assert!(
        matches!(
            request["method"].as_str(),
            Some("elicitation/create" | "sampling/createMessage")
        ),
        "a question first: {request}"
    );
    request["id"].as_u64().expect("a numeric question id")
}

/// A response line `{"jsonrpc":"2.0","id":<id>,"result":<result>}` with raw member texts.
fn answer(id: &str, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

const ADA: &str = r#"{"action":"accept","content":{"username":"ada","email":"ada@example.com"}}"#;

/// Sends a ping and returns every line written before its pong (none, when nothing was
/// answered).
fn lines_before_pong(server: &mut Server, ping_id: &str) -> Vec<Value> {
    server.send(&stdio::request(ping_id, "ping", json!({})));
    let mut before = Vec::new();
    loop {
        let line = server.recv();
        if line["id"] == ping_id && line.get("result").is_some() {
            return before;
        }
        before.push(line);
    }
}

/// Asserts nothing the server wrote on stdout (`seen`) or stderr holds the canary.
fn never_echoed(server: &mut Server, seen: &[String]) {
    for line in seen {
        assert!(!line.contains(CANARY), "echoed on stdout: {line}");
    }
    let stderr = server.stderr();
    assert!(!stderr.contains(CANARY), "echoed on stderr: {stderr}");
}

#[test]
fn redteam_ask_ids_naming_no_question_are_dropped_silently_and_the_question_still_waits() {
    let mut server = asking_fixture();
    let n = ask(
        &mut server,
        "c1",
        "test_elicitation",
        json!({"message": "m"}),
    );
    assert_eq!(n, 1, "the first question's id");
    let wrong = format!(r#"{{"action":"accept","content":{{"username":"{CANARY}","email":"e"}}}}"#);
    for id in [
        format!("\"{n}\""),
        format!("{n}.0"),
        format!("{n}e0"),
        format!("-{n}"),
        "0".to_owned(),
        format!("{}", n + 1),
        u64::MAX.to_string(),
        "18446744073709551616".to_owned(),
        "-9223372036854775809".to_owned(),
        "null".to_owned(),
        "true".to_owned(),
        "[1]".to_owned(),
        r#"{"id":1}"#.to_owned(),
    ] {
        server.send(&answer(&id, &wrong));
    }
    // Also without `jsonrpc`, with a `params`, with an unknown member, with `id` twice.
    server.send(&format!(r#"{{"id":{n},"result":{wrong}}}"#));
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{n},"result":{wrong},"params":{{}}}}"#
    ));
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{n},"result":{wrong},"x":1}}"#
    ));
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{n},"id":{n},"result":{wrong}}}"#
    ));
    let before = lines_before_pong(&mut server, "p1");
    assert!(before.is_empty(), "nothing answers the answers: {before:?}");
    // The question still waits, and its own id answers it.
    server.send(&answer(&n.to_string(), ADA));
    let reply = server.recv();
    assert_eq!(reply["id"], "c1", "{reply}");
    assert!(text(&reply).contains("\"username\":\"ada\""), "{reply}");
    never_echoed(&mut server, &[reply.to_string()]);
}

#[test]
fn redteam_ask_a_result_beside_a_null_error_is_not_an_answer() {
    let mut server = asking_fixture();
    let n = ask(
        &mut server,
        "c1",
        "test_elicitation",
        json!({"message": "m"}),
    );
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{n},"result":{ADA},"error":null}}"#
    ));
    let reply = server.recv();
    assert_eq!(reply["id"], "c1", "{reply}");
    assert_eq!(
        text(&reply),
        "the client's answer was not valid",
        "both members present: {reply}"
    );
    let n = ask(
        &mut server,
        "c2",
        "test_elicitation",
        json!({"message": "m"}),
    );
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{n},"result":null,"error":{{"code":1,"message":"{CANARY}"}}}}"#
    ));
    let reply = server.recv();
    assert_eq!(
        text(&reply),
        "the client's answer was not valid",
        "both members present: {reply}"
    );
}

#[test]
fn redteam_ask_answering_twice_or_after_the_call_ended_is_dropped() {
    let mut server = asking_fixture();
    let n = ask(
        &mut server,
        "c1",
        "test_elicitation",
        json!({"message": "m"}),
    );
    server.send(&answer(&n.to_string(), ADA));
    let reply = server.recv();
    assert!(text(&reply).contains("ada"), "{reply}");
    // Twice: the question is gone.
    let evil = format!(r#"{{"action":"accept","content":{{"username":"{CANARY}","email":"e"}}}}"#);
    server.send(&answer(&n.to_string(), &evil));
    assert!(lines_before_pong(&mut server, "p1").is_empty());
    // The next question has a new id; the old one does not answer it.
    let m = ask(
        &mut server,
        "c2",
        "test_elicitation",
        json!({"message": "m"}),
    );
    assert_eq!(m, n + 1);
    server.send(&answer(&n.to_string(), &evil));
    assert!(lines_before_pong(&mut server, "p2").is_empty());
    // The client cancels the call: the server withdraws its question.
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": "c2"}})
        .to_string(),
    );
    let withdrawn = server.recv();
    assert_eq!(
        withdrawn,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": m}})
    );
    // An answer after the call ended is dropped: no reply for c2, nothing at all.
    server.send(&answer(&m.to_string(), &evil));
    let before = lines_before_pong(&mut server, "p3");
    assert!(before.is_empty(), "{before:?}");
    // The session goes on asking.
    let k = ask(
        &mut server,
        "c3",
        "test_elicitation",
        json!({"message": "m"}),
    );
    assert_eq!(k, m + 1);
    server.send(&answer(&k.to_string(), r#"{"action":"decline"}"#));
    let reply = server.recv();
    assert_eq!(reply["id"], "c3");
    assert_eq!(text(&reply), "User response: action=decline");
    never_echoed(&mut server, &[]);
}

#[test]
fn redteam_ask_repeated_keys_even_escaped_make_a_response_no_answer() {
    let mut server = asking_fixture();
    let n = ask(
        &mut server,
        "c1",
        "test_elicitation",
        json!({"message": "m"}),
    );
    for result in [
        format!(
            r#"{{"action":"accept","content":{{"username":"a","\u0075sername":"{CANARY}","email":"e"}}}}"#
        ),
        format!(
            r#"{{"action":"accept","action":"accept","content":{{"username":"{CANARY}","email":"e"}}}}"#
        ),
        format!(
            r#"{{"action":"accept","content":{{"username":"{CANARY}","email":"e"}},"content":{{}}}}"#
        ),
    ] {
        server.send(&answer(&n.to_string(), &result));
    }
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{n},"result":{ADA},"result":{ADA}}}"#
    ));
    let before = lines_before_pong(&mut server, "p1");
    assert!(before.is_empty(), "dropped, not answered: {before:?}");
    server.send(&answer(&n.to_string(), ADA));
    let reply = server.recv();
    assert_eq!(reply["id"], "c1");
    assert!(text(&reply).contains("\"username\":\"ada\""), "{reply}");
    never_echoed(&mut server, &[reply.to_string()]);
}

#[test]
fn redteam_ask_deep_nesting_and_lone_surrogates_are_refused_without_echo() {
    let mut server = asking_fixture();
    let mut seen = Vec::new();
    let n = ask(
        &mut server,
        "c1",
        "test_elicitation",
        json!({"message": "m"}),
    );
    let nested = |depth: usize| {
        format!(
            r#"{{"action":"accept","content":{{"username":{}"{CANARY}"{},"email":"e"}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    // Past the depth limit (64): a parse error, id null; the question still waits.
    server.send(&answer(&n.to_string(), &nested(70)));
    let refused = server.recv();
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(stdio::code(&refused), -32700);
    seen.push(refused.to_string());
    // Lone surrogates: not JSON, the same.
    for name in [r"\ud800", r"\udc00\ud800x", r"\ud83d"] {
        server.send(&answer(
            &n.to_string(),
            &format!(
                r#"{{"action":"accept","content":{{"username":"{name}{CANARY}","email":"e"}}}}"#
            ),
        ));
        let refused = server.recv();
        assert_eq!(stdio::code(&refused), -32700, "{refused}");
        seen.push(refused.to_string());
    }
    // Within the limit but not a form value: the tool is told, in a fixed text.
    server.send(&answer(&n.to_string(), &nested(50)));
    let reply = server.recv();
    assert_eq!(reply["id"], "c1");
    assert_eq!(text(&reply), "the client's answer was not valid");
    seen.push(reply.to_string());
    // A proper pair is a character like any other.
    let n = ask(
        &mut server,
        "c2",
        "test_elicitation",
        json!({"message": "m"}),
    );
    server.send(&answer(
        &n.to_string(),
        r#"{"action":"accept","content":{"username":"\ud83d\ude00","email":"e"}}"#,
    ));
    let reply = server.recv();
    assert!(text(&reply).contains('\u{1F600}'), "{reply}");
    never_echoed(&mut server, &seen);
}

#[test]
fn redteam_ask_numbers_out_of_range_or_of_the_wrong_kind_never_reach_the_tool() {
    let mut server = asking_fixture();
    let defaults = "test_elicitation_sep1034_defaults";
    let mut k = 0;
    let mut reply_to = |server: &mut Server, content: &str| -> Value {
        k += 1;
        let n = ask(server, &format!("c{k}"), defaults, json!({}));
        server.send(&answer(
            &n.to_string(),
            &format!(r#"{{"action":"accept","content":{content}}}"#),
        ));
        server.recv()
    };
    for content in [
        r#"{"age":1e400}"#,
        r#"{"age":18446744073709551616}"#,
        r#"{"age":-9223372036854775809}"#,
        r#"{"age":1.5}"#,
        r#"{"age":"30"}"#,
        r#"{"age":true}"#,
        r#"{"age":null}"#,
        r#"{"score":1e400}"#,
        r#"{"score":-1e400}"#,
        r#"{"score":"NaN"}"#,
        r#"{"score":"Infinity"}"#,
        r#"{"score":[1]}"#,
        r#"{"status":"ACTIVE"}"#,
        r#"{"verified":"true"}"#,
        r#"{"verified":1}"#,
        r#"{"name":{"x":1}}"#,
    ] {
        let reply = reply_to(&mut server, content);
        assert_eq!(
            text(&reply),
            "the client's answer was not valid",
            "{content}: {reply}"
        );
    }
    // In range: handed over as sent.
    let reply = reply_to(&mut server, r#"{"age":30,"score":1e308,"verified":false}"#);
    assert!(text(&reply).contains(r#""age":30"#), "{reply}");
    // The session was not cut off by sixteen malformed answers.
    assert!(lines_before_pong(&mut server, "p").is_empty());
}

#[test]
fn redteam_ask_sampling_answers_beyond_text_are_refused_and_never_echoed() {
    let mut server = asking_fixture();
    let mut k = 0;
    let mut seen = Vec::new();
    let mut reply_to = |server: &mut Server, result: &str| -> Value {
        k += 1;
        let n = ask(
            server,
            &format!("s{k}"),
            "test_sampling",
            json!({"prompt": "p"}),
        );
        server.send(&answer(&n.to_string(), result));
        server.recv()
    };
    for result in [
        format!(r#"{{"role":"user","content":{{"type":"text","text":"{CANARY}"}},"model":"m"}}"#),
        format!(
            r#"{{"role":"assistant","content":{{"type":"image","data":"{CANARY}","mimeType":"image/png"}},"model":"m"}}"#
        ),
        format!(
            r#"{{"role":"assistant","content":{{"type":"text","text":"{CANARY}","x":1}},"model":"m"}}"#
        ),
        format!(
            r#"{{"role":"assistant","content":{{"type":"text","text":"{CANARY}"}},"model":"m","stopReason":{{"a":1}}}}"#
        ),
        format!(
            r#"{{"role":"assistant","content":{{"type":"text","text":"{CANARY}"}},"model":"{}"}}"#,
            "m".repeat(300)
        ),
        format!(
            r#"{{"role":"assistant","content":{{"type":"text","text":"{CANARY}"}},"model":"m","isError":true}}"#
        ),
        format!(
            r#"{{"role":"assistant","content":{{"type":"text","text":"{}"}},"model":"m"}}"#,
            CANARY.repeat(4000)
        ),
        format!(
            r#"{{"role":"assistant","content":[{}],"model":"m"}}"#,
            vec![r#"{"type":"text","text":""}"#; 3000].join(",")
        ),
        format!(r#"{{"action":"accept","content":{{"username":"{CANARY}","email":"e"}}}}"#),
        "[]".to_owned(),
        "\"text\"".to_owned(),
    ] {
        let reply = reply_to(&mut server, &result);
        assert_eq!(text(&reply), "the client's answer was not valid", "{reply}");
        seen.push(reply.to_string());
    }
    // The model's name and the stop reason are the client's claims: never in the reply.
    let reply = reply_to(
        &mut server,
        &format!(
            r#"{{"role":"assistant","content":{{"type":"text","text":"hi"}},"model":"{CANARY}","stopReason":"{CANARY}"}}"#
        ),
    );
    assert_eq!(text(&reply), "LLM response: hi");
    seen.push(reply.to_string());
    // An elicitation's question is not answered by a sampling result either.
    let n = ask(
        &mut server,
        "e1",
        "test_elicitation",
        json!({"message": "m"}),
    );
    server.send(&answer(
        &n.to_string(),
        r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#,
    ));
    assert_eq!(text(&server.recv()), "the client's answer was not valid");
    never_echoed(&mut server, &seen);
}

#[test]
fn redteam_ask_oversized_answers_are_refused_and_a_frame_too_long_leaves_the_question() {
    let mut server = asking_fixture();
    let n = ask(
        &mut server,
        "c1",
        "test_elicitation",
        json!({"message": "m"}),
    );
    // Just over the answer bound (64 KiB), far under the frame bound.
    let over = format!(
        r#"{{"action":"accept","content":{{"username":"{}","email":"e"}}}}"#,
        "x".repeat(64 * 1024)
    );
    server.send(&answer(&n.to_string(), &over));
    assert_eq!(text(&server.recv()), "the client's answer was not valid");
    // Over the frame bound (1 MiB): refused unread; the question still waits.
    let n = ask(
        &mut server,
        "c2",
        "test_elicitation",
        json!({"message": "m"}),
    );
    let huge = format!(
        r#"{{"action":"accept","content":{{"username":"{}","email":"e"}}}}"#,
        CANARY.repeat(70_000)
    );
    server.send(&answer(&n.to_string(), &huge));
    let refused = server.recv();
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert!(refused.get("error").is_some(), "{refused}");
    server.send(&answer(&n.to_string(), ADA));
    let reply = server.recv();
    assert_eq!(reply["id"], "c2");
    assert!(text(&reply).contains("ada"), "{reply}");
    let peak = server.peak_rss_kib();
    assert!(peak < 32 * 1024, "peak RSS {peak} KiB");
    never_echoed(&mut server, &[refused.to_string()]);
}

#[test]
fn redteam_ask_a_flood_of_unsolicited_answers_is_cut_off_and_holds_no_memory() {
    let mut server = asking_fixture();
    let padding = "x".repeat(512 * 1024);
    let big = |k: usize| {
        answer(
            &(k + 1000).to_string(),
            &format!(r#"{{"action":"accept","content":{{"username":"{padding}"}}}}"#),
        )
    };
    // 250 half-MiB answers nobody asked for (under the cut-off of 256), then a ping.
    let started = Instant::now();
    for k in 0..250 {
        server.send(&big(k));
    }
    assert!(lines_before_pong(&mut server, "p").is_empty());
    let peak = server.peak_rss_kib();
    eprintln!(
        "250 x 512 KiB unsolicited answers: {:?}, peak RSS {peak} KiB",
        started.elapsed()
    );
    assert!(peak < 32 * 1024, "peak RSS {peak} KiB");
    // The ping reset the count; 256 in a row end the session (exit code 3, cut off).
    let started = Instant::now();
    let mut written = 0;
    for k in 0..300 {
        let mut line = big(k).into_bytes();
        line.push(b'\n');
        if server.try_write(&line).is_err() {
            break;
        }
        written += 1;
    }
    let status = server.wait(REPLY_TIMEOUT);
    eprintln!("cut off after {written} written, {:?}", started.elapsed());
    assert_eq!(status.code(), Some(3), "cut off");
    assert!(written >= 256, "{written}");
}

#[test]
fn redteam_ask_unsolicited_answers_between_pings_leave_memory_flat() {
    let mut server = asking_fixture();
    let before = server.peak_rss_kib();
    let started = Instant::now();
    let mut batch = String::new();
    for k in 0..50_000_u32 {
        batch.push_str(&answer(&(k + 7).to_string(), r#"{"action":"cancel"}"#));
        batch.push('\n');
        if k % 200 == 199 {
            batch.push_str(&stdio::request(format!("p{k}"), "ping", json!({})));
            batch.push('\n');
        }
    }
    server.write(batch.as_bytes());
    let mut pongs = 0;
    while pongs < 250 {
        let line = server.recv();
        assert!(line.get("result").is_some(), "only pongs: {line}");
        pongs += 1;
    }
    let after = server.peak_rss_kib();
    eprintln!(
        "50,000 unsolicited answers between 250 pings: {:?}, peak RSS {before} -> {after} KiB",
        started.elapsed()
    );
    assert!(after < before + 4 * 1024, "{before} -> {after} KiB");
}

#[test]
fn redteam_ask_a_client_that_never_answers_holds_four_questions_until_the_tools_give_up() {
    let mut server = asking_fixture();
    for id in 1..=10 {
        server.send(&stdio::call(id, "test_sampling", json!({"prompt": "p"})));
    }
    let mut questions = Vec::new();
    let mut busy = Vec::new();
    let mut overloaded = Vec::new();
    for _ in 0..10 {
        let line = server.recv();
        if line["method"] == "sampling/createMessage" {
            questions.push(line["id"].as_u64().unwrap());
        } else if line["result"]["content"][0]["text"] == "the client is asked too much at once" {
            busy.push(line["id"].as_i64().unwrap());
        } else {
            assert_eq!(stdio::code(&line), -31503, "{line}");
            overloaded.push(line["id"].as_i64().unwrap());
        }
    }
    assert_eq!(questions, [1, 2, 3, 4], "four questions wait");
    // Calls 5 to 8 are told at once. Calls 9 and 10 find 8 calls in flight (-31503) unless
    // the session took the answers of 5 to 8 before reading them: then they are told too.
    // Which comes first is the scheduler's; both are bounded.
    assert!(
        (5..=8).all(|id| busy.contains(&id)),
        "calls 5 to 8 are told at once: {busy:?}"
    );
    assert_eq!(busy.len() + overloaded.len(), 6, "{busy:?} {overloaded:?}");
    assert!(
        overloaded.iter().all(|id| *id >= 9),
        "only past max_in_flight (8): {overloaded:?}"
    );
    // The session stays responsive meanwhile.
    let started = Instant::now();
    assert!(lines_before_pong(&mut server, "p").is_empty());
    assert!(started.elapsed() < Duration::from_secs(1));
    // At the tool's time limit (30 s) each call ends and its question is withdrawn.
    let mut withdrawn = Vec::new();
    let mut timed_out = 0;
    while withdrawn.len() < 4 || timed_out < 4 {
        let line = server.recv_within(Duration::from_secs(40));
        if line["method"] == "notifications/cancelled" {
            withdrawn.push(line["params"]["requestId"].as_u64().unwrap());
        } else {
            assert!(text(&line).contains("time limit"), "{line}");
            timed_out += 1;
        }
    }
    assert_eq!(withdrawn, [1, 2, 3, 4]);
    // Late answers to them are dropped; the next call asks again.
    for id in 1..=4 {
        server.send(&answer(
            &id.to_string(),
            r#"{"role":"assistant","content":{"type":"text","text":"late"},"model":"m"}"#,
        ));
    }
    assert!(lines_before_pong(&mut server, "p2").is_empty());
    assert_eq!(
        ask(
            &mut server,
            "again",
            "test_sampling",
            json!({"prompt": "p"})
        ),
        5
    );
}

// HTTP.

/// The same on a connection whose receive buffer is as small as the kernel allows, and which
/// is never read.
fn call_unread(addr: SocketAddr, session: &str, id: i64, tool: &str, arguments: Value) -> Stream {
    Stream::send_unread(addr, &call_bytes(addr, session, id, tool, arguments))
}

/// The id of the question in the stream (after it was heard).
fn question_id(stream: &Stream) -> u64 {
    stream
        .messages()
        .into_iter()
        .find(|message| message.get("method").is_some())
        .and_then(|message| message["id"].as_u64())
        .expect("a question in the stream")
}

fn elicited(id: u64, username: &str) -> String {
    answer(
        &id.to_string(),
        &format!(r#"{{"action":"accept","content":{{"username":"{username}","email":"e"}}}}"#),
    )
}

#[test]
fn redteam_ask_http_another_session_or_no_session_cannot_answer_a_question() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let a = initialize_declaring(addr, json!({"elicitation": {}}));
    let b = initialize_declaring(addr, json!({"elicitation": {}}));
    let mut stream = Stream::call(addr, &a, 1, "test_elicitation", json!({"message": "m"}));
    assert!(
        stream.hears("elicitation/create", REPLY_TIMEOUT),
        "{stream:?}"
    );
    let n = question_id(&stream);
    // Session B, no session, an unknown session id: dropped (or 404), never routed to A.
    assert_eq!(
        post(addr, &session_headers(&b), &elicited(n, CANARY)).status,
        202
    );
    assert_eq!(post(addr, &[], &elicited(n, CANARY)).status, 202);
    let unknown = "0".repeat(a.len());
    assert_eq!(
        post(addr, &session_headers(&unknown), &elicited(n, CANARY)).status,
        404
    );
    assert!(
        !stream.hears("\"result\"", Duration::from_millis(500)),
        "A's question was answered by someone else: {stream:?}"
    );
    // A's own answer is taken.
    assert_eq!(
        post(addr, &session_headers(&a), &elicited(n, "ada")).status,
        202
    );
    assert!(stream.hears("\"result\"", REPLY_TIMEOUT), "{stream:?}");
    let text = String::from_utf8_lossy(stream.raw()).into_owned();
    assert!(text.contains(r#"\"username\":\"ada\""#), "{text}");
    assert!(!text.contains(CANARY), "{text}");
    let log = server.log.lock().unwrap().join("\n");
    assert!(!log.contains(CANARY), "{log}");
}

#[test]
fn redteam_ask_http_an_answer_under_a_foreign_protocol_version_is_refused() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let a = initialize_declaring(addr, json!({"elicitation": {}}));
    // A request with such a header is 400 …
    let ping = post(
        addr,
        &[
            ("Mcp-Session-Id", a.as_str()),
            ("MCP-Protocol-Version", "1999-01-01"),
        ],
        &stdio::request(5, "ping", json!({})),
    );
    assert_eq!(ping.status, 400);
    // … and so is an answer.
    let mut stream = Stream::call(addr, &a, 1, "test_elicitation", json!({"message": "m"}));
    assert!(stream.hears("elicitation/create", REPLY_TIMEOUT));
    let n = question_id(&stream);
    for version in ["1999-01-01", "2025-06-18", "2026-07-28"] {
        let reply = post(
            addr,
            &[
                ("Mcp-Session-Id", a.as_str()),
                ("MCP-Protocol-Version", version),
            ],
            &elicited(n, version),
        );
        assert_eq!(reply.status, 400, "{version}: {reply:?}");
    }
    assert!(
        !stream.hears("\"result\"", Duration::from_millis(500)),
        "answered under a foreign version: {stream:?}"
    );
}

#[test]
fn redteam_ask_http_streams_never_read_hold_only_their_clients_slots() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let a = initialize_declaring(addr, json!({"sampling": {}}));
    let b = initialize_declaring(addr, json!({}));
    let before = processes::peak_rss_kib(server.pid());
    // Four calls whose SSE streams are never read, each waiting on its question.
    let unread: Vec<Stream> = (1..=4)
        .map(|id| call_unread(addr, &a, id, "test_sampling", json!({"prompt": "p"})))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // A fifth call of the same client is refused at once (client_in_flight, 4).
    let started = Instant::now();
    let fifth = post(
        addr,
        &session_headers(&a),
        &stdio::call(5, "test_sampling", json!({"prompt": "p"})),
    );
    assert_eq!(fifth.code(), -31503, "{fifth:?}");
    // Pings of both sessions are answered at once.
    for session in [&a, &b] {
        let pong = post(
            addr,
            &session_headers(session),
            &stdio::request(7, "ping", json!({})),
        );
        assert_eq!(pong.json()["result"], json!({}), "{pong:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The questions are answered by POST, their streams still unread: the calls end and
    // give their slots back.
    for id in 1..=4 {
        let reply = post(
            addr,
            &session_headers(&a),
            &answer(
                &id.to_string(),
                r#"{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}"#,
            ),
        );
        assert_eq!(reply.status, 202);
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut sixth = Stream::call(addr, &a, 6, "test_sampling", json!({"prompt": "p"}));
    assert!(
        sixth.hears("sampling/createMessage", REPLY_TIMEOUT),
        "slots given back: {sixth:?}"
    );
    assert_eq!(question_id(&sixth), 5);
    let after = processes::peak_rss_kib(server.pid());
    eprintln!("peak RSS {before} -> {after} KiB");
    assert!(after < before + 8 * 1024);
    drop(unread);
}

#[test]
fn redteam_ask_http_a_flood_of_unsolicited_answers_cuts_the_client_off() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let a = initialize_declaring(addr, json!({"elicitation": {}}));
    let before = processes::peak_rss_kib(server.pid());
    let padding = "x".repeat(200 * 1000);
    let started = Instant::now();
    let statuses: Vec<u16> = (0..260)
        .map(|k| {
            let body = answer(
                &(k + 100).to_string(),
                &format!(r#"{{"action":"accept","content":{{"username":"{padding}"}}}}"#),
            );
            post(addr, &session_headers(&a), &body).status
        })
        .collect();
    let elapsed = started.elapsed();
    let after = processes::peak_rss_kib(server.pid());
    eprintln!("260 x 200 KB unsolicited answers: {elapsed:?}, peak RSS {before} -> {after} KiB");
    assert!(
        statuses[..256].iter().all(|&status| status == 202),
        "{statuses:?}"
    );
    assert!(
        statuses[256..].iter().all(|&status| status == 429),
        "{statuses:?}"
    );
    // The client is cut off (HTTP_CUT_OFF, 60 s), its session's requests too.
    let ping = post(
        addr,
        &session_headers(&a),
        &stdio::request(5, "ping", json!({})),
    );
    assert_eq!(ping.status, 429);
    assert!(after < before + 8 * 1024, "{before} -> {after} KiB");
}
