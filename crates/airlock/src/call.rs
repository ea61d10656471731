//! One tool call in motion: the handler's future inside a deadline and a panic guard.
//!
//! A transport runs [`Call::run`] on a task and hands the [`Completion`] back to the engine,
//! which alone decides whether a reply is still owed (a cancelled call gets none). The panic
//! guard is the backstop the design asks for: a panicking handler becomes `-32603` for its id
//! and the server keeps serving. The payload is dropped unread: panic messages can carry
//! argument values, paths or secrets.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::asking::ClientCan;
use crate::handler::{BoxFuture, CallContext, Completion, Event, Outcome, Ticket};
use crate::output::ToolOutput;
use crate::rounds::{Round, RoundEnd};
use crate::tools::ToolDef;

/// A tool call the engine admitted, ready to run.
pub struct Call {
    pub(crate) ticket: Ticket,
    pub(crate) tool: Arc<ToolDef>,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) timeout: Duration,
    /// Whether the caller sent a `progressToken` (so progress is worth reporting).
    pub(crate) wants_progress: bool,
    /// Whether the session had a log level set when the call started (so log messages are
    /// worth sending).
    pub(crate) wants_logs: bool,
    /// What the session's client declared it can answer (legacy sessions; nothing in a
    /// modern call, which asks through its round).
    pub(crate) client_can: ClientCan,
    /// A 2026-07-28 call's round: the answers it brought, and where its questions go.
    pub(crate) round: Option<Arc<Round>>,
    /// A wait of `tasks/result` for its task's end, instead of the tool's handler: it runs,
    /// and is cancelled, as a call does, and only its reply differs.
    pub(crate) waits: Option<BoxFuture<Outcome>>,
    /// The run's own span, when the call is traced.
    pub(crate) trace: Option<crate::trace_context::TraceParent>,
}

impl Call {
    /// The call's ticket (what cancellation refers to).
    pub fn ticket(&self) -> &Ticket {
        &self.ticket
    }

    /// Whether the caller asked for progress reports.
    pub fn wants_progress(&self) -> bool {
        self.wants_progress
    }

    /// Whether log messages of this call may reach the client (its session set a level).
    pub fn wants_logs(&self) -> bool {
        self.wants_logs
    }

    /// Whether the call may ask the client something (elicitation, sampling): its session's
    /// client declared a capability for it.
    pub fn may_ask(&self) -> bool {
        self.client_can.any()
    }

    /// Whether the call has anything to say besides its completion (progress, log messages,
    /// questions for the client): then a transport gives it a [`CallContext::reporting`]
    /// context (and over HTTP, an event stream).
    pub fn wants_reports(&self) -> bool {
        self.wants_progress || self.wants_logs || self.may_ask()
    }

    /// Runs the handler under the call's deadline and the panic guard.
    pub async fn run(self, context: CallContext) -> Completion {
        match self.start(context) {
            Started::Done(completion) => completion,
            Started::Running(running) => running.finish().await,
        }
    }

    /// Starts the handler and takes its first step at once, inside the panic guard: most
    /// in-process handlers finish in it, and then no task, timer or box is needed. A handler
    /// that waits comes back as [`Running`], to be driven to its end on a task. The first step
    /// is polled with a no-op waker: whoever drives the rest polls again, which registers the
    /// real one (a future must wake the waker of its latest poll).
    pub fn start(self, context: CallContext) -> Started {
        let Self {
            ticket,
            tool,
            arguments,
            timeout,
            wants_progress: _,
            wants_logs: _,
            client_can: _,
            round,
            waits,
            trace,
        } = self;
        if let Some(waits) = waits {
            return Started::Running(Running {
                ticket,
                tool,
                guarded: Guarded::Waiting(waits),
                timeout,
            });
        }
        let context = context.in_round(round.clone()).traced(trace);
        let started = catch_unwind(AssertUnwindSafe(|| tool.handler.call(arguments, context)));
        let mut guarded = match started {
            Ok(future) => CatchUnwind {
                inner: future,
                round,
            },
            Err(payload) => {
                drop(payload);
                return Started::Done(Completion {
                    outcome: panicked(&tool),
                    ticket,
                });
            }
        };
        let mut cx = Context::from_waker(Waker::noop());
        let outcome = match Pin::new(&mut guarded).poll(&mut cx) {
            Poll::Ready(Ok(Ran::Output(output))) => Outcome::Finished(output),
            Poll::Ready(Ok(Ran::Round(end))) => Outcome::Round(end),
            Poll::Ready(Err(Panicked)) => panicked(&tool),
            Poll::Pending => {
                return Started::Running(Running {
                    ticket,
                    tool,
                    guarded: Guarded::Handler(guarded),
                    timeout,
                });
            }
        };
        Started::Done(Completion { ticket, outcome })
    }
}

/// A call after its first step: finished, or still running.
#[derive(Debug)]
pub enum Started {
    /// It finished in its first step.
    Done(Completion),
    /// It waits on something; [`Running::finish`] drives it to its end.
    Running(Running),
}

/// A call that did not finish in its first step.
pub struct Running {
    ticket: Ticket,
    tool: Arc<ToolDef>,
    guarded: Guarded,
    timeout: Duration,
}

/// What a running call drives: its handler, or a `tasks/result`'s wait.
enum Guarded {
    Handler(CatchUnwind),
    Waiting(BoxFuture<Outcome>),
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("ticket", &self.ticket)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// The call's ticket.
    pub fn ticket(&self) -> &Ticket {
        &self.ticket
    }

    /// Drives the call to its end under its deadline, counted from here: the first step took
    /// no time that a timer could have cut.
    pub async fn finish(self) -> Completion {
        let Self {
            ticket,
            tool,
            guarded,
            timeout,
        } = self;
        let guarded = match guarded {
            Guarded::Handler(guarded) => guarded,
            Guarded::Waiting(waits) => {
                let outcome = tokio::time::timeout(timeout, waits)
                    .await
                    .unwrap_or(Outcome::TimedOut(timeout));
                return Completion { ticket, outcome };
            }
        };
        let outcome = match tokio::time::timeout(timeout, guarded).await {
            Ok(Ok(Ran::Output(output))) => Outcome::Finished(output),
            Ok(Ok(Ran::Round(end))) => Outcome::Round(end),
            Ok(Err(Panicked)) => panicked(&tool),
            Err(_elapsed) => {
                tracing::info!(tool = tool.name.as_str(), ?timeout, "tool call timed out");
                Outcome::TimedOut(timeout)
            }
        };
        Completion { ticket, outcome }
    }
}

fn panicked(tool: &ToolDef) -> Outcome {
    tracing::error!(
        tool = tool.name.as_str(),
        "tool handler panicked; answered -32603"
    );
    Outcome::Panicked
}

/// Marker for a caught panic; the payload is gone.
struct Panicked;

/// What a handler's future came to: its output, or the end of its call's round.
enum Ran {
    Output(ToolOutput),
    Round(RoundEnd),
}

/// Polls a boxed future inside `catch_unwind`; in a 2026-07-28 call, a step that leaves the
/// handler waiting on a question without an answer ends the call's round.
struct CatchUnwind {
    inner: BoxFuture<ToolOutput>,
    round: Option<Arc<Round>>,
}

impl Future for CatchUnwind {
    type Output = Result<Ran, Panicked>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let inner = &mut this.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(Ran::Output(output))),
            Ok(Poll::Pending) => match this.round.as_ref().and_then(|round| round.end()) {
                Some(end) => Poll::Ready(Ok(Ran::Round(end))),
                None => Poll::Pending,
            },
            Err(payload) => {
                drop(payload);
                Poll::Ready(Err(Panicked))
            }
        }
    }
}

impl CallContext {
    /// A context reporting to `events` what `call` has a reader for (progress, log
    /// messages); see [`Call::wants_reports`].
    pub fn reporting(call: &Call, events: tokio::sync::mpsc::Sender<Event>) -> Self {
        Self::reporter(
            call.ticket().clone(),
            events,
            (call.wants_progress(), call.wants_logs()),
            call.client_can,
        )
    }
}
