//! Argument values to argv: one value is one argv element (or the whole right side of
//! `--opt={x}`), never split, never joined, never read by a shell.
//!
//! The values have passed the tool's schema already (types, lengths, ranges, patterns,
//! enums). What remains needs the file system, the template or the program: defaults, path
//! confinement, refusing values an option parser would take for an option, and refusing values
//! the program reads as more than data wherever they stand, `--` or not (find's expressions,
//! make's and awk's assignments, `@file` response files: the tool's
//! [`crate::manifest::risk::OperandRules`]). Every refusal names the argument and the rule,
//! never the value.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::manifest::checked::{PathRule, StringRule};
use crate::manifest::{ArgKind, ArgSpec, CommandTool, Element, PathKind};

/// What the child gets from the arguments.
#[derive(Debug, Default, Eq, PartialEq)]
pub struct Invocation {
    /// argv after the program.
    pub args: Vec<OsString>,
    /// Bytes for the child's stdin, if an argument goes there.
    pub stdin: Option<Vec<u8>>,
}

/// Why a call's arguments cannot become an argv: the sentence the model reads after
/// "Invalid arguments: ", naming the argument (its name is the manifest's, never the peer's
/// value).
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// The template names an argument the tool does not declare (a manifest checked at load
    /// never does).
    #[error("The tool is misconfigured.")]
    Misconfigured,
    /// A required argument is missing.
    #[error("`{name}` is required.")]
    Required {
        /// The argument.
        name: String,
    },
    /// A value the program would read as something other than data (an expression, an
    /// assignment, a response file): the sentence says which.
    #[error("`{name}` {rule}")]
    Operand {
        /// The argument.
        name: String,
        /// Why.
        rule: &'static str,
    },
    /// A value of the wrong JSON type.
    #[error("`{name}` has the wrong type.")]
    WrongType {
        /// The argument.
        name: String,
    },
    /// An integer outside its range.
    #[error("`{name}` must be between {minimum} and {maximum}.")]
    OutOfRange {
        /// The argument.
        name: String,
        /// The least value allowed.
        minimum: i64,
        /// The greatest value allowed.
        maximum: i64,
    },
    /// A NUL in a string.
    #[error("`{name}` must not contain NUL characters.")]
    Nul {
        /// The argument.
        name: String,
    },
    /// A NUL in an item of a list.
    #[error("`{name}` items must not contain NUL characters.")]
    NulItem {
        /// The argument.
        name: String,
    },
    /// A value starting with `-` where the program reads options.
    #[error("`{name}` must not start with '-': the command would read it as an option.")]
    LeadingDash {
        /// The argument.
        name: String,
    },
    /// A path outside the tool's directory, missing, or of the wrong kind.
    #[error("`{name}` must name {existing} {what} inside the tool's directory.")]
    Path {
        /// The argument.
        name: String,
        /// `"an existing"` or `"a"`.
        existing: &'static str,
        /// `"file"`, `"directory"` or `"file or directory"`.
        what: &'static str,
    },
}

/// Builds the argv of `tool` from `arguments`.
///
/// # Errors
///
/// An [`ArgumentError`]: its `Display` is a sentence for the model naming the argument and
/// the rule it broke.
pub fn build(
    tool: &CommandTool,
    arguments: &Map<String, Value>,
) -> Result<Invocation, ArgumentError> {
    let mut invocation = Invocation::default();
    for spec in &tool.args {
        if let ArgKind::String(rule) = &spec.kind
            && rule.stdin
            && let Some(value) = value_of(spec, arguments)
        {
            let text = string(spec, value)?;
            invocation.stdin = Some(text.as_bytes().to_vec());
        }
    }
    for element in &tool.template {
        match element {
            Element::Literal(text) => invocation.args.push(OsString::from(text)),
            Element::Value {
                arg,
                prefix,
                suffix,
                after_double_dash,
            } => {
                let spec = tool.args.get(*arg).ok_or(ArgumentError::Misconfigured)?;
                let Some(value) = value_of(spec, arguments) else {
                    if spec.required {
                        return Err(ArgumentError::Required {
                            name: spec.name.clone(),
                        });
                    }
                    continue;
                };
                // A value that starts its element can be read as an option (`{x}`, and `{x}.txt`
                // too: `--output=/etc/passwd` + `.txt`); after a prefix (`--opt=-x`) it is a value.
                let parsed_as_option = prefix.is_empty() && !after_double_dash;
                for piece in pieces(tool, spec, value, parsed_as_option)? {
                    if let Some(rule) = operand_refusal(tool, spec, prefix, &piece) {
                        return Err(ArgumentError::Operand {
                            name: spec.name.clone(),
                            rule,
                        });
                    }
                    let mut element = OsString::from(prefix);
                    element.push(piece);
                    element.push(suffix);
                    invocation.args.push(element);
                }
            }
        }
    }
    Ok(invocation)
}

/// The rule a piece breaks that the program would read as more than data, if any. Booleans
/// and integers are the manifest's flags and digits; a path starts with `./` or `/`, so only
/// an assignment (`./a=b` for make) can be made of it.
fn operand_refusal(
    tool: &CommandTool,
    spec: &ArgSpec,
    prefix: &str,
    piece: &OsString,
) -> Option<&'static str> {
    match &spec.kind {
        ArgKind::String(_) | ArgKind::Array { .. } | ArgKind::Path(_) => {}
        ArgKind::Integer { .. } | ArgKind::Boolean { .. } => return None,
    }
    // Every piece comes from a `str` value or from a path that resolved from one.
    let text = piece.to_string_lossy();
    tool.reading.operands.refusal(prefix, &text)
}

/// The caller's value, else the default.
fn value_of<'a>(spec: &'a ArgSpec, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
    match arguments.get(&spec.name) {
        Some(Value::Null) | None => spec.default.as_ref(),
        Some(value) => Some(value),
    }
}

/// The argv pieces one value becomes (several only for arrays, none for a false flag).
fn pieces(
    tool: &CommandTool,
    spec: &ArgSpec,
    value: &Value,
    parsed_as_option: bool,
) -> Result<Vec<OsString>, ArgumentError> {
    let name = &spec.name;
    let wrong_type = || ArgumentError::WrongType { name: name.clone() };
    Ok(match &spec.kind {
        ArgKind::String(rule) => {
            let text = string(spec, value)?;
            vec![OsString::from(guard_dash(
                name,
                rule,
                text,
                parsed_as_option,
            )?)]
        }
        ArgKind::Integer { minimum, maximum } => {
            let n = value.as_i64().ok_or_else(wrong_type)?;
            if n < *minimum || n > *maximum {
                return Err(ArgumentError::OutOfRange {
                    name: name.clone(),
                    minimum: *minimum,
                    maximum: *maximum,
                });
            }
            vec![OsString::from(n.to_string())]
        }
        ArgKind::Boolean { flag } => {
            let on = value.as_bool().ok_or_else(wrong_type)?;
            match flag {
                Some(flag) if on => vec![OsString::from(flag)],
                Some(_) => Vec::new(),
                None => vec![OsString::from(if on { "true" } else { "false" })],
            }
        }
        ArgKind::Path(rule) => {
            let text = string(spec, value)?;
            let resolved = resolve(name, rule, text)?;
            vec![relative_to(&tool.workdir, resolved)]
        }
        ArgKind::Array { items, .. } => {
            let values = value.as_array().ok_or_else(wrong_type)?;
            let mut out = Vec::with_capacity(values.len());
            for item in values {
                let text = item.as_str().ok_or_else(wrong_type)?;
                if text.contains('\0') {
                    return Err(ArgumentError::NulItem { name: name.clone() });
                }
                out.push(OsString::from(guard_dash(
                    name,
                    items,
                    text,
                    parsed_as_option,
                )?));
            }
            out
        }
    })
}

fn string<'a>(spec: &ArgSpec, value: &'a Value) -> Result<&'a str, ArgumentError> {
    let text = value.as_str().ok_or_else(|| ArgumentError::WrongType {
        name: spec.name.clone(),
    })?;
    if text.contains('\0') {
        return Err(ArgumentError::Nul {
            name: spec.name.clone(),
        });
    }
    Ok(text)
}

/// Refuses a value starting with `-` where an option parser would read it as an option
/// (`-rf`, `--output=/etc/passwd`), unless the argument allows it.
fn guard_dash<'a>(
    name: &str,
    rule: &StringRule,
    text: &'a str,
    parsed_as_option: bool,
) -> Result<&'a str, ArgumentError> {
    if parsed_as_option && !rule.allow_leading_dash && text.starts_with('-') {
        return Err(ArgumentError::LeadingDash {
            name: name.to_owned(),
        });
    }
    Ok(text)
}

/// A resolved path as the child should see it: relative to its working directory when inside
/// it (`./src/main.rs`: shorter output, no host paths shown to the agent), always starting
/// with `./` or `/` so that no file name can be read as an option.
fn relative_to(workdir: &Path, resolved: PathBuf) -> OsString {
    match resolved.strip_prefix(workdir) {
        Ok(inside) if inside.as_os_str().is_empty() => OsString::from("."),
        Ok(inside) => Path::new(".").join(inside).into_os_string(),
        Err(_) => resolved.into_os_string(),
    }
}

/// Resolves a path under the rule's root: a relative one against the root, an absolute one as
/// it is. Symlinks are followed and the result must still be under the root. One message
/// covers "missing" and "outside", absolute or not: telling them apart would let an agent
/// probe which files exist outside the root.
fn resolve(name: &str, rule: &PathRule, text: &str) -> Result<PathBuf, ArgumentError> {
    let what = match rule.kind {
        PathKind::File => "file",
        PathKind::Dir => "directory",
        PathKind::Any => "file or directory",
    };
    let refused = || ArgumentError::Path {
        name: name.to_owned(),
        existing: if rule.must_exist { "an existing" } else { "a" },
        what,
    };
    if text.is_empty() {
        return Err(refused());
    }
    let relative = Path::new(text);
    // `join` keeps an absolute path as it is.
    let joined = rule.root.join(relative);
    let resolved = if rule.must_exist {
        std::fs::canonicalize(&joined).map_err(|_| refused())?
    } else {
        let Some(Component::Normal(file)) = relative.components().next_back() else {
            return Err(refused());
        };
        let parent = joined.parent().ok_or_else(refused)?;
        let full = std::fs::canonicalize(parent)
            .map_err(|_| refused())?
            .join(file);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.file_type().is_symlink() => {
                std::fs::canonicalize(&full).map_err(|_| refused())?
            }
            _ => full,
        }
    };
    if !resolved.starts_with(&rule.root) {
        return Err(refused());
    }
    let exists_as_wanted = match rule.kind {
        PathKind::File => resolved.is_file(),
        PathKind::Dir => resolved.is_dir(),
        PathKind::Any => resolved.exists(),
    };
    if rule.must_exist && !exists_as_wanted {
        return Err(refused());
    }
    if !rule.must_exist && resolved.exists() && !exists_as_wanted {
        return Err(refused());
    }
    Ok(resolved)
}
