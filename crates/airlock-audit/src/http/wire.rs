//! A small HTTP/1.1 client over `std::net::TcpStream`, bounded everywhere, for talking to a
//! server that may be hostile.
//!
//! What it trusts: the bytes the audit chooses to send. What it does not: every byte the server
//! sends back. The response head is read up to [`MAX_HEAD_BYTES`], the body up to
//! [`MAX_BODY_BYTES`] (decoded, chunked or not; chunk-size lines up to [`MAX_CHUNK_LINE_BYTES`]),
//! at most [`MAX_HEADERS`] header fields are kept, and every read has the caller's deadline:
//! a server that trickles, floods or never ends its body costs a bounded buffer and bounded
//! time. An SSE body (`text/event-stream`) is read only until an event carries a JSON-RPC
//! response, so a stream the server keeps open does not hold the audit until the deadline.
//! Nothing here formats server bytes for people; callers go through `judge::shown`.

use std::io::{self, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Why an exchange did not produce a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The connection could not be made.
    Connect,
    /// The deadline passed first.
    Timeout,
    /// The server closed the connection (or reset it) before a whole response head.
    Closed,
    /// The response head is over [`MAX_HEAD_BYTES`].
    HeadTooLong,
    /// The response is not HTTP/1.x, or its framing is broken.
    Malformed,
}

impl WireError {
    /// The error in a few words (fixed text).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Connect => "the connection was refused",
            Self::Timeout => "no response in time",
            Self::Closed => "the connection was closed without a response",
            Self::HeadTooLong => "a response head over 64 KiB",
            Self::Malformed => "a response that is not well-formed HTTP/1.1",
        }
    }
}

/// One HTTP response, bounded.
#[derive(Clone, Debug, Default)]
pub(crate) struct Response {
    /// The status code.
    pub(crate) status: u16,
    /// Header fields, names lowercased (at most [`MAX_HEADERS`]).
    pub(crate) headers: Vec<(String, String)>,
    /// The decoded body (at most [`MAX_BODY_BYTES`]).
    pub(crate) body: Vec<u8>,
    /// Whether the body was cut at [`MAX_BODY_BYTES`].
    pub(crate) truncated: bool,
}

impl Response {
    /// The first value of header `name` (lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// Whether the body is an SSE stream.
    pub(crate) fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|kind| kind.trim_start().starts_with("text/event-stream"))
    }

    /// The JSON-RPC messages of the body: the one JSON value of a JSON body, or the JSON of
    /// each SSE event's data (at most [`MAX_EVENTS`]; data that is not JSON is left out).
    pub(crate) fn messages(&self) -> Vec<Value> {
        if self.is_sse() {
            return sse_data(&self.body)
                .iter()
                .filter_map(|data| serde_json::from_slice(data).ok())
                .collect();
        }
        serde_json::from_slice::<Value>(&self.body)
            .map(|value| vec![value])
            .unwrap_or_default()
    }

    /// The first JSON-RPC response (an object with `result` or `error`) in the body.
    pub(crate) fn rpc(&self) -> Option<Value> {
        self.messages().into_iter().find(is_response)
    }

    /// The JSON-RPC error code of [`Response::rpc`], if it is an error.
    pub(crate) fn rpc_code(&self) -> Option<i64> {
        self.rpc()
            .and_then(|message| message.get("error")?.get("code")?.as_i64())
    }
}

/// Whether `message` is a JSON-RPC response.
fn is_response(message: &Value) -> bool {
    message.get("result").is_some() || message.get("error").is_some()
}

/// The data of each complete event in an SSE body (at most [`MAX_EVENTS`]).
fn sse_data(body: &[u8]) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let mut data: Option<Vec<u8>> = None;
    for raw in body.split(|byte| *byte == b'\n') {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() {
            if let Some(done) = data.take() {
                events.push(done);
                if events.len() >= MAX_EVENTS {
                    break;
                }
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            let buffer = data.get_or_insert_with(Vec::new);
            if !buffer.is_empty() {
                buffer.push(b'\n');
            }
            buffer.extend_from_slice(rest);
        }
    }
    events
}

/// An open connection to the server under audit.
pub(crate) struct Connection {
    stream: TcpStream,
    /// Bytes read and not yet consumed.
    buffer: Vec<u8>,
    /// Whether the server closed its side.
    eof: bool,
}

impl Connection {
    /// Connects to `addr` before `deadline`.
    ///
    /// # Errors
    ///
    /// [`WireError::Connect`] or [`WireError::Timeout`].
    pub(crate) fn open(addr: SocketAddr, deadline: Instant) -> Result<Self, WireError> {
        let wait = remaining(deadline)?;
        let stream = TcpStream::connect_timeout(&addr, wait).map_err(|error| {
            if error.kind() == io::ErrorKind::TimedOut {
                WireError::Timeout
            } else {
                WireError::Connect
            }
        })?;
        // Small writes (a trickled head) must go out as written.
        stream.set_nodelay(true).map_err(|_| WireError::Connect)?;
        Ok(Self {
            stream,
            buffer: Vec::new(),
            eof: false,
        })
    }

    /// Writes `bytes` before `deadline`.
    ///
    /// # Errors
    ///
    /// [`WireError::Timeout`], or [`WireError::Closed`] when the server closed or reset the
    /// connection (it may have answered and stopped reading: read the response next).
    pub(crate) fn write(&mut self, bytes: &[u8], deadline: Instant) -> Result<(), WireError> {
        let wait = remaining(deadline)?;
        self.stream
            .set_write_timeout(Some(wait))
            .map_err(|_| WireError::Closed)?;
        self.stream
            .write_all(bytes)
            .map_err(|error| match error.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => WireError::Timeout,
                _ => WireError::Closed,
            })
    }

    /// Reads more bytes into the buffer; `Ok(false)` at the end of the stream.
    fn fill(&mut self, deadline: Instant) -> Result<bool, WireError> {
        if self.eof {
            return Ok(false);
        }
        let wait = remaining(deadline)?;
        self.stream
            .set_read_timeout(Some(wait))
            .map_err(|_| WireError::Closed)?;
        let mut chunk = [0_u8; READ_CHUNK_BYTES];
        match self.stream.read(&mut chunk) {
            Ok(0) => {
                self.eof = true;
                Ok(false)
            }
            Ok(read) => {
                self.buffer
                    .extend_from_slice(chunk.get(..read).unwrap_or_default());
                Ok(true)
            }
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Err(WireError::Timeout),
                io::ErrorKind::Interrupted => Ok(true),
                _ => {
                    self.eof = true;
                    Ok(false)
                }
            },
        }
    }

    /// Waits until the server closes the connection (`true`) or `deadline` passes (`false`);
    /// whatever it sends meanwhile is read and dropped, a bounded amount at a time.
    pub(crate) fn closed_by_server(&mut self, deadline: Instant) -> bool {
        loop {
            match self.fill(deadline) {
                Ok(false) => return true,
                Ok(true) => self.buffer.clear(),
                Err(WireError::Timeout) => return false,
                Err(_) => return true,
            }
        }
    }

    /// Reads one response before `deadline` (skipping `1xx` ones).
    ///
    /// # Errors
    ///
    /// What stopped it; see [`WireError`].
    pub(crate) fn read_response(&mut self, deadline: Instant) -> Result<Response, WireError> {
        loop {
            let response = self.read_one(deadline)?;
            if !(100..200).contains(&response.status) {
                return Ok(response);
            }
        }
    }

    fn read_one(&mut self, deadline: Instant) -> Result<Response, WireError> {
        let head_end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            if self.buffer.len() > MAX_HEAD_BYTES {
                return Err(WireError::HeadTooLong);
            }
            if !self.fill(deadline)? {
                return Err(WireError::Closed);
            }
        };
        if head_end > MAX_HEAD_BYTES {
            return Err(WireError::HeadTooLong);
        }
        let rest = self
            .buffer
            .split_off(head_end.checked_add(4).ok_or(WireError::Malformed)?);
        let head = std::mem::replace(&mut self.buffer, rest);
        let mut response = parse_head(&head)?;
        let chunked = response
            .header("transfer-encoding")
            .is_some_and(|coding| coding.to_ascii_lowercase().contains("chunked"));
        let length = match response.header("content-length") {
            Some(text) => Some(
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| WireError::Malformed)?,
            ),
            None => None,
        };
        let sse = response.is_sse();
        if matches!(response.status, 204 | 304) || (100..200).contains(&response.status) {
            return Ok(response);
        }
        if chunked {
            self.read_chunked(&mut response, sse, deadline)?;
        } else if let Some(length) = length {
            self.read_length(&mut response, length, deadline)?;
        } else {
            self.read_to_end(&mut response, sse, deadline)?;
        }
        Ok(response)
    }

    fn read_length(
        &mut self,
        response: &mut Response,
        length: u64,
        deadline: Instant,
    ) -> Result<(), WireError> {
        let kept = usize::try_from(length)
            .unwrap_or(usize::MAX)
            .min(MAX_BODY_BYTES);
        response.truncated = length > u64::try_from(MAX_BODY_BYTES).unwrap_or(u64::MAX);
        while self.buffer.len() < kept {
            if !self.fill(deadline)? {
                return Err(WireError::Closed);
            }
        }
        let rest = self.buffer.split_off(kept);
        response.body = std::mem::replace(&mut self.buffer, rest);
        if response.truncated {
            // The rest is never read: the connection is not reused.
            self.eof = true;
        }
        Ok(())
    }

    fn read_to_end(
        &mut self,
        response: &mut Response,
        sse: bool,
        deadline: Instant,
    ) -> Result<(), WireError> {
        loop {
            if self.buffer.len() > MAX_BODY_BYTES {
                self.buffer.truncate(MAX_BODY_BYTES);
                response.truncated = true;
                break;
            }
            if sse && has_response_event(&self.buffer) {
                break;
            }
            match self.fill(deadline) {
                Ok(true) => {}
                Ok(false) => break,
                // A stream left open: what came is the body.
                Err(WireError::Timeout) if sse => break,
                Err(error) => return Err(error),
            }
        }
        response.body = std::mem::take(&mut self.buffer);
        self.eof = true;
        Ok(())
    }

    fn read_chunked(
        &mut self,
        response: &mut Response,
        sse: bool,
        deadline: Instant,
    ) -> Result<(), WireError> {
        loop {
            let line_end = loop {
                if let Some(end) = find(&self.buffer, b"\r\n") {
                    break end;
                }
                if self.buffer.len() > MAX_CHUNK_LINE_BYTES {
                    return Err(WireError::Malformed);
                }
                match self.fill(deadline) {
                    Ok(true) => {}
                    Ok(false) => return Err(WireError::Closed),
                    Err(WireError::Timeout) if sse => return Ok(()),
                    Err(error) => return Err(error),
                }
            };
            let line = self.buffer.get(..line_end).ok_or(WireError::Malformed)?;
            let digits = line.split(|byte| *byte == b';').next().unwrap_or_default();
            let digits = std::str::from_utf8(digits).map_err(|_| WireError::Malformed)?;
            let size =
                usize::from_str_radix(digits.trim(), 16).map_err(|_| WireError::Malformed)?;
            let start = line_end.checked_add(2).ok_or(WireError::Malformed)?;
            if size == 0 {
                // Trailers are not read: the connection is not reused after this.
                self.eof = true;
                return Ok(());
            }
            let room = MAX_BODY_BYTES.saturating_sub(response.body.len());
            let end = start.checked_add(size).ok_or(WireError::Malformed)?;
            if size > room {
                // Keep what fits and stop reading.
                while self.buffer.len() < start.saturating_add(room) {
                    if !self.fill(deadline)? {
                        break;
                    }
                }
                let kept = self
                    .buffer
                    .get(start..self.buffer.len().min(start.saturating_add(room)))
                    .unwrap_or_default();
                response.body.extend_from_slice(kept);
                response.truncated = true;
                self.eof = true;
                return Ok(());
            }
            let needed = end.checked_add(2).ok_or(WireError::Malformed)?;
            while self.buffer.len() < needed {
                match self.fill(deadline) {
                    Ok(true) => {}
                    Ok(false) => return Err(WireError::Closed),
                    Err(WireError::Timeout) if sse => return Ok(()),
                    Err(error) => return Err(error),
                }
            }
            response
                .body
                .extend_from_slice(self.buffer.get(start..end).ok_or(WireError::Malformed)?);
            let rest = self.buffer.split_off(needed);
            self.buffer = rest;
            if sse && has_response_event(&response.body) {
                self.eof = true;
                return Ok(());
            }
        }
    }
}

/// Whether an SSE body so far holds a complete event with a JSON-RPC response.
fn has_response_event(body: &[u8]) -> bool {
    sse_data(body)
        .iter()
        .filter_map(|data| serde_json::from_slice::<Value>(data).ok())
        .any(|message| is_response(&message))
}

/// The status line and header fields of a head (without its blank line).
fn parse_head(head: &[u8]) -> Result<Response, WireError> {
    let text = std::str::from_utf8(head).map_err(|_| WireError::Malformed)?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().ok_or(WireError::Malformed)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(WireError::Malformed);
    }
    let status = parts
        .next()
        .and_then(|code| code.parse::<u16>().ok())
        .filter(|code| (100..600).contains(code))
        .ok_or(WireError::Malformed)?;
    let mut headers = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(WireError::Malformed);
        };
        if headers.len() < MAX_HEADERS {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    Ok(Response {
        status,
        headers,
        body: Vec::new(),
        truncated: false,
    })
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// Time left before `deadline`, or [`WireError::Timeout`].
fn remaining(deadline: Instant) -> Result<Duration, WireError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(WireError::Timeout)
    } else {
        Ok(left)
    }
}

/// Largest response head read.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Largest decoded body kept.
pub(crate) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Header fields kept from one response.
const MAX_HEADERS: usize = 100;

/// Longest chunk-size line.
const MAX_CHUNK_LINE_BYTES: usize = 1024;

/// SSE events parsed from one body.
const MAX_EVENTS: usize = 1000;

/// One read from the socket.
const READ_CHUNK_BYTES: usize = 16 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-shot server that writes `raw` (then closes) to the first connection.
    fn serve(raw: Vec<u8>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let _written = stream.write_all(&raw);
            std::thread::sleep(Duration::from_millis(50));
        });
        addr
    }

    fn fetch(raw: &[u8]) -> Result<Response, WireError> {
        let addr = serve(raw.to_vec());
        let deadline = Instant::now().checked_add(Duration::from_secs(5)).unwrap();
        Connection::open(addr, deadline)?.read_response(deadline)
    }

    #[test]
    fn a_chunked_body_is_decoded_and_headers_are_lowercased() {
        let reply = fetch(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n\
              4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, b"{\"a\":1}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
    }

    #[test]
    fn an_sse_body_yields_its_json_events_and_stops_at_the_response() {
        // The stream is never ended: reading stops at the response event, not the deadline.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let _written = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
                  id: 1\r\ndata:\r\n\r\n\
                  data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                  data: {\"jsonrpc\":\"2.0\",\n\
                  data: \"id\":1,\"result\":{}}\n\n",
            );
            std::thread::sleep(Duration::from_secs(30));
        });
        let started = Instant::now();
        let deadline = started.checked_add(Duration::from_secs(20)).unwrap();
        let reply = Connection::open(addr, deadline)
            .unwrap()
            .read_response(deadline)
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(reply.messages().len(), 2);
        assert_eq!(reply.rpc().unwrap()["id"], 1);
    }

    #[test]
    fn a_huge_head_and_a_broken_status_line_are_refused() {
        let mut huge = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        huge.extend(std::iter::repeat_n(
            b'x',
            MAX_HEAD_BYTES.checked_add(10).unwrap(),
        ));
        huge.extend_from_slice(b"\r\n\r\n");
        assert_eq!(fetch(&huge).unwrap_err(), WireError::HeadTooLong);
        assert_eq!(
            fetch(b"SPDY/9 200 OK\r\n\r\n").unwrap_err(),
            WireError::Malformed
        );
        assert_eq!(fetch(b"HTTP/1.1 2").unwrap_err(), WireError::Closed);
    }

    #[test]
    fn a_body_past_the_cap_is_cut_and_marked() {
        let mut raw = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n".to_vec();
        raw.extend(std::iter::repeat_n(
            b'a',
            MAX_BODY_BYTES.checked_add(100).unwrap(),
        ));
        let reply = fetch(&raw).unwrap();
        assert!(reply.truncated);
        assert_eq!(reply.body.len(), MAX_BODY_BYTES);
    }
}
