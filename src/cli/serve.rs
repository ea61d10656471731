//! `airlock serve`: the serving policy between the command line and the library: which
//! manifest is served, what the sandbox must hold before it starts, which variables no tool
//! may receive, the descriptor limit, and the reload on SIGHUP.

use std::io::{IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use airlock::CallLog;
use airlock::transport::http::Tokens;
use airlock_manifest::manifest::{self, Manifest, ManifestError};
use airlock_manifest::{command, sandbox, secrets};

use crate::http_flags::{HttpFlags, http_config};
use crate::{AuditLogFlags, LOCAL_MANIFEST, LimitFlags, LogFlags, emit};

/// Raises the soft limit on open descriptors to the hard one: connections, pipes of running
/// calls and proxied connections are all airlock's descriptors, and a common soft limit of
/// 1,024 is what a few busy calls use (every bound on them is counted against the limit in
/// force: `sandbox::proxy`). Commands get their own limit from their policy.
pub(crate) fn raise_descriptor_limit() {
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

pub(crate) fn load(path: Option<&Path>) -> Result<Manifest, ManifestError> {
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

pub(crate) fn serve(
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
pub(crate) struct Vetting {
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
pub(crate) struct Reloading {
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
pub(crate) fn fixed_parts(manifest: &Manifest) -> String {
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
pub(crate) fn built(
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
pub(crate) fn passes_variable<'a>(manifest: &'a Manifest, name: &str) -> Option<&'a str> {
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
pub(crate) fn sandbox_holds(manifest: &Manifest, mode: sandbox::Mode) -> bool {
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
