//! What a server tells the model, reviewed: the rules `airlock audit` (the `metadata`
//! category), `airlock check` (a manifest's descriptions) and `airlock serve` (the catalog
//! digest it publishes) share.
//!
//! A client hands the model every name, title, description and schema a server lists, and
//! the text of every result; a human approving the server reads a rendering of the same text.
//! The attacks here live in the gap between the two: characters a terminal or a web view does
//! not show (format and bidi controls, tag characters, stray variation selectors, terminal
//! escapes, long runs of blank space), and sentences addressed to the model instead of the
//! user (read a secret, hide this from the user, ignore your instructions, call another tool).
//!
//! What it trusts: nothing in the text. Every rule is a pure function of the text (no model,
//! no network, no clock), linear in its length, and the rule set carries a version
//! ([`RULESET_VERSION`]) so a finding can be traced to the rules that made it.
//!
//! # Layout
//!
//! - `rule`: the rules, their names, levels and help text.
//! - `text`: one string against the character and phrasing rules.
//! - `catalog`: a server's whole catalog (tools, prompts, resources, instructions) walked
//!   with JSON pointers, the schema and shadowing rules, the canonical digest, pins and their
//!   diff.

mod catalog;
mod rule;
mod text;

pub use catalog::{
    Catalog, MAX_DIFF_LINES, MAX_SPOTS, Pin, PinError, Place, Spot, review, review_result,
};
pub use rule::{Family, Level, Rule};
pub use text::{Hit, scan};

/// The version of the rule set: a change to what any rule matches changes it, so a baseline
/// or a CI log says which rules judged it.
pub const RULESET_VERSION: &str = "1";

/// A description longer than this many bytes is a finding: a human approving a server does
/// not read it all, and a long one hides a sentence for the model among many for people.
pub const MAX_DESCRIPTION_BYTES: usize = 4096;

/// Server instructions longer than this many bytes are a finding (as descriptions, with room
/// for a server that explains several tools).
pub const MAX_INSTRUCTIONS_BYTES: usize = 16_384;

/// A run of this many blank characters (spaces, tabs, line breaks) in one text is a finding:
/// it pushes what follows off a reviewer's screen.
pub const MIN_BLANK_RUN: usize = 40;

/// Characters of a server's text kept in a finding's excerpt.
pub const MAX_EXCERPT_CHARS: usize = 80;
