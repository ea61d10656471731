//! The manifest once checked: every program resolved to an absolute path, every template
//! parsed, every argument's rules validated, every environment value read.
//!
//! Nothing here trusts the raw file beyond its syntax. A value of this module's types proves
//! its checks ran: [`super::load`] is the only way to get one.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::num::{NonZeroU32, NonZeroUsize};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use secrecy::SecretString;
use serde_json::{Map, Value, json};
use toml::Spanned;

use super::raw::{
    RawArg, RawArrayArg, RawBooleanArg, RawIntegerArg, RawLimits, RawManifest, RawPathArg,
    RawPathKind, RawRate, RawResources, RawStderr, RawStringArg, RawTool,
};
use super::risk::{self, Reading, Risk};
use super::{Located, ManifestError};
use crate::sandbox::{Confinement, Declared, Policy, Resources};
use airlock::limits::{
    DEFAULT_ARRAY_ARG_ITEMS, DEFAULT_STRING_ARG_CHARS, Limits, MAX_ARRAY_ITEMS, MAX_OUTPUT_BYTES,
    MAX_OUTPUT_CEILING_BYTES, MAX_TOOL_TIMEOUT, Rate, SANDBOX_MAX_CPU_SECONDS,
    SANDBOX_MAX_FILE_SIZE_MIB, SANDBOX_MAX_MEMORY_MIB, SANDBOX_MAX_OPEN_FILES,
    SANDBOX_MAX_PROCESSES, STDERR_TAIL_BYTES,
};
use airlock::secrets::{MIN_SECRET_BYTES, Secret};
use airlock::{ToolAnnotations, ToolName};

/// A checked manifest.
#[derive(Debug)]
pub struct Manifest {
    /// Where it came from, for messages (`tools.toml`, `<embedded default>`).
    pub source: String,
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// `serverInfo.title`.
    pub title: Option<String>,
    /// Instructions for the model.
    pub instructions: Option<String>,
    /// The server's limits.
    pub limits: Limits,
    /// The tools, in file order.
    pub tools: Vec<CommandTool>,
}

/// One checked command tool.
#[derive(Debug)]
pub struct CommandTool {
    /// Tool name.
    pub name: ToolName,
    /// Display title.
    pub title: Option<String>,
    /// What the tool does.
    pub description: String,
    /// Absolute path of the program, resolved when the manifest loaded.
    pub program: PathBuf,
    /// The argv template after the program.
    pub template: Vec<Element>,
    /// Declared arguments, by name.
    pub args: Vec<ArgSpec>,
    /// The tool's deadline, if it sets one.
    pub timeout: Option<Duration>,
    /// Cap on each of stdout and stderr.
    pub max_output_bytes: usize,
    /// A quota of the tool's own, on top of the server's.
    pub rate: Option<Rate>,
    /// Working directory (canonical).
    pub workdir: PathBuf,
    /// Non-secret environment: `env_allow` values read at load, then `env`.
    pub env: Vec<(OsString, OsString)>,
    /// Secret environment, read at load.
    pub secrets: Vec<Secret>,
    /// Exit codes that mean success.
    pub success_codes: Vec<i32>,
    /// What a reply holds of stderr.
    pub stderr: StderrMode,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// Risky shapes the manifest explicitly accepted.
    pub accepted_risks: Vec<Risk>,
    /// What airlock knows about how the program reads its arguments, and what the call-time
    /// checks refuse beyond a leading dash.
    pub reading: Reading,
    /// The kernel sandbox the command runs in; `None` only with `sandbox = "off"` and the
    /// accepted risk `unsandboxed`.
    pub sandbox: Option<Arc<Confinement>>,
}

/// What a command tool's reply holds of its stderr (`stderr` in the manifest). Whatever the
/// mode, the reply holds at most `max_output_bytes` of output, counted as sent.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum StderrMode {
    /// Both streams, each in a section of its own, each keeping at least half of the reply
    /// when they do not both fit (the default).
    Separate,
    /// One stream, in the order the command wrote it, as a terminal shows it (`2>&1`).
    Merge,
    /// stdout, and the last this many bytes of stderr.
    Tail(NonZeroUsize),
    /// stdout only.
    Drop,
}

impl StderrMode {
    /// How `airlock check` names it.
    pub fn describe(self) -> String {
        match self {
            Self::Separate => "separate".to_owned(),
            Self::Merge => "merged into stdout".to_owned(),
            Self::Tail(bytes) => format!("last {bytes} bytes"),
            Self::Drop => "dropped".to_owned(),
        }
    }
}

/// One element of an argv template.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum Element {
    /// Passed as written.
    Literal(String),
    /// An argument's value: the whole element (`{x}`), or inside it (`--opt={x}`).
    Value {
        /// Index into [`CommandTool::args`].
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

/// Checks a raw manifest. `base` resolves relative paths; `text` is the file, for positions.
pub(super) fn check(
    raw: RawManifest,
    source: &str,
    text: &str,
    base: &Path,
) -> Result<Manifest, ManifestError> {
    let at = Located { source, text };
    let limits = limits(&raw.limits, &at)?;
    let default_output = match &raw.limits.max_output_bytes {
        Some(value) => output_cap(value, &at, None)?,
        None => MAX_OUTPUT_BYTES,
    };
    if raw.tools.is_empty() {
        return Err(at.error(None, None, "[[tool]]", "the manifest declares no tools"));
    }
    let mut names = BTreeSet::new();
    let mut tools = Vec::with_capacity(raw.tools.len());
    // Every tool is checked, so that one run lists the errors of all of them.
    let mut errors = Vec::new();
    for tool in raw.tools {
        let span = tool.span();
        let checked = ToolChecker {
            at: &at,
            base,
            default_output,
            max_string_bytes: limits.max_string_bytes.get(),
            span: span.clone(),
        }
        .check(tool.into_inner());
        let tool = match checked {
            Ok(tool) => tool,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        if !names.insert(tool.name.as_str().to_owned()) {
            errors.push(at.error(
                Some(span.start),
                Some(tool.name.as_str()),
                "name",
                "two tools have this name",
            ));
        }
        tools.push(tool);
    }
    if let Some(error) = ManifestError::combined(errors) {
        return Err(error);
    }
    if tools.len() > airlock::limits::MAX_TOOLS_COUNT {
        return Err(at.error(None, None, "[[tool]]", "too many tools"));
    }
    refuse_grants_inside_writable_directories(&tools, &at)?;
    let server = raw.server;
    Ok(Manifest {
        source: source.to_owned(),
        name: server.name.unwrap_or_else(|| "airlock".to_owned()),
        version: server
            .version
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
        title: server.title,
        instructions: server.instructions,
        limits,
        tools,
    })
}

/// Trees no sandboxed command is given, nor any directory that holds them (`/`): a command
/// needs none of them about itself, and they hold every process's `/proc` entry (airlock's
/// own, with its environment), kernel knobs and raw devices. The harmless devices a program
/// uses are in the sandbox's fixed system list.
const NEVER_GRANTED: &[&str] = &["/proc", "/sys", "/dev"];

/// Refuses a sandboxed tool's granted path (workdir, path roots, `read`, `exec`, `write`), and
/// any tool's fixed interpreter script, that lies inside a writable directory of any sandboxed
/// tool of the manifest. A call could replace such a path with a symbolic link to anywhere; the
/// launcher would then refuse to run (it checks each path's identity), so the tool would stop
/// working: refused here, at load. A script there could be rewritten into any code.
fn refuse_grants_inside_writable_directories(
    tools: &[CommandTool],
    at: &Located<'_>,
) -> Result<(), ManifestError> {
    let writable: Vec<(&str, &Path)> = tools
        .iter()
        .filter_map(|tool| tool.sandbox.as_ref().map(|sandbox| (tool, sandbox)))
        .flat_map(|(tool, sandbox)| {
            sandbox
                .policy()
                .write
                .iter()
                .map(move |dir| (tool.name.as_str(), dir.as_path()))
        })
        .collect();
    for tool in tools {
        // An interpreter's fixed script is what makes agent text its arguments, not its code:
        // a tool that may write where the script lies could rewrite it.
        if let Some(script) = &tool.reading.script
            && !tool.accepted_risks.contains(&Risk::InterpreterCode)
            && let Some((owner, dir)) = writable.iter().find(|(_, dir)| script.starts_with(dir))
        {
            return Err(at.error(
                None,
                Some(tool.name.as_str()),
                "command",
                &format!(
                    "the fixed script {} lies inside {}, which tool `{owner}` may write: a call \
                     could rewrite it, and agent input would reach code; move the script out of \
                     every writable directory, or, if that is really intended, add \
                     accept_risk = [\"interpreter_code\"]",
                    script.display(),
                    dir.display()
                ),
            ));
        }
        let Some(sandbox) = &tool.sandbox else {
            continue;
        };
        for granted in sandbox.policy().granted() {
            let inside = writable
                .iter()
                .find(|(_, dir)| granted != *dir && granted.starts_with(dir));
            if let Some((owner, dir)) = inside {
                return Err(at.error(
                    None,
                    Some(tool.name.as_str()),
                    "sandbox",
                    &format!(
                        "{} lies inside {}, which tool `{owner}` may write: a call could replace \
                         it with a symbolic link and widen the sandbox; grant a path outside \
                         every writable directory",
                        granted.display(),
                        dir.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn limits(raw: &RawLimits, at: &Located<'_>) -> Result<Limits, ManifestError> {
    let mut limits = Limits::default();
    let count = |value: &Spanned<u64>, field: &'static str, ceiling: usize| {
        usize::try_from(*value.get_ref())
            .ok()
            .filter(|n| *n <= ceiling)
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| {
                at.error(
                    Some(value.span().start),
                    None,
                    field,
                    &format!("must be between 1 and {ceiling}"),
                )
            })
    };
    if let Some(v) = &raw.max_frame_bytes {
        limits.max_frame_bytes = count(v, "limits.max_frame_bytes", 64 * 1024 * 1024)?;
    }
    if let Some(v) = &raw.max_json_depth {
        limits.max_json_depth = count(v, "limits.max_json_depth", 127)?;
    }
    if let Some(v) = &raw.max_argument_bytes {
        limits.max_argument_bytes = count(v, "limits.max_argument_bytes", 64 * 1024 * 1024)?;
    }
    if let Some(v) = &raw.max_argument_depth {
        limits.max_argument_depth = count(v, "limits.max_argument_depth", 64)?;
    }
    if let Some(v) = &raw.max_object_keys {
        limits.max_object_keys = count(v, "limits.max_object_keys", 65_536)?;
    }
    if let Some(v) = &raw.max_array_items {
        limits.max_array_items = count(v, "limits.max_array_items", 65_536)?;
    }
    if let Some(v) = &raw.max_string_bytes {
        limits.max_string_bytes = count(v, "limits.max_string_bytes", 64 * 1024 * 1024)?;
    }
    if let Some(v) = &raw.max_in_flight {
        limits.max_in_flight = count(v, "limits.max_in_flight", 1024)?;
    }
    if let Some(v) = &raw.max_consecutive_errors {
        let n = count(v, "limits.max_consecutive_errors", 1_000_000)?;
        limits.max_consecutive_errors = u32::try_from(n.get())
            .ok()
            .and_then(NonZeroU32::new)
            .unwrap_or(NonZeroU32::MIN);
    }
    if let Some(v) = &raw.tool_timeout_ms {
        limits.tool_timeout = timeout(v, at, None, "limits.tool_timeout_ms")?;
    }
    if let Some(v) = &raw.tool_call_rate {
        limits.tool_call_rate = Some(rate(v, at, None, "limits.tool_call_rate")?);
    }
    if let Some(v) = &raw.cheap_method_rate {
        limits.cheap_method_rate = Some(rate(v, at, None, "limits.cheap_method_rate")?);
    }
    Ok(limits)
}

/// A quota: `per_minute` of 1 to 10 million, `burst` (default 1) of 1 to 100,000.
fn rate(
    value: &Spanned<RawRate>,
    at: &Located<'_>,
    tool: Option<&str>,
    field: &str,
) -> Result<Rate, ManifestError> {
    let raw = value.get_ref();
    let per_minute = u32::try_from(raw.per_minute)
        .ok()
        .filter(|n| *n <= 10_000_000)
        .and_then(NonZeroU32::new);
    let burst = u32::try_from(raw.burst.unwrap_or(1))
        .ok()
        .filter(|n| *n <= 100_000)
        .and_then(NonZeroU32::new);
    match (per_minute, burst) {
        (Some(per_minute), Some(burst)) => Ok(Rate { per_minute, burst }),
        _ => Err(at.error(
            Some(value.span().start),
            tool,
            field,
            "per_minute must be 1 to 10000000 and burst 1 to 100000",
        )),
    }
}

fn timeout(
    value: &Spanned<u64>,
    at: &Located<'_>,
    tool: Option<&str>,
    field: &str,
) -> Result<Duration, ManifestError> {
    let duration = Duration::from_millis(*value.get_ref());
    if duration.is_zero() || duration > MAX_TOOL_TIMEOUT {
        return Err(at.error(
            Some(value.span().start),
            tool,
            field,
            "must be between 1 ms and 24 hours",
        ));
    }
    Ok(duration)
}

/// `resources = { … }` over the defaults, each within its ceiling.
fn resources(
    value: &Spanned<RawResources>,
    at: &Located<'_>,
    tool: Option<&str>,
) -> Result<Resources, ManifestError> {
    let raw = value.get_ref();
    let mut resources = Resources::default();
    let check =
        |given: Option<u64>, name: &str, ceiling: u64| -> Result<Option<u64>, ManifestError> {
            match given {
                None => Ok(None),
                Some(n) if (1..=ceiling).contains(&n) => Ok(Some(n)),
                Some(_) => Err(at.error(
                    Some(value.span().start),
                    tool,
                    &format!("resources.{name}"),
                    &format!("must be between 1 and {ceiling}"),
                )),
            }
        };
    if let Some(n) = check(raw.processes, "processes", u64::from(SANDBOX_MAX_PROCESSES))? {
        resources.processes = u32::try_from(n).unwrap_or(SANDBOX_MAX_PROCESSES);
    }
    if let Some(n) = check(raw.memory_mib, "memory_mib", SANDBOX_MAX_MEMORY_MIB)? {
        resources.memory_mib = n;
    }
    if let Some(n) = check(raw.cpu_seconds, "cpu_seconds", SANDBOX_MAX_CPU_SECONDS)? {
        resources.cpu_seconds = n;
    }
    if let Some(n) = check(
        raw.file_size_mib,
        "file_size_mib",
        SANDBOX_MAX_FILE_SIZE_MIB,
    )? {
        resources.file_size_mib = n;
    }
    if let Some(n) = check(raw.open_files, "open_files", SANDBOX_MAX_OPEN_FILES)? {
        resources.open_files = n;
    }
    Ok(resources)
}

fn output_cap(
    value: &Spanned<u64>,
    at: &Located<'_>,
    tool: Option<&str>,
) -> Result<usize, ManifestError> {
    usize::try_from(*value.get_ref())
        .ok()
        .filter(|n| (1..=MAX_OUTPUT_CEILING_BYTES).contains(n))
        .ok_or_else(|| {
            at.error(
                Some(value.span().start),
                tool,
                "max_output_bytes",
                &format!("must be between 1 and {MAX_OUTPUT_CEILING_BYTES}"),
            )
        })
}

/// `stderr` and `stderr_tail_bytes`; a tail is at most the tool's output cap, which the reply
/// holds at most.
fn stderr_mode(
    raw: &RawTool,
    at: &Located<'_>,
    tool: Option<&str>,
    cap: usize,
) -> Result<StderrMode, ManifestError> {
    let mode = raw.stderr.as_ref().map(|mode| *mode.get_ref());
    let tail = match (&raw.stderr_tail_bytes, mode) {
        (Some(bytes), Some(RawStderr::Tail)) => usize::try_from(*bytes.get_ref())
            .ok()
            .filter(|n| *n <= cap)
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| {
                at.error(
                    Some(bytes.span().start),
                    tool,
                    "stderr_tail_bytes",
                    &format!("must be between 1 and the tool's max_output_bytes ({cap})"),
                )
            })?,
        (Some(bytes), _) => {
            return Err(at.error(
                Some(bytes.span().start),
                tool,
                "stderr_tail_bytes",
                "only with stderr = \"tail\"",
            ));
        }
        (None, _) => NonZeroUsize::new(STDERR_TAIL_BYTES.min(cap)).unwrap_or(NonZeroUsize::MIN),
    };
    Ok(match mode {
        None | Some(RawStderr::Separate) => StderrMode::Separate,
        Some(RawStderr::Merge) => StderrMode::Merge,
        Some(RawStderr::Tail) => StderrMode::Tail(tail),
        Some(RawStderr::Drop) => StderrMode::Drop,
    })
}

/// A tool's non-secret variables and its secrets.
type Environment = (Vec<(OsString, OsString)>, Vec<Secret>);

struct ToolChecker<'a> {
    at: &'a Located<'a>,
    base: &'a Path,
    default_output: usize,
    /// The server's `max_string_bytes`: no argument may declare a longer string.
    max_string_bytes: usize,
    span: std::ops::Range<usize>,
}

impl ToolChecker<'_> {
    fn check(&self, raw: RawTool) -> Result<CommandTool, ManifestError> {
        let at = self.at;
        let name_text = raw.name.get_ref().clone();
        let tool = Some(name_text.as_str());
        let name = ToolName::parse(&name_text).map_err(|_| {
            at.error(
                Some(raw.name.span().start),
                tool,
                "name",
                "must be 1 to 64 characters of A-Z a-z 0-9 _ . -",
            )
        })?;
        if raw.description.get_ref().trim().is_empty() {
            return Err(at.error(
                Some(raw.description.span().start),
                tool,
                "description",
                "must not be empty: the model chooses tools by it",
            ));
        }
        let command_at = Some(raw.command.span().start);
        let fail = |field: &str, rule: &str| at.error(command_at, tool, field, rule);
        let Some((program_text, template_text)) = raw.command.get_ref().split_first() else {
            return Err(fail("command", "must name a program"));
        };
        if program_text.contains('{') || program_text.contains('}') {
            return Err(fail(
                "command",
                "the program must be fixed, not a placeholder",
            ));
        }
        let workdir = match &raw.workdir {
            Some(dir) => directory(self.base, dir.get_ref()).ok_or_else(|| {
                at.error(
                    Some(dir.span().start),
                    tool,
                    "workdir",
                    &format!(
                        "must be an existing directory, and {} is not one (a relative workdir \
                         is taken relative to the manifest's directory, {})",
                        self.base.join(dir.get_ref()).display(),
                        self.base.display()
                    ),
                )
            })?,
            None => directory(self.base, ".").ok_or_else(|| {
                at.error(
                    Some(self.span.start),
                    tool,
                    "workdir",
                    "the base directory does not exist",
                )
            })?,
        };
        let program = resolve_program(program_text, self.base)
            .ok_or_else(|| fail("command", &program_not_found(program_text, self.base)))?;

        let mut args = Vec::with_capacity(raw.args.len());
        for (arg_name, spec) in &raw.args {
            let arg_at = Some(spec.span().start);
            let field = format!("args.{arg_name}");
            if !valid_arg_name(arg_name) {
                return Err(at.error(
                    arg_at,
                    tool,
                    &field,
                    "argument names must be 1 to 64 characters of a-z A-Z 0-9 _",
                ));
            }
            let parsed = arg(arg_name, spec.get_ref(), &workdir, self.max_string_bytes)
                .map_err(|rule| at.error(arg_at, tool, &field, &rule))?;
            args.push(parsed);
        }

        let accepted_risks = raw
            .accept_risk
            .iter()
            .map(|risk| {
                Risk::parse(risk.get_ref()).ok_or_else(|| {
                    let known: Vec<&str> = Risk::ALL.iter().map(|risk| risk.as_str()).collect();
                    at.error(
                        Some(risk.span().start),
                        tool,
                        "accept_risk",
                        &format!("unknown risk; known: {}", known.join(", ")),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let template = template(template_text, &args, &accepted_risks)
            .map_err(|rule| fail("command", &rule))?;
        let assessment = risk::assess(&program, &template, &args, &workdir);
        risk::refuse_unaccepted(&assessment, &accepted_risks)
            .map_err(|rule| fail("command", &rule))?;

        let (env, secrets) = self.environment(&raw, tool)?;
        let sandbox = self.sandbox(&raw, tool, &program, &workdir, &args, &accepted_risks)?;
        let timeout = match &raw.timeout_ms {
            Some(value) => Some(timeout(value, at, tool, "timeout_ms")?),
            None => None,
        };
        let max_output_bytes = match &raw.max_output_bytes {
            Some(value) => output_cap(value, at, tool)?,
            None => self.default_output,
        };
        let rate = match &raw.rate {
            Some(value) => Some(rate(value, at, tool, "rate")?),
            None => None,
        };
        let stderr = stderr_mode(&raw, at, tool, max_output_bytes)?;
        let success_codes = match &raw.success_codes {
            Some(codes) if codes.get_ref().is_empty() => {
                return Err(at.error(
                    Some(codes.span().start),
                    tool,
                    "success_codes",
                    "must not be empty",
                ));
            }
            Some(codes) => codes.get_ref().clone(),
            None => vec![0],
        };
        let mut annotations = ToolAnnotations::default();
        annotations.read_only = raw.annotations.read_only;
        annotations.destructive = raw.annotations.destructive;
        annotations.idempotent = raw.annotations.idempotent;
        annotations.open_world = raw.annotations.open_world;
        Ok(CommandTool {
            name,
            title: raw.title,
            description: raw.description.into_inner(),
            program,
            template,
            args,
            timeout,
            max_output_bytes,
            rate,
            workdir,
            env,
            secrets,
            success_codes,
            stderr,
            annotations,
            accepted_risks,
            reading: assessment.reading,
            sandbox,
        })
    }

    /// The tool's sandbox: `sandbox`, `read`, `write`, `exec`, `network`, `resources`.
    fn sandbox(
        &self,
        raw: &RawTool,
        tool: Option<&str>,
        program: &Path,
        workdir: &Path,
        args: &[ArgSpec],
        accepted: &[Risk],
    ) -> Result<Option<Arc<Confinement>>, ManifestError> {
        let at = self.at;
        let off = match &raw.sandbox {
            None => false,
            Some(value) => match value.get_ref().as_str() {
                "on" => false,
                "off" => true,
                _ => {
                    return Err(at.error(
                        Some(value.span().start),
                        tool,
                        "sandbox",
                        "must be \"on\" or \"off\"",
                    ));
                }
            },
        };
        if off {
            let span = raw.sandbox.as_ref().map(|value| value.span().start);
            if !accepted.contains(&Risk::Unsandboxed) {
                return Err(at.error(
                    span,
                    tool,
                    "sandbox",
                    "the command would run outside the kernel sandbox; if that is really \
                     intended, add accept_risk = [\"unsandboxed\"]",
                ));
            }
            let declared = !raw.read.is_empty()
                || !raw.write.is_empty()
                || !raw.exec.is_empty()
                || raw.network
                || raw.resources.is_some();
            if declared {
                return Err(at.error(
                    span,
                    tool,
                    "sandbox",
                    "read, write, exec, network and resources mean nothing with sandbox = \"off\"",
                ));
            }
            return Ok(None);
        }
        let mut read = Vec::with_capacity(raw.read.len());
        for entry in &raw.read {
            let path = std::fs::canonicalize(self.base.join(entry.get_ref())).map_err(|_| {
                at.error(
                    Some(entry.span().start),
                    tool,
                    "read",
                    "must name an existing file or directory",
                )
            })?;
            read.push(path);
        }
        let mut write = Vec::with_capacity(raw.write.len());
        for entry in &raw.write {
            let refused = |rule: &str| at.error(Some(entry.span().start), tool, "write", rule);
            if Path::new(entry.get_ref()).is_absolute() {
                return Err(refused("must be relative to the tool's workdir"));
            }
            let dir = directory(workdir, entry.get_ref())
                .ok_or_else(|| refused("must name an existing directory"))?;
            if !dir.starts_with(workdir) {
                return Err(refused("must stay inside the tool's workdir"));
            }
            write.push(dir);
        }
        let mut exec = Vec::with_capacity(raw.exec.len());
        for entry in &raw.exec {
            let refused = || {
                at.error(
                    Some(entry.span().start),
                    tool,
                    "exec",
                    "must name an executable file (looked up in PATH when the manifest loads) \
                     or a directory",
                )
            };
            let text = entry.get_ref();
            let path = if !text.contains('/') || Path::new(text).is_file() {
                resolve_program(text, self.base).ok_or_else(refused)?
            } else {
                self.base.join(text)
            };
            let path = std::fs::canonicalize(path).map_err(|_| refused())?;
            exec.push(path);
        }
        let resources = match &raw.resources {
            Some(value) => resources(value, at, tool)?,
            None => Resources::default(),
        };
        let roots = args
            .iter()
            .filter_map(|arg| match &arg.kind {
                ArgKind::Path(rule) => Some(rule.root.clone()),
                _ => None,
            })
            .collect();
        let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
        let policy = Policy::for_command(
            &program,
            workdir,
            Declared {
                roots,
                read,
                exec,
                write,
                network: raw.network,
                resources,
            },
        );
        // Landlock only grants: a rule on `/` (or on `/proc`, `/sys`, `/dev` themselves) would
        // hand the command every process's entry, airlock's own environment among them, and
        // the raw devices. Refused whatever the tool declares.
        for granted in policy.granted_beyond_system() {
            let never = NEVER_GRANTED
                .iter()
                .find(|tree| Path::new(tree).starts_with(granted) || granted.starts_with(tree));
            if let Some(tree) = never {
                return Err(at.error(
                    Some(self.span.start),
                    tool,
                    "sandbox",
                    &format!(
                        "{} would give the command {tree}, which the sandbox never grants (other \
                         processes, airlock's own environment, devices); give it a narrower \
                         directory",
                        granted.display()
                    ),
                ));
            }
        }
        Confinement::new(policy)
            .map(|confinement| Some(Arc::new(confinement)))
            .map_err(|rule| at.error(Some(self.span.start), tool, "sandbox", &rule))
    }

    /// `env_allow` values (read now), fixed `env`, and `secret_env` values (read now).
    fn environment(&self, raw: &RawTool, tool: Option<&str>) -> Result<Environment, ManifestError> {
        let at = self.at;
        let mut seen = BTreeSet::new();
        let mut claim = |name: &str, span: usize, field: &str| {
            if !valid_env_name(name) {
                return Err(at.error(
                    Some(span),
                    tool,
                    field,
                    "not a valid environment variable name",
                ));
            }
            if !seen.insert(name.to_owned()) {
                return Err(at.error(Some(span), tool, field, "this variable is named twice"));
            }
            Ok(())
        };
        let mut env = Vec::new();
        for name in &raw.env_allow {
            claim(name.get_ref(), name.span().start, "env_allow")?;
            if let Some(value) = std::env::var_os(name.get_ref()) {
                env.push((OsString::from(name.get_ref()), value));
            }
        }
        for (name, value) in &raw.env {
            claim(name, value.span().start, "env")?;
            if value.get_ref().contains('\0') {
                return Err(at.error(
                    Some(value.span().start),
                    tool,
                    "env",
                    "values must not contain NUL",
                ));
            }
            env.push((OsString::from(name), OsString::from(value.get_ref())));
        }
        let mut secrets = Vec::new();
        for name in &raw.secret_env {
            let span = Some(name.span().start);
            claim(name.get_ref(), name.span().start, "secret_env")?;
            let value = std::env::var(name.get_ref()).map_err(|_| {
                at.error(
                    span,
                    tool,
                    "secret_env",
                    "this variable is not set (or not UTF-8) in airlock's environment",
                )
            })?;
            if value.len() < MIN_SECRET_BYTES {
                return Err(at.error(
                    span,
                    tool,
                    "secret_env",
                    &format!("the value is shorter than {MIN_SECRET_BYTES} bytes, too short to redact safely"),
                ));
            }
            secrets.push(Secret::new(
                name.get_ref().clone(),
                SecretString::from(value),
            ));
        }
        Ok((env, secrets))
    }
}

fn valid_arg_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes().first().is_some_and(u8::is_ascii_digit)
}

/// `relative` under `base`, canonical, if it is an existing directory.
fn directory(base: &Path, relative: &str) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(base.join(relative)).ok()?;
    dir.is_dir().then_some(dir)
}

/// Why `program` cannot be run, and how to fix it: where it was looked for.
fn program_not_found(program: &str, base: &Path) -> String {
    if program.contains('/') {
        let path = base.join(program);
        let found = if path.is_file() {
            "exists but is not executable (chmod +x it)"
        } else if path.exists() {
            "is not a regular file"
        } else {
            "does not exist"
        };
        let relative = if Path::new(program).is_absolute() {
            String::new()
        } else {
            format!(
                " (a program with a `/` is taken relative to the manifest's directory, {})",
                base.display()
            )
        };
        return format!(
            "the program {} {found}{relative}; a bare name is looked up in PATH",
            path.display()
        );
    }
    format!(
        "the program `{program}` was not found in airlock's PATH (searched when the manifest \
         loads, absolute entries only); install it, or give its absolute path \
         (command = [\"/path/to/{program}\", …]); a path with a `/` is taken relative to the \
         manifest's directory, {}",
        base.display()
    )
}

/// Finds the program now, once: a path with `/` is taken relative to `base`; a bare name is
/// looked up in airlock's `PATH` (absolute entries only: a relative entry would make the
/// result depend on the working directory). The result must be an executable regular file.
pub(crate) fn resolve_program(program: &str, base: &Path) -> Option<PathBuf> {
    let executable = |path: &Path| {
        std::fs::metadata(path)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = base.join(program);
        return executable(&path).then_some(path);
    }
    if program.is_empty() {
        return None;
    }
    let search = std::env::var_os("PATH")?;
    std::env::split_paths(&search)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}

fn arg(name: &str, raw: &RawArg, workdir: &Path, max_string: usize) -> Result<ArgSpec, String> {
    let (kind, default, description, required) = match raw {
        RawArg::String(s) => string_arg(s, max_string)?,
        RawArg::Integer(i) => integer_arg(i)?,
        RawArg::Boolean(b) => boolean_arg(b)?,
        RawArg::Path(p) => path_arg(p, workdir)?,
        RawArg::Array(a) => array_arg(a, max_string)?,
    };
    if required == Some(true) && default.is_some() {
        return Err("an argument with a default cannot be required".into());
    }
    let required = required.unwrap_or(default.is_none());
    Ok(ArgSpec {
        name: name.to_owned(),
        description,
        required,
        default,
        kind,
    })
}

type Parsed = (ArgKind, Option<Value>, Option<String>, Option<bool>);

fn string_rule(
    max_string: usize,
    max_length: Option<u64>,
    min_length: Option<u64>,
    pattern: Option<&str>,
    values: Option<&Vec<String>>,
    allow_leading_dash: bool,
    stdin: bool,
) -> Result<StringRule, String> {
    let max_length = match max_length {
        None => DEFAULT_STRING_ARG_CHARS.min(max_string),
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| (1..=max_string).contains(n))
            .ok_or_else(|| {
                format!("max_length must be between 1 and limits.max_string_bytes ({max_string})")
            })?,
    };
    let min_length = usize::try_from(min_length.unwrap_or(0)).unwrap_or(usize::MAX);
    if min_length > max_length {
        return Err("min_length is greater than max_length".into());
    }
    let pattern = match pattern {
        None => None,
        Some(source) => {
            let regex = regex::RegexBuilder::new(source)
                .size_limit(airlock::limits::MAX_PATTERN_AUTOMATON_BYTES)
                .build()
                .map_err(|_| {
                    "pattern is not a valid regular expression (Rust regex syntax)".to_owned()
                })?;
            Some((regex, source.to_owned()))
        }
    };
    if let Some(values) = values {
        if values.is_empty() {
            return Err("enum must list at least one value".into());
        }
        if values
            .iter()
            .any(|v| v.chars().count() > max_length || v.contains('\0'))
        {
            return Err("an enum value is longer than max_length or contains NUL".into());
        }
    }
    Ok(StringRule {
        min_length,
        max_length,
        pattern,
        values: values.cloned(),
        allow_leading_dash,
        stdin,
    })
}

impl StringRule {
    /// Whether `value` passes the rule (used on manifest defaults; agents' values are checked
    /// by the generated schema).
    fn admits(&self, value: &str) -> bool {
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

fn string_arg(raw: &RawStringArg, max_string: usize) -> Result<Parsed, String> {
    let rule = string_rule(
        max_string,
        raw.max_length,
        raw.min_length,
        raw.pattern.as_deref(),
        raw.values.as_ref(),
        raw.allow_leading_dash,
        raw.stdin,
    )?;
    if let Some(default) = &raw.default
        && !rule.admits(default)
    {
        return Err("the default does not satisfy the argument's own rules".into());
    }
    Ok((
        ArgKind::String(rule),
        raw.default.clone().map(Value::from),
        raw.description.clone(),
        raw.required,
    ))
}

fn integer_arg(raw: &RawIntegerArg) -> Result<Parsed, String> {
    let minimum = raw.minimum.unwrap_or(i64::MIN);
    let maximum = raw.maximum.unwrap_or(i64::MAX);
    if minimum > maximum {
        return Err("minimum is greater than maximum".into());
    }
    if let Some(default) = raw.default
        && !(minimum..=maximum).contains(&default)
    {
        return Err("the default is outside minimum..maximum".into());
    }
    Ok((
        ArgKind::Integer { minimum, maximum },
        raw.default.map(Value::from),
        raw.description.clone(),
        raw.required,
    ))
}

fn boolean_arg(raw: &RawBooleanArg) -> Result<Parsed, String> {
    if let Some(flag) = &raw.flag
        && (!flag.starts_with('-') || flag.contains(['{', '}', '\0', '=']) || flag.len() > 128)
    {
        return Err("flag must be an option such as `--verbose`".into());
    }
    Ok((
        ArgKind::Boolean {
            flag: raw.flag.clone(),
        },
        Some(Value::Bool(raw.default.unwrap_or(false))),
        raw.description.clone(),
        Some(false),
    ))
}

fn path_arg(raw: &RawPathArg, workdir: &Path) -> Result<Parsed, String> {
    let root = directory(workdir, raw.within.as_deref().unwrap_or("."))
        .ok_or("within must be an existing directory")?;
    let kind = match raw.kind.unwrap_or(RawPathKind::Any) {
        RawPathKind::File => PathKind::File,
        RawPathKind::Dir => PathKind::Dir,
        RawPathKind::Any => PathKind::Any,
    };
    if let Some(default) = &raw.default
        && (default.is_empty() || default.starts_with('/') || default.contains('\0'))
    {
        return Err("the default must be a relative path".into());
    }
    Ok((
        ArgKind::Path(PathRule {
            root,
            must_exist: raw.must_exist.unwrap_or(true),
            kind,
        }),
        raw.default.clone().map(Value::from),
        raw.description.clone(),
        raw.required,
    ))
}

fn array_arg(raw: &RawArrayArg, max_string: usize) -> Result<Parsed, String> {
    let items = string_rule(
        max_string,
        raw.item_max_length,
        None,
        raw.item_pattern.as_deref(),
        raw.item_enum.as_ref(),
        raw.allow_leading_dash,
        false,
    )?;
    let max_items = match raw.max_items {
        None => DEFAULT_ARRAY_ARG_ITEMS,
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_ARRAY_ITEMS).contains(n))
            .ok_or_else(|| format!("max_items must be between 1 and {MAX_ARRAY_ITEMS}"))?,
    };
    let min_items = usize::try_from(raw.min_items.unwrap_or(0)).unwrap_or(usize::MAX);
    if min_items > max_items {
        return Err("min_items is greater than max_items".into());
    }
    if let Some(default) = &raw.default
        && (default.len() > max_items
            || default.len() < min_items
            || !default.iter().all(|item| items.admits(item)))
    {
        return Err("the default does not satisfy the argument's own rules".into());
    }
    Ok((
        ArgKind::Array {
            items,
            min_items,
            max_items,
        },
        raw.default.clone().map(|items| json!(items)),
        raw.description.clone(),
        raw.required,
    ))
}

/// Parses the argv template: literals, whole-element placeholders and `--opt={x}`.
fn template(elements: &[String], args: &[ArgSpec], risks: &[Risk]) -> Result<Vec<Element>, String> {
    let index: BTreeMap<&str, usize> = args
        .iter()
        .enumerate()
        .map(|(i, arg)| (arg.name.as_str(), i))
        .collect();
    let mut used = vec![false; args.len()];
    let mut after_double_dash = false;
    let mut out = Vec::with_capacity(elements.len());
    for element in elements {
        if element.contains('\0') {
            return Err("a template element contains NUL".into());
        }
        let (prefix, name, suffix) = match split_element(element)? {
            Split::Literal(text) => {
                if text == "--" {
                    after_double_dash = true;
                }
                out.push(Element::Literal(text));
                continue;
            }
            Split::Placeholder {
                prefix,
                name,
                suffix,
            } => (prefix, name, suffix),
        };
        let (prefix, name, suffix) = (prefix.as_str(), name.as_str(), suffix.as_str());
        if name.is_empty() {
            return Err(format!(
                "`{element}` holds an empty placeholder `{{}}`; write `{{{{}}}}` for literal braces"
            ));
        }
        let Some(&arg) = index.get(name) else {
            return Err(format!("`{{{name}}}` is not a declared argument"));
        };
        let spec = args.get(arg).ok_or("internal: argument index")?;
        if used.get(arg).copied().unwrap_or(true) {
            return Err(format!("`{{{name}}}` is used more than once"));
        }
        if let Some(slot) = used.get_mut(arg) {
            *slot = true;
        }
        let option_form = !prefix.is_empty() && suffix.is_empty() && is_option_prefix(prefix);
        let embedded = (!prefix.is_empty() && !option_form) || !suffix.is_empty();
        if embedded && !risks.contains(&Risk::EmbeddedPlaceholder) {
            return Err(format!(
                "`{element}`: a placeholder must be a whole element or the value of `--opt={{x}}`; \
                 anything else needs accept_risk = [\"embedded_placeholder\"]"
            ));
        }
        check_placement(
            spec,
            prefix.is_empty(),
            suffix.is_empty(),
            after_double_dash,
            out.last(),
        )?;
        out.push(Element::Value {
            arg,
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            after_double_dash,
        });
    }
    for (spec, used) in args.iter().zip(&used) {
        let stdin = matches!(&spec.kind, ArgKind::String(rule) if rule.stdin);
        match (stdin, used) {
            (true, true) => {
                return Err(format!(
                    "`{}` goes to stdin and cannot also be in the command",
                    spec.name
                ));
            }
            (false, false) => {
                return Err(format!(
                    "`{}` is declared but the command never uses it",
                    spec.name
                ));
            }
            _ => {}
        }
    }
    if args
        .iter()
        .filter(|a| matches!(&a.kind, ArgKind::String(r) if r.stdin))
        .count()
        > 1
    {
        return Err("at most one argument can go to stdin".into());
    }
    Ok(out)
}

/// A template element read: `{{` and `}}` are literal braces, `{name}` a placeholder.
enum Split {
    /// No placeholder.
    Literal(String),
    /// One placeholder, with the text around it.
    Placeholder {
        prefix: String,
        name: String,
        suffix: String,
    },
}

/// Reads a template element; at most one placeholder.
fn split_element(element: &str) -> Result<Split, String> {
    const HINT: &str = "(write `{{` or `}}` for a literal brace)";
    let mut before = String::new();
    let mut name: Option<String> = None;
    let mut after = String::new();
    let mut chars = element.chars().peekable();
    while let Some(c) = chars.next() {
        let placed = name.is_some();
        let out = if placed { &mut after } else { &mut before };
        match c {
            '{' | '}' if chars.next_if_eq(&c).is_some() => out.push(c),
            '{' if placed => {
                return Err(format!(
                    "`{element}` holds more than one placeholder {HINT}"
                ));
            }
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some('{') | None => {
                            return Err(format!("`{element}` has an unmatched `{{` {HINT}"));
                        }
                        Some(c) => inner.push(c),
                    }
                }
                name = Some(inner);
            }
            '}' => return Err(format!("`{element}` has an unmatched `}}` {HINT}")),
            c => out.push(c),
        }
    }
    Ok(match name {
        None => Split::Literal(before),
        Some(name) => Split::Placeholder {
            prefix: before,
            name,
            suffix: after,
        },
    })
}

/// `-x=` or `--long-name=`.
fn is_option_prefix(prefix: &str) -> bool {
    let Some(body) = prefix.strip_suffix('=') else {
        return false;
    };
    let name = body.strip_prefix("--").or_else(|| body.strip_prefix('-'));
    name.is_some_and(|name| {
        name.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    })
}

/// Shapes that would let a value be read as something else.
fn check_placement(
    spec: &ArgSpec,
    starts: bool,
    ends: bool,
    after_double_dash: bool,
    previous: Option<&Element>,
) -> Result<(), String> {
    let whole = starts && ends;
    match &spec.kind {
        ArgKind::Boolean { flag: None } if whole => {
            return Err(format!(
                "boolean `{}` as a whole element needs a `flag`",
                spec.name
            ));
        }
        ArgKind::Boolean { flag: Some(_) } if !whole => {
            return Err(format!(
                "boolean `{}` has a `flag`, so it must be a whole element",
                spec.name
            ));
        }
        // After an option that takes a value, the second item would become an operand
        // (`grep -e {patterns}` → `grep -e root /etc/passwd`); which options take values
        // cannot be known from outside, so lists go after `--` or into `--opt={x}`.
        ArgKind::Array { .. } if whole && !after_double_dash => {
            return Err(format!(
                "array `{}`: a list must come after a literal `--`, or be written `--opt={{{}}}` \
                 (one `--opt=item` per item)",
                spec.name, spec.name
            ));
        }
        // `{n}` and `{n}.5` alike: a value that starts an element is read as an option.
        ArgKind::Integer { minimum, .. } if starts && !after_double_dash && *minimum < 0 => {
            return Err(format!(
                "integer `{}` can be negative, and `-5` at the start of an element reads as an \
                 option: set minimum = 0, put it after `--`, or write `--opt={{{}}}`",
                spec.name, spec.name
            ));
        }
        _ => {}
    }
    let optional = !spec.required && spec.default.is_none();
    let dangling =
        matches!(previous, Some(Element::Literal(text)) if text.starts_with('-') && text != "--");
    if whole && optional && dangling {
        return Err(format!(
            "`{}` is optional: when absent, the option before it would be left dangling; \
             write `--opt={{{}}}` instead",
            spec.name, spec.name
        ));
    }
    Ok(())
}

/// The tool's `inputSchema` (JSON Schema 2020-12) from its arguments.
pub(crate) fn input_schema(tool: &CommandTool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in &tool.args {
        let mut schema = match &arg.kind {
            ArgKind::String(rule) => string_schema(rule),
            ArgKind::Integer { minimum, maximum } => {
                json!({"type": "integer", "minimum": minimum, "maximum": maximum})
            }
            ArgKind::Boolean { .. } => json!({"type": "boolean"}),
            ArgKind::Path(rule) => {
                let what = match rule.kind {
                    PathKind::File => "a file",
                    PathKind::Dir => "a directory",
                    PathKind::Any => "a file or directory",
                };
                json!({
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 4096,
                    "description": format!(
                        "Path of {what} inside the tool's directory: relative to it, or absolute."
                    ),
                })
            }
            ArgKind::Array {
                items,
                min_items,
                max_items,
            } => json!({
                "type": "array",
                "items": string_schema(items),
                "minItems": min_items,
                "maxItems": max_items,
            }),
        };
        if let Value::Object(map) = &mut schema {
            if let Some(description) = &arg.description {
                map.insert("description".into(), Value::from(description.as_str()));
            }
            if let Some(default) = &arg.default {
                map.insert("default".into(), default.clone());
            }
        }
        if arg.required {
            required.push(Value::from(arg.name.as_str()));
        }
        properties.insert(arg.name.clone(), schema);
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn string_schema(rule: &StringRule) -> Value {
    let mut schema = json!({
        "type": "string",
        "minLength": rule.min_length,
        "maxLength": rule.max_length,
    });
    if let Value::Object(map) = &mut schema {
        if let Some((_, source)) = &rule.pattern {
            map.insert("pattern".into(), Value::from(source.as_str()));
        }
        if let Some(values) = &rule.values {
            map.insert("enum".into(), json!(values));
        }
    }
    schema
}

impl Manifest {
    /// A human-readable account of what this manifest lets agents run: each tool's argv
    /// template, arguments, limits, environment names (never values) and accepted risks.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, text: &str| {
            out.push_str(text);
            out.push('\n');
        };
        line(
            &mut out,
            &format!("manifest: {} ({} tools)", self.source, self.tools.len()),
        );
        line(
            &mut out,
            &format!("server:   {} {}", self.name, self.version),
        );
        let l = &self.limits;
        let show_rate = |rate: Option<Rate>| {
            rate.map_or_else(
                || "off".to_owned(),
                |r| format!("{}/min burst {}", r.per_minute, r.burst),
            )
        };
        line(
            &mut out,
            &format!(
                "limits:   max_in_flight={} tool_timeout={}ms max_frame_bytes={} max_argument_bytes={} max_string_bytes={}",
                l.max_in_flight,
                l.tool_timeout.as_millis(),
                l.max_frame_bytes,
                l.max_argument_bytes,
                l.max_string_bytes
            ),
        );
        line(
            &mut out,
            &format!(
                "quotas:   tools/call {}; cheap methods {}",
                show_rate(l.tool_call_rate),
                show_rate(l.cheap_method_rate)
            ),
        );
        for tool in &self.tools {
            out.push('\n');
            line(
                &mut out,
                &format!("tool {} — {}", tool.name.as_str(), tool.description),
            );
            let mut argv = vec![tool.program.display().to_string()];
            argv.extend(tool.template.iter().map(|e| match e {
                Element::Literal(text) => shell_quote(text),
                Element::Value {
                    arg,
                    prefix,
                    suffix,
                    ..
                } => {
                    let name = tool.args.get(*arg).map_or("?", |a| a.name.as_str());
                    format!("{prefix}{{{name}}}{suffix}")
                }
            }));
            line(&mut out, &format!("  argv:    {}", argv.join(" ")));
            line(&mut out, &format!("  operands: {}", tool.reading.summary));
            for (i, arg) in tool.args.iter().enumerate() {
                let label = if i == 0 { "  args:   " } else { "          " };
                line(&mut out, &format!("{label} {}", describe_arg(arg)));
            }
            let timeout = tool.timeout.map_or_else(
                || format!("{} ms (server default)", l.tool_timeout.as_millis()),
                |t| format!("{} ms", t.as_millis()),
            );
            let quota = tool.rate.map_or_else(
                || "server quota only".to_owned(),
                |r| format!("{}/min, burst {}", r.per_minute, r.burst),
            );
            line(
                &mut out,
                &format!(
                    "  limits:  timeout {timeout}; output {} bytes per stream and per reply; rate {quota}; success exit codes {:?}; stderr {}",
                    tool.max_output_bytes,
                    tool.success_codes,
                    tool.stderr.describe()
                ),
            );
            line(&mut out, &format!("  workdir: {}", tool.workdir.display()));
            let mut env: Vec<String> = tool
                .env
                .iter()
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .collect();
            env.extend(
                tool.secrets
                    .iter()
                    .map(|s| format!("{} (secret, redacted from output)", s.name())),
            );
            let env = if env.is_empty() {
                "(empty)".to_owned()
            } else {
                env.join(", ")
            };
            line(&mut out, &format!("  env:     {env}"));
            match &tool.sandbox {
                Some(confinement) => {
                    line(&mut out, "  sandbox: on");
                    out.push_str(&confinement.policy().describe("    "));
                }
                None => line(&mut out, "  sandbox: OFF (accepted risk: unsandboxed)"),
            }
            let risks: Vec<&str> = tool.accepted_risks.iter().map(|r| r.as_str()).collect();
            if !risks.is_empty() {
                line(&mut out, &format!("  ACCEPTED RISKS: {}", risks.join(", ")));
            }
        }
        out
    }
}

fn describe_arg(arg: &ArgSpec) -> String {
    let kind = match &arg.kind {
        ArgKind::String(rule) => describe_string(rule),
        ArgKind::Integer { minimum, maximum } => format!("integer {minimum}..={maximum}"),
        ArgKind::Boolean { flag: Some(flag) } => format!("boolean (adds `{flag}` when true)"),
        ArgKind::Boolean { flag: None } => "boolean (true/false)".to_owned(),
        ArgKind::Path(rule) => format!(
            "path ({}) under {}{}",
            match rule.kind {
                PathKind::File => "file",
                PathKind::Dir => "directory",
                PathKind::Any => "file or directory",
            },
            rule.root.display(),
            if rule.must_exist {
                ""
            } else {
                ", may not exist yet"
            }
        ),
        ArgKind::Array {
            items,
            min_items,
            max_items,
        } => {
            format!(
                "array of {min_items}..={max_items} items, each {}",
                describe_string(items)
            )
        }
    };
    let presence = match (&arg.default, arg.required) {
        (Some(default), _) => format!(", default {default}"),
        (None, true) => ", required".to_owned(),
        (None, false) => ", optional".to_owned(),
    };
    format!("{}: {kind}{presence}", arg.name)
}

fn describe_string(rule: &StringRule) -> String {
    let mut text = format!(
        "string of {}..={} characters",
        rule.min_length, rule.max_length
    );
    if let Some((_, pattern)) = &rule.pattern {
        text.push_str(&format!(" matching `{pattern}`"));
    }
    if let Some(values) = &rule.values {
        text.push_str(&format!(" in {values:?}"));
    }
    if rule.allow_leading_dash {
        text.push_str(", may start with '-'");
    }
    if rule.stdin {
        text.push_str(", sent on stdin");
    }
    text
}

/// Quotes a literal for display when it holds characters a reader could misread.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=./,:@%+".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("{text:?}")
    }
}
