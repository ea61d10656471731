//! `airlock audit --url`: the audit of a running Streamable HTTP server, in both eras.
//!
//! The server is not the audit's process: it is reached at the operator's URL, which must be
//! on loopback unless the operator passes `--allow-remote` (an audit sends hostile traffic,
//! and a typo must not aim it at someone else's host). Memory and exit checks need the
//! process, so they do not apply here; a server that stops answering is still found, because
//! every case ends with a fresh, valid request that must succeed (a critical finding if not).
//!
//! The cases (`cases`) are the transport's own: the `Host` and `Origin` checks against DNS
//! rebinding, body and head caps, batches, media types, legacy sessions (missing, unknown,
//! huge, reused after `DELETE`), modern headers that disagree with the body, are repeated or
//! encoded other than as the specification says, slow and idle connections, partial bodies
//! held, and a web page's refused requests locking out a local client at the same address. Which era's cases run follows what the server answers at the start: a
//! 2025-11-25 `initialize` (with or without a session id) and a 2026-07-28
//! `server/discover`.
//!
//! What it trusts: the operator's URL and options. What it does not: anything the server
//! sends, which only ever goes through the bounded client in `wire` and `judge::shown`.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::cases::Judgement;
use super::evidence::{Evidence, Redactor};
use super::failure::Failure;
use super::judge::{self, shown};
use super::session::{Finding, PROTOCOL_VERSION};
use super::severity::{Kind, Severity};
use super::{CaseReport, ServerFacts, Verdict, millis};

mod cases;
pub(crate) mod wire;

pub(crate) use cases::{HttpCase, catalogue};

use wire::{Connection, Response, WireError};

/// Why a `--url` cannot be audited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not `http://host:port/path`.
    #[error(
        "--url: give it as http://HOST:PORT/PATH (https is not supported: audit the plain endpoint behind the TLS terminator, or a loopback copy)"
    )]
    Form,
    /// The host did not resolve.
    #[error("--url: the host does not resolve")]
    Resolve,
    /// The host is not loopback and `--allow-remote` was not given.
    #[error(
        "--url: the host is not a loopback address; an audit sends hostile traffic, so a remote target needs --allow-remote"
    )]
    Remote,
}

/// Why a `--header` or `--auth-token-env` cannot be sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Not `NAME:VALUE` with a header field name.
    #[error("--header: give it as NAME:VALUE, NAME a header field name (letters, digits, -)")]
    Form,
    /// A value with a character a header field cannot carry.
    #[error("--header: a value may hold no control character (CR, LF, NUL, …)")]
    Value,
    /// A field the audit writes itself (its cases depend on what they set).
    #[error("--header: the audit sets {0} itself")]
    Reserved(String),
    /// The token's variable is unset, empty or not one line of visible ASCII.
    #[error(
        "--auth-token-env: the variable {0} must hold the bearer token (it is unset, empty, or holds characters a token cannot; it is not shown)"
    )]
    Token(String),
}

/// A header field every request of the audit's correct client carries (`--header`,
/// `--auth-token-env`): what the deployed server needs to serve anyone at all. Its value is
/// a secret as far as the audit knows: it is redacted from every report (`evidence`).
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    name: String,
    value: String,
}

impl Header {
    /// Whether this field tells the server who the client is (`Authorization`).
    pub(crate) fn identifies(&self) -> bool {
        self.name.eq_ignore_ascii_case("authorization")
    }
}

impl std::fmt::Debug for Header {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "Header({}: …)", self.name)
    }
}

impl Header {
    /// `NAME:VALUE` as `--header` takes it (spaces around the value are dropped).
    ///
    /// # Errors
    ///
    /// Not that form, a control character in the value, or a field the audit sets itself.
    pub fn parse(text: &str) -> Result<Self, HeaderError> {
        let (name, value) = text.split_once(':').ok_or(HeaderError::Form)?;
        let name = name.trim();
        let is_token =
            |byte: u8| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte);
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(HeaderError::Form);
        }
        let value = value.trim_matches([' ', '\t']);
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(HeaderError::Value);
        }
        if RESERVED_HEADERS
            .iter()
            .any(|reserved| reserved.eq_ignore_ascii_case(name))
        {
            return Err(HeaderError::Reserved(name.to_owned()));
        }
        Ok(Self {
            name: name.to_owned(),
            value: value.to_owned(),
        })
    }

    /// `Authorization: Bearer TOKEN`, the token read from the variable `name` (its value as
    /// the environment holds it; `None` when unset).
    ///
    /// # Errors
    ///
    /// [`HeaderError::Token`]: unset, empty, or not visible ASCII.
    pub fn bearer(name: &str, token: Option<&std::ffi::OsStr>) -> Result<Self, HeaderError> {
        let token = token
            .and_then(std::ffi::OsStr::to_str)
            .filter(|token| !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| HeaderError::Token(name.to_owned()))?;
        Ok(Self {
            name: "Authorization".to_owned(),
            value: format!("Bearer {token}"),
        })
    }

    /// The secrets this field carries, to redact: its value, and a bearer token alone.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut secrets = vec![self.value.clone()];
        if let Some(token) = self.value.strip_prefix("Bearer ") {
            secrets.push(token.to_owned());
        }
        secrets
    }
}

/// Fields `--header` may not set: the audit's cases write them to test the server's checks,
/// or the framing depends on them.
const RESERVED_HEADERS: [&str; 11] = [
    "Host",
    "Origin",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Content-Type",
    "Accept",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
];

/// The endpoint under audit.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    /// Where to connect.
    pub(crate) addr: SocketAddr,
    /// The `Host` header a correct client sends (the URL's authority).
    pub(crate) authority: String,
    /// The path (with any query).
    pub(crate) path: String,
    /// Fields every correct request carries (the operator's `--header`, the token).
    pub(crate) headers: Vec<Header>,
}

impl Endpoint {
    /// Parses and resolves `url`; a host that is not loopback needs `allow_remote`.
    ///
    /// # Errors
    ///
    /// See [`UrlError`].
    pub(crate) fn parse(url: &str, allow_remote: bool) -> Result<Self, UrlError> {
        let rest = url.strip_prefix("http://").ok_or(UrlError::Form)?;
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at_checked(at).ok_or(UrlError::Form)?,
            None => (rest, "/"),
        };
        let valid = !authority.is_empty()
            && authority
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b".-:[]".contains(&byte))
            && path.bytes().all(|byte| (0x21..0x7f).contains(&byte));
        if !valid {
            return Err(UrlError::Form);
        }
        let has_port = authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
            && !authority.ends_with(']');
        let target = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let addrs: Vec<SocketAddr> = target
            .to_socket_addrs()
            .map_err(|_| UrlError::Resolve)?
            .take(16)
            .collect();
        if !allow_remote && !addrs.iter().all(|addr| addr.ip().is_loopback()) {
            return Err(UrlError::Remote);
        }
        // `localhost` may resolve to ::1 and 127.0.0.1 with the server on one of them: the
        // first that accepts a connection.
        let addr = addrs
            .iter()
            .copied()
            .find(|addr| std::net::TcpStream::connect_timeout(addr, PROBE_CONNECT).is_ok())
            .or_else(|| addrs.first().copied())
            .ok_or(UrlError::Resolve)?;
        Ok(Self {
            addr,
            authority: authority.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
        })
    }
}

/// What the server showed at the start.
#[derive(Clone, Debug, Default)]
pub(crate) struct Eras {
    /// It completed a 2025-11-25 `initialize`.
    pub(crate) legacy: bool,
    /// It minted a session id on `initialize`.
    pub(crate) sessions: bool,
    /// It served a 2026-07-28 `server/discover`.
    pub(crate) modern: bool,
    /// The first tool it listed (for the `Mcp-Name` case), if any.
    pub(crate) tool: Option<String>,
}

/// One HTTP request as the audit writes it.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// The method.
    pub(crate) method: String,
    /// Header fields in order (`Content-Length` is added from the body unless present).
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Vec<u8>,
}

impl Request {
    /// Sets header `name` (replacing any of that name, ignoring case).
    pub(crate) fn set(mut self, name: &str, value: &str) -> Self {
        self = self.remove(name);
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds header `name`, after any of the same name (to send a header twice).
    pub(crate) fn add(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Removes header `name`.
    pub(crate) fn remove(mut self, name: &str) -> Self {
        self.headers
            .retain(|(key, _)| !key.eq_ignore_ascii_case(name));
        self
    }

    /// The head's bytes (with its blank line).
    pub(crate) fn head(&self, path: &str) -> Vec<u8> {
        let mut head = format!("{} {path} HTTP/1.1\r\n", self.method);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let framed = self.headers.iter().any(|(name, _)| {
            name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding")
        });
        if !framed && (self.method == "POST" || !self.body.is_empty()) {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        head.into_bytes()
    }
}

/// One case's view of the server.
pub(crate) struct Ctx<'a> {
    /// The endpoint.
    pub(crate) endpoint: &'a Endpoint,
    /// What the server showed at the start.
    pub(crate) eras: &'a Eras,
    /// When the case must be over.
    pub(crate) deadline: Instant,
    /// The time limit of one exchange.
    pub(crate) timeout: Duration,
    /// General findings (leaks).
    findings: Vec<Finding>,
    /// The last response read: what the case's input got back, for the report.
    last: Option<Evidence>,
    next_id: u64,
}

impl Ctx<'_> {
    /// A request with the headers every correct client sends.
    pub(crate) fn request(&self, method: &str, body: Vec<u8>) -> Request {
        let mut headers = vec![("Host".to_owned(), self.endpoint.authority.clone())];
        for header in &self.endpoint.headers {
            headers.push((header.name.clone(), header.value.clone()));
        }
        if method == "POST" {
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
        }
        headers.push((
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ));
        headers.push(("Connection".to_owned(), "close".to_owned()));
        Request {
            method: method.to_owned(),
            headers,
            body,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id = self.next_id.saturating_add(1);
        self.next_id
    }

    /// A 2026-07-28 request, body and headers agreeing.
    pub(crate) fn modern(&mut self, method: &str, params: Value) -> Request {
        let mut params = params;
        if let Some(object) = params.as_object_mut() {
            object.insert("_meta".to_owned(), modern_meta());
        }
        // `Mcp-Name` copies `params.uri` of `resources/read`, `params.name` of the others.
        let named = if method == "resources/read" {
            "uri"
        } else {
            "name"
        };
        let name = params.get(named).and_then(Value::as_str).map(str::to_owned);
        let id = self.id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self
            .request("POST", body.to_string().into_bytes())
            .set("MCP-Protocol-Version", MODERN_VERSION)
            .set("Mcp-Method", method);
        if let Some(name) = name {
            request = request.set("Mcp-Name", &name);
        }
        request
    }

    /// A 2025-11-25 request (inside `session` if there is one).
    pub(crate) fn legacy(&mut self, method: &str, params: Value, session: Option<&str>) -> Request {
        let id = self.id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self.request("POST", body.to_string().into_bytes());
        if method != "initialize" {
            request = request.set("MCP-Protocol-Version", PROTOCOL_VERSION);
        }
        if let Some(session) = session {
            request = request.set("Mcp-Session-Id", session);
        }
        request
    }

    /// A request that needs no session and succeeds when sent right: a modern
    /// `server/discover` if the server serves that era, else a legacy `initialize`.
    pub(crate) fn opening(&mut self) -> Request {
        if self.eras.modern {
            self.modern("server/discover", json!({}))
        } else {
            self.legacy("initialize", initialize_params(), None)
        }
    }

    /// Sends `request` on a new connection and reads the response, within one exchange's
    /// time limit (and the case's deadline).
    pub(crate) fn send(&mut self, request: &Request) -> Result<Response, WireError> {
        let deadline = self.exchange_deadline();
        let mut connection = Connection::open(self.endpoint.addr, deadline)?;
        let mut bytes = request.head(&self.endpoint.path);
        bytes.extend_from_slice(&request.body);
        // A server may refuse and close before reading everything: its response still counts.
        let written = connection.write(&bytes, deadline);
        let response = connection.read_response(deadline);
        match (written, response) {
            (_, Ok(response)) => {
                self.look(&response);
                Ok(response)
            }
            (Err(WireError::Timeout), Err(_)) => Err(WireError::Timeout),
            (_, Err(error)) => Err(error),
        }
    }

    /// A new connection, for cases that write their own bytes.
    pub(crate) fn connect(&self) -> Result<Connection, WireError> {
        Connection::open(self.endpoint.addr, self.exchange_deadline())
    }

    /// When one exchange started now must end.
    pub(crate) fn exchange_deadline(&self) -> Instant {
        Instant::now()
            .checked_add(self.timeout)
            .map_or(self.deadline, |end| end.min(self.deadline))
    }

    /// The general checks of a response: no stack trace or panic text.
    pub(crate) fn look(&mut self, response: &Response) {
        let evidence =
            Evidence::of(&response.body).prefixed(&format!("HTTP {}: ", response.status));
        if judge::leaks_trace(&response.body) {
            self.find(
                Kind::StackTrace,
                "panic text or a stack trace in a response body",
                Some(&evidence),
            );
        }
        self.last = Some(evidence);
    }

    fn find(&mut self, kind: Kind, text: &str, evidence: Option<&Evidence>) {
        if let Some(known) = self
            .findings
            .iter_mut()
            .find(|known| known.kind == kind && known.text == text)
        {
            known.count = known.count.saturating_add(1);
            return;
        }
        self.findings.push(Finding {
            kind,
            text: text.to_owned(),
            count: 1,
            evidence: evidence.cloned(),
        });
    }

    /// Opens a legacy session: `initialize`, then `notifications/initialized`. The session
    /// id, `None` if the server mints none.
    ///
    /// # Errors
    ///
    /// What failed, for the report.
    pub(crate) fn open_session(&mut self) -> Result<Option<String>, Failure> {
        let request = self.legacy("initialize", initialize_params(), None);
        let response = self.send(&request).map_err(|error| Failure::Unsent {
            step: "initialize",
            why: error.describe(),
        })?;
        if response.status != 200 || response.rpc().is_none_or(|rpc| rpc.get("result").is_none()) {
            return Err(Failure::Answered {
                step: "initialize",
                answer: status_and_code(&response),
            });
        }
        let session = response.header("mcp-session-id").map(str::to_owned);
        let body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
        let mut notification = self
            .request("POST", body)
            .set("MCP-Protocol-Version", PROTOCOL_VERSION);
        if let Some(session) = &session {
            notification = notification.set("Mcp-Session-Id", session);
        }
        let answered = self.send(&notification).map_err(|error| Failure::Unsent {
            step: "notifications/initialized",
            why: error.describe(),
        })?;
        if !(200..300).contains(&answered.status) {
            return Err(Failure::Answered {
                step: "notifications/initialized",
                answer: status_and_code(&answered),
            });
        }
        Ok(session)
    }

    /// The follow-up every case ends with: a fresh, valid request must get a result (after
    /// waiting out `429`/`503` refusals).
    ///
    /// # Errors
    ///
    /// What failed.
    pub(crate) fn follow_up(&mut self) -> Result<(), Failure> {
        let until = Instant::now()
            .checked_add(self.timeout)
            .unwrap_or(self.deadline);
        let mut last = String::from("no response");
        while Instant::now() < until {
            let request = self.opening();
            match self.send(&request) {
                Ok(response)
                    if response.status == 200
                        && response
                            .rpc()
                            .is_some_and(|rpc| rpc.get("result").is_some()) =>
                {
                    return Ok(());
                }
                Ok(response) if matches!(response.status, 429 | 503) => {
                    last = format!("only {}", status_and_code(&response));
                    let wait = response
                        .header("retry-after")
                        .and_then(|secs| secs.trim().parse::<u64>().ok())
                        .map_or(BACKOFF, |secs| Duration::from_secs(secs).min(MAX_BACKOFF));
                    std::thread::sleep(wait.min(until.saturating_duration_since(Instant::now())));
                }
                Ok(response) => {
                    return Err(Failure::FollowUpAnswered {
                        answer: status_and_code(&response),
                    });
                }
                Err(error) => {
                    last = error.describe().to_owned();
                    std::thread::sleep(BACKOFF);
                }
            }
        }
        Err(Failure::FollowUpTimedOut { last })
    }
}

/// The status and JSON-RPC code of a response, in a few words.
pub(crate) fn status_and_code(response: &Response) -> String {
    match response.rpc_code() {
        Some(code) => format!("{} with error {code}", response.status),
        None => response.status.to_string(),
    }
}

/// `_meta` of a 2026-07-28 request.
pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "airlock-audit", "version": env!("CARGO_PKG_VERSION")}
    })
}

/// `initialize` params for the legacy era.
fn initialize_params() -> Value {
    super::session::initialize_params(PROTOCOL_VERSION)
}

/// Learns what the server serves: the eras, its name and its tools. On failure, why.
pub(crate) fn discover(
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<(ServerFacts, Eras), Failure> {
    let deadline = Instant::now()
        .checked_add(timeout.saturating_mul(3))
        .ok_or(Failure::TimeoutTooLarge)?;
    let mut eras = Eras::default();
    let mut ctx = Ctx {
        endpoint,
        eras: &Eras::default(),
        deadline,
        timeout,
        findings: Vec::new(),
        last: None,
        next_id: 0,
    };
    let mut info: Option<Value> = None;
    let mut versions = Vec::new();
    let discover = ctx.modern("server/discover", json!({}));
    let mut refusals = Vec::new();
    match ctx.send(&discover) {
        Ok(response) if response.status == 200 => {
            if let Some(result) = response
                .rpc()
                .and_then(|mut rpc| rpc.get_mut("result").map(Value::take))
            {
                eras.modern = true;
                versions.push(MODERN_VERSION);
                info = result
                    .get("_meta")
                    .and_then(|meta| meta.get("io.modelcontextprotocol/serverInfo"))
                    .cloned();
            }
        }
        Ok(response) => refusals.push(format!("server/discover: {}", status_and_code(&response))),
        Err(error) => refusals.push(format!("server/discover: {}", error.describe())),
    }
    let initialize = ctx.legacy("initialize", initialize_params(), None);
    match ctx.send(&initialize) {
        Ok(response) if response.status == 200 => {
            if let Some(result) = response
                .rpc()
                .and_then(|mut rpc| rpc.get_mut("result").map(Value::take))
            {
                eras.legacy = true;
                eras.sessions = response.header("mcp-session-id").is_some();
                versions.push(PROTOCOL_VERSION);
                if info.is_none() {
                    info = result.get("serverInfo").cloned();
                }
            }
        }
        Ok(response) => refusals.push(format!("initialize: {}", status_and_code(&response))),
        Err(error) => refusals.push(format!("initialize: {}", error.describe())),
    }
    if !eras.legacy && !eras.modern {
        return Err(Failure::NoEra { refusals });
    }
    let tools = list_tools(&mut ctx, &eras)?;
    let names: Vec<String> = tools
        .iter()
        .filter_map(|tool| tool.get("name").and_then(Value::as_str))
        .take(super::MAX_LISTED_TOOLS)
        .map(|name| shown(name, super::MAX_SHOWN_FACT_CHARS))
        .collect();
    eras.tool = tools
        .first()
        .and_then(|tool| tool.get("name"))
        .and_then(Value::as_str)
        .filter(|name| name.len() <= MAX_TOOL_NAME_BYTES)
        .map(str::to_owned);
    let field = |key: &str| {
        info.as_ref()
            .and_then(|info| info.get(key))
            .and_then(Value::as_str)
            .map_or_else(
                || "?".to_owned(),
                |text| shown(text, super::MAX_SHOWN_FACT_CHARS),
            )
    };
    let facts = ServerFacts {
        name: field("name"),
        version: field("version"),
        protocol_version: versions.join(" and "),
        tools: tools.len(),
        tool_names: names,
        probe: "no tool (a correct server runs none in the HTTP cases)".to_owned(),
        declared_timeout_ms: None,
        declared_by: None,
    };
    Ok((facts, eras))
}

/// The server's first `tools/list` page, in whichever era it serves (modern first).
fn list_tools(ctx: &mut Ctx<'_>, eras: &Eras) -> Result<Vec<Value>, Failure> {
    let request = if eras.modern {
        ctx.modern("tools/list", json!({}))
    } else {
        let session = ctx
            .open_session()
            .map_err(|why| Failure::OpeningSession(Box::new(why)))?;
        ctx.legacy("tools/list", json!({}), session.as_deref())
    };
    let response = ctx.send(&request).map_err(|error| Failure::Unsent {
        step: "tools/list",
        why: error.describe(),
    })?;
    let tools = response
        .rpc()
        .and_then(|mut rpc| rpc.get_mut("result").map(Value::take))
        .and_then(|mut result| result.get_mut("tools").map(Value::take))
        .and_then(|tools| match tools {
            Value::Array(tools) => Some(tools),
            _ => None,
        })
        .ok_or_else(|| Failure::Answered {
            step: "tools/list",
            answer: status_and_code(&response),
        })?;
    Ok(tools)
}

/// Runs one HTTP case, then the follow-up.
pub(crate) fn run_case(
    case: &HttpCase,
    endpoint: &Endpoint,
    eras: &Eras,
    timeout: Duration,
    redactor: &Redactor,
) -> CaseReport {
    let started = Instant::now();
    let budget = timeout.saturating_mul(case.budget.max(1));
    let deadline = started.checked_add(budget).unwrap_or(started);
    let mut ctx = Ctx {
        endpoint,
        eras,
        deadline,
        timeout,
        findings: Vec::new(),
        last: None,
        next_id: 0,
    };
    let judgement = (case.run)(&mut ctx);
    let evidence = ctx.last.take();
    if judgement.follow_up
        && !super::signals::interrupted()
        && let Err(why) = ctx.follow_up()
    {
        ctx.findings.push(Finding {
            kind: Kind::FollowUp,
            text: why.to_string(),
            count: 1,
            evidence: None,
        });
    }
    let mut report = super::case_report(
        case.id,
        super::Category::Http,
        case.sends,
        case.expects,
        judgement,
        &ctx.findings,
        millis(started.elapsed()),
    );
    report.show_evidence(&ctx.findings, evidence.as_ref(), redactor);
    report
}

/// A pass.
pub(crate) fn pass(detail: impl Into<String>) -> Judgement {
    Judgement {
        verdict: Verdict::Pass,
        severity: None,
        detail: detail.into(),
        answer: None,
        follow_up: true,
    }
}

/// A finding of `severity` (medium and worse fail the case, the rest are notes).
pub(crate) fn found(severity: Severity, detail: impl Into<String>) -> Judgement {
    Judgement {
        verdict: super::finding_verdict(severity),
        severity: Some(severity),
        detail: detail.into(),
        answer: None,
        follow_up: true,
    }
}

/// The protocol revision of the stateless era.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";

/// How long choosing among a name's addresses waits for each.
const PROBE_CONNECT: Duration = Duration::from_millis(500);

/// Longest tool name the audit copies into a header.
const MAX_TOOL_NAME_BYTES: usize = 128;

/// Wait after a refusal without `Retry-After`.
const BACKOFF: Duration = Duration::from_millis(200);

/// Longest `Retry-After` honoured.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_must_be_plain_http_and_loopback_unless_allowed() {
        let endpoint = Endpoint::parse("http://127.0.0.1:8080/mcp", false).unwrap();
        assert_eq!(endpoint.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(endpoint.authority, "127.0.0.1:8080");
        assert_eq!(endpoint.path, "/mcp");
        let bare = Endpoint::parse("http://[::1]:9", false).unwrap();
        assert_eq!(bare.path, "/");
        assert_eq!(
            Endpoint::parse("https://127.0.0.1/mcp", false).unwrap_err(),
            UrlError::Form
        );
        assert_eq!(
            Endpoint::parse("http://user@127.0.0.1/", false).unwrap_err(),
            UrlError::Form
        );
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:1/a b", false).unwrap_err(),
            UrlError::Form
        );
        assert_eq!(
            Endpoint::parse("http://192.0.2.1:80/mcp", false).unwrap_err(),
            UrlError::Remote
        );
        assert!(Endpoint::parse("http://192.0.2.1:80/mcp", true).is_ok());
    }

    #[test]
    fn a_request_head_carries_its_length_and_replaced_headers() {
        let request = Request {
            method: "POST".to_owned(),
            headers: vec![("Host".to_owned(), "a:1".to_owned())],
            body: b"{}".to_vec(),
        }
        .set("host", "b:2")
        .set("X-One", "1");
        assert_eq!(
            request.head("/mcp"),
            b"POST /mcp HTTP/1.1\r\nhost: b:2\r\nX-One: 1\r\nContent-Length: 2\r\n\r\n"
        );
    }
}
