//! Fair shares of the server-wide call quota among HTTP clients.
//!
//! The server-wide `tool_call_rate` is one bucket: two clients each within their own quota
//! could empty it, and an honest third client calling at a tenth of its own limit got 9 of 35
//! calls through (issue 35). So, before a call takes its share of the server-wide quota, it
//! passes its client's share: the server-wide rate divided among the clients active in the
//! last [`FAIR_SHARE_WINDOW`] (a GCRA per client whose emission interval is the server's
//! times the number of active clients, and whose burst is the server's divided by it, at
//! least one). The shares add up to the server-wide rate, so a client below its share is not
//! refused for what others took; one alone has all of it. A refusal is the client's
//! `-31429` with the wait, like its own quota's.
//!
//! Counted in this process only: with a shared store (replicas), each replica splits the
//! server-wide rate among the clients it serves, and the store's quota itself is not split; a
//! client spread over several replicas may take more than its share there. The table is bounded by `max_tracked_clients`; past it, a client
//! not yet tracked is refused (fail closed), as for the per-client quotas. Trusts nothing of
//! the client but its key.

use std::collections::HashMap;
use std::sync::Mutex;

use governor::clock::Clock as _;

use crate::error::McpError;
use crate::limits::{FAIR_SHARE_WINDOW, Rate};
use crate::quota::QuotaClock;

use super::clients::ClientKey;
use super::lock;

/// How often, at most, the active clients are counted again (a walk of the table).
const RECOUNT_NANOS: u64 = 1_000_000_000;

/// The shares of one server.
pub(super) struct Shares {
    clock: QuotaClock,
    /// The server-wide emission interval (nanoseconds per call) and burst; `None` when the
    /// server has no call quota.
    rate: Option<(u64, u64)>,
    max_tracked: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    clients: HashMap<ClientKey, Share>,
    /// Clients whose last call was within the window, as of the last count (plus new ones).
    active: u64,
    counted_at: u64,
}

/// One client's share.
#[derive(Clone, Copy, Debug)]
struct Share {
    /// When its next call is due at its share's rate (GCRA's theoretical arrival time).
    due: u64,
    /// When it last had a call admitted.
    last: u64,
}

impl Shares {
    /// Shares of `rate` (the server-wide call quota, if any), for at most `max_tracked`
    /// clients.
    pub(super) fn new(rate: Option<Rate>, max_tracked: usize) -> Self {
        Self::with_clock(rate, max_tracked, QuotaClock::real())
    }

    pub(super) fn with_clock(rate: Option<Rate>, max_tracked: usize, clock: QuotaClock) -> Self {
        let rate = rate.map(|rate| {
            let interval = 60_000_000_000_u64
                .checked_div(u64::from(rate.per_minute.get()))
                .unwrap_or(1);
            (interval.max(1), u64::from(rate.burst.get()))
        });
        Self {
            clock,
            rate,
            max_tracked,
            table: Mutex::new(Table::default()),
        }
    }

    /// Admits one call of `client` within its share.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`] with the wait, when the client has used its share.
    pub(super) fn admit(&self, client: &ClientKey) -> Result<(), McpError> {
        let Some((interval, burst)) = self.rate else {
            return Ok(());
        };
        let now = self.clock.now().as_u64();
        let window = u64::try_from(FAIR_SHARE_WINDOW.as_nanos()).unwrap_or(u64::MAX);
        let mut table = lock(&self.table);
        if now.saturating_sub(table.counted_at) >= RECOUNT_NANOS || table.counted_at == 0 {
            table
                .clients
                .retain(|_, share| now.saturating_sub(share.last) < window);
            table.active = u64::try_from(table.clients.len()).unwrap_or(u64::MAX);
            table.counted_at = now.max(1);
        }
        let known = table.clients.contains_key(client);
        if !known && table.clients.len() >= self.max_tracked {
            return Err(McpError::RateLimited {
                retry_after_ms: 1000,
            });
        }
        let active = if known {
            table.active
        } else {
            table.active.saturating_add(1)
        }
        .max(1);
        let emission = interval.saturating_mul(active);
        let share = burst.checked_div(active).unwrap_or(1).max(1);
        let tolerance = emission.saturating_mul(share.saturating_sub(1));
        let due = table
            .clients
            .get(client)
            .map_or(now, |share| share.due)
            .max(now);
        if due.saturating_sub(now) > tolerance {
            let wait = due.saturating_sub(tolerance).saturating_sub(now);
            return Err(McpError::RateLimited {
                retry_after_ms: wait.div_ceil(1_000_000).max(1),
            });
        }
        table.clients.insert(
            client.clone(),
            Share {
                due: due.saturating_add(emission),
                last: now,
            },
        );
        if !known {
            table.active = active;
        }
        Ok(())
    }

    /// Forgets clients idle for the window; frees the table's memory.
    pub(super) fn sweep(&self) {
        let now = self.clock.now().as_u64();
        let window = u64::try_from(FAIR_SHARE_WINDOW.as_nanos()).unwrap_or(u64::MAX);
        let mut table = lock(&self.table);
        table
            .clients
            .retain(|_, share| now.saturating_sub(share.last) < window);
        table.clients.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::Duration;

    use super::*;

    fn client(last: u8) -> ClientKey {
        ClientKey::of(None, IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    fn admitted(shares: &Shares, who: &ClientKey, tries: usize) -> usize {
        (0..tries).filter(|_| shares.admit(who).is_ok()).count()
    }

    #[test]
    fn a_lone_client_has_the_whole_rate_and_clients_share_it_when_several_call() {
        let clock = QuotaClock::manual();
        // 600 a minute: one call every 100 ms, bursts of 10.
        let shares = Shares::with_clock(Some(Rate::new_const(600, 10)), 64, clock.clone());
        let (a, b, c) = (client(1), client(2), client(3));
        assert_eq!(admitted(&shares, &a, 100), 10, "alone: the whole burst");
        clock.advance(Duration::from_secs(1));
        // Two flood, then a third calls once a second: it is always served, and the two
        // together never get more than the server's rate.
        let mut flooders = 0;
        let mut honest = 0;
        for _ in 0..20 {
            for _ in 0..10 {
                flooders += admitted(&shares, &a, 10) + admitted(&shares, &b, 10);
                clock.advance(Duration::from_millis(100));
            }
            honest += admitted(&shares, &c, 1);
        }
        assert_eq!(honest, 20);
        assert!(
            flooders <= 20 * 10 + 10,
            "{flooders} in 20 s at 10 a second"
        );
    }

    #[test]
    fn no_server_quota_no_share() {
        let shares = Shares::new(None, 1);
        assert_eq!(admitted(&shares, &client(1), 1000), 1000);
        assert_eq!(admitted(&shares, &client(2), 1000), 1000);
    }
}
