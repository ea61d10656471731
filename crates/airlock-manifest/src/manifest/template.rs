//! The checked argv template of a command tool and its declared arguments: the types the
//! manifest check builds, the risk checks read and the command runner fills.
//!
//! Nothing here reads the raw manifest; a value of these types comes from the check in
//! `checked`, which proves its rules ran.

use std::path::PathBuf;

use regex::Regex;
use serde_json::Value;

/// One element of an argv template.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum Element {
    /// Passed as written.
    Literal(String),
    /// An argument's value: the whole element (`{x}`), or inside it (`--opt={x}`).
    Value {
        /// Index into [`CommandTool::args`](super::CommandTool::args).
        arg: usize,
        /// Text before the value (`--opt=`), empty for a whole element.
        prefix: String,
        /// Text after the value; only with the accepted risk `embedded_placeholder`.
        suffix: String,
        /// Whether a literal `--` comes earlier in the template (no option parsing after it).
        after_double_dash: bool,
    },
}

/// One declared argument.
#[derive(Debug)]
pub struct ArgSpec {
    /// Its name (a key of `arguments`).
    pub name: String,
    /// What it says about itself.
    pub description: Option<String>,
    /// Whether the caller must give it.
    pub required: bool,
    /// Used when the caller does not give it.
    pub default: Option<Value>,
    /// Its type and rules.
    pub kind: ArgKind,
}

/// An argument's type and rules.
#[derive(Debug)]
pub enum ArgKind {
    /// A string.
    String(StringRule),
    /// An integer in a range.
    Integer {
        /// Smallest accepted.
        minimum: i64,
        /// Largest accepted.
        maximum: i64,
    },
    /// A flag present or absent (whole element), or `true`/`false` (in `--opt={x}`).
    Boolean {
        /// The flag written when true.
        flag: Option<String>,
    },
    /// A path confined under a directory.
    Path(PathRule),
    /// A list of strings, each one argv element.
    Array {
        /// Rules for each item.
        items: StringRule,
        /// Fewest items.
        min_items: usize,
        /// Most items.
        max_items: usize,
    },
}

/// Rules for a string value.
#[derive(Debug)]
pub struct StringRule {
    /// Fewest characters.
    pub min_length: usize,
    /// Most characters.
    pub max_length: usize,
    /// A pattern the value must match (Rust regex syntax, unanchored).
    pub pattern: Option<(Regex, String)>,
    /// The only values allowed.
    pub values: Option<Vec<String>>,
    /// Whether a value may start with `-` where an option parser would see it.
    pub allow_leading_dash: bool,
    /// Whether the value goes to the child's stdin instead of argv.
    pub stdin: bool,
}

/// Rules for a path value.
#[derive(Debug)]
pub struct PathRule {
    /// The directory the path must stay under (canonical).
    pub root: PathBuf,
    /// Whether the path must exist.
    pub must_exist: bool,
    /// What it may name.
    pub kind: PathKind,
}

/// What a path may name.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum PathKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Either.
    Any,
}

impl StringRule {
    /// Whether `value` passes the rule (used on manifest defaults; agents' values are checked
    /// by the generated schema).
    pub(super) fn admits(&self, value: &str) -> bool {
        let chars = value.chars().count();
        chars >= self.min_length
            && chars <= self.max_length
            && self
                .pattern
                .as_ref()
                .is_none_or(|(regex, _)| regex.is_match(value))
            && self
                .values
                .as_ref()
                .is_none_or(|values| values.iter().any(|v| v == value))
    }
}

/// Whether `name` may name an argument: 1 to 64 of `A-Z a-z 0-9 _`.
pub(super) fn valid_arg_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
