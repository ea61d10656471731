//! The launcher's system call filter: an allowlist, so that a kernel interface nobody reviewed
//! fails instead of running.
//!
//! Landlock bounds files, TCP and signals; the PID and IPC namespaces bound processes and
//! System V objects; resource limits bound the rest. seccomp covers what none of them sees:
//! interfaces that reach past the grants (file notifications, `io_uring`, keyrings, the mount
//! API, other processes' memory), identity changes, socket families, hard links and set-uid
//! modes. The launcher installs it on itself after `no_new_privs` and Landlock, last
//! (`launcher::run_init_stage`); every
//! process of every call inherits it, and no process can remove a seccomp filter.
//!
//! # Two filters
//!
//! [`install`] loads two classic-BPF programs, both built with `seccompiler`:
//!
//! 1. **The allowlist**, installed first. The system calls it lists are allowed (two only with
//!    some arguments, below); every other one fails with `ENOSYS`, "this kernel has no such
//!    call". That answer is the one programs are written to survive: glibc falls back from
//!    `clone3` to `clone` only on `ENOSYS`, `tail -f` polls when `inotify_init1` says so,
//!    libraries take their old path when `memfd_create` or `io_uring_setup` is missing.
//! 2. **The refusals**, installed second. Specific calls, or calls with specific arguments,
//!    fail with `EPERM`, "not permitted"; everything else passes on to the allowlist.
//!
//! The kernel runs every filter of a thread, the most recently installed first, and keeps
//! "the first-seen action value of highest precedence (along with its accompanying data)"
//! (seccomp(2), man-pages 6.03, checked for this module; the kernel's loop in
//! `seccomp_run_filters` replaces its answer only on a strictly higher precedence). Both
//! filters answer with `SECCOMP_RET_ERRNO` or `SECCOMP_RET_ALLOW`, and an errno outranks an
//! allow. So a call the refusals match fails with `EPERM` (an errno, seen first), even when
//! the allowlist would say `ENOSYS` (an errno of the same precedence, seen second); a call they
//! let through gets the allowlist's answer. The order of the two [`seccompiler::apply_filter`]
//! calls is therefore part of the policy. Neither uses `TSYNC`: a filter binds the thread that
//! installs it and what that thread starts (the launcher is single-threaded).
//!
//! A refusal by omission says `ENOSYS`; the refusals filter exists for the few calls where
//! `EPERM` is the answer programs need to hear. It lists only two kinds:
//!
//! - calls refused outright that programs expect to be *denied*, never *missing*: `setuid`,
//!   `setreuid`, `setresuid`, `setfsuid`, `setgroups`, and the hard links `link`, `linkat`
//!   (what a file system without them answers; git renames instead, cargo and pip copy).
//!   They are not in the allowlist either, so both filters agree they never run. (`setgid`, `setregid`, `setresgid` and `setfsgid`
//!   are allowed: without `CAP_SETGID` a process may only move among the group ids it has.)
//! - calls the allowlist lets through whose arguments decide: `socket`, `socketpair`, `fcntl`,
//!   `pidfd_open`, the calls that set a file's mode, and the calls that could change the
//!   launcher (below).
//!
//! Everything else refused (the list below) is simply absent from the allowlist, and no
//! refusal names a call the allowlist does not list, except the `set*id` family above: the
//! tests check both.
//!
//! # Where the allowlist comes from
//!
//! Docker's default seccomp profile (moby's `profiles/seccomp/default.json`), the list most
//! Linux programs have already been run under: its unconditional allow list is the base,
//! written out here by name for each architecture. From it airlock leaves out:
//!
//! | left out (`ENOSYS`) | why |
//! |---|---|
//! | `inotify_init`, `inotify_init1`, `inotify_add_watch`, `inotify_rm_watch`, `fanotify_init`, `fanotify_mark` | file notifications report activity on files outside the grants: Landlock has no say over placing a watch |
//! | `io_uring_setup`, `io_uring_enter`, `io_uring_register` | the requests of a ring run without passing through this filter |
//! | `memfd_create`, `memfd_secret` | memory outside the address-space limit, and code run from bytes no `exec` rule names |
//! | `shmget`, `shmat`, `shmdt`, `shmctl`, `msgget`, `msgsnd`, `msgrcv`, `msgctl`, `semget`, `semop`, `semtimedop`, `semctl`, every `mq_*`, `ipc` | kernel memory outside the limits, and objects a later call could find (the IPC namespace hides the host's, this stops new ones) |
//! | `openat2` | its mode (a set-uid bit, below) lies in a structure the filter cannot read; glibc's `open` and every runtime's use `openat` |
//! | `keyctl`, `add_key`, `request_key` | the session keyring is airlock's, shared by every call |
//! | `name_to_handle_at`, `open_by_handle_at` | file handles name files without a path Landlock could check |
//! | `ptrace`, `process_vm_readv`, `process_vm_writev`, `kcmp`, `pidfd_getfd`, `process_madvise`, `process_mrelease` | reading or acting on another process, the launcher included |
//! | `bpf`, `perf_event_open`, `userfaultfd` | large kernel attack surface; `userfaultfd` also stretches kernel races |
//! | `mount`, `umount2`, `pivot_root`, `open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`, `statmount`, `listmount` | the mount API; the last two (in Docker's list) would also read the host's mount table, which Landlock keeps from the command by closing `/proc` |
//! | `unshare`, `setns`, `chroot`, and `clone` with a namespace flag | a new user namespace hands an unprivileged process every capability over it, and with them the kernel's widest attack surface; `clone3` too (below) |
//! | `modify_ldt`, `iopl`, `ioperm`, `uselib`, `ustat`, `sysfs`, `_sysctl`, `epoll_ctl_old`, `epoll_wait_old` (x86_64 only) | obsolete or hardware interfaces |
//! | `quotactl`, `quotactl_fd`, `syslog`, `acct`, `reboot`, `kexec_load`, `kexec_file_load`, `init_module`, `finit_module`, `delete_module`, `swapon`, `swapoff`, `vhangup`, `lookup_dcookie` | administration of the host |
//! | `settimeofday`, `clock_settime`, `clock_adjtime`, `adjtimex` | setting the clock (reading it stays: `clock_gettime`, `gettimeofday`) |
//! | `migrate_pages`, `move_pages`, `mbind`, `set_mempolicy`, `set_mempolicy_home_node`, `get_mempolicy` | memory placement, the first two across processes (the launcher's included) |
//!
//! The names Docker's list adds for other architectures and for 32-bit and time64 variants
//! (`fstat64`, `_llseek`, `socketcall`, `*_time64`, …) have no number here and are not listed.
//! Calls newer than Docker's list (`file_getattr`, `listns`, …) are missing until reviewed.
//!
//! Some calls stay allowed although they look powerful, because another wall already bounds
//! them:
//!
//! - `ioctl`: on a device file Landlock's `IoctlDev` right decides, and the launcher grants it
//!   only within the declared writable directories (where no device can be made), not on
//!   `/dev/null` or any read root; the command's standard streams are pipes, so there is no
//!   terminal to push input into (`TIOCSTI`).
//! - `mknod`, `mknodat`: Landlock's rights to make FIFOs, sockets and devices are handled and
//!   never granted, and a device node needs `CAP_MKNOD`, which no launcher has.
//! - `prctl`: it changes the caller only; its privileged options need capabilities the launcher
//!   dropped (bounding set included), `no_new_privs` cannot be cleared, and `PR_SET_SECCOMP`
//!   can only add a filter.
//! - `seccomp`: a filter a command adds runs beside these two and can only refuse more (an
//!   errno here outranks any allow there).
//! - `landlock_create_ruleset`, `landlock_add_rule`, `landlock_restrict_self`: Landlock only
//!   ever adds restrictions.
//! - `flock`: it needs a descriptor the command already opened, under Landlock's rules.
//! - `sysinfo`: system-wide totals (memory, load, uptime, process count), no process or path.
//!
//! # Argument conditions
//!
//! A classic-BPF filter reads the six argument registers, never memory behind a pointer. The
//! conditions compare the low 32 bits: the kernel reads an `int` there (and ignores the upper
//! half of the register, so comparing it would let garbage there change the answer), or a
//! flag word whose bits all lie there. The one exception is `prlimit64`'s pointer to a new
//! limit, compared whole.
//!
//! In the allowlist:
//!
//! - `clone` only when its flags (argument 0 on x86_64 and aarch64) hold none of
//!   `CLONE_NEWNS`, `CLONE_NEWCGROUP`, `CLONE_NEWUTS`, `CLONE_NEWIPC`, `CLONE_NEWUSER`,
//!   `CLONE_NEWPID`, `CLONE_NEWNET`: `fork`, `vfork`-style spawns and threads pass.
//!   `clone3` takes its flags in a structure the filter cannot read, so it is left out:
//!   `ENOSYS`, and glibc (`posix_spawn`, `pthread_create`) falls back to `clone`.
//! - `personality` only to ask (`0xffffffff`) or to set `PER_LINUX` (0), `PER_LINUX32` (8),
//!   either with `UNAME26` (`0x20000`, `0x20008`): not `ADDR_NO_RANDOMIZE` or the other flags
//!   that weaken the process's own memory layout.
//!
//! In the refusals (`EPERM`):
//!
//! - `socket` ([`Sockets`]): without the network, every family, unless Landlock handles TCP
//!   (below); then every socket but a TCP one: `AF_INET` or `AF_INET6`, type `SOCK_STREAM`
//!   (the low four bits compared, as for `socketpair`, so `SOCK_NONBLOCK` and `SOCK_CLOEXEC`
//!   pass), protocol 0 or `IPPROTO_TCP`. With the network, every family but `AF_INET`,
//!   `AF_INET6`, and `AF_NETLINK` with protocol `NETLINK_ROUTE` (0), which glibc's name
//!   resolution uses to list interfaces (`AI_ADDRCONFIG`, `if_nameindex`). No unix socket can
//!   be made, so none can connect by path: a path socket is not a file to Landlock's rights,
//!   and this is what keeps `docker.sock`, the system bus and agents out of reach, even as
//!   effective uid 0. Other netlink protocols would read the host's sockets (`sock_diag`) or
//!   listen to its device events; packet sockets and the rest are not TCP or UDP.
//! - `socketpair`: anything but `AF_UNIX` with type `SOCK_STREAM` or `SOCK_SEQPACKET`. The kernel
//!   refuses any type flag but `SOCK_NONBLOCK` and `SOCK_CLOEXEC` (`EINVAL`) and then reads the
//!   type from the low four bits (`SOCK_TYPE_MASK`), so the filter compares those bits, masked
//!   the same way: the type is refused for each of the other fourteen values. A datagram pair
//!   could `sendto()` any socket path; a connected stream refuses an address and a seqpacket
//!   pair ignores it.
//! - `fcntl` with `F_SETLEASE` or `F_NOTIFY`: leases and directory notifications tell the
//!   command what other processes do to files outside its grants. (`fcntl64` exists only on
//!   32-bit targets, which this filter does not serve.)
//! - `pidfd_open` of pid 1, the launcher: no handle on it to signal or poll.
//! - `open`, `openat`, `creat`, `mknod`, `mknodat`, `chmod`, `fchmod`, `fchmodat`,
//!   `fchmodat2` with the set-user-id (`0o4000`) or set-group-id (`0o2000`) bit in their mode
//!   argument (compared whether or not `O_CREAT` is given: glibc passes 0 without it, Rust
//!   and Go `0o666`, Python `0o777`). A set-uid file made in a writable directory stays
//!   set-uid on the host, where the view's `nosuid` does not reach: as root, a set-uid-root
//!   copy of any program. `tar -x` and `cp -p` of such a file warn and keep the other bits.
//! - `link`, `linkat`, always: a hard link adds a name but no inode, so no budget counts it
//!   (20,001 of them pushed a later-code name past the sweep's walk bound).
//! - `setpriority`, `ioprio_set`, `prlimit64` (with a new limit), `sched_setaffinity`,
//!   `sched_setscheduler`, `sched_setparam`, `sched_setattr` aimed at pid 1, and
//!   `setpriority`, `ioprio_set` for a whole process group or user (the launcher shares both
//!   with the call). The launcher serves call after call and every later call inherits its
//!   settings; a process may still change itself and its own children.
//! - every `set*uid` and `setgroups`: the launcher's identity is fixed before the filter. When airlock runs as root, the launcher's real uid is a leased one
//!   (`super::call_uid`) that `RLIMIT_NPROC` counts by, and it must stay.
//!
//! # A TCP socket without the network
//!
//! A tool without `network` could be refused every socket here, as it was. It is not, where
//! Landlock can refuse TCP itself ([`Sockets::TcpForLandlock`]), so that a command's connect
//! reaches Landlock, which refuses it (`EACCES`) and, from ABI 7, logs it with the address it
//! dialled (`net.connect_tcp`, `super::denials`): the operator learns `connect
//! 10.0.0.5:5432` instead of a bare "Operation not permitted". Why that opens nothing:
//!
//! - **Landlock refuses every connect and bind.** The launcher's ruleset handles
//!   `ConnectTcp` and `BindTcp` for every tool, and allows no port to one without `network`
//!   (`launcher::restrict_files_and_network`). The launcher chooses this filter only when the
//!   domain it is in handles both (`launcher::handles_tcp`: Landlock ABI 4, Linux 6.7, enforced);
//!   otherwise, in best-effort mode on an older kernel, it keeps [`Sockets::Closed`].
//! - **Only TCP.** The filter lets through `AF_INET` and `AF_INET6`, type `SOCK_STREAM` and
//!   protocol 0 or `IPPROTO_TCP`, nothing else: Landlock's rights are TCP's, and which other
//!   stream protocols of those families they cover has changed between kernels (MPTCP, 262;
//!   SCTP), so those stay refused with UDP, raw and the rest. Protocol 0 is TCP: the kernel's
//!   `inet_create` takes the first protocol registered for the type, and TCP's entry is
//!   permanent and first (later ones are inserted after it).
//! - **The empty namespace stays the wall under it.** The launcher's network namespace has no
//!   interface up, not even loopback: a connect Landlock missed would find no route
//!   (`ENETUNREACH`, `EADDRNOTAVAIL` for IPv6), as `an_empty_network_namespace_reaches_nothing_without_landlock`
//!   shows with no Landlock at all: 10.0.0.5, 127.0.0.1, TCP fast open, and a listener's own port.
//! - **Listening reaches no one.** `bind` is refused, but `listen` on an unbound socket binds it
//!   to an ephemeral port without asking Landlock. Nothing can connect to it: the namespace is the
//!   launcher's alone (no interface, no other process outside the call), connect is refused
//!   inside too, and the launcher kills every process of the call when it ends.
//! - **What was checked** (Linux 6.18, Landlock ABI 7, a probe run by a real launcher): connect
//!   to 10.0.0.5:5432, 127.0.0.1:5432, `[::1]:22` and 0.0.0.0:0, TCP fast open (`sendto` with
//!   `MSG_FASTOPEN`, which connects inside `sendmsg`, and `TCP_FASTOPEN_CONNECT` then
//!   `connect`), `bind` to port 0 and 8080, and a connect to a listener's autobound port: each
//!   `EACCES`; a UDP socket `EPERM`. The cost: a tool without `network` reaches the kernel's
//!   TCP socket code (options, `listen`, `getsockname`), as a networked tool always could.
//!
//! # Other ABIs
//!
//! On x86_64 the x32 ABI shares `AUDIT_ARCH_X86_64` and marks its calls with bit 30
//! (`0x4000_0000`) of the number. The allowlist names native numbers only (none in the x32-only
//! range 512–547 either), so every x32 call fails with `ENOSYS`: the refusals need no x32
//! copies, since nothing they would refuse could get past the allowlist anyway. (The denylist
//! this replaced had to repeat each rule with bit 30 set.) A 32-bit call (`int 0x80` on x86_64,
//! an AArch32 task on aarch64) reports another `AUDIT_ARCH`, and `seccompiler` starts both
//! programs with an architecture check that answers `SECCOMP_RET_KILL_PROCESS`: a 32-bit
//! program is killed at its first system call. That is accepted (airlock serves 64-bit tools).
//!
//! The tables are written for x86_64 (which also has the legacy calls such as `open`, `stat`,
//! `fork`, `poll`) and aarch64 (which has only the generic table); other targets do not build.
//!
//! # What the launcher needs under it
//!
//! Landlock comes before [`install`] (its rules open each granted path with `openat2`, which
//! the allowlist leaves out). After it the launcher, for each call, makes: `recvmsg` with `SCM_RIGHTS` on its socket pair, `read`,
//! `fcntl(F_DUPFD_CLOEXEC)`, `std::process::Command` (glibc's `posix_spawn`: `clone3`, refused,
//! then `clone(CLONE_VM | CLONE_VFORK)`, then `execve` in the child), `wait4`,
//! `kill(-1, SIGKILL)`, `clock_gettime`, `sendto`. It reads `/proc/self/stat` only before the
//! filter. All of these are allowed; the unit tests run the same kinds of calls on a filtered
//! thread, and the sandbox's integration tests run the real launcher.
//!
//! Since Linux 5.11 the kernel remembers which system calls every filter allows whatever their
//! arguments and skips the programs for them, so the length of the list does not slow the
//! calls programs make most.

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the sandbox's system call tables are written for x86_64 and aarch64 only");

use std::collections::BTreeMap;

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule,
};

/// Which sockets a command may open: the part of the refusals that depends on the policy and
/// on what Landlock enforces.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(super) enum Sockets {
    /// No `network`, and Landlock does not refuse TCP here (below ABI 4, or off in best-effort
    /// mode): no `socket()` at all.
    Closed,
    /// No `network`, and the launcher's Landlock domain refuses every TCP connect and bind:
    /// IPv4 and IPv6 TCP stream sockets only, so that a connect is Landlock's to refuse and to
    /// log with its address (see "A TCP socket without the network").
    TcpForLandlock,
    /// `network`: IPv4, IPv6 and netlink route.
    Network,
}

impl Sockets {
    /// The answer for a policy with or without `network`, under a Landlock domain that does or
    /// does not handle TCP connect and bind.
    pub(super) fn of(network: bool, landlock_handles_tcp: bool) -> Self {
        match (network, landlock_handles_tcp) {
            (true, _) => Self::Network,
            (false, true) => Self::TcpForLandlock,
            (false, false) => Self::Closed,
        }
    }
}

/// Installs the launcher's seccomp filters on the calling thread (and what it starts): the
/// allowlist, then the refusals for the policy's `sockets`.
///
/// Both programs are built before either is installed, so an error leaves the thread
/// unfiltered rather than half filtered.
///
/// # Errors
///
/// A program could not be built or the kernel refused it (seccomp missing).
pub(super) fn install(sockets: Sockets) -> Result<(), FilterError> {
    let allowlist = allowlist_program()?;
    let refusals = refusals_program(sockets)?;
    seccompiler::apply_filter(&allowlist)?;
    seccompiler::apply_filter(&refusals)?;
    Ok(())
}

/// Why the filters are not installed: seccompiler's own errors, which name no path or value.
#[derive(Debug, thiserror::Error)]
pub(super) enum FilterError {
    /// A program could not be built for this architecture.
    #[error("{0}")]
    Build(#[from] BackendError),
    /// The kernel refused a program (seccomp missing).
    #[error("{0}")]
    Install(#[from] seccompiler::Error),
}

/// How many system calls each part of the policy names, for `airlock check`.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(super) struct Counts {
    /// Allowed whatever their arguments (some of them refused for some arguments by the
    /// refusals, see [`Counts::refused`]).
    pub(super) allowed: usize,
    /// Allowed with some arguments only (`clone`, `personality`).
    pub(super) allowed_with_conditions: usize,
    /// Answered `EPERM`, always or for some arguments.
    pub(super) refused: usize,
}

/// The counts for this architecture.
pub(super) fn counts() -> Counts {
    Counts {
        allowed: allowed_unconditionally().count(),
        allowed_with_conditions: ALLOWED_WITH_CONDITIONS.len(),
        refused: refused_outright().chain(policed()).count(),
    }
}

/// One line describing the filter for a policy's `sockets`, as `airlock check` shows it.
pub(super) fn summary(sockets: Sockets) -> String {
    let counts = counts();
    let sockets = match sockets {
        Sockets::Network => "socket() but IPv4, IPv6 and netlink route",
        Sockets::TcpForLandlock => {
            "socket() but IPv4 and IPv6 TCP (whose connect and bind Landlock refuses)"
        }
        Sockets::Closed => "socket()",
    };
    format!(
        "allowlist of {} system calls ({} of them with some arguments only), derived from \
         Docker's default seccomp profile less what airlock refuses; refused with EPERM: \
         set*uid, setgroups, hard links, a set-uid or set-gid mode, {sockets}, \
         socketpair() but unix stream and seqpacket, fcntl leases and dnotify, pidfd_open and priority, scheduling and limit changes aimed \
         at the launcher; every other system call fails with ENOSYS",
        counts
            .allowed
            .saturating_add(counts.allowed_with_conditions),
        counts.allowed_with_conditions,
    )
}

/// A system call as the tables name it: its number on this architecture and its name.
type Call = (i64, &'static str);

/// `(libc::SYS_name, "SYS_name")` for each name.
macro_rules! calls {
    ($($name:ident),* $(,)?) => {
        [$((libc::$name, stringify!($name)),)*]
    };
}

/// Allowed whatever the arguments, on both architectures: Docker's list as the generic table
/// names it, less what airlock refuses. `socket` is here (the refusals police its families);
/// so are `socketpair`, `fcntl`, `pidfd_open` and the calls [`launcher_rules`] guards.
const COMMON: &[Call] = &calls![
    // Files and descriptors.
    SYS_read,
    SYS_write,
    SYS_readv,
    SYS_writev,
    SYS_pread64,
    SYS_pwrite64,
    SYS_preadv,
    SYS_pwritev,
    SYS_preadv2,
    SYS_pwritev2,
    SYS_openat,
    SYS_close,
    SYS_close_range,
    SYS_dup,
    SYS_dup3,
    SYS_fcntl,
    SYS_flock,
    SYS_ioctl,
    SYS_lseek,
    SYS_fstat,
    SYS_newfstatat,
    SYS_statx,
    SYS_statfs,
    SYS_fstatfs,
    SYS_faccessat,
    SYS_faccessat2,
    SYS_getdents64,
    SYS_getcwd,
    SYS_chdir,
    SYS_fchdir,
    SYS_mkdirat,
    SYS_mknodat,
    SYS_unlinkat,
    SYS_renameat,
    SYS_renameat2,
    SYS_symlinkat,
    SYS_readlinkat,
    SYS_fchmod,
    SYS_fchmodat,
    SYS_fchown,
    SYS_fchownat,
    SYS_umask,
    SYS_utimensat,
    SYS_truncate,
    SYS_ftruncate,
    SYS_fallocate,
    SYS_fadvise64,
    SYS_readahead,
    SYS_fsync,
    SYS_fdatasync,
    SYS_sync,
    SYS_syncfs,
    SYS_sync_file_range,
    SYS_copy_file_range,
    SYS_sendfile,
    SYS_splice,
    SYS_tee,
    SYS_vmsplice,
    SYS_pipe2,
    SYS_getxattr,
    SYS_lgetxattr,
    SYS_fgetxattr,
    SYS_listxattr,
    SYS_llistxattr,
    SYS_flistxattr,
    SYS_setxattr,
    SYS_lsetxattr,
    SYS_fsetxattr,
    SYS_removexattr,
    SYS_lremovexattr,
    SYS_fremovexattr,
    // Polling, events, timers.
    SYS_epoll_create1,
    SYS_epoll_ctl,
    SYS_epoll_pwait,
    SYS_epoll_pwait2,
    SYS_ppoll,
    SYS_pselect6,
    SYS_eventfd2,
    SYS_signalfd4,
    SYS_timerfd_create,
    SYS_timerfd_settime,
    SYS_timerfd_gettime,
    SYS_timer_create,
    SYS_timer_settime,
    SYS_timer_gettime,
    SYS_timer_getoverrun,
    SYS_timer_delete,
    SYS_getitimer,
    SYS_setitimer,
    SYS_clock_gettime,
    SYS_clock_getres,
    SYS_clock_nanosleep,
    SYS_gettimeofday,
    SYS_nanosleep,
    SYS_times,
    // Linux asynchronous I/O (on descriptors already open).
    SYS_io_setup,
    SYS_io_destroy,
    SYS_io_submit,
    SYS_io_cancel,
    SYS_io_getevents,
    // Memory.
    SYS_brk,
    SYS_mmap,
    SYS_munmap,
    SYS_mremap,
    SYS_mprotect,
    SYS_madvise,
    SYS_msync,
    SYS_mincore,
    SYS_mlock,
    SYS_mlock2,
    SYS_mlockall,
    SYS_munlock,
    SYS_munlockall,
    SYS_remap_file_pages,
    SYS_mseal,
    SYS_pkey_alloc,
    SYS_pkey_free,
    SYS_pkey_mprotect,
    SYS_membarrier,
    // Processes and threads (`clone` is conditional, below).
    SYS_execve,
    SYS_execveat,
    SYS_exit,
    SYS_exit_group,
    SYS_wait4,
    SYS_waitid,
    SYS_set_tid_address,
    SYS_set_robust_list,
    SYS_get_robust_list,
    SYS_rseq,
    SYS_futex,
    SYS_futex_waitv,
    SYS_restart_syscall,
    SYS_getpid,
    SYS_getppid,
    SYS_gettid,
    SYS_getpgid,
    SYS_setpgid,
    SYS_getsid,
    SYS_setsid,
    SYS_pidfd_open,
    SYS_pidfd_send_signal,
    SYS_prctl,
    SYS_seccomp,
    SYS_capget,
    SYS_capset,
    SYS_landlock_create_ruleset,
    SYS_landlock_add_rule,
    SYS_landlock_restrict_self,
    // Identity, read only.
    SYS_getuid,
    SYS_geteuid,
    SYS_getresuid,
    SYS_getgid,
    SYS_getegid,
    SYS_getresgid,
    SYS_getgroups,
    // Signals.
    SYS_kill,
    SYS_tkill,
    SYS_tgkill,
    SYS_rt_sigaction,
    SYS_rt_sigprocmask,
    SYS_rt_sigpending,
    SYS_rt_sigreturn,
    SYS_rt_sigsuspend,
    SYS_rt_sigtimedwait,
    SYS_rt_sigqueueinfo,
    SYS_rt_tgsigqueueinfo,
    SYS_sigaltstack,
    // Scheduling, priorities and limits.
    SYS_sched_yield,
    SYS_sched_getaffinity,
    SYS_sched_setaffinity,
    SYS_sched_getattr,
    SYS_sched_setattr,
    SYS_sched_getparam,
    SYS_sched_setparam,
    SYS_sched_getscheduler,
    SYS_sched_setscheduler,
    SYS_sched_get_priority_max,
    SYS_sched_get_priority_min,
    SYS_sched_rr_get_interval,
    SYS_getpriority,
    SYS_setpriority,
    SYS_ioprio_get,
    SYS_ioprio_set,
    SYS_getrlimit,
    SYS_setrlimit,
    SYS_prlimit64,
    SYS_getrusage,
    // Sockets.
    SYS_socket,
    SYS_socketpair,
    SYS_bind,
    SYS_listen,
    SYS_connect,
    SYS_accept,
    SYS_accept4,
    SYS_getsockname,
    SYS_getpeername,
    SYS_getsockopt,
    SYS_setsockopt,
    SYS_shutdown,
    SYS_sendto,
    SYS_recvfrom,
    SYS_sendmsg,
    SYS_recvmsg,
    SYS_sendmmsg,
    SYS_recvmmsg,
    // The system, read only.
    SYS_uname,
    SYS_sysinfo,
    SYS_getcpu,
    SYS_getrandom,
];

/// Allowed whatever the arguments, on both architectures, but not named by libc 0.2 on both
/// targets yet. Since Linux 5.1 new system calls take one number on every architecture (424 on),
/// so each number here is the kernel's on x86_64 and aarch64 alike (`syscall_64.tbl`,
/// `asm-generic/unistd.h`).
const UNIFIED: &[Call] = &[
    (451, "cachestat"),
    (452, "fchmodat2"),
    (453, "map_shadow_stack"),
    (454, "futex_wake"),
    (455, "futex_wait"),
    (456, "futex_requeue"),
    (463, "setxattrat"),
    (464, "getxattrat"),
    (465, "listxattrat"),
    (466, "removexattrat"),
];

/// Allowed whatever the arguments on x86_64 only: the legacy calls aarch64 never had, and
/// `arch_prctl` (thread pointer setup).
#[cfg(target_arch = "x86_64")]
const ARCH: &[Call] = &calls![
    SYS_arch_prctl,
    SYS_access,
    SYS_alarm,
    SYS_chmod,
    SYS_chown,
    SYS_creat,
    SYS_dup2,
    SYS_epoll_create,
    SYS_epoll_wait,
    SYS_eventfd,
    SYS_fork,
    SYS_futimesat,
    SYS_get_thread_area,
    SYS_getdents,
    SYS_getpgrp,
    SYS_lchown,
    SYS_lstat,
    SYS_mkdir,
    SYS_mknod,
    SYS_open,
    SYS_pause,
    SYS_pipe,
    SYS_poll,
    SYS_readlink,
    SYS_rename,
    SYS_rmdir,
    SYS_select,
    SYS_set_thread_area,
    SYS_signalfd,
    SYS_stat,
    SYS_symlink,
    SYS_time,
    SYS_unlink,
    SYS_utime,
    SYS_utimes,
    SYS_vfork,
];

/// aarch64 has only the generic table: nothing of its own.
#[cfg(target_arch = "aarch64")]
const ARCH: &[Call] = &[];

/// Allowed whatever the arguments, numbered per architecture, that libc 0.2 does not name:
/// `io_pgetevents` (asynchronous I/O with a signal mask) and, on x86_64, `uretprobe` (the
/// kernel's own return-probe trampoline calls it; anywhere else the kernel answers `SIGILL`).
#[cfg(target_arch = "x86_64")]
const ARCH_UNNAMED: &[Call] = &[(333, "io_pgetevents"), (335, "uretprobe")];

/// See the x86_64 list.
#[cfg(target_arch = "aarch64")]
const ARCH_UNNAMED: &[Call] = &[(292, "io_pgetevents")];

/// Allowed with some arguments only (see [`allowlist_rules`]).
const ALLOWED_WITH_CONDITIONS: &[Call] = &calls![SYS_clone, SYS_personality];

/// Refused with `EPERM` whatever the arguments, and absent from the allowlist.
const IDENTITY: &[Call] = &calls![
    SYS_setuid,
    SYS_setreuid,
    SYS_setresuid,
    SYS_setfsuid,
    SYS_setgroups,
];

/// Refused with `EPERM` whatever the arguments, and absent from the allowlist: a hard link
/// adds a name without a new inode, so neither the disk budget's file count nor anything
/// else bounds how many a call makes (20,001 of them pushed a later-code name past the
/// sweep's walk), and it joins a file inside a writable directory to another name there.
/// `EPERM` is what a file system without hard links answers, and what programs fall back
/// from: git renames, cargo and pip copy.
#[cfg(target_arch = "x86_64")]
const HARD_LINKS: &[Call] = &calls![SYS_linkat, SYS_link];
#[cfg(target_arch = "aarch64")]
const HARD_LINKS: &[Call] = &calls![SYS_linkat];

/// The calls that can set a file's mode, with the argument holding it: refused with `EPERM`
/// when that mode has the set-user-id or set-group-id bit. A file made set-uid in a writable
/// directory stays so on the host, where the view's `nosuid` does not reach: as root, a
/// set-uid-root copy of any program; unprivileged, one of airlock's own user. `openat2`,
/// whose mode lies in a structure the filter cannot read, is out of the allowlist.
#[cfg(target_arch = "x86_64")]
const MODE_SETTERS: &[(Call, u8)] = &[
    ((libc::SYS_openat, "SYS_openat"), 3),
    ((libc::SYS_mknodat, "SYS_mknodat"), 2),
    ((libc::SYS_fchmod, "SYS_fchmod"), 1),
    ((libc::SYS_fchmodat, "SYS_fchmodat"), 2),
    ((452, "fchmodat2"), 2),
    ((libc::SYS_open, "SYS_open"), 2),
    ((libc::SYS_creat, "SYS_creat"), 1),
    ((libc::SYS_mknod, "SYS_mknod"), 1),
    ((libc::SYS_chmod, "SYS_chmod"), 1),
];
#[cfg(target_arch = "aarch64")]
const MODE_SETTERS: &[(Call, u8)] = &[
    ((libc::SYS_openat, "SYS_openat"), 3),
    ((libc::SYS_mknodat, "SYS_mknodat"), 2),
    ((libc::SYS_fchmod, "SYS_fchmod"), 1),
    ((libc::SYS_fchmodat, "SYS_fchmodat"), 2),
    ((452, "fchmodat2"), 2),
];

/// The mode bits no call may set: set-user-id and set-group-id.
const PRIVILEGE_BITS: [u64; 2] = [0o4000, 0o2000];

/// Refused with `EPERM` whatever the arguments: [`IDENTITY`] and [`HARD_LINKS`].
fn refused_outright() -> impl Iterator<Item = &'static Call> {
    IDENTITY.iter().chain(HARD_LINKS)
}

/// Allowed by the allowlist and refused for some arguments: [`POLICED`] and the
/// [`MODE_SETTERS`].
fn policed() -> impl Iterator<Item = &'static Call> {
    POLICED
        .iter()
        .chain(MODE_SETTERS.iter().map(|(call, _)| call))
}

/// Allowed: without `CAP_SETGID`, which no launcher keeps, a process may only move among the
/// group ids it already has (real, effective, saved), so these change nothing a call could
/// use; `bash` started as root calls them when it sees a real uid other than its effective
/// one, and would print a second refusal at every start.
const GROUP_IDS: &[Call] = &calls![SYS_setgid, SYS_setregid, SYS_setresgid, SYS_setfsgid];

/// Allowed by the allowlist, refused with `EPERM` for some arguments (`socket` for all of them
/// without the network).
const POLICED: &[Call] = &calls![
    SYS_socket,
    SYS_socketpair,
    SYS_fcntl,
    SYS_pidfd_open,
    SYS_setpriority,
    SYS_ioprio_set,
    SYS_prlimit64,
    SYS_sched_setaffinity,
    SYS_sched_setscheduler,
    SYS_sched_setparam,
    SYS_sched_setattr,
];

/// Every system call the allowlist lets through whatever the arguments.
fn allowed_unconditionally() -> impl Iterator<Item = &'static Call> {
    COMMON
        .iter()
        .chain(UNIFIED)
        .chain(ARCH)
        .chain(ARCH_UNNAMED)
        .chain(GROUP_IDS)
}

/// The namespace flags `clone` may not carry (all within its 32 low bits).
const NAMESPACE_FLAGS: libc::c_int = libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET;

/// The `personality` values a program may pass: the query (`0xffffffff`), `PER_LINUX`,
/// `PER_LINUX32`, and each with `UNAME26`.
const PERSONAS: [u64; 5] = [0, 0x0008, 0x2_0000, 0x2_0008, 0xffff_ffff];

/// The launcher's pid inside its namespace, as every process of a call sees it.
const LAUNCHER_PID: u64 = 1;

/// The bits of a socket type that name it; the rest are flags (`SOCK_NONBLOCK`,
/// `SOCK_CLOEXEC`, any other refused by the kernel with `EINVAL`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// A non-negative C constant as a filter operand.
fn arg(value: libc::c_int) -> u64 {
    u64::from(value.cast_unsigned())
}

/// `argument == value`, comparing the 32 bits the kernel reads.
fn equals(argument: u8, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(argument, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
}

/// `argument != value`, comparing the 32 bits the kernel reads.
fn differs(argument: u8, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(argument, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, value)
}

/// `argument & mask == value`, on the low 32 bits.
fn masked(argument: u8, mask: u64, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(
        argument,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(mask),
        value,
    )
}

/// The allowlist: each listed call with no condition (allowed), or with the rules one of which
/// its arguments must match.
fn allowlist_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = allowed_unconditionally()
        .map(|(number, _)| (*number, Vec::new()))
        .collect();
    rules.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![masked(0, arg(NAMESPACE_FLAGS), 0)?])?],
    );
    let personas = PERSONAS
        .iter()
        .map(|persona| SeccompRule::new(vec![equals(0, *persona)?]))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_personality, personas);
    Ok(rules)
}

/// The refusals: each call with no condition (always refused) or the rules under which it is.
fn refusal_rules(sockets: Sockets) -> Result<BTreeMap<i64, Vec<SeccompRule>>, BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = refused_outright()
        .map(|(number, _)| (*number, Vec::new()))
        .collect();
    for ((number, _), argument) in MODE_SETTERS {
        let privileged = PRIVILEGE_BITS
            .iter()
            .map(|bit| SeccompRule::new(vec![masked(*argument, *bit, *bit)?]))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(*number, privileged);
    }
    rules.insert(libc::SYS_socket, socket_rules(sockets)?);
    // A socket pair: not unix, or of a type other than stream and seqpacket.
    let mut pair = vec![SeccompRule::new(vec![differs(0, arg(libc::AF_UNIX))?])?];
    let kept = [arg(libc::SOCK_STREAM), arg(libc::SOCK_SEQPACKET)];
    for kind in (0..=SOCK_TYPE_MASK).filter(|kind| !kept.contains(kind)) {
        pair.push(SeccompRule::new(vec![masked(1, SOCK_TYPE_MASK, kind)?])?);
    }
    rules.insert(libc::SYS_socketpair, pair);
    rules.insert(
        libc::SYS_fcntl,
        vec![
            SeccompRule::new(vec![equals(1, arg(libc::F_SETLEASE))?])?,
            SeccompRule::new(vec![equals(1, arg(libc::F_NOTIFY))?])?,
        ],
    );
    rules.insert(
        libc::SYS_pidfd_open,
        vec![SeccompRule::new(vec![equals(0, LAUNCHER_PID)?])?],
    );
    rules.extend(launcher_rules()?);
    Ok(rules)
}

/// `socket` refused: always without the network, or all but IPv4 and IPv6 TCP when Landlock
/// refuses its connect and bind; with the network, for every family but IPv4, IPv6 and netlink
/// route.
fn socket_rules(sockets: Sockets) -> Result<Vec<SeccompRule>, BackendError> {
    match sockets {
        Sockets::Closed => Ok(Vec::new()),
        Sockets::TcpForLandlock => tcp_only(),
        Sockets::Network => network_sockets(),
    }
}

/// Refused unless IPv4 or IPv6, of type `SOCK_STREAM` (flags aside), with protocol 0 or
/// `IPPROTO_TCP`: any one condition failing matches a rule.
fn tcp_only() -> Result<Vec<SeccompRule>, BackendError> {
    let mut rules = vec![
        SeccompRule::new(vec![
            differs(0, arg(libc::AF_INET))?,
            differs(0, arg(libc::AF_INET6))?,
        ])?,
        SeccompRule::new(vec![differs(2, 0)?, differs(2, arg(libc::IPPROTO_TCP))?])?,
    ];
    let stream = arg(libc::SOCK_STREAM);
    for kind in (0..=SOCK_TYPE_MASK).filter(|kind| *kind != stream) {
        rules.push(SeccompRule::new(vec![masked(1, SOCK_TYPE_MASK, kind)?])?);
    }
    Ok(rules)
}

/// Refused unless IPv4, IPv6, or netlink route.
fn network_sockets() -> Result<Vec<SeccompRule>, BackendError> {
    Ok(vec![
        SeccompRule::new(vec![
            differs(0, arg(libc::AF_INET))?,
            differs(0, arg(libc::AF_INET6))?,
            differs(0, arg(libc::AF_NETLINK))?,
        ])?,
        SeccompRule::new(vec![
            equals(0, arg(libc::AF_NETLINK))?,
            differs(2, arg(libc::NETLINK_ROUTE))?,
        ])?,
    ])
}

/// The refusals that keep a call's processes from changing the launcher (pid 1): each system
/// call with the argument conditions under which it is refused.
fn launcher_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, BackendError> {
    let rule = SeccompRule::new;
    // `which` of setpriority: PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2; of ioprio_set:
    // IOPRIO_WHO_PROCESS 1, IOPRIO_WHO_PGRP 2, IOPRIO_WHO_USER 3.
    let mut rules = vec![
        (
            libc::SYS_setpriority,
            vec![
                rule(vec![equals(0, 0)?, equals(1, LAUNCHER_PID)?])?,
                rule(vec![equals(0, 1)?])?,
                rule(vec![equals(0, 2)?])?,
            ],
        ),
        (
            libc::SYS_ioprio_set,
            vec![
                rule(vec![equals(0, 1)?, equals(1, LAUNCHER_PID)?])?,
                rule(vec![equals(0, 2)?])?,
                rule(vec![equals(0, 3)?])?,
            ],
        ),
        (
            libc::SYS_prlimit64,
            vec![rule(vec![
                equals(0, LAUNCHER_PID)?,
                // The new limit, a pointer: all 64 bits.
                SeccompCondition::new(2, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)?,
            ])?],
        ),
    ];
    // `migrate_pages` and `move_pages`, which the denylist refused for pid 1 only, are out of
    // the allowlist altogether.
    for syscall in [
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
    ] {
        rules.push((syscall, vec![rule(vec![equals(0, LAUNCHER_PID)?])?]));
    }
    Ok(rules)
}

/// The allowlist as a program: listed calls allowed, every other `ENOSYS`.
fn allowlist_program() -> Result<BpfProgram, BackendError> {
    let rules = allowlist_rules()?;
    compile(
        rules,
        SeccompAction::Errno(libc::ENOSYS.cast_unsigned()),
        SeccompAction::Allow,
    )
}

/// The refusals as a program: matching calls `EPERM`, every other passed on.
fn refusals_program(sockets: Sockets) -> Result<BpfProgram, BackendError> {
    let rules = refusal_rules(sockets)?;
    compile(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.cast_unsigned()),
    )
}

/// One filter for this architecture.
fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    mismatch: SeccompAction,
    matched: SeccompAction,
) -> Result<BpfProgram, BackendError> {
    let arch = std::env::consts::ARCH.try_into()?;
    let filter = SeccompFilter::new(rules, mismatch, matched, arch)?;
    filter.try_into()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::os::fd::AsFd as _;
    use std::process::Command;

    use rustix::net::{AddressFamily, SocketFlags, SocketType};

    use super::*;

    /// What a probe got: success, or the errno.
    type Outcome = Result<(), i32>;

    fn outcome<T>(result: rustix::io::Result<T>) -> Outcome {
        result.map(drop).map_err(|errno| errno.raw_os_error())
    }

    /// Runs `probe` on a new thread under both filters (the filters die with the thread) and
    /// returns what it returns.
    fn filtered<T: Send + 'static>(
        sockets: Sockets,
        probe: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        std::thread::spawn(move || {
            install(sockets).expect("the kernel accepts both filters");
            probe()
        })
        .join()
        .expect("the probe thread")
    }

    const ALL_SOCKETS: [Sockets; 3] = [Sockets::Closed, Sockets::TcpForLandlock, Sockets::Network];

    /// What airlock refuses by design: none of it may be in the allowlist.
    fn refused_by_design() -> Vec<Call> {
        let mut calls = calls![
            SYS_inotify_init1,
            SYS_inotify_add_watch,
            SYS_inotify_rm_watch,
            SYS_fanotify_init,
            SYS_fanotify_mark,
            SYS_io_uring_setup,
            SYS_io_uring_enter,
            SYS_io_uring_register,
            SYS_memfd_create,
            SYS_memfd_secret,
            SYS_shmget,
            SYS_shmat,
            SYS_shmdt,
            SYS_shmctl,
            SYS_msgget,
            SYS_msgsnd,
            SYS_msgrcv,
            SYS_msgctl,
            SYS_semget,
            SYS_semop,
            SYS_semtimedop,
            SYS_semctl,
            SYS_mq_open,
            SYS_mq_unlink,
            SYS_mq_timedsend,
            SYS_mq_timedreceive,
            SYS_mq_notify,
            SYS_mq_getsetattr,
            SYS_keyctl,
            SYS_add_key,
            SYS_request_key,
            SYS_name_to_handle_at,
            SYS_open_by_handle_at,
            SYS_ptrace,
            SYS_process_vm_readv,
            SYS_process_vm_writev,
            SYS_kcmp,
            SYS_pidfd_getfd,
            SYS_process_madvise,
            SYS_process_mrelease,
            SYS_bpf,
            SYS_perf_event_open,
            SYS_userfaultfd,
            SYS_mount,
            SYS_umount2,
            SYS_pivot_root,
            SYS_open_tree,
            SYS_move_mount,
            SYS_fsopen,
            SYS_fsconfig,
            SYS_fsmount,
            SYS_fspick,
            SYS_mount_setattr,
            SYS_unshare,
            SYS_setns,
            SYS_chroot,
            SYS_clone3,
            SYS_quotactl,
            SYS_quotactl_fd,
            SYS_syslog,
            SYS_acct,
            SYS_reboot,
            SYS_kexec_load,
            SYS_kexec_file_load,
            SYS_init_module,
            SYS_finit_module,
            SYS_delete_module,
            SYS_swapon,
            SYS_swapoff,
            SYS_settimeofday,
            SYS_clock_settime,
            SYS_clock_adjtime,
            SYS_adjtimex,
            SYS_vhangup,
            SYS_lookup_dcookie,
            SYS_migrate_pages,
            SYS_move_pages,
            SYS_mbind,
            SYS_set_mempolicy,
            SYS_set_mempolicy_home_node,
            SYS_get_mempolicy,
        ]
        .to_vec();
        // The mount table readers (numbered alike everywhere, not named by libc yet).
        calls.extend([(457, "statmount"), (458, "listmount")]);
        #[cfg(target_arch = "x86_64")]
        calls.extend(calls![
            SYS_inotify_init,
            SYS_modify_ldt,
            SYS_iopl,
            SYS_ioperm,
            SYS_uselib,
            SYS_ustat,
            SYS_sysfs,
            SYS__sysctl,
            SYS_epoll_ctl_old,
            SYS_epoll_wait_old,
        ]);
        calls.extend(refused_outright());
        calls.extend(calls![SYS_openat2]);
        calls
    }

    fn allowed_numbers() -> BTreeSet<i64> {
        allowed_unconditionally()
            .chain(ALLOWED_WITH_CONDITIONS)
            .map(|(number, _)| *number)
            .collect()
    }

    #[test]
    fn the_allowlist_names_each_system_call_once() {
        let all: Vec<Call> = allowed_unconditionally()
            .chain(ALLOWED_WITH_CONDITIONS)
            .copied()
            .collect();
        let numbers = allowed_numbers();
        let names: BTreeSet<&str> = all.iter().map(|(_, name)| *name).collect();
        assert_eq!(numbers.len(), all.len(), "a number twice: {all:?}");
        assert_eq!(names.len(), all.len(), "a name twice: {all:?}");
        let rules = allowlist_rules().unwrap();
        assert_eq!(rules.keys().copied().collect::<BTreeSet<_>>(), numbers);
    }

    #[test]
    fn nothing_refused_by_design_is_in_the_allowlist() {
        let allowed = allowed_numbers();
        let refused = refused_by_design();
        let found: Vec<&Call> = refused
            .iter()
            .filter(|(number, _)| allowed.contains(number))
            .collect();
        assert!(found.is_empty(), "allowed: {found:?}");
        let numbers: BTreeSet<i64> = refused.iter().map(|(number, _)| *number).collect();
        assert_eq!(numbers.len(), refused.len(), "a refusal listed twice");
    }

    /// The refusals name what the allowlist lets through (to refuse some arguments) and the
    /// `set*id` family (absent from the allowlist, answered `EPERM`), nothing else.
    #[test]
    fn the_refusals_agree_with_the_allowlist() {
        let allowed: BTreeSet<i64> = allowed_unconditionally()
            .map(|(number, _)| *number)
            .collect();
        let identity: BTreeSet<i64> = refused_outright().map(|(number, _)| *number).collect();
        let policed: BTreeSet<i64> = policed().map(|(number, _)| *number).collect();
        assert!(policed.is_subset(&allowed), "{policed:?}");
        assert!(identity.is_disjoint(&allowed_numbers()), "{identity:?}");
        for sockets in ALL_SOCKETS {
            let rules = refusal_rules(sockets).unwrap();
            let named: BTreeSet<i64> = rules.keys().copied().collect();
            assert_eq!(
                named,
                identity.union(&policed).copied().collect(),
                "{sockets:?}"
            );
            for number in &identity {
                assert!(rules[number].is_empty(), "{number}: refused always");
            }
            for number in &policed {
                let always = rules[number].is_empty();
                assert_eq!(
                    always,
                    *number == libc::SYS_socket && sockets == Sockets::Closed,
                    "{number}: refused for some arguments only"
                );
            }
        }
    }

    /// x32 calls (bit 30) and the x32-only numbers 512–547 are never in the allowlist, so they
    /// fail with `ENOSYS` and need no refusals of their own.
    #[test]
    fn no_x32_number_is_allowed() {
        for number in allowed_numbers() {
            assert!(number & 0x4000_0000 == 0, "{number}");
            assert!(!(512..=547).contains(&number), "{number}");
        }
    }

    /// The numbers written by hand are the kernel's: libc agrees wherever it names one.
    #[test]
    fn unified_numbers_agree_with_libc_where_it_names_them() {
        #[cfg(target_arch = "x86_64")]
        assert_eq!(libc::SYS_fchmodat2, 452);
        assert_eq!(libc::SYS_futex_waitv, 449);
        assert_eq!(libc::SYS_mseal, 462);
        for (number, name) in UNIFIED {
            assert!((424..512).contains(number), "{name}");
        }
    }

    #[test]
    fn the_counts_are_the_tables() {
        let counts = counts();
        // x86_64 has the legacy `link`, `open`, `creat`, `mknod` and `chmod` besides.
        let (allowed, refused) = if cfg!(target_arch = "x86_64") {
            (261, 27)
        } else {
            (224, 22)
        };
        assert_eq!(
            counts,
            Counts {
                allowed,
                allowed_with_conditions: 2,
                refused,
            }
        );
        let line = summary(Sockets::Network);
        assert!(
            line.starts_with(&format!(
                "allowlist of {} system calls (2 of them",
                allowed + 2
            )),
            "{line}"
        );
        assert!(line.contains("IPv4, IPv6 and netlink route"), "{line}");
        assert!(!summary(Sockets::Closed).contains("IPv4"));
        assert!(
            summary(Sockets::TcpForLandlock).contains("socket() but IPv4 and IPv6 TCP"),
            "{}",
            summary(Sockets::TcpForLandlock)
        );
    }

    /// Both programs build, fit the kernel's limit of 4096 instructions, and install.
    #[test]
    fn the_kernel_accepts_both_filters() {
        for sockets in ALL_SOCKETS {
            let allowlist = allowlist_program().unwrap();
            let refusals = refusals_program(sockets).unwrap();
            assert!(allowlist.len() < 4096, "{}", allowlist.len());
            assert!(refusals.len() < 4096, "{}", refusals.len());
            assert_eq!(
                filtered(sockets, rustix::process::getpid),
                rustix::process::getpid()
            );
        }
    }

    /// The answers a filtered thread gets through safe wrappers, by name.
    fn probe_thread(sockets: Sockets) -> BTreeMap<&'static str, Outcome> {
        filtered(sockets, move || {
            let mut seen = BTreeMap::new();
            let pid1 = rustix::process::Pid::from_raw(1).expect("1 is a pid");
            seen.insert(
                "unshare(CLONE_NEWUSER)",
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER)
                    .map_err(|errno| std::io::Error::from(errno).raw_os_error().unwrap_or(0)),
            );
            let pair = |kind, flags| {
                outcome(rustix::net::socketpair(
                    AddressFamily::UNIX,
                    kind,
                    flags,
                    None,
                ))
            };
            seen.insert(
                "socketpair(UNIX, DGRAM)",
                pair(SocketType::DGRAM, SocketFlags::empty()),
            );
            seen.insert(
                "socketpair(UNIX, DGRAM | CLOEXEC)",
                pair(SocketType::DGRAM, SocketFlags::CLOEXEC),
            );
            seen.insert(
                "socketpair(UNIX, STREAM)",
                pair(SocketType::STREAM, SocketFlags::empty()),
            );
            seen.insert(
                "socketpair(UNIX, SEQPACKET | NONBLOCK | CLOEXEC)",
                pair(
                    SocketType::SEQPACKET,
                    SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
                ),
            );
            seen.insert(
                "socketpair(INET, STREAM)",
                outcome(rustix::net::socketpair(
                    AddressFamily::INET,
                    SocketType::STREAM,
                    SocketFlags::empty(),
                    None,
                )),
            );
            let socket =
                |family, kind, protocol| outcome(rustix::net::socket(family, kind, protocol));
            seen.insert(
                "socket(UNIX)",
                socket(AddressFamily::UNIX, SocketType::STREAM, None),
            );
            seen.insert(
                "socket(INET)",
                socket(AddressFamily::INET, SocketType::STREAM, None),
            );
            seen.insert(
                "socket(INET, DGRAM)",
                socket(AddressFamily::INET, SocketType::DGRAM, None),
            );
            seen.insert(
                "socket(NETLINK, ROUTE)",
                socket(AddressFamily::NETLINK, SocketType::RAW, None),
            );
            seen.insert(
                "socket(NETLINK, SOCK_DIAG)",
                socket(
                    AddressFamily::NETLINK,
                    SocketType::RAW,
                    Some(rustix::net::netlink::SOCK_DIAG),
                ),
            );
            seen.insert(
                "socket(PACKET)",
                socket(AddressFamily::PACKET, SocketType::DGRAM, None),
            );
            seen.insert(
                "inotify_init1",
                outcome(rustix::fs::inotify::init(
                    rustix::fs::inotify::CreateFlags::CLOEXEC,
                )),
            );
            seen.insert(
                "memfd_create",
                outcome(rustix::fs::memfd_create(
                    "x",
                    rustix::fs::MemfdFlags::CLOEXEC,
                )),
            );
            seen.insert(
                "setuid",
                outcome(rustix::thread::set_thread_uid(rustix::process::getuid())),
            );
            seen.insert(
                "setgid",
                outcome(rustix::thread::set_thread_gid(rustix::process::getgid())),
            );
            seen.insert("setgroups", outcome(rustix::thread::set_thread_groups(&[])));
            seen.insert(
                "pidfd_open(1)",
                outcome(rustix::process::pidfd_open(
                    pid1,
                    rustix::process::PidfdFlags::empty(),
                )),
            );
            seen.insert(
                "pidfd_open(self)",
                outcome(rustix::process::pidfd_open(
                    rustix::process::getpid(),
                    rustix::process::PidfdFlags::empty(),
                )),
            );
            // Setting pid 1's priority to the value it has: a no-op were it ever let through.
            let init_priority = rustix::process::getpriority_process(Some(pid1));
            seen.insert(
                "setpriority(1)",
                init_priority
                    .and_then(|priority| rustix::process::setpriority_process(Some(pid1), priority))
                    .map_err(|errno| errno.raw_os_error()),
            );
            let own = rustix::process::getpriority_process(None);
            seen.insert(
                "setpriority(self)",
                own.and_then(|priority| rustix::process::setpriority_process(None, priority))
                    .map_err(|errno| errno.raw_os_error()),
            );
            // Modes and links, on files of a scratch directory (removed before the thread
            // ends; `unlinkat` and `rmdir` stay allowed).
            let dir = std::env::temp_dir().join(format!(
                "airlock-seccomp-{}-{sockets:?}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).expect("a scratch directory");
            let file = dir.join("file");
            let mode = rustix::fs::Mode::from_raw_mode;
            let create = |name: &str, bits| {
                outcome(rustix::fs::open(
                    dir.join(name),
                    rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
                    mode(bits),
                ))
            };
            seen.insert("open(O_CREAT, 0644)", create("file", 0o644));
            seen.insert("open(O_CREAT, 04755)", create("setuid", 0o4755));
            seen.insert("open(O_CREAT, 02755)", create("setgid", 0o2755));
            seen.insert(
                "chmod(0755)",
                outcome(rustix::fs::chmod(&file, mode(0o755))),
            );
            seen.insert(
                "chmod(04755)",
                outcome(rustix::fs::chmod(&file, mode(0o4755))),
            );
            seen.insert(
                "fchmodat(02755)",
                outcome(rustix::fs::chmodat(
                    rustix::fs::CWD,
                    &file,
                    mode(0o2755),
                    rustix::fs::AtFlags::empty(),
                )),
            );
            seen.insert(
                "mknodat(S_IFREG | 04755)",
                outcome(rustix::fs::mknodat(
                    rustix::fs::CWD,
                    dir.join("node"),
                    rustix::fs::FileType::RegularFile,
                    mode(0o4755),
                    0,
                )),
            );
            seen.insert("linkat", outcome(rustix::fs::link(&file, dir.join("link"))));
            seen.insert(
                "openat2",
                outcome(rustix::fs::openat2(
                    rustix::fs::CWD,
                    &file,
                    rustix::fs::OFlags::RDONLY,
                    mode(0),
                    rustix::fs::ResolveFlags::empty(),
                )),
            );
            std::fs::remove_dir_all(&dir).expect("the scratch directory removed");
            seen.insert(
                "getpid",
                if rustix::process::getpid()
                    .as_raw_nonzero()
                    .get()
                    .unsigned_abs()
                    == std::process::id()
                {
                    Ok(())
                } else {
                    Err(0)
                },
            );
            seen
        })
    }

    fn assert_outcomes(seen: &BTreeMap<&str, Outcome>, expected: &[(&str, Outcome)]) {
        for (name, want) in expected {
            assert_eq!(seen.get(name), Some(want), "{name}: {seen:?}");
        }
        assert_eq!(seen.len(), expected.len(), "{seen:?}");
    }

    const ENOSYS: Outcome = Err(libc::ENOSYS);
    const EPERM: Outcome = Err(libc::EPERM);

    #[test]
    fn a_filtered_thread_gets_the_policys_answers() {
        let seen = probe_thread(Sockets::Closed);
        assert_outcomes(
            &seen,
            &[
                ("unshare(CLONE_NEWUSER)", ENOSYS),
                ("socketpair(UNIX, DGRAM)", EPERM),
                ("socketpair(UNIX, DGRAM | CLOEXEC)", EPERM),
                ("socketpair(UNIX, STREAM)", Ok(())),
                ("socketpair(UNIX, SEQPACKET | NONBLOCK | CLOEXEC)", Ok(())),
                ("socketpair(INET, STREAM)", EPERM),
                ("socket(UNIX)", EPERM),
                ("socket(INET)", EPERM),
                ("socket(INET, DGRAM)", EPERM),
                ("socket(NETLINK, ROUTE)", EPERM),
                ("socket(NETLINK, SOCK_DIAG)", EPERM),
                ("socket(PACKET)", EPERM),
                ("inotify_init1", ENOSYS),
                ("memfd_create", ENOSYS),
                ("setuid", EPERM),
                ("setgid", Ok(())),
                ("setgroups", EPERM),
                ("pidfd_open(1)", EPERM),
                ("pidfd_open(self)", Ok(())),
                ("setpriority(1)", EPERM),
                ("setpriority(self)", Ok(())),
                ("getpid", Ok(())),
                ("open(O_CREAT, 0644)", Ok(())),
                ("open(O_CREAT, 04755)", EPERM),
                ("open(O_CREAT, 02755)", EPERM),
                ("chmod(0755)", Ok(())),
                ("chmod(04755)", EPERM),
                ("fchmodat(02755)", EPERM),
                ("mknodat(S_IFREG | 04755)", EPERM),
                ("linkat", EPERM),
                ("openat2", ENOSYS),
            ],
        );
    }

    #[test]
    fn with_the_network_only_ip_and_netlink_route_sockets_open() {
        let seen = probe_thread(Sockets::Network);
        assert_outcomes(
            &seen,
            &[
                ("unshare(CLONE_NEWUSER)", ENOSYS),
                ("socketpair(UNIX, DGRAM)", EPERM),
                ("socketpair(UNIX, DGRAM | CLOEXEC)", EPERM),
                ("socketpair(UNIX, STREAM)", Ok(())),
                ("socketpair(UNIX, SEQPACKET | NONBLOCK | CLOEXEC)", Ok(())),
                ("socketpair(INET, STREAM)", EPERM),
                ("socket(UNIX)", EPERM),
                ("socket(INET)", Ok(())),
                ("socket(INET, DGRAM)", Ok(())),
                ("socket(NETLINK, ROUTE)", Ok(())),
                ("socket(NETLINK, SOCK_DIAG)", EPERM),
                ("socket(PACKET)", EPERM),
                ("inotify_init1", ENOSYS),
                ("memfd_create", ENOSYS),
                ("setuid", EPERM),
                ("setgid", Ok(())),
                ("setgroups", EPERM),
                ("pidfd_open(1)", EPERM),
                ("pidfd_open(self)", Ok(())),
                ("setpriority(1)", EPERM),
                ("setpriority(self)", Ok(())),
                ("getpid", Ok(())),
                ("open(O_CREAT, 0644)", Ok(())),
                ("open(O_CREAT, 04755)", EPERM),
                ("open(O_CREAT, 02755)", EPERM),
                ("chmod(0755)", Ok(())),
                ("chmod(04755)", EPERM),
                ("fchmodat(02755)", EPERM),
                ("mknodat(S_IFREG | 04755)", EPERM),
                ("linkat", EPERM),
                ("openat2", ENOSYS),
            ],
        );
    }

    /// Without the network but under a Landlock domain that refuses TCP, the answers are those
    /// without the network but for an IPv4 TCP socket, which opens (for Landlock to refuse its
    /// connect).
    #[test]
    fn without_the_network_under_landlock_tcp_only_a_tcp_socket_opens() {
        let closed = probe_thread(Sockets::Closed);
        let mut expected: Vec<(&str, Outcome)> = closed
            .iter()
            .map(|(name, outcome)| (*name, *outcome))
            .collect();
        for (name, outcome) in &mut expected {
            if *name == "socket(INET)" {
                *outcome = Ok(());
            }
        }
        assert_outcomes(&probe_thread(Sockets::TcpForLandlock), &expected);
    }

    /// Each socket a TCP-only filter must refuse, by family, type (flags included) and
    /// protocol, is `EPERM`; each TCP stream socket, flags or not, opens. The protocol and type
    /// are raw numbers, as a hostile program passes them: MPTCP (262) and SCTP (132) are
    /// stream protocols of `AF_INET` Landlock's TCP rules do not cover.
    #[test]
    fn a_tcp_only_filter_refuses_every_other_family_type_and_protocol() {
        use std::num::NonZeroU32;
        const INET: u16 = 2;
        const INET6: u16 = 10;
        const UNIX: u16 = 1;
        const NETLINK: u16 = 16;
        const PACKET: u16 = 17;
        const STREAM: u32 = libc::SOCK_STREAM.cast_unsigned();
        const DGRAM: u32 = libc::SOCK_DGRAM.cast_unsigned();
        const RAW: u32 = libc::SOCK_RAW.cast_unsigned();
        const SEQPACKET: u32 = libc::SOCK_SEQPACKET.cast_unsigned();
        const FLAGS: u32 = (libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC).cast_unsigned();
        const TCP: u32 = libc::IPPROTO_TCP.cast_unsigned();
        const UDP: u32 = libc::IPPROTO_UDP.cast_unsigned();
        const SCTP: u32 = libc::IPPROTO_SCTP.cast_unsigned();
        const MPTCP: u32 = 262;
        let cases: Vec<(&str, u16, u32, u32, Outcome)> = vec![
            ("inet stream", INET, STREAM, 0, Ok(())),
            ("inet stream tcp", INET, STREAM, TCP, Ok(())),
            (
                "inet stream nonblock cloexec",
                INET,
                STREAM | FLAGS,
                0,
                Ok(()),
            ),
            ("inet6 stream", INET6, STREAM, 0, Ok(())),
            (
                "inet6 stream tcp cloexec",
                INET6,
                STREAM | FLAGS,
                TCP,
                Ok(()),
            ),
            ("inet stream mptcp", INET, STREAM, MPTCP, EPERM),
            ("inet6 stream mptcp", INET6, STREAM, MPTCP, EPERM),
            ("inet stream sctp", INET, STREAM, SCTP, EPERM),
            ("inet stream udp", INET, STREAM, UDP, EPERM),
            ("inet dgram", INET, DGRAM, 0, EPERM),
            ("inet dgram udp", INET, DGRAM, UDP, EPERM),
            ("inet6 dgram cloexec", INET6, DGRAM | FLAGS, 0, EPERM),
            ("inet raw tcp", INET, RAW, TCP, EPERM),
            ("inet seqpacket", INET, SEQPACKET, 0, EPERM),
            ("inet type 15", INET, 15, 0, EPERM),
            ("unix stream", UNIX, STREAM, 0, EPERM),
            ("netlink raw route", NETLINK, RAW, 0, EPERM),
            ("packet dgram", PACKET, DGRAM, 0, EPERM),
        ];
        let asked = cases.clone();
        let seen: Vec<Outcome> = filtered(Sockets::TcpForLandlock, move || {
            asked
                .iter()
                .map(|(_, family, kind, protocol, _)| {
                    outcome(rustix::net::socket(
                        AddressFamily::from_raw(*family),
                        SocketType::from_raw(*kind),
                        NonZeroU32::new(*protocol).map(rustix::net::Protocol::from_raw),
                    ))
                })
                .collect()
        });
        for ((name, _, _, _, want), got) in cases.iter().zip(&seen) {
            assert_eq!(got, want, "{name}");
        }
    }

    /// What the launcher does between two calls, on a filtered thread: Landlock, a call
    /// received with `SCM_RIGHTS`, a descriptor duplicated, a program spawned, killed and
    /// waited for, the status sent back.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "a test spawning programs under the filters"
    )]
    fn the_launchers_own_calls_pass() {
        let (ours, theirs) = crate::sandbox::channel::pair().unwrap();
        let (stdin, _stdin_writer) = std::io::pipe().unwrap();
        let (_stdout_reader, stdout) = std::io::pipe().unwrap();
        let (_stderr_reader, stderr) = std::io::pipe().unwrap();
        crate::sandbox::channel::send_call(
            ours.as_fd(),
            0,
            [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()],
        )
        .unwrap();
        // Landlock's rules open each granted path before the filter is installed.
        let path = rustix::fs::openat2(
            rustix::fs::CWD,
            "/usr",
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
            rustix::fs::ResolveFlags::NO_SYMLINKS,
        )
        .unwrap();
        let steps = filtered(Sockets::Closed, move || {
            rustix::fs::fstat(&path).map_err(|errno| format!("fstat: {errno}"))?;
            let call = crate::sandbox::channel::receive_call(theirs.as_fd())?.ok_or("no call")?;
            rustix::io::fcntl_dupfd_cloexec(&call.stderr, 3)
                .map_err(|errno| format!("dup: {errno}"))?;
            let mut sleeper = Command::new("/bin/sleep")
                .arg("30")
                .spawn()
                .map_err(|error| format!("spawn: {error}"))?;
            sleeper.kill().map_err(|error| format!("kill: {error}"))?;
            let status = sleeper.wait().map_err(|error| format!("wait: {error}"))?;
            let _cpu = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
            // A status, as `channel::send_status` sends it (its bytes are not the point).
            rustix::net::send(&theirs, b"status", rustix::net::SendFlags::NOSIGNAL)
                .map_err(|errno| format!("send: {errno}"))?;
            // A Landlock ruleset added under the filter (a command may add its own).
            use landlock::{Access as _, RulesetAttr as _};
            let abi = crate::sandbox::LANDLOCK_ABI;
            landlock::Ruleset::default()
                .handle_access(landlock::AccessFs::from_all(abi))
                .and_then(|ruleset| ruleset.create())
                .and_then(|created| created.restrict_self())
                .map_err(|error| format!("landlock: {error}"))?;
            Ok::<_, String>(status.code())
        });
        assert_eq!(steps, Ok(None), "the sleeper is killed by a signal");
        let mut message = [0_u8; 16];
        let read = rustix::io::read(&ours, &mut message).unwrap();
        assert_eq!(message.get(..read), Some(&b"status"[..]));
    }

    /// A program started from a filtered thread inherits both filters, and still runs: the
    /// spawn falls back from `clone3` to `clone`, a shell pipes and forks, `sort` starts
    /// threads.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "a test spawning programs under the filters"
    )]
    fn common_programs_run_under_the_filters() {
        let outputs = filtered(Sockets::Closed, || {
            let status = Command::new("/bin/true")
                .status()
                .map(|status| status.code());
            let shell = Command::new("/bin/sh")
                .args([
                    "-c",
                    "echo hi | tr h H; ls / >/dev/null && date >/dev/null && \
                     seq 1 20000 | sort -R --parallel=2 -S 1M | sort -n | tail -n 1",
                ])
                .output()
                .map(|output| {
                    (
                        String::from_utf8_lossy(&output.stdout).into_owned(),
                        String::from_utf8_lossy(&output.stderr).into_owned(),
                    )
                });
            (status, shell.map_err(|error| error.to_string()))
        });
        assert_eq!(outputs.0.ok(), Some(Some(0)));
        assert_eq!(outputs.1, Ok(("Hi\n20000\n".to_owned(), String::new())));
    }

    /// Python, started from a filtered thread, makes raw system calls through `ctypes`: the
    /// numbers come from libc's constants for this architecture.
    fn python_probe() -> String {
        let mut script = String::from(
            r#"import ctypes, os, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *args)
    print(name, result, ctypes.get_errno() if result == -1 else 0)
L = ctypes.c_long
fd = os.open(sys.executable, os.O_RDONLY)
directory = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
pair = (ctypes.c_int * 2)()
"#,
        );
        let mut call = |name: &str, number: i64, args: &str| {
            script.push_str(&format!("call({name:?}, {number}{args})\n"));
        };
        call("unshare", libc::SYS_unshare, ", L(0x10000000)");
        // CLONE_NEWNS | CLONE_FS: EINVAL, were it ever let through.
        call(
            "clone_newns",
            libc::SYS_clone,
            ", L(0x20200), None, None, None, None",
        );
        call("clone3", libc::SYS_clone3, ", None, L(0)");
        call("io_uring_setup", libc::SYS_io_uring_setup, ", L(1), None");
        call("userfaultfd", libc::SYS_userfaultfd, ", L(0)");
        call("fsopen", libc::SYS_fsopen, ", b'tmpfs', L(0)");
        call("mount", libc::SYS_mount, ", None, None, None, L(0), None");
        // PTRACE_PEEKUSER of pid 1.
        call("ptrace", libc::SYS_ptrace, ", L(3), L(1), None, None");
        // KEYCTL_GET_KEYRING_ID of the session keyring.
        call("keyctl", libc::SYS_keyctl, ", L(0), L(-3), L(0)");
        // Size 0: EINVAL, were it ever let through.
        call("shmget", libc::SYS_shmget, ", L(0), L(0), L(0o600)");
        call("memfd_create", libc::SYS_memfd_create, ", b'x', L(0)");
        call("inotify_init1", libc::SYS_inotify_init1, ", L(0)");
        call(
            "personality_query",
            libc::SYS_personality,
            ", L(0xffffffff)",
        );
        call(
            "personality_no_aslr",
            libc::SYS_personality,
            ", L(0x0040000)",
        );
        call("setuid", libc::SYS_setuid, ", L(os.getuid())");
        call("setgid", libc::SYS_setgid, ", L(os.getgid())");
        call("setgroups", libc::SYS_setgroups, ", L(0), None");
        call("socket_unix", libc::SYS_socket, ", L(1), L(1), L(0)");
        call("socket_inet", libc::SYS_socket, ", L(2), L(1), L(0)");
        call(
            "socketpair_dgram",
            libc::SYS_socketpair,
            ", L(1), L(2), L(0), pair",
        );
        call(
            "socketpair_stream",
            libc::SYS_socketpair,
            ", L(1), L(1), L(0), pair",
        );
        call("pidfd_open_1", libc::SYS_pidfd_open, ", L(1), L(0)");
        // F_SETLEASE F_RDLCK, F_NOTIFY DN_ACCESS, F_GETFD.
        call("fcntl_setlease", libc::SYS_fcntl, ", L(fd), L(1024), L(0)");
        call(
            "fcntl_notify",
            libc::SYS_fcntl,
            ", L(directory), L(1026), L(1)",
        );
        call("fcntl_getfd", libc::SYS_fcntl, ", L(fd), L(1)");
        call("getpid", libc::SYS_getpid, "");
        if cfg!(target_arch = "x86_64") {
            // getpid by its x32 number.
            call("getpid_x32", 39 | 0x4000_0000, "");
        }
        script.push_str(
            r#"done = []
thread = threading.Thread(target=lambda: done.append(1))
thread.start()
thread.join()
print("thread", len(done), 0)
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), 0)
print("subprocess", subprocess.run(["/bin/true"]).returncode, 0)
"#,
        );
        script
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "a test spawning programs under the filters"
    )]
    fn raw_system_calls_from_python_get_the_policys_answers() {
        assert!(
            std::path::Path::new("/usr/bin/python3").is_file(),
            "/usr/bin/python3 is missing: install the `python3` package to run this test"
        );
        let script = python_probe();
        let output = filtered(Sockets::Closed, move || {
            Command::new("/usr/bin/python3")
                .args(["-c", &script])
                .output()
        })
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        let results: BTreeMap<&str, (i64, i64)> = stdout
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let name = words.next()?;
                let result = words.next()?.parse().ok()?;
                let errno = words.next()?.parse().ok()?;
                Some((name, (result, errno)))
            })
            .collect();
        let enosys = (-1, i64::from(libc::ENOSYS));
        let eperm = (-1, i64::from(libc::EPERM));
        let mut expected = vec![
            ("unshare", enosys),
            ("clone_newns", enosys),
            ("clone3", enosys),
            ("io_uring_setup", enosys),
            ("userfaultfd", enosys),
            ("fsopen", enosys),
            ("mount", enosys),
            ("ptrace", enosys),
            ("keyctl", enosys),
            ("shmget", enosys),
            ("memfd_create", enosys),
            ("inotify_init1", enosys),
            ("personality_no_aslr", enosys),
            ("setuid", eperm),
            ("setgid", (0, 0)),
            ("setgroups", eperm),
            ("socket_unix", eperm),
            ("socket_inet", eperm),
            ("socketpair_dgram", eperm),
            ("pidfd_open_1", eperm),
            ("fcntl_setlease", eperm),
            ("fcntl_notify", eperm),
            ("thread", (1, 0)),
            ("fork", (7, 0)),
            ("subprocess", (0, 0)),
        ];
        if cfg!(target_arch = "x86_64") {
            expected.push(("getpid_x32", enosys));
        }
        for (name, want) in &expected {
            assert_eq!(results.get(name), Some(want), "{name}:\n{stdout}\n{stderr}");
        }
        for name in [
            "personality_query",
            "socketpair_stream",
            "fcntl_getfd",
            "getpid",
        ] {
            let got = results.get(name);
            assert!(
                got.is_some_and(|(result, errno)| *result >= 0 && *errno == 0),
                "{name}: {got:?}\n{stdout}\n{stderr}"
            );
        }
        assert_eq!(results.len(), expected.len() + 4, "{stdout}\n{stderr}");
    }

    /// The wall under a TCP socket Landlock would miss: in a network namespace of its own with
    /// nothing up (a launcher's without `network`), a connect, a fast-open `sendto`, and a
    /// listener's own port reach nothing, IPv4 and IPv6. `unshare` (util-linux) makes the
    /// namespace, as root or in a user namespace; no Landlock is applied.
    #[test]
    #[expect(clippy::disallowed_methods, reason = "a test spawning a probe")]
    fn an_empty_network_namespace_reaches_nothing_without_landlock() {
        assert!(
            std::path::Path::new("/usr/bin/python3").is_file(),
            "/usr/bin/python3 is missing: install the `python3` package to run this test"
        );
        let script = r#"import errno, socket
def attempt(name, f):
    try:
        f()
        print(name, "reached")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
attempt("connect", lambda: socket.socket().connect(("10.0.0.5", 5432)))
attempt("loopback", lambda: socket.socket().connect(("127.0.0.1", 5432)))
attempt("fastopen", lambda: socket.socket().sendto(b"x", socket.MSG_FASTOPEN, ("10.0.0.5", 5432)))
def own(family, address):
    listener = socket.socket(family)
    listener.listen(1)
    socket.socket(family).connect((address, listener.getsockname()[1]))
attempt("own listener", lambda: own(socket.AF_INET, "127.0.0.1"))
attempt("own listener any", lambda: own(socket.AF_INET, "0.0.0.0"))
attempt("own listener v6", lambda: own(socket.AF_INET6, "::1"))
attempt("connect v6", lambda: socket.socket(socket.AF_INET6).connect(("2001:db8::5", 5432)))
"#;
        let output = Command::new("unshare")
            .args(["--map-root-user", "--net", "/usr/bin/python3", "-c", script])
            .output()
            .expect("util-linux's unshare runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        let unreachable = [
            "connect ENETUNREACH",
            "loopback ENETUNREACH",
            "fastopen ENETUNREACH",
            "own listener ENETUNREACH",
            "own listener any ENETUNREACH",
            "own listener v6 EADDRNOTAVAIL",
            "connect v6 EADDRNOTAVAIL",
        ];
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            unreachable,
            "{stdout}\n{stderr}"
        );
    }
}
