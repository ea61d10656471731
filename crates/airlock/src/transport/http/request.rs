//! One HTTP request, start to finish: the boundary's checks in their order, then the era, the
//! session and the engine that handle its message.
//!
//! Trusts nothing of the request. Checks, in order and before a body byte is read: the path
//! (a probe's, `/healthz` or `/readyz`, is answered there by `probes`, before any other check),
//! `Host` (`421`), `Origin` (`403`), a CORS preflight (answered by `cors`), the bearer token
//! (`401`), the client's cut-off and request quota (`429`), the method, the media types
//! (`415`, `406`), repeated MCP headers (`400`), the body cap (`413`) and the body budgets
//! (`429`, `503`); then the body crosses [`envelope::parse`] once and
//! the message goes to an engine: a fresh one (modern), a legacy session's, or one of its own
//! for what no session holds. Owns the [`Caller`] (who sent it) and the checks of the modern
//! headers against the body; calls go on to `calls`, replies are built by `reply`.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

use crate::call_log::Entry as AuditEntry;
use crate::engine::{Effect, Engine};
use crate::envelope::{self, Message, Request as RpcRequest, RequestMethod};
use crate::error::{HeaderFault, HttpRefusal, McpError};
use crate::json::Text;
use crate::lifecycle;
use crate::response;
use crate::version::ProtocolVersion;

use super::auth::Denied;
use super::bodies;
use super::body::Body;
use super::caller::Caller;
use super::calls::{self, CallOwner, CallSlots};
use super::clients::ClientKey;
use super::headers::{self, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use super::refusals::Kind;
use super::reply::{
    busy, closing, engine_verdict, finished, garbage, json, judged, refusal, status_only,
    unanswered_reply,
};
use super::session::Session;
use super::{MCP_PATH, State, Verdict, cors, lock, probes};

/// One HTTP request, start to finish: served by [`serve_request`], then counted for the
/// garbage cut-off against whoever sent it (see `clients`).
pub(super) async fn handle(
    state: Arc<State>,
    peer: IpAddr,
    request: Request<Incoming>,
) -> Response<Body> {
    let from = state.proxies.client(peer, request.headers());
    let head = request.headers();
    let address = if headers::from_a_page(request.method(), request.uri().path(), head) {
        let origin = head
            .get(header::ORIGIN)
            .and_then(|origin| state.allow.listed(origin));
        ClientKey::page(from, origin)
    } else {
        ClientKey::of(None, from)
    };
    let mut sender = None;
    let reply = serve_request(&state, (from, &address), request, &mut sender).await;
    let sender = sender.unwrap_or(address);
    if let Some(kind) = reply.extensions().get::<Kind>().copied() {
        // The status the reply carries, whatever the era would have said.
        state.refusals.note(from, kind, reply.status().as_u16());
        #[cfg(feature = "metrics")]
        if let (Some(metrics), Some(refusal)) = (&state.shared.metrics, kind.metric()) {
            metrics.refused(refusal);
        }
    }
    let verdict = reply
        .extensions()
        .get::<Verdict>()
        .copied()
        .unwrap_or(Verdict::Valid);
    if state.clients.record(&sender, verdict) {
        // Counted like the refusals: a botnet's addresses each cut off write bounded lines.
        state
            .refusals
            .note(from, Kind::CutOffBegins, reply.status().as_u16());
        tracing::debug!(client = ?sender, "HTTP client cut off");
    }
    reply
}

/// Serves one request from `from` (keyed as `address`: its own, or its pages',
/// `ClientKey::Page`); sets `sender` to the client's identity once its token is valid (the
/// address is the sender until then).
///
/// The refusals of the boundary (`421`, `403`, `401`, `429`) are marked with their [`Kind`]
/// and logged by `refusals` with the client's address, as counts (never the token, nor the
/// refused header's value).
async fn serve_request(
    state: &Arc<State>,
    (from, address): (IpAddr, &ClientKey),
    request: Request<Incoming>,
    sender: &mut Option<ClientKey>,
) -> Response<Body> {
    if request.uri().path() != MCP_PATH {
        // Before Host, Origin, token and quotas, which a probe does not pass (its module
        // says why); neither garbage nor a valid request for the cut-off.
        if let Some(reply) = probes::answer(state, request.method(), request.uri().path()) {
            return judged(reply, Verdict::Neutral);
        }
        #[cfg(feature = "oauth")]
        if let Some(verifier) = &state.oauth
            && verifier.is_metadata_path(request.uri().path())
        {
            return metadata(state, address, verifier, &request);
        }
        return garbage(status_only(StatusCode::NOT_FOUND));
    }
    let head = request.headers();
    if !state.allow.host(head.get(header::HOST)) {
        return refused(
            garbage(refusal(&McpError::Http(HttpRefusal::Host))),
            Kind::Host,
        );
    }
    if !state.allow.origin(head.get(header::ORIGIN)) {
        return refused(
            garbage(refusal(&McpError::Http(HttpRefusal::Origin))),
            Kind::Origin,
        );
    }
    if cors::is_preflight(&request) {
        // No token (browsers send none on a preflight): the address's cut-off and request
        // quota still. An accepted preflight neither counts nor resets the garbage run.
        let refused = match state.clients.admit_unless_cut_off(address) {
            Ok(()) => state.admit_request(address).await,
            Err(error) => Err(error),
        };
        if let Err(error) = refused {
            return self::refused(judged(refusal(&error), Verdict::Neutral), Kind::Preflight);
        }
        let reply = cors::preflight(
            &state.allow,
            head,
            state.shared.updates.is_some() || state.shared.tools_may_change(),
        );
        return if reply.status() == StatusCode::NO_CONTENT {
            judged(reply, Verdict::Neutral)
        } else {
            garbage(reply)
        };
    }
    // Two credentials are one too many: which of them a proxy in front checked is not known.
    let mut authorizations = head.get_all(header::AUTHORIZATION).iter();
    let authorization = authorizations.next();
    let authenticated = if authorizations.next().is_some() {
        Err(super::auth::Denied { presented: true })
    } else {
        authenticate(state, authorization).await
    };
    let Credentials {
        identity,
        scopes,
        expires,
    } = match authenticated {
        Ok(granted) => granted,
        Err(denied) => {
            // A cut-off address is refused without a log line per request: its garbage is
            // what got it cut off, and its requests must not flood the log either.
            if let Err(error) = state.clients.admit_unless_cut_off(address) {
                return refused(
                    judged(closing(refusal(&error)), Verdict::Neutral),
                    Kind::CutOff,
                );
            }
            tracing::debug!(
                presented = denied.presented,
                "request refused: no valid token"
            );
            let mut reply = refusal(&McpError::Http(HttpRefusal::Unauthorized));
            reply
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge(state, denied));
            return refused(garbage(reply), Kind::Unauthorized);
        }
    };
    let client = match &identity {
        Some(identity) => ClientKey::Identity(Arc::clone(identity)),
        None => address.clone(),
    };
    // A cut-off client is refused before anything else is spent on it, and its connection
    // closed; this refusal is not counted again.
    if let Err(error) = state.clients.admit_unless_cut_off(&client) {
        tracing::trace!(identity = ?identity, "request refused: the client is cut off");
        return refused(
            judged(closing(refusal(&error)), Verdict::Neutral),
            Kind::CutOff,
        );
    }
    *sender = Some(client.clone());
    if let Err(error) = state.admit_request(&client).await {
        if error == McpError::StoreUnavailable {
            // Said once, at `warn`, when the store went away; not once per request.
            tracing::trace!(client = %from, "request refused: the shared quota store is unreachable");
            return judged(refusal(&error), Verdict::Neutral);
        }
        tracing::trace!(identity = ?identity, "request refused: client over its request quota");
        return refused(judged(refusal(&error), Verdict::Neutral), Kind::Quota);
    }
    let caller = Caller {
        identity,
        scopes,
        expires,
        client,
        address: from,
    };
    match *request.method() {
        Method::POST => post(state, caller, request).await,
        Method::DELETE => delete(state, &caller, request.headers()).await,
        Method::GET => super::listen::get(state, &caller, request.headers()).await,
        _ => {
            let mut reply = refusal(&McpError::Http(HttpRefusal::MethodNotAllowed));
            reply
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            garbage(reply)
        }
    }
}

/// What a request's credentials proved.
struct Credentials {
    /// The identity, if tokens are configured.
    identity: Option<Arc<str>>,
    /// An access token's scopes (`None`: not scoped).
    scopes: Option<Arc<[Box<str>]>>,
    /// When an access token stops being accepted (`None`: a static token, or none).
    expires: Option<SystemTime>,
}

impl Credentials {
    fn unscoped(identity: Option<Arc<str>>) -> Self {
        Self {
            identity,
            scopes: None,
            expires: None,
        }
    }
}

/// Checks the `Authorization` header: a static token (compared in constant time), else, with
/// OAuth, an access token. Without either configured, everyone is anonymous.
async fn authenticate(state: &State, header: Option<&HeaderValue>) -> Result<Credentials, Denied> {
    #[cfg(feature = "oauth")]
    if let Some(verifier) = &state.oauth {
        if !state.tokens.is_empty()
            && let Ok(identity) = state.tokens.check_header(header)
        {
            return Ok(Credentials::unscoped(identity));
        }
        let Some(token) = header.and_then(|value| super::auth::bearer(value.as_bytes())) else {
            return Err(Denied {
                presented: header.is_some_and(|value| super::auth::is_bearer(value.as_bytes())),
            });
        };
        return match verifier.verify(token).await {
            Ok(grant) => Ok(Credentials {
                identity: Some(grant.identity),
                scopes: Some(grant.scopes),
                expires: Some(grant.expires),
            }),
            Err(rejection) => {
                tracing::trace!(?rejection, "access token refused");
                Err(Denied { presented: true })
            }
        };
    }
    state.tokens.check_header(header).map(Credentials::unscoped)
}

/// The `WWW-Authenticate` value of a `401`: with OAuth, naming the resource metadata (RFC
/// 9728 §5.1); `error="invalid_token"` when a credential was presented (RFC 6750 §3.1).
fn challenge(state: &State, denied: Denied) -> HeaderValue {
    #[cfg(feature = "oauth")]
    if let Some(verifier) = &state.oauth {
        return verifier.challenge(denied.presented);
    }
    let _static_only = state;
    HeaderValue::from_static(if denied.presented {
        r#"Bearer realm="airlock", error="invalid_token""#
    } else {
        r#"Bearer realm="airlock""#
    })
}

/// `GET` of the protected resource metadata (RFC 9728): after the `Host` and `Origin` checks
/// and the address's cut-off and request quota, like any request; no token needed.
#[cfg(feature = "oauth")]
fn metadata(
    state: &State,
    address: &ClientKey,
    verifier: &super::oauth::Verifier,
    request: &Request<Incoming>,
) -> Response<Body> {
    let head = request.headers();
    if !state.allow.host(head.get(header::HOST)) {
        return refused(
            garbage(refusal(&McpError::Http(HttpRefusal::Host))),
            Kind::Host,
        );
    }
    if !state.allow.origin(head.get(header::ORIGIN)) {
        return refused(
            garbage(refusal(&McpError::Http(HttpRefusal::Origin))),
            Kind::Origin,
        );
    }
    let refused = state
        .clients
        .admit_unless_cut_off(address)
        .and_then(|()| state.clients.admit_request(address));
    if let Err(error) = refused {
        return self::refused(judged(refusal(&error), Verdict::Neutral), Kind::Quota);
    }
    if *request.method() != Method::GET {
        let mut reply = refusal(&McpError::Http(HttpRefusal::MethodNotAllowed));
        reply
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return garbage(reply);
    }
    let mut reply = Response::new(Body::full(hyper::body::Bytes::copy_from_slice(
        verifier.document(),
    )));
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    reply.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=3600"),
    );
    judged(reply, Verdict::Neutral)
}

/// `reply`, marked as a refusal of `kind` for the log (`refusals`).
fn refused(mut reply: Response<Body>, kind: Kind) -> Response<Body> {
    reply.extensions_mut().insert(kind);
    reply
}

/// `reply` keeping `slots` (a large reply's, see `call_slots`) until its body is written or
/// dropped.
fn holding(reply: Response<Body>, slots: Option<CallSlots>) -> Response<Body> {
    match slots {
        Some(slots) => reply.map(|body| body.holding(Arc::new(slots))),
        None => reply,
    }
}

/// DELETE: ends a legacy session. The modern era has none (`405`).
async fn delete(state: &State, caller: &Caller, head: &HeaderMap) -> Response<Body> {
    let modern = headers::text(head, MCP_PROTOCOL_VERSION)
        .is_some_and(|version| ProtocolVersion::legacy(version).is_none());
    let session_id = headers::text(head, MCP_SESSION_ID);
    match session_id {
        Some(id) if !modern => match state.close_session(id, caller).await {
            Ok(true) => {
                tracing::debug!("session ended by the client");
                status_only(StatusCode::NO_CONTENT)
            }
            Ok(false) => garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound))),
            Err(error) => judged(refusal(&error), Verdict::Neutral),
        },
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
    if let Some(fault) = headers::repeated(head) {
        // Two values of one MCP header: whichever a gateway in front read, it may not be the
        // one we would. Refused before the body is read.
        return garbage(refusal(&McpError::HeaderMismatch(fault)));
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
        tracing::trace!("request refused: body over the cap (declared)");
        return garbage(closing(refusal(&too_long)));
    }
    // The bytes it will hold come out of the budgets before one is read (`bodies`): all of a
    // declared length at once, a chunked body's as they come.
    let mut claim = state.bodies.claim(&caller.client);
    let declared = declared.and_then(|length| usize::try_from(length).ok());
    if let Err(error) = claim.take(declared.unwrap_or(0)) {
        tracing::trace!("request refused: too many body bytes held");
        return judged(closing(refusal(&error)), Verdict::Neutral);
    }
    let read = tokio::time::timeout(
        state.limits.body_read_timeout,
        read_body(body, max, declared, &mut claim),
    )
    .await;
    let frame = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(BodyFault::TooLong)) => {
            tracing::trace!("request refused: body over the cap");
            return garbage(closing(refusal(&too_long)));
        }
        Ok(Err(BodyFault::Budget(error))) => {
            tracing::trace!("request refused: too many body bytes held");
            return judged(closing(refusal(&error)), Verdict::Neutral);
        }
        Ok(Err(BodyFault::Unreadable)) => {
            tracing::trace!("the request body could not be read");
            return garbage(closing(status_only(StatusCode::BAD_REQUEST)));
        }
        Err(_elapsed) => {
            tracing::trace!("request refused: the body did not arrive in time");
            return garbage(closing(refusal(&McpError::Http(HttpRefusal::BodyTimeout))));
        }
    };
    drop(claim);
    let header_version = headers::text(head, MCP_PROTOCOL_VERSION);
    let modern_header = header_version.is_some_and(|v| ProtocolVersion::legacy(v).is_none());
    let parsed = envelope::parse(&frame, state.shared.limits().max_json_depth.get());
    let request = match parsed {
        Ok(Message::Request(request)) => request,
        Ok(message @ (Message::Notification(_) | Message::Response(_))) => {
            return one_way(state, &caller, head, message).await;
        }
        // Refused at the envelope: no session takes it, and an engine of its own answers and
        // counts it.
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
    if let Some(reply) = call.scope_refusal(&request, claims_modern || modern_header) {
        return reply;
    }
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

/// Why a body was not read whole.
enum BodyFault {
    /// Longer than the frame cap.
    TooLong,
    /// Its bytes did not fit the budgets (`bodies`).
    Budget(McpError),
    /// The connection failed mid-body.
    Unreadable,
}

/// Reads `body` whole, at most `max` bytes; bytes past the `declared` length already taken
/// (all of a chunked body's) are taken from `claim` as they come. The buffer is sized to the
/// declared length, which the budgets already hold.
async fn read_body(
    mut body: Incoming,
    max: usize,
    declared: Option<usize>,
    claim: &mut bodies::Claim,
) -> Result<Bytes, BodyFault> {
    let taken = declared.unwrap_or(0);
    let mut out = Vec::with_capacity(taken.min(max));
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(BodyFault::Unreadable);
        };
        let Ok(data) = frame.into_data() else {
            // Trailers: nothing to keep.
            continue;
        };
        let len = out.len().saturating_add(data.len());
        if len > max {
            return Err(BodyFault::TooLong);
        }
        if len > taken {
            let more = len.saturating_sub(taken.max(out.len()));
            claim.take(more).map_err(BodyFault::Budget)?;
        }
        out.extend_from_slice(&data);
    }
    Ok(Bytes::from(out))
}

/// A notification or a response, never answered: for a legacy session, handed to its engine
/// (a cancellation, the answer to a question one of its calls asked); otherwise handed to an
/// engine of its own, which ignores it (modern clients cancel by closing the stream, and are
/// never asked anything) or counts it invalid.
async fn one_way(
    state: &State,
    caller: &Caller,
    head: &HeaderMap,
    message: Message<'_>,
) -> Response<Body> {
    let message = Ok(message);
    let mut out = Vec::new();
    if let Some(id) = headers::text(head, MCP_SESSION_ID) {
        let session = match state.find_session(id, caller).await {
            Ok(Some(session)) => session,
            Ok(None) => return garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound))),
            Err(error) => return judged(refusal(&error), Verdict::Neutral),
        };
        // As for a request: a version header must be the session's (an answer to one of its
        // questions, or a cancellation, too).
        if let Some(header) = headers::text(head, MCP_PROTOCOL_VERSION) {
            let negotiated = session.engine().negotiated_version();
            if negotiated.is_some_and(|version| version.as_str() != header) {
                return garbage(refusal(&McpError::Http(HttpRefusal::VersionHeader)));
            }
        }
        let (before, effect, verdict) = {
            let mut engine = session.engine();
            let before = engine.handshake();
            let effect = engine.handle_message(message, &mut out);
            (before, effect, engine_verdict(&engine, true))
        };
        state.sync_session(id, &session, caller, before).await;
        match effect {
            Effect::Cancel(ticket) => session.cancel(&ticket),
            Effect::None | Effect::Start(_) => {}
            Effect::CutOff => {
                if state.close_session(id, caller).await.is_err() {
                    tracing::debug!("a cut-off session could not be ended in the store");
                }
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
        tracing::trace!(%error, "request refused");
        if request.method == RequestMethod::ToolsCall
            && let Some(log) = &self.state.shared.call_log
        {
            let tool = request
                .params
                .as_ref()
                .and_then(|params| params.name.as_ref())
                .and_then(Text::as_str)
                .and_then(|name| self.state.shared.registry().get(name).cloned());
            let tool = tool.as_ref().map(|tool| tool.name.as_str());
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

    /// For a `tools/call` by a scoped caller of a tool it lacks a scope of: the `403` (RFC
    /// 6750 §3.1 `insufficient_scope`, naming every scope the tool requires). A tool the
    /// server does not have is the engine's to refuse.
    fn scope_refusal(&self, request: &RpcRequest<'_>, modern: bool) -> Option<Response<Body>> {
        let scopes = self.caller.scopes.as_ref()?;
        if request.method != RequestMethod::ToolsCall {
            return None;
        }
        let tool = request
            .params
            .as_ref()
            .and_then(|params| params.name.as_ref())
            .and_then(Text::as_str)
            .and_then(|name| self.state.shared.registry().get(name).cloned())?;
        if tool
            .scopes
            .iter()
            .all(|scope| scopes.binary_search(scope).is_ok())
        {
            return None;
        }
        tracing::debug!(
            identity = ?self.caller.identity,
            tool = %tool.name.as_str(),
            "call refused: the access token lacks a scope the tool requires"
        );
        let error = McpError::Http(HttpRefusal::InsufficientScope);
        #[cfg_attr(
            not(feature = "oauth"),
            expect(unused_mut, reason = "the challenge is added with OAuth only")
        )]
        let mut reply = self.error(request, &error, modern);
        #[cfg(feature = "oauth")]
        if let Some(verifier) = &self.state.oauth {
            reply.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                verifier.insufficient_scope(&tool.scopes),
            );
        }
        Some(refused(reply, Kind::Scope))
    }

    /// A modern request: headers checked against the body, then a fresh engine.
    async fn modern(&self, request: RpcRequest<'_>) -> Response<Body> {
        if let Err(fault) = self.check_headers(&request) {
            return self.error(&request, &McpError::HeaderMismatch(fault), true);
        }
        let slots = match self.call_slots(&request).await {
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
        // `Mcp-Name` copies `params.name` (`tools/call`, `prompts/get`), `params.uri`
        // (`resources/read`) or `params.taskId` (the tasks extension's `tasks/get`,
        // `tasks/update`, `tasks/cancel`, so a balancer may route by it); a body without one
        // is the engine's to refuse.
        let params = request.params.as_ref();
        let named = match request.method {
            RequestMethod::ToolsCall | RequestMethod::PromptsGet => {
                params.and_then(|params| params.name.as_ref())
            }
            RequestMethod::ResourcesRead => params.and_then(|params| params.uri.as_ref()),
            RequestMethod::TasksGet | RequestMethod::TasksUpdate | RequestMethod::TasksCancel => {
                params.and_then(|params| params.task_id.as_ref())
            }
            _ => None,
        };
        if let Some(name) = named.and_then(Text::as_str)
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
            Some(id) => match self.state.find_session(id, self.caller).await {
                Ok(Some(session)) => (session, None),
                Ok(None) => {
                    let error = McpError::Http(HttpRefusal::SessionNotFound);
                    return self.error(&request, &error, false);
                }
                Err(error) => return self.error(&request, &error, false),
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
        let slots = match self.call_slots(&request).await {
            Ok(slots) => slots,
            Err(error) => {
                if let Some(id) = &opened {
                    self.state.sessions.close(id, identity);
                }
                return self.error(&request, &error, false);
            }
        };
        let request_id = request.id.clone();
        let mut reply = self.run_in(&session, request, slots).await;
        if let Some(id) = opened {
            if session.engine().negotiated_version().is_some() {
                if let Err(error) = self.state.publish_session(&id, &session, self.caller).await {
                    tracing::debug!(%error, "a legacy session could not be shared");
                    let mut out = Vec::new();
                    response::write_error(&mut out, Some(&request_id), &error);
                    return judged(json(out, Some(&error), false), Verdict::Neutral);
                }
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
        let effect = {
            let mut engine = session.engine();
            #[cfg(feature = "otel")]
            self.traced(&mut engine, headers::text(self.head, MCP_SESSION_ID));
            engine.handle_message(Ok(Message::Request(request)), &mut out)
        };
        match effect {
            Effect::Start(call) => {
                let Some(slots) = slots else {
                    // Pre-parsing said this was not a call; the engine disagrees. Never
                    // expected: answered as an internal fault, the call dropped.
                    tracing::error!("a call started without call slots");
                    session.engine().abandon_all();
                    return status_only(StatusCode::INTERNAL_SERVER_ERROR);
                };
                calls::start(
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
            Effect::None => holding(finished(&mut session.engine(), out, false), slots),
            Effect::CutOff => {
                let reply = finished(&mut session.engine(), out, false);
                tracing::debug!("legacy session cut off after too many invalid messages");
                reply
            }
        }
    }

    /// Gives `engine` this request's W3C trace context headers, and the legacy session it
    /// serves (an id the store found for this caller, so one the server made).
    #[cfg(feature = "otel")]
    fn traced(&self, engine: &mut Engine, session: Option<&str>) {
        engine.trace_headers(
            headers::text(self.head, "traceparent"),
            headers::text(self.head, "tracestate"),
        );
        if let Some(session) = session {
            engine.traced_in_session(session);
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
        let effect = {
            let mut engine = lock(&engine);
            #[cfg(feature = "otel")]
            self.traced(&mut engine, None);
            engine.handle_message(Ok(Message::Request(request)), &mut out)
        };
        match (effect, slots) {
            (Effect::Start(call), Some(slots)) => {
                calls::start(call, self.sse, CallOwner::Request(engine), slots, modern).await
            }
            (Effect::Start(_), None) => {
                tracing::error!("a call started without call slots");
                status_only(StatusCode::INTERNAL_SERVER_ERROR)
            }
            (Effect::None | Effect::Cancel(_) | Effect::CutOff, slots) => {
                holding(finished(&mut lock(&engine), out, modern), slots)
            }
        }
    }

    /// For a `tools/call`: the client's call quota, a server-wide slot and a client slot
    /// (`replicas`); for another request, the cheap quota when a shared store counts it, and
    /// for one whose reply may be large (`resources/read`, `prompts/get`) or late (a
    /// `tasks/result` that waits for its task) the same two slots, held by the reply until it
    /// is written: a client that never reads its replies holds at most as many as it may have
    /// calls in flight, and the server `max_in_flight`.
    async fn call_slots(&self, request: &RpcRequest<'_>) -> Result<Option<CallSlots>, McpError> {
        // A request refused here never reaches the engine: its operation is counted here.
        #[cfg(feature = "metrics")]
        let received = self
            .state
            .shared
            .metrics
            .is_some()
            .then(std::time::Instant::now);
        let slots = self.slots_of(request).await;
        #[cfg(feature = "metrics")]
        if let (Err(error), Some(metrics), Some(received)) =
            (&slots, &self.state.shared.metrics, received)
        {
            metrics.operation(
                request.method,
                crate::metrics::ErrorType::of(error),
                received.elapsed(),
            );
        }
        slots
    }

    /// [`Self::call_slots`]'s admission, uncounted.
    async fn slots_of(&self, request: &RpcRequest<'_>) -> Result<Option<CallSlots>, McpError> {
        if request.method != RequestMethod::ToolsCall {
            self.state.admit_cheap().await?;
            if matches!(
                request.method,
                RequestMethod::ResourcesRead
                    | RequestMethod::PromptsGet
                    | RequestMethod::TasksResult
            ) {
                return self.state.reply_slots(&self.caller.client).map(Some);
            }
            return Ok(None);
        }
        let tool = request
            .params
            .as_ref()
            .and_then(|params| params.name.as_ref())
            .and_then(Text::as_str);
        let slots = self.state.call_slots(&self.caller.client, tool).await;
        #[cfg(feature = "metrics")]
        if let (Err(error), Some(metrics)) = (&slots, &self.state.shared.metrics) {
            let registered = tool.and_then(|name| self.state.shared.registry().get(name).cloned());
            let series = registered.as_ref().and_then(|tool| tool.series.get());
            metrics.call_refused_by_transport(error, series.map(|series| &**series));
        }
        Ok(Some(slots?))
    }
}
