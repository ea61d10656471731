//! The sans-I/O protocol engine: one session's state, frames in, reply bytes and effects out.
//!
//! A transport feeds [`Engine::handle`] one frame at a time and gets reply lines appended to
//! its output buffer, plus at most one [`Effect`]: a call to start, a call to cancel, or an
//! order to cut the peer off. When a call finishes, the transport hands its [`Completion`] to
//! [`Engine::complete`], which writes the reply only if the call is still owed one. The engine
//! does no I/O and owns no tasks, so the whole protocol runs in memory in tests and fuzzing,
//! and stdio, HTTP or anything else drives the same code.
//!
//! Dispatch runs inside a panic guard: a bug that panics while handling one request answers
//! that request `-32603` and the session goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

use crate::asking::ClientCan;
use crate::asking::{Answer, AskError, Question};
use crate::call::Call;
use crate::call_log::{self, Client, Entry, RunNote};
use crate::dispatch::{self, Context, Dispatched};
use crate::envelope::{
    self, AnswerPart, Message, Notification, NotificationMethod, Rejection, ReplyTo, Request,
    RequestMethod, Response,
};
use crate::error::McpError;
use crate::handler::{
    Ask, Completion, Event, LogLevel, LogMessage, Outcome, Progress, Report, Ticket,
};
use crate::id::{IdKey, ProgressToken, RequestId};
use crate::json::Text;
use crate::lifecycle::Lifecycle;
use crate::limits::{
    MAX_LOG_MESSAGE_BYTES, MAX_LOG_MESSAGES_PER_CALL, MAX_OUTSTANDING_ASKS,
    MAX_PROGRESS_MESSAGE_BYTES, PROGRESS_MIN_INTERVAL,
};
use crate::output::ToolOutput;
use crate::response::{self, ProgressParams};
use crate::rounds::{Ending, RoundEnd};
use crate::tasks::{self, Audit, Final, Owner, TaskId, Waiting};
use crate::tools::ToolName;
use crate::version::ProtocolVersion;

/// A traced task run's trace context and span (`otel`); without the feature, nothing.
#[cfg(feature = "otel")]
type TracedRun = (crate::TraceParent, crate::otel::RunSpan);
#[cfg(not(feature = "otel"))]
type TracedRun = std::convert::Infallible;

pub(crate) use crate::state::Shared;
#[cfg(test)]
pub(crate) use crate::state::shared;
pub(crate) use crate::state::shared_logging;
#[cfg(test)]
pub(crate) use crate::state::shared_with_quotas;

/// What the transport must do after a frame.
#[derive(Debug)]
#[must_use = "an effect left undone breaks the protocol"]
#[non_exhaustive]
pub enum Effect {
    /// Nothing beyond writing the output.
    None,
    /// Run this call on a task and hand its completion back.
    Start(Call),
    /// Stop the call with this ticket; no reply is owed for it.
    Cancel(Ticket),
    /// The peer sent only invalid messages for too long: stop reading and end the session.
    CutOff,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("ticket", &self.ticket)
            .finish_non_exhaustive()
    }
}

/// One session's protocol state.
#[derive(Debug)]
pub struct Engine {
    shared: Arc<Shared>,
    lifecycle: Lifecycle,
    /// Calls in flight by id. An ordered map: ids are the peer's choice, and a tree has no
    /// hash to flood and costs no hashing per request (at most `max_in_flight` entries).
    in_flight: BTreeMap<IdKey, Pending>,
    /// The call started last, until the engine is next used: a call answered in the
    /// transport's first step of it (most in-process tools) is completed from here and never
    /// enters `in_flight`, which would allocate and free a tree node for it. Every other entry
    /// point puts it in `in_flight` first ([`Engine::settle`]), so nothing else ever sees
    /// the difference; [`Engine::in_flight`] counts it.
    staged: Option<(IdKey, Pending)>,
    next_serial: u64,
    consecutive_errors: u32,
    /// Whether the last frame handled counted as invalid (towards the cut-off), for
    /// transports that count per client across engines (HTTP).
    last_invalid: bool,
    /// The last refusal, for transports whose reply depends on it (HTTP).
    refused: Option<McpError>,
    /// The level `logging/setLevel` set: log messages of calls reach the client only at or
    /// above it, and none before it is set.
    log_level: Option<LogLevel>,
    /// The resource URIs `resources/subscribe` named (legacy sessions; at most
    /// `MAX_SUBSCRIPTIONS`, each a URI the server has). Ordered, like `in_flight`.
    subscriptions: BTreeSet<Box<str>>,
    /// What the client declared it can answer (legacy `initialize`).
    client_can: ClientCan,
    /// Questions sent to the client and not yet answered, by the id the server gave them
    /// (at most [`MAX_OUTSTANDING_ASKS`] whose call still waits).
    asks: BTreeMap<u64, Asked>,
    /// The last id given to a question.
    last_ask_id: u64,
    /// Who the peer is, for the audit record.
    client: Client,
    /// The session counted open, when it is one and metrics are kept.
    #[cfg(feature = "metrics")]
    session: Option<crate::metrics::SessionGuard>,
    /// The requests of the batch being read, when metrics are kept and the transport reads
    /// in batches ([`Engine::batch_received`]).
    #[cfg(feature = "metrics")]
    batch: Option<Box<crate::metrics::Batch>>,
    /// Whose tasks this session reads and creates, once it used tasks.
    owner: Option<Owner>,
    /// The spans this session finished and not yet exported, when traces are kept.
    #[cfg(feature = "otel")]
    spans: Option<Box<crate::otel::Local>>,
}

/// A question sent to the client, waiting for its answer.
#[derive(Debug)]
struct Asked {
    ticket: Ticket,
    question: Question,
    answer: tokio::sync::oneshot::Sender<Result<Answer, AskError>>,
}

/// `notifications/cancelled` params, for a question the server stopped waiting on.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: u64,
}

/// A call in flight: what its reply needs.
#[derive(Debug)]
struct Pending {
    serial: u64,
    id: RequestId,
    version: ProtocolVersion,
    /// Boxed: few calls ask for progress, and every call's entry is moved in and out of the
    /// map.
    progress: Option<Box<ProgressState>>,
    /// Log messages of the call sent so far.
    logs_sent: u32,
    /// The level a modern call asked its log messages at; legacy calls follow the
    /// session's.
    log_level: Option<LogLevel>,
    /// What the call's audit record needs; `None` when no call log is kept.
    audit: Option<Box<Audited>>,
    /// The call counted in flight; `None` when no metrics are kept.
    #[cfg(feature = "metrics")]
    running: Option<crate::metrics::InFlight>,
    /// A wait on a task (`tasks/result`, or a 2026-07-28 call held on its task): the method
    /// and when its request arrived, counted as an operation when it is answered; `None`
    /// for a call (`running` counts those) or when no metrics are kept.
    #[cfg(feature = "metrics")]
    waiting: Option<(RequestMethod, Instant)>,
    /// For a `tasks/result` waiting on its task: the task, which its reply names.
    task: Option<TaskId>,
    /// For a 2026-07-28 call waiting `TASK_INLINE_WAIT` on the task it runs as: the task,
    /// whose handle is the reply if it runs on (else its result, and it is forgotten).
    inline_task: Option<TaskId>,
    /// The request's span, when it is traced (boxed: only calls in flight hold one).
    #[cfg(feature = "otel")]
    span: Option<Box<crate::otel::SpanRecord>>,
}

/// A call in flight as its audit record will describe it.
#[derive(Debug)]
struct Audited {
    tool: crate::tools::ToolName,
    started: Instant,
    arguments_hmac: Option<String>,
}

/// `notifications/message` params.
#[derive(serde::Serialize)]
struct LogParams<'a> {
    level: LogLevel,
    data: &'a str,
}

/// Progress reporting of one call that asked for it.
#[derive(Debug)]
struct ProgressState {
    token: ProgressToken,
    last_value: Option<f64>,
    last_sent: Option<Instant>,
}

impl Engine {
    /// A fresh session of `shared`'s server, with a stdio peer.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self::for_client(shared, Client::Stdio)
    }

    /// A fresh session of `shared`'s server, whose calls' audit records name `client`.
    pub(crate) fn for_client(shared: Arc<Shared>, client: Client) -> Self {
        #[cfg(feature = "otel")]
        let spans = shared.traces.as_ref().map(|traces| {
            let transport = match client {
                Client::Stdio => crate::otel::Transport::Pipe,
                Client::Http { .. } => crate::otel::Transport::Tcp,
            };
            crate::otel::Local::new(traces, transport)
        });
        Self {
            shared,
            lifecycle: Lifecycle::default(),
            in_flight: BTreeMap::new(),
            staged: None,
            next_serial: 0,
            consecutive_errors: 0,
            last_invalid: false,
            refused: None,
            log_level: None,
            subscriptions: BTreeSet::new(),
            client_can: ClientCan::default(),
            asks: BTreeMap::new(),
            last_ask_id: 0,
            client,
            #[cfg(feature = "metrics")]
            session: None,
            #[cfg(feature = "metrics")]
            batch: None,
            owner: None,
            #[cfg(feature = "otel")]
            spans,
        }
    }

    /// A frame of a batch is about to be handled (a byte-stream transport reads all that is
    /// there, then writes the replies at once): with metrics, the batch's arrival is when its
    /// requests count as received. Without metrics, one branch.
    pub(crate) fn batch_received(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(spans) = &mut self.spans {
            spans.batch_received();
        }
        #[cfg(feature = "metrics")]
        if self.shared.metrics.is_some() {
            self.batch
                .get_or_insert_with(crate::metrics::Batch::new)
                .open();
        }
    }

    /// The batch's replies were written: the requests it answered are observed, with one
    /// clock read for all of them.
    pub(crate) fn batch_written(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(spans) = &mut self.spans {
            spans.batch_written();
        }
        #[cfg(feature = "metrics")]
        if let (Some(metrics), Some(batch)) = (&self.shared.metrics, &mut self.batch) {
            batch.written(metrics);
        }
    }

    /// This engine counted as an open legacy HTTP session while it lives (when metrics are
    /// kept); the transport's engines of one request each are not sessions.
    #[cfg(feature = "http")]
    pub(crate) fn counted_as_http_session(self) -> Self {
        #[cfg(feature = "metrics")]
        return self.counted_as_session(crate::metrics::Transport::Tcp);
        #[cfg(not(feature = "metrics"))]
        self
    }

    /// This engine counted as an open session on `transport` while it lives.
    #[cfg(feature = "metrics")]
    pub(crate) fn counted_as_session(mut self, transport: crate::metrics::Transport) -> Self {
        self.session = self
            .shared
            .metrics
            .as_ref()
            .map(|metrics| metrics.session_started(transport));
        self
    }

    /// Names the session this engine serves in its spans (`mcp.session.id`): an id the
    /// server made, never the peer's text.
    #[cfg(all(feature = "otel", feature = "http"))]
    pub(crate) fn traced_in_session(&mut self, session: &str) {
        if let Some(spans) = &mut self.spans {
            spans.in_session(Arc::from(session));
        }
    }

    /// Takes the W3C trace context of the transport's request (HTTP `traceparent` and
    /// `tracestate` headers) for the requests handled next: a request's parent when its
    /// `_meta` names none, else a link. Read strictly; a malformed one is none.
    #[cfg(all(feature = "otel", feature = "http"))]
    pub(crate) fn trace_headers(&mut self, traceparent: Option<&str>, tracestate: Option<&str>) {
        if let Some(spans) = &mut self.spans {
            spans.set_header(traceparent, tracestate);
        }
    }

    /// Ends a traced request's span, failed with `failure` if it did; `run` is what its
    /// call's run reported (for the command's span).
    #[cfg(feature = "otel")]
    fn end_span(
        &mut self,
        span: Option<Box<crate::otel::SpanRecord>>,
        failure: Option<crate::otel::Failure>,
        run: Option<&RunNote>,
    ) {
        if let (Some(spans), Some(mut span)) = (self.spans.as_deref_mut(), span) {
            if let Some(failure) = failure {
                span.failed(failure);
            }
            spans.finish(*span, run);
        }
    }

    /// The server this session belongs to.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Calls started and not yet completed or cancelled.
    pub fn in_flight(&self) -> usize {
        self.in_flight
            .len()
            .saturating_add(usize::from(self.staged.is_some()))
    }

    /// Puts the call started last into `in_flight`. Every entry point that looks at calls in
    /// flight does this first (`handle_message`, `progress`, `log`, `ask`, `abandon_all`,
    /// `start`), but [`Engine::complete`] of that very call, which takes it from `staged`;
    /// the others (`frame_too_long`, `resource_updated`, the handshake's) never look. Only
    /// `start` fills `staged`, and only from `handle_message`, after its duplicate-id check,
    /// so a staged key is never also in the map. A call whose first step reported progress,
    /// logs or a question is settled when its report is taken, before it completes.
    fn settle(&mut self) {
        if let Some((key, pending)) = self.staged.take() {
            self.in_flight.insert(key, pending);
        }
    }

    /// The error of the last refusal since the previous call, if any (written, or for a
    /// malformed notification only noted): a transport whose reply depends on it (HTTP) reads
    /// it here; byte-stream transports ignore it.
    #[cfg(feature = "http")]
    pub(crate) fn take_refusal(&mut self) -> Option<McpError> {
        self.refused.take()
    }

    /// Whether the last frame handled was one the cut-off counts: invalid, or refused for a
    /// reason that was the peer's fault (not a busy server). HTTP counts these per client.
    #[cfg(feature = "http")]
    pub(crate) fn last_was_invalid(&self) -> bool {
        self.last_invalid
    }

    /// The legacy revision this session negotiated with `initialize`, if it did.
    #[cfg(feature = "http")]
    pub(crate) fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.lifecycle.version()
    }

    /// A legacy session of `shared`'s server taken over from another replica, at the step of
    /// the handshake the shared store recorded for it: `version` negotiated,
    /// `notifications/initialized` received when `confirmed`, and `client_can` what the
    /// client declared in `initialize` it can answer.
    #[cfg(feature = "http")]
    pub(crate) fn resumed(
        shared: Arc<Shared>,
        client: Client,
        version: ProtocolVersion,
        confirmed: bool,
        client_can: ClientCan,
    ) -> Self {
        let mut engine = Self::for_client(shared, client);
        engine.lifecycle.initialized(version);
        if confirmed {
            engine.lifecycle.confirmed();
        }
        engine.client_can = client_can;
        engine
    }

    /// What the client declared in `initialize` it can answer, for a shared store.
    #[cfg(feature = "http")]
    pub(crate) fn client_can(&self) -> ClientCan {
        self.client_can
    }

    /// Records `notifications/initialized` received by another replica (a shared store says
    /// so); no effect unless `initialize` was answered and not yet confirmed.
    #[cfg(feature = "http")]
    pub(crate) fn confirm_handshake(&mut self) {
        self.lifecycle.confirmed();
    }

    /// The handshake so far, for a shared store: the negotiated revision and whether
    /// `notifications/initialized` confirmed it; `None` before `initialize` was answered.
    #[cfg(feature = "http")]
    pub(crate) fn handshake(&self) -> Option<(ProtocolVersion, bool)> {
        match self.lifecycle {
            Lifecycle::AwaitingInitialize => None,
            Lifecycle::AwaitingInitialized(version) => Some((version, false)),
            Lifecycle::Ready(version) => Some((version, true)),
        }
    }

    /// Handles one frame (a line without its ending), appending any reply to `out`.
    pub fn handle(&mut self, frame: &[u8], out: &mut Vec<u8>) -> Effect {
        let parsed = envelope::parse(frame, self.shared.limits.max_json_depth.get());
        self.handle_message(parsed, out)
    }

    /// Handles one message already read by [`envelope::parse`] (under this server's
    /// `max_json_depth`), exactly as [`Engine::handle`] handles the frame it came from: a
    /// transport that must look at a message before the engine (HTTP chooses the era and
    /// checks its headers against the body) reads each frame once. A rejection is answered
    /// as the envelope says, and remembered for [`Engine::take_refusal`] even when it is not
    /// answered (a malformed notification).
    pub(crate) fn handle_message(
        &mut self,
        parsed: Result<Message<'_>, Rejection>,
        out: &mut Vec<u8>,
    ) -> Effect {
        self.settle();
        self.last_invalid = false;
        let message = match parsed {
            Ok(message) => message,
            Err(Rejection { error, reply }) => {
                tracing::debug!(%error, "message refused at the envelope");
                match reply {
                    ReplyTo::Null => self.refuse(out, None, error),
                    ReplyTo::Id(id) => self.refuse(out, Some(&id), error),
                    ReplyTo::Silent => self.refused = Some(error),
                }
                return self.invalid();
            }
        };
        match message {
            Message::Response(response) => self.answer(&response),
            // Only a request answered with a result resets the count: valid notifications cost
            // a sender nothing and would otherwise keep a garbage stream alive forever.
            Message::Notification(notification) => self.notification(notification, out),
            Message::Request(request) => self.request(request, out),
        }
    }

    /// Answers a frame the framing layer refused as too long.
    pub fn frame_too_long(&mut self, out: &mut Vec<u8>) -> Effect {
        let error = McpError::FrameTooLong {
            limit: self.shared.limits.max_frame_bytes.get(),
        };
        tracing::debug!(%error, "frame refused");
        self.refuse(out, None, error);
        self.invalid()
    }

    /// Takes a finished call; writes its reply if one is still owed.
    pub fn complete(&mut self, completion: Completion, out: &mut Vec<u8>) {
        let Completion { ticket, outcome } = completion;
        let staged = self
            .staged
            .take_if(|(key, pending)| *key == ticket.key && pending.serial == ticket.serial);
        self.settle();
        let Some(pending) = staged
            .map(|(_, pending)| pending)
            .or_else(|| self.in_flight.remove(&ticket.key))
        else {
            // Cancelled (or never ours): nothing is ever sent for it.
            return;
        };
        if pending.serial != ticket.serial {
            // A newer request reused the id after this call was cancelled: that one is
            // still owed its reply, this one nothing.
            self.in_flight.insert(ticket.key, pending);
            return;
        }
        self.stop_asking(&ticket, Some(out));
        #[cfg(any(feature = "metrics", feature = "otel"))]
        let mut pending = pending;
        #[cfg(feature = "metrics")]
        if let (Some(metrics), Some((method, received))) = (&self.shared.metrics, pending.waiting) {
            // A wait on a task: its request is answered now, with what its task ended as.
            let error = match &outcome {
                Outcome::Finished(output) if output.is_error() => {
                    crate::metrics::ErrorType::ToolError
                }
                Outcome::Panicked | Outcome::Round(_) => {
                    crate::metrics::ErrorType::of(&McpError::ToolPanicked)
                }
                Outcome::Finished(_) | Outcome::TimedOut(_) => crate::metrics::ErrorType::None,
            };
            metrics.operation(method, error, received.elapsed());
        }
        if let Some(task) = pending.inline_task {
            // A 2026-07-28 call held on its task: its span ends with its reply.
            #[cfg(feature = "otel")]
            {
                let failure = match &outcome {
                    Outcome::Finished(output) if output.is_error() => {
                        Some(crate::otel::Failure::ToolError)
                    }
                    Outcome::Panicked | Outcome::Round(_) => {
                        Some(crate::otel::Failure::of(&McpError::ToolPanicked))
                    }
                    Outcome::Finished(_) | Outcome::TimedOut(_) => None,
                };
                let span = pending.span.take();
                self.end_span(span, failure, None);
            }
            self.answer_inline(&pending.id, task, outcome, out);
            return;
        }
        #[cfg(feature = "otel")]
        let span = pending.span.take();
        #[cfg(feature = "metrics")]
        let running = pending.running.take();
        #[cfg(feature = "metrics")]
        let (metrics, batch) = (&self.shared.metrics, &mut self.batch);
        #[cfg(feature = "metrics")]
        let finish = |outcome: call_log::Outcome, error: crate::metrics::ErrorType| {
            if let (Some(running), Some(metrics)) = (running, metrics) {
                running.finish(metrics, batch.as_deref_mut(), outcome, error);
            }
        };
        let (output, ended) = match outcome {
            Outcome::Finished(output) => {
                let ended = if output.is_error() && output.note.arguments_refused {
                    call_log::Outcome::InvalidArguments
                } else if output.is_error() {
                    call_log::Outcome::Error
                } else {
                    call_log::Outcome::Ok
                };
                (output, ended)
            }
            Outcome::TimedOut(limit) => {
                (crate::output::timed_out(limit), call_log::Outcome::Timeout)
            }
            Outcome::Panicked => {
                #[cfg(feature = "metrics")]
                finish(
                    call_log::Outcome::Panicked,
                    crate::metrics::ErrorType::of(&McpError::ToolPanicked),
                );
                #[cfg(feature = "otel")]
                self.end_span(
                    span,
                    Some(crate::otel::Failure::of(&McpError::ToolPanicked)),
                    None,
                );
                self.record(pending.audit.as_deref(), call_log::Outcome::Panicked, None);
                self.refuse(out, Some(&pending.id), McpError::ToolPanicked);
                return;
            }
            Outcome::Round(RoundEnd(Ending::InputRequired { requests, state })) => {
                #[cfg(feature = "metrics")]
                finish(
                    call_log::Outcome::InputRequired,
                    crate::metrics::ErrorType::None,
                );
                #[cfg(feature = "otel")]
                self.end_span(span, None, None);
                self.record(
                    pending.audit.as_deref(),
                    call_log::Outcome::InputRequired,
                    None,
                );
                response::write_input_required(
                    out,
                    &pending.id,
                    &requests,
                    &state,
                    &self.shared.info,
                );
                return;
            }
            Outcome::Round(RoundEnd(Ending::Refused(error))) => {
                #[cfg(feature = "metrics")]
                finish(
                    call_log::Outcome::Refused,
                    crate::metrics::ErrorType::of(&error),
                );
                #[cfg(feature = "otel")]
                self.end_span(span, Some(crate::otel::Failure::of(&error)), None);
                self.record(pending.audit.as_deref(), call_log::Outcome::Refused, None);
                tracing::debug!(%error, "call refused in its round of input");
                self.refuse(out, Some(&pending.id), error);
                return;
            }
        };
        #[cfg(feature = "metrics")]
        {
            finish(
                ended,
                if output.is_error() {
                    crate::metrics::ErrorType::ToolError
                } else {
                    crate::metrics::ErrorType::None
                },
            );
            if let (Some(metrics), Some(network)) = (&self.shared.metrics, &output.note.network) {
                let refused = network
                    .connections
                    .iter()
                    .filter(|connection| !connection.allowed)
                    .count();
                metrics.proxy_refused(u64::try_from(refused).unwrap_or(u64::MAX));
            }
            if let (Some(metrics), Some(denials)) = (&self.shared.metrics, &output.note.denials) {
                metrics.sandbox_denied(denials);
            }
        }
        #[cfg(feature = "otel")]
        self.end_span(
            span,
            output.is_error().then_some(crate::otel::Failure::ToolError),
            Some(&output.note),
        );
        self.record(pending.audit.as_deref(), ended, Some(&output));
        let task = pending.task.map(|task| task.to_string());
        response::write_call_result_of(
            out,
            &pending.id,
            &output,
            (pending.version, &self.shared.info),
            task.as_deref(),
        );
    }

    /// Writes the audit record of a call that was started, if a call log is kept.
    fn record(
        &self,
        audit: Option<&Audited>,
        outcome: call_log::Outcome,
        output: Option<&ToolOutput>,
    ) {
        let (Some(log), Some(audit)) = (&self.shared.call_log, audit) else {
            return;
        };
        log.write(&Entry {
            client: &self.client,
            tool: Some(audit.tool.as_str()),
            outcome,
            duration: audit.started.elapsed(),
            is_error: output.is_none_or(ToolOutput::is_error),
            output_bytes: output.map_or(0, ToolOutput::content_bytes),
            note: output.map_or_else(RunNote::default, |output| output.note.clone()),
            refusal: None,
            arguments_hmac: audit.arguments_hmac.as_deref(),
            task: None,
        });
    }

    /// Writes the audit record of a `tools/call` refused or answered before it ran.
    fn record_unstarted(&self, tool: Option<&str>, refusal: Option<&McpError>) {
        let Some(log) = &self.shared.call_log else {
            return;
        };
        let entry = match refusal {
            Some(error) => Entry::refused(&self.client, tool, error),
            None => Entry {
                client: &self.client,
                tool,
                outcome: call_log::Outcome::InvalidArguments,
                duration: std::time::Duration::ZERO,
                is_error: true,
                output_bytes: 0,
                note: RunNote::default(),
                refusal: None,
                arguments_hmac: None,
                task: None,
            },
        };
        log.write(&entry);
    }

    /// Takes a progress report of a running call; writes `notifications/progress` if the call
    /// is still in flight, asked for progress, the value increased, and the last report is at
    /// least `PROGRESS_MIN_INTERVAL` old (`now` is the transport's clock). Otherwise the
    /// report is dropped: progress is best effort and never follows the call's reply.
    pub(crate) fn progress(&mut self, report: Progress, now: Instant, out: &mut Vec<u8>) {
        self.settle();
        let Some(pending) = self.in_flight.get_mut(&report.ticket.key) else {
            return;
        };
        let Some(state) = pending
            .progress
            .as_mut()
            .filter(|_| pending.serial == report.ticket.serial)
        else {
            return;
        };
        let finite = report.progress.is_finite() && report.total.is_none_or(f64::is_finite);
        let increasing = state.last_value.is_none_or(|last| report.progress > last);
        let spaced = state
            .last_sent
            .is_none_or(|last| now.saturating_duration_since(last) >= PROGRESS_MIN_INTERVAL);
        if !(finite && increasing && spaced) {
            return;
        }
        let message = report
            .message
            .as_deref()
            .filter(|_| pending.version.has_tool_annotations())
            .map(|text| truncate(text, MAX_PROGRESS_MESSAGE_BYTES));
        response::write_notification(
            out,
            "notifications/progress",
            &ProgressParams {
                progress_token: state.token.as_value(),
                progress: report.progress,
                total: report.total,
                message,
            },
        );
        state.last_value = Some(report.progress);
        state.last_sent = Some(now);
    }

    /// Writes a call's log message as `notifications/message` if the call is still in flight,
    /// the session's level admits it, and the call has sent fewer than
    /// [`MAX_LOG_MESSAGES_PER_CALL`]; its text is cut to [`MAX_LOG_MESSAGE_BYTES`]. Otherwise
    /// it is dropped: logging is best effort and never follows the call's reply.
    pub(crate) fn log(&mut self, message: LogMessage, out: &mut Vec<u8>) {
        self.settle();
        let session_level = self.log_level;
        let Some(pending) = self
            .in_flight
            .get_mut(&message.ticket.key)
            .filter(|pending| pending.serial == message.ticket.serial)
        else {
            return;
        };
        let least = if pending.version.is_modern() {
            pending.log_level
        } else {
            session_level
        };
        if least.is_none_or(|least| message.level < least) {
            return;
        }
        if pending.logs_sent >= MAX_LOG_MESSAGES_PER_CALL {
            return;
        }
        pending.logs_sent = pending.logs_sent.saturating_add(1);
        response::write_notification(
            out,
            "notifications/message",
            &LogParams {
                level: message.level,
                data: truncate(&message.text, MAX_LOG_MESSAGE_BYTES),
            },
        );
    }

    /// Takes what a running call told its session, and writes what it asks for, all best
    /// effort and never after the call's reply (`now` is the transport's clock):
    ///
    /// - a progress report becomes `notifications/progress` if the call asked for progress,
    ///   the value increased, and the last report is at least `PROGRESS_MIN_INTERVAL` old;
    /// - a log message becomes `notifications/message` if the level in force admits it, at
    ///   most [`MAX_LOG_MESSAGES_PER_CALL`] per call, cut to [`MAX_LOG_MESSAGE_BYTES`];
    /// - a question ([`CallContext::elicit`], [`CallContext::sample`],
    ///   [`CallContext::list_roots`]) becomes a request to the client if its session is a
    ///   legacy one whose client declared the capability, and fewer than
    ///   [`MAX_OUTSTANDING_ASKS`] wait; otherwise the call is told why at once. The answer
    ///   comes back through [`Engine::handle`], as a response with the request's id;
    /// - the call's end is handed back, for the transport to finish its own bookkeeping
    ///   before [`Engine::complete`].
    ///
    /// [`CallContext::elicit`]: crate::CallContext::elicit
    /// [`CallContext::sample`]: crate::CallContext::sample
    /// [`CallContext::list_roots`]: crate::CallContext::list_roots
    pub fn report(&mut self, event: Event, now: Instant, out: &mut Vec<u8>) -> Option<Completion> {
        match event {
            Event(Report::Progress(report)) => self.progress(report, now, out),
            Event(Report::Log(message)) => self.log(message, out),
            Event(Report::Ask(ask)) => self.ask(ask, out),
            Event(Report::Done(completion)) => return Some(completion),
        }
        None
    }

    /// Takes a running call's question for the client ([`CallContext::elicit`],
    /// [`CallContext::sample`]): writes the request if the call is still in flight, its
    /// session is a legacy one whose client declared the capability the question needs, and
    /// fewer than [`MAX_OUTSTANDING_ASKS`] questions wait; otherwise the call is told why at
    /// once. The request's id is the server's own number; the answer comes back through
    /// [`Engine::handle`] as a response with that id.
    ///
    /// [`CallContext::elicit`]: crate::CallContext::elicit
    /// [`CallContext::sample`]: crate::CallContext::sample
    pub(crate) fn ask(&mut self, ask: Ask, out: &mut Vec<u8>) {
        self.settle();
        let Ask {
            ticket,
            question,
            answer,
        } = ask;
        let Some(pending) = self
            .in_flight
            .get(&ticket.key)
            .filter(|pending| pending.serial == ticket.serial)
        else {
            // The call ended: dropping `answer` tells it so, if it still listens.
            return;
        };
        let declared = match question {
            Question::Elicit(_) => self.client_can.elicit,
            Question::Sample(_) => self.client_can.sample,
            Question::Roots => self.client_can.roots,
        };
        if pending.version.is_modern() || !declared {
            tell(answer, Err(AskError::Unsupported));
            return;
        }
        // Questions whose call gave up waiting (timed out) no longer count; the client is
        // told it need not answer them.
        let given_up: Vec<u64> = self
            .asks
            .iter()
            .filter(|(_, asked)| asked.answer.is_closed())
            .map(|(id, _)| *id)
            .collect();
        for id in given_up {
            self.asks.remove(&id);
            write_cancelled(out, id);
        }
        if self.asks.len() >= MAX_OUTSTANDING_ASKS {
            tell(answer, Err(AskError::Busy));
            return;
        }
        self.last_ask_id = self.last_ask_id.wrapping_add(1).max(1);
        let id = self.last_ask_id;
        response::write_request(out, id, question.method(), &question.params());
        tracing::debug!(method = question.method(), "question sent to the client");
        self.asks.insert(
            id,
            Asked {
                ticket,
                question,
                answer,
            },
        );
    }

    /// Takes a response: the answer to a question the session waits on, checked against the
    /// question before the call sees it; anything else is dropped and counts as invalid.
    fn answer(&mut self, response: &Response<'_>) -> Effect {
        let asked = response
            .id
            .as_ref()
            .and_then(|id| match id.key() {
                IdKey::Integer(n) => u64::try_from(*n).ok(),
                IdKey::String(_) => None,
            })
            .and_then(|id| self.asks.remove(&id));
        let Some(asked) = asked else {
            tracing::debug!("unsolicited response dropped");
            return self.invalid();
        };
        let checked = match envelope::answer_parts(response.frame) {
            Some(AnswerPart::Result(raw)) => asked.question.check(raw.get()),
            Some(AnswerPart::Error) => Err(AskError::Refused),
            None => Err(AskError::Malformed),
        };
        let malformed = matches!(checked, Err(AskError::Malformed));
        if let Err(error) = &checked {
            tracing::debug!(%error, "the client's answer is not one the call gets");
        }
        tell(asked.answer, checked);
        if malformed {
            self.invalid()
        } else {
            Effect::None
        }
    }

    /// Forgets the questions of a call that ended; with `out`, tells the client it need not
    /// answer them (`notifications/cancelled` with each question's id).
    fn stop_asking(&mut self, ticket: &Ticket, out: Option<&mut Vec<u8>>) {
        if self.asks.is_empty() {
            return;
        }
        let ids: Vec<u64> = self
            .asks
            .iter()
            .filter(|(_, asked)| asked.ticket == *ticket)
            .map(|(id, _)| *id)
            .collect();
        let mut out = out;
        for id in ids {
            self.asks.remove(&id);
            if let Some(out) = out.as_deref_mut() {
                write_cancelled(out, id);
            }
        }
    }

    /// Takes an announcement that the resource at `uri` changed
    /// ([`ResourceUpdates::updated`](crate::ResourceUpdates::updated)); writes
    /// `notifications/resources/updated` if this session subscribed to exactly that URI.
    pub fn resource_updated(&mut self, uri: &str, out: &mut Vec<u8>) {
        if self.subscriptions.contains(uri) {
            write_updated(out, uri);
        }
    }

    /// Takes word that announcements were missed (the session fell behind): writes
    /// `notifications/resources/updated` for every subscription, as each may have changed.
    pub fn resources_maybe_updated(&mut self, out: &mut Vec<u8>) {
        for uri in &self.subscriptions {
            write_updated(out, uri);
        }
    }

    /// Takes word that the tool list changed (a reload): writes
    /// `notifications/tools/list_changed` if this is a legacy session past its handshake on a
    /// server that declared `tools.listChanged`. A 2026-07-28 client has no session to tell.
    pub(crate) fn tools_changed(&mut self, out: &mut Vec<u8>) {
        if self.shared.tools_may_change() && matches!(self.lifecycle, Lifecycle::Ready(_)) {
            response::write_notification(
                out,
                "notifications/tools/list_changed",
                &serde_json::Map::new(),
            );
        }
    }

    /// Forgets every call in flight (at shutdown); returns their tickets so the transport can
    /// stop them. No reply is sent for any of them.
    pub fn abandon_all(&mut self) -> Vec<Ticket> {
        self.settle();
        self.asks.clear();
        std::mem::take(&mut self.in_flight)
            .into_iter()
            .map(|(key, pending)| {
                self.record(pending.audit.as_deref(), call_log::Outcome::Cancelled, None);
                #[cfg(feature = "otel")]
                self.end_span(pending.span, Some(crate::otel::Failure::Cancelled), None);
                Ticket {
                    key,
                    serial: pending.serial,
                }
            })
            .collect()
    }

    fn request(&mut self, request: Request, out: &mut Vec<u8>) -> Effect {
        let Request {
            id,
            method,
            mut params,
        } = request;
        // When it was received, for the metrics: its batch's arrival, else now; no clock read
        // without metrics.
        #[cfg(feature = "metrics")]
        let received = self.shared.metrics.is_some().then(|| {
            self.batch
                .as_ref()
                .and_then(|batch| batch.received())
                .unwrap_or_else(Instant::now)
        });
        // The tool an audit record of this call names: only one the server has (an unknown
        // name is the peer's text).
        let called =
            (method == RequestMethod::ToolsCall && self.shared.call_log.is_some()).then(|| {
                params
                    .as_deref()
                    .and_then(|params| params.name.as_ref())
                    .and_then(Text::as_str)
                    .and_then(|name| self.shared.registry().get(name).cloned())
                    .map(|tool| tool.name.clone())
            });
        // Its span, when traces are kept and it is sampled: begun before dispatch, which may
        // take members of `_meta`.
        #[cfg(feature = "otel")]
        let mut span = self.spans.as_mut().and_then(|spans| {
            spans.begin(
                method,
                &id,
                params.as_deref().and_then(|params| params.meta.as_ref()),
            )
        });
        #[cfg(feature = "otel")]
        if let Some(span) = &mut span {
            self.describe_span(span, params.as_deref());
        }
        if self.in_flight.contains_key(id.key()) {
            #[cfg(feature = "otel")]
            self.span_names_target(span.as_deref_mut(), method, params.as_deref());
            #[cfg(feature = "otel")]
            self.end_span(
                span,
                Some(crate::otel::Failure::of(&McpError::DuplicateId)),
                None,
            );
            if let Some(tool) = &called {
                // A call refused before it ran leaves its record like any other refusal.
                self.record_unstarted(
                    tool.as_ref().map(ToolName::as_str),
                    Some(&McpError::DuplicateId),
                );
            }
            #[cfg(feature = "metrics")]
            self.observe_refused(method, params.as_deref(), received, &McpError::DuplicateId);
            self.refuse(out, Some(&id), McpError::DuplicateId);
            return self.invalid();
        }
        let mark = out.len();
        let cx = Context {
            shared: &self.shared,
            lifecycle: &mut self.lifecycle,
            log_level: &mut self.log_level,
            subscriptions: &mut self.subscriptions,
            client_can: &mut self.client_can,
            in_flight: self.in_flight.len(),
            owner: &mut self.owner,
            client: &self.client,
        };
        let dispatched = catch_unwind(AssertUnwindSafe(|| {
            dispatch::request(cx, &id, method, params.as_deref_mut(), out)
        }));
        let result = dispatched.unwrap_or_else(|payload| {
            drop(payload);
            out.truncate(mark);
            tracing::error!(
                method = method.as_str(),
                "dispatch panicked; answered -32603"
            );
            Err(McpError::Internal("dispatch panicked"))
        });
        match result {
            Ok(Dispatched::Answered) => {
                // A `tools/call` answered without running: its arguments failed the schema.
                if let Some(tool) = &called {
                    self.record_unstarted(tool.as_ref().map(ToolName::as_str), None);
                }
                #[cfg(feature = "metrics")]
                self.observe_answered(method, params.as_deref(), received);
                #[cfg(feature = "otel")]
                self.span_names_target(span.as_deref_mut(), method, params.as_deref());
                #[cfg(feature = "otel")]
                self.end_span(
                    span,
                    (method == RequestMethod::ToolsCall).then_some(crate::otel::Failure::ToolError),
                    None,
                );
                self.consecutive_errors = 0;
                Effect::None
            }
            Ok(Dispatched::Call(plan)) => {
                self.consecutive_errors = 0;
                #[cfg(feature = "metrics")]
                let running = self.shared.metrics.as_ref().map(|metrics| {
                    metrics.call_started(
                        plan.tool.series.get(),
                        received.unwrap_or_else(Instant::now),
                    )
                });
                self.start(
                    id,
                    plan,
                    #[cfg(feature = "metrics")]
                    running,
                    #[cfg(feature = "otel")]
                    span,
                )
            }
            Ok(Dispatched::Task(plan, start)) => {
                #[cfg(feature = "otel")]
                if let Some(span) = &mut span {
                    span.called(&plan.tool);
                }
                let tool = plan.tool.name.clone();
                // A traced task's run gets a span of its own under the request's.
                #[cfg(feature = "otel")]
                let traced = match (&mut span, &mut self.spans) {
                    (Some(span), Some(spans)) => Some(spans.task_run(span)),
                    _ => None,
                };
                #[cfg(not(feature = "otel"))]
                let traced = None;
                match self.start_task(&id, plan, start, traced, out) {
                    Ok(None) => {
                        // Answered with the task's handle; its run counts as its tool's call.
                        #[cfg(feature = "metrics")]
                        if let (Some(metrics), Some(received)) = (&self.shared.metrics, received) {
                            metrics.operation(
                                method,
                                crate::metrics::ErrorType::None,
                                received.elapsed(),
                            );
                        }
                        #[cfg(feature = "otel")]
                        self.end_span(span, None, None);
                        self.consecutive_errors = 0;
                        Effect::None
                    }
                    Ok(Some(waited)) => {
                        self.consecutive_errors = 0;
                        self.wait_inline(
                            id,
                            waited,
                            #[cfg(feature = "metrics")]
                            received,
                            #[cfg(feature = "otel")]
                            span,
                            out,
                        )
                    }
                    Err(error) => {
                        tracing::debug!(%error, "task refused");
                        #[cfg(feature = "metrics")]
                        self.observe_refused(method, params.as_deref(), received, &error);
                        #[cfg(feature = "otel")]
                        self.end_span(span, Some(crate::otel::Failure::of(&error)), None);
                        self.record_unstarted(Some(tool.as_str()), Some(&error));
                        self.refuse(out, Some(&id), error);
                        Effect::None
                    }
                }
            }
            Ok(Dispatched::Wait(wait)) => {
                self.consecutive_errors = 0;
                self.wait(
                    id,
                    wait,
                    #[cfg(feature = "metrics")]
                    received,
                    #[cfg(feature = "otel")]
                    span,
                )
            }
            Err(error) => {
                tracing::debug!(method = method.as_str(), %error, "request refused");
                #[cfg(feature = "otel")]
                self.span_names_target(span.as_deref_mut(), method, params.as_deref());
                #[cfg(feature = "otel")]
                self.end_span(span, Some(crate::otel::Failure::of(&error)), None);
                #[cfg(feature = "metrics")]
                self.observe_refused(method, params.as_deref(), received, &error);
                if let Some(tool) = &called {
                    self.record_unstarted(tool.as_ref().map(ToolName::as_str), Some(&error));
                }
                let garbage = counts_as_garbage(&error);
                self.refuse(out, Some(&id), error);
                if garbage {
                    self.invalid()
                } else {
                    Effect::None
                }
            }
        }
    }

    /// Counts a request answered with a result (for `tools/call`, one whose arguments failed
    /// the schema: an `isError` result, the call counted as `invalid_arguments`).
    #[cfg(feature = "metrics")]
    fn observe_answered(
        &mut self,
        method: RequestMethod,
        params: Option<&envelope::Params<'_>>,
        received: Option<Instant>,
    ) {
        let (Some(metrics), Some(received)) = (&self.shared.metrics, received) else {
            return;
        };
        let mut error = crate::metrics::ErrorType::None;
        if method == RequestMethod::ToolsCall {
            error = crate::metrics::ErrorType::ToolError;
            self.called_series(metrics, params, |series| {
                series.ended(crate::call_log::Outcome::InvalidArguments, None);
            });
        }
        let deferred = self
            .batch
            .as_mut()
            .is_some_and(|batch| batch.defer(method, error));
        if !deferred {
            metrics.operation(method, error, received.elapsed());
        }
    }

    /// Counts a request refused with `error`: its operation, the refusal's kind when it is
    /// one the metrics name, and for `tools/call` the call as `refused` under its tool (or
    /// `_OTHER`).
    #[cfg(feature = "metrics")]
    fn observe_refused(
        &self,
        method: RequestMethod,
        params: Option<&envelope::Params<'_>>,
        received: Option<Instant>,
        error: &McpError,
    ) {
        let (Some(metrics), Some(received)) = (&self.shared.metrics, received) else {
            return;
        };
        if let Some(kind) = crate::metrics::Refusal::of(error) {
            metrics.refused(kind);
        }
        if method == RequestMethod::ToolsCall {
            self.called_series(metrics, params, |series| {
                series.ended(crate::call_log::Outcome::Refused, None);
            });
        }
        metrics.operation(
            method,
            crate::metrics::ErrorType::of(error),
            received.elapsed(),
        );
    }

    /// Runs `count` on the series of the tool a `tools/call` named: its own if the server has
    /// it, else `_OTHER` (the name is the peer's text and never becomes a label). Looks the
    /// name up: only for calls that did not start.
    #[cfg(feature = "metrics")]
    fn called_series(
        &self,
        metrics: &crate::metrics::Metrics,
        params: Option<&envelope::Params<'_>>,
        count: impl FnOnce(&crate::metrics::ToolSeries),
    ) {
        let tool = params
            .and_then(|params| params.name.as_ref())
            .and_then(Text::as_str)
            .and_then(|name| self.shared.registry().get(name).cloned());
        match tool.as_ref().and_then(|tool| tool.series.get()) {
            Some(series) => count(series),
            None => count(metrics.other_tool()),
        }
    }

    /// The protocol revision a request's span says it is under: the one its `_meta` names,
    /// else the session's.
    #[cfg(feature = "otel")]
    fn describe_span(
        &self,
        span: &mut crate::otel::SpanRecord,
        params: Option<&envelope::Params<'_>>,
    ) {
        let meta = params.and_then(|params| params.meta.as_ref());
        let modern = crate::lifecycle::modern_version(meta).ok().flatten();
        span.under(modern.or(self.negotiated()));
    }

    /// Names in the span of a request answered or refused without starting anything what
    /// it named, if the server has it (an unknown name is the peer's text): the tool of a
    /// `tools/call`, the prompt of `prompts/get`; and the revision `initialize` negotiated. A
    /// call that starts names its tool from its plan, with no lookup.
    #[cfg(feature = "otel")]
    fn span_names_target(
        &self,
        span: Option<&mut crate::otel::SpanRecord>,
        method: RequestMethod,
        params: Option<&envelope::Params<'_>>,
    ) {
        let Some(span) = span else {
            return;
        };
        let name = params
            .and_then(|params| params.name.as_ref())
            .and_then(Text::as_str);
        match method {
            RequestMethod::ToolsCall => {
                if let Some(tool) = name.and_then(|name| self.shared.registry().get(name).cloned())
                {
                    span.called(&tool);
                }
            }
            RequestMethod::PromptsGet => {
                if let Some(prompt) = name.and_then(|name| self.shared.prompts.get(name)) {
                    span.prompted(prompt.name());
                }
            }
            RequestMethod::Initialize => span.under(self.negotiated()),
            _ => {}
        }
    }

    /// The revision the legacy handshake negotiated, if it did.
    #[cfg(feature = "otel")]
    fn negotiated(&self) -> Option<ProtocolVersion> {
        match self.lifecycle {
            Lifecycle::AwaitingInitialize => None,
            Lifecycle::AwaitingInitialized(version) | Lifecycle::Ready(version) => Some(version),
        }
    }

    fn start(
        &mut self,
        id: RequestId,
        plan: dispatch::Plan,
        #[cfg(feature = "metrics")] running: Option<crate::metrics::InFlight>,
        #[cfg(feature = "otel")] mut span: Option<Box<crate::otel::SpanRecord>>,
    ) -> Effect {
        let dispatch::Plan {
            tool,
            arguments,
            version,
            progress_token,
            round,
            log_level,
        } = plan;
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let key = id.key().clone();
        let timeout = tool.timeout.unwrap_or(self.shared.limits.tool_timeout);
        tracing::debug!(tool = tool.name.as_str(), "tool call started");
        let audit = self.shared.call_log.as_ref().map(|log| {
            Box::new(Audited {
                tool: tool.name.clone(),
                started: Instant::now(),
                arguments_hmac: log.hash(&arguments),
            })
        });
        // A traced call names its tool, and its run gets a span of its own, named to the
        // tool before it starts.
        #[cfg(feature = "otel")]
        let trace = match (&mut span, &mut self.spans) {
            (Some(span), Some(spans)) => {
                span.called(&tool);
                Some(spans.run_context(span))
            }
            _ => None,
        };
        #[cfg(not(feature = "otel"))]
        let trace = None;
        self.settle();
        self.staged = Some((
            key.clone(),
            Pending {
                serial,
                id,
                version,
                progress: progress_token.as_ref().map(|token| {
                    Box::new(ProgressState {
                        token: token.clone(),
                        last_value: None,
                        last_sent: None,
                    })
                }),
                logs_sent: 0,
                log_level,
                audit,
                #[cfg(feature = "metrics")]
                running,
                #[cfg(feature = "metrics")]
                waiting: None,
                task: None,
                inline_task: None,
                #[cfg(feature = "otel")]
                span,
            },
        ));
        Effect::Start(Call {
            ticket: Ticket { key, serial },
            tool,
            arguments,
            timeout,
            wants_progress: progress_token.is_some(),
            wants_logs: if version.is_modern() {
                log_level.is_some()
            } else {
                self.log_level.is_some()
            },
            client_can: if version.is_modern() {
                ClientCan::default()
            } else {
                self.client_can
            },
            round,
            waits: None,
            trace,
        })
    }

    /// Creates a task of `plan` (its bounds checked by the table), starts its run on the
    /// runtime this engine is driven on, and answers the handle in the era's shape; for a
    /// 2026-07-28 call that may still be answered plainly, answers nothing and gives the task
    /// and its tool to wait on ([`Engine::wait_inline`]).
    fn start_task(
        &mut self,
        id: &RequestId,
        plan: dispatch::Plan,
        start: dispatch::TaskStart,
        traced: Option<TracedRun>,
        out: &mut Vec<u8>,
    ) -> Result<Option<(TaskId, Arc<crate::tools::ToolDef>)>, McpError> {
        let dispatch::Plan {
            tool, arguments, ..
        } = plan;
        let ttl = match start {
            dispatch::TaskStart::Asked(ttl) => ttl,
            dispatch::TaskStart::Decided { .. } => None,
        };
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| McpError::Internal("tasks run on the tokio runtime"))?;
        let owner = match &self.owner {
            Some(owner) => owner.clone(),
            None => {
                let owner = Owner::of(&self.client)
                    .ok_or(McpError::Internal("the random source failed"))?;
                self.owner = Some(owner.clone());
                owner
            }
        };
        let audit = self.shared.call_log.as_ref().map(|log| Audit {
            log: Arc::clone(log),
            client: self.client.clone(),
            arguments_hmac: log.hash(&arguments),
        });
        let tasks = &self.shared.tasks;
        let (task, view, so_far) =
            tasks.create(&owner, &self.shared.limits, Arc::clone(&tool), ttl, audit)?;
        let waited = Arc::clone(&tool);
        let timeout = tasks
            .timeout(&owner, task)
            .unwrap_or(self.shared.limits.task_timeout);
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        tracing::debug!(tool = tool.name.as_str(), "task started");
        let call = Call {
            ticket: Ticket {
                key: id.key().clone(),
                serial,
            },
            tool,
            arguments,
            timeout,
            wants_progress: true,
            wants_logs: false,
            client_can: ClientCan::default(),
            round: None,
            waits: None,
            trace: None,
        };
        #[cfg(feature = "otel")]
        let (call, traced) = match traced {
            Some((context, run)) => (
                Call {
                    trace: Some(context),
                    ..call
                },
                Some(run),
            ),
            None => (call, None),
        };
        #[cfg(not(feature = "otel"))]
        let _untraced: Option<TracedRun> = traced;
        // The run counts as a call of its tool (in flight, then its outcome); the request
        // that created it is counted as answered by the caller.
        #[cfg(feature = "metrics")]
        let running = self
            .shared
            .metrics
            .as_ref()
            .map(|metrics| metrics.call_started(call.tool.series.get(), Instant::now()));
        let handle = runtime.spawn(tasks::run(
            call,
            Arc::downgrade(tasks),
            (owner.clone(), task),
            so_far,
            #[cfg(feature = "metrics")]
            running,
            #[cfg(feature = "otel")]
            traced,
        ));
        tasks.started(&owner, task, handle.abort_handle());
        match start {
            dispatch::TaskStart::Asked(_) => {
                response::write_result(out, id, &CreateTaskResult { task: view });
            }
            dispatch::TaskStart::Decided { inline: false } => {
                let view = tasks.get_modern(&owner, Some(task), true)?;
                response::write_result(
                    out,
                    id,
                    &response::TaskCreated {
                        body: view,
                        info: &self.shared.info,
                    },
                );
            }
            dispatch::TaskStart::Decided { inline: true } => return Ok(Some((task, waited))),
        }
        Ok(None)
    }

    /// Holds a 2026-07-28 call on the task it runs as, at most [`TASK_INLINE_WAIT`]: a call
    /// in flight (cancellable) as any, answered by [`Engine::answer_inline`]. Cancelled or
    /// dropped before that, it forgets the task (nobody was given its id), which stops its run.
    ///
    /// [`TASK_INLINE_WAIT`]: crate::limits::TASK_INLINE_WAIT
    fn wait_inline(
        &mut self,
        id: RequestId,
        (task, tool): (TaskId, Arc<crate::tools::ToolDef>),
        #[cfg(feature = "metrics")] received: Option<Instant>,
        #[cfg(feature = "otel")] span: Option<Box<crate::otel::SpanRecord>>,
        out: &mut Vec<u8>,
    ) -> Effect {
        use crate::limits::TASK_INLINE_WAIT;
        let Some(owner) = self.owner.clone() else {
            // `start_task` set it; never expected.
            self.refuse(
                out,
                Some(&id),
                McpError::Internal("a task without an owner"),
            );
            return Effect::None;
        };
        let table = &self.shared.tasks;
        let state = table.result(&owner, Some(task));
        let guard = tasks::ForgetUnlessAnswered::new(Arc::downgrade(table), owner, task);
        let waits = Box::pin(async move {
            let ended = match state {
                Ok(Waiting::Ended(ended)) => Some(ended),
                Ok(Waiting::Running { mut done, .. }) => {
                    match tokio::time::timeout(TASK_INLINE_WAIT, done.wait_for(Option::is_some))
                        .await
                    {
                        Ok(Ok(ended)) => ended.clone(),
                        Ok(Err(_)) | Err(_) => None,
                    }
                }
                Err(_) => None,
            };
            guard.disarm();
            match ended.as_deref() {
                Some(Final::Output(output)) => Outcome::Finished(output.clone()),
                Some(Final::Panicked) => Outcome::Panicked,
                // Still running: the reply is its handle.
                None => Outcome::TimedOut(TASK_INLINE_WAIT),
            }
        });
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let key = id.key().clone();
        self.settle();
        self.in_flight.insert(
            key.clone(),
            Pending {
                serial,
                id,
                version: ProtocolVersion::V2026_07_28,
                progress: None,
                logs_sent: 0,
                log_level: None,
                audit: None,
                #[cfg(feature = "metrics")]
                running: None,
                #[cfg(feature = "metrics")]
                waiting: received.map(|received| (RequestMethod::ToolsCall, received)),
                task: None,
                inline_task: Some(task),
                #[cfg(feature = "otel")]
                span,
            },
        );
        Effect::Start(Call {
            ticket: Ticket { key, serial },
            tool,
            arguments: serde_json::Map::new(),
            timeout: TASK_INLINE_WAIT.saturating_add(std::time::Duration::from_secs(5)),
            wants_progress: false,
            wants_logs: false,
            client_can: ClientCan::default(),
            round: None,
            waits: Some(waits),
            trace: None,
        })
    }

    /// The reply of a 2026-07-28 call held on its task: the result if the run ended within
    /// the wait (the task forgotten: nobody has its id), else the task's handle.
    fn answer_inline(&mut self, id: &RequestId, task: TaskId, outcome: Outcome, out: &mut Vec<u8>) {
        let Some(owner) = self.owner.clone() else {
            self.refuse(out, Some(id), McpError::UnknownTask);
            return;
        };
        let table = Arc::clone(&self.shared.tasks);
        match outcome {
            Outcome::Finished(output) => {
                table.forget(&owner, task);
                response::write_call_result(
                    out,
                    id,
                    &output,
                    ProtocolVersion::V2026_07_28,
                    &self.shared.info,
                );
            }
            Outcome::TimedOut(_) => match table.get_modern(&owner, Some(task), true) {
                Ok(view) => response::write_result(
                    out,
                    id,
                    &response::TaskCreated {
                        body: view,
                        info: &self.shared.info,
                    },
                ),
                Err(error) => self.refuse(out, Some(id), error),
            },
            Outcome::Panicked | Outcome::Round(_) => {
                table.forget(&owner, task);
                self.refuse(out, Some(id), McpError::ToolPanicked);
            }
        }
    }

    /// Starts a `tasks/result` that waits for its task's end: a call whose reply is the
    /// task's result, in flight (and cancellable) as any call is.
    fn wait(
        &mut self,
        id: RequestId,
        wait: dispatch::Wait,
        #[cfg(feature = "metrics")] received: Option<Instant>,
        #[cfg(feature = "otel")] span: Option<Box<crate::otel::SpanRecord>>,
    ) -> Effect {
        let dispatch::Wait {
            task,
            mut done,
            tool,
            timeout,
        } = wait;
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let key = id.key().clone();
        let waits = Box::pin(async move {
            // The sender goes with the table only at the server's end, which ends the task
            // first; a wait that saw no end is answered as a fault.
            let ended = match done.wait_for(Option::is_some).await {
                Ok(ended) => ended.clone(),
                Err(_) => None,
            };
            match ended.as_deref() {
                Some(Final::Output(output)) => Outcome::Finished(output.clone()),
                Some(Final::Panicked) | None => Outcome::Panicked,
            }
        });
        self.settle();
        self.in_flight.insert(
            key.clone(),
            Pending {
                serial,
                id,
                version: ProtocolVersion::V2025_11_25,
                progress: None,
                logs_sent: 0,
                log_level: None,
                audit: None,
                #[cfg(feature = "metrics")]
                running: None,
                #[cfg(feature = "metrics")]
                waiting: received.map(|received| (RequestMethod::TasksResult, received)),
                task: Some(task),
                inline_task: None,
                #[cfg(feature = "otel")]
                span,
            },
        );
        Effect::Start(Call {
            ticket: Ticket { key, serial },
            tool,
            arguments: serde_json::Map::new(),
            timeout,
            wants_progress: false,
            wants_logs: false,
            client_can: ClientCan::default(),
            round: None,
            waits: Some(waits),
            trace: None,
        })
    }

    fn notification(&mut self, notification: Notification, out: &mut Vec<u8>) -> Effect {
        match notification.method {
            NotificationMethod::Initialized => {
                self.lifecycle.confirmed();
                Effect::None
            }
            NotificationMethod::Cancelled => {
                let key = notification
                    .params
                    .as_ref()
                    .and_then(|params| params.request_id.as_ref())
                    .and_then(IdKey::from_value);
                // Unknown or finished ids are ignored, as the spec allows.
                match key.and_then(|key| self.in_flight.remove_entry(&key)) {
                    Some((key, pending)) => {
                        tracing::debug!("call cancelled by the client");
                        self.record(pending.audit.as_deref(), call_log::Outcome::Cancelled, None);
                        #[cfg(feature = "otel")]
                        self.end_span(pending.span, Some(crate::otel::Failure::Cancelled), None);
                        let ticket = Ticket {
                            key,
                            serial: pending.serial,
                        };
                        self.stop_asking(&ticket, Some(out));
                        Effect::Cancel(ticket)
                    }
                    None => Effect::None,
                }
            }
            NotificationMethod::Other => Effect::None,
        }
    }

    /// Writes the error reply for `id` and remembers the error for [`Engine::take_refusal`].
    fn refuse(&mut self, out: &mut Vec<u8>, id: Option<&RequestId>, error: McpError) {
        response::write_error(out, id, &error);
        self.refused = Some(error);
    }

    /// Counts an invalid message; past the limit, the peer is cut off.
    fn invalid(&mut self) -> Effect {
        self.last_invalid = true;
        self.consecutive_errors = self.consecutive_errors.saturating_add(1);
        if self.consecutive_errors >= self.shared.limits.max_consecutive_errors.get() {
            tracing::warn!(
                count = self.consecutive_errors,
                "peer cut off after too many invalid messages in a row"
            );
            return Effect::CutOff;
        }
        Effect::None
    }
}

/// The reply to a task-augmented `tools/call` (2025-11-25): the task's handle.
#[derive(serde::Serialize)]
struct CreateTaskResult {
    task: crate::tasks::TaskView,
}

impl Engine {
    /// The session ends (its input did, or it is dropped): the tasks it owns (stdio, or HTTP
    /// without a token) are cancelled and forgotten, as nobody else may read them, and a
    /// `tasks/result` still waiting on one gets its cancelled answer. An identity's tasks
    /// outlive the session.
    pub(crate) fn end_tasks(&mut self) {
        if let Some(owner @ Owner::Session(..)) = &self.owner {
            self.shared.tasks.end_session(owner);
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.end_tasks();
    }
}

/// Whether a refused request counts toward the cut-off ([`Limits::max_consecutive_errors`]).
///
/// Neither kind below resets the count (only a request answered with a result does), so
/// slipping them between garbage lines does not keep a garbage stream alive:
/// - a busy server (over a quota, too many calls in flight) is not the peer's fault;
/// - a call of a tool the server does not have is a client mistake (a model calling a name
///   it made up, again and again), not garbage: it is charged to the call quota instead
///   (`dispatch`), which slows a client that loops on it with `-31429`.
/// - so is a resource the server does not have (a read or a subscription of a URI it made
///   up; a `uri` that is not a string is garbage); these cost the cheap-request quota, as
///   every request but a call does;
/// - a subscription past the cap is refused for the session's state, not for its bytes;
/// - so is a task id that names no task of the caller's, or a cancel of a task that ended: a
///   client polling a task the server forgot (its keep ran out, or finished results made
///   room for a new task) gets `-32602` until it notices, and the cheap-request quota holds
///   it meanwhile (the audit's `tasks.poll-flood` was cut off after 256 polls).
fn counts_as_garbage(error: &McpError) -> bool {
    !matches!(
        error,
        McpError::Overloaded { .. }
            | McpError::RateLimited { .. }
            | McpError::UnknownTool
            | McpError::UnknownResource
            | McpError::TooManySubscriptions
            | McpError::UnknownTask
            | McpError::TaskEnded
    )
}

/// Tells the client it need not answer the server's question `id`.
fn write_cancelled(out: &mut Vec<u8>, id: u64) {
    response::write_notification(
        out,
        "notifications/cancelled",
        &CancelledParams { request_id: id },
    );
}

/// Hands a call the answer to its question; a call that stopped listening has nothing to be
/// told.
fn tell(
    answer: tokio::sync::oneshot::Sender<Result<Answer, AskError>>,
    told: Result<Answer, AskError>,
) {
    if answer.send(told).is_err() {
        tracing::debug!("an answer came after its call stopped waiting");
    }
}

/// `notifications/resources/updated` params.
#[derive(serde::Serialize)]
struct UpdatedParams<'a> {
    uri: &'a str,
}

/// Writes `notifications/resources/updated` for `uri`: a URI the session subscribed to, so
/// one the server has: a fixed resource's, or one a template matched (then the peer's own
/// text, checked by the template, sent back only to that peer when announcements were
/// missed).
fn write_updated(out: &mut Vec<u8>, uri: &str) {
    response::write_notification(
        out,
        "notifications/resources/updated",
        &UpdatedParams { uri },
    );
}

/// `text` cut to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    text.get(..end).unwrap_or_default()
}

#[cfg(test)]
mod task_tests;
#[cfg(test)]
mod tests;
