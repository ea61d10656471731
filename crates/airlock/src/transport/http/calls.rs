//! A call's life on HTTP: started on a task under its slots, answered as JSON or as an SSE
//! stream of its progress then its reply, completed into the engine that owns it.
//!
//! Trusts: the [`Call`] the engine started (the request was checked before it got here) and
//! the engine that owns it, a legacy session's or the request's own. Owns: the call's task,
//! the channels between it and the reply's body, the slots the call holds until its reply is
//! written or dropped, and the SSE framing of what the engine wrote. A modern client that
//! goes away cancels its call (the task is aborted); a legacy one does not, and the call
//! completes into its session.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use hyper::Response;
use hyper::StatusCode;
use hyper::body::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::call::Call;
use crate::engine::Engine;
use crate::error::McpError;
use crate::handler::{CallContext, Event};

use super::body::Body;
use super::lock;
use super::reply::{json, sse_reply, status_only};
use super::session::Session;
pub(super) use super::slots::CallSlots;

/// Progress reports a call may queue for its SSE stream before further ones are dropped.
const PROGRESS_QUEUE: usize = 16;

/// SSE events queued for a slow client before the call's progress waits.
const SSE_QUEUE: usize = 8;

/// Whose engine a call reports to.
pub(super) enum CallOwner {
    /// A legacy session's: the call completes into it even if the client went away (a closed
    /// connection is not a cancellation in the legacy era), and it can be cancelled.
    Session(Arc<Session>),
    /// A modern request's own engine: a client that goes away cancels the call.
    Request(Arc<Mutex<Engine>>),
}

impl CallOwner {
    pub(super) fn with_engine<T>(&self, f: impl FnOnce(&mut Engine) -> T) -> T {
        match self {
            Self::Session(session) => f(&mut session.engine()),
            Self::Request(engine) => f(&mut lock(engine)),
        }
    }
}

/// The reply of a call once it completed: bytes for the client, and the error if it was one.
pub(super) struct Reply {
    pub(super) out: Vec<u8>,
    pub(super) error: Option<McpError>,
}

/// Starts `call` on a task and answers when it completes: JSON, or an SSE stream of its
/// progress then its reply when the client asked for progress and accepts SSE.
pub(super) async fn start(
    call: Call,
    sse: bool,
    owner: CallOwner,
    slots: CallSlots,
    modern: bool,
) -> Response<Body> {
    let ticket = call.ticket().clone();
    let streaming = sse && call.wants_reports();
    // Streaming: progress and the completion share one channel, so progress is never behind
    // the reply (the engine drops progress of a call it has answered). Otherwise the task
    // completes the call into the engine itself and hands the reply over.
    let (events_tx, events_rx) = mpsc::channel::<Event>(PROGRESS_QUEUE);
    let context = if streaming {
        CallContext::reporting(&call, events_tx.clone())
    } else {
        CallContext::detached()
    };
    let (reply_tx, reply_rx) = oneshot::channel::<Reply>();
    let owner = Arc::new(owner);
    let task_owner = Arc::clone(&owner);
    let task_ticket = ticket.clone();
    let slots = Arc::new(slots);
    let task_slots = Arc::clone(&slots);
    let spawn = move || {
        tokio::spawn(async move {
            let completion = call.run(context).await;
            if streaming {
                if events_tx.send(Event::from(completion)).await.is_err() {
                    tracing::debug!("a call finished after its stream ended");
                }
            } else {
                let reply = task_owner.with_engine(|engine| complete(engine, completion));
                if reply_tx.send(reply).is_err() {
                    tracing::debug!("a call finished after its client went away");
                }
            }
            if let CallOwner::Session(session) = &*task_owner {
                session.tasks().remove(&task_ticket);
            }
            // A legacy call whose client went away still ran to its end under its slots.
            drop(task_slots);
        })
    };
    let abort = match &*owner {
        CallOwner::Session(session) => {
            // The map is locked while the task is spawned, so the task's own removal at its
            // end cannot come before this insertion.
            let mut tasks = session.tasks();
            let handle = spawn().abort_handle();
            tasks.insert(ticket, handle);
            drop(tasks);
            // Legacy: a client that goes away does not cancel the call.
            None
        }
        CallOwner::Request(_) => Some(AbortOnDrop(spawn().abort_handle())),
    };
    if streaming {
        return stream(owner, events_rx, abort).map(|body| body.holding(slots));
    }
    drop(events_rx);
    let reply = reply_rx.await;
    drop(abort);
    match reply {
        Ok(reply) => json(reply.out, reply.error.as_ref(), modern).map(|body| body.holding(slots)),
        // Cancelled (legacy `notifications/cancelled`): no reply is owed.
        Err(_) => status_only(StatusCode::NO_CONTENT),
    }
}

pub(super) fn complete(engine: &mut Engine, completion: crate::handler::Completion) -> Reply {
    let mut out = Vec::new();
    engine.complete(completion, &mut out);
    Reply {
        out,
        error: engine.take_refusal(),
    }
}

/// An SSE reply: progress notifications as they come, then the reply, then the end.
///
/// A modern client that goes away cancels the call (`abort` is dropped with this task); a
/// legacy one does not, and the call still completes into its session's engine.
fn stream(
    owner: Arc<CallOwner>,
    mut events: mpsc::Receiver<Event>,
    abort: Option<AbortOnDrop>,
) -> Response<Body> {
    let (sse_tx, sse_rx) = mpsc::channel::<Bytes>(SSE_QUEUE);
    let cancels_on_close = abort.is_some();
    tokio::spawn(async move {
        let _abort = abort;
        let mut client_gone = false;
        loop {
            tokio::select! {
                biased;
                () = sse_tx.closed(), if !client_gone => {
                    tracing::debug!("SSE client went away");
                    if cancels_on_close {
                        break;
                    }
                    client_gone = true;
                }
                event = events.recv() => {
                    // Cancelled: the stream ends with no reply.
                    let Some(event) = event else { break };
                    let mut out = Vec::new();
                    let done = owner.with_engine(|engine| {
                        let done = engine.report(event, Instant::now(), &mut out)?;
                        Some(complete(engine, done))
                    });
                    if let Some(reply) = done {
                        if !client_gone && sse_tx.send(sse_events(&reply.out)).await.is_err() {
                            tracing::debug!("SSE client went away before the reply");
                        }
                        break;
                    }
                    if !out.is_empty()
                        && !client_gone
                        && sse_tx.send(sse_events(&out)).await.is_err()
                    {
                        client_gone = true;
                    }
                }
            }
        }
    });
    sse_reply(Body::stream(sse_rx))
}

/// Each line of `out` (one JSON-RPC message) as an SSE `message` event.
pub(super) fn sse_events(out: &[u8]) -> Bytes {
    let mut events = Vec::with_capacity(out.len().saturating_add(32));
    for line in out.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
        events.extend_from_slice(b"event: message\ndata: ");
        events.extend_from_slice(line);
        events.extend_from_slice(b"\n\n");
    }
    Bytes::from(events)
}

/// Aborts a task when dropped.
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::HttpLimits;
    use std::net::{IpAddr, Ipv4Addr};
    use tokio::sync::Semaphore;

    #[test]
    fn each_line_becomes_one_message_event_and_empty_lines_none() {
        let out = b"{\"id\":1}\n\n{\"id\":2}\n";
        assert_eq!(
            &sse_events(out)[..],
            b"event: message\ndata: {\"id\":1}\n\nevent: message\ndata: {\"id\":2}\n\n"
        );
        assert_eq!(
            &sse_events(b"{\"id\":3}")[..],
            b"event: message\ndata: {\"id\":3}\n\n"
        );
        assert!(sse_events(b"").is_empty());
        assert!(sse_events(b"\n\n").is_empty());
    }

    #[test]
    fn a_reply_holding_the_call_slots_gives_them_back_when_dropped() {
        let server = Arc::new(Semaphore::new(1));
        let limits = HttpLimits {
            client_in_flight: std::num::NonZeroUsize::MIN,
            ..HttpLimits::default()
        };
        let clients = Arc::new(super::super::clients::Clients::new(&limits, 4));
        let client =
            super::super::clients::ClientKey::of(None, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        let slots = CallSlots {
            _server: Arc::clone(&server).try_acquire_owned().unwrap(),
            _client: Some(clients.enter(&client).unwrap()),
            _lease: None,
        };
        let reply = Body::full(Bytes::from_static(b"{}")).holding(Arc::new(slots));
        assert_eq!(server.available_permits(), 0);
        assert!(matches!(
            clients.enter(&client),
            Err(McpError::ClientBusy { limit: 1 })
        ));
        drop(reply);
        assert_eq!(server.available_permits(), 1);
        assert!(clients.enter(&client).is_ok());
    }

    #[test]
    fn dropping_an_abort_guard_aborts_its_task() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let task = tokio::spawn(std::future::pending::<()>());
            drop(AbortOnDrop(task.abort_handle()));
            assert!(task.await.unwrap_err().is_cancelled());
        });
    }
}
