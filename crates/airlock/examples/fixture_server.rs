//! A server whose tools misbehave on purpose, for the integration tests: one sleeps, one
//! panics, one returns large output. Not a pattern to copy; `product_cli.rs` is that.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use airlock::CallContext;
use airlock::schemars::{self, JsonSchema};
use airlock::{NoArguments, Server, Tool, ToolAnnotations, ToolError, ToolOutput};
use serde::Deserialize;

/// Arguments of `sleep`.
#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// Milliseconds to sleep.
    #[schemars(range(max = 60_000))]
    ms: u32,
}

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to return.
    #[schemars(length(max = 1000))]
    text: String,
}

/// Arguments of `progress`.
#[derive(Deserialize, JsonSchema)]
struct ProgressArgs {
    /// How many steps to report.
    #[schemars(range(min = 1, max = 20))]
    steps: u8,
}

/// Arguments of `bulk`.
#[derive(Deserialize, JsonSchema)]
struct BulkArgs {
    /// Bytes of output.
    #[schemars(range(max = 4_000_000))]
    bytes: u32,
}

fn main() -> ExitCode {
    // `--fillers` adds 60 trivial tools, so `tools/list` needs two pages.
    let fillers = if std::env::args().any(|arg| arg == "--fillers") {
        60
    } else {
        0
    };
    let mut builder = Server::builder("fixture", "0.0.0");
    for i in 0..fillers {
        builder = builder.tool(
            Tool::builder(format!("filler_{i:02}"))
                .description("Does nothing")
                .handler(|_: NoArguments| async { ToolOutput::text("") }),
        );
    }
    let built = builder
        .tool(
            Tool::builder("echo")
                .description("Returns its text")
                .annotations(ToolAnnotations::read_only())
                .handler(|args: EchoArgs| async move { ToolOutput::text(args.text) }),
        )
        .tool(
            Tool::builder("sleep")
                .description("Sleeps, then answers")
                .timeout(Duration::from_secs(2))
                .handler(|args: SleepArgs| async move {
                    tokio::time::sleep(Duration::from_millis(u64::from(args.ms))).await;
                    ToolOutput::text("slept")
                }),
        )
        .tool(
            Tool::builder("panic")
                .description("Panics with a message that must never reach the wire")
                .handler(|_: NoArguments| async { boom() }),
        )
        .tool(
            Tool::builder("progress")
                .description("Reports progress every 150 ms, then answers")
                .handler(|args: ProgressArgs, context: CallContext| async move {
                    for step in 1..=args.steps {
                        context.progress(
                            f64::from(step),
                            Some(f64::from(args.steps)),
                            Some("working"),
                        );
                        tokio::time::sleep(Duration::from_millis(150)).await;
                    }
                    ToolOutput::text("done")
                }),
        )
        .tool(
            Tool::builder("bulk")
                .description("Returns the given number of bytes of text")
                .handler(|args: BulkArgs| async move {
                    let len = usize::try_from(args.bytes)
                        .map_err(|_| ToolError::new("too many bytes"))?;
                    Ok::<_, ToolError>("x".repeat(len))
                }),
        )
        .build();
    match built {
        Ok(server) => {
            let status = server.run_stdio();
            // The tests check that `run_stdio` returns at every ending (a signal while idle
            // included), so that a product's own clean-up after it runs.
            let _unheard = writeln!(std::io::stderr(), "fixture: run_stdio returned");
            status
        }
        Err(_) => ExitCode::FAILURE,
    }
}

#[expect(
    clippy::panic,
    reason = "this fixture exists to panic inside a handler"
)]
fn boom() -> ToolError {
    panic!("secret-panic-payload /etc/shadow")
}
