//! Paths inside a writable directory that make *other* programs run code later, when a person
//! uses the directory: they stay read-only to a call unless its tool names each one.
//!
//! A tool that may write a checkout (`write = ["."]`, the natural grant for "edit and test this
//! repository") could otherwise plant code that runs outside the sandbox the next time someone
//! types `git status`, opens the folder in an editor or an agent client, or `cd`s into it with
//! direnv. Editing the checkout's own sources stays allowed: that is the job. What is held back
//! is the configuration of the tools around it, listed in [`LATER_CODE`] with why each is there.
//!
//! Two mechanisms, because a mount can protect what exists but not a name that does not:
//!
//! - **What exists when a launcher starts** is found by `find` (breadth first, at any depth,
//!   up to `SANDBOX_LATER_CODE_WALK_ENTRIES` entries per writable directory) and bound
//!   read-only over itself in the launcher's view (`super::mounts`): the kernel answers
//!   `EROFS` to every change, and `EBUSY` to renaming or removing it.
//! - **What a call creates** is removed by the launcher after the call, before it reports
//!   (`sweep`): every listed name that was not there when the call began (`present`, walked
//!   just before it), whether made, renamed into place or moved in with its directory. The
//!   sweep's walk looks at twice the bound plus the call's file budget, which is all a call
//!   can add (hard links are refused by `super::syscalls`). The call's result and the audit
//!   record say how many. Between its creation and the end of the call, such a path exists
//!   on the host: a person using the directory during the call could meet it.
//!
//! A call stopped at a limit or cancelled is swept too: its launcher, let go, sees its channel
//! close while it waits (`launcher::wait_as_init`), empties the namespace and sweeps.
//!
//! Not covered (SECURITY.md): a stopped call whose launcher is killed before it swept (after
//! `SANDBOX_STOP_GRACE`, or with airlock); a listed path that is a symbolic link (a link cannot be a mount
//! point; a call may replace it, and the replacement is removed); trees larger than the walk's
//! bound, past it (there only names born during the call are swept); other mount points inside
//! the writable directory (never walked into).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::limits::SANDBOX_LATER_CODE_WALK_ENTRIES;

/// The names, at any depth of a writable directory, and why each is on the list.
pub const LATER_CODE: &[(&str, &str)] = &[
    (
        ".git",
        "git runs its hooks and what its config names (core.fsmonitor on every `git status`, \
         core.hooksPath, core.sshCommand, aliases, filters); a `.git` file redirects to another \
         git directory",
    ),
    (
        ".hg",
        "Mercurial runs the hooks its hgrc names at commit and loads the extensions (Python) \
         it names on every `hg` command, `hg status` included",
    ),
    (
        ".jj",
        "Jujutsu reads its repository configuration (aliases, `fix.tools` commands) from it",
    ),
    (
        ".gitmodules",
        "`git submodule update` runs `update = !command` and fetches the URLs it names",
    ),
    (
        ".gitconfig",
        "a home directory's git configuration, as above",
    ),
    (".envrc", "direnv runs it on `cd` into the directory"),
    (
        ".vscode",
        "VS Code runs tasks on folder open and the programs its settings name",
    ),
    (
        ".idea",
        "JetBrains IDEs run its run configurations and startup tasks",
    ),
    (
        ".zed",
        "Zed runs its tasks and the language servers its settings name",
    ),
    (
        ".devcontainer",
        "dev containers run its postCreate and postStart commands",
    ),
    (
        ".mcp.json",
        "Claude Code starts the MCP servers a project's .mcp.json names",
    ),
    (
        ".claude",
        "Claude Code runs the hooks and starts the servers its settings name",
    ),
    (
        ".cursor",
        "Cursor starts the MCP servers its mcp.json names",
    ),
    (
        ".gemini",
        "Gemini CLI starts the MCP servers its settings name",
    ),
    (
        ".codex",
        "Codex reads a project's config.toml: MCP servers it starts",
    ),
    (
        ".continue",
        "Continue starts the MCP servers its config names",
    ),
    (".roo", "Roo Code starts the MCP servers its mcp.json names"),
    (
        ".kiro",
        "Kiro starts the MCP servers and hooks its settings name",
    ),
    (
        ".amazonq",
        "Amazon Q starts the MCP servers its mcp.json names",
    ),
    (
        ".windsurf",
        "Windsurf runs the workflows and servers its settings name",
    ),
    (
        ".opencode",
        "opencode starts the MCP servers and runs the plugins its settings name",
    ),
    (
        "opencode.json",
        "opencode starts the MCP servers a project's opencode.json names",
    ),
    (
        ".qwen",
        "Qwen Code starts the MCP servers its settings name",
    ),
    (".husky", "husky's hooks run at every commit once installed"),
    (
        ".npmrc",
        "npm and pnpm read it on every command: `script-shell`, `node-options` and `git` name \
         programs they run",
    ),
    (
        ".yarnrc.yml",
        "every `yarn` command runs the file its `yarnPath` names",
    ),
    (".pnpmfile.cjs", "pnpm runs it on every install"),
    (
        "mise.toml",
        "mise runs its hooks and tasks and sets the environment on `cd` into the directory",
    ),
    (".mise.toml", "as mise.toml"),
    (
        ".tool-versions",
        "asdf and mise install and run the versions it names",
    ),
    (
        ".exrc",
        "vi and Vim with `exrc` set run its commands when started in the directory",
    ),
    (
        ".nvim.lua",
        "Neovim with `exrc` set runs it when started in the directory",
    ),
    (
        ".pre-commit-config.yaml",
        "pre-commit runs the commands it lists at every commit once installed",
    ),
    (".bashrc", "shell start-up file"),
    (".bash_profile", "shell start-up file"),
    (".bash_login", "shell start-up file"),
    (".bash_logout", "shell start-up file"),
    (".profile", "shell start-up file"),
    (".zshrc", "shell start-up file"),
    (".zshenv", "shell start-up file"),
    (".zprofile", "shell start-up file"),
    (".zlogin", "shell start-up file"),
    (".zlogout", "shell start-up file"),
    (".kshrc", "shell start-up file"),
    (".cshrc", "shell start-up file"),
    (".tcshrc", "shell start-up file"),
    (
        ".inputrc",
        "readline macros type text, a newline included, into every shell",
    ),
];

/// Whether `name` is on [`LATER_CODE`].
pub fn is_later_code(name: &OsStr) -> bool {
    LATER_CODE
        .iter()
        .any(|(listed, _)| OsStr::new(listed) == name)
}

/// Whether `path` is, or lies inside, a listed name below `dir` (a write grant a tool names
/// explicitly, which `airlock check` flags).
pub fn names_later_code(dir: &Path, path: &Path) -> bool {
    path.strip_prefix(dir).is_ok_and(|rest| {
        rest.components()
            .any(|part| is_later_code(part.as_os_str()))
    })
}

/// What [`find`] found below one writable directory.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Listed directories and regular files (never a symbolic link), shallowest first.
    pub(crate) paths: Vec<PathBuf>,
    /// The inode of each of `paths`, as found (not followed): a name kept but replaced is
    /// another inode.
    pub(crate) inodes: Vec<u64>,
    /// Whether the whole tree was looked at (not stopped by the entry bound).
    pub(crate) complete: bool,
}

/// The listed directories and regular files below `dir` (what a view can bind read-only),
/// breadth first, without following links or entering another file system or a listed
/// directory, looking at no more than the walk's bound.
pub(crate) fn find(dir: &Path) -> Found {
    listed(dir, |kind| kind.is_dir() || kind.is_file())
}

/// Every listed name below `dir`, symbolic links and other types included, as [`find`]
/// walks: what was there before a call.
pub(crate) fn present(dir: &Path) -> Found {
    listed(dir, |_| true)
}

fn listed(dir: &Path, wanted: impl Fn(std::fs::FileType) -> bool) -> Found {
    let mut paths = Vec::new();
    let mut inodes = Vec::new();
    let complete = walk(dir, SANDBOX_LATER_CODE_WALK_ENTRIES, |path, kind| {
        if wanted(kind) {
            paths.push(path.to_path_buf());
            inodes.push(inode(path));
        }
    })
    .is_some();
    Found {
        paths,
        inodes,
        complete,
    }
}

/// `path`'s inode, not followed; 0 if it cannot be looked at.
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).map_or(0, |meta| meta.ino())
}

/// Removes every listed name below `dir` the call made, except the paths of `keep` (the ones
/// bound read-only at start, and those the tool's grant names); returns how many it removed.
/// A name it cannot remove is counted too: the launcher reports it either way.
///
/// `before` is what [`present`] found there when the call began. When that walk was complete, a
/// name it did not see is the call's, however old the file behind it (an older file renamed
/// to `.envrc`, an older directory renamed to `sub/.git`); otherwise a name counts as the
/// call's when it was born at or after `since`. The walk here may look at
/// `SANDBOX_LATER_CODE_WALK_ENTRIES` more entries than the call's disk budget lets it add,
/// so a call cannot push a name past it (a hard link, which adds a name and no inode, is
/// refused by `super::syscalls`).
pub(crate) fn sweep(
    dir: &Path,
    before: &Found,
    since: SystemTime,
    keep: &[PathBuf],
    added: u64,
) -> u32 {
    let mut removed = 0_u32;
    let mut doomed = Vec::new();
    let bound = usize::try_from(added)
        .unwrap_or(usize::MAX)
        .saturating_add(SANDBOX_LATER_CODE_WALK_ENTRIES.saturating_mul(2));
    // A tree past even that is swept as far as the walk goes.
    let _complete = walk(dir, bound, |path, _| {
        if keep.iter().any(|kept| kept == path) {
            return;
        }
        // A name there before but now another inode was replaced by the call (a symbolic
        // link, which cannot be bound read-only, renamed over).
        let seen = before.paths.iter().position(|seen| seen == path);
        let replaced = seen
            .and_then(|index| before.inodes.get(index))
            .is_some_and(|inode_before| *inode_before != inode(path));
        let new = if before.complete {
            seen.is_none() || replaced
        } else {
            replaced || born_since(path, since)
        };
        if new {
            doomed.push(path.to_path_buf());
        }
    });
    for path in doomed {
        let gone = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(error) => Err(error),
        };
        if gone.is_ok() || std::fs::symlink_metadata(&path).is_ok() {
            removed = removed.saturating_add(1);
        }
    }
    removed
}

/// Whether `path` (not followed) was created at or after `since`: its birth time where the
/// file system keeps one, else its status change time.
fn born_since(path: &Path, since: SystemTime) -> bool {
    use rustix::fs::{AtFlags, StatxFlags};
    let Ok(status) = rustix::fs::statx(
        rustix::fs::CWD,
        path,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BTIME | StatxFlags::CTIME,
    ) else {
        // Gone already, or unreadable: nothing to remove.
        return false;
    };
    let stamp = if StatxFlags::from_bits_retain(status.stx_mask).contains(StatxFlags::BTIME) {
        status.stx_btime
    } else {
        status.stx_ctime
    };
    let seconds = u64::try_from(stamp.tv_sec).unwrap_or(0);
    let born = SystemTime::UNIX_EPOCH
        .checked_add(std::time::Duration::new(seconds, stamp.tv_nsec))
        .unwrap_or(SystemTime::UNIX_EPOCH);
    // File times come from a coarse clock, up to a tick behind the one `since` was read from.
    born >= since.checked_sub(COARSE_CLOCK_SLACK).unwrap_or(since)
}

/// How far a file system's timestamp may lag the clock read just before (a few jiffies).
const COARSE_CLOCK_SLACK: std::time::Duration = std::time::Duration::from_millis(20);

/// Walks `dir` breadth first, calling `found` with every listed name (and its type, not
/// followed) below it; does not descend into listed directories, symbolic links or other file
/// systems. `None` when it stopped at the entry bound.
fn walk(dir: &Path, bound: usize, mut found: impl FnMut(&Path, std::fs::FileType)) -> Option<()> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(top) = std::fs::symlink_metadata(dir) else {
        // Nothing there: nothing to find.
        return Some(());
    };
    let device = top.dev();
    let mut queue = std::collections::VecDeque::from([dir.to_path_buf()]);
    let mut seen = 0_usize;
    while let Some(current) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            seen = seen.saturating_add(1);
            if seen > bound {
                return None;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if is_later_code(&entry.file_name()) {
                found(&path, kind);
                continue;
            }
            if kind.is_dir()
                && std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.dev() == device)
            {
                queue.push_back(path);
            }
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("airlock-later-code-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn listed_names_are_found_at_any_depth_and_not_entered() {
        let dir = scratch("find");
        for sub in [
            ".git/hooks",
            "src/nested/.git",
            "src/.vscode",
            "node/deep/er",
        ] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::write(dir.join(".envrc"), "x").unwrap();
        std::fs::write(dir.join("src/main.rs"), "x").unwrap();
        std::fs::write(dir.join("node/deep/er/.mcp.json"), "{}").unwrap();
        std::os::unix::fs::symlink("/etc", dir.join(".idea")).unwrap();
        let found = find(&dir);
        assert!(found.complete);
        let mut names: Vec<String> = found
            .paths
            .iter()
            .map(|path| path.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ".envrc",
                ".git",
                "node/deep/er/.mcp.json",
                "src/.vscode",
                "src/nested/.git"
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_sweep_removes_what_the_call_made_and_keeps_the_rest() {
        let dir = scratch("sweep");
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join("old.envrc.txt"), "x").unwrap();
        std::fs::create_dir_all(dir.join("sub/.vscode")).unwrap();
        std::fs::create_dir_all(dir.join("older/.git")).unwrap();
        std::os::unix::fs::symlink("elsewhere", dir.join("sub/.envrc")).unwrap();
        let keep = vec![dir.join(".git")];
        let before = present(&dir);
        assert!(before.complete);
        let since = SystemTime::now();
        std::fs::write(dir.join(".envrc"), "evil").unwrap();
        std::fs::create_dir_all(dir.join("a/b/.git/hooks")).unwrap();
        std::fs::write(dir.join("a/b/.git/hooks/pre-commit"), "evil").unwrap();
        std::fs::write(dir.join("a/notes.txt"), "fine").unwrap();
        // Older files under new names: a rename keeps the birth time.
        std::fs::rename(dir.join("old.envrc.txt"), dir.join("a/.envrc")).unwrap();
        std::fs::rename(dir.join("older"), dir.join("a/sub")).unwrap();
        let removed = sweep(&dir, &before, since, &keep, 0);
        assert_eq!(removed, 4);
        for gone in [".envrc", "a/b/.git", "a/.envrc", "a/sub/.git"] {
            assert!(!dir.join(gone).exists(), "{gone}");
        }
        assert!(dir.join("a/notes.txt").exists());
        assert!(dir.join(".git").exists(), "kept");
        assert!(dir.join("sub/.vscode").exists(), "there before the call");
        assert!(dir.join("sub/.envrc").is_symlink(), "there before the call");
        // A listed symbolic link (never bound read-only) replaced by the call goes.
        let before = present(&dir);
        let since = SystemTime::now();
        std::fs::write(dir.join("planted"), "evil").unwrap();
        std::fs::rename(dir.join("planted"), dir.join("sub/.envrc")).unwrap();
        assert_eq!(sweep(&dir, &before, since, &keep, 0), 1);
        assert!(!dir.join("sub/.envrc").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// When the walk before the call stopped at its bound, only names born since the call
    /// began are the call's.
    #[test]
    fn past_the_bound_a_sweep_goes_by_birth() {
        let dir = scratch("sweep-bound");
        std::fs::create_dir_all(dir.join("sub/.vscode")).unwrap();
        let before = Found {
            paths: Vec::new(),
            inodes: Vec::new(),
            complete: false,
        };
        std::thread::sleep(std::time::Duration::from_millis(60));
        let since = SystemTime::now();
        std::fs::write(dir.join(".envrc"), "evil").unwrap();
        assert_eq!(sweep(&dir, &before, since, &[], 0), 1);
        assert!(!dir.join(".envrc").exists());
        assert!(dir.join("sub/.vscode").exists(), "born before the call");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_grant_that_names_a_listed_path_is_recognised() {
        let dir = Path::new("/work/repo");
        assert!(names_later_code(dir, Path::new("/work/repo/.git/hooks")));
        assert!(names_later_code(dir, Path::new("/work/repo/sub/.envrc")));
        assert!(!names_later_code(dir, Path::new("/work/repo/src")));
        assert!(!names_later_code(dir, Path::new("/elsewhere/.git")));
    }
}
