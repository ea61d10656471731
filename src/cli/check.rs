//! `airlock check`: what a manifest lets agents run, what the sandbox holds on this machine,
//! and whether `serve` would build it (OK on stdout, status 0; a refusal on stderr, status 1).

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use airlock_manifest::plan::load;
use airlock_manifest::{command, sandbox};

/// Checks the manifest at `path` (none: as `serve` chooses it) and prints what it found.
pub(crate) fn run(path: Option<&Path>) -> ExitCode {
    let (text, status) = match load(path) {
        Ok(manifest) => {
            let mut description = manifest.describe();
            let support = sandbox::Support::probe().with_exact_landlock_abi();
            let missing = support.missing();
            description.push_str(&format!(
                "\nsandbox on this machine: {}\n",
                support.describe()
            ));
            description.push_str(&format!(
                "sandbox denials: {}\nsandbox writes outside the view: {}\n{NEVER_REPORTED}\n",
                sandbox::denials::reporting(support.landlock_abi).describe(),
                sandbox::denials::writes_reporting()
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

/// What no machine reports, said beside every report of denials.
const NEVER_REPORTED: &str = "sandbox denials never reported: a read of a path outside the \
    tool's view (ENOENT), refused by the file system view (a write there, or outside the \
    writable directories, is reported only as the line above says); and seccomp's refusals (EPERM: a socket without `network` but a TCP one, or any where \
    Landlock has no TCP rules; set*id; hard links), which the kernel logs only for filters \
    installed with a flag airlock's filter library cannot set";

/// `airlock check --audit-rules`: the syscall audit rules under which writes the sandbox's
/// view refuses are reported, for `auditctl -R` (airlock installs none itself).
pub(crate) fn audit_rules() -> ExitCode {
    let text = format!(
        "# airlock: writes outside a sandboxed tool's grant (EROFS, ENOENT from its file system\n\
         # view), for `auditctl -R FILE` or /etc/audit/rules.d/airlock.rules; the kernel's audit\n\
         # must be on (`auditctl -e 1`). Launchers take audit login uid {}.\n{}",
        sandbox::denials::AUDIT_LOGIN_UID,
        sandbox::denials::audit_rules()
    );
    if std::io::stdout().lock().write_all(text.as_bytes()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `airlock check --try TOOL JSON`: one call, and what the sandbox refused it.
pub(crate) struct Try<'a> {
    /// The manifest (none: what `serve` would take).
    pub(crate) manifest: Option<&'a Path>,
    pub(crate) tool: &'a str,
    /// The arguments, one JSON object.
    pub(crate) arguments: &'a str,
    /// `--test-hosts` (tests only), passed on to `serve`.
    pub(crate) test_hosts: &'a [String],
}

/// Runs the call through `airlock serve` as `airlock call` does, prints its result, then each
/// denial its audit record holds with the key that would allow it, or why none can be seen
/// here. Exit status 0 when the tool succeeded and nothing was denied, 1 otherwise, 2 for
/// arguments that are not one JSON object.
pub(crate) fn try_call(request: &Try<'_>) -> ExitCode {
    let arguments = match super::call::arguments(&[], Some(request.arguments)) {
        Ok(arguments) => arguments,
        Err(error) => return refuse(&format!("airlock check --try: {error}\n"), 2),
    };
    let support = sandbox::Support::probe().with_exact_landlock_abi();
    let reporting = sandbox::denials::reporting(support.landlock_abi);
    let call = super::call::Request {
        manifest: request.manifest,
        sandbox: "required",
        tool: request.tool,
        pairs: &[],
        json: None,
        raw: false,
        test_hosts: request.test_hosts,
    };
    let (reply, stderr) = match super::call::call(&call, arguments, true) {
        Ok(answered) => answered,
        Err(error) => return refuse(&format!("airlock check --try: {error}\n"), 1),
    };
    let printed = super::call::print(&reply, false);
    let record = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|record| {
            record.get("event").and_then(serde_json::Value::as_str) == Some("tool_call")
        });
    let denials = record
        .as_ref()
        .and_then(|record| record.pointer("/denials/denials"))
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    let unrecorded = record
        .as_ref()
        .and_then(|record| record.pointer("/denials/unrecorded"))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    let mut out = format!("\nsandbox denials: {}\n", reporting.describe());
    let text = |denial: &serde_json::Value, key: &str| {
        denial
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    for denial in &denials {
        out.push_str(&format!(
            "denied: {} {} (by {}); allow with: {}\n",
            text(denial, "kind"),
            text(denial, "object"),
            text(denial, "source"),
            text(denial, "allow")
        ));
    }
    if unrecorded > 0 {
        out.push_str(&format!("denied: {unrecorded} more, not kept\n"));
    }
    if denials.is_empty() {
        out.push_str(if reporting.reported() {
            "denied: nothing the kernel or the proxy reported\n"
        } else {
            "denied: nothing the proxy reported; the kernel's denials cannot be seen here (above)\n"
        });
    }
    out.push_str(&format!(
        "sandbox writes outside the view: {}\n",
        sandbox::denials::writes_reporting()
    ));
    out.push_str(NEVER_REPORTED);
    out.push('\n');
    if record.is_none() {
        out.push_str("(no audit record came from the call: the server's stderr follows)\n");
        out.push_str(&stderr);
    }
    if std::io::stdout().lock().write_all(out.as_bytes()).is_err() {
        return ExitCode::FAILURE;
    }
    if printed == ExitCode::SUCCESS && denials.is_empty() && unrecorded == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn refuse(text: &str, status: u8) -> ExitCode {
    // Nothing more to do if stderr is gone.
    if std::io::stderr().lock().write_all(text.as_bytes()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::from(status)
}
