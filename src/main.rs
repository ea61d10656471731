//! The `airlock` program: serve a manifest's commands over MCP, check a manifest, or audit
//! any stdio MCP server; try and set it up: `call`, `client-config`, `init`, `schema`,
//! `completions`, `man` (`cli/`).
//!
//! This file is the command line and its dispatch; what each command does lives beside it:
//! `serve` (the serving policy: the manifest, the sandbox gate, variables no tool may get,
//! the reload), `http_flags` (`--http`'s flags and the HTTP configuration they make),
//! `audit_command` (`airlock audit`'s flags and run), `cli/` (the set-up commands).
//!
//! Exit statuses: 0 normal end; 1 a manifest or start-up error; 2 a usage error (clap);
//! 3 the peer was cut off for sending only invalid messages; 4 stdin/stdout failed or the HTTP
//! address could not be bound.
//! `airlock audit`: 0 no finding fails the run; 1 one does (at or over `--fail-on`, not in the
//! `--baseline`); 2 a usage error; 3 the server could not be audited (did not start or
//! complete its handshake) or a report could not be written; 130 interrupted.
//! `airlock call`: 0 the tool succeeded; 1 it returned an error or the call was refused; 2
//! its arguments cannot be read.

use std::io::Write;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use airlock::limits::MAX_TOOL_TIMEOUT;
use airlock::transport::http::Tokens;
use airlock::{CallLog, Limits, Rate, Rotation, telemetry};
use airlock_manifest::manifest;
use airlock_manifest::{command, sandbox};
use clap::{CommandFactory as _, Parser, Subcommand};

mod audit_command;
mod cli;
mod http_flags;
mod serve;

use audit_command::{AuditFlags, run_audit};
use http_flags::HttpFlags;
use serve::{load, serve};

/// Exposes a command-line program's commands to AI agents over MCP, treating every agent as
/// hostile.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Tests only: names the network proxy resolves to fixed addresses (`NAME=ADDRESS`,
    /// repeatable), so a test can serve a listed name from loopback. Refused by release
    /// builds.
    #[arg(long, global = true, hide = true, value_name = "NAME=ADDRESS")]
    test_hosts: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a manifest's tools over MCP on stdin/stdout, or over HTTP with --http.
    ///
    /// Without --manifest, serves ./airlock.toml if it exists, else the embedded default:
    /// read-only tools over the current directory.
    // Boxed: its flags are most of the command line's size.
    Serve(Box<ServeFlags>),
    /// Validate a manifest and print what it lets agents run.
    Check {
        /// The manifest to check (default: ./airlock.toml, else the embedded default).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// The manifest, given without --manifest: `airlock check tools.toml`.
        #[arg(value_name = "MANIFEST", conflicts_with = "manifest")]
        manifest_file: Option<PathBuf>,
    },
    /// Call one of a manifest's tools from the shell, as an agent would, and print the result.
    ///
    /// Starts `airlock serve` with the manifest (the same checks, sandbox, limits and
    /// redaction as an agent's call), calls TOOL once and prints the result's text. Arguments
    /// are `key=value` (text) or `key:=json` (`count:=3`, `paths:='["a","b"]'`), or one
    /// object with --json. Exit status 0 when the tool succeeded, 1 when it returned an error
    /// (or the call was refused), 2 when the arguments cannot be read. `serve`'s log lines and
    /// the audit record go to stderr (`AIRLOCK_LOG=warn` quiets them).
    Call {
        /// The manifest (default: ./airlock.toml, else the embedded default).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// As for `serve`: `required` or `best-effort`.
        #[arg(long, value_name = "MODE", value_enum, default_value_t = SandboxMode::Required)]
        sandbox: SandboxMode,
        /// The arguments as one JSON object, instead of key=value pairs.
        #[arg(long, value_name = "OBJECT", conflicts_with = "arguments")]
        json: Option<String>,
        /// Print the whole result as JSON (content, structuredContent, isError), not its text.
        #[arg(long)]
        raw: bool,
        /// The tool to call.
        #[arg(value_name = "TOOL")]
        tool: String,
        /// Its arguments: key=value (text) or key:=json.
        #[arg(value_name = "ARGUMENT")]
        arguments: Vec<String>,
    },
    /// Print the snippet that adds airlock to an MCP client: claude-desktop, claude-code,
    /// cursor, vscode, or http (a client that takes a URL and an Authorization header).
    ///
    /// The snippet names this binary and the manifest by absolute path, and every variable
    /// the manifest's tools read (`secret_env`, `env_allow`) with a placeholder for its value:
    /// a client starts airlock with its own environment, not the shell's. Where it goes is
    /// said on stderr.
    ClientConfig {
        /// The client.
        #[arg(value_name = "CLIENT", value_parser = cli::client_config::CLIENTS)]
        client: String,
        /// The manifest (default: the embedded default).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// For http: the server's URL.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8080/mcp")]
        url: String,
        /// For http: the variable that holds the bearer token (as for `serve --auth-token-env`).
        #[arg(long, value_name = "NAME", default_value = "AIRLOCK_TOKEN")]
        token_env: String,
    },
    /// Review any stdio MCP server with a battery of hostile inputs.
    ///
    /// Starts the server once per case, sends the case's input, judges the replies against
    /// JSON-RPC 2.0 and MCP, checks that it still answers ping and tools/list within the
    /// memory limit, and kills its process tree. Prints a table on stdout and progress on
    /// stderr. Exit status 0 unless a finding at or over --fail-on (default high) is new.
    Audit(Box<AuditFlags>),
    /// Write a commented starter manifest (airlock.toml) and its JSON Schema into DIR.
    ///
    /// Refuses to overwrite either file, and to write into /, the home directory or a system
    /// tree. The manifest passes `airlock check`; edit it, check it, serve it.
    Init {
        /// The project's directory (created if missing).
        #[arg(value_name = "DIR", default_value = ".")]
        dir: PathBuf,
    },
    /// Print the manifest's JSON Schema (what `#:schema` in a manifest points an editor at).
    Schema,
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell).
    ///
    /// For bash: `airlock completions bash > ~/.local/share/bash-completion/completions/airlock`.
    Completions {
        /// The shell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): airlock(1), or airlock-COMMAND(1) for one subcommand.
    ///
    /// `airlock man > airlock.1 && man ./airlock.1`.
    Man {
        /// The subcommand (serve, check, call, client-config, audit, init, schema, completions).
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
}

/// Options of `airlock serve`.
#[derive(Debug, clap::Args)]
struct ServeFlags {
    /// The manifest (TOML) declaring the tools.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// The manifest, given without --manifest.
    #[arg(value_name = "MANIFEST", conflicts_with = "manifest")]
    manifest_file: Option<PathBuf>,
    #[command(flatten)]
    overrides: LimitFlags,
    #[command(flatten)]
    http: HttpFlags,
    /// `required` (default): refuse to start if the kernel cannot confine every sandboxed
    /// tool. `best-effort`: apply what the kernel offers and log what is missing per tool.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = SandboxMode::Required)]
    sandbox: SandboxMode,
    #[command(flatten)]
    audit: AuditLogFlags,
    #[command(flatten)]
    log: LogFlags,
}

/// `--sandbox`: how strictly the kernel sandbox is held.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
enum SandboxMode {
    /// Refuse to start if the kernel cannot confine every sandboxed tool.
    Required,
    /// Apply what the kernel offers and log what is missing per tool.
    BestEffort,
}

impl SandboxMode {
    fn mode(self) -> sandbox::Mode {
        match self {
            Self::Required => sandbox::Mode::Required,
            Self::BestEffort => sandbox::Mode::BestEffort,
        }
    }

    /// The word on the command line (`airlock call` passes it on to `serve`).
    fn word(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::BestEffort => "best-effort",
        }
    }
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where log lines go, and how they are written.
#[derive(Debug, clap::Args)]
struct LogFlags {
    /// Log lines as `text`, or as `json`: one JSON object per line (timestamp, level, fields).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Append log lines to FILE instead of stderr (created with mode 0600; audit records
    /// still go to stderr unless --audit-log).
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

impl LogFlags {
    /// Installs the subscriber these flags describe, or says why the file cannot be opened.
    fn init(&self) -> Result<(), String> {
        let format = match self.log_format {
            LogFormat::Json => telemetry::Format::Json,
            LogFormat::Text => telemetry::Format::Text,
        };
        telemetry::init(format, self.log_file.as_deref()).map_err(|error| {
            format!(
                "airlock serve: --log-file: cannot open {} for appending: {error}\n",
                self.log_file.as_deref().unwrap_or(Path::new("")).display(),
            )
        })
    }
}

/// The per-call audit record.
#[derive(Debug, clap::Args)]
struct AuditLogFlags {
    /// Append the audit record of every tool call (one JSON line each) to FILE instead of
    /// stderr; the file is created with mode 0600 and reopened on SIGUSR1 (log rotation).
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,
    /// Rotate the audit log past BYTES: FILE becomes FILE.1 (FILE.1 becomes FILE.2, …) and a
    /// new FILE is opened (default 64 MiB).
    #[arg(long, value_name = "BYTES", requires = "audit_log")]
    audit_log_max_bytes: Option<std::num::NonZeroU64>,
    /// Rotated audit log files kept, FILE.1 the newest (default 4; 0 keeps none).
    #[arg(long, value_name = "N", requires = "audit_log")]
    audit_log_keep: Option<u32>,
    /// Add `arguments_hmac` to each record: HMAC-SHA256 of the call's arguments under the key
    /// in the environment variable NAME (at least 16 bytes), to correlate identical calls
    /// without logging their values.
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    audit_hash_key_env: Option<String>,
}

/// The smallest key `--audit-hash-key-env` accepts: shorter keys make the hash guessable.
const MIN_AUDIT_KEY_BYTES: usize = 16;

impl AuditLogFlags {
    /// The call log these flags describe, or why it cannot be kept (fixed text: never the key).
    fn call_log(&self) -> Result<Arc<CallLog>, String> {
        let log = match &self.audit_log {
            None => CallLog::stderr(),
            Some(path) => {
                let mut rotation = Rotation::default();
                if let Some(max) = self.audit_log_max_bytes {
                    rotation.max_bytes = max.get();
                }
                if let Some(keep) = self.audit_log_keep {
                    rotation.keep = keep;
                }
                CallLog::rotated(path, rotation)
            }
            .map_err(|error| {
                format!(
                    "--audit-log: cannot open {} for appending: {error}",
                    path.display()
                )
            })?,
        };
        let log = match &self.audit_hash_key_env {
            None => log,
            Some(name) => {
                if !Tokens::is_variable_name(name) {
                    return Err("--audit-hash-key-env takes the NAME of an environment variable that holds the key, never the key itself (it is not shown)"
                        .to_owned());
                }
                let key = std::env::var_os(name).unwrap_or_default();
                if key.len() < MIN_AUDIT_KEY_BYTES {
                    return Err(format!(
                        "--audit-hash-key-env: the variable {name} must hold a key of at least {MIN_AUDIT_KEY_BYTES} bytes (it is missing or shorter)"
                    ));
                }
                log.with_argument_key(key.as_encoded_bytes())
            }
        };
        let log = Arc::new(log);
        log.reopen_on_sigusr1().map_err(|error| {
            format!(
                "--audit-log: cannot watch SIGUSR1 to reopen the file: {}",
                error.kind()
            )
        })?;
        Ok(log)
    }
}

/// Limits given on the command line; they override the manifest's.
#[derive(Clone, Debug, clap::Args)]
struct LimitFlags {
    /// Quota on tools/call across the server: calls per minute, sustained.
    #[arg(long, value_name = "N")]
    calls_per_minute: Option<NonZeroU32>,
    /// Quota on tools/call: calls admitted back to back (default 40, or the manifest's).
    #[arg(long, value_name = "N", requires = "calls_per_minute")]
    call_burst: Option<NonZeroU32>,
    /// Quota on cheap methods (ping, tools/list, …): requests per minute.
    #[arg(long, value_name = "N")]
    cheap_per_minute: Option<NonZeroU32>,
    /// Most tool calls running at once.
    #[arg(long, value_name = "N")]
    max_in_flight: Option<NonZeroUsize>,
    /// Deadline of a tool call that sets none of its own, in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=max_tool_timeout_ms()))]
    tool_timeout_ms: Option<u64>,
}

impl LimitFlags {
    fn apply(&self, limits: &mut Limits) {
        if let Some(per_minute) = self.calls_per_minute {
            let burst = self
                .call_burst
                .or(limits.tool_call_rate.map(|rate| rate.burst))
                .unwrap_or(airlock::limits::TOOL_CALL_RATE.burst);
            limits.tool_call_rate = Some(Rate { per_minute, burst });
        }
        if let Some(per_minute) = self.cheap_per_minute {
            let burst = limits
                .cheap_method_rate
                .map_or(airlock::limits::CHEAP_METHOD_RATE.burst, |rate| rate.burst);
            limits.cheap_method_rate = Some(Rate { per_minute, burst });
        }
        if let Some(max) = self.max_in_flight {
            limits.max_in_flight = max;
        }
        if let Some(ms) = self.tool_timeout_ms {
            limits.tool_timeout = Duration::from_millis(ms);
        }
    }
}

/// The file `serve` and `check` use when none is named.
const LOCAL_MANIFEST: &str = "airlock.toml";

/// The longest `--tool-timeout-ms`: the library's [`MAX_TOOL_TIMEOUT`].
fn max_tool_timeout_ms() -> u64 {
    u64::try_from(MAX_TOOL_TIMEOUT.as_millis()).unwrap_or(u64::MAX)
}

fn main() -> ExitCode {
    // First, before any thread starts: a sandbox launcher re-executed by a serving airlock.
    if let Some(status) = sandbox::launcher::run_if_launched() {
        return status;
    }
    let cli = Cli::parse();
    if !cli.test_hosts.is_empty()
        && let Err(why) = set_test_hosts(&cli.test_hosts)
    {
        return emit(
            std::io::stderr().lock(),
            &format!("airlock: --test-hosts: {why}\n"),
            ExitCode::from(2),
        );
    }
    match cli.command {
        Command::Serve(flags) => {
            let ServeFlags {
                manifest,
                manifest_file,
                overrides,
                http,
                sandbox,
                audit,
                log,
            } = *flags;
            let mode = sandbox.mode();
            let manifest = manifest.or(manifest_file);
            serve(manifest.as_deref(), &overrides, &http, &audit, &log, mode)
        }
        Command::Check {
            manifest,
            manifest_file,
        } => check(manifest.or(manifest_file).as_deref()),
        Command::Call {
            manifest,
            sandbox,
            json,
            raw,
            tool,
            arguments,
        } => cli::call::run(&cli::call::Request {
            manifest: manifest.as_deref(),
            sandbox: sandbox.word(),
            tool: &tool,
            pairs: &arguments,
            json: json.as_deref(),
            raw,
            test_hosts: &cli.test_hosts,
        }),
        Command::ClientConfig {
            client,
            manifest,
            url,
            token_env,
        } => cli::client_config::run(&cli::client_config::Request {
            client: &client,
            manifest: manifest.as_deref(),
            url: &url,
            token_env: &token_env,
        }),
        Command::Audit(flags) => run_audit(*flags),
        Command::Init { dir } => match cli::init::run(&dir, LOCAL_MANIFEST) {
            Ok(text) => emit(std::io::stdout().lock(), &text, ExitCode::SUCCESS),
            Err(text) => emit(
                std::io::stderr().lock(),
                &format!("airlock init: {text}\n"),
                ExitCode::FAILURE,
            ),
        },
        Command::Schema => emit(
            std::io::stdout().lock(),
            &manifest::json_schema(),
            ExitCode::SUCCESS,
        ),
        Command::Completions { shell } => emit_bytes(
            std::io::stdout().lock(),
            &cli::docs::completions(Cli::command(), shell),
        ),
        Command::Man { command } => match cli::docs::man_page(Cli::command(), command.as_deref()) {
            Some(Ok(page)) => emit_bytes(std::io::stdout().lock(), &page),
            Some(Err(_)) => ExitCode::FAILURE,
            None => emit(
                std::io::stderr().lock(),
                "airlock man: no such subcommand (see airlock --help)\n",
                ExitCode::from(2),
            ),
        },
    }
}

/// `--test-hosts`: for the network tests only, refused by a release build. The proxy still
/// checks every pinned address as it checks a resolved one; an operator has no use for it,
/// and a resolver that lies is not something a deployment should be able to switch on.
fn set_test_hosts(pairs: &[String]) -> Result<(), String> {
    if !cfg!(debug_assertions) {
        return Err("refused: tests only, and this is a release build".to_owned());
    }
    let mut hosts = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let (name, address) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{}` is not NAME=ADDRESS", pair.escape_debug()))?;
        let name = sandbox::destinations::parse_name(name)
            .ok_or_else(|| format!("`{}` is not a host name", name.escape_debug()))?;
        let address = address
            .parse()
            .map_err(|_| format!("`{}` is not an IP address", address.escape_debug()))?;
        hosts.push((name, address));
    }
    sandbox::proxy::set_test_hosts(hosts);
    Ok(())
}

fn check(path: Option<&Path>) -> ExitCode {
    let (text, status) = match load(path) {
        Ok(manifest) => {
            let mut description = manifest.describe();
            let support = sandbox::Support::probe().with_exact_landlock_abi();
            let missing = support.missing();
            description.push_str(&format!(
                "\nsandbox on this machine: {}\n",
                support.describe()
            ));
            if missing.is_empty() {
                description.push_str("sandbox enforcement: complete\n");
            } else {
                description.push_str(&format!(
                    "sandbox enforcement: INCOMPLETE, missing {}; `airlock serve` refuses to \
                     start unless given --sandbox best-effort\n",
                    missing.join("; ")
                ));
            }
            match command::server(manifest) {
                Ok(_) => (format!("{description}\nOK\n"), ExitCode::SUCCESS),
                Err(error) => (
                    format!("{description}\nrefused: {error}\n"),
                    ExitCode::FAILURE,
                ),
            }
        }
        Err(error) => (format!("{error}\n"), ExitCode::FAILURE),
    };
    let written = if status == ExitCode::SUCCESS {
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
    if written.is_err() {
        return ExitCode::FAILURE;
    }
    status
}

/// Writes `bytes` to stdout's lock `out`: success, or failure if the write failed.
fn emit_bytes(mut out: impl Write, bytes: &[u8]) -> ExitCode {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Writes `text` and returns `status`, or failure if the write failed.
fn emit(mut out: impl Write, text: &str, status: ExitCode) -> ExitCode {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => status,
        Err(_) => ExitCode::FAILURE,
    }
}
