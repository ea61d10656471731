//! The `asking` category: the audit answers the server's questions (elicitation, sampling,
//! roots) with hostile content, and judges how the server takes them.
//!
//! In the 2025-11-25 era the audit's `initialize` declares `elicitation`, `sampling` and
//! `roots`, calls the tools it may call (those the server marks read-only, and
//! `--call-tool`'s, as the `exposure` cases choose them; none with `--no-tool-calls`), and
//! answers every `elicitation/create`, `sampling/createMessage` and `roots/list` the server
//! sends with the case's hostile variant: a field the form lacks, values of the wrong type, a
//! 1 MiB string, 10,000-deep nesting, `result` and `error` together, an answer under an id
//! never asked, an answer sent twice, an image block whose data is not base64, a root that is
//! not a `file://` URI. A question the variant does not aim at gets a plain valid answer, and
//! a question still open a second after its hostile answer gets one too (a server that
//! rightly ignores a malformed message then still finishes its call).
//!
//! In the 2026-07-28 era (over stdio, every request carrying a modern `_meta` that declares
//! the three capabilities) a call that ends `input_required` is retried with answers that do
//! not fit its `inputRequests`, or with valid answers and its `requestState` tampered with
//! (bytes appended, one changed, cut short) or taken from another tool's call.
//!
//! Judged: every hostile answer carries a random canary. A tool result holding the canary of
//! an answer that did not fit is a server that passed it to its tool (`unfit-answer-used`,
//! high; a valid answer's content may be echoed). A retry with a state that fails integrity
//! that completes is `tampered-state-accepted` (high). An error or a tool error that echoes a
//! canary is `answer-echoed` (low); an error code the specification does not name is medium
//! (low for a server's own `-32000`..`-32099`). Every call must be answered exactly once, in
//! time, and the server must then still answer (the follow-up ping and `tools/list`).
//!
//! What it trusts: nothing the server sends. Its questions are read only for their method and
//! the requested schema (bounded by the session), and shown only through `judge::shown`.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::Verdict;
use super::finding_verdict;
use super::judge::{Asked, Id, Judgement, Outcome, Reply, Response, shown};
use super::probe::{Callable, value_for};
use super::session::{Next, Session};
use super::severity::{Kind, Severity};

/// What one `asking` case answers, or how it retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// 2025-11-25: an elicitation's content with a field its form lacks.
    ExtraField,
    /// 2025-11-25: values of the wrong type (every field of a form, a sampled text, a root's
    /// URI).
    WrongType,
    /// 2025-11-25: a 1 MiB string in every text of the answer.
    HugeString,
    /// 2025-11-25: arrays nested 10,000 deep where the answer's value goes.
    DeepNesting,
    /// 2025-11-25: `result` and `error` in one response.
    ResultAndError,
    /// 2025-11-25: an answer under an id the server never asked, then the right one.
    UnaskedId,
    /// 2025-11-25: the answer sent twice, the second one different.
    Twice,
    /// 2025-11-25: a sampling answer with an image block whose data is not base64.
    SamplingImage,
    /// 2025-11-25: a roots answer with an `https:` URI.
    RootsNonFile,
    /// 2026-07-28: `inputResponses` with a field the form lacks.
    ModernExtraField,
    /// 2026-07-28: `inputResponses` with values of the wrong type.
    ModernWrongType,
    /// 2026-07-28: valid answers, the `requestState` with bytes appended.
    StateAppended,
    /// 2026-07-28: valid answers, one byte of the `requestState` changed.
    StateByteChanged,
    /// 2026-07-28: valid answers, the `requestState` cut short.
    StateTruncated,
    /// 2026-07-28: valid answers to one tool's questions with another tool's `requestState`.
    StateOtherTool,
}

impl Variant {
    /// Whether the case retries with a state that fails integrity (any completed retry is
    /// then a finding).
    fn judges_state(self) -> bool {
        matches!(
            self,
            Self::StateAppended
                | Self::StateByteChanged
                | Self::StateTruncated
                | Self::StateOtherTool
        )
    }

    /// Whether the case runs in the 2025-11-25 era (after a handshake declaring the
    /// capabilities); the others send 2026-07-28 requests without one.
    pub(crate) fn legacy(self) -> bool {
        !matches!(
            self,
            Self::ModernExtraField
                | Self::ModernWrongType
                | Self::StateAppended
                | Self::StateByteChanged
                | Self::StateTruncated
                | Self::StateOtherTool
        )
    }
}

/// The capabilities the audit declares in both eras.
pub(crate) fn capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": false}})
}

/// Runs one `asking` case over the tools the audit may call.
pub(crate) fn run(session: &mut Session<'_>, tools: &[Callable], variant: Variant) -> Judgement {
    if tools.is_empty() {
        return info("no tool the audit may call (read-only, or --call-tool): nothing to ask");
    }
    let canary = format!("airlock-canary-{}", super::exposure::random_hex());
    session.target().watch_for(canary.as_bytes());
    let _earlier = session.take_canary_seen();
    let mut tally = Tally::default();
    if variant.legacy() {
        for tool in tools {
            if Instant::now() >= session.deadline || super::signals::interrupted() {
                break;
            }
            legacy_call(session, tool, variant, &canary, &mut tally);
        }
    } else if variant == Variant::StateOtherTool {
        other_tool(session, tools, &canary, &mut tally);
    } else {
        for tool in tools {
            if Instant::now() >= session.deadline || super::signals::interrupted() {
                break;
            }
            modern_call(session, tool, variant, &canary, &mut tally);
        }
    }
    tally.finish(variant)
}

/// What one case saw over its calls.
#[derive(Debug, Default)]
struct Tally {
    calls: u64,
    questions: u64,
    hostile: u64,
    /// Hostile answer lines the server refused as unreadable (`-32700`/`-32600`, id null).
    refusals: u64,
    /// Valid answers sent to questions still open a second after their hostile answer.
    fallbacks: u64,
    /// How the judged calls (legacy) or retries (modern) ended: results, tool errors, errors.
    ended: [u64; 3],
    unanswered: u64,
    /// Modern calls that ended `input_required` (with a state, for the state cases).
    asked: u64,
    /// Modern calls whose result had no `resultType`.
    not_modern: u64,
    worst: Option<Severity>,
    /// Whether a canary or a state showed a finding (recorded in the session).
    breached: bool,
    notes: Vec<String>,
}

impl Tally {
    /// Something wrong with the case's own calls (the findings are the session's).
    fn worse(&mut self, severity: Severity, note: String) {
        self.worst = self.worst.max(Some(severity));
        self.note(note);
    }

    fn note(&mut self, note: String) {
        if self.notes.len() < MAX_NOTES && !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// A finding of `kind`, recorded in `session` and noted in the detail.
    fn found(&mut self, session: &mut Session<'_>, kind: Kind, text: String) {
        session.find(kind, text.clone());
        self.breached |= kind.severity() >= Severity::Medium;
        self.note(text);
    }

    fn finish(self, variant: Variant) -> Judgement {
        let mut detail = if variant.legacy() {
            format!(
                "{} calls, {} questions asked, {} answered with the hostile variant",
                self.calls, self.questions, self.hostile
            )
        } else {
            format!(
                "{} calls, {} ended input_required, {} retried with the hostile variant",
                self.calls, self.asked, self.hostile
            )
        };
        if self.hostile > 0 {
            let [results, tool_errors, errors] = self.ended;
            detail.push_str(&format!(
                " ({results} results, {tool_errors} tool errors, {errors} errors)"
            ));
        }
        if self.fallbacks > 0 {
            detail.push_str(&format!(
                "; {} questions still open a second after their hostile answer answered validly",
                self.fallbacks
            ));
        }
        if self.refusals > 0 {
            detail.push_str(&format!(
                "; {} hostile lines refused as unreadable (id null)",
                self.refusals
            ));
        }
        if self.not_modern > 0 {
            detail.push_str(&format!(
                "; {} answered without a 2026-07-28 resultType",
                self.not_modern
            ));
        }
        let mut severity = self.worst;
        if self.unanswered > 0 {
            detail.push_str(&format!("; {} calls unanswered in time", self.unanswered));
            severity = severity.max(Some(Severity::High));
        }
        for note in &self.notes {
            detail.push_str("; ");
            detail.push_str(note);
        }
        if self.hostile == 0 && severity.is_none() && !self.breached {
            let why = if variant.legacy() {
                "; no tool asked a question this variant answers: nothing to judge"
            } else if variant == Variant::StateOtherTool {
                "; fewer than two tools ended input_required with a requestState: nothing to replay"
            } else {
                "; no call ended input_required (with a requestState, for the state cases): \
                 nothing to retry"
            };
            detail.push_str(why);
            return Judgement {
                verdict: Verdict::Note,
                severity: Some(Severity::Info),
                detail,
                answer: None,
                follow_up: true,
            };
        }
        if severity.is_none() && !self.breached {
            detail.push_str("; no canary passed on, no bad state accepted");
        }
        Judgement {
            verdict: severity.map_or(Verdict::Pass, finding_verdict),
            severity,
            detail,
            answer: None,
            follow_up: true,
        }
    }
}

fn info(detail: &str) -> Judgement {
    Judgement {
        verdict: Verdict::Note,
        severity: Some(Severity::Info),
        detail: detail.to_owned(),
        answer: None,
        follow_up: true,
    }
}

/// One 2025-11-25 call of `tool`, every question of the server's on the way answered with
/// `variant`, judged into `tally`.
fn legacy_call(
    session: &mut Session<'_>,
    tool: &Callable,
    variant: Variant,
    canary: &str,
    tally: &mut Tally,
) {
    tally.calls = tally.calls.saturating_add(1);
    let id = session.request(
        "tools/call",
        Some(json!({"name": tool.tool, "arguments": tool.arguments})),
    );
    let until = Instant::now()
        .checked_add(session.case_timeout())
        .map_or(session.deadline, |end| end.min(session.deadline));
    let shown_tool = shown(&tool.tool, MAX_SHOWN_NAME);
    // Questions answered with a hostile variant, with when a valid answer follows.
    let mut open: Vec<(Asked, Instant)> = Vec::new();
    let mut malformed_sent = false;
    let reply = loop {
        while let Some(asked) = session.take_question() {
            tally.questions = tally.questions.saturating_add(1);
            let answer = legacy_answer(variant, &asked, canary);
            if answer.hostile {
                tally.hostile = tally.hostile.saturating_add(1);
            }
            malformed_sent |= answer.malformed;
            for line in answer.lines {
                session.send_line(line);
            }
            if answer.hostile
                && let Some(at) = Instant::now().checked_add(FALLBACK_AFTER)
            {
                open.push((asked, at));
            }
        }
        let now = Instant::now();
        if now >= until || super::signals::interrupted() {
            break None;
        }
        // A question still open after its hostile answer gets a plain valid one.
        let mut still_open = Vec::new();
        for (asked, at) in open.drain(..) {
            if now >= at {
                tally.fallbacks = tally.fallbacks.saturating_add(1);
                let valid = valid_result(&asked, PLAIN);
                session.send_line(response_line(&asked.id, &valid));
            } else {
                still_open.push((asked, at));
            }
        }
        open = still_open;
        let poll = now.checked_add(POLL).map_or(until, |end| end.min(until));
        match session.next(poll) {
            Next::Reply(Reply::Single(response), ..) if response.id == id => break Some(response),
            Next::Reply(Reply::Single(response), ..) if tally.hostile > 0 && refusal(&response) => {
                tally.refusals = tally.refusals.saturating_add(1);
            }
            Next::Reply(other, ..) => session.unexpected(&other),
            Next::Timeout => {}
            Next::Closed => break None,
        }
    };
    let Some(reply) = reply else {
        tally.unanswered = tally.unanswered.saturating_add(1);
        tally.worse(
            Severity::High,
            format!("tool {shown_tool}: the call was not answered in time"),
        );
        return;
    };
    // A second answer to the call shows before a marker ping's.
    let marker = session.request("ping", None);
    let ping_until = Instant::now()
        .checked_add(session.case_timeout())
        .map_or(session.deadline, |end| end.min(session.deadline));
    loop {
        while let Some(asked) = session.take_question() {
            // Questions after the call's answer: answered plainly, never judged.
            let valid = valid_result(&asked, PLAIN);
            session.send_line(response_line(&asked.id, &valid));
        }
        match session.next(ping_until) {
            Next::Reply(Reply::Single(response), ..) if response.id == marker => break,
            Next::Reply(Reply::Single(response), ..) if response.id == id => {
                session.find(Kind::TwoReplies, "two replies to one tools/call");
            }
            Next::Reply(Reply::Single(response), ..) if tally.hostile > 0 && refusal(&response) => {
                tally.refusals = tally.refusals.saturating_add(1);
            }
            Next::Reply(other, ..) => session.unexpected(&other),
            // The follow-up finds a server that stopped answering.
            Next::Timeout | Next::Closed => break,
        }
    }
    let seen = session.take_canary_seen();
    let judged = Judged {
        canary,
        seen,
        malformed: malformed_sent,
        shown_tool: &shown_tool,
        variant,
    };
    judge_canary(session, tally, &reply, &judged);
}

/// What a reply is judged with.
struct Judged<'a> {
    canary: &'a str,
    /// Whether a line held the canary since the hostile answer.
    seen: bool,
    /// Whether the canary rode on something that does not fit.
    malformed: bool,
    shown_tool: &'a str,
    variant: Variant,
}

/// Whether `response` is how JSON-RPC answers a line that could not be read (too deep, too
/// long, not one message): an error `-32700` or `-32600` under id `null`. A server may so
/// answer a hostile answer's line, as it would any line it cannot parse.
fn refusal(response: &Response) -> bool {
    response.id == Id::Null
        && matches!(
            response.outcome,
            Outcome::Error {
                code: -32_700 | -32_600,
                ..
            }
        )
}

/// Judges a call's reply by the canary: in a result, an unfit answer passed to the tool (when
/// one was sent); in an error or a tool error, an echo.
fn judge_canary(
    session: &mut Session<'_>,
    tally: &mut Tally,
    reply: &Response,
    judged: &Judged<'_>,
) {
    let in_value = |value: &Option<Value>| match value {
        Some(value) => value.to_string().contains(judged.canary),
        // A result too large to keep: any line holding the canary counts.
        None => judged.seen,
    };
    let shown_tool = judged.shown_tool;
    let slot = match reply.outcome {
        Outcome::Result {
            is_error: false, ..
        } => &mut tally.ended[0],
        Outcome::Result { is_error: true, .. } => &mut tally.ended[1],
        Outcome::Error { .. } => &mut tally.ended[2],
    };
    *slot = slot.saturating_add(1);
    match &reply.outcome {
        Outcome::Result {
            is_error: false,
            value,
        } if judged.malformed && in_value(value) => {
            let text = format!("tool {shown_tool}: {}", passed_on(judged.variant));
            tally.found(session, Kind::UnfitAnswerUsed, text);
        }
        Outcome::Result { is_error: true, .. } | Outcome::Error { .. } if judged.seen => {
            let text = format!("tool {shown_tool}: an error echoes the hostile answer's canary");
            tally.found(session, Kind::AnswerEchoed, text);
        }
        _ => {}
    }
    if let Outcome::Error { code, .. } = reply.outcome {
        judge_code(tally, code, shown_tool);
    }
}

/// What a result holding a malformed answer's canary means, by variant.
fn passed_on(variant: Variant) -> &'static str {
    match variant {
        Variant::ResultAndError => {
            "the result holds the canary of a response with both result and error"
        }
        Variant::UnaskedId => "the result holds the canary of an answer under an id never asked",
        Variant::Twice => "the result holds the canary of a second answer to one question",
        Variant::SamplingImage => {
            "the result holds the canary of an image block whose data is not base64"
        }
        Variant::RootsNonFile => "the result holds the canary of a root that is not a file: URI",
        _ => "the result holds the canary of an answer that does not fit its request",
    }
}

/// Judges an error's code: the specification's pass, a server's own range is low, others
/// medium.
fn judge_code(tally: &mut Tally, code: i64, shown_tool: &str) {
    if SPEC_CODES.contains(&code) {
        return;
    }
    if (-32_099..=-32_000).contains(&code) {
        tally.worse(
            Severity::Low,
            format!("tool {shown_tool}: error {code}, a server-defined code"),
        );
    } else {
        tally.worse(
            Severity::Medium,
            format!("tool {shown_tool}: error {code}, a code the specification does not name"),
        );
    }
}

/// The lines answering one question, and what they are.
struct Answer {
    lines: Vec<Vec<u8>>,
    /// The variant applied (else a plain valid answer).
    hostile: bool,
    /// The canary rides on something that does not fit (so finding it in a result is a
    /// finding).
    malformed: bool,
}

/// The answer to `asked` for `variant`.
fn legacy_answer(variant: Variant, asked: &Asked, canary: &str) -> Answer {
    let method = asked.method.as_str();
    let plain = |id: &Id| response_line(id, &valid_result(asked, PLAIN));
    let hostile = |lines: Vec<Vec<u8>>, malformed: bool| Answer {
        lines,
        hostile: true,
        malformed,
    };
    if !ANSWERED.contains(&method) {
        return Answer {
            lines: vec![plain(&asked.id)],
            hostile: false,
            malformed: false,
        };
    }
    match (variant, method) {
        (Variant::ExtraField, ELICIT) => {
            let result = extra_field(asked, canary);
            hostile(vec![response_line(&asked.id, &result)], true)
        }
        (Variant::WrongType, _) => {
            let result = wrong_type(asked, canary);
            hostile(vec![response_line(&asked.id, &result)], true)
        }
        (Variant::HugeString, _) => {
            let huge = format!("{canary}{}", "a".repeat(HUGE_STRING_BYTES));
            let (result, malformed) = huge_string(asked, &huge);
            hostile(vec![response_line(&asked.id, &result)], malformed)
        }
        (Variant::DeepNesting, _) => hostile(vec![deep_line(asked, canary)], true),
        (Variant::ResultAndError, _) => {
            let line = json!({"jsonrpc": "2.0", "id": id_value(&asked.id),
                "result": valid_result(asked, canary),
                "error": {"code": -32603, "message": "audit"}});
            hostile(vec![line.to_string().into_bytes()], true)
        }
        (Variant::UnaskedId, _) => {
            let never = Id::Str("airlock-audit-never-asked".to_owned());
            let stray = response_line(&never, &valid_result(asked, canary));
            hostile(vec![stray, plain(&asked.id)], true)
        }
        (Variant::Twice, _) => {
            let second = response_line(&asked.id, &valid_result(asked, canary));
            hostile(vec![plain(&asked.id), second], true)
        }
        (Variant::SamplingImage, SAMPLE) => {
            let result = json!({"role": "assistant", "model": "airlock-audit",
                "content": {"type": "image", "mimeType": "image/png",
                            "data": format!("{canary}!not base64!")}});
            hostile(vec![response_line(&asked.id, &result)], true)
        }
        (Variant::RootsNonFile, ROOTS) => {
            let result = json!({"roots": [{"uri": format!("https://{canary}.example/"),
                                           "name": "audit"}]});
            hostile(vec![response_line(&asked.id, &result)], true)
        }
        _ => Answer {
            lines: vec![plain(&asked.id)],
            hostile: false,
            malformed: false,
        },
    }
}

/// A response line (without its newline) answering `id` with `result`.
fn response_line(id: &Id, result: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id_value(id), "result": result})
        .to_string()
        .into_bytes()
}

fn id_value(id: &Id) -> Value {
    serde_json::from_str(&id.to_json()).unwrap_or(Value::Null)
}

/// The form an elicitation asks for: its properties and its required names.
fn form(params: Option<&Value>) -> (Map<String, Value>, Vec<String>) {
    let schema = params.and_then(|params| params.get("requestedSchema"));
    let properties = schema
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required = schema
        .and_then(|schema| schema.get("required"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    (properties, required)
}

/// Whether a form field is free text (a string with no choices or format).
fn free_text(property: &Value) -> bool {
    let typed = match property.get("type") {
        Some(Value::String(kind)) => kind == "string",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "string"),
        _ => false,
    };
    typed
        && ["enum", "oneOf", "anyOf", "const", "format", "pattern"]
            .iter()
            .all(|key| property.get(key).is_none())
}

/// The content of a valid form: every required field, free text fields holding `text` where
/// their bounds allow it.
fn valid_content(params: Option<&Value>, text: &str) -> Map<String, Value> {
    let (properties, required) = form(params);
    let mut content = Map::new();
    for name in &required {
        let Some(property) = properties.get(name) else {
            continue;
        };
        let fits = |property: &Value| {
            let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
            property
                .get("maxLength")
                .and_then(Value::as_u64)
                .is_none_or(|max| chars <= max)
                && property
                    .get("minLength")
                    .and_then(Value::as_u64)
                    .is_none_or(|min| chars >= min)
        };
        let value = if free_text(property) && fits(property) {
            Some(Value::String(text.to_owned()))
        } else {
            value_for(property)
        };
        if let Some(value) = value {
            content.insert(name.clone(), value);
        }
    }
    content
}

/// A valid result for `asked`, its texts holding `text` where they may.
fn valid_result(asked: &Asked, text: &str) -> Value {
    let params = asked.params.as_ref();
    match asked.method.as_str() {
        ELICIT => {
            let url_mode = params.and_then(|params| params.get("mode")) == Some(&json!("url"));
            if url_mode {
                json!({"action": "accept"})
            } else {
                json!({"action": "accept", "content": valid_content(params, text)})
            }
        }
        SAMPLE => json!({"role": "assistant", "model": "airlock-audit", "stopReason": "endTurn",
                         "content": {"type": "text", "text": text}}),
        ROOTS => json!({"roots": [{"uri": format!("file:///tmp/{text}"), "name": "audit"}]}),
        _ => json!({}),
    }
}

/// A form's content with a field the form lacks, carrying `canary`.
fn extra_field(asked: &Asked, canary: &str) -> Value {
    let mut content = valid_content(asked.params.as_ref(), PLAIN);
    content.insert(EXTRA_FIELD.to_owned(), Value::String(canary.to_owned()));
    json!({"action": "accept", "content": content})
}

/// Values of the wrong type, carrying `canary`: every field of a form (a list for text, text
/// for the rest), a sampled text as a list, a root's URI as a list.
fn wrong_type(asked: &Asked, canary: &str) -> Value {
    match asked.method.as_str() {
        ELICIT => {
            let (properties, required) = form(asked.params.as_ref());
            let mut content = Map::new();
            let names = required
                .iter()
                .cloned()
                .chain(properties.keys().cloned())
                .take(MAX_FORM_FIELDS);
            for name in names {
                let value = match properties.get(&name).and_then(|p| p.get("type")) {
                    Some(Value::String(kind)) if kind == "string" || kind == "array" => {
                        json!({"audit": canary})
                    }
                    _ => json!(canary),
                };
                content.insert(name, value);
            }
            if content.is_empty() {
                content.insert(EXTRA_FIELD.to_owned(), json!([canary]));
            }
            json!({"action": "accept", "content": content})
        }
        SAMPLE => json!({"role": "assistant", "model": "airlock-audit",
                         "content": {"type": "text", "text": [canary]}}),
        _ => json!({"roots": [{"uri": [canary], "name": "audit"}]}),
    }
}

/// `huge` in every text of an answer; whether that no longer fits (a form field bounded
/// below it, or one with choices; a form with no text field gets it as an extra field).
fn huge_string(asked: &Asked, huge: &str) -> (Value, bool) {
    if asked.method != ELICIT {
        return (valid_result(asked, huge), false);
    }
    let (properties, _) = form(asked.params.as_ref());
    let mut content = valid_content(asked.params.as_ref(), PLAIN);
    let mut malformed = false;
    let mut placed = false;
    for (name, property) in &properties {
        let typed = property.get("type") == Some(&json!("string"));
        if typed {
            let bounded = property
                .get("maxLength")
                .and_then(Value::as_u64)
                .is_some_and(|max| max < u64::try_from(huge.len()).unwrap_or(u64::MAX));
            malformed |= bounded || !free_text(property);
            content.insert(name.clone(), Value::String(huge.to_owned()));
            placed = true;
        }
    }
    if !placed {
        content.insert(EXTRA_FIELD.to_owned(), Value::String(huge.to_owned()));
        malformed = true;
    }
    (json!({"action": "accept", "content": content}), malformed)
}

/// A response whose value sits under 10,000 nested arrays: a form field's, a sampled
/// message's content, the roots list.
fn deep_line(asked: &Asked, canary: &str) -> Vec<u8> {
    let result = match asked.method.as_str() {
        ELICIT => {
            let (properties, required) = form(asked.params.as_ref());
            let name = required
                .first()
                .or_else(|| properties.keys().next())
                .cloned()
                .unwrap_or_else(|| EXTRA_FIELD.to_owned());
            let mut content = valid_content(asked.params.as_ref(), PLAIN);
            content.insert(name, json!(NEST_MARK));
            json!({"action": "accept", "content": content})
        }
        SAMPLE => json!({"role": "assistant", "model": "airlock-audit", "content": NEST_MARK}),
        _ => json!({"roots": NEST_MARK}),
    };
    let text = json!({"jsonrpc": "2.0", "id": id_value(&asked.id), "result": result}).to_string();
    let nested = format!(
        "{}{}{}",
        "[".repeat(NEST_DEPTH),
        Value::String(canary.to_owned()),
        "]".repeat(NEST_DEPTH)
    );
    text.replacen(&Value::String(NEST_MARK.to_owned()).to_string(), &nested, 1)
        .into_bytes()
}

/// A 2026-07-28 `tools/call` of `tool` (a retry when `retry` holds its answers and state).
fn modern_request(session: &mut Session<'_>, tool: &Callable, retry: Option<(Value, Value)>) -> Id {
    let mut params = json!({"name": tool.tool, "arguments": tool.arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities(),
        "io.modelcontextprotocol/clientInfo": {"name": "airlock-audit",
                                              "version": env!("CARGO_PKG_VERSION")}
    }});
    if let (Some((responses, state)), Some(object)) = (retry, params.as_object_mut()) {
        object.insert("inputResponses".to_owned(), responses);
        if !state.is_null() {
            object.insert("requestState".to_owned(), state);
        }
    }
    session.request("tools/call", Some(params))
}

/// A modern call's end, as the audit reads it.
enum Ended {
    /// `input_required`: the questions and the state (if any).
    Asked(Map<String, Value>, Option<String>),
    /// A complete result (`isError` or not).
    Complete,
    /// A result without `resultType`: not a 2026-07-28 answer.
    NotModern,
    /// A JSON-RPC error.
    Error,
}

/// Sends a modern call and reads how it ended; `None` if it was not answered in time.
fn modern_exchange(
    session: &mut Session<'_>,
    tool: &Callable,
    retry: Option<(Value, Value)>,
) -> Option<(Ended, Response)> {
    let id = modern_request(session, tool, retry);
    let until = Instant::now()
        .checked_add(session.case_timeout())
        .map_or(session.deadline, |end| end.min(session.deadline));
    let response = loop {
        // The 2026-07-28 era has no server-to-client requests: answered plainly, not judged.
        while let Some(asked) = session.take_question() {
            let valid = valid_result(&asked, PLAIN);
            session.send_line(response_line(&asked.id, &valid));
        }
        let poll = Instant::now()
            .checked_add(POLL)
            .map_or(until, |end| end.min(until));
        match session.next(poll) {
            Next::Reply(Reply::Single(response), ..) if response.id == id => break response,
            Next::Reply(other, ..) => session.unexpected(&other),
            Next::Timeout if Instant::now() < until && !super::signals::interrupted() => {}
            Next::Timeout | Next::Closed => return None,
        }
    };
    let ended = match &response.outcome {
        Outcome::Error { .. } => Ended::Error,
        Outcome::Result { value, .. } => {
            let kind = value
                .as_ref()
                .and_then(|value| value.get("resultType"))
                .and_then(Value::as_str);
            match (kind, value) {
                (Some("input_required"), Some(value)) => {
                    let requests = value
                        .get("inputRequests")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    let state = value
                        .get("requestState")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    Ended::Asked(requests, state)
                }
                (Some(_), _) => Ended::Complete,
                // A result too large to keep is judged complete.
                (None, None) => Ended::Complete,
                (None, Some(_)) => Ended::NotModern,
            }
        }
    };
    Some((ended, response))
}

/// The first, fresh call of `tool` in a modern case: its questions and state if it asked.
fn fresh(
    session: &mut Session<'_>,
    tool: &Callable,
    tally: &mut Tally,
) -> Option<(Map<String, Value>, Option<String>)> {
    tally.calls = tally.calls.saturating_add(1);
    let shown_tool = shown(&tool.tool, MAX_SHOWN_NAME);
    match modern_exchange(session, tool, None) {
        None => {
            tally.unanswered = tally.unanswered.saturating_add(1);
            tally.worse(
                Severity::High,
                format!("tool {shown_tool}: the call was not answered in time"),
            );
            None
        }
        Some((Ended::Asked(requests, state), _)) if !requests.is_empty() => {
            tally.asked = tally.asked.saturating_add(1);
            Some((requests, state))
        }
        Some((Ended::NotModern, _)) => {
            tally.not_modern = tally.not_modern.saturating_add(1);
            None
        }
        Some(_) => None,
    }
}

/// One input request as the legacy answer builders read it.
fn as_asked(request: &Value) -> Asked {
    Asked {
        id: Id::Null,
        method: request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        params: request.get("params").cloned(),
    }
}

/// Answers to every input request: valid ones holding `text`, or the variant's.
fn input_responses(requests: &Map<String, Value>, variant: Variant, canary: &str) -> (Value, bool) {
    let mut responses = Map::new();
    let mut malformed = false;
    for (key, request) in requests.iter().take(MAX_INPUT_RESPONSES) {
        let asked = as_asked(request);
        let answer = match (variant, asked.method.as_str()) {
            (Variant::ModernExtraField, ELICIT) => {
                malformed = true;
                extra_field(&asked, canary)
            }
            (Variant::ModernWrongType, ELICIT | SAMPLE | ROOTS) => {
                malformed = true;
                wrong_type(&asked, canary)
            }
            (Variant::ModernExtraField | Variant::ModernWrongType, _) => {
                valid_result(&asked, PLAIN)
            }
            _ => valid_result(&asked, canary),
        };
        responses.insert(key.clone(), answer);
    }
    (Value::Object(responses), malformed)
}

/// The state tampered with as `variant` says.
fn tampered(state: &str, variant: Variant) -> String {
    match variant {
        Variant::StateAppended => format!("{state}AAAA"),
        Variant::StateTruncated => {
            let keep = state.len().saturating_sub(8);
            state.get(..keep).unwrap_or_default().to_owned()
        }
        _ => {
            // One character in the middle, swapped for another of the same alphabet.
            let mut chars: Vec<char> = state.chars().collect();
            let middle = chars.len().checked_div(2).unwrap_or(0);
            if let Some(c) = chars.get_mut(middle) {
                *c = if *c == 'A' { 'B' } else { 'A' };
            }
            chars.into_iter().collect()
        }
    }
}

/// One modern case's call of `tool`: fresh, then retried as `variant` says.
fn modern_call(
    session: &mut Session<'_>,
    tool: &Callable,
    variant: Variant,
    canary: &str,
    tally: &mut Tally,
) {
    let Some((requests, state)) = fresh(session, tool, tally) else {
        return;
    };
    let state_cases = matches!(
        variant,
        Variant::StateAppended | Variant::StateByteChanged | Variant::StateTruncated
    );
    let (responses, malformed) = input_responses(&requests, variant, canary);
    if !state_cases && !malformed {
        // No question of the kind this variant makes unfit: nothing hostile to send.
        return;
    }
    let state = match (state, state_cases) {
        (Some(state), true) => Value::String(tampered(&state, variant)),
        (None, true) => return,
        (state, false) => state.map_or(Value::Null, Value::String),
    };
    tally.hostile = tally.hostile.saturating_add(1);
    retry(
        session,
        tool,
        (responses, state),
        (malformed, canary),
        variant,
        tally,
    );
}

/// A retry and its judgement: an unfit answer's canary in a complete result, or (state
/// cases) any complete result, is a finding; errors are judged by code and echo.
fn retry(
    session: &mut Session<'_>,
    tool: &Callable,
    retry: (Value, Value),
    (malformed, canary): (bool, &str),
    variant: Variant,
    tally: &mut Tally,
) {
    let shown_tool = shown(&tool.tool, MAX_SHOWN_NAME);
    let _earlier = session.take_canary_seen();
    let exchanged = modern_exchange(session, tool, Some(retry));
    let seen = session.take_canary_seen();
    let Some((ended, response)) = exchanged else {
        tally.unanswered = tally.unanswered.saturating_add(1);
        tally.worse(
            Severity::High,
            format!("tool {shown_tool}: the retry was not answered in time"),
        );
        return;
    };
    match ended {
        Ended::Complete if variant.judges_state() => {
            let text = match variant {
                Variant::StateOtherTool => {
                    format!("tool {shown_tool}: a retry with another tool's requestState completed")
                }
                _ => format!(
                    "tool {shown_tool}: a retry with its requestState tampered with completed"
                ),
            };
            tally.found(session, Kind::StateAccepted, text);
        }
        Ended::Complete | Ended::Asked(..) | Ended::NotModern | Ended::Error => {
            let judged = Judged {
                canary,
                seen,
                malformed,
                shown_tool: &shown_tool,
                variant,
            };
            judge_canary(session, tally, &response, &judged);
        }
    }
}

/// `asking.modern-state-other-tool`: the state of one tool's call with valid answers to
/// another's questions.
fn other_tool(session: &mut Session<'_>, tools: &[Callable], canary: &str, tally: &mut Tally) {
    let mut asking: Vec<(&Callable, Map<String, Value>, String)> = Vec::new();
    for tool in tools {
        if asking.len() >= 2 || Instant::now() >= session.deadline {
            break;
        }
        if let Some((requests, Some(state))) = fresh(session, tool, tally) {
            asking.push((tool, requests, state));
        }
    }
    let [(_, _, state), (other, requests, _)] = asking.as_slice() else {
        return;
    };
    let (responses, _) = input_responses(requests, Variant::StateOtherTool, canary);
    tally.hostile = tally.hostile.saturating_add(1);
    retry(
        session,
        other,
        (responses, Value::String(state.clone())),
        (false, canary),
        Variant::StateOtherTool,
        tally,
    );
}

const ELICIT: &str = "elicitation/create";
const SAMPLE: &str = "sampling/createMessage";
const ROOTS: &str = "roots/list";

/// The questions the variants answer; any other request gets `{}`.
const ANSWERED: [&str; 3] = [ELICIT, SAMPLE, ROOTS];

/// The text of plain valid answers (no canary).
const PLAIN: &str = "audit";

/// The name of the field a form lacks.
const EXTRA_FIELD: &str = "airlock_audit_extra";

/// Where the deep nesting goes, replaced in the serialized line.
const NEST_MARK: &str = "airlock-audit-nest-mark";

/// How deep the nesting goes.
const NEST_DEPTH: usize = 10_000;

/// The huge string, in bytes (plus the canary).
const HUGE_STRING_BYTES: usize = 1024 * 1024;

/// How long after a hostile answer a question still open gets a valid one.
const FALLBACK_AFTER: Duration = Duration::from_secs(1);

/// Longest wait on stdout between checks for questions and fallbacks.
const POLL: Duration = Duration::from_millis(50);

/// Fields of a form the wrong-type answer fills.
const MAX_FORM_FIELDS: usize = 32;

/// Input responses one retry carries.
const MAX_INPUT_RESPONSES: usize = 32;

/// Characters of a tool name shown.
const MAX_SHOWN_NAME: usize = 64;

/// Distinct notes kept in a case's detail.
const MAX_NOTES: usize = 8;

/// The protocol revision of the modern cases.
const MODERN_VERSION: &str = "2026-07-28";

/// Error codes the specifications name: JSON-RPC's, resource not found, the 2026-07-28
/// header mismatch and missing capability, URL elicitation required, and the rate and
/// in-flight refusals the exposure cases retry.
const SPEC_CODES: [i64; 11] = [
    -32_700, -32_600, -32_601, -32_602, -32_603, -32_002, -32_020, -32_021, -32_042, -31_429,
    -31_503,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn elicit(schema: Value) -> Asked {
        Asked {
            id: Id::Number("3".to_owned()),
            method: ELICIT.to_owned(),
            params: Some(json!({"message": "m", "requestedSchema": schema})),
        }
    }

    fn name_form() -> Asked {
        elicit(
            json!({"type": "object", "required": ["name", "ok"], "properties": {
            "name": {"type": "string", "maxLength": 64}, "ok": {"type": "boolean"}}}),
        )
    }

    fn parsed(line: &[u8]) -> Value {
        serde_json::from_slice(line).unwrap()
    }

    #[test]
    fn valid_answers_fill_required_fields_within_their_bounds() {
        let asked = name_form();
        assert_eq!(
            valid_result(&asked, "hello"),
            json!({"action": "accept", "content": {"name": "hello", "ok": false}})
        );
        let long = "x".repeat(65);
        assert_eq!(valid_result(&asked, &long)["content"]["name"], "a");
    }

    #[test]
    fn hostile_answers_carry_the_canary_where_the_form_does_not_allow_it() {
        let asked = name_form();
        let extra = extra_field(&asked, "CANARY");
        assert_eq!(extra["content"][EXTRA_FIELD], "CANARY");
        assert_eq!(extra["content"]["name"], PLAIN);
        let wrong = wrong_type(&asked, "CANARY");
        assert_eq!(wrong["content"]["name"], json!({"audit": "CANARY"}));
        assert_eq!(wrong["content"]["ok"], "CANARY");
        let (huge, malformed) = huge_string(&asked, &"h".repeat(100));
        assert!(malformed, "name is bounded at 64");
        assert_eq!(huge["content"]["name"].as_str().unwrap().len(), 100);
        let free = elicit(json!({"type": "object", "properties": {"t": {"type": "string"}}}));
        assert!(!huge_string(&free, "hh").1, "an unbounded text fits");
    }

    #[test]
    fn deep_nesting_is_raw_json_of_the_depth_asked() {
        let line = deep_line(&name_form(), "CANARY");
        let text = String::from_utf8(line).unwrap();
        let nested = format!(
            "{}\"CANARY\"{}",
            "[".repeat(NEST_DEPTH),
            "]".repeat(NEST_DEPTH)
        );
        assert!(text.contains(&format!(r#""name":{nested}"#)), "{text:.200}");
        assert!(text.contains(r#""id":3"#) && !text.contains(NEST_MARK));
        // Deeper than serde_json reads by default: the audit writes it as raw bytes.
        assert!(serde_json::from_str::<Value>(&text).is_err());
    }

    #[test]
    fn the_variants_answer_their_methods_and_the_rest_plainly() {
        let roots = Asked {
            id: Id::Str("r".to_owned()),
            method: ROOTS.to_owned(),
            params: None,
        };
        let answer = legacy_answer(Variant::RootsNonFile, &roots, "CANARY");
        assert!(answer.hostile && answer.malformed);
        let line = parsed(&answer.lines[0]);
        assert_eq!(line["id"], "r");
        assert_eq!(line["result"]["roots"][0]["uri"], "https://CANARY.example/");
        let plain = legacy_answer(Variant::RootsNonFile, &name_form(), "CANARY");
        assert!(!plain.hostile);
        let twice = legacy_answer(Variant::Twice, &roots, "CANARY");
        assert_eq!(twice.lines.len(), 2);
        assert!(!String::from_utf8_lossy(&twice.lines[0]).contains("CANARY"));
        let both = parsed(&legacy_answer(Variant::ResultAndError, &roots, "C").lines[0]);
        assert!(both.get("result").is_some() && both.get("error").is_some());
        let stray = parsed(&legacy_answer(Variant::UnaskedId, &roots, "C").lines[0]);
        assert_ne!(stray["id"], "r");
    }

    #[test]
    fn tampered_states_differ_from_the_original() {
        let state = "eyJhIjp7fSwiYiI6Ijk2TFV5RzdRU";
        for variant in [
            Variant::StateAppended,
            Variant::StateByteChanged,
            Variant::StateTruncated,
        ] {
            let changed = tampered(state, variant);
            assert_ne!(changed, state, "{variant:?}");
        }
        assert_eq!(
            tampered(state, Variant::StateByteChanged).len(),
            state.len()
        );
        assert!(tampered("A", Variant::StateTruncated).is_empty());
    }
}
