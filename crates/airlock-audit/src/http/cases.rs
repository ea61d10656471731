//! The HTTP transport's cases: what each sends, what a correct server does, and how bad each
//! departure is.
//!
//! Levels: accepting a rebinding `Host`, a foreign `Origin`, an unknown or deleted session,
//! or a modern header that disagrees with the body is `high` (each lets a web page, a guesser
//! or a header-routing proxy past a check); waiting on a body or head the server should have
//! refused, keeping slow or idle connections open past the case's budget, or accepting a
//! batch is `medium`; a refusal with another status or code than the specification's is
//! `low`. A server that stops answering is the follow-up's critical finding.

use std::time::{Duration, Instant};

use serde_json::json;

use super::wire::{Response, WireError};
use super::{Ctx, Request, found, pass, status_and_code};
use crate::cases::Judgement;
use crate::severity::Severity;

/// Which servers a case applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    /// Every server.
    Any,
    /// Servers that complete a 2025-11-25 `initialize`.
    Legacy,
    /// Servers that serve 2026-07-28 requests.
    Modern,
}

/// One HTTP case.
pub(crate) struct HttpCase {
    /// `http.name`, `http.legacy.name` or `http.modern.name`.
    pub(crate) id: &'static str,
    /// What it sends.
    pub(crate) sends: &'static str,
    /// What a correct server does.
    pub(crate) expects: &'static str,
    /// Which servers it applies to.
    pub(crate) era: Era,
    /// Left out by `--quick`.
    pub(crate) slow: bool,
    /// Its time limit, in case timeouts.
    pub(crate) budget: u32,
    /// The case.
    pub(crate) run: fn(&mut Ctx<'_>) -> Judgement,
}

const fn case(
    id: &'static str,
    era: Era,
    sends: &'static str,
    expects: &'static str,
    run: fn(&mut Ctx<'_>) -> Judgement,
) -> HttpCase {
    HttpCase {
        id,
        sends,
        expects,
        era,
        slow: false,
        budget: 1,
        run,
    }
}

const fn slow(mut case: HttpCase, budget: u32) -> HttpCase {
    case.slow = true;
    case.budget = budget;
    case
}

/// Every HTTP case, in report order.
pub(crate) fn catalogue() -> Vec<HttpCase> {
    use Era::{Any, Legacy, Modern};
    vec![
        case(
            "http.host-rebinding",
            Any,
            "a valid request with Host: evil.example.com, then Host: localhost.evil.example",
            "421 (or 403/400): a DNS-rebinding page reaches a loopback server under a foreign Host",
            host_rebinding,
        ),
        case(
            "http.host-missing",
            Any,
            "a valid HTTP/1.1 request with no Host header",
            "400 (HTTP/1.1 requires Host)",
            host_missing,
        ),
        case(
            "http.origin-foreign",
            Any,
            "a valid request with Origin: http://evil.example.com",
            "403 (MUST, 2025-11-25): a web page on another origin may not drive the server",
            |ctx| origin(ctx, "http://evil.example.com"),
        ),
        case(
            "http.origin-null",
            Any,
            "a valid request with Origin: null (a sandboxed page or a file)",
            "403",
            |ctx| origin(ctx, "null"),
        ),
        case(
            "http.body-declared-huge",
            Any,
            "Content-Length: 104857600 and a few bytes of body, then nothing",
            "413 at once, without waiting for the body",
            body_declared_huge,
        ),
        case(
            "http.body-chunked-huge",
            Any,
            "a chunked body of spaces, 64 KiB a chunk, up to 64 MiB",
            "413 as soon as the body passes the server's cap, the rest unread",
            body_chunked_huge,
        ),
        case(
            "http.head-huge",
            Any,
            "a valid request with a 1 MiB header field",
            "431 (or 400), or the connection closed",
            head_huge,
        ),
        case(
            "http.headers-many",
            Any,
            "a valid request with 5,000 header fields",
            "431 (or 400), or the connection closed",
            headers_many,
        ),
        case(
            "http.batch",
            Any,
            "a JSON array holding one valid request",
            "400 with -32600 (batches are gone since 2025-06-18)",
            batch,
        ),
        case(
            "http.not-json",
            Any,
            "a body that is not JSON: {\"jsonrpc\":",
            "400 with -32700",
            not_json,
        ),
        case(
            "http.content-type",
            Any,
            "a valid request with Content-Type: text/plain",
            "415 (or 400): a simple cross-site form post must not be served",
            content_type,
        ),
        case(
            "http.method-put",
            Any,
            "PUT to the endpoint",
            "405",
            method_put,
        ),
        case(
            "http.slow-heads-others-served",
            Any,
            "32 connections each holding half a request head, then a valid request",
            "the valid request answered: slow clients do not lock others out",
            slow_heads_others_served,
        ),
        slow(
            case(
                "http.slow-head",
                Any,
                "a request head trickled one byte every 200 ms (slowloris)",
                "the connection closed (or 408) well within 4 case timeouts",
                slow_head,
            ),
            4,
        ),
        slow(
            case(
                "http.slow-body",
                Any,
                "a whole head with Content-Length: 1000, the body trickled one byte every 200 ms",
                "408 or the connection closed well within 4 case timeouts",
                slow_body,
            ),
            4,
        ),
        slow(
            case(
                "http.idle",
                Any,
                "a connection that sends nothing",
                "closed by the server within 4 case timeouts",
                idle,
            ),
            4,
        ),
        slow(
            case(
                "http.idle-keep-alive",
                Any,
                "a valid keep-alive request, then nothing on the connection",
                "closed by the server within 4 case timeouts",
                idle_keep_alive,
            ),
            4,
        ),
        case(
            "http.legacy.session-missing",
            Legacy,
            "tools/list with MCP-Protocol-Version but no Mcp-Session-Id",
            "400 (SHOULD, a server that requires sessions)",
            session_missing,
        ),
        case(
            "http.legacy.session-unknown",
            Legacy,
            "tools/list with an Mcp-Session-Id the server never minted",
            "404",
            session_unknown,
        ),
        case(
            "http.legacy.session-huge",
            Legacy,
            "tools/list with an 8 KiB Mcp-Session-Id",
            "404, 400 or 431",
            session_huge,
        ),
        case(
            "http.legacy.session-deleted",
            Legacy,
            "DELETE of a session, then tools/list with its id",
            "DELETE 2xx (or 405), then 404 (MUST)",
            session_deleted,
        ),
        case(
            "http.legacy.session-ids",
            Legacy,
            "two initialize requests",
            "two different session ids of visible ASCII, at least 16 characters",
            session_ids,
        ),
        case(
            "http.legacy.task-of-another-session",
            Legacy,
            "session A calls a read-only tool that may run as a task (params.task); session B \
             asks tasks/get, tasks/result, tasks/cancel and tasks/list about A's task, and about \
             an id never issued",
            "to B, A's task is exactly what an id never issued is (the same error), and no \
             listing names it (without a token, each session is its own owner)",
            task_of_another_session,
        ),
        case(
            "http.legacy.version-header-unknown",
            Legacy,
            "tools/list in a session with MCP-Protocol-Version: 2099-01-01",
            "400 (MUST)",
            version_header_unknown,
        ),
        case(
            "http.legacy.notification",
            Legacy,
            "a notification in a session",
            "202 with no body (never a JSON-RPC reply)",
            notification,
        ),
        case(
            "http.modern.method-header-other",
            Modern,
            "tools/list with Mcp-Method: server/discover",
            "400 with -32020 (header and body disagree)",
            |ctx| {
                let request = ctx
                    .modern("tools/list", json!({}))
                    .set("Mcp-Method", "server/discover");
                disagreeing(ctx, &request, Severity::High)
            },
        ),
        case(
            "http.modern.method-header-missing",
            Modern,
            "tools/list without Mcp-Method",
            "400 with -32020",
            |ctx| {
                let request = ctx.modern("tools/list", json!({})).remove("Mcp-Method");
                disagreeing(ctx, &request, Severity::Medium)
            },
        ),
        case(
            "http.modern.version-header-other",
            Modern,
            "a 2026-07-28 tools/list with MCP-Protocol-Version: 2025-11-25",
            "400 with -32020 (header and _meta disagree)",
            |ctx| {
                let request = ctx
                    .modern("tools/list", json!({}))
                    .set("MCP-Protocol-Version", crate::session::PROTOCOL_VERSION);
                disagreeing(ctx, &request, Severity::High)
            },
        ),
        case(
            "http.modern.version-header-missing",
            Modern,
            "a 2026-07-28 tools/list without MCP-Protocol-Version",
            "400 with -32020",
            |ctx| {
                let request = ctx
                    .modern("tools/list", json!({}))
                    .remove("MCP-Protocol-Version");
                disagreeing(ctx, &request, Severity::Low)
            },
        ),
        case(
            "http.modern.name-header-other",
            Modern,
            "tools/call of the first tool, with Mcp-Name naming another",
            "400 with -32020, the tool not called",
            name_header_other,
        ),
        case(
            "http.modern.header-repeated",
            Modern,
            "a 2026-07-28 request with Mcp-Name, then Mcp-Method, then MCP-Protocol-Version \
             sent twice (the body's value, then another)",
            "400 with -32020 each time: a gateway reading the last value and the server the \
             first would see two different requests",
            header_repeated,
        ),
        case(
            "http.modern.name-header-prompt",
            Modern,
            "prompts/get with Mcp-Name naming another prompt than the body's",
            "400 with -32020 (Mcp-Name copies params.name of prompts/get)",
            |ctx| {
                let request = ctx
                    .modern("prompts/get", json!({"name": "airlock-audit-prompt"}))
                    .set("Mcp-Name", "airlock-audit-other-prompt");
                disagreeing(ctx, &request, Severity::High)
            },
        ),
        case(
            "http.modern.name-header-resource",
            Modern,
            "resources/read with Mcp-Name naming another URI than the body's",
            "400 with -32020 (Mcp-Name copies params.uri of resources/read)",
            |ctx| {
                let request = ctx
                    .modern(
                        "resources/read",
                        json!({"uri": "file:///airlock-audit/resource"}),
                    )
                    .set("Mcp-Name", "file:///airlock-audit/other");
                disagreeing(ctx, &request, Severity::High)
            },
        ),
        case(
            "http.modern.name-header-encoding",
            Modern,
            "tools/call of the first tool with Mcp-Name as =?BASE64?…?= (upper case)",
            "400 with -32020: only =?base64?…?= (lower case, standard alphabet, padded) decodes",
            name_header_encoding,
        ),
        case(
            "http.modern.unknown-method",
            Modern,
            "a 2026-07-28 request of an unknown method",
            "404 with -32601",
            unknown_method,
        ),
        case(
            "http.modern.get",
            Modern,
            "GET with MCP-Protocol-Version: 2026-07-28",
            "405 (no GET stream in 2026-07-28)",
            modern_get,
        ),
        case(
            "http.modern.session-ignored",
            Modern,
            "a 2026-07-28 server/discover with Mcp-Session-Id: a made-up id",
            "200: the header ignored, no session id minted",
            session_ignored,
        ),
        slow(
            case(
                "http.partial-bodies",
                Any,
                "32 connections each declaring a 1 MiB body and sending half of it, held open",
                "some refused before their bytes are held (429 or 503, or 413 for a smaller \
                 cap): bytes held in partial bodies are bounded per client",
                partial_bodies,
            ),
            8,
        ),
        // Last: a server that keys pages apart cuts the audit's page traffic off for a while.
        slow(
            case(
                "http.page-lockout",
                Any,
                "300 image requests (GET /airlock-audit.png, Sec-Fetch-Mode: no-cors) and 300 \
                 POSTs with a foreign Origin, then a valid request without Origin from the same \
                 address",
                "the valid request served: what a web page makes a browser send does not count \
                 toward the cut-off or quota of a local client at the same address",
                page_lockout,
            ),
            8,
        ),
    ]
}

/// How an exchange went, for cases that expect a refusal.
struct Refusal<'a> {
    /// Statuses that pass.
    want: &'a [u16],
    /// JSON-RPC codes that pass (empty: any body).
    codes: &'a [i64],
    /// How bad a `2xx` is.
    accepted: Severity,
    /// What the refused thing is, for the detail.
    what: &'a str,
}

impl Refusal<'_> {
    fn judge(&self, outcome: Result<Response, WireError>) -> Judgement {
        match outcome {
            Ok(response) if self.want.contains(&response.status) => match response.rpc_code() {
                Some(code) if !self.codes.is_empty() && !self.codes.contains(&code) => found(
                    Severity::Low,
                    format!(
                        "{}: answered {}, not the expected code",
                        self.what,
                        status_and_code(&response)
                    ),
                ),
                _ => pass(format!(
                    "{}: answered {}",
                    self.what,
                    status_and_code(&response)
                )),
            },
            Ok(response) if (200..300).contains(&response.status) => found(
                self.accepted,
                format!("{}: accepted ({})", self.what, status_and_code(&response)),
            ),
            Ok(response) if response.status >= 500 => found(
                Severity::Medium,
                format!(
                    "{}: a server error ({}) for a client's mistake",
                    self.what,
                    status_and_code(&response)
                ),
            ),
            Ok(response) => found(
                Severity::Low,
                format!(
                    "{}: refused with {}, not the status the specification gives",
                    self.what,
                    status_and_code(&response)
                ),
            ),
            Err(WireError::Timeout) => found(
                Severity::Medium,
                format!("{}: no response within the time limit", self.what),
            ),
            Err(WireError::Closed | WireError::Connect) => found(
                Severity::Low,
                format!(
                    "{}: the connection was closed without a response (a client learns nothing)",
                    self.what
                ),
            ),
            Err(error @ (WireError::HeadTooLong | WireError::Malformed)) => found(
                Severity::High,
                format!("{}: {}", self.what, error.describe()),
            ),
        }
    }
}

/// The worse of two judgements (the first on a tie).
fn worse(first: Judgement, second: Judgement) -> Judgement {
    if second.severity > first.severity {
        second
    } else {
        first
    }
}

fn host_rebinding(ctx: &mut Ctx<'_>) -> Judgement {
    let refusal = Refusal {
        want: &[421, 403, 400],
        codes: &[],
        accepted: Severity::High,
        what: "Host: evil.example.com",
    };
    let request = ctx.opening().set("Host", "evil.example.com");
    let first = refusal.judge(ctx.send(&request));
    let port = ctx.endpoint.addr.port();
    let host = format!("localhost.evil.example:{port}");
    let request = ctx.opening().set("Host", &host);
    let second = Refusal {
        what: "Host: localhost.evil.example",
        ..refusal
    }
    .judge(ctx.send(&request));
    worse(first, second)
}

fn host_missing(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx.opening().remove("Host");
    Refusal {
        want: &[400, 421, 403],
        codes: &[],
        accepted: Severity::Medium,
        what: "no Host",
    }
    .judge(ctx.send(&request))
}

fn origin(ctx: &mut Ctx<'_>, origin: &str) -> Judgement {
    let request = ctx.opening().set("Origin", origin);
    let what = format!("Origin: {origin}");
    Refusal {
        want: &[403],
        codes: &[],
        accepted: Severity::High,
        what: &what,
    }
    .judge(ctx.send(&request))
}

fn body_declared_huge(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx
        .request("POST", b"{\"jsonrpc\":".to_vec())
        .set("Content-Length", "104857600");
    Refusal {
        want: &[413],
        codes: &[],
        accepted: Severity::Medium,
        what: "a 100 MiB Content-Length",
    }
    .judge(ctx.send(&request))
}

fn body_chunked_huge(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx
        .request("POST", Vec::new())
        .set("Transfer-Encoding", "chunked");
    let deadline = ctx.exchange_deadline();
    let mut connection = match ctx.connect() {
        Ok(connection) => connection,
        Err(error) => return found(Severity::Critical, error.describe()),
    };
    let mut whole = connection
        .write(&request.head(&ctx.endpoint.path), deadline)
        .is_ok();
    let mut chunk = format!("{:x}\r\n", CHUNK_BYTES).into_bytes();
    chunk.extend(std::iter::repeat_n(b' ', CHUNK_BYTES));
    chunk.extend_from_slice(b"\r\n");
    let mut sent: usize = 0;
    while whole && sent < HUGE_BODY_BYTES {
        whole = connection.write(&chunk, deadline).is_ok();
        sent = sent.saturating_add(CHUNK_BYTES);
    }
    if whole {
        whole = connection.write(b"0\r\n\r\n", deadline).is_ok();
    }
    let outcome = connection.read_response(deadline);
    if let Ok(response) = &outcome {
        ctx.look(response);
        if whole && response.status != 413 {
            return found(
                Severity::Medium,
                format!(
                    "read a 64 MiB chunked body whole, then answered {}",
                    status_and_code(response)
                ),
            );
        }
    }
    Refusal {
        want: &[413],
        codes: &[],
        accepted: Severity::Medium,
        what: "a 64 MiB chunked body",
    }
    .judge(outcome)
}

fn head_huge(ctx: &mut Ctx<'_>) -> Judgement {
    let filler = "x".repeat(1024 * 1024);
    let request = ctx.opening().set("X-Filler", &filler);
    capped_head(ctx, &request, "a 1 MiB header field")
}

fn headers_many(ctx: &mut Ctx<'_>) -> Judgement {
    let mut request = ctx.opening();
    for index in 0..5000 {
        request
            .headers
            .push((format!("X-Filler-{index}"), "x".to_owned()));
    }
    capped_head(ctx, &request, "5,000 header fields")
}

/// A head over any sane cap: refused, or the connection closed.
fn capped_head(ctx: &mut Ctx<'_>, request: &Request, what: &str) -> Judgement {
    match ctx.send(request) {
        Err(WireError::Closed) => pass(format!("{what}: the connection was closed")),
        outcome => Refusal {
            want: &[431, 400, 413],
            codes: &[],
            accepted: Severity::Medium,
            what,
        }
        .judge(outcome),
    }
}

fn batch(ctx: &mut Ctx<'_>) -> Judgement {
    let inner = ctx.opening();
    let mut body = b"[".to_vec();
    body.extend_from_slice(&inner.body);
    body.push(b']');
    let request = Request { body, ..inner };
    let outcome = ctx.send(&request);
    if let Ok(response) = &outcome
        && response.messages().iter().any(serde_json::Value::is_array)
    {
        return found(
            Severity::Medium,
            "a batch accepted: answered with an array of replies",
        );
    }
    Refusal {
        want: &[400],
        codes: &[-32600],
        accepted: Severity::Medium,
        what: "a batch",
    }
    .judge(outcome)
}

fn not_json(ctx: &mut Ctx<'_>) -> Judgement {
    let inner = ctx.opening();
    let request = Request {
        body: b"{\"jsonrpc\":".to_vec(),
        ..inner
    };
    Refusal {
        want: &[400],
        codes: &[-32700],
        accepted: Severity::Medium,
        what: "a body that is not JSON",
    }
    .judge(ctx.send(&request))
}

fn content_type(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx.opening().set("Content-Type", "text/plain");
    Refusal {
        want: &[415, 400],
        codes: &[],
        accepted: Severity::Low,
        what: "Content-Type: text/plain",
    }
    .judge(ctx.send(&request))
}

fn method_put(ctx: &mut Ctx<'_>) -> Judgement {
    let inner = ctx.opening();
    let request = Request {
        method: "PUT".to_owned(),
        ..inner
    };
    Refusal {
        want: &[405],
        codes: &[],
        accepted: Severity::Low,
        what: "PUT",
    }
    .judge(ctx.send(&request))
}

fn slow_heads_others_served(ctx: &mut Ctx<'_>) -> Judgement {
    let partial = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n",
        ctx.endpoint.path, ctx.endpoint.authority
    );
    let deadline = ctx.exchange_deadline();
    let mut held = Vec::new();
    for _ in 0..SLOW_CONNECTIONS {
        let Ok(mut connection) = ctx.connect() else {
            break;
        };
        if connection.write(partial.as_bytes(), deadline).is_ok() {
            held.push(connection);
        }
    }
    let request = ctx.opening();
    let outcome = ctx.send(&request);
    drop(held);
    match outcome {
        Ok(response)
            if response.status == 200
                && response
                    .rpc()
                    .is_some_and(|rpc| rpc.get("result").is_some()) =>
        {
            pass(format!(
                "a valid request was answered while {SLOW_CONNECTIONS} slow heads were open"
            ))
        }
        Ok(response) => found(
            Severity::High,
            format!(
                "while {SLOW_CONNECTIONS} slow heads were open, a valid request got {}",
                status_and_code(&response)
            ),
        ),
        Err(error) => found(
            Severity::High,
            format!(
                "while {SLOW_CONNECTIONS} slow heads were open, a valid request got {}",
                error.describe()
            ),
        ),
    }
}

fn slow_head(ctx: &mut Ctx<'_>) -> Judgement {
    let head = ctx.opening().head(&ctx.endpoint.path);
    trickle(ctx, &head, "a trickled head")
}

fn slow_body(ctx: &mut Ctx<'_>) -> Judgement {
    let mut bytes = ctx
        .request("POST", Vec::new())
        .set("Content-Length", "1000")
        .head(&ctx.endpoint.path);
    bytes.extend(std::iter::repeat_n(b' ', 1000));
    let head_len = bytes.len().saturating_sub(1000);
    let Some((head, body)) = bytes.split_at_checked(head_len) else {
        return found(Severity::Info, "could not build the request");
    };
    let mut connection = match ctx.connect() {
        Ok(connection) => connection,
        Err(error) => return found(Severity::Critical, error.describe()),
    };
    if connection.write(head, ctx.deadline).is_err() {
        return pass("the connection was closed at the head");
    }
    trickle_on(ctx, connection, body, "a trickled body")
}

/// Trickles `bytes` on a new connection; the server must end it before the case's deadline.
fn trickle(ctx: &mut Ctx<'_>, bytes: &[u8], what: &str) -> Judgement {
    match ctx.connect() {
        Ok(connection) => trickle_on(ctx, connection, bytes, what),
        Err(error) => found(Severity::Critical, error.describe()),
    }
}

fn trickle_on(
    ctx: &mut Ctx<'_>,
    mut connection: super::wire::Connection,
    bytes: &[u8],
    what: &str,
) -> Judgement {
    let started = Instant::now();
    for byte in bytes {
        if Instant::now() >= ctx.deadline {
            break;
        }
        if connection
            .write(std::slice::from_ref(byte), ctx.deadline)
            .is_err()
        {
            return pass(format!(
                "{what}: the server closed the connection after {} ms",
                started.elapsed().as_millis()
            ));
        }
        let pause = Instant::now()
            .checked_add(TRICKLE_PAUSE)
            .map_or(ctx.deadline, |end| end.min(ctx.deadline));
        if connection.closed_by_server(pause) {
            return pass(format!(
                "{what}: the server closed the connection after {} ms",
                started.elapsed().as_millis()
            ));
        }
    }
    if connection.closed_by_server(ctx.deadline) {
        return pass(format!("{what}: the server ended the connection"));
    }
    found(
        Severity::Medium,
        format!(
            "{what}: the connection was still open after {} ms (each such client holds a slot)",
            started.elapsed().as_millis()
        ),
    )
}

fn idle(ctx: &mut Ctx<'_>) -> Judgement {
    let started = Instant::now();
    let mut connection = match ctx.connect() {
        Ok(connection) => connection,
        Err(error) => return found(Severity::Critical, error.describe()),
    };
    if connection.closed_by_server(ctx.deadline) {
        pass(format!(
            "closed by the server after {} ms",
            started.elapsed().as_millis()
        ))
    } else {
        found(
            Severity::Medium,
            format!(
                "an idle connection was still open after {} ms",
                started.elapsed().as_millis()
            ),
        )
    }
}

fn idle_keep_alive(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx.opening().set("Connection", "keep-alive");
    let mut connection = match ctx.connect() {
        Ok(connection) => connection,
        Err(error) => return found(Severity::Critical, error.describe()),
    };
    let mut bytes = request.head(&ctx.endpoint.path);
    bytes.extend_from_slice(&request.body);
    let deadline = ctx.exchange_deadline();
    if connection.write(&bytes, deadline).is_err() {
        return found(Severity::Medium, "the request could not be written");
    }
    match connection.read_response(deadline) {
        Ok(response) => ctx.look(&response),
        Err(error) => {
            return found(
                Severity::Medium,
                format!("a valid keep-alive request: {}", error.describe()),
            );
        }
    }
    let started = Instant::now();
    if connection.closed_by_server(ctx.deadline) {
        pass(format!(
            "closed by the server {} ms after its response",
            started.elapsed().as_millis()
        ))
    } else {
        found(
            Severity::Medium,
            format!(
                "an idle keep-alive connection was still open {} ms after its response",
                started.elapsed().as_millis()
            ),
        )
    }
}

/// Opens a session for a session case; `Err` is the judgement when that fails or the server
/// uses no sessions.
fn session_of(ctx: &mut Ctx<'_>) -> Result<String, Judgement> {
    if !ctx.eras.sessions {
        return Err(found(
            Severity::Info,
            "the server mints no Mcp-Session-Id: session cases do not apply",
        ));
    }
    match ctx.open_session() {
        Ok(Some(session)) => Ok(session),
        Ok(None) => Err(found(
            Severity::Medium,
            "initialize minted no session id this time (it did at the start)",
        )),
        Err(why) => Err(found(
            Severity::Critical,
            format!("opening a session: {why}"),
        )),
    }
}

/// A tool of `tools/list` this case may call: marked read-only, able to run as a task, and
/// needing no argument.
fn callable_as_task(tool: &serde_json::Value) -> Option<&str> {
    let read_only = tool.pointer("/annotations/readOnlyHint") == Some(&json!(true));
    let as_task = matches!(
        tool.pointer("/execution/taskSupport")
            .and_then(serde_json::Value::as_str),
        Some("optional" | "required")
    );
    let needs_nothing = tool
        .pointer("/inputSchema/required")
        .and_then(serde_json::Value::as_array)
        .is_none_or(Vec::is_empty);
    (read_only && as_task && needs_nothing)
        .then(|| tool.get("name")?.as_str())
        .flatten()
}

/// The error of a JSON-RPC reply (code and message), or `None` for anything else.
fn error_of(response: &Response) -> Option<(i64, String)> {
    let rpc = response.rpc()?;
    let error = rpc.get("error")?;
    Some((
        error.get("code")?.as_i64()?,
        error.get("message")?.as_str()?.to_owned(),
    ))
}

/// Without a token, two legacy sessions are two owners: what one created must be, to the
/// other, what an id never issued is, for every method, or the answer is an oracle (or
/// worse, the task).
fn task_of_another_session(ctx: &mut Ctx<'_>) -> Judgement {
    if ctx.endpoint.headers.iter().any(super::Header::identifies) {
        return found(
            Severity::Info,
            "the audit's requests carry an Authorization field: both sessions are one identity, \
             whose tasks are rightly its own to read",
        );
    }
    let first = match session_of(ctx) {
        Ok(session) => session,
        Err(judgement) => return judgement,
    };
    let list = ctx.legacy("tools/list", json!({}), Some(&first));
    let tools = match ctx.send(&list) {
        Ok(response) => response.rpc(),
        Err(error) => {
            return found(
                Severity::Medium,
                format!("tools/list: {}", error.describe()),
            );
        }
    };
    let tool = tools
        .as_ref()
        .and_then(|rpc| rpc.pointer("/result/tools")?.as_array())
        .and_then(|tools| tools.iter().find_map(callable_as_task))
        .map(str::to_owned);
    let Some(tool) = tool else {
        return found(
            Severity::Info,
            "no tool marked read-only may run as a task without arguments: nothing to create",
        );
    };
    let call = ctx.legacy(
        "tools/call",
        json!({"name": tool, "arguments": {}, "task": {}}),
        Some(&first),
    );
    let task = match ctx.send(&call) {
        Ok(response) => response
            .rpc()
            .and_then(|rpc| Some(rpc.pointer("/result/task/taskId")?.as_str()?.to_owned())),
        Err(error) => {
            return found(
                Severity::Medium,
                format!("tools/call: {}", error.describe()),
            );
        }
    };
    let Some(task) = task else {
        return found(
            Severity::Info,
            format!("{tool} asked with params.task answered without a task: nothing to compare"),
        );
    };
    let second = match session_of(ctx) {
        Ok(session) => session,
        Err(judgement) => return judgement,
    };
    let never = crate::cases::random_task_id();
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let foreign = ctx.legacy(method, json!({ "taskId": task }), Some(&second));
        let foreign = match ctx.send(&foreign) {
            Ok(response) => response,
            Err(error) => {
                return found(Severity::Medium, format!("{method}: {}", error.describe()));
            }
        };
        if foreign.rpc().is_some_and(|rpc| rpc.get("result").is_some()) {
            return found(
                Severity::High,
                format!("{method} of another session's task answered with a result"),
            );
        }
        let unknown = ctx.legacy(method, json!({ "taskId": never }), Some(&second));
        let unknown = match ctx.send(&unknown) {
            Ok(response) => response,
            Err(error) => {
                return found(Severity::Medium, format!("{method}: {}", error.describe()));
            }
        };
        let (seen, expected) = (error_of(&foreign), error_of(&unknown));
        if seen.is_none() || seen != expected {
            return found(
                Severity::Medium,
                format!(
                    "{method}: another session's task answered {} where an id never issued \
                     answered {}: the difference tells a guesser the id is live",
                    status_and_code(&foreign),
                    status_and_code(&unknown)
                ),
            );
        }
    }
    let listed = ctx.legacy("tasks/list", json!({}), Some(&second));
    match ctx.send(&listed) {
        Ok(response) => {
            let names_it = response.rpc().is_some_and(|rpc| {
                rpc.pointer("/result/tasks")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|tasks| {
                        tasks
                            .iter()
                            .any(|listed| listed.get("taskId") == Some(&json!(task)))
                    })
            });
            if names_it {
                return found(
                    Severity::High,
                    "tasks/list of another session names its task",
                );
            }
        }
        Err(error) => {
            return found(
                Severity::Medium,
                format!("tasks/list: {}", error.describe()),
            );
        }
    }
    pass(format!(
        "another session's task ({tool}) is, for tasks/get, tasks/result and tasks/cancel, what \
         an id never issued is, and tasks/list does not name it"
    ))
}

fn session_missing(ctx: &mut Ctx<'_>) -> Judgement {
    if let Err(judgement) = session_of(ctx) {
        return judgement;
    }
    let request = ctx.legacy("tools/list", json!({}), None);
    Refusal {
        want: &[400],
        codes: &[],
        accepted: Severity::Medium,
        what: "a request without the session id",
    }
    .judge(ctx.send(&request))
}

fn session_unknown(ctx: &mut Ctx<'_>) -> Judgement {
    if let Err(judgement) = session_of(ctx) {
        return judgement;
    }
    let request = ctx.legacy(
        "tools/list",
        json!({}),
        Some("0123456789abcdef0123456789abcdef"),
    );
    Refusal {
        want: &[404],
        codes: &[],
        accepted: Severity::High,
        what: "an unknown session id",
    }
    .judge(ctx.send(&request))
}

fn session_huge(ctx: &mut Ctx<'_>) -> Judgement {
    if let Err(judgement) = session_of(ctx) {
        return judgement;
    }
    let huge = "a".repeat(8 * 1024);
    let request = ctx.legacy("tools/list", json!({}), Some(&huge));
    Refusal {
        want: &[404, 400, 431],
        codes: &[],
        accepted: Severity::High,
        what: "an 8 KiB session id",
    }
    .judge(ctx.send(&request))
}

fn session_deleted(ctx: &mut Ctx<'_>) -> Judgement {
    let session = match session_of(ctx) {
        Ok(session) => session,
        Err(judgement) => return judgement,
    };
    let delete = ctx
        .request("DELETE", Vec::new())
        .set("Mcp-Session-Id", &session)
        .set("MCP-Protocol-Version", crate::session::PROTOCOL_VERSION);
    match ctx.send(&delete) {
        Ok(response) if (200..300).contains(&response.status) => {}
        Ok(response) if response.status == 405 => {
            return found(
                Severity::Info,
                "DELETE answered 405: the server does not let clients end sessions",
            );
        }
        Ok(response) => {
            return found(
                Severity::Low,
                format!(
                    "DELETE of a live session answered {}",
                    status_and_code(&response)
                ),
            );
        }
        Err(error) => {
            return found(Severity::Medium, format!("DELETE: {}", error.describe()));
        }
    }
    let request = ctx.legacy("tools/list", json!({}), Some(&session));
    Refusal {
        want: &[404],
        codes: &[],
        accepted: Severity::High,
        what: "a session id after its DELETE",
    }
    .judge(ctx.send(&request))
}

fn session_ids(ctx: &mut Ctx<'_>) -> Judgement {
    let first = match session_of(ctx) {
        Ok(session) => session,
        Err(judgement) => return judgement,
    };
    let second = match session_of(ctx) {
        Ok(session) => session,
        Err(judgement) => return judgement,
    };
    let visible = |id: &str| id.bytes().all(|byte| (0x21..=0x7e).contains(&byte));
    if first == second {
        return found(Severity::High, "two sessions got the same id");
    }
    if !visible(&first) || !visible(&second) {
        return found(
            Severity::Medium,
            "a session id with bytes outside visible ASCII (MUST be 0x21-0x7E)",
        );
    }
    let shortest = first.len().min(second.len());
    if shortest < MIN_SESSION_ID_CHARS {
        return found(
            Severity::Medium,
            format!("a {shortest}-character session id: short enough to guess"),
        );
    }
    pass(format!(
        "two different ids of visible ASCII, at least {shortest} characters"
    ))
}

fn version_header_unknown(ctx: &mut Ctx<'_>) -> Judgement {
    let session = match session_of(ctx) {
        Ok(session) => Some(session),
        Err(judgement) if judgement.severity == Some(Severity::Info) => None,
        Err(judgement) => return judgement,
    };
    let request = ctx
        .legacy("tools/list", json!({}), session.as_deref())
        .set("MCP-Protocol-Version", "2099-01-01");
    Refusal {
        want: &[400],
        codes: &[],
        accepted: Severity::Medium,
        what: "MCP-Protocol-Version: 2099-01-01",
    }
    .judge(ctx.send(&request))
}

fn notification(ctx: &mut Ctx<'_>) -> Judgement {
    let session = match session_of(ctx) {
        Ok(session) => Some(session),
        Err(judgement) if judgement.severity == Some(Severity::Info) => None,
        Err(judgement) => return judgement,
    };
    let body =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}"#;
    let mut request = ctx
        .request("POST", body.to_vec())
        .set("MCP-Protocol-Version", crate::session::PROTOCOL_VERSION);
    if let Some(session) = &session {
        request = request.set("Mcp-Session-Id", session);
    }
    match ctx.send(&request) {
        Ok(response) if response.rpc().is_some() => found(
            Severity::High,
            format!(
                "a notification answered with a JSON-RPC reply ({})",
                status_and_code(&response)
            ),
        ),
        Ok(response) if response.status == 202 && response.body.is_empty() => {
            pass("answered 202 with no body")
        }
        Ok(response) => found(
            Severity::Low,
            format!("a notification answered {}, not 202", response.status),
        ),
        Err(error) => found(
            Severity::Medium,
            format!("a notification: {}", error.describe()),
        ),
    }
}

/// A modern request whose headers disagree with its body, or lack one.
fn disagreeing(ctx: &mut Ctx<'_>, request: &Request, accepted: Severity) -> Judgement {
    Refusal {
        want: &[400],
        codes: &[-32020],
        accepted,
        what: "headers that disagree with the body",
    }
    .judge(ctx.send(request))
}

fn name_header_other(ctx: &mut Ctx<'_>) -> Judgement {
    let tool = ctx
        .eras
        .tool
        .clone()
        .unwrap_or_else(|| "airlock-audit-no-such-tool".to_owned());
    let request = ctx
        .modern("tools/call", json!({"name": tool, "arguments": {}}))
        .set("Mcp-Name", "airlock-audit-other-tool");
    let outcome = ctx.send(&request);
    if let Ok(response) = &outcome
        && response.status != 400
        && response
            .rpc()
            .is_some_and(|rpc| rpc.get("result").is_some())
    {
        return found(
            Severity::High,
            "the tool was called although Mcp-Name named another",
        );
    }
    Refusal {
        want: &[400],
        codes: &[-32020],
        accepted: Severity::High,
        what: "Mcp-Name that is not the body's tool",
    }
    .judge(outcome)
}

fn header_repeated(ctx: &mut Ctx<'_>) -> Judgement {
    let tool = ctx
        .eras
        .tool
        .clone()
        .unwrap_or_else(|| "airlock-audit-no-such-tool".to_owned());
    let call = || json!({"name": tool, "arguments": {}});
    let name = ctx
        .modern("tools/call", call())
        .add("Mcp-Name", "airlock-audit-other-tool");
    let method = ctx
        .modern("tools/call", call())
        .add("Mcp-Method", "tools/list");
    let version = ctx
        .modern("tools/call", call())
        .add("MCP-Protocol-Version", crate::session::PROTOCOL_VERSION);
    let mut judgement = pass("each repeated header was refused");
    for (request, what) in [
        (name, "Mcp-Name sent twice"),
        (method, "Mcp-Method sent twice"),
        (version, "MCP-Protocol-Version sent twice"),
    ] {
        let outcome = Refusal {
            want: &[400],
            codes: &[-32020],
            accepted: Severity::High,
            what,
        }
        .judge(ctx.send(&request));
        judgement = worse(judgement, outcome);
    }
    judgement
}

fn name_header_encoding(ctx: &mut Ctx<'_>) -> Judgement {
    let tool = ctx
        .eras
        .tool
        .clone()
        .unwrap_or_else(|| "airlock-audit-no-such-tool".to_owned());
    let value = format!("=?BASE64?{}?=", base64(tool.as_bytes()));
    let request = ctx
        .modern("tools/call", json!({"name": tool, "arguments": {}}))
        .set("Mcp-Name", &value);
    Refusal {
        want: &[400],
        codes: &[-32020],
        accepted: Severity::Medium,
        what: "Mcp-Name as =?BASE64?…?= (upper case)",
    }
    .judge(ctx.send(&request))
}

/// `bytes` in base64 (RFC 4648, standard alphabet, padded).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let letter = |index: u32| {
        ALPHABET
            .get(usize::try_from(index & 63).unwrap_or(0))
            .map_or('=', |byte| char::from(*byte))
    };
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let mut word = 0_u32;
        for (at, byte) in group.iter().enumerate() {
            let shift = 16_u32.saturating_sub(u32::try_from(at).unwrap_or(0).saturating_mul(8));
            word |= u32::from(*byte) << shift;
        }
        for at in 0..4_u32 {
            let written = u32::try_from(group.len()).unwrap_or(0);
            if at <= written {
                out.push(letter(word >> 18_u32.saturating_sub(at.saturating_mul(6))));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn partial_bodies(ctx: &mut Ctx<'_>) -> Judgement {
    let head = ctx
        .request("POST", Vec::new())
        .set("Content-Length", &PARTIAL_BODY_DECLARED.to_string())
        .head(&ctx.endpoint.path);
    let half = vec![b' '; PARTIAL_BODY_DECLARED / 2];
    let deadline = ctx.exchange_deadline();
    let mut held: Vec<super::wire::Connection> = Vec::new();
    let mut refused = 0_usize;
    for _ in 0..PARTIAL_BODIES {
        let Ok(mut connection) = ctx.connect() else {
            refused = refused.saturating_add(1);
            continue;
        };
        if connection.write(&head, deadline).is_err() || connection.write(&half, deadline).is_err()
        {
            refused = refused.saturating_add(1);
            continue;
        }
        held.push(connection);
    }
    // A refusal may come after the bytes were written: the server answered without reading.
    for connection in &mut held {
        let look = Instant::now()
            .checked_add(PARTIAL_BODY_LOOK)
            .map_or(ctx.deadline, |end| end.min(ctx.deadline));
        if connection.closed_by_server(look) {
            refused = refused.saturating_add(1);
        }
    }
    drop(held);
    if refused > 0 {
        return pass(format!(
            "{refused} of {PARTIAL_BODIES} partial bodies refused or ended by the server"
        ));
    }
    found(
        Severity::Medium,
        format!(
            "{PARTIAL_BODIES} partial bodies of {} KiB each from one client were all held \
             (memory grows with the connections a client opens)",
            PARTIAL_BODY_DECLARED / 2 / 1024
        ),
    )
}

fn page_lockout(ctx: &mut Ctx<'_>) -> Judgement {
    let image = format!(
        "GET /airlock-audit.png HTTP/1.1\r\nHost: {}\r\nSec-Fetch-Site: cross-site\r\n\
         Sec-Fetch-Mode: no-cors\r\nSec-Fetch-Dest: image\r\nConnection: close\r\n\r\n",
        ctx.endpoint.authority
    );
    let foreign = ctx
        .opening()
        .set("Origin", "http://evil.example.com")
        .set("Sec-Fetch-Site", "cross-site")
        .set("Connection", "close");
    let mut foreign_bytes = foreign.head(&ctx.endpoint.path);
    foreign_bytes.extend_from_slice(&foreign.body);
    for bytes in [image.as_bytes(), foreign_bytes.as_slice()] {
        for _ in 0..PAGE_REQUESTS {
            let deadline = ctx.exchange_deadline();
            let Ok(mut connection) = ctx.connect() else {
                continue;
            };
            if connection.write(bytes, deadline).is_ok() {
                let _answer = connection.read_response(deadline);
            }
        }
    }
    let request = ctx.opening();
    match ctx.send(&request) {
        Ok(response)
            if response.status == 200
                && response
                    .rpc()
                    .is_some_and(|rpc| rpc.get("result").is_some()) =>
        {
            pass(format!(
                "served after {} requests a web page could make",
                PAGE_REQUESTS.saturating_mul(2)
            ))
        }
        Ok(response) => found(
            Severity::Medium,
            format!(
                "after {} requests a web page could make, a local client at the same address \
                 got {}",
                PAGE_REQUESTS.saturating_mul(2),
                status_and_code(&response)
            ),
        ),
        Err(error) => found(Severity::Medium, error.describe()),
    }
}

fn unknown_method(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx.modern("airlock-audit/no-such-method", json!({}));
    Refusal {
        want: &[404],
        codes: &[-32601],
        accepted: Severity::Low,
        what: "an unknown method",
    }
    .judge(ctx.send(&request))
}

fn modern_get(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx
        .request("GET", Vec::new())
        .set("Accept", "text/event-stream")
        .set("MCP-Protocol-Version", super::MODERN_VERSION);
    Refusal {
        want: &[405],
        codes: &[],
        accepted: Severity::Low,
        what: "GET",
    }
    .judge(ctx.send(&request))
}

fn session_ignored(ctx: &mut Ctx<'_>) -> Judgement {
    let request = ctx
        .modern("server/discover", json!({}))
        .set("Mcp-Session-Id", "airlock-audit-made-up-session");
    match ctx.send(&request) {
        Ok(response) if response.status == 200 && response.header("mcp-session-id").is_some() => {
            found(
                Severity::Low,
                "a 2026-07-28 response carries Mcp-Session-Id (the era has no sessions)",
            )
        }
        Ok(response)
            if response.status == 200
                && response
                    .rpc()
                    .is_some_and(|rpc| rpc.get("result").is_some()) =>
        {
            pass("served, the header ignored")
        }
        Ok(response) => found(
            Severity::Low,
            format!(
                "a made-up Mcp-Session-Id on a 2026-07-28 request got {}",
                status_and_code(&response)
            ),
        ),
        Err(error) => found(Severity::Medium, error.describe()),
    }
}

/// One chunk of the chunked-body case.
const CHUNK_BYTES: usize = 64 * 1024;

/// How much the chunked-body case sends at most.
const HUGE_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Connections the partial-bodies case opens, and the body each declares (half of it sent).
const PARTIAL_BODIES: usize = 32;
/// See [`PARTIAL_BODIES`].
const PARTIAL_BODY_DECLARED: usize = 1024 * 1024;

/// How long the partial-bodies case waits, per connection, for the server to end it.
const PARTIAL_BODY_LOOK: Duration = Duration::from_millis(50);

/// Requests of each kind the page case sends.
const PAGE_REQUESTS: usize = 300;

/// Connections the slow-heads case holds open.
const SLOW_CONNECTIONS: usize = 32;

/// Pause between trickled bytes.
const TRICKLE_PAUSE: Duration = Duration::from_millis(200);

/// Shortest session id not noted as guessable (128 bits in base64 is 22 characters).
const MIN_SESSION_ID_CHARS: usize = 16;

impl HttpCase {
    /// Whether the case applies to a server that showed `eras`.
    pub(crate) fn applies(&self, eras: &super::Eras) -> bool {
        match self.era {
            Era::Any => true,
            Era::Legacy => eras.legacy,
            Era::Modern => eras.modern,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648_with_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"t"), "dA==");
        assert_eq!(base64(b"to"), "dG8=");
        assert_eq!(base64(b"tool"), "dG9vbA==");
        assert_eq!(base64(b"count_lines"), "Y291bnRfbGluZXM=");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }
}
