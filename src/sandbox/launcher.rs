//! The launcher: airlock re-executed between itself and a command, to confine the process
//! that becomes the command and then become it.
//!
//! Safe Rust cannot run code between `fork` and `exec`, so the code that must run there runs
//! in a fresh airlock process instead: `airlock __airlock-sandbox …` applies the policy to
//! itself and starts the program, which inherits every restriction. Its argv:
//!
//! ```text
//! <exe> __airlock-sandbox <stage> <parent pid> <call uid or -> <required|best-effort> <policy JSON>
//! ```
//!
//! and, once confined, it reads the command line from its stdin (see `read_command_line`);
//! what follows there is the command's own input. A launcher can so be started before its
//! call, with the tool's policy applied, and wait ([`super::warm`]).
//!
//! - stage `init` runs as the first process (pid 1) of the call's PID namespace: it applies the
//!   policy to itself, starts the program (which inherits all of it) and reaps children until
//!   the program ends, then exits as it did. When the init stage ends, for any reason (the
//!   program's end, airlock killing it, airlock's own death through the parent-death signal),
//!   the kernel kills every process left in the namespace.
//!
//!   It stays rather than `exec`ing the program, because a root launcher's command runs with a
//!   real uid other than its effective uid (see [`super::call_uid`]): the kernel treats that
//!   `exec` as privileged and clears the parent-death signal, which would let the namespace
//!   outlive airlock. Staying also spares the program the special signal rules of a pid 1.
//! - stage `user` (airlock without `CAP_SYS_ADMIN`) first creates a user namespace, where it
//!   may create the PID namespace, and starts the `init` stage inside it; it waits and passes
//!   the exit on. Killing it kills the namespace too (the init stage's parent-death signal).
//!
//! Every failure prints one fixed line on stderr (the call's stderr, which the model sees in
//! the tail of a failed call) and exits with [`LAUNCH_FAILED`]; nothing of the program runs.

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::ExitCode;

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, RulesetStatus, Scope,
};
use rustix::process::{Resource, Rlimit, Signal};

use super::{Policy, SYSTEM_WRITE_FILES};

/// argv\[1\] of a launcher process.
pub const LAUNCH_ARG: &str = "__airlock-sandbox";

/// Exit status of a launcher that could not confine the command; the program never ran.
pub const LAUNCH_FAILED: u8 = 125;

/// How the launcher's one line on stderr starts when it fails. A command may exit with
/// [`LAUNCH_FAILED`] too: only that status with stderr starting so is the launcher's.
pub const FAILURE_PREFIX: &str = "airlock sandbox: ";

/// Runs the launcher if this process is one (argv\[1\] is [`LAUNCH_ARG`]); `None` otherwise.
///
/// Call it first thing in `main`, before any thread is started: the `user` stage needs a
/// single-threaded process. A program that embeds airlock as a library and runs sandboxed
/// command tools must call it too (see the crate docs); the `airlock` binary does.
pub fn run_if_launched() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let _exe = args.next();
    if args.next().as_deref() != Some(OsStr::new(LAUNCH_ARG)) {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    Some(match Launch::parse(&rest) {
        Some(launch) => launch.run(),
        None => fail("reading the launch arguments", "malformed"),
    })
}

/// One parsed launcher command line.
struct Launch<'a> {
    stage: Stage,
    parent: u32,
    /// The real uid a root launcher takes for the call (see [`super::call_uid`]).
    call_uid: Option<u32>,
    best_effort: bool,
    policy: Policy,
    /// The launcher arguments from the mode on, for the `init` stage the `user` stage starts.
    forwarded: &'a [OsString],
}

#[derive(Clone, Copy, Eq, PartialEq)]
enum Stage {
    User,
    Init,
}

impl<'a> Launch<'a> {
    fn parse(args: &'a [OsString]) -> Option<Self> {
        let [stage, parent, call_uid, mode, policy] = args else {
            return None;
        };
        let stage = match stage.to_str()? {
            "user" => Stage::User,
            "init" => Stage::Init,
            _ => return None,
        };
        let call_uid = match call_uid.to_str()? {
            "-" => None,
            uid => Some(uid.parse().ok()?),
        };
        let best_effort = match mode.to_str()? {
            "required" => false,
            "best-effort" => true,
            _ => return None,
        };
        let policy: Policy = serde_json::from_str(policy.to_str()?).ok()?;
        let forwarded = args.get(3..)?;
        Some(Self {
            stage,
            parent: parent.to_str()?.parse().ok()?,
            call_uid,
            best_effort,
            policy,
            forwarded,
        })
    }

    fn run(self) -> ExitCode {
        // Die with whoever started us, and make sure that one is still there: if it died
        // before the line above ran, nobody would ever kill this call.
        if let Err(error) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
            return fail("setting the parent-death signal", error);
        }
        if parent_pid() != Some(self.parent) {
            return fail("checking the parent", "airlock is gone");
        }
        match self.stage {
            Stage::User => self.run_user_stage(),
            Stage::Init => self.run_init_stage(),
        }
    }

    /// Creates a user namespace (mapping only our own ids) and a PID namespace, starts the
    /// `init` stage inside them, waits for it and exits the same way.
    fn run_user_stage(self) -> ExitCode {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        let flags = nix::sched::CloneFlags::CLONE_NEWUSER
            | nix::sched::CloneFlags::CLONE_NEWPID
            | nix::sched::CloneFlags::CLONE_NEWIPC;
        if let Err(error) = nix::sched::unshare(flags) {
            return fail("creating the user and PID namespaces", error);
        }
        let maps = [
            ("/proc/self/setgroups", "deny".to_owned()),
            ("/proc/self/uid_map", format!("{uid} {uid} 1")),
            ("/proc/self/gid_map", format!("{gid} {gid} 1")),
        ];
        for (file, text) in maps {
            if let Err(error) = std::fs::write(file, text) {
                return fail("mapping ids in the user namespace", error.kind());
            }
        }
        #[expect(
            clippy::disallowed_methods,
            reason = "the launcher starting its own init stage: the same binary, argv only"
        )]
        let mut init = std::process::Command::new(SELF_EXE);
        init.arg(LAUNCH_ARG)
            .arg("init")
            .arg(std::process::id().to_string())
            .arg("-")
            .args(self.forwarded);
        let status = match init.status() {
            Ok(status) => status,
            Err(error) => return fail("starting the init stage", error.kind()),
        };
        if let Some(code) = status.code() {
            return ExitCode::from(u8::try_from(code).unwrap_or(LAUNCH_FAILED));
        }
        // Die of the same signal, so airlock reports it (a CPU limit is SIGXCPU, a file size
        // limit SIGXFSZ). A signal that would not kill us falls through to 128 + signal.
        let signal = status.signal().unwrap_or(0);
        if let Some(signal) = Signal::from_named_raw(signal) {
            let _sent = rustix::process::kill_process(rustix::process::getpid(), signal);
        }
        ExitCode::from(u8::try_from(signal.saturating_add(128)).unwrap_or(LAUNCH_FAILED))
    }

    /// Applies the policy to this process, which is pid 1 of the call's PID namespace, reads
    /// the command line, starts the program (which inherits every restriction) and reaps until
    /// it ends.
    fn run_init_stage(self) -> ExitCode {
        let strict = !self.best_effort;
        close_inherited_descriptors();
        // A System V IPC namespace of the call's own, so the host's segments, queues and
        // semaphores (root's included) are out of reach, and whatever the call makes goes
        // with it. The `user` stage made it already; a root launcher makes it here, while it
        // still has CAP_SYS_ADMIN.
        if self.call_uid.is_some()
            && let Err(error) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWIPC)
        {
            return fail("creating the IPC namespace", error);
        }
        if let Err(error) = set_resource_limits(&self.policy)
            && strict
        {
            return fail("setting resource limits", error);
        }
        if let Err(error) = drop_capabilities(self.call_uid) {
            return fail("dropping capabilities", error);
        }
        // The credential changes above may have cleared the parent-death signal: set it again,
        // and check again that airlock is still there.
        if let Err(error) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
            return fail("setting the parent-death signal", error);
        }
        if parent_pid() != Some(self.parent) {
            return fail("checking the parent", "airlock is gone");
        }
        // No process of the call may trace or read the launcher (its pid 1), whatever its
        // credentials: that needs CAP_SYS_PTRACE once we are not dumpable.
        if let Err(error) =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        {
            return fail("making the launcher non-dumpable", error);
        }
        if let Err(error) = rustix::thread::set_no_new_privs(true) {
            return fail("setting no_new_privs", error);
        }
        if let Err(error) = filter_syscalls(&self.policy)
            && strict
        {
            return fail("installing the seccomp filter", error);
        }
        if let Err(step) = restrict_files_and_network(&self.policy, self.best_effort) {
            return fail("applying the Landlock rules", step);
        }
        // Past this line only the program's own rights remain. A warm launcher waits here.
        let Some((program, args)) = read_command_line() else {
            return fail("reading the command line", "malformed or cut short");
        };
        #[expect(
            clippy::disallowed_methods,
            reason = "the launcher starting the command: argv only, program resolved at load"
        )]
        let spawned = std::process::Command::new(program).args(args).spawn();
        let command = match spawned {
            Ok(child) => child.id(),
            Err(error) => return fail("executing the program", error.kind()),
        };
        wait_as_init(command)
    }
}

/// Reads the command line airlock writes first on our stdin (`spawn::header`): a count,
/// then each element as a length and its bytes, the program first. Reads exactly that much,
/// unbuffered, so the command gets the rest of stdin whole.
fn read_command_line() -> Option<(OsString, Vec<OsString>)> {
    let stdin = std::io::stdin();
    let mut read_exact = |len: usize| -> Option<Vec<u8>> {
        let mut buffer = vec![0_u8; len];
        let mut filled = 0;
        while filled < len {
            let rest = buffer.get_mut(filled..)?;
            match rustix::io::read(&stdin, rest) {
                Ok(0) => return None,
                Ok(count) => filled = filled.checked_add(count)?,
                Err(errno) if errno == rustix::io::Errno::INTR => {}
                Err(_) => return None,
            }
        }
        Some(buffer)
    };
    let number = |read: &mut dyn FnMut(usize) -> Option<Vec<u8>>| -> Option<usize> {
        let bytes: [u8; 4] = read(4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(bytes)).ok()
    };
    let count = number(&mut read_exact)?;
    if count == 0 || count > MAX_COMMAND_LINE_ELEMENTS {
        return None;
    }
    let mut total = 0_usize;
    let mut elements = Vec::with_capacity(count);
    for _ in 0..count {
        let len = number(&mut read_exact)?;
        total = total.checked_add(len)?;
        if total > MAX_COMMAND_LINE_BYTES {
            return None;
        }
        elements.push(OsString::from_vec(read_exact(len)?));
    }
    let mut elements = elements.into_iter();
    let program = elements.next()?;
    Some((program, elements.collect()))
}

/// Most elements of a command line read from stdin (the program included).
const MAX_COMMAND_LINE_ELEMENTS: usize = 64 * 1024;

/// Most bytes of a command line read from stdin.
const MAX_COMMAND_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Reaps every child, as the namespace's init must (orphans come to it), until `command`
/// ends; then exits as it did. Exiting ends the namespace: the kernel kills what is left.
///
/// A namespace's init cannot die of a signal it sends itself, so a command killed by signal
/// `S` makes the launcher exit with `128 + S`, as shells report it.
fn wait_as_init(command: u32) -> ExitCode {
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get().unsigned_abs() == command => {
                let code = status
                    .exit_status()
                    .or_else(|| {
                        status
                            .terminating_signal()
                            .map(|signal| signal.saturating_add(128))
                    })
                    .unwrap_or(i32::from(LAUNCH_FAILED));
                return ExitCode::from(u8::try_from(code).unwrap_or(LAUNCH_FAILED));
            }
            Ok(_) => {}
            Err(errno) if errno == rustix::io::Errno::INTR => {}
            Err(errno) => return fail("waiting for the command", errno),
        }
    }
}

/// The path that names this process's own executable; after `fork`, the child's.
pub const SELF_EXE: &str = "/proc/self/exe";

/// Our parent's pid as the host sees it (`getppid` says 0 inside a new PID namespace).
fn parent_pid() -> Option<u32> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_name, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Closes every descriptor but the three standard streams: one that airlock inherited
/// without close-on-exec must not reach the command.
fn close_inherited_descriptors() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let numbers: Vec<i32> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    // The directory's own descriptor is among them and closed already; EBADF is expected.
    for fd in numbers {
        let _closed = nix::unistd::close(fd);
    }
}

fn set_resource_limits(policy: &Policy) -> Result<(), rustix::io::Errno> {
    let resources = &policy.resources;
    let mib = |n: u64| n.saturating_mul(1024 * 1024);
    let limits = [
        (Resource::Core, 0, 0),
        (
            Resource::As,
            mib(resources.memory_mib),
            mib(resources.memory_mib),
        ),
        // The soft limit sends SIGXCPU (reported by name), the hard one SIGKILL a second later.
        (
            Resource::Cpu,
            resources.cpu_seconds,
            resources.cpu_seconds.saturating_add(1),
        ),
        (
            Resource::Fsize,
            mib(resources.file_size_mib),
            mib(resources.file_size_mib),
        ),
        (Resource::Nofile, resources.open_files, resources.open_files),
        (
            Resource::Nproc,
            u64::from(resources.processes),
            u64::from(resources.processes),
        ),
    ];
    for (resource, current, maximum) in limits {
        rustix::process::setrlimit(
            resource,
            Rlimit {
                current: Some(current),
                maximum: Some(maximum),
            },
        )?;
    }
    Ok(())
}

/// Root without capabilities: it keeps effective uid 0 for file ownership, but loses every
/// override (reading any file, raising its limits, tracing, mounting), for itself and whatever
/// it runs; its real uid becomes `call_uid`, which `RLIMIT_NPROC` binds (the seccomp filter
/// keeps it there).
fn drop_capabilities(call_uid: Option<u32>) -> Result<(), rustix::io::Errno> {
    use rustix::thread::{CapabilitiesSecureBits as Bits, CapabilitySet, CapabilitySets};
    let held = rustix::thread::capabilities(None)?;
    if held.permitted.is_empty() && held.effective.is_empty() && held.inheritable.is_empty() {
        return Ok(());
    }
    // Without these bits, exec as uid 0 would grant the full set again.
    rustix::thread::set_capabilities_secure_bits(
        Bits::NO_ROOT
            | Bits::NO_ROOT_LOCKED
            | Bits::NO_SETUID_FIXUP
            | Bits::NO_SETUID_FIXUP_LOCKED
            | Bits::KEEP_CAPS_LOCKED
            | Bits::NO_CAP_AMBIENT_RAISE
            | Bits::NO_CAP_AMBIENT_RAISE_LOCKED,
    )?;
    if let Some(uid) = call_uid {
        let uid = rustix::process::Uid::from_raw(uid);
        let root = rustix::process::Uid::ROOT;
        rustix::thread::set_thread_res_uid(uid, root, root)?;
    }
    for capability in CapabilitySet::all().iter() {
        match rustix::thread::remove_capability_from_bounding_set(capability) {
            Ok(()) => {}
            // A capability this kernel does not know.
            Err(errno) if errno == rustix::io::Errno::INVAL => {}
            Err(errno) => return Err(errno),
        }
    }
    rustix::thread::clear_ambient_capability_set()?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
}

/// seccomp, the second half of the network rule and what Landlock cannot see:
///
/// - `socket`: every family without the network; with it, every family but `AF_UNIX`. A unix
///   socket by path is not a file to Landlock's rights of ABI 6: refusing the socket itself
///   keeps `docker.sock`, the system bus and agents out of reach, even as effective uid 0.
///   `socketpair` stays, for programs that talk to their own children.
/// - `io_uring_*`: its requests do not pass through this filter.
/// - `set*uid`: a root launcher's call uid must stay the real uid, or `RLIMIT_NPROC` would not
///   bind.
/// - `keyctl`, `add_key`, `request_key`: the session keyring is airlock's, shared by every
///   call; no command reads it or leaves keys in it.
/// - `memfd_create`, `memfd_secret`: memory outside the address-space limit, and code run from
///   bytes no `exec` rule names.
/// - `shmget`, `msgget`, `semget`, `mq_open`: kernel memory outside the address-space limit
///   (the call's IPC namespace hides the host's objects, this stops new ones).
///
/// Each rule is also written for the x32 numbering (the same numbers with bit 30 set), which
/// the architecture check does not tell apart.
fn filter_syscalls(policy: &Policy) -> Result<(), String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let text = |error: seccompiler::BackendError| error.to_string();
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        std::collections::BTreeMap::new();
    let always = [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_setuid,
        libc::SYS_setreuid,
        libc::SYS_setresuid,
        libc::SYS_setfsuid,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_memfd_create,
        libc::SYS_memfd_secret,
        libc::SYS_shmget,
        libc::SYS_msgget,
        libc::SYS_semget,
        libc::SYS_mq_open,
    ];
    for syscall in always {
        rules.insert(syscall, Vec::new());
    }
    let socket_rule = if policy.network {
        let unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::try_from(libc::AF_UNIX).unwrap_or(1),
        )
        .map_err(text)?;
        vec![SeccompRule::new(vec![unix]).map_err(text)?]
    } else {
        Vec::new()
    };
    rules.insert(libc::SYS_socket, socket_rule);
    if cfg!(target_arch = "x86_64") {
        let x32: Vec<(i64, Vec<SeccompRule>)> = rules
            .iter()
            .map(|(number, rule)| (number | X32_SYSCALL_BIT, rule.clone()))
            .collect();
        rules.extend(x32);
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|error: seccompiler::BackendError| error.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EACCES).unwrap_or(13)),
        arch,
    )
    .map_err(text)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(text)?;
    seccompiler::apply_filter(&program).map_err(|error| error.to_string())
}

/// The bit that marks an x32 system call on x86_64.
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Landlock: files by the policy's lists, TCP bind and connect unless the policy has the
/// network, abstract unix sockets and signals scoped to the call.
fn restrict_files_and_network(policy: &Policy, best_effort: bool) -> Result<(), String> {
    let abi = super::LANDLOCK_ABI;
    let level = if best_effort {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    // Fixed text: a rule's error could name a path, and this line reaches the model.
    let text = |_: landlock::RulesetError| "a rule was refused".to_owned();
    let all = AccessFs::from_all(abi);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let exec = read | AccessFs::Execute;
    // Regular files, directories and symbolic links; no FIFOs, sockets or devices, which could
    // make a later reader of the directory hang or reach something else.
    let write = (all
        & !(AccessFs::Execute
            | AccessFs::MakeFifo
            | AccessFs::MakeSock
            | AccessFs::MakeChar
            | AccessFs::MakeBlock))
        | read;
    let device_access = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(all)
        .map_err(text)?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(text)?;
    }
    let mut created = ruleset
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(text)?
        .create()
        .map_err(text)?;
    let grants = [
        (policy.read.as_slice(), read),
        (policy.exec.as_slice(), exec),
        (policy.write.as_slice(), write),
    ];
    for (paths, access) in grants {
        for path in paths {
            let rule = granted(path, policy.identities.get(path).copied(), access, abi)?;
            created = created.add_rule(rule).map_err(text)?;
        }
    }
    for device in SYSTEM_WRITE_FILES {
        // Character devices, not replaceable by a call: opened like the rest, no identity.
        if let Ok(fd) = open_without_links(Path::new(device)) {
            created = created
                .add_rule(landlock::PathBeneath::new(fd, device_access))
                .map_err(text)?;
        }
    }
    let status = created.restrict_self().map_err(text)?;
    if !best_effort && status.ruleset != RulesetStatus::FullyEnforced {
        return Err("not fully enforced by this kernel".to_owned());
    }
    Ok(())
}

/// The rule for one granted path: opened without following any symbolic link, and refused
/// unless it is the very file (device and inode) the manifest's check saw.
fn granted(
    path: &Path,
    identity: Option<(u64, u64)>,
    access: landlock::BitFlags<AccessFs>,
    abi: landlock::ABI,
) -> Result<landlock::PathBeneath<std::os::fd::OwnedFd>, String> {
    let changed = || "a granted path changed since the manifest loaded".to_owned();
    let fd = open_without_links(path).map_err(|_| changed())?;
    let stat = rustix::fs::fstat(&fd).map_err(|_| changed())?;
    let found: (u64, u64) = (stat.st_dev, stat.st_ino);
    if identity != Some(found) {
        return Err(changed());
    }
    let is_dir =
        rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory;
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    Ok(landlock::PathBeneath::new(fd, access))
}

/// `O_PATH` descriptor of `path`, refusing a symbolic link at any component.
fn open_without_links(path: &Path) -> rustix::io::Result<std::os::fd::OwnedFd> {
    rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS,
    )
}

/// Reports a failed step on stderr and returns [`LAUNCH_FAILED`].
fn fail(step: &str, error: impl std::fmt::Debug) -> ExitCode {
    let line = format!("{FAILURE_PREFIX}{step} failed ({error:?}); the command did not run\n");
    let _written = std::io::stderr().lock().write_all(line.as_bytes());
    ExitCode::from(LAUNCH_FAILED)
}
