//! What this kernel, with airlock's privileges, can enforce: probed once at start, without
//! starting a process.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible as _, LandlockStatus, PathBeneath,
    PathFd, Ruleset, RulesetAttr as _, RulesetCreatedAttr as _, Scope,
};

use super::LANDLOCK_ABI;

/// How a call gets its own PID namespace.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum PidNamespace {
    /// airlock holds `CAP_SYS_ADMIN` (root): the thread that starts launchers gives each a
    /// fresh PID namespace, whose first process it is.
    Direct,
    /// Without privileges: the launcher creates a user namespace, where it may create the PID
    /// namespace, and starts a second launcher inside (two processes per launcher).
    UserNamespace,
    /// Neither works here.
    Unavailable,
}

/// What the kernel offers the sandbox.
#[derive(Clone, Debug)]
pub struct Support {
    /// The Landlock ABI in effect (0: none): exact after [`Support::with_exact_landlock_abi`],
    /// else the least the creation probe proves (6 when complete).
    pub landlock_abi: u8,
    /// Whether `landlock_abi` is the kernel's own figure rather than a lower bound.
    pub landlock_abi_exact: bool,
    /// Whether Landlock enforces everything the policies use: file rights of ABI 5, TCP
    /// rules (ABI 4) and scoping of abstract unix sockets and signals (ABI 6).
    pub landlock_complete: bool,
    /// How a call gets its PID namespace.
    pub pid_namespace: PidNamespace,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether airlock runs as uid 0, which `RLIMIT_NPROC` does not bind: each call then gets
    /// a real uid of its own (see the module docs).
    pub root: bool,
    /// Where the per-call cgroups (memory, processes, CPU weight) go, or why they cannot be
    /// made here (`super::cgroups`).
    pub cgroups: Result<Vec<super::Place>, super::CgroupError>,
}

impl Support {
    /// Looks at this kernel and process. Runs the Landlock and namespace probes on a short-lived
    /// thread, whose restrictions die with it.
    pub fn probe() -> Self {
        let landlock_complete = landlock_enforces_everything();
        let root = rustix::process::getuid().is_root();
        let pid_namespace = if probe_direct_pid_namespace() {
            PidNamespace::Direct
        } else if user_namespaces_allowed() {
            PidNamespace::UserNamespace
        } else {
            PidNamespace::Unavailable
        };
        Self {
            // The exact number needs a ruleset really applied (on a thread of its own, see
            // `with_exact_landlock_abi`); this much the creation probe proves.
            landlock_abi: if landlock_complete { 6 } else { 0 },
            landlock_abi_exact: false,
            landlock_complete,
            pid_namespace,
            seccomp: rustix::thread::secure_computing_mode().is_ok(),
            root,
            cgroups: super::cgroups::probe(),
        }
    }

    /// The same, with the Landlock ABI the kernel reports (for `airlock check`): a no-op
    /// ruleset is applied to a short-lived thread, whose restrictions die with it. Costs a
    /// thread, so the server's start does without it.
    pub fn with_exact_landlock_abi(mut self) -> Self {
        let abi = std::thread::Builder::new()
            .name("airlock-landlock-probe".to_owned())
            .spawn(landlock_abi_in_effect)
            .ok()
            .and_then(|thread| thread.join().ok());
        if let Some(abi) = abi {
            self.landlock_abi = abi;
            self.landlock_abi_exact = true;
        }
        self
    }

    /// What a sandboxed command would lack here; empty when the kernel enforces it all.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !self.landlock_complete {
            missing.push(
                "Landlock ABI 6 (file rights, TCP rules, scoped signals and abstract sockets; \
                 Linux 6.12 or later with Landlock enabled)",
            );
        }
        if self.pid_namespace == PidNamespace::Unavailable {
            missing.push(
                "a PID namespace per launcher (needs CAP_SYS_ADMIN or unprivileged user namespaces)",
            );
        }
        if !self.seccomp {
            missing.push("seccomp (the system call allowlist)");
        }
        if self.cgroups.is_err() {
            missing.push(
                "per-call budgets in cgroups (memory, pids and cpu controllers airlock may \
                 create groups under: run it as root, or in a delegated cgroup such as \
                 `systemd-run --user --scope -p Delegate=yes airlock serve …`)",
            );
        }
        missing
    }

    /// One paragraph for `airlock check` and the start-up log.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "Landlock ABI {}{}{}; ",
            self.landlock_abi,
            if self.landlock_abi_exact || self.landlock_abi == 0 {
                ""
            } else {
                " or later"
            },
            if self.landlock_complete {
                " (files, TCP, scoping: all enforced)"
            } else {
                " (incomplete)"
            }
        ));
        out.push_str(&format!(
            "PID namespace per launcher, emptied between calls: {}; ",
            match self.pid_namespace {
                PidNamespace::Direct => "yes (direct, CAP_SYS_ADMIN)",
                PidNamespace::UserNamespace => "yes (inside a user namespace)",
                PidNamespace::Unavailable => "no",
            }
        ));
        out.push_str(&format!(
            "seccomp: {}; ",
            if self.seccomp { "yes" } else { "no" }
        ));
        out.push_str(&format!(
            "per-call cgroups (memory, pids, cpu): {}; ",
            match &self.cgroups {
                Ok(places) => places
                    .iter()
                    .map(|place| {
                        format!(
                            "{} {} under {}",
                            match place.version {
                                super::Version::V1 => "v1",
                                super::Version::V2 => "v2",
                            },
                            place.controller.name(),
                            place.own.display()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                Err(why) => format!("no ({why})"),
            }
        ));
        out.push_str(&format!(
            "process limit: {}; ",
            match (self.root, self.pid_namespace) {
                (true, _) =>
                    "pids.max per call, and RLIMIT_NPROC under a real uid per launcher \
                              (set*uid refused)",
                (false, PidNamespace::UserNamespace) => {
                    "pids.max per call, and RLIMIT_NPROC in the launcher's user namespace"
                }
                (false, _) => "pids.max per call, and RLIMIT_NPROC (counted per user)",
            }
        ));
        out.push_str(&format!(
            "file system view and network namespace per launcher: {}; commands run as {}",
            match self.pid_namespace {
                PidNamespace::Direct => "yes (CAP_SYS_ADMIN)",
                PidNamespace::UserNamespace => "yes (inside the launcher's user namespace)",
                PidNamespace::Unavailable => "no",
            },
            if self.root {
                "root without capabilities (effective uid 0, a real uid leased per launcher)"
            } else {
                "airlock's own user, without capabilities, in a user namespace that maps only it"
            }
        ));
        out
    }
}

/// Whether Landlock enforces everything the sandbox uses: a ruleset with all of it is created
/// (and dropped) under the hard-requirement rule, which fails on a kernel that lacks a part.
fn landlock_enforces_everything() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))
        .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(LANDLOCK_ABI)))
        .and_then(|ruleset| ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(Ruleset::create)
        .is_ok()
}

/// Whether Landlock handles TCP connect and bind here (ABI 4, Linux 6.7), as a launcher's domain
/// then does, asked once: a ruleset handling them is created (and dropped) under the
/// hard-requirement rule. What `airlock check` says a tool without `network` may open.
pub(super) fn landlock_handles_tcp() -> bool {
    static HANDLES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HANDLES.get_or_init(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::from_all(ABI::V4))
            .and_then(Ruleset::create)
            .is_ok()
    })
}

/// The Landlock ABI in effect, as reported after applying a ruleset that grants everything
/// under `/` to the calling thread (call it on a thread that is about to end).
fn landlock_abi_in_effect() -> u8 {
    let everything = AccessFs::from_all(LANDLOCK_ABI);
    let status = PathFd::new("/")
        .ok()
        .and_then(|root| {
            Ruleset::default()
                .handle_access(everything)
                .and_then(Ruleset::create)
                .and_then(|created| created.add_rule(PathBeneath::new(root, everything)))
                .and_then(|created| created.restrict_self())
                .ok()
        })
        .map(|status| status.landlock);
    match status {
        Some(LandlockStatus::Available { effective_abi, .. }) => abi_number(effective_abi),
        _ => 0,
    }
}

fn abi_number(abi: ABI) -> u8 {
    match abi {
        ABI::Unsupported => 0,
        ABI::V1 => 1,
        ABI::V2 => 2,
        ABI::V3 => 3,
        ABI::V4 => 4,
        ABI::V5 => 5,
        ABI::V6 => 6,
        ABI::V7 => 7,
        ABI::V8 => 8,
        ABI::V9 => 9,
        _ => 10,
    }
}

/// Whether this thread may give its children a fresh PID namespace (and take it back).
fn probe_direct_pid_namespace() -> bool {
    super::spawn::CallNamespace::enter().is_ok()
}

/// Whether unprivileged user namespaces look allowed. Only trying proves it, and a process
/// with threads cannot try; a launcher that fails says so in the call's result.
fn user_namespaces_allowed() -> bool {
    let read = |path: &str| std::fs::read_to_string(Path::new(path)).ok();
    let max = read("/proc/sys/user/max_user_namespaces")
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let apparmor_restricts = read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
        .is_some_and(|text| text.trim() == "1");
    let debian_restricts =
        read("/proc/sys/kernel/unprivileged_userns_clone").is_some_and(|text| text.trim() == "0");
    max > 0 && !apparmor_restricts && !debian_restricts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete() -> Support {
        Support {
            landlock_abi: 7,
            landlock_abi_exact: true,
            landlock_complete: true,
            pid_namespace: PidNamespace::Direct,
            seccomp: true,
            root: true,
            cgroups: Ok(Vec::new()),
        }
    }

    #[test]
    fn a_complete_kernel_misses_nothing() {
        assert!(complete().missing().is_empty());
        assert!(complete().describe().contains("all enforced"));
    }

    #[test]
    fn each_missing_piece_is_named_so_serve_refuses_to_start() {
        let old_landlock = Support {
            landlock_abi: 3,
            landlock_complete: false,
            ..complete()
        };
        assert!(old_landlock.missing()[0].contains("Landlock ABI 6"));
        let no_namespace = Support {
            pid_namespace: PidNamespace::Unavailable,
            ..complete()
        };
        assert!(no_namespace.missing()[0].contains("PID namespace"));
        let no_seccomp = Support {
            seccomp: false,
            ..complete()
        };
        assert!(no_seccomp.missing()[0].contains("seccomp"));
        let nothing = Support {
            landlock_abi: 0,
            landlock_abi_exact: true,
            landlock_complete: false,
            pid_namespace: PidNamespace::Unavailable,
            seccomp: false,
            root: false,
            cgroups: Err(super::super::CgroupError::NotInV2Group),
        };
        assert_eq!(nothing.missing().len(), 4);
    }

    #[test]
    fn this_machine_enforces_the_whole_sandbox() {
        // CI runs on a kernel with Landlock ABI 6+, seccomp and namespaces; a machine without
        // them must say so here rather than pass the sandbox tests by accident.
        let support = Support::probe();
        assert!(support.missing().is_empty(), "{}", support.describe());
    }
}
