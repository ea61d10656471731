//! `[[prompt]]` and `[[resource]]` checked: prompts whose texts are parsed into literal text
//! and placeholders naming declared arguments, and resource roots listed once, at load.
//!
//! Trusts the raw file for its syntax only. A placeholder that names no declared argument, a
//! text beyond [`MAX_PROMPT_TEXT_BYTES`], a root that is a system tree or the home
//! directory's (see [`root_refusal`]), a URI prefix that is no plain `scheme://`: all fail the
//! load, with the file, line and rule, as every other manifest mistake does. A resource's URI
//! is its prefix and its path relative to the root, percent-encoded: never a host path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::limits::{
    DEFAULT_RESOURCE_FILE_BYTES, MAX_PROMPT_ARGUMENTS, MAX_PROMPT_MESSAGES,
    MAX_PROMPT_PLACEHOLDERS, MAX_PROMPT_TEXT_BYTES, MAX_RESOURCE_FILE_BYTES,
    MAX_RESOURCE_ROOT_DEPTH, MAX_RESOURCE_WALK_ENTRIES,
};
use airlock::limits::{MAX_RESOURCE_URI_BYTES, MAX_RESOURCES_COUNT};
use airlock::{Role, ToolName};

use super::raw::{RawPrompt, RawResource, RawRole};
use super::rule::{ListingRule, Rule};
use super::{Entry, Located, ManifestError};
use crate::files::{Entry as Listed, FileId, Root, Unlisted};

/// One checked `[[prompt]]`.
#[derive(Debug)]
pub struct PromptSpec {
    /// Its name (the rule of tool names).
    pub name: ToolName,
    /// Display title.
    pub title: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// Its arguments, in file order.
    pub arguments: Vec<PromptArgument>,
    /// Its messages, parsed.
    pub messages: Vec<PromptText>,
}

/// One declared argument of a prompt: text.
#[derive(Debug)]
pub struct PromptArgument {
    /// Its name (1 to 64 characters of `a-z A-Z 0-9 _`).
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Whether `prompts/get` must give it; an absent optional one becomes empty text.
    pub required: bool,
}

/// One message of a prompt: who says it, and its text as literal parts and placeholders.
#[derive(Debug)]
pub struct PromptText {
    /// Who says it.
    pub role: Role,
    /// The text, in order.
    pub parts: Vec<TextPart>,
}

/// A piece of a prompt message's text.
#[derive(Debug, Eq, PartialEq)]
pub enum TextPart {
    /// Text as written (`{{` and `}}` already made `{` and `}`).
    Literal(String),
    /// `{name}`: the value of the declared argument `name`.
    Argument(String),
}

impl PromptText {
    /// The text with each placeholder replaced by its argument's value from `values` (empty
    /// when absent), in one pass: a value is never looked at for placeholders itself.
    pub fn render(&self, values: &std::collections::BTreeMap<String, String>) -> String {
        let mut text = String::new();
        for part in &self.parts {
            match part {
                TextPart::Literal(literal) => text.push_str(literal),
                TextPart::Argument(name) => {
                    text.push_str(values.get(name).map_or("", String::as_str));
                }
            }
        }
        text
    }
}

/// One checked `[[resource]]`: its files, listed at load, and the root they are read from.
#[derive(Debug)]
pub struct ResourceRoot {
    /// Its name, the rule of tool names.
    pub name: String,
    /// Display title, given to each file.
    pub title: Option<String>,
    /// What the files are, given to each.
    pub description: Option<String>,
    /// The MIME type of every file, when said.
    pub mime_type: Option<String>,
    /// The URI prefix (`docs://`).
    pub prefix: String,
    /// The largest file read, in bytes.
    pub max_bytes: usize,
    /// The directory, held open: every read is confined beneath it.
    pub root: Arc<Root>,
    /// Its regular files, in sorted order.
    pub files: Vec<ResourceFile>,
}

/// One file of a resource root.
#[derive(Debug)]
pub struct ResourceFile {
    /// Its URI: the prefix and the relative path, each segment percent-encoded.
    pub uri: String,
    /// Its path relative to the root (never shown on the wire but as the URI and name).
    pub relative: PathBuf,
    /// Its relative path as text: the resource's name.
    pub name: String,
    /// The file it named at load: a read serves that file only.
    pub id: FileId,
}

/// Checks the `[[prompt]]` entries.
///
/// # Errors
///
/// Every entry's first broken rule.
pub(super) fn prompts(
    raw: Vec<toml::Spanned<RawPrompt>>,
    at: &Located<'_>,
) -> Result<Vec<PromptSpec>, ManifestError> {
    let mut errors = Vec::new();
    let mut names = BTreeSet::new();
    let mut prompts = Vec::with_capacity(raw.len());
    for entry in raw {
        let span = entry.span().start;
        let raw = entry.into_inner();
        let label = raw.name.clone();
        let fail = |field: &str, rule: Rule| {
            at.error_in(Entry::Prompt, Some(span), Some(&label), field, rule)
        };
        match prompt(raw) {
            Ok(prompt) => {
                if !names.insert(prompt.name.as_str().to_owned()) {
                    errors.push(fail("name", Rule::DuplicatePrompt));
                }
                prompts.push(prompt);
            }
            Err((field, rule)) => errors.push(fail(field, rule)),
        }
    }
    if prompts.len() > airlock::limits::MAX_PROMPTS_COUNT {
        errors.push(at.error(None, None, "[[prompt]]", Rule::TooManyPrompts));
    }
    match ManifestError::combined(errors) {
        Some(error) => Err(error),
        None => Ok(prompts),
    }
}

/// One prompt checked, or the field and rule it breaks.
fn prompt(raw: RawPrompt) -> Result<PromptSpec, (&'static str, Rule)> {
    let name = ToolName::parse(&raw.name).map_err(|_| ("name", Rule::Name))?;
    if raw.arguments.len() > MAX_PROMPT_ARGUMENTS {
        return Err(("arguments", Rule::TooManyPromptArguments));
    }
    let mut arguments: Vec<PromptArgument> = Vec::with_capacity(raw.arguments.len());
    for argument in raw.arguments {
        if !super::template::valid_arg_name(&argument.name) {
            return Err(("arguments", Rule::ArgumentName));
        }
        if arguments.iter().any(|other| other.name == argument.name) {
            return Err(("arguments", Rule::DuplicateArgument));
        }
        arguments.push(PromptArgument {
            name: argument.name,
            description: argument.description,
            required: argument.required,
        });
    }
    if raw.messages.is_empty() || raw.messages.len() > MAX_PROMPT_MESSAGES {
        return Err(("messages", Rule::PromptMessages));
    }
    let mut messages = Vec::with_capacity(raw.messages.len());
    let mut placeholders = 0_usize;
    for message in raw.messages {
        if message.text.len() > MAX_PROMPT_TEXT_BYTES {
            return Err(("messages", Rule::PromptText));
        }
        let parts = parse_text(&message.text).ok_or(("messages", Rule::PromptPlaceholder))?;
        for part in &parts {
            if let TextPart::Argument(name) = part {
                if !arguments.iter().any(|argument| &argument.name == name) {
                    return Err((
                        "messages",
                        Rule::UndeclaredPlaceholder { name: name.clone() },
                    ));
                }
                placeholders = placeholders.saturating_add(1);
            }
        }
        messages.push(PromptText {
            role: match message.role {
                RawRole::User => Role::User,
                RawRole::Assistant => Role::Assistant,
            },
            parts,
        });
    }
    if placeholders > MAX_PROMPT_PLACEHOLDERS {
        return Err(("messages", Rule::TooManyPlaceholders));
    }
    Ok(PromptSpec {
        name,
        title: raw.title,
        description: raw.description,
        arguments,
        messages,
    })
}

/// `text` as literal parts and `{name}` placeholders (`{{` and `}}` are literal braces), or
/// `None` for a brace that is neither (unclosed, empty, or around a name outside the rule).
fn parse_text(text: &str) -> Option<Vec<TextPart>> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '}' => return None,
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        c => name.push(c),
                    }
                }
                if !super::template::valid_arg_name(&name) {
                    return None;
                }
                if !literal.is_empty() {
                    parts.push(TextPart::Literal(std::mem::take(&mut literal)));
                }
                parts.push(TextPart::Argument(name));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(TextPart::Literal(literal));
    }
    Some(parts)
}

/// Checks the `[[resource]]` entries (their `root` already expanded): each root opened and
/// listed, every URI unique.
///
/// # Errors
///
/// Every entry's first broken rule.
pub(super) fn resources(
    raw: Vec<toml::Spanned<RawResource>>,
    at: &Located<'_>,
    base: &Path,
    home: Option<&Path>,
) -> Result<Vec<ResourceRoot>, ManifestError> {
    let mut errors = Vec::new();
    let mut uris = BTreeSet::new();
    let mut count = 0_usize;
    let mut roots = Vec::with_capacity(raw.len());
    for entry in raw {
        let span = entry.span().start;
        let raw = entry.into_inner();
        let label = raw.name.clone();
        let fail = |field: &str, rule: Rule| {
            at.error_in(Entry::Resource, Some(span), Some(&label), field, rule)
        };
        match resource(raw, base, home) {
            Ok(root) => {
                count = count.saturating_add(root.files.len());
                let repeated = root.files.iter().any(|file| !uris.insert(file.uri.clone()));
                if repeated {
                    errors.push(fail("uri", Rule::DuplicateUri));
                }
                roots.push(root);
            }
            Err((field, rule)) => errors.push(fail(field, rule)),
        }
    }
    if count > MAX_RESOURCES_COUNT {
        errors.push(at.error(None, None, "[[resource]]", Rule::TooManyResources));
    }
    match ManifestError::combined(errors) {
        Some(error) => Err(error),
        None => Ok(roots),
    }
}

/// One resource root checked and listed, or the field and rule it breaks.
fn resource(
    raw: RawResource,
    base: &Path,
    home: Option<&Path>,
) -> Result<ResourceRoot, (&'static str, Rule)> {
    if ToolName::parse(&raw.name).is_err() {
        return Err(("name", Rule::Name));
    }
    if !valid_prefix(&raw.uri) {
        return Err(("uri", Rule::ResourceUri));
    }
    let max_bytes = match raw.max_bytes {
        None => DEFAULT_RESOURCE_FILE_BYTES,
        Some(value) => usize::try_from(value)
            .ok()
            .filter(|value| (1..=MAX_RESOURCE_FILE_BYTES).contains(value))
            .ok_or(("max_bytes", Rule::ResourceMaxBytes))?,
    };
    let full = base.join(raw.root.get_ref());
    let dir = crate::locate::directory(base, raw.root.get_ref())
        .ok_or(("root", Rule::RootMissing { path: full }))?;
    if let Some(why) = root_refusal(&dir, home) {
        return Err(("root", why));
    }
    let root = Root::open(&dir).map_err(|_| ("root", Rule::RootUnopenable { dir: dir.clone() }))?;
    let files = list(&root, &dir, &raw.uri).map_err(|rule| ("root", rule.into()))?;
    Ok(ResourceRoot {
        name: raw.name,
        title: raw.title,
        description: raw.description,
        mime_type: raw.mime_type,
        prefix: raw.uri,
        max_bytes,
        root: Arc::new(root),
        files,
    })
}

/// Trees of other users' and the system's private data that a root may not be, hold or lie
/// inside, though a sandboxed command might be granted them: credentials' backups
/// (`/var/backups`), caches holding secrets (debconf's `passwords.dat` in `/var/cache`),
/// services' state, logs, mail and spools, root's home.
const PRIVATE_TREES: &[&str] = &[
    "/root",
    "/var/backups",
    "/var/cache",
    "/var/lib",
    "/var/log",
    "/var/mail",
    "/var/spool",
];

/// Trees shared by every user that a root may lie inside (a project of one's own) but may
/// not be or hold: each holds other users' files.
const SHARED_TREES: &[&str] = &["/home", "/tmp", "/var/tmp", "/run", "/mnt", "/media"];

/// Why `dir` (canonical) may not be a resource root, or `None`: a root is served whole to the
/// agent, so it passes what a sandbox `write` grant must (not `/`, not a system tree nor a
/// directory holding one, not an entry of the sandbox's fixed system list, not the home
/// directory, a directory holding it, or inside one of its dot-directories), and it must
/// not be, hold or lie inside `/proc`, `/sys` or `/dev`, which no sandbox grants, nor the
/// [`PRIVATE_TREES`]; nor be or hold one of the [`SHARED_TREES`], nor be any user's home
/// directory (a directory of `/home`).
pub(super) fn root_refusal(dir: &Path, home: Option<&Path>) -> Option<Rule> {
    let system =
        super::system::system_write_refusal(dir, super::system::fixed_system_entries(), home);
    let never = super::system::NEVER_GRANTED
        .iter()
        .chain(PRIVATE_TREES)
        .any(|tree| Path::new(tree).starts_with(dir) || dir.starts_with(tree));
    let shared = SHARED_TREES
        .iter()
        .any(|tree| Path::new(tree).starts_with(dir));
    // A user's home directory, whoever's: `HOME` names only the one airlock runs with.
    let a_home = dir.parent() == Some(Path::new("/home"));
    (system.is_some() || never || shared || a_home).then(|| Rule::RootRefused {
        dir: dir.to_path_buf(),
    })
}

/// Schemes a client acts on by itself (fetches, runs, opens, mounts or dials) or takes for a
/// host path: a resource URI is a name the server answers for, never one of those.
const ACTED_ON_SCHEMES: &[&str] = &[
    "about",
    "blob",
    "chrome",
    "data",
    "dav",
    "davs",
    "file",
    "ftp",
    "ftps",
    "git",
    "gopher",
    "http",
    "https",
    "irc",
    "javascript",
    "jar",
    "ldap",
    "ldaps",
    "mailto",
    "news",
    "nfs",
    "sftp",
    "sip",
    "smb",
    "sms",
    "ssh",
    "steam",
    "tel",
    "telnet",
    "vbscript",
    "view-source",
    "vnc",
    "ws",
    "wss",
    "xmpp",
];

/// Whether `prefix` is `scheme://` then segments of unreserved characters each ending in
/// `/`, with a lowercase scheme none of the [`ACTED_ON_SCHEMES`].
fn valid_prefix(prefix: &str) -> bool {
    let Some((scheme, path)) = prefix.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_lowercase())
        && scheme.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'.' | b'-')
        })
        && !ACTED_ON_SCHEMES.contains(&scheme);
    let path_ok = path.is_empty()
        || (path.ends_with('/')
            && path.split_terminator('/').all(|segment| {
                !segment.is_empty()
                    && segment != "."
                    && segment != ".."
                    && segment.bytes().all(unreserved)
            }));
    scheme_ok && path_ok && prefix.len() <= MAX_RESOURCE_URI_BYTES
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// The regular files under `root` (opened at `dir`, named in messages), sorted, each with
/// its URI under `prefix` and its identity: every directory is opened beneath the root
/// without following a link ([`Root::entries`]), names starting with `.` are skipped (files
/// and directories), and so are names that are not UTF-8 text free of control and invisible
/// characters ([`airlock::is_invisible`]) and directories below the root that cannot be
/// opened so (gone, a link, unreadable).
///
/// # Errors
///
/// Why the walk was given up: a directory deeper than [`MAX_RESOURCE_ROOT_DEPTH`], more than
/// [`MAX_RESOURCES_COUNT`] files or [`MAX_RESOURCE_WALK_ENTRIES`] entries, a directory that
/// cannot be read, a URI too long.
fn list(root: &Root, dir: &Path, prefix: &str) -> Result<Vec<ResourceFile>, ListingRule> {
    let mut files = Vec::new();
    let mut pending = vec![(PathBuf::new(), 0_usize)];
    let mut budget = MAX_RESOURCE_WALK_ENTRIES;
    while let Some((relative, depth)) = pending.pop() {
        let entries = match root.entries(&relative, &mut budget) {
            // A directory below the root that is gone, became a link or something else since
            // its parent was read, or that airlock may not read, is not served: skipped, so
            // that whoever can write under the root cannot stop the server from starting.
            Err(Unlisted::Io(errno))
                if !relative.as_os_str().is_empty()
                    && [
                        rustix::io::Errno::LOOP,
                        rustix::io::Errno::NOTDIR,
                        rustix::io::Errno::NOENT,
                        rustix::io::Errno::XDEV,
                        rustix::io::Errno::ACCESS,
                    ]
                    .contains(&errno) =>
            {
                continue;
            }
            other => other,
        };
        let entries = entries.map_err(|why| match why {
            Unlisted::TooMany => ListingRule::TooManyEntries {
                dir: dir.to_path_buf(),
            },
            Unlisted::Io(errno) => ListingRule::Unlistable {
                path: dir.join(&relative),
                kind: std::io::Error::from(errno).kind(),
            },
        })?;
        for entry in entries {
            let (name, id) = match entry {
                Listed::File(name, id) => (name, Some(id)),
                Listed::Dir(name) => (name, None),
                Listed::Other => continue,
            };
            if name.starts_with('.')
                || name
                    .chars()
                    .any(|c| c.is_control() || airlock::is_invisible(c))
            {
                continue;
            }
            let path = relative.join(&name);
            let Some(id) = id else {
                if depth >= MAX_RESOURCE_ROOT_DEPTH {
                    return Err(ListingRule::TooDeep {
                        path: dir.join(&path),
                    });
                }
                pending.push((path, depth.saturating_add(1)));
                continue;
            };
            if files.len() >= MAX_RESOURCES_COUNT {
                return Err(ListingRule::TooManyFiles {
                    dir: dir.to_path_buf(),
                });
            }
            let uri = uri_of(prefix, &path);
            if uri.len() > MAX_RESOURCE_URI_BYTES {
                return Err(ListingRule::UriTooLong {
                    path: dir.join(&path),
                });
            }
            let name = path.to_string_lossy().into_owned();
            files.push(ResourceFile {
                uri,
                relative: path,
                name,
                id,
            });
        }
    }
    files.sort_by(|a, b| a.uri.cmp(&b.uri));
    Ok(files)
}

/// `prefix` then `relative`'s segments joined by `/`, each percent-encoded but for the
/// unreserved characters.
fn uri_of(prefix: &str, relative: &Path) -> String {
    let mut uri = prefix.to_owned();
    let segments: Vec<String> = relative
        .components()
        .map(|segment| {
            let mut encoded = String::new();
            for b in segment.as_os_str().as_encoded_bytes() {
                if unreserved(*b) {
                    encoded.push(char::from(*b));
                } else {
                    encoded.push_str(&format!("%{b:02X}"));
                }
            }
            encoded
        })
        .collect();
    uri.push_str(&segments.join("/"));
    uri
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn text(parts: Vec<TextPart>) -> PromptText {
        PromptText {
            role: Role::User,
            parts,
        }
    }

    #[test]
    fn placeholders_and_doubled_braces_are_parsed_and_stray_braces_refused() {
        assert_eq!(
            parse_text("Review {change} {{literally}} for {focus}.").unwrap(),
            vec![
                TextPart::Literal("Review ".into()),
                TextPart::Argument("change".into()),
                TextPart::Literal(" {literally} for ".into()),
                TextPart::Argument("focus".into()),
                TextPart::Literal(".".into()),
            ]
        );
        assert_eq!(parse_text("").unwrap(), Vec::new());
        for bad in ["{", "}", "{}", "{a b}", "{a", "a}", "{é}", "{{a}", "{x-y}"] {
            assert!(parse_text(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn substitution_is_one_pass_and_an_absent_argument_is_empty() {
        let message = text(parse_text("[{a}] [{b}]").unwrap());
        let values = BTreeMap::from([("a".to_owned(), "{b} and {{b}}".to_owned())]);
        assert_eq!(message.render(&values), "[{b} and {{b}}] []");
    }

    fn raw_prompt(arguments: &[&str], texts: &[&str]) -> RawPrompt {
        RawPrompt {
            name: "p".into(),
            title: None,
            description: None,
            arguments: arguments
                .iter()
                .map(|name| super::super::raw::RawPromptArgument {
                    name: (*name).into(),
                    description: None,
                    required: false,
                })
                .collect(),
            messages: texts
                .iter()
                .map(|text| super::super::raw::RawPromptMessage {
                    role: RawRole::User,
                    text: (*text).into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_prompt_is_refused_for_an_undeclared_placeholder_or_crossed_bounds() {
        assert!(prompt(raw_prompt(&["a"], &["{a}"])).is_ok());
        let rule = |raw| prompt(raw).err();
        assert_eq!(
            rule(raw_prompt(&["a"], &["{b}"])),
            Some((
                "messages",
                Rule::UndeclaredPlaceholder {
                    name: "b".to_owned()
                }
            ))
        );
        assert_eq!(rule(raw_prompt(&[], &[])).map(|(f, _)| f), Some("messages"));
        assert_eq!(
            rule(raw_prompt(&["a", "a"], &["x"])).map(|(f, _)| f),
            Some("arguments")
        );
        assert_eq!(
            rule(raw_prompt(&["a-b"], &["x"])).map(|(f, _)| f),
            Some("arguments")
        );
        let long = "x".repeat(MAX_PROMPT_TEXT_BYTES + 1);
        assert_eq!(
            rule(raw_prompt(&[], &[&long])).map(|(f, _)| f),
            Some("messages")
        );
        let many = "{a}".repeat(MAX_PROMPT_PLACEHOLDERS + 1);
        assert_eq!(
            rule(raw_prompt(&["a"], &[&many])),
            Some(("messages", Rule::TooManyPlaceholders))
        );
        let names: Vec<String> = (0..=MAX_PROMPT_ARGUMENTS)
            .map(|i| format!("a{i}"))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            rule(raw_prompt(&names, &["x"])).map(|(f, _)| f),
            Some("arguments")
        );
    }

    #[test]
    fn uri_prefixes_are_plain_schemes_with_unreserved_segments() {
        for good in ["docs://", "docs://guide/", "my-docs+v2://a/b.c/"] {
            assert!(valid_prefix(good), "{good}");
        }
        for bad in [
            "docs:",
            "docs",
            "Docs://",
            "file://",
            "http://",
            "https://x/",
            "docs://guide",
            "docs://../",
            "docs://a//",
            "docs://a%2F/",
            "docs://{x}/",
            "1docs://",
            "://",
            "javascript://",
            "data://",
            "smb://",
            "ftp://",
            "vbscript://",
        ] {
            assert!(!valid_prefix(bad), "{bad}");
        }
    }

    #[test]
    fn uris_encode_every_segment_but_keep_the_slashes_between() {
        assert_eq!(
            uri_of("docs://", Path::new("a dir/ü%/file.md")),
            "docs://a%20dir/%C3%BC%25/file.md"
        );
    }

    #[test]
    fn a_root_may_not_be_a_system_tree_or_the_home_directory() {
        let home = Path::new("/home/op");
        for refused in [
            "/",
            "/etc",
            "/usr/share/doc",
            "/proc",
            "/proc/self",
            "/dev/shm",
            "/sys/kernel",
            "/home",
            "/home/op",
            "/home/op/.ssh",
            "/home/op/.config/app",
            "/home/alice",
            "/root",
            "/root/docs",
            "/var/cache",
            "/var/cache/debconf",
            "/var/backups",
            "/var/lib/app",
            "/var/mail",
            "/var/spool/cron",
            "/var/log",
            "/tmp",
            "/var/tmp",
            "/run",
            "/mnt",
        ] {
            assert!(
                root_refusal(Path::new(refused), Some(home)).is_some(),
                "{refused}"
            );
        }
        for allowed in [
            "/home/op/project/docs",
            "/home/alice/shared/docs",
            "/srv/docs",
            "/tmp/docs",
            "/var/www/docs",
            "/mnt/data/docs",
        ] {
            assert_eq!(
                root_refusal(Path::new(allowed), Some(home)),
                None,
                "{allowed}"
            );
        }
    }
}
