//! `airlock audit`: a battery of hostile inputs that reviews any stdio MCP server, or (with
//! `--url`, see `http`) a running Streamable HTTP server with the transport's own cases.
//!
//! The audit starts the server under review once per case, in its own process group, sends
//! one hostile input (malformed JSON, bad encodings, envelope abuse, batches, deep nesting,
//! huge lines, protocol misuse, floods, end of input at bad moments), and judges what comes
//! back against JSON-RPC 2.0 and the MCP specification. Every case then checks that the
//! server still answers a `ping` and `tools/list`, that every stdout line was one JSON-RPC
//! message, that no notification was answered, and that the peak memory of the server's
//! process tree stayed within the limit; then the whole tree is killed. The `metadata` cases
//! judge what the server tells the model instead: the catalog learned once in discovery (no
//! server started per case), and the text of the results of the calls the audit may make.
//!
//! Every finding has a severity (`severity`): `--fail-on` picks the level from which findings
//! fail the run, and a baseline (an earlier run's findings) keeps known ones from failing it.
//! The report is a table, JSON, SARIF 2.1.0 or JUnit XML.
//!
//! What it trusts: the command line (the operator's). What it does not: everything the server
//! does — its output is parsed with bounds and shown escaped, its memory and time are capped,
//! and its processes never outlive their case (see `target`).
//!
//! # Layout
//!
//! - `cases`: the catalogue, as data plus a few functions.
//! - `exposure`: the scratch directory, canaries and values of the `exposure` category.
//! - `asking`: hostile answers to the server's questions (elicitation, sampling, roots) and
//!   tampered 2026-07-28 request states, the `asking` category.
//! - `metadata`: what the server tells the model (the catalog, results' text, the pin), the
//!   `metadata` category, judged by the rules of the `airlock-metadata` crate.
//! - `http`: the `--url` audit: the endpoint, its cases, and a bounded HTTP/1.1 client.
//! - `judge`: classifying stdout lines and judging replies (pure).
//! - `trace`: whether output holds a panic or a stack trace, by the shape runtimes print.
//! - `session`: one case's conversation, with the follow-up checks.
//! - `target`: the server as a process — the audit's spawn site, pipes, memory, cleanup.
//! - `probe`: which tool the audit may call, with what arguments.
//! - `report`: the table and the JSON.
//! - `evidence`: what came back, as reports show it (first bytes, secrets redacted).
//! - `severity`: the five levels, `--fail-on`, and the kinds of general finding.
//! - `baseline`: an earlier run's findings, which then do not fail the run.
//! - `sarif`, `junit`: the reports for code-scanning services and CI test views.
//! - `signals`: Ctrl-C kills the server under audit and ends the run.
//! - `fuzzing` (tests and `--cfg fuzzing` only): the `judge` fuzz target's entry point.

use std::ffi::OsString;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

mod asking;
mod baseline;
mod cases;
mod evidence;
mod exposure;
mod failure;
#[cfg(any(test, fuzzing))]
pub mod fuzzing;
mod http;
mod judge;
mod junit;
mod metadata;
mod probe;
mod report;
mod sarif;
mod session;
mod severity;
mod signals;
mod target;
mod trace;

pub use baseline::{Baseline, BaselineError};
pub use http::{Header, HeaderError, UrlError};
pub use severity::{FailOn, Severity};

use cases::{Body, Case, Judgement};
use evidence::{Evidence, Redactor};
use failure::Failure;
use judge::shown;
use probe::Probe;
use session::{Finding, Session};
use severity::Kind;
use target::Target;

/// What a case concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// What a correct server does.
    Pass,
    /// Allowed by the specifications, but worse than it could be (or a deliberate choice a
    /// reviewer should know about).
    Note,
    /// Wrong: a crash, a hang, a lost or misaddressed reply, a reply to a notification, a
    /// line that is not one JSON-RPC message, leaked internals, memory past the limit.
    Fail,
}

impl Verdict {
    /// `pass`, `note` or `fail`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Note => "note",
            Self::Fail => "fail",
        }
    }
}

/// A group of cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// Malformed JSON.
    Json,
    /// Bytes that are not UTF-8, NUL, byte-order marks, line endings.
    Encoding,
    /// The JSON-RPC envelope: version, method, params and id types, duplicate keys.
    Envelope,
    /// JSON-RPC batches.
    Batch,
    /// Deep nesting.
    Nesting,
    /// Huge lines, numbers, strings and argument objects.
    Huge,
    /// The MCP lifecycle and methods used wrongly.
    Protocol,
    /// Floods, slow writers and end of input at bad moments.
    Flood,
    /// Traversal, option injection and shell metacharacters in tools' string arguments,
    /// judged by canary files.
    Exposure,
    /// Hostile answers to the server's own questions (elicitation, sampling, roots), and
    /// 2026-07-28 request states tampered with.
    Asking,
    /// What the server tells the model: hidden characters, model-addressed instructions,
    /// shadowing, unbounded secret inputs, oversized text, results' text, the pin.
    Metadata,
    /// Tasks, for a server that declares them: ids never issued or malformed, polling floods,
    /// cancel of a finished task (2025-11-25); requests without the 2026-07-28 extension.
    Tasks,
    /// The HTTP transport's own cases (`--url` only).
    Http,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Self; 13] = [
        Self::Json,
        Self::Encoding,
        Self::Envelope,
        Self::Batch,
        Self::Nesting,
        Self::Huge,
        Self::Protocol,
        Self::Flood,
        Self::Exposure,
        Self::Asking,
        Self::Metadata,
        Self::Tasks,
        Self::Http,
    ];

    /// The name used in case ids and `--only`/`--skip`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Encoding => "encoding",
            Self::Envelope => "envelope",
            Self::Batch => "batch",
            Self::Nesting => "nesting",
            Self::Huge => "huge",
            Self::Protocol => "protocol",
            Self::Flood => "flood",
            Self::Exposure => "exposure",
            Self::Asking => "asking",
            Self::Metadata => "metadata",
            Self::Tasks => "tasks",
            Self::Http => "http",
        }
    }

    /// The heading in the table.
    pub fn title(self) -> &'static str {
        match self {
            Self::Json => "malformed JSON",
            Self::Encoding => "encoding",
            Self::Envelope => "envelope abuse",
            Self::Batch => "batches",
            Self::Nesting => "deep nesting",
            Self::Huge => "huge input",
            Self::Protocol => "protocol misuse",
            Self::Flood => "floods and stream ends",
            Self::Exposure => "command exposure",
            Self::Asking => "hostile answers to the server's questions",
            Self::Metadata => "what the server tells the model",
            Self::Tasks => "tasks",
            Self::Http => "HTTP transport",
        }
    }
}

/// How to run an audit.
#[derive(Clone, Debug)]
pub struct Options {
    /// The server's command: the program, then its arguments (empty with `url`).
    pub command: Vec<OsString>,
    /// Audit the running Streamable HTTP server at this `http://` URL instead of a command.
    pub url: Option<String>,
    /// Let `url` name a host that is not loopback.
    pub allow_remote: bool,
    /// Header fields every request to `url` carries (a token, the deployment's own fields);
    /// their values are redacted from every report.
    pub headers: Vec<Header>,
    /// Peak resident memory of the server's process tree allowed in any case, in MiB.
    pub max_memory_mib: u64,
    /// Time limit of one case (slow cases get a few of these).
    pub case_timeout: Duration,
    /// Leave out the slow cases (huge streamed lines, the unread-replies flood), unless `only`
    /// names them by id.
    pub quick: bool,
    /// Run only these cases: ids (`json.nan`), categories (`json`) or prefixes (`json.*`).
    pub only: Vec<String>,
    /// Leave out these cases (same forms as `only`).
    pub skip: Vec<String>,
    /// The tool that cases needing a real call use, instead of the first read-only one.
    pub call_tool: Option<String>,
    /// Arguments for `call_tool`, instead of the smallest its schema accepts.
    pub call_arguments: Option<serde_json::Value>,
    /// Never call a real tool: calls go to a tool name that cannot exist.
    pub no_tool_calls: bool,
    /// Show progress on stderr: a bar when stderr is a terminal, a line per case otherwise.
    pub progress: bool,
    /// The level from which a finding fails the run.
    pub fail_on: FailOn,
    /// Findings of an earlier run: these do not fail this one.
    pub baseline: Option<Baseline>,
    /// Catch SIGINT, SIGTERM and SIGHUP to kill the server and end the run (for the CLI).
    pub handle_signals: bool,
    /// A pinned catalog (`--check-pin`): each difference from it is a high finding of
    /// `metadata.pin`.
    pub pin: Option<airlock_metadata::Pin>,
}

impl Options {
    /// Defaults for auditing `command`: 256 MiB, 10 s per case, every case, no progress.
    pub fn new(command: Vec<OsString>) -> Self {
        Self {
            command,
            url: None,
            allow_remote: false,
            headers: Vec::new(),
            max_memory_mib: DEFAULT_MAX_MEMORY_MIB,
            case_timeout: DEFAULT_CASE_TIMEOUT,
            quick: false,
            only: Vec::new(),
            skip: Vec::new(),
            call_tool: None,
            call_arguments: None,
            no_tool_calls: false,
            progress: false,
            fail_on: FailOn::DEFAULT,
            baseline: None,
            handle_signals: false,
            pin: None,
        }
    }
}

/// Why an audit could not start.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// No server command was given.
    #[error("no server command to audit (give it after --)")]
    NoCommand,
    /// `--only` or `--skip` named no case or category.
    #[error("--only/--skip: no case or category is called {0:?} (see `airlock audit --list`)")]
    UnknownSelector(String),
    /// The filters left no case to run.
    #[error("--only/--skip left no case to run")]
    NothingSelected,
    /// The URL cannot be audited.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// Both a URL and a command were given.
    #[error(
        "give either --url or a command after --, not both (the audit does not start HTTP servers)"
    )]
    UrlAndCommand,
}

/// What an audit found.
#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    /// The auditing airlock's version.
    pub version: String,
    /// When the run started, RFC 3339 in UTC (`2026-01-31T12:00:00Z`).
    pub started_at: String,
    /// The audited command, lossily decoded (empty for a URL).
    pub command: Vec<String>,
    /// The audited URL (escaped, bounded), for an HTTP audit.
    pub url: Option<String>,
    /// The file (or URL) findings point at, as a URI: the manifest the command names, else a
    /// file it names, else its program (SARIF's physical location).
    pub artifact: String,
    /// What the server said about itself, if the handshake worked.
    pub server: Option<ServerFacts>,
    /// Why the audit could not run, if it could not.
    pub setup_error: Option<String>,
    /// The end of the server's stderr when the audit could not run (escaped, bounded).
    pub setup_stderr: Option<String>,
    /// The level from which a finding fails the run.
    pub fail_on: FailOn,
    /// Whether a baseline was given, and so which findings are old.
    pub baselined: bool,
    /// The memory limit, in MiB.
    pub max_memory_mib: u64,
    /// The time limit of one case, in milliseconds.
    pub case_timeout_ms: u64,
    /// Whether slow cases were left out.
    pub quick: bool,
    /// Each case run, in catalogue order.
    pub cases: Vec<CaseReport>,
    /// The whole run, in milliseconds.
    pub duration_ms: u64,
    /// Whether SIGINT, SIGTERM or SIGHUP stopped the run.
    pub interrupted: bool,
    /// The digest of the server's catalog (`sha256:…`, as `--pin` writes it and `airlock
    /// serve` publishes it), if the handshake worked.
    pub catalog_digest: Option<String>,
    /// The server's catalog (tools, prompts, resources, instructions), if the handshake
    /// worked: what `--pin` writes.
    #[serde(skip)]
    pub catalog: Option<airlock_metadata::Catalog>,
}

/// The server under audit, as its handshake and tool list describe it.
#[derive(Clone, Debug, Serialize)]
pub struct ServerFacts {
    /// `serverInfo.name` (escaped, bounded).
    pub name: String,
    /// `serverInfo.version` (escaped, bounded).
    pub version: String,
    /// The protocol version it answered.
    pub protocol_version: String,
    /// Tools on its first `tools/list` page.
    pub tools: usize,
    /// Their names (escaped, bounded; at most [`MAX_LISTED_TOOLS`]).
    pub tool_names: Vec<String>,
    /// The tool cases call, and its arguments.
    pub probe: String,
    /// The longest time limit a tool the audit calls declares in its `_meta`, in
    /// milliseconds, and which tool: cases wait at least that long (up to
    /// [`MAX_HONOURED_TOOL_TIMEOUT`]).
    pub declared_timeout_ms: Option<u64>,
    /// The tool that declared [`ServerFacts::declared_timeout_ms`] (escaped, bounded).
    pub declared_by: Option<String>,
}

/// One case's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// The case id, `category.name`.
    pub id: String,
    /// Its category.
    pub category: String,
    /// What it sent.
    pub sends: String,
    /// What a correct server does.
    pub expects: String,
    /// The verdict: the worst of the reply's and the findings'.
    pub verdict: Verdict,
    /// The worst severity among the reply's and the findings' (`None`: nothing found).
    pub severity: Option<Severity>,
    /// Whether a finding of this case fails the run (at or over `fail_on`, not in the
    /// baseline).
    pub fails: bool,
    /// What came back and what it means.
    pub detail: String,
    /// How bad the reply to the case's own input is (`None` when it passes).
    pub answer_severity: Option<Severity>,
    /// Whether the baseline already had the reply's finding.
    pub answer_baselined: bool,
    /// Anything else the case showed: bad lines, unasked-for replies, a failed follow-up,
    /// memory over the limit.
    pub findings: Vec<FindingReport>,
    /// Microseconds from the end of the input to its first answer.
    pub answer_us: Option<u64>,
    /// The whole case, in milliseconds.
    pub duration_ms: u64,
    /// Peak resident memory of the server's process tree, in KiB.
    pub peak_rss_kib: u64,
    /// How the server ended by itself, if it did before the audit killed it.
    pub exit: Option<String>,
    /// The end of the server's stderr, for failed cases.
    pub stderr_tail: Option<String>,
    /// What came back for the case's input, when it did not pass: the first bytes of the
    /// first line (or HTTP response) answering it, known secrets redacted, escaped.
    pub evidence: Option<String>,
}

/// A general finding of one case, as reported.
#[derive(Clone, Debug, Serialize)]
pub struct FindingReport {
    /// Its stable name (`hang`, `invalid-line`, …), which baselines key on.
    pub kind: String,
    /// How bad it is.
    pub severity: Severity,
    /// What happened (fixed text and counts; server text only escaped and bounded).
    pub text: String,
    /// How many times it happened in the case.
    pub count: u64,
    /// Whether the baseline already had it.
    pub baselined: bool,
    /// What the server wrote the first time, when a line or response showed it (first bytes,
    /// known secrets redacted, escaped).
    pub evidence: Option<String>,
}

/// Counts of verdicts and severities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Cases run.
    pub cases: u64,
    /// Cases that passed.
    pub pass: u64,
    /// Cases with a note.
    pub note: u64,
    /// Cases that failed.
    pub fail: u64,
    /// Cases whose worst finding is critical.
    pub critical: u64,
    /// Cases whose worst finding is high.
    pub high: u64,
    /// Cases whose worst finding is medium.
    pub medium: u64,
    /// Cases whose worst finding is low.
    pub low: u64,
    /// Cases whose worst finding is info.
    pub info: u64,
    /// Cases that fail the run (a finding at or over `fail_on`, not in the baseline).
    pub failing: u64,
    /// Findings the baseline already had.
    pub baselined: u64,
}

/// Runs the audit described by `options`.
///
/// # Errors
///
/// The options select nothing or name no command. A server that does not start or does not
/// complete its handshake is not an error: the report says so ([`AuditReport::setup_error`]).
pub fn run(options: &Options) -> Result<AuditReport, AuditError> {
    if let Some(url) = &options.url {
        if !options.command.is_empty() {
            return Err(AuditError::UrlAndCommand);
        }
        let mut endpoint = http::Endpoint::parse(url, options.allow_remote)?;
        endpoint.headers.clone_from(&options.headers);
        return run_http(options, url, &endpoint);
    }
    let Some((program, args)) = options.command.split_first() else {
        return Err(AuditError::NoCommand);
    };
    let catalogue = cases::catalogue();
    let selected = select(&catalogue, &options.only, &options.skip, options.quick)?;
    if options.handle_signals {
        signals::watch();
    }
    let started = Instant::now();
    let mut report = blank_report(options);
    let context = Context {
        program: program.clone(),
        args: args.to_vec(),
        max_memory_kib: options.max_memory_mib.saturating_mul(1024),
        case_timeout: options.case_timeout,
        probe: Probe::none(),
        aims: Vec::new(),
        callable: Vec::new(),
        redactor: redactor(options),
        beyond: None,
        catalog: airlock_metadata::Catalog::default(),
        spots: Vec::new(),
    };
    let mut progress = Progress::new(options.progress, selected.len());
    let context = match discover(&context, options) {
        Ok((facts, probe, aims, callable, catalog)) => {
            progress.line(&format!(
                "auditing {} {}; calls go to {}\n",
                facts.name, facts.version, facts.probe
            ));
            let (case_timeout, beyond) = honoured_timeout(options.case_timeout, &facts);
            if case_timeout > options.case_timeout {
                progress.line(&format!(
                    "{} declares it needs {} ms: each case waits that long\n",
                    facts.declared_by.as_deref().unwrap_or("a tool"),
                    millis(case_timeout)
                ));
            }
            report.case_timeout_ms = millis(case_timeout);
            report.server = Some(facts);
            report.catalog_digest = Some(catalog.digest());
            report.catalog = Some(catalog.clone());
            Context {
                probe,
                aims,
                callable,
                case_timeout,
                beyond,
                spots: airlock_metadata::review(&catalog),
                catalog,
                ..context
            }
        }
        Err((why, stderr_tail)) => {
            progress.line(&format!("could not audit: {why}\n"));
            if !stderr_tail.is_empty() {
                progress.line(&format!("the server's stderr ended with:\n{stderr_tail}\n"));
                report.setup_stderr = Some(stderr_tail);
            }
            report.setup_error = Some(why.to_string());
            report.duration_ms = millis(started.elapsed());
            return Ok(report);
        }
    };
    for case in selected {
        if signals::interrupted() {
            break;
        }
        progress.start(case.id);
        let mut outcome = run_case(case, &context);
        if signals::interrupted() {
            progress.interrupted();
            break;
        }
        outcome.weigh(options.fail_on, options.baseline.as_ref());
        progress.done(&outcome);
        report.cases.push(outcome);
    }
    if let Some(pin) = &options.pin
        && !signals::interrupted()
    {
        let mut outcome = metadata::pin_report(pin, &context.catalog);
        outcome.weigh(options.fail_on, options.baseline.as_ref());
        report.cases.push(outcome);
    }
    progress.finish();
    report.interrupted = signals::interrupted();
    report.duration_ms = millis(started.elapsed());
    Ok(report)
}

/// What this run hides from evidence: its header values and the secrets of its environment.
fn redactor(options: &Options) -> Redactor {
    let extra: Vec<String> = options.headers.iter().flat_map(Header::secrets).collect();
    Redactor::new(&extra, std::env::vars_os())
}

/// A report with no case yet.
fn blank_report(options: &Options) -> AuditReport {
    AuditReport {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at: report::rfc3339(SystemTime::now()),
        command: options
            .command
            .iter()
            .map(|part| shown(&part.to_string_lossy(), MAX_SHOWN_COMMAND_CHARS))
            .collect(),
        url: options
            .url
            .as_deref()
            .map(|url| shown(url, MAX_SHOWN_COMMAND_CHARS)),
        artifact: sarif::artifact_uri(&options.command, options.url.as_deref()),
        server: None,
        setup_error: None,
        setup_stderr: None,
        fail_on: options.fail_on,
        baselined: options.baseline.is_some(),
        max_memory_mib: options.max_memory_mib,
        case_timeout_ms: millis(options.case_timeout),
        quick: options.quick,
        cases: Vec::new(),
        duration_ms: 0,
        interrupted: false,
        catalog_digest: None,
        catalog: None,
    }
}

/// The audit of a running HTTP server at `endpoint`.
fn run_http(
    options: &Options,
    url: &str,
    endpoint: &http::Endpoint,
) -> Result<AuditReport, AuditError> {
    let catalogue = http::catalogue();
    let selected = select(&catalogue, &options.only, &options.skip, options.quick)?;
    if options.handle_signals {
        signals::watch();
    }
    let started = Instant::now();
    let mut report = blank_report(options);
    let redactor = redactor(options);
    let (facts, eras) = match http::discover(endpoint, options.case_timeout) {
        Ok(found) => found,
        Err(why) => {
            Progress::new(options.progress, 0).line(&format!("could not audit: {why}\n"));
            report.setup_error = Some(why.to_string());
            report.duration_ms = millis(started.elapsed());
            return Ok(report);
        }
    };
    let applicable: Vec<&http::HttpCase> = selected
        .into_iter()
        .filter(|case| case.applies(&eras))
        .collect();
    let mut progress = Progress::new(options.progress, applicable.len());
    progress.line(&format!(
        "auditing {} {} at {} (protocol {})\n",
        facts.name,
        facts.version,
        shown(url, MAX_SHOWN_COMMAND_CHARS),
        facts.protocol_version
    ));
    report.server = Some(facts);
    for case in applicable {
        if signals::interrupted() {
            break;
        }
        progress.start(case.id);
        let mut outcome = http::run_case(case, endpoint, &eras, options.case_timeout, &redactor);
        if signals::interrupted() {
            progress.interrupted();
            break;
        }
        outcome.weigh(options.fail_on, options.baseline.as_ref());
        progress.done(&outcome);
        report.cases.push(outcome);
    }
    progress.finish();
    report.interrupted = signals::interrupted();
    report.duration_ms = millis(started.elapsed());
    Ok(report)
}

/// The catalogue as text: every case's id, whether it is slow, what it sends and what a
/// correct server does.
pub fn list() -> String {
    let catalogue = cases::catalogue();
    let mut out = String::new();
    for category in Category::ALL
        .into_iter()
        .filter(|category| *category != Category::Http)
    {
        out.push_str(&format!("{} ({})\n", category.title(), category.name()));
        for case in catalogue.iter().filter(|case| case.category == category) {
            let slow = if case.slow { " [slow]" } else { "" };
            out.push_str(&format!(
                "  {}{slow}\n      sends:   {}\n      expects: {}\n",
                case.id, case.sends, case.expects
            ));
        }
    }
    out.push_str(&format!(
        "{} ({}; --url only)\n",
        Category::Http.title(),
        Category::Http.name()
    ));
    for case in http::catalogue() {
        let slow = if case.slow { " [slow]" } else { "" };
        out.push_str(&format!(
            "  {}{slow}\n      sends:   {}\n      expects: {}\n",
            case.id, case.sends, case.expects
        ));
    }
    out
}

/// What every case of one run shares.
struct Context {
    program: OsString,
    args: Vec<OsString>,
    max_memory_kib: u64,
    case_timeout: Duration,
    probe: Probe,
    aims: Vec<probe::Aim>,
    callable: Vec<probe::Callable>,
    redactor: Redactor,
    /// Why a hang is only a note: a tool the audit calls declares it needs longer than the
    /// audit waits (`None`: the declaration, if any, is honoured).
    beyond: Option<String>,
    /// What the server lists for the model (the `metadata` cases judge it).
    catalog: airlock_metadata::Catalog,
    /// The catalog's findings, reviewed once for all the catalog cases.
    spots: Vec<airlock_metadata::Spot>,
}

/// A case's time limit: the operator's, or longer if a tool the audit calls declares it needs
/// longer (up to [`MAX_HONOURED_TOOL_TIMEOUT`]: a hostile server must not stall the audit by
/// declaring a day). Past that cap, why a hang is then a note.
fn honoured_timeout(case_timeout: Duration, facts: &ServerFacts) -> (Duration, Option<String>) {
    let Some(declared) = facts.declared_timeout_ms.map(Duration::from_millis) else {
        return (case_timeout, None);
    };
    let honoured = declared.min(MAX_HONOURED_TOOL_TIMEOUT).max(case_timeout);
    let beyond = (declared > honoured).then(|| {
        format!(
            "no answer within the case's {} ms, but {} declares it needs {} ms (the audit waits \
             at most {} ms for a declared time limit): a note, not a hang",
            millis(honoured),
            facts.declared_by.as_deref().unwrap_or("a tool"),
            millis(declared),
            millis(MAX_HONOURED_TOOL_TIMEOUT)
        )
    });
    (honoured, beyond)
}

/// The cases `only` and `skip` select, in catalogue order. `quick` leaves out slow cases
/// unless `only` names them by their exact id.
fn select<'c, C: Selectable>(
    catalogue: &'c [C],
    only: &[String],
    skip: &[String],
    quick: bool,
) -> Result<Vec<&'c C>, AuditError> {
    for selector in only.iter().chain(skip) {
        if !catalogue.iter().any(|case| selects(selector, case)) {
            return Err(AuditError::UnknownSelector(selector.clone()));
        }
    }
    let chosen: Vec<&C> = catalogue
        .iter()
        .filter(|case| {
            let named = only.is_empty() || only.iter().any(|selector| selects(selector, *case));
            let by_id = only.iter().any(|selector| selector.trim() == case.id());
            let too_slow = quick && case.slow() && !by_id;
            named && !too_slow && !skip.iter().any(|selector| selects(selector, *case))
        })
        .collect();
    if chosen.is_empty() {
        return Err(AuditError::NothingSelected);
    }
    Ok(chosen)
}

/// Whether `selector` (an id, a category, or a prefix ending in `*`) names `case`.
fn selects(selector: &str, case: &impl Selectable) -> bool {
    let selector = selector.trim();
    match selector.strip_suffix('*') {
        Some(prefix) => case.id().starts_with(prefix),
        None => selector == case.id() || selector == case.category_name(),
    }
}

/// What `--only`, `--skip` and `--quick` look at in a case.
trait Selectable {
    fn id(&self) -> &'static str;
    fn category_name(&self) -> &'static str;
    fn slow(&self) -> bool;
}

impl Selectable for Case {
    fn id(&self) -> &'static str {
        self.id
    }
    fn category_name(&self) -> &'static str {
        self.category.name()
    }
    fn slow(&self) -> bool {
        self.slow
    }
}

impl Selectable for http::HttpCase {
    fn id(&self) -> &'static str {
        self.id
    }
    fn category_name(&self) -> &'static str {
        Category::Http.name()
    }
    fn slow(&self) -> bool {
        self.slow
    }
}

/// What [`discover`] learns: the facts, the probe, the exposure cases' aims, the tools the
/// asking cases call and the catalog.
type Learned = (
    ServerFacts,
    Probe,
    Vec<probe::Aim>,
    Vec<probe::Callable>,
    airlock_metadata::Catalog,
);

/// The least time the discovery run waits for the handshake and `tools/list`, whatever the
/// case timeout: starting the server is not what a case judges.
const DISCOVERY_WAIT_FLOOR: Duration = Duration::from_secs(10);

/// One run of the server to learn its name, its tools and the probe tool. On failure, why,
/// and the end of the server's stderr.
fn discover(context: &Context, options: &Options) -> Result<Learned, (String, String)> {
    let target =
        Target::spawn(&context.program, &context.args, context.max_memory_kib).map_err(|kind| {
            (
                format!("the server could not be started ({kind:?})"),
                String::new(),
            )
        })?;
    // The first contact is no case: a server that imports a runtime (Python, Node) may take
    // longer to start than a short case timeout, more so on a loaded CI machine.
    let wait = context.case_timeout.max(DISCOVERY_WAIT_FLOOR);
    let deadline = Instant::now()
        .checked_add(wait)
        .ok_or_else(|| ("the case timeout is too large".to_owned(), String::new()))?;
    let none = Probe::none();
    let mut session = Session::new(target, &none, deadline, wait);
    let learned = learn(&mut session, deadline, options);
    if learned.is_ok() {
        // How the server ends here is not judged: the cases look at that.
        let _exit = session.close();
    }
    let ended = session.target_mut().finish();
    learned.map_err(|why| (why.to_string(), ended.stderr_tail))
}

/// The handshake and `tools/list` of [`discover`].
fn learn(
    session: &mut Session<'_>,
    deadline: Instant,
    options: &Options,
) -> Result<Learned, Failure> {
    let initialized = session.handshake(deadline)?;
    let info = match initialized.outcome {
        judge::Outcome::Result { value, .. } => value,
        judge::Outcome::Error { .. } => None,
    };
    let field = |path: &[&str]| {
        let mut value = info.as_ref();
        for key in path {
            value = value.and_then(|value| value.get(key));
        }
        value
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| "?".to_owned(), |text| shown(text, MAX_SHOWN_FACT_CHARS))
    };
    let name = field(&["serverInfo", "name"]);
    let version = field(&["serverInfo", "version"]);
    let protocol_version = field(&["protocolVersion"]);
    let id = session.request("tools/list", None);
    let listed = session
        .await_reply(&id, deadline)
        .map_err(|why| Failure::ToolsList(Box::new(why)))?;
    let (tools, cursor) = match listed.outcome {
        judge::Outcome::Result { value, .. } => {
            let cursor = value
                .as_ref()
                .and_then(|value| value.get("nextCursor"))
                .and_then(serde_json::Value::as_str)
                .filter(|cursor| !cursor.is_empty())
                .map(str::to_owned);
            let tools = value.and_then(|mut value| {
                value
                    .as_object_mut()
                    .and_then(|object| object.remove("tools"))
            });
            (tools, cursor)
        }
        judge::Outcome::Error { code, .. } => {
            return Err(Failure::ToolsListRefused { code });
        }
    };
    let listed: &[serde_json::Value] = tools
        .as_ref()
        .and_then(serde_json::Value::as_array)
        .map_or(&[], Vec::as_slice);
    let raw_names: Vec<&str> = listed
        .iter()
        .filter_map(|tool| tool.get("name").and_then(serde_json::Value::as_str))
        .collect();
    let tool_names: Vec<String> = raw_names
        .iter()
        .take(MAX_LISTED_TOOLS)
        .map(|name| shown(name, MAX_SHOWN_FACT_CHARS))
        .collect();
    if let Some(wanted) = options.call_tool.as_deref()
        && !raw_names.contains(&wanted)
    {
        let shown_names: Vec<&str> = tool_names
            .iter()
            .take(MAX_NAMED_TOOLS)
            .map(String::as_str)
            .collect();
        let more = if raw_names.len() > MAX_NAMED_TOOLS {
            ", …"
        } else {
            ""
        };
        let offered = if shown_names.is_empty() {
            "it lists none".to_owned()
        } else {
            format!("it lists: {}{more}", shown_names.join(", "))
        };
        return Err(Failure::NoSuchTool {
            wanted: shown(wanted, MAX_SHOWN_FACT_CHARS),
            offered,
        });
    }
    let probe = probe::choose(
        tools.as_ref(),
        options.call_tool.as_deref(),
        options.call_arguments.as_ref(),
        options.no_tool_calls,
    );
    let aims = probe::aims(
        tools.as_ref(),
        options.call_tool.as_deref(),
        options.no_tool_calls,
    );
    let callable = probe::callable(
        tools.as_ref(),
        options.call_tool.as_deref(),
        options.call_arguments.as_ref(),
        options.no_tool_calls,
    );
    let mut called: Vec<&str> = probe.tool.iter().map(String::as_str).collect();
    called.extend(aims.iter().map(|aim| aim.tool.as_str()));
    called.extend(callable.iter().map(|tool| tool.tool.as_str()));
    let declared = probe::declared_timeout(tools.as_ref(), &called);
    let catalog = metadata::gather(session, deadline, info.as_ref(), tools.as_ref(), cursor);
    let facts = ServerFacts {
        name,
        version,
        protocol_version,
        tools: listed.len(),
        tool_names,
        probe: probe.describe(),
        declared_timeout_ms: declared.as_ref().map(|(_, timeout)| millis(*timeout)),
        declared_by: declared.map(|(tool, _)| tool),
    };
    Ok((facts, probe, aims, callable, catalog))
}

/// Runs one case against a fresh server process.
fn run_case(case: &Case, context: &Context) -> CaseReport {
    let started = Instant::now();
    if let Body::Metadata { check } = &case.body
        && !check.calls()
    {
        return metadata::report_of(
            case.id,
            case.sends,
            case.expects,
            format!("reviewed {}", metadata::describe(&context.catalog)),
            metadata::catalog_findings(*check, &context.spots),
            millis(started.elapsed()),
        );
    }
    let budget = context.case_timeout.saturating_mul(case.budget.max(1));
    let deadline = started.checked_add(budget).unwrap_or(started);
    let mut unstarted = CaseReport {
        id: case.id.to_owned(),
        category: case.category.name().to_owned(),
        sends: case.sends.to_owned(),
        expects: case.expects.to_owned(),
        verdict: Verdict::Fail,
        severity: Some(Severity::Critical),
        fails: false,
        detail: String::new(),
        answer_severity: Some(Severity::Critical),
        answer_baselined: false,
        findings: Vec::new(),
        answer_us: None,
        duration_ms: 0,
        peak_rss_kib: 0,
        exit: None,
        stderr_tail: None,
        evidence: None,
    };
    let scratch = match &case.body {
        Body::Exposure { .. } => match exposure::Scratch::create() {
            Ok(scratch) => Some(scratch),
            Err(kind) => {
                unstarted.verdict = Verdict::Note;
                unstarted.severity = Some(Severity::Info);
                unstarted.answer_severity = Some(Severity::Info);
                unstarted.detail = format!("no scratch directory for the canaries ({kind:?})");
                return unstarted;
            }
        },
        _ => None,
    };
    let cwd = scratch.as_ref().map(exposure::Scratch::served);
    let spawned = Target::spawn_in(
        &context.program,
        &context.args,
        context.max_memory_kib,
        cwd.as_deref(),
    );
    let target = match spawned {
        Ok(target) => target,
        Err(kind) => {
            unstarted.detail = format!("the server could not be started ({kind:?})");
            unstarted.duration_ms = millis(started.elapsed());
            return unstarted;
        }
    };
    let mut session = Session::new(target, &context.probe, deadline, context.case_timeout);
    if let Body::Asking { variant } = &case.body {
        session.answer_questions(if variant.legacy() {
            asking::capabilities()
        } else {
            serde_json::json!({})
        });
    }
    let refused = if case.handshake() {
        session.handshake(deadline).err().map(|why| why.to_string())
    } else {
        None
    };
    let mut spotted = Vec::new();
    let judgement = match (refused, &case.body) {
        (Some(why), _) => Judgement::failed(why),
        (
            None,
            Body::Line {
                input,
                arms,
                echo_check,
                ..
            },
        ) => cases::run_line(&mut session, input(&context.probe), arms, *echo_check),
        (None, Body::Custom { run, .. }) => run(&mut session),
        (None, Body::Exposure { values, via }) => match &scratch {
            Some(scratch) => exposure::run(&mut session, &context.aims, scratch, *values, *via),
            None => Judgement::failed("no scratch directory".to_owned()),
        },
        (None, Body::Asking { variant }) => asking::run(&mut session, &context.callable, *variant),
        (None, Body::Metadata { .. }) => {
            let (judgement, found) = metadata::results(&mut session, context, deadline);
            spotted = found;
            judgement
        }
    };
    let mut findings: Vec<Finding> = Vec::new();
    if judgement.follow_up && !signals::interrupted() {
        if let Err((kind, text)) = session.follow_up() {
            findings.push(Finding {
                kind,
                text,
                count: 1,
                evidence: None,
            });
        }
        // An ordinary case does not judge the exit; the end-of-input cases do.
        let _exit = session.close();
    }
    findings.extend(session.findings().iter().cloned());
    if let Some(why) = &context.beyond {
        for finding in findings
            .iter_mut()
            .filter(|finding| finding.kind == Kind::Hang)
        {
            finding.kind = Kind::SlowDeclared;
            finding.text.clone_from(why);
        }
    }
    let evidence = session.take_evidence();
    let ended = session.target_mut().finish();
    if ended.peak_kib > context.max_memory_kib {
        findings.push(Finding {
            kind: Kind::Memory,
            text: format!(
                "peak memory {} over the limit of {}",
                report::format_kib(ended.peak_kib),
                report::format_kib(context.max_memory_kib)
            ),
            count: 1,
            evidence: None,
        });
    }
    if ended.killed_for_memory {
        findings.push(Finding {
            kind: Kind::MemoryKilled,
            text: format!(
                "killed by the audit past {} times the memory limit",
                target::HARD_CAP_FACTOR
            ),
            count: 1,
            evidence: None,
        });
    }
    if ended.escapees_running > 0 {
        findings.push(Finding {
            kind: Kind::ChildLeftRunning,
            text: "a process of the server's left its process group and was still running at \
                   the end (killed by the audit; a client that kills the group leaves it)"
                .to_owned(),
            count: u64::try_from(ended.escapees_running).unwrap_or(u64::MAX),
            evidence: None,
        });
    }
    let mut report = case_report(
        case.id,
        case.category,
        case.sends,
        case.expects,
        judgement,
        &findings,
        0,
    );
    report.show_evidence(&findings, evidence.as_ref(), &context.redactor);
    metadata::add_findings(&mut report, spotted);
    report.peak_rss_kib = ended.peak_kib;
    report.exit = ended.exit.map(target::Exit::describe);
    if report.verdict == Verdict::Fail && !ended.stderr_tail.is_empty() {
        report.stderr_tail = Some(ended.stderr_tail);
    }
    report.duration_ms = millis(started.elapsed());
    report
}

/// The report of one case from its judgement and general findings.
pub(crate) fn case_report(
    id: &str,
    category: Category,
    sends: &str,
    expects: &str,
    judgement: Judgement,
    findings: &[Finding],
    duration_ms: u64,
) -> CaseReport {
    let verdict = findings
        .iter()
        .map(|finding| finding_verdict(finding.kind.severity()))
        .fold(judgement.verdict, Verdict::max);
    let findings: Vec<FindingReport> = findings
        .iter()
        .map(|finding| FindingReport {
            kind: finding.kind.name().to_owned(),
            severity: finding.kind.severity(),
            text: finding.text.clone(),
            count: finding.count,
            baselined: false,
            evidence: None,
        })
        .collect();
    let severity = findings
        .iter()
        .map(|finding| Some(finding.severity))
        .fold(judgement.severity, Option::max);
    CaseReport {
        id: id.to_owned(),
        category: category.name().to_owned(),
        sends: sends.to_owned(),
        expects: expects.to_owned(),
        verdict,
        severity,
        fails: false,
        detail: judgement.detail,
        answer_severity: judgement.severity,
        answer_baselined: false,
        findings,
        answer_us: judgement
            .answer
            .map(|answer| u64::try_from(answer.as_micros()).unwrap_or(u64::MAX)),
        duration_ms,
        peak_rss_kib: 0,
        exit: None,
        stderr_tail: None,
        evidence: None,
    }
}

impl CaseReport {
    /// Shows what came back: `evidence` for the case's own answer (when it did not pass), and
    /// each of `findings`' (the findings the report was made from, in order), redacted.
    pub(crate) fn show_evidence(
        &mut self,
        findings: &[Finding],
        evidence: Option<&Evidence>,
        redactor: &Redactor,
    ) {
        if self.answer_severity.is_some() {
            self.evidence = evidence.map(|evidence| redactor.show(evidence));
        }
        for (report, finding) in self.findings.iter_mut().zip(findings) {
            report.evidence = finding
                .evidence
                .as_ref()
                .map(|evidence| redactor.show(evidence));
        }
    }
}

/// The verdict a general finding gives its case: medium and worse fail, the rest are notes.
fn finding_verdict(severity: Severity) -> Verdict {
    if severity >= Severity::Medium {
        Verdict::Fail
    } else {
        Verdict::Note
    }
}

impl CaseReport {
    /// Marks what `baseline` already has, and whether the case fails the run at `fail_on`.
    pub(crate) fn weigh(&mut self, fail_on: FailOn, baseline: Option<&Baseline>) {
        let known = |kind: &str, severity: Severity| {
            baseline.is_some_and(|baseline| baseline.has(&self.id, kind, severity))
        };
        self.answer_baselined = self
            .answer_severity
            .is_some_and(|severity| known(severity::ANSWER_KIND, severity));
        let mut fails = self
            .answer_severity
            .is_some_and(|severity| !self.answer_baselined && fail_on.fails(severity));
        for finding in &mut self.findings {
            finding.baselined = known(&finding.kind, finding.severity);
            fails |= !finding.baselined && fail_on.fails(finding.severity);
        }
        self.fails = fails;
    }
}

/// Progress on stderr: a bar redrawn in place on a terminal, a line per case otherwise.
struct Progress {
    mode: ProgressMode,
    total: usize,
    done: usize,
    failing: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ProgressMode {
    Off,
    Lines,
    Bar,
}

impl Progress {
    fn new(enabled: bool, total: usize) -> Self {
        let mode = match (enabled, std::io::stderr().is_terminal()) {
            (false, _) => ProgressMode::Off,
            (true, false) => ProgressMode::Lines,
            (true, true) => ProgressMode::Bar,
        };
        Self {
            mode,
            total,
            done: 0,
            failing: 0,
        }
    }

    /// Text that is not about one case (printed as is, off the bar).
    fn line(&self, text: &str) {
        match self.mode {
            ProgressMode::Off => {}
            ProgressMode::Lines => write_stderr(text),
            ProgressMode::Bar => write_stderr(&format!("\r\x1b[2K{text}")),
        }
    }

    fn start(&self, id: &str) {
        let index = self.done.saturating_add(1);
        match self.mode {
            ProgressMode::Off => {}
            ProgressMode::Lines => {
                write_stderr(&format!("[{index:>3}/{}] {id:<40} ", self.total));
            }
            ProgressMode::Bar => {
                let filled = BAR_WIDTH
                    .saturating_mul(self.done)
                    .checked_div(self.total)
                    .unwrap_or(0);
                let bar = format!(
                    "{}{}",
                    "#".repeat(filled),
                    "-".repeat(BAR_WIDTH.saturating_sub(filled))
                );
                write_stderr(&format!(
                    "\r\x1b[2K[{bar}] {index}/{} {} failing  {id}",
                    self.total, self.failing
                ));
            }
        }
    }

    fn done(&mut self, case: &CaseReport) {
        self.done = self.done.saturating_add(1);
        if case.fails {
            self.failing = self.failing.saturating_add(1);
        }
        let level = case.severity.map_or("pass", Severity::name);
        match self.mode {
            ProgressMode::Off => {}
            ProgressMode::Lines => write_stderr(&format!(
                "{level}{} ({} ms)\n",
                if case.fails { ", fails the run" } else { "" },
                case.duration_ms
            )),
            // A failing case stays on screen above the bar.
            ProgressMode::Bar if case.fails => {
                write_stderr(&format!("\r\x1b[2K{level:<8} {}\n", case.id));
            }
            ProgressMode::Bar => {}
        }
    }

    fn interrupted(&self) {
        self.line("interrupted\n");
    }

    fn finish(&self) {
        if self.mode == ProgressMode::Bar {
            write_stderr("\r\x1b[2K");
        }
    }
}

fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    // Progress is best effort: a closed stderr must not stop the audit.
    let written = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
    drop(written);
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Default memory limit: room for a JavaScript or Python runtime's own baseline, far below
/// what holding a 512 MiB line costs.
pub const DEFAULT_MAX_MEMORY_MIB: u64 = 256;

/// Default time limit of one case.
pub const DEFAULT_CASE_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest time limit a tool's declaration raises a case's to: a server that declares more
/// gets notes, not hangs, for what it does not answer in time (and cannot stall the audit).
pub const MAX_HONOURED_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// Characters of each command-line part shown in a report.
const MAX_SHOWN_COMMAND_CHARS: usize = 200;

/// Characters of a server's name or version, or a tool's name, shown in a report.
const MAX_SHOWN_FACT_CHARS: usize = 64;

/// Tool names kept in a report (a hostile server may list millions).
pub const MAX_LISTED_TOOLS: usize = 1000;

/// Tool names an error message lists.
const MAX_NAMED_TOOLS: usize = 20;

/// Width of the progress bar, in characters.
const BAR_WIDTH: usize = 30;

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(cases: &[&Case]) -> Vec<&'static str> {
        cases.iter().map(|case| case.id).collect()
    }

    #[test]
    fn case_ids_are_unique_and_start_with_their_category() {
        let catalogue = cases::catalogue();
        let mut seen = std::collections::HashSet::new();
        for case in &catalogue {
            assert!(seen.insert(case.id), "duplicate id {}", case.id);
            assert!(
                case.id.starts_with(&format!("{}.", case.category.name())),
                "{} is not in {}",
                case.id,
                case.category.name()
            );
        }
        for category in Category::ALL
            .into_iter()
            .filter(|category| *category != Category::Http)
        {
            assert!(
                catalogue
                    .iter()
                    .filter(|case| case.category == category)
                    .count()
                    >= 5,
                "{} has too few cases",
                category.name()
            );
        }
    }

    #[test]
    fn only_and_skip_take_ids_categories_and_prefixes() {
        let catalogue = cases::catalogue();
        let only = |names: &[&str]| {
            names
                .iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>()
        };
        let chosen = select(
            &catalogue,
            &only(&["json.nan", "batch"]),
            &only(&["batch.empty"]),
            false,
        )
        .unwrap();
        assert!(ids(&chosen).contains(&"json.nan"));
        assert!(ids(&chosen).contains(&"batch.two-pings"));
        assert!(!ids(&chosen).contains(&"batch.empty"));
        assert!(
            ids(&chosen)
                .iter()
                .all(|id| *id == "json.nan" || id.starts_with("batch."))
        );
        let prefixed = select(&catalogue, &only(&["huge.line-*"]), &[], false).unwrap();
        assert_eq!(
            ids(&prefixed),
            vec!["huge.line-1mib", "huge.line-64mib", "huge.line-512mib"]
        );
        assert!(matches!(
            select(&catalogue, &only(&["jason"]), &[], false),
            Err(AuditError::UnknownSelector(name)) if name == "jason"
        ));
        assert!(matches!(
            select(&catalogue, &only(&["json"]), &only(&["json"]), false),
            Err(AuditError::NothingSelected)
        ));
    }

    #[test]
    fn quick_leaves_out_slow_cases_unless_named() {
        let catalogue = cases::catalogue();
        let quick = select(&catalogue, &[], &[], true).unwrap();
        assert!(quick.iter().all(|case| !case.slow));
        assert!(quick.len() < catalogue.len());
        let named = select(&catalogue, &["huge.line-64mib".to_owned()], &[], true).unwrap();
        assert_eq!(ids(&named), vec!["huge.line-64mib"]);
        let category = select(&catalogue, &["huge".to_owned()], &[], true).unwrap();
        assert!(!ids(&category).contains(&"huge.line-64mib"));
        assert!(ids(&category).contains(&"huge.line-1mib"));
    }

    #[test]
    fn http_case_ids_are_unique_and_selectable_by_category() {
        let catalogue = http::catalogue();
        let mut seen = std::collections::HashSet::new();
        for case in &catalogue {
            assert!(seen.insert(case.id), "duplicate id {}", case.id);
            assert!(case.id.starts_with("http."), "{}", case.id);
        }
        let chosen = select(&catalogue, &["http".to_owned()], &[], true).unwrap();
        assert!(chosen.iter().all(|case| !case.slow));
        assert!(ids_of(&chosen).contains(&"http.host-rebinding"));
        assert!(!ids_of(&chosen).contains(&"http.slow-head"));
        let named = select(&catalogue, &["http.slow-head".to_owned()], &[], true).unwrap();
        assert_eq!(ids_of(&named), vec!["http.slow-head"]);
    }

    fn ids_of(cases: &[&http::HttpCase]) -> Vec<&'static str> {
        cases.iter().map(|case| case.id).collect()
    }

    #[test]
    fn verdicts_order_from_pass_to_fail() {
        assert!(Verdict::Pass < Verdict::Note && Verdict::Note < Verdict::Fail);
        assert_eq!(Verdict::Note.max(Verdict::Fail), Verdict::Fail);
    }

    #[test]
    fn the_listing_names_every_case() {
        let listing = list();
        for case in cases::catalogue() {
            assert!(listing.contains(case.id), "{}", case.id);
        }
    }

    fn facts(declared_ms: Option<u64>) -> ServerFacts {
        ServerFacts {
            name: "s".to_owned(),
            version: "1".to_owned(),
            protocol_version: "2025-11-25".to_owned(),
            tools: 1,
            tool_names: vec!["slow".to_owned()],
            probe: "slow {}".to_owned(),
            declared_timeout_ms: declared_ms,
            declared_by: declared_ms.map(|_| "slow".to_owned()),
        }
    }

    #[test]
    fn a_declared_timeout_lengthens_the_case_up_to_the_cap_then_hangs_are_notes() {
        let ten = Duration::from_secs(10);
        assert_eq!(honoured_timeout(ten, &facts(None)), (ten, None));
        assert_eq!(
            honoured_timeout(ten, &facts(Some(2_000))),
            (ten, None),
            "never shorter than the operator's"
        );
        assert_eq!(
            honoured_timeout(ten, &facts(Some(30_000))),
            (Duration::from_secs(30), None)
        );
        let (timeout, beyond) = honoured_timeout(ten, &facts(Some(86_400_000)));
        assert_eq!(timeout, MAX_HONOURED_TOOL_TIMEOUT);
        assert_eq!(
            beyond.as_deref(),
            Some(
                "no answer within the case's 120000 ms, but slow declares it needs 86400000 ms \
                 (the audit waits at most 120000 ms for a declared time limit): a note, not a hang"
            )
        );
        assert_eq!(Kind::SlowDeclared.severity(), Severity::Low);
    }
}
