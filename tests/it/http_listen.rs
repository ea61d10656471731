//! Resource subscriptions over HTTP: a legacy session subscribes with a POST and hears of the
//! change on its `GET` stream; the stream is the session's alone, one at a time, and ends with
//! the session. Against the conformance fixture (which offers subscriptions and has a tool
//! that announces a change), over real TCP on loopback.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;

use crate::support::http::{HttpServer, exchange, initialize, post, session_headers};
use crate::support::sse::{Stream, listen_headers};
use crate::support::stdio::{self, REPLY_TIMEOUT};

const WATCHED: &str = "test://watched-resource";

/// How long what must not arrive is waited for: the change it would be about was announced
/// before, and the stream is loopback.
const SOON: Duration = Duration::from_secs(1);

/// The notification a subscribed session gets when the watched resource changes.
const UPDATED: &str = r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://watched-resource"}}"#;

fn subscribe(addr: SocketAddr, session: &str, method: &str, uri: &str) -> serde_json::Value {
    let reply = post(
        addr,
        &session_headers(session),
        &stdio::request(5, method, json!({ "uri": uri })),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
}

fn touch(addr: SocketAddr, session: &str) {
    let reply = post(
        addr,
        &session_headers(session),
        &stdio::request(
            6,
            "tools/call",
            json!({"name": "test_touch_watched_resource", "arguments": {}}),
        ),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[test]
fn a_subscribed_session_hears_of_a_change_on_its_get_stream_and_only_its_own() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let init = post(
        addr,
        &[],
        &stdio::request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "it", "version": "1"}}),
        ),
    );
    assert_eq!(
        init.json()["result"]["capabilities"]["resources"],
        json!({"listChanged": false, "subscribe": true})
    );
    let watcher = initialize(addr);
    let bystander = initialize(addr);
    assert_eq!(
        subscribe(addr, &watcher, "resources/subscribe", WATCHED)["result"],
        json!({})
    );
    let accept = listen_headers(&watcher);
    let mut listening = Stream::get(addr, None, &accept);
    assert_eq!(listening.status(), 200);
    let mut unsubscribed = Stream::get(addr, None, &listen_headers(&bystander));
    assert_eq!(unsubscribed.status(), 200);
    // Any session's call may change the resource; only subscribers hear of it.
    touch(addr, &bystander);
    assert!(listening.hears(UPDATED, REPLY_TIMEOUT), "{listening:?}");
    assert!(
        !unsubscribed.hears("resources/updated", SOON),
        "a session that did not subscribe hears nothing: {unsubscribed:?}"
    );
    // Unsubscribed: the next change is not heard.
    assert_eq!(
        subscribe(addr, &watcher, "resources/unsubscribe", WATCHED)["result"],
        json!({})
    );
    listening.forget();
    touch(addr, &watcher);
    assert!(!listening.hears("resources/updated", SOON));
    // A second stream of the same session ends the first.
    assert_eq!(
        subscribe(addr, &watcher, "resources/subscribe", WATCHED)["result"],
        json!({})
    );
    let mut second = Stream::get(addr, None, &accept);
    assert_eq!(second.status(), 200);
    assert!(
        listening.ends(REPLY_TIMEOUT),
        "the first stream ends when a second opens"
    );
    touch(addr, &watcher);
    assert!(second.hears(UPDATED, REPLY_TIMEOUT));
    // DELETE ends the session and its stream.
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {watcher}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(exchange(addr, delete.as_bytes()).status, 204);
    assert!(
        second.ends(REPLY_TIMEOUT),
        "the stream ends with its session"
    );
}

#[test]
fn a_get_stream_needs_a_live_session_of_the_caller_and_an_event_stream_accept() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let session = initialize(addr);
    let sse = ("Accept", "text/event-stream");
    let no_session = Stream::get(addr, None, &[sse]);
    assert_eq!(no_session.status(), 400);
    let unknown = Stream::get(addr, None, &[("Mcp-Session-Id", "0123456789abcdef"), sse]);
    assert_eq!(unknown.status(), 404);
    let json_only = Stream::get(
        addr,
        None,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("Accept", "application/json"),
        ],
    );
    assert_eq!(json_only.status(), 406);
    let modern = Stream::get(addr, None, &[("MCP-Protocol-Version", "2026-07-28"), sse]);
    assert_eq!(modern.status(), 405, "the modern era has no GET stream");
    // A session subscribed to a made-up URI gets a fixed error that says nothing back.
    let made_up = subscribe(addr, &session, "resources/subscribe", "test://PLANTED-91c2");
    assert_eq!(
        made_up["error"],
        json!({"code": -32602, "message": "Invalid params: resource not found."})
    );
}

#[test]
fn a_server_without_subscriptions_answers_get_405_even_in_a_session() {
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    let session = initialize(addr);
    let listening = Stream::get(addr, None, &listen_headers(&session));
    assert_eq!(listening.status(), 405);
    let reply = subscribe(addr, &session, "resources/subscribe", WATCHED);
    assert_eq!(reply["error"]["code"], -32_601);
}
