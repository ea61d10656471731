//! A BENCHMARK TARGET, not a pattern to copy: one in-process tool (`echo`) with the quotas
//! turned off and a large in-flight cap, so that `tools/bench.sh` measures served requests
//! instead of `-31429` refusals. Every other check (framing, envelope, argument bounds, schema,
//! deadline, panic guard) stays on. `product_cli.rs` is the pattern for real servers, whose
//! default quotas (`tools/call` 1,200/min, burst 40; cheap methods 6,000/min, burst 200) would
//! refuse most of a benchmark's flood.
//!
//!     cargo build --release --example bench_server

use std::num::NonZeroUsize;
use std::process::ExitCode;

use airlock::{Limits, Server, Tool, ToolAnnotations, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to return.
    #[schemars(length(max = 1000))]
    message: String,
}

fn main() -> ExitCode {
    let mut limits = Limits::default();
    limits.tool_call_rate = None;
    limits.cheap_method_rate = None;
    limits.max_in_flight = NonZeroUsize::new(1024).unwrap_or(NonZeroUsize::MIN);
    let built = Server::builder("bench", "0.0.0")
        .limits(limits)
        .tool(
            Tool::builder("echo", "Returns its message")
                .annotations(ToolAnnotations::read_only())
                .handler(|args: EchoArgs| async move { Ok(ToolOutput::text(args.message)) }),
        )
        .build();
    match built {
        Ok(server) => ExitCode::from(server.run_stdio()),
        Err(_) => ExitCode::FAILURE,
    }
}
