//! Transports: what carries frames between a peer and the sans-I/O [`Engine`].
//!
//! [`stream`] serves one session over any byte stream (stdio, a pipe, an in-memory duplex in
//! tests); `stdio` opens the process's stdin and stdout for it, as non-blocking pipes when
//! they are pipes. [`http`] is the second transport: Streamable HTTP on hyper, driving the
//! same engine per request (modern era) or per session (legacy era).
//!
//! [`Engine`]: crate::engine::Engine

#[cfg(feature = "http")]
pub mod http;
pub(crate) mod stdio;
pub mod stream;

pub use stream::{Ending, serve};
