//! Browsers and `airlock serve --http`: CORS preflights and the headers of
//! replies to a listed origin, byte by byte over real TCP, then a real headless Chromium
//! (Debian's `chromium`, installed by `tests/clients/setup.sh`) whose page on a listed loopback
//! origin uses airlock with `fetch` in both eras, while a page on another loopback origin is
//! refused.
//!
//! When Chromium is missing the browser test fails if `AIRLOCK_REQUIRE_CLIENTS=1` (CI sets it)
//! and otherwise skips, saying why on stderr.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::http::{HttpServer, Reply, exchange, modern, post, scratch_manifest};
use crate::support::stdio;

/// The headers a preflight may ask for: what MCP's Streamable HTTP clients send.
const MCP_HEADERS: &str = "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, \
                           Mcp-Method, Mcp-Name, Last-Event-ID";

/// The CORS headers a refused request must not carry.
const CORS_HEADERS: [&str; 5] = [
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-expose-headers",
    "access-control-allow-credentials",
];

/// A listed origin that no test serves a page on.
const LISTED: &str = "http://localhost:5173";

/// Longest one Chromium run may take before the test calls it hung.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// An `OPTIONS /mcp` with `Origin` and the `Access-Control-Request-*` headers given.
fn preflight(addr: SocketAddr, origin: &str, method: &str, headers: Option<&str>) -> Reply {
    preflight_to(addr, &addr.to_string(), origin, method, headers)
}

fn preflight_to(
    addr: SocketAddr,
    host: &str,
    origin: &str,
    method: &str,
    headers: Option<&str>,
) -> Reply {
    let mut request = format!(
        "OPTIONS /mcp HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n\
         Access-Control-Request-Method: {method}\r\nConnection: close\r\n"
    );
    if let Some(headers) = headers {
        request.push_str(&format!("Access-Control-Request-Headers: {headers}\r\n"));
    }
    request.push_str("\r\n");
    exchange(addr, request.as_bytes())
}

fn assert_no_cors_headers(reply: &Reply, what: &str) {
    for name in CORS_HEADERS {
        assert_eq!(reply.header(name), None, "{what}: {name} in {reply:?}");
    }
}

#[test]
fn a_preflight_from_a_listed_origin_gets_exactly_what_mcp_needs() {
    let env = [("IT_TOKEN_CORS", "cors-secret-token-0123456789")];
    let server = HttpServer::airlock(
        &[
            "--allow-origin",
            LISTED,
            "--auth-token-env",
            "IT_TOKEN_CORS",
        ],
        &env,
    );
    // What Chromium sends before a modern tools/call: lower case, sorted, no credentials.
    let asked = "content-type,mcp-method,mcp-name,mcp-protocol-version";
    for method in ["POST", "DELETE"] {
        let reply = preflight(server.addr, LISTED, method, Some(asked));
        assert_eq!(reply.status, 204, "{method}: {reply:?}");
        assert_eq!(reply.header("access-control-allow-origin"), Some(LISTED));
        assert_eq!(
            reply.header("access-control-allow-methods"),
            Some("POST, DELETE")
        );
        assert_eq!(
            reply.header("access-control-allow-headers"),
            Some(MCP_HEADERS)
        );
        assert_eq!(reply.header("access-control-max-age"), Some("600"));
        assert_eq!(
            reply.header("vary"),
            Some("Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
        );
        // Browsers never send credentials on a preflight, and none are ever allowed.
        assert_eq!(reply.header("access-control-allow-credentials"), None);
        assert_eq!(reply.header("www-authenticate"), None);
        assert!(reply.body.is_empty());
    }
    // Every header MCP uses, in any case and order; and a preflight that asks for none.
    let all = "last-event-id, AUTHORIZATION,Mcp-Session-Id,mcp-protocol-version,mcp-method,\
               mcp-name,content-type";
    assert_eq!(
        preflight(server.addr, LISTED, "POST", Some(all)).status,
        204
    );
    assert_eq!(preflight(server.addr, LISTED, "POST", None).status, 204);
    // The origin is echoed as the browser sent it, never `*`.
    let upper = "HTTP://LOCALHOST:5173";
    let reply = preflight(server.addr, upper, "POST", Some(asked));
    assert_eq!(reply.status, 204);
    assert_eq!(reply.header("access-control-allow-origin"), Some(upper));
}

#[test]
fn preflights_asking_for_more_or_from_elsewhere_are_403_without_cors_headers() {
    let server = HttpServer::airlock(&["--allow-origin", LISTED], &[]);
    let cases: &[(&str, &str, Option<&str>, &str)] = &[
        (LISTED, "GET", None, "GET is not served"),
        (
            LISTED,
            "PUT",
            Some("content-type"),
            "a method MCP does not use",
        ),
        (LISTED, "post", None, "methods are case-sensitive"),
        (
            LISTED,
            "POST",
            Some("content-type,x-evil"),
            "a header MCP does not use",
        ),
        (LISTED, "POST", Some("cookie"), "a forbidden header"),
        (
            LISTED,
            "POST",
            Some("content-type mcp-method"),
            "a malformed list",
        ),
        (
            "http://localhost:3000",
            "POST",
            Some("content-type"),
            "an unlisted loopback origin",
        ),
        (
            "http://127.0.0.1:5173",
            "POST",
            None,
            "the listed port on another host name",
        ),
        (
            "https://localhost:5173",
            "POST",
            None,
            "the listed host over another scheme",
        ),
        ("http://evil.example.com", "POST", None, "a foreign origin"),
        ("null", "POST", None, "an opaque origin"),
    ];
    for (origin, method, headers, what) in cases {
        let reply = preflight(server.addr, origin, method, *headers);
        assert_eq!(reply.status, 403, "{what}: {reply:?}");
        assert_eq!(reply.code(), -32_600, "{what}");
        assert_eq!(reply.json()["id"], Value::Null, "{what}");
        assert_no_cors_headers(&reply, what);
    }
    // DNS rebinding: the Host check comes first, whatever the origin.
    let rebound = preflight_to(server.addr, "evil.example.com", LISTED, "POST", None);
    assert_eq!(rebound.status, 421);
    assert_no_cors_headers(&rebound, "a rebinding host");
}

#[test]
fn without_allow_origin_no_origin_gets_cors_headers_not_even_loopback() {
    let server = HttpServer::airlock(&[], &[]);
    let origin = format!("http://localhost:{}", server.addr.port());
    let reply = preflight(server.addr, &origin, "POST", Some("content-type"));
    assert_eq!(reply.status, 403, "{reply:?}");
    assert_no_cors_headers(&reply, "a loopback origin, nothing listed");
    // A loopback page's request is still served (as before), but its browser may not read it.
    let reply = modern(
        server.addr,
        1,
        "tools/list",
        json!({}),
        &[("Origin", &origin)],
    );
    assert_eq!(reply.status, 200);
    assert_no_cors_headers(&reply, "a loopback origin's POST");
}

#[test]
fn replies_to_a_listed_origin_carry_cors_headers_and_others_do_not() {
    let env = [("IT_TOKEN_CORS", "cors-secret-token-0123456789")];
    let server = HttpServer::airlock(
        &[
            "--allow-origin",
            LISTED,
            "--auth-token-env",
            "IT_TOKEN_CORS",
        ],
        &env,
    );
    let token = ("Authorization", "Bearer cors-secret-token-0123456789");
    let exposed = "Mcp-Session-Id, WWW-Authenticate, Retry-After";
    let listed = modern(
        server.addr,
        1,
        "tools/list",
        json!({}),
        &[("Origin", LISTED), token],
    );
    assert_eq!(listed.status, 200, "{listed:?}");
    assert_eq!(listed.header("access-control-allow-origin"), Some(LISTED));
    assert_eq!(
        listed.header("access-control-expose-headers"),
        Some(exposed)
    );
    assert_eq!(listed.header("vary"), Some("Origin"));
    assert_eq!(listed.header("access-control-allow-credentials"), None);
    // A refusal too: the page can read why (here the token's challenge).
    let refused = modern(
        server.addr,
        2,
        "tools/list",
        json!({}),
        &[("Origin", LISTED)],
    );
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("access-control-allow-origin"), Some(LISTED));
    assert_eq!(
        refused.header("access-control-expose-headers"),
        Some(exposed)
    );
    // A legacy session: the id is in an exposed header.
    let body = stdio::request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "it", "version": "1"}}),
    );
    let opened = post(server.addr, &[("Origin", LISTED), token], &body);
    assert_eq!(opened.status, 200, "{opened:?}");
    assert!(opened.header("mcp-session-id").is_some());
    assert_eq!(opened.header("access-control-allow-origin"), Some(LISTED));
    // No origin (not a browser), a loopback origin not listed: served, no CORS headers.
    for origin in [None, Some("http://localhost:3000")] {
        let extra: Vec<(&str, &str)> = origin
            .map(|o| ("Origin", o))
            .into_iter()
            .chain([token])
            .collect();
        let reply = modern(server.addr, 3, "tools/list", json!({}), &extra);
        assert_eq!(reply.status, 200, "{origin:?}");
        assert_no_cors_headers(&reply, "no CORS for an unlisted origin");
        assert_eq!(reply.header("vary"), Some("Origin"), "{origin:?}");
    }
    // A foreign origin: refused, no CORS headers.
    let foreign = modern(
        server.addr,
        4,
        "tools/list",
        json!({}),
        &[("Origin", "http://evil.example.com"), token],
    );
    assert_eq!(foreign.status, 403);
    assert_no_cors_headers(&foreign, "a foreign origin");
}

#[test]
fn preflights_count_against_the_clients_request_quota() {
    let server = HttpServer::airlock(&["--allow-origin", LISTED], &[]);
    // The default burst is 100 requests, refilled at 50 a second; a flood of preflights is
    // refused past it. Four senders at once, so a loaded machine cannot send them slower
    // than the quota refills (one sender at a time sometimes was).
    let addr = server.addr;
    let senders: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                (0..100)
                    .map(|_| preflight(addr, LISTED, "POST", Some("content-type")))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let replies: Vec<Reply> = senders
        .into_iter()
        .flat_map(|sender| sender.join().unwrap())
        .collect();
    let served = replies.iter().filter(|reply| reply.status == 204).count();
    let refused: Vec<&Reply> = replies.iter().filter(|reply| reply.status == 429).collect();
    assert_eq!(served + refused.len(), 400, "only 204 and 429 expected");
    assert!(served >= 100, "refused after only {served}");
    let reply = refused
        .first()
        .expect("400 preflights, none refused by the quota");
    assert_eq!(reply.code(), -31_429);
    assert!(reply.header("retry-after").is_some());
    assert_no_cors_headers(reply, "a preflight over the quota");
}

#[test]
fn an_allow_origin_that_is_not_an_http_origin_is_refused_at_start() {
    for bad in [
        "null",
        "*",
        "localhost:5173",
        "file://localhost",
        "http://localhost:5173/app",
        "http://user@localhost",
        "http://",
        "ftp://example.com",
        "http://localhost:99999",
    ] {
        let (status, stderr) =
            start_failure(&["serve", "--http", "127.0.0.1:0", "--allow-origin", bad]);
        assert_eq!(status, Some(1), "{bad}: {stderr}");
        assert!(
            stderr.contains("--allow-origin must be http://HOST[:PORT] or https://HOST[:PORT]"),
            "{bad}: {stderr}"
        );
    }
}

/// Runs `airlock args…`, which must stop at start: its exit status and stderr. A server that
/// starts serving instead is killed after [`stdio::REPLY_TIMEOUT`] and fails the test.
pub fn start_failure(args: &[&str]) -> (Option<i32>, String) {
    let mut child = stdio::spawn_command(&stdio::airlock())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn airlock");
    let mut stderr = child.stderr.take().unwrap();
    let err = thread::spawn(move || {
        let mut text = String::new();
        let _read = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > stdio::REPLY_TIMEOUT {
            let _killed = child.kill();
            let _reaped = child.wait();
            panic!("airlock {args:?} started serving instead of refusing to start");
        }
        thread::sleep(Duration::from_millis(20));
    };
    (status.code(), err.join().unwrap())
}

/// One tool, `echo`: all the page needs.
const ECHO_MANIFEST: &str = r#"
[server]
name = "browser"

[[tool]]
name = "echo"
description = "Echoes its text."
command = ["echo", "{text}"]
args.text = { type = "string", max_length = 100, description = "What to echo." }
"#;

#[test]
fn chromium_uses_airlock_from_a_listed_origin_and_is_refused_from_another() {
    let Some(chromium) = chromium() else {
        return;
    };
    let allowed_page = PageServer::start();
    let other_page = PageServer::start();
    let allowed_origin = format!("http://127.0.0.1:{}", allowed_page.addr.port());
    let (dir, manifest) = scratch_manifest("browser", ECHO_MANIFEST);
    let server = HttpServer::airlock(
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--allow-origin",
            &allowed_origin,
        ],
        &[],
    );
    let page = page(server.addr);
    allowed_page.serve(&page);
    other_page.serve(&page);

    let result = run_chromium(&chromium, &dir, allowed_page.addr);
    let report: Value = match result.strip_prefix("RESULT ") {
        Some(json) => serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}")),
        None => panic!("the page on the listed origin failed: {result}"),
    };
    assert_eq!(report["modern"]["tools"], json!(["echo"]), "{report}");
    assert_eq!(report["modern"]["echo"], "from the browser\n", "{report}");
    assert_eq!(report["legacy"]["version"], "2025-11-25", "{report}");
    // The session id came through `Access-Control-Expose-Headers`.
    assert_eq!(report["legacy"]["session"], true, "{report}");
    assert_eq!(report["legacy"]["tools"], json!(["echo"]), "{report}");
    assert_eq!(report["legacy"]["echo"], "from the browser\n", "{report}");
    assert_eq!(report["legacy"]["deleted"], 204, "{report}");

    // The same page from another loopback port: another origin, refused by the preflight.
    let result = run_chromium(&chromium, &dir, other_page.addr);
    assert_eq!(
        result, "FAILED TypeError: Failed to fetch",
        "the other origin's page"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The page: a modern `tools/list` and `tools/call`, then a legacy session (initialize, its id
/// from the reply's header, initialized, tools/list, tools/call, DELETE), its outcome written
/// into `<pre id="out">` for `--dump-dom`.
fn page(airlock: SocketAddr) -> String {
    let script = r#"
const url = "http://AIRLOCK/mcp";
const accept = "application/json, text/event-stream";
const meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {},
              "io.modelcontextprotocol/clientInfo": {"name": "browser", "version": "1"}};
async function post(headers, body) {
  const reply = await fetch(url, {method: "POST", body: JSON.stringify(body),
    headers: Object.assign({"Content-Type": "application/json", "Accept": accept}, headers)});
  return [reply, reply.status === 202 ? null : await reply.json()];
}
async function modern(id, method, params) {
  const headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method};
  if (params.name) headers["Mcp-Name"] = params.name;
  params._meta = meta;
  const [, body] = await post(headers, {jsonrpc: "2.0", id, method, params});
  return body.result;
}
async function run() {
  const report = {modern: {}, legacy: {}};
  report.modern.tools = (await modern(1, "tools/list", {})).tools.map((t) => t.name);
  const echoed = await modern(2, "tools/call",
    {name: "echo", arguments: {text: "from the browser"}});
  report.modern.echo = echoed.content[0].text;

  const [opened, init] = await post({}, {jsonrpc: "2.0", id: 1, method: "initialize",
    params: {protocolVersion: "2025-11-25", capabilities: {},
             clientInfo: {name: "browser", version: "1"}}});
  const session = opened.headers.get("Mcp-Session-Id");
  report.legacy.session = session !== null && session.length >= 32;
  report.legacy.version = init.result.protocolVersion;
  const headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"};
  await post(headers, {jsonrpc: "2.0", method: "notifications/initialized"});
  const [, listed] = await post(headers, {jsonrpc: "2.0", id: 2, method: "tools/list"});
  report.legacy.tools = listed.result.tools.map((t) => t.name);
  const [, called] = await post(headers, {jsonrpc: "2.0", id: 3, method: "tools/call",
    params: {name: "echo", arguments: {text: "from the browser"}}});
  report.legacy.echo = called.result.content[0].text;
  const ended = await fetch(url, {method: "DELETE", headers});
  report.legacy.deleted = ended.status;
  return report;
}
const out = document.getElementById("out");
run().then((report) => { out.textContent = "RESULT " + JSON.stringify(report); },
           (error) => { out.textContent = "FAILED " + error.name + ": " + error.message; });
"#
    .replace("AIRLOCK", &airlock.to_string());
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>airlock</title></head>\
         <body><pre id=\"out\">PENDING</pre><script>{script}</script></body></html>\n"
    )
}

/// Runs headless Chromium on the page at `page` and returns what its script wrote.
fn run_chromium(chromium: &Path, scratch: &Path, page: SocketAddr) -> String {
    let profile = scratch.join(format!("chromium-{}", page.port()));
    std::fs::create_dir_all(&profile).unwrap();
    let mut child = stdio::spawn_command(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            // Virtual time stops while the page's fetches are in flight: the DOM is dumped
            // once the script is done (or 20 s of idle virtual time have passed).
            "--virtual-time-budget=20000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("http://{page}/"))
        .env("HOME", &profile)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", chromium.display()));
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut text = String::new();
        let _read = stdout.read_to_string(&mut text);
        text
    });
    let err = thread::spawn(move || {
        let mut text = String::new();
        let _read = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > BROWSER_TIMEOUT {
            let _killed = child.kill();
            let _reaped = child.wait();
            panic!("Chromium did not finish within {BROWSER_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(50));
    };
    let dom = out.join().unwrap();
    let log = err.join().unwrap();
    assert!(status.success(), "Chromium failed ({status}):\n{log}");
    let text = dom
        .split_once("<pre id=\"out\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(text, _)| text)
        .unwrap_or_else(|| panic!("no result in the dumped DOM:\n{dom}\nstderr:\n{log}"));
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    assert_ne!(text, "PENDING", "the page's script never finished:\n{log}");
    text
}

/// Debian's Chromium, or `None` after saying on stderr why it is not there; fails instead when
/// `AIRLOCK_REQUIRE_CLIENTS` is `1`.
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file());
    if found.is_some() {
        return found;
    }
    let reason = "Chromium is not installed (no /usr/bin/chromium): run \
                  `bash tests/clients/setup.sh`, which installs Debian's chromium package";
    let required = std::env::var_os("AIRLOCK_REQUIRE_CLIENTS").is_some_and(|value| value == "1");
    assert!(
        !required,
        "{reason} (AIRLOCK_REQUIRE_CLIENTS=1 requires it)"
    );
    eprintln!("skipped: {reason}");
    None
}

/// A one-page HTTP server on a loopback port of its own: its origin is
/// `http://127.0.0.1:<port>`. Stops when dropped.
struct PageServer {
    addr: SocketAddr,
    page: Arc<std::sync::Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl PageServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let page = Arc::new(std::sync::Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let page = Arc::clone(&page);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let page = page.lock().unwrap().clone();
                            thread::spawn(move || answer(stream, &page));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        Self {
            addr,
            page,
            stop,
            thread: Some(thread),
        }
    }

    fn serve(&self, page: &str) {
        *self.page.lock().unwrap() = page.to_owned();
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _joined = thread.join();
        }
    }
}

/// Answers one request: the page at `/`, `404` for anything else (the favicon).
fn answer(mut stream: TcpStream, page: &str) {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let reply = if head.starts_with(b"GET / ") {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
             Cache-Control: no-store\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        )
    } else {
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
    };
    let _written = stream.write_all(reply.as_bytes());
}
