//! `airlock serve` with a manifest, attacked the way an agent would: through the real binary
//! and real child processes.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::fixtures::ServeTree;
use crate::support::stdio::{
    DEFAULT_TOOLS, Server, airlock, call, is_error, request, text, tool_names,
};

/// Prints its argument count, then each argument between brackets, one per line.
const SHOW_ARGS: &str = r#"printf '%s\n' "$#"; for a in "$@"; do printf '[%s]\n' "$a"; done"#;

fn attack_manifest() -> String {
    format!(
        r#"
[limits]
max_frame_bytes = 8388608
max_argument_bytes = 4194304
max_string_bytes = 2097152

[[tool]]
name = "show_args"
description = "Shows how its arguments arrive"
command = ["sh", "-c", {script:?}, "sh", "{{value}}"]
# Fixed inline code with the value as $1: safe, but a shell given inline code is flagged.
accept_risk = ["interpreter_code"]
args.value = {{ type = "string", max_length = 1000 }}

[[tool]]
name = "show_after_dashes"
description = "Shows arguments placed after --"
command = ["sh", "-c", {script:?}, "sh", "--", "{{value}}", "--opt={{option}}", "{{list}}"]
accept_risk = ["interpreter_code"]
args.value = {{ type = "string" }}
args.option = {{ type = "string", default = "x" }}
args.list = {{ type = "array", max_items = 3, default = [] }}

[[tool]]
name = "read"
description = "Reads a file inside root"
command = ["cat", "--", "{{file}}"]
workdir = "root"
args.file = {{ type = "path", kind = "file" }}

[[tool]]
name = "environment"
description = "Prints the environment it gets"
command = ["env"]
env_allow = ["HOME"]
env = {{ FIXED = "fixed-value" }}

[[tool]]
name = "leak_secret"
description = "Prints its secret on stdout and stderr, then fails"
command = ["sh", "-c", "printf 'token=%s\\n' \"$AIRLOCK_IT_SECRET\"; printf 'err=%s\\n' \"$AIRLOCK_IT_SECRET\" >&2; exit 3"]
secret_env = ["AIRLOCK_IT_SECRET"]

[[tool]]
name = "print_secret"
description = "Prints its secret and succeeds"
command = ["sh", "-c", "printf 'a %s b %s c' \"$AIRLOCK_IT_SECRET\" \"$AIRLOCK_IT_SECRET\""]
secret_env = ["AIRLOCK_IT_SECRET"]

[[tool]]
name = "spawn_and_hang"
description = "Starts a grandchild, records the group, hangs"
command = ["sh", "-c", "sleep 60 & echo $$ $! > group.pid; sleep 60"]
timeout_ms = 700
# The process-group kill of a tool outside the sandbox (tests/it/sandbox.rs covers the
# namespace that contains sandboxed tools).
sandbox = "off"
accept_risk = ["unsandboxed"]

[[tool]]
name = "spawn_and_hang_long"
description = "The same, with no short deadline"
command = ["sh", "-c", "sleep 60 & echo $$ $! > group.pid; sleep 60"]
sandbox = "off"
accept_risk = ["unsandboxed"]

[[tool]]
name = "flood"
description = "Prints 100 MiB"
command = ["head", "--bytes=104857600", "/dev/zero"]

[[tool]]
name = "echo_stdin"
description = "Echoes its stdin"
command = ["cat"]
max_output_bytes = 2097152
args.input = {{ type = "string", stdin = true, max_length = 2000000 }}

[[tool]]
name = "cat_without_stdin"
description = "cat with nothing on stdin"
command = ["cat"]
timeout_ms = 5000
"#,
        script = SHOW_ARGS
    )
}

#[test]
fn shell_metacharacters_arrive_as_literal_text_in_one_argv_element() {
    let sandbox = ServeTree::new("meta");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    for value in [
        "; rm -rf /",
        "a | b && c",
        "$(id)",
        "`id`",
        "line1\nline2",
        "*",
        "$HOME",
        "' \" \\",
    ] {
        let reply = server.request(&call(1, "show_args", json!({"value": value})));
        assert!(!is_error(&reply), "{reply}");
        assert_eq!(text(&reply), format!("1\n[{value}]\n"), "{value:?}");
    }
}

#[test]
fn values_that_look_like_options_are_refused_unless_after_a_double_dash() {
    let sandbox = ServeTree::new("dash");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    for value in ["--output=/etc/passwd", "-rf", "-"] {
        let reply = server.request(&call(1, "show_args", json!({"value": value})));
        assert!(is_error(&reply), "{value}: {reply}");
        assert_eq!(
            text(&reply),
            "Invalid arguments: `value` must not start with '-': the command would read it as an option."
        );
    }
    let reply = server.request(&call(
        2,
        "show_after_dashes",
        json!({"value": "-rf", "option": "-x", "list": ["-a", "b c"]}),
    ));
    assert_eq!(text(&reply), "5\n[--]\n[-rf]\n[--opt=-x]\n[-a]\n[b c]\n");
}

#[test]
fn path_arguments_stay_inside_their_root() {
    let sandbox = ServeTree::new("paths");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    let reply = server.request(&call(1, "read", json!({"file": "hello.txt"})));
    assert_eq!(text(&reply), "hello from inside\n");
    // A file whose name looks like an option is passed as ./-rf.
    let reply = server.request(&call(2, "read", json!({"file": "-rf"})));
    assert_eq!(text(&reply), "a file named like an option\n");
    let outside = sandbox.dir.join("outside.txt");
    for (id, path) in [
        (3, "../outside.txt".to_owned()),
        (4, "sub/../../outside.txt".to_owned()),
        (5, "escape".to_owned()),
        (6, "sub/etc/passwd".to_owned()),
        (7, outside.to_str().unwrap().to_owned()),
        (8, "/etc/passwd".to_owned()),
        (9, "no-such-file".to_owned()),
        (10, "sub".to_owned()),
    ] {
        let reply = server.request(&call(id, "read", json!({"file": path})));
        assert!(is_error(&reply), "{path}: {reply}");
        let message = text(&reply);
        assert!(
            !message.contains("outside secret") && !message.contains("root:"),
            "{message}"
        );
        assert!(
            message.starts_with("Invalid arguments: `file` must"),
            "{path}: {message}"
        );
    }
}

#[test]
fn the_child_environment_holds_only_what_the_manifest_allows() {
    let sandbox = ServeTree::new("env");
    let mut server = sandbox.serve(
        &sandbox.manifest(&attack_manifest()),
        &[
            ("AIRLOCK_IT_PARENT_ONLY", "must-not-leak"),
            ("AIRLOCK_IT_SECRET", "unused-here"),
        ],
    );
    let env = text(&server.request(&call(1, "environment", json!({}))));
    let mut names: Vec<&str> = env
        .lines()
        .filter_map(|line| line.split('=').next())
        .collect();
    names.sort_unstable();
    let expected: Vec<&str> = if std::env::var_os("HOME").is_some() {
        vec!["FIXED", "HOME"]
    } else {
        vec!["FIXED"]
    };
    assert_eq!(names, expected, "{env}");
    assert!(env.contains("FIXED=fixed-value"));
    assert!(!env.contains("must-not-leak"));
}

#[test]
fn secrets_are_redacted_from_output_and_never_logged() {
    let secret = "s3cr3t-T0KEN-value-42";
    let sandbox = ServeTree::new("secret");
    let manifest = sandbox.manifest(&attack_manifest());
    let manifest = manifest.to_str().unwrap().to_owned();
    let mut server = Server::start_with(
        &airlock(),
        &["serve", "--manifest", &manifest],
        &[("AIRLOCK_IT_SECRET", secret), ("AIRLOCK_LOG", "trace")],
    );
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "print_secret", json!({})));
    assert_eq!(text(&reply), "a [REDACTED] b [REDACTED] c");
    let reply = server.request(&call(2, "leak_secret", json!({})));
    assert!(is_error(&reply));
    let message = text(&reply);
    assert!(
        message.starts_with("The command failed with exit status 3."),
        "{message}"
    );
    assert!(
        message.contains("token=[REDACTED]") && message.contains("err=[REDACTED]"),
        "{message}"
    );
    assert!(!reply.to_string().contains(secret));
    let log = server.stderr();
    assert!(!log.contains(secret), "the secret reached the log");
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "logging was not verbose: {log}"
    );
}

/// Every live (not zombie) process whose process group is `group`.
fn live_members(group: &str) -> Vec<String> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...
        let Some(after) = stat.rsplit_once(") ").map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.get(2) == Some(&group) && fields.first() != Some(&"Z") {
            members.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    members
}

fn recorded_group(sandbox: &ServeTree) -> (String, String) {
    let path = sandbox.dir.join("group.pid");
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Some((group, grandchild)) = text.trim().split_once(' ')
        {
            return (group.to_owned(), grandchild.to_owned());
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the tool never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_group_gone(group: &str) {
    let start = Instant::now();
    loop {
        let members = live_members(group);
        if members.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "group {group} still has {members:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let sandbox = ServeTree::new("timeout");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    let reply = server.request(&call(1, "spawn_and_hang", json!({})));
    assert!(is_error(&reply));
    assert!(text(&reply).contains("time limit of 700 ms"), "{reply}");
    let (group, grandchild) = recorded_group(&sandbox);
    assert_ne!(group, grandchild);
    assert_group_gone(&group);
    let ping = server.request(&request(2, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

#[test]
fn a_cancellation_kills_the_whole_process_group_and_sends_nothing() {
    let sandbox = ServeTree::new("cancel");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    server.send(&call(7, "spawn_and_hang_long", json!({})));
    let (group, _grandchild) = recorded_group(&sandbox);
    assert!(!live_members(&group).is_empty());
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}"#);
    assert_group_gone(&group);
    // The next line is the ping's reply: nothing was sent for id 7.
    let ping = server.request(&request(8, "ping", json!({})));
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
}

#[test]
fn a_flood_of_output_is_capped_and_memory_stays_bounded() {
    let sandbox = ServeTree::new("flood");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    let reply = server.request(&call(1, "flood", json!({})));
    assert!(is_error(&reply), "{}", reply.to_string().len());
    let message = text(&reply);
    assert!(
        message.starts_with("The command's output passed the limit of 1048576 bytes"),
        "{}",
        message.chars().take(200).collect::<String>()
    );
    assert!(message.len() <= 1_048_576 + 1024, "{}", message.len());
    let peak = server.peak_rss_kib();
    eprintln!("peak RSS after a 100 MiB flood: {peak} KiB");
    assert!(peak < 48 * 1024, "peak RSS {peak} KiB");
}

#[test]
fn a_megabyte_of_stdin_is_echoed_without_deadlock() {
    let sandbox = ServeTree::new("stdin");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    let input: String = (0..1_048_576)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let reply = server.request(&call(1, "echo_stdin", json!({"input": input})));
    assert!(
        !is_error(&reply),
        "{}",
        reply.to_string().chars().take(200).collect::<String>()
    );
    assert_eq!(text(&reply), input);
}

#[test]
fn the_child_never_reads_the_servers_stdin() {
    let sandbox = ServeTree::new("nostdin");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    let reply = server.request(&call(1, "cat_without_stdin", json!({})));
    assert_eq!(
        reply["result"],
        json!({"content": [{"type": "text", "text": ""}]})
    );
    let ping = server.request(&request(2, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

#[test]
fn the_default_manifest_serves_the_current_directory_read_only() {
    let sandbox = ServeTree::new("default");
    let root = sandbox.dir.join("root");
    let mut server = Server::start_in(&airlock(), &["serve"], &root);
    server.initialize("2025-11-25");
    let list = server.request(&request(1, "tools/list", json!({})));
    assert_eq!(tool_names(&list), DEFAULT_TOOLS);
    assert_eq!(
        text(&server.request(&call(2, "read_file", json!({"path": "hello.txt"})))),
        "hello from inside\n"
    );
    let found = text(&server.request(&call(3, "search_text", json!({"text": "from inside"}))));
    assert_eq!(found, "./hello.txt:1:hello from inside\n");
    let none = server.request(&call(4, "search_text", json!({"text": "absent text"})));
    assert!(!is_error(&none), "no match is not an error: {none}");
    assert!(is_error(&server.request(&call(
        5,
        "read_file",
        json!({"path": "escape"})
    ))));
    assert!(is_error(&server.request(&call(
        6,
        "read_file",
        json!({"path": "../outside.txt"})
    ))));
    let count = text(&server.request(&call(7, "count_lines", json!({"path": "hello.txt"}))));
    assert_eq!(
        count.split_whitespace().collect::<Vec<_>>(),
        ["1", "3", "18", "./hello.txt"]
    );
}

#[test]
fn check_accepts_every_example_manifest() {
    for (manifest, env) in [
        ("examples/git-readonly.toml", vec![]),
        (
            "examples/signing.toml",
            vec![("SIGNING_KEY", "an-example-signing-key")],
        ),
        ("examples/sandbox-write.toml", vec![]),
        ("examples/sandbox-network.toml", vec![]),
    ] {
        let output =
            crate::support::stdio::run(&airlock(), &["check", "--manifest", manifest], &env);
        assert!(
            output.status.success(),
            "{manifest}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.ends_with("OK\n"), "{stdout}");
        // Every example tool runs in the kernel sandbox, which this machine enforces whole.
        assert!(!stdout.contains("sandbox: OFF"), "{manifest}: {stdout}");
        assert!(stdout.contains("sandbox enforcement: complete"), "{stdout}");
        assert!(!stdout.contains("an-example-signing-key"));
    }
}

#[test]
fn check_refuses_each_bad_manifest_with_its_reason() {
    let cases = [
        (
            "bad-shell-code.toml",
            "tool `run`: `command`: agent input can reach where this shell or interpreter reads code",
        ),
        (
            "bad-launcher.toml",
            "tool `run`: `command`: this program runs its arguments as a command",
        ),
        (
            "bad-embedded.toml",
            "a placeholder must be a whole element or the value of `--opt={x}`",
        ),
        ("bad-unknown-key.toml", "unknown field `comand`"),
        ("bad-program.toml", "was not found in airlock's PATH"),
        (
            "bad-command-string.toml",
            "bad-command-string.toml:5:11: `command` must be a list, not a shell line: airlock \
             never runs a shell, so each program and argument is one element, as in command = \
             [\"git\", \"log\", \"--oneline\"]",
        ),
        (
            "bad-quoted-number.toml",
            "bad-quoted-number.toml:6:10: invalid type: string \"1\", expected i64: `minimum` \
             takes a number, written without quotes: minimum = 1\ntests/data/\
             bad-quoted-number.toml:12:14: invalid type: string \"500\", expected u64: \
             `timeout_ms` takes a number, written without quotes: timeout_ms = 500\n(2 errors)",
        ),
        (
            "bad-dangling.toml",
            "the option before it would be left dangling",
        ),
        ("bad-negative.toml", "can be negative"),
        ("bad-secret.toml", "`secret_env`: this variable is not set"),
        (
            "bad-scopes.toml",
            "bad-scopes.toml:7:10: tool `deploy`: `scopes`: at most 16 scopes, each 1 to 128 \
             visible ASCII characters other than \" and \\",
        ),
        ("bad-path-root.toml", "within must be an existing directory"),
        (
            "bad-unset-variable.toml",
            "`args.file.within`: `${AIRLOCK_TEST_SURELY_UNSET_VARIABLE}` names the variable \
             AIRLOCK_TEST_SURELY_UNSET_VARIABLE, which is not set in airlock's environment",
        ),
        ("bad-syntax.toml", "bad-syntax.toml:4:"),
        (
            "bad-write-system-workdir.toml",
            "tool `notes`: `write`: /usr/share lies inside /usr, a system tree no sandboxed \
             command may write",
        ),
        (
            "bad-write-system-direct.toml",
            "tool `configure`: `write`: /etc is a system tree no sandboxed command may write",
        ),
        (
            "bad-write-root.toml",
            "tool `anywhere`: `write`: / is the root of the file system, which holds every \
             system tree",
        ),
        (
            "bad-write-system-defaults.toml",
            "tool `install`: `write`: /usr/lib lies inside /usr, a system tree no sandboxed \
             command may write",
        ),
        (
            "bad-prompt-placeholder.toml",
            "prompt `greet`: `messages`: the placeholder {language} names no declared argument",
        ),
        (
            "bad-resource-root.toml",
            "resource `config`: `root`: /etc may not be a resource root",
        ),
        (
            "bad-resource-uri.toml",
            "resource `docs`: `uri`: must be `scheme://`",
        ),
        (
            "bad-write-spool.toml",
            "tool `schedule`: `write`: /var/spool is a system tree no sandboxed command may write",
        ),
        (
            "bad-exec-not-executable.toml",
            "tool `count`: `exec`: must name an executable file",
        ),
    ];
    for (file, expected) in cases {
        let path = format!("tests/data/{file}");
        let output = crate::support::stdio::run(&airlock(), &["check", "--manifest", &path], &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The manifest as a positional argument gives the same.
        let positional = crate::support::stdio::run(&airlock(), &["check", &path], &[]);
        assert_eq!(positional.stderr, output.stderr, "{file}");
        assert_eq!(output.status.code(), Some(1), "{file}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{file}: expected `{expected}` in:\n{stderr}"
        );
        assert!(
            stderr.starts_with(&path),
            "{file}: the message names the file: {stderr}"
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
            "{stderr}"
        );
    }
}

#[test]
fn sigterm_cancels_running_commands_and_kills_their_groups() {
    let sandbox = ServeTree::new("sigterm");
    let mut server = sandbox.serve(&sandbox.manifest(&attack_manifest()), &[]);
    server.send(&call(1, "spawn_and_hang_long", json!({})));
    let (group, _grandchild) = recorded_group(&sandbox);
    crate::support::processes::signal(server.pid(), "TERM");
    assert_eq!(server.wait(Duration::from_secs(10)).code(), Some(0));
    assert_group_gone(&group);
}

#[test]
fn the_default_manifest_refuses_to_serve_the_root_or_the_home_directory() {
    // `cd / && airlock serve` would have handed an agent /etc and every /proc entry.
    let home = ServeTree::new("home");
    for (dir, why) in [
        (std::path::PathBuf::from("/"), "root of the file system"),
        (home.dir.clone(), "home directory"),
    ] {
        let output = crate::support::stdio::spawn_command(&airlock())
            .arg("serve")
            .current_dir(&dir)
            .env("HOME", &home.dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", dir.display());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(why), "{stderr}");
        assert!(
            stderr.contains("--manifest"),
            "the refusal says what to do: {stderr}"
        );
        assert!(output.stdout.is_empty());
    }
    // A directory below home is served.
    let below = home.dir.join("project");
    std::fs::create_dir_all(&below).unwrap();
    let mut server = Server::start_in(&airlock(), &["serve"], &below);
    server.initialize("2025-11-25");
}
