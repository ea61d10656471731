//! CORS: what a web page on an origin the operator listed (`--allow-origin`) may do with the
//! endpoint, and nothing more for any other page.
//!
//! A browser asks before it sends a request MCP needs (JSON, MCP headers): the preflight, an
//! `OPTIONS` with `Origin` and `Access-Control-Request-Method`. It is answered `204` with
//! exactly what MCP uses ([`ALLOW_METHODS`], [`ALLOW_HEADERS`]) when the origin is one the
//! operator listed and the browser asks for nothing else; otherwise `403` with no CORS
//! headers, so the browser sends nothing. Replies to a listed origin then carry
//! `Access-Control-Allow-Origin` (that origin, never `*`) and expose `Mcp-Session-Id`.
//! Credentials mode (cookies) is never allowed: MCP sends its token in `Authorization`.
//!
//! Loopback origins, which the `Origin` check lets through, get no CORS headers unless they
//! are listed too: a page on another local port (a dev server, a tool's web UI, anything a
//! local program serves) is another origin, and must not read a local MCP server's replies
//! because it shares the machine. Everything here is the peer's header text and trusted for
//! nothing; the only text echoed is an `Origin` equal (ignoring ASCII case) to a listed one.
//!
//! A preflight passes the `Host` and `Origin` checks first, needs no token (browsers never
//! send credentials on a preflight) and counts against its address's request quota.

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::body::Body;
use super::headers::AllowList;
use super::reply::{refusal, status_only};
use crate::error::{HttpRefusal, McpError};
use crate::limits::CORS_MAX_AGE;

/// The methods MCP's Streamable HTTP uses here: POST, and DELETE to end a legacy session; GET
/// too where the server offers a legacy session's stream (resource subscriptions), else it is
/// `405` and no preflight grants it.
pub(crate) const ALLOW_METHODS: [&str; 2] = ["POST", "DELETE"];

/// The request headers MCP clients send beyond the safelisted ones, as spelled in the specs.
pub(crate) const ALLOW_HEADERS: [&str; 7] = [
    "Authorization",
    "Content-Type",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Last-Event-ID",
];

/// The reply headers a page may read beyond the safelisted ones: the legacy session id, the
/// token challenge of a `401`, and when to retry after a `429` or `503`.
const EXPOSE_HEADERS: &str = "Mcp-Session-Id, WWW-Authenticate, Retry-After";

/// What a preflight's answer depends on.
const PREFLIGHT_VARY: &str =
    "Origin, Access-Control-Request-Method, Access-Control-Request-Headers";

/// Whether `request` is a CORS preflight: `OPTIONS` with `Origin` and
/// `Access-Control-Request-Method`. Any other `OPTIONS` is an ordinary request (`405`).
pub(super) fn is_preflight<B>(request: &Request<B>) -> bool {
    request.method() == Method::OPTIONS
        && request.headers().contains_key(header::ORIGIN)
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The answer to a preflight whose `Host` and `Origin` already passed: `204` with the CORS
/// headers when its origin is listed and it asks only for what MCP uses, else `403` without.
pub(super) fn preflight(allow: &AllowList, head: &HeaderMap, serves_get: bool) -> Response<Body> {
    let Some(origin) = head.get(header::ORIGIN).filter(|o| allow.cors(o)) else {
        tracing::trace!(origin = ?head.get(header::ORIGIN), "preflight refused: origin not listed");
        return refused_preflight(HttpRefusal::Origin);
    };
    let method_ok = head
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|method| ALLOW_METHODS.contains(&method) || (serves_get && method == "GET"));
    if !method_ok || !asks_only_for_mcp_headers(head) {
        tracing::debug!(
            method = ?head.get(header::ACCESS_CONTROL_REQUEST_METHOD),
            headers = ?head.get(header::ACCESS_CONTROL_REQUEST_HEADERS),
            "preflight refused: asks for a method or header MCP does not use"
        );
        return refused_preflight(HttpRefusal::Preflight);
    }
    let mut reply = status_only(StatusCode::NO_CONTENT);
    let out = reply.headers_mut();
    out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(if serves_get {
            "GET, POST, DELETE"
        } else {
            "POST, DELETE"
        }),
    );
    out.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, \
             Mcp-Name, Last-Event-ID",
        ),
    );
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from(CORS_MAX_AGE.as_secs()),
    );
    out.insert(header::VARY, HeaderValue::from_static(PREFLIGHT_VARY));
    reply
}

/// Whether every name in `Access-Control-Request-Headers` (a comma-separated list, any case,
/// empty items ignored) is one of [`ALLOW_HEADERS`]. No such header asks for none.
fn asks_only_for_mcp_headers(head: &HeaderMap) -> bool {
    head.get_all(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .iter()
        .all(|value| {
            value.to_str().is_ok_and(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .all(|name| ALLOW_HEADERS.iter().any(|a| a.eq_ignore_ascii_case(name)))
            })
        })
}

fn refused_preflight(why: HttpRefusal) -> Response<Body> {
    let mut reply = refusal(&McpError::Http(why));
    reply
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static(PREFLIGHT_VARY));
    reply
}

/// The CORS headers one reply gets, decided from its request before it is handled.
pub(super) struct Grant {
    /// The listed origin to allow, when the request came from one.
    origin: Option<HeaderValue>,
    /// Whether the server lists any origin: then every reply says it varies with `Origin`.
    vary: bool,
}

impl Grant {
    /// For a request that is not a preflight (a preflight's answer carries its own headers):
    /// its origin when its `Host` is allowed and its `Origin` is listed.
    pub(super) fn of<B>(allow: &AllowList, request: &Request<B>) -> Self {
        let vary = allow.lists_origins();
        if !vary || is_preflight(request) {
            return Self {
                origin: None,
                vary: false,
            };
        }
        let head = request.headers();
        let origin = head
            .get(header::ORIGIN)
            .filter(|origin| allow.host(head.get(header::HOST)) && allow.cors(origin))
            .cloned();
        Self { origin, vary }
    }

    /// `reply` with the headers granted.
    pub(super) fn apply(self, mut reply: Response<Body>) -> Response<Body> {
        let out = reply.headers_mut();
        if self.vary {
            out.append(header::VARY, HeaderValue::from_static("Origin"));
        }
        if let Some(origin) = self.origin {
            out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            out.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static(EXPOSE_HEADERS),
            );
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow() -> AllowList {
        AllowList::new(&[], &["http://localhost:5173".into()])
    }

    fn options(headers: &[(&str, &str)]) -> Request<()> {
        let mut request = Request::builder().method(Method::OPTIONS).uri("/mcp");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap()
    }

    #[test]
    fn the_allowed_lists_are_exactly_what_the_preflight_answer_says() {
        let request = options(&[
            ("origin", "http://localhost:5173"),
            ("access-control-request-method", "POST"),
        ]);
        let reply = preflight(&allow(), request.headers(), false);
        assert_eq!(reply.status(), StatusCode::NO_CONTENT);
        let head = reply.headers();
        assert_eq!(
            head[header::ACCESS_CONTROL_ALLOW_METHODS],
            ALLOW_METHODS.join(", ")
        );
        assert_eq!(
            head[header::ACCESS_CONTROL_ALLOW_HEADERS],
            ALLOW_HEADERS.join(", ")
        );
        // GET only where the server serves a session's stream.
        let get = options(&[
            ("origin", "http://localhost:5173"),
            ("access-control-request-method", "GET"),
        ]);
        assert_eq!(
            preflight(&allow(), get.headers(), false).status(),
            StatusCode::FORBIDDEN
        );
        let granted = preflight(&allow(), get.headers(), true);
        assert_eq!(granted.status(), StatusCode::NO_CONTENT);
        assert_eq!(
            granted.headers()[header::ACCESS_CONTROL_ALLOW_METHODS],
            "GET, POST, DELETE"
        );
    }

    #[test]
    fn only_options_with_origin_and_a_requested_method_is_a_preflight() {
        assert!(is_preflight(&options(&[
            ("origin", "http://a"),
            ("access-control-request-method", "POST"),
        ])));
        assert!(!is_preflight(&options(&[("origin", "http://a")])));
        assert!(!is_preflight(&options(&[(
            "access-control-request-method",
            "POST"
        )])));
        let post = Request::builder()
            .method(Method::POST)
            .header("origin", "http://a")
            .header("access-control-request-method", "POST")
            .body(())
            .unwrap();
        assert!(!is_preflight(&post));
    }

    #[test]
    fn a_request_header_list_must_name_only_mcp_headers() {
        let asks = |list: &str| {
            let request = options(&[("access-control-request-headers", list)]);
            asks_only_for_mcp_headers(request.headers())
        };
        assert!(asks("content-type,mcp-method"));
        assert!(asks(" Authorization , LAST-EVENT-ID,,"));
        assert!(asks(""));
        assert!(!asks("content-type,x-custom"));
        assert!(!asks("content-type mcp-method"));
        assert!(!asks("cookie"));
        let mut head = HeaderMap::new();
        head.insert(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            HeaderValue::from_bytes(b"content-type,\xff").unwrap(),
        );
        assert!(!asks_only_for_mcp_headers(&head));
    }

    #[test]
    fn a_grant_needs_a_listed_origin_and_an_allowed_host() {
        let request = |host: &str, origin: &str| {
            Request::builder()
                .method(Method::POST)
                .header("host", host)
                .header("origin", origin)
                .body(())
                .unwrap()
        };
        let granted = Grant::of(
            &allow(),
            &request("127.0.0.1:8080", "http://localhost:5173"),
        );
        assert_eq!(
            granted.origin.as_ref().map(HeaderValue::as_bytes),
            Some(&b"http://localhost:5173"[..])
        );
        for (host, origin) in [
            ("evil.example.com", "http://localhost:5173"),
            ("127.0.0.1:8080", "http://localhost:3000"),
            ("127.0.0.1:8080", "null"),
        ] {
            let grant = Grant::of(&allow(), &request(host, origin));
            assert!(grant.origin.is_none(), "{host} {origin}");
            assert!(grant.vary);
        }
        let unlisted = AllowList::new(&[], &[]);
        let grant = Grant::of(
            &unlisted,
            &request("127.0.0.1:8080", "http://localhost:5173"),
        );
        assert!(grant.origin.is_none() && !grant.vary);
    }
}
