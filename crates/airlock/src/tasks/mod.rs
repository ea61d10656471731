//! Tasks: a `tools/call` that runs as a task is answered with a handle, runs on, and is read
//! later or cancelled. Two eras share this one table (owners, bounds, runs, audit record) and
//! differ only in what is shown:
//!
//! - MCP 2025-11-25: the client asks with `params.task`; `tasks/get`, `tasks/result` (waits
//!   for the end), `tasks/list`, `tasks/cancel` (refused for an ended task); an `isError`
//!   result makes the task `failed`;
//! - the 2026-07-28 extension [`EXTENSION`], for a request that declares it: the server
//!   decides (a tool that runs only as a task always, an optional one when it has not ended
//!   within [`TASK_INLINE_WAIT`]); `tasks/get` shows the result inline once the task ended
//!   ([`ModernView`]), `tasks/update` and `tasks/cancel` are acknowledged; an `isError`
//!   result is `completed`, only a JSON-RPC error (a panic) is `failed`.
//!
//! [`TASK_INLINE_WAIT`]: crate::limits::TASK_INLINE_WAIT
//!
//! A task is state a hostile client can pile up, so this table is bounded and owned:
//!
//! - every task belongs to the [`Owner`] that created it (an HTTP token's or OAuth subject's
//!   identity, else the session). The table is keyed by owner and id together: another
//!   owner's id is not found by the same lookup, with the same error, as an id that never
//!   existed. Ids are 256 random bits ([`TaskId`]);
//! - admission counts tasks running per owner and in all, tasks kept (running or finished)
//!   per owner, and bytes: each task reserves the server's `max_task_result_bytes` of the
//!   `max_task_bytes` budget when it is created and holds it until it is forgotten, so the
//!   results kept can never pass the budget (a result larger than its reservation is kept as
//!   an error saying so). When a reservation does not fit, finished tasks make room, the
//!   heaviest client's oldest first (an identity, an HTTP client's network with all its
//!   tokenless sessions, or a stdio session): only running tasks refuse a new one on bytes. Over a
//!   bound the call is refused with [`McpError::TooManyTasks`] before anything is allocated
//!   or started;
//! - a finished task is kept `task_keep` (shorter if the client's `ttl` asks), then forgotten
//!   at the next use of the table: no timer per task;
//! - a task runs under its tool's `task_timeout` (else the server's), not the call timeout.
//!   Cancel aborts its run: the handler's future is dropped, which for a command kills its
//!   sandbox (every descendant), as a cancelled call's. A session's end cancels and forgets
//!   the tasks it owns (nobody else may read them); the table's end (the server's) cancels
//!   the rest. Each end writes the call's audit record, with the task's id and states.
//!
//! A task cannot ask its client anything (elicitation, sampling, roots): 2025-11-25 routes
//! such questions through `tasks/result` and the `input_required` status, which this server
//! does not serve; the handler's question fails with [`AskError::Unsupported`]. Progress a
//! handler reports is kept (the latest) and shown by `tasks/get` in
//! `_meta["airlock/progress"]`; its log messages are dropped.
//!
//! [`AskError::Unsupported`]: crate::AskError::Unsupported

mod id;
mod run;

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::sync::watch;

pub(crate) use id::TaskId;
pub(crate) use run::{ForgetUnlessAnswered, run};

use crate::call_log::{self, CallLog, Client, Entry, RunNote, TaskNote};
use crate::error::McpError;
use crate::handler::Outcome;
use crate::limits::{
    Limits, MAX_TASK_OUTPUT_SHOWN_BYTES, MIN_TASK_KEEP, TASK_ENTRY_BYTES, TASK_POLL_INTERVAL,
};
use crate::output::ToolOutput;
use crate::so_far::OutputSoFar;
pub(crate) use crate::tools::TaskMode;
use crate::tools::ToolDef;

/// Who a task belongs to.
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub(crate) enum Owner {
    /// A caller an HTTP token or OAuth access token proved: its tasks outlive its sessions.
    Identity(Arc<str>),
    /// One session (stdio, or an HTTP session without a token): a random number of its own,
    /// and for an HTTP session the network its client came from (see [`Owner::weigher`]).
    Session(u128, Option<Network>),
}

/// The network an HTTP client came from: an IPv4 address, or an IPv6 address's /64 (one
/// host is commonly given a whole /64, so finer would let it count as many).
pub(crate) type Network = [u8; 16];

/// Whose finished results give way first when the byte budget is short (`make_room`): an
/// identity's, an HTTP client's network (all its tokenless sessions together: many light
/// sessions from one client weigh as one), or a stdio session's.
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
enum Weigher<'a> {
    Identity(&'a str),
    Network(Network),
    Session(u128),
}

impl Owner {
    /// The owner of `client`'s tasks: its identity, else a session of its own; `None` if the
    /// random source failed.
    pub(crate) fn of(client: &Client) -> Option<Self> {
        if let Client::Http {
            identity: Some(identity),
            ..
        } = client
        {
            return Some(Self::Identity(Arc::clone(identity)));
        }
        let mut bytes = [0_u8; 16];
        getrandom::fill(&mut bytes).ok()?;
        let network = match client {
            Client::Http { address, .. } => Some(network_of(*address)),
            Client::Stdio => None,
        };
        Some(Self::Session(u128::from_le_bytes(bytes), network))
    }

    /// Who this owner's results are weighed with.
    fn weigher(&self) -> Weigher<'_> {
        match self {
            Self::Identity(identity) => Weigher::Identity(identity),
            Self::Session(_, Some(network)) => Weigher::Network(*network),
            Self::Session(session, None) => Weigher::Session(*session),
        }
    }
}

/// `address`'s network: itself for IPv4 (mapped to IPv6), its first 64 bits for IPv6.
pub(crate) fn network_of(address: std::net::IpAddr) -> Network {
    match address {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_ipv6_mapped().octets(),
            None => {
                let mut network = v6.octets();
                if let Some(host) = network.get_mut(8..) {
                    host.fill(0);
                }
                network
            }
        },
    }
}

/// A task's status (2025-11-25; `input_required` is never entered here).
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    /// Running.
    Working,
    /// The tool returned a result that is not an error.
    Completed,
    /// The tool returned an error result, timed out or panicked.
    Failed,
    /// Cancelled by its client, or ended by the session's or the server's end.
    Cancelled,
}

/// A status as the 2026-07-28 extension writes it before the result says more.
fn modern_status(status: Status) -> &'static str {
    match status {
        Status::Working => "working",
        // 2026-07-28: an error result is `completed`; only a JSON-RPC error is `failed`.
        Status::Completed | Status::Failed => "completed",
        Status::Cancelled => "cancelled",
    }
}

impl Status {
    fn is_terminal(self) -> bool {
        self != Self::Working
    }

    /// The status as the wire and the audit record write it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What a task ended with, as `tasks/result` gives it.
#[derive(Clone, Debug)]
pub(crate) enum Final {
    /// A tool result (an error result for a timeout or a cancel).
    Output(ToolOutput),
    /// The handler panicked: `-32603`, as the call would have been answered.
    Panicked,
}

pub(crate) use crate::version::TASKS_EXTENSION as EXTENSION;

/// Whether a 2026-07-28 request declared the tasks extension: its `_meta`'s client
/// capabilities hold `extensions["io.modelcontextprotocol/tasks"]`, an object (the extension
/// defines no settings).
pub(crate) fn declared(meta: Option<&serde_json::Value>) -> bool {
    crate::lifecycle::client_capabilities(meta)
        .and_then(|capabilities| capabilities.get("extensions"))
        .and_then(|extensions| extensions.get(EXTENSION))
        .is_some_and(serde_json::Value::is_object)
}

/// Whether the 2026-07-28 extension is served to `client`: over stdio (the process is one
/// session, its owner) and to an HTTP caller a token or OAuth access token identifies. A
/// tokenless HTTP request of that era belongs to no session, so nothing would let the next
/// request read the task (and an address is no owner: it is shared): the extension is not
/// offered to it, and its calls run as ordinary ones.
pub(crate) fn serves_extension(client: &Client) -> bool {
    !matches!(client, Client::Http { identity: None, .. })
}

/// The statusMessage of a task ended by its client.
const CANCELLED: &str = "The task was cancelled.";
/// The statusMessage of a task ended by its session's or its server's end.
const SHUT_DOWN: &str = "The session or the server ended before the task finished.";
/// The result of a task whose result was larger than its reservation.
const TOO_LARGE: &str = "The task's result was larger than this server keeps for a task.";

/// What the table holds of one task.
struct Task {
    tool: Arc<ToolDef>,
    status: Status,
    message: Option<&'static str>,
    created: SystemTime,
    updated: SystemTime,
    started: Instant,
    /// When the task ended.
    ended: Option<Instant>,
    /// How long it is kept once ended.
    keep: Duration,
    timeout: Duration,
    progress: Option<ProgressSeen>,
    /// The run's output so far (dropped when it ends).
    so_far: Option<Arc<OutputSoFar>>,
    result: Option<Arc<Final>>,
    /// Bytes of the budget this task holds.
    reserved: usize,
    /// Stops the run (`None` before it started, or once it ended).
    abort: Option<tokio::task::AbortHandle>,
    /// The task's end once it is terminal: what `tasks/result` waits on (it gets the end even
    /// when the task is forgotten meanwhile).
    done: watch::Sender<Option<Arc<Final>>>,
    audit: Option<Audit>,
    states: Vec<(&'static str, SystemTime)>,
}

/// The latest progress a task's handler reported.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ProgressSeen {
    progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// What a task's audit record needs.
#[derive(Debug)]
pub(crate) struct Audit {
    pub(crate) log: Arc<CallLog>,
    pub(crate) client: Client,
    pub(crate) arguments_hmac: Option<String>,
}

/// The table of one server's tasks.
#[derive(Default)]
pub(crate) struct Tasks {
    inner: Mutex<HashMap<(Owner, TaskId), Task>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").finish_non_exhaustive()
    }
}

/// A task as `tasks/get`, `tasks/list`, `tasks/cancel` and the creation show it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskView {
    task_id: TaskId,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'static str>,
    created_at: String,
    last_updated_at: String,
    /// Milliseconds from creation the task is kept for at most (a finished task's, exact).
    ttl: u64,
    poll_interval: u64,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ViewMeta>,
}

#[derive(Debug, Serialize)]
struct ViewMeta {
    #[serde(rename = "airlock/progress", skip_serializing_if = "Option::is_none")]
    progress: Option<ProgressSeen>,
    #[serde(rename = "airlock/output", skip_serializing_if = "Option::is_none")]
    output: Option<String>,
}

/// A task as the 2026-07-28 extension shows it (`DetailedTask`): its result inline once it
/// ended (`completed`: the tool's result, error results included; `failed`: the JSON-RPC
/// error of a handler that panicked).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModernView {
    task_id: TaskId,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'static str>,
    created_at: String,
    last_updated_at: String,
    /// Milliseconds from creation the task is kept for at most (as the 2025 `ttl`).
    ttl_ms: u64,
    poll_interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Box<serde_json::value::RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<crate::error::RpcError>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ViewMeta>,
}

/// `tasks/result` of one task: its end, or how to wait for it.
pub(crate) enum Waiting {
    /// The task ended.
    Ended(Arc<Final>),
    /// It runs: wait for this to turn `true`, at most `timeout` (a bit past the task's own),
    /// then ask again. `tool` is the task's, for the wait's log lines.
    Running {
        done: watch::Receiver<Option<Arc<Final>>>,
        tool: Arc<ToolDef>,
        timeout: Duration,
    },
}

impl Tasks {
    /// Admits a task of `tool` for `owner` under `limits`, kept `ttl` ms from creation if the
    /// client asked (within `MIN_TASK_KEEP` and the server's `task_keep` after its end).
    ///
    /// # Errors
    ///
    /// [`McpError::TooManyTasks`] naming the first bound it is over; `Internal` if the random
    /// source failed.
    pub(crate) fn create(
        &self,
        owner: &Owner,
        limits: &Limits,
        tool: Arc<ToolDef>,
        ttl: Option<u64>,
        audit: Option<Audit>,
    ) -> Result<(TaskId, TaskView, Arc<OutputSoFar>), McpError> {
        let mut table = self.lock();
        sweep(&mut table, Instant::now());
        let (mut running, mut mine_running, mut mine, mut reserved_running) =
            (0_usize, 0_usize, 0_usize, 0_usize);
        for ((who, _), task) in table.iter() {
            let working = task.status == Status::Working;
            running = running.saturating_add(usize::from(working));
            if working {
                reserved_running = reserved_running.saturating_add(task.reserved);
            }
            if who == owner {
                mine = mine.saturating_add(1);
                mine_running = mine_running.saturating_add(usize::from(working));
            }
        }
        let reservation = limits.max_task_result_bytes.get();
        for (limit, value, over) in [
            (
                "max_tasks_running_per_client",
                limits.max_tasks_running_per_client.get(),
                mine_running >= limits.max_tasks_running_per_client.get(),
            ),
            (
                "max_tasks_running",
                limits.max_tasks_running.get(),
                running >= limits.max_tasks_running.get(),
            ),
            (
                "max_tasks_kept_per_client",
                limits.max_tasks_kept_per_client.get(),
                mine >= limits.max_tasks_kept_per_client.get(),
            ),
            (
                "max_task_bytes",
                limits.max_task_bytes.get(),
                reserved_running.saturating_add(reservation) > limits.max_task_bytes.get(),
            ),
        ] {
            if over {
                return Err(McpError::TooManyTasks { limit, value });
            }
        }
        // Only running tasks' reservations refuse a task: finished results make room.
        make_room(
            &mut table,
            limits.max_task_bytes.get().saturating_sub(reservation),
        );
        let id = TaskId::random().ok_or(McpError::Internal("the random source failed"))?;
        let now = SystemTime::now();
        let timeout = tool
            .task_timeout
            .unwrap_or(limits.task_timeout)
            .min(crate::limits::MAX_TASK_TIMEOUT);
        let keep = ttl
            .map(Duration::from_millis)
            .map_or(limits.task_keep, |ttl| {
                ttl.clamp(MIN_TASK_KEEP, limits.task_keep.max(MIN_TASK_KEEP))
            });
        // The output so far lives in the reservation: no result is kept while it runs.
        let so_far = Arc::new(OutputSoFar::new(reservation));
        let task = Task {
            tool,
            status: Status::Working,
            message: None,
            created: now,
            updated: now,
            started: Instant::now(),
            ended: None,
            keep,
            timeout,
            progress: None,
            so_far: Some(Arc::clone(&so_far)),
            result: None,
            reserved: reservation,
            abort: None,
            done: watch::Sender::new(None),
            audit,
            states: vec![(Status::Working.as_str(), now)],
        };
        let view = task.view(id, false);
        table.insert((owner.clone(), id), task);
        Ok((id, view, so_far))
    }

    /// The deadline of a task just created (its run's timeout).
    pub(crate) fn timeout(&self, owner: &Owner, id: TaskId) -> Option<Duration> {
        self.lock()
            .get(&(owner.clone(), id))
            .map(|task| task.timeout)
    }

    /// Notes the run of a task just started; a task cancelled meanwhile is stopped at once.
    pub(crate) fn started(&self, owner: &Owner, id: TaskId, abort: tokio::task::AbortHandle) {
        let mut table = self.lock();
        match table.get_mut(&(owner.clone(), id)) {
            Some(task) if task.status == Status::Working => task.abort = Some(abort),
            _ => abort.abort(),
        }
    }

    /// Keeps the latest progress a running task reported.
    pub(crate) fn progress(
        &self,
        owner: &Owner,
        id: TaskId,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        if !progress.is_finite() || total.is_some_and(|total| !total.is_finite()) {
            return;
        }
        let mut table = self.lock();
        if let Some(task) = table
            .get_mut(&(owner.clone(), id))
            .filter(|task| task.status == Status::Working)
        {
            let message = message.map(|text| {
                crate::output::truncated(&text, crate::limits::MAX_PROGRESS_MESSAGE_BYTES)
                    .to_owned()
            });
            task.progress = Some(ProgressSeen {
                progress,
                total,
                message,
            });
            task.updated = SystemTime::now();
        }
    }

    /// Takes how a task's run ended, and says it as the audit record does; nothing (`None`)
    /// if it was cancelled (or forgotten) before.
    pub(crate) fn finish(
        &self,
        owner: &Owner,
        id: TaskId,
        outcome: Outcome,
    ) -> Option<call_log::Outcome> {
        let mut table = self.lock();
        let task = table
            .get_mut(&(owner.clone(), id))
            .filter(|task| task.status == Status::Working)?;
        let (status, result, ended) = match outcome {
            Outcome::Finished(output) => {
                let status = if output.is_error() {
                    Status::Failed
                } else {
                    Status::Completed
                };
                let ended = if output.is_error() && output.note.arguments_refused {
                    call_log::Outcome::InvalidArguments
                } else if output.is_error() {
                    call_log::Outcome::Error
                } else {
                    call_log::Outcome::Ok
                };
                (status, Final::Output(output), ended)
            }
            Outcome::TimedOut(limit) => (
                Status::Failed,
                Final::Output(crate::output::timed_out(limit)),
                call_log::Outcome::Timeout,
            ),
            Outcome::Panicked => (Status::Failed, Final::Panicked, call_log::Outcome::Panicked),
            Outcome::Round(_) => {
                // Rounds are 2026-07-28's; a task of 2025-11-25 has none.
                tracing::error!("a task's run ended in a round of input");
                (Status::Failed, Final::Panicked, call_log::Outcome::Panicked)
            }
        };
        let result = match result {
            Final::Output(output) if output.content_bytes() > task.reserved => {
                Final::Output(ToolOutput::error(TOO_LARGE))
            }
            other => other,
        };
        task.end(id, status, None, result, ended);
        Some(ended)
    }

    /// A task of `owner`'s, as `tasks/get` shows it.
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownTask`] for an id `owner` has no task of.
    pub(crate) fn get(&self, owner: &Owner, id: Option<TaskId>) -> Result<TaskView, McpError> {
        let mut table = self.lock();
        sweep(&mut table, Instant::now());
        let id = id.ok_or(McpError::UnknownTask)?;
        table
            .get(&(owner.clone(), id))
            .map(|task| task.view(id, true))
            .ok_or(McpError::UnknownTask)
    }

    /// A task of `owner`'s as the 2026-07-28 extension shows it: `tasks/get`, with the output
    /// so far while it runs and its result once it ended; `brief` leaves both out (the reply
    /// that creates the task).
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownTask`] as [`Tasks::get`].
    pub(crate) fn get_modern(
        &self,
        owner: &Owner,
        id: Option<TaskId>,
        brief: bool,
    ) -> Result<ModernView, McpError> {
        let mut table = self.lock();
        sweep(&mut table, Instant::now());
        let id = id.ok_or(McpError::UnknownTask)?;
        let task = table
            .get(&(owner.clone(), id))
            .ok_or(McpError::UnknownTask)?;
        let view = task.view(id, !brief);
        let (status, mut result, mut error) = match task.result.as_deref() {
            None => (modern_status(task.status), None, None),
            Some(Final::Panicked) => ("failed", None, Some(McpError::ToolPanicked.to_wire())),
            Some(Final::Output(_)) if task.status == Status::Cancelled => ("cancelled", None, None),
            Some(Final::Output(output)) => {
                ("completed", crate::response::call_result_raw(output), None)
            }
        };
        if brief {
            (result, error) = (None, None);
        }
        Ok(ModernView {
            task_id: id,
            status,
            status_message: view.status_message,
            created_at: view.created_at,
            last_updated_at: view.last_updated_at,
            ttl_ms: view.ttl,
            poll_interval_ms: view.poll_interval,
            result,
            error,
            meta: view.meta,
        })
    }

    /// `tasks/cancel` of the 2026-07-28 extension: a running task is `cancelled` and its run
    /// stopped; an ended one stays as it ended (the extension acknowledges both).
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownTask`] as [`Tasks::get`].
    pub(crate) fn cancel_modern(&self, owner: &Owner, id: Option<TaskId>) -> Result<(), McpError> {
        match self.cancel(owner, id) {
            Ok(_) | Err(McpError::TaskEnded) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Forgets a task of `owner`'s at once (one answered inline, whose id nobody was given),
    /// cancelling it if it runs.
    pub(crate) fn forget(&self, owner: &Owner, id: TaskId) {
        let mut table = self.lock();
        if let Some(mut task) = table.remove(&(owner.clone(), id))
            && task.status == Status::Working
        {
            task.cancel(id, CANCELLED);
        }
    }

    /// `owner`'s tasks, oldest first (at most its `max_tasks_kept_per_client`).
    pub(crate) fn list(&self, owner: &Owner) -> Vec<TaskView> {
        let mut table = self.lock();
        sweep(&mut table, Instant::now());
        let mut mine: Vec<(SystemTime, TaskView)> = table
            .iter()
            .filter(|((who, _), _)| who == owner)
            .map(|((_, id), task)| (task.created, task.view(*id, false)))
            .collect();
        mine.sort_by_key(|(created, _)| *created);
        mine.into_iter().map(|(_, view)| view).collect()
    }

    /// `tasks/result`: the task's end, or how to wait for it.
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownTask`] as [`Tasks::get`].
    pub(crate) fn result(&self, owner: &Owner, id: Option<TaskId>) -> Result<Waiting, McpError> {
        let mut table = self.lock();
        sweep(&mut table, Instant::now());
        let id = id.ok_or(McpError::UnknownTask)?;
        let task = table
            .get(&(owner.clone(), id))
            .ok_or(McpError::UnknownTask)?;
        Ok(match &task.result {
            Some(result) => Waiting::Ended(Arc::clone(result)),
            None => Waiting::Running {
                done: task.done.subscribe(),
                tool: Arc::clone(&task.tool),
                timeout: task
                    .timeout
                    .saturating_sub(task.started.elapsed())
                    .saturating_add(RESULT_GRACE),
            },
        })
    }

    /// `tasks/cancel`: the task is `cancelled` before this returns, and its run stopped.
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownTask`] as [`Tasks::get`]; [`McpError::TaskEnded`] for a task that
    /// already ended (2025-11-25: MUST be `-32602`).
    pub(crate) fn cancel(&self, owner: &Owner, id: Option<TaskId>) -> Result<TaskView, McpError> {
        let mut table = self.lock();
        sweep(&mut table, Instant::now());
        let id = id.ok_or(McpError::UnknownTask)?;
        let task = table
            .get_mut(&(owner.clone(), id))
            .ok_or(McpError::UnknownTask)?;
        if task.status.is_terminal() {
            return Err(McpError::TaskEnded);
        }
        task.cancel(id, CANCELLED);
        Ok(task.view(id, false))
    }

    /// Ends a session that owned tasks: its running tasks are cancelled (each with its audit
    /// record) and all of its tasks forgotten, as nobody else may read them.
    pub(crate) fn end_session(&self, owner: &Owner) {
        let mut table = self.lock();
        table.retain(|(who, id), task| {
            if who != owner {
                return true;
            }
            if task.status == Status::Working {
                task.cancel(*id, SHUT_DOWN);
            }
            false
        });
    }

    /// How many tasks the table holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Owner, TaskId), Task>> {
        // Every change below is whole before the guard drops: a poisoned table is consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Tasks {
    /// The server's end: every task still running is cancelled, with its audit record.
    fn drop(&mut self) {
        let table = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        for ((_, id), task) in table.iter_mut() {
            if task.status == Status::Working {
                task.cancel(*id, SHUT_DOWN);
            }
        }
    }
}

/// How long past a task's own deadline `tasks/result` waits for its end: the run's end is
/// noted by its own task, a moment after its deadline.
const RESULT_GRACE: Duration = Duration::from_secs(5);

/// Forgets the finished tasks whose keep ran out, freeing their reservations.
fn sweep(table: &mut HashMap<(Owner, TaskId), Task>, now: Instant) {
    table.retain(|_, task| {
        task.ended
            .is_none_or(|ended| now.saturating_duration_since(ended) < task.keep)
    });
}

/// Forgets finished tasks until the reservations held in all are at most `room`: each time
/// the oldest finished task of the client holding the most bytes (running and finished;
/// a client is an owner's [`Weigher`]), so clients keeping large results give way first and
/// no pair of owners can keep the budget from everyone else (a red-team finding: two
/// owners' kept results refused every other client any task for the keep), nor can one
/// client's many light sessions make another client the heaviest. The caller checked that
/// running tasks alone fit.
fn make_room(table: &mut HashMap<(Owner, TaskId), Task>, room: usize) {
    let mut held: HashMap<Weigher<'_>, usize> = HashMap::new();
    let mut ended: HashMap<Weigher<'_>, Vec<(Instant, &Owner, TaskId, usize)>> = HashMap::new();
    let mut reserved = 0_usize;
    for ((who, id), task) in table.iter() {
        reserved = reserved.saturating_add(task.reserved);
        let mine = held.entry(who.weigher()).or_default();
        *mine = mine.saturating_add(task.reserved);
        if let Some(at) = task.ended {
            ended
                .entry(who.weigher())
                .or_default()
                .push((at, who, *id, task.reserved));
        }
    }
    if reserved <= room {
        return;
    }
    for list in ended.values_mut() {
        // Newest first: the oldest is popped from the end.
        list.sort_by_key(|(at, _, _, _)| Reverse(*at));
    }
    let mut forget = Vec::new();
    while reserved > room {
        // The heaviest weigher; of those holding as much, the one with the oldest result.
        let Some(weigher) = ended
            .iter()
            .filter_map(|(weigher, list)| list.last().map(|(at, ..)| (weigher, *at)))
            .max_by_key(|(weigher, at)| (held.get(*weigher).copied().unwrap_or(0), Reverse(*at)))
            .map(|(weigher, _)| *weigher)
        else {
            break;
        };
        let Some((_, who, id, bytes)) = ended.get_mut(&weigher).and_then(Vec::pop) else {
            break;
        };
        reserved = reserved.saturating_sub(bytes);
        if let Some(mine) = held.get_mut(&weigher) {
            *mine = mine.saturating_sub(bytes);
        }
        forget.push((who.clone(), id));
    }
    for key in forget {
        table.remove(&key);
    }
}

impl Task {
    /// The task as shown; its output so far only when `with_output` (`tasks/get`: a listing
    /// of many tasks shows none, so no reply holds more than one task's output).
    fn view(&self, id: TaskId, with_output: bool) -> TaskView {
        let ran = self.ended.map_or(self.timeout, |ended| {
            ended.saturating_duration_since(self.started)
        });
        TaskView {
            task_id: id,
            status: self.status,
            status_message: self.message,
            created_at: call_log::rfc3339(self.created),
            last_updated_at: call_log::rfc3339(self.updated),
            ttl: u64::try_from(ran.saturating_add(self.keep).as_millis()).unwrap_or(u64::MAX),
            poll_interval: u64::try_from(TASK_POLL_INTERVAL.as_millis()).unwrap_or(u64::MAX),
            meta: {
                let progress = self.progress.clone();
                let output = self
                    .so_far
                    .as_ref()
                    .filter(|_| with_output)
                    .and_then(|so_far| so_far.shown(MAX_TASK_OUTPUT_SHOWN_BYTES));
                (progress.is_some() || output.is_some()).then_some(ViewMeta { progress, output })
            },
        }
    }

    fn cancel(&mut self, id: TaskId, message: &'static str) {
        if let Some(abort) = self.abort.take() {
            abort.abort();
        }
        self.end(
            id,
            Status::Cancelled,
            Some(message),
            Final::Output(ToolOutput::error(message)),
            call_log::Outcome::Cancelled,
        );
    }

    /// Moves a running task to `status` (terminal), keeps `result` (whose size is at most the
    /// reservation, which shrinks to it but not below `TASK_ENTRY_BYTES`), hands it to the
    /// `tasks/result` waiting and writes the audit record.
    fn end(
        &mut self,
        id: TaskId,
        status: Status,
        message: Option<&'static str>,
        result: Final,
        outcome: call_log::Outcome,
    ) {
        let now = SystemTime::now();
        self.status = status;
        self.message = message;
        self.updated = now;
        self.ended = Some(Instant::now());
        self.progress = None;
        self.so_far = None;
        self.abort = None;
        self.states.push((status.as_str(), now));
        let kept = match &result {
            Final::Output(output) => output.content_bytes(),
            Final::Panicked => 0,
        };
        self.reserved = self.reserved.min(kept.max(TASK_ENTRY_BYTES));
        let result = Arc::new(result);
        self.done.send_replace(Some(Arc::clone(&result)));
        if let Some(audit) = &self.audit {
            let output = match &*result {
                Final::Output(output) => Some(output),
                Final::Panicked => None,
            };
            let id = id.to_string();
            audit.log.write(&Entry {
                client: &audit.client,
                tool: Some(self.tool.name.as_str()),
                outcome,
                duration: self.started.elapsed(),
                is_error: output.is_none_or(ToolOutput::is_error),
                output_bytes: output.map_or(0, ToolOutput::content_bytes),
                note: output.map_or_else(RunNote::default, |output| output.note.clone()),
                refusal: None,
                arguments_hmac: audit.arguments_hmac.as_deref(),
                task: Some(TaskNote {
                    id: &id,
                    states: &self.states,
                }),
            });
        }
        self.result = Some(result);
    }
}

#[cfg(test)]
mod tests;
