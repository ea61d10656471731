//! What a correct server may answer: the tables of arms the catalogue judges replies by.
//!
//! Each table lists, first match wins, the answers JSON-RPC 2.0 and MCP allow (pass), answers
//! that are allowed but worse (note) and known wrong ones (fail, with the reason); anything a
//! table does not list fails. The reasons are what a report shows, so they say what the server
//! did and why it matters.

use super::super::judge::{Arm, IdIs, When, fail, fail_as, note, note_as, pass, pass_because};
use super::super::severity::Severity;

pub(super) const NULL: &[IdIs] = &[IdIs::Null];
pub(super) const SENT: &[IdIs] = &[IdIs::Sent];
pub(super) const NULL_OR_SENT: &[IdIs] = &[IdIs::Null, IdIs::Sent];
pub(super) const ANY_ID: &[IdIs] = &[IdIs::Any];
pub(super) const ANY_CODE: &[i64] = &[];

/// Malformed JSON: `-32700` with id null.
pub(super) const PARSE: &[Arm] = &[
    pass(When::Error(&[-32700], NULL)),
    note(
        When::Error(&[-32600], NULL),
        "-32600 where JSON-RPC says -32700 (parse error)",
    ),
    note(
        When::Result(SENT),
        "accepts invalid JSON: a lenient parser reads what stricter ones on the path refuse",
    ),
    note(
        When::Error(ANY_CODE, SENT),
        "parses invalid JSON leniently, then refuses the request",
    ),
    fail_as(
        When::Silent,
        Severity::Medium,
        "JSON-RPC answers unparseable input with -32700 and id null; a client waiting on it hangs",
    ),
];

/// Input that cannot parse, without an id that could be echoed.
pub(super) const UNPARSEABLE: &[Arm] = &[
    pass(When::Error(&[-32700, -32600], NULL)),
    fail_as(
        When::Silent,
        Severity::Medium,
        "JSON-RPC answers unparseable input with -32700 and id null",
    ),
];

/// Grammatical JSON that parsers may refuse (lone surrogates, huge numbers, depth, size).
pub(super) const PARSED_OR_REFUSED: &[Arm] = &[
    pass(When::Result(SENT)),
    pass(When::Error(&[-32700, -32600], NULL)),
    pass(When::Error(ANY_CODE, SENT)),
    fail(
        When::Silent,
        "the request is lost: neither served nor refused",
    ),
];

/// A valid request that must be served.
pub(super) const SERVED: &[Arm] = &[
    pass(When::Result(SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refuses a valid request",
    ),
    fail(When::Silent, "a valid request is not answered"),
];

/// Ordinary nesting, well within any sensible limit.
pub(super) const SHALLOW: &[Arm] = &[
    pass(When::Result(SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refuses 10 levels of nesting",
    ),
    fail(When::Silent, "a valid request is not answered"),
];

pub(super) const INVALID_UTF8: &[Arm] = &[
    pass(When::Error(&[-32700], NULL)),
    note(
        When::Error(&[-32600], NULL),
        "-32600 where JSON-RPC says -32700 (parse error)",
    ),
    note(
        When::Result(SENT),
        "decodes invalid UTF-8 leniently (replacement characters): two readers of one message may see different text",
    ),
    note(
        When::Error(ANY_CODE, SENT),
        "decodes invalid UTF-8 leniently, then refuses the request",
    ),
    fail_as(
        When::Silent,
        Severity::Medium,
        "JSON-RPC answers unparseable input with -32700 and id null",
    ),
];

/// A method name that is not quite `ping`.
pub(super) const ODD_METHOD: &[Arm] = &[
    pass(When::Error(&[-32700], NULL)),
    pass(When::Error(&[-32601, -32600], NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "serves as ping a method name that is not ping",
    ),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32601",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const BOM: &[Arm] = &[
    pass(When::Error(&[-32700], NULL)),
    pass_because(
        When::Result(SENT),
        "ignores the byte-order mark, as RFC 8259 allows",
    ),
    fail(
        When::Silent,
        "neither served nor refused: a client waiting on it hangs",
    ),
];

pub(super) const UTF16: &[Arm] = &[
    pass(When::Error(&[-32700, -32600], NULL)),
    fail_as(
        When::Silent,
        Severity::Medium,
        "JSON-RPC answers unparseable input with -32700 and id null",
    ),
];

pub(super) const WHITESPACE: &[Arm] = &[
    pass(When::Result(SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refuses a valid message (\\r, spaces and tabs are JSON whitespace)",
    ),
    fail(When::Silent, "a valid request is not answered"),
];

pub(super) const BLANK: &[Arm] = &[
    pass(When::Silent),
    note(When::Error(&[-32700, -32600], NULL), "answers a blank line"),
    note(When::Errors(&[-32700, -32600], NULL), "answers blank lines"),
];

/// Valid JSON, not a valid request, with id 7.
pub(super) const INVALID_REQUEST: &[Arm] = &[
    pass(When::Error(&[-32600], NULL_OR_SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32600 (invalid request)",
    ),
    note(When::Result(SENT), "serves an invalid request"),
    fail(
        When::Silent,
        "an invalid request with an id is answered -32600",
    ),
];

pub(super) const METHOD_MISSING: &[Arm] = &[
    pass(When::Error(&[-32600], NULL_OR_SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32600 (invalid request)",
    ),
    note(
        When::Silent,
        "dropped as if it were a response (JSON-RPC answers -32600)",
    ),
];

pub(super) const UNKNOWN_METHOD: &[Arm] = &[
    pass(When::Error(&[-32601, -32600], NULL_OR_SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32601 (method not found)",
    ),
    note(
        When::Result(SENT),
        "answers an unknown method with a result",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const UNKNOWN_TOOL_ARMS: &[Arm] = &[
    pass(When::Error(&[-32602], SENT)),
    note(
        When::ToolError(SENT),
        "a tool error result where MCP says -32602 for an unknown tool",
    ),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32602",
    ),
    fail_as(
        When::Result(SENT),
        Severity::Medium,
        "reports success for a tool that does not exist",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const BAD_PARAMS: &[Arm] = &[
    pass(When::Error(&[-32602, -32600], NULL_OR_SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32602/-32600",
    ),
    note(When::Result(SENT), "accepts params that are not an object"),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const ID_NULL: &[Arm] = &[
    pass(When::Error(&[-32600], NULL)),
    note(
        When::Error(ANY_CODE, NULL),
        "refused with another code than -32600",
    ),
    note(
        When::Result(NULL),
        "serves a request with a null id (MCP forbids them)",
    ),
    note(When::Silent, "treats a null id as a notification"),
];

pub(super) const ID_FRACTION: &[Arm] = &[
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "accepts a fractional id (MCP ids are strings or integers)",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const ID_SEVEN_POINT_ZERO: &[Arm] = &[
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "accepts a float id (MCP ids are strings or integers)",
    ),
    note(When::Result(&[IdIs::Raw("7")]), "echoes the id 7.0 as 7"),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const ID_EXPONENT: &[Arm] = &[
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "accepts an exponent id (MCP ids are strings or integers)",
    ),
    note(
        When::Result(&[IdIs::Raw("100")]),
        "echoes the id 1e2 as 100",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const ID_NEGATIVE_ZERO: &[Arm] = &[
    pass(When::Result(SENT)),
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    note(When::Result(&[IdIs::Raw("0")]), "echoes the id -0 as 0"),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const ID_WRONG_TYPE: &[Arm] = &[
    pass(When::Error(ANY_CODE, NULL)),
    fail_as(
        When::Silent,
        Severity::Medium,
        "JSON-RPC answers an invalid request -32600 with id null",
    ),
];

/// An id a double cannot hold.
pub(super) const UNREPRESENTABLE_ID: &[Arm] = &[
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    pass(When::Result(SENT)),
    fail(
        When::Result(ANY_ID),
        "answers under another id (the number was rounded): the client cannot match it",
    ),
    fail(
        When::Error(ANY_CODE, ANY_ID),
        "answers under another id (the number was rounded): the client cannot match it",
    ),
    fail(When::Silent, "a request is not answered"),
];

/// Big integer ids: echoed digit for digit, or refused.
pub(super) const EXACT_ID: &[Arm] = UNREPRESENTABLE_ID;

pub(super) const LONG_ID: &[Arm] = &[
    pass(When::Result(SENT)),
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const DUPLICATE_METHOD: &[Arm] = &[
    pass(When::Error(&[-32600], NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "reads the last copy of a repeated key; parsers that read the first see another method",
    ),
    note(
        When::Error(&[-32601], SENT),
        "reads the first copy of a repeated key; parsers that read the last see another method",
    ),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32600",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const DUPLICATE_ID: &[Arm] = &[
    pass(When::Error(
        &[-32600],
        &[IdIs::Null, IdIs::Raw("7"), IdIs::Raw("8")],
    )),
    note(
        When::Result(&[IdIs::Raw("7"), IdIs::Raw("8")]),
        "serves a message with two ids (parsers disagree on which one it has)",
    ),
    note(
        When::Error(ANY_CODE, &[IdIs::Null, IdIs::Raw("7"), IdIs::Raw("8")]),
        "refused with another code than -32600",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const DUPLICATE_KEY: &[Arm] = &[
    pass(When::Error(&[-32600], NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "serves a message with a repeated key (parsers disagree on which copy wins)",
    ),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32600",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const DUPLICATE_TOOL_NAME: &[Arm] = &[
    pass(When::Error(&[-32600, -32602], NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "the last copy of \"name\" won: a gateway or filter reading the first would have let this call through",
    ),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32600/-32602",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const EXTRA_MEMBER: &[Arm] = &[
    pass(When::Result(SENT)),
    pass(When::Error(&[-32600], NULL_OR_SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32600",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const METHOD_AND_RESULT: &[Arm] = &[
    pass(When::Result(SENT)),
    pass(When::Error(&[-32600], NULL_OR_SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32600",
    ),
    note(When::Silent, "dropped as if it were a response"),
];

/// Valid JSON that is not a request object.
pub(super) const NOT_A_REQUEST: &[Arm] = &[
    pass(When::Error(&[-32600], NULL)),
    note(
        When::Error(&[-32700], NULL),
        "-32700 for valid JSON (JSON-RPC says -32600, invalid request)",
    ),
    note(
        When::Error(ANY_CODE, NULL),
        "refused with another code than -32600",
    ),
    note(
        When::Silent,
        "dropped without the -32600 JSON-RPC asks for (no client waits on it)",
    ),
];

/// Messages that must never be answered.
pub(super) const SILENT: &[Arm] = &[
    pass(When::Silent),
    fail(
        When::Error(ANY_CODE, ANY_ID),
        "answers a message that must not be answered",
    ),
    fail(
        When::Result(ANY_ID),
        "answers a message that must not be answered",
    ),
];

/// Invalid messages without an id: silence, or JSON-RPC's own -32600 with id null.
pub(super) const SILENT_OR_INVALID: &[Arm] = &[
    pass(When::Silent),
    pass(When::Error(&[-32600], NULL)),
    fail(When::Error(ANY_CODE, ANY_ID), "answers a notification"),
    fail(When::Result(ANY_ID), "answers a notification"),
];

pub(super) const BATCH: &[Arm] = &[
    pass(When::Error(&[-32600], NULL)),
    note_as(
        When::Batch,
        Severity::Medium,
        "answers batches as 2025-03-26 did; later revisions removed them, and a batch can smuggle requests past per-message checks",
    ),
    note_as(
        When::Results(ANY_ID),
        Severity::Medium,
        "answers the messages of a batch one by one",
    ),
    note(When::Result(ANY_ID), "answers one message of a batch"),
    note(
        When::Error(ANY_CODE, NULL),
        "refused with another code than -32600",
    ),
    fail(
        When::Silent,
        "a batch of requests gets -32600, or its answers",
    ),
];

pub(super) const BATCH_WITHOUT_REQUESTS: &[Arm] = &[
    pass(When::Error(&[-32600], NULL)),
    note_as(
        When::Batch,
        Severity::Medium,
        "answers with an array (batch semantics)",
    ),
    note(When::Errors(&[-32600], NULL), "answers each element"),
    note(
        When::Error(ANY_CODE, NULL),
        "refused with another code than -32600",
    ),
    note(
        When::Silent,
        "no -32600 (JSON-RPC answers an empty or invalid batch with one)",
    ),
];

pub(super) const BATCH_OF_NOTIFICATIONS: &[Arm] = &[
    pass(When::Error(&[-32600], NULL)),
    pass(When::Silent),
    note(
        When::Error(ANY_CODE, NULL),
        "refused with another code than -32600",
    ),
];

pub(super) const PING_ANY_TIME: &[Arm] = &[
    pass(When::Result(SENT)),
    note(
        When::Error(ANY_CODE, SENT),
        "refuses a ping before initialize (MCP allows ping at any time)",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const ANSWERED: &[Arm] = &[
    pass(When::Result(SENT)),
    pass(When::Error(ANY_CODE, SENT)),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const CALL_BEFORE_INITIALIZE: &[Arm] = &[
    pass(When::Error(ANY_CODE, SENT)),
    note(
        When::Result(SENT),
        "runs a tool before the session is initialized",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const SECOND_INITIALIZE: &[Arm] = &[
    pass(When::Error(ANY_CODE, SENT)),
    note(
        When::Result(SENT),
        "accepts a second initialize: the session's version and capabilities can change mid-session",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const BAD_INITIALIZE: &[Arm] = &[
    pass(When::Error(&[-32602, -32600], SENT)),
    note(
        When::Error(ANY_CODE, SENT),
        "refused with another code than -32602 (invalid params)",
    ),
    note(When::Result(SENT), "accepts a malformed initialize"),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const BAD_CALL: &[Arm] = &[
    pass(When::Error(&[-32602, -32600], SENT)),
    note(
        When::ToolError(SENT),
        "a tool error result where MCP says -32602",
    ),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32602",
    ),
    fail(
        When::Result(SENT),
        "reports success for a call without a valid tool name",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const BAD_ARGUMENTS: &[Arm] = &[
    pass(When::Error(&[-32602, -32600], SENT)),
    pass_because(
        When::ToolError(SENT),
        "refused as a tool error result (SEP-1303)",
    ),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32602",
    ),
    note(
        When::Result(SENT),
        "runs the tool with arguments that are not an object",
    ),
    fail(When::Silent, "a request is not answered"),
];

/// Huge or deep arguments: any answer, as long as the server survives within its memory.
pub(super) const BIG_CALL: &[Arm] = &[
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    pass(When::Result(SENT)),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const BAD_CURSOR: &[Arm] = &[
    pass(When::Error(&[-32602], SENT)),
    note(
        When::Result(SENT),
        "ignores a cursor it never gave (MCP says -32602)",
    ),
    note(
        When::Error(ANY_CODE, SENT),
        "refused with another code than -32602",
    ),
    fail(When::Silent, "a request is not answered"),
];

pub(super) const TWO_VALUES: &[Arm] = &[
    pass(When::Error(&[-32700], NULL)),
    note(
        When::Error(&[-32600], NULL),
        "-32600 where JSON-RPC says -32700 (parse error)",
    ),
    note(
        When::Results(&[IdIs::Raw("7"), IdIs::Raw("8")]),
        "answers two messages written on one line (MCP: one message per line)",
    ),
    note(
        When::Result(&[IdIs::Raw("7"), IdIs::Raw("8")]),
        "answers one of two messages written on one line",
    ),
    fail_as(
        When::Silent,
        Severity::Medium,
        "JSON-RPC answers unparseable input with -32700 and id null",
    ),
];

/// A malformed request of an optional method (resources, prompts, completion, logging): the
/// method's refusal, or `-32601` from a server that does not offer it.
pub(super) const BAD_OPTIONAL: &[Arm] = &[
    pass(When::Error(&[-32602, -32601, -32600], SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32602 (or -32601 where the method is not offered)",
    ),
    note(
        When::Result(SENT),
        "serves a request whose params the method's schema refuses",
    ),
    fail(When::Silent, "a request is not answered"),
];

/// A prompt, resource or reference that does not exist: `-32602`, or `-32601` from a server
/// that does not offer the method.
pub(super) const NO_SUCH_ITEM: &[Arm] = &[
    pass(When::Error(&[-32602, -32601], SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32602 (MCP's code for an unknown name or URI)",
    ),
    fail_as(
        When::Result(SENT),
        Severity::Medium,
        "serves something that does not exist: a client cannot tell a typo from a result",
    ),
    fail(When::Silent, "a request is not answered"),
];

/// A log level RFC 5424 does not have.
pub(super) const BAD_LEVEL: &[Arm] = &[
    pass(When::Error(&[-32602, -32601], SENT)),
    note(
        When::Error(ANY_CODE, NULL_OR_SENT),
        "refused with another code than -32602",
    ),
    note(
        When::Result(SENT),
        "accepts a log level that does not exist (which messages does it send now?)",
    ),
    fail(When::Silent, "a request is not answered"),
];

/// A huge URI or name for an optional method: refused, whatever the code.
pub(super) const BIG_OPTIONAL: &[Arm] = &[
    pass(When::Error(ANY_CODE, NULL_OR_SENT)),
    note(
        When::Result(SENT),
        "serves a 1 MiB name or URI: nothing it names can be that long",
    ),
    fail(When::Silent, "a request is not answered"),
];
