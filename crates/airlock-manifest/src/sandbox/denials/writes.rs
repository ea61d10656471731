//! Writes outside the grant, from the kernel's syscall audit: the one report of what the view
//! refuses (`EROFS` from a read-only bind, `ENOENT` for a path it does not hold), which happens
//! before Landlock looks and so never reaches a Landlock record.
//!
//! Each launcher takes the audit login uid [`AUDIT_LOGIN_UID`] before it confines itself
//! (`launcher`): the kernel then gives it a new audit session, which every process of its calls
//! inherits and none can leave (changing a set login uid needs `CAP_AUDIT_CONTROL`, which no
//! command holds). The operator installs exit rules matching that login uid and the two errors
//! ([`rules`], printed by `airlock check --audit-rules`; airlock installs none). The kernel then
//! sends, for each such failed call, one event: a `SYSCALL` record (its `auid`, session `ses`,
//! `exit`), a `CWD` record, one `PATH` record per name it looked up, and an `EOE` record ending
//! it, all stamped `audit(SECONDS.MS:SERIAL)` with the event's serial. [`Events`] groups them by
//! serial, keeps only events of the login uid, tagged with the rules' key (`airlock`: another
//! rule of the operator's may match the same calls) and with one of the two errors, and hands back each
//! complete one as a [`Refused`] path; the reader attributes it by session to a launcher.
//!
//! Hostile text: the path is the command's. The kernel quotes a name only when it has no space,
//! quote or control byte, and hex-encodes it otherwise; a `"` inside a quoted value cannot
//! occur. A path that is neither is dropped. Pending events are bounded
//! (`SANDBOX_DENIAL_PENDING_EVENTS`), and so are the names kept of each
//! (`SANDBOX_DENIAL_EVENT_PATHS`).

use std::collections::VecDeque;
use std::path::{Component, Path, PathBuf};

use crate::limits::{SANDBOX_DENIAL_EVENT_PATHS, SANDBOX_DENIAL_PENDING_EVENTS};

/// The audit login uid every launcher takes (2,048,655,360): no login user has it (Debian
/// allocates below 60,000), and it lies in 0x70000000–0x7ffeffff, which systemd's uid ranges
/// leave unused. It is only a tag on audit records: no process runs as it.
pub const AUDIT_LOGIN_UID: u32 = 0x7a1c_0000;

/// `AUDIT_SYSCALL`: a system call's record.
pub(super) const AUDIT_SYSCALL: u16 = 1300;
/// `AUDIT_PATH`: one name a system call looked up.
pub(super) const AUDIT_PATH: u16 = 1302;
/// `AUDIT_CWD`: the working directory of the call.
pub(super) const AUDIT_CWD: u16 = 1307;
/// `AUDIT_EOE`: the end of an event.
pub(super) const AUDIT_EOE: u16 = 1320;

/// The key the printed rules tag their records with.
const RULE_KEY: &str = "airlock";

/// `-EROFS` and `-ENOENT` as the kernel writes `exit=`.
const EROFS: i64 = -30;
const ENOENT: i64 = -2;

/// One refused write of a session: what the reader needs to attribute and judge it.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(super) struct Refused {
    /// The record's stamp, ms since the epoch.
    pub(super) stamp_ms: u64,
    /// The audit session it came from.
    pub(super) session: u32,
    /// The path, absolute (joined with the call's working directory), `.` and `..` resolved
    /// by name.
    pub(super) path: PathBuf,
    /// `ENOENT` (the view hid the path, or it does not exist at all) rather than `EROFS`.
    pub(super) missing: bool,
    /// The path is the directory the change was to be made in (the kernel named only it).
    pub(super) directory: bool,
}

#[derive(Debug)]
struct Event {
    stamp_ms: u64,
    session: u32,
    missing: bool,
    cwd: Option<String>,
    /// Names looked up, in order: (name, the kernel marked it the parent directory).
    paths: Vec<(String, bool)>,
}

/// Events being read, by serial, oldest first.
#[derive(Debug, Default)]
pub(super) struct Events {
    pending: VecDeque<(u64, Event)>,
}

impl Events {
    /// Takes one record of `kind`; a complete event of the login uid comes back.
    pub(super) fn take(&mut self, kind: u16, text: &str) -> Option<Refused> {
        let serial = serial(text)?;
        // The host's other events (its own rules) are most of what comes: a record of an event
        // not held costs no parsing.
        if kind != AUDIT_SYSCALL && !self.pending.iter().any(|(id, _)| *id == serial) {
            return None;
        }
        let fields = super::fields(super::body(text));
        match kind {
            AUDIT_SYSCALL => {
                let ours = super::field(&fields, "auid").and_then(|auid| auid.parse::<u32>().ok())
                    == Some(AUDIT_LOGIN_UID);
                let exit = super::field(&fields, "exit").and_then(|exit| exit.parse::<i64>().ok());
                let session =
                    super::field(&fields, "ses").and_then(|ses| ses.parse::<u32>().ok())?;
                // Another rule of the operator's may match the launchers' calls too (failed
                // reads, say): only events of the printed rules count.
                let tagged = super::text_field(&fields, "key").as_deref() == Some(RULE_KEY);
                if !ours || !tagged || !matches!(exit, Some(EROFS | ENOENT)) {
                    return None;
                }
                if self.pending.len() >= SANDBOX_DENIAL_PENDING_EVENTS {
                    self.pending.pop_front();
                }
                self.pending.push_back((
                    serial,
                    Event {
                        stamp_ms: super::stamp_ms(text).unwrap_or(u64::MAX),
                        session,
                        missing: exit == Some(ENOENT),
                        cwd: None,
                        paths: Vec::new(),
                    },
                ));
                None
            }
            AUDIT_CWD => {
                let event = self.event(serial)?;
                event.cwd = super::text_field(&fields, "cwd");
                None
            }
            AUDIT_PATH => {
                let event = self.event(serial)?;
                let name = super::text_field(&fields, "name")?;
                let parent = super::field(&fields, "nametype") == Some("PARENT");
                if event.paths.len() < SANDBOX_DENIAL_EVENT_PATHS {
                    event.paths.push((name, parent));
                }
                None
            }
            AUDIT_EOE => {
                let at = self.pending.iter().position(|(id, _)| *id == serial)?;
                let (_, event) = self.pending.remove(at)?;
                refused(event)
            }
            _ => None,
        }
    }

    fn event(&mut self, serial: u64) -> Option<&mut Event> {
        self.pending
            .iter_mut()
            .find(|(id, _)| *id == serial)
            .map(|(_, event)| event)
    }
}

/// A complete event as a refused path: the first name the kernel did not mark as a parent
/// directory, else the parent directory; relative names joined with the working directory.
fn refused(event: Event) -> Option<Refused> {
    let (name, directory) = event
        .paths
        .iter()
        .find(|(_, parent)| !parent)
        .or_else(|| event.paths.first())?
        .clone();
    let name = Path::new(&name);
    let base = if name.is_absolute() {
        Path::new("/")
    } else {
        Path::new(event.cwd.as_deref()?)
    };
    if !base.is_absolute() {
        return None;
    }
    Some(Refused {
        stamp_ms: event.stamp_ms,
        session: event.session,
        path: by_name(base, name),
        missing: event.missing,
        directory,
    })
}

/// `name` joined with `base`, `.` dropped and `..` resolved by name only where that is where
/// the kernel went: in `base` (the kernel's working directory, a path without links) and at
/// the head of `name` (a `..` at the root stays at the root). A `..` after a component of
/// `name` stays as written: that component may be a link the command made (`out/u` to
/// `/usr`), and `out/u/../etc` is then `/etc`, not `out/etc`, which resolving by name would
/// claim was refused, a directory inside the grant the command never wrote to.
fn by_name(base: &Path, name: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in base.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    let mut named = false;
    for component in name.components() {
        match component {
            Component::Normal(part) => {
                named = true;
                out.push(part);
            }
            Component::ParentDir if named => out.push(".."),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// A record's serial, `audit(SECONDS.MS:SERIAL)`.
fn serial(text: &str) -> Option<u64> {
    let stamp = text.strip_prefix("audit(")?.split_once(')')?.0;
    stamp.split_once(':')?.1.parse().ok()
}

/// The system calls the rules watch, with the argument holding their open flags (`open`,
/// `openat`), for this architecture.
fn watched_calls() -> (&'static [&'static str], &'static [&'static str]) {
    // Creating, removing, renaming, linking by symlink, truncating, changing modes and owners.
    // `openat2` and `link`, `linkat` are out: the launcher's filter answers them itself
    // (`ENOSYS`, `EPERM`) before any path is looked at.
    const GENERIC: &[&str] = &[
        "mkdirat",
        "mknodat",
        "unlinkat",
        "renameat",
        "renameat2",
        "symlinkat",
        "truncate",
        "fchmodat",
        "fchownat",
    ];
    const LEGACY: &[&str] = &[
        "creat", "mkdir", "mknod", "unlink", "rmdir", "rename", "symlink", "chmod", "chown",
        "lchown",
    ];
    if cfg!(target_arch = "x86_64") {
        (GENERIC, LEGACY)
    } else {
        (GENERIC, &[])
    }
}

/// The `auditctl` rules an operator installs for writes outside the grant to be reported, one
/// per line: failed writing calls of the launchers' login uid with `EROFS` or `ENOENT`.
/// `open`/`openat` only with a write, create or truncate flag (`O_WRONLY`, `O_RDWR`,
/// `O_CREAT`, `O_TRUNC`: mask `0x243`), or every failed read would be logged too.
pub fn rules() -> String {
    let (generic, legacy) = watched_calls();
    // Both architectures' 64-bit calls: `auditctl` names them by the host's table.
    let arch = "b64";
    let mut out = String::new();
    for errno in ["EROFS", "ENOENT"] {
        let tail = format!("-F auid={AUDIT_LOGIN_UID} -F exit=-{errno} -k {RULE_KEY}");
        out.push_str(&format!(
            "-a always,exit -F arch={arch} -S openat -F a2&0x243 {tail}\n"
        ));
        if !legacy.is_empty() {
            out.push_str(&format!(
                "-a always,exit -F arch={arch} -S open -F a1&0x243 {tail}\n"
            ));
        }
        let calls: Vec<&str> = generic.iter().chain(legacy).copied().collect();
        out.push_str(&format!(
            "-a always,exit -F arch={arch} -S {} {tail}\n",
            calls.join(",")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SES: u32 = 77;

    fn syscall(serial: u64, auid: u32, ses: u32, exit: i64) -> String {
        format!(
            "audit(1796464688.053:{serial}): arch=c000003e syscall=257 success=no exit={exit} \
             a0=ffffff9c a1=5639a5688f90 a2=241 a3=1b6 items=2 ppid=1 pid=2 auid={auid} uid=0 \
             gid=0 euid=0 tty=(none) ses={ses} comm=\"sh\" exe=\"/usr/bin/bash\" key=\"airlock\""
        )
    }

    fn path(serial: u64, item: u8, name: &str, nametype: &str) -> String {
        format!(
            "audit(1796464688.053:{serial}): item={item} name={name} inode=5 dev=00:15 \
             mode=040555 nametype={nametype} cap_fp=0"
        )
    }

    fn eoe(serial: u64) -> String {
        format!("audit(1796464688.053:{serial}): ")
    }

    fn cwd(serial: u64, cwd: &str) -> String {
        format!("audit(1796464688.053:{serial}): cwd={cwd}")
    }

    fn hex(text: &str) -> String {
        text.bytes().map(|byte| format!("{byte:02X}")).collect()
    }

    /// Feeds `records` in order; what came out.
    fn feed(events: &mut Events, records: &[(u16, String)]) -> Vec<Refused> {
        records
            .iter()
            .filter_map(|(kind, text)| events.take(*kind, text))
            .collect()
    }

    #[test]
    fn an_event_of_the_login_uid_is_its_first_name_joined_with_the_cwd() {
        let mut events = Events::default();
        let out = feed(
            &mut events,
            &[
                (AUDIT_SYSCALL, syscall(10, AUDIT_LOGIN_UID, SES, -30)),
                (AUDIT_CWD, cwd(10, "\"/work/w\"")),
                (AUDIT_PATH, path(10, 0, "\"/work/w/\"", "PARENT")),
                (AUDIT_PATH, path(10, 1, "\"../beside/./x\"", "CREATE")),
                (1327, "audit(1796464688.053:10): proctitle=7368".to_owned()),
                (AUDIT_EOE, eoe(10)),
            ],
        );
        assert_eq!(
            out,
            [Refused {
                stamp_ms: 1_796_464_688_053,
                session: SES,
                path: PathBuf::from("/work/beside/x"),
                missing: false,
                directory: false,
            }]
        );
        assert!(events.pending.is_empty());
    }

    #[test]
    fn another_login_uid_errno_or_key_is_dropped_and_its_names_with_it() {
        let mut events = Events::default();
        let out = feed(
            &mut events,
            &[
                (AUDIT_SYSCALL, syscall(11, 1000, SES, -30)),
                (AUDIT_PATH, path(11, 0, "\"/root/x\"", "UNKNOWN")),
                (AUDIT_EOE, eoe(11)),
                (AUDIT_SYSCALL, syscall(12, AUDIT_LOGIN_UID, SES, -13)),
                (AUDIT_PATH, path(12, 0, "\"/root/x\"", "UNKNOWN")),
                (AUDIT_EOE, eoe(12)),
                // The operator's own rule (another key) on the same calls.
                (
                    AUDIT_SYSCALL,
                    syscall(14, AUDIT_LOGIN_UID, SES, -2)
                        .replace("key=\"airlock\"", "key=\"reads\""),
                ),
                (AUDIT_PATH, path(14, 0, "\"/root/x\"", "UNKNOWN")),
                (AUDIT_EOE, eoe(14)),
                // A name whose event never began: nothing to attach it to.
                (AUDIT_PATH, path(13, 0, "\"/root/x\"", "UNKNOWN")),
                (AUDIT_EOE, eoe(13)),
            ],
        );
        assert!(out.is_empty(), "{out:?}");
        assert!(events.pending.is_empty());
    }

    /// The kernel hex-encodes a name with a space, quote or control byte: decoded whole, a
    /// newline and a quote included, never split into fields; a name neither quoted nor hex
    /// is dropped.
    #[test]
    fn hostile_names_are_decoded_or_dropped() {
        let mut events = Events::default();
        let name = "/root/a \"b\"\nc=d ses=1 auid=0";
        let out = feed(
            &mut events,
            &[
                (AUDIT_SYSCALL, syscall(20, AUDIT_LOGIN_UID, SES, -2)),
                (AUDIT_CWD, cwd(20, &hex("/tmp/a b"))),
                (AUDIT_PATH, path(20, 0, &hex(name), "UNKNOWN")),
                (AUDIT_EOE, eoe(20)),
                (AUDIT_SYSCALL, syscall(21, AUDIT_LOGIN_UID, SES, -2)),
                (AUDIT_CWD, cwd(21, &hex("/tmp/a b"))),
                (AUDIT_PATH, path(21, 0, &hex("rel\tative"), "UNKNOWN")),
                (AUDIT_EOE, eoe(21)),
                (AUDIT_SYSCALL, syscall(22, AUDIT_LOGIN_UID, SES, -2)),
                (AUDIT_PATH, path(22, 0, "(null)", "UNKNOWN")),
                (AUDIT_EOE, eoe(22)),
                (AUDIT_SYSCALL, syscall(23, AUDIT_LOGIN_UID, SES, -2)),
                (AUDIT_PATH, path(23, 0, "ZZ", "UNKNOWN")),
                (AUDIT_EOE, eoe(23)),
            ],
        );
        let paths: Vec<(&Path, bool)> = out
            .iter()
            .map(|refused| (refused.path.as_path(), refused.missing))
            .collect();
        assert_eq!(
            paths,
            [
                (Path::new(name), true),
                (Path::new("/tmp/a b/rel\tative"), true)
            ]
        );
    }

    /// A relative name without a working directory says nothing; `..` never climbs above `/`;
    /// only the parent named, it is the path (`directory`).
    #[test]
    fn a_relative_name_needs_the_cwd_and_a_parent_alone_is_the_directory() {
        let mut events = Events::default();
        let out = feed(
            &mut events,
            &[
                (AUDIT_SYSCALL, syscall(30, AUDIT_LOGIN_UID, SES, -2)),
                (AUDIT_PATH, path(30, 0, "\"x\"", "UNKNOWN")),
                (AUDIT_EOE, eoe(30)),
                (AUDIT_SYSCALL, syscall(31, AUDIT_LOGIN_UID, SES, -2)),
                (AUDIT_CWD, cwd(31, "\"/\"")),
                (AUDIT_PATH, path(31, 0, "\"../../../proc/\"", "PARENT")),
                (AUDIT_EOE, eoe(31)),
            ],
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].path, PathBuf::from("/proc"));
        assert!(out[0].directory && out[0].missing);
    }

    /// A `..` after a name the command gave may climb out of a link it made: kept as written,
    /// never resolved to a directory inside the grant the command did not write to; a `..`
    /// at the head of a relative name climbs the working directory, which has no links.
    #[test]
    fn a_dot_dot_after_a_name_of_the_command_stays_as_written() {
        let mut events = Events::default();
        let out = feed(
            &mut events,
            &[
                (AUDIT_SYSCALL, syscall(40, AUDIT_LOGIN_UID, SES, -30)),
                (AUDIT_CWD, cwd(40, "\"/w/work\"")),
                (AUDIT_PATH, path(40, 0, "\"out/u/../etc/\"", "PARENT")),
                (AUDIT_EOE, eoe(40)),
                (AUDIT_SYSCALL, syscall(41, AUDIT_LOGIN_UID, SES, -30)),
                (AUDIT_CWD, cwd(41, "\"/w/work\"")),
                (AUDIT_PATH, path(41, 0, "\"../x/./../y\"", "UNKNOWN")),
                (AUDIT_EOE, eoe(41)),
                (AUDIT_SYSCALL, syscall(42, AUDIT_LOGIN_UID, SES, -30)),
                (
                    AUDIT_PATH,
                    path(42, 0, "\"/../usr/lib/../../etc/x\"", "UNKNOWN"),
                ),
                (AUDIT_EOE, eoe(42)),
            ],
        );
        let paths: Vec<&Path> = out.iter().map(|refused| refused.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                Path::new("/w/work/out/u/../etc"),
                Path::new("/w/x/../y"),
                Path::new("/usr/lib/../../etc/x"),
            ]
        );
    }

    /// Events that never end are bounded: the oldest go first; names per event too.
    #[test]
    fn pending_events_and_their_names_are_bounded() {
        let mut events = Events::default();
        for serial in 0..(u64::try_from(SANDBOX_DENIAL_PENDING_EVENTS).unwrap() + 10) {
            events.take(AUDIT_SYSCALL, &syscall(serial, AUDIT_LOGIN_UID, SES, -30));
            for item in 0..20 {
                events.take(AUDIT_PATH, &path(serial, item, "\"/a\"", "UNKNOWN"));
            }
        }
        assert_eq!(events.pending.len(), SANDBOX_DENIAL_PENDING_EVENTS);
        assert_eq!(events.pending.front().map(|(id, _)| *id), Some(10));
        assert!(
            events
                .pending
                .iter()
                .all(|(_, event)| event.paths.len() == SANDBOX_DENIAL_EVENT_PATHS)
        );
    }

    #[test]
    fn the_rules_name_the_login_uid_both_errors_and_write_flags() {
        let rules = rules();
        assert_eq!(
            rules.lines().count(),
            if cfg!(target_arch = "x86_64") { 6 } else { 4 }
        );
        for line in rules.lines() {
            assert!(line.starts_with("-a always,exit -F arch=b64 -S "), "{line}");
            assert!(
                line.contains(&format!("-F auid={AUDIT_LOGIN_UID} -F exit=-E")),
                "{line}"
            );
            assert!(line.ends_with(" -k airlock"), "{line}");
        }
        assert!(rules.contains("-S openat -F a2&0x243"), "{rules}");
        assert!(!rules.contains("openat2"), "{rules}");
    }
}
