//! Legacy (2025-11-25 and earlier) HTTP sessions: an engine each, named by a random id.
//!
//! `initialize` without an `Mcp-Session-Id` opens a session; its id (32 bytes from the
//! operating system's CSPRNG, as 64 hex characters: visible ASCII) comes back in the
//! `Mcp-Session-Id` header and must be sent on every later request. A session is bound to the
//! authenticated identity that opened it: another identity presenting its id gets `404`, as
//! for an unknown one (holding an id is not authentication). Sessions are bounded in number
//! and forgotten after `session_idle_timeout` unused, or on DELETE; either way the calls they
//! have in flight are stopped.
//!
//! Sessions are also bounded per client (its identity, else its address: [`ClientKey`]), so
//! one client cannot fill the table and lock every other client out: a client at its cap that
//! opens another session loses its own least recently used one. A client can only ever evict
//! its own sessions; the server-wide cap then holds the rest (`503` when every slot belongs to
//! sessions used within the idle timeout).
//!
//! With a shared store (`replicas`), this table is each replica's cache of the sessions it
//! serves: the store's record decides whether a session lives, and a replica that does not
//! hold one takes it over ([`Sessions::adopt`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::task::AbortHandle;

use super::clients::ClientKey;
use super::lock;
use crate::engine::Engine;
use crate::error::McpError;
use crate::handler::Ticket;

/// Bytes of randomness in a session id.
const SESSION_ID_BYTES: usize = 32;

/// A session's `GET` stream.
#[derive(Default)]
struct Listener {
    task: Option<AbortHandle>,
    ended: bool,
}

/// One legacy session.
pub(crate) struct Session {
    engine: Mutex<Engine>,
    identity: Option<Arc<str>>,
    owner: ClientKey,
    last_used: Mutex<Instant>,
    tasks: Mutex<HashMap<Ticket, AbortHandle>>,
    /// The task of the session's `GET` stream, if one is open, and whether the session has
    /// ended (then no stream may open: a `GET` that found the session just before its `DELETE`
    /// must not leave one behind).
    listener: Mutex<Listener>,
    /// Whether the shared store has this session's record (opened while it was unreachable,
    /// under local limits, it has not; without a store, never).
    pub(crate) shared: std::sync::atomic::AtomicBool,
}

impl Session {
    /// The session's engine; hold the guard only briefly and never across an await.
    pub(crate) fn engine(&self) -> MutexGuard<'_, Engine> {
        lock(&self.engine)
    }

    /// The running call tasks, so a cancellation or the session's end can stop them.
    pub(crate) fn tasks(&self) -> MutexGuard<'_, HashMap<Ticket, AbortHandle>> {
        lock(&self.tasks)
    }

    /// Stops the call with `ticket`, if it is running.
    pub(crate) fn cancel(&self, ticket: &Ticket) {
        if let Some(task) = self.tasks().remove(ticket) {
            task.abort();
        }
    }

    /// Makes `task` the session's `GET` stream, ending the one before it.
    ///
    /// Returns `false`, with `task` stopped, when the session has ended meanwhile.
    pub(crate) fn listen(&self, task: AbortHandle) -> bool {
        let mut listener = lock(&self.listener);
        if listener.ended {
            task.abort();
            return false;
        }
        if let Some(previous) = listener.task.replace(task) {
            previous.abort();
        }
        true
    }

    /// Whether the session's `GET` stream is open: a session someone listens on is in use,
    /// however long ago its last request was.
    fn is_listening(&self) -> bool {
        lock(&self.listener)
            .task
            .as_ref()
            .is_some_and(|task| !task.is_finished())
    }

    fn stop_all(&self) {
        for (_, task) in self.tasks().drain() {
            task.abort();
        }
        let mut listener = lock(&self.listener);
        listener.ended = true;
        if let Some(task) = listener.task.take() {
            task.abort();
        }
    }
}

/// Every session of one server.
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    /// The ids of shared sessions (in the store) that a client at its cap lost here, until
    /// `replicas` ends them in the store too ([`Sessions::take_evicted`]); at most `max`.
    evicted: Mutex<Vec<String>>,
    max: usize,
    per_client: usize,
    idle: Duration,
}

impl Sessions {
    pub(crate) fn new(max: usize, per_client: usize, idle: Duration) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            evicted: Mutex::new(Vec::new()),
            max,
            per_client: per_client.max(1),
            idle,
        }
    }

    /// Opens a session around `engine` for `identity`, owned by `owner`; if `owner` already
    /// has `per_client` sessions, its least recently used one ends first.
    ///
    /// # Errors
    ///
    /// [`McpError::TooManySessions`] when `max` live sessions exist; [`McpError::Internal`]
    /// if the operating system has no randomness to give.
    pub(crate) fn open(
        &self,
        engine: Engine,
        identity: Option<Arc<str>>,
        owner: ClientKey,
    ) -> Result<(String, Arc<Session>), McpError> {
        let id = new_id().ok_or(McpError::Internal("no randomness for a session id"))?;
        let session = self.insert(id.clone(), engine, identity, owner)?;
        Ok((id, session))
    }

    /// Takes over session `id`, opened on another replica (the shared store holds it), with
    /// `engine` resumed at its handshake; bounded as [`Sessions::open`] is.
    ///
    /// # Errors
    ///
    /// [`McpError::TooManySessions`] when `max` live sessions exist here.
    pub(crate) fn adopt(
        &self,
        id: &str,
        engine: Engine,
        identity: Option<Arc<str>>,
        owner: ClientKey,
    ) -> Result<Arc<Session>, McpError> {
        self.insert(id.to_owned(), engine, identity, owner)
    }

    fn insert(
        &self,
        id: String,
        engine: Engine,
        identity: Option<Arc<str>>,
        owner: ClientKey,
    ) -> Result<Arc<Session>, McpError> {
        let mut map = lock(&self.map);
        let mut count = 0_usize;
        let mut oldest: Option<(&String, Instant)> = None;
        for (id, session) in map.iter().filter(|(_, session)| session.owner == owner) {
            count = count.saturating_add(1);
            let used = *lock(&session.last_used);
            if oldest.is_none_or(|(_, first)| used < first) {
                oldest = Some((id, used));
            }
        }
        let evicted = oldest
            .filter(|_| count >= self.per_client)
            .map(|(id, _)| id.clone());
        if let Some((id, session)) = evicted.and_then(|id| map.remove_entry(&id)) {
            session.stop_all();
            tracing::debug!("a client at its session cap lost its least recently used one");
            // Its record in the shared store would let any replica (this one too) take it
            // over again: it is ended there as well.
            if session.shared.load(std::sync::atomic::Ordering::Relaxed) {
                let mut evicted = lock(&self.evicted);
                if evicted.len() >= self.max {
                    evicted.remove(0);
                }
                evicted.push(id);
            }
        }
        if map.len() >= self.max {
            self.expire(&mut map);
        }
        if map.len() >= self.max {
            return Err(McpError::TooManySessions { limit: self.max });
        }
        let session = Arc::new(Session {
            engine: Mutex::new(engine.counted_as_http_session()),
            identity,
            owner,
            last_used: Mutex::new(Instant::now()),
            tasks: Mutex::new(HashMap::new()),
            listener: Mutex::new(Listener::default()),
            shared: std::sync::atomic::AtomicBool::new(false),
        });
        if let Some(previous) = map.insert(id, Arc::clone(&session)) {
            previous.stop_all();
        }
        Ok(session)
    }

    /// The ids of shared sessions lost to the per-client cap since the last call.
    pub(crate) fn take_evicted(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.evicted))
    }

    /// The live session `id` of `identity`, marked used.
    pub(crate) fn find(&self, id: &str, identity: Option<&Arc<str>>) -> Option<Arc<Session>> {
        let mut map = lock(&self.map);
        let session = map.get(id)?;
        if session.identity.as_ref() != identity {
            return None;
        }
        let now = Instant::now();
        let mut last_used = lock(&session.last_used);
        if now.saturating_duration_since(*last_used) > self.idle && !session.is_listening() {
            drop(last_used);
            if let Some(session) = map.remove(id) {
                session.stop_all();
            }
            return None;
        }
        *last_used = now;
        drop(last_used);
        Some(Arc::clone(session))
    }

    /// Ends session `id` of `identity`; whether there was one.
    pub(crate) fn close(&self, id: &str, identity: Option<&Arc<str>>) -> bool {
        let mut map = lock(&self.map);
        let owned = map
            .get(id)
            .is_some_and(|session| session.identity.as_ref() == identity);
        if !owned {
            return false;
        }
        if let Some(session) = map.remove(id) {
            session.stop_all();
        }
        true
    }

    /// The ids and identities of the sessions the shared store has a record of.
    pub(crate) fn shared_ids(&self) -> Vec<(String, Option<Arc<str>>)> {
        lock(&self.map)
            .iter()
            .filter(|(_, session)| session.shared.load(std::sync::atomic::Ordering::Relaxed))
            .map(|(id, session)| (id.clone(), session.identity.clone()))
            .collect()
    }

    /// Forgets sessions idle for longer than the timeout.
    pub(crate) fn sweep(&self) {
        let mut map = lock(&self.map);
        self.expire(&mut map);
    }

    fn expire(&self, map: &mut HashMap<String, Arc<Session>>) {
        let now = Instant::now();
        map.retain(|_, session| {
            let idle = now.saturating_duration_since(*lock(&session.last_used));
            let live = idle <= self.idle || session.is_listening();
            if !live {
                session.stop_all();
            }
            live
        });
        if map.capacity() > self.max.saturating_mul(2) {
            map.shrink_to_fit();
        }
    }

    /// Live sessions (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.map).len()
    }
}

/// A fresh session id: 32 random bytes from the OS, hex-encoded.
fn new_id() -> Option<String> {
    let mut bytes = [0_u8; SESSION_ID_BYTES];
    getrandom::fill(&mut bytes).ok()?;
    let mut id = String::with_capacity(SESSION_ID_BYTES.saturating_mul(2));
    for byte in bytes {
        for nibble in [byte >> 4, byte & 0x0f] {
            id.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Server;

    fn engine() -> Engine {
        Server::builder("t", "1").build().unwrap().engine()
    }

    #[test]
    fn ids_are_long_random_visible_ascii() {
        let a = new_id().unwrap();
        let b = new_id().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|byte| (0x21..=0x7e).contains(&byte)));
        assert_ne!(a, b);
    }

    fn owner(name: &str) -> ClientKey {
        ClientKey::of(Some(&Arc::from(name)), std::net::Ipv4Addr::LOCALHOST.into())
    }

    #[test]
    fn sessions_are_bounded_and_bound_to_their_identity() {
        let sessions = Sessions::new(2, 8, Duration::from_secs(60));
        let alice: Arc<str> = Arc::from("ALICE");
        let (id, _) = sessions
            .open(engine(), Some(Arc::clone(&alice)), owner("ALICE"))
            .unwrap();
        sessions.open(engine(), None, owner("B")).unwrap();
        assert!(matches!(
            sessions.open(engine(), None, owner("C")),
            Err(McpError::TooManySessions { limit: 2 })
        ));
        assert!(sessions.find(&id, Some(&alice)).is_some());
        assert!(sessions.find(&id, None).is_none());
        assert!(!sessions.close(&id, None));
        assert!(sessions.close(&id, Some(&alice)));
        assert!(sessions.find(&id, Some(&alice)).is_none());
        assert_eq!(sessions.len(), 1);
    }

    /// The release red team's finding 3: a `GET` that found its session just before the
    /// `DELETE` ended it made its stream afterwards, on the ended session, and it lived on.
    #[test]
    fn a_stream_made_after_its_session_ended_is_stopped_at_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let sessions = Sessions::new(2, 2, Duration::from_secs(60));
            let (id, _) = sessions.open(engine(), None, owner("A")).unwrap();
            let found = sessions.find(&id, None).unwrap();
            let first = tokio::spawn(std::future::pending::<()>());
            assert!(found.listen(first.abort_handle()));
            assert!(sessions.close(&id, None));
            assert!(
                first.await.unwrap_err().is_cancelled(),
                "ended with its session"
            );
            let late = tokio::spawn(std::future::pending::<()>());
            assert!(!found.listen(late.abort_handle()), "the session has ended");
            assert!(late.await.unwrap_err().is_cancelled());
        });
    }

    #[test]
    fn a_client_at_its_cap_loses_its_least_recently_used_session_and_no_other() {
        let sessions = Sessions::new(8, 2, Duration::from_secs(60));
        let (other, _) = sessions.open(engine(), None, owner("B")).unwrap();
        let (first, _) = sessions.open(engine(), None, owner("A")).unwrap();
        let (second, _) = sessions.open(engine(), None, owner("A")).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        // Using the first makes the second the least recently used.
        assert!(sessions.find(&first, None).is_some());
        let (third, _) = sessions.open(engine(), None, owner("A")).unwrap();
        assert!(sessions.find(&second, None).is_none());
        assert!(sessions.find(&first, None).is_some());
        assert!(sessions.find(&third, None).is_some());
        assert!(sessions.find(&other, None).is_some());
        assert_eq!(sessions.len(), 3);
    }

    /// Red team (Redis): a shared session lost to the per-client cap stayed in the store,
    /// and the next request with its id took it over again (on this replica too).
    #[test]
    fn a_shared_session_lost_to_the_cap_is_handed_over_to_be_ended_in_the_store() {
        use std::sync::atomic::Ordering;
        let sessions = Sessions::new(8, 1, Duration::from_secs(60));
        let (local, _) = sessions.open(engine(), None, owner("A")).unwrap();
        let (shared, session) = sessions.open(engine(), None, owner("A")).unwrap();
        assert!(sessions.find(&local, None).is_none());
        assert_eq!(
            sessions.take_evicted(),
            Vec::<String>::new(),
            "not in the store"
        );
        session.shared.store(true, Ordering::Relaxed);
        sessions.open(engine(), None, owner("A")).unwrap();
        assert!(sessions.find(&shared, None).is_none());
        assert_eq!(sessions.take_evicted(), [shared]);
        assert_eq!(sessions.take_evicted(), Vec::<String>::new());
    }

    #[test]
    fn a_session_with_an_open_stream_is_not_idle() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let sessions = Sessions::new(4, 4, Duration::ZERO);
            let (id, session) = sessions.open(engine(), None, owner("A")).unwrap();
            let stream = tokio::spawn(std::future::pending::<()>());
            assert!(session.listen(stream.abort_handle()));
            std::thread::sleep(Duration::from_millis(5));
            sessions.sweep();
            assert!(sessions.find(&id, None).is_some(), "kept while listened to");
            // Once the stream ends, the session idles out as any other.
            stream.abort();
            let _ended = stream.await;
            std::thread::sleep(Duration::from_millis(5));
            sessions.sweep();
            assert_eq!(sessions.len(), 0);
        });
    }

    #[test]
    fn idle_sessions_expire() {
        let sessions = Sessions::new(4, 4, Duration::ZERO);
        let (id, _) = sessions.open(engine(), None, owner("A")).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(sessions.find(&id, None).is_none());
        sessions.open(engine(), None, owner("A")).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        sessions.sweep();
        assert_eq!(sessions.len(), 0);
    }
}
