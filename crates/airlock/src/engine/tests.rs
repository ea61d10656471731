//! The engine driven in memory: frames in, reply lines out.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::limits::Limits;
use crate::output::ToolError;
use crate::response::ServerInfo;
use crate::tools::{NoArguments, Registry, Tool};

/// The crate's test server with a tool that panics (`boom`) and `extra` fillers.
fn server_with(limits: Limits, extra: usize) -> Arc<Shared> {
    let mut tools =
        vec![
            Tool::builder("boom")
                .description("Panics")
                .handler(|_: NoArguments| async {
                    let empty: Vec<u8> = Vec::new();
                    let _x = empty[1];
                    ToolOutput::text("unreachable")
                }),
        ];
    for i in 0..extra {
        tools.push(
            Tool::builder(format!("extra_{i:03}"))
                .description("Filler")
                .handler(|_: NoArguments| async { ToolOutput::text("") }),
        );
    }
    crate::test_server::shared(limits, tools).unwrap()
}

fn engine() -> Engine {
    Engine::new(server_with(Limits::default(), 0))
}

/// Sends one frame; returns the reply (if any) and the effect.
fn send(engine: &mut Engine, frame: &str) -> (Option<Value>, Effect) {
    let mut out = Vec::new();
    let effect = engine.handle(frame.as_bytes(), &mut out);
    (reply(&out), effect)
}

fn reply(out: &[u8]) -> Option<Value> {
    if out.is_empty() {
        return None;
    }
    let text = std::str::from_utf8(out).unwrap();
    assert!(
        text.ends_with('\n') && text.matches('\n').count() == 1,
        "one line: {text}"
    );
    Some(serde_json::from_str(text).unwrap())
}

fn ask(engine: &mut Engine, frame: &str) -> Value {
    send(engine, frame).0.expect("a reply")
}

fn initialize(engine: &mut Engine, version: &str) -> Value {
    let reply = ask(
        engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        ),
    );
    assert!(
        send(
            engine,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        )
        .0
        .is_none()
    );
    reply
}

/// Runs a started call to completion and returns its reply.
fn finish(engine: &mut Engine, effect: Effect) -> Option<Value> {
    let Effect::Start(call) = effect else {
        panic!("expected a call, got {effect:?}")
    };
    let completion = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(call.run(crate::handler::CallContext::detached()));
    let mut out = Vec::new();
    engine.complete(completion, &mut out);
    reply(&out)
}

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

#[test]
fn each_legacy_version_is_echoed_and_an_unknown_one_countered() {
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let reply = initialize(&mut engine(), version);
        assert_eq!(reply["result"]["protocolVersion"], version);
        assert_eq!(
            reply["result"]["capabilities"],
            json!({"logging": {}, "tools": {"listChanged": false}})
        );
        assert_eq!(reply["result"]["serverInfo"]["name"], "test");
        assert_eq!(reply["result"]["instructions"], "Be nice.");
        let titled = version >= "2025-06-18";
        assert_eq!(
            reply["result"]["serverInfo"].get("title").is_some(),
            titled,
            "{version}"
        );
    }
    let reply = initialize(&mut engine(), "1999-01-01");
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn operations_before_initialize_are_refused_and_ping_is_not() {
    let mut engine = engine();
    let reply = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(reply["error"]["code"], -32602);
    assert_eq!(reply["id"], 1);
    let reply = ask(&mut engine, r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#);
    assert_eq!(reply, json!({"jsonrpc":"2.0","id":"p","result":{}}));
    initialize(&mut engine, "2025-11-25");
    let again = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
    );
    assert_eq!(again["error"]["code"], -32600);
}

#[test]
fn modern_requests_are_stateless_and_carry_result_type_and_server_info() {
    let mut engine = engine();
    let reply = ask(
        &mut engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{MODERN_META}}}}}"#
        ),
    );
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test"
    );
    assert!(result["ttlMs"].is_u64() && result["cacheScope"] == "public");

    let reply = ask(
        &mut engine,
        &format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{MODERN_META}}}}}"#),
    );
    assert_eq!(reply["result"]["tools"].as_array().unwrap().len(), 3);
    assert_eq!(reply["result"]["resultType"], "complete");
    assert!(reply["result"]["ttlMs"].is_u64());

    // Legacy state is untouched: a legacy request still needs initialize.
    let legacy = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
    );
    assert_eq!(legacy["error"]["code"], -32602);

    for (method, code) in [("ping", -32601), ("initialize", -32601)] {
        let reply = ask(
            &mut engine,
            &format!(
                r#"{{"jsonrpc":"2.0","id":4,"method":"{method}","params":{{{MODERN_META}}}}}"#
            ),
        );
        assert_eq!(reply["error"]["code"], code, "{method}");
    }
    let future = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    );
    assert_eq!(future["error"]["code"], -32022);
    assert_eq!(
        future["error"]["data"],
        json!({"supported":["2026-07-28"],"requested":"2099-01-01"})
    );
    let missing = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
    );
    assert_eq!(missing["error"]["code"], -32602);
    let legacy_discover = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":7,"method":"server/discover"}"#,
    );
    assert_eq!(legacy_discover["error"]["code"], -32601);
}

#[test]
fn tools_list_pages_through_every_tool_with_opaque_cursors() {
    let limits = Limits {
        tools_page_size: std::num::NonZeroUsize::new(4).unwrap(),
        ..Limits::default()
    };
    let mut engine = Engine::new(server_with(limits, 7));
    initialize(&mut engine, "2025-06-18");
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => format!(r#","params":{{"cursor":"{c}"}}"#),
            None => String::new(),
        };
        let reply = ask(
            &mut engine,
            &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list"{params}}}"#),
        );
        pages += 1;
        for tool in reply["result"]["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_owned());
            assert!(tool["inputSchema"]["type"] == "object");
            assert!(tool["description"].is_string());
        }
        match reply["result"].get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
            None => break,
        }
    }
    assert_eq!((pages, names.len()), (3, 10));
    let bad = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"bogus"}}"#,
    );
    assert_eq!(bad["error"]["code"], -32602);
}

#[test]
fn a_good_call_runs_and_answers_once() {
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let (reply, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"echo","arguments":{"text":"ab","times":2}}}"#,
    );
    assert!(reply.is_none());
    assert_eq!(engine.in_flight(), 1);
    let reply = finish(&mut engine, effect).unwrap();
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"abab"}]}})
    );
    assert_eq!(engine.in_flight(), 0);
}

#[test]
fn schema_violations_are_tool_errors_that_never_echo_the_value() {
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let reply = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","times":"SECRET-9"}}}"#,
    );
    let result = &reply["result"];
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "Invalid arguments for tool `echo`: `times` must be an integer or null."
    );
    assert!(!reply.to_string().contains("SECRET-9"));
}

#[test]
fn a_task_augmented_call_to_a_server_without_tasks_runs_as_an_ordinary_call() {
    // 2025-11-25: a receiver that does not declare `tasks.requests.tools.call` MUST process
    // the request normally, ignoring `task`.
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let (reply, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ab"},"task":{"ttl":60000}}}"#,
    );
    assert!(reply.is_none());
    let reply = finish(&mut engine, effect).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "ab");
    assert!(reply["result"].get("task").is_none());
    // Older revisions do not define `task`: an undefined member, as any other.
    let mut older = self::engine();
    initialize(&mut older, "2025-06-18");
    let reply = ask(
        &mut older,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","task":{}}}"#,
    );
    assert_eq!(reply["error"]["code"], -32602);
}

#[test]
fn call_errors_map_to_the_table() {
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let cases = [
        (r#"{"name":"nope"}"#, -32602),
        (r#"{"name":7}"#, -32602),
        (r#"{"arguments":{}}"#, -32602),
        (r#"{"name":"echo","arguments":[]}"#, -32602),
        (
            r#"{"name":"echo","arguments":{"text":"x"},"extra":1}"#,
            -32602,
        ),
    ];
    for (params, code) in cases {
        let reply = ask(
            &mut engine,
            &format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}"#),
        );
        assert_eq!(reply["error"]["code"], code, "{params}");
    }
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{}"}}}}"#,
        "n".repeat(129)
    );
    assert_eq!(ask(&mut engine, &long)["error"]["code"], -32602);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(70_000)
    );
    let reply = ask(&mut engine, &big);
    assert_eq!(reply["error"]["code"], -32602);
    assert_eq!(
        reply["error"]["data"],
        json!({"limit":"max_string_bytes","value":65536})
    );
}

#[test]
fn tool_failures_are_results_and_panics_are_internal_errors() {
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let (_, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail"}}"#,
    );
    let reply = finish(&mut engine, effect).unwrap();
    assert_eq!(reply["result"]["isError"], true);
    let (_, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"boom"}}"#,
    );
    let reply = finish(&mut engine, effect).unwrap();
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error."}})
    );
    let (_, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}"#,
    );
    assert_eq!(
        finish(&mut engine, effect).unwrap()["result"]["content"][0]["text"],
        "ok"
    );
}

#[test]
fn duplicate_in_flight_ids_are_refused_and_cancelled_calls_stay_silent() {
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#;
    let (_, first) = send(&mut engine, call);
    let (reply, second) = send(&mut engine, call);
    assert_eq!(reply.unwrap()["error"]["code"], -32600);
    assert!(matches!(second, Effect::None));
    let (reply, cancel) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
    );
    assert!(reply.is_none());
    assert!(matches!(cancel, Effect::Cancel(_)));
    // The call finishes anyway (it raced the cancel): nothing is sent.
    assert!(finish(&mut engine, first).is_none());
    // Unknown ids are ignored.
    let (reply, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}"#,
    );
    assert!(reply.is_none() && matches!(effect, Effect::None));
}

#[test]
fn calls_completed_out_of_order_or_abandoned_are_each_answered_or_told_once() {
    // The engine keeps the call started last apart until it is next used (most calls are
    // completed right away): completions in any order, and shutdown, must not notice.
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let call = |id: u32, text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
        )
    };
    let (_, first) = send(&mut engine, &call(1, "one"));
    let (_, second) = send(&mut engine, &call(2, "two"));
    assert_eq!(engine.in_flight(), 2);
    let reply = finish(&mut engine, first).unwrap();
    assert_eq!(
        (&reply["id"], &reply["result"]["content"][0]["text"]),
        (&json!(1), &json!("one"))
    );
    assert_eq!(engine.in_flight(), 1);
    // The second is still in flight: its id is taken, and its completion answers it.
    assert_eq!(ask(&mut engine, &call(2, "again"))["error"]["code"], -32600);
    let reply = finish(&mut engine, second).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "two");
    assert_eq!(engine.in_flight(), 0);
    // A call started last and a call before it are both abandoned at shutdown.
    let (_, _third) = send(&mut engine, &call(3, "three"));
    let (_, _fourth) = send(&mut engine, &call(4, "four"));
    let mut abandoned: Vec<_> = engine
        .abandon_all()
        .into_iter()
        .map(|ticket| format!("{:?}", ticket.key))
        .collect();
    abandoned.sort();
    assert_eq!(abandoned, ["Integer(3)", "Integer(4)"]);
    assert_eq!(engine.in_flight(), 0);
}

#[test]
fn a_late_completion_never_answers_a_newer_request_with_the_same_id() {
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let call = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"old"}}}"#;
    let (_, old) = send(&mut engine, call);
    let (_, _cancel) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}"#,
    );
    let newer = call.replace("old", "new");
    let (_, new) = send(&mut engine, &newer);
    assert!(finish(&mut engine, old).is_none());
    assert_eq!(
        finish(&mut engine, new).unwrap()["result"]["content"][0]["text"],
        "new"
    );
}

#[test]
fn the_in_flight_cap_answers_overloaded_at_once() {
    let limits = Limits {
        max_in_flight: std::num::NonZeroUsize::new(1).unwrap(),
        ..Limits::default()
    };
    let mut engine = Engine::new(server_with(limits, 0));
    initialize(&mut engine, "2025-11-25");
    let (_, first) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#,
    );
    let reply = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#,
    );
    assert_eq!(reply["error"]["code"], -31503);
    assert_eq!(
        reply["error"]["data"],
        json!({"limit":"max_in_flight","value":1})
    );
    // Control messages are still answered.
    assert!(
        ask(&mut engine, r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
            .get("result")
            .is_some()
    );
    assert!(finish(&mut engine, first).is_some());
}

#[test]
fn timeouts_become_tool_errors() {
    let tool = Tool::builder("slow")
        .description("Sleeps")
        .timeout(Duration::from_millis(10))
        .handler(|_: NoArguments| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            ToolOutput::text("late")
        });
    let registry = Registry::new(vec![tool]).unwrap();
    let info = ServerInfo {
        name: "t".into(),
        version: "1".into(),
        title: None,
        meta: None,
    };
    let mut engine = Engine::new(shared(info, None, registry, Limits::default()));
    initialize(&mut engine, "2025-11-25");
    let (_, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}"#,
    );
    let reply = finish(&mut engine, effect).unwrap();
    assert_eq!(reply["result"]["isError"], true);
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("time limit")
    );
}

#[test]
fn quotas_answer_rate_limited_with_the_wait_and_do_not_count_as_garbage() {
    use crate::limits::Rate;
    use crate::quota::{QuotaClock, Quotas};
    let limits = Limits {
        tool_call_rate: Some(Rate::new_const(60, 1)),
        cheap_method_rate: Some(Rate::new_const(60, 2)),
        max_consecutive_errors: std::num::NonZeroU32::new(2).unwrap(),
        ..Limits::default()
    };
    let clock = QuotaClock::manual();
    let quotas = Quotas::with_clock(&limits, [], clock.clone());
    let registry = Registry::new(crate::test_server::tools()).unwrap();
    let info = ServerInfo {
        name: "t".into(),
        version: "1".into(),
        title: None,
        meta: None,
    };
    let mut engine = Engine::new(crate::engine::shared_with_quotas(
        info, None, registry, limits, quotas,
    ));
    let modern = |id: u32, method: &str, extra: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{extra}{MODERN_META}}}}}"#
        )
    };
    let call = modern(
        1,
        "tools/call",
        r#""name":"echo","arguments":{"text":"a"},"#,
    );
    let (_, started) = send(&mut engine, &call);
    assert!(matches!(started, Effect::Start(_)));
    for id in 2..5 {
        let (reply, effect) = send(
            &mut engine,
            &call.replace(r#""id":1"#, &format!(r#""id":{id}"#)),
        );
        let reply = reply.unwrap();
        assert_eq!(reply["error"]["code"], -31429);
        assert_eq!(reply["error"]["data"], json!({"retryAfterMs": 1000}));
        // Over quota is not garbage: the cut-off (2 in a row) never fires.
        assert!(matches!(effect, Effect::None));
    }
    assert!(
        ask(&mut engine, &modern(5, "tools/list", ""))
            .get("result")
            .is_some()
    );
    assert!(
        ask(&mut engine, &modern(6, "tools/list", ""))
            .get("result")
            .is_some()
    );
    assert_eq!(
        ask(&mut engine, &modern(7, "tools/list", ""))["error"]["code"],
        -31429
    );
    clock.advance(Duration::from_secs(1));
    let (_, started) = send(&mut engine, &call.replace(r#""id":1"#, r#""id":8"#));
    assert!(matches!(started, Effect::Start(_)));
}

#[test]
fn progress_is_sent_only_when_asked_increasing_spaced_and_before_the_reply() {
    use crate::handler::Progress;
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let (_, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"progressToken":"tok"}}}"#,
    );
    let Effect::Start(call) = effect else {
        panic!()
    };
    assert!(call.wants_progress());
    let ticket = call.ticket().clone();
    let start = std::time::Instant::now();
    let report = |engine: &mut Engine, progress: f64, after_ms: u64, message: Option<&str>| {
        let mut out = Vec::new();
        let report = Progress {
            ticket: ticket.clone(),
            progress,
            total: Some(10.0),
            message: message.map(str::to_owned),
        };
        engine.progress(report, start + Duration::from_millis(after_ms), &mut out);
        reply(&out)
    };
    let first = report(&mut engine, 1.0, 0, Some("one")).unwrap();
    assert_eq!(
        first,
        json!({"jsonrpc":"2.0","method":"notifications/progress",
               "params":{"progressToken":"tok","progress":1.0,"total":10.0,"message":"one"}})
    );
    assert!(report(&mut engine, 2.0, 50, None).is_none(), "too soon");
    assert!(
        report(&mut engine, 0.5, 200, None).is_none(),
        "not increasing"
    );
    assert!(
        report(&mut engine, f64::NAN, 300, None).is_none(),
        "not a number"
    );
    assert!(report(&mut engine, 3.0, 400, None).is_some());
    // After the reply, nothing more for this call.
    let completion = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(call.run(crate::handler::CallContext::detached()));
    let mut out = Vec::new();
    engine.complete(completion, &mut out);
    assert!(reply(&out).is_some());
    assert!(
        report(&mut engine, 9.0, 1000, None).is_none(),
        "after the reply"
    );

    // Without a token, no progress.
    let (_, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#,
    );
    let Effect::Start(call) = effect else {
        panic!()
    };
    assert!(!call.wants_progress());
    let mut out = Vec::new();
    let report = Progress {
        ticket: call.ticket().clone(),
        progress: 1.0,
        total: None,
        message: None,
    };
    engine.progress(report, start, &mut out);
    assert!(out.is_empty());
}

#[test]
fn a_peer_sending_only_garbage_is_cut_off() {
    let limits = Limits {
        max_consecutive_errors: std::num::NonZeroU32::new(3).unwrap(),
        ..Limits::default()
    };
    let mut engine = Engine::new(server_with(limits, 0));
    assert!(matches!(send(&mut engine, "x").1, Effect::None));
    assert!(matches!(send(&mut engine, "x").1, Effect::None));
    // A valid message resets the count.
    let (_, _none) = send(&mut engine, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert!(matches!(
        send(&mut engine, r#"{"id":1,"result":{}}"#).1,
        Effect::None
    ));
    assert!(matches!(send(&mut engine, "[]").1, Effect::None));
    assert!(matches!(send(&mut engine, "{").1, Effect::CutOff));
}

/// Review finding N2: a valid notification now and then reset the count, so a peer could
/// send garbage forever.
#[test]
fn notifications_do_not_reset_the_garbage_count() {
    let limits = Limits {
        max_consecutive_errors: std::num::NonZeroU32::new(5).unwrap(),
        ..Limits::default()
    };
    let mut engine = Engine::new(server_with(limits, 0));
    let mut cut = false;
    for _ in 0..10 {
        for _ in 0..2 {
            cut |= matches!(send(&mut engine, "x").1, Effect::CutOff);
        }
        let (_, effect) = send(
            &mut engine,
            r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
        );
        cut |= matches!(effect, Effect::CutOff);
    }
    assert!(
        cut,
        "garbage interleaved with notifications must still be cut off"
    );
}

#[test]
fn arguments_of_older_revisions_drop_structured_content_and_titles() {
    let tool = Tool::builder("s")
        .description("structured")
        .title("Structured")
        .annotations(crate::ToolAnnotations::read_only())
        .handler(|_: NoArguments| async {
            Ok::<_, ToolError>(crate::tools::Structured(
                serde_json::json!({"k": 1})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ))
        });
    let registry = Registry::new(vec![tool]).unwrap();
    let info = ServerInfo {
        name: "t".into(),
        version: "1".into(),
        title: None,
        meta: None,
    };
    let shared = shared(info, None, registry, Limits::default());
    for (version, structured, annotated) in [
        ("2024-11-05", false, false),
        ("2025-03-26", false, true),
        ("2025-06-18", true, true),
    ] {
        let mut engine = Engine::new(Arc::clone(&shared));
        initialize(&mut engine, version);
        let list = ask(
            &mut engine,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        let tool = &list["result"]["tools"][0];
        assert_eq!(tool.get("title").is_some(), structured, "{version}");
        assert_eq!(tool.get("outputSchema").is_some(), structured, "{version}");
        assert_eq!(tool.get("annotations").is_some(), annotated, "{version}");
        let (_, effect) = send(
            &mut engine,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s"}}"#,
        );
        let reply = finish(&mut engine, effect).unwrap();
        assert_eq!(
            reply["result"].get("structuredContent").is_some(),
            structured,
            "{version}"
        );
        assert_eq!(reply["result"]["content"][0]["text"], r#"{"k":1}"#);
    }
}

/// Checks one frame's output with the checker the fuzz targets use, and that there is at
/// most one line.
fn assert_well_formed(out: &[u8]) -> Result<(), TestCaseError> {
    let lines = crate::fuzzing::check_output(out)
        .map_err(|broken| TestCaseError::fail(broken.to_string()))?;
    prop_assert!(lines <= 1);
    Ok(())
}

fn near_miss_message() -> impl Strategy<Value = String> {
    let ids = prop_oneof![
        Just(r#""id":1,"#.to_owned()),
        Just(r#""id":"x","#.to_owned()),
        Just(r#""id":null,"#.to_owned()),
        Just(r#""id":1.5,"#.to_owned()),
        Just(r#""id":[1],"#.to_owned()),
        Just(r#""id":1e400,"#.to_owned()),
        Just(String::new()),
    ];
    let methods = prop_oneof![
        Just("initialize"),
        Just("ping"),
        Just("tools/list"),
        Just("tools/call"),
        Just("server/discover"),
        Just("notifications/cancelled"),
        Just("notifications/initialized"),
        Just("bogus"),
    ];
    let params = prop_oneof![
        Just(String::new()),
        Just(r#","params":{}"#.to_owned()),
        Just(r#","params":{"protocolVersion":"2025-11-25"}"#.to_owned()),
        Just(r#","params":{"name":"echo","arguments":{"text":"hi"}}"#.to_owned()),
        Just(r#","params":{"name":"boom"}"#.to_owned()),
        Just(r#","params":{"name":"echo","arguments":{"text":"a","times":1e400}}"#.to_owned()),
        Just(r#","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"progressToken":-1e400}}"#.to_owned()),
        Just(r#","params":{"requestId":1}"#.to_owned()),
        Just(format!(r#","params":{{{MODERN_META}}}"#)),
        Just(r#","params":[1]"#.to_owned()),
        Just(r#","params":{"cursor":"00"}"#.to_owned()),
    ];
    (ids, methods, params, any::<bool>()).prop_map(|(id, method, params, good_version)| {
        let version = if good_version { "2.0" } else { "1.0" };
        format!(r#"{{{id}"jsonrpc":"{version}","method":"{method}"{params}}}"#)
    })
}

proptest! {
    #[test]
    fn any_bytes_give_at_most_one_well_formed_reply(frames in proptest::collection::vec(
        proptest::collection::vec(any::<u8>(), 0..200), 1..20)) {
        let mut engine = engine();
        for frame in frames {
            let mut out = Vec::new();
            let _effect = engine.handle(&frame, &mut out);
            assert_well_formed(&out)?;
        }
    }

    #[test]
    fn near_miss_messages_give_at_most_one_well_formed_reply(
        frames in proptest::collection::vec(near_miss_message(), 1..30)
    ) {
        let mut engine = engine();
        for frame in frames {
            let mut out = Vec::new();
            let effect = engine.handle(frame.as_bytes(), &mut out);
            assert_well_formed(&out)?;
            let notification = !frame.contains(r#""id""#);
            if notification {
                prop_assert!(out.is_empty(), "answered a notification: {}", frame);
            }
            if let Effect::Start(call) = effect {
                // A started call never answers at once, and completes with one reply.
                prop_assert!(out.is_empty());
                let mut done = Vec::new();
                let completion = tokio::runtime::Builder::new_current_thread()
                    .enable_time().build().unwrap().block_on(call.run(crate::handler::CallContext::detached()));
                engine.complete(completion, &mut done);
                assert_well_formed(&done)?;
                prop_assert!(!done.is_empty());
            }
        }
    }
}

/// A model calling a tool name it made up, again and again, is not cut off;
/// those calls neither count toward the cut-off nor reset it.
#[test]
fn unknown_tools_neither_count_as_garbage_nor_reset_the_count() {
    let limits = Limits {
        max_consecutive_errors: std::num::NonZeroU32::new(3).unwrap(),
        tool_call_rate: None,
        ..Limits::default()
    };
    let mut engine = Engine::new(server_with(limits, 0));
    initialize(&mut engine, "2025-11-25");
    let unknown = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}"#;
    for _ in 0..1000 {
        let (reply, effect) = send(&mut engine, unknown);
        assert_eq!(reply.unwrap()["error"]["code"], -32602);
        assert!(matches!(effect, Effect::None));
    }
    // Garbage between them is still counted: the third garbage line cuts the peer off.
    assert!(matches!(send(&mut engine, "x").1, Effect::None));
    assert!(matches!(send(&mut engine, unknown).1, Effect::None));
    assert!(matches!(send(&mut engine, "x").1, Effect::None));
    assert!(matches!(send(&mut engine, unknown).1, Effect::None));
    assert!(matches!(send(&mut engine, "x").1, Effect::CutOff));
}

/// An unknown tool's call is charged to the server's call quota, so a
/// looping caller is slowed with `-31429` like any other.
#[test]
fn unknown_tools_are_charged_to_the_call_quota() {
    use crate::limits::Rate;
    use crate::quota::{QuotaClock, Quotas};
    let limits = Limits {
        tool_call_rate: Some(Rate::new_const(60, 2)),
        ..Limits::default()
    };
    let clock = QuotaClock::manual();
    let quotas = Quotas::with_clock(&limits, [], clock.clone());
    let registry = Registry::new(crate::test_server::tools()).unwrap();
    let info = ServerInfo {
        name: "t".into(),
        version: "1".into(),
        title: None,
        meta: None,
    };
    let mut engine = Engine::new(crate::engine::shared_with_quotas(
        info, None, registry, limits, quotas,
    ));
    initialize(&mut engine, "2025-11-25");
    let unknown = |id: u32| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"nope"}}}}"#)
    };
    assert_eq!(ask(&mut engine, &unknown(1))["error"]["code"], -32602);
    assert_eq!(ask(&mut engine, &unknown(2))["error"]["code"], -32602);
    let slowed = ask(&mut engine, &unknown(3));
    assert_eq!(slowed["error"]["code"], -31429);
    assert_eq!(slowed["error"]["data"], json!({"retryAfterMs": 1000}));
    let echo = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#;
    assert_eq!(ask(&mut engine, echo)["error"]["code"], -31429);
    clock.advance(Duration::from_secs(1));
    assert!(matches!(send(&mut engine, echo).1, Effect::Start(_)));
}

/// Numbers no 64-bit float holds are valid JSON, answered by the rule of the
/// member they are in, never `-32700`; they count as garbage only where the message is refused.
#[test]
fn numbers_out_of_range_are_answered_by_their_member() {
    let mut engine = engine();
    initialize(&mut engine, "2025-11-25");
    let reply = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
    );
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    let reply = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","times":1e400}}}"#,
    );
    assert_eq!(
        reply["error"],
        json!({"code": -32602, "message": "Invalid params: a number in the arguments is too large to represent."})
    );
    let reply = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"n":1e400}}"#,
    );
    assert_eq!(reply["result"], json!({}));
    let (reply, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e400}}"#,
    );
    assert!(reply.is_none() && matches!(effect, Effect::None));
}

/// Reviews a change.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ReviewArgs {
    /// The change.
    change: String,
    /// What to look at.
    focus: Option<String>,
}

fn prompt_engine(page_size: usize) -> Engine {
    use crate::prompts::{Prompt, PromptMessage};
    let limits = Limits {
        tools_page_size: std::num::NonZeroUsize::new(page_size).unwrap(),
        ..Limits::default()
    };
    let mut prompts = vec![
        Prompt::builder("review").handler(|args: ReviewArgs| {
            vec![PromptMessage::user(format!(
                "Review {} for {}.",
                args.change,
                args.focus.unwrap_or_else(|| "bugs".into())
            ))]
        }),
        Prompt::builder("boom")
            .description("Panics")
            .handler(|_: NoArguments| {
                let empty: Vec<PromptMessage> = Vec::new();
                vec![empty[3].clone()]
            }),
    ];
    for i in 0..3 {
        prompts.push(
            Prompt::builder(format!("filler_{i}"))
                .description("Filler")
                .handler(|_: NoArguments| Vec::new()),
        );
    }
    Engine::new(crate::test_server::with_prompts(limits, prompts).unwrap())
}

#[test]
fn prompts_are_declared_listed_by_page_and_got_in_both_eras() {
    let mut engine = prompt_engine(2);
    let reply = initialize(&mut engine, "2025-11-25");
    assert_eq!(
        reply["result"]["capabilities"]["prompts"],
        json!({"listChanged": false})
    );
    let first = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"prompts/list"}"#,
    );
    assert_eq!(
        first["result"]["prompts"][0],
        json!({
            "name": "review",
            "description": "Reviews a change.",
            "arguments": [
                {"name": "change", "description": "The change.", "required": true},
                {"name": "focus", "description": "What to look at.", "required": false},
            ]
        })
    );
    let cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();
    let mut names = vec![];
    let mut next = Some(cursor);
    let mut listed = first["result"]["prompts"].as_array().unwrap().clone();
    while let Some(cursor) = next {
        let page = ask(
            &mut engine,
            &format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"prompts/list","params":{{"cursor":"{cursor}"}}}}"#
            ),
        );
        listed.extend(
            page["result"]["prompts"]
                .as_array()
                .unwrap()
                .iter()
                .cloned(),
        );
        next = page["result"]["nextCursor"].as_str().map(str::to_owned);
    }
    for prompt in &listed {
        names.push(prompt["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        names,
        ["review", "boom", "filler_0", "filler_1", "filler_2"]
    );
    let got = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"review","arguments":{"change":"PR-12"}}}"#,
    );
    assert_eq!(
        got,
        json!({"jsonrpc": "2.0", "id": 3, "result": {
            "description": "Reviews a change.",
            "messages": [{"role": "user", "content": {"type": "text", "text": "Review PR-12 for bugs."}}]
        }})
    );
    let mut without = self::engine();
    let modern = ask(
        &mut without,
        &format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"prompts/list","params":{{{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(
        modern["error"]["code"], -32601,
        "no prompts, no method: {modern}"
    );
    let mut modern_engine = prompt_engine(10);
    let got = ask(
        &mut modern_engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{{"name":"review","arguments":{{"change":"a","focus":"b"}},{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"],
        "Review a for b."
    );
    assert_eq!(got["result"]["resultType"], "complete");
    let discovered = ask(
        &mut modern_engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{{{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(
        discovered["result"]["capabilities"]["prompts"],
        json!({"listChanged": false})
    );
}

#[test]
fn hostile_prompt_requests_are_fixed_errors_that_echo_nothing() {
    let mut engine = prompt_engine(10);
    initialize(&mut engine, "2025-11-25");
    let secret = "SECRET-ARGUMENT-9";
    for (params, code, message) in [
        (
            format!(r#"{{"name":"{secret}"}}"#),
            -32602,
            "Invalid params: unknown prompt.",
        ),
        (
            r#"{"name":7}"#.to_owned(),
            -32602,
            "Invalid params: unknown prompt.",
        ),
        (
            format!(r#"{{"name":"{}"}}"#, "r".repeat(100_000)),
            -32602,
            "Invalid params: unknown prompt.",
        ),
        (
            r#"{"name":"review"}"#.to_owned(),
            -32602,
            "Invalid params: the prompt's arguments must be an object of the strings it declares, with every required one.",
        ),
        (
            format!(r#"{{"name":"review","arguments":{{"change":7,"x":"{secret}"}}}}"#),
            -32602,
            "Invalid params: the prompt's arguments must be an object of the strings it declares, with every required one.",
        ),
        (
            format!(r#"{{"name":"review","arguments":{{"change":"a","{secret}":"b"}}}}"#),
            -32602,
            "Invalid params: the prompt's arguments must be an object of the strings it declares, with every required one.",
        ),
        (
            r#"{"name":"review","arguments":["change"]}"#.to_owned(),
            -32602,
            "Invalid params: the prompt's arguments must be an object of the strings it declares, with every required one.",
        ),
        (
            r#"{"name":"review","arguments":{"change":1e400}}"#.to_owned(),
            -32602,
            "Invalid params: a number in the arguments is too large to represent.",
        ),
        (
            r#"{"name":"review","arguments":{"change":"a"},"extra":1}"#.to_owned(),
            -32602,
            "Invalid params.",
        ),
    ] {
        let reply = ask(
            &mut engine,
            &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{params}}}"#),
        );
        assert_eq!(reply["error"]["code"], code, "{params}");
        assert_eq!(reply["error"]["message"], message, "{params}");
        assert!(!reply.to_string().contains(secret), "{reply}");
    }
    let missing = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get"}"#,
    );
    assert_eq!(missing["error"]["code"], -32602);
    let big = ask(
        &mut engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{{"name":"review","arguments":{{"change":"{}"}}}}}}"#,
            "x".repeat(70_000)
        ),
    );
    assert_eq!(
        big["error"]["data"],
        json!({"limit":"max_string_bytes","value":65536})
    );
    let panicked = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"boom"}}"#,
    );
    assert_eq!(panicked["error"]["code"], -32603, "{panicked}");
    let ping = ask(&mut engine, r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
    assert_eq!(ping["result"], json!({}));
    let bad_cursor = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":6,"method":"prompts/list","params":{"cursor":"nope"}}"#,
    );
    assert_eq!(bad_cursor["error"]["code"], -32602);
}

#[test]
fn prompts_wait_for_the_handshake_like_tools() {
    let mut engine = prompt_engine(10);
    let early = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"prompts/list"}"#,
    );
    assert_eq!(early["error"]["code"], -32602, "{early}");
}

fn resource_engine() -> Engine {
    Engine::new(
        crate::test_server::with_everything(
            Limits::default(),
            Vec::new(),
            crate::test_server::resources(),
        )
        .unwrap(),
    )
}

#[test]
fn resources_and_templates_are_listed_apart_and_read_in_both_eras() {
    let mut engine = resource_engine();
    let reply = initialize(&mut engine, "2025-11-25");
    assert_eq!(
        reply["result"]["capabilities"]["resources"],
        json!({"listChanged": false})
    );
    let listed = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
    );
    assert_eq!(
        listed["result"],
        json!({"resources": [
            {"uri": "test://notes", "name": "notes", "mimeType": "text/plain"},
            {"uri": "test://logo", "name": "logo", "mimeType": "image/png"},
        ]})
    );
    let templates = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/templates/list"}"#,
    );
    assert_eq!(
        templates["result"],
        json!({"resourceTemplates": [
            {"uriTemplate": "test://item/{id}", "name": "item", "description": "One item"},
        ]})
    );
    let text = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://notes"}}"#,
    );
    assert_eq!(
        text["result"],
        json!({"contents": [{"uri": "test://notes", "mimeType": "text/plain", "text": "Buy milk."}]})
    );
    let blob = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"test://logo"}}"#,
    );
    assert_eq!(blob["result"]["contents"][0]["blob"], "iVBORw==");
    let item = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://item/42"}}"#,
    );
    assert_eq!(
        item["result"]["contents"][0],
        json!({"uri": "test://item/42", "text": "Item 42"})
    );
    let mut modern = resource_engine();
    let read = ask(
        &mut modern,
        &format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{{"uri":"test://item/7",{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(read["result"]["contents"][0]["text"], "Item 7");
    assert_eq!(read["result"]["resultType"], "complete");
    assert_eq!(
        read["result"]["ttlMs"], 0,
        "contents are read afresh each time"
    );
    assert_eq!(read["result"]["cacheScope"], "public");
    let listed = ask(
        &mut modern,
        &format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"resources/list","params":{{{MODERN_META}}}}}"#
        ),
    );
    assert!(listed["result"]["ttlMs"].is_u64(), "{listed}");
    let mut without = self::engine();
    initialize(&mut without, "2025-11-25");
    let none = ask(
        &mut without,
        r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"test://notes"}}"#,
    );
    assert_eq!(
        none["error"]["code"], -32601,
        "no resources, no method: {none}"
    );
}

#[test]
fn hostile_resource_reads_are_one_fixed_error_that_echoes_no_uri() {
    let mut engine = resource_engine();
    initialize(&mut engine, "2025-11-25");
    let secret = "SECRET-URI-PART-9";
    for params in [
        format!(r#"{{"uri":"test://{secret}"}}"#),
        format!(r#"{{"uri":"test://item/../{secret}"}}"#),
        format!(r#"{{"uri":"test://item/{secret}%2F..%2Fetc"}}"#),
        r#"{"uri":"test://item/%2e%2e"}"#.to_owned(),
        r#"{"uri":"test://item/"}"#.to_owned(),
        r#"{"uri":"file:///etc/passwd"}"#.to_owned(),
        r#"{"uri":7}"#.to_owned(),
        r#"{"uri":null}"#.to_owned(),
        r#"{}"#.to_owned(),
        format!(r#"{{"uri":"test://item/{}"}}"#, "x".repeat(5000)),
        format!(r#"{{"uri":"{}"}}"#, "y".repeat(60_000)),
    ] {
        let reply = ask(
            &mut engine,
            &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{params}}}"#),
        );
        assert_eq!(
            reply["error"],
            json!({"code": -32602, "message": "Invalid params: resource not found."}),
            "{params}"
        );
        assert!(!reply.to_string().contains(secret), "{reply}");
    }
    let extra = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://notes","x":1}}"#,
    );
    assert_eq!(extra["error"]["code"], -32602);
    let subscribe = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"test://notes"}}"#,
    );
    assert_eq!(
        subscribe["error"]["code"], -32601,
        "subscriptions are not offered"
    );
}

/// A server with the test resources that offers subscriptions, and its announcer.
fn subscribable() -> (crate::Server, crate::ResourceUpdates) {
    let mut builder =
        crate::Server::builder("test", "1.0").resource_subscriptions(crate::ResourceUpdates::new());
    for resource in crate::test_server::resources() {
        builder = builder.resource(resource);
    }
    let server = builder.build().unwrap();
    let updates = server.resource_updates().unwrap();
    (server, updates)
}

fn subscribe(engine: &mut Engine, id: u32, uri: &str) -> Value {
    ask(
        engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/subscribe","params":{{"uri":"{uri}"}}}}"#
        ),
    )
}

/// The `notifications/resources/updated` lines in `out`, by URI.
fn updated(out: &[u8]) -> Vec<String> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|line| {
            let message: Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                message["method"], "notifications/resources/updated",
                "{line}"
            );
            assert!(message.get("id").is_none(), "a notification: {line}");
            message["params"]["uri"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn a_legacy_session_subscribes_to_resources_it_has_and_hears_only_of_those() {
    let (server, _) = subscribable();
    let mut engine = server.engine();
    let reply = initialize(&mut engine, "2025-11-25");
    assert_eq!(
        reply["result"]["capabilities"]["resources"],
        json!({"listChanged": false, "subscribe": true})
    );
    assert_eq!(
        subscribe(&mut engine, 1, "test://notes")["result"],
        json!({})
    );
    assert_eq!(
        subscribe(&mut engine, 2, "test://item/42")["result"],
        json!({}),
        "a URI a template matches"
    );
    assert_eq!(
        subscribe(&mut engine, 3, "test://notes")["result"],
        json!({}),
        "twice is once"
    );
    let mut out = Vec::new();
    engine.resource_updated("test://notes", &mut out);
    engine.resource_updated("test://logo", &mut out);
    engine.resource_updated("test://item/42", &mut out);
    engine.resource_updated("test://item/43", &mut out);
    assert_eq!(updated(&out), ["test://notes", "test://item/42"]);
    let gone = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":{"uri":"test://notes"}}"#,
    );
    assert_eq!(gone["result"], json!({}));
    let never = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/unsubscribe","params":{"uri":"test://logo"}}"#,
    );
    assert_eq!(never["result"], json!({}), "the state asked for holds");
    let mut out = Vec::new();
    engine.resource_updated("test://notes", &mut out);
    assert!(out.is_empty(), "unsubscribed");
    engine.resources_maybe_updated(&mut out);
    assert_eq!(
        updated(&out),
        ["test://item/42"],
        "missed: every subscription"
    );
}

#[test]
fn hostile_subscriptions_are_refused_with_fixed_errors_and_bounded_per_session() {
    let (server, _) = subscribable();
    let mut engine = server.engine();
    initialize(&mut engine, "2025-11-25");
    let secret = "SECRET-SUBSCRIBED-URI-3";
    for params in [
        format!(r#"{{"uri":"test://{secret}"}}"#),
        format!(r#"{{"uri":"test://item/..%2F{secret}"}}"#),
        r#"{"uri":7}"#.to_owned(),
        r#"{}"#.to_owned(),
        format!(r#"{{"uri":"test://item/{}"}}"#, "x".repeat(5000)),
    ] {
        let (reply, effect) = send(
            &mut engine,
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{params}}}"#
            ),
        );
        let reply = reply.unwrap();
        assert_eq!(
            reply["error"],
            json!({"code": -32602, "message": "Invalid params: resource not found."}),
            "{params}"
        );
        assert!(!reply.to_string().contains(secret), "{reply}");
        assert!(matches!(effect, Effect::None));
    }
    let extra = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://notes","x":1}}"#,
    );
    assert_eq!(extra["error"]["code"], -32602, "a member not defined");
    for n in 0..crate::limits::MAX_SUBSCRIPTIONS {
        let uri = format!("test://item/{n}");
        assert_eq!(subscribe(&mut engine, 3, &uri)["result"], json!({}), "{n}");
    }
    let full = subscribe(&mut engine, 4, "test://notes");
    assert_eq!(
        full["error"],
        json!({"code": -32602,
               "message": "Invalid params: this session is subscribed to as many resources as it may be.",
               "data": {"limit": "max_subscriptions", "value": crate::limits::MAX_SUBSCRIPTIONS}}),
    );
    assert_eq!(
        subscribe(&mut engine, 5, "test://item/0")["result"],
        json!({}),
        "one held already is no new one"
    );
    // Thousands of refused subscriptions are answered, never taken for garbage: a client that
    // subscribes to what it made up is slowed by the request quota, not cut off.
    let mut slowed = 0;
    for n in 0..2_000 {
        let (reply, effect) = send(
            &mut engine,
            &format!(
                r#"{{"jsonrpc":"2.0","id":{n},"method":"resources/subscribe","params":{{"uri":"audit://made-up/{n}"}}}}"#
            ),
        );
        let code = reply.unwrap()["error"]["code"].as_i64().unwrap();
        assert!(code == -32602 || code == -31429, "{n}: {code}");
        if code == -31429 {
            slowed += 1;
        }
        assert!(matches!(effect, Effect::None), "{n}: not cut off");
    }
    assert!(slowed > 0, "the request quota slows the flood");
}

#[test]
fn subscriptions_are_offered_only_when_built_for_and_never_in_the_modern_era() {
    let (server, _) = subscribable();
    let mut modern = server.engine();
    let reply = ask(
        &mut modern,
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{{"uri":"test://notes",{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    let discovered = ask(
        &mut modern,
        &format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{{{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(
        discovered["result"]["capabilities"]["resources"],
        json!({"listChanged": false})
    );
    let mut early = server.engine();
    let before = subscribe(&mut early, 3, "test://notes");
    assert_eq!(before["error"]["code"], -32602, "not initialized: {before}");
    let mut plain = resource_engine();
    initialize(&mut plain, "2025-11-25");
    assert_eq!(
        subscribe(&mut plain, 4, "test://notes")["error"]["code"],
        -32601
    );
}

fn completion_engine() -> Engine {
    use crate::output::ResourceBody;
    use crate::prompts::{Prompt, PromptMessage};
    use crate::resources::Resource;
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Page {
        page: String,
    }
    let cities = ["paris", "park", "party", "rome"];
    let prompts = vec![
        Prompt::builder("review")
            .complete("change", move |typed| {
                cities
                    .iter()
                    .filter(|city| city.starts_with(typed))
                    .map(|city| (*city).to_owned())
                    .collect()
            })
            .handler(|args: ReviewArgs| vec![PromptMessage::user(args.change)]),
    ];
    let resources = vec![
        Resource::builder("docs://{page}", "docs")
            .complete("page", |typed| vec![format!("{typed}-intro")])
            .template(|args: Page| ResourceBody::text(args.page)),
    ];
    Engine::new(crate::test_server::with_everything(Limits::default(), prompts, resources).unwrap())
}

#[test]
fn completions_come_from_the_registered_completer_and_unknown_targets_are_refused() {
    let mut engine = completion_engine();
    let reply = initialize(&mut engine, "2025-11-25");
    assert_eq!(reply["result"]["capabilities"]["completions"], json!({}));
    let complete = |engine: &mut Engine, params: &str| {
        ask(
            engine,
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{params}}}"#
            ),
        )
    };
    let cities = complete(
        &mut engine,
        r#"{"ref":{"type":"ref/prompt","name":"review"},"argument":{"name":"change","value":"par"}}"#,
    );
    assert_eq!(
        cities["result"],
        json!({"completion": {"values": ["paris", "park", "party"], "total": 3, "hasMore": false}})
    );
    let none = complete(
        &mut engine,
        r#"{"ref":{"type":"ref/prompt","name":"review"},"argument":{"name":"focus","value":"x"},"context":{"arguments":{"change":"a"}}}"#,
    );
    assert_eq!(
        none["result"]["completion"],
        json!({"values": [], "total": 0, "hasMore": false}),
        "an argument without a completer completes to nothing"
    );
    let page = complete(
        &mut engine,
        r#"{"ref":{"type":"ref/resource","uri":"docs://{page}"},"argument":{"name":"page","value":"a"}}"#,
    );
    assert_eq!(page["result"]["completion"]["values"], json!(["a-intro"]));
    let secret = "SECRET-COMPLETION-9";
    for (params, code) in [
        (format!(r#"{{"ref":{{"type":"ref/prompt","name":"{secret}"}},"argument":{{"name":"change","value":""}}}}"#), -32602),
        (format!(r#"{{"ref":{{"type":"ref/resource","uri":"{secret}"}},"argument":{{"name":"page","value":""}}}}"#), -32602),
        (format!(r#"{{"ref":{{"type":"ref/prompt","name":"review"}},"argument":{{"name":"{secret}","value":""}}}}"#), -32602),
        (format!(r#"{{"ref":{{"type":"{secret}"}},"argument":{{"name":"change","value":""}}}}"#), -32602),
        (r#"{"ref":{"type":"ref/prompt","name":"review"},"argument":{"name":"change","value":7}}"#.to_owned(), -32602),
        (r#"{"ref":{"type":"ref/prompt","name":"review"}}"#.to_owned(), -32602),
        (r#"{"argument":{"name":"change","value":"p"}}"#.to_owned(), -32602),
        (r#"{"ref":"review","argument":{"name":"change","value":"p"}}"#.to_owned(), -32602),
        (format!(r#"{{"ref":{{"type":"ref/prompt","name":"review"}},"argument":{{"name":"change","value":"{}"}}}}"#, "p".repeat(70_000)), -32602),
    ] {
        let reply = complete(&mut engine, &params);
        assert_eq!(reply["error"]["code"], code, "{params}");
        assert!(!reply.to_string().contains(secret), "{reply}");
    }
    let mut without = self::engine();
    initialize(&mut without, "2025-11-25");
    let absent = complete(
        &mut without,
        r#"{"ref":{"type":"ref/prompt","name":"review"},"argument":{"name":"change","value":"p"}}"#,
    );
    assert_eq!(absent["error"]["code"], -32601);
}

fn logging_engine() -> Engine {
    use crate::handler::{CallContext, LogLevel};
    let chatty = Tool::builder("chatty").description("Logs").handler(
        |_: NoArguments, context: CallContext| async move {
            context.log(LogLevel::Debug, "detail");
            context.log(LogLevel::Warning, "careful");
            context.log(LogLevel::Info, "x".repeat(10_000));
            for _ in 0..200 {
                context.log(LogLevel::Error, "again");
            }
            ToolOutput::text("done")
        },
    );
    Engine::new(crate::test_server::shared(Limits::default(), vec![chatty]).unwrap())
}

/// Runs a call with a reporting context; returns the lines written while it ran (its log
/// messages as the engine let them through) and its reply.
fn run_logged(engine: &mut Engine, frame: &str) -> (Vec<Value>, Value) {
    use crate::handler::{CallContext, Event, Report};
    let mut out = Vec::new();
    let Effect::Start(call) = engine.handle(frame.as_bytes(), &mut out) else {
        panic!("not a call: {}", String::from_utf8_lossy(&out))
    };
    let (events_tx, mut events_rx) = tokio::sync::mpsc::channel(1024);
    let context = if call.wants_reports() {
        CallContext::reporting(&call, events_tx)
    } else {
        CallContext::detached()
    };
    let completion = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(call.run(context));
    let mut logs = Vec::new();
    while let Ok(event) = events_rx.try_recv() {
        if let Event(Report::Log(message)) = event {
            out.clear();
            engine.log(message, &mut out);
            if let Some(line) = reply(&out) {
                logs.push(line);
            }
        }
    }
    out.clear();
    engine.complete(completion, &mut out);
    (logs, reply(&out).unwrap())
}

#[test]
fn log_messages_reach_the_client_only_at_its_level_bounded_in_number_and_size() {
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chatty"}}"#;
    let mut engine = logging_engine();
    let reply = initialize(&mut engine, "2025-11-25");
    assert_eq!(reply["result"]["capabilities"]["logging"], json!({}));
    let (logs, done) = run_logged(&mut engine, call);
    assert!(logs.is_empty(), "no level set, nothing sent: {logs:?}");
    assert_eq!(done["result"]["content"][0]["text"], "done");
    let set = ask(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}"#,
    );
    assert_eq!(set["result"], json!({}));
    let (logs, _) = run_logged(&mut engine, call);
    assert_eq!(
        logs.first(),
        Some(
            &json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"careful"}})
        )
    );
    let long = logs[1]["params"]["data"].as_str().unwrap();
    assert_eq!(long.len(), crate::limits::MAX_LOG_MESSAGE_BYTES);
    assert_eq!(
        logs.len(),
        usize::try_from(crate::limits::MAX_LOG_MESSAGES_PER_CALL).unwrap(),
        "debug dropped, then at most the cap"
    );
    for (params, code) in [
        (r#"{"level":"loud"}"#, -32602),
        (r#"{"level":7}"#, -32602),
        (r#"{}"#, -32602),
        (r#"{"level":"info","x":1}"#, -32602),
    ] {
        let reply = ask(
            &mut engine,
            &format!(r#"{{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{params}}}"#),
        );
        assert_eq!(reply["error"]["code"], code, "{params}");
        assert!(!reply.to_string().contains("loud"), "{reply}");
    }
    let mut modern = logging_engine();
    let removed = ask(
        &mut modern,
        &format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{{"level":"info",{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(
        removed["error"]["code"], -32601,
        "logging/setLevel is legacy only"
    );
    let discovered = ask(
        &mut modern,
        &format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{{{MODERN_META}}}}}"#
        ),
    );
    assert_eq!(
        discovered["result"]["capabilities"]["logging"],
        json!({}),
        "a request's _meta.logLevel is honoured"
    );
}

#[test]
fn a_modern_call_logs_at_the_level_its_request_asks_and_without_one_not_at_all() {
    let mut engine = logging_engine();
    let call = |id: u32, level: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"chatty","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}{level}}}}}}}"#
        )
    };
    let (logs, done) = run_logged(&mut engine, &call(1, ""));
    assert!(logs.is_empty(), "no logLevel, no message: {logs:?}");
    assert_eq!(done["result"]["content"][0]["text"], "done");
    let (logs, _) = run_logged(
        &mut engine,
        &call(2, r#","io.modelcontextprotocol/logLevel":"warning""#),
    );
    assert_eq!(
        logs[0]["params"],
        json!({"level": "warning", "data": "careful"})
    );
    assert_eq!(
        logs[1]["params"]["level"], "error",
        "info dropped at warning"
    );
    assert_eq!(
        logs.len(),
        usize::try_from(crate::limits::MAX_LOG_MESSAGES_PER_CALL).unwrap()
    );
    // The level is the request's: the next request without one gets nothing again.
    let (logs, _) = run_logged(&mut engine, &call(3, ""));
    assert!(logs.is_empty());
    let mut out = Vec::new();
    let _refused = engine.handle(
        call(4, r#","io.modelcontextprotocol/logLevel":"loud""#).as_bytes(),
        &mut out,
    );
    assert!(String::from_utf8_lossy(&out).contains("-32602"));
    assert!(!String::from_utf8_lossy(&out).contains("loud"));
}

/// A server whose tools ask the client: `form` (one elicitation of a required `name`),
/// `five` (five elicitations at once), `llm` (one sampling request). Each says in its text
/// what it got.
fn asking_engine() -> Engine {
    use crate::asking::{Elicitation, Elicited, Sampling};
    use crate::handler::CallContext;
    fn form() -> Elicitation {
        Elicitation::new(
            "Your name?",
            json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 16}}, "required": ["name"]}),
        )
        .unwrap()
    }
    fn said(answer: Result<Elicited, crate::asking::AskError>) -> String {
        match answer {
            Ok(Elicited::Accepted(content)) => format!("accepted {}", Value::Object(content)),
            Ok(other) => format!("{other:?}"),
            Err(error) => format!("error: {error}"),
        }
    }
    let tools = vec![
        Tool::builder("form")
            .description("Asks for a name")
            .timeout(Duration::from_secs(600))
            .handler(|_: NoArguments, context: CallContext| async move {
                ToolOutput::text(said(context.elicit(form()).await))
            }),
        Tool::builder("five")
            .description("Asks five times at once")
            .timeout(Duration::from_secs(600))
            .handler(|_: NoArguments, context: CallContext| async move {
                let (a, b, c, d, e) = tokio::join!(
                    context.elicit(form()),
                    context.elicit(form()),
                    context.elicit(form()),
                    context.elicit(form()),
                    context.elicit(form()),
                );
                ToolOutput::text([a, b, c, d, e].map(said).join("; "))
            }),
        Tool::builder("llm")
            .description("Asks the client's model")
            .handler(|_: NoArguments, context: CallContext| async move {
                match context.sample(Sampling::new("Say hi").max_tokens(8)).await {
                    Ok(sampled) => {
                        ToolOutput::text(format!("{} by {}", sampled.text, sampled.model))
                    }
                    Err(error) => ToolOutput::text(format!("error: {error}")),
                }
            }),
    ];
    Engine::new(crate::test_server::shared(Limits::default(), tools).unwrap())
}

fn initialize_with(engine: &mut Engine, capabilities: &str) {
    let reply = ask(
        engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{capabilities},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        ),
    );
    assert!(reply.get("result").is_some(), "{reply}");
    let (reply, _) = send(
        engine,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(reply.is_none());
}

fn lines(out: &[u8]) -> Vec<Value> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Runs the call `frame` with a reporting context on a paused clock; each request the server
/// writes is given to `client`, whose frame (if any) is fed back to the engine. Returns every
/// line the server wrote, the call's reply last, and the effects of the client's frames.
fn run_asking(
    engine: &mut Engine,
    frame: &str,
    mut client: impl FnMut(&Value) -> Option<String>,
) -> (Vec<Value>, Vec<Effect>) {
    use crate::handler::{CallContext, Event, Report};
    let mut out = Vec::new();
    let Effect::Start(call) = engine.handle(frame.as_bytes(), &mut out) else {
        panic!("not a call: {}", String::from_utf8_lossy(&out))
    };
    assert!(call.wants_reports() || !call.may_ask());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let (events_tx, mut events_rx) = tokio::sync::mpsc::channel(64);
        let context = CallContext::reporting(&call, events_tx.clone());
        tokio::spawn(async move {
            let completion = call.run(context).await;
            events_tx.send(Event::from(completion)).await.unwrap();
        });
        let mut written = Vec::new();
        let mut effects = Vec::new();
        loop {
            let mut out = Vec::new();
            match events_rx.recv().await.unwrap() {
                Event(Report::Ask(question)) => engine.ask(question, &mut out),
                Event(Report::Done(completion)) => {
                    engine.complete(completion, &mut out);
                    written.extend(lines(&out));
                    return (written, effects);
                }
                _ => {}
            }
            for line in lines(&out) {
                if let Some(answer) = client(&line) {
                    let mut replies = Vec::new();
                    effects.push(engine.handle(answer.as_bytes(), &mut replies));
                    assert!(replies.is_empty(), "an answer is never answered");
                }
                written.push(line);
            }
        }
    })
}

const FORM_CALL: &str =
    r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"form"}}"#;

fn answering(result: &'static str) -> impl FnMut(&Value) -> Option<String> {
    move |request| {
        Some(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
            request["id"]
        ))
    }
}

#[test]
fn a_tool_asks_the_client_and_gets_its_checked_answer() {
    let mut engine = asking_engine();
    initialize_with(&mut engine, r#"{"elicitation":{}}"#);
    let (written, effects) = run_asking(
        &mut engine,
        FORM_CALL,
        answering(r#"{"action":"accept","content":{"name":"Ada"}}"#),
    );
    assert_eq!(
        written[0],
        json!({"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{
            "message":"Your name?",
            "requestedSchema":{"type":"object","properties":{"name":{"type":"string","maxLength":16}},"required":["name"]}
        }})
    );
    assert!(matches!(effects[..], [Effect::None]));
    assert_eq!(written.len(), 2);
    assert_eq!(written[1]["id"], "c");
    assert_eq!(
        written[1]["result"]["content"][0]["text"],
        r#"accepted {"name":"Ada"}"#
    );
    // Declined: the next question gets the next id.
    let (written, _) = run_asking(&mut engine, FORM_CALL, answering(r#"{"action":"decline"}"#));
    assert_eq!(written[0]["id"], 2);
    assert_eq!(written[1]["result"]["content"][0]["text"], "Declined");
}

#[test]
fn a_hostile_answer_reaches_the_tool_as_a_fixed_error_and_echoes_nothing() {
    let mut engine = asking_engine();
    initialize_with(&mut engine, r#"{"elicitation":{}}"#);
    for (result, error) in [
        (
            r#"{"action":"accept","content":{"name":"Ada","evil-extra-field":"x"}}"#,
            "error: the client's answer was not valid",
        ),
        (
            r#"{"action":"accept","content":{"name":"evil-much-too-long-name"}}"#,
            "error: the client's answer was not valid",
        ),
        (
            r#"{"action":"accept"}"#,
            "error: the client's answer was not valid",
        ),
        (r#"[1]"#, "error: the client's answer was not valid"),
    ] {
        let (written, effects) = run_asking(&mut engine, FORM_CALL, answering(result));
        let reply = written.last().unwrap();
        assert_eq!(reply["result"]["content"][0]["text"], error, "{result}");
        assert!(!reply.to_string().contains("evil"), "{reply}");
        assert!(
            matches!(effects[..], [Effect::None]),
            "counted, not cut off"
        );
        assert!(engine.last_invalid, "a malformed answer counts as invalid");
    }
    let (written, _) = run_asking(&mut engine, FORM_CALL, |request| {
        Some(format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-1,"message":"evil text"}}}}"#,
            request["id"]
        ))
    });
    let reply = written.last().unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "error: the client refused the request"
    );
    assert!(!reply.to_string().contains("evil"));
}

#[test]
fn only_a_client_that_declared_the_capability_is_asked() {
    let mut engine = asking_engine();
    initialize_with(&mut engine, r#"{"sampling":{}}"#);
    let (written, _) = run_asking(&mut engine, FORM_CALL, |_| panic!("asked"));
    assert_eq!(written.len(), 1, "no request: {written:?}");
    assert_eq!(
        written[0]["result"]["content"][0]["text"],
        "error: the client cannot answer this request"
    );
    let (written, _) = run_asking(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"llm"}}"#,
        answering(r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m1"}"#),
    );
    assert_eq!(written[0]["method"], "sampling/createMessage");
    assert_eq!(written[0]["params"]["maxTokens"], 8);
    assert_eq!(written[1]["result"]["content"][0]["text"], "hi by m1");
    // A modern call sends no request to the client: one whose client declared nothing is
    // refused -32021, naming the capability.
    let mut modern = asking_engine();
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"form",{MODERN_META}}}}}"#
    );
    let (written, _) = run_asking(&mut modern, &call, |_| panic!("asked"));
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["error"]["code"], -32_021);
    assert_eq!(
        written[0]["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {}}})
    );
}

/// A modern call of `form` with `extra` params members, from a client that declared
/// elicitation.
fn modern_form_call(id: u32, extra: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"form",{extra}"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}}}}}}}}"#
    )
}

#[test]
fn a_modern_call_asks_with_an_input_required_result_and_takes_the_answer_on_its_retry() {
    let mut engine = asking_engine();
    let (written, _) = run_asking(&mut engine, &modern_form_call(1, ""), |_| panic!("asked"));
    assert_eq!(written.len(), 1, "{written:?}");
    let result = &written[0]["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["q1"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        result["inputRequests"]["q1"]["params"]["message"],
        "Your name?"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();
    // The retry, with the answer and the state.
    let retry = modern_form_call(
        2,
        &format!(
            r#""inputResponses":{{"q1":{{"action":"accept","content":{{"name":"Ada"}}}}}},"requestState":"{state}","#
        ),
    );
    let (written, _) = run_asking(&mut engine, &retry, |_| panic!("asked"));
    assert_eq!(written[0]["id"], 2);
    assert_eq!(written[0]["result"]["resultType"], "complete");
    assert_eq!(
        written[0]["result"]["content"][0]["text"],
        r#"accepted {"name":"Ada"}"#
    );
    // A tampered state, an answer that does not fit: -32602, nothing echoed.
    let tampered = format!(
        r#""inputResponses":{{"q1":{{"action":"accept","content":{{"name":"Ada"}}}}}},"requestState":"{state}x","#
    );
    let mut out = Vec::new();
    let effect = engine.handle(modern_form_call(3, &tampered).as_bytes(), &mut out);
    assert!(matches!(effect, Effect::None));
    let refused: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(refused["error"]["code"], -32_602);
    assert!(!refused.to_string().contains(&state));
    for (id, extra) in [
        (
            4,
            r#""inputResponses":{"q1":{"action":"accept","content":{"name":"evil-evil-evil-evil"}}},"#,
        ),
        (5, r#""inputResponses":{"q1":12345},"#),
    ] {
        let (written, _) = run_asking(&mut engine, &modern_form_call(id, extra), |_| {
            panic!("asked")
        });
        assert_eq!(written[0]["error"]["code"], -32_602, "{extra}: {written:?}");
        assert!(!written[0].to_string().contains("evil"));
        assert!(!written[0].to_string().contains("12345"));
    }
    // inputResponses in a legacy session is a member tools/call does not define there.
    let mut legacy = asking_engine();
    initialize_with(&mut legacy, r#"{"elicitation":{}}"#);
    let mut out = Vec::new();
    let frame = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"form","inputResponses":{}}}"#;
    assert!(matches!(
        legacy.handle(frame.as_bytes(), &mut out),
        Effect::None
    ));
    assert!(String::from_utf8_lossy(&out).contains("-32602"));
}

#[test]
fn a_silent_client_times_out_and_is_told_to_stop() {
    let mut engine = asking_engine();
    initialize_with(&mut engine, r#"{"elicitation":{}}"#);
    let (written, _) = run_asking(&mut engine, FORM_CALL, |_| None);
    assert_eq!(written[0]["method"], "elicitation/create");
    assert_eq!(
        written[1],
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})
    );
    assert_eq!(
        written[2]["result"]["content"][0]["text"],
        "error: the client did not answer in time"
    );
    assert!(engine.asks.is_empty());
    // Its answer, late, is no answer to anything.
    let (_, effect) = send(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ada"}}}"#,
    );
    assert!(matches!(effect, Effect::None));
    assert!(engine.last_invalid);
}

#[test]
fn at_most_four_questions_wait_at_once() {
    let mut engine = asking_engine();
    initialize_with(&mut engine, r#"{"elicitation":{}}"#);
    // A client that never answers: four wait, the fifth is refused at once.
    let (written, _) = run_asking(
        &mut engine,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"five"}}"#,
        |_| None,
    );
    let count = |method: &str| {
        written
            .iter()
            .filter(|line| line["method"] == method)
            .count()
    };
    assert_eq!(
        count("elicitation/create"),
        crate::limits::MAX_OUTSTANDING_ASKS
    );
    assert_eq!(
        count("notifications/cancelled"),
        4,
        "the client is told at the call's end to stop asking"
    );
    let text = written.last().unwrap()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(text.matches("did not answer in time").count(), 4, "{text}");
    assert_eq!(text.matches("asked too much at once").count(), 1, "{text}");
}

#[test]
fn responses_nobody_asked_for_count_toward_the_cut_off() {
    let mut engine = asking_engine();
    initialize_with(&mut engine, r#"{"elicitation":{}}"#);
    let limit = Limits::default().max_consecutive_errors.get();
    let mut cut = false;
    for n in 0..limit {
        let frame = match n % 3 {
            0 => format!(r#"{{"jsonrpc":"2.0","id":{n},"result":{{}}}}"#),
            1 => r#"{"jsonrpc":"2.0","id":"1","result":{}}"#.to_owned(),
            _ => r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#.to_owned(),
        };
        let (reply, effect) = send(&mut engine, &frame);
        assert!(reply.is_none());
        cut = matches!(effect, Effect::CutOff);
    }
    assert!(cut, "only garbage: cut off at the limit");
}

/// One step a hostile peer (or its transport) takes against a session, for
/// [`the_engine_keeps_calls_in_flight_exactly_as_a_plain_map_of_ids_would`].
#[derive(Clone, Debug)]
enum PeerStep {
    /// `tools/call` with the `n`-th of three ids (`1`, `2`, `"1"`).
    Call(usize),
    /// `notifications/cancelled` for the `n`-th id.
    Cancel(usize),
    /// The `n`-th completion not yet handed to the engine, handed to it (any order).
    Complete(usize),
    /// A progress report with the `n`-th ticket ever issued (finished, cancelled or running).
    Progress(usize),
    /// A log message with the `n`-th ticket ever issued.
    Log(usize),
    /// A `ping` (any message the engine handles).
    Ping,
    /// Shutdown: every call in flight abandoned.
    Abandon,
}

fn peer_step() -> impl Strategy<Value = PeerStep> {
    prop_oneof![
        4 => (0..3usize).prop_map(PeerStep::Call),
        2 => (0..3usize).prop_map(PeerStep::Cancel),
        4 => any::<usize>().prop_map(PeerStep::Complete),
        2 => any::<usize>().prop_map(PeerStep::Progress),
        2 => any::<usize>().prop_map(PeerStep::Log),
        1 => Just(PeerStep::Ping),
        1 => Just(PeerStep::Abandon),
    ]
}

proptest! {
    /// The engine keeps the call started last apart from `in_flight` until it is next used
    /// (`Engine::settle`). Against a model that is the plain map the engine used before (id ->
    /// serial of the call owed a reply), every step of a hostile peer must see the same:
    /// duplicate ids refused, the cap on calls in flight, cancellation, completions in any
    /// order (stale ones silent, even when a newer call reuses the id), progress and logs
    /// only for a live call, shutdown returning exactly the live calls.
    #[test]
    fn the_engine_keeps_calls_in_flight_exactly_as_a_plain_map_of_ids_would(
        steps in proptest::collection::vec(peer_step(), 1..60)
    ) {
        let limits = Limits {
            max_in_flight: std::num::NonZeroUsize::new(2).unwrap(),
            max_consecutive_errors: std::num::NonZeroU32::MAX,
            tool_call_rate: None,
            cheap_method_rate: None,
            ..Limits::default()
        };
        let mut engine = Engine::new(server_with(limits, 0));
        initialize(&mut engine, "2025-11-25");
        let set = ask(
            &mut engine,
            r#"{"jsonrpc":"2.0","id":0,"method":"logging/setLevel","params":{"level":"debug"}}"#,
        );
        prop_assert_eq!(&set["result"], &json!({}));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let ids = ["1", "2", r#""1""#];
        let keys = [IdKey::Integer(1), IdKey::Integer(2), IdKey::String("1".into())];
        let id_values = [json!(1), json!(2), json!("1")];
        // The model: calls owed a reply, by id: (serial, log messages sent).
        let mut live: std::collections::BTreeMap<IdKey, (u64, u32)> = Default::default();
        let mut held: Vec<crate::handler::Completion> = Vec::new();
        let mut tickets: Vec<Ticket> = Vec::new();
        let start = std::time::Instant::now();
        let mut clock = 0u32;
        for step in steps {
            let mut out = Vec::new();
            match step {
                PeerStep::Call(n) => {
                    let frame = format!(
                        r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"t{}"}},"_meta":{{"progressToken":"p"}}}}}}"#,
                        ids[n], clock
                    );
                    clock = clock.saturating_add(1);
                    let effect = engine.handle(frame.as_bytes(), &mut out);
                    if live.contains_key(&keys[n]) {
                        let refused = reply(&out).unwrap();
                        prop_assert_eq!(&refused["error"]["code"], &json!(-32600), "duplicate id");
                        prop_assert!(matches!(effect, Effect::None));
                    } else if live.len() >= 2 {
                        let refused = reply(&out).unwrap();
                        prop_assert_eq!(&refused["error"]["code"], &json!(-31503), "over the cap");
                        prop_assert!(matches!(effect, Effect::None));
                    } else {
                        prop_assert!(out.is_empty());
                        let Effect::Start(call) = effect else {
                            panic!("expected a call, got {effect:?}")
                        };
                        prop_assert_eq!(&call.ticket().key, &keys[n]);
                        live.insert(keys[n].clone(), (call.ticket().serial, 0));
                        tickets.push(call.ticket().clone());
                        held.push(runtime.block_on(call.run(crate::handler::CallContext::detached())));
                    }
                }
                PeerStep::Cancel(n) => {
                    let frame = format!(
                        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{}}}}}"#,
                        ids[n]
                    );
                    let effect = engine.handle(frame.as_bytes(), &mut out);
                    prop_assert!(out.is_empty());
                    match live.remove(&keys[n]) {
                        Some((serial, _)) => {
                            let Effect::Cancel(ticket) = effect else {
                                panic!("expected a cancel, got {effect:?}")
                            };
                            prop_assert_eq!(ticket, Ticket { key: keys[n].clone(), serial });
                        }
                        None => prop_assert!(matches!(effect, Effect::None)),
                    }
                }
                PeerStep::Complete(k) => {
                    if held.is_empty() {
                        continue;
                    }
                    let completion = held.remove(k % held.len());
                    let ticket = completion.ticket.clone();
                    engine.complete(completion, &mut out);
                    let owed = live.get(&ticket.key).is_some_and(|(serial, _)| *serial == ticket.serial);
                    if owed {
                        live.remove(&ticket.key);
                        let answered = reply(&out).unwrap();
                        let n = keys.iter().position(|key| *key == ticket.key).unwrap();
                        prop_assert_eq!(&answered["id"], &id_values[n]);
                        prop_assert!(answered.get("result").is_some());
                    } else {
                        prop_assert!(out.is_empty(), "a stale completion answered: {}", String::from_utf8_lossy(&out));
                    }
                }
                PeerStep::Progress(k) => {
                    if tickets.is_empty() {
                        continue;
                    }
                    let ticket = tickets[k % tickets.len()].clone();
                    clock = clock.saturating_add(1);
                    let report = Progress {
                        ticket: ticket.clone(),
                        progress: f64::from(clock),
                        total: None,
                        message: None,
                    };
                    engine.progress(report, start + Duration::from_secs(u64::from(clock)), &mut out);
                    let owed = live.get(&ticket.key).is_some_and(|(serial, _)| *serial == ticket.serial);
                    if owed {
                        let told = reply(&out).unwrap();
                        prop_assert_eq!(&told["method"], &json!("notifications/progress"));
                    } else {
                        prop_assert!(out.is_empty(), "progress of a call not in flight");
                    }
                }
                PeerStep::Log(k) => {
                    if tickets.is_empty() {
                        continue;
                    }
                    let ticket = tickets[k % tickets.len()].clone();
                    engine.log(
                        LogMessage {
                            ticket: ticket.clone(),
                            level: LogLevel::Error,
                            text: "x".into(),
                        },
                        &mut out,
                    );
                    match live.get_mut(&ticket.key).filter(|(serial, _)| *serial == ticket.serial) {
                        Some((_, sent)) if *sent < crate::limits::MAX_LOG_MESSAGES_PER_CALL => {
                            *sent = sent.saturating_add(1);
                            let told = reply(&out).unwrap();
                            prop_assert_eq!(&told["method"], &json!("notifications/message"));
                        }
                        _ => prop_assert!(out.is_empty(), "a log of a call not in flight"),
                    }
                }
                PeerStep::Ping => {
                    let effect = engine.handle(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#, &mut out);
                    prop_assert!(reply(&out).unwrap().get("result").is_some());
                    prop_assert!(matches!(effect, Effect::None));
                }
                PeerStep::Abandon => {
                    let mut abandoned: Vec<(IdKey, u64)> = engine
                        .abandon_all()
                        .into_iter()
                        .map(|ticket| (ticket.key, ticket.serial))
                        .collect();
                    abandoned.sort();
                    let expected: Vec<(IdKey, u64)> =
                        live.iter().map(|(key, (serial, _))| (key.clone(), *serial)).collect();
                    prop_assert_eq!(abandoned, expected);
                    live.clear();
                }
            }
            prop_assert_eq!(engine.in_flight(), live.len());
        }
        // Whatever is left completes silently after shutdown.
        let _abandoned = engine.abandon_all();
        for completion in held {
            let mut out = Vec::new();
            engine.complete(completion, &mut out);
            prop_assert!(out.is_empty(), "answered after shutdown");
        }
        prop_assert_eq!(engine.in_flight(), 0);
    }
}

/// Issue 40: what the builder publishes beside the server's description reaches the
/// `initialize` result's `_meta`, and a 2026-07-28 result's `_meta` beside the server info,
/// which it cannot replace.
#[test]
fn server_info_meta_is_published_in_both_eras() {
    let mut meta = serde_json::Map::new();
    meta.insert("example.com/digest".into(), json!("sha256:00"));
    meta.insert(
        "io.modelcontextprotocol/serverInfo".into(),
        json!({"name": "forged"}),
    );
    let info = ServerInfo {
        name: "t".into(),
        version: "1".into(),
        title: None,
        meta: Some(meta),
    };
    let registry = Registry::new(Vec::new()).unwrap();
    let mut engine = Engine::new(shared(info, None, registry, Limits::default()));
    let legacy = initialize(&mut engine, "2025-11-25");
    assert_eq!(legacy["result"]["_meta"]["example.com/digest"], "sha256:00");
    let modern = ask(
        &mut engine,
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{MODERN_META}}}}}"#
        ),
    );
    let meta = &modern["result"]["_meta"];
    assert_eq!(meta["example.com/digest"], "sha256:00");
    assert_eq!(
        meta["io.modelcontextprotocol/serverInfo"],
        json!({"name": "t", "version": "1"})
    );
}
