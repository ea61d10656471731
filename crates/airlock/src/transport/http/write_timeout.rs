//! The write timeout: a connection whose client takes no bytes for a while is closed.
//!
//! hyper has no write deadline, and a client that sends requests but never reads the replies
//! would keep its connection, its reply and (for a call) its call slots forever. The socket is
//! wrapped ([`Watched`]) to note when a write first could not proceed and when bytes moved
//! again; the connection's task waits on [`Progress::stalled`] beside the connection and drops
//! it once writes have been stuck for the timeout. Writes that go through cost one lock each
//! and no timer; a timer runs only while a write is stuck.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Whether a connection's writes are stuck, and since when.
#[derive(Default)]
pub(super) struct Progress {
    stuck_since: Mutex<Option<Instant>>,
    stuck: Notify,
}

impl Progress {
    /// Resolves once writes have been stuck, with no byte taken by the client, for `timeout`.
    pub(super) async fn stalled(&self, timeout: Duration) {
        loop {
            let since = *self.since();
            match since {
                // `notify_one` keeps a permit when nobody waits, so a write stuck between the
                // look above and this wait is not missed.
                None => self.stuck.notified().await,
                Some(since) => {
                    let deadline = since.checked_add(timeout).unwrap_or(since);
                    if Instant::now() >= deadline {
                        return;
                    }
                    tokio::time::sleep_until(deadline).await;
                }
            }
        }
    }

    fn since(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.stuck_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn note<T>(&self, result: &Poll<io::Result<T>>, moved: impl FnOnce(&T) -> bool) {
        match result {
            Poll::Pending => {
                let mut since = self.since();
                if since.is_none() {
                    *since = Some(Instant::now());
                    drop(since);
                    self.stuck.notify_one();
                }
            }
            Poll::Ready(Ok(value)) if moved(value) => *self.since() = None,
            Poll::Ready(_) => {}
        }
    }
}

/// A connection's byte stream (a `TcpStream`; an in-memory duplex when fuzzed), reporting its
/// writes' progress.
pub(super) struct Watched<S> {
    stream: S,
    progress: Arc<Progress>,
}

impl<S> Watched<S> {
    pub(super) fn new(stream: S, progress: Arc<Progress>) -> Self {
        Self { stream, progress }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.progress.note(&result, |written| *written > 0);
        result
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.progress.note(&result, |written| *written > 0);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_flush(cx);
        this.progress.note(&result, |()| false);
        result
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn stuck_writes_stall_after_the_timeout_and_progress_resets_it() {
        let progress = Arc::new(Progress::default());
        progress.note::<usize>(&Poll::Pending, |_| true);
        let timeout = Duration::from_secs(10);
        let stalled = tokio::time::timeout(Duration::from_secs(11), progress.stalled(timeout));
        assert!(
            stalled.await.is_ok(),
            "a write stuck for 10 s did not stall"
        );

        let progress = Arc::new(Progress::default());
        let watcher = {
            let progress = Arc::clone(&progress);
            tokio::spawn(async move { progress.stalled(timeout).await })
        };
        // Nothing stuck yet: no stall however long it waits.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!watcher.is_finished());
        // Stuck, then bytes move before the deadline: still no stall.
        progress.note::<usize>(&Poll::Pending, |_| true);
        tokio::time::sleep(Duration::from_secs(5)).await;
        progress.note(&Poll::Ready(Ok(100_usize)), |n| *n > 0);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(!watcher.is_finished());
        watcher.abort();
    }
}
