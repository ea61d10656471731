//! The proxy a networked tool's commands reach the network through, run by airlock: HTTP
//! `CONNECT`, plain-HTTP forwarding and SOCKS5 `CONNECT`, on one socket.
//!
//! A command of a tool with `network` runs in a network namespace of its own whose only
//! interface is loopback (`super::netns`). On it the launcher listens at
//! [`PROXY_ADDRESS`] and hands the listening socket to airlock, which accepts on it here: the
//! command's `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` point there, and a program that
//! ignores them reaches nothing, since no other address exists in its namespace.
//!
//! For every connection the proxy reads what is asked (a name or an address, and a port),
//! checks it against the tool's [`Destinations`], resolves a name itself, checks each resolved
//! address again at connect time (a listed name that resolves to loopback, a private range or
//! the metadata service is refused: no DNS rebinding), connects within
//! `NETWORK_CONNECT_TIMEOUT`, and then copies bytes both ways, counting them against the
//! call's budgets. TLS is not terminated: past `CONNECT` the proxy sees only bytes.
//!
//! Per call (`Session`): at most `network_connections` connections to destinations, and
//! `network_up_mib` / `network_down_mib` bytes sent and received over all of them; a call past
//! a byte budget is stopped (its connections cut). Every attempt, allowed or refused, is kept
//! for the call's result and audit record (the first `NETWORK_RECORDED_ATTEMPTS`, then a
//! count). Connections to the proxy itself are bounded too: `NETWORK_PROXY_OPEN` open at
//! once, each request head at most `NETWORK_PROXY_HEAD_BYTES` read within
//! `NETWORK_PROXY_HEAD_TIMEOUT`.
//!
//! What the proxy does not cover: what a listed host does with what it is sent (a listed host
//! that is itself an open proxy reaches everything), and data the command sends to a listed
//! host (SECURITY.md, "Network").

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::limits::{
    NETWORK_CALL_LOOKUPS, NETWORK_CONNECT_TIMEOUT, NETWORK_PROXY_BUFFERED,
    NETWORK_PROXY_HEAD_BYTES, NETWORK_PROXY_HEAD_TIMEOUT, NETWORK_PROXY_OPEN,
    NETWORK_PROXY_OPEN_TOTAL, NETWORK_RECORDED_ATTEMPTS, NETWORK_SERVER_LOOKUPS,
};

use super::Resources;
use super::destinations::{Destinations, Refusal, Target, parse_name};

/// Where the proxy listens inside a networked tool's namespace (its own loopback: every
/// launcher has the same address, in a namespace of its own).
pub const PROXY_ADDRESS: SocketAddr =
    SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), PROXY_PORT);

/// The proxy's port in a tool's namespace.
pub const PROXY_PORT: u16 = 3128;

/// The environment a networked tool's commands get: every proxy variable, in both cases, at
/// the proxy; nothing is exempt from it.
pub fn proxy_environment() -> Vec<(&'static str, String)> {
    let http = format!("http://{PROXY_ADDRESS}");
    let socks = format!("socks5h://{PROXY_ADDRESS}");
    vec![
        ("HTTP_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", String::new()),
        ("no_proxy", String::new()),
    ]
}

/// Names the proxy resolves to fixed addresses instead of asking the system: for tests only
/// (`--test-hosts`, refused by release builds), so a test can give a listed name a loopback
/// server, or point one at a private address. A loopback address given here stands for a
/// public host (the test's internet); every other address is judged as a resolved one is,
/// so a name pinned to a private or link-local address is refused.
pub fn set_test_hosts(hosts: Vec<(String, IpAddr)>) {
    if TEST_HOSTS.set(hosts).is_err() {
        tracing::debug!("the test hosts were set already");
    }
}

static TEST_HOSTS: OnceLock<Vec<(String, IpAddr)>> = OnceLock::new();

static LOOKUPS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(NETWORK_SERVER_LOOKUPS);

/// A call's network budgets.
#[derive(Clone, Copy, Debug)]
struct Budget {
    connections: u32,
    up: u64,
    down: u64,
}

impl Budget {
    fn of(resources: &Resources) -> Self {
        let mib = |n: u64| n.saturating_mul(1024 * 1024);
        Self {
            connections: resources.network_connections,
            up: mib(resources.network_up_mib),
            down: mib(resources.network_down_mib),
        }
    }
}

/// One connection attempt, as the call's result and audit record show it.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct Attempt {
    /// What was asked for, `host:port` (a name is checked to be a DNS name before it is kept;
    /// anything else is shown as `?`).
    pub destination: String,
    /// The address connected to, or the first one refused.
    pub address: Option<IpAddr>,
    /// Why it was refused; `None`: it was allowed.
    pub refusal: Option<Refusal>,
    /// Bytes the command sent over it.
    pub bytes_up: u64,
    /// Bytes it received.
    pub bytes_down: u64,
}

/// What a call did on the network.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct NetworkRecord {
    /// The first attempts, in order.
    pub attempts: Vec<Attempt>,
    /// Attempts past the first `NETWORK_RECORDED_ATTEMPTS`, counted only.
    pub unrecorded: u64,
    /// Bytes sent, over every connection.
    pub bytes_up: u64,
    /// Bytes received.
    pub bytes_down: u64,
    /// Which byte budget the call passed (`"network_up_mib"` or `"network_down_mib"`), if any.
    pub cut_by: Option<&'static str>,
}

/// An attempt as it is being kept: its bytes are counted as they pass.
struct Kept {
    attempt: Attempt,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
}

/// What a call's connections share.
struct Shared {
    rules: Arc<Destinations>,
    budget: Budget,
    connections: AtomicU32,
    up: AtomicU64,
    down: AtomicU64,
    open: AtomicUsize,
    cut_by: Mutex<Option<&'static str>>,
    cut: AtomicBool,
    cut_notice: Notify,
    kept: Mutex<Vec<Kept>>,
    unrecorded: AtomicU64,
    tasks: Mutex<Vec<AbortHandle>>,
    /// The call's share of name lookups ([`NETWORK_CALL_LOOKUPS`]).
    lookups: Arc<tokio::sync::Semaphore>,
}

impl Shared {
    fn keep(&self, attempt: Attempt) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
        let up = Arc::new(AtomicU64::new(0));
        let down = Arc::new(AtomicU64::new(0));
        let mut kept = lock(&self.kept);
        if kept.len() < NETWORK_RECORDED_ATTEMPTS {
            kept.push(Kept {
                attempt,
                up: Arc::clone(&up),
                down: Arc::clone(&down),
            });
        } else {
            self.unrecorded.fetch_add(1, Ordering::Relaxed);
        }
        (up, down)
    }

    fn cut(&self, by: &'static str) {
        let mut cut_by = lock(&self.cut_by);
        cut_by.get_or_insert(by);
        self.cut.store(true, Ordering::Release);
        self.cut_notice.notify_waiters();
    }

    fn abort_all(&self) {
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        for task in tasks {
            task.abort();
        }
    }
}

/// A lock that a panicking holder did not poison for the others (the state it guards stays
/// consistent at every step).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The proxy for one call: accepting on the launcher's socket until the call ends. Dropping it
/// (the call's future dropped by a timeout or a cancellation) cuts every connection.
pub(crate) struct Session {
    shared: Arc<Shared>,
    acceptor: AbortHandle,
}

impl Session {
    /// Starts accepting on `listener` (a copy of the launcher's socket) for one call of a tool
    /// with `rules` and `resources`' budgets.
    ///
    /// # Errors
    ///
    /// The socket could not be registered with the runtime.
    pub(crate) fn start(
        listener: &OwnedFd,
        rules: Arc<Destinations>,
        resources: &Resources,
    ) -> io::Result<Self> {
        let listener = std::net::TcpListener::from(listener.try_clone()?);
        listener.set_nonblocking(true)?;
        // The socket outlives calls: what waits in its backlog now was connected by an
        // earlier call (none of this one's processes runs yet), just before it was killed.
        // It is dropped unread, so no call's request is sent on another's budget and record.
        let mut stale = 0_usize;
        while listener.accept().is_ok() {
            stale = stale.saturating_add(1);
        }
        if stale > 0 {
            tracing::debug!(stale, "dropped connections an earlier call left queued");
        }
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let shared = Arc::new(Shared {
            rules,
            budget: Budget::of(resources),
            connections: AtomicU32::new(0),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            cut_by: Mutex::new(None),
            cut: AtomicBool::new(false),
            cut_notice: Notify::new(),
            kept: Mutex::new(Vec::new()),
            unrecorded: AtomicU64::new(0),
            tasks: Mutex::new(Vec::new()),
            lookups: Arc::new(tokio::sync::Semaphore::new(NETWORK_CALL_LOOKUPS)),
        });
        let accepting = Arc::clone(&shared);
        let acceptor =
            tokio::spawn(async move { accept(listener, accepting).await }).abort_handle();
        Ok(Self { shared, acceptor })
    }

    /// Resolves once the call has passed a byte budget.
    pub(crate) async fn passed_a_budget(&self) {
        loop {
            let notified = self.shared.cut_notice.notified();
            if self.shared.cut.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// Which byte budget the call passed (`network_up_mib` or `network_down_mib`).
    pub(crate) fn cut_by(&self) -> &'static str {
        lock(&self.shared.cut_by).unwrap_or("network_down_mib")
    }

    /// Ends the call's network: cuts every connection, and returns what it did.
    pub(crate) fn finish(self) -> NetworkRecord {
        self.acceptor.abort();
        self.shared.abort_all();
        let shared = &self.shared;
        let kept = lock(&shared.kept);
        NetworkRecord {
            attempts: kept
                .iter()
                .map(|kept| Attempt {
                    bytes_up: kept.up.load(Ordering::Relaxed),
                    bytes_down: kept.down.load(Ordering::Relaxed),
                    ..kept.attempt.clone()
                })
                .collect(),
            unrecorded: shared.unrecorded.load(Ordering::Relaxed),
            bytes_up: shared.up.load(Ordering::Relaxed),
            bytes_down: shared.down.load(Ordering::Relaxed),
            cut_by: *lock(&shared.cut_by),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.shared.abort_all();
    }
}

/// Accepts the command's connections to the proxy, each served by a task of its own.
async fn accept(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: the command's connection waits in the backlog.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        // Past a bound (the call's, or every call's together), a connection is closed at
        // once: it never gets a task.
        let Some(open) = Open::take(&shared) else {
            drop(stream);
            continue;
        };
        let serving = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            // Given back when the connection ends, aborted or not.
            serve(stream, &serving, open).await;
        });
        let mut tasks = lock(&shared.tasks);
        tasks.retain(|task| !task.is_finished());
        tasks.push(task.abort_handle());
    }
}

/// One connection to the proxy counted open, in its call and in all: the descriptors it
/// holds (its socket, the destination's, two pipes: six) are airlock's, so every call's
/// together are bounded by what the process may open ([`server_open_bound`]).
struct Open {
    shared: Arc<Shared>,
}

impl Open {
    fn take(shared: &Arc<Shared>) -> Option<Self> {
        if shared.cut.load(Ordering::Acquire) {
            return None;
        }
        let mine = shared.open.fetch_add(1, Ordering::AcqRel);
        let all = OPEN.fetch_add(1, Ordering::AcqRel);
        // Built first, so that a refusal below gives both counts back through its drop.
        let open = Self {
            shared: Arc::clone(shared),
        };
        (mine < NETWORK_PROXY_OPEN && all < server_open_bound()).then_some(open)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.shared.open.fetch_sub(1, Ordering::AcqRel);
        OPEN.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Proxied connections open over every call.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// How many proxied connections every call together may hold open: a quarter of the
/// descriptors this process may open (six each), at most [`NETWORK_PROXY_OPEN_TOTAL`], at
/// least one call's `NETWORK_PROXY_OPEN`. Worked out once.
fn server_open_bound() -> usize {
    static BOUND: OnceLock<usize> = OnceLock::new();
    *BOUND.get_or_init(|| {
        let descriptors = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .and_then(|limit| usize::try_from(limit).ok())
            .unwrap_or(NETWORK_PROXY_OPEN_TOTAL.saturating_mul(24));
        (descriptors / 24).clamp(NETWORK_PROXY_OPEN, NETWORK_PROXY_OPEN_TOTAL)
    })
}

/// One connection to the proxy: SOCKS5 if it starts with version 5, HTTP otherwise.
async fn serve(mut stream: TcpStream, shared: &Arc<Shared>, open: Open) {
    let mut first = [0_u8; 1];
    let peeked = tokio::time::timeout(NETWORK_PROXY_HEAD_TIMEOUT, stream.peek(&mut first)).await;
    if !matches!(peeked, Ok(Ok(1))) {
        return;
    }
    let outcome = if first == [5] {
        socks(&mut stream, shared).await
    } else {
        http(&mut stream, shared).await
    };
    let Some((upstream, leftover, (up, down))) = outcome else {
        return;
    };
    if !leftover.is_empty() {
        if !count(shared, Direction::Up, &up, leftover.len()) {
            return;
        }
        if write_all(&upstream, &leftover).await.is_err() {
            return;
        }
    }
    // The first connections over every call are copied through buffers of ours; the others
    // are spliced, with no buffer of ours.
    let buffered = Buffered::take();
    let sending = carry(
        &stream,
        &upstream,
        shared,
        Direction::Up,
        &up,
        buffered.is_some(),
    );
    let receiving = carry(
        &upstream,
        &stream,
        shared,
        Direction::Down,
        &down,
        buffered.is_some(),
    );
    let (sent, received) = tokio::join!(sending, receiving);
    if sent.is_err() || received.is_err() {
        tracing::debug!("a proxied connection ended with an error");
    }
    drop((buffered, open));
}

/// What a request opened: the connection, bytes the client sent past its head (to forward
/// first), and the attempt's counters.
type Opened = (TcpStream, Vec<u8>, (Arc<AtomicU64>, Arc<AtomicU64>));

/// An HTTP request: `CONNECT host:port`, or a request with an absolute `http://` URL, which
/// is forwarded with its target made relative and `Connection: close`, so that one client
/// connection reaches one destination.
async fn http(stream: &mut TcpStream, shared: &Arc<Shared>) -> Option<Opened> {
    let head = read_head(stream).await?;
    let (head_len, method, target, version, headers) = {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut fields);
        let parsed = request.parse(&head);
        let Ok(httparse::Status::Complete(len)) = parsed else {
            refuse_http(stream, "?", Refusal::Malformed).await;
            return None;
        };
        let method = request.method.unwrap_or_default().to_owned();
        let target = request.path.unwrap_or_default().to_owned();
        let version = request.version.unwrap_or(1);
        let headers: Vec<(String, Vec<u8>)> = request
            .headers
            .iter()
            .map(|header| (header.name.to_owned(), header.value.to_vec()))
            .collect();
        (len, method, target, version, headers)
    };
    let leftover = head.get(head_len..).unwrap_or_default().to_vec();
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = authority(&target, None) else {
            refuse_http(stream, "?", Refusal::Malformed).await;
            return None;
        };
        let shown = shown(&host, port);
        return match open(shared, host, port, &shown).await {
            Ok((upstream, counters)) => {
                let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
                stream.write_all(established).await.ok()?;
                Some((upstream, leftover, counters))
            }
            Err(refusal) => {
                refuse_http(stream, &shown, refusal).await;
                None
            }
        };
    }
    let Some(rest) = strip_prefix_ignore_case(&target, "http://") else {
        refuse_http(stream, "?", Refusal::Malformed).await;
        return None;
    };
    let (authority_text, path) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at_checked(at)?,
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let Some((host, port)) = authority(authority_text, Some(80)) else {
        refuse_http(stream, "?", Refusal::Malformed).await;
        return None;
    };
    let shown = shown(&host, port);
    match open(shared, host, port, &shown).await {
        Ok((upstream, counters)) => {
            // The request goes to the checked destination, and names it: a `Host` header
            // naming another site (a virtual host behind the same address) is replaced.
            let mut forwarded =
                format!("{method} {path} HTTP/1.{version}\r\nHost: {authority_text}\r\n")
                    .into_bytes();
            for (name, value) in &headers {
                let dropped = [
                    "host",
                    "connection",
                    "keep-alive",
                    "proxy-connection",
                    "proxy-authorization",
                ];
                if dropped
                    .iter()
                    .any(|dropped| name.eq_ignore_ascii_case(dropped))
                {
                    continue;
                }
                forwarded.extend_from_slice(name.as_bytes());
                forwarded.extend_from_slice(b": ");
                forwarded.extend_from_slice(value);
                forwarded.extend_from_slice(b"\r\n");
            }
            forwarded.extend_from_slice(b"Connection: close\r\n\r\n");
            forwarded.extend_from_slice(&leftover);
            Some((upstream, forwarded, counters))
        }
        Err(refusal) => {
            refuse_http(stream, &shown, refusal).await;
            None
        }
    }
}

/// Reads a request head (through the blank line) within the bounds; `None` past them.
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let reading = async {
        let mut head = Vec::with_capacity(1024);
        let mut chunk = [0_u8; 1024];
        loop {
            let read = stream.read(&mut chunk).await.ok()?;
            if read == 0 {
                return None;
            }
            head.extend_from_slice(chunk.get(..read)?);
            if head.windows(4).any(|window| window == b"\r\n\r\n") {
                return Some(head);
            }
            if head.len() > NETWORK_PROXY_HEAD_BYTES {
                return None;
            }
        }
    };
    tokio::time::timeout(NETWORK_PROXY_HEAD_TIMEOUT, reading)
        .await
        .ok()
        .flatten()
}

/// Answers an HTTP request the proxy refused: 403 with the fixed sentence.
async fn refuse_http(stream: &mut TcpStream, shown: &str, refusal: Refusal) {
    let (status, reason) = match refusal {
        Refusal::Malformed => (400, "Bad Request"),
        Refusal::Unresolved | Refusal::Unreachable => (502, "Bad Gateway"),
        _ => (403, "Forbidden"),
    };
    let body = format!("network: {shown} {}\n", refusal.sentence());
    let reply = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    if stream.write_all(reply.as_bytes()).await.is_err() {
        tracing::debug!("a refused proxy client was gone before its answer");
    }
}

/// A SOCKS5 greeting and `CONNECT` (no authentication; `BIND` and `UDP ASSOCIATE` refused).
async fn socks(stream: &mut TcpStream, shared: &Arc<Shared>) -> Option<Opened> {
    let request = async {
        let mut greeting = [0_u8; 2];
        stream.read_exact(&mut greeting).await.ok()?;
        let [_version, count] = greeting;
        let mut methods = vec![0_u8; usize::from(count)];
        stream.read_exact(&mut methods).await.ok()?;
        if !methods.contains(&0) {
            stream.write_all(&[5, 0xff]).await.ok()?;
            return None;
        }
        stream.write_all(&[5, 0]).await.ok()?;
        let mut fixed = [0_u8; 4];
        stream.read_exact(&mut fixed).await.ok()?;
        let [version, command, _reserved, kind] = fixed;
        if version != 5 {
            return None;
        }
        let host = match kind {
            1 => {
                let mut octets = [0_u8; 4];
                stream.read_exact(&mut octets).await.ok()?;
                Host::Address(IpAddr::from(octets))
            }
            3 => {
                let mut len = [0_u8; 1];
                stream.read_exact(&mut len).await.ok()?;
                let mut name = vec![0_u8; usize::from(len[0])];
                stream.read_exact(&mut name).await.ok()?;
                match String::from_utf8(name)
                    .ok()
                    .and_then(|name| parse_name(&name))
                {
                    Some(name) => Host::Name(name),
                    None => Host::Bad,
                }
            }
            4 => {
                let mut octets = [0_u8; 16];
                stream.read_exact(&mut octets).await.ok()?;
                Host::Address(IpAddr::from(octets))
            }
            _ => return Some((command, Host::Bad, 0)),
        };
        let mut port = [0_u8; 2];
        stream.read_exact(&mut port).await.ok()?;
        Some((command, host, u16::from_be_bytes(port)))
    };
    let (command, host, port) = tokio::time::timeout(NETWORK_PROXY_HEAD_TIMEOUT, request)
        .await
        .ok()
        .flatten()?;
    // Reply codes: 0 succeeded, 2 not allowed by the rule set, 4 host unreachable, 7 command
    // not supported, 8 address type not supported.
    let reply = |code: u8| [5, code, 0, 1, 0, 0, 0, 0, 0, 0];
    if command != 1 {
        stream.write_all(&reply(7)).await.ok()?;
        return None;
    }
    let host = match host {
        Host::Bad => {
            stream.write_all(&reply(8)).await.ok()?;
            return None;
        }
        host => host,
    };
    let shown = shown(&host, port);
    match open(shared, host, port, &shown).await {
        Ok((upstream, counters)) => {
            stream.write_all(&reply(0)).await.ok()?;
            Some((upstream, Vec::new(), counters))
        }
        Err(refusal) => {
            let code = match refusal {
                Refusal::Unresolved | Refusal::Unreachable => 4,
                _ => 2,
            };
            stream.write_all(&reply(code)).await.ok()?;
            None
        }
    }
}

/// A host as a request named it.
#[derive(Clone, Debug)]
enum Host {
    Name(String),
    Address(IpAddr),
    Bad,
}

/// `host:port`, `[v6]:port`, or (with a default port) a host alone.
fn authority(text: &str, default_port: Option<u16>) -> Option<(Host, u16)> {
    if text.contains('@') {
        return None;
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => default_port?,
            None => return None,
        };
        (Host::Address(IpAddr::V6(inside.parse().ok()?)), port)
    } else {
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().ok()?),
            None => (text, default_port?),
        };
        let host = match host.parse::<std::net::Ipv4Addr>() {
            Ok(v4) => Host::Address(IpAddr::V4(v4)),
            Err(_) => Host::Name(parse_name(host)?),
        };
        (host, port)
    };
    (port != 0).then_some((host, port))
}

fn shown(host: &Host, port: u16) -> String {
    match host {
        Host::Name(name) => format!("{name}:{port}"),
        Host::Address(IpAddr::V4(v4)) => format!("{v4}:{port}"),
        Host::Address(IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
        Host::Bad => "?".to_owned(),
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let (head, rest) = text.split_at_checked(prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then_some(rest)
}

/// Checks, resolves and connects one request; every attempt is kept for the call's record.
async fn open(
    shared: &Arc<Shared>,
    host: Host,
    port: u16,
    shown: &str,
) -> Result<(TcpStream, (Arc<AtomicU64>, Arc<AtomicU64>)), Refusal> {
    let refused = |refusal: Refusal, address: Option<IpAddr>| {
        shared.keep(Attempt {
            destination: shown.to_owned(),
            address,
            refusal: Some(refusal),
            ..Attempt::default()
        });
        refusal
    };
    let target = match &host {
        Host::Name(name) => Target::Name(name.clone()),
        Host::Address(address) => Target::Address(*address),
        Host::Bad => return Err(refused(Refusal::Malformed, None)),
    };
    let Some(admission) = shared.rules.admits(&target, port) else {
        return Err(refused(Refusal::NotListed, None));
    };
    let count = shared.connections.fetch_add(1, Ordering::AcqRel);
    if count >= shared.budget.connections {
        return Err(refused(Refusal::ConnectionBudget, None));
    }
    let connecting = async {
        let (addresses, stand_in) = match &target {
            Target::Address(address) => (vec![*address], false),
            Target::Name(name) => resolve(name, port, &shared.lookups).await,
        };
        let Some(first) = addresses.first().copied() else {
            return Err((Refusal::Unresolved, None));
        };
        let reachable: Vec<IpAddr> = addresses
            .iter()
            .copied()
            .filter(|address| {
                (stand_in && address.is_loopback())
                    || shared.rules.reaches(admission, *address, port)
            })
            .collect();
        if reachable.is_empty() {
            return Err((Refusal::InsideAddress, Some(first)));
        }
        for address in reachable.iter().take(4) {
            if let Ok(upstream) = TcpStream::connect(SocketAddr::new(*address, port)).await {
                return Ok((upstream, *address));
            }
        }
        Err((Refusal::Unreachable, reachable.first().copied()))
    };
    let connected = tokio::time::timeout(NETWORK_CONNECT_TIMEOUT, connecting)
        .await
        .unwrap_or(Err((Refusal::Unreachable, None)));
    match connected {
        Ok((upstream, address)) => {
            let counters = shared.keep(Attempt {
                destination: shown.to_owned(),
                address: Some(address),
                refusal: None,
                ..Attempt::default()
            });
            if upstream.set_nodelay(true).is_err() {
                tracing::debug!("TCP_NODELAY refused on a proxied connection");
            }
            Ok((upstream, counters))
        }
        Err((refusal, address)) => Err(refused(refusal, address)),
    }
}

/// The addresses of `name`, and whether they are the test hosts' (`set_test_hosts`), else
/// the system resolver's, asked on a blocking thread once the call and the server have a
/// lookup to spare ([`NETWORK_CALL_LOOKUPS`], [`NETWORK_SERVER_LOOKUPS`]); both are held until the lookup
/// ends, even if the connection that asked was given up.
async fn resolve(name: &str, port: u16, call: &Arc<tokio::sync::Semaphore>) -> (Vec<IpAddr>, bool) {
    if let Some(hosts) = TEST_HOSTS.get() {
        let pinned = hosts
            .iter()
            .filter(|(host, _)| host == name)
            .map(|(_, address)| *address)
            .collect();
        return (pinned, true);
    }
    let Ok(mine) = Arc::clone(call).acquire_owned().await else {
        return (Vec::new(), false);
    };
    let Ok(server_wide) = LOOKUPS.acquire().await else {
        return (Vec::new(), false);
    };
    let name = name.to_owned();
    let looking = tokio::task::spawn_blocking(move || {
        let _held = (mine, server_wide);
        match std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), port)) {
            Ok(found) => found.map(|address| address.ip()).take(16).collect(),
            Err(_) => Vec::new(),
        }
    });
    (looking.await.unwrap_or_default(), false)
}

/// Bytes moved per `splice`, and the size asked for each way's pipe: what a connection whose
/// reader stalls holds in the kernel, twice per connection, `NETWORK_PROXY_OPEN` connections
/// per call (16 MiB per call at most).
const PIPE_BYTES: usize = 256 * 1024;

#[derive(Clone, Copy)]
enum Direction {
    Up,
    Down,
}

/// Adds `bytes` to a call's total that way and a connection's; `false` (and the call is cut)
/// once the total passes its budget.
fn count(shared: &Shared, direction: Direction, mine: &AtomicU64, bytes: usize) -> bool {
    let (total, budget, key) = match direction {
        Direction::Up => (&shared.up, shared.budget.up, "network_up_mib"),
        Direction::Down => (&shared.down, shared.budget.down, "network_down_mib"),
    };
    let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
    let before = total.fetch_add(bytes, Ordering::AcqRel);
    mine.fetch_add(bytes, Ordering::Relaxed);
    if before.saturating_add(bytes) > budget {
        shared.cut(key);
        return false;
    }
    true
}

/// Writes all of `bytes` to `to` (a shared reference: the other way reads it meanwhile).
async fn write_all(to: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        to.writable().await?;
        match to.try_write(bytes) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(written) => bytes = bytes.get(written..).unwrap_or_default(),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Bytes each way of a buffered connection holds: what one read takes in, and then writes
/// on. Airlock's memory, at most [`NETWORK_PROXY_BUFFERED`] × 2 × 256 KiB = 16 MiB over every
/// call (the other connections are spliced through kernel pipes, no buffer of ours).
const COPY_BUFFER_BYTES: usize = 256 * 1024;

/// A slot among the [`NETWORK_PROXY_BUFFERED`] connections copied through buffers, over every
/// call; given back when it is dropped (its connection ended or its task aborted).
struct Buffered;

/// Connections copied through buffers now.
static BUFFERED: AtomicUsize = AtomicUsize::new(0);

impl Buffered {
    fn take() -> Option<Self> {
        BUFFERED
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now < NETWORK_PROXY_BUFFERED).then_some(now.saturating_add(1))
            })
            .ok()
            .map(|_| Self)
    }
}

impl Drop for Buffered {
    fn drop(&mut self) {
        BUFFERED.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What carries one way's bytes from one socket to the other: a buffer of ours, or a kernel
/// pipe that `splice(2)` fills and empties.
///
/// A copy where it can (the first [`NETWORK_PROXY_BUFFERED`] connections): with the bytes
/// spliced into its socket, curl spent 1.8× the system time of a direct download receiving
/// them (27 ms against 15 per 64 MiB; through a copying relay, 16), CPU that a two-core
/// machine takes from the transfer: a 64 MiB download went from 0.67–0.74× of a direct one to
/// 0.80–0.92× (BENCHMARKS.md). Most likely the spliced pages reach the reader as they are,
/// in fragments of a page at most, where a writer's bytes arrive in larger ones. A pipe past
/// them: the bytes never enter airlock's memory (the kernel's pages, up to [`PIPE_BYTES`] at
/// a time), so a connection holds no buffer of ours.
enum Carrier {
    Buffer(Vec<u8>),
    Pipe {
        out: OwnedFd,
        into: OwnedFd,
        capacity: usize,
    },
}

impl Carrier {
    fn new(buffered: bool) -> io::Result<Self> {
        use rustix::pipe::PipeFlags;
        if buffered {
            return Ok(Self::Buffer(vec![0_u8; COPY_BUFFER_BYTES]));
        }
        let (out, into) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        // A larger pipe moves more per call; the default (64 KiB) still works.
        let capacity = rustix::pipe::fcntl_setpipe_size(&into, PIPE_BYTES).unwrap_or(64 * 1024);
        Ok(Self::Pipe {
            out,
            into,
            capacity,
        })
    }

    /// Takes in what `from` holds now (the carrier is empty): how many bytes, 0 at its end,
    /// `WouldBlock` when it holds none.
    fn take_in(&mut self, from: &TcpStream) -> io::Result<usize> {
        match self {
            Self::Buffer(buffer) => rustix::io::read(from, buffer),
            Self::Pipe { into, capacity, .. } => rustix::pipe::splice(
                from,
                None,
                &*into,
                None,
                *capacity,
                rustix::pipe::SpliceFlags::MOVE | rustix::pipe::SpliceFlags::NONBLOCK,
            ),
        }
        .map_err(io::Error::from)
    }

    /// Sends the `len` bytes taken in on to `to`.
    async fn send_on(&self, to: &TcpStream, len: usize) -> io::Result<()> {
        let out = match self {
            Self::Buffer(buffer) => {
                return write_all(to, buffer.get(..len).unwrap_or_default()).await;
            }
            Self::Pipe { out, .. } => out,
        };
        let mut left = len;
        while left > 0 {
            to.writable().await?;
            match to.try_io(tokio::io::Interest::WRITABLE, || {
                rustix::pipe::splice(
                    out,
                    None,
                    to,
                    None,
                    left,
                    rustix::pipe::SpliceFlags::MOVE | rustix::pipe::SpliceFlags::NONBLOCK,
                )
                .map_err(io::Error::from)
            }) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(written) => left = left.saturating_sub(written),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// One way of a connection: `from` to `to` through a [`Carrier`] of its own (a buffer if
/// `buffered`, a pipe if not), until `from` ends (then `to`'s write side is shut down) or the
/// call's budget for that way is spent.
async fn carry(
    from: &TcpStream,
    to: &TcpStream,
    shared: &Arc<Shared>,
    direction: Direction,
    mine: &AtomicU64,
    buffered: bool,
) -> io::Result<()> {
    let mut carrier = Carrier::new(buffered)?;
    loop {
        from.readable().await?;
        // The carrier is empty here, so `WouldBlock` is the socket's.
        let moved = match from.try_io(tokio::io::Interest::READABLE, || carrier.take_in(from)) {
            Ok(0) => break,
            Ok(moved) => moved,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        };
        // Past the budget nothing more is forwarded: the call is stopped.
        if !count(shared, direction, mine, moved) {
            return Ok(());
        }
        carrier.send_on(to, moved).await?;
    }
    rustix::net::shutdown(to, rustix::net::Shutdown::Write)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_are_read_strictly() {
        assert!(matches!(
            authority("api.example.com:443", None),
            Some((Host::Name(name), 443)) if name == "api.example.com"
        ));
        assert!(matches!(
            authority("[::1]:8080", None),
            Some((Host::Address(IpAddr::V6(_)), 8080))
        ));
        assert!(matches!(
            authority("10.0.0.1", Some(80)),
            Some((Host::Address(IpAddr::V4(_)), 80))
        ));
        for bad in [
            "user@host:80",
            "host:0",
            "host:99999",
            "ho st:80",
            "[::1]x",
            "host",
            "",
        ] {
            assert!(authority(bad, None).is_none(), "{bad}");
        }
    }

    /// A proxy session on a loopback listener, as a launcher's would be, for `rules`.
    fn session(rules: Destinations) -> (Session, SocketAddr) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let session = Session::start(
            &OwnedFd::from(listener),
            Arc::new(rules),
            &Resources::default(),
        )
        .unwrap();
        (session, address)
    }

    /// Sends `bytes` to the proxy, closes its side, and reads the answer to its end.
    async fn exchange(address: SocketAddr, bytes: &[u8]) -> Vec<u8> {
        let mut stream = TcpStream::connect(address).await.unwrap();
        // The proxy may close before reading everything: a failed write is an answer too.
        if stream.write_all(bytes).await.is_ok() {
            let _closed = stream.shutdown().await;
        }
        let mut answer = Vec::new();
        let reading = stream.read_to_end(&mut answer);
        let _read = tokio::time::timeout(std::time::Duration::from_secs(5), reading)
            .await
            .expect("the proxy answered within its bounds");
        answer
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Whatever a command sends the proxy, it answers or closes, connects nowhere that
        /// is not listed (nothing is), and keeps at most one attempt.
        #[test]
        fn hostile_requests_end_in_a_refusal(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            socks in proptest::prelude::any::<bool>(),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let (session, address) = session(Destinations::default());
                let mut sent = bytes.clone();
                if socks {
                    sent.insert(0, 5);
                }
                let _answer = exchange(address, &sent).await;
                let record = session.finish();
                proptest::prop_assert!(record.attempts.len() <= 1);
                proptest::prop_assert!(record.attempts.iter().all(|attempt| attempt.refusal.is_some()));
                proptest::prop_assert_eq!(record.bytes_up + record.bytes_down, 0);
                Ok(())
            })?;
        }
    }

    #[tokio::test]
    async fn refusals_name_the_destination_and_socks_commands_but_connect_are_refused() {
        let (session, address) = session(Destinations::default());
        let answer = exchange(address, b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n").await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 403 "), "{answer}");
        assert!(answer.ends_with("network: api.example.com:443 is not allowed for this tool\n"));
        // SOCKS5 BIND (2) and UDP ASSOCIATE (3): "command not supported".
        for command in [2_u8, 3] {
            let request = [5, 1, 0, 5, command, 0, 1, 127, 0, 0, 1, 0, 80];
            let answer = exchange(address, &request).await;
            assert_eq!(answer.get(..4), Some(&[5, 0, 5, 7][..]), "{command}");
        }
        // A head past its bound is dropped unanswered.
        let mut long = b"GET http://a.example/ HTTP/1.1\r\nX: ".to_vec();
        long.extend(std::iter::repeat_n(
            b'a',
            NETWORK_PROXY_HEAD_BYTES.saturating_mul(2),
        ));
        assert!(exchange(address, &long).await.is_empty());
        let record = session.finish();
        assert_eq!(record.attempts.len(), 1);
        assert_eq!(record.attempts[0].refusal, Some(Refusal::NotListed));
    }

    /// Red team (issue 36): the launcher's listening socket outlives a call, so a connection
    /// a command made just before it was killed can wait in its backlog, request and body
    /// sent. A session serves only its own call's connections: one queued before it started
    /// (nothing of its call runs yet) is dropped unread, not forwarded on the next call's
    /// budget and into its record.
    #[tokio::test]
    async fn a_connection_queued_before_the_call_is_not_served_by_it() {
        let witness = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        witness.set_nonblocking(true).unwrap();
        let port = witness.local_addr().unwrap().port();
        let rules = Destinations {
            any_public: false,
            rules: vec![
                super::super::destinations::parse_destination(&format!("127.0.0.1:{port}"))
                    .unwrap(),
            ],
        };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        // The previous call's last connection, queued and never accepted.
        let mut left = std::net::TcpStream::connect(address).unwrap();
        std::io::Write::write_all(
            &mut left,
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nleft over").as_bytes(),
        )
        .unwrap();
        drop(left);
        let session = Session::start(
            &OwnedFd::from(listener),
            Arc::new(rules),
            &Resources::default(),
        )
        .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let record = session.finish();
        assert!(record.attempts.is_empty(), "{record:?}");
        assert!(
            witness.accept().is_err(),
            "the queued request was forwarded"
        );
    }

    /// A connection copied through buffers ([`Carrier::Buffer`]) carries bytes both ways and counts
    /// them, and the call's end stops it although neither side sends or closes: both ends
    /// see the connection end, and its slot is given back. (Nothing else in this process
    /// holds a buffered slot, so this connection gets one.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_calls_end_stops_a_buffered_connection_nobody_closes() {
        use std::io::{Read as _, Write as _};
        let destination = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = destination.local_addr().unwrap().port();
        let rules = Destinations {
            any_public: false,
            rules: vec![
                super::super::destinations::parse_destination(&format!("127.0.0.1:{port}"))
                    .unwrap(),
            ],
        };
        let (session, address) = session(rules);
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut head = [0_u8; 39];
        stream.read_exact(&mut head).await.unwrap();
        assert_eq!(&head[..], b"HTTP/1.1 200 Connection established\r\n\r\n");
        let (mut far, _) = destination.accept().unwrap();
        far.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        stream.write_all(b"ping").await.unwrap();
        let mut four = [0_u8; 4];
        far.read_exact(&mut four).unwrap();
        assert_eq!(&four, b"ping");
        far.write_all(b"pong!").unwrap();
        let mut five = [0_u8; 5];
        stream.read_exact(&mut five).await.unwrap();
        assert_eq!(&five, b"pong!");

        let record = session.finish();
        assert_eq!((record.bytes_up, record.bytes_down), (4, 5));
        let mut rest = Vec::new();
        let ended = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            stream.read_to_end(&mut rest),
        )
        .await;
        assert!(matches!(ended, Ok(Ok(0)) | Ok(Err(_))), "{ended:?}");
        // The destination's side ends too (an end of input, or a reset), not a timeout.
        let far_end = far.read(&mut four);
        let timed_out = |error: &io::Error| {
            matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            )
        };
        assert!(
            !matches!(&far_end, Err(error) if timed_out(error)),
            "{far_end:?}"
        );
        // Its slot is given back once its task has ended.
        for _ in 0..500 {
            if BUFFERED.load(Ordering::Acquire) == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(BUFFERED.load(Ordering::Acquire), 0);
    }

    #[test]
    fn every_proxy_variable_points_at_the_proxy_in_both_cases() {
        let environment = proxy_environment();
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
            assert!(environment.iter().any(|(set, _)| *set == name));
            let lower = name.to_ascii_lowercase();
            assert!(environment.iter().any(|(set, _)| *set == lower));
        }
    }
}
