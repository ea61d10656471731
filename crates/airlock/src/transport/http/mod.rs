//! Streamable HTTP: the same sans-I/O engine behind hyper, in both protocol eras.
//!
//! One endpoint, `/mcp`, takes POST (one JSON-RPC message per body) and, for legacy sessions,
//! DELETE and GET. Beside it, `/healthz` and `/readyz` answer probes before any check
//! (`probes`). Before a body is read, a request passes, in order: the `Host` allow-list (DNS
//! rebinding: `421`), the `Origin` allow-list (`403`), the bearer token when one is configured
//! (`401`), the client's request quota (`429`), the media types (`415`, `406`) and the body cap
//! (`413` from `Content-Length` alone, or as soon as a chunked body passes it), then the body
//! budgets (`429` per client, `503` server-wide, before a byte is held). What a web page can
//! make a browser send is its address's page key, apart from the address's own (`clients`);
//! refusals are logged as counts (`refusals`). A CORS
//! preflight leaves that order after `Origin`: it needs no token, takes its address's request
//! quota and is answered by `cors`, which also adds the CORS headers of replies to a listed
//! origin. The head is capped by hyper (`431`), the body must arrive within a timeout (`408`),
//! and connections past `max_connections` get `503` without a task.
//!
//! With a [`Tls`] configuration a connection is HTTPS: its handshake (`tls`) runs between the
//! write watchdog and hyper, under the connection's slot and its first-request deadline.
//!
//! The body then crosses [`envelope::parse`](crate::envelope::parse), the one boundary, once: the message read is
//! handed to the engine as it is (`Engine::handle_message`), never parsed again. The era is
//! decided:
//!
//! - **modern** (2026-07-28): the body's `_meta` names a protocol version, or the
//!   `MCP-Protocol-Version` header is not a legacy one. `MCP-Protocol-Version`, `Mcp-Method`
//!   and (for `tools/call`, `prompts/get` and `resources/read`) `Mcp-Name` must match the body
//!   and come once each (`400` + `-32020`). A fresh engine
//!   handles the one message, runs its call if any, and is dropped: nothing is kept between
//!   requests, so replicas behind any load balancer serve the same.
//! - **legacy** (2025-11-25 and earlier): `initialize` opens a session with an engine of its
//!   own (`session`); every later request names it in `Mcp-Session-Id`.
//!
//! A call's reply is JSON, or an SSE stream (progress notifications, then the reply) when the
//! client accepts `text/event-stream` and sent a `progressToken`. Server-wide, calls share the
//! `max_in_flight` slots; per client, they also need a quota token and one of
//! `client_in_flight` slots (`clients`). Every JSON-RPC refusal is an [`McpError`](crate::error::McpError) written by
//! the response module, and its HTTP status comes from `status`, the one place statuses are
//! decided. What the engine decides (the reply to a message the envelope refused, whether a
//! message counts as invalid) is asked of an engine, one of its own when no session holds
//! the message.
//!
//! The modules, one concern each: `listener` (the accept loop, the connection caps, the
//! sweeper), `connection` (one connection: TLS, hyper's settings, its deadlines), `request`
//! (one request: the boundary's checks, the era, the session, the engine), `caller` (who sent
//! it), `calls` (a call's task and its JSON or SSE reply), `slots` (what a call holds),
//! `reply` (statuses, bodies and verdicts of replies);
//! beside them the checks and state they use (`headers`, `auth`, `cors`, `clients`,
//! `connections`, `session`, `proxies`, `status`, `tls`, `write_timeout`, `body`, `probes`
//! for `/healthz` and `/readyz`, `bodies` for the bytes held in bodies still arriving, `shares` for each client's share of the
//! server-wide call quota, `refusals` for the refusal log's counts), `config` for
//! [`HttpConfig`], and `replicas`, which decides whether quotas, call slots and sessions are
//! counted here or, with `HttpConfig::shared_store` (the `redis` feature), in the store every
//! replica shares (`store`: the one seam, and with `config`'s public items the only module
//! that decides what the `redis` feature compiles; request-path modules hold no `cfg` of it).

mod auth;
mod bodies;
mod body;
mod caller;
mod calls;
mod clients;
mod config;
mod connection;
mod connections;
mod cors;
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;
mod headers;
mod listen;
mod listener;
#[cfg(feature = "oauth")]
mod oauth;
mod probes;
mod proxies;
mod refusals;
mod replicas;
mod reply;
mod request;
mod session;
mod shares;
mod slots;
mod status;
mod store;
mod tls;
mod write_timeout;

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Semaphore;

use crate::engine::Shared;
use crate::limits::HttpLimits;

pub use auth::{TokenError, Tokens};
// `HttpConfig`, and with the `redis` feature the shared store's configuration.
pub use config::*;
pub use headers::{AllowList, OriginError};
#[cfg(feature = "oauth")]
pub use oauth::{JwksSource, JwksUri, METADATA_PATH, OAuth, OAuthError};
pub use probes::{HEALTH_PATH, READY_PATH};
pub use proxies::{Cidr, ProxyHeader, TrustedProxies};
pub use tls::{Tls, TlsError};

pub(crate) use listener::serve;

use clients::Clients;
use connections::Connections;
use session::Sessions;

/// The one MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// What every request of one server shares.
struct State {
    shared: Arc<Shared>,
    allow: AllowList,
    tokens: Tokens,
    limits: HttpLimits,
    proxies: TrustedProxies,
    tls: Option<Tls>,
    #[cfg(feature = "oauth")]
    oauth: Option<oauth::Verifier>,
    clients: Arc<Clients>,
    /// Bytes held in bodies still arriving.
    bodies: Arc<bodies::Bodies>,
    /// Shares of the server-wide call quota among clients.
    shares: shares::Shares,
    /// Refusals counted for the log.
    refusals: refusals::Refusals,
    sessions: Sessions,
    /// Server-wide call slots (`max_in_flight`).
    calls: Arc<Semaphore>,
    connections: Arc<Connections>,
    /// The store every replica counts in, when one is configured (never without the
    /// `redis` feature).
    store: Option<store::Store>,
}

impl State {
    /// Whether the shared store is down under the fail-closed policy: every call it would
    /// count is refused (`/readyz` says not ready). Never without a store.
    fn store_refuses_calls(&self) -> bool {
        self.store.as_ref().is_some_and(store::Store::refuses_calls)
    }

    /// The state of a server of `shared` configured by `config`, counting in this process:
    /// no session, client or connection yet.
    #[cfg(any(test, fuzzing))]
    fn new(shared: Arc<Shared>, config: HttpConfig) -> Arc<Self> {
        Self::with_store(shared, config, None)
    }

    /// The same, counting in `store` when there is one (started from `config`'s, which the
    /// listener has taken out).
    fn with_store(
        shared: Arc<Shared>,
        config: HttpConfig,
        store: Option<store::Store>,
    ) -> Arc<Self> {
        let HttpConfig {
            allow,
            tokens,
            limits,
            proxies,
            tls,
            #[cfg(feature = "oauth")]
            oauth,
            // The store's configuration: taken out already (`store` is what it started).
            ..
        } = config;
        #[cfg(feature = "oauth")]
        let oauth = oauth.map(|oauth| oauth::Verifier::new(oauth, shared.registry().scopes()));
        if store.is_some() {
            // The transport charges the server's quotas in the store before the engine.
            shared.quotas.delegate();
        }
        Arc::new(Self {
            #[cfg(feature = "oauth")]
            oauth,
            calls: Arc::new(Semaphore::new(shared.limits().max_in_flight.get())),
            clients: Arc::new(Clients::new(
                &limits,
                shared.limits().max_consecutive_errors.get(),
            )),
            refusals: refusals::Refusals::new(),
            shares: shares::Shares::new(
                shared.limits().tool_call_rate,
                limits.max_tracked_clients.get(),
            ),
            bodies: bodies::Bodies::new(
                limits.max_body_bytes_held.get(),
                limits.max_client_body_bytes_held.get(),
            ),
            sessions: Sessions::new(
                limits.max_sessions.get(),
                limits.max_sessions_per_client.get(),
                limits.session_idle_timeout,
            ),
            connections: Connections::new(
                limits.max_connections.get(),
                limits.max_connections_per_address.get(),
            ),
            allow,
            tokens,
            limits,
            proxies,
            tls,
            shared,
            store,
        })
    }
}

impl State {
    /// Whether OAuth access tokens are accepted.
    fn oauth_on(&self) -> bool {
        #[cfg(feature = "oauth")]
        return self.oauth.is_some();
        #[cfg(not(feature = "oauth"))]
        false
    }
}

/// What a reply says of its request, for the cut-off; a reply without one is
/// [`Verdict::Valid`].
pub(crate) use clients::Verdict;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
