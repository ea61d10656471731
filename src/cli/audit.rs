//! `airlock audit`'s flags and its run: the target, the cases, the reports, the pin.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use airlock_audit as audit;

use crate::cli::output::emit;

/// Options of `airlock audit`.
#[derive(Debug, clap::Args)]
pub(crate) struct AuditFlags {
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
          value_parser = audit::Header::parse)]
    headers: Vec<audit::Header>,
    /// The server's command and its arguments.
    #[arg(last = true, value_name = "COMMAND", required_unless_present_any = ["list", "url"])]
    command: Vec<OsString>,
}

/// Renders an audit report as one of its file formats.
type Render = fn(&audit::AuditReport) -> Result<String, RenderError>;

/// Why a report file has no text to write.
#[derive(Debug, thiserror::Error)]
enum RenderError {
    /// The report cannot be serialized.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// `--pin` of a server that gave no catalog.
    #[error("no catalog: the server did not complete its handshake")]
    NoCatalog,
}

/// A flag's value that is not one it takes; the text is what clap shows after the value.
#[derive(Debug, thiserror::Error)]
enum ValueError {
    /// `--fail-on`.
    #[error("one of critical, high, medium, low, info, never")]
    FailOn,
    /// `--call-args`: JSON, but not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// `--call-args`: not JSON.
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
}

fn parse_fail_on(text: &str) -> Result<audit::FailOn, ValueError> {
    audit::FailOn::parse(text).ok_or(ValueError::FailOn)
}

fn parse_json_object(text: &str) -> Result<serde_json::Value, ValueError> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) if value.is_object() => Ok(value),
        Ok(_) => Err(ValueError::NotAnObject),
        Err(error) => Err(ValueError::NotJson(error)),
    }
}

/// Runs `airlock audit` as `flags` say.
pub(crate) fn run(flags: AuditFlags) -> ExitCode {
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
        (&flags.json, |report| Ok(report.to_json()?)),
        (&flags.sarif, |report| Ok(report.to_sarif()?)),
        (&flags.junit, |report| Ok(report.to_junit())),
        (&flags.write_baseline, |report| {
            Ok(audit::Baseline::of(report).to_json()?)
        }),
        (&flags.pin, |report| match &report.catalog {
            Some(catalog) => Ok(airlock_metadata::Pin::of(catalog).to_json()),
            None => Err(RenderError::NoCatalog),
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

/// Why `--check-pin`'s file gives no pin.
#[derive(Debug, thiserror::Error)]
enum PinFileError {
    /// It cannot be read.
    #[error("{}: {error}", .path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// It holds no pin.
    #[error("{}: {error}", .path.display())]
    Parse {
        path: PathBuf,
        error: airlock_metadata::PinError,
    },
}

/// The pin in `path` (the operator's file).
fn read_pin(path: &Path) -> Result<airlock_metadata::Pin, PinFileError> {
    let bytes = std::fs::read(path).map_err(|error| PinFileError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    airlock_metadata::Pin::parse(&bytes).map_err(|error| PinFileError::Parse {
        path: path.to_path_buf(),
        error,
    })
}
