//! What an operator sets airlock up with: `[defaults]` and `${VAR}` in paths,
//! `airlock init` and `airlock schema`, `airlock call`, `--log-format json` and `--log-file`, SIGUSR1 without
//! an audit log, shell completions and the man page.
//!
//! The schema check needs the Python `jsonschema` package that `tests/clients/setup.sh`
//! installs; without it the test says so and passes, unless `AIRLOCK_REQUIRE_CLIENTS=1` (as
//! CI sets), where it fails.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::fixtures::ServeTree;
use crate::support::stdio::{Server, airlock, call, run, spawn_command, text};

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

#[test]
fn defaults_and_a_variable_in_a_path_reach_the_served_tools() {
    let manifest = Path::new(root()).join("tests/data/defaults.toml");
    let manifest = manifest.to_str().unwrap();
    let mut server = Server::start_with(
        &airlock(),
        &["serve", "--manifest", manifest],
        &[("AIRLOCK_TEST_ROOT", root())],
    );
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "greeting", json!({})));
    assert_eq!(reply["result"]["isError"], Value::Null, "{reply}");
    assert_eq!(text(&reply), "from-defaults\n");
    let reply = server.request(&call(2, "own_greeting", json!({})));
    assert_eq!(text(&reply), "from-the-tool\n");
    let reply = server.request(&call(3, "where", json!({})));
    let data = Path::new(root()).join("tests/data").canonicalize().unwrap();
    assert_eq!(text(&reply), format!("{}\n", data.display()));

    // Without the variable, `check` names it, at the line of the path that uses it.
    let output = crate::support::stdio::run(&airlock(), &["check", manifest], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.starts_with(&format!(
            "{manifest}:6:11: `defaults.workdir`: `${{AIRLOCK_TEST_ROOT}}` names the \
             variable AIRLOCK_TEST_ROOT, which is not set in airlock's environment\n"
        )),
        "{stderr}"
    );
}

/// Logrotate's `postrotate` sends SIGUSR1 to airlock whatever its flags; without
/// `--audit-log` it used to end the process (no handler was installed).
#[test]
fn sigusr1_without_an_audit_log_leaves_the_server_serving() {
    let mut server = Server::start(&airlock(), &["serve"]);
    server.initialize("2025-11-25");
    crate::support::processes::signal(server.pid(), "USR1");
    // Twice: a handler that only survives the first signal is no handler.
    crate::support::processes::signal(server.pid(), "USR1");
    let reply = server.request(&crate::support::stdio::request(7, "ping", json!({})));
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
}

#[test]
fn init_writes_a_starter_manifest_that_checks_and_serves_and_never_overwrites() {
    let sandbox = ServeTree::new("init");
    let project = sandbox.dir.join("project");
    let project_text = project.to_str().unwrap();
    let output = run(&airlock(), &["init", project_text], &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let manifest = project.join("airlock.toml");
    let schema = project.join("airlock.schema.json");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "wrote {m} (a starter manifest) and {s} (its JSON Schema, for editors)\nnext: edit \
             {m}, then\n  airlock check {m}\n  airlock serve {m}\n",
            m = manifest.display(),
            s = schema.display()
        )
    );
    let written = std::fs::read_to_string(&manifest).unwrap();
    assert!(
        written.starts_with("#:schema ./airlock.schema.json\n"),
        "{written}"
    );
    let written_schema = std::fs::read(&schema).unwrap();
    assert_eq!(written_schema, run(&airlock(), &["schema"], &[]).stdout);

    let check = run(&airlock(), &["check", manifest.to_str().unwrap()], &[]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    assert!(stdout.ends_with("\nOK\n"), "{stdout}");
    // One argument of each type, and the sandbox keys, in what check shows.
    for shown in [
        "path: path (directory) under",
        "max_bytes: integer 1..=1048576, default 65536",
        "text: string of 1..=1000 characters",
        "ignore_case: boolean (adds `--ignore-case` when true)",
        ": array of 1..=20 items",
        "sandbox: on",
        "budgets:   processes 64, memory 1024 MiB per call (512 MiB per process)",
        "disk 256 MiB and 10000 files per call",
    ] {
        assert!(stdout.contains(shown), "{shown} in:\n{stdout}");
    }

    // Served from the project directory, its tools see the project.
    std::fs::write(project.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let mut server = Server::start(&airlock(), &["serve", manifest.to_str().unwrap()]);
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "search_any", json!({ "words": ["beta", "zeta"] })));
    assert_eq!(text(&reply), "./notes.txt:2:beta\n", "{reply}");

    // A second run overwrites nothing and writes nothing.
    std::fs::write(&manifest, "edited").unwrap();
    std::fs::remove_file(&schema).unwrap();
    let again = run(&airlock(), &["init", project_text], &[]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(again.stderr).unwrap(),
        format!(
            "airlock init: {} already exists; not overwritten (move it away, or run airlock \
             init in another directory)\n",
            manifest.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), "edited");
    assert!(!schema.exists());

    // Nor into the root, a system tree or the home directory.
    for dir in ["/", "/etc"] {
        let refused = run(&airlock(), &["init", dir], &[]);
        assert_eq!(refused.status.code(), Some(1));
        let stderr = String::from_utf8(refused.stderr).unwrap();
        assert!(
            stderr.starts_with(&format!(
                "airlock init: will not write a manifest serving {dir}"
            )),
            "{stderr}"
        );
    }
}

/// The Python interpreter with `jsonschema` that setup.sh installs, or `None` after saying
/// why it is missing (a failure under `AIRLOCK_REQUIRE_CLIENTS=1`).
fn schema_checker() -> Option<PathBuf> {
    let python = Path::new(root()).join("tests/clients/.env/python/bin/python");
    if !python.exists() {
        let reason = format!(
            "{} is missing: run `bash tests/clients/setup.sh`",
            python.display()
        );
        let required = std::env::var_os("AIRLOCK_REQUIRE_CLIENTS").is_some_and(|v| v == "1");
        assert!(
            !required,
            "{reason} (AIRLOCK_REQUIRE_CLIENTS=1 requires it)"
        );
        eprintln!("skipped: {reason}");
        return None;
    }
    Some(python)
}

#[test]
fn every_example_manifest_validates_against_the_schema_and_bad_ones_do_not() {
    let Some(python) = schema_checker() else {
        return;
    };
    let sandbox = ServeTree::new("schema");
    let schema = sandbox.dir.join("airlock.schema.json");
    std::fs::write(&schema, run(&airlock(), &["schema"], &[]).stdout).unwrap();
    let init = run(
        &airlock(),
        &["init", sandbox.dir.join("init").to_str().unwrap()],
        &[],
    );
    assert!(init.status.success());

    let mut good: Vec<PathBuf> = Vec::new();
    for dir in ["examples", "tests/data"] {
        for entry in std::fs::read_dir(Path::new(root()).join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if name.ends_with(".toml") && !name.starts_with("bad-") {
                good.push(path);
            }
        }
    }
    good.push(Path::new(root()).join("crates/airlock-manifest/src/manifest/default.toml"));
    good.push(sandbox.dir.join("init/airlock.toml"));
    assert!(good.len() >= 7, "{good:?}");
    // Shape errors the schema must catch (what `check` refuses at parse time).
    let bad: Vec<PathBuf> = [
        "bad-unknown-key.toml",
        "bad-quoted-number.toml",
        "bad-command-string.toml",
        "bad-stderr-mode.toml",
    ]
    .iter()
    .map(|name| Path::new(root()).join("tests/data").join(name))
    .collect();

    let checker = Path::new(root()).join("tests/data/check_manifests.py");
    let output = spawn_command(&python)
        .arg(&checker)
        .arg(&schema)
        .args(&good)
        .args(&bad)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let found: Value = serde_json::from_slice(&output.stdout).unwrap();
    for path in &good {
        let errors = &found[path.to_str().unwrap()];
        assert_eq!(errors, &json!([]), "{}", path.display());
    }
    for path in &bad {
        let errors = found[path.to_str().unwrap()].as_array().unwrap();
        assert!(!errors.is_empty(), "{} validated", path.display());
    }
}

/// The log lines of a `serve` run with `--log-format json`, each parsed.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not one JSON object per line ({error}): {line}"))
        })
        .collect()
}

#[test]
fn json_logs_are_one_object_per_line_to_stderr_or_the_log_file() {
    let sandbox = ServeTree::new("json-logs");
    let mut server = Server::start(&airlock(), &["serve", "--log-format", "json"]);
    server.initialize("2025-11-25");
    server.request(&call(1, "file_info", json!({ "path": "Cargo.toml" })));
    let lines = json_lines(&server.stderr());
    // Log events (the audit record is JSON too, with its own shape).
    let events: Vec<&Value> = lines
        .iter()
        .filter(|line| line.get("level").is_some())
        .collect();
    assert!(events.len() >= 3, "{lines:?}");
    for event in &events {
        assert!(event["timestamp"].is_string(), "{event}");
        assert!(event["fields"].is_object(), "{event}");
    }
    assert!(
        events.iter().any(
            |event| event["fields"]["message"] == "manifest loaded" && event["level"] == "INFO"
        ),
        "{events:?}"
    );
    assert!(lines.iter().any(|line| line["event"] == "tool_call"));

    let log = sandbox.dir.join("airlock.log");
    let mut server = Server::start(
        &airlock(),
        &[
            "serve",
            "--log-format",
            "json",
            "--log-file",
            log.to_str().unwrap(),
        ],
    );
    server.initialize("2025-11-25");
    let stderr = server.stderr();
    // On stderr, only the audit records are left.
    assert!(
        json_lines(&stderr)
            .iter()
            .all(|line| line["event"] == "tool_call"),
        "{stderr}"
    );
    let written = json_lines(&std::fs::read_to_string(&log).unwrap());
    assert!(
        written
            .iter()
            .any(|event| event["fields"]["message"] == "manifest loaded"),
        "{written:?}"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&log).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let unwritable = run(
        &airlock(),
        &["serve", "--log-file", "/proc/airlock-no-such-file"],
        &[],
    );
    assert_eq!(unwritable.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(unwritable.stderr).unwrap(),
        "airlock serve: --log-file: cannot open /proc/airlock-no-such-file for appending: \
         No such file or directory (os error 2)\n"
    );
}

#[test]
fn completions_and_man_pages_are_generated_from_the_command_line() {
    for (shell, marker) in [
        ("bash", "_airlock()"),
        ("zsh", "#compdef airlock"),
        ("fish", "complete -c airlock"),
    ] {
        let output = run(&airlock(), &["completions", shell], &[]);
        assert_eq!(output.status.code(), Some(0));
        let script = String::from_utf8(output.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: {script}");
        for flag in ["--manifest", "--log-format", "--audit-log", "--fail-on"] {
            assert!(
                script.contains(flag.trim_start_matches('-')),
                "{shell}: {flag}"
            );
        }
    }
    let page = run(&airlock(), &["man"], &[]);
    assert_eq!(page.status.code(), Some(0));
    let page = String::from_utf8(page.stdout).unwrap();
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH airlock 1"), "{page}");
    for sub in [
        "serve",
        "check",
        "call",
        "client\\-config",
        "audit",
        "init",
        "schema",
        "completions",
    ] {
        assert!(page.contains(sub), "{sub}");
    }
    let serve = run(&airlock(), &["man", "serve"], &[]);
    let serve = String::from_utf8(serve.stdout).unwrap();
    assert!(serve.contains(".TH airlock-serve 1"), "{serve}");
    assert!(serve.contains("log\\-format"), "{serve}");
    // ENVIRONMENT, FILES and EXIT STATUS, before VERSION; each page its own statuses.
    for (sub, status) in [
        ("serve", "the peer was cut off"),
        ("call", "the tool returned an error"),
        ("audit", "could not be audited"),
    ] {
        let page = run(&airlock(), &["man", sub], &[]);
        let page = String::from_utf8(page.stdout).unwrap();
        let sections: Vec<usize> = [".SH ENVIRONMENT", ".SH FILES", ".SH EXIT STATUS"]
            .iter()
            .map(|section| {
                page.find(section)
                    .unwrap_or_else(|| panic!("{sub}: {section}"))
            })
            .collect();
        assert!(sections.is_sorted(), "{sub}: {page}");
        assert!(
            page.contains("AIRLOCK_LOG") && page.contains(status),
            "{sub}: {page}"
        );
        if let Some(version) = page.find(".SH VERSION") {
            assert!(sections[2] < version, "{sub}: {page}");
        }
    }
    let unknown = run(&airlock(), &["man", "nope"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
}

/// `airlock call` on the default manifest, from a directory of its own: the result's text on
/// stdout and status 0; a tool error's text and status 1; a refused call (an unknown tool) and
/// status 1 with the refusal on stderr; arguments that cannot be read, status 2; `--json`
/// arguments and `--raw` output.
#[test]
fn airlock_call_calls_a_default_tool_as_an_agent_would() {
    let dir = std::env::temp_dir().join(format!("airlock-call-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hello.txt"), "hello airlock\n").unwrap();
    let call = |args: &[&str]| {
        let output = spawn_command(&airlock())
            .arg("call")
            .args(args)
            .current_dir(&dir)
            .env("AIRLOCK_LOG", "warn")
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (status, out, err) = call(&["read_file", "path=hello.txt"]);
    assert_eq!(
        (status, out.as_str()),
        (Some(0), "hello airlock\n"),
        "{err}"
    );
    let (status, out, err) = call(&["read_file", "path=hello.txt", "max_bytes:=5"]);
    assert_eq!((status, out.as_str()), (Some(0), "hello\n"), "{err}");
    let (status, out, _) = call(&["read_file", "path=missing.txt"]);
    assert_eq!(status, Some(1), "{out}");
    assert!(out.starts_with("Invalid arguments: `path`"), "{out}");
    let (status, out, err) = call(&["no_such_tool"]);
    assert_eq!((status, out.as_str()), (Some(1), ""));
    assert!(
        err.contains("airlock call: the server refused the call (-32602)"),
        "{err}"
    );
    let (status, out, err) = call(&["read_file", "path"]);
    assert_eq!((status, out.as_str()), (Some(2), ""));
    assert!(err.contains("key=value"), "{err}");
    let (status, out, err) = call(&["list_directory", "--json", "{\"path\": \".\"}", "--raw"]);
    assert_eq!(status, Some(0), "{err}");
    let result: Value = serde_json::from_str(&out).unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("hello.txt"), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `airlock client-config`: each snippet names this binary and the manifest by absolute path
/// and the manifest's variables by name, never by value; the Claude Desktop snippet, run as
/// the client would run it (its command, args and env, the placeholder filled in), serves.
#[test]
fn client_config_snippets_paste_and_serve() {
    let dir = std::env::temp_dir().join(format!("airlock-client-config-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("tools.toml");
    std::fs::write(
        &manifest,
        "[[tool]]\nname = \"hello\"\ndescription = \"Says hello\"\ncommand = [\"echo\", \"hello\"]\n\
         secret_env = [\"CLIENT_CONFIG_TOKEN\"]\n",
    )
    .unwrap();
    let manifest_text = manifest.to_str().unwrap();
    let secret = "value-that-must-not-print";
    let snippet = |client: &str| {
        let output = run(
            &airlock(),
            &["client-config", client, "--manifest", manifest_text],
            &[("CLIENT_CONFIG_TOKEN", secret)],
        );
        assert!(output.status.success(), "{client}: {output:?}");
        let out = String::from_utf8(output.stdout).unwrap();
        let err = String::from_utf8(output.stderr).unwrap();
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "{client}: {out}{err}"
        );
        out
    };
    let program = std::fs::canonicalize(airlock()).unwrap();
    let program = program.to_str().unwrap();
    let desktop: Value = serde_json::from_str(&snippet("claude-desktop")).unwrap();
    let server = &desktop["mcpServers"]["airlock"];
    assert_eq!(server["command"], json!(program));
    assert_eq!(
        server["args"],
        json!(["serve", "--manifest", manifest_text])
    );
    assert_eq!(
        server["env"]["CLIENT_CONFIG_TOKEN"],
        json!("<the value of CLIENT_CONFIG_TOKEN>")
    );
    let vscode: Value = serde_json::from_str(&snippet("vscode")).unwrap();
    assert_eq!(vscode["servers"]["airlock"]["type"], json!("stdio"));
    assert_eq!(
        vscode["servers"]["airlock"]["env"]["CLIENT_CONFIG_TOKEN"],
        json!("${input:CLIENT_CONFIG_TOKEN}")
    );
    assert_eq!(vscode["inputs"][0]["password"], json!(true));
    let code = snippet("claude-code");
    assert!(
        code.starts_with("claude mcp add --transport stdio")
            && code.contains("--env CLIENT_CONFIG_TOKEN=\"$CLIENT_CONFIG_TOKEN\"")
            && code.contains(&format!(
                "airlock -- {program} serve --manifest {manifest_text}"
            )),
        "{code}"
    );
    let http: Value = serde_json::from_str(&snippet("http")).unwrap();
    assert_eq!(
        http["mcpServers"]["airlock"]["headers"]["Authorization"],
        json!("Bearer ${AIRLOCK_TOKEN}")
    );
    // The desktop snippet as a client runs it: its command, args and env, the placeholder
    // filled in.
    let args: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    let mut started = Server::start_with(
        std::path::Path::new(server["command"].as_str().unwrap()),
        &args,
        &[("CLIENT_CONFIG_TOKEN", secret), ("AIRLOCK_LOG", "warn")],
    );
    started.initialize("2025-11-25");
    let reply = started.request(&call(1, "hello", json!({})));
    assert_eq!(text(&reply), "hello\n", "{reply}");
    let unknown = run(&airlock(), &["client-config", "emacs"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 37: two start-up errors carried a run of about 30 spaces from a string continued
/// without `\`; every start-up error is one line with single spaces.
#[test]
fn start_up_errors_about_the_audit_hash_key_read_as_one_line() {
    for (env, name) in [
        (vec![], "not-a-name"),
        (
            vec![("AIRLOCK_IT_SHORT_KEY", "short")],
            "AIRLOCK_IT_SHORT_KEY",
        ),
    ] {
        let output = run(&airlock(), &["serve", "--audit-hash-key-env", name], &env);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stderr
            .lines()
            .find(|line| line.contains("--audit-hash-key-env"))
            .unwrap_or_else(|| panic!("no error line: {stderr}"));
        assert!(!line.contains("  "), "{line}");
    }
}
