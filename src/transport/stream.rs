//! One session over a byte stream: the read loop, call tasks, and the single writer.
//!
//! One task owns the engine, the frame reader and the output buffer; tool calls run on their
//! own tasks and report back over a channel bounded by `max_in_flight`. Replies are gathered
//! in one buffer and written when no further request is already waiting in the input (so a
//! pipelining client gets many replies per write, and a client waiting on a reply never
//! waits on us) or when the buffer is full. While a write blocks because the peer is not
//! reading, nothing else is read: memory never grows with a slow or hostile peer.
//!
//! At end of input, calls still running get `eof_drain_timeout` to finish and be answered;
//! then they are cancelled and the session ends.

use std::collections::HashMap;
use std::io;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::call::{CallContext, Event, Ticket};
use crate::engine::{Effect, Engine};
use crate::framing::{Frame, FrameReader};
use crate::limits::WRITE_BUFFER_BYTES;

/// Why a session ended.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Ending {
    /// The input ended and every call was answered or timed out of the drain.
    EndOfInput,
    /// The output was closed by the peer.
    PeerGone,
    /// The peer sent too many invalid messages in a row and was cut off.
    CutOff,
    /// SIGTERM, SIGINT or SIGHUP: calls were cancelled (their process groups killed).
    Terminated,
}

impl Ending {
    /// The process exit status for this ending (documented in `SECURITY.md`).
    pub fn exit_code(self) -> u8 {
        match self {
            Self::EndOfInput | Self::PeerGone | Self::Terminated => 0,
            Self::CutOff => 3,
        }
    }
}

/// Serves one session of `engine` over `reader` and `writer` until the input ends, the peer
/// goes away, or it is cut off.
///
/// # Errors
///
/// Read errors other than end of input, and write errors other than a closed peer.
pub async fn serve<R, W>(mut engine: Engine, reader: R, mut writer: W) -> io::Result<Ending>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let limits = engine.shared().limits().clone();
    let mut frames = FrameReader::new(reader, limits.max_frame_bytes.get());
    // Completions and progress share one channel so a call's progress is never behind its
    // reply. Progress is dropped when the channel is full; completions wait for room.
    let capacity = limits.max_in_flight.get().saturating_mul(4);
    let (done_tx, mut done_rx) = mpsc::channel::<Event>(capacity);
    let mut tasks = Tasks::default();
    let mut out = Vec::with_capacity(WRITE_BUFFER_BYTES);
    let mut drain_deadline: Option<Instant> = None;
    let mut ending = Ending::EndOfInput;

    loop {
        let reading = drain_deadline.is_none();
        tokio::select! {
            biased;
            Some(event) = done_rx.recv() => match event {
                Event::Done(done) => {
                    tasks.finished(&done.ticket);
                    engine.complete(done, &mut out);
                }
                Event::Progress(report) => {
                    engine.progress(report, std::time::Instant::now(), &mut out);
                }
            },
            frame = frames.next(), if reading => {
                let effect = match frame {
                    Ok(Frame::Line(line)) => engine.handle(line, &mut out),
                    Ok(Frame::TooLong) => engine.frame_too_long(&mut out),
                    Ok(Frame::Eof) => {
                        tracing::debug!(in_flight = engine.in_flight(), "end of input");
                        drain_deadline = Some(deadline_after(limits.eof_drain_timeout));
                        Effect::None
                    }
                    Err(error) => {
                        tracing::warn!(kind = ?error.kind(), "reading input failed; ending session");
                        drain_deadline = Some(deadline_after(limits.eof_drain_timeout));
                        Effect::None
                    }
                };
                match effect {
                    Effect::None => {}
                    Effect::Start(call) => tasks.start(call, &done_tx),
                    Effect::Cancel(ticket) => tasks.cancel(&ticket),
                    Effect::CutOff => {
                        ending = Ending::CutOff;
                        engine.abandon_all();
                        tasks.cancel_all();
                        // The reply to the last message is written; nothing after it.
                        if flush(&mut writer, &mut out).await.is_err() {
                            tracing::debug!("last reply before the cut-off was not delivered");
                        }
                        return Ok(ending);
                    }
                }
            }
            () = sleep_until(drain_deadline), if drain_deadline.is_some() => {
                tracing::info!(abandoned = engine.in_flight(), "calls still running at end of input were cancelled");
                engine.abandon_all();
                tasks.cancel_all();
            }
        }
        let input_waiting = drain_deadline.is_none() && frames.has_buffered_frame();
        let coalesce = (input_waiting || !done_rx.is_empty()) && out.len() < WRITE_BUFFER_BYTES;
        if !out.is_empty() && !coalesce {
            match flush(&mut writer, &mut out).await {
                Ok(()) => {}
                Err(error) if is_peer_gone(&error) => {
                    tracing::info!("output closed by the peer; ending session");
                    ending = Ending::PeerGone;
                    break;
                }
                Err(error) => {
                    tasks.cancel_all();
                    return Err(error);
                }
            }
        }
        if drain_deadline.is_some() && engine.in_flight() == 0 {
            break;
        }
    }
    engine.abandon_all();
    tasks.cancel_all();
    Ok(ending)
}

/// Writes and flushes everything gathered in `out`.
async fn flush<W: AsyncWrite + Unpin>(writer: &mut W, out: &mut Vec<u8>) -> io::Result<()> {
    let result = async {
        writer.write_all(out).await?;
        writer.flush().await
    }
    .await;
    out.clear();
    if out.capacity() > WRITE_BUFFER_BYTES.saturating_mul(4) {
        out.shrink_to(WRITE_BUFFER_BYTES);
    }
    result
}

fn is_peer_gone(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset | io::ErrorKind::WriteZero
    )
}

/// `now + after`, saturating far in the future instead of overflowing.
fn deadline_after(after: std::time::Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(after)
        .or_else(|| now.checked_add(std::time::Duration::from_secs(86_400)))
        .unwrap_or(now)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The tasks of calls in flight, so they can be stopped.
#[derive(Default)]
struct Tasks {
    running: HashMap<Ticket, AbortHandle>,
}

impl Tasks {
    fn start(&mut self, call: crate::call::Call, events: &mpsc::Sender<Event>) {
        let ticket = call.ticket().clone();
        let events = events.clone();
        let context = if call.wants_progress() {
            CallContext::reporting(ticket.clone(), events.clone())
        } else {
            CallContext::detached()
        };
        let task = tokio::spawn(async move {
            let completion = call.run(context).await;
            if events.send(Event::Done(completion)).await.is_err() {
                tracing::debug!("a call finished after its session ended");
            }
        });
        self.running.insert(ticket, task.abort_handle());
    }

    fn finished(&mut self, ticket: &Ticket) {
        self.running.remove(ticket);
    }

    /// Stops a call: its future is dropped, which for command tools kills the process group.
    fn cancel(&mut self, ticket: &Ticket) {
        if let Some(task) = self.running.remove(ticket) {
            task.abort();
        }
    }

    fn cancel_all(&mut self) {
        for (_, task) in self.running.drain() {
            task.abort();
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.cancel_all();
    }
}
