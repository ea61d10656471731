//! Rate quotas: who may do what how often, decided before any work is done.
//!
//! Quotas use `governor`'s GCRA: no sleeping and no queue. A request over its quota is refused
//! at once with `-31429` and `retryAfterMs` computed by the limiter. There is one quota for
//! `tools/call` across the server, an optional quota per tool, and a looser one for cheap
//! methods, so that one kind of flood cannot starve the other. Quotas are shared by every
//! session of a server (one per process on stdio).
//!
//! The clock is ours so tests can drive it by hand instead of sleeping.
//!
//! A reload of the tools ([`Quotas::retool`]) keeps what each unchanged quota has counted: a
//! tool whose rate is the same keeps its limiter, and the server's and cheap quotas are never
//! rebuilt, so a reload does not hand a flood a fresh burst.
//!
//! An HTTP server whose replicas share a quota store (the `redis` feature) counts these same
//! quotas there instead, before the engine sees the request: it marks them delegated, so the
//! engine's checks admit at once, and charges them here only while the store is unreachable
//! and its policy is to fall back on local limits.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

use crate::error::McpError;
use crate::limits::{Limits, Rate};

type Limiter = RateLimiter<NotKeyed, InMemoryState, QuotaClock, NoOpMiddleware<Nanos>>;

/// A tool's quota, with the rate it was built for (a reload keeps it when that is unchanged).
type ToolQuota = Arc<(Rate, Limiter)>;

/// The quotas of one server.
pub struct Quotas {
    clock: QuotaClock,
    tool_calls: Option<Limiter>,
    cheap: Option<Limiter>,
    /// Each rated tool's quota, with the rate it was built for; replaced whole by a reload.
    per_tool: RwLock<HashMap<Box<str>, ToolQuota>>,
    /// Counted by a shared store before the engine (see the module header).
    delegated: AtomicBool,
}

impl Quotas {
    /// Quotas from `limits`, plus `per_tool` quotas by tool name, on the real clock.
    pub fn new<'a>(limits: &Limits, per_tool: impl IntoIterator<Item = (&'a str, Rate)>) -> Self {
        Self::with_clock(limits, per_tool, QuotaClock::real())
    }

    /// The same on a given clock (tests use [`QuotaClock::manual`]).
    pub fn with_clock<'a>(
        limits: &Limits,
        per_tool: impl IntoIterator<Item = (&'a str, Rate)>,
        clock: QuotaClock,
    ) -> Self {
        let limiter =
            |rate: Rate| RateLimiter::direct_with_clock(governor_quota(rate), clock.clone());
        Self {
            tool_calls: limits.tool_call_rate.map(limiter),
            cheap: limits.cheap_method_rate.map(limiter),
            per_tool: RwLock::new(
                per_tool
                    .into_iter()
                    .map(|(name, rate)| (Box::from(name), Arc::new((rate, limiter(rate)))))
                    .collect(),
            ),
            clock,
            delegated: AtomicBool::new(false),
        }
    }

    /// Admits one cheap request.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`] with the wait.
    pub fn admit_cheap(&self) -> Result<(), McpError> {
        if self.delegated.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.admit_cheap_locally()
    }

    /// Admits one cheap request here, even when the quotas are delegated to a shared store.
    pub(crate) fn admit_cheap_locally(&self) -> Result<(), McpError> {
        self.check(self.cheap.as_ref())
    }

    /// Admits one call of `tool`: the tool's own quota first, so that hammering a limited
    /// tool does not use up the server's quota for every other tool; then the server's.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`] with the wait.
    pub fn admit_call(&self, tool: &str) -> Result<(), McpError> {
        if self.delegated.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.admit_call_locally(tool)
    }

    /// Admits one call of `tool` here, even when the quotas are delegated to a shared store.
    pub(crate) fn admit_call_locally(&self, tool: &str) -> Result<(), McpError> {
        let own = self
            .per_tool
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .cloned();
        self.check(own.as_deref().map(|(_, limiter)| limiter))?;
        self.check(self.tool_calls.as_ref())
    }

    /// The per-tool quotas of a new tool set: a tool named before with the same rate keeps
    /// its limiter (and what it counted); the others start afresh; tools gone lose theirs.
    pub(crate) fn retool<'a>(&self, per_tool: impl IntoIterator<Item = (&'a str, Rate)>) {
        let mut map = self
            .per_tool
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let next = per_tool
            .into_iter()
            .map(|(name, rate)| {
                let kept = map.get(name).filter(|quota| quota.0 == rate).cloned();
                let quota = kept.unwrap_or_else(|| {
                    let limiter =
                        RateLimiter::direct_with_clock(governor_quota(rate), self.clock.clone());
                    Arc::new((rate, limiter))
                });
                (Box::from(name), quota)
            })
            .collect();
        *map = next;
    }

    /// From now on the engine's checks admit everything: a shared store counts these quotas
    /// (and [`Quotas::admit_call_locally`] while it is unreachable).
    #[cfg(feature = "http")]
    pub(crate) fn delegate(&self) {
        self.delegated.store(true, Ordering::Relaxed);
    }

    /// A quota that is off costs a test, not a call: the check of one that is on is a function
    /// of its own, so this one inlines where every request passes.
    #[inline]
    fn check(&self, limiter: Option<&Limiter>) -> Result<(), McpError> {
        match limiter {
            None => Ok(()),
            Some(limiter) => self.check_limiter(limiter),
        }
    }

    fn check_limiter(&self, limiter: &Limiter) -> Result<(), McpError> {
        limiter.check().map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            McpError::RateLimited {
                retry_after_ms: millis_rounded_up(wait),
            }
        })
    }
}

impl std::fmt::Debug for Quotas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quotas")
            .field("tool_calls", &self.tool_calls.is_some())
            .field("cheap", &self.cheap.is_some())
            .field(
                "per_tool",
                &self
                    .per_tool
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .len(),
            )
            .field("delegated", &self.delegated.load(Ordering::Relaxed))
            .finish()
    }
}

/// A quota for `rate`: one request per `60 s / per_minute`, bursts of `burst`.
pub(crate) fn governor_quota(rate: Rate) -> Quota {
    let period = Duration::from_secs(60)
        .checked_div(rate.per_minute.get())
        .filter(|period| !period.is_zero())
        .unwrap_or(Duration::from_nanos(1));
    Quota::with_period(period)
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
        .allow_burst(rate.burst)
}

/// At least 1 ms: "retry after 0 ms" would invite a busy loop.
pub(crate) fn millis_rounded_up(wait: Duration) -> u64 {
    let millis = wait.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

/// The limiters' clock: monotonic time since the quotas was built, or a hand-driven one.
#[derive(Clone, Debug)]
pub struct QuotaClock {
    start: Instant,
    manual: Option<Arc<AtomicU64>>,
}

impl QuotaClock {
    /// Real monotonic time.
    pub fn real() -> Self {
        Self {
            start: Instant::now(),
            manual: None,
        }
    }

    /// A clock that only moves when [`QuotaClock::advance`] is called.
    pub fn manual() -> Self {
        Self {
            start: Instant::now(),
            manual: Some(Arc::new(AtomicU64::new(0))),
        }
    }

    /// Moves a manual clock forward (no effect on the real one).
    pub fn advance(&self, by: Duration) {
        if let Some(nanos) = &self.manual {
            let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
            // Saturating: a clock that reached the end of time stays there.
            let _previous = nanos.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
        }
    }
}

impl Clock for QuotaClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        match &self.manual {
            Some(nanos) => Nanos::new(nanos.load(Ordering::SeqCst)),
            None => Nanos::from(self.start.elapsed()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(call: Option<Rate>, cheap: Option<Rate>) -> Limits {
        Limits {
            tool_call_rate: call,
            cheap_method_rate: cheap,
            ..Limits::default()
        }
    }

    fn retry(result: Result<(), McpError>) -> u64 {
        match result {
            Err(McpError::RateLimited { retry_after_ms }) => retry_after_ms,
            other => panic!("not rate limited: {other:?}"),
        }
    }

    #[test]
    fn a_burst_is_admitted_then_refused_with_the_exact_wait() {
        let clock = QuotaClock::manual();
        // 60 a minute: one a second, bursts of 3.
        let quotas = Quotas::with_clock(
            &limits(Some(Rate::new_const(60, 3)), None),
            [],
            clock.clone(),
        );
        for _ in 0..3 {
            quotas.admit_call("t").unwrap();
        }
        assert_eq!(retry(quotas.admit_call("t")), 1000);
        clock.advance(Duration::from_millis(400));
        assert_eq!(retry(quotas.admit_call("t")), 600);
        clock.advance(Duration::from_millis(600));
        quotas.admit_call("t").unwrap();
        assert_eq!(retry(quotas.admit_call("t")), 1000);
    }

    /// A reload must not hand a flooded tool a fresh burst: an unchanged quota keeps its
    /// count; a changed rate starts afresh; a tool gone loses its quota.
    #[test]
    fn a_reload_keeps_what_an_unchanged_tool_quota_counted() {
        let clock = QuotaClock::manual();
        let one = Rate::new_const(60, 1);
        let quotas = Quotas::with_clock(&limits(None, None), [("a", one), ("b", one)], clock);
        quotas.admit_call("a").unwrap();
        quotas.admit_call("b").unwrap();
        quotas.retool([("a", one), ("b", Rate::new_const(60, 2)), ("c", one)]);
        assert_eq!(retry(quotas.admit_call("a")), 1000);
        quotas.admit_call("b").unwrap();
        quotas.admit_call("c").unwrap();
        assert!(quotas.admit_call("c").is_err());
        quotas.retool([]);
        for _ in 0..3 {
            quotas.admit_call("a").unwrap();
        }
    }

    #[test]
    fn cheap_methods_and_tool_calls_have_separate_quotas() {
        let clock = QuotaClock::manual();
        let quotas = Quotas::with_clock(
            &limits(Some(Rate::new_const(60, 1)), Some(Rate::new_const(60, 2))),
            [],
            clock,
        );
        quotas.admit_call("t").unwrap();
        assert!(quotas.admit_call("t").is_err());
        // Calls are exhausted; pings are not.
        quotas.admit_cheap().unwrap();
        quotas.admit_cheap().unwrap();
        assert!(quotas.admit_cheap().is_err());
    }

    #[test]
    fn a_per_tool_quota_applies_to_that_tool_only() {
        let clock = QuotaClock::manual();
        let quotas = Quotas::with_clock(
            &limits(None, None),
            [("paid_api", Rate::new_const(1, 1))],
            clock.clone(),
        );
        quotas.admit_call("paid_api").unwrap();
        assert_eq!(retry(quotas.admit_call("paid_api")), 60_000);
        for _ in 0..100 {
            quotas.admit_call("free").unwrap();
        }
        clock.advance(Duration::from_secs(60));
        quotas.admit_call("paid_api").unwrap();
    }

    /// Review finding N3: refused calls of a rate-limited tool used up the server's quota.
    #[test]
    fn a_refused_tool_does_not_drain_the_server_quota() {
        let clock = QuotaClock::manual();
        let quotas = Quotas::with_clock(
            &limits(Some(Rate::new_const(60, 3)), None),
            [("paid_api", Rate::new_const(1, 1))],
            clock,
        );
        quotas.admit_call("paid_api").unwrap();
        for _ in 0..10 {
            assert!(quotas.admit_call("paid_api").is_err());
        }
        quotas.admit_call("other").unwrap();
        quotas.admit_call("other").unwrap();
        assert!(quotas.admit_call("other").is_err());
    }

    /// Issue 20: with a shared store the engine must not count what the store counted.
    #[cfg(feature = "http")]
    #[test]
    fn delegated_quotas_admit_in_the_engine_and_count_only_when_asked_locally() {
        let quotas = Quotas::with_clock(
            &limits(Some(Rate::new_const(60, 1)), Some(Rate::new_const(60, 1))),
            [],
            QuotaClock::manual(),
        );
        quotas.delegate();
        for _ in 0..10 {
            quotas.admit_call("t").unwrap();
            quotas.admit_cheap().unwrap();
        }
        quotas.admit_call_locally("t").unwrap();
        assert_eq!(retry(quotas.admit_call_locally("t")), 1000);
        quotas.admit_cheap_locally().unwrap();
        assert_eq!(retry(quotas.admit_cheap_locally()), 1000);
    }

    #[test]
    fn no_quota_means_no_limit() {
        let quotas = Quotas::with_clock(&limits(None, None), [], QuotaClock::manual());
        for _ in 0..10_000 {
            quotas.admit_call("t").unwrap();
            quotas.admit_cheap().unwrap();
        }
    }
}
