//! The server under audit as a process: its spawn, its pipes, its memory, and its end.
//!
//! This is the audit's spawn site (the crate's other one, `process`, runs manifest tools). The
//! command comes from the operator's own command line, so the program and its arguments are
//! trusted; nothing the process does afterwards is. It may write endless or malformed output,
//! stop reading its input, fork, grow without bound, or never exit.
//!
//! # Safety measures, and why
//!
//! - **Its own process group.** The server leads a new group that its descendants join by
//!   default; every end of a case (normal, timeout, interrupt, drop) sends `SIGKILL` to the
//!   group, and to descendants that left it with `setsid`. Those are found through their
//!   parents in `/proc` while the sampler watches, and remembered by pid and start time: once
//!   the server exits they are reparented away, and the start time makes sure a pid reused by
//!   a stranger is never signalled. Such a descendant gets [`ESCAPEE_GRACE`] after the group
//!   is killed to end by itself (a helper that exits when its server's pipe closes); one still
//!   running then is killed and counted ([`Ended::escapees_running`], a critical finding).
//! - **Kill before reap.** The group id is the leader's pid, which is free for reuse once the
//!   leader is reaped. The leader's exit is observed without reaping it (`waitid` with
//!   `WNOWAIT`), the group is killed while the unreaped leader pins the id, and only then is it
//!   reaped. The sampler and the signal watcher, which may also kill, are stopped or locked out
//!   before the reap.
//! - **The auditor never blocks on the server.** Threads own the pipes. The writer streams
//!   input in [`CHUNK_BYTES`] pieces (a 512 MiB line is never built in memory), checks its
//!   cancel flag between pieces, and is unblocked by the kill if the server stops reading. The
//!   reader keeps at most [`MAX_LINE_BYTES`] of a line and [`MAX_STDOUT_BYTES`] per case, and
//!   hands classified lines over a bounded channel. stderr is read continuously (a full pipe
//!   would stall the server) and only its last [`STDERR_TAIL_BYTES`] are kept.
//! - **Memory is watched from outside.** The sampler sums the leader's `VmRSS` and its
//!   descendants' proportional sets (`Pss`, so pages they share, such as a binary the server
//!   re-executes, count once) every [`SAMPLE_INTERVAL`] and keeps the peak; past [`HARD_CAP_FACTOR`] times the limit it kills
//!   the group at once, so a server that buffers a 512 MiB line cannot take the auditing host
//!   down with it.
//!
//! # Known limits
//!
//! - A descendant that leaves the group and loses its parent in our tree (double fork plus
//!   `setsid`) before the sampler's next look, within [`SAMPLE_INTERVAL`], is not found and
//!   survives. Run the audit in a container or cgroup to contain such servers.
//! - A pipe held open by such an escapee keeps the thread reading it blocked until it closes;
//!   the thread holds only its buffers and is not waited for.
//! - Memory is sampled: a descendant's spike shorter than the interval can be missed. The
//!   leader's own high-water mark (`VmHWM`) is read at the end and is exact.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use super::evidence::Evidence;
use super::judge::{self, Line};

/// Input for the server, written in order by the writer thread.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// These bytes.
    Bytes(Vec<u8>),
    /// `unit` repeated `count` times, streamed.
    Repeat {
        /// The repeated bytes.
        unit: Vec<u8>,
        /// How many times.
        count: u64,
    },
    /// `count` ping requests with the numeric ids `first`, `first + 1`, …, one per line.
    Pings {
        /// The first id.
        first: u64,
        /// How many pings.
        count: u64,
    },
    /// Nothing for this long (a slow client).
    Pause(Duration),
    /// Close the server's stdin (end of input).
    Close,
}

/// How the server's main process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl Exit {
    /// The exit in a few words.
    pub(crate) fn describe(self) -> String {
        match self {
            Self::Code(code) => format!("exit status {code}"),
            Self::Signal(signal) => format!("killed by signal {signal}"),
        }
    }
}

/// What the reader thread reports.
#[derive(Debug)]
pub(crate) enum Event {
    /// A complete stdout line.
    Line(Received),
    /// stdout reached its end (the server closed it or exited).
    Closed,
    /// More than [`MAX_STDOUT_BYTES`] came in this case; reading stopped.
    Flooded,
}

/// One stdout line, classified, with when it arrived.
#[derive(Debug)]
pub(crate) struct Received {
    /// The line.
    pub(crate) line: Line,
    /// Whether it carries panic text or a stack trace.
    pub(crate) leak: bool,
    /// Whether it holds the token set by [`Target::watch_for`] (anywhere in the line: a
    /// result, an error message, any member).
    pub(crate) canary: bool,
    /// Its first bytes, for a report.
    pub(crate) evidence: Evidence,
    /// When its newline was read.
    pub(crate) at: Instant,
    /// Its length in bytes.
    pub(crate) bytes: usize,
}

/// A running server under audit. Dropping it kills its process tree and reaps it.
pub(crate) struct Target {
    child: Child,
    tree: Arc<Tree>,
    ops: Option<mpsc::Sender<Op>>,
    writer: Arc<WriterState>,
    queued: u64,
    lines: Receiver<Event>,
    reader: Arc<ReaderState>,
    sampler: Option<(JoinHandle<()>, Arc<SamplerState>)>,
    stderr: Arc<Mutex<Vec<u8>>>,
    peak_kib: u64,
    ended: Option<Ended>,
}

/// How a target ended, once [`Target::finish`] has run.
#[derive(Clone, Debug)]
pub(crate) struct Ended {
    /// How the leader ended by itself before the audit killed it; `None` if it was still
    /// running (the usual case).
    pub(crate) exit: Option<Exit>,
    /// Peak resident memory of the whole tree, in KiB.
    pub(crate) peak_kib: u64,
    /// Whether the sampler killed the tree for passing the hard cap.
    pub(crate) killed_for_memory: bool,
    /// The last bytes the server wrote on stderr, lossily decoded and made printable.
    pub(crate) stderr_tail: String,
    /// Processes that had left the server's process group and were still running when the
    /// audit killed the tree.
    pub(crate) escapees_running: usize,
}

impl Target {
    /// Starts `program args…` with piped stdin and stdout, in its own process group, and
    /// starts the writer, reader, stderr and memory threads. `max_memory_kib` is the limit
    /// the case is judged against; the tree is killed at [`HARD_CAP_FACTOR`] times it.
    ///
    /// # Errors
    ///
    /// The command could not be started (its [`io::ErrorKind`]).
    pub(crate) fn spawn(
        program: &OsStr,
        args: &[OsString],
        max_memory_kib: u64,
    ) -> Result<Self, io::ErrorKind> {
        Self::spawn_in(program, args, max_memory_kib, None)
    }

    /// [`Target::spawn`], in working directory `cwd` when given (the exposure cases' scratch
    /// directory).
    ///
    /// # Errors
    ///
    /// The command could not be started (its [`io::ErrorKind`]).
    pub(crate) fn spawn_in(
        program: &OsStr,
        args: &[OsString],
        max_memory_kib: u64,
        cwd: Option<&std::path::Path>,
    ) -> Result<Self, io::ErrorKind> {
        let mut child = spawn_child(program, args, cwd).map_err(|error| error.kind())?;
        let group = child
            .id()
            .try_into()
            .ok()
            .and_then(Pid::from_raw)
            .ok_or(io::ErrorKind::Other);
        let (group, stdin, stdout, stderr) = match (
            group,
            child.stdin.take(),
            child.stdout.take(),
            child.stderr.take(),
        ) {
            (Ok(group), Some(stdin), Some(stdout), Some(stderr)) => (group, stdin, stdout, stderr),
            _ => {
                // Not reachable with piped streams; end the child rather than leak it.
                let killed = child.kill();
                let reaped = child.wait();
                drop((killed, reaped));
                return Err(io::ErrorKind::Other);
            }
        };
        let tree = Arc::new(Tree::new(group));
        register(&tree);
        let writer = Arc::new(WriterState::default());
        let (ops, ops_rx) = mpsc::channel();
        let writer_state = Arc::clone(&writer);
        let (lines_tx, lines) = mpsc::sync_channel(LINE_CHANNEL_CAPACITY);
        let reader = Arc::new(ReaderState::default());
        let reading = Arc::clone(&reader);
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr_tail);
        let sampler_state = Arc::new(SamplerState {
            hard_cap_kib: max_memory_kib.saturating_mul(HARD_CAP_FACTOR),
            ..SamplerState::default()
        });
        let sampling = Arc::clone(&sampler_state);
        let sampled_tree = Arc::clone(&tree);
        let mut target = Self {
            child,
            tree,
            ops: Some(ops),
            writer,
            queued: 0,
            lines,
            reader,
            sampler: None,
            stderr: stderr_tail,
            peak_kib: 0,
            ended: None,
        };
        // A thread that cannot start leaves its pipe unserved: the case then fails on a
        // timeout, and the target is still killed and reaped on drop.
        let started = [
            thread::Builder::new()
                .name("audit-writer".to_owned())
                .spawn(move || write_loop(stdin, &ops_rx, &writer_state))
                .map(drop),
            thread::Builder::new()
                .name("audit-reader".to_owned())
                .spawn(move || read_loop(stdout, &lines_tx, &reading))
                .map(drop),
            thread::Builder::new()
                .name("audit-stderr".to_owned())
                .spawn(move || tail_loop(stderr, &tail))
                .map(drop),
        ];
        if let Some(Err(error)) = started.into_iter().find(Result::is_err) {
            return Err(error.kind());
        }
        let sampler = thread::Builder::new()
            .name("audit-memory".to_owned())
            .spawn(move || sample_loop(&sampled_tree, &sampling))
            .map_err(|error| error.kind())?;
        target.sampler = Some((sampler, sampler_state));
        Ok(target)
    }

    /// Queues input for the writer; returns at once.
    pub(crate) fn send(&mut self, op: Op) {
        let Some(ops) = &self.ops else { return };
        if ops.send(op).is_ok() {
            self.queued = self.queued.saturating_add(1);
        } else {
            // The writer is gone: count the op as failed so nobody waits for it.
            self.writer.failed.store(true, Ordering::SeqCst);
        }
    }

    /// Whether everything queued has been written; `Err` if writing failed (the server closed
    /// its stdin or died) or was cancelled.
    pub(crate) fn written(&self) -> Result<bool, ()> {
        if self.writer.failed.load(Ordering::SeqCst) {
            return Err(());
        }
        Ok(self.writer.done.load(Ordering::SeqCst) >= self.queued)
    }

    /// When the writer last finished an op.
    pub(crate) fn last_written_at(&self) -> Option<Instant> {
        *self
            .writer
            .last_done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The next reader event, waiting at most `wait`; `None` on timeout.
    pub(crate) fn next_event(&self, wait: Duration) -> Option<Event> {
        match self.lines.recv_timeout(wait) {
            Ok(event) => Some(event),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Event::Closed),
        }
    }

    /// From now on, marks every stdout line holding `token` ([`Received::canary`]).
    pub(crate) fn watch_for(&self, token: &[u8]) {
        let mut watched = self
            .reader
            .canary
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *watched = Some(token.into());
    }

    /// Stops or resumes reading stdout (a client that does not read its replies).
    pub(crate) fn pause_reading(&self, paused: bool) {
        self.reader.paused.store(paused, Ordering::SeqCst);
    }

    /// Tells the reader that a line it handed over has been consumed, so its bytes no longer
    /// count against [`MAX_QUEUED_BYTES`].
    pub(crate) fn released(&self, bytes: usize) {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        // The closure never refuses, so this always succeeds.
        let _before = self
            .reader
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |queued| {
                Some(queued.saturating_sub(bytes))
            })
            .unwrap_or_else(|queued| queued);
    }

    /// How the leader ended, if it has, without reaping it.
    pub(crate) fn exit(&self) -> Option<Exit> {
        if let Some(ended) = &self.ended {
            return ended.exit;
        }
        peek_exit(self.tree.group)
    }

    /// Peak memory of the tree so far, in KiB.
    pub(crate) fn peak_kib(&self) -> u64 {
        let sampled = self
            .sampler
            .as_ref()
            .map_or(0, |(_, state)| state.peak_kib.load(Ordering::SeqCst));
        sampled.max(self.peak_kib)
    }

    /// Samples the tree's memory now, with the leader's exact high-water mark (`VmHWM`).
    /// Called before the server's input is closed: a server that exits at end of input
    /// leaves a zombie, which has no memory figures left to read.
    pub(crate) fn sample_now(&mut self) {
        let (now_kib, _) = tree_rss_kib(&self.tree);
        let leader_hwm = read_status_kib(self.tree.leader(), "VmHWM:").unwrap_or(0);
        self.peak_kib = self.peak_kib.max(now_kib).max(leader_hwm);
    }

    /// Kills the whole tree, reaps the leader and reports how it ended. Idempotent.
    pub(crate) fn finish(&mut self) -> Ended {
        if let Some(ended) = &self.ended {
            return ended.clone();
        }
        self.writer.cancel.store(true, Ordering::SeqCst);
        self.reader.stop.store(true, Ordering::SeqCst);
        self.ops = None;
        let mut killed_for_memory = false;
        if let Some((handle, state)) = self.sampler.take() {
            state.stop.store(true, Ordering::SeqCst);
            handle.thread().unpark();
            if handle.join().is_err() {
                tracing::debug!("the memory sampler panicked");
            }
            self.peak_kib = self.peak_kib.max(state.peak_kib.load(Ordering::SeqCst));
            killed_for_memory = state.killed.load(Ordering::SeqCst);
        }
        // The last look, while the leader is still unreaped.
        self.sample_now();
        let exit = peek_exit(self.tree.group);
        let escapees_running = self.tree.kill();
        unregister(&self.tree);
        self.reap();
        let stderr_tail = {
            let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
            judge::shown_lines(&String::from_utf8_lossy(&tail), STDERR_TAIL_BYTES)
        };
        let ended = Ended {
            exit,
            peak_kib: self.peak_kib,
            killed_for_memory,
            stderr_tail,
            escapees_running,
        };
        self.ended = Some(ended.clone());
        ended
    }

    /// Reaps the killed leader, giving up after [`REAP_TIMEOUT`] (a process stuck in the
    /// kernel); it is then left to init.
    fn reap(&mut self) {
        let start = Instant::now();
        while start.elapsed() < REAP_TIMEOUT {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) => thread::sleep(POLL_INTERVAL),
                Err(error) => {
                    tracing::debug!(kind = ?error.kind(), "could not reap the server");
                    return;
                }
            }
        }
        tracing::warn!("the server did not die within the reap timeout; leaving it to init");
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if self.ended.is_none() {
            let ended = self.finish();
            drop(ended);
        }
    }
}

/// Starts the child; see the module docs for each setting.
#[expect(
    clippy::disallowed_methods,
    reason = "the audit's own spawn site: it runs the server under review"
)]
fn spawn_child(
    program: &OsStr,
    args: &[OsString],
    cwd: Option<&std::path::Path>,
) -> io::Result<Child> {
    // A relative path with a slash means the operator's directory, not the case's.
    let program = match cwd {
        Some(_) if std::path::Path::new(program).components().count() > 1 => {
            std::path::absolute(program)?.into_os_string()
        }
        _ => program.to_owned(),
    };
    let mut command = std::process::Command::new(program); // the operator's command, resolved like any MCP client
    let mut args = args.to_vec();
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
        // Relative arguments naming existing files (a script, a manifest) meant the
        // operator's directory too.
        for arg in &mut args {
            let path = std::path::Path::new(arg.as_os_str());
            if path.is_relative()
                && !arg.as_encoded_bytes().starts_with(b"-")
                && path.exists()
                && let Ok(absolute) = std::path::absolute(path)
            {
                *arg = absolute.into_os_string();
            }
        }
    }
    command
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0) // its own group: one kill reaches every descendant that stays in it
        .spawn()
}

/// The leader's exit, observed without reaping it (the zombie keeps the group id ours).
fn peek_exit(leader: Pid) -> Option<Exit> {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    loop {
        match rustix::process::waitid(WaitId::Pid(leader), options) {
            Ok(Some(status)) => {
                return status
                    .exit_status()
                    .map(Exit::Code)
                    .or_else(|| status.terminating_signal().map(Exit::Signal));
            }
            Ok(None) => return None,
            Err(errno) if errno == Errno::INTR => {}
            Err(_) => return None,
        }
    }
}

/// The server's process tree: its group, and the descendants seen leaving it.
struct Tree {
    group: Pid,
    /// Descendants seen outside the group (`setsid`), by pid and start time. Once the leader
    /// exits they are reparented away, so they are remembered while they can be found.
    escapees: Mutex<Vec<ProcEntry>>,
}

impl Tree {
    fn new(group: Pid) -> Self {
        Self {
            group,
            escapees: Mutex::new(Vec::new()),
        }
    }

    fn leader(&self) -> i32 {
        self.group.as_raw_nonzero().get()
    }

    fn remember_escapees(&self, below: &[ProcEntry]) {
        let leader = self.leader();
        let mut escapees = self.escapees.lock().unwrap_or_else(PoisonError::into_inner);
        for entry in below.iter().filter(|entry| entry.pgrp != leader) {
            let known = escapees
                .iter()
                .any(|known| known.pid == entry.pid && known.start == entry.start);
            if !known && escapees.len() < MAX_ESCAPEES {
                escapees.push(*entry);
            }
        }
    }

    /// Kills the group, gives the escapees (descendants seen outside the group) up to
    /// [`ESCAPEE_GRACE`] to end by themselves (a helper that exits when its server's pipe
    /// closes is not left running), then kills those still alive under the same pid and start
    /// time (so never a stranger that reused a pid); returns how many that was. Callers hold
    /// the leader unreaped.
    fn kill(&self) -> usize {
        let entries = scan_proc();
        self.remember_escapees(&descendants(&entries, self.leader()));
        ignore_gone(rustix::process::kill_process_group(
            self.group,
            Signal::KILL,
        ));
        let escapees = self.escapees.lock().unwrap_or_else(PoisonError::into_inner);
        let living = || -> Vec<ProcEntry> {
            let entries = scan_proc();
            escapees
                .iter()
                .filter(|escapee| {
                    entries.iter().any(|entry| {
                        entry.pid == escapee.pid && entry.start == escapee.start && !entry.ended
                    })
                })
                .copied()
                .collect()
        };
        let start = Instant::now();
        let mut alive = if escapees.is_empty() {
            Vec::new()
        } else {
            living()
        };
        while !alive.is_empty() && start.elapsed() < ESCAPEE_GRACE {
            thread::sleep(POLL_INTERVAL);
            alive = living();
        }
        for escapee in &alive {
            if let Some(pid) = Pid::from_raw(escapee.pid) {
                ignore_gone(rustix::process::kill_process(pid, Signal::KILL));
            }
        }
        alive.len()
    }
}

fn ignore_gone(result: rustix::io::Result<()>) {
    match result {
        Ok(()) => {}
        Err(errno) if errno == Errno::SRCH => {}
        Err(errno) => {
            tracing::debug!(error = ?io::Error::from(errno).kind(), "could not kill");
        }
    }
}

/// Trees of live targets, so an interrupt can kill them (see [`kill_live_targets`]).
static LIVE: Mutex<Vec<Arc<Tree>>> = Mutex::new(Vec::new());

fn register(tree: &Arc<Tree>) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::clone(tree));
}

/// Forgets a tree before its leader is reaped; from then on nothing else may signal it.
fn unregister(tree: &Arc<Tree>) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|live| !Arc::ptr_eq(live, tree));
}

/// Kills every live target's tree (on SIGINT, SIGTERM or SIGHUP). The lock keeps each leader
/// unreaped while its tree is signalled.
pub(crate) fn kill_live_targets() {
    let live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    for tree in live.iter() {
        tree.kill();
    }
}

// ---------------------------------------------------------------------------------------------
// The writer.

#[derive(Default)]
struct WriterState {
    done: AtomicU64,
    failed: AtomicBool,
    cancel: AtomicBool,
    last_done: Mutex<Option<Instant>>,
}

fn write_loop(stdin: ChildStdin, ops: &Receiver<Op>, state: &WriterState) {
    let mut stdin = Some(stdin);
    while let Ok(op) = ops.recv() {
        let ok = !state.failed.load(Ordering::SeqCst)
            && !state.cancel.load(Ordering::SeqCst)
            && perform(&mut stdin, op, state).is_ok();
        if !ok {
            state.failed.store(true, Ordering::SeqCst);
            stdin = None; // EOF for the server, if it still listens
        }
        *state
            .last_done
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        state.done.fetch_add(1, Ordering::SeqCst);
    }
}

fn perform(stdin: &mut Option<ChildStdin>, op: Op, state: &WriterState) -> io::Result<()> {
    match op {
        Op::Close => {
            *stdin = None;
            Ok(())
        }
        Op::Pause(duration) => {
            let end = Instant::now().checked_add(duration);
            while end.is_some_and(|end| Instant::now() < end) {
                if state.cancel.load(Ordering::SeqCst) {
                    return Err(io::ErrorKind::Interrupted.into());
                }
                thread::sleep(POLL_INTERVAL.min(duration));
            }
            Ok(())
        }
        Op::Bytes(bytes) => put(stdin, &bytes, state),
        Op::Repeat { unit, count } => {
            if unit.is_empty() {
                return Ok(());
            }
            let per_chunk = CHUNK_BYTES.checked_div(unit.len()).unwrap_or(1).max(1);
            let chunk = unit.repeat(per_chunk);
            let per_chunk = u64::try_from(per_chunk).unwrap_or(u64::MAX);
            let mut left = count;
            while left >= per_chunk {
                put(stdin, &chunk, state)?;
                left = left.saturating_sub(per_chunk);
            }
            let rest = usize::try_from(left).unwrap_or(0);
            put(stdin, &unit.repeat(rest), state)
        }
        Op::Pings { first, count } => {
            let mut buffer = Vec::with_capacity(CHUNK_BYTES.saturating_add(128));
            for id in first..first.saturating_add(count) {
                buffer.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                buffer.extend_from_slice(id.to_string().as_bytes());
                buffer.extend_from_slice(b",\"method\":\"ping\"}\n");
                if buffer.len() >= CHUNK_BYTES {
                    put(stdin, &buffer, state)?;
                    buffer.clear();
                }
            }
            put(stdin, &buffer, state)
        }
    }
}

/// Writes `bytes` in pieces, checking the cancel flag between them.
fn put(stdin: &mut Option<ChildStdin>, bytes: &[u8], state: &WriterState) -> io::Result<()> {
    let Some(pipe) = stdin.as_mut() else {
        return Err(io::ErrorKind::BrokenPipe.into());
    };
    for piece in bytes.chunks(CHUNK_BYTES) {
        if state.cancel.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        pipe.write_all(piece)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The readers.

/// What the reader thread shares with the auditor.
#[derive(Default)]
struct ReaderState {
    /// Stop reading (a client that does not read its replies).
    paused: AtomicBool,
    /// Bytes of lines handed over and not yet consumed.
    queued: AtomicU64,
    /// The case is over.
    stop: AtomicBool,
    /// A token no line should hold (an exposure case's outside canary).
    canary: std::sync::Mutex<Option<Box<[u8]>>>,
}

impl ReaderState {
    /// Whether `line` holds the watched token.
    fn holds_canary(&self, line: &[u8]) -> bool {
        let watched = self
            .canary
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        watched
            .as_deref()
            .is_some_and(|token| memchr::memmem::find(line, token).is_some())
    }
}

fn read_loop(mut stdout: ChildStdout, lines: &SyncSender<Event>, state: &ReaderState) {
    let mut chunk = vec![0_u8; CHUNK_BYTES];
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut long_head = Evidence::of(&[]);
    let mut total: u64 = 0;
    loop {
        // Backpressure: while the auditor is behind, the server's writes wait, not our memory.
        while state.paused.load(Ordering::SeqCst)
            || state.queued.load(Ordering::SeqCst) > MAX_QUEUED_BYTES
        {
            if state.stop.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(POLL_INTERVAL);
        }
        let count = match stdout.read(&mut chunk) {
            Ok(0) => break,
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        total = total.saturating_add(u64::try_from(count).unwrap_or(u64::MAX));
        if total > MAX_STDOUT_BYTES {
            if lines.send(Event::Flooded).is_err() {
                return;
            }
            return;
        }
        let mut rest = chunk.get(..count).unwrap_or_default();
        while !rest.is_empty() {
            let (piece, ended) = match memchr::memchr(b'\n', rest) {
                Some(at) => {
                    let (piece, after) = rest.split_at(at);
                    rest = after.get(1..).unwrap_or_default();
                    (piece, true)
                }
                None => (std::mem::take(&mut rest), false),
            };
            if !too_long {
                if line.len().saturating_add(piece.len()) > MAX_LINE_BYTES {
                    too_long = true;
                    let first = if line.is_empty() {
                        piece
                    } else {
                        line.as_slice()
                    };
                    long_head = Evidence::head_of(first, MAX_LINE_BYTES.saturating_add(1));
                    line = Vec::new();
                } else {
                    line.extend_from_slice(piece);
                }
            }
            if ended {
                let at = Instant::now();
                let received = if too_long {
                    Received {
                        line: Line::TooLong,
                        leak: false,
                        canary: false,
                        evidence: std::mem::replace(&mut long_head, Evidence::of(&[])),
                        at,
                        bytes: 0,
                    }
                } else {
                    Received {
                        line: judge::classify(&line),
                        leak: judge::leaks_trace(&line),
                        canary: state.holds_canary(&line),
                        evidence: Evidence::of(&line),
                        at,
                        bytes: line.len(),
                    }
                };
                let bytes = u64::try_from(received.bytes).unwrap_or(u64::MAX);
                state.queued.fetch_add(bytes, Ordering::SeqCst);
                if lines.send(Event::Line(received)).is_err() {
                    return;
                }
                too_long = false;
                line.clear();
                if line.capacity() > RETAINED_LINE_CAPACITY {
                    line = Vec::new();
                }
            }
        }
    }
    if !line.is_empty() || too_long {
        let unterminated = Received {
            line: Line::Invalid("a last line without its newline"),
            leak: judge::leaks_trace(&line),
            canary: state.holds_canary(&line),
            evidence: Evidence::of(&line),
            at: Instant::now(),
            bytes: line.len(),
        };
        if lines.send(Event::Line(unterminated)).is_err() {
            return;
        }
    }
    if lines.send(Event::Closed).is_err() {
        tracing::trace!("stdout closed after the case ended");
    }
}

fn tail_loop(mut stderr: std::process::ChildStderr, tail: &Mutex<Vec<u8>>) {
    let mut chunk = vec![0_u8; CHUNK_BYTES];
    loop {
        let count = match stderr.read(&mut chunk) {
            Ok(0) => return,
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let mut kept = tail.lock().unwrap_or_else(PoisonError::into_inner);
        kept.extend_from_slice(chunk.get(..count).unwrap_or_default());
        let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
        if excess > 0 {
            kept.drain(..excess);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Memory.

#[derive(Default)]
struct SamplerState {
    peak_kib: AtomicU64,
    hard_cap_kib: u64,
    killed: AtomicBool,
    stop: AtomicBool,
}

fn sample_loop(tree: &Tree, state: &SamplerState) {
    while !state.stop.load(Ordering::SeqCst) {
        let (kib, _) = tree_rss_kib(tree);
        state.peak_kib.fetch_max(kib, Ordering::SeqCst);
        if kib > state.hard_cap_kib && !state.killed.swap(true, Ordering::SeqCst) {
            // The leader cannot be reaped while this thread runs: `finish` joins it first.
            tracing::debug!(kib, "server tree over the hard memory cap; killing it");
            tree.kill();
        }
        thread::park_timeout(SAMPLE_INTERVAL);
    }
}

/// Resident memory of `tree` (the leader's group and its descendants), in KiB, and how many
/// processes that is. Descendants outside the group are remembered for the kill.
fn tree_rss_kib(tree: &Tree) -> (u64, usize) {
    let leader = tree.leader();
    let entries = scan_proc();
    let below = descendants(&entries, leader);
    tree.remember_escapees(&below);
    let mut members: Vec<i32> = entries
        .iter()
        .filter(|entry| entry.pgrp == leader)
        .map(|entry| entry.pid)
        .collect();
    members.extend(below.iter().map(|entry| entry.pid));
    members.sort_unstable();
    members.dedup();
    // The leader by its resident set, as always; every other process by its proportional set
    // (PSS): a server that re-executes itself or runs many copies of one program shares those
    // pages, and summing resident sets would count them once per process.
    let kib = members
        .iter()
        .filter_map(|pid| {
            if *pid == leader {
                read_status_kib(*pid, "VmRSS:")
            } else {
                read_proportional_kib(*pid).or_else(|| read_status_kib(*pid, "VmRSS:"))
            }
        })
        .fold(0_u64, u64::saturating_add);
    (kib, members.len())
}

/// `Pss:` of `/proc/<pid>/smaps_rollup`, in KiB: the process's private pages plus its share of
/// pages it maps with others.
fn read_proportional_kib(pid: i32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// One process, as `/proc/<pid>/stat` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcEntry {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    /// Start time in clock ticks since boot: with the pid, names one process for good (a
    /// reused pid has a later start).
    start: u64,
    /// A zombie or dead process (state `Z`, `X` or `x`): it has ended, only its parent has
    /// not reaped it.
    ended: bool,
}

fn scan_proc() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// Parent and group from a `/proc/<pid>/stat` line; the command name may hold spaces and
/// parentheses, so fields are read after its last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcEntry> {
    let (_, after_name) = stat.rsplit_once(')')?;
    // Field 3 (state) is the first after the name; ppid is 4, pgrp 5, starttime 22.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ended = matches!(fields.first().copied(), Some("Z" | "X" | "x"));
    let ppid = fields.get(1)?.parse().ok()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some(ProcEntry {
        pid,
        ppid,
        pgrp,
        start,
        ended,
    })
}

/// Every process below `root` through parent links (not `root` itself).
fn descendants(entries: &[ProcEntry], root: i32) -> Vec<ProcEntry> {
    let mut found: Vec<ProcEntry> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for entry in entries.iter().filter(|entry| entry.ppid == parent) {
            if entry.pid != root && !found.iter().any(|known| known.pid == entry.pid) {
                found.push(*entry);
                frontier.push(entry.pid);
            }
        }
    }
    found
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`); `None` for a gone process or a
/// zombie, which has no memory lines.
fn read_status_kib(pid: i32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// Bytes written or read at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// Longest stdout line kept (and classified); a longer one is counted and fails its case.
/// Replies to the audit's requests are small: the largest is a `tools/list` page.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most stdout bytes read in one case. The biggest legitimate output is the replies to a
/// ping flood, under 100 MiB.
pub(crate) const MAX_STDOUT_BYTES: u64 = 1024 * 1024 * 1024;

/// Capacity a line buffer keeps after a long line.
const RETAINED_LINE_CAPACITY: usize = 1024 * 1024;

/// Classified lines waiting in the channel to the auditor.
const LINE_CHANNEL_CAPACITY: usize = 4096;

/// Bytes of lines handed over and not yet consumed (in the channel or the session's queue)
/// past which the reader stops reading: the server's writes then block, and the auditor's
/// memory does not grow with the server's output.
const MAX_QUEUED_BYTES: u64 = 64 * 1024 * 1024;

/// Bytes of the server's stderr kept for the report.
pub(crate) const STDERR_TAIL_BYTES: usize = 2048;

/// Most escaped descendants remembered per target (a fork bomb is not followed further).
const MAX_ESCAPEES: usize = 1024;

/// Interval between two memory samples of the process tree.
pub(crate) const SAMPLE_INTERVAL: Duration = Duration::from_millis(20);

/// A tree past this many times the memory limit is killed at once.
pub(crate) const HARD_CAP_FACTOR: u64 = 2;

/// How long the escapees may take to end by themselves once the group is killed, before they
/// count as left running.
const ESCAPEE_GRACE: Duration = Duration::from_secs(1);

/// How long a killed leader may take to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// Sleep between polls of a flag or a state.
const POLL_INTERVAL: Duration = Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let stat = "4242 (my (odd) server) S 4000 4242 4242 0 -1 4194560 12 0 0 0 \
                    1 2 0 0 20 0 1 0 987654 1000 100";
        assert_eq!(
            parse_stat(4242, stat),
            Some(ProcEntry {
                pid: 4242,
                ppid: 4000,
                pgrp: 4242,
                start: 987_654,
                ended: false,
            })
        );
        let zombie = stat.replace(") S ", ") Z ");
        assert!(parse_stat(4242, &zombie).unwrap().ended);
        assert_eq!(parse_stat(1, "garbage"), None);
    }

    #[test]
    fn descendants_follow_parent_links_and_stop_at_cycles() {
        let entry = |pid, ppid, pgrp| ProcEntry {
            pid,
            ppid,
            pgrp,
            start: 0,
            ended: false,
        };
        let entries = [
            entry(10, 1, 10),
            entry(11, 10, 10),
            entry(12, 11, 12),
            entry(13, 1, 13),
        ];
        let mut found: Vec<i32> = descendants(&entries, 10)
            .iter()
            .map(|entry| entry.pid)
            .collect();
        found.sort_unstable();
        assert_eq!(found, vec![11, 12]);
    }

    fn sh(script: &str) -> Target {
        Target::spawn(
            OsStr::new("/bin/sh"),
            &[OsString::from("-c"), OsString::from(script)],
            1024 * 1024,
        )
        .unwrap()
    }

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let (_, after) = stat.rsplit_once(')')?;
                after.split_whitespace().next().map(|state| state != "Z")
            })
            .unwrap_or(false)
    }

    fn next_line(target: &Target) -> Line {
        match target.next_event(Duration::from_secs(20)) {
            Some(Event::Line(received)) => received.line,
            other => panic!("no line: {other:?}"),
        }
    }

    #[test]
    fn lines_are_classified_and_input_reaches_the_server() {
        let mut target = sh("read -r line; printf '%s\\n' \"$line\"; echo 'not json'");
        target.send(Op::Bytes(
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
        ));
        target.send(Op::Bytes(b"\n".to_vec()));
        assert!(matches!(next_line(&target), Line::Response(_)));
        assert_eq!(next_line(&target), Line::Invalid("not JSON"));
        assert!(matches!(
            target.next_event(Duration::from_secs(20)),
            Some(Event::Closed)
        ));
        // stdout closes a moment before the process exits.
        let start = Instant::now();
        while target.exit().is_none() && start.elapsed() < Duration::from_secs(20) {
            thread::sleep(Duration::from_millis(5));
        }
        let ended = target.finish();
        assert_eq!(ended.exit, Some(Exit::Code(0)));
    }

    #[test]
    fn a_huge_line_is_counted_not_held() {
        let mut target = sh("head -c 20000000 /dev/zero | tr '\\0' a; echo");
        assert_eq!(next_line(&target), Line::TooLong);
        drop(target.finish());
    }

    #[test]
    fn a_server_flooding_stdout_is_held_back_not_buffered() {
        // 1 MiB lines, endlessly, and an auditor that does not consume them.
        let target = sh("while :; do head -c 1048576 /dev/zero | tr '\\0' a; echo; done");
        thread::sleep(Duration::from_secs(2));
        let queued = target.reader.queued.load(Ordering::SeqCst);
        let bound = MAX_QUEUED_BYTES + u64::try_from(MAX_LINE_BYTES).unwrap();
        assert!(queued > 0 && queued <= bound, "{queued} bytes queued");
        // Consuming releases them, and the reader goes on.
        let mut seen = 0;
        while seen < 10 {
            match target.next_event(Duration::from_secs(20)) {
                Some(Event::Line(received)) => {
                    target.released(received.bytes);
                    seen += 1;
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn finish_kills_the_group_and_escaped_children() {
        let mut target = sh("sleep 300 & echo $!; setsid sleep 301 & echo $!; exec sleep 302");
        // Two lines: both children exist once the shell has echoed their pids.
        for _ in 0..2 {
            assert!(matches!(
                target.next_event(Duration::from_secs(20)),
                Some(Event::Line(_))
            ));
        }
        let children: Vec<i32> = descendants(&scan_proc(), target.tree.leader())
            .iter()
            .map(|entry| entry.pid)
            .collect();
        assert_eq!(children.len(), 2, "{children:?}");
        let ended = target.finish();
        assert_eq!(ended.exit, None, "the leader was still running");
        assert!(ended.peak_kib > 0, "the tree's memory was sampled");
        assert_eq!(
            ended.escapees_running, 1,
            "the setsid child outlived its group"
        );
        let start = Instant::now();
        while children.iter().any(|pid| alive(*pid)) && start.elapsed() < Duration::from_secs(20) {
            thread::sleep(Duration::from_millis(20));
        }
        assert!(children.iter().all(|pid| !alive(*pid)), "a child survived");
    }

    #[test]
    fn an_escaped_child_that_ends_with_its_server_is_not_left_running() {
        // The setsid child reads the server's stdin: it ends when the group is killed and
        // the pipe closes, within the grace.
        let mut target = sh("setsid sh -c 'echo $$; read line' & exec sleep 303");
        assert!(matches!(
            target.next_event(Duration::from_secs(20)),
            Some(Event::Line(_))
        ));
        let ended = target.finish();
        assert_eq!(ended.escapees_running, 0);
    }

    #[test]
    fn a_server_that_never_reads_does_not_block_the_writer_past_its_end() {
        let mut target = sh("exec sleep 300");
        target.send(Op::Repeat {
            unit: b"a".to_vec(),
            count: 64 * 1024 * 1024,
        });
        thread::sleep(Duration::from_millis(200));
        assert_eq!(
            target.written(),
            Ok(false),
            "a 64 MiB write cannot fit a pipe"
        );
        drop(target.finish());
        let start = Instant::now();
        while target.written() == Ok(false) && start.elapsed() < Duration::from_secs(20) {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(target.written(), Err(()), "the kill unblocked the writer");
    }

    #[test]
    fn the_sampler_kills_a_tree_past_twice_its_limit() {
        // 1 MiB limit: any shell is past 2 MiB.
        let mut target = Target::spawn(
            OsStr::new("/bin/sh"),
            &[OsString::from("-c"), OsString::from("exec sleep 300")],
            1,
        )
        .unwrap();
        let start = Instant::now();
        while target.exit().is_none() && start.elapsed() < Duration::from_secs(20) {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(target.exit(), Some(Exit::Signal(9)));
        let ended = target.finish();
        assert!(ended.killed_for_memory);
        assert!(ended.peak_kib > 2);
    }
}
