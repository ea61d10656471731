//! Fuzzing entry points and the reply checker they share with the property tests.
//!
//! Built only for tests and with `--cfg fuzzing` (cargo-fuzz sets it). Each target in
//! `fuzz/fuzz_targets/` calls one function here, so the targets stay three lines long and
//! reach code that is not public (rustls `internal::fuzzing`, h2 `fuzz_bridge`). A broken
//! invariant panics: that is how a fuzzer reports it.

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::{Effect, Engine, Shared};
use crate::error::ErrorCode;
use crate::limits::Limits;

#[cfg(feature = "http")]
pub use crate::transport::http::fuzzing::http;

/// Whether `code` is one a stdio session may write: the error table ([`ErrorCode::ALL`])
/// less `-32020`, which only the HTTP transport writes (it is about HTTP headers).
pub fn stdio_code(code: i64) -> bool {
    ErrorCode::ALL
        .iter()
        .any(|known| known != &ErrorCode::HEADER_MISMATCH && i64::from(known.get()) == code)
}

/// Whether `code` is in the error table at all ([`ErrorCode::ALL`]).
pub fn any_code(code: i64) -> bool {
    ErrorCode::ALL
        .iter()
        .any(|known| i64::from(known.get()) == code)
}

/// Checks what one input produced: complete lines only, each a JSON-RPC 2.0 response with an
/// id (possibly null) and exactly one of `result` and `error`, error codes a stdio session
/// may write ([`stdio_code`]). Returns the number of lines.
///
/// # Errors
///
/// A description of the first broken invariant.
pub fn check_output(out: &[u8]) -> Result<usize, Violation> {
    check_lines(out, stdio_code)
}

/// An invariant of the output broken: a sentence naming it and the line that broke it, for
/// the fuzzer's crash report or a failed test.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Violation(String);

/// [`check_output`] with the codes `allowed` says.
///
/// # Errors
///
/// A description of the first broken invariant.
pub fn check_lines(out: &[u8], allowed: fn(i64) -> bool) -> Result<usize, Violation> {
    lines_hold(out, allowed).map_err(Violation)
}

/// [`check_lines`], the broken invariant in words.
fn lines_hold(out: &[u8], allowed: fn(i64) -> bool) -> Result<usize, String> {
    if out.is_empty() {
        return Ok(0);
    }
    let text = std::str::from_utf8(out).map_err(|_| "output is not UTF-8".to_owned())?;
    if !text.ends_with('\n') {
        return Err(format!("output does not end with a newline: {text:?}"));
    }
    let mut lines = 0usize;
    for line in text.lines() {
        lines = lines.saturating_add(1);
        let value: Value =
            serde_json::from_str(line).map_err(|_| format!("a line is not JSON: {line:?}"))?;
        if value.get("jsonrpc") != Some(&Value::from("2.0")) {
            return Err(format!("missing jsonrpc 2.0: {line}"));
        }
        let id_ok = matches!(
            value.get("id"),
            Some(Value::Null | Value::String(_)) | Some(Value::Number(_))
        );
        if !id_ok {
            return Err(format!("bad or missing id: {line}"));
        }
        match (value.get("result"), value.get("error")) {
            (Some(_), None) => {}
            (None, Some(error)) => {
                let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
                if !allowed(code) {
                    return Err(format!("code outside the table: {line}"));
                }
                if !error.get("message").is_some_and(Value::is_string) {
                    return Err(format!("error without a message: {line}"));
                }
            }
            _ => return Err(format!("not exactly one of result and error: {line}")),
        }
    }
    Ok(lines)
}

/// Framing: arbitrary bytes cut into arbitrary chunks (the first byte picks the frame limit,
/// the next eight the cut points) split into frames that are never longer than the limit and
/// never contain a newline; the same bytes in one chunk give the same frames.
pub fn framing(data: &[u8]) {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let max = usize::from(limit).saturating_add(1);
    let (cuts, stream) = rest.split_at(rest.len().min(8));
    let mut chunks = Vec::new();
    let mut remaining = stream;
    for cut in cuts {
        let (chunk, tail) = remaining.split_at(usize::from(*cut).min(remaining.len()));
        chunks.push(chunk);
        remaining = tail;
    }
    chunks.push(remaining);
    let frames = crate::framing::split_all(&chunks, max);
    for frame in frames.iter().flatten() {
        assert!(frame.len() <= max, "frame over the limit");
        assert!(!frame.contains(&b'\n'), "newline inside a frame");
        assert!(!frame.is_empty(), "empty frame delivered");
    }
    assert_eq!(
        frames,
        crate::framing::split_all(&[stream], max),
        "chunking changed frames"
    );
}

/// Envelope: one frame; parsing returns, every rejection maps to a code in the table, and the
/// fast reader of plain frames reads what the full reader reads whenever it reads a frame.
pub fn envelope(data: &[u8]) {
    if let Ok(frame) = std::str::from_utf8(data) {
        for depth in [crate::limits::MAX_JSON_DEPTH, 4] {
            assert!(
                crate::json::fast_agrees::<crate::envelope::Mcp>(frame, depth),
                "the fast reader and the full one disagree"
            );
        }
    }
    match crate::envelope::parse(data, crate::limits::MAX_JSON_DEPTH) {
        Ok(_) => {}
        Err(rejection) => {
            let code = i64::from(rejection.error.to_wire().code.get());
            assert!(stdio_code(code), "code {code} outside the table");
        }
    }
}

/// Answers: the input as the frame of a client's response to one of the server's questions
/// (an elicitation of a form with every kind of field, and a sampling request). Whatever it
/// holds, the check returns, and what it lets through fits the question: accepted content
/// holds only the form's fields, each of its kind, every required one; a sampled text is at
/// most the answer bound.
pub fn answers(data: &[u8]) {
    use crate::asking::{Answer, Elicited, Question};
    use crate::envelope::{AnswerPart, Message};
    let Ok(Message::Response(response)) =
        crate::envelope::parse(data, crate::limits::MAX_JSON_DEPTH)
    else {
        return;
    };
    let Some(AnswerPart::Result(raw)) = crate::envelope::answer_parts(response.frame) else {
        return;
    };
    FUZZ_QUESTIONS.with(|questions| {
        for question in questions {
            match question.check(raw.get()) {
                Ok(Answer::Elicited(Elicited::Accepted(content))) => {
                    assert!(
                        matches!(question, Question::Elicit(_)),
                        "a form answer to a prompt"
                    );
                    check_form_content(&content);
                }
                Ok(Answer::Sampled(sampled)) => {
                    assert!(
                        matches!(question, Question::Sample(_)),
                        "a text answer to a form"
                    );
                    assert!(sampled.text.len() <= crate::limits::MAX_ANSWER_BYTES);
                    assert!(sampled.model.len() <= crate::limits::MAX_SAMPLED_MODEL_BYTES);
                }
                Ok(Answer::Roots(roots)) => {
                    assert!(
                        matches!(question, Question::Roots),
                        "roots answering a form"
                    );
                    assert!(roots.len() <= crate::limits::MAX_ROOTS);
                    for root in &roots {
                        assert!(root.uri.starts_with("file://"));
                        assert!(root.uri.len() <= crate::limits::MAX_ROOT_URI_BYTES);
                        assert!(!root.uri.chars().any(char::is_control));
                    }
                }
                Ok(Answer::Elicited(_)) | Err(_) => {}
            }
            // The same answer as a 2026-07-28 `inputResponses` value gets the same verdict.
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(raw.get()) {
                let as_value = question.check_value(&value).is_ok();
                let as_raw = question.check(raw.get()).is_ok();
                assert_eq!(as_value, as_raw, "the two ways in disagree");
            }
        }
    });
}

/// Rounds of input (2026-07-28): the input's first line is a call's `inputResponses` (JSON,
/// if it reads), the rest its `requestState`. The round opens at a fixed time under a fixed
/// key, so a state sealed once (a seed) stays good. Then the fuzz questions are asked in
/// order (a form named `user_name`, a sampling request, roots): what an answer lets through
/// fits its question, as in [`answers`]. When the round ends asking, its state is opened again
/// with no answers: it must open, one round later, and each question must get again exactly
/// what it got (an answer carried) or still wait; the same state with one byte changed must
/// be refused.
pub fn rounds(data: &[u8]) {
    use crate::asking::{Answer, Elicited, Question};
    use crate::rounds::{Ending, Round, RoundEnd, Step};
    const NOW: u64 = 2_000_000_000;
    let (responses, state) = match data.iter().position(|byte| *byte == b'\n') {
        Some(end) => data.split_at(end),
        None => (data, &[][..]),
    };
    let responses = serde_json::from_slice::<Value>(responses).ok();
    let state = (!state.is_empty()).then(|| {
        Value::String(String::from_utf8_lossy(state.get(1..).unwrap_or_default()).into_owned())
    });
    let key = FUZZ_STATE_KEY.with(Arc::clone);
    let arguments = serde_json::Map::new();
    let call = ("tools/call", "ask", &arguments);
    let can = crate::asking::ClientCan {
        elicit: true,
        sample: true,
        roots: true,
    };
    let Ok(round) = Round::open_at(&key, call, can, responses, state.as_ref(), NOW) else {
        return;
    };
    FUZZ_QUESTIONS.with(|questions| {
        let named: Vec<Question> = questions
            .iter()
            .map(|question| match question {
                Question::Elicit(form) => Question::Elicit(
                    form.clone()
                        .named("user_name")
                        .unwrap_or_else(|_| fail("the fuzz key is refused")),
                ),
                Question::Sample(sampling) => Question::Sample(sampling.clone()),
                Question::Roots => Question::Roots,
            })
            .collect();
        let mut got = Vec::new();
        for question in &named {
            let step = round.ask(question, question.key());
            got.push(match &step {
                Step::Answered(Ok(Answer::Elicited(Elicited::Accepted(content)))) => {
                    check_form_content(content);
                    Some(format!("{content:?}"))
                }
                Step::Answered(Ok(Answer::Sampled(sampled))) => {
                    assert!(sampled.text.len() <= crate::limits::MAX_ANSWER_BYTES);
                    Some(format!("{sampled:?}"))
                }
                Step::Answered(Ok(Answer::Roots(roots))) => {
                    assert!(roots.len() <= crate::limits::MAX_ROOTS);
                    Some(format!("{roots:?}"))
                }
                Step::Answered(other) => Some(format!("{other:?}")),
                Step::Wait => None,
            });
        }
        let Some(RoundEnd(Ending::InputRequired { requests, state })) = round.end() else {
            return;
        };
        assert!(requests.len() <= crate::limits::MAX_INPUT_REQUESTS);
        assert!(state.len() <= crate::limits::MAX_REQUEST_STATE_BYTES);
        let reopened = Round::open_at(
            &key,
            call,
            can,
            None,
            Some(&Value::from(state.as_str())),
            NOW,
        )
        .unwrap_or_else(|error| fail(&format!("our own state is refused: {error}")));
        for (question, before) in named.iter().zip(&got) {
            let again = match round_step(&reopened, question) {
                Step::Wait => None,
                Step::Answered(Ok(Answer::Elicited(Elicited::Accepted(content)))) => {
                    Some(format!("{content:?}"))
                }
                Step::Answered(Ok(Answer::Sampled(sampled))) => Some(format!("{sampled:?}")),
                Step::Answered(Ok(Answer::Roots(roots))) => Some(format!("{roots:?}")),
                Step::Answered(other) => Some(format!("{other:?}")),
            };
            // A refused or unanswerable question (say, Busy) carries nothing; an answer is
            // carried exactly; a question still asked still waits.
            if before
                .as_deref()
                .is_some_and(|text| !text.starts_with("Err"))
            {
                assert_eq!(
                    &again, before,
                    "an answer changed on its way through the state"
                );
            }
        }
        let mut bytes = state.into_bytes();
        let at = data.len() % bytes.len().max(1);
        if let Some(byte) = bytes.get_mut(at) {
            *byte = if *byte == b'A' { b'B' } else { b'A' };
        }
        let changed = String::from_utf8_lossy(&bytes).into_owned();
        assert!(
            Round::open_at(&key, call, can, None, Some(&Value::from(changed)), NOW).is_err(),
            "a state with a byte changed is taken"
        );
    });
}

fn round_step(
    round: &crate::rounds::Round,
    question: &crate::asking::Question,
) -> crate::rounds::Step {
    round.ask(question, question.key())
}

thread_local! {
    static FUZZ_STATE_KEY: Arc<crate::rounds::StateKey> =
        Arc::new(crate::rounds::StateKey::from_bytes(b"the fuzz target's request state key"));
    static FUZZ_QUESTIONS: Vec<crate::asking::Question> = fuzz_questions();
}

/// The form of [`answers`]: `name` (required text of 1 to 8 characters), `age` (an integer
/// 0 to 150), `score` (a number), `status` (one of two), `verified` (a flag), `tags` (one to
/// two of three).
fn fuzz_questions() -> Vec<crate::asking::Question> {
    use crate::asking::{Elicitation, Question, Sampling};
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "score": {"type": "number"},
            "status": {"type": "string", "oneOf": [{"const": "on", "title": "On"}, {"const": "off", "title": "Off"}]},
            "verified": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2}
        },
        "required": ["name"]
    });
    let form =
        Elicitation::new("fuzz", schema).unwrap_or_else(|_| fail("the fuzz form is refused"));
    vec![
        Question::Elicit(form),
        Question::Sample(Sampling::new("fuzz")),
        Question::Roots,
    ]
}

/// What [`answers`] asserts of content the form let through.
fn check_form_content(content: &serde_json::Map<String, Value>) {
    assert!(
        content
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| { (1..=8).contains(&name.chars().count()) }),
        "required name missing or out of bounds: {content:?}"
    );
    for (key, value) in content {
        let fits = match key.as_str() {
            "name" => true,
            "age" => value.as_i64().is_some_and(|age| (0..=150).contains(&age)),
            "score" => value.as_f64().is_some_and(f64::is_finite),
            "status" => matches!(value.as_str(), Some("on" | "off")),
            "verified" => value.is_boolean(),
            "tags" => value.as_array().is_some_and(|tags| {
                (1..=2).contains(&tags.len())
                    && tags
                        .iter()
                        .all(|tag| matches!(tag.as_str(), Some("a" | "b" | "c")))
                    && tags.first() != tags.get(1)
            }),
            _ => false,
        };
        assert!(fits, "field {key:?} let through with {value}");
    }
}

/// Engine: the input is split into lines, each fed to one session with in-process tools;
/// after each line, the output is checked, notifications get nothing, and a started call
/// completes with exactly one reply.
///
/// A task's id is 256 random bits no input can guess, so the token `@task` in a frame stands
/// for the id of the last task the session was given: inputs reach the `tasks/*` methods on
/// a real task (its run, a waiting `tasks/result`, cancel of a running or ended task), and
/// the fuzzer still mutates everything around it.
pub fn engine(data: &[u8]) {
    // Inside the runtime, so that a task a frame creates has a runtime to start on (its run
    // goes on while later calls are driven; the session's end cancels it).
    let _runtime = runtime().enter();
    let mut engine = Engine::new(fuzz_server());
    let mut frames = data.split(|b| *b == b'\n').peekable();
    let mut last_task: Option<Vec<u8>> = None;
    while let Some(frame) = frames.next() {
        let frame = with_task_id(frame, last_task.as_deref());
        let frame = frame.as_slice();
        let mut out = Vec::new();
        let effect = engine.handle(frame, &mut out);
        if let Some(task) = task_id_in(&out) {
            last_task = Some(task);
        }
        let lines = check_output(&out).unwrap_or_else(|broken| fail(&broken.to_string()));
        assert!(lines <= 1, "more than one reply to one frame");
        if is_notification(frame) {
            assert_eq!(lines, 0, "a notification was answered");
        }
        if let Effect::Start(call) = effect {
            assert_eq!(lines, 0, "a started call was also answered at once");
            let completion = if call.may_ask() {
                run_asking(&mut engine, call, &mut frames)
            } else {
                runtime().block_on(call.run(crate::handler::CallContext::detached()))
            };
            let mut done = Vec::new();
            engine.complete(completion, &mut done);
            // Questions the call left unanswered are withdrawn before its reply.
            let done = without_withdrawals(&done);
            let lines = check_output(&done).unwrap_or_else(|broken| fail(&broken.to_string()));
            assert_eq!(lines, 1, "a completed call must be answered exactly once");
        }
    }
    // Whatever the session subscribed to, announcements give bounded, well-formed
    // notifications only: one per subscribed URI announced, one per subscription when some
    // were missed.
    let mut told = Vec::new();
    for uri in ["test://notes", "test://logo", "test://item/1"] {
        engine.resource_updated(uri, &mut told);
    }
    let announced = check_updates(&told).unwrap_or_else(|broken| fail(&broken));
    assert!(
        announced <= 3,
        "more than one notification per announcement"
    );
    let mut missed = Vec::new();
    engine.resources_maybe_updated(&mut missed);
    let all = check_updates(&missed).unwrap_or_else(|broken| fail(&broken));
    assert!(
        all <= crate::limits::MAX_SUBSCRIPTIONS,
        "more subscriptions than the cap"
    );
}

/// The placeholder [`engine`] replaces with the last task id it was given.
const TASK_PLACEHOLDER: &[u8] = b"@task";

/// `frame` with every `@task` replaced by `task` (unchanged when there is none).
fn with_task_id(frame: &[u8], task: Option<&[u8]>) -> Vec<u8> {
    let Some(task) = task else {
        return frame.to_vec();
    };
    let mut replaced = Vec::with_capacity(frame.len());
    let mut rest = frame;
    while let Some(at) = rest
        .windows(TASK_PLACEHOLDER.len())
        .position(|window| window == TASK_PLACEHOLDER)
    {
        let (before, after) = rest.split_at(at);
        replaced.extend_from_slice(before);
        replaced.extend_from_slice(task);
        rest = after.get(TASK_PLACEHOLDER.len()..).unwrap_or_default();
    }
    replaced.extend_from_slice(rest);
    replaced
}

/// The first task id (`"taskId":"` and 64 hex digits) in `out`, if any.
fn task_id_in(out: &[u8]) -> Option<Vec<u8>> {
    const KEY: &[u8] = b"\"taskId\":\"";
    let at = out.windows(KEY.len()).position(|window| window == KEY)?;
    let id = out.get(at.checked_add(KEY.len())?..)?.get(..64)?;
    id.iter().all(u8::is_ascii_hexdigit).then(|| id.to_vec())
}

/// Runs a call that may ask the client (its session declared a capability): each question the
/// engine writes is checked, then answered by the input's next frame when that is a
/// response (the frame is the client's answer, hostile like any other); a question nobody
/// answers times out on a paused clock, with no wait.
fn run_asking<'a>(
    engine: &mut Engine,
    call: crate::call::Call,
    frames: &mut std::iter::Peekable<impl Iterator<Item = &'a [u8]>>,
) -> crate::handler::Completion {
    use crate::handler::{CallContext, Event, Report};
    asking_runtime().block_on(async {
        let (events_tx, mut events_rx) = tokio::sync::mpsc::channel(16);
        let context = CallContext::reporting(&call, events_tx.clone());
        let task = tokio::spawn(async move {
            let completion = call.run(context).await;
            if events_tx.send(Event::from(completion)).await.is_err() {
                fail("the call's completion had nowhere to go");
            }
        });
        let completion = loop {
            match events_rx.recv().await {
                Some(Event(Report::Ask(ask))) => {
                    let mut out = Vec::new();
                    engine.ask(ask, &mut out);
                    check_questions(&out).unwrap_or_else(|broken| fail(&broken));
                    if let Some(answer) = frames.next_if(|frame| is_response(frame)) {
                        let mut replies = Vec::new();
                        let _effect = engine.handle(answer, &mut replies);
                        assert!(replies.is_empty(), "an answer was answered");
                    }
                }
                Some(Event(Report::Done(completion))) => break completion,
                Some(_) => {}
                None => fail("a call ended without its completion"),
            }
        };
        drop(task);
        completion
    })
}

/// A runtime whose clock is paused: a question's deadline passes as soon as nothing else
/// can run.
fn asking_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap_or_else(|_| fail("the fuzzer cannot run without a runtime"))
    })
}

/// Whether `frame` is a response (a possible answer to a question).
fn is_response(frame: &[u8]) -> bool {
    matches!(
        crate::envelope::parse(frame, crate::limits::MAX_JSON_DEPTH),
        Ok(crate::envelope::Message::Response(_))
    )
}

/// Checks what [`Engine::ask`] wrote: nothing, or one `elicitation/create` request with a
/// positive integer id and the fuzz form's message, after any withdrawals
/// (`notifications/cancelled` of earlier questions).
fn check_questions(out: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(out).map_err(|_| "a question is not UTF-8".to_owned())?;
    let mut requests = 0_usize;
    for line in text.lines() {
        let message: Value =
            serde_json::from_str(line).map_err(|_| format!("a question is not JSON: {line}"))?;
        match message.get("method").and_then(Value::as_str) {
            Some("elicitation/create") => {
                requests = requests.saturating_add(1);
                if message.get("id").and_then(Value::as_u64).unwrap_or(0) == 0 {
                    return Err(format!("a question without a positive id: {line}"));
                }
                if message.pointer("/params/message") != Some(&Value::from("fuzz")) {
                    return Err(format!("a question that is not the tool's: {line}"));
                }
            }
            Some("notifications/cancelled") if message.get("id").is_none() => {}
            _ => return Err(format!("not a question: {line}")),
        }
    }
    if requests > 1 {
        return Err("more than one request for one question".to_owned());
    }
    Ok(())
}

/// `out` without its `notifications/cancelled` lines (questions withdrawn at a call's end).
fn without_withdrawals(out: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(out.len());
    for line in out.split_inclusive(|&b| b == b'\n') {
        let withdrawal = serde_json::from_slice::<Value>(line).is_ok_and(|message| {
            message.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
                && message.get("id").is_none()
        });
        if !withdrawal {
            kept.extend_from_slice(line);
        }
    }
    kept
}

/// Checks that `out` holds only `notifications/resources/updated` lines, each naming a URI
/// within the bound; returns how many.
fn check_updates(out: &[u8]) -> Result<usize, String> {
    let text = std::str::from_utf8(out).map_err(|_| "updates are not UTF-8".to_owned())?;
    let mut lines = 0_usize;
    for line in text.lines() {
        lines = lines.saturating_add(1);
        let value: Value =
            serde_json::from_str(line).map_err(|_| format!("an update is not JSON: {line:?}"))?;
        let uri = value
            .get("params")
            .and_then(|params| params.get("uri"))
            .and_then(Value::as_str);
        let well_formed = value.get("jsonrpc") == Some(&Value::from("2.0"))
            && value.get("method") == Some(&Value::from("notifications/resources/updated"))
            && value.get("id").is_none()
            && uri.is_some_and(|uri| uri.len() <= crate::limits::MAX_RESOURCE_URI_BYTES);
        if !well_formed {
            return Err(format!("not a resource update: {line}"));
        }
    }
    Ok(lines)
}

/// Arguments: any JSON object through the argument bounds and a rich schema; the walk and
/// the validator return, and every violation is built from the schema alone: its path from
/// property names, indices and `*`, its rule from the fixed phrases with quoted values that
/// the schema holds.
pub fn arguments(data: &[u8]) {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let limits = Limits::default();
    let bounded = crate::tools::arguments::check(&map, &limits);
    let schema = arguments_schema();
    let validator = crate::tools::schema::Validator::compile(&schema)
        .unwrap_or_else(|_| fail("the fuzz schema does not compile"));
    let arguments = Value::Object(map);
    let violations = validator.validate(&arguments);
    assert!(violations.len() <= crate::limits::MAX_REPORTED_VIOLATIONS);
    if bounded.is_err() {
        return;
    }
    let schema_text = schema.to_string();
    let names = [
        "arguments",
        "*",
        "count",
        "ratio",
        "name",
        "mode",
        "tags",
        "choice",
        "either",
        "not_null",
        "map",
        "next",
        "value",
    ];
    for violation in &violations {
        for segment in violation.path.split('.') {
            let name = segment.split('[').next().unwrap_or_default();
            let indices_ok = segment.split('[').skip(1).all(|index| {
                index
                    .strip_suffix(']')
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            });
            assert!(
                names.contains(&name) && indices_ok,
                "path not from the schema: {violation}"
            );
        }
        let phrases = [
            "is required",
            "must be ",
            "must match the pattern `",
            "has a property the tool does not accept",
            "does not match any of the accepted forms",
            "must match exactly one of the accepted forms",
            "matches a form the tool refuses",
            "is not allowed",
            "are too complex to validate",
            "must have at ",
            "must not repeat items",
        ];
        assert!(
            phrases.iter().any(|p| violation.rule.starts_with(p)),
            "unknown rule: {violation}"
        );
        // Anything quoted in a rule is a value of the schema.
        for (i, quoted) in violation.rule.split('"').enumerate() {
            if i % 2 == 1 {
                assert!(
                    schema_text.contains(quoted),
                    "a rule quotes input: {violation}"
                );
            }
        }
        // Anything named in backticks is the schema's, or the peer's own property name when
        // it is plain (1 to 64 of `A-Z a-z 0-9 _ -`): nothing else of the input is repeated.
        for (i, named) in violation.rule.split('`').enumerate() {
            if i % 2 == 1 {
                let plain = (1..=64).contains(&named.len())
                    && named
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                assert!(
                    plain || schema_text.contains(named),
                    "a rule names input that is not a plain name: {violation}"
                );
            }
        }
    }
}

fn arguments_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": 200, "format": "uint8"},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "name": {"type": ["string", "null"], "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
            "mode": {"enum": ["fast", "slow"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3, "uniqueItems": true},
            "choice": {"oneOf": [{"type": "string", "const": "a"}, {"type": "integer", "multipleOf": 3}]},
            "either": {"anyOf": [{"type": "boolean"}, {"$ref": "#/$defs/Node"}]},
            "not_null": {"not": {"type": "null"}},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 4}
        },
        "required": ["count"],
        "additionalProperties": false,
        "$defs": {"Node": {"type": "object", "properties": {
            "next": {"$ref": "#/$defs/Node"}, "value": {"type": "string", "maxLength": 4}}}}
    })
}

#[expect(clippy::panic, reason = "a fuzz finding is reported by panicking")]
fn fail(broken: &str) -> ! {
    panic!("{broken}")
}

/// Whether a frame is, by an independent reading, an object with `method` and no `id` that
/// the server can read at all. A frame nested deeper than the limit is not read (the parse
/// stops there, before the rest of the message is seen), so it is answered `-32700` like any
/// other unreadable frame, as JSON-RPC answers unparseable input: it does not count here. A
/// number no `f64` holds (`1e400`) is valid JSON and does not make a frame unreadable, so the
/// frame is read level by level as raw values, whose numbers are never computed.
fn is_notification(frame: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(frame) else {
        return false;
    };
    let Ok(top) = serde_json::from_str::<Box<RawValue>>(text) else {
        return false;
    };
    if !readable(&top, crate::limits::MAX_JSON_DEPTH) {
        return false;
    }
    serde_json::from_str::<Members>(top.get()).is_ok_and(|Members(members)| {
        members.iter().any(|(key, _)| key == "method") && members.iter().all(|(key, _)| key != "id")
    })
}

/// An object's members in order, a repeated key as often as it appears (a map would keep one
/// value of a repeated key and never look at the others).
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// Whether `raw` is JSON whose strings are all valid and whose arrays and objects nest at most
/// `levels` deep, whatever the range of its numbers.
fn readable(raw: &RawValue, levels: usize) -> bool {
    let text = raw.get();
    let below = levels.saturating_sub(1);
    match text.as_bytes().first() {
        Some(b'{') => {
            levels > 0
                && serde_json::from_str::<Members>(text).is_ok_and(|Members(members)| {
                    members.iter().all(|(_, value)| readable(value, below))
                })
        }
        Some(b'[') => {
            levels > 0
                && serde_json::from_str::<Vec<Box<RawValue>>>(text)
                    .is_ok_and(|items| items.iter().all(|item| readable(item, below)))
        }
        Some(b'"') => serde_json::from_str::<String>(text).is_ok(),
        Some(b'-' | b'0'..=b'9') => serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok(),
        _ => serde_json::from_str::<Value>(text).is_ok(),
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|_| fail("the fuzzer cannot run without a runtime"))
    })
}

/// A server with instant tools: one echoes, one fails. Built once: schema generation is
/// slower than a whole fuzz iteration. No tool panics on purpose here: libFuzzer's panic hook
/// aborts on any panic, caught or not, so the panic guard is covered by the unit and
/// integration tests instead.
pub(crate) fn fuzz_server() -> Arc<Shared> {
    static SERVER: std::sync::OnceLock<Arc<Shared>> = std::sync::OnceLock::new();
    Arc::clone(SERVER.get_or_init(build_fuzz_server))
}

fn build_fuzz_server() -> Arc<Shared> {
    // One server serves every fuzz input: shared quotas would soon refuse everything and hide
    // the rest of the engine. The quotas have their own deterministic tests.
    let limits = Limits {
        tool_call_rate: None,
        cheap_method_rate: None,
        ..Limits::default()
    };
    // With subscriptions, so that inputs reach `resources/subscribe` and its bound; and a
    // tool that asks the client (`ask`), so that inputs reach the questions and answers.
    let mut tools = crate::test_server::tools();
    tools.push(
        crate::tools::Tool::builder("ask")
            .description("Asks the client to fill in the fuzz form")
            .handler(
                |_: crate::tools::NoArguments, context: crate::handler::CallContext| async move {
                    let Some(crate::asking::Question::Elicit(form)) =
                        fuzz_questions().into_iter().next()
                    else {
                        return crate::output::ToolOutput::text("no form");
                    };
                    match context.elicit(form).await {
                        Ok(crate::asking::Elicited::Accepted(content)) => {
                            check_form_content(&content);
                            crate::output::ToolOutput::text("accepted")
                        }
                        Ok(_) => crate::output::ToolOutput::text("declined"),
                        Err(error) => crate::output::ToolOutput::text(error.to_string()),
                    }
                },
            ),
    );
    // A tool that may run as a task (2025-11-25), so that inputs reach task creation, its
    // bounds and the `tasks/*` methods.
    tools.push(
        crate::tools::Tool::builder("tasked")
            .description("Runs as a task when asked")
            .task(crate::tools::TaskMode::Optional)
            .handler(|_: crate::tools::NoArguments| async { "done" }),
    );
    // And one that runs only as a task, so that 2026-07-28 inputs reach the handle the
    // server answers at once (and `-32021` without the extension).
    tools.push(
        crate::tools::Tool::builder("tasked_always")
            .description("Runs only as a task")
            .task(crate::tools::TaskMode::Always)
            .handler(|_: crate::tools::NoArguments| async { "done" }),
    );
    // And a prompt that asks the user first (2026-07-28 requests), so that inputs reach its
    // round.
    let mut prompts = crate::test_server::prompts();
    let form = crate::asking::Elicitation::new(
        "Which tone?",
        serde_json::json!({
            "type": "object",
            "properties": {"tone": {"type": "string", "maxLength": 16}},
            "required": ["tone"]
        }),
    )
    .unwrap_or_else(|_| fail("the fuzz prompt's form is refused"));
    prompts.push(
        crate::prompts::Prompt::builder("ask_prompt")
            .description("Asks for its tone")
            .asking(form)
            .dynamic(
                serde_json::json!({"type": "object", "properties": {"tone": {"type": "string"}}}),
                |args| {
                    let tone = args.get("tone").map_or("none", String::as_str);
                    vec![crate::prompts::PromptMessage::user(format!("Tone: {tone}"))]
                },
            ),
    );
    crate::test_server::served_with(
        tools,
        limits,
        prompts,
        crate::test_server::resources(),
        Some(crate::ResourceUpdates::new()),
    )
    .unwrap_or_else(|_| fail("the fuzz server's tools are invalid"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use std::path::{Path, PathBuf};

    include!("../../../fuzz/replay.rs");

    #[test]
    fn the_entry_points_accept_interesting_inputs() {
        framing(b"\x05\x02\x03abc\ndefghij\n\r\nk");
        envelope(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        engine(
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail"}}
[1,2]
{"jsonrpc":"2.0","method":"x"}"#,
        );
    }

    #[test]
    fn the_structured_entry_points_accept_their_seeds() {
        arguments(br#"{"count": 5, "name": "abc", "tags": ["x", "x"], "map": {"k": "v"}}"#);
        arguments(br#"{"count": "SECRET-VALUE", "extra-key-here": 1}"#);
    }

    /// Found by the engine target: a notification nested past the depth limit is answered
    /// `-32700` (it cannot be read, so it cannot be known to be a notification).
    #[test]
    fn a_notification_too_deep_to_read_is_answered_as_a_parse_error() {
        let frame = format!(
            r#"{{"jsonrpc":"2.0","method":"ping","params":{{"a":{}{}}}}}"#,
            "[".repeat(70),
            "]".repeat(70)
        );
        assert!(!is_notification(frame.as_bytes()));
        engine(frame.as_bytes());
    }

    /// A notification holding a number no `f64` holds is readable, so the
    /// engine target checks that it is not answered.
    #[test]
    fn a_notification_with_a_number_out_of_range_is_one() {
        for frame in [
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e400}}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":{"a":[[-1e999999]]}}"#,
        ] {
            assert!(is_notification(frame.as_bytes()), "{frame}");
            engine(frame.as_bytes());
        }
        for frame in [
            r#"{"jsonrpc":"2.0","id":1e400,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":{"a":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":{"a":1e400,}}"#,
            "{\"method\":\"x\"} 1",
        ] {
            assert!(!is_notification(frame.as_bytes()), "{frame}");
        }
    }

    /// Found by the engine target: a member repeated after an unreadable value (a lone
    /// surrogate) hid that value from the oracle, which keeps the last of a repeated key; the
    /// engine answers the frame `-32700`, as it must. Every member is read, repeats included.
    #[test]
    fn a_repeated_member_does_not_hide_an_unreadable_value() {
        for frame in [
            r#"{"jsonrpc":"2.0","method":"too\udc00l","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"ping","params":{"a":"\ud800","a":1}}"#,
            r#"{"jsonrpc":"2.0","method":"ping","params":[{"a":[["\udfff"]],"a":2}]}"#,
        ] {
            assert!(!is_notification(frame.as_bytes()), "{frame}");
            engine(frame.as_bytes());
        }
        let repeated = r#"{"jsonrpc":"2.0","method":"x","method":"ping"}"#;
        assert!(is_notification(repeated.as_bytes()));
        engine(repeated.as_bytes());
    }

    #[test]
    fn corpus_replays_framing() {
        assert!(replay("framing", framing) > 0);
    }

    #[test]
    fn corpus_replays_envelope() {
        assert!(replay("envelope", envelope) > 0);
    }

    #[test]
    fn corpus_replays_answers() {
        assert!(replay("answers", answers) > 0);
    }

    #[test]
    fn corpus_replays_rounds() {
        assert!(replay("rounds", rounds) > 0);
    }

    /// The seeds of the rounds target: answers for each question, alone and together, and
    /// states the fuzz key sealed (so a mutation starts from a state that opens).
    #[test]
    #[ignore = "writes fuzz/corpus/rounds; run by hand when the seeds change"]
    fn write_rounds_seeds() {
        use crate::rounds::{Ending, Round, RoundEnd, Step};
        let form = r#"{"action":"accept","content":{"name":"Ada","age":30,"tags":["a"]}}"#;
        let sampled = r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#;
        let roots = r#"{"roots":[{"uri":"file:///work","name":"w"}]}"#;
        let mut seeds = vec![
            format!(r#"{{"user_name":{form}}}"#),
            format!(r#"{{"q2":{sampled}}}"#),
            format!(r#"{{"q3":{roots}}}"#),
            format!(r#"{{"user_name":{form},"q2":{sampled},"q3":{roots}}}"#),
            r#"{"user_name":{"action":"decline"},"extra":{}}"#.to_owned(),
            r#"{"user_name":12345}"#.to_owned(),
        ];
        // States: after the form only, and after form and sampling.
        let key = FUZZ_STATE_KEY.with(Arc::clone);
        let arguments = serde_json::Map::new();
        let can = crate::asking::ClientCan {
            elicit: true,
            sample: true,
            roots: true,
        };
        for given in [
            format!(r#"{{"user_name":{form}}}"#),
            format!(r#"{{"user_name":{form},"q2":{sampled}}}"#),
        ] {
            let round = Round::open_at(
                &key,
                ("tools/call", "ask", &arguments),
                can,
                serde_json::from_str(&given).ok(),
                None,
                2_000_000_000,
            )
            .unwrap();
            let questions: Vec<crate::asking::Question> = FUZZ_QUESTIONS.with(|questions| {
                questions
                    .iter()
                    .map(|question| match question {
                        crate::asking::Question::Elicit(form) => crate::asking::Question::Elicit(
                            form.clone().named("user_name").unwrap(),
                        ),
                        crate::asking::Question::Sample(sampling) => {
                            crate::asking::Question::Sample(sampling.clone())
                        }
                        crate::asking::Question::Roots => crate::asking::Question::Roots,
                    })
                    .collect()
            });
            for question in &questions {
                let _: Step = round.ask(question, question.key());
            }
            let Some(RoundEnd(Ending::InputRequired { state, .. })) = round.end() else {
                panic!("no state")
            };
            seeds.push(format!("{{}}\n{state}"));
            seeds.push(format!("{{\"q3\":{roots}}}\n{state}"));
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/rounds");
        std::fs::create_dir_all(&dir).unwrap();
        for (n, seed) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{}", n + 1)), seed).unwrap();
        }
    }

    #[test]
    fn corpus_replays_engine() {
        assert!(replay("engine", engine) > 0);
    }

    #[test]
    fn corpus_replays_arguments() {
        assert!(replay("arguments", arguments) > 0);
    }

    #[test]
    fn the_checker_catches_broken_output() {
        assert!(check_output(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n").is_ok());
        assert!(check_output(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}").is_err());
        assert!(
            check_output(
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}\n"
            )
            .is_err()
        );
        assert!(check_output(b"{\"jsonrpc\":\"2.0\",\"result\":{}}\n").is_err());
    }

    #[test]
    fn the_engine_target_stands_the_last_task_id_for_its_placeholder() {
        let id = "ab".repeat(32);
        let reply = format!(r#"{{"result":{{"task":{{"taskId":"{id}","status":"working"}}}}}}"#);
        assert_eq!(task_id_in(reply.as_bytes()), Some(id.clone().into_bytes()));
        // Not 64 hex digits: no id.
        assert_eq!(task_id_in(br#"{"taskId":"abc"}"#), None);
        assert_eq!(
            task_id_in(format!(r#""taskId":"{}""#, "g".repeat(64)).as_bytes()),
            None
        );
        let frame = br#"{"taskId":"@task","x":"@task@task"}"#;
        assert_eq!(
            with_task_id(frame, Some(id.as_bytes())),
            format!(r#"{{"taskId":"{id}","x":"{id}{id}"}}"#).into_bytes()
        );
        // Before any task, the frame is left as it is.
        assert_eq!(with_task_id(frame, None), frame.to_vec());
    }
}
