//! Bytes held in request bodies still arriving: bounded server-wide and per client.
//!
//! A body is read whole before it crosses the envelope (one POST, one message, at most
//! `max_frame_bytes`), and it may take the body timeout to arrive. Without a total, every
//! connection could hold a frame's worth: 512 partial bodies from 8 addresses took the server
//! from 7 MiB to 548-560 MiB, and the allocator kept most of it after they closed (issue 35).
//! So a body takes its bytes from two budgets before they are read: the server's
//! ([`MAX_BODY_BYTES_HELD`]) and its client's ([`MAX_CLIENT_BODY_BYTES_HELD`]). A declared
//! `Content-Length` is taken whole before the first byte is read; a chunked body takes each
//! piece as it comes. A body that finds its client's budget spent is refused with `429`, one
//! that finds the server's spent with `503`, both with `Retry-After`, and its connection
//! closed unread. The bytes go back when the body is dropped (read or not).
//!
//! [`MAX_BODY_BYTES_HELD`]: crate::limits::MAX_BODY_BYTES_HELD
//! [`MAX_CLIENT_BODY_BYTES_HELD`]: crate::limits::MAX_CLIENT_BODY_BYTES_HELD

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::McpError;

use super::clients::ClientKey;
use super::lock;

/// The wait a refused body is told (`Retry-After`), in milliseconds: a body arrives within
/// the body timeout, so budgets free up within seconds.
const RETRY_AFTER_MS: u64 = 1000;

/// The budgets of one server.
pub(super) struct Bodies {
    max_total: usize,
    max_client: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: usize,
    clients: HashMap<ClientKey, usize>,
}

impl Bodies {
    /// Budgets of `max_total` bytes server-wide and `max_client` per client.
    pub(super) fn new(max_total: usize, max_client: usize) -> Arc<Self> {
        Arc::new(Self {
            max_total,
            max_client,
            held: Mutex::new(Held::default()),
        })
    }

    /// A claim on the budgets for one body of `client`, holding nothing yet.
    pub(super) fn claim(self: &Arc<Self>, client: &ClientKey) -> Claim {
        Claim {
            bodies: Arc::clone(self),
            client: client.clone(),
            bytes: 0,
        }
    }

    /// Frees the table's memory after a flood (by the sweeper: not on every request, which
    /// would give the table back and take it again each time).
    pub(super) fn sweep(&self) {
        lock(&self.held).clients.shrink_to_fit();
    }

    /// Bytes held server-wide (for tests).
    #[cfg(test)]
    fn total(&self) -> usize {
        lock(&self.held).total
    }
}

/// One body's bytes in the budgets, given back when dropped.
pub(super) struct Claim {
    bodies: Arc<Bodies>,
    client: ClientKey,
    bytes: usize,
}

impl Claim {
    /// Takes `more` bytes from both budgets, or none.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`] when the client's budget cannot hold them (`429`),
    /// [`McpError::BodiesFull`] when the server's cannot (`503`).
    pub(super) fn take(&mut self, more: usize) -> Result<(), McpError> {
        if more == 0 {
            return Ok(());
        }
        let bodies = &self.bodies;
        let mut held = lock(&bodies.held);
        let client = held.clients.get(&self.client).copied().unwrap_or(0);
        if client.saturating_add(more) > bodies.max_client {
            return Err(McpError::RateLimited {
                retry_after_ms: RETRY_AFTER_MS,
            });
        }
        if held.total.saturating_add(more) > bodies.max_total {
            return Err(McpError::BodiesFull {
                limit: bodies.max_total,
            });
        }
        held.total = held.total.saturating_add(more);
        held.clients
            .insert(self.client.clone(), client.saturating_add(more));
        self.bytes = self.bytes.saturating_add(more);
        Ok(())
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut held = lock(&self.bodies.held);
        held.total = held.total.saturating_sub(self.bytes);
        let emptied = match held.clients.get_mut(&self.client) {
            Some(bytes) => {
                *bytes = bytes.saturating_sub(self.bytes);
                *bytes == 0
            }
            None => false,
        };
        if emptied {
            held.clients.remove(&self.client);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    fn client(last: u8) -> ClientKey {
        ClientKey::of(None, IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn bodies_take_from_the_client_s_and_the_server_s_budget_and_give_back() {
        let bodies = Bodies::new(10, 6);
        let mut a = bodies.claim(&client(1));
        a.take(4).unwrap();
        let mut a2 = bodies.claim(&client(1));
        assert_eq!(
            a2.take(3),
            Err(McpError::RateLimited {
                retry_after_ms: RETRY_AFTER_MS
            })
        );
        a2.take(2).unwrap();
        let mut b = bodies.claim(&client(2));
        b.take(4).unwrap();
        let mut c = bodies.claim(&client(3));
        assert_eq!(c.take(1), Err(McpError::BodiesFull { limit: 10 }));
        assert_eq!(bodies.total(), 10);
        drop(a);
        c.take(4).unwrap();
        drop((a2, b, c));
        assert_eq!(bodies.total(), 0);
        assert!(lock(&bodies.held).clients.is_empty());
    }
}
