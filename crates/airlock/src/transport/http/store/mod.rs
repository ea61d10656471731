//! The shared store behind one seam: what the request path asks of the counts every replica
//! of a deployment shares (quotas, in-flight leases, legacy sessions), and the one place the
//! `redis` feature is decided.
//!
//! Trusts the request path's checked values (a client's key, a registered tool's name, a
//! session id; keys are rendered only from those). Owns the choice of implementation and the
//! types the request path speaks in:
//!
//! - [`Store`], an enum with one variant per implementation: `Redis` (`redis`, with the
//!   feature) and none other. Without the feature it has no variant at all, so a
//!   `Option<Store>` is always `None`, the compiler proves that no store code runs, and the
//!   callers (`replicas`) compile the same lines either way. An enum rather than a `dyn`
//!   trait: the operations are `async`, and a trait object would box each call's future (an
//!   allocation per request on the hot path) for a choice made once at start.
//! - **The local implementation** is the counting this process already does without a store
//!   (`clients`, the server's semaphore, the engine's quotas, `session`): `replicas` falls
//!   back to it when there is no store, or when the store is unreachable and the operator
//!   chose local limits. Its counts are bounded and keyed as their modules say, so it is not
//!   rebuilt behind the store's key space.
//! - the typed names of what is counted, [`QuotaKey`] and [`LeaseKey`] (the Redis
//!   implementation renders them, and session ids, as keys: `keys`), [`SessionState`] (what a
//!   replica needs to take a session over; the Redis implementation keeps it as a versioned
//!   record: `record`), [`Refused`] and the held [`Lease`].
//!
//! Every operation answers `None` when the store cannot be reached; what then happens (fail
//! closed, or local limits) is the caller's to apply, by [`Store::fails_closed`].

#[cfg(feature = "redis")]
mod keys;
#[cfg(feature = "redis")]
mod record;
#[cfg(feature = "redis")]
mod redis;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::asking::ClientCan;
use crate::limits::Rate;
use crate::version::ProtocolVersion;

use super::clients::ClientKey;

#[cfg(feature = "redis")]
pub use redis::{SharedStore, StoreError, Unreachable};

/// The configuration of a shared store: [`SharedStore`] with the `redis` feature; without
/// it there is none to give.
#[cfg(feature = "redis")]
pub(super) type Config = SharedStore;
/// The configuration of a shared store: without the `redis` feature, none can be given.
#[cfg(not(feature = "redis"))]
pub(super) enum Config {}

/// A running shared store.
pub(super) enum Store {
    /// Redis, counted by every replica that uses the same server and namespace.
    #[cfg(feature = "redis")]
    Redis(Arc<redis::Store>),
}

/// The leases of one running call in the shared store: renewed while held, released when
/// dropped.
pub(super) enum Lease {
    /// Leases in Redis, released when dropped.
    #[cfg(feature = "redis")]
    Redis { _held: redis::Lease },
}

/// A quota the shared store counts (its GCRA state).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(feature = "redis"),
    expect(dead_code, reason = "read only by the Redis store's keys")
)]
pub(super) enum QuotaKey<'a> {
    /// A client's requests, whatever they carry.
    ClientRequests(&'a ClientKey),
    /// The server's requests other than `tools/call`.
    CheapMethods,
    /// A client's `tools/call`s.
    ClientCalls(&'a ClientKey),
    /// A registered tool's calls (only a registered tool's own name).
    Tool(&'a str),
    /// The server's `tools/call`s.
    ServerCalls,
}

/// A cap on calls in flight the shared store counts (its leases).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(feature = "redis"),
    expect(dead_code, reason = "read only by the Redis store's keys")
)]
pub(super) enum LeaseKey<'a> {
    /// The server's calls in flight (`max_in_flight`).
    ServerCalls,
    /// A client's calls in flight (`client_in_flight`).
    Client(&'a ClientKey),
}

/// A refusal by the shared counts.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[cfg_attr(
    not(feature = "redis"),
    expect(dead_code, reason = "made only by the Redis store")
)]
pub(super) enum Refused {
    /// A quota refused; retry after this.
    Quota { retry_after_ms: u64 },
    /// Lease number `index` (from 0, in the order given) is at its cap.
    Full { index: usize },
}

/// What the shared store keeps of a legacy session: enough for any replica to take it over.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(super) struct SessionState {
    /// The negotiated protocol version.
    pub(super) protocol: ProtocolVersion,
    /// Whether the handshake was confirmed (`notifications/initialized`).
    pub(super) confirmed: bool,
    /// The identity that opened it (a token's variable name), if any.
    pub(super) identity: Option<Arc<str>>,
    /// What the client declared in `initialize` it can answer (elicitation, sampling, roots):
    /// a replica that takes the session over asks it what the opening replica could.
    pub(super) client_can: ClientCan,
}

#[cfg_attr(
    not(feature = "redis"),
    expect(unused_variables, reason = "without a store no operation runs")
)]
impl Store {
    /// The running store of `config`, if one is configured.
    ///
    /// # Errors
    ///
    /// A configuration the store refuses (logged at `error`, without the URL).
    pub(super) async fn start(config: Option<Config>) -> io::Result<Option<Self>> {
        let Some(config) = config else {
            return Ok(None);
        };
        #[cfg(feature = "redis")]
        {
            let store = redis::Store::start(config).await.map_err(|error| {
                tracing::error!(%error, "the shared quota store cannot be used");
                io::Error::other("shared quota store refused")
            })?;
            Ok(Some(Self::Redis(store)))
        }
        #[cfg(not(feature = "redis"))]
        match config {}
    }

    /// Counts the store's operations in `metrics` from now on.
    #[cfg(feature = "metrics")]
    pub(super) fn count_in(&self, metrics: &Arc<crate::metrics::Metrics>) {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => store.count_in(metrics),
        }
    }

    /// Whether an unreachable store refuses what it would have counted (`-31503`), rather
    /// than leaving it to this replica's local counts.
    pub(super) fn fails_closed(&self) -> bool {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => matches!(store.unreachable, Unreachable::FailClosed),
        }
    }

    /// Whether the store is down and fails closed: every call it would count is refused, so
    /// the replica is not ready to serve (`/readyz`).
    pub(super) fn refuses_calls(&self) -> bool {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => store.refuses_calls(),
        }
    }

    /// Checks `quotas` and takes `leases` (each with its cap), all or nothing.
    ///
    /// `None`: the store is unreachable. `Some(Ok(lease))`: admitted, holding the leases
    /// (none when `leases` is empty). `Some(Err(_))`: refused by the shared counts.
    pub(super) async fn admit(
        &self,
        quotas: &[(QuotaKey<'_>, Rate)],
        leases: &[(LeaseKey<'_>, usize)],
    ) -> Option<Result<Option<Lease>, Refused>> {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => {
                let admitted = store.admit(quotas, leases).await?;
                Some(admitted.map(|lease| lease.map(|held| Lease::Redis { _held: held })))
            }
        }
    }

    /// Records session `id`, new, for `idle`. `None`: unreachable; `Some(false)`: taken.
    pub(super) async fn session_open(
        &self,
        id: &str,
        state: &SessionState,
        idle: Duration,
    ) -> Option<bool> {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => store.session_open(id, state, idle).await,
        }
    }

    /// Rewrites what the store keeps of live session `id` (its handshake moved on).
    /// `None`: unreachable (or no such session).
    pub(super) async fn session_update(
        &self,
        id: &str,
        state: &SessionState,
        idle: Duration,
    ) -> Option<()> {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => store.session_update(id, state, idle).await,
        }
    }

    /// What the store keeps of session `id`, its idle timer restarted if `identity` opened
    /// it (another identity's request, refused, must not keep it alive). `None`:
    /// unreachable; `Some(None)`: no such session (or none this server can read).
    pub(super) async fn session_touch(
        &self,
        id: &str,
        idle: Duration,
        identity: Option<&Arc<str>>,
    ) -> Option<Option<SessionState>> {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => store.session_touch(id, idle, identity).await,
        }
    }

    /// Whether session `id` is in the store, its idle timer untouched. `None`: unreachable.
    pub(super) async fn session_exists(&self, id: &str) -> Option<bool> {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => store.session_exists(id).await,
        }
    }

    /// Forgets session `id`. `None`: unreachable.
    pub(super) async fn session_close(&self, id: &str) -> Option<()> {
        match *self {
            #[cfg(feature = "redis")]
            Self::Redis(ref store) => store.session_close(id).await,
        }
    }
}
