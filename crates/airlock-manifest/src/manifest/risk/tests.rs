//! Risk classification and operand rules, by shape.

use std::path::PathBuf;

use super::*;
use crate::manifest::template::{PathKind, PathRule, StringRule};

fn rule(values: Option<Vec<String>>, allow_leading_dash: bool, stdin: bool) -> StringRule {
    StringRule {
        min_length: 0,
        max_length: 100,
        pattern: None,
        values,
        allow_leading_dash,
        stdin,
    }
}

fn spec(name: &str, kind: ArgKind) -> ArgSpec {
    ArgSpec {
        name: name.to_owned(),
        description: None,
        required: true,
        default: None,
        kind,
    }
}

fn text_arg() -> ArgSpec {
    spec("x", ArgKind::String(rule(None, false, false)))
}

fn dash_arg() -> ArgSpec {
    spec("x", ArgKind::String(rule(None, true, false)))
}

fn stdin_arg() -> ArgSpec {
    spec("input", ArgKind::String(rule(None, false, true)))
}

fn path_arg() -> ArgSpec {
    spec(
        "x",
        ArgKind::Path(PathRule {
            root: std::env::temp_dir(),
            must_exist: true,
            kind: PathKind::Any,
        }),
    )
}

fn value() -> Element {
    option_value("")
}

fn option_value(prefix: &str) -> Element {
    Element::Value {
        arg: 0,
        prefix: prefix.to_owned(),
        suffix: String::new(),
        after_double_dash: false,
    }
}

fn after_dashes() -> Element {
    Element::Value {
        arg: 0,
        prefix: String::new(),
        suffix: String::new(),
        after_double_dash: true,
    }
}

fn lit(text: &str) -> Element {
    Element::Literal(text.to_owned())
}

/// Script files that exist, in a directory of their own: one per user, reused by every run
/// (a directory per process was left behind by each). Its files are empty and never written
/// but when missing, so runs at once share it safely.
fn scripts() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    let dir = std::env::temp_dir().join(format!("airlock-risk-scripts-{uid}"));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["report.py", "script.sh", "prog.awk", "filter.jq", "run.pl"] {
        if !dir.join(name).is_file() {
            std::fs::write(dir.join(name), "").unwrap();
        }
    }
    dir
}

fn with(program: &str, template: &[Element], args: &[ArgSpec]) -> Vec<Risk> {
    assess(Path::new(program), template, args, &scripts()).risks()
}

fn found(program: &str, template: &[Element]) -> Vec<Risk> {
    with(program, template, &[text_arg()])
}

fn why(program: &str, template: &[Element], args: &[ArgSpec]) -> String {
    refuse_unaccepted(&assess(Path::new(program), template, args, &scripts()), &[])
        .unwrap_err()
        .to_string()
}

#[test]
fn shells_given_agent_code_are_risky() {
    assert_eq!(
        found("/bin/sh", &[lit("-c"), value()]),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found("/bin/sh", &[lit("-e"), lit("-c"), value()]),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found("/usr/bin/python3.11", &[value()]),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found("/usr/bin/awk", &[lit("-F,"), value(), lit("file")]),
        [Risk::InterpreterCode, Risk::AssignmentOperands]
    );
}

/// Review finding E1: code flags in `--flag={x}` or `-c{x}` form, and sed or awk programs
/// after an option's value, were not seen as code.
#[test]
fn code_reached_through_option_values_is_risky() {
    let template = [
        lit("-l"),
        lit("80"),
        option_value("--expression="),
        lit("--"),
        after_dashes(),
    ];
    assert!(found("/usr/bin/sed", &template).contains(&Risk::InterpreterCode));
    assert!(
        found(
            "/usr/bin/python3",
            &[lit("-W"), lit("ignore"), option_value("-c")]
        )
        .contains(&Risk::InterpreterCode)
    );
    assert!(
        found(
            "/usr/bin/find",
            &[lit("."), lit("-exec"), value(), lit(";")]
        )
        .contains(&Risk::Launcher)
    );
    assert!(found("/usr/bin/git", &[lit("-c"), value(), lit("log")]).contains(&Risk::Launcher));
    assert!(found("/usr/bin/taskset", &[lit("1"), value()]).contains(&Risk::Launcher));
}

#[test]
fn a_fixed_script_with_agent_arguments_is_not_code() {
    let dir = scripts();
    let report = dir.join("report.py");
    let report = report.to_str().unwrap();
    assert_eq!(
        found(
            "/usr/bin/python3",
            &[lit(report), lit("--"), after_dashes()]
        ),
        []
    );
    assert_eq!(found("/bin/sh", &[lit("script.sh"), value()]), []);
    assert_eq!(
        found(
            "/usr/bin/python3",
            &[
                lit("-I"),
                lit("-S"),
                lit("-W"),
                lit("ignore"),
                lit("report.py"),
                value()
            ]
        ),
        []
    );
    assert_eq!(
        found("/usr/bin/python3", &[lit("-m"), lit("json.tool"), value()]),
        []
    );
    assert_eq!(
        found("/usr/bin/perl", &[lit("-w"), lit("run.pl"), value()]),
        []
    );
    // Inline code with the value as `$1` is the safe idiom, but inline code is not a fixed
    // script file: it needs the risk accepted.
    let fixed_code = [lit("-c"), lit("printf '%s' \"$1\""), lit("sh"), value()];
    assert_eq!(found("/bin/sh", &fixed_code), [Risk::InterpreterCode]);
    // A script that does not exist, or a path that is not a regular file, is not fixed.
    assert_eq!(
        found(
            "/usr/bin/python3",
            &[lit("/opt/no-such-report.py"), value()]
        ),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found("/usr/bin/python3", &[lit("/tmp"), value()]),
        [Risk::InterpreterCode]
    );
}

/// Agent text on stdin to a shell or interpreter is code unless a fixed
/// script reads it.
#[test]
fn agent_text_on_stdin_to_a_shell_or_interpreter_is_code() {
    let stdin = [stdin_arg()];
    assert_eq!(with("/usr/bin/bash", &[], &stdin), [Risk::InterpreterCode]);
    assert_eq!(
        with("/usr/bin/python3", &[lit("-")], &stdin),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        with("/usr/bin/python3", &[lit("-I")], &stdin),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        with("/usr/bin/bash", &[lit("-s")], &stdin),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        with("/usr/bin/python3", &[lit("/dev/stdin")], &stdin),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        with("/usr/bin/python3", &[lit("-i"), lit("report.py")], &stdin),
        [Risk::InterpreterCode]
    );
    assert!(why("/usr/bin/bash", &[], &stdin).contains(
        "without a script file, `bash` reads its stdin, which an argument fills, as code"
    ));
    // A fixed script reads stdin as input; so do awk and jq given a fixed program file.
    assert_eq!(with("/usr/bin/python3", &[lit("report.py")], &stdin), []);
    assert_eq!(
        with("/usr/bin/awk", &[lit("-f"), lit("prog.awk")], &stdin),
        []
    );
    assert_eq!(
        with("/usr/bin/jq", &[lit("-f"), lit("filter.jq")], &stdin),
        []
    );
    assert_eq!(with("/usr/bin/cat", &[], &stdin), []);
}

/// `perl -le`, `bash -ic`, `python3 -Sc` hold their code flag.
#[test]
fn bundled_short_flags_hold_their_code_flag() {
    for (program, bundle, flag) in [
        ("/usr/bin/perl", "-le", "-e"),
        ("/usr/bin/perl", "-wnle", "-e"),
        ("/usr/bin/bash", "-ic", "-i"),
        ("/usr/bin/bash", "-xc", "-c"),
        ("/usr/bin/python3", "-Sc", "-c"),
        ("/usr/bin/ruby", "-ne", "-e"),
    ] {
        assert_eq!(
            found(program, &[lit(bundle), value()]),
            [Risk::InterpreterCode],
            "{program} {bundle}"
        );
        let why = why(program, &[lit(bundle), value()], &[text_arg()]);
        assert!(
            why.contains(&format!("`{bundle}` holds `{flag}`")),
            "{program} {bundle}: {why}"
        );
    }
    // `-pie` is `-p -i` with the backup extension `e`: no code flag, but then the next
    // literal is a script that does not exist.
    assert_eq!(
        found("/usr/bin/perl", &[lit("-pie"), lit("s/a/b/"), value()]),
        [Risk::InterpreterCode]
    );
}

/// `perl -I /usr/share/perl5 -le {x}` took the option's value for a
/// fixed script file because it holds a `/`.
#[test]
fn an_options_value_is_not_taken_for_a_script_file() {
    let template = [lit("-I"), lit("/usr/share/perl5"), lit("-le"), value()];
    assert_eq!(found("/usr/bin/perl", &template), [Risk::InterpreterCode]);
    assert_eq!(
        found(
            "/usr/bin/perl",
            &[lit("-I"), lit("/usr/share/perl5"), value()]
        ),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found(
            "/usr/bin/perl",
            &[lit("-I/usr/share/perl5"), lit("run.pl"), value()]
        ),
        []
    );
    // An option airlock does not know for the interpreter may take the next word.
    assert_eq!(
        found("/usr/bin/python3", &[lit("-Z"), lit("report.py"), value()]),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found(
            "/usr/bin/node",
            &[lit("--unknown-flag"), lit("report.py"), value()]
        ),
        [Risk::InterpreterCode]
    );
}

/// Options that run their value, and launchers the list missed.
#[test]
fn options_that_run_their_value_are_launchers() {
    let cases: &[(&str, &[Element])] = &[
        (
            "/usr/bin/tar",
            &[lit("-c"), lit("-I"), value(), lit("data")],
        ),
        ("/usr/bin/tar", &[lit("-cI"), value(), lit("data")]),
        (
            "/usr/bin/tar",
            &[lit("-c"), option_value("--use-compress-program=")],
        ),
        (
            "/usr/bin/tar",
            &[lit("-c"), lit("--use-compress-program"), value()],
        ),
        (
            "/usr/bin/sort",
            &[option_value("--compress-program="), lit("f")],
        ),
        (
            "/usr/bin/sort",
            &[lit("--compress-program"), value(), lit("f")],
        ),
        (
            "/usr/bin/git",
            &[lit("clone"), lit("-u"), value(), lit("--"), lit("url")],
        ),
        (
            "/usr/bin/git",
            &[
                lit("grep"),
                option_value("--open-files-in-pager="),
                lit("x"),
            ],
        ),
        ("/usr/bin/rg", &[option_value("--pre="), lit("x")]),
        ("/usr/bin/curl", &[lit("-K"), value()]),
        ("/usr/bin/setarch", &[lit("x86_64"), value()]),
        ("/usr/bin/valgrind", &[value()]),
        ("/usr/bin/git", &[value(), lit("--")]),
    ];
    for (program, template) in cases {
        assert!(
            found(program, template).contains(&Risk::Launcher),
            "{program} {template:?}: {:?}",
            found(program, template)
        );
    }
    assert!(
        why("/usr/bin/tar", &[lit("-I"), value()], &[text_arg()])
            .starts_with("`-I` of `tar` runs its value as a command")
    );
    // `-Ix`: the value of `-I` is `x`, and the placeholder is an operand.
    assert_eq!(
        found(
            "/usr/bin/tar",
            &[lit("-cf"), lit("-"), lit("-Ix"), lit("--"), after_dashes()]
        ),
        []
    );
}

/// Interpreters that read code from any argument or from stdin.
#[test]
fn interpreters_that_read_code_anywhere_are_risky() {
    for program in [
        "/usr/bin/sqlite3",
        "/usr/bin/ed",
        "/usr/bin/gdb",
        "/usr/bin/vim",
        "/usr/bin/dc",
        "/usr/bin/bc",
        "/usr/bin/m4",
        "/usr/bin/busybox",
    ] {
        assert_eq!(
            found(program, &[lit("--"), after_dashes()]),
            [Risk::InterpreterCode],
            "{program}"
        );
        assert_eq!(
            with(program, &[lit("-q")], &[stdin_arg()]),
            [Risk::InterpreterCode],
            "{program}"
        );
        assert_eq!(with(program, &[lit("--version")], &[]), [], "{program}");
    }
    assert_eq!(
        found("/usr/bin/gdb", &[lit("-batch"), lit("-ex"), value()]),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found("/usr/bin/pypy3", &[lit("-c"), value()]),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found("/usr/bin/jq", &[lit("-r"), value()]),
        [Risk::InterpreterCode]
    );
    assert_eq!(
        found("/usr/bin/awk", &[value(), lit("file")]),
        [Risk::InterpreterCode, Risk::AssignmentOperands]
    );
}

/// A program airlock does not know needs its risk accepted before agent
/// text reaches it; a known one matches by its exact name only.
#[test]
fn unknown_programs_given_agent_text_are_risky() {
    assert_eq!(
        found("/opt/bin/mycli", &[lit("--"), after_dashes()]),
        [Risk::UnknownProgram]
    );
    assert_eq!(
        found("/opt/bin/cat2", &[lit("--"), after_dashes()]),
        [Risk::UnknownProgram]
    );
    assert_eq!(
        with(
            "/opt/bin/mycli",
            &[lit("--"), after_dashes()],
            &[path_arg()]
        ),
        [Risk::UnknownProgram]
    );
    assert_eq!(
        with("/opt/bin/mycli", &[], &[stdin_arg()]),
        [Risk::UnknownProgram]
    );
    // Without agent text: no argument, a number, a boolean flag, a fixed choice.
    assert_eq!(with("/opt/bin/mycli", &[lit("--version")], &[]), []);
    let number = spec(
        "x",
        ArgKind::Integer {
            minimum: 0,
            maximum: 9,
        },
    );
    assert_eq!(with("/opt/bin/mycli", &[value()], &[number]), []);
    let choice = spec(
        "x",
        ArgKind::String(rule(
            Some(vec!["a".to_owned(), "b".to_owned()]),
            false,
            false,
        )),
    );
    assert_eq!(with("/opt/bin/mycli", &[value()], &[choice]), []);
    let why = why("/opt/bin/mycli", &[value()], &[text_arg()]);
    assert!(
        why.starts_with("airlock does not know how `mycli` reads its arguments"),
        "{why}"
    );
    assert!(
        why.ends_with("if that is really intended, add accept_risk = [\"unknown_program\"]"),
        "{why}"
    );
    let shown = assess(
        Path::new("/opt/bin/mycli"),
        &[value()],
        &[text_arg()],
        &scripts(),
    );
    assert_eq!(
        shown.reading.summary,
        "`mycli` is not a program airlock knows: values are checked only for a leading '-' \
         where it would read options"
    );
    assert_eq!(shown.reading.operands, OperandRules::DATA);
}

/// Find, make, awk and `@file` readers given agent text.
#[test]
fn programs_that_read_operands_as_more_than_data_are_risky() {
    let tail = [lit("--"), after_dashes()];
    assert_eq!(found("/usr/bin/find", &tail), [Risk::ExpressionOperands]);
    assert_eq!(found("/usr/bin/make", &tail), [Risk::AssignmentOperands]);
    assert_eq!(
        with("/usr/bin/make", &tail, &[path_arg()]),
        [Risk::AssignmentOperands]
    );
    assert_eq!(
        found(
            "/usr/bin/awk",
            &[lit("-f"), lit("prog.awk"), lit("--"), after_dashes()]
        ),
        [Risk::AssignmentOperands]
    );
    for program in [
        "/usr/bin/c++filt",
        "/usr/bin/clang-15",
        "/usr/bin/gcc-12",
        "/usr/bin/llvm-objdump",
        "/usr/lib/jvm/bin/javac",
    ] {
        assert_eq!(found(program, &tail), [Risk::ResponseFiles], "{program}");
    }
    // A target prefix adds the rules, but `my-as` may be anything.
    for program in ["/usr/bin/x86_64-linux-gnu-objdump", "/opt/bin/my-as"] {
        assert_eq!(
            found(program, &tail),
            [Risk::UnknownProgram, Risk::ResponseFiles],
            "{program}"
        );
    }
    // A path starts with `./` or `/`: never an expression token, an awk assignment or a
    // response file.
    assert_eq!(with("/usr/bin/find", &tail, &[path_arg()]), []);
    assert_eq!(with("/usr/bin/c++filt", &tail, &[path_arg()]), []);
    assert_eq!(
        with(
            "/usr/bin/awk",
            &[lit("-f"), lit("prog.awk"), lit("--"), after_dashes()],
            &[path_arg()]
        ),
        []
    );
    let rules = assess(Path::new("/usr/bin/find"), &tail, &[path_arg()], &scripts())
        .reading
        .operands;
    assert!(rules.expressions);
}

/// `allow_leading_dash` where the program reads options needs its risk,
/// unless the option before it is known to take the next element as its value.
#[test]
fn a_leading_dash_where_options_are_read_needs_its_risk() {
    let dash = [dash_arg()];
    assert_eq!(
        with(
            "/usr/bin/git",
            &[lit("log"), lit("--oneline"), value()],
            &dash
        ),
        [Risk::LeadingDash]
    );
    assert_eq!(
        with("/usr/bin/make", &[value()], &dash),
        [Risk::AssignmentOperands, Risk::LeadingDash]
    );
    assert_eq!(
        with(
            "/usr/bin/git",
            &[lit("grep"), lit("-e"), value(), lit("--")],
            &dash
        ),
        []
    );
    assert_eq!(
        with("/usr/bin/grep", &[lit("-F"), lit("-e"), value()], &dash),
        []
    );
    assert_eq!(
        with("/usr/bin/git", &[lit("log"), lit("-e"), value()], &dash),
        [Risk::LeadingDash]
    );
    assert_eq!(
        with(
            "/usr/bin/git",
            &[lit("log"), lit("--"), after_dashes()],
            &dash
        ),
        []
    );
    assert_eq!(
        with(
            "/usr/bin/tar",
            &[value(), lit("archive.tar")],
            &[text_arg()]
        ),
        [Risk::LeadingDash]
    );
    let why = why(
        "/usr/bin/git",
        &[lit("log"), lit("--oneline"), value()],
        &dash,
    );
    assert!(
        why.starts_with("`x` may start with '-' where `git log` reads options"),
        "{why}"
    );
}

/// Options that make a build tool read its rules, or code, from a file the value names.
#[test]
fn build_tools_given_a_makefile_or_code_are_launchers() {
    for template in [
        [lit("-f"), value()],
        [lit("-C"), value()],
        [option_value("--eval="), lit("all")],
        [option_value("--file="), lit("all")],
    ] {
        assert!(
            with("/usr/bin/make", &template, &[path_arg()]).contains(&Risk::Launcher),
            "{template:?}"
        );
    }
    assert!(found("/usr/bin/rake", &[lit("-e"), value()]).contains(&Risk::Launcher));
    let stdin = [stdin_arg()];
    assert!(with("/usr/bin/make", &[lit("-f"), lit("-")], &stdin).contains(&Risk::Launcher));
    assert!(with("/usr/bin/curl", &[lit("-sK"), lit("-")], &stdin).contains(&Risk::Launcher));
    assert_eq!(with("/usr/bin/make", &[lit("-f"), lit("-")], &[]), []);
    assert_eq!(
        with(
            "/usr/bin/make",
            &[lit("-f"), lit("Makefile"), lit("all")],
            &[]
        ),
        []
    );
}

/// `tar -f host:file` runs a remote shell to reach the archive.
#[test]
fn a_tar_archive_named_by_agent_text_can_be_remote() {
    for template in [[lit("-tf"), value()], [lit("-t"), option_value("--file=")]] {
        assert_eq!(
            found("/usr/bin/tar", &template),
            [Risk::Launcher],
            "{template:?}"
        );
    }
    assert!(
        why("/usr/bin/tar", &[lit("-tf"), value()], &[text_arg()])
            .starts_with("`-f` of `tar` reads a value `host:file` as a remote archive")
    );
    assert_eq!(
        found("/usr/bin/tar", &[lit("--force-local"), lit("-tf"), value()]),
        []
    );
    assert_eq!(
        with("/usr/bin/tar", &[lit("-tf"), value()], &[path_arg()]),
        []
    );
}

#[test]
fn git_subcommands_airlock_does_not_know_are_unknown() {
    assert_eq!(
        found("/usr/bin/git", &[lit("submodule"), lit("foreach"), value()]),
        [Risk::UnknownProgram]
    );
    assert_eq!(
        found(
            "/usr/bin/git",
            &[
                lit("-C"),
                lit("repo"),
                lit("log"),
                lit("--"),
                after_dashes()
            ]
        ),
        []
    );
    assert_eq!(
        found("/usr/bin/git", &[lit("-C"), value(), lit("log")]),
        [Risk::Launcher]
    );
}

#[test]
fn launchers_with_agent_input_are_risky() {
    assert_eq!(found("/usr/bin/env", &[value()]), [Risk::Launcher]);
    assert_eq!(
        found("/usr/bin/xargs", &[lit("-0"), value()]),
        [Risk::Launcher]
    );
    assert_eq!(
        with("/usr/bin/xargs", &[lit("grep")], &[stdin_arg()]),
        [Risk::Launcher]
    );
    assert_eq!(with("/usr/bin/env", &[lit("-i")], &[]), []);
}

#[test]
fn ordinary_programs_are_not_flagged() {
    assert_eq!(
        found("/usr/bin/git", &[lit("log"), lit("--"), after_dashes()]),
        []
    );
    assert_eq!(
        found("/usr/bin/grep", &[lit("-F"), lit("--"), after_dashes()]),
        []
    );
    let reading = assess(
        Path::new("/usr/bin/grep"),
        &[lit("-F"), lit("--"), after_dashes()],
        &[text_arg()],
        &scripts(),
    )
    .reading;
    assert_eq!(
        reading.summary,
        "`grep` reads options until `--`, then data"
    );
    assert_eq!(reading.operands, OperandRules::DATA);
}

/// The call-time rules, on whole values and inside elements.
#[test]
fn operand_rules_refuse_the_shapes_a_program_reads_as_syntax() {
    let find = OperandRules {
        expressions: true,
        ..OperandRules::DATA
    };
    for value in ["-exec", "-fprint", "-newer", "--", "(", ")", "!", ","] {
        assert!(find.refusal("", value).is_some(), "{value}");
    }
    for value in ["data", "./-exec", "a(b", "!x", "x,"] {
        assert_eq!(find.refusal("", value), None, "{value}");
    }
    assert_eq!(find.refusal("--opt=", "-x"), None);
    let make = OperandRules {
        assignments: Assignments::Any,
        ..OperandRules::DATA
    };
    for value in ["CFLAGS=x", "X!=id", "X:=1", "./a=b", "="] {
        assert!(make.refusal("", value).is_some(), "{value}");
    }
    assert_eq!(make.refusal("", "all"), None);
    assert_eq!(make.refusal("CFLAGS=", "a=b"), None);
    assert_eq!(make.refusal("--directory=", "a=b"), None);
    let awk = OperandRules {
        assignments: Assignments::Named,
        ..OperandRules::DATA
    };
    for value in ["FS=x", "_a1=", "x=1=2"] {
        assert!(awk.refusal("", value).is_some(), "{value}");
    }
    for value in ["./x=1", "1x=2", "a-b=c", "file.txt", "x"] {
        assert_eq!(awk.refusal("", value), None, "{value}");
    }
    assert!(awk.refusal("F", "S=x").is_some());
    let binutils = OperandRules {
        response_files: true,
        ..OperandRules::DATA
    };
    assert!(binutils.refusal("", "@/etc/shadow").is_some());
    assert_eq!(binutils.refusal("", "a@b"), None);
    assert_eq!(binutils.refusal("--opt=", "@x"), None);
    assert_eq!(
        binutils.refusal("", "@x"),
        Some(
            "must not start with '@': the program would read it as a response file (more \
             arguments, read from a file)."
        )
    );
}

#[test]
fn every_risk_name_parses_back() {
    for risk in Risk::ALL {
        assert_eq!(Risk::parse(risk.as_str()), Some(risk));
    }
    assert_eq!(Risk::parse("yolo"), None);
}

fn choice(name: &str, values: &[&str], required: bool) -> ArgSpec {
    let values = values.iter().map(|value| (*value).to_owned()).collect();
    ArgSpec {
        required,
        ..spec(name, ArgKind::String(rule(Some(values), false, false)))
    }
}

fn second_value() -> Element {
    Element::Value {
        arg: 1,
        prefix: String::new(),
        suffix: String::new(),
        after_double_dash: false,
    }
}

/// Issue 41: an `enum`'s values are the operator's, not the agent's: jq given an enum of
/// filters, then a file, was refused as interpreter code.
#[test]
fn an_enum_of_programs_is_the_operators_code() {
    let filters = choice("filter", &[".name", ".items[] | .id"], true);
    assert_eq!(
        with(
            "/usr/bin/jq",
            &[value(), second_value()],
            &[filters, path_arg()]
        ),
        []
    );
    // Free text there is still code.
    assert_eq!(
        with(
            "/usr/bin/jq",
            &[value(), second_value()],
            &[text_arg(), path_arg()]
        ),
        [Risk::InterpreterCode]
    );
    // An enum that may be left out would let the next value take the program's place.
    let optional = choice("filter", &[".name"], false);
    assert_eq!(
        with(
            "/usr/bin/jq",
            &[value(), second_value()],
            &[optional, text_arg()]
        ),
        [Risk::InterpreterCode]
    );
    // A shell's code from an enum, with nothing else from the agent.
    let commands = choice("command", &["ls -l", "pwd"], true);
    assert_eq!(with("/bin/sh", &[lit("-c"), value()], &[commands]), []);
    // With agent text beside it, the agent's value still reaches inline code.
    let commands = choice("command", &["ls -l", "pwd"], true);
    assert_eq!(
        with(
            "/bin/sh",
            &[lit("-c"), value(), lit("sh"), second_value()],
            &[commands, text_arg()]
        ),
        [Risk::InterpreterCode]
    );
    // sqlite3 reads code from every argument: an enum of statements is the operator's.
    let statements = choice("query", &["select count(*) from t;"], true);
    assert_eq!(
        with("/usr/bin/sqlite3", &[lit("db"), value()], &[statements]),
        []
    );
}

/// A program the manifest writes inline for jq, awk or sed is as fixed as `-f FILE`: the
/// values after it are the program's input.
#[test]
fn an_inline_program_written_in_the_manifest_is_fixed() {
    assert_eq!(
        with("/usr/bin/jq", &[lit(".foo"), value()], &[path_arg()]),
        []
    );
    assert_eq!(
        found("/usr/bin/sed", &[lit("s/a/b/"), lit("--"), after_dashes()]),
        []
    );
    assert_eq!(
        found(
            "/usr/bin/awk",
            &[lit("{print $1}"), lit("--"), after_dashes()]
        ),
        [Risk::AssignmentOperands]
    );
}

/// Issue 41: a refusal named only `accept_risk`; it now names the safe form first.
#[test]
fn every_refusal_names_the_safe_form_before_accept_risk() {
    let text = why("/usr/bin/jq", &[value()], &[text_arg()]);
    assert!(
        text.contains("the safe form: `-f FILE` with a fixed file, or an `enum` of the programs"),
        "{text}"
    );
    let cases: [(&str, Vec<Element>, ArgSpec); 7] = [
        ("/bin/sh", vec![lit("-c"), value()], text_arg()),
        ("/usr/bin/env", vec![value()], text_arg()),
        ("/opt/bin/mycli", vec![value()], text_arg()),
        ("/usr/bin/find", vec![lit("--"), after_dashes()], text_arg()),
        ("/usr/bin/make", vec![lit("--"), after_dashes()], text_arg()),
        (
            "/usr/bin/c++filt",
            vec![lit("--"), after_dashes()],
            text_arg(),
        ),
        ("/usr/bin/git", vec![lit("log"), value()], dash_arg()),
    ];
    for (program, template, arg) in cases {
        let text = why(program, &template, &[arg]);
        let safe = text.find("; the safe form: ");
        let accept = text.find("; only if that is really intended, add accept_risk = [");
        assert!(
            safe.is_some() && accept.is_some() && safe < accept,
            "{program}: {text}"
        );
        assert!(text.ends_with("\"]"), "{program}: {text}");
    }
    let embedded = Element::Value {
        arg: 0,
        prefix: "x".to_owned(),
        suffix: String::new(),
        after_double_dash: true,
    };
    let text = why("/usr/bin/cat", &[lit("--"), embedded], &[text_arg()]);
    assert!(text.contains("; the safe form: "), "{text}");
}
