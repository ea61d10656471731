//! `/healthz` and `/readyz` on `airlock serve --http` (issue 41): outside the MCP path, its
//! `Host`, token and quota checks (a kubelet names the pod's address and holds no token),
//! fixed tiny bodies, `GET` and `HEAD` only; `/readyz` is `503` while the shared store is
//! unreachable under fail-closed, and ready again once it answers.

use std::net::SocketAddr;

use crate::support::http::{HttpServer, Reply, exchange, post, retry_until};
use crate::support::redis::{Redis, replicas};

/// `method path` with `Host: host` and nothing else: what a probe sends.
fn probe(addr: SocketAddr, method: &str, path: &str, host: &str) -> Reply {
    let request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    exchange(addr, request.as_bytes())
}

fn assert_fixed(reply: &Reply, status: u16, body: &str) {
    assert_eq!(reply.status, status, "{reply:?}");
    assert_eq!(String::from_utf8_lossy(&reply.body), body, "{reply:?}");
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    let names: Vec<String> = reply
        .headers
        .iter()
        .map(|(name, _)| name.to_ascii_lowercase())
        .collect();
    assert_eq!(
        names,
        [
            "content-type",
            "cache-control",
            "connection",
            "content-length",
            "date"
        ],
        "nothing else is said: {reply:?}"
    );
}

#[test]
fn probes_answer_outside_the_mcp_path_its_host_token_and_quota_checks() {
    let server = HttpServer::airlock(
        &[
            "--auth-token-env",
            "PROBE_TOKEN",
            "--client-requests-per-minute",
            "1",
        ],
        &[("PROBE_TOKEN", "probe-token-0123456789abcdef")],
    );
    let addr = server.addr;
    // The MCP endpoint wants the token, and a foreign Host is refused there.
    let mcp = post(addr, &[], r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(mcp.status, 401, "{mcp:?}");
    // Probes: no token, the pod's address as Host, many more than the request quota.
    for _ in 0..5 {
        assert_fixed(
            &probe(addr, "GET", "/healthz", "10.1.2.3:8080"),
            200,
            "ok\n",
        );
        assert_fixed(
            &probe(addr, "GET", "/readyz", "10.1.2.3:8080"),
            200,
            "ready\n",
        );
    }
    // HEAD: the same head, no body.
    let head = probe(addr, "HEAD", "/healthz", "127.0.0.1");
    assert_eq!(head.status, 200, "{head:?}");
    assert!(head.body.is_empty(), "{head:?}");
    assert_eq!(head.header("content-length"), Some("3"));
    // Nothing but GET and HEAD; a query string changes nothing; other paths stay 404.
    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let refused = probe(addr, method, "/readyz", "127.0.0.1");
        assert_eq!(refused.status, 405, "{method}: {refused:?}");
        assert_eq!(refused.header("allow"), Some("GET, HEAD"));
        assert!(refused.body.is_empty());
    }
    assert_fixed(
        &probe(addr, "GET", "/healthz?verbose=1", "127.0.0.1"),
        200,
        "ok\n",
    );
    assert_eq!(probe(addr, "GET", "/healthz/", "127.0.0.1").status, 404);
    assert_eq!(probe(addr, "GET", "/health", "127.0.0.1").status, 404);
}

#[test]
fn readyz_is_503_while_the_shared_store_is_down_under_fail_closed_only() {
    let Some(mut redis) = Redis::start("probes", None) else {
        return;
    };
    let closed = replicas(1, &redis, &["--redis-namespace", "it-probes"], &[]).remove(0);
    let local = replicas(
        1,
        &redis,
        &[
            "--redis-namespace",
            "it-probes",
            "--redis-unreachable",
            "local",
        ],
        &[],
    )
    .remove(0);
    let ready = |server: &HttpServer| probe(server.addr, "GET", "/readyz", "127.0.0.1");
    assert_fixed(&ready(&closed), 200, "ready\n");
    redis.stop();
    // No request has to fail first: the store's own watch notices an idle replica's outage.
    let down = retry_until("not ready", || ready(&closed), |reply| reply.status != 200);
    assert_fixed(&down, 503, "not ready\n");
    assert_fixed(
        &probe(closed.addr, "GET", "/healthz", "127.0.0.1"),
        200,
        "ok\n",
    );
    // Falling back on local limits, the replica still serves: ready.
    assert_fixed(&ready(&local), 200, "ready\n");
    redis.restart();
    let back = retry_until(
        "ready again",
        || ready(&closed),
        |reply| reply.status == 200,
    );
    assert_fixed(&back, 200, "ready\n");
}
