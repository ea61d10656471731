//! The second wall: every command tool runs inside a sandbox the kernel enforces, so a check
//! the argument layer forgot cannot become an escape.
//!
//! Argument checks stop what we foresaw; programs do what we did not (`find` reads
//! expressions after `--`, binutils expand `@file`, `sqlite3` has `.shell`). Whatever a
//! command's arguments make it do, the kernel bounds it to what the tool's [`Policy`] grants:
//!
//! Default deny: each mechanism names what a command may do, and everything else is refused.
//!
//! | what | how |
//! |---|---|
//! | what exists | a file system view of its own (`mounts`): a fresh root holding only the granted paths, bound from the files the manifest's check saw, without the mounts below them; everything else is `ENOENT`, even to `stat` (no `/proc`, `/sys`, `/tmp`, home directory) |
//! | what may change | in the view every bind is read-only, `nosuid` and `nodev` but the writable directories: the kernel answers `EROFS` to any change of data or metadata elsewhere (`chmod`, `chown`, `utimes`, xattrs and ACLs, inode flags), as root or not; inside a writable directory, the paths that make other programs run code later (`later_code`: `.git`, `.envrc`, `.vscode`, `.mcp.json`, shell rc files, …) are read-only too unless the tool names them, and those a call creates are removed after it |
//! | files, by access | Landlock (ABI 6 rights) on top: read the program, a fixed system list ([`SYSTEM_READ`]), the workdir and path roots; execute only the program, its interpreter and declared programs; write only declared directories (and `/dev/null`); no FIFOs, sockets or devices made |
//! | system calls | seccomp by allowlist (`syscalls`): the calls a program needs, derived from a container runtime's default profile less what airlock refuses; argument filters for sockets, `socketpair`, `clone`, `fcntl` leases and notifications, `personality`, and the launcher's own settings; anything else fails (`ENOSYS`, or `EPERM` for the refusals), never kills |
//! | network | a network namespace of its own per launcher. Without `network`: no interface up, no socket but `socketpair(AF_UNIX, SOCK_STREAM or SOCK_SEQPACKET)` and, where Landlock has TCP rules, an IPv4 or IPv6 TCP socket whose every bind and connect Landlock refuses (and reports: `syscalls`, `denials`). With `network = [destinations]` (or `true`, any public destination): loopback up, holding only airlock's proxy (`proxy`, `netns`, `destinations`), Landlock refusing TCP bind and every connect but to the proxy's port; the proxy checks each destination, resolves names itself, refuses loopback, private and link-local addresses unless named by address, and counts the call's connections and bytes; never a unix socket |
//! | other processes | its PID namespace, IPC namespace and network namespace hide every process, System V object and abstract unix socket name outside it; Landlock scopes signals and abstract sockets to the launcher's domain |
//! | budgets per call | a cgroup per launcher (`cgroups`): memory of all the call's processes together, processes, and one CPU weight for every call together, that of one ordinary process, which keeps airlock's own threads answering however many processes the calls keep busy; disk bytes and files added to the writable directories' file systems, watched by airlock (`process::DiskWatch`); and per process `RLIMIT_AS`, `RLIMIT_CPU`, `RLIMIT_FSIZE`, `RLIMIT_NOFILE`, `RLIMIT_CORE` = 0, `RLIMIT_NPROC` |
//! | integrity of the policy | every path is canonical and recorded with its device and inode at load; the launcher opens each without following links, refuses a changed one and binds the very file it checked; no granted path may lie inside a writable directory |
//! | descendants | the launcher is pid 1 of its own PID namespace and the command its child: when the command ends, the launcher kills every other process in the namespace (`kill(-1)`, atomic with respect to `fork`) and reaps it before it reports the call's end, `setsid`, double forks and daemons included; any other end of a call (timeout, cancellation, a limit) closes the launcher's channel, on which it does the same, sweeps and ends, and a launcher still there `SANDBOX_STOP_GRACE` later is killed, and the kernel ends the namespace; the launcher has a parent-death signal, so the namespace also ends when airlock does, `SIGKILL` included |
//! | privileges | `no_new_privs`; every capability dropped (bounding and ambient sets included) and locked out with securebits; as root, uid 0 keeps file ownership, which the read-only view leaves nothing to use on outside the writable directories |
//! | descriptors | every descriptor but the call's three pipes closed, including any airlock inherited without close-on-exec; the launcher's control channel is its stdin, which the program's own stdin replaces |
//!
//! **Identity.** Commands run as airlock's user (root with no capabilities, or the user in a
//! user namespace mapping only itself), not under an identity that owns nothing: the view
//! already refuses every change outside the writable directories whoever the command is, and a
//! borrowed uid would turn a root-only file the manifest grants unreadable and leave the files
//! a call writes owned by a user no one has.
//!
//! **Processes when airlock is root.** The kernel exempts real uid 0 from `RLIMIT_NPROC`. The
//! launcher therefore takes a real uid of its own ([`call_uid`], unmapped, never a user of the
//! system) while the effective and file-system uid stay 0, and seccomp refuses every `set*id`
//! call so the command cannot take real uid 0 back. `RLIMIT_NPROC` then counts the processes
//! of that launcher's calls only; the pids cgroup (`pids.max`) bounds them again, per call.
//! Moving a launcher into its cgroups costs about 0.1 ms on this kernel (it took 12 ms on the
//! kernels an earlier design was measured on), once per launcher, not per call.

//! # Why this shape
//!
//! `unsafe` is forbidden, so no code can run between `fork` and `exec`. The [`launcher`] is
//! airlock re-executed (`/proc/self/exe __airlock-sandbox …`): it applies the policy to itself
//! and starts the program, which inherits every restriction (Codex CLI's Linux helper works
//! the same way). For descendants we chose a **PID namespace whose init is the launcher**:
//!
//! - a subreaper with parent-death signals cannot catch a process that double-forks after its
//!   parent's death signal was set, nor survive airlock's own `SIGKILL` (the subreaper dies
//!   too, and orphans go to the system's init);
//! - cgroup v2 `cgroup.kill` would do, but needs a delegated cgroup v2 tree that many hosts
//!   (this one: cgroup v1 controllers) and containers do not give;
//! - a PID namespace needs no delegation, holds for root, and its teardown is the kernel's:
//!   when its init exits, every process in it is killed, atomically with respect to forks.
//!
//! With `CAP_SYS_ADMIN` (airlock as root, as in containers and CI), the thread that starts
//! launchers gives each a fresh namespace (`spawn::CallNamespace`); without it, the launcher
//! creates a user namespace first and starts a second launcher inside it
//! ([`PidNamespace::UserNamespace`]). The launcher's parent-death signal is `SIGKILL`, so
//! airlock's death (even by `SIGKILL`) ends the namespace.
//!
//! **One launcher, many calls** (`resident`). Starting a launcher (an `exec` of airlock, the
//! namespace, seccomp, Landlock) cost as much again as a small command, on every call. A
//! launcher is therefore confined once and serves its tool's calls one at a time over a
//! control channel (`channel`) that brings each call's pipes. What could one call leave for
//! the next? No process: the launcher empties the namespace before it reports. Not the rules,
//! limits or uid, which are the tool's and the same for every call, and which a call cannot
//! change on the launcher (seccomp refuses `setpriority`, `sched_set*`, `ioprio_set`,
//! `prlimit64` and page migration aimed at pid 1 or at a whole group or user). Not System V
//! or POSIX IPC objects, keys, or `memfd`s, which seccomp refuses to create; not abstract
//! sockets or descriptors, which die with their processes. What remains is what any later
//! run of the tool would see anyway, files in its writable directories, and the namespace's
//! pid counter, which keeps counting between calls. Each root launcher leases a uid of its
//! own (`UidLease`) until it is reaped, and a launcher past half its own CPU limit retires.
//!
//! # Fail closed
//!
//! [`Support::probe`] looks at the kernel once at start. In [`Mode::Required`] (the default)
//! a server whose sandboxed tools the kernel cannot fully confine refuses to start, naming what
//! is missing; a launcher that cannot apply a rule refuses to run the command. A tool opts out
//! alone with `sandbox = "off"` and `accept_risk = ["unsandboxed"]`; `--sandbox best-effort`
//! applies what the kernel has and logs each tool's effective policy at start.
//!
//! # Known limits
//!
//! What each mechanism does not cover is listed in SECURITY.md ("What the sandbox does not
//! cover"); in short:
//!
//! - Landlock governs `execve`, not `mmap`: a program allowed to run the dynamic loader can
//!   load any ELF file it may read (`ld.so /usr/bin/id`), so "execute only the program" bounds
//!   casual misuse, not code execution. Files, network, processes and resources still hold.
//! - Channels between calls running at once that no rule names: `flock` on a file both may
//!   read, the machine's load and free memory (`sysinfo`, timing).
//! - The proxy does not terminate TLS: past `CONNECT` it sees the asked name and the bytes,
//!   and a listed host gets whatever the command sends it (SECURITY.md, "Network").
//! - The disk budget counts the growth of each writable directory's file system, other
//!   writers' included, every few milliseconds: a call may pass it by what it writes in that
//!   time, and a busy file system stops a call early.
//! - A later-code path a call creates exists on the host until the call ends.

pub(crate) mod cgroups;
pub(crate) mod channel;
pub mod denials;
pub mod destinations;
pub mod later_code;
pub mod launcher;
pub(crate) mod mounts;
/// The launcher's side of a networked tool's namespace: loopback, the proxy's socket.
mod netns;
mod policy;
pub mod proxy;
pub(crate) mod resident;
pub(crate) mod spawn;
mod support;
mod syscalls;
/// The host's updates: replaced system files taken, replaced grants reported.
mod updates;

use std::sync::OnceLock;

pub use cgroups::{CgroupError, Controller, Place, Version};
pub use policy::{
    Declared, NETWORK_READ, Policy, Resources, SYSTEM_READ, SYSTEM_WRITE_FILES, interpreters,
};
pub use support::{PidNamespace, Support};

/// The real uid a root launcher takes, the `slot`th of airlock process `pid`: from
/// `0x4000_0000` up, a range no distribution allocates; the pid's low 22 bits (all of them
/// under Linux's largest `pid_max`) and the slot, so two airlocks never share one. Slots are
/// leased (`UidLease`), so no two launchers alive at once share one either.
pub fn call_uid(pid: u32, slot: u8) -> u32 {
    0x4000_0000 | ((pid & 0x3f_ffff) << 8) | u32::from(slot)
}

/// A root launcher's real uid, lent for as long as its process lives: `RLIMIT_NPROC` counts by
/// real uid, so two live launchers with one would share one process count. Dropped once the
/// launcher has been reaped, when every process of its namespace is gone.
#[derive(Debug)]
pub(crate) struct UidLease {
    slot: u8,
}

impl UidLease {
    /// The lowest free slot; `None` when 256 launchers of this airlock are alive.
    pub(crate) fn take() -> Option<Self> {
        let mut taken = uid_slots();
        let slot = taken.iter().position(|used| !used)?;
        *taken.get_mut(slot)? = true;
        Some(Self {
            slot: u8::try_from(slot).ok()?,
        })
    }

    /// The uid.
    pub(crate) fn uid(&self) -> u32 {
        call_uid(std::process::id(), self.slot)
    }
}

impl Drop for UidLease {
    fn drop(&mut self) {
        if let Some(used) = uid_slots().get_mut(usize::from(self.slot)) {
            *used = false;
        }
    }
}

fn uid_slots() -> std::sync::MutexGuard<'static, [bool; 256]> {
    static SLOTS: std::sync::Mutex<[bool; 256]> = std::sync::Mutex::new([false; 256]);
    SLOTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The resident launchers now: how many are idle, and how many serve a call (for the
/// metrics' `airlock_sandbox_launchers`).
pub fn launchers() -> (usize, usize) {
    resident::counts()
}

/// The Landlock ABI whose rights the launcher asks for: file rights of ABI 5 (truncate and
/// device ioctls included), TCP (ABI 4), scoping (ABI 6).
pub const LANDLOCK_ABI: landlock::ABI = landlock::ABI::V6;

/// How strictly the server holds the sandbox.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum Mode {
    /// A tool the kernel cannot fully confine keeps the server from starting (the default).
    #[default]
    Required,
    /// Apply what the kernel offers, log what is missing per tool.
    BestEffort,
}

/// A tool's policy, encoded once for the launcher's command line, and its idle launchers.
#[derive(Debug)]
pub struct Confinement {
    policy: Policy,
    /// The policy as launchers get it, following the host's updates (`updates`).
    tracked: updates::Tracked,
    /// The tool's name, for the lines `updates` logs.
    tool: String,
    launchers: resident::Pool,
    /// The policy's destinations, shared by the proxy sessions of its calls.
    pub(crate) destinations: std::sync::Arc<destinations::Destinations>,
    /// The policy's read, exec and write paths.
    granted: std::sync::Arc<[std::path::PathBuf]>,
}

/// Why a [`Policy`] cannot become a [`Confinement`].
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfinementError {
    /// A path of the policy is not UTF-8: the launcher reads the policy as JSON text.
    #[error("a sandbox path is not valid UTF-8")]
    NotUtf8,
}

impl Confinement {
    /// Encodes `policy`.
    ///
    /// # Errors
    ///
    /// A path that is not UTF-8 cannot be passed to the launcher.
    pub fn new(policy: Policy) -> Result<Self, ConfinementError> {
        let encoded = serde_json::to_string(&policy).map_err(|_| ConfinementError::NotUtf8)?;
        Ok(Self {
            destinations: std::sync::Arc::new(policy.destinations.clone()),
            granted: policy
                .read
                .iter()
                .chain(&policy.exec)
                .chain(&policy.write)
                .cloned()
                .collect(),
            tracked: updates::Tracked::new(policy.clone(), encoded),
            policy,
            tool: String::new(),
            launchers: resident::Pool::default(),
        })
    }

    /// The same, for the tool named `tool` (named in the lines logged about its grants).
    #[must_use]
    pub fn for_tool(mut self, tool: &str) -> Self {
        tool.clone_into(&mut self.tool);
        self
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The paths its launchers' view shows as they are on the host (read, exec, write), for
    /// judging what the view refused (`denials`).
    pub(crate) fn granted(&self) -> std::sync::Arc<[std::path::PathBuf]> {
        std::sync::Arc::clone(&self.granted)
    }

    /// The policy encoded for a launcher starting now: the host's replaced system files taken,
    /// the manifest's replaced grants reported (`updates`).
    pub(crate) fn encoded(&self) -> String {
        self.tracked.encoded(&self.tool)
    }

    /// This tool's idle launchers.
    pub(crate) fn launchers(&self) -> &resident::Pool {
        &self.launchers
    }
}

/// The sandbox as this process runs it: the mode and what the kernel offers.
#[derive(Debug)]
pub struct Host {
    /// Required or best effort.
    pub mode: Mode,
    /// What the kernel offers.
    pub support: Support,
    /// Whether a call may start: the kernel enforces everything, or the mode accepts less.
    /// Decided once, so a call does not work it out again.
    pub may_launch: bool,
}

/// Sets the mode and probes the kernel, once; later calls return the first answer.
pub fn configure(mode: Mode) -> &'static Host {
    HOST.get_or_init(|| {
        let support = Support::probe();
        let may_launch = mode == Mode::BestEffort || support.missing().is_empty();
        Host {
            mode,
            support,
            may_launch,
        }
    })
}

/// The host as configured, or probed now in [`Mode::Required`].
pub fn host() -> &'static Host {
    configure(Mode::Required)
}

static HOST: OnceLock<Host> = OnceLock::new();
