//! Warm launchers: started ahead of time for a tool, with its policy already applied, each
//! waiting on its stdin for one call's command line.
//!
//! Starting a launcher costs an `exec` of airlock and the policy's set-up, about as much again
//! as the command itself on a small machine. A warm launcher takes both off the call's path:
//! the call writes its command line and the launcher starts the program at once. Each is used
//! for one call only, then a new one is started in the background.
//!
//! A warm launcher is an ordinary launcher that has not been given its command line yet: it is
//! confined, alone in its PID namespace, and dies with airlock (its parent-death signal follows
//! the thread that started it, so that thread is one that lives as long as airlock: `refill`'s).

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::process::Child;

use super::Confinement;

/// Warm launchers kept per tool. Each is an idle process of a few MiB; two cover a client that
/// calls the same tool back to back while the next one starts.
pub const WARM_LAUNCHERS_PER_TOOL: usize = 2;

/// The warm launchers of one tool.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    ready: Mutex<Vec<Child>>,
}

impl Pool {
    /// A warm launcher that is still alive, if any.
    pub(crate) fn take(&self) -> Option<Child> {
        let mut ready = self.ready.lock().ok()?;
        while let Some(mut child) = ready.pop() {
            if matches!(child.try_wait(), Ok(None)) {
                return Some(child);
            }
            // Dead (killed from outside, or its start failed): dropping it reaps it.
        }
        None
    }

    fn len(&self) -> usize {
        self.ready.lock().map_or(usize::MAX, |ready| ready.len())
    }

    /// Whether the pool has room for another launcher.
    pub(crate) fn wants_more(&self) -> bool {
        self.len() < WARM_LAUNCHERS_PER_TOOL
    }

    fn push(&self, child: Child) {
        if let Ok(mut ready) = self.ready.lock()
            && ready.len() < WARM_LAUNCHERS_PER_TOOL
        {
            ready.push(child);
        }
        // Else the child is dropped here, which kills it (`kill_on_drop`).
    }
}

/// Asks for one more warm launcher for `confinement`'s tool, started by `start` on the refill
/// thread, unless the tool has enough. Never blocks; without a tokio runtime it does nothing.
pub(crate) fn refill<E>(
    confinement: &Arc<Confinement>,
    start: impl FnOnce() -> Result<Child, E> + Send + 'static,
) {
    if !confinement.warm.wants_more() {
        return;
    }
    let Some(jobs) = refill_thread() else {
        return;
    };
    let confinement = Arc::clone(confinement);
    let job: Job = Box::new(move || {
        if !confinement.warm.wants_more() {
            return;
        }
        match start() {
            Ok(child) => confinement.warm.push(child),
            Err(_) => tracing::debug!("a warm launcher could not be started"),
        }
    });
    if jobs.send(job).is_err() {
        tracing::debug!("the warm launchers' thread is gone");
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The thread that starts warm launchers, made on first use inside the runtime it serves.
fn refill_thread() -> Option<&'static Sender<Job>> {
    static SENDER: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    SENDER
        .get_or_init(|| {
            let runtime = tokio::runtime::Handle::try_current().ok()?;
            let (sender, jobs) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("airlock-warm-launchers".to_owned())
                .spawn(move || {
                    // Child pipes register with the runtime's reactor; entering it makes the
                    // spawns below as if made from inside.
                    let _entered = runtime.enter();
                    for job in jobs {
                        job();
                    }
                })
                .ok()?;
            Some(sender)
        })
        .as_ref()
}
