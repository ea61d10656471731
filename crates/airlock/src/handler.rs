//! What a tool handler is and what it may tell its session while it runs.
//!
//! A [`Handler`] turns checked arguments into a future of a [`ToolOutput`]; the
//! [`CallContext`] it is given reports progress as [`Event`]s, and the call's end comes back
//! to the engine as a [`Completion`] named by its [`Ticket`]. This module holds the types
//! shared by the tool registry (`tools`), the runner of one call (`call`), the engine and the
//! transports, so that none of them depends on another for them. It trusts nothing it is
//! given: progress reports are filtered by the engine, never here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::asking::{
    Answer, AskError, ClientCan, Elicitation, Elicited, Question, Root, Sampled, Sampling,
};
use crate::error::Capability;
use crate::id::IdKey;
pub use crate::log_level::LogLevel;
use crate::output::ToolOutput;
use crate::rounds::{Round, RoundEnd, Step};

/// A boxed, sendable future: what a [`Handler`] returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Runs one tool.
///
/// Called once per admitted `tools/call`, on a tokio task, with arguments that passed the
/// bounds and the tool's input schema. Dropping the returned future cancels the call (timeout,
/// `notifications/cancelled`, shutdown); handlers that hold resources release them on drop.
pub trait Handler: Send + Sync + 'static {
    /// Runs the tool on `arguments`; `context` reports progress.
    fn call(&self, arguments: Map<String, Value>, context: CallContext) -> BoxFuture<ToolOutput>;
}

/// What a running call tells its session: progress and log messages, questions for the
/// client, then exactly one completion.
///
/// Opaque: a transport passes each event from the channel it gave
/// [`CallContext::reporting`] to [`Engine::report`](crate::engine::Engine::report), which
/// writes what the event asks for and hands back the call's [`Completion`] when it ended.
#[derive(Debug)]
pub struct Event(pub(crate) Report);

/// What an [`Event`] holds.
#[derive(Debug)]
pub(crate) enum Report {
    /// A progress report (best effort: dropped when the session is busy).
    Progress(Progress),
    /// A log message for the client (best effort, as progress).
    Log(LogMessage),
    /// A question for the client (elicitation, sampling), for
    /// [`Engine::ask`](crate::engine::Engine::ask).
    Ask(Ask),
    /// The call ended.
    Done(Completion),
}

/// A call's end as an event, so a transport may send completions down the same channel as
/// the call's reports ([`serve`](crate::transport::serve) does): [`Engine::report`] then
/// hands the completion back after every report the call made before it.
///
/// [`Engine::report`]: crate::engine::Engine::report
impl From<Completion> for Event {
    fn from(completion: Completion) -> Self {
        Self(Report::Done(completion))
    }
}

/// One progress report of a call.
#[derive(Debug)]
pub(crate) struct Progress {
    /// Which call.
    pub(crate) ticket: Ticket,
    /// How far, in the handler's units; must increase from one report to the next.
    pub(crate) progress: f64,
    /// The end value, if known.
    pub(crate) total: Option<f64>,
    /// A short human-readable note.
    pub(crate) message: Option<String>,
}

/// One log message of a call, for the client (`notifications/message`).
#[derive(Debug)]
pub(crate) struct LogMessage {
    /// Which call.
    pub(crate) ticket: Ticket,
    /// How severe.
    pub(crate) level: LogLevel,
    /// The text, as the handler gave it (the engine bounds it).
    pub(crate) text: String,
}

/// A question of a running call for the client, and where its answer goes.
#[derive(Debug)]
pub(crate) struct Ask {
    pub(crate) ticket: Ticket,
    pub(crate) question: Question,
    pub(crate) answer: oneshot::Sender<Result<Answer, AskError>>,
}

/// What a handler gets besides its arguments: a way to report progress and to log to the
/// client.
///
/// Progress reaches the client only if it asked for it (a `progressToken`), only while the
/// call is in flight, only when `progress` increases, and no more often than the engine's
/// progress interval. Log messages reach it only if it set a level the message's meets
/// (`logging/setLevel` in sessions of 2025-11-25 and earlier; the request's `_meta.logLevel`
/// in 2026-07-28, where they go on that request's own response stream), at most
/// [`MAX_LOG_MESSAGES_PER_CALL`](crate::limits::MAX_LOG_MESSAGES_PER_CALL) per call, each cut
/// to [`MAX_LOG_MESSAGE_BYTES`](crate::limits::MAX_LOG_MESSAGE_BYTES). Anything else is
/// dropped. Reporting never blocks the handler. What a handler logs is sent as it is: a
/// message carries an argument's value only if the handler puts it there.
#[derive(Clone, Debug)]
pub struct CallContext {
    reporter: Option<Reporter>,
    /// A 2026-07-28 call's round: where its questions find their answers.
    round: Option<Arc<Round>>,
    /// A task's run: where its output so far goes, for `tasks/get`.
    so_far: Option<Arc<crate::so_far::OutputSoFar>>,
    /// The run's own span, when the call is traced.
    trace: Option<crate::trace_context::TraceParent>,
}

#[derive(Clone, Debug)]
struct Reporter {
    ticket: Ticket,
    events: mpsc::Sender<Event>,
    progress: bool,
    logs: bool,
    /// What the session's client declared it can answer (legacy sessions).
    can: ClientCan,
}

impl CallContext {
    /// A context that reports nothing (a call made outside a session).
    pub fn detached() -> Self {
        Self {
            reporter: None,
            round: None,
            so_far: None,
            trace: None,
        }
    }

    /// The same context, keeping its output so far in `so_far` (a task's run).
    pub(crate) fn keeping(mut self, so_far: Arc<crate::so_far::OutputSoFar>) -> Self {
        self.so_far = Some(so_far);
        self
    }

    /// Where a task's run keeps its output so far, shown by `tasks/get` while it runs (the
    /// last bytes, as many as the task may keep of a result); `None` for an ordinary call.
    /// A handler that produces output as it goes pushes it here.
    pub fn output_so_far(&self) -> Option<&Arc<crate::so_far::OutputSoFar>> {
        self.so_far.as_ref()
    }

    /// The same context, asking through `round` (a 2026-07-28 call's).
    pub(crate) fn in_round(mut self, round: Option<Arc<Round>>) -> Self {
        self.round = round;
        self
    }

    /// The same context, in the trace `trace` names (a traced call).
    pub(crate) fn traced(mut self, trace: Option<crate::trace_context::TraceParent>) -> Self {
        self.trace = trace;
        self
    }

    /// The trace context of this run, when the server traces it (the `otel` feature, a
    /// sampled request): its `traceparent` names the run's own span, a child of the
    /// request's. A handler that starts a program passes it on as `TRACEPARENT` (and
    /// `TRACESTATE`), as the W3C environment-variable carrier says; `None` otherwise.
    pub fn trace_parent(&self) -> Option<&crate::trace_context::TraceParent> {
        self.trace.as_ref()
    }

    /// A context reporting to `events` for the call of `ticket`: progress if `progress`, log
    /// messages if `logs`, questions of what `can` says the client answers
    /// ([`CallContext::reporting`] is how a transport makes one).
    pub(crate) fn reporter(
        ticket: Ticket,
        events: mpsc::Sender<Event>,
        (progress, logs): (bool, bool),
        can: ClientCan,
    ) -> Self {
        Self {
            reporter: Some(Reporter {
                ticket,
                events,
                progress,
                logs,
                can,
            }),
            round: None,
            so_far: None,
            trace: None,
        }
    }

    /// Whether the client asked for progress.
    pub fn wants_progress(&self) -> bool {
        self.reporter
            .as_ref()
            .is_some_and(|reporter| reporter.progress)
    }

    /// Whether log messages may reach the client (it set a level).
    pub fn wants_logs(&self) -> bool {
        self.reporter.as_ref().is_some_and(|reporter| reporter.logs)
    }

    /// Reports progress; a no-op when nobody asked for it.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(reporter) = self.reporter.as_ref().filter(|reporter| reporter.progress) else {
            return;
        };
        let report = Progress {
            ticket: reporter.ticket.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
        };
        let event = Event(Report::Progress(report));
        if reporter.events.try_send(event).is_err() {
            tracing::trace!("progress report dropped: the session is busy or gone");
        }
    }

    /// Logs `text` at `level` to the client; a no-op when it set no level (see the type's
    /// documentation for what is dropped).
    ///
    /// ```
    /// use airlock::{CallContext, LogLevel};
    ///
    /// CallContext::detached().log(LogLevel::Info, "started"); // nobody listens: dropped
    /// ```
    pub fn log(&self, level: LogLevel, text: impl Into<String>) {
        let Some(reporter) = self.reporter.as_ref().filter(|reporter| reporter.logs) else {
            return;
        };
        // Cut here too, so a message waiting in the session's channel holds no more than
        // what will be sent.
        let mut text: String = text.into();
        if text.len() > crate::limits::MAX_LOG_MESSAGE_BYTES {
            let mut end = crate::limits::MAX_LOG_MESSAGE_BYTES;
            while !text.is_char_boundary(end) {
                end = end.saturating_sub(1);
            }
            text.truncate(end);
        }
        let message = LogMessage {
            ticket: reporter.ticket.clone(),
            level,
            text,
        };
        let event = Event(Report::Log(message));
        if reporter.events.try_send(event).is_err() {
            tracing::trace!("log message dropped: the session is busy or gone");
        }
    }
}

impl CallContext {
    /// Asks the user to fill in `form` (`elicitation/create`, sessions of 2025-06-18 to
    /// 2025-11-25 whose client declared `elicitation`), and waits at most
    /// `ANSWER_TIMEOUT` (120 s) for the answer.
    ///
    /// The answer is the client's, so it is checked before it gets here: every field is one
    /// of the form's, of its kind and within its bounds, every required one is there.
    /// Whatever the user typed is still the user's text: treat it as a tool argument.
    ///
    /// # Errors
    ///
    /// [`AskError`], with a fixed text a tool may hand to the agent as it is.
    ///
    /// ```
    /// use airlock::{AskError, CallContext, Elicitation};
    /// use airlock::serde_json::json;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let form = Elicitation::new("Proceed?", json!({"type": "object"}))?;
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let answer = runtime.block_on(CallContext::detached().elicit(form));
    /// assert_eq!(answer, Err(AskError::Unsupported)); // no session, nobody to ask
    /// # Ok(())
    /// # }
    /// ```
    pub async fn elicit(&self, form: Elicitation) -> Result<Elicited, AskError> {
        match self.ask(Question::Elicit(form)).await? {
            Answer::Elicited(elicited) => Ok(elicited),
            Answer::Sampled(_) | Answer::Roots(_) => Err(AskError::Malformed),
        }
    }

    /// Asks the client for its roots (`roots/list`, clients that declared `roots`): where it
    /// says its user works. The client's claim, checked for shape and size; it grants nothing.
    ///
    /// # Errors
    ///
    /// [`AskError`].
    ///
    /// ```
    /// use airlock::{AskError, CallContext, Capability};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// async fn workspace(context: &CallContext) -> String {
    ///     if !context.client_declares(Capability::Roots) {
    ///         return "the client names no roots".to_owned();
    ///     }
    ///     match context.list_roots().await {
    ///         Ok(roots) => roots.iter().map(|root| root.uri.as_str()).collect::<Vec<_>>().join(" "),
    ///         Err(error) => error.to_string(), // a fixed text
    ///     }
    /// }
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let context = CallContext::detached();
    /// assert_eq!(runtime.block_on(workspace(&context)), "the client names no roots");
    /// assert_eq!(runtime.block_on(context.list_roots()), Err(AskError::Unsupported));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_roots(&self) -> Result<Vec<Root>, AskError> {
        match self.ask(Question::Roots).await? {
            Answer::Roots(roots) => Ok(roots),
            Answer::Elicited(_) | Answer::Sampled(_) => Err(AskError::Malformed),
        }
    }

    /// Whether the client declared `capability`: in `initialize` (sessions of 2025-11-25 and
    /// earlier, whose calls can carry a request to it), or in this request's
    /// `_meta.clientCapabilities` (2026-07-28). A tool that can do without an answer asks
    /// this first: in a 2026-07-28 call, a question the client did not declare ends the call
    /// with `-32021`, as that revision asks.
    ///
    /// ```
    /// use airlock::{CallContext, Capability};
    ///
    /// // A context of no session: no client, so nothing declared.
    /// assert!(!CallContext::detached().client_declares(Capability::Elicitation));
    /// assert_eq!(Capability::Sampling.name(), "sampling");
    /// ```
    pub fn client_declares(&self, capability: Capability) -> bool {
        match (&self.round, &self.reporter) {
            (Some(round), _) => round.declares(capability),
            (None, Some(reporter)) => reporter.can.declares(capability),
            (None, None) => false,
        }
    }

    /// How many rounds of input this call took before this one: in a 2026-07-28 call retried
    /// with a `requestState` this server issued (and verified), its round number; else 0.
    /// The handler runs again from its start on every round, so what it does before its
    /// first question (a log line, a count) can look at this to happen once.
    ///
    /// ```
    /// use airlock::CallContext;
    ///
    /// assert_eq!(CallContext::detached().input_round(), 0);
    /// ```
    pub fn input_round(&self) -> u64 {
        self.round.as_ref().map_or(0, |round| round.number())
    }

    /// Asks the client's model for a reply (`sampling/createMessage`, sessions whose client
    /// declared `sampling`), and waits at most
    /// `ANSWER_TIMEOUT` (120 s) for it. The reply is text only.
    ///
    /// # Errors
    ///
    /// [`AskError`]; [`AskError::TooLarge`] when a prompt is over
    /// [`MAX_SAMPLING_PROMPT_BYTES`](crate::limits::MAX_SAMPLING_PROMPT_BYTES).
    pub async fn sample(&self, request: Sampling) -> Result<Sampled, AskError> {
        let max = crate::limits::MAX_SAMPLING_PROMPT_BYTES;
        if request.prompt.len() > max
            || request
                .system_prompt
                .as_ref()
                .is_some_and(|text| text.len() > max)
        {
            return Err(AskError::TooLarge);
        }
        match self.ask(Question::Sample(request)).await? {
            Answer::Sampled(sampled) => Ok(sampled),
            Answer::Elicited(_) | Answer::Roots(_) => Err(AskError::Malformed),
        }
    }

    async fn ask(&self, question: Question) -> Result<Answer, AskError> {
        if let Some(round) = &self.round {
            // A question without an answer ends the round: the call stops here, and its
            // reply asks the client (see `rounds`).
            return match round.ask(&question, question.key()) {
                Step::Answered(answer) => answer,
                Step::Wait => std::future::pending().await,
            };
        }
        let Some(reporter) = self
            .reporter
            .as_ref()
            .filter(|reporter| reporter.can.declares(question.capability()))
        else {
            return Err(AskError::Unsupported);
        };
        let (answer, answered) = oneshot::channel();
        let ask = Ask {
            ticket: reporter.ticket.clone(),
            question,
            answer,
        };
        // Never waits for room: a session too busy to take a question says so.
        if reporter.events.try_send(Event(Report::Ask(ask))).is_err() {
            return Err(AskError::Busy);
        }
        match tokio::time::timeout(crate::limits::ANSWER_TIMEOUT, answered).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_dropped)) => Err(AskError::Gone),
            Err(_elapsed) => Err(AskError::TimedOut),
        }
    }
}

/// Names one admitted call: its request id and a serial number, so that a late completion of
/// a cancelled call is never taken for a newer request that reused the id.
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub struct Ticket {
    pub(crate) key: IdKey,
    pub(crate) serial: u64,
}

/// How a call ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The handler returned.
    Finished(ToolOutput),
    /// The deadline passed first; the handler's future was dropped.
    TimedOut(Duration),
    /// The handler panicked.
    Panicked,
    /// A 2026-07-28 call's round ended before the handler did: it asks the client for input
    /// (an `input_required` result), or the request is refused (an answer that does not fit,
    /// a capability the client did not declare).
    Round(RoundEnd),
}

/// A finished call, for [`Engine::complete`](crate::engine::Engine::complete), which writes
/// its reply.
#[derive(Debug)]
pub struct Completion {
    /// Which call.
    pub(crate) ticket: Ticket,
    /// How it ended.
    pub(crate) outcome: Outcome,
}

impl Completion {
    /// Which call ended.
    pub fn ticket(&self) -> &Ticket {
        &self.ticket
    }
}
