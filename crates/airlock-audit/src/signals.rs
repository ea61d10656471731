//! Interrupting an audit: SIGINT, SIGTERM or SIGHUP kill the server under audit and stop the
//! run.
//!
//! The server runs in its own process group, so a Ctrl-C at the terminal does not reach it;
//! without this, an interrupted audit would leave it running. A watcher thread waits for the
//! signals, kills every live target's tree at once, and raises a flag that every wait in the
//! audit checks, so the run ends within a poll interval and reports itself interrupted.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use super::target;

/// Whether an interrupt arrived.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Starts the watcher (once per process). From then on the signals no longer end the
/// process by themselves: the audit ends its run instead.
pub(crate) fn watch() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("audit-signals".to_owned())
            .spawn(wait_for_signal);
        if let Err(error) = spawned {
            tracing::warn!(kind = ?error.kind(), "no signal watcher: an interrupt may leave the server running");
        }
    });
}

fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        tracing::warn!("no signal watcher: an interrupt may leave the server running");
        return;
    };
    let caught = runtime.block_on(async {
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return false;
        };
        tokio::select! {
            _ = int.recv() => true,
            _ = term.recv() => true,
            _ = hup.recv() => true,
        }
    });
    if caught {
        INTERRUPTED.store(true, Ordering::SeqCst);
        target::kill_live_targets();
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
