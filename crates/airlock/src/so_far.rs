//! The output so far of a task's run: the last bytes its handler pushed, bounded, shown by
//! `tasks/get` while the task runs.
//!
//! A leaf: a ring of at most its capacity (the task's reservation of the task budget, so it
//! costs no memory the budget did not count), and how its bytes are shown. A command tool
//! shows them redacted (`airlock-manifest` sets the rendering before the first byte); a
//! library tool's own bytes are shown as UTF-8, what does not decode replaced.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock, PoisonError};

/// How kept bytes are shown: the bytes, and whether bytes before them were dropped (the
/// start is a cut). The end is always a cut: the run may go on writing.
type Render = Box<dyn Fn(&[u8], bool) -> String + Send + Sync>;

/// The last bytes of a running task's output.
pub struct OutputSoFar {
    ring: Mutex<Ring>,
    render: OnceLock<Render>,
}

struct Ring {
    bytes: VecDeque<u8>,
    capacity: usize,
    dropped: bool,
}

impl OutputSoFar {
    /// An empty tail of at most `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            ring: Mutex::new(Ring {
                bytes: VecDeque::new(),
                capacity,
                dropped: false,
            }),
            render: OnceLock::new(),
        }
    }

    /// Adds `data` at the end; the oldest bytes past the capacity are dropped.
    pub fn push(&self, data: &[u8]) {
        let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let capacity = ring.capacity;
        let data = match data.len().checked_sub(capacity) {
            Some(skip) if skip > 0 => {
                ring.dropped = true;
                data.get(skip..).unwrap_or_default()
            }
            _ => data,
        };
        let over = ring
            .bytes
            .len()
            .saturating_add(data.len())
            .saturating_sub(capacity);
        if over > 0 {
            let len = ring.bytes.len();
            ring.bytes.drain(..over.min(len));
            ring.dropped = true;
        }
        ring.bytes.extend(data);
    }

    /// Shows the kept bytes with `render` (given the bytes and whether earlier ones were
    /// dropped) instead of as UTF-8. The first rendering set stays: set it before the first
    /// byte is pushed.
    pub fn render_with(&self, render: impl Fn(&[u8], bool) -> String + Send + Sync + 'static) {
        if self.render.set(Box::new(render)).is_err() {
            tracing::debug!("the output so far already has its rendering");
        }
    }

    /// The last `at_most` kept bytes as shown (earlier ones count as dropped); `None` while
    /// there are none.
    pub(crate) fn shown(&self, at_most: usize) -> Option<String> {
        let (bytes, dropped) = {
            let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
            if ring.bytes.is_empty() {
                return None;
            }
            let kept = ring.bytes.make_contiguous();
            let skip = kept.len().saturating_sub(at_most);
            let shown = kept.get(skip..).unwrap_or_default().to_vec();
            (shown, ring.dropped || skip > 0)
        };
        Some(match self.render.get() {
            Some(render) => render(&bytes, dropped),
            None => String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}

impl std::fmt::Debug for OutputSoFar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSoFar").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_capacity_bytes_are_kept_and_a_drop_is_told() {
        let tail = OutputSoFar::new(8);
        assert_eq!(tail.shown(usize::MAX), None);
        tail.push(b"step 1\n");
        assert_eq!(tail.shown(usize::MAX).as_deref(), Some("step 1\n"));
        tail.push(b"step 2\n");
        assert_eq!(tail.shown(usize::MAX).as_deref(), Some("\nstep 2\n"));
        tail.push(b"a long line past the capacity");
        assert_eq!(tail.shown(usize::MAX).as_deref(), Some("capacity"));
        tail.render_with(|bytes, dropped| format!("{dropped}:{}", bytes.len()));
        tail.render_with(|_, _| "second".to_owned());
        assert_eq!(tail.shown(usize::MAX).as_deref(), Some("true:8"));
        let fresh = OutputSoFar::new(8);
        fresh.render_with(|bytes, dropped| format!("{dropped}:{}", bytes.len()));
        fresh.push(b"abc");
        assert_eq!(fresh.shown(usize::MAX).as_deref(), Some("false:3"));
    }

    /// Fewer bytes than kept are shown as the last ones, the rest told as dropped.
    #[test]
    fn a_shown_bound_keeps_the_last_bytes_and_tells_the_cut() {
        let tail = OutputSoFar::new(64);
        tail.push(b"0123456789");
        assert_eq!(tail.shown(4).as_deref(), Some("6789"));
        tail.render_with(|bytes, dropped| format!("{dropped}:{}", String::from_utf8_lossy(bytes)));
        assert_eq!(tail.shown(4).as_deref(), Some("true:6789"));
        assert_eq!(tail.shown(10).as_deref(), Some("false:0123456789"));
    }
}
