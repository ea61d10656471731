//! Network by destination (issue 36): a networked tool's commands reach the destinations its
//! manifest names through airlock's proxy, and nothing else.
//!
//! Every server here is started by the test on loopback; names are given to the proxy by
//! `--test-hosts` (a hidden flag a release build refuses), which pins a listed name to the
//! test's server (a loopback address pinned there stands for a public host) or to a private
//! or link-local address (judged as a resolved one is: refused). Before this issue,
//! `network = true` gave the command the host's network, and the raw-socket, UDP, loopback
//! and metadata cases below all went through.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::fixtures::SandboxTree;
use crate::support::stdio::outcome;
use crate::support::stdio::{REPLY_TIMEOUT, Server, airlock, call, spawn_command};

/// How long a connection that must not arrive is waited for after the call returned.
const ABSENCE_WAIT: Duration = Duration::from_millis(500);

/// A static HTTP/1.1 file server on loopback, serving `root` (one request per connection,
/// `Connection: close`); it counts the requests it answered.
struct FileServer {
    port: u16,
    served: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The `Host` header of every request.
    hosts: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FileServer {
    fn start(root: PathBuf) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let hosts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let count = std::sync::Arc::clone(&served);
        let seen = std::sync::Arc::clone(&hosts);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let root = root.clone();
                let count = std::sync::Arc::clone(&count);
                let seen = std::sync::Arc::clone(&seen);
                thread::spawn(move || {
                    if let Some(host) = answer(stream, &root) {
                        seen.lock().unwrap().push(host);
                        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        Self {
            port,
            served,
            hosts,
        }
    }

    fn served(&self) -> usize {
        self.served.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Answers one request: the file under `root`, or 404. The request's `Host` header, if it
/// answered one.
fn answer(mut stream: TcpStream, root: &Path) -> Option<String> {
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let host = head
        .lines()
        .find_map(|line| {
            line.strip_prefix("Host: ")
                .or_else(|| line.strip_prefix("host: "))
        })
        .unwrap_or_default()
        .to_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    // A proxy that forwarded the absolute URL would show `http://…` here.
    assert!(target.starts_with('/'), "the proxy forwarded {target}");
    let path = target
        .split('?')
        .next()
        .unwrap_or("/")
        .trim_start_matches('/');
    let file = root.join(if path.is_empty() { "index.txt" } else { path });
    let (status, body) = match std::fs::read(&file) {
        Ok(body) if !path.contains("..") => ("200 OK", body),
        _ => ("404 Not Found", b"missing\n".to_vec()),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let _sent = stream.write_all(reply.as_bytes());
    let _sent = stream.write_all(&body);
    Some(host)
}

/// A loopback TCP listener that only records whether anyone connected.
pub(crate) struct Witness {
    socket: TcpListener,
}

impl Witness {
    pub(crate) fn new() -> Self {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        Self { socket }
    }

    pub(crate) fn port(&self) -> u16 {
        self.socket.local_addr().unwrap().port()
    }

    pub(crate) fn connected_within(&self, wait: Duration) -> bool {
        let start = Instant::now();
        loop {
            if self.socket.accept().is_ok() {
                return true;
            }
            if start.elapsed() > wait {
                return false;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

fn require(program: &str) {
    assert!(
        Path::new(program).is_file(),
        "{program} is missing: the network tests need curl, git and python3 (tests/clients/setup.sh)"
    );
}

/// A bash tool with `network` as given, that may run curl, git and python3.
pub(crate) fn net_tool(name: &str, network: &str, resources: &str) -> String {
    for program in ["/usr/bin/bash", "/usr/bin/curl", "/usr/bin/python3"] {
        require(program);
    }
    format!(
        r#"
[[tool]]
name = "{name}"
description = "Runs agent text in bash, with a network"
command = ["/usr/bin/bash", "-c", "{{script}}"]
workdir = "work"
exec = ["/usr/bin/curl", "/usr/bin/python3", "{git}", "{git_core}"]
network = {network}
timeout_ms = 20000
accept_risk = ["interpreter_code"]
args.script = {{ type = "string", max_length = 4000 }}
{resources}
"#,
        git = git().display(),
        git_core = git_core().display(),
    )
}

/// git, wherever this machine has it (its helpers, `git-remote-http`, live in its exec path).
fn git() -> PathBuf {
    let output = spawn_command(Path::new("/usr/bin/env"))
        .args(["which", "git"])
        .output()
        .unwrap();
    let path = String::from_utf8(output.stdout).unwrap();
    assert!(!path.trim().is_empty(), "git is missing");
    std::fs::canonicalize(path.trim()).unwrap()
}

fn git_core() -> PathBuf {
    let output = spawn_command(&git()).arg("--exec-path").output().unwrap();
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// airlock serving `manifest` from `scratch`, with `hosts` pinned for the proxy.
pub(crate) fn serve(scratch: &SandboxTree, manifest: &str, hosts: &[String]) -> Server {
    let path = scratch.manifest(manifest);
    let mut args: Vec<&str> = Vec::new();
    for pair in hosts {
        args.push("--test-hosts");
        args.push(pair);
    }
    args.extend(["serve", "--manifest", &path]);
    let mut server = Server::start_with(&airlock(), &args, &[]);
    server.initialize("2025-11-25");
    server
}

pub(crate) fn bash(server: &mut Server, tool: &str, script: &str) -> (bool, String) {
    outcome(&server.request(&call(1, tool, json!({ "script": script }))))
}

/// The `tool_call` records on a server's stderr so far... read once it has exited.
pub(crate) fn records(server: &mut Server) -> Vec<Value> {
    server
        .stderr()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["event"] == "tool_call")
        .collect()
}

/// A served tree with `index.txt` and a bare git repository `repo.git` (dumb HTTP).
fn site(scratch: &SandboxTree) -> PathBuf {
    let root = scratch.dir.join("site");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("index.txt"), "hello from the listed host\n").unwrap();
    let work = scratch.dir.join("repo-work");
    let run = |args: &[&str], dir: &Path| {
        let status = spawn_command(&git())
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    std::fs::create_dir_all(&work).unwrap();
    run(&["init", "-q", "-b", "main"], &work);
    std::fs::write(work.join("f"), "x\n").unwrap();
    run(&["add", "f"], &work);
    run(&["commit", "-q", "-m", "one"], &work);
    run(
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            root.join("repo.git").to_str().unwrap(),
        ],
        &scratch.dir,
    );
    run(&["update-server-info"], &root.join("repo.git"));
    root
}

/// curl (plain forwarding, `CONNECT` through `--proxytunnel`, SOCKS5 with remote names),
/// Python's urllib and `git ls-remote` over HTTP reach a listed name, through the proxy the
/// environment names; the audit record lists each connection.
#[test]
fn listed_names_are_reached_by_curl_python_and_git() {
    let scratch = SandboxTree::new("net-listed");
    let files = FileServer::start(site(&scratch));
    let port = files.port;
    let manifest = net_tool("web", &format!("[\"api.test:{port}\"]"), "");
    let mut server = serve(&scratch, &manifest, &["api.test=127.0.0.1".to_owned()]);
    let url = format!("http://api.test:{port}/index.txt");
    let cases = [
        ("curl", format!("curl -sS --max-time 10 {url}")),
        (
            "curl CONNECT",
            format!("curl -sS --max-time 10 --proxytunnel {url}"),
        ),
        (
            "curl SOCKS5",
            format!("curl -sS --max-time 10 -x socks5h://127.0.0.1:3128 {url}"),
        ),
        (
            "python urllib",
            format!(
                "python3 -c 'import urllib.request,sys; \
                 sys.stdout.write(urllib.request.urlopen(\"{url}\", timeout=10).read().decode())'"
            ),
        ),
    ];
    for (what, script) in &cases {
        let (failed, text) = bash(&mut server, "web", script);
        assert!(!failed, "{what}: {text}");
        assert!(
            text.contains("hello from the listed host"),
            "{what}: {text}"
        );
    }
    // A forwarded request names the checked destination, whatever Host the client sent.
    let (failed, text) = bash(
        &mut server,
        "web",
        &format!("curl -sS --max-time 10 -H 'Host: elsewhere.test' {url}"),
    );
    assert!(!failed, "{text}");
    assert_eq!(
        files.hosts.lock().unwrap().last().map(String::as_str),
        Some(format!("api.test:{port}").as_str())
    );
    let (failed, text) = bash(
        &mut server,
        "web",
        &format!("git ls-remote http://api.test:{port}/repo.git"),
    );
    assert!(!failed, "git: {text}");
    assert!(text.contains("refs/heads/main"), "git: {text}");
    assert!(files.served() >= 5, "{}", files.served());
    server.close_stdin();
    server.wait(REPLY_TIMEOUT);
    let records = records(&mut server);
    let first = &records[0]["network"]["connections"][0];
    assert_eq!(first["destination"], json!(format!("api.test:{port}")));
    assert_eq!(first["address"], json!("127.0.0.1"));
    assert_eq!(first["allowed"], json!(true));
    assert!(first["bytes_down"].as_u64().unwrap() > 0, "{first}");
}

/// Refused, each with the sentence in the result and the reason in the audit record: an
/// unlisted name, a listed name on another port, Redis's port on loopback, the metadata
/// service, and a listed name pinned to a private or link-local address (DNS rebinding).
#[test]
fn everything_else_is_refused_and_the_agent_is_told_why() {
    let scratch = SandboxTree::new("net-refused");
    let files = FileServer::start(site(&scratch));
    let port = files.port;
    let redis = Witness::new();
    let manifest = net_tool(
        "web",
        &format!("[\"api.test:{port}\", \"rebound.test:{port}\", \"meta.test:80\"]"),
        "",
    );
    let hosts = [
        "api.test=127.0.0.1".to_owned(),
        "other.test=127.0.0.1".to_owned(),
        "rebound.test=10.1.2.3".to_owned(),
        "meta.test=169.254.169.254".to_owned(),
    ];
    let mut server = serve(&scratch, &manifest, &hosts);
    let cases = [
        (
            format!("http://other.test:{port}/"),
            format!("other.test:{port} is not allowed for this tool"),
            "not_listed",
        ),
        (
            format!("http://api.test:{}/", port.wrapping_add(1)),
            format!(
                "api.test:{} is not allowed for this tool",
                port.wrapping_add(1)
            ),
            "not_listed",
        ),
        (
            format!("http://127.0.0.1:{}/", redis.port()),
            format!("127.0.0.1:{} is not allowed for this tool", redis.port()),
            "not_listed",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "169.254.169.254:80 is not allowed for this tool".to_owned(),
            "not_listed",
        ),
        (
            format!("http://rebound.test:{port}/"),
            format!(
                "rebound.test:{port} resolves only to loopback, private or link-local addresses"
            ),
            "inside_address",
        ),
        (
            "http://meta.test/latest/".to_owned(),
            "meta.test:80 resolves only to loopback".to_owned(),
            "inside_address",
        ),
    ];
    for (url, sentence, _) in &cases {
        let (_, text) = bash(&mut server, "web", &format!("curl -sS --max-time 10 {url}"));
        assert!(
            text.contains(&format!("network: {sentence}")),
            "{url}: {text}"
        );
        assert!(
            !text.contains("hello from the listed host"),
            "{url}: {text}"
        );
    }
    assert_eq!(files.served(), 0, "a refused request reached the server");
    assert!(
        !redis.connected_within(ABSENCE_WAIT),
        "the Redis port got a connection"
    );
    server.close_stdin();
    server.wait(REPLY_TIMEOUT);
    let records = records(&mut server);
    for (record, (url, _, reason)) in records.iter().zip(&cases) {
        let attempt = &record["network"]["connections"][0];
        assert_eq!(attempt["allowed"], json!(false), "{url}: {record}");
        assert_eq!(attempt["refusal"], json!(reason), "{url}: {record}");
    }
}

/// `network = true` is any public destination: loopback (airlock's own port, Redis), the
/// metadata service and private ranges are refused there too.
#[test]
fn network_true_refuses_the_inside() {
    let scratch = SandboxTree::new("net-any");
    let witness = Witness::new();
    let manifest = net_tool("web", "true", "");
    let mut server = serve(&scratch, &manifest, &["inside.test=10.0.0.7".to_owned()]);
    for url in [
        format!("http://127.0.0.1:{}/", witness.port()),
        "http://169.254.169.254/".to_owned(),
        "http://192.168.1.1/".to_owned(),
        "http://[::1]:80/".to_owned(),
        "http://inside.test/".to_owned(),
    ] {
        let (_, text) = bash(&mut server, "web", &format!("curl -sS --max-time 10 {url}"));
        assert!(text.contains("network: "), "{url}: {text}");
    }
    assert!(
        !witness.connected_within(ABSENCE_WAIT),
        "loopback got a connection"
    );
}

/// A program that ignores the proxy variables reaches nothing: a raw TCP connection to a
/// loopback listener (bash's /dev/tcp, Python's socket) and UDP (bash's /dev/udp) never
/// arrive, although the tool has the network.
#[test]
fn raw_sockets_and_udp_reach_nothing() {
    let scratch = SandboxTree::new("net-raw");
    let manifest = net_tool("web", "true", "");
    let mut server = serve(&scratch, &manifest, &[]);
    let witness = Witness::new();
    let (failed, text) = bash(
        &mut server,
        "web",
        &format!("echo hi > /dev/tcp/127.0.0.1/{}", witness.port()),
    );
    assert!(failed, "the raw connection did not fail: {text}");
    let (_, text) = bash(
        &mut server,
        "web",
        &format!(
            "python3 -c 'import socket; s=socket.create_connection((\"127.0.0.1\", {})); \
             s.sendall(b\"hi\"); print(\"connected\")'",
            witness.port()
        ),
    );
    assert!(!text.contains("connected"), "{text}");
    assert!(
        !witness.connected_within(ABSENCE_WAIT),
        "the listener got a connection"
    );
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(ABSENCE_WAIT)).unwrap();
    let port = udp.local_addr().unwrap().port();
    let _ = bash(
        &mut server,
        "web",
        &format!("echo hi > /dev/udp/127.0.0.1/{port}; echo hi > /dev/udp/1.1.1.1/53"),
    );
    let mut buffer = [0_u8; 16];
    assert!(
        udp.recv(&mut buffer).is_err(),
        "the UDP socket got a datagram"
    );
    // Name resolution goes through the proxy: the system resolver finds nothing.
    let (_, text) = bash(
        &mut server,
        "web",
        "python3 -c 'import socket; print(socket.getaddrinfo(\"example.com\", 80))'",
    );
    assert!(!text.contains("SOCK_STREAM"), "{text}");
}

/// A call that receives more than `network_down_mib` is stopped, its result names the
/// budget, and its record the key.
#[test]
fn a_call_over_its_byte_budget_is_cut() {
    let scratch = SandboxTree::new("net-budget");
    let root = site(&scratch);
    std::fs::write(root.join("big.bin"), vec![7_u8; 4 * 1024 * 1024]).unwrap();
    let files = FileServer::start(root);
    let port = files.port;
    let manifest = net_tool(
        "web",
        &format!("[\"api.test:{port}\"]"),
        "resources = { network_down_mib = 1 }",
    );
    let mut server = serve(&scratch, &manifest, &["api.test=127.0.0.1".to_owned()]);
    let (failed, text) = bash(
        &mut server,
        "web",
        &format!("curl -sS --max-time 10 -o /dev/null http://api.test:{port}/big.bin; echo done"),
    );
    assert!(failed, "{text}");
    assert!(
        text.contains("more than the sandbox's network budget of 1 MiB"),
        "{text}"
    );
    // The same tool still works for a call within its budget.
    let (failed, text) = bash(
        &mut server,
        "web",
        &format!("curl -sS --max-time 10 http://api.test:{port}/index.txt"),
    );
    assert!(!failed, "{text}");
    server.close_stdin();
    server.wait(REPLY_TIMEOUT);
    let records = records(&mut server);
    assert_eq!(
        records[0]["limit"],
        json!("network_down_mib"),
        "{}",
        records[0]
    );
    let received = records[0]["network"]["bytes_down"].as_u64().unwrap();
    assert!(received < 4 * 1024 * 1024, "{received}");
}

/// `airlock check` prints the destinations, and refuses a malformed one by its text.
#[test]
fn check_prints_the_destinations_and_refuses_malformed_ones() {
    let scratch = SandboxTree::new("net-check");
    let good = scratch.manifest(&net_tool(
        "web",
        "[\"api.github.com:443\", \"*.githubusercontent.com:443\", \"10.0.0.0/8:5432\"]",
        "",
    ));
    let output = spawn_command(&airlock())
        .args(["check", &good])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(
            "network:   api.github.com:443, *.githubusercontent.com:443, 10.0.0.0/8:5432 only"
        ),
        "{text}"
    );
    for bad in ["[\"10.0.0.1\"]", "[\"http://x\"]", "[]", "[\"a b:1\"]"] {
        let path = scratch.dir.join("bad.toml");
        std::fs::write(&path, net_tool("web", bad, "")).unwrap();
        let path = path.to_str().unwrap().to_owned();
        let output = spawn_command(&airlock())
            .args(["check", &path])
            .output()
            .unwrap();
        assert!(!output.status.success(), "{bad} passed");
        let text = String::from_utf8_lossy(&output.stderr);
        assert!(text.contains("network"), "{bad}: {text}");
    }
}

/// A release build refuses `--test-hosts`; a debug build takes it. (The release binary is the
/// one `redteam_release` builds; here only the flag's shape is checked on ours.)
#[test]
fn test_hosts_take_names_and_addresses_only() {
    let output = spawn_command(&airlock())
        .args(["--test-hosts", "not a name=1.2.3.4", "check"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// The unprivileged path (airlock as `nobody`: a user namespace first) proxies the same way,
/// and an address rule is how a loopback destination is named explicitly.
#[test]
fn an_unprivileged_airlock_proxies_too() {
    let scratch = SandboxTree::new("net-unprivileged");
    let files = FileServer::start(site(&scratch));
    let port = files.port;
    let manifest = net_tool("web", &format!("[\"127.0.0.1:{port}\"]"), "");
    let mut server = crate::sandbox::serve_unprivileged(&scratch, &manifest);
    let (failed, text) = bash(
        &mut server,
        "web",
        &format!("curl -sS --max-time 10 http://127.0.0.1:{port}/index.txt"),
    );
    assert!(!failed, "{text}");
    assert!(text.contains("hello from the listed host"), "{text}");
    let (_, text) = bash(
        &mut server,
        "web",
        &format!(
            "curl -sS --max-time 10 http://127.0.0.1:{}/index.txt",
            port.wrapping_add(1)
        ),
    );
    assert!(text.contains("is not allowed for this tool"), "{text}");
}
