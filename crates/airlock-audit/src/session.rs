//! One case's conversation with the server under audit: handshake, hostile input, the
//! replies, the follow-up checks, and everything general found on the way.
//!
//! A session is a careful MCP client. Every wait has a deadline, every line the server writes
//! is checked (one JSON-RPC message, no stack trace, no reply nobody asked for), and what is
//! wrong is recorded as a [`Finding`] rather than stopping the case, so one report says all a
//! case showed. The hostile input itself is the caller's ([`super::cases`]); this module only
//! delivers it and collects what answers it.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::evidence::Evidence;
use super::failure::Failure;
use super::judge::{Asked, Id, Line, Outcome, Reply, Response};
use super::probe::Probe;
use super::severity::Kind;
use super::signals;
use super::target::{Event, Exit, Op, Received, Target};

/// Something a case showed besides its own verdict: a bad line, an unasked-for reply, a
/// follow-up that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    /// What it is, and so how bad.
    pub(crate) kind: Kind,
    /// What happened (fixed text and counts; server text only through `judge::shown`).
    pub(crate) text: String,
    /// How many times it happened.
    pub(crate) count: u64,
    /// What the server wrote the first time, when a line of its own showed it.
    pub(crate) evidence: Option<Evidence>,
}

/// What [`Session::next`] found.
#[derive(Debug)]
pub(crate) enum Next {
    /// A reply (a response or an array of them), when it arrived, and its size in bytes.
    Reply(Reply, Instant, usize),
    /// Nothing before the deadline.
    Timeout,
    /// stdout is closed: the server exited or closed it.
    Closed,
}

/// The replies that answered one input.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// Every reply except those to the session's own requests.
    pub(crate) replies: Vec<Reply>,
    /// From the end of the input to the first of them.
    pub(crate) answer: Option<Duration>,
    /// Whether the input was written whole (false: the server stopped reading or died).
    pub(crate) written: bool,
    /// The longest of the replies, in bytes.
    pub(crate) largest_reply_bytes: usize,
}

/// A case's conversation with one server process.
pub(crate) struct Session<'p> {
    target: Target,
    /// The tool the audit may call, and with what.
    pub(crate) probe: &'p Probe,
    /// When the hostile part of the case must be over.
    pub(crate) deadline: Instant,
    /// How long the follow-up checks may take.
    followup_budget: Duration,
    pending: VecDeque<Received>,
    findings: Findings,
    next_id: u64,
    /// Whether the MCP handshake is complete.
    pub(crate) ready: bool,
    /// Whether the session closed the server's stdin.
    pub(crate) input_closed: bool,
    stdout_closed: bool,
    /// Whether a line held the watched canary since [`Session::take_canary_seen`].
    canary_seen: bool,
    /// The `capabilities` the handshake's `initialize` declares.
    capabilities: Value,
    /// The `capabilities` the server's `initialize` result declared (`null` before the
    /// handshake, or when the result was too large to keep).
    pub(crate) server_capabilities: Value,
    /// Whether the server's requests are kept for the case to answer (the `asking` cases)
    /// instead of being answered "method not found".
    keeps_questions: bool,
    /// The server's requests kept for the case, oldest first (at most [`MAX_KEPT_QUESTIONS`]).
    questions: VecDeque<Asked>,
    /// Ids of the audit's own handshake, pings and `tools/list` (their answers are not
    /// evidence of what the case's input got back).
    bookkeeping: HashSet<Id>,
    /// The first line the case's input got back ([`Session::take_evidence`]).
    evidence: Option<Evidence>,
}

impl<'p> Session<'p> {
    /// A session over a freshly started `target`.
    pub(crate) fn new(
        target: Target,
        probe: &'p Probe,
        deadline: Instant,
        followup_budget: Duration,
    ) -> Self {
        Self {
            target,
            probe,
            deadline,
            followup_budget,
            pending: VecDeque::new(),
            findings: Findings::default(),
            next_id: 0,
            ready: false,
            input_closed: false,
            stdout_closed: false,
            canary_seen: false,
            capabilities: json!({}),
            server_capabilities: Value::Null,
            keeps_questions: false,
            questions: VecDeque::new(),
            bookkeeping: HashSet::new(),
            evidence: None,
        }
    }

    /// Declares `capabilities` in the handshake's `initialize`, and keeps the server's
    /// requests for the case to answer ([`Session::take_question`]) instead of answering
    /// them "method not found".
    pub(crate) fn answer_questions(&mut self, capabilities: Value) {
        self.capabilities = capabilities;
        self.keeps_questions = true;
    }

    /// The oldest request of the server's not yet taken (see [`Session::answer_questions`]).
    pub(crate) fn take_question(&mut self) -> Option<Asked> {
        self.questions.pop_front()
    }

    /// The time limit of one case (what the follow-up checks may take).
    pub(crate) fn case_timeout(&self) -> Duration {
        self.followup_budget
    }

    /// Sends one line of raw bytes (a newline is added).
    pub(crate) fn send_line(&mut self, mut line: Vec<u8>) {
        line.push(b'\n');
        self.send(Op::Bytes(line));
    }

    /// The target, for its memory and exit.
    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// The target, to finish it.
    pub(crate) fn target_mut(&mut self) -> &mut Target {
        &mut self.target
    }

    /// What was found besides the case's own verdict.
    pub(crate) fn findings(&self) -> &[Finding] {
        self.findings.as_slice()
    }

    /// Records a finding (repeats are counted, not repeated; past
    /// [`MAX_DISTINCT_FINDINGS`] different texts, further ones of a kind share one text).
    pub(crate) fn find(&mut self, kind: Kind, text: impl Into<String>) {
        self.findings.find(kind, text);
    }

    /// Queues input for the server.
    pub(crate) fn send(&mut self, op: Op) {
        if matches!(op, Op::Close) {
            self.input_closed = true;
            self.target.sample_now();
        }
        self.target.send(op);
    }

    /// Queues several inputs.
    pub(crate) fn send_all(&mut self, ops: Vec<Op>) {
        for op in ops {
            self.send(op);
        }
    }

    /// Sends a request of the audit's own (`"audit-N"` id) and returns its id.
    pub(crate) fn request(&mut self, method: &str, params: Option<Value>) -> Id {
        self.next_id = self.next_id.saturating_add(1);
        let id = format!("audit-{}", self.next_id);
        if matches!(method, "initialize" | "ping" | "tools/list")
            && self.bookkeeping.len() < MAX_BOOKKEEPING_IDS
        {
            self.bookkeeping.insert(Id::Str(id.clone()));
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let (Some(params), Some(object)) = (params, message.as_object_mut()) {
            object.insert("params".to_owned(), params);
        }
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.send(Op::Bytes(line));
        Id::Str(id)
    }

    /// Sends a notification.
    pub(crate) fn notify(&mut self, method: &str) {
        let mut line = json!({"jsonrpc": "2.0", "method": method})
            .to_string()
            .into_bytes();
        line.push(b'\n');
        self.send(Op::Bytes(line));
    }

    /// The next reply before `until`, after checking every line on the way.
    pub(crate) fn next(&mut self, until: Instant) -> Next {
        loop {
            let received = match self.pending.pop_front() {
                Some(received) => {
                    self.target.released(received.bytes);
                    received
                }
                None => {
                    if self.stdout_closed {
                        return Next::Closed;
                    }
                    let now = Instant::now();
                    if now >= until || signals::interrupted() {
                        return Next::Timeout;
                    }
                    let wait = until.saturating_duration_since(now).min(POLL);
                    match self.target.next_event(wait) {
                        None => continue,
                        Some(Event::Line(received)) => {
                            self.target.released(received.bytes);
                            received
                        }
                        Some(Event::Closed) => {
                            self.stdout_closed = true;
                            return Next::Closed;
                        }
                        Some(Event::Flooded) => {
                            self.find(
                                Kind::StdoutFlood,
                                "wrote more than 1 GiB to stdout in one case",
                            );
                            self.stdout_closed = true;
                            return Next::Closed;
                        }
                    }
                }
            };
            self.canary_seen |= received.canary;
            if self.evidence.is_none() && self.answers_the_case(&received.line) {
                self.evidence = Some(received.evidence.clone());
            }
            if let Some(reply) = self.check(received.line, received.leak, &received.evidence) {
                return Next::Reply(reply, received.at, received.bytes);
            }
        }
    }

    /// Whether `line` is something the case's input got back: anything but a notification, a
    /// question of the server's, or the answer to one of the audit's bookkeeping requests
    /// (the handshake, the marker and follow-up pings, `tools/list`).
    fn answers_the_case(&self, line: &Line) -> bool {
        match line {
            Line::Notification | Line::Request(_) => false,
            Line::Response(response) => !self.bookkeeping.contains(&response.id),
            _ => true,
        }
    }

    /// The first bytes of the first line that [`Session::answers_the_case`], if any came.
    pub(crate) fn take_evidence(&mut self) -> Option<Evidence> {
        self.evidence.take()
    }

    /// Whether a line held the token given to [`Target::watch_for`] since the last call;
    /// clears it.
    pub(crate) fn take_canary_seen(&mut self) -> bool {
        std::mem::take(&mut self.canary_seen)
    }

    /// The general checks of one line; returns it if it is a reply.
    fn check(&mut self, line: Line, leak: bool, evidence: &Evidence) -> Option<Reply> {
        match screen(&mut self.findings, line, leak, evidence) {
            Screened::Reply(reply) => Some(reply),
            Screened::Request(asked) => {
                if self.keeps_questions && self.questions.len() < MAX_KEPT_QUESTIONS {
                    self.questions.push_back(asked);
                    return None;
                }
                let id = asked.id;
                // A receiver must answer requests; the audit offers no client features.
                if !self.input_closed {
                    let mut line = format!(
                        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32601,"message":"Method not found"}}}}"#,
                        id.to_json()
                    )
                    .into_bytes();
                    line.push(b'\n');
                    self.target.send(Op::Bytes(line));
                }
                None
            }
            Screened::Other => None,
        }
    }

    /// Records a reply nobody was waiting for.
    pub(crate) fn unexpected(&mut self, reply: &Reply) {
        self.findings.unexpected(reply);
    }

    /// Waits until the queued input is written, keeping stdout drained meanwhile; the time the
    /// last byte went out, or `None` if writing failed or the deadline passed.
    pub(crate) fn wait_written(&mut self, until: Instant) -> Option<Instant> {
        loop {
            match self.target.written() {
                Ok(true) => return self.target.last_written_at(),
                Err(()) => return None,
                Ok(false) => {}
            }
            if Instant::now() >= until || signals::interrupted() {
                return None;
            }
            self.pump(POLL);
        }
    }

    /// Moves stdout lines into the pending queue for up to `wait` (so the server never blocks
    /// on a full pipe while the audit waits for something else).
    pub(crate) fn pump(&mut self, wait: Duration) {
        if self.stdout_closed {
            std::thread::sleep(wait);
            return;
        }
        match self.target.next_event(wait) {
            None => {}
            Some(Event::Line(received)) => self.pending.push_back(received),
            Some(Event::Closed) => self.stdout_closed = true,
            Some(Event::Flooded) => {
                self.find(
                    Kind::StdoutFlood,
                    "wrote more than 1 GiB to stdout in one case",
                );
                self.stdout_closed = true;
            }
        }
    }

    /// Waits for the reply to `id`; other replies are unexpected.
    pub(crate) fn await_reply(&mut self, id: &Id, until: Instant) -> Result<Response, Failure> {
        loop {
            match self.next(until) {
                Next::Reply(Reply::Single(response), ..) if response.id == *id => {
                    return Ok(response);
                }
                Next::Reply(other, ..) => self.unexpected(&other),
                Next::Timeout => return Err(Failure::NoReply),
                Next::Closed => return Err(self.gone()),
            }
        }
    }

    /// Why the server stopped answering, in a few words.
    pub(crate) fn gone(&self) -> Failure {
        match self.target.exit() {
            Some(exit) => Failure::Exited(exit.describe()),
            None => Failure::ClosedStdout,
        }
    }

    /// The MCP handshake: `initialize`, then `notifications/initialized`.
    ///
    /// # Errors
    ///
    /// What went wrong, for the report.
    pub(crate) fn handshake(&mut self, until: Instant) -> Result<Response, Failure> {
        let mut params = initialize_params(PROTOCOL_VERSION);
        if let Some(object) = params.as_object_mut() {
            object.insert("capabilities".to_owned(), self.capabilities.clone());
        }
        let id = self.request("initialize", Some(params));
        let reply = self
            .await_reply(&id, until)
            .map_err(|why| Failure::Handshake(Box::new(why)))?;
        match &reply.outcome {
            Outcome::Result { value, .. } => {
                self.server_capabilities = value
                    .as_ref()
                    .and_then(|value| value.get("capabilities"))
                    .cloned()
                    .unwrap_or(Value::Null);
                self.notify("notifications/initialized");
                self.ready = true;
                // A barrier: whatever comes before this ping's reply answers the notification
                // (and is reported as such), not the case's input.
                let barrier = self.request("ping", None);
                self.await_reply(&barrier, until)
                    .map_err(|why| Failure::HandshakePing(Box::new(why)))?;
                Ok(reply)
            }
            Outcome::Error { code, .. } => Err(Failure::InitializeRefused { code: *code }),
        }
    }

    /// Sends `input` followed by a marker ping, and collects every reply until the marker's
    /// (plus up to [`GRACE`] more if the input carried an id that is still unanswered).
    pub(crate) fn collect(&mut self, input: Vec<Op>, expects_reply: bool) -> Collected {
        self.send_all(input);
        let marker = self.request("ping", None);
        let written_at = self.wait_written(self.deadline);
        let mut collected = Collected {
            written: written_at.is_some(),
            ..Collected::default()
        };
        let start = written_at.unwrap_or_else(Instant::now);
        let mut until = self.deadline;
        let mut marked = false;
        loop {
            match self.next(until) {
                Next::Reply(Reply::Single(response), ..) if response.id == marker => {
                    marked = true;
                    if !expects_reply || !collected.replies.is_empty() {
                        break;
                    }
                    until = Instant::now()
                        .checked_add(GRACE)
                        .map_or(self.deadline, |grace| grace.min(self.deadline));
                }
                Next::Reply(reply, at, bytes) => {
                    if collected.answer.is_none() {
                        collected.answer = Some(at.saturating_duration_since(start));
                    }
                    collected.largest_reply_bytes = collected.largest_reply_bytes.max(bytes);
                    if collected.replies.len() < MAX_KEPT_REPLIES {
                        collected.replies.push(reply);
                    } else {
                        self.find(Kind::TooManyReplies, "more than 1,000 replies to one input");
                    }
                    if marked {
                        break;
                    }
                }
                Next::Timeout | Next::Closed => break,
            }
        }
        if !marked && !self.stdout_closed {
            self.find(
                Kind::Hang,
                "hangs: no answer to a ping sent after the input, within the case's time limit",
            );
        }
        collected
    }

    /// The follow-up every case ends with: a `ping` and a `tools/list` must succeed
    /// (retrying after rate-limit errors), completing the handshake first if the case left it
    /// undone.
    ///
    /// # Errors
    ///
    /// Which check failed and how: [`Kind::FollowUp`] when the server died or stopped
    /// answering, [`Kind::FollowUpShape`] when it answered with the wrong shape.
    pub(crate) fn follow_up(&mut self) -> Result<(), (Kind, String)> {
        let until = Instant::now()
            .checked_add(self.followup_budget)
            .unwrap_or(self.deadline);
        self.retrying("ping", until, |result| result.is_some_and(Value::is_object))?;
        let lost = |why: String| (Kind::FollowUp, why);
        if !self.ready {
            let id = self.request("initialize", Some(initialize_params(PROTOCOL_VERSION)));
            // A server that took the case's own initialize refuses this one: fine either way.
            self.await_reply(&id, until)
                .map_err(|why| lost(format!("follow-up initialize: {why}")))?;
            self.notify("notifications/initialized");
            self.ready = true;
        }
        self.retrying("tools/list", until, |result| {
            result
                .and_then(|result| result.get("tools"))
                .is_some_and(Value::is_array)
        })
    }

    /// Sends `method` until a result passes `ok`, backing off after errors, before `until`.
    fn retrying(
        &mut self,
        method: &str,
        until: Instant,
        ok: impl Fn(Option<&Value>) -> bool,
    ) -> Result<(), (Kind, String)> {
        let mut ids: Vec<Id> = Vec::new();
        let mut last = String::from("no reply");
        loop {
            if Instant::now() >= until || signals::interrupted() {
                return Err((
                    Kind::FollowUp,
                    format!("follow-up {method}: {last} within the time limit"),
                ));
            }
            ids.push(self.request(method, None));
            let attempt = Instant::now()
                .checked_add(ATTEMPT_TIMEOUT)
                .map_or(until, |end| end.min(until));
            let mut backoff = None;
            while backoff.is_none() {
                match self.next(attempt) {
                    Next::Reply(Reply::Single(response), ..) if ids.contains(&response.id) => {
                        match response.outcome {
                            Outcome::Result { value, .. } if ok(value.as_ref()) => return Ok(()),
                            Outcome::Result { .. } => {
                                return Err((
                                    Kind::FollowUpShape,
                                    format!(
                                        "follow-up {method}: a result without the expected shape"
                                    ),
                                ));
                            }
                            Outcome::Error {
                                code,
                                retry_after_ms,
                            } => {
                                last = format!("only error {code}");
                                let wait = retry_after_ms.map_or(DEFAULT_BACKOFF, |ms| {
                                    Duration::from_millis(ms).min(MAX_BACKOFF)
                                });
                                backoff = Some(wait);
                            }
                        }
                    }
                    Next::Reply(other, ..) => self.unexpected(&other),
                    Next::Timeout => break,
                    Next::Closed => {
                        return Err((
                            Kind::FollowUp,
                            format!("follow-up {method}: {}", self.gone()),
                        ));
                    }
                }
            }
            if let Some(wait) = backoff {
                let resume = Instant::now().checked_add(wait).unwrap_or(until).min(until);
                while Instant::now() < resume {
                    self.pump(POLL);
                }
            }
        }
    }

    /// Closes stdin, then gives the server [`EXIT_GRACE`] to exit; any reply on the way is
    /// unexpected. Returns how it exited, if it did.
    pub(crate) fn close(&mut self) -> Option<Exit> {
        if !self.input_closed {
            self.send(Op::Close);
        }
        let until = Instant::now()
            .checked_add(EXIT_GRACE)
            .unwrap_or(self.deadline);
        self.drain_until_exit(until)
    }

    /// Reads stdout until the server exits and closes it, or `until`; replies are unexpected.
    pub(crate) fn drain_until_exit(&mut self, until: Instant) -> Option<Exit> {
        loop {
            match self.next(until) {
                Next::Reply(reply, ..) => self.unexpected(&reply),
                Next::Closed => break,
                Next::Timeout => return self.target.exit(),
            }
        }
        // stdout closed: the exit follows at once (or a descendant kept the pipe, then not).
        while Instant::now() < until {
            if let Some(exit) = self.target.exit() {
                return Some(exit);
            }
            std::thread::sleep(POLL);
        }
        self.target.exit()
    }
}

/// A case's general findings: repeats counted, not repeated, and at most
/// [`MAX_DISTINCT_FINDINGS`] different texts (then one shared text per kind), so a server
/// cannot grow the report without bound.
#[derive(Debug, Default)]
pub(crate) struct Findings(Vec<Finding>);

impl Findings {
    /// Records a finding (repeats are counted, not repeated; past
    /// [`MAX_DISTINCT_FINDINGS`] different texts, further ones of a kind share one text).
    pub(crate) fn find(&mut self, kind: Kind, text: impl Into<String>) {
        self.find_with(kind, text, None);
    }

    /// [`Findings::find`], with what the server wrote (kept the first time only).
    pub(crate) fn find_with(
        &mut self,
        kind: Kind,
        text: impl Into<String>,
        evidence: Option<&Evidence>,
    ) {
        let mut text = text.into();
        if self.0.len() >= MAX_DISTINCT_FINDINGS
            && !self
                .0
                .iter()
                .any(|known| known.text == text && known.kind == kind)
        {
            text = OTHER_FINDINGS.to_owned();
        }
        if let Some(known) = self
            .0
            .iter_mut()
            .find(|known| known.text == text && known.kind == kind)
        {
            known.count = known.count.saturating_add(1);
            return;
        }
        self.0.push(Finding {
            kind,
            text,
            count: 1,
            evidence: evidence.cloned(),
        });
    }

    /// Records a reply nobody was waiting for.
    pub(crate) fn unexpected(&mut self, reply: &Reply) {
        let text = match reply {
            Reply::Batch(_) => "an array of replies on one line, to no batch".to_owned(),
            Reply::Single(response) => format!(
                "a reply to nothing the audit was waiting for ({})",
                response.kind()
            ),
        };
        self.find(Kind::UnaskedReply, text);
    }

    /// The findings, in the order first seen.
    pub(crate) fn as_slice(&self) -> &[Finding] {
        &self.0
    }
}

/// What one stdout line is to a session once its general checks are recorded.
#[derive(Debug)]
pub(crate) enum Screened {
    /// A reply (a response or an array of them).
    Reply(Reply),
    /// A request from the server, which the session answers "method not found" (or keeps
    /// for an `asking` case).
    Request(Asked),
    /// Nothing to act on (a notification, or a bad line, now a finding).
    Other,
}

/// The general checks of one stdout line (a stack trace, a blank, invalid or too long line),
/// recorded in `findings`.
pub(crate) fn screen(
    findings: &mut Findings,
    line: Line,
    leak: bool,
    evidence: &Evidence,
) -> Screened {
    if leak {
        findings.find_with(
            Kind::StackTrace,
            "panic text or a stack trace on stdout",
            Some(evidence),
        );
    }
    match line {
        Line::Response(response) => Screened::Reply(Reply::Single(response)),
        Line::Batch(responses) => Screened::Reply(Reply::Batch(responses)),
        Line::Notification => Screened::Other,
        Line::Request(asked) => Screened::Request(asked),
        Line::Blank => {
            findings.find_with(
                Kind::BlankLine,
                "blank line on stdout (not a JSON-RPC message)",
                Some(evidence),
            );
            Screened::Other
        }
        Line::Invalid(reason) => {
            findings.find_with(
                Kind::InvalidLine,
                format!("stdout line that is not one JSON-RPC message: {reason}"),
                Some(evidence),
            );
            Screened::Other
        }
        Line::TooLong => {
            findings.find_with(
                Kind::LongLine,
                "stdout line longer than 16 MiB",
                Some(evidence),
            );
            Screened::Other
        }
    }
}

/// `initialize` params asking for `version`.
pub(crate) fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "airlock-audit", "version": env!("CARGO_PKG_VERSION")}
    })
}

/// The protocol revision the audit asks for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";

/// Ids of bookkeeping requests remembered in one case (a ping flood sends many; past this
/// their answers count as evidence, which is only a report's first bytes).
const MAX_BOOKKEEPING_IDS: usize = 4096;

/// Requests of the server's an `asking` case keeps unanswered at once; past this they are
/// answered "method not found".
const MAX_KEPT_QUESTIONS: usize = 64;

/// How long to keep listening after the marker ping's reply for a reply the input is owed
/// (a server that answers requests concurrently may answer the ping first).
const GRACE: Duration = Duration::from_secs(1);

/// How long one follow-up attempt waits before sending again (a server that lost its place
/// in the stream gets another chance).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// Backoff after an error without `retryAfterMs`.
const DEFAULT_BACKOFF: Duration = Duration::from_millis(100);

/// Longest backoff honoured from `retryAfterMs`.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Replies to one input kept for judging; one input owes at most one reply (a batch answered
/// message by message, a few more).
pub(crate) const MAX_KEPT_REPLIES: usize = 1000;

/// Different finding texts one case keeps (a server choosing its error codes cannot grow the
/// report without bound).
pub(crate) const MAX_DISTINCT_FINDINGS: usize = 64;

/// The text of findings past [`MAX_DISTINCT_FINDINGS`].
pub(crate) const OTHER_FINDINGS: &str =
    "more findings of this kind (different texts, counted together)";

/// How long a server may take to exit after its input ends, at the end of an ordinary case.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Longest single wait on stdout, so interrupts and deadlines are seen promptly.
const POLL: Duration = Duration::from_millis(25);

#[cfg(test)]
mod tests {
    use super::*;

    use std::ffi::OsString;

    fn error(id: u64) -> Reply {
        Reply::Single(Response {
            id: Id::Number(id.to_string()),
            outcome: Outcome::Error {
                code: -32_601,
                retry_after_ms: None,
            },
        })
    }

    #[test]
    fn unasked_replies_that_differ_only_in_id_are_one_finding_counted() {
        let target = Target::spawn(&OsString::from("cat"), &[], 64 * 1024).unwrap();
        let probe = Probe::none();
        let deadline = Instant::now().checked_add(Duration::from_secs(5)).unwrap();
        let mut session = Session::new(target, &probe, deadline, Duration::from_secs(1));
        for id in 1..=3 {
            session.unexpected(&error(id));
        }
        session.unexpected(&Reply::Single(Response {
            id: Id::Number("4".to_owned()),
            outcome: Outcome::Result {
                is_error: false,
                value: None,
            },
        }));
        let findings = session.findings().to_vec();
        assert_eq!(
            findings,
            vec![
                Finding {
                    kind: Kind::UnaskedReply,
                    text: "a reply to nothing the audit was waiting for (error -32601)".to_owned(),
                    count: 3,
                    evidence: None,
                },
                Finding {
                    kind: Kind::UnaskedReply,
                    text: "a reply to nothing the audit was waiting for (result)".to_owned(),
                    count: 1,
                    evidence: None,
                },
            ]
        );
        drop(session.target_mut().finish());
    }

    #[test]
    fn replies_with_ever_new_error_codes_stop_growing_the_findings() {
        let target = Target::spawn(&OsString::from("cat"), &[], 64 * 1024).unwrap();
        let probe = Probe::none();
        let deadline = Instant::now().checked_add(Duration::from_secs(5)).unwrap();
        let mut session = Session::new(target, &probe, deadline, Duration::from_secs(1));
        for code in 0..1000 {
            session.unexpected(&Reply::Single(Response {
                id: Id::Number("1".to_owned()),
                outcome: Outcome::Error {
                    code,
                    retry_after_ms: None,
                },
            }));
        }
        let findings = session.findings().to_vec();
        assert_eq!(findings.len(), MAX_DISTINCT_FINDINGS + 1);
        let last = findings.last().unwrap();
        assert_eq!(last.text, OTHER_FINDINGS);
        assert_eq!(last.count, 1000 - 64);
        drop(session.target_mut().finish());
    }
}
