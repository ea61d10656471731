//! `McpError`, the JSON-RPC error codes, and the one place an error becomes wire text.
//!
//! Every way a peer's message can be refused is a variant of [`McpError`]. [`McpError::to_wire`]
//! maps each variant to a fixed code and a fixed sentence, plus bounded, non-secret `data`
//! (limits, retry delays, supported versions). The match has no `_` arm: a new variant does not
//! compile until its code is decided here. Nothing else in the crate builds an error object, so
//! nothing else can leak peer text, paths, OS errors or panic payloads onto the wire.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::version::{ProtocolVersion, VersionToken};

/// A JSON-RPC error code.
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub struct ErrorCode(i32);

impl ErrorCode {
    /// The message is not UTF-8, not JSON, or nested too deeply.
    pub const PARSE_ERROR: Self = Self(-32_700);
    /// The JSON is not a valid request object.
    pub const INVALID_REQUEST: Self = Self(-32_600);
    /// Unknown method, or a method this server or era does not offer.
    pub const METHOD_NOT_FOUND: Self = Self(-32_601);
    /// The method exists but its params are wrong.
    pub const INVALID_PARAMS: Self = Self(-32_602);
    /// A fault inside the server; details are in the stderr log only.
    pub const INTERNAL_ERROR: Self = Self(-32_603);
    /// MCP 2026-07-28 (HTTP): a required header is missing, malformed, or disagrees with the
    /// body.
    pub const HEADER_MISMATCH: Self = Self(-32_020);
    /// MCP 2026-07-28: the request needs a capability the client did not declare in
    /// `_meta.clientCapabilities`.
    pub const MISSING_CLIENT_CAPABILITY: Self = Self(-32_021);
    /// MCP 2026-07-28: the request asks for a protocol version this server does not serve.
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32_022);
    /// airlock: a rate limit was exceeded. Outside -32768..-32000, as MCP 2026-07-28 asks of
    /// application codes.
    pub const RATE_LIMITED: Self = Self(-31_429);
    /// airlock: too many calls are in flight. Outside -32768..-32000 for the same reason.
    pub const OVERLOADED: Self = Self(-31_503);

    /// The numeric code.
    pub fn get(self) -> i32 {
        self.0
    }

    /// Every code above: the table any transport's errors come from.
    #[cfg(any(test, fuzzing))]
    pub(crate) const ALL: [Self; 10] = [
        Self::PARSE_ERROR,
        Self::INVALID_REQUEST,
        Self::METHOD_NOT_FOUND,
        Self::INVALID_PARAMS,
        Self::INTERNAL_ERROR,
        Self::HEADER_MISMATCH,
        Self::MISSING_CLIENT_CAPABILITY,
        Self::UNSUPPORTED_PROTOCOL_VERSION,
        Self::RATE_LIMITED,
        Self::OVERLOADED,
    ];
}

/// Why a frame could not be read as JSON.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum ParseFault {
    /// The bytes are not valid JSON (syntax, non-JSON tokens such as `NaN`, bad escapes).
    InvalidJson,
    /// The bytes are not UTF-8.
    InvalidUtf8,
    /// Arrays and objects are nested deeper than `max_json_depth`.
    TooDeep,
}

/// Why a request id was refused.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum IdFault {
    /// The `id` member appears twice, so which one to trust is ambiguous.
    Duplicated,
    /// A number with a fraction or exponent, or an integer beyond 64 bits.
    NotAnInteger,
    /// `null`: JSON-RPC allows it, MCP does not.
    Null,
    /// A string id longer than `MAX_ID_BYTES`.
    TooLong,
    /// A boolean, object or array.
    WrongType,
}

/// Why a `method` member was refused.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum MethodFault {
    /// A request without `method`.
    Missing,
    /// `method` is not a string.
    NotAString,
    /// `method` is longer than `MAX_METHOD_BYTES`.
    TooLong,
}

/// Which bound on `tools/call` arguments was exceeded.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum ArgumentBound {
    /// Compact JSON size of the whole `arguments` object.
    Bytes,
    /// Nesting depth inside `arguments`.
    Depth,
    /// Items of one array.
    Items,
    /// Keys of one object.
    Keys,
    /// Bytes of one string.
    StringBytes,
}

impl ArgumentBound {
    /// The name of the limit, as `SECURITY.md` and `Limits` spell it.
    pub fn limit_name(self) -> &'static str {
        match self {
            Self::Bytes => "max_argument_bytes",
            Self::Depth => "max_argument_depth",
            Self::Items => "max_array_items",
            Self::Keys => "max_object_keys",
            Self::StringBytes => "max_string_bytes",
        }
    }
}

/// Which HTTP header of a modern (2026-07-28) request is missing, malformed, or disagrees with
/// the body.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum HeaderFault {
    /// `Mcp-Method` against the body's `method`.
    Method,
    /// `Mcp-Name` against `params.name` of `tools/call` and `prompts/get`, `params.uri` of
    /// `resources/read`; or one of the three headers repeated.
    Name,
    /// `MCP-Protocol-Version` against `_meta`'s `io.modelcontextprotocol/protocolVersion`.
    ProtocolVersion,
}

/// Why the HTTP transport refused a request before any JSON-RPC message was read from it.
///
/// Each has its own HTTP status (the HTTP transport's `status` module); the body is still a JSON-RPC error
/// with id null from [`McpError::to_wire`].
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum HttpRefusal {
    /// `Accept` names neither `application/json` nor `text/event-stream` (406).
    NotAcceptable,
    /// A method other than POST (and DELETE of a legacy session) (405).
    MethodNotAllowed,
    /// The body did not arrive within the body read timeout (408).
    BodyTimeout,
    /// `Content-Type` is not `application/json` (415).
    UnsupportedMediaType,
    /// The `Host` header names a host that is not allowed: DNS rebinding (421).
    Host,
    /// The `Origin` header names an origin that is not allowed: a web page's request (403).
    Origin,
    /// No bearer token, or not a token this server knows (401).
    Unauthorized,
    /// An OAuth access token without a scope the called tool requires (403, with
    /// `WWW-Authenticate: Bearer error="insufficient_scope"`).
    InsufficientScope,
    /// A CORS preflight from a listed origin asking for a method or request header MCP does
    /// not use (403).
    Preflight,
    /// A legacy request other than `initialize` without an `Mcp-Session-Id` (400).
    SessionRequired,
    /// An `Mcp-Session-Id` that is unknown, expired, ended, or another client's (404).
    SessionNotFound,
    /// A legacy `MCP-Protocol-Version` header that is not this session's version (400).
    VersionHeader,
}

/// Every reason a peer's message is refused with a JSON-RPC error.
///
/// Context carried by variants is `&'static str` or a bounded number chosen by us; never peer
/// input. Variants are alphabetical.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A second `initialize` on a session that already has one.
    #[error("session already initialized")]
    AlreadyInitialized,
    /// `tools/call` arguments exceed a bound.
    #[error("arguments exceed {}", bound.limit_name())]
    ArgumentBound {
        /// Which bound.
        bound: ArgumentBound,
        /// Its configured value.
        limit: usize,
    },
    /// A JSON array at the top level: batches are refused in every era.
    #[error("batch refused")]
    Batch,
    /// A client over its own cap on calls in flight (HTTP, per client).
    #[error("too many calls in flight for this client")]
    ClientBusy {
        /// The configured per-client cap.
        limit: usize,
    },
    /// A request whose id equals one still in flight.
    #[error("request id already in flight")]
    DuplicateId,
    /// A request body that would take the HTTP server past the bytes it holds in bodies still
    /// arriving (`max_body_bytes_held`).
    #[error("too many request body bytes held")]
    BodiesFull {
        /// The configured server-wide bound, in bytes.
        limit: usize,
    },
    /// A key repeated in some object of the message.
    #[error("duplicate key in an object")]
    DuplicateKey,
    /// A frame longer than `max_frame_bytes`.
    #[error("frame longer than {limit} bytes")]
    FrameTooLong {
        /// The configured frame limit.
        limit: usize,
    },
    /// A legacy operation after the `initialize` reply but before `notifications/initialized`.
    #[error("request before notifications/initialized")]
    HandshakeUnconfirmed,
    /// A modern HTTP request whose headers are missing, malformed, or disagree with its body.
    #[error("header mismatch: {0:?}")]
    HeaderMismatch(HeaderFault),
    /// The HTTP transport refused the request before reading a message from it.
    #[error("http refusal: {0:?}")]
    Http(HttpRefusal),
    /// A broken invariant or a caught panic inside the server.
    #[error("internal fault: {0}")]
    Internal(&'static str),
    /// A `tools/list` cursor we did not issue, or one for a different tool list.
    #[error("invalid cursor")]
    InvalidCursor,
    /// A request id of a type or size MCP does not allow.
    #[error("invalid id: {0:?}")]
    InvalidId(IdFault),
    /// `jsonrpc` is missing or not exactly `"2.0"`.
    #[error("jsonrpc must be \"2.0\"")]
    InvalidJsonRpcVersion,
    /// `method` missing, not a string, or too long.
    #[error("invalid method: {0:?}")]
    InvalidMethod(MethodFault),
    /// Modern-era `_meta` protocol fields missing or malformed.
    #[error("invalid protocol metadata: {0}")]
    InvalidMeta(&'static str),
    /// Params of the wrong shape for the method.
    #[error("invalid params: {0}")]
    InvalidParams(&'static str),
    /// A `tools/call` `_meta.progressToken` that is not a string of at most
    /// `MAX_PROGRESS_TOKEN_BYTES` nor an integer that fits in 64 bits.
    #[error("invalid progress token")]
    InvalidProgressToken,
    /// A tool name in `tools/call` that is not a string or is too long.
    #[error("invalid tool name")]
    InvalidToolName,
    /// A method we do not serve (unknown, of a capability we do not offer, or of the other era).
    #[error("method not found")]
    MethodNotFound,
    /// A top-level value that is neither an object nor an array.
    #[error("not a request object")]
    NotAnObject,
    /// `tools/call` arguments holding a number no 64-bit float holds (`1e400`, 400 digits):
    /// valid JSON that no tool can be given.
    #[error("number out of range in the arguments")]
    NumberOutOfRange,
    /// A legacy request other than `ping` before the `initialize` handshake completed.
    #[error("request before initialize")]
    NotInitialized,
    /// `max_in_flight` calls are already running.
    #[error("too many calls in flight")]
    Overloaded {
        /// The configured in-flight cap.
        limit: usize,
    },
    /// The frame is not UTF-8 JSON within the depth limit.
    #[error("parse error: {0:?}")]
    Parse(ParseFault),
    /// A rate limit was exceeded; the caller may retry after the given delay.
    #[error("rate limited for {retry_after_ms} ms")]
    RateLimited {
        /// Milliseconds until the quota admits the request, from the limiter.
        retry_after_ms: u64,
    },
    /// The shared quota store (HTTP replicas' Redis) cannot be reached and the server fails
    /// closed: nothing is admitted that the shared limits could not count.
    #[error("shared quota store unreachable")]
    StoreUnavailable,
    /// A tool handler panicked.
    #[error("tool handler panicked")]
    ToolPanicked,
    /// `max_connections` HTTP connections are open.
    #[error("too many connections")]
    TooManyConnections {
        /// The configured connection cap.
        limit: usize,
    },
    /// `max_connections_per_address` HTTP connections are open from the peer's address.
    #[error("too many connections from one address")]
    TooManyConnectionsFromAddress {
        /// The configured per-address cap.
        limit: usize,
    },
    /// `max_sessions` legacy HTTP sessions exist.
    #[error("too many sessions")]
    TooManySessions {
        /// The configured session cap.
        limit: usize,
    },
    /// A top-level member JSON-RPC 2.0 does not define.
    #[error("member not defined by JSON-RPC 2.0")]
    UnknownMember,
    /// A `tools/call` for a tool this server does not have.
    #[error("unknown tool")]
    UnknownTool,
    /// A `prompts/get` for a prompt this server does not have (or a name that is not a
    /// string).
    #[error("unknown prompt")]
    UnknownPrompt,
    /// A `resources/read` of a URI no resource has and no template matches (or a `uri` that
    /// is not a string).
    #[error("unknown resource")]
    UnknownResource,
    /// A `resources/read`, `resources/subscribe` or `resources/unsubscribe` whose `uri` is
    /// missing or not a string: answered as [`McpError::UnknownResource`] is, but a malformed
    /// request, so it counts toward the garbage cut-off where an unknown URI does not.
    #[error("resource uri missing or not a string")]
    MalformedResourceUri,
    /// A `resources/subscribe` past `MAX_SUBSCRIPTIONS` (32)
    /// subscriptions in one session.
    #[error("too many resource subscriptions")]
    TooManySubscriptions,
    /// `prompts/get` arguments that are not an object of strings the prompt declares, with
    /// every required one, or that do not fit the prompt's argument type.
    #[error("invalid prompt arguments")]
    InvalidPromptArguments,
    /// A `prompts/get` whose messages, as sent, would be over
    /// `MAX_PROMPT_REPLY_BYTES` (1 MiB) (arguments
    /// substituted many times, or escaping that multiplies them).
    #[error("prompt reply too large")]
    PromptTooLarge,
    /// A modern request's `requestState` that is not one this server signed for this call
    /// (tampered with, of another call or tool or arguments), or has expired.
    #[error("invalid request state")]
    InvalidRequestState,
    /// `tasks/get`, `tasks/result` or `tasks/cancel` of an id the caller has no task of: never
    /// issued, malformed, forgotten, or another owner's (the same answer for each).
    #[error("unknown task")]
    UnknownTask,
    /// `tasks/cancel` of a task that already ended (2025-11-25: MUST be `-32602`).
    #[error("task already ended")]
    TaskEnded,
    /// A task refused at creation: the bound named by `limit` (its value `value`) is reached.
    #[error("too many tasks ({limit})")]
    TooManyTasks {
        /// The bound's name (`max_tasks_running_per_client`, `max_tasks_running`,
        /// `max_tasks_kept_per_client`, `max_task_bytes`).
        limit: &'static str,
        /// Its value.
        value: usize,
    },
    /// A modern request's `inputResponses` answer to a question the tool asks that does not
    /// fit the question.
    #[error("invalid input response")]
    InvalidInputResponse,
    /// A modern call whose tool asks the client something its `clientCapabilities` did not
    /// declare.
    #[error("missing required client capability")]
    MissingClientCapability(Capability),
    /// A 2026-07-28 request that needs the `io.modelcontextprotocol/tasks` extension and did
    /// not declare it: `tasks/get`, `tasks/update`, `tasks/cancel`, or a `tools/call` of a tool
    /// that runs only as a task.
    #[error("missing required client capability (the tasks extension)")]
    MissingTasksExtension,
    /// A modern request for a protocol version we do not serve.
    #[error("unsupported protocol version")]
    UnsupportedVersion {
        /// The version the client asked for, already checked to be a short version token.
        requested: VersionToken,
    },
}

/// A capability a client declares for what the server may ask it.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Capability {
    /// `elicitation`: forms for the user.
    Elicitation,
    /// `sampling`: replies of the client's model.
    Sampling,
    /// `roots`: the client's roots.
    Roots,
}

impl Capability {
    /// The capability's member name in `capabilities`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }
}

impl McpError {
    /// The single place an error becomes visible on the wire.
    pub fn to_wire(&self) -> RpcError {
        use ErrorCode as C;
        let (code, message, data) = match self {
            Self::Parse(ParseFault::InvalidUtf8) => (
                C::PARSE_ERROR,
                "Parse error: the message is not valid UTF-8.",
                None,
            ),
            Self::Parse(ParseFault::InvalidJson) => (
                C::PARSE_ERROR,
                "Parse error: the message is not valid JSON.",
                None,
            ),
            Self::Parse(ParseFault::TooDeep) => (
                C::PARSE_ERROR,
                "Parse error: the message is nested too deeply.",
                None,
            ),
            Self::Batch => (
                C::INVALID_REQUEST,
                "Invalid request: batches are not accepted; send one message per line.",
                None,
            ),
            Self::NotAnObject => (
                C::INVALID_REQUEST,
                "Invalid request: a message must be a JSON object.",
                None,
            ),
            Self::FrameTooLong { limit } => (
                C::INVALID_REQUEST,
                "Invalid request: the message is longer than the frame limit.",
                Some(ErrorData::limit("max_frame_bytes", *limit)),
            ),
            Self::InvalidJsonRpcVersion => (
                C::INVALID_REQUEST,
                "Invalid request: \"jsonrpc\" must be \"2.0\".",
                None,
            ),
            Self::InvalidMethod(MethodFault::Missing) => (
                C::INVALID_REQUEST,
                "Invalid request: \"method\" is missing.",
                None,
            ),
            Self::InvalidMethod(MethodFault::NotAString) => (
                C::INVALID_REQUEST,
                "Invalid request: \"method\" must be a string.",
                None,
            ),
            Self::InvalidMethod(MethodFault::TooLong) => (
                C::INVALID_REQUEST,
                "Invalid request: \"method\" is too long.",
                Some(ErrorData::limit(
                    "max_method_bytes",
                    crate::limits::MAX_METHOD_BYTES,
                )),
            ),
            Self::InvalidId(IdFault::Null) => (
                C::INVALID_REQUEST,
                "Invalid request: \"id\" must not be null.",
                None,
            ),
            Self::InvalidId(IdFault::WrongType) => (
                C::INVALID_REQUEST,
                "Invalid request: \"id\" must be a string or an integer.",
                None,
            ),
            Self::InvalidId(IdFault::NotAnInteger) => (
                C::INVALID_REQUEST,
                "Invalid request: a numeric \"id\" must be an integer that fits in 64 bits.",
                None,
            ),
            Self::InvalidId(IdFault::TooLong) => (
                C::INVALID_REQUEST,
                "Invalid request: \"id\" is too long.",
                Some(ErrorData::limit(
                    "max_id_bytes",
                    crate::limits::MAX_ID_BYTES,
                )),
            ),
            Self::InvalidId(IdFault::Duplicated) => (
                C::INVALID_REQUEST,
                "Invalid request: \"id\" appears more than once.",
                None,
            ),
            Self::DuplicateKey => (
                C::INVALID_REQUEST,
                "Invalid request: an object repeats a key.",
                None,
            ),
            Self::UnknownMember => (
                C::INVALID_REQUEST,
                "Invalid request: the message has a member JSON-RPC 2.0 does not define.",
                None,
            ),
            Self::DuplicateId => (
                C::INVALID_REQUEST,
                "Invalid request: a request with this id is still in flight.",
                None,
            ),
            Self::AlreadyInitialized => (
                C::INVALID_REQUEST,
                "Invalid request: the session is already initialized.",
                None,
            ),
            Self::MethodNotFound => (C::METHOD_NOT_FOUND, "Method not found.", None),
            Self::InvalidParams(_) => (C::INVALID_PARAMS, "Invalid params.", None),
            Self::InvalidMeta(_) => (
                C::INVALID_PARAMS,
                "Invalid params: the protocol fields in \"_meta\" are missing or malformed.",
                None,
            ),
            Self::NotInitialized => (
                C::INVALID_PARAMS,
                "Invalid params: send \"initialize\" first, or protocol fields in \"_meta\".",
                None,
            ),
            Self::HandshakeUnconfirmed => (
                C::INVALID_PARAMS,
                "Invalid params: send the \"notifications/initialized\" notification first.",
                None,
            ),
            Self::InvalidCursor => (C::INVALID_PARAMS, "Invalid params: unknown cursor.", None),
            Self::InvalidProgressToken => (
                C::INVALID_PARAMS,
                "Invalid params: \"progressToken\" must be a string of at most 128 bytes or an integer that fits in 64 bits.",
                Some(ErrorData::limit(
                    "max_progress_token_bytes",
                    crate::limits::MAX_PROGRESS_TOKEN_BYTES,
                )),
            ),
            Self::InvalidToolName => (
                C::INVALID_PARAMS,
                "Invalid params: the tool name must be a string of at most 128 bytes.",
                Some(ErrorData::limit(
                    "max_tool_name_bytes",
                    crate::limits::MAX_CALLED_TOOL_NAME_BYTES,
                )),
            ),
            Self::UnknownTool => (C::INVALID_PARAMS, "Invalid params: unknown tool.", None),
            Self::UnknownPrompt => (C::INVALID_PARAMS, "Invalid params: unknown prompt.", None),
            Self::UnknownResource | Self::MalformedResourceUri => (
                C::INVALID_PARAMS,
                "Invalid params: resource not found.",
                None,
            ),
            Self::TooManySubscriptions => (
                C::INVALID_PARAMS,
                "Invalid params: this session is subscribed to as many resources as it may be.",
                Some(ErrorData::limit(
                    "max_subscriptions",
                    crate::limits::MAX_SUBSCRIPTIONS,
                )),
            ),
            Self::PromptTooLarge => (
                C::INVALID_PARAMS,
                "Invalid params: the prompt these arguments make is larger than this server sends.",
                Some(ErrorData::limit(
                    "max_prompt_reply_bytes",
                    crate::limits::MAX_PROMPT_REPLY_BYTES,
                )),
            ),
            Self::InvalidPromptArguments => (
                C::INVALID_PARAMS,
                "Invalid params: the prompt's arguments must be an object of the strings it \
                 declares, with every required one.",
                None,
            ),
            Self::NumberOutOfRange => (
                C::INVALID_PARAMS,
                "Invalid params: a number in the arguments is too large to represent.",
                None,
            ),
            Self::ArgumentBound { bound, limit } => (
                C::INVALID_PARAMS,
                "Invalid params: the arguments exceed a size limit.",
                Some(ErrorData::limit(bound.limit_name(), *limit)),
            ),
            Self::Internal(_) | Self::ToolPanicked => (C::INTERNAL_ERROR, "Internal error.", None),
            Self::UnknownTask => (
                C::INVALID_PARAMS,
                "Invalid params: no task has this id.",
                None,
            ),
            Self::TaskEnded => (
                C::INVALID_PARAMS,
                "Invalid params: the task already ended, so it cannot be cancelled.",
                None,
            ),
            Self::TooManyTasks { limit, value } => (
                C::OVERLOADED,
                "Too many tasks; retry later.",
                Some(ErrorData::limit(limit, *value)),
            ),
            Self::InvalidRequestState => (
                C::INVALID_PARAMS,
                "Invalid params: requestState is not one this server issued for this request, \
                 or it has expired.",
                None,
            ),
            Self::InvalidInputResponse => (
                C::INVALID_PARAMS,
                "Invalid params: an input response does not answer its input request.",
                None,
            ),
            Self::MissingClientCapability(capability) => (
                C::MISSING_CLIENT_CAPABILITY,
                "Missing required client capability.",
                Some(ErrorData::RequiredCapability(*capability)),
            ),
            Self::MissingTasksExtension => (
                C::MISSING_CLIENT_CAPABILITY,
                "Missing required client capability.",
                Some(ErrorData::RequiredExtension(
                    crate::version::TASKS_EXTENSION,
                )),
            ),
            Self::UnsupportedVersion { requested } => (
                C::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version.",
                Some(ErrorData::Versions {
                    requested: requested.clone(),
                }),
            ),
            Self::RateLimited { retry_after_ms } => (
                C::RATE_LIMITED,
                "Rate limit exceeded; retry later.",
                Some(ErrorData::RetryAfter {
                    retry_after_ms: *retry_after_ms,
                }),
            ),
            Self::Overloaded { limit } => (
                C::OVERLOADED,
                "Too many calls in flight; retry later.",
                Some(ErrorData::limit("max_in_flight", *limit)),
            ),
            Self::ClientBusy { limit } => (
                C::OVERLOADED,
                "Too many calls in flight for this client; retry later.",
                Some(ErrorData::limit("client_in_flight", *limit)),
            ),
            Self::TooManyConnections { limit } => (
                C::OVERLOADED,
                "Too many connections; retry later.",
                Some(ErrorData::limit("max_connections", *limit)),
            ),
            Self::TooManyConnectionsFromAddress { limit } => (
                C::OVERLOADED,
                "Too many connections from this address; retry later.",
                Some(ErrorData::limit("max_connections_per_address", *limit)),
            ),
            Self::StoreUnavailable => (
                C::OVERLOADED,
                "The shared quota store is unreachable; retry later.",
                None,
            ),
            Self::BodiesFull { limit } => (
                C::OVERLOADED,
                "Too many request bodies arriving; retry later.",
                Some(ErrorData::limit("max_body_bytes_held", *limit)),
            ),
            Self::TooManySessions { limit } => (
                C::OVERLOADED,
                "Too many sessions; retry later.",
                Some(ErrorData::limit("max_sessions", *limit)),
            ),
            Self::HeaderMismatch(HeaderFault::Method) => (
                C::HEADER_MISMATCH,
                "Header mismatch: Mcp-Method is missing, malformed or differs from the body.",
                None,
            ),
            Self::HeaderMismatch(HeaderFault::Name) => (
                C::HEADER_MISMATCH,
                "Header mismatch: Mcp-Name is missing, malformed or differs from the body.",
                None,
            ),
            Self::HeaderMismatch(HeaderFault::ProtocolVersion) => (
                C::HEADER_MISMATCH,
                "Header mismatch: MCP-Protocol-Version is missing, malformed or differs from the body.",
                None,
            ),
            Self::Http(refusal) => (C::INVALID_REQUEST, refusal.message(), None),
        };
        RpcError {
            code,
            message,
            data,
        }
    }
}

impl HttpRefusal {
    fn message(self) -> &'static str {
        match self {
            Self::NotAcceptable => {
                "Invalid request: Accept must allow application/json or text/event-stream."
            }
            Self::MethodNotAllowed => "Invalid request: this endpoint takes POST.",
            Self::BodyTimeout => "Invalid request: the body did not arrive in time.",
            Self::UnsupportedMediaType => "Invalid request: the body must be application/json.",
            Self::Host => "Invalid request: the Host header is not allowed.",
            Self::Origin => "Invalid request: the Origin header is not allowed.",
            Self::Unauthorized => "Invalid request: a valid bearer token is required.",
            Self::InsufficientScope => {
                "Invalid request: the access token lacks a scope this tool requires."
            }
            Self::Preflight => {
                "Invalid request: the preflight asks for a method or header this endpoint does \
                 not take."
            }
            Self::SessionRequired => {
                "Invalid request: send initialize first, then the Mcp-Session-Id it returns."
            }
            Self::SessionNotFound => "Invalid request: unknown or expired session.",
            Self::VersionHeader => {
                "Invalid request: MCP-Protocol-Version is not this session's version."
            }
        }
    }
}

/// A JSON-RPC error object as it goes on the wire: a code, a fixed sentence, bounded data.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct RpcError {
    /// The code from the table.
    pub code: ErrorCode,
    /// A fixed sentence; never built from input.
    pub message: &'static str,
    /// Bounded facts chosen by the server.
    pub data: Option<ErrorData>,
}

/// The only shapes `error.data` takes.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum ErrorData {
    /// Which limit was hit, and its configured value.
    Limit {
        /// The limit's name, as `SECURITY.md` spells it.
        name: &'static str,
        /// The configured value (absent only if it does not fit in 64 bits).
        value: Option<u64>,
    },
    /// When to retry.
    RetryAfter {
        /// Milliseconds.
        retry_after_ms: u64,
    },
    /// MCP 2026-07-28 `MissingRequiredClientCapability` data: `requiredCapabilities`, a
    /// client capabilities object naming the one missing.
    RequiredCapability(Capability),
    /// MCP 2026-07-28 `MissingRequiredClientCapability` data naming an extension:
    /// `requiredCapabilities.extensions`, holding the one missing.
    RequiredExtension(&'static str),
    /// MCP 2026-07-28 `UnsupportedProtocolVersion` data.
    Versions {
        /// The version the client asked for.
        requested: VersionToken,
    },
}

impl ErrorData {
    fn limit(name: &'static str, value: usize) -> Self {
        Self::Limit {
            name,
            value: u64::try_from(value).ok(),
        }
    }
}

impl Serialize for ErrorData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Limit { name, value } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("limit", name)?;
                if let Some(value) = value {
                    map.serialize_entry("value", value)?;
                }
                map.end()
            }
            Self::RetryAfter { retry_after_ms } => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("retryAfterMs", retry_after_ms)?;
                map.end()
            }
            Self::RequiredCapability(capability) => {
                let mut required = Map::new();
                required.insert(capability.name().to_owned(), Value::Object(Map::new()));
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("requiredCapabilities", &required)?;
                map.end()
            }
            Self::RequiredExtension(extension) => {
                let mut extensions = Map::new();
                extensions.insert((*extension).to_owned(), Value::Object(Map::new()));
                let mut required = Map::new();
                required.insert("extensions".to_owned(), Value::Object(extensions));
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("requiredCapabilities", &required)?;
                map.end()
            }
            Self::Versions { requested } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("supported", &ProtocolVersion::MODERN_NAMES)?;
                map.serialize_entry("requested", requested.as_str())?;
                map.end()
            }
        }
    }
}

impl Serialize for RpcError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = if self.data.is_some() { 3 } else { 2 };
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("code", &self.code.0)?;
        map.serialize_entry("message", self.message)?;
        if let Some(data) = &self.data {
            map.serialize_entry("data", data)?;
        }
        map.end()
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of each variant: if a variant is added, add it here and to the table in SECURITY.md.
    pub(crate) fn every_variant() -> Vec<McpError> {
        let mut all = vec![
            McpError::AlreadyInitialized,
            McpError::Batch,
            McpError::DuplicateId,
            McpError::DuplicateKey,
            McpError::FrameTooLong { limit: 10 },
            McpError::HandshakeUnconfirmed,
            McpError::Internal("x"),
            McpError::InvalidCursor,
            McpError::InvalidJsonRpcVersion,
            McpError::InvalidMeta("x"),
            McpError::InvalidParams("x"),
            McpError::InvalidProgressToken,
            McpError::InvalidToolName,
            McpError::MethodNotFound,
            McpError::NotAnObject,
            McpError::NotInitialized,
            McpError::NumberOutOfRange,
            McpError::Overloaded { limit: 8 },
            McpError::RateLimited { retry_after_ms: 5 },
            McpError::StoreUnavailable,
            McpError::ToolPanicked,
            McpError::ClientBusy { limit: 4 },
            McpError::TooManyConnections { limit: 4 },
            McpError::TooManyConnectionsFromAddress { limit: 4 },
            McpError::TooManySessions { limit: 4 },
            McpError::BodiesFull { limit: 4 },
            McpError::UnknownMember,
            McpError::UnknownTool,
            McpError::UnknownPrompt,
            McpError::UnknownResource,
            McpError::MalformedResourceUri,
            McpError::TooManySubscriptions,
            McpError::InvalidPromptArguments,
            McpError::PromptTooLarge,
            McpError::InvalidRequestState,
            McpError::UnknownTask,
            McpError::TaskEnded,
            McpError::TooManyTasks {
                limit: "max_tasks_running",
                value: 16,
            },
            McpError::InvalidInputResponse,
            McpError::MissingClientCapability(Capability::Sampling),
            McpError::MissingClientCapability(Capability::Elicitation),
            McpError::MissingClientCapability(Capability::Roots),
            McpError::MissingTasksExtension,
            McpError::UnsupportedVersion {
                requested: VersionToken::parse("1999-01-01").unwrap(),
            },
        ];
        for fault in [
            ParseFault::InvalidJson,
            ParseFault::InvalidUtf8,
            ParseFault::TooDeep,
        ] {
            all.push(McpError::Parse(fault));
        }
        for fault in [
            IdFault::Duplicated,
            IdFault::NotAnInteger,
            IdFault::Null,
            IdFault::TooLong,
            IdFault::WrongType,
        ] {
            all.push(McpError::InvalidId(fault));
        }
        for fault in [
            HeaderFault::Method,
            HeaderFault::Name,
            HeaderFault::ProtocolVersion,
        ] {
            all.push(McpError::HeaderMismatch(fault));
        }
        for refusal in [
            HttpRefusal::NotAcceptable,
            HttpRefusal::MethodNotAllowed,
            HttpRefusal::BodyTimeout,
            HttpRefusal::UnsupportedMediaType,
            HttpRefusal::Host,
            HttpRefusal::Origin,
            HttpRefusal::Preflight,
            HttpRefusal::Unauthorized,
            HttpRefusal::InsufficientScope,
            HttpRefusal::SessionRequired,
            HttpRefusal::SessionNotFound,
            HttpRefusal::VersionHeader,
        ] {
            all.push(McpError::Http(refusal));
        }
        for fault in [
            MethodFault::Missing,
            MethodFault::NotAString,
            MethodFault::TooLong,
        ] {
            all.push(McpError::InvalidMethod(fault));
        }
        for bound in [
            ArgumentBound::Bytes,
            ArgumentBound::Depth,
            ArgumentBound::Items,
            ArgumentBound::Keys,
            ArgumentBound::StringBytes,
        ] {
            all.push(McpError::ArgumentBound { bound, limit: 3 });
        }
        all
    }

    #[test]
    fn every_variant_maps_to_a_code_of_the_design_table() {
        let table = [
            -32_700, -32_600, -32_601, -32_602, -32_603, -32_020, -32_021, -32_022, -31_429,
            -31_503,
        ];
        for error in every_variant() {
            let wire = error.to_wire();
            assert!(
                table.contains(&wire.code.get()),
                "{error:?} -> {}",
                wire.code
            );
            assert!(wire.message.ends_with('.'), "{error:?}: one sentence");
        }
    }

    #[test]
    fn codes_follow_the_design_table() {
        let code = |e: McpError| e.to_wire().code.get();
        assert_eq!(code(McpError::Parse(ParseFault::TooDeep)), -32_700);
        assert_eq!(code(McpError::Batch), -32_600);
        assert_eq!(code(McpError::FrameTooLong { limit: 1 }), -32_600);
        assert_eq!(code(McpError::AlreadyInitialized), -32_600);
        assert_eq!(code(McpError::MethodNotFound), -32_601);
        assert_eq!(code(McpError::NotInitialized), -32_602);
        assert_eq!(code(McpError::HandshakeUnconfirmed), -32_602);
        assert_eq!(code(McpError::UnknownTool), -32_602);
        assert_eq!(code(McpError::ToolPanicked), -32_603);
        assert_eq!(
            code(McpError::UnsupportedVersion {
                requested: VersionToken::parse("1").unwrap()
            }),
            -32_022
        );
        assert_eq!(code(McpError::RateLimited { retry_after_ms: 1 }), -31_429);
        assert_eq!(code(McpError::Overloaded { limit: 8 }), -31_503);
    }

    /// The rows of SECURITY.md's error table: each code with its example message.
    fn documented_table() -> Vec<(i32, String)> {
        let security = include_str!("../../../SECURITY.md");
        security
            .lines()
            .filter_map(|line| {
                let mut cells = line.split(" | ");
                let code = cells.next()?.strip_prefix("| ")?.parse::<i32>().ok()?;
                let message = cells.nth(1)?.trim_matches('`').to_owned();
                Some((code, message))
            })
            .collect()
    }

    #[test]
    fn the_documented_error_table_is_this_one() {
        let table = documented_table();
        let mut documented: Vec<i32> = table.iter().map(|(code, _)| *code).collect();
        documented.sort_unstable();
        let mut codes: Vec<i32> = every_variant()
            .iter()
            .map(|error| error.to_wire().code.get())
            .collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(
            documented, codes,
            "SECURITY.md's error table lists other codes"
        );
        for (code, message) in &table {
            assert!(
                every_variant().iter().any(|error| {
                    let wire = error.to_wire();
                    wire.code.get() == *code && wire.message == message.as_str()
                }),
                "SECURITY.md's example for {code} is no message of that code: {message}"
            );
        }
    }

    #[test]
    fn a_header_mismatch_is_minus_32020() {
        assert_eq!(
            McpError::HeaderMismatch(HeaderFault::Method)
                .to_wire()
                .code
                .get(),
            -32_020
        );
    }

    #[test]
    fn messages_state_the_bounds_they_name() {
        for (error, bound) in [
            (
                McpError::InvalidProgressToken,
                crate::limits::MAX_PROGRESS_TOKEN_BYTES,
            ),
            (
                McpError::InvalidToolName,
                crate::limits::MAX_CALLED_TOOL_NAME_BYTES,
            ),
        ] {
            let message = error.to_wire().message;
            assert!(
                message.contains(&format!("at most {bound} bytes")),
                "{message}"
            );
        }
    }

    #[test]
    fn internal_context_never_reaches_the_wire() {
        let wire =
            serde_json::to_string(&McpError::Internal("secret path /etc").to_wire()).unwrap();
        assert_eq!(wire, r#"{"code":-32603,"message":"Internal error."}"#);
        let wire = serde_json::to_string(&McpError::InvalidParams("detail").to_wire()).unwrap();
        assert!(!wire.contains("detail"));
    }

    #[test]
    fn data_carries_only_bounded_facts() {
        let wire = serde_json::to_value(
            McpError::ArgumentBound {
                bound: ArgumentBound::StringBytes,
                limit: 65_536,
            }
            .to_wire(),
        )
        .unwrap();
        assert_eq!(
            wire["data"],
            serde_json::json!({"limit":"max_string_bytes","value":65536})
        );
        let wire = serde_json::to_value(
            McpError::UnsupportedVersion {
                requested: VersionToken::parse("2099-01-01").unwrap(),
            }
            .to_wire(),
        )
        .unwrap();
        assert_eq!(
            wire["data"],
            serde_json::json!({"supported":["2026-07-28"],"requested":"2099-01-01"})
        );
        let wire = serde_json::to_value(
            McpError::RateLimited {
                retry_after_ms: 250,
            }
            .to_wire(),
        )
        .unwrap();
        assert_eq!(wire["data"], serde_json::json!({"retryAfterMs":250}));
    }
}
