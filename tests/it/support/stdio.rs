//! Spawning a server binary and talking to it line by line, with timeouts so a hung server
//! fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::processes;
use serde_json::{Value, json};

/// How long any single expected reply may take before the test fails.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// The path of a binary built from the library's `crates/airlock/examples/`: `cargo test` at
/// the top builds them, `cargo test --test it` does not, so a missing one is built here (once
/// per test run, for every example).
pub fn example(name: &str) -> PathBuf {
    let mut dir = std::env::current_exe().expect("test binary path");
    dir.pop(); // the test binary's name
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join("examples").join(name);
    if !path.exists() {
        build_examples(&dir);
    }
    assert!(
        path.exists(),
        "{} is missing and `cargo build -p airlock --examples` did not make it",
        path.display()
    );
    path
}

/// `cargo build -p airlock --examples --all-features` into the profile directory `profile`
/// (`target/debug`, say) the test binary runs from: the HTTP examples need the library's
/// features, which the `airlock` program turns on in a build of the whole workspace.
fn build_examples(profile: &std::path::Path) {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = spawn_command(std::path::Path::new(&cargo));
        build
            .args(["build", "--quiet", "--examples", "--all-features"])
            .args(["-p", "airlock", "--manifest-path"])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .arg("--target-dir")
            .arg(profile.parent().expect("a target directory"));
        if profile.ends_with("release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building the examples failed: {status}");
    });
}

/// The `airlock` binary.
pub fn airlock() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_airlock"))
}

/// A server process with its pipes.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Receiver<String>,
}

impl Server {
    /// Starts `program args…` with stdin/stdout piped and stderr captured.
    pub fn start(program: &std::path::Path, args: &[&str]) -> Self {
        Self::start_with(program, args, &[])
    }

    /// Starts with extra environment variables.
    pub fn start_with(program: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_configured(program, args, env, None)
    }

    fn start_configured(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        dir: Option<&std::path::Path>,
    ) -> Self {
        let mut command = spawn_command(program);
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("AIRLOCK_LOG", "debug");
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn server");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (tx, stderr_lines) = mpsc::channel();
        thread::spawn(move || {
            let mut text = String::new();
            let mut stderr = stderr;
            let _read = stderr.read_to_string(&mut text);
            let _sent = tx.send(text);
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            stderr: stderr_lines,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes raw bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().expect("flush");
    }

    /// Writes one line (a newline is added).
    pub fn send(&mut self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.write(&bytes);
    }

    /// The next line the server writes, parsed; fails the test after [`REPLY_TIMEOUT`].
    pub fn recv(&mut self) -> Value {
        let line = self.recv_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next raw line.
    pub fn recv_line(&mut self) -> String {
        match self.lines.recv_timeout(REPLY_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no reply within {REPLY_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("server closed stdout"),
        }
    }

    /// The next line, parsed, waiting at most `wait` (for replies slower than
    /// [`REPLY_TIMEOUT`], such as a tool's time limit).
    pub fn recv_within(&mut self, wait: Duration) -> Value {
        match self.lines.recv_timeout(wait) {
            Ok(line) => {
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            }
            Err(RecvTimeoutError::Timeout) => panic!("no reply within {wait:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("server closed stdout"),
        }
    }

    /// Writes raw bytes, returning the error instead of failing (a server that ended its
    /// session closes its input).
    pub fn try_write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes)?;
        stdin.flush()
    }

    /// Sends a line and returns the next reply.
    pub fn request(&mut self, line: &str) -> Value {
        self.send(line);
        self.recv()
    }

    /// Completes a legacy handshake in `version`; returns the `initialize` result.
    pub fn initialize(&mut self, version: &str) -> Value {
        let reply = self.request(
            &json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {},
                           "clientInfo": {"name": "it", "version": "1"}}
            })
            .to_string(),
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        reply
    }

    /// Closes stdin (end of input).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits for exit, failing the test after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                start.elapsed() < timeout,
                "server did not exit within {timeout:?}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the server wrote on stderr (waits for it to exit first).
    pub fn stderr(&mut self) -> String {
        self.close_stdin();
        self.wait(REPLY_TIMEOUT);
        self.stderr.recv_timeout(REPLY_TIMEOUT).unwrap_or_default()
    }

    /// Peak resident memory of the server so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        processes::peak_rss_kib(self.pid())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// The test suite's one way to start a process: the binaries under test, the official
/// clients that start them, and helpers such as `kill`.
#[expect(
    clippy::disallowed_methods,
    reason = "tests spawn the binaries under test"
)]
pub fn spawn_command(program: &std::path::Path) -> std::process::Command {
    std::process::Command::new(program)
}

/// A request line.
pub fn request(id: impl Into<Value>, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

/// A `tools/call` request line.
pub fn call(id: impl Into<Value>, tool: &str, arguments: Value) -> String {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The tools of the embedded default manifest, in the order `tools/list` gives them.
pub const DEFAULT_TOOLS: [&str; 5] = [
    "list_directory",
    "read_file",
    "search_text",
    "file_info",
    "count_lines",
];

/// The tool names of a `tools/list` reply, in order.
pub fn tool_names(list: &Value) -> Vec<&str> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tools/list result: {list}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect()
}

/// The `_meta` a modern request carries.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    })
}

/// [`modern_meta`] declaring the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`).
pub fn modern_meta_with_tasks() -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    meta
}

/// The error code of a reply (fails if it is not an error).
pub fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

impl Server {
    /// Starts `program args…` in the working directory `dir`.
    pub fn start_in(program: &std::path::Path, args: &[&str], dir: &std::path::Path) -> Self {
        Self::start_configured(program, args, &[], Some(dir))
    }
}

/// Runs a command to completion and returns its output (stdout, stderr, status).
pub fn run(program: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = spawn_command(program);
    command.args(args).stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run command")
}

/// A server whose stdout is never read: what a client that stopped reading looks like.
pub struct Unread {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    /// Held open and not read until a test takes it.
    stdout: Option<std::process::ChildStdout>,
}

impl Unread {
    pub fn start(program: &std::path::Path, args: &[&str]) -> Self {
        let mut child = spawn_command(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn server");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            stdout: Some(stdout),
        }
    }

    /// The server's stdout, to start reading it.
    pub fn take_stdout(&mut self) -> std::process::ChildStdout {
        self.stdout.take().expect("stdout not taken yet")
    }
}

impl Drop for Unread {
    fn drop(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// The text of a tool result's first content item; fails the test when there is none.
pub fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {reply}"))
        .to_owned()
}

/// Whether a tool result is an error (`isError: true`).
pub fn is_error(reply: &Value) -> bool {
    reply["result"]["isError"] == json!(true)
}

/// The text of a tool result, and whether it is an error; fails on a protocol error.
pub fn outcome(reply: &Value) -> (bool, String) {
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a tool result: {reply}"))
        .to_owned();
    (reply["result"]["isError"] == json!(true), text)
}
