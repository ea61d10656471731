//! One connection, start to finish: the write watchdog, TLS when configured, hyper's HTTP/1.1
//! with the server's head limits, the first-request deadline and the write-stall deadline.
//!
//! Trusts nothing the peer sends; owns the connection's bytes and timers. The driver is generic
//! over the byte stream, so the listener runs it on a `TcpStream` and the fuzz target on an
//! in-memory duplex with the same code and the same [`builder`] settings. The connection slot
//! taken at accept is the caller's to hold for as long as the driver runs.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::limits::HttpLimits;

use super::write_timeout::{Progress, Watched};
use super::{State, cors, request, tls};

/// hyper refuses a read buffer under 8 KiB; the head cap is raised to it if set lower.
const MIN_READ_BUFFER_BYTES: usize = 8 * 1024;

/// How a connection ended.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Ended {
    /// hyper closed it: the peer closed, or asked for the close, or a reply said `close`.
    Closed,
    /// hyper ended it with an error (a head it could not parse, a header-read timeout, a
    /// broken stream); any reply hyper could write was written first.
    Failed,
    /// The TLS handshake failed or did not finish before the first-request deadline.
    NoHandshake,
    /// No request head arrived before the first-request deadline.
    Silent,
    /// The client took no bytes for the write timeout.
    Stalled,
}

/// hyper's HTTP/1.1 settings for every connection of a server with `limits`: the header-read
/// timeout, the number of headers and the head's size (also hyper's read buffer).
pub(super) fn builder(limits: &HttpLimits) -> http1::Builder {
    let mut builder = http1::Builder::new();
    let head_bytes = limits.max_header_bytes.get().max(MIN_READ_BUFFER_BYTES);
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(limits.max_headers.get())
        .max_header_size(head_bytes)
        .max_buf_size(head_bytes);
    builder
}

/// Serves the connection `stream` from `peer` until it ends: the TLS handshake (when the
/// server has TLS) and the first request head share the first-request deadline; a client that
/// takes no bytes for the write timeout loses the connection, and with it its reply.
pub(crate) async fn serve<S>(
    state: Arc<State>,
    builder: &http1::Builder,
    stream: S,
    peer: IpAddr,
) -> Ended
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // The TLS handshake and the first request head share one deadline.
    let first_deadline = tokio::time::Instant::now()
        .checked_add(state.limits.first_request_timeout)
        .unwrap_or_else(tokio::time::Instant::now);
    let write_timeout = state.limits.write_timeout;
    let spoke = Arc::new(AtomicBool::new(false));
    let heard = Arc::clone(&spoke);
    let tls = state.tls.clone();
    let service = hyper::service::service_fn(move |request| {
        heard.store(true, Ordering::Relaxed);
        let state = Arc::clone(&state);
        let cors = cors::Grant::of(&state.allow, &request);
        async move { Ok::<_, Infallible>(cors.apply(request::handle(state, peer, request).await)) }
    });
    let progress = Arc::new(Progress::default());
    let watched = Watched::new(stream, Arc::clone(&progress));
    let Some(stream) = tls::Stream::open(tls.as_ref(), watched, first_deadline).await else {
        return Ended::NoHandshake;
    };
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let first_deadline = tokio::time::sleep_until(first_deadline);
    tokio::pin!(first_deadline);
    let mut first_passed = false;
    let stalled = progress.stalled(write_timeout);
    tokio::pin!(stalled);
    let ended = loop {
        tokio::select! {
            ended = &mut connection => break ended,
            () = &mut first_deadline, if !first_passed => {
                if !spoke.load(Ordering::Relaxed) {
                    // Dropping the connection closes it: a socket that has not delivered a
                    // request head in time holds no slot longer.
                    tracing::debug!("connection closed: no request within the first deadline");
                    return Ended::Silent;
                }
                first_passed = true;
            }
            () = &mut stalled => {
                // Its reply (and the call slots it holds) go with it.
                tracing::debug!("connection closed: the client took no bytes in time");
                return Ended::Stalled;
            }
        }
    };
    match ended {
        Ok(()) => Ended::Closed,
        Err(error) => {
            tracing::debug!(%error, "HTTP connection ended with an error");
            Ended::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::{AllowList, HttpConfig, Tokens};
    use std::net::Ipv4Addr;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn state(limits: HttpLimits) -> Arc<State> {
        let config = HttpConfig::new(AllowList::default(), Tokens::none(), limits);
        State::new(crate::fuzzing::fuzz_server(), config)
    }

    /// Serves `request` on an in-memory connection; the client half-closes once the server
    /// has gone quiet. Returns how the connection ended and what it wrote.
    async fn exchange(limits: HttpLimits, request: &[u8]) -> (Ended, Vec<u8>) {
        let builder = builder(&limits);
        let (client, server) = tokio::io::duplex(64 * 1024);
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let (mut from, mut to) = tokio::io::split(client);
        let driver = serve(state(limits), &builder, server, peer);
        let client = async move {
            to.write_all(request).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
            to.shutdown().await.unwrap();
            let mut out = Vec::new();
            from.read_to_end(&mut out).await.unwrap();
            out
        };
        tokio::join!(driver, client)
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_on_any_byte_stream_is_answered_and_the_connection_closes_at_its_end() {
        let request =
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                        Accept: application/json\r\nContent-Length: 40\r\n\r\n\
                        {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}";
        let (ended, out) = exchange(HttpLimits::default(), request).await;
        assert_eq!(ended, Ended::Closed);
        assert!(out.starts_with(b"HTTP/1.1 400 Bad Request\r\n"), "{out:?}");
        assert!(String::from_utf8_lossy(&out).contains("\"id\":7,"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_sends_no_head_is_closed_at_the_first_deadline() {
        let limits = HttpLimits {
            first_request_timeout: Duration::from_secs(3),
            ..HttpLimits::default()
        };
        let builder = builder(&limits);
        let (_client, server) = tokio::io::duplex(1024);
        let started = tokio::time::Instant::now();
        let ended = serve(
            state(limits),
            &builder,
            server,
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        )
        .await;
        assert_eq!(ended, Ended::Silent);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn the_builder_caps_the_head_at_the_limit_raised_to_hypers_minimum() {
        let limits = HttpLimits {
            max_header_bytes: std::num::NonZeroUsize::new(1024).unwrap(),
            ..HttpLimits::default()
        };
        // Under 8 KiB (hyper's least buffer, to which 1 KiB is raised): served.
        let filler = "a".repeat(6 * 1024);
        let head = format!("GET / HTTP/1.1\r\nHost: localhost\r\nX-Filler: {filler}\r\n\r\n");
        let (_, out) = exchange(limits.clone(), head.as_bytes()).await;
        assert!(out.starts_with(b"HTTP/1.1 404 Not Found\r\n"), "{out:?}");
        // Over it: hyper's own 431, and the connection ends with an error.
        let filler = "a".repeat(9 * 1024);
        let head = format!("GET / HTTP/1.1\r\nHost: localhost\r\nX-Filler: {filler}\r\n\r\n");
        let (ended, out) = exchange(limits, head.as_bytes()).await;
        assert_eq!(ended, Ended::Failed);
        assert!(
            out.starts_with(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{out:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_reads_nothing_loses_the_connection_after_the_write_timeout() {
        let limits = HttpLimits {
            write_timeout: Duration::from_secs(4),
            ..HttpLimits::default()
        };
        let builder = builder(&limits);
        // A pipe too small for one reply, never read.
        let (mut client, server) = tokio::io::duplex(16);
        let driver = serve(
            state(limits),
            &builder,
            server,
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        );
        let started = tokio::time::Instant::now();
        let request = async {
            client
                .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .await
                .unwrap();
            // Kept open, never read.
            client
        };
        let (ended, _client) = tokio::join!(driver, request);
        assert_eq!(ended, Ended::Stalled);
        assert_eq!(started.elapsed(), Duration::from_secs(4));
    }
}
