//! The bounds of manifests, commands and the sandbox: what a manifest may declare, what a
//! command's output and a sandboxed call may take, and what the network proxy holds.
//!
//! Each constant says what it limits, which attack it stops and why it has its value, as the
//! library's own `airlock::limits` does for the protocol. A manifest sets the per-tool ones
//! (`max_output_bytes`, `stderr_tail_bytes`, `resources`) up to the ceilings here; the rest
//! are fixed. `SECURITY.md` lists them in the same table as the library's (a test checks that
//! every constant the table names is declared in one of the two modules).

/// Default cap on each of a command's stdout and stderr, in bytes, and on the output one reply
/// holds, counted as sent (JSON-escaped).
///
/// A command that prints more on a stream is stopped (its whole process group is killed) and
/// the result says its output was truncated: past a megabyte, output is not something a model
/// can use, and letting `yes` run until its deadline only burns CPU. A reply holds at most this
/// much of both streams together, counted as the JSON it is sent in: a control byte is six
/// bytes there (`\u0001`), and eight calls of a megabyte of them once made 6 MiB replies and
/// took the server past its memory bound. airlock keeps no more of a command's
/// output than a reply can show, so memory does not grow with the per-stream cap.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// Highest output cap a manifest may set per stream.
pub(crate) const MAX_OUTPUT_CEILING_BYTES: usize = 64 * 1024 * 1024;

/// Bytes of stderr a reply holds with `stderr = "tail"` when the manifest does not say
/// (`stderr_tail_bytes`): a test runner's summary, a compiler's last errors.
pub(crate) const STDERR_TAIL_BYTES: usize = 4 * 1024;

/// Longest value of a manifest `string` argument, in characters, when the manifest does not
/// say (`max_string_bytes` bounds the bytes on top).
pub(crate) const DEFAULT_STRING_ARG_CHARS: usize = 4 * 1024;

/// Most items of a manifest `array` argument when the manifest does not say.
pub(crate) const DEFAULT_ARRAY_ARG_ITEMS: usize = 64;

/// Largest manifest file read, in bytes: a manifest is configuration, not data.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// Shape errors (unknown keys, wrong types) reported per part of a broken manifest (one
/// `[[tool]]`, or the file without its tools). Each one found reads the part again, so the
/// bound keeps `airlock check` on a file of typos linear in its size; a manifest with more
/// mistakes than this has a bigger problem than a typo, and the rest come on the next run.
pub(crate) const MAX_MANIFEST_SHAPE_ERRORS: usize = 64;

/// Most arguments one manifest `[[prompt]]` may declare: a prompt is a form a user fills in,
/// and each argument is a line of `prompts/list` every client holds.
pub(crate) const MAX_PROMPT_ARGUMENTS: usize = 32;

/// Most messages one manifest `[[prompt]]` may hold.
pub(crate) const MAX_PROMPT_MESSAGES: usize = 32;

/// Longest text of one manifest prompt message, in bytes, before substitution.
pub(crate) const MAX_PROMPT_TEXT_BYTES: usize = 64 * 1024;

/// Most `{argument}` placeholders in all the messages of one manifest `[[prompt]]`: each can
/// become a value of up to `max_string_bytes`, so this bounds what one `prompts/get` builds
/// (at most [`MAX_PROMPT_MESSAGES`] × [`MAX_PROMPT_TEXT_BYTES`] of text plus this many
/// values), whatever the peer sends.
pub(crate) const MAX_PROMPT_PLACEHOLDERS: usize = 64;

/// What one file of a manifest `[[resource]]` root may hold unless its `max_bytes` says
/// otherwise, in bytes: a read never takes more than this plus one byte into memory.
pub(crate) const DEFAULT_RESOURCE_FILE_BYTES: usize = 1024 * 1024;

/// Largest `max_bytes` of a manifest `[[resource]]`: a read runs inline on the session and
/// its reply (base64 for binary files, a third larger) is one message.
pub(crate) const MAX_RESOURCE_FILE_BYTES: usize = 4 * 1024 * 1024;

/// Deepest directory under a manifest `[[resource]]` root that is listed at start (the root
/// is depth 0); a deeper one fails the load rather than being left out unsaid. Together with
/// [`MAX_RESOURCES_COUNT`](airlock::limits::MAX_RESOURCES_COUNT) and
/// [`MAX_RESOURCE_WALK_ENTRIES`] it bounds the walk at start.
pub(crate) const MAX_RESOURCE_ROOT_DEPTH: usize = 16;

/// Most directory entries (of every kind, skipped ones included) looked at while listing one
/// manifest `[[resource]]` root at start: a tree of empty directories or dot-files holds no
/// listed file but would still be walked. Beyond it the load fails.
pub(crate) const MAX_RESOURCE_WALK_ENTRIES: usize = 64 * 1024;

/// Processes (and threads) one sandboxed call may have alive at once, its program included.
///
/// A fork loop stops here instead of filling the machine's process table. Enforced by
/// `RLIMIT_NPROC`, counted in the launcher's own user namespace, or, when airlock runs as root
/// (where the kernel exempts real uid 0 from that limit), under a real uid of the launcher's
/// own (`sandbox::call_uid`). The launcher itself is one of them.
pub(crate) const SANDBOX_PROCESSES: u32 = 64;

/// Address space of each sandboxed process, in MiB (`RLIMIT_AS`): a 1 GiB allocation fails.
pub(crate) const SANDBOX_MEMORY_MIB: u64 = 512;

/// CPU seconds of each sandboxed process (`RLIMIT_CPU`); the call's deadline bounds wall time.
pub(crate) const SANDBOX_CPU_SECONDS: u64 = 30;

/// Largest file a sandboxed process may write, in MiB (`RLIMIT_FSIZE`).
pub(crate) const SANDBOX_FILE_SIZE_MIB: u64 = 64;

/// Open descriptors of each sandboxed process (`RLIMIT_NOFILE`).
pub(crate) const SANDBOX_OPEN_FILES: u64 = 256;

/// Memory of one sandboxed call, all its processes together (and the page cache they fill),
/// in MiB: the call's cgroup's `memory.max` (`memory.limit_in_bytes` on cgroup v1).
///
/// `SANDBOX_MEMORY_MIB` bounds each process's address space; this bounds their sum, which
/// would otherwise be `SANDBOX_PROCESSES` times as much (32 GiB, more than most hosts have).
/// Past it the kernel's OOM killer ends a process of the call (never one outside it) and the
/// result says so.
pub(crate) const SANDBOX_CALL_MEMORY_MIB: u64 = 1024;

/// Bytes one sandboxed call may add to the file systems of its writable directories, in MiB.
///
/// Without it one call could leave a gigabyte of files behind, and a few calls fill the
/// disk. Counted as the growth of each writable directory's file system since the call
/// started (`statvfs`), watched every [`SANDBOX_DISK_POLL`]: a call past it is stopped and
/// its result says so. What it wrote stays (deleting it could delete what others wrote).
pub(crate) const SANDBOX_DISK_MIB: u64 = 256;

/// Files (inodes) one sandboxed call may add to the file systems of its writable
/// directories; counted and enforced as [`SANDBOX_DISK_MIB`] is. 100,000 empty files cost
/// little space but slow every later listing and backup of the directory.
pub(crate) const SANDBOX_DISK_FILES: u64 = 10_000;

/// Connections to destinations one networked sandboxed call may open through the proxy
/// (`network_connections`). Refused ones do not count. A command that opens connections in
/// a loop (a scanner, a crawler run by a test suite) is refused past it, with a line in its
/// result; a package manager's install opens a few dozen.
pub(crate) const SANDBOX_NETWORK_CONNECTIONS: u32 = 256;

/// MiB one networked sandboxed call may send through the proxy, over all its connections
/// (`network_up_mib`). What a call can carry off to a listed host is bounded by it; a call
/// past it is stopped and its result says so.
pub(crate) const SANDBOX_NETWORK_UP_MIB: u64 = 64;

/// MiB one networked sandboxed call may receive through the proxy (`network_down_mib`): a
/// download that never ends costs airlock's copying time, not more; a call past it is
/// stopped.
pub(crate) const SANDBOX_NETWORK_DOWN_MIB: u64 = 1024;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_NETWORK_CONNECTIONS: u64 = 100_000;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_NETWORK_MIB: u64 = 1024 * 1024;

/// How long the proxy waits for a destination to resolve and accept a connection. A
/// destination that never answers would otherwise hold the command's connection, and the
/// proxy's task, until the call's timeout.
pub(crate) const NETWORK_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Bytes of one request head (HTTP request line and headers, or the SOCKS5 greeting and
/// request) the proxy reads before it gives up on the connection: a request that never ends
/// must not grow a buffer. 16 KiB is more than any client's `CONNECT` needs.
pub(crate) const NETWORK_PROXY_HEAD_BYTES: usize = 16 * 1024;

/// How long the proxy waits for a request head: a connection that sends nothing must not
/// hold a task for the whole call.
pub(crate) const NETWORK_PROXY_HEAD_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(10);

/// Connections to the proxy open at once per call (requests being read and connections being
/// copied). The bytes of a connection move through two kernel pipes of 256 KiB (`splice`, no
/// buffer of airlock's), which a reader that stalls keeps full, so one call holds at most
/// 16 MiB of pipes; past it, a new connection is closed at once. Browsers open 6 per host.
/// (The first [`NETWORK_PROXY_BUFFERED`] connections over all calls go through two buffers
/// of airlock's of the same size instead.)
pub(crate) const NETWORK_PROXY_OPEN: usize = 32;

/// Proxied connections open at once over every call (each holds six of airlock's
/// descriptors: its socket, the destination's, two pipes). Without a server-wide bound, six
/// calls holding 32 tunnels each took all 1,024 descriptors of a common soft limit, and every
/// other call failed to start its command (the red team of issue 36). The bound is also at
/// most a quarter of the descriptors airlock may open (`proxy::server_open_bound`), and
/// `airlock serve` raises its soft descriptor limit to the hard one at start.
pub(crate) const NETWORK_PROXY_OPEN_TOTAL: usize = 512;

/// Proxied connections whose bytes are copied through two buffers of 256 KiB of airlock's
/// (16 MiB at most) instead of spliced through kernel pipes, over every call. A 64 MiB
/// download through the proxy went from 0.67–0.74× of a direct one to 0.80–0.92× on the
/// two-core machine of BENCHMARKS.md (a copy costs the reader less than spliced bytes do).
/// Past this many, a connection is spliced as before: correct, only slower, and holding no
/// buffer of ours.
pub(crate) const NETWORK_PROXY_BUFFERED: usize = 32;

/// Name lookups one call may have in flight. A lookup holds one of the runtime's blocking
/// threads until the system resolver answers or gives up (tens of seconds for a domain whose
/// servers never answer), which the connect timeout does not cut short; it counts here until
/// it ends, so a call's abandoned lookups cannot pile up (the red team of issue 36: four calls
/// took airlock from 39 to 515 threads).
pub(crate) const NETWORK_CALL_LOOKUPS: usize = 8;

/// Name lookups in flight over every call: what they can hold of the runtime's 512 blocking
/// threads, which every command tool's call needs (it checks its arguments there first).
pub(crate) const NETWORK_SERVER_LOOKUPS: usize = 64;

/// Connection attempts kept per call for its result and audit record; later ones are only
/// counted, so a command that tries a million destinations grows no record.
pub(crate) const NETWORK_RECORDED_ATTEMPTS: usize = 32;

/// How often a running sandboxed call's disk use is looked at (one `statvfs` per writable
/// file system). A call can write at most what it writes in this time past its budget: at
/// 5 ms, a shell making empty files passed a budget of 500 by up to 439 (939 left) on a
/// quiet machine and by 505 under load; 1 ms is the runtime timer's resolution. The cost is
/// a timer wake-up and a `statvfs` a millisecond per running call that has a writable
/// directory (none for the others).
pub(crate) const SANDBOX_DISK_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// CPU weight of all sandboxed calls together, in cgroup v1 `cpu.shares` (v2 `cpu.weight`
/// is derived from it): the weight of one ordinary process. The calls' group sits beside
/// airlock's own threads (each of which weighs as much), so however many processes the calls
/// keep busy, airlock gets at least half of a core when it wants one, and a single call gets
/// what the same process outside the sandbox would. What nobody else wants, the calls get.
/// Eight calls of sixty busy processes each took airlock's answer to a ping from 0.2 ms to a
/// 52-87 ms median without it; the figure with it is in BENCHMARKS.md. (An eighth of that,
/// tried first, made calls on a busy host wait behind every other process.)
pub(crate) const SANDBOX_CALLS_CPU_SHARES: u64 = 1024;

/// Entries looked at per writable directory when a launcher starts (to protect the paths that
/// make other programs run code later, `sandbox::later_code`) and after each call (to remove
/// such paths a call created). A deeper or larger tree is looked at this far; the rest of it
/// is not, and `airlock check` says so.
pub(crate) const SANDBOX_LATER_CODE_WALK_ENTRIES: usize = 20_000;

/// Idle launchers kept per tool, ready for its next calls (`sandbox::resident`).
///
/// A launcher is an airlock process, confined and waiting: measured here, 0.4 MiB of memory
/// of its own beside 3.4 MiB of file pages it shares with airlock. Enough for the default
/// [`MAX_IN_FLIGHT`](airlock::limits::MAX_IN_FLIGHT) calls of one tool
/// at once; more concurrent calls start launchers of their own, which leave when they end.
pub(crate) const SANDBOX_IDLE_LAUNCHERS_PER_TOOL: usize = 8;

/// Idle launchers kept across all tools, so a manifest of many tools does not keep
/// `SANDBOX_IDLE_LAUNCHERS_PER_TOOL` processes for each.
pub(crate) const SANDBOX_IDLE_LAUNCHERS: usize = 64;

/// Calls one launcher serves before it is replaced.
///
/// Between calls a launcher is left alone in its namespace, so a call inherits no process of
/// the one before; the bound spreads calls over fresh processes (a fresh pid counter among
/// them). A launcher also retires once it has used half its own CPU limit.
pub(crate) const SANDBOX_CALLS_PER_LAUNCHER: u32 = 256;

/// How long a launcher that airlock let go (its call timed out, was cancelled, passed the
/// output cap or the disk budget, or it was idle and not needed) has to kill the call's
/// processes, remove the later code they made (`sandbox::later_code`) and end, before airlock
/// kills it. The sweep walks at most a few tens of thousands of entries; a launcher killed
/// here ends its namespace but leaves what the call made.
pub(crate) const SANDBOX_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Denials kept per call (`sandbox::denials`), de-duplicated; the rest are counted. Stops a
/// command that is refused in a loop (a scan of paths it may not read) from filling its
/// result and its audit record: one result line and one record stay a few KiB.
pub(crate) const SANDBOX_DENIALS_PER_CALL: usize = 16;

/// Bytes of a denial's object (a path, an address) and of the key that would allow it shown,
/// once redacted and their control characters escaped (a secret is found whole before any
/// cut); longer ones are cut and marked `…`. Bounds what one denial adds to a result and a
/// record; until then an object is at most one audit record's text.
pub(crate) const SANDBOX_DENIAL_OBJECT_BYTES: usize = 256;

/// Landlock domains the denial reader keeps (one per launcher that was refused something,
/// forgotten when the kernel frees it): bounds the reader's memory whatever the host does.
pub(crate) const SANDBOX_DENIAL_DOMAINS: usize = 1024;

/// How long after a launcher reports a call its denials are taken, when the kernel's audit
/// is on: records come through the kernel's audit thread after the fact (measured here over
/// 20 calls: 5 to 8.5 ms from the record's stamp to its arrival, the stamp being the kernel's
/// coarse clock, up to 4 ms early; and the launcher reports a few ms after the command's
/// last process ended). Adds this much to each sandboxed call while audit is on; a record
/// later than this is not the call's, and the next call on the launcher leaves it out by its
/// stamp. The launcher serves its next call during this wait: each record goes to the call
/// its stamp falls in, one within the clock's slack of the next call's start to neither.
pub(crate) const SANDBOX_DENIAL_SETTLE: std::time::Duration = std::time::Duration::from_millis(20);

/// Syscall audit events the denial reader holds while their records arrive (a `SYSCALL`
/// record of a launcher's login uid opens one, its `EOE` record closes it;
/// `sandbox::denials`): an event whose end never comes is forgotten, oldest first. The kernel
/// sends an event's records together, so only a few are ever open at once.
pub(crate) const SANDBOX_DENIAL_PENDING_EVENTS: usize = 64;

/// Names (`PATH` records) kept of one syscall audit event: a rename names four, the
/// directories included; the first name not a directory is the one reported.
pub(crate) const SANDBOX_DENIAL_EVENT_PATHS: usize = 4;

/// Highest values a manifest may give the sandbox's resource limits, in the same units.
pub(crate) const SANDBOX_MAX_PROCESSES: u32 = 4096;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_MEMORY_MIB: u64 = 64 * 1024;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_CPU_SECONDS: u64 = airlock::limits::MAX_TOOL_TIMEOUT.as_secs();

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_FILE_SIZE_MIB: u64 = 1024 * 1024;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_OPEN_FILES: u64 = 65_536;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_CALL_MEMORY_MIB: u64 = 256 * 1024;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_DISK_MIB: u64 = 1024 * 1024;

/// See [`SANDBOX_MAX_PROCESSES`].
pub(crate) const SANDBOX_MAX_DISK_FILES: u64 = 100_000_000;

/// Shortest secret accepted for redaction (a manifest's `secret_env` value): redacting a
/// two-letter value would shred ordinary output, and a value that short is not a secret
/// worth the name.
pub(crate) const MIN_SECRET_BYTES: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_cpu_ceiling_is_the_longest_tool_deadline() {
        // The manifest's message ("between 1 ms and 24 hours") and SECURITY.md state 24 hours.
        assert_eq!(
            SANDBOX_MAX_CPU_SECONDS,
            airlock::limits::MAX_TOOL_TIMEOUT.as_secs()
        );
    }

    /// The constants `SECURITY.md`'s table of limits names: each is declared in the library's
    /// limits or in these, so that the table cannot name a bound that moved or went away.
    #[test]
    fn every_constant_security_md_names_in_its_limits_table_is_declared() {
        let security = include_str!("../../../SECURITY.md");
        let library = include_str!("../../airlock/src/limits.rs");
        let ours = include_str!("limits.rs");
        let table = security
            .split("\n## Limits and their defaults")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .unwrap_or_default();
        let named: Vec<&str> = table
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|name| {
                name.contains('_')
                    && !name.starts_with("RLIMIT_")
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            })
            .collect();
        assert!(named.len() > 20, "the table was not found: {named:?}");
        for name in named {
            let declared = |source: &str| {
                source.lines().any(|line| {
                    line.split_once(" const ")
                        .is_some_and(|(_, rest)| rest.starts_with(&format!("{name}:")))
                })
            };
            assert!(
                declared(library) || declared(ours),
                "SECURITY.md's table names {name}, which neither airlock::limits nor \
                 airlock_manifest::limits declares"
            );
        }
    }
}
