//! The kernel sandbox of command tools, attacked from inside: each test gives the agent a way
//! to run code or reach a file that a check of ours might have missed (often a bash shell, the
//! "check we forgot"), and shows the kernel still refuses what the manifest did not grant:
//! reading or writing outside the declared roots, the network, processes that outlive their
//! call, resources past their limits, the server's environment and descriptors, a symlink
//! swapped between the path check and the open, and the red-team findings of section 10 (a
//! granted path swapped for a symlink after load, unix sockets by path, kernel keyrings, System
//! V IPC, memfd, FIFOs and sockets in a writable directory, a command's own exit status 125).
//!
//! Every attack has a control (`…_without_sandbox_…`): the same manifest with
//! `sandbox = "off"` (and `accept_risk = ["unsandboxed"]`), where the attack must work. A
//! control that fails means the attack is broken, not that the sandbox works.

use std::io::Read as _;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::fixtures::{SandboxTree, unique};
use crate::support::processes::eventually;
use crate::support::stdio::{
    REPLY_TIMEOUT, Server, airlock, call, outcome, request, spawn_command,
};

/// Whether a manifest's tools run in the sandbox.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Mode {
    On,
    Off,
}

impl Mode {
    /// A tool's `extra` keys as this mode allows them: with the sandbox off, airlock refuses
    /// the sandbox's grants (`read`, `write`, `exec`, `network`, `resources`), so they go.
    fn grants(self, extra: &str) -> String {
        const GRANTS: [&str; 5] = ["read =", "write =", "exec =", "network =", "resources ="];
        extra
            .lines()
            .filter(|line| self == Self::On || !GRANTS.iter().any(|key| line.starts_with(key)))
            .map(|line| format!("{line}\n"))
            .collect()
    }

    /// The `sandbox` and `accept_risk` keys of a tool that accepts `risks` besides.
    fn keys(self, risks: &[&str]) -> String {
        let mut risks = risks.to_vec();
        let mut keys = String::new();
        if self == Self::Off {
            risks.insert(0, "unsandboxed");
            keys.push_str("sandbox = \"off\"\n");
        }
        if !risks.is_empty() {
            keys.push_str(&format!("accept_risk = {risks:?}\n"));
        }
        keys
    }
}

/// Fails the test, naming the package to install, if a program this test needs is missing.
pub(crate) fn require(program: &str, package: &str) {
    assert!(
        Path::new(program).is_file(),
        "{program} is missing: install the `{package}` package to run the sandbox tests"
    );
}

/// A `[[tool]]` running agent text in bash: the shape of a check we forgot. `extra` holds
/// more keys (`write`, `exec`, `network`, `resources`, `timeout_ms`).
fn shell_tool(name: &str, mode: Mode, extra: &str) -> String {
    require("/usr/bin/bash", "bash");
    format!(
        r#"
[[tool]]
name = "{name}"
description = "Runs agent text in bash"
command = ["/usr/bin/bash", "-c", "{{script}}"]
workdir = "work"
# stdout only, as these tests read it: bash run as root also says on stderr that it cannot
# set its uid (SECURITY.md, "Root and the launcher uid").
stderr = "drop"
args.script = {{ type = "string", max_length = 4000 }}
{extra}{keys}"#,
        extra = mode.grants(extra),
        keys = mode.keys(&["interpreter_code"])
    )
}

/// Runs `script` through the bash tool `tool`.
fn bash(server: &mut Server, tool: &str, script: &str) -> (bool, String) {
    outcome(&server.request(&call(1, tool, json!({ "script": script }))))
}

/// What shows that an attack worked.
enum Sign {
    /// The result holds this text.
    Shows(String),
    /// This file exists afterwards.
    Creates(PathBuf),
    /// This file no longer holds this text.
    Alters(PathBuf, String),
    /// This file is gone.
    Removes(PathBuf),
}

/// One attack: a call, and the signs that it worked.
struct Attack {
    what: String,
    tool: &'static str,
    args: Value,
    signs: Vec<Sign>,
}

impl Attack {
    fn new(what: impl Into<String>, tool: &'static str, args: Value, signs: Vec<Sign>) -> Self {
        Self {
            what: what.into(),
            tool,
            args,
            signs,
        }
    }

    /// A bash attack through the `shell` tool.
    fn bash(what: &str, script: &str, signs: Vec<Sign>) -> Self {
        Self::new(what, "shell", json!({ "script": script }), signs)
    }
}

/// Runs each attack; returns a line for each one that worked, with its result.
fn successes(server: &mut Server, attacks: &[Attack]) -> Vec<String> {
    let mut worked = Vec::new();
    for (id, attack) in (1..).zip(attacks) {
        let reply = server.request(&call(id, attack.tool, attack.args.clone()));
        let (_, text) = outcome(&reply);
        let seen: Vec<String> = attack
            .signs
            .iter()
            .filter_map(|sign| match sign {
                Sign::Shows(needle) if text.contains(needle.as_str()) => {
                    Some(format!("showed {needle:?}"))
                }
                Sign::Creates(path) if path.exists() => Some(format!("created {}", path.display())),
                Sign::Alters(path, was)
                    if std::fs::read_to_string(path).ok().as_deref() != Some(was.as_str()) =>
                {
                    Some(format!("altered {}", path.display()))
                }
                Sign::Removes(path) if !path.exists() => {
                    Some(format!("removed {}", path.display()))
                }
                _ => None,
            })
            .collect();
        if !seen.is_empty() {
            worked.push(format!(
                "{}: {} — result: {text:?}",
                attack.what,
                seen.join(", ")
            ));
        }
    }
    worked
}

/// Asserts that no attack worked (sandbox on) or that every one did (the control).
fn assert_attacks(mode: Mode, server: &mut Server, attacks: &[Attack]) {
    let worked = successes(server, attacks);
    match mode {
        Mode::On => assert!(
            worked.is_empty(),
            "the sandbox let these through:\n{}",
            worked.join("\n")
        ),
        Mode::Off => assert_eq!(
            worked.len(),
            attacks.len(),
            "without the sandbox every attack must work, or the test proves nothing; these worked:\n{}",
            worked.join("\n")
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Writes

fn write_manifest(mode: Mode) -> String {
    shell_tool(
        "shell",
        mode,
        r#"write = ["out"]
exec = ["/usr/bin/rm"]"#,
    )
}

fn write_attacks(scratch: &SandboxTree) -> Vec<Attack> {
    let victim = scratch.outside().join("victim.txt");
    std::fs::write(&victim, "victim\n").unwrap();
    let doomed = scratch.outside().join("doomed.txt");
    std::fs::write(&doomed, "doomed\n").unwrap();
    let inside = scratch.work().join("inside.txt");
    let absolute = scratch.outside().join("absolute.txt");
    vec![
        Attack::bash(
            "create a file beside the workdir",
            "echo pwned > ../outside/new.txt",
            vec![Sign::Creates(scratch.outside().join("new.txt"))],
        ),
        Attack::bash(
            "create a file by absolute path",
            &format!("echo pwned > {}", absolute.display()),
            vec![Sign::Creates(absolute)],
        ),
        Attack::bash(
            "truncate a file outside",
            ": > ../outside/victim.txt",
            vec![Sign::Alters(victim, "victim\n".to_owned())],
        ),
        Attack::bash(
            "remove a file outside",
            "rm -f -- ../outside/doomed.txt",
            vec![Sign::Removes(doomed)],
        ),
        Attack::bash(
            "create a file in the workdir, not a writable directory",
            "echo pwned > made-here.txt",
            vec![Sign::Creates(scratch.work().join("made-here.txt"))],
        ),
        Attack::bash(
            "overwrite a file in the workdir",
            "echo pwned > inside.txt",
            vec![Sign::Alters(inside, "inside-file\n".to_owned())],
        ),
    ]
}

/// A command can create, modify and delete files in its declared `write` directories, and
/// nowhere else: not beside its workdir, not by absolute path, not in the workdir itself.
#[test]
fn writes_outside_the_declared_directories_are_refused() {
    let scratch = SandboxTree::new("write");
    let mut server = scratch.serve(&write_manifest(Mode::On), &[]);
    assert_attacks(Mode::On, &mut server, &write_attacks(&scratch));
    let (failed, text) = bash(
        &mut server,
        "shell",
        "echo first > out/made.txt && echo second >> out/made.txt && echo gone > out/old.txt && rm -- out/old.txt && echo done",
    );
    assert!(!failed, "{text}");
    assert_eq!(
        std::fs::read_to_string(scratch.work().join("out/made.txt")).unwrap(),
        "first\nsecond\n"
    );
    assert!(!scratch.work().join("out/old.txt").exists());
}

/// The control: without the sandbox every write above lands.
#[test]
fn writes_outside_the_declared_directories_work_without_sandbox() {
    let scratch = SandboxTree::new("write-off");
    let mut server = scratch.serve(&write_manifest(Mode::Off), &[]);
    assert_attacks(Mode::Off, &mut server, &write_attacks(&scratch));
}

// ---------------------------------------------------------------------------------------------
// 2. Reads

fn read_attacks(scratch: &SandboxTree) -> Vec<Attack> {
    let mut attacks = vec![
        Attack::bash(
            "read a secret beside the workdir",
            "read -r line < ../outside/secret.txt; echo \"$line\"",
            vec![Sign::Shows(scratch.secret.clone())],
        ),
        Attack::bash(
            "read it by absolute path",
            &format!(
                "read -r line < {}; echo \"$line\"",
                scratch.outside().join("secret.txt").display()
            ),
            vec![Sign::Shows(scratch.secret.clone())],
        ),
        Attack::bash(
            "list the directory beside the workdir",
            "echo ../outside/*",
            vec![Sign::Shows("../outside/secret.txt".to_owned())],
        ),
    ];
    // /etc/shadow is a secret only where this test can read it (as root); elsewhere it
    // proves nothing either way.
    match std::fs::read_to_string("/etc/shadow") {
        Ok(shadow) => {
            let first = shadow.lines().next().unwrap_or_default().to_owned();
            assert!(!first.is_empty(), "/etc/shadow is empty");
            attacks.push(Attack::bash(
                "read /etc/shadow",
                "read -r line < /etc/shadow; echo \"$line\"",
                vec![Sign::Shows(first)],
            ));
        }
        Err(error) => eprintln!("/etc/shadow is not readable by the tests ({error}): skipped"),
    }
    attacks
}

/// Reads outside the workdir, the system list and the declared roots are refused: a secret
/// in a sibling directory (by relative and absolute path, and its listing) and /etc/shadow.
#[test]
fn reads_outside_the_declared_roots_are_refused() {
    let scratch = SandboxTree::new("read");
    let mut server = scratch.serve(&shell_tool("shell", Mode::On, ""), &[]);
    assert_attacks(Mode::On, &mut server, &read_attacks(&scratch));
    // The workdir itself is readable.
    let (failed, text) = bash(
        &mut server,
        "shell",
        "read -r line < inside.txt; echo \"$line\"",
    );
    assert_eq!((failed, text.as_str()), (false, "inside-file\n"));
}

/// The control: without the sandbox every read above works.
#[test]
fn reads_outside_the_declared_roots_work_without_sandbox() {
    let scratch = SandboxTree::new("read-off");
    let mut server = scratch.serve(&shell_tool("shell", Mode::Off, ""), &[]);
    assert_attacks(Mode::Off, &mut server, &read_attacks(&scratch));
}

/// A `read` root makes its files readable, and only those.
#[test]
fn a_declared_read_root_is_readable() {
    let scratch = SandboxTree::new("readroot");
    let extra = scratch.dir.join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(extra.join("notes.txt"), "declared-notes\n").unwrap();
    let manifest = shell_tool(
        "shell",
        Mode::On,
        &format!("read = [{:?}]", extra.to_str().unwrap()),
    );
    let mut server = scratch.serve(&manifest, &[]);
    let (failed, text) = bash(
        &mut server,
        "shell",
        &format!(
            "read -r line < {}; echo \"$line\"",
            extra.join("notes.txt").display()
        ),
    );
    assert_eq!((failed, text.as_str()), (false, "declared-notes\n"));
    assert_attacks(Mode::On, &mut server, &read_attacks(&scratch));
}

// ---------------------------------------------------------------------------------------------
// 3. Network

/// A TCP listener on loopback that a tool may try to reach.
struct Listener {
    socket: TcpListener,
}

impl Listener {
    fn new() -> Self {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        Self { socket }
    }

    fn port(&self) -> u16 {
        self.socket.local_addr().unwrap().port()
    }

    /// What the first connection sent, if one arrives within `wait`.
    fn accepted(&self, wait: Duration) -> Option<String> {
        let start = Instant::now();
        loop {
            match self.socket.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
                    let mut text = String::new();
                    let _read = stream.read_to_string(&mut text);
                    return Some(text);
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => panic!("accept: {error}"),
            }
            if start.elapsed() > wait {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How long a refused connection or datagram is waited for after the call has returned: it
/// would have arrived before the reply, this only covers scheduling.
const ABSENCE_WAIT: Duration = Duration::from_millis(500);

/// A TCP connection to a listener on 127.0.0.1 and a UDP datagram to a socket on 127.0.0.1
/// never arrive, without `network` and (issue 36: the command's namespace holds only the
/// proxy) with `network = true` too; `the_network_is_open_without_sandbox` is the control,
/// and `network.rs` shows the proxied way out.
#[test]
fn the_network_is_closed_unless_declared() {
    let scratch = SandboxTree::new("net");
    let manifest = format!(
        "{}{}",
        shell_tool("shell", Mode::On, ""),
        shell_tool("shell_net", Mode::On, "network = true")
    );
    let mut server = scratch.serve(&manifest, &[]);
    for (tool, open) in [("shell", false), ("shell_net", false)] {
        let listener = Listener::new();
        let (failed, text) = bash(
            &mut server,
            tool,
            &format!("echo hi > /dev/tcp/127.0.0.1/{}", listener.port()),
        );
        let received = listener.accepted(if open { REPLY_TIMEOUT } else { ABSENCE_WAIT });
        if open {
            assert!(!failed, "{tool}: {text}");
            assert_eq!(received.as_deref(), Some("hi\n"), "{tool}");
        } else {
            assert!(failed, "{tool}: the connection did not fail: {text}");
            assert_eq!(received, None, "{tool}: the listener got a connection");
        }

        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_read_timeout(Some(if open { REPLY_TIMEOUT } else { ABSENCE_WAIT }))
            .unwrap();
        let port = udp.local_addr().unwrap().port();
        let (failed, text) = bash(
            &mut server,
            tool,
            &format!("echo hi > /dev/udp/127.0.0.1/{port}"),
        );
        let mut buffer = [0_u8; 64];
        let received = udp
            .recv(&mut buffer)
            .ok()
            .map(|n| String::from_utf8_lossy(&buffer[..n]).into_owned());
        if open {
            assert!(!failed, "{tool}: {text}");
            assert_eq!(received.as_deref(), Some("hi\n"), "{tool}");
        } else {
            assert_eq!(received, None, "{tool}: the UDP socket got a datagram");
        }
    }
}

/// The control for the network: without the sandbox, the same tool (no `network` key)
/// connects.
#[test]
fn the_network_is_open_without_sandbox() {
    let scratch = SandboxTree::new("net-off");
    let mut server = scratch.serve(&shell_tool("shell", Mode::Off, ""), &[]);
    let listener = Listener::new();
    let (failed, text) = bash(
        &mut server,
        "shell",
        &format!("echo hi > /dev/tcp/127.0.0.1/{}", listener.port()),
    );
    assert!(!failed, "{text}");
    assert_eq!(listener.accepted(REPLY_TIMEOUT).as_deref(), Some("hi\n"));
}

// ---------------------------------------------------------------------------------------------
// 4. Processes that try to outlive their call

/// A live process: its pid and argv.
type Process = (u32, Vec<String>);

/// Live processes with an argv element containing `tag`: the `sleep`s named after it, and the
/// script that carries it. (A zombie's cmdline is empty, so only live processes match.)
fn tagged(tag: &str) -> Vec<Process> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = cmdline
            .strip_suffix(&[0])
            .unwrap_or(&cmdline)
            .split(|byte| *byte == 0)
            .map(|element| String::from_utf8_lossy(element).into_owned())
            .collect();
        if argv.iter().any(|element| element.contains(tag)) {
            found.push((pid, argv));
        }
    }
    found
}

/// How many of `processes` have `marker` as an argument of their own (`sleep <marker>`).
fn count(processes: &[Process], marker: &str) -> usize {
    processes
        .iter()
        .filter(|(_, argv)| argv.iter().any(|element| element == marker))
        .count()
}

/// SIGKILLs processes this test started (found by their tag), ignoring any already gone.
fn kill_all(processes: &[Process]) {
    for (pid, _) in processes {
        let _status = spawn_command(Path::new("kill"))
            .args(["-KILL", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// The processes tagged `tag` still alive after up to 5 s (none, as soon as all are gone);
/// they are killed before returning, so a failed test leaves nothing behind.
fn survivors(tag: &str) -> Vec<Process> {
    let mut left = Vec::new();
    eventually(Duration::from_secs(5), || {
        left = tagged(tag);
        left.is_empty()
    });
    kill_all(&left);
    left
}

/// Four ways to escape a call's process group (a new session, nohup, timeout, which makes its
/// own group, and a double fork), each `sleep`ing under its own marker, then a wait for the
/// file `go` in the workdir that only the normal-end case creates.
fn escape_script(markers: &[String]) -> String {
    format!(
        "setsid -f sleep {} </dev/null >/dev/null 2>&1
nohup sleep {} </dev/null >/dev/null 2>&1 &
timeout 600 sleep {} </dev/null >/dev/null 2>&1 &
(sleep {} </dev/null >/dev/null 2>&1 &) &
while [[ ! -e go ]]; do sleep 0.05; done
echo finished",
        markers[0], markers[1], markers[2], markers[3]
    )
}

fn escape_manifest(mode: Mode) -> String {
    for (program, package) in [
        ("/usr/bin/setsid", "util-linux"),
        ("/usr/bin/sleep", "coreutils"),
        ("/usr/bin/nohup", "coreutils"),
        ("/usr/bin/timeout", "coreutils"),
    ] {
        require(program, package);
    }
    let exec =
        r#"exec = ["/usr/bin/setsid", "/usr/bin/sleep", "/usr/bin/nohup", "/usr/bin/timeout"]"#;
    format!(
        "{}{}",
        shell_tool("escape", mode, &format!("{exec}\ntimeout_ms = 60000")),
        shell_tool(
            "escape_timeout",
            mode,
            &format!("{exec}\ntimeout_ms = 3000")
        )
    )
}

/// How a call whose command left processes behind ends.
#[derive(Clone, Copy, Debug)]
enum End {
    /// The command returns normally.
    Normally,
    /// The call passes its `timeout_ms`.
    Timeout,
    /// The client cancels it.
    Cancelled,
    /// airlock is SIGKILLed mid-call.
    ServerKilled,
}

/// Runs the escape script, ends the call as `end` says, and returns the processes of the
/// call (the script and its escapes) still alive afterwards, after up to 5 s of waiting for
/// them to go.
fn escapees(mode: Mode, end: End) -> Vec<Process> {
    let scratch = SandboxTree::new(&format!("escape-{end:?}-{mode:?}"));
    let tag = unique();
    let markers: Vec<String> = (3001..=3004).map(|n| format!("{n}.{tag}")).collect();
    let mut server = scratch.serve(&escape_manifest(mode), &[]);
    let tool = match end {
        End::Timeout => "escape_timeout",
        _ => "escape",
    };
    let id = 7;
    server.send(&call(
        id,
        tool,
        json!({ "script": escape_script(&markers) }),
    ));
    // Every escape is running before the call ends: none can pass by failing to start.
    let mut running = Vec::new();
    let started = eventually(REPLY_TIMEOUT, || {
        running = tagged(&tag);
        markers.iter().all(|marker| count(&running, marker) > 0)
    });
    if !started {
        kill_all(&running);
        panic!("{end:?}: the escapes did not all start: {running:?}");
    }
    match end {
        End::Normally => {
            std::fs::write(scratch.work().join("go"), "").unwrap();
            let (failed, text) = outcome(&server.recv());
            assert!(!failed, "{text}");
            assert_eq!(text, "finished\n");
        }
        End::Timeout => {
            let (failed, text) = outcome(&server.recv());
            assert!(failed && text.contains("time limit of 3000 ms"), "{text}");
        }
        End::Cancelled => {
            server.send(&format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"test"}}}}"#
            ));
            let ping = server.request(&request(8, "ping", json!({})));
            assert_eq!(ping, json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
        }
        End::ServerKilled => {
            crate::support::processes::signal(server.pid(), "KILL");
            server.wait(REPLY_TIMEOUT);
        }
    }
    survivors(&tag)
}

/// `setsid -f`, `nohup … &`, `timeout … &` and a double fork leave no process behind when the
/// call returns normally.
#[test]
fn no_process_outlives_a_call_that_returns() {
    assert_eq!(escapees(Mode::On, End::Normally), []);
}

/// … nor when the call passes its time limit.
#[test]
fn no_process_outlives_a_call_that_times_out() {
    assert_eq!(escapees(Mode::On, End::Timeout), []);
}

/// … nor when the client cancels the call.
#[test]
fn no_process_outlives_a_cancelled_call() {
    assert_eq!(escapees(Mode::On, End::Cancelled), []);
}

/// … nor when airlock itself is SIGKILLed mid-call.
#[test]
fn no_process_outlives_airlock_killed_mid_call() {
    assert_eq!(escapees(Mode::On, End::ServerKilled), []);
}

/// The control: without the sandbox, the `setsid` escape survives every way a call ends
/// (the process group kill cannot reach a new session).
#[test]
fn processes_outlive_their_call_without_sandbox() {
    for end in [
        End::Normally,
        End::Timeout,
        End::Cancelled,
        End::ServerKilled,
    ] {
        let left = escapees(Mode::Off, end);
        assert!(
            left.iter().any(|(_, argv)| argv.len() == 2
                && argv[0] == "sleep"
                && argv[1].starts_with("3001.")),
            "{end:?}: the setsid escape did not survive without the sandbox: {left:?}"
        );
    }
}

/// A launcher serves a tool's calls one after another, in one PID namespace: the second
/// call's shell has a higher pid there than the first call's background process (a fresh
/// namespace would start again at 2), yet that process is gone, killed before the first call
/// was reported, and so is everything it could have left.
#[test]
fn a_call_finds_nothing_of_the_call_before_it_in_its_launcher() {
    let scratch = SandboxTree::new("reuse");
    let exec = r#"exec = ["/usr/bin/setsid", "/usr/bin/sleep"]"#;
    let mut server = scratch.serve(&shell_tool("shell", Mode::On, exec), &[]);
    let (failed, first) = bash(
        &mut server,
        "shell",
        "/usr/bin/sleep 300 & echo $!; /usr/bin/setsid -f /usr/bin/sleep 300; echo $$",
    );
    assert!(!failed, "{first}");
    let left: Vec<u32> = first.lines().map(|pid| pid.parse().unwrap()).collect();
    let [background, shell] = left[..] else {
        panic!("expected two pids: {first}");
    };
    let (failed, second) = bash(
        &mut server,
        "shell",
        &format!(
            "for pid in {background} $(({background} + 1)) $(({background} + 2)); do \
             kill -0 $pid 2>/dev/null && echo alive $pid; done; echo $$"
        ),
    );
    assert!(!failed, "{second}");
    let lines: Vec<&str> = second.lines().collect();
    let [own] = lines[..] else {
        panic!("a process of the first call is alive in the second: {second}");
    };
    let own: u32 = own.parse().unwrap();
    assert!(
        own > background && own > shell,
        "the second call ran in a fresh namespace (pid {own} after {background} and {shell}), \
         so this test shows nothing about reuse"
    );
}

/// Idle launchers, kept for a tool's next calls, die with airlock when it is SIGKILLed, and
/// with them their namespaces.
#[test]
fn idle_launchers_die_with_airlock() {
    let scratch = SandboxTree::new("idle");
    let mut server = scratch.serve(&shell_tool("shell", Mode::On, ""), &[]);
    for _ in 0..2 {
        let (failed, text) = bash(&mut server, "shell", "echo ok");
        assert!(!failed, "{text}");
    }
    let launchers = launchers_of(server.pid());
    assert!(!launchers.is_empty(), "no idle launcher after two calls");
    crate::support::processes::signal(server.pid(), "KILL");
    server.wait(REPLY_TIMEOUT);
    let gone = |pid: &u32| !Path::new(&format!("/proc/{pid}")).exists();
    assert!(
        eventually(Duration::from_secs(5), || launchers.iter().all(gone)),
        "idle launchers outlived airlock: {launchers:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. A fork bomb

fn bomb_manifest(mode: Mode) -> String {
    require("/usr/bin/sleep", "coreutils");
    format!(
        "{}{}",
        shell_tool(
            "bomb",
            mode,
            "exec = [\"/usr/bin/sleep\"]\nresources = { processes = 16 }\ntimeout_ms = 5000",
        ),
        shell_tool("shell", mode, "")
    )
}

/// The most `sleep <marker>` processes seen at once while `until` has not passed and fewer
/// than `enough` are seen.
fn peak(marker: &str, enough: usize, until: Duration) -> usize {
    let mut most = 0;
    eventually(until, || {
        most = most.max(count(&tagged(marker), marker));
        most >= enough
    });
    most
}

/// A fork loop stops at `resources.processes` (16): at most 16 of its processes exist at
/// once, the call ends, airlock still answers a ping and another call, and nothing is left.
#[test]
fn a_fork_bomb_stops_at_the_process_limit() {
    let scratch = SandboxTree::new("bomb");
    let mut server = scratch.serve(&bomb_manifest(Mode::On), &[]);
    let marker = format!("100.{}", unique());
    server.send(&call(
        1,
        "bomb",
        json!({ "script": format!("while :; do sleep {marker} & done") }),
    ));
    // Sampled until the call's 5 s limit is near: the count must never pass the limit.
    let most = peak(&marker, usize::MAX, Duration::from_secs(4));
    let (failed, text) = outcome(&server.recv());
    let left = survivors(&marker);
    eprintln!("at most {most} processes of the fork loop at once");
    assert!(failed, "the fork loop ended without an error: {text}");
    assert!(
        (1..=16).contains(&most),
        "{most} processes of the fork loop at once (limit 16)"
    );
    let ping = server.request(&request(2, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
    assert_eq!(
        bash(&mut server, "shell", "echo alive"),
        (false, "alive\n".to_owned())
    );
    assert_eq!(left, [], "the fork loop left processes behind");
}

/// The control: without the sandbox the same tool starts 40 processes at once (a bounded
/// loop: an unbounded one would load the machine).
#[test]
fn a_fork_loop_passes_16_processes_without_sandbox() {
    let scratch = SandboxTree::new("bomb-off");
    let mut server = scratch.serve(&bomb_manifest(Mode::Off), &[]);
    let marker = format!("100.{}", unique());
    server.send(&call(
        1,
        "bomb",
        json!({ "script": format!("for ((i = 0; i < 40; i++)); do sleep {marker} & done; wait") }),
    ));
    let most = peak(&marker, 40, REPLY_TIMEOUT);
    let _reply = server.recv();
    kill_all(&tagged(&marker));
    assert!(
        most >= 40,
        "only {most} processes at once without the sandbox"
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Memory

/// Allocates a 1 GiB string (not constant-folded, so one copy) and prints its length.
const ALLOCATE_1_GIB: &str = "my $n = 1 << 30; my $x = \"a\" x $n; print length $x";

fn memory_manifest(mode: Mode) -> String {
    require("/usr/bin/perl", "perl");
    let tool = |name: &str, extra: &str| {
        format!(
            r#"
[[tool]]
name = "{name}"
description = "Allocates 1 GiB"
command = ["/usr/bin/perl", "-e", {ALLOCATE_1_GIB:?}]
workdir = "work"
{extra}{keys}"#,
            extra = mode.grants(extra),
            keys = mode.keys(&[])
        )
    };
    format!(
        "{}{}",
        tool("allocate", ""),
        tool(
            "allocate_2g",
            "resources = { memory_mib = 2048, call_memory_mib = 2048 }"
        )
    )
}

/// 1 GiB is refused under the default memory limit (512 MiB per process) and allowed under
/// 2048 MiB (per process and per call): the limit, not the machine, is what stopped it.
#[test]
fn memory_past_the_limit_is_refused() {
    let scratch = SandboxTree::new("memory");
    let mut server = scratch.serve(&memory_manifest(Mode::On), &[]);
    let (failed, text) = outcome(&server.request(&call(1, "allocate", json!({}))));
    assert!(
        failed,
        "1 GiB was allocated under the default limit: {text}"
    );
    assert!(!text.contains("1073741824"), "{text}");
    let (failed, text) = outcome(&server.request(&call(2, "allocate_2g", json!({}))));
    assert_eq!((failed, text.as_str()), (false, "1073741824"));
}

/// The control: without the sandbox the default tool allocates 1 GiB.
#[test]
fn memory_is_unbounded_without_sandbox() {
    let scratch = SandboxTree::new("memory-off");
    let mut server = scratch.serve(&memory_manifest(Mode::Off), &[]);
    let (failed, text) = outcome(&server.request(&call(1, "allocate", json!({}))));
    assert_eq!((failed, text.as_str()), (false, "1073741824"));
}

// ---------------------------------------------------------------------------------------------
// 7. airlock's own environment and descriptors

/// Starts airlock through `sh`, which opens `secret_file` on descriptor 7 without
/// close-on-exec, with `AIRLOCK_TEST_SECRET` set; the pid is airlock's (sh execs it).
fn serve_with_secrets(scratch: &SandboxTree, manifest: &str, env_secret: &str) -> Server {
    let path = scratch.manifest(manifest);
    let secret_file = scratch.outside().join("fd-secret.txt");
    let airlock = airlock();
    let mut server = Server::start_with(
        Path::new("/bin/sh"),
        &[
            "-c",
            "exec 7<\"$1\"; shift; exec \"$@\"",
            "sh",
            secret_file.to_str().unwrap(),
            airlock.to_str().unwrap(),
            "serve",
            "--manifest",
            &path,
        ],
        &[("AIRLOCK_TEST_SECRET", env_secret)],
    );
    server.initialize("2025-11-25");
    server
}

fn inheritance_attacks(pid: u32, env_secret: &str, fd_secret: &str) -> Vec<Attack> {
    vec![
        Attack::bash(
            "read airlock's environment",
            &format!("mapfile -d '' vars < /proc/{pid}/environ; printf '%s\\n' \"${{vars[@]}}\""),
            vec![Sign::Shows(env_secret.to_owned())],
        ),
        Attack::bash(
            "read a descriptor airlock inherited",
            "read -r line <&7; echo \"$line\"",
            vec![Sign::Shows(fd_secret.to_owned())],
        ),
    ]
}

fn inheritance(mode: Mode) {
    let scratch = SandboxTree::new(&format!("inherit-{mode:?}"));
    let env_secret = format!("env-secret-{}", unique());
    let fd_secret = format!("fd-secret-{}", unique());
    std::fs::write(
        scratch.outside().join("fd-secret.txt"),
        format!("{fd_secret}\n"),
    )
    .unwrap();
    let mut server = serve_with_secrets(&scratch, &shell_tool("shell", mode, ""), &env_secret);
    let attacks = inheritance_attacks(server.pid(), &env_secret, &fd_secret);
    assert_attacks(mode, &mut server, &attacks);
}

/// A command cannot read airlock's environment through /proc, nor a descriptor airlock
/// inherited without close-on-exec.
#[test]
fn airlocks_environment_and_descriptors_stay_out_of_reach() {
    inheritance(Mode::On);
}

/// The control: without the sandbox both leak.
#[test]
fn airlocks_environment_and_descriptors_leak_without_sandbox() {
    inheritance(Mode::Off);
}

/// Has a command SIGKILL airlock by pid; returns whether airlock survived (it still answers a
/// ping).
fn airlock_survives_its_command(mode: Mode) -> bool {
    let scratch = SandboxTree::new(&format!("signal-{mode:?}"));
    let mut server = scratch.serve(&shell_tool("shell", mode, ""), &[]);
    let script = format!("kill -KILL {}", server.pid());
    server.send(&call(1, "shell", json!({ "script": script })));
    if eventually(Duration::from_secs(2), || {
        std::fs::read_to_string(format!("/proc/{}/stat", server.pid()))
            .map_or(true, |stat| stat.contains(") Z "))
    }) {
        return false;
    }
    let _reply = server.recv();
    server.request(&request(2, "ping", json!({})))["result"] == json!({})
}

/// A command cannot signal airlock (another PID namespace, and Landlock's signal scope).
#[test]
fn a_command_cannot_kill_airlock() {
    assert!(airlock_survives_its_command(Mode::On));
}

/// The control: without the sandbox a command kills airlock with bash's `kill`.
#[test]
fn a_command_kills_airlock_without_sandbox() {
    assert!(!airlock_survives_its_command(Mode::Off));
}

// ---------------------------------------------------------------------------------------------
// 8. A symlink swapped between the path check and the open

/// Counts of the race's outcomes.
#[derive(Debug, Default)]
struct Race {
    calls: usize,
    inside: usize,
    outside: usize,
}

/// Reads `dir/secret.txt` through a path argument while a thread swaps `dir` between a real
/// directory of the workdir and a symlink to the outside directory. airlock resolves and
/// checks the path, then the command opens it again: a swap in between reads outside.
/// Stops after `max_calls`, 120 s, or once `stop_at_outside` outside reads were seen.
fn race(mode: Mode, max_calls: usize, stop_at_outside: usize) -> Race {
    require("/usr/bin/head", "coreutils");
    let scratch = SandboxTree::new(&format!("race-{mode:?}"));
    let work = scratch.work();
    std::fs::create_dir_all(work.join("real_dir")).unwrap();
    std::fs::write(work.join("real_dir/secret.txt"), "inside-file\n").unwrap();
    std::os::unix::fs::symlink(scratch.outside(), work.join("link_dir")).unwrap();
    let manifest = format!(
        r#"
[limits]
tool_call_rate = {{ per_minute = 6000000, burst = 100000 }}
max_in_flight = 8

[[tool]]
name = "read_file"
description = "Reads the start of a file in the workdir"
command = ["head", "--bytes=100", "--", "{{path}}"]
workdir = "work"
args.path = {{ type = "path", kind = "file" }}
{keys}"#,
        keys = mode.keys(&[])
    );
    let mut server = scratch.serve(&manifest, &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        let work = work.clone();
        thread::spawn(move || {
            let dir = work.join("dir");
            while !stop.load(Ordering::Relaxed) {
                for name in ["real_dir", "link_dir"] {
                    std::fs::rename(work.join(name), &dir).unwrap();
                    std::fs::rename(&dir, work.join(name)).unwrap();
                }
            }
        })
    };
    let mut race = Race::default();
    let start = Instant::now();
    while race.calls < max_calls
        && race.outside < stop_at_outside
        && start.elapsed() < Duration::from_secs(120)
    {
        // Eight calls in flight at once, to widen the window.
        for id in 0..8 {
            server.send(&call(id, "read_file", json!({ "path": "dir/secret.txt" })));
        }
        for _ in 0..8 {
            let reply = server.recv();
            let text = reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("not a tool result: {reply}"));
            race.calls += 1;
            if text.contains(&scratch.secret) {
                race.outside += 1;
            } else if text == "inside-file\n" {
                race.inside += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().expect("the flipper thread failed");
    race
}

/// A directory swapped for a symlink to outside between airlock's path check and the
/// command's open never yields the outside file: the kernel, not the check, has the last
/// word. (The leaf is always resolved before it is passed, so the swap is of a parent.)
#[test]
fn a_symlink_swapped_after_the_path_check_never_reads_outside() {
    let race = race(Mode::On, 4000, usize::MAX);
    eprintln!("{race:?}");
    assert_eq!(race.outside, 0, "{race:?}");
    assert!(race.calls >= 400, "too few calls ran: {race:?}");
    assert!(race.inside > 0, "no call read the inside file: {race:?}");
}

/// The control: without the sandbox the same race reads the outside file.
#[test]
fn a_symlink_swapped_after_the_path_check_reads_outside_without_sandbox() {
    let race = race(Mode::Off, 4000, 1);
    assert!(race.outside > 0, "the race was never won: {race:?}");
}

// ---------------------------------------------------------------------------------------------
// 9. Shapes a reviewer found, now contained by the kernel

fn shapes_manifest(scratch: &SandboxTree, mode: Mode) -> String {
    for (program, package) in [
        ("/usr/bin/find", "findutils"),
        ("/usr/bin/make", "make"),
        ("/usr/bin/c++filt", "binutils"),
        ("/usr/bin/sqlite3", "sqlite3"),
        ("/usr/bin/bash", "bash"),
    ] {
        require(program, package);
    }
    let work = scratch.work();
    std::fs::write(work.join("data/lib.rs"), "// rust\n").unwrap();
    std::fs::write(work.join("Makefile"), "all:\n\t@echo $(CFLAGS)\n").unwrap();
    std::fs::write(work.join("db"), "").unwrap();
    std::fs::write(
        scratch.outside().join("secret.sql"),
        format!("SELECT '{}-sql';\n", scratch.secret),
    )
    .unwrap();
    let keys = |risk: &str| mode.keys(&[risk]);
    let (find, make, demangle, code) = (
        keys("expression_operands"),
        keys("assignment_operands"),
        keys("response_files"),
        keys("interpreter_code"),
    );
    format!(
        r#"
[[tool]]
name = "find_rs"
description = "Finds Rust files"
command = ["find", "--", "{{dirs}}", "-name", "*.rs"]
workdir = "work"
args.dirs = {{ type = "array", max_items = 10 }}
{find}
[[tool]]
name = "make_target"
description = "Builds a target"
command = ["make", "--", "{{target}}"]
workdir = "work"
args.target = {{ type = "string" }}
{make}
[[tool]]
name = "demangle"
description = "Demangles a C++ symbol"
command = ["c++filt", "--", "{{symbol}}"]
workdir = "work"
args.symbol = {{ type = "string" }}
{demangle}
[[tool]]
name = "query"
description = "Queries the database read-only"
command = ["sqlite3", "-readonly", "db", "{{sql}}"]
workdir = "work"
args.sql = {{ type = "string" }}
{code}
[[tool]]
name = "bash_stdin"
description = "bash reading its script on stdin"
command = ["/usr/bin/bash"]
workdir = "work"
args.script = {{ type = "string", stdin = true, max_length = 4000 }}
{code}
{fixed}"#,
        fixed = mistakes_manifest(mode),
    )
}

/// The review's find, make and c++filt shapes with the hostile words fixed in the manifest
/// (an operator's mistake, or a value the first wall missed): nothing of the agent's reaches
/// them, so `airlock check` and the call-time refusals let them through, and only the kernel
/// stands between them and the host. One tool per attack, each without arguments.
fn mistakes_manifest(mode: Mode) -> String {
    let tools: [(&str, &str); 8] = [
        (
            "find_exec_fprint",
            r#""find", "--", "data", "-exec", "/usr/bin/id", ";", "-fprint", "../find_x""#,
        ),
        (
            "find_exec",
            r#""find", "--", "data", "-exec", "/usr/bin/id", ";""#,
        ),
        (
            "find_fprint",
            r#""find", "--", "data", "-fprint", "../find_y""#,
        ),
        (
            "find_outside",
            r#""find", "--", "../outside", "-print", "-o", "-name", "*.rs""#,
        ),
        ("make_shell", r#""make", "--", "CFLAGS=;id;""#),
        (
            "make_read",
            r#""make", "--", "CFLAGS=$(info $(file <../outside/secret.txt))""#,
        ),
        (
            "make_write",
            r#""make", "--", "CFLAGS=$(file >../make_x,pwned)""#,
        ),
        (
            "demangle_file",
            r#""c++filt", "--", "@../outside/secret.txt""#,
        ),
    ];
    let keys = mode.keys(&[]);
    tools
        .iter()
        .map(|(name, argv)| {
            format!(
                "\n[[tool]]\nname = \"{name}\"\ndescription = \"A fixed shape\"\n\
                 command = [{argv}]\nworkdir = \"work\"\n{keys}\n"
            )
        })
        .collect()
}

fn shape_attacks(scratch: &SandboxTree) -> Vec<Attack> {
    let secret = &scratch.secret;
    let at = |name: &str| scratch.dir.join(name);
    vec![
        Attack::new(
            "find runs a program and writes a file",
            "find_exec_fprint",
            json!({}),
            vec![Sign::Shows("uid=".to_owned()), Sign::Creates(at("find_x"))],
        ),
        Attack::new(
            "find runs a program",
            "find_exec",
            json!({}),
            vec![Sign::Shows("uid=".to_owned())],
        ),
        Attack::new(
            "find writes a file outside",
            "find_fprint",
            json!({}),
            vec![Sign::Creates(at("find_y"))],
        ),
        Attack::new(
            "find lists the directory beside the workdir",
            "find_outside",
            json!({}),
            vec![Sign::Shows("secret.txt".to_owned())],
        ),
        Attack::new(
            "make runs a shell command",
            "make_shell",
            json!({}),
            vec![Sign::Shows("uid=".to_owned())],
        ),
        Attack::new(
            "make reads a file outside",
            "make_read",
            json!({}),
            vec![Sign::Shows(secret.clone())],
        ),
        Attack::new(
            "make writes a file outside",
            "make_write",
            json!({}),
            vec![Sign::Creates(at("make_x"))],
        ),
        Attack::new(
            "c++filt reads a response file outside",
            "demangle_file",
            json!({}),
            vec![Sign::Shows(secret.clone())],
        ),
        Attack::new(
            "sqlite3 runs a shell command",
            "query",
            json!({"sql": ".shell id"}),
            vec![Sign::Shows("uid=".to_owned())],
        ),
        Attack::new(
            "sqlite3 reads SQL from a file outside",
            "query",
            json!({"sql": ".read ../outside/secret.sql"}),
            vec![Sign::Shows(format!("{secret}-sql"))],
        ),
        Attack::new(
            "sqlite3 reads a file outside with readfile()",
            "query",
            json!({"sql": "SELECT readfile('../outside/secret.txt');"}),
            vec![Sign::Shows(secret.clone())],
        ),
        Attack::new(
            "sqlite3 writes a file outside with writefile()",
            "query",
            json!({"sql": "SELECT writefile('../sqlite_x', 'pwned');"}),
            vec![Sign::Creates(at("sqlite_x"))],
        ),
        Attack::new(
            "sqlite3 writes a backup outside",
            "query",
            json!({"sql": ".backup ../sqlite_y"}),
            vec![Sign::Creates(at("sqlite_y"))],
        ),
        Attack::new(
            "bash on stdin reads outside",
            "bash_stdin",
            json!({"script": "read -r line < ../outside/secret.txt; echo \"$line\""}),
            vec![Sign::Shows(secret.clone())],
        ),
        Attack::new(
            "bash on stdin writes outside",
            "bash_stdin",
            json!({"script": "echo pwned > ../bash_x"}),
            vec![Sign::Creates(at("bash_x"))],
        ),
        Attack::new(
            "bash on stdin writes in the workdir",
            "bash_stdin",
            json!({"script": "echo pwned > bash_y"}),
            vec![Sign::Creates(scratch.work().join("bash_y"))],
        ),
    ]
}

/// Reaches the network through `bash_stdin`; returns whether the listener got the bytes.
fn bash_stdin_connects(server: &mut Server, wait: Duration) -> bool {
    let listener = Listener::new();
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{}", listener.port());
    let _reply = server.request(&call(99, "bash_stdin", json!({ "script": script })));
    listener.accepted(wait).as_deref() == Some("hi\n")
}

/// The review's shapes under the sandbox: sqlite3's dot commands and file functions and bash
/// reading agent text on stdin (each with the risk `airlock check` now asks for), and find's
/// expression after `--`, make's variables and c++filt's response files with the hostile words
/// fixed in the manifest (given by the agent, the first wall now refuses them at call time:
/// `tests/it/arguments.rs`). None can run other programs, read outside its roots, write, or
/// reach the network.
#[test]
fn reviewer_shapes_are_contained() {
    let scratch = SandboxTree::new("shapes");
    let mut server = scratch.serve(&shapes_manifest(&scratch, Mode::On), &[]);
    assert_attacks(Mode::On, &mut server, &shape_attacks(&scratch));
    assert!(
        !bash_stdin_connects(&mut server, ABSENCE_WAIT),
        "bash on stdin reached the network"
    );
}

/// The control: without the sandbox every one of those shapes works.
#[test]
fn reviewer_shapes_work_without_sandbox() {
    let scratch = SandboxTree::new("shapes-off");
    let mut server = scratch.serve(&shapes_manifest(&scratch, Mode::Off), &[]);
    assert_attacks(Mode::Off, &mut server, &shape_attacks(&scratch));
    assert!(
        bash_stdin_connects(&mut server, REPLY_TIMEOUT),
        "bash on stdin did not reach the network without the sandbox"
    );
}

// ---------------------------------------------------------------------------------------------
// The manifest keys

/// By default a command can run only its own program; `exec` adds others.
#[test]
fn only_declared_programs_can_be_executed() {
    require("/usr/bin/id", "coreutils");
    let scratch = SandboxTree::new("exec");
    let manifest = format!(
        "{}{}",
        shell_tool("shell", Mode::On, ""),
        shell_tool("shell_id", Mode::On, "exec = [\"/usr/bin/id\"]")
    );
    let mut server = scratch.serve(&manifest, &[]);
    let (failed, text) = bash(&mut server, "shell", "/usr/bin/id -u");
    assert!(failed && !text.starts_with("0\n"), "{text}");
    let (failed, text) = bash(&mut server, "shell_id", "/usr/bin/id -u");
    assert!(!failed, "{text}");
    assert!(text.trim().parse::<u32>().is_ok(), "{text}");
}

/// `sandbox = "off"` is refused unless the tool accepts the risk by name.
#[test]
fn an_unsandboxed_tool_needs_its_risk_accepted() {
    let scratch = SandboxTree::new("check");
    let path = scratch.dir.join("tools.toml");
    std::fs::write(
        &path,
        r#"
[[tool]]
name = "t"
description = "d"
command = ["true"]
sandbox = "off"
"#,
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let output = crate::support::stdio::run(&airlock(), &["check", "--manifest", path], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unsandboxed"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// 10. The red-team findings
//
// Each holds the attack a red-team review found and its control. Most are Python through
// ctypes: the system calls bash cannot make (a unix socket by path, keyrings, System V IPC,
// memfd, FIFOs).

/// A `[[tool]]` running agent code in Python, the same shape as [`shell_tool`].
pub(crate) fn python_tool(name: &str, mode: Mode, extra: &str) -> String {
    require("/usr/bin/python3", "python3");
    format!(
        r#"
[[tool]]
name = "{name}"
description = "Runs agent code in Python"
command = ["/usr/bin/python3", "-c", "{{code}}"]
workdir = "work"
args.code = {{ type = "string", max_length = 4000 }}
{extra}{keys}"#,
        extra = mode.grants(extra),
        keys = mode.keys(&["interpreter_code"])
    )
}

/// Runs `code` through the Python tool `tool`.
pub(crate) fn python(server: &mut Server, tool: &str, code: &str) -> (bool, String) {
    outcome(&server.request(&call(1, tool, json!({ "code": code }))))
}

/// The fixed text of a call whose launcher refused to run the command.
const SANDBOX_FAILED: &str = "The sandbox could not be set up, so the command did not run.";

/// Lines `name result errno` printed by a probe, as (result, errno) by name.
pub(crate) fn probe_results(text: &str) -> std::collections::BTreeMap<String, (i64, i64)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?.to_owned();
            let result = words.next()?.parse().ok()?;
            let errno = words.next()?.parse().ok()?;
            Some((name, (result, errno)))
        })
        .collect()
}

/// Whether a failed system call was refused: by the sandbox's filter (ENOSYS for a call its
/// allowlist leaves out, EPERM for one its refusals name), or for want of permission (EACCES,
/// EPERM).
fn refused(result: (i64, i64)) -> bool {
    result.0 == -1 && matches!(result.1, 1 | 13 | 38)
}

// 10.1 A granted path inside a writable directory, swapped for a symbolic link

/// Runs `airlock check` on `text` written as `tools.toml`; returns its exit code and stderr.
fn check(scratch: &SandboxTree, text: &str) -> (Option<i32>, String) {
    let path = scratch.dir.join("tools.toml");
    std::fs::write(&path, text).unwrap();
    let output = crate::support::stdio::run(
        &airlock(),
        &["check", "--manifest", path.to_str().unwrap()],
        &[],
    );
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A bash tool `name` with `workdir` and more keys (sandboxed).
fn tool_in(name: &str, workdir: &str, extra: &str) -> String {
    format!(
        r#"
[[tool]]
name = "{name}"
description = "Runs agent text in bash"
command = ["/usr/bin/bash", "-c", "{{script}}"]
workdir = "{workdir}"
args.script = {{ type = "string", max_length = 4000 }}
{extra}
accept_risk = ["interpreter_code"]
"#
    )
}

/// A manifest that grants a path (a workdir, a `read` or `exec` entry, a path argument's
/// `within` root, another `write` directory) inside a directory some sandboxed tool may write
/// is refused at load: a call could replace that path with a symbolic link to anywhere, and
/// the next call's sandbox would grant where it points. The same grants beside the writable
/// directory pass.
#[test]
fn grants_inside_a_writable_directory_are_refused_at_load() {
    let scratch = SandboxTree::new("nested");
    let work = scratch.work();
    for dir in [
        "out/logs", "out/ro", "out/sub", "out/data", "logs", "ro", "sub",
    ] {
        std::fs::create_dir_all(work.join(dir)).unwrap();
    }
    for program in ["out/prog", "prog"] {
        std::fs::write(work.join(program), "#!/usr/bin/bash\n").unwrap();
        let mut permissions = std::fs::metadata(work.join(program)).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(work.join(program), permissions).unwrap();
    }
    let at = |relative: &str| work.join(relative).to_str().unwrap().to_owned();
    let writer = tool_in("writer", "work", "write = [\"out\"]");
    let path_tool = |within: &str| {
        format!(
            r#"
[[tool]]
name = "reader"
description = "Reads a file"
command = ["head", "--", "{{path}}"]
workdir = "work"
args.path = {{ type = "path", kind = "file", within = "{within}" }}
"#
        )
    };
    let cases = [
        (
            "a write directory inside another",
            tool_in("nested", "work", "write = [\"out\", \"out/logs\"]"),
            at("out/logs"),
        ),
        (
            "a read root inside the tool's own write directory",
            tool_in(
                "own",
                "work",
                &format!("write = [\"out\"]\nread = [{:?}]", at("out/ro")),
            ),
            at("out/ro"),
        ),
        (
            "a read root inside another tool's write directory",
            format!(
                "{writer}{}",
                tool_in("reader", "work", &format!("read = [{:?}]", at("out/ro")))
            ),
            at("out/ro"),
        ),
        (
            "a workdir inside another tool's write directory",
            format!("{writer}{}", tool_in("sub", "work/out/sub", "")),
            at("out/sub"),
        ),
        (
            "an exec program inside another tool's write directory",
            format!(
                "{writer}{}",
                tool_in("runner", "work", &format!("exec = [{:?}]", at("out/prog")))
            ),
            at("out/prog"),
        ),
        (
            "a path argument's root inside another tool's write directory",
            format!("{writer}{}", path_tool("out/data")),
            at("out/data"),
        ),
    ];
    let mut wrong = Vec::new();
    for (what, manifest, granted) in &cases {
        let (code, stderr) = check(&scratch, manifest);
        if code != Some(1)
            || !stderr.contains("lies inside")
            || !stderr.contains("writable directory")
            || !stderr.contains(granted.as_str())
        {
            wrong.push(format!("{what}: exit {code:?}, stderr {stderr:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "not refused as expected:\n{}",
        wrong.join("\n")
    );
    // The control: the same grants beside the writable directory pass.
    scratch.manifest(&format!(
        "{}{}{}{}",
        tool_in(
            "writer",
            "work",
            &format!(
                "write = [\"out\", \"logs\"]\nread = [{:?}]\nexec = [{:?}]",
                at("ro"),
                at("prog")
            )
        ),
        tool_in("sub", "work/sub", ""),
        tool_in("reader_ro", "work", &format!("read = [{:?}]", at("ro"))),
        path_tool("data"),
    ));
}

/// A `read` root replaced by a symbolic link to a directory outside after airlock loaded its
/// manifest never grants where the link points. A launcher confined before the swap holds
/// rules for the directory it opened then (now renamed), not for the link's target; a launcher
/// started after it checks each granted path's device and inode against the load-time record
/// and refuses to run.
#[test]
fn a_read_root_swapped_for_a_symlink_after_load_grants_nothing() {
    let scratch = SandboxTree::new("swap");
    let granted = scratch.dir.join("granted");
    let root = granted.join("ro");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("secret.txt"), "ro-file\n").unwrap();
    let manifest = shell_tool(
        "shell",
        Mode::On,
        &format!("read = [{:?}]", root.to_str().unwrap()),
    );
    let mut server = scratch.serve(&manifest, &[]);
    let script = format!(
        "read -r line < {} || exit 1; echo \"$line\"",
        root.join("secret.txt").display()
    );
    assert_eq!(
        bash(&mut server, "shell", &script),
        (false, "ro-file\n".to_owned())
    );
    std::fs::rename(&root, granted.join("ro.old")).unwrap();
    std::os::unix::fs::symlink(scratch.outside(), &root).unwrap();
    // Unsandboxed, the test itself now reads the secret through the link.
    assert!(
        std::fs::read_to_string(root.join("secret.txt"))
            .unwrap()
            .contains(&scratch.secret)
    );
    let check = |results: &[(bool, String)], when: &str| {
        for (n, (failed, text)) in results.iter().enumerate() {
            assert!(
                !text.contains(&scratch.secret),
                "call {n} {when} read the secret: {results:?}"
            );
            assert!(failed, "call {n} {when} succeeded: {results:?}");
        }
    };
    // Launchers confined before the swap: their view holds the directory they checked
    // (bound there, renamed since on the host), never the link's target.
    let before: Vec<(bool, String)> = (0..3)
        .map(|_| bash(&mut server, "shell", &script))
        .collect();
    for (n, (failed, text)) in before.iter().enumerate() {
        assert!(
            !text.contains(&scratch.secret) && (*failed || text == "ro-file\n"),
            "call {n} by a launcher from before the swap read something else: {before:?}"
        );
    }
    // Launchers started after it: refused before the command runs.
    let killed = kill_launchers(server.pid());
    assert!(killed > 0, "the server had no idle launcher to kill");
    let after: Vec<(bool, String)> = (0..3)
        .map(|_| bash(&mut server, "shell", &script))
        .collect();
    check(&after, "by a launcher started after the swap");
    for (n, (_, text)) in after.iter().enumerate() {
        assert!(
            text.starts_with(SANDBOX_FAILED),
            "call {n} after the swap was not refused by the launcher: {after:?}"
        );
    }
}

/// The sandbox launchers `server` started: its children running `__airlock-sandbox`.
fn launchers_of(server: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, after)) = stat.rsplit_once(") ") else {
            continue;
        };
        let parent: Option<u32> = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let launcher = cmdline
            .split(|byte| *byte == 0)
            .any(|arg| arg == b"__airlock-sandbox");
        if parent == Some(server) && launcher {
            found.push(pid);
        }
    }
    found
}

/// SIGKILLs the sandbox launchers `server` started and waits until each is dead (a zombie for
/// the server to reap); returns how many. The server notices at its next call and starts new
/// ones.
fn kill_launchers(server: u32) -> usize {
    let killed = launchers_of(server);
    for pid in &killed {
        crate::support::processes::signal(*pid, "KILL");
    }
    let dead = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, after)| after.starts_with('Z'))
        })
    };
    assert!(
        eventually(Duration::from_secs(10), || killed.iter().all(dead)),
        "killed launchers did not die"
    );
    killed.len()
}

// 10.2 Unix sockets by path

/// A unix stream listener and a datagram socket in the outside directory, nonblocking.
struct UnixTargets {
    stream_path: PathBuf,
    stream: std::os::unix::net::UnixListener,
    datagram_path: PathBuf,
    datagram: std::os::unix::net::UnixDatagram,
}

impl UnixTargets {
    fn new(scratch: &SandboxTree, tag: &str) -> Self {
        let stream_path = scratch.outside().join(format!("{tag}.sock"));
        let datagram_path = scratch.outside().join(format!("{tag}.dgram"));
        let _stale = std::fs::remove_file(&stream_path);
        let _stale = std::fs::remove_file(&datagram_path);
        let stream = std::os::unix::net::UnixListener::bind(&stream_path).unwrap();
        stream.set_nonblocking(true).unwrap();
        let datagram = std::os::unix::net::UnixDatagram::bind(&datagram_path).unwrap();
        datagram.set_nonblocking(true).unwrap();
        Self {
            stream_path,
            stream,
            datagram_path,
            datagram,
        }
    }

    /// Python that connects to the listener and sends to the datagram socket, printing
    /// `stream-ok` / `datagram-ok` for each that worked.
    fn attack(&self) -> String {
        format!(
            r#"import socket
for kind, path, name in ((socket.SOCK_STREAM, {stream:?}, "stream"), (socket.SOCK_DGRAM, {datagram:?}, "datagram")):
    try:
        s = socket.socket(socket.AF_UNIX, kind)
        if kind == socket.SOCK_STREAM:
            s.connect(path)
            s.sendall(b"hi")
        else:
            s.sendto(b"hi", path)
        print(name + "-ok")
    except OSError as e:
        print(name + "-refused", e.errno)
"#,
            stream = self.stream_path.to_str().unwrap(),
            datagram = self.datagram_path.to_str().unwrap(),
        )
    }

    /// Whether a connection or a datagram arrived within `wait`.
    fn reached(&self, wait: Duration) -> (bool, bool) {
        let mut connected = false;
        let mut received = false;
        eventually(wait, || {
            connected |= self.stream.accept().is_ok();
            let mut buffer = [0_u8; 16];
            received |= self.datagram.recv(&mut buffer).is_ok();
            connected && received
        });
        (connected, received)
    }
}

/// `socketpair` must keep working: programs talk to their children through it.
const SOCKETPAIR: &str = r#"import socket
a, b = socket.socketpair()
a.sendall(b"pair-ok")
print(b.recv(16).decode())
"#;

fn unix_manifest(mode: Mode) -> String {
    format!(
        "{}{}",
        python_tool("py", mode, ""),
        python_tool("py_net", mode, "network = true")
    )
}

/// A unix socket by path outside the roots (the shape of `docker.sock` or the system bus) is
/// out of reach, stream and datagram, with and without `network = true`; `socketpair` works.
#[test]
fn unix_sockets_by_path_are_refused_even_with_the_network() {
    let scratch = SandboxTree::new("unix");
    let mut server = scratch.serve(&unix_manifest(Mode::On), &[]);
    for tool in ["py", "py_net"] {
        let targets = UnixTargets::new(&scratch, tool);
        let (_, text) = python(&mut server, tool, &targets.attack());
        let reached = targets.reached(ABSENCE_WAIT);
        assert!(
            !text.contains("-ok")
                && text.contains("stream-refused")
                && text.contains("datagram-refused"),
            "{tool}: {text}"
        );
        assert_eq!(reached, (false, false), "{tool}: (connected, received)");
        assert_eq!(
            python(&mut server, tool, SOCKETPAIR),
            (false, "pair-ok\n".to_owned()),
            "{tool}"
        );
    }
}

/// The control: without the sandbox both reach their socket.
#[test]
fn unix_sockets_by_path_are_reached_without_sandbox() {
    let scratch = SandboxTree::new("unix-off");
    let mut server = scratch.serve(&unix_manifest(Mode::Off), &[]);
    let targets = UnixTargets::new(&scratch, "py");
    let (failed, text) = python(&mut server, "py", &targets.attack());
    assert_eq!((failed, text.as_str()), (false, "stream-ok\ndatagram-ok\n"));
    assert_eq!(targets.reached(REPLY_TIMEOUT), (true, true));
    assert_eq!(
        python(&mut server, "py", SOCKETPAIR),
        (false, "pair-ok\n".to_owned())
    );
}

// 10.3 Kernel keyrings

/// Adds a key to the session keyring, reads the session keyring's id, requests a key (each
/// printed as `name result errno`), and unlinks the key it added. Also `add_key` by its x32
/// number (bit 30 set), which the filter's rules must cover too.
const KEYRING_PROBE: &str = r#"import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def show(name, result):
    print(name, result, ctypes.get_errno() if result == -1 else 0)
    return result
SESSION = ctypes.c_int(-3)
key = show("add_key", libc.syscall(248, b"user", b"airlock-test", b"v", ctypes.c_size_t(1), SESSION))
if key > 0:
    libc.syscall(250, ctypes.c_int(9), ctypes.c_int(key), SESSION)
show("keyctl", libc.syscall(250, ctypes.c_int(0), SESSION, ctypes.c_int(0)))
show("request_key", libc.syscall(249, b"user", b"airlock-missing-key", None, ctypes.c_int(0)))
key = show("add_key_x32", libc.syscall(248 | 0x40000000, b"user", b"airlock-test", b"v", ctypes.c_size_t(1), SESSION))
if key > 0:
    libc.syscall(250, ctypes.c_int(9), ctypes.c_int(key), SESSION)
"#;

fn keyring_probe(mode: Mode) -> std::collections::BTreeMap<String, (i64, i64)> {
    let scratch = SandboxTree::new(&format!("keys-{mode:?}"));
    let mut server = scratch.serve(&python_tool("py", mode, ""), &[]);
    let (_, text) = python(&mut server, "py", KEYRING_PROBE);
    let results = probe_results(&text);
    assert_eq!(results.len(), 4, "{text}");
    results
}

/// `add_key`, `keyctl` and `request_key` are refused: the session keyring is airlock's,
/// shared by every call.
#[test]
fn kernel_keyrings_are_refused() {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("the probe uses x86_64 system call numbers: skipped");
        return;
    }
    let results = keyring_probe(Mode::On);
    for name in ["add_key", "keyctl", "request_key"] {
        assert!(refused(results[name]), "{name}: {results:?}");
    }
    assert_eq!(results["add_key_x32"].0, -1, "{results:?}");
}

/// The control: without the sandbox a key is added, the session keyring is found, and a
/// missing key is looked for (ENOKEY, not a refusal).
#[test]
fn kernel_keyrings_are_reached_without_sandbox() {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("the probe uses x86_64 system call numbers: skipped");
        return;
    }
    let results = keyring_probe(Mode::Off);
    assert!(results["add_key"].0 > 0, "{results:?}");
    assert!(results["keyctl"].0 > 0, "{results:?}");
    assert_eq!(results["request_key"], (-1, 126), "{results:?}");
}

// 10.4 System V IPC

/// A shared memory segment this test made on the host, holding a secret; removed on drop.
struct HostSegment {
    id: i64,
    secret: String,
}

impl HostSegment {
    fn new() -> Self {
        require("/usr/bin/python3", "python3");
        let secret = format!("shm-secret-{}", unique());
        let code = r#"import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
data = sys.argv[1].encode()
id = libc.shmget(0, 4096, 0o1600)
assert id >= 0, ctypes.get_errno()
address = libc.shmat(id, None, 0)
assert address not in (None, 2**64 - 1), ctypes.get_errno()
ctypes.memmove(address, data, len(data))
print(id)
"#;
        let output =
            crate::support::stdio::run(Path::new("/usr/bin/python3"), &["-c", code, &secret], &[]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let id = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap();
        Self { id, secret }
    }

    /// Python that attaches the segment by id and prints its secret, or `shmat -1 errno`;
    /// then tries to make a new segment, queue and semaphore set (`name result errno`), and
    /// removes whatever it made.
    fn attack(&self) -> String {
        format!(
            r#"import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
address = libc.shmat({id}, None, 0)
if address in (None, 2**64 - 1):
    print("shmat", -1, ctypes.get_errno())
else:
    print("read", ctypes.string_at(address, {len}).decode())
for name, make, remove in (
    ("shmget", lambda: libc.shmget(0, 4096, 0o1600), lambda id: libc.shmctl(id, 0, None)),
    ("msgget", lambda: libc.msgget(0, 0o1600), lambda id: libc.msgctl(id, 0, None)),
    ("semget", lambda: libc.semget(0, 1, 0o1600), lambda id: libc.semctl(id, 0, 0)),
):
    id = make()
    print(name, id, ctypes.get_errno() if id == -1 else 0)
    if id >= 0:
        remove(id)
"#,
            id = self.id,
            len = self.secret.len()
        )
    }
}

impl Drop for HostSegment {
    fn drop(&mut self) {
        let _removed = crate::support::stdio::run(
            Path::new("/usr/bin/python3"),
            &[
                "-c",
                &format!(
                    "import ctypes; ctypes.CDLL(None).shmctl({}, 0, None)",
                    self.id
                ),
            ],
            &[],
        );
    }
}

fn ipc_probe(mode: Mode) -> (HostSegment, String) {
    let scratch = SandboxTree::new(&format!("ipc-{mode:?}"));
    let segment = HostSegment::new();
    let mut server = scratch.serve(&python_tool("py", mode, ""), &[]);
    let (_, text) = python(&mut server, "py", &segment.attack());
    (segment, text)
}

/// A host segment (root's, here) cannot be attached by id from a call (its own IPC
/// namespace), and a call cannot make new segments, queues or semaphore sets.
#[test]
fn system_v_ipc_is_out_of_reach() {
    let (segment, text) = ipc_probe(Mode::On);
    assert!(!text.contains(&segment.secret), "{text}");
    let results = probe_results(&text);
    assert_eq!(
        results.get("shmat").map(|result| result.0),
        Some(-1),
        "{text}"
    );
    for name in ["shmget", "msgget", "semget"] {
        assert!(
            results.get(name).copied().is_some_and(refused),
            "{name}: {text}"
        );
    }
}

/// The control: without the sandbox the call reads the host segment and makes its own.
#[test]
fn system_v_ipc_is_reached_without_sandbox() {
    let (segment, text) = ipc_probe(Mode::Off);
    assert!(
        text.contains(&format!("read {}\n", segment.secret)),
        "{text}"
    );
    let results = probe_results(&text);
    for name in ["shmget", "msgget", "semget"] {
        assert!(
            results.get(name).is_some_and(|result| result.0 >= 0),
            "{name}: {text}"
        );
    }
}

// 10.5 memfd

/// `memfd_create` (memory outside the address-space limit, code no `exec` rule names) and
/// `memfd_secret` (x86_64 number 447; absent from some kernels), as `name result errno`.
const MEMFD_PROBE: &str = r#"import ctypes, os
try:
    fd = os.memfd_create("x")
    print("memfd_create", fd, 0)
except OSError as e:
    print("memfd_create", -1, e.errno)
libc = ctypes.CDLL(None, use_errno=True)
if os.uname().machine == "x86_64":
    result = libc.syscall(447, ctypes.c_uint(0))
    print("memfd_secret", result, ctypes.get_errno() if result == -1 else 0)
"#;

/// `memfd_create` and `memfd_secret` are refused.
#[test]
fn memfd_is_refused() {
    let scratch = SandboxTree::new("memfd");
    let mut server = scratch.serve(&python_tool("py", Mode::On, ""), &[]);
    let (_, text) = python(&mut server, "py", MEMFD_PROBE);
    let results = probe_results(&text);
    assert!(
        results.get("memfd_create").copied().is_some_and(refused),
        "{text}"
    );
    if cfg!(target_arch = "x86_64") {
        assert!(
            results.get("memfd_secret").copied().is_some_and(refused),
            "{text}"
        );
    }
}

/// The control: without the sandbox `memfd_create` works.
#[test]
fn memfd_works_without_sandbox() {
    let scratch = SandboxTree::new("memfd-off");
    let mut server = scratch.serve(&python_tool("py", Mode::Off, ""), &[]);
    let (_, text) = python(&mut server, "py", MEMFD_PROBE);
    let results = probe_results(&text);
    assert!(
        results
            .get("memfd_create")
            .is_some_and(|result| result.0 >= 0),
        "{text}"
    );
}

// 10.6 Exit status 125

/// A command's own exit status 125 (the launcher's failure status) is reported as the
/// command's, whatever it printed, sandbox or not.
fn exit_125_is_the_commands(mode: Mode) {
    let scratch = SandboxTree::new(&format!("exit125-{mode:?}"));
    let mut server = scratch.serve(&shell_tool("shell", mode, ""), &[]);
    for script in ["exit 125", "echo out; exit 125", "echo err >&2; exit 125"] {
        let (failed, text) = bash(&mut server, "shell", script);
        assert!(failed, "{script}: {text}");
        assert!(
            text.starts_with("The command failed with exit status 125."),
            "{script}: {text}"
        );
        assert!(
            !text.contains("sandbox could not be set up"),
            "{script}: {text}"
        );
    }
}

#[test]
fn exit_status_125_of_a_sandboxed_command_is_the_commands() {
    exit_125_is_the_commands(Mode::On);
}

/// The control: unsandboxed, the same report.
#[test]
fn exit_status_125_is_the_commands_without_sandbox() {
    exit_125_is_the_commands(Mode::Off);
}

// 10.7 FIFOs and sockets in a writable directory

/// Makes a regular file, a directory, a symbolic link, a FIFO and a socket node in `out/`,
/// printing `name 0 0` or `name -1 errno` for each.
const NODES_PROBE: &str = r#"import os, stat
def attempt(name, make):
    try:
        make()
        print(name, 0, 0)
    except OSError as e:
        print(name, -1, e.errno)
attempt("file", lambda: open("out/file", "w").write("x"))
attempt("dir", lambda: os.mkdir("out/dir"))
attempt("symlink", lambda: os.symlink("file", "out/link"))
attempt("fifo", lambda: os.mkfifo("out/fifo"))
attempt("socket", lambda: os.mknod("out/socket", stat.S_IFSOCK | 0o600))
"#;

fn nodes_probe(
    mode: Mode,
) -> (
    SandboxTree,
    std::collections::BTreeMap<String, (i64, i64)>,
    String,
) {
    let scratch = SandboxTree::new(&format!("nodes-{mode:?}"));
    let mut server = scratch.serve(&python_tool("py", mode, "write = [\"out\"]"), &[]);
    let (_, text) = python(&mut server, "py", NODES_PROBE);
    let results = probe_results(&text);
    assert_eq!(results.len(), 5, "{text}");
    (scratch, results, text)
}

/// A writable directory takes regular files, directories and symbolic links, but no FIFO
/// or socket (which could make a later reader of the directory hang or reach something else).
#[test]
fn fifos_and_sockets_cannot_be_made_in_a_writable_directory() {
    let (scratch, results, text) = nodes_probe(Mode::On);
    for name in ["file", "dir", "symlink"] {
        assert_eq!(results[name], (0, 0), "{name}: {text}");
    }
    for name in ["fifo", "socket"] {
        assert!(refused(results[name]), "{name}: {text}");
        assert!(
            std::fs::symlink_metadata(scratch.work().join("out").join(name)).is_err(),
            "{name} exists: {text}"
        );
    }
}

/// The control: without the sandbox all five are made.
#[test]
fn fifos_and_sockets_are_made_without_sandbox() {
    let (scratch, results, text) = nodes_probe(Mode::Off);
    for name in ["file", "dir", "symlink", "fifo", "socket"] {
        assert_eq!(results[name], (0, 0), "{name}: {text}");
    }
    let fifo = std::fs::symlink_metadata(scratch.work().join("out/fifo")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fifo.file_type()));
}

// ---------------------------------------------------------------------------------------------
// 11. One launcher, many calls: what a call can leave for the next (red team of the resident
// launchers)

/// A server run as `nobody`, with the cgroups delegated to it: fields drop in order, so the
/// server (and with it every launcher) is gone before its cgroups are removed.
pub struct Unprivileged {
    server: Server,
    /// Removed once the server is gone (`None` when airlock runs as the test's own user).
    _cgroups: Option<Delegated>,
}

impl std::ops::Deref for Unprivileged {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl std::ops::DerefMut for Unprivileged {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

/// A cgroup in each of the `memory`, `pids` and `cpu` hierarchies (cgroup v1, as on this
/// project's machines), below the test's own, owned by `nobody`: what systemd's
/// `Delegate=yes` gives a service. An unprivileged airlock makes its per-call groups there.
struct Delegated {
    dirs: Vec<PathBuf>,
}

impl Delegated {
    fn new() -> Self {
        let membership = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let name = format!("airlock-it-{}", unique());
        let mut dirs = Vec::new();
        for controller in ["memory", "pids", "cpu"] {
            let own = membership
                .lines()
                .filter_map(|line| {
                    let mut parts = line.splitn(3, ':');
                    let _id = parts.next()?;
                    let controllers = parts.next()?;
                    let path = parts.next()?;
                    controllers
                        .split(',')
                        .any(|c| c == controller)
                        .then(|| path.to_owned())
                })
                .next()
                .unwrap_or_else(|| {
                    panic!(
                        "no cgroup v1 {controller} hierarchy: the unprivileged sandbox tests \
                         delegate v1 cgroups (see Delegated)"
                    )
                });
            let dir = Path::new("/sys/fs/cgroup")
                .join(controller)
                .join(own.trim_start_matches('/'))
                .join(&name);
            std::fs::create_dir(&dir).unwrap();
            for entry in [dir.clone(), dir.join("cgroup.procs"), dir.join("tasks")] {
                std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
            }
            dirs.push(dir);
        }
        Self { dirs }
    }
}

impl Drop for Delegated {
    fn drop(&mut self) {
        // The server was killed a moment ago; its launchers' namespaces go down with it.
        fn remove(dir: &Path) {
            if let Ok(entries) = std::fs::read_dir(dir) {
                for entry in entries.filter_map(Result::ok) {
                    if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                        remove(&entry.path());
                    }
                }
            }
            let _removed = std::fs::remove_dir(dir);
        }
        for dir in &self.dirs {
            eventually(Duration::from_secs(5), || {
                remove(dir);
                !dir.exists()
            });
        }
    }
}

/// Serves `manifest` as the unprivileged user `nobody` when this test runs as root (so the
/// launcher takes the user-namespace path), in cgroups delegated to it, else as the user
/// running the tests (whose cgroup must then be delegated).
pub(crate) fn serve_unprivileged(scratch: &SandboxTree, manifest: &str) -> Unprivileged {
    let path = scratch.manifest(manifest);
    let airlock = airlock();
    let airlock = airlock.to_str().unwrap();
    let (mut server, cgroups) = if rustix::process::getuid().is_root() {
        require("/usr/bin/setpriv", "util-linux");
        let cgroups = Delegated::new();
        // The shell moves itself into the delegated groups, then becomes airlock as nobody.
        let script = cgroups
            .dirs
            .iter()
            .map(|dir| format!("echo $$ > {}/cgroup.procs && ", dir.display()))
            .collect::<String>()
            + "exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" serve \
               --manifest \"$1\"";
        let server =
            Server::start_with(Path::new("/bin/sh"), &["-c", &script, airlock, &path], &[]);
        (server, Some(cgroups))
    } else {
        let server = Server::start_with(Path::new(airlock), &["serve", "--manifest", &path], &[]);
        (server, None)
    };
    server.initialize("2025-11-25");
    Unprivileged {
        server,
        _cgroups: cgroups,
    }
}

/// What a call sees of its own scheduling, I/O priority and limits.
const SCHEDULING_PROBE: &str = "import os, ctypes, resource
libc = ctypes.CDLL(None, use_errno=True)
print(os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)),
      os.sched_getscheduler(0), libc.syscall(252, 1, 0),
      [resource.getrlimit(r) for r in (resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE,
       resource.RLIMIT_NPROC, resource.RLIMIT_AS, resource.RLIMIT_CPU)])";

/// Tries to change pid 1 (the launcher, which the next call inherits from) in every way the
/// red team found: niceness (of the process, its group, its user), CPU affinity, scheduling
/// policy, I/O priority, resource limits. Prints `<what> changed|refused` for each.
const LAUNCHER_TAMPERING: &str = "import os, ctypes, resource
libc = ctypes.CDLL(None, use_errno=True)
def attempt(what, change):
    try:
        change()
        print(what, 'changed')
    except OSError:
        print(what, 'refused')
def syscall(*args):
    if libc.syscall(*args) != 0:
        raise OSError(ctypes.get_errno(), 'refused')
attempt('nice', lambda: os.setpriority(os.PRIO_PROCESS, 1, 19))
attempt('nice_group', lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
attempt('nice_user', lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19))
attempt('affinity', lambda: os.sched_setaffinity(1, {0}))
attempt('policy', lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0)))
attempt('ioprio', lambda: syscall(251, 1, 1, 3 << 13))
attempt('ioprio_group', lambda: syscall(251, 2, 0, 3 << 13))
attempt('ioprio_user', lambda: syscall(251, 3, os.getuid(), 3 << 13))
attempt('limits', lambda: resource.prlimit(1, resource.RLIMIT_FSIZE, (1, 1)))";

/// A call cannot change its launcher: the next call of the tool runs with the scheduling,
/// I/O priority and limits it would have had anyway.
fn launcher_tampering(server: &mut Server) {
    let (failed, before) = python(server, "py", SCHEDULING_PROBE);
    assert!(!failed, "{before}");
    let (failed, attempts) = python(server, "py", LAUNCHER_TAMPERING);
    assert!(!failed, "{attempts}");
    let changed: Vec<&str> = attempts
        .lines()
        .filter(|line| !line.ends_with(" refused"))
        .collect();
    let (failed, after) = python(server, "py", SCHEDULING_PROBE);
    assert!(!failed, "{after}");
    assert!(
        changed.is_empty(),
        "the call changed its launcher: {changed:?} (the next call saw {after} after {before})"
    );
    assert_eq!(before, after, "the next call inherited the changes");
}

#[test]
fn a_call_cannot_change_its_launcher_as_root() {
    let scratch = SandboxTree::new("tamper-root");
    launcher_tampering(&mut scratch.serve(&python_tool("py", Mode::On, ""), &[]));
}

#[test]
fn a_call_cannot_change_its_launcher_unprivileged() {
    let scratch = SandboxTree::new("tamper-user");
    let manifest = python_tool("py", Mode::On, "");
    launcher_tampering(&mut serve_unprivileged(&scratch, &manifest));
}

/// The unprivileged launcher (a user namespace, then the PID namespace) holds the same
/// promises as root's: a call's escapes are gone before the next call, which runs in the same
/// namespace.
#[test]
fn an_unprivileged_launcher_leaves_nothing_of_a_call_for_the_next() {
    let scratch = SandboxTree::new("reuse-user");
    let exec = r#"exec = ["/usr/bin/setsid", "/usr/bin/sleep"]"#;
    let mut server = serve_unprivileged(&scratch, &shell_tool("shell", Mode::On, exec));
    let (failed, first) = bash(
        &mut server,
        "shell",
        "/usr/bin/sleep 300 & echo $!; /usr/bin/setsid -f /usr/bin/sleep 300; echo $$",
    );
    assert!(!failed, "{first}");
    let background: u32 = first.lines().next().unwrap().parse().unwrap();
    let (failed, second) = bash(
        &mut server,
        "shell",
        &format!(
            "for pid in {background} $(({background} + 1)) $(({background} + 2)); do \
             kill -0 $pid 2>/dev/null && echo alive $pid; done; echo $$"
        ),
    );
    assert!(!failed, "{second}");
    let own: u32 = second
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("a process of the first call is alive in the second: {second}"));
    assert!(own > background, "the second call ran in a fresh namespace");
}

/// Launchers alive at once never share a real uid (which `RLIMIT_NPROC` counts, as root):
/// while one call runs, 300 others whose launchers are discarded (each passes its output cap)
/// must not hand a later launcher the running one's uid.
#[test]
fn live_launchers_never_share_a_uid() {
    if !rustix::process::getuid().is_root() {
        eprintln!("live_launchers_never_share_a_uid: not root; the per-launcher uid is root's");
        return;
    }
    require("/usr/bin/cat", "coreutils");
    let scratch = SandboxTree::new("uids");
    let manifest = format!(
        "[limits]\ntool_call_rate = {{ per_minute = 100000, burst = 1000 }}\n{}{}",
        shell_tool(
            "long",
            Mode::On,
            "exec = [\"/usr/bin/sleep\"]\ntimeout_ms = 60000"
        ),
        shell_tool(
            "flood",
            Mode::On,
            "exec = [\"/usr/bin/cat\"]\nmax_output_bytes = 1024"
        )
    );
    let mut server = scratch.serve(&manifest, &[]);
    server.send(&call(
        900,
        "long",
        json!({ "script": "/usr/bin/sleep 300" }),
    ));
    let live_uids = |server: &Server| -> Vec<(u32, u32)> {
        launchers_of(server.pid())
            .into_iter()
            .filter_map(|pid| {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                let real = status
                    .lines()
                    .find_map(|line| line.strip_prefix("Uid:"))?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()?;
                Some((pid, real))
            })
            .collect()
    };
    for id in 0..300 {
        let (failed, text) = outcome(&server.request(&call(
            id,
            "flood",
            json!({ "script": "/usr/bin/cat /dev/zero" }),
        )));
        assert!(failed && text.contains("passed the limit"), "{text}");
        // A launcher just started (the next call's, or the long call's at first) is still
        // root for a moment, before it takes its leased uid: wait, briefly, until none is.
        let mut uids = live_uids(&server);
        let settle = std::time::Instant::now();
        while uids.iter().any(|(_, uid)| *uid == 0)
            && settle.elapsed() < std::time::Duration::from_secs(2)
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
            uids = live_uids(&server);
        }
        let mut distinct: Vec<u32> = uids.iter().map(|(_, uid)| *uid).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            uids.len(),
            "after {id} discarded launchers, live launchers share a uid: {uids:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 12. Default deny: nothing outside the grant changes, no socket by path, budgets per call
//
// The sandbox of sections 1–11 lists what it refuses: Landlock's file rights (which say
// nothing of a file's metadata), a seccomp list of known-bad system calls, limits per process.
// What no list names gets through. These tests are the attacks that show it, written for the
// default-deny sandbox that replaces it:
//
// - a file outside the grants (or granted read-only) keeps its mode, owner, times, `user.*`
//   extended attributes, inode flags and contents, as root and unprivileged (12.1), while the
//   same changes inside a writable directory keep working (12.2);
// - no datagram leaves a call for a unix socket by path outside it, and no datagram from
//   outside reaches an abstract name a call bound (12.3);
// - bytes and files a call adds to its writable directories, and the memory of all its
//   processes together, have budgets per call (12.4); busy calls get a share of the CPU that
//   leaves airlock answering (12.5);
// - system calls outside an allow list fail (12.6); a git checkout's hooks and config, and the
//   files other agents and editors run (`.envrc`, `.vscode/tasks.json`, `.mcp.json`), cannot
//   be written even where the checkout is (12.7); paths outside the grants cannot even be
//   `stat`ed (12.8).
//
// They live in `mod default_deny` (`cargo test --test it sandbox::default_deny`). Against
// today's sandbox every attack succeeds, so these tests fail; the budget keys do not exist yet,
// so `airlock check` refuses those manifests. Only 12.2, what must keep working, passes. Where
// an attack has a victim, the test compares it before and after (never only an errno), and
// each attack has its control where one makes sense: the same call with the sandbox off
// (`…_without_sandbox`), where it must work, so that a broken attack cannot pass for a sandbox
// that works.

mod default_deny {
    use std::collections::BTreeMap;
    use std::io::Read as _;
    use std::os::linux::net::SocketAddrExt as _;
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::{
        ABSENCE_WAIT, Mode, SandboxTree, Unprivileged, bash, outcome, probe_results, python,
        python_tool, require, serve_unprivileged, shell_tool, survivors, tagged, unique,
    };
    use crate::support::processes::eventually;
    use crate::support::stdio::{REPLY_TIMEOUT, call, request, spawn_command};

    /// The uid and gid `serve_unprivileged` runs airlock as (when the tests run as root).
    const NOBODY: u32 = 65534;

    /// `FS_NODUMP_FL`: the inode flag the attacks set (`chattr +d`), which needs no
    /// capability, only the file's ownership.
    const NODUMP: u32 = 0x40;

    /// Who runs airlock.
    #[derive(Clone, Copy, Debug)]
    enum User {
        /// The user running the tests (root in CI).
        Root,
        /// `nobody`, through `serve_unprivileged`.
        Nobody,
    }

    impl User {
        fn serve(self, scratch: &SandboxTree, manifest: &str) -> Unprivileged {
            match self {
                Self::Root => Unprivileged {
                    server: scratch.serve(manifest, &[]),
                    _cgroups: None,
                },
                Self::Nobody => serve_unprivileged(scratch, manifest),
            }
        }

        /// Gives `path` to the user airlock runs as, so that without the sandbox that user
        /// may change it (nothing to do when the tests do not run as root: airlock runs as
        /// the user who made it).
        fn own(self, path: &Path) {
            if matches!(self, Self::Nobody) && rustix::process::getuid().is_root() {
                std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
            }
        }
    }

    /// Everything about a file that an attack on it could change, read without changing it
    /// (its contents through `O_NOATIME`).
    #[derive(Debug, PartialEq, Eq)]
    struct Look {
        mode: u32,
        uid: u32,
        gid: u32,
        mtime: (i64, i64),
        atime: (i64, i64),
        xattrs: BTreeMap<String, Vec<u8>>,
        flags: u32,
        contents: Vec<u8>,
    }

    fn look(path: &Path) -> Look {
        let meta = std::fs::symlink_metadata(path).unwrap();
        let fd = rustix::fs::open(
            path,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOATIME | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let mut file = std::fs::File::from(fd);
        let flags = rustix::fs::ioctl_getflags(&file).unwrap().bits();
        let mut contents = Vec::new();
        file.read_to_end(&mut contents).unwrap();
        let mut names = [0_u8; 4096];
        let len = rustix::fs::listxattr(path, &mut names).unwrap();
        let xattrs = names[..len]
            .split(|byte| *byte == 0)
            .filter(|name| name.starts_with(b"user."))
            .map(|name| {
                let mut value = [0_u8; 4096];
                let len = rustix::fs::getxattr(path, name, &mut value).unwrap();
                (
                    String::from_utf8_lossy(name).into_owned(),
                    value[..len].to_vec(),
                )
            })
            .collect();
        Look {
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            atime: (meta.atime(), meta.atime_nsec()),
            xattrs,
            flags,
            contents,
        }
    }

    /// Writes `text` to a victim file, mode 0644, for `user`.
    fn plant(user: User, path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
        user.own(path);
    }

    /// Python that every probe of this section starts with: `attempt(name, act)` prints
    /// `name 0 0` when `act` returns and `name -1 errno` when it raises (errno -1 for an
    /// exception that is not an `OSError`); `setflags(p)` reads a file's inode flags with
    /// `FS_IOC_GETFLAGS` and sets `FS_NODUMP_FL` with `FS_IOC_SETFLAGS`; `lease(p)` takes a
    /// read lease on a descriptor opened read-only.
    const ATTEMPT: &str = r#"import os, fcntl, struct, subprocess
def attempt(name, act):
    try:
        act()
        print(name, 0, 0)
    except Exception as e:
        print(name, -1, e.errno if isinstance(e, OSError) and e.errno else -1)
def setflags(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        flags = struct.unpack('i', fcntl.ioctl(fd, 0x80086601, struct.pack('i', 0)))[0]
        fcntl.ioctl(fd, 0x40086602, struct.pack('i', flags | 0x40))
    finally:
        os.close(fd)
def lease(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, 1024, 0)
    finally:
        os.close(fd)
"#;

    // 12.1 Metadata outside the grants

    /// The attacks on a file outside the grants (`outside`) and on one the tool may only read
    /// (`inside`, in its workdir). The chown comes before the chmod, which it would undo (a
    /// change of owner clears the set-uid bit). A lease and the inode flags need an open
    /// descriptor, which only the readable file gives; `chmod(inside, 0)` comes last, since
    /// it would keep the others from opening it.
    fn metadata_attacks(outside: &Path, inside: &Path) -> String {
        format!(
            r#"{ATTEMPT}outside, inside = {outside:?}, {inside:?}
attempt('outside_chown', lambda: os.chown(outside, -1, os.getgid()))
attempt('outside_chmod', lambda: os.chmod(outside, 0o4755))
attempt('outside_utime', lambda: os.utime(outside, (1, 1)))
attempt('outside_setxattr', lambda: os.setxattr(outside, 'user.pwned', b'1'))
attempt('inside_lease', lambda: lease(inside))
attempt('inside_setflags', lambda: setflags(inside))
attempt('inside_utime', lambda: os.utime(inside, (1, 1)))
attempt('inside_setxattr', lambda: os.setxattr(inside, 'user.pwned', b'1'))
attempt('inside_chmod', lambda: os.chmod(inside, 0))
"#
        )
    }

    /// What the metadata attacks did: each attempt's `(result, errno)`, the probe's text, and
    /// each victim's look before and after.
    struct Metadata {
        results: BTreeMap<String, (i64, i64)>,
        text: String,
        outside: (Look, Look),
        inside: (Look, Look),
    }

    /// Runs the metadata attacks through a Python tool without `write`, served by `user`, on
    /// victims `user` owns (and so could change without the sandbox).
    fn metadata(user: User, mode: Mode) -> Metadata {
        let scratch = SandboxTree::new(&format!("dd-meta-{user:?}-{mode:?}"));
        let outside = scratch.outside().join("victim.txt");
        let inside = scratch.work().join("victim.txt");
        user.own(&scratch.outside());
        plant(user, &outside, "outside victim\n");
        plant(user, &inside, "inside victim\n");
        let before = (look(&outside), look(&inside));
        let mut server = user.serve(&scratch, &python_tool("py", mode, ""));
        let (_, text) = python(&mut server, "py", &metadata_attacks(&outside, &inside));
        drop(server);
        let results = probe_results(&text);
        assert_eq!(results.len(), 9, "the probe did not run to its end: {text}");
        Metadata {
            results,
            text,
            outside: (before.0, look(&outside)),
            inside: (before.1, look(&inside)),
        }
    }

    /// Sandbox on: every attempt failed (any errno: after default deny a path outside the
    /// grants may not even exist) and both victims are as they were.
    fn assert_metadata_unchanged(found: &Metadata) {
        let worked: Vec<&String> = found
            .results
            .iter()
            .filter(|(_, result)| result.0 != -1)
            .map(|(name, _)| name)
            .collect();
        assert!(
            worked.is_empty(),
            "these metadata changes went through: {worked:?}\n{}",
            found.text
        );
        assert_eq!(found.outside.0, found.outside.1, "the file outside changed");
        assert_eq!(found.inside.0, found.inside.1, "the read-only file changed");
    }

    /// Sandbox off: every attempt worked and left its mark (the chown to the file's own group
    /// and the lease leave none: for them, returning is the attack).
    fn assert_metadata_changed(found: &Metadata) {
        for (name, result) in &found.results {
            assert_eq!(*result, (0, 0), "{name}: {}", found.text);
        }
        let (outside, inside) = (&found.outside.1, &found.inside.1);
        assert_eq!(outside.mode & 0o7777, 0o4755, "{outside:?}");
        assert_eq!(outside.mtime, (1, 0), "{outside:?}");
        assert_eq!(outside.xattrs.get("user.pwned"), Some(&b"1".to_vec()));
        assert_eq!(inside.mode & 0o7777, 0, "{inside:?}");
        assert_eq!(inside.mtime, (1, 0), "{inside:?}");
        assert_eq!(inside.xattrs.get("user.pwned"), Some(&b"1".to_vec()));
        assert_eq!(inside.flags & NODUMP, NODUMP, "{inside:?}");
    }

    /// A sandboxed call without `write`, as root (every capability dropped, but still the
    /// owner of root's files), can change no metadata of a file outside its grants (mode with
    /// the set-uid bit, group, times, a `user.*` attribute) nor of a file in its read-only
    /// workdir (mode, times, attribute, inode flags, a lease).
    #[test]
    fn metadata_outside_the_grants_is_unchanged_as_root() {
        assert_metadata_unchanged(&metadata(User::Root, Mode::On));
    }

    /// The control: without the sandbox, root changes all of it.
    #[test]
    fn metadata_outside_the_grants_changes_without_sandbox_as_root() {
        assert_metadata_changed(&metadata(User::Root, Mode::Off));
    }

    /// The same attacks with airlock unprivileged (`nobody`, so the launcher's user namespace)
    /// on files `nobody` owns.
    #[test]
    fn metadata_outside_the_grants_is_unchanged_unprivileged() {
        assert_metadata_unchanged(&metadata(User::Nobody, Mode::On));
    }

    /// The control: without the sandbox, `nobody` changes all of it on its own files.
    #[test]
    fn metadata_outside_the_grants_changes_without_sandbox_unprivileged() {
        assert_metadata_changed(&metadata(User::Nobody, Mode::Off));
    }

    // 12.2 Inside a writable directory, the same changes work

    /// Makes `out/tool.sh` executable, dates it, gives it an attribute and the nodump flag,
    /// and copies it with `cp -p`, which keeps mode and times.
    const WRITABLE_CHANGES: &str = r#"p = 'out/tool.sh'
attempt('create', lambda: open(p, 'w').write('#!/bin/sh\n'))
attempt('chmod', lambda: os.chmod(p, 0o755))
attempt('utime', lambda: os.utime(p, (1000000000, 1000000000)))
attempt('setxattr', lambda: os.setxattr(p, 'user.airlock', b'kept'))
attempt('setflags', lambda: setflags(p))
attempt('cp_p', lambda: subprocess.run(['/usr/bin/cp', '-p', p, 'out/copy.sh'], check=True))
"#;

    /// What default deny must keep: inside `write = ["out"]`, a call changes the metadata of
    /// its own files as any build or archive tool does.
    fn writable_changes(user: User) {
        require("/usr/bin/cp", "coreutils");
        let scratch = SandboxTree::new(&format!("dd-writable-{user:?}"));
        user.own(&scratch.work().join("out"));
        let manifest = python_tool(
            "py",
            Mode::On,
            "write = [\"out\"]\nexec = [\"/usr/bin/cp\"]",
        );
        let mut server = user.serve(&scratch, &manifest);
        let (failed, text) = python(&mut server, "py", &format!("{ATTEMPT}{WRITABLE_CHANGES}"));
        drop(server);
        let results = probe_results(&text);
        assert!(!failed, "{text}");
        assert_eq!(results.len(), 6, "{text}");
        for (name, result) in &results {
            assert_eq!(*result, (0, 0), "{name}: {text}");
        }
        let tool = look(&scratch.work().join("out/tool.sh"));
        if matches!(user, User::Nobody) && rustix::process::getuid().is_root() {
            assert_eq!(tool.uid, NOBODY, "the call did not run as nobody: {tool:?}");
        }
        assert_eq!(tool.mode & 0o7777, 0o755, "{tool:?}");
        assert_eq!(tool.mtime, (1_000_000_000, 0), "{tool:?}");
        assert_eq!(tool.xattrs.get("user.airlock"), Some(&b"kept".to_vec()));
        assert_eq!(tool.flags & NODUMP, NODUMP, "{tool:?}");
        let copy = look(&scratch.work().join("out/copy.sh"));
        assert_eq!(copy.mode & 0o7777, 0o755, "{copy:?}");
        assert_eq!(copy.mtime, (1_000_000_000, 0), "{copy:?}");
        assert_eq!(copy.contents, b"#!/bin/sh\n");
    }

    #[test]
    fn metadata_in_a_writable_directory_changes_as_root() {
        writable_changes(User::Root);
    }

    #[test]
    fn metadata_in_a_writable_directory_changes_unprivileged() {
        writable_changes(User::Nobody);
    }

    // 12.3 Unix sockets: none by path outside, none into an abstract name from outside

    /// A datagram socket bound by the test outside the sandbox, in a fresh directory of
    /// `outside/` (mode 0700, the socket 0600: only its owner, root or `nobody` as the call
    /// runs, may send to it), nonblocking.
    struct PathListener {
        path: PathBuf,
        socket: UnixDatagram,
    }

    impl PathListener {
        fn new(scratch: &SandboxTree) -> Self {
            let dir = scratch.outside().join(format!("sockets-{}", unique()));
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            let path = dir.join("listener.sock");
            let socket = UnixDatagram::bind(&path).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            socket.set_nonblocking(true).unwrap();
            Self { path, socket }
        }

        /// The datagrams waiting, after up to `wait` for `expected` of them.
        fn received(&self, expected: usize, wait: Duration) -> Vec<String> {
            let mut datagrams = Vec::new();
            eventually(wait, || {
                let mut buffer = [0_u8; 64];
                while let Ok(len) = self.socket.recv(&mut buffer) {
                    datagrams.push(String::from_utf8_lossy(&buffer[..len]).into_owned());
                }
                datagrams.len() >= expected
            });
            datagrams
        }

        /// Python that sends to the listener without `socket()`, which seccomp refuses: from
        /// one end of a datagram `socketpair` by `sendto`, and from the other after
        /// re-connecting it to the path.
        fn attack(&self) -> String {
            format!(
                r#"{ATTEMPT}import socket
path = {path:?}
def pair():
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
attempt('sendto', lambda: pair()[0].sendto(b'pwned-sendto', path))
def reconnect():
    b = pair()[1]
    b.connect(path)
    b.send(b'pwned-connect')
attempt('connect', reconnect)
"#,
                path = self.path.to_str().unwrap()
            )
        }
    }

    fn datagram_by_path(mode: Mode) -> (String, Vec<String>) {
        let scratch = SandboxTree::new(&format!("dd-dgram-{mode:?}"));
        let listener = PathListener::new(&scratch);
        let mut server = scratch.serve(&python_tool("py", mode, ""), &[]);
        let (_, text) = python(&mut server, "py", &listener.attack());
        let (expected, wait) = match mode {
            Mode::On => (usize::MAX, ABSENCE_WAIT),
            Mode::Off => (2, REPLY_TIMEOUT),
        };
        (text, listener.received(expected, wait))
    }

    /// A datagram for a unix socket by path outside the grants (the shape of `/dev/log`, or
    /// any daemon listening on a datagram socket) never arrives: not by `sendto` from a
    /// `socketpair` (section 10.2 refuses only `socket()`), not after re-connecting one.
    #[test]
    fn a_datagram_to_a_unix_socket_by_path_outside_is_never_received() {
        let (text, received) = datagram_by_path(Mode::On);
        assert_eq!(received, Vec::<String>::new(), "{text}");
        let results = probe_results(&text);
        assert_eq!(results.len(), 2, "{text}");
        assert!(results.values().all(|result| result.0 == -1), "{text}");
    }

    /// The control: without the sandbox both datagrams arrive.
    #[test]
    fn a_datagram_to_a_unix_socket_by_path_is_received_without_sandbox() {
        let (text, received) = datagram_by_path(Mode::Off);
        assert_eq!(received, ["pwned-sendto", "pwned-connect"], "{text}");
    }

    /// Python that binds the abstract name `name` (a datagram socket from `socketpair`, its
    /// peer closed and the socket disconnected with `connect(AF_UNSPEC)`, since `socket()` is
    /// refused), writes `out/ready` (`bound`, or `failed` if it could not), then waits up to
    /// 3 s for a datagram: `got <text>` or `nothing`.
    fn abstract_listener(name: &str) -> String {
        format!(
            r#"import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
state = 'failed'
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    b.close()
    unspec = ctypes.create_string_buffer(16)
    if libc.connect(a.fileno(), unspec, 16) != 0:
        raise OSError(ctypes.get_errno(), 'connect(AF_UNSPEC)')
    a.bind({name:?})
    state = 'bound'
except OSError as e:
    print('refused', e.errno)
finally:
    open('out/ready.tmp', 'w').write(state)
    os.rename('out/ready.tmp', 'out/ready')
if state == 'bound':
    print('bound', flush=True)
    a.settimeout(3)
    try:
        print('got', a.recv(64).decode())
    except socket.timeout:
        print('nothing')
"#,
            name = format!("\0{name}")
        )
    }

    /// Has a call bind an abstract name and wait for a datagram, and sends it one from outside
    /// (retried for 2 s, while the call waits 3). Returns whether the send from outside
    /// worked, and the call's text.
    fn abstract_name(mode: Mode) -> (bool, String) {
        let scratch = SandboxTree::new(&format!("dd-abstract-{mode:?}"));
        let name = format!("airlock-test-{}", unique());
        let mut server = scratch.serve(&python_tool("py", mode, "write = [\"out\"]"), &[]);
        server.send(&call(1, "py", json!({ "code": abstract_listener(&name) })));
        let ready = scratch.work().join("out/ready");
        let mut state = String::new();
        eventually(REPLY_TIMEOUT, || {
            state = std::fs::read_to_string(&ready).unwrap_or_default();
            !state.is_empty()
        });
        let mut sent = false;
        if state == "bound" {
            let socket = UnixDatagram::unbound().unwrap();
            let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
            sent = eventually(Duration::from_secs(2), || {
                socket.send_to_addr(b"pwned", &address).is_ok()
            });
        }
        let (_, text) = outcome(&server.recv());
        (sent, text)
    }

    /// An abstract unix name a call binds is out of reach from outside (Landlock's scope
    /// only stops the call reaching out): a datagram sent to it never arrives, and the send
    /// itself fails (after default deny, the name lives in the call's own namespace).
    #[test]
    fn an_abstract_name_bound_inside_receives_nothing_from_outside() {
        let (sent, text) = abstract_name(Mode::On);
        assert!(!text.contains("got "), "the call received: {text}");
        assert!(
            !sent,
            "a datagram to the call's abstract name was sent: {text}"
        );
    }

    /// The control: without the sandbox the datagram arrives.
    #[test]
    fn an_abstract_name_bound_inside_receives_from_outside_without_sandbox() {
        let (sent, text) = abstract_name(Mode::Off);
        assert!(sent, "{text}");
        assert_eq!(text, "bound\ngot pwned\n");
    }

    // 12.4 Budgets per call: bytes and files added to writable directories, memory of all
    // its processes
    //
    // `disk_mib`, `disk_files` and `call_memory_mib` are new `resources` keys: until they
    // exist, `airlock check` refuses these manifests, which is how these tests fail today.
    // Their controls run the same call with the sandbox off (which drops `resources`), and
    // show the workload does what the budget must stop.

    /// The regular files under `dir` (not recursive: the attacks write flat): how many, and
    /// their bytes.
    fn files_and_bytes(dir: &Path) -> (usize, u64) {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter_map(|entry| entry.metadata().ok())
            .filter(std::fs::Metadata::is_file)
            .fold((0, 0), |(files, bytes), meta| {
                (files + 1, bytes + meta.len())
            })
    }

    const MIB: u64 = 1024 * 1024;

    /// Writes 256 files of 1 MiB in `out/`.
    const FILL_256_MIB: &str =
        "for i in $(seq 256); do head -c 1048576 /dev/zero > out/f$i; done; echo wrote";

    fn fill(mode: Mode, resources: &str, script: &str) -> (SandboxTree, bool, String) {
        require("/usr/bin/head", "coreutils");
        require("/usr/bin/seq", "coreutils");
        let mut scratch = SandboxTree::new(&format!("dd-fill-{mode:?}-{}", unique()));
        scratch.private_filesystem("work/out", 512);
        let manifest = shell_tool(
            "fill",
            mode,
            &format!(
                "write = [\"out\"]\nexec = [\"/usr/bin/head\", \"/usr/bin/seq\"]\n\
                 resources = {{ {resources} }}\ntimeout_ms = 60000"
            ),
        );
        let mut server = scratch.serve(&manifest, &[]);
        // Up to the tool's time limit: 20,000 files take long on a loaded machine.
        server.send(&call(1, "fill", json!({ "script": script })));
        let (failed, text) = outcome(&server.recv_within(Duration::from_secs(90)));
        drop(server);
        (scratch, failed, text)
    }

    /// A call with `resources = { disk_mib = 32 }` that writes 256 MiB ends in an error, and
    /// what it leaves in its writable directory stays near the budget: the budget is enforced
    /// by polling what the call added, so it may overshoot; at most twice the budget (64 MiB)
    /// may remain. At least the first 1 MiB file is there (the workload ran).
    #[test]
    fn a_call_adds_at_most_its_byte_budget_to_its_writable_directories() {
        let (scratch, failed, text) = fill(Mode::On, "disk_mib = 32", FILL_256_MIB);
        let (files, bytes) = files_and_bytes(&scratch.work().join("out"));
        eprintln!("{files} files, {bytes} bytes remain under a budget of 32 MiB");
        assert!(
            failed,
            "the call passed its byte budget without an error: {text}"
        );
        assert!(bytes <= 64 * MIB, "{bytes} bytes remain (budget 32 MiB)");
        assert_eq!(
            std::fs::metadata(scratch.work().join("out/f1"))
                .map(|meta| meta.len())
                .ok(),
            Some(MIB),
            "the first file was not written: the workload did not run ({text})"
        );
    }

    /// The control: without the sandbox (and its budget) all 256 MiB land.
    #[test]
    fn a_call_adds_256_mib_without_sandbox() {
        let (scratch, failed, text) = fill(Mode::Off, "disk_mib = 32", FILL_256_MIB);
        assert_eq!((failed, text.as_str()), (false, "wrote\n"));
        assert_eq!(
            files_and_bytes(&scratch.work().join("out")),
            (256, 256 * MIB)
        );
    }

    /// Creates 20,000 empty files in `out/` (bash alone: no program to run).
    const CREATE_20000_FILES: &str =
        "for ((i = 0; i < 20000; i++)); do : > out/f$i; done; echo created";

    /// A call with `resources = { disk_files = 500 }` that creates 20,000 files ends in an
    /// error, with at most twice its budget (1,000) remaining (polled, like the bytes), and at
    /// least one (the workload ran).
    #[test]
    fn a_call_creates_at_most_its_file_budget_in_its_writable_directories() {
        let (scratch, failed, text) = fill(Mode::On, "disk_files = 500", CREATE_20000_FILES);
        let (files, _) = files_and_bytes(&scratch.work().join("out"));
        eprintln!("{files} files remain under a budget of 500");
        assert!(
            failed,
            "the call passed its file budget without an error: {text}"
        );
        assert!(files <= 1000, "{files} files remain (budget 500)");
        assert!(
            scratch.work().join("out/f0").exists(),
            "the first file was not created: the workload did not run ({text})"
        );
    }

    /// The control: without the sandbox all 20,000 files are created.
    #[test]
    fn a_call_creates_20000_files_without_sandbox() {
        let (scratch, failed, text) = fill(Mode::Off, "disk_files = 500", CREATE_20000_FILES);
        assert_eq!((failed, text.as_str()), (false, "created\n"));
        assert_eq!(files_and_bytes(&scratch.work().join("out")).0, 20_000);
    }

    /// Python run by the call: one child alone, then 8 at once, each allocating and touching
    /// 48 MiB, creating `out/held-<n>`, sleeping (0 s alone, 3 s together) and creating
    /// `out/done-<n>`. Files, not output, count the survivors: they stay if a budget kills the
    /// parent too.
    const EIGHT_TIMES_48_MIB: &str = r#"import subprocess
child = '''import sys, time
b = bytearray(48 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
open('out/held-' + sys.argv[1], 'w').close()
print('held', flush=True)
time.sleep(float(sys.argv[2]))
open('out/done-' + sys.argv[1], 'w').close()
print('done', flush=True)
'''
subprocess.run(['/usr/bin/python3', '-c', child, 'alone', '0'], stdout=subprocess.DEVNULL)
procs = [subprocess.Popen(['/usr/bin/python3', '-c', child, str(n), '3'], stdout=subprocess.PIPE) for n in range(8)]
outs = [p.communicate()[0].decode() for p in procs]
print('survivors', sum(out.count('done') for out in outs))
"#;

    /// Runs [`EIGHT_TIMES_48_MIB`] under `resources = { call_memory_mib = 128 }`; returns
    /// whether the child alone finished, how many of the 8 did, and the call's text.
    fn eight_times_48_mib(mode: Mode) -> (bool, usize, String) {
        let scratch = SandboxTree::new(&format!("dd-callmem-{mode:?}"));
        let manifest = python_tool(
            "py",
            mode,
            "write = [\"out\"]\nresources = { call_memory_mib = 128 }\ntimeout_ms = 30000",
        );
        let mut server = scratch.serve(&manifest, &[]);
        server.send(&call(1, "py", json!({ "code": EIGHT_TIMES_48_MIB })));
        let (_, text) = outcome(&server.recv_within(Duration::from_secs(60)));
        drop(server);
        let out = scratch.work().join("out");
        let survivors = (0..8)
            .filter(|n| out.join(format!("done-{n}")).exists())
            .count();
        (out.join("done-alone").exists(), survivors, text)
    }

    /// `resources = { call_memory_mib = 128 }` bounds the memory of all a call's processes
    /// together: of 8 processes holding 48 MiB each at once, at most 2 (2 × 48 ≤ 128) finish.
    /// Today each process is bounded alone (`memory_mib`, 512 MiB of address space), and all
    /// 8 finish. One child alone, which fits the budget, finishes (the workload runs).
    #[test]
    fn the_processes_of_a_call_share_one_memory_budget() {
        let (alone, survivors, text) = eight_times_48_mib(Mode::On);
        eprintln!("{survivors} of 8 processes of 48 MiB finished under a budget of 128 MiB");
        assert!(alone, "one child of 48 MiB alone did not finish: {text}");
        assert!(
            survivors * 48 <= 128,
            "{survivors} processes of 48 MiB finished under a call budget of 128 MiB: {text}"
        );
    }

    /// The control: without the sandbox all 8 finish.
    #[test]
    fn eight_processes_of_48_mib_finish_without_sandbox() {
        let (alone, survivors, text) = eight_times_48_mib(Mode::Off);
        assert!(alone, "{text}");
        assert_eq!(survivors, 8, "{text}");
        assert_eq!(text, "survivors 8\n");
    }

    // 12.5 CPU shares: busy calls leave airlock answering

    /// 8 calls at once, each with 60 busy loops (480 on this machine's cores), must not slow
    /// airlock's answers: the calls' share of the CPU is bounded, not each process's time.
    /// 200 pings, one at a time, each answered within 100 ms and half within 5 ms. (The one
    /// wall-clock assertion of the suite: the issue's own figures; the median was 52 to 87 ms
    /// before the calls shared one CPU weight, and is tens of microseconds since.) Every busy
    /// loop is in a sandboxed call, killed with its namespace when the server is dropped; the
    /// test checks none is left.
    ///
    /// The pings stop at the first one slower than 100 ms: the verdict is known. Ignored by
    /// the README's test command, where the rest of the suite runs beside it on two cores and
    /// a memory or disk test stalls a ping now and then: `.ci/run` runs it alone.
    #[test]
    #[ignore = "a timing under load: .ci/run runs it alone, after the suite"]
    fn busy_calls_leave_airlock_answering_pings() {
        require("/usr/bin/seq", "coreutils");
        require("/usr/bin/sleep", "coreutils");
        let scratch = SandboxTree::new("dd-cpu");
        let marker = format!("busy-{}", unique());
        let manifest = format!(
            "[limits]\nmax_in_flight = 16\n\
             tool_call_rate = {{ per_minute = 6000, burst = 100 }}\n\
             cheap_method_rate = {{ per_minute = 60000, burst = 1000 }}\n{}",
            shell_tool(
                "busy",
                Mode::On,
                "exec = [\"/usr/bin/seq\", \"/usr/bin/sleep\"]\n\
                 resources = { processes = 64 }\ntimeout_ms = 60000",
            )
        );
        let mut server = scratch.serve(&manifest, &[]);
        // The marker rides in a comment: every busy loop (a subshell) carries the script.
        let script =
            format!("# {marker}\nfor i in $(seq 60); do (while :; do :; done) & done; sleep 40");
        for id in 0..8 {
            server.send(&call(100 + id, "busy", json!({ "script": script })));
        }
        // The calls start at once. Their shells fork each loop with the calls' share of the
        // CPU, which the loops already running share too: wait until most are running (the
        // pings must meet the load), for at most 25 s.
        let loaded = eventually(Duration::from_secs(25), || {
            tagged(&marker).len() >= 8 * 60 * 3 / 4
        });
        assert!(
            loaded,
            "the busy calls did not get their loops running: {} processes",
            tagged(&marker).len()
        );
        let limit = Duration::from_millis(100);
        let mut times = Vec::new();
        let mut ended = 0;
        for n in 0..200_u32 {
            let id = 1000 + n;
            let start = Instant::now();
            server.send(&request(id, "ping", json!({})));
            loop {
                let reply = server.recv();
                if reply["id"] == json!(id) {
                    break;
                }
                // A call ended (and answered) meanwhile.
                ended += 1;
            }
            times.push(start.elapsed());
            if start.elapsed() > limit {
                break;
            }
        }
        // Counted before the server goes: the loops ran while it was pinged.
        let running = tagged(&marker).len();
        drop(server);
        let left = survivors(&marker);
        let pings = times.len();
        times.sort_unstable();
        let (median, worst) = (times[pings / 2], times[pings - 1]);
        eprintln!(
            "{pings} ping round trips under 8 busy calls: median {median:?}, worst {worst:?}; \
             {ended} calls ended during the pings; {running} processes of the calls after them"
        );
        assert_eq!(
            left,
            Vec::<super::Process>::new(),
            "busy loops survived their server"
        );
        assert!(
            worst <= limit && median <= Duration::from_millis(5),
            "pings slowed by busy calls: median {median:?}, worst {worst:?} of {pings} pings"
        );
        // Fast pings prove something only if the loops were busy throughout.
        assert_eq!(pings, 200);
        assert_eq!(ended, 0, "busy calls ended before the 200 pings did");
        assert!(
            running >= 8 * 60 * 3 / 4,
            "only {running} processes of the busy calls were running"
        );
    }

    // 12.6 System calls outside an allow list

    /// Calls each system call (x86_64 numbers) a command has no need of and prints `name
    /// result errno`: a new user namespace (last: it would change what the others see), a
    /// mount context, `userfaultfd`, a BPF map, a software perf counter on itself, inotify (a
    /// watch on the workdir), fanotify, `io_uring`, a detached copy of `/`, `clone3` (its
    /// child, if any, exits at once) and a datagram `socketpair`.
    const SYSCALL_PROBE: &str = r#"import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
def show(name, result):
    print(name, result, ctypes.get_errno() if result == -1 else 0, flush=True)
    return result
def sys(name, number, *args):
    ctypes.set_errno(0)
    return show(name, libc.syscall(L(number), *args))
sys('fsopen', 430, b'tmpfs', L(0))
sys('userfaultfd', 323, L(0))
bpf = (ctypes.c_uint32 * 32)(2, 4, 4, 1)
sys('bpf', 321, L(0), bpf, L(ctypes.sizeof(bpf)))
perf = (ctypes.c_uint32 * 32)()
perf[0], perf[1], perf[10] = 1, 128, 0x60
sys('perf_event_open', 298, perf, L(0), L(-1), L(-1), L(0))
fd = sys('inotify_init1', 294, L(0))
sys('inotify_add_watch', 254, L(fd), os.getcwd().encode(), L(0xfff))
sys('fanotify_init', 300, L(0), L(0))
sys('io_uring_setup', 425, L(1), (ctypes.c_uint8 * 120)())
sys('open_tree', 428, L(-100), b'/', L(1))
ctypes.set_errno(0)
show('socketpair_dgram', libc.socketpair(1, 2, 0, (ctypes.c_int * 2)()))
ctypes.set_errno(0)
child = libc.syscall(L(435), (ctypes.c_uint64 * 8)(), L(64))
if child == 0:
    os._exit(0)
show('clone3', child)
if child > 0:
    os.waitpid(child, 0x40000000)
sys('unshare_user', 272, L(0x10000000))
"#;

    /// The names the probe prints.
    const PROBED: [&str; 12] = [
        "fsopen",
        "userfaultfd",
        "bpf",
        "perf_event_open",
        "inotify_init1",
        "inotify_add_watch",
        "fanotify_init",
        "io_uring_setup",
        "open_tree",
        "socketpair_dgram",
        "clone3",
        "unshare_user",
    ];

    fn syscall_probe(mode: Mode) -> (BTreeMap<String, (i64, i64)>, String) {
        let scratch = SandboxTree::new(&format!("dd-syscalls-{mode:?}"));
        let mut server = scratch.serve(&python_tool("py", mode, ""), &[]);
        let (_, text) = python(&mut server, "py", SYSCALL_PROBE);
        let results = probe_results(&text);
        let names: Vec<&str> = results.keys().map(String::as_str).collect();
        let mut expected = PROBED.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected, "the probe did not run to its end: {text}");
        (results, text)
    }

    /// Every one of those system calls fails in a call (EPERM, EACCES or ENOSYS alike: the
    /// errno is not asserted).
    #[test]
    fn system_calls_outside_the_allow_list_fail() {
        let (results, text) = syscall_probe(Mode::On);
        let allowed: Vec<&String> = results
            .iter()
            .filter(|(_, result)| result.0 != -1)
            .map(|(name, _)| name)
            .collect();
        assert!(
            allowed.is_empty(),
            "these went through: {allowed:?}\n{text}"
        );
    }

    /// The control: without the sandbox, as root, every one works (unprivileged, several
    /// would fail for want of privilege, which shows nothing of the sandbox).
    #[test]
    fn system_calls_outside_the_allow_list_work_without_sandbox() {
        if !rustix::process::getuid().is_root() {
            eprintln!("system_calls_outside_the_allow_list_work_without_sandbox: not root");
            return;
        }
        let (results, text) = syscall_probe(Mode::Off);
        let failed: Vec<&String> = results
            .iter()
            .filter(|(_, result)| result.0 == -1)
            .map(|(name, _)| name)
            .collect();
        assert!(failed.is_empty(), "these failed: {failed:?}\n{text}");
    }

    // 12.7 A git checkout: sources writable, hooks, config and agent files not

    /// Makes `work/repo` a git checkout with one commit of `main.c`.
    fn checkout(scratch: &SandboxTree) -> PathBuf {
        let repo = scratch.work().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join("main.c"), "int main(void) { return 0; }\n").unwrap();
        for args in [
            &["init", "--quiet"][..],
            &["add", "main.c"],
            &[
                "-c",
                "user.name=it",
                "-c",
                "user.email=it@example.invalid",
                "commit",
                "--quiet",
                "-m",
                "first",
            ],
        ] {
            let output = spawn_command(Path::new("git"))
                .args(args)
                .current_dir(&repo)
                .stdin(std::process::Stdio::null())
                .output()
                .expect("git runs (install git to run the sandbox tests)");
            assert!(
                output.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        repo
    }

    /// A bash tool whose workdir is the checkout, writable as a whole.
    fn checkout_tool(mode: Mode) -> String {
        require("/usr/bin/chmod", "coreutils");
        require("/usr/bin/mkdir", "coreutils");
        format!(
            r#"
[[tool]]
name = "edit"
description = "Runs agent text in bash in a git checkout"
command = ["/usr/bin/bash", "-c", "{{script}}"]
workdir = "work/repo"
stderr = "drop"
args.script = {{ type = "string", max_length = 4000 }}
{extra}{keys}"#,
            extra = mode.grants("write = [\".\"]\nexec = [\"/usr/bin/chmod\", \"/usr/bin/mkdir\"]"),
            keys = mode.keys(&["interpreter_code"])
        )
    }

    /// Plants a pre-commit hook, points `core.fsmonitor` (a command git runs on `status`) at
    /// a program, and edits the tracked source.
    const HOOK_AND_CONFIG: &str =
        "printf '#!/bin/sh\\ntouch pwned-by-hook\\n' > .git/hooks/pre-commit
/usr/bin/chmod +x .git/hooks/pre-commit
printf '[core]\\n\\tfsmonitor = touch pwned-by-fsmonitor\\n' >> .git/config
echo '/* edited */' >> main.c
echo edited";

    /// Creates the files other tools run on their own when they open the checkout: direnv's
    /// `.envrc`, a VS Code task, an MCP client's server list.
    const AGENT_FILES: &str = "printf 'export PWNED=1\\n' > .envrc
/usr/bin/mkdir -p .vscode
printf '{\"version\": \"2.0.0\"}\\n' > .vscode/tasks.json
printf '{\"mcpServers\": {}}\\n' > .mcp.json
echo created";

    /// What the two calls left: `(hook exists, config unchanged, source edited, agent files
    /// that exist)`, and their texts.
    struct CheckoutResult {
        hook: bool,
        config_unchanged: bool,
        source_edited: bool,
        agent_files: Vec<&'static str>,
        texts: (String, String),
    }

    fn checkout_attacks(mode: Mode) -> CheckoutResult {
        let scratch = SandboxTree::new(&format!("dd-git-{mode:?}"));
        let repo = checkout(&scratch);
        let config = std::fs::read(repo.join(".git/config")).unwrap();
        let mut server = scratch.serve(&checkout_tool(mode), &[]);
        let first = bash(&mut server, "edit", HOOK_AND_CONFIG).1;
        let second = bash(&mut server, "edit", AGENT_FILES).1;
        drop(server);
        CheckoutResult {
            hook: repo.join(".git/hooks/pre-commit").exists(),
            config_unchanged: std::fs::read(repo.join(".git/config")).unwrap() == config,
            source_edited: std::fs::read_to_string(repo.join("main.c"))
                .unwrap()
                .ends_with("/* edited */\n"),
            agent_files: [".envrc", ".vscode/tasks.json", ".mcp.json"]
                .into_iter()
                .filter(|name| repo.join(name).exists())
                .collect(),
            texts: (first, second),
        }
    }

    /// A tool that may write its whole git checkout still cannot plant a hook or change
    /// `.git/config` (both run code the next time anyone uses git there), nor create
    /// `.envrc`, `.vscode/tasks.json` or `.mcp.json` at its top (run by direnv, the editor, the
    /// next agent); editing the sources keeps working.
    #[test]
    fn a_git_checkouts_hooks_config_and_agent_files_are_not_writable() {
        let found = checkout_attacks(Mode::On);
        let mut wrong = Vec::new();
        if found.hook {
            wrong.push("a pre-commit hook was planted".to_owned());
        }
        if !found.config_unchanged {
            wrong.push(".git/config changed".to_owned());
        }
        if !found.agent_files.is_empty() {
            wrong.push(format!("created {:?}", found.agent_files));
        }
        if !found.source_edited {
            wrong.push("the source could not be edited".to_owned());
        }
        assert!(wrong.is_empty(), "{}: {:?}", wrong.join("; "), found.texts);
    }

    /// The control: without the sandbox all of it lands.
    #[test]
    fn a_git_checkouts_hooks_config_and_agent_files_are_written_without_sandbox() {
        let found = checkout_attacks(Mode::Off);
        assert!(found.hook, "{:?}", found.texts);
        assert!(!found.config_unchanged, "{:?}", found.texts);
        assert_eq!(
            found.agent_files,
            [".envrc", ".vscode/tasks.json", ".mcp.json"],
            "{:?}",
            found.texts
        );
        assert!(found.source_edited, "{:?}", found.texts);
    }

    // 12.8 Paths outside the grants are not even visible

    /// `stat` of the secret outside the grants, as `stat result errno`, the listing of `/`
    /// the call sees, and which of `/root`, `/home`, `/tmp` and the scratch directory exist
    /// for it.
    fn visibility_probe(scratch: &SandboxTree) -> String {
        format!(
            r#"import os
try:
    os.stat({secret:?})
    print('stat', 0, 0)
except OSError as e:
    print('stat', -1, e.errno)
try:
    print('listing', sorted(os.listdir('/')))
except OSError as e:
    print('listing refused', e.errno)
print('exists', [p for p in ('/root', '/home', '/tmp', {top:?}) if os.path.exists(p)])
"#,
            secret = scratch.outside().join("secret.txt").to_str().unwrap(),
            top = scratch.dir.to_str().unwrap()
        )
    }

    fn visibility(mode: Mode) -> (Option<(i64, i64)>, String) {
        let scratch = SandboxTree::new(&format!("dd-visible-{mode:?}"));
        let mut server = scratch.serve(&python_tool("py", mode, ""), &[]);
        let (_, text) = python(&mut server, "py", &visibility_probe(&scratch));
        eprintln!("{mode:?}: {text}");
        (probe_results(&text).get("stat").copied(), text)
    }

    /// A path outside the grants does not exist for a call: its `stat` fails (today Landlock
    /// leaves `stat` alone, so a call learns what exists anywhere). The listing of `/` is
    /// printed for the record, not asserted.
    #[test]
    fn paths_outside_the_grants_are_not_visible() {
        let (stat, text) = visibility(Mode::On);
        assert_eq!(stat.map(|result| result.0), Some(-1), "{text}");
    }

    /// The control: without the sandbox the `stat` works.
    #[test]
    fn paths_outside_the_grants_are_visible_without_sandbox() {
        let (stat, text) = visibility(Mode::Off);
        assert_eq!(stat, Some((0, 0)), "{text}");
    }
}

// 13. The host's updates: a granted system file replaced while airlock runs

mod host_updates {
    use super::*;

    /// What apt's maintainer scripts do to `/etc/passwd`: the same path, a new inode (a copy
    /// renamed over it). Launchers started after it must take the new file (the update never
    /// stops calls), while a path the manifest itself grants, replaced the same way, is
    /// refused with one ERROR line naming the tool and the path. `/etc` here is a copy of the
    /// host's, bound over `/etc` in a mount namespace of airlock's own (`unshare`), so the test
    /// changes nothing of the machine's.
    #[test]
    fn a_replaced_system_file_is_taken_and_a_replaced_grant_is_one_error() {
        if !rustix::process::getuid().is_root() {
            eprintln!(
                "a_replaced_system_file_is_taken_and_a_replaced_grant_is_one_error: not root; \
                 binding a copy of /etc over it needs a mount namespace of root's"
            );
            return;
        }
        require("/usr/bin/unshare", "util-linux");
        require("/usr/bin/wc", "coreutils");
        let scratch = SandboxTree::new("updates");
        let etc = scratch.dir.join("etc");
        let copied = spawn_command(Path::new("/bin/cp"))
            .arg("-a")
            .arg("/etc/.")
            .arg(&etc)
            .status()
            .unwrap();
        assert!(copied.success(), "copying /etc");
        let manifest = format!(
            "{}[[tool]]\nname = \"grant\"\ndescription = \"Counts the workdir's entries\"\n\
             command = [\"ls\", \"-a\"]\nworkdir = \"granted\"\n",
            "[limits]\nmax_in_flight = 16\n\n[[tool]]\nname = \"users\"\n\
             description = \"Counts the lines of /etc/passwd\"\n\
             command = [\"wc\", \"-l\", \"/etc/passwd\"]\nworkdir = \"work\"\n\n"
        );
        let granted = scratch.dir.join("granted");
        std::fs::create_dir(&granted).unwrap();
        let path = scratch.manifest(&manifest);
        let airlock = airlock();
        let script = "mount --bind \"$1\" /etc && exec \"$0\" serve --manifest \"$2\"";
        let mut server = Server::start_with(
            Path::new("/usr/bin/unshare"),
            &[
                "--mount",
                "--propagation",
                "private",
                "/bin/sh",
                "-c",
                script,
                airlock.to_str().unwrap(),
                etc.to_str().unwrap(),
                &path,
            ],
            &[],
        );
        server.initialize("2025-11-25");
        let lines = |text: &str| -> usize {
            text.split_whitespace()
                .next()
                .and_then(|count| count.parse().ok())
                .unwrap_or(0)
        };
        let (failed, before) = outcome(&server.request(&call(1, "users", json!({}))));
        assert!(!failed, "{before}");
        // The update: a copy with one user more, renamed over the original.
        let passwd = etc.join("passwd");
        let mut text = std::fs::read_to_string(&passwd).unwrap();
        text.push_str("updated:x:4242:4242::/nonexistent:/usr/sbin/nologin\n");
        std::fs::write(etc.join("passwd.new"), text).unwrap();
        std::fs::rename(etc.join("passwd.new"), &passwd).unwrap();
        // The manifest's own grant, replaced the same way: the other tool's workdir.
        std::fs::rename(&granted, scratch.dir.join("granted.old")).unwrap();
        std::fs::create_dir(&granted).unwrap();
        // Calls at once, so that new launchers start (the idle ones keep the files they
        // bound, which is the update's old state: they are served too).
        for id in 10..16 {
            server.send(&call(id, "users", json!({})));
        }
        for id in 20..24 {
            server.send(&call(id, "grant", json!({})));
        }
        let mut users = Vec::new();
        let mut grants = Vec::new();
        for _ in 0..10 {
            let reply = server.recv();
            let id = reply["id"].as_i64().unwrap();
            let (failed, text) = outcome(&reply);
            if id < 20 {
                users.push((failed, lines(&text), text));
            } else {
                grants.push((failed, text));
            }
        }
        assert!(
            users.iter().all(|(failed, _, _)| !failed),
            "a system file's update stopped calls: {users:?}"
        );
        assert!(
            users
                .iter()
                .any(|(_, count, _)| *count == lines(&before) + 1),
            "no launcher took the updated file: {users:?}"
        );
        assert!(
            grants
                .iter()
                .any(|(failed, text)| *failed && text.contains("restart airlock")),
            "a replaced grant was served or said nothing of what to do: {grants:?}"
        );
        let stderr = server.stderr();
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains("ERROR") && line.contains("was replaced since"))
            .collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        let error = errors[0];
        assert!(
            error.contains("grant") && error.contains(&granted.display().to_string()),
            "{error}"
        );
        assert!(
            stderr.contains("a system file the sandbox grants was replaced"),
            "{stderr}"
        );
    }
}
