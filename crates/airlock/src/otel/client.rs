//! The OTLP exporter's HTTP client: one blocking HTTP/1.1 POST per export, on the export
//! thread, to one `http://` endpoint fixed at start.
//!
//! It trusts the collector with nothing but a status: connect, read and write are bounded by
//! [`OTLP_CONNECT_TIMEOUT`] and [`OTLP_IO_TIMEOUT`], the response by
//! [`MAX_OTLP_RESPONSE_BYTES`], and no redirect is followed. Plain HTTP only: for TLS, run an
//! OpenTelemetry Collector on loopback and let it forward.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::pin::Pin;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

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
    pub(crate) fn traces_url(&self) -> String {
        format!("http://{}{}", self.authority, self.path)
    }
}

/// A blocking HTTP/1.1 client of one endpoint, one connection per export.
#[derive(Debug)]
pub(crate) struct Client {
    endpoint: Endpoint,
}

impl Client {
    pub(crate) fn new(endpoint: Endpoint) -> Self {
        Self { endpoint }
    }

    /// Posts `request`'s body to the endpoint and reads the status and a bounded body.
    fn post(&self, request: &Request<Bytes>) -> Result<Response<Bytes>, ClientError> {
        let mut stream = self.connect()?;
        stream.set_read_timeout(Some(OTLP_IO_TIMEOUT))?;
        stream.set_write_timeout(Some(OTLP_IO_TIMEOUT))?;
        let body = request.body();
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.endpoint.path,
            self.endpoint.authority,
            body.len()
        );
        for (name, value) in request.headers() {
            // The exporter's own headers (content type, those of OTEL_EXPORTER_OTLP_HEADERS);
            // the framing ones are ours.
            let framing = matches!(
                name.as_str(),
                "host" | "content-length" | "connection" | "transfer-encoding"
            );
            if let (false, Ok(value)) = (framing, value.to_str()) {
                head.push_str(name.as_str());
                head.push_str(": ");
                head.push_str(value);
                head.push_str("\r\n");
            }
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        stream.flush()?;
        read_response(&mut stream)
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
fn read_response(stream: &mut impl Read) -> Result<Response<Bytes>, ClientError> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 4096];
    let (status, body_at, length, chunked) = loop {
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Err(ClientError::Truncated);
        }
        buffer.extend_from_slice(chunk.get(..read).unwrap_or_default());
        if buffer.len() > MAX_OTLP_RESPONSE_BYTES {
            return Err(ClientError::TooLarge);
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&buffer) {
            Ok(httparse::Status::Complete(at)) => {
                let status = response.code.ok_or(ClientError::Malformed)?;
                let header = |wanted: &str| {
                    response
                        .headers
                        .iter()
                        .find(|header| header.name.eq_ignore_ascii_case(wanted))
                        .and_then(|header| std::str::from_utf8(header.value).ok())
                };
                let length = header("content-length").and_then(|n| n.trim().parse::<usize>().ok());
                let chunked = header("transfer-encoding")
                    .is_some_and(|coding| coding.to_ascii_lowercase().contains("chunked"));
                break (status, at, length, chunked);
            }
            Ok(httparse::Status::Partial) => {}
            Err(_) => return Err(ClientError::Malformed),
        }
    };
    let mut body = buffer.split_off(body_at);
    if chunked || length == Some(0) {
        body.clear();
    } else {
        let want = length.unwrap_or(MAX_OTLP_RESPONSE_BYTES);
        if want > MAX_OTLP_RESPONSE_BYTES.saturating_sub(body_at) {
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
    Response::builder()
        .status(status)
        .body(Bytes::from(body))
        .map_err(|_| ClientError::Malformed)
}

/// Why an export's request failed (logged by the exporter; nothing here comes from a peer).
#[derive(Debug, thiserror::Error)]
enum ClientError {
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
}

impl HttpClient for Client {
    fn send_bytes<'client, 'future>(
        &'client self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'future>>
    where
        'client: 'future,
        Self: 'future,
    {
        // Blocking on purpose: this runs on the export thread, never on the runtime.
        let result = self.post(&request).map_err(HttpError::from);
        Box::pin(std::future::ready(result))
    }
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
        let client = Client::new(endpoint);
        let request = Request::post("http://ignored/")
            .header("content-type", "application/x-protobuf")
            .header("content-length", "999")
            .body(Bytes::from_static(b"payload"))
            .unwrap();
        let response = client.post(&request).unwrap();
        assert_eq!(
            (response.status().as_u16(), &**response.body()),
            (200, &b"ok"[..])
        );
        let head = collector.join().unwrap();
        assert!(
            head.starts_with("POST /base/v1/traces HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(
            head.contains(&format!("Host: 127.0.0.1:{port}\r\n")),
            "{head}"
        );
        assert!(
            head.contains("Content-Length: 7\r\n"),
            "ours, not the request's: {head}"
        );
        assert!(!head.contains("999"), "{head}");
        assert!(
            head.contains("content-type: application/x-protobuf\r\n"),
            "{head}"
        );
        assert!(head.ends_with("\r\n\r\npayload"), "{head}");
    }

    #[test]
    fn a_collector_that_is_not_there_is_an_error_not_a_wait() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let client = Client::new(Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap());
        let request = Request::post("http://x/").body(Bytes::new()).unwrap();
        assert!(matches!(client.post(&request), Err(ClientError::Io(_))));
    }

    #[test]
    fn a_response_is_read_by_its_length_and_capped() {
        let mut ok: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        let response = read_response(&mut ok).expect("read");
        assert_eq!(
            (response.status().as_u16(), &**response.body()),
            (200, &b"abc"[..])
        );
        let mut chunked: &[u8] =
            b"HTTP/1.1 503 Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let response = read_response(&mut chunked).expect("read");
        assert_eq!(
            (response.status().as_u16(), response.body().len()),
            (503, 0)
        );
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
}
