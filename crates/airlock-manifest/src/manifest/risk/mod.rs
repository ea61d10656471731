//! What airlock knows about how programs read their arguments, and the risky shapes of a tool
//! that follow from it. Each risky shape is refused at load unless the manifest accepts the
//! risk by name; what can be checked per value is also enforced at call time.
//!
//! A placeholder is one argv element, so no shell ever splits it; but every program reads its
//! elements in its own way. A shell or interpreter reads code (`sh -c {x}`, `perl -le {x}`, a
//! script on stdin); a launcher (`env`, `xargs`, `setarch`) runs its arguments; `tar -I {x}`
//! runs its value; `find` reads `-exec` and `(` as its expression and `make` reads `X=y` as an
//! assignment even after `--`; binutils, gcc, clang and javac replace `@file` with the file's
//! text. The manifest author is trusted but can miss these, so airlock looks for them.
//!
//! The design fails safe for what it does not know:
//!
//! - `PROGRAMS` lists the programs airlock knows, with how each reads its arguments. A
//!   program that is not in it (by its name or the name its path resolves to) and gets agent
//!   text is refused unless the tool accepts `unknown_program`: airlock cannot tell whether it
//!   runs, evaluates or expands its values. Programs are recognised by name, so a program
//!   that is known for reading only data is matched by its exact name, never a near one.
//! - For an interpreter, agent text is code unless a fixed script comes first, reached only
//!   through options airlock knows for that interpreter (an option it does not know, or
//!   bundled letters holding one, counts as code), and the script exists as a regular file.
//! - For git, only the subcommands airlock knows count as known.
//!
//! What airlock knows about operands becomes [`OperandRules`], which `command::argv` enforces
//! on every value at call time, before `--` and after it. `airlock check` prints, for every
//! tool, the [`Reading`] of its program.

use std::path::{Path, PathBuf};

mod programs;

use programs::{
    Grammar, Kind, Match, Names, PROGRAMS, Plain, Source, Subcommands, VALUE_RUNNING_OPTIONS,
};
#[cfg(test)]
mod tests;

use super::template::{ArgKind, ArgSpec, Element};

/// A risky shape a manifest may accept explicitly.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Risk {
    /// Agent text can reach where a shell or interpreter reads code.
    InterpreterCode,
    /// Agent text reaches a program that runs its arguments, or an option that runs its value,
    /// as a command.
    Launcher,
    /// A placeholder sits inside a larger token other than `--opt={x}`.
    EmbeddedPlaceholder,
    /// The tool runs outside the kernel sandbox (`sandbox = "off"`).
    Unsandboxed,
    /// Agent text reaches a program that reads values as an expression (`find`).
    ExpressionOperands,
    /// Agent text reaches a program that reads `X=y` values as assignments (`make`, `awk`).
    AssignmentOperands,
    /// Agent text reaches a program that replaces `@file` with the file's contents.
    ResponseFiles,
    /// A value may start with `-` where the program reads options (`allow_leading_dash`).
    LeadingDash,
    /// Agent text reaches a program airlock does not know.
    UnknownProgram,
    /// A writable directory the tool names is one that makes other programs run code later
    /// (`.git`, `.vscode`, …: `sandbox::later_code`), which the sandbox otherwise keeps
    /// read-only inside writable directories.
    LaterCode,
    /// A tool's name, title, description or argument text holds characters a reviewer does
    /// not see (format, bidi and tag characters, stray variation selectors, terminal
    /// escapes, long blank runs): the metadata rules' `hidden_text` family (`told`).
    HiddenText,
    /// A tool's text addresses the model (read secrets, hide from the user, ignore other
    /// instructions, call other tools, a tool the manifest does not have): the metadata
    /// rules' `model_instructions` family (`told`).
    ModelInstructions,
}

impl Risk {
    /// Every risk, in the order `airlock check` reports them.
    pub const ALL: [Self; 12] = [
        Self::InterpreterCode,
        Self::Launcher,
        Self::UnknownProgram,
        Self::ExpressionOperands,
        Self::AssignmentOperands,
        Self::ResponseFiles,
        Self::LeadingDash,
        Self::EmbeddedPlaceholder,
        Self::Unsandboxed,
        Self::LaterCode,
        Self::HiddenText,
        Self::ModelInstructions,
    ];

    /// The risk a manifest names in `accept_risk`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|risk| risk.as_str() == name)
    }

    /// What to write instead of accepting the risk, when no finding says better.
    pub(crate) fn safe_form(self) -> &'static str {
        match self {
            Self::InterpreterCode => {
                "a fixed script file named in `command` (outside every writable directory), or \
                 an `enum` of the code the argument may choose"
            }
            Self::Launcher => {
                "the command it runs written in `command` itself, or an `enum` of what the \
                 argument may run"
            }
            Self::UnknownProgram => {
                "an `enum` of the values the argument may take (or an integer or boolean \
                 argument), which airlock does not count as agent text"
            }
            Self::ExpressionOperands | Self::AssignmentOperands | Self::ResponseFiles => {
                "a `path` argument (airlock passes it as an absolute path), or an `enum` of the \
                 values the argument may take"
            }
            Self::LeadingDash => {
                "no `allow_leading_dash`; or the value after `--`, or given to its option as \
                 `--opt={x}`"
            }
            Self::EmbeddedPlaceholder => {
                "the placeholder as a whole element (`{x}`) or as an option's value \
                 (`--opt={x}`)"
            }
            Self::Unsandboxed => {
                "the sandbox on, granting what the command needs with `read`, `write`, `exec` \
                 and `network`"
            }
            Self::LaterCode => "the directory left out of `write`",
            Self::HiddenText => {
                "the text as the person approving the server reads it: no invisible or \
                 direction-changing characters, no terminal escapes"
            }
            Self::ModelInstructions => {
                "a description of what the tool does for its user, with no instructions \
                 addressed to the model"
            }
        }
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InterpreterCode => "interpreter_code",
            Self::Launcher => "launcher",
            Self::EmbeddedPlaceholder => "embedded_placeholder",
            Self::Unsandboxed => "unsandboxed",
            Self::ExpressionOperands => "expression_operands",
            Self::AssignmentOperands => "assignment_operands",
            Self::ResponseFiles => "response_files",
            Self::LeadingDash => "leading_dash",
            Self::UnknownProgram => "unknown_program",
            Self::LaterCode => "later_code",
            Self::HiddenText => "hidden_text",
            Self::ModelInstructions => "model_instructions",
        }
    }
}

/// What a program reads in a value besides data, wherever the value stands (before `--` and
/// after it). `command::argv` refuses such values at call time.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct OperandRules {
    /// A value starting with `-`, or `(`, `)`, `!`, `,`, is part of an expression (`find`).
    pub expressions: bool,
    /// Which values are read as variable assignments.
    pub assignments: Assignments,
    /// A value starting with `@` is replaced by the contents of the file it names.
    pub response_files: bool,
}

/// Which values a program reads as variable assignments.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum Assignments {
    /// None.
    #[default]
    None,
    /// `name=value`, with `name` an identifier (`awk`).
    Named,
    /// Any value holding `=` (`make`, `dd`).
    Any,
}

impl OperandRules {
    /// Nothing but data.
    const DATA: Self = Self {
        expressions: false,
        assignments: Assignments::None,
        response_files: false,
    };

    /// The rule a value breaks, as the end of a sentence that starts with the argument's
    /// name, or `None`. `prefix` is the template's text before the value in its argv element
    /// (`--opt=`, or empty when the value starts the element).
    pub fn refusal(&self, prefix: &str, value: &str) -> Option<&'static str> {
        let starts = prefix.is_empty();
        if self.expressions
            && starts
            && (value.starts_with('-') || ["(", ")", "!", ","].contains(&value))
        {
            return Some(
                "must not start with '-' or be `(`, `)`, `!` or `,`: the program reads such a \
                 value as part of its expression, even after `--`.",
            );
        }
        if self.response_files && starts && value.starts_with('@') {
            return Some(
                "must not start with '@': the program would read it as a response file (more \
                 arguments, read from a file).",
            );
        }
        match self.assignments {
            Assignments::Any if value.contains('=') && !prefix.contains('=') => {
                Some("must not contain '=': the program would read it as a variable assignment.")
            }
            Assignments::Named if !prefix.contains('=') && names_a_variable(prefix, value) => {
                Some("must not be `name=…`: the program would read it as a variable assignment.")
            }
            _ => None,
        }
    }

    /// Whether any rule applies.
    fn any(self) -> bool {
        self != Self::DATA
    }

    fn add(&mut self, other: Self) {
        self.expressions |= other.expressions;
        self.response_files |= other.response_files;
        self.assignments = match (self.assignments, other.assignments) {
            (Assignments::Any, _) | (_, Assignments::Any) => Assignments::Any,
            (Assignments::Named, _) | (_, Assignments::Named) => Assignments::Named,
            (Assignments::None, Assignments::None) => Assignments::None,
        };
    }
}

/// Whether `prefix` then `value` starts `name=` with `name` an identifier.
fn names_a_variable(prefix: &str, value: &str) -> bool {
    let mut chars = prefix.chars().chain(value.chars());
    let first = chars.next();
    if !first.is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    for c in chars {
        if c == '=' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
    }
    false
}

/// What airlock knows about how a tool's program reads its arguments, decided at load.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Reading {
    /// What the call-time checks refuse beyond a leading dash.
    pub operands: OperandRules,
    /// One sentence for `airlock check`.
    pub summary: String,
    /// The fixed script file an interpreter runs (canonical), which must stay fixed: no tool
    /// may write where it lies.
    pub script: Option<PathBuf>,
}

/// A tool's reading and its risky shapes, in [`Risk::ALL`] order.
pub(super) struct Assessment {
    pub(super) reading: Reading,
    findings: Vec<Finding>,
}

/// One risky shape: the risk, why, and the safe form to write instead.
struct Finding {
    risk: Risk,
    why: String,
    safe: String,
}

impl Assessment {
    /// The risks found.
    #[cfg(test)]
    pub(super) fn risks(&self) -> Vec<Risk> {
        self.findings.iter().map(|finding| finding.risk).collect()
    }
}

/// A risky shape of a tool that the tool does not accept: the rule, the safe form to write
/// instead, and last how to accept the risk.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error(
    "{why}; the safe form: {safe}; only if that is really intended, add accept_risk = [\"{}\"]",
    .risk.as_str()
)]
pub struct Unaccepted {
    risk: Risk,
    why: String,
    safe: String,
}

impl Unaccepted {
    /// The risk that would accept the shape.
    pub fn risk(&self) -> Risk {
        self.risk
    }
}

/// Refuses the tool if a risky shape of it is not accepted: the rule, the safe form to write
/// instead, and last how to accept the risk.
pub(super) fn refuse_unaccepted(
    assessment: &Assessment,
    accepted: &[Risk],
) -> Result<(), Unaccepted> {
    match assessment
        .findings
        .iter()
        .find(|finding| !accepted.contains(&finding.risk))
    {
        Some(Finding { risk, why, safe }) => Err(Unaccepted {
            risk: *risk,
            why: why.clone(),
            safe: safe.clone(),
        }),
        None => Ok(()),
    }
}

/// Looks at a tool: its program (the path as written, and where it resolves), its template,
/// its arguments, and its working directory (where a script file named by a literal is).
pub(super) fn assess(
    program: &Path,
    template: &[Element],
    args: &[ArgSpec],
    workdir: &Path,
) -> Assessment {
    let tool = Tool {
        shown: program.file_name().map_or_else(
            || program.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        ),
        template,
        args,
        workdir,
        input: Input::of(template, args),
    };
    let mut found = Findings::default();
    let mut seen = Seen {
        operands: OperandRules::DATA,
        takes_value: Vec::new(),
        reader: format!("`{}`", tool.shown),
        script: None,
        summaries: Vec::new(),
    };
    for (option, _) in option_values(template, |option| VALUE_RUNNING_OPTIONS.contains(&option)) {
        found.add(
            Risk::Launcher,
            format!("`{option}` runs its value as a command"),
        );
    }
    let names = Names::of(program);
    let matches: Vec<(&Kind, Match)> = PROGRAMS
        .iter()
        .filter_map(|known| names.matching(known).map(|how| (&known.kind, how)))
        .collect();
    for (kind, _) in &matches {
        match kind {
            Kind::Launcher => tool.launcher(&mut found, &mut seen),
            Kind::Interpreter(grammar) => tool.interpreter(grammar, &mut found, &mut seen),
            Kind::Plain(plain) => tool.plain(plain, &mut found, &mut seen),
        }
    }
    if !matches.iter().any(|(_, how)| *how == Match::Exact) {
        tool.unknown(&mut found, &mut seen);
    }
    tool.leading_dashes(&mut found, &seen);
    tool.operands(seen.operands, &mut found);
    if template.iter().any(|e| {
        matches!(e, Element::Value { prefix, suffix, .. }
            if !suffix.is_empty() || (!prefix.is_empty() && !prefix.ends_with('=')))
    }) {
        found.add(
            Risk::EmbeddedPlaceholder,
            "a placeholder is inside a larger token".to_owned(),
        );
    }
    Assessment {
        reading: Reading {
            operands: seen.operands,
            summary: seen.summary(),
            script: seen.script,
        },
        findings: found.sorted(),
    }
}

/// The tool being looked at.
struct Tool<'a> {
    /// The program's file name as written, for messages.
    shown: String,
    template: &'a [Element],
    args: &'a [ArgSpec],
    workdir: &'a Path,
    input: Input,
}

/// What the program's entries in [`PROGRAMS`] tell, gathered as they are looked at.
struct Seen {
    operands: OperandRules,
    /// Options known to take the next element as their value, so a leading dash there is that
    /// value.
    takes_value: Vec<&'static str>,
    /// Who reads the options, for messages (`git log`).
    reader: String,
    /// An interpreter's fixed script file.
    script: Option<PathBuf>,
    summaries: Vec<String>,
}

impl Seen {
    /// The sentence `airlock check` prints.
    fn summary(&self) -> String {
        let mut summary = self.summaries.join("; ");
        if self.operands.expressions {
            summary.push_str(
                "; a value that starts with '-' or is `(`, `)`, `!` or `,` is part of its \
                 expression, even after `--`, and is refused",
            );
        }
        match self.operands.assignments {
            Assignments::Any => {
                summary.push_str("; a value holding '=' is an assignment, and is refused");
            }
            Assignments::Named => {
                summary.push_str("; a value `name=…` is an assignment, and is refused");
            }
            Assignments::None => {}
        }
        if self.operands.response_files {
            summary.push_str("; a value starting with '@' names a response file, and is refused");
        }
        summary
    }
}

impl Tool<'_> {
    fn launcher(&self, found: &mut Findings, seen: &mut Seen) {
        if self.input.any {
            found.add(
                Risk::Launcher,
                "this program runs its arguments as a command".to_owned(),
            );
        }
        seen.summaries
            .push(format!("`{}` runs its arguments as a command", self.shown));
    }

    fn interpreter(&self, grammar: &Grammar, found: &mut Findings, seen: &mut Seen) {
        let shown = &self.shown;
        seen.operands.add(grammar.operands);
        match interpreter(
            grammar,
            shown,
            (self.template, self.args),
            self.input.stdin,
            self.workdir,
        ) {
            Code::NoInput => seen.summaries.push(format!(
                "`{shown}` is a shell or interpreter; it gets no agent input"
            )),
            Code::Fixed(script) => {
                if seen.script.is_none() {
                    seen.script = script_file(&script, self.workdir);
                }
                let values = match grammar.source {
                    Source::ProgramText => "input",
                    Source::ScriptFile | Source::Everything => "arguments, stdin its input",
                };
                seen.summaries.push(format!(
                    "`{shown}` runs the fixed script {script}; values are its {values}"
                ));
            }
            Code::Inline(what) => seen.summaries.push(format!(
                "`{shown}` runs the program the manifest gives it ({what}); values are its input"
            )),
            Code::Reads(why) => {
                found.add_with(
                    Risk::InterpreterCode,
                    format!(
                        "agent input can reach where this shell or interpreter reads code: {why}"
                    ),
                    interpreter_safe_form(grammar),
                );
                seen.summaries
                    .push(format!("`{shown}` reads agent input as code: {why}"));
            }
        }
    }

    fn plain(&self, plain: &Plain, found: &mut Findings, seen: &mut Seen) {
        let (shown, template) = (&self.shown, self.template);
        seen.operands.add(plain.operands);
        seen.takes_value.extend(plain.takes_value);
        let runs_value = |option: &str| {
            plain.runs.contains(&option)
                || short_letters(option)
                    .is_some_and(|letter| letter.len() == 1 && plain.runs_short.contains(letter))
        };
        if let Some((option, _)) = option_values(template, runs_value).first() {
            found.add(
                Risk::Launcher,
                format!(
                    "`{option}` of `{shown}` runs its value as a command, or code or options it \
                     names"
                ),
            );
        }
        // `make -f -`, `curl -K -`: the file is stdin, which an argument fills.
        let from_stdin = template.windows(2).find_map(|pair| match pair {
            [Element::Literal(option), Element::Literal(dash)]
                if dash == "-" && option.starts_with('-') && option != "--" =>
            {
                let last = short_letters(option)
                    .and_then(|letters| letters.chars().last())
                    .map(|c| format!("-{c}"));
                let named = runs_value(option) || last.as_deref().is_some_and(runs_value);
                named.then_some(option)
            }
            _ => None,
        });
        if let Some(option) = from_stdin
            && self.input.stdin
        {
            found.add(
                Risk::Launcher,
                format!(
                    "`{option} -` makes `{shown}` read code or options from its stdin, which an \
                     argument fills"
                ),
            );
        }
        let local = template
            .iter()
            .any(|e| matches!(e, Element::Literal(text) if text == "--force-local"));
        let remote = option_values(template, |option| plain.remote.contains(&option))
            .into_iter()
            .find(|(_, arg)| {
                self.args
                    .get(*arg)
                    .is_some_and(|spec| !matches!(spec.kind, ArgKind::Path(_)))
            });
        if let Some((option, _)) = remote
            && !local
        {
            found.add(
                Risk::Launcher,
                format!(
                    "`{option}` of `{shown}` reads a value `host:file` as a remote archive and \
                     runs a remote shell to reach it (add `--force-local`, or make the argument \
                     a path)"
                ),
            );
        }
        if let Some(subcommands) = plain.subcommands {
            self.subcommand(subcommands, found, seen);
        }
        let runs_following = template.iter().find_map(|e| match e {
            Element::Literal(text) if plain.runs_following.contains(&text.as_str()) => Some(text),
            Element::Literal(_) | Element::Value { .. } => None,
        });
        if let Some(option) = runs_following
            && self.input.any
        {
            found.add(
                Risk::Launcher,
                format!("`{option}` of `{shown}` runs a command, and agent text reaches `{shown}`"),
            );
        }
        if plain.first_is_options && matches!(template.first(), Some(Element::Value { .. })) {
            found.add(
                Risk::LeadingDash,
                format!(
                    "`{shown}` reads its first argument as options even without a leading '-', \
                     and a value stands there"
                ),
            );
        }
        let reads = if plain.operands.expressions {
            "reads starting points, then an expression"
        } else {
            "reads options until `--`, then data"
        };
        seen.summaries.push(format!("{} {reads}", seen.reader));
    }

    /// A git-like program's subcommand: one airlock knows, and its options.
    fn subcommand(&self, subcommands: &Subcommands, found: &mut Findings, seen: &mut Seen) {
        let shown = &self.shown;
        let name = match subcommand(self.template, subcommands.global_values) {
            Subcommand::Named(name) => name,
            Subcommand::Chosen if self.input.any => {
                found.add(
                    Risk::Launcher,
                    format!("a value chooses the subcommand `{shown}` runs"),
                );
                return;
            }
            Subcommand::Chosen | Subcommand::Missing => return,
        };
        seen.reader = format!("`{shown} {name}`");
        let of = |table: &[(&str, &'static [&'static str])]| -> Vec<&'static str> {
            table
                .iter()
                .filter(|(sub, _)| *sub == name)
                .flat_map(|(_, options)| options.iter().copied())
                .collect()
        };
        let runs = of(subcommands.runs);
        if let Some((option, _)) = option_values(self.template, |o| runs.contains(&o)).first() {
            found.add(
                Risk::Launcher,
                format!("`{option}` of {} runs its value as a command", seen.reader),
            );
        }
        seen.takes_value.extend(of(subcommands.takes_value));
        if !subcommands.known.contains(&name) && self.input.agent_text {
            found.add(
                Risk::UnknownProgram,
                format!(
                    "airlock does not know how {} reads its arguments, and agent text reaches \
                     it: it would be checked only for a leading '-'",
                    seen.reader
                ),
            );
        }
    }

    fn unknown(&self, found: &mut Findings, seen: &mut Seen) {
        let shown = &self.shown;
        if !self.input.agent_text {
            seen.summaries.push(format!(
                "`{shown}` is not a program airlock knows; it gets no agent text"
            ));
            return;
        }
        found.add(
            Risk::UnknownProgram,
            format!(
                "airlock does not know how `{shown}` reads its arguments (whether it runs them, \
                 evaluates them as code or expressions, or reads `@file` or `name=value` in \
                 them), and agent text reaches it: it would be checked only for a leading '-'"
            ),
        );
        seen.summaries.push(format!(
            "`{shown}` is not a program airlock knows: values are checked only for a leading \
             '-' where it would read options"
        ));
    }

    /// `allow_leading_dash` where the program reads options, but for the value of an option
    /// known to take one.
    fn leading_dashes(&self, found: &mut Findings, seen: &Seen) {
        let mut previous: Option<&Element> = None;
        for element in self.template {
            if let Some(arg) = leading_dash_arg(element, self.args) {
                let is_a_value = matches!(previous, Some(Element::Literal(option))
                    if seen.takes_value.contains(&option.as_str()));
                if !is_a_value {
                    found.add(Risk::LeadingDash, leading_dash_rule(arg, &seen.reader));
                }
            }
            previous = Some(element);
        }
    }

    /// Agent text reaching operands the program reads as more than data.
    fn operands(&self, operands: OperandRules, found: &mut Findings) {
        let (shown, input) = (&self.shown, &self.input);
        if operands.expressions && input.free_text {
            found.add(
                Risk::ExpressionOperands,
                format!(
                    "`{shown}` reads its arguments as an expression (`-exec`, `-delete`, \
                     `-fprint`, `(`, `!`), even after `--`, and agent text reaches them; at call \
                     time airlock refuses values that start with '-' or are `(`, `)`, `!` or `,`"
                ),
            );
        }
        match operands.assignments {
            Assignments::Any if input.free_text || input.paths => found.add(
                Risk::AssignmentOperands,
                format!(
                    "`{shown}` reads an operand holding '=' as a variable assignment \
                     (`CFLAGS=$(shell id)` runs a command), even after `--`, and agent text \
                     reaches its operands; at call time airlock refuses values holding '='"
                ),
            ),
            Assignments::Named if input.free_text => found.add(
                Risk::AssignmentOperands,
                format!(
                    "`{shown}` reads an operand `name=value` as an assignment, even after `--`, \
                     and agent text reaches its operands; at call time airlock refuses values \
                     of that shape"
                ),
            ),
            Assignments::Any | Assignments::Named | Assignments::None => {}
        }
        if operands.response_files && input.free_text {
            found.add(
                Risk::ResponseFiles,
                format!(
                    "`{shown}` replaces an argument `@file` with the contents of the file (more \
                     arguments, read from any file it can read), even after `--`, and agent \
                     text reaches it; at call time airlock refuses values starting with '@'"
                ),
            );
        }
    }
}

/// The risky shapes found, each risk once with its first reason.
#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, risk: Risk, why: String) {
        self.add_with(risk, why, risk.safe_form().to_owned());
    }

    /// [`Self::add`] with a safe form that fits the program better than the risk's own.
    fn add_with(&mut self, risk: Risk, why: String, safe: String) {
        if !self.0.iter().any(|found| found.risk == risk) {
            self.0.push(Finding { risk, why, safe });
        }
    }

    /// In [`Risk::ALL`] order.
    fn sorted(mut self) -> Vec<Finding> {
        self.0
            .sort_by_key(|found| Risk::ALL.iter().position(|r| *r == found.risk));
        self.0
    }
}

/// The argument of a value that starts an argv element (`{x}`, or `{x}.txt` with
/// `embedded_placeholder`) where options are read, if it lets a leading dash through.
fn leading_dash_arg<'a>(element: &Element, args: &'a [ArgSpec]) -> Option<&'a ArgSpec> {
    let Element::Value {
        arg,
        prefix,
        after_double_dash: false,
        ..
    } = element
    else {
        return None;
    };
    let spec = args.get(*arg)?;
    let allows = match &spec.kind {
        ArgKind::String(rule) => rule.allow_leading_dash,
        ArgKind::Array { items, .. } => items.allow_leading_dash,
        ArgKind::Integer { .. } | ArgKind::Boolean { .. } | ArgKind::Path(_) => false,
    };
    (allows && prefix.is_empty()).then_some(spec)
}

fn leading_dash_rule(arg: &ArgSpec, reader: &str) -> String {
    format!(
        "`{name}` may start with '-' where {reader} reads options, and airlock does not know \
         the option before it to take it as its value: a value such as `--output=FILE` would be \
         an option of its own (put it after `--`, or write `--opt={{{name}}}`)",
        name = arg.name
    )
}

/// How agent input reaches a tool's program.
struct Input {
    /// Any placeholder, or an argument on stdin.
    any: bool,
    /// An argument on stdin.
    stdin: bool,
    /// Text the agent chooses freely in argv or on stdin: a string or list without an `enum`.
    free_text: bool,
    /// A path argument in argv.
    paths: bool,
    /// Free text, a path, or stdin.
    agent_text: bool,
}

impl Input {
    fn of(template: &[Element], args: &[ArgSpec]) -> Self {
        let stdin = args
            .iter()
            .any(|a| matches!(&a.kind, ArgKind::String(rule) if rule.stdin));
        let placed = template.iter().filter_map(|e| match e {
            Element::Value { arg, .. } => args.get(*arg),
            Element::Literal(_) => None,
        });
        let mut free_text = false;
        let mut paths = false;
        let mut any = stdin;
        for spec in placed {
            any = true;
            match &spec.kind {
                ArgKind::String(rule) => free_text |= rule.values.is_none(),
                ArgKind::Array { items, .. } => free_text |= items.values.is_none(),
                ArgKind::Path(_) => paths = true,
                ArgKind::Integer { .. } | ArgKind::Boolean { .. } => {}
            }
        }
        Self {
            any,
            stdin,
            free_text,
            paths,
            agent_text: free_text || paths || stdin,
        }
    }
}

/// Options of the template given a placeholder as their value: `--opt {x}`, `--opt={x}`,
/// `-abc {x}` (the value belongs to the bundle's last letter), `-c{x}`. `is_option` gets the
/// option (`--opt`, or a short bundle `-abc`).
fn option_values(template: &[Element], is_option: impl Fn(&str) -> bool) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut previous: Option<&Element> = None;
    for element in template {
        if let Element::Value { prefix, arg, .. } = element {
            if prefix.is_empty() {
                if let Some(Element::Literal(option)) = previous
                    && option.starts_with('-')
                    && option != "--"
                {
                    let last = short_letters(option)
                        .and_then(|letters| letters.chars().last())
                        .map(|c| format!("-{c}"));
                    if is_option(option) {
                        found.push((option.clone(), *arg));
                    } else if let Some(last) = last.filter(|last| is_option(last)) {
                        found.push((last, *arg));
                    }
                }
            } else {
                let option = prefix.strip_suffix('=').unwrap_or(prefix);
                if is_option(option) {
                    found.push((option.to_owned(), *arg));
                } else if let Some(c) = short_letters(option)
                    .and_then(|letters| letters.chars().find(|c| is_option(&format!("-{c}"))))
                {
                    found.push((format!("-{c}"), *arg));
                }
            }
        }
        previous = Some(element);
    }
    found
}

/// The letters of a short option bundle (`-abc` → `abc`).
fn short_letters(option: &str) -> Option<&str> {
    let letters = option.strip_prefix('-')?;
    (!letters.is_empty()
        && !letters.starts_with('-')
        && letters.bytes().all(|b| b.is_ascii_alphanumeric()))
    .then_some(letters)
}

/// A git-like program's subcommand in a template.
enum Subcommand<'a> {
    /// The first operand is a literal.
    Named(&'a str),
    /// A placeholder comes first.
    Chosen,
    /// There is none.
    Missing,
}

fn subcommand<'a>(template: &'a [Element], global_values: &[&str]) -> Subcommand<'a> {
    let mut elements = template.iter();
    while let Some(element) = elements.next() {
        match element {
            Element::Value { .. } => return Subcommand::Chosen,
            Element::Literal(text) if global_values.contains(&text.as_str()) => {
                if matches!(elements.next(), Some(Element::Value { .. })) {
                    return Subcommand::Chosen;
                }
            }
            Element::Literal(text) if text.starts_with('-') => {}
            Element::Literal(text) => return Subcommand::Named(text),
        }
    }
    Subcommand::Missing
}

/// Where an interpreter's code comes from, as far as a template shows.
enum Code {
    /// No agent input reaches it.
    NoInput,
    /// A fixed script (or program file, or module) comes first; values come after it.
    Fixed(String),
    /// The program text is the operator's, written in the manifest (a literal, or an `enum`
    /// argument that is always given); values come after it. Only where the first operand is
    /// program text (`jq`, `awk`, `sed`): a shell's inline code may run its arguments.
    Inline(String),
    /// Agent input can be code; why.
    Reads(String),
}

/// Walks an interpreter's options the way it would, until its script or program. Anything it
/// does not know is code.
fn interpreter(
    g: &Grammar,
    shown: &str,
    (template, args): (&[Element], &[ArgSpec]),
    stdin: bool,
    workdir: &Path,
) -> Code {
    // An `enum`'s values are the operator's: code chosen among them is the operator's code.
    let agent_value = template.iter().any(|e| match e {
        Element::Value { arg, .. } => !args.get(*arg).is_some_and(operator_chosen),
        Element::Literal(_) => false,
    });
    if !agent_value && !stdin {
        return Code::NoInput;
    }
    if matches!(g.source, Source::Everything) {
        return Code::Reads(format!(
            "`{shown}` reads code from every argument and from its stdin"
        ));
    }
    let program_text = matches!(g.source, Source::ProgramText);
    let mut script: Option<String> = None;
    let mut options = true;
    let mut elements = template.iter();
    while let Some(element) = elements.next() {
        let text = match element {
            Element::Value { prefix, .. } if options && !prefix.is_empty() => {
                return Code::Reads(format!(
                    "a value is given to `{}`, an option of `{shown}`",
                    prefix.trim_end_matches('=')
                ));
            }
            Element::Value {
                arg,
                prefix,
                suffix,
                ..
            } => {
                let chosen = args
                    .get(*arg)
                    .filter(|spec| prefix.is_empty() && suffix.is_empty() && always_chosen(spec));
                return match (program_text, script) {
                    (true, Some(script)) => Code::Fixed(script),
                    (true, None) => match chosen {
                        Some(spec) => {
                            Code::Inline(format!("one of `{}`'s `enum` values", spec.name))
                        }
                        None => Code::Reads("a value would be the program text".to_owned()),
                    },
                    (false, _) => Code::Reads(
                        "a value comes before any fixed script file, so it can be the script or \
                         code"
                            .to_owned(),
                    ),
                };
            }
            Element::Literal(text) => text.as_str(),
        };
        if !options || text == "-" || !text.starts_with('-') {
            return match (program_text, script) {
                (true, Some(script)) => Code::Fixed(script),
                (_, _) if text == "-" => {
                    Code::Reads(format!("`-` makes `{shown}` read its program from stdin"))
                }
                (true, None) => Code::Inline(format!("`{text}`")),
                (false, _) if is_script_file(text, workdir) => Code::Fixed(text.to_owned()),
                (false, _) => Code::Reads(format!(
                    "`{text}` is not a script file that exists, so it can be code"
                )),
            };
        }
        if text == "--" {
            options = false;
            continue;
        }
        if text.starts_with("--") {
            let (name, attached) = match text.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (text, None),
            };
            if g.code_long.contains(&name) {
                return Code::Reads(format!("`{name}` takes code"));
            }
            if g.script_long.contains(&name) {
                let value = match attached {
                    Some(value) => value,
                    None => match elements.next() {
                        Some(Element::Literal(value)) => value.as_str(),
                        _ => return Code::Reads(format!("a value is given to `{name}`")),
                    },
                };
                if !is_script_file(value, workdir) {
                    return Code::Reads(format!(
                        "`{value}` is not a script file that exists, so it can be code"
                    ));
                }
                if !program_text {
                    return Code::Fixed(value.to_owned());
                }
                script = Some(value.to_owned());
                continue;
            }
            if g.value_long.contains(&name) {
                if attached.is_none() && !matches!(elements.next(), Some(Element::Literal(_))) {
                    return Code::Reads(format!("a value is given to `{name}`"));
                }
                continue;
            }
            if g.flags_long.contains(&name) {
                continue;
            }
            return Code::Reads(format!(
                "airlock does not know `{name}` of `{shown}`, so what follows can be code"
            ));
        }
        let letters = text.strip_prefix('-').unwrap_or(text);
        for (at, letter) in letters.char_indices() {
            let rest = letters
                .get(at.saturating_add(letter.len_utf8())..)
                .unwrap_or_default();
            let holds = |what: &str| {
                if letters.chars().count() == 1 {
                    format!("`{text}` {what}")
                } else {
                    format!("`{text}` holds `-{letter}`, which {what}")
                }
            };
            if g.code.contains(letter) {
                return Code::Reads(holds("takes code"));
            }
            if g.stdin_code.contains(letter) {
                return Code::Reads(holds("reads code from stdin"));
            }
            let module = g.script_module.contains(letter);
            if module || g.script_file.contains(letter) {
                let value = if rest.is_empty() {
                    match elements.next() {
                        Some(Element::Literal(value)) => value.as_str(),
                        _ => return Code::Reads(holds("is given a value")),
                    }
                } else {
                    rest
                };
                let fixed = if module {
                    is_module(value)
                } else {
                    is_script_file(value, workdir)
                };
                if !fixed {
                    return Code::Reads(format!(
                        "`{value}` is not a script file that exists, so it can be code"
                    ));
                }
                if !program_text {
                    return Code::Fixed(value.to_owned());
                }
                script = Some(value.to_owned());
                break;
            }
            if g.value.contains(letter) {
                if rest.is_empty() && !matches!(elements.next(), Some(Element::Literal(_)) | None) {
                    return Code::Reads(holds("is given a value"));
                }
                break;
            }
            if g.attached.contains(letter) {
                break;
            }
            if !g.flags.contains(letter) {
                return Code::Reads(format!(
                    "airlock does not know `-{letter}` of `{shown}`, so what follows can be code"
                ));
            }
        }
    }
    match (program_text, script) {
        (true, Some(script)) => Code::Fixed(script),
        _ if stdin => Code::Reads(format!(
            "without a script file, `{shown}` reads its stdin, which an argument fills, as code"
        )),
        _ => Code::Reads(format!("`{shown}` is given no fixed script")),
    }
}

/// What to write instead of letting agent text reach an interpreter's code: its program-file
/// option where it has one (`-f FILE`), or an `enum`.
fn interpreter_safe_form(g: &Grammar) -> String {
    let file_option = g
        .script_file
        .chars()
        .next()
        .map(|letter| format!("-{letter}"))
        .or_else(|| g.script_long.first().map(|long| (*long).to_owned()));
    match (&g.source, file_option) {
        (Source::ProgramText, Some(option)) => format!(
            "`{option} FILE` with a fixed file, or an `enum` of the programs the argument may \
             choose (a program written in `command` is fixed too)"
        ),
        (Source::Everything, _) => {
            "an `enum` of the code the argument may choose (this program reads code from every \
             argument and from its stdin)"
                .to_owned()
        }
        (Source::ProgramText | Source::ScriptFile, _) => {
            Risk::InterpreterCode.safe_form().to_owned()
        }
    }
}

/// Whether every value an argument can give is the operator's: a string or list with an
/// `enum` (a string on stdin is the program's input, not argv).
fn operator_chosen(spec: &ArgSpec) -> bool {
    match &spec.kind {
        ArgKind::String(rule) => rule.values.is_some() && !rule.stdin,
        ArgKind::Array { items, .. } => items.values.is_some(),
        ArgKind::Integer { .. } | ArgKind::Boolean { .. } | ArgKind::Path(_) => false,
    }
}

/// Whether an argument always gives exactly one of the operator's values: a string with an
/// `enum` that is required or has a default (left out, the next value would take its place).
fn always_chosen(spec: &ArgSpec) -> bool {
    matches!(&spec.kind, ArgKind::String(rule) if rule.values.is_some() && !rule.stdin)
        && (spec.required || spec.default.is_some())
}

/// A literal naming a fixed script: an existing regular file (relative to the workdir), not a
/// device or a `/proc` entry (`/dev/stdin` is stdin).
fn is_script_file(text: &str, workdir: &Path) -> bool {
    script_file(text, workdir).is_some()
}

/// The canonical path of the fixed script a literal names, if it is one.
fn script_file(text: &str, workdir: &Path) -> Option<PathBuf> {
    if text.is_empty() || text.starts_with('-') {
        return None;
    }
    std::fs::canonicalize(workdir.join(text))
        .ok()
        .filter(|real| {
            !["/dev", "/proc", "/sys"]
                .iter()
                .any(|tree| real.starts_with(tree))
                && real.is_file()
        })
}

/// A literal naming a module (`json.tool`).
fn is_module(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}
