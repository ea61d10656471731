//! Budgets per call, kept by the kernel: every launcher, and so every call it serves (one at a
//! time), runs in a cgroup of its own with a memory limit, a process limit and a CPU weight.
//!
//! `RLIMIT_AS` and `RLIMIT_NPROC` bound each process; a call of 64 processes could still hold
//! 64 times the address-space limit, and 480 busy processes of 8 calls took the CPU from
//! airlock's own threads (a ping went from 0.2 ms to a 52–87 ms median). A cgroup bounds what
//! the call holds in total, page cache included, and shares the CPU by weight:
//!
//! | controller | file (v1 / v2) | value |
//! |---|---|---|
//! | memory | `memory.limit_in_bytes` / `memory.max` | `call_memory_mib` (past it the kernel's OOM killer ends a process of that call, never one outside it) |
//! | pids | `pids.max` | `processes` + the launcher's own two |
//! | cpu | `cpu.shares` / `cpu.weight` of the one group of every call, beside airlock's threads | [`SANDBOX_CALLS_CPU_SHARES`]: all calls together weigh what one ordinary process does |
//!
//! # Where the groups go
//!
//! Under airlock's own cgroup in each hierarchy (`/proc/self/cgroup`), so a delegated subtree
//! (systemd `Delegate=yes`, a container's cgroup namespace, a directory `chown`ed to airlock's
//! user) is enough; root may create them anywhere. On cgroup v1 (separate `memory`, `pids` and
//! `cpu` hierarchies, as on this project's CI machines) the `memory` and `pids` hierarchies get
//! `airlock-<pid>/<launcher>`, and the `cpu` hierarchy one `airlock-<pid>` that every launcher
//! joins, beside airlock's own threads (which stay where they are). On cgroup v2 (one
//! hierarchy) airlock moves itself into `airlock-<pid>/server` (a cgroup may not both hold
//! processes and hand controllers to its children), and launchers get
//! `airlock-<pid>/calls/<launcher>`, where only `memory` and `pids` are enabled.
//!
//! The CPU is one share for all calls, not one per launcher: groups that sleep between calls
//! get a share that sleeping shrinks, and 8 of them made calls wait up to 16 ms for the CPU at
//! 8 at once. The share is one ordinary process's weight, not less: an eighth of it, tried
//! first, made calls on a busy host wait behind every other process.
//!
//! A launcher joins its group itself, first thing, by writing `0` to each `cgroup.procs`
//! airlock names on its command line: before it starts any other process, so nothing of the
//! call begins outside. airlock removes the group once the launcher is reaped (every process
//! of its namespace is gone by then), and at start removes the empty groups of airlocks that
//! are no longer running.
//!
//! Where none of this is possible (no controller, no write access), [`probe`] says why; the
//! server then refuses to start unless `--sandbox best-effort`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::limits::SANDBOX_CALLS_CPU_SHARES;

use super::Resources;

/// A controller the budgets use.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Controller {
    /// Memory of the call.
    Memory,
    /// Processes of the call.
    Pids,
    /// CPU weight of all calls.
    Cpu,
}

impl Controller {
    const ALL: [Self; 3] = [Self::Memory, Self::Pids, Self::Cpu];

    /// The controller's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Pids => "pids",
            Self::Cpu => "cpu",
        }
    }
}

/// Which cgroup version a controller is mounted in.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Version {
    /// A hierarchy of its own (or shared with other v1 controllers).
    V1,
    /// The unified hierarchy.
    V2,
}

/// Where one controller's groups go: airlock's own cgroup in its hierarchy.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Place {
    /// The controller.
    pub controller: Controller,
    /// Its hierarchy's version.
    pub version: Version,
    /// airlock's own cgroup directory in that hierarchy.
    pub own: PathBuf,
}

/// Why airlock cannot make the per-call cgroups here, in a sentence for `airlock check`.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupError {
    /// A file of `/proc/self` airlock reads its groups from.
    #[error("{file} is unreadable")]
    Unreadable {
        /// The file.
        file: &'static str,
    },
    /// airlock's own group does not let it create groups below.
    #[error("airlock may not create cgroups in {} (its own {controller} cgroup)", .own.display())]
    MayNotCreate {
        /// airlock's own group.
        own: PathBuf,
        /// The controller's name.
        controller: &'static str,
    },
    /// airlock is in no group of a cgroup v1 controller's hierarchy.
    #[error("airlock is in no {controller} cgroup")]
    NotInV1Group {
        /// The controller's name.
        controller: &'static str,
    },
    /// No hierarchy offers a controller.
    #[error("no cgroup hierarchy has the {controller} controller")]
    NoHierarchy {
        /// The controller's name.
        controller: &'static str,
    },
    /// airlock is in no cgroup v2 group.
    #[error("airlock is in no cgroup v2 group")]
    NotInV2Group,
    /// airlock's v2 group does not offer a controller.
    #[error(
        "the {controller} controller is not available in airlock's cgroup {}",
        .own.display()
    )]
    Unavailable {
        /// The controller's name.
        controller: &'static str,
        /// airlock's own group.
        own: PathBuf,
    },
    /// A step of making the groups failed: what was being done, and where.
    #[error("{doing} {}", .path.display())]
    Failed {
        /// What airlock was doing (`creating`, `moving airlock into`, …).
        doing: &'static str,
        /// The group.
        path: PathBuf,
    },
}

/// Finds where each controller lives and whether airlock may create groups there (a probe
/// group is created and removed). `Err` says what is missing.
///
/// # Errors
///
/// A controller that is not mounted, or a cgroup airlock may not create groups in.
pub(crate) fn probe() -> Result<Vec<Place>, CgroupError> {
    let unreadable = |file| move |_| CgroupError::Unreadable { file };
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(unreadable("/proc/self/mountinfo"))?;
    let membership =
        std::fs::read_to_string("/proc/self/cgroup").map_err(unreadable("/proc/self/cgroup"))?;
    let places = places(&mountinfo, &membership, |dir, controller| {
        std::fs::read_to_string(dir.join("cgroup.controllers"))
            .is_ok_and(|text| text.split_whitespace().any(|name| name == controller))
    })?;
    for place in &places {
        let probe = place
            .own
            .join(format!("airlock-probe-{}", std::process::id()));
        match std::fs::create_dir(&probe) {
            Ok(()) => {
                let _removed = std::fs::remove_dir(&probe);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => {
                return Err(CgroupError::MayNotCreate {
                    own: place.own.clone(),
                    controller: place.controller.name(),
                });
            }
        }
    }
    Ok(places)
}

/// The places of the three controllers, from `/proc/self/mountinfo` and `/proc/self/cgroup`;
/// `v2_has(dir, name)` says whether a v2 cgroup directory offers a controller.
fn places(
    mountinfo: &str,
    membership: &str,
    v2_has: impl Fn(&Path, &str) -> bool,
) -> Result<Vec<Place>, CgroupError> {
    // (mount point, root within the hierarchy, fstype, super options) of cgroup mounts.
    let mounts: Vec<(PathBuf, String, String, String)> = mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let root = (*fields.get(3)?).to_owned();
            let point = PathBuf::from(unescape(fields.get(4)?));
            let mut after = after.split(' ');
            let fstype = after.next()?.to_owned();
            let _source = after.next()?;
            let options = after.next().unwrap_or_default().to_owned();
            (fstype == "cgroup" || fstype == "cgroup2").then_some((point, root, fstype, options))
        })
        .collect();
    let mut places = Vec::new();
    for controller in Controller::ALL {
        let name = controller.name();
        let v1 = mounts.iter().find(|(_, _, fstype, options)| {
            fstype == "cgroup" && options.split(',').any(|option| option == name)
        });
        let place = if let Some((point, root, _, _)) = v1 {
            let path = membership
                .lines()
                .filter_map(|line| {
                    let mut parts = line.splitn(3, ':');
                    let _hierarchy = parts.next()?;
                    parts.next().zip(parts.next())
                })
                .find(|(controllers, _)| controllers.split(',').any(|c| c == name))
                .map(|(_, path)| path)
                .ok_or(CgroupError::NotInV1Group { controller: name })?;
            Place {
                controller,
                version: Version::V1,
                own: within(point, root, path),
            }
        } else {
            let (point, root, _, _) = mounts
                .iter()
                .find(|(_, _, fstype, _)| fstype == "cgroup2")
                .ok_or(CgroupError::NoHierarchy { controller: name })?;
            let path = membership
                .lines()
                .find_map(|line| line.strip_prefix("0::"))
                .ok_or(CgroupError::NotInV2Group)?;
            let own = within(point, root, path);
            if !v2_has(&own, name) {
                return Err(CgroupError::Unavailable {
                    controller: name,
                    own,
                });
            }
            Place {
                controller,
                version: Version::V2,
                own,
            }
        };
        places.push(place);
    }
    Ok(places)
}

/// A cgroup path from `/proc/self/cgroup` as a directory under the hierarchy's mount point,
/// whose root within the hierarchy is `root`.
fn within(point: &Path, root: &str, path: &str) -> PathBuf {
    let relative = Path::new(path)
        .strip_prefix(root)
        .unwrap_or_else(|_| Path::new(path));
    let relative = relative.strip_prefix("/").unwrap_or(relative);
    point.join(relative)
}

/// A mountinfo field with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let mut out = Vec::with_capacity(field.len());
    let bytes = field.as_bytes();
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        let escaped = bytes
            .get(index.saturating_add(1)..index.saturating_add(4))
            .filter(|digits| byte == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok());
        if let Some(value) = escaped {
            out.push(value);
            index = index.saturating_add(4);
        } else {
            out.push(byte);
            index = index.saturating_add(1);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// airlock's groups for calls, created once.
#[derive(Debug)]
pub(crate) struct Calls {
    /// Where each launcher gets a group of its own, by controller (memory, pids): the parent
    /// directory.
    per_launcher: Vec<(Controller, Version, PathBuf)>,
    /// The `cgroup.procs` files every launcher also joins: on cgroup v1, the `cpu` group of
    /// all calls (`airlock-<pid>`).
    shared: Vec<PathBuf>,
}

/// The groups for calls, created on first use; `Err` says why they could not be.
pub(crate) fn calls() -> Result<&'static Calls, &'static str> {
    static CALLS: OnceLock<Result<Calls, CgroupError>> = OnceLock::new();
    CALLS
        .get_or_init(|| {
            let places = probe()?;
            Calls::create(&places)
        })
        .as_ref()
        .map_err(|_| "the per-call cgroups could not be created")
}

impl Calls {
    /// Creates airlock's groups (on v2, moving airlock into `server`, beside `calls`).
    ///
    /// The CPU is one group for every call together, beside airlock, not a group per
    /// launcher: groups that are idle most of the time and wake for a call each get a share
    /// that sleeping shrinks, and 8 of them made calls wait up to 16 ms for the CPU at 8 at
    /// once (p90; 1.5 ms with one group). Memory and processes are per launcher: they are the
    /// call's budgets.
    fn create(places: &[Place]) -> Result<Self, CgroupError> {
        let pid = std::process::id();
        let failed = |doing: &'static str, path: &Path| CgroupError::Failed {
            doing,
            path: path.to_path_buf(),
        };
        let mut per_launcher = Vec::new();
        let mut shared = Vec::new();
        for place in places.iter().filter(|place| place.version == Version::V1) {
            remove_stale(&place.own);
            let top = place.own.join(format!("airlock-{pid}"));
            make_dir(&top).map_err(|()| failed("creating", &top))?;
            if place.controller != Controller::Cpu {
                per_launcher.push((place.controller, Version::V1, top));
                continue;
            }
            // airlock stays where it is; all calls together are one group beside it, weighing
            // what one ordinary process does.
            write(
                &top.join("cpu.shares"),
                &SANDBOX_CALLS_CPU_SHARES.to_string(),
            )
            .map_err(|()| failed("setting the CPU shares of", &top))?;
            shared.push(top.join("cgroup.procs"));
        }
        let v2: Vec<Controller> = places
            .iter()
            .filter(|place| place.version == Version::V2)
            .map(|place| place.controller)
            .collect();
        if let Some(own) = places
            .iter()
            .find(|place| place.version == Version::V2)
            .map(|place| place.own.clone())
        {
            remove_stale(&own);
            let enable = |controllers: &[Controller]| {
                controllers
                    .iter()
                    .map(|controller| format!("+{}", controller.name()))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let top = own.join(format!("airlock-{pid}"));
            let (server, calls) = (top.join("server"), top.join("calls"));
            for dir in [&top, &server, &calls] {
                make_dir(dir).map_err(|()| failed("creating", dir))?;
            }
            // A v2 cgroup with processes may not give controllers to its children (but the
            // root): airlock leaves its own for `server` first.
            write(&server.join("cgroup.procs"), "0")
                .map_err(|()| failed("moving airlock into", &server))?;
            let is_root = !own.join("cgroup.type").exists();
            if !is_root {
                write(&own.join("cgroup.subtree_control"), &enable(&v2)).map_err(|()| {
                    failed(
                        "enabling the controllers (other processes share airlock's cgroup?) in",
                        &own,
                    )
                })?;
            }
            write(&top.join("cgroup.subtree_control"), &enable(&v2))
                .map_err(|()| failed("enabling the controllers in", &top))?;
            if v2.contains(&Controller::Cpu) {
                write(&calls.join("cpu.weight"), &v2_weight().to_string())
                    .map_err(|()| failed("setting the CPU weight of", &calls))?;
            }
            // Below `calls`, memory and processes only: the CPU stays one share for all.
            let below: Vec<Controller> = v2
                .iter()
                .copied()
                .filter(|controller| *controller != Controller::Cpu)
                .collect();
            write(&calls.join("cgroup.subtree_control"), &enable(&below))
                .map_err(|()| failed("enabling the controllers in", &calls))?;
            for controller in below {
                per_launcher.push((controller, Version::V2, calls.clone()));
            }
        }
        Ok(Self {
            per_launcher,
            shared,
        })
    }
}

/// `cpu.weight` (1 to 10,000, 100 the default) for the v1 shares (2 to 262,144, 1024 the
/// default) of all calls together.
fn v2_weight() -> u64 {
    SANDBOX_CALLS_CPU_SHARES
        .saturating_mul(100)
        .checked_div(1024)
        .unwrap_or(1)
        .clamp(1, 10_000)
}

/// One launcher's cgroups. Dropping it removes them: drop it once the launcher is reaped.
#[derive(Debug)]
pub(crate) struct Group {
    /// The group's directory in each hierarchy, with its version.
    dirs: Vec<(Controller, Version, PathBuf)>,
    /// The groups it joins beside its own (`Calls::shared`).
    shared: Vec<PathBuf>,
    /// The files holding the kernel's tallies (OOM kills, refused forks), opened once: read
    /// after every call, where opening them each time would cost a path walk per file.
    tallies: Vec<(Tally, std::fs::File)>,
}

/// Which tally a file holds.
#[derive(Clone, Copy, Debug)]
enum Tally {
    OomKills,
    ForksRefused,
}

/// What a launcher's group counted: the kernel's own tallies, which only grow.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub(crate) struct Events {
    /// Processes the OOM killer ended because the group passed its memory limit.
    pub(crate) oom_kills: u64,
    /// Forks refused because the group was at its process limit.
    pub(crate) forks_refused: u64,
}

impl Group {
    /// Creates a launcher's group under `calls` with `resources`' limits.
    pub(crate) fn create(calls: &Calls, resources: &Resources) -> Result<Self, &'static str> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("l{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let mut group = Self {
            dirs: Vec::new(),
            shared: calls.shared.clone(),
            tallies: Vec::new(),
        };
        for (controller, version, parent) in &calls.per_launcher {
            let dir = parent.join(&name);
            if !group.dirs.iter().any(|(_, _, made)| *made == dir) {
                make_dir(&dir).map_err(|()| "creating a launcher's cgroup")?;
            }
            // Pushed at once, so a failure below still removes it.
            group.dirs.push((*controller, *version, dir.clone()));
            let bytes = resources.call_memory_mib.saturating_mul(1024 * 1024);
            // The launcher (and in a user namespace its first stage) besides the call's.
            let processes = u64::from(resources.processes).saturating_add(LAUNCHER_PROCESSES);
            let settings: &[(&str, String)] = match (controller, version) {
                (Controller::Memory, Version::V1) => {
                    &[("memory.limit_in_bytes", bytes.to_string())]
                }
                (Controller::Memory, Version::V2) => &[("memory.max", bytes.to_string())],
                (Controller::Pids, _) => &[("pids.max", processes.to_string())],
                // Shared by all calls (`Calls::shared`), never per launcher.
                (Controller::Cpu, _) => &[],
            };
            for (file, value) in settings {
                write(&dir.join(file), value).map_err(|()| "setting a launcher's budget")?;
            }
            // No swap beyond the memory limit where swap is accounted; absent otherwise.
            let swap = match (controller, version) {
                (Controller::Memory, Version::V1) => Some(("memory.memsw.limit_in_bytes", bytes)),
                (Controller::Memory, Version::V2) => Some(("memory.swap.max", 0)),
                _ => None,
            };
            if let Some((file, value)) = swap {
                let path = dir.join(file);
                if path.exists() {
                    write(&path, &value.to_string())
                        .map_err(|()| "setting a launcher's swap budget")?;
                }
            }
        }
        for (controller, version, dir) in &group.dirs {
            let (tally, file) = match (controller, version) {
                (Controller::Memory, Version::V1) => (Tally::OomKills, "memory.oom_control"),
                (Controller::Memory, Version::V2) => (Tally::OomKills, "memory.events"),
                (Controller::Pids, _) => (Tally::ForksRefused, "pids.events"),
                (Controller::Cpu, _) => continue,
            };
            // A kernel without the file keeps no such tally: the count stays 0.
            if let Ok(file) = std::fs::File::open(dir.join(file)) {
                group.tallies.push((tally, file));
            }
        }
        Ok(group)
    }

    /// The `cgroup.procs` files the launcher writes itself into, each once.
    pub(crate) fn procs(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for file in self
            .dirs
            .iter()
            .map(|(_, _, dir)| dir.join("cgroup.procs"))
            .chain(self.shared.iter().cloned())
        {
            if !files.contains(&file) {
                files.push(file);
            }
        }
        files
    }

    /// The kernel's tallies so far (0 for one it does not keep).
    pub(crate) fn events(&self) -> Events {
        let mut events = Events::default();
        let mut buffer = [0_u8; 512];
        for (tally, file) in &self.tallies {
            let read = rustix::io::pread(file, &mut buffer, 0).unwrap_or(0);
            let text = std::str::from_utf8(buffer.get(..read).unwrap_or_default()).unwrap_or("");
            match tally {
                Tally::OomKills => events.oom_kills = count(text, "oom_kill"),
                Tally::ForksRefused => events.forks_refused = count(text, "max"),
            }
        }
        events
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for (_, _, dir) in &self.dirs {
            // Reaped a moment ago: the kernel may still be letting go of the last tasks.
            for _ in 0..REMOVE_ATTEMPTS {
                match std::fs::remove_dir(dir) {
                    Err(error) if error.kind() == std::io::ErrorKind::ResourceBusy => {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    _ => break,
                }
            }
        }
    }
}

/// Tries at removing a launcher's group that the kernel still calls busy.
const REMOVE_ATTEMPTS: u32 = 50;

/// Processes of a launcher besides its call's: the launcher, and in a user namespace its
/// first stage.
const LAUNCHER_PROCESSES: u64 = 2;

/// `key N` from the text of a flat-keyed cgroup file; 0 without it.
fn count(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            (name == key).then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Removes the groups left by airlocks that no longer run (empty ones only: the kernel
/// refuses to remove a group with processes).
fn remove_stale(own: &Path) {
    let Ok(entries) = std::fs::read_dir(own) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix("airlock-"))
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = rustix::process::Pid::from_raw(pid)
            .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
        if alive {
            continue;
        }
        remove_tree(&entry.path(), 0);
    }
}

/// Removes a cgroup directory and its child groups, deepest first (a cgroup's files cannot be
/// removed, only its directory).
fn remove_tree(dir: &Path, depth: u32) {
    if depth > 4 {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                remove_tree(&entry.path(), depth.saturating_add(1));
            }
        }
    }
    let _removed = std::fs::remove_dir(dir);
}

fn make_dir(dir: &Path) -> Result<(), ()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(_) => Err(()),
    }
}

fn write(file: &Path, value: &str) -> Result<(), ()> {
    std::fs::write(file, value).map_err(|_| ())
}

/// Writes `0` (the writing process) into each of `procs`: the launcher joins its group.
///
/// # Errors
///
/// A file that could not be written.
pub(crate) fn join(procs: &[PathBuf]) -> Result<(), std::io::ErrorKind> {
    for file in procs {
        std::fs::write(file, "0").map_err(|error| error.kind())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_MOUNTS: &str = "\
22 1 0:21 / /sys rw,relatime - sysfs sysfs rw
30 22 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const V1_MEMBERSHIP: &str = "\
8:pids:/
4:memory:/process_api/54ca
1:cpu:/
0::/
";

    #[test]
    fn v1_controllers_are_found_in_their_own_hierarchies() {
        let found = places(V1_MOUNTS, V1_MEMBERSHIP, |_, _| false).unwrap();
        assert_eq!(
            found,
            [
                Place {
                    controller: Controller::Memory,
                    version: Version::V1,
                    own: PathBuf::from("/sys/fs/cgroup/memory/process_api/54ca"),
                },
                Place {
                    controller: Controller::Pids,
                    version: Version::V1,
                    own: PathBuf::from("/sys/fs/cgroup/pids"),
                },
                Place {
                    controller: Controller::Cpu,
                    version: Version::V1,
                    own: PathBuf::from("/sys/fs/cgroup/cpu"),
                },
            ]
        );
    }

    #[test]
    fn v2_controllers_need_to_be_offered_where_airlock_is() {
        let mounts = "40 30 0:36 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n";
        let membership = "0::/system.slice/airlock.service\n";
        let found = places(mounts, membership, |dir, _| {
            dir == Path::new("/sys/fs/cgroup/system.slice/airlock.service")
        })
        .unwrap();
        assert!(found.iter().all(|place| place.version == Version::V2));
        let missing = places(mounts, membership, |_, name| name != "pids").unwrap_err();
        assert!(
            matches!(
                missing,
                CgroupError::Unavailable {
                    controller: "pids",
                    ..
                }
            ),
            "{missing}"
        );
    }

    #[test]
    fn a_container_cgroup_namespace_root_is_taken_off_the_path() {
        let mounts = "40 30 0:36 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let found = places(mounts, "0::/docker/abc/inner\n", |_, _| true).unwrap();
        assert_eq!(found[0].own, PathBuf::from("/sys/fs/cgroup/inner"));
        assert_eq!(unescape("/a\\040b"), "/a b");
    }

    #[test]
    fn no_controller_anywhere_says_which() {
        let error = places("", "0::/\n", |_, _| false).unwrap_err();
        assert_eq!(
            error,
            CgroupError::NoHierarchy {
                controller: "memory"
            }
        );
    }

    #[test]
    fn tallies_are_read_by_key() {
        let text = "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n";
        assert_eq!(count(text, "oom_kill"), 2);
        assert_eq!(count(text, "max"), 3);
        assert_eq!(count(text, "absent"), 0);
        assert_eq!(
            count("under_oom 0\noom_kill_disable 0\noom_kill 7", "oom_kill"),
            7
        );
    }
}
