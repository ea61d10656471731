//! Transports: what carries frames between a peer and the sans-I/O [`Engine`].
//!
//! [`stream`] serves one session over any byte stream (stdio, a pipe, an in-memory duplex in
//! tests). A second transport (Streamable HTTP) drives the same engine per request.
//!
//! [`Engine`]: crate::engine::Engine

pub mod stream;

pub use stream::{Ending, serve};
