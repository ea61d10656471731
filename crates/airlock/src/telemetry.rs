//! Diagnostics on stderr, never stdout, and what may appear in them.
//!
//! stdout is the protocol channel; every log line goes to stderr through `tracing`. The filter
//! comes from `AIRLOCK_LOG` (same syntax as `RUST_LOG`; default `info`); a program may send
//! the lines to a file instead, and as JSON (`init`, with the `logging` feature). What is
//! logged is chosen at each call site: methods, tool names, error kinds and counts — never
//! argument values, tool output, environment values or panic payloads, at any level.
//! Peer-controlled strings that must appear (an id) are logged with `?` so control characters
//! are escaped.
//!
//! The subscriber and the panic hook are opt-in: with the `logging` feature the server's
//! entry points install them (a product that has its own keeps it); a library user without
//! the feature gets neither.

/// The environment variable holding the log filter.
pub const LOG_ENV: &str = "AIRLOCK_LOG";

/// How each log line is written.
#[cfg(feature = "logging")]
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum Format {
    /// One line of text per event (colours only on a terminal).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `fields` (the message under
    /// `message`), and `spans` where there are any.
    Json,
}

/// Installs a subscriber writing `format` to the file at `path` (appended to), or to stderr
/// when `None`, unless the process already has one. Colours only for text on a terminal.
///
/// The file is opened as the audit log is ([`CallLog::file`](crate::CallLog::file)): an
/// existing regular file with one name that not every user can write, or a new one created
/// 0600; a symbolic link, FIFO, device or directory at `path` is refused, and the open never
/// blocks. Stderr needs no opening: with `None` this cannot fail.
///
/// ```
/// use airlock::telemetry::{self, Format};
///
/// telemetry::init(Format::Text, None)?;
/// telemetry::init(Format::Json, None)?; // the second call keeps the first subscriber
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
///
/// The file cannot be opened, or is refused (`InvalidInput`, "not a regular file").
#[cfg(feature = "logging")]
pub fn init(format: Format, path: Option<&std::path::Path>) -> std::io::Result<()> {
    use std::io::IsTerminal;
    use std::sync::Arc;

    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::fmt::writer::BoxMakeWriter;

    let file = path.map(crate::call_log::open_append).transpose()?;
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = file.is_none() && format == Format::Text && std::io::stderr().is_terminal();
    let writer = match file {
        Some(file) => BoxMakeWriter::new(Arc::new(file)),
        None => BoxMakeWriter::new(std::io::stderr),
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(ansi)
        .with_env_filter(filter)
        .with_target(false);
    let installed = match format {
        Format::Text => builder.try_init(),
        Format::Json => builder.json().try_init(),
    };
    if installed.is_err() {
        tracing::debug!("a tracing subscriber was already installed; keeping it");
    }
    Ok(())
}

/// Replaces the panic hook with one that logs where a panic happened but not its message:
/// a handler's panic message may quote arguments, paths or secrets. The panic itself is still
/// caught by the call's guard and answered `-32603`.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|at| format!("{}:{}", at.file(), at.line()));
        tracing::error!(?location, "panic (message withheld)");
    }));
}
