//! What a command tool's reply holds, through the real binary:
//! redaction that is no oracle, one redactor for every secret of the server, both streams in
//! the reply as the manifest asks, and replies whose memory stays inside the documented bound.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::fixtures::Scratch;
use crate::support::processes;
use crate::support::stdio::{self, REPLY_TIMEOUT, Server, airlock, call, is_error, outcome, text};

/// A call quota no test here comes near, before `tools`.
fn with_quota(tools: &str) -> String {
    format!("[limits]\ntool_call_rate = {{ per_minute = 600000, burst = 100000 }}\n\n{tools}")
}

/// Serves `tools` (with [`with_quota`]) from `scratch` on stdio with `env`, handshake done.
fn serve(scratch: &Scratch, tools: &str, env: &[(&str, &str)]) -> Server {
    scratch.serve(&with_quota(tools), env)
}

// ---------------------------------------------------------------------------------------
// Item 4: the redactor is no oracle.

/// Echo tools that never print their secret: what they show is the agent's own text. One
/// prints it after a word, one before, one with an output cap that cuts it.
const ECHO_TOOLS: &str = r#"
[[tool]]
name = "echo_after"
description = "hello, then the name"
command = ["printf", "hello %s", "{name}"]
secret_env = ["IT_SECRET"]
args.name = { type = "string", max_length = 1000 }

[[tool]]
name = "echo_before"
description = "the name, then world"
command = ["printf", "%s world", "{name}"]
secret_env = ["IT_SECRET"]
args.name = { type = "string", max_length = 1000 }

[[tool]]
name = "echo_capped"
description = "hello, then the name, cut at 64 bytes"
command = ["printf", "hello %s", "{name}"]
secret_env = ["IT_SECRET"]
max_output_bytes = 64
args.name = { type = "string", max_length = 1000 }
"#;

/// Two secrets of one length, and a third kind of text the same length.
const SECRET_1: &str = "ghp_Zx81kQ7vB2mN9pL4sT6w";
const SECRET_2: &str = "ghp_Qa03rY5uC8eK1jH7dF2x";

/// Inputs that hold parts of either secret at either end, whole secrets, and neither.
fn probes() -> Vec<(&'static str, String)> {
    let mut probes = Vec::new();
    for secret in [SECRET_1, SECRET_2] {
        for len in 1..secret.len() {
            for tool in ["echo_after", "echo_before"] {
                probes.push((tool, secret[..len].to_owned()));
                probes.push((tool, secret[len..].to_owned()));
            }
            // The cap (64 bytes) cuts right after the part: "hello " is 6 bytes.
            let pad = "x".repeat(64 - 6 - len);
            probes.push(("echo_capped", format!("{pad}{}!!!!", &secret[..len])));
        }
        for tool in ["echo_after", "echo_before"] {
            probes.push((tool, secret.to_owned()));
            probes.push((tool, format!("a {secret} b {secret}")));
        }
        probes.push((
            "echo_capped",
            format!("{secret} and more text past the cap, and more"),
        ));
    }
    for plain in ["", "plain", "ghp_", "ghp_Zx81kR", "ghp_Qa03rZ"] {
        for tool in ["echo_after", "echo_before", "echo_capped"] {
            probes.push((tool, plain.to_owned()));
        }
    }
    probes
}

/// For two secrets of one length, the same echo tool's replies are equal
/// wherever neither secret occurs whole, and where one does, they differ only there: A's reply
/// to a text holding its secret is B's reply to that text with the secret already replaced.
#[test]
fn for_two_secrets_of_one_length_an_echo_tool_differs_only_where_a_whole_secret_occurs() {
    let scratch = Scratch::new("output-differential");
    let mut one = serve(&scratch, ECHO_TOOLS, &[("IT_SECRET", SECRET_1)]);
    let mut two = serve(&scratch, ECHO_TOOLS, &[("IT_SECRET", SECRET_2)]);
    let ask = |server: &mut Server, tool: &str, name: &str| {
        outcome(&server.request(&call(1, tool, json!({ "name": name }))))
    };
    for (tool, name) in probes() {
        let in_one = name.contains(SECRET_1);
        let in_two = name.contains(SECRET_2);
        let first = ask(&mut one, tool, &name);
        let second = ask(&mut two, tool, &name);
        if !in_one && !in_two {
            assert_eq!(first, second, "{tool} {name:?}");
            continue;
        }
        // A whole secret: each server's reply is the other's reply to the redacted text.
        // (The capped tool's cut moves with the text's length, so it is compared whole only.)
        if tool == "echo_capped" {
            assert!(!first.1.contains(SECRET_1) && !second.1.contains(SECRET_2));
            continue;
        }
        if in_one {
            let redacted = name.replace(SECRET_1, "[REDACTED]");
            assert_eq!(first, ask(&mut two, tool, &redacted), "{tool} {name:?}");
        }
        if in_two {
            let redacted = name.replace(SECRET_2, "[REDACTED]");
            assert_eq!(second, ask(&mut one, tool, &redacted), "{tool} {name:?}");
        }
    }
}

/// The example that first showed the oracle. Without a cap, `printf 'hello %s' {name}` removed
/// `ghp_Zx81kQ` (the start of the secret) but showed `ghp_Zx81kR`.
#[test]
fn an_echo_tool_shows_the_start_of_its_secret_like_any_other_text() {
    let scratch = Scratch::new("output-example");
    let mut server = serve(&scratch, ECHO_TOOLS, &[("IT_SECRET", SECRET_1)]);
    for name in ["ghp_Zx81kQ", "ghp_Zx81kR", "ghp_Zx81kQ7vB2mN9pL4sT6"] {
        let reply = server.request(&call(1, "echo_after", json!({ "name": name })));
        assert_eq!(outcome(&reply), (false, format!("hello {name}")));
    }
    for name in [
        "x81kQ7vB2mN9pL4sT6w",
        "Zx81kQ7vB2mN9pL4sT6w",
        "hp_Zx81kQ7vB2mN9pL4sT6w",
    ] {
        let reply = server.request(&call(1, "echo_before", json!({ "name": name })));
        assert_eq!(outcome(&reply), (false, format!("{name} world")));
    }
}

/// The redaction-oracle attack, against a tool that never prints its secret: knowing the
/// token's format (`ghp_`), try each next character and keep the one whose reply stands out
/// (once the guess itself is masked in every reply). Returns what it learned.
fn attack(server: &mut Server, tool: &str, known_format: &str, steps: usize) -> (String, usize) {
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut known = known_format.to_owned();
    let mut calls = 0;
    for _ in 0..steps {
        let mut replies = Vec::new();
        for candidate in ALPHABET.chars() {
            let guess = format!("{known}{candidate}");
            let name = if tool == "echo_capped" {
                // The cap (64 bytes) falls right after the guess: "hello " is 6 bytes.
                format!("{}{guess}!!!!", "x".repeat(64 - 6 - guess.len()))
            } else {
                guess.clone()
            };
            let reply = server.request(&call(calls, tool, json!({ "name": name })));
            calls += 1;
            let (error, shown) = outcome(&reply);
            replies.push((candidate, (error, shown.replace(&guess, "<guess>"))));
        }
        let stands_out: Vec<char> = replies
            .iter()
            .filter(|(_, reply)| replies.iter().filter(|(_, other)| other == reply).count() == 1)
            .map(|(candidate, _)| *candidate)
            .collect();
        match stands_out.as_slice() {
            [one] => known.push(*one),
            _ => break,
        }
    }
    (known[known_format.len()..].to_owned(), calls)
}

/// The oracle attack, with and without the output cap, learns nothing.
#[test]
fn the_redaction_oracle_attack_learns_nothing() {
    let scratch = Scratch::new("output-oracle");
    let mut server = serve(&scratch, ECHO_TOOLS, &[("IT_SECRET", SECRET_1)]);
    for tool in ["echo_after", "echo_capped"] {
        let (learned, calls) = attack(&mut server, tool, "ghp_", 3);
        eprintln!("{tool}: the attack learned {learned:?} in {calls} calls");
        assert_eq!(
            learned, "",
            "{tool}: the redactor told the secret's next characters"
        );
    }
}

/// When airlock cuts output at its cap, the bytes just before the cut are
/// withheld whatever they hold, and the reply says so.
#[test]
fn output_cut_at_its_cap_withholds_the_bytes_before_the_cut_and_says_so() {
    let scratch = Scratch::new("output-withheld");
    let mut server = serve(&scratch, ECHO_TOOLS, &[("IT_SECRET", SECRET_1)]);
    let reply = server.request(&call(
        1,
        "echo_capped",
        json!({ "name": "0123456789".repeat(20) }),
    ));
    assert!(is_error(&reply));
    let shown = text(&reply);
    assert!(
        shown.starts_with("The command's output passed the limit of 64 bytes, so it was stopped"),
        "{shown}"
    );
    // The secret is 24 bytes: the 64 bytes before any cut are withheld (a multiple of 64 at
    // least as long as the longest secret), here all 64 kept bytes.
    assert!(!shown.contains("hello"), "{shown}");
    assert!(
        shown.contains("the last 64 bytes before the cut are withheld"),
        "{shown}"
    );
}

// ---------------------------------------------------------------------------------------
// Item 5: one redactor for every secret of the server.

/// A tool that reads another tool's secret from a log file (and prints it
/// on both streams, then fails, so that both are shown) shows it redacted; before, only a
/// tool's own secrets were.
#[test]
fn another_tools_secret_is_redacted_on_both_streams() {
    let scratch = Scratch::new("output-shared");
    std::fs::write(
        scratch.join("deploy.log"),
        format!("deploying with token {SECRET_2}\n"),
    )
    .unwrap();
    let tools = format!(
        r#"
[[tool]]
name = "deploy"
description = "Holds the deploy token"
command = ["true"]
secret_env = ["IT_DEPLOY_TOKEN"]

[[tool]]
name = "read_log"
description = "Prints the deploy log on stdout and stderr"
command = ["sh", "-c", "cat deploy.log; cat deploy.log >&2; exit 1"]
workdir = "{dir}"
exec = ["/usr/bin/cat"]
"#,
        dir = scratch.path().display()
    );
    let mut server = serve(&scratch, &tools, &[("IT_DEPLOY_TOKEN", SECRET_2)]);
    let reply = server.request(&call(1, "read_log", json!({})));
    let (error, shown) = outcome(&reply);
    assert!(error, "{shown}");
    assert!(!reply.to_string().contains(SECRET_2), "{shown}");
    assert!(
        shown.starts_with(
            "The command failed with exit status 1.\n\nstdout:\ndeploying with token [REDACTED]\n"
        ),
        "{shown}"
    );
    assert_eq!(
        shown.matches("deploying with token [REDACTED]\n").count(),
        2,
        "{shown}"
    );
}

/// A modern `tools/call` over HTTP with a bearer token; the reply's JSON.
fn http_call(addr: SocketAddr, token: &str, tool: &str) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": stdio::modern_meta()}
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
         Authorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(!head.to_ascii_lowercase().contains("chunked"), "{head}");
    serde_json::from_str(body).unwrap()
}

/// An HTTP bearer token that reaches a tool's output (a file it reads) is
/// redacted like a secret.
#[test]
fn an_http_bearer_token_in_tool_output_is_redacted() {
    let token = "it-bearer-token-0123456789abcdef";
    let scratch = Scratch::new("output-bearer");
    std::fs::write(
        scratch.join("proxy.log"),
        format!("Authorization: Bearer {token}\n"),
    )
    .unwrap();
    let manifest = scratch.manifest(&with_quota(&format!(
        r#"
[[tool]]
name = "read_log"
description = "Prints the proxy log"
command = ["cat", "proxy.log"]
workdir = "{dir}"
"#,
        dir = scratch.path().display()
    )));
    let mut child = stdio::spawn_command(&airlock())
        .args(["serve", "--manifest", &manifest, "--http", "127.0.0.1:0"])
        .args(["--auth-token-env", "IT_BEARER"])
        .env("IT_BEARER", token)
        .env("AIRLOCK_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = listening_address(&mut child);
    let reply = http_call(addr, token, "read_log");
    let _killed = child.kill();
    let _reaped = child.wait();
    assert_eq!(
        reply["result"]["content"][0]["text"],
        json!("Authorization: Bearer [REDACTED]\n"),
        "{reply}"
    );
}

/// The address an `airlock serve --http` child logs that it listens on.
fn listening_address(child: &mut std::process::Child) -> SocketAddr {
    use std::io::BufRead as _;
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("addr=").nth(1) {
                let _sent = tx.send(
                    rest.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
        }
    });
    rx.recv_timeout(REPLY_TIMEOUT).unwrap().parse().unwrap()
}

// ---------------------------------------------------------------------------------------
// Item 9: both streams, as the manifest asks.

/// A test run that reports on stderr, as unittest does, passing or failing.
fn runner(name: &str, extra: &str) -> String {
    format!(
        r#"
[[tool]]
name = "{name}"
description = "Runs the tests"
command = ["sh", "-c", "echo collected 2 items; printf '..\nRan 2 tests in 0.001s\n\nOK\n' >&2; echo done; exit $0", "{{status}}"]
accept_risk = ["interpreter_code"]
args.status = {{ type = "integer", minimum = 0, maximum = 1, default = 0 }}
{extra}
"#
    )
}

/// A passing run of a real unittest suite (which reports on stderr) returns
/// its report; before, a success returned stdout alone, here empty.
#[test]
fn a_passing_unittest_run_returns_its_report() {
    let scratch = Scratch::new("output-unittest");
    std::fs::write(
        scratch.join("test_sample.py"),
        "import unittest\n\nclass Sample(unittest.TestCase):\n    def test_one(self):\n        \
         self.assertEqual(1 + 1, 2)\n\n    def test_two(self):\n        self.assertTrue(True)\n",
    )
    .unwrap();
    let tools = format!(
        r#"
[[tool]]
name = "unittest"
description = "Runs the unit tests"
command = ["/usr/bin/python3", "-B", "-m", "unittest", "test_sample"]
workdir = "{dir}"
"#,
        dir = scratch.path().display()
    );
    let mut server = serve(&scratch, &tools, &[]);
    let reply = server.request(&call(1, "unittest", json!({})));
    let (error, shown) = outcome(&reply);
    assert!(!error, "{shown}");
    assert!(shown.starts_with("stderr:\n..\n---"), "{shown}");
    assert!(shown.contains("\nRan 2 tests in "), "{shown}");
    assert!(shown.ends_with("\n\nOK\n"), "{shown}");
}

/// The default (`separate`) returns both streams, each marked, on success
/// and on failure.
#[test]
fn by_default_both_streams_are_returned_and_marked() {
    let scratch = Scratch::new("output-separate");
    let mut server = serve(&scratch, &runner("tests", ""), &[]);
    let passing = server.request(&call(1, "tests", json!({})));
    assert_eq!(
        outcome(&passing),
        (
            false,
            "stdout:\ncollected 2 items\ndone\n\nstderr:\n..\nRan 2 tests in 0.001s\n\nOK\n"
                .to_owned()
        )
    );
    let failing = server.request(&call(2, "tests", json!({"status": 1})));
    let (error, shown) = outcome(&failing);
    assert!(error);
    assert!(
        shown.starts_with(
            "The command failed with exit status 1.\n\nstdout:\ncollected 2 items\ndone\n\n\
             stderr:\n..\nRan 2 tests in 0.001s\n\nOK\n"
        ),
        "{shown}"
    );
}

/// `merge` returns one stream as a terminal shows it, in the order written.
#[test]
fn merge_returns_both_streams_in_the_order_they_were_written() {
    let scratch = Scratch::new("output-merge");
    let mut server = serve(&scratch, &runner("tests", "stderr = \"merge\""), &[]);
    let passing = server.request(&call(1, "tests", json!({})));
    assert_eq!(
        outcome(&passing),
        (
            false,
            "collected 2 items\n..\nRan 2 tests in 0.001s\n\nOK\ndone\n".to_owned()
        )
    );
    let failing = server.request(&call(2, "tests", json!({"status": 1})));
    assert!(
        text(&failing).starts_with(
            "The command failed with exit status 1.\n\noutput (stdout and stderr):\n\
             collected 2 items\n..\n"
        ),
        "{failing}"
    );
}

/// `tail` returns the last `stderr_tail_bytes` of stderr, marked so.
#[test]
fn tail_returns_the_end_of_stderr_and_says_how_much() {
    let scratch = Scratch::new("output-tail");
    let tools = runner("tests", "stderr = \"tail\"\nstderr_tail_bytes = 3");
    let mut server = serve(&scratch, &tools, &[]);
    let passing = server.request(&call(1, "tests", json!({})));
    assert_eq!(
        outcome(&passing),
        (
            false,
            "stdout:\ncollected 2 items\ndone\n\nstderr (last 3 bytes at most):\nOK\n".to_owned()
        )
    );
}

/// `drop` never returns stderr, on success or failure.
#[test]
fn drop_never_returns_stderr() {
    let scratch = Scratch::new("output-drop");
    let mut server = serve(&scratch, &runner("tests", "stderr = \"drop\""), &[]);
    let passing = server.request(&call(1, "tests", json!({})));
    assert_eq!(
        outcome(&passing),
        (false, "collected 2 items\ndone\n".to_owned())
    );
    let failing = server.request(&call(2, "tests", json!({"status": 1})));
    let (error, shown) = outcome(&failing);
    assert!(error);
    assert!(!shown.contains("Ran 2 tests"), "{shown}");
    assert!(
        shown.starts_with("The command failed with exit status 1.\n\nstdout:\ncollected 2 items\n"),
        "{shown}"
    );
}

/// The streams share the reply's cap (`max_output_bytes`, counted as sent):
/// when they do not fit, each keeps at least half, and the cut is marked.
#[test]
fn streams_that_pass_the_replys_cap_are_cut_and_marked() {
    let scratch = Scratch::new("output-shared-cap");
    let tools = r#"
[[tool]]
name = "verbose"
description = "Prints 3000 bytes on each stream"
command = ["sh", "-c", "head -c 3000 /dev/zero | tr '\\0' o; head -c 3000 /dev/zero | tr '\\0' e >&2"]
exec = ["/usr/bin/head", "/usr/bin/tr"]
max_output_bytes = 4000
"#;
    let mut server = serve(&scratch, tools, &[]);
    let reply = server.request(&call(1, "verbose", json!({})));
    let (error, shown) = outcome(&reply);
    assert!(!error, "{shown}");
    let note = "\n[airlock: cut here: a reply holds at most 4000 bytes of output]\n";
    assert_eq!(
        shown,
        format!(
            "stdout:\n{}{note}\nstderr:\n{}{note}",
            "o".repeat(2000),
            "e".repeat(2000)
        )
    );
}

/// The new keys are checked when the manifest loads.
#[test]
fn check_refuses_bad_stderr_settings() {
    for (file, expected) in [
        ("bad-stderr-mode.toml", "unknown variant `both`"),
        (
            "bad-stderr-tail.toml",
            "`stderr_tail_bytes`: only with stderr = \"tail\"",
        ),
        (
            "bad-stderr-tail-size.toml",
            "`stderr_tail_bytes`: must be between 1 and the tool's max_output_bytes (1024)",
        ),
    ] {
        let path = format!("tests/data/{file}");
        let output = stdio::run(&airlock(), &["check", "--manifest", &path], &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{file}: {stderr}");
        assert!(stderr.starts_with(&path), "{file}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{file}: expected `{expected}` in:\n{stderr}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Item 13: replies inside the memory bound.

/// SECURITY.md: 32 MiB peak RSS of the airlock process.
const DOCUMENTED_BOUND_KIB: u64 = 32 * 1024;

/// What eight floods may make airlock hold, beside its program's file pages (see the test).
/// Alone it holds 10.4 to 12.1 MiB (four runs at stop 45); beside the whole suite on two busy
/// cores the replies wait longer to be read and it once held 15.3 MiB (a CI run), so 14 MiB
/// failed by scheduling, not by a change: the guard is 16 MiB, still half the documented bound.
const HELD_GUARD_KIB: u64 = 16 * 1024;

/// Eight calls at once, each printing 1 MiB of control bytes (6 bytes each
/// once JSON-escaped) on both streams, keep the server inside the documented bound, and every
/// reply inside its cap; before, 33.7 to 36.6 MiB and 6 MiB replies. The same with letters,
/// the most a reply can show.
#[test]
fn eight_parallel_floods_on_both_streams_stay_within_the_memory_bound() {
    for (case, out, err) in [("control", r"\\001", r"\\002"), ("letters", "a", "b")] {
        let scratch = Scratch::new(&format!("flood-{case}"));
        let tools = format!(
            r#"
[[tool]]
name = "flood"
description = "1 MiB on each stream"
command = ["sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' '{out}'; head -c 1048576 /dev/zero | tr '\\0' '{err}' >&2"]
exec = ["/usr/bin/head", "/usr/bin/tr"]
"#
        );
        let mut server = serve(&scratch, &tools, &[]);
        for id in 1..=8 {
            server.send(&call(id, "flood", json!({})));
        }
        let lines: Vec<String> = (1..=8).map(|_| server.recv_line()).collect();
        let peak = server.peak_rss_kib();
        // The bound is on what airlock holds, not on the pages of its own program file, which
        // a debug build maps by the tens of MiB (20 MiB of this peak, growing with the code).
        let program = processes::rss_file_kib(server.pid());
        let held = peak.saturating_sub(program);
        let lengths: Vec<usize> = lines.iter().map(String::len).collect();
        eprintln!(
            "8 parallel floods of {case}: peak RSS {peak} KiB ({program} KiB of it the program's \
             file pages), reply lines {lengths:?}"
        );
        assert!(
            held < DOCUMENTED_BOUND_KIB,
            "{case}: peak RSS {peak} KiB, {held} KiB held"
        );
        // Set from the assertion on the whole peak: 32 MiB less the debug program's file pages
        // when it was written (18.6 MiB at cdb5ebe), then raised by 2 MiB at stop 45 for the
        // suite's load (see `HELD_GUARD_KIB`).
        assert!(
            held < HELD_GUARD_KIB,
            "{case}: {held} KiB held, about 12 MiB alone"
        );
        // A reply holds at most the cap (1 MiB) of output, counted as sent, plus its framing.
        assert!(
            lengths.iter().all(|len| *len <= 1024 * 1024 + 4096),
            "{case}: {lengths:?}"
        );
        let (first, second) = if case == "control" {
            ('\u{1}', '\u{2}')
        } else {
            ('a', 'b')
        };
        for line in &lines {
            let reply: Value = serde_json::from_str(line).unwrap();
            let shown = text(&reply);
            let start: String = shown.chars().take(80).collect();
            assert!(
                shown.starts_with(&format!("stdout:\n{first}{first}")),
                "{start:?}"
            );
            assert!(
                shown.contains(&format!("\nstderr:\n{second}{second}")),
                "{start:?}"
            );
            assert!(
                shown.contains("[airlock: cut here: a reply holds at most 1048576 bytes"),
                "{start:?}"
            );
        }
        let ping = server.request(&stdio::request(9, "ping", json!({})));
        assert_eq!(ping["result"], json!({}));
    }
}
