//! airlock's side of a sandboxed spawn: the launcher's command line, and the PID namespace the
//! spawning thread gives its next child.

use std::ffi::OsString;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::OnceLock;

use rustix::thread::LinkNameSpaceType;

use super::launcher::{LAUNCH_ARG, SELF_EXE};
use super::{Confinement, Mode, PidNamespace};

/// The launcher's program and argv for one call; the command line itself goes to its stdin
/// ([`header`]).
pub(crate) fn launcher_command(
    confinement: &Confinement,
    mode: Mode,
    pid_namespace: PidNamespace,
    call_uid: Option<u32>,
    cgroups: &str,
) -> (&'static Path, Vec<OsString>) {
    let stage = match pid_namespace {
        PidNamespace::UserNamespace => "user",
        PidNamespace::Direct | PidNamespace::Unavailable => "init",
    };
    let argv = vec![
        OsString::from(LAUNCH_ARG),
        OsString::from(stage),
        OsString::from(std::process::id().to_string()),
        call_uid.map_or_else(
            || OsString::from("-"),
            |uid| OsString::from(uid.to_string()),
        ),
        OsString::from(match mode {
            Mode::Required => "required",
            Mode::BestEffort => "best-effort",
        }),
        OsString::from(cgroups),
        OsString::from(confinement.encoded()),
    ];
    (Path::new(SELF_EXE), argv)
}

/// The command line as the launcher reads it from its stdin: the number of elements, then
/// each element's length and bytes (lengths as 4-byte little-endian), the program first.
/// Whatever follows on stdin is the command's own input.
pub(crate) fn header(program: &Path, args: &[OsString]) -> Vec<u8> {
    let elements = std::iter::once(program.as_os_str()).chain(args.iter().map(OsString::as_os_str));
    let mut out = Vec::new();
    let count = u32::try_from(args.len().saturating_add(1)).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    for element in elements {
        let bytes = element.as_bytes();
        out.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// While alive, children this thread starts are born into one new PID namespace (the first of
/// them is its pid 1). Dropping it gives the thread back its own namespace for children.
///
/// `setns` and `unshare` act on the calling thread only, so other threads' spawns are not
/// affected; spawning is synchronous, so the thread cannot switch tasks in between.
pub(crate) struct CallNamespace {
    own: &'static OwnedFd,
}

impl CallNamespace {
    /// Needs `CAP_SYS_ADMIN`.
    pub(crate) fn enter() -> Result<Self, std::io::ErrorKind> {
        let own = own_pid_namespace()?;
        // A thread may unshare its children's PID namespace only while it is its own: reset
        // first, in case an earlier call's guard could not.
        rustix::thread::move_into_link_name_space(own.as_fd(), Some(LinkNameSpaceType::ProcessID))
            .map_err(|errno| std::io::Error::from(errno).kind())?;
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWPID)
            .map_err(|errno| std::io::Error::from(errno).kind())?;
        Ok(Self { own })
    }
}

impl Drop for CallNamespace {
    fn drop(&mut self) {
        let reset = rustix::thread::move_into_link_name_space(
            self.own.as_fd(),
            Some(LinkNameSpaceType::ProcessID),
        );
        if reset.is_err() {
            tracing::warn!("could not give the spawning thread its PID namespace back");
        }
    }
}

/// airlock's own PID namespace, opened once.
fn own_pid_namespace() -> Result<&'static OwnedFd, std::io::ErrorKind> {
    static OWN: OnceLock<Result<OwnedFd, std::io::ErrorKind>> = OnceLock::new();
    OWN.get_or_init(|| {
        std::fs::File::open("/proc/self/ns/pid")
            .map(OwnedFd::from)
            .map_err(|error| error.kind())
    })
    .as_ref()
    .map_err(|kind| *kind)
}
