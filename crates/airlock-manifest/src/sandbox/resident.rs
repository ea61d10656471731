//! Resident launchers: confined once, then kept to serve one tool's calls, one at a time.
//!
//! Starting a launcher costs an `exec` of airlock, a PID namespace and the policy's set-up
//! (seccomp, Landlock, limits), more than the command itself on a small machine. A resident
//! launcher pays that once: it waits, confined and alone in its namespace, for a call on its
//! control channel ([`super::channel`]), runs the program on the call's own pipes, kills and
//! reaps whatever the call left in the namespace, reports, and waits again. A call therefore
//! starts with no process of an earlier call alive, in a namespace as empty as a fresh one:
//! the rules, the limits and the uid are the tool's, and those are the same for every call.
//!
//! Each tool has a [`Pool`] of idle launchers. A call takes one (or, when none is idle, has
//! one started for it); a call that ends normally gives its launcher back, one that ends
//! otherwise (timeout, cancellation, output limit, a launcher that failed) lets it go: its
//! channel closed, the launcher kills the call's processes, sweeps and ends (killed after
//! [`SANDBOX_STOP_GRACE`] if it has not). A
//! launcher serves at most [`SANDBOX_CALLS_PER_LAUNCHER`] calls; the pool keeps at most
//! [`SANDBOX_IDLE_LAUNCHERS_PER_TOOL`] idle, and all pools together
//! [`SANDBOX_IDLE_LAUNCHERS`].
//!
//! Every launcher is started, and reaped, on one thread of its own that lives as long as
//! airlock: a launcher's parent-death signal follows the thread that started it, so a launcher
//! started on a thread that later ends would die with it. That thread never blocks on a
//! child: launchers to reap are polled.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::cgroups::{Events, Group};
use super::{Confinement, UidLease};
use crate::limits::{
    SANDBOX_CALLS_PER_LAUNCHER, SANDBOX_IDLE_LAUNCHERS, SANDBOX_IDLE_LAUNCHERS_PER_TOOL,
    SANDBOX_STOP_GRACE,
};

/// A launcher process and airlock's end of its control channel. Dropping it closes the
/// channel, on which the launcher kills every process of a call it is serving, sweeps the
/// later code they made and ends; one that has not ended [`SANDBOX_STOP_GRACE`] later is
/// killed, which ends its namespace and every process in it.
#[derive(Debug)]
pub(crate) struct Resident {
    process: Option<std::process::Child>,
    control: OwnedFd,
    calls: u32,
    /// The launcher's real uid, when airlock is root; given back once it is reaped.
    uid: Option<UidLease>,
    /// The launcher's cgroups (its calls' budgets); removed once it is reaped.
    group: Option<Group>,
    /// What the group's tallies were when the last call ended.
    seen: Events,
    /// A networked tool's proxy socket in the launcher's namespace, once the launcher has
    /// sent it (`super::channel::receive_first`).
    pub(crate) network: Option<OwnedFd>,
}

/// What a launcher leaves to be let go once it is reaped.
type Leases = (Option<UidLease>, Option<Group>);

impl Resident {
    /// A launcher just started, with airlock's end of its channel, its uid's lease and its
    /// cgroups.
    pub(crate) fn new(
        process: std::process::Child,
        control: OwnedFd,
        uid: Option<UidLease>,
        group: Option<Group>,
    ) -> Self {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Self {
            process: Some(process),
            control,
            calls: 0,
            uid,
            group,
            seen: Events::default(),
            network: None,
        }
    }

    /// What the kernel counted against the launcher's budgets since the last call that asked
    /// (processes killed for memory, forks refused); nothing without cgroups.
    pub(crate) fn budget_events(&mut self) -> Events {
        let Some(group) = &self.group else {
            return Events::default();
        };
        let now = group.events();
        let since = Events {
            oom_kills: now.oom_kills.saturating_sub(self.seen.oom_kills),
            forks_refused: now.forks_refused.saturating_sub(self.seen.forks_refused),
        };
        self.seen = now;
        since
    }

    /// The launcher's pid (the process that applied the Landlock rules, when airlock starts
    /// it directly), while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(std::process::Child::id)
    }

    /// airlock's end of the control channel (non-blocking).
    pub(crate) fn control(&self) -> BorrowedFd<'_> {
        self.control.as_fd()
    }

    /// Counts a call served.
    pub(crate) fn served_one(&mut self) {
        self.calls = self.calls.saturating_add(1);
    }

    /// Whether the process is still running (a launcher killed from outside, or one that
    /// failed and ended, is not).
    fn alive(&mut self) -> bool {
        self.process
            .as_mut()
            .is_some_and(|process| matches!(process.try_wait(), Ok(None)))
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        let Some(process) = self.process.take() else {
            return;
        };
        LIVE.fetch_sub(1, Ordering::Relaxed);
        // The channel closes when this returns (the field's own drop): the launcher sees it
        // at once, mid-call or idle. The launchers' thread kills it if it is still there
        // after the grace.
        reap_later(process, (self.uid.take(), self.group.take()));
    }
}

/// The idle launchers of one tool.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    idle: Mutex<Vec<Resident>>,
}

impl Pool {
    /// An idle launcher that is still alive, if any; dead ones found on the way are dropped.
    pub(crate) fn take(&self) -> Option<Resident> {
        let mut idle = self.idle.lock().ok()?;
        while let Some(mut launcher) = idle.pop() {
            IDLE.fetch_sub(1, Ordering::Relaxed);
            if launcher.alive() {
                return Some(launcher);
            }
        }
        None
    }

    /// Whether no launcher is idle.
    pub(crate) fn is_empty(&self) -> bool {
        self.idle.lock().map_or(true, |idle| idle.is_empty())
    }

    /// Keeps `launcher` for a later call, unless it has served its share or the pools are
    /// full; else drops it (which kills it).
    pub(crate) fn give_back(&self, launcher: Resident) {
        if launcher.calls >= SANDBOX_CALLS_PER_LAUNCHER {
            return;
        }
        let Ok(mut idle) = self.idle.lock() else {
            return;
        };
        if idle.len() >= SANDBOX_IDLE_LAUNCHERS_PER_TOOL {
            return;
        }
        let admitted = IDLE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
            (count < SANDBOX_IDLE_LAUNCHERS).then_some(count.saturating_add(1))
        });
        if admitted.is_ok() {
            idle.push(launcher);
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Ok(idle) = self.idle.get_mut() {
            IDLE.fetch_sub(idle.len(), Ordering::Relaxed);
        }
    }
}

/// Idle launchers across all pools.
static IDLE: AtomicUsize = AtomicUsize::new(0);

/// Launchers started and not yet let go: idle, or serving a call.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Resident launchers now: idle, and serving a call (the metrics read it at each scrape; the
/// two are read apart, so a launcher changing state meanwhile may be counted in either).
pub(crate) fn counts() -> (usize, usize) {
    let idle = IDLE.load(Ordering::Relaxed);
    (idle, LIVE.load(Ordering::Relaxed).saturating_sub(idle))
}

/// Starts a launcher with `start` on the launchers' thread and returns it.
///
/// # Errors
///
/// `start`'s own error; `None` if the thread is gone (then nothing was started).
pub(crate) async fn start<E: Send + 'static>(
    start: impl FnOnce() -> Result<Resident, E> + Send + 'static,
) -> Option<Result<Resident, E>> {
    let (reply, started) = tokio::sync::oneshot::channel();
    let job: Job = Job::Start(Box::new(move || {
        // The call may have been dropped meanwhile: the launcher is then dropped (killed).
        if let Err(unwanted) = reply.send(start()) {
            drop(unwanted);
        }
    }));
    thread()?.send(job).ok()?;
    started.await.ok()
}

/// Starts a launcher with `start` on the launchers' thread and gives it to `confinement`'s
/// pool, without waiting, unless the pool has one idle by then. Does nothing if the thread is
/// gone.
pub(crate) fn prefill<E>(
    confinement: &Arc<Confinement>,
    start: impl FnOnce() -> Result<Resident, E> + Send + 'static,
) {
    let confinement = Arc::clone(confinement);
    let job = Job::Start(Box::new(move || {
        let pool = confinement.launchers();
        if !pool.is_empty() {
            return;
        }
        match start() {
            Ok(launcher) => pool.give_back(launcher),
            Err(_) => tracing::debug!("a launcher could not be started ahead of its call"),
        }
    }));
    let sent = thread().map(|jobs| jobs.send(job));
    if !matches!(sent, Some(Ok(()))) {
        tracing::debug!("the launchers' thread is gone");
    }
}

/// Has the launchers' thread reap `process`, whose channel is closing, killing it if it is
/// still there [`SANDBOX_STOP_GRACE`] from now, and then give back its uid and remove its
/// cgroups.
fn reap_later(mut process: std::process::Child, leases: Leases) {
    // Already gone: only the uid to give back, and the cgroups to remove, which may wait a
    // moment for the kernel and so are left to that thread too.
    if leases.1.is_none() && matches!(process.try_wait(), Ok(Some(_))) {
        return;
    }
    let now = std::time::Instant::now();
    let deadline = now.checked_add(SANDBOX_STOP_GRACE).unwrap_or(now);
    let dying = Box::new(Dying {
        process,
        leases,
        deadline,
    });
    let sent = thread().map(|jobs| jobs.send(Job::Reap(dying)));
    if !matches!(sent, Some(Ok(()))) {
        tracing::debug!("no thread to reap a launcher; it stays a zombie until airlock exits");
    }
}

enum Job {
    Start(Box<dyn FnOnce() + Send>),
    Reap(Box<Dying>),
}

/// A launcher let go, until it is reaped.
struct Dying {
    process: std::process::Child,
    /// Its uid and cgroups: given back and removed when this is dropped, once it is reaped
    /// (held for their drop, never read).
    #[expect(dead_code, reason = "held for its drop, once the launcher is reaped")]
    leases: Leases,
    /// When it is killed if it has not ended.
    deadline: std::time::Instant,
}

/// The launchers' thread, started on first use.
fn thread() -> Option<&'static Sender<Job>> {
    static SENDER: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    SENDER
        .get_or_init(|| {
            let (sender, jobs) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("airlock-launchers".to_owned())
                .spawn(move || serve(&jobs))
                .ok()?;
            Some(sender)
        })
        .as_ref()
}

/// The thread's loop: start launchers as asked, and reap killed ones as they end.
fn serve(jobs: &Receiver<Job>) {
    let mut dying: Vec<Box<Dying>> = Vec::new();
    loop {
        let job = if dying.is_empty() {
            match jobs.recv() {
                Ok(job) => Some(job),
                Err(_) => return,
            }
        } else {
            match jobs.recv_timeout(REAP_POLL_INTERVAL) {
                Ok(job) => Some(job),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        match job {
            Some(Job::Start(start)) => start(),
            Some(Job::Reap(launcher)) => dying.push(launcher),
            None => {}
        }
        // A reaped launcher's namespace is empty: its uid counts no process any more.
        let now = std::time::Instant::now();
        dying.retain_mut(|launcher| {
            if !matches!(launcher.process.try_wait(), Ok(None)) {
                return false;
            }
            // Our unreaped child (or its zombie), so the pid is still its own: this reaches
            // no stranger.
            if now >= launcher.deadline && launcher.process.kill().is_err() {
                tracing::debug!("a launcher past its grace was already gone");
            }
            true
        });
    }
}

/// How often launchers let go and not yet gone are looked at again. A launcher ends as soon
/// as it has emptied its namespace and swept, usually before the first look.
const REAP_POLL_INTERVAL: Duration = Duration::from_millis(50);
