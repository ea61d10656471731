//! The command line: every command's flags (clap), and the plan `airlock serve`'s flags
//! describe. What each command does is beside it in `cli/`; `main.rs` dispatches.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;
use std::time::Duration;

use airlock::limits::MAX_TOOL_TIMEOUT;
use airlock::telemetry;
use airlock_manifest::plan::audit_log::AuditLogPlan;
use airlock_manifest::plan::{LimitOverrides, OtlpPlan, ServePlan};
use airlock_manifest::sandbox;
use clap::{Parser, Subcommand};

use crate::cli;
use crate::cli::audit::AuditFlags;
use crate::cli::http_flags::HttpFlags;

/// Exposes a command-line program's commands to AI agents over MCP, treating every agent as
/// hostile.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Tests only: names the network proxy resolves to fixed addresses (`NAME=ADDRESS`,
    /// repeatable), so a test can serve a listed name from loopback. Refused by release
    /// builds.
    #[arg(long, global = true, hide = true, value_name = "NAME=ADDRESS")]
    pub(crate) test_hosts: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
        /// Also run one call of TOOL with the arguments JSON (an object), as `airlock call`
        /// does, and print every denial the sandbox reported with the manifest key that would
        /// allow it, or say why this machine cannot report them. Exit status 1 if the call
        /// failed or anything was denied.
        #[arg(long = "try", num_args = 2, value_names = ["TOOL", "JSON"])]
        try_call: Option<Vec<String>>,
        /// Print the kernel audit rules (`auditctl -R`) under which a write the sandbox's view
        /// refuses (outside a tool's writable directories) is reported, and exit. airlock
        /// never installs them itself.
        #[arg(long, conflicts_with_all = ["try_call", "manifest", "manifest_file"])]
        audit_rules: bool,
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
pub(crate) struct ServeFlags {
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
    #[command(flatten)]
    traces: TraceFlags,
    /// `required` (default): refuse to start if the kernel cannot confine every sandboxed
    /// tool. `best-effort`: apply what the kernel offers and log what is missing per tool.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = SandboxMode::Required)]
    sandbox: SandboxMode,
    #[command(flatten)]
    audit: AuditLogFlags,
    #[command(flatten)]
    log: LogFlags,
}

/// OpenTelemetry traces of `airlock serve`.
#[derive(Debug, clap::Args)]
struct TraceFlags {
    /// Export OpenTelemetry traces over OTLP/HTTP to URL (http:// only, e.g.
    /// http://127.0.0.1:4318; spans go to URL/v1/traces): a span per request by the MCP
    /// conventions and one per command run, never argument values or output. Off by
    /// default. For TLS, run an OpenTelemetry Collector on loopback and let it forward.
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// The share of requests traced with --otlp, above 0 and at most 1 (every request by
    /// default). A client's `sampled` flag does not change it.
    #[arg(long, value_name = "RATIO", requires = "otlp")]
    otlp_sample: Option<f64>,
}

/// `--sandbox`: how strictly the kernel sandbox is held.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
pub(crate) enum SandboxMode {
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
    pub(crate) fn word(self) -> &'static str {
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
pub(crate) struct LogFlags {
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
    pub(crate) fn init(&self) -> Result<(), LogFileError> {
        let format = match self.log_format {
            LogFormat::Json => telemetry::Format::Json,
            LogFormat::Text => telemetry::Format::Text,
        };
        telemetry::init(format, self.log_file.as_deref()).map_err(|error| LogFileError {
            path: self.log_file.clone().unwrap_or_default(),
            error,
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

/// The longest `--tool-timeout-ms`: the library's [`MAX_TOOL_TIMEOUT`].
fn max_tool_timeout_ms() -> u64 {
    u64::try_from(MAX_TOOL_TIMEOUT.as_millis()).unwrap_or(u64::MAX)
}

/// `--log-file` cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("--log-file: cannot open {} for appending: {error}", .path.display())]
pub(crate) struct LogFileError {
    path: PathBuf,
    error: std::io::Error,
}

impl ServeFlags {
    /// The plan these flags describe, and where its log lines go.
    pub(crate) fn plan(self) -> (ServePlan, LogFlags) {
        let Self {
            manifest,
            manifest_file,
            overrides,
            http,
            traces,
            sandbox,
            audit,
            log,
        } = self;
        let (http, metrics) = http.plans();
        let plan = ServePlan {
            manifest: manifest.or(manifest_file),
            sandbox: sandbox.mode(),
            limits: overrides.overrides(),
            audit_log: AuditLogPlan {
                path: audit.audit_log,
                max_bytes: audit.audit_log_max_bytes,
                keep: audit.audit_log_keep,
                hash_key_env: audit.audit_hash_key_env,
            },
            http,
            metrics,
            otlp: traces.otlp.map(|endpoint| OtlpPlan {
                endpoint,
                sample_ratio: traces.otlp_sample.unwrap_or(1.0),
            }),
        };
        (plan, log)
    }
}

impl LimitFlags {
    fn overrides(self) -> LimitOverrides {
        LimitOverrides {
            calls_per_minute: self.calls_per_minute,
            call_burst: self.call_burst,
            cheap_per_minute: self.cheap_per_minute,
            max_in_flight: self.max_in_flight,
            tool_timeout: self.tool_timeout_ms.map(Duration::from_millis),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn serve_plan(args: &[&str]) -> ServePlan {
        let cli = Cli::try_parse_from(["airlock", "serve"].iter().chain(args)).unwrap();
        match cli.command {
            Command::Serve(flags) => flags.plan().0,
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn serve_flags_make_the_plan_they_name() {
        let plan = serve_plan(&[
            "tools.toml",
            "--sandbox",
            "best-effort",
            "--tool-timeout-ms",
            "1500",
            "--audit-hash-key-env",
            "KEY",
            "--http",
            "localhost:8080",
            "--auth-token-env",
            "TOKEN",
            "--quota-store",
            "redis",
            "--redis-unreachable",
            "local",
            "--redis-lease-ms",
            "2000",
        ]);
        assert_eq!(plan.manifest, Some(PathBuf::from("tools.toml")));
        assert_eq!(plan.sandbox, sandbox::Mode::BestEffort);
        assert_eq!(plan.limits.tool_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(plan.audit_log.hash_key_env.as_deref(), Some("KEY"));
        let http = plan.http.unwrap();
        assert_eq!(http.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(http.auth_token_env, ["TOKEN"]);
        assert_eq!(http.store.redis, Some(true));
        assert_eq!(
            http.store.unreachable,
            Some(airlock::transport::http::Unreachable::LocalLimits)
        );
        assert_eq!(http.store.lease, Some(Duration::from_millis(2000)));
        assert_eq!(http.store.url_env, "AIRLOCK_REDIS_URL");
    }

    #[test]
    fn serve_without_http_plans_stdio_with_the_defaults() {
        let plan = serve_plan(&[]);
        assert_eq!(plan.manifest, None);
        assert_eq!(plan.sandbox, sandbox::Mode::Required);
        assert!(plan.http.is_none());
        assert!(plan.audit_log.path.is_none());
        assert!(plan.otlp.is_none(), "no traces unless asked");
    }

    #[test]
    fn otlp_traces_every_request_unless_a_ratio_is_given_and_the_ratio_needs_it() {
        let plan = serve_plan(&["--otlp", "http://127.0.0.1:4318"]);
        let otlp = plan.otlp.unwrap();
        assert_eq!(
            (otlp.endpoint.as_str(), otlp.sample_ratio),
            ("http://127.0.0.1:4318", 1.0)
        );
        let plan = serve_plan(&["--otlp", "http://c:4318", "--otlp-sample", "0.25"]);
        assert_eq!(plan.otlp.unwrap().sample_ratio, 0.25);
        assert!(Cli::try_parse_from(["airlock", "serve", "--otlp-sample", "0.5"]).is_err());
    }
}
