//! Issue 35: what refused HTTP traffic may cost the operator. Refusals are logged as counts,
//! a web page cannot lock the user's own client out, a client cannot pick its key through a
//! forwarding header the proxy does not write, partial bodies are bounded in memory, repeated
//! or mismatched `Mcp-*` headers are `400`, and clients share the server-wide call quota.

use crate::support::processes;
use crate::support::processes::rss_kib;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::http::connect_from;
use crate::support::http::{HttpServer, Reply, read_reply};
use crate::support::stdio;

/// Sends `request` from `from` on a new connection; the reply.
fn send_from(from: IpAddr, server: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = connect_from(from, server, Duration::from_secs(2)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    read_reply(&mut stream)
}

/// A legacy `initialize` with `extra` headers; its status and session id.
fn initialize_via(addr: SocketAddr, extra: &[(&str, &str)]) -> (u16, Option<String>) {
    let body = stdio::request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "it", "version": "1"}}),
    );
    let reply = crate::support::http::post(addr, extra, &body);
    (
        reply.status,
        reply.header("mcp-session-id").map(str::to_owned),
    )
}

/// A legacy `tools/list` in `session` with `extra` headers; the status.
fn list_via(addr: SocketAddr, session: &str, extra: &[(&str, &str)]) -> u16 {
    let mut headers = vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    let body = stdio::request(1, "tools/list", json!({}));
    crate::support::http::post(addr, &headers, &body).status
}

/// Item 3: behind a proxy that appends to `X-Forwarded-For` (nginx, HAProxy, Envoy), a
/// `Forwarded` header the client wrote itself is passed through untouched and must be
/// ignored: it neither picks the client's key (seen through the per-client session cap of 1)
/// nor the address in the audit record. Before, `Forwarded` was believed first.
#[test]
fn a_client_written_forwarded_header_changes_neither_key_nor_audit_record() {
    let dir = std::env::temp_dir().join(format!("airlock-it-forwarded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("audit.jsonl");
    let server = HttpServer::airlock(
        &[
            "--trusted-proxy",
            "127.0.0.1/32",
            "--max-sessions-per-client",
            "1",
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[],
    );
    let addr = server.addr;
    let first = [
        ("X-Forwarded-For", "203.0.113.7"),
        ("Forwarded", "for=192.0.2.1"),
    ];
    let second = [
        ("X-Forwarded-For", "203.0.113.7"),
        ("Forwarded", "for=192.0.2.2"),
    ];
    let (status, session_one) = initialize_via(addr, &first);
    assert_eq!(status, 200);
    let (status, session_two) = initialize_via(addr, &second);
    assert_eq!(status, 200);
    // One client (203.0.113.7): its second session ended its first.
    assert_eq!(list_via(addr, &session_one.unwrap(), &first), 404);
    assert_eq!(list_via(addr, &session_two.unwrap(), &second), 200);
    // The audit record names the address the proxy appended, not the client's claim.
    let call = crate::support::http::modern_bytes(
        addr,
        2,
        "tools/call",
        json!({"name": "file_info", "arguments": {"path": "."}}),
        &[
            ("X-Forwarded-For", "203.0.113.7"),
            ("Forwarded", "for=192.0.2.3"),
        ],
    );
    let reply = crate::support::http::exchange(addr, &call);
    assert_eq!(reply.status, 200, "{reply:?}");
    let records = std::fs::read_to_string(&log).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(records.lines().last().expect("an audit record")).unwrap();
    assert_eq!(record["client"]["address"], "203.0.113.7", "{records}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Item 3, the other way: with `--trusted-proxy-header forwarded`, only `Forwarded` is read
/// and an `X-Forwarded-For` the client wrote is ignored.
#[test]
fn with_the_forwarded_header_configured_x_forwarded_for_is_ignored() {
    let server = HttpServer::airlock(
        &[
            "--trusted-proxy",
            "127.0.0.1/32",
            "--trusted-proxy-header",
            "forwarded",
            "--max-sessions-per-client",
            "1",
        ],
        &[],
    );
    let addr = server.addr;
    let first = [
        ("Forwarded", "for=203.0.113.9"),
        ("X-Forwarded-For", "192.0.2.1"),
    ];
    let second = [
        ("Forwarded", "for=203.0.113.9"),
        ("X-Forwarded-For", "192.0.2.2"),
    ];
    let (_, session_one) = initialize_via(addr, &first);
    let (_, session_two) = initialize_via(addr, &second);
    assert_eq!(list_via(addr, &session_one.unwrap(), &first), 404);
    assert_eq!(list_via(addr, &session_two.unwrap(), &second), 200);
}

/// Item 5: a repeated `Mcp-Name`, `Mcp-Method` or `MCP-Protocol-Version` is `400` + `-32020`
/// (a gateway reading the last value and airlock the first would see two tools); `Mcp-Name`
/// must match `prompts/get`'s name and `resources/read`'s URI as it does `tools/call`'s; and
/// only the specification's base64 form decodes. Before, the first value was read, only
/// `tools/call` was checked, and `=?BASE64?` was decoded.
#[test]
fn repeated_and_mismatched_mcp_headers_are_400() {
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    let call = json!({"name": "count_lines", "arguments": {"path": "README.md"}});
    let mut body_params = call.clone();
    body_params["_meta"] = stdio::modern_meta();
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": body_params})
        .to_string();
    let base = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "count_lines"),
    ];
    for (name, second) in [
        ("Mcp-Name", "read_file"),
        ("Mcp-Name", "count_lines"),
        ("Mcp-Method", "tools/list"),
        ("MCP-Protocol-Version", "2026-07-28"),
    ] {
        let mut headers = base.to_vec();
        headers.push((name, second));
        let reply = crate::support::http::post(addr, &headers, &body);
        assert_eq!(reply.status, 400, "{name}: {second}: {reply:?}");
        assert_eq!(reply.code(), -32_020, "{name}: {second}");
    }
    // Once each: served.
    assert_eq!(crate::support::http::post(addr, &base, &body).status, 200);
    // Another name, for each method that carries one.
    for (method, params, other) in [
        ("prompts/get", json!({"name": "review"}), "summary"),
        (
            "resources/read",
            json!({"uri": "file:///a.txt"}),
            "file:///b.txt",
        ),
        ("tools/call", call.clone(), "read_file"),
    ] {
        let reply =
            crate::support::http::modern(addr, 4, method, params.clone(), &[("Mcp-Name", other)]);
        assert_eq!(reply.status, 400, "{method}: {reply:?}");
        assert_eq!(reply.code(), -32_020, "{method}");
        let missing =
            crate::support::http::modern(addr, 5, method, params.clone(), &[("Mcp-Name", "")]);
        assert_eq!(missing.code(), -32_020, "{method} without Mcp-Name");
        // The right one passes the header check (whatever the engine then says).
        let right = crate::support::http::modern(addr, 6, method, params, &[]);
        assert!(
            right
                .json()
                .get("error")
                .is_none_or(|e| e["code"] != -32_020),
            "{method}: {right:?}"
        );
    }
    // Base64 only as the specification writes it: "count_lines" is Y291bnRfbGluZXM=.
    for (value, status) in [
        ("=?base64?Y291bnRfbGluZXM=?=", 200),
        ("=?BASE64?Y291bnRfbGluZXM=?=", 400),
        ("=?Base64?Y291bnRfbGluZXM=?=", 400),
        ("=?base64?Y291bnRfbGluZXM?=", 400),
    ] {
        let reply = crate::support::http::modern(
            addr,
            7,
            "tools/call",
            call.clone(),
            &[("Mcp-Name", value)],
        );
        assert_eq!(reply.status, status, "{value}: {reply:?}");
    }
    // The URL-safe alphabet: "??>" is Pz8+ in the standard one, Pz8- in the URL-safe one.
    let odd = json!({"name": "??>", "arguments": {}});
    let standard = crate::support::http::modern(
        addr,
        8,
        "tools/call",
        odd.clone(),
        &[("Mcp-Name", "=?base64?Pz8+?=")],
    );
    assert_ne!(standard.json()["error"]["code"], -32_020, "{standard:?}");
    let url_safe = crate::support::http::modern(
        addr,
        8,
        "tools/call",
        odd,
        &[("Mcp-Name", "=?base64?Pz8-?=")],
    );
    assert_eq!(url_safe.status, 400, "{url_safe:?}");
    assert_eq!(url_safe.code(), -32_020);
}

/// Reads one reply from a keep-alive connection (its head and `Content-Length` bytes); its
/// status, or `None` once the server closed the connection.
fn read_one(stream: &mut TcpStream) -> Option<u16> {
    let mut raw = Vec::new();
    let mut byte = [0_u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => raw.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0_u8; length];
    stream.read_exact(&mut body).ok()?;
    Some(status)
}

/// Sends `request` over and over on keep-alive connections from `from` for `how_long`
/// (reconnecting whenever the server closes one); the count of each status received.
fn flood(
    from: IpAddr,
    server: SocketAddr,
    request: Vec<u8>,
    how_long: Duration,
) -> std::collections::BTreeMap<u16, usize> {
    let mut statuses = std::collections::BTreeMap::new();
    let start = Instant::now();
    while start.elapsed() < how_long {
        let Ok(mut stream) = connect_from(from, server, Duration::from_secs(2)) else {
            continue;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        while start.elapsed() < how_long {
            if stream.write_all(&request).is_err() {
                break;
            }
            match read_one(&mut stream) {
                Some(status) => *statuses.entry(status).or_insert(0) += 1,
                None => break,
            }
        }
    }
    statuses
}

/// A request with `headers` and `body`, on a keep-alive connection.
fn keep_alive(
    addr: SocketAddr,
    method_path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Vec<u8> {
    let mut request = format!("{method_path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method_path.starts_with("POST") {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    request.into_bytes()
}

/// Bytes of every log line written so far.
fn log_bytes(server: &HttpServer) -> usize {
    server
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|line| line.len() + 1)
        .sum()
}

/// Item 1: 5 s of requests from one address without a token, refused for a foreign `Origin`,
/// write at most 256 KiB of log at the default level, and the lines state the status sent;
/// the same for requests over the request quota, whose lines said `status=200` for `429`.
/// Before: 15-23 MiB in 5 s, a line per refusal.
#[test]
fn a_refused_flood_writes_a_bounded_log_stating_the_status_sent() {
    const MAX_LOG_BYTES: usize = 256 * 1024;
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    let attacker: IpAddr = "127.0.0.2".parse().unwrap();
    let before = log_bytes(&server);
    let foreign = keep_alive(
        addr,
        "POST /mcp",
        &[
            ("Origin", "https://evil.example"),
            ("Content-Type", "application/json"),
        ],
        "{}",
    );
    let senders: Vec<_> = (0..4)
        .map(|_| {
            let foreign = foreign.clone();
            std::thread::spawn(move || flood(attacker, addr, foreign, Duration::from_secs(5)))
        })
        .collect();
    let mut statuses = std::collections::BTreeMap::new();
    for sender in senders {
        for (status, count) in sender.join().unwrap() {
            *statuses.entry(status).or_insert(0) += count;
        }
    }
    let written = log_bytes(&server) - before;
    eprintln!("foreign-Origin flood: {statuses:?}, {written} bytes of log");
    assert!(statuses.values().sum::<usize>() > 1000, "{statuses:?}");
    assert!(
        written <= MAX_LOG_BYTES,
        "{written} bytes of log for {statuses:?}"
    );
    // A legacy client over its request quota: the line says 429, as the reply did.
    let honest: IpAddr = "127.0.0.3".parse().unwrap();
    let list = stdio::request(1, "tools/list", json!({}));
    let legacy = keep_alive(
        addr,
        "POST /mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        &list,
    );
    let statuses = flood(honest, addr, legacy, Duration::from_secs(2));
    assert!(statuses.contains_key(&429), "{statuses:?}");
    let lines = server.log.lock().unwrap().clone();
    let quota: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("request quota") && line.contains("127.0.0.3"))
        .collect();
    assert!(!quota.is_empty(), "{lines:#?}");
    assert!(
        quota.iter().all(|line| line.contains("status=429")),
        "{quota:#?}"
    );
    let origin: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("Origin not allowed"))
        .collect();
    assert!(
        origin
            .iter()
            .all(|line| line.contains("status=403") && line.contains("127.0.0.2")),
        "{origin:#?}"
    );
}

/// Item 2: what a web page makes the browser send never counts toward the cut-off or the
/// quota of the local client at the same address. 300 `<img src=…/x.png>` requests and 300
/// `no-cors` `fetch` POSTs from a foreign origin, all from 127.0.0.1, leave a local client at
/// 127.0.0.1 served; the page's own requests are cut off, cheaply. Before, the 256th refusal
/// cut the address off and the local client got `429` for 60 s.
#[test]
fn a_web_page_flooding_the_port_does_not_lock_the_local_client_out() {
    let server = HttpServer::airlock(&[], &[]);
    let addr = server.addr;
    let local: IpAddr = "127.0.0.1".parse().unwrap();
    let image = keep_alive(
        addr,
        "GET /x.png",
        &[
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "no-cors"),
            ("Sec-Fetch-Dest", "image"),
            ("Connection", "close"),
        ],
        "",
    );
    let no_cors = keep_alive(
        addr,
        "POST /mcp",
        &[
            ("Origin", "https://evil.example"),
            ("Content-Type", "text/plain"),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "no-cors"),
            ("Connection", "close"),
        ],
        "{}",
    );
    let old_image = keep_alive(addr, "GET /mcp", &[("Connection", "close")], "");
    let mut page = std::collections::BTreeMap::new();
    for request in [&image, &no_cors, &old_image] {
        for _ in 0..300 {
            let status = send_from(local, addr, request).status;
            *page.entry(status).or_insert(0) += 1;
        }
    }
    eprintln!("the page's requests: {page:?}");
    assert!(page.contains_key(&429), "the page is cut off: {page:?}");
    let valid = crate::support::http::modern_bytes(addr, 1, "tools/list", json!({}), &[]);
    for n in 0..3 {
        let reply = send_from(local, addr, &valid);
        assert_eq!(reply.status, 200, "local client, request {n}: {reply:?}");
    }
    // The lone attacker (bad POSTs without a page's headers) is still cut off by its address:
    // `http_abuse::a_client_sending_only_garbage_is_cut_off_and_an_honest_one_is_not`.
}

/// Peak resident memory allowed to the server while 512 partial bodies arrive (issue 35).
const PARTIAL_BODIES_PEAK_KIB: u64 = 64 * 1024;

/// Item 4: 512 connections from 8 addresses each send the head of a 1 MiB POST and all of
/// its body but the last KiB, and hold it. The bytes held in partial bodies are bounded
/// server-wide and per client, so the server's peak stays under 64 MiB and its memory comes
/// back once the connections close; bodies past a share are refused (`429` per client, `503`
/// server-wide) before they are read. Before: 548-560 MiB, 291-500 MiB after they closed.
#[test]
fn partial_bodies_from_many_connections_hold_bounded_memory() {
    crate::support::processes::raise_open_files(4096);
    let server = HttpServer::airlock(&["--client-requests-per-minute", "1000000"], &[]);
    let addr = server.addr;
    let start = rss_kib(server.pid());
    let length = 1024 * 1024;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: {length}\r\n\r\n"
    );
    let body = vec![b' '; length - 1024];
    let senders: Vec<_> = (0..8_u8)
        .map(|n| {
            let (head, body) = (head.clone(), body.clone());
            std::thread::spawn(move || {
                let from: IpAddr = format!("127.0.0.{}", 10 + n).parse().unwrap();
                let mut held = Vec::new();
                for _ in 0..64 {
                    let Ok(mut socket) = connect_from(from, addr, Duration::from_secs(2)) else {
                        continue;
                    };
                    socket
                        .set_write_timeout(Some(Duration::from_secs(2)))
                        .unwrap();
                    // A refused body's connection is closed: the write fails, and that is fine.
                    let _sent = socket
                        .write_all(head.as_bytes())
                        .and_then(|()| socket.write_all(&body));
                    held.push(socket);
                }
                held
            })
        })
        .collect();
    let held: Vec<TcpStream> = senders
        .into_iter()
        .flat_map(|sender| sender.join().unwrap())
        .collect();
    // Until the server has read what it will: its memory stops moving.
    let mut last = 0;
    let mut still = 0;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        let now = rss_kib(server.pid());
        still = if now.abs_diff(last) < 512 {
            still + 1
        } else {
            0
        };
        last = now;
        if still >= 5 {
            break;
        }
    }
    let peak = processes::peak_rss_kib(server.pid());
    let mut statuses = std::collections::BTreeMap::new();
    for socket in &held {
        socket.set_nonblocking(true).unwrap();
        let mut head = [0_u8; 12];
        let status = match socket.peek(&mut head) {
            Ok(12) => String::from_utf8_lossy(&head[9..12]).into_owned(),
            _ => "held".to_owned(),
        };
        *statuses.entry(status).or_insert(0) += 1;
    }
    drop(held);
    // The bodies' buffers are given back once their connections close.
    let mut after = rss_kib(server.pid());
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        after = rss_kib(server.pid());
        if after <= start + 16 * 1024 {
            break;
        }
    }
    eprintln!(
        "512 partial bodies: {statuses:?}; RSS {} MiB at start, peak {} MiB, {} MiB after",
        start / 1024,
        peak / 1024,
        after / 1024
    );
    assert!(
        peak <= PARTIAL_BODIES_PEAK_KIB,
        "peak {peak} KiB past {PARTIAL_BODIES_PEAK_KIB} KiB"
    );
    assert!(
        after <= start + 16 * 1024,
        "{after} KiB after the connections closed, from {start} KiB"
    );
    // The server still serves.
    let reply = crate::support::http::modern(addr, 1, "tools/list", json!({}), &[]);
    assert_eq!(reply.status, 200);
}

/// Item 1, the audit log: 3 s of calls over the client's call quota from one address leave
/// one record for the first refusal (the rest are counted into a `refused_calls` record once
/// a minute), not one each; and the file rotates at `--audit-log-max-bytes`, keeping
/// `--audit-log-keep` files. Before: 17 KiB/s of records per address, no size bound.
#[test]
fn refused_calls_are_counted_in_the_audit_log_and_the_file_rotates() {
    let dir = std::env::temp_dir().join(format!("airlock-it-audit-35-{}", std::process::id()));
    let _fresh = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("audit.jsonl");
    let server = HttpServer::airlock(
        &[
            "--audit-log",
            log.to_str().unwrap(),
            "--audit-log-max-bytes",
            "4096",
            "--audit-log-keep",
            "2",
            "--client-calls-per-minute",
            "60",
            "--client-requests-per-minute",
            "1000000",
        ],
        &[],
    );
    let addr = server.addr;
    let call = crate::support::http::modern_bytes(
        addr,
        1,
        "tools/call",
        json!({"name": "file_info", "arguments": {"path": "."}}),
        &[],
    );
    let statuses = flood(
        "127.0.0.1".parse().unwrap(),
        addr,
        call,
        Duration::from_secs(3),
    );
    let refused = statuses.get(&429).copied().unwrap_or(0);
    assert!(refused > 100, "{statuses:?}");
    let mut records = Vec::new();
    let mut bytes = 0;
    for name in [
        "audit.jsonl",
        "audit.jsonl.1",
        "audit.jsonl.2",
        "audit.jsonl.3",
    ] {
        let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
            continue;
        };
        assert_ne!(name, "audit.jsonl.3", "only two rotated files are kept");
        bytes += text.len();
        for line in text.lines() {
            records.push(serde_json::from_str::<serde_json::Value>(line).unwrap());
        }
    }
    let refusal_records = records
        .iter()
        .filter(|record| record["outcome"] == "refused")
        .count();
    eprintln!(
        "{statuses:?}: {} records, {refusal_records} of refusals, {bytes} bytes",
        records.len()
    );
    assert!(
        refusal_records <= 2,
        "{refusal_records} records for {refused} refusals"
    );
    // The calls served wrote more than 4 KiB: the file was rotated, whole records in each.
    assert!(dir.join("audit.jsonl.1").exists(), "not rotated at 4 KiB");
    for name in ["audit.jsonl", "audit.jsonl.1"] {
        let size = std::fs::metadata(dir.join(name)).unwrap().len();
        assert!(size < 4096 + 1024, "{name}: {size} bytes");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Item 6: two clients each flooding `tools/call` within their own quota (900 a minute)
/// together take the server-wide quota (600 a minute); an honest third client calling at a
/// fifteenth of its own limit (one a second) must still have at least 90% of its calls served.
/// Before: 9 of 35. The server-wide quota is shared among the clients active at the time.
#[test]
fn an_honest_client_keeps_its_share_of_the_server_wide_call_quota() {
    let server = HttpServer::airlock(
        &[
            "--max-in-flight",
            "16",
            "--calls-per-minute",
            "600",
            "--call-burst",
            "10",
            "--client-calls-per-minute",
            "900",
            "--client-requests-per-minute",
            "1000000",
        ],
        &[],
    );
    let addr = server.addr;
    let call = crate::support::http::modern_bytes(
        addr,
        1,
        "tools/call",
        json!({"name": "count_lines", "arguments": {"path": "README.md"}}),
        &[],
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flooders: Vec<_> = ["127.0.0.2", "127.0.0.3"]
        .into_iter()
        .map(|from| {
            let (call, stop) = (call.clone(), std::sync::Arc::clone(&stop));
            std::thread::spawn(move || {
                let from: IpAddr = from.parse().unwrap();
                let mut statuses = std::collections::BTreeMap::new();
                // As fast as it may: its own quota (900 a minute) refuses the rest.
                let workers: Vec<_> = (0..8)
                    .map(|_| {
                        let (call, stop) = (call.clone(), std::sync::Arc::clone(&stop));
                        std::thread::spawn(move || {
                            let mut statuses = std::collections::BTreeMap::new();
                            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                                let started = Instant::now();
                                let status = send_from(from, addr, &call).status;
                                *statuses.entry(status).or_insert(0) += 1;
                                if status != 200 {
                                    // Refused: try again soon, not in a busy loop.
                                    let pace = Duration::from_millis(20);
                                    if let Some(rest) = pace.checked_sub(started.elapsed()) {
                                        std::thread::sleep(rest);
                                    }
                                }
                            }
                            statuses
                        })
                    })
                    .collect();
                for worker in workers {
                    for (status, count) in worker.join().unwrap() {
                        *statuses.entry(status).or_insert(0) += count;
                    }
                }
                statuses
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let honest: IpAddr = "127.0.0.4".parse().unwrap();
    let mut served = 0;
    let mut refused = Vec::new();
    let calls = 20;
    for _ in 0..calls {
        let started = Instant::now();
        let reply = send_from(honest, addr, &call);
        if reply.status == 200 && reply.json()["result"].is_object() {
            served += 1;
        } else {
            refused.push(reply.status);
        }
        if let Some(rest) = Duration::from_secs(1).checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flooded: Vec<_> = flooders.into_iter().map(|f| f.join().unwrap()).collect();
    eprintln!("honest client: {served} of {calls} served ({refused:?}); flooders: {flooded:?}");
    assert!(
        served * 10 >= calls * 9,
        "{served} of {calls} served: {refused:?}"
    );
}

/// Item 1, the other refusals: an address cut off for garbage that goes on with a foreign
/// `Host` (checked before the cut-off), and one with no valid token, write a bounded log too
/// (3 s each, 4 keep-alive senders), and the cut-off is said in a counted line.
#[test]
fn cut_off_and_unauthorized_floods_write_a_bounded_log() {
    const MAX_LOG_BYTES: usize = 256 * 1024;
    let server = HttpServer::airlock(
        &["--auth-token-env", "IT_REFUSED_TOKEN"],
        &[("IT_REFUSED_TOKEN", "it-token-for-the-refused-test-0123")],
    );
    let addr = server.addr;
    let before = log_bytes(&server);
    let garbage = keep_alive(
        addr,
        "POST /mcp",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer it-token-for-the-refused-test-0123"),
        ],
        "{not json",
    );
    let host = keep_alive(
        addr,
        "POST /mcp",
        &[
            ("Host", "evil.example"),
            ("Content-Type", "application/json"),
        ],
        "{}",
    );
    let mut host = String::from_utf8(host).unwrap();
    // Only the evil Host: the helper wrote the server's first.
    host = host.replacen(&format!("Host: {addr}\r\n"), "", 1);
    let no_token = keep_alive(
        addr,
        "POST /mcp",
        &[("Content-Type", "application/json")],
        "{}",
    );
    let cut_off: IpAddr = "127.0.0.5".parse().unwrap();
    let statuses = flood(cut_off, addr, garbage, Duration::from_secs(2));
    assert!(statuses.contains_key(&429), "not cut off: {statuses:?}");
    let mut all = Vec::new();
    for (from, request) in [("127.0.0.5", host.into_bytes()), ("127.0.0.6", no_token)] {
        let from: IpAddr = from.parse().unwrap();
        let senders: Vec<_> = (0..4)
            .map(|_| {
                let request = request.clone();
                std::thread::spawn(move || flood(from, addr, request, Duration::from_secs(3)))
            })
            .collect();
        for sender in senders {
            all.push(sender.join().unwrap());
        }
    }
    let written = log_bytes(&server) - before;
    eprintln!("cut-off, Host and token floods: {all:?}, {written} bytes of log");
    assert!(written <= MAX_LOG_BYTES, "{written} bytes of log");
    let lines = server.log.lock().unwrap().clone();
    assert!(
        lines
            .iter()
            .any(|line| line.contains("cut off for a while") && line.contains("127.0.0.5")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.contains("no valid token") && line.contains("status=401")),
        "{lines:#?}"
    );
}
