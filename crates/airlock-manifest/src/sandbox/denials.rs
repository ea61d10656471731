//! What the sandbox refused a call, as far as the kernel says: Landlock's audit records, read
//! over the kernel's audit multicast.
//!
//! Each layer of the sandbox refuses in its own way, and only one of them reports:
//!
//! | what the command did | who refuses | what the program sees | reported |
//! |---|---|---|---|
//! | a write to a path outside the view (`/root/x`) | the view (`mounts`) | `ENOENT` | where the operator installed [`audit_rules`] (any kernel with audit): the syscall audit's records, by the launcher's audit session (`writes`); only outside every grant (inside one the view shows the host, and the `ENOENT` is the program's own) |
//! | a write in the view outside the writable directories | the view's read-only binds | `EROFS` | the same; the kernel names only the directory of a file created there |
//! | a read of a path outside the view | the view | `ENOENT` | no: the rules watch writes only (a failed read is every program's daily business) |
//! | a program in the view not granted `exec`, a device written, a FIFO or socket made, a TCP connect or bind past the rules, a signal out of the call | Landlock | `EACCES` | yes, with Linux 6.15 (Landlock ABI 7) and the kernel's audit on |
//! | a TCP connect without `network` (`10.0.0.5:5432`) | Landlock, where it has TCP rules (ABI 4, Linux 6.7): the socket opens, its connect does not | `EACCES` | yes, as the row above: the address, and `network = ["10.0.0.5:5432"]` |
//! | the same below ABI 4; any other socket without `network` (UDP, raw, unix, SCTP, MPTCP); `set*id`; hard links | seccomp | `EPERM` | no: an errno filter logs only when installed with a flag the filter library cannot set |
//! | a destination the proxy refuses | airlock's proxy | a `403` to `CONNECT` | yes, always (the call's network note) |
//!
//! The launcher asks Landlock to log the denials of the programs it starts
//! (`LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON`); the kernel logs them only while its audit is on
//! (`auditctl -e 1`), which airlock never turns on itself. A reader thread binds a
//! `NETLINK_AUDIT` socket to the read-only multicast group, which needs `CAP_AUDIT_READ` in the
//! initial user namespace and the initial network namespace (airlock as root, outside a
//! container's namespaces), and reads two record types: `LANDLOCK_ACCESS` (a denial: its
//! domain, blockers and object) and `LANDLOCK_DOMAIN` (a domain's first logged denial brings
//! its allocation, with the pid that restricted itself). That pid is a launcher's, which
//! serves one call at a time: a denial goes to the call its launcher serves. Where the
//! operator installed [`audit_rules`], it also reads the syscall audit's `SYSCALL`, `CWD`,
//! `PATH` and `EOE` records of writes the view refused (`writes`): those name the launcher's
//! audit session, which it took with [`AUDIT_LOGIN_UID`] and which airlock reads from
//! `/proc/PID/sessionid` of each watched launcher. Records come
//! through the kernel's audit thread, after the fact; a call's are taken
//! `SANDBOX_DENIAL_SETTLE` after its launcher reported; a later one is lost (the launcher's
//! next call leaves it out by its stamp). The launcher is back in its pool while its last
//! call settles, so its next call may be watched beside it: a record goes to the call its
//! stamp falls in, and one stamped within the kernel clock's slack of the next call's start,
//! which could be either's, to neither.
//!
//! The objects are the command's text (a path it opened, an address it dialled): kept as the
//! kernel gave them, redacted with the output, then escaped and cut (a secret is found whole
//! before any cut), shown in the result and the audit record, never a metric label. The key
//! that would allow a denial names its path: it is redacted and cut the same way. A hostile
//! command cannot forge a record: writing one needs `CAP_AUDIT_WRITE`, which no command
//! holds, and only records of airlock's own launchers count.

mod writes;

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use airlock::{DenialKind, DenialNote, DenialSource, DenialsNote};
use rustix::net::netlink::SocketAddrNetlink;

use crate::limits::{
    SANDBOX_DENIAL_DOMAINS, SANDBOX_DENIAL_OBJECT_BYTES, SANDBOX_DENIAL_SETTLE,
    SANDBOX_DENIALS_PER_CALL,
};
pub use writes::{AUDIT_LOGIN_UID, rules as audit_rules};

/// `AUDIT_GET`: the audit status.
const AUDIT_GET: u16 = 1000;
/// `AUDIT_LANDLOCK_ACCESS`: one denial.
const AUDIT_LANDLOCK_ACCESS: u16 = 1423;
/// `AUDIT_LANDLOCK_DOMAIN`: a domain's allocation (with its first logged denial) or end.
const AUDIT_LANDLOCK_DOMAIN: u16 = 1424;
/// `AUDIT_NLGRP_READLOG`: the multicast group every record is copied to.
const READLOG_GROUP: u32 = 1;
/// A netlink message header's bytes.
const HEADER_BYTES: usize = 16;
/// The largest audit record the kernel sends (`MAX_AUDIT_MESSAGE_LENGTH`, 8970), rounded up.
const RECEIVE_BYTES: usize = 16 * 1024;
/// How long the audit status read over netlink is believed.
const STATUS_FRESH: Duration = Duration::from_secs(1);

/// One thing the kernel refused a launcher's command: what, on what, and the manifest key
/// that would allow it.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Denial {
    /// The kind, one of a closed set.
    pub kind: DenialKind,
    /// The path, or `address:port`, as the kernel gave it (at most a record's bytes): shown
    /// only through [`shown`], after redaction.
    pub object: String,
    /// The manifest key that would allow it, or why none can; names the object the same way.
    pub allow: String,
    /// Who reported it: Landlock, or the syscall audit for what the view refused.
    pub source: DenialSource,
}

impl Denial {
    /// The audit record's form of it, object and key passed through `redact` then [`shown`].
    pub fn note(&self, redact: impl Fn(&str) -> String) -> DenialNote {
        DenialNote::new(
            self.kind,
            shown(&redact(&self.object)),
            shown(&redact(&self.allow)),
            self.source,
        )
    }
}

/// What one call was refused: at most `SANDBOX_DENIALS_PER_CALL`, de-duplicated, and the
/// count of the rest (repeats included).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct Collected {
    /// The denials kept, in the order seen.
    pub denials: Vec<Denial>,
    /// Denials past those kept.
    pub unrecorded: u64,
    /// Records stamped before this (ms since the epoch) are an earlier call's, come late.
    since_ms: u64,
}

impl Collected {
    fn add(&mut self, stamp_ms: u64, denial: Denial) {
        if stamp_ms < self.since_ms || self.denials.contains(&denial) {
            return;
        }
        if self.denials.len() < SANDBOX_DENIALS_PER_CALL {
            self.denials.push(denial);
        } else {
            self.unrecorded = self.unrecorded.saturating_add(1);
        }
    }

    /// The audit record's form, each object and key passed through `redact`.
    pub fn note(&self, redact: impl Fn(&str) -> String) -> DenialsNote {
        DenialsNote::new(
            self.denials
                .iter()
                .map(|denial| denial.note(&redact))
                .collect(),
            self.unrecorded,
        )
    }
}

/// Whether this process can be told of the sandbox's denials, and if not, why.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Reporting {
    /// The reader is bound and the kernel's audit is on.
    Reported,
    /// The reader is bound, but the kernel's audit is off: nothing is logged.
    AuditOff,
    /// The audit multicast cannot be read here (no `CAP_AUDIT_READ` in the initial user
    /// namespace, or not in the initial network namespace, or no audit in the kernel).
    NoAuditAccess,
    /// Landlock below ABI 7 (Linux 6.15) does not log denials.
    OldLandlock,
}

impl Reporting {
    /// Whether denials reach the calls' results.
    pub fn reported(self) -> bool {
        self == Self::Reported
    }

    /// One line for `airlock check`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Reported => {
                "reported (Landlock ABI 7 or later logs them, the kernel's audit is on, and \
                 airlock reads its multicast)"
            }
            Self::AuditOff => {
                "NOT reported: the kernel's audit is off, so Landlock logs nothing (turn it on \
                 with `auditctl -e 1`, package auditd; airlock never does it itself)"
            }
            Self::NoAuditAccess => {
                "NOT reported: the kernel's audit records cannot be read here (that needs a \
                 kernel with audit, and CAP_AUDIT_READ in the initial user namespace and the \
                 initial network namespace: airlock as root, not rootless nor in a container's \
                 namespaces)"
            }
            Self::OldLandlock => {
                "NOT reported: Landlock logs denials from ABI 7 (Linux 6.15); this kernel's is \
                 older"
            }
        }
    }
}

/// Whether writes the view refuses (`EROFS`, `ENOENT`) can be reported here, in one line for
/// `airlock check`: the audit multicast is read, the kernel's audit is on, and a launcher can
/// take [`AUDIT_LOGIN_UID`] (`CAP_AUDIT_CONTROL` in the initial user namespace, or a login uid
/// never set); and then only where the operator installed [`audit_rules`].
pub fn writes_reporting() -> &'static str {
    let initial_namespace = std::fs::read_to_string("/proc/self/uid_map")
        .is_ok_and(|map| map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"]);
    let may_tag = initial_namespace
        && rustix::thread::capabilities(None).is_ok_and(|sets| {
            sets.effective
                .contains(rustix::thread::CapabilitySet::AUDIT_CONTROL)
        });
    let unset =
        std::fs::read_to_string("/proc/self/loginuid").is_ok_and(|uid| uid.trim() == "4294967295");
    match reader() {
        None => "NOT reported: the kernel's audit records cannot be read here (above)",
        Some(_) if !(may_tag || unset) => {
            "NOT reported: a launcher cannot take its audit login uid here (that needs \
             CAP_AUDIT_CONTROL in the initial user namespace: airlock as root)"
        }
        Some(reader) if !reader.audit_enabled() => {
            "NOT reported: the kernel's audit is off (above)"
        }
        Some(_) => {
            "reported where the kernel's syscall audit has the rules `airlock check \
             --audit-rules` prints (airlock installs none; without them, NOT reported)"
        }
    }
}

/// Whether denials are reported here, given the Landlock ABI in effect.
pub fn reporting(landlock_abi: u8) -> Reporting {
    if landlock_abi < 7 {
        return Reporting::OldLandlock;
    }
    match reader() {
        None => Reporting::NoAuditAccess,
        Some(reader) if reader.audit_enabled() => Reporting::Reported,
        Some(_) => Reporting::AuditOff,
    }
}

/// A call being watched: its launcher's denials go to it until it is collected or dropped.
#[derive(Debug)]
pub(crate) struct Watch {
    launcher: u32,
    /// Tells this call from the launcher's next, watched while this one settles.
    serial: u64,
    reader: &'static Reader,
}

/// Starts watching the call a launcher (its pid, as airlock sees it) is about to serve, whose
/// view holds the `granted` paths (read, exec and write); `None` when denials cannot be read
/// here.
pub(crate) fn watch(launcher: u32, granted: Arc<[PathBuf]>) -> Option<Watch> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let reader = reader()?;
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    reader.lock().watch(
        launcher,
        serial,
        epoch_ms(std::time::SystemTime::now()),
        granted,
    );
    Some(Watch {
        launcher,
        serial,
        reader,
    })
}

impl Watch {
    /// What the call was refused: waits [`SANDBOX_DENIAL_SETTLE`] for the records still on
    /// their way when the kernel's audit is on, then takes them.
    pub(crate) async fn collect(self) -> Collected {
        if self.reader.audit_enabled() {
            tokio::time::sleep(SANDBOX_DENIAL_SETTLE).await;
        }
        self.reader
            .lock()
            .unwatch(self.launcher, self.serial)
            .unwrap_or_default()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.reader.lock().unwatch(self.launcher, self.serial);
    }
}

/// One call watched on a launcher.
#[derive(Debug)]
struct Watched {
    serial: u64,
    /// When the watch began (ms since the epoch); `collected.since_ms` allows for the clock.
    started_ms: u64,
    collected: Collected,
    /// The paths the launcher's view shows as they are on the host.
    granted: Arc<[PathBuf]>,
}

/// The reader's state, shared with the calls.
#[derive(Debug, Default)]
struct State {
    /// The calls watched, by launcher pid, oldest first: a launcher's last call while it
    /// settles, and its next.
    calls: HashMap<u32, Vec<Watched>>,
    /// Landlock domains of watched launchers, by id, oldest first for eviction.
    domains: HashMap<u64, u32>,
    domain_order: VecDeque<u64>,
    /// Denials of a domain whose allocation record has not come yet (it follows the first
    /// denial, in the same event), with their stamps.
    unresolved: VecDeque<(u64, u64, Denial)>,
    /// Audit sessions of watched launchers that took [`AUDIT_LOGIN_UID`], to their pids.
    sessions: HashMap<u32, u32>,
    /// Syscall audit events being read.
    events: writes::Events,
}

/// Denials held for a domain not known yet, at most.
const UNRESOLVED: usize = 16;

impl State {
    /// Watches the call a launcher begins at `now_ms`.
    fn watch(&mut self, launcher: u32, serial: u64, now_ms: u64, granted: Arc<[PathBuf]>) {
        // The kernel stamps a record with its coarse clock, up to a tick (4 ms at 250 Hz)
        // behind: a record of this call may look a little older than the watch.
        let collected = Collected {
            since_ms: now_ms.saturating_sub(STAMP_SLACK_MS),
            ..Collected::default()
        };
        self.calls.entry(launcher).or_default().push(Watched {
            serial,
            started_ms: now_ms,
            collected,
            granted,
        });
    }

    /// Ends a watch; what it collected, if it was still watched.
    fn unwatch(&mut self, launcher: u32, serial: u64) -> Option<Collected> {
        let watched = self.calls.get_mut(&launcher)?;
        let at = watched.iter().position(|call| call.serial == serial)?;
        let call = watched.remove(at);
        if watched.is_empty() {
            self.calls.remove(&launcher);
            self.sessions.retain(|_, pid| *pid != launcher);
        }
        Some(call.collected)
    }

    /// The call of `launcher` a record stamped `stamp_ms` belongs to: the latest watched by
    /// then. A stamp within the clock's slack before a call's start, while the launcher's
    /// previous call is still watched, could be either's (that call's last denial, or this
    /// one's first on a lagging clock): it goes to neither.
    fn call_at(&mut self, launcher: u32, stamp_ms: u64) -> Option<&mut Collected> {
        let watched = self.calls.get_mut(&launcher)?;
        let at = watched
            .iter()
            .rposition(|call| call.collected.since_ms <= stamp_ms)?;
        let call = watched.get_mut(at)?;
        if at > 0 && stamp_ms <= call.started_ms {
            return None;
        }
        Some(&mut call.collected)
    }
}

#[derive(Debug)]
struct Reader {
    state: Mutex<State>,
    /// The audit session of a process (its pid) if it took [`AUDIT_LOGIN_UID`].
    session_of: fn(u32) -> Option<u32>,
    /// The kernel's audit status, and when it was read (ms since `started`).
    enabled: AtomicBool,
    checked_ms: AtomicU64,
    started: Instant,
}

impl Reader {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the kernel's audit is on, read again past [`STATUS_FRESH`].
    fn audit_enabled(&self) -> bool {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let checked = self.checked_ms.load(Ordering::Relaxed);
        let fresh = u64::try_from(STATUS_FRESH.as_millis()).unwrap_or(u64::MAX);
        if checked == 0 || now.saturating_sub(checked) > fresh {
            self.enabled
                .store(audit_status().unwrap_or(false), Ordering::Relaxed);
            self.checked_ms.store(now.max(1), Ordering::Relaxed);
        }
        self.enabled.load(Ordering::Relaxed)
    }

    /// Takes one record of `kind` with `text`.
    fn take(&self, kind: u16, text: &str) {
        let stamp_ms = stamp_ms(text).unwrap_or(u64::MAX);
        let fields = fields(body(text));
        let Some(domain) = field(&fields, "domain").and_then(|id| u64::from_str_radix(id, 16).ok())
        else {
            return;
        };
        let mut state = self.lock();
        match kind {
            AUDIT_LANDLOCK_ACCESS => {
                for denial in denials(&fields) {
                    match state.domains.get(&domain).copied() {
                        Some(launcher) => {
                            if let Some(call) = state.call_at(launcher, stamp_ms) {
                                call.add(stamp_ms, denial);
                            }
                        }
                        None => {
                            if state.unresolved.len() >= UNRESOLVED {
                                state.unresolved.pop_front();
                            }
                            state.unresolved.push_back((domain, stamp_ms, denial));
                        }
                    }
                }
            }
            AUDIT_LANDLOCK_DOMAIN => match field(&fields, "status") {
                Some("allocated") => {
                    let Some(pid) = field(&fields, "pid").and_then(|pid| pid.parse::<u32>().ok())
                    else {
                        return;
                    };
                    let held: Vec<(u64, Denial)> = {
                        let (mine, others): (Vec<_>, Vec<_>) = state
                            .unresolved
                            .drain(..)
                            .partition(|(id, _, _)| *id == domain);
                        state.unresolved = others.into();
                        mine.into_iter()
                            .map(|(_, stamp, denial)| (stamp, denial))
                            .collect()
                    };
                    // Only airlock's own launchers, watched now, are kept: a domain is
                    // allocated with its first denial, during a call.
                    if !state.calls.contains_key(&pid) {
                        return;
                    }
                    if state.domain_order.len() >= SANDBOX_DENIAL_DOMAINS
                        && let Some(oldest) = state.domain_order.pop_front()
                    {
                        state.domains.remove(&oldest);
                    }
                    state.domains.insert(domain, pid);
                    state.domain_order.push_back(domain);
                    for (stamp, denial) in held {
                        if let Some(call) = state.call_at(pid, stamp) {
                            call.add(stamp, denial);
                        }
                    }
                }
                Some("deallocated") if state.domains.remove(&domain).is_some() => {
                    state.domain_order.retain(|id| *id != domain);
                }
                _ => {}
            },
            _ => {}
        }
    }
}

impl Reader {
    /// Takes one record of a syscall audit event; a write the view refused a watched
    /// launcher's session goes to the call its stamp falls in.
    fn take_write(&self, kind: u16, text: &str) {
        let Some(refused) = self.lock().events.take(kind, text) else {
            return;
        };
        let launcher = self.launcher_of(refused.session);
        let Some(launcher) = launcher else {
            return;
        };
        let granted = {
            let state = self.lock();
            let Some(watched) = state.calls.get(&launcher).and_then(|calls| calls.last()) else {
                return;
            };
            Arc::clone(&watched.granted)
        };
        let Some(denial) = view_denial(&refused, &granted) else {
            return;
        };
        if let Some(call) = self.lock().call_at(launcher, refused.stamp_ms) {
            call.add(refused.stamp_ms, denial);
        }
    }

    /// The watched launcher whose audit session is `session`: known, or found among the
    /// watched launchers not yet known (their `/proc` files read outside the lock).
    fn launcher_of(&self, session: u32) -> Option<u32> {
        let unknown: Vec<u32> = {
            let state = self.lock();
            if let Some(pid) = state.sessions.get(&session) {
                return Some(*pid);
            }
            state
                .calls
                .keys()
                .filter(|pid| !state.sessions.values().any(|known| known == *pid))
                .copied()
                .collect()
        };
        let found: Vec<(u32, u32)> = unknown
            .into_iter()
            .filter_map(|pid| Some(((self.session_of)(pid)?, pid)))
            .collect();
        let mut state = self.lock();
        for (id, pid) in found {
            // Still watched: a launcher let go meanwhile may have a recycled pid.
            if state.calls.contains_key(&pid) {
                state.sessions.insert(id, pid);
            }
        }
        state.sessions.get(&session).copied()
    }
}

/// The audit session of process `pid`, if its login uid is [`AUDIT_LOGIN_UID`] (a launcher
/// that took it); read from `/proc`.
fn launcher_session(pid: u32) -> Option<u32> {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/{name}"))
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    };
    if read("loginuid")? != AUDIT_LOGIN_UID {
        return None;
    }
    read("sessionid")
}

/// A write the view refused, as a denial: `EROFS` always (a read-only bind, or the view's own
/// read-only root); `ENOENT` only when no granted path holds the directory: there the view
/// shows the host as it is, and a missing file or directory (a `rm -f` of a missing file, a
/// write into a directory the program never made) is the program's own, not the sandbox's.
///
/// Whether the directory exists on the host is deliberately not asked: the answer would reach
/// the command in its result, and tell it which directories the view hides from it exist (its
/// own `stat` says `ENOENT` for all of them). Outside every grant the view refuses the write
/// whether the directory exists or not, so it is reported either way; the key then names a
/// directory the manifest check may refuse as missing, which is the operator's answer.
fn view_denial(refused: &writes::Refused, granted: &[PathBuf]) -> Option<Denial> {
    let directory: &Path = if refused.directory {
        &refused.path
    } else {
        refused.path.parent().unwrap_or(Path::new("/"))
    };
    let device = refused.path.starts_with("/dev");
    if refused.missing {
        // Programs probe devices the view leaves out (bash opens `/dev/tty` at start); no key
        // grants a device but `/dev/null`, so such a probe is nothing to act on.
        if device {
            return None;
        }
        if granted.iter().any(|grant| directory.starts_with(grant)) {
            return None;
        }
    }
    let object = refused.path.to_string_lossy().into_owned();
    let allow = if device {
        NOT_GRANTABLE_DEVICES.to_owned()
    } else {
        format!("write = [\"{}\"]", directory.to_string_lossy())
    };
    Some(Denial {
        kind: DenialKind::Write,
        object,
        allow,
        source: DenialSource::View,
    })
}

/// The reader, started on first use; `None` when the multicast cannot be read here.
fn reader() -> Option<&'static Reader> {
    static READER: OnceLock<Option<&'static Reader>> = OnceLock::new();
    *READER.get_or_init(|| {
        let socket = multicast().ok()?;
        let reader: &'static Reader = Box::leak(Box::new(Reader {
            state: Mutex::new(State::default()),
            session_of: launcher_session,
            enabled: AtomicBool::new(false),
            checked_ms: AtomicU64::new(0),
            started: Instant::now(),
        }));
        let started = std::thread::Builder::new()
            .name("airlock-denials".to_owned())
            .spawn(move || read(&socket, reader));
        started.ok().map(|_| reader)
    })
}

/// The socket bound to the audit multicast group.
fn multicast() -> rustix::io::Result<OwnedFd> {
    let socket = rustix::net::socket_with(
        rustix::net::AddressFamily::NETLINK,
        rustix::net::SocketType::RAW,
        rustix::net::SocketFlags::CLOEXEC,
        Some(rustix::net::netlink::AUDIT),
    )?;
    rustix::net::bind(&socket, &SocketAddrNetlink::new(0, READLOG_GROUP))?;
    Ok(socket)
}

/// Reads records for as long as airlock runs.
fn read(socket: &OwnedFd, reader: &Reader) {
    let mut buffer = vec![0_u8; RECEIVE_BYTES];
    loop {
        let received =
            match rustix::net::recv(socket, &mut buffer[..], rustix::net::RecvFlags::empty()) {
                Ok((received, _)) => received,
                // ENOBUFS: records were lost while the socket was full; the next ones still come.
                Err(rustix::io::Errno::INTR | rustix::io::Errno::NOBUFS) => continue,
                Err(error) => {
                    tracing::warn!(%error, "the sandbox's denial reader stopped");
                    return;
                }
            };
        let mut rest = buffer.get(..received).unwrap_or_default();
        while let Some((kind, payload, after)) = message(rest) {
            if kind == AUDIT_LANDLOCK_ACCESS || kind == AUDIT_LANDLOCK_DOMAIN {
                reader.take(kind, &String::from_utf8_lossy(payload));
            } else if matches!(
                kind,
                writes::AUDIT_SYSCALL | writes::AUDIT_PATH | writes::AUDIT_CWD | writes::AUDIT_EOE
            ) {
                reader.take_write(kind, &String::from_utf8_lossy(payload));
            }
            rest = after;
        }
    }
}

/// The first netlink message of `bytes`: its type, its payload and what follows.
fn message(bytes: &[u8]) -> Option<(u16, &[u8], &[u8])> {
    let header = bytes.get(..HEADER_BYTES)?;
    let len = usize::try_from(u32::from_ne_bytes(header.get(..4)?.try_into().ok()?)).ok()?;
    let kind = u16::from_ne_bytes(header.get(4..6)?.try_into().ok()?);
    // The kernel's audit messages do not always count their header in `len`; take what there is.
    let end = len.clamp(HEADER_BYTES, bytes.len());
    let payload = bytes.get(HEADER_BYTES..end)?;
    let aligned = end.next_multiple_of(4).min(bytes.len());
    Some((kind, payload, bytes.get(aligned..).unwrap_or_default()))
}

/// Whether the kernel's audit is on (`AUDIT_GET` over a unicast netlink socket); `None` if it
/// cannot be asked.
fn audit_status() -> Option<bool> {
    let socket = rustix::net::socket_with(
        rustix::net::AddressFamily::NETLINK,
        rustix::net::SocketType::RAW,
        rustix::net::SocketFlags::CLOEXEC,
        Some(rustix::net::netlink::AUDIT),
    )
    .ok()?;
    let timeout = Some(Duration::from_millis(500));
    rustix::net::sockopt::set_socket_timeout(&socket, rustix::net::sockopt::Timeout::Recv, timeout)
        .ok()?;
    let mut request = Vec::with_capacity(HEADER_BYTES);
    request.extend_from_slice(&u32::try_from(HEADER_BYTES).ok()?.to_ne_bytes());
    request.extend_from_slice(&AUDIT_GET.to_ne_bytes());
    // NLM_F_REQUEST.
    request.extend_from_slice(&1_u16.to_ne_bytes());
    request.extend_from_slice(&1_u32.to_ne_bytes());
    request.extend_from_slice(&0_u32.to_ne_bytes());
    rustix::net::sendto(
        &socket,
        &request,
        rustix::net::SendFlags::empty(),
        &SocketAddrNetlink::new(0, 0),
    )
    .ok()?;
    let mut buffer = [0_u8; 256];
    for _ in 0..4 {
        let (received, _) =
            rustix::net::recv(&socket, &mut buffer[..], rustix::net::RecvFlags::empty()).ok()?;
        let (kind, payload, _) = message(buffer.get(..received)?)?;
        if kind == AUDIT_GET {
            // struct audit_status: mask, then enabled.
            let enabled = u32::from_ne_bytes(payload.get(4..8)?.try_into().ok()?);
            return Some(enabled != 0);
        }
    }
    None
}

/// How much older than its watch a call's record may look (the kernel's coarse clock).
const STAMP_SLACK_MS: u64 = 5;

fn epoch_ms(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// A record's stamp, `audit(SECONDS.MILLIS:SERIAL)`, in ms since the epoch.
fn stamp_ms(text: &str) -> Option<u64> {
    let stamp = text.strip_prefix("audit(")?.split_once(':')?.0;
    let (seconds, millis) = stamp.split_once('.')?;
    let seconds: u64 = seconds.parse().ok()?;
    let millis: u64 = millis.get(..3)?.parse().ok()?;
    seconds.checked_mul(1000)?.checked_add(millis)
}

/// A record's text past its `audit(TIME:SERIAL): ` stamp.
fn body(text: &str) -> &str {
    match text.split_once("): ") {
        Some((stamp, rest)) if stamp.starts_with("audit(") => rest,
        _ => text,
    }
}

/// A record's `key=value` fields; a value is `"quoted"` (the kernel quotes only text without
/// spaces, quotes or control bytes) or a bare word (a number, or text the kernel hex-encoded).
fn fields(text: &str) -> Vec<(&str, &str, bool)> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let (value, quoted, after) = if let Some(inner) = after.strip_prefix('"') {
            match inner.split_once('"') {
                Some((value, after)) => (value, true, after),
                None => (inner, true, ""),
            }
        } else {
            match after.split_once(' ') {
                Some((value, after)) => (value, false, after),
                None => (after, false, ""),
            }
        };
        out.push((key.trim(), value, quoted));
        rest = after.trim_start();
    }
    out
}

fn field<'a>(fields: &[(&str, &'a str, bool)], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(name, _, _)| *name == key)
        .map(|(_, value, _)| *value)
}

/// A text field as the command gave it: a quoted value as is, a bare one hex-decoded. Not
/// escaped nor cut: a secret in it must be found whole first ([`shown`]).
fn text_field(fields: &[(&str, &str, bool)], key: &str) -> Option<String> {
    let (_, value, quoted) = fields.iter().find(|(name, _, _)| *name == key)?;
    if *quoted {
        return Some((*value).to_owned());
    }
    let bytes = hex(value)?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at.checked_add(2)?)?, 16).ok())
        .collect()
}

/// An object or key as shown, once redacted: control characters escaped, cut at
/// `SANDBOX_DENIAL_OBJECT_BYTES` (marked `…`).
pub fn shown(text: &str) -> String {
    let mut out = String::new();
    for character in text.chars() {
        let piece: String = if character.is_control() {
            character.escape_default().collect()
        } else {
            character.to_string()
        };
        if out.len().saturating_add(piece.len()) > SANDBOX_DENIAL_OBJECT_BYTES {
            out.push('…');
            break;
        }
        out.push_str(&piece);
    }
    out
}

/// The denials one `LANDLOCK_ACCESS` record names: one per blocker (a record may name several,
/// comma-separated) that has a kind.
fn denials(fields: &[(&str, &str, bool)]) -> Vec<Denial> {
    let Some(blockers) = field(fields, "blockers") else {
        return Vec::new();
    };
    let mut out: Vec<Denial> = Vec::new();
    for blocker in blockers.split(',') {
        if let Some(denial) = denial(blocker, fields)
            && !out.contains(&denial)
        {
            out.push(denial);
        }
    }
    out
}

const NOT_GRANTABLE_NODES: &str = "none: no key lets a command make devices, FIFOs or sockets";
const NOT_GRANTABLE_DEVICES: &str = "none: no key lets a command write a device but /dev/null";
const NOT_GRANTABLE_BIND: &str = "none: no key lets a command listen on a port";
const NOT_GRANTABLE_SCOPE: &str =
    "none: a command reaches no process or abstract socket outside its call";

fn denial(blocker: &str, fields: &[(&str, &str, bool)]) -> Option<Denial> {
    let path = || text_field(fields, "path");
    let (kind, object, allow) = match blocker {
        "fs.execute" => {
            let path = path()?;
            let allow = format!("exec = [\"{path}\"]");
            (DenialKind::Exec, path, allow)
        }
        "fs.read_file" | "fs.read_dir" => {
            let path = path()?;
            let allow = format!("read = [\"{path}\"]");
            (DenialKind::Read, path, allow)
        }
        "fs.write_file" | "fs.truncate" => {
            let path = path()?;
            let allow = if path.starts_with("/dev/") {
                NOT_GRANTABLE_DEVICES.to_owned()
            } else {
                format!("write = [\"{}\"]", parent(&path))
            };
            (DenialKind::Write, path, allow)
        }
        // The path is the directory the change was made in.
        "fs.make_reg" | "fs.make_dir" | "fs.make_sym" | "fs.remove_file" | "fs.remove_dir"
        | "fs.refer" => {
            let path = path()?;
            let allow = format!("write = [\"{path}\"]");
            (DenialKind::Write, path, allow)
        }
        // A device ioctl refused is a program asking whether `/dev/null` is a terminal
        // (`isatty`), which it takes as "no" and goes on: most programs do it, and no key
        // would change it. Not a denial anyone acts on, so not reported.
        "fs.ioctl_dev" => return None,
        "fs.make_char" | "fs.make_block" | "fs.make_fifo" | "fs.make_sock" => {
            (DenialKind::Write, path()?, NOT_GRANTABLE_NODES.to_owned())
        }
        "net.connect_tcp" => {
            let address = field(fields, "daddr")?;
            let port: u16 = field(fields, "dest")?.parse().ok()?;
            let object = if address.contains(':') {
                format!("[{address}]:{port}")
            } else {
                format!("{address}:{port}")
            };
            let allow = format!(
                "network = [\"{object}\"], reached through airlock's proxy (HTTPS_PROXY): a \
                 direct connection is never allowed"
            );
            (DenialKind::Connect, object, allow)
        }
        "net.bind_tcp" => {
            let port = field(fields, "src")
                .or_else(|| field(fields, "lport"))
                .and_then(|port| port.parse::<u16>().ok())?;
            (
                DenialKind::Bind,
                format!("port {port}"),
                NOT_GRANTABLE_BIND.to_owned(),
            )
        }
        "scope.signal" => {
            let pid: u32 = field(fields, "opid")?.parse().ok()?;
            (
                DenialKind::Signal,
                format!("pid {pid}"),
                NOT_GRANTABLE_SCOPE.to_owned(),
            )
        }
        "scope.abstract_unix_socket" => (
            DenialKind::Connect,
            text_field(fields, "path").unwrap_or_else(|| "an abstract unix socket".to_owned()),
            NOT_GRANTABLE_SCOPE.to_owned(),
        ),
        _ => return None,
    };
    Some(Denial {
        kind,
        object,
        allow,
        source: DenialSource::Landlock,
    })
}

/// The directory holding `path` (`/` for a path at the root).
fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((dir, _)) => dir,
    }
}

/// The record of one call's denials as a result line: "the sandbox refused: exec
/// /usr/bin/id; connect 10.0.0.5:5432", each object through `redact`, then [`shown`].
pub fn result_line(collected: &Collected, redact: impl Fn(&str) -> String) -> Option<String> {
    if collected.denials.is_empty() {
        return None;
    }
    let mut line = String::from("the sandbox refused: ");
    let parts: Vec<String> = collected
        .denials
        .iter()
        .map(|denial| format!("{} {}", denial.kind.label(), shown(&redact(&denial.object))))
        .collect();
    line.push_str(&parts.join("; "));
    if collected.unrecorded > 0 {
        line.push_str(&format!("; and {} more", collected.unrecorded));
    }
    Some(line)
}

/// The fuzzing entry point (`crate::fuzzing::audit_records`): `data` as what the multicast
/// delivered, split into netlink messages as the reader splits them (and, when none is a
/// Landlock record, as the text of one record of each type), taken by a reader watching launchers 1 and 11114;
/// each call then holds at most [`SANDBOX_DENIALS_PER_CALL`] distinct denials, each object no
/// larger than a record, and shown cut at [`SANDBOX_DENIAL_OBJECT_BYTES`] and free of control
/// characters.
#[cfg(any(test, fuzzing))]
pub(crate) fn fuzz(data: &[u8]) {
    let reader = Reader {
        state: Mutex::new(State::default()),
        session_of: |pid| Some(pid.wrapping_add(1000)),
        enabled: AtomicBool::new(true),
        checked_ms: AtomicU64::new(1),
        started: Instant::now(),
    };
    for pid in [1, 11114] {
        reader.lock().calls.insert(
            pid,
            vec![Watched {
                serial: 0,
                started_ms: 0,
                collected: Collected::default(),
                granted: Arc::from(Vec::new()),
            }],
        );
    }
    let mut rest = data;
    let mut framed = false;
    while let Some((kind, payload, after)) = message(rest) {
        framed |= kind == AUDIT_LANDLOCK_ACCESS || kind == AUDIT_LANDLOCK_DOMAIN;
        reader.take(kind, &String::from_utf8_lossy(payload));
        reader.take_write(kind, &String::from_utf8_lossy(payload));
        if after.len() >= rest.len() {
            break;
        }
        rest = after;
    }
    if !framed {
        let text = String::from_utf8_lossy(data);
        reader.take(AUDIT_LANDLOCK_ACCESS, &text);
        reader.take(AUDIT_LANDLOCK_DOMAIN, &text);
        reader.take(AUDIT_LANDLOCK_ACCESS, &text);
        for kind in [
            writes::AUDIT_SYSCALL,
            writes::AUDIT_CWD,
            writes::AUDIT_PATH,
            writes::AUDIT_EOE,
        ] {
            reader.take_write(kind, &text);
        }
    }
    let state = reader.lock();
    assert!(state.unresolved.len() <= UNRESOLVED);
    assert!(state.domains.len() <= SANDBOX_DENIAL_DOMAINS);
    for call in state
        .calls
        .values()
        .flatten()
        .map(|watched| &watched.collected)
    {
        assert!(call.denials.len() <= SANDBOX_DENIALS_PER_CALL);
        for (at, denial) in call.denials.iter().enumerate() {
            let before = call.denials.get(..at).unwrap_or_default();
            assert!(!before.contains(denial), "{denial:?} twice");
            // Kept as the kernel gave it (a secret is found whole before any cut): no larger
            // than the record it came in.
            assert!(denial.object.len() <= RECEIVE_BYTES, "{denial:?}");
            // As shown: escaped and cut.
            let seen = shown(&denial.object);
            let cut = SANDBOX_DENIAL_OBJECT_BYTES.saturating_add('…'.len_utf8());
            assert!(seen.len() <= cut, "{seen:?}");
            assert!(!seen.chars().any(char::is_control), "{seen:?}");
        }
        if let Some(line) = result_line(call, str::to_owned) {
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader() -> Reader {
        Reader {
            state: Mutex::new(State::default()),
            session_of: |pid| Some(pid.wrapping_add(1000)),
            enabled: AtomicBool::new(true),
            checked_ms: AtomicU64::new(1),
            started: Instant::now(),
        }
    }

    const EXEC: &str = "audit(1796452823.877:2): domain=163d74bea blockers=fs.execute \
                        path=\"/usr/bin/mkfifo\" dev=\"vda\" ino=247543";
    const ALLOCATED: &str = "audit(1796452823.877:2): domain=163d74bea status=allocated \
                             mode=enforcing pid=11114 uid=1076585728 exe=\"/x/airlock\" comm=\"exe\"";

    /// One syscall audit event of session `ses`: `exit` on `name`.
    fn write_event(reader: &Reader, serial: u64, ses: u32, exit: i64, name: &str) {
        let stamp = format!("audit(1796452823.877:{serial}): ");
        reader.take_write(
            writes::AUDIT_SYSCALL,
            &format!(
                "{stamp}arch=c000003e syscall=257 success=no exit={exit} items=1 ppid=1 pid=2 \
                 auid={AUDIT_LOGIN_UID} uid=0 tty=(none) ses={ses} comm=\"sh\" key=\"airlock\""
            ),
        );
        reader.take_write(writes::AUDIT_CWD, &format!("{stamp}cwd=\"/\""));
        reader.take_write(
            writes::AUDIT_PATH,
            &format!("{stamp}item=0 name=\"{name}\" nametype=UNKNOWN"),
        );
        reader.take_write(writes::AUDIT_EOE, &stamp);
    }

    /// A write the view refused goes, by its audit session, to the call its launcher serves;
    /// `EROFS` always, `ENOENT` only where the view hid the path: not under a granted path,
    /// not a device; outside every grant whether or not the directory exists on the host (no
    /// host lookup: it would tell the command which hidden directories exist).
    #[test]
    fn a_refused_write_goes_by_its_session_to_its_launchers_call_where_the_view_refused_it() {
        let reader = reader();
        let granted: Arc<[PathBuf]> = Arc::from(vec![PathBuf::from("/tmp")]);
        reader.lock().watch(11114, 0, 0, Arc::clone(&granted));
        reader.lock().watch(7, 1, 0, granted);
        // `session_of` here: pid + 1000.
        write_event(&reader, 1, 12114, -30, "/usr/lib/x");
        write_event(&reader, 2, 12114, -2, "/airlock-hidden");
        write_event(&reader, 3, 12114, -2, "/tmp/missing");
        write_event(&reader, 4, 12114, -2, "/tmp/no-such-dir/x");
        write_event(&reader, 9, 12114, -2, "/airlock-no-such-dir/x");
        write_event(&reader, 5, 12114, -2, "/dev/tty");
        write_event(&reader, 6, 12114, -30, "/dev/full");
        write_event(&reader, 7, 999, -30, "/etc/other-session");
        write_event(&reader, 8, 1007, -30, "/etc/x");
        let first = reader.lock().unwatch(11114, 0).unwrap();
        let seen: Vec<(&str, &str, DenialSource)> = first
            .denials
            .iter()
            .map(|denial| (denial.object.as_str(), denial.allow.as_str(), denial.source))
            .collect();
        assert_eq!(
            seen,
            [
                ("/usr/lib/x", "write = [\"/usr/lib\"]", DenialSource::View),
                ("/airlock-hidden", "write = [\"/\"]", DenialSource::View),
                (
                    "/airlock-no-such-dir/x",
                    "write = [\"/airlock-no-such-dir\"]",
                    DenialSource::View
                ),
                ("/dev/full", NOT_GRANTABLE_DEVICES, DenialSource::View),
            ]
        );
        let other = reader.lock().unwatch(7, 1).unwrap();
        assert_eq!(other.denials.len(), 1, "{other:?}");
        assert_eq!(other.denials[0].object, "/etc/x");
        assert!(
            reader.lock().sessions.is_empty(),
            "forgotten with their launchers"
        );
    }

    #[test]
    fn a_denial_goes_to_the_call_its_launcher_serves() {
        let reader = reader();
        reader.lock().watch(11114, 0, 0, Arc::from(Vec::new()));
        reader.take(AUDIT_LANDLOCK_ACCESS, EXEC);
        reader.take(AUDIT_LANDLOCK_DOMAIN, ALLOCATED);
        // The domain is known now: its next denials go straight to the call.
        reader.take(
            AUDIT_LANDLOCK_ACCESS,
            "audit(1.2:3): domain=163d74bea blockers=net.connect_tcp daddr=10.0.0.5 dest=5432",
        );
        reader.take(AUDIT_LANDLOCK_ACCESS, EXEC);
        let call = reader.lock().unwatch(11114, 0).unwrap();
        assert_eq!(call.denials.len(), 2, "{call:?}");
        assert_eq!(call.denials[0].kind, DenialKind::Exec);
        assert_eq!(call.denials[0].object, "/usr/bin/mkfifo");
        assert_eq!(call.denials[0].allow, "exec = [\"/usr/bin/mkfifo\"]");
        assert_eq!(call.denials[1].object, "10.0.0.5:5432");
        assert!(
            call.denials[1]
                .allow
                .starts_with("network = [\"10.0.0.5:5432\"]")
        );
        assert_eq!(
            result_line(&call, str::to_owned).unwrap(),
            "the sandbox refused: exec /usr/bin/mkfifo; connect 10.0.0.5:5432"
        );
    }

    #[test]
    fn a_record_older_than_the_call_is_an_earlier_calls_and_left_out() {
        let reader = reader();
        reader
            .lock()
            .watch(11114, 0, 1_796_452_823_905, Arc::from(Vec::new()));
        // Stamped 23 ms before the call's watch began: the previous call's, come late.
        reader.take(AUDIT_LANDLOCK_ACCESS, EXEC);
        reader.take(AUDIT_LANDLOCK_DOMAIN, ALLOCATED);
        reader.take(
            AUDIT_LANDLOCK_ACCESS,
            "audit(1796452823.950:4): domain=163d74bea blockers=fs.execute path=\"/usr/bin/id\"",
        );
        let call = reader.lock().unwatch(11114, 0).unwrap();
        assert_eq!(call.denials.len(), 1, "{call:?}");
        assert_eq!(call.denials[0].object, "/usr/bin/id");
        assert_eq!(
            stamp_ms("audit(1796452823.877:2): x"),
            Some(1_796_452_823_877)
        );
        assert_eq!(stamp_ms("nonsense"), None);
    }

    #[test]
    fn a_domain_of_another_process_is_not_kept() {
        let reader = reader();
        reader.lock().watch(7, 0, 0, Arc::from(Vec::new()));
        reader.take(AUDIT_LANDLOCK_ACCESS, EXEC);
        reader.take(AUDIT_LANDLOCK_DOMAIN, ALLOCATED);
        let state = reader.lock();
        assert!(state.domains.is_empty());
        assert!(state.calls[&7][0].collected.denials.is_empty());
        assert!(state.unresolved.is_empty());
    }

    #[test]
    fn the_next_call_of_a_launcher_settling_its_last_gets_only_records_of_its_own_time() {
        let reader = reader();
        // Stamps in ms since the epoch: the first call began at 1796452823.800, its launcher
        // serves the next one from .850 while the first still settles.
        reader
            .lock()
            .watch(11114, 0, 1_796_452_823_800, Arc::from(Vec::new()));
        reader.take(AUDIT_LANDLOCK_DOMAIN, ALLOCATED);
        reader
            .lock()
            .watch(11114, 1, 1_796_452_823_850, Arc::from(Vec::new()));
        let at = |ms: u32, path: &str| {
            format!(
                "audit(1796452823.{ms}:9): domain=163d74bea blockers=fs.execute path=\"{path}\""
            )
        };
        // The first call's, late; one within the clock's slack of the next call's start;
        // the next call's.
        reader.take(AUDIT_LANDLOCK_ACCESS, &at(840, "/first"));
        reader.take(AUDIT_LANDLOCK_ACCESS, &at(847, "/either"));
        reader.take(AUDIT_LANDLOCK_ACCESS, &at(851, "/next"));
        let first = reader.lock().unwatch(11114, 0).unwrap();
        let next = reader.lock().unwatch(11114, 1).unwrap();
        let objects = |call: &Collected| {
            call.denials
                .iter()
                .map(|d| d.object.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(objects(&first), ["/first"]);
        assert_eq!(objects(&next), ["/next"]);
        assert!(reader.lock().calls.is_empty());
        // A watch ended twice (collected, then dropped) ends once.
        assert!(reader.lock().unwatch(11114, 1).is_none());
    }

    #[test]
    fn a_secret_in_an_object_is_found_whole_before_the_object_and_its_key_are_cut() {
        const SECRET: &str = "s3cr3t-0123456789-abcdefghij";
        let object = format!("/{}/{SECRET}", "p".repeat(250));
        let collected = Collected {
            denials: vec![Denial {
                source: DenialSource::Landlock,
                kind: DenialKind::Exec,
                allow: format!("exec = [\"{object}\"]"),
                object,
            }],
            ..Collected::default()
        };
        let redact = |text: &str| text.replace(SECRET, "[REDACTED]");
        let line = result_line(&collected, redact).unwrap();
        let note = serde_json::to_string(&collected.note(redact)).unwrap();
        for shown in [&line, &note] {
            assert!(!shown.contains("s3cr3t"), "{shown}");
            assert!(shown.contains('…'), "{shown}");
        }
    }

    #[test]
    fn a_call_keeps_a_bounded_number_of_denials_and_counts_the_rest() {
        let reader = reader();
        reader.lock().watch(11114, 0, 0, Arc::from(Vec::new()));
        reader.take(AUDIT_LANDLOCK_DOMAIN, ALLOCATED);
        for n in 0..100 {
            reader.take(
                AUDIT_LANDLOCK_ACCESS,
                &format!("audit(1.2:3): domain=163d74bea blockers=fs.read_file path=\"/d/{n}\""),
            );
            // The same one again is not a new denial.
            reader.take(
                AUDIT_LANDLOCK_ACCESS,
                &format!("audit(1.2:3): domain=163d74bea blockers=fs.read_file path=\"/d/{n}\""),
            );
        }
        let call = reader.lock().unwatch(11114, 0).unwrap();
        assert_eq!(call.denials.len(), SANDBOX_DENIALS_PER_CALL);
        // Past those kept every denial is counted, a repeat too: remembering them would be
        // the unbounded list the limit stops.
        assert_eq!(
            call.unrecorded,
            u64::try_from(2 * (100 - SANDBOX_DENIALS_PER_CALL)).unwrap()
        );
        assert!(
            result_line(&call, str::to_owned)
                .unwrap()
                .ends_with("; and 168 more")
        );
    }

    #[test]
    fn hex_encoded_and_long_paths_are_decoded_escaped_and_cut() {
        // "/tmp/a b\n" as the kernel writes a path with a space or a control byte.
        let record =
            "audit(1.2:3): domain=1 blockers=fs.write_file path=2F746D702F6120620A dev=\"vda\"";
        let fields = fields(body(record));
        let found = denials(&fields);
        assert_eq!(found[0].object, "/tmp/a b\n");
        assert_eq!(shown(&found[0].object), "/tmp/a b\\n");
        assert_eq!(found[0].allow, "write = [\"/tmp\"]");
        let long = format!(
            "audit(1.2:3): domain=1 blockers=fs.read_dir path=\"/{}\"",
            "a".repeat(5000)
        );
        let found = denials(&fields_of(&long));
        let object = shown(&found[0].object);
        assert!(object.len() <= SANDBOX_DENIAL_OBJECT_BYTES + '…'.len_utf8());
        assert!(object.ends_with('…'));
    }

    fn fields_of(text: &str) -> Vec<(&str, &str, bool)> {
        fields(body(text))
    }

    #[test]
    fn each_blocker_has_its_kind_and_key() {
        let cases = [
            (
                "blockers=fs.read_file path=\"/srv/data/a\"",
                DenialKind::Read,
                "/srv/data/a",
                "read = [\"/srv/data/a\"]",
            ),
            (
                "blockers=fs.make_reg path=\"/srv/out\"",
                DenialKind::Write,
                "/srv/out",
                "write = [\"/srv/out\"]",
            ),
            (
                "blockers=fs.write_file path=\"/dev/zero\"",
                DenialKind::Write,
                "/dev/zero",
                NOT_GRANTABLE_DEVICES,
            ),
            (
                "blockers=fs.make_fifo path=\"/srv/out\"",
                DenialKind::Write,
                "/srv/out",
                NOT_GRANTABLE_NODES,
            ),
            (
                "blockers=net.connect_tcp daddr=2001:db8::1 dest=443",
                DenialKind::Connect,
                "[2001:db8::1]:443",
                "",
            ),
            (
                "blockers=net.bind_tcp saddr=0.0.0.0 src=8080",
                DenialKind::Bind,
                "port 8080",
                NOT_GRANTABLE_BIND,
            ),
            (
                "blockers=scope.signal opid=4242 ocomm=\"x\"",
                DenialKind::Signal,
                "pid 4242",
                NOT_GRANTABLE_SCOPE,
            ),
        ];
        for (text, kind, object, allow) in cases {
            let record = format!("audit(1.2:3): domain=1 {text}");
            let found = denials(&fields_of(&record));
            assert_eq!(found.len(), 1, "{text}");
            assert_eq!(found[0].kind, kind, "{text}");
            assert_eq!(found[0].object, object, "{text}");
            assert!(
                found[0].allow.starts_with(allow),
                "{text}: {}",
                found[0].allow
            );
        }
        // A terminal probe of /dev/null says nothing.
        assert!(
            denials(&fields_of(
                "audit(1.2:3): domain=1 blockers=fs.ioctl_dev path=\"/dev/null\" ioctlcmd=0x5401"
            ))
            .is_empty()
        );
        // An unknown blocker, or a record without its object, says nothing.
        assert!(
            denials(&fields_of(
                "audit(1.2:3): domain=1 blockers=fs.future path=\"/a\""
            ))
            .is_empty()
        );
        assert!(denials(&fields_of("audit(1.2:3): domain=1 blockers=fs.execute")).is_empty());
    }

    #[test]
    fn netlink_messages_are_split_and_a_short_one_is_refused() {
        let mut bytes = Vec::new();
        for (kind, text) in [(1423_u16, "abc"), (1424, "defgh")] {
            let len = u32::try_from(HEADER_BYTES + text.len()).unwrap();
            bytes.extend_from_slice(&len.to_ne_bytes());
            bytes.extend_from_slice(&kind.to_ne_bytes());
            bytes.extend_from_slice(&[0; 10]);
            bytes.extend_from_slice(text.as_bytes());
            while bytes.len() % 4 != 0 {
                bytes.push(0);
            }
        }
        let (kind, payload, rest) = message(&bytes).unwrap();
        assert_eq!((kind, payload), (1423, &b"abc"[..]));
        let (kind, payload, rest) = message(rest).unwrap();
        assert_eq!((kind, payload), (1424, &b"defgh"[..]));
        assert!(message(rest).is_none());
        assert!(message(&[0; 8]).is_none());
    }
}
