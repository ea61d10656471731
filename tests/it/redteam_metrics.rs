//! `airlock serve --metrics` attacked over loopback TCP: `Host` variants (case, ports, user
//! info, trailing dots, numeric forms, two `Host` fields, an absolute-form target), methods
//! and paths of every kind, tool names with quotes, newlines and unicode that must never reach
//! a label, and slow or idle connections (half heads, or whole ones announcing a body never
//! sent and never reading the reply) against the endpoint's eight-connection cap while a
//! scrape must still be answered.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::http::{HttpServer, Reply, exchange, initialize, post, session_headers};
use crate::support::processes::eventually;
use crate::support::stdio::request;

/// `airlock serve --http` on loopback with its metrics endpoint; the metrics address.
fn served() -> (HttpServer, SocketAddr) {
    let server = HttpServer::airlock(&["--metrics", "127.0.0.1:0"], &[]);
    let mut found = None;
    assert!(
        eventually(Duration::from_secs(10), || {
            found = server.log.lock().unwrap().iter().find_map(|line| {
                let rest = line.split("metrics=").nth(1)?;
                rest.split_whitespace().next()?.parse().ok()
            });
            found.is_some()
        }),
        "the server logs the metrics address"
    );
    (server, found.unwrap())
}

/// The status of a scrape, `None` when the connection is closed unanswered (a slot refused).
fn try_scrape(addr: SocketAddr) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut raw = Vec::new();
    drop(stream.read_to_end(&mut raw));
    String::from_utf8_lossy(&raw)
        .strip_prefix("HTTP/1.1 ")?
        .get(..3)?
        .parse()
        .ok()
}

fn raw(addr: SocketAddr, head: &str) -> Reply {
    exchange(addr, head.as_bytes())
}

fn scrape_with_host(addr: SocketAddr, host: &str) -> Reply {
    raw(
        addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
}

/// Hosts that are not loopback names in any spelling are refused; methods and paths other
/// than `GET`/`HEAD` of `/metrics` get their fixed refusals, a request body is never read.
#[test]
fn host_method_and_path_variants_get_the_fixed_refusals() {
    let (_server, metrics) = served();
    for host in [
        "localhost.",
        "127.0.0.1.evil.example",
        "evil.example@127.0.0.1",
        "127.0.0.1:80@evil.example",
        "[::1",
        "127.1",
        "0x7f.0.0.1",
        "",
        "localhost\tx",
        "lоcalhost",
    ] {
        assert_eq!(scrape_with_host(metrics, host).status, 421, "Host {host:?}");
    }
    assert_eq!(scrape_with_host(metrics, "LOCALHOST").status, 200);
    assert_eq!(
        raw(metrics, "GET /metrics HTTP/1.0\r\n\r\n").status,
        421,
        "no Host at all"
    );
    for path in [
        "//metrics",
        "/metrics/",
        "/%6detrics",
        "/METRICS",
        "/metrics/../metrics",
    ] {
        let reply = raw(
            metrics,
            &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(reply.status, 404, "{path}");
    }
    for method in ["OPTIONS", "TRACE", "PUT", "DELETE", "PATCH", "FOO"] {
        let reply = raw(
            metrics,
            &format!("{method} /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(reply.status, 405, "{method}");
    }
    let started = Instant::now();
    let body = raw(
        metrics,
        "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000000\r\n\r\nxxxx",
    );
    assert_eq!(body.status, 405);
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// Tool names an agent sends (quotes, newlines, exposition syntax, unicode) never appear in
/// the text: unknown tools are counted under `_OTHER` and the text stays one sample a line.
#[test]
fn agent_tool_names_never_reach_a_label() {
    let (server, metrics) = served();
    let session = initialize(server.addr);
    let names = [
        "x\"} 1\nairlock_evil_total 1",
        "ünïcødé-tool",
        "tool\\\"",
        "{tool=\"list_directory\"}",
    ];
    for (id, name) in names.iter().enumerate() {
        let reply = post(
            server.addr,
            &session_headers(&session),
            &request(
                id as i64 + 1,
                "tools/call",
                json!({"name": name, "arguments": {}}),
            ),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
    }
    let reply = scrape_with_host(metrics, "localhost");
    assert_eq!(reply.status, 200);
    let text = String::from_utf8(reply.body).unwrap();
    assert!(!text.contains("evil"), "{text}");
    assert!(!text.contains("ünï"), "{text}");
    assert!(!text.contains("tool\\"), "{text}");
    assert!(text.is_ascii());
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        if let Some(rest) = line.split("tool=\"").nth(1) {
            let tool = rest.split('"').next().unwrap();
            assert!(
                tool == "_OTHER"
                    || tool
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)),
                "{line}"
            );
        }
    }
}

/// Two `Host` fields are a bad request (RFC 9112 §3.2: a server MUST answer 400): the
/// endpoint reads the first, so a loopback name before a foreign one is served.
#[test]
fn two_host_fields_are_refused() {
    let (_server, metrics) = served();
    let reply = raw(
        metrics,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert_ne!(reply.status, 200, "two Host fields served");
}

/// An absolute-form target names the host the request is for (RFC 9112 §3.2.2: the `Host`
/// field is then ignored), so a foreign authority there must be refused as in `Host`.
#[test]
fn an_absolute_form_target_of_a_foreign_host_is_refused() {
    let (_server, metrics) = served();
    let reply = raw(
        metrics,
        "GET http://evil.example/metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(reply.status, 421, "a foreign absolute-form target served");
}

/// Eight connections that send half a request head once held every slot of the endpoint: a
/// scrape made meanwhile was closed unanswered, for as long as the attacker re-opened them,
/// so any local process could blind the operator's monitoring. A new connection now takes
/// the place of the oldest one still without a complete head.
#[test]
fn idle_connections_do_not_lock_a_scrape_out() {
    let (_server, metrics) = served();
    let held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut stream = TcpStream::connect(metrics).unwrap();
            stream.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let answered = (0..5).filter(|_| try_scrape(metrics) == Some(200)).count();
    drop(held);
    assert!(
        answered > 0,
        "no scrape answered while 8 idle connections were held"
    );
}

/// An attacker who keeps opening half-head connections, many more than the endpoint holds,
/// only evicts its own: every scrape made during the flood is answered, and the held
/// connections are closed by the endpoint rather than kept.
#[test]
fn a_flood_of_half_heads_only_evicts_its_own_connections() {
    let (_server, metrics) = served();
    let mut held: Vec<TcpStream> = Vec::new();
    let mut answered = 0;
    for _ in 0..10 {
        for _ in 0..10 {
            let mut stream = TcpStream::connect(metrics).unwrap();
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: loc")
                .unwrap();
            held.push(stream);
        }
        if try_scrape(metrics) == Some(200) {
            answered += 1;
        }
    }
    assert_eq!(
        answered, 10,
        "a scrape went unanswered during a flood of half heads"
    );
    // The endpoint closed the evicted ones: reading them ends (EOF or reset) at once.
    let closed = held
        .iter()
        .filter(|&stream| {
            let mut reader: &TcpStream = stream;
            stream
                .set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut byte = [0_u8; 1];
            match reader.read(&mut byte) {
                Ok(read) => read == 0,
                Err(error) => !matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            }
        })
        .count();
    assert!(
        closed >= held.len() - 8,
        "{closed} of {} held connections were closed; all but 8 should be",
        held.len()
    );
}

/// A connection whose head is complete is being answered and is never evicted, so it must
/// not hold its slot: eight that announce a body they never send (`Content-Length`, chunked,
/// `Expect: 100-continue`) and never read their reply, each kind held while scrapes are
/// made, keep no scrape out (the reply fits the socket's buffers and the endpoint closes
/// without reading a body).
#[test]
fn whole_heads_with_bodies_never_sent_nor_replies_read_do_not_lock_a_scrape_out() {
    let (_server, metrics) = served();
    for extra in [
        "Content-Length: 100000\r\n",
        "Transfer-Encoding: chunked\r\n",
        "Expect: 100-continue\r\nContent-Length: 100000\r\n",
    ] {
        let head = format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n");
        let held: Vec<TcpStream> = (0..8)
            .map(|_| {
                let mut stream = TcpStream::connect(metrics).unwrap();
                stream.write_all(head.as_bytes()).unwrap();
                stream
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let answered = (0..3).filter(|_| try_scrape(metrics) == Some(200)).count();
        drop(held);
        assert_eq!(
            answered, 3,
            "scrapes kept out by 8 held heads with {extra:?}"
        );
    }
}

/// Once the idle connections are closed (or time out) the endpoint serves scrapes again.
#[test]
fn the_endpoint_recovers_after_idle_connections_time_out() {
    let (_server, metrics) = served();
    let held: Vec<TcpStream> = (0..20)
        .filter_map(|_| TcpStream::connect(metrics).ok())
        .collect();
    // The head must come within 2 s and a connection ends within 5 s.
    assert!(
        eventually(Duration::from_secs(8), || try_scrape(metrics) == Some(200)),
        "the endpoint did not recover"
    );
    drop(held);
}

/// A task-capable manifest: `nap` sleeps, as a task when asked.
const TASKS: &str = r#"
[server]
name = "redteam-metrics-tasks"
version = "1.0.0"

[[tool]]
name = "nap"
description = "Sleeps"
command = ["sleep", "{seconds}"]
task = "optional"
args.seconds = { type = "integer", minimum = 1, maximum = 60 }
"#;

/// The value of the sample line `series value` of a scrape.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A tool's commands run as tasks are tool calls like any other for the operator watching
/// the endpoint: a task that completed is counted in `airlock_tool_calls_total`, a cancelled
/// one as cancelled, and the task methods answered are counted in the operation histogram.
/// Today a task's run shows nowhere (no tool count, not in flight while it runs, its
/// `tools/call` not in the histogram); on stdio of the answered task methods only `tasks/get`
/// is counted (over HTTP `tasks/list` and `tasks/cancel` are, `tasks/result` is not): an
/// agent can run commands for hours as tasks invisibly to the metrics.
#[test]
fn task_runs_and_task_methods_are_counted() {
    let dir = crate::support::fixtures::Scratch::new("rt-metrics-tasks");
    let manifest = dir.manifest(TASKS);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let metrics: SocketAddr = address.parse().unwrap();
    let mut server = crate::support::stdio::Server::start_with(
        &crate::support::stdio::airlock(),
        &["serve", "--manifest", &manifest, "--metrics", &address],
        &[],
    );
    server.initialize("2025-11-25");
    assert!(eventually(Duration::from_secs(10), || try_scrape(metrics) == Some(200)));
    let done = server.request(&request(
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 1}, "task": {}}),
    ));
    let done = done["result"]["task"]["taskId"].clone();
    let ended = server.request(&request(2, "tasks/result", json!({"taskId": done})));
    assert_ne!(ended["result"]["isError"], true, "{ended}");
    let long = server.request(&request(
        3,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 30}, "task": {}}),
    ));
    let long = long["result"]["task"]["taskId"].clone();
    let listed = server.request(&request(4, "tasks/list", json!({})));
    assert_eq!(listed["result"]["tasks"].as_array().map(Vec::len), Some(2));
    let cancelled = server.request(&request(5, "tasks/cancel", json!({"taskId": long})));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    // The cancelled run ends (its sandbox killed) just after the reply, and a batch's
    // counts land just after its replies are written: the scrape may wait a moment for both.
    let want = [1.0, 1.0, 2.0, 1.0, 1.0, 1.0];
    let mut seen = [0.0; 6];
    eventually(Duration::from_secs(10), || {
        let reply = scrape_with_host(metrics, "localhost");
        let text = String::from_utf8(reply.body).unwrap();
        let counted = |series: &str| sample(&text, series).unwrap_or(0.0);
        seen = [
            counted(r#"airlock_tool_calls_total{tool="nap",outcome="ok"}"#),
            counted(r#"airlock_tool_calls_total{tool="nap",outcome="cancelled"}"#),
            counted(r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"}"#),
            counted(
                r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tasks/result"}"#,
            ),
            counted(r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tasks/list"}"#),
            counted(
                r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tasks/cancel"}"#,
            ),
        ];
        seen == want
    });
    assert_eq!(
        seen, want,
        "nap ok, nap cancelled, tools/call, tasks/result, tasks/list, tasks/cancel"
    );
}
