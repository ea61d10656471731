//! End-to-end load generator for stdio MCP servers (see BENCHMARKS.md, tools/bench.sh).
//!
//!     loadgen run --label NAME --mode ping|call|cmd [options] -- SERVER COMMAND...
//!     loadgen bigline --label NAME --mib 512 -- SERVER COMMAND...
//!     loadgen report RECORDS.tsv --baseline echo-flush
//!
//! `run` spawns the server, measures the cold start (spawn to the `initialize` reply) and the
//! memory after it, then ping-pong latency (one request, wait for its reply, repeat), then
//! pipelined throughput (a writer thread sends N requests as fast as the pipe takes them while
//! this thread reads and counts replies and checks every id comes back exactly once), then the
//! server's peak memory (VmHWM). It prints one tab-separated record.
//!
//! `bigline` sends one request line of the given size after the handshake, then a ping, and
//! records what came back and the server's peak memory.
//!
//! `report` turns records from interleaved rounds into markdown tables: medians and min–max,
//! and ratios to a baseline label.
//!
//! Every run is bounded in time (`--timeout`): a stalled server is killed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const PROTOCOL: &str = "2025-06-18";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("bigline") => bigline(&args[1..]),
        Some("report") => report(&args[1..]),
        _ => Err("usage: loadgen run|bigline|report ... (see the source's header)".into()),
    };
    if let Err(error) = result {
        eprintln!("loadgen: {error}");
        std::process::exit(1);
    }
}

/// Options before `--`, and the command after it.
struct Options {
    flags: BTreeMap<String, String>,
    command: Vec<String>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut flags = BTreeMap::new();
        let mut rest = args.iter();
        let mut command = Vec::new();
        while let Some(arg) = rest.next() {
            if arg == "--" {
                command = rest.cloned().collect();
                break;
            }
            let Some(name) = arg.strip_prefix("--") else {
                flags.insert("file".to_owned(), arg.clone());
                continue;
            };
            let value = rest.next().ok_or(format!("--{name} needs a value"))?;
            flags.insert(name.to_owned(), value.clone());
        }
        Ok(Self { flags, command })
    }

    fn get(&self, name: &str, default: &str) -> String {
        self.flags
            .get(name)
            .cloned()
            .unwrap_or_else(|| default.to_owned())
    }

    fn number(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.flags.get(name) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| format!("--{name}: not a number")),
        }
    }
}

/// The request line of a mode, with `$ID` where the id goes.
fn template(mode: &str, options: &Options) -> String {
    if let Some(request) = options.flags.get("request") {
        return request.clone();
    }
    match mode {
        "ping" => r#"{"jsonrpc":"2.0","id":$ID,"method":"ping"}"#.to_owned(),
        "call" => r#"{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}"#.to_owned(),
        "cmd" => r#"{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":{"name":"run_true","arguments":{}}}"#.to_owned(),
        other => other.to_owned(),
    }
}

struct Template {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Template {
    fn new(text: &str) -> Result<Self, String> {
        let (head, tail) = text
            .split_once("$ID")
            .ok_or("the request template has no $ID")?;
        let mut tail = tail.as_bytes().to_vec();
        tail.push(b'\n');
        Ok(Self {
            head: head.as_bytes().to_vec(),
            tail,
        })
    }

    fn write(&self, out: &mut Vec<u8>, id: u64) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(id.to_string().as_bytes());
        out.extend_from_slice(&self.tail);
    }
}

/// A spawned server with a watchdog that kills it at the deadline.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    replies: Replies,
    expired: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl Server {
    fn spawn(command: &[String], timeout: Duration) -> Result<Self, String> {
        let (program, args) = command.split_first().ok_or("no server command after --")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let expired = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let pid = child.id();
        let (flag, finished) = (Arc::clone(&expired), Arc::clone(&done));
        thread::spawn(move || {
            let deadline = Instant::now() + timeout;
            while Instant::now() < deadline {
                if finished.load(Ordering::Relaxed) {
                    return;
                }
                thread::sleep(Duration::from_millis(50));
            }
            if !finished.load(Ordering::Relaxed) {
                flag.store(true, Ordering::Relaxed);
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        });
        Ok(Self {
            child,
            stdin,
            replies: Replies::new(stdout),
            expired,
            done,
        })
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing to the server: {e}"))
    }

    /// Reads replies until the one for `id`.
    fn wait_for(&mut self, id: u64) -> Result<Reply, String> {
        loop {
            let reply = self.replies.next().ok_or_else(|| self.why_eof())?;
            if reply.id == Some(id) {
                return Ok(reply);
            }
        }
    }

    fn why_eof(&self) -> String {
        if self.expired.load(Ordering::Relaxed) {
            "timed out (server killed)".into()
        } else {
            "the server closed its output".into()
        }
    }

    fn handshake(&mut self) -> Result<Reply, String> {
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL}","capabilities":{{}},"clientInfo":{{"name":"loadgen","version":"0"}}}}}}"#
        );
        self.send(format!("{init}\n").as_bytes())?;
        self.wait_for(0)
    }

    fn initialized(&mut self) -> Result<(), String> {
        self.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
    }

    fn memory(&self) -> Memory {
        Memory::of(self.child.id())
    }

    /// Closes stdin and waits up to 5 s for the exit, then kills.
    fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                self.done.store(true, Ordering::Relaxed);
                return;
            }
            thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Peak and current resident memory of a process, in KiB (0 when unreadable).
#[derive(Clone, Copy, Default)]
struct Memory {
    hwm_kib: u64,
    rss_kib: u64,
}

impl Memory {
    fn of(pid: u32) -> Self {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Self {
            hwm_kib: field("VmHWM:"),
            rss_kib: field("VmRSS:"),
        }
    }
}

/// One reply line, as far as the load generator cares.
#[derive(Clone, Copy, Debug)]
struct Reply {
    id: Option<u64>,
    error: Option<i64>,
}

/// Reply lines from the server's stdout; notifications and server requests are skipped.
struct Replies {
    reader: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Replies {
    fn new(stdout: ChildStdout) -> Self {
        Self {
            reader: BufReader::with_capacity(256 * 1024, stdout),
            line: Vec::with_capacity(4096),
        }
    }

    fn next(&mut self) -> Option<Reply> {
        loop {
            self.line.clear();
            match self.reader.read_until(b'\n', &mut self.line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let seen = scan(&self.line);
            if seen.method {
                continue;
            }
            return Some(Reply {
                id: seen.id.and_then(|n| u64::try_from(n).ok()),
                error: if seen.error { seen.code } else { None },
            });
        }
    }
}

/// What the load generator reads of a reply line.
#[derive(Default)]
struct Seen {
    /// A `"method"` anywhere: a notification or a request from the server.
    method: bool,
    /// The integer after the first `"id":`.
    id: Option<i64>,
    /// An `"error":` anywhere.
    error: bool,
    /// The integer after the first `"code":`.
    code: Option<i64>,
}

/// Reads a reply line with memchr's vectorised search. (It searched the line once per key by
/// comparing at every offset: about 2,300 instructions per 80-byte reply, CPU that a two-core
/// machine takes from the server it measures, and more for a server whose replies are
/// longer.)
fn scan(line: &[u8]) -> Seen {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    // Built once: a finder costs more to build than a search.
    static KEYS: LazyLock<[Finder<'static>; 4]> = LazyLock::new(|| {
        [
            Finder::new(b"\"method\""),
            Finder::new(b"\"id\":"),
            Finder::new(b"\"error\":"),
            Finder::new(b"\"code\":"),
        ]
    });
    let [method, id, error, code] = &*KEYS;
    let after = |key: &Finder<'_>| key.find(line).map(|at| &line[at + key.needle().len()..]);
    let has_error = after(error).is_some();
    Seen {
        method: after(method).is_some(),
        id: after(id).and_then(integer),
        error: has_error,
        code: if has_error {
            after(code).and_then(integer)
        } else {
            None
        },
    }
}

/// The integer at the start of `text`, after spaces.
fn integer(text: &[u8]) -> Option<i64> {
    let text = &text[text.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mut value: i64 = 0;
    let mut any = false;
    for &byte in digits.iter().take_while(|b| b.is_ascii_digit()) {
        value = value.checked_mul(10)?.checked_add(i64::from(byte - b'0'))?;
        any = true;
    }
    any.then_some(if negative { -value } else { value })
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

fn run(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    let label = options.get("label", "server");
    let mode = options.get("mode", "ping");
    let requests = options.number("requests", 100_000)?;
    let latency_rounds = options.number("latency", 2000)?;
    let window = options.number("window", 0)?;
    let timeout = Duration::from_secs(options.number("timeout", 120)?);
    let request = Template::new(&template(&mode, &options))?;

    let started = Instant::now();
    let mut server = Server::spawn(&options.command, timeout)?;
    let init = server.handshake()?;
    let cold = started.elapsed();
    if init.error.is_some() {
        return Err(format!("{label}: initialize was refused"));
    }
    let after_init = server.memory();
    server.initialized()?;

    // Ping-pong latency, after a short warm-up.
    let warmup = (latency_rounds / 10).min(200);
    let mut samples = Vec::with_capacity(usize::try_from(latency_rounds).unwrap_or(0));
    let mut line = Vec::with_capacity(256);
    let mut latency_errors = 0u64;
    for i in 0..warmup + latency_rounds {
        let id = 1_000_000_000 + i;
        line.clear();
        request.write(&mut line, id);
        let sent = Instant::now();
        server.send(&line)?;
        let reply = server.wait_for(id)?;
        if i >= warmup {
            samples.push(sent.elapsed());
            latency_errors += u64::from(reply.error.is_some());
        }
    }
    samples.sort_unstable();

    // Pipelined throughput.
    let received = Arc::new(AtomicU64::new(0));
    let stdin = server.stdin.take().ok_or("stdin closed")?;
    let writer = {
        let received = Arc::clone(&received);
        let mut lines = Vec::with_capacity(usize::try_from(requests * 128).unwrap_or(0));
        for id in 1..=requests {
            request.write(&mut lines, id);
        }
        thread::spawn(move || -> (ChildStdin, bool) {
            let mut stdin = stdin;
            if window == 0 {
                let ok = stdin.write_all(&lines).is_ok();
                return (stdin, ok);
            }
            let mut at = 0usize;
            let mut sent = 0u64;
            while at < lines.len() {
                // Block (not spin) while the window is full: a spinning writer takes one of
                // the machine's cores from the server it measures. The reader unparks us on
                // every reply; the timeout is only a backstop.
                while sent.saturating_sub(received.load(Ordering::Acquire)) >= window {
                    thread::park_timeout(Duration::from_millis(1));
                }
                let end = lines[at..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(lines.len(), |n| at + n + 1);
                if stdin.write_all(&lines[at..end]).is_err() {
                    return (stdin, false);
                }
                at = end;
                sent += 1;
            }
            (stdin, true)
        })
    };
    let begin = Instant::now();
    let mut seen = vec![0u64; usize::try_from(requests / 64 + 1).unwrap_or(0)];
    let (mut served, mut refused, mut duplicates, mut got) = (0u64, 0u64, 0u64, 0u64);
    let mut codes: BTreeMap<i64, u64> = BTreeMap::new();
    while got < requests {
        let Some(reply) = server.replies.next() else {
            break;
        };
        let Some(id) = reply.id.filter(|id| (1..=requests).contains(id)) else {
            continue;
        };
        let (word, bit) = (usize::try_from(id / 64).unwrap_or(0), id % 64);
        if seen[word] & (1 << bit) != 0 {
            duplicates += 1;
            continue;
        }
        seen[word] |= 1 << bit;
        got += 1;
        received.store(got, Ordering::Release);
        if window != 0 {
            writer.thread().unpark();
        }
        match reply.error {
            None => served += 1,
            Some(code) => {
                refused += 1;
                *codes.entry(code).or_default() += 1;
            }
        }
    }
    let elapsed = begin.elapsed();
    let peak = server.memory();
    let (stdin, wrote_all) = writer.join().map_err(|_| "the writer thread panicked")?;
    server.stdin = Some(stdin);
    let mut status = if got == requests && duplicates == 0 && wrote_all {
        "ok".to_owned()
    } else {
        format!(
            "INCOMPLETE(got {got}/{requests}, dup {duplicates}, {})",
            server.why_eof()
        )
    };
    if refused > 0 || latency_errors > 0 {
        let list: Vec<String> = codes.iter().map(|(c, n)| format!("{c}x{n}")).collect();
        status.push_str(&format!(
            " refused[{}] latency_errors={latency_errors}",
            list.join(",")
        ));
    }
    server.finish();
    let served_per_second = served as f64 / elapsed.as_secs_f64();
    println!(
        "run\t{label}\t{mode}\t{:.3}\t{}\t{}\t{:.0}\t{served}\t{refused}\t{:.1}\t{:.1}\t{:.1}\t{}\t{status}",
        cold.as_secs_f64() * 1e3,
        after_init.hwm_kib,
        after_init.rss_kib,
        served_per_second,
        percentile(&samples, 50.0),
        percentile(&samples, 90.0),
        percentile(&samples, 99.0),
        peak.hwm_kib,
    );
    Ok(())
}

fn bigline(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    let label = options.get("label", "server");
    let mib = options.number("mib", 512)?;
    let timeout = Duration::from_secs(options.number("timeout", 120)?);
    let started = Instant::now();
    let mut server = Server::spawn(&options.command, timeout)?;
    server.handshake()?;
    server.initialized()?;
    let stdin = server.stdin.take().ok_or("stdin closed")?;
    let writer = thread::spawn(move || {
        let mut stdin = stdin;
        let chunk = vec![b'a'; 1024 * 1024];
        let head = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#;
        let mut ok = stdin.write_all(head).is_ok();
        for _ in 0..mib {
            ok = ok && stdin.write_all(&chunk).is_ok();
        }
        ok = ok && stdin.write_all(b"\"}}\n").is_ok();
        ok = ok
            && stdin
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
                .is_ok();
        (stdin, ok)
    });
    let mut first = None;
    let mut ping_ok = false;
    while let Some(reply) = server.replies.next() {
        // The big line's answer: its result (id 1) or a refusal (an error, id 1 or null).
        // A baseline echo also answers the notification with id null and no error: skipped.
        let about_big = reply.id == Some(1) || (reply.id.is_none() && reply.error.is_some());
        if first.is_none() && about_big {
            first = Some(reply);
        }
        if reply.id == Some(2) {
            ping_ok = reply.error.is_none();
            break;
        }
    }
    let peak = server.memory();
    let alive = peak.hwm_kib > 0;
    let elapsed = started.elapsed();
    let (stdin, wrote) = writer.join().map_err(|_| "the writer thread panicked")?;
    server.stdin = Some(stdin);
    let expired = server.expired.load(Ordering::Relaxed);
    let big = match first {
        Some(Reply {
            error: Some(code),
            id,
            ..
        }) if id != Some(2) => format!("refused {code}"),
        Some(Reply { id: Some(1), .. }) => "answered".into(),
        Some(_) => "no reply".into(),
        None => "no reply".into(),
    };
    let outcome = format!(
        "{big}; next ping {}{}{}",
        if ping_ok { "answered" } else { "NOT answered" },
        if expired { "; TIMED OUT" } else { "" },
        if !alive {
            "; server exited"
        } else if !wrote {
            "; input not all taken"
        } else {
            ""
        },
    );
    server.finish();
    println!(
        "bigline\t{label}\t{mib}\t{:.2}\t{}\t{outcome}",
        elapsed.as_secs_f64(),
        peak.hwm_kib
    );
    Ok(())
}

/// One `run` record.
struct Record {
    label: String,
    mode: String,
    cold_ms: f64,
    init_hwm_kib: f64,
    throughput: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    peak_kib: f64,
    status: String,
}

fn report(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    let file = options.get("file", "");
    let baseline = options.get("baseline", "echo-flush");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
    let mut runs: Vec<Record> = Vec::new();
    let mut biglines: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.first() {
            Some(&"run") if f.len() >= 14 => {
                let n = |i: usize| f[i].parse::<f64>().unwrap_or(f64::NAN);
                runs.push(Record {
                    label: f[1].into(),
                    mode: f[2].into(),
                    cold_ms: n(3),
                    init_hwm_kib: n(4),
                    throughput: n(6),
                    p50: n(9),
                    p90: n(10),
                    p99: n(11),
                    peak_kib: n(12),
                    status: f[13].into(),
                });
            }
            Some(&"bigline") => biglines.push(f.iter().map(|s| (*s).to_owned()).collect()),
            _ => {}
        }
    }
    let mut modes: Vec<String> = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for r in &runs {
        if !modes.contains(&r.mode) {
            modes.push(r.mode.clone());
        }
        if !labels.contains(&r.label) {
            labels.push(r.label.clone());
        }
    }
    let stat = |values: Vec<f64>| -> (f64, f64, f64, usize) {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return (f64::NAN, f64::NAN, f64::NAN, 0);
        }
        let mid = v.len() / 2;
        let median = if v.len() % 2 == 1 {
            v[mid]
        } else {
            (v[mid - 1] + v[mid]) / 2.0
        };
        (median, v[0], v[v.len() - 1], v.len())
    };
    for mode in &modes {
        let of = |label: &str, pick: &dyn Fn(&Record) -> f64| {
            stat(
                runs.iter()
                    .filter(|r| &r.mode == mode && r.label == label)
                    .map(pick)
                    .collect(),
            )
        };
        let base_tp = of(&baseline, &|r| r.throughput).0;
        let base_p50 = of(&baseline, &|r| r.p50).0;
        let base_p99 = of(&baseline, &|r| r.p99).0;
        let base_cold = of(&baseline, &|r| r.cold_ms).0;
        println!("### mode `{mode}`\n");
        println!(
            "| server | rounds | throughput (req/s), median [min–max] | × {baseline} | p50 µs | p90 µs | p99 µs | p50 × | p99 × | cold start ms | cold × | MiB after init | peak MiB (VmHWM) | notes |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for label in &labels {
            let tp = of(label, &|r| r.throughput);
            if tp.3 == 0 {
                continue;
            }
            let p50 = of(label, &|r| r.p50);
            let p90 = of(label, &|r| r.p90);
            let p99 = of(label, &|r| r.p99);
            let cold = of(label, &|r| r.cold_ms);
            let init = of(label, &|r| r.init_hwm_kib / 1024.0);
            let peak = of(label, &|r| r.peak_kib / 1024.0);
            let notes: Vec<&str> = runs
                .iter()
                .filter(|r| &r.mode == mode && &r.label == label && r.status != "ok")
                .map(|r| r.status.as_str())
                .collect();
            let row = format!(
                "| {label} | {} | {:.0} [{:.0}–{:.0}] | **{:.2}×** | {:.1} [{:.1}–{:.1}] | {:.1} | {:.1} [{:.1}–{:.1}] | {:.2}× | {:.2}× | {:.2} [{:.2}–{:.2}] | {:.2}× | {:.1} | {:.1} [{:.1}–{:.1}] | {} |",
                tp.3,
                tp.0,
                tp.1,
                tp.2,
                tp.0 / base_tp,
                p50.0,
                p50.1,
                p50.2,
                p90.0,
                p99.0,
                p99.1,
                p99.2,
                p50.0 / base_p50,
                p99.0 / base_p99,
                cold.0,
                cold.1,
                cold.2,
                cold.0 / base_cold,
                init.0,
                peak.0,
                peak.1,
                peak.2,
                notes.first().copied().unwrap_or("")
            );
            println!("{}", row.replace("NaN", "—"));
        }
        println!();
    }
    if !biglines.is_empty() {
        println!("### one huge line, then a ping\n");
        println!("| server | line MiB | seconds | peak MiB (VmHWM) | outcome |");
        println!("|---|---|---|---|---|");
        for f in &biglines {
            let get = |i: usize| f.get(i).map_or("", String::as_str);
            let peak = get(4).parse::<f64>().unwrap_or(0.0) / 1024.0;
            println!(
                "| {} | {} | {} | {:.1} | {} |",
                get(1),
                get(2),
                get(3),
                peak,
                get(5)
            );
        }
        println!();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_line_is_read_in_one_pass() {
        let seen = scan(br#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"x"}}"#);
        assert_eq!(
            (seen.method, seen.id, seen.error, seen.code),
            (false, Some(5), true, Some(-32602))
        );
        let seen = scan(
            br#"{"result":{"content":[{"type":"text","text":"id"}]},"jsonrpc":"2.0","id": 12}"#,
        );
        assert_eq!((seen.method, seen.id, seen.error), (false, Some(12), false));
        let seen = scan(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#);
        assert!(seen.method && seen.id.is_none());
        let seen = scan(br#"{"jsonrpc":"2.0","id":null,"result":{}}"#);
        assert_eq!(seen.id, None);
    }
}
