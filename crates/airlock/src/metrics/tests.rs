//! The renderer, and the engine's counts as a scrape shows them.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::engine::Effect;
use crate::limits::Limits;
use crate::{Rate, Server, ToolOutput};

fn rendered(metrics: &Metrics) -> String {
    let mut out = Vec::new();
    metrics.render(&mut out);
    String::from_utf8(out).unwrap()
}

/// The value of the one sample line that starts with `series ` (name and labels).
fn value(text: &str, series: &str) -> f64 {
    let found: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .collect();
    assert_eq!(found.len(), 1, "{series} in\n{text}");
    found[0].parse().unwrap()
}

/// A server of `echo`, `fail` and `slow` (a call that waits), counting in `metrics`.
fn server(metrics: &Arc<Metrics>, limits: Limits) -> Server {
    let mut builder = Server::builder("t", "1")
        .limits(limits)
        .metrics(Arc::clone(metrics));
    for tool in crate::test_server::tools() {
        builder = builder.tool(tool);
    }
    builder
        .tool(crate::Tool::builder("slow").description("Waits").handler(
            |_: crate::NoArguments| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                ToolOutput::text("late")
            },
        ))
        .build()
        .unwrap()
}

/// A modern `tools/call` of `tool` (`echo`'s arguments for `echo` and unknown names).
fn call(id: u32, tool: &str) -> String {
    let arguments = if matches!(tool, "fail" | "slow") {
        "{}"
    } else {
        r#"{"text":"secret-argument"}"#
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

/// Sends `frame`; runs a call it starts to the end on `runtime`.
fn drive(engine: &mut crate::transport::Engine, runtime: &tokio::runtime::Runtime, frame: &str) {
    let mut out = Vec::new();
    if let Effect::Start(call) = engine.handle(frame.as_bytes(), &mut out) {
        let completion = runtime.block_on(call.run(crate::handler::CallContext::detached()));
        engine.complete(completion, &mut out);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn a_fresh_registry_renders_every_family_with_zero_counts() {
    let text = rendered(&Metrics::new());
    for family in [
        "mcp_server_operation_duration_seconds histogram",
        "airlock_tool_calls_total counter",
        "airlock_tool_call_duration_seconds histogram",
        "airlock_refusals_total counter",
        "airlock_calls_in_flight gauge",
        "airlock_sessions gauge",
        "mcp_server_session_duration_seconds histogram",
        "airlock_sandbox_denials_total counter",
        "airlock_build_info gauge",
    ] {
        assert!(text.contains(&format!("# TYPE {family}\n")), "{family}");
    }
    assert_eq!(value(&text, r#"airlock_refusals_total{kind="quota"}"#), 0.0);
    assert_eq!(
        value(
            &text,
            r#"airlock_tool_calls_total{tool="_OTHER",outcome="ok"}"#
        ),
        0.0
    );
    assert_eq!(value(&text, "airlock_calls_in_flight"), 0.0);
    // No launchers' reader: the family is left out rather than shown as zero.
    assert!(!text.contains("airlock_sandbox_launchers"));
    // Every sample line is `name{labels} value` or `name value`, and ends in a number.
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let (_, number) = line.rsplit_once(' ').unwrap();
        assert!(number.parse::<f64>().is_ok(), "{line}");
    }
}

#[test]
fn histograms_are_cumulative_with_their_sum_and_count() {
    let histogram = Histogram::new(&FINE_NANOS);
    for took in [
        Duration::from_micros(50),
        Duration::from_micros(100),
        Duration::from_millis(3),
        Duration::from_secs(400),
    ] {
        histogram.observe(took);
    }
    let mut text = String::new();
    histogram.render(&mut text, "h", "tool=\"x\"", &FINE_BUCKETS);
    assert_eq!(value(&text, r#"h_bucket{tool="x",le="0.0001"}"#), 2.0);
    assert_eq!(value(&text, r#"h_bucket{tool="x",le="0.001"}"#), 2.0);
    assert_eq!(value(&text, r#"h_bucket{tool="x",le="0.005"}"#), 3.0);
    assert_eq!(value(&text, r#"h_bucket{tool="x",le="300"}"#), 3.0);
    assert_eq!(value(&text, r#"h_bucket{tool="x",le="+Inf"}"#), 4.0);
    assert_eq!(value(&text, r#"h_count{tool="x"}"#), 4.0);
    let sum = value(&text, r#"h_sum{tool="x"}"#);
    assert!((sum - 400.003_15).abs() < 1e-9, "{sum}");
    let mut bare = String::new();
    histogram.render(&mut bare, "h", "", &FINE_BUCKETS);
    assert_eq!(value(&bare, r#"h_bucket{le="+Inf"}"#), 4.0);
    assert_eq!(value(&bare, "h_count"), 4.0);
}

/// A call of a tool the server does not have is counted under `_OTHER`: the name the agent
/// made up, and its arguments, appear nowhere in what a scrape reads.
#[test]
fn an_unknown_tool_is_counted_as_other_and_no_agent_text_is_rendered() {
    let metrics = Metrics::new();
    let server = server(&metrics, Limits::default());
    let runtime = runtime();
    let mut engine = server.engine();
    let made_up = r#"agent\" } evil{x=\"1\"}\n# TYPE"#;
    drive(&mut engine, &runtime, &call(1, made_up));
    drive(&mut engine, &runtime, &call(2, "made_up_tool"));
    let text = rendered(&metrics);
    assert_eq!(
        value(
            &text,
            r#"airlock_tool_calls_total{tool="_OTHER",outcome="refused"}"#
        ),
        2.0
    );
    for agent_text in ["made_up", "evil", "agent", "secret-argument"] {
        assert!(!text.contains(agent_text), "{agent_text} in\n{text}");
    }
    assert_eq!(
        value(
            &text,
            r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",error_type="-32602"}"#
        ),
        2.0
    );
    // Each line holds only the characters of names, label values of the closed sets, tool
    // names and numbers: nothing that could end a label early.
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        assert!(
            line.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_{}=\",.-+/ ".contains(c)),
            "{line}"
        );
    }
}

#[test]
fn calls_requests_and_refusals_are_counted_by_tool_outcome_and_kind() {
    let metrics = Metrics::new();
    let limits = Limits {
        tool_call_rate: Some(Rate {
            per_minute: std::num::NonZeroU32::new(1).unwrap(),
            burst: std::num::NonZeroU32::new(4).unwrap(),
        }),
        ..Limits::default()
    };
    let server = server(&metrics, limits);
    let runtime = runtime();
    let mut engine = server.engine();
    drive(&mut engine, &runtime, &call(1, "echo"));
    drive(&mut engine, &runtime, &call(2, "echo"));
    drive(&mut engine, &runtime, &call(3, "fail"));
    // The fourth call of the burst: `echo` with arguments its schema refuses.
    drive(
        &mut engine,
        &runtime,
        &call(4, "echo").replace(r#""text":"secret-argument""#, r#""text":7"#),
    );
    // Past the burst: refused by the quota.
    drive(&mut engine, &runtime, &call(5, "echo"));
    drive(
        &mut engine,
        &runtime,
        r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
    );
    let text = rendered(&metrics);
    let calls = |tool: &str, outcome: &str| {
        value(
            &text,
            &format!(r#"airlock_tool_calls_total{{tool="{tool}",outcome="{outcome}"}}"#),
        )
    };
    assert_eq!(calls("echo", "ok"), 2.0);
    assert_eq!(calls("fail", "error"), 1.0);
    assert_eq!(calls("echo", "invalid_arguments"), 1.0);
    assert_eq!(calls("echo", "refused"), 1.0);
    assert_eq!(calls("slow", "ok"), 0.0);
    assert_eq!(value(&text, r#"airlock_refusals_total{kind="quota"}"#), 1.0);
    assert_eq!(
        value(
            &text,
            r#"airlock_tool_call_duration_seconds_count{tool="echo"}"#
        ),
        2.0
    );
    let operations = |labels: &str| {
        value(
            &text,
            &format!("mcp_server_operation_duration_seconds_count{{{labels}}}"),
        )
    };
    assert_eq!(operations(r#"mcp_method_name="tools/call""#), 2.0);
    assert_eq!(
        operations(r#"mcp_method_name="tools/call",error_type="tool_error""#),
        2.0
    );
    assert_eq!(
        operations(r#"mcp_method_name="tools/call",error_type="-31429""#),
        1.0
    );
    assert_eq!(operations(r#"mcp_method_name="ping""#), 1.0);
    assert_eq!(value(&text, "airlock_calls_in_flight"), 0.0);
}

#[test]
fn a_call_in_flight_is_counted_until_it_ends_and_a_cancelled_one_as_cancelled() {
    let metrics = Metrics::new();
    let server = server(&metrics, Limits::default());
    let mut engine = server.engine();
    let mut out = Vec::new();
    let started = engine.handle(call(1, "slow").as_bytes(), &mut out);
    assert!(matches!(started, Effect::Start(_)));
    assert_eq!(value(&rendered(&metrics), "airlock_calls_in_flight"), 1.0);
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
    assert!(matches!(
        engine.handle(cancel.as_bytes(), &mut out),
        Effect::Cancel(_)
    ));
    let text = rendered(&metrics);
    assert_eq!(value(&text, "airlock_calls_in_flight"), 0.0);
    assert_eq!(
        value(
            &text,
            r#"airlock_tool_calls_total{tool="slow",outcome="cancelled"}"#
        ),
        1.0
    );
    drop(started);
}

#[test]
fn a_reloaded_tool_keeps_its_series_and_the_names_are_bounded() {
    let metrics = Metrics::new();
    let server = server(&metrics, Limits::default());
    let runtime = runtime();
    let mut engine = server.engine();
    drive(&mut engine, &runtime, &call(1, "echo"));
    server.replace_tools(crate::test_server::tools()).unwrap();
    drive(&mut engine, &runtime, &call(2, "echo"));
    let text = rendered(&metrics);
    assert_eq!(
        value(
            &text,
            r#"airlock_tool_calls_total{tool="echo",outcome="ok"}"#
        ),
        2.0
    );
    // Past the bound, new names share `_OTHER`.
    for index in 0..MAX_METRIC_TOOLS {
        drop(metrics.tool(&format!("t{index}")));
    }
    assert!(Arc::ptr_eq(&metrics.tool("late"), &metrics.other_tool));
}

#[test]
fn sessions_are_counted_while_open_and_launchers_read_at_render() {
    let metrics = Metrics::new();
    let open = metrics.session_started(Transport::Pipe);
    let text = rendered(&metrics);
    assert_eq!(
        value(&text, r#"airlock_sessions{network_transport="pipe"}"#),
        1.0
    );
    assert_eq!(
        value(&text, r#"airlock_sessions{network_transport="tcp"}"#),
        0.0
    );
    drop(open);
    metrics.launchers(|| Launchers { idle: 3, busy: 2 });
    let text = rendered(&metrics);
    assert_eq!(
        value(&text, r#"airlock_sessions{network_transport="pipe"}"#),
        0.0
    );
    assert_eq!(
        value(
            &text,
            r#"mcp_server_session_duration_seconds_count{network_transport="pipe"}"#
        ),
        1.0
    );
    assert_eq!(
        value(&text, r#"airlock_sandbox_launchers{state="idle"}"#),
        3.0
    );
    assert_eq!(
        value(&text, r#"airlock_sandbox_launchers{state="busy"}"#),
        2.0
    );
}

/// Requests of a batch read at once are observed when its replies are written, all with the
/// batch's duration, and not before.
#[test]
fn a_batchs_requests_are_observed_when_its_replies_are_written() {
    let metrics = Metrics::new();
    let server = server(&metrics, Limits::default());
    let mut engine = server.engine();
    let mut out = Vec::new();
    let ping = |id: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    for id in 1..=3 {
        engine.batch_received();
        assert!(matches!(
            engine.handle(ping(id).as_bytes(), &mut out),
            Effect::None
        ));
    }
    let pings = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="ping"}"#;
    assert!(!rendered(&metrics).contains(pings));
    engine.batch_written();
    assert_eq!(value(&rendered(&metrics), pings), 3.0);
    // Without a batch open, a request is observed at once.
    assert!(matches!(
        engine.handle(ping(4).as_bytes(), &mut out),
        Effect::None
    ));
    assert_eq!(value(&rendered(&metrics), pings), 4.0);
    engine.batch_written();
    assert_eq!(value(&rendered(&metrics), pings), 4.0);
}

/// Every method and every error type a batch defers is observed at its write: the batch
/// keeps them as bits, and `tasks/list` and `tasks/cancel` (the 17th and 18th methods) were
/// once past the bits of a `u16` and never counted.
#[test]
fn a_batch_observes_every_method_and_error_type_it_deferred() {
    let metrics = Metrics::new();
    let mut batch = Batch::new();
    batch.open();
    let errors = [ErrorType::None, ErrorType::ToolError, ErrorType::Other]
        .into_iter()
        .chain((0..ERROR_CODES.len()).map(ErrorType::Code));
    let errors: Vec<ErrorType> = errors.collect();
    for method in METHODS {
        for error in &errors {
            assert!(batch.defer(method, *error));
        }
    }
    batch.written(&metrics);
    for (row, method) in metrics.operations.iter().zip(METHODS) {
        for error in &errors {
            let counted = row
                .get(error.index())
                .map(|histogram| histogram.buckets.iter().chain([&histogram.over]))
                .map(|counts| {
                    counts
                        .map(|count| count.load(Ordering::Relaxed))
                        .sum::<u64>()
                });
            assert_eq!(counted, Some(1), "{} {error:?}", method.as_str());
        }
    }
}

/// A call answered in the batch its request came in is counted at the batch's write; one
/// that started in an earlier batch is counted when it ends, with its own duration.
#[test]
fn a_call_answered_in_its_batch_is_counted_at_the_write() {
    let metrics = Metrics::new();
    let server = server(&metrics, Limits::default());
    let runtime = runtime();
    let mut engine = server.engine();
    let ok = r#"airlock_tool_calls_total{tool="echo",outcome="ok"}"#;
    for id in 1..=2 {
        engine.batch_received();
        drive(&mut engine, &runtime, &call(id, "echo"));
    }
    assert_eq!(value(&rendered(&metrics), ok), 0.0);
    assert_eq!(value(&rendered(&metrics), "airlock_calls_in_flight"), 0.0);
    engine.batch_written();
    let text = rendered(&metrics);
    assert_eq!(value(&text, ok), 2.0);
    assert_eq!(
        value(
            &text,
            r#"airlock_tool_call_duration_seconds_count{tool="echo"}"#
        ),
        2.0
    );
    // Started in one batch, answered in the next: counted at once.
    engine.batch_received();
    let mut out = Vec::new();
    let Effect::Start(started) = engine.handle(call(3, "echo").as_bytes(), &mut out) else {
        panic!("a call starts");
    };
    engine.batch_written();
    engine.batch_received();
    let completion = runtime.block_on(started.run(crate::handler::CallContext::detached()));
    engine.complete(completion, &mut out);
    assert_eq!(value(&rendered(&metrics), ok), 3.0);
    engine.batch_written();
    assert_eq!(value(&rendered(&metrics), ok), 3.0);
}

#[test]
fn sandbox_denials_are_counted_by_kind_and_never_by_what_was_refused() {
    use crate::{DenialKind, DenialNote, DenialSource, DenialsNote};
    let metrics = Metrics::new();
    let secret_path = "/home/u/.cache/agent-text";
    let note = DenialsNote::new(
        vec![
            DenialNote::new(
                DenialKind::Exec,
                "/usr/bin/id".to_owned(),
                "exec = [\"/usr/bin/id\"]".to_owned(),
                DenialSource::Landlock,
            ),
            DenialNote::new(
                DenialKind::Write,
                secret_path.to_owned(),
                "write = [\"/home/u/.cache\"]".to_owned(),
                DenialSource::Landlock,
            ),
            DenialNote::new(
                DenialKind::Exec,
                "/usr/bin/ls".to_owned(),
                "exec = [\"/usr/bin/ls\"]".to_owned(),
                DenialSource::Landlock,
            ),
            // The proxy's refusals are counted from the network note, as `proxy`.
            DenialNote::new(
                DenialKind::Connect,
                "example.org:443".to_owned(),
                "network = [\"example.org:443\"]".to_owned(),
                DenialSource::Proxy,
            ),
        ],
        0,
    );
    metrics.sandbox_denied(&note);
    let text = rendered(&metrics);
    assert_eq!(
        value(&text, r#"airlock_sandbox_denials_total{kind="exec"}"#),
        2.0
    );
    assert_eq!(
        value(&text, r#"airlock_sandbox_denials_total{kind="write"}"#),
        1.0
    );
    assert_eq!(
        value(&text, r#"airlock_sandbox_denials_total{kind="connect"}"#),
        0.0
    );
    assert_eq!(
        value(&text, r#"airlock_sandbox_denials_total{kind="proxy"}"#),
        0.0
    );
    for kind in DenialKind::ALL {
        let series = format!("airlock_sandbox_denials_total{{kind=\"{}\"}}", kind.label());
        assert!(text.contains(&series), "{series}");
    }
    assert!(
        !text.contains("agent-text") && !text.contains("/usr/bin"),
        "{text}"
    );
}
