//! The OTLP exporter (`airlock serve --otlp`) red-teamed as a hostile collector on loopback:
//! one that reads the export and never answers, one that drips its head a line at a time,
//! one that announces a huge body and pours bytes without end, and one that answers
//! `100 Continue` and nothing more. While each holds the export thread, airlock must keep
//! answering its client, and at the end of input it must exit within the exporter's
//! shutdown bound (`SPAN_SHUTDOWN_TIMEOUT`, 5 s) however the collector behaves. A finding:
//! an interim `100 Continue` before the answer was taken for the answer (fixed). And as a
//! client: a string request id put a line separator or a bidirectional override into its
//! span as it was sent (fixed: escaped like control characters).
//!
//! (The rest of the client side, the trace context a span carries, is in `otel` and the
//! library's unit tests: `traceparent` read strictly, `tracestate` checked, string ids cut.)

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::fixtures::Scratch;
use crate::support::stdio::{Server, airlock, request};

/// How a hostile collector answers an export.
#[derive(Clone, Copy, Debug)]
enum Collector {
    /// Reads the request and never answers.
    Never,
    /// Writes a status line, then one header line a second, never ending the head.
    Drip,
    /// Announces a body of 10^12 bytes and pours bytes until the client goes.
    Endless,
    /// `100 Continue`, then nothing.
    Continue,
}

/// A manifest of one tool that says a word.
const SAY: &str =
    "[[tool]]\nname = \"say\"\ndescription = \"Says a word\"\ncommand = [\"echo\", \"hi\"]\n";

/// `airlock serve` of `manifest`, exporting traces to the collector on `port`, initialized.
fn traced(manifest: &str, port: u16) -> Server {
    let url = format!("http://127.0.0.1:{port}");
    let mut server = Server::start_with(
        &airlock(),
        &["serve", "--manifest", manifest, "--otlp", &url],
        &[],
    );
    server.initialize("2025-11-25");
    server
}

/// Starts the collector on loopback; its port, and how many connections it accepted.
fn collector(kind: Collector) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            thread::spawn(move || answer(kind, stream));
        }
    });
    (port, accepted)
}

fn answer(kind: Collector, mut stream: TcpStream) {
    let mut chunk = [0_u8; 64 * 1024];
    // The head and some of the body: enough for the client to wait on the answer.
    let _read = stream.read(&mut chunk);
    match kind {
        Collector::Never => while stream.read(&mut chunk).is_ok_and(|read| read > 0) {},
        Collector::Drip => {
            let _sent = stream.write_all(b"HTTP/1.1 200 OK\r\n");
            while stream.write_all(b"X-Drip: 1\r\n").is_ok() {
                thread::sleep(Duration::from_secs(1));
            }
        }
        Collector::Endless => {
            let _sent =
                stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n");
            let bytes = vec![b'x'; 64 * 1024];
            while stream.write_all(&bytes).is_ok() {}
        }
        Collector::Continue => {
            let _sent = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
            while stream.read(&mut chunk).is_ok_and(|read| read > 0) {}
        }
    }
}

/// Each hostile collector holds the export thread: the client's pings are still answered at
/// once, and the end of input ends airlock within the shutdown bound (5 s, and 3 s for a
/// loaded machine). The four run side by side.
#[test]
fn a_hostile_collector_neither_slows_serving_nor_holds_shutdown() {
    let scratch = Scratch::new("rt-otel-collectors");
    let manifest = scratch.manifest(SAY);
    let kinds = [
        Collector::Never,
        Collector::Drip,
        Collector::Endless,
        Collector::Continue,
    ];
    let mut servers: Vec<(Collector, Server, Arc<AtomicUsize>)> = kinds
        .iter()
        .map(|&kind| {
            let (port, accepted) = collector(kind);
            (kind, traced(&manifest, port), accepted)
        })
        .collect();
    for (_, server, _) in &mut servers {
        for id in 0..200 {
            server.send(&request(id, "ping", json!({})));
        }
        for _ in 0..200 {
            let _reply = server.recv();
        }
    }
    // The export interval (1 s) passes: each exporter is now held by its collector.
    thread::sleep(Duration::from_millis(1_500));
    for (kind, server, accepted) in &mut servers {
        assert!(
            accepted.load(Ordering::SeqCst) > 0,
            "{kind:?}: no export was attempted"
        );
        let sent = Instant::now();
        let reply = server.request(&request(1_000, "ping", json!({})));
        assert!(reply["result"].is_object(), "{kind:?}: {reply}");
        assert!(
            sent.elapsed() < Duration::from_secs(1),
            "{kind:?}: a ping waited {:?} on the exporter",
            sent.elapsed()
        );
    }
    let closed = Instant::now();
    for (_, server, _) in &mut servers {
        server.close_stdin();
    }
    for (kind, server, _) in &mut servers {
        server.wait(Duration::from_secs(8).saturating_sub(closed.elapsed()));
        eprintln!(
            "{kind:?}: exited {:?} after the end of input",
            closed.elapsed()
        );
    }
}

/// Reads one HTTP request (head and `Content-Length` body); `false` at the end of the stream.
fn read_request(stream: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut chunk = [0_u8; 64 * 1024];
    let body_at = loop {
        if let Some(at) = seen.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk) {
            Ok(read) if read > 0 => seen.extend_from_slice(&chunk[..read]),
            _ => return false,
        }
    };
    let head = String::from_utf8_lossy(&seen[..body_at]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while seen.len() < body_at + length {
        match stream.read(&mut chunk) {
            Ok(read) if read > 0 => seen.extend_from_slice(&chunk[..read]),
            _ => return false,
        }
    }
    true
}

/// Finding (fixed): a collector (or a proxy before it) may send an interim `100 Continue`
/// before its final answer, asked for or not, and HTTP/1.1 clients must read past it (RFC
/// 9110, 15.2). airlock's client took the `100` for the answer, with no length, and gave up on
/// it as larger than it reads: every export to such a collector was logged as failed ("spans
/// could not be exported"), though the collector had it, and no connection was kept. Here
/// the collector answers each export with `100 Continue` then `200 OK` on a kept connection:
/// the exports arrive, and none is logged as failed.
#[test]
fn an_interim_100_continue_before_the_answer_is_read_past() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let exports = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&exports);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let counted = Arc::clone(&counted);
            thread::spawn(move || {
                while read_request(&mut stream) {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\
                                   Content-Length: 0\r\n\r\n";
                    if stream.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let scratch = Scratch::new("rt-otel-continue");
    let manifest = scratch.manifest(SAY);
    let mut server = traced(&manifest, port);
    let started = Instant::now();
    let mut id = 0;
    while started.elapsed() < Duration::from_millis(3_500) {
        id += 1;
        let reply = server.request(&request(id, "ping", json!({})));
        assert!(reply["result"].is_object(), "{reply}");
        thread::sleep(Duration::from_millis(20));
    }
    let received = exports.load(Ordering::SeqCst);
    let log = server.stderr();
    assert!(received >= 2, "{received} export(s) in 3.5 s\n{log}");
    assert!(!log.contains("could not be exported"), "{log}");
}

/// Finding (fixed): a string request id becomes the span's `jsonrpc.request.id`, with its
/// control characters escaped so that "a collector or a viewer must not take it for a line
/// break". U+2028 and U+2029 (line and paragraph separators, line breaks to JavaScript and
/// many viewers) and bidirectional overrides such as U+202E, which show another text than
/// the one sent, are not control characters and passed as they were. They are now escaped
/// too, as every character `airlock::is_invisible` names. The collector here keeps the raw
/// export bodies.
#[test]
fn a_string_id_reaches_no_span_with_a_line_separator_or_a_bidi_override() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bodies = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let kept = Arc::clone(&bodies);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let kept = Arc::clone(&kept);
            thread::spawn(move || {
                let mut chunk = [0_u8; 64 * 1024];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|window| window == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(read) if read > 0 => seen.extend_from_slice(&chunk[..read]),
                        _ => return,
                    }
                }
                // The body follows within a moment: keep what comes for 300 ms.
                stream
                    .set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                while let Ok(read) = stream.read(&mut chunk) {
                    if read == 0 {
                        break;
                    }
                    seen.extend_from_slice(&chunk[..read]);
                }
                kept.lock().unwrap().extend_from_slice(&seen);
                let _sent = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            });
        }
    });
    let scratch = Scratch::new("rt-otel-ids");
    let manifest = scratch.manifest(SAY);
    let mut server = traced(&manifest, port);
    let id = "id\u{2028}line\u{2029}para\u{202E}desrever";
    let reply = server.request(&request(id, "ping", json!({})));
    assert!(reply["result"].is_object(), "{reply}");
    let started = Instant::now();
    let escaped = r"id\u{2028}line\u{2029}para\u{202e}desrever".as_bytes();
    loop {
        let seen = bodies.lock().unwrap().clone();
        for (name, raw) in [
            ("U+2028", "\u{2028}"),
            ("U+2029", "\u{2029}"),
            ("U+202E", "\u{202E}"),
        ] {
            assert!(
                !seen
                    .windows(raw.len())
                    .any(|window| window == raw.as_bytes()),
                "{name} reached the span as it was sent"
            );
        }
        if seen.windows(escaped.len()).any(|window| window == escaped) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no export carried the escaped id: {}",
            String::from_utf8_lossy(&seen)
        );
        thread::sleep(Duration::from_millis(100));
    }
}
