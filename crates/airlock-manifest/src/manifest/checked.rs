//! The manifest once checked: every program resolved to an absolute path, every template
//! parsed, every argument's rules validated, every environment value read.
//!
//! Nothing here trusts the raw file beyond its syntax. A value of this module's types proves
//! its checks ran: [`super::load`] is the only way to get one.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;

use super::arguments::arg;
use super::argv::template;
pub use super::bounds::{StderrMode, StoreSettings};
use super::bounds::{limits, output_cap, rate, resources, shared_store, stderr_mode, timeout};
use super::raw::{RawManifest, RawNetwork, RawTask, RawTool};
use super::risk::{self, Reading, Risk};
use super::rule::{CompressorRule, Rule};
use super::surface::{PromptSpec, ResourceRoot};
use super::system::{NEVER_GRANTED, fixed_system_entries, home_directory, system_write_refusal};
use super::template::valid_arg_name;
pub use super::template::{ArgKind, ArgSpec, Element, PathKind, PathRule, StringRule};
use super::{Located, ManifestError};
use crate::limits::MAX_OUTPUT_BYTES;
use crate::limits::MIN_SECRET_BYTES;
use crate::locate::{directory, program_not_found, resolve_program};
use crate::sandbox::destinations::{Destinations, parse_destination};
use crate::sandbox::{Confinement, Declared, Policy, Resources, SYSTEM_WRITE_FILES, later_code};
use crate::secrets::Secret;
use airlock::limits::MAX_TOOL_SCOPES;
use airlock::limits::{Limits, Rate};
use airlock::{TaskMode, Tool, ToolAnnotations, ToolName};

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
    /// `[server] metrics`: where `airlock serve` serves Prometheus metrics (`--metrics`
    /// overrides it); read at start, a reload does not move it.
    pub metrics: Option<std::net::SocketAddr>,
    /// `[server] otlp`: where `airlock serve` exports OpenTelemetry traces (`--otlp`
    /// overrides it); read at start.
    pub otlp: Option<String>,
    /// `[limits] quota_store = "redis"`: quotas, in-flight caps and legacy HTTP sessions
    /// shared by every replica (`airlock serve --http`); `None`: counted in the process.
    pub shared_store: Option<StoreSettings>,
    /// The tools, in file order.
    pub tools: Vec<CommandTool>,
    /// The `[[prompt]]` entries, in file order.
    pub prompts: Vec<PromptSpec>,
    /// The `[[resource]]` roots, in file order, their files listed.
    pub resources: Vec<ResourceRoot>,
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
    /// Whether a client may run it as a task (`task`).
    pub task: TaskMode,
    /// The deadline of its task runs, if it sets one (`task_timeout_ms`).
    pub task_timeout: Option<Duration>,
    /// Cap on each of stdout and stderr.
    pub max_output_bytes: usize,
    /// A quota of the tool's own, on top of the server's.
    pub rate: Option<Rate>,
    /// OAuth scopes an HTTP caller's access token must all hold (none: any valid token).
    pub scopes: Vec<String>,
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
    /// What `airlock check` shows and `serve` logs at `warn`, without refusing the tool: a
    /// fixed path the sandbox does not show the command.
    pub warnings: Vec<String>,
}

/// Checks a raw manifest. `base` resolves relative paths; `text` is the file, for positions.
pub(super) fn check(
    mut raw: RawManifest,
    source: &str,
    text: &str,
    base: &Path,
) -> Result<Manifest, ManifestError> {
    let at = Located { source, text };
    super::defaults::expanded(&mut raw, &at)?;
    let limits = limits(&raw.limits, &at)?;
    let shared_store = shared_store(&raw.limits, &at)?;
    let default_output = match &raw.limits.max_output_bytes {
        Some(value) => output_cap(value, &at, None)?,
        None => MAX_OUTPUT_BYTES,
    };
    if raw.tools.is_empty() {
        return Err(at.error(None, None, "[[tool]]", Rule::NoTools));
    }
    let mut names = BTreeSet::new();
    let mut tools = Vec::with_capacity(raw.tools.len());
    // Every tool is checked, so that one run lists the errors of all of them.
    let mut errors = Vec::new();
    for mut tool in raw.tools {
        let span = tool.span();
        if let Err(error) = super::defaults::apply(&raw.defaults, tool.get_mut(), &at) {
            errors.push(error);
            continue;
        }
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
                Rule::DuplicateTool,
            ));
        }
        tools.push(tool);
    }
    if let Some(error) = ManifestError::combined(errors) {
        return Err(error);
    }
    if tools.len() > airlock::limits::MAX_TOOLS_COUNT {
        return Err(at.error(None, None, "[[tool]]", Rule::TooManyTools));
    }
    refuse_grants_inside_writable_directories(&tools, &at)?;
    let texts: Vec<super::told::ToolText<'_>> = tools
        .iter()
        .map(|tool| super::told::ToolText {
            name: tool.name.as_str(),
            title: tool.title.as_deref(),
            description: &tool.description,
            args: tool
                .args
                .iter()
                .map(|arg| {
                    (
                        arg.name.as_str(),
                        arg.description.as_deref(),
                        arg.default.as_ref(),
                    )
                })
                .collect(),
            accepted: &tool.accepted_risks,
        })
        .collect();
    super::told::refuse_unaccepted(&texts, &at)?;
    let prompts = super::surface::prompts(raw.prompts, &at)?;
    let mut expanded = Vec::with_capacity(raw.resources.len());
    let mut errors = Vec::new();
    for mut resource in raw.resources {
        let span = resource.span().start;
        let raw = resource.get_mut();
        match super::defaults::expand(raw.root.get_ref()) {
            Ok(full) => *raw.root.get_mut() = full,
            Err(rule) => {
                let name = Some(raw.name.as_str());
                errors.push(at.error_in(super::Entry::Resource, Some(span), name, "root", rule));
            }
        }
        expanded.push(resource);
    }
    if let Some(error) = ManifestError::combined(errors) {
        return Err(error);
    }
    let resources = super::surface::resources(expanded, &at, base, home_directory())?;
    let server = raw.server;
    let metrics = match &server.metrics {
        Some(value) => Some(value.get_ref().parse().map_err(|_| {
            at.error(
                Some(value.span().start),
                None,
                "server.metrics",
                Rule::MetricsAddress,
            )
        })?),
        None => None,
    };
    // The whole URL is read at start (`airlock serve`); here, what a typo most often breaks.
    let otlp = match &server.otlp {
        Some(value)
            if value
                .get_ref()
                .strip_prefix("http://")
                .is_some_and(|rest| !rest.is_empty() && !rest.contains(char::is_whitespace)) =>
        {
            Some(value.get_ref().clone())
        }
        Some(value) => {
            return Err(at.error(
                Some(value.span().start),
                None,
                "server.otlp",
                Rule::OtlpEndpoint,
            ));
        }
        None => None,
    };
    Ok(Manifest {
        source: source.to_owned(),
        name: server.name.unwrap_or_else(|| "airlock".to_owned()),
        version: server
            .version
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
        title: server.title,
        instructions: server.instructions,
        metrics,
        otlp,
        limits,
        shared_store,
        tools,
        prompts,
        resources,
    })
}

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
                Rule::ScriptInWritable {
                    script: script.clone(),
                    dir: dir.to_path_buf(),
                    owner: (*owner).to_owned(),
                },
            ));
        }
        let Some(sandbox) = &tool.sandbox else {
            continue;
        };
        for granted in sandbox.policy().granted() {
            // A tool's own grant of a later-code directory inside its own writable directory
            // is bound over it in its launcher (where it cannot be swapped) and accepted as a
            // risk above.
            let own_later_code = |owner: &str, dir: &Path| {
                owner == tool.name.as_str()
                    && sandbox.policy().write.iter().any(|path| path == granted)
                    && later_code::names_later_code(dir, granted)
            };
            let inside = writable.iter().find(|(owner, dir)| {
                granted != *dir && granted.starts_with(dir) && !own_later_code(owner, dir)
            });
            if let Some((owner, dir)) = inside {
                return Err(at.error(
                    None,
                    Some(tool.name.as_str()),
                    "sandbox",
                    Rule::GrantInWritable {
                        granted: granted.to_path_buf(),
                        dir: dir.to_path_buf(),
                        owner: (*owner).to_owned(),
                    },
                ));
            }
        }
    }
    Ok(())
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
        let name = ToolName::parse(&name_text)
            .map_err(|_| at.error(Some(raw.name.span().start), tool, "name", Rule::Name))?;
        if raw.description.get_ref().trim().is_empty() {
            return Err(at.error(
                Some(raw.description.span().start),
                tool,
                "description",
                Rule::EmptyDescription,
            ));
        }
        let command_at = Some(raw.command.span().start);
        let fail = |field: &str, rule: Rule| at.error(command_at, tool, field, rule);
        let Some((program_text, template_text)) = raw.command.get_ref().split_first() else {
            return Err(fail("command", Rule::NoProgram));
        };
        if program_text.contains('{') || program_text.contains('}') {
            return Err(fail("command", Rule::PlaceholderProgram));
        }
        if let Some(syntax) = raw
            .command
            .get_ref()
            .iter()
            .find(|element| is_shell_syntax(program_text, element))
        {
            return Err(fail(
                "command",
                Rule::ShellSyntax {
                    syntax: syntax.clone(),
                },
            ));
        }
        let workdir = match &raw.workdir {
            Some(dir) => directory(self.base, dir.get_ref()).ok_or_else(|| {
                at.error(
                    Some(dir.span().start),
                    tool,
                    "workdir",
                    Rule::Workdir {
                        dir: self.base.join(dir.get_ref()),
                        base: self.base.to_path_buf(),
                    },
                )
            })?,
            None => directory(self.base, ".").ok_or_else(|| {
                at.error(
                    Some(self.span.start),
                    tool,
                    "workdir",
                    Rule::NoBaseDirectory,
                )
            })?,
        };
        let program = resolve_program(program_text, self.base).ok_or_else(|| {
            fail(
                "command",
                Rule::ProgramNotFound(program_not_found(program_text, self.base)),
            )
        })?;

        let mut args = Vec::with_capacity(raw.args.len());
        for (arg_name, spec) in &raw.args {
            let arg_at = Some(spec.span().start);
            let field = format!("args.{arg_name}");
            if !valid_arg_name(arg_name) {
                return Err(at.error(arg_at, tool, &field, Rule::ArgumentName));
            }
            let parsed = arg(arg_name, spec.get_ref(), &workdir, self.max_string_bytes)
                .map_err(|rule| at.error(arg_at, tool, &field, rule))?;
            args.push(parsed);
        }

        let accepted_risks = raw
            .accept_risk
            .iter()
            .map(|risk| {
                Risk::parse(risk.get_ref()).ok_or_else(|| {
                    at.error(
                        Some(risk.span().start),
                        tool,
                        "accept_risk",
                        Rule::UnknownRisk,
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let template = template(template_text, &args, &accepted_risks)
            .map_err(|rule| fail("command", rule.into()))?;
        let assessment = risk::assess(&program, &template, &args, &workdir);
        risk::refuse_unaccepted(&assessment, &accepted_risks)
            .map_err(|rule| fail("command", rule.into()))?;

        let (env, secrets) = self.environment(&raw, tool)?;
        let mut warnings = Vec::new();
        let sandbox = self.sandbox(
            &raw,
            tool,
            (&program, &template),
            &workdir,
            &args,
            (&accepted_risks, &mut warnings),
        )?;
        let timeout = match &raw.timeout_ms {
            Some(value) => Some(timeout(value, at, tool, "timeout_ms")?),
            None => None,
        };
        let task = match raw.task {
            None | Some(RawTask::Never) => TaskMode::Never,
            Some(RawTask::Optional) => TaskMode::Optional,
            Some(RawTask::Always) => TaskMode::Always,
        };
        let task_timeout = match &raw.task_timeout_ms {
            Some(value) => Some(super::bounds::timeout(value, at, tool, "task_timeout_ms")?),
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
        let scopes = raw
            .scopes
            .as_ref()
            .map(|scopes| scopes.get_ref().clone())
            .unwrap_or_default();
        if scopes.len() > MAX_TOOL_SCOPES || !scopes.iter().all(|scope| Tool::is_scope(scope)) {
            return Err(at.error(
                raw.scopes.as_ref().map(|scopes| scopes.span().start),
                tool,
                "scopes",
                Rule::Scopes,
            ));
        }
        let stderr = stderr_mode(&raw, at, tool, max_output_bytes)?;
        let success_codes = match &raw.success_codes {
            Some(codes) if codes.get_ref().is_empty() => {
                return Err(at.error(Some(codes.span().start), tool, "success_codes", Rule::Empty));
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
            task,
            task_timeout,
            max_output_bytes,
            rate,
            scopes,
            workdir,
            env,
            secrets,
            success_codes,
            stderr,
            annotations,
            accepted_risks,
            reading: assessment.reading,
            sandbox,
            warnings,
        })
    }

    /// The tool's sandbox: `sandbox`, `read`, `write`, `exec`, `network`, `resources`.
    fn sandbox(
        &self,
        raw: &RawTool,
        tool: Option<&str>,
        (program, template): (&Path, &[Element]),
        workdir: &Path,
        args: &[ArgSpec],
        (accepted, warnings): (&[Risk], &mut Vec<String>),
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
                        Rule::SandboxSwitch,
                    ));
                }
            },
        };
        if off {
            let span = raw.sandbox.as_ref().map(|value| value.span().start);
            if !accepted.contains(&Risk::Unsandboxed) {
                return Err(at.error(span, tool, "sandbox", Rule::Unsandboxed));
            }
            let declared = !raw.read.is_empty()
                || !raw.write.is_empty()
                || !raw.exec.is_empty()
                || raw.network.as_ref().is_some_and(RawNetwork::is_on)
                || raw.resources.is_some();
            if declared {
                return Err(at.error(span, tool, "sandbox", Rule::GrantsWithoutSandbox));
            }
            return Ok(None);
        }
        let mut read = Vec::with_capacity(raw.read.len());
        for entry in &raw.read {
            let full = self.base.join(entry.get_ref());
            let path = std::fs::canonicalize(&full).map_err(|_| {
                at.error(
                    Some(entry.span().start),
                    tool,
                    "read",
                    Rule::ReadMissing { path: full.clone() },
                )
            })?;
            read.push(path);
        }
        let mut write = Vec::with_capacity(raw.write.len());
        for entry in &raw.write {
            let refused = |rule: Rule| at.error(Some(entry.span().start), tool, "write", rule);
            if Path::new(entry.get_ref()).is_absolute() {
                return Err(refused(Rule::WriteAbsolute {
                    workdir: workdir.to_path_buf(),
                }));
            }
            let dir = directory(workdir, entry.get_ref()).ok_or_else(|| {
                refused(Rule::WriteMissing {
                    path: workdir.join(entry.get_ref()),
                })
            })?;
            if !dir.starts_with(workdir) {
                return Err(refused(Rule::WriteOutsideWorkdir {
                    workdir: workdir.to_path_buf(),
                    dir,
                }));
            }
            if let Some(rule) = system_write_refusal(&dir, fixed_system_entries(), home_directory())
            {
                return Err(refused(Rule::SystemWrite(rule)));
            }
            write.push(dir);
        }
        // Inside a writable directory, what makes other programs run code later stays
        // read-only (`sandbox::later_code`) unless the tool names it, which is a risk of its own.
        for (entry, dir) in raw.write.iter().zip(&write) {
            let names_later_code = write
                .iter()
                .any(|outer| outer != dir && later_code::names_later_code(outer, dir));
            if names_later_code && !accepted.contains(&Risk::LaterCode) {
                return Err(at.error(
                    Some(entry.span().start),
                    tool,
                    "write",
                    Rule::LaterCode { dir: dir.clone() },
                ));
            }
        }
        let mut exec = Vec::with_capacity(raw.exec.len());
        for entry in &raw.exec {
            let text = entry.get_ref();
            let refused = || {
                at.error(
                    Some(entry.span().start),
                    tool,
                    "exec",
                    Rule::ExecMissing {
                        entry: text.clone(),
                        path: text.contains('/').then(|| self.base.join(text)),
                    },
                )
            };
            // A path is taken from the manifest's directory, as `resolve_program` takes it:
            // never from airlock's working directory.
            let path = if !text.contains('/') || self.base.join(text).is_file() {
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
        let (network, destinations) = match &raw.network {
            None | Some(RawNetwork::Switch(false)) => (false, Destinations::default()),
            Some(RawNetwork::Switch(true)) => (true, Destinations::any_public()),
            Some(RawNetwork::Destinations(list)) => {
                let mut rules = Vec::with_capacity(list.len());
                for entry in list {
                    let rule = parse_destination(entry).map_err(|why| {
                        at.error(
                            Some(self.span.start),
                            tool,
                            "network",
                            Rule::Destination {
                                entry: entry.clone(),
                                why,
                            },
                        )
                    })?;
                    if !rules.contains(&rule) {
                        rules.push(rule);
                    }
                }
                if rules.is_empty() {
                    return Err(at.error(
                        Some(self.span.start),
                        tool,
                        "network",
                        Rule::NoDestinations,
                    ));
                }
                (
                    true,
                    Destinations {
                        any_public: false,
                        rules,
                    },
                )
            }
        };
        let roots = args
            .iter()
            .filter_map(|arg| match &arg.kind {
                ArgKind::Path(rule) => Some(rule.root.clone()),
                _ => None,
            })
            .collect();
        let written_program = program.to_path_buf();
        let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
        let policy = Policy::for_command(
            &program,
            workdir,
            Declared {
                roots,
                read,
                exec,
                write,
                network,
                destinations,
                resources,
                written: vec![written_program],
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
                    Rule::NeverGranted {
                        granted: granted.to_path_buf(),
                        tree,
                    },
                ));
            }
        }
        if let Some(rule) = compressor_refusal(&program, template, &policy.exec, raw, self.base) {
            let span = raw
                .exec
                .first()
                .map_or(self.span.start, |entry| entry.span().start);
            return Err(at.error(Some(span), tool, "exec", rule));
        }
        let writable: Vec<PathBuf> = policy
            .write
            .iter()
            .cloned()
            .chain(SYSTEM_WRITE_FILES.iter().map(PathBuf::from))
            .collect();
        let fixed = super::literal_paths::look(template, workdir, &policy.bound_trees(), &writable);
        if let Some(rule) = fixed.refusal {
            return Err(at.error(Some(raw.command.span().start), tool, "command", rule));
        }
        warnings.extend(fixed.warnings);
        Confinement::new(policy)
            .map(|confinement| Some(Arc::new(confinement.for_tool(tool.unwrap_or_default()))))
            .map_err(|rule| at.error(Some(self.span.start), tool, "sandbox", rule))
    }

    /// `env_allow` values (read now), fixed `env`, and `secret_env` values (read now).
    fn environment(&self, raw: &RawTool, tool: Option<&str>) -> Result<Environment, ManifestError> {
        let at = self.at;
        let mut seen = BTreeSet::new();
        let mut claim = |name: &str, span: usize, field: &str| {
            if !airlock::variables::is_variable_name(name) {
                return Err(at.error(Some(span), tool, field, Rule::VariableName));
            }
            if !seen.insert(name.to_owned()) {
                return Err(at.error(Some(span), tool, field, Rule::VariableTwice));
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
                return Err(at.error(Some(value.span().start), tool, "env", Rule::VariableNul));
            }
            env.push((OsString::from(name), OsString::from(value.get_ref())));
        }
        let mut secrets = Vec::new();
        for name in &raw.secret_env {
            let span = Some(name.span().start);
            claim(name.get_ref(), name.span().start, "secret_env")?;
            let value = std::env::var(name.get_ref())
                .map_err(|_| at.error(span, tool, "secret_env", Rule::SecretUnset))?;
            if value.len() < MIN_SECRET_BYTES {
                return Err(at.error(span, tool, "secret_env", Rule::SecretShort));
            }
            secrets.push(Secret::new(
                name.get_ref().clone(),
                SecretString::from(value),
            ));
        }
        Ok((env, secrets))
    }
}

/// Why a tar tool's sandbox cannot run the compressor its options name (GNU tar starts it
/// through `/bin/sh -c`), with the `exec` line that would: `None` when it can, or for another
/// program.
fn compressor_refusal(
    program: &Path,
    template: &[Element],
    exec: &[PathBuf],
    raw: &RawTool,
    base: &Path,
) -> Option<CompressorRule> {
    let found = super::compressor::of_tar(program, template)?;
    let granted = |path: &Path| {
        std::fs::canonicalize(path)
            .is_ok_and(|real| exec.iter().any(|grant| real.starts_with(grant)))
    };
    let mut missing: Vec<&str> = Vec::new();
    if !granted(Path::new(super::compressor::SHELL)) {
        missing.push("sh");
    }
    let option = &found.option;
    if let Some(name) = &found.program {
        let Some(path) = resolve_program(name, base) else {
            return Some(CompressorRule::NotFound {
                option: option.clone(),
                name: name.clone(),
            });
        };
        if !granted(&path) {
            missing.push(name);
        }
    }
    if missing.is_empty() {
        return None;
    }
    let mut line: Vec<String> = raw
        .exec
        .iter()
        .map(|entry| format!("{:?}", entry.get_ref()))
        .collect();
    line.extend(missing.iter().map(|name| format!("{name:?}")));
    let line = line.join(", ");
    Some(match &found.program {
        Some(name) => CompressorRule::NotGranted {
            option: option.clone(),
            name: name.clone(),
            line,
        },
        None => CompressorRule::BySuffix {
            option: option.clone(),
            line,
        },
    })
}

/// Whether a command element is a shell operator or substitution: text a shell would act on
/// and a program receives as an argument (`git log | head` gives git a `|`). Not the
/// programs that take such words themselves: find's `;` (after `-exec`), and `<`, `>`, `&`,
/// `|` for `test`, `[` and `expr`; a `$(` inside an element is make's or awk's, not a
/// substitution, so only one that starts the element counts.
pub(crate) fn is_shell_syntax(program: &str, element: &str) -> bool {
    const OPERATORS: &[&str] = &[
        "|", "||", "|&", "&&", "&", ";", ";;", ">", ">>", "<", "<<", "<<<", "2>", "2>>", "2>&1",
        "&>", ">&",
    ];
    let name = Path::new(program)
        .file_name()
        .and_then(std::ffi::OsStr::to_str)
        .unwrap_or(program);
    let own: &[&str] = match name {
        "find" => &[";"],
        "test" | "[" | "expr" => &["<", ">", "&", "|"],
        _ => &[],
    };
    (OPERATORS.contains(&element) && !own.contains(&element))
        || element.starts_with("$(")
        || element.starts_with('`')
}
