//! The rules a manifest can break, one variant each, as [`super::ManifestError::rule`] names
//! them: a caller (or a test) matches the variant, and `airlock check` prints its `Display`,
//! the sentence the operator reads.
//!
//! The sentences name paths and values from the operator's own file and machine, never an
//! agent's input: a manifest is read before any client connects.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::limits::{
    MAX_MANIFEST_BYTES, MAX_PROMPT_ARGUMENTS, MAX_PROMPT_MESSAGES, MAX_PROMPT_PLACEHOLDERS,
    MAX_PROMPT_TEXT_BYTES, MAX_RESOURCE_FILE_BYTES, MAX_RESOURCE_ROOT_DEPTH,
    MAX_RESOURCE_WALK_ENTRIES, MIN_SECRET_BYTES,
};
use airlock::limits::{
    MAX_RESOURCE_URI_BYTES, MAX_RESOURCES_COUNT, MAX_SCOPE_BYTES, MAX_TOOL_SCOPES,
};

use super::risk::{Risk, Unaccepted};
use crate::locate::ProgramNotFound;
use crate::sandbox::ConfinementError;
use crate::sandbox::destinations::DestinationError;

/// A rule of the manifest that was broken.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Rule {
    // The file.
    /// The file cannot be opened.
    #[error("cannot be opened ({0:?})")]
    CannotOpen(ErrorKind),
    /// The file is not UTF-8 text, or cannot be read.
    #[error("cannot be read as UTF-8 text ({0:?})")]
    NotText(ErrorKind),
    /// The file is over the manifest's size bound.
    #[error("is larger than {MAX_MANIFEST_BYTES} bytes")]
    TooLarge,
    /// The file's path has no parent directory to resolve relative paths against.
    #[error("has no parent directory")]
    NoParent,
    /// The current directory, the default manifest's base, cannot be read.
    #[error("the current directory cannot be read ({0:?})")]
    NoCurrentDirectory(ErrorKind),
    /// The default manifest would serve a directory no agent should get whole.
    #[error(
        "will not serve {} with the default manifest: {why}. Start airlock in the directory to \
         serve (`cd my-project && airlock serve`), or pass a manifest (`airlock serve \
         --manifest tools.toml`; `airlock check` shows what it grants)",
        .dir.display()
    )]
    UnsafeDefaultRoot {
        /// The directory.
        dir: PathBuf,
        /// Why it may not be served.
        why: &'static str,
    },
    /// Not TOML, or not the manifest's shape (an unknown key, a wrong type): the TOML
    /// reader's message, made plainer where it can be.
    #[error("{0}")]
    Shape(String),

    // The manifest as a whole.
    /// No `[[tool]]`.
    #[error("the manifest declares no tools")]
    NoTools,
    /// More tools than the bound.
    #[error("too many tools")]
    TooManyTools,
    /// Two tools share a name.
    #[error("two tools have this name")]
    DuplicateTool,
    /// A `[defaults]` value that `[limits]` sets too.
    #[error("{other} sets the same default: keep one of the two")]
    DefaultSetTwice {
        /// The `[limits]` key.
        other: &'static str,
    },
    /// A path whose `~` or `${NAME}` cannot be expanded.
    #[error(transparent)]
    Expand(#[from] ExpandRule),

    // Bounds.
    /// A number outside `1..=ceiling`.
    #[error("must be between 1 and {ceiling}")]
    OutOfRange {
        /// The largest value allowed.
        ceiling: u64,
    },
    /// A rate outside its bounds.
    #[error("per_minute must be 1 to 10000000 and burst 1 to 100000")]
    Rate,
    /// A deadline outside its bounds.
    #[error("must be between 1 ms and 24 hours")]
    Timeout,
    /// `stderr_tail_bytes` over the tool's output cap.
    #[error("must be between 1 and the tool's max_output_bytes ({cap})")]
    StderrTail {
        /// The tool's `max_output_bytes`.
        cap: usize,
    },
    /// `stderr_tail_bytes` without `stderr = "tail"`.
    #[error("only with stderr = \"tail\"")]
    StderrTailWithoutTail,
    /// A shared store's setting without `quota_store = "redis"`.
    #[error("needs quota_store = \"redis\"")]
    NeedsRedis,
    /// A metrics address that is not an IP address with a port.
    #[error("must be an IP address and port, such as \"127.0.0.1:9464\"")]
    MetricsAddress,
    /// An OTLP endpoint that is not a plain `http://` URL.
    #[error(
        "must be an http:// URL such as \"http://127.0.0.1:4318\" (for TLS, run an \
         OpenTelemetry Collector on loopback)"
    )]
    OtlpEndpoint,
    /// A shared store's namespace that is not a plain name.
    #[error("must be 1 to 64 bytes of A-Z a-z 0-9 _ . -")]
    StoreNamespace,
    /// A shared store's lease outside its bounds.
    #[error("must be between 1000 (1 s) and 3600000 (1 h)")]
    StoreLease,

    // A tool.
    /// A tool's, prompt's or resource's name that is not a plain name.
    #[error("must be 1 to 64 characters of A-Z a-z 0-9 _ . -")]
    Name,
    /// An empty tool description.
    #[error("must not be empty: the model chooses tools by it")]
    EmptyDescription,
    /// An empty `command`.
    #[error("must name a program")]
    NoProgram,
    /// A placeholder as the program.
    #[error("the program must be fixed, not a placeholder")]
    PlaceholderProgram,
    /// A shell operator in `command`.
    #[error(
        "`{syntax}` is shell syntax, and airlock runs no shell: the program would get it as an \
         argument. Write a script and name it: a script that does the whole line, command = \
         [\"./script.sh\", …], with exec = [...] naming the programs it runs (find's -exec ends \
         with `+` instead of `;`)"
    )]
    ShellSyntax {
        /// The element.
        syntax: String,
    },
    /// The program is not found or not executable: where it was looked for.
    #[error(transparent)]
    ProgramNotFound(#[from] ProgramNotFound),
    /// A `workdir` that is not an existing directory.
    #[error(
        "must be an existing directory, and {} is not one (a relative workdir is taken relative \
         to the manifest's directory, {})",
        .dir.display(),
        .base.display()
    )]
    Workdir {
        /// The directory as resolved.
        dir: PathBuf,
        /// The manifest's directory.
        base: PathBuf,
    },
    /// The manifest's directory is gone.
    #[error("the base directory does not exist")]
    NoBaseDirectory,
    /// An argument name that is not a plain name.
    #[error("argument names must be 1 to 64 characters of a-z A-Z 0-9 _")]
    ArgumentName,
    /// An argument's declaration.
    #[error(transparent)]
    Argument(#[from] ArgumentRule),
    /// An `accept_risk` entry that names no risk.
    #[error("unknown risk; known: {}", known_risks())]
    UnknownRisk,
    /// The argv template.
    #[error(transparent)]
    Template(#[from] TemplateRule),
    /// A risky shape of the tool that it does not accept.
    #[error(transparent)]
    Unaccepted(#[from] Unaccepted),
    /// What a tool's texts tell the model breaks a metadata rule the tool does not accept.
    #[error(
        "{} at byte {offset} ({excerpt}), rule {} of the metadata rules v{}: {} The safe form: \
         {}; only if that is really intended, add accept_risk = [\"{}\"]",
        .rule.summary(),
        .rule.name(),
        airlock_metadata::RULESET_VERSION,
        .rule.help(),
        .risk.safe_form(),
        .risk.as_str()
    )]
    Told {
        /// The metadata rule.
        rule: airlock_metadata::Rule,
        /// Byte offset of the match in the text.
        offset: usize,
        /// What matched, escaped and bounded.
        excerpt: String,
        /// The risk that would accept it.
        risk: Risk,
    },
    /// Scopes over the bound or not scope tokens.
    #[error(
        "at most {MAX_TOOL_SCOPES} scopes, each 1 to {MAX_SCOPE_BYTES} visible ASCII characters \
         other than \" and \\"
    )]
    Scopes,
    /// An empty `success_codes`.
    #[error("must not be empty")]
    Empty,
    /// An environment variable name that is not one.
    #[error("not a valid environment variable name")]
    VariableName,
    /// A variable named twice.
    #[error("this variable is named twice")]
    VariableTwice,
    /// A NUL in an `env` value.
    #[error("values must not contain NUL")]
    VariableNul,
    /// A `secret_env` variable airlock does not have.
    #[error("this variable is not set (or not UTF-8) in airlock's environment")]
    SecretUnset,
    /// A secret too short to redact.
    #[error("the value is shorter than {MIN_SECRET_BYTES} bytes, too short to redact safely")]
    SecretShort,

    // A tool's sandbox.
    /// `sandbox` other than `on` and `off`.
    #[error("must be \"on\" or \"off\"")]
    SandboxSwitch,
    /// `sandbox = "off"` without the risk accepted.
    #[error(
        "the command would run outside the kernel sandbox; the safe form: the sandbox on (leave \
         `sandbox` out), granting what the command needs with `read`, `write`, `exec` and \
         `network`; only if that is really intended, add accept_risk = [\"unsandboxed\"]"
    )]
    Unsandboxed,
    /// Grants on a tool without a sandbox.
    #[error("read, write, exec, network and resources mean nothing with sandbox = \"off\"")]
    GrantsWithoutSandbox,
    /// A `read` entry that does not exist.
    #[error("must name an existing file or directory, and {} is not one", .path.display())]
    ReadMissing {
        /// The path as resolved.
        path: PathBuf,
    },
    /// An absolute `write` entry.
    #[error("must be relative to the tool's workdir, {}", .workdir.display())]
    WriteAbsolute {
        /// The tool's workdir.
        workdir: PathBuf,
    },
    /// A `write` entry that is not an existing directory.
    #[error(
        "must name an existing directory, and {} is not one (relative to the tool's workdir)",
        .path.display()
    )]
    WriteMissing {
        /// The path as resolved.
        path: PathBuf,
    },
    /// A `write` entry that resolves outside the workdir.
    #[error(
        "must stay inside the tool's workdir, {}, and it resolves to {}",
        .workdir.display(),
        .dir.display()
    )]
    WriteOutsideWorkdir {
        /// The tool's workdir.
        workdir: PathBuf,
        /// Where the entry resolves.
        dir: PathBuf,
    },
    /// A `write` entry (or resource root) that is, holds or lies inside a system tree or the
    /// home directory's own: the sentence names which.
    #[error("{0}")]
    SystemWrite(String),
    /// A `write` entry that makes other programs run code later.
    #[error(
        "{} makes other programs run code later, outside the sandbox (a person's next `git \
         status` runs what .git/config names, an editor runs .vscode's tasks); the sandbox \
         keeps it read-only inside a writable directory; leave it out, or, if the tool must \
         write it, add accept_risk = [\"later_code\"]",
        .dir.display()
    )]
    LaterCode {
        /// The directory.
        dir: PathBuf,
    },
    /// An `exec` entry that is no executable file or directory.
    #[error(
        "must name an executable file (looked up in PATH when the manifest loads) or a \
         directory{}",
        looked(.entry, .path.as_deref())
    )]
    ExecMissing {
        /// The entry as written.
        entry: String,
        /// Where a path was looked for (`None`: a bare name, looked up in PATH).
        path: Option<PathBuf>,
    },
    /// A `network` entry that is no destination.
    #[error("`{}`: {why}", .entry.escape_debug())]
    Destination {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        why: DestinationError,
    },
    /// An empty `network` list.
    #[error(
        "an empty list reaches nothing: write `network = false`, or name the destinations \
         (`\"api.example.com:443\"`)"
    )]
    NoDestinations,
    /// A grant that would give the command a tree the sandbox never grants.
    #[error(
        "{} would give the command {tree}, which the sandbox never grants (other processes, \
         airlock's own environment, devices); give it a narrower directory",
        .granted.display()
    )]
    NeverGranted {
        /// The grant.
        granted: PathBuf,
        /// The tree.
        tree: &'static str,
    },
    /// A tar tool whose compressor its sandbox cannot run.
    #[error(transparent)]
    Compressor(#[from] CompressorRule),
    /// A fixed output path of the template that the sandbox would not let the command write.
    #[error(
        "`{element}` names {}, which the tool's sandbox does not let it write (it writes only \
         in {}): write it inside a directory of `write`",
        .path.display(),
        shown_paths(.writable)
    )]
    OutputNotWritable {
        /// The template's element.
        element: String,
        /// The path it names.
        path: PathBuf,
        /// The tool's writable directories and files.
        writable: Vec<PathBuf>,
    },
    /// The sandbox's policy cannot be encoded.
    #[error(transparent)]
    Confinement(#[from] ConfinementError),
    /// A fixed interpreter script inside a directory some tool may write.
    #[error(
        "the fixed script {} lies inside {}, which tool `{owner}` may write: a call could \
         rewrite it, and agent input would reach code; move the script out of every writable \
         directory, or, if that is really intended, add accept_risk = [\"interpreter_code\"]",
        .script.display(),
        .dir.display()
    )]
    ScriptInWritable {
        /// The script.
        script: PathBuf,
        /// The writable directory.
        dir: PathBuf,
        /// The tool that may write it.
        owner: String,
    },
    /// A granted path inside a directory some tool may write.
    #[error(
        "{} lies inside {}, which tool `{owner}` may write: a call could replace it with a \
         symbolic link and widen the sandbox; grant a path outside every writable directory",
        .granted.display(),
        .dir.display()
    )]
    GrantInWritable {
        /// The grant.
        granted: PathBuf,
        /// The writable directory.
        dir: PathBuf,
        /// The tool that may write it.
        owner: String,
    },

    // Prompts.
    /// Two prompts share a name.
    #[error("two prompts have this name")]
    DuplicatePrompt,
    /// More prompts than the bound.
    #[error("too many prompts")]
    TooManyPrompts,
    /// More arguments than the bound.
    #[error("at most {MAX_PROMPT_ARGUMENTS} arguments")]
    TooManyPromptArguments,
    /// Two arguments share a name.
    #[error("two arguments have this name")]
    DuplicateArgument,
    /// No message, or more than the bound.
    #[error("a prompt has 1 to {MAX_PROMPT_MESSAGES} messages")]
    PromptMessages,
    /// A message's text over the bound.
    #[error("a message's text is at most {MAX_PROMPT_TEXT_BYTES} bytes")]
    PromptText,
    /// A brace that starts no placeholder.
    #[error(
        "a placeholder is `{{name}}` of a-z A-Z 0-9 _; write a literal brace as `{{{{` or `}}}}`"
    )]
    PromptPlaceholder,
    /// A placeholder naming no declared argument.
    #[error("the placeholder {{{name}}} names no declared argument")]
    UndeclaredPlaceholder {
        /// The name.
        name: String,
    },
    /// More placeholders than the bound.
    #[error("a prompt's messages hold at most {MAX_PROMPT_PLACEHOLDERS} placeholders")]
    TooManyPlaceholders,

    // Resources.
    /// Two resources' files share a URI.
    #[error("another resource has the same URI")]
    DuplicateUri,
    /// More files than the bound, counting every root.
    #[error("the roots hold more than {MAX_RESOURCES_COUNT} files together")]
    TooManyResources,
    /// A URI prefix that is not one.
    #[error(
        "must be `scheme://` (a lowercase scheme of its own, not one a client acts on: file, \
         http, https, ftp, smb, data, javascript…), optionally followed by segments of A-Z a-z \
         0-9 - . _ ~ each ending in /"
    )]
    ResourceUri,
    /// A file size bound outside its range.
    #[error("must be 1 to {MAX_RESOURCE_FILE_BYTES}")]
    ResourceMaxBytes,
    /// A root that is not an existing directory.
    #[error(
        "must be an existing directory, and {} is not one (a relative root is taken relative to \
         the manifest's directory)",
        .path.display()
    )]
    RootMissing {
        /// The root as resolved.
        path: PathBuf,
    },
    /// A root that may not be served.
    #[error(
        "{} may not be a resource root: it is, holds or lies inside a system tree, a tree of \
         private system or other users' data, a home directory or one of its dot-directories \
         (every file of a root is served to the agent); serve a directory of the project \
         instead",
        .dir.display()
    )]
    RootRefused {
        /// The root.
        dir: PathBuf,
    },
    /// A root that cannot be opened without following a link.
    #[error(
        "{} cannot be opened as a directory without following a symbolic link",
        .dir.display()
    )]
    RootUnopenable {
        /// The root.
        dir: PathBuf,
    },
    /// A root whose walk was given up.
    #[error(transparent)]
    Listing(#[from] ListingRule),
}

impl Rule {
    /// A number outside `1..=ceiling`, for a `usize` bound.
    pub(crate) fn out_of_range(ceiling: usize) -> Self {
        Self::OutOfRange {
            ceiling: u64::try_from(ceiling).unwrap_or(u64::MAX),
        }
    }
}

/// Every risk's name, for [`Rule::UnknownRisk`].
fn known_risks() -> String {
    let known: Vec<&str> = Risk::ALL.iter().map(|risk| risk.as_str()).collect();
    known.join(", ")
}

/// Paths joined by commas, for [`Rule::OutputNotWritable`].
fn shown_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    shown.join(", ")
}

/// Why a tar tool's sandbox cannot run the compressor its options name (GNU tar starts it
/// through `/bin/sh -c`), with the `exec` line that would.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompressorRule {
    /// The compressor is not on this machine.
    #[error(
        "`{option}` makes tar run `{name}` through /bin/sh -c, and `{name}` was not found in \
         airlock's PATH: install it, or choose a compressor this machine has"
    )]
    NotFound {
        /// The option.
        option: String,
        /// The compressor.
        name: String,
    },
    /// The tool does not grant the shell and the compressor.
    #[error(
        "`{option}` makes tar run `{name}` through /bin/sh -c, which the sandbox lets it execute \
         only when the tool names both: add exec = [{line}]"
    )]
    NotGranted {
        /// The option.
        option: String,
        /// The compressor.
        name: String,
        /// The `exec` entries that would grant them.
        line: String,
    },
    /// The archive's suffix chooses the compressor, and the tool does not grant the shell.
    #[error(
        "`{option}` makes tar run the compressor its archive's suffix names, through /bin/sh \
         -c, and a value chooses the archive: add exec = [{line}] with each compressor the \
         suffixes may name (gzip, bzip2, xz, zstd, …)"
    )]
    BySuffix {
        /// The option.
        option: String,
        /// The `exec` entries that would grant the shell.
        line: String,
    },
}

/// Where an `exec` entry was looked for, for [`Rule::ExecMissing`].
fn looked(entry: &str, path: Option<&Path>) -> String {
    match path {
        Some(path) => format!(", and {} is not one", path.display()),
        None => format!(", and `{entry}` is not one in airlock's PATH"),
    }
}

/// What is wrong with an argument's declaration.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentRule {
    /// A default on a required argument.
    #[error("an argument with a default cannot be required")]
    RequiredWithDefault,
    /// `max_length` outside `1..=limits.max_string_bytes`.
    #[error("max_length must be between 1 and limits.max_string_bytes ({max_string})")]
    MaxLength {
        /// `limits.max_string_bytes`.
        max_string: usize,
    },
    /// `min_length` over `max_length`.
    #[error("min_length is greater than max_length")]
    MinOverMaxLength,
    /// A pattern that does not compile within its bound.
    #[error("pattern is not a valid regular expression (Rust regex syntax)")]
    Pattern,
    /// An empty `enum`.
    #[error("enum must list at least one value")]
    EmptyEnum,
    /// An `enum` value its own rules refuse.
    #[error("an enum value is longer than max_length or contains NUL")]
    EnumValue,
    /// A default the argument's rules refuse.
    #[error("the default does not satisfy the argument's own rules")]
    Default,
    /// `minimum` over `maximum`.
    #[error("minimum is greater than maximum")]
    MinOverMax,
    /// An integer default outside its range.
    #[error("the default is outside minimum..maximum")]
    DefaultOutOfRange,
    /// A boolean's flag that is not an option.
    #[error("flag must be an option such as `--verbose`")]
    Flag,
    /// A path argument's `within` that is not an existing directory.
    #[error(
        "within must be an existing directory, and {} is not one (relative to the tool's \
         workdir)",
        .path.display()
    )]
    Within {
        /// The directory as resolved.
        path: PathBuf,
    },
    /// A path default that is not relative.
    #[error("the default must be a relative path")]
    PathDefault,
    /// `max_items` outside its range.
    #[error("max_items must be between 1 and {ceiling}")]
    MaxItems {
        /// The largest value allowed.
        ceiling: usize,
    },
    /// `min_items` over `max_items`.
    #[error("min_items is greater than max_items")]
    MinOverMaxItems,
}

/// What is wrong with a `command` template.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateRule {
    /// A NUL in an element.
    #[error("a template element contains NUL")]
    Nul,
    /// `{}`.
    #[error("`{element}` holds an empty placeholder `{{}}`; write `{{{{}}}}` for literal braces")]
    EmptyPlaceholder {
        /// The element.
        element: String,
    },
    /// A placeholder naming no argument.
    #[error("`{{{name}}}` is not a declared argument")]
    Undeclared {
        /// The name.
        name: String,
    },
    /// A placeholder used twice.
    #[error("`{{{name}}}` is used more than once")]
    UsedTwice {
        /// The name.
        name: String,
    },
    /// A placeholder inside an element, `embedded_placeholder` not accepted.
    #[error(
        "`{element}`: a placeholder must be a whole element or the value of `--opt={{x}}`; the \
         safe form: `{{{name}}}` as an element of its own, or `--opt={{{name}}}`; only if that \
         is really intended, add accept_risk = [\"embedded_placeholder\"]"
    )]
    Embedded {
        /// The element.
        element: String,
        /// The argument.
        name: String,
    },
    /// A stdin argument also in the command.
    #[error("`{name}` goes to stdin and cannot also be in the command")]
    StdinInCommand {
        /// The argument.
        name: String,
    },
    /// An argument the command never uses.
    #[error("`{name}` is declared but the command never uses it")]
    Unused {
        /// The argument.
        name: String,
    },
    /// Two stdin arguments.
    #[error("at most one argument can go to stdin")]
    TwoStdin,
    /// Two placeholders in one element.
    #[error(
        "`{element}` holds more than one placeholder (write `{{{{` or `}}}}` for a literal brace)"
    )]
    TwoPlaceholders {
        /// The element.
        element: String,
    },
    /// A `{` without its `}`.
    #[error("`{element}` has an unmatched `{{` (write `{{{{` or `}}}}` for a literal brace)")]
    UnmatchedOpen {
        /// The element.
        element: String,
    },
    /// A `}` without its `{`.
    #[error("`{element}` has an unmatched `}}` (write `{{{{` or `}}}}` for a literal brace)")]
    UnmatchedClose {
        /// The element.
        element: String,
    },
    /// A flagless boolean as a whole element.
    #[error("boolean `{name}` as a whole element needs a `flag`")]
    BooleanNeedsFlag {
        /// The argument.
        name: String,
    },
    /// A boolean with a flag inside an element.
    #[error("boolean `{name}` has a `flag`, so it must be a whole element")]
    FlagNotWhole {
        /// The argument.
        name: String,
    },
    /// A whole-element list before `--`.
    #[error(
        "array `{name}`: a list must come after a literal `--`, or be written `--opt={{{name}}}` \
         (one `--opt=item` per item)"
    )]
    ArrayBeforeDoubleDash {
        /// The argument.
        name: String,
    },
    /// A possibly negative integer that would read as an option.
    #[error(
        "integer `{name}` can be negative, and `-5` at the start of an element reads as an \
         option: set minimum = 0, put it after `--`, or write `--opt={{{name}}}`"
    )]
    NegativeInteger {
        /// The argument.
        name: String,
    },
    /// An optional argument after an option it would leave dangling.
    #[error(
        "`{name}` is optional: when absent, the option before it would be left dangling; write \
         `--opt={{{name}}}` instead"
    )]
    Dangling {
        /// The argument.
        name: String,
    },
}

/// Why a path's `~` or `${NAME}` cannot be expanded: fixed text around the variable's name,
/// never a variable's value.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandRule {
    /// The variable is not set.
    #[error("{shown} names the variable {name}, which is not set in airlock's environment")]
    Unset {
        /// How the path wrote it (`` `~` ``, `` `${NAME}` ``).
        shown: String,
        /// The variable.
        name: String,
    },
    /// The variable is not UTF-8.
    #[error("{shown}: the variable {name} is not UTF-8")]
    NotUtf8 {
        /// How the path wrote it.
        shown: String,
        /// The variable.
        name: String,
    },
    /// The variable is empty.
    #[error("{shown}: the variable {name} is empty (the path would change meaning)")]
    Empty {
        /// How the path wrote it.
        shown: String,
        /// The variable.
        name: String,
    },
    /// `~user`.
    #[error("only `~` and `~/…` are expanded (to $HOME), not `~user`; write the path out")]
    OtherUser,
    /// `HOME` is relative.
    #[error("`~`: HOME is not an absolute path")]
    RelativeHome,
    /// A `$` that starts no `${NAME}`.
    #[error("a `$` starts a variable written `${{NAME}}` (write `$$` for a `$` itself)")]
    Dollar,
    /// `${…}` holding no variable name.
    #[error("`${{…}}` must hold a variable name ([A-Za-z_][A-Za-z0-9_]*)")]
    VariableName,
}

/// Why the walk of a resource root was given up.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ListingRule {
    /// More entries to look at than the bound.
    #[error(
        "{} holds more than {MAX_RESOURCE_WALK_ENTRIES} entries to look at",
        .dir.display()
    )]
    TooManyEntries {
        /// The root.
        dir: PathBuf,
    },
    /// A directory that cannot be read.
    #[error("{} cannot be listed ({kind:?})", .path.display())]
    Unlistable {
        /// The directory.
        path: PathBuf,
        /// Why.
        kind: ErrorKind,
    },
    /// A directory deeper than the bound.
    #[error(
        "{} is deeper than {MAX_RESOURCE_ROOT_DEPTH} directories under the root",
        .path.display()
    )]
    TooDeep {
        /// The directory.
        path: PathBuf,
    },
    /// More files than the bound.
    #[error("{} holds more than {MAX_RESOURCES_COUNT} files", .dir.display())]
    TooManyFiles {
        /// The root.
        dir: PathBuf,
    },
    /// A URI over the bound.
    #[error(
        "the URI of {} would be longer than {MAX_RESOURCE_URI_BYTES} bytes",
        .path.display()
    )]
    UriTooLong {
        /// The file.
        path: PathBuf,
    },
}
