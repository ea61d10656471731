//! Why a step of talking to the server under review failed: the handshake, `tools/list`, a
//! reply awaited, a legacy session opened or a follow-up sent. Each variant's `Display` is the
//! sentence the report shows; a step that failed because an earlier one did names both.

/// A step that failed, for the report.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
pub(crate) enum Failure {
    /// No reply before the deadline.
    #[error("no reply in time")]
    NoReply,
    /// The server exited: how.
    #[error("the server exited ({0})")]
    Exited(String),
    /// The server closed its stdout and lives on.
    #[error("the server closed its stdout")]
    ClosedStdout,
    /// `initialize` got no reply.
    #[error("handshake failed: {0}")]
    Handshake(Box<Failure>),
    /// The ping after `notifications/initialized` got no reply.
    #[error("handshake failed: ping after initialized: {0}")]
    HandshakePing(Box<Failure>),
    /// `initialize` was answered with an error.
    #[error("handshake failed: initialize answered error {code}")]
    InitializeRefused {
        /// `error.code`.
        code: i64,
    },
    /// `tools/list` after the handshake got no reply.
    #[error("tools/list after the handshake: {0}")]
    ToolsList(Box<Failure>),
    /// `tools/list` after the handshake was answered with an error.
    #[error("tools/list after the handshake: error {code}")]
    ToolsListRefused {
        /// `error.code`.
        code: i64,
    },
    /// `--call-tool` names no tool the server lists.
    #[error("--call-tool: the server has no tool called \"{wanted}\" ({offered})")]
    NoSuchTool {
        /// The name asked for, as shown.
        wanted: String,
        /// What the server lists, as shown.
        offered: String,
    },
    /// The case timeout does not fit in a deadline.
    #[error("the case timeout is too large")]
    TimeoutTooLarge,
    /// An HTTP request of `step` got no response.
    #[error("{step}: {why}")]
    Unsent {
        /// The request (`initialize`, `tools/list`, …).
        step: &'static str,
        /// What happened instead.
        why: &'static str,
    },
    /// An HTTP request of `step` was answered without the result it needed.
    #[error("{step}: answered {answer}")]
    Answered {
        /// The request.
        step: &'static str,
        /// The status and JSON-RPC code.
        answer: String,
    },
    /// The server served neither era's opening request.
    #[error(
        "the server served neither a 2026-07-28 server/discover nor a 2025-11-25 initialize \
         ({})",
        .refusals.join("; ")
    )]
    NoEra {
        /// What each opening request got.
        refusals: Vec<String>,
    },
    /// Opening the legacy session `tools/list` needed failed.
    #[error("opening a session: {0}")]
    OpeningSession(Box<Failure>),
    /// The follow-up request was answered without a result.
    #[error("follow-up: a valid request answered {answer}")]
    FollowUpAnswered {
        /// The status and JSON-RPC code.
        answer: String,
    },
    /// The follow-up request got no result in time.
    #[error("follow-up: a valid request got {last} within the time limit")]
    FollowUpTimedOut {
        /// The last thing it got.
        last: String,
    },
}
