//! The command's file system view: a root of its own that holds only what the policy grants,
//! read-only but for the writable directories. Built by the launcher once, in a mount
//! namespace of its own, before it drops its capabilities.
//!
//! Landlock decides which *accesses* a path allows; it does not cover every operation on a
//! file (`chmod`, `chown`, `utimes`, extended attributes and ACLs, inode flags, leases,
//! notifications) nor `stat`. Those the view covers by construction:
//!
//! - a fresh `tmpfs` becomes the root (`pivot_root`), holding empty directories, the
//!   mount points, and the symbolic links the policy lists (`Policy::links`: `/bin` where it
//!   is `/usr/bin`, the loader's `/lib64`, `/etc/localtime`); it is read-only once built;
//! - every granted path is bound into it from the very file the manifest's check saw (opened
//!   without following links, its device and inode compared with the load-time record, then
//!   cloned with `open_tree`, so a swapped path grants nothing), **without** the mounts beneath
//!   it, and made read-only, `nosuid` and `nodev` (devices keep `dev`); the kernel then answers
//!   `EROFS` to any change of data or metadata there, whoever the command runs as;
//! - writable directories are bound read-write (still `nosuid`, `nodev`), and inside them the
//!   paths that make other programs run code later (`super::later_code`) are bound read-only
//!   again over themselves, unless the tool's own grant names them;
//! - nothing else exists: a path outside the grants is `ENOENT`, even to `stat`, and no
//!   `/proc`, `/sys`, `/tmp` or home directory is there. Hard links and renames across the
//!   binds fail with `EXDEV`.
//!
//! Everything is private to the launcher's namespace: nothing propagates to the host, and the
//! host's later mounts do not appear. Mounts inside a granted directory are not brought along
//! (a default-deny view); without privileges the kernel refuses to clone a directory with
//! mounts inside it that the user namespace may not hide, and the launcher then fails with
//! "a granted path holds a mount" (SECURITY.md).

use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags, StatVfsMountFlags};
use rustix::mount::{
    FsMountFlags, FsOpenFlags, MountAttrFlags, MountFlags, MountPropagationFlags, MoveMountFlags,
    OpenTreeFlags, UnmountFlags,
};

use super::{Policy, SYSTEM_WRITE_FILES, later_code};

/// The error of [`enter`] when it changed nothing (no privilege over the mount namespace):
/// only then may a best-effort launcher go on without the view.
pub(crate) const NOT_STARTED: &str = "making the launcher's mounts private";

/// How one path appears in the view.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Access {
    /// Read (and execute, as Landlock allows): read-only, `nosuid`, `nodev`.
    ReadOnly,
    /// A writable directory: read-write, `nosuid`, `nodev`.
    Writable,
    /// A device every command may use (`/dev/null`): read-only mount, device allowed.
    Device,
}

/// One bind of the view.
#[derive(Debug)]
struct Bind {
    path: PathBuf,
    access: Access,
}

/// What the launcher keeps of the view it entered.
#[derive(Debug, Default)]
pub(crate) struct View {
    /// Listed later-code paths bound read-only (a sweep leaves them alone).
    pub(crate) protected: Vec<PathBuf>,
    /// Writable directories whose tree was larger than the later-code walk looked at.
    pub(crate) partly_walked: usize,
}

/// Builds the view for `policy` and makes it this process's root; its working directory is
/// `workdir` again afterwards. The caller has a mount namespace of its own and
/// `CAP_SYS_ADMIN` over it.
///
/// # Errors
///
/// The step that failed, as fixed text (it reaches the model).
pub(crate) fn enter(policy: &Policy, workdir: &Path) -> Result<View, &'static str> {
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|_| NOT_STARTED)?;
    let (binds, view) = binds(policy);
    // Each source is cloned before the new root hides the host's tree.
    let mut clones = Vec::with_capacity(binds.len());
    for bind in binds {
        let (tree, kind) = clone_granted(policy, &bind)?;
        clones.push((bind, tree, kind));
    }
    let root = new_root()?;
    rustix::mount::move_mount(&root, "", CWD, "/", MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)
        .map_err(|_| "mounting the view's root")?;
    rustix::process::fchdir(&root).map_err(|_| "entering the view's root")?;
    for (bind, tree, kind) in clones {
        let relative = relative(&bind.path)?;
        make_mount_point(&root, relative, kind == FileType::Directory)?;
        rustix::mount::move_mount(
            &tree,
            "",
            &root,
            relative,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )
        .map_err(|_| "binding a granted path into the view")?;
        // A granted character device (`/dev/zero`, `/dev/urandom`) must stay usable.
        let access = if kind == FileType::CharacterDevice {
            Access::Device
        } else {
            bind.access
        };
        restrict(relative, access)?;
    }
    for (link, target) in &policy.links {
        let relative = relative(link)?;
        if rustix::fs::statat(&root, relative, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            continue;
        }
        if let Some(parent) = relative.parent() {
            make_directories(&root, parent)?;
        }
        rustix::fs::symlinkat(target, &root, relative)
            .map_err(|_| "recreating a symbolic link in the view")?;
    }
    rustix::process::pivot_root(".", ".").map_err(|_| "changing the launcher's root")?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)
        .map_err(|_| "detaching the host's file system")?;
    rustix::process::chdir("/").map_err(|_| "entering the new root")?;
    rustix::mount::mount_remount(
        "/",
        MountFlags::BIND
            | MountFlags::RDONLY
            | MountFlags::NOSUID
            | MountFlags::NODEV
            | MountFlags::NOEXEC,
        "",
    )
    .map_err(|_| "making the view's root read-only")?;
    rustix::process::chdir(workdir).map_err(|_| "entering the workdir in the view")?;
    Ok(view)
}

/// The view `policy` makes, bind by bind, in order (for the policy oracle, `fuzzing`).
#[cfg(any(test, fuzzing))]
pub(crate) fn plan(policy: &Policy) -> Vec<(PathBuf, Access)> {
    binds(policy)
        .0
        .into_iter()
        .map(|bind| (bind.path, bind.access))
        .collect()
}

/// The binds of `policy`'s view, parents before what lies inside them: every granted path
/// (skipped where a bind above it already gives the same access), `/dev/null`, and the
/// later-code paths inside writable directories that the grant does not name.
fn binds(policy: &Policy) -> (Vec<Bind>, View) {
    let mut wanted: Vec<Bind> = Vec::new();
    let mut want = |path: &Path, access: Access| {
        if let Some(bind) = wanted.iter_mut().find(|bind| bind.path == path) {
            // A path granted twice is bound once, with the wider access.
            if access == Access::Writable {
                bind.access = access;
            }
            return;
        }
        wanted.push(Bind {
            path: path.to_path_buf(),
            access,
        });
    };
    for path in policy.read.iter().chain(&policy.exec) {
        want(path, Access::ReadOnly);
    }
    for path in &policy.write {
        want(path, Access::Writable);
    }
    for device in SYSTEM_WRITE_FILES {
        want(Path::new(device), Access::Device);
    }
    let mut view = View::default();
    for dir in &policy.write {
        let found = later_code::find(dir);
        if !found.complete {
            view.partly_walked = view.partly_walked.saturating_add(1);
        }
        for path in found.paths {
            // Named by the grant itself (`write = [".", ".git"]`): the tool's to write. A grant
            // inside it (`".git/hooks"`) is bound writable over this read-only bind.
            if policy.write.contains(&path) {
                continue;
            }
            view.protected.push(path.clone());
            want(&path, Access::ReadOnly);
        }
    }
    wanted.sort_by(|a, b| {
        a.path
            .components()
            .count()
            .cmp(&b.path.components().count())
            .then_with(|| a.path.cmp(&b.path))
    });
    let mut binds: Vec<Bind> = Vec::with_capacity(wanted.len());
    for bind in wanted {
        let covering = binds
            .iter()
            .filter(|outer| bind.path.starts_with(&outer.path))
            .max_by_key(|outer| outer.path.components().count());
        if covering.is_some_and(|outer| outer.access == bind.access) {
            continue;
        }
        binds.push(bind);
    }
    (binds, view)
}

/// A detached copy of the mount at `bind.path` (that directory or file alone, no mounts below
/// it), opened without following links and checked against the load-time identity; and its
/// type.
fn clone_granted(policy: &Policy, bind: &Bind) -> Result<(OwnedFd, FileType), &'static str> {
    let changed = "a granted path was replaced since the manifest loaded: restart airlock";
    let fd = rustix::fs::openat2(
        CWD,
        &bind.path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    )
    .map_err(|_| changed)?;
    let stat = rustix::fs::fstat(&fd).map_err(|_| changed)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    match (bind.access, policy.identities.get(&bind.path)) {
        (_, Some(identity)) if *identity != (stat.st_dev, stat.st_ino) => return Err(changed),
        (Access::Device, _) if kind != FileType::CharacterDevice => return Err(changed),
        _ => {}
    }
    let tree = rustix::mount::open_tree(
        &fd,
        "",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_EMPTY_PATH,
    )
    .map_err(|errno| {
        if errno == rustix::io::Errno::INVAL {
            "a granted path holds a mount that cannot be hidden without privileges"
        } else {
            "cloning a granted path"
        }
    })?;
    Ok((tree, kind))
}

/// The view's root: a small `tmpfs` (directories, empty files and links only), detached.
fn new_root() -> Result<OwnedFd, &'static str> {
    let failed = "creating the view's root";
    let fs = rustix::mount::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC).map_err(|_| failed)?;
    for (key, value) in [("size", "1m"), ("nr_inodes", "16384"), ("mode", "0755")] {
        rustix::mount::fsconfig_set_string(&fs, key, value).map_err(|_| failed)?;
    }
    rustix::mount::fsconfig_create(&fs).map_err(|_| failed)?;
    rustix::mount::fsmount(
        &fs,
        FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV
            | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )
    .map_err(|_| failed)
}

/// `path` without its leading `/`, for lookups beneath the new root.
fn relative(path: &Path) -> Result<&Path, &'static str> {
    path.strip_prefix("/")
        .map_err(|_| "a granted path is not absolute")
}

/// Creates the mount point of a bind at `relative` (and its parents) unless it exists: inside
/// another bind it does already.
fn make_mount_point(root: &OwnedFd, relative: &Path, is_dir: bool) -> Result<(), &'static str> {
    if rustix::fs::statat(root, relative, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        return Ok(());
    }
    if is_dir {
        return make_directories(root, relative);
    }
    if let Some(parent) = relative.parent() {
        make_directories(root, parent)?;
    }
    rustix::fs::openat(
        root,
        relative,
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(0o644),
    )
    .map(drop)
    .map_err(|_| "creating a mount point in the view")
}

/// `mkdir -p` of `relative` beneath `root`.
fn make_directories(root: &OwnedFd, relative: &Path) -> Result<(), &'static str> {
    let mut path = PathBuf::new();
    for part in relative.components() {
        path.push(part);
        match rustix::fs::mkdirat(root.as_fd(), &path, Mode::from_raw_mode(0o755)) {
            Ok(()) => {}
            Err(errno) if errno == rustix::io::Errno::EXIST => {}
            Err(_) => return Err("creating a directory in the view"),
        }
    }
    Ok(())
}

/// Sets a bind's flags: read-only unless writable, `nosuid`, `nodev` unless a device, and
/// whatever the source mount has that a user namespace may not drop (read-only, `noexec`,
/// its atime rule): the kernel refuses a remount that would clear a locked flag.
fn restrict(relative: &Path, access: Access) -> Result<(), &'static str> {
    let source = rustix::fs::statvfs(relative)
        .map_err(|_| "reading a bind's flags")?
        .f_flag;
    let mut flags = MountFlags::BIND | MountFlags::NOSUID;
    if access != Access::Writable || source.contains(StatVfsMountFlags::RDONLY) {
        flags |= MountFlags::RDONLY;
    }
    if access != Access::Device || source.contains(StatVfsMountFlags::NODEV) {
        flags |= MountFlags::NODEV;
    }
    for (has, keep) in [
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ] {
        if source.contains(has) {
            flags |= keep;
        }
    }
    rustix::mount::mount_remount(relative, flags, "").map_err(|_| "restricting a bind")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(read: &[&str], write: &[&str]) -> Policy {
        Policy {
            read: read.iter().map(PathBuf::from).collect(),
            write: write.iter().map(PathBuf::from).collect(),
            ..Policy::default()
        }
    }

    fn shape(binds: &[Bind]) -> Vec<(String, Access)> {
        binds
            .iter()
            .map(|bind| (bind.path.display().to_string(), bind.access))
            .collect()
    }

    #[test]
    fn binds_come_parents_first_and_a_covered_path_is_bound_once() {
        let (found, view) = binds(&policy(
            &["/usr", "/usr/share", "/etc/passwd", "/nonexistent/work"],
            &["/nonexistent/work/out"],
        ));
        assert_eq!(
            shape(&found),
            [
                ("/usr".to_owned(), Access::ReadOnly),
                ("/dev/null".to_owned(), Access::Device),
                ("/etc/passwd".to_owned(), Access::ReadOnly),
                ("/nonexistent/work".to_owned(), Access::ReadOnly),
                ("/nonexistent/work/out".to_owned(), Access::Writable),
            ]
        );
        assert!(view.protected.is_empty());
    }

    #[test]
    fn later_code_inside_a_writable_directory_is_bound_read_only_unless_granted() {
        let dir = std::env::temp_dir().join(format!("airlock-binds-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(dir.join("sub/.vscode")).unwrap();
        std::fs::write(dir.join(".envrc"), "x").unwrap();
        let text = dir.display().to_string();
        let (found, view) = binds(&policy(&[], &[&text]));
        let names = shape(&found);
        for protected in [".git", ".envrc", "sub/.vscode"] {
            let path = dir.join(protected).display().to_string();
            assert!(names.contains(&(path, Access::ReadOnly)), "{names:?}");
        }
        assert_eq!(view.protected.len(), 3);
        // Naming `.git/hooks` leaves `.git` read-only and binds the hooks writable on top.
        let hooks = dir.join(".git/hooks").display().to_string();
        let (found, _) = binds(&policy(&[], &[&text, &hooks]));
        let names = shape(&found);
        assert!(
            names.contains(&(hooks.clone(), Access::Writable)),
            "{names:?}"
        );
        let position = |name: &str| names.iter().position(|(path, _)| path == name);
        assert!(position(&dir.join(".git").display().to_string()) < position(&hooks));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
