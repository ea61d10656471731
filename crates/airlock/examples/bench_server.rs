//! A BENCHMARK TARGET, not a pattern to copy: one in-process tool (`echo`) with the quotas
//! turned off and a large in-flight cap, so that `tools/bench.sh` and `tools/http-bench.sh`
//! measure served requests instead of `-31429` refusals. Every other check (framing, envelope,
//! argument bounds, schema, deadline, panic guard; over HTTP the Host and Origin checks, the
//! media types, the body cap and the timeouts) stays on. `product_cli.rs` is the pattern for
//! real servers, whose default quotas (`tools/call` 1,200/min, burst 40; cheap methods
//! 6,000/min, burst 200; per HTTP client 600 calls/min, 4 in flight, 64 connections per
//! address) would refuse most of a benchmark's flood.
//!
//!     cargo build --release --example bench_server
//!     bench_server                       # stdio
//!     bench_server --http 127.0.0.1:PORT # Streamable HTTP at /mcp, both eras
//!
//! For the shared quota store's figures (`tools/store-bench.sh`, BENCHMARKS.md "Shared quota
//! store (issue 20)"): `BENCH_QUOTAS=1` turns every quota on (server, cheap methods, per
//! client) at rates no run reaches, so each request is checked but never refused, and
//! `BENCH_REDIS_URL=redis://…` counts them (and the in-flight leases) in that Redis.
//!
//! For the metrics' cost (`tools/bench.sh`'s `airlock-metrics`, BENCHMARKS.md "Metrics"):
//! `BENCH_METRICS=127.0.0.1:0` keeps Prometheus metrics and serves them at that address.
//!
//! For the traces' cost (`tools/bench.sh`'s `airlock-traces`, BENCHMARKS.md "Traces"):
//! `BENCH_OTLP=http://127.0.0.1:PORT` traces every request and exports the spans there
//! (`BENCH_OTLP_SAMPLE=0.1`: one request in ten).

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::process::ExitCode;

use airlock::limits::HttpLimits;
use airlock::metrics::Metrics;
use airlock::schemars::{self, JsonSchema};
use airlock::transport::http::{AllowList, HttpConfig, SharedStore, Tokens};
use airlock::transport::metrics::Endpoint;
use airlock::{Limits, Rate, Server, Tool, ToolAnnotations, ToolOutput};
use serde::Deserialize;

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to return.
    #[schemars(length(max = 1000))]
    message: String,
}

/// Connections, in flight and per-client caps for the HTTP benchmark: one load generator
/// on one address opens up to 256 busy and 1,000 idle connections at once.
const BENCH_CONNECTIONS: usize = 4096;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let http: Option<SocketAddr> = match (args.next(), args.next().map(|addr| addr.parse())) {
        (None, _) => None,
        (Some(flag), Some(Ok(addr))) if flag == "--http" => Some(addr),
        _ => {
            let _written = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"usage: bench_server [--http 127.0.0.1:PORT]\n",
            );
            return ExitCode::from(2);
        }
    };
    let quotas = std::env::var_os("BENCH_QUOTAS").is_some_and(|v| v == "1");
    let mut limits = Limits::default();
    limits.tool_call_rate = quotas.then_some(UNREACHED);
    limits.cheap_method_rate = quotas.then_some(UNREACHED);
    limits.max_in_flight = NonZeroUsize::new(1024).unwrap_or(NonZeroUsize::MIN);
    let mut builder = Server::builder("bench", "0.0.0");
    if let Ok(addr) = std::env::var("BENCH_METRICS") {
        let metrics = Metrics::new();
        let endpoint = addr
            .parse()
            .ok()
            .and_then(|addr| Endpoint::bind(addr, AllowList::default()).ok());
        match endpoint.map(|endpoint| endpoint.spawn(std::sync::Arc::clone(&metrics))) {
            Some(Ok(())) => builder = builder.metrics(metrics),
            _ => return ExitCode::FAILURE,
        }
    }
    if let Ok(url) = std::env::var("BENCH_OTLP") {
        let ratio = std::env::var("BENCH_OTLP_SAMPLE")
            .ok()
            .and_then(|ratio| ratio.parse().ok())
            .unwrap_or(1.0);
        match airlock::otel::Traces::to_otlp(&url, "bench", "0.0.0", ratio) {
            Ok(traces) => builder = builder.traces(traces),
            Err(_) => return ExitCode::FAILURE,
        }
    }
    let built = builder
        .limits(limits)
        .tool(
            Tool::builder("echo")
                .description("Returns its message")
                .annotations(ToolAnnotations::read_only())
                .handler(|args: EchoArgs| async move { ToolOutput::text(args.message) }),
        )
        .build();
    let server = match built {
        Ok(server) => server,
        Err(_) => return ExitCode::FAILURE,
    };
    let Some(addr) = http else {
        return server.run_stdio();
    };
    let mut http_limits = bench_http_limits();
    if quotas {
        http_limits.client_call_rate = Some(UNREACHED);
        http_limits.client_request_rate = Some(UNREACHED);
    }
    let mut config = HttpConfig::new(AllowList::default(), Tokens::none(), http_limits);
    if let Ok(url) = std::env::var("BENCH_REDIS_URL") {
        match SharedStore::redis(url.into(), "bench") {
            Ok(store) => config = config.shared_store(store),
            Err(_) => return ExitCode::FAILURE,
        }
    }
    server.run_http(addr, config)
}

/// A quota every request passes through and no benchmark reaches.
const UNREACHED: Rate = Rate::new_const(1_000_000_000, 1_000_000);

/// Per-client quotas off and the connection caps raised; timeouts, header and body caps keep
/// their defaults.
fn bench_http_limits() -> HttpLimits {
    let many = NonZeroUsize::new(BENCH_CONNECTIONS).unwrap_or(NonZeroUsize::MIN);
    let mut limits = HttpLimits::default();
    limits.client_call_rate = None;
    limits.client_request_rate = None;
    limits.client_in_flight = NonZeroUsize::new(1024).unwrap_or(NonZeroUsize::MIN);
    limits.max_connections = many;
    limits.max_connections_per_address = many;
    limits
}
