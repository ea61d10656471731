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
}

impl Risk {
    /// The name a manifest uses in `accept_risk`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "interpreter_code" => Self::InterpreterCode,
            "launcher" => Self::Launcher,
            "embedded_placeholder" => Self::EmbeddedPlaceholder,
            _ => return None,
        })
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InterpreterCode => "interpreter_code",
            Self::Launcher => "launcher",
            Self::EmbeddedPlaceholder => "embedded_placeholder",
        }
    }
}

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

const LAUNCHERS: &[&str] = &[
    "env",
    "sudo",
    "doas",
    "su",
    "xargs",
    "nice",
    "ionice",
    "nohup",
    "timeout",
    "stdbuf",
    "strace",
    "ltrace",
    "chroot",
    "unshare",
    "nsenter",
    "setsid",
    "flock",
    "watch",
    "ssh",
    "parallel",
    "runuser",
    "pkexec",
    "systemd-run",
];

/// Flags after which shells and interpreters read code.
const CODE_FLAGS: &[&str] = &[
    "-c",
    "-e",
    "-E",
    "-r",
    "-p",
    "--eval",
    "--print",
    "--command",
    "-Command",
    "--exec",
    "--execute",
    "/c",
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
    if has_value && is(LAUNCHERS) {
        risks.push(Risk::Launcher);
    }
    if is(SHELLS) || is(INTERPRETERS) {
        // `sh -c {x}`: the value is the code. (`sh -c 'fixed "$1"' sh {x}` passes it as data.)
        let code_flag_then_value = template.windows(2).any(|pair| {
            matches!(pair, [Element::Literal(flag), Element::Value { .. }]
                if CODE_FLAGS.contains(&flag.as_str()))
        });
        // The first element that is not an option is the script (or, for awk and sed, the
        // program text): a value there, or before any fixed script, is code.
        let value_before_script = template
            .iter()
            .find(|e| !matches!(e, Element::Literal(t) if t.starts_with('-')))
            .is_some_and(|e| matches!(e, Element::Value { .. }));
        if code_flag_then_value || value_before_script {
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

    #[test]
    fn a_fixed_script_with_agent_arguments_is_not_code() {
        let python = Path::new("/usr/bin/python3");
        assert!(found(python, &[lit("/opt/report.py"), lit("--"), value()]).is_empty());
        assert!(found(Path::new("/bin/sh"), &[lit("/opt/script.sh"), value()]).is_empty());
        let fixed_code = [lit("-c"), lit("printf '%s' \"$1\""), lit("sh"), value()];
        assert!(found(Path::new("/bin/sh"), &fixed_code).is_empty());
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
