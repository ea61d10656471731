//! Streamable HTTP: the same sans-I/O engine behind hyper, in both protocol eras.
//!
//! One endpoint, `/mcp`, takes POST (one JSON-RPC message per body) and, for legacy sessions,
//! DELETE. Before a body is read, a request passes, in order: the `Host` allow-list (DNS
//! rebinding: `421`), the `Origin` allow-list (`403`), the bearer token when one is configured
//! (`401`), the client's request quota (`429`), the media types (`415`, `406`) and the body cap
//! (`413` from `Content-Length` alone, or as soon as a chunked body passes it). A CORS
//! preflight leaves that order after `Origin`: it needs no token, takes its address's request
//! quota and is answered by `cors`, which also adds the CORS headers of replies to a listed
//! origin. The head is capped by hyper (`431`), the body must arrive within a timeout (`408`),
//! and connections past `max_connections` get `503` without a task.
//!
//! With a [`Tls`] configuration a connection is HTTPS: its handshake (`tls`) runs between the
//! write watchdog and hyper, under the connection's slot and its first-request deadline.
//!
//! The body then crosses [`envelope::parse`], the one boundary, once: the message read is
//! handed to the engine as it is (`Engine::handle_message`), never parsed again. The era is
//! decided:
//!
//! - **modern** (2026-07-28): the body's `_meta` names a protocol version, or the
//!   `MCP-Protocol-Version` header is not a legacy one. `MCP-Protocol-Version`, `Mcp-Method`
//!   and (for `tools/call`) `Mcp-Name` must match the body (`400` + `-32020`). A fresh engine
//!   handles the one message, runs its call if any, and is dropped: nothing is kept between
//!   requests, so replicas behind any load balancer serve the same.
//! - **legacy** (2025-11-25 and earlier): `initialize` opens a session with an engine of its
//!   own (`session`); every later request names it in `Mcp-Session-Id`.
//!
//! A call's reply is JSON, or an SSE stream (progress notifications, then the reply) when the
//! client accepts `text/event-stream` and sent a `progressToken`. Server-wide, calls share the
//! `max_in_flight` slots; per client, they also need a quota token and one of
//! `client_in_flight` slots (`clients`). Every JSON-RPC refusal is an [`McpError`] written by
//! the response module, and its HTTP status comes from `status`, the one place statuses are
//! decided. What the engine decides (the reply to a message the envelope refused, whether a
//! message counts as invalid) is asked of an engine, one of its own when no session holds
//! the message.

mod auth;
mod body;
mod clients;
mod connections;
mod cors;
mod headers;
mod proxies;
mod session;
mod status;
mod tls;
mod write_timeout;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use std::time::Instant;

use http_body_util::{BodyExt, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::call::Call;
use crate::call_log::{Client as AuditClient, Entry as AuditEntry};
use crate::engine::{Effect, Engine, Shared};
use crate::envelope::{self, Message, Notification, Request as RpcRequest, RequestMethod};
use crate::error::{HeaderFault, HttpRefusal, McpError};
use crate::handler::{CallContext, Event};
use crate::json::Text;
use crate::lifecycle;
use crate::limits::HttpLimits;
use crate::response;
use crate::version::ProtocolVersion;

pub use auth::{TokenError, Tokens};
pub use headers::{AllowList, OriginError};
pub use proxies::{Cidr, TrustedProxies};
pub use tls::{Tls, TlsError};

use body::Body;
use clients::{ClientKey, Clients, Slot};
use connections::Connections;
use headers::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use session::{Session, Sessions};
use write_timeout::{Progress, Watched};

/// The one MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// hyper refuses a read buffer under 8 KiB; the head cap is raised to it if set lower.
const MIN_READ_BUFFER_BYTES: usize = 8 * 1024;

/// Progress reports a call may queue for its SSE stream before further ones are dropped.
const PROGRESS_QUEUE: usize = 16;

/// SSE events queued for a slow client before the call's progress waits.
const SSE_QUEUE: usize = 8;

/// How often idle sessions and quiet clients' quota state are swept.
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// How an HTTP server is reached and what it lets in.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Hosts and origins allowed besides the loopback names.
    pub allow: AllowList,
    /// Bearer tokens; none means no authentication (acceptable on loopback only).
    pub tokens: Tokens,
    /// Connection, session, timeout and per-client limits.
    pub limits: HttpLimits,
    /// Reverse proxies whose forwarding headers say who a client is; none by default.
    pub proxies: TrustedProxies,
    /// TLS: HTTPS on the listener when set, plain HTTP otherwise.
    pub tls: Option<Tls>,
}

impl HttpConfig {
    /// A configuration with the given allow-list, tokens and limits, trusting no proxy.
    pub fn new(allow: AllowList, tokens: Tokens, limits: HttpLimits) -> Self {
        Self {
            allow,
            tokens,
            limits,
            proxies: TrustedProxies::default(),
            tls: None,
        }
    }

    /// The same, keying requests from `proxies` by the client address they forward.
    #[must_use]
    pub fn trusting(mut self, proxies: TrustedProxies) -> Self {
        self.proxies = proxies;
        self
    }

    /// This configuration serving HTTPS with `tls`.
    #[must_use]
    pub fn with_tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }
}

/// Serves MCP over HTTP on `listener` until `shutdown` resolves.
///
/// # Errors
///
/// Only a failure to read the listener's own address; accept errors are logged and retried.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    config: HttpConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let HttpConfig {
        allow,
        tokens,
        limits,
        proxies,
        tls,
    } = config;
    let state = Arc::new(State {
        calls: Arc::new(Semaphore::new(shared.limits().max_in_flight.get())),
        clients: Arc::new(Clients::new(
            &limits,
            shared.limits().max_consecutive_errors.get(),
        )),
        sessions: Sessions::new(
            limits.max_sessions.get(),
            limits.max_sessions_per_client.get(),
            limits.session_idle_timeout,
        ),
        connections: Connections::new(
            limits.max_connections.get(),
            limits.max_connections_per_address.get(),
        ),
        allow,
        tokens,
        limits,
        proxies,
        tls,
        shared,
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    let head_bytes = state
        .limits
        .max_header_bytes
        .get()
        .max(MIN_READ_BUFFER_BYTES);
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(state.limits.header_read_timeout)
        .max_headers(state.limits.max_headers.get())
        .max_header_size(head_bytes)
        .max_buf_size(head_bytes);
    let sweeper = tokio::spawn(sweep(Arc::clone(&state)));
    tracing::info!(
        addr = %local,
        auth = !state.tokens.is_empty(),
        tls = state.tls.is_some(),
        "serving MCP over HTTP at /mcp"
    );
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors and the like: wait a moment instead of spinning.
                tracing::warn!(kind = ?error.kind(), "accepting a connection failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let trusted_proxy = state.proxies.trusts(peer.ip());
        let slot = match state.connections.enter(peer.ip(), trusted_proxy) {
            Ok(slot) => slot,
            Err(error) => {
                // On a TLS port a plain-text 503 would only garble the handshake: just closed.
                if state.tls.is_none() {
                    refuse_connection(&stream, &error);
                }
                continue;
            }
        };
        let state = Arc::clone(&state);
        let builder = builder.clone();
        tokio::spawn(async move {
            // Held for the connection's life: dropped after it, when this task ends.
            let _slot = slot;
            let peer_ip = peer.ip();
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
                async move { Ok::<_, Infallible>(cors.apply(handle(state, peer_ip, request).await)) }
            });
            let progress = Arc::new(Progress::default());
            let watched = Watched::new(stream, Arc::clone(&progress));
            let Some(stream) = tls::Stream::open(tls.as_ref(), watched, first_deadline).await
            else {
                return;
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
                            // Dropping the connection closes it: a socket that has not
                            // delivered a request head in time holds no slot longer.
                            tracing::debug!(
                                "connection closed: no request within the first deadline"
                            );
                            return;
                        }
                        first_passed = true;
                    }
                    () = &mut stalled => {
                        // Its reply (and the call slots it holds) go with it.
                        tracing::debug!("connection closed: the client took no bytes in time");
                        return;
                    }
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%error, "HTTP connection ended with an error");
            }
        });
    }
    sweeper.abort();
    tracing::info!("HTTP server stopped");
    Ok(())
}

/// What every request of one server shares.
struct State {
    shared: Arc<Shared>,
    allow: AllowList,
    tokens: Tokens,
    limits: HttpLimits,
    proxies: TrustedProxies,
    tls: Option<Tls>,
    clients: Arc<Clients>,
    sessions: Sessions,
    /// Server-wide call slots (`max_in_flight`).
    calls: Arc<Semaphore>,
    connections: Arc<Connections>,
}

async fn sweep(state: Arc<State>) {
    let mut every = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        every.tick().await;
        state.sessions.sweep();
        state.clients.sweep();
    }
}

/// A connection past a cap: `503` written if the socket takes it at once, then closed. No
/// task and no buffer are spent on it.
fn refuse_connection(stream: &TcpStream, error: &McpError) {
    let mut body = Vec::new();
    response::write_error(&mut body, None, error);
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&body);
    if stream.try_write(&bytes).is_err() {
        tracing::debug!("a connection past the cap closed before its 503");
    }
    tracing::debug!(%error, "connection refused");
}

/// One HTTP request, start to finish: served by [`serve_request`], then counted for the
/// garbage cut-off against whoever sent it (see `clients`).
async fn handle(state: Arc<State>, peer: IpAddr, request: Request<Incoming>) -> Response<Body> {
    let from = state.proxies.client(peer, request.headers());
    let address = ClientKey::of(None, from);
    let mut sender = None;
    let reply = serve_request(&state, (from, &address), request, &mut sender).await;
    let sender = sender.unwrap_or(address);
    let verdict = reply
        .extensions()
        .get::<Verdict>()
        .copied()
        .unwrap_or(Verdict::Valid);
    if state.clients.record(&sender, verdict) {
        tracing::info!(
            client = ?sender,
            "HTTP client cut off for a while after too many invalid requests in a row"
        );
    }
    reply
}

/// What a reply says of its request, for the cut-off; a reply without one is
/// [`Verdict::Valid`].
pub(crate) use clients::Verdict;

/// Serves one request from `from` (keyed as `address`); sets `sender` to the client's identity
/// once its token is valid (the address is the sender until then).
///
/// The refusals of the boundary (`421`, `403`, `401`, `429`) are logged at `info` with the
/// client's address, for the operator (never the token, nor the refused header's value).
async fn serve_request(
    state: &Arc<State>,
    (from, address): (IpAddr, &ClientKey),
    request: Request<Incoming>,
    sender: &mut Option<ClientKey>,
) -> Response<Body> {
    if request.uri().path() != MCP_PATH {
        return garbage(status_only(StatusCode::NOT_FOUND));
    }
    let head = request.headers();
    if !state.allow.host(head.get(header::HOST)) {
        tracing::info!(client = %from, status = 421, "request refused: Host not allowed");
        tracing::debug!(host = ?head.get(header::HOST), "the refused Host");
        return garbage(refusal(&McpError::Http(HttpRefusal::Host)));
    }
    if !state.allow.origin(head.get(header::ORIGIN)) {
        tracing::info!(client = %from, status = 403, "request refused: Origin not allowed");
        tracing::debug!(origin = ?head.get(header::ORIGIN), "the refused Origin");
        return garbage(refusal(&McpError::Http(HttpRefusal::Origin)));
    }
    if cors::is_preflight(&request) {
        // No token (browsers send none on a preflight): the address's cut-off and request
        // quota still. An accepted preflight neither counts nor resets the garbage run.
        let refused = state
            .clients
            .admit_unless_cut_off(address)
            .and_then(|()| state.clients.admit_request(address));
        if let Err(error) = refused {
            tracing::info!(
                client = %from,
                status = status::of(&error, false).as_u16(),
                %error,
                "preflight refused: client cut off or over its quota"
            );
            return judged(refusal(&error), Verdict::Neutral);
        }
        let reply = cors::preflight(&state.allow, head);
        return if reply.status() == StatusCode::NO_CONTENT {
            judged(reply, Verdict::Neutral)
        } else {
            garbage(reply)
        };
    }
    let identity = match state.tokens.check_header(head.get(header::AUTHORIZATION)) {
        Ok(identity) => identity,
        Err(denied) => {
            tracing::info!(
                client = %from,
                status = 401,
                presented = denied.presented,
                "request refused: no valid token"
            );
            if let Err(error) = state.clients.admit_unless_cut_off(address) {
                return judged(closing(refusal(&error)), Verdict::Neutral);
            }
            let mut reply = refusal(&McpError::Http(HttpRefusal::Unauthorized));
            let challenge = if denied.presented {
                r#"Bearer realm="airlock", error="invalid_token""#
            } else {
                r#"Bearer realm="airlock""#
            };
            reply.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
            return garbage(reply);
        }
    };
    let client = match &identity {
        Some(identity) => ClientKey::Identity(Arc::clone(identity)),
        None => address.clone(),
    };
    // A cut-off client is refused before anything else is spent on it, and its connection
    // closed; this refusal is not counted again.
    if let Err(error) = state.clients.admit_unless_cut_off(&client) {
        tracing::info!(client = %from, identity = ?identity, status = status::of(&error, false).as_u16(), "request refused: the client is cut off");
        return judged(closing(refusal(&error)), Verdict::Neutral);
    }
    *sender = Some(client.clone());
    if let Err(error) = state.clients.admit_request(&client) {
        tracing::info!(
            client = %from,
            identity = ?identity,
            status = status::of(&error, false).as_u16(),
            %error,
            "request refused: client over its request quota"
        );
        return judged(refusal(&error), Verdict::Neutral);
    }
    let caller = Caller {
        identity,
        client,
        address: from,
    };
    match *request.method() {
        Method::POST => post(state, caller, request).await,
        Method::DELETE => delete(state, &caller, request.headers()),
        _ => {
            let mut reply = refusal(&McpError::Http(HttpRefusal::MethodNotAllowed));
            reply
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            garbage(reply)
        }
    }
}

/// `reply`, marked as the answer to garbage.
fn garbage(reply: Response<Body>) -> Response<Body> {
    judged(reply, Verdict::Garbage)
}

/// `reply`, marked with what it says of its request.
fn judged(mut reply: Response<Body>, verdict: Verdict) -> Response<Body> {
    reply.extensions_mut().insert(verdict);
    reply
}

/// The verdict on a request an engine handled: garbage when the engine counted it invalid;
/// a valid notification neither counts nor resets (as on stdio, where only an answered
/// request resets the run).
fn engine_verdict(engine: &Engine, notification: bool) -> Verdict {
    if engine.last_was_invalid() {
        Verdict::Garbage
    } else if notification {
        Verdict::Neutral
    } else {
        Verdict::Valid
    }
}

/// Whether a refusal is a busy server's, not the client's fault: the cut-off does not count
/// it.
fn busy(error: &McpError) -> bool {
    matches!(
        error,
        McpError::RateLimited { .. }
            | McpError::Overloaded { .. }
            | McpError::ClientBusy { .. }
            | McpError::TooManyConnections { .. }
            | McpError::TooManyConnectionsFromAddress { .. }
            | McpError::TooManySessions { .. }
            | McpError::Internal(_)
    )
}

/// Who sent a request.
struct Caller {
    identity: Option<Arc<str>>,
    client: ClientKey,
    /// The client's address, unmasked (for the audit record).
    address: IpAddr,
}

impl Caller {
    /// The caller as an audit record names it.
    fn audited(&self) -> AuditClient {
        AuditClient::Http {
            address: self.address,
            identity: self.identity.clone(),
        }
    }
}

/// DELETE: ends a legacy session. The modern era has none (`405`).
fn delete(state: &State, caller: &Caller, head: &HeaderMap) -> Response<Body> {
    let modern = headers::text(head, MCP_PROTOCOL_VERSION)
        .is_some_and(|version| ProtocolVersion::legacy(version).is_none());
    let session_id = headers::text(head, MCP_SESSION_ID);
    match session_id {
        Some(id) if !modern => {
            if state.sessions.close(id, caller.identity.as_ref()) {
                tracing::debug!("session ended by the client");
                status_only(StatusCode::NO_CONTENT)
            } else {
                garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound)))
            }
        }
        _ => {
            let mut reply = refusal(&McpError::Http(HttpRefusal::MethodNotAllowed));
            reply
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            garbage(reply)
        }
    }
}

/// POST: one JSON-RPC message.
async fn post(state: &State, caller: Caller, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let head = &parts.headers;
    if !headers::is_json(head) {
        return garbage(refusal(&McpError::Http(HttpRefusal::UnsupportedMediaType)));
    }
    let accepts = headers::accepts(head);
    if !accepts.json && !accepts.sse {
        return garbage(refusal(&McpError::Http(HttpRefusal::NotAcceptable)));
    }
    let max = state.shared.limits().max_frame_bytes.get();
    let too_long = McpError::FrameTooLong { limit: max };
    let declared = head
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| u64::try_from(max).is_ok_and(|max| length > max)) {
        // Refused on the declared length alone; the body is never read, and the connection
        // is closed rather than drained.
        tracing::debug!("request refused: body over the cap (declared)");
        return garbage(closing(refusal(&too_long)));
    }
    let read = tokio::time::timeout(
        state.limits.body_read_timeout,
        Limited::new(body, max).collect(),
    )
    .await;
    let frame = match read {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(error)) => {
            if error.is::<http_body_util::LengthLimitError>() {
                tracing::debug!("request refused: body over the cap");
                return garbage(closing(refusal(&too_long)));
            }
            tracing::debug!("the request body could not be read");
            return garbage(closing(status_only(StatusCode::BAD_REQUEST)));
        }
        Err(_elapsed) => {
            tracing::debug!("request refused: the body did not arrive in time");
            return garbage(closing(refusal(&McpError::Http(HttpRefusal::BodyTimeout))));
        }
    };
    let header_version = headers::text(head, MCP_PROTOCOL_VERSION);
    let modern_header = header_version.is_some_and(|v| ProtocolVersion::legacy(v).is_none());
    let parsed = envelope::parse(&frame, state.shared.limits().max_json_depth.get());
    let request = match parsed {
        Ok(Message::Request(request)) => request,
        Ok(Message::Notification(notification)) => {
            return self::notification(state, &caller, head, notification);
        }
        // Refused at the envelope, or an unsolicited response: no session takes it, and an
        // engine of its own answers and counts it.
        unanswered => {
            let mut engine = Engine::for_client(Arc::clone(&state.shared), caller.audited());
            let mut out = Vec::new();
            match engine.handle_message(unanswered, &mut out) {
                Effect::None | Effect::CutOff | Effect::Cancel(_) | Effect::Start(_) => {}
            }
            return unanswered_reply(&mut engine, out, modern_header);
        }
    };
    let claims_modern = lifecycle::claimed_version(
        request
            .params
            .as_ref()
            .and_then(|params| params.meta.as_ref()),
    )
    .is_some();
    let call = Exchange {
        state,
        caller: &caller,
        head,
        sse: accepts.sse,
    };
    if claims_modern {
        return call.modern(request).await;
    }
    if modern_header {
        // The header speaks 2026-07-28 (or a version we do not know) but the body carries no
        // protocol fields: a modern request missing its required `_meta`.
        let error = McpError::InvalidMeta("the protocol fields in _meta are required");
        return call.error(&request, &error, true);
    }
    call.legacy(request).await
}

/// A notification: for a legacy session, handed to its engine (cancellation); otherwise
/// accepted and ignored (modern clients cancel by closing the stream).
fn notification(
    state: &State,
    caller: &Caller,
    head: &HeaderMap,
    notification: Notification<'_>,
) -> Response<Body> {
    let message = Ok(Message::Notification(notification));
    let mut out = Vec::new();
    if let Some(id) = headers::text(head, MCP_SESSION_ID) {
        let Some(session) = state.sessions.find(id, caller.identity.as_ref()) else {
            return garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound)));
        };
        let mut engine = session.engine();
        let effect = engine.handle_message(message, &mut out);
        let verdict = engine_verdict(&engine, true);
        drop(engine);
        match effect {
            Effect::Cancel(ticket) => session.cancel(&ticket),
            Effect::None | Effect::Start(_) => {}
            Effect::CutOff => {
                state.sessions.close(id, caller.identity.as_ref());
            }
        }
        return judged(status_only(StatusCode::ACCEPTED), verdict);
    }
    // No session: an engine of its own (a cancellation there matches no call).
    let mut engine = Engine::for_client(Arc::clone(&state.shared), caller.audited());
    match engine.handle_message(message, &mut out) {
        Effect::None | Effect::CutOff | Effect::Cancel(_) | Effect::Start(_) => {}
    }
    judged(
        status_only(StatusCode::ACCEPTED),
        engine_verdict(&engine, true),
    )
}

/// The reply to a frame refused at the envelope or to an unsolicited response, as `engine`
/// (one of its own) handled it: the error it wrote with its status, or `202` with no body
/// when it answered nothing; judged as the engine counted it.
fn unanswered_reply(engine: &mut Engine, out: Vec<u8>, modern: bool) -> Response<Body> {
    let verdict = engine_verdict(engine, false);
    match engine.take_refusal() {
        Some(error) => judged(json(out, Some(&error), modern), verdict),
        None => judged(status_only(StatusCode::ACCEPTED), verdict),
    }
}

/// One request's context.
struct Exchange<'a> {
    state: &'a State,
    caller: &'a Caller,
    head: &'a HeaderMap,
    sse: bool,
}

impl Exchange<'_> {
    /// A JSON error reply to `id`.
    fn error(&self, request: &RpcRequest<'_>, error: &McpError, modern: bool) -> Response<Body> {
        let id = &request.id;
        tracing::debug!(%error, "request refused");
        if request.method == RequestMethod::ToolsCall
            && let Some(log) = &self.state.shared.call_log
        {
            let tool = request
                .params
                .as_ref()
                .and_then(|params| params.name.as_ref())
                .and_then(Text::as_str)
                .and_then(|name| self.state.shared.registry.get(name))
                .map(|tool| tool.name.as_str());
            log.write(&AuditEntry::refused(&self.caller.audited(), tool, error));
        }
        let mut out = Vec::new();
        response::write_error(&mut out, Some(id), error);
        let verdict = if busy(error) {
            Verdict::Neutral
        } else {
            Verdict::Garbage
        };
        judged(json(out, Some(error), modern), verdict)
    }

    /// A modern request: headers checked against the body, then a fresh engine.
    async fn modern(&self, request: RpcRequest<'_>) -> Response<Body> {
        if let Err(fault) = self.check_headers(&request) {
            return self.error(&request, &McpError::HeaderMismatch(fault), true);
        }
        let slots = match self.call_slots(&request) {
            Ok(slots) => slots,
            Err(error) => return self.error(&request, &error, true),
        };
        let engine = Arc::new(Mutex::new(Engine::for_client(
            Arc::clone(&self.state.shared),
            self.caller.audited(),
        )));
        self.run(engine, request, slots, true).await
    }

    /// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` against the body.
    fn check_headers(&self, request: &RpcRequest<'_>) -> Result<(), HeaderFault> {
        let header_version = headers::text(self.head, MCP_PROTOCOL_VERSION);
        let body_version = lifecycle::claimed_version(
            request
                .params
                .as_ref()
                .and_then(|params| params.meta.as_ref()),
        );
        let version_matches = match body_version.map(Value::as_str) {
            Some(Some(body)) => header_version == Some(body),
            // A version that is not a string is the engine's `-32602`; the header must
            // still be there.
            Some(None) | None => header_version.is_some(),
        };
        if !version_matches {
            return Err(HeaderFault::ProtocolVersion);
        }
        if headers::mcp_value(self.head, MCP_METHOD).as_deref() != Some(request.method.as_str()) {
            return Err(HeaderFault::Method);
        }
        if request.method == RequestMethod::ToolsCall
            && let Some(name) = request
                .params
                .as_ref()
                .and_then(|params| params.name.as_ref())
                .and_then(Text::as_str)
            && headers::mcp_value(self.head, MCP_NAME).as_deref() != Some(name)
        {
            return Err(HeaderFault::Name);
        }
        Ok(())
    }

    /// A legacy request: in its session, or `initialize` opening one.
    async fn legacy(&self, request: RpcRequest<'_>) -> Response<Body> {
        let identity = self.caller.identity.as_ref();
        let (session, opened) = match headers::text(self.head, MCP_SESSION_ID) {
            Some(id) => match self.state.sessions.find(id, identity) {
                Some(session) => (session, None),
                None => {
                    let error = McpError::Http(HttpRefusal::SessionNotFound);
                    return self.error(&request, &error, false);
                }
            },
            None if request.method == RequestMethod::Initialize => {
                let engine =
                    Engine::for_client(Arc::clone(&self.state.shared), self.caller.audited());
                let owner = self.caller.client.clone();
                match self.state.sessions.open(engine, identity.cloned(), owner) {
                    Ok((id, session)) => (session, Some(id)),
                    Err(error) => return self.error(&request, &error, false),
                }
            }
            None => {
                let error = McpError::Http(HttpRefusal::SessionRequired);
                return self.error(&request, &error, false);
            }
        };
        if let Some(header) = headers::text(self.head, MCP_PROTOCOL_VERSION) {
            let negotiated = session.engine().negotiated_version();
            if negotiated.is_some_and(|version| version.as_str() != header) {
                let error = McpError::Http(HttpRefusal::VersionHeader);
                return self.error(&request, &error, false);
            }
        }
        let slots = match self.call_slots(&request) {
            Ok(slots) => slots,
            Err(error) => return self.error(&request, &error, false),
        };
        let mut reply = self.run_in(&session, request, slots).await;
        if let Some(id) = opened {
            if session.engine().negotiated_version().is_some() {
                match HeaderValue::from_str(&id) {
                    Ok(value) => {
                        reply.headers_mut().insert(MCP_SESSION_ID, value);
                        tracing::debug!("legacy session opened");
                    }
                    Err(_) => {
                        self.state.sessions.close(&id, identity);
                        return refusal(&McpError::Internal("session id not a header value"));
                    }
                }
            } else {
                // `initialize` was refused: no session is kept for it.
                self.state.sessions.close(&id, identity);
            }
        }
        reply
    }

    async fn run_in(
        &self,
        session: &Arc<Session>,
        request: RpcRequest<'_>,
        slots: Option<CallSlots>,
    ) -> Response<Body> {
        let mut out = Vec::new();
        let effect = session
            .engine()
            .handle_message(Ok(Message::Request(request)), &mut out);
        match effect {
            Effect::Start(call) => {
                let Some(slots) = slots else {
                    // Pre-parsing said this was not a call; the engine disagrees. Never
                    // expected: answered as an internal fault, the call dropped.
                    tracing::error!("a call started without call slots");
                    session.engine().abandon_all();
                    return status_only(StatusCode::INTERNAL_SERVER_ERROR);
                };
                start(
                    call,
                    self.sse,
                    CallOwner::Session(Arc::clone(session)),
                    slots,
                    false,
                )
                .await
            }
            Effect::Cancel(ticket) => {
                session.cancel(&ticket);
                finished(&mut session.engine(), out, false)
            }
            Effect::None => finished(&mut session.engine(), out, false),
            Effect::CutOff => {
                let reply = finished(&mut session.engine(), out, false);
                tracing::debug!("legacy session cut off after too many invalid messages");
                reply
            }
        }
    }

    /// Runs a modern request in its own engine.
    async fn run(
        &self,
        engine: Arc<Mutex<Engine>>,
        request: RpcRequest<'_>,
        slots: Option<CallSlots>,
        modern: bool,
    ) -> Response<Body> {
        let mut out = Vec::new();
        let effect = lock(&engine).handle_message(Ok(Message::Request(request)), &mut out);
        match (effect, slots) {
            (Effect::Start(call), Some(slots)) => {
                start(call, self.sse, CallOwner::Request(engine), slots, modern).await
            }
            (Effect::Start(_), None) => {
                tracing::error!("a call started without call slots");
                status_only(StatusCode::INTERNAL_SERVER_ERROR)
            }
            (Effect::None | Effect::Cancel(_) | Effect::CutOff, _) => {
                finished(&mut lock(&engine), out, modern)
            }
        }
    }

    /// For a `tools/call`: the client's call quota, a server-wide slot and a client slot.
    fn call_slots(&self, request: &RpcRequest<'_>) -> Result<Option<CallSlots>, McpError> {
        if request.method != RequestMethod::ToolsCall {
            return Ok(None);
        }
        let state = self.state;
        state.clients.admit_call(&self.caller.client)?;
        let server =
            Arc::clone(&state.calls)
                .try_acquire_owned()
                .map_err(|_| McpError::Overloaded {
                    limit: state.shared.limits().max_in_flight.get(),
                })?;
        let client = state.clients.enter(&self.caller.client)?;
        Ok(Some(CallSlots {
            _server: server,
            _client: client,
        }))
    }
}

/// The slots a call holds, shared by its task and its reply's body: given back once the call
/// has ended and its reply has been written (or dropped), however each ends.
struct CallSlots {
    _server: OwnedSemaphorePermit,
    _client: Slot,
}

/// Whose engine a call reports to.
enum CallOwner {
    /// A legacy session's: the call completes into it even if the client went away (a closed
    /// connection is not a cancellation in the legacy era), and it can be cancelled.
    Session(Arc<Session>),
    /// A modern request's own engine: a client that goes away cancels the call.
    Request(Arc<Mutex<Engine>>),
}

impl CallOwner {
    fn with_engine<T>(&self, f: impl FnOnce(&mut Engine) -> T) -> T {
        match self {
            Self::Session(session) => f(&mut session.engine()),
            Self::Request(engine) => f(&mut lock(engine)),
        }
    }
}

/// The reply of a call once it completed: bytes for the client, and the error if it was one.
struct Reply {
    out: Vec<u8>,
    error: Option<McpError>,
}

/// Starts `call` on a task and answers when it completes: JSON, or an SSE stream of its
/// progress then its reply when the client asked for progress and accepts SSE.
async fn start(
    call: Call,
    sse: bool,
    owner: CallOwner,
    slots: CallSlots,
    modern: bool,
) -> Response<Body> {
    let ticket = call.ticket().clone();
    let streaming = sse && call.wants_progress();
    // Streaming: progress and the completion share one channel, so progress is never behind
    // the reply (the engine drops progress of a call it has answered). Otherwise the task
    // completes the call into the engine itself and hands the reply over.
    let (events_tx, events_rx) = mpsc::channel::<Event>(PROGRESS_QUEUE);
    let context = if streaming {
        CallContext::reporting(ticket.clone(), events_tx.clone())
    } else {
        CallContext::detached()
    };
    let (reply_tx, reply_rx) = oneshot::channel::<Reply>();
    let owner = Arc::new(owner);
    let task_owner = Arc::clone(&owner);
    let task_ticket = ticket.clone();
    let slots = Arc::new(slots);
    let task_slots = Arc::clone(&slots);
    let spawn = move || {
        tokio::spawn(async move {
            let completion = call.run(context).await;
            if streaming {
                if events_tx.send(Event::Done(completion)).await.is_err() {
                    tracing::debug!("a call finished after its stream ended");
                }
            } else {
                let reply = task_owner.with_engine(|engine| complete(engine, completion));
                if reply_tx.send(reply).is_err() {
                    tracing::debug!("a call finished after its client went away");
                }
            }
            if let CallOwner::Session(session) = &*task_owner {
                session.tasks().remove(&task_ticket);
            }
            // A legacy call whose client went away still ran to its end under its slots.
            drop(task_slots);
        })
    };
    let abort = match &*owner {
        CallOwner::Session(session) => {
            // The map is locked while the task is spawned, so the task's own removal at its
            // end cannot come before this insertion.
            let mut tasks = session.tasks();
            let handle = spawn().abort_handle();
            tasks.insert(ticket, handle);
            drop(tasks);
            // Legacy: a client that goes away does not cancel the call.
            None
        }
        CallOwner::Request(_) => Some(AbortOnDrop(spawn().abort_handle())),
    };
    if streaming {
        return stream(owner, events_rx, abort).map(|body| body.holding(slots));
    }
    drop(events_rx);
    let reply = reply_rx.await;
    drop(abort);
    match reply {
        Ok(reply) => json(reply.out, reply.error.as_ref(), modern).map(|body| body.holding(slots)),
        // Cancelled (legacy `notifications/cancelled`): no reply is owed.
        Err(_) => status_only(StatusCode::NO_CONTENT),
    }
}

fn complete(engine: &mut Engine, completion: crate::handler::Completion) -> Reply {
    let mut out = Vec::new();
    engine.complete(completion, &mut out);
    Reply {
        out,
        error: engine.take_refusal(),
    }
}

/// An SSE reply: progress notifications as they come, then the reply, then the end.
///
/// A modern client that goes away cancels the call (`abort` is dropped with this task); a
/// legacy one does not, and the call still completes into its session's engine.
fn stream(
    owner: Arc<CallOwner>,
    mut events: mpsc::Receiver<Event>,
    abort: Option<AbortOnDrop>,
) -> Response<Body> {
    let (sse_tx, sse_rx) = mpsc::channel::<Bytes>(SSE_QUEUE);
    let cancels_on_close = abort.is_some();
    tokio::spawn(async move {
        let _abort = abort;
        let mut client_gone = false;
        loop {
            tokio::select! {
                biased;
                () = sse_tx.closed(), if !client_gone => {
                    tracing::debug!("SSE client went away");
                    if cancels_on_close {
                        break;
                    }
                    client_gone = true;
                }
                event = events.recv() => match event {
                    Some(Event::Progress(report)) => {
                        let mut out = Vec::new();
                        owner.with_engine(|engine| {
                            engine.progress(report, Instant::now(), &mut out);
                        });
                        if !out.is_empty()
                            && !client_gone
                            && sse_tx.send(sse_events(&out)).await.is_err()
                        {
                            client_gone = true;
                        }
                    }
                    Some(Event::Done(completion)) => {
                        let reply = owner.with_engine(|engine| complete(engine, completion));
                        if !client_gone && sse_tx.send(sse_events(&reply.out)).await.is_err() {
                            tracing::debug!("SSE client went away before the reply");
                        }
                        break;
                    }
                    // Cancelled: the stream ends with no reply.
                    None => break,
                },
            }
        }
    });
    let mut reply = Response::new(Body::stream(sse_rx));
    let head = reply.headers_mut();
    head.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    head.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    head.insert("x-accel-buffering", HeaderValue::from_static("no"));
    reply
}

/// Each line of `out` (one JSON-RPC message) as an SSE `message` event.
fn sse_events(out: &[u8]) -> Bytes {
    let mut events = Vec::with_capacity(out.len().saturating_add(32));
    for line in out.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
        events.extend_from_slice(b"event: message\ndata: ");
        events.extend_from_slice(line);
        events.extend_from_slice(b"\n\n");
    }
    Bytes::from(events)
}

/// Aborts a task when dropped.
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The reply to a request answered without a call, judged as the engine counted it, as on
/// stdio: garbage when counted invalid; neutral when refused without counting (a busy server,
/// a tool the server does not have), which neither counts nor resets; valid when answered.
fn finished(engine: &mut Engine, out: Vec<u8>, modern: bool) -> Response<Body> {
    let error = engine.take_refusal();
    let verdict = match &error {
        _ if engine.last_was_invalid() => Verdict::Garbage,
        Some(_) => Verdict::Neutral,
        None => Verdict::Valid,
    };
    judged(json(out, error.as_ref(), modern), verdict)
}

/// A JSON reply: `out` (one line) with the status of `error`, or `200`.
fn json(mut out: Vec<u8>, error: Option<&McpError>, modern: bool) -> Response<Body> {
    if out.last() == Some(&b'\n') {
        out.pop();
    }
    let status = error.map_or(StatusCode::OK, |error| status::of(error, modern));
    if out.is_empty() {
        // A refused notification: the status alone.
        return status_only(status);
    }
    let mut reply = Response::new(Body::full(Bytes::from(out)));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(McpError::RateLimited { retry_after_ms }) = error {
        let seconds = retry_after_ms.div_ceil(1000).max(1);
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            reply.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    reply
}

/// A refusal before any message was read: a JSON-RPC error with id null, and its status.
fn refusal(error: &McpError) -> Response<Body> {
    let mut out = Vec::new();
    response::write_error(&mut out, None, error);
    json(out, Some(error), true)
}

/// Asks hyper to close the connection after this reply (a body left unread is not drained).
fn closing(mut reply: Response<Body>) -> Response<Body> {
    reply
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    reply
}

fn status_only(status: StatusCode) -> Response<Body> {
    let mut reply = Response::new(Body::empty());
    *reply.status_mut() = status;
    reply
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
