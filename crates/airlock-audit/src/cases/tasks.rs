//! The cases of [`Category::Tasks`]: a server that declares tasks in its 2025-11-25
//! `initialize` result (`capabilities.tasks.requests.tools.call`) asked about ids it never
//! issued or could not have, flooded with polls, and asked to cancel a task that ended; and
//! one that lists the 2026-07-28 extension (`io.modelcontextprotocol/tasks` in
//! `server/discover`) asked for tasks by requests that do not declare it. A server that
//! declares neither is not tried: each case says so (a note, not a finding).
//!
//! Over stdio every client has a server process of its own, so a second identity's view of
//! a task (another client's id) cannot be made here: the HTTP audit's
//! `http.legacy.task-of-another-session` makes it with two sessions.

use std::time::Instant;

use serde_json::{Value, json};

use super::super::judge::Outcome;
use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use Category::Tasks;
    vec![
        Case::custom(
            "tasks.unknown-id",
            Tasks,
            "tasks/get, tasks/result and tasks/cancel of a random 64-hex-digit id",
            "-32602 for each (2025-11-25: an id that names no task is invalid params); never a \
             result",
            unknown_id,
        ),
        Case::custom(
            "tasks.malformed-id",
            Tasks,
            "tasks/get of ids that are no id: empty, a number, an object, null, a path, a NUL, \
             4 KiB of text",
            "an error for each (-32602 or -32600), never a result; the server alive and within \
             memory",
            malformed_id,
        ),
        Case::custom(
            "tasks.poll-flood",
            Tasks,
            "10,000 tasks/get of an id never issued, written back to back",
            "each answered exactly once (errors, or rate-limit refusals); memory within the limit",
            poll_flood,
        )
        .budget(6),
        Case::custom(
            "tasks.cancel-finished",
            Tasks,
            "a task of the probe tool (params.task), polled until it ends, then tasks/cancel",
            "-32602 (2025-11-25: cancelling a task in a terminal status MUST be refused), and \
             the task still in the status it ended in",
            cancel_finished,
        )
        .budget(3),
        Case::custom(
            "tasks.undeclared-extension",
            Tasks,
            "2026-07-28, no handshake: server/discover, then tasks/get, tasks/update and \
             tasks/cancel whose _meta does not declare the io.modelcontextprotocol/tasks \
             extension",
            "-32021 for each, when discovery lists the extension (the extension: MUST)",
            undeclared_extension,
        )
        .before_handshake(),
    ]
}

/// Whether the handshake's `initialize` result declared task-augmented `tools/call`.
fn declares_tasks(session: &Session<'_>) -> bool {
    session
        .server_capabilities
        .pointer("/tasks/requests/tools/call")
        .is_some_and(Value::is_object)
}

fn info(detail: impl Into<String>) -> Judgement {
    Judgement {
        verdict: Verdict::Note,
        severity: Some(Severity::Info),
        detail: detail.into(),
        answer: None,
        follow_up: true,
    }
}

fn judged(verdict: Verdict, severity: Option<Severity>, detail: String) -> Judgement {
    Judgement {
        verdict,
        severity,
        detail,
        answer: None,
        follow_up: true,
    }
}

const NOT_DECLARED: &str = "the server declares no tasks (no capabilities.tasks.requests.tools.call \
                            in its initialize result): nothing to try";

/// A fresh id of the shape servers issue (64 hex digits), which no server issued.
pub(crate) fn random_id() -> String {
    let mut id = crate::exposure::random_hex();
    while id.len() < 64 {
        id.push_str(&crate::exposure::random_hex());
    }
    id.chars().take(64).collect()
}

/// One request and its reply, or why there is none.
fn ask(session: &mut Session<'_>, method: &str, params: Value) -> Result<Outcome, String> {
    let id = session.request(method, Some(params));
    let until = session.deadline;
    session
        .await_reply(&id, until)
        .map(|response| response.outcome)
        .map_err(|why| format!("{method}: {why}"))
}

fn unknown_id(session: &mut Session<'_>) -> Judgement {
    if !declares_tasks(session) {
        return info(NOT_DECLARED);
    }
    let id = random_id();
    let mut worst = (Verdict::Pass, None);
    let mut said = Vec::new();
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let (verdict, severity, text) = match ask(session, method, json!({ "taskId": id })) {
            Ok(Outcome::Error { code: -32602, .. }) => {
                (Verdict::Pass, None, format!("{method}: -32602"))
            }
            Ok(Outcome::Error { code, .. }) => (
                Verdict::Note,
                Some(Severity::Low),
                format!("{method}: error {code}, where 2025-11-25 says -32602"),
            ),
            Ok(Outcome::Result { .. }) => (
                Verdict::Fail,
                Some(Severity::High),
                format!("{method}: a result for an id the server never issued"),
            ),
            Err(why) => (Verdict::Fail, Some(Severity::High), why),
        };
        worst = worst.max((verdict, severity));
        said.push(text);
    }
    judged(worst.0, worst.1, said.join("; "))
}

fn malformed_id(session: &mut Session<'_>) -> Judgement {
    if !declares_tasks(session) {
        return info(NOT_DECLARED);
    }
    // Long, not huge: a huge string is the `huge` category's, and a server may refuse it
    // before it reads the id (answering to a null id, which this case could not match).
    let long = "a".repeat(4096);
    let ids: [(&str, Value); 7] = [
        ("empty", json!("")),
        ("a number", json!(7)),
        ("an object", json!({"taskId": "x"})),
        ("null", Value::Null),
        ("a path", json!("../../../etc/passwd")),
        ("a NUL", json!("\u{0}")),
        ("4 KiB of text", json!(long)),
    ];
    let mut worst = (Verdict::Pass, None);
    let mut said = Vec::new();
    for (what, id) in ids {
        let (verdict, severity, text) = match ask(session, "tasks/get", json!({ "taskId": id })) {
            Ok(Outcome::Error {
                code: -32602 | -32600,
                ..
            }) => (Verdict::Pass, None, None),
            Ok(Outcome::Error { code, .. }) => (
                Verdict::Note,
                Some(Severity::Low),
                Some(format!("{what}: error {code}")),
            ),
            Ok(Outcome::Result { .. }) => (
                Verdict::Fail,
                Some(Severity::High),
                Some(format!("{what}: a result")),
            ),
            Err(why) => (Verdict::Fail, Some(Severity::High), Some(why)),
        };
        worst = worst.max((verdict, severity));
        said.extend(text);
    }
    let detail = if said.is_empty() {
        "-32602 or -32600 for every id".to_owned()
    } else {
        said.join("; ")
    };
    judged(worst.0, worst.1, detail)
}

fn poll_flood(session: &mut Session<'_>) -> Judgement {
    const COUNT: u64 = 10_000;
    if !declares_tasks(session) {
        return info(NOT_DECLARED);
    }
    let task = random_id();
    let mut lines = Vec::new();
    for id in 1..=COUNT {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
                          "params": {"taskId": task}});
        lines.extend_from_slice(line.to_string().as_bytes());
        lines.push(b'\n');
    }
    flood(session, "tasks/get", vec![Op::Bytes(lines)], COUNT)
}

/// How often [`cancel_finished`] polls a task.
const POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

fn cancel_finished(session: &mut Session<'_>) -> Judgement {
    if !declares_tasks(session) {
        return info(NOT_DECLARED);
    }
    let Some(tool) = session.probe.tool.clone() else {
        return info("no tool the audit may call (read-only, or --call-tool): no task to create");
    };
    let arguments = session.probe.arguments.clone();
    let created = ask(
        session,
        "tools/call",
        json!({"name": tool, "arguments": arguments, "task": {}}),
    );
    let task = match &created {
        Ok(Outcome::Result { value, .. }) => value
            .as_ref()
            .and_then(|value| value.pointer("/task/taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    let Some(task) = task else {
        return info(format!(
            "the probe tool did not run as a task ({}): no task to cancel",
            match created {
                Ok(Outcome::Error { code, .. }) => format!("error {code}"),
                Ok(Outcome::Result { .. }) => "an ordinary result".to_owned(),
                Err(why) => why,
            }
        ));
    };
    let status = |session: &mut Session<'_>| -> Result<Option<String>, String> {
        match ask(session, "tasks/get", json!({ "taskId": task }))? {
            Outcome::Result { value, .. } => Ok(value
                .as_ref()
                .and_then(|value| value.get("status"))
                .and_then(Value::as_str)
                .map(str::to_owned)),
            Outcome::Error { code, .. } => Err(format!("tasks/get of its own task: error {code}")),
        }
    };
    let ended = loop {
        match status(session) {
            Ok(Some(status)) if status != "working" && status != "input_required" => {
                break status;
            }
            Ok(_) if Instant::now() < session.deadline => std::thread::sleep(POLL_EVERY),
            Ok(_) => {
                return info("the task did not end within the case's time: nothing to judge");
            }
            Err(why) => return judged(Verdict::Fail, Some(Severity::Medium), why),
        }
    };
    let cancelled = ask(session, "tasks/cancel", json!({ "taskId": task }));
    let after = status(session);
    let (mut verdict, mut severity, mut detail) = match cancelled {
        Ok(Outcome::Error { code: -32602, .. }) => (
            Verdict::Pass,
            None,
            format!("the task ended {ended}; tasks/cancel: -32602"),
        ),
        Ok(Outcome::Error { code, .. }) => (
            Verdict::Note,
            Some(Severity::Low),
            format!(
                "the task ended {ended}; tasks/cancel: error {code}, where 2025-11-25 says -32602"
            ),
        ),
        Ok(Outcome::Result { .. }) => (
            Verdict::Fail,
            Some(Severity::Medium),
            format!(
                "the task ended {ended}; tasks/cancel answered a result (2025-11-25: MUST be \
                 -32602)"
            ),
        ),
        Err(why) => (Verdict::Fail, Some(Severity::High), why),
    };
    match after {
        Ok(Some(now)) if now == ended => {}
        Ok(now) => {
            verdict = Verdict::Fail;
            severity = severity.max(Some(Severity::Medium));
            detail.push_str(&format!(
                "; then tasks/get says {}: a terminal status changed",
                now.as_deref().unwrap_or("no status")
            ));
        }
        Err(why) => {
            verdict = Verdict::Fail;
            severity = severity.max(Some(Severity::Medium));
            detail.push_str(&format!("; then {why}"));
        }
    }
    judged(verdict, severity, detail)
}

/// The 2026-07-28 `_meta` of a request that declares no extension.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "airlock-audit", "version": "0"},
    })
}

fn undeclared_extension(session: &mut Session<'_>) -> Judgement {
    let listed = match ask(
        session,
        "server/discover",
        json!({ "_meta": modern_meta() }),
    ) {
        Ok(Outcome::Result { value, .. }) => value
            .as_ref()
            .and_then(|value| value.pointer("/capabilities/extensions"))
            .and_then(|extensions| extensions.get("io.modelcontextprotocol/tasks"))
            .is_some(),
        _ => false,
    };
    if !listed {
        return info(
            "server/discover lists no io.modelcontextprotocol/tasks extension (or the server \
             serves no 2026-07-28 discovery): nothing to try",
        );
    }
    let id = random_id();
    let mut worst = (Verdict::Pass, None);
    let mut said = Vec::new();
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = json!({"taskId": id, "_meta": modern_meta()});
        let (verdict, severity, text) = match ask(session, method, params) {
            Ok(Outcome::Error { code: -32021, .. }) => {
                (Verdict::Pass, None, format!("{method}: -32021"))
            }
            Ok(Outcome::Error { code, .. }) => (
                Verdict::Note,
                Some(Severity::Low),
                format!("{method}: error {code}, where the extension says -32021"),
            ),
            Ok(Outcome::Result { .. }) => (
                Verdict::Fail,
                Some(Severity::Medium),
                format!("{method}: a result for a request that did not declare the extension"),
            ),
            Err(why) => (Verdict::Fail, Some(Severity::High), why),
        };
        worst = worst.max((verdict, severity));
        said.push(text);
    }
    judged(worst.0, worst.1, said.join("; "))
}
