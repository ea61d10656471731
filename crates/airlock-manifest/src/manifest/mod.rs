//! Manifests: an operator's list of the commands agents may run, and under which rules.
//!
//! A manifest is TOML. `raw` mirrors the file; [`checked`] holds what survived validation
//! (programs resolved to absolute paths, templates parsed, risky shapes refused, environment
//! read), with its parts in modules of their own: `template` (the checked argv template and
//! argument types, which `risk` reads), `arguments` and `argv` (reading those from the file),
//! `bounds` (limits, quotas, deadlines, resources, the shared store's settings), `surface`
//! (`[[prompt]]` and `[[resource]]`), `system` (the host's trees a sandboxed command is never
//! given or may never write), `literal_paths` (fixed paths of a template the sandbox would
//! not let the command reach), `compressor` (what GNU tar runs through `/bin/sh` for its
//! compression options, which the tool's `exec` must grant), `shape` (every unknown key and
//! type error of the file at once, with "did you mean"), `describe` (the `inputSchema` and
//! `airlock check`'s account) and `told` (what the tools' texts tell the model, against the
//! shared metadata rules). [`load`], [`load_default`] and [`parse`] are the only ways to get
//! a [`Manifest`].
//! The operator is trusted, but the file is still validated: a mistake fails at start with a
//! message naming the file, line and column, the tool, the field and the rule.
//!
//! Relative paths in a manifest file (`workdir`, `within`, a program with a `/`) are resolved
//! against the directory holding the file; in the embedded default manifest, against the
//! directory airlock was started in.

mod arguments;
mod argv;
mod bounds;
pub mod checked;
mod compressor;
mod defaults;
mod describe;
mod literal_paths;
mod raw;
pub mod risk;
mod rule;
mod schema;
mod shape;
mod surface;
mod system;
mod template;
mod told;

use std::io::Read;

use serde::Deserialize as _;
use std::path::Path;

pub use crate::locate::ProgramNotFound;
pub use checked::{ArgKind, ArgSpec, CommandTool, Element, Manifest, PathKind, StoreSettings};
pub(crate) use describe::input_schema;
pub use rule::{ArgumentRule, CompressorRule, ExpandRule, ListingRule, Rule, TemplateRule};
pub use schema::{SCHEMA_FILE, json_schema};
pub use surface::{PromptArgument, PromptSpec, PromptText, ResourceFile, ResourceRoot, TextPart};

use crate::limits::MAX_MANIFEST_BYTES;

/// The manifest served when none is given: read-only tools over the current directory, built
/// on programs every Linux machine has.
pub const DEFAULT_MANIFEST: &str = include_str!("default.toml");

/// What went wrong with a manifest: where, in which tool and field, and which rule; with the
/// other errors found in the same pass, so that one `airlock check` lists them all.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error("{}", self.render_all())]
pub struct ManifestError {
    source_name: String,
    /// Line and column; `u32` keeps the error small (it travels in every check's `Result`).
    position: Option<(u32, u32)>,
    tool: Option<String>,
    /// What `tool` names (one byte: the error stays small).
    entry: Entry,
    field: Option<Box<str>>,
    /// Boxed: the error travels in every check's `Result`, and the rule may hold paths.
    rule: Box<Rule>,
    /// Further errors of the same manifest, in file order (boxed: most errors come alone, and
    /// the error travels in every `Result` of the checks).
    also: Box<[ManifestError]>,
}

impl ManifestError {
    /// The rule that was broken.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The field, if known.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The tool (or prompt, or resource), if the error is inside one.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// Line and column (1-based), when known.
    pub fn position(&self) -> Option<(usize, usize)> {
        self.position.map(|(line, column)| {
            (
                usize::try_from(line).unwrap_or(usize::MAX),
                usize::try_from(column).unwrap_or(usize::MAX),
            )
        })
    }

    /// Every error found, this one first.
    pub fn all(&self) -> impl Iterator<Item = &ManifestError> {
        std::iter::once(self).chain(&*self.also)
    }

    /// Every error of `errors` on its own, each followed by those it held.
    fn flattened(errors: Vec<ManifestError>) -> Vec<ManifestError> {
        errors
            .into_iter()
            .flat_map(|mut error| {
                let rest = std::mem::take(&mut error.also).into_vec();
                std::iter::once(error).chain(rest)
            })
            .collect()
    }

    /// One error holding `errors` (the first leads), or `None` when there are none.
    pub(crate) fn combined(errors: Vec<ManifestError>) -> Option<ManifestError> {
        let mut errors = Self::flattened(errors).into_iter();
        let mut first = errors.next()?;
        let rest: Vec<ManifestError> = errors.collect();
        first.also = rest.into_boxed_slice();
        Some(first)
    }

    fn render_all(&self) -> String {
        let mut text = self.render();
        if !self.also.is_empty() {
            for error in &self.also {
                text.push('\n');
                text.push_str(&error.render());
            }
            text.push_str(&format!("\n({} errors)", self.also.len().saturating_add(1)));
        }
        text
    }

    fn render(&self) -> String {
        let mut text = self.source_name.clone();
        if let Some((line, column)) = self.position {
            text.push_str(&format!(":{line}:{column}"));
        }
        text.push_str(": ");
        if let Some(tool) = &self.tool {
            let entry = match self.entry {
                Entry::Tool => "tool",
                Entry::Prompt => "prompt",
                Entry::Resource => "resource",
            };
            text.push_str(&format!("{entry} `{tool}`: "));
        }
        if let Some(field) = &self.field {
            text.push_str(&format!("`{field}`: "));
        }
        text.push_str(&self.rule.to_string());
        text
    }
}

/// The kind of manifest entry an error is inside.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Entry {
    /// A `[[tool]]`.
    Tool,
    /// A `[[prompt]]`.
    Prompt,
    /// A `[[resource]]`.
    Resource,
}

/// A manifest's text and name, for turning byte offsets into positions.
pub(crate) struct Located<'a> {
    source: &'a str,
    text: &'a str,
}

impl Located<'_> {
    pub(crate) fn error(
        &self,
        offset: Option<usize>,
        tool: Option<&str>,
        field: &str,
        rule: impl Into<Rule>,
    ) -> ManifestError {
        self.error_in(Entry::Tool, offset, tool, field, rule)
    }

    /// [`Self::error`] inside an entry of kind `entry` named `name`.
    pub(crate) fn error_in(
        &self,
        entry: Entry,
        offset: Option<usize>,
        name: Option<&str>,
        field: &str,
        rule: impl Into<Rule>,
    ) -> ManifestError {
        ManifestError {
            source_name: self.source.to_owned(),
            position: offset.map(|offset| line_column(self.text, offset)),
            tool: name.map(str::to_owned),
            entry,
            field: Some(field.into()),
            rule: Box::new(rule.into()),
            also: Box::default(),
        }
    }
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count().saturating_add(1);
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count())
        .saturating_add(1);
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

/// A TOML type error made plainer: a number or boolean written as a string is named, with
/// the line written the right way.
fn with_hint(message: &str, text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let expects_number = [
        "expected i64",
        "expected u64",
        "expected i32",
        "expected u32",
    ]
    .iter()
    .any(|expected| message.contains(expected));
    let expects_bool = message.contains("expected a boolean");
    let quoted = message.starts_with("invalid type: string");
    if !(quoted && (expects_number || expects_bool)) {
        return message.to_owned();
    }
    let Some(value) = message.split('"').nth(1) else {
        return message.to_owned();
    };
    let quoted_value = format!("\"{value}\"");
    // The key: inside the spanned text (an inline table), else at the end of the line
    // before the value.
    let spanned = span
        .clone()
        .and_then(|span| text.get(span))
        .unwrap_or_default();
    let before = match spanned.find(&quoted_value) {
        Some(at) if spanned.starts_with('{') => spanned.get(..at),
        _ => span
            .and_then(|span| text.get(..span.start))
            .and_then(|before| before.rsplit('\n').next()),
    };
    let key = before
        .and_then(|line| line.trim_end().strip_suffix('='))
        .and_then(|line| line.trim_end().rsplit([' ', '{', ',', '.']).next())
        .filter(|key| !key.is_empty());
    let kind = if expects_bool {
        "a boolean"
    } else {
        "a number"
    };
    let plain = if expects_bool {
        matches!(value, "true" | "false")
    } else {
        value.parse::<i64>().is_ok()
    };
    match (key, plain) {
        (Some(key), true) => {
            format!("{message}: `{key}` takes {kind}, written without quotes: {key} = {value}")
        }
        (Some(key), false) => format!("{message}: `{key}` takes {kind}"),
        (None, true) => format!("{message}: write {value} without quotes"),
        (None, false) => message.to_owned(),
    }
}

/// Reads and checks the manifest at `path`.
///
/// # Errors
///
/// A [`ManifestError`] if the file cannot be read or breaks a rule.
pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
    let source = path.display().to_string();
    let unreadable = |rule: Rule| ManifestError {
        source_name: source.clone(),
        position: None,
        tool: None,
        entry: Entry::Tool,
        field: None,
        rule: Box::new(rule),
        also: Box::default(),
    };
    let file =
        std::fs::File::open(path).map_err(|error| unreadable(Rule::CannotOpen(error.kind())))?;
    let mut text = String::new();
    file.take(MAX_MANIFEST_BYTES.saturating_add(1))
        .read_to_string(&mut text)
        .map_err(|error| unreadable(Rule::NotText(error.kind())))?;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_MANIFEST_BYTES {
        return Err(unreadable(Rule::TooLarge));
    }
    let base = std::fs::canonicalize(path)
        .ok()
        .and_then(|full| full.parent().map(Path::to_path_buf))
        .ok_or_else(|| unreadable(Rule::NoParent))?;
    parse(&text, &source, &base)
}

/// Checks the embedded default manifest against the current directory.
///
/// # Errors
///
/// A [`ManifestError`] if a program it needs is missing from this machine.
pub fn load_default() -> Result<Manifest, ManifestError> {
    let refused = |rule: Rule| ManifestError {
        source_name: "<embedded default>".to_owned(),
        position: None,
        tool: None,
        entry: Entry::Tool,
        field: None,
        rule: Box::new(rule),
        also: Box::default(),
    };
    let base =
        std::env::current_dir().map_err(|error| refused(Rule::NoCurrentDirectory(error.kind())))?;
    let base = std::fs::canonicalize(&base).unwrap_or(base);
    if let Some(why) = unsafe_default_root(&base, std::env::var_os("HOME").as_deref()) {
        return Err(refused(Rule::UnsafeDefaultRoot { dir: base, why }));
    }
    parse(DEFAULT_MANIFEST, "<embedded default>", &base)
}

/// Why `dir` (canonical) is no directory to serve whole to an agent: `/`, the home directory or
/// one of its ancestors, or a system tree; `None` when it may be served. `airlock init` asks it
/// before writing a manifest whose tools work in `dir`.
pub fn unsafe_root(dir: &Path) -> Option<&'static str> {
    unsafe_default_root(dir, std::env::var_os("HOME").as_deref())
}

/// Why `dir` is no directory to serve whole to an agent by default: `/`, the home directory
/// or one of its ancestors, or a system tree (its configuration, its programs, its state).
fn unsafe_default_root(dir: &Path, home: Option<&std::ffi::OsStr>) -> Option<&'static str> {
    if dir == Path::new("/") {
        return Some("it is the root of the file system");
    }
    if let Some(home) = home.map(Path::new).filter(|home| home.is_absolute()) {
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
        if home.starts_with(dir) {
            return Some("it is the home directory, or holds it (keys, tokens, shell history)");
        }
    }
    const SYSTEM_TREES: &[&str] = &[
        "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
        "/run", "/sbin", "/sys", "/usr", "/var",
    ];
    SYSTEM_TREES
        .iter()
        .any(|tree| dir.starts_with(tree))
        .then_some("it is a system directory")
}

/// Checks manifest `text` named `source`, resolving relative paths against `base`.
///
/// # Errors
///
/// A [`ManifestError`] for the first rule broken.
pub fn parse(text: &str, source: &str, base: &Path) -> Result<Manifest, ManifestError> {
    let toml_error = |error: &toml::de::Error| ManifestError {
        source_name: source.to_owned(),
        position: error.span().map(|span| line_column(text, span.start)),
        tool: None,
        entry: Entry::Tool,
        field: None,
        rule: Box::new(Rule::Shape(with_hint(
            error.message().trim(),
            text,
            error.span(),
        ))),
        also: Box::default(),
    };
    let document = toml::de::DeTable::parse(text).map_err(|error| toml_error(&error))?;
    let raw = match raw::RawManifest::deserialize(toml::de::Deserializer::from(document.clone())) {
        Ok(raw) => raw,
        Err(first) => {
            // Deserialisation stops at the first error: each `[[tool]]`, and the rest of the
            // file without them, are read again on their own (`shape`), every unknown key of
            // each reported, to list them all, in line order.
            let mut shapes = Vec::new();
            let mut rest = document.into_inner();
            let mut good = Vec::new();
            if let Some(tools) = rest.remove("tool")
                && let toml::de::DeValue::Array(tools) = tools.into_inner()
            {
                for tool in tools {
                    good.extend(shape::read::<toml::Spanned<raw::RawTool>>(
                        tool,
                        &mut shapes,
                    ));
                }
            }
            let rest = toml::Spanned::new(0..text.len(), toml::de::DeValue::Table(rest));
            let others = shape::read::<raw::RawManifest>(rest, &mut shapes);
            let mut errors: Vec<ManifestError> = shapes
                .into_iter()
                .map(|shape| ManifestError {
                    source_name: source.to_owned(),
                    position: shape
                        .span
                        .as_ref()
                        .map(|span| line_column(text, span.start)),
                    tool: None,
                    entry: Entry::Tool,
                    field: None,
                    rule: Box::new(Rule::Shape(with_hint(&shape.message, text, shape.span))),
                    also: Box::default(),
                })
                .collect();
            // The tools that did deserialise are checked too: their errors join the list.
            if let Some(mut others) = others
                && !good.is_empty()
                && let Err(error) = {
                    others.tools = good;
                    checked::check(others, source, text, base)
                }
            {
                errors.push(error);
            }
            let mut errors = ManifestError::flattened(errors);
            // In line order; an error without a position (a rule across tools) last.
            errors.sort_by_key(|error| (error.position.is_none(), error.position));
            return Err(ManifestError::combined(errors).unwrap_or_else(|| toml_error(&first)));
        }
    };
    checked::check(raw, source, text, base)
}

#[cfg(test)]
mod tests;
