//! Manifests: an operator's list of the commands agents may run, and under which rules.
//!
//! A manifest is TOML. `raw` mirrors the file; [`checked`] holds what survived validation
//! (programs resolved to absolute paths, templates parsed, risky shapes refused, environment
//! read). [`load`], [`load_default`] and [`parse`] are the only ways to get a [`Manifest`].
//! The operator is trusted, but the file is still validated: a mistake fails at start with a
//! message naming the file, line and column, the tool, the field and the rule.
//!
//! Relative paths in a manifest file (`workdir`, `within`, a program with a `/`) are resolved
//! against the directory holding the file; in the embedded default manifest, against the
//! directory airlock was started in.

pub mod checked;
mod raw;
pub mod risk;

use std::io::Read;
use std::path::Path;

pub use checked::{ArgKind, ArgSpec, CommandTool, Element, Manifest, PathKind};

use airlock::limits::MAX_MANIFEST_BYTES;

/// The manifest served when none is given: read-only tools over the current directory, built
/// on programs every Linux machine has.
pub const DEFAULT_MANIFEST: &str = include_str!("default.toml");

/// What went wrong with a manifest: where, in which tool and field, and which rule.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ManifestError {
    source_name: String,
    position: Option<(usize, usize)>,
    tool: Option<String>,
    field: Option<String>,
    rule: String,
}

impl ManifestError {
    /// The rule that was broken.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// The field, if known.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The tool, if the error is inside one.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// Line and column (1-based), when known.
    pub fn position(&self) -> Option<(usize, usize)> {
        self.position
    }

    fn render(&self) -> String {
        let mut text = self.source_name.clone();
        if let Some((line, column)) = self.position {
            text.push_str(&format!(":{line}:{column}"));
        }
        text.push_str(": ");
        if let Some(tool) = &self.tool {
            text.push_str(&format!("tool `{tool}`: "));
        }
        if let Some(field) = &self.field {
            text.push_str(&format!("`{field}`: "));
        }
        text.push_str(&self.rule);
        text
    }
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
        rule: &str,
    ) -> ManifestError {
        ManifestError {
            source_name: self.source.to_owned(),
            position: offset.map(|offset| line_column(self.text, offset)),
            tool: tool.map(str::to_owned),
            field: Some(field.to_owned()),
            rule: rule.to_owned(),
        }
    }
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count().saturating_add(1);
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count())
        .saturating_add(1);
    (line, column)
}

/// Reads and checks the manifest at `path`.
///
/// # Errors
///
/// A [`ManifestError`] if the file cannot be read or breaks a rule.
pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
    let source = path.display().to_string();
    let unreadable = |rule: String| ManifestError {
        source_name: source.clone(),
        position: None,
        tool: None,
        field: None,
        rule,
    };
    let file = std::fs::File::open(path)
        .map_err(|error| unreadable(format!("cannot be opened ({:?})", error.kind())))?;
    let mut text = String::new();
    file.take(MAX_MANIFEST_BYTES.saturating_add(1))
        .read_to_string(&mut text)
        .map_err(|error| {
            unreadable(format!("cannot be read as UTF-8 text ({:?})", error.kind()))
        })?;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_MANIFEST_BYTES {
        return Err(unreadable(format!(
            "is larger than {MAX_MANIFEST_BYTES} bytes"
        )));
    }
    let base = std::fs::canonicalize(path)
        .ok()
        .and_then(|full| full.parent().map(Path::to_path_buf))
        .ok_or_else(|| unreadable("has no parent directory".to_owned()))?;
    parse(&text, &source, &base)
}

/// Checks the embedded default manifest against the current directory.
///
/// # Errors
///
/// A [`ManifestError`] if a program it needs is missing from this machine.
pub fn load_default() -> Result<Manifest, ManifestError> {
    let refused = |rule: String| ManifestError {
        source_name: "<embedded default>".to_owned(),
        position: None,
        tool: None,
        field: None,
        rule,
    };
    let base = std::env::current_dir().map_err(|error| {
        refused(format!(
            "the current directory cannot be read ({:?})",
            error.kind()
        ))
    })?;
    let base = std::fs::canonicalize(&base).unwrap_or(base);
    if let Some(why) = unsafe_default_root(&base, std::env::var_os("HOME").as_deref()) {
        return Err(refused(format!(
            "will not serve {} with the default manifest: {why}. Start airlock in the directory \
             to serve (`cd my-project && airlock serve`), or pass a manifest (`airlock serve \
             --manifest tools.toml`; `airlock check` shows what it grants)",
            base.display()
        )));
    }
    parse(DEFAULT_MANIFEST, "<embedded default>", &base)
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
    let raw: raw::RawManifest = toml::from_str(text).map_err(|error| ManifestError {
        source_name: source.to_owned(),
        position: error.span().map(|span| line_column(text, span.start)),
        tool: None,
        field: None,
        rule: error.message().trim().to_owned(),
    })?;
    checked::check(raw, source, text, base)
}

#[cfg(test)]
mod tests;
