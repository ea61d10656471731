//! `GET` on the endpoint: a legacy session's stream of what the server tells it unasked
//! (`notifications/resources/updated`), served only by a server that offers resource
//! subscriptions; any other server answers `GET` `405`, as the specification allows.
//!
//! A stream belongs to one live session of the caller's identity (the `Mcp-Session-Id` is
//! checked as for a POST) and carries only notifications about the URIs that session
//! subscribed to. Bounded: one stream per session (a new `GET` ends the previous one), at
//! most [`LISTEN_QUEUE`] events waiting for a slow reader (past it the stream ends: the
//! client reconnects and re-reads, and memory does not grow), a comment every
//! [`LISTEN_KEEPALIVE`] so proxies keep it open and a dead session is noticed; the stream ends
//! with its session (DELETE, idle expiry, eviction).

use std::sync::{Arc, Weak};

use hyper::Response;
use hyper::body::Bytes;
use hyper::header::{self, HeaderMap, HeaderValue};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use crate::error::{HttpRefusal, McpError};
use crate::limits::LISTEN_KEEPALIVE;
use crate::version::ProtocolVersion;

use super::body::Body;
use super::calls::sse_events;
use super::headers::{self, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use super::reply::{garbage, judged, refusal, sse_reply};
use super::request::Caller;
use super::session::Session;
use super::{State, Verdict};

/// Events a stream holds for a reader that has not taken them.
const LISTEN_QUEUE: usize = 16;

/// `GET`: opens the caller's session's stream, or refuses.
pub(super) async fn get(state: &State, caller: &Caller, head: &HeaderMap) -> Response<Body> {
    let header_version = headers::text(head, MCP_PROTOCOL_VERSION);
    let modern = header_version.is_some_and(|version| ProtocolVersion::modern(version).is_some());
    let Some(updates) = state.shared.updates.as_ref().filter(|_| !modern) else {
        let mut reply = refusal(&McpError::Http(HttpRefusal::MethodNotAllowed));
        reply
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        return garbage(reply);
    };
    if !headers::accepts(head).sse {
        return garbage(refusal(&McpError::Http(HttpRefusal::NotAcceptable)));
    }
    let Some(id) = headers::text(head, MCP_SESSION_ID) else {
        return garbage(refusal(&McpError::Http(HttpRefusal::SessionRequired)));
    };
    let session = match state.find_session(id, caller).await {
        Ok(Some(session)) => session,
        Ok(None) => return garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound))),
        Err(error) => return judged(refusal(&error), Verdict::Neutral),
    };
    let Some(negotiated) = session.engine().negotiated_version() else {
        return garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound)));
    };
    // As for a POST: a version header must be the session's (a revision nobody serves too).
    if header_version.is_some_and(|version| version != negotiated.as_str()) {
        return garbage(refusal(&McpError::Http(HttpRefusal::VersionHeader)));
    }
    match stream(&session, updates.listen()) {
        Some(reply) => {
            tracing::debug!("legacy session opened its notification stream");
            reply
        }
        // Ended (DELETE, expiry) between the lookup and now.
        None => garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound))),
    }
}

/// The stream of `session`: a task forwarding the announcements that concern it; `None` when
/// the session ended before the task could be made its stream.
fn stream(
    session: &Arc<Session>,
    mut updates: tokio::sync::broadcast::Receiver<Arc<str>>,
) -> Option<Response<Body>> {
    let (events_tx, events_rx) = mpsc::channel::<Bytes>(LISTEN_QUEUE);
    // Weak: the stream must not keep an ended session alive.
    let weak: Weak<Session> = Arc::downgrade(session);
    let task = tokio::spawn(async move {
        let first = tokio::time::Instant::now()
            .checked_add(LISTEN_KEEPALIVE)
            .unwrap_or_else(tokio::time::Instant::now);
        let mut keepalive = tokio::time::interval_at(first, LISTEN_KEEPALIVE);
        loop {
            let event = tokio::select! {
                () = events_tx.closed() => break,
                _ = keepalive.tick() => {
                    if weak.strong_count() == 0 {
                        break;
                    }
                    Bytes::from_static(b": keepalive\n\n")
                }
                update = updates.recv() => {
                    let Some(session) = weak.upgrade() else {
                        break;
                    };
                    let mut out = Vec::new();
                    match update {
                        Ok(uri) => session.engine().resource_updated(&uri, &mut out),
                        Err(RecvError::Lagged(_)) => {
                            session.engine().resources_maybe_updated(&mut out);
                        }
                        Err(RecvError::Closed) => break,
                    }
                    if out.is_empty() {
                        continue;
                    }
                    sse_events(&out)
                }
            };
            match events_tx.try_send(event) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    tracing::debug!("notification stream ended: its reader fell behind");
                    break;
                }
                Err(TrySendError::Closed(_)) => break,
            }
        }
    });
    if !session.listen(task.abort_handle()) {
        return None;
    }
    Some(sse_reply(Body::stream(events_rx)))
}
