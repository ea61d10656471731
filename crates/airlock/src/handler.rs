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
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::id::IdKey;
use crate::output::ToolOutput;

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

/// What a running call tells its session: progress, then exactly one completion.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// A progress report (best effort: dropped when the session is busy).
    Progress(Progress),
    /// The call ended.
    Done(Completion),
}

/// One progress report of a call.
#[derive(Debug)]
#[non_exhaustive]
pub struct Progress {
    /// Which call.
    pub ticket: Ticket,
    /// How far, in the handler's units; must increase from one report to the next.
    pub progress: f64,
    /// The end value, if known.
    pub total: Option<f64>,
    /// A short human-readable note.
    pub message: Option<String>,
}

/// What a handler gets besides its arguments: a way to report progress.
///
/// Reports reach the client only if it asked for them (a `progressToken`), only while the
/// call is in flight, only when `progress` increases, and no more often than the engine's
/// progress interval; anything else is dropped. Reporting never blocks the handler.
#[derive(Clone, Debug)]
pub struct CallContext {
    reporter: Option<(Ticket, mpsc::Sender<Event>)>,
}

impl CallContext {
    /// A context that reports nothing (a call made outside a session).
    pub fn detached() -> Self {
        Self { reporter: None }
    }

    /// A context reporting to `events` for the call `ticket`.
    pub fn reporting(ticket: Ticket, events: mpsc::Sender<Event>) -> Self {
        Self {
            reporter: Some((ticket, events)),
        }
    }

    /// Whether the client asked for progress.
    pub fn wants_progress(&self) -> bool {
        self.reporter.is_some()
    }

    /// Reports progress; a no-op when nobody asked for it.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some((ticket, events)) = &self.reporter else {
            return;
        };
        let report = Progress {
            ticket: ticket.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
        };
        if events.try_send(Event::Progress(report)).is_err() {
            tracing::trace!("progress report dropped: the session is busy or gone");
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
#[non_exhaustive]
pub enum Outcome {
    /// The handler returned.
    Finished(ToolOutput),
    /// The deadline passed first; the handler's future was dropped.
    TimedOut(Duration),
    /// The handler panicked.
    Panicked,
}

/// A finished call, for [`Engine::complete`](crate::engine::Engine::complete).
#[derive(Debug)]
#[non_exhaustive]
pub struct Completion {
    /// Which call.
    pub ticket: Ticket,
    /// How it ended.
    pub outcome: Outcome,
}
