//! Arguments a program reads as more than data, through the
//! real binary: what `airlock check` refuses and how it says to accept the risk, what
//! `airlock serve` refuses at call time (no command run, no file written, no file read), and
//! what it now accepts (absolute paths inside the root, a literal `{}` in a template).

use std::path::PathBuf;

use serde_json::json;

use crate::support::fixtures::Scratch;
use crate::support::stdio::{Server, airlock, call, is_error, run, text};

/// A scratch tree: `work/` (the tools' workdir, with `data/lib.rs`, a Makefile and an awk
/// program) and a sibling `outside/secret.txt` no tool may read.
fn tree(name: &str) -> Scratch {
    let scratch = Scratch::new(&format!("arguments-{name}"));
    scratch.write("work/data/lib.rs", "// rust\n");
    scratch.write("work/Makefile", "$(info made $(MAKECMDGOALS))\nall:\n");
    scratch.write("work/count.awk", "{ n++ } END { print n + 0 }\n");
    scratch.write("outside/secret.txt", "TOPSECRET-outside\n");
    scratch
}

/// `airlock check` on `text`: its exit code and what it printed (stdout, then stderr).
fn check(scratch: &Scratch, text: &str) -> (Option<i32>, String) {
    let path = scratch.manifest(text);
    let output = run(&airlock(), &["check", "--manifest", &path], &[]);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), printed)
}

/// Serves `text` (which `airlock check` must accept), handshake done.
fn serve(scratch: &Scratch, text: &str) -> Server {
    let (code, printed) = check(scratch, text);
    assert_eq!(
        code,
        Some(0),
        "airlock check refused the manifest:\n{printed}"
    );
    scratch.serve(text, &[])
}

/// Each new refusal of `airlock check`: the file, the tool, the rule, and the risk to accept.
#[test]
fn check_refuses_each_new_bad_manifest_with_its_rule_and_how_to_accept_it() {
    let cases: &[(&str, &[&str], &str)] = &[
        // Item 1: operands read as more than data.
        (
            "bad-find-expressions.toml",
            &[
                "tool `find_rs`: `command`: `find` reads its arguments as an expression",
                "even after `--`",
                "refuses values that start with '-' or are `(`, `)`, `!` or `,`",
            ],
            "expression_operands",
        ),
        (
            "bad-make-assignments.toml",
            &[
                "tool `build`: `command`: `make` reads an operand holding '=' as a variable assignment",
                "refuses values holding '='",
            ],
            "assignment_operands",
        ),
        (
            "bad-awk-assignments.toml",
            &[
                "tool `count`: `command`: `awk` reads an operand `name=value` as an assignment",
                "refuses values of that shape",
            ],
            "assignment_operands",
        ),
        (
            "bad-response-files.toml",
            &[
                "tool `demangle`: `command`: `c++filt` replaces an argument `@file` with the contents of the file",
                "refuses values starting with '@'",
            ],
            "response_files",
        ),
        // Item 2: interpreter shapes the old classification missed.
        (
            "bad-shell-stdin.toml",
            &[
                "tool `run`: `command`: agent input can reach where this shell or interpreter reads code",
                "without a script file, `bash` reads its stdin, which an argument fills, as code",
            ],
            "interpreter_code",
        ),
        (
            "bad-python-stdin.toml",
            &["`-` makes `python3` read its program from stdin"],
            "interpreter_code",
        ),
        (
            "bad-bundled-flags.toml",
            &["`-le` holds `-e`, which takes code"],
            "interpreter_code",
        ),
        (
            "bad-sqlite3.toml",
            &["`sqlite3` reads code from every argument and from its stdin"],
            "interpreter_code",
        ),
        (
            "bad-value-runs.toml",
            &["tool `pack`: `command`: `-I` of `tar` runs its value as a command"],
            "launcher",
        ),
        (
            "bad-git-clone.toml",
            &["`-u` of `git clone` runs its value as a command"],
            "launcher",
        ),
        (
            "bad-unknown-program.toml",
            &[
                "tool `compute`: `command`: airlock does not know how `expr` reads its arguments",
                "checked only for a leading '-'",
            ],
            "unknown_program",
        ),
        // Item 3: a leading dash let through where the program reads options.
        (
            "bad-leading-dash.toml",
            &[
                "tool `log`: `command`: `range` may start with '-' where `git log` reads options",
                "`--output=FILE` would be an option of its own",
            ],
            "leading_dash",
        ),
        (
            "bad-make-leading-dash.toml",
            &["`target` may start with '-' where `make` reads options"],
            "leading_dash",
        ),
    ];
    for (file, rules, risk) in cases {
        let path = format!("tests/data/{file}");
        let output = run(&airlock(), &["check", "--manifest", &path], &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{file} was accepted: {stderr}"
        );
        assert!(
            stderr.starts_with(&path),
            "{file}: the message names the file: {stderr}"
        );
        for rule in *rules {
            assert!(
                stderr.contains(rule),
                "{file}: expected `{rule}` in:\n{stderr}"
            );
        }
        let accept = format!("if that is really intended, add accept_risk = [\"{risk}\"]\n");
        assert!(
            stderr.ends_with(&accept),
            "{file}: expected `{accept}` in:\n{stderr}"
        );
    }
}

fn operands_manifest() -> String {
    r#"
[[tool]]
name = "find_rs"
description = "Finds Rust files in the given directories"
command = ["find", "--", "{dirs}", "-name", "*.rs"]
workdir = "work"
accept_risk = ["expression_operands"]
args.dirs = { type = "array", max_items = 10 }

[[tool]]
name = "find_in"
description = "Lists the files of a directory"
command = ["find", "--", "{dir}", "-type", "f"]
workdir = "work"
accept_risk = ["expression_operands"]
args.dir = { type = "string" }

[[tool]]
name = "make_target"
description = "Builds a target"
command = ["make", "--", "{target}"]
workdir = "work"
accept_risk = ["assignment_operands"]
args.target = { type = "string" }

[[tool]]
name = "demangle"
description = "Demangles a C++ symbol"
command = ["c++filt", "--", "{symbol}"]
workdir = "work"
accept_risk = ["response_files"]
args.symbol = { type = "string" }

[[tool]]
name = "count_lines"
description = "Counts lines with awk"
command = ["awk", "-f", "count.awk", "--", "{file}"]
workdir = "work"
accept_risk = ["assignment_operands"]
args.file = { type = "string" }
"#
    .to_owned()
}

/// Item 1 at call time: with the risk accepted, a value find would read as an expression,
/// make or awk as an assignment, c++filt as a response file is refused before anything runs,
/// as a leading dash is; ordinary values still work.
#[test]
fn values_a_program_would_read_as_syntax_are_refused_at_call_time() {
    let scratch = tree("operands");
    let mut server = serve(&scratch, &operands_manifest());
    let expression = "Invalid arguments: `dirs` must not start with '-' or be `(`, `)`, `!` or \
                      `,`: the program reads such a value as part of its expression, even after \
                      `--`.";
    let attacks = [
        (
            "find_rs",
            json!({"dirs": ["data", "-exec", "/usr/bin/id", ";"]}),
            expression.to_owned(),
        ),
        (
            "find_rs",
            json!({"dirs": ["data", "-fprint", "../find_x"]}),
            expression.to_owned(),
        ),
        (
            "find_rs",
            json!({"dirs": ["data", "-newer", "../outside/secret.txt"]}),
            expression.to_owned(),
        ),
        (
            "find_rs",
            json!({"dirs": ["(", "data", ")"]}),
            expression.to_owned(),
        ),
        (
            "find_rs",
            json!({"dirs": ["data", "!", "data"]}),
            expression.to_owned(),
        ),
        (
            "find_rs",
            json!({"dirs": [",", "data"]}),
            expression.to_owned(),
        ),
        (
            "find_in",
            json!({"dir": "-delete"}),
            expression.replace("`dirs`", "`dir`"),
        ),
        (
            "make_target",
            json!({"target": "CFLAGS=$(file >../make_x,pwned)"}),
            "Invalid arguments: `target` must not contain '=': the program would read it as a \
             variable assignment."
                .to_owned(),
        ),
        (
            "make_target",
            json!({"target": "X!=id > ../make_y"}),
            "Invalid arguments: `target` must not contain '=': the program would read it as a \
             variable assignment."
                .to_owned(),
        ),
        (
            "demangle",
            json!({"symbol": "@../outside/secret.txt"}),
            "Invalid arguments: `symbol` must not start with '@': the program would read it as a \
             response file (more arguments, read from a file)."
                .to_owned(),
        ),
        (
            "count_lines",
            json!({"file": "FS=x"}),
            "Invalid arguments: `file` must not be `name=…`: the program would read it as a \
             variable assignment."
                .to_owned(),
        ),
    ];
    for (id, (tool, arguments, refusal)) in attacks.iter().enumerate() {
        let reply = server.request(&call(id, tool, arguments.clone()));
        assert!(is_error(&reply), "{tool} {arguments}: {reply}");
        assert_eq!(&text(&reply), refusal, "{tool} {arguments}");
    }
    for written in ["find_x", "make_x", "make_y"] {
        assert!(!scratch.join(written).exists(), "{written} was written");
    }
    // The same tools with ordinary values.
    let controls = [
        ("find_rs", json!({"dirs": ["data"]}), "data/lib.rs\n"),
        ("find_in", json!({"dir": "data"}), "data/lib.rs\n"),
        ("demangle", json!({"symbol": "_Z3foov"}), "foo()\n"),
        ("count_lines", json!({"file": "data/lib.rs"}), "1\n"),
    ];
    for (id, (tool, arguments, expected)) in controls.iter().enumerate() {
        let reply = server.request(&call(100 + id, tool, arguments.clone()));
        assert!(!is_error(&reply), "{tool} {arguments}: {reply}");
        assert_eq!(text(&reply), *expected, "{tool} {arguments}");
    }
    let reply = server.request(&call(200, "make_target", json!({"target": "all"})));
    assert!(text(&reply).starts_with("made all\n"), "{reply}");
}

/// Item 2: what `check` prints about how each program reads its arguments, an unknown one
/// included once its risk is accepted.
#[test]
fn check_says_how_each_program_reads_its_arguments() {
    let scratch = tree("reading");
    std::fs::write(
        scratch.join("work/report.py"),
        "import sys\nprint(sys.argv[1:])\n",
    )
    .unwrap();
    let (code, printed) = check(
        &scratch,
        r#"
[[tool]]
name = "compute"
description = "Evaluates an expression"
command = ["expr", "--", "{a}", "+", "1"]
accept_risk = ["unknown_program"]
args.a = { type = "string", pattern = "^[0-9]{1,9}$" }

[[tool]]
name = "version"
description = "Prints expr's version"
command = ["expr", "--version"]

[[tool]]
name = "report"
description = "Runs the report script"
command = ["python3", "-I", "-S", "report.py", "--", "{name}"]
workdir = "work"
args.name = { type = "string" }

[[tool]]
name = "search"
description = "Searches"
command = ["grep", "-F", "-e", "{text}", "--", "data"]
workdir = "work"
args.text = { type = "string", allow_leading_dash = true }
"#,
    );
    assert_eq!(code, Some(0), "{printed}");
    for line in [
        "  operands: `expr` is not a program airlock knows: values are checked only for a \
         leading '-' where it would read options\n",
        "  operands: `expr` is not a program airlock knows; it gets no agent text\n",
        "  operands: `python3` runs the fixed script report.py; values are its arguments, stdin its \
         input\n",
        "  operands: `grep` reads options until `--`, then data\n",
    ] {
        assert!(printed.contains(line), "expected {line:?} in:\n{printed}");
    }
}

/// Item 3: a value may start with '-' without an accepted risk only where the option before it
/// is known to take it as its value (`git grep -e`), and there it cannot be an option.
#[test]
fn a_leading_dash_after_an_option_that_takes_a_value_is_only_that_value() {
    let scratch = tree("dash");
    let mut server = serve(
        &scratch,
        r#"
[[tool]]
name = "git_grep"
description = "Searches the working tree for a fixed string"
command = ["git", "--no-pager", "grep", "--no-index", "--no-color", "--fixed-strings", "-e", "{text}", "--", "data"]
workdir = "work"
env = { GIT_CONFIG_NOSYSTEM = "1", GIT_TERMINAL_PROMPT = "0", LC_ALL = "C" }
success_codes = [0, 1]
args.text = { type = "string", allow_leading_dash = true }
"#,
    );
    let target = scratch.join("work/git_x");
    let reply = server.request(&call(
        1,
        "git_grep",
        json!({"text": format!("--output={}", target.display())}),
    ));
    assert!(!is_error(&reply), "{reply}");
    assert_eq!(text(&reply), "");
    assert!(!target.exists(), "git wrote the file");
    let reply = server.request(&call(2, "git_grep", json!({"text": "// rust"})));
    assert_eq!(text(&reply), "data/lib.rs:// rust\n");
}

/// Item 7: an absolute path is accepted when it resolves inside the root, and refused with the
/// one message for "missing" and "outside" otherwise.
#[test]
fn absolute_paths_inside_the_root_are_accepted() {
    let scratch = tree("absolute");
    let mut server = serve(
        &scratch,
        r#"
[[tool]]
name = "read"
description = "Reads a file inside work"
command = ["cat", "--", "{file}"]
workdir = "work"
args.file = { type = "path", kind = "file" }
"#,
    );
    let inside = scratch.join("work/data/lib.rs");
    let reply = server.request(&call(1, "read", json!({"file": inside.to_str().unwrap()})));
    assert!(!is_error(&reply), "{reply}");
    assert_eq!(text(&reply), "// rust\n");
    let dotted = format!("{}/work/data/../data/lib.rs", scratch.path().display());
    let reply = server.request(&call(2, "read", json!({"file": dotted})));
    assert_eq!(text(&reply), "// rust\n");
    let refused =
        "Invalid arguments: `file` must name an existing file inside the tool's directory.";
    for (id, path) in [
        (3, scratch.join("outside/secret.txt")),
        (4, scratch.join("work/../outside/secret.txt")),
        (5, PathBuf::from("/etc/passwd")),
        (6, scratch.join("work/no-such-file")),
        (7, PathBuf::from("/no/such/file")),
        (8, scratch.join("work/data")),
    ] {
        let reply = server.request(&call(id, "read", json!({"file": path.to_str().unwrap()})));
        assert!(is_error(&reply), "{}: {reply}", path.display());
        assert_eq!(text(&reply), refused, "{}", path.display());
    }
}

/// Item 8: `{{` and `}}` stand for literal braces, so `find … -exec cat {} +` can be written.
#[test]
fn doubled_braces_are_literal_braces_in_a_template() {
    let scratch = tree("braces");
    let manifest = r#"
[[tool]]
name = "braces"
description = "Echoes braces around a word"
command = ["echo", "{{}}", "{{{word}", "a}}b"]
accept_risk = ["embedded_placeholder"]
args.word = { type = "string" }

[[tool]]
name = "cat_all"
description = "Prints every Rust file under data"
command = ["find", "data", "-name", "*.rs", "-exec", "cat", "{{}}", "+"]
workdir = "work"
exec = ["cat"]
"#;
    let (code, printed) = check(&scratch, manifest);
    assert_eq!(code, Some(0), "{printed}");
    assert!(
        printed.contains(r#"  argv:    /usr/bin/find data -name "*.rs" -exec cat "{}" +"#),
        "{printed}"
    );
    let mut server = serve(&scratch, manifest);
    let reply = server.request(&call(1, "braces", json!({"word": "w"})));
    assert_eq!(text(&reply), "{} {w a}b\n");
    let reply = server.request(&call(2, "cat_all", json!({})));
    assert_eq!(text(&reply), "// rust\n");
}
