//! The `airlock` program: serve a manifest's commands over MCP, check a manifest, or audit
//! any stdio MCP server; try and set it up: `call`, `client-config`, `init`, `schema`,
//! `completions`, `man` (`cli/`).
//!
//! Exit statuses: 0 normal end; 1 a manifest or start-up error; 2 a usage error (clap);
//! 3 the peer was cut off for sending only invalid messages; 4 stdin/stdout failed or the HTTP
//! address could not be bound.
//! `airlock audit`: 0 no finding fails the run; 1 one does (at or over `--fail-on`, not in the
//! `--baseline`); 2 a usage error; 3 the server could not be audited (did not start or
//! complete its handshake) or a report could not be written; 130 interrupted.
//! `airlock call`: 0 the tool succeeded; 1 it returned an error or the call was refused; 2
//! its arguments cannot be read.

use std::ffi::OsString;
use std::io::{IsTerminal as _, Write};
use std::net::SocketAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory as _, Parser, Subcommand};

use airlock::limits::MAX_TOOL_TIMEOUT;
use airlock::transport::http::{
    AllowList, Cidr, HttpConfig, JwksSource, JwksUri, OAuth, OAuthError, OriginError, ProxyHeader,
    SharedStore, StoreError, Tls, TlsError, TokenError, Tokens, TrustedProxies, Unreachable,
};
use airlock::{CallLog, HttpLimits, Limits, Rate, Rotation, telemetry};
use airlock_audit as audit;
use airlock_manifest::manifest::{self, Manifest, ManifestError};
use airlock_manifest::{command, sandbox, secrets};

mod cli;

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

/// `--quota-store`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
enum QuotaStore {
    /// This process.
    Local,
    /// The Redis every replica shares.
    Redis,
}

/// `--redis-unreachable`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
enum RedisUnreachable {
    /// Refuse with -31503 / HTTP 503.
    FailClosed,
    /// Each replica applies its own limits until Redis answers.
    Local,
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

/// Options of `airlock audit`.
#[derive(Debug, clap::Args)]
struct AuditFlags {
    /// Also write the report as JSON to this file (it also serves as a --baseline).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the report as SARIF 2.1.0 to this file (for code-scanning services).
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Also write the report as JUnit XML to this file (for CI test views).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Fail (exit 1) on findings at this level or worse: critical, high, medium, low, info,
    /// or never.
    #[arg(long, value_name = "LEVEL", default_value = "high", value_parser = parse_fail_on)]
    fail_on: audit::FailOn,
    /// Findings of an earlier run (a --json report or a --write-baseline file) do not fail
    /// this one; new findings, and known ones that got worse, still do.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write this run's findings to FILE as a baseline (sorted, without timings), for
    /// --baseline in later runs.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Write the server's catalog (tools, schemas, prompts, resources, instructions) and its
    /// digest to FILE, for --check-pin in later runs (commit it).
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    pin: Option<PathBuf>,
    /// Compare the server's catalog with the one pinned in FILE: each difference (naming the
    /// tool and the field) is a high finding of metadata.pin, which fails the run at the
    /// default --fail-on.
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    check_pin: Option<PathBuf>,
    /// Run only these cases: ids, categories or prefixes (json.nan,batch,huge.line-*).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    only: Vec<String>,
    /// Leave out these cases (same forms as --only).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    skip: Vec<String>,
    /// Peak resident memory allowed to the server's process tree, in MiB.
    #[arg(long, value_name = "N", default_value_t = audit::DEFAULT_MAX_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(1..=1_048_576), conflicts_with = "url")]
    max_memory_mib: u64,
    /// Time limit of one case, in milliseconds (slow cases get a few).
    #[arg(long, value_name = "MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    case_timeout_ms: u64,
    /// Leave out the slow cases (huge streamed lines, the unread-replies flood).
    #[arg(long)]
    quick: bool,
    /// The tool that cases needing a real call use (default: the first read-only one).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["no_tool_calls", "url"])]
    call_tool: Option<String>,
    /// Arguments (a JSON object) for --call-tool.
    #[arg(long, value_name = "JSON", requires = "call_tool", value_parser = parse_json_object)]
    call_args: Option<serde_json::Value>,
    /// Never call a real tool; calls go to a tool name that cannot exist.
    #[arg(long, conflicts_with = "url")]
    no_tool_calls: bool,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
    /// Audit the running Streamable HTTP server at this URL (http://HOST:PORT/PATH) with the
    /// HTTP transport's cases, in each era it serves, instead of starting a command. The
    /// server is not the audit's process, so its memory is not watched. Loopback hosts only,
    /// unless --allow-remote.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    url: Option<String>,
    /// Let --url name a host that is not loopback (the audit sends hostile traffic: aim it
    /// only at a server you are allowed to attack).
    #[arg(long, requires = "url")]
    allow_remote: bool,
    /// Send `Authorization: Bearer TOKEN` with every --url request, TOKEN read from the
    /// environment variable NAME (the name, never the token: it is not shown, and is
    /// redacted from the reports), to audit a server deployed with a token.
    #[arg(long, value_name = "NAME", requires = "url")]
    auth_token_env: Option<String>,
    /// Send this header field with every --url request (repeatable): NAME:VALUE. Values are
    /// redacted from the reports.
    #[arg(long = "header", value_name = "NAME:VALUE", requires = "url",
          value_parser = parse_audit_header)]
    headers: Vec<audit::Header>,
    /// The server's command and its arguments.
    #[arg(last = true, value_name = "COMMAND", required_unless_present_any = ["list", "url"])]
    command: Vec<OsString>,
}

/// Renders an audit report as one of its file formats.
type Render = fn(&audit::AuditReport) -> Result<String, String>;

fn parse_fail_on(text: &str) -> Result<audit::FailOn, String> {
    audit::FailOn::parse(text)
        .ok_or_else(|| "one of critical, high, medium, low, info, never".to_owned())
}

fn parse_audit_header(text: &str) -> Result<audit::Header, String> {
    audit::Header::parse(text).map_err(|error| error.to_string())
}

fn parse_proxy_header(text: &str) -> Result<ProxyHeader, String> {
    match text.to_ascii_lowercase().as_str() {
        "x-forwarded-for" => Ok(ProxyHeader::XForwardedFor),
        "forwarded" => Ok(ProxyHeader::Forwarded),
        _ => Err("one of x-forwarded-for, forwarded".to_owned()),
    }
}

fn parse_json_object(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) if value.is_object() => Ok(value),
        Ok(_) => Err("not a JSON object".to_owned()),
        Err(error) => Err(format!("not JSON: {error}")),
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

/// Serving over HTTP instead of stdio.
#[derive(Debug, clap::Args)]
struct HttpFlags {
    /// Serve MCP over Streamable HTTP at ADDR (e.g. 127.0.0.1:8080), endpoint /mcp.
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    http: Option<SocketAddr>,
    /// Allow a bind address other than loopback (warns when no --auth-token-env is given).
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// Let web pages on ORIGIN (`http(s)://host[:port]`) use the server: its requests are
    /// accepted and its browser may read the replies (CORS); repeatable. Loopback origins are
    /// accepted without it, but get no CORS headers unless listed.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Also accept requests whose Host names HOST (any port); repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// Require a bearer token, read from the environment variable NAME; repeatable (each
    /// variable is one client identity).
    // Hyphen values are taken: a token given here by mistake that starts with `-` is refused
    // by our check, which never shows it, instead of clap's, which would.
    #[arg(
        long,
        value_name = "NAME",
        requires = "http",
        allow_hyphen_values = true
    )]
    auth_token_env: Vec<String>,
    /// Most HTTP connections open at once.
    #[arg(long, value_name = "N", requires = "http")]
    max_connections: Option<NonZeroUsize>,
    /// Most HTTP connections open at once from one address (an IPv6 /64).
    #[arg(long, value_name = "N", requires = "http")]
    max_connections_per_address: Option<NonZeroUsize>,
    /// Quota on tools/call per client (token identity, else address): calls per minute.
    #[arg(long, value_name = "N", requires = "http")]
    client_calls_per_minute: Option<NonZeroU32>,
    /// Most tool calls in flight per client.
    #[arg(long, value_name = "N", requires = "http")]
    client_in_flight: Option<NonZeroUsize>,
    /// Quota on every HTTP request per client: requests per minute.
    #[arg(long, value_name = "N", requires = "http")]
    client_requests_per_minute: Option<NonZeroU32>,
    /// Most legacy sessions at once.
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions: Option<NonZeroUsize>,
    /// Most legacy sessions per client; its next initialize ends its least recently used one.
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions_per_client: Option<NonZeroUsize>,
    /// Trust the reverse proxy at ADDR[/PREFIX] to say who its clients are, in the header
    /// --trusted-proxy-header names; repeatable.
    #[arg(long, value_name = "CIDR", requires = "http", value_parser = parse_cidr)]
    trusted_proxy: Vec<Cidr>,
    /// The forwarding header the trusted proxies append to, the only one believed (read from
    /// the right, trusted hops skipped); the other is ignored: x-forwarded-for (nginx,
    /// HAProxy, Envoy) or forwarded (RFC 7239).
    #[arg(
        long,
        value_name = "HEADER",
        requires = "trusted_proxy",
        default_value = "x-forwarded-for",
        value_parser = parse_proxy_header
    )]
    trusted_proxy_header: ProxyHeader,
    /// Serve HTTPS (TLS 1.2 and 1.3): the certificate chain, PEM, the server's first.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// Accept OAuth access tokens (JWTs) for this server's canonical URI, as clients name it
    /// (https://HOST/mcp): tokens must name it in `aud`; the protected resource metadata at
    /// /.well-known/oauth-protected-resource names it.
    #[arg(long, value_name = "URL", requires_all = ["http", "oauth_issuer"])]
    oauth_resource: Option<String>,
    /// The issuer of the access tokens (their `iss`, exactly).
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    oauth_issuer: Option<String>,
    /// An authorization server the metadata names (default: the issuer); repeatable.
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    oauth_authorization_server: Vec<String>,
    /// The issuer's signing keys: a JWKS file, read at start.
    #[arg(
        long,
        value_name = "FILE",
        requires = "oauth_resource",
        conflicts_with = "oauth_jwks_uri"
    )]
    oauth_jwks_file: Option<PathBuf>,
    /// The issuer's signing keys: its jwks_uri (https, or http on loopback), fetched at start
    /// and refreshed.
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    oauth_jwks_uri: Option<String>,
    /// The CA certificates (PEM) an https --oauth-jwks-uri is checked against.
    #[arg(
        long,
        value_name = "FILE",
        requires = "oauth_jwks_uri",
        default_value = "/etc/ssl/certs/ca-certificates.crt"
    )]
    oauth_jwks_ca: PathBuf,
    /// An algorithm tokens may be signed with (RS256 RS384 RS512 PS256 PS384 PS512 ES256
    /// ES384); repeatable; default RS256 and ES256.
    #[arg(long, value_name = "ALG", requires = "oauth_resource")]
    oauth_algorithm: Vec<String>,
    /// Where quotas, in-flight caps and legacy sessions are counted: `local` (this process)
    /// or `redis` (shared by every replica using the same Redis and namespace; the URL is
    /// read from --redis-url-env). Default: the manifest's `[limits] quota_store`, else local.
    #[arg(long, value_name = "STORE", requires = "http", value_enum)]
    quota_store: Option<QuotaStore>,
    /// The environment variable holding the Redis URL (redis://[:PASSWORD@]HOST[:PORT][/DB]);
    /// never the URL itself, which may hold a password.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "AIRLOCK_REDIS_URL",
        allow_hyphen_values = true
    )]
    redis_url_env: String,
    /// The prefix of every key (`[A-Za-z0-9_.-]`, at most 64 bytes): replicas of one deployment
    /// share it, other deployments on the same Redis use their own. Default: the manifest's
    /// `[limits] redis_namespace`, else `airlock`.
    #[arg(long, value_name = "NAME")]
    redis_namespace: Option<String>,
    /// While Redis is unreachable: `fail-closed` (refuse with -31503 / HTTP 503) or `local`
    /// (each replica applies its own limits until Redis answers). Default: the manifest's
    /// `[limits] redis_unreachable`, else fail-closed.
    #[arg(long, value_name = "POLICY", value_enum)]
    redis_unreachable: Option<RedisUnreachable>,
    /// Expiry of an in-flight lease in Redis, in milliseconds (renewed every third of it): how
    /// soon a replica that died gives its calls' slots back. Default: the manifest's
    /// `[limits] redis_lease_ms`, else 15000.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1000..=3_600_000))]
    redis_lease_ms: Option<u64>,
}

/// `--http`: an IP address and port; `localhost:PORT` is taken as `127.0.0.1:PORT` (the
/// name is never resolved: a resolver could say anything).
fn parse_http_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(
        "ADDR is IP:PORT, such as 127.0.0.1:8080, [::1]:8080 or localhost:8080 (taken as \
         127.0.0.1); a host name is not resolved: bind an address, and add --allow-host NAME \
         to accept requests for that name"
            .to_owned(),
    )
}

fn parse_cidr(text: &str) -> Result<Cidr, String> {
    Cidr::parse(text).map_err(str::to_owned)
}

/// Why the HTTP flags cannot be served.
#[derive(Debug, thiserror::Error)]
enum HttpFlagsError {
    #[error("--auth-token-env: {0}")]
    Token(#[from] TokenError),
    #[error("--allow-origin must be http://HOST[:PORT] or https://HOST[:PORT], not {:?}", .0.0)]
    Origin(#[from] OriginError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("--oauth-*: {0}")]
    OAuth(#[from] OAuthError),
    #[error("--oauth-resource needs --oauth-jwks-file or --oauth-jwks-uri")]
    NoJwks,
    #[error("--quota-store redis: {0}")]
    Store(#[from] StoreError),
    #[error(
        "--quota-store redis: the variable {0} (--redis-url-env) is not set or not UTF-8; put \
         the Redis URL in it"
    )]
    StoreUrlMissing(String),
    #[error("--redis-url-env takes the NAME of an environment variable, not the URL (not shown)")]
    StoreUrlVariable,
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

/// Raises the soft limit on open descriptors to the hard one: connections, pipes of running
/// calls and proxied connections are all airlock's descriptors, and a common soft limit of
/// 1,024 is what a few busy calls use (every bound on them is counted against the limit in
/// force: `sandbox::proxy`). Commands get their own limit from their policy.
fn raise_descriptor_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum
        && setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )
        .is_err()
    {
        tracing::debug!("the soft descriptor limit could not be raised");
    }
}

fn load(path: Option<&Path>) -> Result<Manifest, ManifestError> {
    match path {
        Some(path) => manifest::load(path),
        None if Path::new(LOCAL_MANIFEST).is_file() => {
            // Whoever controls the working directory chooses the tools: say so.
            tracing::warn!(
                manifest = LOCAL_MANIFEST,
                "serving the manifest found in the working directory"
            );
            manifest::load(Path::new(LOCAL_MANIFEST))
        }
        None => manifest::load_default(),
    }
}

fn serve(
    path: Option<&Path>,
    overrides: &LimitFlags,
    http: &HttpFlags,
    audit: &AuditLogFlags,
    log: &LogFlags,
    mode: sandbox::Mode,
) -> ExitCode {
    raise_descriptor_limit();
    // Before anything is logged: a value that cannot name a variable is most likely the token
    // itself, and must not reach the log or the terminal.
    if let Some(index) = http
        .auth_token_env
        .iter()
        .position(|name| !Tokens::is_variable_name(name))
    {
        let text = format!(
            "airlock serve: --auth-token-env takes the NAME of an environment variable that \
             holds the token ([A-Za-z_][A-Za-z0-9_]*, at most {} bytes), never the token \
             itself; the value of --auth-token-env number {} is not one (it is not shown). Put \
             the token in a variable and pass its name: MY_TOKEN=… airlock serve --http ADDR \
             --auth-token-env MY_TOKEN\n",
            airlock::limits::MAX_TOKEN_VARIABLE_BYTES,
            index.saturating_add(1),
        );
        return emit(std::io::stderr().lock(), &text, ExitCode::from(2));
    }
    if let Some(addr) = http.http
        && !addr.ip().is_loopback()
        && !http.allow_remote
    {
        let text = format!(
            "airlock serve: {addr} is not a loopback address; add --allow-remote to serve it \
             (and --auth-token-env or --oauth-resource to require a token)\n"
        );
        return emit(std::io::stderr().lock(), &text, ExitCode::from(2));
    }
    // No tool's command may reach airlock's own listener through the network proxy, unless
    // its manifest names the address.
    if let Some(addr) = http.http {
        sandbox::destinations::set_own_listeners(vec![addr]);
    }
    if let Err(text) = log.init() {
        return emit(std::io::stderr().lock(), &text, ExitCode::FAILURE);
    }
    let call_log = match audit.call_log() {
        Ok(log) => log,
        Err(text) => {
            tracing::error!("{text}");
            return ExitCode::FAILURE;
        }
    };
    // The file a reload reads again: the one served (`--manifest`, or ./airlock.toml found
    // now); the embedded default has nothing to reload, and SIGHUP ends that server.
    let reload_path = match path {
        Some(path) => Some(path.to_path_buf()),
        None if Path::new(LOCAL_MANIFEST).is_file() => Some(PathBuf::from(LOCAL_MANIFEST)),
        None => None,
    };
    let mut manifest = match load(path) {
        Ok(manifest) => manifest,
        Err(error) => {
            tracing::error!("{error}");
            return ExitCode::FAILURE;
        }
    };
    overrides.apply(&mut manifest.limits);
    tracing::info!(
        manifest = manifest.source.as_str(),
        tools = manifest.tools.len(),
        "manifest loaded"
    );
    let mut vetting = Vetting {
        mode,
        hash_key_env: audit.audit_hash_key_env.clone(),
        token_envs: Vec::new(),
        store_url_env: None,
    };
    let Some(addr) = http.http else {
        if !vetting.passes(&manifest) {
            return ExitCode::FAILURE;
        }
        if std::io::stdin().is_terminal() {
            // A new user typing `airlock serve` sees a silent terminal: say what it waits for.
            let note = "airlock serve: waiting for MCP JSON-RPC messages on stdin, one per line. \
                        This is what an MCP client runs (see README, \"Use it with a client\"); \
                        to try it by hand, pipe requests in (README, \"Try it\"), or serve \
                        HTTP with --http 127.0.0.1:8080. Ctrl-D ends.\n";
            if std::io::stderr().lock().write_all(note.as_bytes()).is_err() {
                return ExitCode::FAILURE;
            }
        }
        let reloading = Reloading {
            vetting,
            overrides: overrides.clone(),
            known: Vec::new(),
        };
        return match built(manifest, reload_path, reloading, call_log) {
            Ok(server) => server.run_stdio(),
            Err(error) => {
                tracing::error!("the manifest's tools were refused: {error}");
                ExitCode::FAILURE
            }
        };
    };
    // No token passthrough: a tool that would receive the token's variable is refused.
    vetting.token_envs.clone_from(&http.auth_token_env);
    let store = manifest.shared_store.clone();
    let (config, store_url) = match http_config(http, store.as_ref()) {
        Ok(config) => config,
        Err(error) => {
            tracing::error!("{error}");
            return ExitCode::FAILURE;
        }
    };
    // Nor the Redis URL's: it may hold the store's password.
    vetting.store_url_env = store_url.as_ref().map(|(name, _)| name.clone());
    if !vetting.passes(&manifest) {
        return ExitCode::FAILURE;
    }
    // The tokens (and the Redis URL) join the redactor: one that reaches a command's output
    // is replaced there.
    let mut known: Vec<(String, secrecy::SecretString)> = config
        .tokens
        .secrets()
        .map(|(name, token)| (name.to_owned(), token.clone()))
        .collect();
    known.extend(store_url);
    let reloading = Reloading {
        vetting,
        overrides: overrides.clone(),
        known,
    };
    match built(manifest, reload_path, reloading, call_log) {
        Ok(server) => server.run_http(addr, config),
        Err(error) => {
            tracing::error!("the manifest's tools were refused: {error}");
            ExitCode::FAILURE
        }
    }
}

/// What a manifest must pass besides its own checks, at start and at every reload.
#[derive(Clone, Debug)]
struct Vetting {
    mode: sandbox::Mode,
    /// `--audit-hash-key-env`: no tool may receive the key's variable.
    hash_key_env: Option<String>,
    /// `--auth-token-env`: no tool may receive a token's variable.
    token_envs: Vec<String>,
    /// `--redis-url-env` when a shared store is used: no tool may receive it.
    store_url_env: Option<String>,
}

impl Vetting {
    /// Whether `manifest` may be served: the sandbox holds for its tools (see
    /// [`sandbox_holds`]), and no tool would receive the audit hash key's, a bearer token's or
    /// the Redis URL's variable. Says why not at ERROR.
    fn passes(&self, manifest: &Manifest) -> bool {
        if !sandbox_holds(manifest, self.mode) {
            return false;
        }
        // On every transport: the key that makes argument hashes unguessable must not reach
        // a tool (whose output the agent reads).
        if let Some(name) = &self.hash_key_env
            && let Some(tool) = passes_variable(manifest, name)
        {
            tracing::error!(
                tool,
                variable = name.as_str(),
                "this tool would receive the audit hash key's variable; refused"
            );
            return false;
        }
        for name in &self.token_envs {
            if let Some(tool) = passes_variable(manifest, name) {
                tracing::error!(
                    tool,
                    variable = name.as_str(),
                    "this tool would receive the HTTP bearer token's variable; refused"
                );
                return false;
            }
        }
        if let Some(name) = &self.store_url_env
            && let Some(tool) = passes_variable(manifest, name)
        {
            tracing::error!(
                tool,
                variable = name.as_str(),
                "this tool would receive the Redis URL's variable; refused"
            );
            return false;
        }
        true
    }
}

/// What a reload needs from the start: the same checks, the same command-line limits, the
/// same extra secrets for the redactor (tokens, the Redis URL).
struct Reloading {
    vetting: Vetting,
    overrides: LimitFlags,
    known: Vec<(String, secrecy::SecretString)>,
}

impl Reloading {
    /// The extra secrets, as the redactor takes them.
    fn known(&self) -> Vec<secrets::Secret> {
        self.known
            .iter()
            .map(|(name, value)| secrets::Secret::new(name.clone(), value.clone()))
            .collect()
    }

    /// The tools of the manifest at `path`, read and checked whole as at start; what the
    /// manifest changed besides its tools is said (it applies at the next start).
    fn tools(&self, path: &Path, fixed: &str) -> Result<Vec<airlock::Tool>, airlock::ReloadError> {
        let mut manifest = manifest::load(path)?;
        self.overrides.apply(&mut manifest.limits);
        if !self.vetting.passes(&manifest) {
            return Err("the manifest was refused (the line before says why)".into());
        }
        if fixed_parts(&manifest) != fixed {
            tracing::warn!(
                manifest = manifest.source.as_str(),
                "the manifest changed outside its tools ([limits], prompts, resources, name or \
                 instructions): a reload replaces the tools only; the rest applies at the next \
                 start"
            );
        }
        tracing::info!(
            manifest = manifest.source.as_str(),
            tools = manifest.tools.len(),
            "manifest loaded"
        );
        Ok(command::reloaded_tools(manifest, self.known())?)
    }
}

/// What a reload does not change, as text to compare: everything but the tools.
fn fixed_parts(manifest: &Manifest) -> String {
    format!(
        "{:?}",
        (
            &manifest.name,
            &manifest.version,
            &manifest.title,
            &manifest.instructions,
            &manifest.limits,
            &manifest.shared_store,
            &manifest.prompts,
            &manifest.resources,
        )
    )
}

/// The server of `manifest`, reloading the file at `reload_path` on SIGHUP when there is one.
fn built(
    manifest: Manifest,
    reload_path: Option<PathBuf>,
    reloading: Reloading,
    call_log: Arc<CallLog>,
) -> Result<airlock::Server, airlock::BuildError> {
    let fixed = fixed_parts(&manifest);
    let builder = command::builder_with(manifest, reloading.known(), Some(call_log))?;
    match reload_path {
        Some(path) => builder
            .reload(move || reloading.tools(&path, &fixed))
            .build(),
        None => builder.build(),
    }
}

/// The first tool that would receive the environment variable `name` (passed through or as a
/// secret).
fn passes_variable<'a>(manifest: &'a Manifest, name: &str) -> Option<&'a str> {
    manifest.tools.iter().find_map(|tool| {
        let mut passed = tool
            .env
            .iter()
            .map(|(variable, _)| variable.to_str().unwrap_or_default())
            .chain(tool.secrets.iter().map(secrets::Secret::name));
        passed
            .any(|variable| variable == name)
            .then_some(tool.name.as_str())
    })
}

/// Probes the kernel and decides whether the manifest's sandboxed tools may be served: in
/// `required` mode every one must be fully confined; in `best-effort` mode each tool's
/// effective policy is logged. Also makes this process non-dumpable, so that no process of the
/// same user (a command included) can read its memory or `/proc/<pid>/environ`.
fn sandbox_holds(manifest: &Manifest, mode: sandbox::Mode) -> bool {
    for tool in &manifest.tools {
        for warning in &tool.warnings {
            tracing::warn!(tool = tool.name.as_str(), "{warning}");
        }
    }
    let unconfined = manifest.tools.iter().filter(|tool| tool.sandbox.is_none());
    for tool in unconfined {
        tracing::warn!(
            tool = tool.name.as_str(),
            "this tool runs OUTSIDE the kernel sandbox (accepted risk: unsandboxed)"
        );
    }
    if let Err(error) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(error = ?error, "could not make airlock non-dumpable");
    }
    let sandboxed: Vec<&str> = manifest
        .tools
        .iter()
        .filter(|tool| tool.sandbox.is_some())
        .map(|tool| tool.name.as_str())
        .collect();
    if sandboxed.is_empty() {
        return true;
    }
    let host = sandbox::configure(mode);
    let missing = host.support.missing();
    // The ABI the kernel reports, as `airlock check` shows it (one short-lived thread, once),
    // not the lower bound the start-up probe proves.
    let support = host.support.clone().with_exact_landlock_abi();
    tracing::info!(support = %support.describe(), "sandbox");
    if missing.is_empty() {
        return true;
    }
    match mode {
        sandbox::Mode::Required => {
            tracing::error!(
                missing = %missing.join("; "),
                tools = %sandboxed.join(", "),
                "this kernel cannot enforce the sandbox of these tools, so airlock will not \
                 serve them. Run on a kernel that has what is missing, or opt out: per tool with \
                 sandbox = \"off\" and accept_risk = [\"unsandboxed\"], or for the whole server \
                 with --sandbox best-effort"
            );
            false
        }
        sandbox::Mode::BestEffort => {
            for tool in manifest.tools.iter().filter(|tool| tool.sandbox.is_some()) {
                tracing::warn!(
                    tool = tool.name.as_str(),
                    missing = %missing.join("; "),
                    "best-effort sandbox: this tool runs with only what the kernel enforces"
                );
            }
            true
        }
    }
}

/// The HTTP configuration the flags (over the manifest's `[limits]` store settings)
/// describe, and the Redis URL as a secret for the redactor when a shared store is used.
fn http_config(
    flags: &HttpFlags,
    manifest: Option<&manifest::StoreSettings>,
) -> Result<(HttpConfig, Option<(String, secrecy::SecretString)>), HttpFlagsError> {
    let tokens = Tokens::from_env(flags.auth_token_env.iter().map(String::as_str))?;
    let mut limits = HttpLimits::default();
    if let Some(max) = flags.max_connections {
        limits.max_connections = max;
    }
    if let Some(max) = flags.max_connections_per_address {
        limits.max_connections_per_address = max;
    }
    if let Some(per_minute) = flags.client_calls_per_minute {
        let burst = airlock::limits::CLIENT_CALL_RATE.burst;
        limits.client_call_rate = Some(Rate { per_minute, burst });
    }
    if let Some(max) = flags.client_in_flight {
        limits.client_in_flight = max;
    }
    if let Some(per_minute) = flags.client_requests_per_minute {
        let burst = airlock::limits::CLIENT_REQUEST_RATE.burst;
        limits.client_request_rate = Some(Rate { per_minute, burst });
    }
    if let Some(max) = flags.max_sessions {
        limits.max_sessions = max;
    }
    if let Some(max) = flags.max_sessions_per_client {
        limits.max_sessions_per_client = max;
    }
    let allow = AllowList::parse(&flags.allow_host, &flags.allow_origin)?;
    let proxies =
        TrustedProxies::new(flags.trusted_proxy.clone()).reading(flags.trusted_proxy_header);
    let mut config = HttpConfig::new(allow, tokens, limits).trusting(proxies);
    if let (Some(cert), Some(key)) = (&flags.tls_cert, &flags.tls_key) {
        config = config.with_tls(Tls::from_pem_files(cert, key)?);
    }
    if let (Some(resource), Some(issuer)) = (&flags.oauth_resource, &flags.oauth_issuer) {
        let keys = match (&flags.oauth_jwks_file, &flags.oauth_jwks_uri) {
            (Some(file), _) => JwksSource::File(file.clone()),
            (None, Some(uri)) => JwksSource::Uri(JwksUri::parse(uri, &flags.oauth_jwks_ca)?),
            (None, None) => return Err(HttpFlagsError::NoJwks),
        };
        let mut oauth = OAuth::new(resource, issuer, keys)?;
        if !flags.oauth_authorization_server.is_empty() {
            oauth = oauth.authorization_servers(
                flags.oauth_authorization_server.iter().map(String::as_str),
            )?;
        }
        if !flags.oauth_algorithm.is_empty() {
            oauth = oauth.algorithms(flags.oauth_algorithm.iter().map(String::as_str))?;
        }
        config = config.with_oauth(oauth);
    }
    let redis = match flags.quota_store {
        Some(store) => store == QuotaStore::Redis,
        None => manifest.is_some(),
    };
    if !redis {
        return Ok((config, None));
    }
    let name = flags.redis_url_env.as_str();
    if !Tokens::is_variable_name(name) {
        return Err(HttpFlagsError::StoreUrlVariable);
    }
    let url = std::env::var(name).map_err(|_| HttpFlagsError::StoreUrlMissing(name.to_owned()))?;
    let url = secrecy::SecretString::from(url);
    let namespace = flags
        .redis_namespace
        .as_deref()
        .or(manifest.and_then(|store| store.namespace.as_deref()))
        .unwrap_or("airlock");
    let unreachable = match flags.redis_unreachable {
        Some(RedisUnreachable::Local) => Unreachable::LocalLimits,
        Some(RedisUnreachable::FailClosed) => Unreachable::FailClosed,
        None if manifest.is_some_and(|store| store.local_when_unreachable) => {
            Unreachable::LocalLimits
        }
        None => Unreachable::FailClosed,
    };
    let mut store = SharedStore::redis(url.clone(), namespace)?.when_unreachable(unreachable);
    let lease = flags
        .redis_lease_ms
        .map(Duration::from_millis)
        .or(manifest.and_then(|store| store.lease_ttl));
    if let Some(lease) = lease {
        store = store.with_lease_ttl(lease)?;
    }
    Ok((config.shared_store(store), Some((name.to_owned(), url))))
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

fn run_audit(flags: AuditFlags) -> ExitCode {
    if flags.list {
        return emit(std::io::stdout().lock(), &audit::list(), ExitCode::SUCCESS);
    }
    let baseline = match flags.baseline.as_deref().map(audit::Baseline::load) {
        None => None,
        Some(Ok(baseline)) => Some(baseline),
        Some(Err(error)) => {
            return emit(
                std::io::stderr().lock(),
                &format!("airlock audit: {error}\n"),
                ExitCode::from(2),
            );
        }
    };
    let pin = match flags.check_pin.as_deref().map(read_pin) {
        None => None,
        Some(Ok(pin)) => Some(pin),
        Some(Err(text)) => {
            return emit(
                std::io::stderr().lock(),
                &format!("airlock audit: --check-pin: {text}\n"),
                ExitCode::from(2),
            );
        }
    };
    let mut headers = flags.headers;
    if let Some(name) = &flags.auth_token_env {
        match audit::Header::bearer(name, std::env::var_os(name).as_deref()) {
            Ok(header) => headers.push(header),
            Err(error) => {
                return emit(
                    std::io::stderr().lock(),
                    &format!("airlock audit: {error}\n"),
                    ExitCode::from(2),
                );
            }
        }
    }
    let options = audit::Options {
        headers,
        max_memory_mib: flags.max_memory_mib,
        case_timeout: Duration::from_millis(flags.case_timeout_ms),
        quick: flags.quick,
        only: flags.only,
        skip: flags.skip,
        call_tool: flags.call_tool,
        call_arguments: flags.call_args,
        no_tool_calls: flags.no_tool_calls,
        progress: true,
        fail_on: flags.fail_on,
        baseline,
        handle_signals: true,
        url: flags.url,
        allow_remote: flags.allow_remote,
        pin,
        ..audit::Options::new(flags.command)
    };
    let report = match audit::run(&options) {
        Ok(report) => report,
        Err(error) => {
            return emit(
                std::io::stderr().lock(),
                &format!("airlock audit: {error}\n"),
                ExitCode::from(2),
            );
        }
    };
    let outputs: [(&Option<PathBuf>, Render); 5] = [
        (&flags.json, |report| {
            report.to_json().map_err(|error| error.to_string())
        }),
        (&flags.sarif, |report| {
            report.to_sarif().map_err(|error| error.to_string())
        }),
        (&flags.junit, |report| Ok(report.to_junit())),
        (&flags.write_baseline, |report| {
            audit::Baseline::of(report)
                .to_json()
                .map_err(|error| error.to_string())
        }),
        (&flags.pin, |report| match &report.catalog {
            Some(catalog) => Ok(airlock_metadata::Pin::of(catalog).to_json()),
            None => Err("no catalog: the server did not complete its handshake".to_owned()),
        }),
    ];
    for (path, render) in outputs {
        let Some(path) = path else { continue };
        let written = render(&report)
            .map_err(std::io::Error::other)
            .and_then(|text| std::fs::write(path, text));
        if let Err(error) = written {
            let text = format!("airlock audit: cannot write {}: {error}\n", path.display());
            return emit(std::io::stderr().lock(), &text, ExitCode::from(3));
        }
    }
    emit(
        std::io::stdout().lock(),
        &report.table(),
        ExitCode::from(report.exit_code()),
    )
}

/// The pin in `path` (the operator's file).
fn read_pin(path: &Path) -> Result<airlock_metadata::Pin, String> {
    let bytes = std::fs::read(path).map_err(|error| format!("{}: {error}", path.display()))?;
    airlock_metadata::Pin::parse(&bytes).map_err(|error| format!("{}: {error}", path.display()))
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
