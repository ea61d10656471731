//! `/healthz` and `/readyz`: what a load balancer or an orchestrator (a Kubernetes liveness
//! or readiness probe) asks of a replica, answered beside the MCP endpoint.
//!
//! Trusts nothing of the request but its path and method: a probe passes no `Host` or
//! `Origin` check, no token and no quota (a kubelet names the pod's address in `Host` and
//! holds no token), so its answer is fixed text that tells nothing else: no version, no tool,
//! no client, no store address. The connection caps still hold: probes arrive on the same
//! listener. `/healthz` is `200` while the listener serves. `/readyz` is `503` while the
//! shared store (Redis, the `redis` feature) is unreachable under the fail-closed policy,
//! when the replica refuses every call it would count there: a balancer then sends clients to
//! a replica that can serve them. The answer is read from the store's health, never by asking
//! Redis, so a flood of probes costs Redis nothing. `GET` and `HEAD` only (`405` otherwise);
//! no body is read.

use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Response, StatusCode};

use super::State;
use super::body::Body;

/// The liveness probe's path.
pub const HEALTH_PATH: &str = "/healthz";

/// The readiness probe's path.
pub const READY_PATH: &str = "/readyz";

/// The reply to a probe of `path` by `method`, or `None` when `path` is no probe's.
pub(super) fn answer(state: &State, method: &Method, path: &str) -> Option<Response<Body>> {
    let (status, text): (StatusCode, &'static [u8]) = match path {
        HEALTH_PATH => (StatusCode::OK, b"ok\n"),
        READY_PATH if state.store_refuses_calls() => {
            (StatusCode::SERVICE_UNAVAILABLE, b"not ready\n")
        }
        READY_PATH => (StatusCode::OK, b"ready\n"),
        _ => return None,
    };
    if method != Method::GET && method != Method::HEAD {
        let mut reply = Response::new(Body::empty());
        *reply.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        reply
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(reply);
    }
    // hyper sends no body in reply to HEAD, and keeps this one's length.
    let mut reply = Response::new(Body::full(Bytes::from_static(text)));
    *reply.status_mut() = status;
    let headers = reply.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Some(reply)
}
