//! The operator's side of `airlock serve`: the per-call audit record, refusals
//! logged at the HTTP boundary, and the start-up messages an operator reads.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fixtures::ServeTree;
use crate::support::http::{HttpServer, modern};
use crate::support::stdio::{REPLY_TIMEOUT, Server, airlock, call, code};

/// A value that must never appear in a record or a log line.
const ARGUMENT_VALUE: &str = "zz-argument-value-never-logged-zz";

const AUDIT_MANIFEST: &str = r#"
[[tool]]
name = "echo"
description = "Echoes its word"
command = ["echo", "{word}"]
args.word = { type = "string", max_length = 100 }

[[tool]]
name = "fail"
description = "Fails with status 3"
command = ["sh", "-c", "exit 3", "sh", "{word}"]
accept_risk = ["interpreter_code"]
args.word = { type = "string" }

[[tool]]
name = "hang"
description = "Sleeps past its deadline"
command = ["sleep", "{seconds}"]
timeout_ms = 300
args.seconds = { type = "integer", minimum = 1, maximum = 60 }
"#;

/// The record's keys, always all present.
const RECORD_KEYS: [&str; 16] = [
    "arguments_hmac",
    "client",
    "denials",
    "duration_ms",
    "event",
    "exit_code",
    "is_error",
    "limit",
    "network",
    "outcome",
    "output_bytes",
    "refusal",
    "signal",
    "task",
    "time",
    "tool",
];

/// The audit records in `path`, each checked for its shape.
fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        !text.contains(ARGUMENT_VALUE),
        "an argument value reached the audit log: {text}"
    );
    text.lines()
        .map(|line| {
            let record: Value = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not one JSON object per line ({error}): {line}"));
            let keys: BTreeSet<&str> = record
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, RECORD_KEYS.into_iter().collect(), "{line}");
            assert_eq!(record["event"], "tool_call");
            let time = record["time"].as_str().unwrap();
            assert!(
                time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
                "{time}"
            );
            assert!(record["duration_ms"].is_u64());
            record
        })
        .collect()
}

/// `records` once `count` are written (the record follows the reply by microseconds).
fn wait_for_records(path: &Path, count: usize) -> Vec<Value> {
    let start = std::time::Instant::now();
    loop {
        let found = records(path);
        if found.len() >= count {
            return found;
        }
        assert!(
            start.elapsed() < REPLY_TIMEOUT,
            "{count} records expected, found {found:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fields that do not vary with time, of one record.
fn fixed(record: &Value) -> Value {
    let mut record = record.clone();
    let map = record.as_object_mut().unwrap();
    map.remove("time");
    map.remove("duration_ms");
    record
}

fn word(value: &str) -> Value {
    json!({ "word": value })
}

#[test]
fn every_call_leaves_one_record_with_its_outcome_and_no_argument_value() {
    let sandbox = ServeTree::new("audit-record");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let log = sandbox.dir.join("audit.jsonl");
    let mut server = Server::start_with(
        &airlock(),
        &[
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[("AIRLOCK_LOG", "trace")],
    );
    server.initialize("2025-11-25");
    let ok = server.request(&call(1, "echo", word(ARGUMENT_VALUE)));
    assert_eq!(ok["result"]["content"][0]["type"], "text", "{ok}");
    assert_ne!(ok["result"]["isError"], true, "{ok}");
    let failed = server.request(&call(2, "fail", word(ARGUMENT_VALUE)));
    assert_eq!(failed["result"]["isError"], true);
    let timed_out = server.request(&call(3, "hang", json!({ "seconds": 30 })));
    assert_eq!(timed_out["result"]["isError"], true);
    // Refused before it ran: the argument bound (max_length 100) is the schema's, answered
    // with an isError result naming the rule.
    let invalid = server.request(&call(4, "echo", word(&ARGUMENT_VALUE.repeat(10))));
    assert_eq!(invalid["result"]["isError"], true);
    // Refused with a JSON-RPC error: a tool the server does not have (its name is the
    // peer's text and is not written).
    let unknown = server.request(&call(5, ARGUMENT_VALUE, json!({})));
    assert_eq!(code(&unknown), -32602);
    let stderr = server.stderr();
    assert!(!stderr.contains(ARGUMENT_VALUE), "{stderr}");

    let found: Vec<Value> = wait_for_records(&log, 5).iter().map(fixed).collect();
    let stdio = json!({ "transport": "stdio", "address": null, "identity": null });
    let record = |tool: Value, outcome: &str, exit: Value, is_error: bool, bytes: u64| {
        json!({
            "event": "tool_call", "client": stdio, "tool": tool, "outcome": outcome,
            "exit_code": exit, "signal": null, "is_error": is_error, "output_bytes": bytes,
            "limit": null, "refusal": null, "arguments_hmac": null, "network": null,
            "denials": null, "task": null,
        })
    };
    let echoed = u64::try_from(ARGUMENT_VALUE.len() + 1).unwrap();
    let mut timeout = record(json!("hang"), "timeout", Value::Null, true, 0);
    timeout["limit"] = json!("timeout");
    timeout["output_bytes"] = json!(
        timed_out["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len()
    );
    let mut refused = record(Value::Null, "refused", Value::Null, false, 0);
    refused["refusal"] = json!({ "code": -32602, "reason": "Invalid params: unknown tool." });
    let failed_bytes = failed["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .len();
    assert_eq!(
        found,
        [
            record(json!("echo"), "ok", json!(0), false, echoed),
            record(json!("fail"), "error", json!(3), true, failed_bytes as u64),
            timeout,
            record(json!("echo"), "invalid_arguments", Value::Null, true, 0),
            refused,
        ]
    );
}

#[test]
fn a_rate_limited_call_is_recorded_with_the_limit_and_a_keyed_hash_marks_equal_arguments() {
    let sandbox = ServeTree::new("audit-refused");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let log = sandbox.dir.join("audit.jsonl");
    let mut server = Server::start_with(
        &airlock(),
        &[
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
            "--calls-per-minute",
            "1",
            "--call-burst",
            "2",
            "--audit-hash-key-env",
            "IT_AUDIT_KEY",
        ],
        &[("IT_AUDIT_KEY", "a key of sixteen bytes or more")],
    );
    server.initialize("2025-11-25");
    server.request(&call(1, "echo", word(ARGUMENT_VALUE)));
    server.request(&call(2, "echo", word(ARGUMENT_VALUE)));
    let limited = server.request(&call(3, "echo", word(ARGUMENT_VALUE)));
    assert_eq!(code(&limited), -31429);
    let stderr = server.stderr();
    assert!(!stderr.contains("sixteen bytes"), "{stderr}");

    let found = wait_for_records(&log, 3);
    let hmac = found[0]["arguments_hmac"].as_str().unwrap();
    assert_eq!(hmac.len(), 64);
    assert!(hmac.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(found[1]["arguments_hmac"], hmac);
    let refused = fixed(&found[2]);
    assert_eq!(refused["outcome"], "refused");
    assert_eq!(refused["tool"], "echo");
    assert_eq!(refused["limit"], "rate");
    assert_eq!(refused["refusal"]["code"], -31429);
    assert_eq!(refused["arguments_hmac"], Value::Null);
}

#[test]
fn records_go_to_stderr_by_default_and_the_file_is_reopened_on_sigusr1() {
    let sandbox = ServeTree::new("audit-rotate");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let mut plain = Server::start(
        &airlock(),
        &["serve", "--manifest", manifest.to_str().unwrap()],
    );
    plain.initialize("2025-11-25");
    plain.request(&call(1, "echo", word("x")));
    let stderr = plain.stderr();
    let record: Vec<Value> = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect();
    assert_eq!(record.len(), 1, "{stderr}");
    assert_eq!(record[0]["tool"], "echo");

    let log = sandbox.dir.join("audit.jsonl");
    let rotated = sandbox.dir.join("audit.jsonl.1");
    let mut server = Server::start(
        &airlock(),
        &[
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
    );
    server.initialize("2025-11-25");
    server.request(&call(1, "echo", word("x")));
    wait_for_records(&log, 1);
    std::fs::rename(&log, &rotated).unwrap();
    crate::support::processes::signal(server.pid(), "USR1");
    let start = std::time::Instant::now();
    while !log.exists() {
        assert!(start.elapsed() < REPLY_TIMEOUT, "not reopened");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.request(&call(2, "echo", word("y")));
    assert_eq!(wait_for_records(&log, 1).len(), 1);
    assert_eq!(records(&rotated).len(), 1);
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&log).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn http_records_name_the_address_and_token_identity_and_boundary_refusals_are_logged() {
    let sandbox = ServeTree::new("audit-http");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let log = sandbox.dir.join("audit.jsonl");
    let token = "it-token-for-the-audit-test-0123456789";
    let server = HttpServer::airlock(
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
            "--auth-token-env",
            "IT_AUDIT_TOKEN",
        ],
        &[("IT_AUDIT_TOKEN", token), ("AIRLOCK_LOG", "info")],
    );
    let bearer = format!("Bearer {token}");
    let reply = modern(
        server.addr,
        1,
        "tools/call",
        json!({ "name": "echo", "arguments": word(ARGUMENT_VALUE) }),
        &[("Authorization", &bearer)],
    );
    assert_eq!(
        reply.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&reply.body)
    );
    let found = wait_for_records(&log, 1);
    assert_eq!(
        found[0]["client"],
        json!({ "transport": "http", "address": "127.0.0.1", "identity": "IT_AUDIT_TOKEN" })
    );
    assert_eq!(found[0]["outcome"], "ok");

    // A wrong token, a foreign Host and a foreign Origin: each logged at the default level
    // with the client's address, never with what it sent.
    let wrong = "Bearer not-the-token-9876543210";
    let unauthorized = crate::support::http::post(server.addr, &[("Authorization", wrong)], "{}");
    assert_eq!(unauthorized.status, 401);
    let origin =
        crate::support::http::post(server.addr, &[("Origin", "https://evil.example")], "{}");
    assert_eq!(origin.status, 403);
    let start = std::time::Instant::now();
    loop {
        let lines = server.log.lock().unwrap().clone();
        let refused = |status: &str| {
            lines
                .iter()
                .any(|line| line.contains("request refused") && line.contains(status))
        };
        if refused("status=401") && refused("status=403") {
            let all = lines.join("\n");
            assert!(all.contains("client=127.0.0.1"), "{all}");
            for secret in ["not-the-token", "evil.example", token, ARGUMENT_VALUE] {
                assert!(!all.contains(secret), "{secret} logged: {all}");
            }
            break;
        }
        assert!(start.elapsed() < REPLY_TIMEOUT, "not logged: {lines:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn http_takes_localhost_and_explains_a_host_name() {
    let refused =
        crate::support::stdio::run(&airlock(), &["serve", "--http", "example.com:8080"], &[]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "ADDR is IP:PORT, such as 127.0.0.1:8080, [::1]:8080 or localhost:8080 (taken as \
             127.0.0.1); a host name is not resolved: bind an address, and add --allow-host \
             NAME to accept requests for that name"
        ),
        "{stderr}"
    );
    let sandbox = ServeTree::new("http-localhost");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let server = HttpServer::start(
        &airlock(),
        &[
            "serve",
            "--http",
            "localhost:0",
            "--manifest",
            manifest.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(server.addr.ip().to_string(), "127.0.0.1");
}

#[test]
fn serve_on_a_terminal_says_it_waits_for_json_rpc_on_stdin() {
    let sandbox = ServeTree::new("terminal");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let note = "airlock serve: waiting for MCP JSON-RPC messages on stdin, one per line.";
    // util-linux `script` gives airlock a terminal; with nothing to read, the session ends.
    let command = format!(
        "{} serve --manifest {}",
        airlock().display(),
        manifest.display()
    );
    let output = crate::support::stdio::spawn_command(Path::new("script"))
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `script` runs");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.contains(note), "{shown}");
    // Piped, as a client runs it: no note.
    let mut piped = Server::start(
        &airlock(),
        &["serve", "--manifest", manifest.to_str().unwrap()],
    );
    let stderr = piped.stderr();
    assert!(!stderr.contains(note), "{stderr}");
}

#[test]
fn an_unexpected_argument_is_named_so_the_agent_can_correct_its_call() {
    let sandbox = ServeTree::new("unexpected");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let mut server = Server::start(
        &airlock(),
        &["serve", "--manifest", manifest.to_str().unwrap()],
    );
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "echo", json!({ "word": "a", "wrod": "b" })));
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "Invalid arguments for tool `echo`: `arguments` has a property the tool does not \
         accept: `wrod` (it accepts `word`)."
    );
}

/// A call whose arguments the tool refuses when it runs (a path leaving its root: the schema
/// cannot know) is recorded as `invalid_arguments`, like a schema refusal, not as a command
/// that ran and failed: an operator counting failures must not read agent mistakes as broken
/// tools, nor the reverse.
#[test]
fn a_call_refused_by_its_path_check_is_recorded_as_invalid_arguments() {
    let sandbox = ServeTree::new("audit-path-refusal");
    let manifest = sandbox.manifest(
        r#"
[[tool]]
name = "show"
description = "Shows a file of root/"
command = ["cat", "--", "{path}"]
args.path = { type = "path", kind = "file", within = "root" }
"#,
    );
    let log = sandbox.dir.join("audit.jsonl");
    let mut server = Server::start_with(
        &airlock(),
        &[
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[],
    );
    server.initialize("2025-11-25");
    let refused = server.request(&call(1, "show", json!({ "path": "../outside.txt" })));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let served = server.request(&call(2, "show", json!({ "path": "hello.txt" })));
    assert_ne!(served["result"]["isError"], true, "{served}");
    let found = wait_for_records(&log, 2);
    let outcomes: Vec<&Value> = found.iter().map(|record| &record["outcome"]).collect();
    assert_eq!(
        outcomes,
        [&json!("invalid_arguments"), &json!("ok")],
        "{found:?}"
    );
    assert_eq!(found[0]["exit_code"], Value::Null, "{found:?}");
}

/// Issue 41: "one shape for audit records wherever they go". The record of one call is the
/// same JSON line on stderr (among text or JSON log lines) as in the `--audit-log` file: the
/// same keys in the same order, the same values but for the time and the duration, alone on
/// its line.
#[test]
fn a_record_on_stderr_is_the_files_json_line_whatever_the_log_format() {
    let sandbox = ServeTree::new("audit-shape");
    let manifest = sandbox.manifest(AUDIT_MANIFEST);
    let manifest = manifest.to_str().unwrap();
    let calls = [
        call(1, "echo", word("x")),
        call(2, "fail", word("x")),
        call(3, "nope", json!({})),
    ];
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--manifest", manifest];
        args.extend_from_slice(extra);
        let mut server = Server::start(&airlock(), &args);
        server.initialize("2025-11-25");
        for line in &calls {
            server.request(line);
        }
        server.stderr()
    };
    // The line as written (its keys in their order), the values that vary by time blanked.
    let shape = |line: &str| -> String {
        let _parsed: Value = serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("not one JSON object alone ({error}): {line}"));
        // The value after `key`, up to the `,` after it, becomes `_`.
        let blank = |line: &str, key: &str| -> String {
            let at = line.find(key).unwrap_or_else(|| panic!("no {key}: {line}")) + key.len();
            let stop = at + line[at..].find(',').unwrap();
            format!("{}_{}", &line[..at], &line[stop..])
        };
        blank(&blank(line, "\"time\":"), "\"duration_ms\":")
    };
    let log = sandbox.dir.join("audit.jsonl");
    let in_file_stderr = serve(&["--audit-log", log.to_str().unwrap()]);
    assert!(!in_file_stderr.contains("\"event\""), "{in_file_stderr}");
    assert_eq!(wait_for_records(&log, calls.len()).len(), calls.len());
    let raw_file = std::fs::read_to_string(&log).unwrap();
    let raw_file: Vec<String> = raw_file.lines().map(shape).collect();
    assert!(
        raw_file[0].starts_with("{\"time\":_,\"event\":\"tool_call\",\"client\":"),
        "{raw_file:?}"
    );
    for format in ["text", "json"] {
        let stderr = serve(&["--log-format", format]);
        let on_stderr: Vec<String> = stderr
            .lines()
            .filter(|line| line.contains("\"event\":\"tool_call\""))
            .map(|line| {
                assert!(line.starts_with("{\"time\":"), "alone on its line: {line}");
                shape(line)
            })
            .collect();
        assert_eq!(on_stderr, raw_file, "--log-format {format}: {stderr}");
    }
}
