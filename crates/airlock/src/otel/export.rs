//! The export thread: span records in, OTLP/HTTP requests out.
//!
//! Each [`SpanRecord`] is given its shape by the MCP semantic conventions (its name, kind,
//! attributes and status: [`shape`]) and written straight into the protobuf of an OTLP
//! `ExportTraceServiceRequest` (`opentelemetry/proto/collector/trace/v1`): no intermediate
//! objects, no allocation per span but a string id's escaped copy and a command's status
//! text. At most [`MAX_SPANS_PER_EXPORT`] spans, or what [`SPAN_EXPORT_INTERVAL`] brings, go
//! in one POST, blocking this thread only. A failed export is logged and its spans dropped:
//! tracing never slows or fails a request.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::client::Client;
use super::proto;
use super::{Failure, More, Queue, Run, SpanRecord, Transport};
use crate::envelope::RequestMethod;
use crate::id::IdKey;
use crate::limits::{MAX_SPAN_REQUEST_ID_BYTES, MAX_SPANS_PER_EXPORT, SPAN_EXPORT_CPU_PERCENT};

/// Where spans go, and the bytes every export starts with.
pub(super) struct Exporter {
    client: Client,
    /// The encoded `Resource` (`service.name`, `service.version`).
    resource: Vec<u8>,
    /// The encoded `InstrumentationScope` (`airlock` and its version).
    scope: Vec<u8>,
}

/// An exporter posting to `endpoint` as `service` `version`.
pub(super) fn exporter(client: Client, service: &str, version: &str) -> Exporter {
    let mut resource = Vec::new();
    string_attribute(&mut resource, 1, "service.name", service);
    string_attribute(&mut resource, 1, "service.version", version);
    let mut scope = Vec::new();
    proto::bytes(&mut scope, 1, b"airlock");
    proto::bytes(&mut scope, 2, env!("CARGO_PKG_VERSION").as_bytes());
    Exporter {
        client,
        resource,
        scope,
    }
}

/// Exports what `queue` brings, at most [`MAX_SPANS_PER_EXPORT`] per request, until it is
/// closed and empty.
///
/// After each request it rests to keep its CPU time within [`SPAN_EXPORT_CPU_PERCENT`] of
/// one core (not on the queue's last spans, at the end).
pub(super) fn run(exporter: &mut Exporter, queue: &Queue) {
    let mut taken = Vec::new();
    let mut body = Vec::new();
    while queue.take(&mut taken) {
        for spans in taken.chunks(MAX_SPANS_PER_EXPORT) {
            let before = thread_cpu();
            exporter.request(spans, &mut body);
            let count = spans.len();
            match exporter.client.post(&body) {
                Ok(()) => tracing::trace!(count, "spans exported"),
                Err(error) => tracing::warn!(count, %error, "spans could not be exported"),
            }
            if !queue.is_closed() {
                std::thread::sleep(rest_after(thread_cpu().saturating_sub(before)));
            }
        }
        taken.clear();
    }
}

/// This thread's CPU time so far (user and system).
fn thread_cpu() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// How long to rest after working `worked`, so that work is at most
/// [`SPAN_EXPORT_CPU_PERCENT`] of the time: `worked × (100 / percent − 1)`.
fn rest_after(worked: Duration) -> Duration {
    let percent = SPAN_EXPORT_CPU_PERCENT.clamp(1, 100);
    worked
        .saturating_mul(100_u32.saturating_sub(percent))
        .checked_div(percent)
        .unwrap_or_default()
}

impl Exporter {
    /// `body` becomes the export request of `spans` (its old bytes dropped, its capacity
    /// kept).
    pub(super) fn request(&self, spans: &[SpanRecord], body: &mut Vec<u8>) {
        body.clear();
        // ExportTraceServiceRequest.resource_spans
        proto::message(body, 1, |resource_spans| {
            // ResourceSpans.resource
            proto::message_head(resource_spans, 1, self.resource.len());
            resource_spans.extend_from_slice(&self.resource);
            // ResourceSpans.scope_spans
            proto::message(resource_spans, 2, |scope_spans| {
                // ScopeSpans.scope
                proto::message_head(scope_spans, 1, self.scope.len());
                scope_spans.extend_from_slice(&self.scope);
                for span in spans {
                    // ScopeSpans.spans
                    proto::message(scope_spans, 2, |buf| write_span(buf, span));
                }
            });
        });
    }
}

/// The JSON-RPC codes that are the caller's mistake, which the conventions do not count as
/// errors of the server: parse error, invalid request, method not found, invalid params,
/// resource not found.
const CALLER_ERRORS: [i32; 5] = [-32_700, -32_600, -32_601, -32_602, -32_002];

/// `Span.SpanKind`.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(super) enum Kind {
    Internal,
    Server,
}

/// An attribute's value, borrowed from the record where it can be.
#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    Text(&'a str),
    Int(i64),
    /// A JSON-RPC error code, as a string of its digits.
    Code(i32),
    /// `jsonrpc.request.id`: see [`request_id`].
    Id(&'a IdKey),
}

/// The most attributes a span has: a request's ten.
const MAX_ATTRIBUTES: usize = 10;

/// A span's attributes, in a fixed array (no allocation).
#[derive(Debug)]
pub(super) struct Attributes<'a> {
    items: [Option<(&'static str, Value<'a>)>; MAX_ATTRIBUTES],
}

impl<'a> Attributes<'a> {
    fn new() -> Self {
        Self {
            items: [None; MAX_ATTRIBUTES],
        }
    }

    fn push(&mut self, key: &'static str, value: Value<'a>) {
        // Never full: no span has more than MAX_ATTRIBUTES (tests see each kind's).
        if let Some(free) = self.items.iter_mut().find(|item| item.is_none()) {
            *free = Some((key, value));
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&'static str, Value<'a>)> + '_ {
        self.items.iter().flatten().copied()
    }
}

/// What a span is besides its ids and times.
#[derive(Debug)]
pub(super) struct Shape<'a> {
    /// Its name: these parts, joined by a space.
    pub(super) name: (&'a str, Option<&'a str>),
    pub(super) kind: Kind,
    pub(super) attributes: Attributes<'a>,
    /// `Some(message)`: status ERROR with it; `None`: UNSET.
    pub(super) error: Option<Cow<'static, str>>,
    /// Whether its parent (if it has one) is the peer's.
    pub(super) remote_parent: bool,
}

/// The shape of `record`'s span, by the MCP conventions.
pub(super) fn shape(record: &SpanRecord) -> Shape<'_> {
    let more = record.more.as_deref();
    match more.and_then(|more| more.run.as_ref()) {
        Some(run) => command(record, run),
        None => request(record, more),
    }
}

/// A request's span, by the MCP server span conventions.
fn request<'a>(record: &'a SpanRecord, more: Option<&'a More>) -> Shape<'a> {
    let method = record.method;
    let mut attributes = Attributes::new();
    attributes.push("mcp.method.name", Value::Text(method.as_str()));
    attributes.push("jsonrpc.request.id", Value::Id(&record.id));
    let prompt = more.and_then(|more| more.prompt.as_deref());
    let target = record.tool.as_ref().map(super::Tool::name).or(prompt);
    if let Some(tool) = &record.tool {
        attributes.push("gen_ai.tool.name", Value::Text(tool.name()));
    }
    if let Some(prompt) = prompt {
        attributes.push("gen_ai.prompt.name", Value::Text(prompt));
    }
    if method == RequestMethod::ToolsCall {
        attributes.push("gen_ai.operation.name", Value::Text("execute_tool"));
    }
    if let Some(session) = more.and_then(|more| more.session.as_deref()) {
        attributes.push("mcp.session.id", Value::Text(session));
    }
    if let Some(version) = record.version {
        attributes.push("mcp.protocol.version", Value::Text(version.as_str()));
    }
    attributes.push(
        "network.transport",
        Value::Text(match record.transport {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }),
    );
    let error = match record.failure {
        None => None,
        Some(Failure::Error { code, message }) => {
            attributes.push("error.type", Value::Code(code));
            attributes.push("rpc.response.status_code", Value::Code(code));
            (!CALLER_ERRORS.contains(&code)).then_some(Cow::Borrowed(message))
        }
        Some(Failure::ToolError) => {
            attributes.push("error.type", Value::Text("tool_error"));
            Some(Cow::Borrowed("The tool's result is an error."))
        }
        Some(Failure::Cancelled) => {
            attributes.push("error.type", Value::Text("cancelled"));
            None
        }
    };
    Shape {
        name: (method.as_str(), target),
        kind: Kind::Server,
        attributes,
        error,
        remote_parent: true,
    }
}

/// A command run's span: its tool, its exit and the limit that ended it, if one did.
fn command<'a>(record: &'a SpanRecord, run: &'a Run) -> Shape<'a> {
    let Run {
        exit_code,
        signal,
        limit,
    } = *run;
    let tool = record.tool.as_ref().map_or("", super::Tool::name);
    let mut attributes = Attributes::new();
    attributes.push("gen_ai.tool.name", Value::Text(tool));
    if let Some(code) = exit_code {
        attributes.push("process.exit.code", Value::Int(i64::from(code)));
    }
    if let Some(signal) = signal {
        attributes.push("airlock.signal", Value::Int(i64::from(signal)));
    }
    if let Some(limit) = limit {
        attributes.push("airlock.limit", Value::Text(limit));
    }
    let error = if let Some(limit) = limit {
        Some(Cow::Owned(format!(
            "The command was stopped by its limit {limit}."
        )))
    } else if signal.is_some() {
        Some(Cow::Borrowed("The command was ended by a signal."))
    } else if exit_code.is_some_and(|code| code != 0) {
        Some(Cow::Borrowed("The command exited with a failure status."))
    } else {
        None
    };
    Shape {
        name: ("exec", Some(tool)),
        kind: Kind::Internal,
        attributes,
        error,
        remote_parent: false,
    }
}

/// `Span.flags`: the W3C trace flags in the low byte (sampled: every exported span is), and
/// whether the parent (for a link: the linked span) is remote, which is known.
const FLAG_SAMPLED: u32 = 0x01;
const FLAG_HAS_IS_REMOTE: u32 = 0x100;
const FLAG_IS_REMOTE: u32 = 0x200;

/// Writes `record` as an OTLP `Span` (`opentelemetry/proto/trace/v1/trace.proto`).
fn write_span(buf: &mut Vec<u8>, record: &SpanRecord) {
    let shape = shape(record);
    let more = record.more.as_deref();
    let parent = more.and_then(|more| more.parent);
    proto::bytes(buf, 1, &record.trace_id.to_be_bytes());
    proto::bytes(buf, 2, &record.span_id.to_be_bytes());
    if let Some(state) = more.and_then(|more| more.tracestate.as_deref()) {
        proto::bytes(buf, 3, state.as_bytes());
    }
    if let Some(parent) = parent {
        proto::bytes(buf, 4, &parent.to_be_bytes());
    }
    match shape.name {
        (name, None) => proto::bytes(buf, 5, name.as_bytes()),
        (name, Some(target)) => proto::string_of(buf, 5, &[name, " ", target]),
    }
    proto::uint(
        buf,
        6,
        match shape.kind {
            Kind::Internal => 1,
            Kind::Server => 2,
        },
    );
    proto::fixed64(buf, 7, unix_nanos(record.start));
    proto::fixed64(buf, 8, unix_nanos(record.end.unwrap_or(record.start)));
    let mut digits = Digits::default();
    for (key, value) in shape.attributes.iter() {
        match value {
            Value::Text(text) => string_attribute(buf, 9, key, text),
            Value::Int(number) => int_attribute(buf, 9, key, number),
            Value::Code(code) => string_attribute(buf, 9, key, digits.of(i128::from(code))),
            Value::Id(IdKey::Integer(number)) => {
                string_attribute(buf, 9, key, digits.of(*number));
            }
            Value::Id(id @ IdKey::String(_)) => string_attribute(buf, 9, key, &request_id(id)),
        }
    }
    if let Some((trace, span)) = more.and_then(|more| more.link) {
        proto::message(buf, 13, |link| {
            proto::bytes(link, 1, &trace.to_be_bytes());
            proto::bytes(link, 2, &span.to_be_bytes());
            proto::fixed32(link, 6, FLAG_HAS_IS_REMOTE | FLAG_IS_REMOTE);
        });
    }
    if let Some(message) = &shape.error {
        proto::message(buf, 15, |status| {
            proto::bytes(status, 2, message.as_bytes());
            // STATUS_CODE_ERROR
            proto::uint(status, 3, 2);
        });
    }
    let remote = if parent.is_some() && shape.remote_parent {
        FLAG_IS_REMOTE
    } else {
        0
    };
    proto::fixed32(buf, 16, FLAG_SAMPLED | FLAG_HAS_IS_REMOTE | remote);
}

/// A `KeyValue` with a string `AnyValue`, as field `field`.
fn string_attribute(buf: &mut Vec<u8>, field: u32, key: &str, value: &str) {
    // AnyValue.string_value is field 1.
    let any = proto::delimited_len(1, value.len());
    let key_value = proto::delimited_len(1, key.len()).saturating_add(proto::delimited_len(2, any));
    proto::message_head(buf, field, key_value);
    proto::bytes(buf, 1, key.as_bytes());
    proto::message_head(buf, 2, any);
    proto::bytes(buf, 1, value.as_bytes());
}

/// A `KeyValue` with an `int64` `AnyValue`, as field `field`.
fn int_attribute(buf: &mut Vec<u8>, field: u32, key: &str, value: i64) {
    // Two's complement, as protobuf writes an int64.
    let bits = u64::from_ne_bytes(value.to_ne_bytes());
    // AnyValue.int_value is field 3: a one-byte tag and the varint.
    let any = 1_usize.saturating_add(proto::varint_len(bits));
    let key_value = proto::delimited_len(1, key.len()).saturating_add(proto::delimited_len(2, any));
    proto::message_head(buf, field, key_value);
    proto::bytes(buf, 1, key.as_bytes());
    proto::message_head(buf, 2, any);
    proto::uint(buf, 3, bits);
}

/// An integer's decimal digits (at most 39 and a sign), written into a buffer of its own.
struct Digits([u8; 40]);

impl Default for Digits {
    fn default() -> Self {
        Self([0; 40])
    }
}

impl Digits {
    fn of(&mut self, number: i128) -> &str {
        let mut at = self.0.len();
        let mut rest = number.unsigned_abs();
        loop {
            at = at.saturating_sub(1);
            if let Some(slot) = self.0.get_mut(at) {
                *slot = b'0'.saturating_add(u8::try_from(rest % 10).unwrap_or(0));
            }
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if number < 0 {
            at = at.saturating_sub(1);
            if let Some(slot) = self.0.get_mut(at) {
                *slot = b'-';
            }
        }
        self.0
            .get(at..)
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .unwrap_or_default()
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    })
}

/// `jsonrpc.request.id`: an integer's digits, or a string id cut to
/// [`MAX_SPAN_REQUEST_ID_BYTES`] with its control characters escaped (the id is the peer's
/// text; a collector or a viewer must not take it for a line break or an escape sequence),
/// and the characters [`crate::is_invisible`] names with them: U+2028 and U+2029 are line
/// breaks to many viewers, and a bidirectional override shows another text than the one sent.
pub(super) fn request_id(key: &IdKey) -> String {
    match key {
        IdKey::Integer(number) => number.to_string(),
        IdKey::String(text) => {
            let mut shown = String::with_capacity(text.len().min(MAX_SPAN_REQUEST_ID_BYTES));
            for c in text.chars() {
                let before = shown.len();
                if c.is_control() || crate::is_invisible(c) {
                    shown.extend(c.escape_default());
                } else {
                    shown.push(c);
                }
                if shown.len() > MAX_SPAN_REQUEST_ID_BYTES {
                    shown.truncate(before);
                    break;
                }
            }
            shown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rest_keeps_the_work_to_its_share() {
        let worked = Duration::from_millis(3);
        let rest = rest_after(worked);
        let share = worked.as_secs_f64() / (worked + rest).as_secs_f64();
        let want = f64::from(SPAN_EXPORT_CPU_PERCENT) / 100.0;
        assert!((share - want).abs() < 1e-6, "{share} against {want}");
        assert_eq!(rest_after(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn digits_of_every_width_and_sign() {
        let mut digits = Digits::default();
        for number in [0, 7, -7, 10, -32_602, i128::MAX, i128::MIN] {
            assert_eq!(digits.of(number), number.to_string());
        }
    }

    #[test]
    fn an_attribute_is_a_key_value_of_an_any_value() {
        let mut buf = Vec::new();
        string_attribute(&mut buf, 9, "k", "vv");
        // KeyValue{key: "k", value: AnyValue{string_value: "vv"}}
        assert_eq!(buf, [0x4a, 9, 0x0a, 1, b'k', 0x12, 4, 0x0a, 2, b'v', b'v']);
        buf.clear();
        int_attribute(&mut buf, 9, "k", -1);
        let mut want = vec![0x4a, 16, 0x0a, 1, b'k', 0x12, 11, 0x18];
        want.extend([0xff; 9]);
        want.push(0x01);
        assert_eq!(buf, want);
    }
}
