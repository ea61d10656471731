//! What one command may touch: the policy a manifest entry declares, plus the fixed minimum a
//! program needs to load and run.
//!
//! A policy only ever grants. Everything it does not name is denied by the kernel: files
//! (Landlock), TCP and other socket families (Landlock and seccomp), signals and abstract unix
//! sockets outside the call (Landlock scoping and the PID namespace). Paths are absolute and
//! canonical; the launcher opens each one when it builds the ruleset, so a path renamed or
//! swapped later grants nothing new.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::limits::{
    SANDBOX_CALL_MEMORY_MIB, SANDBOX_CPU_SECONDS, SANDBOX_DISK_FILES, SANDBOX_DISK_MIB,
    SANDBOX_FILE_SIZE_MIB, SANDBOX_MEMORY_MIB, SANDBOX_NETWORK_CONNECTIONS,
    SANDBOX_NETWORK_DOWN_MIB, SANDBOX_NETWORK_UP_MIB, SANDBOX_OPEN_FILES, SANDBOX_PROCESSES,
};

use super::destinations::Destinations;

/// What a sandboxed command may read, execute and write, whether it may use the network, and
/// the resources it may take.
#[derive(Clone, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Files and directories it may read (directories: everything beneath them).
    pub read: Vec<PathBuf>,
    /// How many leading entries of `read` are the fixed system list (for `describe`, and for
    /// following the host's updates: `super::updates`).
    #[serde(default)]
    pub system_entries: usize,
    /// Programs it may execute (and read); a directory grants every program beneath it.
    pub exec: Vec<PathBuf>,
    /// Directories beneath which it may create, write, rename and remove files.
    pub write: Vec<PathBuf>,
    /// Whether it has a network: a namespace whose loopback holds the proxy
    /// (`super::proxy`), which reaches [`Self::destinations`] and nothing else. Unix sockets
    /// are refused either way (only `socketpair` works).
    pub network: bool,
    /// Where the proxy lets it connect (`network = [...]`, or any public destination for
    /// `network = true`).
    #[serde(default)]
    pub destinations: Destinations,
    /// Resource limits.
    pub resources: Resources,
    /// Device and inode of every path above, as they were when the manifest loaded. The
    /// launcher opens each path without following symbolic links and refuses to run if what
    /// it finds is not the same file: a path swapped since (by a call that could write next
    /// to it, say) grants nothing.
    pub identities: std::collections::BTreeMap<PathBuf, (u64, u64)>,
    /// Symbolic links the command's file system view recreates, each as `(link, target)`:
    /// the command sees only the granted paths (`super::mounts`), and the names programs use
    /// to reach them (`/bin/sh` where `/bin` is `/usr/bin`, the loader's `/lib64/…`,
    /// `/etc/localtime`) must still lead there. Only links outside every granted tree; the
    /// trees bring their own.
    pub links: Vec<(PathBuf, PathBuf)>,
}

/// Resource limits of one call. Every process of the call has them; `processes` bounds how
/// many run at once.
#[derive(Clone, Copy, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// Processes (and threads) alive at once, the program included.
    pub processes: u32,
    /// Address space of each process, in MiB.
    pub memory_mib: u64,
    /// CPU time of each process, in seconds; past it the process gets `SIGXCPU`, a second
    /// later `SIGKILL`.
    pub cpu_seconds: u64,
    /// Largest file a process may write, in MiB; past it the write fails with `SIGXFSZ`.
    pub file_size_mib: u64,
    /// Open file descriptors of each process.
    pub open_files: u64,
    /// Memory of the whole call, every process and the page cache they fill, in MiB (the
    /// call's cgroup).
    pub call_memory_mib: u64,
    /// Bytes the call may add to its writable directories' file systems, in MiB.
    pub disk_mib: u64,
    /// Files the call may add to its writable directories' file systems.
    pub disk_files: u64,
    /// Connections to destinations the call may open through the proxy.
    #[serde(default = "default_network_connections")]
    pub network_connections: u32,
    /// MiB the call may send through the proxy.
    #[serde(default = "default_network_up_mib")]
    pub network_up_mib: u64,
    /// MiB the call may receive through the proxy.
    #[serde(default = "default_network_down_mib")]
    pub network_down_mib: u64,
}

fn default_network_connections() -> u32 {
    SANDBOX_NETWORK_CONNECTIONS
}

fn default_network_up_mib() -> u64 {
    SANDBOX_NETWORK_UP_MIB
}

fn default_network_down_mib() -> u64 {
    SANDBOX_NETWORK_DOWN_MIB
}

impl Default for Resources {
    fn default() -> Self {
        Self {
            processes: SANDBOX_PROCESSES,
            memory_mib: SANDBOX_MEMORY_MIB,
            cpu_seconds: SANDBOX_CPU_SECONDS,
            file_size_mib: SANDBOX_FILE_SIZE_MIB,
            open_files: SANDBOX_OPEN_FILES,
            call_memory_mib: SANDBOX_CALL_MEMORY_MIB,
            disk_mib: SANDBOX_DISK_MIB,
            disk_files: SANDBOX_DISK_FILES,
            network_connections: SANDBOX_NETWORK_CONNECTIONS,
            network_up_mib: SANDBOX_NETWORK_UP_MIB,
            network_down_mib: SANDBOX_NETWORK_DOWN_MIB,
        }
    }
}

impl Resources {
    /// One line for `airlock check` and for a failed call's report.
    pub fn describe(&self) -> String {
        format!(
            "processes {}, memory {} MiB per call ({} MiB per process), CPU {} s per process, \
             files up to {} MiB, {} open files, disk {} MiB and {} files per call",
            self.processes,
            self.call_memory_mib,
            self.memory_mib,
            self.cpu_seconds,
            self.file_size_mib,
            self.open_files,
            self.disk_mib,
            self.disk_files
        )
    }
}

/// What every dynamically linked program needs to load and run: the system's programs and
/// libraries, the loader's cache, locale and time zone data, the user and group names that
/// `ls -l` and friends print, and the harmless character devices. Missing entries are skipped.
///
/// Not here on purpose: the rest of `/etc` (`shadow`, keys, credentials), `/proc` and `/sys`
/// (other processes, airlock's own environment), `/tmp`, `/home`, `/root`, `/run`, `/var`.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/locale.alias",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Devices every command may also write: output thrown away.
pub const SYSTEM_WRITE_FILES: &[&str] = &["/dev/null"];

/// What a program that uses the network also reads: name resolution and CA certificates.
pub const NETWORK_READ: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
];

impl Policy {
    /// The policy of a command running `program` in `workdir`, with the path arguments' roots,
    /// and what the manifest declared beyond them. `program` and every path must be absolute
    /// and canonical.
    pub fn for_command(program: &Path, workdir: &Path, declared: Declared) -> Self {
        let mut exec = vec![program.to_path_buf()];
        exec.extend(interpreters(program));
        for extra in &declared.exec {
            if !exec.contains(extra) {
                exec.push(extra.clone());
            }
            if extra.is_file() {
                for interpreter in interpreters(extra) {
                    if !exec.contains(&interpreter) {
                        exec.push(interpreter);
                    }
                }
            }
        }
        // Entries this machine lacks are left out now, not looked up by every launcher; the
        // others are taken canonical (`/bin` is `/usr/bin` on merged systems), so the launcher
        // can open each without following a link. Worked out once per process.
        let system = system_read(declared.network);
        let mut read: Vec<PathBuf> = system.iter().map(|(path, _)| path.clone()).collect();
        let system_entries = read.len();
        for path in std::iter::once(workdir.to_path_buf())
            .chain(declared.roots)
            .chain(declared.read)
        {
            if !read.contains(&path) {
                read.push(path);
            }
        }
        let mut policy = Self {
            read,
            system_entries,
            exec,
            write: declared.write,
            network: declared.network,
            destinations: declared.destinations,
            resources: declared.resources,
            identities: system.iter().cloned().collect(),
            links: Vec::new(),
        };
        policy.record_identities();
        let mut written: Vec<PathBuf> = SYSTEM_READ
            .iter()
            .chain(if declared.network { NETWORK_READ } else { &[] })
            .map(PathBuf::from)
            .chain(top_level_links())
            .collect();
        for reached in std::iter::once(program)
            .chain(declared.written.iter().map(PathBuf::as_path))
            .chain(declared.exec.iter().map(PathBuf::as_path))
        {
            written.push(reached.to_path_buf());
            written.extend(written_interpreters(reached));
        }
        policy.links = links_along(&written, &policy.bound_trees());
        policy
    }

    /// Every path the command's view binds: the granted paths, with `/dev/null`.
    pub fn bound_trees(&self) -> Vec<PathBuf> {
        self.granted()
            .map(Path::to_path_buf)
            .chain(SYSTEM_WRITE_FILES.iter().map(PathBuf::from))
            .collect()
    }

    /// Records the device and inode of each path past the system list (recorded once per
    /// process); a path that cannot be looked at now is dropped (it would grant nothing).
    fn record_identities(&mut self) {
        use std::os::unix::fs::MetadataExt as _;
        let identities = &mut self.identities;
        let mut keep = |path: &PathBuf| {
            if identities.contains_key(path) {
                return true;
            }
            match std::fs::metadata(path) {
                Ok(meta) => {
                    identities.insert(path.clone(), (meta.dev(), meta.ino()));
                    true
                }
                Err(_) => false,
            }
        };
        self.read.retain(&mut keep);
        self.exec.retain(&mut keep);
        self.write.retain(&mut keep);
    }

    /// Whether `path` is one of the fixed system list's entries.
    pub fn is_system_entry(&self, path: &Path) -> bool {
        self.read
            .get(..self.system_entries.min(self.read.len()))
            .is_some_and(|system| system.iter().any(|entry| entry == path))
    }

    /// Every path the policy grants anything on past the fixed system list: the workdir, the
    /// roots, what the manifest declared, the program and its interpreters.
    pub fn granted_beyond_system(&self) -> impl Iterator<Item = &Path> {
        let system = self.system_entries.min(self.read.len());
        self.read
            .get(system..)
            .unwrap_or_default()
            .iter()
            .chain(&self.exec)
            .chain(&self.write)
            .map(PathBuf::as_path)
    }

    /// Every path the policy grants anything on.
    pub fn granted(&self) -> impl Iterator<Item = &Path> {
        self.read
            .iter()
            .chain(&self.exec)
            .chain(&self.write)
            .map(PathBuf::as_path)
    }

    /// `airlock check`'s lines for this policy, indented by `indent`.
    pub fn describe(&self, indent: &str) -> String {
        let list = |paths: &[PathBuf]| {
            if paths.is_empty() {
                "nothing".to_owned()
            } else {
                paths
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        };
        let mut out = String::new();
        out.push_str(&format!("{indent}exec:      {}\n", list(&self.exec)));
        out.push_str(&format!(
            "{indent}read:      {} (system: {})\n",
            list(
                self.read
                    .get(self.system_entries.min(self.read.len())..)
                    .unwrap_or_default()
            ),
            self.read
                .get(..self.system_entries.min(self.read.len()))
                .unwrap_or_default()
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ));
        let mut write = self.write.clone();
        write.extend(SYSTEM_WRITE_FILES.iter().map(PathBuf::from));
        out.push_str(&format!("{indent}write:     {}\n", list(&write)));
        out.push_str(&format!(
            "{indent}network:   {}\n",
            if self.network {
                format!(
                    "{} only, through airlock's proxy (HTTP, CONNECT, SOCKS5 at {}; names \
                     resolved by airlock, loopback, private and link-local addresses refused \
                     unless named by address); a namespace with only loopback, no route out, \
                     never a unix socket; per call {} connections, {} MiB up, {} MiB down",
                    self.destinations.describe(),
                    super::proxy::PROXY_ADDRESS,
                    self.resources.network_connections,
                    self.resources.network_up_mib,
                    self.resources.network_down_mib
                )
            } else if super::support::landlock_handles_tcp() {
                "none: a network namespace of its own with no interface up, no socket but a \
                 unix stream or seqpacket socketpair and TCP, whose bind/connect Landlock \
                 refuses (and reports)"
                    .to_owned()
            } else {
                "none: a network namespace of its own with no interface up, no socket but a \
                 unix stream or seqpacket socketpair, TCP bind/connect refused"
                    .to_owned()
            }
        ));
        let later = super::later_code::LATER_CODE
            .iter()
            .map(|(name, _)| *name)
            .take(6)
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(
            "{indent}view:      a root of its own holding only the paths above (and /dev/null), \
             read-only, nosuid, nodev{}; nothing else exists (no /proc, /sys, /tmp, home)\n",
            if self.write.is_empty() {
                String::new()
            } else {
                format!(
                    " but the write directories; inside them {later} … ({} names, at any \
                     depth) stay read-only, and a call's new ones are removed",
                    super::later_code::LATER_CODE.len()
                )
            }
        ));
        out.push_str(&format!(
            "{indent}syscalls:  {}\n",
            super::syscalls::summary(super::syscalls::Sockets::of(
                self.network,
                super::support::landlock_handles_tcp()
            ))
        ));
        out.push_str(&format!(
            "{indent}budgets:   {}\n",
            self.resources.describe()
        ));
        out
    }
}

/// The fixed system list (and the network's, with `network`), canonical, without what this
/// machine lacks and without repeats, each with its device and inode.
fn system_read(network: bool) -> &'static [(PathBuf, (u64, u64))] {
    use std::os::unix::fs::MetadataExt as _;
    type Entries = Vec<(PathBuf, (u64, u64))>;
    static PLAIN: std::sync::OnceLock<Entries> = std::sync::OnceLock::new();
    static NETWORK: std::sync::OnceLock<Entries> = std::sync::OnceLock::new();
    let (cell, extra): (_, &[&str]) = if network {
        (&NETWORK, NETWORK_READ)
    } else {
        (&PLAIN, &[])
    };
    cell.get_or_init(|| {
        let mut read: Entries = Vec::new();
        for path in SYSTEM_READ
            .iter()
            .chain(extra)
            .filter_map(|path| std::fs::canonicalize(path).ok())
        {
            // `/usr/bin` adds nothing once `/usr` is there (`/bin` is `/usr/bin` when merged).
            if read.iter().any(|(seen, _)| path.starts_with(seen)) {
                continue;
            }
            if let Ok(meta) = std::fs::metadata(&path) {
                read.push((path, (meta.dev(), meta.ino())));
            }
        }
        read
    })
}

/// What a manifest entry declares for its sandbox, checked and canonical.
///
/// A CLI that runs programs from its own tools (the library's command runner,
/// [`crate::process::run`] with a [`super::Confinement`]) declares the same policy a
/// manifest does, network by destination included:
///
/// ```
/// use std::path::Path;
///
/// use airlock_manifest::sandbox::destinations::{Destinations, parse_destination};
/// use airlock_manifest::sandbox::{Confinement, Declared, Policy};
///
/// let destinations = Destinations {
///     any_public: false,
///     rules: vec![parse_destination("api.github.com:443")?],
/// };
/// let declared = Declared {
///     network: true,
///     destinations,
///     ..Declared::default()
/// };
/// let policy = Policy::for_command(Path::new("/usr/bin/curl"), Path::new("/"), declared);
/// assert!(policy.describe("").contains("api.github.com:443 only, through airlock's proxy"));
/// let confinement = Confinement::new(policy)?; // for `CommandSpec::sandbox`
/// # drop(confinement);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Declared {
    /// The `within` roots of the tool's path arguments.
    pub roots: Vec<PathBuf>,
    /// `read = [...]`.
    pub read: Vec<PathBuf>,
    /// `exec = [...]`.
    pub exec: Vec<PathBuf>,
    /// `write = [...]`.
    pub write: Vec<PathBuf>,
    /// `network = true` or a list: the command has a network (through the proxy).
    pub network: bool,
    /// Where: the list, or any public destination.
    pub destinations: Destinations,
    /// `resources = { ... }`, over the defaults.
    pub resources: Resources,
    /// Paths the command is started by or reaches by name as written, not canonical (the
    /// program as `PATH` found it, `/bin/bash` where `/bin` is a link): the view recreates
    /// the symbolic links on the way.
    pub written: Vec<PathBuf>,
}

/// The symbolic links directly under `/` (`/bin`, `/lib64` on merged systems): the names
/// programs, scripts and ELF interpreters are written with.
fn top_level_links() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_symlink()))
        .map(|entry| entry.path())
        .collect()
}

/// The symbolic links met on the way to each of `paths` outside every tree of `bound`, as
/// `(link, target)`, without repeats: what a view holding only `bound` needs so that `paths`
/// still resolve the same way.
fn links_along(paths: &[PathBuf], bound: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    use std::collections::VecDeque;
    use std::path::Component;
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    for path in paths {
        let mut pending: VecDeque<std::ffi::OsString> = VecDeque::new();
        for component in path.components() {
            match component {
                Component::Normal(name) => pending.push_back(name.to_os_string()),
                Component::ParentDir => pending.push_back("..".into()),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        let mut current = PathBuf::from("/");
        let mut hops = 0_u32;
        while let Some(name) = pending.pop_front() {
            if name == ".." {
                current.pop();
                continue;
            }
            let next = current.join(&name);
            let Ok(meta) = std::fs::symlink_metadata(&next) else {
                break;
            };
            if !meta.file_type().is_symlink() {
                current = next;
                continue;
            }
            let Ok(target) = std::fs::read_link(&next) else {
                break;
            };
            hops = hops.saturating_add(1);
            if hops > MAX_LINK_HOPS {
                break;
            }
            // A link inside a bound tree is in the view already, but where it leads may not
            // be (`/usr/bin/awk` -> `/etc/alternatives/awk` -> `/usr/bin/mawk`): follow it
            // and recreate only the links outside every tree.
            let inside = bound.iter().any(|tree| next.starts_with(tree));
            if !inside && !links.iter().any(|(link, _)| *link == next) {
                links.push((next, target.clone()));
            }
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            let mut ahead: VecDeque<std::ffi::OsString> = VecDeque::new();
            for component in target.components() {
                match component {
                    Component::Normal(part) => ahead.push_back(part.to_os_string()),
                    Component::ParentDir => ahead.push_back("..".into()),
                    Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                }
            }
            ahead.extend(pending);
            pending = ahead;
        }
    }
    links
}

/// Links followed on the way to one path before giving up (the kernel's own bound is 40).
const MAX_LINK_HOPS: u32 = 40;

/// The interpreters `program` names, as it writes them (not canonical): its ELF loader's
/// path, or its `#!` line's program, and theirs in turn.
fn written_interpreters(program: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut next = Some(program.to_path_buf());
    for _ in 0..MAX_INTERPRETER_DEPTH {
        let Some(current) = next.take() else { break };
        let Some(head) = read_head(&current) else {
            break;
        };
        if let Some(loader) = elf_interpreter(&head) {
            found.push(loader);
            break;
        }
        let Some((interpreter, _)) = shebang(&head) else {
            break;
        };
        found.push(interpreter.clone());
        next = Some(interpreter);
    }
    found
}

/// The programs the kernel runs to start `program`: its ELF interpreter (the dynamic loader),
/// or for a script its `#!` interpreter (and that one's loader; `#!/usr/bin/env NAME` adds
/// NAME as found in `PATH` now). Each must be executable inside the sandbox.
pub fn interpreters(program: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut next = Some(program.to_path_buf());
    // A script's interpreter may be a script too; the kernel follows a few levels, so do we.
    for _ in 0..MAX_INTERPRETER_DEPTH {
        let Some(current) = next.take() else { break };
        let Some(head) = read_head(&current) else {
            break;
        };
        if let Some(loader) = elf_interpreter(&head) {
            push_canonical(&mut found, &loader);
            break;
        }
        let Some((interpreter, argument)) = shebang(&head) else {
            break;
        };
        push_canonical(&mut found, &interpreter);
        let is_env = interpreter.file_name().is_some_and(|name| name == "env");
        next = match argument {
            Some(name) if is_env && !name.contains('/') && !name.starts_with('-') => {
                let resolved = crate::locate::resolve_program(&name, Path::new("/"));
                if let Some(resolved) = &resolved {
                    push_canonical(&mut found, resolved);
                }
                resolved
            }
            _ => Some(interpreter),
        };
    }
    found
}

fn push_canonical(found: &mut Vec<PathBuf>, path: &Path) {
    // Every tool's program has the same loader: resolve each interpreter once per process.
    static SEEN: std::sync::Mutex<std::collections::BTreeMap<PathBuf, PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let cached = SEEN.lock().ok().and_then(|seen| seen.get(path).cloned());
    let canonical = cached.unwrap_or_else(|| {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Ok(mut seen) = SEEN.lock() {
            seen.insert(path.to_path_buf(), canonical.clone());
        }
        canonical
    });
    if !found.contains(&canonical) {
        found.push(canonical);
    }
}

/// The first bytes of a file, enough for an ELF header and its program headers.
fn read_head(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    file.take(HEAD_BYTES).read_to_end(&mut head).ok()?;
    Some(head)
}

/// The `PT_INTERP` path of a 64-bit little-endian ELF file, if it has one.
fn elf_interpreter(file: &[u8]) -> Option<PathBuf> {
    const PT_INTERP: u32 = 3;
    if file.get(..4)? != b"\x7fELF" || *file.get(4)? != 2 || *file.get(5)? != 1 {
        return None;
    }
    let phoff = usize::try_from(u64::from_le_bytes(file.get(32..40)?.try_into().ok()?)).ok()?;
    let entry_size = usize::from(u16::from_le_bytes(file.get(54..56)?.try_into().ok()?));
    let count = usize::from(u16::from_le_bytes(file.get(56..58)?.try_into().ok()?));
    if entry_size < 56 {
        return None;
    }
    for index in 0..count {
        let start = phoff.checked_add(index.checked_mul(entry_size)?)?;
        let header = file.get(start..start.checked_add(56)?)?;
        if u32::from_le_bytes(header.get(0..4)?.try_into().ok()?) != PT_INTERP {
            continue;
        }
        let offset =
            usize::try_from(u64::from_le_bytes(header.get(8..16)?.try_into().ok()?)).ok()?;
        let size =
            usize::try_from(u64::from_le_bytes(header.get(32..40)?.try_into().ok()?)).ok()?;
        let raw = file.get(offset..offset.checked_add(size)?)?;
        let text = std::str::from_utf8(raw.split(|byte| *byte == 0).next()?).ok()?;
        return text.starts_with('/').then(|| PathBuf::from(text));
    }
    None
}

/// `#!interpreter [argument]` of a script.
fn shebang(file: &[u8]) -> Option<(PathBuf, Option<String>)> {
    let rest = file.strip_prefix(b"#!")?;
    let line = rest.split(|byte| *byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim();
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    if !interpreter.starts_with('/') {
        return None;
    }
    Some((PathBuf::from(interpreter), words.next().map(str::to_owned)))
}

/// Levels of `#!` followed.
const MAX_INTERPRETER_DEPTH: usize = 4;

/// Bytes of a program read to find its interpreter: the ELF header, the program headers and
/// the interpreter's path sit in the first page of every linker's output.
const HEAD_BYTES: u64 = 8 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_program_needs_its_loader() {
        let found = interpreters(Path::new("/usr/bin/ls"));
        assert_eq!(found.len(), 1, "{found:?}");
        let loader = found[0].to_string_lossy().into_owned();
        assert!(loader.contains("ld-linux"), "{loader}");
    }

    #[test]
    fn a_script_needs_its_interpreter_and_its_loader() {
        let dir = std::env::temp_dir().join(format!("airlock-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("script");
        std::fs::write(&script, "#!/bin/sh -e\necho hi\n").unwrap();
        let found = interpreters(&script);
        assert_eq!(found[0], std::fs::canonicalize("/bin/sh").unwrap());
        assert!(found.len() == 2, "{found:?}");
        std::fs::write(&script, "#!/usr/bin/env sh\necho hi\n").unwrap();
        let found = interpreters(&script);
        assert!(found.iter().any(|path| path.ends_with("env")), "{found:?}");
        assert!(
            found
                .iter()
                .any(|path| path.ends_with("dash") || path.ends_with("sh")),
            "{found:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The shape of `/usr/bin/awk` -> `/etc/alternatives/awk` -> `/usr/bin/mawk`: a link in
    /// a bound tree leading out of it and back. The link outside is recreated; the one
    /// inside is in the view already.
    #[test]
    fn a_link_inside_a_bound_tree_that_leads_out_is_followed() {
        use std::os::unix::fs::symlink;
        let dir = std::env::temp_dir().join(format!("airlock-links-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
        std::fs::create_dir_all(dir.join("usr/bin")).unwrap();
        std::fs::create_dir_all(dir.join("etc/alternatives")).unwrap();
        std::fs::write(dir.join("usr/bin/mawk"), "").unwrap();
        symlink(dir.join("etc/alternatives/awk"), dir.join("usr/bin/awk")).unwrap();
        symlink(dir.join("usr/bin/mawk"), dir.join("etc/alternatives/awk")).unwrap();
        let links = links_along(&[dir.join("usr/bin/awk")], &[dir.join("usr")]);
        assert_eq!(
            links,
            vec![(dir.join("etc/alternatives/awk"), dir.join("usr/bin/mawk"))]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn malformed_elf_headers_find_nothing_and_never_panic() {
        let mut header = b"\x7fELF\x02\x01".to_vec();
        header.resize(64, 0xff);
        assert_eq!(elf_interpreter(&header), None);
        assert_eq!(elf_interpreter(b"\x7fEL"), None);
        assert_eq!(elf_interpreter(b""), None);
        assert_eq!(shebang(b"#!relative\n"), None);
        assert_eq!(shebang(b"#!"), None);
    }

    #[test]
    fn the_policy_grants_the_workdir_roots_and_declared_paths_only() {
        let dir = std::env::temp_dir().join(format!("airlock-grants-{}", std::process::id()));
        for sub in ["work/out", "data"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let dir = std::fs::canonicalize(dir).unwrap();
        let declared = Declared {
            roots: vec![dir.join("data")],
            write: vec![dir.join("work/out")],
            ..Declared::default()
        };
        let policy = Policy::for_command(Path::new("/usr/bin/ls"), &dir.join("work"), declared);
        assert!(policy.read.contains(&dir.join("work")));
        assert!(policy.read.contains(&dir.join("data")));
        assert!(!policy.read.iter().any(|path| path == Path::new("/etc")));
        assert!(!policy.read.iter().any(|path| path.starts_with("/proc")));
        assert_eq!(policy.write, vec![dir.join("work/out")]);
        assert!(!policy.network);
        let described = policy.describe("  ");
        assert!(described.contains("network:   none"), "{described}");
        assert!(
            described.contains("view:      a root of its own"),
            "{described}"
        );
        assert!(described.contains("syscalls:  allowlist of"), "{described}");
        // Every granted path is canonical and has its identity recorded.
        for path in policy.granted() {
            assert_eq!(std::fs::canonicalize(path).unwrap(), path);
            assert!(policy.identities.contains_key(path), "{}", path.display());
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn paths_that_do_not_exist_grant_nothing() {
        let policy = Policy::for_command(
            Path::new("/usr/bin/ls"),
            Path::new("/nonexistent/airlock-work"),
            Declared::default(),
        );
        assert!(
            !policy
                .granted()
                .any(|path| path.starts_with("/nonexistent"))
        );
    }
}
