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
//! # A tool in a few lines
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! use airlock::schemars::{self, JsonSchema};
//! use airlock::{Server, Tool, ToolError};
//! use serde::Deserialize;
//!
//! /// Greets someone by name.
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! async fn greet(args: Greet) -> Result<String, ToolError> {
//!     Ok(format!("Hello, {}!", args.name))
//! }
//!
//! fn main() -> ExitCode {
//!     // The tool's description is `Greet`'s doc comment; its input schema, `Greet`'s schema.
//!     match Server::builder("greeter", "1.0.0").tool(Tool::builder("greet").handler(greet)).build() {
//!         Ok(server) => server.run_stdio(),
//!         Err(_) => ExitCode::FAILURE,
//!     }
//! }
//! ```
//!
//! # The public API
//!
//! For a CLI author: [`Server`] and its [`ServerBuilder`], [`Tool`] and its [`ToolBuilder`]
//! with one handler shape ([`ToolBuilder::handler`] takes `Fn(Args)` or
//! `Fn(Args, CallContext)`, see [`HandlerFn`]), results through [`IntoToolOutput`]
//! ([`ToolOutput`], [`Content`], [`Structured`], [`ToolError`]), [`Limits`] and [`Rate`],
//! prompts ([`Prompt`], [`PromptBuilder`], [`PromptMessage`], [`Role`]), resources
//! ([`Resource`], [`ResourceBuilder`], [`ResourceBody`]), questions a tool asks the client
//! through its [`CallContext`] ([`Elicitation`], [`Elicited`], [`Sampling`], [`Sampled`],
//! [`Root`], [`Capability`], [`AskError`], [`FormError`]), the audit record [`CallLog`], and
//! [`telemetry`]. For an untyped tool (a schema given as
//! JSON): [`Handler`]. For a transport author: [`transport`] ([`transport::serve`] over any
//! byte stream, the sans-I/O [`transport::Engine`] and the calls it hands out; Streamable HTTP
//! with the `http` feature). [`limits`] documents every bound. `schemars`, `secrecy` and
//! `serde_json` are re-exported so that argument types derive against the versions this crate
//! reads, and secrets are handed over in its own types.
//!
//! # Layout
//!
//! - [`limits`]: every bound on untrusted input, documented.
//! - `error`: `McpError` and the one mapping to wire error objects.
//! - `framing`: bytes to size-capped frames; knows no JSON.
//! - `envelope`: THE BOUNDARY — a frame to a checked message, or a rejection.
//! - `json`: the strict reader behind the envelope (depth, repeated keys): a one-pass reader of
//!   plain frames (`json::fast`) and serde_json with our visitors for every other frame.
//! - `id`: request ids, echoed verbatim.
//! - `variables`: environment variable names, one rule for every place airlock takes one.
//! - `version`: the protocol revisions and what each allows.
//! - `lifecycle`: the legacy handshake state and modern per-request fields.
//! - `log_level`: the severities of log messages to the client.
//! - `dispatch`: the method table.
//! - `tools`: the registry, argument bounds, the schema validator, typed tools.
//! - `prompts`: prompts with typed arguments, checked before their handler runs.
//! - `resources`: fixed resources and URI templates, read by checked URIs.
//! - `completion`: bounded argument completion for prompts and templates.
//! - `pages`: the cursors of paged lists (`tools/list`, `prompts/list`).
//! - `output`: what a tool gives back (content blocks, structured content, `ToolError`).
//! - `handler`: the handler trait, its `CallContext`, and what a running call reports (progress,
//!   completion, tickets); shared by `tools`, `call`, the engine and the transports.
//! - `quota`: rate quotas (governor GCRA) decided before any work.
//! - `asking`: what a tool may ask the client (elicitation forms, sampling requests, roots),
//!   what the client declared it can answer, and the checks the client's answer passes
//!   before the tool sees it.
//! - `rounds`: a 2026-07-28 call's rounds of input: `input_required` results, the answers its
//!   retry brings, and the signed `requestState` that carries them from round to round.
//! - `call`: a tool call under its deadline and panic guard.
//! - `call_log`: the per-call audit record (one JSON line per tool call, no argument values).
//! - `engine`: the sans-I/O session tying the above together.
//! - [`transport`]: sessions over byte streams (stdio), and Streamable HTTP on hyper (both eras,
//!   CORS for listed origins, TLS with rustls) with the `http` feature; OAuth access tokens
//!   (JWTs checked against a JWKS, RFC 9728 metadata, scopes per tool) with the `oauth`
//!   feature; quotas, in-flight leases and legacy sessions shared by replicas in Redis with
//!   the `redis` feature.
//! - `server`: the builder and the one-call entry points.
//! - `signals`: SIGTERM and SIGINT end a server; SIGHUP reloads its tools (with a reload hook)
//!   or ends it; awaited on the session's runtime.
//! - `metrics` (the `metrics` feature): Prometheus counters and histograms in fixed arrays of
//!   atomics, labelled only by closed sets, rendered in the text format; with `http`, the
//!   endpoint that serves them on a listener of its own.
//! - `otel` (the `otel` feature): OpenTelemetry traces over OTLP/HTTP, a span per request by
//!   the MCP conventions and one per command run, kept as plain records on the hot path and
//!   exported by a thread of its own through a small blocking HTTP/1.1 client.
//! - `trace_context`: the W3C trace context a tool's run is told ([`TraceParent`]), and the
//!   strict reading of a peer's.
//! - [`telemetry`]: what may be logged; with the `logging` feature, a stderr subscriber and a
//!   panic hook that withholds panic messages.
//! - `test_server` (tests and fuzzing only): the one server of this crate's unit tests and
//!   fuzz targets.
//!
//! Only what the root re-exports, and the public modules above, are public API. What the
//! benchmarks and fuzz targets need besides sits in the hidden `__private` module: it follows
//! no compatibility promise. The modules stay private so that the compiler still sees dead code
//! in them.
//!
//! Commands declared in a manifest, their sandbox, their secrets and the redaction of those
//! from output, and `airlock audit` live in the `airlock-manifest` and `airlock-audit` crates
//! of this workspace.

#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        reason = "tests compute expected values freely; the lint guards the shipped code"
    )
)]

mod asking;
mod call;
mod call_log;
mod completion;
mod dispatch;
mod engine;
mod envelope;
mod error;
mod framing;
#[cfg(any(test, fuzzing))]
pub mod fuzzing;
mod handler;
mod id;
mod json;
mod lifecycle;
pub mod limits;
mod log_level;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
mod output;
mod pages;
mod prompts;
mod quota;
mod resources;
mod response;
mod rounds;
mod server;
mod signals;
mod so_far;
mod state;
mod tasks;
pub mod telemetry;
#[cfg(any(test, fuzzing))]
mod test_server;
mod tools;
mod trace_context;
pub mod transport;
pub mod variables;
mod version;

pub use asking::{AskError, Elicitation, Elicited, FormError, Root, Sampled, Sampling};
pub use call_log::{
    CallLog, ConnectionNote, DenialKind, DenialNote, DenialSource, DenialsNote, NetworkNote,
    Rotation, RunNote,
};
pub use error::Capability;
pub use handler::{BoxFuture, CallContext, Handler, LogLevel};
#[cfg(feature = "http")]
pub use limits::HttpLimits;
pub use limits::{Limits, Rate};
pub use output::{Content, ResourceBody, ToolError, ToolOutput};
pub use prompts::{Prompt, PromptBuilder, PromptMessage, Role};
pub use resources::{Resource, ResourceBuilder, ResourceUpdates, is_invisible};
pub use server::{Server, ServerBuilder};
pub use so_far::OutputSoFar;
pub use state::ReloadError;
pub use tools::schema::SchemaError;
pub use tools::{
    BuildError, HandlerFn, IntoToolOutput, NoArguments, Structured, TaskMode, Tool,
    ToolAnnotations, ToolBuilder, ToolName,
};
pub use trace_context::TraceParent;

/// The `schemars` this crate derives schemas with. Derive `JsonSchema` through it
/// (`use airlock::schemars::{self, JsonSchema};`, which also names the crate the derive's code
/// refers to), so that a program that depends on another version of schemars still has
/// argument types this crate accepts.
pub use schemars;
/// The `secrecy` of the secrets this crate takes (`SecretString` tokens and secrets,
/// `SecretSlice` keys): use it to make them, so that a program on another secrecy version
/// still hands this crate its own types.
pub use secrecy;
/// The `serde_json` of tool arguments and results (what an untyped [`Handler`] receives).
pub use serde_json;

/// Internals the benchmarks and tests of this workspace reach; not public API, no
/// compatibility promise. Each item is named here, so the rest of each module stays private
/// and the compiler still reports what nothing uses.
#[doc(hidden)]
pub mod __private {
    pub use crate::envelope::{Rejection, parse as parse_envelope};
    pub use crate::error::McpError;
    pub use crate::framing::split_all;
    pub use crate::quota::{QuotaClock, Quotas};
    pub use crate::tools::arguments::check as check_arguments;
}

/// The library guide's code blocks, compiled by `cargo test --doc`: its examples must build
/// against this API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/LIBRARY-GUIDE.md")]
struct LibraryGuideExamples;
