//! Reading a `text/event-stream` reply as it comes, off its own raw TCP connection: a legacy
//! session's `GET /mcp` stream, or a `POST` whose reply is SSE. The status line and headers
//! are kept apart from the body, a chunked body is decoded as it arrives, and a reply that
//! ended (its last chunk or its `Content-Length` came, or the connection closed) is told from
//! a stream that is only quiet.

use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::stdio::REPLY_TIMEOUT;

/// How long one read blocks before a wait's deadline is looked at again.
const POLL: Duration = Duration::from_millis(100);

/// A request written on its own connection, and its reply as read so far.
pub struct Stream {
    conn: TcpStream,
    /// Every byte read, as it came.
    raw: Vec<u8>,
    /// Bytes read and not decoded yet: the head until it is whole, then a partial chunk.
    wire: Vec<u8>,
    /// The status line and headers (without the blank line), once whole.
    head: Option<String>,
    chunked: bool,
    /// The `Content-Length` of a body that is not chunked.
    length: Option<usize>,
    /// The body decoded so far.
    body: Vec<u8>,
    /// The last chunk or the whole `Content-Length` came, or the connection closed.
    ended: bool,
}

impl Stream {
    /// Writes `request` on a new connection to `addr`; reads nothing yet.
    pub fn send(addr: SocketAddr, request: &[u8]) -> Self {
        Self::send_on(TcpStream::connect(addr).expect("connect"), request)
    }

    /// The same on a connection whose receive buffer is as small as the kernel allows: a
    /// reader that never reads fills it at once.
    pub fn send_unread(addr: SocketAddr, request: &[u8]) -> Self {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        socket.set_recv_buffer_size(1024).expect("SO_RCVBUF");
        socket.connect(&addr.into()).expect("connect");
        Self::send_on(socket.into(), request)
    }

    /// Writes `request` on `conn`, a connection the caller made (from a chosen source
    /// address, or before another it must race); reads nothing yet.
    pub fn send_on(mut conn: TcpStream, request: &[u8]) -> Self {
        conn.set_read_timeout(Some(POLL)).unwrap();
        conn.write_all(request).expect("write request");
        Self {
            conn,
            raw: Vec::new(),
            wire: Vec::new(),
            head: None,
            chunked: false,
            length: None,
            body: Vec::new(),
            ended: false,
        }
    }

    /// A legacy `session`'s `tools/call` of `tool`, its reply read as it comes.
    pub fn call(addr: SocketAddr, session: &str, id: i64, tool: &str, arguments: Value) -> Self {
        Self::send(addr, &call_bytes(addr, session, id, tool, arguments))
    }

    /// A `GET /mcp` with `headers` (`host` replaces the loopback `Host`), its head read.
    pub fn get(addr: SocketAddr, host: Option<&str>, headers: &[(&str, &str)]) -> Self {
        Self::send(addr, &get_bytes(addr, host, headers)).with_head()
    }

    /// [`Stream::get`] on a connection never read past the head (see [`Stream::send_unread`]).
    pub fn get_unread(addr: SocketAddr, headers: &[(&str, &str)]) -> Self {
        Self::send_unread(addr, &get_bytes(addr, None, headers)).with_head()
    }

    /// Reads until the head is whole; fails the test after [`REPLY_TIMEOUT`].
    fn with_head(mut self) -> Self {
        self.fill(REPLY_TIMEOUT, |stream| stream.head.is_some());
        assert!(self.head.is_some(), "no response head: {self:?}");
        self
    }

    /// The status of the reply (its head read).
    pub fn status(&self) -> u16 {
        self.head()
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("a status: {self:?}"))
    }

    /// The status line and headers.
    pub fn head(&self) -> &str {
        self.head
            .as_deref()
            .unwrap_or_else(|| panic!("the head is read: {self:?}"))
    }

    /// Reads until `done` holds of the body, the stream ends, or `wait` passes; whether
    /// `done` held.
    pub fn read_for(&mut self, wait: Duration, done: impl Fn(&str) -> bool) -> bool {
        self.fill(wait, |stream| {
            stream.head.is_some() && done(&String::from_utf8_lossy(&stream.body))
        })
    }

    /// Whether `needle` arrives in the body within `wait`.
    pub fn hears(&mut self, needle: &str, wait: Duration) -> bool {
        self.read_for(wait, |body| body.contains(needle))
    }

    /// Whether the reply ends (its last chunk or its whole `Content-Length`, or the
    /// connection closed) within `wait`.
    pub fn ends(&mut self, wait: Duration) -> bool {
        self.fill(wait, |stream| stream.ended)
    }

    /// Every byte read so far, the head's and the chunks' framing included.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The body read so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// How many times `needle` is in the body read so far.
    pub fn count(&self, needle: &str) -> usize {
        self.text().matches(needle).count()
    }

    /// Forgets the body read so far: what is heard next is what comes after.
    pub fn forget(&mut self) {
        self.body.clear();
    }

    /// The JSON of each whole event read so far: its `data:` lines joined. Events without
    /// data (a keepalive is a comment) are skipped.
    pub fn messages(&self) -> Vec<Value> {
        let text = self.text();
        let mut events: Vec<&str> = text.split("\n\n").collect();
        events.pop(); // what follows the last blank line is not a whole event yet
        events
            .into_iter()
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|data| data.strip_prefix(' ').unwrap_or(data))
                    .collect();
                (!data.is_empty()).then(|| data.join("\n"))
            })
            .map(|data| {
                serde_json::from_str(&data)
                    .unwrap_or_else(|e| panic!("an event's data is not JSON ({e}): {data:?}"))
            })
            .collect()
    }

    /// Reads until `done` holds of the stream, it ends, or `wait` passes; whether `done` held.
    fn fill(&mut self, wait: Duration, done: impl Fn(&Self) -> bool) -> bool {
        let until = Instant::now() + wait;
        let mut buffer = [0_u8; 8192];
        loop {
            if done(self) {
                return true;
            }
            if self.ended || Instant::now() >= until {
                return false;
            }
            match self.conn.read(&mut buffer) {
                Ok(0) => self.ended = true,
                Ok(n) => {
                    self.raw.extend_from_slice(&buffer[..n]);
                    self.wire.extend_from_slice(&buffer[..n]);
                    self.decode();
                }
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => self.ended = true,
            }
        }
    }

    /// Moves what is whole in `wire` into the head and the body.
    fn decode(&mut self) {
        if self.head.is_none() {
            let Some(end) = find(&self.wire, b"\r\n\r\n") else {
                return;
            };
            let head = String::from_utf8_lossy(&self.wire[..end]).into_owned();
            let header = |wanted: &str| {
                head.lines().skip(1).find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.trim()
                        .eq_ignore_ascii_case(wanted)
                        .then(|| value.trim().to_ascii_lowercase())
                })
            };
            self.chunked =
                header("transfer-encoding").is_some_and(|value| value.contains("chunked"));
            self.length = header("content-length").map(|value| {
                value
                    .parse()
                    .unwrap_or_else(|_| panic!("a length: {head:?}"))
            });
            self.head = Some(head);
            self.wire.drain(..end + 4);
        }
        if !self.chunked {
            self.body.append(&mut self.wire);
            self.ended |= self.length.is_some_and(|length| self.body.len() >= length);
            return;
        }
        while !self.ended {
            let Some(line_end) = find(&self.wire, b"\r\n") else {
                return;
            };
            let line = String::from_utf8_lossy(&self.wire[..line_end]).into_owned();
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .unwrap_or_else(|_| panic!("a chunk size, not {line:?}: {self:?}"));
            if size == 0 {
                self.ended = true;
                return;
            }
            let start = line_end + 2;
            if self.wire.len() < start + size + 2 {
                return;
            }
            assert_eq!(
                &self.wire[start + size..start + size + 2],
                b"\r\n",
                "a chunk ends with CRLF: {self:?}"
            );
            self.body.extend_from_slice(&self.wire[start..start + size]);
            self.wire.drain(..start + size + 2);
        }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("head", &self.head)
            .field("body", &String::from_utf8_lossy(&self.body))
            .field("undecoded", &String::from_utf8_lossy(&self.wire))
            .field("ended", &self.ended)
            .finish()
    }
}

/// The bytes of a legacy `session`'s `tools/call` of `tool`.
pub fn call_bytes(
    addr: SocketAddr,
    session: &str,
    id: i64,
    tool: &str,
    arguments: Value,
) -> Vec<u8> {
    crate::support::http::post_bytes(
        addr,
        &crate::support::http::session_headers(session),
        &crate::support::stdio::call(id, tool, arguments),
    )
}

/// The headers of the `GET /mcp` that opens the legacy `session`'s stream.
pub fn listen_headers(session: &str) -> Vec<(&str, &str)> {
    let mut headers = crate::support::http::session_headers(session);
    headers.push(("Accept", "text/event-stream"));
    headers
}

/// The bytes of a `GET /mcp` with `headers`; `host` replaces the loopback `Host`.
pub fn get_bytes(addr: SocketAddr, host: Option<&str>, headers: &[(&str, &str)]) -> Vec<u8> {
    let host = host.map_or_else(|| addr.to_string(), str::to_owned);
    let mut request = format!("GET /mcp HTTP/1.1\r\nHost: {host}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.into_bytes()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
