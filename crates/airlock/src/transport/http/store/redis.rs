//! The shared store (Redis): quotas, in-flight leases and legacy sessions that every replica
//! of one deployment counts together.
//!
//! Trusts: the operator's URL and namespace; of Redis, only the shapes its scripts return (a
//! reply of another shape is a failure, never a panic, and never reaches the wire). Owns the
//! connections (a few multiplexed, reconnecting ones), the scripts, the store's health and
//! the policy when it is unreachable (which `replicas` applies). Every key is rendered by a
//! typed key of `keys`; a session's value is a versioned record of `record`.
//!
//! - **Quotas** are GCRA, as `governor` computes them (`quota`): per quota, a theoretical
//!   arrival time in microseconds of the store's own clock (`TIME`, so replicas' clocks do
//!   not matter), emission interval `60 s / per_minute`, tolerance `(burst - 1)` intervals;
//!   a refusal's wait is `tat - tolerance - now`, rounded up to milliseconds as `quota` does.
//!   One script checks every quota of a request and charges them only if all admit it.
//!   Each key expires when its state is that of a fresh client, so nothing accumulates.
//! - **In-flight caps** are leases: a sorted set per cap, one member per running call, scored
//!   by its expiry. The same script takes the leases with the quotas, after dropping expired
//!   members; the replica renews its leases every third of their expiry and removes them when
//!   the call ends. A replica that dies stops renewing, and its leases lapse.
//! - **Legacy sessions** are one key each (`s:<id>`, only for ids of the form this server
//!   makes), holding a record (`record`, format 2): the negotiated version, whether the
//!   handshake was confirmed, what the client declared in `initialize` it can answer, the
//!   identity that opened it. A record this replica does not read (an unknown format, or
//!   malformed) is no session. It expires after
//!   the idle timeout, renewed on every use by that identity (never by another's refused
//!   request), and is deleted on `DELETE`. A replica that does not hold a session builds its
//!   engine from this record.
//!
//! Every call runs under [`STORE_CALL_TIMEOUT`]. A failure or timeout marks the store down
//! (one `warn` line); while it is down, one request per [`STORE_RETRY_INTERVAL`] tries it
//! (every connection must answer a `PING` first, so that none still reconnecting fails the
//! next request) and the others go straight to the policy: fail closed (`-31503`, `503`) or
//! local limits. The first success after that logs one `info` line. The URL (which may hold a password) is a
//! [`SecretString`] and is never logged; Redis's error texts are never logged either, only
//! their kind.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisResult, Script};
use secrecy::{ExposeSecret, SecretString};
use tokio::task::AbortHandle;

use crate::limits::{
    MAX_STORE_NAMESPACE_BYTES, Rate, STORE_CALL_TIMEOUT, STORE_CONNECTIONS, STORE_LEASE_TTL,
    STORE_LEASE_TTL_RANGE, STORE_RETRY_INTERVAL,
};
use crate::quota::millis_rounded_up;

use super::super::lock;
use super::keys::{Namespace, SessionKey};
use super::record::SessionRecord;
use super::{LeaseKey, QuotaKey, Refused, SessionState};

/// Checks quotas (GCRA) and takes leases, all or nothing.
///
/// KEYS: the quotas' keys, then the leases'. ARGV: the number of quotas, the number of
/// leases, then per quota its interval and tolerance (µs), per lease its cap, then the
/// lease expiry (ms) and the lease's member. Returns `{0, 0, 0}` when admitted, `{1, i, wait
/// µs}` when quota `i` refuses, `{2, j, 0}` when lease `j` is at its cap.
const ADMIT: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local quotas = tonumber(ARGV[1])
local leases = tonumber(ARGV[2])
local next_tat = {}
for i = 1, quotas do
  local interval = tonumber(ARGV[1 + 2 * i])
  local tolerance = tonumber(ARGV[2 + 2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '') or now
  local earliest = tat - tolerance
  if now < earliest then
    return {1, i, earliest - now}
  end
  next_tat[i] = math.max(tat, now) + interval
end
local base = 3 + 2 * quotas
local expiry = tonumber(ARGV[base + leases])
local member = ARGV[base + leases + 1]
local now_ms = math.floor(now / 1000)
for j = 1, leases do
  local key = KEYS[quotas + j]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms)
  if redis.call('ZCARD', key) >= tonumber(ARGV[base + j - 1]) then
    return {2, j, 0}
  end
end
for i = 1, quotas do
  local ttl = math.floor((next_tat[i] - now) / 1000) + 1
  redis.call('SET', KEYS[i], string.format('%.0f', next_tat[i]), 'PX', ttl)
end
for j = 1, leases do
  redis.call('ZADD', KEYS[quotas + j], now_ms + expiry, member)
  redis.call('PEXPIRE', KEYS[quotas + j], expiry)
end
return {0, 0, 0}
";

/// Renews one call's leases. KEYS: the leases' keys; ARGV: the expiry (ms), the member.
const RENEW: &str = r"
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local expiry = tonumber(ARGV[1])
for j = 1, #KEYS do
  if redis.call('ZADD', KEYS[j], 'XX', 'CH', now_ms + expiry, ARGV[2]) == 1 then
    redis.call('PEXPIRE', KEYS[j], expiry)
  end
end
return 0
";

/// Reads a session's record, restarting its idle timer only if it is the caller's: the last
/// field of a record is its identity (without spaces). KEYS: the session's key; ARGV: the
/// idle timeout (ms), the caller's identity (`-` for none). Returns the record, or nil.
const TOUCH: &str = r"
local record = redis.call('GET', KEYS[1])
if not record then
  return false
end
local owner = ' ' .. ARGV[2]
if string.sub(record, -string.len(owner)) == owner then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return record
";

/// Releases one call's leases. KEYS: the leases' keys; ARGV: the member.
const RELEASE: &str = r"
for j = 1, #KEYS do
  redis.call('ZREM', KEYS[j], ARGV[1])
end
return 0
";

/// What a server does while its shared store cannot be reached.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum Unreachable {
    /// Refuse what the store would have counted: `-31503` (`503`). The default: limits that
    /// silently become N times looser are not limits.
    #[default]
    FailClosed,
    /// Count in this replica's memory instead (each replica then admits the configured
    /// rates on its own), until the store answers again.
    LocalLimits,
}

/// Why a shared store configuration was refused. The URL is never shown.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Not a URL the Redis client takes (`redis://[user:password@]host[:port][/db]`, or
    /// `redis+unix://` / `unix://` with a socket path).
    #[error(
        "the shared store URL is not a redis://, redis+unix:// or unix:// URL (it is not shown)"
    )]
    Url,
    /// Not 1 to 64 bytes of `[A-Za-z0-9_.-]`.
    #[error("the shared store namespace must be 1 to 64 bytes of A-Z a-z 0-9 _ . -")]
    Namespace,
    /// Outside [`STORE_LEASE_TTL_RANGE`].
    #[error("the lease expiry must be between 1 second and 1 hour")]
    LeaseTtl,
}

/// Where every replica of one deployment counts its quotas, in-flight calls and legacy
/// sessions: a Redis server, keys under one namespace.
pub struct SharedStore {
    url: SecretString,
    namespace: String,
    unreachable: Unreachable,
    lease_ttl: Duration,
}

impl SharedStore {
    /// A Redis store at `url` (from the environment: it may hold a password), its keys under
    /// `namespace`; failing closed, with leases of [`STORE_LEASE_TTL`].
    ///
    /// # Errors
    ///
    /// [`StoreError::Url`], [`StoreError::Namespace`].
    pub fn redis(url: SecretString, namespace: &str) -> Result<Self, StoreError> {
        let valid_namespace = !namespace.is_empty()
            && namespace.len() <= MAX_STORE_NAMESPACE_BYTES
            && namespace
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"_.-".contains(&byte));
        if !valid_namespace {
            return Err(StoreError::Namespace);
        }
        let scheme_known = ["redis://", "redis+unix://", "unix://"]
            .iter()
            .any(|scheme| url.expose_secret().starts_with(scheme));
        if !scheme_known || redis::Client::open(url.expose_secret()).is_err() {
            return Err(StoreError::Url);
        }
        Ok(Self {
            url,
            namespace: namespace.to_owned(),
            unreachable: Unreachable::FailClosed,
            lease_ttl: STORE_LEASE_TTL,
        })
    }

    /// The same, doing `policy` while the store is unreachable.
    #[must_use]
    pub fn when_unreachable(mut self, policy: Unreachable) -> Self {
        self.unreachable = policy;
        self
    }

    /// The same, with in-flight leases expiring `ttl` after their last renewal.
    ///
    /// # Errors
    ///
    /// [`StoreError::LeaseTtl`] outside [`STORE_LEASE_TTL_RANGE`].
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Result<Self, StoreError> {
        let (min, max) = STORE_LEASE_TTL_RANGE;
        if ttl < min || ttl > max {
            return Err(StoreError::LeaseTtl);
        }
        self.lease_ttl = ttl;
        Ok(self)
    }
}

impl fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedStore")
            .field("url", &"[redacted]")
            .field("namespace", &self.namespace)
            .field("unreachable", &self.unreachable)
            .field("lease_ttl", &self.lease_ttl)
            .finish()
    }
}

/// What the store is asked, as the metrics name it.
#[derive(Clone, Copy, Debug)]
enum Operation {
    /// The health check on each connection, every `STORE_RETRY_INTERVAL`.
    Ping,
    Admit,
    LeaseRenew,
    LeaseRelease,
    SessionOpen,
    SessionUpdate,
    SessionTouch,
    SessionExists,
    SessionClose,
}

impl Operation {
    /// Every operation's label, in [`Operation::index`] order.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "labels of the metrics")
    )]
    const NAMES: [&'static str; 9] = [
        "ping",
        "admit",
        "lease_renew",
        "lease_release",
        "session_open",
        "session_update",
        "session_touch",
        "session_exists",
        "session_close",
    ];

    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "an index of the metrics")
    )]
    fn index(self) -> usize {
        match self {
            Self::Ping => 0,
            Self::Admit => 1,
            Self::LeaseRenew => 2,
            Self::LeaseRelease => 3,
            Self::SessionOpen => 4,
            Self::SessionUpdate => 5,
            Self::SessionTouch => 6,
            Self::SessionExists => 7,
            Self::SessionClose => 8,
        }
    }
}

/// How an operation went unanswered (`metrics::STORE_FAILURES` in order).
#[derive(Clone, Copy, Debug)]
enum Failure {
    Error,
    Timeout,
    Down,
}

impl Failure {
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "an index of the metrics")
    )]
    fn index(self) -> usize {
        match self {
            Self::Error => 0,
            Self::Timeout => 1,
            Self::Down => 2,
        }
    }
}

/// The store of one running server.
pub(crate) struct Store {
    /// The first connection (slot 0); `more` holds the others. One whose call failed is
    /// replaced by a new one: dropping it closes its socket, so what Redis was still sending
    /// on it (an endless reply, say) is neither kept nor read any further.
    first: Mutex<ConnectionManager>,
    more: Vec<Mutex<ConnectionManager>>,
    client: redis::Client,
    settings: ConnectionManagerConfig,
    next: AtomicUsize,
    namespace: Namespace,
    pub(super) unreachable: Unreachable,
    lease_ttl: Duration,
    admit: Script,
    renew: Script,
    release: Script,
    touch: Script,
    /// This replica's name in lease members: random, so replicas never collide.
    replica: String,
    serial: AtomicU64,
    started: Instant,
    down: AtomicBool,
    /// When (ms since `started`) a request may try the store again while it is down.
    retry_at: AtomicU64,
    /// Where operations are counted, once set.
    #[cfg(feature = "metrics")]
    metrics: std::sync::OnceLock<Arc<crate::metrics::Metrics>>,
}

impl Store {
    /// The running store of `config`: connections are made lazily (a store down at start is
    /// like one that went down later), and one `PING` says at start whether it answers.
    pub(super) async fn start(config: SharedStore) -> Result<Arc<Self>, StoreError> {
        let client =
            redis::Client::open(config.url.expose_secret()).map_err(|_| StoreError::Url)?;
        let settings = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(STORE_CALL_TIMEOUT))
            .set_response_timeout(Some(STORE_CALL_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(STORE_RETRY_INTERVAL);
        let connect = || {
            ConnectionManager::new_lazy_with_config(client.clone(), settings.clone())
                .map_err(|_| StoreError::Url)
        };
        let first = Mutex::new(connect()?);
        let more = (1..STORE_CONNECTIONS)
            .map(|_| connect().map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        let store = Arc::new(Self {
            first,
            more,
            client,
            settings,
            next: AtomicUsize::new(0),
            namespace: Namespace::new(&config.namespace),
            unreachable: config.unreachable,
            lease_ttl: config.lease_ttl,
            admit: Script::new(ADMIT),
            renew: Script::new(RENEW),
            release: Script::new(RELEASE),
            touch: Script::new(TOUCH),
            replica: random_hex(8).unwrap_or_else(|| format!("{}", std::process::id())),
            serial: AtomicU64::new(0),
            started: Instant::now(),
            down: AtomicBool::new(false),
            retry_at: AtomicU64::new(0),
            #[cfg(feature = "metrics")]
            metrics: std::sync::OnceLock::new(),
        });
        let (slot, mut connection) = store.connection();
        let ping = redis::cmd("PING");
        let answered: Option<String> = store
            .guarded(Operation::Ping, slot, ping.query_async(&mut connection))
            .await;
        if answered.is_some() {
            tracing::info!(
                namespace = config.namespace.as_str(),
                "shared quota store (Redis) answers: quotas, in-flight caps and legacy \
                 sessions are shared by every replica"
            );
        }
        drop(tokio::spawn(Self::keep(Arc::downgrade(&store))));
        Ok(store)
    }

    /// Every [`STORE_RETRY_INTERVAL`], a `PING` on each connection under the call time-out;
    /// one that does not answer is replaced. A failed call replaces its connection, but an
    /// idle server makes no call: without this, Redis sending what no one asked for (an
    /// endless reply to no request) would be read, and kept, for as long as it sent it.
    /// The store's health follows: down when no connection answered (an idle replica's
    /// `/readyz` must not wait for a request to fail), up again when every one did.
    /// Ends with the store.
    async fn keep(store: Weak<Self>) {
        loop {
            tokio::time::sleep(STORE_RETRY_INTERVAL).await;
            let Some(store) = store.upgrade() else {
                return;
            };
            let mut answered = 0_usize;
            for slot in 0..=store.more.len() {
                let mut connection = lock(store.held(slot)).clone();
                let ping = redis::cmd("PING");
                let started = Instant::now();
                let pong = tokio::time::timeout(
                    STORE_CALL_TIMEOUT,
                    ping.query_async::<String>(&mut connection),
                );
                let failure = match pong.await {
                    Ok(Ok(_)) => None,
                    Ok(Err(_)) => Some(Failure::Error),
                    Err(_elapsed) => Some(Failure::Timeout),
                };
                if let Some(failure) = failure {
                    tracing::debug!("a shared store connection did not answer; replaced");
                    store.replace(slot);
                    store.counted(Operation::Ping, failure);
                } else {
                    answered = answered.saturating_add(1);
                    store.answered(Operation::Ping, started.elapsed());
                }
            }
            if answered == 0 {
                store.failed(None);
            } else if answered > store.more.len() && store.down.swap(false, Ordering::AcqRel) {
                tracing::info!("the shared quota store answers again: shared limits apply");
            }
        }
    }

    /// The next connection, round robin, with its slot (a clone is a handle on the same
    /// connection).
    fn connection(&self) -> (usize, ConnectionManager) {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = turn
            .checked_rem(self.more.len().saturating_add(1))
            .unwrap_or(0);
        (slot, lock(self.held(slot)).clone())
    }

    /// The connection of `slot` (0 is `first`).
    fn held(&self, slot: usize) -> &Mutex<ConnectionManager> {
        slot.checked_sub(1)
            .and_then(|index| self.more.get(index))
            .unwrap_or(&self.first)
    }

    /// Replaces the connection in `slot` after a failed call on it: the old one is dropped
    /// (and its socket closed) once the calls still holding it give it up, within their
    /// timeout. Without this, a reply that never ends would be read and kept for ever.
    fn replace(&self, slot: usize) {
        let fresh =
            ConnectionManager::new_lazy_with_config(self.client.clone(), self.settings.clone());
        if let Ok(fresh) = fresh {
            drop(std::mem::replace(&mut *lock(self.held(slot)), fresh));
        }
    }

    /// Every slot, as [`Store::replace`] does it for one.
    fn replace_all(&self) {
        for slot in 0..=self.more.len() {
            self.replace(slot);
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs `operation` under the timeout, keeping the store's health; `None` when the store
    /// is down (now, or still within its retry interval).
    async fn guarded<T>(
        &self,
        what: Operation,
        slot: usize,
        operation: impl Future<Output = RedisResult<T>>,
    ) -> Option<T> {
        if self.down.load(Ordering::Acquire) {
            let now = self.now_ms();
            let retry_at = self.retry_at.load(Ordering::Acquire);
            let next = now.saturating_add(millis(STORE_RETRY_INTERVAL));
            // One request per interval tries; the others do not wait for a timeout.
            if now < retry_at
                || self
                    .retry_at
                    .compare_exchange(retry_at, next, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                self.counted(what, Failure::Down);
                return None;
            }
            // Every connection must answer before the store counts as back: one that has not
            // reconnected yet would fail the next request and mark it down again.
            let probe = tokio::time::timeout(STORE_CALL_TIMEOUT, self.every_connection_answers());
            match probe.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    self.replace_all();
                    self.failed(Some(error.kind()));
                    self.counted(what, Failure::Error);
                    return None;
                }
                Err(_elapsed) => {
                    self.replace_all();
                    self.failed(None);
                    self.counted(what, Failure::Timeout);
                    return None;
                }
            }
        }
        let started = Instant::now();
        let outcome = tokio::time::timeout(STORE_CALL_TIMEOUT, operation).await;
        match outcome {
            Ok(Ok(value)) => {
                if self.down.swap(false, Ordering::AcqRel) {
                    tracing::info!("the shared quota store answers again: shared limits apply");
                }
                self.answered(what, started.elapsed());
                Some(value)
            }
            Ok(Err(error)) => {
                self.replace(slot);
                self.failed(Some(error.kind()));
                self.counted(what, Failure::Error);
                None
            }
            Err(_elapsed) => {
                self.replace(slot);
                self.failed(None);
                self.counted(what, Failure::Timeout);
                None
            }
        }
    }

    /// Where this store's operations are counted (the metrics feature): set once, after
    /// start; operations before it are not counted.
    #[cfg(feature = "metrics")]
    pub(super) fn count_in(&self, metrics: &Arc<crate::metrics::Metrics>) {
        if self.metrics.set(Arc::clone(metrics)).is_ok() {
            metrics.count_store(&Operation::NAMES);
        }
    }

    /// Counts one operation the store answered, after `took`.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(unused_variables, reason = "counted only with metrics")
    )]
    fn answered(&self, what: Operation, took: Duration) {
        #[cfg(feature = "metrics")]
        if let Some(metrics) = self.metrics.get() {
            metrics.store_answered(what.index(), took);
        }
    }

    /// Counts one operation the store did not answer.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(unused_variables, reason = "counted only with metrics")
    )]
    fn counted(&self, what: Operation, failure: Failure) {
        #[cfg(feature = "metrics")]
        if let Some(metrics) = self.metrics.get() {
            metrics.store_failed(what.index(), failure.index());
        }
    }

    /// Whether the store is down and its policy is to fail closed: every request it would
    /// count is refused, so the replica is not ready to serve (`/readyz`).
    pub(super) fn refuses_calls(&self) -> bool {
        matches!(self.unreachable, Unreachable::FailClosed) && self.down.load(Ordering::Acquire)
    }

    /// `PING` on each connection in turn.
    async fn every_connection_answers(&self) -> RedisResult<()> {
        for held in std::iter::once(&self.first).chain(&self.more) {
            let mut connection = lock(held).clone();
            let _pong: String = redis::cmd("PING").query_async(&mut connection).await?;
        }
        Ok(())
    }

    fn failed(&self, kind: Option<redis::ErrorKind>) {
        let retry_at = self.now_ms().saturating_add(millis(STORE_RETRY_INTERVAL));
        self.retry_at.store(retry_at, Ordering::Release);
        // Only the kind: an error's text may quote the server or the connection.
        tracing::debug!(kind = ?kind, timed_out = kind.is_none(), "shared store call failed");
        if !self.down.swap(true, Ordering::AcqRel) {
            let policy = match self.unreachable {
                Unreachable::FailClosed => "requests it would count are refused (-31503)",
                Unreachable::LocalLimits => "each replica applies its local limits",
            };
            tracing::warn!(
                policy,
                "the shared quota store is unreachable; until it answers again, {policy}"
            );
        }
    }

    /// Checks `quotas` and takes `leases` (each with its cap), all or nothing.
    ///
    /// `None`: the store is unreachable. `Some(Ok(lease))`: admitted, holding the leases
    /// (none when `leases` is empty). `Some(Err(_))`: refused by the shared counts.
    ///
    /// With leases, the check runs in a task of its own: a request dropped while it waits
    /// (its client hung up) must not lose leases Redis has already granted. The task's
    /// `Lease` is then dropped, which releases them.
    pub(super) async fn admit(
        self: &Arc<Self>,
        quotas: &[(QuotaKey<'_>, Rate)],
        leases: &[(LeaseKey<'_>, usize)],
    ) -> Option<Result<Option<Lease>, Refused>> {
        let quotas: Vec<(String, Rate)> = quotas
            .iter()
            .map(|(key, rate)| (key.render(&self.namespace), *rate))
            .collect();
        let leases: Vec<(String, usize)> = leases
            .iter()
            .map(|(key, cap)| (key.render(&self.namespace), *cap))
            .collect();
        if leases.is_empty() {
            return self.admit_here(&quotas, &leases).await;
        }
        let store = Arc::clone(self);
        tokio::spawn(async move { store.admit_here(&quotas, &leases).await })
            .await
            .ok()
            .flatten()
    }

    async fn admit_here(
        self: &Arc<Self>,
        quotas: &[(String, Rate)],
        leases: &[(String, usize)],
    ) -> Option<Result<Option<Lease>, Refused>> {
        let member = format!(
            "{}-{}",
            self.replica,
            self.serial.fetch_add(1, Ordering::Relaxed)
        );
        let mut invocation = self.admit.prepare_invoke();
        invocation.arg(quotas.len()).arg(leases.len());
        for (key, _) in quotas {
            invocation.key(key);
        }
        for (key, _) in leases {
            invocation.key(key);
        }
        for (_, rate) in quotas {
            let (interval, tolerance) = gcra(*rate);
            invocation.arg(interval).arg(tolerance);
        }
        for (_, cap) in leases {
            invocation.arg(*cap);
        }
        invocation.arg(millis(self.lease_ttl)).arg(&member);
        let (slot, mut connection) = self.connection();
        let reply: (i64, i64, i64) = self
            .guarded(
                Operation::Admit,
                slot,
                invocation.invoke_async(&mut connection),
            )
            .await?;
        let refused = |index: i64, count: usize| {
            usize::try_from(index)
                .ok()
                .and_then(|index| index.checked_sub(1))
                .filter(|index| *index < count)
        };
        match reply {
            (0, _, _) if leases.is_empty() => Some(Ok(None)),
            (0, _, _) => Some(Ok(Some(Lease::hold(
                Arc::clone(self),
                leases.iter().map(|(key, _)| key.clone()).collect(),
                member,
            )))),
            (1, index, wait)
                if let Some((_, rate)) =
                    refused(index, quotas.len()).and_then(|index| quotas.get(index)) =>
            {
                Some(Err(Refused::Quota {
                    retry_after_ms: millis_rounded_up(quota_wait(wait, *rate)),
                }))
            }
            (2, index, _) if let Some(index) = refused(index, leases.len()) => {
                Some(Err(Refused::Full { index }))
            }
            _ => {
                tracing::error!("the shared store's admission script gave an unknown answer");
                None
            }
        }
    }

    async fn renew_lease(&self, keys: &[String], member: &str) {
        let mut invocation = self.renew.prepare_invoke();
        for key in keys {
            invocation.key(key);
        }
        invocation.arg(millis(self.lease_ttl)).arg(member);
        let (slot, mut connection) = self.connection();
        let renewed: Option<i64> = self
            .guarded(
                Operation::LeaseRenew,
                slot,
                invocation.invoke_async(&mut connection),
            )
            .await;
        if renewed.is_none() {
            tracing::debug!("a lease could not be renewed; it lapses unless a renewal succeeds");
        }
    }

    async fn release_lease(&self, keys: &[String], member: &str) {
        let mut invocation = self.release.prepare_invoke();
        for key in keys {
            invocation.key(key);
        }
        invocation.arg(member);
        let (slot, mut connection) = self.connection();
        let released: Option<i64> = self
            .guarded(
                Operation::LeaseRelease,
                slot,
                invocation.invoke_async(&mut connection),
            )
            .await;
        if released.is_none() {
            tracing::debug!("a lease could not be released; it lapses at its expiry");
        }
    }

    /// The key of session `id`, if `id` has the form of the ids this server makes.
    fn session_key(&self, id: &str) -> Option<String> {
        SessionKey::of(id).map(|key| key.render(&self.namespace))
    }

    /// Records session `id`, new, for `idle`. `None`: unreachable; `Some(false)`: taken.
    pub(super) async fn session_open(
        &self,
        id: &str,
        state: &SessionState,
        idle: Duration,
    ) -> Option<bool> {
        let key = self.session_key(id)?;
        let record = SessionRecord::current(state.clone());
        let mut command = redis::cmd("SET");
        command
            .arg(key)
            .arg(record.encode())
            .arg("PX")
            .arg(millis(idle).max(1))
            .arg("NX");
        let (slot, mut connection) = self.connection();
        let set: Option<Option<String>> = self
            .guarded(
                Operation::SessionOpen,
                slot,
                command.query_async(&mut connection),
            )
            .await;
        set.map(|reply| reply.is_some())
    }

    /// Rewrites the record of live session `id` (its handshake moved on), in the current
    /// format whatever the format it was read in.
    pub(super) async fn session_update(
        &self,
        id: &str,
        state: &SessionState,
        idle: Duration,
    ) -> Option<()> {
        let key = self.session_key(id)?;
        let record = SessionRecord::current(state.clone());
        let mut command = redis::cmd("SET");
        command
            .arg(key)
            .arg(record.encode())
            .arg("PX")
            .arg(millis(idle).max(1))
            .arg("XX");
        let (slot, mut connection) = self.connection();
        let _set: Option<String> = self
            .guarded(
                Operation::SessionUpdate,
                slot,
                command.query_async(&mut connection),
            )
            .await?;
        Some(())
    }

    /// The record of session `id`, its idle timer restarted if `identity` opened it (another
    /// identity's request, refused, must not keep it alive). `None`: unreachable;
    /// `Some(None)`: no such session, or a record this server does not read (`record`: an
    /// unknown format or a malformed one), which is no session either.
    pub(super) async fn session_touch(
        &self,
        id: &str,
        idle: Duration,
        identity: Option<&Arc<str>>,
    ) -> Option<Option<SessionState>> {
        let Some(key) = self.session_key(id) else {
            return Some(None);
        };
        let mut invocation = self.touch.prepare_invoke();
        invocation
            .key(key)
            .arg(millis(idle).max(1))
            .arg(identity.map_or("-", |identity| &**identity));
        let (slot, mut connection) = self.connection();
        let value: Option<String> = self
            .guarded(
                Operation::SessionTouch,
                slot,
                invocation.invoke_async(&mut connection),
            )
            .await?;
        let Some(text) = value else {
            return Some(None);
        };
        match SessionRecord::decode(&text) {
            Ok(record) => Some(Some(record.state)),
            Err(error) => {
                tracing::debug!(%error, "a session record this server does not read: no session");
                Some(None)
            }
        }
    }

    /// Whether session `id` has a record, its idle timer untouched. `None`: unreachable.
    pub(super) async fn session_exists(&self, id: &str) -> Option<bool> {
        let Some(key) = self.session_key(id) else {
            return Some(false);
        };
        let mut command = redis::cmd("EXISTS");
        command.arg(key);
        let (slot, mut connection) = self.connection();
        let count: i64 = self
            .guarded(
                Operation::SessionExists,
                slot,
                command.query_async(&mut connection),
            )
            .await?;
        Some(count > 0)
    }

    /// Forgets session `id`.
    pub(super) async fn session_close(&self, id: &str) -> Option<()> {
        let key = self.session_key(id)?;
        let mut command = redis::cmd("DEL");
        command.arg(key);
        let (slot, mut connection) = self.connection();
        let _deleted: i64 = self
            .guarded(
                Operation::SessionClose,
                slot,
                command.query_async(&mut connection),
            )
            .await?;
        Some(())
    }
}

/// The leases of one running call in the store: renewed while held, released when dropped.
pub(crate) struct Lease {
    renewer: AbortHandle,
    store: Arc<Store>,
    keys: Arc<[String]>,
    member: Arc<str>,
}

impl Lease {
    fn hold(store: Arc<Store>, keys: Vec<String>, member: String) -> Self {
        let keys: Arc<[String]> = Arc::from(keys);
        let member: Arc<str> = Arc::from(member);
        let every = store.lease_ttl.checked_div(3).unwrap_or(store.lease_ttl);
        let renewer = tokio::spawn({
            let (store, keys, member) =
                (Arc::clone(&store), Arc::clone(&keys), Arc::clone(&member));
            async move {
                loop {
                    tokio::time::sleep(every).await;
                    store.renew_lease(&keys, &member).await;
                }
            }
        })
        .abort_handle();
        Self {
            renewer,
            store,
            keys,
            member,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
        let (store, keys, member) = (
            Arc::clone(&self.store),
            Arc::clone(&self.keys),
            Arc::clone(&self.member),
        );
        // Dropped outside a runtime (never on the serving path), the lease lapses instead.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            drop(runtime.spawn(async move { store.release_lease(&keys, &member).await }));
        }
    }
}

/// A rate's GCRA parameters in microseconds: the emission interval and the tolerance,
/// `(burst - 1)` intervals, as `governor` derives them.
fn gcra(rate: Rate) -> (u64, u64) {
    let interval = Duration::from_secs(60)
        .checked_div(rate.per_minute.get())
        .unwrap_or(Duration::from_secs(60));
    let interval = u64::try_from(interval.as_micros())
        .unwrap_or(u64::MAX)
        .max(1);
    let tolerance = interval.saturating_mul(u64::from(rate.burst.get().saturating_sub(1)));
    (interval, tolerance)
}

/// The wait of a refusal by `rate`, as the script gave it (µs), within what GCRA can give:
/// at least 1 µs, at most one emission interval (a refusal right after an admission). A
/// store that answers more (or less) does not choose what a client is told to wait.
fn quota_wait(wait: i64, rate: Rate) -> Duration {
    let (interval, _) = gcra(rate);
    let wait = u64::try_from(wait).unwrap_or(1).clamp(1, interval);
    Duration::from_micros(wait)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `bytes` random bytes from the OS, hex-encoded.
fn random_hex(bytes: usize) -> Option<String> {
    let mut buffer = vec![0_u8; bytes];
    getrandom::fill(&mut buffer).ok()?;
    Some(buffer.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_parameters_are_governors() {
        // 60 a minute, bursts of 3: one a second, two seconds of tolerance.
        assert_eq!(gcra(Rate::new_const(60, 3)), (1_000_000, 2_000_000));
        assert_eq!(gcra(Rate::new_const(1, 1)), (60_000_000, 0));
        assert_eq!(gcra(Rate::new_const(7, 2)), (8_571_428, 8_571_428));
    }

    /// Red team (Redis): a store answering a refusal with a wait of `i64::MAX` µs put
    /// `retryAfterMs: 9223372036854776` (and its `Retry-After`) on the wire.
    #[test]
    fn a_refusals_wait_is_what_gcra_can_give_whatever_the_store_says() {
        let rate = Rate::new_const(60, 3);
        assert_eq!(quota_wait(250_000, rate), Duration::from_millis(250));
        assert_eq!(quota_wait(i64::MAX, rate), Duration::from_secs(1));
        assert_eq!(quota_wait(-5, rate), Duration::from_micros(1));
        assert_eq!(quota_wait(0, rate), Duration::from_micros(1));
        assert_eq!(
            quota_wait(i64::MAX, Rate::new_const(1, 1)),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn a_store_is_configured_only_with_a_redis_url_and_a_plain_namespace() {
        let url = |text: &str| SecretString::from(text.to_owned());
        assert!(SharedStore::redis(url("redis://127.0.0.1:6379"), "prod").is_ok());
        assert!(SharedStore::redis(url("redis://:hunter2@10.0.0.1/3"), "a.b-c_1").is_ok());
        assert_eq!(
            SharedStore::redis(url("http://127.0.0.1"), "prod").err(),
            Some(StoreError::Url)
        );
        assert_eq!(
            SharedStore::redis(url("not a url"), "prod").err(),
            Some(StoreError::Url)
        );
        for namespace in ["", "a:b", "a b", "ä", &"n".repeat(65)] {
            assert_eq!(
                SharedStore::redis(url("redis://127.0.0.1"), namespace).err(),
                Some(StoreError::Namespace),
                "{namespace:?}"
            );
        }
        let store = SharedStore::redis(url("redis://127.0.0.1"), "p").unwrap();
        assert_eq!(
            store.with_lease_ttl(Duration::from_millis(999)).err(),
            Some(StoreError::LeaseTtl)
        );
    }

    #[test]
    fn a_store_shown_for_debugging_hides_its_url() {
        let url = SecretString::from("redis://:hunter2@10.0.0.1/3".to_owned());
        let store = SharedStore::redis(url, "prod").unwrap();
        let shown = format!("{store:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("10.0.0.1"), "{shown}");
    }
}
