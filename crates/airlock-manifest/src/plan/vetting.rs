//! What a manifest must pass besides its own checks before it is served, at start and at
//! every reload: the sandbox holds for its tools, and no tool receives a variable that holds
//! one of the server's own secrets (the audit hash key, a bearer token, the Redis URL).

use airlock::variables::VariableName;

use crate::manifest::Manifest;
use crate::{sandbox, secrets};

/// The checks, and the variables no tool may receive.
#[derive(Clone, Debug)]
pub(super) struct Vetting {
    mode: sandbox::Mode,
    /// `--audit-hash-key-env`: no tool may receive the key's variable.
    hash_key_env: Option<VariableName>,
    /// `--auth-token-env`: no tool may receive a token's variable.
    token_envs: Vec<VariableName>,
    /// `--redis-url-env` when a shared store is used: no tool may receive it.
    store_url_env: Option<VariableName>,
}

impl Vetting {
    /// The checks of a server whose sandbox is held in `mode`, keeping the audit hash key's
    /// variable `hash_key_env` from every tool.
    pub(super) fn new(mode: sandbox::Mode, hash_key_env: Option<VariableName>) -> Self {
        Self {
            mode,
            hash_key_env,
            token_envs: Vec::new(),
            store_url_env: None,
        }
    }

    /// Also keeps the bearer tokens' variables, and the Redis URL's, from every tool.
    #[must_use]
    pub(super) fn keeping_http_secrets(
        mut self,
        token_envs: Vec<VariableName>,
        store_url_env: Option<VariableName>,
    ) -> Self {
        self.token_envs = token_envs;
        self.store_url_env = store_url_env;
        self
    }

    /// Whether `manifest` may be served: the sandbox holds for its tools (see
    /// [`sandbox_holds`]), and no tool would receive the audit hash key's, a bearer token's or
    /// the Redis URL's variable. Says why not at ERROR.
    pub(super) fn passes(&self, manifest: &Manifest) -> bool {
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

/// The first tool that would receive the environment variable `name` (passed through or as a
/// secret).
fn passes_variable<'a>(manifest: &'a Manifest, name: &VariableName) -> Option<&'a str> {
    manifest.tools.iter().find_map(|tool| {
        let mut passed = tool
            .env
            .iter()
            .map(|(variable, _)| variable.to_str().unwrap_or_default())
            .chain(tool.secrets.iter().map(secrets::Secret::name));
        passed
            .any(|variable| name == variable)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest of one tool `t` given `keys` (its environment).
    fn manifest(keys: &str) -> Manifest {
        let dir = std::env::temp_dir().join(format!("airlock-vetting-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("work")).unwrap();
        let text = format!(
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"wc\", \"--\", \"{{path}}\"]\n\
             workdir = \"work\"\nargs.path = {{ type = \"path\" }}\n{keys}\n"
        );
        crate::manifest::parse(&text, "test.toml", &dir).unwrap()
    }

    fn name(text: &str) -> VariableName {
        VariableName::parse(text).unwrap()
    }

    #[test]
    fn a_variable_a_tool_gets_fixed_or_passed_through_names_that_tool() {
        let fixed = manifest("env = { MY_TOKEN = \"x\" }");
        assert_eq!(passes_variable(&fixed, &name("MY_TOKEN")), Some("t"));
        assert_eq!(passes_variable(&fixed, &name("OTHER")), None);
        // Passed through only when airlock has it (read at load): cargo sets CARGO.
        let passed = manifest("env_allow = [\"CARGO\", \"AIRLOCK_SURELY_UNSET\"]");
        assert_eq!(passes_variable(&passed, &name("CARGO")), Some("t"));
        assert_eq!(
            passes_variable(&passed, &name("AIRLOCK_SURELY_UNSET")),
            None
        );
    }

    #[test]
    fn a_tool_with_no_environment_receives_no_variable() {
        assert_eq!(passes_variable(&manifest(""), &name("MY_TOKEN")), None);
    }
}
