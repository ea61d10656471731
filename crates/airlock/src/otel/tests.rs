//! Spans as the engine records them and as the exporter sends them: names and attributes by
//! the MCP conventions, the peer's trace context read strictly, a command's span under its
//! request's, nothing of the arguments or the output.

use std::sync::Arc;

use super::export::{Kind, Value};
use super::*;
use crate::engine::Effect;
use crate::{CallContext, RunNote, Server, ToolOutput};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// A server of the test tools and `traced` (a command-like tool that answers the
/// `traceparent` its run was given and reports an exit), traced into `traces`.
fn server(traces: &Arc<Traces>) -> Server {
    let mut builder = Server::builder("t", "1").traces(Arc::clone(traces));
    for tool in crate::test_server::tools() {
        builder = builder.tool(tool);
    }
    for prompt in crate::test_server::prompts() {
        builder = builder.prompt(prompt);
    }
    builder
        .tool(
            crate::Tool::builder("traced")
                .description("Tells its trace context")
                .handler(|_: crate::NoArguments, context: CallContext| async move {
                    let parent = context
                        .trace_parent()
                        .map_or_else(|| "none".to_owned(), TraceParent::traceparent);
                    ToolOutput::text(parent).noting(RunNote::exited(3))
                }),
        )
        .build()
        .unwrap()
}

/// A legacy-free (2026-07-28) `tools/call` of `tool` with `meta` added to its `_meta`.
fn call(id: u32, tool: &str, meta: &str) -> String {
    let arguments = if tool == "traced" {
        "{}"
    } else {
        r#"{"text":"secret-argument"}"#
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}{meta}}}}}}}"#
    )
}

/// Sends `frame`, runs a call it starts to its end, and returns the reply.
fn drive(engine: &mut crate::transport::Engine, frame: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut out = Vec::new();
    if let Effect::Start(call) = engine.handle(frame.as_bytes(), &mut out) {
        let completion = runtime.block_on(call.run(CallContext::detached()));
        engine.complete(completion, &mut out);
    }
    String::from_utf8(out).unwrap()
}

/// A span as the exporter sends it, in plain values.
#[derive(Debug)]
struct Sent {
    name: String,
    kind: Kind,
    attributes: Vec<(&'static str, String)>,
    /// The ERROR status's message; `None`: UNSET.
    error: Option<String>,
    trace_id: u128,
    span_id: u64,
    parent: Option<u64>,
    remote_parent: bool,
    tracestate: String,
    start: std::time::SystemTime,
    end: Option<std::time::SystemTime>,
}

fn sent_of(record: &SpanRecord) -> Sent {
    let shape = export::shape(record);
    let more = record.more.as_deref();
    let parent = more.and_then(|more| more.parent);
    Sent {
        name: match shape.name {
            (name, None) => name.to_owned(),
            (name, Some(target)) => format!("{name} {target}"),
        },
        kind: shape.kind,
        attributes: shape
            .attributes
            .iter()
            .map(|(key, value)| {
                let shown = match value {
                    Value::Text(text) => text.to_owned(),
                    Value::Int(number) => number.to_string(),
                    Value::Code(code) => code.to_string(),
                    Value::Id(id) => export::request_id(id),
                };
                (key, shown)
            })
            .collect(),
        error: shape.error.map(String::from),
        trace_id: record.trace_id,
        span_id: record.span_id,
        parent,
        remote_parent: parent.is_some() && shape.remote_parent,
        tracestate: more
            .and_then(|more| more.tracestate.as_deref())
            .unwrap_or_default()
            .to_owned(),
        start: record.start,
        end: record.end,
    }
}

/// Every span sent so far, as the exporter would send it; each also goes through the
/// protobuf writer, which must not carry the argument either.
fn sent(spans: &Queue) -> Vec<Sent> {
    let records: Vec<SpanRecord> = spans.try_iter().flatten().collect();
    let exporter = export::exporter(
        client::Client::new(
            client::Endpoint::parse("http://127.0.0.1:9").unwrap(),
            Vec::new(),
        ),
        "t",
        "1",
    );
    let mut body = Vec::new();
    exporter.request(&records, &mut body);
    assert!(
        !body
            .windows(b"secret-argument".len())
            .any(|window| window == b"secret-argument")
    );
    records.iter().map(sent_of).collect()
}

fn attribute(span: &Sent, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, value)| value.clone())
}

#[test]
fn a_call_is_a_server_span_named_by_its_tool_under_the_peers_parent() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    let meta = format!(r#","traceparent":"00-{TRACE}-{PARENT}-01","tracestate":"a=1""#);
    let reply = drive(&mut engine, &call(7, "echo", &meta));
    assert!(reply.contains("secret-argument"), "{reply}");
    let sent = sent(&spans);
    assert_eq!(sent.len(), 1, "{sent:?}");
    let span = &sent[0];
    assert_eq!(span.name, "tools/call echo");
    assert_eq!(span.kind, Kind::Server);
    assert_eq!(format!("{:032x}", span.trace_id), TRACE, "the peer's trace");
    assert_eq!(format!("{:016x}", span.parent.unwrap()), PARENT);
    assert!(span.remote_parent);
    assert_eq!(span.tracestate, "a=1");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "7"),
        ("mcp.protocol.version", "2026-07-28"),
        ("network.transport", "pipe"),
    ] {
        assert_eq!(attribute(span, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(attribute(span, "error.type"), None);
    assert_eq!(span.error, None);
    assert!(span.end.unwrap() >= span.start);
    let everything = format!("{span:?}");
    assert!(!everything.contains("secret-argument"), "{everything}");
}

#[test]
fn a_malformed_traceparent_starts_a_fresh_trace_and_is_not_an_error() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    let meta = r#","traceparent":"00-NOT-A-TRACE\u000a-01","tracestate":"x=1""#;
    let reply = drive(&mut engine, &call(1, "echo", meta));
    assert!(reply.contains(r#""result""#), "{reply}");
    let sent = sent(&spans);
    assert_eq!(sent.len(), 1);
    let span = &sent[0];
    assert_ne!(span.trace_id, 0);
    assert_eq!(span.parent, None);
    assert!(!span.remote_parent);
    // Nothing of the peer's context is echoed, not even its well-formed tracestate.
    assert_eq!(span.tracestate, "");
    assert!(!format!("{span:?}").contains("NOT-A-TRACE"));
}

#[test]
fn a_commands_span_is_a_child_of_its_request_and_the_run_is_told_it() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    let meta = format!(r#","traceparent":"00-{TRACE}-{PARENT}-00""#);
    let reply = drive(&mut engine, &call(2, "traced", &meta));
    let sent = sent(&spans);
    assert_eq!(sent.len(), 2, "{sent:?}");
    let (command, request) = (&sent[0], &sent[1]);
    assert_eq!(request.name, "tools/call traced");
    assert_eq!(command.name, "exec traced");
    assert_eq!(command.kind, Kind::Internal);
    assert_eq!(command.parent, Some(request.span_id));
    assert!(!command.remote_parent);
    assert_eq!(command.trace_id, request.trace_id);
    assert_eq!(
        attribute(command, "process.exit.code").as_deref(),
        Some("3")
    );
    assert!(command.error.is_some());
    // The run saw its own span, in the peer's trace, sampled whatever the peer's flag said.
    let told = format!("00-{TRACE}-{:016x}-01", command.span_id);
    assert!(reply.contains(&told), "{reply} lacks {told}");
}

#[test]
fn an_unknown_tool_is_plain_tools_call_with_its_error_code_and_no_error_status() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    drive(&mut engine, &call(3, "no-such-tool", ""));
    let sent = sent(&spans);
    let span = &sent[0];
    assert_eq!(span.name, "tools/call");
    assert_eq!(attribute(span, "gen_ai.tool.name"), None);
    assert_eq!(attribute(span, "error.type").as_deref(), Some("-32602"));
    assert_eq!(
        attribute(span, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    assert_eq!(span.error, None, "a caller's mistake");
    assert!(!format!("{span:?}").contains("no-such-tool"));
}

#[test]
fn a_tools_error_result_is_tool_error_with_an_error_status() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    drive(
        &mut engine,
        &call(4, "fail", "").replace("secret-argument", "x"),
    );
    let span = &sent(&spans)[0];
    assert_eq!(span.name, "tools/call fail");
    assert_eq!(attribute(span, "error.type").as_deref(), Some("tool_error"));
    assert!(span.error.is_some());
}

#[test]
fn a_string_id_is_cut_and_its_control_characters_escaped() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    let id = format!("line\\nbreak{}", "x".repeat(118));
    drive(
        &mut engine,
        &format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping"}}"#),
    );
    let span = &sent(&spans)[0];
    assert_eq!(span.name, "ping");
    let shown = attribute(span, "jsonrpc.request.id").unwrap();
    assert!(shown.starts_with("line\\nbreakxx"), "{shown}");
    assert_eq!(shown.len(), crate::limits::MAX_SPAN_REQUEST_ID_BYTES);
    // Line and paragraph separators and a bidirectional override: escaped too.
    drive(
        &mut engine,
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u2028b\\u2029c\\u202ed\",\"method\":\"ping\"}",
    );
    let spans = sent(&spans);
    let shown = attribute(&spans[spans.len() - 1], "jsonrpc.request.id").unwrap();
    assert_eq!(shown, r"a\u{2028}b\u{2029}c\u{202e}d");
}

#[test]
fn the_ratio_traces_its_share_of_requests_whatever_the_peer_asks() {
    let (traces, spans) = Traces::for_tests(0.25);
    let server = server(&traces);
    let mut engine = server.engine();
    // The peer's flag says sampled on every request: the ratio decides.
    let meta = format!(r#","traceparent":"00-{TRACE}-{PARENT}-01""#);
    for id in 0..100 {
        drive(&mut engine, &call(id, "echo", &meta));
    }
    assert_eq!(sent(&spans).len(), 25);
}

#[test]
fn spans_of_a_batch_are_handed_over_when_its_replies_are_written() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    engine.batch_received();
    for id in 0..3 {
        drive(
            &mut engine,
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
        );
    }
    assert_eq!(spans.try_iter().count(), 0, "nothing before the write");
    engine.batch_written();
    let batches: Vec<Vec<SpanRecord>> = spans.try_iter().collect();
    assert_eq!(batches.len(), 1, "one send for the batch");
    let sent: Vec<Sent> = batches.iter().flatten().map(sent_of).collect();
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|span| span.start == sent[0].start));
    assert!(
        sent.iter()
            .all(|span| span.end == sent[0].end && span.end.is_some())
    );
}

#[test]
fn ids_are_never_zero_and_never_repeat() {
    let (traces, _spans) = Traces::for_tests(1.0);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..10 {
        let mut ids = traces.ids();
        for _ in 0..1_000 {
            assert!(seen.insert(ids.span_id()));
        }
        assert_ne!(ids.trace_id(), ids.trace_id());
    }
    assert!(!seen.contains(&0));
}

#[test]
fn a_ratio_outside_zero_to_one_is_refused() {
    for ratio in [0.0, -1.0, 1.5, f64::NAN] {
        assert!(matches!(
            Traces::to_otlp("http://127.0.0.1:4318", "t", "1", ratio),
            Err(OtlpError::Ratio)
        ));
    }
    assert!(matches!(
        Traces::to_otlp("https://127.0.0.1:4318", "t", "1", 1.0),
        Err(OtlpError::Endpoint(EndpointError::NotHttp))
    ));
}

#[test]
fn a_prompt_the_server_has_names_its_span_and_initialize_its_revision() {
    let (traces, spans) = Traces::for_tests(1.0);
    let server = server(&traces);
    let mut engine = server.engine();
    drive(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    drive(
        &mut engine,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    drive(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Ada"}}}"#,
    );
    drive(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"made-up","arguments":{}}}"#,
    );
    let sent = sent(&spans);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[0].name, "initialize");
    assert_eq!(
        attribute(&sent[0], "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );
    assert_eq!(sent[1].name, "prompts/get greet");
    assert_eq!(
        attribute(&sent[1], "gen_ai.prompt.name").as_deref(),
        Some("greet")
    );
    assert_eq!(
        attribute(&sent[1], "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );
    assert_eq!(sent[2].name, "prompts/get");
    assert_eq!(attribute(&sent[2], "gen_ai.prompt.name"), None);
    assert!(!format!("{sent:?}").contains("made-up") && !format!("{sent:?}").contains("Ada"));
}

#[test]
fn the_queue_holds_at_most_its_bound_and_drops_the_rest() {
    let (traces, spans) = Traces::for_tests(1.0);
    let record = |n: u64| SpanRecord {
        trace_id: 1,
        span_id: n,
        start: std::time::SystemTime::UNIX_EPOCH,
        end: None,
        id: IdKey::Integer(1),
        method: RequestMethod::Ping,
        transport: Transport::Pipe,
        version: None,
        failure: None,
        tool: None,
        command: 0,
        more: None,
    };
    let mut batch: Vec<SpanRecord> = (0..60_000).map(record).collect();
    traces.send(&mut batch);
    assert!(batch.is_empty(), "moved into the queue");
    let mut more: Vec<SpanRecord> = (0..10_000).map(record).collect();
    traces.send(&mut more);
    assert!(more.is_empty(), "dropped");
    assert_eq!(traces.dropped.load(Ordering::Relaxed), 10_000);
    // Until the export thread takes the queue, a sampled request builds no record: it would
    // be dropped. It is counted as dropped when its engine hands over.
    {
        let server = server(&traces);
        let mut engine = server.engine();
        drive(&mut engine, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    }
    assert_eq!(traces.dropped.load(Ordering::Relaxed), 10_001);
    let queued: usize = spans.try_iter().map(|batch| batch.len()).sum();
    assert_eq!(queued, 60_000);
    assert!(queued <= crate::limits::MAX_SPANS_QUEUED);
}
