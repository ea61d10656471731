//! Every bound on untrusted input, in one place.
//!
//! Each constant says what it limits, which attack it stops and why it has its value. The
//! [`Limits`] struct carries the configurable ones into a server (and `HttpLimits` over
//! HTTP); the rest are wire rules that no deployment should need to change. Public are the
//! defaults a user overrides and the bounds a user's own code and configuration must keep
//! (what a tool asks, logs or samples, its schema, its deadline, how many tools, prompts and
//! resources, names and scopes); the bounds only the library applies are its own. Those of
//! manifests, command output and the sandbox are `airlock_manifest::limits`. `SECURITY.md`
//! lists both in one table for operators.

use std::num::{NonZeroU32, NonZeroUsize};
use std::time::Duration;

/// Longest accepted frame (one line of stdin), newline excluded.
///
/// Caps what a peer can make us hold before a single byte is parsed; a longer line is drained
/// to its newline without being stored. Real `tools/call` requests are a few KiB; 1 MiB leaves
/// room for large arguments while keeping the worst case per message small.
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// Deepest nesting of arrays and objects in one message (the top-level object is level 1).
///
/// Stops stack exhaustion and quadratic work on `[[[[…` input. MCP messages are shallow: a
/// `tools/call` with nested arguments rarely passes 10 levels. serde_json's own limit (128)
/// stays on underneath as a second wall.
pub const MAX_JSON_DEPTH: usize = 64;

/// Longest string request id, in bytes after JSON unescaping.
///
/// Ids are echoed on every reply and kept while a call is in flight; an unbounded id would let
/// a peer make every reply as large as its request. Real clients use counters or UUIDs.
pub(crate) const MAX_ID_BYTES: usize = 128;

/// Longest string `progressToken` (`tools/call` `_meta`), in bytes after JSON unescaping; an
/// integer token must fit in 64 bits, as an id must.
///
/// A token is kept while its call runs and echoed on every progress notification of the call:
/// unbounded, a 1 MiB token would come back ten times a second (`PROGRESS_MIN_INTERVAL`), as
/// output the peer chose the size of. Real clients use counters or UUIDs, as they do for ids,
/// hence the id's bound. A call whose token is over it is refused (`-32602`), not served
/// without progress: a silently dropped token leaves the client waiting for reports that never
/// come, and a check that quietly ignores input is where smuggling starts.
pub(crate) const MAX_PROGRESS_TOKEN_BYTES: usize = MAX_ID_BYTES;

/// Longest accepted `method` name, in bytes.
///
/// The longest method MCP defines is under 40 bytes; anything past 128 is not a method.
pub(crate) const MAX_METHOD_BYTES: usize = 128;

/// Longest tool name accepted in a `tools/call` request, in bytes.
///
/// The MCP spec (SEP-986) allows names of up to 128 characters; a longer name cannot match a
/// registered tool, so it is refused before any lookup.
pub(crate) const MAX_CALLED_TOOL_NAME_BYTES: usize = 128;

/// Longest tool name a server may register.
///
/// Names must match `^[A-Za-z0-9_.-]{1,64}$`: that passes both the published conformance
/// check (1–128) and the older one (1–64), so every client accepts our tool list.
pub(crate) const MAX_TOOL_NAME_BYTES: usize = 64;

/// Most tools one server may register.
///
/// A tool list is sent to the model on every turn; past a thousand tools it is a mistake, and
/// the bound keeps `tools/list` paging and the registry small.
pub const MAX_TOOLS_COUNT: usize = 1024;

/// Most prompts one server may register; the same reasoning as [`MAX_TOOLS_COUNT`].
/// `prompts/list` pages them [`TOOLS_PAGE_SIZE`] at a time.
pub const MAX_PROMPTS_COUNT: usize = 1024;

/// Most resources and resource templates one server may register, together; the same
/// reasoning as [`MAX_TOOLS_COUNT`].
pub const MAX_RESOURCES_COUNT: usize = 1024;

/// Longest resource URI, registered or read (`resources/read`'s `uri`). Longer ones match
/// nothing and are never parsed.
pub const MAX_RESOURCE_URI_BYTES: usize = 2048;

/// Most resources one legacy session may be subscribed to at once (`resources/subscribe`);
/// past it a new subscription is refused `-32602`. With [`MAX_RESOURCE_URI_BYTES`], a
/// session holds at most 64 KiB of subscribed URIs.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 32;

/// Resource updates announced ([`ResourceUpdates`](crate::ResourceUpdates)) and not yet
/// taken by every session; a session that falls further behind is told that each of its
/// subscriptions may have changed.
pub(crate) const RESOURCE_UPDATES_QUEUE: usize = 64;

/// How often a legacy HTTP session's `GET` stream carries a comment when it has nothing to
/// say: proxies keep it open, and a stream whose session ended is closed by then.
#[cfg(feature = "http")]
pub(crate) const LISTEN_KEEPALIVE: Duration = Duration::from_secs(15);

/// Longest value of one URI-template variable in a read URI, before decoding.
pub(crate) const MAX_TEMPLATE_VALUE_BYTES: usize = 256;

/// Most values one `completion/complete` answer carries (the specification's cap); a
/// completer's others are counted in `total` and flagged by `hasMore`.
pub(crate) const MAX_COMPLETION_VALUES: usize = 100;

/// Longest completion value sent; a completer's longer values are dropped.
pub(crate) const MAX_COMPLETION_VALUE_BYTES: usize = 1024;

/// Largest `tools/call` `arguments` object, in bytes of compact JSON.
///
/// Bounds the memory a single call holds for its whole run (up to `max_in_flight` of them at
/// once) and the cost of validating it.
pub const MAX_ARGUMENT_BYTES: usize = 256 * 1024;

/// Deepest nesting inside `arguments` (the arguments object itself is level 1).
///
/// Tool inputs are flat records in practice; deep nesting only serves to make validators and
/// handlers recurse.
pub const MAX_ARGUMENT_DEPTH: usize = 16;

/// Most keys in any one object inside `arguments`.
///
/// Stops hash-flooding and per-key validation cost from growing with hostile input.
pub const MAX_OBJECT_KEYS: usize = 256;

/// Most items in any one array inside `arguments`.
pub const MAX_ARRAY_ITEMS: usize = 1024;

/// Longest string inside `arguments`, in bytes.
///
/// A single value larger than this is a file upload, which tools take by path instead.
pub const MAX_STRING_BYTES: usize = 64 * 1024;

/// Most tool calls running at once.
///
/// Each call holds its arguments and a task (for command tools, a process). Eight keeps a
/// two-core machine responsive while letting an agent overlap slow calls; the next call is
/// refused at once with `-31503` rather than queued.
pub const MAX_IN_FLIGHT: usize = 8;

/// Invalid messages in a row after which the peer is cut off.
///
/// A real client makes a mistake now and then; hundreds in a row with nothing valid between
/// them is a fuzzer or a desynchronised stream, and answering each one costs output. Calls of
/// a tool the server does not have are a client mistake a model can repeat without end (a
/// name it made up): they are charged to the call quota instead, and neither count nor reset
/// the count, nor do refusals of a busy server (`-31429`, `-31503`), nor polls of a task the
/// server forgot (`tasks/*` of an id that names no task, charged to the cheap quota).
pub const MAX_CONSECUTIVE_ERRORS: u32 = 256;

/// Default deadline of one tool call.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// Tools per `tools/list` page.
pub const TOOLS_PAGE_SIZE: usize = 50;

/// How long a modern client may cache `tools/list` and `server/discover` (`ttlMs`).
///
/// The list changes only when the server restarts or reloads its tools; a 2026-07-28 client has
/// no session to be told on, so this is how late it may learn of a reload.
pub const TOOLS_LIST_TTL: Duration = Duration::from_secs(300);

/// How long calls still running at end of input may finish before they are cancelled.
///
/// A client that pipes requests and closes stdin still gets its answers; one that hangs up for
/// good does not keep us alive past this.
pub const EOF_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Size of the buffer stdin is read into.
pub(crate) const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Bytes of replies gathered before they are written even though more input is waiting.
///
/// Replies are coalesced into one write while requests are already buffered; this caps how
/// much is held before the write happens regardless. A quarter of a Linux pipe's default
/// capacity (64 KiB): a write of a whole pipe's worth fits only an empty pipe, so with 64 KiB
/// the session stopped at every write until the client had read all of the last one (and
/// then for the client's wake-up); at 16 KiB the client reads one write while the next is
/// gathered (BENCHMARKS.md, issue 17's budget).
pub(crate) const WRITE_BUFFER_BYTES: usize = 16 * 1024;

/// Shortest interval between two progress notifications of one call.
///
/// The spec asks both sides to rate-limit progress; ten a second is smooth for a progress bar
/// and keeps a chatty handler from flooding the client.
pub(crate) const PROGRESS_MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Longest progress `message`, in bytes; longer ones are cut at a character boundary.
pub(crate) const MAX_PROGRESS_MESSAGE_BYTES: usize = 256;

/// Most log messages (`notifications/message`) one tool call sends; the rest are dropped.
pub const MAX_LOG_MESSAGES_PER_CALL: u32 = 100;

/// Longest log message text sent; longer ones are cut at a character boundary.
pub const MAX_LOG_MESSAGE_BYTES: usize = 4096;

/// Most requests (elicitation, sampling) one session waits on the client to answer at once;
/// a tool that asks past it gets [`AskError::Busy`](crate::AskError::Busy).
pub const MAX_OUTSTANDING_ASKS: usize = 4;

/// How long a tool waits for the client's answer before it gets
/// [`AskError::TimedOut`](crate::AskError::TimedOut); the tool's own time limit still
/// applies (a tool that asks a person needs one longer than the default).
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// Largest `result` of an answer to an elicitation or a sampling request, in bytes (the frame
/// bound applies first); a larger one is malformed, unread.
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Most roots a `roots/list` answer may list.
pub(crate) const MAX_ROOTS: usize = 64;

/// Longest root URI in a `roots/list` answer, in bytes.
pub(crate) const MAX_ROOT_URI_BYTES: usize = 2048;

/// Most questions one round of a 2026-07-28 call may ask (`inputRequests`); a tool that asks
/// past it gets [`AskError::Busy`](crate::AskError::Busy).
pub(crate) const MAX_INPUT_REQUESTS: usize = 8;

/// Most members of a 2026-07-28 call's `inputResponses`; more refuse the request (`-32602`).
pub(crate) const MAX_INPUT_RESPONSES: usize = 32;

/// Most rounds one 2026-07-28 call may take: past it, a question gets
/// [`AskError::Busy`](crate::AskError::Busy) instead of another `input_required` result.
pub(crate) const MAX_INPUT_ROUNDS: u64 = 16;

/// Longest name of a question (an `inputRequests` key), in bytes.
pub(crate) const MAX_INPUT_KEY_BYTES: usize = 64;

/// Most bytes of answers a `requestState` carries from round to round; an answer past it
/// gets [`AskError::TooLarge`](crate::AskError::TooLarge).
pub(crate) const MAX_CARRIED_ANSWER_BYTES: usize = 128 * 1024;

/// Longest `requestState`, in bytes (as issued and as accepted); a longer one is refused
/// unread (`-32602`).
pub(crate) const MAX_REQUEST_STATE_BYTES: usize = 256 * 1024;

/// Shortest key a server takes to sign `requestState`s
/// ([`ServerBuilder::request_state_key`](crate::ServerBuilder::request_state_key)): HMAC-SHA-256's
/// output size, so that guessing the key is no easier than guessing a tag. A shorter one is
/// refused at build.
pub const MIN_REQUEST_STATE_KEY_BYTES: usize = 32;

/// How long a `requestState` is good for after it is issued: a retry after it is refused
/// (`-32602`) and the client starts the call again.
pub(crate) const REQUEST_STATE_TTL: Duration = Duration::from_secs(600);

/// Longest elicitation message, and longest choice of a form, in bytes.
pub const MAX_ASK_TEXT_BYTES: usize = 4096;

/// Longest sampling prompt (and system prompt), in bytes.
pub const MAX_SAMPLING_PROMPT_BYTES: usize = 256 * 1024;

/// Most fields of one elicitation form.
pub const MAX_FORM_FIELDS: usize = 32;

/// Longest field name of an elicitation form, in bytes.
pub(crate) const MAX_FORM_FIELD_NAME_BYTES: usize = 64;

/// Most choices of one form field.
pub const MAX_FORM_OPTIONS: usize = 64;

/// Longest free-text answer to a form field, in characters, whatever its `maxLength` says.
pub(crate) const MAX_ELICITED_TEXT_CHARS: usize = 4096;

/// Longest `model` and `stopReason` of a sampling answer, in bytes.
pub(crate) const MAX_SAMPLED_MODEL_BYTES: usize = 256;

/// Capacity a frame buffer keeps between messages; a larger one is shrunk back after use, so
/// one big message does not pin its memory for the rest of the session.
pub(crate) const RETAINED_FRAME_CAPACITY: usize = 64 * 1024;

/// Most schema violations named in one invalid-arguments tool result.
pub(crate) const MAX_REPORTED_VIOLATIONS: usize = 4;

/// Most nodes a tool's compiled input schema may have.
///
/// Schemas come from trusted code or a validated manifest, but the bound keeps validation cost
/// per call predictable (MCP 2026-07-28 asks validators to bound composition cost).
pub const MAX_SCHEMA_NODES: usize = 4096;

/// Largest compiled regular expression in a schema `pattern`, in bytes of automaton.
pub const MAX_PATTERN_AUTOMATON_BYTES: usize = 1024 * 1024;

/// Longest deadline a tool may have: 24 hours, whether a manifest, a library tool or
/// `--tool-timeout-ms` sets it. Every other bound of a day derives from this one.
pub const MAX_TOOL_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Deadline of a task's run unless its tool sets its own (`task_timeout`): 1 hour.
///
/// A task outlives its request (a build, a test suite), so the 30 s call timeout does not
/// apply; without a deadline, a command that never ends would hold its sandbox and a task
/// slot for ever. An hour covers a long test suite; a tool that needs more says so.
pub const TASK_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Longest deadline a tool's task runs may have: 24 hours, as for a call
/// ([`MAX_TOOL_TIMEOUT`]).
///
/// Stops a manifest or builder asking for days: a task slot and a sandbox held that long is
/// an outage, not a build.
pub const MAX_TASK_TIMEOUT: Duration = MAX_TOOL_TIMEOUT;

/// Tasks running at once in the whole server: 16.
///
/// Stops all clients together from starving the machine with long runs. A separate pool from
/// [`MAX_IN_FLIGHT`]: tasks never take the slots of ordinary calls.
pub const MAX_TASKS_RUNNING: usize = 16;

/// Tasks running at once for one owner (an HTTP identity, else a session): 4.
///
/// Stops one client from taking every task slot and sandbox.
pub const MAX_TASKS_RUNNING_PER_CLIENT: usize = 4;

/// Tasks kept (running or finished, not yet forgotten) for one owner: 32.
///
/// Stops a client that never reads its results from piling up entries; a finished task is
/// forgotten after [`TASK_KEEP`].
pub const MAX_TASKS_KEPT_PER_CLIENT: usize = 32;

/// Bytes of task results kept in all: 64 MiB, the budget every task reserves
/// [`MAX_TASK_RESULT_BYTES`] of when it is created.
///
/// Stops memory growth: results kept never pass the budget however many clients create tasks
/// nobody reads. When a new task's reservation does not fit, finished tasks are forgotten
/// first (the oldest of the owner holding the most), so owners keeping results cannot lock
/// the others out; a task is refused only when running tasks' reservations fill it.
pub const MAX_TASK_BYTES: usize = 64 * 1024 * 1024;

/// Bytes of one task's result kept (its content as sent): 1 MiB and 64 KiB, a command's
/// default `max_output_bytes` with room for its notes.
///
/// What each task reserves of [`MAX_TASK_BYTES`]; a larger result is kept as an error saying
/// so.
pub const MAX_TASK_RESULT_BYTES: usize = 1024 * 1024 + 64 * 1024;

/// Bytes of a running task's output so far that one `tasks/get` shows: the last 64 KiB of
/// what it kept, the earlier ones withheld as a cut (the redaction's cut edges apply).
///
/// The reply is built whole before it is written, and JSON writes a control byte as six
/// (`\u0001`): shown whole, the 1 MiB a task keeps was a 6 MiB reply per poll, and a client
/// that polled many tasks without reading held hundreds of MiB (a red-team finding). At most
/// 384 KiB encoded; `tasks/list` shows no output at all.
pub const MAX_TASK_OUTPUT_SHOWN_BYTES: usize = 64 * 1024;

/// The least of [`MAX_TASK_BYTES`] a finished task keeps reserved: 4 KiB, about what its
/// entry costs besides its result.
///
/// A finished task's reservation shrinks to its result, but not below this: the budget then
/// also bounds how many tasks are kept in all (16,384 with the defaults), whatever the number
/// of owners (OAuth subjects, sessions) keeping them.
pub(crate) const TASK_ENTRY_BYTES: usize = 4 * 1024;

/// How long a finished task is kept for its client to read: 10 minutes.
///
/// Stops results nobody fetches from being kept for ever. A client's `ttl` may shorten it
/// down to 10 seconds, never lengthen it.
pub const TASK_KEEP: Duration = Duration::from_secs(10 * 60);

/// The shortest keep a client's `ttl` may ask for: 10 seconds, so a result is readable for a
/// moment after its task ends.
pub(crate) const MIN_TASK_KEEP: Duration = Duration::from_secs(10);

/// The `pollInterval` a task reports: 1 second.
///
/// Polite clients poll no faster; a hostile one is held by [`CHEAP_METHOD_RATE`], which
/// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` are charged to.
pub(crate) const TASK_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// How long a `tools/call` of a `task = "optional"` tool from a client that declared the
/// 2026-07-28 tasks extension waits for its run before it becomes a task: 1 second.
///
/// The extension lets the server decide. A call that ends within this is answered as an
/// ordinary one (no handle to poll, nothing kept); one that runs on is answered with its
/// task's handle, the run going on as the task. Short, because the request is held meanwhile
/// (an HTTP connection, a stdio call slot); long enough that a quick run costs no polling.
pub const TASK_INLINE_WAIT: Duration = Duration::from_secs(1);

/// Largest `prompts/get` reply, in bytes as sent (JSON-escaped: a control character costs
/// six): a prompt that repeats its arguments cannot multiply a request into a reply larger
/// than this. One more is refused with `-32602` (`max_prompt_reply_bytes`), nothing sent.
pub(crate) const MAX_PROMPT_REPLY_BYTES: usize = 1024 * 1024;

// The defaults nest: arguments fit in a frame, a string fits in the arguments, and argument
// nesting fits inside the message's. Checked when the crate compiles.
const _: () = assert!(MAX_ARGUMENT_BYTES < MAX_FRAME_BYTES);
const _: () = assert!(MAX_STRING_BYTES < MAX_ARGUMENT_BYTES);
const _: () = assert!(MAX_ARGUMENT_DEPTH < MAX_JSON_DEPTH);
const _: () = assert!(MAX_CLIENT_IN_FLIGHT <= MAX_IN_FLIGHT);

/// Default quota on `tools/call` across the whole server: 1,200 calls a minute (20 a second)
/// with bursts of 40.
///
/// The MCP spec requires servers to rate-limit tool invocations. An agent loop makes a call
/// per model turn — a few a second at most — so this never slows an honest client, while a
/// runaway or hostile one is held to a rate the host can absorb. Per-tool quotas (for tools
/// that hit a paid API, say) come on top.
pub const TOOL_CALL_RATE: Rate = Rate::new_const(1200, 40);

/// Default quota on cheap methods (`ping`, `tools/list`, `server/discover`, `initialize`):
/// 6,000 a minute with bursts of 200. Separate from the `tools/call` quota, so a ping flood
/// cannot starve tool calls and a call flood cannot starve pings.
pub const CHEAP_METHOD_RATE: Rate = Rate::new_const(6000, 200);

/// How often, at most, refused calls of one client, tool and refusal get an audit record:
/// the first at once, then one `refused_calls` record per interval with the count. One
/// address over its quota grew the audit log by 17 KiB/s with a record per refusal (issue 35).
pub(crate) const REFUSED_RECORD_INTERVAL: Duration = Duration::from_secs(60);

/// Most (client, tool, refusal) keys whose refused calls are counted apart in the audit log;
/// past it they share one entry whose record names no client. Bounds the table and the
/// records per interval, however many addresses send refused calls.
pub(crate) const MAX_REFUSED_RECORD_KEYS: usize = 256;

/// Default size past which the audit log file is rotated (`--audit-log-max-bytes`): a few
/// hundred thousand records, days of a busy server's calls.
pub const AUDIT_LOG_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Default number of rotated audit log files kept (`--audit-log-keep`): with
/// [`AUDIT_LOG_MAX_BYTES`], at most 320 MiB of audit log on disk.
pub const AUDIT_LOG_KEEP: u32 = 4;

/// How recently an HTTP client must have had a call admitted to count as active when the
/// server-wide call quota is shared among clients (`transport::http::shares`): each active
/// client's share is the server's rate divided by their number. Two clients flooding within
/// their own quotas left an honest third 9 of 35 calls (issue 35). Ten seconds covers an agent
/// pausing between calls while it thinks, and lets a client that left give its share back
/// soon.
#[cfg(feature = "http")]
pub(crate) const FAIR_SHARE_WINDOW: Duration = Duration::from_secs(10);

/// Most HTTP connections open at once (`airlock serve --http`).
///
/// Each open connection costs a task and hyper's buffers (a few KiB while idle, up to
/// [`MAX_HTTP_HEADER_BYTES`] while its headers arrive). A connection past the cap is answered
/// `503` at once and closed, without a task. 1,024 idle connections measured at well under the
/// memory bound `SECURITY.md` states; idle ones are closed after [`HTTP_HEADER_READ_TIMEOUT`].
pub const MAX_CONNECTIONS: usize = 1024;

/// Most HTTP connections open at once from one address (an IPv6 /64), taken at accept like
/// [`MAX_CONNECTIONS`]: one address holding sockets it never speaks on cannot take every slot
/// and lock out clients at other addresses (1,100 idle sockets from one address left a
/// legitimate client 12 successes in 99 before this cap). 64 leaves room for many clients
/// behind one NAT; a trusted proxy is counted server-wide only.
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 64;

/// How long a new HTTP connection may take to deliver its first request head; past it, the
/// connection is closed. Shorter than [`HTTP_HEADER_READ_TIMEOUT`] (which also bounds the idle
/// time between requests): a client that connects has its request ready, and a socket that
/// says nothing should not hold a slot for long.
pub const HTTP_FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest request head (request line and headers) in bytes; past it, `431` and the connection
/// is closed. Stops header floods; real MCP requests send well under 2 KiB of headers.
pub const MAX_HTTP_HEADER_BYTES: usize = 16 * 1024;

/// Most header fields in one request; past it, `431`. hyper's own default is 100.
pub const MAX_HTTP_HEADERS: usize = 64;

/// How long a client may take to send a request head, and how long an idle keep-alive
/// connection is kept: a slowloris client holds a connection slot at most this long.
pub const HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection's writes may stay stuck, the client taking no bytes, before the
/// connection is closed. A client that sends requests and never reads would otherwise keep
/// its reply, and a call's slots, for ever; 10 s covers a congested link that still moves.
pub const HTTP_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an HTTP client that sent `max_consecutive_errors` garbage requests in a row is
/// refused (`429`, connection closed): the HTTP counterpart of the stdio cut-off, where the
/// session ends. Long enough that a fuzzer or a broken client costs little, short enough that
/// a client that was fixed, or shares the address, is served again soon.
#[cfg(feature = "http")]
pub(crate) const HTTP_CUT_OFF: Duration = Duration::from_secs(60);

/// How often, at most, one client's refusals of one kind are logged: the first at once, then
/// one line per interval with the count since the last (`transport::http::refusals`). One
/// address without a token wrote 15-23 MiB of log in 5 s with a line per refusal (issue 35);
/// now a flood from one address writes a line a minute per kind. A minute matches
/// [`HTTP_CUT_OFF`], so an operator watching sees each cut-off and its end.
#[cfg(feature = "http")]
pub(crate) const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Most clients (addresses) whose refusals are counted apart for the log; past it, refusals of
/// other clients share one entry (`client=other`). Bounds both the table's memory and the
/// log lines per interval (this many times the kinds of refusal, about 350 KiB a minute at
/// most, however many addresses an attacker has); 256 names every client of a busy office.
#[cfg(feature = "http")]
pub(crate) const MAX_REFUSAL_LOG_CLIENTS: usize = 256;

/// How long a client may take to send a request body once its head arrived (`408` after).
pub const HTTP_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Most bytes the HTTP server holds in request bodies still arriving, all connections
/// together; a body that would take it past gets `503` + `-31503` with `Retry-After`, its
/// connection closed unread. Without it every connection could hold a frame's worth for the
/// body timeout: 512 partial bodies from 8 addresses took the server to 548-560 MiB (issue
/// 35). 16 MiB is sixteen full frames at once, far more than honest clients send together
/// (a call's arguments are at most [`MAX_ARGUMENT_BYTES`]).
pub const MAX_BODY_BYTES_HELD: usize = 16 * 1024 * 1024;

/// Most bytes one HTTP client (token identity, else address) holds in request bodies still
/// arriving; past it, `429` + `-31429` with `Retry-After`, connection closed unread. Two full
/// frames: one client cannot take [`MAX_BODY_BYTES_HELD`] alone; eight addresses could, which
/// is then `503` for bodies, not more memory.
pub const MAX_CLIENT_BODY_BYTES_HELD: usize = 2 * 1024 * 1024;

/// Most legacy (2025-11-25 and earlier) HTTP sessions at once; `initialize` past it gets `503`
/// and `-31503`. Each session holds an engine (a few hundred bytes idle).
pub const MAX_SESSIONS: usize = 1024;

/// Most legacy HTTP sessions one client (its token identity, else its address) may hold; the
/// next `initialize` of that client ends its least recently used session. So one client
/// cannot fill [`MAX_SESSIONS`] and lock the others out: it would take 64 identities (or
/// addresses) using every session of theirs within [`SESSION_IDLE_TIMEOUT`]. An MCP client
/// opens one session per server connection; 16 leaves room for many agents behind one token.
pub const MAX_SESSIONS_PER_CLIENT: usize = 16;

/// How long a legacy HTTP session may go unused before it is forgotten (then `404`).
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Default quota on `tools/call` per HTTP client (authenticated identity, else peer address),
/// on top of the server-wide [`TOOL_CALL_RATE`]: 600 a minute, bursts of 20. One client can
/// use half the server's call rate, so a second client is still served while the first floods.
pub const CLIENT_CALL_RATE: Rate = Rate::new_const(600, 20);

/// Default quota on every HTTP request per client, whatever its method or validity: 3,000 a
/// minute, bursts of 100. Bounds the work one client can cause before a body is read.
pub const CLIENT_REQUEST_RATE: Rate = Rate::new_const(3000, 100);

/// Most tool calls in flight per HTTP client; the next gets `-31503` at once. Half the
/// server-wide [`MAX_IN_FLIGHT`], so one client cannot take every slot.
pub const MAX_CLIENT_IN_FLIGHT: usize = 4;

/// Longest wait for one call to the shared quota store (Redis), connecting included; past it
/// the store counts as unreachable for that request (`-31503` when failing closed, else the
/// local limits). A quota check on one loopback or LAN round trip takes well under a
/// millisecond; 250 ms rides out a busy store without letting a dead one stall every request.
#[cfg(feature = "redis")]
pub(crate) const STORE_CALL_TIMEOUT: Duration = Duration::from_millis(250);

/// How often, while the shared store is unreachable, one request tries it again; the others
/// go straight to the policy without waiting for a timeout. Recovery is noticed within this.
#[cfg(feature = "redis")]
pub(crate) const STORE_RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// Connections each replica keeps to the shared store. Each is multiplexed (many commands in
/// flight on one socket), so a few keep one slow reply from holding up every other check.
#[cfg(feature = "redis")]
pub(crate) const STORE_CONNECTIONS: usize = 4;

/// Default expiry of an in-flight lease in the shared store: a replica renews the leases of
/// its running calls every third of it, so a replica that dies gives its calls' slots back
/// within this. Short enough that a crash costs its clients seconds, long enough that a store
/// pausing for a moment does not drop leases of calls still running.
pub const STORE_LEASE_TTL: Duration = Duration::from_secs(15);

/// Shortest and longest configurable lease expiry (renewals at a third of it must stay well
/// above `STORE_CALL_TIMEOUT`; past an hour a dead replica's slots stay taken too long).
pub const STORE_LEASE_TTL_RANGE: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(3600));

/// Longest key namespace of the shared store, in bytes (`[A-Za-z0-9_.-]`): it prefixes
/// every key, so that deployments sharing one Redis never share limits.
pub const MAX_STORE_NAMESPACE_BYTES: usize = 64;

/// Most HTTP clients whose quota state is kept. Past it, idle entries are dropped first; if
/// all are active, requests of clients not yet tracked get `-31429` (fail closed) rather than
/// memory growing with the number of source addresses an attacker controls.
pub const MAX_TRACKED_CLIENTS: usize = 65_536;

/// Shortest bearer token accepted (`--auth-token-env`): shorter ones are refused at start.
#[cfg(feature = "http")]
pub(crate) const MIN_AUTH_TOKEN_BYTES: usize = 16;

/// Longest name of a token's environment variable (`--auth-token-env NAME`).
///
/// The name is the client's identity, logged and used as a quota key, so it is kept short;
/// real names are a few words in capitals. A longer value, or one that is not
/// `[A-Za-z_][A-Za-z0-9_]*`, is refused at start without being shown: it is most likely the
/// token itself, given where its variable's name belongs.
pub const MAX_TOKEN_VARIABLE_BYTES: usize = MAX_VARIABLE_NAME_BYTES;

/// Bytes of any environment variable name airlock takes (`variables`): real names are a few
/// words; one past this is most likely a value pasted where its name belongs.
pub const MAX_VARIABLE_NAME_BYTES: usize = 128;

/// Longest bearer token compared; a longer `Authorization` value is refused unread.
#[cfg(feature = "http")]
pub(crate) const MAX_AUTH_TOKEN_BYTES: usize = 4096;

/// Longest OAuth access token (a JWT) read from `Authorization`; a longer one is `401`
/// `invalid_token` before a byte of it is decoded. Real access tokens are 1 to 2 KiB (a few
/// claims, an RS256 signature of 342 characters); 8 KiB leaves room for many scopes and a
/// 4096-bit key's signature, and stays under the head cap ([`MAX_HTTP_HEADER_BYTES`]), so a
/// longer token still reaches this check rather than hyper's `431`.
#[cfg(feature = "oauth")]
pub(crate) const MAX_ACCESS_TOKEN_BYTES: usize = 8 * 1024;

/// Longest `sub` (and client id) of an access token used as a client's identity. The identity
/// keys quotas and legacy sessions and is logged; identity providers use UUIDs, e-mail
/// addresses or `provider|id` forms well under this. A longer one is `401` `invalid_token`.
#[cfg(feature = "oauth")]
pub(crate) const MAX_TOKEN_SUBJECT_BYTES: usize = 128;

/// Most scopes read from one access token (`scope`, or `scp`); a token with more is `401`
/// `invalid_token`: each call's check walks them, and no real grant holds this many.
#[cfg(feature = "oauth")]
pub(crate) const MAX_TOKEN_SCOPES: usize = 64;

/// Longest scope, in a token, a manifest or the tool builder (RFC 6749 scope tokens are
/// short words: `files:read`, `https://…/auth/drive.readonly`).
pub const MAX_SCOPE_BYTES: usize = 128;

/// Most scopes one tool may require.
pub const MAX_TOOL_SCOPES: usize = 16;

/// Largest JWKS document read, from a file or from `jwks_uri`. A key set of a few RSA-4096
/// keys is under 10 KiB; past the cap the fetch is abandoned (the keys held are kept) or the
/// file refused at start, so a huge or endless answer costs at most this much memory.
#[cfg(feature = "oauth")]
pub(crate) const MAX_JWKS_BYTES: usize = 64 * 1024;

/// Most keys kept from one JWKS; keys past it are ignored (a log line says so). Providers
/// publish two or three (the current key and the next).
#[cfg(feature = "oauth")]
pub(crate) const MAX_JWKS_KEYS: usize = 32;

/// How long one fetch of `jwks_uri` may take, connect to last body byte. A request that waits
/// for a fetch (its key is unknown) waits at most this; requests whose key is held never wait
/// for any fetch. Identity providers answer in well under a second.
#[cfg(feature = "oauth")]
pub(crate) const JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Least time between two fetches of `jwks_uri`, whatever asks for them: tokens naming
/// unknown `kid`s cannot turn the server into a flood against the identity provider (one
/// fetch per 30 s at most). A rotated key is picked up by the first token naming it after
/// that, and by the periodic refresh.
#[cfg(feature = "oauth")]
pub(crate) const JWKS_MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// Age of the held key set after which a request starts a refresh in the background (it does
/// not wait for it): a key withdrawn by the provider stops being accepted within about this
/// time plus one fetch. The held keys stay in use until a fetch succeeds.
#[cfg(feature = "oauth")]
pub(crate) const JWKS_REFRESH_AFTER: Duration = Duration::from_secs(600);

/// Clock skew tolerated on `exp` and `nbf`: small, as RFC 9068 asks; 30 s covers NTP-kept
/// clocks, while a token past its expiry is refused within half a minute.
#[cfg(feature = "oauth")]
pub(crate) const TOKEN_LEEWAY_SECONDS: u64 = 30;

/// How long a browser may reuse a CORS preflight's answer (`Access-Control-Max-Age`). Not a
/// defence (every request is checked again), only how long a browser keeps asking less:
/// 10 minutes, Chromium's own default cap for a preflight cache entry being 2 hours.
#[cfg(feature = "http")]
pub(crate) const CORS_MAX_AGE: Duration = Duration::from_secs(600);

/// Largest TLS certificate or key file read at start (`--tls-cert`, `--tls-key`). A chain of a
/// few certificates is a few KiB; the cap keeps a mistaken path (a device, a log) from being
/// read without end.
pub const MAX_TLS_FILE_BYTES: u64 = 1024 * 1024;

/// Most encrypted bytes rustls holds for one HTTPS connection whose client does not read
/// (rustls' default is 64 KiB). One TLS record's worth: with hyper's piece (64 KiB) and its
/// buffer, what a non-reading client pins stays near the plain-HTTP figure.
#[cfg(feature = "http")]
pub(crate) const MAX_TLS_BUFFERED_BYTES: usize = 16 * 1024;

/// Most tools with a series of their own in the metrics (`metrics`), counted over every name
/// registered since start: each reload may add names, and each name costs its counters and a
/// histogram (under 1 KiB) for the life of the process and lines in every scrape. Past it,
/// new names are counted under `_OTHER`. 1,024 is far beyond any manifest (the tools/list
/// page holds 100), so only a manifest renamed on every reload meets it.
#[cfg(feature = "metrics")]
pub(crate) const MAX_METRIC_TOOLS: usize = 1024;

/// Most connections the metrics endpoint serves at once; past it, a new connection takes the
/// place of the oldest one whose request head is not complete (or is closed at accept when
/// every one is being answered). A scraper needs one; a few more let an operator's `curl` in
/// beside it, while a client that opens many cannot hold more than this many descriptors or
/// tasks, nor keep a scraper out by holding half-sent heads.
#[cfg(all(feature = "metrics", feature = "http"))]
pub(crate) const MAX_METRICS_CONNECTIONS: usize = 8;

/// How long the metrics endpoint waits for a request head: a connection that sends nothing
/// (or a byte at a time) loses its slot after this. A scraper sends its head at once.
#[cfg(all(feature = "metrics", feature = "http"))]
pub(crate) const METRICS_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one metrics connection may last, head to the last byte of the reply: a client
/// that does not read the reply cannot keep a slot. Rendering takes microseconds, and a
/// Prometheus scrape times out after 10 s by default.
#[cfg(all(feature = "metrics", feature = "http"))]
pub(crate) const METRICS_CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest request head the metrics endpoint reads (hyper's smallest read buffer). A
/// scrape's head is a few hundred bytes; a larger one is refused (`431`) before it is kept.
#[cfg(all(feature = "metrics", feature = "http"))]
pub(crate) const MAX_METRICS_HEAD_BYTES: usize = 8 * 1024;

/// Most header lines in a metrics request head (`431` past it); a scraper sends about five.
#[cfg(all(feature = "metrics", feature = "http"))]
pub(crate) const MAX_METRICS_HEADERS: usize = 32;

/// Largest `tracestate` a peer's trace context may carry for it to be kept (the W3C limit is
/// 32 members of at most 512 bytes between them). A longer one is dropped, the parent kept: it
/// goes into each traced span and a command's `TRACESTATE`, so the peer cannot make either
/// large.
#[cfg(feature = "otel")]
pub(crate) const MAX_TRACESTATE_BYTES: usize = 512;

/// Most members in a `tracestate` that is kept (the W3C limit).
#[cfg(feature = "otel")]
pub(crate) const MAX_TRACESTATE_MEMBERS: usize = 32;

/// Longest string request id a span's `jsonrpc.request.id` shows, in bytes (cut at a character
/// boundary): an id is the peer's text, and at most `MAX_ID_BYTES` anyway.
#[cfg(feature = "otel")]
pub(crate) const MAX_SPAN_REQUEST_ID_BYTES: usize = 128;

/// Most finished spans waiting for the export thread (a span waits as a record of 144 bytes:
/// 9 MiB in all, and as much again in the batch being exported, whose vector the queue's is
/// swapped with). Past it, spans are dropped and counted (one warning): a collector that is
/// down or slow, or cores too busy serving for the export to keep up, cost spans, never memory
/// beyond this or a slower request.
#[cfg(feature = "otel")]
pub(crate) const MAX_SPANS_QUEUED: usize = 65_536;

/// How much lower the span export thread runs than the threads that serve (its nice value,
/// on Linux per thread): when every core is busy, exporting waits and serving does not.
#[cfg(feature = "otel")]
pub(crate) const EXPORT_THREAD_NICENESS: i32 = 10;

/// The share of one core the span export thread may use, in percent: after each export it
/// rests long enough to keep its CPU time (user and system: encoding and sending) under this
/// share of the time passed. A flood of traced requests then costs the serving threads
/// little, and spans past what the share exports wait in the queue, then are dropped and
/// counted. At a few hundred nanoseconds a span, the share exports some hundred thousand
/// spans a second.
#[cfg(feature = "otel")]
pub(crate) const SPAN_EXPORT_CPU_PERCENT: u32 = 10;

/// Most spans in one OTLP export request: about 0.2 to 0.6 MiB encoded (a span is 100 to 300
/// bytes), under the 4 MiB a collector is commonly set to take; fewer, larger requests cost
/// the export thread less.
#[cfg(feature = "otel")]
pub(crate) const MAX_SPANS_PER_EXPORT: usize = 2_048;

/// How long finished spans wait before they are exported, at most (the SDK's default is 5 s;
/// shorter shows a call in the collector while the operator still looks at it).
#[cfg(feature = "otel")]
pub(crate) const SPAN_EXPORT_INTERVAL: Duration = Duration::from_secs(1);

/// How long the OTLP client waits to connect to the collector.
#[cfg(feature = "otel")]
pub(crate) const OTLP_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the OTLP client waits on one read or write to the collector: a collector that
/// stops reading or answering holds the export thread this long per request, never a session.
#[cfg(feature = "otel")]
pub(crate) const OTLP_IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest collector response the OTLP client reads, head and body (a partial-success reply
/// is a few hundred bytes); past it the export counts as failed.
#[cfg(feature = "otel")]
pub(crate) const MAX_OTLP_RESPONSE_BYTES: usize = 64 * 1024;

/// How long the end of a server waits for its last spans to be exported.
#[cfg(feature = "otel")]
pub(crate) const SPAN_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Limits of the HTTP transport (the `http` feature), with safe defaults; each field defaults
/// to the constant of the same name. The largest body is the server's `max_frame_bytes` (one
/// POST, one message).
#[cfg(feature = "http")]
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpLimits {
    /// See [`MAX_CONNECTIONS`].
    pub max_connections: NonZeroUsize,
    /// See [`MAX_CONNECTIONS_PER_ADDRESS`].
    pub max_connections_per_address: NonZeroUsize,
    /// See [`HTTP_FIRST_REQUEST_TIMEOUT`].
    pub first_request_timeout: Duration,
    /// See [`MAX_HTTP_HEADER_BYTES`].
    pub max_header_bytes: NonZeroUsize,
    /// See [`MAX_HTTP_HEADERS`].
    pub max_headers: NonZeroUsize,
    /// See [`HTTP_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`HTTP_BODY_READ_TIMEOUT`].
    pub body_read_timeout: Duration,
    /// See [`HTTP_WRITE_TIMEOUT`].
    pub write_timeout: Duration,
    /// See [`MAX_SESSIONS`].
    pub max_sessions: NonZeroUsize,
    /// See [`MAX_SESSIONS_PER_CLIENT`].
    pub max_sessions_per_client: NonZeroUsize,
    /// See [`SESSION_IDLE_TIMEOUT`].
    pub session_idle_timeout: Duration,
    /// Quota on `tools/call` per client; `None` turns it off. See [`CLIENT_CALL_RATE`].
    pub client_call_rate: Option<Rate>,
    /// Quota on every request per client; `None` turns it off. See [`CLIENT_REQUEST_RATE`].
    pub client_request_rate: Option<Rate>,
    /// See [`MAX_CLIENT_IN_FLIGHT`].
    pub client_in_flight: NonZeroUsize,
    /// See [`MAX_TRACKED_CLIENTS`].
    pub max_tracked_clients: NonZeroUsize,
    /// See [`MAX_BODY_BYTES_HELD`].
    pub max_body_bytes_held: NonZeroUsize,
    /// See [`MAX_CLIENT_BODY_BYTES_HELD`].
    pub max_client_body_bytes_held: NonZeroUsize,
}

#[cfg(feature = "http")]
impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_connections: non_zero(MAX_CONNECTIONS),
            max_connections_per_address: non_zero(MAX_CONNECTIONS_PER_ADDRESS),
            first_request_timeout: HTTP_FIRST_REQUEST_TIMEOUT,
            max_header_bytes: non_zero(MAX_HTTP_HEADER_BYTES),
            max_headers: non_zero(MAX_HTTP_HEADERS),
            header_read_timeout: HTTP_HEADER_READ_TIMEOUT,
            body_read_timeout: HTTP_BODY_READ_TIMEOUT,
            write_timeout: HTTP_WRITE_TIMEOUT,
            max_sessions: non_zero(MAX_SESSIONS),
            max_sessions_per_client: non_zero(MAX_SESSIONS_PER_CLIENT),
            session_idle_timeout: SESSION_IDLE_TIMEOUT,
            client_call_rate: Some(CLIENT_CALL_RATE),
            client_request_rate: Some(CLIENT_REQUEST_RATE),
            client_in_flight: non_zero(MAX_CLIENT_IN_FLIGHT),
            max_tracked_clients: non_zero(MAX_TRACKED_CLIENTS),
            max_body_bytes_held: non_zero(MAX_BODY_BYTES_HELD),
            max_client_body_bytes_held: non_zero(MAX_CLIENT_BODY_BYTES_HELD),
        }
    }
}

/// A quota: a sustained rate and a burst (GCRA, as `governor` implements it).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Rate {
    /// Requests admitted per minute, sustained.
    pub per_minute: NonZeroU32,
    /// Requests admitted back to back after a quiet period.
    pub burst: NonZeroU32,
}

impl Rate {
    /// A quota of `per_minute` with bursts of `burst`; zeros become one.
    pub const fn new_const(per_minute: u32, burst: u32) -> Self {
        Self {
            per_minute: match NonZeroU32::new(per_minute) {
                Some(n) => n,
                None => NonZeroU32::MIN,
            },
            burst: match NonZeroU32::new(burst) {
                Some(n) => n,
                None => NonZeroU32::MIN,
            },
        }
    }
}

/// Configurable bounds of one server, with safe defaults.
///
/// Every field defaults to the constant of the same name in this module. Numbers are non-zero
/// by type: a zero limit would either disable the server or, worse, be read as "unlimited".
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Limits {
    /// See [`MAX_FRAME_BYTES`].
    pub max_frame_bytes: NonZeroUsize,
    /// See [`MAX_JSON_DEPTH`].
    pub max_json_depth: NonZeroUsize,
    /// See [`MAX_ARGUMENT_BYTES`].
    pub max_argument_bytes: NonZeroUsize,
    /// See [`MAX_ARGUMENT_DEPTH`].
    pub max_argument_depth: NonZeroUsize,
    /// See [`MAX_OBJECT_KEYS`].
    pub max_object_keys: NonZeroUsize,
    /// See [`MAX_ARRAY_ITEMS`].
    pub max_array_items: NonZeroUsize,
    /// See [`MAX_STRING_BYTES`].
    pub max_string_bytes: NonZeroUsize,
    /// See [`MAX_IN_FLIGHT`].
    pub max_in_flight: NonZeroUsize,
    /// See [`MAX_CONSECUTIVE_ERRORS`].
    pub max_consecutive_errors: NonZeroU32,
    /// Deadline of a tool call unless the tool sets its own; see [`TOOL_TIMEOUT`].
    pub tool_timeout: Duration,
    /// See [`TOOLS_PAGE_SIZE`].
    pub tools_page_size: NonZeroUsize,
    /// See [`TOOLS_LIST_TTL`].
    pub tools_list_ttl: Duration,
    /// See [`EOF_DRAIN_TIMEOUT`].
    pub eof_drain_timeout: Duration,
    /// Quota on `tools/call` for the whole server; `None` turns it off. See
    /// [`TOOL_CALL_RATE`].
    pub tool_call_rate: Option<Rate>,
    /// Quota on cheap methods; `None` turns it off. See [`CHEAP_METHOD_RATE`].
    pub cheap_method_rate: Option<Rate>,
    /// Deadline of a task's run unless its tool sets its own; see [`TASK_TIMEOUT`] (at most
    /// [`MAX_TASK_TIMEOUT`]).
    pub task_timeout: Duration,
    /// See [`MAX_TASKS_RUNNING`].
    pub max_tasks_running: NonZeroUsize,
    /// See [`MAX_TASKS_RUNNING_PER_CLIENT`].
    pub max_tasks_running_per_client: NonZeroUsize,
    /// See [`MAX_TASKS_KEPT_PER_CLIENT`].
    pub max_tasks_kept_per_client: NonZeroUsize,
    /// See [`MAX_TASK_BYTES`].
    pub max_task_bytes: NonZeroUsize,
    /// See [`MAX_TASK_RESULT_BYTES`].
    pub max_task_result_bytes: NonZeroUsize,
    /// See [`TASK_KEEP`].
    pub task_keep: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_bytes: non_zero(MAX_FRAME_BYTES),
            max_json_depth: non_zero(MAX_JSON_DEPTH),
            max_argument_bytes: non_zero(MAX_ARGUMENT_BYTES),
            max_argument_depth: non_zero(MAX_ARGUMENT_DEPTH),
            max_object_keys: non_zero(MAX_OBJECT_KEYS),
            max_array_items: non_zero(MAX_ARRAY_ITEMS),
            max_string_bytes: non_zero(MAX_STRING_BYTES),
            max_in_flight: non_zero(MAX_IN_FLIGHT),
            max_consecutive_errors: NonZeroU32::new(MAX_CONSECUTIVE_ERRORS)
                .unwrap_or(NonZeroU32::MIN),
            tool_timeout: TOOL_TIMEOUT,
            tools_page_size: non_zero(TOOLS_PAGE_SIZE),
            tools_list_ttl: TOOLS_LIST_TTL,
            eof_drain_timeout: EOF_DRAIN_TIMEOUT,
            tool_call_rate: Some(TOOL_CALL_RATE),
            cheap_method_rate: Some(CHEAP_METHOD_RATE),
            task_timeout: TASK_TIMEOUT,
            max_tasks_running: non_zero(MAX_TASKS_RUNNING),
            max_tasks_running_per_client: non_zero(MAX_TASKS_RUNNING_PER_CLIENT),
            max_tasks_kept_per_client: non_zero(MAX_TASKS_KEPT_PER_CLIENT),
            max_task_bytes: non_zero(MAX_TASK_BYTES),
            max_task_result_bytes: non_zero(MAX_TASK_RESULT_BYTES),
            task_keep: TASK_KEEP,
        }
    }
}

/// The constants above are all non-zero; `MIN` (1) is never reached and only keeps this total.
fn non_zero(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_of_a_day_is_the_longest_tool_deadline() {
        // The manifest's message ("between 1 ms and 24 hours") and SECURITY.md state 24 hours.
        assert_eq!(MAX_TOOL_TIMEOUT, Duration::from_secs(86_400));
    }

    #[test]
    fn defaults_match_the_documented_constants() {
        let limits = Limits::default();
        assert_eq!(limits.max_frame_bytes.get(), MAX_FRAME_BYTES);
        assert_eq!(limits.max_json_depth.get(), MAX_JSON_DEPTH);
        assert_eq!(limits.max_argument_bytes.get(), MAX_ARGUMENT_BYTES);
        assert_eq!(limits.max_argument_depth.get(), MAX_ARGUMENT_DEPTH);
        assert_eq!(limits.max_object_keys.get(), MAX_OBJECT_KEYS);
        assert_eq!(limits.max_array_items.get(), MAX_ARRAY_ITEMS);
        assert_eq!(limits.max_string_bytes.get(), MAX_STRING_BYTES);
        assert_eq!(limits.max_in_flight.get(), MAX_IN_FLIGHT);
        assert_eq!(limits.max_consecutive_errors.get(), MAX_CONSECUTIVE_ERRORS);
        assert_eq!(limits.tools_page_size.get(), TOOLS_PAGE_SIZE);
    }

    #[cfg(feature = "http")]
    #[test]
    fn http_defaults_match_constants() {
        let http = HttpLimits::default();
        assert_eq!(http.max_connections.get(), MAX_CONNECTIONS);
        assert_eq!(http.max_sessions.get(), MAX_SESSIONS);
        assert_eq!(http.client_in_flight.get(), MAX_CLIENT_IN_FLIGHT);
        assert_eq!(http.max_header_bytes.get(), MAX_HTTP_HEADER_BYTES);
    }
}
