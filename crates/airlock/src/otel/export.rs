//! The export thread: span records in, OTLP/HTTP requests out.
//!
//! It turns each [`SpanRecord`] into the SDK's span data (names and attributes by the MCP
//! semantic conventions), gathers at most [`MAX_SPANS_PER_EXPORT`] or what
//! [`SPAN_EXPORT_INTERVAL`] brings, and posts them with the OTLP exporter, blocking this
//! thread only. A failed export is logged and its spans dropped: tracing never slows or fails
//! a request.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};

use super::client::{Client, Endpoint};
use super::{Failure, More, OtlpError, Queue, Run, SpanRecord, Transport};
use crate::envelope::RequestMethod;
use crate::id::IdKey;
use crate::limits::{MAX_SPAN_REQUEST_ID_BYTES, MAX_SPANS_PER_EXPORT, OTLP_IO_TIMEOUT};

/// The OTLP exporter and the scope every span names.
pub(super) struct Exporter {
    otlp: opentelemetry_otlp::SpanExporter,
    scope: InstrumentationScope,
}

/// An exporter posting to `endpoint` as `service` `version`.
pub(super) fn exporter(
    endpoint: Endpoint,
    service: &str,
    version: &str,
) -> Result<Exporter, OtlpError> {
    let url = endpoint.traces_url();
    let mut otlp = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Client::new(endpoint))
        .with_endpoint(url)
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(OTLP_IO_TIMEOUT)
        .build()
        .map_err(|error| OtlpError::Exporter(error.to_string()))?;
    otlp.set_resource(
        &Resource::builder_empty()
            .with_service_name(service.to_owned())
            .with_attribute(KeyValue::new("service.version", version.to_owned()))
            .build(),
    );
    Ok(Exporter {
        otlp,
        scope: InstrumentationScope::builder("airlock")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
    })
}

/// Exports what `queue` brings, at most [`MAX_SPANS_PER_EXPORT`] per request, until it is
/// closed and empty.
pub(super) fn run(exporter: &Exporter, queue: &Queue) {
    let mut taken = Vec::new();
    let mut pending: Vec<SpanData> = Vec::with_capacity(MAX_SPANS_PER_EXPORT);
    while queue.take(&mut taken) {
        for record in taken.drain(..) {
            pending.push(span_data(record, &exporter.scope));
            if pending.len() >= MAX_SPANS_PER_EXPORT {
                export(exporter, &mut pending);
            }
        }
        export(exporter, &mut pending);
    }
}

/// Posts `pending` (emptying it); a failure is logged, the spans dropped.
fn export(exporter: &Exporter, pending: &mut Vec<SpanData>) {
    if pending.is_empty() {
        return;
    }
    let batch = std::mem::take(pending);
    let count = batch.len();
    match block_on(exporter.otlp.export(batch)) {
        Ok(()) => tracing::trace!(count, "spans exported"),
        Err(error) => tracing::warn!(count, %error, "spans could not be exported"),
    }
}

/// Drives `future` on this thread. The exporter's future is our client's, which finishes in
/// its first poll; anything else parks the thread until woken.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// The JSON-RPC codes that are the caller's mistake, which the conventions do not count as
/// errors of the server: parse error, invalid request, method not found, invalid params,
/// resource not found.
const CALLER_ERRORS: [i32; 5] = [-32_700, -32_600, -32_601, -32_602, -32_002];

/// The SDK's span data of `record`.
pub(super) fn span_data(record: SpanRecord, scope: &InstrumentationScope) -> SpanData {
    let more = record.more.as_deref();
    let parent = more.and_then(|more| more.parent);
    let state = more
        .and_then(|more| more.tracestate.as_deref())
        .and_then(|state| state.parse::<TraceState>().ok())
        .unwrap_or_default();
    let span_context = SpanContext::new(
        TraceId::from(record.trace_id),
        SpanId::from(record.span_id),
        TraceFlags::SAMPLED,
        false,
        state,
    );
    let (name, kind, attributes, status, links, remote) =
        match more.and_then(|more| more.run.as_ref()) {
            Some(run) => command(&record, run),
            None => request(&record, more),
        };
    let mut span_links = SpanLinks::default();
    span_links.links = links;
    SpanData {
        span_context,
        parent_span_id: parent.map_or(SpanId::INVALID, SpanId::from),
        parent_span_is_remote: parent.is_some() && remote,
        span_kind: kind,
        name,
        start_time: record.start,
        end_time: record.end.unwrap_or(record.start),
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: span_links,
        status,
        instrumentation_scope: scope.clone(),
    }
}

/// What a span is besides its ids and times: its name, kind, attributes, status, links, and
/// whether its parent is the peer's.
type Shape = (
    Cow<'static, str>,
    SpanKind,
    Vec<KeyValue>,
    Status,
    Vec<Link>,
    bool,
);

/// A request's span, by the MCP server span conventions.
fn request(record: &SpanRecord, more: Option<&More>) -> Shape {
    let method = record.method;
    let mut attributes = Vec::with_capacity(10);
    attributes.push(KeyValue::new("mcp.method.name", method.as_str()));
    attributes.push(KeyValue::new("jsonrpc.request.id", request_id(&record.id)));
    let prompt = more.and_then(|more| more.prompt.as_deref());
    let name = match (&record.tool, prompt) {
        (Some(tool), _) => Cow::Owned(format!("{} {}", method.as_str(), tool.name())),
        (None, Some(prompt)) => Cow::Owned(format!("{} {prompt}", method.as_str())),
        (None, None) => Cow::Borrowed(method.as_str()),
    };
    if let Some(tool) = &record.tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", tool.name().to_owned()));
    }
    if let Some(prompt) = prompt {
        attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.to_owned()));
    }
    if method == RequestMethod::ToolsCall {
        attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(session) = more.and_then(|more| more.session.as_deref()) {
        attributes.push(KeyValue::new("mcp.session.id", session.to_owned()));
    }
    if let Some(version) = record.version {
        attributes.push(KeyValue::new("mcp.protocol.version", version.as_str()));
    }
    attributes.push(KeyValue::new(
        "network.transport",
        match record.transport {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        },
    ));
    let status = match record.failure {
        None => Status::Unset,
        Some(Failure::Error { code, message }) => {
            attributes.push(KeyValue::new("error.type", code.to_string()));
            attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
            if CALLER_ERRORS.contains(&code) {
                Status::Unset
            } else {
                Status::error(message)
            }
        }
        Some(Failure::ToolError) => {
            attributes.push(KeyValue::new("error.type", "tool_error"));
            Status::error("The tool's result is an error.")
        }
        Some(Failure::Cancelled) => {
            attributes.push(KeyValue::new("error.type", "cancelled"));
            Status::Unset
        }
    };
    let links = more
        .and_then(|more| more.link)
        .map(|(trace, span)| {
            Link::with_context(SpanContext::new(
                TraceId::from(trace),
                SpanId::from(span),
                TraceFlags::default(),
                true,
                TraceState::default(),
            ))
        })
        .into_iter()
        .collect();
    (name, SpanKind::Server, attributes, status, links, true)
}

/// A command run's span: its tool, its exit and the limit that ended it, if one did.
fn command(record: &SpanRecord, run: &Run) -> Shape {
    let Run {
        exit_code,
        signal,
        limit,
    } = *run;
    let tool = record.tool.as_ref().map_or("", |tool| tool.name());
    let mut attributes = Vec::with_capacity(4);
    attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
    if let Some(code) = exit_code {
        attributes.push(KeyValue::new("process.exit.code", i64::from(code)));
    }
    if let Some(signal) = signal {
        attributes.push(KeyValue::new("airlock.signal", i64::from(signal)));
    }
    if let Some(limit) = limit {
        attributes.push(KeyValue::new("airlock.limit", limit));
    }
    let status = if let Some(limit) = limit {
        Status::error(format!("The command was stopped by its limit {limit}."))
    } else if signal.is_some() {
        Status::error("The command was ended by a signal.")
    } else if exit_code.is_some_and(|code| code != 0) {
        Status::error("The command exited with a failure status.")
    } else {
        Status::Unset
    };
    (
        Cow::Owned(format!("exec {tool}")),
        SpanKind::Internal,
        attributes,
        status,
        Vec::new(),
        false,
    )
}

/// `jsonrpc.request.id`: an integer's digits, or a string id cut to
/// [`MAX_SPAN_REQUEST_ID_BYTES`] with its control characters escaped (the id is the peer's
/// text; a collector or a viewer must not take it for a line break or an escape sequence).
fn request_id(key: &IdKey) -> String {
    match key {
        IdKey::Integer(number) => number.to_string(),
        IdKey::String(text) => {
            let mut shown = String::with_capacity(text.len().min(MAX_SPAN_REQUEST_ID_BYTES));
            for c in text.chars() {
                let before = shown.len();
                if c.is_control() {
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
