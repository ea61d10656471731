//! THE BOUNDARY: one frame of peer bytes in, a checked [`Message`] or a [`Rejection`] out.
//!
//! Everything past this module sees typed values, never raw peer bytes. The checks run in this
//! order and the first failure decides the reply:
//!
//! 1. (framing) a frame over the size limit;
//! 2. not UTF-8, not JSON, or nested too deeply: `-32700`, id null (a number no 64-bit float
//!    holds is JSON: it is judged by the member it is in, an id holding one is refused at 4);
//! 3. not an object: `-32600`, id null (a batch is an array: refused the same way);
//! 4. `jsonrpc` not `"2.0"`, `method` missing or not a string, a bad `id`, a repeated key, a
//!    member JSON-RPC does not define: `-32600`, echoing the id when it is valid;
//! 5. `method` too long: `-32600`; unknown: `-32601`;
//! 6. `params` present but not an object: `-32602`.
//!
//! A message with no `method` but a `result` or `error` is a response: never answered
//! (answering garbage feeds ping-pong storms); the engine takes it only as the answer to a
//! request it sent (elicitation, sampling) and otherwise drops it. Its members are not read
//! here: [`answer_parts`] reads them later, once the id matched. A message with a `method` and no
//! `id` is a notification: never answered, even when malformed or unknown. Step 7, a request
//! whose id is still in flight, needs session state and is checked by the engine.

use crate::error::{IdFault, McpError, MethodFault, ParseFault};
use crate::id::RequestId;
use crate::json::{self, JsonFault, ParamsMember, Text, TopLevel};

mod params;

pub(crate) use params::{Mcp, ParamKey, Params};

/// A frame's top-level members, with MCP's `params`.
type Members<'a> = json::Members<'a, Mcp>;
use crate::limits::MAX_METHOD_BYTES;

/// A checked message from the peer.
#[derive(Debug)]
pub enum Message<'a> {
    /// A request: it gets exactly one reply.
    Request(Request<'a>),
    /// A notification: it never gets a reply.
    Notification(Notification<'a>),
    /// A response: an answer to a request the server sent, or unsolicited garbage.
    Response(Response<'a>),
}

/// A response as the envelope saw it: its id and the frame it came in, read further only
/// when the id names a request the server is waiting on.
#[derive(Debug)]
pub struct Response<'a> {
    /// Its id when it is well formed: `jsonrpc` is `"2.0"`, the id valid and not repeated,
    /// no key repeated anywhere, exactly one of `result` and `error`, nothing else.
    pub id: Option<RequestId>,
    /// The whole frame (JSON, checked for depth and keys).
    pub frame: &'a str,
}

/// A checked request.
#[derive(Debug)]
pub struct Request<'a> {
    /// Its id, echoed on the reply.
    pub id: RequestId,
    /// A method this server knows.
    pub method: RequestMethod,
    /// Its params, an object when present, borrowing from the frame.
    pub params: Option<Box<Params<'a>>>,
}

/// A checked notification.
#[derive(Debug)]
pub struct Notification<'a> {
    /// Which notification.
    pub method: NotificationMethod,
    /// Its params, an object when present, borrowing from the frame.
    pub params: Option<Box<Params<'a>>>,
}

/// The request methods this server knows; anything else is `-32601` at the boundary.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum RequestMethod {
    /// Legacy handshake.
    Initialize,
    /// Legacy liveness check.
    Ping,
    /// Modern capability discovery.
    ServerDiscover,
    /// Run a tool.
    ToolsCall,
    /// List tools.
    ToolsList,
    /// List prompts.
    PromptsList,
    /// Get one prompt's messages.
    PromptsGet,
    /// List fixed resources.
    ResourcesList,
    /// List resource templates.
    ResourcesTemplatesList,
    /// Read one resource.
    ResourcesRead,
    /// Ask for `notifications/resources/updated` about one resource (legacy sessions).
    ResourcesSubscribe,
    /// Stop those notifications (legacy sessions).
    ResourcesUnsubscribe,
    /// Complete a prompt's or a template's argument.
    CompletionComplete,
    /// Set the least severe log level sent (legacy sessions).
    LoggingSetLevel,
    /// A task's status (2025-11-25).
    TasksGet,
    /// A task's result, once it ends (2025-11-25).
    TasksResult,
    /// The caller's tasks (2025-11-25).
    TasksList,
    /// Cancel a task (2025-11-25, and the 2026-07-28 tasks extension).
    TasksCancel,
    /// Answer a task's input requests (the 2026-07-28 tasks extension).
    TasksUpdate,
}

impl RequestMethod {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "initialize" => Self::Initialize,
            "ping" => Self::Ping,
            "server/discover" => Self::ServerDiscover,
            "tools/call" => Self::ToolsCall,
            "tools/list" => Self::ToolsList,
            "prompts/list" => Self::PromptsList,
            "prompts/get" => Self::PromptsGet,
            "resources/list" => Self::ResourcesList,
            "resources/templates/list" => Self::ResourcesTemplatesList,
            "resources/read" => Self::ResourcesRead,
            "resources/subscribe" => Self::ResourcesSubscribe,
            "resources/unsubscribe" => Self::ResourcesUnsubscribe,
            "completion/complete" => Self::CompletionComplete,
            "logging/setLevel" => Self::LoggingSetLevel,
            "tasks/get" => Self::TasksGet,
            "tasks/result" => Self::TasksResult,
            "tasks/list" => Self::TasksList,
            "tasks/cancel" => Self::TasksCancel,
            "tasks/update" => Self::TasksUpdate,
            _ => return None,
        })
    }

    /// The method name, for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::Ping => "ping",
            Self::ServerDiscover => "server/discover",
            Self::ToolsCall => "tools/call",
            Self::ToolsList => "tools/list",
            Self::PromptsList => "prompts/list",
            Self::PromptsGet => "prompts/get",
            Self::ResourcesList => "resources/list",
            Self::ResourcesTemplatesList => "resources/templates/list",
            Self::ResourcesRead => "resources/read",
            Self::ResourcesSubscribe => "resources/subscribe",
            Self::ResourcesUnsubscribe => "resources/unsubscribe",
            Self::CompletionComplete => "completion/complete",
            Self::LoggingSetLevel => "logging/setLevel",
            Self::TasksGet => "tasks/get",
            Self::TasksResult => "tasks/result",
            Self::TasksList => "tasks/list",
            Self::TasksCancel => "tasks/cancel",
            Self::TasksUpdate => "tasks/update",
        }
    }
}

/// The notifications this server acts on; others are accepted and ignored.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum NotificationMethod {
    /// `notifications/cancelled`.
    Cancelled,
    /// `notifications/initialized`.
    Initialized,
    /// Any other notification: nothing to do.
    Other,
}

/// A refused frame: the error, and whether and to which id it is answered.
#[derive(Debug)]
pub struct Rejection {
    /// Why.
    pub error: McpError,
    /// Where the error reply goes.
    pub reply: ReplyTo,
}

/// Whom a rejection answers.
#[derive(Debug)]
pub enum ReplyTo {
    /// The id could not be read: `"id": null`.
    Null,
    /// The request's valid id.
    Id(RequestId),
    /// Nobody: a notification or an unsolicited response.
    Silent,
}

/// Checks one frame (a line without its ending) through steps 2 to 6.
///
/// # Errors
///
/// A [`Rejection`] carrying the first failed check and whom to answer.
pub fn parse(frame: &[u8], max_json_depth: usize) -> Result<Message<'_>, Rejection> {
    let null = |error| Rejection {
        error,
        reply: ReplyTo::Null,
    };
    // UTF-8 is checked once for the whole frame; the JSON reader then trusts it.
    let Ok(frame) = std::str::from_utf8(frame) else {
        return Err(null(McpError::Parse(ParseFault::InvalidUtf8)));
    };
    let parsed = json::parse_frame::<Mcp>(frame, max_json_depth);
    let members = match parsed {
        Ok(TopLevel::Object(members)) => members,
        Ok(TopLevel::Array) => return Err(null(McpError::Batch)),
        Ok(TopLevel::Scalar) => return Err(null(McpError::NotAnObject)),
        Err(JsonFault::Syntax) => return Err(null(McpError::Parse(ParseFault::InvalidJson))),
        Err(JsonFault::TooDeep) => return Err(null(McpError::Parse(ParseFault::TooDeep))),
    };
    // An id nested too deeply is a parse error like any other, whatever the message is.
    let id = match members
        .id
        .as_deref()
        .map(|raw| (raw, RequestId::parse(raw)))
    {
        None => None,
        // A number no 64-bit float holds (its text reads `0` here): an integer id beyond 64
        // bits, or a number that is not an integer; either way not one we echo.
        Some((_, Ok(_))) if members.id_out_of_range => Some(Err(Some(IdFault::NotAnInteger))),
        Some((_, Ok(id))) => Some(Ok(id)),
        // A number cannot be too deep, repeat a key or hold a bad escape (and reading it again
        // would cost as much as a 100,000-digit id is long): its fault stands.
        Some((raw, Err(fault))) if matches!(raw.as_bytes().first(), Some(b'-' | b'0'..=b'9')) => {
            Some(Err(Some(fault)))
        }
        Some((raw, Err(fault))) => {
            let repeated = json::check_raw(raw, 2, max_json_depth).map_err(|fault| {
                null(McpError::Parse(match fault {
                    JsonFault::TooDeep => ParseFault::TooDeep,
                    JsonFault::Syntax => ParseFault::InvalidJson,
                }))
            })?;
            Some(Err(if repeated { None } else { Some(fault) }))
        }
    };
    if members.method.is_none() && members.has_result_or_error {
        let sound = is_version_2(members.jsonrpc.as_ref())
            && !members.repeated_key
            && !members.id_repeated
            && !members.has_unknown_member
            && members.params.is_none();
        let id = match id {
            Some(Ok(id)) if sound => Some(id),
            _ => None,
        };
        return Ok(Message::Response(Response { id, frame }));
    }
    match id {
        None if members.method.is_some() => notification(members).map_err(|error| Rejection {
            error,
            reply: ReplyTo::Silent,
        }),
        None => Err(null(McpError::InvalidMethod(MethodFault::Missing))),
        Some(id) => request(members, id),
    }
}

/// Steps 4 to 6 for a message with an `id` member.
fn request(
    members: Members<'_>,
    id: Result<RequestId, Option<IdFault>>,
) -> Result<Message<'_>, Rejection> {
    let id = match id {
        Ok(_) if members.id_repeated => Err(Some(IdFault::Duplicated)),
        other => other,
    };
    // Refusals before the id is known good answer `null`; the id is cloned only then.
    let early = |error, id: &Result<RequestId, Option<IdFault>>| {
        let reply = match id {
            Ok(id) => ReplyTo::Id(id.clone()),
            Err(_) => ReplyTo::Null,
        };
        Err(Rejection { error, reply })
    };
    if !is_version_2(members.jsonrpc.as_ref()) {
        return early(McpError::InvalidJsonRpcVersion, &id);
    }
    let name = match &members.method {
        None => return early(McpError::InvalidMethod(MethodFault::Missing), &id),
        Some(Text::Str(name)) => name,
        Some(Text::NotAString) => {
            return early(McpError::InvalidMethod(MethodFault::NotAString), &id);
        }
    };
    let id = match id {
        Ok(id) => id,
        Err(Some(fault)) => return early(McpError::InvalidId(fault), &Err(None)),
        Err(None) => return early(McpError::DuplicateKey, &Err(None)),
    };
    let refuse = |error, id| {
        Err(Rejection {
            error,
            reply: ReplyTo::Id(id),
        })
    };
    if members.repeated_key {
        return refuse(McpError::DuplicateKey, id);
    }
    if members.has_unknown_member || members.has_result_or_error {
        return refuse(McpError::UnknownMember, id);
    }
    if name.len() > MAX_METHOD_BYTES {
        return refuse(McpError::InvalidMethod(MethodFault::TooLong), id);
    }
    let Some(method) = RequestMethod::parse(name) else {
        return refuse(McpError::MethodNotFound, id);
    };
    let params = match members.params {
        None => None,
        Some(ParamsMember::Object(params)) => Some(params),
        Some(ParamsMember::NotAnObject) => {
            return refuse(McpError::InvalidParams("params must be an object"), id);
        }
    };
    Ok(Message::Request(Request { id, method, params }))
}

/// Steps 4 to 6 for a message without an `id` member; failures are never answered.
fn notification(members: Members<'_>) -> Result<Message<'_>, McpError> {
    if !is_version_2(members.jsonrpc.as_ref()) {
        return Err(McpError::InvalidJsonRpcVersion);
    }
    let Some(Text::Str(name)) = &members.method else {
        return Err(McpError::InvalidMethod(MethodFault::NotAString));
    };
    if members.repeated_key {
        return Err(McpError::DuplicateKey);
    }
    if members.has_unknown_member || members.has_result_or_error {
        return Err(McpError::UnknownMember);
    }
    if name.len() > MAX_METHOD_BYTES {
        return Err(McpError::InvalidMethod(MethodFault::TooLong));
    }
    let method = match &**name {
        "notifications/cancelled" => NotificationMethod::Cancelled,
        "notifications/initialized" => NotificationMethod::Initialized,
        _ => NotificationMethod::Other,
    };
    let params = match members.params {
        None => None,
        Some(ParamsMember::Object(params)) => Some(params),
        Some(ParamsMember::NotAnObject) => {
            return Err(McpError::InvalidParams("params must be an object"));
        }
    };
    Ok(Message::Notification(Notification { method, params }))
}

/// What a response carries: its `result`, or `true` when it is an `error`.
#[derive(Debug)]
pub(crate) enum AnswerPart<'a> {
    /// The raw `result`.
    Result(&'a serde_json::value::RawValue),
    /// An `error` (its contents are the peer's text and are never read).
    Error,
}

/// The `result` or `error` of a response the envelope let through ([`Response::frame`]);
/// `None` when it has both, or neither.
pub(crate) fn answer_parts(frame: &str) -> Option<AnswerPart<'_>> {
    // A member that is present is kept even when it is `null` (`Option` alone would read a
    // `null` as absent, and `"error": null` beside a result would pass for a result alone).
    fn present<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<&'de serde_json::value::RawValue>, D::Error> {
        serde::Deserialize::deserialize(deserializer).map(Some)
    }
    #[derive(serde::Deserialize)]
    struct Parts<'a> {
        #[serde(borrow, default, deserialize_with = "present")]
        result: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow, default, deserialize_with = "present")]
        error: Option<&'a serde_json::value::RawValue>,
    }
    let parts: Parts<'_> = serde_json::from_str(frame).ok()?;
    match (parts.result, parts.error) {
        (Some(result), None) => Some(AnswerPart::Result(result)),
        (None, Some(_)) => Some(AnswerPart::Error),
        _ => None,
    }
}

fn is_version_2(jsonrpc: Option<&Text<'_>>) -> bool {
    jsonrpc.and_then(Text::as_str) == Some("2.0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn reject(frame: &str) -> (i32, String) {
        match parse(frame.as_bytes(), 64) {
            Ok(message) => panic!("accepted {frame}: {message:?}"),
            Err(rejection) => {
                let to = match rejection.reply {
                    ReplyTo::Null => "null".to_owned(),
                    ReplyTo::Id(id) => id.raw().to_owned(),
                    ReplyTo::Silent => "silent".to_owned(),
                };
                (rejection.error.to_wire().code.get(), to)
            }
        }
    }

    #[test]
    fn a_good_request_is_accepted() {
        let Ok(Message::Request(request)) = parse(
            br#"{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}"#,
            64,
        ) else {
            panic!()
        };
        assert_eq!(request.method, RequestMethod::ToolsList);
        assert_eq!(request.id.raw(), r#""x""#);
        assert!(request.params.is_some());
    }

    #[test]
    fn checks_run_in_the_design_order() {
        assert_eq!(reject("\u{0}\u{ff}"), (-32_700, "null".into()));
        assert_eq!(reject("{\"id\":1,"), (-32_700, "null".into()));
        assert_eq!(reject("[]"), (-32_600, "null".into()));
        assert_eq!(
            reject(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            (-32_600, "null".into())
        );
        assert_eq!(reject("42"), (-32_600, "null".into()));
        assert_eq!(
            reject(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            (-32_600, "1".into())
        );
        assert_eq!(reject(r#"{"jsonrpc":"2.0","id":1}"#), (-32_600, "1".into()));
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1,"method":7}"#),
            (-32_600, "1".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            (-32_600, "null".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (-32_600, "null".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            (-32_600, "null".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1,"a":1}}"#),
            (-32_600, "1".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#),
            (-32_600, "null".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1,"method":"ping","x":1}"#),
            (-32_600, "1".into())
        );
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"{}"}}"#,
            "m".repeat(129)
        );
        assert_eq!(reject(&long), (-32_600, "1".into()));
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#),
            (-32_601, "1".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1,"method":"nope","params":3}"#),
            (-32_601, "1".into())
        );
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#),
            (-32_602, "1".into())
        );
    }

    /// Review finding N1: a lone surrogate in a string id was called "nested too deeply".
    #[test]
    fn a_bad_string_id_is_invalid_json_not_too_deep() {
        let rejection =
            parse(br#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#, 64).unwrap_err();
        assert_eq!(rejection.error, McpError::Parse(ParseFault::InvalidJson));
    }

    #[test]
    fn a_deep_id_is_a_parse_error() {
        let frame = format!(
            r#"{{"jsonrpc":"2.0","method":"ping","id":{}1{}}}"#,
            "[".repeat(80),
            "]".repeat(80)
        );
        assert_eq!(
            reject(&frame),
            (ErrorCode::PARSE_ERROR.get(), "null".into())
        );
    }

    #[test]
    fn notifications_are_never_answered_even_when_malformed() {
        assert_eq!(
            reject(r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#).1,
            "silent"
        );
        assert_eq!(reject(r#"{"jsonrpc":"2.0","method":5}"#).1, "silent");
        assert_eq!(
            reject(r#"{"jsonrpc":"2.0","method":"x","params":1}"#).1,
            "silent"
        );
        assert!(matches!(
            parse(
                br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#,
                64
            ),
            Ok(Message::Notification(Notification {
                method: NotificationMethod::Other,
                ..
            }))
        ));
    }

    #[test]
    fn unsolicited_responses_are_dropped() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#,
            r#"{"id":{"deep":1},"result":null}"#,
        ] {
            assert!(
                matches!(parse(frame.as_bytes(), 64), Ok(Message::Response(_))),
                "{frame}"
            );
        }
    }

    fn response_id(frame: &str) -> Option<String> {
        match parse(frame.as_bytes(), 64) {
            Ok(Message::Response(response)) => response.id.map(|id| id.raw().to_owned()),
            other => panic!("{frame}: {other:?}"),
        }
    }

    #[test]
    fn a_response_keeps_its_id_only_when_it_is_well_formed() {
        assert_eq!(
            response_id(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            response_id(r#"{"jsonrpc":"2.0","id":"a","error":{"code":1}}"#).as_deref(),
            Some("\"a\"")
        );
        for frame in [
            r#"{"id":7,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"id":8,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":1,"a":2}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"params":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
        ] {
            assert_eq!(response_id(frame), None, "{frame}");
        }
    }

    #[test]
    fn a_response_has_a_result_or_an_error_never_both() {
        let result = answer_parts(r#"{"jsonrpc":"2.0","id":7,"result":{"x":[1]}}"#);
        assert!(matches!(result, Some(AnswerPart::Result(raw)) if raw.get() == r#"{"x":[1]}"#));
        assert!(matches!(
            answer_parts(r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}"#),
            Some(AnswerPart::Error)
        ));
        assert!(answer_parts(r#"{"jsonrpc":"2.0","id":7,"result":1,"error":{}}"#).is_none());
        // The red team's finding: a `null` beside the other member is still a member.
        assert!(answer_parts(r#"{"jsonrpc":"2.0","id":7,"result":{},"error":null}"#).is_none());
        assert!(answer_parts(r#"{"jsonrpc":"2.0","id":7,"result":null,"error":{}}"#).is_none());
        assert!(matches!(
            answer_parts(r#"{"jsonrpc":"2.0","id":7,"result":null}"#),
            Some(AnswerPart::Result(raw)) if raw.get() == "null"
        ));
        assert!(answer_parts(r#"{"jsonrpc":"2.0","id":7}"#).is_none());
    }
}
