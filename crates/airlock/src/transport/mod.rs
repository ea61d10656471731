//! Transports: what carries frames between a peer and the sans-I/O [`Engine`].
//!
//! [`serve`] serves one session over any byte stream (stdio, a pipe, an in-memory duplex in
//! tests); `stdio` opens the process's stdin and stdout for it, as non-blocking pipes when
//! they are pipes. `http` (the `http` feature) is the second transport: Streamable HTTP on
//! hyper, driving the same engine per request (modern era) or per session (legacy era).
//! `metrics` (the `metrics` and `http` features) serves a server's Prometheus metrics on a
//! listener of its own.
//!
//! A transport of your own drives an [`Engine`] (one per session, from
//! [`Server::engine`](crate::Server::engine)): it hands the engine each frame, writes what the
//! engine wrote, runs each [`Call`] the engine admits ([`Effect::Start`]) and gives back its
//! [`Completion`]. [`serve`] is that loop for byte streams; read it before writing another.
//!
//! ```
//! use airlock::transport::{Effect, Started};
//! use airlock::{CallContext, NoArguments, Server, Tool};
//!
//! # fn main() -> Result<(), airlock::BuildError> {
//! let tool = Tool::builder("hello")
//!     .description("Says hello")
//!     .handler(|_: NoArguments| async { "hello" });
//! let server = Server::builder("hello", "1.0.0").tool(tool).build()?;
//! let mut engine = server.engine();
//! let mut out = Vec::new();
//! let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
//! assert!(matches!(engine.handle(ping, &mut out), Effect::None));
//! assert_eq!(out, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
//!
//! let call = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
//! out.clear();
//! if let Effect::Start(call) = engine.handle(call, &mut out) {
//!     // An in-process handler that does not wait finishes in its first step.
//!     if let Started::Done(completion) = call.start(CallContext::detached()) {
//!         engine.complete(completion, &mut out);
//!     }
//! }
//! assert!(String::from_utf8_lossy(&out).contains("hello"));
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "http")]
pub mod http;
#[cfg(all(feature = "metrics", feature = "http"))]
pub mod metrics;
pub(crate) mod stdio;
pub(crate) mod stream;

pub use crate::call::{Call, Running, Started};
pub use crate::engine::{Effect, Engine};
pub use crate::handler::{Completion, Event, Ticket};
pub use stream::{Ending, serve};
