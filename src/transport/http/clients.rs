//! Limits per HTTP client: keyed quotas (governor GCRA) and a count of calls in flight.
//!
//! A client is its authenticated identity when tokens are configured, else its peer address
//! (an IPv6 address counts as its /64, which one host usually holds whole). These limits come
//! on top of the server-wide ones in [`crate::guard`], so one client flooding cannot take the
//! whole server's quota or every call slot while another is served. The state is bounded:
//! entries indistinguishable from a fresh client are dropped by [`Clients::sweep`], and past
//! `max_tracked_clients` new clients are refused (fail closed) rather than tracked.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use governor::RateLimiter;
use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;

use crate::error::McpError;
use crate::guard::{GuardClock, millis_rounded_up, quota};
use crate::limits::HttpLimits;

type Keyed =
    RateLimiter<ClientKey, HashMapStateStore<ClientKey>, GuardClock, NoOpMiddleware<Nanos>>;

/// Who a client is, for its limits.
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub(crate) enum ClientKey {
    /// An authenticated identity (the token's variable name).
    Identity(Arc<str>),
    /// A peer address; IPv6 masked to its /64, IPv4-mapped IPv6 as IPv4.
    Address(IpAddr),
}

impl ClientKey {
    /// The key of a request from `peer`, authenticated as `identity`.
    pub(crate) fn of(identity: Option<&Arc<str>>, peer: IpAddr) -> Self {
        match identity {
            Some(identity) => Self::Identity(Arc::clone(identity)),
            None => Self::Address(match peer {
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
            }),
        }
    }
}

/// Per-client quotas and in-flight counts of one HTTP server.
pub(crate) struct Clients {
    clock: GuardClock,
    calls: Option<Keyed>,
    requests: Option<Keyed>,
    in_flight: Mutex<HashMap<ClientKey, usize>>,
    in_flight_limit: usize,
    max_tracked: usize,
}

impl Clients {
    pub(crate) fn new(limits: &HttpLimits) -> Self {
        Self::with_clock(limits, GuardClock::real())
    }

    pub(crate) fn with_clock(limits: &HttpLimits, clock: GuardClock) -> Self {
        let keyed = |rate| RateLimiter::hashmap_with_clock(quota(rate), clock.clone());
        Self {
            calls: limits.client_call_rate.map(keyed),
            requests: limits.client_request_rate.map(keyed),
            clock,
            in_flight: Mutex::new(HashMap::new()),
            in_flight_limit: limits.client_in_flight.get(),
            max_tracked: limits.max_tracked_clients.get(),
        }
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
                tracing::warn!(
                    tracked = self.max_tracked,
                    "too many HTTP clients tracked; new clients refused until some go quiet"
                );
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

    /// Drops quota state that a fresh client would have anyway; frees the maps' memory.
    pub(crate) fn sweep(&self) {
        for limiter in [&self.calls, &self.requests].into_iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
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
        let clock = GuardClock::manual();
        let clients = Clients::with_clock(&limits(), clock.clone());
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
        let clients = Arc::new(Clients::new(&limits()));
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
        let clock = GuardClock::manual();
        let clients = Clients::with_clock(&limits(), clock.clone());
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
