//! Risky command shapes: agent text reaching a shell, an interpreter's code, or a program
//! launcher. Refused at load unless the manifest accepts the risk by name.
//!
//! A placeholder is one argv element, so no shell ever splits it; but if the program *is* a
//! shell or interpreter and the value lands where it reads code (`sh -c {x}`, `python -c {x}`,
//! `awk {x}`), the agent runs whatever it likes. A launcher (`env`, `xargs`, `sudo`, …) runs
//! its arguments as a command, which is the same thing. These checks look at the program's
//! name (and the name its path resolves to) and the template; they cannot know every program,
//! so `airlock check` prints each tool's full argv for a human to read as well.

use std::path::Path;

use super::checked::Element;

/// A risky shape a manifest may accept explicitly.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Risk {
    /// Agent text can reach where a shell or interpreter reads code.
    InterpreterCode,
    /// Agent text reaches a program that runs its arguments as a command.
    Launcher,
    /// A placeholder sits inside a larger token other than `--opt={x}`.
    EmbeddedPlaceholder,
    /// The tool runs outside the kernel sandbox (`sandbox = "off"`).
    Unsandboxed,
}

impl Risk {
    /// The name a manifest uses in `accept_risk`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "interpreter_code" => Self::InterpreterCode,
            "launcher" => Self::Launcher,
            "embedded_placeholder" => Self::EmbeddedPlaceholder,
            "unsandboxed" => Self::Unsandboxed,
            _ => return None,
        })
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InterpreterCode => "interpreter_code",
            Self::Launcher => "launcher",
            Self::EmbeddedPlaceholder => "embedded_placeholder",
            Self::Unsandboxed => "unsandboxed",
        }
    }
}

#[rustfmt::skip]
const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "yash",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "pwsh",
    "powershell",
    "cmd",
];

#[rustfmt::skip]
const INTERPRETERS: &[&str] = &[
    "python",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "osascript",
    "rscript",
    "julia",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "irb",
    "jshell",
    "expect",
];

#[rustfmt::skip]
const LAUNCHERS: &[&str] = &[
    "env", "sudo", "doas", "su", "xargs", "nice", "ionice", "nohup", "timeout", "stdbuf", "strace",
    "ltrace", "chroot", "unshare", "nsenter", "setsid", "flock", "watch", "ssh", "parallel",
    "runuser", "pkexec", "systemd-run", "taskset", "chrt", "prlimit", "setpriv", "time", "script",
    "capsh", "firejail", "bwrap", "docker", "podman", "kubectl",
];

/// Options, of any program, whose value is run as a command.
#[rustfmt::skip]
const VALUE_RUNNING_OPTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "--to-command", "--use-compress-program",
    "--checkpoint-action", "--rsh-command", "--upload-pack", "--receive-pack", "--exec",
    "--config-env", "--pager", "--editor",
];

/// Flags after which shells and interpreters read code (or a script file to run).
#[rustfmt::skip]
const CODE_FLAGS: &[&str] = &[
    "-c", "-e", "-E", "-f", "-r", "-p", "--eval", "--print", "--command", "-Command", "--exec",
    "--execute", "--expression", "--file", "/c",
];

/// Refuses the tool if its shape is risky and the risk is not accepted.
pub(super) fn refuse_unaccepted(
    program: &Path,
    template: &[Element],
    accepted: &[Risk],
) -> Result<(), String> {
    for risk in found(program, template) {
        if !accepted.contains(&risk) {
            let why = match risk {
                Risk::InterpreterCode => {
                    "agent input can reach where this shell or interpreter reads code"
                }
                Risk::Launcher => "this program runs its arguments as a command",
                Risk::EmbeddedPlaceholder => "a placeholder is inside a larger token",
                Risk::Unsandboxed => "the command runs outside the kernel sandbox",
            };
            return Err(format!(
                "{why}; if that is really intended, add accept_risk = [\"{}\"]",
                risk.as_str()
            ));
        }
    }
    Ok(())
}

/// The risky shapes of a tool.
pub(super) fn found(program: &Path, template: &[Element]) -> Vec<Risk> {
    let mut risks = Vec::new();
    let has_value = template.iter().any(|e| matches!(e, Element::Value { .. }));
    let names = program_names(program);
    let is = |list: &[&str]| names.iter().any(|name| list.contains(&name.as_str()));
    let runs_a_value = template.windows(2).any(|pair| {
        matches!(pair, [Element::Literal(option), Element::Value { prefix, .. }]
            if prefix.is_empty() && (VALUE_RUNNING_OPTIONS.contains(&option.as_str())
                || (is(&["git"]) && option == "-c")))
    }) || template.iter().any(|e| {
        matches!(e, Element::Value { prefix, .. }
            if VALUE_RUNNING_OPTIONS.contains(&prefix.trim_end_matches('=')))
    });
    let find_exec = is(&["find"])
        && template.iter().any(|e| {
            matches!(e, Element::Literal(t) if ["-exec", "-execdir", "-ok", "-okdir"].contains(&t.as_str()))
        });
    if has_value && (is(LAUNCHERS) || runs_a_value || find_exec) {
        risks.push(Risk::Launcher);
    }
    if has_value && (is(SHELLS) || is(INTERPRETERS)) {
        // A value given to a code flag: `-c {x}`, `--eval={x}`, `-c{x}`.
        let value_is_code = template.windows(2).any(|pair| {
            matches!(pair, [Element::Literal(flag), Element::Value { prefix, .. }]
                if prefix.is_empty() && CODE_FLAGS.contains(&flag.as_str()))
        }) || template.iter().any(|e| {
            matches!(e, Element::Value { prefix, .. }
                if CODE_FLAGS.contains(&prefix.trim_end_matches('=')))
        });
        // Without a fixed script file before the first value, any value may be program text:
        // awk and sed take their program as the first operand, and which word is an option's
        // value (`sed -l 80 …`) cannot be known from outside. A script file is a literal with a
        // `/` or a script extension; inline code after `-c` does not count, so `sh -c '…' sh
        // {x}` needs the risk accepted even though it is the safe idiom.
        let fixed_script_first = template
            .iter()
            .take_while(|e| !matches!(e, Element::Value { .. }))
            .any(|e| matches!(e, Element::Literal(t) if is_script_file(t)));
        let inline_code = template
            .iter()
            .any(|e| matches!(e, Element::Literal(t) if CODE_FLAGS.contains(&t.as_str())));
        if value_is_code || inline_code || !fixed_script_first {
            risks.push(Risk::InterpreterCode);
        }
    }
    if template.iter().any(|e| {
        matches!(e, Element::Value { prefix, suffix, .. }
            if !suffix.is_empty() || (!prefix.is_empty() && !prefix.ends_with('=')))
    }) {
        risks.push(Risk::EmbeddedPlaceholder);
    }
    risks
}

/// A literal naming a script file: not an option, and a path or a script's extension.
fn is_script_file(text: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        ".py", ".sh", ".bash", ".pl", ".rb", ".js", ".mjs", ".cjs", ".ts", ".php", ".lua", ".awk",
        ".sed", ".tcl", ".r", ".jl", ".ps1",
    ];
    !text.starts_with('-')
        && (text.contains('/')
            || EXTENSIONS
                .iter()
                .any(|ext| text.to_ascii_lowercase().ends_with(ext)))
}

/// The program's file name and the name its path resolves to, without version suffixes
/// (`python3.11` → `python`), lowercased.
fn program_names(program: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let resolved = std::fs::canonicalize(program).ok();
    for path in [Some(program), resolved.as_deref()].into_iter().flatten() {
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            let name = name.to_ascii_lowercase();
            let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
            let base = base.strip_suffix(".exe").unwrap_or(base);
            names.push(base.to_owned());
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value() -> Element {
        Element::Value {
            arg: 0,
            prefix: String::new(),
            suffix: String::new(),
            after_double_dash: false,
        }
    }

    fn lit(text: &str) -> Element {
        Element::Literal(text.to_owned())
    }

    #[test]
    fn shells_given_agent_code_are_risky() {
        let sh = Path::new("/bin/sh");
        assert_eq!(
            found(sh, &[lit("-c"), value()]),
            vec![Risk::InterpreterCode]
        );
        assert_eq!(
            found(sh, &[lit("-e"), lit("-c"), value()]),
            vec![Risk::InterpreterCode]
        );
        assert_eq!(
            found(Path::new("/usr/bin/python3.11"), &[value()]),
            vec![Risk::InterpreterCode]
        );
        assert_eq!(
            found(
                Path::new("/usr/bin/awk"),
                &[lit("-F,"), value(), lit("file")]
            ),
            vec![Risk::InterpreterCode]
        );
    }

    fn option_value(prefix: &str) -> Element {
        Element::Value {
            arg: 0,
            prefix: prefix.to_owned(),
            suffix: String::new(),
            after_double_dash: false,
        }
    }

    /// Review finding E1: code flags in `--flag={x}` or `-c{x}` form, and sed or awk programs
    /// after an option's value, were not seen as code.
    #[test]
    fn code_reached_through_option_values_is_risky() {
        let sed = Path::new("/usr/bin/sed");
        let template = [
            lit("-l"),
            lit("80"),
            option_value("--expression="),
            lit("--"),
            value(),
        ];
        assert!(found(sed, &template).contains(&Risk::InterpreterCode));
        let python = Path::new("/usr/bin/python3");
        assert!(
            found(python, &[lit("-W"), lit("ignore"), option_value("-c")])
                .contains(&Risk::InterpreterCode)
        );
        assert!(
            found(
                Path::new("/usr/bin/find"),
                &[lit("."), lit("-exec"), value(), lit(";")]
            )
            .contains(&Risk::Launcher)
        );
        assert!(
            found(Path::new("/usr/bin/git"), &[lit("-c"), value(), lit("log")])
                .contains(&Risk::Launcher)
        );
        assert!(
            found(Path::new("/usr/bin/taskset"), &[lit("1"), value()]).contains(&Risk::Launcher)
        );
    }

    #[test]
    fn a_fixed_script_with_agent_arguments_is_not_code() {
        let python = Path::new("/usr/bin/python3");
        assert!(found(python, &[lit("/opt/report.py"), lit("--"), value()]).is_empty());
        assert!(found(Path::new("/bin/sh"), &[lit("/opt/script.sh"), value()]).is_empty());
        // Inline code with the value as `$1` is the safe idiom, but inline code is not a fixed
        // script file: it needs the risk accepted.
        let fixed_code = [lit("-c"), lit("printf '%s' \"$1\""), lit("sh"), value()];
        assert_eq!(
            found(Path::new("/bin/sh"), &fixed_code),
            vec![Risk::InterpreterCode]
        );
    }

    #[test]
    fn launchers_with_agent_input_are_risky() {
        assert_eq!(
            found(Path::new("/usr/bin/env"), &[value()]),
            vec![Risk::Launcher]
        );
        assert_eq!(
            found(Path::new("/usr/bin/xargs"), &[lit("-0"), value()]),
            vec![Risk::Launcher]
        );
        assert!(found(Path::new("/usr/bin/env"), &[lit("-i")]).is_empty());
    }

    #[test]
    fn ordinary_programs_are_not_flagged() {
        assert!(found(Path::new("/usr/bin/git"), &[lit("log"), lit("--"), value()]).is_empty());
        assert!(found(Path::new("/usr/bin/grep"), &[lit("-F"), lit("--"), value()]).is_empty());
    }
}
