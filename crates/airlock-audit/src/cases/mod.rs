//! The catalogue: every hostile input the audit sends, what a correct server does with it,
//! and how the replies are judged.
//!
//! Most cases are one input judged by a table of [`Arm`]s (`expect`): the answers the
//! JSON-RPC 2.0 and MCP specifications allow (pass), answers that are allowed but worse
//! (note), and known wrong ones (fail; anything unlisted fails too). Inputs are built in
//! `input`; the cases that need code of their own (floods, end of input, the version offer)
//! are in `custom`. The catalogue itself is one module per [`Category`] (`json`, `encoding`,
//! `envelope`, `batch`, `nesting`, `huge`, `protocol`, `flood`, `exposure`, `asking`,
//! `metadata`, `tasks`),
//! concatenated in report order
//! by [`catalogue`].
//!
//! Cases judge against the specifications, not against airlock's stricter choices: a server
//! that answers batches, accepts unknown members or parses a lone surrogate is not failing.
//! The payload of a ping goes in `params._meta.audit`, which every server must accept, so a
//! refusal is about the payload and not about an unknown parameter.

use super::judge::{Arm, Id, judge};
use super::probe::Probe;
use super::session::{Collected, Session};
use super::severity::Severity;
use super::target::Op;
use super::{Category, Verdict};

mod asking;
mod batch;
mod custom;
mod encoding;
mod envelope;
mod expect;
mod exposure;
mod flood;
mod huge;
mod input;
mod json;
mod metadata;
mod nesting;
mod protocol;
mod tasks;

pub(crate) use tasks::random_id as random_task_id;

use custom::{
    call_flood, eof_at_start, eof_call_in_flight, eof_mid_message, flood, no_newline_then_eof,
    subscription_flood, unread_pings, unsupported_version,
};
// The catalogue names dozens of expectation tables and input builders: listing them twice
// would add nothing.
use expect::*;
use input::*;

/// One case of the battery.
pub(crate) struct Case {
    /// Stable identifier, `category.name`.
    pub(crate) id: &'static str,
    /// Its category.
    pub(crate) category: Category,
    /// What it sends, in words.
    pub(crate) sends: &'static str,
    /// What a correct server does, in words.
    pub(crate) expects: &'static str,
    /// Left out by `--quick`.
    pub(crate) slow: bool,
    /// Its time limit, in case timeouts.
    pub(crate) budget: u32,
    /// How it runs.
    pub(crate) body: Body,
}

/// How a case runs.
pub(crate) enum Body {
    /// One input, judged by `arms`.
    Line {
        /// Whether the MCP handshake comes first.
        handshake: bool,
        /// The input, built for the probe tool.
        input: fn(&Probe) -> Input,
        /// The judgement.
        arms: &'static [Arm],
        /// Whether a reply over [`ECHO_LIMIT_BYTES`] is noted (the server echoes the input).
        echo_check: bool,
    },
    /// Hostile values in every string argument of every tool, judged by canaries
    /// (`exposure`); after the handshake, in a scratch directory.
    Exposure {
        /// The values.
        values: crate::exposure::Values,
        /// Where they go.
        via: crate::exposure::Via,
    },
    /// Hostile answers to the server's questions (`asking`): after a handshake declaring
    /// the client capabilities (2025-11-25 variants), or none (2026-07-28 ones).
    Asking {
        /// What it answers, or how it retries.
        variant: crate::asking::Variant,
    },
    /// A review of what the server tells the model (`metadata`): of the catalog learned
    /// before the battery (no server started), or of the results of calls.
    Metadata {
        /// What it looks at.
        check: crate::metadata::Check,
    },
    /// A function of its own (after the handshake unless `handshake` is false).
    Custom {
        /// Whether the MCP handshake comes first.
        handshake: bool,
        /// The case.
        run: fn(&mut Session<'_>) -> Judgement,
    },
}

/// One input: what to write, and the id it carries (JSON text), if any.
pub(crate) struct Input {
    /// The bytes, in order.
    pub(crate) ops: Vec<Op>,
    /// The id of the request in it, as JSON text.
    pub(crate) id: Option<String>,
}

pub(crate) use crate::judge::Judgement;

impl Case {
    fn line(
        id: &'static str,
        category: Category,
        sends: &'static str,
        expects: &'static str,
        input: fn(&Probe) -> Input,
        arms: &'static [Arm],
    ) -> Self {
        Self {
            id,
            category,
            sends,
            expects,
            slow: false,
            budget: 1,
            body: Body::Line {
                handshake: true,
                input,
                arms,
                echo_check: false,
            },
        }
    }

    fn custom(
        id: &'static str,
        category: Category,
        sends: &'static str,
        expects: &'static str,
        run: fn(&mut Session<'_>) -> Judgement,
    ) -> Self {
        Self {
            id,
            category,
            sends,
            expects,
            slow: false,
            budget: 1,
            body: Body::Custom {
                handshake: true,
                run,
            },
        }
    }

    fn exposure(
        id: &'static str,
        sends: &'static str,
        expects: &'static str,
        values: crate::exposure::Values,
    ) -> Self {
        Self {
            id,
            category: Category::Exposure,
            sends,
            expects,
            slow: false,
            budget: 3,
            body: Body::Exposure {
                values,
                via: crate::exposure::Via::ToolArguments,
            },
        }
    }

    fn asking(
        id: &'static str,
        sends: &'static str,
        expects: &'static str,
        variant: crate::asking::Variant,
    ) -> Self {
        Self {
            id,
            category: Category::Asking,
            sends,
            expects,
            slow: false,
            budget: 3,
            body: Body::Asking { variant },
        }
    }

    fn metadata(
        id: &'static str,
        sends: &'static str,
        expects: &'static str,
        check: crate::metadata::Check,
    ) -> Self {
        Self {
            id,
            category: Category::Metadata,
            sends,
            expects,
            slow: false,
            budget: 1,
            body: Body::Metadata { check },
        }
    }

    /// An exposure case whose values go into resource URIs instead of tool arguments.
    fn in_resource_uris(mut self) -> Self {
        if let Body::Exposure { via, .. } = &mut self.body {
            *via = crate::exposure::Via::ResourceUris;
        }
        self
    }

    fn slow(mut self) -> Self {
        self.slow = true;
        self
    }

    fn budget(mut self, budget: u32) -> Self {
        self.budget = budget;
        self
    }

    fn before_handshake(mut self) -> Self {
        match &mut self.body {
            Body::Line { handshake, .. } | Body::Custom { handshake, .. } => *handshake = false,
            Body::Exposure { .. } | Body::Asking { .. } | Body::Metadata { .. } => {}
        }
        self
    }

    fn echo_check(mut self) -> Self {
        if let Body::Line { echo_check, .. } = &mut self.body {
            *echo_check = true;
        }
        self
    }

    /// Whether the handshake comes first.
    pub(crate) fn handshake(&self) -> bool {
        match self.body {
            Body::Line { handshake, .. } | Body::Custom { handshake, .. } => handshake,
            Body::Exposure { .. } | Body::Metadata { .. } => true,
            Body::Asking { variant } => variant.legacy(),
        }
    }
}

/// Runs a [`Body::Line`] case in `session`.
pub(crate) fn run_line(
    session: &mut Session<'_>,
    input: Input,
    arms: &[Arm],
    echo_check: bool,
) -> Judgement {
    let sent = input.id.as_deref().and_then(Id::from_json);
    let collected = session.collect(input.ops, sent.is_some());
    judge_line(&collected, arms, sent.as_ref(), echo_check)
}

/// The judgement of a [`Body::Line`] case from what answered its input, which carried `sent`.
pub(crate) fn judge_line(
    collected: &Collected,
    arms: &[Arm],
    sent: Option<&Id>,
    echo_check: bool,
) -> Judgement {
    let (mut verdict, mut severity, mut detail) = judge(arms, &collected.replies, sent);
    if !collected.written {
        detail.push_str("; the input was not written whole (the server stopped reading it)");
    }
    if echo_check && collected.largest_reply_bytes > ECHO_LIMIT_BYTES {
        verdict = verdict.max(Verdict::Note);
        severity = severity.max(Some(Severity::Low));
        detail.push_str(&format!(
            "; a {}-byte reply: the server echoes what the peer sent",
            collected.largest_reply_bytes
        ));
    }
    Judgement {
        verdict,
        severity,
        detail,
        answer: collected.answer,
        follow_up: true,
    }
}

/// Every case, in report order.
pub(crate) fn catalogue() -> Vec<Case> {
    [
        json::cases(),
        encoding::cases(),
        envelope::cases(),
        batch::cases(),
        nesting::cases(),
        huge::cases(),
        protocol::cases(),
        flood::cases(),
        exposure::cases(),
        asking::cases(),
        metadata::cases(),
        tasks::cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Replies larger than this to a long method or tool name mean the server echoes it.
pub(crate) const ECHO_LIMIT_BYTES: usize = 4096;
