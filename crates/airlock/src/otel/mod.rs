//! OpenTelemetry traces over OTLP/HTTP (the `otel` feature): a span per request by the MCP
//! semantic conventions, a child span per command run, exported by a thread of its own.
//!
//! The hot path builds no SDK object: a sampled request becomes a plain span record (ids, two
//! times and closed facts: its method, the registered tool, the id, the error code), an
//! engine keeps the records it finished until its batch of replies is written, and hands them
//! over in one append to a bounded queue. The export thread (`export`) writes them as OTLP's
//! protobuf (`proto`) and posts them through a small blocking client (`client`). Argument
//! values and output never enter a record. A peer's trace context is
//! read strictly (`trace_context`) and only ever names a parent; sampling is the server's
//! ratio, kept by a count the peer cannot steer (a peer picks its trace ids, so a ratio over
//! the trace id would be the peer's to choose).

mod client;
mod export;
mod proto;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::SystemTime;

pub use client::EndpointError;

use crate::envelope::RequestMethod;
use crate::error::McpError;
use crate::id::{IdKey, RequestId};
use crate::limits::{
    EXPORT_THREAD_NICENESS, MAX_SPANS_PER_EXPORT, MAX_SPANS_QUEUED, SPAN_EXPORT_INTERVAL,
    SPAN_SHUTDOWN_TIMEOUT,
};
use crate::tools::ToolDef;
use crate::trace_context::{Remote, TraceParent};
use crate::version::ProtocolVersion;

/// Why traces cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The endpoint is not a plain `http://` URL.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The sampling ratio is not in (0, 1].
    #[error("the trace sampling ratio must be above 0 and at most 1")]
    Ratio,
    /// The exporter's headers from the environment are malformed (its text names the
    /// variable, never a value).
    #[error("{0} is not a list of name=value HTTP headers the OTLP exporter can send")]
    Headers(&'static str),
    /// The export thread could not be started, or the random source failed.
    #[error("the span export thread could not be started: {0}")]
    Start(std::io::Error),
}

/// Where traced requests go: an OTLP/HTTP collector, fed by one export thread. Give it to
/// [`ServerBuilder::traces`](crate::ServerBuilder::traces); dropping the last handle exports
/// what is left (waiting at most `SPAN_SHUTDOWN_TIMEOUT`) and ends the thread.
pub struct Traces {
    queue: Arc<Queue>,
    /// The export thread says it is done (its sender dropped) through this.
    done: Mutex<Option<Receiver<()>>>,
    /// Sampling: the ratio as a fraction of 2^32 (2^32 = every request).
    step: u64,
    /// Span and trace ids: a counter through a bijective mix keyed at start, so ids are
    /// unique for 2^64 spans and not guessable from one another.
    next: AtomicU64,
    key: u64,
    /// Spans dropped because the export thread was behind.
    dropped: AtomicU64,
}

/// Finished spans waiting for the export thread: one vector behind a lock, which an engine
/// appends its batch to (no allocation, no system call: the export thread is woken only when
/// an export's worth waits, else it looks every [`SPAN_EXPORT_INTERVAL`]).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    spans: Mutex<Vec<SpanRecord>>,
    ready: Condvar,
    /// No more spans will come: the export thread exports what is left and ends.
    closed: AtomicBool,
    /// The queue refused spans since the export thread last took it: engines build no span
    /// record until it has (the record would be dropped), and count the request as dropped.
    full: AtomicBool,
}

impl Queue {
    /// Moves `spans` in (leaving the caller's vector empty, its capacity kept); `false` when
    /// they would pass [`MAX_SPANS_QUEUED`], and then they are dropped.
    fn push(&self, spans: &mut Vec<SpanRecord>) -> bool {
        let mut queued = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        if queued.len().saturating_add(spans.len()) > MAX_SPANS_QUEUED {
            spans.clear();
            self.full.store(true, Ordering::Relaxed);
            return false;
        }
        let before = queued.len();
        queued.append(spans);
        if before < MAX_SPANS_PER_EXPORT && queued.len() >= MAX_SPANS_PER_EXPORT {
            self.ready.notify_one();
        }
        true
    }

    /// Waits until an export's worth is queued, the interval passed or the queue closed,
    /// then takes what is queued into `into` (which must be empty; nothing taken leaves it
    /// empty); `false` once the queue is closed and empty. The vectors are swapped, not
    /// copied: the lock is held for no time an engine would notice, and the queue gets
    /// `into`'s capacity back for the next spans.
    pub(crate) fn take(&self, into: &mut Vec<SpanRecord>) -> bool {
        let queued = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut queued, _timeout) = self
            .ready
            .wait_timeout_while(queued, SPAN_EXPORT_INTERVAL, |queued| {
                queued.len() < MAX_SPANS_PER_EXPORT && !self.closed.load(Ordering::Acquire)
            })
            .unwrap_or_else(PoisonError::into_inner);
        into.clear();
        std::mem::swap(into, &mut *queued);
        self.full.store(false, Ordering::Relaxed);
        !(into.is_empty() && self.closed.load(Ordering::Acquire))
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _held = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        self.ready.notify_all();
    }

    /// What is queued (tests).
    #[cfg(test)]
    pub(crate) fn try_iter(&self) -> impl Iterator<Item = Vec<SpanRecord>> {
        let spans = std::mem::take(&mut *self.spans.lock().unwrap_or_else(PoisonError::into_inner));
        (!spans.is_empty()).then_some(spans).into_iter()
    }
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces")
            .field("dropped", &self.dropped.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Traces {
    /// Traces exported to the collector at `endpoint` (`http://HOST[:PORT][/PATH]`; spans go
    /// to `PATH/v1/traces`, as with `OTEL_EXPORTER_OTLP_ENDPOINT`), under the resource
    /// `service.name = service`, `service.version = version`, one request in `1 / ratio`
    /// traced (1.0: all). The exporter also sends the headers of
    /// `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (else `OTEL_EXPORTER_OTLP_HEADERS`), as every OTLP
    /// exporter does; the endpoint and timeouts are these, whatever the environment says.
    ///
    /// # Errors
    ///
    /// [`OtlpError`]: an endpoint that is not `http://`, a ratio outside (0, 1], malformed
    /// headers in the environment, no thread or no random source.
    pub fn to_otlp(
        endpoint: &str,
        service: &str,
        version: &str,
        ratio: f64,
    ) -> Result<Arc<Self>, OtlpError> {
        if !(ratio > 0.0 && ratio <= 1.0) {
            return Err(OtlpError::Ratio);
        }
        let endpoint = client::Endpoint::parse(endpoint)?;
        let headers = client::environment_headers(|name| std::env::var(name).ok())
            .map_err(OtlpError::Headers)?;
        let mut exporter =
            export::exporter(client::Client::new(endpoint, headers), service, version);
        let mut key = [0_u8; 8];
        getrandom::fill(&mut key)
            .map_err(|_| OtlpError::Start(std::io::Error::other("the random source failed")))?;
        let queue = Arc::new(Queue::default());
        let spans = Arc::clone(&queue);
        let (finished, done) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("airlock-otlp".into())
            .spawn(move || {
                // Behind the threads that serve: when the cores are busy, spans wait (and
                // past the queue's bound are dropped) rather than requests.
                if rustix::process::setpriority_process(None, EXPORT_THREAD_NICENESS).is_err() {
                    tracing::debug!("the span export thread keeps its priority");
                }
                export::run(&mut exporter, &spans);
                drop(finished);
            })
            .map_err(OtlpError::Start)?;
        Ok(Arc::new(Self {
            queue,
            done: Mutex::new(Some(done)),
            step: ratio_step(ratio),
            next: AtomicU64::new(1),
            key: u64::from_le_bytes(key),
            dropped: AtomicU64::new(0),
        }))
    }

    /// Traces whose spans go to the receiver returned, with no export thread (tests).
    #[cfg(test)]
    pub(crate) fn for_tests(ratio: f64) -> (Arc<Self>, Arc<Queue>) {
        let queue = Arc::new(Queue::default());
        let spans = Arc::clone(&queue);
        let traces = Arc::new(Self {
            queue,
            done: Mutex::new(None),
            step: ratio_step(ratio),
            next: AtomicU64::new(1),
            key: 0x5eed,
            dropped: AtomicU64::new(0),
        });
        (traces, spans)
    }

    /// A generator of span and trace ids for one engine: the shared counter is read once
    /// per engine, never per span.
    fn ids(&self) -> Ids {
        Ids {
            base: mix(self.next.fetch_add(1, Ordering::Relaxed) ^ self.key),
            next: 0,
        }
    }

    /// Queues finished spans for export (leaving `spans` empty); when the thread is behind,
    /// they are dropped and counted.
    fn send(&self, spans: &mut Vec<SpanRecord>) {
        let count = u64::try_from(spans.len()).unwrap_or(u64::MAX);
        if !self.queue.push(spans) {
            let dropped = self.dropped.fetch_add(count, Ordering::Relaxed);
            if dropped == 0 {
                tracing::warn!("spans dropped: the OTLP export is behind");
            }
        }
    }
}

impl Drop for Traces {
    fn drop(&mut self) {
        // The thread exports what it holds once the queue closes, then says so.
        self.queue.close();
        let done = self
            .done
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(done) = done
            && done.recv_timeout(SPAN_SHUTDOWN_TIMEOUT).is_ok()
        {
            tracing::debug!("the last spans were exported");
        }
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "spans were dropped while the OTLP export was behind"
            );
        }
    }
}

/// The ratio as a fraction of 2^32, at least 1.
fn ratio_step(ratio: f64) -> u64 {
    let scaled = (ratio * 4_294_967_296.0).round();
    // In range: ratio is in (0, 1], so scaled is in [0, 2^32].
    #[expect(
        clippy::as_conversions,
        reason = "a float in [0, 2^32] to an integer; no From exists for it"
    )]
    let step = scaled as u64;
    step.max(1)
}

/// SplitMix64's finaliser: a bijection of `u64`, so distinct counters give distinct ids.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The transport a request came over (`network.transport`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Transport {
    /// stdio.
    Pipe,
    /// HTTP.
    Tcp,
}

/// How a request failed, as `error.type` says.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Failure {
    /// Answered with an error of the table: its code and fixed message.
    Error { code: i32, message: &'static str },
    /// A tool's result with `isError`.
    ToolError,
    /// Cancelled by the client, or abandoned: no reply was sent.
    Cancelled,
}

impl Failure {
    /// The failure of a request answered with `error`.
    pub(crate) fn of(error: &McpError) -> Self {
        let wire = error.to_wire();
        Self::Error {
            code: wire.code.get(),
            message: wire.message,
        }
    }
}

/// Span and trace ids of one engine: a bijective mix of a count from a base drawn per engine,
/// so ids do not repeat within an engine and engines' ranges meet with odds of 2^-64 per pair
/// of ids, as random ids would.
#[derive(Debug)]
struct Ids {
    base: u64,
    next: u64,
}

impl Ids {
    /// A fresh span id, never zero.
    fn span_id(&mut self) -> u64 {
        loop {
            self.next = self.next.wrapping_add(1);
            let id = mix(self.base.wrapping_add(self.next));
            if id != 0 {
                return id;
            }
        }
    }

    /// A fresh trace id, never zero.
    fn trace_id(&mut self) -> u128 {
        (u128::from(self.span_id()) << 64) | u128::from(self.span_id())
    }
}

/// One span, as the hot path keeps it: a request's (or, with [`More::run`], a command
/// run's). What most requests lack is boxed in `more`, so a plain request costs no
/// allocation.
#[derive(Debug)]
pub(crate) struct SpanRecord {
    trace_id: u128,
    span_id: u64,
    start: SystemTime,
    /// `None` until it ends; a span finished in a batch ends when the batch is written.
    end: Option<SystemTime>,
    /// The request's id.
    id: IdKey,
    method: RequestMethod,
    transport: Transport,
    version: Option<ProtocolVersion>,
    failure: Option<Failure>,
    /// The tool called, only one the server has.
    tool: Option<Tool>,
    /// The span of the call's run, once it started (0: none).
    command: u64,
    more: Option<Box<More>>,
}

/// What few spans have.
#[derive(Debug, Default)]
struct More {
    /// The parent span: the peer's for a request, the request's for a command run.
    parent: Option<u64>,
    tracestate: Option<Arc<str>>,
    /// The transport's trace context when `_meta` named the parent.
    link: Option<(u128, u64)>,
    session: Option<Arc<str>>,
    /// The prompt `prompts/get` named, only one the server has.
    prompt: Option<Box<str>>,
    /// A command run's end: present only in a command's span.
    run: Option<Run>,
}

/// How a command run ended.
#[derive(Debug)]
struct Run {
    exit_code: Option<i32>,
    signal: Option<i32>,
    limit: Option<&'static str>,
}

impl Run {
    fn of(run: &crate::RunNote) -> Self {
        Self {
            exit_code: run.exit_code,
            signal: run.signal,
            limit: run.limit,
        }
    }
}

/// A tool a span names (shown by its name).
#[derive(Clone)]
struct Tool(Arc<ToolDef>);

impl Tool {
    fn name(&self) -> &str {
        self.0.name.as_str()
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl SpanRecord {
    /// Names the tool called (one the server has).
    pub(crate) fn called(&mut self, tool: &Arc<ToolDef>) {
        self.tool = Some(Tool(Arc::clone(tool)));
    }

    /// Names the prompt asked for (one the server has).
    pub(crate) fn prompted(&mut self, prompt: &str) {
        self.more().prompt = Some(prompt.into());
    }

    /// Sets the protocol revision the request was handled under, unless one is set.
    pub(crate) fn under(&mut self, version: Option<ProtocolVersion>) {
        if self.version.is_none() {
            self.version = version;
        }
    }

    /// Records how the request failed.
    pub(crate) fn failed(&mut self, failure: Failure) {
        self.failure = Some(failure);
    }

    fn more(&mut self) -> &mut More {
        self.more.get_or_insert_with(Box::default)
    }

    /// The span of this request's command run (its id `command`, a child of this span),
    /// from `start` to `end`, ended as `run` says once it has.
    fn command_span(&self, start: SystemTime, end: Option<SystemTime>, run: Option<Run>) -> Self {
        Self {
            trace_id: self.trace_id,
            span_id: self.command,
            start,
            end,
            id: self.id.clone(),
            method: self.method,
            transport: self.transport,
            version: self.version,
            failure: None,
            tool: self.tool.clone(),
            command: 0,
            more: Some(Box::new(More {
                parent: Some(self.span_id),
                tracestate: self.more.as_ref().and_then(|more| more.tracestate.clone()),
                run,
                ..More::default()
            })),
        }
    }
}

/// One engine's spans: those it finished and not yet handed to the export thread, and what
/// each of its requests' spans shares (the transport, the session).
#[derive(Debug)]
pub(crate) struct Local {
    traces: Arc<Traces>,
    ids: Ids,
    /// Sampling by count: the ratio is added to this fraction of 2^32 at each request, and a
    /// request whose addition carries is traced, so exactly the ratio's share of this
    /// engine's requests is; it starts at a phase drawn with the engine's ids, so an engine
    /// of one request (HTTP) is traced with the ratio's odds. Neither the peer's flag nor its
    /// trace ids take part.
    phase: u32,
    finished: Vec<SpanRecord>,
    /// The arrival of the batch being read, if one is open: every request of it starts
    /// then, and every span it finishes ends when its replies are written.
    batch: Option<SystemTime>,
    transport: Transport,
    session: Option<Arc<str>>,
    /// The transport's trace context of the request being handled (HTTP headers).
    header: Option<Remote>,
    /// Sampled requests given no span because the queue was full, not yet counted in
    /// [`Traces`]'s dropped spans.
    skipped: u64,
}

impl Local {
    pub(crate) fn new(traces: &Arc<Traces>, transport: Transport) -> Box<Self> {
        let ids = traces.ids();
        Box::new(Self {
            traces: Arc::clone(traces),
            phase: u32::try_from(ids.base >> 32).unwrap_or(0),
            ids,
            finished: Vec::new(),
            batch: None,
            transport,
            session: None,
            header: None,
            skipped: 0,
        })
    }

    /// Names the session every span of this engine belongs to (`mcp.session.id`).
    #[cfg(feature = "http")]
    pub(crate) fn in_session(&mut self, session: Arc<str>) {
        self.session = Some(session);
    }

    /// Takes the transport's trace context of the next requests (HTTP headers), read
    /// strictly: a malformed one is none.
    #[cfg(feature = "http")]
    pub(crate) fn set_header(&mut self, traceparent: Option<&str>, tracestate: Option<&str>) {
        self.header = traceparent.and_then(|parent| Remote::parse(parent, tracestate));
    }

    /// A batch of frames is being read: its requests start now.
    pub(crate) fn batch_received(&mut self) {
        if self.batch.is_none() {
            self.batch = Some(SystemTime::now());
        }
    }

    /// When a request received now started: its batch's arrival, or now.
    fn now(&self) -> SystemTime {
        self.batch.unwrap_or_else(SystemTime::now)
    }

    /// Begins the span of a request, if it is sampled: a child of the peer's `_meta`
    /// context when it sent a well-formed one, else of the transport's (HTTP headers); with
    /// both, the header's is a link.
    pub(crate) fn begin(
        &mut self,
        method: RequestMethod,
        id: &RequestId,
        meta: Option<&serde_json::Value>,
    ) -> Option<Box<SpanRecord>> {
        if !self.sampled() {
            return None;
        }
        if self.traces.queue.full.load(Ordering::Relaxed) {
            self.skipped = self.skipped.saturating_add(1);
            return None;
        }
        let meta = meta.and_then(|meta| {
            let traceparent = meta.get("traceparent")?.as_str()?;
            let tracestate = meta.get("tracestate").and_then(serde_json::Value::as_str);
            Remote::parse(traceparent, tracestate)
        });
        let (parent, link) = match (meta, &self.header) {
            (Some(meta), header) => (Some(meta), header.as_ref()),
            (None, header) => (header.clone(), None),
        };
        let mut span = Box::new(SpanRecord {
            trace_id: 0,
            span_id: self.ids.span_id(),
            start: self.now(),
            end: None,
            id: id.key().clone(),
            method,
            transport: self.transport,
            version: None,
            failure: None,
            tool: None,
            command: 0,
            more: None,
        });
        match parent {
            Some(Remote {
                trace_id,
                span_id,
                tracestate,
            }) => {
                span.trace_id = trace_id;
                let more = span.more();
                more.parent = Some(span_id);
                more.tracestate = tracestate.map(Arc::from);
            }
            None => span.trace_id = self.ids.trace_id(),
        }
        if let Some(link) = link {
            span.more().link = Some((link.trace_id, link.span_id));
        }
        if let Some(session) = &self.session {
            span.more().session = Some(Arc::clone(session));
        }
        Some(span)
    }

    /// Whether the next request is traced (see `phase`).
    fn sampled(&mut self) -> bool {
        let Ok(step) = u32::try_from(self.traces.step) else {
            return true;
        };
        let (phase, carried) = self.phase.overflowing_add(step);
        self.phase = phase;
        carried
    }

    /// The trace context of a traced call's run: a span of its own under the request's.
    pub(crate) fn run_context(&mut self, span: &mut SpanRecord) -> TraceParent {
        span.command = self.ids.span_id();
        let tracestate = span.more.as_ref().and_then(|more| more.tracestate.clone());
        TraceParent::new(span.trace_id, span.command, tracestate)
    }

    /// The trace context of a traced request's task run, and the span the run ends: a child
    /// of the request's span, which itself ends when the request is answered (with the
    /// task's handle), long before the run does.
    pub(crate) fn task_run(&mut self, span: &mut SpanRecord) -> (TraceParent, RunSpan) {
        let context = self.run_context(span);
        let record = span.command_span(SystemTime::now(), None, None);
        // The request's own end names no command: the run's span is the task's.
        span.command = 0;
        (
            context,
            RunSpan {
                traces: Arc::clone(&self.traces),
                record,
            },
        )
    }

    /// The request's reply is written (or, outside a batch, about to be): its span ends.
    /// A started call's command span ends with it when the run reported a command (its exit,
    /// signal or limit).
    pub(crate) fn finish(&mut self, mut span: SpanRecord, run: Option<&crate::RunNote>) {
        let ended = self.batch.is_none().then(SystemTime::now);
        span.end = ended;
        let ran = run.filter(|run| {
            span.command != 0
                && (run.exit_code.is_some() || run.signal.is_some() || run.limit.is_some())
        });
        if let Some(run) = ran {
            let command = span.command_span(span.start, ended, Some(Run::of(run)));
            self.finished.push(command);
        }
        self.finished.push(span);
        if self.batch.is_none() {
            self.flush();
        }
    }

    /// The batch's replies were written: its spans end now and go to the export thread.
    pub(crate) fn batch_written(&mut self) {
        if self.batch.take().is_some() {
            self.flush();
        }
    }

    /// Hands the finished spans to the export thread (moved out: this vector keeps its
    /// capacity for the next batch).
    pub(crate) fn flush(&mut self) {
        if self.skipped > 0 {
            self.traces
                .dropped
                .fetch_add(std::mem::take(&mut self.skipped), Ordering::Relaxed);
        }
        if self.finished.is_empty() {
            return;
        }
        let now = SystemTime::now();
        for span in &mut self.finished {
            span.end.get_or_insert(now);
        }
        self.traces.send(&mut self.finished);
    }
}

/// A task's run being traced: its span, from the run's start to [`RunSpan::end`].
#[derive(Debug)]
pub(crate) struct RunSpan {
    traces: Arc<Traces>,
    record: SpanRecord,
}

impl RunSpan {
    /// The run ended: its span goes to the export thread when the run reported a command
    /// (its exit, signal or limit), as a call's does; a handler in the process has none.
    pub(crate) fn end(mut self, run: Option<&crate::RunNote>) {
        let Some(run) = run
            .filter(|run| run.exit_code.is_some() || run.signal.is_some() || run.limit.is_some())
        else {
            return;
        };
        self.record.end = Some(SystemTime::now());
        self.record.more().run = Some(Run::of(run));
        self.traces.send(&mut vec![self.record]);
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests;
