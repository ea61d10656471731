//! Bytes to newline-delimited frames, never holding more than the frame limit.
//!
//! This module knows no JSON. It owns the first bound a peer meets: a line longer than the
//! limit is drained to its newline without being stored and reported as [`Frame::TooLong`],
//! after which the next line is read whole. A trailing `\r` is dropped (CRLF peers), lines
//! holding only spaces, tabs or `\r` are skipped, and an unterminated last line is delivered
//! at end of input like any other (it is complete: the peer can send nothing more).
//!
//! [`LineFramer`] is the sans-I/O core, fed byte slices of any size; [`FrameReader`] drives it
//! from an `AsyncRead`. The reader is cancel-safe: its only await point is a read into an
//! empty buffer, so a `select!` that drops a pending `next` loses nothing.

use std::io;
use std::ops::Range;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::limits::{READ_BUFFER_BYTES, RETAINED_FRAME_CAPACITY};

/// The sans-I/O line splitter.
#[derive(Debug)]
pub(crate) struct LineFramer {
    /// Bytes of a line that spans several inputs; never longer than `max_frame_bytes`.
    line: Vec<u8>,
    /// Set while skipping the rest of an overlong line.
    draining: bool,
    /// The frame limit, newline excluded.
    max_frame_bytes: usize,
}

/// What one call to [`LineFramer::step`] found.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) enum Step {
    /// A whole line, newline excluded (not yet stripped of `\r` or checked for blankness).
    Frame(FrameAt),
    /// A line longer than the limit ended; it was not stored.
    TooLong,
    /// All input was consumed without finishing a line.
    NeedMore,
}

/// Where a finished line lies.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) enum FrameAt {
    /// Inside the input slice given to `step` (the zero-copy common case).
    Input(Range<usize>),
    /// In the framer's own buffer, see [`LineFramer::buffered`]; release it with
    /// [`LineFramer::release`] before the next step.
    Buffered,
}

impl LineFramer {
    /// A framer refusing lines longer than `max_frame_bytes`.
    pub(crate) fn new(max_frame_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            draining: false,
            max_frame_bytes,
        }
    }

    /// Consumes `input` up to and including its first newline; returns how many bytes were
    /// consumed and what was found.
    pub(crate) fn step(&mut self, input: &[u8]) -> (usize, Step) {
        let Some(newline) = memchr::memchr(b'\n', input) else {
            self.absorb(input);
            return (input.len(), Step::NeedMore);
        };
        let consumed = newline.saturating_add(1);
        let head = input.get(..newline).unwrap_or_default();
        if self.draining {
            self.draining = false;
            return (consumed, Step::TooLong);
        }
        if self.line.len().saturating_add(head.len()) > self.max_frame_bytes {
            self.release();
            return (consumed, Step::TooLong);
        }
        if self.line.is_empty() {
            return (consumed, Step::Frame(FrameAt::Input(0..newline)));
        }
        self.line.extend_from_slice(head);
        (consumed, Step::Frame(FrameAt::Buffered))
    }

    /// Ends the input: a pending line is a last frame, a pending overlong line is reported.
    pub(crate) fn finish(&mut self) -> Step {
        if self.draining {
            self.draining = false;
            return Step::TooLong;
        }
        if self.line.is_empty() {
            return Step::NeedMore;
        }
        Step::Frame(FrameAt::Buffered)
    }

    /// The line a [`FrameAt::Buffered`] refers to.
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.line
    }

    /// Forgets the buffered line, shrinking the buffer if one large line grew it.
    pub(crate) fn release(&mut self) {
        self.line.clear();
        if self.line.capacity() > RETAINED_FRAME_CAPACITY {
            self.line.shrink_to(RETAINED_FRAME_CAPACITY);
        }
    }

    /// Stores a newline-free piece, or starts draining if the line would pass the limit.
    fn absorb(&mut self, piece: &[u8]) {
        if self.draining {
            return;
        }
        if self.line.len().saturating_add(piece.len()) > self.max_frame_bytes {
            self.release();
            self.draining = true;
            return;
        }
        self.line.extend_from_slice(piece);
    }
}

/// The message a line carries: without a trailing `\r`, or `None` for a blank line.
pub(crate) fn content(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let blank = line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'));
    (!blank).then_some(line)
}

/// One event read from a byte stream.
#[derive(Debug, Eq, PartialEq)]
pub(crate) enum Frame<'a> {
    /// A non-blank line, without its line ending.
    Line(&'a [u8]),
    /// A line longer than the limit went by; nothing of it was kept.
    TooLong,
    /// The stream ended.
    Eof,
}

/// Reads frames from an async byte stream through a [`LineFramer`].
#[derive(Debug)]
pub(crate) struct FrameReader<R> {
    reader: R,
    buf: Box<[u8]>,
    /// Unconsumed input is `buf[start..end]`.
    start: usize,
    end: usize,
    framer: LineFramer,
    /// The last frame returned lives in the framer's buffer and must be released first.
    release_line: bool,
    eof: bool,
}

/// Where the frame to return was found; computed before borrowing it out.
enum Found {
    Input(Range<usize>),
    Buffered,
    TooLong,
    Eof,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Frames from `reader`, refusing lines longer than `max_frame_bytes`.
    pub(crate) fn new(reader: R, max_frame_bytes: usize) -> Self {
        Self {
            reader,
            buf: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            framer: LineFramer::new(max_frame_bytes),
            release_line: false,
            eof: false,
        }
    }

    /// The next frame. Cancel-safe.
    ///
    /// # Errors
    ///
    /// Read errors of the underlying stream.
    pub(crate) async fn next(&mut self) -> io::Result<Frame<'_>> {
        if self.release_line {
            self.release_line = false;
            self.framer.release();
        }
        let found = loop {
            if let Some(found) = self.scan_buffered() {
                break found;
            }
            if self.eof {
                break match self.framer.finish() {
                    Step::Frame(_) => {
                        self.release_line = true;
                        if content(self.framer.buffered()).is_none() {
                            self.framer.release();
                            self.release_line = false;
                            continue;
                        }
                        Found::Buffered
                    }
                    Step::TooLong => Found::TooLong,
                    Step::NeedMore => Found::Eof,
                };
            }
            self.start = 0;
            self.end = 0;
            let read = self.reader.read(&mut self.buf).await?;
            if read == 0 {
                self.eof = true;
            } else {
                self.end = read.min(self.buf.len());
            }
        };
        Ok(match found {
            Found::Input(range) => {
                Frame::Line(content(self.buf.get(range).unwrap_or_default()).unwrap_or_default())
            }
            Found::Buffered => Frame::Line(content(self.framer.buffered()).unwrap_or_default()),
            Found::TooLong => Frame::TooLong,
            Found::Eof => Frame::Eof,
        })
    }

    /// Runs the framer over buffered input until it finds a non-blank frame or needs more.
    fn scan_buffered(&mut self) -> Option<Found> {
        while self.start < self.end {
            let input = self.buf.get(self.start..self.end).unwrap_or_default();
            let (used, step) = self.framer.step(input);
            let base = self.start;
            self.start = self.start.saturating_add(used).min(self.end);
            match step {
                Step::NeedMore => return None,
                Step::TooLong => return Some(Found::TooLong),
                Step::Frame(FrameAt::Input(range)) => {
                    let absolute = base.saturating_add(range.start)..base.saturating_add(range.end);
                    let line = self.buf.get(absolute.clone()).unwrap_or_default();
                    if content(line).is_some() {
                        return Some(Found::Input(absolute));
                    }
                }
                Step::Frame(FrameAt::Buffered) => {
                    if content(self.framer.buffered()).is_some() {
                        self.release_line = true;
                        return Some(Found::Buffered);
                    }
                    self.framer.release();
                }
            }
        }
        None
    }
}

/// Splits a byte stream delivered in `chunks` into frames, synchronously: the same framer
/// the server runs, for property tests and fuzzing.
pub fn split_all(chunks: &[&[u8]], max_frame_bytes: usize) -> Vec<Option<Vec<u8>>> {
    let mut framer = LineFramer::new(max_frame_bytes);
    let mut out = Vec::new();
    let take = |framer: &mut LineFramer, step: Step, input: &[u8], out: &mut Vec<_>| match step {
        Step::NeedMore => {}
        Step::TooLong => out.push(None),
        Step::Frame(at) => {
            let line = match at {
                FrameAt::Input(range) => input.get(range).unwrap_or_default(),
                FrameAt::Buffered => framer.buffered(),
            };
            if let Some(message) = content(line) {
                out.push(Some(message.to_vec()));
            }
            framer.release();
        }
    };
    for chunk in chunks {
        let mut rest: &[u8] = chunk;
        while !rest.is_empty() {
            let (used, step) = framer.step(rest);
            take(&mut framer, step, rest, &mut out);
            rest = rest.get(used..).unwrap_or_default();
        }
    }
    let step = framer.finish();
    take(&mut framer, step, &[], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frames(input: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
        split_all(&[input], max)
    }

    #[test]
    fn lines_are_split_on_newlines_and_crlf_is_stripped() {
        assert_eq!(
            frames(b"{\"a\":1}\n{\"b\":2}\r\n", 100),
            vec![Some(b"{\"a\":1}".to_vec()), Some(b"{\"b\":2}".to_vec())]
        );
    }

    #[test]
    fn blank_lines_are_skipped() {
        assert_eq!(frames(b"\n\r\n  \t\n1\n", 100), vec![Some(b"1".to_vec())]);
    }

    #[test]
    fn oversized_line_is_rejected_and_stream_resynchronises() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        assert_eq!(frames(&input, 10), vec![None, Some(b"ok".to_vec())]);
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_accepted() {
        assert_eq!(
            frames(b"0123456789\n", 10),
            vec![Some(b"0123456789".to_vec())]
        );
        assert_eq!(frames(b"0123456789a\n", 10), vec![None]);
    }

    #[test]
    fn oversized_line_split_across_chunks_is_never_held() {
        let mut framer = LineFramer::new(8);
        for _ in 0..1000 {
            let (used, step) = framer.step(&[b'y'; 4096]);
            assert_eq!((used, step), (4096, Step::NeedMore));
            assert!(framer.buffered().is_empty());
        }
        assert_eq!(framer.step(b"\n").1, Step::TooLong);
        assert_eq!(framer.step(b"ab\n").1, Step::Frame(FrameAt::Input(0..2)));
    }

    #[test]
    fn an_unterminated_last_line_is_delivered_at_eof() {
        assert_eq!(
            frames(b"1\n2", 10),
            vec![Some(b"1".to_vec()), Some(b"2".to_vec())]
        );
        assert_eq!(
            frames(b"1\n0123456789abc", 10),
            vec![Some(b"1".to_vec()), None]
        );
    }

    #[tokio::test]
    async fn the_async_reader_matches_the_core_and_reports_eof() {
        let input = b"a\n\nbb\r\n".repeat(3);
        let mut reader = FrameReader::new(&input[..], 10);
        let mut seen = Vec::new();
        loop {
            match reader.next().await.unwrap() {
                Frame::Line(line) => seen.push(line.to_vec()),
                Frame::TooLong => seen.push(b"!".to_vec()),
                Frame::Eof => break,
            }
        }
        assert_eq!(seen.len(), 6);
        assert_eq!(seen[0], b"a");
        assert_eq!(seen[1], b"bb");
        assert!(matches!(reader.next().await.unwrap(), Frame::Eof));
    }

    /// Input read by the caller (the idle path of stdio) and input read from the stream are
    /// one sequence: a line may start in one and end in the other.
    #[tokio::test]
    async fn the_async_reader_holds_at_most_the_limit_of_a_huge_line() {
        let mut input = vec![b'z'; 10 * READ_BUFFER_BYTES];
        input.extend_from_slice(b"\n{}\n");
        let mut reader = FrameReader::new(&input[..], 1000);
        assert_eq!(reader.next().await.unwrap(), Frame::TooLong);
        assert!(reader.framer.line.capacity() <= RETAINED_FRAME_CAPACITY);
        assert_eq!(reader.next().await.unwrap(), Frame::Line(b"{}"));
        assert_eq!(reader.next().await.unwrap(), Frame::Eof);
    }

    /// A model of the framing rules, written the obvious way.
    fn model(input: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
        let mut out = Vec::new();
        let mut lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
        if input.ends_with(b"\n") || input.is_empty() {
            lines.pop();
        }
        for line in lines {
            if line.len() > max {
                out.push(None);
            } else if let Some(message) = content(line) {
                out.push(Some(message.to_vec()));
            }
        }
        out
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_frames_as_the_model(
            input in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), Just(b' '), any::<u8>()], 0..400),
            cuts in proptest::collection::vec(0usize..400, 0..8),
            max in 1usize..40,
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(input.len())).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for cut in cuts {
                chunks.push(&input[last..cut]);
                last = cut;
            }
            chunks.push(&input[last..]);
            let got = split_all(&chunks, max);
            prop_assert_eq!(&got, &model(&input, max));
            for frame in got.into_iter().flatten() {
                prop_assert!(frame.len() <= max);
                prop_assert!(!frame.contains(&b'\n'));
            }
        }
    }
}
