//! Granted files the host replaces while airlock runs: a package update must not stop calls,
//! and a grant swapped by someone else must not widen them.
//!
//! Every granted path is pinned by its device and inode when the manifest loads
//! (`Policy::identities`), and each launcher opens the very file pinned, or refuses to serve.
//! The host's own updates replace files by rename (apt's maintainer scripts rewrite
//! `/etc/passwd` and `/etc/group`, `ldconfig` `/etc/ld.so.cache`, a library upgrade the loader
//! and the programs): same path, new inode. Refusing those would stop every tool until a
//! restart.
//!
//! So, before each launcher starts, [`Tracked::encoded`] looks at every pinned path again:
//!
//! - **The host's files** (the fixed system list, and the programs, interpreters and loaders
//!   under a system tree): a replacement is taken when it is what such a file always is:
//!   owned by root, writable by no one else, not a symbolic link, and of the same kind
//!   (directory, regular file or character device) as what it replaces. Launchers started
//!   from then on pin the new file; one `warn` line says so. A replacement that fails those
//!   checks is not taken: calls fail as before, and one `error` line says why.
//! - **What the manifest names** (the workdir, roots, `read`, `write`, `exec` outside the
//!   system trees): never taken. Its tool's calls fail with a fixed message that says to
//!   restart airlock, and one `error` line names the tool and the path (once per path: every
//!   later launcher would fail the same way, and the audit record of each call says
//!   `"limit":"sandbox"`).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Policy;

/// Trees whose files the host's package manager replaces: a pinned program, loader or
/// library there follows its updates (with the checks above).
const SYSTEM_TREES: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
];

/// A policy's pinned identities as launchers should see them now, and what was reported.
#[derive(Debug)]
pub(crate) struct Tracked {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The policy with the identities launchers pin now, and its encoding.
    policy: Policy,
    encoded: String,
    /// The manifest's grants found changed, and whether each was reported.
    reported: BTreeMap<PathBuf, bool>,
}

/// What a path's file is, for a replacement to be the same kind.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Kind {
    Directory,
    File,
    Device,
    Other,
}

impl Kind {
    fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::FileTypeExt as _;
        let kind = meta.file_type();
        if kind.is_dir() {
            Self::Directory
        } else if kind.is_file() {
            Self::File
        } else if kind.is_char_device() {
            Self::Device
        } else {
            Self::Other
        }
    }
}

impl Tracked {
    pub(crate) fn new(policy: Policy, encoded: String) -> Self {
        Self {
            state: Mutex::new(State {
                policy,
                encoded,
                reported: BTreeMap::new(),
            }),
        }
    }

    /// The policy encoded for a launcher starting now, with the host's replaced files taken
    /// (see the module header); `tool` names the tool in the lines logged.
    pub(crate) fn encoded(&self, tool: &str) -> String {
        let Ok(mut state) = self.state.lock() else {
            return String::new();
        };
        let state = &mut *state;
        let mut taken = false;
        let pinned: Vec<(PathBuf, (u64, u64))> = state
            .policy
            .identities
            .iter()
            .map(|(path, identity)| (path.clone(), *identity))
            .collect();
        for (path, pinned_identity) in pinned {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if (meta.dev(), meta.ino()) == pinned_identity {
                continue;
            }
            if !hosts_file(&state.policy, &path) {
                let reported = state.reported.entry(path.clone()).or_insert(false);
                if !*reported {
                    *reported = true;
                    tracing::error!(
                        tool,
                        path = %path.display(),
                        "a path this tool's manifest grants was replaced since the manifest \
                         loaded; its calls fail until airlock restarts (and checks the \
                         manifest again)"
                    );
                }
                continue;
            }
            match trusted_replacement(&path, &meta) {
                Ok(()) => {
                    tracing::warn!(
                        tool,
                        path = %path.display(),
                        "a system file the sandbox grants was replaced (a package update?); \
                         launchers started from now on grant the new one"
                    );
                    state
                        .policy
                        .identities
                        .insert(path.clone(), (meta.dev(), meta.ino()));
                    taken = true;
                }
                Err(why) => {
                    let reported = state.reported.entry(path.clone()).or_insert(false);
                    if !*reported {
                        *reported = true;
                        tracing::error!(
                            tool,
                            path = %path.display(),
                            why,
                            "a system file the sandbox grants was replaced by one it does not \
                             trust; this tool's calls fail until it is fixed and airlock \
                             restarts"
                        );
                    }
                }
            }
        }
        if taken && let Ok(encoded) = serde_json::to_string(&state.policy) {
            state.encoded = encoded;
        }
        state.encoded.clone()
    }
}

/// Whether `path` is the host's to update: a fixed system entry, or a program, interpreter or
/// loader under a system tree.
fn hosts_file(policy: &Policy, path: &Path) -> bool {
    policy.is_system_entry(path)
        || (policy.exec.iter().any(|exec| exec == path)
            && SYSTEM_TREES.iter().any(|tree| path.starts_with(tree)))
}

/// Whether a replacement of a host's file is one the host made: owned by root, writable by
/// no one else, not a link, and of the kind the sandbox grants there.
fn trusted_replacement(path: &Path, meta: &std::fs::Metadata) -> Result<(), &'static str> {
    if meta.uid() != 0 {
        return Err("not owned by root");
    }
    if meta.mode() & 0o022 != 0 {
        return Err("writable by its group or by others");
    }
    let kind = Kind::of(meta);
    let expected = if path.starts_with("/dev") {
        Kind::Device
    } else if kind == Kind::Directory {
        Kind::Directory
    } else {
        Kind::File
    };
    if kind != expected {
        return Err("not the kind of file it replaces");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("airlock-updates-{name}-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn pinned(policy: &mut Policy, path: &Path) {
        let meta = std::fs::metadata(path).unwrap();
        policy
            .identities
            .insert(path.to_path_buf(), (meta.dev(), meta.ino()));
    }

    /// A system entry replaced by rename with a file the host would make is taken; the
    /// manifest's own grant replaced is not.
    #[test]
    fn a_replaced_system_file_is_taken_and_a_replaced_grant_is_not() {
        if !rustix::process::geteuid().is_root() {
            // Owned by root is the check: files made here are root's only when we are.
            return;
        }
        let dir = scratch("taken");
        let system = dir.join("passwd");
        let granted = dir.join("data.txt");
        std::fs::write(&system, "root:x:0:0::/root:/bin/sh\n").unwrap();
        std::fs::write(&granted, "data\n").unwrap();
        let mut policy = Policy {
            read: vec![system.clone(), granted.clone()],
            system_entries: 1,
            ..Policy::default()
        };
        pinned(&mut policy, &system);
        pinned(&mut policy, &granted);
        let encoded = serde_json::to_string(&policy).unwrap();
        let tracked = Tracked::new(policy.clone(), encoded.clone());
        assert_eq!(tracked.encoded("t"), encoded, "nothing changed");
        for path in [&system, &granted] {
            let next = dir.join("next");
            std::fs::copy(path, &next).unwrap();
            std::fs::rename(&next, path).unwrap();
        }
        let now: Policy = serde_json::from_str(&tracked.encoded("t")).unwrap();
        let meta = std::fs::metadata(&system).unwrap();
        assert_eq!(now.identities.get(&system), Some(&(meta.dev(), meta.ino())));
        assert_eq!(
            now.identities.get(&granted),
            policy.identities.get(&granted)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A replacement writable by others, or of another kind, is not trusted.
    #[test]
    fn untrusted_replacements_are_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = scratch("untrusted");
        let file = dir.join("group");
        std::fs::write(&file, "x\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        assert!(trusted_replacement(&file, &meta).is_err());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(
            trusted_replacement(&file, &meta).is_ok(),
            rustix::process::geteuid().is_root()
        );
        if rustix::process::geteuid().is_root() {
            let meta = std::fs::metadata(&dir).unwrap();
            assert_eq!(
                trusted_replacement(Path::new("/dev/zero"), &meta),
                Err("not the kind of file it replaces")
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
