//! A small MCP client on the official Rust SDK (rmcp) that drives a server's tasks, for
//! airlock's integration tests (tests/it/tasks.rs).
//!
//! ```text
//! task-client ERA COMMAND [ARGS] (--url URL | -- SERVER [SERVER ARGS])
//!   ERA      2026 (rmcp 3.11: the io.modelcontextprotocol/tasks extension, server/discover)
//!            2025 (rmcp 2.2: initialize 2025-11-25, params.task, tasks/result)
//!   run TOOL ARGS_JSON    create, poll to the end, read the result
//!   create TOOL ARGS_JSON create only
//!   poll TASK_ID          poll to the end, read the result
//!   get TASK_ID           one tasks/get
//!   cancel TASK_ID        tasks/cancel
//! ```
//!
//! Over HTTP (`--url`) the bearer token is `TASK_CLIENT_TOKEN`, if set; otherwise the server
//! is started on stdio from the words after `--`. Each event is one JSON line on stdout
//! (`created`, `complete`, `poll`, `result`, `cancel`, `error`), which the tests read.

use std::time::Duration;

use serde_json::{Value, json};

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// What the command line asks.
struct Args {
    era: String,
    command: String,
    operands: Vec<String>,
    url: Option<String>,
    server: Vec<String>,
}

fn args() -> Fallible<Args> {
    let mut words = std::env::args().skip(1);
    let era = words.next().ok_or("no era")?;
    let command = words.next().ok_or("no command")?;
    let (mut operands, mut url, mut server) = (Vec::new(), None, Vec::new());
    while let Some(word) = words.next() {
        match word.as_str() {
            "--url" => url = Some(words.next().ok_or("--url needs a value")?),
            "--" => {
                server = words.by_ref().collect();
            }
            _ => operands.push(word),
        }
    }
    if url.is_none() && server.is_empty() {
        return Err("neither --url nor a server after --".into());
    }
    Ok(Args {
        era,
        command,
        operands,
        url,
        server,
    })
}

fn say(event: Value) {
    println!("{event}");
}

fn operand(args: &Args, index: usize) -> Fallible<String> {
    args.operands
        .get(index)
        .cloned()
        .ok_or_else(|| format!("{} needs more operands", args.command).into())
}

fn arguments(args: &Args) -> Fallible<serde_json::Map<String, Value>> {
    match serde_json::from_str(&operand(args, 1)?)? {
        Value::Object(map) => Ok(map),
        _ => Err("ARGS_JSON must be an object".into()),
    }
}

fn token() -> Option<String> {
    std::env::var("TASK_CLIENT_TOKEN").ok()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let outcome = match args() {
        Ok(args) if args.era == "2026" => modern::main(&args).await,
        Ok(args) if args.era == "2025" => legacy::main(&args).await,
        Ok(_) => Err("the era is 2026 or 2025".into()),
        Err(error) => Err(error),
    };
    if let Err(error) = outcome {
        eprintln!("task-client: {error}");
        std::process::exit(1);
    }
}

/// The 2026-07-28 tasks extension through rmcp 3.11.
mod modern {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
        ClientConfig, GetTaskParams, Implementation, ProtocolVersion,
    };
    use rmcp::service::RunningService;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
    use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError};

    use super::*;

    type Client = RunningService<RoleClient, ClientConfig>;

    pub(super) async fn main(args: &Args) -> Fallible<()> {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))?;
        let info = ClientConfig::new(capabilities, Implementation::new("task-client", "0.0.0"))
            .with_protocol_version(ProtocolVersion::V_2026_07_28);
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let client = match &args.url {
            Some(url) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = token() {
                    config = config.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                info.serve_with_lifecycle(transport, lifecycle).await?
            }
            None => {
                let mut command = tokio::process::Command::new(&args.server[0]);
                command.args(&args.server[1..]);
                info.serve_with_lifecycle(TokioChildProcess::new(command)?, lifecycle)
                    .await?
            }
        };
        let done = match args.command.as_str() {
            "run" => match create(&client, args).await? {
                Some(task) => poll(&client, &task).await,
                None => Ok(()),
            },
            "create" => create(&client, args).await.map(drop),
            "poll" => poll(&client, &operand(args, 0)?).await,
            "get" => get(&client, &operand(args, 0)?).await.map(drop),
            "cancel" => {
                match client
                    .cancel_task(CancelTaskParams::new(operand(args, 0)?))
                    .await
                {
                    Ok(()) => say(json!({"event": "cancel"})),
                    Err(error) => refused(error)?,
                }
                Ok(())
            }
            other => Err(format!("unknown command {other}").into()),
        };
        client.cancel().await?;
        done
    }

    /// Says a JSON-RPC error as an event; any other failure is the client's.
    fn refused(error: ServiceError) -> Fallible<()> {
        match error {
            ServiceError::McpError(error) => {
                say(json!({"event": "error", "code": error.code.0, "message": error.message}));
                Ok(())
            }
            other => Err(other.into()),
        }
    }

    /// Calls the tool; the task's id if the server made it a task.
    async fn create(client: &Client, args: &Args) -> Fallible<Option<String>> {
        let params = CallToolRequestParams::new(operand(args, 0)?).with_arguments(arguments(args)?);
        match client.call_tool_once(params).await {
            Ok(CallToolResponse::Task(created)) => {
                let created = serde_json::to_value(&created)?;
                say(json!({"event": "created", "task": created}));
                Ok(created["taskId"].as_str().map(str::to_owned))
            }
            Ok(CallToolResponse::Complete(result)) => {
                say(json!({"event": "complete", "result": result}));
                Ok(None)
            }
            Ok(_) => Err("the server asked for input".into()),
            Err(error) => refused(error).map(|()| None),
        }
    }

    /// One `tasks/get`: the reply as JSON, said as a `poll` event (or an `error`).
    async fn get(client: &Client, task: &str) -> Fallible<Option<Value>> {
        match client.get_task(GetTaskParams::new(task)).await {
            Ok(got) => {
                let got = serde_json::to_value(&got)?;
                say(json!({
                    "event": "poll",
                    "status": got["status"],
                    "statusMessage": got["statusMessage"],
                    "output": got["_meta"]["airlock/output"],
                }));
                Ok(Some(got))
            }
            Err(error) => refused(error).map(|()| None),
        }
    }

    async fn poll(client: &Client, task: &str) -> Fallible<()> {
        loop {
            let Some(got) = get(client, task).await? else {
                return Ok(());
            };
            if got["status"] != "working" && got["status"] != "input_required" {
                say(json!({
                    "event": "result",
                    "status": got["status"],
                    "result": got["result"],
                    "error": got["error"],
                }));
                return Ok(());
            }
            let every = got["pollIntervalMs"].as_u64().unwrap_or(500);
            tokio::time::sleep(Duration::from_millis(every)).await;
        }
    }
}

/// MCP 2025-11-25 tasks through rmcp 2.2 (no helpers there: raw requests).
mod legacy {
    use rmcp2::model::{
        CallToolRequestParams, CancelTaskParams, ClientCapabilities, ClientInfo, ClientRequest,
        GetTaskParams, GetTaskPayloadParams, Implementation, ProtocolVersion, Request,
        TaskMetadata,
    };
    use rmcp2::service::RunningService;
    use rmcp2::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp2::transport::{StreamableHttpClientTransport, TokioChildProcess};
    use rmcp2::{RoleClient, ServiceError, ServiceExt};

    use super::*;

    type Client = RunningService<RoleClient, ClientInfo>;

    pub(super) async fn main(args: &Args) -> Fallible<()> {
        let info = ClientInfo::new(
            ClientCapabilities::default(),
            Implementation::new("task-client", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let client = match &args.url {
            Some(url) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = token() {
                    config = config.auth_header(token);
                }
                info.serve(StreamableHttpClientTransport::from_config(config))
                    .await?
            }
            None => {
                let mut command = tokio::process::Command::new(&args.server[0]);
                command.args(&args.server[1..]);
                info.serve(TokioChildProcess::new(command)?).await?
            }
        };
        let done = match args.command.as_str() {
            "run" => match create(&client, args).await? {
                Some(task) => poll(&client, &task).await,
                None => Ok(()),
            },
            "create" => create(&client, args).await.map(drop),
            "poll" => poll(&client, &operand(args, 0)?).await,
            "get" => get(&client, &operand(args, 0)?).await.map(drop),
            "cancel" => {
                let task = operand(args, 0)?;
                let cancel =
                    ClientRequest::CancelTaskRequest(Request::new(CancelTaskParams::new(task)));
                match client.send_request(cancel).await {
                    Ok(reply) => say(json!({"event": "cancel", "reply": reply})),
                    Err(error) => refused(error)?,
                }
                Ok(())
            }
            other => Err(format!("unknown command {other}").into()),
        };
        client.cancel().await?;
        done
    }

    fn refused(error: ServiceError) -> Fallible<()> {
        match error {
            ServiceError::McpError(error) => {
                say(json!({"event": "error", "code": error.code.0, "message": error.message}));
                Ok(())
            }
            other => Err(other.into()),
        }
    }

    /// Calls the tool asking for a task (`params.task`); the task's id.
    async fn create(client: &Client, args: &Args) -> Fallible<Option<String>> {
        let params = CallToolRequestParams::new(operand(args, 0)?)
            .with_arguments(arguments(args)?)
            .with_task(TaskMetadata::new());
        match client
            .send_request(ClientRequest::CallToolRequest(Request::new(params)))
            .await
        {
            Ok(reply) => {
                let reply = serde_json::to_value(&reply)?;
                say(json!({"event": "created", "task": reply["task"]}));
                Ok(reply["task"]["taskId"].as_str().map(str::to_owned))
            }
            Err(error) => refused(error).map(|()| None),
        }
    }

    async fn get(client: &Client, task: &str) -> Fallible<Option<Value>> {
        let request = ClientRequest::GetTaskRequest(Request::new(GetTaskParams::new(task)));
        match client.send_request(request).await {
            Ok(got) => {
                let got = serde_json::to_value(&got)?;
                say(json!({
                    "event": "poll",
                    "status": got["status"],
                    "statusMessage": got["statusMessage"],
                    "output": got["_meta"]["airlock/output"],
                }));
                Ok(Some(got))
            }
            Err(error) => refused(error).map(|()| None),
        }
    }

    /// Polls until the task ends, then reads its result with `tasks/result`.
    async fn poll(client: &Client, task: &str) -> Fallible<()> {
        loop {
            let Some(got) = get(client, task).await? else {
                return Ok(());
            };
            if got["status"] != "working" && got["status"] != "input_required" {
                let request = ClientRequest::GetTaskPayloadRequest(Request::new(
                    GetTaskPayloadParams::new(task),
                ));
                match client.send_request(request).await {
                    Ok(result) => say(json!({
                        "event": "result",
                        "status": got["status"],
                        "result": result,
                    })),
                    Err(error) => refused(error)?,
                }
                return Ok(());
            }
            let every = got["pollInterval"].as_u64().unwrap_or(500);
            tokio::time::sleep(Duration::from_millis(every)).await;
        }
    }
}
