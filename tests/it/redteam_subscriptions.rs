//! Red-team regressions for resource subscriptions (legacy sessions): `resources/subscribe`
//! and `resources/unsubscribe`, the HTTP `GET` stream and the stdio delivery, attacked as a
//! hostile peer through the conformance fixture (which offers subscriptions, has
//! `test://watched-resource`, the template `test://template/{id}/data` and a tool that
//! announces a change), over real TCP on loopback and real pipes.
//!
//! Findings (each test failed against the code it was written for):
//!
//! - the `GET` stream does not check `MCP-Protocol-Version` against the session's negotiated
//!   revision (a POST with the same header is `400`): another legacy revision is served
//!   `200`, and a version the server does not know is taken for the modern era (`405`);
//! - a `resources/subscribe` whose `uri` is not a string (or is missing) is answered as an
//!   unknown resource and so is never counted toward the garbage cut-off, while the same
//!   malformed `tools/call` (`name` not a string) is: a peer may send malformed requests
//!   forever (also `resources/read` and `prompts/get`, since the same change).
//!
//! Everything else here held, and is kept so that it goes on holding.

use std::io::Write;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::http::{HttpServer, exchange, initialize, post, session_headers};
use crate::support::processes;
use crate::support::sse::{Stream, listen_headers};
use crate::support::stdio::{self, REPLY_TIMEOUT};

const WATCHED: &str = "test://watched-resource";

fn rpc(addr: SocketAddr, session: &str, id: i64, method: &str, params: Value) -> Value {
    let reply = post(
        addr,
        &session_headers(session),
        &stdio::request(id, method, params),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
}

fn touch(addr: SocketAddr, session: &str) -> u16 {
    post(
        addr,
        &session_headers(session),
        &stdio::request(
            6,
            "tools/call",
            json!({"name": "test_touch_watched_resource", "arguments": {}}),
        ),
    )
    .status
}

/// Open file descriptors of a process.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("read /proc fd")
        .count()
}

// ---------------------------------------------------------------------------------------
// Findings (fixed: each failed before its fix)
// ---------------------------------------------------------------------------------------

#[test]
fn a_get_stream_with_another_protocol_version_than_its_session_is_400_as_a_post_is() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let session = initialize(addr);
    // The boundary a POST of this session keeps: the header must name the negotiated revision.
    let mismatched = post(
        addr,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        &stdio::request(1, "ping", json!({})),
    );
    assert_eq!(mismatched.status, 400, "{mismatched:?}");
    let stream = Stream::get(
        addr,
        None,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Accept", "text/event-stream"),
        ],
    );
    assert_eq!(
        stream.status(),
        400,
        "a GET naming another revision than the session's is refused like a POST: {stream:?}"
    );
    // A version nobody serves is not the modern era's (405) but an unsupported one (400).
    let unknown = Stream::get(
        addr,
        None,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "1999-01-01"),
            ("Accept", "text/event-stream"),
        ],
    );
    assert_eq!(unknown.status(), 400, "{unknown:?}");
}

/// Runs the stdio fixture on `lines` (after a handshake) and a last `ping` (id 9999); gives
/// every line it wrote and its exit code.
fn stdio_run(lines: &[String]) -> (Vec<Value>, Option<i32>) {
    let mut child = stdio::spawn_command(&stdio::example("conformance_server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fixture");
    let mut input = String::new();
    input.push_str(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "it", "version": "1"}}})
        .to_string(),
    );
    input.push('\n');
    input.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for line in lines {
        input.push_str(line);
        input.push('\n');
    }
    input.push_str(&stdio::request(9999, "ping", json!({})));
    input.push('\n');
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        // The server may stop reading once it cuts the session off.
        let _written = stdin.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().expect("wait");
    writer.join().unwrap();
    let replies = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (replies, output.status.code())
}

#[test]
fn a_subscribe_whose_uri_is_not_a_string_counts_toward_the_cut_off_as_a_malformed_call_does() {
    // The reference: a `tools/call` whose name is not a string is garbage; 256 in a row end
    // the session before the ping.
    let calls: Vec<String> = (1..=300)
        .map(|id| stdio::request(id, "tools/call", json!({"name": 5})))
        .collect();
    let (replies, _) = stdio_run(&calls);
    assert!(
        replies.iter().all(|reply| reply["id"] != 9999),
        "the malformed calls cut the session off"
    );
    // The same malformation in a subscription.
    let subscribes: Vec<String> = (1..=300)
        .map(|id| stdio::request(id, "resources/subscribe", json!({"uri": 5})))
        .collect();
    let (replies, _) = stdio_run(&subscribes);
    assert_eq!(replies[1]["error"]["code"], -32602);
    assert!(
        replies.iter().all(|reply| reply["id"] != 9999),
        "300 subscriptions naming no URI at all are garbage, like 300 calls naming no tool: \
         {} replies, the last {}",
        replies.len(),
        replies.last().unwrap()
    );
}

// ---------------------------------------------------------------------------------------
// What held
// ---------------------------------------------------------------------------------------

#[test]
fn a_get_stream_is_refused_for_a_rebinding_host_or_a_foreign_origin() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let session = initialize(addr);
    let headers = listen_headers(&session);
    let rebinding = Stream::get(addr, Some("attacker.example"), &headers);
    assert_eq!(rebinding.status(), 421);
    let port = addr.port();
    let rebinding_port = Stream::get(addr, Some(&format!("evil.example:{port}")), &headers);
    assert_eq!(rebinding_port.status(), 421);
    for origin in [
        "http://attacker.example",
        "null",
        "http://127.0.0.1.evil.example",
    ] {
        let mut with_origin = headers.clone();
        with_origin.push(("Origin", origin));
        let stream = Stream::get(addr, None, &with_origin);
        assert_eq!(stream.status(), 403, "Origin {origin}");
    }
    // A page of an origin not listed is never told it may GET.
    let preflight = format!(
        "OPTIONS /mcp HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://localhost:3000\r\n\
         Access-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: mcp-session-id\r\n\
         Connection: close\r\n\r\n"
    );
    let reply = exchange(addr, preflight.as_bytes());
    assert_eq!(reply.status, 403, "{reply:?}");
    assert!(reply.header("access-control-allow-origin").is_none());
    // A loopback page's GET is served without CORS headers: its page cannot read it.
    let mut loopback = headers.clone();
    loopback.push(("Origin", "http://localhost:3000"));
    let stream = Stream::get(addr, None, &loopback);
    assert_eq!(stream.status(), 200);
    let head = String::from_utf8_lossy(stream.raw()).to_ascii_lowercase();
    assert!(!head.contains("access-control-allow-origin"), "{head}");
}

#[test]
fn a_get_with_the_id_of_an_ended_or_evicted_session_is_404_and_the_evicted_stream_ends() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    // DELETE, then the same id again.
    let deleted = initialize(addr);
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {deleted}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(exchange(addr, delete.as_bytes()).status, 204);
    assert_eq!(
        Stream::get(addr, None, &listen_headers(&deleted)).status(),
        404
    );
    // A made-up id of the right shape, and a prefix of a live one.
    let live = initialize(addr);
    assert_eq!(
        Stream::get(addr, None, &listen_headers(&"f".repeat(64))).status(),
        404
    );
    assert_eq!(
        Stream::get(addr, None, &listen_headers(&live[..63])).status(),
        404
    );
    // Eviction: this client's least recently used session goes when it opens one past its
    // cap (16), and its stream with it.
    let mut sessions = vec![live];
    while sessions.len() < 16 {
        sessions.push(initialize(addr));
    }
    let first = sessions[0].clone();
    assert_eq!(
        rpc(
            addr,
            &first,
            1,
            "resources/subscribe",
            json!({"uri": WATCHED})
        )["result"],
        json!({})
    );
    let mut stream = Stream::get(addr, None, &listen_headers(&first));
    assert_eq!(stream.status(), 200);
    std::thread::sleep(Duration::from_millis(5));
    for session in &sessions[1..] {
        rpc(addr, session, 2, "ping", json!({}));
    }
    let _newest = initialize(addr);
    assert!(
        stream.ends(REPLY_TIMEOUT),
        "the evicted session's stream ends"
    );
    assert_eq!(
        Stream::get(addr, None, &listen_headers(&first)).status(),
        404
    );
}

#[test]
fn subscriptions_are_refused_before_the_handshake_is_confirmed_and_in_the_modern_era() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let reply = post(
        addr,
        &[],
        &stdio::request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "it", "version": "1"}}),
        ),
    );
    let unconfirmed = reply.header("mcp-session-id").unwrap().to_owned();
    let early = rpc(
        addr,
        &unconfirmed,
        1,
        "resources/subscribe",
        json!({"uri": WATCHED}),
    );
    assert_eq!(early["error"]["code"], -32602, "{early}");
    // The modern era has no resources/subscribe.
    let modern =
        crate::support::http::modern(addr, 2, "resources/subscribe", json!({"uri": WATCHED}), &[]);
    assert_eq!(modern.json()["error"]["code"], -32601, "{modern:?}");
    // And a modern server/discover does not offer it.
    let discover = crate::support::http::modern(addr, 3, "server/discover", json!({}), &[]);
    let resources = &discover.json()["result"]["capabilities"]["resources"];
    assert!(resources.get("subscribe").is_none(), "{resources}");
}

#[test]
fn a_stream_never_read_holds_up_neither_the_announcer_nor_another_sessions_stream() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let stuck = initialize(addr);
    let listener = initialize(addr);
    for session in [&stuck, &listener] {
        assert_eq!(
            rpc(
                addr,
                session,
                1,
                "resources/subscribe",
                json!({"uri": WATCHED})
            )["result"],
            json!({})
        );
    }
    // The stuck session also subscribes to as many long template URIs as it may: if it is
    // ever told everything may have changed, that is the most it can be told.
    for n in 0..31 {
        let uri = format!("test://template/{}{n:02}/data", "x".repeat(250));
        assert_eq!(
            rpc(addr, &stuck, 2, "resources/subscribe", json!({"uri": uri}))["result"],
            json!({})
        );
    }
    let over = rpc(
        addr,
        &stuck,
        3,
        "resources/subscribe",
        json!({"uri": "test://template/one-more/data"}),
    );
    assert_eq!(
        over["error"],
        json!({"code": -32602,
               "message": "Invalid params: this session is subscribed to as many resources as it may be.",
               "data": {"limit": "max_subscriptions", "value": 32}})
    );
    let never_read = Stream::get_unread(addr, &listen_headers(&stuck));
    assert_eq!(never_read.status(), 200);
    let mut reading = Stream::get(addr, None, &listen_headers(&listener));
    assert_eq!(reading.status(), 200);
    let started = Instant::now();
    for _ in 0..300 {
        assert_eq!(touch(addr, &stuck), 200);
    }
    assert!(
        started.elapsed() < REPLY_TIMEOUT,
        "the announcer never waits for a stream"
    );
    // Every change is heard; a session that fell 64 behind is told once for what it missed,
    // so at least one notification per 65 announcements whatever the scheduling.
    reading.read_for(Duration::from_secs(3), |body| {
        body.matches("notifications/resources/updated").count() >= 300
    });
    let heard = reading.count("notifications/resources/updated");
    assert!(
        heard >= 300 / 65,
        "the reading session hears the changes: {heard}"
    );
    assert_eq!(
        reading.count("test://template/"),
        0,
        "and never of what it did not subscribe to"
    );
    let peak = processes::peak_rss_kib(server.pid());
    assert!(peak < 64 * 1024, "peak RSS {peak} KiB");
    drop(never_read);
}

#[test]
fn sixty_gets_of_one_session_leave_one_stream_and_give_back_their_connections() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let session = initialize(addr);
    assert_eq!(
        rpc(
            addr,
            &session,
            1,
            "resources/subscribe",
            json!({"uri": WATCHED})
        )["result"],
        json!({})
    );
    let before = open_fds(server.pid());
    let mut streams: Vec<Stream> = (0..60)
        .map(|_| Stream::get(addr, None, &listen_headers(&session)))
        .collect();
    assert!(streams.iter().all(|stream| stream.status() == 200));
    let last = streams.pop().unwrap();
    for (n, stream) in streams.iter_mut().enumerate() {
        assert!(
            stream.ends(REPLY_TIMEOUT),
            "stream {n} ended when the next opened"
        );
    }
    drop(streams);
    let mut last = last;
    assert_eq!(touch(addr, &session), 200);
    assert!(last.hears("notifications/resources/updated", REPLY_TIMEOUT));
    // The ended streams' connections close with their clients.
    let until = Instant::now() + REPLY_TIMEOUT;
    while open_fds(server.pid()) > before + 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        open_fds(server.pid()) <= before + 2,
        "{} descriptors open, {before} before",
        open_fds(server.pid())
    );
}

#[test]
fn a_stdio_client_that_never_reads_while_changes_are_announced_blocks_only_itself() {
    let mut server = stdio::Unread::start(&stdio::example("conformance_server"), &[]);
    let pid = server.child.id();
    let mut stdin = server.stdin.take().expect("stdin");
    let mut head = String::new();
    head.push_str(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "it", "version": "1"}}})
        .to_string(),
    );
    head.push('\n');
    head.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    head.push_str(&stdio::request(
        1,
        "resources/subscribe",
        json!({"uri": WATCHED}),
    ));
    head.push('\n');
    for n in 0..31 {
        let uri = format!("test://template/{}{n:02}/data", "y".repeat(250));
        head.push_str(&stdio::request(
            2,
            "resources/subscribe",
            json!({"uri": uri}),
        ));
        head.push('\n');
    }
    stdin.write_all(head.as_bytes()).unwrap();
    let touch = stdio::call(3, "test_touch_watched_resource", json!({}));
    // Writes until the server stops reading (its output is full), for a few seconds.
    let writer = std::thread::spawn(move || {
        let line = format!("{touch}\n").repeat(64);
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until {
            if stdin.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
        stdin
    });
    std::thread::sleep(Duration::from_secs(4));
    let peak = processes::peak_rss_kib(pid);
    assert!(peak < 64 * 1024, "peak RSS {peak} KiB while not read");
    // Reading again: only the session's own subscriptions are ever named, each notification
    // well formed, and the session goes on.
    let stdout = server.take_stdout();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    while lines.len() < 2000 {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(_) => break,
        }
    }
    // The writer may wait on a full pipe again: ending the server lets both threads go.
    drop(rx);
    drop(server);
    let _stdin = writer.join().unwrap();
    reader.join().unwrap();
    assert!(lines.len() > 100, "{} lines", lines.len());
    for line in &lines {
        let message: Value = serde_json::from_str(line).unwrap();
        if message["method"] == "notifications/resources/updated" {
            let uri = message["params"]["uri"].as_str().unwrap();
            assert!(
                uri == WATCHED
                    || (uri.starts_with("test://template/yyyy") && uri.ends_with("/data")),
                "{uri}"
            );
        }
    }
}
