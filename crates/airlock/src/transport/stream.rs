//! One session over a byte stream: the read loop, call tasks, and the single writer.
//!
//! One task owns the engine, the frame reader and the output buffer. A tool call takes its
//! first step inline: a handler that finishes without waiting (most in-process tools) is
//! answered at once; one that waits (a command, a timer) goes on in a task of its own and
//! reports back over a channel bounded by `max_in_flight`. The deadline and the panic guard
//! hold either way. Log messages and progress go through that channel in both cases: those of
//! a call answered at once are handed to the engine before its reply, as a task's are. A handler that computes for long before its first `.await` therefore
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
//! On a server that reloads, each replacement of the tool set is told to the session's client
//! (`notifications/tools/list_changed`, a legacy session past its handshake); replacements
//! that come while the session is busy are one notification.
//!
//! At end of input, calls still running get `eof_drain_timeout` to finish and be answered;
//! then they are cancelled and the session ends.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::call::Started;
use crate::engine::{Effect, Engine};
use crate::framing::{Frame, FrameReader};
use crate::handler::{CallContext, Completion, Event, Ticket};
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
/// ```
/// use airlock::transport::Ending;
/// use airlock::{NoArguments, Server, Tool};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let tool = Tool::builder("hello")
///     .description("Says hello")
///     .handler(|_: NoArguments| async { "hello" });
/// let server = Server::builder("hello", "1.0.0").tool(tool).build()?;
/// let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
/// let mut output = Vec::new();
/// let ending = airlock::transport::serve(server.engine(), input, &mut output).await?;
/// assert_eq!(ending, Ending::EndOfInput);
/// assert_eq!(output, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// Read errors other than end of input, and write errors other than a closed peer.
pub async fn serve<R, W>(mut engine: Engine, reader: R, mut writer: W) -> io::Result<Ending>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    #[cfg(feature = "metrics")]
    {
        engine = engine.counted_as_session(crate::metrics::Transport::Pipe);
    }
    let limits = engine.shared().limits().clone();
    let mut frames = FrameReader::new(reader, limits.max_frame_bytes.get());
    // Completions and progress share one channel so a call's progress is never behind its
    // reply. Progress is dropped when the channel is full; completions wait for room.
    // Room for every log message a call answered at once may send (they wait in the channel
    // until its reply), beside the reports of the calls running on tasks.
    let capacity = limits
        .max_in_flight
        .get()
        .saturating_mul(4)
        .saturating_add(usize::try_from(crate::limits::MAX_LOG_MESSAGES_PER_CALL).unwrap_or(0))
        .saturating_add(2);
    let (done_tx, mut done_rx) = mpsc::channel::<Event>(capacity);
    // Announcements of changed resources, when the server offers subscriptions.
    let mut updates = engine
        .shared()
        .updates
        .as_ref()
        .map(crate::ResourceUpdates::listen);
    // Replacements of the tool set, when the server reloads: the session's client is told.
    let mut tool_changes = engine
        .shared()
        .tools_may_change()
        .then(|| engine.shared().tools.watch());
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
        let step = tokio::select! {
            biased;
            // Only running calls send events (those of a cancelled call are ignored anyway).
            Some(event) = done_rx.recv(), if session.tasks.is_running() => {
                session.event(event);
                Step::Go
            }
            frame = frames.next(), if reading => session.frame(frame, &mut done_rx),
            update = next_update(&mut updates), if updates.is_some() => {
                session.update(update, &mut updates);
                Step::Go
            }
            changed = next_change(&mut tool_changes), if tool_changes.is_some() => {
                match changed {
                    Ok(()) => session.engine.tools_changed(&mut session.out),
                    // The server is gone: nothing more will change.
                    Err(_) => tool_changes = None,
                }
                Step::Go
            }
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
            .gather_and_write(&mut frames, &mut done_rx, &mut writer)
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
    /// Takes an event of a running call.
    fn event(&mut self, event: Event) {
        let now = std::time::Instant::now();
        if let Some(done) = self.engine.report(event, now, &mut self.out) {
            self.tasks.finished(&done.ticket);
            self.engine.complete(done, &mut self.out);
        }
    }

    /// Takes an announcement that a resource changed (or word that some were missed).
    fn update(&mut self, update: Result<Arc<str>, RecvError>, updates: &mut Option<Updates>) {
        match update {
            Ok(uri) => self.engine.resource_updated(&uri, &mut self.out),
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(
                    missed,
                    "resource announcements missed; every subscription told"
                );
                self.engine.resources_maybe_updated(&mut self.out);
            }
            Err(RecvError::Closed) => *updates = None,
        }
    }

    /// Takes what the frame reader returned. `events` is the channel of running calls'
    /// reports (see [`Session::event`]).
    fn frame(&mut self, frame: io::Result<Frame<'_>>, events: &mut mpsc::Receiver<Event>) -> Step {
        let effect = match frame {
            Ok(Frame::Line(line)) => {
                self.engine.batch_received();
                self.engine.handle(line, &mut self.out)
            }
            Ok(Frame::TooLong) => self.engine.frame_too_long(&mut self.out),
            Ok(Frame::Eof) => {
                tracing::debug!(in_flight = self.engine.in_flight(), "end of input");
                self.drain_deadline = Some(deadline_after(self.eof_drain_timeout));
                // Calls get the drain; tasks have no reader left.
                self.engine.end_tasks();
                Effect::None
            }
            Err(error) => {
                tracing::warn!(kind = ?error.kind(), "reading input failed; ending session");
                self.drain_deadline = Some(deadline_after(self.eof_drain_timeout));
                self.engine.end_tasks();
                Effect::None
            }
        };
        match effect {
            Effect::None => {}
            Effect::Start(call) => {
                let reporting = call.wants_reports();
                if let Some(done) = self.tasks.start(call, &self.done_tx) {
                    // A call answered at once sent its log messages and progress into the
                    // channel as it ran: they go first, while the engine still holds the
                    // call in flight (it drops reports of a call it has answered). The
                    // events of other calls that are there go with them, in their order.
                    // A call without a reporting context sent nothing, and with no task
                    // running only a cancelled call's events can be there (the engine
                    // drops those): then the channel is left for later.
                    if reporting || self.tasks.is_running() {
                        while let Ok(event) = events.try_recv() {
                            self.event(event);
                        }
                    }
                    self.engine.complete(done, &mut self.out);
                }
            }
            Effect::Cancel(ticket) => self.tasks.cancel(&ticket),
            Effect::CutOff => {
                #[cfg(feature = "metrics")]
                if let Some(metrics) = &self.engine.shared().metrics {
                    metrics.refused(crate::metrics::Refusal::CutOff);
                }
                return Step::CutOff;
            }
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
            // `next` is cancel-safe: a read that would wait is dropped and nothing is lost.
            let ready = {
                let mut next = std::pin::pin!(frames.next());
                next.as_mut().poll(&mut Context::from_waker(Waker::noop()))
            };
            match ready {
                Poll::Ready(frame) => {
                    if self.frame(frame, done_rx) == Step::CutOff {
                        return Ok(Step::CutOff);
                    }
                }
                Poll::Pending => break,
            }
        }
        if !self.out.is_empty() {
            flush(writer, &mut self.out).await?;
        }
        self.engine.batch_written();
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
        self.engine.batch_written();
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

/// A session's receiver of resource announcements.
type Updates = broadcast::Receiver<Arc<str>>;

/// The next announcement, or never without a receiver (the HTTP `GET` stream's too).
pub(crate) async fn next_update(updates: &mut Option<Updates>) -> Result<Arc<str>, RecvError> {
    match updates {
        Some(updates) => updates.recv().await,
        None => std::future::pending().await,
    }
}

/// The next replacement of the tool set, or never without a receiver (the HTTP `GET`
/// stream's too).
pub(crate) async fn next_change(
    changes: &mut Option<tokio::sync::watch::Receiver<u64>>,
) -> Result<(), tokio::sync::watch::error::RecvError> {
    match changes {
        Some(changes) => changes.changed().await,
        None => std::future::pending().await,
    }
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
        let context = if call.wants_reports() {
            CallContext::reporting(&call, events.clone())
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
            if events.send(Event::from(completion)).await.is_err() {
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
    use serde_json::{Value, json};

    use super::*;
    use crate::{CallContext, LogLevel, NoArguments, Server, Tool};

    /// A session with one tool that logs twice and reports progress, then answers without
    /// waiting: its first step is its last, so it is answered inline, with no task.
    fn reporting_at_once() -> Engine {
        let tool = Tool::builder("at_once")
            .description("Logs twice and reports progress, then answers without waiting")
            .handler(|_: NoArguments, context: CallContext| async move {
                context.log(LogLevel::Debug, "below the level");
                context.log(LogLevel::Warning, "careful");
                context.progress(1.0, Some(1.0), None);
                "done"
            });
        let server = Server::builder("stream-tests", "1.0.0").tool(tool).build();
        server.map(|server| server.engine()).unwrap()
    }

    /// Serves `lines` to the end and returns what the session wrote, one value per line.
    async fn session(lines: &[Value]) -> Vec<Value> {
        let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let mut output = Vec::new();
        let ending = serve(reporting_at_once(), input.as_bytes(), &mut output).await;
        assert_eq!(ending.unwrap(), Ending::EndOfInput);
        String::from_utf8(output)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn a_call_answered_at_once_sends_its_log_messages_and_progress_before_its_reply() {
        let written = session(&[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                   "params": {"level": "info"}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "at_once", "arguments": {}, "_meta": {"progressToken": "p"}}}),
        ])
        .await;
        assert_eq!(
            written.get(2..),
            Some(
                &[
                    json!({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "warning", "data": "careful"}}),
                    json!({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": "p", "progress": 1.0, "total": 1.0}}),
                    json!({"jsonrpc": "2.0", "id": 3, "result": {
                        "content": [{"type": "text", "text": "done"}]}}),
                ][..]
            )
        );
    }

    #[tokio::test]
    async fn a_stdio_session_hears_of_the_resources_it_subscribed_to_as_they_change() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

        let notes = crate::Resource::builder("test://notes", "notes")
            .fixed(|| crate::ResourceBody::text("Buy milk."));
        let other = crate::Resource::builder("test://other", "other")
            .fixed(|| crate::ResourceBody::text("Not watched."));
        let server = Server::builder("stream-tests", "1.0.0")
            .resource(notes)
            .resource(other)
            .resource_subscriptions(crate::ResourceUpdates::new())
            .build()
            .unwrap();
        let updates = server.resource_updates().unwrap();
        let (client, serving) = tokio::io::duplex(64 * 1024);
        let (server_in, server_out) = tokio::io::split(serving);
        let session = tokio::spawn(serve(server.engine(), server_in, server_out));
        let (client_in, mut client_out) = tokio::io::split(client);
        let mut lines = BufReader::new(client_in).lines();
        let mut next = async || -> Value {
            let line = lines.next_line().await.unwrap().unwrap();
            serde_json::from_str(&line).unwrap()
        };
        for line in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                   "params": {"uri": "test://notes"}}),
        ] {
            client_out
                .write_all(format!("{line}\n").as_bytes())
                .await
                .unwrap();
        }
        assert_eq!(next().await["id"], 1);
        assert_eq!(
            next().await,
            json!({"jsonrpc": "2.0", "id": 2, "result": {}})
        );
        updates.updated("test://other");
        updates.updated("test://notes");
        assert_eq!(
            next().await,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                   "params": {"uri": "test://notes"}}),
            "only the subscribed one"
        );
        client_out.shutdown().await.unwrap();
        assert_eq!(session.await.unwrap().unwrap(), Ending::EndOfInput);
    }

    #[tokio::test]
    async fn a_call_answered_at_once_gets_all_its_log_messages_through_up_to_the_cap() {
        let tool = Tool::builder("chatty")
            .description("Logs 150 messages, then answers without waiting")
            .handler(|_: NoArguments, context: CallContext| async move {
                for n in 0..150 {
                    context.log(LogLevel::Info, format!("message {n}"));
                }
                "done"
            });
        let engine = Server::builder("stream-tests", "1.0.0")
            .tool(tool)
            .build()
            .unwrap()
            .engine();
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                   "params": {"level": "info"}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "chatty", "arguments": {}}}),
        ];
        let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let mut output = Vec::new();
        let ending = serve(engine, input.as_bytes(), &mut output).await;
        assert_eq!(ending.unwrap(), Ending::EndOfInput);
        let written: Vec<Value> = String::from_utf8(output)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let logged: Vec<&Value> = written
            .iter()
            .filter(|line| line["method"] == "notifications/message")
            .collect();
        assert_eq!(
            logged.len(),
            usize::try_from(crate::limits::MAX_LOG_MESSAGES_PER_CALL).unwrap()
        );
        assert_eq!(logged[99]["params"]["data"], "message 99");
        assert_eq!(written.last().unwrap()["id"], 3, "the reply comes last");
    }
}
