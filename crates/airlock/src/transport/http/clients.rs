//! Limits per HTTP client: keyed quotas (governor GCRA), a count of calls in flight, and the
//! garbage cut-off.
//!
//! A client is its authenticated identity when tokens are configured, else its peer address
//! (an IPv6 address counts as its /64, which one host usually holds whole); what a web page
//! can make a browser send from that address is a client of its own ([`ClientKey::Page`]),
//! so a page's refusals never cut off, nor spend the quota of, a local client beside it. These limits come
//! on top of the server-wide ones in [`crate::quota`], so one client flooding cannot take the
//! whole server's quota or every call slot while another is served. The state is bounded:
//! entries indistinguishable from a fresh client are dropped by [`Clients::sweep`], and past
//! `max_tracked_clients` new clients are refused (fail closed) rather than tracked.
//!
//! **The garbage cut-off**, as on stdio: a client whose last `max_consecutive_errors`
//! requests were all garbage (refused at the HTTP boundary or the envelope, or counted invalid
//! by the engine; a busy server's refusals do not count) is cut off for
//! [`HTTP_CUT_OFF`]: its requests get `429` at once, before a body is read, and their
//! connections are closed. One valid request resets the count. Garbage counts against the
//! client that sent it: its identity when its token was valid, else its address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use governor::RateLimiter;
use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;

use crate::error::McpError;
use crate::limits::{HTTP_CUT_OFF, HttpLimits, REFUSAL_LOG_INTERVAL};
use crate::quota::{QuotaClock, governor_quota, millis_rounded_up};

type Keyed =
    RateLimiter<ClientKey, HashMapStateStore<ClientKey>, QuotaClock, NoOpMiddleware<Nanos>>;

/// Who a client is, for its limits.
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub(crate) enum ClientKey {
    /// An authenticated identity (the token's variable name).
    Identity(Arc<str>),
    /// A peer address; IPv6 masked to its /64, IPv4-mapped IPv6 as IPv4.
    Address(IpAddr),
    /// What web pages in a browser at that address send (`headers::from_a_page`), masked
    /// as [`ClientKey::Address`]; with the index of its `Origin` in the allow-list when the
    /// operator listed it, so a listed web app has a key apart from other pages. Kept apart
    /// from the address's own key: whatever a page makes the browser send never counts
    /// toward the cut-off or the quota of a local client at the same address (issue 35).
    Page {
        /// The (masked) address.
        address: IpAddr,
        /// The listed origin's index, if the page is on one.
        origin: Option<usize>,
    },
}

impl ClientKey {
    /// The key of a request from `peer`, authenticated as `identity`.
    pub(crate) fn of(identity: Option<&Arc<str>>, peer: IpAddr) -> Self {
        match identity {
            Some(identity) => Self::Identity(Arc::clone(identity)),
            None => Self::Address(masked(peer)),
        }
    }

    /// The key of what a web page on the listed origin `origin` (if any) sends from `peer`.
    pub(crate) fn page(peer: IpAddr, origin: Option<usize>) -> Self {
        Self::Page {
            address: masked(peer),
            origin,
        }
    }
}

/// `peer` as a key holds it: IPv6 masked to its /64, IPv4-mapped IPv6 as IPv4.
fn masked(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                for segment in segments.iter_mut().skip(4) {
                    *segment = 0;
                }
                IpAddr::V6(segments.into())
            }
        },
    }
}

/// Per-client quotas and in-flight counts of one HTTP server.
pub(crate) struct Clients {
    clock: QuotaClock,
    calls: Option<Keyed>,
    requests: Option<Keyed>,
    in_flight: Mutex<HashMap<ClientKey, usize>>,
    in_flight_limit: usize,
    max_tracked: usize,
    garbage: Mutex<HashMap<ClientKey, Garbage>>,
    max_garbage: u32,
    /// When the table-full warning was last logged (quota clock nanoseconds; 0: never).
    full_warned: AtomicU64,
}

/// What a request's reply says of it, for the cut-off.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Verdict {
    /// Refused as the client's fault: counted.
    Garbage,
    /// Served: resets the run.
    Valid,
    /// Neither (a notification, a busy server's refusal, a refusal of a cut-off client).
    Neutral,
}

/// One client's run of garbage.
#[derive(Clone, Copy, Debug, Default)]
struct Garbage {
    /// Garbage requests in a row.
    consecutive: u32,
    /// When the cut-off ends (the quota clock's nanoseconds); 0 when not cut off.
    cut_off_until: u64,
    /// When the client last sent garbage.
    last: u64,
}

impl Clients {
    /// Per-client limits; `max_garbage` is the server's `max_consecutive_errors`.
    pub(crate) fn new(limits: &HttpLimits, max_garbage: u32) -> Self {
        Self::with_clock(limits, max_garbage, QuotaClock::real())
    }

    pub(crate) fn with_clock(limits: &HttpLimits, max_garbage: u32, clock: QuotaClock) -> Self {
        let keyed = |rate| RateLimiter::hashmap_with_clock(governor_quota(rate), clock.clone());
        Self {
            calls: limits.client_call_rate.map(keyed),
            requests: limits.client_request_rate.map(keyed),
            clock,
            in_flight: Mutex::new(HashMap::new()),
            in_flight_limit: limits.client_in_flight.get(),
            max_tracked: limits.max_tracked_clients.get(),
            garbage: Mutex::new(HashMap::new()),
            max_garbage: max_garbage.max(1),
            full_warned: AtomicU64::new(0),
        }
    }

    /// Refuses `client` while it is cut off for sending only garbage.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`] with the time left.
    pub(crate) fn admit_unless_cut_off(&self, client: &ClientKey) -> Result<(), McpError> {
        let now = self.clock.now().as_u64();
        let garbage = self.garbage();
        match garbage.get(client) {
            Some(run) if run.cut_off_until > now => Err(McpError::RateLimited {
                retry_after_ms: run.cut_off_until.saturating_sub(now).div_ceil(1_000_000),
            }),
            _ => Ok(()),
        }
    }

    /// Records the verdict on one request of `client`; returns whether that cut it off.
    pub(crate) fn record(&self, client: &ClientKey, verdict: Verdict) -> bool {
        let mut runs = self.garbage();
        match verdict {
            Verdict::Neutral => return false,
            Verdict::Valid => {
                if runs.get(client).is_some_and(|run| run.cut_off_until == 0) {
                    runs.remove(client);
                }
                return false;
            }
            Verdict::Garbage => {}
        }
        if !runs.contains_key(client) && runs.len() >= self.max_tracked {
            // Bounded like the quotas: an untracked client is still held by its quota.
            return false;
        }
        let now = self.clock.now().as_u64();
        let run = runs.entry(client.clone()).or_default();
        if run.cut_off_until != 0 && run.cut_off_until <= now {
            *run = Garbage::default();
        }
        run.consecutive = run.consecutive.saturating_add(1);
        run.last = now;
        if run.consecutive < self.max_garbage {
            return false;
        }
        let cut_off = u64::try_from(HTTP_CUT_OFF.as_nanos()).unwrap_or(u64::MAX);
        run.cut_off_until = now.saturating_add(cut_off).max(1);
        run.consecutive = 0;
        true
    }

    fn garbage(&self) -> std::sync::MutexGuard<'_, HashMap<ClientKey, Garbage>> {
        self.garbage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits one HTTP request of `client`, whatever it carries.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`] with the wait.
    pub(crate) fn admit_request(&self, client: &ClientKey) -> Result<(), McpError> {
        self.check(self.requests.as_ref(), client)
    }

    /// Admits one `tools/call` of `client`.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`] with the wait.
    pub(crate) fn admit_call(&self, client: &ClientKey) -> Result<(), McpError> {
        self.check(self.calls.as_ref(), client)
    }

    fn check(&self, limiter: Option<&Keyed>, client: &ClientKey) -> Result<(), McpError> {
        let Some(limiter) = limiter else {
            return Ok(());
        };
        if limiter.len() >= self.max_tracked {
            limiter.retain_recent();
            if limiter.len() >= self.max_tracked {
                // Once an interval, not once per refused request (issue 35).
                let now = self.clock.now().as_u64();
                let last = self.full_warned.load(Ordering::Relaxed);
                let interval = u64::try_from(REFUSAL_LOG_INTERVAL.as_nanos()).unwrap_or(u64::MAX);
                if (last == 0 || now.saturating_sub(last) >= interval)
                    && self
                        .full_warned
                        .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    tracing::warn!(
                        tracked = self.max_tracked,
                        "too many HTTP clients tracked; new clients refused until some go quiet"
                    );
                }
                return Err(McpError::RateLimited {
                    retry_after_ms: 1000,
                });
            }
        }
        limiter
            .check_key(client)
            .map_err(|not_until| McpError::RateLimited {
                retry_after_ms: millis_rounded_up(not_until.wait_time_from(self.clock.now())),
            })
    }

    /// Takes one of `client`'s call slots until the returned slot is dropped.
    ///
    /// # Errors
    ///
    /// [`McpError::ClientBusy`] when the client has `client_in_flight` calls running.
    pub(crate) fn enter(self: &Arc<Self>, client: &ClientKey) -> Result<Slot, McpError> {
        let mut counts = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(client.clone()).or_insert(0);
        if *count >= self.in_flight_limit {
            return Err(McpError::ClientBusy {
                limit: self.in_flight_limit,
            });
        }
        *count = count.saturating_add(1);
        Ok(Slot {
            clients: Arc::clone(self),
            client: client.clone(),
        })
    }

    /// Drops quota state that a fresh client would have anyway (and garbage runs past their
    /// cut-off, or quiet for as long as one); frees the maps' memory.
    pub(crate) fn sweep(&self) {
        for limiter in [&self.calls, &self.requests].into_iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        let now = self.clock.now().as_u64();
        let quiet = u64::try_from(HTTP_CUT_OFF.as_nanos()).unwrap_or(u64::MAX);
        let mut runs = self.garbage();
        runs.retain(|_, run| run.cut_off_until > now || now.saturating_sub(run.last) < quiet);
        runs.shrink_to_fit();
    }

    /// Clients with quota state kept (for tests).
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.requests.as_ref().map_or(0, Keyed::len)
    }
}

/// One call slot of one client; dropping it gives the slot back.
pub(crate) struct Slot {
    clients: Arc<Clients>,
    client: ClientKey,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self
            .clients
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.client) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};
    use std::num::NonZeroUsize;
    use std::time::Duration;

    use super::*;
    use crate::limits::Rate;

    fn limits() -> HttpLimits {
        HttpLimits {
            client_call_rate: Some(Rate::new_const(60, 2)),
            client_request_rate: Some(Rate::new_const(60, 3)),
            client_in_flight: NonZeroUsize::new(2).unwrap(),
            max_tracked_clients: NonZeroUsize::new(4).unwrap(),
            ..HttpLimits::default()
        }
    }

    fn address(last: u8) -> ClientKey {
        ClientKey::of(None, IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn each_client_has_its_own_quota() {
        let clock = QuotaClock::manual();
        let clients = Clients::with_clock(&limits(), 256, clock.clone());
        let (a, b) = (address(1), address(2));
        clients.admit_call(&a).unwrap();
        clients.admit_call(&a).unwrap();
        assert_eq!(
            clients.admit_call(&a),
            Err(McpError::RateLimited {
                retry_after_ms: 1000
            })
        );
        clients.admit_call(&b).unwrap();
        clock.advance(Duration::from_secs(1));
        clients.admit_call(&a).unwrap();
    }

    #[test]
    fn in_flight_slots_are_per_client_and_given_back() {
        let clients = Arc::new(Clients::new(&limits(), 256));
        let (a, b) = (address(1), address(2));
        let first = clients.enter(&a).unwrap();
        let _second = clients.enter(&a).unwrap();
        assert!(matches!(
            clients.enter(&a),
            Err(McpError::ClientBusy { limit: 2 })
        ));
        let _other = clients.enter(&b).unwrap();
        drop(first);
        let _again = clients.enter(&a).unwrap();
    }

    #[test]
    fn tracked_clients_are_bounded_and_swept() {
        let clock = QuotaClock::manual();
        let clients = Clients::with_clock(&limits(), 256, clock.clone());
        for last in 1..=4 {
            clients.admit_request(&address(last)).unwrap();
        }
        // A fifth address while four are still active: refused, not tracked.
        assert!(matches!(
            clients.admit_request(&address(5)),
            Err(McpError::RateLimited { .. })
        ));
        assert_eq!(clients.tracked(), 4);
        // Once they are quiet, their state is indistinguishable from fresh and is dropped.
        clock.advance(Duration::from_secs(60));
        clients.admit_request(&address(5)).unwrap();
        clients.sweep();
        assert_eq!(clients.tracked(), 1);
    }

    #[test]
    fn a_client_sending_only_garbage_is_cut_off_for_a_while_and_others_are_not() {
        let clock = QuotaClock::manual();
        let clients = Clients::with_clock(&limits(), 3, clock.clone());
        let (a, b) = (address(1), address(2));
        let garbage = Verdict::Garbage;
        assert!(!clients.record(&a, garbage));
        assert!(!clients.record(&a, garbage));
        // A valid request resets the run; a neutral one does not.
        assert!(!clients.record(&a, Verdict::Valid));
        assert!(!clients.record(&a, garbage));
        assert!(!clients.record(&a, Verdict::Neutral));
        assert!(!clients.record(&a, garbage));
        assert!(clients.record(&a, garbage), "three in a row cut it off");
        let wait = HTTP_CUT_OFF.as_millis();
        assert_eq!(
            clients.admit_unless_cut_off(&a),
            Err(McpError::RateLimited {
                retry_after_ms: u64::try_from(wait).unwrap()
            })
        );
        clients.admit_unless_cut_off(&b).unwrap();
        // Valid requests during the cut-off do not lift it.
        clients.record(&a, Verdict::Valid);
        assert!(clients.admit_unless_cut_off(&a).is_err());
        clock.advance(HTTP_CUT_OFF);
        clients.admit_unless_cut_off(&a).unwrap();
        // After it, the run starts again from nothing.
        assert!(!clients.record(&a, garbage));
        clock.advance(HTTP_CUT_OFF);
        clients.sweep();
        assert!(clients.garbage().is_empty());
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64_prefix() {
        let one: Ipv6Addr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let two: Ipv6Addr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        let key = |ip: Ipv6Addr| ClientKey::of(None, IpAddr::V6(ip));
        assert_eq!(key(one), key(two));
        assert_ne!(key(one), key(other));
        let mapped: Ipv6Addr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(key(mapped), address(1));
        let identity: Arc<str> = Arc::from("ALICE");
        assert_eq!(
            ClientKey::of(Some(&identity), IpAddr::V6(one)),
            ClientKey::Identity(identity)
        );
    }
}
