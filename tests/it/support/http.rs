//! Support for the HTTP test modules, not a test module: `airlock serve --http` (or a fixture)
//! on a loopback port the kernel chose, requests written by hand so that every byte on the
//! wire is the test's, replies parsed from the raw bytes, and the helpers around them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread;

use serde_json::{Value, json};

use crate::support::stdio::{self, REPLY_TIMEOUT};

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
        Self::start(&stdio::airlock(), &all, env)
    }

    pub fn fixtures() -> Self {
        Self::start(
            &stdio::example("conformance_server"),
            &["--http", "127.0.0.1:0"],
            &[],
        )
    }

    pub fn start(program: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = crate::support::stdio::spawn_command(program);
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

/// A modern request: the body with `_meta` (the one `params` has, else
/// [`stdio::modern_meta`]), and the headers that must match it.
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
    if params.get("_meta").is_none() {
        params["_meta"] = stdio::modern_meta();
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    // `Mcp-Name` copies `params.uri` of `resources/read`, `params.taskId` of the tasks
    // extension's methods, `params.name` of the others.
    let named = if method == "resources/read" {
        &params["uri"]
    } else if method.starts_with("tasks/") {
        &params["taskId"]
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
        &stdio::request(
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

/// One keep-alive connection to a replica: requests and replies one after another.
pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Connection {
    pub fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Sends `request` (its `Connection: close` removed) and reads its reply.
    pub fn send(&mut self, request: &[u8]) -> Reply {
        let text = String::from_utf8_lossy(request).replacen("Connection: close\r\n", "", 1);
        self.stream.write_all(text.as_bytes()).unwrap();
        loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buffer[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .map_or(0, |value| value.trim().parse().unwrap());
                let total = end + 4 + length;
                if self.buffer.len() >= total {
                    let raw: Vec<u8> = self.buffer.drain(..total).collect();
                    return parse_reply(&raw);
                }
            }
            let mut chunk = [0_u8; 16 * 1024];
            let read = self.stream.read(&mut chunk).expect("read a reply");
            assert!(read > 0, "the replica closed a keep-alive connection");
            self.buffer.extend_from_slice(&chunk[..read]);
        }
    }
}

/// A TCP connection to `server` from the loopback address `from` (the whole of 127/8 is
/// loopback on Linux, so 127.0.0.2 plays a second host), within `wait`.
pub fn connect_from(
    from: std::net::IpAddr,
    server: SocketAddr,
    wait: std::time::Duration,
) -> std::io::Result<TcpStream> {
    connect_from_with_buffer(from, server, wait, None)
}

/// [`connect_from`] with the receive buffer set to `recv_buffer` bytes before connecting (a
/// reader that holds little, so the server's replies back up).
pub fn connect_from_with_buffer(
    from: std::net::IpAddr,
    server: SocketAddr,
    wait: std::time::Duration,
    recv_buffer: Option<usize>,
) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let domain = if from.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let socket = Socket::new(domain, Type::STREAM, None)?;
    if let Some(size) = recv_buffer {
        socket.set_recv_buffer_size(size)?;
    }
    socket.bind(&SocketAddr::new(from, 0).into())?;
    socket.connect_timeout(&server.into(), wait)?;
    Ok(socket.into())
}

/// Sends `attempt` until its reply satisfies `done` (every 20 ms); fails the test, naming
/// `what`, with the last reply when the reply timeout passes first.
pub fn retry_until(
    what: &str,
    mut attempt: impl FnMut() -> Reply,
    done: impl Fn(&Reply) -> bool,
) -> Reply {
    let started = std::time::Instant::now();
    loop {
        let reply = attempt();
        if done(&reply) {
            return reply;
        }
        assert!(
            started.elapsed() < REPLY_TIMEOUT,
            "{what}: never happened; last reply {reply:?}"
        );
        thread::sleep(std::time::Duration::from_millis(20));
    }
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
