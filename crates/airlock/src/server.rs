//! The library's front door: describe a server, register tools, serve it (on stdio, on a byte
//! stream, or over HTTP), on a runtime of its own or of the caller's.
//!
//! ```no_run
//! use std::io::Write;
//! use std::process::ExitCode;
//!
//! use airlock::{NoArguments, Server, Tool};
//!
//! fn main() -> ExitCode {
//!     let hello = Tool::builder("hello")
//!         .description("Says hello")
//!         .handler(|_: NoArguments| async { "hello" });
//!     match Server::builder("hello", "1.0.0").tool(hello).build() {
//!         Ok(server) => server.run_stdio(),
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
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::call_log::CallLog;
use crate::engine::{self, Engine, Shared};
use crate::limits::Limits;
use crate::prompts::{Prompt, PromptRegistry};
use crate::resources::{Resource, ResourceRegistry, ResourceUpdates};
use crate::response::ServerInfo;
use crate::signals::Termination;
use crate::state::{ReloadError, ReloadHook};
use crate::tools::{BuildError, Registry, Tool};
#[cfg(feature = "http")]
use crate::transport::http::HttpConfig;
use crate::transport::{self, Ending};

/// Exit status when stdin or stdout fails for a reason other than the peer closing it.
pub(crate) const EXIT_IO_ERROR: u8 = 4;

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
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    call_log: Option<Arc<CallLog>>,
    subscriptions: Option<ResourceUpdates>,
    /// The key set by [`ServerBuilder::request_state_key`]; `Err` when it was too short.
    request_states: Option<Result<Arc<crate::rounds::StateKey>, BuildError>>,
    /// Where SIGHUP gets new tools ([`ServerBuilder::reload`]).
    reload: Option<ReloadHook>,
    /// Where requests are counted ([`ServerBuilder::metrics`]).
    #[cfg(feature = "metrics")]
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Where traced requests go ([`ServerBuilder::traces`]).
    #[cfg(feature = "otel")]
    traces: Option<Arc<crate::otel::Traces>>,
}

impl Server {
    /// Starts a server named `name` at `version` (its `serverInfo`).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use airlock::{CallLog, Limits, NoArguments, Server, Tool};
    ///
    /// let server = Server::builder("mycli", "1.2.0")
    ///     .title("My CLI")
    ///     .instructions("Use `now` to learn the time.")
    ///     .limits(Limits::default())
    ///     .call_log(Arc::new(CallLog::stderr()))
    ///     .tool(Tool::builder("now").description("The time").handler(|_: NoArguments| async { "noon" }))
    ///     .build();
    /// assert!(server.is_ok());
    ///
    /// let twice = Server::builder("mycli", "1.2.0")
    ///     .tool(Tool::builder("now").description("The time").handler(|_: NoArguments| async { "noon" }))
    ///     .tool(Tool::builder("now").description("The time").handler(|_: NoArguments| async { "noon" }))
    ///     .build();
    /// assert!(matches!(twice, Err(airlock::BuildError::DuplicateTool(name)) if name == "now"));
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: ServerInfo {
                name: name.into(),
                version: version.into(),
                title: None,
                meta: None,
            },
            instructions: None,
            limits: Limits::default(),
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            call_log: None,
            subscriptions: None,
            request_states: None,
            reload: None,
            #[cfg(feature = "metrics")]
            metrics: None,
            #[cfg(feature = "otel")]
            traces: None,
        }
    }

    /// Replaces the tools, as a reload does: `tools` are checked whole as
    /// [`ServerBuilder::build`] checks them, and only then put in force, for every session at
    /// once. A call in flight finishes on the tool it started with; later calls and
    /// `tools/list` see the new set. On a server built with [`ServerBuilder::reload`], legacy
    /// sessions are told (`notifications/tools/list_changed`: over stdio on the session's
    /// output, over HTTP on the session's `GET` stream); 2026-07-28 clients re-read the list
    /// when its `ttlMs` ([`Limits::tools_list_ttl`]) runs out. The per-tool quotas follow
    /// the new set (a tool whose rate is unchanged keeps what it counted); everything else
    /// (limits, prompts, resources, the server's identity) is as built.
    ///
    /// ```
    /// use airlock::{NoArguments, Server, Tool};
    ///
    /// let hello = || Tool::builder("hello").description("Says hello").handler(|_: NoArguments| async { "hello" });
    /// let bye = Tool::builder("bye").description("Says bye").handler(|_: NoArguments| async { "bye" });
    /// let server = Server::builder("greeter", "1.0.0").tool(hello()).build()?;
    /// server.replace_tools(vec![hello(), bye])?;
    /// // Checked whole: a set that does not build leaves the tools in force.
    /// assert!(server.replace_tools(vec![hello(), hello()]).is_err());
    /// # Ok::<(), airlock::BuildError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The first [`BuildError`] of the new set (as for [`ServerBuilder::build`]), or
    /// [`BuildError::ScopesChanged`]: a reload may not add or change the OAuth scopes a tool
    /// requires. The tools in force then stay.
    pub fn replace_tools(&self, tools: Vec<Tool>) -> Result<(), BuildError> {
        self.shared.replace_tools(tools).map(|_count| ())
    }

    /// Where to announce that resources changed: the [`ResourceUpdates`] given to
    /// [`ServerBuilder::resource_subscriptions`]; `None` on a server built without.
    pub fn resource_updates(&self) -> Option<ResourceUpdates> {
        self.shared.updates.clone()
    }

    /// A new session's engine, for a transport of your own.
    pub fn engine(&self) -> Engine {
        Engine::new(Arc::clone(&self.shared))
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// Serves one session over a byte stream: [`serve`](crate::transport::serve) with a new engine.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = airlock::Server::builder("empty", "0.1.0").build()?;
    /// let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n";
    /// let mut output = Vec::new();
    /// server.serve(input, &mut output).await?;
    /// assert_eq!(output, b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n");
    /// # Ok(())
    /// # }
    /// ```
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
    /// ```no_run
    /// use std::process::ExitCode;
    ///
    /// // On a runtime of your own (with its I/O driver, as `#[tokio::main]` has).
    /// async fn mcp(server: airlock::Server) -> ExitCode {
    ///     match server.serve_stdio().await {
    ///         Ok(ending) => ExitCode::from(ending.exit_code()),
    ///         Err(_) => ExitCode::from(4),
    ///     }
    /// }
    /// ```
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
        // session, woken for every message, then polls one channel instead of three signal
        // streams.
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let shared = Arc::clone(&self.shared);
        let watcher = tokio::spawn(async move {
            let signal = Termination::wait(signals, shared).await;
            if stop.send(signal).is_err() {
                tracing::debug!("a signal arrived after the session ended");
            }
        });
        tracing::info!(
            server = self.shared.info.name.as_str(),
            tools = self.shared.registry().len(),
            "serving MCP on stdio"
        );
        let (input, output) = transport::stdio::open();
        let serving = transport::serve(self.engine(), input, output);
        let ending = tokio::select! {
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
        };
        watcher.abort();
        ending
    }

    /// Serves stdio to the end on a runtime of its own and returns the process exit status:
    /// the one call a CLI's `mcp` subcommand needs.
    ///
    /// It always returns, whatever ends the session: end of input, a closed peer, a peer cut
    /// off, SIGTERM, SIGINT, or SIGHUP on a server without [`ServerBuilder::reload`] (calls
    /// in flight are cancelled and their commands killed), or a failure of stdin or stdout. The status is [`Ending::exit_code`], or
    /// 4 when stdio or the runtime failed. Work outside the session's runtime
    /// (threads of your own, `spawn_blocking` closures a handler left behind) is not waited
    /// for.
    ///
    /// The session runs on the calling thread, on a one-thread runtime: a handler that blocks
    /// stalls the session (see [`ToolBuilder::handler`](crate::ToolBuilder::handler)). With
    /// the `logging` feature, the stderr log subscriber and the panic hook are installed as by
    /// [`Server::serve_stdio`].
    ///
    /// ```no_run
    /// use std::process::ExitCode;
    ///
    /// use airlock::{NoArguments, Server, Tool};
    ///
    /// fn main() -> ExitCode {
    ///     let tool = Tool::builder("hello")
    ///         .description("Says hello")
    ///         .handler(|_: NoArguments| async { "hello" });
    ///     match Server::builder("hello", "1.0.0").tool(tool).build() {
    ///         Ok(server) => server.run_stdio(),
    ///         Err(_) => ExitCode::FAILURE,
    ///     }
    /// }
    /// ```
    pub fn run_stdio(&self) -> ExitCode {
        stderr_logging();
        let runtime = match runtime(Flavor::OneThread) {
            Ok(runtime) => runtime,
            Err(status) => return ExitCode::from(status),
        };
        // One session is served by one thread: the thread that waits for input is the one that
        // reads the request, answers it and writes the reply, with no hand-off between threads
        // per message. Calls that wait (commands, timers) interleave on it; blocking work
        // belongs in `spawn_blocking`, whose pool this runtime still has. The session is a
        // task, not the `block_on` future, so that a bug's panic ends here as a join error and
        // a status instead of unwinding out of this function.
        let server = self.clone();
        let session = runtime.spawn(async move { server.serve_stdio_watching_signals().await });
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
        ExitCode::from(status)
    }
}

#[cfg(feature = "http")]
impl Server {
    /// Serves MCP over HTTP (both eras) at `addr`'s `/mcp` until SIGTERM or SIGINT (or SIGHUP,
    /// on a server without [`ServerBuilder::reload`]; with it, SIGHUP reloads the tools).
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
        if !addr.ip().is_loopback() && !config.authenticates() {
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
            tools = self.shared.registry().len(),
            "HTTP listener bound"
        );
        let shared = Arc::clone(&self.shared);
        transport::http::serve(Arc::clone(&self.shared), config, listener, async {
            let signal = Termination::wait(signals, shared).await;
            tracing::info!(signal, "stopping on signal; calls in flight are cancelled");
        })
        .await
    }

    /// Serves HTTP to the end on a runtime of its own and returns the process exit status:
    /// `0` after a signal, 4 if the address cannot be bound. It always
    /// returns.
    ///
    /// ```no_run
    /// use std::process::ExitCode;
    ///
    /// use airlock::transport::http::{AllowList, HttpConfig, Tokens};
    /// use airlock::{HttpLimits, NoArguments, Server, Tool};
    ///
    /// fn main() -> ExitCode {
    ///     let tool = Tool::builder("hello")
    ///         .description("Says hello")
    ///         .handler(|_: NoArguments| async { "hello" });
    ///     let Ok(server) = Server::builder("hello", "1.0.0").tool(tool).build() else {
    ///         return ExitCode::FAILURE;
    ///     };
    ///     let config = HttpConfig::new(AllowList::default(), Tokens::none(), HttpLimits::default());
    ///     server.run_http(([127, 0, 0, 1], 8080).into(), config)
    /// }
    /// ```
    pub fn run_http(&self, addr: SocketAddr, config: HttpConfig) -> ExitCode {
        let runtime = match runtime(Flavor::Workers) {
            Ok(runtime) => runtime,
            Err(status) => return ExitCode::from(status),
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
        ExitCode::from(status)
    }
}

/// With the `logging` feature, the stderr subscriber (unless one is set) and the panic hook
/// that withholds panic messages; without it, nothing: a product keeps its own.
fn stderr_logging() {
    #[cfg(feature = "logging")]
    {
        // Stderr needs no opening, so this cannot fail.
        let _stderr = crate::telemetry::init(crate::telemetry::Format::Text, None);
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

impl ServerBuilder {
    /// Counts requests, tool calls, refusals, calls in flight and sessions in `metrics` (the
    /// `metrics` feature): read them with
    /// [`Metrics::render`](crate::metrics::Metrics::render), or serve them with
    /// `transport::metrics::Endpoint` (with `http`). Without it, each count costs one
    /// branch.
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Traces requests to `traces` (the `otel` feature): a span per request by the MCP
    /// semantic conventions, and one per command run, child of its request's; a tool's run
    /// is told its own span ([`CallContext::trace_parent`](crate::CallContext::trace_parent)).
    /// No span carries argument values or output. Without it, a request pays one branch.
    #[cfg(feature = "otel")]
    pub fn traces(mut self, traces: Arc<crate::otel::Traces>) -> Self {
        self.traces = Some(traces);
        self
    }

    /// A display name for clients.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Members published beside the server's description: the `_meta` of the `initialize`
    /// result, and, for 2026-07-28 clients, beside `io.modelcontextprotocol/serverInfo` in
    /// each result's `_meta` (which that key itself is never replaced in). Name them with a
    /// prefix of your own (`example.com/key`), as MCP asks of `_meta` keys; keep them small,
    /// every 2026-07-28 result carries them. `airlock serve` publishes its catalog's digest
    /// here, for a client or gateway to pin.
    pub fn server_info_meta(mut self, meta: serde_json::Map<String, serde_json::Value>) -> Self {
        self.info.meta = (!meta.is_empty()).then_some(meta);
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

    /// Writes an audit record of every tool call to `log` ([`CallLog`] says what a record holds).
    pub fn call_log(mut self, log: Arc<CallLog>) -> Self {
        self.call_log = Some(log);
        self
    }

    /// Registers a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Registers a prompt (see [`Prompt::builder`]); a server with prompts declares the
    /// `prompts` capability.
    ///
    /// ```
    /// use airlock::{NoArguments, Prompt, PromptMessage, Server};
    ///
    /// let server = Server::builder("notes", "1.0.0")
    ///     .prompt(
    ///         Prompt::builder("summarise")
    ///             .description("Summarises today's notes")
    ///             .handler(|_: NoArguments| vec![PromptMessage::user("Summarise my notes.")]),
    ///     )
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Registers a resource or a resource template (see [`Resource::builder`]); a server with
    /// resources declares the `resources` capability (without subscriptions).
    ///
    /// ```
    /// use airlock::{Resource, ResourceBody, Server};
    ///
    /// let server = Server::builder("notes", "1.0.0")
    ///     .resource(
    ///         Resource::builder("notes://today", "today")
    ///             .mime_type("text/plain")
    ///             .fixed(|| ResourceBody::text("Buy milk.")),
    ///     )
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Offers resource subscriptions to legacy (2025-11-25 and earlier) sessions: the
    /// `resources` capability says `subscribe`, a client may `resources/subscribe` to the URI
    /// of a resource this server has (a fixed one, or one a template matches; at most
    /// `MAX_SUBSCRIPTIONS` (32) per session), and each
    /// [`ResourceUpdates::updated`] on `updates` (or a clone of it) reaches the sessions
    /// subscribed to that URI as `notifications/resources/updated`: over stdio on the
    /// session's output, over HTTP on the session's `GET` stream. Without this call
    /// `resources/subscribe` is `-32601`, as for any method not offered. The 2026-07-28
    /// revision has no `resources/subscribe`.
    pub fn resource_subscriptions(mut self, updates: ResourceUpdates) -> Self {
        self.subscriptions = Some(updates);
        self
    }

    /// The key that signs the `requestState` a 2026-07-28 call hands the client between its
    /// rounds of input ([`CallContext::elicit`](crate::CallContext::elicit) and the other
    /// questions). Replicas behind one load balancer must share it, so that any of them takes
    /// the state another issued; keep it as secret as a session key. Without this call each
    /// server draws its own at start (then a retry must come back to the same process).
    ///
    /// ```
    /// use airlock::Server;
    /// use airlock::secrecy::SecretSlice;
    ///
    /// // In a deployment: the same 32 random bytes for every replica, from a secret store.
    /// let key = SecretSlice::from(vec![0x5a_u8; 32]);
    /// let server = Server::builder("replicated", "1.0.0").request_state_key(&key).build();
    /// assert!(server.is_ok());
    /// ```
    ///
    /// The key must be at least
    /// [`MIN_REQUEST_STATE_KEY_BYTES`](crate::limits::MIN_REQUEST_STATE_KEY_BYTES) bytes
    /// (random ones): [`build`](Self::build) refuses a shorter one.
    pub fn request_state_key(mut self, key: &secrecy::SecretSlice<u8>) -> Self {
        use secrecy::ExposeSecret;
        let key = key.expose_secret();
        self.request_states = Some(if key.len() < crate::limits::MIN_REQUEST_STATE_KEY_BYTES {
            Err(BuildError::WeakRequestStateKey)
        } else {
            Ok(Arc::new(crate::rounds::StateKey::from_bytes(key)))
        });
        self
    }

    /// Reloads the tools on SIGHUP: `hook` gives the new set (a CLI reads its configuration
    /// again) and [`Server::replace_tools`] puts it in force, or the tools in force stay and
    /// the hook's error (or the set's [`BuildError`]) is logged at ERROR: make its text the
    /// operator's, never a peer's. The hook runs on a blocking thread, one reload at a time.
    /// Legacy sessions are told of each change (`tools.listChanged` is declared `true`).
    ///
    /// Without this call SIGHUP ends the server like SIGTERM, as a terminal hang-up should;
    /// with it, only SIGTERM and SIGINT do.
    ///
    /// ```
    /// use airlock::{NoArguments, Server, Tool};
    ///
    /// fn tools() -> Vec<Tool> {
    ///     vec![Tool::builder("hello").description("Says hello").handler(|_: NoArguments| async { "hello" })]
    /// }
    ///
    /// let server = Server::builder("greeter", "1.0.0")
    ///     .tools(tools())
    ///     .reload(|| Ok(tools()))
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn reload<F>(mut self, hook: F) -> Self
    where
        F: Fn() -> Result<Vec<Tool>, ReloadError> + Send + Sync + 'static,
    {
        self.reload = Some(ReloadHook(Arc::new(hook)));
        self
    }

    /// Registers each of `tools` ([`ServerBuilder::tool`] for many).
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Checks every tool and freezes the server.
    ///
    /// # Errors
    ///
    /// The first [`BuildError`]: a bad or repeated name, a missing description, a schema the
    /// validator does not support, a request state key too short.
    pub fn build(self) -> Result<Server, BuildError> {
        let request_states = self.request_states.transpose()?;
        let registry = Registry::new(self.tools)?;
        let prompts = PromptRegistry::new(self.prompts)?;
        let resources = ResourceRegistry::new(self.resources)?;
        Ok(Server {
            shared: engine::shared_logging(
                self.info,
                self.instructions,
                registry,
                crate::state::Surface {
                    prompts,
                    resources,
                    updates: self.subscriptions,
                    request_states,
                    reload: self.reload,
                    #[cfg(feature = "metrics")]
                    metrics: self.metrics,
                    #[cfg(feature = "otel")]
                    traces: self.traces,
                },
                self.limits,
                self.call_log,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MIN_REQUEST_STATE_KEY_BYTES;

    fn scoped(name: &str, scopes: &[&str]) -> Tool {
        Tool::builder(name)
            .description("A tool")
            .scopes(scopes.iter().copied())
            .handler(|_: crate::NoArguments| async { "done" })
    }

    /// A call's scope check (HTTP, before the engine) and its start look the tool up apart: a
    /// reload that changed the scopes between them would run a tool unchecked.
    #[test]
    fn a_reload_may_not_add_or_change_the_scopes_a_tool_requires() {
        let server = Server::builder("t", "1")
            .tool(scoped("read", &["files:read"]))
            .build()
            .unwrap();
        for refused in [
            vec![scoped("read", &["files:write"])],
            vec![scoped("read", &[])],
            vec![
                scoped("read", &["files:read"]),
                scoped("write", &["files:write"]),
            ],
        ] {
            assert!(matches!(
                server.replace_tools(refused),
                Err(BuildError::ScopesChanged(_))
            ));
        }
        assert_eq!(server.shared.registry().len(), 1);
        server
            .replace_tools(vec![scoped("read", &["files:read"]), scoped("new", &[])])
            .unwrap();
        assert_eq!(server.shared.registry().len(), 2);
    }

    /// `tools.listChanged` says whether the list may change: only with a reload hook.
    #[test]
    fn only_a_server_with_a_reload_hook_declares_that_its_tools_change() {
        let fixed = Server::builder("t", "1").build().unwrap();
        assert!(!fixed.shared.tools_may_change());
        let reloading = Server::builder("t", "1")
            .reload(|| Ok(Vec::new()))
            .build()
            .unwrap();
        assert!(reloading.shared.tools_may_change());
    }

    /// A short key makes the states it signs forgeable by trying keys: refused at build.
    #[test]
    fn a_request_state_key_shorter_than_its_minimum_is_refused_at_build() {
        for short in [0, 1, 16, MIN_REQUEST_STATE_KEY_BYTES - 1] {
            let key = secrecy::SecretSlice::from(vec![7_u8; short]);
            let built = Server::builder("t", "1").request_state_key(&key).build();
            assert!(
                matches!(built, Err(BuildError::WeakRequestStateKey)),
                "{short} bytes"
            );
        }
        let key = secrecy::SecretSlice::from(vec![7_u8; MIN_REQUEST_STATE_KEY_BYTES]);
        assert!(
            Server::builder("t", "1")
                .request_state_key(&key)
                .build()
                .is_ok()
        );
    }
}
