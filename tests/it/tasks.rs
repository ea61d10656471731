//! Tasks of `airlock serve` over real pipes and over HTTP, in both eras (MCP 2025-11-25 and
//! the 2026-07-28 extension), from our own request lines and from rmcp's clients (the
//! `tools/task-client` `tests/clients/setup.sh` builds): a command that outlives its request
//! is created, polled (its output so far), waited for and read, over HTTP from another
//! connection than the one that created it; cancel and the end of input kill its sandbox; the bounds refuse with the typed error; a call asking a task of a server
//! or tool that offers none is answered as the revision says; over HTTP a task is its token
//! identity's, read from a later session on new connections, and another identity gets what
//! an id never issued gets.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::fixtures::Scratch;
use crate::support::http::{self, HttpServer};
use crate::support::processes::{eventually, runs_a_descendant, signal};
use crate::support::stdio::{
    Server, airlock, call, code, modern_meta, modern_meta_with_tasks, request,
};
use crate::support::task_client;

/// `nap` sleeps as long as it is asked, as a task when the client asks; `quick` never runs
/// as a task; `build` only as one.
const MANIFEST: &str = r#"
[server]
name = "tasks"
version = "1.0.0"

[[tool]]
name = "nap"
description = "Sleeps"
command = ["sleep", "{seconds}"]
task = "optional"
task_timeout_ms = 60000
args.seconds = { type = "integer", minimum = 1, maximum = 60 }

[[tool]]
name = "quick"
description = "Says hello"
command = ["echo", "hello"]

[[tool]]
name = "build"
description = "Tasks only"
command = ["echo", "built"]
task = "always"
"#;

/// A server of `manifest` on stdio whose audit records go to `log`, handshake done.
fn serve(scratch: &Scratch, manifest: &str, log: &Path) -> Server {
    let manifest = scratch.manifest(manifest);
    let mut server = Server::start_with(
        &airlock(),
        &[
            "serve",
            "--manifest",
            &manifest,
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[],
    );
    let init = server.initialize("2025-11-25");
    assert!(
        init["result"]["capabilities"]["tasks"].is_object(),
        "{init}"
    );
    server
}

/// Creates a task of `nap` for `seconds`; returns its id.
fn nap(server: &mut Server, id: i64, seconds: u64) -> String {
    let created = server.request(&request(
        id,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": seconds}, "task": {"ttl": 60_000}}),
    ));
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn get(server: &mut Server, id: i64, task: &str) -> Value {
    server.request(&request(id, "tasks/get", json!({ "taskId": task })))
}

/// The audit records written so far.
fn records(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_task_outlives_its_request_and_is_polled_waited_for_and_recorded() {
    let scratch = Scratch::new("tasks-run");
    let log = scratch.join("audit.jsonl");
    let mut server = serve(&scratch, MANIFEST, &log);
    let list = server.request(&request(1, "tools/list", json!({})));
    let support: Vec<&Value> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["execution"]["taskSupport"])
        .collect();
    assert_eq!(
        support,
        [&json!("optional"), &Value::Null, &json!("required")]
    );
    let started = Instant::now();
    let task = nap(&mut server, 2, 3);
    // The handle came back at once: the command runs on.
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(eventually(Duration::from_secs(5), || runs_a_descendant(
        server.pid(),
        "sleep"
    )));
    let polled = get(&mut server, 3, &task);
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    assert_eq!(polled["result"]["pollInterval"], 1000);
    // Other requests are served meanwhile.
    let quick = server.request(&call(4, "quick", json!({})));
    assert_eq!(quick["result"]["content"][0]["text"], "hello\n", "{quick}");
    // tasks/result waits for the end, then answers what the call would have.
    let result = server.request(&request(5, "tasks/result", json!({ "taskId": task })));
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert_eq!(result["id"], 5);
    assert_ne!(result["result"]["isError"], true, "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str()
    );
    let done = get(&mut server, 6, &task);
    assert_eq!(done["result"]["status"], "completed");
    let listed = server.request(&request(7, "tasks/list", json!({})));
    assert_eq!(listed["result"]["tasks"][0]["taskId"], task.as_str());
    let cancel = server.request(&request(8, "tasks/cancel", json!({ "taskId": task })));
    assert_eq!(code(&cancel), -32602);
    server.close_stdin();
    assert!(server.wait(Duration::from_secs(10)).success());
    let records = records(&log);
    let record = records
        .iter()
        .find(|record| record["task"]["id"] == task.as_str())
        .expect("the task's record");
    assert_eq!(record["tool"], "nap");
    assert_eq!(record["outcome"], "ok");
    assert_eq!(record["exit_code"], 0);
    let states: Vec<&Value> = record["task"]["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|state| &state["status"])
        .collect();
    assert_eq!(states, [&json!("working"), &json!("completed")]);
    // The ordinary call's record has no task.
    assert!(
        records
            .iter()
            .any(|record| record["tool"] == "quick" && record["task"].is_null())
    );
}

/// A tool that prints a step and a secret each second.
const STEPS: &str = r#"
[server]
name = "steps"
version = "1.0.0"

[[tool]]
name = "steps"
description = "Prints steps"
command = ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo step $i; echo $IT_TASK_SECRET; sleep 1; done"]
exec = ["/usr/bin/sleep"]
secret_env = ["IT_TASK_SECRET"]
task = "always"
"#;

const SECRET: &str = "hunter2-task-secret-value-123";

#[test]
fn the_output_so_far_is_read_while_the_task_runs_redacted() {
    let scratch = Scratch::new("tasks-output");
    let manifest = scratch.manifest(STEPS);
    let mut server = Server::start_with(
        &airlock(),
        &["serve", "--manifest", &manifest],
        &[("IT_TASK_SECRET", SECRET)],
    );
    server.initialize("2025-11-25");
    let created = server.request(&request(
        1,
        "tools/call",
        json!({"name": "steps", "arguments": {}, "task": {}}),
    ));
    let task = created["result"]["task"]["taskId"].clone();
    assert!(task.is_string(), "{created}");
    let mut id = 2;
    let mut seen = String::new();
    let started = Instant::now();
    while !seen.contains("step 2") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no output: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
        let polled = server.request(&request(id, "tasks/get", json!({ "taskId": task })));
        id += 1;
        assert_eq!(polled["result"]["status"], "working", "{polled}");
        seen = polled["result"]["_meta"]["airlock/output"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    assert!(seen.starts_with("step 1\n"), "{seen:?}");
    assert!(seen.contains("[REDACTED]"), "{seen:?}");
    assert!(
        !seen.contains(SECRET) && !seen.contains("hunter2"),
        "{seen:?}"
    );
    let cancelled = server.request(&request(id, "tasks/cancel", json!({ "taskId": task })));
    assert_eq!(cancelled["result"]["status"], "cancelled");
    // Once ended, the output so far is gone: the result is what is kept.
    let got = server.request(&request(id + 1, "tasks/get", json!({ "taskId": task })));
    assert!(got["result"].get("_meta").is_none(), "{got}");
}

#[test]
fn cancel_kills_the_run_and_leaves_no_process() {
    let scratch = Scratch::new("tasks-cancel");
    let log = scratch.join("audit.jsonl");
    let mut server = serve(&scratch, MANIFEST, &log);
    let task = nap(&mut server, 1, 60);
    assert!(eventually(Duration::from_secs(5), || runs_a_descendant(
        server.pid(),
        "sleep"
    )));
    let cancelled = server.request(&request(2, "tasks/cancel", json!({ "taskId": task })));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(
        eventually(Duration::from_secs(5), || !runs_a_descendant(
            server.pid(),
            "sleep"
        )),
        "the command outlived its cancelled task"
    );
    // tasks/result answers at once, with the cancelled form.
    let result = server.request(&request(3, "tasks/result", json!({ "taskId": task })));
    assert_eq!(result["result"]["isError"], true, "{result}");
    let again = server.request(&request(4, "tasks/cancel", json!({ "taskId": task })));
    assert_eq!(code(&again), -32602);
    server.close_stdin();
    server.wait(Duration::from_secs(10));
    let record = records(&log)
        .into_iter()
        .find(|record| record["task"]["id"] == task.as_str())
        .expect("the task's record");
    assert_eq!(record["outcome"], "cancelled");
}

#[test]
fn a_task_past_its_task_timeout_fails_and_leaves_no_process() {
    let scratch = Scratch::new("tasks-timeout");
    let log = scratch.join("audit.jsonl");
    let manifest = MANIFEST.replace("task_timeout_ms = 60000", "task_timeout_ms = 1000");
    let mut server = serve(&scratch, &manifest, &log);
    let task = nap(&mut server, 1, 30);
    let created = Instant::now();
    let result = server.request(&request(2, "tasks/result", json!({ "taskId": task })));
    assert!(created.elapsed() < Duration::from_secs(10));
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("time limit of 1000 ms"),
        "{result}"
    );
    let got = get(&mut server, 3, &task);
    assert_eq!(got["result"]["status"], "failed");
    assert!(eventually(Duration::from_secs(5), || !runs_a_descendant(
        server.pid(),
        "sleep"
    )));
    server.close_stdin();
    server.wait(Duration::from_secs(10));
    let record = records(&log)
        .into_iter()
        .find(|record| record["task"]["id"] == task.as_str())
        .expect("the task's record");
    assert_eq!(record["outcome"], "timeout");
    assert_eq!(record["limit"], "timeout");
}

#[test]
fn the_end_of_input_ends_running_tasks_with_a_record() {
    let scratch = Scratch::new("tasks-eof");
    let log = scratch.join("audit.jsonl");
    let mut server = serve(&scratch, MANIFEST, &log);
    let task = nap(&mut server, 1, 60);
    assert!(eventually(Duration::from_secs(5), || runs_a_descendant(
        server.pid(),
        "sleep"
    )));
    // A tasks/result waits on it: the end of input answers it with the cancelled result at
    // once, rather than holding the exit for the calls' drain (10 s).
    server.send(&request(2, "tasks/result", json!({ "taskId": task })));
    let started = Instant::now();
    server.close_stdin();
    let answered = server.recv();
    assert_eq!(answered["id"], 2);
    assert_eq!(answered["result"]["isError"], true, "{answered}");
    assert!(server.wait(Duration::from_secs(15)).success());
    assert!(started.elapsed() < Duration::from_secs(5));
    let record = records(&log)
        .into_iter()
        .find(|record| record["task"]["id"] == task.as_str())
        .expect("the task's record");
    assert_eq!(record["outcome"], "cancelled");
    let states = record["task"]["states"].as_array().unwrap();
    assert_eq!(states.last().unwrap()["status"], "cancelled");
}

#[test]
fn sigterm_ends_running_tasks_with_a_record() {
    let scratch = Scratch::new("tasks-term");
    let log = scratch.join("audit.jsonl");
    let mut server = serve(&scratch, MANIFEST, &log);
    let task = nap(&mut server, 1, 60);
    assert!(eventually(Duration::from_secs(5), || runs_a_descendant(
        server.pid(),
        "sleep"
    )));
    signal(server.pid(), "TERM");
    server.wait(Duration::from_secs(15));
    let record = records(&log)
        .into_iter()
        .find(|record| record["task"]["id"] == task.as_str())
        .expect("the task's record");
    assert_eq!(record["outcome"], "cancelled");
}

#[test]
fn a_fifth_running_task_is_refused_with_the_bound_and_unknown_ids_are_not_found() {
    let scratch = Scratch::new("tasks-bounds");
    let log = scratch.join("audit.jsonl");
    let mut server = serve(&scratch, MANIFEST, &log);
    for id in 1..=4 {
        nap(&mut server, id, 60);
    }
    let refused = server.request(&request(
        5,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 60}, "task": {}}),
    ));
    assert_eq!(code(&refused), -31503, "{refused}");
    assert_eq!(refused["error"]["message"], "Too many tasks; retry later.");
    assert_eq!(
        refused["error"]["data"],
        json!({"limit": "max_tasks_running_per_client", "value": 4})
    );
    // Ordinary calls are a pool of their own: still served.
    let quick = server.request(&call(6, "quick", json!({})));
    assert_eq!(quick["result"]["content"][0]["text"], "hello\n");
    let unknown = get(&mut server, 7, &"0".repeat(64));
    let malformed = get(&mut server, 8, "../../etc/passwd");
    assert_eq!(code(&unknown), -32602);
    assert_eq!(unknown["error"], malformed["error"]);
    assert_eq!(
        unknown["error"]["message"],
        "Invalid params: no task has this id."
    );
}

#[test]
fn a_task_asked_of_a_tool_or_server_without_tasks_is_answered_as_the_revision_says() {
    let scratch = Scratch::new("tasks-modes");
    let log = scratch.join("audit.jsonl");
    let mut server = serve(&scratch, MANIFEST, &log);
    // The server offers tasks: a tool that forbids them is refused (SHOULD -32601), and one
    // that requires a task is refused without one (MUST -32601).
    let forbidden = server.request(&request(
        1,
        "tools/call",
        json!({"name": "quick", "arguments": {}, "task": {}}),
    ));
    assert_eq!(code(&forbidden), -32601);
    let plain = server.request(&call(2, "build", json!({})));
    assert_eq!(code(&plain), -32601);
    // An optional tool called without a task is an ordinary call.
    let ordinary = server.request(&call(3, "nap", json!({"seconds": 1})));
    assert_ne!(ordinary["result"]["isError"], true, "{ordinary}");
    assert!(ordinary["result"].get("task").is_none());

    // A server with no task tool declares none, and runs an augmented call normally (MUST).
    let plain_manifest = r#"
[server]
name = "plain"
version = "1.0.0"

[[tool]]
name = "quick"
description = "Says hello"
command = ["echo", "hello"]
"#;
    let scratch = Scratch::new("tasks-none");
    let manifest = scratch.manifest(plain_manifest);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &manifest], &[]);
    let init = server.initialize("2025-11-25");
    assert!(
        init["result"]["capabilities"].get("tasks").is_none(),
        "{init}"
    );
    let ran = server.request(&request(
        1,
        "tools/call",
        json!({"name": "quick", "arguments": {}, "task": {"ttl": 1000}}),
    ));
    assert_eq!(ran["result"]["content"][0]["text"], "hello\n", "{ran}");
    let get = server.request(&request(2, "tasks/get", json!({"taskId": "0".repeat(64)})));
    assert_eq!(code(&get), -32601);
}

/// The JSON-RPC answer of an HTTP reply: its JSON body, or the last message of its events.
fn answer(reply: &http::Reply) -> Value {
    if reply
        .header("content-type")
        .is_some_and(|kind| kind.starts_with("text/event-stream"))
    {
        reply.events().pop().expect("an event")
    } else {
        reply.json()
    }
}

/// A request of the legacy `session` with `token`, on a connection of its own.
fn over_http(
    server: &HttpServer,
    session: &str,
    token: &str,
    id: i64,
    method: &str,
    params: Value,
) -> Value {
    let bearer = format!("Bearer {token}");
    let mut headers = http::session_headers(session);
    headers.push(("Authorization", &bearer));
    let reply = http::post(server.addr, &headers, &request(id, method, params));
    assert_eq!(reply.status, 200, "{reply:?}");
    answer(&reply)
}

const TOKEN_A: &str = "task-owner-a-token-0123456789";
const TOKEN_B: &str = "task-owner-b-token-0123456789";

/// `airlock serve --http` of [`MANIFEST`] with two token identities.
fn http_server(scratch: &Scratch) -> HttpServer {
    let manifest = scratch.manifest(MANIFEST);
    HttpServer::airlock(
        &[
            "--manifest",
            &manifest,
            "--auth-token-env",
            "IT_TASKS_A",
            "--auth-token-env",
            "IT_TASKS_B",
        ],
        &[("IT_TASKS_A", TOKEN_A), ("IT_TASKS_B", TOKEN_B)],
    )
}

fn open(server: &HttpServer, token: &str) -> String {
    http::initialize_with(
        server.addr,
        &[("Authorization", &format!("Bearer {token}"))],
    )
}

#[test]
fn over_http_a_task_is_read_from_another_session_of_its_identity_and_from_no_other() {
    let scratch = Scratch::new("tasks-http");
    let server = http_server(&scratch);
    let first = open(&server, TOKEN_A);
    let created = over_http(
        &server,
        &first,
        TOKEN_A,
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 3}, "task": {}}),
    );
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The creating session ends; the task is the identity's and runs on.
    let bearer = format!("Bearer {TOKEN_A}");
    let mut headers = http::session_headers(&first);
    headers.push(("Authorization", &bearer));
    let deleted = http::exchange(
        server.addr,
        format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {first}\r\nMCP-Protocol-Version: 2025-11-25\r\nAuthorization: {bearer}\r\nConnection: close\r\n\r\n",
            server.addr
        )
        .as_bytes(),
    );
    assert!(deleted.status < 300, "{deleted:?}");
    // Another identity gets, for every method, exactly what an id never issued gets.
    let other = open(&server, TOKEN_B);
    let never = "0".repeat(64);
    for (id, method) in [(2, "tasks/get"), (3, "tasks/result"), (4, "tasks/cancel")] {
        let foreign = over_http(
            &server,
            &other,
            TOKEN_B,
            id,
            method,
            json!({ "taskId": task }),
        );
        let unknown = over_http(
            &server,
            &other,
            TOKEN_B,
            id,
            method,
            json!({ "taskId": never }),
        );
        assert_eq!(foreign, unknown, "{method}");
        assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    }
    let listed = over_http(&server, &other, TOKEN_B, 5, "tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"], json!([]));
    // A new session of the same identity, on new connections, polls and waits for it.
    let second = open(&server, TOKEN_A);
    let polled = over_http(
        &server,
        &second,
        TOKEN_A,
        6,
        "tasks/get",
        json!({ "taskId": task }),
    );
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    let result = over_http(
        &server,
        &second,
        TOKEN_A,
        7,
        "tasks/result",
        json!({ "taskId": task }),
    );
    assert_ne!(result["result"]["isError"], true, "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str()
    );
    let done = over_http(
        &server,
        &second,
        TOKEN_A,
        8,
        "tasks/get",
        json!({ "taskId": task }),
    );
    assert_eq!(done["result"]["status"], "completed");
}

#[test]
fn over_http_cancel_leaves_no_process_and_another_identity_cannot_cancel() {
    let scratch = Scratch::new("tasks-http-cancel");
    let server = http_server(&scratch);
    let mine = open(&server, TOKEN_A);
    let created = over_http(
        &server,
        &mine,
        TOKEN_A,
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 60}, "task": {}}),
    );
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(eventually(Duration::from_secs(5), || runs_a_descendant(
        server.pid(),
        "sleep"
    )));
    let other = open(&server, TOKEN_B);
    let refused = over_http(
        &server,
        &other,
        TOKEN_B,
        2,
        "tasks/cancel",
        json!({ "taskId": task }),
    );
    assert_eq!(refused["error"]["code"], -32602);
    assert!(runs_a_descendant(server.pid(), "sleep"));
    let cancelled = over_http(
        &server,
        &mine,
        TOKEN_A,
        3,
        "tasks/cancel",
        json!({ "taskId": task }),
    );
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(
        eventually(Duration::from_secs(5), || !runs_a_descendant(
            server.pid(),
            "sleep"
        )),
        "the command outlived its cancelled task"
    );
}

/// `params` of a 2026-07-28 request, declaring the tasks extension when `declared`.
fn modern(mut params: Value, declared: bool) -> Value {
    params["_meta"] = if declared {
        modern_meta_with_tasks()
    } else {
        modern_meta()
    };
    params
}

/// A server of `manifest` on stdio, no handshake (2026-07-28 requests need none).
fn serve_modern(scratch: &Scratch, manifest: &str, log: &Path) -> Server {
    let manifest = scratch.manifest(manifest);
    Server::start_with(
        &airlock(),
        &[
            "serve",
            "--manifest",
            &manifest,
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[],
    )
}

/// Polls a 2026-07-28 task until it is no longer `working`; returns that `tasks/get` reply
/// and the statuses seen.
fn poll_modern(server: &mut Server, task: &str) -> (Value, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let mut id = 100;
    loop {
        assert!(Instant::now() < deadline, "the task never ended: {seen:?}");
        id += 1;
        let got = server.request(&request(
            id,
            "tasks/get",
            modern(json!({ "taskId": task }), true),
        ));
        let status = got["result"]["status"]
            .as_str()
            .unwrap_or_else(|| panic!("{got}"))
            .to_owned();
        seen.push(status.clone());
        if status != "working" {
            return (got, seen);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn the_2026_extension_over_stdio_creates_polls_and_inlines_the_result() {
    let scratch = Scratch::new("tasks-2026");
    let log = scratch.join("audit.jsonl");
    let mut server = serve_modern(&scratch, MANIFEST, &log);
    let found = server.request(&request(1, "server/discover", modern(json!({}), true)));
    assert_eq!(
        found["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{found}"
    );
    // The server decides: a run past the inline wait (1 s) is answered with its handle.
    let created = server.request(&request(
        2,
        "tools/call",
        modern(json!({"name": "nap", "arguments": {"seconds": 3}}), true),
    ));
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert_eq!(created["pollIntervalMs"], 1000);
    let task = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(task.len(), 64);
    // A client that did not declare the extension: an optional tool is an ordinary call,
    // one that runs only as a task is -32021 naming the extension.
    let plain = server.request(&request(
        3,
        "tools/call",
        modern(json!({"name": "build", "arguments": {}}), false),
    ));
    assert_eq!(code(&plain), -32021);
    assert_eq!(
        plain["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    let refused = server.request(&request(
        4,
        "tasks/get",
        modern(json!({ "taskId": task }), false),
    ));
    assert_eq!(code(&refused), -32021);
    let (done, seen) = poll_modern(&mut server, &task);
    assert_eq!(seen.first().map(String::as_str), Some("working"));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["resultType"], "complete");
    assert!(done["result"]["result"]["content"].is_array(), "{done}");
    assert_ne!(done["result"]["result"]["isError"], true);
    // Cancel of an ended task is acknowledged and changes nothing.
    let ack = server.request(&request(
        5,
        "tasks/cancel",
        modern(json!({ "taskId": task }), true),
    ));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let (again, _) = poll_modern(&mut server, &task);
    assert_eq!(again["result"]["status"], "completed");
    // An unknown id is -32602, whatever the method.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let unknown = server.request(&request(
            6,
            method,
            modern(json!({ "taskId": "0".repeat(64) }), true),
        ));
        assert_eq!(code(&unknown), -32602, "{method}");
    }
    server.close_stdin();
    assert!(server.wait(Duration::from_secs(10)).success());
    let record = records(&log)
        .into_iter()
        .find(|record| record["task"]["id"] == task.as_str())
        .expect("the task's record");
    assert_eq!(record["outcome"], "ok");
    assert_eq!(record["task"]["states"][1]["status"], "completed");
}

#[test]
fn a_2026_cancel_kills_the_run_and_leaves_no_process() {
    let scratch = Scratch::new("tasks-2026-cancel");
    let log = scratch.join("audit.jsonl");
    let mut server = serve_modern(&scratch, MANIFEST, &log);
    let created = server.request(&request(
        1,
        "tools/call",
        modern(json!({"name": "nap", "arguments": {"seconds": 60}}), true),
    ));
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert!(runs_a_descendant(server.pid(), "sleep"));
    let ack = server.request(&request(
        2,
        "tasks/cancel",
        modern(json!({ "taskId": task }), true),
    ));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let (got, _) = poll_modern(&mut server, &task);
    assert_eq!(got["result"]["status"], "cancelled");
    assert!(
        eventually(Duration::from_secs(5), || !runs_a_descendant(
            server.pid(),
            "sleep"
        )),
        "the command outlived its cancelled task"
    );
}

/// A 2026-07-28 request over HTTP with `token`, the extension declared; `name` replaces the
/// `Mcp-Name` the body implies when given.
fn modern_over_http(
    server: &HttpServer,
    token: &str,
    id: i64,
    method: &str,
    params: Value,
    name: Option<&str>,
) -> http::Reply {
    let bearer = format!("Bearer {token}");
    let mut extra = vec![("Authorization", bearer.as_str())];
    if let Some(name) = name {
        extra.push(("Mcp-Name", name));
    }
    http::modern(server.addr, id, method, modern(params, true), &extra)
}

#[test]
fn over_http_a_2026_task_is_its_identitys_and_mcp_name_must_be_its_id() {
    let scratch = Scratch::new("tasks-2026-http");
    let server = http_server(&scratch);
    let created = modern_over_http(
        &server,
        TOKEN_A,
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 3}}),
        None,
    );
    let created = answer(&created);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    // Every request is a connection of its own: the task is the token's, not a session's.
    let get = |token: &str, id: i64| {
        answer(&modern_over_http(
            &server,
            token,
            id,
            "tasks/get",
            json!({ "taskId": task }),
            None,
        ))
    };
    assert_eq!(get(TOKEN_A, 2)["result"]["status"], "working");
    let foreign = get(TOKEN_B, 3);
    let unknown = answer(&modern_over_http(
        &server,
        TOKEN_B,
        3,
        "tasks/get",
        json!({ "taskId": "0".repeat(64) }),
        None,
    ));
    assert_eq!(foreign, unknown);
    assert_eq!(foreign["error"]["code"], -32602);
    let cancel = answer(&modern_over_http(
        &server,
        TOKEN_B,
        4,
        "tasks/cancel",
        json!({ "taskId": task }),
        None,
    ));
    assert_eq!(cancel["error"]["code"], -32602);
    // Mcp-Name must be the task's id.
    let mismatched = modern_over_http(
        &server,
        TOKEN_A,
        5,
        "tasks/get",
        json!({ "taskId": task }),
        Some("another"),
    );
    assert_eq!(mismatched.status, 400, "{mismatched:?}");
    assert_eq!(mismatched.json()["error"]["code"], -32020);
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let got = get(TOKEN_A, 6);
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(Instant::now() < deadline, "never ended: {got}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert!(done["result"]["result"]["content"].is_array());
}

/// The rmcp clients' tools: `steps` prints a step a second for 5 s (lines long enough that
/// the output so far shows over HTTP, where the tokens are secrets and the last 64 bytes are
/// withheld as a cut), `nap` sleeps.
const FIVE_STEPS: &str = r#"
[server]
name = "steps"
version = "1.0.0"

[[tool]]
name = "steps"
description = "Prints a step a second"
command = ["sh", "-c", "for i in 1 2 3 4 5; do echo step $i of 5: compiling, testing, linking; sleep 1; done"]
exec = ["/usr/bin/sleep"]
task = "optional"

[[tool]]
name = "nap"
description = "Sleeps"
command = ["sleep", "{seconds}"]
task = "optional"
args.seconds = { type = "integer", minimum = 1, maximum = 60 }
"#;

/// What an rmcp client's run of `steps` must show: created, polled `working` with the output
/// so far (a step, not yet the last), and the final result with every step.
fn ran_five_steps(events: &[Value]) {
    assert_eq!(events[0]["event"], "created", "{events:?}");
    assert_eq!(events[0]["task"]["status"], "working");
    let polls: Vec<&Value> = events
        .iter()
        .filter(|event| event["event"] == "poll" && event["status"] == "working")
        .collect();
    assert!(
        polls.iter().any(|poll| {
            let output = poll["output"].as_str().unwrap_or_default();
            output.contains("step 1") && !output.contains("step 5")
        }),
        "no poll read the output so far: {polls:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["event"], "result", "{events:?}");
    assert_eq!(last["status"], "completed");
    let all: String = (1..=5)
        .map(|step| format!("step {step} of 5: compiling, testing, linking\n"))
        .collect();
    assert_eq!(last["result"]["content"][0]["text"], all.as_str());
}

#[test]
fn rmcp_clients_of_both_eras_run_a_five_second_task_over_stdio() {
    let Some(client) = task_client::path() else {
        return;
    };
    let scratch = Scratch::new("tasks-rmcp-stdio");
    let manifest = scratch.manifest(FIVE_STEPS);
    let airlock = airlock();
    for era in ["2026", "2025"] {
        let log = scratch.join(&format!("audit-{era}.jsonl"));
        let mut run = task_client::start(
            &client,
            &[
                era,
                "run",
                "steps",
                "{}",
                "--",
                airlock.to_str().unwrap(),
                "serve",
                "--manifest",
                &manifest,
                "--audit-log",
                log.to_str().unwrap(),
            ],
            &[],
        );
        let events = task_client::events_until(&mut run, &["result", "error", "complete"]);
        ran_five_steps(&events);
        let last = events.last().unwrap();
        let task = events[0]["task"]["taskId"].as_str().unwrap();
        if era == "2025" {
            // tasks/result names its task, as 2025-11-25 requires.
            assert_eq!(
                last["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
                task
            );
        } else {
            assert_eq!(events[0]["task"]["resultType"], "task");
        }
        let record = records(&log)
            .into_iter()
            .find(|record| record["task"]["id"] == task)
            .unwrap_or_else(|| panic!("{era}: the task's record"));
        assert_eq!(record["outcome"], "ok");
    }
}

#[test]
fn rmcp_clients_over_http_reconnect_cancel_and_are_kept_apart() {
    let Some(client) = task_client::path() else {
        return;
    };
    let scratch = Scratch::new("tasks-rmcp-http");
    let manifest = scratch.manifest(FIVE_STEPS);
    let server = HttpServer::airlock(
        &[
            "--manifest",
            &manifest,
            "--auth-token-env",
            "IT_TASKS_A",
            "--auth-token-env",
            "IT_TASKS_B",
        ],
        &[("IT_TASKS_A", TOKEN_A), ("IT_TASKS_B", TOKEN_B)],
    );
    let url = format!("http://{}/mcp", server.addr);
    let as_a = [("TASK_CLIENT_TOKEN", TOKEN_A)];
    let as_b = [("TASK_CLIENT_TOKEN", TOKEN_B)];
    let once = |args: &[&str], env: &[(&str, &str)], last: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--url", url.as_str()]);
        let mut run = task_client::start(&client, &all, env);
        task_client::events_until(&mut run, last)
    };
    for era in ["2026", "2025"] {
        // Created by one process, which exits; read to its end by another (a new connection,
        // and in 2025-11-25 a new session of the same token).
        let created = once(
            &[era, "create", "steps", "{}"],
            &as_a,
            &["created", "error"],
        );
        assert_eq!(created[0]["event"], "created", "{era}: {created:?}");
        let task = created[0]["task"]["taskId"].as_str().unwrap().to_owned();
        // Another identity cannot see, poll or cancel it: the answer of an id never issued.
        let unknown = "0".repeat(64);
        for command in ["get", "cancel"] {
            let foreign = once(&[era, command, &task], &as_b, &["poll", "cancel", "error"]);
            let never = once(
                &[era, command, &unknown],
                &as_b,
                &["poll", "cancel", "error"],
            );
            assert_eq!(foreign, never, "{era} {command}");
            assert_eq!(foreign[0]["event"], "error", "{era} {command}: {foreign:?}");
            assert_eq!(foreign[0]["code"], -32602);
        }
        let mut events = created;
        events.extend(once(&[era, "poll", &task], &as_a, &["result", "error"]));
        ran_five_steps(&events);
        // Cancel leaves no process of the run.
        let long = once(
            &[era, "create", "nap", r#"{"seconds": 60}"#],
            &as_a,
            &["created", "error"],
        );
        let long = long[0]["task"]["taskId"].as_str().unwrap().to_owned();
        assert!(eventually(Duration::from_secs(5), || runs_a_descendant(
            server.pid(),
            "sleep"
        )));
        let cancelled = once(&[era, "cancel", &long], &as_a, &["cancel", "error"]);
        assert_eq!(cancelled[0]["event"], "cancel", "{era}: {cancelled:?}");
        assert!(
            eventually(Duration::from_secs(5), || !runs_a_descendant(
                server.pid(),
                "sleep"
            )),
            "{era}: the command outlived its cancelled task"
        );
        let got = once(&[era, "get", &long], &as_a, &["poll", "error"]);
        assert_eq!(got[0]["status"], "cancelled", "{era}: {got:?}");
    }
}
