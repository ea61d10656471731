//! `airlock serve --metrics`: the Prometheus endpoint scraped by a real Prometheus server
//! (Debian's `prometheus` package, installed by `tests/clients/setup.sh`) started on loopback
//! by the test, whose HTTP API must report the tool-call and refusal counts of known calls;
//! `promtool check metrics` on what the endpoint serves; the endpoint's own refusals, and its
//! address refused without `--allow-remote`.
//!
//! Without `/usr/bin/prometheus` the Prometheus test says so loudly and passes, unless
//! `AIRLOCK_REQUIRE_CLIENTS=1` (as CI sets), where it fails.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fixtures::Scratch;
use crate::support::http::{HttpServer, Reply, exchange, modern, retry_until};
use crate::support::processes::eventually;
use crate::support::redis::Redis;
use crate::support::stdio::{self, spawn_command};

const PROMETHEUS: &str = "/usr/bin/prometheus";
const PROMTOOL: &str = "/usr/bin/promtool";

/// `airlock serve --http` on loopback with its metrics endpoint on another port, and the
/// quota given by `args`.
fn served(args: &[&str]) -> (HttpServer, SocketAddr) {
    let mut all = vec!["--metrics", "127.0.0.1:0"];
    all.extend_from_slice(args);
    served_as(&all)
}

/// `airlock serve --http` on loopback with `args`, and the metrics address it logs.
fn served_as(args: &[&str]) -> (HttpServer, SocketAddr) {
    served_with(args, &[])
}

/// `airlock serve --http` on loopback with `args` and `env`, and the metrics address it logs.
fn served_with(args: &[&str], env: &[(&str, &str)]) -> (HttpServer, SocketAddr) {
    let server = HttpServer::airlock(args, env);
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

/// `GET path` on `addr` with `host` in `Host`.
fn get(addr: SocketAddr, method: &str, path: &str, host: &str) -> Reply {
    exchange(
        addr,
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

fn scrape(addr: SocketAddr) -> String {
    let reply = get(addr, "GET", "/metrics", "127.0.0.1");
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    String::from_utf8(reply.body).unwrap()
}

/// The value of the one sample line `series value` of a scrape.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A call of the default manifest's `list_directory` that succeeds.
fn list_directory(addr: SocketAddr, id: i64) -> Reply {
    modern(
        addr,
        id,
        "tools/call",
        json!({"name": "list_directory", "arguments": {"path": "."}}),
        &[],
    )
}

/// A free loopback port (the kernel's choice, released for the process that takes it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus server of one test, scraping `target` every second.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: Scratch,
}

impl Prometheus {
    /// A running Prometheus, or `None` after saying loudly why there is none (a failure
    /// under `AIRLOCK_REQUIRE_CLIENTS=1`).
    fn start(test: &str, target: SocketAddr) -> Option<Self> {
        if !Path::new(PROMETHEUS).exists() {
            let reason = format!(
                "{PROMETHEUS} is missing: run `bash tests/clients/setup.sh` (as root it \
                 installs Debian's prometheus)"
            );
            let required = std::env::var_os("AIRLOCK_REQUIRE_CLIENTS").is_some_and(|v| v == "1");
            assert!(
                !required,
                "{reason} (AIRLOCK_REQUIRE_CLIENTS=1 requires it)"
            );
            eprintln!("SKIPPED {test}: {reason}");
            return None;
        }
        let dir = Scratch::new(&format!("metrics-{test}"));
        let config = dir.write(
            "prometheus.yml",
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: airlock\n    static_configs:\n      \
                 - targets: ['{target}']\n"
            ),
        );
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = spawn_command(Path::new(PROMETHEUS))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.dir("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        Some(Self {
            child,
            addr,
            _dir: dir,
        })
    }

    /// The value of the instant query `query`, if it has exactly one series.
    fn query(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' => (byte as char).to_string(),
                _ => format!("%{byte:02X}"),
            })
            .collect();
        // Not listening yet: no value (the exchange below would fail the test).
        std::net::TcpStream::connect(self.addr).ok()?;
        let reply = get(
            self.addr,
            "GET",
            &format!("/api/v1/query?query={encoded}"),
            "127.0.0.1",
        );
        if reply.status != 200 {
            return None;
        }
        let body: Value = serde_json::from_slice(&reply.body).ok()?;
        let result = body["data"]["result"].as_array()?;
        if result.len() != 1 {
            return None;
        }
        result[0]["value"][1].as_str()?.parse().ok()
    }

    /// Waits until `query` reads `want` (Prometheus scrapes every second), and says what it
    /// read last otherwise.
    fn expect(&self, query: &str, want: f64) {
        let mut last = None;
        let seen = eventually(Duration::from_secs(30), || {
            last = self.query(query);
            last == Some(want)
        });
        assert!(seen, "{query}: Prometheus says {last:?}, not {want}");
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// Three calls of `list_directory` within the quota, a fourth past it, and a request with a
/// `Host` not allowed: Prometheus, scraping the endpoint, reports 3 calls `ok`, 1 `refused`,
/// one quota refusal and one host refusal, and the refused call as a `tools/call` operation
/// answered with `-31429`.
#[test]
fn prometheus_scrapes_the_calls_and_refusals_made() {
    let (server, metrics) = served(&["--calls-per-minute", "1", "--call-burst", "3"]);
    let Some(prometheus) = Prometheus::start("scrape", metrics) else {
        return;
    };
    for id in 1..=3 {
        let reply = list_directory(server.addr, id);
        assert_eq!(reply.status, 200, "{reply:?}");
        let result = &reply.json()["result"];
        assert!(
            result["content"].is_array() && result["isError"].is_null(),
            "{result}"
        );
    }
    let refused = list_directory(server.addr, 4);
    assert_eq!(refused.json()["error"]["code"], -31_429, "{refused:?}");
    let misdirected = exchange(
        server.addr,
        b"POST /mcp HTTP/1.1\r\nHost: attacker.example\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    assert_eq!(misdirected.status, 421);
    prometheus.expect(
        r#"airlock_tool_calls_total{tool="list_directory",outcome="ok"}"#,
        3.0,
    );
    prometheus.expect(
        r#"airlock_tool_calls_total{tool="list_directory",outcome="refused"}"#,
        1.0,
    );
    prometheus.expect(r#"airlock_refusals_total{kind="quota"}"#, 1.0);
    prometheus.expect(r#"airlock_refusals_total{kind="host"}"#, 1.0);
    prometheus.expect(
        r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",error_type=""}"#,
        3.0,
    );
    // The call the transport refused on its quota, before the engine saw it, is a request
    // answered with -31429 all the same.
    prometheus.expect(
        r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",error_type="-31429"}"#,
        1.0,
    );
    // What Prometheus read is what the endpoint serves.
    let text = scrape(metrics);
    assert_eq!(
        sample(
            &text,
            r#"airlock_tool_calls_total{tool="list_directory",outcome="ok"}"#
        ),
        Some(3.0)
    );
}

/// What the endpoint serves passes `promtool check metrics` (Prometheus's own linter), and
/// names no tool an agent made up.
#[test]
fn promtool_accepts_what_the_endpoint_serves() {
    let (server, metrics) = served(&[]);
    let made_up = modern(
        server.addr,
        1,
        "tools/call",
        json!({"name": "agent_made_this_up", "arguments": {}}),
        &[],
    );
    assert_eq!(made_up.json()["error"]["code"], -32_602);
    let text = scrape(metrics);
    assert_eq!(
        sample(
            &text,
            r#"airlock_tool_calls_total{tool="_OTHER",outcome="refused"}"#
        ),
        Some(1.0)
    );
    assert!(!text.contains("agent_made_this_up"));
    promtool_accepts(&text);
}

/// `promtool check metrics` finds nothing to say about `text` (skipped, loudly, without
/// promtool unless `AIRLOCK_REQUIRE_CLIENTS=1`).
fn promtool_accepts(text: &str) {
    if !Path::new(PROMTOOL).exists() {
        let reason = format!("{PROMTOOL} is missing (Debian's prometheus ships it)");
        let required = std::env::var_os("AIRLOCK_REQUIRE_CLIENTS").is_some_and(|v| v == "1");
        assert!(
            !required,
            "{reason} (AIRLOCK_REQUIRE_CLIENTS=1 requires it)"
        );
        eprintln!("SKIPPED promtool: {reason}");
        return;
    }
    let mut check = spawn_command(Path::new(PROMTOOL))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    std::io::Write::write_all(&mut check.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let output = check.wait_with_output().unwrap();
    assert!(
        output.status.success() && output.stdout.is_empty() && output.stderr.is_empty(),
        "promtool: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Only `GET /metrics` with an allowed `Host` is served; each refusal has its fixed status.
#[test]
fn the_endpoint_serves_get_of_metrics_on_an_allowed_host_only() {
    let (_server, metrics) = served(&[]);
    assert_eq!(get(metrics, "GET", "/metrics", "localhost").status, 200);
    assert_eq!(get(metrics, "HEAD", "/metrics", "[::1]:9464").status, 200);
    assert_eq!(get(metrics, "GET", "/metrics", "evil.example").status, 421);
    assert_eq!(get(metrics, "GET", "/", "localhost").status, 404);
    assert_eq!(get(metrics, "GET", "/mcp", "localhost").status, 404);
    let post = get(metrics, "POST", "/metrics", "localhost");
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
}

/// A metrics address beyond loopback is refused as `--http`'s is, before anything starts.
#[test]
fn a_remote_metrics_address_needs_allow_remote() {
    let output = stdio::run(&stdio::airlock(), &["serve", "--metrics", "0.0.0.0:0"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("0.0.0.0:0 is not a loopback address"),
        "{stderr}"
    );
    assert!(stderr.contains("--allow-remote"), "{stderr}");
}

/// `[server] metrics` serves the endpoint without the flag; beyond loopback it is refused
/// as the flag's address is, unless `--allow-remote`.
#[test]
fn the_manifest_may_name_the_metrics_address() {
    let dir = Scratch::new("metrics-manifest");
    let tool = "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"true\"]\n";
    let local = dir.write(
        "local.toml",
        format!("[server]\nmetrics = \"127.0.0.1:0\"\n\n{tool}"),
    );
    let (_server, metrics) = served_as(&["--manifest", local.to_str().unwrap()]);
    let text = scrape(metrics);
    assert_eq!(
        sample(&text, r#"airlock_tool_calls_total{tool="t",outcome="ok"}"#),
        Some(0.0)
    );
    let remote = dir.write(
        "remote.toml",
        format!("[server]\nmetrics = \"0.0.0.0:0\"\n\n{tool}"),
    );
    let output = stdio::run(
        &stdio::airlock(),
        &["serve", "--manifest", remote.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("0.0.0.0:0 is not a loopback address"),
        "{stderr}"
    );
}

/// With a shared store, each of its operations is timed and each one unanswered counted by
/// kind; the store's URL and keys never reach the text.
#[test]
fn the_shared_stores_operations_and_failures_are_counted() {
    let Some(mut redis) = Redis::start("metrics-store", None) else {
        return;
    };
    let url = redis.url();
    let (server, metrics) = served_with(
        &[
            "--quota-store",
            "redis",
            "--redis-namespace",
            "it-metrics",
            "--metrics",
            "127.0.0.1:0",
        ],
        &[("AIRLOCK_REDIS_URL", &url)],
    );
    assert_eq!(list_directory(server.addr, 1).status, 200);
    let text = scrape(metrics);
    let admitted = sample(
        &text,
        r#"airlock_store_operation_duration_seconds_count{operation="admit"}"#,
    );
    assert!(admitted.is_some_and(|count| count >= 1.0), "{text}");
    redis.stop();
    retry_until(
        "a refusal while Redis is down",
        || list_directory(server.addr, 2),
        |reply| reply.status != 200,
    );
    let text = scrape(metrics);
    let failed: f64 = ["error", "timeout", "down"]
        .iter()
        .map(|kind| {
            sample(
                &text,
                &format!(r#"airlock_store_errors_total{{operation="admit",kind="{kind}"}}"#),
            )
            .unwrap()
        })
        .sum();
    assert!(failed >= 1.0, "{text}");
    assert!(
        !text.contains(&url) && !text.contains("it-metrics"),
        "{text}"
    );
}
