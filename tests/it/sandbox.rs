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
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{REPLY_TIMEOUT, Server, airlock, call, request, spawn_command};

/// Whether a manifest's tools run in the sandbox.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Mode {
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

/// A scratch tree: `tools.toml`, the tools' workdir `work/` (with `work/out/` writable when a
/// manifest says so) and a sibling `outside/` holding secrets no tool may read.
struct Scratch {
    dir: PathBuf,
    /// Text of `outside/secret.txt`.
    secret: String,
}

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("airlock-it-sandbox-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("work/out")).unwrap();
        std::fs::create_dir_all(dir.join("work/data")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        let secret = format!("TOPSECRET-outside-{}", unique());
        std::fs::write(dir.join("outside/secret.txt"), format!("{secret}\n")).unwrap();
        std::fs::write(dir.join("work/inside.txt"), "inside-file\n").unwrap();
        Self { dir, secret }
    }

    fn work(&self) -> PathBuf {
        self.dir.join("work")
    }

    fn outside(&self) -> PathBuf {
        self.dir.join("outside")
    }

    /// Writes the manifest, checks it with `airlock check` (so a refused manifest fails with
    /// its reason, not a closed pipe) and returns its path.
    fn manifest(&self, text: &str) -> String {
        let path = self.dir.join("tools.toml");
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap().to_owned();
        let output = crate::harness::run(&airlock(), &["check", "--manifest", &path], &[]);
        assert!(
            output.status.success(),
            "airlock check refused the manifest:\n{}\n{text}",
            String::from_utf8_lossy(&output.stderr)
        );
        path
    }

    /// Serves `manifest` (a text) with `env`, handshake done.
    fn serve(&self, manifest: &str, env: &[(&str, &str)]) -> Server {
        let path = self.manifest(manifest);
        let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], env);
        server.initialize("2025-11-25");
        server
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

/// Digits no other run or call of this suite uses (a marker for processes and secrets).
fn unique() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{}{:03}{:09}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

/// Fails the test, naming the package to install, if a program this test needs is missing.
fn require(program: &str, package: &str) {
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

/// The text of a tool result, and whether it is an error; fails on a protocol error.
fn outcome(reply: &Value) -> (bool, String) {
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a tool result: {reply}"))
        .to_owned();
    (reply["result"]["isError"] == json!(true), text)
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

fn write_attacks(scratch: &Scratch) -> Vec<Attack> {
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
    let scratch = Scratch::new("write");
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
    let scratch = Scratch::new("write-off");
    let mut server = scratch.serve(&write_manifest(Mode::Off), &[]);
    assert_attacks(Mode::Off, &mut server, &write_attacks(&scratch));
}

// ---------------------------------------------------------------------------------------------
// 2. Reads

fn read_attacks(scratch: &Scratch) -> Vec<Attack> {
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
    let scratch = Scratch::new("read");
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
    let scratch = Scratch::new("read-off");
    let mut server = scratch.serve(&shell_tool("shell", Mode::Off, ""), &[]);
    assert_attacks(Mode::Off, &mut server, &read_attacks(&scratch));
}

/// A `read` root makes its files readable, and only those.
#[test]
fn a_declared_read_root_is_readable() {
    let scratch = Scratch::new("readroot");
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

/// Without `network = true`, a TCP connection to a listener on 127.0.0.1 and a UDP datagram
/// to a socket on 127.0.0.1 never arrive; with it, both do (which proves the attack works).
#[test]
fn the_network_is_closed_unless_declared() {
    let scratch = Scratch::new("net");
    let manifest = format!(
        "{}{}",
        shell_tool("shell", Mode::On, ""),
        shell_tool("shell_net", Mode::On, "network = true")
    );
    let mut server = scratch.serve(&manifest, &[]);
    for (tool, open) in [("shell", false), ("shell_net", true)] {
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
    let scratch = Scratch::new("net-off");
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

/// Polls `check` until it holds or `limit` passes; returns whether it held.
fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
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
    let scratch = Scratch::new(&format!("escape-{end:?}-{mode:?}"));
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
            crate::harness::signal(server.pid(), "KILL");
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
    let scratch = Scratch::new("reuse");
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
    let scratch = Scratch::new("idle");
    let mut server = scratch.serve(&shell_tool("shell", Mode::On, ""), &[]);
    for _ in 0..2 {
        let (failed, text) = bash(&mut server, "shell", "echo ok");
        assert!(!failed, "{text}");
    }
    let launchers = launchers_of(server.pid());
    assert!(!launchers.is_empty(), "no idle launcher after two calls");
    crate::harness::signal(server.pid(), "KILL");
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
    let scratch = Scratch::new("bomb");
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
    let scratch = Scratch::new("bomb-off");
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
        tool("allocate_2g", "resources = { memory_mib = 2048 }")
    )
}

/// 1 GiB is refused under the default memory limit (512 MiB) and allowed under 2048 MiB: the
/// limit, not the machine, is what stopped it.
#[test]
fn memory_past_the_limit_is_refused() {
    let scratch = Scratch::new("memory");
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
    let scratch = Scratch::new("memory-off");
    let mut server = scratch.serve(&memory_manifest(Mode::Off), &[]);
    let (failed, text) = outcome(&server.request(&call(1, "allocate", json!({}))));
    assert_eq!((failed, text.as_str()), (false, "1073741824"));
}

// ---------------------------------------------------------------------------------------------
// 7. airlock's own environment and descriptors

/// Starts airlock through `sh`, which opens `secret_file` on descriptor 7 without
/// close-on-exec, with `AIRLOCK_TEST_SECRET` set; the pid is airlock's (sh execs it).
fn serve_with_secrets(scratch: &Scratch, manifest: &str, env_secret: &str) -> Server {
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
    let scratch = Scratch::new(&format!("inherit-{mode:?}"));
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
    let scratch = Scratch::new(&format!("signal-{mode:?}"));
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
    let scratch = Scratch::new(&format!("race-{mode:?}"));
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

fn shapes_manifest(scratch: &Scratch, mode: Mode) -> String {
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

fn shape_attacks(scratch: &Scratch) -> Vec<Attack> {
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
    let scratch = Scratch::new("shapes");
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
    let scratch = Scratch::new("shapes-off");
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
    let scratch = Scratch::new("exec");
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
    let scratch = Scratch::new("check");
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
    let output = crate::harness::run(&airlock(), &["check", "--manifest", path], &[]);
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
fn python_tool(name: &str, mode: Mode, extra: &str) -> String {
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
fn python(server: &mut Server, tool: &str, code: &str) -> (bool, String) {
    outcome(&server.request(&call(1, tool, json!({ "code": code }))))
}

/// The fixed text of a call whose launcher refused to run the command.
const SANDBOX_FAILED: &str = "The sandbox could not be set up, so the command did not run.";

/// Lines `name result errno` printed by a probe, as (result, errno) by name.
fn probe_results(text: &str) -> std::collections::BTreeMap<String, (i64, i64)> {
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
fn check(scratch: &Scratch, text: &str) -> (Option<i32>, String) {
    let path = scratch.dir.join("tools.toml");
    std::fs::write(&path, text).unwrap();
    let output = crate::harness::run(
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
    let scratch = Scratch::new("nested");
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
    let scratch = Scratch::new("swap");
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
    // Launchers confined before the swap: the old rules, which the link is not under.
    let before: Vec<(bool, String)> = (0..3)
        .map(|_| bash(&mut server, "shell", &script))
        .collect();
    check(&before, "by a launcher from before the swap");
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
        crate::harness::signal(*pid, "KILL");
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
    fn new(scratch: &Scratch, tag: &str) -> Self {
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
    let scratch = Scratch::new("unix");
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
    let scratch = Scratch::new("unix-off");
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
    let scratch = Scratch::new(&format!("keys-{mode:?}"));
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
            crate::harness::run(Path::new("/usr/bin/python3"), &["-c", code, &secret], &[]);
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
        let _removed = crate::harness::run(
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
    let scratch = Scratch::new(&format!("ipc-{mode:?}"));
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
    let scratch = Scratch::new("memfd");
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
    let scratch = Scratch::new("memfd-off");
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
    let scratch = Scratch::new(&format!("exit125-{mode:?}"));
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
    Scratch,
    std::collections::BTreeMap<String, (i64, i64)>,
    String,
) {
    let scratch = Scratch::new(&format!("nodes-{mode:?}"));
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

/// Serves `manifest` as the unprivileged user `nobody` when this test runs as root (so the
/// launcher takes the user-namespace path), else as the user running the tests.
fn serve_unprivileged(scratch: &Scratch, manifest: &str) -> Server {
    let path = scratch.manifest(manifest);
    let airlock = airlock();
    let airlock = airlock.to_str().unwrap();
    let mut server = if rustix::process::getuid().is_root() {
        require("/usr/bin/setpriv", "util-linux");
        Server::start_with(
            Path::new("/usr/bin/setpriv"),
            &[
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                airlock,
                "serve",
                "--manifest",
                &path,
            ],
            &[],
        )
    } else {
        Server::start_with(Path::new(airlock), &["serve", "--manifest", &path], &[])
    };
    server.initialize("2025-11-25");
    server
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
fn launcher_tampering(mut server: Server) {
    let (failed, before) = python(&mut server, "py", SCHEDULING_PROBE);
    assert!(!failed, "{before}");
    let (failed, attempts) = python(&mut server, "py", LAUNCHER_TAMPERING);
    assert!(!failed, "{attempts}");
    let changed: Vec<&str> = attempts
        .lines()
        .filter(|line| !line.ends_with(" refused"))
        .collect();
    let (failed, after) = python(&mut server, "py", SCHEDULING_PROBE);
    assert!(!failed, "{after}");
    assert!(
        changed.is_empty(),
        "the call changed its launcher: {changed:?} (the next call saw {after} after {before})"
    );
    assert_eq!(before, after, "the next call inherited the changes");
}

#[test]
fn a_call_cannot_change_its_launcher_as_root() {
    let scratch = Scratch::new("tamper-root");
    launcher_tampering(scratch.serve(&python_tool("py", Mode::On, ""), &[]));
}

#[test]
fn a_call_cannot_change_its_launcher_unprivileged() {
    let scratch = Scratch::new("tamper-user");
    let manifest = python_tool("py", Mode::On, "");
    launcher_tampering(serve_unprivileged(&scratch, &manifest));
}

/// The unprivileged launcher (a user namespace, then the PID namespace) holds the same
/// promises as root's: a call's escapes are gone before the next call, which runs in the same
/// namespace.
#[test]
fn an_unprivileged_launcher_leaves_nothing_of_a_call_for_the_next() {
    let scratch = Scratch::new("reuse-user");
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
    let scratch = Scratch::new("uids");
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
