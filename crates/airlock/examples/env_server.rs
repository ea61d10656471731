//! A server with one read-only tool, `get-env`, that returns the environment it was started
//! with as JSON, as the TypeScript reference server's tool of that name does. The audit calls
//! it as its probe, so what the auditor's environment holds (`RUST_BACKTRACE=1`) comes back
//! in every result: the fixture of issue 41's false criticals (the audit took the variable's
//! name for a stack trace). Not a pattern to copy: a real server must not hand its
//! environment to a model.

use std::collections::BTreeMap;
use std::process::ExitCode;

use airlock::{NoArguments, Server, Tool, ToolAnnotations, ToolError, ToolOutput};

fn main() -> ExitCode {
    let built = Server::builder("env-fixture", "0.0.0")
        .tool(
            Tool::builder("get-env")
                .description("Returns the environment variables of the server's process")
                .annotations(ToolAnnotations::read_only())
                .handler(|_: NoArguments| async {
                    let variables: BTreeMap<String, String> = std::env::vars_os()
                        .map(|(name, value)| {
                            (
                                name.to_string_lossy().into_owned(),
                                value.to_string_lossy().into_owned(),
                            )
                        })
                        .collect();
                    let text = serde_json::to_string_pretty(&variables)
                        .map_err(|_| ToolError::new("the environment does not serialise"))?;
                    Ok::<_, ToolError>(ToolOutput::text(text))
                }),
        )
        .build();
    match built {
        Ok(server) => server.run_stdio(),
        Err(_) => ExitCode::FAILURE,
    }
}
