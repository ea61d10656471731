//! Open connections, server-wide and per address: the slots a connection takes at accept,
//! before it has sent a byte.
//!
//! A connection costs a task and hyper's buffers from the moment it is accepted, whoever holds
//! it. The server-wide cap (`max_connections`) bounds that cost; the per-address cap
//! (`max_connections_per_address`) keeps one address from taking every slot with sockets it
//! never speaks on, so a client at another address still connects. An address is keyed as a
//! client is ([`ClientKey::of`] without an identity: an IPv6 /64, IPv4-mapped as IPv4).
//! Trusted proxies (which carry many clients' connections) are counted server-wide only.
//!
//! Both checks happen at accept, without a task; a connection past either gets `503` written
//! if the socket takes it at once, and is closed.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::clients::ClientKey;
use crate::error::McpError;

/// The connection slots of one server.
pub(crate) struct Connections {
    all: Arc<Semaphore>,
    max: usize,
    by_address: Mutex<HashMap<ClientKey, usize>>,
    max_per_address: usize,
}

impl Connections {
    pub(crate) fn new(max: usize, max_per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            all: Arc::new(Semaphore::new(max)),
            max,
            by_address: Mutex::new(HashMap::new()),
            max_per_address,
        })
    }

    /// Takes a slot for a connection from `peer`, counted against its address unless it is a
    /// trusted proxy; the slot is held until the returned value is dropped.
    ///
    /// # Errors
    ///
    /// [`McpError::TooManyConnections`] when the server is full, or
    /// [`McpError::TooManyConnectionsFromAddress`] when `peer`'s address is.
    pub(crate) fn enter(
        self: &Arc<Self>,
        peer: IpAddr,
        trusted_proxy: bool,
    ) -> Result<ConnectionSlot, McpError> {
        let address = (!trusted_proxy).then(|| ClientKey::of(None, peer));
        if let Some(address) = &address {
            let mut counts = self.counts();
            let count = counts.entry(address.clone()).or_insert(0);
            if *count >= self.max_per_address {
                return Err(McpError::TooManyConnectionsFromAddress {
                    limit: self.max_per_address,
                });
            }
            *count = count.saturating_add(1);
        }
        // From here the address's count is ours: the slot's drop gives it back, also when the
        // server-wide permit below is refused.
        let mut slot = ConnectionSlot {
            connections: Arc::clone(self),
            address,
            _permit: None,
        };
        let permit = Arc::clone(&self.all)
            .try_acquire_owned()
            .map_err(|_| McpError::TooManyConnections { limit: self.max })?;
        slot._permit = Some(permit);
        Ok(slot)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<ClientKey, usize>> {
        self.by_address
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Addresses with a connection open (for tests).
    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.counts().len()
    }
}

/// One connection's slots; dropping it gives them back.
pub(crate) struct ConnectionSlot {
    connections: Arc<Connections>,
    address: Option<ClientKey>,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let Some(address) = &self.address else {
            return;
        };
        let mut counts = self.connections.counts();
        if let Some(count) = counts.get_mut(address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    #[test]
    fn one_address_cannot_take_every_slot() {
        let connections = Connections::new(4, 2);
        let first = connections.enter(ip(1), false).unwrap();
        let _second = connections.enter(ip(1), false).unwrap();
        assert!(matches!(
            connections.enter(ip(1), false),
            Err(McpError::TooManyConnectionsFromAddress { limit: 2 })
        ));
        let _other = connections.enter(ip(2), false).unwrap();
        drop(first);
        let _again = connections.enter(ip(1), false).unwrap();
    }

    #[test]
    fn the_server_wide_cap_holds_and_a_refusal_keeps_no_count() {
        let connections = Connections::new(2, 8);
        let _a = connections.enter(ip(1), false).unwrap();
        let _b = connections.enter(ip(2), false).unwrap();
        assert!(matches!(
            connections.enter(ip(3), false),
            Err(McpError::TooManyConnections { limit: 2 })
        ));
        assert_eq!(connections.addresses(), 2);
    }

    #[test]
    fn trusted_proxies_are_counted_server_wide_only() {
        let connections = Connections::new(8, 1);
        let _a = connections.enter(ip(1), true).unwrap();
        let _b = connections.enter(ip(1), true).unwrap();
        let _c = connections.enter(ip(1), false).unwrap();
        assert_eq!(connections.addresses(), 1);
    }
}
