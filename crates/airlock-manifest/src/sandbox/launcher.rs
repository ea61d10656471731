//! The launcher: airlock re-executed between itself and a tool's commands, to confine the
//! processes that run them.
//!
//! Safe Rust cannot run code between `fork` and `exec`, so the code that must run there runs
//! in a fresh airlock process instead: `airlock __airlock-sandbox …` applies the policy to
//! itself, and every program it starts inherits every restriction. Its argv:
//!
//! ```text
//! <exe> __airlock-sandbox <stage> <parent pid> <call uid or -> <required|best-effort> <cgroup.procs files, JSON> <policy JSON>
//! ```
//!
//! Its stdin is its control channel (`super::channel`); stdout and stderr are `/dev/null`.
//! Once confined, it serves calls of its tool one at a time, for as long as airlock keeps it
//! (`super::resident`): each call brings the call's three pipes, the command line comes
//! first on the call's stdin (see `read_command_line`), and the launcher answers with how the
//! program ended.
//!
//! - stage `init` runs as the first process (pid 1) of its own PID namespace: it applies the
//!   policy to itself, then for each call starts the program (which inherits all of it), reaps
//!   children until the program ends, kills every other process left in the namespace
//!   (`kill(-1)`, which a fork cannot outrun) and reaps them too, and only then reports. So no
//!   process of one call is alive when the next call starts, and none outlives its call. When
//!   the init stage ends, for any reason (airlock closing the channel or killing it, airlock's
//!   own death through the parent-death signal), the kernel kills every process left in the
//!   namespace.
//!
//!   It stays rather than `exec`ing the program, because a root launcher's commands run with a
//!   real uid other than their effective uid (see [`super::call_uid`]): the kernel treats that
//!   `exec` as privileged and clears the parent-death signal, which would let the namespace
//!   outlive airlock. Staying also spares the program the special signal rules of a pid 1.
//! - stage `user` (airlock without `CAP_SYS_ADMIN`) first creates a user namespace, where it
//!   may create the PID namespace, and starts the `init` stage inside it, handing it the
//!   channel; it waits and passes the exit on. Killing it kills the namespace too (the init
//!   stage's parent-death signal).
//!
//! Every failure writes one fixed line on the stderr of the call it happens in (or the next
//! call, for a failure while confining; the model sees it in the tail of the failed call),
//! reports `Status::Failed` and ends the launcher; nothing of the program runs.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd as _, BorrowedFd};
use std::os::unix::ffi::OsStringExt as _;
use std::path::Path;
use std::process::{ExitCode, Stdio};

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, RulesetStatus, Scope,
};
use rustix::process::{Resource, Rlimit, Signal};

use super::channel::{self, Call, Status};
use super::{Policy, SYSTEM_WRITE_FILES};

/// argv\[1\] of a launcher process.
pub const LAUNCH_ARG: &str = "__airlock-sandbox";

/// Exit status of a launcher that failed; the program never ran.
const LAUNCH_FAILED: u8 = 125;

/// How the launcher's one line on a call's stderr starts when it fails.
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

/// The control channel: the launcher's stdin.
fn control() -> BorrowedFd<'static> {
    rustix::stdio::stdin()
}

/// One parsed launcher command line.
struct Launch<'a> {
    stage: Stage,
    parent: u32,
    /// The real uid a root launcher takes for the call (see [`super::call_uid`]).
    call_uid: Option<u32>,
    best_effort: bool,
    /// The `cgroup.procs` files of the launcher's own cgroups (`super::cgroups`), which it
    /// writes itself into before it starts anything.
    cgroups: Vec<std::path::PathBuf>,
    policy: Policy,
    /// The mode and the policy, for the `init` stage the `user` stage starts (already in the
    /// cgroups).
    mode: &'a OsString,
    encoded_policy: &'a OsString,
}

#[derive(Clone, Copy, Eq, PartialEq)]
enum Stage {
    User,
    Init,
}

impl<'a> Launch<'a> {
    fn parse(args: &'a [OsString]) -> Option<Self> {
        let [stage, parent, call_uid, mode, cgroups, policy] = args else {
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
        let encoded_policy = policy;
        let policy: Policy = serde_json::from_str(policy.to_str()?).ok()?;
        let encoded_mode = mode;
        Some(Self {
            stage,
            parent: parent.to_str()?.parse().ok()?,
            call_uid,
            best_effort,
            cgroups: serde_json::from_str(cgroups.to_str()?).ok()?,
            policy,
            mode: encoded_mode,
            encoded_policy,
        })
    }

    fn run(self) -> ExitCode {
        // Die with whoever started us, and make sure that one is still there: if it died
        // before the line above ran, nobody would ever kill this call.
        if let Err(error) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
            return fail("setting the parent-death signal", error);
        }
        let status = std::fs::File::open("/proc/self/stat").ok();
        if status.as_ref().and_then(parent_pid) != Some(self.parent) {
            return fail("checking the parent", "airlock is gone");
        }
        drop(status);
        // Into the call's cgroups before anything else starts, so every process of every call
        // this launcher serves is counted there.
        if let Err(error) = super::cgroups::join(&self.cgroups)
            && !self.best_effort
        {
            return fail("joining the call's cgroups", error);
        }
        // The audit login uid of every launcher: the kernel gives this process a new audit
        // session, which its calls inherit and cannot leave, so the syscall audit's records of
        // what the view refuses are known to be this launcher's (`super::denials`). Setting it
        // needs CAP_AUDIT_CONTROL in the initial user namespace (or a login uid never set);
        // where it fails nothing changes, and those writes are not reported. The `init` stage
        // under a `user` stage inherits the session and fails here, as it should.
        let _tagged = std::fs::write(
            "/proc/self/loginuid",
            super::denials::AUDIT_LOGIN_UID.to_string(),
        );
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
            | call_namespaces(&self.policy);
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
        // The init stage builds the view (`super::mounts`) in the namespaces made here; it runs
        // as our own uid, for which `exec` would clear every capability, so CAP_SYS_ADMIN (the
        // mounts), CAP_NET_ADMIN (loopback, for a networked tool) and CAP_SETPCAP (to drop capabilities for good afterwards) go across as
        // ambient ones. The init stage drops them with all the others before any program of a
        // call runs.
        if let Err(error) = keep_capabilities_across_exec() {
            return fail("keeping capabilities for the init stage", error);
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
            .arg(self.mode)
            .arg("[]")
            .arg(self.encoded_policy);
        let mut init = match init.spawn() {
            Ok(init) => init,
            Err(error) => return fail("starting the init stage", error.kind()),
        };
        // The channel is the init stage's alone now: if it dies, airlock must see the channel
        // close, not wait on a copy held here.
        if let Err(error) = nix::unistd::close(0) {
            return fail("handing over the control channel", error);
        }
        match init.wait() {
            Ok(status) => {
                ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(LAUNCH_FAILED))
            }
            Err(error) => fail("waiting for the init stage", error.kind()),
        }
    }

    /// Applies the policy to this process, which is pid 1 of the call's PID namespace, reads
    /// the command line, starts the program (which inherits every restriction) and reaps until
    /// it ends.
    fn run_init_stage(self) -> ExitCode {
        let strict = !self.best_effort;
        close_inherited_descriptors();
        // Our own status, opened while `/proc` is still in view: the parent checks below read
        // it after the view has replaced the root.
        let status = match std::fs::File::open("/proc/self/stat") {
            Ok(file) => file,
            Err(error) => return fail("opening the launcher's status", error.kind()),
        };
        // The namespaces of the call (see `call_namespaces`). The `user` stage made them
        // already; a root launcher makes them here, while it still has CAP_SYS_ADMIN.
        if self.call_uid.is_some()
            && let Err(error) = nix::sched::unshare(call_namespaces(&self.policy))
        {
            return fail("creating the call's namespaces", error);
        }
        // A networked tool's loopback and the proxy's socket on it, handed to airlock
        // (`super::netns`), while this process may still configure its namespace.
        if self.policy.network {
            let listener = match super::netns::proxy_listener() {
                Ok(listener) => listener,
                Err(step) => return fail("setting up the network namespace", step),
            };
            if let Err(error) = channel::send_network(control(), listener.as_fd()) {
                return fail("handing over the proxy's socket", error.kind());
            }
            drop(listener);
        }
        let workdir = match std::env::current_dir() {
            Ok(dir) => dir,
            Err(error) => return fail("reading the workdir", error.kind()),
        };
        let view = match super::mounts::enter(&self.policy, &workdir) {
            Ok(view) => view,
            // Best effort without the privilege to make the view (nothing was changed):
            // Landlock alone. A view that failed half-way is never served from.
            Err(step) if !strict && step == super::mounts::NOT_STARTED => {
                super::mounts::View::default()
            }
            Err(step) => return fail("building the file system view", step),
        };
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
        if parent_pid(&status) != Some(self.parent) {
            return fail("checking the parent", "airlock is gone");
        }
        drop(status);
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
        // Landlock first: it opens each granted path with `openat2`, which the filter leaves
        // out (its mode lies where seccomp cannot read it).
        // The reasons as text: the line on the call's stderr shows them quoted.
        let handles_tcp = match restrict_files_and_network(&self.policy, self.best_effort) {
            Ok(handles_tcp) => handles_tcp,
            Err(step) => return fail("applying the Landlock rules", step.to_string()),
        };
        if let Err(error) = filter_syscalls(&self.policy, handles_tcp)
            && strict
        {
            return fail("installing the seccomp filter", error.to_string());
        }
        // Past this line only the programs' own rights remain. A resident launcher waits here
        // for its calls.
        serve_calls(&self.policy, &view)
    }
}

/// The namespaces a launcher makes for its calls besides the PID namespace: System V IPC (the
/// host's segments, queues and semaphores out of reach, the call's own gone with it), mounts
/// (the view, `super::mounts`), and a network namespace: with nothing up in it, or, for a
/// tool with `network`, only loopback and the proxy's socket on it (`super::netns`). Abstract
/// unix socket names are per network namespace, so none is shared with the host either way.
fn call_namespaces(_policy: &Policy) -> nix::sched::CloneFlags {
    nix::sched::CloneFlags::CLONE_NEWIPC
        | nix::sched::CloneFlags::CLONE_NEWNS
        | nix::sched::CloneFlags::CLONE_NEWNET
}

/// Serves calls until airlock closes the channel, or until this launcher has used half its own
/// CPU limit: `RLIMIT_CPU` counts the launcher's time over all its calls (reaping what a call
/// leaves behind costs some), and a launcher killed by it mid-call would fail a call that did
/// nothing wrong.
fn serve_calls(policy: &Policy, view: &super::mounts::View) -> ExitCode {
    let budget = std::time::Duration::from_millis(policy.resources.cpu_seconds.saturating_mul(500));
    loop {
        let call = match channel::receive_call(control()) {
            Ok(Some(call)) => call,
            Ok(None) => return ExitCode::SUCCESS,
            // airlock's own messages have one shape; anything else ends the launcher.
            Err(_) => return ExitCode::from(LAUNCH_FAILED),
        };
        // The later-code names there before the call: any other one after it is the call's.
        let before: Vec<super::later_code::Found> = policy
            .write
            .iter()
            .map(|dir| super::later_code::present(dir))
            .collect();
        let started = std::time::SystemTime::now();
        let status = run_call(call);
        // No process of the call is left: what it created that makes other programs run
        // code later goes before the call is reported.
        let removed = policy
            .write
            .iter()
            .zip(&before)
            .fold(0_u32, |removed, (dir, before)| {
                removed.saturating_add(super::later_code::sweep(
                    dir,
                    before,
                    started,
                    &view.protected,
                    policy.resources.disk_files,
                ))
            });
        let used = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        let spent = std::time::Duration::new(
            u64::try_from(used.tv_sec).unwrap_or(u64::MAX),
            u32::try_from(used.tv_nsec).unwrap_or(0),
        );
        let last = status == Status::Failed || spent >= budget;
        if channel::send_status(control(), status, removed, last).is_err() || last {
            return ExitCode::from(LAUNCH_FAILED);
        }
    }
}

/// Runs one call: starts its program on the call's pipes and waits for it, then leaves the
/// namespace empty but for this process.
fn run_call(call: Call) -> Status {
    let Call {
        command_line_bytes,
        stdin,
        stdout,
        stderr,
    } = call;
    let Some((program, args)) = read_command_line(stdin.as_fd(), command_line_bytes) else {
        return report(
            stderr.as_fd(),
            "reading the command line",
            "malformed or cut short",
        );
    };
    // A copy to report a failed start on; closed at once after a good one, so the pipe ends
    // when the program's processes are gone.
    let failure = match rustix::io::fcntl_dupfd_cloexec(&stderr, 3) {
        Ok(failure) => failure,
        Err(error) => return report(stderr.as_fd(), "preparing the call", error),
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "the launcher starting the command: argv only, program resolved at load"
    )]
    let spawned = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .spawn();
    let command = match spawned {
        Ok(child) => child.id(),
        Err(error) => return report(failure.as_fd(), "executing the program", error.kind()),
    };
    drop(failure);
    let status = wait_as_init(command);
    empty_the_namespace();
    status
}

/// Reads the command line airlock writes first on the call's stdin (`spawn::header`), whose
/// length the call message gave: a count, then each element as a length and its bytes, the
/// program first. Reads exactly that much, so the command gets the rest of stdin whole.
fn read_command_line(stdin: BorrowedFd<'_>, len: usize) -> Option<(OsString, Vec<OsString>)> {
    if len > MAX_COMMAND_LINE_BYTES {
        return None;
    }
    let mut buffer = vec![0_u8; len];
    let mut filled = 0;
    while filled < len {
        let rest = buffer.get_mut(filled..)?;
        match rustix::io::read(stdin, rest) {
            Ok(0) => return None,
            Ok(count) => filled = filled.checked_add(count)?,
            Err(errno) if errno == rustix::io::Errno::INTR => {}
            Err(_) => return None,
        }
    }
    let mut input = buffer.as_slice();
    let count = take_number(&mut input)?;
    if count == 0 || count > MAX_COMMAND_LINE_ELEMENTS {
        return None;
    }
    let mut elements = Vec::with_capacity(count);
    for _ in 0..count {
        let len = take_number(&mut input)?;
        elements.push(OsString::from_vec(take(&mut input, len)?.to_vec()));
    }
    if !input.is_empty() {
        return None;
    }
    let mut elements = elements.into_iter();
    let program = elements.next()?;
    Some((program, elements.collect()))
}

/// The first `count` bytes of `input`, which moves past them.
fn take<'a>(input: &mut &'a [u8], count: usize) -> Option<&'a [u8]> {
    let (taken, rest) = input.split_at_checked(count)?;
    *input = rest;
    Some(taken)
}

/// A 4-byte little-endian length from the front of `input`.
fn take_number(input: &mut &[u8]) -> Option<usize> {
    let bytes: [u8; 4] = take(input, 4)?.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(bytes)).ok()
}

/// Most elements of a command line read from stdin (the program included).
const MAX_COMMAND_LINE_ELEMENTS: usize = 64 * 1024;

/// Most bytes of a command line read from stdin.
const MAX_COMMAND_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Reaps every child, as the namespace's init must (orphans come to it), until `command`
/// ends; returns how it ended. Stops early if airlock closes the channel (the call timed out,
/// was cancelled or passed a limit): the caller then empties the namespace and sweeps, as
/// after any call, and the report it sends finds no one.
fn wait_as_init(command: u32) -> Status {
    use rustix::event::{PollFd, PollFlags};
    let Some(pid) = i32::try_from(command)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Status::Failed;
    };
    // Readable when the command ends; `None` only if it is gone already (then the first
    // reap finds it).
    let ended = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
    let tick = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: ORPHAN_REAP_TICK_NANOS,
    };
    loop {
        // Whatever has ended: the command, or orphans, which hold a pid of the call's budget
        // until reaped.
        loop {
            match rustix::process::wait(rustix::process::WaitOptions::NOHANG) {
                Ok(Some((reaped, status))) if reaped == pid => {
                    if let Some(code) = status.exit_status() {
                        return Status::Exited(code);
                    }
                    if let Some(signal) = status.terminating_signal() {
                        return Status::Signaled(signal);
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(errno) if errno == rustix::io::Errno::INTR => {}
                // The command is our child, so this cannot happen; if it does, the launcher
                // has lost track of its call and ends (taking the namespace with it).
                Err(_) => return Status::Failed,
            }
        }
        let channel = control();
        let mut watched = [PollFd::new(&channel, PollFlags::IN)];
        let mut both;
        let fds: &mut [PollFd<'_>] = match &ended {
            Some(ended) => {
                both = [
                    PollFd::new(&channel, PollFlags::IN),
                    PollFd::new(ended, PollFlags::IN),
                ];
                &mut both
            }
            None => &mut watched,
        };
        match rustix::event::poll(fds, Some(&tick)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return Status::Failed,
        }
        // airlock writes nothing during a call: anything on the channel is its end.
        if fds
            .first()
            .is_some_and(|channel| !channel.revents().is_empty())
        {
            return Status::Failed;
        }
    }
}

/// How often a launcher reaps orphans while its command runs (its command's own end wakes
/// it at once): 20 ms.
const ORPHAN_REAP_TICK_NANOS: i64 = 20_000_000;

/// Kills every process of the namespace but this one and reaps them all.
///
/// `kill(-1)` from a namespace's init reaches every other process in it and is atomic with
/// respect to `fork`: the kernel signals under the task-list lock that `fork` must take to
/// add a child, and a parent with a fatal signal pending fails its `fork`. So after this loop
/// no process of the call is left, however it forked, `setsid`ed or daemonised.
fn empty_the_namespace() {
    loop {
        match nix::sys::signal::kill(nix::unistd::Pid::from_raw(-1), nix::sys::signal::SIGKILL) {
            // Killed some, or none were left: reap below, then look again.
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            // Nothing else can fail here; the launcher's own end still ends the namespace.
            Err(_) => return,
        }
        let mut reaped_any = false;
        loop {
            match rustix::process::wait(rustix::process::WaitOptions::empty()) {
                Ok(Some(_)) => reaped_any = true,
                Ok(None) => {}
                Err(errno) if errno == rustix::io::Errno::INTR => {}
                // ECHILD: no child left.
                Err(_) => break,
            }
        }
        if !reaped_any {
            return;
        }
    }
}

/// The path that names this process's own executable; after `fork`, the child's.
pub const SELF_EXE: &str = "/proc/self/exe";

/// Our parent's pid as the host sees it (`getppid` says 0 inside a new PID namespace), read
/// from `/proc/self/stat` (the launcher's own, opened as `status` while `/proc` was in view).
fn parent_pid(status: &std::fs::File) -> Option<u32> {
    let mut buffer = [0_u8; 1024];
    let read = rustix::io::pread(status, &mut buffer, 0).ok()?;
    let stat = std::str::from_utf8(buffer.get(..read)?).ok()?;
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

/// Puts CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_SETPCAP (held in a new user namespace) in the inheritable and
/// ambient sets, so that the next program this process runs keeps them.
fn keep_capabilities_across_exec() -> Result<(), rustix::io::Errno> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    let kept = CapabilitySet::SYS_ADMIN | CapabilitySet::SETPCAP | CapabilitySet::NET_ADMIN;
    let held = rustix::thread::capabilities(None)?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: held.effective,
            permitted: held.permitted,
            inheritable: kept,
        },
    )?;
    for capability in [
        CapabilitySet::SYS_ADMIN,
        CapabilitySet::SETPCAP,
        CapabilitySet::NET_ADMIN,
    ] {
        rustix::thread::configure_capability_in_ambient_set(capability, true)?;
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

/// seccomp: the allowlist and the refusals of `super::syscalls`; without `network`, TCP sockets
/// only where the launcher's Landlock domain refuses their connect and bind (`handles_tcp`).
fn filter_syscalls(policy: &Policy, handles_tcp: bool) -> Result<(), super::syscalls::FilterError> {
    super::syscalls::install(super::syscalls::Sockets::of(policy.network, handles_tcp))
}

/// Why the Landlock rules are not in force, in fixed text (the line reaches the model).
#[derive(Debug, thiserror::Error)]
enum Unrestricted {
    /// The kernel refused a rule or the ruleset.
    #[error("a rule was refused")]
    RuleRefused,
    /// The kernel enforces only part of the rules, and the policy asked for all.
    #[error("not fully enforced by this kernel")]
    NotFullyEnforced,
    /// A granted path is not the file the manifest's check saw.
    #[error("a granted path was replaced since the manifest loaded: restart airlock")]
    Replaced,
}

/// Landlock: files by the policy's lists, TCP bind and connect unless the policy has the
/// network, abstract unix sockets and signals scoped to the call. Whether the domain now in
/// force handles TCP connect and bind (Landlock ABI 4 and later; in best-effort mode an older
/// kernel enforces less, or nothing).
fn restrict_files_and_network(policy: &Policy, best_effort: bool) -> Result<bool, Unrestricted> {
    let abi = super::LANDLOCK_ABI;
    let level = if best_effort {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    // Fixed text: a rule's error could name a path, and this line reaches the model.
    let text = |_: landlock::RulesetError| Unrestricted::RuleRefused;
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
    // TCP bind and connect are refused but, with `network`, connecting to the proxy's port
    // (the only listener in the namespace).
    ruleset = ruleset
        .handle_access(AccessNet::from_all(abi))
        .map_err(text)?;
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
    if policy.network {
        created = created
            .add_rule(landlock::NetPort::new(
                super::proxy::PROXY_PORT,
                AccessNet::ConnectTcp,
            ))
            .map_err(text)?;
    }
    for device in SYSTEM_WRITE_FILES {
        // Character devices, not replaceable by a call: opened like the rest, no identity.
        if let Ok(fd) = open_without_links(Path::new(device)) {
            created = created
                .add_rule(landlock::PathBeneath::new(fd, device_access))
                .map_err(text)?;
        }
    }
    // Denials logged after `exec` too (Landlock ABI 7, Linux 6.15): by default the kernel logs
    // only those of the program that restricted itself, which is this launcher, never the
    // command. Asked for on its own, as a hard requirement whose failure leaves the ruleset
    // as it was: a kernel without it still enforces every rule, it only logs nothing.
    let _logged = (&mut created)
        .set_compatibility(CompatLevel::HardRequirement)
        .log_new_exec(true);
    let status = created.restrict_self().map_err(text)?;
    if !best_effort && status.ruleset != RulesetStatus::FullyEnforced {
        return Err(Unrestricted::NotFullyEnforced);
    }
    Ok(handles_tcp(&status))
}

/// Whether a domain restricted with `status` handles TCP connect and bind: some of it is
/// enforced, on an ABI with TCP rules (4, Linux 6.7).
fn handles_tcp(status: &landlock::RestrictionStatus) -> bool {
    status.ruleset != RulesetStatus::NotEnforced
        && matches!(
            status.landlock,
            landlock::LandlockStatus::Available { effective_abi, .. }
                if effective_abi >= landlock::ABI::V4
        )
}

/// The rule for one granted path: opened without following any symbolic link, and refused
/// unless it is the very file (device and inode) the manifest's check saw.
fn granted(
    path: &Path,
    identity: Option<(u64, u64)>,
    access: landlock::BitFlags<AccessFs>,
    abi: landlock::ABI,
) -> Result<landlock::PathBeneath<std::os::fd::OwnedFd>, Unrestricted> {
    let changed = || Unrestricted::Replaced;
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

/// A failure before the launcher could serve calls: reported on the next call, as every
/// failure is, then the launcher ends.
fn fail(step: &str, error: impl std::fmt::Debug) -> ExitCode {
    if let Ok(Some(call)) = channel::receive_call(control()) {
        let status = report(call.stderr.as_fd(), step, error);
        let _sent = channel::send_status(control(), status, 0, true);
    }
    ExitCode::from(LAUNCH_FAILED)
}

/// Writes the fixed line for a failed `step` on a call's `stderr`; returns
/// [`Status::Failed`].
fn report(stderr: BorrowedFd<'_>, step: &str, error: impl std::fmt::Debug) -> Status {
    let line = format!("{FAILURE_PREFIX}{step} failed ({error:?}); the command did not run\n");
    let _written = rustix::io::write(stderr, line.as_bytes());
    Status::Failed
}
