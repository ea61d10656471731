//! airlock: an MCP server kit that treats every agent as hostile.
//!
//! A peer's bytes cross one boundary, in one direction:
//!
//! ```text
//! bytes ─▶ framing ─▶ envelope ─▶ lifecycle ─▶ dispatch ─▶ tool call ─┐
//!          (size cap)  (THE        (legacy or    (methods)   (deadline, │
//!                       BOUNDARY)   modern era)               panic guard)
//! out ◀── one writer, one line per message ◀── McpError::to_wire / result
//! ```
//!
//! # Layout
//!
//! - [`limits`]: every bound on untrusted input, documented.
//! - [`error`]: [`McpError`] and the one mapping to wire error objects.
//! - [`framing`]: bytes to size-capped frames; knows no JSON.
//! - [`envelope`]: THE BOUNDARY — a frame to a checked message, or a rejection.
//! - `json`: the strict one-pass reader behind the envelope (depth, repeated keys).
//! - [`id`]: request ids, echoed verbatim.
//! - [`version`]: the protocol revisions and what each allows.
//! - `lifecycle`: the legacy handshake state and modern per-request fields.
//! - `dispatch`: the method table.
//! - [`tools`]: the registry, argument bounds, the schema validator, typed tools.
//! - [`guard`]: rate quotas (governor GCRA) decided before any work.
//! - [`call`]: a tool call under its deadline and panic guard.
//! - [`call_log`]: the per-call audit record (one JSON line per tool call, no argument values).
//! - [`secrets`]: secret values in `secrecy` types, and their redaction from output.
//! - [`engine`]: the sans-I/O session tying the above together.
//! - [`transport`]: sessions over byte streams (stdio), and Streamable HTTP on hyper (both eras,
//!   CORS for listed origins, TLS with rustls) with the `http` feature.
//! - [`server`]: the builder and the one-call entry points.
//! - [`telemetry`]: what may be logged; with the `logging` feature, a stderr subscriber and a
//!   panic hook that withholds panic messages.
//!
//! Commands declared in a manifest, their sandbox and `airlock audit` live in the
//! `airlock-manifest` and `airlock-audit` crates of this workspace.

#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        reason = "tests compute expected values freely; the lint guards the shipped code"
    )
)]

pub mod call;
pub mod call_log;
mod dispatch;
pub mod engine;
pub mod envelope;
pub mod error;
pub mod framing;
#[cfg(any(test, fuzzing))]
pub mod fuzzing;
pub mod guard;
pub mod id;
mod json;
mod lifecycle;
pub mod limits;
mod response;
pub mod secrets;
pub mod server;
mod state;
pub mod telemetry;
pub mod tools;
pub mod transport;
pub mod version;

pub use error::McpError;
pub use limits::{Limits, Rate};
pub use server::{Server, ServerBuilder};
pub use tools::{
    BuildError, NoArguments, Tool, ToolAnnotations, ToolBuilder, ToolError, ToolOutput,
};
pub use transport::Ending;
