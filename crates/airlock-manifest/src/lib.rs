//! airlock-manifest: a command-line program's commands as MCP tools, declared in a manifest
//! and run in a kernel sandbox.
//!
//! Built on the `airlock` library's public API only, like any other user of it: a manifest's
//! tools become ordinary [`airlock::Tool`]s whose handler builds an argv, runs it confined,
//! and returns its bounded, redacted output.
//!
//! ```text
//! TOML ─▶ manifest (raw → checked, risk) ─▶ command (argv, reply) ─▶ process ─▶ sandbox
//! ```
//!
//! # Layout
//!
//! - [`manifest`]: an operator's TOML list of commands, checked (raw → checked).
//! - [`limits`]: the bounds of manifests, command output and the sandbox, each with its reason.
//! - `locate`: the programs and directories a manifest names, found once at load.
//! - [`secrets`]: secret values in `secrecy` types, and their redaction from output.
//! - [`command`]: a manifest tool as a handler: argv building, output, redaction; a manifest
//!   prompt and resource root as the library's prompts and resources.
//! - [`files`]: a resource root's files, read confined beneath the root (`openat2`).
//! - [`process`]: THE spawn site — argv only, nothing inherited, process groups, output caps.
//! - [`sandbox`]: the second wall, default deny — a file system view holding only the grants,
//!   Landlock, a seccomp allowlist, namespaces, and budgets per call.
//! - `plan` (feature `serve`): what `airlock serve` serves, as values: the sandbox gate, the
//!   variables kept from tools, the audit record, the HTTP configuration, the reload.

#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        reason = "tests compute expected values freely; the lint guards the shipped code"
    )
)]

pub mod command;
pub mod files;
#[cfg(any(test, fuzzing))]
pub mod fuzzing;
pub mod limits;
mod locate;
pub mod manifest;
#[cfg(feature = "serve")]
pub mod plan;
pub mod process;
pub mod sandbox;
pub mod secrets;
