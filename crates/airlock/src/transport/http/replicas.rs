//! What replicas share: every quota, in-flight cap and legacy session an HTTP request meets,
//! counted in this process or, with a shared store (`store`, the `redis` feature), by every
//! replica of the deployment together. The store is asked through its seam (`store::Store`,
//! typed keys and session state): the same lines compile with and without the feature, and
//! without it the store is never there.
//!
//! Trusts the request's checked parts (its client, the tool name it asked for, the session id
//! it presented: the store only ever sees ids of our own form) and the operator's limits.
//! Owns the choice between the two counts, and the policy while the store is unreachable:
//!
//! - **no store** (stdio and the library's default): the client's quotas and call slots in
//!   `clients`, the server's call slots in a semaphore, the server-wide and per-tool quotas
//!   in the engine (`quota`), sessions in `session`. Nothing here changes that path.
//! - **a store that answers**: the client's request quota before the body; then, before the
//!   engine sees the request, for `tools/call` the client's, the tool's and the server's call
//!   quotas and the server's and the client's in-flight leases, all in one atomic check, and
//!   for any other request the server's quota on cheap methods. The engine's own quotas are
//!   delegated (they admit at once), so nothing is counted twice. This replica's semaphore
//!   still bounds what it runs itself. A legacy session is looked up in the store on every
//!   request (which also restarts its idle timer), so one opened on any replica is served by
//!   any other, and one ended on any replica is ended on all.
//! - **a store that does not answer**: fail closed (`-31503`, `503`), or the local counts
//!   above, by the operator's [`Unreachable`](super::Unreachable) policy.
//!
//! With a store, quotas are charged before the engine's own checks of the request: a
//! malformed `tools/call` costs its quota too (stricter than one process alone).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::engine::Engine;
use crate::error::McpError;

use super::State;
use super::caller::Caller;
use super::clients::ClientKey;
use super::session::Session;
use super::slots::CallSlots;
use super::store::{LeaseKey, QuotaKey, Refused, SessionState, Store};

impl State {
    /// One request of `client`, whatever it carries: the client's request quota.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`]; [`McpError::StoreUnavailable`] when failing closed.
    pub(super) async fn admit_request(&self, client: &ClientKey) -> Result<(), McpError> {
        if let Some(store) = &self.store {
            let Some(rate) = self.limits.client_request_rate else {
                return Ok(());
            };
            let quota = (QuotaKey::ClientRequests(client), rate);
            match store.admit(&[quota], &[]).await {
                Some(outcome) => return outcome.map(drop).map_err(|refused| self.refusal(refused)),
                None => self.unreachable(store)?,
            }
        }
        self.clients.admit_request(client)
    }

    /// A request other than `tools/call`: with a store, the server's quota on cheap methods
    /// (without one, the engine charges it).
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`]; [`McpError::StoreUnavailable`] when failing closed.
    pub(super) async fn admit_cheap(&self) -> Result<(), McpError> {
        if let Some(store) = &self.store {
            let Some(rate) = self.shared.limits().cheap_method_rate else {
                return Ok(());
            };
            let quota = (QuotaKey::CheapMethods, rate);
            return match store.admit(&[quota], &[]).await {
                Some(outcome) => outcome.map(drop).map_err(|refused| self.refusal(refused)),
                None => {
                    self.unreachable(store)?;
                    self.shared.quotas.admit_cheap_locally()
                }
            };
        }
        Ok(())
    }

    /// A `tools/call` of `tool` (the name asked for, if a string) by `client`: its quotas
    /// and its slots, held until the returned slots are dropped.
    ///
    /// # Errors
    ///
    /// [`McpError::RateLimited`], [`McpError::Overloaded`], [`McpError::ClientBusy`];
    /// [`McpError::StoreUnavailable`] when failing closed.
    pub(super) async fn call_slots(
        &self,
        client: &ClientKey,
        tool: Option<&str>,
    ) -> Result<CallSlots, McpError> {
        if let Some(store) = &self.store {
            // The client's share of the server-wide rate among the clients this replica
            // serves (the store's quota itself is not split: see `shares`).
            self.shares.admit(client)?;
            match self.shared_call_slots(store, client, tool).await {
                Some(slots) => return slots,
                None => {
                    self.unreachable(store)?;
                    // Local limits: the client's, then the tool's and the server's (which
                    // the engine no longer charges), then local slots.
                    self.clients.admit_call(client)?;
                    self.shared.quotas.admit_call_locally(tool.unwrap_or(""))?;
                    return self.local_slots(client);
                }
            }
        }
        self.clients.admit_call(client)?;
        // The client's share of the server-wide quota the engine then charges.
        self.shares.admit(client)?;
        self.local_slots(client)
    }

    /// The slots a reply that may be large holds until it is written (`resources/read`,
    /// `prompts/get`: up to a few MiB of escaped text, answered at once): this replica's
    /// server-wide slot and the client's, as a call's. Counted here even with a shared store:
    /// what they bound is this process's memory.
    pub(super) fn reply_slots(&self, client: &ClientKey) -> Result<CallSlots, McpError> {
        self.local_slots(client)
    }

    /// This replica's server-wide slot and the client's slot, both counted here.
    fn local_slots(&self, client: &ClientKey) -> Result<CallSlots, McpError> {
        let server = self.server_slot()?;
        let client = self.clients.enter(client)?;
        Ok(CallSlots {
            _server: server,
            _client: Some(client),
            _lease: None,
        })
    }

    fn server_slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, McpError> {
        Arc::clone(&self.calls)
            .try_acquire_owned()
            .map_err(|_| McpError::Overloaded {
                limit: self.shared.limits().max_in_flight.get(),
            })
    }

    /// The live legacy session `id` of `caller`: this replica's, or one another replica
    /// opened (its engine built here from the store's record).
    ///
    /// # Errors
    ///
    /// [`McpError::StoreUnavailable`] when failing closed; [`McpError::TooManySessions`]
    /// when this replica has no room to take it over.
    pub(super) async fn find_session(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<Option<Arc<Session>>, McpError> {
        let identity = caller.identity.as_ref();
        let local = self.sessions.find(id, identity);
        if let Some(store) = &self.store {
            let idle = self.limits.session_idle_timeout;
            return match store.session_touch(id, idle, identity).await {
                Some(Some(record)) if record.identity.as_ref() != identity => Ok(None),
                Some(Some(record)) => match local {
                    Some(session) => {
                        session.shared.store(true, Ordering::Relaxed);
                        if record.confirmed {
                            // Confirmed on another replica (`notifications/initialized`).
                            session.engine().confirm_handshake();
                        }
                        Ok(Some(session))
                    }
                    None => {
                        let engine = Engine::resumed(
                            Arc::clone(&self.shared),
                            caller.audited(),
                            record.protocol,
                            record.confirmed,
                            record.client_can,
                        );
                        tracing::debug!("legacy session taken over from the shared store");
                        let session = self.sessions.adopt(
                            id,
                            engine,
                            identity.cloned(),
                            caller.client.clone(),
                        )?;
                        session.shared.store(true, Ordering::Relaxed);
                        self.end_evicted(store).await;
                        Ok(Some(session))
                    }
                },
                Some(None) => match local {
                    // Opened here while the store was unreachable (local limits): shared now.
                    Some(session) if !session.shared.load(Ordering::Relaxed) => {
                        self.publish_session(id, &session, caller).await?;
                        Ok(Some(session))
                    }
                    // Ended on another replica, or idle there for too long.
                    Some(_) => {
                        self.sessions.close(id, identity);
                        Ok(None)
                    }
                    None => Ok(None),
                },
                None => {
                    self.unreachable(store)?;
                    Ok(local)
                }
            };
        }
        Ok(local)
    }

    /// Publishes session `id`, just opened here, so every replica serves it.
    ///
    /// # Errors
    ///
    /// [`McpError::StoreUnavailable`] when failing closed; the session is then ended.
    pub(super) async fn publish_session(
        &self,
        id: &str,
        session: &Session,
        caller: &Caller,
    ) -> Result<(), McpError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let (handshake, client_can) = {
            let engine = session.engine();
            (engine.handshake(), engine.client_can())
        };
        if let Some((protocol, confirmed)) = handshake {
            let record = SessionState {
                protocol,
                confirmed,
                identity: caller.identity.clone(),
                client_can,
            };
            let idle = self.limits.session_idle_timeout;
            self.end_evicted(store).await;
            match store.session_open(id, &record, idle).await {
                Some(true) => session.shared.store(true, Ordering::Relaxed),
                Some(false) => {
                    self.sessions.close(id, caller.identity.as_ref());
                    return Err(McpError::Internal("session id taken in the shared store"));
                }
                None => {
                    if let Err(error) = self.unreachable(store) {
                        self.sessions.close(id, caller.identity.as_ref());
                        return Err(error);
                    }
                }
            }
        }
        Ok(())
    }

    /// After a message of session `id`: records its handshake in the store if it moved on
    /// from `before` (`notifications/initialized`), so other replicas resume it there.
    pub(super) async fn sync_session(
        &self,
        id: &str,
        session: &Session,
        caller: &Caller,
        before: Option<(crate::version::ProtocolVersion, bool)>,
    ) {
        if let Some(store) = &self.store {
            let (now, client_can) = {
                let engine = session.engine();
                (engine.handshake(), engine.client_can())
            };
            if let Some((protocol, confirmed)) = now
                && now != before
            {
                let record = SessionState {
                    protocol,
                    confirmed,
                    identity: caller.identity.clone(),
                    client_can,
                };
                let idle = self.limits.session_idle_timeout;
                if store.session_update(id, &record, idle).await.is_none() {
                    tracing::debug!("a session's handshake could not be recorded in the store");
                }
            }
        }
    }

    /// Ends session `id` of `caller` here and in the store; whether there was one.
    ///
    /// # Errors
    ///
    /// [`McpError::StoreUnavailable`] when failing closed.
    pub(super) async fn close_session(&self, id: &str, caller: &Caller) -> Result<bool, McpError> {
        let identity = caller.identity.as_ref();
        let local = self.sessions.close(id, identity);
        if let Some(store) = &self.store {
            let idle = self.limits.session_idle_timeout;
            return match store.session_touch(id, idle, identity).await {
                Some(Some(record)) if record.identity.as_ref() == identity => {
                    match store.session_close(id).await {
                        Some(()) => Ok(true),
                        None => self.unreachable(store).map(|()| true),
                    }
                }
                Some(_) => Ok(local),
                None => self.unreachable(store).map(|()| local),
            };
        }
        Ok(local)
    }

    /// Ends here the shared sessions whose record is gone from the store (ended by a
    /// `DELETE` on another replica, or idle there for too long): their calls running here are
    /// stopped and their slots given back, without waiting for their next request. While the
    /// store is unreachable nothing is ended.
    pub(super) async fn sweep_shared_sessions(&self) {
        let Some(store) = &self.store else {
            return;
        };
        for (id, identity) in self.sessions.shared_ids() {
            if store.session_exists(&id).await == Some(false) {
                tracing::debug!("a shared session ended elsewhere is ended here too");
                self.sessions.close(&id, identity.as_ref());
            }
        }
    }

    /// Ends in the store the sessions a client at its cap lost here: else any replica would
    /// take them over again from their records, and the cap would bound nothing.
    async fn end_evicted(&self, store: &Store) {
        for id in self.sessions.take_evicted() {
            if store.session_close(&id).await.is_none() {
                tracing::debug!("an evicted session could not be ended in the store");
            }
        }
    }

    /// Whether to go on with the local counts while the store is unreachable: not when it
    /// fails closed.
    fn unreachable(&self, store: &Store) -> Result<(), McpError> {
        if store.fails_closed() {
            Err(McpError::StoreUnavailable)
        } else {
            Ok(())
        }
    }

    /// The error of a refusal by the shared counts.
    fn refusal(&self, refused: Refused) -> McpError {
        match refused {
            Refused::Quota { retry_after_ms } => McpError::RateLimited { retry_after_ms },
            Refused::Full { index: 0 } => McpError::Overloaded {
                limit: self.shared.limits().max_in_flight.get(),
            },
            Refused::Full { .. } => McpError::ClientBusy {
                limit: self.limits.client_in_flight.get(),
            },
        }
    }

    /// The shared quotas and leases of one call; `None` when the store is unreachable.
    async fn shared_call_slots(
        &self,
        store: &Store,
        client: &ClientKey,
        tool: Option<&str>,
    ) -> Option<Result<CallSlots, McpError>> {
        let mut quotas = Vec::with_capacity(3);
        if let Some(rate) = self.limits.client_call_rate {
            quotas.push((QuotaKey::ClientCalls(client), rate));
        }
        // Only a registered tool's own name reaches a key; an unknown one is charged to the
        // server's quota alone, as the engine does.
        let rated = tool.and_then(|tool| {
            let registry = self.shared.registry();
            let mut rated = registry.rates();
            rated
                .find(|(name, _)| *name == tool)
                .map(|(name, rate)| (name.to_owned(), rate))
        });
        if let Some((name, rate)) = &rated {
            quotas.push((QuotaKey::Tool(name), *rate));
        }
        if let Some(rate) = self.shared.limits().tool_call_rate {
            quotas.push((QuotaKey::ServerCalls, rate));
        }
        let leases = [
            (
                LeaseKey::ServerCalls,
                self.shared.limits().max_in_flight.get(),
            ),
            (LeaseKey::Client(client), self.limits.client_in_flight.get()),
        ];
        let lease = match store.admit(&quotas, &leases).await? {
            Ok(lease) => lease,
            Err(refused) => return Some(Err(self.refusal(refused))),
        };
        // This replica's own bound on what it runs: the lease goes back if it is full.
        Some(self.server_slot().map(|server| CallSlots {
            _server: server,
            _client: None,
            _lease: lease,
        }))
    }
}
