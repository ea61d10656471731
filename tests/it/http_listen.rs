//! Resource subscriptions over HTTP: a legacy session subscribes with a POST and hears of the
//! change on its `GET` stream; the stream is the session's alone, one at a time, and ends with
//! the session. Against the conformance fixture (which offers subscriptions and has a tool
//! that announces a change), over real TCP on loopback.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{self, REPLY_TIMEOUT};
use crate::http::{HttpServer, exchange, initialize, post};

const WATCHED: &str = "test://watched-resource";

/// The notification a subscribed session gets when the watched resource changes.
const UPDATED: &str = r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://watched-resource"}}"#;

/// An open `GET` stream: its status, and the connection to read events from.
struct Listening {
    status: u16,
    stream: TcpStream,
    /// Bytes read so far after the head.
    seen: Vec<u8>,
}

impl Listening {
    fn open(addr: SocketAddr, headers: &[(&str, &str)]) -> Self {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut request = format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).expect("write request");
        let mut listening = Self {
            status: 0,
            stream,
            seen: Vec::new(),
        };
        let head_end = listening
            .read_until(|seen| find(seen, b"\r\n\r\n"))
            .expect("a response head");
        let head = String::from_utf8_lossy(&listening.seen[..head_end]).into_owned();
        listening.status = head
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .expect("a status");
        listening.seen.drain(..head_end + 4);
        listening
    }

    /// Reads until `found` says where in the bytes seen it is, or the connection closes, or
    /// [`REPLY_TIMEOUT`] passes.
    fn read_until(&mut self, found: impl Fn(&[u8]) -> Option<usize>) -> Option<usize> {
        self.read_for(REPLY_TIMEOUT, found)
    }

    /// [`Listening::read_until`] for at most `wait`.
    fn read_for(
        &mut self,
        wait: Duration,
        found: impl Fn(&[u8]) -> Option<usize>,
    ) -> Option<usize> {
        let until = Instant::now() + wait;
        let mut buffer = [0_u8; 4096];
        loop {
            if let Some(at) = found(&self.seen) {
                return Some(at);
            }
            if Instant::now() >= until {
                return None;
            }
            match self.stream.read(&mut buffer) {
                Ok(0) => return found(&self.seen),
                Ok(n) => self.seen.extend_from_slice(&buffer[..n]),
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return found(&self.seen),
            }
        }
    }

    /// Whether `text` arrives on the stream in time.
    fn hears(&mut self, text: &str) -> bool {
        self.read_until(|seen| find(seen, text.as_bytes()))
            .is_some()
    }

    /// Whether `text` arrives within a second: for what must not arrive (the change it would
    /// be about was announced before, and the stream is loopback).
    fn hears_soon(&mut self, text: &str) -> bool {
        self.read_for(Duration::from_secs(1), |seen| find(seen, text.as_bytes()))
            .is_some()
    }

    /// Whether the stream ends (the last chunk, or the connection closed) in time.
    fn ends(&mut self) -> bool {
        let until = Instant::now() + REPLY_TIMEOUT;
        let mut buffer = [0_u8; 4096];
        while Instant::now() < until {
            if self.seen.ends_with(b"0\r\n\r\n") {
                return true;
            }
            match self.stream.read(&mut buffer) {
                Ok(0) => return true,
                Ok(n) => self.seen.extend_from_slice(&buffer[..n]),
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return true,
            }
        }
        false
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn session_headers(session: &str) -> Vec<(&str, &str)> {
    vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ]
}

fn subscribe(addr: SocketAddr, session: &str, method: &str, uri: &str) -> serde_json::Value {
    let reply = post(
        addr,
        &session_headers(session),
        &harness::request(5, method, json!({ "uri": uri })),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
}

fn touch(addr: SocketAddr, session: &str) {
    let reply = post(
        addr,
        &session_headers(session),
        &harness::request(
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
        &harness::request(
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
    let mut accept = session_headers(&watcher);
    accept.push(("Accept", "text/event-stream"));
    let mut listening = Listening::open(addr, &accept);
    assert_eq!(listening.status, 200);
    let mut other_accept = session_headers(&bystander);
    other_accept.push(("Accept", "text/event-stream"));
    let mut unsubscribed = Listening::open(addr, &other_accept);
    assert_eq!(unsubscribed.status, 200);
    // Any session's call may change the resource; only subscribers hear of it.
    touch(addr, &bystander);
    assert!(
        listening.hears(UPDATED),
        "{:?}",
        String::from_utf8_lossy(&listening.seen)
    );
    assert!(
        !unsubscribed.hears_soon("resources/updated"),
        "a session that did not subscribe hears nothing: {:?}",
        String::from_utf8_lossy(&unsubscribed.seen)
    );
    // Unsubscribed: the next change is not heard.
    assert_eq!(
        subscribe(addr, &watcher, "resources/unsubscribe", WATCHED)["result"],
        json!({})
    );
    listening.seen.clear();
    touch(addr, &watcher);
    assert!(!listening.hears_soon("resources/updated"));
    // A second stream of the same session ends the first.
    assert_eq!(
        subscribe(addr, &watcher, "resources/subscribe", WATCHED)["result"],
        json!({})
    );
    let mut second = Listening::open(addr, &accept);
    assert_eq!(second.status, 200);
    assert!(
        listening.ends(),
        "the first stream ends when a second opens"
    );
    touch(addr, &watcher);
    assert!(second.hears(UPDATED));
    // DELETE ends the session and its stream.
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {watcher}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(exchange(addr, delete.as_bytes()).status, 204);
    assert!(second.ends(), "the stream ends with its session");
}

#[test]
fn a_get_stream_needs_a_live_session_of_the_caller_and_an_event_stream_accept() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let session = initialize(addr);
    let sse = ("Accept", "text/event-stream");
    let no_session = Listening::open(addr, &[sse]);
    assert_eq!(no_session.status, 400);
    let unknown = Listening::open(addr, &[("Mcp-Session-Id", "0123456789abcdef"), sse]);
    assert_eq!(unknown.status, 404);
    let json_only = Listening::open(
        addr,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("Accept", "application/json"),
        ],
    );
    assert_eq!(json_only.status, 406);
    let modern = Listening::open(addr, &[("MCP-Protocol-Version", "2026-07-28"), sse]);
    assert_eq!(modern.status, 405, "the modern era has no GET stream");
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
    let mut headers = session_headers(&session);
    headers.push(("Accept", "text/event-stream"));
    let listening = Listening::open(addr, &headers);
    assert_eq!(listening.status, 405);
    let reply = subscribe(addr, &session, "resources/subscribe", WATCHED);
    assert_eq!(reply["error"]["code"], -32_601);
}
