//! One session over a byte stream: the read loop, call tasks, and the single writer.
//!
//! One task owns the engine, the frame reader and the output buffer. A tool call takes its
//! first step inline: a handler that finishes without waiting (most in-process tools) is
//! answered at once; one that waits (a command, a timer) goes on in a task of its own and
//! reports back over a channel bounded by `max_in_flight`. The deadline and the panic guard
//! hold either way. A handler that computes for long before its first `.await` therefore
//! holds up the session (and on `Server::run_stdio`'s one-thread runtime, so does one that
//! computes for long between two); such work belongs in `spawn_blocking`.
//!
//! Replies are gathered in one buffer. After each event the session takes everything that is
//! already there without waiting — requests whose line is buffered or already in the pipe,
//! calls that finished — and then writes the replies in one write. So a pipelining client
//! gets many replies per write, and a client waiting on a reply never waits on us: its reply
//! is written as soon as nothing more is ready. At most about `WRITE_BUFFER_BYTES` are
//! gathered. While a write blocks because the peer is not reading, nothing else is read:
//! memory never grows with a slow or hostile peer.
//!
//! At end of input, calls still running get `eof_drain_timeout` to finish and be answered;
//! then they are cancelled and the session ends.
//!
//! A session given an `IdleRead` (stdio on a thread of its own) reads through it whenever
//! it is idle — no call in flight or running, nothing to write — by blocking, and through the
//! reactor otherwise.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::call::{CallContext, Completion, Event, Started, Ticket};
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
pub async fn serve<R, W>(engine: Engine, reader: R, writer: W) -> io::Result<Ending>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    serve_with_idle(engine, reader, writer, None).await
}

/// A way for a session that owns its thread to wait for input by blocking in one `read`
/// while it has nothing else to do, instead of in the reactor: one system call per message
/// less (see `transport::stdio`).
pub(crate) trait IdleRead {
    /// Reads input into `buf`, blocking until some arrives (`0`: end of input). Called only
    /// with no call in flight, no task running and nothing to write; `None` when blocking is
    /// not possible now, and the session waits in the reactor instead.
    fn read_idle(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>>;
}

/// [`serve`], reading with `idle` whenever the session is idle.
pub(crate) async fn serve_with_idle<R, W>(
    mut engine: Engine,
    reader: R,
    mut writer: W,
    mut idle: Option<&mut (dyn IdleRead + Send)>,
) -> io::Result<Ending>
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
    let mut session = Session {
        engine: &mut engine,
        tasks: Tasks::default(),
        out: Vec::with_capacity(WRITE_BUFFER_BYTES),
        drain_deadline: None,
        eof_drain_timeout: limits.eof_drain_timeout,
        done_tx,
    };
    let ending = loop {
        let reading = session.drain_deadline.is_none();
        if let Some(idle) = idle.as_deref_mut()
            && reading
            && session.is_idle()
            && frames.wants_input()
        {
            let mut declined = false;
            let read = frames.read_with(|buf| {
                idle.read_idle(buf).unwrap_or_else(|| {
                    declined = true;
                    Err(io::ErrorKind::WouldBlock.into())
                })
            });
            if let Err(error) = read
                && !declined
            {
                // As a failed read of the stream (logged there). Idle means nothing is in
                // flight and nothing is left to write, so there is nothing to drain: the
                // session ends now, as the reactor's path does.
                let _step = session.frame(Err(error));
                break Ending::EndOfInput;
            }
        }
        let step = tokio::select! {
            biased;
            // Only running calls send events (those of a cancelled call are ignored anyway).
            Some(event) = done_rx.recv(), if session.tasks.is_running() => {
                session.event(event);
                Step::Go
            }
            frame = frames.next(), if reading => session.frame(frame),
            () = sleep_until(session.drain_deadline), if session.drain_deadline.is_some() => {
                tracing::info!(abandoned = session.engine.in_flight(), "calls still running at end of input were cancelled");
                session.engine.abandon_all();
                session.tasks.cancel_all();
                Step::Go
            }
        };
        if step == Step::CutOff {
            return session.cut_off(&mut writer).await;
        }
        match session
            .gather_and_write(&mut frames, &mut done_rx, &mut writer, idle.is_some())
            .await
        {
            Ok(Step::Go) => {}
            Ok(Step::CutOff) => return session.cut_off(&mut writer).await,
            Err(error) if is_peer_gone(&error) => {
                tracing::info!("output closed by the peer; ending session");
                break Ending::PeerGone;
            }
            Err(error) => {
                session.tasks.cancel_all();
                return Err(error);
            }
        }
        if session.drain_deadline.is_some() && session.engine.in_flight() == 0 {
            break Ending::EndOfInput;
        }
    };
    session.engine.abandon_all();
    session.tasks.cancel_all();
    Ok(ending)
}

/// Whether the session goes on after a step.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Step {
    Go,
    CutOff,
}

/// The state of the session loop besides its input.
struct Session<'e> {
    engine: &'e mut Engine,
    tasks: Tasks,
    /// Replies gathered and not yet written.
    out: Vec<u8>,
    /// Set at end of input: when calls still running are given up.
    drain_deadline: Option<Instant>,
    eof_drain_timeout: std::time::Duration,
    done_tx: mpsc::Sender<Event>,
}

impl Session<'_> {
    /// Whether nothing is under way: no call in flight or running, nothing to write.
    fn is_idle(&self) -> bool {
        self.is_idle_but_for_output() && self.out.is_empty()
    }

    /// Whether no call is in flight or running.
    fn is_idle_but_for_output(&self) -> bool {
        self.engine.in_flight() == 0 && !self.tasks.is_running()
    }

    /// Takes an event of a running call.
    fn event(&mut self, event: Event) {
        match event {
            Event::Done(done) => {
                self.tasks.finished(&done.ticket);
                self.engine.complete(done, &mut self.out);
            }
            Event::Progress(report) => {
                self.engine
                    .progress(report, std::time::Instant::now(), &mut self.out);
            }
        }
    }

    /// Takes what the frame reader returned.
    fn frame(&mut self, frame: io::Result<Frame<'_>>) -> Step {
        let effect = match frame {
            Ok(Frame::Line(line)) => self.engine.handle(line, &mut self.out),
            Ok(Frame::TooLong) => self.engine.frame_too_long(&mut self.out),
            Ok(Frame::Eof) => {
                tracing::debug!(in_flight = self.engine.in_flight(), "end of input");
                self.drain_deadline = Some(deadline_after(self.eof_drain_timeout));
                Effect::None
            }
            Err(error) => {
                tracing::warn!(kind = ?error.kind(), "reading input failed; ending session");
                self.drain_deadline = Some(deadline_after(self.eof_drain_timeout));
                Effect::None
            }
        };
        match effect {
            Effect::None => {}
            Effect::Start(call) => {
                if let Some(done) = self.tasks.start(call, &self.done_tx) {
                    self.engine.complete(done, &mut self.out);
                }
            }
            Effect::Cancel(ticket) => self.tasks.cancel(&ticket),
            Effect::CutOff => return Step::CutOff,
        }
        Step::Go
    }

    /// Takes every request and completion that is already there — a request whose whole line
    /// is buffered or already in the pipe, a call that finished — then writes the replies
    /// gathered, in one write. A client that waits for a reply has sent nothing more, so its
    /// reply is written at once; a pipelining client gets many replies per write. At most
    /// about [`WRITE_BUFFER_BYTES`] are gathered, and nothing here waits for input.
    async fn gather_and_write<R, W>(
        &mut self,
        frames: &mut FrameReader<R>,
        done_rx: &mut mpsc::Receiver<Event>,
        writer: &mut W,
        blocking_reads: bool,
    ) -> io::Result<Step>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        while !self.out.is_empty() && self.out.len() < WRITE_BUFFER_BYTES {
            if self.tasks.is_running()
                && let Ok(event) = done_rx.try_recv()
            {
                self.event(event);
                continue;
            }
            if self.drain_deadline.is_some() {
                break;
            }
            // A session that reads while idle by blocking looks at what it has read, not at
            // the stream: the next read is the blocking one, as soon as these replies are out.
            if blocking_reads && self.is_idle_but_for_output() && frames.wants_input() {
                break;
            }
            // `next` is cancel-safe: a read that would wait is dropped and nothing is lost.
            let ready = {
                let mut next = std::pin::pin!(frames.next());
                next.as_mut().poll(&mut Context::from_waker(Waker::noop()))
            };
            match ready {
                Poll::Ready(frame) => {
                    if self.frame(frame) == Step::CutOff {
                        return Ok(Step::CutOff);
                    }
                }
                Poll::Pending => break,
            }
        }
        if !self.out.is_empty() {
            flush(writer, &mut self.out).await?;
        }
        Ok(Step::Go)
    }

    /// Ends the session of a peer cut off: the reply to its last message is written, nothing
    /// after it.
    async fn cut_off<W: AsyncWrite + Unpin>(mut self, writer: &mut W) -> io::Result<Ending> {
        self.engine.abandon_all();
        self.tasks.cancel_all();
        if flush(writer, &mut self.out).await.is_err() {
            tracing::debug!("last reply before the cut-off was not delivered");
        }
        Ok(Ending::CutOff)
    }
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
        .or_else(|| now.checked_add(crate::limits::MAX_TOOL_TIMEOUT))
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
    /// Starts a call. Its first step runs here: a handler that finishes without waiting (an
    /// in-process tool) is answered at once, with no task, channel or wake-up; one that waits
    /// (a command, a timer) goes on in a task of its own. The deadline and the panic guard
    /// are inside [`Call::start`](crate::call::Call::start) either way.
    fn start(
        &mut self,
        call: crate::call::Call,
        events: &mpsc::Sender<Event>,
    ) -> Option<Completion> {
        let context = if call.wants_progress() {
            CallContext::reporting(call.ticket().clone(), events.clone())
        } else {
            CallContext::detached()
        };
        let running = match call.start(context) {
            Started::Done(completion) => return Some(completion),
            Started::Running(running) => running,
        };
        let ticket = running.ticket().clone();
        let events = events.clone();
        let task = tokio::spawn(async move {
            let completion = running.finish().await;
            if events.send(Event::Done(completion)).await.is_err() {
                tracing::debug!("a call finished after its session ended");
            }
        });
        self.running.insert(ticket, task.abort_handle());
        None
    }

    /// Whether any call runs on a task.
    fn is_running(&self) -> bool {
        !self.running.is_empty()
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::DuplexStream;

    use super::*;
    use crate::{Server, Tool, ToolOutput};

    /// Input handed out by an idle reader, one piece per call, then its end or error.
    struct Scripted {
        pieces: Vec<&'static [u8]>,
        end: Option<io::ErrorKind>,
        calls: usize,
    }

    impl IdleRead for Scripted {
        fn read_idle(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
            self.calls = self.calls.saturating_add(1);
            if self.pieces.is_empty() {
                return Some(match self.end {
                    Some(kind) => Err(kind.into()),
                    None => Ok(0),
                });
            }
            let piece = self.pieces.remove(0);
            buf.get_mut(..piece.len())?.copy_from_slice(piece);
            Some(Ok(piece.len()))
        }
    }

    /// An engine whose end-of-input drain lasts an hour, so that a session waiting it out
    /// cannot be mistaken for one that ended.
    fn engine() -> Engine {
        Server::builder("t", "0")
            .limits(crate::Limits {
                eof_drain_timeout: Duration::from_secs(3600),
                ..crate::Limits::default()
            })
            .tool(
                Tool::builder("echo", "echo")
                    .handler(|_: crate::NoArguments| async { Ok(ToolOutput::text("x")) }),
            )
            .build()
            .unwrap()
            .engine()
    }

    /// Serves one session over `idle` and `reader`; the replies as text. The timeout only
    /// keeps a broken session from hanging the suite (the drain it could wait for is an hour).
    async fn serve_idle(idle: &mut Scripted, reader: DuplexStream) -> (Ending, String) {
        let mut out = Vec::new();
        let ending = tokio::time::timeout(
            Duration::from_secs(60),
            serve_with_idle(engine(), reader, &mut out, Some(idle)),
        )
        .await
        .expect("the session ends by itself")
        .unwrap();
        (ending, String::from_utf8(out).unwrap())
    }

    const PONGS: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n";

    /// The idle reader and the stream read one pipe in stdio: a line begun by one is finished
    /// by the other, and each reply goes out once.
    #[tokio::test]
    async fn an_idle_session_reads_through_its_idle_reader_and_the_stream_alike() {
        let mut idle = Scripted {
            pieces: vec![
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"meth",
            ],
            end: None,
            calls: 0,
        };
        let (mut client, reader) = tokio::io::duplex(1024);
        client.write_all(b"od\":\"ping\"}\n").await.unwrap();
        drop(client);
        let (ending, out) = serve_idle(&mut idle, reader).await;
        assert_eq!(ending, Ending::EndOfInput);
        assert_eq!(out, PONGS);
        assert!(idle.calls >= 1);
    }

    /// Found in review: after a failed idle read the session read on through the reactor and
    /// waited out the end-of-input drain. It ends at once, having answered what it read.
    #[tokio::test]
    async fn a_failed_idle_read_ends_the_session_at_once() {
        let mut idle = Scripted {
            pieces: vec![
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
            ],
            end: Some(io::ErrorKind::Other),
            calls: 0,
        };
        // A stream that stays open and silent: only the idle reader gives input.
        let (_client, reader) = tokio::io::duplex(64);
        let (ending, out) = serve_idle(&mut idle, reader).await;
        assert_eq!(ending, Ending::EndOfInput);
        assert_eq!(out, PONGS);
        assert_eq!(idle.calls, 2);
    }
}
