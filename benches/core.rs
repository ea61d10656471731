//! Per-message costs of the protocol core: framing, the envelope, the guard, the argument
//! walk, and a whole request through the engine.
//!
//!     cargo bench --bench core
//!
//! Medians, not means: this machine is shared and noisy.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    reason = "benchmark harness code"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use airlock::framing::split_all;
use airlock::guard::{Guard, GuardClock};
use airlock::limits::Rate;
use airlock::{Limits, NoArguments, Server, Tool, ToolOutput};

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
        b.iter(|| airlock::envelope::parse(black_box(&small), 64))
    });
    c.bench_function("envelope/64KiB_arguments", |b| {
        b.iter(|| airlock::envelope::parse(black_box(&big), 64))
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

fn guard(c: &mut Criterion) {
    // A quota that always admits: measures the admit path, not refusals.
    let mut limits = Limits::default();
    limits.tool_call_rate = Some(Rate::new_const(u32::MAX, u32::MAX));
    limits.cheap_method_rate = Some(Rate::new_const(u32::MAX, u32::MAX));
    let guard = Guard::with_clock(
        &limits,
        [("echo", Rate::new_const(u32::MAX, u32::MAX))],
        GuardClock::real(),
    );
    c.bench_function("guard/admit_call", |b| {
        b.iter(|| guard.admit_call(black_box("echo")))
    });
    c.bench_function("guard/admit_cheap", |b| b.iter(|| guard.admit_cheap()));
}

fn arguments(c: &mut Criterion) {
    let map = json!({"text": "x".repeat(60 * 1024), "n": 3, "list": [1, 2, 3]})
        .as_object()
        .cloned()
        .unwrap();
    let limits = Limits::default();
    c.bench_function("arguments/bounds_walk_60KiB", |b| {
        b.iter(|| airlock::tools::arguments::check(black_box(&map), &limits))
    });
}

fn engine(c: &mut Criterion) {
    let mut limits = Limits::default();
    limits.tool_call_rate = None;
    limits.cheap_method_rate = None;
    let server = Server::builder("bench", "0")
        .limits(limits)
        .tool(
            Tool::builder("echo", "echo")
                .handler(|_: NoArguments| async { Ok(ToolOutput::text("")) }),
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

criterion_group!(benches, envelope, framing, guard, arguments, engine);
criterion_main!(benches);
