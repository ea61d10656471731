//! The per-call audit record: one JSON line per tool call, for the operator.
//!
//! Every `tools/call` that names a tool ends in exactly one record: it ran (and finished,
//! failed, timed out or panicked), it was cancelled, or it was refused before it ran (a quota,
//! the in-flight caps, the argument bounds, a schema violation). A record says when, who
//! (the [`Client`]), which tool, how long, how it ended (exit status or `isError`), how many
//! output bytes the result carried and which limit or refusal applied. It never holds an
//! argument value or any output, at any level: only, when the operator gives a key, an
//! HMAC-SHA256 of the arguments' canonical JSON (keys sorted), which correlates identical calls
//! without revealing them (a low-entropy value cannot be guessed from the log without the key).
//! A tool name is written only when the server has that tool: an unknown name is the peer's
//! text and is written as `null`.
//!
//! The records go to stderr (between log lines) or to a file of their own, opened for
//! appending with mode 0600 and reopened by [`CallLog::reopen`] (SIGUSR1 in the binary) after
//! log rotation moved it away. The file must be a regular file with one name that not every
//! user can write: a symbolic link, a FIFO, a device, a directory, a hard link or a
//! world-writable file at the path is refused, at start and on reopen (see `open_append`).
//! A write that fails is logged once per failure run and never fails the call: the audit log
//! is the operator's, the call the client's. A write cut short (a full disk) leaves at most
//! that one record torn, on a line of its own: the next record starts on a new line. Records
//! have one shape wherever they go: stderr gets the file's JSON line, written the same way
//! (alone on its line, whatever the log lines around it look like).
//!
//! **Refused calls are counted, not written one by one** (issue 35: refused calls grew the
//! log by 17 KiB/s per address). Per client, tool and refusal, the first refusal gets its
//! `tool_call` record at once; the next ones within [`REFUSED_RECORD_INTERVAL`] are counted,
//! and one `refused_calls` record with the count is written at the next refusal past the
//! interval, or by the flush that runs every interval. At most
//! [`MAX_REFUSED_RECORD_KEYS`] are counted apart; past it, refusals share one entry whose
//! record names no client.
//!
//! **The file has a size bound**: past `max_bytes` (`--audit-log-max-bytes`) it is renamed
//! to `FILE.1` (the older ones to `FILE.2`, … up to `keep`, the oldest removed) and a new
//! `FILE` opened, by the same checks. Records that could not be written (a full disk) are
//! counted, and a `records_dropped` record with the count comes before the next record
//! written.
//!
//! It trusts the engine to call it once per call; it trusts nothing of the arguments.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac_sha256::HMAC;
use secrecy::{ExposeSecret, SecretSlice};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::McpError;
use crate::limits::{MAX_REFUSED_RECORD_KEYS, REFUSED_RECORD_INTERVAL};

/// Who made a call, as its record names it.
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub(crate) enum Client {
    /// The one peer of a stdio session.
    Stdio,
    #[cfg_attr(
        not(feature = "http"),
        expect(dead_code, reason = "only the HTTP transport serves HTTP clients")
    )]
    /// An HTTP client: its address (the one a trusted proxy forwarded, else the socket's) and
    /// the identity its token proved (the token's variable name), if tokens are required.
    Http {
        /// The client's address.
        address: IpAddr,
        /// The token identity.
        identity: Option<Arc<str>>,
    },
}

/// How a call ended, as its record says.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The tool ran and returned a result that is not an error.
    Ok,
    /// The tool ran and returned an `isError` result (a failing command, say).
    Error,
    /// The call passed its deadline and was stopped.
    Timeout,
    /// The handler panicked; answered `-32603`.
    Panicked,
    /// The client cancelled it, or the session ended with it in flight; no reply was sent.
    Cancelled,
    /// The arguments did not pass the tool's schema, or the handler refused them before
    /// running anything ([`RunNote::arguments_refused`]); answered with an `isError` result.
    InvalidArguments,
    /// Refused before it ran, with a JSON-RPC error (or, in a 2026-07-28 call's round of
    /// input, refused for an answer that does not fit or a capability not declared).
    Refused,
    /// A 2026-07-28 call that ended asking the client for input (`input_required`); its
    /// retry with the answers has a record of its own.
    InputRequired,
}

/// `airlock_tool_calls_total`'s `outcome` label: the word the record writes.
#[cfg(feature = "metrics")]
impl Outcome {
    pub(crate) const ALL: [Self; 8] = [
        Self::Ok,
        Self::Error,
        Self::Timeout,
        Self::Panicked,
        Self::Cancelled,
        Self::InvalidArguments,
        Self::Refused,
        Self::InputRequired,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Panicked => "panicked",
            Self::Cancelled => "cancelled",
            Self::InvalidArguments => "invalid_arguments",
            Self::Refused => "refused",
            Self::InputRequired => "input_required",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Self::Ok => 0,
            Self::Error => 1,
            Self::Timeout => 2,
            Self::Panicked => 3,
            Self::Cancelled => 4,
            Self::InvalidArguments => 5,
            Self::Refused => 6,
            Self::InputRequired => 7,
        }
    }
}

/// What a command did on the network, through the sandbox's proxy: each connection it asked
/// for (the first few; later ones counted), and the bytes over all of them.
///
/// A destination is a host name checked to be a DNS name (letters, digits, `-`, `_`, `.`) or
/// an address, with its port: the issue that added it asks the operator to see where a
/// command connected; nothing else of the arguments reaches the record.
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct NetworkNote {
    /// The attempts, in order.
    pub connections: Vec<ConnectionNote>,
    /// Attempts past those kept, counted only.
    pub unrecorded: u64,
    /// Bytes the command sent, over every connection.
    pub bytes_up: u64,
    /// Bytes it received.
    pub bytes_down: u64,
}

/// One connection attempt of a [`NetworkNote`].
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ConnectionNote {
    /// `host:port` as asked for.
    pub destination: String,
    /// The address connected to (or the first one refused), if one was looked at.
    pub address: Option<String>,
    /// Whether the connection was made.
    pub allowed: bool,
    /// Why it was refused (`not_listed`, `inside_address`, …).
    pub refusal: Option<&'static str>,
    /// Bytes sent over it.
    pub bytes_up: u64,
    /// Bytes received over it.
    pub bytes_down: u64,
}

impl ConnectionNote {
    /// An attempt, as the proxy saw it.
    pub fn new(
        destination: String,
        address: Option<String>,
        refusal: Option<&'static str>,
        bytes: (u64, u64),
    ) -> Self {
        Self {
            destination,
            address,
            allowed: refusal.is_none(),
            refusal,
            bytes_up: bytes.0,
            bytes_down: bytes.1,
        }
    }
}

impl NetworkNote {
    /// The attempts kept, the count of the rest, and the bytes over all of them.
    pub fn new(connections: Vec<ConnectionNote>, unrecorded: u64, bytes: (u64, u64)) -> Self {
        Self {
            connections,
            unrecorded,
            bytes_up: bytes.0,
            bytes_down: bytes.1,
        }
    }
}

/// What the sandbox refused a command, by kind: a closed set, one label each (the record's
/// `kind`, the metrics' `kind`).
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DenialKind {
    /// Reading a file or listing a directory.
    Read,
    /// Changing a file system: writing, creating, removing, renaming, truncating.
    Write,
    /// Running a program.
    Exec,
    /// Connecting over TCP, or to an abstract unix socket outside the call.
    Connect,
    /// Binding a TCP port.
    Bind,
    /// Signalling a process outside the call.
    Signal,
}

impl DenialKind {
    /// Every kind, in label order.
    pub const ALL: [Self; 6] = [
        Self::Read,
        Self::Write,
        Self::Exec,
        Self::Connect,
        Self::Bind,
        Self::Signal,
    ];

    /// The kind's label: the word a result line, a record and a metric use.
    pub fn label(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Exec => "exec",
            Self::Connect => "connect",
            Self::Bind => "bind",
            Self::Signal => "signal",
        }
    }
}

/// One thing the sandbox refused a command: its kind, what it was refused on (a path, or
/// `address:port`, as the command named it: never a metric label), and the manifest key that
/// would allow it, if one can.
#[derive(Clone, Debug, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DenialNote {
    /// What was refused.
    pub kind: DenialKind,
    /// The path or address it was refused on (escaped and cut by the sandbox).
    pub object: String,
    /// The manifest key that would allow it (`write = ["/home/u/.cache"]`), or why none can.
    pub allow: String,
    /// Who said so.
    pub source: DenialSource,
}

/// Who reported a [`DenialNote`].
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DenialSource {
    /// The kernel: a Landlock audit record.
    Landlock,
    /// airlock's network proxy.
    Proxy,
    /// The kernel's syscall audit: a write the sandbox's file system view refused (`EROFS`,
    /// or `ENOENT` for a path it hides), reported where the operator installed the rules.
    View,
}

impl DenialNote {
    /// A denial.
    pub fn new(kind: DenialKind, object: String, allow: String, source: DenialSource) -> Self {
        Self {
            kind,
            object,
            allow,
            source,
        }
    }
}

/// What the sandbox refused one call, as far as the kernel and airlock could see.
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DenialsNote {
    /// The denials kept, de-duplicated, in the order seen.
    pub denials: Vec<DenialNote>,
    /// Denials past those kept, counted only.
    pub unrecorded: u64,
}

impl DenialsNote {
    /// The denials kept and the count of the rest.
    pub fn new(denials: Vec<DenialNote>, unrecorded: u64) -> Self {
        Self {
            denials,
            unrecorded,
        }
    }
}

/// What a command's run adds to its record: set by the command handler on its result.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub struct RunNote {
    /// The exit status, when the command exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// The limit that stopped it, when one did (`max_output_bytes`, `cpu_seconds`, …).
    pub limit: Option<&'static str>,
    /// Whether the handler refused the call's arguments before running anything (a check
    /// the schema cannot make, such as a path leaving its root): recorded as
    /// `invalid_arguments`, not as a failure of the tool.
    pub arguments_refused: bool,
    /// What the command did on the network, for a sandboxed tool with `network`.
    pub network: Option<Arc<NetworkNote>>,
    /// What the sandbox refused the command, when it refused anything it could report.
    pub denials: Option<Arc<DenialsNote>>,
}

impl RunNote {
    /// A command that exited by itself with `code`.
    ///
    /// ```
    /// use airlock::{RunNote, ToolOutput};
    ///
    /// let output = ToolOutput::text("3 files").noting(RunNote::exited(0));
    /// assert!(!output.is_error());
    /// ```
    pub fn exited(code: i32) -> Self {
        Self {
            exit_code: Some(code),
            ..Self::default()
        }
    }

    /// Arguments the handler refused before it ran anything.
    ///
    /// ```
    /// use airlock::{RunNote, ToolOutput};
    ///
    /// let output = ToolOutput::error("Invalid arguments: the path leaves its root.")
    ///     .noting(RunNote::arguments_refused());
    /// assert!(output.is_error());
    /// ```
    pub fn arguments_refused() -> Self {
        Self {
            arguments_refused: true,
            ..Self::default()
        }
    }

    /// A command ended by `signal`, and the limit that signal stands for, if any.
    pub fn signalled(signal: i32, limit: Option<&'static str>) -> Self {
        Self {
            signal: Some(signal),
            limit,
            ..Self::default()
        }
    }

    /// A command stopped by the limit that `limit` names (`max_output_bytes`, `sandbox`, …).
    pub fn stopped_by(limit: &'static str) -> Self {
        Self {
            limit: Some(limit),
            ..Self::default()
        }
    }

    /// The same, with what the command did on the network.
    #[must_use]
    pub fn with_network(mut self, network: NetworkNote) -> Self {
        self.network = Some(Arc::new(network));
        self
    }

    /// The same, with what the sandbox refused the command (nothing: unchanged).
    #[must_use]
    pub fn with_denials(mut self, denials: DenialsNote) -> Self {
        if !denials.denials.is_empty() || denials.unrecorded > 0 {
            self.denials = Some(Arc::new(denials));
        }
        self
    }
}

/// The refusal of a record: the JSON-RPC error code and message the client was sent (fixed
/// text from the error table).
#[derive(Debug, Serialize)]
struct Refusal {
    code: i32,
    reason: &'static str,
}

/// The count of refused calls of one key since its last record.
#[derive(Debug, Serialize)]
struct RefusedCalls<'a> {
    time: String,
    event: &'static str,
    client: Option<ClientView<'a>>,
    tool: Option<&'a str>,
    limit: Option<&'static str>,
    refusal: Option<Refusal>,
    count: u64,
    interval_s: u64,
}

/// Records that could not be written (a full disk), said once writing works again.
#[derive(Debug, Serialize)]
struct DroppedRecords {
    time: String,
    event: &'static str,
    count: u64,
}

/// One record, serialised as one JSON line. Every field is always present (`null` when it does
/// not apply), so a consumer can rely on the shape.
#[derive(Debug, Serialize)]
struct Record<'a> {
    time: String,
    event: &'static str,
    client: ClientView<'a>,
    tool: Option<&'a str>,
    outcome: Outcome,
    duration_ms: u64,
    exit_code: Option<i32>,
    signal: Option<i32>,
    is_error: bool,
    output_bytes: u64,
    limit: Option<&'static str>,
    refusal: Option<Refusal>,
    arguments_hmac: Option<&'a str>,
    network: Option<&'a NetworkNote>,
    /// What the sandbox refused the command, as far as it could be seen (`null`: nothing).
    denials: Option<&'a DenialsNote>,
    /// The task the call ran as (2025-11-25 tasks), `null` for an ordinary call.
    task: Option<TaskRecord<'a>>,
}

/// A task's part of its call's record: its id and each status it took, with when.
#[derive(Debug, Serialize)]
struct TaskRecord<'a> {
    id: &'a str,
    states: Vec<TaskState>,
}

#[derive(Debug, Serialize)]
struct TaskState {
    status: &'static str,
    at: String,
}

/// A task's facts for its call's record. The id is written as it is: a task is bound to its
/// owner, so its id alone reads nothing, and the operator needs it to follow one.
#[derive(Debug)]
pub(crate) struct TaskNote<'a> {
    pub(crate) id: &'a str,
    pub(crate) states: &'a [(&'static str, SystemTime)],
}

#[derive(Debug, Serialize)]
struct ClientView<'a> {
    transport: &'static str,
    address: Option<String>,
    identity: Option<&'a str>,
}

impl<'a> ClientView<'a> {
    fn of(client: &'a Client) -> Self {
        match client {
            Client::Stdio => Self {
                transport: "stdio",
                address: None,
                identity: None,
            },
            Client::Http { address, identity } => Self {
                transport: "http",
                address: Some(address.to_string()),
                identity: identity.as_deref(),
            },
        }
    }
}

/// The facts of one call's end, as the engine or a transport knows them.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    pub(crate) client: &'a Client,
    pub(crate) tool: Option<&'a str>,
    pub(crate) outcome: Outcome,
    pub(crate) duration: Duration,
    pub(crate) is_error: bool,
    pub(crate) output_bytes: usize,
    pub(crate) note: RunNote,
    pub(crate) refusal: Option<&'a McpError>,
    pub(crate) arguments_hmac: Option<&'a str>,
    pub(crate) task: Option<TaskNote<'a>>,
}

impl Entry<'_> {
    /// A call refused before it ran.
    pub(crate) fn refused<'a>(
        client: &'a Client,
        tool: Option<&'a str>,
        error: &'a McpError,
    ) -> Entry<'a> {
        Entry {
            client,
            tool,
            outcome: Outcome::Refused,
            duration: Duration::ZERO,
            is_error: false,
            output_bytes: 0,
            note: RunNote {
                limit: limit_of(error),
                ..RunNote::default()
            },
            refusal: Some(error),
            arguments_hmac: None,
            task: None,
        }
    }
}

/// The limit a refusal enforces, by the name the operator configures it with.
fn limit_of(error: &McpError) -> Option<&'static str> {
    match error {
        McpError::RateLimited { .. } => Some("rate"),
        McpError::Overloaded { .. } => Some("max_in_flight"),
        McpError::ClientBusy { .. } => Some("client_in_flight"),
        McpError::ArgumentBound { bound, .. } => Some(bound.limit_name()),
        McpError::InvalidToolName => Some("max_tool_name_bytes"),
        McpError::InvalidProgressToken => Some("max_progress_token_bytes"),
        _ => None,
    }
}

/// Where records go, and the optional key of the arguments' hash.
#[derive(Debug)]
pub struct CallLog {
    sink: Mutex<Sink>,
    key: Option<SecretSlice<u8>>,
    /// Whether the last write failed (so a failing disk logs one error, not one per call).
    failing: AtomicBool,
    /// Refused calls counted since their key's last record.
    refused: Mutex<HashMap<RefusedKey, RefusedCount>>,
    /// Records that could not be written since the last one that was.
    dropped: AtomicU64,
}

/// Where records go. Both take the same line, written the same way (`append_record`): one
/// shape wherever records go (issue 41).
#[derive(Debug)]
enum Sink {
    Stderr {
        /// As for a file: a record cut short (stderr gone non-blocking and full, say) leaves
        /// the next one to start on a line of its own.
        torn: bool,
    },
    File {
        path: PathBuf,
        file: File,
        /// Whether the file may end inside a record: a write was cut short (a full disk), so
        /// the next record starts on a line of its own, leaving the torn one a line by itself.
        torn: bool,
        /// Bytes in the file (its size when opened, plus what was written since).
        size: u64,
        /// The size past which the file is rotated, and how many rotated files are kept.
        rotation: Rotation,
    },
}

/// When the audit file is rotated (`--audit-log-max-bytes`, `--audit-log-keep`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Rotation {
    /// The size past which the file is renamed and a new one opened.
    pub max_bytes: u64,
    /// Rotated files kept (`FILE.1` the newest); `0` keeps none.
    pub keep: u32,
}

impl Default for Rotation {
    fn default() -> Self {
        Self {
            max_bytes: crate::limits::AUDIT_LOG_MAX_BYTES,
            keep: crate::limits::AUDIT_LOG_KEEP,
        }
    }
}

/// What refused calls are counted by: who, which tool, which refusal. `None` for the client:
/// the shared entry past [`MAX_REFUSED_RECORD_KEYS`].
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
struct RefusedKey {
    client: Option<Client>,
    tool: Option<Box<str>>,
    code: i32,
    reason: &'static str,
    limit: Option<&'static str>,
}

/// Refusals of one key since its last record.
#[derive(Clone, Copy, Debug)]
struct RefusedCount {
    count: u64,
    since: Instant,
}

impl CallLog {
    /// Records on stderr.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use airlock::{CallLog, Server};
    ///
    /// let server = Server::builder("audited", "1.0.0").call_log(Arc::new(CallLog::stderr())).build();
    /// assert!(server.is_ok());
    /// ```
    pub fn stderr() -> Self {
        Self {
            sink: Mutex::new(Sink::Stderr { torn: false }),
            key: None,
            failing: AtomicBool::new(false),
            refused: Mutex::new(HashMap::new()),
            dropped: AtomicU64::new(0),
        }
    }

    /// Records appended to the file at `path` (created with mode 0600 if missing).
    ///
    /// # Errors
    ///
    /// The file cannot be opened for appending, or the path holds something other than a
    /// regular file (`InvalidInput`: a symbolic link, a FIFO, a device, a directory).
    pub fn file(path: &Path) -> io::Result<Self> {
        Self::rotated(path, Rotation::default())
    }

    /// Records appended to the file at `path`, rotated as `rotation` says.
    ///
    /// # Errors
    ///
    /// As [`CallLog::file`].
    pub fn rotated(path: &Path, rotation: Rotation) -> io::Result<Self> {
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(Self {
            sink: Mutex::new(Sink::File {
                path: path.to_owned(),
                file,
                torn: false,
                size,
                rotation,
            }),
            ..Self::stderr()
        })
    }

    /// Adds `arguments_hmac` to every record of a call that ran: HMAC-SHA256 of the arguments'
    /// canonical JSON under `key`, hex.
    pub fn with_argument_key(mut self, key: &[u8]) -> Self {
        self.key = Some(SecretSlice::from(key.to_vec()));
        self
    }

    /// Reopens the file at its path (after log rotation renamed it); a no-op on stderr.
    ///
    /// # Errors
    ///
    /// The file cannot be opened, or is not a regular file (as [`CallLog::file`]); records
    /// keep going to the old one.
    pub fn reopen(&self) -> io::Result<()> {
        // The new file is opened without the lock held: a slow open must not stall the calls
        // whose records wait for it.
        let path = match &*self.sink.lock().unwrap_or_else(PoisonError::into_inner) {
            Sink::Stderr { .. } => return Ok(()),
            Sink::File { path, .. } => path.clone(),
        };
        let reopened = open_append(&path)?;
        let length = reopened.metadata()?.len();
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        if let Sink::File {
            file, torn, size, ..
        } = &mut *sink
        {
            *file = reopened;
            *torn = false;
            *size = length;
        }
        Ok(())
    }

    /// The hex HMAC of `arguments`, when a key is set.
    pub(crate) fn hash(&self, arguments: &Map<String, Value>) -> Option<String> {
        let key = self.key.as_ref()?;
        let mut context = HMAC::new(key.expose_secret());
        let mut canonical = Vec::new();
        // serde_json's map keeps keys sorted (no `preserve_order`), so this is canonical.
        if serde_json::to_writer(&mut canonical, arguments).is_err() {
            return None;
        }
        context.update(&canonical);
        let tag = context.finalize();
        let mut hex = String::with_capacity(64);
        for byte in tag {
            hex.push_str(&format!("{byte:02x}"));
        }
        Some(hex)
    }

    /// Writes the record of `entry` (for a refused call: unless it is counted instead).
    pub(crate) fn write(&self, entry: &Entry<'_>) {
        if entry.outcome == Outcome::Refused && !self.first_refusal(entry, Instant::now()) {
            return;
        }
        let record = Record {
            time: rfc3339(SystemTime::now()),
            event: "tool_call",
            client: ClientView::of(entry.client),
            tool: entry.tool,
            outcome: entry.outcome,
            duration_ms: u64::try_from(entry.duration.as_millis()).unwrap_or(u64::MAX),
            exit_code: entry.note.exit_code,
            signal: entry.note.signal,
            is_error: entry.is_error,
            output_bytes: u64::try_from(entry.output_bytes).unwrap_or(u64::MAX),
            limit: entry.note.limit,
            refusal: entry.refusal.map(|error| {
                let wire = error.to_wire();
                Refusal {
                    code: wire.code.get(),
                    reason: wire.message,
                }
            }),
            arguments_hmac: entry.arguments_hmac,
            network: entry.note.network.as_deref(),
            denials: entry.note.denials.as_deref(),
            task: entry.task.as_ref().map(|task| TaskRecord {
                id: task.id,
                states: task
                    .states
                    .iter()
                    .map(|(status, at)| TaskState {
                        status,
                        at: rfc3339(*at),
                    })
                    .collect(),
            }),
        };
        self.emit(&record);
    }

    /// Counts a refused call; whether it is the first of its key since the key's last
    /// record (and so gets a record of its own). Writes the key's `refused_calls` record when
    /// the interval has passed.
    fn first_refusal(&self, entry: &Entry<'_>, now: Instant) -> bool {
        let wire = entry.refusal.map(McpError::to_wire);
        let mut key = RefusedKey {
            client: Some(entry.client.clone()),
            tool: entry.tool.map(Box::from),
            code: wire.as_ref().map_or(0, |wire| wire.code.get()),
            reason: wire.as_ref().map_or("", |wire| wire.message),
            limit: entry.note.limit,
        };
        let due = {
            let mut counts = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
            if !counts.contains_key(&key) && counts.len() >= MAX_REFUSED_RECORD_KEYS {
                key.client = None;
            }
            let Some(count) = counts.get_mut(&key) else {
                counts.insert(
                    key,
                    RefusedCount {
                        count: 0,
                        since: now,
                    },
                );
                return true;
            };
            count.count = count.count.saturating_add(1);
            if now.saturating_duration_since(count.since) < REFUSED_RECORD_INTERVAL {
                return false;
            }
            let due = count.count;
            count.count = 0;
            count.since = now;
            due
        };
        self.emit_refused(&key, due);
        false
    }

    /// Writes the `refused_calls` records due (refusals counted, their interval passed) and
    /// forgets keys with nothing counted for an interval. Called every interval by the thread
    /// of [`CallLog::reopen_on_sigusr1`], and by anyone who wants the counts written now.
    pub fn flush(&self) {
        self.flush_at(Instant::now());
    }

    fn flush_at(&self, now: Instant) {
        let mut due = Vec::new();
        {
            let mut counts = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
            counts.retain(|key, count| {
                if now.saturating_duration_since(count.since) < REFUSED_RECORD_INTERVAL {
                    return true;
                }
                if count.count == 0 {
                    return false;
                }
                due.push((key.clone(), count.count));
                count.count = 0;
                count.since = now;
                true
            });
            counts.shrink_to_fit();
        }
        for (key, count) in due {
            self.emit_refused(&key, count);
        }
    }

    fn emit_refused(&self, key: &RefusedKey, count: u64) {
        let record = RefusedCalls {
            time: rfc3339(SystemTime::now()),
            event: "refused_calls",
            client: key.client.as_ref().map(ClientView::of),
            tool: key.tool.as_deref(),
            limit: key.limit,
            refusal: (key.code != 0).then_some(Refusal {
                code: key.code,
                reason: key.reason,
            }),
            count,
            interval_s: REFUSED_RECORD_INTERVAL.as_secs(),
        };
        self.emit(&record);
    }

    /// Writes `record` as one line, after a `records_dropped` record if some were.
    fn emit(&self, record: &impl Serialize) {
        let Ok(mut line) = serde_json::to_vec(record) else {
            tracing::error!("an audit record could not be serialised");
            return;
        };
        line.push(b'\n');
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        let mut lines = Vec::new();
        if dropped > 0 {
            let note = DroppedRecords {
                time: rfc3339(SystemTime::now()),
                event: "records_dropped",
                count: dropped,
            };
            if let Ok(mut note) = serde_json::to_vec(&note) {
                note.push(b'\n');
                lines.extend_from_slice(&note);
            }
        }
        lines.extend_from_slice(&line);
        let written = {
            let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
            match &mut *sink {
                Sink::Stderr { torn } => append_record(&mut io::stderr().lock(), torn, &lines),
                Sink::File {
                    path,
                    file,
                    torn,
                    size,
                    rotation,
                } => {
                    let written = append_record(file, torn, &lines);
                    if written.is_ok() {
                        *size = size.saturating_add(u64::try_from(lines.len()).unwrap_or(u64::MAX));
                        if *size >= rotation.max_bytes {
                            match rotate(path, *rotation) {
                                Ok((new, length)) => {
                                    *file = new;
                                    *size = length;
                                    *torn = false;
                                }
                                Err(error) => {
                                    // The record is written; the file grows past its size
                                    // until the next try, another `max_bytes` later.
                                    *size = 0;
                                    tracing::error!(
                                        kind = ?error.kind(),
                                        "the audit log could not be rotated; records go on in the same file"
                                    );
                                }
                            }
                        }
                    }
                    written
                }
            }
        };
        match written {
            Ok(()) => self.failing.store(false, Ordering::Relaxed),
            Err(error) => {
                // What was not written is counted, and said before the next record.
                let lost = 1_u64.saturating_add(dropped);
                self.dropped.fetch_add(lost, Ordering::Relaxed);
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::error!(kind = ?error.kind(), "the audit log cannot be written");
                }
            }
        }
    }

    /// Starts a thread that reopens the file on every SIGUSR1 (what `logrotate`'s
    /// `postrotate` sends, as to nginx). Installed for stderr too, where a reopen does nothing:
    /// a SIGUSR1 without a handler would end the process, and a rotation script
    /// sends it whatever airlock's flags are.
    ///
    /// # Errors
    ///
    /// The thread, its runtime or the handler could not be set up.
    pub fn reopen_on_sigusr1(self: &Arc<Self>) -> io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let mut signal = runtime.block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
        })?;
        let log = Arc::clone(self);
        std::thread::Builder::new()
            .name("airlock-audit-log".into())
            .stack_size(REOPEN_THREAD_STACK_BYTES)
            .spawn(move || {
                runtime.block_on(async {
                    let mut every = tokio::time::interval(REFUSED_RECORD_INTERVAL);
                    loop {
                        tokio::select! {
                            signalled = signal.recv() => {
                                if signalled.is_none() {
                                    break;
                                }
                                match log.reopen() {
                                    Ok(()) => tracing::info!("audit log reopened (SIGUSR1)"),
                                    Err(error) => tracing::error!(
                                        kind = ?error.kind(),
                                        "the audit log could not be reopened; records go to the old file"
                                    ),
                                }
                            }
                            _ = every.tick() => log.flush(),
                        }
                    }
                });
            })?;
        Ok(())
    }
}

/// Appends `line` (a record and its newline) to `file`, starting with a newline of its own when
/// the last write was `torn`: a record is never glued to the cut end of another. `torn` says
/// afterwards whether this write was cut short after some of its bytes.
fn append_record(file: &mut impl Write, torn: &mut bool, line: &[u8]) -> io::Result<()> {
    if *torn {
        file.write_all(b"\n")?;
        *torn = false;
    }
    let mut rest = line;
    while !rest.is_empty() {
        match file.write(rest) {
            Ok(0) => {
                *torn = rest.len() != line.len();
                return Err(io::ErrorKind::WriteZero.into());
            }
            Ok(written) => rest = rest.get(written..).unwrap_or_default(),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                *torn = rest.len() != line.len();
                return Err(error);
            }
        }
    }
    Ok(())
}

/// Renames the file at `path` to `path.1` (after `path.1` to `path.2`, …, the one past `keep`
/// removed; with `keep` 0 the file is removed) and opens a new one by [`open_append`]'s
/// checks; the new file and its size.
fn rotate(path: &Path, rotation: Rotation) -> io::Result<(File, u64)> {
    let numbered = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    if rotation.keep == 0 {
        std::fs::remove_file(path)?;
    } else {
        match std::fs::remove_file(numbered(rotation.keep)) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        for n in (1..rotation.keep).rev() {
            match std::fs::rename(numbered(n), numbered(n.saturating_add(1))) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        std::fs::rename(path, numbered(1))?;
    }
    let file = open_append(path)?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

/// The reopening thread only waits, and logs a line.
const REOPEN_THREAD_STACK_BYTES: usize = 256 * 1024;

/// The permission bit that lets any user write a file.
const OTHERS_WRITE: u32 = 0o002;

/// Opens the audit log at `path` for appending: an existing regular file, or a new one created
/// with mode 0600.
///
/// An existing file must have one name (no hard link to another file) and must not be
/// writable by every user. Anything else at the path is refused (`InvalidInput`, "not a
/// regular file"): a symbolic link
/// (planted by a local attacker, it would point the records at a file of their choosing), a
/// FIFO (opening it for writing blocks until a reader comes, stalling the start or a reopen),
/// a device (`/dev/stdout` would put records on the MCP stream) or a directory. The check is
/// made twice so that a swap between them is caught: `lstat` before opening, then the opened
/// file's own `fstat` must be that same regular file (device and inode). The open asks for
/// reading too, because opening a FIFO for reading and writing never blocks on Linux, so a
/// FIFO swapped in between the two checks is opened, seen and refused instead of hanging.
pub(crate) fn open_append(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    let not_regular = || io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
    let before = match std::fs::symlink_metadata(path) {
        Ok(before) => before,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // `O_CREAT | O_EXCL` follows no symbolic link, dangling ones included.
            return OpenOptions::new()
                .read(true)
                .append(true)
                .create_new(true)
                .mode(0o600)
                .open(path);
        }
        Err(error) => return Err(error),
    };
    if !before.file_type().is_file() {
        return Err(not_regular());
    }
    let file = OpenOptions::new().read(true).append(true).open(path)?;
    let opened = file.metadata()?;
    if !opened.file_type().is_file() || opened.dev() != before.dev() || opened.ino() != before.ino()
    {
        return Err(not_regular());
    }
    // A second name of another file (a hard link) would append the records to it, and a file
    // any user can write lets anyone edit or forge them.
    if opened.nlink() != 1 || opened.mode() & OTHERS_WRITE != 0 {
        return Err(not_regular());
    }
    Ok(file)
}

/// `time` as RFC 3339 in UTC with milliseconds (`2026-01-31T12:00:00.123Z`).
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (year, month, day) = civil(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days after the epoch).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days.saturating_add(719_468);
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = doe
        .saturating_sub(doe / 1460)
        .saturating_add(doe / 36_524)
        .saturating_sub(doe / 146_096)
        / 365;
    let doy = doe.saturating_sub(
        yoe.saturating_mul(365)
            .saturating_add(yoe / 4)
            .saturating_sub(yoe / 100),
    );
    let mp = doy.saturating_mul(5).saturating_add(2) / 153;
    let day = doy
        .saturating_sub(mp.saturating_mul(153).saturating_add(2) / 5)
        .saturating_add(1);
    let month = if mp < 10 {
        mp.saturating_add(3)
    } else {
        mp.saturating_sub(9)
    };
    let year = yoe
        .saturating_add(era.saturating_mul(400))
        .saturating_add(u64::from(month <= 2));
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The metrics' `outcome` label is the word the record writes, for every outcome, and
    /// each has its own counter.
    #[cfg(feature = "metrics")]
    #[test]
    fn every_outcome_labels_its_metric_with_the_records_word() {
        for (at, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.label());
            assert_eq!(outcome.index(), at);
        }
    }

    /// Takes `room` bytes, then fails: a stream that filled up partway through a record.
    struct Filling {
        written: Vec<u8>,
        room: usize,
    }

    impl Write for Filling {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let taken = bytes.len().min(self.room);
            self.room -= taken;
            self.written.extend_from_slice(&bytes[..taken]);
            Ok(taken)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Issue 41, one shape wherever records go: on stderr as in the file, a record written
    /// after one cut short starts on a line of its own.
    #[test]
    fn a_record_after_a_torn_one_starts_on_a_line_of_its_own_on_any_sink() {
        let mut sink = Filling {
            written: Vec::new(),
            room: 5,
        };
        let mut torn = false;
        assert!(append_record(&mut sink, &mut torn, b"{\"first\":1}\n").is_err());
        assert!(torn);
        sink.room = 100;
        append_record(&mut sink, &mut torn, b"{\"next\":2}\n").unwrap();
        assert!(!torn);
        assert_eq!(sink.written, b"{\"fir\n{\"next\":2}\n");
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        let at = |secs: u64, millis: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(4_102_444_800, 0), "2100-01-01T00:00:00.000Z");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("airlock-call-log-{name}-{}", std::process::id()));
        let _fresh = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn records(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn refused_calls_are_counted_once_an_interval_per_client_tool_and_refusal() {
        let dir = scratch("refused");
        let path = dir.join("audit.jsonl");
        let log = CallLog::file(&path).unwrap();
        let client = Client::Stdio;
        let quota = McpError::RateLimited { retry_after_ms: 5 };
        let entry = Entry::refused(&client, Some("echo"), &quota);
        let start = Instant::now();
        assert!(log.first_refusal(&entry, start));
        for _ in 0..1000 {
            assert!(!log.first_refusal(&entry, start));
        }
        // Another tool is another key.
        assert!(log.first_refusal(&Entry::refused(&client, Some("cat"), &quota), start));
        log.flush_at(start);
        assert!(records(&path).is_empty(), "nothing due yet");
        let later = start + REFUSED_RECORD_INTERVAL;
        log.flush_at(later);
        let written = records(&path);
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(written[0]["event"], "refused_calls");
        assert_eq!(written[0]["count"], 1000);
        assert_eq!(written[0]["tool"], "echo");
        assert_eq!(written[0]["client"]["transport"], "stdio");
        assert_eq!(written[0]["refusal"]["code"], -31_429);
        // Quiet keys are forgotten after an interval with nothing counted.
        log.flush_at(later + REFUSED_RECORD_INTERVAL);
        assert!(log.refused.lock().unwrap().is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn past_its_size_the_file_is_rotated_and_only_keep_files_are_kept() {
        let dir = scratch("rotate");
        let path = dir.join("audit.jsonl");
        let log = CallLog::rotated(
            &path,
            Rotation {
                max_bytes: 1000,
                keep: 2,
            },
        )
        .unwrap();
        let client = Client::Stdio;
        for n in 0..100 {
            let tool = format!("tool{n}");
            let entry = Entry {
                client: &client,
                tool: Some(&tool),
                outcome: Outcome::Ok,
                duration: Duration::ZERO,
                is_error: false,
                output_bytes: 0,
                note: RunNote::default(),
                refusal: None,
                arguments_hmac: None,
                task: None,
            };
            log.write(&entry);
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]);
        for name in &names {
            let size = std::fs::metadata(dir.join(name)).unwrap().len();
            assert!(size < 1000 + 512, "{name}: {size}");
        }
        // The newest record is in the current file, and records are whole lines.
        let current = records(&path);
        assert!(current.iter().all(|record| record["event"] == "tool_call"));
        let newest = records(&dir.join("audit.jsonl.1"));
        assert!(!newest.is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_arguments_hash_is_keyed_and_ignores_key_order() {
        let log = CallLog::stderr().with_argument_key(b"k1");
        let one = serde_json::json!({"a": 1, "b": "x"});
        let two = serde_json::json!({"b": "x", "a": 1});
        let (Value::Object(one), Value::Object(two)) = (one, two) else {
            panic!("objects")
        };
        let hash = log.hash(&one);
        assert_eq!(hash, log.hash(&two));
        // What any HMAC-SHA256 tool computes over `{"a":1,"b":"x"}` under `k1`, so an operator
        // can check a record with the standard tools.
        assert_eq!(
            hash.as_deref(),
            Some("5c543cdad64544503958254a9fdcede7cd63d13b326909fa926353a29f6bfaf2")
        );
        let other = CallLog::stderr().with_argument_key(b"k2");
        assert_ne!(hash, other.hash(&one));
        assert_eq!(CallLog::stderr().hash(&one), None);
    }
}
