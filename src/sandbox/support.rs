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
    /// airlock holds `CAP_SYS_ADMIN` (root): the thread that spawns a call gives its children a
    /// fresh PID namespace, and the launcher is its first process. One launcher per call.
    Direct,
    /// Without privileges: the launcher creates a user namespace, where it may create the PID
    /// namespace, and starts a second launcher inside. Two launchers per call.
    UserNamespace,
    /// Neither works here.
    Unavailable,
}

/// What the kernel offers the sandbox.
#[derive(Clone, Debug)]
pub struct Support {
    /// The Landlock ABI in effect (0: none), as the kernel reports it.
    pub landlock_abi: u8,
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
}

impl Support {
    /// Looks at this kernel and process. Runs the Landlock and namespace probes on a short-lived
    /// thread, whose restrictions die with it.
    pub fn probe() -> Self {
        let (landlock_abi, landlock_complete, direct) = std::thread::Builder::new()
            .name("airlock-sandbox-probe".to_owned())
            .spawn(|| {
                let (abi, complete) = probe_landlock();
                (abi, complete, probe_direct_pid_namespace())
            })
            .ok()
            .and_then(|thread| thread.join().ok())
            .unwrap_or((0, false, false));
        let root = rustix::process::getuid().is_root();
        let pid_namespace = if direct {
            PidNamespace::Direct
        } else if user_namespaces_allowed() {
            PidNamespace::UserNamespace
        } else {
            PidNamespace::Unavailable
        };
        Self {
            landlock_abi,
            landlock_complete,
            pid_namespace,
            seccomp: rustix::thread::secure_computing_mode().is_ok(),
            root,
        }
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
                "a PID namespace per call (needs CAP_SYS_ADMIN or unprivileged user namespaces)",
            );
        }
        if !self.seccomp {
            missing.push("seccomp (the socket-family and set*uid filter)");
        }
        missing
    }

    /// One paragraph for `airlock check` and the start-up log.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "Landlock ABI {}{}; ",
            self.landlock_abi,
            if self.landlock_complete {
                " (files, TCP, scoping: all enforced)"
            } else {
                " (incomplete)"
            }
        ));
        out.push_str(&format!(
            "PID namespace per call: {}; ",
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
            "process limit: {}",
            match (self.root, self.pid_namespace) {
                (true, _) => "RLIMIT_NPROC under a real uid per call (set*uid refused)",
                (false, PidNamespace::UserNamespace) => "RLIMIT_NPROC in the call's user namespace",
                (false, _) => "RLIMIT_NPROC (counted per user)",
            }
        ));
        out
    }
}

/// The effective Landlock ABI, and whether everything the sandbox uses is enforced. A no-op
/// ruleset is really applied, to this probe thread only, so the kernel's answer is the one a
/// launcher would get.
fn probe_landlock() -> (u8, bool) {
    let complete = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))
        .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(LANDLOCK_ABI)))
        .and_then(|ruleset| ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(Ruleset::create)
        .is_ok();
    // Grant everything under `/`: this thread keeps every right it had.
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
    let abi = match status {
        Some(LandlockStatus::Available { effective_abi, .. }) => abi_number(effective_abi),
        _ => 0,
    };
    (abi, complete)
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
            landlock_complete: true,
            pid_namespace: PidNamespace::Direct,
            seccomp: true,
            root: true,
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
            landlock_complete: false,
            pid_namespace: PidNamespace::Unavailable,
            seccomp: false,
            root: false,
        };
        assert_eq!(nothing.missing().len(), 3);
    }

    #[test]
    fn this_machine_enforces_the_whole_sandbox() {
        // CI runs on a kernel with Landlock ABI 6+, seccomp and namespaces; a machine without
        // them must say so here rather than pass the sandbox tests by accident.
        let support = Support::probe();
        assert!(support.missing().is_empty(), "{}", support.describe());
    }
}
