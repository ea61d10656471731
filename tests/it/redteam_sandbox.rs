//! Red team of the kernel sandbox, from inside a call: Python run by a tool (`interpreter_code`
//! accepted), driving the real binary over stdio, as root and, where it matters, as `nobody`.
//!
//! Findings, each first a failing test against the code it was written for:
//!
//! - a call made set-uid (and set-gid) files in its writable directory: `chmod 04755`, or
//!   created so by `open(O_CREAT, 06755)` or `mknod`. The view's `nosuid` is the view's only:
//!   on the host the file was a set-uid program of airlock's user (root as root). Fixed:
//!   seccomp refuses those mode bits (`sandbox::syscalls`);
//! - the later-code sweep judged a path by its birth time, so an older file or directory
//!   renamed or hard-linked to a listed name (`.envrc`, `sub/.git`, `sub/.mcp.json`) stayed.
//!   Fixed: the sweep removes every listed name that was not there before the call, and hard
//!   links are refused;
//! - the sweep stopped at its walk bound (20,000 entries), which a call reached with hard
//!   links alone (no inode, so no file budget). Fixed: no hard links, and the sweep looks at
//!   the bound twice over plus what the file budget lets a call add;
//! - `.hg` (Mercurial's hooks and extensions, the `.git` of another tool) was not listed.
//!   Fixed, with other tools' files found beside it (`.jj`, `.npmrc`, `mise.toml`, …);
//! - a call stopped at a limit (its time limit, the output cap, the disk budget) ended with
//!   its launcher killed, before the sweep: what it created (`.envrc`, `.vscode/tasks.json`)
//!   stayed. Fixed: a launcher let go is told so (its channel closes) and sweeps before it
//!   ends.
//!
//! Everything else here held (system calls by x32 numbers, high argument bits, flags the
//! filter must see; the view's root, `..`, `/proc`, descriptors; tricks on a checkout's
//! `.git`; unix sockets with the network; the TCP socket a tool without the network may open,
//! spelled every way, and the listener it can make), and is kept so that it goes on holding.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::sandbox::{Mode, probe_results, python, python_tool, require, serve_unprivileged};
use crate::support::fixtures::{SandboxTree, unique};
use crate::support::stdio::call;
use crate::support::stdio::outcome;

/// Python every probe here starts with: `attempt(name, act)` prints `name 0 0` when `act`
/// returns and `name -1 errno` when it raises an `OSError`.
const ATTEMPT: &str = r#"import ctypes, os, socket, time
def attempt(name, act):
    try:
        act()
        print(name, 0, 0, flush=True)
    except OSError as e:
        print(name, -1, e.errno or -1, flush=True)
"#;

/// The names of `results` whose attempt went through.
fn went_through(results: &std::collections::BTreeMap<String, (i64, i64)>) -> Vec<&str> {
    results
        .iter()
        .filter(|(_, result)| result.0 != -1)
        .map(|(name, _)| name.as_str())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Set-uid files in a writable directory (finding)

/// Makes three set-id files in `out/`: a copy of the Python interpreter `chmod`ed 04755, a
/// file created 06755 by `open`, one made 04755 by `mknod`.
const SET_ID: &str = r#"import shutil
shutil.copyfile('/usr/bin/python3', 'out/chmod')
attempt('chmod', lambda: os.chmod('out/chmod', 0o4755))
attempt('open', lambda: os.close(os.open('out/open', os.O_CREAT | os.O_WRONLY, 0o6755)))
attempt('mknod', lambda: os.mknod('out/mknod', 0o100000 | 0o4755))
"#;

/// Runs [`SET_ID`] with airlock as root or as `nobody`; returns the files of `out/` that
/// carry a set-uid or set-gid bit on the host, with their modes, and the call's text.
fn set_id_files(unprivileged: bool) -> (Vec<String>, String) {
    let scratch = SandboxTree::new(&format!("rt-setid-{unprivileged}"));
    let out = scratch.work().join("out");
    let manifest = python_tool("py", Mode::On, "write = [\"out\"]");
    let text = if unprivileged {
        if rustix::process::getuid().is_root() {
            std::os::unix::fs::chown(&out, Some(65534), Some(65534)).unwrap();
        }
        python(
            &mut serve_unprivileged(&scratch, &manifest),
            "py",
            &format!("{ATTEMPT}{SET_ID}"),
        )
        .1
    } else {
        python(
            &mut scratch.serve(&manifest, &[]),
            "py",
            &format!("{ATTEMPT}{SET_ID}"),
        )
        .1
    };
    assert_eq!(
        probe_results(&text).len(),
        3,
        "the probe did not run: {text}"
    );
    let set_id = ["chmod", "open", "mknod"]
        .into_iter()
        .filter_map(|name| {
            let mode = std::fs::metadata(out.join(name)).ok()?.permissions().mode();
            (mode & 0o6000 != 0).then(|| format!("{name} {mode:o}"))
        })
        .collect();
    (set_id, text)
}

#[test]
fn a_call_makes_no_set_uid_file_as_root() {
    let (set_id, text) = set_id_files(false);
    assert!(
        set_id.is_empty(),
        "set-id files on the host: {set_id:?}\n{text}"
    );
}

#[test]
fn a_call_makes_no_set_uid_file_unprivileged() {
    let (set_id, text) = set_id_files(true);
    assert!(
        set_id.is_empty(),
        "set-id files on the host: {set_id:?}\n{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Later code the sweep leaves (findings)

/// The later-code paths of `names` below `out/` that exist.
fn left(scratch: &SandboxTree, names: &[&'static str]) -> Vec<&'static str> {
    let out = scratch.work().join("out");
    names
        .iter()
        .copied()
        .filter(|name| std::fs::symlink_metadata(out.join(name)).is_ok())
        .collect()
}

/// Renames an older file to `.envrc` (after writing it), tries to hard-link another to
/// `sub/.mcp.json`, fills an older directory with a git config and renames it to `sub/.git`;
/// also creates `sub/.envrc` afresh, which the sweep does remove.
const RENAMED: &str = r#"import os
open('out/old.txt', 'w').write('export PWNED=1\n')
os.rename('out/old.txt', 'out/.envrc')
try:
    os.link('out/old-link.txt', 'out/sub/.mcp.json')
except PermissionError:
    print('link refused')
open('out/olddir/config', 'w').write('[core]\n\tfsmonitor = touch pwned\n')
os.rename('out/olddir', 'out/sub/.git')
open('out/sub/.envrc', 'w').write('export FRESH=1\n')
print('planted')
"#;

#[test]
fn later_code_renamed_or_linked_from_an_older_file_is_swept() {
    let scratch = SandboxTree::new("rt-renamed");
    let out = scratch.work().join("out");
    std::fs::create_dir_all(out.join("olddir/hooks")).unwrap();
    std::fs::create_dir_all(out.join("sub")).unwrap();
    std::fs::write(out.join("old.txt"), "old\n").unwrap();
    std::fs::write(out.join("old-link.txt"), "{\"mcpServers\": {}}\n").unwrap();
    // Older than the call by more than the sweep's slack for coarse file times.
    std::thread::sleep(Duration::from_millis(200));
    let mut server = scratch.serve(&python_tool("py", Mode::On, "write = [\"out\"]"), &[]);
    let (failed, text) = python(&mut server, "py", RENAMED);
    drop(server);
    assert!(
        !failed && text.contains("planted\n") && text.contains("link refused\n"),
        "{text}"
    );
    assert_eq!(
        left(&scratch, &["sub/.envrc"]),
        Vec::<&str>::new(),
        "{text}"
    );
    let names = [".envrc", "sub/.mcp.json", "sub/.git"];
    assert_eq!(left(&scratch, &names), Vec::<&str>::new(), "{text}");
}

/// A call stopped at its time limit, at the output cap or at its disk budget is swept too:
/// its launcher, let go, kills the call's processes, sweeps and ends (killed only if it has
/// not within `SANDBOX_STOP_GRACE`). The sweep follows the reply by a moment, so the test
/// waits for it, with the server still there.
#[test]
fn later_code_of_a_call_stopped_at_a_limit_is_swept() {
    let mut scratch = SandboxTree::new("rt-stopped");
    // A file system of its own: the disk budget counts what the whole file system gains, and
    // other tests create thousands of files on the shared one.
    scratch.private_filesystem("work/out", 64);
    let manifest = format!(
        "{}{}{}",
        python_tool("slow", Mode::On, "write = [\"out\"]\ntimeout_ms = 2000"),
        python_tool(
            "loud",
            Mode::On,
            "write = [\"out\"]\nmax_output_bytes = 1024"
        ),
        python_tool(
            "full",
            Mode::On,
            "write = [\"out\"]\nresources = { disk_files = 50 }"
        )
    );
    let mut server = scratch.serve(&manifest, &[]);
    let (failed, slow) = python(
        &mut server,
        "slow",
        "import time\nopen('out/.envrc', 'w').write('export PWNED=1\\n')\ntime.sleep(60)",
    );
    assert!(failed && slow.contains("time limit"), "{slow}");
    let (failed, loud) = python(
        &mut server,
        "loud",
        "import os\nos.makedirs('out/.vscode')\nopen('out/.vscode/tasks.json', 'w').write('{}')\n\
         while True: print('x' * 1000, flush=True)",
    );
    assert!(failed, "{loud}");
    let (failed, full) = python(
        &mut server,
        "full",
        "import os, time\nos.makedirs('out/sub/.git/hooks')\n\
         open('out/sub/.git/hooks/pre-commit', 'w').write('touch pwned')\n\
         for i in range(5000): open('out/f%d' % i, 'w').close()\ntime.sleep(60)",
    );
    assert!(failed, "{full}");
    let names = [".envrc", ".vscode", "sub/.git"];
    let swept = crate::support::processes::eventually(Duration::from_secs(10), || {
        left(&scratch, &names).is_empty()
    });
    drop(server);
    assert!(
        swept,
        "{:?} left\n{slow}\n{loud}\n{full}",
        left(&scratch, &names)
    );
}

/// A hard link first (no inode, so nothing of the file budget: 20,001 of them pushed a name
/// past the walk), refused; then 20,001 empty files, which a file budget raised to 30,000
/// allows, and `zz/deeper/.envrc`, which a breadth-first walk reaches only after them.
const PAST_THE_WALK: &str = r#"import os
open('out/base', 'w').write('x')
os.mkdir('out/many')
try:
    os.link('out/base', 'out/many/link')
except PermissionError:
    print('link refused')
for i in range(20001):
    open('out/many/f%d' % i, 'w').close()
os.makedirs('out/zz/deeper')
open('out/zz/deeper/.envrc', 'w').write('export PWNED=1\n')
print('planted')
"#;

#[test]
fn later_code_behind_many_entries_is_swept() {
    let mut scratch = SandboxTree::new("rt-walk");
    // 20,001 files on a file system of its own, where they count against no other test's
    // disk budget.
    scratch.private_filesystem("work/out", 64);
    let manifest = python_tool(
        "py",
        Mode::On,
        "write = [\"out\"]\ntimeout_ms = 60000\nresources = { disk_files = 30000 }",
    );
    let mut server = scratch.serve(&manifest, &[]);
    server.send(&call(1, "py", json!({ "code": PAST_THE_WALK })));
    let (failed, text) = outcome(&server.recv_within(Duration::from_secs(90)));
    drop(server);
    assert!(
        !failed
            && text.contains("link refused\nplanted\n")
            && text.contains("airlock removed 1 path(s)"),
        "{text}"
    );
    assert_eq!(
        left(&scratch, &["zz/deeper/.envrc"]),
        Vec::<&str>::new(),
        "{text}"
    );
}

/// Mercurial's `.hg/hgrc` runs `[hooks]` at commit and loads `[extensions]` (Python) at every
/// `hg` command, `hg status` included: the `.git` of another version control system, and not
/// on the list.
#[test]
fn a_mercurial_config_made_by_a_call_is_swept() {
    let scratch = SandboxTree::new("rt-hg");
    let mut server = scratch.serve(&python_tool("py", Mode::On, "write = [\"out\"]"), &[]);
    let code = "import os\nos.makedirs('out/.hg')\n\
                open('out/.hg/hgrc', 'w').write('[hooks]\\nprecommit = touch pwned\\n')\n\
                print('planted')";
    let (failed, text) = python(&mut server, "py", code);
    drop(server);
    assert!(!failed && text.contains("planted\n"), "{text}");
    assert_eq!(left(&scratch, &[".hg"]), Vec::<&str>::new(), "{text}");
}

// ---------------------------------------------------------------------------------------------
// 3. Later code in a git checkout: the tricks that are refused or swept

/// Makes `work/repo` a git repository (no commit needed: `.git/config` is what matters).
fn repository(scratch: &SandboxTree) -> std::path::PathBuf {
    let repo = scratch.work().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let output = crate::support::stdio::spawn_command(Path::new("git"))
        .args(["init", "--quiet"])
        .current_dir(&repo)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("git runs (install git to run the sandbox tests)");
    assert!(output.status.success(), "{output:?}");
    repo
}

/// Through a symbolic link made in the checkout, by renaming `.git` or a file in it, by a
/// hard link of its config, by `chmod`; then a nested repository, a `.git` file redirecting
/// git elsewhere and an `.envrc` symbolic link, created afresh (so swept).
const CHECKOUT: &str = r#"os.symlink('.git/hooks', 'h')
attempt('hook_via_symlink', lambda: open('h/pre-commit', 'w').write('touch pwned\n'))
attempt('rename_git', lambda: os.rename('.git', 'git-old'))
attempt('rename_config', lambda: os.rename('.git/config', '.git/config.old'))
attempt('link_config', lambda: os.link('.git/config', 'config-link'))
attempt('chmod_config', lambda: os.chmod('.git/config', 0o666))
attempt('exchange_git', lambda: os.rename('h', '.git'))
os.makedirs('nested/.git/hooks')
open('nested/.git/hooks/pre-commit', 'w').write('touch pwned\n')
os.mkdir('redirect')
open('redirect/.git', 'w').write('gitdir: /tmp/elsewhere\n')
os.symlink('/etc/passwd', '.envrc')
"#;

#[test]
fn later_code_tricks_in_a_checkout_are_refused_or_swept() {
    let scratch = SandboxTree::new("rt-checkout");
    let repo = repository(&scratch);
    let config = std::fs::read(repo.join(".git/config")).unwrap();
    let manifest = python_tool("py", Mode::On, "").replace(
        "workdir = \"work\"",
        "workdir = \"work/repo\"\nwrite = [\".\"]",
    );
    let mut server = scratch.serve(&manifest, &[]);
    let (_, text) = python(&mut server, "py", &format!("{ATTEMPT}{CHECKOUT}"));
    drop(server);
    let results = probe_results(&text);
    assert_eq!(results.len(), 6, "the probe did not run to its end: {text}");
    assert_eq!(went_through(&results), Vec::<&str>::new(), "{text}");
    assert_eq!(std::fs::read(repo.join(".git/config")).unwrap(), config);
    for name in [
        ".git/hooks/pre-commit",
        "nested/.git",
        "redirect/.git",
        ".envrc",
    ] {
        assert!(
            std::fs::symlink_metadata(repo.join(name)).is_err(),
            "{name} is left: {text}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. System calls the filter must see through

/// Each call by raw number (x86_64): x32 numbers (bit 30), flags in the upper half of a
/// register the kernel ignores, `personality` flags that weaken the process, namespaces by
/// `clone`, `clone3` and `unshare`, the mount API, `io_uring`, other processes, handles,
/// unix and datagram sockets, keyrings, identity. A `clone` that went through exits at once.
const SYSCALLS: &str = r#"libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
def sc(name, number, *args):
    ctypes.set_errno(0)
    r = libc.syscall(L(number), *[L(a) if isinstance(a, int) else a for a in args])
    if r == 0 and name.startswith('clone'):
        os._exit(0)
    print(name, r, ctypes.get_errno() if r == -1 else 0, flush=True)
X32, HIGH = 0x40000000, 1 << 32
pair = (ctypes.c_int * 2)()
sc('x32_getpid', X32 | 39)
sc('x32_unshare', X32 | 272, 0x10000000)
sc('x32_open_tree', X32 | 428, -100, b'/', 1)
sc('x32_readv', X32 | 515, 0, 0, 0)
sc('personality_no_aslr', 135, 0x0040000)
sc('personality_read_implies_exec', 135, 0x0400000)
sc('clone_newuser', 56, 0x10000000 | 17, 0, 0, 0, 0)
sc('clone_newns_high', 56, HIGH | 0x20000 | 17, 0, 0, 0, 0)
sc('clone3', 435, (ctypes.c_uint64 * 11)(0x10000000), 88)
sc('unshare', 272, 0x20000)
sc('setns', 308, 0, 0)
sc('chroot', 161, b'/usr')
sc('pivot_root', 155, b'/usr', b'/usr')
sc('mount', 165, b'none', b'/usr', b'tmpfs', 0, 0)
sc('open_tree', 428, -100, b'/usr', 1 | 0x80000)
sc('mount_setattr', 442, -100, b'/usr', 0, 0, 0)
sc('io_uring_setup', 425, 1, (ctypes.c_uint8 * 120)())
sc('ptrace_traceme', 101, 0, 0, 0, 0)
sc('process_vm_readv', 310, 1, 0, 0, 0, 0, 0)
sc('name_to_handle_at', 303, -100, b'/usr', (ctypes.c_uint8 * 200)(), (ctypes.c_int * 1)(), 0)
sc('pidfd_open_launcher_high', 434, HIGH | 1, 0)
sc('prlimit_launcher_high', 302, HIGH | 1, 1, (ctypes.c_uint64 * 2)(1, 1), 0)
sc('setlease_high', 72, 0, HIGH | 1024, 0)
sc('socket_unix', 41, 1, 1, 0)
sc('socketpair_dgram_high', 53, 1, HIGH | 2, 0, pair)
sc('socketpair_inet', 53, 2, 1, 0, pair)
sc('memfd_create', 319, b'x', 0)
sc('keyctl', 250, 0, -3, 0)
sc('setuid', 105, 0)
sc('setgroups', 116, 0, 0)
"#;

#[test]
fn system_calls_by_other_numbers_and_flags_are_refused() {
    let scratch = SandboxTree::new("rt-syscalls");
    let mut server = scratch.serve(&python_tool("py", Mode::On, ""), &[]);
    let (_, text) = python(&mut server, "py", &format!("{ATTEMPT}{SYSCALLS}"));
    let results = probe_results(&text);
    assert_eq!(
        results.len(),
        30,
        "the probe did not run to its end: {text}"
    );
    assert_eq!(went_through(&results), Vec::<&str>::new(), "{text}");
}

// ---------------------------------------------------------------------------------------------
// 5. The view: no way out of it

/// Descriptors beyond the standard three (looked at first), `/proc`, `/dev/shm`, `/root`, the
/// secret outside by `..` from the root and by `openat` from a bound directory's descriptor,
/// and writes into the read-only workdir and the root.
fn view_probe(scratch: &SandboxTree) -> String {
    let secret = scratch.outside().join("secret.txt");
    let secret = secret.to_str().unwrap().trim_start_matches('/').to_owned();
    format!(
        r#"{ATTEMPT}def inherited():
    extra = []
    for fd in range(3, 1024):
        try:
            os.fstat(fd)
            extra.append(fd)
        except OSError:
            pass
    if not extra:
        raise OSError(9, 'none')
    print('extra descriptors', extra)
attempt('inherited_descriptors', inherited)
attempt('proc', lambda: os.stat('/proc/self'))
attempt('dev_shm', lambda: os.stat('/dev/shm'))
attempt('root_home', lambda: os.stat('/root'))
os.chdir('/')
for _ in range(8):
    os.chdir('..')
attempt('dotdot_from_root', lambda: open('../../../../{secret}').read())
usr = os.open('/usr', os.O_PATH | os.O_DIRECTORY)
attempt('openat_dotdot', lambda: os.close(os.open('../../../../{secret}', os.O_RDONLY, dir_fd=usr)))
attempt('write_root', lambda: open('/pwned', 'w'))
attempt('mkdir_usr', lambda: os.mkdir('/usr/pwned'))
"#
    )
}

#[test]
fn the_view_has_no_way_out() {
    let scratch = SandboxTree::new("rt-view");
    let mut server = scratch.serve(&python_tool("py", Mode::On, "write = [\"out\"]"), &[]);
    let (_, text) = python(&mut server, "py", &view_probe(&scratch));
    let results = probe_results(&text);
    assert_eq!(results.len(), 8, "the probe did not run to its end: {text}");
    assert_eq!(went_through(&results), Vec::<&str>::new(), "{text}");
    assert!(!text.contains(&scratch.secret), "{text}");
}

// ---------------------------------------------------------------------------------------------
// 6. Unix sockets with the network: socket pairs cannot reach the host

/// With `network = true` (the host's abstract names): no unix socket, no datagram pair; a
/// stream pair sends nowhere else and cannot listen on an abstract name it binds.
fn unix_probe(path: &Path, name: &str) -> String {
    format!(
        r#"{ATTEMPT}attempt('socket_unix', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt('socketpair_dgram', lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
attempt('stream_sendto_path', lambda: a.sendto(b'pwned', {path:?}))
c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
attempt('seqpacket_sendto_path', lambda: c.sendto(b'pwned', {path:?}))
def listen_abstract():
    b.close()
    a.bind({name:?})
    a.listen(1)
attempt('listen_abstract', listen_abstract)
"#,
        path = path.to_str().unwrap(),
        name = format!("\0{name}")
    )
}

#[test]
fn socket_pairs_reach_no_host_socket_with_the_network() {
    let scratch = SandboxTree::new("rt-unix");
    let path = scratch.outside().join("listener.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let name = format!("airlock-rt-{}", unique());
    let mut server = scratch.serve(&python_tool("py", Mode::On, "network = true"), &[]);
    let (_, text) = python(&mut server, "py", &unix_probe(&path, &name));
    drop(server);
    let results = probe_results(&text);
    assert_eq!(results.len(), 5, "the probe did not run to its end: {text}");
    // A seqpacket pair ignores an address (its datagram goes to the peer): sent, not leaked.
    let leaked: Vec<&str> = went_through(&results)
        .into_iter()
        .filter(|name| *name != "seqpacket_sendto_path")
        .collect();
    assert_eq!(leaked, Vec::<&str>::new(), "{text}");
    assert!(listener.accept().is_err(), "the call connected: {text}");
}

// ---------------------------------------------------------------------------------------------
// 7. Processes: none left by a call, whatever it does with its own pid namespace

/// A call that forks a `setsid` grandchild, blocks `SIGTERM` and writes a marker file every
/// 100 ms from it: nothing is written once the call has been answered. The parent waits (up
/// to 10 s) for the first mark: on a loaded machine the grandchild may start late.
#[test]
fn a_daemonised_grandchild_writes_nothing_after_its_call() {
    require("/usr/bin/python3", "python3");
    let scratch = SandboxTree::new("rt-daemon");
    let mut server = scratch.serve(&python_tool("py", Mode::On, "write = [\"out\"]"), &[]);
    let code = "import os, signal, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n\
                \x20       signal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
                \x20       n = 0\n        while True:\n\
                \x20           n += 1\n            open('out/tick', 'w').write(str(n))\n\
                \x20           time.sleep(0.1)\n    os._exit(0)\n\
                for _ in range(200):\n    if os.path.exists('out/tick'): break\n    time.sleep(0.05)\n\
                print('parent done')";
    let (failed, text) = python(&mut server, "py", code);
    assert!(!failed, "{text}");
    let tick = scratch.work().join("out/tick");
    let first = std::fs::read_to_string(&tick).unwrap_or_default();
    assert!(!first.is_empty(), "the grandchild never ran: {text}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read_to_string(&tick).unwrap(),
        first,
        "still ticking"
    );
}

// ---------------------------------------------------------------------------------------------
// 8. A TCP socket without the network

/// Where Landlock handles TCP, a tool without `network` may open an IPv4 or IPv6 TCP stream
/// socket (so that its connect is refused and reported): nothing else, spelled any way, and
/// the socket reaches nothing. Raw numbers: SCTP, MPTCP and UDP with bits above the 32 the
/// kernel reads, a unix socket likewise; then connects to loopback, the unspecified address
/// and IPv4-mapped IPv6, TCP fast open by `sendto` and `sendmsg`, `bind`, and a connect to a
/// listener's own autobound port. (On a kernel without Landlock's TCP rules every socket is
/// refused, which passes the same checks.)
const TCP_WITHOUT_NETWORK: &str = r#"libc = ctypes.CDLL(None, use_errno=True)
L, HIGH = ctypes.c_long, 1 << 32
def sc(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(L(41), *[L(a) for a in args])
    print(name, r if r < 0 else 0, ctypes.get_errno() if r < 0 else 0, flush=True)
sc('sctp_high', 2, 1, HIGH | 132)
sc('mptcp_high', 2, 1, HIGH | 262)
sc('mptcp6', 10, 1, 262)
sc('udp_high', 2, HIGH | 2, 0)
sc('unix_high', HIGH | 1, 1, 0)
sc('netlink_high', HIGH | 16, 3, 0)
def tcp(family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    return s
attempt('connect_loopback', lambda: tcp().connect(('127.0.0.1', 22)))
attempt('connect_any', lambda: tcp().connect(('0.0.0.0', 22)))
attempt('connect_v6_loopback', lambda: tcp(socket.AF_INET6).connect(('::1', 22)))
attempt('connect_v4_mapped', lambda: tcp(socket.AF_INET6).connect(('::ffff:127.0.0.1', 22)))
attempt('connect_out', lambda: tcp().connect(('10.0.0.5', 5432)))
attempt('fastopen_sendto', lambda: tcp().sendto(b'x', socket.MSG_FASTOPEN, ('127.0.0.1', 22)))
attempt('fastopen_sendmsg', lambda: tcp().sendmsg([b'x'], [], socket.MSG_FASTOPEN, ('127.0.0.1', 22)))
def fastopen_connect():
    s = tcp()
    s.setsockopt(socket.IPPROTO_TCP, 30, 1)
    s.connect(('127.0.0.1', 22))
attempt('fastopen_connect', fastopen_connect)
attempt('bind', lambda: tcp().bind(('127.0.0.1', 0)))
def own_listener():
    s = tcp()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.listen(1)
    tcp().connect(('127.0.0.1', s.getsockname()[1]))
attempt('own_listener', own_listener)
"#;

#[test]
fn a_tcp_socket_without_the_network_reaches_nothing_however_it_is_spelled() {
    let scratch = SandboxTree::new("rt-tcp-without-network");
    let mut server = scratch.serve(&python_tool("py", Mode::On, ""), &[]);
    let (_, text) = python(
        &mut server,
        "py",
        &format!("{ATTEMPT}{TCP_WITHOUT_NETWORK}"),
    );
    let results = probe_results(&text);
    assert_eq!(
        results.len(),
        16,
        "the probe did not run to its end: {text}"
    );
    assert_eq!(went_through(&results), Vec::<&str>::new(), "{text}");
    for name in ["sctp_high", "mptcp_high", "mptcp6", "udp_high", "unix_high"] {
        assert_eq!(
            results[name].1, 1,
            "{name}: seccomp's EPERM expected: {text}"
        );
    }
}

/// A listener a call opens without `bind` (`listen` autobinds a port, without asking
/// Landlock) is in the launcher's empty network namespace: the host, connecting to that port
/// on loopback while the call waits on it, does not reach it.
#[test]
fn a_listener_of_a_call_without_the_network_is_not_reachable_from_the_host() {
    let scratch = SandboxTree::new("rt-tcp-listener");
    let mut server = scratch.serve(&python_tool("py", Mode::On, "write = [\"out\"]"), &[]);
    let code = "import socket\ns = socket.socket(socket.AF_INET6)\ns.listen(8)\n\
                open('out/port.tmp', 'w').write(str(s.getsockname()[1]))\n\
                __import__('os').rename('out/port.tmp', 'out/port')\n\
                s.settimeout(4)\ntry:\n    c, _ = s.accept()\n    c.sendall(b'inside-listener')\n    \
                print('accepted')\nexcept OSError as e:\n    print('none', e)\n";
    server.send(&call(1, "py", json!({ "code": code })));
    let port_file = scratch.work().join("out/port");
    let started = std::time::Instant::now();
    let port: u16 = loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|text| text.parse().ok())
        {
            break port;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the call wrote no port"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut reached = Vec::new();
    for address in [
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
    ] {
        if let Ok(mut stream) =
            std::net::TcpStream::connect_timeout(&address, Duration::from_millis(500))
        {
            stream
                .set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut seen = [0_u8; 32];
            let read = std::io::Read::read(&mut stream, &mut seen).unwrap_or(0);
            if seen[..read].starts_with(b"inside") {
                reached.push(address);
            }
        }
    }
    let (_, text) = outcome(&server.recv());
    assert_eq!(reached, [], "the host reached the call's listener: {text}");
    assert!(
        text.contains("none"),
        "the call's listener accepted: {text}"
    );
}
