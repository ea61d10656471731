//! The library's front door: describe a server, register tools, serve.
//!
//! ```no_run
//! use std::io::Write;
//! use std::process::ExitCode;
//!
//! use airlock::{NoArguments, Server, Tool, ToolOutput};
//!
//! fn main() -> ExitCode {
//!     let built = Server::builder("hello", "1.0.0")
//!         .tool(Tool::builder("hello", "Says hello").handler(|_: NoArguments| async {
//!             Ok(ToolOutput::text("hello"))
//!         }))
//!         .build();
//!     match built {
//!         Ok(server) => ExitCode::from(server.run_stdio()),
//!         Err(error) => {
//!             // stdout is the protocol channel; diagnostics go to stderr.
//!             let _ignored = writeln!(std::io::stderr(), "invalid tools: {error}");
//!             ExitCode::FAILURE
//!         }
//!     }
//! }
//! ```

use std::io;
#[cfg(feature = "http")]
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::call_log::CallLog;
use crate::engine::{self, Engine, Shared};
use crate::limits::Limits;
use crate::response::ServerInfo;
use crate::tools::{BuildError, Registry, Tool};
#[cfg(feature = "http")]
use crate::transport::http::HttpConfig;
use crate::transport::stdio::IdleGate;
use crate::transport::stream::IdleRead;
use crate::transport::{self, Ending};

/// Exit status when stdin or stdout fails for a reason other than the peer closing it.
pub const EXIT_IO_ERROR: u8 = 4;

/// A built server: its identity, frozen tools and limits. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Server {
    shared: Arc<Shared>,
}

/// Assembles a [`Server`].
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ServerBuilder {
    info: ServerInfo,
    instructions: Option<String>,
    limits: Limits,
    tools: Vec<Tool>,
    call_log: Option<Arc<CallLog>>,
}

impl Server {
    /// Starts a server named `name` at `version` (its `serverInfo`).
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: ServerInfo {
                name: name.into(),
                version: version.into(),
                title: None,
            },
            instructions: None,
            limits: Limits::default(),
            tools: Vec::new(),
            call_log: None,
        }
    }

    /// A new session's engine, for a transport of your own.
    pub fn engine(&self) -> Engine {
        Engine::new(Arc::clone(&self.shared))
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// Serves one session over a byte stream.
    ///
    /// # Errors
    ///
    /// I/O errors other than end of input and a closed peer.
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> io::Result<Ending>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        transport::serve(self.engine(), reader, writer).await
    }

    /// Serves one session on stdin/stdout, logging to stderr (see [`crate::telemetry`]).
    ///
    /// With the `logging` feature, installs the stderr log subscriber if none is set and a
    /// panic hook that withholds panic messages: from here on stdout belongs to the protocol. When stdin and stdout are
    /// pipes they are served through the runtime's reactor, so the runtime needs its I/O
    /// driver (`enable_all`, as `#[tokio::main]` and [`Server::run_stdio`] have).
    ///
    /// # Errors
    ///
    /// I/O errors other than end of input and a closed peer.
    pub async fn serve_stdio(&self) -> io::Result<Ending> {
        stderr_logging();
        self.serve_stdio_watching_signals().await
    }

    /// [`Server::serve_stdio`] once logging is set up: the signals are awaited on this runtime.
    async fn serve_stdio_watching_signals(&self) -> io::Result<Ending> {
        // The handlers are in place before the first request is read: a signal during a call
        // must cancel it (and kill its command), never take the default action.
        let signals = Termination::install();
        // The signals are awaited in a task of their own, which hands over one value: the
        // session, woken for every message, then checks a channel instead of three signal
        // streams.
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let watcher = tokio::spawn(async move {
            let signal = Termination::wait(signals).await;
            if stop.send(signal).is_err() {
                tracing::debug!("a signal arrived after the session ended");
            }
        });
        let ending = self.serve_stdio_until(stopped, None).await;
        watcher.abort();
        ending
    }

    /// Serves stdin/stdout until the session ends or `stopped` says a signal arrived. With a
    /// `gate`, the session reads stdin by blocking while idle (see `transport::stdio`).
    async fn serve_stdio_until(
        &self,
        mut stopped: tokio::sync::oneshot::Receiver<&'static str>,
        gate: Option<Arc<IdleGate>>,
    ) -> io::Result<Ending> {
        tracing::info!(
            server = self.shared.info.name.as_str(),
            tools = self.shared.registry.len(),
            "serving MCP on stdio"
        );
        let (input, output) = transport::stdio::open();
        let mut idle_stdin = gate.and_then(|gate| input.idle_reader(gate));
        let idle: Option<&mut (dyn IdleRead + Send)> = match idle_stdin.as_mut() {
            Some(reader) => Some(reader),
            None => None,
        };
        let serving = transport::stream::serve_with_idle(self.engine(), input, output, idle);
        tokio::select! {
            biased;
            stop = &mut stopped => {
                // Dropping the session aborts every call task; dropping a call kills its
                // command's process group. Clients send SIGTERM when they are done with us.
                match stop {
                    Ok(signal) => {
                        tracing::info!(signal, "stopping on signal; calls in flight are cancelled");
                    }
                    // The watcher is gone (a bug): signals could no longer stop us. Stop now.
                    Err(_) => tracing::error!("the signal watcher failed; stopping"),
                }
                Ok(Ending::Terminated)
            }
            ending = serving => ending,
        }
    }

    /// Serves stdio to the end on a runtime of its own and returns the process exit status:
    /// the one call a CLI's `mcp` subcommand needs.
    ///
    /// The session waits for input blocked in `read(2)` while it is idle, and SIGTERM, SIGINT
    /// and SIGHUP are watched on a thread of their own. A signal that arrives while the session
    /// is idle (no call in flight, nothing to write) **ends the process from that thread with
    /// status 0: this function does not return then**, and nothing after it runs (destructors
    /// included). Work outside the session's runtime (threads of your own, `spawn_blocking`
    /// closures a handler left behind) is not waited for. A signal during a call cancels the
    /// calls and returns 0 as usual. To keep control at every ending, serve with
    /// [`Server::serve_stdio`] on a runtime of your own, which never blocks.
    pub fn run_stdio(&self) -> u8 {
        stderr_logging();
        // Started first, so that its set-up overlaps the runtime's.
        let signals = SignalThread::start();
        let runtime = match runtime(Flavor::OneThread) {
            Ok(runtime) => runtime,
            Err(status) => return status,
        };
        // One session is served by one thread: the thread that waits for input is the one that
        // reads the request, answers it and writes the reply, with no hand-off between threads
        // per message. Calls that wait (commands, timers) interleave on it; blocking work
        // belongs in `spawn_blocking`, whose pool this runtime still has. Signals are awaited
        // on a thread of their own, so that the session may block in `read` while idle.
        // The session is a task, not the `block_on` future, so that a bug's panic ends here
        // as a join error and a status instead of unwinding out of this function.
        let server = self.clone();
        let session = match signals.and_then(SignalThread::ready) {
            Some((stopped, gate)) => {
                runtime.spawn(async move { server.serve_stdio_until(stopped, Some(gate)).await })
            }
            // No thread for signals: they are awaited on the runtime, and the session never
            // blocks.
            None => runtime.spawn(async move { server.serve_stdio_watching_signals().await }),
        };
        let status = match runtime.block_on(session) {
            Ok(Ok(ending)) => ending.exit_code(),
            Ok(Err(error)) => {
                tracing::error!(kind = ?error.kind(), "stdio failed");
                EXIT_IO_ERROR
            }
            Err(_join_error) => {
                // A bug: the session task panicked (its message is withheld by the hook).
                tracing::error!("the session task failed");
                EXIT_IO_ERROR
            }
        };
        // When stdin is not a pipe, tokio reads it on a blocking thread that cannot be
        // interrupted; do not wait for it.
        runtime.shutdown_timeout(Duration::from_millis(200));
        status
    }
}

/// The thread that waits for SIGTERM, SIGINT and SIGHUP, started: its handlers are known to be
/// installed once [`SignalThread::ready`] returns. A signal that finds the session blocked idle
/// ends the process there (status 0: nothing was in flight); otherwise it is sent down the
/// channel.
struct SignalThread {
    installed: std::sync::mpsc::Receiver<bool>,
    stopped: tokio::sync::oneshot::Receiver<&'static str>,
    gate: Arc<IdleGate>,
}

impl SignalThread {
    /// Starts the thread (its runtime and handlers are set up while the caller goes on);
    /// `None` when no thread could be started.
    fn start() -> Option<Self> {
        let gate = Arc::new(IdleGate::default());
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let (installed_tx, installed) = std::sync::mpsc::sync_channel::<bool>(1);
        let thread_gate = Arc::clone(&gate);
        let spawned = std::thread::Builder::new()
            .name("airlock-signals".into())
            .stack_size(SIGNAL_THREAD_STACK_BYTES)
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build()
                else {
                    let _unheard = installed_tx.send(false);
                    return;
                };
                let signals = runtime.block_on(async { Termination::install() });
                if installed_tx.send(true).is_err() {
                    return;
                }
                // Without handlers the default actions apply; the channel stays open for good.
                let signal = runtime.block_on(Termination::wait(signals));
                if thread_gate.claim_for_stop() {
                    tracing::info!(signal, "stopping on signal; no call was in flight");
                    end_idle_process();
                }
                if stop.send(signal).is_err() {
                    tracing::debug!("a signal arrived after the session ended");
                }
            });
        if spawned.is_err() {
            tracing::warn!("no thread for signals; they are awaited on the session's runtime");
            return None;
        }
        Some(Self {
            installed,
            stopped,
            gate,
        })
    }

    /// Waits until the handlers are in place; then the session may start. `None` when the
    /// thread could not build its runtime (the caller then awaits signals itself).
    fn ready(self) -> Option<(tokio::sync::oneshot::Receiver<&'static str>, Arc<IdleGate>)> {
        match self.installed.recv() {
            Ok(true) => Some((self.stopped, self.gate)),
            _ => None,
        }
    }
}

/// Ends the process from the signal thread, with status 0 like a session stopped by a
/// signal. Only called with the session claimed idle through its [`IdleGate`]: no call in
/// flight, no task, no command, nothing unwritten, so there is nothing to cancel or flush.
#[expect(
    clippy::exit,
    reason = "the signal thread ends an idle session blocked in read(2)"
)]
fn end_idle_process() -> ! {
    std::process::exit(0)
}

/// The signal thread's stack: it only waits, and logs one line.
const SIGNAL_THREAD_STACK_BYTES: usize = 256 * 1024;

#[cfg(feature = "http")]
impl Server {
    /// Serves MCP over HTTP (both eras) at `addr`'s `/mcp` until SIGTERM, SIGINT or SIGHUP.
    ///
    /// Installs the stderr log and the panic hook like [`Server::serve_stdio`] (with the
    /// `logging` feature). A bind address
    /// other than loopback is logged as a warning when no token is configured: anyone who can
    /// reach the port can then call the tools.
    ///
    /// # Errors
    ///
    /// Binding the address failed.
    pub async fn serve_http(&self, addr: SocketAddr, config: HttpConfig) -> io::Result<()> {
        stderr_logging();
        if !addr.ip().is_loopback() && config.tokens.is_empty() {
            tracing::warn!(
                %addr,
                "serving HTTP beyond loopback without authentication: anyone who reaches this \
                 port can call the tools"
            );
        }
        let signals = Termination::install();
        let listener = tokio::net::TcpListener::bind(addr).await?;
        tracing::info!(
            server = self.shared.info.name.as_str(),
            tools = self.shared.registry.len(),
            "HTTP listener bound"
        );
        transport::http::serve(Arc::clone(&self.shared), config, listener, async {
            let signal = Termination::wait(signals).await;
            tracing::info!(signal, "stopping on signal; calls in flight are cancelled");
        })
        .await
    }

    /// Serves HTTP to the end on a runtime of its own and returns the process exit status:
    /// `0` after a signal, [`EXIT_IO_ERROR`] if the address cannot be bound.
    pub fn run_http(&self, addr: SocketAddr, config: HttpConfig) -> u8 {
        let runtime = match runtime(Flavor::Workers) {
            Ok(runtime) => runtime,
            Err(status) => return status,
        };
        let server = self.clone();
        let serving = runtime.spawn(async move { server.serve_http(addr, config).await });
        let status = match runtime.block_on(serving) {
            Ok(Ok(())) => 0,
            Ok(Err(error)) => {
                tracing::error!(%addr, kind = ?error.kind(), "could not serve HTTP");
                EXIT_IO_ERROR
            }
            Err(_join_error) => {
                tracing::error!("the HTTP server task failed");
                EXIT_IO_ERROR
            }
        };
        runtime.shutdown_timeout(Duration::from_millis(500));
        status
    }
}

/// With the `logging` feature, the stderr subscriber (unless one is set) and the panic hook
/// that withholds panic messages; without it, nothing: a product keeps its own.
fn stderr_logging() {
    #[cfg(feature = "logging")]
    {
        crate::telemetry::init();
        crate::telemetry::install_panic_hook();
    }
}

/// The threads a runtime runs its tasks on.
#[derive(Clone, Copy)]
enum Flavor {
    /// The calling thread only: one stdio session.
    OneThread,
    /// A worker per core: many HTTP connections.
    #[cfg(feature = "http")]
    Workers,
}

/// A runtime with every driver, or the exit status for not getting one.
fn runtime(flavor: Flavor) -> Result<tokio::runtime::Runtime, u8> {
    let mut builder = match flavor {
        Flavor::OneThread => tokio::runtime::Builder::new_current_thread(),
        #[cfg(feature = "http")]
        Flavor::Workers => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build().map_err(|error| {
        tracing::error!(kind = ?error.kind(), "could not start the async runtime");
        EXIT_IO_ERROR
    })
}

/// SIGTERM, SIGINT and SIGHUP, with our handlers installed.
struct Termination {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Termination {
    /// Installs the handlers now, or logs why not (the default actions then apply).
    fn install() -> Option<Self> {
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
    async fn wait(signals: Option<Self>) -> &'static str {
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

impl ServerBuilder {
    /// A display name for clients.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Instructions clients may pass to the model.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Limits other than the defaults.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Writes an audit record of every tool call to `log` ([`crate::call_log`]).
    pub fn call_log(mut self, log: Arc<CallLog>) -> Self {
        self.call_log = Some(log);
        self
    }

    /// Registers a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Checks every tool and freezes the server.
    ///
    /// # Errors
    ///
    /// The first [`BuildError`]: a bad or repeated name, a missing description, a schema the
    /// validator does not support.
    pub fn build(self) -> Result<Server, BuildError> {
        let registry = Registry::new(self.tools)?;
        Ok(Server {
            shared: engine::shared_logging(
                self.info,
                self.instructions,
                registry,
                self.limits,
                self.call_log,
            ),
        })
    }
}
