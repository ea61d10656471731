//! Support for the HTTP test modules, not a test module: `airlock serve --http` (or a fixture)
//! on a loopback port the kernel chose, requests written by hand so that every byte on the
//! wire is the test's, replies parsed from the raw bytes, and the helpers around them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread;

use serde_json::{Value, json};

use crate::harness::{self, REPLY_TIMEOUT};

/// A server listening on a loopback port the kernel chose.
pub struct HttpServer {
    child: Child,
    pub addr: SocketAddr,
    /// Every stderr line so far.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpServer {
    pub fn airlock(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut all = vec!["serve", "--http", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Self::start(&harness::airlock(), &all, env)
    }

    pub fn fixtures() -> Self {
        Self::start(
            &harness::example("conformance_server"),
            &["--http", "127.0.0.1:0"],
            &[],
        )
    }

    pub fn start(program: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = crate::harness::spawn_command(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env("AIRLOCK_LOG", "info");
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn server");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let thread_log = std::sync::Arc::clone(&log);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                thread_log.lock().unwrap().push(line.clone());
                if let Some(rest) = line.split("addr=").nth(1) {
                    let addr = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    let _sent = tx.send(addr);
                }
            }
        });
        let addr = rx
            .recv_timeout(REPLY_TIMEOUT)
            .expect("the server logs the address it listens on")
            .parse()
            .expect("a socket address");
        Self { child, addr, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn code(&self) -> i64 {
        self.json()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The JSON-RPC messages of an SSE body.
    pub fn events(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.body)
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect()
    }
}

/// Sends raw request bytes on a new connection and reads the whole response (the request
/// says `Connection: close`, or the server closes).
pub fn exchange(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    stream.write_all(request).expect("write request");
    read_reply(&mut stream)
}

pub fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    match stream.read_to_end(&mut raw) {
        Ok(_) => {}
        // The server may reset after answering a request whose body it did not read.
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(error) => panic!("reading the reply: {error}"),
    }
    parse_reply(&raw)
}

pub fn parse_reply(raw: &[u8]) -> Reply {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

/// A POST of `body` to `/mcp` with the usual headers plus `extra`.
pub fn post(addr: SocketAddr, extra: &[(&str, &str)], body: &str) -> Reply {
    exchange(addr, &post_bytes(addr, extra, body))
}

pub fn post_bytes(addr: SocketAddr, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    request.into_bytes()
}

/// A modern request: the body with `_meta`, and the headers that must match it.
pub fn modern(
    addr: SocketAddr,
    id: i64,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Reply {
    exchange(addr, &modern_bytes(addr, id, method, params, extra))
}

/// The bytes of a modern request (see [`modern`]).
pub fn modern_bytes(
    addr: SocketAddr,
    id: i64,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let mut params = params;
    params["_meta"] = harness::modern_meta();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    // `Mcp-Name` copies `params.uri` of `resources/read`, `params.name` of the others.
    let named = if method == "resources/read" {
        &params["uri"]
    } else {
        &params["name"]
    };
    let name = named.as_str().map(str::to_owned);
    let mut headers: Vec<(&str, &str)> = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    // Later entries replace earlier ones of the same name; an empty value removes it.
    for (key, value) in extra {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(key));
        if !value.is_empty() {
            headers.push((key, value));
        }
    }
    post_bytes(addr, &headers, &body.to_string())
}

pub fn initialize(addr: SocketAddr) -> String {
    initialize_with(addr, &[])
}

/// A legacy session opened with `extra` headers on both requests (a token, say); its id.
pub fn initialize_with(addr: SocketAddr, extra: &[(&str, &str)]) -> String {
    let session = open_declaring(addr, extra, json!({}));
    confirm(addr, &session, extra);
    session
}

/// A legacy session (2025-11-25) whose client declared `capabilities`, opened and confirmed;
/// its id.
pub fn initialize_declaring(addr: SocketAddr, capabilities: serde_json::Value) -> String {
    let session = open_declaring(addr, &[], capabilities);
    confirm(addr, &session, &[]);
    session
}

/// `initialize` (2025-11-25) with `extra` headers, by a client that declared `capabilities`;
/// the session's id. Not confirmed yet: see [`confirm`].
pub fn open_declaring(
    addr: SocketAddr,
    extra: &[(&str, &str)],
    capabilities: serde_json::Value,
) -> String {
    let reply = post(
        addr,
        extra,
        &harness::request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "it", "version": "1"}}),
        ),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert!(session.len() >= 32 && session.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    session
}

/// `notifications/initialized` of `session`, sent to `addr` with `extra` headers.
pub fn confirm(addr: SocketAddr, session: &str, extra: &[(&str, &str)]) {
    let mut headers = session_headers(session);
    headers.extend_from_slice(extra);
    let initialized = post(
        addr,
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
}

/// The headers every request of the legacy `session` (revision 2025-11-25) carries.
pub fn session_headers(session: &str) -> Vec<(&str, &str)> {
    vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ]
}

/// A scratch directory of this test process holding `<name>.toml` with `text`; the caller
/// removes the directory.
pub fn scratch_manifest(name: &str, text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("airlock-it-http-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join(format!("{name}.toml"));
    std::fs::write(&manifest, text).unwrap();
    (dir, manifest)
}

/// Whether any process has `pid` as its parent (from /proc).
/// Whether a process named `name` runs below `pid` (a command runs under its sandbox
/// launcher, next to the tools' idle launchers, so "has a child" says nothing).
pub fn runs_a_descendant(pid: u32, name: &str) -> bool {
    let parent_and_name = |of: u32| -> Option<(u32, String)> {
        let stat = std::fs::read_to_string(format!("/proc/{of}/stat")).ok()?;
        let (head, after) = stat.rsplit_once(") ")?;
        let comm = head.split_once(" (")?.1.to_owned();
        // After the command name in parentheses: the state, then the parent's pid.
        let parent = after.split_whitespace().nth(1)?.parse::<u32>().ok()?;
        Some((parent, comm))
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .any(|candidate| {
            let Some((mut parent, comm)) = parent_and_name(candidate) else {
                return false;
            };
            if comm != name {
                return false;
            }
            for _ in 0..8 {
                if parent == pid {
                    return true;
                }
                match parent_and_name(parent) {
                    Some((next, _)) => parent = next,
                    None => return false,
                }
            }
            false
        })
}

/// Raises this process's soft limit on open files (inherited by the server) to `want`, within
/// the hard limit.
pub fn raise_open_files(want: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= want {
        return;
    }
    let target = limit.maximum.map_or(want, |hard| hard.min(want));
    let _ignored = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(target),
            maximum: limit.maximum,
        },
    );
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..line_end]).unwrap(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = line_end + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}
