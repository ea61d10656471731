//! Per-message costs of the protocol core: framing and the envelope per message (a small
//! request, 64 KiB of arguments, a rejected 1 MiB line), the quotas, the argument walk, the
//! reply writer, and whole requests through the engine (a ping, a tool list, an in-process
//! tool call answered inline as the stdio session does).
//!
//!     cargo bench -p airlock --bench core
//!
//! Medians, not means: this machine is shared and noisy. End-to-end figures (pipes, processes,
//! other servers) come from `tools/bench.sh`; see BENCHMARKS.md.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    reason = "benchmark harness code"
)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;

use airlock::__private::{QuotaClock, Quotas, check_arguments, parse_envelope, split_all};
use airlock::schemars::{self, JsonSchema};
use airlock::transport::{Call, Completion, Effect, Engine, Started};
use airlock::{CallContext, Limits, NoArguments, Rate, Server, Tool, ToolOutput};

fn small_request() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#.to_vec()
}

fn big_arguments_request() -> Vec<u8> {
    let text = "x".repeat(60 * 1024);
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}
    }))
    .unwrap()
}

fn envelope(c: &mut Criterion) {
    let small = small_request();
    let big = big_arguments_request();
    c.bench_function("envelope/small_request", |b| {
        b.iter(|| parse_envelope(black_box(&small), 64))
    });
    c.bench_function("envelope/64KiB_arguments", |b| {
        b.iter(|| parse_envelope(black_box(&big), 64))
    });
}

fn framing(c: &mut Criterion) {
    let mut stream = small_request();
    stream.push(b'\n');
    let stream = stream.repeat(100);
    c.bench_function("framing/100_small_lines", |b| {
        b.iter(|| split_all(&[black_box(&stream)], 1024 * 1024))
    });
    let mut huge = vec![b'a'; 2 * 1024 * 1024];
    huge.push(b'\n');
    c.bench_function("framing/reject_2MiB_line", |b| {
        b.iter(|| split_all(&[black_box(&huge)], 1024 * 1024))
    });
}

fn quotas(c: &mut Criterion) {
    // A quota that always admits: measures the admit path, not refusals.
    let mut limits = Limits::default();
    limits.tool_call_rate = Some(Rate::new_const(u32::MAX, u32::MAX));
    limits.cheap_method_rate = Some(Rate::new_const(u32::MAX, u32::MAX));
    let quotas = Quotas::with_clock(
        &limits,
        [("echo", Rate::new_const(u32::MAX, u32::MAX))],
        QuotaClock::real(),
    );
    c.bench_function("quota/admit_call", |b| {
        b.iter(|| quotas.admit_call(black_box("echo")))
    });
    c.bench_function("quota/admit_cheap", |b| b.iter(|| quotas.admit_cheap()));
}

fn arguments(c: &mut Criterion) {
    let map = json!({"text": "x".repeat(60 * 1024), "n": 3, "list": [1, 2, 3]})
        .as_object()
        .cloned()
        .unwrap();
    let limits = Limits::default();
    c.bench_function("arguments/bounds_walk_60KiB", |b| {
        b.iter(|| check_arguments(black_box(&map), &limits))
    });
}

fn engine(c: &mut Criterion) {
    let mut limits = Limits::default();
    limits.tool_call_rate = None;
    limits.cheap_method_rate = None;
    let server = Server::builder("bench", "0")
        .limits(limits)
        .tool(
            Tool::builder("echo")
                .description("echo")
                .handler(|_: NoArguments| async { ToolOutput::text("") }),
        )
        .build()
        .unwrap();
    let mut engine = server.engine();
    let mut out = Vec::new();
    let initialize = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    let _effect = engine.handle(initialize, &mut out);
    let _effect = engine.handle(
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &mut out,
    );
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    c.bench_function("engine/ping_to_reply_bytes", |b| {
        b.iter(|| {
            out.clear();
            let _effect = engine.handle(black_box(ping), &mut out);
        })
    });
    let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    c.bench_function("engine/tools_list_to_reply_bytes", |b| {
        b.iter(|| {
            out.clear();
            let _effect = engine.handle(black_box(list), &mut out);
        })
    });
}

/// What the stdio session does per line: split the stream into frames, then check each frame
/// at the envelope (or, for an overlong line, drain it and write the refusal).
fn frame_and_envelope(c: &mut Criterion) {
    let mut small = small_request();
    small.push(b'\n');
    let mut big = big_arguments_request();
    big.push(b'\n');
    for (name, line) in [("small_request", &small), ("64KiB_arguments", &big)] {
        c.bench_function(&format!("frame_and_envelope/{name}"), |b| {
            b.iter(|| {
                for frame in split_all(&[black_box(line)], 1024 * 1024)
                    .into_iter()
                    .flatten()
                {
                    black_box(parse_envelope(&frame, 64).is_ok());
                }
            })
        });
    }
    let mut huge = vec![b'a'; 1024 * 1024 + 1];
    huge.push(b'\n');
    let mut engine = bench_server().engine();
    let mut out = Vec::new();
    c.bench_function("frame_and_envelope/rejected_1MiB_line", |b| {
        b.iter(|| {
            out.clear();
            for frame in split_all(&[black_box(&huge)], 1024 * 1024) {
                assert!(frame.is_none());
                let _effect = engine.frame_too_long(&mut out);
            }
        })
    });
}

/// The reply writer: a tool result and an error line, appended to the output buffer.
fn reply(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    // Setup makes a completion, the measured part writes its reply: both need the engine.
    let engine = std::cell::RefCell::new(initialized(bench_server().engine()));
    let mut out = Vec::with_capacity(64 * 1024);
    let mut id = 0u64;
    c.bench_function("reply/call_result", |b| {
        b.iter_batched(
            || {
                id = id.wrapping_add(1);
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"hello"}}}}}}"#
                );
                let mut scratch = Vec::new();
                let effect = engine.borrow_mut().handle(line.as_bytes(), &mut scratch);
                match effect {
                    Effect::Start(call) => run_now(call),
                    other => panic!("not a call: {other:?}"),
                }
            },
            |completion| {
                out.clear();
                engine.borrow_mut().complete(completion, &mut out);
            },
            BatchSize::SmallInput,
        )
    });
    let mut fresh = bench_server().engine();
    c.bench_function("reply/error_line", |b| {
        b.iter(|| {
            out.clear();
            let _effect = fresh.frame_too_long(&mut out);
        })
    });
}

/// A whole in-process tool call through the engine: parse, checks, the handler run inline
/// (its first poll finishes it), the reply written.
fn call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    let mut engine = initialized(bench_server().engine());
    let mut out = Vec::with_capacity(64 * 1024);
    let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}"#;
    c.bench_function("engine/in_process_call_to_reply_bytes", |b| {
        b.iter(|| {
            out.clear();
            if let Effect::Start(call) = engine.handle(black_box(line), &mut out) {
                engine.complete(run_now(call), &mut out);
            }
        })
    });
}

/// The benchmark server of `crates/airlock/examples/bench_server.rs`: one `echo` tool, no
/// quotas.
fn bench_server() -> Server {
    #[derive(serde::Deserialize, JsonSchema)]
    struct EchoArgs {
        #[schemars(length(max = 1000))]
        message: String,
    }
    let mut limits = Limits::default();
    limits.tool_call_rate = None;
    limits.cheap_method_rate = None;
    // `reply/call_result` makes a batch of calls before writing their replies.
    limits.max_in_flight = std::num::NonZeroUsize::MAX;
    Server::builder("bench", "0")
        .limits(limits)
        .tool(
            Tool::builder("echo")
                .description("echo")
                .handler(|args: EchoArgs| async move { ToolOutput::text(args.message) }),
        )
        .build()
        .unwrap()
}

fn initialized(mut engine: Engine) -> Engine {
    let mut out = Vec::new();
    let _effect = engine.handle(
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
        &mut out,
    );
    let _effect = engine.handle(
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &mut out,
    );
    engine
}

/// Runs a call that finishes on its first step, as the stdio session does inline.
fn run_now(call: Call) -> Completion {
    match call.start(CallContext::detached()) {
        Started::Done(completion) => completion,
        Started::Running(_) => panic!("the echo tool waited"),
    }
}

criterion_group!(
    benches,
    envelope,
    framing,
    frame_and_envelope,
    quotas,
    arguments,
    reply,
    engine,
    call
);
criterion_main!(benches);
