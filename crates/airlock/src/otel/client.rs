//! The OTLP exporter's HTTP client: one blocking HTTP/1.1 POST per export, on the export
//! thread, to one `http://` endpoint fixed at start.
//!
//! It trusts the collector with nothing but a status: connect, read and write are bounded by
//! [`OTLP_CONNECT_TIMEOUT`] and [`OTLP_IO_TIMEOUT`], the response by
//! [`MAX_OTLP_RESPONSE_BYTES`], and no redirect is followed. Plain HTTP only: for TLS, run an
//! OpenTelemetry Collector on loopback and let it forward.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};

use crate::limits::{MAX_OTLP_RESPONSE_BYTES, OTLP_CONNECT_TIMEOUT, OTLP_IO_TIMEOUT};

/// Why an OTLP endpoint is refused at start.
#[derive(Debug, thiserror::Error, Eq, PartialEq)]
#[non_exhaustive]
pub enum EndpointError {
    /// Not `http://`: HTTPS is not spoken; a Collector on loopback forwards over TLS.
    #[error(
        "the OTLP endpoint must be http:// (for TLS, run an OpenTelemetry Collector on loopback)"
    )]
    NotHttp,
    /// No host, a bad port, user information, a query or a fragment.
    #[error("the OTLP endpoint is not a URL of the form http://HOST[:PORT][/PATH]")]
    Malformed,
}

/// Where exports go: `host:port` and the path of `/v1/traces`.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) struct Endpoint {
    /// The authority as given (`Host` header, and what is resolved).
    authority: Box<str>,
    host: Box<str>,
    port: u16,
    /// The traces path: the URL's path with `/v1/traces` appended, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is read.
    path: Box<str>,
}

impl Endpoint {
    /// Reads `http://HOST[:PORT][/PATH]` (port 80 unless given); spans go to
    /// `PATH/v1/traces`.
    ///
    /// # Errors
    ///
    /// [`EndpointError`].
    pub(crate) fn parse(url: &str) -> Result<Self, EndpointError> {
        let rest = url.strip_prefix("http://").ok_or(EndpointError::NotHttp)?;
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at_checked(at).ok_or(EndpointError::Malformed)?,
            None => (rest, ""),
        };
        let printable = |text: &str| text.bytes().all(|b| b.is_ascii_graphic());
        if authority.is_empty()
            || authority.contains('@')
            || !printable(authority)
            || !printable(path)
            || path.contains(['?', '#'])
        {
            return Err(EndpointError::Malformed);
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (
                host,
                port.parse::<u16>().map_err(|_| EndpointError::Malformed)?,
            ),
            _ => (authority, 80),
        };
        let host = host
            .strip_prefix('[')
            .and_then(|host| host.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty() || port == 0 {
            return Err(EndpointError::Malformed);
        }
        Ok(Self {
            authority: authority.into(),
            host: host.into(),
            port,
            path: format!("{}/v1/traces", path.trim_end_matches('/')).into_boxed_str(),
        })
    }

    /// The URL spans are posted to.
    #[cfg(test)]
    pub(crate) fn traces_url(&self) -> String {
        format!("http://{}{}", self.authority, self.path)
    }
}

/// A header sent with every export: its name and value.
pub(crate) type Header = (Box<str>, Box<str>);

/// The headers an OTLP exporter sends by the environment: `OTEL_EXPORTER_OTLP_TRACES_HEADERS`,
/// else `OTEL_EXPORTER_OTLP_HEADERS` (`name=value` pairs separated by commas, values
/// percent-encoded), through `read` (the environment; tests give their own).
///
/// # Errors
///
/// The variable's name when a pair is not a header name (an HTTP token) and a value of
/// visible characters and spaces, or names one of the headers the client writes itself.
/// Nothing of the value is said: it is often a credential.
pub(crate) fn environment_headers(
    read: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Header>, &'static str> {
    let (variable, text) = match read("OTEL_EXPORTER_OTLP_TRACES_HEADERS") {
        Some(text) => ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", text),
        None => match read("OTEL_EXPORTER_OTLP_HEADERS") {
            Some(text) => ("OTEL_EXPORTER_OTLP_HEADERS", text),
            None => return Ok(Vec::new()),
        },
    };
    let token = |name: &str| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let ours = [
        "host",
        "content-type",
        "content-length",
        "connection",
        "transfer-encoding",
    ];
    let mut headers = Vec::new();
    for pair in text
        .split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
    {
        let (name, value) = pair.split_once('=').ok_or(variable)?;
        let (name, value) = (name.trim(), percent_decoded(value.trim()).ok_or(variable)?);
        let visible = value
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic());
        if !token(name) || !visible || ours.iter().any(|own| own.eq_ignore_ascii_case(name)) {
            return Err(variable);
        }
        headers.push((name.into(), value.into()));
    }
    Ok(headers)
}

/// `text` with its `%XX` escapes decoded; `None` when an escape is malformed or the result
/// is not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.bytes();
    while let Some(byte) = rest.next() {
        if byte == b'%' {
            let high = char::from(rest.next()?).to_digit(16)?;
            let low = char::from(rest.next()?).to_digit(16)?;
            bytes.push(u8::try_from(high.checked_mul(16)?.checked_add(low)?).ok()?);
        } else {
            bytes.push(byte);
        }
    }
    String::from_utf8(bytes).ok()
}

/// A blocking HTTP/1.1 client of one endpoint. It keeps its connection between exports while
/// the collector does (a response with a length, no `Connection: close`, HTTP/1.1), and
/// makes a new one otherwise or when the kept one fails.
#[derive(Debug)]
pub(crate) struct Client {
    endpoint: Endpoint,
    /// The connection kept from the last export, if the collector kept it.
    kept: Option<TcpStream>,
    /// Sent with every export: the operator's (`OTEL_EXPORTER_OTLP_*HEADERS`), checked at
    /// start.
    headers: Vec<Header>,
}

impl Client {
    pub(crate) fn new(endpoint: Endpoint, headers: Vec<Header>) -> Self {
        Self {
            endpoint,
            kept: None,
            headers,
        }
    }

    /// Posts `body` (an `ExportTraceServiceRequest` in protobuf) and reads the status and a
    /// bounded body; a status other than 2xx is an error.
    pub(crate) fn post(&mut self, body: &[u8]) -> Result<(), ClientError> {
        let reply = self.send(body)?;
        if (200..300).contains(&reply.status) {
            Ok(())
        } else {
            Err(ClientError::Status(reply.status))
        }
    }

    /// One request and its response: on the kept connection if there is one (and once more
    /// on a new one if that fails: the collector may have closed it meanwhile), else on a
    /// new one.
    fn send(&mut self, body: &[u8]) -> Result<Reply, ClientError> {
        if let Some(mut stream) = self.kept.take()
            && let Ok(reply) = self.exchange(&mut stream, body)
        {
            if reply.keep {
                self.kept = Some(stream);
            }
            return Ok(reply);
        }
        let mut stream = self.connect()?;
        stream.set_read_timeout(Some(OTLP_IO_TIMEOUT))?;
        stream.set_write_timeout(Some(OTLP_IO_TIMEOUT))?;
        let reply = self.exchange(&mut stream, body)?;
        if reply.keep {
            self.kept = Some(stream);
        }
        Ok(reply)
    }

    fn exchange(&self, stream: &mut TcpStream, body: &[u8]) -> Result<Reply, ClientError> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-protobuf\r\n\
             Content-Length: {}\r\n",
            self.endpoint.path,
            self.endpoint.authority,
            body.len()
        );
        for (name, value) in &self.headers {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        stream.flush()?;
        read_response(stream)
    }

    /// A connection to the first of the endpoint's addresses that answers.
    fn connect(&self) -> Result<TcpStream, ClientError> {
        let addresses: Vec<SocketAddr> = (&*self.endpoint.host, self.endpoint.port)
            .to_socket_addrs()?
            .collect();
        let mut last = ClientError::NoAddress;
        for address in addresses {
            match TcpStream::connect_timeout(&address, OTLP_CONNECT_TIMEOUT) {
                Ok(stream) => return Ok(stream),
                Err(error) => last = ClientError::Io(error),
            }
        }
        Err(last)
    }
}

/// Reads a response head and its body (by `Content-Length`, else to the end), at most
/// [`MAX_OTLP_RESPONSE_BYTES`] in all. A chunked body is not read: only the status counts.
/// Interim responses (`100 Continue`, `103 Early Hints`) are read past: a client must expect
/// them before the final one, asked for or not (RFC 9110, section 15.2).
fn read_response(stream: &mut impl Read) -> Result<Reply, ClientError> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 4096];
    let mut total = 0_usize;
    let (status, body_at, length, chunked, keep) = 'head: loop {
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Err(ClientError::Truncated);
        }
        buffer.extend_from_slice(chunk.get(..read).unwrap_or_default());
        total = total.saturating_add(read);
        if total > MAX_OTLP_RESPONSE_BYTES {
            return Err(ClientError::TooLarge);
        }
        // What was read may hold interim heads and the final one.
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            let interim = match response.parse(&buffer) {
                Ok(httparse::Status::Complete(at))
                    if response
                        .code
                        .is_some_and(|code| (100..200).contains(&code) && code != 101) =>
                {
                    at
                }
                Ok(httparse::Status::Complete(at)) => {
                    let status = response.code.ok_or(ClientError::Malformed)?;
                    let header = |wanted: &str| {
                        response
                            .headers
                            .iter()
                            .find(|header| header.name.eq_ignore_ascii_case(wanted))
                            .and_then(|header| std::str::from_utf8(header.value).ok())
                    };
                    let length =
                        header("content-length").and_then(|n| n.trim().parse::<usize>().ok());
                    let chunked = header("transfer-encoding")
                        .is_some_and(|coding| coding.to_ascii_lowercase().contains("chunked"));
                    let close = header("connection")
                        .is_some_and(|option| option.to_ascii_lowercase().contains("close"));
                    let keep =
                        response.version == Some(1) && !close && !chunked && length.is_some();
                    break 'head (status, at, length, chunked, keep);
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => return Err(ClientError::Malformed),
            };
            buffer.drain(..interim.min(buffer.len()));
        }
    };
    let mut body = buffer.split_off(body_at);
    if chunked || length == Some(0) {
        body.clear();
    } else {
        let want = length.unwrap_or(MAX_OTLP_RESPONSE_BYTES);
        let head = total.saturating_sub(body.len());
        if want > MAX_OTLP_RESPONSE_BYTES.saturating_sub(head) {
            return Err(ClientError::TooLarge);
        }
        while body.len() < want {
            let read = stream.read(&mut chunk)?;
            if read == 0 {
                break;
            }
            body.extend_from_slice(chunk.get(..read).unwrap_or_default());
            if body.len() > want {
                return Err(ClientError::TooLarge);
            }
        }
        if length.is_some_and(|length| body.len() != length) {
            return Err(ClientError::Truncated);
        }
    }
    Ok(Reply { status, body, keep })
}

/// A collector's answer: its status, and its body (read only to keep the connection's
/// framing right; a partial success's details are not read).
#[derive(Debug)]
struct Reply {
    status: u16,
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read to the end, looked at by tests")
    )]
    body: Vec<u8>,
    /// The connection may carry the next request: HTTP/1.1, a body read by its length, no
    /// `Connection: close`.
    keep: bool,
}

/// Why an export's request failed (logged; nothing here comes from a peer).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    #[error("the collector could not be reached: {0}")]
    Io(#[from] std::io::Error),
    #[error("the collector's name resolved to no address")]
    NoAddress,
    #[error("the collector's response is not HTTP")]
    Malformed,
    #[error("the collector's response ended early")]
    Truncated,
    #[error("the collector's response is larger than the client reads")]
    TooLarge,
    #[error("the collector answered with status {0}")]
    Status(u16),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_a_plain_http_url() {
        let endpoint = Endpoint::parse("http://127.0.0.1:4318").expect("valid");
        assert_eq!(endpoint.traces_url(), "http://127.0.0.1:4318/v1/traces");
        let endpoint = Endpoint::parse("http://collector/otlp/").expect("valid");
        assert_eq!((endpoint.port, &*endpoint.path), (80, "/otlp/v1/traces"));
        let endpoint = Endpoint::parse("http://[::1]:4318").expect("valid");
        assert_eq!((&*endpoint.host, endpoint.port), ("::1", 4318));
        assert_eq!(
            Endpoint::parse("https://127.0.0.1:4318"),
            Err(EndpointError::NotHttp)
        );
        for bad in [
            "http://",
            "http://:4318",
            "http://host:0",
            "http://host:99999",
            "http://user@host",
            "http://host/path?query",
            "http://host/a b",
        ] {
            assert_eq!(Endpoint::parse(bad), Err(EndpointError::Malformed), "{bad}");
        }
    }

    /// One POST to a listener on loopback: the exporter's body and content type go out
    /// under our framing, and the collector's status and body come back.
    #[test]
    fn an_export_is_one_post_with_our_framing() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let collector = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut chunk = [0_u8; 1024];
            while !seen.ends_with(b"payload") {
                let read = stream.read(&mut chunk).unwrap();
                assert!(read > 0, "{}", String::from_utf8_lossy(&seen));
                seen.extend_from_slice(&chunk[..read]);
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            String::from_utf8(seen).unwrap()
        });
        let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{port}/base/")).unwrap();
        let mut client = Client::new(endpoint, vec![("x-team".into(), "a b".into())]);
        let reply = client.send(b"payload").unwrap();
        assert_eq!((reply.status, &*reply.body), (200, &b"ok"[..]));
        let head = collector.join().unwrap();
        assert!(
            head.starts_with("POST /base/v1/traces HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(
            head.contains(&format!("Host: 127.0.0.1:{port}\r\n")),
            "{head}"
        );
        assert!(head.contains("Content-Length: 7\r\n"), "{head}");
        assert!(
            head.contains("Content-Type: application/x-protobuf\r\n"),
            "{head}"
        );
        assert!(head.contains("x-team: a b\r\n"), "{head}");
        assert!(head.ends_with("\r\n\r\npayload"), "{head}");
    }

    #[test]
    fn a_collector_that_is_not_there_is_an_error_not_a_wait() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let mut client = Client::new(
            Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            Vec::new(),
        );
        assert!(matches!(client.post(b""), Err(ClientError::Io(_))));
    }

    #[test]
    fn a_response_is_read_by_its_length_and_capped() {
        let mut ok: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        let response = read_response(&mut ok).expect("read");
        assert_eq!((response.status, &*response.body), (200, &b"abc"[..]));
        let mut chunked: &[u8] =
            b"HTTP/1.1 503 Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let response = read_response(&mut chunked).expect("read");
        assert_eq!((response.status, response.body.len()), (503, 0));
        let mut short: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc";
        assert!(matches!(
            read_response(&mut short),
            Err(ClientError::Truncated)
        ));
        let huge = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", 1 << 20);
        assert!(matches!(
            read_response(&mut huge.as_bytes()),
            Err(ClientError::TooLarge)
        ));
        let endless = [b'a'; 2 * MAX_OTLP_RESPONSE_BYTES];
        assert!(matches!(
            read_response(&mut &endless[..]),
            Err(ClientError::TooLarge) | Err(ClientError::Malformed)
        ));
    }

    /// Interim heads before the final one are read past, in one read or over several; an
    /// endless run of them is bounded like any response.
    #[test]
    fn interim_responses_are_read_past_to_the_final_one() {
        let final_head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let text = format!(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n{final_head}"
        );
        let response = read_response(&mut text.as_bytes()).expect("read");
        assert_eq!((response.status, &*response.body), (200, &b"ok"[..]));
        assert!(response.keep);
        // One byte a read: the interim head ends inside a read.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let Some((first, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                buf[0] = *first;
                self.0 = rest;
                Ok(1)
            }
        }
        let response = read_response(&mut Trickle(text.as_bytes())).expect("read");
        assert_eq!((response.status, &*response.body), (200, &b"ok"[..]));
        let endless = "HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_OTLP_RESPONSE_BYTES / 20);
        assert!(matches!(
            read_response(&mut endless.as_bytes()),
            Err(ClientError::TooLarge)
        ));
        // `101` is final: what follows it is another protocol's, never an answer.
        let mut switching: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\n\r\n\
                                     HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert!(!matches!(
            read_response(&mut switching),
            Ok(Reply { status: 200, .. })
        ));
    }

    #[test]
    fn headers_come_from_the_traces_variable_first_and_are_checked() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        assert_eq!(environment_headers(env(&[])), Ok(Vec::new()));
        let headers = environment_headers(env(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "ignored=1"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                " Authorization=Bearer%20t0k , x-a=%3D,",
            ),
        ]))
        .unwrap();
        assert_eq!(
            headers,
            [
                ("Authorization".into(), "Bearer t0k".into()),
                ("x-a".into(), "=".into())
            ]
        );
        for bad in [
            "novalue",
            "bad name=1",
            "x=line%0Abreak",
            "x=%zz",
            "x=%c3",
            "Content-Length=1",
            "host=elsewhere",
        ] {
            let read =
                move |name: &str| (name == "OTEL_EXPORTER_OTLP_HEADERS").then(|| bad.to_owned());
            assert_eq!(
                environment_headers(read),
                Err("OTEL_EXPORTER_OTLP_HEADERS"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_status_other_than_2xx_fails_the_export() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let collector = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            one_request(&mut stream, b"x");
            stream
                .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
        });
        let mut client = Client::new(
            Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            Vec::new(),
        );
        assert!(matches!(client.post(b"x"), Err(ClientError::Status(400))));
        collector.join().unwrap();
    }

    /// Reads one request of body `body` from `stream`.
    fn one_request(stream: &mut TcpStream, body: &[u8]) {
        let mut seen = Vec::new();
        let mut byte = [0_u8; 1];
        let end: Vec<u8> = [&b"\r\n\r\n"[..], body].concat();
        while !seen.ends_with(&end) {
            assert_eq!(stream.read(&mut byte).unwrap(), 1, "{seen:?}");
            seen.push(byte[0]);
        }
    }

    #[test]
    fn a_connection_the_collector_keeps_carries_the_next_export() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let collector = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            for body in [&b"one"[..], b"two", b"three"] {
                one_request(&mut stream, body);
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                    .unwrap();
            }
            listener.set_nonblocking(true).unwrap();
            assert!(
                listener.accept().is_err(),
                "one connection for three exports"
            );
        });
        let mut client = Client::new(
            Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            Vec::new(),
        );
        for body in [&b"one"[..], b"two", b"three"] {
            client.post(body).unwrap();
        }
        collector.join().unwrap();
    }

    #[test]
    fn a_closed_or_closing_connection_is_replaced() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let collector = std::thread::spawn(move || {
            // Closes after answering, without saying so: the client finds out on its next
            // export and sends it again on a new connection.
            let (mut stream, _) = listener.accept().unwrap();
            one_request(&mut stream, b"one");
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            drop(stream);
            // Says it closes: the client does not keep it.
            let (mut stream, _) = listener.accept().unwrap();
            one_request(&mut stream, b"two");
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            let (mut stream, _) = listener.accept().unwrap();
            one_request(&mut stream, b"three");
            stream
                .write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
        });
        let mut client = Client::new(
            Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            Vec::new(),
        );
        client.post(b"one").unwrap();
        // Let the close arrive before the next export.
        std::thread::sleep(std::time::Duration::from_millis(50));
        client.post(b"two").unwrap();
        assert!(client.kept.is_none(), "Connection: close");
        client.post(b"three").unwrap();
        assert!(client.kept.is_none(), "HTTP/1.0");
        collector.join().unwrap();
    }
}
