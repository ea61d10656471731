//! `airlock serve --otlp URL`: OpenTelemetry traces received by an OTLP/HTTP receiver the test
//! starts on loopback (`tests/clients/otlp_receiver.py`), which decodes every export with the
//! official protobuf definitions (PyPI's `opentelemetry-proto`, installed into the clients'
//! virtualenv by `tests/clients/setup.sh`). Without that virtualenv or package the tests fail
//! loudly: they never pass without a receiver.
//!
//! What must hold: a request's span is named and described by the MCP semantic conventions,
//! in the trace the client put in `params._meta`, under the client's span; a command's run is
//! a child span with its exit, and the command sees `TRACEPARENT` naming that child; a
//! malformed `traceparent` is a fresh trace and no error; over HTTP the W3C headers are the
//! parent when `_meta` names none, a link when it does; no span carries an argument value or
//! the output; `[server] otlp` in the manifest does what the flag does; a task's run is a
//! child span of the request that created it, ended when the run ends.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fixtures::Scratch;
use crate::support::http::{HttpServer, exchange, post_bytes};
use crate::support::processes::eventually;
use crate::support::stdio::{Server, airlock, modern_meta, request, spawn_command, text};

/// The trace and span the client says it is in.
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN: &str = "b7ad6b7169203331";

/// `trace_env` prints the trace context its command was given; `say` echoes a word (an
/// argument value no span may carry).
const MANIFEST: &str = r#"
[server]
name = "traced"
version = "2.0.0"

[[tool]]
name = "trace_env"
description = "Prints the trace context it was given"
command = ["printenv"]

[[tool]]
name = "say"
description = "Says a word"
command = ["echo", "{word}"]
args.word = { type = "string", max_length = 64 }

[[tool]]
name = "trace_task"
description = "Prints the trace context it was given, as a task"
command = ["printenv"]
task = "always"
"#;

/// The receiver: a Python process printing one JSON line per span it decoded.
struct Receiver {
    child: Child,
    /// Held open: the receiver exits when it closes.
    _stdin: ChildStdin,
    port: u16,
    lines: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let python = root.join("tests/clients/.env/python/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `bash tests/clients/setup.sh` (it installs opentelemetry-proto, \
             which the OTLP receiver decodes spans with)",
            python.display()
        );
        let mut child = spawn_command(&python)
            .arg(root.join("tests/clients/otlp_receiver.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the receiver starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let thread_lines = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).expect("a JSON line");
                if let Some(port) = value["listening"].as_u64() {
                    let _sent = port_tx.send(port);
                    continue;
                }
                thread_lines.lock().unwrap().push(value);
            }
        });
        let port = port_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!(
                    "the OTLP receiver did not start: is opentelemetry-proto installed? run \
                 `bash tests/clients/setup.sh`"
                )
            });
        Self {
            child,
            _stdin: stdin,
            port: u16::try_from(port).unwrap(),
            lines,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits until a span matches `wanted`; fails on a receiver error.
    fn span(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let mut found = None;
        let seen = eventually(Duration::from_secs(20), || {
            let lines = self.lines.lock().unwrap();
            if let Some(error) = lines.iter().find(|line| line.get("error").is_some()) {
                panic!("the receiver refused an export: {error}");
            }
            found = lines.iter().find(|line| wanted(line)).cloned();
            found.is_some()
        });
        assert!(
            seen,
            "no span {what} among {:#?}",
            self.lines.lock().unwrap()
        );
        found.unwrap()
    }

    fn all(&self) -> Vec<Value> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// `airlock serve` of [`MANIFEST`] on stdio exporting to `receiver`, handshake done.
fn serve(scratch: &Scratch, receiver: &Receiver) -> Server {
    let manifest = scratch.manifest(MANIFEST);
    let mut server = Server::start_with(
        &airlock(),
        &["serve", "--manifest", &manifest, "--otlp", &receiver.url()],
        &[],
    );
    let init = server.initialize("2025-11-25");
    assert!(init["result"].is_object(), "{init}");
    server
}

/// A `tools/call` of `tool` with `arguments` and `_meta`.
fn call(id: i64, tool: &str, arguments: Value, meta: Value) -> String {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments, "_meta": meta}),
    )
}

/// The value of `NAME=value` in `printenv`'s output.
fn variable<'a>(output: &'a str, name: &str) -> Option<&'a str> {
    output
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
}

fn attribute<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[test]
fn a_call_is_a_span_in_the_clients_trace_with_its_command_as_a_child() {
    let receiver = Receiver::start();
    let scratch = Scratch::new("otel-stdio");
    let mut server = serve(&scratch, &receiver);
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let reply = server.request(&call(
        2,
        "trace_env",
        json!({}),
        json!({"traceparent": traceparent, "tracestate": "vendor=opaque"}),
    ));
    let output = text(&reply);
    assert!(reply["result"]["isError"].is_null(), "{reply}");

    let request_span = receiver.span("tools/call trace_env", |span| {
        span["name"] == "tools/call trace_env"
    });
    assert_eq!(request_span["kind"], "SPAN_KIND_SERVER");
    assert_eq!(request_span["trace_id"], TRACE, "the client's trace");
    assert_eq!(
        request_span["parent_span_id"], CLIENT_SPAN,
        "the client's span"
    );
    assert_eq!(request_span["trace_state"], "vendor=opaque");
    for (key, value) in [
        ("mcp.method.name", json!("tools/call")),
        ("gen_ai.tool.name", json!("trace_env")),
        ("gen_ai.operation.name", json!("execute_tool")),
        ("jsonrpc.request.id", json!("2")),
        ("mcp.protocol.version", json!("2025-11-25")),
        ("network.transport", json!("pipe")),
    ] {
        assert_eq!(
            attribute(&request_span, key),
            &value,
            "{key}: {request_span}"
        );
    }
    assert!(attribute(&request_span, "error.type").is_null());
    assert_eq!(request_span["status"], "STATUS_CODE_UNSET");
    assert_eq!(request_span["resource"]["service.name"], "traced");
    assert_eq!(request_span["resource"]["service.version"], "2.0.0");
    assert_eq!(request_span["scope"], "airlock");
    assert_eq!(request_span["scope_version"], env!("CARGO_PKG_VERSION"));
    // Sampled (0x1), and its parent known to be remote (0x100 | 0x200).
    assert_eq!(request_span["flags"], 0x301, "{request_span}");

    let command_span = receiver.span("exec trace_env", |span| span["name"] == "exec trace_env");
    assert_eq!(command_span["kind"], "SPAN_KIND_INTERNAL");
    assert_eq!(command_span["trace_id"], TRACE);
    assert_eq!(
        command_span["parent_span_id"], request_span["span_id"],
        "the command's span is a child of the request's"
    );
    assert_eq!(attribute(&command_span, "process.exit.code"), 0);
    assert_eq!(
        command_span["flags"], 0x101,
        "a local parent: {command_span}"
    );
    // The command saw its own span, in the client's trace, and the client's vendor list.
    let seen = variable(&output, "TRACEPARENT").expect("TRACEPARENT is set");
    assert_eq!(
        seen,
        format!(
            "00-{TRACE}-{}-01",
            command_span["span_id"].as_str().unwrap()
        )
    );
    assert_eq!(variable(&output, "TRACESTATE"), Some("vendor=opaque"));
}

#[test]
fn a_tasks_run_is_a_child_span_of_the_request_that_created_it() {
    let receiver = Receiver::start();
    let scratch = Scratch::new("otel-task");
    let mut server = serve(&scratch, &receiver);
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let created = server.request(&request(
        2,
        "tools/call",
        json!({"name": "trace_task", "arguments": {}, "task": {},
               "_meta": {"traceparent": traceparent}}),
    ));
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let result = server.request(&request(3, "tasks/result", json!({"taskId": task})));
    let output = text(&result);
    let request_span = receiver.span("tools/call trace_task", |span| {
        span["name"] == "tools/call trace_task"
    });
    assert_eq!(request_span["trace_id"], TRACE, "the client's trace");
    assert_eq!(request_span["parent_span_id"], CLIENT_SPAN);
    let run_span = receiver.span("exec trace_task", |span| span["name"] == "exec trace_task");
    assert_eq!(run_span["kind"], "SPAN_KIND_INTERNAL");
    assert_eq!(run_span["trace_id"], TRACE);
    assert_eq!(
        run_span["parent_span_id"], request_span["span_id"],
        "the run's span is a child of the creating request's"
    );
    assert_eq!(attribute(&run_span, "process.exit.code"), 0);
    assert!(
        run_span["end"].as_u64() >= request_span["end"].as_u64(),
        "the run ends after the request was answered: {run_span} {request_span}"
    );
    let seen = variable(&output, "TRACEPARENT").expect("TRACEPARENT is set");
    assert_eq!(
        seen,
        format!("00-{TRACE}-{}-01", run_span["span_id"].as_str().unwrap())
    );
}

#[test]
fn a_malformed_traceparent_is_a_fresh_trace_and_no_error() {
    let receiver = Receiver::start();
    let scratch = Scratch::new("otel-malformed");
    let mut server = serve(&scratch, &receiver);
    let malformed = format!("00-{}-{CLIENT_SPAN}-01", TRACE.to_uppercase());
    let reply = server.request(&call(
        3,
        "trace_env",
        json!({}),
        json!({"traceparent": malformed, "tracestate": "vendor=opaque"}),
    ));
    assert!(reply["result"]["isError"].is_null(), "no error: {reply}");
    let output = text(&reply);
    let span = receiver.span("tools/call trace_env", |span| {
        span["name"] == "tools/call trace_env"
    });
    let fresh = span["trace_id"].as_str().unwrap();
    assert_ne!(fresh.to_uppercase(), TRACE.to_uppercase());
    assert_eq!(fresh.len(), 32);
    assert_eq!(span["parent_span_id"], "", "no parent");
    assert_eq!(
        span["trace_state"], "",
        "nothing of the malformed context kept"
    );
    assert!(attribute(&span, "error.type").is_null());
    let seen = variable(&output, "TRACEPARENT").expect("TRACEPARENT is set");
    assert!(seen.starts_with(&format!("00-{fresh}-")), "{seen}");
    assert_eq!(variable(&output, "TRACESTATE"), None);
    // Never echoed: not in the reply, not in any span.
    let everything = format!("{reply}{:?}", receiver.all());
    assert!(!everything.contains(&malformed), "{everything}");
}

#[test]
fn no_span_carries_an_argument_value_or_the_output() {
    let receiver = Receiver::start();
    let scratch = Scratch::new("otel-content");
    let mut server = serve(&scratch, &receiver);
    let reply = server.request(&call(
        4,
        "say",
        json!({"word": "secret-word-4711"}),
        json!({}),
    ));
    assert!(text(&reply).contains("secret-word-4711"), "{reply}");
    // An unknown tool is plain `tools/call`, its name (the agent's text) nowhere.
    let unknown = server.request(&call(5, "made-up-by-agent", json!({}), json!({})));
    assert_eq!(unknown["error"]["code"], -32_602, "{unknown}");
    receiver.span("exec say", |span| span["name"] == "exec say");
    let refused = receiver.span("tools/call", |span| span["name"] == "tools/call");
    assert_eq!(attribute(&refused, "error.type"), "-32602");
    assert_eq!(attribute(&refused, "rpc.response.status_code"), "-32602");
    assert_eq!(refused["status"], "STATUS_CODE_UNSET", "a caller's mistake");
    let everything = format!("{:?}", receiver.all());
    assert!(!everything.contains("secret-word"), "{everything}");
    assert!(!everything.contains("made-up-by-agent"), "{everything}");
}

#[test]
fn over_http_the_w3c_header_is_the_parent_or_else_a_link() {
    let receiver = Receiver::start();
    let scratch = Scratch::new("otel-http");
    let manifest = scratch.manifest(MANIFEST);
    let server = HttpServer::airlock(&["--manifest", &manifest, "--otlp", &receiver.url()], &[]);
    let header_trace = "11111111111111111111111111111111";
    let header_span = "2222222222222222";
    let header = format!("00-{header_trace}-{header_span}-01");
    let post = |id: i64, meta: Value| {
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta}
        });
        let headers = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
            ("traceparent", header.as_str()),
        ];
        let reply = exchange(
            server.addr,
            &post_bytes(server.addr, &headers, &body.to_string()),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
    };
    // No `_meta` context: the header's is the parent.
    post(10, modern_meta());
    let parented = receiver.span("tools/list under the header", |span| {
        span["name"] == "tools/list" && span["trace_id"] == header_trace
    });
    assert_eq!(parented["parent_span_id"], header_span);
    assert_eq!(attribute(&parented, "network.transport"), "tcp");
    assert_eq!(attribute(&parented, "mcp.protocol.version"), "2026-07-28");
    assert_eq!(parented["links"], json!([]));
    // Both: `_meta`'s is the parent, the header's a link.
    let mut meta = modern_meta();
    meta["traceparent"] = json!(format!("00-{TRACE}-{CLIENT_SPAN}-01"));
    post(11, meta);
    let linked = receiver.span("tools/list under _meta", |span| {
        span["name"] == "tools/list" && span["trace_id"] == TRACE
    });
    assert_eq!(linked["parent_span_id"], CLIENT_SPAN);
    assert_eq!(
        linked["links"],
        json!([{"trace_id": header_trace, "span_id": header_span}])
    );
    assert_eq!(attribute(&linked, "jsonrpc.request.id"), "11");
}

#[test]
fn the_manifests_server_otlp_exports_without_the_flag() {
    let receiver = Receiver::start();
    let scratch = Scratch::new("otel-manifest");
    let manifest = MANIFEST.replace(
        "version = \"2.0.0\"",
        &format!("version = \"2.0.0\"\notlp = \"{}\"", receiver.url()),
    );
    let manifest = scratch.manifest(&manifest);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &manifest], &[]);
    server.initialize("2025-11-25");
    let reply = server.request(&request(7, "tools/list", json!({})));
    assert!(reply["result"]["tools"].is_array(), "{reply}");
    let span = receiver.span("tools/list", |span| span["name"] == "tools/list");
    assert_eq!(attribute(&span, "jsonrpc.request.id"), "7");
    assert_eq!(span["resource"]["service.name"], "traced");
}

#[test]
fn an_https_endpoint_is_refused_at_start_with_the_collector_advice() {
    let scratch = Scratch::new("otel-https");
    let manifest = scratch.manifest(MANIFEST);
    let mut server = Server::start_with(
        &airlock(),
        &[
            "serve",
            "--manifest",
            &manifest,
            "--otlp",
            "https://127.0.0.1:4318",
        ],
        &[],
    );
    let status = server.wait(Duration::from_secs(10));
    assert!(!status.success());
    let stderr = server.stderr();
    assert!(
        stderr.contains("--otlp: the OTLP endpoint must be http://")
            && stderr.contains("Collector on loopback"),
        "{stderr}"
    );
}
