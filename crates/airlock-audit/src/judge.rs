//! Judging what a server under audit writes: whether one stdout line is exactly one JSON-RPC
//! 2.0 message, and whether the replies to one hostile input are among those a correct server
//! may give.
//!
//! Both decisions are pure functions of bytes and values, so they are tested here without a
//! process. Nothing read from the server is trusted: lines are parsed with serde_json's default
//! nesting limit, only bounded facts are kept (an id, an error code, a result of at most
//! [`MAX_KEPT_RESULT_BYTES`]), and any text shown in a report passes through [`shown`], which
//! escapes control characters and bounds the length, so a hostile server cannot write
//! terminal escapes into the auditor's output.

use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::Verdict;
use super::severity::Severity;

/// A request id as it appears on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Id {
    /// `null`.
    Null,
    /// A number, as its exact text: ids are compared digit for digit, never through floats,
    /// so a server that rounds `9007199254740993` is caught.
    Number(String),
    /// A string, unescaped (`"\u00e4"` and `"ä"` are the same id).
    Str(String),
}

impl Id {
    /// The id as JSON text.
    pub(crate) fn to_json(&self) -> String {
        match self {
            Self::Null => "null".to_owned(),
            Self::Number(text) => text.clone(),
            Self::Str(text) => Value::String(text.clone()).to_string(),
        }
    }

    /// The id written as the JSON text `text`; `None` if it is not null, a number or a string.
    pub(crate) fn from_json(text: &str) -> Option<Self> {
        let text = text.trim();
        match text.as_bytes().first()? {
            b'n' if text == "null" => Some(Self::Null),
            b'"' => serde_json::from_str::<String>(text).ok().map(Self::Str),
            b'-' | b'0'..=b'9' => Some(Self::Number(text.to_owned())),
            _ => None,
        }
    }

    /// The id for a report: JSON-like, escaped and bounded.
    pub(crate) fn show(&self) -> String {
        match self {
            Self::Null => "null".to_owned(),
            Self::Number(text) => shown(text, MAX_SHOWN_ID_CHARS),
            Self::Str(text) => format!("\"{}\"", shown(text, MAX_SHOWN_ID_CHARS)),
        }
    }
}

/// One line of the server's stdout, classified.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Line {
    /// A response: an id and a result or an error.
    Response(Response),
    /// A JSON array of responses: a batch reply.
    Batch(Vec<Response>),
    /// A notification from the server (allowed at any time; not judged further).
    Notification,
    /// A request from the server (sampling, roots, elicitation…): answered "method not
    /// found" by the session, or by the `asking` cases with hostile answers.
    Request(Asked),
    /// An empty or whitespace-only line.
    Blank,
    /// Anything else; the text says what is wrong with it.
    Invalid(&'static str),
    /// A line longer than the reader keeps; its bytes were counted and dropped.
    TooLong,
}

/// A request the server wrote to the audit (its question to the client).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Asked {
    /// Its id, which the answer must carry.
    pub(crate) id: Id,
    /// Its method (`elicitation/create`, `sampling/createMessage`, `roots/list`, …).
    pub(crate) method: String,
    /// Its params, when its line is at most [`MAX_KEPT_RESULT_BYTES`].
    pub(crate) params: Option<Value>,
}

/// A response the server wrote.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Response {
    /// The id it answers.
    pub(crate) id: Id,
    /// A result or an error.
    pub(crate) outcome: Outcome,
}

/// What a response carries.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// A result; `is_error` is a tool result's `isError`, `value` the result itself when its
    /// line is at most [`MAX_KEPT_RESULT_BYTES`].
    Result {
        /// `result.isError == true` (a tool that ran and failed, or refused its arguments).
        is_error: bool,
        /// The result object, when small enough to keep.
        value: Option<Value>,
    },
    /// An error object.
    Error {
        /// `error.code`.
        code: i64,
        /// `error.data.retryAfterMs`, when a rate limiter says how long to wait.
        retry_after_ms: Option<u64>,
    },
}

impl Response {
    /// What the response is, without its id: `error -32700`, `tool error result`, `result`
    /// (findings that merge repeats use this, so a flood of replies is one finding counted).
    pub(crate) fn kind(&self) -> String {
        match &self.outcome {
            Outcome::Error { code, .. } => format!("error {code}"),
            Outcome::Result { is_error: true, .. } => "tool error result".to_owned(),
            Outcome::Result { .. } => "result".to_owned(),
        }
    }

    /// The response in a few words: `error -32700, id null`, `result, id 7`.
    pub(crate) fn describe(&self) -> String {
        match &self.outcome {
            Outcome::Error { code, .. } => format!("error {code}, id {}", self.id.show()),
            Outcome::Result { is_error: true, .. } => {
                format!("tool error result, id {}", self.id.show())
            }
            Outcome::Result { .. } => format!("result, id {}", self.id.show()),
        }
    }
}

/// Classifies one stdout line (without its `\n`). `\r` and other JSON whitespace around the
/// message are accepted.
pub(crate) fn classify(line: &[u8]) -> Line {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Blank;
    }
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return huge_numeric_id(line).unwrap_or(Line::Invalid("not JSON"));
    };
    match value {
        Value::Object(map) => message(map, Some(line)),
        Value::Array(items) => {
            if items.is_empty() {
                return Line::Invalid("an empty array");
            }
            let mut responses = Vec::with_capacity(items.len());
            for item in items {
                let Value::Object(map) = item else {
                    return Line::Invalid("an array holding something other than responses");
                };
                match message(map, None) {
                    Line::Response(response) => responses.push(response),
                    Line::Invalid(reason) => return Line::Invalid(reason),
                    _ => {
                        return Line::Invalid("an array holding something other than responses");
                    }
                }
            }
            Line::Batch(responses)
        }
        _ => Line::Invalid("a JSON value that is not an object"),
    }
}

/// One JSON-RPC message; `raw` is its line, to read a numeric id's exact text.
fn message(mut map: Map<String, Value>, raw: Option<&[u8]>) -> Line {
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Line::Invalid("\"jsonrpc\" is not \"2.0\"");
    }
    if let Some(method) = map.get("method") {
        let Some(method) = method.as_str().map(str::to_owned) else {
            return Line::Invalid("\"method\" is not a string");
        };
        let id = match map.get("id") {
            None => return Line::Notification,
            Some(Value::String(id)) => Id::Str(id.clone()),
            Some(Value::Number(number)) => Id::Number(number.to_string()),
            Some(_) => return Line::Invalid("a request whose id is not a string or a number"),
        };
        let small = raw.is_some_and(|raw| raw.len() <= MAX_KEPT_RESULT_BYTES);
        let params = map.remove("params").filter(|_| small);
        return Line::Request(Asked { id, method, params });
    }
    let Some(id_value) = map.get("id") else {
        return Line::Invalid("neither a request, a notification nor a response");
    };
    let id = match id_value {
        Value::Null => Id::Null,
        Value::String(text) => Id::Str(text.clone()),
        // Integers print back exactly; only a float (`7.0`, `1e2`, a rounded huge number)
        // needs its text from the line itself.
        Value::Number(number) if number.is_f64() => Id::Number(
            raw.and_then(raw_id_text)
                .unwrap_or_else(|| number.to_string()),
        ),
        Value::Number(number) => Id::Number(number.to_string()),
        _ => return Line::Invalid("a response whose id is not a string, a number or null"),
    };
    let outcome = match (map.remove("result"), map.remove("error")) {
        (Some(result), None) => {
            let is_error = result.get("isError") == Some(&Value::Bool(true));
            let small = raw.is_some_and(|raw| raw.len() <= MAX_KEPT_RESULT_BYTES);
            Outcome::Result {
                is_error,
                value: small.then_some(result),
            }
        }
        (None, Some(Value::Object(error))) => {
            let code = error.get("code").and_then(Value::as_i64);
            let has_message = error.get("message").is_some_and(Value::is_string);
            let (Some(code), true) = (code, has_message) else {
                return Line::Invalid("an error without an integer code and a string message");
            };
            let retry_after_ms = error
                .get("data")
                .and_then(|data| data.get("retryAfterMs"))
                .and_then(Value::as_u64);
            Outcome::Error {
                code,
                retry_after_ms,
            }
        }
        (None, Some(_)) => return Line::Invalid("an error that is not an object"),
        (Some(_), Some(_)) | (None, None) => {
            return Line::Invalid("a response without exactly one of result and error");
        }
    };
    Line::Response(Response { id, outcome })
}

/// A message whose numeric id is past the range of `f64` (a `Value` cannot hold it, so the
/// line did not parse): judged as any other, with the id's exact text. A server that echoes a
/// 100,000-digit id digit for digit answers correctly. Any other number out of range is still
/// not JSON.
fn huge_numeric_id(line: &[u8]) -> Option<Line> {
    let members: std::collections::BTreeMap<String, Box<RawValue>> =
        serde_json::from_slice(line).ok()?;
    let mut map = Map::new();
    for (key, raw) in members {
        let value = if key == "id" {
            let numeric = raw
                .get()
                .trim_start()
                .starts_with(|c: char| c == '-' || c.is_ascii_digit());
            // A float stand-in: `message` then reads the id's text from the line.
            numeric.then(|| Value::from(0.5))?
        } else {
            serde_json::from_str(raw.get()).ok()?
        };
        map.insert(key, value);
    }
    Some(message(map, Some(line)))
}

/// The exact text of a line's top-level `"id"` member, for numbers that would not survive a
/// round trip through `f64` or `u64`.
fn raw_id_text(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct RawId<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    serde_json::from_slice::<RawId<'_>>(line)
        .ok()
        .map(|raw| raw.id.get().trim().to_owned())
}

/// Whether a stdout line carries panic text or a stack trace (Rust, Node, Python, Go, Java),
/// raw or escaped inside a JSON string, told by its shape (`trace`). What a crash prints
/// belongs on stderr: on stdout it tells the peer about the server's code and paths, and a
/// client may show it to a model.
///
/// A tool result's `content` is left out: it is the tool's output, which the audit cannot
/// tell from a crash report (a search tool over a source tree, a test runner's failures,
/// `git log` of a project that fixes panics all print trace-shaped lines). Error objects,
/// every other member of a message, and lines that are not JSON are judged. A line of an
/// HTTP body may carry its message after `data:` (SSE).
pub(crate) fn leaks_trace(line: &[u8]) -> bool {
    line.split(|byte| *byte == b'\n').any(|physical| {
        let message = physical
            .strip_prefix(b"data:")
            .unwrap_or(physical)
            .trim_ascii();
        match serde_json::from_slice::<Value>(message) {
            Ok(mut value) => {
                without_tool_content(&mut value);
                serde_json::to_vec(&value).is_ok_and(|judged| super::trace::shows_trace(&judged))
            }
            Err(_) => super::trace::shows_trace(physical),
        }
    })
}

/// Drops `result.content` from a message (or each message of a batch).
fn without_tool_content(value: &mut Value) {
    match value {
        Value::Array(messages) => messages.iter_mut().for_each(without_tool_content),
        Value::Object(message) => {
            if let Some(Value::Object(result)) = message.get_mut("result") {
                result.remove("content");
                result.remove("structuredContent");
            }
        }
        _ => {}
    }
}

/// What came back for one hostile input: each stdout message that answers it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reply {
    /// One response on its own line.
    Single(Response),
    /// One array of responses on one line.
    Batch(Vec<Response>),
}

impl Reply {
    /// The reply in a few words.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Single(response) => response.describe(),
            Self::Batch(responses) => format!("an array of {} responses", responses.len()),
        }
    }
}

/// Which ids an expectation accepts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum IdIs {
    /// `null`.
    Null,
    /// The id the hostile input carried.
    Sent,
    /// This exact id (JSON text), e.g. `7` for an input that sent `7.0`.
    Raw(&'static str),
    /// Any id at all.
    Any,
}

/// What the replies to one input look like, for one arm of an expectation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum When {
    /// No reply at all.
    Silent,
    /// Exactly one reply: an error with one of these codes (any code if empty) and one of
    /// these ids.
    Error(&'static [i64], &'static [IdIs]),
    /// Two or more replies, each an error with one of these codes and ids.
    Errors(&'static [i64], &'static [IdIs]),
    /// Exactly one reply: a tool result with `isError: true` and one of these ids.
    ToolError(&'static [IdIs]),
    /// Exactly one reply: a result (of any kind) with one of these ids.
    Result(&'static [IdIs]),
    /// Exactly one reply: an array of responses.
    Batch,
    /// Two or more replies, each a result with one of these ids.
    Results(&'static [IdIs]),
}

/// One acceptable (or known bad) shape of the replies, and what it means.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arm {
    /// The shape.
    pub(crate) when: When,
    /// The verdict when the replies have that shape.
    pub(crate) verdict: Verdict,
    /// How bad it is, for a note or a failure.
    pub(crate) severity: Severity,
    /// Why, for a note or a failure; empty for an ordinary pass.
    pub(crate) why: &'static str,
}

/// An arm that passes.
pub(crate) const fn pass(when: When) -> Arm {
    Arm {
        when,
        verdict: Verdict::Pass,
        severity: Severity::Info,
        why: "",
    }
}

/// An arm that passes with an explanation.
pub(crate) const fn pass_because(when: When, why: &'static str) -> Arm {
    Arm {
        when,
        verdict: Verdict::Pass,
        severity: Severity::Info,
        why,
    }
}

/// An arm for acceptable but worse behaviour (severity low).
pub(crate) const fn note(when: When, why: &'static str) -> Arm {
    note_as(when, Severity::Low, why)
}

/// An arm for allowed behaviour of a given severity (a batch accepted is medium).
pub(crate) const fn note_as(when: When, severity: Severity, why: &'static str) -> Arm {
    Arm {
        when,
        verdict: Verdict::Note,
        severity,
        why,
    }
}

/// An arm for a known wrong answer that loses or misaddresses a reply (severity high).
pub(crate) const fn fail(when: When, why: &'static str) -> Arm {
    fail_as(when, Severity::High, why)
}

/// An arm for a known wrong answer of a given severity (a wrong code is medium).
pub(crate) const fn fail_as(when: When, severity: Severity, why: &'static str) -> Arm {
    Arm {
        when,
        verdict: Verdict::Fail,
        severity,
        why,
    }
}

/// A judgement of the replies to one input: its verdict, how bad it is (`None` for a pass),
/// and what came back.
pub(crate) type Judged = (Verdict, Option<Severity>, String);

/// Judges `replies` against `arms` (first match wins). Replies no arm describes fail: silence
/// where an answer is owed, several answers to one message, or a wrong code or id. Silence
/// to a request, several replies and a reply under an id nobody sent are high; a wrong code
/// (or silence to input without an id) is medium.
pub(crate) fn judge(arms: &[Arm], replies: &[Reply], sent: Option<&Id>) -> Judged {
    let summary = describe(replies);
    let matched = arms
        .iter()
        .find(|arm| matches_when(arm.when, replies, sent));
    let severity_of = |arm: &Arm| (arm.verdict != Verdict::Pass).then_some(arm.severity);
    match matched {
        Some(arm) if arm.why.is_empty() => (arm.verdict, severity_of(arm), summary),
        Some(arm) => (
            arm.verdict,
            severity_of(arm),
            format!("{summary}: {}", arm.why),
        ),
        None => {
            let (why, severity) = match replies {
                [] if sent.is_some() => ("a reply is owed", Severity::High),
                [] => ("a reply is owed", Severity::Medium),
                [Reply::Single(response)]
                    if sent.is_some_and(|sent| *sent != response.id) && response.id != Id::Null =>
                {
                    ("not an answer a correct server gives", Severity::High)
                }
                [_] => ("not an answer a correct server gives", Severity::Medium),
                _ => ("several replies to one message", Severity::High),
            };
            (Verdict::Fail, Some(severity), format!("{summary}: {why}"))
        }
    }
}

/// The replies in a few words: `no reply`, `error -32700, id null`, `2 replies: …`.
pub(crate) fn describe(replies: &[Reply]) -> String {
    match replies {
        [] => "no reply".to_owned(),
        [one] => one.describe(),
        many => {
            let shown: Vec<String> = many.iter().take(3).map(Reply::describe).collect();
            let more = if many.len() > 3 { ", …" } else { "" };
            format!("{} replies: {}{more}", many.len(), shown.join("; "))
        }
    }
}

fn matches_when(when: When, replies: &[Reply], sent: Option<&Id>) -> bool {
    let single = |test: &dyn Fn(&Response) -> bool| match replies {
        [Reply::Single(response)] => test(response),
        _ => false,
    };
    let each = |test: &dyn Fn(&Response) -> bool| {
        replies.len() >= 2
            && replies
                .iter()
                .all(|reply| matches!(reply, Reply::Single(response) if test(response)))
    };
    match when {
        When::Silent => replies.is_empty(),
        When::Error(codes, ids) => single(&|r| is_error(r, codes) && id_is(&r.id, ids, sent)),
        When::Errors(codes, ids) => each(&|r| is_error(r, codes) && id_is(&r.id, ids, sent)),
        When::ToolError(ids) => single(&|r| {
            matches!(r.outcome, Outcome::Result { is_error: true, .. }) && id_is(&r.id, ids, sent)
        }),
        When::Result(ids) => {
            single(&|r| matches!(r.outcome, Outcome::Result { .. }) && id_is(&r.id, ids, sent))
        }
        When::Results(ids) => {
            each(&|r| matches!(r.outcome, Outcome::Result { .. }) && id_is(&r.id, ids, sent))
        }
        When::Batch => matches!(replies, [Reply::Batch(_)]),
    }
}

fn is_error(response: &Response, codes: &[i64]) -> bool {
    matches!(response.outcome, Outcome::Error { code, .. } if codes.is_empty() || codes.contains(&code))
}

fn id_is(id: &Id, allowed: &[IdIs], sent: Option<&Id>) -> bool {
    allowed.iter().any(|allowed| match allowed {
        IdIs::Null => *id == Id::Null,
        IdIs::Sent => sent.is_some_and(|sent| sent == id),
        IdIs::Raw(text) => Id::from_json(text).is_some_and(|raw| raw == *id),
        IdIs::Any => true,
    })
}

/// `text` made safe to print: control, bidi and other invisible characters escaped, at most
/// `max_chars` characters kept.
pub(crate) fn shown(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count >= max_chars {
            out.push('…');
            break;
        }
        if c.is_control() || is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Like [`shown`], but line breaks stay (for a stderr tail, which JSON escapes anyway).
pub(crate) fn shown_lines(text: &str, max_chars: usize) -> String {
    let mut kept = 0_usize;
    let mut lines = Vec::new();
    for line in text.split('\n') {
        let room = max_chars.saturating_sub(kept);
        if room == 0 {
            break;
        }
        let line = shown(line, room);
        kept = kept.saturating_add(line.chars().count()).saturating_add(1);
        lines.push(line);
    }
    lines.join("\n")
}

/// Format and bidi controls that change how a line reads without showing themselves.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// Longest stdout line whose result is kept for inspection (tools/list, initialize); longer
/// results are only classified. Large enough for the tool list of a server with a hundred
/// tools.
pub(crate) const MAX_KEPT_RESULT_BYTES: usize = 256 * 1024;

/// Characters of an id shown in a report.
const MAX_SHOWN_ID_CHARS: usize = 24;

/// A case's verdict on what it sent.
#[derive(Debug)]
pub(crate) struct Judgement {
    /// The verdict.
    pub(crate) verdict: Verdict,
    /// How bad it is (`None` for a pass).
    pub(crate) severity: Option<Severity>,
    /// What came back and what it means.
    pub(crate) detail: String,
    /// From the end of the input to its first answer.
    pub(crate) answer: Option<Duration>,
    /// Whether the follow-up ping and tools/list run (not after end of input).
    pub(crate) follow_up: bool,
}

impl Judgement {
    /// A failure before the case could run (handshake, spawn): a fresh server that does not
    /// complete its handshake is unusable, so this is critical.
    pub(crate) fn failed(detail: String) -> Self {
        Self {
            verdict: Verdict::Fail,
            severity: Some(Severity::Critical),
            detail,
            answer: None,
            follow_up: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(line: &str) -> Response {
        match classify(line.as_bytes()) {
            Line::Response(response) => response,
            other => panic!("not a response: {other:?}"),
        }
    }

    fn single(line: &str) -> Reply {
        Reply::Single(response(line))
    }

    const PARSE: &[Arm] = &[
        pass(When::Error(&[-32700], &[IdIs::Null])),
        note(
            When::Error(&[-32600], &[IdIs::Null]),
            "-32600 where JSON-RPC says -32700",
        ),
        note(When::Result(&[IdIs::Sent]), "accepts invalid JSON"),
        fail_as(
            When::Silent,
            Severity::Medium,
            "a client waiting on it hangs",
        ),
    ];

    #[test]
    fn a_response_is_classified_with_its_id_and_code() {
        let r = response(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert_eq!(r.id, Id::Null);
        assert_eq!(
            r.outcome,
            Outcome::Error {
                code: -32700,
                retry_after_ms: None
            }
        );
        let r = response(
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-31429,"message":"x","data":{"retryAfterMs":250}}}"#,
        );
        assert_eq!(
            r.outcome,
            Outcome::Error {
                code: -31429,
                retry_after_ms: Some(250)
            }
        );
        let r = response(r#"{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[]}}"#);
        assert!(matches!(r.outcome, Outcome::Result { is_error: true, .. }));
    }

    #[test]
    fn numeric_ids_keep_their_exact_digits() {
        let r = response(r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#);
        assert_eq!(r.id, Id::Number("18446744073709551616".to_owned()));
        let sent = Id::from_json("9007199254740993").unwrap();
        let rounded = response(r#"{"jsonrpc":"2.0","id":9007199254740992,"result":{}}"#);
        assert_ne!(rounded.id, sent);
        assert_ne!(Id::from_json("7.0"), Id::from_json("7"));
    }

    #[test]
    fn an_id_past_the_range_of_f64_echoed_exactly_is_a_response_with_its_digits() {
        // Found by the judge fuzz target: the catalogue passes a result echoing a
        // 100,000-digit id, but the line did not parse as a `Value` and was called not JSON.
        let digits = "1".repeat(400);
        let line = format!(r#"{{"jsonrpc":"2.0","id":{digits},"result":{{}}}}"#);
        let r = response(&line);
        assert_eq!(r.id, Id::Number(digits.clone()));
        assert_eq!(Id::from_json(&digits), Some(r.id));
        let error = format!(
            r#"{{"jsonrpc":"2.0","id":-{digits}e5,"error":{{"code":-32600,"message":"m"}}}}"#
        );
        assert_eq!(response(&error).id, Id::Number(format!("-{digits}e5")));
        // Anything else out of range is still not JSON.
        let elsewhere = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"n":{digits}}}}}"#);
        assert_eq!(classify(elsewhere.as_bytes()), Line::Invalid("not JSON"));
        assert_eq!(classify(digits.as_bytes()), Line::Invalid("not JSON"));
    }

    #[test]
    fn ids_print_back_as_json() {
        for text in [r#""a\"b""#, "-0", "18446744073709551616", "null"] {
            assert_eq!(Id::from_json(text).unwrap().to_json(), text);
        }
    }

    #[test]
    fn string_ids_compare_after_unescaping() {
        let sent = Id::from_json(r#""ä\u00e4""#).unwrap();
        assert_eq!(
            response(r#"{"jsonrpc":"2.0","id":"ää","result":{}}"#).id,
            sent
        );
    }

    #[test]
    fn lines_that_are_not_one_message_are_invalid() {
        for (line, reason) in [
            ("hello", "not JSON"),
            ("thread 'main' panicked at src/main.rs:1:1", "not JSON"),
            ("42", "a JSON value that is not an object"),
            ("[]", "an empty array"),
            (r#"{"id":1,"result":{}}"#, "\"jsonrpc\" is not \"2.0\""),
            (
                r#"{"jsonrpc":"2.0","id":1}"#,
                "a response without exactly one of result and error",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
                "a response without exactly one of result and error",
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"result":{}}"#,
                "a response whose id is not a string, a number or null",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
                "an error without an integer code and a string message",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
                "an error without an integer code and a string message",
            ),
            (
                r#"{"jsonrpc":"2.0"}"#,
                "neither a request, a notification nor a response",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{}}{"jsonrpc":"2.0","id":2,"result":{}}"#,
                "not JSON",
            ),
        ] {
            assert_eq!(classify(line.as_bytes()), Line::Invalid(reason), "{line}");
        }
        assert_eq!(
            classify(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}"),
            Line::Invalid("not JSON")
        );
    }

    #[test]
    fn notifications_requests_blanks_and_batches_are_told_apart() {
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#),
            Line::Notification
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#),
            Line::Request(Asked {
                id: Id::Str("s1".to_owned()),
                method: "roots/list".to_owned(),
                params: None
            })
        );
        // A question's params are kept for the asking cases (its requested schema).
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"message":"m"}}"#),
            Line::Request(Asked {
                id: Id::Number("4".to_owned()),
                method: "elicitation/create".to_owned(),
                params: Some(serde_json::json!({"message": "m"}))
            })
        );
        assert_eq!(classify(b" \r"), Line::Blank);
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1,"result":{}} "#),
            Line::Response(Response {
                id: Id::Number("1".to_owned()),
                outcome: Outcome::Result {
                    is_error: false,
                    value: Some(serde_json::json!({}))
                }
            })
        );
        match classify(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]"#,
        ) {
            Line::Batch(responses) => assert_eq!(responses.len(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            classify(br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"}]"#),
            Line::Invalid("an array holding something other than responses")
        );
    }

    #[test]
    fn stack_traces_and_panics_are_spotted_raw_or_escaped() {
        assert!(leaks_trace(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Error: boom\n    at Object.<anonymous> (/srv/x.js:1:7)"}}"#
        ));
        assert!(leaks_trace(
            b"thread 'tokio-runtime-worker' panicked at src/lib.rs:9:5:"
        ));
        assert!(leaks_trace(b"Traceback (most recent call last):"));
        // Issue 41: a tool echoing the environment is not a stack trace.
        assert!(!leaks_trace(
            br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"RUST_BACKTRACE\":\"1\"}"}]}}"#
        ));
        assert!(!leaks_trace(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32700,"message":"Parse error"}}"#
        ));
        // A tool's own output (a search over a source tree holding these very tests) is not
        // the server's crash; the same text in an error, or on a line that is not JSON, is.
        let output = r#"Traceback (most recent call last):\n  File \"x.py\", line 3"#;
        assert!(!leaks_trace(
            format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{output}"}}],"isError":true}}}}"#).as_bytes()
        ));
        assert!(leaks_trace(
            format!(r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":-32603,"message":"{output}"}}}}"#)
                .as_bytes()
        ));
        assert!(leaks_trace(
            format!(
                r#"data: {{"jsonrpc":"2.0","id":3,"error":{{"code":-32603,"message":"{output}"}}}}"#
            )
            .as_bytes()
        ));
        assert!(leaks_trace(
            b"thread 'main' panicked at src/main.rs:1:1:\n{\"jsonrpc\":\"2.0\"}"
        ));
    }

    #[test]
    fn the_first_matching_arm_decides() {
        let sent = Id::from_json("7");
        let parse_error =
            single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert_eq!(
            judge(PARSE, &[parse_error], sent.as_ref()),
            (Verdict::Pass, None, "error -32700, id null".to_owned())
        );
        let lenient = single(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        assert_eq!(
            judge(PARSE, &[lenient], sent.as_ref()),
            (
                Verdict::Note,
                Some(Severity::Low),
                "result, id 7: accepts invalid JSON".to_owned()
            )
        );
        assert_eq!(
            judge(PARSE, &[], sent.as_ref()),
            (
                Verdict::Fail,
                Some(Severity::Medium),
                "no reply: a client waiting on it hangs".to_owned()
            )
        );
    }

    #[test]
    fn unlisted_replies_fail_with_what_came() {
        let sent = Id::from_json("7");
        let wrong_id = single(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32700,"message":"x"}}"#);
        let (verdict, severity, detail) =
            judge(PARSE, std::slice::from_ref(&wrong_id), sent.as_ref());
        assert_eq!(verdict, Verdict::Fail);
        assert_eq!(severity, Some(Severity::Medium), "a wrong code is medium");
        assert_eq!(
            detail,
            "error -32700, id 7: not an answer a correct server gives"
        );
        let (verdict, severity, detail) =
            judge(PARSE, &[wrong_id.clone(), wrong_id], sent.as_ref());
        assert_eq!(verdict, Verdict::Fail);
        assert_eq!(severity, Some(Severity::High), "two answers are high");
        assert!(
            detail.ends_with("several replies to one message"),
            "{detail}"
        );
        let silent_ok = [pass(When::Silent)];
        let (verdict, severity, _) = judge(
            &silent_ok,
            &[single(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#,
            )],
            None,
        );
        assert_eq!(
            verdict,
            Verdict::Fail,
            "a notification must not be answered"
        );
        // Unlisted, and no id was sent: a wrong answer to bad input. (The catalogue's arms for
        // notifications list such replies themselves, as high.)
        assert_eq!(severity, Some(Severity::Medium));
        let elsewhere = single(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
        let (_, severity, _) = judge(&[pass(When::Silent)], &[elsewhere], sent.as_ref());
        assert_eq!(severity, Some(Severity::High), "another id is high");
    }

    #[test]
    fn several_errors_batches_and_raw_ids_match_their_arms() {
        let blank_errors = [
            single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
            single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
        ];
        let arms = [
            pass(When::Silent),
            note(
                When::Errors(&[-32700], &[IdIs::Null]),
                "answers blank lines",
            ),
        ];
        assert_eq!(judge(&arms, &blank_errors, None).0, Verdict::Note);
        let batch = Reply::Batch(vec![response(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)]);
        assert_eq!(
            judge(&[note(When::Batch, "answers batches")], &[batch], None).0,
            Verdict::Note
        );
        let rounded = single(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        let arms = [note(When::Result(&[IdIs::Raw("7")]), "echoed 7.0 as 7")];
        assert_eq!(
            judge(&arms, &[rounded], Id::from_json("7.0").as_ref()).0,
            Verdict::Note
        );
    }

    #[test]
    fn shown_text_escapes_controls_and_is_bounded() {
        assert_eq!(shown("a\u{1b}[31mb", 10), "a\\u{1b}[31mb");
        assert_eq!(shown("x\u{202e}y", 10), "x\\u{202e}y");
        assert_eq!(shown("abcdef", 3), "abc…");
        assert_eq!(Id::Str("x".repeat(100)).show().chars().count(), 27);
        assert_eq!(shown_lines("one\ntwo\u{1b}\n", 100), "one\ntwo\\u{1b}\n");
    }
}
