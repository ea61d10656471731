//! A tool asks the client (elicitation, sampling) over real pipes: the conformance fixture
//! server (`crates/airlock/examples/conformance_server.rs`, stdio) sends the request on
//! stdout, this test answers on stdin, and the tool's reply says what it got. Hostile answers
//! reach the tool as a fixed error and are never echoed.

use serde_json::{Value, json};

use crate::support::stdio::{self, Server, text};

fn fixture() -> Server {
    Server::start(&stdio::example("conformance_server"), &[])
}

/// A legacy handshake declaring `capabilities`.
fn initialize(server: &mut Server, capabilities: Value) {
    let reply = server.request(
        &json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "clientInfo": {"name": "it", "version": "1"}}
        })
        .to_string(),
    );
    assert!(reply.get("result").is_some(), "{reply}");
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

/// Calls `tool`; the server's request (the next line) is answered by `answer(id)`; returns
/// the request and the call's reply.
fn call_answering(
    server: &mut Server,
    tool: &str,
    arguments: Value,
    answer: impl FnOnce(&Value) -> String,
) -> (Value, Value) {
    server.send(&stdio::call("call-1", tool, arguments));
    let request = server.recv();
    server.send(&answer(&request["id"]));
    let reply = server.recv();
    (request, reply)
}

/// A client's answer to the request with the given id.
type Answerer = Box<dyn Fn(&Value) -> String>;

#[test]
fn a_tool_elicits_and_samples_over_stdio() {
    let mut server = fixture();
    initialize(&mut server, json!({"elicitation": {}, "sampling": {}}));
    let (request, reply) = call_answering(
        &mut server,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        |id| {
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "action": "accept", "content": {"username": "ada", "email": "ada@example.com"}
            }})
            .to_string()
        },
    );
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Who are you?");
    assert_eq!(
        request["params"]["requestedSchema"]["required"],
        json!(["username", "email"])
    );
    assert!(request["id"].is_u64(), "{request}");
    assert_eq!(reply["id"], "call-1");
    assert_eq!(
        text(&reply),
        r#"User response: action=accept, content={"email":"ada@example.com","username":"ada"}"#
    );
    let (request, reply) = call_answering(
        &mut server,
        "test_sampling",
        json!({"prompt": "Say hi"}),
        |id| {
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "role": "assistant", "content": {"type": "text", "text": "hi there"},
                "model": "test-model", "stopReason": "endTurn"
            }})
            .to_string()
        },
    );
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(
        request["params"]["messages"][0]["content"]["text"],
        "Say hi"
    );
    assert_eq!(text(&reply), "LLM response: hi there");
}

#[test]
fn hostile_answers_reach_the_tool_as_fixed_errors_and_are_never_echoed() {
    let mut server = fixture();
    initialize(&mut server, json!({"elicitation": {}}));
    let canary = "canary-7f3a-in-the-answer";
    let hostile: Vec<Answerer> = vec![
        // A field the form lacks.
        Box::new(move |id| {
            json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept",
                "content": {"username": "a", "email": "b", canary: 1}}})
            .to_string()
        }),
        // A required field missing; a value of the wrong kind.
        Box::new(|id| {
            json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept",
                "content": {"username": ["x"]}}})
            .to_string()
        }),
        // Over the answer bound (64 KiB), under the frame bound.
        Box::new(move |id| {
            json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept",
                "content": {"username": canary.repeat(4000), "email": "e"}}})
            .to_string()
        }),
        // Both a result and an error; then an error with the peer's text.
        Box::new(move |id| {
            json!({"jsonrpc": "2.0", "id": id, "result": {}, "error": {"code": 1, "message": canary}})
                .to_string()
        }),
    ];
    for answer in hostile {
        let (_, reply) = call_answering(
            &mut server,
            "test_elicitation",
            json!({"message": "m"}),
            |id| answer(id),
        );
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert_eq!(text(&reply), "the client's answer was not valid");
        assert!(!reply.to_string().contains("canary"), "{reply}");
    }
    let (_, reply) = call_answering(
        &mut server,
        "test_elicitation",
        json!({"message": "m"}),
        |id| {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": canary}})
                .to_string()
        },
    );
    assert_eq!(text(&reply), "the client refused the request");
    assert!(!reply.to_string().contains("canary"), "{reply}");
    // The session still serves.
    let pong = server.request(&stdio::request(9, "ping", json!({})));
    assert_eq!(pong["result"], json!({}));
}

#[test]
fn a_client_that_did_not_declare_the_capability_is_never_asked() {
    let mut server = fixture();
    initialize(&mut server, json!({}));
    let reply = server.request(&stdio::call(1, "test_sampling", json!({"prompt": "p"})));
    assert_eq!(reply["id"], 1, "the reply, no request first: {reply}");
    assert_eq!(text(&reply), "the client cannot answer this request");
    // Nor is a modern client: 2026-07-28 has no server-to-client requests, and one that
    // declared nothing gets -32021 naming what the tool needed (tests/it/input_required.rs
    // has the rounds of one that did).
    let mut modern = fixture();
    let mut params = json!({"name": "test_sampling", "arguments": {"prompt": "p"}});
    params["_meta"] = stdio::modern_meta();
    let reply = modern.request(&stdio::request(2, "tools/call", params));
    assert_eq!(reply["id"], 2, "{reply}");
    assert_eq!(
        reply["error"],
        json!({"code": -32021, "message": "Missing required client capability.",
               "data": {"requiredCapabilities": {"sampling": {}}}})
    );
}

#[test]
fn answers_nobody_asked_for_are_dropped_and_counted() {
    let mut server = fixture();
    initialize(&mut server, json!({"elicitation": {}}));
    for id in [json!(1), json!("1"), json!(u64::MAX)] {
        server
            .send(&json!({"jsonrpc": "2.0", "id": id, "result": {"action": "cancel"}}).to_string());
    }
    let pong = server.request(&stdio::request(3, "ping", json!({})));
    assert_eq!(pong["id"], 3, "nothing answered the answers: {pong}");
}
