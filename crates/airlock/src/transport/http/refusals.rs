//! Refusals at the HTTP boundary, logged as counts rather than one line each.
//!
//! A refused request costs the server a few microseconds; a log line per refusal cost far
//! more: one address without a token wrote 15-23 MiB of log in 5 s (issue 35), and a client
//! cut off for garbage kept writing, since `Host` and `Origin` are checked before the cut-off.
//! So, per client and kind of refusal, the first is logged at once and the rest are counted:
//! at most one line per [`REFUSAL_LOG_INTERVAL`] says how many there were since the last, at
//! `info`. A flood that stops is summed up by the sweeper. So the log is bounded at every level
//! but `trace`, the level for following single requests, where most refusals also have a line
//! each (the token check's word, the body refusals, the preflights).
//!
//! The table is bounded ([`MAX_REFUSAL_LOG_CLIENTS`]): past it, refusals of clients not in it
//! are counted under one shared entry (`client=other`), so a flood from many addresses still
//! writes a bounded number of lines. Each line states the status actually sent, read from
//! the reply, never guessed. Trusts nothing: the client is its address (or key), never what
//! it sent.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use governor::clock::Clock as _;

use crate::limits::{MAX_REFUSAL_LOG_CLIENTS, REFUSAL_LOG_INTERVAL};
use crate::quota::QuotaClock;

use super::lock;

/// What a refusal was for.
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub(super) enum Kind {
    /// `Host` not allowed (`421`).
    Host,
    /// `Origin` not allowed (`403`).
    Origin,
    /// A CORS preflight refused by the cut-off or the request quota.
    Preflight,
    /// No valid token (`401`).
    Unauthorized,
    /// The client is cut off for sending garbage (`429`).
    CutOff,
    /// This request, garbage, cut its client off (its own status).
    CutOffBegins,
    /// The client is over its request quota (`429`).
    Quota,
    /// A scoped access token lacks a scope the tool requires (`403`).
    Scope,
}

impl Kind {
    /// What the line says.
    fn says(self) -> &'static str {
        match self {
            Self::Host => "Host not allowed",
            Self::Origin => "Origin not allowed",
            Self::Preflight => "preflight refused: client cut off or over its quota",
            Self::Unauthorized => "no valid token",
            Self::CutOff => "the client is cut off",
            Self::CutOffBegins => {
                "too many invalid requests in a row: the client is cut off for a while"
            }
            Self::Quota => "client over its request quota",
            Self::Scope => "the access token lacks a scope the tool requires",
        }
    }
}

#[cfg(feature = "metrics")]
impl Kind {
    /// The kind `airlock_refusals_total` counts it as; none for the request that began a
    /// cut-off (refused for its own reason, counted there).
    pub(super) fn metric(self) -> Option<crate::metrics::Refusal> {
        use crate::metrics::Refusal;
        Some(match self {
            Self::Host => Refusal::Host,
            Self::Origin => Refusal::Origin,
            Self::Preflight => Refusal::Preflight,
            Self::Unauthorized => Refusal::Auth,
            Self::CutOff => Refusal::CutOff,
            Self::CutOffBegins => return None,
            Self::Quota => Refusal::ClientQuota,
            Self::Scope => Refusal::Scope,
        })
    }
}

/// Who a refusal is counted for: a client in the table, or every other one together.
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
enum Who {
    Address(IpAddr),
    Other,
}

/// One client's refusals of one kind.
#[derive(Clone, Copy, Debug)]
struct Count {
    /// Refusals since the last line.
    since_line: u64,
    /// When the last line was written (the quota clock's nanoseconds).
    line_at: u64,
    /// The status of the last refusal counted.
    status: u16,
}

/// The refusals of one server.
pub(super) struct Refusals {
    clock: QuotaClock,
    counts: Mutex<HashMap<(Who, Kind), Count>>,
}

impl Refusals {
    /// No refusal counted yet.
    pub(super) fn new() -> Self {
        Self::with_clock(QuotaClock::real())
    }

    /// The same on `clock` (tests use a manual one).
    pub(super) fn with_clock(clock: QuotaClock) -> Self {
        Self {
            clock,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one refusal of `kind` of the client at `address`, answered with `status`;
    /// writes a line if it is the client's first of that kind, or the interval has passed.
    /// Returns whether a line was written.
    pub(super) fn note(&self, address: IpAddr, kind: Kind, status: u16) -> bool {
        let now = self.clock.now().as_u64();
        let interval = nanos(REFUSAL_LOG_INTERVAL);
        let mut counts = lock(&self.counts);
        let mut who = Who::Address(address);
        if !counts.contains_key(&(who, kind)) && counts.len() >= MAX_REFUSAL_LOG_CLIENTS {
            who = Who::Other;
        }
        let Some(count) = counts.get_mut(&(who, kind)) else {
            counts.insert(
                (who, kind),
                Count {
                    since_line: 0,
                    line_at: now,
                    status,
                },
            );
            first_line(who, kind, status);
            return true;
        };
        count.since_line = count.since_line.saturating_add(1);
        count.status = status;
        if now.saturating_sub(count.line_at) < interval {
            return false;
        }
        summary_line(who, kind, count);
        count.since_line = 0;
        count.line_at = now;
        true
    }

    /// Writes the summaries due (refusals counted, the interval passed) and forgets clients
    /// with nothing counted for an interval; frees the table's memory.
    pub(super) fn sweep(&self) {
        let now = self.clock.now().as_u64();
        let interval = nanos(REFUSAL_LOG_INTERVAL);
        let mut counts = lock(&self.counts);
        counts.retain(|(who, kind), count| {
            if now.saturating_sub(count.line_at) < interval {
                return true;
            }
            if count.since_line == 0 {
                return false;
            }
            summary_line(*who, *kind, count);
            count.since_line = 0;
            count.line_at = now;
            true
        });
        counts.shrink_to_fit();
    }

    /// Entries kept (for tests).
    #[cfg(test)]
    fn tracked(&self) -> usize {
        lock(&self.counts).len()
    }
}

fn first_line(who: Who, kind: Kind, status: u16) {
    match who {
        Who::Address(address) => tracing::info!(
            client = %address,
            status,
            "request refused: {}; more like it are counted",
            kind.says()
        ),
        Who::Other => tracing::info!(
            client = "other",
            status,
            "request refused: {}; more like it are counted",
            kind.says()
        ),
    }
}

fn summary_line(who: Who, kind: Kind, count: &Count) {
    let (status, refused) = (count.status, count.since_line);
    match who {
        Who::Address(address) => tracing::info!(
            client = %address,
            status,
            refused,
            "requests refused since the last line: {}",
            kind.says()
        ),
        Who::Other => tracing::info!(
            client = "other",
            status,
            refused,
            "requests refused since the last line: {}",
            kind.says()
        ),
    }
}

fn nanos(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn address(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    #[test]
    fn the_first_refusal_is_logged_and_the_rest_once_an_interval() {
        let clock = QuotaClock::manual();
        let refusals = Refusals::with_clock(clock.clone());
        assert!(refusals.note(address(1), Kind::Origin, 403));
        for _ in 0..1000 {
            assert!(!refusals.note(address(1), Kind::Origin, 403));
        }
        // Another kind, another client: their own first lines.
        assert!(refusals.note(address(1), Kind::Host, 421));
        assert!(refusals.note(address(2), Kind::Origin, 403));
        clock.advance(REFUSAL_LOG_INTERVAL);
        assert!(refusals.note(address(1), Kind::Origin, 403));
        assert!(!refusals.note(address(1), Kind::Origin, 403));
    }

    #[test]
    fn the_sweeper_sums_up_a_flood_that_stopped_and_forgets_quiet_clients() {
        let clock = QuotaClock::manual();
        let refusals = Refusals::with_clock(clock.clone());
        refusals.note(address(1), Kind::Quota, 429);
        refusals.note(address(1), Kind::Quota, 429);
        refusals.note(address(2), Kind::Quota, 429);
        clock.advance(REFUSAL_LOG_INTERVAL);
        refusals.sweep();
        // The first had a count to write (and is kept one more interval); the second not.
        assert_eq!(refusals.tracked(), 1);
        clock.advance(REFUSAL_LOG_INTERVAL);
        refusals.sweep();
        assert_eq!(refusals.tracked(), 0);
    }

    #[test]
    fn past_the_table_s_bound_clients_share_one_entry() {
        let refusals = Refusals::new();
        for n in 0..MAX_REFUSAL_LOG_CLIENTS {
            let ip = IpAddr::V4(Ipv4Addr::from(u32::try_from(n).unwrap()));
            assert!(refusals.note(ip, Kind::Unauthorized, 401));
        }
        let past = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        assert!(
            refusals.note(past, Kind::Unauthorized, 401),
            "other's first line"
        );
        let also_past = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
        assert!(!refusals.note(also_past, Kind::Unauthorized, 401));
        assert_eq!(refusals.tracked(), MAX_REFUSAL_LOG_CLIENTS + 1);
    }
}
