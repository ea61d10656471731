//! `airlock check` that guides an operator to the safe form (issue 41, item 3): shell operators
//! refused with what to write instead, tar's compressor named in the `exec` it needs, an `enum`
//! taken for the operator's text, every shape error at once with "did you mean", fixed paths
//! outside the grants, and start-up messages that say one thing once.

use crate::support::fixtures::Scratch;
use crate::support::stdio::{Server, airlock, call, run};
use serde_json::json;

/// A scratch directory for one test: `src/a.txt` for the tools to read and an `out/` to write.
fn tree(name: &str) -> Scratch {
    let scratch = Scratch::new(&format!("guidance-{name}"));
    scratch.write("src/a.txt", "inside\n");
    scratch.dir("out");
    scratch
}

/// `airlock check` on `text`: its exit status and stderr.
fn check(dir: &Scratch, text: &str) -> (Option<i32>, String) {
    let path = dir.manifest(text);
    let output = run(&airlock(), &["check", &path], &[]);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Regression for issue 41: the refusal of an unset token variable said
/// "--auth-token-env: --auth-token-env: …".
#[test]
fn an_unset_token_variable_is_named_with_its_flag_once() {
    let output = run(
        &airlock(),
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth-token-env",
            "AIRLOCK_IT_NO_SUCH_TOKEN_VARIABLE",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--auth-token-env: the environment variable named for token 1 is not set"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("--auth-token-env: --auth-token-env"),
        "{stderr}"
    );
}

/// The Landlock ABI as a line of text says it: `Landlock ABI 7`, `Landlock ABI 6 or later`.
fn landlock_abi(text: &str) -> Option<String> {
    let at = text.find("Landlock ABI ")?;
    let rest = &text[at..];
    let end = rest.find([';', '(']).unwrap_or(rest.len());
    Some(rest[..end].trim().to_owned())
}

/// Regression for issue 41: `serve` logged "Landlock ABI 6 or later" where `check` said
/// "ABI 7" on the same kernel.
#[test]
fn serve_and_check_name_the_same_landlock_abi() {
    let dir = tree("abi");
    let path =
        dir.manifest("[[tool]]\nname = \"list\"\ndescription = \"lists\"\ncommand = [\"ls\"]\n");
    let checked = run(&airlock(), &["check", &path], &[]);
    let checked = String::from_utf8_lossy(&checked.stdout).into_owned();
    let served = run(&airlock(), &["serve", "--manifest", &path], &[]);
    let served = String::from_utf8_lossy(&served.stderr).into_owned();
    let from_check = landlock_abi(&checked);
    assert!(from_check.is_some(), "{checked}");
    assert_eq!(
        landlock_abi(&served),
        from_check,
        "{served}\n---\n{checked}"
    );
}

/// GNU tar runs its compressor through `/bin/sh -c`: `tar --gzip` passed check and failed at
/// call time ("gzip: Cannot exec: Permission denied"). `check` now names the `exec` to add, and
/// with it the call is served.
#[test]
fn tar_with_gzip_is_refused_naming_the_exec_it_needs_and_served_with_it() {
    let dir = tree("tar");
    let tool = "[[tool]]\nname = \"pack\"\ndescription = \"packs src\"\n\
                command = [\"tar\", \"--gzip\", \"-cf\", \"out/a.tgz\", \"src\"]\n\
                write = [\"out\"]\n";
    let (status, stderr) = check(&dir, tool);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "tool `pack`: `exec`: `--gzip` makes tar run `gzip` through /bin/sh -c, which the \
             sandbox lets it execute only when the tool names both: add exec = [\"sh\", \
             \"gzip\"]"
        ),
        "{stderr}"
    );
    // A bundle (`-czf`) and another compressor say the same of theirs; an `exec` that already
    // names one program keeps it.
    let (status, stderr) = check(
        &dir,
        &tool
            .replace("\"--gzip\", \"-cf\"", "\"-cJf\"")
            .replace("write = ", "exec = [\"sh\"]\nwrite = "),
    );
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains("`-J` makes tar run `xz` through /bin/sh -c")
            && stderr.contains("add exec = [\"sh\", \"xz\"]"),
        "{stderr}"
    );

    let fixed = format!("{tool}exec = [\"sh\", \"gzip\"]\n");
    let (status, stderr) = check(&dir, &fixed);
    assert_eq!(status, Some(0), "{stderr}");
    let mut server = Server::start(&airlock(), &["serve", "--manifest", &dir.manifest(&fixed)]);
    server.initialize("2025-11-25");
    let reply = server.request(&call(1, "pack", json!({})));
    assert_eq!(reply["result"]["isError"], json!(null), "{reply}");
    let archive = std::fs::read(dir.path().join("out/a.tgz")).unwrap();
    assert_eq!(archive.get(..2), Some(&[0x1f, 0x8b][..]), "a gzip stream");
}

/// Issue 41: `command = ["git", "log", "--oneline", "|", "head", "-5"]` passed check (git got
/// `|` as an argument).
#[test]
fn a_shell_operator_in_a_command_is_refused_with_what_to_write() {
    let dir = tree("pipe");
    let (status, stderr) = check(
        &dir,
        "[[tool]]\nname = \"log\"\ndescription = \"recent commits\"\n\
         command = [\"git\", \"log\", \"--oneline\", \"|\", \"head\", \"-5\"]\n",
    );
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "tool `log`: `command`: `|` is shell syntax, and airlock runs no shell: the program \
             would get it as an argument. Write a script and name it"
        ),
        "{stderr}"
    );
}

/// Issue 41: jq given an `enum` of filters was refused as interpreter code, with only
/// `accept_risk` offered; a free string there is still refused, now naming the safe form first.
#[test]
fn jq_with_an_enum_of_filters_passes_and_a_free_filter_names_the_safe_form() {
    let dir = tree("jq");
    std::fs::write(
        dir.path().join("src/data.json"),
        r#"{"name":"airlock","items":[1,2]}"#,
    )
    .unwrap();
    let tool = "[[tool]]\nname = \"query\"\ndescription = \"reads a JSON file\"\n\
                command = [\"jq\", \"{filter}\", \"--\", \"{file}\"]\n\
                args.file = { type = \"path\", within = \"src\", kind = \"file\" }\n";
    let enum_of_filters = format!(
        "{tool}args.filter = {{ type = \"string\", enum = [\".name\", \".items | length\"], \
         required = true }}\n"
    );
    let (status, stderr) = check(&dir, &enum_of_filters);
    assert_eq!(status, Some(0), "{stderr}");
    let mut server = Server::start(
        &airlock(),
        &["serve", "--manifest", &dir.manifest(&enum_of_filters)],
    );
    server.initialize("2025-11-25");
    let reply = server.request(&call(
        1,
        "query",
        json!({"filter": ".items | length", "file": "data.json"}),
    ));
    assert_eq!(reply["result"]["content"][0]["text"], "2\n", "{reply}");
    // The agent cannot bring a filter of its own.
    let reply = server.request(&call(
        2,
        "query",
        json!({"filter": "env", "file": "data.json"}),
    ));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`filter` must be one of"), "{reply}");

    let free = format!("{tool}args.filter = {{ type = \"string\" }}\n");
    let (status, stderr) = check(&dir, &free);
    assert_eq!(status, Some(1), "{stderr}");
    let safe = stderr
        .find("the safe form: `-f FILE` with a fixed file, or an `enum` of the programs")
        .unwrap_or_else(|| panic!("{stderr}"));
    let accept = stderr
        .find("only if that is really intended, add accept_risk = [\"interpreter_code\"]")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(safe < accept, "{stderr}");
}

/// Issue 41: shape errors came one at a time and out of line order, with no "did you mean";
/// the operator's guide says `check` lists every error at once.
#[test]
fn check_lists_every_shape_error_at_once_in_line_order_with_did_you_mean() {
    let dir = tree("shape");
    let (status, stderr) = check(
        &dir,
        "[server]\nnmae = \"x\"\n\n\
         [[tool]]\nname = \"list\"\ndescription = \"lists\"\ncomand = [\"ls\"]\n\
         args.n = { type = \"integer\", minimun = 1 }\n\n\
         [[tool]]\nname = \"count\"\ndescripton = \"counts\"\ncommand = [\"wc\"]\n",
    );
    assert_eq!(status, Some(1), "{stderr}");
    let path = dir.path().join("tools.toml");
    let path = path.to_str().unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    let expected = [
        (
            format!("{path}:2:1: unknown field `nmae`"),
            "did you mean `name`?",
        ),
        (
            format!("{path}:7:1: unknown field `comand`"),
            "did you mean `command`?",
        ),
        (
            format!("{path}:8:30: unknown field `minimun`"),
            "did you mean `minimum`?",
        ),
        (
            format!("{path}:12:1: unknown field `descripton`"),
            "did you mean `description`?",
        ),
    ];
    assert_eq!(lines.len(), expected.len() + 1, "{stderr}");
    for (line, (start, end)) in lines.iter().zip(&expected) {
        assert!(
            line.starts_with(start.as_str()) && line.ends_with(end),
            "{line}\n---\n{stderr}"
        );
    }
    assert_eq!(lines.last(), Some(&"(4 errors)"), "{stderr}");
}

/// Issue 41: `--output=/etc/x` as a fixed value passed check and failed at call time; a fixed
/// output outside the writable directories is now refused at check, and a fixed path outside
/// every grant is a warning, each naming the path it resolves to; `write` entries that name no
/// directory show theirs.
#[test]
fn fixed_paths_outside_the_grants_are_refused_with_the_resolved_path() {
    let dir = tree("paths");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let root = root.to_str().unwrap();
    let tool = |command: &str, rest: &str| {
        format!(
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = {command}\n\
             write = [\"out\"]\n{rest}"
        )
    };
    let (status, stderr) = check(
        &dir,
        &tool(r#"["sort", "--output=/etc/airlock-x", "src/a.txt"]"#, ""),
    );
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "tool `t`: `command`: `--output=/etc/airlock-x` names /etc/airlock-x, which the \
             tool's sandbox does not let it write"
        ),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("{root}/out")), "{stderr}");
    // A relative one resolves against the workdir, and is shown resolved.
    let (status, stderr) = check(
        &dir,
        &tool(r#"["sort", "--output=src/sorted.txt", "src/a.txt"]"#, ""),
    );
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("names {root}/src/sorted.txt")),
        "{stderr}"
    );
    // Written where the tool may write: served.
    let (status, stderr) = check(
        &dir,
        &tool(r#"["sort", "--output=out/sorted.txt", "src/a.txt"]"#, ""),
    );
    assert_eq!(status, Some(0), "{stderr}");
    // A fixed path the sandbox does not show at all: a warning (the command may do without
    // it), in check's account and in serve's log.
    let path = dir.manifest(&tool(r#"["cat", "/etc/shadow"]"#, ""));
    let output = run(&airlock(), &["check", &path], &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let warning = "WARNING: `/etc/shadow` names /etc/shadow, which the tool's sandbox does not \
                   show it";
    assert!(stdout.contains(warning), "{stdout}");
    let served = run(&airlock(), &["serve", "--manifest", &path], &[]);
    let log = String::from_utf8_lossy(&served.stderr);
    assert!(
        log.contains("WARN") && log.contains("`/etc/shadow` names /etc/shadow"),
        "{log}"
    );
    // Shown once granted.
    let (status, stderr) = check(
        &dir,
        &tool(
            r#"["cat", "/etc/hostname"]"#,
            "read = [\"/etc/hostname\"]\n",
        ),
    );
    assert_eq!(status, Some(0), "{stderr}");
    // `write` errors show the path they resolved to.
    let (status, stderr) = check(
        &dir,
        &tool(r#"["ls"]"#, "").replace("[\"out\"]", "[\"missing\"]"),
    );
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`write`: must name an existing directory, and {root}/missing is not one"
        )),
        "{stderr}"
    );
}
