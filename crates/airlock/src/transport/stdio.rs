//! The process's stdin and stdout as async byte streams, without a thread hop per operation.
//!
//! tokio's `stdin()`/`stdout()` run every read and write on its blocking thread pool: each
//! message crosses two threads before we see it and two more before the peer sees the reply,
//! and a pending read of stdin cannot be cancelled at shutdown. When stdin or stdout is a pipe
//! or FIFO — how MCP clients start stdio servers — we reopen it through `/proc/self/fd` as a
//! non-blocking pipe end driven by the reactor instead. Reopening gives us an open file
//! description of our own, so `O_NONBLOCK` never leaks to the descriptors we inherited: a
//! `2>&1` stderr sharing stdout's description, or a parent shell that shares our stdin, keep
//! their blocking mode. Anything else (a file, a terminal, a socket, no `/proc`) falls back to
//! tokio's blocking handles, which behave the same, only slower.
//!
//! A session that owns its thread ([`Server::run_stdio`](crate::Server::run_stdio)) also
//! waits for input the way a plain line echo does when it has nothing else to do: blocked in
//! one `read` of stdin (through a blocking duplicate of descriptor 0), instead of in the
//! reactor's `epoll_wait` followed by a `read`. That saves one system call per message for a
//! client that waits for each reply. The [`IdleGate`] keeps signals working meanwhile: the
//! thread that waits for them ends the process itself when the session is blocked idle (no
//! call in flight, no task, nothing to write: nothing to cancel), and otherwise tells the
//! session, which stops as before.
//!
//! This module knows nothing of frames; it hands bytes to [`crate::transport::stream`].

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

use crate::transport::stream::IdleRead;

/// Where stdin is reopened from (Linux's view of our descriptor 0).
const STDIN_PATH: &str = "/proc/self/fd/0";
/// Where stdout is reopened from.
const STDOUT_PATH: &str = "/proc/self/fd/1";

/// The session's input: stdin.
#[derive(Debug)]
pub(crate) enum Input {
    /// A pipe or FIFO, read through the reactor.
    Pipe(pipe::Receiver),
    /// Anything else, read on tokio's blocking pool.
    Blocking(tokio::io::Stdin),
}

/// The session's output: stdout.
#[derive(Debug)]
pub(crate) enum Output {
    /// A pipe or FIFO, written through the reactor.
    Pipe(pipe::Sender),
    /// Anything else, written on tokio's blocking pool.
    Blocking(tokio::io::Stdout),
}

/// Opens stdin and stdout for a session. Must run inside the runtime (the pipe ends register
/// with its reactor).
pub(crate) fn open() -> (Input, Output) {
    // Only a FIFO is reopened: opening a terminal could make it our controlling terminal, and
    // other kinds gain nothing. The open is O_NONBLOCK, so a pipe whose writer is already gone
    // does not block it.
    let stdin = std::io::stdin();
    let input = match reopen(stdin.as_fd(), |options| options.open_receiver(STDIN_PATH)) {
        Ok(receiver) => Input::Pipe(receiver),
        Err(error) => {
            tracing::debug!(kind = ?error.kind(), "stdin is not a reopenable pipe; blocking reads");
            Input::Blocking(tokio::io::stdin())
        }
    };
    // A pipe with no reader left fails here (ENXIO); the blocking handle then reports the
    // closed peer on the first write, as before.
    let stdout = std::io::stdout();
    let output = match reopen(stdout.as_fd(), |options| options.open_sender(STDOUT_PATH)) {
        Ok(sender) => Output::Pipe(sender),
        Err(error) => {
            tracing::debug!(kind = ?error.kind(), "stdout is not a reopenable pipe; blocking writes");
            Output::Blocking(tokio::io::stdout())
        }
    };
    (input, output)
}

/// Opens `fd`'s pipe anew with `open`, if `fd` is a FIFO.
fn reopen<T>(
    fd: BorrowedFd<'_>,
    open: impl FnOnce(&pipe::OpenOptions) -> io::Result<T>,
) -> io::Result<T> {
    let kind = std::fs::File::from(fd.try_clone_to_owned()?)
        .metadata()?
        .file_type();
    if !kind.is_fifo() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "not a pipe"));
    }
    open(&pipe::OpenOptions::new())
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Self::Blocking(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(pipe).poll_write(cx, buf),
            Self::Blocking(stdout) => Pin::new(stdout).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            Self::Blocking(stdout) => Pin::new(stdout).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            Self::Blocking(stdout) => Pin::new(stdout).poll_shutdown(cx),
        }
    }
}

impl Input {
    /// A blocking reader of the same stdin for the idle path, when stdin is a pipe (the
    /// reactor's pipe end is a description of our own; this duplicate shares the inherited one,
    /// whose mode is left as it is). `None` otherwise.
    pub(crate) fn idle_reader(&self, gate: Arc<IdleGate>) -> Option<IdleStdin> {
        let Self::Pipe(_) = self else {
            return None;
        };
        match std::io::stdin().as_fd().try_clone_to_owned() {
            Ok(fd) => Some(IdleStdin {
                file: std::fs::File::from(fd),
                gate,
                usable: true,
            }),
            Err(error) => {
                tracing::debug!(kind = ?error.kind(), "stdin could not be duplicated; no idle reads");
                None
            }
        }
    }
}

/// Reads stdin by blocking the session's thread while the session is idle.
#[derive(Debug)]
pub(crate) struct IdleStdin {
    file: std::fs::File,
    gate: Arc<IdleGate>,
    /// False once stdin turned out to be non-blocking (the peer set it so).
    usable: bool,
}

impl IdleRead for IdleStdin {
    fn read_idle(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        // The session is the runtime's one task: anything else alive (a call being cancelled,
        // a task a handler spawned) needs the runtime to run, so the session waits there.
        let alone = tokio::runtime::Handle::try_current()
            .is_ok_and(|runtime| runtime.metrics().num_alive_tasks() <= 1);
        if !self.usable || !alone || !self.gate.enter() {
            return None;
        }
        let read = self.file.read(buf);
        self.gate.leave();
        match read {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                tracing::debug!("stdin is non-blocking; waiting in the reactor from now on");
                self.usable = false;
                None
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => None,
            other => Some(other),
        }
    }
}

/// Whether the session's thread is blocked in an idle read, shared by the session and the
/// thread that waits for signals.
///
/// The session marks itself idle before it blocks and busy after; the signal thread marks a
/// stop as requested, then claims an idle session for ending the process. Both use
/// sequentially consistent operations, so either the session sees the request before it
/// blocks (and stops through its channel), or the signal thread sees it idle (and ends the
/// process while the session holds nothing). A session woken after that claim never goes on.
#[derive(Debug, Default)]
pub(crate) struct IdleGate {
    state: AtomicU8,
    stop_requested: AtomicBool,
}

/// [`IdleGate`] states.
const BUSY: u8 = 0;
const IDLE: u8 = 1;
const ENDING: u8 = 2;

impl IdleGate {
    /// The session is about to block; false if it must not (a stop was requested).
    fn enter(&self) -> bool {
        if self
            .state
            .compare_exchange(BUSY, IDLE, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return false;
        }
        if self.stop_requested.load(Ordering::SeqCst) {
            self.leave();
            return false;
        }
        true
    }

    /// The session stopped blocking. If the signal thread claimed it meanwhile, the process
    /// is ending: this thread waits for that and does nothing more.
    fn leave(&self) {
        if self
            .state
            .compare_exchange(IDLE, BUSY, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            loop {
                std::thread::park();
            }
        }
    }

    /// A stop was requested (a signal). True when the session is blocked idle and now belongs
    /// to the caller, which ends the process; false when the session must be told instead.
    pub(crate) fn claim_for_stop(&self) -> bool {
        self.stop_requested.store(true, Ordering::SeqCst);
        self.state
            .compare_exchange(IDLE, ENDING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_claims_an_idle_session_and_turns_a_busy_one_away() {
        let gate = IdleGate::default();
        assert!(!gate.claim_for_stop(), "busy: the session is told");
        assert!(
            !gate.enter(),
            "a requested stop keeps the session from blocking"
        );
        assert_eq!(gate.state.load(Ordering::SeqCst), BUSY);
        let gate = IdleGate::default();
        assert!(gate.enter());
        gate.leave();
        assert!(gate.enter());
        assert!(
            gate.claim_for_stop(),
            "idle: the signal thread ends the process"
        );
        assert_eq!(gate.state.load(Ordering::SeqCst), ENDING);
        assert!(!gate.enter());
    }
}
