//! The catalogue: every hostile input the audit sends, what a correct server does with it,
//! and how the replies are judged.
//!
//! Most cases are one input judged by a table of [`Arm`]s (`expect`): the answers the
//! JSON-RPC 2.0 and MCP specifications allow (pass), answers that are allowed but worse
//! (note), and known wrong ones (fail; anything unlisted fails too). Inputs are built in
//! `input`; the cases that need code of their own (floods, end of input, the version offer)
//! are in `custom`.
//!
//! Cases judge against the specifications, not against airlock's stricter choices: a server
//! that answers batches, accepts unknown members or parses a lone surrogate is not failing.
//! The payload of a ping goes in `params._meta.audit`, which every server must accept, so a
//! refusal is about the payload and not about an unknown parameter.

use std::time::Duration;

use super::judge::{Arm, Id, judge};
use super::probe::Probe;
use super::session::Session;
use super::severity::Severity;
use super::target::Op;
use super::{Category, Verdict};

mod custom;
mod expect;
mod input;

use custom::{
    call_flood, eof_at_start, eof_call_in_flight, eof_mid_message, flood, no_newline_then_eof,
    unread_pings, unsupported_version,
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

/// A case's verdict on what it sent.
#[derive(Debug)]
pub(crate) struct Judgement {
    /// The verdict.
    pub(crate) verdict: Verdict,
    /// How bad it is (`None` for a pass).
    pub(crate) severity: Option<Severity>,
    /// What came back and what it means.
    pub(crate) detail: String,
    /// From the end of the input to its first answer.
    pub(crate) answer: Option<Duration>,
    /// Whether the follow-up ping and tools/list run (not after end of input).
    pub(crate) follow_up: bool,
}

impl Judgement {
    /// A failure before the case could run (handshake, spawn): a fresh server that does not
    /// complete its handshake is unusable, so this is critical.
    pub(crate) fn failed(detail: String) -> Self {
        Self {
            verdict: Verdict::Fail,
            severity: Some(Severity::Critical),
            detail,
            answer: None,
            follow_up: false,
        }
    }
}

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
            body: Body::Exposure { values },
        }
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
            Body::Exposure { .. } => {}
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
            Body::Exposure { .. } => true,
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
    let (mut verdict, mut severity, mut detail) = judge(arms, &collected.replies, sent.as_ref());
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
#[expect(
    clippy::too_many_lines,
    reason = "the catalogue is data: one entry per case, read top to bottom"
)]
pub(crate) fn catalogue() -> Vec<Case> {
    use crate::exposure;
    use Category::{Batch, Encoding, Envelope, Flood, Huge, Json, Nesting, Protocol};
    vec![
        // ---- malformed JSON
        Case::line(
            "json.trailing-comma-object",
            Json,
            "a ping whose object ends in a trailing comma",
            "-32700 with id null",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping",}"#),
            PARSE,
        ),
        Case::line(
            "json.trailing-comma-array",
            Json,
            "a ping holding the array [1,2,]",
            "-32700 with id null",
            |_| ping_with("[1,2,]"),
            PARSE,
        ),
        Case::line(
            "json.single-quotes",
            Json,
            "a ping written with single quotes",
            "-32700 with id null",
            |_| text("{'jsonrpc':'2.0','id':7,'method':'ping'}"),
            PARSE,
        ),
        Case::line(
            "json.unquoted-keys",
            Json,
            "a ping with unquoted keys",
            "-32700 with id null",
            |_| text(r#"{jsonrpc:"2.0",id:7,method:"ping"}"#),
            PARSE,
        ),
        Case::line(
            "json.control-character",
            Json,
            "a raw U+0001 and a raw tab inside a string",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"a\x01b\tc\""),
            PARSE,
        ),
        Case::line(
            "json.invalid-escape",
            Json,
            "the escape \\x41 inside a string",
            "-32700 with id null",
            |_| ping_with(r#""\x41""#),
            PARSE,
        ),
        Case::line(
            "json.lone-surrogate",
            Json,
            "the string \"\\ud800\" (a lone surrogate)",
            "a result, or -32700 with id null: both parse and refusal are allowed",
            |_| ping_with(r#""\ud800""#),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "json.lone-surrogate-method",
            Json,
            "the method \"ping\\udc00\"",
            "-32700 with id null, or -32601/-32600 for the request (it is not ping)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping\udc00"}"#),
            ODD_METHOD,
        ),
        Case::line(
            "json.huge-exponent",
            Json,
            "the number 1e999999",
            "a result, or -32700 with id null",
            |_| ping_with("1e999999"),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "json.huge-exponent-id",
            Json,
            "a request whose id is 1e400 (no double holds it)",
            "an error with id null; never a reply under another id",
            |_| text(r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#),
            UNREPRESENTABLE_ID,
        ),
        Case::line(
            "json.leading-zeros",
            Json,
            "the id 07",
            "-32700 with id null",
            |_| text(r#"{"jsonrpc":"2.0","id":07,"method":"ping"}"#),
            PARSE,
        ),
        Case::line(
            "json.nan",
            Json,
            "the token NaN",
            "-32700 with id null",
            |_| ping_with("NaN"),
            PARSE,
        ),
        Case::line(
            "json.infinity",
            Json,
            "the token -Infinity",
            "-32700 with id null",
            |_| ping_with("-Infinity"),
            PARSE,
        ),
        Case::line(
            "json.hex-number",
            Json,
            "the number 0x1F",
            "-32700 with id null",
            |_| ping_with("0x1F"),
            PARSE,
        ),
        Case::line(
            "json.plus-sign",
            Json,
            "the number +1",
            "-32700 with id null",
            |_| ping_with("+1"),
            PARSE,
        ),
        Case::line(
            "json.bad-literal",
            Json,
            "the literal tru",
            "-32700 with id null",
            |_| ping_with("tru"),
            PARSE,
        ),
        Case::line(
            "json.comment",
            Json,
            "a ping with a /* comment */",
            "-32700 with id null",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"/* audit */}"#),
            PARSE,
        ),
        Case::line(
            "json.truncated",
            Json,
            "a ping missing its closing brace",
            "-32700 with id null",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping""#),
            PARSE,
        ),
        Case::line(
            "json.unterminated-string",
            Json,
            "a ping whose last string never ends",
            "-32700 with id null",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"#),
            PARSE,
        ),
        Case::line(
            "json.trailing-garbage",
            Json,
            "a ping followed by ` x` on the same line",
            "-32700 with id null",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"} x"#),
            PARSE,
        ),
        Case::line(
            "json.two-values",
            Json,
            "two pings (ids 7 and 8) on one line",
            "-32700 with id null (one line is one message)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"ping"}{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
                )
            },
            TWO_VALUES,
        ),
        Case::line(
            "json.bare-word",
            Json,
            "the word ping",
            "-32700 with id null",
            |_| text_without_id("ping"),
            PARSE,
        ),
        // ---- encoding
        Case::line(
            "encoding.invalid-utf8",
            Encoding,
            "the bytes FF FE inside a string",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xff\xfe\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.invalid-utf8-method",
            Encoding,
            "the method p\\xFFing",
            "-32700 with id null, or -32601/-32600 for the request (it is not ping)",
            |_| {
                bytes_line(
                    b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"p\xffing\"}",
                    Some("7"),
                )
            },
            ODD_METHOD,
        ),
        Case::line(
            "encoding.overlong-utf8",
            Encoding,
            "the overlong encoding C0 AF of '/'",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xc0\xaf\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.utf8-surrogate",
            Encoding,
            "the bytes ED A0 80 (a surrogate encoded in UTF-8)",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xed\xa0\x80\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.truncated-utf8",
            Encoding,
            "a three-byte sequence cut after two bytes",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xe2\x82\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.nul-after-message",
            Encoding,
            "a ping followed by a NUL byte on the same line",
            "-32700 with id null",
            |_| {
                bytes_line(
                    b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\x00",
                    Some("7"),
                )
            },
            PARSE,
        ),
        Case::line(
            "encoding.nul-in-string",
            Encoding,
            "a raw NUL byte inside a string",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"a\x00b\""),
            PARSE,
        ),
        Case::line(
            "encoding.escaped-nul",
            Encoding,
            "the escape \\u0000 inside a string",
            "a result (an escaped NUL is valid JSON)",
            |_| ping_with(r#""a\u0000b""#),
            SERVED,
        ),
        Case::line(
            "encoding.bom",
            Encoding,
            "a UTF-8 byte-order mark before a ping",
            "-32700 with id null, or a result (RFC 8259 lets a parser ignore the mark)",
            |_| {
                bytes_line(
                    b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}",
                    Some("7"),
                )
            },
            BOM,
        ),
        Case::line(
            "encoding.utf16",
            Encoding,
            "a ping encoded in UTF-16LE with its byte-order mark",
            "-32700 with id null",
            |_| utf16_ping(),
            UTF16,
        ),
        Case::line(
            "encoding.crlf",
            Encoding,
            "a ping ending in \\r\\n",
            "a result (\\r is JSON whitespace)",
            |_| {
                bytes_line(
                    b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\r",
                    Some("7"),
                )
            },
            WHITESPACE,
        ),
        Case::line(
            "encoding.surrounding-whitespace",
            Encoding,
            "a ping with spaces and tabs around it",
            "a result",
            |_| {
                bytes_line(
                    b" \t {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"} \t ",
                    Some("7"),
                )
            },
            WHITESPACE,
        ),
        Case::line(
            "encoding.blank-lines",
            Encoding,
            "empty and whitespace-only lines",
            "nothing: no message, no answer",
            |_| Input {
                ops: vec![Op::Bytes(b"\n\n   \n\t\n\r\n".to_vec())],
                id: None,
            },
            BLANK,
        ),
        Case::line(
            "encoding.bidi-method",
            Encoding,
            "the method \"ping\\u202e\" (a right-to-left override)",
            "-32601 for the unknown method",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping\u202e"}"#),
            ODD_METHOD,
        ),
        Case::line(
            "encoding.escaped-pair",
            Encoding,
            "an escaped surrogate pair (\\ud83d\\ude00) and noncharacters",
            "a result",
            |_| ping_with(r#""\ud83d\ude00\uffff\ufffe""#),
            SERVED,
        ),
        // ---- envelope
        Case::line(
            "envelope.jsonrpc-missing",
            Envelope,
            "a ping without \"jsonrpc\"",
            "-32600",
            |_| text(r#"{"id":7,"method":"ping"}"#),
            INVALID_REQUEST,
        ),
        Case::line(
            "envelope.jsonrpc-1.0",
            Envelope,
            "a ping with \"jsonrpc\":\"1.0\"",
            "-32600",
            |_| text(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#),
            INVALID_REQUEST,
        ),
        Case::line(
            "envelope.jsonrpc-number",
            Envelope,
            "a ping with \"jsonrpc\":2.0 (a number)",
            "-32600",
            |_| text(r#"{"jsonrpc":2.0,"id":7,"method":"ping"}"#),
            INVALID_REQUEST,
        ),
        Case::line(
            "envelope.method-missing",
            Envelope,
            "an id and nothing else",
            "-32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7}"#),
            METHOD_MISSING,
        ),
        Case::line(
            "envelope.method-number",
            Envelope,
            "\"method\":42",
            "-32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":42}"#),
            INVALID_REQUEST,
        ),
        Case::line(
            "envelope.method-null",
            Envelope,
            "\"method\":null",
            "-32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":null}"#),
            INVALID_REQUEST,
        ),
        Case::line(
            "envelope.method-object",
            Envelope,
            "\"method\":{}",
            "-32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":{}}"#),
            INVALID_REQUEST,
        ),
        Case::line(
            "envelope.method-empty",
            Envelope,
            "\"method\":\"\"",
            "-32601 (or -32600)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":""}"#),
            UNKNOWN_METHOD,
        ),
        Case::line(
            "envelope.method-long",
            Envelope,
            "a 100,000-byte method name",
            "-32601 or -32600, without echoing the name",
            |_| long_method(),
            UNKNOWN_METHOD,
        )
        .echo_check(),
        Case::line(
            "envelope.tool-name-long",
            Envelope,
            "tools/call of a 100,000-byte tool name",
            "-32602, without echoing the name",
            |_| long_tool_name(),
            UNKNOWN_TOOL_ARMS,
        )
        .echo_check(),
        Case::line(
            "envelope.params-string",
            Envelope,
            "a ping with \"params\":\"x\"",
            "-32602 or -32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}"#),
            BAD_PARAMS,
        ),
        Case::line(
            "envelope.params-number",
            Envelope,
            "a ping with \"params\":42",
            "-32602 or -32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":42}"#),
            BAD_PARAMS,
        ),
        Case::line(
            "envelope.params-array",
            Envelope,
            "a ping with \"params\":[] (by position)",
            "-32602 or -32600 (MCP params are objects)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":[]}"#),
            BAD_PARAMS,
        ),
        Case::line(
            "envelope.params-null",
            Envelope,
            "a ping with \"params\":null",
            "-32602 or -32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":null}"#),
            BAD_PARAMS,
        ),
        Case::line(
            "envelope.id-null",
            Envelope,
            "a ping with \"id\":null",
            "-32600 with id null (MCP forbids null ids)",
            |_| text_with_id(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, "null"),
            ID_NULL,
        ),
        Case::line(
            "envelope.id-fraction",
            Envelope,
            "a ping with \"id\":1.5",
            "-32600 (MCP ids are strings or integers), never a reply under another id",
            |_| text_with_id(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, "1.5"),
            ID_FRACTION,
        ),
        Case::line(
            "envelope.id-integral-float",
            Envelope,
            "a ping with \"id\":7.0",
            "-32600, or a result echoing 7.0",
            |_| text_with_id(r#"{"jsonrpc":"2.0","id":7.0,"method":"ping"}"#, "7.0"),
            ID_SEVEN_POINT_ZERO,
        ),
        Case::line(
            "envelope.id-exponent",
            Envelope,
            "a ping with \"id\":1e2",
            "-32600, or a result echoing 1e2",
            |_| text_with_id(r#"{"jsonrpc":"2.0","id":1e2,"method":"ping"}"#, "1e2"),
            ID_EXPONENT,
        ),
        Case::line(
            "envelope.id-negative-zero",
            Envelope,
            "a ping with \"id\":-0",
            "a result echoing -0, or -32600",
            |_| text_with_id(r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#, "-0"),
            ID_NEGATIVE_ZERO,
        ),
        Case::line(
            "envelope.id-bool",
            Envelope,
            "a ping with \"id\":true",
            "-32600 with id null",
            |_| text_without_id(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#),
            ID_WRONG_TYPE,
        ),
        Case::line(
            "envelope.id-object",
            Envelope,
            "a ping with \"id\":{\"a\":1}",
            "-32600 with id null",
            |_| text_without_id(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#),
            ID_WRONG_TYPE,
        ),
        Case::line(
            "envelope.id-array",
            Envelope,
            "a ping with \"id\":[7]",
            "-32600 with id null",
            |_| text_without_id(r#"{"jsonrpc":"2.0","id":[7],"method":"ping"}"#),
            ID_WRONG_TYPE,
        ),
        Case::line(
            "envelope.id-2^53+1",
            Envelope,
            "a ping with \"id\":9007199254740993 (not a double)",
            "a result echoing the id digit for digit, or an error with id null",
            |_| {
                text_with_id(
                    r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}"#,
                    "9007199254740993",
                )
            },
            EXACT_ID,
        ),
        Case::line(
            "envelope.id-2^64",
            Envelope,
            "a ping with \"id\":18446744073709551616 (past 64 bits)",
            "a result echoing the id digit for digit, or an error with id null",
            |_| {
                text_with_id(
                    r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#,
                    "18446744073709551616",
                )
            },
            EXACT_ID,
        ),
        Case::line(
            "envelope.id-min-i64",
            Envelope,
            "a ping with \"id\":-9223372036854775808",
            "a result echoing the id digit for digit, or an error with id null",
            |_| {
                text_with_id(
                    r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#,
                    "-9223372036854775808",
                )
            },
            EXACT_ID,
        ),
        Case::line(
            "envelope.id-unicode",
            Envelope,
            "a ping with the id \"ä\\u00e4😀\"",
            "a result with the same id",
            |_| {
                text_with_id(
                    r#"{"jsonrpc":"2.0","id":"ä\u00e4😀","method":"ping"}"#,
                    r#""ää😀""#,
                )
            },
            SERVED,
        ),
        Case::line(
            "envelope.id-empty-string",
            Envelope,
            "a ping with \"id\":\"\"",
            "a result with id \"\"",
            |_| text_with_id(r#"{"jsonrpc":"2.0","id":"","method":"ping"}"#, r#""""#),
            SERVED,
        ),
        Case::line(
            "envelope.id-long-string",
            Envelope,
            "a ping whose id is a 10,000-byte string",
            "a result echoing it, or -32600 with id null",
            |_| long_string_id(10_000),
            LONG_ID,
        ),
        Case::line(
            "envelope.duplicate-method",
            Envelope,
            "\"method\" twice: audit/no_such_method, then ping",
            "-32600 (parsers disagree on which copy wins)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"audit/no_such_method","method":"ping"}"#),
            DUPLICATE_METHOD,
        ),
        Case::line(
            "envelope.duplicate-id",
            Envelope,
            "\"id\" twice: 7, then 8",
            "-32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}"#),
            DUPLICATE_ID,
        ),
        Case::line(
            "envelope.duplicate-jsonrpc",
            Envelope,
            "\"jsonrpc\" twice: \"1.0\", then \"2.0\"",
            "-32600",
            |_| text(r#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":7,"method":"ping"}"#),
            DUPLICATE_KEY,
        ),
        Case::line(
            "envelope.duplicate-tool-name",
            Envelope,
            "tools/call with \"name\" twice: an unknown tool, then the probe tool",
            "-32600 or -32602 (a gateway reading the first copy would let the call through)",
            duplicate_tool_name,
            DUPLICATE_TOOL_NAME,
        ),
        Case::line(
            "envelope.unknown-member",
            Envelope,
            "a ping with an extra top-level member",
            "a result, or -32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping","audit":1}"#),
            EXTRA_MEMBER,
        ),
        Case::line(
            "envelope.method-and-result",
            Envelope,
            "a ping that also carries \"result\"",
            "a result, or -32600",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}"#),
            METHOD_AND_RESULT,
        ),
        Case::line(
            "envelope.not-an-object-string",
            Envelope,
            "the JSON string \"ping\"",
            "-32600 with id null",
            |_| text_without_id(r#""ping""#),
            NOT_A_REQUEST,
        ),
        Case::line(
            "envelope.not-an-object-number",
            Envelope,
            "the JSON number 7",
            "-32600 with id null",
            |_| text_without_id("7"),
            NOT_A_REQUEST,
        ),
        Case::line(
            "envelope.not-an-object-null",
            Envelope,
            "the JSON null",
            "-32600 with id null",
            |_| text_without_id("null"),
            NOT_A_REQUEST,
        ),
        Case::line(
            "envelope.empty-object",
            Envelope,
            "{}",
            "-32600 with id null",
            |_| text_without_id("{}"),
            NOT_A_REQUEST,
        ),
        Case::line(
            "envelope.unknown-notification",
            Envelope,
            "the notification notifications/audit_unknown",
            "nothing: a notification is never answered",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":"notifications/audit_unknown"}"#),
            SILENT,
        ),
        Case::line(
            "envelope.notification-bad-params",
            Envelope,
            "notifications/initialized with \"params\":\"x\"",
            "nothing (or -32600 with id null)",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":"x"}"#,
                )
            },
            SILENT_OR_INVALID,
        ),
        Case::line(
            "envelope.notification-method-number",
            Envelope,
            "a notification with \"method\":42",
            "nothing (or -32600 with id null)",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":42}"#),
            SILENT_OR_INVALID,
        ),
        Case::line(
            "envelope.notification-jsonrpc-1.0",
            Envelope,
            "a notification with \"jsonrpc\":\"1.0\"",
            "nothing (or -32600 with id null)",
            |_| text_without_id(r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#),
            SILENT_OR_INVALID,
        ),
        // ---- batches
        Case::line(
            "batch.two-pings",
            Batch,
            "a batch of two pings (ids 7 and 8)",
            "one -32600 with id null (batches left MCP after 2025-03-26)",
            |_| {
                text(
                    r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
                )
            },
            BATCH,
        ),
        Case::line(
            "batch.single",
            Batch,
            "a batch of one ping",
            "one -32600 with id null",
            |_| text(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#),
            BATCH,
        ),
        Case::line(
            "batch.empty",
            Batch,
            "an empty array",
            "one -32600 with id null",
            |_| text_without_id("[]"),
            BATCH_WITHOUT_REQUESTS,
        ),
        Case::line(
            "batch.nested",
            Batch,
            "a batch holding a batch",
            "one -32600 with id null",
            |_| text_without_id(r#"[[{"jsonrpc":"2.0","id":7,"method":"ping"}]]"#),
            BATCH_WITHOUT_REQUESTS,
        ),
        Case::line(
            "batch.scalars",
            Batch,
            "the array [1,2,3]",
            "one -32600 with id null",
            |_| text_without_id("[1,2,3]"),
            BATCH_WITHOUT_REQUESTS,
        ),
        Case::line(
            "batch.notifications-only",
            Batch,
            "a batch of one notification",
            "-32600 with id null, or nothing",
            |_| text_without_id(r#"[{"jsonrpc":"2.0","method":"notifications/audit_unknown"}]"#),
            BATCH_OF_NOTIFICATIONS,
        ),
        Case::line(
            "batch.duplicate-ids",
            Batch,
            "a batch of two pings that share id 7",
            "one -32600 with id null",
            |_| {
                text(
                    r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]"#,
                )
            },
            BATCH,
        ),
        Case::line(
            "batch.ten-thousand",
            Batch,
            "a batch of 10,000 pings",
            "one -32600 with id null",
            |_| big_batch(10_000),
            BATCH,
        ),
        // ---- deep nesting
        Case::line(
            "nesting.arrays-10",
            Nesting,
            "arrays nested 10 deep",
            "a result (ordinary nesting)",
            |_| nested(b"[", b"]", 10),
            SHALLOW,
        ),
        Case::line(
            "nesting.arrays-100",
            Nesting,
            "arrays nested 100 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 100),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-1000",
            Nesting,
            "arrays nested 1,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 1000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-10000",
            Nesting,
            "arrays nested 10,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 10_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-100000",
            Nesting,
            "arrays nested 100,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-1000000",
            Nesting,
            "arrays nested 1,000,000 deep (a 2 MB line)",
            "a result, or -32700/-32600 with id null",
            |_| nested(b"[", b"]", 1_000_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.objects-100000",
            Nesting,
            "objects nested 100,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"{\"a\":", b"}", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.unclosed-1000000",
            Nesting,
            "1,000,000 opening brackets that never close",
            "-32700 (or -32600) with id null",
            |_| unclosed(1_000_000),
            UNPARSEABLE,
        ),
        Case::line(
            "nesting.id-100000",
            Nesting,
            "an id that is an array nested 100,000 deep",
            "an error with id null",
            |_| nested_id(100_000),
            ID_WRONG_TYPE,
        ),
        Case::line(
            "nesting.tool-arguments-10000",
            Nesting,
            "tools/call with arguments nested 10,000 deep",
            "an error or a tool error result",
            |probe| nested_arguments(probe, 10_000),
            BIG_CALL,
        ),
        // ---- huge input
        Case::line(
            "huge.line-1mib",
            Huge,
            "a ping carrying a 1 MiB string",
            "a result, or a refusal; memory within the limit",
            |_| big_string_ping(1 << 20),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.line-64mib",
            Huge,
            "a ping carrying a 64 MiB string, streamed",
            "a result, or a refusal; memory within the limit",
            |_| big_string_ping(64 << 20),
            PARSED_OR_REFUSED,
        )
        .slow()
        .budget(3),
        Case::line(
            "huge.line-512mib",
            Huge,
            "a ping carrying a 512 MiB string, streamed",
            "a result, or a refusal; memory within the limit",
            |_| big_string_ping(512 << 20),
            PARSED_OR_REFUSED,
        )
        .slow()
        .budget(6),
        Case::line(
            "huge.junk-64mib",
            Huge,
            "64 MiB of the letter a, then a newline",
            "-32700 (or -32600) with id null; memory within the limit",
            |_| junk(64 << 20),
            UNPARSEABLE,
        )
        .slow()
        .budget(3),
        Case::custom(
            "huge.no-newline-eof-8mib",
            Huge,
            "a ping carrying an 8 MiB string, no newline, then end of input",
            "no crash, memory within the limit, a clean exit",
            |session| no_newline_then_eof(session, 8 << 20),
        ),
        Case::custom(
            "huge.no-newline-eof-512mib",
            Huge,
            "a ping carrying a 512 MiB string, no newline, then end of input",
            "no crash, memory within the limit, a clean exit",
            |session| no_newline_then_eof(session, 512 << 20),
        )
        .slow()
        .budget(6),
        Case::line(
            "huge.keys-100000",
            Huge,
            "tools/call with 100,000 argument keys",
            "an error or a tool error result; memory within the limit",
            |probe| many_keys(probe, 100_000),
            BIG_CALL,
        ),
        Case::line(
            "huge.string-50mib",
            Huge,
            "tools/call with a 50 MiB string argument, streamed",
            "an error or a tool error result; memory within the limit",
            |probe| big_string_call(probe, 50 << 20),
            BIG_CALL,
        )
        .slow()
        .budget(3),
        Case::line(
            "huge.array-1000000",
            Huge,
            "a ping carrying an array of 1,000,000 zeros",
            "a result, or a refusal; memory within the limit",
            |_| big_array(1_000_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.digits-100000",
            Huge,
            "a 100,000-digit integer",
            "a result, or a refusal",
            |_| digits("", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.fraction-100000",
            Huge,
            "a number 0.000…1 with 100,000 digits",
            "a result, or a refusal",
            |_| digits("0.", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.id-digits-100000",
            Huge,
            "a request whose id has 100,000 digits",
            "an error with id null, or a result echoing the id exactly",
            |_| digit_id(100_000),
            EXACT_ID,
        ),
        Case::line(
            "huge.id-string-1mib",
            Huge,
            "a ping whose id is a 1 MiB string",
            "a result echoing it, or an error with id null",
            |_| long_string_id(1 << 20),
            LONG_ID,
        ),
        // ---- protocol misuse
        Case::line(
            "protocol.ping-before-initialize",
            Protocol,
            "a ping before initialize",
            "a result (ping is allowed at any time)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#),
            PING_ANY_TIME,
        )
        .before_handshake(),
        Case::line(
            "protocol.list-before-initialize",
            Protocol,
            "tools/list before initialize",
            "an answer with id 7 (an error or the list)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            ANSWERED,
        )
        .before_handshake(),
        Case::line(
            "protocol.call-before-initialize",
            Protocol,
            "tools/call before initialize",
            "an error with id 7",
            valid_call,
            CALL_BEFORE_INITIALIZE,
        )
        .before_handshake(),
        Case::line(
            "protocol.initialized-before-initialize",
            Protocol,
            "notifications/initialized before initialize",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            SILENT,
        )
        .before_handshake(),
        Case::line(
            "protocol.second-initialize",
            Protocol,
            "initialize again after the handshake",
            "an error with id 7",
            |_| initialize_line(&serde_json::json!(super::session::PROTOCOL_VERSION)),
            SECOND_INITIALIZE,
        ),
        Case::custom(
            "protocol.unsupported-version",
            Protocol,
            "initialize asking for protocol version 1999-01-01",
            "a result offering a version the server supports, or -32602",
            unsupported_version,
        )
        .before_handshake(),
        Case::line(
            "protocol.version-not-string",
            Protocol,
            "initialize with \"protocolVersion\":20251125",
            "an error with id 7",
            |_| initialize_line(&serde_json::json!(20_251_125)),
            BAD_INITIALIZE,
        )
        .before_handshake(),
        Case::line(
            "protocol.initialize-without-params",
            Protocol,
            "initialize without params",
            "an error with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#),
            BAD_INITIALIZE,
        )
        .before_handshake(),
        Case::line(
            "protocol.unknown-method",
            Protocol,
            "the method audit/no_such_method",
            "-32601 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"audit/no_such_method"}"#),
            UNKNOWN_METHOD,
        ),
        Case::line(
            "protocol.unknown-tool",
            Protocol,
            "tools/call of a tool that does not exist",
            "-32602 with id 7",
            |_| unknown_tool_call(),
            UNKNOWN_TOOL_ARMS,
        ),
        Case::line(
            "protocol.call-without-name",
            Protocol,
            "tools/call whose params have no name",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#),
            BAD_CALL,
        ),
        Case::line(
            "protocol.call-name-number",
            Protocol,
            "tools/call with \"name\":42",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":42}}"#),
            BAD_CALL,
        ),
        Case::line(
            "protocol.call-without-params",
            Protocol,
            "tools/call without params",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#),
            BAD_CALL,
        ),
        Case::line(
            "protocol.call-arguments-string",
            Protocol,
            "tools/call of the probe tool with \"arguments\":\"x\"",
            "-32602, or a tool error result",
            |probe| call_with(probe, "\"x\""),
            BAD_ARGUMENTS,
        ),
        Case::line(
            "protocol.call-arguments-array",
            Protocol,
            "tools/call of the probe tool with \"arguments\":[]",
            "-32602, or a tool error result",
            |probe| call_with(probe, "[]"),
            BAD_ARGUMENTS,
        ),
        Case::line(
            "protocol.list-bad-cursor",
            Protocol,
            "tools/list with a cursor the server never gave",
            "-32602 with id 7",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"audit-not-a-cursor"}}"#,
                )
            },
            BAD_CURSOR,
        ),
        Case::line(
            "protocol.list-cursor-number",
            Protocol,
            "tools/list with \"cursor\":5",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":5}}"#),
            BAD_CURSOR,
        ),
        Case::line(
            "protocol.unsolicited-result",
            Protocol,
            "a response (result) to a request the server never sent",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","id":"audit-unsolicited","result":{}}"#),
            SILENT,
        ),
        Case::line(
            "protocol.unsolicited-error",
            Protocol,
            "an error response to a request the server never sent",
            "nothing (answering it would start a ping-pong between two such peers)",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","id":"audit-unsolicited","error":{"code":-32601,"message":"x"}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.error-with-null-id",
            Protocol,
            "an error response with id null",
            "nothing",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.cancel-unknown-id",
            Protocol,
            "notifications/cancelled for an id never sent",
            "nothing",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"audit-unknown"}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.cancel-bad-params",
            Protocol,
            "notifications/cancelled with \"params\":\"x\"",
            "nothing (or -32600 with id null)",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#,
                )
            },
            SILENT_OR_INVALID,
        ),
        Case::line(
            "protocol.progress-unknown-token",
            Protocol,
            "notifications/progress for a token never issued",
            "nothing",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"audit","progress":1}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.initialized-twice",
            Protocol,
            "notifications/initialized a second time",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            SILENT,
        ),
        Case::line(
            "protocol.roots-changed-without-roots",
            Protocol,
            "notifications/roots/list_changed from a client without roots",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#),
            SILENT,
        ),
        // ---- floods and stream ends
        Case::custom(
            "flood.pings-100000",
            Flood,
            "100,000 pings written back to back",
            "each answered exactly once (results, or rate-limit errors)",
            |session| {
                flood(
                    session,
                    "ping",
                    vec![Op::Pings {
                        first: 1,
                        count: 100_000,
                    }],
                    100_000,
                )
            },
        )
        .budget(6),
        Case::custom(
            "flood.calls-10000",
            Flood,
            "10,000 tools/call of the probe tool written back to back",
            "each answered exactly once; the first error code is reported",
            call_flood,
        )
        .budget(6),
        Case::line(
            "flood.slow-partial-line",
            Flood,
            "half a ping, a 2 s pause, then the rest one byte every 20 ms",
            "a result once the line is complete",
            |_| slow_ping(),
            SERVED,
        )
        .budget(2),
        Case::custom(
            "flood.eof-at-start",
            Flood,
            "end of input before anything else",
            "a clean exit (status 0)",
            eof_at_start,
        )
        .before_handshake(),
        Case::custom(
            "flood.eof-mid-message",
            Flood,
            "half a request, then end of input",
            "a clean exit (status 0), with at most a -32700",
            eof_mid_message,
        ),
        Case::custom(
            "flood.eof-call-in-flight",
            Flood,
            "a tools/call of the probe tool and end of input right after it",
            "the call answered, then a clean exit",
            eof_call_in_flight,
        ),
        Case::custom(
            "flood.pings-unread",
            Flood,
            "500,000 pings while not reading stdout for 3 s, then reading",
            "memory stays within the limit while the replies wait; each answered once",
            unread_pings,
        )
        .slow()
        .budget(12),
        // ---- exposure: hostile values in every string argument, judged by canaries
        Case::exposure(
            "exposure.traversal",
            "../outside-canary and kin in every string argument of every tool",
            "the canary outside the served directory never read back",
            exposure::traversal,
        ),
        Case::exposure(
            "exposure.absolute",
            "the outside canary's absolute path in every string argument",
            "the canary never read back (paths outside the served directory refused)",
            exposure::absolute,
        ),
        Case::exposure(
            "exposure.symlink",
            "symlinks the audit planted (link-out, link-parent/…) in every string argument",
            "the canary never read back through them",
            exposure::symlinks,
        ),
        Case::exposure(
            "exposure.option-injection",
            "--output=…, -o…, -fprint=…, --files0-from=…, --file=…, -f…, @file, -exec",
            "no file created outside, the canary never read back: values are never options",
            exposure::options,
        ),
        Case::exposure(
            "exposure.shell-substitution",
            "$(touch …), `touch …`, $(cat canary) in every string argument",
            "nothing run: values never reach a shell",
            exposure::substitution,
        ),
        Case::exposure(
            "exposure.shell-separators",
            "a; touch …, a | touch …, a && touch …, || touch …, a newline, ; cat canary",
            "nothing run: values never reach a shell",
            exposure::separators,
        ),
    ]
}

/// Replies larger than this to a long method or tool name mean the server echoes it.
pub(crate) const ECHO_LIMIT_BYTES: usize = 4096;
