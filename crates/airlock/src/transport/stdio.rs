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
//! This module knows nothing of frames; it hands bytes to [`crate::transport::stream`].

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

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
