//! 2026-07-28 calls that need the client's input (multi round-trip requests), against the
//! conformance fixture server over real HTTP and real pipes: the call ends with an
//! `input_required` result, the retry carries the answers and the state, and every hostile
//! retry (a state tampered with, forged, replayed onto another call or brought to another
//! server; answers that do not fit; bounds crossed) is refused with a fixed text that echoes
//! nothing it carried.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::support::http::{HttpServer, Reply, post};
use crate::support::stdio::{self, Server};

const CANARY: &str = "canary-7f3a9c1e";

/// A modern `_meta` declaring `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    })
}

fn all_capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

/// A modern `method` request over HTTP whose params are `params` plus `_meta` of
/// `capabilities`, with the headers that must match it.
fn modern_call(
    server: &HttpServer,
    id: i64,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> Reply {
    params["_meta"] = meta(capabilities);
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    post(
        server.addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Mcp-Name", &name),
        ],
        &body.to_string(),
    )
}

fn call(server: &HttpServer, id: i64, params: Value) -> Reply {
    modern_call(server, id, "tools/call", params, all_capabilities())
}

/// The `input_required` result of a reply: its requests and its state.
fn input_required(reply: &Reply) -> (Value, String) {
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let result = &reply.json()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let state = result["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    (result["inputRequests"].clone(), state)
}

fn text(reply: &Reply) -> String {
    let body = reply.json();
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// Asserts a refusal: `status`, `code`, the fixed message, and none of `carried` in it.
fn refused(reply: &Reply, status: u16, code: i64, carried: &[&str]) {
    assert_eq!(
        reply.status,
        status,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.code(), code);
    let body = String::from_utf8_lossy(&reply.body);
    for text in carried {
        assert!(!body.contains(text), "echoed {text:.40}: {body}");
    }
}

#[test]
fn a_call_takes_its_answers_over_three_rounds_and_each_state_carries_the_last() {
    let server = HttpServer::fixtures();
    let tool = json!({"name": "test_input_required_result_multi_round", "arguments": {}});
    let (requests, state_1) = input_required(&call(&server, 1, tool.clone()));
    assert_eq!(requests["step1"]["method"], "elicitation/create");
    assert_eq!(
        requests["step1"]["params"]["message"],
        "Step 1: What is your name?"
    );
    let mut retry = tool.clone();
    retry["inputResponses"] = json!({"step1": accept(json!({"name": "Alice"}))});
    retry["requestState"] = json!(state_1);
    let (requests, state_2) = input_required(&call(&server, 2, retry));
    assert_eq!(
        requests["step2"]["params"]["message"],
        "Step 2: What is your favorite color?"
    );
    assert_ne!(state_1, state_2);
    // The last round brings only step2's answer: step1's comes from the state.
    let mut last = tool.clone();
    last["inputResponses"] = json!({"step2": accept(json!({"color": "blue"}))});
    last["requestState"] = json!(state_2);
    assert_eq!(text(&call(&server, 3, last)), "Alice likes blue");
    // Several questions in one round, of three kinds, answered together.
    let many = json!({"name": "test_input_required_result_multiple_inputs", "arguments": {}});
    let (requests, state) = input_required(&call(&server, 4, many.clone()));
    let methods: Vec<&str> = requests
        .as_object()
        .unwrap()
        .values()
        .map(|request| request["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods.len(),
        3,
        "elicitation, sampling and roots at once: {requests}"
    );
    let mut answers = json!({});
    for (key, request) in requests.as_object().unwrap() {
        answers[key] = match request["method"].as_str().unwrap() {
            "elicitation/create" => accept(json!({"name": "Ada"})),
            "sampling/createMessage" => {
                json!({"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"})
            }
            _ => json!({"roots": [{"uri": "file:///work", "name": "work"}]}),
        };
    }
    let mut retry = many;
    retry["inputResponses"] = answers;
    retry["requestState"] = json!(state);
    assert_eq!(
        text(&call(&server, 5, retry)),
        "Hi Ada; roots: file:///work"
    );
}

#[test]
fn a_prompt_asks_before_it_renders_and_a_given_argument_is_not_asked() {
    let server = HttpServer::fixtures();
    let get =
        |id, params: Value| modern_call(&server, id, "prompts/get", params, all_capabilities());
    let prompt = json!({"name": "test_input_required_result_prompt"});
    let (requests, state) = input_required(&get(1, prompt.clone()));
    assert_eq!(
        requests["user_context"]["params"]["message"],
        "What context should the prompt use?"
    );
    let mut retry = prompt.clone();
    retry["inputResponses"] = json!({"user_context": accept(json!({"context": "tests"}))});
    retry["requestState"] = json!(state);
    let reply = get(2, retry).json();
    assert_eq!(
        reply["result"]["messages"][0]["content"]["text"],
        "Use this context: tests"
    );
    let given = get(
        3,
        json!({"name": "test_input_required_result_prompt", "arguments": {"context": "given"}}),
    )
    .json();
    assert_eq!(
        given["result"]["messages"][0]["content"]["text"],
        "Use this context: given"
    );
}

/// A state whose payload says something else, under the signature of the real one.
fn with_payload(state: &str, change: impl FnOnce(&mut Value)) -> String {
    let (payload, tag) = state.split_once('.').unwrap();
    let mut decoded: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    change(&mut decoded);
    format!(
        "{}.{tag}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&decoded).unwrap())
    )
}

#[test]
fn a_state_tampered_with_forged_replayed_or_brought_elsewhere_is_refused() {
    let server = HttpServer::fixtures();
    let tool = json!({"name": "test_input_required_result_multi_round", "arguments": {}});
    let (_, state_1) = input_required(&call(&server, 1, tool.clone()));
    let mut retry = tool.clone();
    retry["inputResponses"] = json!({"step1": accept(json!({"name": CANARY}))});
    retry["requestState"] = json!(state_1);
    let (_, state_2) = input_required(&call(&server, 2, retry));
    let answer = json!({"step2": accept(json!({"color": "red"}))});
    let mut payload_2 = state_2.split_once('.').unwrap().0.to_owned();
    payload_2.push('A');
    let hostile = [
        format!("{state_2}-TAMPERED"),
        state_2[..state_2.len() - 3].to_owned(),
        format!("{payload_2}.{}", state_2.split_once('.').unwrap().1),
        // The answers changed, the round skipped, the expiry pushed out, under the old tag.
        with_payload(&state_2, |payload| {
            payload["a"]["step1"]["content"]["name"] = json!("Mallory")
        }),
        with_payload(&state_2, |payload| payload["r"] = json!(0)),
        with_payload(&state_2, |payload| payload["x"] = json!(u64::MAX)),
        // Not a state at all.
        String::new(),
        "..".to_owned(),
        "%00".repeat(100),
        "a".repeat(300 * 1024),
    ];
    for (n, state) in hostile.iter().enumerate() {
        let mut retry = tool.clone();
        retry["inputResponses"] = answer.clone();
        retry["requestState"] = json!(state);
        let reply = call(&server, 10 + i64::try_from(n).unwrap(), retry);
        refused(&reply, 400, -32602, &[CANARY, "Mallory", &state_2]);
        assert_eq!(
            reply.json()["error"]["message"],
            "Invalid params: requestState is not one this server issued for this request, or it has expired."
        );
    }
    // The state of one call is no good for another tool, or for other arguments.
    let mut replay = json!({"name": "test_input_required_result_tampered_state", "arguments": {}});
    replay["inputResponses"] = answer.clone();
    replay["requestState"] = json!(state_2);
    refused(&call(&server, 30, replay), 400, -32602, &[CANARY]);
    let asked = json!({"name": "test_elicitation", "arguments": {"message": "A"}});
    let (_, state_a) = input_required(&call(&server, 34, asked));
    let mut other_arguments = json!({"name": "test_elicitation", "arguments": {"message": "B"}});
    other_arguments["requestState"] = json!(state_a);
    refused(&call(&server, 35, other_arguments), 400, -32602, &[CANARY]);
    // Nor on a server of its own key (each draws one at start).
    let elsewhere = HttpServer::fixtures();
    let mut replay = tool.clone();
    replay["inputResponses"] = answer.clone();
    replay["requestState"] = json!(state_2);
    refused(
        &call(&elsewhere, 31, replay.clone()),
        400,
        -32602,
        &[CANARY],
    );
    // Nor in the legacy era, which has no such members.
    let session = crate::support::http::initialize(server.addr);
    let body =
        json!({"jsonrpc": "2.0", "id": 32, "method": "tools/call", "params": replay}).to_string();
    let reply = post(
        server.addr,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        &body,
    );
    assert_eq!(
        reply.code(),
        -32602,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(!String::from_utf8_lossy(&reply.body).contains(CANARY));
    // The genuine state still works: refusals consumed nothing.
    let mut genuine = tool;
    genuine["inputResponses"] = answer;
    genuine["requestState"] = json!(state_2);
    assert_eq!(
        text(&call(&server, 33, genuine)),
        format!("{CANARY} likes red")
    );
}

#[test]
fn answers_that_do_not_fit_and_bounds_crossed_are_refused_without_echo() {
    let server = HttpServer::fixtures();
    let tool = json!({"name": "test_input_required_result_elicitation", "arguments": {}});
    let long = CANARY.repeat(10);
    let hostile = [
        json!({"user_name": 12345}),
        json!({"user_name": null}),
        json!({"user_name": accept(json!({"name": CANARY, "admin": true}))}),
        json!({"user_name": accept(json!({"name": long}))}),
        json!({"user_name": accept(json!({"name": [CANARY]}))}),
        json!({"user_name": {"action": CANARY}}),
        json!({"user_name": {"action": "accept", "content": CANARY}}),
        json!({"user_name": accept(json!({"name": "x".repeat(70 * 1024)}))}),
    ];
    for (n, responses) in hostile.iter().enumerate() {
        let mut retry = tool.clone();
        retry["inputResponses"] = responses.clone();
        let reply = call(&server, i64::try_from(n).unwrap(), retry);
        refused(&reply, 400, -32602, &[CANARY, "12345"]);
        assert_eq!(
            reply.json()["error"]["message"],
            "Invalid params: an input response does not answer its input request."
        );
    }
    // Shapes refused before the tool runs.
    let many: serde_json::Map<String, Value> = (0..33)
        .map(|n| (format!("{CANARY}-{n}"), json!({})))
        .collect();
    for responses in [
        json!(null),
        json!([CANARY]),
        json!(CANARY),
        Value::Object(many),
    ] {
        let mut retry = tool.clone();
        retry["inputResponses"] = responses;
        refused(&call(&server, 40, retry), 400, -32602, &[CANARY]);
    }
    let mut retry = tool.clone();
    retry["requestState"] = json!({"forged": CANARY});
    refused(&call(&server, 41, retry), 400, -32602, &[CANARY]);
    // Answers to questions the tool does not ask are ignored, and a declined form is an answer.
    let mut retry = tool;
    retry["inputResponses"] = json!({
        "user_name": {"action": "decline"},
        CANARY: accept(json!({"name": "x"})),
    });
    assert_eq!(text(&call(&server, 42, retry)), "No name given.");
}

#[test]
fn a_question_the_client_did_not_declare_is_minus_32021_with_status_400() {
    let server = HttpServer::fixtures();
    let tool = json!({"name": "test_missing_capability", "arguments": {}});
    let reply = modern_call(
        &server,
        1,
        "tools/call",
        tool.clone(),
        json!({"elicitation": {}}),
    );
    refused(&reply, 400, -32021, &[]);
    assert_eq!(
        reply.json()["error"],
        json!({"code": -32021, "message": "Missing required client capability.",
               "data": {"requiredCapabilities": {"sampling": {}}}})
    );
    // With the capability, the same call asks instead.
    let (requests, _) = input_required(&modern_call(
        &server,
        2,
        "tools/call",
        tool,
        json!({"sampling": {}}),
    ));
    assert_eq!(requests["q1"]["method"], "sampling/createMessage");
    // A tool that asks only what was declared.
    let capabilities = json!({"name": "test_input_required_result_capabilities", "arguments": {}});
    let (requests, _) = input_required(&modern_call(
        &server,
        3,
        "tools/call",
        capabilities,
        json!({"sampling": {}}),
    ));
    assert_eq!(requests.as_object().unwrap().len(), 1);
    assert_eq!(requests["q1"]["method"], "sampling/createMessage");
}

#[test]
fn a_modern_call_over_stdio_takes_two_rounds_too() {
    let mut server = Server::start(&stdio::example("conformance_server"), &[]);
    let params = |extra: Value| {
        let mut params =
            json!({"name": "test_input_required_result_request_state", "arguments": {}});
        params["_meta"] = meta(all_capabilities());
        if let Value::Object(extra) = extra {
            for (key, value) in extra {
                params[key] = value;
            }
        }
        params
    };
    let reply = server.request(&stdio::request(1, "tools/call", params(json!({}))));
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    let state = reply["result"]["requestState"].as_str().unwrap().to_owned();
    assert_eq!(
        reply["result"]["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let retry = params(json!({
        "inputResponses": {"confirm": accept(json!({"ok": true}))},
        "requestState": state,
    }));
    let reply = server.request(&stdio::request(2, "tools/call", retry));
    assert_eq!(
        reply["result"]["content"][0]["text"], "state-ok: confirmed in round 1",
        "{reply}"
    );
}
