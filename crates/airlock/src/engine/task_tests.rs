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
