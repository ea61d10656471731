//! `airlock serve --http` against hostile clients (issue 16): a client that fills the session
//! table, holds connections without speaking, never reads its replies, or only sends garbage,
//! while another client must still be served.

use std::net::SocketAddr;

use serde_json::json;

use crate::harness;
use crate::http::{HttpServer, initialize_with, post};

/// A `tools/list` in a legacy session, with `extra` headers; the HTTP status.
fn list_in(addr: SocketAddr, session: &str, extra: &[(&str, &str)]) -> u16 {
    let mut headers = vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    post(
        addr,
        &headers,
        &harness::request(1, "tools/list", json!({})),
    )
    .status
}

/// Item 2: token A opening sessions until the table is full no longer locks token B out. A at
/// its per-client cap loses its own least recently used session, and no one else's.
#[test]
fn one_identity_cannot_fill_the_session_table() {
    let env = [
        ("IT_TOKEN_A", "token-a-0123456789abcdef"),
        ("IT_TOKEN_B", "token-b-0123456789abcdef"),
    ];
    let server = HttpServer::airlock(
        &[
            "--auth-token-env",
            "IT_TOKEN_A",
            "--auth-token-env",
            "IT_TOKEN_B",
            "--max-sessions",
            "64",
            "--max-sessions-per-client",
            "16",
            "--client-requests-per-minute",
            "100000",
        ],
        &env,
    );
    let a = [("Authorization", "Bearer token-a-0123456789abcdef")];
    let b = [("Authorization", "Bearer token-b-0123456789abcdef")];
    let a_sessions: Vec<String> = (0..64).map(|_| initialize_with(server.addr, &a)).collect();
    let b_session = initialize_with(server.addr, &b);
    assert_eq!(list_in(server.addr, &b_session, &b), 200);
    // A keeps its 16 most recent sessions; the older ones are gone.
    for (n, session) in a_sessions.iter().enumerate() {
        let expected = if n >= 64 - 16 { 200 } else { 404 };
        assert_eq!(
            list_in(server.addr, session, &a),
            expected,
            "A's session {n}"
        );
    }
}
