//! How bad what a case found is, for a CI that must fail on a crash and not on a nit: the
//! five levels, the `--fail-on` threshold, and the fixed kinds of general finding with the
//! level each carries.
//!
//! The levels follow what the finding costs a client: `critical` is a server that dies,
//! hangs, outgrows its memory limit, leaks a stack trace or leaves a process running;
//! `high` is a request lost, answered twice or under another id, a reply to a notification,
//! a stdout line that is not one JSON-RPC message; `medium` is a wrong error code, no
//! `-32700` for bad JSON, a batch accepted; `low` and `info` are notes. Nothing here reads
//! server output: the levels are decided by the audit's own code.

use serde::{Deserialize, Serialize};

/// How bad a finding is, from `info` to `critical` (ordered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// Allowed by the specifications but worse than it could be.
    Low,
    /// Wrong by the specifications, and a client copes: a wrong error code, no `-32700` for
    /// bad JSON, a batch accepted.
    Medium,
    /// A client is misled or waits forever on one message: a request unanswered, answered
    /// twice or under another id, a reply to a notification, a line that is not one
    /// JSON-RPC message.
    High,
    /// The server is unusable or unsafe: a crash, a hang, memory past the limit, a stack
    /// trace or a secret on stdout, a process left running, a command run that should not be.
    Critical,
}

impl Severity {
    /// Every level, from the mildest.
    pub const ALL: [Self; 5] = [
        Self::Info,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Critical,
    ];

    /// `info`, `low`, `medium`, `high` or `critical`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }

    /// The level called `name` (as [`Severity::name`] writes it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.name() == name)
    }

    /// The SARIF `level` of a result at this severity.
    pub(crate) fn sarif_level(self) -> &'static str {
        match self {
            Self::Critical | Self::High => "error",
            Self::Medium => "warning",
            Self::Low | Self::Info => "note",
        }
    }

    /// The `security-severity` score code-scanning services sort by (CVSS-like bands:
    /// critical ≥ 9, high ≥ 7, medium ≥ 4, low > 0).
    pub(crate) fn score(self) -> &'static str {
        match self {
            Self::Critical => "9.5",
            Self::High => "8.0",
            Self::Medium => "5.0",
            Self::Low => "2.0",
            Self::Info => "0.0",
        }
    }
}

/// The level from which a finding fails the run (`--fail-on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// Findings at this level or worse fail the run.
    Level(Severity),
    /// No finding fails the run (a report only).
    Never,
}

impl FailOn {
    /// The default: a crash or a lost reply fails CI, a wrong code or a note does not.
    pub const DEFAULT: Self = Self::Level(Severity::High);

    /// A level name, or `never`.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim() {
            "never" | "none" => Some(Self::Never),
            other => Severity::parse(other).map(Self::Level),
        }
    }

    /// Whether a finding at `severity` fails the run.
    pub fn fails(self, severity: Severity) -> bool {
        match self {
            Self::Level(threshold) => severity >= threshold,
            Self::Never => false,
        }
    }

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Self::Level(level) => level.name(),
            Self::Never => "never",
        }
    }
}

impl Serialize for FailOn {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A general finding, as opposed to a case's judgement of its own input: each has a stable
/// name (baselines and SARIF results key on it) and a fixed level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A blank line on stdout.
    BlankLine,
    /// A process of the server's left its process group and was still running at the end.
    ChildLeftRunning,
    /// The ping and `tools/list` after the case failed: the server died or stopped answering.
    FollowUp,
    /// The ping or `tools/list` after the case answered with the wrong shape.
    FollowUpShape,
    /// No answer to the marker ping within the case's time limit.
    Hang,
    /// A stdout line that is not one JSON-RPC message.
    InvalidLine,
    /// A stdout line longer than the audit keeps.
    LongLine,
    /// Peak memory past the limit.
    Memory,
    /// Killed by the audit past twice the memory limit.
    MemoryKilled,
    /// Panic text or a stack trace on stdout.
    StackTrace,
    /// More than a gigabyte on stdout in one case.
    StdoutFlood,
    /// More replies to one input than the audit keeps.
    TooManyReplies,
    /// Two replies to one request.
    TwoReplies,
    /// A reply nobody was waiting for (to a notification, twice, or under another id).
    UnaskedReply,
    /// A tool returned the canary outside its served directory (exposure).
    OutsideRead,
    /// A tool created or changed something outside its served directory, or ran a command a
    /// value smuggled in (exposure).
    OutsideWrite,
    /// A tool's result held the canary of an answer that did not fit the server's own
    /// question (or of an answer it never asked for, or a duplicate): the server passed it on
    /// (`asking`).
    UnfitAnswerUsed,
    /// A 2026-07-28 retry whose `requestState` was tampered with, or belongs to another
    /// tool, completed: the server accepted state that fails integrity (`asking`).
    StateAccepted,
    /// An error or a tool error echoed the canary of a hostile answer (`asking`).
    AnswerEchoed,
    /// No answer within the time limit, where a tool the audit calls declares it needs
    /// longer than the audit waits (a note: the server said so itself).
    SlowDeclared,
}

impl Kind {
    /// The stable name, as in reports and baselines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::BlankLine => "blank-line",
            Self::ChildLeftRunning => "child-left-running",
            Self::FollowUp => "follow-up",
            Self::FollowUpShape => "follow-up-shape",
            Self::Hang => "hang",
            Self::InvalidLine => "invalid-line",
            Self::LongLine => "long-line",
            Self::Memory => "memory",
            Self::MemoryKilled => "memory-killed",
            Self::StackTrace => "stack-trace",
            Self::StdoutFlood => "stdout-flood",
            Self::TooManyReplies => "too-many-replies",
            Self::TwoReplies => "two-replies",
            Self::UnaskedReply => "unasked-reply",
            Self::OutsideRead => "outside-read",
            Self::OutsideWrite => "outside-write",
            Self::UnfitAnswerUsed => "unfit-answer-used",
            Self::StateAccepted => "tampered-state-accepted",
            Self::AnswerEchoed => "answer-echoed",
            Self::SlowDeclared => "slower-than-the-wait",
        }
    }

    /// How bad it is.
    pub(crate) fn severity(self) -> Severity {
        match self {
            Self::BlankLine | Self::AnswerEchoed | Self::SlowDeclared => Severity::Low,
            Self::FollowUpShape => Severity::Medium,
            Self::InvalidLine
            | Self::LongLine
            | Self::TooManyReplies
            | Self::TwoReplies
            | Self::UnaskedReply
            | Self::OutsideRead
            | Self::UnfitAnswerUsed
            | Self::StateAccepted => Severity::High,
            Self::ChildLeftRunning
            | Self::FollowUp
            | Self::Hang
            | Self::Memory
            | Self::MemoryKilled
            | Self::StackTrace
            | Self::StdoutFlood
            | Self::OutsideWrite => Severity::Critical,
        }
    }
}

/// The name of a case's finding about its own input (its judgement), beside [`Kind::name`].
pub(crate) const ANSWER_KIND: &str = "answer";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_from_info_to_critical_and_parse_back() {
        assert!(Severity::Info < Severity::Low);
        assert!(Severity::Medium < Severity::High && Severity::High < Severity::Critical);
        for level in Severity::ALL {
            assert_eq!(Severity::parse(level.name()), Some(level));
        }
        assert_eq!(Severity::parse("severe"), None);
    }

    #[test]
    fn fail_on_fails_its_level_and_worse_only() {
        let high = FailOn::parse("high").unwrap();
        assert!(!high.fails(Severity::Medium));
        assert!(high.fails(Severity::High) && high.fails(Severity::Critical));
        assert!(!FailOn::Never.fails(Severity::Critical));
        assert_eq!(FailOn::parse("never"), Some(FailOn::Never));
        assert_eq!(FailOn::parse("loud"), None);
        assert_eq!(FailOn::DEFAULT, high);
    }

    #[test]
    fn crashes_are_critical_and_blank_lines_low() {
        assert_eq!(Kind::FollowUp.severity(), Severity::Critical);
        assert_eq!(Kind::Hang.severity(), Severity::Critical);
        assert_eq!(Kind::UnaskedReply.severity(), Severity::High);
        assert_eq!(Kind::BlankLine.severity(), Severity::Low);
    }
}
