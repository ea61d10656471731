//! The host's trees a sandboxed command is never given, or may never write (system trees,
//! the fixed system entries every command reads, the home directory's start-up files), as
//! the checks of workdirs, `write` grants and resource roots use them.

use std::path::{Path, PathBuf};

use crate::sandbox::{NETWORK_READ, SYSTEM_READ, SYSTEM_WRITE_FILES};

/// Trees no sandboxed command is given, nor any directory that holds them (`/`): a command
/// needs none of them about itself, and they hold every process's `/proc` entry (airlock's
/// own, with its environment), kernel knobs and raw devices. The harmless devices a program
/// uses are in the sandbox's fixed system list.
pub(super) const NEVER_GRANTED: &[&str] = &["/proc", "/sys", "/dev"];

/// Trees no sandboxed command may write, nor any directory that holds one (`/`): the
/// programs, libraries, configuration, boot files, kernel interfaces and devices every command
/// runs with, and the places the host runs code or keeps its record from: root's home,
/// runtime state (`/run`, where the service manager reads units and sockets live), the job
/// spools (`cron`, `at`), services' and packages' state, and the logs. A tool that could change
/// them would break the sandbox's second wall: what the next call (of any tool, or of the
/// host) runs, or what the host's record says. Every top-level directory named `lib…`
/// (`/lib32`, `/libx32`) counts too, and so does the home directory of the user airlock runs
/// as, with its dot-directories (see [`home_write_refusal`]).
const NEVER_WRITTEN: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib",
    "/var/log",
    "/var/spool",
];

/// Why no sandboxed command may write `dir` (canonical), or `None` when it may: `dir` is `/`,
/// or is, lies inside or holds a system tree ([`NEVER_WRITTEN`], as named and as its real
/// path), or one of `fixed` (the real paths of the sandbox's fixed system entries, which
/// every sandboxed command reads).
pub(super) fn system_write_refusal(
    dir: &Path,
    fixed: &[PathBuf],
    home: Option<&Path>,
) -> Option<String> {
    if dir == Path::new("/") {
        return Some(format!(
            "/ is the root of the file system, which holds every system tree: no sandboxed \
             command may write it; {FIX}"
        ));
    }
    if let Some(rule) = home.and_then(|home| home_write_refusal(dir, home)) {
        return Some(rule);
    }
    let relation = |tree: &Path| {
        if dir == tree {
            Some("is")
        } else if dir.starts_with(tree) {
            Some("lies inside")
        } else if tree.starts_with(dir) {
            Some("holds")
        } else {
            None
        }
    };
    let lib = dir
        .components()
        .nth(1)
        .and_then(|top| top.as_os_str().to_str())
        .filter(|top| top.starts_with("lib"))
        .map(|top| Path::new("/").join(top));
    let trees = system_trees();
    let tree = lib
        .iter()
        .chain(trees)
        .find_map(|tree| relation(tree).map(|how| (how, tree)));
    if let Some((how, tree)) = tree {
        const WHAT: &str = "a system tree no sandboxed command may write (the programs, \
                            libraries, configuration and devices every command runs with)";
        return Some(if how == "is" {
            format!("{} is {WHAT}; {FIX}", dir.display())
        } else {
            format!("{} {how} {}, {WHAT}; {FIX}", dir.display(), tree.display())
        });
    }
    let entry = fixed
        .iter()
        .find_map(|entry| relation(entry).map(|how| (how, entry)));
    entry.map(|(how, entry)| {
        const WHAT: &str = "an entry of the fixed system list every sandboxed command reads, \
                            which no sandboxed command may write";
        if how == "is" {
            format!("{} is {WHAT}; {FIX}", dir.display())
        } else {
            format!("{} {how} {}, {WHAT}; {FIX}", dir.display(), entry.display())
        }
    })
}

/// What a refusal to write a system directory tells the operator to do instead.
const FIX: &str = "write to a directory of the project instead";

/// Why no sandboxed command may write `dir` (canonical) for being in the home directory
/// `home` (canonical), or `None`: `dir` is the home directory, holds it, or lies inside one
/// of its dot-directories or dot-files (`~/.ssh`, `~/.config`, `~/.local/bin`, `~/.bashrc`…),
/// where a written file is code the user's next login, shell or session runs, or a key
/// that lets someone in. A project directory under the home directory stays writable.
fn home_write_refusal(dir: &Path, home: &Path) -> Option<String> {
    const WHAT: &str = "the home directory airlock runs with";
    if home == Path::new("/") {
        // `/` is refused on its own; a home of `/` (some service users) names nothing more.
        return None;
    }
    if dir == home {
        return Some(format!(
            "{} is {WHAT}, whose start-up files and keys a command must not rewrite; {FIX}",
            dir.display()
        ));
    }
    if home.starts_with(dir) {
        return Some(format!(
            "{} holds {}, {WHAT}, whose start-up files and keys a command must not rewrite; \
             {FIX}",
            dir.display(),
            home.display()
        ));
    }
    let first = dir.strip_prefix(home).ok()?.components().next()?;
    first
        .as_os_str()
        .to_str()
        .is_none_or(|name| name.starts_with('.'))
        .then(|| {
            format!(
                "{} lies inside {}, a dot-directory of {WHAT} (start-up files, keys, \
                 autostart entries and the programs on its PATH); {FIX}",
                dir.display(),
                home.join(first).display()
            )
        })
}

/// The home directory of the user airlock runs as (`HOME`, canonical), when it is set,
/// absolute and exists. Worked out once per process.
pub(super) fn home_directory() -> Option<&'static Path> {
    static HOME: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let home = PathBuf::from(std::env::var_os("HOME")?);
        if !home.is_absolute() {
            return None;
        }
        std::fs::canonicalize(home).ok()
    })
    .as_deref()
}

/// [`NEVER_WRITTEN`] and the top-level `lib…` directories, as named, then the real path of
/// each that differs (`/bin` is `/usr/bin` on merged systems). Worked out once per process.
fn system_trees() -> &'static [PathBuf] {
    static TREES: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    TREES.get_or_init(|| {
        let mut named: Vec<PathBuf> = NEVER_WRITTEN.iter().map(PathBuf::from).collect();
        if let Ok(entries) = std::fs::read_dir("/") {
            for entry in entries.flatten() {
                let lib = entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| name.starts_with("lib"));
                if lib && !named.contains(&entry.path()) {
                    named.push(entry.path());
                }
            }
        }
        let real: Vec<PathBuf> = named
            .iter()
            .filter_map(|tree| std::fs::canonicalize(tree).ok())
            .filter(|real| !named.contains(real))
            .collect();
        named.extend(real);
        named
    })
}

/// The real path of every entry of the sandbox's fixed system lists (reading, the network's
/// reading, writing), as this machine has them. Worked out once per process.
pub(super) fn fixed_system_entries() -> &'static [PathBuf] {
    static FIXED: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    FIXED.get_or_init(|| {
        SYSTEM_READ
            .iter()
            .chain(NETWORK_READ)
            .chain(SYSTEM_WRITE_FILES)
            .filter_map(|entry| std::fs::canonicalize(entry).ok())
            .collect()
    })
}
