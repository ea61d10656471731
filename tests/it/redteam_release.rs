//! Red-team regressions found against the RELEASE binaries (`cargo build --release --bins
//! --examples`: fat LTO, `overflow-checks = true`, unwinding), driven as a hostile MCP client
//! over real pipes and real loopback sockets: `airlock serve --manifest` with `[[prompt]]` and
//! `[[resource]]` entries, and the conformance fixture's resource subscriptions and `GET`
//! stream. The tests build with the normal test profile; the figures in the comments are the
//! release binaries'.
//!
//! Findings (each test asserts the correct behaviour; all three are fixed, each test says how):
//!
//! - finding 1 (medium): a `prompts/get` reply is bounded by neither `max_output_bytes` nor
//!   anything the memory bound counts: one argument of 43,000 control bytes placed by 64
//!   placeholders is a 16.5 MB reply line (nothing refuses the manifest). Over HTTP,
//!   clients that never read such replies hold them: 113 MiB peak with 40 clients, 247 MiB
//!   with 600 (release), against the 48 MiB bound;
//! - finding 2 (low): over stdio the same prompt takes the server past its documented 32 MiB
//!   bound with one request in the test profile's build (37.5 MiB); release holds (26 MiB);
//! - finding 3 (low): a `GET` raced with its session's `DELETE` can leave a stream open on
//!   the ended session (15 s to more than 30 s), still delivering that session's
//!   `notifications/resources/updated`.
//!
//! Everything else here held, and is kept so that it goes on holding. Tried by hand against
//! the release binaries and not encoded: `resources/read` timing over stdio (median 181 µs
//! for an unlisted URI, 217 µs listed, 214 µs listed but refused as a hard link: it tells
//! only whether a URI is listed, which `resources/list` says anyway); `SIGTERM` to `airlock
//! serve --http` with eight 16.5 MB prompt replies unread (exit 0 after 0.02 s); release
//! arithmetic (`overflow-checks = true`, no `debug_assert!` in the crates, the one wrapping
//! add a `u64` call serial).

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::redteam_resources::{DOCS, ECHO, SECRET, Tree};
use crate::support::http::{
    self, HttpServer, Reply, initialize, parse_reply, post, session_headers,
};
use crate::support::processes;
use crate::support::sse::{self, Stream, listen_headers};
use crate::support::stdio::{REPLY_TIMEOUT, request};

const WATCHED: &str = "test://watched-resource";

fn not_found() -> Value {
    json!({"code": -32602, "message": "Invalid params: resource not found."})
}

// ---------------------------------------------------------------------------------------
// A keep-alive HTTP/1.1 client from a chosen loopback address
// ---------------------------------------------------------------------------------------

/// One keep-alive connection from `source` (a loopback address of its own: another client
/// to the server's per-address caps and quotas).
struct Client {
    addr: SocketAddr,
    source: Ipv4Addr,
    conn: TcpStream,
    buf: Vec<u8>,
}

/// A connection from `source` whose replies a test reads within the reply timeout.
fn connect(addr: SocketAddr, source: Ipv4Addr, recv_buffer: Option<usize>) -> TcpStream {
    let conn = http::connect_from_with_buffer(source.into(), addr, REPLY_TIMEOUT, recv_buffer)
        .expect("connect from a loopback source");
    conn.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    conn
}

impl Client {
    fn new(addr: SocketAddr, source: Ipv4Addr) -> Self {
        Self {
            addr,
            source,
            conn: connect(addr, source, None),
            buf: Vec::new(),
        }
    }

    fn request_bytes(&self, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        request.into_bytes()
    }

    /// POSTs `body` and reads the reply; reconnects once if the server closed the connection.
    fn post(&mut self, headers: &[(&str, &str)], body: &str) -> Reply {
        let bytes = self.request_bytes(headers, body);
        for _ in 0..2 {
            if self.conn.write_all(&bytes).is_ok()
                && let Some(reply) = self.read()
            {
                return reply;
            }
            self.conn = connect(self.addr, self.source, None);
            self.buf.clear();
        }
        panic!("no reply after reconnecting");
    }

    fn fill(&mut self) -> bool {
        let mut chunk = [0_u8; 65536];
        match self.conn.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// One response (`Content-Length` or chunked).
    fn read(&mut self) -> Option<Reply> {
        let head_end = loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                break end + 4;
            }
            if !self.fill() {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map(|value| value.trim().parse::<usize>().unwrap());
        let end = if let Some(length) = length {
            while self.buf.len() < head_end + length {
                if !self.fill() {
                    return None;
                }
            }
            head_end + length
        } else {
            loop {
                if let Some(end) = find(&self.buf[head_end..], b"\r\n0\r\n\r\n") {
                    break head_end + end + 7;
                }
                if self.buf[head_end..].starts_with(b"0\r\n\r\n") {
                    break head_end + 5;
                }
                if !self.fill() {
                    return None;
                }
            }
        };
        let raw: Vec<u8> = self.buf.drain(..end).collect();
        Some(parse_reply(&raw))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The raw `GET /mcp` that opens `session`'s stream.
fn get_stream_bytes(addr: SocketAddr, session: &str) -> Vec<u8> {
    sse::get_bytes(addr, None, &listen_headers(session))
}

// ---------------------------------------------------------------------------------------
// Prompts: a small request, a large reply
// ---------------------------------------------------------------------------------------

/// A prompt whose one message places its one argument 64 times (the most placeholders a
/// manifest may hold): `airlock check` accepts it.
fn amplifying_prompt() -> String {
    format!(
        "{ECHO}\n[[prompt]]\nname = \"big\"\ndescription = \"big\"\n\
         arguments = [ {{ name = \"x\", required = true }} ]\n\
         messages = [ {{ role = \"user\", text = \"{}\" }} ]\n",
        "{x}".repeat(64)
    )
}

/// The most control bytes one argument may hold within `max_argument_bytes` (256 KiB of
/// compact JSON, each byte written `\u0001`).
const CONTROL_BYTES: usize = 43_000;

fn amplifying_arguments() -> Value {
    json!({"name": "big", "arguments": {"x": "\u{1}".repeat(CONTROL_BYTES)}})
}

/// Finding 1 (medium): `prompts/get` replies are not bounded like call replies. A request of
/// 258 KB (one argument of 43,000 control bytes) to a prompt that places it 64 times is a
/// 16.5 MB reply (64 × 43,000 × 6 bytes escaped); the manifest is accepted. Over HTTP each
/// client that never reads holds one, past the 48 MiB the non-reading-client bound
/// promises. Release binary, modern era, clients on one address with a 1 KiB receive
/// window: 40 clients, peak RSS 113 MiB; 200 clients (4 addresses) 220 MiB; 600 clients
/// (10 addresses) 247 MiB, and meanwhile another client's `prompts/get` is `503` `-31503`
/// until the write timeout frees the slots. `max_output_bytes` (1 MiB) bounds a tool's
/// reply; nothing bounds a prompt's but the product of the manifest's and the argument
/// limits.
///
/// Fixed: a `prompts/get` reply is bounded as sent (`MAX_PROMPT_REPLY_BYTES`, 1 MiB); this
/// one is refused `-32602` with nothing of it written.
#[test]
fn http_clients_that_never_read_prompt_replies_hold_bounded_memory() {
    crate::support::processes::raise_open_files(4096);
    let tree = Tree::new("prompt-http");
    let manifest = tree.manifest(&amplifying_prompt());
    let server = HttpServer::airlock(&["--manifest", manifest.to_str().unwrap()], &[]);
    let get = crate::support::http::modern_bytes(
        server.addr,
        1,
        "prompts/get",
        amplifying_arguments(),
        &[("Connection", "keep-alive")],
    );
    let mut sockets = Vec::new();
    for _ in 0..40 {
        let mut socket = connect(server.addr, Ipv4Addr::LOCALHOST, Some(1024));
        socket.write_all(&get).unwrap();
        sockets.push(socket);
    }
    let settle = Instant::now();
    let mut last = 0;
    while settle.elapsed() < Duration::from_secs(8) {
        thread::sleep(Duration::from_millis(250));
        let now = processes::peak_rss_kib(server.pid());
        if now == last && settle.elapsed() > Duration::from_secs(2) {
            break;
        }
        last = now;
    }
    let peak = processes::peak_rss_kib(server.pid());
    drop(sockets);
    eprintln!(
        "40 non-reading clients of a 16.5 MB prompt reply: peak RSS {} MiB",
        peak / 1024
    );
    assert!(
        peak <= 64 * 1024,
        "peak RSS {peak} KiB past the bound of 64 MiB"
    );
}

/// Finding 2 (low): over stdio the same prompt takes the server past the documented 32 MiB
/// peak-RSS bound ("asserted by the tests", figures "debug build"): 37.5 MiB in the test
/// profile's build with one reply read and four more asked for and not read. The release
/// binary stays under it (26 MiB, reading each reply or none), since the manifest (at most
/// 1 MiB) and `max_argument_bytes` cap the reply near 18 MB. The reply is exactly the
/// argument placed 64 times, nothing else of the peer's.
///
/// Fixed with finding 1: the reply would be over `MAX_PROMPT_REPLY_BYTES` as sent, so it is
/// refused (`-32602`, `max_prompt_reply_bytes`), serialisation stopped at the cap; the same
/// prompt with a short argument is still served.
#[test]
fn a_stdio_peer_asking_for_an_amplified_prompt_stays_under_the_memory_bound() {
    let tree = Tree::new("prompt-stdio");
    let mut server = tree.serve_with(&amplifying_prompt(), &[]);
    let reply = server.request(&request(1, "prompts/get", amplifying_arguments()));
    assert_eq!(reply["error"]["code"], -32602, "{:.300}", reply.to_string());
    assert_eq!(reply["error"]["data"]["limit"], "max_prompt_reply_bytes");
    assert!(
        reply.to_string().len() < 1024,
        "nothing of the prompt is sent"
    );
    let short = json!({"name": "big", "arguments": {"x": "ab"}});
    let reply = server.request(&request(3, "prompts/get", short));
    assert_eq!(
        reply["result"]["messages"][0]["content"]["text"],
        "ab".repeat(64)
    );
    let line = request(2, "prompts/get", amplifying_arguments());
    for _ in 0..4 {
        server.send(&line);
    }
    thread::sleep(Duration::from_secs(3));
    let peak = server.peak_rss_kib();
    eprintln!("amplified prompts over stdio: peak RSS {} MiB", peak / 1024);
    assert!(peak <= 32 * 1024, "peak RSS {peak} KiB");
}

// ---------------------------------------------------------------------------------------
// Subscriptions and the GET stream (the conformance fixture)
// ---------------------------------------------------------------------------------------

fn subscribe(client: &mut Client, session: &str, uri: &str) {
    loop {
        let reply = client.post(
            &session_headers(session),
            &request(1, "resources/subscribe", json!({ "uri": uri })),
        );
        // The client's request quota, at the HTTP boundary (429) or in the session (-31429).
        if reply.status == 429 {
            thread::sleep(Duration::from_millis(200));
            continue;
        }
        assert_eq!(reply.status, 200, "{reply:?}");
        let reply = reply.json();
        if reply["error"]["code"] == -31429 {
            thread::sleep(Duration::from_millis(50));
            continue;
        }
        assert_eq!(reply["result"], json!({}), "{reply}");
        return;
    }
}

/// A legacy session opened by `client`, retried while its quota says so.
fn open_session(client: &mut Client) -> String {
    loop {
        let reply = client.post(
            &[],
            &request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "it", "version": "1"}}),
            ),
        );
        if let Some(session) = reply.header("mcp-session-id") {
            let session = session.to_owned();
            loop {
                let initialized = client.post(
                    &session_headers(&session),
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                );
                if initialized.status != 429 {
                    assert_eq!(initialized.status, 202);
                    return session;
                }
                thread::sleep(Duration::from_millis(200));
            }
        }
        if reply.status != 429 {
            assert_eq!(reply.json()["error"]["code"], -31429, "{reply:?}");
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Holds: 128 sessions from 8 addresses (16 each, the per-client cap), each subscribed to as
/// much as it may (32 URIs, 31 of them 280-byte template URIs, so a session told that
/// everything may have changed gets its largest events), each with a `GET` stream on a
/// socket with a 1 KiB receive window that is never read, while four other clients announce
/// 1,200 changes. The announcers are never held up, and memory stays bounded (release: 1,008
/// such sessions from 63 addresses and 8,000 announcements peaked at 37 MiB, 20 MiB of it
/// the open streams; 128 sessions, 10 MiB).
#[test]
fn never_read_get_streams_of_many_sessions_under_an_announcement_flood_hold_bounded_memory() {
    crate::support::processes::raise_open_files(4096);
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let mut streams = Vec::new();
    for a in 0..8_u8 {
        let source = Ipv4Addr::new(127, 0, 0, 2 + a);
        let mut client = Client::new(addr, source);
        for _ in 0..16 {
            let session = open_session(&mut client);
            subscribe(&mut client, &session, WATCHED);
            for n in 0..31 {
                let uri = format!("test://template/{}{n:02}/data", "x".repeat(250));
                subscribe(&mut client, &session, &uri);
            }
            let mut stream = connect(addr, source, Some(1024));
            stream.write_all(&get_stream_bytes(addr, &session)).unwrap();
            streams.push(stream);
        }
    }
    let started = Instant::now();
    let announcers: Vec<_> = (0..4_u8)
        .map(|n| {
            thread::spawn(move || {
                let mut client = Client::new(addr, Ipv4Addr::new(127, 0, 1, 1 + n));
                let session = open_session(&mut client);
                let touch = request(
                    3,
                    "tools/call",
                    json!({"name": "test_touch_watched_resource", "arguments": {}}),
                );
                for _ in 0..300 {
                    let reply = client.post(&session_headers(&session), &touch);
                    assert_eq!(reply.status, 200, "{reply:?}");
                }
            })
        })
        .collect();
    for announcer in announcers {
        announcer.join().unwrap();
    }
    let took = started.elapsed();
    thread::sleep(Duration::from_secs(1));
    let peak = processes::peak_rss_kib(server.pid());
    eprintln!(
        "128 never-read streams, 1,200 announcements in {took:?}: peak RSS {} MiB",
        peak / 1024
    );
    assert!(
        took < Duration::from_secs(60),
        "the announcers waited: {took:?}"
    );
    assert!(peak <= 64 * 1024, "peak RSS {peak} KiB");
    drop(streams);
}

/// Finding 3 (low): a `GET` and the `DELETE` of its session sent at once (on two
/// connections, in both orders) race: the `GET` finds the session, the `DELETE` ends it and
/// answers `204`, and the stream is then installed on the ended session. That stream is not
/// ended: it stays open at least until its first keepalive (15 s), some past 30 s sending
/// keepalives, and it goes on delivering the ended session's
/// `notifications/resources/updated` when another session announces a change. Release
/// conformance fixture: 5 such streams in 1,500 runs (547 streams opened before their
/// DELETE), one ending after 15 s, four still open after 30 s; debug: 4 in 1,500, three of
/// them delivering the update after the `204`. The session table's caps no longer count
/// such a session. Reproduce: `initialize`, `notifications/initialized`,
/// `resources/subscribe` `test://watched-resource`, then write the `GET /mcp` (Accept
/// `text/event-stream`, the session id and version) and the `DELETE /mcp` on two fresh
/// connections back to back; repeat. The race is narrow: this test tries [`RACE_RUNS`] times.
///
/// Fixed: a session that ends is marked so under the lock that holds its stream, and a
/// stream that comes after is stopped at once (its `GET` answered `404`, session not found).
/// Runs of the race: each costs about five requests of the fixture's per-client quota. The
/// race itself is pinned by the unit test `a_stream_made_after_its_session_ended_is_stopped_at_once`.
const RACE_RUNS: usize = 300;

#[test]
fn a_get_raced_with_its_sessions_delete_ends_with_the_session() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let mut client = Client::new(addr, Ipv4Addr::LOCALHOST);
    let mut announcer = Client::new(addr, Ipv4Addr::new(127, 0, 0, 9));
    let announcing = open_session(&mut announcer);
    let touch = request(
        3,
        "tools/call",
        json!({"name": "test_touch_watched_resource", "arguments": {}}),
    );
    let mut opened = 0;
    let mut limited = 0;
    for run in 0..RACE_RUNS {
        let session = open_session(&mut client);
        subscribe(&mut client, &session, WATCHED);
        let delete = format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\r\n"
        );
        let get = TcpStream::connect(addr).unwrap();
        let mut del = TcpStream::connect(addr).unwrap();
        let mut get = if run % 2 == 0 {
            let get = Stream::send_on(get, &get_stream_bytes(addr, &session));
            del.write_all(delete.as_bytes()).unwrap();
            get
        } else {
            del.write_all(delete.as_bytes()).unwrap();
            Stream::send_on(get, &get_stream_bytes(addr, &session))
        };
        del.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        let mut deleted = Vec::new();
        let _read = del.read_to_end(&mut deleted);
        if deleted.starts_with(b"HTTP/1.1 429") {
            // The client's request quota (this test sends ~5 requests a run): the run proves
            // nothing; wait for the quota and go on.
            limited += 1;
            thread::sleep(Duration::from_millis(1100));
            continue;
        }
        assert!(
            deleted.starts_with(b"HTTP/1.1 204"),
            "{}",
            String::from_utf8_lossy(&deleted)
        );
        // A refusal is one JSON body on a kept-alive connection; a stream must end by itself.
        let ended = get.ends(Duration::from_secs(2));
        let seen = get.raw();
        if seen.starts_with(b"HTTP/1.1 429") {
            // The GET was refused for the quota: this run proves nothing either.
            limited += 1;
            thread::sleep(Duration::from_millis(1100));
            continue;
        }
        if seen.starts_with(b"HTTP/1.1 200") {
            opened += 1;
            if !ended {
                let reply = announcer.post(&session_headers(&announcing), &touch);
                assert_eq!(reply.status, 200);
                get.forget();
                get.hears("notifications/resources/updated", Duration::from_secs(3));
                panic!(
                    "run {run}: the stream is open 2 s after its session's DELETE was answered 204; \
                     after another session's announcement it carried: {:?}",
                    get.text()
                );
            }
        } else {
            assert!(
                seen.starts_with(b"HTTP/1.1 404"),
                "{}",
                String::from_utf8_lossy(seen)
            );
        }
    }
    eprintln!(
        "{opened} of {RACE_RUNS} runs ({limited} cut by the quota) opened a stream before \
         their session's DELETE; all ended"
    );
    assert!(
        limited < RACE_RUNS / 2,
        "too few runs decided: {limited} cut by the quota"
    );
}

/// Holds: nothing of a `GET`'s head comes back, whatever it is refused for (or when it is
/// served): a canary in the session id, the version header, `Accept`, `Last-Event-ID`, the
/// path, the query or an unknown header is never in the reply's bytes.
#[test]
fn get_refusals_and_streams_echo_nothing_of_the_request_head() {
    const CANARY: &str = "zq7canaryrtrelease";
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let session = initialize(addr);
    let cases: Vec<(String, u16)> = vec![
        // No session.
        (
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nX-{CANARY}: {CANARY}\r\n\r\n"
            ),
            400,
        ),
        // A session nobody has.
        (
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {CANARY}\r\n\r\n"
            ),
            404,
        ),
        // Not accepting events.
        (
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/{CANARY}\r\nMcp-Session-Id: {session}\r\n\r\n"
            ),
            406,
        ),
        // A version that is not the session's.
        (
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: {CANARY}\r\n\r\n"
            ),
            400,
        ),
        // Another path, a query.
        (
            format!(
                "GET /{CANARY}?{CANARY}=1 HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n"
            ),
            404,
        ),
        (
            format!(
                "GET /mcp?{CANARY}=1 HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {CANARY}\r\n\r\n"
            ),
            404,
        ),
        // A foreign Host and Origin.
        (
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {CANARY}.example\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n"
            ),
            421,
        ),
        (
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{CANARY}.example\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n"
            ),
            403,
        ),
    ];
    for (raw, status) in &cases {
        let mut conn = Stream::send(addr, raw.as_bytes());
        conn.read_for(Duration::from_secs(2), |body| !body.is_empty());
        let text = String::from_utf8_lossy(conn.raw()).to_ascii_lowercase();
        assert!(
            text.starts_with(&format!("http/1.1 {status}")),
            "{raw:?}: {text}"
        );
        assert!(!text.contains(CANARY), "{raw:?}: {text}");
    }
    // Served: a Last-Event-ID and an unknown header are ignored, and nothing of them sent.
    let mut conn = Stream::send(
        addr,
        format!(
            "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\
             Last-Event-ID: {CANARY}\r\nX-{CANARY}: {CANARY}\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(
        post(
            addr,
            &session_headers(&session),
            &request(1, "resources/subscribe", json!({"uri": WATCHED}))
        )
        .status,
        200
    );
    let touch = request(
        2,
        "tools/call",
        json!({"name": "test_touch_watched_resource", "arguments": {}}),
    );
    assert_eq!(post(addr, &session_headers(&session), &touch).status, 200);
    conn.hears("notifications/resources/updated", REPLY_TIMEOUT);
    let text = String::from_utf8_lossy(conn.raw());
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("notifications/resources/updated"), "{text}");
    assert!(!text.to_ascii_lowercase().contains(CANARY), "{text}");
}

// ---------------------------------------------------------------------------------------
// [[resource]] reads under races
// ---------------------------------------------------------------------------------------

/// Holds: while another process exchanges (`renameat2(RENAME_EXCHANGE)`, atomic) the listed
/// `a.txt` with a symbolic link to a file outside the root, a hard link to it, a dot-file
/// holding the secret and a directory, as fast as it can, every read is the original or
/// `resource not found`, never the secret, a path or an OS message. Release: 1,000 reads
/// paced under the cheap-method quota against 1.2 million exchanges, 502 original, 498 not
/// found.
#[test]
fn a_listed_file_exchanged_in_a_tight_loop_serves_only_itself() {
    let tree = Tree::new("exchange");
    let docs = tree.docs();
    std::fs::write(docs.join("a.txt"), "original").unwrap();
    let mut server = tree.serve_with(&format!("{ECHO}{DOCS}"), &[]);
    std::os::unix::fs::symlink(tree.dir.join("outside.txt"), docs.join(".sym")).unwrap();
    std::fs::hard_link(tree.dir.join("outside.txt"), docs.join(".hard")).unwrap();
    std::fs::write(docs.join(".dot"), SECRET).unwrap();
    std::fs::create_dir(docs.join(".dir")).unwrap();
    std::fs::write(docs.join(".dir/inside"), SECRET).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let docs = docs.clone();
        thread::spawn(move || {
            let listed = docs.join("a.txt");
            let mut swaps = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                for other in [".sym", ".hard", ".dot", ".dir"] {
                    for _ in 0..2 {
                        rustix::fs::renameat_with(
                            rustix::fs::CWD,
                            &listed,
                            rustix::fs::CWD,
                            docs.join(other),
                            rustix::fs::RenameFlags::EXCHANGE,
                        )
                        .unwrap();
                        swaps += 1;
                    }
                }
            }
            swaps
        })
    };
    let (mut original, mut refused) = (0, 0);
    for id in 1..=400_u64 {
        // Under the cheap-method quota (6,000 a minute, a burst of 200).
        thread::sleep(Duration::from_millis(10));
        let reply = server.request(&request(
            id,
            "resources/read",
            json!({"uri": "docs://a.txt"}),
        ));
        let text = reply.to_string();
        for leak in [SECRET, "/tmp", "os error", "denied", "symbolic"] {
            assert!(!text.contains(leak), "`{leak}` in {text}");
        }
        if reply["result"]["contents"][0]["text"] == "original" {
            original += 1;
        } else {
            assert_eq!(reply["error"], not_found(), "{text}");
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{original} original, {refused} not found, under {swaps} exchanges");
    assert!(
        original > 0,
        "the listed file is served between the exchanges"
    );
}

// ---------------------------------------------------------------------------------------
// Echoes over stdio
// ---------------------------------------------------------------------------------------

/// Holds: 25 hostile `prompts/get`, `completion/complete`, `resources/*` and cursor requests
/// with a canary in every peer-chosen place (an undeclared argument's name, an argument's
/// value, a prompt name, a completion's ref and argument, URIs with `./`, `%2e`, NUL, case
/// and scheme changes, an extra member, cursors, a log level): every reply is a fixed
/// refusal holding nothing of the canary, and the session goes on.
#[test]
fn hostile_prompt_resource_and_completion_requests_echo_nothing() {
    const C: &str = "zq7canary";
    let tree = Tree::new("echo");
    std::fs::write(tree.docs().join("a.txt"), "hi").unwrap();
    let mut server = tree.serve_with(
        &format!(
            "{ECHO}\n[[prompt]]\nname = \"review\"\ndescription = \"r\"\n\
         arguments = [ {{ name = \"change\", required = true }}, {{ name = \"focus\" }} ]\n\
         messages = [ {{ role = \"user\", text = \"Review {{change}} for {{focus}}.\" }} ]\n{DOCS}"
        ),
        &[],
    );
    let prompt_refusal = "Invalid params: the prompt's arguments must be an object of the strings it declares, with every required one.";
    let probes = [
        (
            "prompts/get",
            json!({"name": "review", "arguments": {"change": "x", C: "y"}}),
            prompt_refusal,
        ),
        (
            "prompts/get",
            json!({"name": "review", "arguments": {"change": "x", "focus": C, "zz": 1}}),
            prompt_refusal,
        ),
        (
            "prompts/get",
            json!({"name": C, "arguments": {}}),
            "Invalid params: unknown prompt.",
        ),
        (
            "prompts/get",
            json!({"name": "review", "arguments": {"change": {C: C}}}),
            prompt_refusal,
        ),
        (
            "prompts/get",
            json!({"name": "review", "arguments": [C]}),
            prompt_refusal,
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": C}, "argument": {"name": "change", "value": C}}),
            "Invalid params: unknown prompt.",
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": C, "value": C}}),
            "Invalid params.",
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": format!("docs://{C}")}, "argument": {"name": "x", "value": C}}),
            "Invalid params: resource not found.",
        ),
        (
            "completion/complete",
            json!({"ref": {"type": C}, "argument": {"name": "x", "value": C}}),
            "Invalid params.",
        ),
        (
            "resources/read",
            json!({"uri": format!("docs://{C}")}),
            "Invalid params: resource not found.",
        ),
        (
            "resources/read",
            json!({"uri": "docs://a.txt", "extra": C}),
            "Invalid params.",
        ),
        (
            "resources/read",
            json!({"uri": format!("docs://a.txt/{C}")}),
            "Invalid params: resource not found.",
        ),
        (
            "resources/read",
            json!({"uri": "docs://./a.txt"}),
            "Invalid params: resource not found.",
        ),
        (
            "resources/read",
            json!({"uri": "docs://A.TXT"}),
            "Invalid params: resource not found.",
        ),
        (
            "resources/read",
            json!({"uri": "docs://a.txt\u{0}"}),
            "Invalid params: resource not found.",
        ),
        (
            "resources/read",
            json!({"uri": "docs://a%2etxt"}),
            "Invalid params: resource not found.",
        ),
        (
            "resources/read",
            json!({"uri": "DOCS://a.txt"}),
            "Invalid params: resource not found.",
        ),
        (
            "resources/subscribe",
            json!({"uri": format!("docs://{C}")}),
            "Method not found.",
        ),
        (
            "resources/templates/list",
            json!({"cursor": C}),
            "Invalid params: unknown cursor.",
        ),
        (
            "resources/list",
            json!({"cursor": C}),
            "Invalid params: unknown cursor.",
        ),
        (
            "prompts/list",
            json!({"cursor": C}),
            "Invalid params: unknown cursor.",
        ),
        ("logging/setLevel", json!({"level": C}), "Invalid params."),
    ];
    for (n, (method, params, message)) in probes.iter().enumerate() {
        let reply = server.request(&request(n as u64 + 1, method, params.clone()));
        let text = reply.to_string();
        assert!(!text.contains(C), "{method} {params}: {text}");
        assert_eq!(
            reply["error"]["message"], *message,
            "{method} {params}: {text}"
        );
    }
    let ping = server.request(&request(99, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

// ---------------------------------------------------------------------------------------
// Hangs
// ---------------------------------------------------------------------------------------

/// Whether process `pid` has exited (gone, or a zombie waiting to be reaped).
fn exited(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
    })
}

/// Holds: `SIGTERM` with open `GET` streams (one per session, never ending by themselves)
/// and a `GET` that never reads stops the server at once; the streams end (release: exit
/// 0 after under 10 ms, the stream's connection closed).
#[test]
fn sigterm_with_open_get_streams_stops_the_server_at_once() {
    let server = HttpServer::fixtures();
    let addr = server.addr;
    let mut streams = Vec::new();
    for n in 0..4 {
        let session = initialize(addr);
        let stream = if n == 0 {
            Stream::get_unread(addr, &listen_headers(&session))
        } else {
            Stream::get(addr, None, &listen_headers(&session))
        };
        assert!(stream.head().starts_with("HTTP/1.1 200"), "{stream:?}");
        streams.push(stream);
    }
    let started = Instant::now();
    processes::signal(server.pid(), "TERM");
    while !exited(server.pid()) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the server did not stop on SIGTERM with streams open"
        );
        thread::sleep(Duration::from_millis(20));
    }
    for mut stream in streams.into_iter().skip(1) {
        assert!(
            stream.ends(Duration::from_secs(5)),
            "a stream outlived the server"
        );
    }
}
