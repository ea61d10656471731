//! Tasks (2025-11-25) through the engine: creation, reads, the wait of `tasks/result`,
//! cancel, the tool modes, and owners kept apart.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::handler::CallContext;
use crate::limits::Limits;
use crate::tools::{NoArguments, Tool};
use crate::{Server, TaskMode};

fn server() -> Server {
    let slow = Tool::builder("slow")
        .description("Takes a while")
        .task(TaskMode::Optional)
        .handler(|_: NoArguments, context: CallContext| async move {
            context.progress(1.0, Some(2.0), Some("half"));
            tokio::time::sleep(Duration::from_millis(300)).await;
            "slept"
        });
    let never = Tool::builder("never")
        .description("No tasks")
        .handler(|_: NoArguments| async { "plain" });
    let always = Tool::builder("always")
        .description("Tasks only")
        .task(TaskMode::Always)
        .handler(|_: NoArguments| async { "tasked" });
    Server::builder("tasks", "1.0.0")
        .tool(slow)
        .tool(never)
        .tool(always)
        .build()
        .unwrap()
}

fn send(engine: &mut Engine, frame: &Value) -> (Option<Value>, Effect) {
    let mut out = Vec::new();
    let effect = engine.handle(frame.to_string().as_bytes(), &mut out);
    let reply = (!out.is_empty()).then(|| serde_json::from_slice(&out).unwrap());
    (reply, effect)
}

fn ask(engine: &mut Engine, method: &str, params: Value) -> Value {
    let (reply, effect) = send(
        engine,
        &json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}),
    );
    assert!(matches!(effect, Effect::None), "{method}: {effect:?}");
    reply.expect("a reply")
}

fn session(server: &Server, version: &str) -> (Engine, Value) {
    let mut engine = server.engine();
    let init = ask(
        &mut engine,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let (none, _) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert!(none.is_none());
    (engine, init)
}

async fn finish(engine: &mut Engine, effect: Effect) -> Value {
    let Effect::Start(call) = effect else {
        panic!("expected a call, got {effect:?}")
    };
    let completion = call.run(CallContext::detached()).await;
    let mut out = Vec::new();
    engine.complete(completion, &mut out);
    serde_json::from_slice(&out).unwrap()
}

#[tokio::test]
async fn a_task_is_created_read_waited_for_and_its_result_names_it() {
    let server = server();
    let (mut engine, init) = session(&server, "2025-11-25");
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    let tools = ask(&mut engine, "tools/list", json!({}));
    let support: Vec<Value> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["execution"]["taskSupport"].clone())
        .collect();
    assert_eq!(support, [json!("optional"), Value::Null, json!("required")]);

    let created = ask(
        &mut engine,
        "tools/call",
        json!({"name": "slow", "arguments": {}, "task": {"ttl": 60_000}}),
    );
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working");
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 64);
    assert_eq!(task["pollInterval"], 1000);
    assert!(task["ttl"].as_u64().unwrap() >= 60_000);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let got = ask(&mut engine, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "working");
    assert_eq!(got["result"]["_meta"]["airlock/progress"]["progress"], 1.0);
    assert_eq!(
        got["result"]["_meta"]["airlock/progress"]["message"],
        "half"
    );
    let listed = ask(&mut engine, "tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id.as_str());

    // tasks/result blocks: it is a call in flight until the task ends.
    let (reply, effect) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "id": "r", "method": "tasks/result", "params": {"taskId": id}}),
    );
    assert!(reply.is_none());
    assert_eq!(engine.in_flight(), 1);
    let result = finish(&mut engine, effect).await;
    assert_eq!(result["id"], "r");
    assert_eq!(result["result"]["content"][0]["text"], "slept");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let got = ask(&mut engine, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "completed");
    // Once ended, tasks/result answers at once, the same.
    let again = ask(&mut engine, "tasks/result", json!({"taskId": id}));
    assert_eq!(again["result"]["content"], result["result"]["content"]);
    // A finished task cannot be cancelled (MUST -32602), and stays completed.
    let cancel = ask(&mut engine, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancel["error"]["code"], -32602);
    let got = ask(&mut engine, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "completed");
}

#[tokio::test]
async fn cancel_ends_the_run_and_a_waiting_result_gets_the_cancelled_answer() {
    let server = server();
    let (mut engine, _) = session(&server, "2025-11-25");
    let created = ask(
        &mut engine,
        "tools/call",
        json!({"name": "slow", "task": {}}),
    );
    let id = created["result"]["task"]["taskId"].clone();
    let (_, effect) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "id": "r", "method": "tasks/result", "params": {"taskId": id}}),
    );
    let cancelled = ask(&mut engine, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["result"]["status"], "cancelled");
    assert_eq!(
        cancelled["result"]["statusMessage"],
        "The task was cancelled."
    );
    let result = finish(&mut engine, effect).await;
    assert_eq!(result["result"]["isError"], true);
    let got = ask(&mut engine, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "cancelled");
}

#[tokio::test]
async fn tool_modes_decide_and_a_server_without_tasks_ignores_the_augmentation() {
    let server = server();
    let (mut engine, _) = session(&server, "2025-11-25");
    let forbidden = ask(
        &mut engine,
        "tools/call",
        json!({"name": "never", "task": {}}),
    );
    assert_eq!(forbidden["error"]["code"], -32601);
    let required = ask(&mut engine, "tools/call", json!({"name": "always"}));
    assert_eq!(required["error"]["code"], -32601);
    let (none, effect) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "never"}}),
    );
    assert!(none.is_none());
    assert_eq!(
        finish(&mut engine, effect).await["result"]["content"][0]["text"],
        "plain"
    );
    for bad in [
        json!([]),
        json!({"ttl": -1}),
        json!({"ttl": "x"}),
        json!({"other": 1}),
    ] {
        let refused = ask(
            &mut engine,
            "tools/call",
            json!({"name": "slow", "task": bad}),
        );
        assert_eq!(refused["error"]["code"], -32602, "{bad}");
    }

    // Older revisions: no tasks declared, no tasks/* methods, required tools refused.
    let (mut older, init) = session(&server, "2025-06-18");
    assert!(init["result"]["capabilities"].get("tasks").is_none());
    let tools = ask(&mut older, "tools/list", json!({}));
    assert!(tools["result"]["tools"][0].get("execution").is_none());
    let get = ask(&mut older, "tasks/get", json!({"taskId": "0".repeat(64)}));
    assert_eq!(get["error"]["code"], -32601);
}

#[tokio::test]
async fn another_session_gets_for_a_task_exactly_what_an_unknown_id_gets() {
    let server = server();
    let (mut mine, _) = session(&server, "2025-11-25");
    let (mut theirs, _) = session(&server, "2025-11-25");
    let created = ask(&mut mine, "tools/call", json!({"name": "slow", "task": {}}));
    let id = created["result"]["task"]["taskId"].clone();
    let unknown = json!("0".repeat(64));
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let foreign = ask(&mut theirs, method, json!({"taskId": id}));
        let never = ask(&mut theirs, method, json!({"taskId": unknown}));
        assert_eq!(foreign, never, "{method}");
        assert_eq!(foreign["error"]["code"], -32602);
        let malformed = ask(&mut theirs, method, json!({"taskId": 7}));
        assert_eq!(malformed, never, "{method}");
    }
    let listed = ask(&mut theirs, "tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"], json!([]));
    let got = ask(&mut mine, "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "working");
    // The session's end cancels and forgets its tasks.
    let shared = Arc::clone(mine.shared());
    let owner = mine.owner.clone().unwrap();
    assert_eq!(shared.tasks.list(&owner).len(), 1);
    drop(mine);
    assert!(shared.tasks.list(&owner).is_empty());
}

#[tokio::test]
async fn tasks_past_their_bounds_are_refused_with_the_bound() {
    let slow = Tool::builder("slow")
        .description("Takes a while")
        .task(TaskMode::Always)
        .handler(|_: NoArguments| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            "slept"
        });
    let server = Server::builder("tasks", "1.0.0")
        .limits(Limits {
            max_tasks_running_per_client: std::num::NonZeroUsize::new(1).unwrap(),
            ..Limits::default()
        })
        .tool(slow)
        .build()
        .unwrap();
    let (mut engine, _) = session(&server, "2025-11-25");
    let first = ask(
        &mut engine,
        "tools/call",
        json!({"name": "slow", "task": {}}),
    );
    assert_eq!(first["result"]["task"]["status"], "working");
    let second = ask(
        &mut engine,
        "tools/call",
        json!({"name": "slow", "task": {}}),
    );
    assert_eq!(second["error"]["code"], -31503);
    assert_eq!(second["error"]["message"], "Too many tasks; retry later.");
    assert_eq!(
        second["error"]["data"],
        json!({"limit": "max_tasks_running_per_client", "value": 1})
    );
}

#[tokio::test]
async fn polling_is_charged_to_the_cheap_method_quota() {
    use crate::limits::Rate;
    use crate::quota::{QuotaClock, Quotas};
    let limits = Limits {
        cheap_method_rate: Some(Rate::new_const(60, 3)),
        ..Limits::default()
    };
    let tool = Tool::builder("slow")
        .description("Takes a while")
        .task(TaskMode::Optional)
        .handler(|_: NoArguments| async { "done" });
    let registry = crate::tools::Registry::new(vec![tool]).unwrap();
    let quotas = Quotas::with_clock(&limits, [], QuotaClock::manual());
    let info = crate::response::ServerInfo {
        name: "t".into(),
        version: "1".into(),
        title: None,
        meta: None,
    };
    let mut engine = Engine::new(crate::engine::shared_with_quotas(
        info, None, registry, limits, quotas,
    ));
    // The handshake's initialize is cheap too: the burst of 3 leaves two polls.
    let init = ask(
        &mut engine,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let (none, effect) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert!(none.is_none() && matches!(effect, Effect::None));
    let unknown = json!({"taskId": "0".repeat(64)});
    assert_eq!(
        ask(&mut engine, "tasks/get", unknown.clone())["error"]["code"],
        -32602
    );
    assert!(ask(&mut engine, "tasks/list", json!({}))["error"].is_null());
    let flooded = ask(&mut engine, "tasks/get", unknown);
    assert_eq!(flooded["error"]["code"], -31429, "{flooded}");
    assert!(flooded["error"]["data"]["retryAfterMs"].as_u64().unwrap() > 0);
}

/// A 2026-07-28 request's params: `params` with `_meta` naming the version and the client's
/// capabilities, the tasks extension declared when `declared`.
fn modern(mut params: Value, declared: bool) -> Value {
    let extensions = if declared {
        json!({"io.modelcontextprotocol/tasks": {}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    });
    params
}

fn modern_server() -> Server {
    let slow = Tool::builder("slow")
        .description("Runs past the inline wait")
        .task(TaskMode::Optional)
        .handler(|_: NoArguments| async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            "slept"
        });
    let quick = Tool::builder("quick")
        .description("Ends at once")
        .task(TaskMode::Optional)
        .handler(|_: NoArguments| async { "quick" });
    let failing = Tool::builder("failing")
        .description("An error result")
        .task(TaskMode::Always)
        .handler(|_: NoArguments| async { crate::ToolOutput::error("no") });
    let never = Tool::builder("never")
        .description("No tasks")
        .handler(|_: NoArguments| async { "plain" });
    Server::builder("tasks", "1.0.0")
        .tool(slow)
        .tool(quick)
        .tool(failing)
        .tool(never)
        .build()
        .unwrap()
}

fn call(name: &str, declared: bool) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": modern(json!({"name": name, "arguments": {}}), declared)})
}

#[tokio::test]
async fn the_2026_extension_is_discovered_and_decides_by_mode_and_inline_wait() {
    let server = modern_server();
    let mut engine = server.engine();
    let found = ask(&mut engine, "server/discover", modern(json!({}), true));
    assert_eq!(
        found["result"]["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    // Not declared: an optional tool is an ordinary call, an always one is -32021.
    let (reply, effect) = send(&mut engine, &call("quick", false));
    assert!(reply.is_none());
    assert_eq!(
        finish(&mut engine, effect).await["result"]["content"][0]["text"],
        "quick"
    );
    let (reply, _) = send(&mut engine, &call("failing", false));
    let reply = reply.unwrap();
    assert_eq!(reply["error"]["code"], -32021);
    assert_eq!(
        reply["error"]["data"],
        json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
    );
    // Declared, a run that ends within the wait is answered plainly and leaves no task.
    let (reply, effect) = send(&mut engine, &call("quick", true));
    assert!(reply.is_none());
    let answered = finish(&mut engine, effect).await;
    assert_eq!(answered["result"]["content"][0]["text"], "quick");
    assert_eq!(answered["result"]["resultType"], "complete");
    // A never tool runs as a call whatever the client declared.
    let (_, effect) = send(&mut engine, &call("never", true));
    assert_eq!(
        finish(&mut engine, effect).await["result"]["content"][0]["text"],
        "plain"
    );
    // An always tool's handle comes at once: flat, resultType "task".
    let created = ask(
        &mut engine,
        "tools/call",
        modern(json!({"name": "failing"}), true),
    );
    let created = &created["result"];
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert_eq!(created["pollIntervalMs"], 1000);
    assert!(created["ttlMs"].as_u64().is_some());
    assert!(created.get("task").is_none() && created.get("result").is_none());
    assert_eq!(
        created["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "tasks"
    );
    let id = created["taskId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // An error result is `completed` in this era, its result inline.
    let got = ask(
        &mut engine,
        "tasks/get",
        modern(json!({"taskId": id}), true),
    );
    assert_eq!(got["result"]["status"], "completed");
    assert_eq!(got["result"]["resultType"], "complete");
    assert_eq!(got["result"]["result"]["isError"], true);
    assert_eq!(got["result"]["result"]["content"][0]["text"], "no");
}

#[tokio::test]
async fn a_2026_task_outliving_the_wait_is_polled_to_its_inline_result() {
    let server = modern_server();
    let mut engine = server.engine();
    let (reply, effect) = send(&mut engine, &call("slow", true));
    assert!(reply.is_none());
    let created = finish(&mut engine, effect).await;
    assert_eq!(created["id"], 7);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let got = ask(
        &mut engine,
        "tasks/get",
        modern(json!({"taskId": id}), true),
    );
    assert_eq!(got["result"]["status"], "working");
    assert!(got["result"].get("result").is_none());
    tokio::time::sleep(Duration::from_millis(800)).await;
    let got = ask(
        &mut engine,
        "tasks/get",
        modern(json!({"taskId": id}), true),
    );
    assert_eq!(got["result"]["status"], "completed");
    assert_eq!(got["result"]["result"]["content"][0]["text"], "slept");
    // Cancel of an ended task is acknowledged and changes nothing; update is acknowledged.
    for method in ["tasks/cancel", "tasks/update"] {
        let ack = ask(&mut engine, method, modern(json!({"taskId": id}), true));
        assert_eq!(ack["result"]["resultType"], "complete", "{method}: {ack}");
        assert!(ack["result"].get("status").is_none());
    }
    let got = ask(
        &mut engine,
        "tasks/get",
        modern(json!({"taskId": id}), true),
    );
    assert_eq!(got["result"]["status"], "completed");
    // Without the extension declared, every task method is -32021; unknown ids -32602;
    // 2025-11-25's methods do not exist in this era.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let refused = ask(&mut engine, method, modern(json!({"taskId": id}), false));
        assert_eq!(refused["error"]["code"], -32021, "{method}");
        let unknown = ask(
            &mut engine,
            method,
            modern(json!({"taskId": "0".repeat(64)}), true),
        );
        assert_eq!(unknown["error"]["code"], -32602, "{method}");
    }
    for method in ["tasks/result", "tasks/list"] {
        let refused = ask(&mut engine, method, modern(json!({"taskId": id}), true));
        assert_eq!(refused["error"]["code"], -32601, "{method}");
    }
    // Another session (another owner) gets what an unknown id gets.
    let mut other = server.engine();
    let foreign = ask(&mut other, "tasks/get", modern(json!({"taskId": id}), true));
    let unknown = ask(
        &mut other,
        "tasks/get",
        modern(json!({"taskId": "0".repeat(64)}), true),
    );
    assert_eq!(foreign["error"], unknown["error"]);
}

#[tokio::test]
async fn a_2026_cancel_stops_the_run_and_a_dropped_wait_forgets_its_task() {
    let server = modern_server();
    let mut engine = server.engine();
    let (_, effect) = send(&mut engine, &call("slow", true));
    let created = finish(&mut engine, effect).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let ack = ask(
        &mut engine,
        "tasks/cancel",
        modern(json!({"taskId": id}), true),
    );
    assert_eq!(ack["result"]["resultType"], "complete");
    let got = ask(
        &mut engine,
        "tasks/get",
        modern(json!({"taskId": id}), true),
    );
    assert_eq!(got["result"]["status"], "cancelled");
    assert!(got["result"].get("result").is_none());
    // A call cancelled while it waits: its task is gone with it.
    let (_, effect) = send(&mut engine, &call("slow", true));
    let Effect::Start(waiting) = effect else {
        panic!("a wait")
    };
    let before = engine.shared.tasks.len();
    let (_, cancel) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}),
    );
    assert!(matches!(cancel, Effect::Cancel(_)));
    drop(waiting);
    assert_eq!(engine.shared.tasks.len(), before - 1);
}

#[tokio::test]
async fn polls_of_a_forgotten_task_do_not_cut_the_client_off() {
    let server = server();
    let (mut engine, _) = session(&server, "2025-11-25");
    let forgotten = "0".repeat(64);
    for id in 0..(crate::limits::MAX_CONSECUTIVE_ERRORS + 10) {
        let (reply, effect) = send(
            &mut engine,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
                    "params": {"taskId": forgotten}}),
        );
        assert!(matches!(effect, Effect::None), "{id}: {effect:?}");
        let code = reply.unwrap()["error"]["code"].as_i64().unwrap();
        assert!(code == -32602 || code == -31429, "{code}");
    }
}

/// rmcp 3's default lifecycle declares the extension in a legacy `initialize`: that mix is in
/// neither revision, so the session gets 2025-11-25 tasks only (an ordinary call unless it
/// asks with `params.task`).
#[tokio::test]
async fn the_extension_is_not_served_in_a_legacy_session() {
    let server = modern_server();
    let mut engine = server.engine();
    let init = ask(
        &mut engine,
        "initialize",
        json!({"protocolVersion": "2025-11-25",
               "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
               "clientInfo": {"name": "rmcp", "version": "3"}}),
    );
    assert!(init["result"]["capabilities"].get("extensions").is_none());
    let (none, _) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert!(none.is_none());
    let (reply, effect) = send(
        &mut engine,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "slow", "arguments": {}}}),
    );
    assert!(reply.is_none());
    let plain = finish(&mut engine, effect).await;
    assert_eq!(plain["result"]["content"][0]["text"], "slept", "{plain}");
}

/// A tokenless HTTP request of 2026-07-28 has no owner a later request could prove: the
/// extension is not offered to it and its calls are ordinary.
#[cfg(feature = "http")]
#[tokio::test]
async fn the_extension_is_not_served_to_a_tokenless_http_request() {
    let server = modern_server();
    let tokenless = Client::Http {
        address: std::net::IpAddr::from([127, 0, 0, 1]),
        identity: None,
    };
    let mut engine = Engine::for_client(Arc::clone(&server.engine().shared), tokenless);
    let found = ask(&mut engine, "server/discover", modern(json!({}), true));
    assert!(
        found["result"]["capabilities"].get("extensions").is_none(),
        "{found}"
    );
    let (reply, effect) = send(&mut engine, &call("slow", true));
    assert!(reply.is_none());
    let plain = finish(&mut engine, effect).await;
    assert_eq!(plain["result"]["content"][0]["text"], "slept", "{plain}");
    let refused = ask(
        &mut engine,
        "tasks/get",
        modern(json!({"taskId": "0".repeat(64)}), true),
    );
    assert_eq!(refused["error"]["code"], -32601);
}
