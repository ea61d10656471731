//! The HTTP load generator of tools/http-bench.sh (see BENCHMARKS.md, "HTTP (issue 16)"):
//! `tools/call` of an `echo` tool over keep-alive HTTP/1.1, one std thread and one
//! `TcpStream` per client, no client library, so that what is measured is the server.
//!
//!     httpload run   --addr HOST:PORT [--era modern|legacy] [--clients N] [--warmup-ms MS]
//!                    [--duration-ms MS] [--pid PID] [--label NAME] [--timeout S]
//!     httpload idle  --addr HOST:PORT --pid PID [--era …] [--connections K] [--label NAME]
//!                    [--settle-ms MS] [--timeout S]
//!     httpload check --addr HOST:PORT [--era …]     one call; prints the reply, exit 1 if wrong
//!     httpload wait  --addr HOST:PORT [--timeout S]  until the port accepts a connection
//!     httpload port                                  prints a free loopback port
//!
//! Every request is `POST /mcp` of `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":
//! {"name":"echo","arguments":{"message":"hello"}…}}` with a fresh id. `modern` (2026-07-28)
//! adds the `_meta` protocol fields and the `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers that must match them; `legacy` sends `MCP-Protocol-Version: 2025-11-25`
//! and no `_meta`, for a stateless legacy server. Every reply is checked: status 200, a
//! complete body (`Content-Length` or chunked; JSON, or SSE whose `data:` holds the reply),
//! `jsonrpc` 2.0, the request's id, no `error`, `result.content[0].text` = "hello" and no
//! `isError`. A reply that fails any check is counted apart and makes the record's STATUS
//! `FAILED`: it never counts as served.
//!
//! `run`: N clients (default 1), each a connection doing request → reply in a loop, for
//! `--warmup-ms` (default 1,000) and then `--duration-ms` (default 3,000). Requests
//! completed inside the measured window count: requests/s is their number over the window,
//! and p50/p90/p99 their latencies (write of the request to the last byte of the reply). A
//! connection the server closes is opened again and counted (RECONNECTS). With `--pid`, the
//! server's CPU time (user + system, all threads, from /proc/PID/stat) over the window per
//! served request: a figure that a busy machine moves less than the rate. Record:
//!
//!     http  LABEL  ERA  CLIENTS  REQUESTS  REQ_PER_S  P50_US  P90_US  P99_US  RECONNECTS
//!           CPU_US_PER_REQUEST  STATUS
//!
//! `idle`: warms the server (200 calls over 2 connections, then closed), reads VmRSS of PID
//! from /proc, opens K connections (default 1,000), each completing one call so that the
//! server holds it as an idle keep-alive connection, waits `--settle-ms` (default 500), reads
//! VmRSS again and checks how many of the K the server still holds open. Record:
//!
//!     idle  LABEL  ERA  K  OPEN  RSS_BEFORE_KIB  RSS_AFTER_KIB  BYTES_PER_CONNECTION  STATUS
//!
//! Every command is bounded in time (`--timeout`, default 120 s): past it the process exits
//! with status 2, and a socket read or write that waits 10 s is a failure.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A socket operation that waits this long is a failure (the server stalled).
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest reply head or body accepted: an echo of "hello" is a few hundred bytes.
const MAX_REPLY_BYTES: usize = 1 << 20;

/// The text sent and expected back.
const MESSAGE: &str = "hello";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("httpload: run, idle, check, wait or port");
        std::process::exit(1);
    };
    let result = Options::parse(rest).and_then(|options| {
        watchdog(&options)?;
        match command.as_str() {
            "run" => run(&options),
            "idle" => idle(&options),
            "check" => check(&options),
            "wait" => wait(&options),
            "port" => port(),
            other => Err(format!("unknown command {other:?}")),
        }
    });
    if let Err(error) = result {
        eprintln!("httpload: {error}");
        std::process::exit(1);
    }
}

/// `--name value` pairs.
struct Options {
    flags: BTreeMap<String, String>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut flags = BTreeMap::new();
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let name = arg
                .strip_prefix("--")
                .ok_or(format!("unexpected argument {arg:?}"))?;
            let value = rest.next().ok_or(format!("--{name} needs a value"))?;
            flags.insert(name.to_owned(), value.clone());
        }
        Ok(Self { flags })
    }

    fn number(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.flags.get(name) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| format!("--{name}: not a number")),
        }
    }

    fn text(&self, name: &str, default: &str) -> String {
        self.flags
            .get(name)
            .cloned()
            .unwrap_or_else(|| default.to_owned())
    }

    fn addr(&self) -> Result<SocketAddr, String> {
        self.flags
            .get("addr")
            .ok_or("--addr HOST:PORT is required")?
            .parse()
            .map_err(|_| "--addr: not HOST:PORT".to_owned())
    }

    fn era(&self) -> Result<Era, String> {
        match self.text("era", "modern").as_str() {
            "modern" => Ok(Era::Modern),
            "legacy" => Ok(Era::Legacy),
            _ => Err("--era: modern or legacy".into()),
        }
    }
}

/// A command that stalls ends the process, with an error, at the deadline.
fn watchdog(options: &Options) -> Result<(), String> {
    let timeout = Duration::from_secs(options.number("timeout", 120)?);
    thread::spawn(move || {
        thread::sleep(timeout);
        eprintln!("httpload: timed out after {} s", timeout.as_secs());
        std::process::exit(2);
    });
    Ok(())
}

#[derive(Clone, Copy)]
enum Era {
    /// 2026-07-28: stateless, the protocol fields in every request.
    Modern,
    /// 2025-11-25 without a session (a stateless legacy server).
    Legacy,
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

/// Builds requests for one server into a reused buffer.
struct Requests {
    host: String,
    era: Era,
}

impl Requests {
    fn new(addr: SocketAddr, era: Era) -> Self {
        Self {
            host: addr.to_string(),
            era,
        }
    }

    /// The bytes of the call with this id, written over `out`.
    fn write(&self, id: u64, out: &mut Vec<u8>) {
        let body = match self.era {
            Era::Modern => format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\
                 \"name\":\"echo\",\"arguments\":{{\"message\":\"{MESSAGE}\"}},\"_meta\":{{\
                 \"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\
                 \"io.modelcontextprotocol/clientCapabilities\":{{}},\
                 \"io.modelcontextprotocol/clientInfo\":{{\"name\":\"httpload\",\"version\":\"0\"}}}}}}}}"
            ),
            Era::Legacy => format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\
                 \"name\":\"echo\",\"arguments\":{{\"message\":\"{MESSAGE}\"}}}}}}"
            ),
        };
        let era_headers = match self.era {
            Era::Modern => {
                "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
            }
            Era::Legacy => "MCP-Protocol-Version: 2025-11-25\r\n",
        };
        out.clear();
        let _ = write!(
            out,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{era_headers}\
             Content-Length: {}\r\n\r\n{body}",
            self.host,
            body.len()
        );
    }
}

/// One keep-alive connection and its read buffer.
struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

/// What one exchange gave.
enum Outcome {
    /// A 200 with the expected reply.
    Good,
    /// A reply that fails a check (why, for the first one reported).
    Bad(String),
    /// The server closed the connection before replying (or said `Connection: close`).
    Closed,
}

impl Connection {
    fn open(addr: SocketAddr) -> Result<Self, String> {
        let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)
            .map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .map_err(|e| e.to_string())?;
        stream
            .set_write_timeout(Some(IO_TIMEOUT))
            .map_err(|e| e.to_string())?;
        Ok(Self {
            stream,
            buffer: Vec::with_capacity(4096),
        })
    }

    /// Sends the request and reads its reply; `Closed` if the connection went away (or will:
    /// `keep` is then false and the caller opens a new one).
    fn exchange(&mut self, request: &[u8], id: u64) -> (Outcome, bool) {
        if self.stream.write_all(request).is_err() {
            return (Outcome::Closed, false);
        }
        match self.reply() {
            Ok(None) => (Outcome::Closed, false),
            Ok(Some(reply)) => {
                let keep = reply.keep_alive;
                (verify(&reply, id), keep)
            }
            Err(error) => (Outcome::Bad(error), false),
        }
    }

    /// Fills the buffer until it holds at least `want` bytes; false at end of stream.
    fn fill(&mut self, want: usize) -> Result<bool, String> {
        let mut chunk = [0u8; 16 * 1024];
        while self.buffer.len() < want {
            if self.buffer.len() > MAX_REPLY_BYTES {
                return Err("reply over 1 MiB".into());
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        Ok(true)
    }

    /// Reads until `needle` is in the buffer from `from` on; its offset, or None at end.
    fn until(&mut self, needle: &[u8], from: usize) -> Result<Option<usize>, String> {
        loop {
            if let Some(at) = find(&self.buffer[from.min(self.buffer.len())..], needle) {
                return Ok(Some(from + at));
            }
            let have = self.buffer.len();
            if !self.fill(have + 1)? {
                return Ok(None);
            }
        }
    }

    /// One HTTP/1.1 reply: None if the stream ended before its first byte.
    fn reply(&mut self) -> Result<Option<Reply>, String> {
        let Some(end) = self.until(b"\r\n\r\n", 0)? else {
            if self.buffer.is_empty() {
                return Ok(None);
            }
            return Err("stream ended inside a reply head".into());
        };
        let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        self.buffer.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or(format!("bad status line {status_line:?}"))?;
        let mut length = None;
        let mut chunked = false;
        let mut keep_alive = !status_line.starts_with("HTTP/1.0");
        let mut content_type = String::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => keep_alive = !value.eq_ignore_ascii_case("close"),
                "content-type" => content_type = value.to_ascii_lowercase(),
                _ => {}
            }
        }
        let body = if chunked {
            self.chunked()?
        } else if let Some(length) = length {
            if length > MAX_REPLY_BYTES {
                return Err("reply over 1 MiB".into());
            }
            if !self.fill(length)? {
                return Err("stream ended inside a body".into());
            }
            self.buffer.drain(..length).collect()
        } else {
            // No length: the body runs to the end of the stream.
            while self.fill(self.buffer.len() + 1)? {}
            keep_alive = false;
            std::mem::take(&mut self.buffer)
        };
        Ok(Some(Reply {
            status,
            content_type,
            body,
            keep_alive,
        }))
    }

    fn chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        loop {
            let end = self
                .until(b"\r\n", 0)?
                .ok_or("stream ended inside a chunk size")?;
            let line = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
            self.buffer.drain(..end + 2);
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| format!("bad chunk size {line:?}"))?;
            if body.len() + size > MAX_REPLY_BYTES {
                return Err("reply over 1 MiB".into());
            }
            if size == 0 {
                // Trailers (none expected), then the blank line.
                let end = self
                    .until(b"\r\n", 0)?
                    .ok_or("stream ended inside the trailers")?;
                if end == 0 {
                    self.buffer.drain(..2);
                } else {
                    let end = self
                        .until(b"\r\n\r\n", 0)?
                        .ok_or("stream ended inside the trailers")?;
                    self.buffer.drain(..end + 4);
                }
                return Ok(body);
            }
            if !self.fill(size + 2)? {
                return Err("stream ended inside a chunk".into());
            }
            body.extend_from_slice(&self.buffer[..size]);
            self.buffer.drain(..size + 2);
        }
    }
}

struct Reply {
    status: u16,
    content_type: String,
    body: Vec<u8>,
    keep_alive: bool,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The checks every reply must pass to count as served.
fn verify(reply: &Reply, id: u64) -> Outcome {
    if reply.status != 200 {
        return Outcome::Bad(format!("status {}: {}", reply.status, shorten(&reply.body)));
    }
    let message: Value = if reply.content_type.starts_with("text/event-stream") {
        // The reply is the event whose data carries our id.
        let text = String::from_utf8_lossy(&reply.body);
        let found = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|value| value.get("id").is_some());
        match found {
            Some(value) => value,
            None => return Outcome::Bad(format!("no reply event: {}", shorten(&reply.body))),
        }
    } else {
        match serde_json::from_slice(&reply.body) {
            Ok(value) => value,
            Err(_) => return Outcome::Bad(format!("not JSON: {}", shorten(&reply.body))),
        }
    };
    let good = message["jsonrpc"] == "2.0"
        && message["id"].as_u64() == Some(id)
        && message.get("error").is_none()
        && message["result"]["content"][0]["type"] == "text"
        && message["result"]["content"][0]["text"] == MESSAGE
        && message["result"]["isError"] != true;
    if good {
        Outcome::Good
    } else {
        Outcome::Bad(format!("wrong reply to id {id}: {}", shorten(&reply.body)))
    }
}

fn shorten(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.chars().take(300).collect()
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1e3
}

/// The phases of a run, shared by the clients.
const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// What one client counted in the measured window.
#[derive(Default)]
struct Tally {
    latencies_ns: Vec<u64>,
    bad: u64,
    first_bad: Option<String>,
    reconnects: u64,
    /// The client stopped after 100 failures in a row.
    gave_up: bool,
}

fn run(options: &Options) -> Result<(), String> {
    let addr = options.addr()?;
    let era = options.era()?;
    let label = options.text("label", "http");
    let clients = options.number("clients", 1)?.max(1);
    let warmup = Duration::from_secs_f64(options.number("warmup-ms", 1000)? as f64 / 1e3);
    let duration = Duration::from_secs_f64(options.number("duration-ms", 3000)? as f64 / 1e3);
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let ids = Arc::new(AtomicU64::new(1));
    let requests = Arc::new(Requests::new(addr, era));
    let pid = match options.number("pid", 0)? {
        0 => None,
        pid => Some(u32::try_from(pid).map_err(|_| "--pid: too large")?),
    };

    // Connect every client first: the clock starts with all of them connected.
    let mut connections = Vec::new();
    for _ in 0..clients {
        connections.push(Connection::open(addr)?);
    }
    let mut workers = Vec::new();
    for connection in connections {
        let (phase, ids, requests) = (Arc::clone(&phase), Arc::clone(&ids), Arc::clone(&requests));
        workers.push(
            thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || client(connection, addr, &phase, &ids, &requests))
                .map_err(|e| format!("thread: {e}"))?,
        );
    }
    thread::sleep(warmup);
    phase.store(MEASURE, Ordering::SeqCst);
    let began = Instant::now();
    let cpu_before = pid.map(cpu_ticks).transpose()?;
    thread::sleep(duration);
    phase.store(STOP, Ordering::SeqCst);
    let window = began.elapsed();
    let cpu_after = pid.map(cpu_ticks).transpose()?;

    let mut all = Tally::default();
    let mut failures = Vec::new();
    for worker in workers {
        match worker.join() {
            Ok(Ok(mut tally)) => {
                all.latencies_ns.append(&mut tally.latencies_ns);
                all.bad += tally.bad;
                all.reconnects += tally.reconnects;
                if tally.gave_up {
                    failures.push("a client gave up after 100 failures in a row".to_owned());
                }
                if all.first_bad.is_none() {
                    all.first_bad = tally.first_bad;
                }
            }
            Ok(Err(error)) => failures.push(error),
            Err(_) => failures.push("a client thread panicked".into()),
        }
    }
    all.latencies_ns.sort_unstable();
    let served = all.latencies_ns.len() as u64;
    let status = if all.bad == 0 && failures.is_empty() && served > 0 {
        "ok".to_owned()
    } else {
        if let Some(first) = &all.first_bad {
            eprintln!("httpload: {label}: first bad reply: {first}");
        }
        for failure in failures.iter().take(3) {
            eprintln!("httpload: {label}: {failure}");
        }
        format!("FAILED({}_bad,{}_clients_failed)", all.bad, failures.len())
    };
    // Server CPU (user + system, every thread) per served request, in µs.
    let cpu_us = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) if served > 0 => format!(
            "{:.1}",
            after.saturating_sub(before) as f64 * 1e6 / TICKS_PER_SECOND / served as f64
        ),
        _ => "-".to_owned(),
    };
    println!(
        "http\t{label}\t{}\t{clients}\t{served}\t{:.0}\t{:.1}\t{:.1}\t{:.1}\t{}\t{cpu_us}\t{status}",
        era.name(),
        served as f64 / window.as_secs_f64(),
        percentile(&all.latencies_ns, 50.0),
        percentile(&all.latencies_ns, 90.0),
        percentile(&all.latencies_ns, 99.0),
        all.reconnects,
    );
    Ok(())
}

/// One client: request → reply until the phase says stop. Replies completed in the
/// measured window are tallied.
fn client(
    mut connection: Connection,
    addr: SocketAddr,
    phase: &AtomicU8,
    ids: &AtomicU64,
    requests: &Requests,
) -> Result<Tally, String> {
    let mut tally = Tally::default();
    let mut request = Vec::with_capacity(512);
    let mut failures_in_a_row = 0u32;
    while phase.load(Ordering::Relaxed) != STOP {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        requests.write(id, &mut request);
        let began = Instant::now();
        let (outcome, keep) = connection.exchange(&request, id);
        let took = began.elapsed();
        let counted = phase.load(Ordering::Relaxed) == MEASURE;
        match outcome {
            Outcome::Good => {
                failures_in_a_row = 0;
                if counted {
                    tally
                        .latencies_ns
                        .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
                }
            }
            Outcome::Bad(why) => {
                failures_in_a_row += 1;
                tally.bad += 1;
                if tally.first_bad.is_none() {
                    tally.first_bad = Some(why);
                }
            }
            Outcome::Closed => {
                failures_in_a_row += 1;
            }
        }
        if failures_in_a_row >= 100 {
            tally.gave_up = true;
            break;
        }
        if !keep {
            tally.reconnects += 1;
            connection = Connection::open(addr)?;
        }
    }
    Ok(tally)
}

/// Clock ticks per second of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// User plus system time of a process (all its threads) so far, in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the line (utime, stime) are the 12th and 13th after the name.
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    match (tick(11), tick(12)) {
        (Some(user), Some(system)) => Ok(user + system),
        _ => Err(format!("no times in /proc/{pid}/stat")),
    }
}

/// VmRSS of a process, in KiB.
fn rss_kib(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or(format!("no VmRSS in /proc/{pid}/status"))
}

/// One call on a connection that must be good.
fn one_call(connection: &mut Connection, requests: &Requests, id: u64) -> Result<(), String> {
    let mut request = Vec::new();
    requests.write(id, &mut request);
    match connection.exchange(&request, id) {
        (Outcome::Good, true) => Ok(()),
        (Outcome::Good, false) => Err("the server closed the connection after a reply".into()),
        (Outcome::Bad(why), _) => Err(why),
        (Outcome::Closed, _) => Err("the server closed the connection before replying".into()),
    }
}

/// Whether the server still holds the connection: a read that would wait, not end of stream.
fn still_open(connection: &Connection) -> bool {
    if connection.stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let open =
        matches!(connection.stream.peek(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
    let _ = connection.stream.set_nonblocking(false);
    open
}

fn idle(options: &Options) -> Result<(), String> {
    let addr = options.addr()?;
    let era = options.era()?;
    let label = options.text("label", "idle");
    let pid = u32::try_from(options.number("pid", 0)?).map_err(|_| "--pid: too large")?;
    if pid == 0 {
        return Err("--pid PID is required".into());
    }
    let count = options.number("connections", 1000)?;
    let settle = Duration::from_millis(options.number("settle-ms", 500)?);
    let requests = Requests::new(addr, era);

    // Warm-up: both workers of a multi-thread server, lazily built state, a first GC.
    let mut id = 1u64;
    for _ in 0..2 {
        let mut connection = Connection::open(addr)?;
        for _ in 0..100 {
            one_call(&mut connection, &requests, id)?;
            id += 1;
        }
    }
    thread::sleep(Duration::from_millis(200));
    let before = rss_kib(pid)?;

    let mut held = Vec::new();
    for _ in 0..count {
        let mut connection = Connection::open(addr)?;
        one_call(&mut connection, &requests, id)?;
        id += 1;
        held.push(connection);
    }
    thread::sleep(settle);
    let after = rss_kib(pid)?;
    let open = held.iter().filter(|c| still_open(c)).count();
    let per_connection = (after as f64 - before as f64) * 1024.0 / count.max(1) as f64;
    let status = if open == held.len() {
        "ok".to_owned()
    } else {
        format!("FAILED({}_closed_by_the_server)", held.len() - open)
    };
    println!(
        "idle\t{label}\t{}\t{count}\t{open}\t{before}\t{after}\t{per_connection:.0}\t{status}",
        era.name()
    );
    Ok(())
}

fn check(options: &Options) -> Result<(), String> {
    let addr = options.addr()?;
    let requests = Requests::new(addr, options.era()?);
    let mut connection = Connection::open(addr)?;
    let mut request = Vec::new();
    requests.write(7, &mut request);
    connection
        .stream
        .write_all(&request)
        .map_err(|e| format!("write: {e}"))?;
    let reply = connection
        .reply()?
        .ok_or("the server closed the connection before replying")?;
    println!(
        "{} {} {}",
        reply.status,
        reply.content_type,
        String::from_utf8_lossy(&reply.body)
    );
    match verify(&reply, 7) {
        Outcome::Good => Ok(()),
        Outcome::Bad(why) => Err(why),
        Outcome::Closed => Err("closed".into()),
    }
}

fn wait(options: &Options) -> Result<(), String> {
    let addr = options.addr()?;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
            return Ok(());
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn port() -> Result<(), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("{}", addr.port());
    Ok(())
}
