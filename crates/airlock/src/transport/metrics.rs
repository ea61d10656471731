//! The metrics endpoint: [`Metrics`] served as `GET /metrics` on a
//! listener of its own, on a thread of its own.
//!
//! Trusts nothing the peer sends: the `Host` header must name an allowed host (as on the MCP
//! listener: loopback names plus what the operator added), before anything else is looked
//! at; only `GET` (and `HEAD`) of `/metrics` is answered with the text, `405` for another
//! method on it and `404` for any other path, each with a fixed body; no request body is
//! read. Connections are bounded (8 at once), each serves one request, and a connection that
//! has not been answered within 5 s is closed (the head must come within 2 s, at most 8 KiB and
//! 32 fields). At the bound, a new connection takes the place of the oldest one whose request
//! head is not complete yet (closed), so connections that only hold half a head cannot lock a
//! scraper out: a scraper sends its head at once and is answered before anything is evicted.
//! Only when every open connection is being answered is a new one closed at accept. The bounds
//! are in `limits.rs`.
//!
//! It runs on a thread with a runtime of its own, so a server on stdio gets it as well as
//! one on HTTP, and a busy MCP runtime does not delay a scrape.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::task::AbortHandle;

use super::http::AllowList;
use crate::limits::{
    MAX_METRICS_CONNECTIONS, MAX_METRICS_HEAD_BYTES, MAX_METRICS_HEADERS,
    METRICS_CONNECTION_TIMEOUT, METRICS_HEADER_READ_TIMEOUT,
};
use crate::metrics::{CONTENT_TYPE, Metrics};

/// The path the text is served at.
const PATH: &str = "/metrics";

/// A metrics listener, bound and not yet serving.
#[derive(Debug)]
pub struct Endpoint {
    listener: std::net::TcpListener,
    allow: AllowList,
}

/// Why a metrics endpoint did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("the metrics address {addr} could not be bound: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Its thread or runtime could not be started.
    #[error("the metrics endpoint could not start: {0}")]
    Start(std::io::Error),
}

impl Endpoint {
    /// Binds `addr`; requests must name a host of `allow` in `Host` (the loopback names,
    /// plus those the operator listed; origins are not used). Binding here, before the server
    /// starts, lets a busy port fail the start and port `0` be resolved
    /// ([`Endpoint::local_addr`]).
    ///
    /// # Errors
    ///
    /// [`EndpointError::Bind`].
    pub fn bind(addr: SocketAddr, allow: AllowList) -> Result<Self, EndpointError> {
        let bound = std::net::TcpListener::bind(addr)
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener));
        match bound {
            Ok(listener) => Ok(Self { listener, allow }),
            Err(source) => Err(EndpointError::Bind { addr, source }),
        }
    }

    /// The address bound.
    ///
    /// # Errors
    ///
    /// What the operating system says.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves `metrics` on a thread of its own until the process ends.
    ///
    /// # Errors
    ///
    /// [`EndpointError::Start`]: no thread or no runtime.
    pub fn spawn(self, metrics: Arc<Metrics>) -> Result<(), EndpointError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(EndpointError::Start)?;
        std::thread::Builder::new()
            .name("airlock-metrics".to_owned())
            .spawn(move || runtime.block_on(self.serve(metrics)))
            .map_err(EndpointError::Start)?;
        Ok(())
    }

    /// Accepts connections and serves each on a task, at most [`MAX_METRICS_CONNECTIONS`] at
    /// once; at the bound a new connection replaces the oldest one still waiting for its head.
    async fn serve(self, metrics: Arc<Metrics>) {
        let Self { listener, allow } = self;
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(error) => {
                tracing::error!(kind = ?error.kind(), "the metrics listener could not start");
                return;
            }
        };
        let allow = Arc::new(allow);
        let mut open = Connections::default();
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(METRICS_HEADER_READ_TIMEOUT)
            .max_headers(MAX_METRICS_HEADERS)
            .max_buf_size(MAX_METRICS_HEAD_BYTES)
            .keep_alive(false);
        let builder = Arc::new(builder);
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _peer)) => stream,
                Err(error) => {
                    tracing::debug!(kind = ?error.kind(), "a metrics connection failed at accept");
                    // A full descriptor table: wait rather than spin.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            if !open.make_room() {
                tracing::debug!("a metrics connection closed: every open one is being answered");
                drop(stream);
                continue;
            }
            let headed = Arc::new(AtomicBool::new(false));
            let metrics = Arc::clone(&metrics);
            let allow = Arc::clone(&allow);
            let builder = Arc::clone(&builder);
            let marked = Arc::clone(&headed);
            let task = tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    marked.store(true, Ordering::Relaxed);
                    let reply = answer(&metrics, &allow, &request);
                    async move { Ok::<_, Infallible>(reply) }
                });
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                if tokio::time::timeout(METRICS_CONNECTION_TIMEOUT, connection)
                    .await
                    .is_err()
                {
                    tracing::debug!("a metrics connection closed: not answered in time");
                }
            });
            open.push(headed, task.abort_handle());
            // Let the new connection read its head before the next accept can evict it: a
            // flood of connects must not win the race against a scraper already sending.
            tokio::task::yield_now().await;
        }
    }
}

/// The metrics connections open, oldest first.
#[derive(Default)]
struct Connections {
    open: VecDeque<Connection>,
}

/// One open metrics connection.
struct Connection {
    /// Set once its request head is complete (the request is being answered).
    headed: Arc<AtomicBool>,
    /// Ends its task, which closes the socket.
    task: AbortHandle,
}

impl Connections {
    /// Makes room for one more connection: forgets the ended ones and, at
    /// [`MAX_METRICS_CONNECTIONS`], closes the oldest one still without a complete head;
    /// `false` when every open connection is being answered (the new one is refused).
    fn make_room(&mut self) -> bool {
        self.open
            .retain(|connection| !connection.task.is_finished());
        if self.open.len() < MAX_METRICS_CONNECTIONS {
            return true;
        }
        let waiting = self
            .open
            .iter()
            .position(|connection| !connection.headed.load(Ordering::Relaxed));
        let Some(oldest) = waiting else {
            return false;
        };
        if let Some(evicted) = self.open.remove(oldest) {
            tracing::debug!("a metrics connection closed: evicted while waiting for its head");
            evicted.task.abort();
        }
        true
    }

    fn push(&mut self, headed: Arc<AtomicBool>, task: AbortHandle) {
        self.open.push_back(Connection { headed, task });
    }
}

/// Whether the request is for an allowed host, by every name it gives: exactly one `Host`
/// field (two could be read two ways, RFC 9112 section 3.2 wants them refused), and the
/// authority of an absolute-form target, which a server takes over `Host` (section 3.2.2),
/// allowed too.
fn names_an_allowed_host<B>(allow: &AllowList, request: &Request<B>) -> bool {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() || !allow.host(first) {
        return false;
    }
    match request.uri().authority() {
        None => true,
        Some(authority) => header::HeaderValue::from_str(authority.as_str())
            .is_ok_and(|named| allow.host(Some(&named))),
    }
}

/// The reply to one request: the text, or a refusal with a fixed body.
fn answer<B>(metrics: &Metrics, allow: &AllowList, request: &Request<B>) -> Response<Full<Bytes>> {
    if !names_an_allowed_host(allow, request) {
        return fixed(StatusCode::MISDIRECTED_REQUEST, "Host not allowed.\n");
    }
    if request.uri().path() != PATH {
        return fixed(
            StatusCode::NOT_FOUND,
            "Not found: the metrics are at /metrics.\n",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut reply = fixed(StatusCode::METHOD_NOT_ALLOWED, "Only GET is served here.\n");
        reply
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return reply;
    }
    let mut text = Vec::new();
    metrics.render(&mut text);
    let mut reply = Response::new(Full::new(Bytes::from(text)));
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(CONTENT_TYPE),
    );
    reply
}

/// A reply of `status` with a fixed plain-text body.
fn fixed(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut reply = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, path: &str, host: Option<&str>) -> Request<()> {
        let mut builder = Request::builder().method(method).uri(path);
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        builder.body(()).unwrap()
    }

    /// Every name a request gives for its host is checked: one `Host` field only, and an
    /// absolute-form target's authority too (the red team's findings on the endpoint).
    #[test]
    fn two_host_fields_and_a_foreign_absolute_target_are_refused() {
        let metrics = Metrics::new();
        let allow = AllowList::default();
        let twice = Request::builder()
            .uri("/metrics")
            .header(header::HOST, "localhost")
            .header(header::HOST, "evil.example")
            .body(())
            .unwrap();
        let absolute = request(
            Method::GET,
            "http://evil.example/metrics",
            Some("localhost"),
        );
        let local_absolute = request(
            Method::GET,
            "http://127.0.0.1:9/metrics",
            Some("127.0.0.1:9"),
        );
        for (request, status) in [
            (&twice, StatusCode::MISDIRECTED_REQUEST),
            (&absolute, StatusCode::MISDIRECTED_REQUEST),
            (&local_absolute, StatusCode::OK),
        ] {
            assert_eq!(answer(&metrics, &allow, request).status(), status);
        }
    }

    #[test]
    fn only_get_of_metrics_on_an_allowed_host_gets_the_text() {
        let metrics = Metrics::new();
        let allow = AllowList::default();
        let ok = answer(
            &metrics,
            &allow,
            &request(Method::GET, "/metrics", Some("127.0.0.1:9")),
        );
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(ok.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        for (method, path, host, status) in [
            (
                Method::GET,
                "/metrics",
                Some("evil.example"),
                StatusCode::MISDIRECTED_REQUEST,
            ),
            (
                Method::GET,
                "/metrics",
                None,
                StatusCode::MISDIRECTED_REQUEST,
            ),
            (Method::GET, "/", Some("localhost"), StatusCode::NOT_FOUND),
            (
                Method::GET,
                "/metrics/x",
                Some("localhost"),
                StatusCode::NOT_FOUND,
            ),
            (
                Method::POST,
                "/metrics",
                Some("localhost"),
                StatusCode::METHOD_NOT_ALLOWED,
            ),
            (
                Method::DELETE,
                "/metrics",
                Some("[::1]"),
                StatusCode::METHOD_NOT_ALLOWED,
            ),
        ] {
            let reply = answer(&metrics, &allow, &request(method.clone(), path, host));
            assert_eq!(reply.status(), status, "{method} {path} {host:?}");
        }
        let listed = AllowList::new(&["metrics.internal".to_owned()], &[]);
        let reply = answer(
            &metrics,
            &listed,
            &request(Method::GET, "/metrics", Some("metrics.internal:9464")),
        );
        assert_eq!(reply.status(), StatusCode::OK);
    }
}
