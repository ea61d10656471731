//! Response bodies: handed to hyper in bounded pieces, holding their call's slots until written.
//!
//! A reply can be several MiB (a megabyte of command output, escaped). Two rules keep what a
//! client that does not read can make us hold bounded:
//!
//! - **A call's reply keeps the call's slots** (server-wide and per client) until the body is
//!   done, so replies waiting for a slow reader count against `max_in_flight` like running
//!   calls, and new calls are refused (`-31503`) instead of piling up replies.
//! - **hyper gets at most [`CHUNK_BYTES`] at a time, copied out**: it polls the body only when
//!   its own write buffer has room, and a copied piece does not pin the whole reply. Once the
//!   last piece is handed over, the reply and the slots are let go; what is left per
//!   connection is hyper's buffer and that piece.
//!
//! A connection whose client takes no bytes for the write timeout is closed
//! ([`super::write_timeout`]), which drops its body.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Bytes, Frame, SizeHint};
use tokio::sync::mpsc;

use super::slots::CallSlots;

/// Largest piece of a body handed to hyper at once.
pub(super) const CHUNK_BYTES: usize = 64 * 1024;

/// A response body.
pub(super) struct Body {
    kind: Kind,
    /// The slots of the call this body answers, given back when the body is dropped.
    _slots: Option<Arc<CallSlots>>,
}

enum Kind {
    Empty,
    /// A whole reply, `sent` bytes of it handed over.
    Full {
        data: Bytes,
        sent: usize,
    },
    /// An SSE stream: events as they come, the current one handed over in pieces.
    Stream {
        events: mpsc::Receiver<Bytes>,
        current: Option<(Bytes, usize)>,
    },
}

impl Body {
    /// No body.
    pub(super) fn empty() -> Self {
        Self {
            kind: Kind::Empty,
            _slots: None,
        }
    }

    /// All of `data`.
    pub(super) fn full(data: Bytes) -> Self {
        Self {
            kind: Kind::Full { data, sent: 0 },
            _slots: None,
        }
    }

    /// The events received on `events`, until it closes.
    pub(super) fn stream(events: mpsc::Receiver<Bytes>) -> Self {
        Self {
            kind: Kind::Stream {
                events,
                current: None,
            },
            _slots: None,
        }
    }

    /// The same body, keeping `slots` until it is dropped.
    pub(super) fn holding(mut self, slots: Arc<CallSlots>) -> Self {
        self._slots = Some(slots);
        self
    }
}

/// The next piece of `data` from `sent` on, and `sent` moved past it; `None` at the end. A
/// small body goes whole (no copy); a large one in copied pieces, and the whole is let go
/// with the last.
fn next_piece(data: &mut Bytes, sent: &mut usize) -> Option<Bytes> {
    let len = data.len();
    if *sent >= len {
        return None;
    }
    let end = sent.saturating_add(CHUNK_BYTES).min(len);
    let piece = if *sent == 0 && end == len {
        data.clone()
    } else {
        Bytes::copy_from_slice(data.get(*sent..end)?)
    };
    *sent = end;
    if end == len {
        *data = Bytes::new();
        *sent = 0;
    }
    Some(piece)
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = |piece: Bytes| Poll::Ready(Some(Ok(Frame::data(piece))));
        match &mut self.get_mut().kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full { data, sent } => match next_piece(data, sent) {
                Some(piece) => frame(piece),
                None => Poll::Ready(None),
            },
            Kind::Stream { events, current } => loop {
                if let Some((data, sent)) = current {
                    if let Some(piece) = next_piece(data, sent) {
                        if data.is_empty() {
                            *current = None;
                        }
                        return frame(piece);
                    }
                    *current = None;
                }
                match events.poll_recv(cx) {
                    Poll::Ready(Some(event)) => *current = Some((event, 0)),
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full { data, .. } => data.is_empty(),
            Kind::Stream { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full { data, sent } => SizeHint::with_exact(
                u64::try_from(data.len().saturating_sub(*sent)).unwrap_or(u64::MAX),
            ),
            Kind::Stream { .. } => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt as _;

    use super::*;

    async fn pieces(mut body: Body) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            out.push(frame.unwrap().into_data().unwrap());
        }
        out
    }

    #[tokio::test]
    async fn a_small_body_goes_whole_and_a_large_one_in_bounded_pieces() {
        let small = Bytes::from_static(b"{\"ok\":true}");
        assert_eq!(pieces(Body::full(small.clone())).await, vec![small]);

        let large: Vec<u8> = (0..CHUNK_BYTES * 2 + 10)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        let body = Body::full(Bytes::from(large.clone()));
        assert_eq!(
            hyper::body::Body::size_hint(&body).exact(),
            Some(u64::try_from(large.len()).unwrap())
        );
        let got = pieces(body).await;
        assert_eq!(
            got.iter().map(Bytes::len).collect::<Vec<_>>(),
            vec![CHUNK_BYTES, CHUNK_BYTES, 10]
        );
        assert_eq!(got.concat(), large);
    }

    #[tokio::test]
    async fn a_stream_hands_over_each_event_in_bounded_pieces() {
        let (tx, rx) = mpsc::channel(4);
        tx.send(Bytes::from_static(b"event one\n\n")).await.unwrap();
        tx.send(Bytes::from(vec![b'x'; CHUNK_BYTES + 1]))
            .await
            .unwrap();
        drop(tx);
        let got = pieces(Body::stream(rx)).await;
        assert_eq!(
            got.iter().map(Bytes::len).collect::<Vec<_>>(),
            vec![11, CHUNK_BYTES, 1]
        );
    }

    #[tokio::test]
    async fn an_empty_body_ends_at_once() {
        let body = Body::empty();
        assert!(hyper::body::Body::is_end_stream(&body));
        assert!(pieces(body).await.is_empty());
    }
}
