//! Prometheus metrics (the `metrics` feature): counters, gauges and histograms kept in fixed
//! arrays of atomics, rendered by hand in the text exposition format (version 0.0.4).
//!
//! Every label value is one of a closed set known when the server starts: a method of the
//! method table, an error code of the error table, a refusal kind, a tool the operator
//! registered. No label ever holds text an agent sent: a call of a tool the server does not
//! have is counted under the one tool label `_OTHER`, and a tool name is a [`ToolName`](crate::ToolName),
//! whose characters (`[A-Za-z0-9_.-]`) need no escaping in a label. So the series are bounded
//! (by the tables, and for tools by 1,024 names registered since start, across reloads) and scraping reveals
//! counts and durations, never arguments, output, ids or addresses.
//!
//! The hot path takes no lock, looks nothing up and allocates nothing: a request adds to two
//! or three atomics found by array index, a call to those of its tool's series, which the tool
//! carries from its registration (`ToolDef::series`). With no [`Metrics`] given to the server,
//! each hook is one branch on an `Option`.
//!
//! Names follow the OpenTelemetry semantic conventions for MCP where one exists, as their
//! Prometheus translation: `mcp.server.operation.duration` (unit `s`) is
//! `mcp_server_operation_duration_seconds{mcp_method_name, error_type}` with the buckets the
//! convention advises; `mcp.server.session.duration` is `mcp_server_session_duration_seconds`.
//! The rest are airlock's own (`airlock_*`), with finer buckets, since an in-process call
//! takes microseconds.
//!
//! With the `http` feature, `transport::metrics::Endpoint` serves the text on a listener of
//! its own.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::call_log::Outcome;
use crate::envelope::RequestMethod;
use crate::error::McpError;
use crate::limits::MAX_METRIC_TOOLS;

/// Writes one formatted line to a `String`, which cannot fail.
macro_rules! put {
    ($text:expr, $($arg:tt)*) => {
        $text.write_fmt(format_args!("{}\n", format_args!($($arg)*))).unwrap_or(())
    };
}

#[cfg(test)]
mod tests;

/// The media type of what [`Metrics::render`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The buckets the MCP conventions advise for `mcp.server.*.duration`, in seconds.
const CONVENTION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// airlock's own duration buckets: the convention's, with four below them for calls that
/// take microseconds.
const FINE_BUCKETS: [f64; 18] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// The methods of the method table, in label order: `RequestMethod` as an index.
const METHODS: [RequestMethod; 19] = [
    RequestMethod::Initialize,
    RequestMethod::Ping,
    RequestMethod::ServerDiscover,
    RequestMethod::ToolsCall,
    RequestMethod::ToolsList,
    RequestMethod::PromptsList,
    RequestMethod::PromptsGet,
    RequestMethod::ResourcesList,
    RequestMethod::ResourcesTemplatesList,
    RequestMethod::ResourcesRead,
    RequestMethod::ResourcesSubscribe,
    RequestMethod::ResourcesUnsubscribe,
    RequestMethod::CompletionComplete,
    RequestMethod::LoggingSetLevel,
    RequestMethod::TasksGet,
    RequestMethod::TasksResult,
    RequestMethod::TasksList,
    RequestMethod::TasksCancel,
    RequestMethod::TasksUpdate,
];

/// The index of `method` in [`METHODS`].
fn method_index(method: RequestMethod) -> usize {
    match method {
        RequestMethod::Initialize => 0,
        RequestMethod::Ping => 1,
        RequestMethod::ServerDiscover => 2,
        RequestMethod::ToolsCall => 3,
        RequestMethod::ToolsList => 4,
        RequestMethod::PromptsList => 5,
        RequestMethod::PromptsGet => 6,
        RequestMethod::ResourcesList => 7,
        RequestMethod::ResourcesTemplatesList => 8,
        RequestMethod::ResourcesRead => 9,
        RequestMethod::ResourcesSubscribe => 10,
        RequestMethod::ResourcesUnsubscribe => 11,
        RequestMethod::CompletionComplete => 12,
        RequestMethod::LoggingSetLevel => 13,
        RequestMethod::TasksGet => 14,
        RequestMethod::TasksResult => 15,
        RequestMethod::TasksList => 16,
        RequestMethod::TasksCancel => 17,
        RequestMethod::TasksUpdate => 18,
    }
}

/// How an operation ended, as the conventions' `error.type`: none, the JSON-RPC code of the
/// error table it was answered with, or `tool_error` (a result with `isError`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum ErrorType {
    /// Answered with a result that is not an error.
    None,
    /// Answered with an `isError` result.
    ToolError,
    /// Answered with this code (an index into [`ERROR_CODES`]).
    Code(usize),
    /// Answered with a code not in [`ERROR_CODES`] (none today).
    Other,
}

/// The codes of the error table, in label order.
const ERROR_CODES: [(i32, &str); 10] = [
    (-32_700, "-32700"),
    (-32_600, "-32600"),
    (-32_601, "-32601"),
    (-32_602, "-32602"),
    (-32_603, "-32603"),
    (-32_020, "-32020"),
    (-32_021, "-32021"),
    (-32_022, "-32022"),
    (-31_429, "-31429"),
    (-31_503, "-31503"),
];

/// `error_type` values: none, `tool_error`, each code, `_OTHER`.
const ERROR_TYPES: usize = ERROR_CODES.len() + 3;

// A batch keeps which methods and error types it counted as bits of a `u32`: a method or an
// error type past the 32nd would never be observed (as `tasks/list` and `tasks/cancel`, the
// 17th and 18th methods, were not while the sets were `u16`).
const _: () = assert!(METHODS.len() <= 32 && ERROR_TYPES <= 32);

impl ErrorType {
    /// The error type of a request answered with `error`.
    pub(crate) fn of(error: &McpError) -> Self {
        let code = error.to_wire().code.get();
        ERROR_CODES
            .iter()
            .position(|(known, _)| *known == code)
            .map_or(Self::Other, Self::Code)
    }

    fn index(self) -> usize {
        match self {
            Self::None => 0,
            Self::ToolError => 1,
            Self::Code(index) => index.saturating_add(2).min(ERROR_TYPES.saturating_sub(1)),
            Self::Other => ERROR_TYPES.saturating_sub(1),
        }
    }

    /// The label value; `None` for no error (the label is left out).
    fn label(index: usize) -> Option<&'static str> {
        match index {
            0 => None,
            1 => Some("tool_error"),
            n => ERROR_CODES
                .get(n.saturating_sub(2))
                .map(|(_, label)| *label)
                .or(Some("_OTHER")),
        }
    }
}

/// What a refusal was for, as `airlock_refusals_total`'s `kind` says.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Refusal {
    /// A tool call over a rate quota (`-31429`): the server's, a tool's, or on HTTP a
    /// client's call quota or its share of the server's.
    Quota,
    /// An HTTP request over its client's request quota (`429`).
    ClientQuota,
    /// Too many calls in flight, in the server or of one HTTP client (`-31503`).
    InFlight,
    /// A client cut off for sending garbage, or a request of one that is (`429`).
    CutOff,
    /// An HTTP `Origin` not allowed (`403`).
    Origin,
    /// An HTTP `Host` not allowed (`421`).
    Host,
    /// No valid token (`401`).
    Auth,
    /// An access token without a scope the tool requires (`403`).
    Scope,
    /// A CORS preflight refused.
    Preflight,
}

impl Refusal {
    const ALL: [Self; 9] = [
        Self::Quota,
        Self::ClientQuota,
        Self::InFlight,
        Self::CutOff,
        Self::Origin,
        Self::Host,
        Self::Auth,
        Self::Scope,
        Self::Preflight,
    ];

    fn label(self) -> &'static str {
        match self {
            Self::Quota => "quota",
            Self::ClientQuota => "client_quota",
            Self::InFlight => "in_flight",
            Self::CutOff => "cut_off",
            Self::Origin => "origin",
            Self::Host => "host",
            Self::Auth => "auth",
            Self::Scope => "scope",
            Self::Preflight => "preflight",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Quota => 0,
            Self::ClientQuota => 1,
            Self::InFlight => 2,
            Self::CutOff => 3,
            Self::Origin => 4,
            Self::Host => 5,
            Self::Auth => 6,
            Self::Scope => 7,
            Self::Preflight => 8,
        }
    }

    /// The refusal an error answered to a request counts as, if any.
    pub(crate) fn of(error: &McpError) -> Option<Self> {
        match error {
            McpError::RateLimited { .. } => Some(Self::Quota),
            McpError::Overloaded { .. } => Some(Self::InFlight),
            _ => None,
        }
    }
}

/// A session's transport, as `network_transport` says (the conventions' values).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Transport {
    /// stdin and stdout.
    Pipe,
    /// HTTP.
    Tcp,
}

impl Transport {
    const ALL: [Self; 2] = [Self::Pipe, Self::Tcp];

    fn label(self) -> &'static str {
        match self {
            Self::Pipe => "pipe",
            Self::Tcp => "tcp",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Pipe => 0,
            Self::Tcp => 1,
        }
    }
}

/// The sandbox's resident launchers at one moment (read when a scrape renders).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Launchers {
    /// Confined and waiting for a call.
    pub idle: u64,
    /// Serving a call.
    pub busy: u64,
}

/// A histogram of durations: per-bucket counts (not cumulative: one add per observation),
/// the count and the sum in nanoseconds.
struct Histogram<const N: usize> {
    /// Upper bounds in nanoseconds.
    bounds: &'static [u64; N],
    /// Observations in each bucket, the last for those above every bound; the count is
    /// their sum (two atomic additions per observation, not three).
    buckets: [AtomicU64; N],
    over: AtomicU64,
    sum_nanos: AtomicU64,
}

/// [`CONVENTION_BUCKETS`] in nanoseconds.
static CONVENTION_NANOS: [u64; 14] = [
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
    120_000_000_000,
    300_000_000_000,
];

/// [`FINE_BUCKETS`] in nanoseconds.
static FINE_NANOS: [u64; 18] = [
    100_000,
    500_000,
    1_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
    120_000_000_000,
    300_000_000_000,
];

impl<const N: usize> Histogram<N> {
    fn new(bounds: &'static [u64; N]) -> Self {
        Self {
            bounds,
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            over: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
        }
    }

    fn observe(&self, took: Duration) {
        self.observe_many(took, 1);
    }

    /// Observes `times` operations that each took `took`.
    fn observe_many(&self, took: Duration, times: u64) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = self
            .bounds
            .iter()
            .position(|bound| nanos <= *bound)
            .and_then(|index| self.buckets.get(index))
            .unwrap_or(&self.over);
        bucket.fetch_add(times, Ordering::Relaxed);
        self.sum_nanos
            .fetch_add(nanos.saturating_mul(times), Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.buckets
            .iter()
            .chain([&self.over])
            .fold(0_u64, |sum, bucket| {
                sum.saturating_add(bucket.load(Ordering::Relaxed))
            })
    }

    /// Writes the `_bucket`, `_sum` and `_count` lines of `name` with `labels` (each
    /// `name="value"`, already safe), in seconds; the `+Inf` bucket is the count.
    fn render(&self, out: &mut String, name: &str, labels: &str, seconds: &[f64; N]) {
        let count = self.count();
        let mut cumulative = 0_u64;
        let comma = if labels.is_empty() { "" } else { "," };
        for (bucket, le) in self.buckets.iter().zip(seconds) {
            cumulative = cumulative.saturating_add(bucket.load(Ordering::Relaxed));
            // An observation between the count's loads and these: never more in a bucket
            // than in the count.
            let shown = cumulative.min(count);
            put!(out, "{name}_bucket{{{labels}{comma}le=\"{le}\"}} {shown}");
        }
        put!(out, "{name}_bucket{{{labels}{comma}le=\"+Inf\"}} {count}");
        let sum = seconds_of(self.sum_nanos.load(Ordering::Relaxed));
        if labels.is_empty() {
            put!(out, "{name}_sum {sum}");
            put!(out, "{name}_count {count}");
        } else {
            put!(out, "{name}_sum{{{labels}}} {sum}");
            put!(out, "{name}_count{{{labels}}} {count}");
        }
    }
}

/// Nanoseconds as seconds, for the text format.
fn seconds_of(nanos: u64) -> f64 {
    Duration::from_nanos(nanos).as_secs_f64()
}

/// Runs of calls of one tool a batch defers to its write, at most (past it, a call is observed
/// at once): a pipelining client's batch of calls of a few tools needs a few.
const DEFERRED_CALL_SERIES: usize = 64;

/// The requests of one batch the transport read at once, answered and not yet written: their
/// operations are observed when the batch's replies are written, with one clock read for the
/// batch's arrival and one for its write, instead of two per request (a pipelining client's
/// batch holds thousands). Fixed counts by method and error type, so the batch takes no
/// memory per request.
pub(crate) struct Batch {
    received: Option<Instant>,
    /// Calls answered in the batch, by tool and outcome (a run of calls of one tool with one
    /// outcome is one entry), at most [`DEFERRED_CALL_SERIES`].
    calls: Vec<(Arc<ToolSeries>, Outcome, u64)>,
    counts: [[u32; ERROR_TYPES]; METHODS.len()],
    /// Which methods have counts, and for each which error types: only those are visited
    /// (bit sets: [`METHODS`] and the error types fit in 32 bits, checked below).
    methods: u32,
    errors: [u32; METHODS.len()],
}

impl Batch {
    pub(crate) fn new() -> Box<Self> {
        Box::new(Self {
            received: None,
            calls: Vec::with_capacity(DEFERRED_CALL_SERIES),
            counts: [[0; ERROR_TYPES]; METHODS.len()],
            methods: 0,
            errors: [0; METHODS.len()],
        })
    }

    /// A frame arrived: the batch is open from now, if it was not already.
    pub(crate) fn open(&mut self) {
        if self.received.is_none() {
            self.received = Some(Instant::now());
        }
    }

    /// When the open batch arrived, if one is open.
    pub(crate) fn received(&self) -> Option<Instant> {
        self.received
    }

    /// Defers a request of `method` answered as `error` to the batch's write; `false` when
    /// no batch is open (the caller observes it at once).
    pub(crate) fn defer(&mut self, method: RequestMethod, error: ErrorType) -> bool {
        if self.received.is_none() {
            return false;
        }
        let (m, e) = (method_index(method), error.index());
        let Some(count) = self.counts.get_mut(m).and_then(|row| row.get_mut(e)) else {
            return false;
        };
        *count = count.saturating_add(1);
        self.methods |= 1_u32
            .checked_shl(u32::try_from(m).unwrap_or(u32::MAX))
            .unwrap_or(0);
        if let Some(errors) = self.errors.get_mut(m) {
            *errors |= 1_u32
                .checked_shl(u32::try_from(e).unwrap_or(u32::MAX))
                .unwrap_or(0);
        }
        true
    }

    /// Defers a call of the tool with `series` that ended with `outcome`; `false` when the
    /// batch has no room (the caller observes it at once).
    fn defer_call(&mut self, series: &Arc<ToolSeries>, outcome: Outcome) -> bool {
        if let Some((last, last_outcome, count)) = self.calls.last_mut()
            && *last_outcome == outcome
            && Arc::ptr_eq(last, series)
        {
            *count = count.saturating_add(1);
            return true;
        }
        if self.calls.len() >= DEFERRED_CALL_SERIES {
            return false;
        }
        self.calls.push((Arc::clone(series), outcome, 1));
        true
    }

    /// The batch's replies were written: observes what it deferred in `metrics`, and closes
    /// it.
    pub(crate) fn written(&mut self, metrics: &Metrics) {
        let Some(received) = self.received.take() else {
            return;
        };
        if self.methods == 0 && self.calls.is_empty() {
            return;
        }
        let took = received.elapsed();
        for (series, outcome, count) in self.calls.drain(..) {
            series.ended_many(outcome, took, count);
        }
        for (m, (row, counts)) in metrics.operations.iter().zip(&mut self.counts).enumerate() {
            let bit = 1_u32
                .checked_shl(u32::try_from(m).unwrap_or(u32::MAX))
                .unwrap_or(0);
            if self.methods & bit == 0 {
                continue;
            }
            let errors = self.errors.get(m).copied().unwrap_or(0);
            for (e, (histogram, count)) in row.iter().zip(counts.iter_mut()).enumerate() {
                let bit = 1_u32
                    .checked_shl(u32::try_from(e).unwrap_or(u32::MAX))
                    .unwrap_or(0);
                if errors & bit != 0 && *count > 0 {
                    histogram.observe_many(took, u64::from(*count));
                    *count = 0;
                }
            }
        }
        self.methods = 0;
        self.errors = [0; METHODS.len()];
    }
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("open", &self.received.is_some())
            .finish_non_exhaustive()
    }
}

/// One tool's series: its calls by outcome and their durations.
pub(crate) struct ToolSeries {
    label: Box<str>,
    /// Its calls running now (signed: a decrement may be seen before its increment).
    in_flight: AtomicI64,
    calls: [AtomicU64; Outcome::ALL.len()],
    durations: Histogram<18>,
}

impl ToolSeries {
    fn new(label: &str) -> Self {
        Self {
            label: label.into(),
            in_flight: AtomicI64::new(0),
            calls: std::array::from_fn(|_| AtomicU64::new(0)),
            durations: Histogram::new(&FINE_NANOS),
        }
    }

    /// Counts `count` calls that ended with `outcome`, each after `took`.
    fn ended_many(&self, outcome: Outcome, took: Duration, count: u64) {
        if let Some(counter) = self.calls.get(outcome.index()) {
            counter.fetch_add(count, Ordering::Relaxed);
        }
        self.durations.observe_many(took, count);
    }

    /// Counts one call that ended with `outcome`; `took` is its duration when it ran.
    pub(crate) fn ended(&self, outcome: Outcome, took: Option<Duration>) {
        if let Some(counter) = self.calls.get(outcome.index()) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(took) = took {
            self.durations.observe(took);
        }
    }
}

impl std::fmt::Debug for ToolSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSeries")
            .field("tool", &self.label)
            .finish_non_exhaustive()
    }
}

/// The label of every call of a tool the server does not have (and of tools registered past
/// the 1,024th name).
pub const OTHER_TOOL: &str = "_OTHER";

/// A server's metrics: give one to [`ServerBuilder::metrics`](crate::ServerBuilder::metrics),
/// read it with [`Metrics::render`] (or serve it with `transport::metrics::Endpoint`, with
/// the `http` feature).
pub struct Metrics {
    /// `mcp_server_operation_duration_seconds` by method and error type.
    operations: [[Histogram<14>; ERROR_TYPES]; METHODS.len()],
    /// Series of registered tools by name: touched at registration (build and reload) and
    /// render only, never by a call.
    tools: Mutex<BTreeMap<Box<str>, Arc<ToolSeries>>>,
    /// Calls of tools the server does not have.
    other_tool: Arc<ToolSeries>,
    refusals: [AtomicU64; Refusal::ALL.len()],
    sessions: [AtomicUsize; Transport::ALL.len()],
    session_durations: [Histogram<14>; Transport::ALL.len()],
    /// Connections the sandbox's proxy refused.
    proxy_refusals: AtomicU64,
    /// What the kernel reported refusing commands, by kind (`crate::DenialKind`).
    denials: [AtomicU64; crate::DenialKind::ALL.len()],
    launchers: OnceLock<fn() -> Launchers>,
    /// The shared store's operations, once a store counts in these metrics.
    #[cfg(feature = "redis")]
    store: OnceLock<StoreSeries>,
}

/// How a shared store's operation went unanswered, in label order: the store answered with
/// an error, did not answer in time, or was not asked because it is down (a request inside
/// its retry interval).
#[cfg(feature = "redis")]
pub(crate) const STORE_FAILURES: [&str; 3] = ["error", "timeout", "down"];

/// The shared store's operations: the durations of answered ones and the count of the
/// others by [`STORE_FAILURES`], per operation of the closed set the store names.
#[cfg(feature = "redis")]
struct StoreSeries {
    operations: &'static [&'static str],
    durations: Box<[Histogram<18>]>,
    failures: Box<[[AtomicU64; STORE_FAILURES.len()]]>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Metrics with every counter at zero.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            operations: std::array::from_fn(|_| {
                std::array::from_fn(|_| Histogram::new(&CONVENTION_NANOS))
            }),
            tools: Mutex::new(BTreeMap::new()),
            other_tool: Arc::new(ToolSeries::new(OTHER_TOOL)),
            refusals: std::array::from_fn(|_| AtomicU64::new(0)),
            sessions: std::array::from_fn(|_| AtomicUsize::new(0)),
            session_durations: std::array::from_fn(|_| Histogram::new(&CONVENTION_NANOS)),
            proxy_refusals: AtomicU64::new(0),
            denials: std::array::from_fn(|_| AtomicU64::new(0)),
            launchers: OnceLock::new(),
            #[cfg(feature = "redis")]
            store: OnceLock::new(),
        })
    }

    /// Where `airlock_sandbox_launchers` is read from at each scrape (a sandbox's pool of
    /// resident launchers). Only the first call counts.
    pub fn launchers(&self, read: fn() -> Launchers) {
        if self.launchers.set(read).is_err() {
            tracing::debug!("the launchers' reader was already set");
        }
    }

    /// The series of the registered tool `name`: the same across reloads, so its counts go
    /// on; past [`MAX_METRIC_TOOLS`] names, the `_OTHER` series.
    /// `name` is a registered tool's (a `ToolName`: `[A-Za-z0-9_.-]`, safe in a label).
    pub(crate) fn tool(&self, name: &str) -> Arc<ToolSeries> {
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(series) = tools.get(name) {
            return Arc::clone(series);
        }
        if tools.len() >= MAX_METRIC_TOOLS {
            return Arc::clone(&self.other_tool);
        }
        let series = Arc::new(ToolSeries::new(name));
        tools.insert(name.into(), Arc::clone(&series));
        series
    }

    /// The series of calls of tools the server does not have.
    pub(crate) fn other_tool(&self) -> &ToolSeries {
        &self.other_tool
    }

    /// Counts one request of `method` answered after `took` as `error`.
    pub(crate) fn operation(&self, method: RequestMethod, error: ErrorType, took: Duration) {
        if let Some(histogram) = self
            .operations
            .get(method_index(method))
            .and_then(|row| row.get(error.index()))
        {
            histogram.observe(took);
        }
    }

    /// Counts one refusal.
    pub fn refused(&self, kind: Refusal) {
        if let Some(counter) = self.refusals.get(kind.index()) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a `tools/call` of the tool with `series` (none: one the server does not have) that the HTTP
    /// transport refused before the engine saw it: a call quota (the client's own, or its
    /// share of the server's: `quota`), or a slot (`in_flight`); the call as `refused`.
    #[cfg(feature = "http")]
    pub(crate) fn call_refused_by_transport(&self, error: &McpError, series: Option<&ToolSeries>) {
        let kind = match error {
            McpError::RateLimited { .. } => Some(Refusal::Quota),
            McpError::Overloaded { .. } | McpError::ClientBusy { .. } => Some(Refusal::InFlight),
            _ => None,
        };
        if let Some(kind) = kind {
            self.refused(kind);
        }
        series
            .unwrap_or(&self.other_tool)
            .ended(Outcome::Refused, None);
    }

    /// The shared store counts its operations here, named by `operations` (its closed set,
    /// in its index order). Only the first call counts.
    #[cfg(feature = "redis")]
    pub(crate) fn count_store(&self, operations: &'static [&'static str]) {
        let series = StoreSeries {
            operations,
            durations: operations
                .iter()
                .map(|_| Histogram::new(&FINE_NANOS))
                .collect(),
            failures: operations
                .iter()
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
        };
        if self.store.set(series).is_err() {
            tracing::debug!("the shared store's series were already set");
        }
    }

    /// Counts one answered operation (`operation`: an index of the names given to
    /// [`Metrics::count_store`]).
    #[cfg(feature = "redis")]
    pub(crate) fn store_answered(&self, operation: usize, took: Duration) {
        if let Some(histogram) = self
            .store
            .get()
            .and_then(|series| series.durations.get(operation))
        {
            histogram.observe(took);
        }
    }

    /// Counts one unanswered operation, `failure` an index of [`STORE_FAILURES`].
    #[cfg(feature = "redis")]
    pub(crate) fn store_failed(&self, operation: usize, failure: usize) {
        if let Some(counter) = self
            .store
            .get()
            .and_then(|series| series.failures.get(operation))
            .and_then(|row| row.get(failure))
        {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts `count` connections the sandbox's proxy refused.
    pub(crate) fn proxy_refused(&self, count: u64) {
        self.proxy_refusals.fetch_add(count, Ordering::Relaxed);
    }

    /// Counts the denials the kernel reported in one call's note (the proxy's are counted by
    /// [`Self::proxy_refused`], from the call's network note): by kind only, never by what
    /// was refused.
    pub(crate) fn sandbox_denied(&self, note: &crate::DenialsNote) {
        for denial in note
            .denials
            .iter()
            .filter(|denial| denial.source != crate::DenialSource::Proxy)
        {
            let index = crate::DenialKind::ALL
                .iter()
                .position(|kind| *kind == denial.kind);
            if let Some(counter) = index.and_then(|index| self.denials.get(index)) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A call of the tool with `series` (none: a tool registered without metrics, counted
    /// under `_OTHER`) started: counted in flight until the guard is finished or dropped (a
    /// guard dropped unfinished counts the call as cancelled).
    /// `received` is when its request arrived.
    pub(crate) fn call_started(
        &self,
        series: Option<&Arc<ToolSeries>>,
        received: Instant,
    ) -> InFlight {
        let tool = Arc::clone(series.unwrap_or(&self.other_tool));
        tool.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight {
            tool,
            started: received,
            finished: false,
        }
    }

    /// A session started on `transport`: counted until the guard is dropped, when its
    /// duration is observed.
    pub(crate) fn session_started(self: &Arc<Self>, transport: Transport) -> SessionGuard {
        if let Some(gauge) = self.sessions.get(transport.index()) {
            gauge.fetch_add(1, Ordering::Relaxed);
        }
        SessionGuard {
            metrics: Arc::clone(self),
            transport,
            started: Instant::now(),
        }
    }

    /// Calls in flight, over every tool's series (each call counts in its tool's).
    fn in_flight(&self) -> i64 {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        tools
            .values()
            .map(|series| &**series)
            .chain([&*self.other_tool])
            .fold(0_i64, |sum, series| {
                sum.saturating_add(series.in_flight.load(Ordering::Relaxed))
            })
    }

    /// Appends the text exposition format (version 0.0.4, [`CONTENT_TYPE`]) of every family.
    pub fn render(&self, out: &mut Vec<u8>) {
        let mut text = String::with_capacity(64 * 1024);
        self.render_operations(&mut text);
        self.render_tools(&mut text);
        render_family(
            &mut text,
            "airlock_refusals_total",
            "counter",
            "Requests and connections refused, by kind.",
        );
        for kind in Refusal::ALL {
            let count = self
                .refusals
                .get(kind.index())
                .map_or(0, |counter| counter.load(Ordering::Relaxed));
            put!(
                text,
                "airlock_refusals_total{{kind=\"{}\"}} {count}",
                kind.label()
            );
        }
        render_family(
            &mut text,
            "airlock_calls_in_flight",
            "gauge",
            "Tool calls running now.",
        );
        put!(text, "airlock_calls_in_flight {}", self.in_flight());
        render_family(
            &mut text,
            "airlock_sessions",
            "gauge",
            "Sessions open now (stdio, and legacy HTTP sessions), by transport.",
        );
        for transport in Transport::ALL {
            let open = self
                .sessions
                .get(transport.index())
                .map_or(0, |gauge| gauge.load(Ordering::Relaxed));
            put!(
                text,
                "airlock_sessions{{network_transport=\"{}\"}} {open}",
                transport.label()
            );
        }
        render_family(
            &mut text,
            "mcp_server_session_duration_seconds",
            "histogram",
            "Duration of ended sessions, by transport.",
        );
        for (transport, histogram) in Transport::ALL.iter().zip(&self.session_durations) {
            let labels = format!("network_transport=\"{}\"", transport.label());
            histogram.render(
                &mut text,
                "mcp_server_session_duration_seconds",
                &labels,
                &CONVENTION_BUCKETS,
            );
        }
        render_family(
            &mut text,
            "airlock_sandbox_denials_total",
            "counter",
            "What the sandbox refused a command, by kind (proxy: connections refused by the \
             network proxy; the others as the kernel's Landlock audit records report them).",
        );
        put!(
            text,
            "airlock_sandbox_denials_total{{kind=\"proxy\"}} {}",
            self.proxy_refusals.load(Ordering::Relaxed)
        );
        for (kind, counter) in crate::DenialKind::ALL.iter().zip(&self.denials) {
            put!(
                text,
                "airlock_sandbox_denials_total{{kind=\"{}\"}} {}",
                kind.label(),
                counter.load(Ordering::Relaxed)
            );
        }
        if let Some(read) = self.launchers.get() {
            let Launchers { idle, busy } = read();
            render_family(
                &mut text,
                "airlock_sandbox_launchers",
                "gauge",
                "The sandbox's resident launchers, by state.",
            );
            put!(text, "airlock_sandbox_launchers{{state=\"idle\"}} {idle}");
            put!(text, "airlock_sandbox_launchers{{state=\"busy\"}} {busy}");
        }
        #[cfg(feature = "redis")]
        if let Some(store) = self.store.get() {
            store.render(&mut text);
        }
        render_family(
            &mut text,
            "airlock_build_info",
            "gauge",
            "The airlock library serving, by version.",
        );
        put!(
            text,
            "airlock_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        out.extend_from_slice(text.as_bytes());
    }

    fn render_operations(&self, text: &mut String) {
        render_family(
            text,
            "mcp_server_operation_duration_seconds",
            "histogram",
            "Duration of MCP requests, from receipt to reply, by method and error type.",
        );
        for (method, row) in METHODS.iter().zip(&self.operations) {
            for (index, histogram) in row.iter().enumerate() {
                // A series appears once it has an observation: 14 methods by 13 error types
                // would otherwise be mostly zeros.
                if histogram.count() == 0 {
                    continue;
                }
                let labels = match ErrorType::label(index) {
                    Some(error) => format!(
                        "mcp_method_name=\"{}\",error_type=\"{error}\"",
                        method.as_str()
                    ),
                    None => format!("mcp_method_name=\"{}\"", method.as_str()),
                };
                histogram.render(
                    text,
                    "mcp_server_operation_duration_seconds",
                    &labels,
                    &CONVENTION_BUCKETS,
                );
            }
        }
    }

    fn render_tools(&self, text: &mut String) {
        let tools: Vec<Arc<ToolSeries>> = self
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        let every = tools
            .iter()
            .map(|series| &**series)
            .chain([&*self.other_tool]);
        render_family(
            text,
            "airlock_tool_calls_total",
            "counter",
            "Tool calls by tool and outcome (_OTHER: a tool the server does not have).",
        );
        for series in every.clone() {
            for outcome in Outcome::ALL {
                let count = series
                    .calls
                    .get(outcome.index())
                    .map_or(0, |counter| counter.load(Ordering::Relaxed));
                put!(
                    text,
                    "airlock_tool_calls_total{{tool=\"{}\",outcome=\"{}\"}} {count}",
                    series.label,
                    outcome.label()
                );
            }
        }
        render_family(
            text,
            "airlock_tool_call_duration_seconds",
            "histogram",
            "Duration of tool calls that ran, by tool.",
        );
        for series in every {
            let labels = format!("tool=\"{}\"", series.label);
            series.durations.render(
                text,
                "airlock_tool_call_duration_seconds",
                &labels,
                &FINE_BUCKETS,
            );
        }
    }
}

#[cfg(feature = "redis")]
impl StoreSeries {
    fn render(&self, text: &mut String) {
        render_family(
            text,
            "airlock_store_operation_duration_seconds",
            "histogram",
            "Shared store (Redis) operations answered, by operation.",
        );
        for (operation, histogram) in self.operations.iter().zip(self.durations.iter()) {
            histogram.render(
                text,
                "airlock_store_operation_duration_seconds",
                &format!("operation=\"{operation}\""),
                &FINE_BUCKETS,
            );
        }
        render_family(
            text,
            "airlock_store_errors_total",
            "counter",
            "Shared store (Redis) operations not answered, by operation and kind (error, \
             timeout, down: not tried while the store is down).",
        );
        for (operation, row) in self.operations.iter().zip(self.failures.iter()) {
            for (kind, counter) in STORE_FAILURES.iter().zip(row) {
                put!(
                    text,
                    "airlock_store_errors_total{{operation=\"{operation}\",kind=\"{kind}\"}} {}",
                    counter.load(Ordering::Relaxed)
                );
            }
        }
    }
}

/// Writes a family's `# HELP` and `# TYPE` lines.
fn render_family(text: &mut String, name: &str, kind: &str, help: &str) {
    put!(text, "# HELP {name} {help}");
    put!(text, "# TYPE {name} {kind}");
}

/// A call in flight: counted in `airlock_calls_in_flight` (its tool's share) until dropped.
pub(crate) struct InFlight {
    tool: Arc<ToolSeries>,
    started: Instant,
    finished: bool,
}

impl InFlight {
    /// A task's run ended as `outcome`: counted under its tool, with its duration. The
    /// request that created the task was counted when it was answered, so no operation here.
    pub(crate) fn ran(mut self, outcome: Outcome) {
        self.finished = true;
        self.tool.ended(outcome, Some(self.started.elapsed()));
    }

    /// The call was answered: counts its outcome, its duration, and the `tools/call`
    /// operation answered as `error`. A call answered in the batch its request came in
    /// (an in-process tool) is deferred to the batch's write, like the batch's other
    /// requests, with no clock read of its own.
    pub(crate) fn finish(
        mut self,
        metrics: &Metrics,
        batch: Option<&mut Batch>,
        outcome: Outcome,
        error: ErrorType,
    ) {
        self.finished = true;
        if let Some(batch) = batch.filter(|batch| batch.received == Some(self.started))
            && batch.defer_call(&self.tool, outcome)
            && batch.defer(RequestMethod::ToolsCall, error)
        {
            return;
        }
        let took = self.started.elapsed();
        self.tool.ended(outcome, Some(took));
        metrics.operation(RequestMethod::ToolsCall, error, took);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.tool.in_flight.fetch_sub(1, Ordering::Relaxed);
        if !self.finished {
            // Cancelled, abandoned at shutdown, or its session ended: no reply was sent.
            self.tool.ended(Outcome::Cancelled, None);
        }
    }
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight").finish_non_exhaustive()
    }
}

/// An open session: counted in `airlock_sessions` until dropped, when its duration is
/// observed.
pub(crate) struct SessionGuard {
    metrics: Arc<Metrics>,
    transport: Transport,
    started: Instant,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let index = self.transport.index();
        if let Some(gauge) = self.metrics.sessions.get(index) {
            gauge.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(histogram) = self.metrics.session_durations.get(index) {
            histogram.observe(self.started.elapsed());
        }
    }
}

impl std::fmt::Debug for SessionGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGuard").finish_non_exhaustive()
    }
}
