//! `GET` on the endpoint: a legacy session's stream of what the server tells it unasked
//! (`notifications/resources/updated`, `notifications/tools/list_changed`), served only by a
//! server that offers resource subscriptions or reloads its tools; any other server answers
//! `GET` `405`, as the specification allows. A 2026-07-28 client has no such stream (`405`):
//! it re-reads the tool list when its `ttlMs` runs out.
//!
//! A stream belongs to one live session of the caller's identity (the `Mcp-Session-Id` is
//! checked as for a POST) and carries only notifications about the URIs that session
//! subscribed to, and word that the tool list changed. Bounded: one stream per session (a new `GET` ends the previous one), at
//! most [`LISTEN_QUEUE`] events waiting for a slow reader (past it the stream ends: the
//! client reconnects and re-reads, and memory does not grow), a comment every
//! [`LISTEN_KEEPALIVE`] so proxies keep it open and a dead session is noticed; the stream ends
//! with its session (DELETE, idle expiry, eviction), and when the access token that opened it
//! expires (its `exp` and the leeway): a token's lifetime bounds what it holds open.

use std::sync::{Arc, Weak};
use std::time::SystemTime;

use hyper::Response;
use hyper::body::Bytes;
use hyper::header::{self, HeaderMap, HeaderValue};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use crate::error::{HttpRefusal, McpError};
use crate::limits::LISTEN_KEEPALIVE;
use crate::transport::stream::{next_change, next_update};
use crate::version::ProtocolVersion;

use super::body::Body;
use super::caller::Caller;
use super::calls::sse_events;
use super::headers::{self, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use super::reply::{garbage, judged, refusal, sse_reply};
use super::session::Session;
use super::{State, Verdict};

/// Events a stream holds for a reader that has not taken them.
const LISTEN_QUEUE: usize = 16;

/// `GET`: opens the caller's session's stream, or refuses.
pub(super) async fn get(state: &State, caller: &Caller, head: &HeaderMap) -> Response<Body> {
    let header_version = headers::text(head, MCP_PROTOCOL_VERSION);
    let modern = header_version.is_some_and(|version| ProtocolVersion::modern(version).is_some());
    let updates = state.shared.updates.as_ref();
    let reloads = state.shared.tools_may_change();
    if modern || (updates.is_none() && !reloads) {
        let mut reply = refusal(&McpError::Http(HttpRefusal::MethodNotAllowed));
        reply
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        return garbage(reply);
    }
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
    let updates = updates.map(crate::ResourceUpdates::listen);
    let changes = reloads.then(|| state.shared.tools.watch());
    match stream(&session, updates, changes, caller.expires) {
        Some(reply) => {
            tracing::debug!("legacy session opened its notification stream");
            reply
        }
        // Ended (DELETE, expiry) between the lookup and now.
        None => garbage(refusal(&McpError::Http(HttpRefusal::SessionNotFound))),
    }
}

/// The stream of `session`: a task forwarding the announcements that concern it until
/// `expires` (if given); `None` when the session ended before the task could be made its
/// stream.
fn stream(
    session: &Arc<Session>,
    mut updates: Option<tokio::sync::broadcast::Receiver<Arc<str>>>,
    mut changes: Option<tokio::sync::watch::Receiver<u64>>,
    expires: Option<SystemTime>,
) -> Option<Response<Body>> {
    let (events_tx, events_rx) = mpsc::channel::<Bytes>(LISTEN_QUEUE);
    // Weak: the stream must not keep an ended session alive.
    let weak: Weak<Session> = Arc::downgrade(session);
    let task = tokio::spawn(async move {
        let first = tokio::time::Instant::now()
            .checked_add(LISTEN_KEEPALIVE)
            .unwrap_or_else(tokio::time::Instant::now);
        let mut keepalive = tokio::time::interval_at(first, LISTEN_KEEPALIVE);
        let token_expiry = async {
            match expires {
                // Past already (or the clock went back): ends at once.
                Some(at) => {
                    let left = at
                        .duration_since(SystemTime::now())
                        .unwrap_or(std::time::Duration::ZERO);
                    tokio::time::sleep(left).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(token_expiry);
        loop {
            let event = tokio::select! {
                () = events_tx.closed() => break,
                () = &mut token_expiry => {
                    tracing::debug!("notification stream ended: its access token expired");
                    break;
                }
                _ = keepalive.tick() => {
                    if weak.strong_count() == 0 {
                        break;
                    }
                    Bytes::from_static(b": keepalive\n\n")
                }
                update = next_update(&mut updates), if updates.is_some() => {
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
                changed = next_change(&mut changes), if changes.is_some() => {
                    let Some(session) = weak.upgrade() else {
                        break;
                    };
                    if changed.is_err() {
                        break;
                    }
                    let mut out = Vec::new();
                    session.engine().tools_changed(&mut out);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http_body_util::BodyExt;

    use super::*;
    use crate::Server;
    use crate::transport::http::clients::ClientKey;
    use crate::transport::http::session::Sessions;

    /// Reads `reply`'s body until it ends or `within` passes (paused time): the keepalive
    /// comments it carried, and whether it ended.
    async fn read(reply: Response<Body>, within: Duration) -> (usize, bool) {
        let mut body = reply.into_body();
        let mut keepalives = 0;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return (keepalives, false),
                Ok(None) => return (keepalives, true),
                Ok(Some(frame)) => {
                    let frame = frame.unwrap().into_data().unwrap();
                    keepalives += usize::from(frame.starts_with(b": keepalive"));
                }
            }
        }
    }

    /// The red team of OAuth's finding: a stream opened with a valid access token stayed
    /// open past the token's `exp`, for as long as the session lived.
    #[test]
    fn a_stream_ends_when_the_access_token_that_opened_it_expires() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            let sessions = Sessions::new(4, 4, Duration::from_secs(24 * 3600));
            let owner = ClientKey::of(None, std::net::Ipv4Addr::LOCALHOST.into());
            let open = || {
                let engine = Server::builder("t", "1").build().unwrap().engine();
                sessions.open(engine, None, owner.clone()).unwrap().1
            };
            let (updates, _keep) = tokio::sync::broadcast::channel::<Arc<str>>(4);

            // A token good for another hour (and 7 s, so that its end falls between two
            // keepalives): the stream carries keepalives for that hour, then ends.
            let session = open();
            let expires = SystemTime::now() + Duration::from_secs(3607);
            let reply = stream(&session, Some(updates.subscribe()), None, Some(expires)).unwrap();
            let started = tokio::time::Instant::now();
            let (keepalives, ended) = read(reply, Duration::from_secs(2 * 3600)).await;
            assert!(ended, "the stream outlived its token");
            let lived = started.elapsed();
            assert!(
                lived >= Duration::from_secs(3606) && lived <= Duration::from_secs(3608),
                "{lived:?}"
            );
            assert_eq!(keepalives, 3600 / 15, "open until then");

            // Already expired (the leeway spent on the way here): ends at once.
            let session = open();
            let past = SystemTime::now() - Duration::from_secs(1);
            let reply = stream(&session, Some(updates.subscribe()), None, Some(past)).unwrap();
            assert_eq!(read(reply, Duration::from_secs(1)).await, (0, true));

            // No token's lifetime (a static token, none configured): as long as the session.
            let session = open();
            let reply = stream(&session, Some(updates.subscribe()), None, None).unwrap();
            let (keepalives, ended) = read(reply, Duration::from_secs(2 * 3600)).await;
            assert!(!ended && keepalives >= 2 * 3600 / 15 - 1);
        });
    }
}
