//! `airlock serve --http` against hostile clients: a client that fills the session
//! table, holds connections without speaking, never reads its replies, or only sends garbage,
//! while another client must still be served.

use crate::support::processes::rss_kib;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::json;

use crate::support::http::{HttpServer, connect_from, initialize_with, post};
use crate::support::stdio;

/// A `tools/list` in a legacy session, with `extra` headers; the HTTP status.
fn list_in(addr: SocketAddr, session: &str, extra: &[(&str, &str)]) -> u16 {
    let mut headers = vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    post(addr, &headers, &stdio::request(1, "tools/list", json!({}))).status
}

/// Item 2: token A opening sessions until the table is full no longer locks token B out. A at
/// its per-client cap loses its own least recently used session, and no one else's.
#[test]
fn one_identity_cannot_fill_the_session_table() {
    let env = [
        ("IT_TOKEN_A", "token-a-0123456789abcdef"),
        ("IT_TOKEN_B", "token-b-0123456789abcdef"),
    ];
    let server = HttpServer::airlock(
        &[
            "--auth-token-env",
            "IT_TOKEN_A",
            "--auth-token-env",
            "IT_TOKEN_B",
            "--max-sessions",
            "64",
            "--max-sessions-per-client",
            "16",
            // About 200 requests of one identity back to back: at 100,000 a minute (bursts
            // of 100) a quick machine went past the quota this test is not about (a 429 at
            // A's 57th session in CI); at a million it takes 60 µs a request.
            "--client-requests-per-minute",
            "1000000",
        ],
        &env,
    );
    let a = [("Authorization", "Bearer token-a-0123456789abcdef")];
    let b = [("Authorization", "Bearer token-b-0123456789abcdef")];
    let a_sessions: Vec<String> = (0..64).map(|_| initialize_with(server.addr, &a)).collect();
    let b_session = initialize_with(server.addr, &b);
    assert_eq!(list_in(server.addr, &b_session, &b), 200);
    // A keeps its 16 most recent sessions; the older ones are gone.
    for (n, session) in a_sessions.iter().enumerate() {
        let expected = if n >= 64 - 16 { 200 } else { 404 };
        assert_eq!(
            list_in(server.addr, session, &a),
            expected,
            "A's session {n}"
        );
    }
}

/// Keeps `count` idle connections from `from` open to `server` until `stop`, re-opening each
/// one the server closes; returns how many it opened in all.
fn idle_flood(
    server: SocketAddr,
    from: IpAddr,
    count: usize,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<usize> {
    thread::spawn(move || {
        let mut open: Vec<TcpStream> = Vec::with_capacity(count);
        let mut opened = 0;
        while !stop.load(Ordering::Relaxed) {
            // A closed socket reads 0; one the server refused has its 503 waiting, then
            // closes. Either is replaced; an idle live one reads nothing yet.
            open.retain(|socket| {
                let mut byte = [0_u8; 1];
                matches!(socket.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            });
            while open.len() < count && !stop.load(Ordering::Relaxed) {
                match connect_from(from, server, Duration::from_millis(500)) {
                    Ok(socket) => {
                        socket.set_nonblocking(true).unwrap();
                        open.push(socket);
                        opened += 1;
                    }
                    Err(_) => break,
                }
            }
            thread::sleep(Duration::from_millis(20));
        }
        opened
    })
}

/// One modern `tools/list` from `from` on a new connection, bounded in time; whether it got
/// `200` with the tools.
fn listed_from(from: IpAddr, server: SocketAddr) -> bool {
    let Ok(mut stream) = connect_from(from, server, Duration::from_secs(2)) else {
        return false;
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let request = crate::support::http::modern_bytes(server, 1, "tools/list", json!({}), &[]);
    if stream.write_all(&request).is_err() {
        return false;
    }
    let mut raw = Vec::new();
    if stream.read_to_end(&mut raw).is_err() && raw.is_empty() {
        return false;
    }
    raw.starts_with(b"HTTP/1.1 200") && raw.windows(7).any(|w| w == b"\"tools\"")
}

/// Item 3: one address holding 1,100 idle sockets, re-opened as fast as they are closed, no
/// longer locks out a client at another address: connection slots are capped per address at
/// accept, and a socket that sends no request head within the first-request deadline is
/// closed. (Before: 12 successes in 99.)
#[test]
fn idle_sockets_from_one_address_leave_another_address_served() {
    crate::support::processes::raise_open_files(8192);
    let server = HttpServer::airlock(&["--client-requests-per-minute", "100000"], &[]);
    let attacker: IpAddr = "127.0.0.2".parse().unwrap();
    let client: IpAddr = "127.0.0.1".parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flood = idle_flood(server.addr, attacker, 1100, Arc::clone(&stop));
    // Let the flood take what it can before the client comes.
    thread::sleep(Duration::from_secs(2));
    // Spread over more than the first-request deadline, so that the flood has sockets closed
    // under it and opens new ones while the client is served.
    let served = (0..100)
        .filter(|_| {
            thread::sleep(Duration::from_millis(60));
            listed_from(client, server.addr)
        })
        .count();
    stop.store(true, Ordering::Relaxed);
    let opened = flood.join().unwrap();
    eprintln!("legitimate client: {served} of 100 served; the flood opened {opened} sockets");
    assert!(
        opened >= 1100,
        "the flood never held 1,100 sockets ({opened} opened)"
    );
    assert!(served >= 95, "only {served} of 100 requests were served");
}

/// Peak resident memory allowed to the server while clients that never read hold their
/// replies (SECURITY.md): call replies are held under their call slots until written, and a
/// connection that takes no bytes for the write timeout is closed.
const NON_READING_CLIENTS_RSS_KIB: u64 = 48 * 1024;

/// Item 1: 300 clients that send a `read_file` of a 1 MiB file of control bytes (each escaped
/// to six bytes in the reply) and never read the reply. Before, each reply was held whole after
/// its call slot was released, and the server grew past a gigabyte; now the memory is bounded.
#[test]
fn clients_that_never_read_their_replies_hold_bounded_memory() {
    crate::support::processes::raise_open_files(8192);
    let manifest = r#"
[server]
name = "slow-readers"

[[tool]]
name = "read_file"
description = "Reads a file"
command = ["head", "--bytes=1048576", "--", "{path}"]
args.path = { type = "path", kind = "file" }
"#;
    let (dir, path) = crate::support::http::scratch_manifest("slow-readers", manifest);
    std::fs::write(dir.join("control.bin"), vec![1_u8; 1024 * 1024]).unwrap();
    let server = HttpServer::airlock(
        &[
            "--manifest",
            path.to_str().unwrap(),
            "--calls-per-minute",
            "1000000",
            "--call-burst",
            "1000000",
            "--client-calls-per-minute",
            "1000000",
            "--client-requests-per-minute",
            "1000000",
            "--client-in-flight",
            "8",
            "--max-connections-per-address",
            "1024",
        ],
        &[],
    );
    let call = crate::support::http::modern_bytes(
        server.addr,
        1,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "control.bin"}}),
        &[("Connection", "keep-alive")],
    );
    let mut sockets = Vec::new();
    for _ in 0..300 {
        let mut socket = TcpStream::connect(server.addr).unwrap();
        socket.write_all(&call).unwrap();
        sockets.push(socket);
        // Paced, so that each call finds a slot free if replies do not hold theirs.
        thread::sleep(Duration::from_millis(40));
    }
    // Until the server has done what it will with them: its memory stops moving.
    let mut last = 0;
    let mut still = 0;
    for _ in 0..150 {
        thread::sleep(Duration::from_millis(200));
        let now = rss_kib(server.pid());
        still = if now.abs_diff(last) < 1024 {
            still + 1
        } else {
            0
        };
        last = now;
        if still >= 10 {
            break;
        }
    }
    let peak = crate::support::processes::peak_rss_kib(server.pid());
    let (mut big, mut refused, mut none) = (0, 0, 0);
    for socket in &sockets {
        socket.set_nonblocking(true).unwrap();
        let mut head = [0_u8; 512];
        match socket.peek(&mut head) {
            Ok(n) if head[..n].starts_with(b"HTTP/1.1 200") => big += 1,
            Ok(n) if n > 0 => {
                if refused == 0 {
                    eprintln!("a refusal: {:?}", String::from_utf8_lossy(&head[..n]));
                }
                refused += 1
            }
            _ => none += 1,
        }
    }
    eprintln!("replies: {big} results, {refused} refusals, {none} nothing yet");
    drop(sockets);
    thread::sleep(Duration::from_secs(1));
    let after = rss_kib(server.pid());
    eprintln!(
        "300 non-reading clients: peak RSS {} MiB, {} MiB once they closed",
        peak / 1024,
        after / 1024
    );
    assert!(
        peak <= NON_READING_CLIENTS_RSS_KIB,
        "peak RSS {peak} KiB past the bound of {NON_READING_CLIENTS_RSS_KIB} KiB"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Item 5: behind a trusted proxy, clients are told apart by the address the proxy forwards
/// (here seen through the per-client session cap of 1: a client's second `initialize` ends its
/// first session); a peer that is not a listed proxy is keyed by its own address, whatever it
/// forwards.
#[test]
fn clients_behind_a_trusted_proxy_are_keyed_by_their_forwarded_address() {
    let server = HttpServer::airlock(
        &[
            "--trusted-proxy",
            "127.0.0.1/32",
            "--max-sessions-per-client",
            "1",
        ],
        &[],
    );
    let addr = server.addr;
    // Through the proxy (127.0.0.1): two clients, one session each, both kept.
    let a = [("X-Forwarded-For", "203.0.113.7")];
    let b = [("X-Forwarded-For", "198.51.100.1, 203.0.113.8")];
    let session_a = initialize_with(addr, &a);
    let session_b = initialize_with(addr, &b);
    assert_eq!(list_in(addr, &session_a, &a), 200);
    assert_eq!(list_in(addr, &session_b, &b), 200);
    // A second session of the first client ends its first, not the other's.
    let again_a = initialize_with(addr, &a);
    assert_eq!(list_in(addr, &session_a, &a), 404);
    assert_eq!(list_in(addr, &again_a, &a), 200);
    assert_eq!(list_in(addr, &session_b, &b), 200);
    // Not from the proxy (127.0.0.2): the forwarded addresses are ignored, and both
    // "clients" are one, whose second session ends its first.
    let spoofed = |forwarded: &str| -> (u16, Option<String>) {
        let body = stdio::request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "it", "version": "1"}}),
        );
        let request =
            crate::support::http::post_bytes(addr, &[("X-Forwarded-For", forwarded)], &body);
        let mut stream =
            connect_from("127.0.0.2".parse().unwrap(), addr, Duration::from_secs(2)).unwrap();
        stream.write_all(&request).unwrap();
        let reply = crate::support::http::read_reply(&mut stream);
        (
            reply.status,
            reply.header("mcp-session-id").map(str::to_owned),
        )
    };
    let (status, first) = spoofed("192.0.2.1");
    assert_eq!(status, 200);
    let (status, _second) = spoofed("192.0.2.2");
    assert_eq!(status, 200);
    let first = first.unwrap();
    let list = stdio::request(1, "tools/list", json!({}));
    let request = crate::support::http::post_bytes(
        addr,
        &[
            ("Mcp-Session-Id", &first),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        &list,
    );
    let mut stream =
        connect_from("127.0.0.2".parse().unwrap(), addr, Duration::from_secs(2)).unwrap();
    stream.write_all(&request).unwrap();
    assert_eq!(crate::support::http::read_reply(&mut stream).status, 404);
}

/// A POST of `body` from `from` on a new connection; the reply.
fn post_from(from: IpAddr, server: SocketAddr, body: &str) -> crate::support::http::Reply {
    let request = crate::support::http::post_bytes(server, &[], body);
    let mut stream = connect_from(from, server, Duration::from_secs(2)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(&request).unwrap();
    crate::support::http::read_reply(&mut stream)
}

/// Item 4: the garbage cut-off holds over HTTP as on stdio. A client whose last 256 requests
/// were all garbage is refused (`429`, connection closed) for a while, whatever it sends;
/// another address is served; a client that sends a valid request now and then never is.
#[test]
fn a_client_sending_only_garbage_is_cut_off_and_an_honest_one_is_not() {
    let server = HttpServer::airlock(&["--client-requests-per-minute", "1000000"], &[]);
    let addr = server.addr;
    let attacker: IpAddr = "127.0.0.2".parse().unwrap();
    let honest: IpAddr = "127.0.0.3".parse().unwrap();
    let valid = crate::support::http::modern_bytes(addr, 1, "tools/list", json!({}), &[]);
    let valid_from = |from: IpAddr| -> u16 {
        let mut stream = connect_from(from, addr, Duration::from_secs(2)).unwrap();
        stream.write_all(&valid).unwrap();
        crate::support::http::read_reply(&mut stream).status
    };
    // The honest client: 255 bad requests, one good, 255 bad, and it is still served.
    for round in 0..2 {
        for _ in 0..255 {
            assert_eq!(post_from(honest, addr, "{not json").status, 400);
        }
        assert_eq!(
            valid_from(honest),
            200,
            "honest client refused in round {round}"
        );
    }
    // The attacker: 256 in a row, then even a valid request is refused at once.
    for _ in 0..256 {
        assert_eq!(post_from(attacker, addr, "{not json").status, 400);
    }
    let mut stream = connect_from(attacker, addr, Duration::from_secs(2)).unwrap();
    stream.write_all(&valid).unwrap();
    let reply = crate::support::http::read_reply(&mut stream);
    assert_eq!(reply.status, 429, "{reply:?}");
    assert_eq!(reply.code(), -31_429);
    assert!(reply.header("retry-after").is_some());
    assert_eq!(reply.header("connection"), Some("close"));
    // Everyone else is served meanwhile.
    assert_eq!(valid_from("127.0.0.1".parse().unwrap()), 200);
    assert_eq!(valid_from(honest), 200);
}

/// Over HTTP as on stdio, a call of a tool the server does not
/// have neither counts toward the cut-off nor resets it. An agent looping on a made-up name is
/// never cut off, and garbage interleaved with such calls still is, after 256 garbage requests.
#[test]
fn unknown_tools_neither_count_nor_reset_the_cut_off_over_http() {
    let server = HttpServer::airlock(
        &[
            "--client-requests-per-minute",
            "1000000",
            "--client-calls-per-minute",
            "1000000",
            "--calls-per-minute",
            "1000000",
            "--call-burst",
            "1000000",
        ],
        &[],
    );
    let addr = server.addr;
    let unknown = crate::support::http::modern_bytes(
        addr,
        1,
        "tools/call",
        json!({"name": "made_up_tool", "arguments": {}}),
        &[],
    );
    let send = |from: IpAddr, request: &[u8]| -> crate::support::http::Reply {
        let mut stream = connect_from(from, addr, Duration::from_secs(2)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(request).unwrap();
        crate::support::http::read_reply(&mut stream)
    };
    let looping: IpAddr = "127.0.0.4".parse().unwrap();
    for n in 0..300 {
        let reply = send(looping, &unknown);
        assert_eq!(reply.code(), -32_602, "unknown-tool call {n}");
    }
    let mixed: IpAddr = "127.0.0.5".parse().unwrap();
    for n in 0..255 {
        assert_eq!(
            post_from(mixed, addr, "{not json").status,
            400,
            "garbage {n}"
        );
        assert_eq!(
            send(mixed, &unknown).code(),
            -32_602,
            "unknown after garbage {n}"
        );
    }
    // The 256th garbage request in a row (unknown-tool calls between them do not break the
    // run) cuts the client off.
    assert_eq!(post_from(mixed, addr, "{not json").status, 400);
    assert_eq!(send(mixed, &unknown).status, 429);
}
