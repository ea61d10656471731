//! What the kernel says about a process: its memory from `/proc/PID/status`, the processes
//! running below it, signals; and waiting for a condition with a bound.

use std::thread;
use std::time::{Duration, Instant};

use crate::support::stdio::spawn_command;

/// One `kB` figure of `/proc/PID/status` (`VmHWM`, `VmRSS`, `RssFile`), in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// Peak resident memory (`VmHWM`) of process `pid`, in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM")
}

/// Resident memory of process `pid` now (`VmRSS`), in KiB: what a test watches come back
/// after a flood, where [`peak_rss_kib`] is the high-water mark.
pub fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS")
}

/// Resident pages of process `pid` that are files' (`RssFile`: its own program and libraries,
/// mapped), in KiB. A debug build's program is tens of MiB and grows with the code, so a
/// bound on what airlock holds is checked on the peak less these.
pub fn rss_file_kib(pid: u32) -> u64 {
    status_kib(pid, "RssFile")
}

/// Sends a signal by name (`TERM`, `INT`, `HUP`) with the `kill` program.
pub fn signal(pid: u32, name: &str) {
    let status = spawn_command(std::path::Path::new("kill"))
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// Whether a process named `name` runs below `pid` (a command runs under its sandbox
/// launcher, next to the tools' idle launchers, so "has a child" says nothing).
pub fn runs_a_descendant(pid: u32, name: &str) -> bool {
    let parent_and_name = |of: u32| -> Option<(u32, String)> {
        let stat = std::fs::read_to_string(format!("/proc/{of}/stat")).ok()?;
        let (head, after) = stat.rsplit_once(") ")?;
        let comm = head.split_once(" (")?.1.to_owned();
        // After the command name in parentheses: the state, then the parent's pid.
        let parent = after.split_whitespace().nth(1)?.parse::<u32>().ok()?;
        Some((parent, comm))
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .any(|candidate| {
            let Some((mut parent, comm)) = parent_and_name(candidate) else {
                return false;
            };
            if comm != name {
                return false;
            }
            for _ in 0..8 {
                if parent == pid {
                    return true;
                }
                match parent_and_name(parent) {
                    Some((next, _)) => parent = next,
                    None => return false,
                }
            }
            false
        })
}

/// Raises this process's soft limit on open files (inherited by the server) to `want`, within
/// the hard limit.
pub fn raise_open_files(want: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= want {
        return;
    }
    let target = limit.maximum.map_or(want, |hard| hard.min(want));
    let _ignored = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(target),
            maximum: limit.maximum,
        },
    );
}

/// Polls `check` every 50 ms until it holds or `limit` passes; returns whether it held.
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if check() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
}
