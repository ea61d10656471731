//! The limit for airlock's HTTP path: hyper's HTTP/1.1 server on tokio's multi-thread
//! runtime (a worker per core, as `Server::run_http`), keep-alive, answering every request
//! with one fixed JSON body after reading the request's body whole.
//!
//!     hyper-fixed 127.0.0.1:PORT
//!
//! The body is the reply an MCP server gives to a `tools/call` of `echo` with "hello",
//! `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"hello"}]}}`, with the
//! request's id copied in by a byte scan (no JSON parse), as `line-echo` does for stdio: so
//! the load generator checks its replies exactly as it checks every server's.

use std::convert::Infallible;
use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .ok_or("usage: hyper-fixed HOST:PORT")?
        .parse()?;
    let listener = TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let service = hyper::service::service_fn(answer);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let id = id_of(&body).unwrap_or(b"null");
    let mut reply = Vec::with_capacity(96);
    reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    reply.extend_from_slice(id);
    reply.extend_from_slice(br#","result":{"content":[{"type":"text","text":"hello"}]}}"#);
    let mut response = Response::new(Full::new(Bytes::from(reply)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// The digits after the first `"id":`.
fn id_of(body: &[u8]) -> Option<&[u8]> {
    let key = br#""id":"#;
    let start = body.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = body.get(start..)?;
    let len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    rest.get(..len).filter(|digits| !digits.is_empty())
}
