//! What a finished command's reply says: how it ended, and the output its manifest entry asks
//! for (`stderr`: separate, merge, tail or drop), redacted, within the reply's cap, every cut
//! marked.
//!
//! It trusts the checked manifest and nothing of the output. The kept bytes go through the
//! server's one [`Redactor`] (which withholds the bytes beside a cut airlock made), are decoded
//! lossily, and are counted as they will be sent: JSON escapes a control byte into six bytes,
//! so the cap (`max_output_bytes`) counts escaped bytes, and a reply never holds more output
//! than that, whatever the command printed. Fixed notes (the status line, section titles, cut
//! marks, the sandbox's limits) come on top; they are a few hundred bytes.

use std::borrow::Cow;

use crate::limits::SANDBOX_DENIALS_PER_CALL;
use crate::manifest::CommandTool;
use crate::manifest::checked::StderrMode;
use crate::process::{Exit, Finished, Output, SandboxEvents, StopReason};
use crate::sandbox::destinations::Refusal;
use crate::sandbox::proxy::NetworkRecord;
use crate::secrets::{Cut, MARKER, Piece, Redactor};
use airlock::{
    ConnectionNote, DenialKind, DenialNote, DenialSource, DenialsNote, NetworkNote, RunNote,
    ToolOutput,
};

/// The result the model sees.
pub(super) fn report(tool: &CommandTool, redactor: &Redactor, finished: &Finished) -> ToolOutput {
    let budget = tool.max_output_bytes;
    let exit = finished.exit;
    let stopped = matches!(exit, Exit::Stopped(_));
    let success = matches!(exit, Exit::Code(code) if tool.success_codes.contains(&code));
    let note = run_note(tool, exit, &finished.sandbox);
    let note = if tool
        .sandbox
        .as_ref()
        .is_some_and(|sandbox| sandbox.policy().network)
    {
        note.with_network(network_note(redactor, &finished.network))
    } else {
        note
    };
    let note = note.with_denials(denials_note(redactor, finished));
    let events = join_lines(
        join_lines(
            sandbox_events(tool, &finished.sandbox),
            network_events(redactor, &finished.network),
        ),
        crate::sandbox::denials::result_line(&finished.denials, |object| {
            redactor.redact_name(object)
        }),
    );
    let (stdout, stderr) = (&finished.stdout, &finished.stderr);
    let mut sections = match tool.stderr {
        StderrMode::Separate => vec![
            Section::new("stdout".into(), stdout, budget.div_ceil(2)),
            Section::new("stderr".into(), stderr, budget / 2),
        ],
        StderrMode::Merge => vec![Section::new(
            "output (stdout and stderr)".into(),
            stdout,
            budget,
        )],
        StderrMode::Tail(bytes) => {
            let bytes = bytes.get().min(budget);
            vec![
                Section::new("stdout".into(), stdout, budget.saturating_sub(bytes)),
                Section::new(
                    format!("stderr (last {bytes} bytes at most)").into(),
                    stderr,
                    bytes,
                ),
            ]
        }
        // The launcher's line saying which step failed is the one stderr a dropping tool shows.
        StderrMode::Drop if exit == Exit::SandboxFailed => vec![
            Section::new("stdout".into(), stdout, budget),
            Section::new("stderr".into(), stderr, 0),
        ],
        StderrMode::Drop => vec![Section::new("stdout".into(), stdout, budget)],
    };
    // The first section is the reply's main stream: stdout, or both merged.
    if let Some(first) = sections.first_mut() {
        first.main = true;
    }
    for section in &mut sections {
        section.measure(redactor, stopped);
    }
    share(&mut sections, budget);
    let shown: Vec<(&Section<'_>, Marks)> = sections
        .iter()
        .filter_map(|section| Some((section, section.marks(redactor.window(), budget)?)))
        .collect();
    let layout = Layout {
        redactor,
        sections: &shown,
    };
    if success {
        return match (shown.as_slice(), events) {
            // The common case: the output alone, as the command printed it.
            ([(only, marks)], None) if only.main => ToolOutput::text(layout.untitled(only, marks)),
            (_, events) => ToolOutput::text(layout.join(None, events)),
        }
        .noting(note);
    }
    let resources = tool
        .sandbox
        .as_ref()
        .map(|sandbox| sandbox.policy().resources);
    let status = match exit {
        Exit::SandboxFailed => {
            "The sandbox could not be set up, so the command did not run.".to_owned()
        }
        Exit::Signal(SIGXCPU) if let Some(limits) = resources => format!(
            "The command passed the sandbox's CPU limit of {} s per process and was stopped \
             (signal {SIGXCPU}).",
            limits.cpu_seconds
        ),
        Exit::Signal(SIGXFSZ) if let Some(limits) = resources => format!(
            "The command passed the sandbox's file size limit of {} MiB and was stopped \
             (signal {SIGXFSZ}).",
            limits.file_size_mib
        ),
        Exit::Code(code) => format!("The command failed with exit status {code}."),
        Exit::Signal(signal) => format!("The command was killed by signal {signal}."),
        Exit::Stopped(StopReason::DiskBytes) if let Some(limits) = resources => format!(
            "The command passed the sandbox's disk budget of {} MiB for one call and was \
             stopped; what it wrote stays.",
            limits.disk_mib
        ),
        Exit::Stopped(StopReason::DiskFiles) if let Some(limits) = resources => format!(
            "The command passed the sandbox's budget of {} new files for one call and was \
             stopped; what it wrote stays.",
            limits.disk_files
        ),
        Exit::Stopped(StopReason::NetworkBytes(key)) if let Some(limits) = resources => {
            let (way, mib) = if key == "network_up_mib" {
                ("sent", limits.network_up_mib)
            } else {
                ("received", limits.network_down_mib)
            };
            format!(
                "The command {way} more than the sandbox's network budget of {mib} MiB for one \
                 call and was stopped; its connections were cut."
            )
        }
        Exit::Stopped(_) => format!(
            "The command's output passed the limit of {budget} bytes, so it was stopped; the \
             output below is truncated."
        ),
    };
    // A limit the kernel enforces shows up as an error of the program's own (EAGAIN from
    // fork, ENOMEM, EACCES): name them all so the model can tell.
    let sandbox = resources.map(|limits| {
        format!(
            "(The command runs in a sandbox: {}; files, programs and network outside the \
             tool's policy are refused.)",
            limits.describe()
        )
    });
    let footer = match (events, sandbox) {
        (Some(events), Some(sandbox)) => Some(format!("{events}\n{sandbox}")),
        (events, sandbox) => events.or(sandbox),
    };
    ToolOutput::error(layout.join(Some(status), footer)).noting(note)
}

/// What the sandbox refused or undid during the call, for the model: the kernel's budgets
/// show up to a program only as its own errors, and removed paths not at all.
fn sandbox_events(tool: &CommandTool, events: &SandboxEvents) -> Option<String> {
    let limits = tool.sandbox.as_ref()?.policy().resources;
    let mut lines = Vec::new();
    if events.oom_kills > 0 {
        lines.push(format!(
            "The call reached the sandbox's memory budget of {} MiB for all its processes \
             together: the kernel ended {} of them.",
            limits.call_memory_mib, events.oom_kills
        ));
    }
    if events.forks_refused > 0 {
        lines.push(format!(
            "The call reached the sandbox's limit of {} processes: {} process starts were \
             refused.",
            limits.processes, events.forks_refused
        ));
    }
    if events.later_code_removed > 0 {
        lines.push(format!(
            "airlock removed {} path(s) this call created that make other programs run code \
             later (.git, .envrc, .vscode, .mcp.json and the like, anywhere in a writable \
             directory): this tool may not create them.",
            events.later_code_removed
        ));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The proxy's refusals, one line per destination (the first few), so the model can
/// correct itself: "network: api.example.com:443 is not allowed for this tool".
fn network_events(redactor: &Redactor, network: &NetworkRecord) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for attempt in &network.attempts {
        let Some(refusal) = attempt.refusal else {
            continue;
        };
        // A name can carry a secret the command put there: redacted like its output.
        let line = format!(
            "network: {} {}",
            redactor.redact_name(&attempt.destination),
            refusal.sentence()
        );
        if !lines.contains(&line) && lines.len() < MAX_NETWORK_LINES {
            lines.push(line);
        }
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Refusal lines a result shows at most.
const MAX_NETWORK_LINES: usize = 8;

fn join_lines(first: Option<String>, second: Option<String>) -> Option<String> {
    match (first, second) {
        (Some(first), Some(second)) => Some(format!("{first}\n{second}")),
        (first, second) => first.or(second),
    }
}

/// The audit record's `denials`: what the kernel reported, then the proxy's refusals of a
/// destination the manifest could list, each with the key that would allow it; objects
/// redacted like the output, at most `SANDBOX_DENIALS_PER_CALL` kept.
fn denials_note(redactor: &Redactor, finished: &Finished) -> DenialsNote {
    let mut note = finished.denials.note(|object| redactor.redact_name(object));
    for attempt in &finished.network.attempts {
        let destination = redactor.redact_name(&attempt.destination);
        let allow = match (attempt.refusal, attempt.address) {
            (Some(Refusal::NotListed), _) => format!("network = [\"{destination}\"]"),
            (Some(Refusal::InsideAddress), Some(address))
                if let Some((_, port)) = destination.rsplit_once(':') =>
            {
                let address = match address {
                    std::net::IpAddr::V4(address) => address.to_string(),
                    std::net::IpAddr::V6(address) => format!("[{address}]"),
                };
                format!(
                    "network = [\"{address}:{port}\"] (an inside address is reached only when \
                     named by address)"
                )
            }
            (Some(Refusal::InsideAddress), _) => {
                "network = [\"ADDRESS:PORT\"] (an inside address is reached only when named by \
                 address)"
                    .to_owned()
            }
            (Some(Refusal::ConnectionBudget), _) => {
                "resources.network_connections (the call's budget of connections)".to_owned()
            }
            // Not the sandbox's refusal: a name that did not resolve, a destination that did
            // not answer, a request the proxy does not speak.
            _ => continue,
        };
        let denial = DenialNote::new(DenialKind::Connect, destination, allow, DenialSource::Proxy);
        if note.denials.contains(&denial) {
            continue;
        }
        if note.denials.len() < SANDBOX_DENIALS_PER_CALL {
            note.denials.push(denial);
        } else {
            note.unrecorded = note.unrecorded.saturating_add(1);
        }
    }
    note
}

/// The network part of the audit record, its names redacted of the secrets (never logged).
fn network_note(redactor: &Redactor, network: &NetworkRecord) -> NetworkNote {
    NetworkNote::new(
        network
            .attempts
            .iter()
            .map(|attempt| {
                ConnectionNote::new(
                    redactor.redact_name(&attempt.destination),
                    attempt.address.map(|address| address.to_string()),
                    attempt.refusal.map(Refusal::code),
                    (attempt.bytes_up, attempt.bytes_down),
                )
            })
            .collect(),
        network.unrecorded,
        (network.bytes_up, network.bytes_down),
    )
}

/// What the audit record says of a run: its exit status or signal, and the limit that
/// stopped it (by the manifest key that sets it).
fn run_note(tool: &CommandTool, exit: Exit, events: &SandboxEvents) -> RunNote {
    let sandboxed = tool.sandbox.is_some();
    // A budget the kernel held names it even when the program went on (or ended its own way).
    let budget = if events.oom_kills > 0 {
        Some("call_memory_mib")
    } else if events.forks_refused > 0 {
        Some("processes")
    } else if events.later_code_removed > 0 {
        Some("later_code")
    } else {
        None
    };
    let note = match exit {
        Exit::Code(code) => RunNote::exited(code),
        Exit::Signal(signal) => RunNote::signalled(
            signal,
            match signal {
                SIGXCPU if sandboxed => Some("cpu_seconds"),
                SIGXFSZ if sandboxed => Some("file_size_mib"),
                _ => None,
            },
        ),
        Exit::Stopped(StopReason::OutputLimit) => RunNote::stopped_by("max_output_bytes"),
        Exit::Stopped(StopReason::DiskBytes) => RunNote::stopped_by("disk_mib"),
        Exit::Stopped(StopReason::DiskFiles) => RunNote::stopped_by("disk_files"),
        Exit::Stopped(StopReason::NetworkBytes(key)) => RunNote::stopped_by(key),
        Exit::SandboxFailed => RunNote::stopped_by("sandbox"),
    };
    let mut note = note;
    if note.limit.is_none() {
        note.limit = budget;
    }
    note
}

/// `SIGXCPU`: a process passed its CPU time limit.
const SIGXCPU: i32 = libc::SIGXCPU;
/// `SIGXFSZ`: a process wrote past its file size limit.
const SIGXFSZ: i32 = libc::SIGXFSZ;

/// One stream as the reply shows it.
struct Section<'a> {
    title: Cow<'static, str>,
    /// Whether it is the reply's main stream (stdout, or both merged).
    main: bool,
    output: &'a Output,
    /// The bytes of the cap this stream may always use; with `tail`, its size.
    entitled: usize,
    /// The edges of the kept bytes that are cuts airlock made.
    cut: Cut,
    /// What its redacted text costs once sent.
    cost: usize,
    /// Whether that text is only white space.
    blank: bool,
    /// What it may use of the cap.
    share: usize,
}

impl<'a> Section<'a> {
    fn new(title: Cow<'static, str>, output: &'a Output, entitled: usize) -> Self {
        Self {
            title,
            main: false,
            output,
            entitled,
            cut: Cut::default(),
            cost: 0,
            blank: true,
            share: 0,
        }
    }

    /// Finds the section's cuts (a stopped command was cut mid-write on both streams), its
    /// cost and whether it is blank.
    fn measure(&mut self, redactor: &Redactor, stopped: bool) {
        self.cut = Cut {
            start: self.output.starts_late(),
            end: self.output.ends_early() || stopped,
        };
        let (mut cost, mut blank) = (0_usize, true);
        for unit in Units::new(redactor.pieces(&self.output.kept, self.cut)) {
            cost = cost.saturating_add(sent_len(unit));
            blank &= unit.chars().all(char::is_whitespace);
        }
        self.cost = cost;
        self.blank = blank;
    }

    /// The section's cut marks; `None` when it has nothing to show (no text, and nothing
    /// withheld).
    fn marks(&self, window: usize, budget: usize) -> Option<Marks> {
        let hidden = !self.output.kept.is_empty() && (self.cut.start || self.cut.end);
        if self.blank && !(hidden && window > 0) {
            return None;
        }
        let over = self.cost > self.share;
        let tail = self.output.tail;
        let reply_cap = format!("a reply holds at most {budget} bytes of output");
        let before = if tail && over {
            Some(format!("[airlock: cut here: {reply_cap}]"))
        } else if tail && self.cut.start && window > 0 {
            Some(format!(
                "[airlock: cut here: the first {window} bytes after the cut are withheld, as \
                 they could end a secret]"
            ))
        } else {
            None
        };
        // Cut by the reply's cap before the end of what was kept: no window beside that cut.
        let capped_end = over && !tail;
        let after = (self.cut.end || capped_end).then(|| {
            let reason = if capped_end || self.output.kept.len() < self.output.read {
                reply_cap.as_str()
            } else {
                "the command was stopped"
            };
            let withheld = if self.cut.end && !capped_end && window > 0 {
                format!(
                    "; the last {window} bytes before the cut are withheld, as they could begin \
                     a secret"
                )
            } else {
                String::new()
            };
            format!("[airlock: cut here: {reason}{withheld}]")
        });
        Some(Marks { before, after })
    }

    /// Appends the section's text within its share: its start, or with `tail` its end.
    fn write_body(&self, redactor: &Redactor, text: &mut String) {
        let mut spent = 0_usize;
        let mut skip = if self.output.tail {
            self.cost.saturating_sub(self.share)
        } else {
            0
        };
        for unit in Units::new(redactor.pieces(&self.output.kept, self.cut)) {
            let cost = sent_len(unit);
            if skip > 0 {
                skip = skip.saturating_sub(cost);
                continue;
            }
            if spent.saturating_add(cost) > self.share {
                break;
            }
            spent = spent.saturating_add(cost);
            text.push_str(unit);
        }
    }
}

/// A section's cut marks, each on a line of its own before or after its text.
struct Marks {
    before: Option<String>,
    after: Option<String>,
}

/// Gives each section what it is entitled to (or what it costs, if less), then what is left
/// to those that need more, in order.
fn share(sections: &mut [Section<'_>], budget: usize) {
    let mut left = budget;
    for section in sections.iter_mut() {
        section.share = section.cost.min(section.entitled).min(left);
        left = left.saturating_sub(section.share);
    }
    for section in sections.iter_mut() {
        let more = section.cost.saturating_sub(section.share).min(left);
        section.share = section.share.saturating_add(more);
        left = left.saturating_sub(more);
    }
}

/// The sections a reply shows, and how it writes them: straight into the reply's text, so
/// that the output is copied once.
struct Layout<'s, 'a> {
    redactor: &'s Redactor,
    sections: &'s [(&'s Section<'a>, Marks)],
}

impl Layout<'_, '_> {
    /// Room for the whole reply: the output's shares and the marks (the status and the
    /// sandbox line fit in the slack).
    fn capacity(&self) -> usize {
        self.sections
            .iter()
            .map(|(section, _)| section.cost.min(section.share).saturating_add(MARKS_BYTES))
            .fold(MARKS_BYTES, usize::saturating_add)
    }

    /// One section's text without a title, its end mark on a line of its own after it.
    fn untitled(&self, section: &Section<'_>, marks: &Marks) -> String {
        let mut text = String::with_capacity(self.capacity());
        section.write_body(self.redactor, &mut text);
        if let Some(mark) = &marks.after {
            end_line(&mut text);
            text.push_str(mark);
            text.push('\n');
        }
        text
    }

    /// `status`, each section under its title, then `footer`, a blank line between blocks; a
    /// section ends with a newline (the output's own, or one added).
    fn join(&self, status: Option<String>, footer: Option<String>) -> String {
        let mut text = String::with_capacity(self.capacity());
        let block = |text: &mut String| {
            if !text.is_empty() {
                text.push_str(if text.ends_with('\n') { "\n" } else { "\n\n" });
            }
        };
        if let Some(status) = status {
            text.push_str(&status);
        }
        for (section, marks) in self.sections {
            block(&mut text);
            text.push_str(&section.title);
            text.push_str(":\n");
            if let Some(mark) = &marks.before {
                text.push_str(mark);
                text.push('\n');
            }
            section.write_body(self.redactor, &mut text);
            end_line(&mut text);
            if let Some(mark) = &marks.after {
                text.push_str(mark);
                text.push('\n');
            }
        }
        if let Some(footer) = footer {
            block(&mut text);
            text.push_str(&footer);
        }
        text
    }
}

/// Room kept for each block of fixed text in a reply.
const MARKS_BYTES: usize = 256;

/// Ends `text` with a newline unless it is empty or has one.
fn end_line(text: &mut String) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

/// The redacted output as units of text: each character, `U+FFFD` for each stretch of bytes
/// that is not UTF-8 (as `String::from_utf8_lossy` does), and the marker for each redacted run.
struct Units<'a, P> {
    pieces: P,
    chunks: Option<std::str::Utf8Chunks<'a>>,
    valid: &'a str,
    invalid: bool,
}

impl<'a, P: Iterator<Item = Piece<'a>>> Units<'a, P> {
    fn new(pieces: P) -> Self {
        Self {
            pieces,
            chunks: None,
            valid: "",
            invalid: false,
        }
    }
}

impl<'a, P: Iterator<Item = Piece<'a>>> Iterator for Units<'a, P> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        loop {
            if let Some(first) = self.valid.chars().next()
                && let Some((unit, rest)) = self.valid.split_at_checked(first.len_utf8())
            {
                self.valid = rest;
                return Some(unit);
            }
            if self.invalid {
                self.invalid = false;
                return Some(REPLACEMENT);
            }
            if let Some(chunk) = self.chunks.as_mut().and_then(Iterator::next) {
                self.valid = chunk.valid();
                self.invalid = !chunk.invalid().is_empty();
                continue;
            }
            match self.pieces.next()? {
                Piece::Text(bytes) => self.chunks = Some(bytes.utf8_chunks()),
                Piece::Redacted => return Some(MARKER),
            }
        }
    }
}

const REPLACEMENT: &str = "\u{FFFD}";

/// The bytes `text` takes inside a JSON string as serde_json writes it: `"`, `\` and the
/// short escapes take two, other control characters six (`\u0001`), the rest their UTF-8.
fn sent_len(text: &str) -> usize {
    text.chars().fold(0_usize, |sum, c| {
        let len = match c {
            '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            c if c < ' ' => 6,
            c => c.len_utf8(),
        };
        sum.saturating_add(len)
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn sent_length_is_what_serde_json_writes_for_every_ascii_character() {
        for byte in 0..=0x7f_u8 {
            let text = char::from(byte).to_string();
            let written = serde_json::to_string(&text).unwrap();
            assert_eq!(sent_len(&text), written.len() - 2, "{byte:#x}");
        }
        assert_eq!(sent_len(MARKER), 10);
        assert_eq!(sent_len(REPLACEMENT), 3);
    }

    #[test]
    fn bytes_that_are_not_utf8_become_one_replacement_each_stretch_as_lossy_decoding_does() {
        let secrets = Redactor::new(&[]);
        let output = b"a\xff\xfeb\xe2\x82c\xe2\x82\xac";
        let units: String = Units::new(secrets.pieces(output, Cut::default())).collect();
        assert_eq!(units, String::from_utf8_lossy(output));
    }

    fn tool(keys: &str) -> CommandTool {
        let text =
            format!("[[tool]]\nname = \"t\"\ndescription = \"t\"\ncommand = [\"true\"]\n{keys}\n");
        let manifest = crate::manifest::parse(&text, "t.toml", &std::env::temp_dir()).unwrap();
        manifest.tools.into_iter().next().unwrap()
    }

    fn stream(kept: &[u8], read: usize, tail: bool) -> Output {
        Output {
            kept: kept.to_vec(),
            read,
            truncated: false,
            tail,
        }
    }

    fn text(output: &ToolOutput) -> &str {
        match output.blocks().first() {
            Some(airlock::Content::Text(text)) => text,
            _ => panic!("no text"),
        }
    }

    #[test]
    fn streams_that_do_not_fit_keep_their_entitlement_a_tail_its_end() {
        let tool = tool("max_output_bytes = 100\nstderr = \"tail\"\nstderr_tail_bytes = 40");
        let finished = Finished {
            exit: Exit::Code(0),
            stdout: stream(&[b'o'; 90], 90, false),
            stderr: stream(&[b'e'; 40], 200, true),
            sandbox: SandboxEvents::default(),
            network: NetworkRecord::default(),
            denials: crate::sandbox::denials::Collected::default(),
        };
        let reply = report(&tool, &Redactor::new(&[]), &finished);
        assert_eq!(
            text(&reply),
            format!(
                "stdout:\n{}\n[airlock: cut here: a reply holds at most 100 bytes of output]\n\n\
                 stderr (last 40 bytes at most):\n{}\n",
                "o".repeat(60),
                "e".repeat(40)
            )
        );
    }

    #[test]
    fn a_tail_cut_by_airlock_withholds_its_first_bytes_when_there_are_secrets() {
        let secret = crate::secrets::Secret::new("S".into(), "a-secret-value".to_owned().into());
        let redactor = Redactor::new([&secret]);
        let tool = tool("stderr = \"tail\"\nstderr_tail_bytes = 100");
        let mut kept = vec![b'x'; 64];
        kept.extend_from_slice(&[b'y'; 36]);
        let finished = Finished {
            exit: Exit::Code(0),
            stdout: stream(b"", 0, false),
            stderr: stream(&kept, 500, true),
            sandbox: SandboxEvents::default(),
            network: NetworkRecord::default(),
            denials: crate::sandbox::denials::Collected::default(),
        };
        assert_eq!(
            text(&report(&tool, &redactor, &finished)),
            format!(
                "stderr (last 100 bytes at most):\n[airlock: cut here: the first 64 bytes after \
                 the cut are withheld, as they could end a secret]\n{}\n",
                "y".repeat(36)
            )
        );
    }

    #[test]
    fn a_stopped_command_is_marked_where_each_stream_was_cut() {
        let secret = crate::secrets::Secret::new("S".into(), "a-secret-value".to_owned().into());
        let redactor = Redactor::new([&secret]);
        let tool =
            tool("max_output_bytes = 1000\nsandbox = \"off\"\naccept_risk = [\"unsandboxed\"]");
        let mut stdout = stream(&[b'o'; 1000], 1000, false);
        stdout.truncated = true;
        let finished = Finished {
            exit: Exit::Stopped(crate::process::StopReason::OutputLimit),
            stdout,
            stderr: stream(b"warning\n", 8, false),
            sandbox: SandboxEvents::default(),
            network: NetworkRecord::default(),
            denials: crate::sandbox::denials::Collected::default(),
        };
        let withheld =
            "the last 64 bytes before the cut are withheld, as they could begin a secret";
        assert_eq!(
            text(&report(&tool, &redactor, &finished)),
            format!(
                "The command's output passed the limit of 1000 bytes, so it was stopped; the \
                 output below is truncated.\n\nstdout:\n{}\n[airlock: cut here: the command was \
                 stopped; {withheld}]\n\nstderr:\n[airlock: cut here: the command was stopped; \
                 {withheld}]\n",
                "o".repeat(936)
            )
        );
    }

    proptest! {
        #[test]
        fn sent_length_is_what_serde_json_writes(text in any::<String>()) {
            let written = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(sent_len(&text), written.len() - 2);
        }

        #[test]
        fn units_decode_as_lossy_decoding_does(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let secrets = Redactor::new(&[]);
            let units: String = Units::new(secrets.pieces(&bytes, Cut::default())).collect();
            prop_assert_eq!(units, String::from_utf8_lossy(&bytes));
        }
    }
}
