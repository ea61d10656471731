//! The signals that end a server: SIGTERM, SIGINT and SIGHUP.
//!
//! Their handlers are installed before the first request is read, so that a signal during a
//! call cancels it (and kills its command) instead of taking the default action; they are
//! awaited on the session's own runtime, so that whoever serves always gets control back.
//! Trusts nothing: a signal carries no data.

/// SIGTERM, SIGINT and SIGHUP, with our handlers installed.
pub(crate) struct Termination {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
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

    /// Resolves when one of the signals arrives, with its name; never without handlers.
    pub(crate) async fn wait(signals: Option<Self>) -> &'static str {
        let Some(mut signals) = signals else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = signals.term.recv() => "SIGTERM",
            _ = signals.int.recv() => "SIGINT",
            _ = signals.hup.recv() => "SIGHUP",
        }
    }
}
