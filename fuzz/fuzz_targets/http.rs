//! The `http` target: raw bytes as one HTTP/1.1 connection into the transport (see
//! `airlock::transport::http::fuzzing`), under a counting allocator: the most bytes held at
//! once while one input is served must stay under a bound derived from the server's limits.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `System`, counting the bytes held now and the most held since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed).saturating_add(by);
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(by: usize) {
    CURRENT.fetch_sub(by, Ordering::Relaxed);
}

// SAFETY: every call is passed to `System` unchanged; only counters are updated beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System::alloc`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as `alloc`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `alloc`.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    PEAK.store(CURRENT.load(Ordering::Relaxed), Ordering::Relaxed);
    airlock::fuzzing::http(data);
    let peak = PEAK.load(Ordering::Relaxed);
    let bound = airlock::transport::http::fuzzing::allocation_bound(data.len());
    assert!(
        peak <= bound,
        "{peak} bytes held at once for a {}-byte input (bound {bound})",
        data.len()
    );
});
