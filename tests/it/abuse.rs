//! The abuse limits over real pipes: quotas, floods, the in-flight cap, cancellation, and a
//! client that stops reading.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fixtures::ServeTree;
use crate::support::stdio::{Server, Unread, airlock, call, example, request};

/// Sends `lines` in one write (pipelined), then reads one reply per line, sorted by id
/// (calls finish in any order; refusals come back at once).
fn pipeline(server: &mut Server, lines: &[String]) -> Vec<Value> {
    let mut batch = lines.join("\n");
    batch.push('\n');
    server.write(batch.as_bytes());
    let mut replies: Vec<Value> = lines.iter().map(|_| server.recv()).collect();
    replies.sort_by_key(|reply| reply["id"].as_u64());
    replies
}

fn code(reply: &Value) -> Option<i64> {
    reply["error"]["code"].as_i64()
}

#[test]
fn ten_thousand_pipelined_calls_get_exactly_the_quota_and_the_rest_a_sane_wait() {
    let dir = ServeTree::new("quota");
    let root = dir.dir.join("root");
    let mut server = Server::start_in(
        &airlock(),
        &[
            "serve",
            "--calls-per-minute",
            "1",
            "--call-burst",
            "25",
            "--max-in-flight",
            "64",
        ],
        &root,
    );
    server.initialize("2025-11-25");
    let lines: Vec<String> = (0..10_000)
        .map(|id| call(id, "file_info", json!({"path": "hello.txt"})))
        .collect();
    let replies = pipeline(&mut server, &lines);
    let mut ids = HashSet::new();
    let mut admitted = 0;
    let mut limited = 0;
    for reply in &replies {
        assert!(
            ids.insert(reply["id"].as_u64().expect("an id")),
            "two replies for one id"
        );
        match code(reply) {
            None => {
                assert!(
                    reply["result"]["content"][0]["text"]
                        .as_str()
                        .unwrap()
                        .contains("hello.txt")
                );
                admitted += 1;
            }
            Some(-31429) => {
                let wait = reply["error"]["data"]["retryAfterMs"]
                    .as_u64()
                    .expect("retryAfterMs");
                assert!((1..=60_000).contains(&wait), "retryAfterMs {wait}");
                limited += 1;
            }
            Some(other) => panic!("unexpected code {other}: {reply}"),
        }
    }
    assert_eq!((admitted, limited), (25, 9_975));
}

const TWO_TOOLS: &str = r#"
[limits]
cheap_method_rate = { per_minute = 1, burst = 5 }
tool_call_rate = { per_minute = 1, burst = 5 }

[[tool]]
name = "first"
description = "A tool with its own quota"
command = ["true"]
rate = { per_minute = 1, burst = 2 }

[[tool]]
name = "second"
description = "Another tool with its own quota"
command = ["true"]
rate = { per_minute = 1, burst = 2 }
"#;

#[test]
fn per_tool_quotas_are_independent() {
    let sandbox = ServeTree::new("pertool");
    let mut server = sandbox.serve(&sandbox.manifest(TWO_TOOLS), &[]);
    let first: Vec<String> = (1..=3).map(|id| call(id, "first", json!({}))).collect();
    let replies = pipeline(&mut server, &first);
    assert_eq!(
        replies.iter().map(code).collect::<Vec<_>>(),
        [None, None, Some(-31429)]
    );
    let second: Vec<String> = (4..=5).map(|id| call(id, "second", json!({}))).collect();
    let replies = pipeline(&mut server, &second);
    assert_eq!(replies.iter().map(code).collect::<Vec<_>>(), [None, None]);
}

#[test]
fn a_ping_flood_does_not_starve_tool_calls_nor_a_call_flood_pings() {
    let sandbox = ServeTree::new("starve");
    let mut server = sandbox.serve(&sandbox.manifest(TWO_TOOLS), &[]);
    // The handshake used one cheap token; four are left, then the flood is refused.
    let pings: Vec<String> = (10..30).map(|id| request(id, "ping", json!({}))).collect();
    let replies = pipeline(&mut server, &pings);
    let refused = replies.iter().filter(|r| code(r) == Some(-31429)).count();
    assert_eq!(refused, 16);
    assert_eq!(
        code(&server.request(&call(1, "first", json!({})))),
        None,
        "calls still pass"
    );

    let sandbox = ServeTree::new("starve2");
    let mut server = sandbox.serve(&sandbox.manifest(TWO_TOOLS), &[]);
    let calls: Vec<String> = (10..30)
        .map(|id| call(id, if id % 2 == 0 { "first" } else { "second" }, json!({})))
        .collect();
    let replies = pipeline(&mut server, &calls);
    assert!(replies.iter().filter(|r| code(r) == Some(-31429)).count() >= 16);
    assert_eq!(
        server.request(&request(1, "ping", json!({})))["result"],
        json!({})
    );
}

#[test]
fn cancelling_a_slow_call_sends_nothing_for_it_and_frees_its_slot() {
    let mut server = Server::start(&example("fixture_server"), &[]);
    server.initialize("2025-11-25");
    // Eight sleeping calls fill the cap.
    for id in 1..=8 {
        server.send(&call(id, "sleep", json!({"ms": 1900})));
    }
    assert_eq!(
        code(&server.request(&call(9, "echo", json!({"text": "x"})))),
        Some(-31503)
    );
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    // The slot is free at once: the next call runs while seven others still sleep.
    let reply = server.request(&call(10, "echo", json!({"text": "freed"})));
    assert_eq!(reply["id"], 10);
    assert_eq!(reply["result"]["content"][0]["text"], "freed");
    let mut finished: Vec<u64> = (2..=8)
        .map(|_| server.recv()["id"].as_u64().unwrap())
        .collect();
    finished.sort_unstable();
    assert_eq!(
        finished,
        [2, 3, 4, 5, 6, 7, 8],
        "nothing was sent for the cancelled id 1"
    );
}

#[test]
fn a_client_that_writes_200000_requests_and_reads_nothing_is_held_flat_then_answered() {
    let mut server = Unread::start(&example("fixture_server"), &[]);
    let mut stdin = server.stdin.take().expect("stdin");
    let stdout = server.take_stdout();
    let pid = server.child.id();
    const REQUESTS: u64 = 200_000;
    let writer = std::thread::spawn(move || {
        let mut chunk = String::new();
        for id in 0..REQUESTS {
            chunk.push_str(&request(id, "ping", json!({})));
            chunk.push('\n');
            if chunk.len() > 64 * 1024 {
                if stdin.write_all(chunk.as_bytes()).is_err() {
                    return;
                }
                chunk.clear();
            }
        }
        let _sent = stdin.write_all(chunk.as_bytes());
    });
    std::thread::sleep(Duration::from_secs(2));
    let peak = crate::support::processes::peak_rss_kib(pid);
    eprintln!("peak RSS while 200,000 requests go unread: {peak} KiB");
    // SECURITY.md: memory does not grow with unread input; 32 MiB is the documented bound.
    assert!(peak < 32 * 1024, "peak RSS {peak} KiB");
    assert!(
        !writer.is_finished(),
        "the server read everything although nobody read its replies"
    );
    // Now read: every request gets exactly one reply (a result or a quota refusal).
    let mut seen = vec![false; usize::try_from(REQUESTS).unwrap()];
    let mut lines = BufReader::new(stdout).lines();
    for _ in 0..REQUESTS {
        let line = lines.next().expect("a reply").expect("readable");
        let reply: Value = serde_json::from_str(&line).expect("JSON");
        let id = usize::try_from(reply["id"].as_u64().expect("id")).unwrap();
        assert!(
            reply.get("result").is_some() || code(&reply) == Some(-31429),
            "{reply}"
        );
        assert!(
            !std::mem::replace(&mut seen[id], true),
            "two replies for {id}"
        );
    }
    writer.join().expect("writer");
    assert!(seen.iter().all(|s| *s));
}
