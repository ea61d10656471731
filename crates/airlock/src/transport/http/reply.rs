//! Building replies: the JSON body and status of a JSON-RPC answer or refusal, the empty
//! replies, and the verdict a reply carries about its request for the garbage cut-off.
//!
//! Trusts: the engine's account of what it wrote (`take_refusal`, `last_was_invalid`) and the
//! error table (`response::write_error`); the status of every error comes from `status`, the
//! one place it is decided. Owns nothing between requests.

use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use crate::engine::Engine;
use crate::error::McpError;
use crate::response;

use super::Verdict;
use super::body::Body;
use super::status;

/// `reply`, marked as the answer to garbage.
pub(super) fn garbage(reply: Response<Body>) -> Response<Body> {
    judged(reply, Verdict::Garbage)
}

/// `reply`, marked with what it says of its request.
pub(super) fn judged(mut reply: Response<Body>, verdict: Verdict) -> Response<Body> {
    reply.extensions_mut().insert(verdict);
    reply
}

/// The verdict on a request an engine handled: garbage when the engine counted it invalid;
/// a valid notification neither counts nor resets (as on stdio, where only an answered
/// request resets the run).
pub(super) fn engine_verdict(engine: &Engine, notification: bool) -> Verdict {
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
pub(super) fn busy(error: &McpError) -> bool {
    matches!(
        error,
        McpError::RateLimited { .. }
            | McpError::Overloaded { .. }
            | McpError::ClientBusy { .. }
            | McpError::TooManyConnections { .. }
            | McpError::TooManyConnectionsFromAddress { .. }
            | McpError::TooManySessions { .. }
            | McpError::StoreUnavailable
            | McpError::Internal(_)
    )
}

/// The reply to a frame refused at the envelope or to an unsolicited response, as `engine`
/// (one of its own) handled it: the error it wrote with its status, or `202` with no body
/// when it answered nothing; judged as the engine counted it.
pub(super) fn unanswered_reply(engine: &mut Engine, out: Vec<u8>, modern: bool) -> Response<Body> {
    let verdict = engine_verdict(engine, false);
    match engine.take_refusal() {
        Some(error) => judged(json(out, Some(&error), modern), verdict),
        None => judged(status_only(StatusCode::ACCEPTED), verdict),
    }
}

/// The reply to a request answered without a call, judged as the engine counted it, as on
/// stdio: garbage when counted invalid; neutral when refused without counting (a busy server,
/// a tool the server does not have), which neither counts nor resets; valid when answered.
pub(super) fn finished(engine: &mut Engine, out: Vec<u8>, modern: bool) -> Response<Body> {
    let error = engine.take_refusal();
    let verdict = match &error {
        _ if engine.last_was_invalid() => Verdict::Garbage,
        Some(_) => Verdict::Neutral,
        None => Verdict::Valid,
    };
    judged(json(out, error.as_ref(), modern), verdict)
}

/// A `200` event stream of `body`, not to be cached or buffered by a proxy.
pub(super) fn sse_reply(body: Body) -> Response<Body> {
    let mut reply = Response::new(body);
    let head = reply.headers_mut();
    head.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    head.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    head.insert("x-accel-buffering", HeaderValue::from_static("no"));
    reply
}

/// A JSON reply: `out` (one line) with the status of `error`, or `200`.
pub(super) fn json(mut out: Vec<u8>, error: Option<&McpError>, modern: bool) -> Response<Body> {
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
    let retry_after_ms = match error {
        Some(McpError::RateLimited { retry_after_ms }) => Some(*retry_after_ms),
        // Bodies arrive within the body timeout: the budget frees up within a second or so.
        Some(McpError::BodiesFull { .. }) => Some(1000),
        _ => None,
    };
    if let Some(retry_after_ms) = retry_after_ms {
        let seconds = retry_after_ms.div_ceil(1000).max(1);
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            reply.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    reply
}

/// A refusal before any message was read: a JSON-RPC error with id null, and its status.
pub(super) fn refusal(error: &McpError) -> Response<Body> {
    let mut out = Vec::new();
    response::write_error(&mut out, None, error);
    json(out, Some(error), true)
}

/// Asks hyper to close the connection after this reply (a body left unread is not drained).
pub(super) fn closing(mut reply: Response<Body>) -> Response<Body> {
    reply
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    reply
}

pub(super) fn status_only(status: StatusCode) -> Response<Body> {
    let mut reply = Response::new(Body::empty());
    *reply.status_mut() = status;
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::HttpRefusal;
    use crate::fuzzing::fuzz_server;

    fn verdict(reply: &Response<Body>) -> Option<Verdict> {
        reply.extensions().get::<Verdict>().copied()
    }

    #[test]
    fn a_json_reply_drops_the_newline_and_takes_its_status_from_the_table() {
        let reply = json(b"{\"id\":1}\n".to_vec(), None, true);
        assert_eq!(reply.status(), StatusCode::OK);
        assert_eq!(reply.headers()[header::CONTENT_TYPE], "application/json");
        let error = McpError::MethodNotFound;
        assert_eq!(json(b"{}".to_vec(), Some(&error), true).status(), 404);
        assert_eq!(json(b"{}".to_vec(), Some(&error), false).status(), 200);
        // A refused notification wrote nothing: the status alone, no content type.
        let empty = json(Vec::new(), Some(&McpError::Batch), false);
        assert_eq!(empty.status(), StatusCode::BAD_REQUEST);
        assert!(empty.headers().get(header::CONTENT_TYPE).is_none());
    }

    #[test]
    fn a_rate_limited_reply_says_when_to_retry_in_whole_seconds() {
        for (retry_after_ms, seconds) in [(0, "1"), (1, "1"), (1000, "1"), (1001, "2")] {
            let error = McpError::RateLimited { retry_after_ms };
            let reply = json(b"{}".to_vec(), Some(&error), true);
            assert_eq!(reply.status(), StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(reply.headers()[header::RETRY_AFTER], seconds);
        }
    }

    #[test]
    fn a_refusal_is_an_error_with_a_null_id_and_its_own_status() {
        let reply = refusal(&McpError::Http(HttpRefusal::Host));
        assert_eq!(reply.status(), StatusCode::MISDIRECTED_REQUEST);
        let closed = closing(reply);
        assert_eq!(closed.headers()[header::CONNECTION], "close");
        assert!(verdict(&closed).is_none());
    }

    #[test]
    fn replies_carry_the_verdict_they_are_given() {
        assert_eq!(
            verdict(&garbage(status_only(StatusCode::NOT_FOUND))),
            Some(Verdict::Garbage)
        );
        let neutral = judged(status_only(StatusCode::ACCEPTED), Verdict::Neutral);
        assert_eq!(verdict(&neutral), Some(Verdict::Neutral));
    }

    #[test]
    fn only_a_busy_server_or_a_fault_is_not_the_clients_fault() {
        assert!(busy(&McpError::Overloaded { limit: 1 }));
        assert!(busy(&McpError::RateLimited { retry_after_ms: 1 }));
        assert!(busy(&McpError::TooManySessions { limit: 1 }));
        assert!(busy(&McpError::Internal("x")));
        assert!(!busy(&McpError::MethodNotFound));
        assert!(!busy(&McpError::Http(HttpRefusal::Unauthorized)));
    }

    #[test]
    fn a_finished_reply_is_judged_as_the_engine_counted_its_message() {
        let mut engine = Engine::new(fuzz_server());
        let mut out = Vec::new();
        assert!(matches!(
            engine.handle(b"[1,2]", &mut out),
            crate::engine::Effect::None
        ));
        let reply = finished(&mut engine, out, false);
        assert_eq!(reply.status(), StatusCode::BAD_REQUEST);
        assert_eq!(verdict(&reply), Some(Verdict::Garbage));

        let mut out = Vec::new();
        let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        assert!(matches!(
            engine.handle(initialize, &mut out),
            crate::engine::Effect::None
        ));
        let reply = finished(&mut engine, out, false);
        assert_eq!(reply.status(), StatusCode::OK);
        assert_eq!(verdict(&reply), Some(Verdict::Valid));
        assert_eq!(engine_verdict(&engine, false), Verdict::Valid);
        assert_eq!(engine_verdict(&engine, true), Verdict::Neutral);
    }
}
