//! The physical limit of a command tool's path: spawn a program and wait for it, as fast as
//! one process can (see BENCHMARKS.md, tools/sandbox-bench.sh).
//!
//!     spawnloop [--requests N] [--concurrency C] [--warmup W] [--dir DIR] [--label NAME]
//!               [--timeout SECONDS] -- PROGRAM [ARGS...]
//!
//! C threads take tickets from one counter until N spawns are done; each spawn starts
//! PROGRAM the way airlock starts an unsandboxed command tool (`src/process.rs`): empty
//! environment, working directory DIR, stdin from /dev/null, stdout and stderr piped and read
//! to the end, its own process group, then waits for its exit. The latency of one spawn is
//! from `spawn` to the reaped exit with both pipes drained; throughput is N over the wall
//! time from the first ticket to the last exit. W spawns (default 50) run first, untimed.
//!
//! Prints one tab-separated record:
//!
//!     spawn  LABEL  C  N  CALLS_PER_S  P50_US  P90_US  P99_US  STATUS
//!
//! STATUS is `ok`, or says how many spawns failed or exited non-zero. Every run is bounded in
//! time (`--timeout`, default 120 s): past it the process exits with an error.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(error) = run(&args) {
        eprintln!("spawnloop: {error}");
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
            let name = arg.strip_prefix("--").ok_or(format!(
                "unexpected argument {arg:?} (the command goes after --)"
            ))?;
            let value = rest.next().ok_or(format!("--{name} needs a value"))?;
            flags.insert(name.to_owned(), value.clone());
        }
        if command.is_empty() {
            return Err("no command after --".into());
        }
        Ok(Self { flags, command })
    }

    fn number(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.flags.get(name) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| format!("--{name}: not a number")),
        }
    }
}

/// What to start, shared by the threads.
struct Program {
    path: String,
    args: Vec<String>,
    dir: PathBuf,
}

impl Program {
    /// One spawn and wait: Ok(true) when it exited 0, Ok(false) on another exit.
    fn once(&self) -> Result<bool, String> {
        let child = Command::new(&self.path)
            .args(&self.args)
            .env_clear()
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.path))?;
        // Reads stdout and stderr together until both close, then reaps the child.
        let output = child
            .wait_with_output()
            .map_err(|e| format!("waiting for {}: {e}", self.path))?;
        Ok(output.status.success())
    }
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
    let label = options
        .flags
        .get("label")
        .cloned()
        .unwrap_or_else(|| "spawnloop".to_owned());
    let requests = options.number("requests", 2000)?;
    let concurrency = options.number("concurrency", 1)?.max(1);
    let warmup = options.number("warmup", 50)?;
    let timeout = Duration::from_secs(options.number("timeout", 120)?);
    let dir = match options.flags.get("dir") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_dir().map_err(|e| format!("current directory: {e}"))?,
    };
    let (path, rest) = options.command.split_first().ok_or("no command after --")?;
    let program = Arc::new(Program {
        path: path.clone(),
        args: rest.to_vec(),
        dir,
    });

    // The watchdog: a run that stalls ends the process, with an error, at the deadline.
    thread::spawn(move || {
        thread::sleep(timeout);
        eprintln!("spawnloop: timed out after {} s", timeout.as_secs());
        std::process::exit(2);
    });

    for _ in 0..warmup {
        program.once()?;
    }

    // Every thread waits at the barrier, so the clock starts when all of them can spawn.
    let tickets = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(usize::try_from(concurrency).unwrap_or(1) + 1));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (program, tickets, start) = (
            Arc::clone(&program),
            Arc::clone(&tickets),
            Arc::clone(&start),
        );
        workers.push(thread::spawn(
            move || -> Result<(Vec<Duration>, u64), String> {
                let mut samples = Vec::new();
                let mut failed = 0u64;
                start.wait();
                while tickets.fetch_add(1, Ordering::Relaxed) < requests {
                    let began = Instant::now();
                    let success = program.once()?;
                    samples.push(began.elapsed());
                    failed += u64::from(!success);
                }
                Ok((samples, failed))
            },
        ));
    }
    start.wait();
    let began = Instant::now();
    let mut samples = Vec::with_capacity(usize::try_from(requests).unwrap_or(0));
    let mut failed = 0u64;
    for worker in workers {
        let (mut some, fails) = worker.join().map_err(|_| "a worker thread panicked")??;
        samples.append(&mut some);
        failed += fails;
    }
    let elapsed = began.elapsed();
    samples.sort_unstable();

    let done = samples.len() as u64;
    let status = if failed == 0 && done == requests {
        "ok".to_owned()
    } else {
        format!("FAILED({failed} of {done} exited non-zero)")
    };
    println!(
        "spawn\t{label}\t{concurrency}\t{done}\t{:.0}\t{:.1}\t{:.1}\t{:.1}\t{status}",
        done as f64 / elapsed.as_secs_f64(),
        percentile(&samples, 50.0),
        percentile(&samples, 90.0),
        percentile(&samples, 99.0),
    );
    Ok(())
}
