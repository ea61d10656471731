//! The signals a server acts on: SIGTERM and SIGINT end it; SIGHUP reloads its tools when it
//! was given a reload hook ([`ServerBuilder::reload`](crate::ServerBuilder::reload)), and
//! ends it otherwise.
//!
//! Their handlers are installed before the first request is read, so that a signal during a
//! call cancels it (and kills its command) instead of taking the default action; they are
//! awaited on the session's own runtime, so that whoever serves always gets control back.
//! A reload runs its hook on a blocking thread (it reads files), never on the session's, and
//! a stop signal that arrives meanwhile is not held up by it. Trusts nothing: a signal
//! carries no data.

use std::sync::Arc;

use crate::state::{ReloadHook, Shared};

/// SIGTERM, SIGINT and SIGHUP, with our handlers installed.
pub(crate) struct Termination {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

/// A signal received.
enum Received {
    /// SIGTERM or SIGINT, by name.
    Stop(&'static str),
    /// SIGHUP.
    Hangup,
}

impl Termination {
    /// Installs the handlers now, or logs why not (the default actions then apply).
    pub(crate) fn install() -> Option<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(term), Ok(int), Ok(hup)) => Some(Self { term, int, hup }),
            _ => {
                tracing::warn!("signal handlers could not be installed");
                None
            }
        }
    }

    /// The next signal.
    async fn next(&mut self) -> Received {
        tokio::select! {
            _ = self.term.recv() => Received::Stop("SIGTERM"),
            _ = self.int.recv() => Received::Stop("SIGINT"),
            _ = self.hup.recv() => Received::Hangup,
        }
    }

    /// Resolves when a signal that ends `shared`'s server arrives, with its name; never
    /// without handlers. Each SIGHUP before it reloads the tools when the server has a reload
    /// hook (one reload at a time; a SIGHUP during one makes one more after it, so the last
    /// edit is always read), and ends the server when it has none.
    pub(crate) async fn wait(signals: Option<Self>, shared: Arc<Shared>) -> &'static str {
        let Some(mut signals) = signals else {
            return std::future::pending().await;
        };
        loop {
            let hook = match signals.next().await {
                Received::Stop(name) => return name,
                Received::Hangup => match &shared.tools.reload {
                    Some(hook) => hook.clone(),
                    None => return "SIGHUP",
                },
            };
            let mut again = true;
            while again {
                again = false;
                let reloading = reload(&shared, hook.clone());
                tokio::pin!(reloading);
                loop {
                    tokio::select! {
                        () = &mut reloading => break,
                        signal = signals.next() => match signal {
                            Received::Stop(name) => return name,
                            Received::Hangup => again = true,
                        },
                    }
                }
            }
        }
    }
}

/// Runs `hook` on a blocking thread and puts the tools it gives in force, or logs at ERROR
/// why the tools in force stay.
async fn reload(shared: &Shared, hook: ReloadHook) {
    tracing::info!("SIGHUP: reloading the tools");
    match tokio::task::spawn_blocking(move || (hook.0)()).await {
        Ok(Ok(tools)) => match shared.replace_tools(tools) {
            Ok(count) => tracing::info!(
                tools = count,
                "tools reloaded; calls in flight finish on the tools they started with"
            ),
            Err(error) => {
                tracing::error!("reload refused, the tools in force stay: {error}");
            }
        },
        Ok(Err(error)) => tracing::error!("reload refused, the tools in force stay: {error}"),
        // A panic in the hook: its message is withheld (the panic hook), and so is it here.
        Err(_join_error) => {
            tracing::error!("reload refused, the tools in force stay: the reload hook failed");
        }
    }
}
