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

use super::checked::{ArgKind, ArgSpec, Element};

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
}

impl Risk {
    /// Every risk, in the order `airlock check` reports them.
    pub const ALL: [Self; 9] = [
        Self::InterpreterCode,
        Self::Launcher,
        Self::UnknownProgram,
        Self::ExpressionOperands,
        Self::AssignmentOperands,
        Self::ResponseFiles,
        Self::LeadingDash,
        Self::EmbeddedPlaceholder,
        Self::Unsandboxed,
    ];

    /// The risk a manifest names in `accept_risk`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|risk| risk.as_str() == name)
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
    findings: Vec<(Risk, String)>,
}

impl Assessment {
    /// The risks found.
    #[cfg(test)]
    pub(super) fn risks(&self) -> Vec<Risk> {
        self.findings.iter().map(|(risk, _)| *risk).collect()
    }
}

/// Refuses the tool if a risky shape of it is not accepted: the rule, then how to accept it.
pub(super) fn refuse_unaccepted(assessment: &Assessment, accepted: &[Risk]) -> Result<(), String> {
    match assessment
        .findings
        .iter()
        .find(|(risk, _)| !accepted.contains(risk))
    {
        Some((risk, why)) => Err(format!(
            "{why}; if that is really intended, add accept_risk = [\"{}\"]",
            risk.as_str()
        )),
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
            self.template,
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
            Code::Reads(why) => {
                found.add(
                    Risk::InterpreterCode,
                    format!(
                        "agent input can reach where this shell or interpreter reads code: {why}"
                    ),
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
struct Findings(Vec<(Risk, String)>);

impl Findings {
    fn add(&mut self, risk: Risk, why: String) {
        if !self.0.iter().any(|(found, _)| *found == risk) {
            self.0.push((risk, why));
        }
    }

    /// In [`Risk::ALL`] order.
    fn sorted(mut self) -> Vec<(Risk, String)> {
        self.0
            .sort_by_key(|(risk, _)| Risk::ALL.iter().position(|r| r == risk));
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
    /// Agent input can be code; why.
    Reads(String),
}

/// Walks an interpreter's options the way it would, until its script or program. Anything it
/// does not know is code.
fn interpreter(
    g: &Grammar,
    shown: &str,
    template: &[Element],
    stdin: bool,
    workdir: &Path,
) -> Code {
    let any_value = template.iter().any(|e| matches!(e, Element::Value { .. }));
    if !any_value && !stdin {
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
            Element::Value { .. } => {
                return match (program_text, script) {
                    (true, Some(script)) => Code::Fixed(script),
                    (true, None) => Code::Reads("a value would be the program text".to_owned()),
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
                (true, None) => {
                    Code::Reads("the program is inline text, not a fixed script file".to_owned())
                }
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

/// The names a program goes by: the file name as written and the one its path resolves to,
/// lowercased, without `.exe`; and each without a version suffix (`python3.11` → `python`,
/// `clang-15` → `clang`).
struct Names {
    exact: Vec<String>,
    trimmed: Vec<String>,
}

impl Names {
    fn of(program: &Path) -> Self {
        let mut exact = Vec::new();
        let mut trimmed = Vec::new();
        let resolved = std::fs::canonicalize(program).ok();
        for path in [Some(program), resolved.as_deref()].into_iter().flatten() {
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                let name = name.to_ascii_lowercase();
                let name = name.strip_suffix(".exe").unwrap_or(&name).to_owned();
                let base = name
                    .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
                    .trim_end_matches('-');
                trimmed.push(base.to_owned());
                exact.push(name);
            }
        }
        Self { exact, trimmed }
    }

    /// How the program matches `known`, if it does. An exact name is a match. A name without
    /// its version suffix (`python3.11`, `gcc-12`) is one too, except for a program airlock
    /// reads as taking data only: `cat2` is not `cat`. A name with a target prefix
    /// (`arm-none-eabi-gcc`) adds the rules of a program that reads operands as more than data,
    /// but does not make the program known: `my-as` may be anything.
    fn matching(&self, known: &Program) -> Option<Match> {
        let names = known.names;
        if names
            .iter()
            .any(|name| self.exact.iter().any(|n| n == name))
        {
            return Some(Match::Exact);
        }
        let adds_checks = match &known.kind {
            Kind::Plain(plain) => plain.operands.any(),
            Kind::Interpreter(_) | Kind::Launcher => true,
        };
        if !adds_checks {
            return None;
        }
        if names
            .iter()
            .any(|name| self.trimmed.iter().any(|n| n == name))
        {
            return Some(Match::Exact);
        }
        let prefixed = |name: &&str| {
            self.exact
                .iter()
                .chain(&self.trimmed)
                .any(|n| n.strip_suffix(name).is_some_and(|head| head.ends_with('-')))
        };
        (matches!(&known.kind, Kind::Plain(_)) && names.iter().any(prefixed)).then_some(Match::Near)
    }
}

/// How a program matched a known one.
#[derive(Clone, Copy, Eq, PartialEq)]
enum Match {
    /// By name (or, for an interpreter or a launcher, by name without a version suffix).
    Exact,
    /// By a near name: its rules apply, but the program is not known.
    Near,
}

/// A program airlock knows.
struct Program {
    names: &'static [&'static str],
    kind: Kind,
}

/// How a known program reads its arguments.
enum Kind {
    /// Options until `--` (or its first operand), then operands; operands are data unless
    /// `operands` says otherwise.
    Plain(Plain),
    /// A shell or interpreter: it reads code.
    Interpreter(Grammar),
    /// It runs its arguments as a command.
    Launcher,
}

struct Plain {
    /// What it reads in operands besides data.
    operands: OperandRules,
    /// Its options (long, or one letter) whose value is run as a command or read as more
    /// options.
    runs: &'static [&'static str],
    /// Letters of its short options whose value is run (bundled too: `-xI {x}`).
    runs_short: &'static str,
    /// Options whose value, unless it is a path, can name a remote file (`host:file`) that the
    /// program reaches by running a remote shell (`tar -f`).
    remote: &'static [&'static str],
    /// Options after which the following elements are a command (`find -exec … ;`).
    runs_following: &'static [&'static str],
    /// Options known to take the next element as their value, whatever it starts with.
    takes_value: &'static [&'static str],
    /// Whether its first argument is options even without a leading `-` (`tar xf`).
    first_is_options: bool,
    /// Its subcommands, if it has them.
    subcommands: Option<&'static Subcommands>,
}

/// A program with subcommands (git).
struct Subcommands {
    /// Options before the subcommand that take the next element (`git -C dir`).
    global_values: &'static [&'static str],
    /// Subcommands whose operands are data (revisions, paths, text) and that run nothing
    /// their arguments name.
    known: &'static [&'static str],
    /// Per subcommand, options whose value is run as a command.
    runs: &'static [(&'static str, &'static [&'static str])],
    /// Per subcommand, options known to take the next element as their value.
    takes_value: &'static [(&'static str, &'static [&'static str])],
}

/// How an interpreter reads its options, as far as airlock relies on it. Option letters and
/// names not listed here count as code.
struct Grammar {
    /// Where its code comes from.
    source: Source,
    /// Letters whose value (the rest of the element, or the next) is code.
    code: &'static str,
    /// Letters that make it read code from stdin.
    stdin_code: &'static str,
    /// Letters whose value is a script file to run.
    script_file: &'static str,
    /// Letters whose value is a module to run (`python -m json.tool`).
    script_module: &'static str,
    /// Letters that take a value (the rest of the element, or the next) that is not code.
    value: &'static str,
    /// Letters that take the rest of the element, if any, as their value.
    attached: &'static str,
    /// Letters without a value.
    flags: &'static str,
    /// Long options whose value is code.
    code_long: &'static [&'static str],
    /// Long options whose value is a script file.
    script_long: &'static [&'static str],
    /// Long options that take a value that is not code.
    value_long: &'static [&'static str],
    /// Long options without a value.
    flags_long: &'static [&'static str],
    /// What it reads in operands besides data.
    operands: OperandRules,
}

/// Where an interpreter reads its program.
enum Source {
    /// The first operand is a script file; without one, stdin is the script.
    ScriptFile,
    /// The first operand is program text unless an option named a program file; stdin and
    /// the other operands are input.
    ProgramText,
    /// Every argument and stdin may be code (`sqlite3`, `ed`, `gdb`, `vim`, `dc`).
    Everything,
}

const PLAIN: Plain = Plain {
    operands: OperandRules::DATA,
    runs: &[],
    runs_short: "",
    remote: &[],
    runs_following: &[],
    takes_value: &[],
    first_is_options: false,
    subcommands: None,
};

const NO_GRAMMAR: Grammar = Grammar {
    source: Source::Everything,
    code: "",
    stdin_code: "",
    script_file: "",
    script_module: "",
    value: "",
    attached: "",
    flags: "",
    code_long: &[],
    script_long: &[],
    value_long: &[],
    flags_long: &[],
    operands: OperandRules::DATA,
};

const SHELL: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "c",
    stdin_code: "is",
    value: "oO",
    flags: "abefhkmnptuvxBCEHPTlr",
    code_long: &["--rcfile", "--init-file", "--command"],
    flags_long: &[
        "--norc",
        "--noprofile",
        "--posix",
        "--noediting",
        "--restricted",
        "--login",
        "--verbose",
    ],
    ..NO_GRAMMAR
};

const PYTHON: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "c",
    stdin_code: "i",
    script_module: "m",
    value: "WXQ",
    flags: "bBdEIOPqsSuvxRh",
    ..NO_GRAMMAR
};

const PERL: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "eE",
    value: "IMm",
    attached: "ixdDCF",
    flags: "acnpsStTUwWXlvh0123456789",
    ..NO_GRAMMAR
};

const RUBY: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "e",
    value: "IrCE",
    attached: "ixFKT0W",
    flags: "acdlnpsSvwyh",
    ..NO_GRAMMAR
};

const NODE: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "ep",
    stdin_code: "i",
    value: "r",
    flags: "cvh",
    code_long: &["--eval", "--print", "--interactive"],
    value_long: &["--require", "--import", "--loader", "--experimental-loader"],
    flags_long: &[
        "--no-warnings",
        "--no-deprecation",
        "--enable-source-maps",
        "--trace-warnings",
    ],
    ..NO_GRAMMAR
};

const PHP: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "rBREdz",
    stdin_code: "a",
    script_file: "f",
    value: "c",
    flags: "nqhvlsHwe",
    ..NO_GRAMMAR
};

const LUA: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "e",
    stdin_code: "i",
    value: "l",
    flags: "vEW",
    ..NO_GRAMMAR
};

const TCL: Grammar = Grammar {
    source: Source::ScriptFile,
    ..NO_GRAMMAR
};

const EXPECT: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "c",
    stdin_code: "i",
    script_file: "f",
    value: "D",
    flags: "dnNv",
    ..NO_GRAMMAR
};

const RSCRIPT: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "e",
    flags_long: &[
        "--vanilla",
        "--no-environ",
        "--no-site-file",
        "--no-init-file",
        "--verbose",
    ],
    ..NO_GRAMMAR
};

const JULIA: Grammar = Grammar {
    source: Source::ScriptFile,
    code: "eE",
    stdin_code: "i",
    value: "L",
    flags: "qhv",
    ..NO_GRAMMAR
};

const AWK: Grammar = Grammar {
    source: Source::ProgramText,
    code: "el",
    script_file: "fiE",
    value: "FvW",
    attached: "dDopL",
    flags: "bcCgMnNOPrsStVh",
    code_long: &["--source", "--load"],
    script_long: &["--file", "--include", "--exec"],
    value_long: &["--field-separator", "--assign"],
    flags_long: &["--sandbox", "--posix", "--traditional", "--re-interval"],
    operands: OperandRules {
        assignments: Assignments::Named,
        ..OperandRules::DATA
    },
    ..NO_GRAMMAR
};

const SED: Grammar = Grammar {
    source: Source::ProgramText,
    code: "e",
    script_file: "f",
    value: "l",
    attached: "i",
    flags: "nrEsuzh",
    code_long: &["--expression"],
    script_long: &["--file"],
    value_long: &["--line-length"],
    flags_long: &[
        "--quiet",
        "--silent",
        "--regexp-extended",
        "--separate",
        "--unbuffered",
        "--null-data",
        "--posix",
        "--sandbox",
        "--debug",
        "--in-place",
        "--follow-symlinks",
    ],
    ..NO_GRAMMAR
};

const JQ: Grammar = Grammar {
    source: Source::ProgramText,
    script_file: "f",
    value: "L",
    flags: "nrjacCMSeRhVs",
    script_long: &["--from-file"],
    value_long: &["--indent"],
    flags_long: &[
        "--null-input",
        "--raw-output",
        "--join-output",
        "--ascii-output",
        "--compact-output",
        "--color-output",
        "--monochrome-output",
        "--sort-keys",
        "--exit-status",
        "--raw-input",
        "--slurp",
        "--tab",
        "--seq",
        "--stream",
    ],
    ..NO_GRAMMAR
};

/// git's subcommands that read revisions, paths and text, and run nothing their arguments
/// name. Others (`clone`, `fetch`, `submodule`, `bisect`, `rebase`, `difftool`, `config`, …)
/// are not known: they run helpers, hooks or configured commands.
#[rustfmt::skip]
const GIT: Subcommands = Subcommands {
    global_values: &[
        "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
        "--attr-source",
    ],
    known: &[
        "log", "show", "status", "diff", "grep", "blame", "annotate", "ls-files", "ls-tree",
        "rev-parse", "rev-list", "describe", "cat-file", "shortlog", "show-ref", "for-each-ref",
        "name-rev", "diff-tree", "diff-files", "diff-index", "merge-base", "count-objects",
        "whatchanged", "show-branch", "cherry", "range-diff", "check-ignore", "check-attr",
        "version",
    ],
    runs: &[
        ("clone", &["-u", "--upload-pack"]),
        ("ls-remote", &["-u", "--upload-pack"]),
        ("grep", &["-O", "--open-files-in-pager"]),
        ("rebase", &["-x", "--exec"]),
        ("difftool", &["-x", "--extcmd"]),
    ],
    takes_value: &[("grep", &["-e"])],
};

/// Every program airlock knows. A program not listed that gets agent text needs
/// `accept_risk = ["unknown_program"]`.
#[rustfmt::skip]
const PROGRAMS: &[Program] = &[
    // Options until `--`, then data: files, patterns, text.
    Program {
        names: &[
            "cat", "head", "tail", "wc", "ls", "stat", "du", "df", "file", "nl", "od", "tac", "rev",
            "fold", "fmt", "paste", "join", "column", "expand", "unexpand", "cut", "tr", "uniq",
            "comm", "diff", "cmp", "shuf", "tsort", "md5sum", "sha1sum", "sha224sum", "sha256sum",
            "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base32", "base64", "basenc",
            "basename", "dirname", "realpath", "readlink", "pwd", "echo", "printf", "true", "false",
            "sleep", "seq", "numfmt", "factor", "whoami", "uname", "touch", "mkdir", "rmdir", "cp",
            "mv", "rm", "ln", "chmod", "tee", "truncate", "gzip", "gunzip", "zcat", "bzip2",
            "bunzip2", "bzcat", "xz", "unxz", "xzcat",
        ],
        kind: Kind::Plain(PLAIN),
    },
    Program {
        names: &["grep", "egrep", "fgrep"],
        kind: Kind::Plain(Plain { takes_value: &["-e", "--regexp"], ..PLAIN }),
    },
    Program {
        names: &["rg"],
        kind: Kind::Plain(Plain { runs: &["--pre"], takes_value: &["-e", "--regexp"], ..PLAIN }),
    },
    Program {
        names: &["sort"],
        kind: Kind::Plain(Plain { runs: &["--compress-program"], ..PLAIN }),
    },
    Program {
        names: &["tar"],
        kind: Kind::Plain(Plain {
            runs: &[
                "--use-compress-program", "--to-command", "--checkpoint-action", "--info-script",
                "--new-volume-script", "--rsh-command", "--rmt-command",
            ],
            runs_short: "IF",
            remote: &["-f", "--file"],
            first_is_options: true,
            ..PLAIN
        }),
    },
    Program {
        names: &["curl"],
        kind: Kind::Plain(Plain { runs: &["--config"], runs_short: "K", ..PLAIN }),
    },
    Program {
        names: &["git"],
        kind: Kind::Plain(Plain {
            runs: &["-c", "--config-env", "--exec-path"],
            subcommands: Some(&GIT),
            ..PLAIN
        }),
    },
    // Operands read as more than data.
    Program {
        names: &["find", "gfind", "bfs"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { expressions: true, ..OperandRules::DATA },
            runs_following: &["-exec", "-execdir", "-ok", "-okdir"],
            ..PLAIN
        }),
    },
    Program {
        names: &["make", "gmake", "bmake", "pmake", "remake"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            runs: &[
                "-f", "--file", "--makefile", "-C", "--directory", "--eval", "-I", "--include-dir",
            ],
            ..PLAIN
        }),
    },
    Program {
        names: &["rake"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            runs: &[
                "-f", "--rakefile", "-e", "--execute", "-p", "--execute-print", "-E",
                "--execute-continue", "-I", "--libdir", "-r", "--require", "-C", "--directory",
                "-R", "--rakelibdir",
            ],
            ..PLAIN
        }),
    },
    Program {
        names: &["scons"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            runs: &[
                "-f", "--file", "--makefile", "--sconstruct", "-C", "--directory", "-I",
                "--include-dir", "--site-dir",
            ],
            ..PLAIN
        }),
    },
    Program {
        names: &["dd"],
        kind: Kind::Plain(Plain {
            operands: OperandRules { assignments: Assignments::Any, ..OperandRules::DATA },
            ..PLAIN
        }),
    },
    Program {
        names: &[
            "ar", "as", "ld", "gold", "ld.bfd", "ld.gold", "ld.lld", "lld", "objdump", "objcopy",
            "nm", "readelf", "strings", "strip", "size", "addr2line", "c++filt", "cxxfilt",
            "ranlib", "elfedit", "gprof", "windres", "dlltool", "gcc", "g++", "cc", "c++", "cpp",
            "gfortran", "gccgo", "gdc", "clang", "clang++", "clang-cl", "clang-cpp", "rustc",
            "swiftc", "javac", "java", "jar", "javadoc", "jlink", "jpackage", "jdeps", "kotlinc",
            "nvcc", "7z", "7za", "7zr", "llvm-objdump", "llvm-ar", "llvm-nm", "llvm-readelf",
            "llvm-readobj", "llvm-strings", "llvm-strip", "llvm-objcopy", "llvm-size",
            "llvm-symbolizer", "llvm-addr2line", "llvm-cxxfilt", "llvm-ranlib", "llvm-link",
            "llvm-as", "llvm-dis", "llvm-mc", "llc", "opt", "wasm-ld", "ld64.lld", "lld-link",
        ],
        kind: Kind::Plain(Plain {
            operands: OperandRules { response_files: true, ..OperandRules::DATA },
            ..PLAIN
        }),
    },
    // Shells and interpreters.
    Program {
        names: &[
            "sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "ash", "rbash", "oksh", "posh",
        ],
        kind: Kind::Interpreter(SHELL),
    },
    Program { names: &["python", "pypy"], kind: Kind::Interpreter(PYTHON) },
    Program { names: &["perl"], kind: Kind::Interpreter(PERL) },
    Program { names: &["ruby"], kind: Kind::Interpreter(RUBY) },
    Program { names: &["node", "nodejs"], kind: Kind::Interpreter(NODE) },
    Program { names: &["php"], kind: Kind::Interpreter(PHP) },
    Program { names: &["lua", "luajit"], kind: Kind::Interpreter(LUA) },
    Program { names: &["tclsh", "wish"], kind: Kind::Interpreter(TCL) },
    Program { names: &["expect"], kind: Kind::Interpreter(EXPECT) },
    Program { names: &["rscript"], kind: Kind::Interpreter(RSCRIPT) },
    Program { names: &["julia"], kind: Kind::Interpreter(JULIA) },
    Program {
        names: &["awk", "gawk", "mawk", "nawk", "original-awk"],
        kind: Kind::Interpreter(AWK),
    },
    Program { names: &["sed", "gsed"], kind: Kind::Interpreter(SED) },
    Program { names: &["jq", "gojq", "jaq"], kind: Kind::Interpreter(JQ) },
    Program {
        names: &[
            "sqlite3", "sqlite", "ed", "red", "ex", "vi", "vim", "nvim", "view", "vimdiff", "gvim",
            "emacs", "emacsclient", "gdb", "lldb", "dc", "bc", "m4", "irb", "jshell", "deno",
            "bun", "fish", "csh", "tcsh", "elvish", "nu", "xonsh", "rc", "es", "pwsh",
            "powershell", "cmd", "busybox", "toybox", "osascript", "r", "guile", "racket", "sbcl",
            "clisp", "ocaml", "ghci", "runghc", "runhaskell", "erl", "escript", "elixir", "iex",
            "swipl", "gnuplot", "octave", "maxima", "tex", "latex", "pdflatex", "xelatex",
            "lualatex", "luatex", "groovy", "scala", "kotlin", "clojure", "yq", "mysql", "psql",
            "redis-cli", "mongo", "mongosh",
        ],
        kind: Kind::Interpreter(NO_GRAMMAR),
    },
    // Launchers.
    Program {
        names: &[
            "env", "sudo", "doas", "su", "xargs", "nice", "ionice", "nohup", "timeout", "stdbuf",
            "strace", "ltrace", "chroot", "unshare", "nsenter", "setsid", "flock", "watch", "ssh",
            "parallel", "runuser", "pkexec", "systemd-run", "taskset", "chrt", "prlimit", "setpriv",
            "time", "script", "capsh", "firejail", "bwrap", "docker", "podman", "kubectl",
            "setarch", "linux32", "linux64", "i386", "x86_64", "numactl", "cgexec", "runcon", "sg",
            "newgrp", "unbuffer", "catchsegv", "valgrind", "perf", "chpst", "torsocks",
            "proxychains", "proxychains4", "faketime", "fakeroot", "fakechroot", "nix-shell", "npx",
            "pnpx", "uvx", "pipx", "bunx", "sshpass", "rlwrap", "dbus-run-session", "xvfb-run",
            "eatmydata", "nocache", "daemonize", "start-stop-daemon", "machinectl", "lxc-attach",
            "systemd-nspawn", "nsjail", "minijail0", "tmux", "screen", "at", "batch", "entr",
            "nerdctl", "flatpak", "snap", "rsh", "mosh",
        ],
        kind: Kind::Launcher,
    },
];

/// Long options, of any program, whose value is run as a command (or names one).
#[rustfmt::skip]
const VALUE_RUNNING_OPTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "--to-command", "--use-compress-program",
    "--compress-program", "--checkpoint-action", "--info-script", "--new-volume-script",
    "--rsh-command", "--rmt-command", "--upload-pack", "--receive-pack", "--exec",
    "--config-env", "--exec-path", "--pager", "--editor", "--pre", "--open-files-in-pager",
    "--extcmd", "--rsync-path", "--rsh",
];

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::manifest::checked::{PathKind, PathRule, StringRule};

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

    /// A script file that exists, in a directory of its own.
    fn scripts() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("airlock-risk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["report.py", "script.sh", "prog.awk", "filter.jq", "run.pl"] {
            std::fs::write(dir.join(name), "").unwrap();
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
        refuse_unaccepted(&assess(Path::new(program), template, args, &scripts()), &[]).unwrap_err()
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

    /// Issue 15, item 2: agent text on stdin to a shell or interpreter is code unless a fixed
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

    /// Issue 15, item 2: `perl -le`, `bash -ic`, `python3 -Sc` hold their code flag.
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

    /// Issue 15, item 2: `perl -I /usr/share/perl5 -le {x}` took the option's value for a
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

    /// Issue 15, item 2: options that run their value, and launchers the list missed.
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

    /// Issue 15, item 2: interpreters that read code from any argument or from stdin.
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
            found("/usr/bin/jq", &[lit(".foo"), value()]),
            [Risk::InterpreterCode]
        );
        assert_eq!(
            found("/usr/bin/awk", &[value(), lit("file")]),
            [Risk::InterpreterCode, Risk::AssignmentOperands]
        );
    }

    /// Issue 15, item 2: a program airlock does not know needs its risk accepted before agent
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

    /// Issue 15, item 1: find, make, awk and `@file` readers given agent text.
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

    /// Issue 15, item 3: `allow_leading_dash` where the program reads options needs its risk,
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

    /// Issue 15, item 1: the call-time rules, on whole values and inside elements.
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
}
