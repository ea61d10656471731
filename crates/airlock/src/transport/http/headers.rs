//! Request headers: `Host` and `Origin` against their allow-lists, the media types a request
//! sends and accepts, and the MCP headers of 2026-07-28 (`Mcp-Method`, `Mcp-Name`,
//! `MCP-Protocol-Version`), whose values may come as `=?base64?…?=`.
//!
//! Each MCP header must come at most once: a gateway that reads the last of two values and a
//! server that reads the first would see two different tools (issue 35). The base64 form is
//! exactly the specification's, `=?base64?` in lower case and the standard alphabet with its
//! padding; `=?BASE64?`, the URL-safe alphabet or missing padding are plain values, which match
//! no body.
//!
//! Every value here is the peer's and trusted for nothing: a header that is not visible ASCII,
//! a malformed authority, or a base64 value that is not UTF-8 is simply "not allowed" or "not
//! matching". Nothing here allocates more than the header's own length.

use base64::Engine as _;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};

/// `Mcp-Method`: the JSON-RPC method, repeated in a header (2026-07-28).
pub(crate) const MCP_METHOD: &str = "mcp-method";
/// `Mcp-Name`: `params.name` of `tools/call`, repeated in a header (2026-07-28).
pub(crate) const MCP_NAME: &str = "mcp-name";
/// `MCP-Protocol-Version` (2025-06-18 and later).
pub(crate) const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Session-Id` (legacy sessions).
pub(crate) const MCP_SESSION_ID: &str = "mcp-session-id";

/// `Sec-Fetch-Site` and `Sec-Fetch-Mode` (Fetch Metadata), sent by current browsers on every
/// request a page makes; built once, not parsed per request.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");
/// See [`SEC_FETCH_SITE`].
const SEC_FETCH_MODE: HeaderName = HeaderName::from_static("sec-fetch-mode");

/// Hosts every server accepts: the loopback names. Origins on these hosts are accepted too.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The hosts and origins requests may name: the loopback names, plus what the operator added.
///
/// A browser tricked by DNS rebinding sends the attacker's host name in `Host`; a web page's
/// request carries its `Origin`. Both are checked on every request, before authentication.
#[derive(Clone, Debug, Default)]
pub struct AllowList {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl AllowList {
    /// The loopback names plus `hosts` (host names or IP literals, IPv6 in brackets, without
    /// port) and `origins` (`scheme://host[:port]`, compared exactly, ignoring ASCII case).
    pub fn new(hosts: &[String], origins: &[String]) -> Self {
        Self {
            hosts: hosts.iter().map(|host| host.to_ascii_lowercase()).collect(),
            origins: origins
                .iter()
                .map(|origin| origin.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether a `Host` header names an allowed host (any port). A missing or malformed one is
    /// not allowed.
    pub(crate) fn host(&self, value: Option<&HeaderValue>) -> bool {
        value
            .and_then(|value| value.to_str().ok())
            .and_then(host_of)
            .is_some_and(|host| self.knows_host(host))
    }

    /// Whether an `Origin` header is allowed: absent (not a browser), an `http(s)` origin on a
    /// loopback host, or one the operator listed. `null` and anything malformed are not.
    pub(crate) fn origin(&self, value: Option<&HeaderValue>) -> bool {
        let Some(value) = value else {
            return true;
        };
        let Ok(origin) = value.to_str() else {
            return false;
        };
        if self
            .origins
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        authority
            .and_then(host_of)
            .is_some_and(|host| LOOPBACK_HOSTS.iter().any(|l| l.eq_ignore_ascii_case(host)))
    }

    /// The loopback names plus `hosts`, and `origins` checked: each must be an `http` or
    /// `https` origin (`scheme://host[:port]`, no path, no user, a port in range), as a
    /// browser sends it. `null` (sandboxed frames, `file:` pages) and `*` are refused.
    ///
    /// # Errors
    ///
    /// [`OriginError`] naming the first origin that is not one.
    pub fn parse(hosts: &[String], origins: &[String]) -> Result<Self, OriginError> {
        if let Some(bad) = origins.iter().find(|origin| !is_http_origin(origin)) {
            return Err(OriginError(bad.clone()));
        }
        Ok(Self::new(hosts, origins))
    }

    /// Whether a browser on `origin` may read replies (CORS): it is one the operator listed
    /// (loopback origins are not, unless listed) and an `http(s)` origin.
    pub(crate) fn cors(&self, origin: &HeaderValue) -> bool {
        origin.to_str().is_ok_and(|origin| {
            is_http_origin(origin)
                && self
                    .origins
                    .iter()
                    .any(|allowed| allowed.eq_ignore_ascii_case(origin))
        })
    }

    /// The index of `origin` among the origins the operator listed, if it is one.
    pub(crate) fn listed(&self, origin: &HeaderValue) -> Option<usize> {
        let origin = origin.to_str().ok()?;
        self.origins
            .iter()
            .position(|allowed| allowed.eq_ignore_ascii_case(origin))
    }

    /// Whether the operator listed any origin (and so some replies carry CORS headers).
    pub(crate) fn lists_origins(&self) -> bool {
        !self.origins.is_empty()
    }

    fn knows_host(&self, host: &str) -> bool {
        LOOPBACK_HOSTS
            .iter()
            .copied()
            .chain(self.hosts.iter().map(String::as_str))
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }
}

/// An allowed origin that is not `http(s)://host[:port]`: the operator's value, as given.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error("an allowed origin must be http://HOST[:PORT] or https://HOST[:PORT], not {0:?}")]
pub struct OriginError(pub String);

/// Whether `origin` is `http://` or `https://` and an authority with a port in range (a
/// trailing `/` tolerated, as [`AllowList::new`] strips it).
fn is_http_origin(origin: &str) -> bool {
    let origin = origin.strip_suffix('/').unwrap_or(origin);
    let authority = origin
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .and_then(|_| origin.get(7..))
        .or_else(|| {
            origin
                .get(..8)
                .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
                .and_then(|_| origin.get(8..))
        });
    let Some(authority) = authority else {
        return false;
    };
    let port = match authority.rsplit_once(':') {
        Some((_, port)) if !authority.ends_with(']') => Some(port),
        _ => None,
    };
    host_of(authority).is_some() && port.is_none_or(|port| port.parse::<u16>().is_ok())
}

/// The host of an authority `host[:port]` (`[v6][:port]` for IPv6), or `None` when it is
/// malformed: empty, with a user part, a path, or a port that is not digits.
fn host_of(authority: &str) -> Option<&str> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at_checked(end.checked_add(1)?)?;
        let port = if rest.is_empty() {
            None
        } else {
            Some(rest.strip_prefix(':')?)
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port_ok = port.is_none_or(|port| {
        !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
    });
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'));
    (port_ok && host_ok).then_some(host)
}

/// Whether a request is one a web page can make a browser send: it carries `Origin` or a
/// `Sec-Fetch-Site`/`Sec-Fetch-Mode` header (every request of a current browser's page does,
/// `<img>` and `no-cors` `fetch` included), or it is not a `POST` or `DELETE` of [`MCP_PATH`]
/// (`<img src=…/x.png>` in an older browser; a `GET` of it without a legacy session, which
/// only a page sends). MCP clients that are not browsers send none of these; a page cannot
/// send a `POST` without `Origin`. Such requests are keyed apart (`ClientKey::Page`).
///
/// [`MCP_PATH`]: super::MCP_PATH
pub(crate) fn from_a_page(method: &hyper::Method, path: &str, headers: &HeaderMap) -> bool {
    let marked = [&hyper::header::ORIGIN, &SEC_FETCH_SITE, &SEC_FETCH_MODE]
        .into_iter()
        .any(|name| headers.contains_key(name));
    let mcp_request = path == super::MCP_PATH
        && (*method == hyper::Method::POST
            || *method == hyper::Method::DELETE
            || (*method == hyper::Method::GET && headers.contains_key(MCP_SESSION_ID)));
    marked || !mcp_request
}

/// Whether `Content-Type` says JSON (`application/json`, any parameters).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// What the client accepts in reply.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) struct Accepts {
    /// `application/json` (or a wildcard covering it).
    pub(crate) json: bool,
    /// `text/event-stream` (or `text/*`).
    pub(crate) sse: bool,
}

/// Reads `Accept`; without one, JSON only. A range of weight zero (`q=0`) is one the client
/// refuses; other weights and parameters are not ranked (either reply is acceptable). `*/*`
/// covers both.
pub(crate) fn accepts(headers: &HeaderMap) -> Accepts {
    let mut accepts = Accepts {
        json: false,
        sse: false,
    };
    let values = headers.get_all(hyper::header::ACCEPT);
    let mut any = false;
    for value in values {
        any = true;
        let Ok(value) = value.to_str() else {
            continue;
        };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|parameter| {
                let (name, weight) = parameter.split_once('=').unwrap_or_default();
                name.trim().eq_ignore_ascii_case("q")
                    && weight
                        .trim()
                        .parse::<f64>()
                        .is_ok_and(|weight| weight == 0.0)
            });
            if refused {
                continue;
            }
            let is = |name: &str| media.eq_ignore_ascii_case(name);
            if is("application/json") || is("application/*") || is("*/*") {
                accepts.json = true;
            }
            if is("text/event-stream") || is("text/*") || is("*/*") {
                accepts.sse = true;
            }
        }
    }
    if !any {
        accepts.json = true;
    }
    accepts
}

/// The text value of an MCP header, decoded: `=?base64?…?=` values are base64 of UTF-8.
/// `None` when it is absent, repeated, not visible ASCII, or a base64 value that does not
/// decode.
pub(crate) fn mcp_value(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    decode(value)
}

/// The first MCP header of 2026-07-28 that a request repeats, as the fault it is.
pub(crate) fn repeated(headers: &HeaderMap) -> Option<crate::error::HeaderFault> {
    use crate::error::HeaderFault;
    [
        (MCP_PROTOCOL_VERSION, HeaderFault::ProtocolVersion),
        (MCP_METHOD, HeaderFault::Method),
        (MCP_NAME, HeaderFault::Name),
    ]
    .into_iter()
    .find(|(name, _)| headers.get_all(*name).iter().nth(1).is_some())
    .map(|(_, fault)| fault)
}

fn decode(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?;
    let encoded = text
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="));
    match encoded {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(text.to_owned()),
    }
}

/// The plain text value of a header, if it is visible ASCII.
pub(crate) fn text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> HeaderValue {
        HeaderValue::from_str(text).unwrap()
    }

    #[test]
    fn hosts_are_loopback_or_listed_with_any_port() {
        let list = AllowList::new(&["mcp.example.com".into()], &[]);
        for good in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:443",
            "[::1]",
            "LOCALHOST",
            "mcp.example.com:9",
        ] {
            assert!(list.host(Some(&value(good))), "{good}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:8080",
            "localhost.evil.com",
            "127.0.0.1.nip.io",
            "user@localhost",
            "localhost:",
            "localhost:80a",
            "[::1]x",
            "localhost/x",
            "",
            "[::2]:80",
        ] {
            assert!(!list.host(Some(&value(bad))), "{bad}");
        }
        assert!(!list.host(None));
    }

    #[test]
    fn origins_are_absent_loopback_or_listed() {
        let list = AllowList::new(&[], &["https://app.example.com".into()]);
        assert!(list.origin(None));
        for good in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "https://app.example.com",
            "HTTPS://APP.EXAMPLE.COM",
        ] {
            assert!(list.origin(Some(&value(good))), "{good}");
        }
        for bad in [
            "null",
            "http://evil.example.com",
            "https://app.example.com:444",
            "http://localhost.evil.com",
            "file://localhost",
            "http://localhost/path",
            "localhost",
        ] {
            assert!(!list.origin(Some(&value(bad))), "{bad}");
        }
    }

    #[test]
    fn cors_origins_are_listed_http_origins_only() {
        let list = AllowList::new(
            &[],
            &[
                "http://localhost:5173".into(),
                "null".into(),
                "https://[::1]:8443/".into(),
            ],
        );
        assert!(list.lists_origins());
        assert!(list.cors(&value("http://localhost:5173")));
        assert!(list.cors(&value("HTTP://LOCALHOST:5173")));
        assert!(list.cors(&value("https://[::1]:8443")));
        // Loopback is let through by `origin` but is not a CORS origin unless listed; `null`
        // never is, even listed through `new`.
        assert!(list.origin(Some(&value("http://localhost:3000"))));
        assert!(!list.cors(&value("http://localhost:3000")));
        assert!(!list.cors(&value("null")));
        assert!(!AllowList::new(&[], &[]).lists_origins());
    }

    #[test]
    fn parsed_origins_must_be_http_origins() {
        for good in [
            "http://localhost:5173",
            "https://app.example.com",
            "https://app.example.com/",
            "http://[::1]:8080",
            "http://[::1]",
            "HTTPS://APP.EXAMPLE.COM:65535",
        ] {
            assert!(AllowList::parse(&[], &[good.into()]).is_ok(), "{good}");
        }
        for bad in [
            "null",
            "*",
            "",
            "localhost:5173",
            "file://localhost",
            "ftp://example.com",
            "http://",
            "http://localhost:5173/app",
            "http://user@localhost",
            "http://localhost:99999",
            "http://localhost:",
            "http://[::1]x",
            "http://a b",
        ] {
            assert_eq!(
                AllowList::parse(&[], &["https://ok.example".into(), bad.into()]).unwrap_err(),
                OriginError(bad.into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn mcp_values_decode_base64_words() {
        let mut headers = HeaderMap::new();
        headers.insert(MCP_NAME, value("=?base64?w7xuw68=?="));
        assert_eq!(mcp_value(&headers, MCP_NAME).as_deref(), Some("ünï"));
        headers.insert(MCP_NAME, value("=?base64?dG9vbA==?="));
        assert_eq!(mcp_value(&headers, MCP_NAME).as_deref(), Some("tool"));
        // Only the specification's form: other spellings are plain values (and so never the
        // body's name), the URL-safe alphabet and missing padding do not decode.
        headers.insert(MCP_NAME, value("=?BASE64?dG9vbA==?="));
        assert_eq!(
            mcp_value(&headers, MCP_NAME).as_deref(),
            Some("=?BASE64?dG9vbA==?=")
        );
        headers.insert(MCP_NAME, value("=?base64?Pz8-?="));
        assert_eq!(mcp_value(&headers, MCP_NAME), None);
        headers.insert(MCP_NAME, value("=?base64?Pz8_?="));
        assert_eq!(mcp_value(&headers, MCP_NAME), None);
        headers.insert(MCP_NAME, value("=?base64?dG9vbA?="));
        assert_eq!(mcp_value(&headers, MCP_NAME), None);
        headers.insert(MCP_NAME, value("=?base64?Pz8/?="));
        assert_eq!(mcp_value(&headers, MCP_NAME).as_deref(), Some("???"));
        // Two values: none.
        headers.append(MCP_NAME, value("tool"));
        assert_eq!(mcp_value(&headers, MCP_NAME), None);
        assert_eq!(repeated(&headers), Some(crate::error::HeaderFault::Name));
        headers.remove(MCP_NAME);
        assert_eq!(repeated(&headers), None);
        headers.insert(MCP_NAME, value("plain_tool"));
        assert_eq!(mcp_value(&headers, MCP_NAME).as_deref(), Some("plain_tool"));
        // Not base64, or not UTF-8 once decoded: no value, so never equal to the body's.
        headers.insert(MCP_NAME, value("=?base64?***?="));
        assert_eq!(mcp_value(&headers, MCP_NAME), None);
        headers.insert(MCP_NAME, value("=?base64?/w==?="));
        assert_eq!(mcp_value(&headers, MCP_NAME), None);
        headers.insert(MCP_NAME, HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap());
        assert_eq!(mcp_value(&headers, MCP_NAME), None);
        assert_eq!(mcp_value(&HeaderMap::new(), MCP_NAME), None);
    }

    #[test]
    fn accept_and_content_type_are_read_leniently() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            accepts(&headers),
            Accepts {
                json: true,
                sse: false
            }
        );
        headers.insert(
            hyper::header::ACCEPT,
            value("application/json, text/event-stream;q=0.9"),
        );
        assert_eq!(
            accepts(&headers),
            Accepts {
                json: true,
                sse: true
            }
        );
        headers.insert(hyper::header::ACCEPT, value("text/html"));
        assert_eq!(
            accepts(&headers),
            Accepts {
                json: false,
                sse: false
            }
        );
        // A weight of zero refuses; `*/*` covers both.
        for (accept, json, sse) in [
            ("application/json, text/event-stream;q=0", true, false),
            ("application/json;q=0.000, text/event-stream", false, true),
            ("application/json; Q = 0", false, false),
            ("application/json;q=0.001", true, false),
            ("application/json;q=junk", true, false),
            ("*/*", true, true),
            ("*/*;q=0, application/json", true, false),
        ] {
            headers.insert(hyper::header::ACCEPT, value(accept));
            assert_eq!(accepts(&headers), Accepts { json, sse }, "{accept}");
        }
        headers.insert(
            hyper::header::CONTENT_TYPE,
            value("Application/JSON; charset=utf-8"),
        );
        assert!(is_json(&headers));
        headers.insert(hyper::header::CONTENT_TYPE, value("text/plain"));
        assert!(!is_json(&headers));
    }
}
