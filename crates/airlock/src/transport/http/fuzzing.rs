//! The `http` fuzz target: arbitrary bytes as the client side of one HTTP/1.1 connection,
//! through the real connection driver, and the oracle its responses must pass.
//!
//! Built only for tests and with `--cfg fuzzing`. The bytes are written, as they are (several
//! pipelined requests, or none that parse), into [`connection::serve`] over an in-memory
//! duplex, with hyper's settings from [`connection::builder`]: what a socket would carry, into
//! the code a socket reaches. The engine (an echo tool, a failing tool, a 16 KiB body cap, a
//! cut-off after 4 garbage requests) is built once per process; the transport's state (a
//! bearer token, few sessions, small quotas, an 8 KiB head) once per input, so an input's
//! responses depend on it alone and a finding replays by itself.
//!
//! Time is tokio's, paused: when every task waits, the clock jumps to the next timer, so the
//! header, body and first-request timeouts cost no wall time, and a connection that never
//! ends is caught by a 10-minute deadline in an instant. Once the server has gone quiet with
//! the whole input written, the client half-closes, as a client that has sent everything
//! does; responses are then read to the end (at most [`MAX_RESPONSE_BYTES`]).
//!
//! The oracle ([`check_responses`]): the stream is a sequence of whole HTTP/1.x responses,
//! each with a status of [`STATUSES`]; every `application/json` body is one JSON-RPC response
//! and every SSE `data:` line one too (per [`crate::fuzzing::check_output`], codes from the
//! error table); and no response carries the configured token or the value of a request's
//! `Authorization`, `Host`, `Origin` or `Mcp-Session-Id` header (see [`echoes`]).

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr};
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Arc;
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::server::conn::http1;
use secrecy::SecretString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::connection::{self, Ended};
use super::{AllowList, HttpConfig, State, Tokens};
use crate::engine::Shared;
use crate::limits::{HttpLimits, Limits, Rate};

/// The bearer token the fuzzed server accepts (in `fuzz/dicts/http.dict`, so the fuzzer
/// reaches past the `401`); it must never appear in a response.
pub const TOKEN: &str = "fuzz-token-5f1e0c9a7d3b";

/// Most response bytes one input may produce before the harness calls it a finding.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// The body cap of the fuzzed server (`max_frame_bytes`).
pub const BODY_CAP: usize = 16 * 1024;

/// The head cap asked of the fuzzed server; hyper raises it to its 8 KiB minimum read buffer.
pub const HEAD_CAP: usize = 4 * 1024;

/// Most bytes the process may hold at once while one input is served: the harness's response
/// buffer ([`MAX_RESPONSE_BYTES`], doubled: a `Vec` grows by doubling) and its copy of the
/// input; per connection, the duplex pipe, hyper's read and write buffers (8 KiB each, the
/// raised head cap), one body at the cap twice (collected, then as one `Bytes`) and its
/// reply; and a fixed allowance for what lives across inputs (the runtime, the registry and
/// its schemas, the engine's state). Checked by `fuzz/fuzz_targets/http.rs`, whose counting
/// allocator sees every byte: memory must not grow with what a client sends.
pub fn allocation_bound(input_len: usize) -> usize {
    const FIXED_ALLOWANCE: usize = 2 * 1024 * 1024;
    let per_connection = DUPLEX_BYTES
        .saturating_add(4 * 8 * 1024)
        .saturating_add(BODY_CAP.saturating_mul(4));
    FIXED_ALLOWANCE
        .saturating_add(MAX_RESPONSE_BYTES.saturating_mul(2))
        .saturating_add(per_connection)
        .saturating_add(input_len.saturating_mul(2))
}

/// Every status a response may have, and who writes it:
///
/// - the transport (`status.rs`, the one table, and the replies without a body): `200` a
///   reply, `202` a notification or an unanswered message, `204` a session ended, a CORS
///   preflight granted or a legacy call cancelled, `400` a bad body or header, `401` no
///   valid token, `403` an origin or a preflight refused, `404` not `/mcp`, an unknown
///   session, or an unknown method (modern), `405` a method other than POST and DELETE,
///   `406` and `415` the media types, `408` a body that did not arrive in time, `413` a body
///   over the cap, `421` a Host not allowed, `429` a quota or the cut-off, `500` a fault,
///   `503` busy;
/// - hyper itself: `100` (`Expect: 100-continue`, before the body is read), `400` (a head
///   it cannot parse), `414` (a request target too long), `431` (a head over the cap).
pub const STATUSES: [u16; 19] = [
    100, 200, 202, 204, 400, 401, 403, 404, 405, 406, 408, 413, 414, 415, 421, 429, 431, 500, 503,
];

/// The duplex pipe's capacity each way.
const DUPLEX_BYTES: usize = 64 * 1024;

/// How long (tokio's paused time) one input may take before it counts as a hang: far past
/// every timeout of the fuzzed server.
const DEADLINE: Duration = Duration::from_secs(600);

/// The fuzz entry: `data` as the raw client side of one connection; panics on a broken
/// invariant (how a fuzzer reports it).
pub fn http(data: &[u8]) {
    let out = serve_bytes(data);
    // A reply to HEAD announces a body it does not carry, so a stream that may hold one
    // cannot be cut into responses without parsing the requests as hyper does; HEAD is
    // served like GET (`405`), and such a stream is still checked for echoes below.
    if !contains(data, b"HEAD")
        && let Err(broken) = check_responses(&out)
    {
        fail(&broken);
    }
    // What looks like an echo is one only if it depends on the value: the same input with
    // the value replaced (same length) must not show it too.
    for value in echoes(data, &out) {
        let masked = mask(data, &value);
        let again = serve_bytes(&masked);
        if contains(&again, &value) {
            continue;
        }
        fail(&format!(
            "a response echoes a request's header value {:?}",
            String::from_utf8_lossy(&value)
        ));
    }
}

/// The responses to `data` on one connection of a fresh transport state.
fn serve_bytes(data: &[u8]) -> Vec<u8> {
    HARNESS.with(|harness| {
        let harness = harness.borrow();
        harness.runtime.block_on(harness.serve(data))
    })
}

thread_local! {
    static HARNESS: RefCell<Harness> = RefCell::new(Harness::new());
}

/// What lives across inputs: the runtime, the engine's shared state, hyper's settings.
struct Harness {
    runtime: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    builder: http1::Builder,
}

impl Harness {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap_or_else(|_| fail("the fuzzer cannot run without a runtime"));
        Self {
            runtime,
            shared: shared(),
            builder: connection::builder(&http_limits()),
        }
    }

    async fn serve(&self, data: &[u8]) -> Vec<u8> {
        let state = State::new(Arc::clone(&self.shared), config());
        let (client, server) = tokio::io::duplex(DUPLEX_BYTES);
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let driver = connection::serve(state, &self.builder, server, peer);
        let writer = async move {
            // The server may close first (a refusal that closes); the rest is not sent.
            if to_server.write_all(data).await.is_ok() {
                // Paused time moves only when every task waits: this sleep ends once the
                // server has done all it can with what it was sent.
                tokio::time::sleep(Duration::from_millis(1)).await;
                // A server that closed already needs no end of input: either way it is sent.
                match to_server.shutdown().await {
                    Ok(()) | Err(_) => {}
                }
            }
        };
        let reader = async move {
            let mut out = Vec::new();
            let mut chunk = [0_u8; 8192];
            loop {
                match from_server.read(&mut chunk).await {
                    Ok(0) | Err(_) => return out,
                    Ok(read) => {
                        out.extend_from_slice(chunk.get(..read).unwrap_or_default());
                        if out.len() > MAX_RESPONSE_BYTES {
                            fail("the responses to one input passed 1 MiB");
                        }
                    }
                }
            }
        };
        let served = tokio::time::timeout(DEADLINE, async {
            let (ended, (), out) = tokio::join!(driver, writer, reader);
            (ended, out)
        })
        .await;
        match served {
            Ok((Ended::Stalled, _)) => fail("a connection whose client reads stalled"),
            Ok((_, out)) => out,
            Err(_elapsed) => fail("one connection did not end within its deadline"),
        }
    }
}

/// The transport's configuration: the allow-list, the token, small limits.
fn config() -> HttpConfig {
    let tokens = Tokens::none()
        .with("fuzz", SecretString::from(TOKEN))
        .unwrap_or_else(|_| fail("the fuzz token is refused"));
    HttpConfig::new(allow_list(), tokens, http_limits())
}

/// The one origin listed for CORS: the server writes it (its configuration, not the
/// request) in `Access-Control-Allow-Origin`.
const LISTED_ORIGIN: &str = "https://app.fuzz.example";

/// The loopback names, one more host, and one origin listed for CORS.
fn allow_list() -> AllowList {
    AllowList::new(
        &["mcp.fuzz.example".to_owned()],
        &[LISTED_ORIGIN.to_owned()],
    )
}

fn http_limits() -> HttpLimits {
    let n = |n: usize| NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN);
    HttpLimits {
        first_request_timeout: Duration::from_secs(5),
        max_header_bytes: n(HEAD_CAP),
        max_headers: n(32),
        header_read_timeout: Duration::from_secs(2),
        body_read_timeout: Duration::from_secs(2),
        write_timeout: Duration::from_secs(5),
        max_sessions: n(3),
        max_sessions_per_client: n(2),
        client_call_rate: Some(Rate::new_const(60, 6)),
        client_request_rate: Some(Rate::new_const(120, 12)),
        client_in_flight: n(2),
        ..HttpLimits::default()
    }
}

/// The engine's shared state, built once: schema generation costs more than an input.
fn shared() -> Arc<Shared> {
    let limits = Limits {
        max_frame_bytes: NonZeroUsize::new(BODY_CAP).unwrap_or(NonZeroUsize::MIN),
        max_consecutive_errors: NonZeroU32::new(4).unwrap_or(NonZeroU32::MIN),
        max_in_flight: NonZeroUsize::new(2).unwrap_or(NonZeroUsize::MIN),
        ..Limits::default()
    };
    crate::test_server::with_everything(
        limits,
        crate::test_server::prompts(),
        crate::test_server::resources(),
    )
    .unwrap_or_else(|_| fail("the fuzz server's tools are invalid"))
}

/// Checks the response stream `out` the server wrote: whole
/// responses, each a status of [`STATUSES`], their JSON and SSE bodies JSON-RPC responses
/// with codes from the table. Returns the number of responses.
///
/// # Errors
///
/// The first broken invariant.
pub fn check_responses(out: &[u8]) -> Result<usize, String> {
    let mut rest = out;
    let mut count = 0_usize;
    while !rest.is_empty() {
        let (response, tail) = next_response(rest)?;
        check_response(&response)?;
        count = count.saturating_add(1);
        rest = tail;
    }
    Ok(count)
}

/// One parsed response.
struct Parsed {
    status: u16,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// The first response of `stream` and what follows it.
fn next_response(stream: &[u8]) -> Result<(Parsed, &[u8]), String> {
    let end = find(stream, b"\r\n\r\n").ok_or_else(|| {
        format!(
            "a response head does not end: {:?}",
            String::from_utf8_lossy(stream)
        )
    })?;
    let (head, after) = stream.split_at(end);
    let after = after.get(4..).unwrap_or_default();
    let head = std::str::from_utf8(head).map_err(|_| "a response head is not UTF-8".to_owned())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| format!("not a status line: {status_line:?}"))?;
    let mut content_type = None;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("not a header line: {line:?}"))?;
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-type" => content_type = Some(value.to_ascii_lowercase()),
            "content-length" => {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| format!("a bad content-length: {value:?}"))?,
                );
            }
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let no_body = status < 200 || status == 204 || status == 304;
    let (body, tail) = if no_body {
        (Vec::new(), after)
    } else if chunked {
        dechunk(after)?
    } else if let Some(length) = length {
        let (body, tail) = after
            .split_at_checked(length)
            .ok_or_else(|| format!("a {status} body is cut short"))?;
        (body.to_vec(), tail)
    } else {
        // Neither length nor chunks: the body runs to the close.
        (after.to_vec(), &[][..])
    };
    Ok((
        Parsed {
            status,
            content_type,
            body,
        },
        tail,
    ))
}

/// A chunked body and what follows it.
fn dechunk(mut stream: &[u8]) -> Result<(Vec<u8>, &[u8]), String> {
    let mut body = Vec::new();
    loop {
        let end = find(stream, b"\r\n").ok_or("a chunk size line does not end")?;
        let (size_line, rest) = stream.split_at(end);
        let rest = rest.get(2..).unwrap_or_default();
        let size_text = std::str::from_utf8(size_line).map_err(|_| "a chunk size is not text")?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or_default(), 16)
            .map_err(|_| format!("a bad chunk size: {size_text:?}"))?;
        if size == 0 {
            // No trailers are written: the empty line ends the body.
            let tail = rest
                .strip_prefix(b"\r\n")
                .ok_or("a chunked body does not end with an empty line")?;
            return Ok((body, tail));
        }
        let (chunk, rest) = rest.split_at_checked(size).ok_or("a chunk is cut short")?;
        body.extend_from_slice(chunk);
        stream = rest
            .strip_prefix(b"\r\n")
            .ok_or("a chunk does not end with CRLF")?;
    }
}

fn check_response(response: &Parsed) -> Result<(), String> {
    if !STATUSES.contains(&response.status) {
        return Err(format!(
            "status {} is not one the server writes",
            response.status
        ));
    }
    let kind = response.content_type.as_deref().unwrap_or_default();
    if kind.starts_with("application/json") {
        let mut line = response.body.clone();
        line.push(b'\n');
        let lines = check_messages(&line)?;
        if lines != 1 {
            return Err(format!("a JSON body holds {lines} messages, not one"));
        }
    } else if kind.starts_with("text/event-stream") {
        let text = std::str::from_utf8(&response.body).map_err(|_| "an SSE body is not UTF-8")?;
        for line in text.split('\n') {
            if let Some(data) = line.strip_prefix("data: ") {
                check_messages(format!("{data}\n").as_bytes())?;
            } else if !(line.is_empty() || line == "event: message") {
                return Err(format!("an SSE line that is not an event: {line:?}"));
            }
        }
    } else if !response.body.is_empty() {
        return Err(format!(
            "a {} body of {} bytes with content type {kind:?}",
            response.status,
            response.body.len()
        ));
    }
    Ok(())
}

/// [`crate::fuzzing::check_output`]'s invariants with every code of the error table (that one
/// checks the stdio codes, which lack `-32020`). Returns the number of lines.
fn check_messages(out: &[u8]) -> Result<usize, String> {
    crate::fuzzing::check_lines(out, crate::fuzzing::any_code).map_err(|broken| broken.to_string())
}

/// The headers whose values a response must never carry.
const SENSITIVE: [&str; 4] = ["authorization", "host", "origin", "mcp-session-id"];

/// Shortest value the echo check looks for: shorter ones occur by chance in fixed texts.
const MIN_ECHO_BYTES: usize = 12;

/// The values a response seems to echo: the configured token, and each value (at least
/// [`MIN_ECHO_BYTES`] long) of a header in [`SENSITIVE`] found in `sent`, when it occurs in
/// `out` but nowhere in `sent` outside those headers (a body's string may be echoed by the
/// echo tool, an id by design). An `Origin` the allow-list accepts is echoed by CORS by
/// design and not looked for, nor is a part of the listed origin (the server writes the
/// listed origin from its configuration, which masking the part in the request cannot
/// change: a request that had it listed no longer has). A value found here is an echo only if it depends on the
/// request: [`http`] replays the input with it masked.
pub fn echoes(sent: &[u8], out: &[u8]) -> Vec<Vec<u8>> {
    let allow = allow_list();
    let mut rest = Vec::with_capacity(sent.len());
    let mut values: Vec<Vec<u8>> = vec![TOKEN.as_bytes().to_vec()];
    for line in sent.split_inclusive(|&b| b == b'\n') {
        let trimmed = line.strip_suffix(b"\n").unwrap_or(line);
        let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
        let header = trimmed.iter().position(|&b| b == b':').and_then(|colon| {
            let (name, value) = trimmed.split_at(colon);
            let name = std::str::from_utf8(name).ok()?.trim().to_ascii_lowercase();
            SENSITIVE
                .contains(&name.as_str())
                .then(|| (name, value.get(1..).unwrap_or_default().trim_ascii()))
        });
        match header {
            Some((name, value)) => {
                let cors = name == "origin"
                    && HeaderValue::from_bytes(value).is_ok_and(|v| allow.origin(Some(&v)));
                if !cors {
                    values.push(value.to_vec());
                    // `Bearer <token>`: the token alone, too.
                    if let Some(token) = value.strip_prefix(b"Bearer ") {
                        values.push(token.trim_ascii().to_vec());
                    }
                }
            }
            None => rest.extend_from_slice(line),
        }
    }
    values.retain(|value| {
        value.len() >= MIN_ECHO_BYTES && !contains(LISTED_ORIGIN.as_bytes(), value)
    });
    values.sort();
    values.dedup();
    values
        .into_iter()
        .filter(|value| contains(out, value) && !contains(&rest, value))
        .collect()
}

/// `sent` with `value` replaced, by as many bytes that are not in it, wherever it is the
/// whole value of a header in [`SENSITIVE`] (or the token of `Bearer <token>`): the request
/// as it would be with another value there, and nothing else changed. (Replacing every
/// occurrence would also break the text around it, such as `Authorization: application/json`
/// for the value `: application/json`, and change replies for that reason alone.)
fn mask(sent: &[u8], value: &[u8]) -> Vec<u8> {
    let filler = if value.contains(&b'q') { b'z' } else { b'q' };
    let mut masked = Vec::with_capacity(sent.len());
    for line in sent.split_inclusive(|&b| b == b'\n') {
        let start = masked.len();
        masked.extend_from_slice(line);
        let Some(span) = header_value(line) else {
            continue;
        };
        let token = line
            .get(span.clone())
            .and_then(|text| text.strip_prefix(b"Bearer "))
            .map(<[u8]>::trim_ascii);
        let target = if line.get(span.clone()) == Some(value) {
            Some(span)
        } else if token == Some(value) {
            // The token is the value's tail (it was trimmed, and the value ends the span).
            Some(span.end.saturating_sub(value.len())..span.end)
        } else {
            None
        };
        for at in target.into_iter().flatten() {
            if let Some(byte) = masked.get_mut(start.saturating_add(at)) {
                *byte = filler;
            }
        }
    }
    masked
}

/// Where the value of a header in [`SENSITIVE`] is in `line`, trimmed, if it is one.
fn header_value(line: &[u8]) -> Option<std::ops::Range<usize>> {
    let colon = line.iter().position(|&b| b == b':')?;
    let name = std::str::from_utf8(line.get(..colon)?).ok()?.trim();
    if !SENSITIVE.contains(&name.to_ascii_lowercase().as_str()) {
        return None;
    }
    let after = colon.saturating_add(1);
    let rest = line.get(after..)?;
    let lead = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let trimmed = rest.trim_ascii();
    let begin = after.saturating_add(lead);
    Some(begin..begin.saturating_add(trimmed.len()))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

#[expect(clippy::panic, reason = "a fuzz finding is reported by panicking")]
fn fail(broken: &str) -> ! {
    panic!("{broken}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK_JSON: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 36\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";

    #[test]
    fn corpus_replays_http() {
        assert!(crate::fuzzing::tests::replay("http", http) > 0);
    }

    fn seed(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/http")
            .join(name);
        std::fs::read(path).unwrap()
    }

    fn statuses(out: &[u8]) -> Vec<u16> {
        let mut rest = out;
        let mut statuses = Vec::new();
        while !rest.is_empty() {
            let (response, tail) = next_response(rest).unwrap();
            statuses.push(response.status);
            rest = tail;
        }
        statuses
    }

    /// The harness reaches the engine: the seeds are answered past the boundary's checks.
    #[test]
    fn the_seeds_reach_the_engine_and_each_check() {
        for (name, want, holds) in [
            ("modern-call-echo", vec![200], &b"hello"[..]),
            ("modern-call-sse", vec![200], b"event: message\ndata: "),
            ("modern-call-fail", vec![200], b"\"isError\":true"),
            ("legacy-initialize", vec![200], b"mcp-session-id: "),
            ("legacy-no-session", vec![400], b"-32600"),
            (
                "pipelined",
                vec![200, 405, 200, 400, 400],
                b"\"text\":\"p\"",
            ),
            ("bad-host", vec![421], b""),
            ("bad-origin", vec![403], b""),
            ("wrong-token", vec![401], b"error=\"invalid_token\""),
            ("huge-header", vec![431], b""),
            ("body-over-cap", vec![413], b""),
            ("declared-over-cap", vec![413], b""),
            ("expect-continue", vec![100, 400], b"send initialize first"),
            (
                "preflight",
                vec![204],
                b"access-control-allow-origin: https://app.fuzz.example",
            ),
            ("chunked-body", vec![400], b"\"id\":1,"),
            ("delete-session", vec![404], b""),
            ("not-found", vec![404], b""),
            ("cut-off", vec![400, 400, 400, 400, 429], b""),
        ] {
            let out = serve_bytes(&seed(name));
            assert_eq!(
                statuses(&out),
                want,
                "{name}: {}",
                String::from_utf8_lossy(&out)
            );
            assert!(
                contains(&out, holds),
                "{name}: {}",
                String::from_utf8_lossy(&out)
            );
        }
    }

    #[test]
    fn the_oracle_accepts_whole_responses_of_the_table() {
        let mut stream = OK_JSON.to_vec();
        stream.extend_from_slice(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
        stream.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        stream.extend_from_slice(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
              3b\r\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n\r\n0\r\n\r\n",
        );
        assert_eq!(check_responses(&stream), Ok(4));
        assert_eq!(check_responses(b""), Ok(0));
    }

    #[test]
    fn the_oracle_rejects_a_status_outside_the_table() {
        let teapot = b"HTTP/1.1 418 I'm a teapot\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(
            check_responses(teapot),
            Err("status 418 is not one the server writes".to_owned())
        );
        assert!(check_responses(b"HTTP/2 200 OK\r\n\r\n").is_err());
        assert!(check_responses(b"garbage").is_err());
    }

    #[test]
    fn the_oracle_rejects_a_body_that_is_not_one_json_rpc_response() {
        for body in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":7,\"message\":\"x\"}}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1}",
            b"not json at all",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",
        ] {
            let mut stream = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            stream.extend_from_slice(body);
            assert!(check_responses(&stream).is_err(), "{:?}", String::from_utf8_lossy(body));
        }
        let sse = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 27\r\n\r\nevent: message\ndata: [1]\n\n";
        assert!(check_responses(sse).is_err());
        let cut = &OK_JSON[..OK_JSON.len() - 1];
        assert_eq!(
            check_responses(cut),
            Err("a 200 body is cut short".to_owned())
        );
        let untyped = b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nhi";
        assert!(check_responses(untyped).is_err());
    }

    #[test]
    fn the_echo_check_finds_a_header_value_only_the_headers_carried() {
        let sent = b"POST /mcp HTTP/1.1\r\nHost: evil-rebind-host.example\r\nOrigin: http://localhost:3000\r\n\r\n{\"id\":\"in-the-body-0123\"}";
        let out = b"HTTP/1.1 421 x\r\n\r\nevil-rebind-host.example http://localhost:3000 in-the-body-0123";
        assert_eq!(
            echoes(sent, out),
            vec![b"evil-rebind-host.example".to_vec()]
        );
        // The token is never to be written, asked for or not.
        assert_eq!(
            echoes(b"", format!("x{TOKEN}x").as_bytes()),
            vec![TOKEN.as_bytes().to_vec()]
        );
        // A value the body carries too may be echoed (by the echo tool, or as the id).
        let sent = b"GET / HTTP/1.1\r\nMcp-Session-Id: the-same-value-42\r\n\r\nthe-same-value-42";
        assert!(echoes(sent, b"the-same-value-42").is_empty());
        // Too short to tell from a fixed text.
        assert!(echoes(b"Host: short\r\n", b"short").is_empty());
    }

    #[test]
    fn a_part_of_the_listed_origin_is_not_an_echo() {
        // CI's finding: a granted preflight (which writes the listed origin), then a line
        // carrying the listed origin's first 17 bytes. Masking that part masks the
        // preflight's origin too, so the grant and its header went away: not an echo.
        let sent = b"OPTIONS /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: https://app.fuzz.example\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, authorization, mcp-protocol-version\r\n\r\nOrigin: https://app.fuzz.\n";
        http(sent);
        let out =
            b"HTTP/1.1 204 x\r\naccess-control-allow-origin: https://app.fuzz.example\r\n\r\n";
        assert!(echoes(b"Origin: https://app.fuzz.\r\n", out).is_empty());
        // A value longer than the listed origin is still looked for.
        let sent = b"Origin: https://app.fuzz.example.evil\r\n";
        assert_eq!(
            echoes(sent, b"https://app.fuzz.example.evil"),
            vec![b"https://app.fuzz.example.evil".to_vec()]
        );
    }

    #[test]
    #[should_panic(expected = "a response echoes a request's header value")]
    fn an_echo_that_depends_on_the_request_is_a_finding() {
        // The masked replay decides; a value that a fixed text holds is not an echo, so this
        // plants one the server never writes by itself: the oracle must see it in a reply to
        // a Host the server does echo. No such reply exists, so the finding is made by hand.
        let sent = b"GET / HTTP/1.1\r\nHost: planted-host-value-77\r\n\r\n";
        let out = b"HTTP/1.1 404 Not Found\r\n\r\nplanted-host-value-77";
        for value in echoes(sent, out) {
            if !contains(&serve_bytes(&mask(sent, &value)), &value) {
                fail(&format!(
                    "a response echoes a request's header value {:?}",
                    String::from_utf8_lossy(&value)
                ));
            }
        }
    }

    #[test]
    fn a_value_a_fixed_text_holds_is_not_an_echo() {
        // `Host: application/json`: refused (421), and the reply's content type is that text.
        http(b"POST /mcp HTTP/1.1\r\nHost: application/json\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    }

    #[test]
    fn masking_replaces_a_whole_header_value_with_bytes_not_in_it() {
        assert_eq!(
            mask(b"Host: a\r\nX: a\r\nHost: ab\r\n", b"a"),
            b"Host: q\r\nX: a\r\nHost: ab\r\n".to_vec()
        );
        assert_eq!(mask(b"Origin:  qq \n", b"qq"), b"Origin:  zz \n".to_vec());
        assert_eq!(
            mask(b"Authorization: Bearer tok\r\n", b"tok"),
            b"Authorization: Bearer qqq\r\n".to_vec()
        );
    }

    #[test]
    fn a_value_that_straddles_a_header_name_is_not_an_echo() {
        // The http target's finding: `Host: : application/json` beside
        // `Authorization: application/json` lines. Masking every occurrence of the value
        // broke those lines (so the replies changed); the value is the server's own
        // `content-type: application/json`, not an echo.
        http(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: application/json\r\n\r\nPOST /mcp HTTP/1.1\r\nHost: : application/json\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    }
}
