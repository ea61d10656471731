//! The conformance fixture server: airlock serving the fixed-name tools the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`) calls, so that its tool scenarios
//! test real behaviour rather than "unknown tool" replies. `tests/conformance/run.sh` starts it
//! with `--http 127.0.0.1:PORT`; without `--http` it serves stdio.
//!
//! Only test tools, prompts and resources live here; the production binary carries none of
//! them. The tools use what airlock offers: content of every kind, an `isError` result,
//! progress, log messages, and questions for the client (sampling, elicitation: legacy
//! sessions); the prompts and resources are the suite's, and `test://watched-resource` may be
//! subscribed to (`test_touch_watched_resource` announces that it changed). Scenarios it
//! does not pass are listed with their reasons in
//! `tests/conformance/expected-failures-<revision>.yml`.
//!
//! `CONFORMANCE_REDIS_URL=redis://…` shares its legacy sessions (and quotas) with other
//! replicas through that Redis, for the integration tests of sessions taken over by another
//! replica (`tests/it/redis.rs`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use airlock::CallContext;
use airlock::Content;
use airlock::limits::HttpLimits;
use airlock::schemars::{self, JsonSchema};
use airlock::serde_json::json;
use airlock::transport::http::{AllowList, HttpConfig, SharedStore, Tokens};
use airlock::{
    Capability, Elicitation, Elicited, Limits, LogLevel, NoArguments, Prompt, PromptMessage, Rate,
    Resource, ResourceBody, ResourceUpdates, Role, Sampling, Server, Tool, ToolError, ToolOutput,
};
use base64::Engine as _;

/// A 1×1 red PNG.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut http: Option<SocketAddr> = None;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().map(|addr| addr.parse())) {
            ("--http", Some(Ok(addr))) => http = Some(addr),
            _ => {
                let _written = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    b"usage: conformance_server [--http 127.0.0.1:PORT]\n",
                );
                return ExitCode::from(2);
            }
        }
    }
    let server = match server() {
        Ok(server) => server,
        Err(_) => return ExitCode::FAILURE,
    };
    let Some(addr) = http else {
        return server.run_stdio();
    };
    let mut config = HttpConfig::new(AllowList::default(), Tokens::none(), suite_http_limits());
    if let Ok(url) = std::env::var("CONFORMANCE_REDIS_URL") {
        match SharedStore::redis(url.into(), "conformance") {
            Ok(store) => config = config.shared_store(store),
            Err(_) => return ExitCode::FAILURE,
        }
    }
    server.run_http(addr, config)
}

/// The suite is one client firing requests back to back, far faster than an agent: quotas are
/// raised so that its scenarios test the protocol, not the rate limiter (which the integration
/// tests cover). Every other limit keeps its default.
fn suite_limits() -> Limits {
    let mut limits = Limits::default();
    limits.tool_call_rate = Some(Rate::new_const(60_000, 1_000));
    limits.cheap_method_rate = Some(Rate::new_const(60_000, 1_000));
    limits
}

fn suite_http_limits() -> HttpLimits {
    let mut limits = HttpLimits::default();
    limits.client_call_rate = Some(Rate::new_const(60_000, 1_000));
    limits.client_request_rate = Some(Rate::new_const(60_000, 1_000));
    limits
}

/// The resource the subscription scenarios subscribe to.
const WATCHED: &str = "test://watched-resource";

fn server() -> Result<Server, airlock::BuildError> {
    let updates = ResourceUpdates::new();
    let announcer = updates.clone();
    let builder = Server::builder("airlock-conformance", env!("CARGO_PKG_VERSION"))
        .limits(suite_limits())
        .resource_subscriptions(updates)
        .tool(
            Tool::builder("test_touch_watched_resource")
                .description("Announces that test://watched-resource changed")
                .handler(move |_: NoArguments| {
                    announcer.updated(WATCHED);
                    async { "announced" }
                }),
        )
        .resource(
            Resource::builder(WATCHED, "watched-resource")
                .description("A resource clients may subscribe to")
                .mime_type("text/plain")
                .fixed(|| ResourceBody::text("Watched.")),
        )
        .tool(
            Tool::builder("test_simple_text")
                .description("Returns a fixed text")
                .handler(|_: NoArguments| async {
                    ToolOutput::text("This is a simple text response for testing.")
                }),
        )
        .tool(
            Tool::builder("test_image_content")
                .description("Returns a 1x1 red PNG")
                .handler(|_: NoArguments| async { ToolOutput::content(vec![image()]) }),
        )
        .tool(
            Tool::builder("test_audio_content")
                .description("Returns a short silent WAV")
                .handler(|_: NoArguments| async {
                    ToolOutput::content(vec![Content::audio(&silent_wav(), "audio/wav")])
                }),
        )
        .tool(
            Tool::builder("test_embedded_resource")
                .description("Returns an embedded text resource")
                .handler(|_: NoArguments| async {
                    ToolOutput::content(vec![Content::resource_text(
                        "test://embedded-resource",
                        "text/plain",
                        "This is an embedded resource content.",
                    )])
                }),
        )
        .tool(
            Tool::builder("test_multiple_content_types")
                .description("Returns text, an image and a resource")
                .handler(|_: NoArguments| async {
                    ToolOutput::content(vec![
                        Content::Text("Multiple content types test:".to_owned()),
                        image(),
                        Content::resource_text(
                            "test://mixed-content-resource",
                            "application/json",
                            r#"{"test":"data","value":123}"#,
                        ),
                    ])
                }),
        )
        .tool(
            Tool::builder("test_error_handling")
                .description("Always fails (isError)")
                .handler(|_: NoArguments| async {
                    airlock::ToolError::new("This tool intentionally returns an error for testing")
                }),
        )
        .tool(
            Tool::builder("test_tool_with_progress")
                .description("Reports progress 0, 50 and 100 of 100, then answers")
                .handler(|_: NoArguments, context: CallContext| async move {
                    // The engine sends at most one progress notification per 100 ms.
                    for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                        if step > 0 {
                            tokio::time::sleep(Duration::from_millis(120)).await;
                        }
                        context.progress(progress, Some(100.0), None);
                    }
                    ToolOutput::text("Progress test completed.")
                }),
        )
        .tool(
            Tool::builder("test_logging_tool")
                .description("Logs at info level: only a client that set a level sees it")
                .handler(|_: NoArguments, context: CallContext| async move {
                    context.log(LogLevel::Info, "A log message");
                    ToolOutput::text("Logged if a level was set.")
                }),
        )
        .tool(
            Tool::builder("test_tool_with_logging")
                .description("Logs three info messages 50 ms apart, then answers")
                .handler(|_: NoArguments, context: CallContext| async move {
                    context.log(LogLevel::Info, "Tool execution started");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    context.log(LogLevel::Info, "Tool processing data");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    context.log(LogLevel::Info, "Tool execution completed");
                    ToolOutput::text("Tool with logging executed successfully.")
                }),
        )
        .tool(
            Tool::builder("test_sampling")
                .description("Asks the client's model to answer the prompt")
                .handler(|args: SamplingArguments, context: CallContext| async move {
                    let request = Sampling::new(args.prompt).max_tokens(100);
                    match context.sample(request).await {
                        Ok(sampled) => ToolOutput::text(format!("LLM response: {}", sampled.text)),
                        Err(error) => ToolError::new(error.to_string()).into(),
                    }
                }),
        )
        .tool(
            Tool::builder("test_elicitation")
                .description("Asks the user for a username and an email address")
                .timeout(Duration::from_secs(130))
                .handler(
                    |args: ElicitationArguments, context: CallContext| async move {
                        let schema = json!({
                            "type": "object",
                            "properties": {
                                "username": {"type": "string", "description": "User's response"},
                                "email": {"type": "string", "description": "User's email address"}
                            },
                            "required": ["username", "email"]
                        });
                        elicit(&context, &args.message, schema, "User response").await
                    },
                ),
        )
        .tool(
            Tool::builder("test_elicitation_sep1034_defaults")
                .description("Asks for a form whose fields all have defaults")
                .handler(|_: NoArguments, context: CallContext| async move {
                    let schema = json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "default": "John Doe"},
                            "age": {"type": "integer", "default": 30},
                            "score": {"type": "number", "default": 95.5},
                            "status": {
                                "type": "string",
                                "enum": ["active", "inactive", "pending"],
                                "default": "active"
                            },
                            "verified": {"type": "boolean", "default": true}
                        }
                    });
                    let message = "Please review and update the form fields with defaults";
                    elicit(&context, message, schema, "Elicitation completed").await
                }),
        )
        .tool(
            Tool::builder("test_elicitation_sep1330_enums")
                .description("Asks for a form with every kind of enum field")
                .handler(|_: NoArguments, context: CallContext| async move {
                    let titled = |pairs: &[(&str, &str)]| {
                        pairs
                            .iter()
                            .map(|(value, title)| json!({"const": value, "title": title}))
                            .collect::<Vec<_>>()
                    };
                    let schema = json!({
                        "type": "object",
                        "properties": {
                            "untitledSingle": {
                                "type": "string",
                                "enum": ["option1", "option2", "option3"]
                            },
                            "titledSingle": {
                                "type": "string",
                                "oneOf": titled(&[
                                    ("value1", "First Option"),
                                    ("value2", "Second Option"),
                                    ("value3", "Third Option"),
                                ])
                            },
                            "legacyEnum": {
                                "type": "string",
                                "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"]
                            },
                            "untitledMulti": {
                                "type": "array",
                                "items": {
                                    "type": "string",
                                    "enum": ["option1", "option2", "option3"]
                                }
                            },
                            "titledMulti": {
                                "type": "array",
                                "items": {
                                    "anyOf": titled(&[
                                        ("value1", "First Choice"),
                                        ("value2", "Second Choice"),
                                        ("value3", "Third Choice"),
                                    ])
                                }
                            }
                        }
                    });
                    let message = "Please select options from the enum fields";
                    elicit(&context, message, schema, "Elicitation completed").await
                }),
        )
        .prompt(
            Prompt::builder("test_simple_prompt")
                .description("A prompt without arguments")
                .handler(|_: NoArguments| {
                    vec![PromptMessage::user("This is a simple prompt for testing.")]
                }),
        )
        .prompt(
            Prompt::builder("test_prompt_with_arguments")
                .description("A prompt with two required arguments")
                .complete("arg1", |typed| {
                    ["paris", "park", "party"]
                        .iter()
                        .filter(|word| word.starts_with(typed))
                        .map(|word| (*word).to_owned())
                        .collect()
                })
                .handler(|args: TwoArguments| {
                    vec![PromptMessage::user(format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        args.arg1, args.arg2
                    ))]
                }),
        )
        .prompt(
            Prompt::builder("test_prompt_with_embedded_resource")
                .description("A prompt embedding the resource it is given")
                .handler(|args: EmbeddedResource| {
                    vec![
                        PromptMessage::new(
                            Role::User,
                            Content::resource_text(
                                args.resource_uri,
                                "text/plain",
                                "Embedded resource content for testing.",
                            ),
                        ),
                        PromptMessage::user("Please process the embedded resource above."),
                    ]
                }),
        )
        .prompt(
            Prompt::builder("test_prompt_with_image")
                .description("A prompt with an image")
                .handler(|_: NoArguments| {
                    vec![
                        PromptMessage::new(Role::User, image()),
                        PromptMessage::user("Please analyze the image above."),
                    ]
                }),
        )
        .resource(
            Resource::builder("test://static-text", "static-text")
                .description("A fixed text")
                .mime_type("text/plain")
                .fixed(|| ResourceBody::text("This is the content of the static text resource.")),
        )
        .resource(
            Resource::builder("test://static-binary", "static-binary")
                .description("A fixed image")
                .mime_type("image/png")
                .fixed(|| {
                    let png = base64::engine::general_purpose::STANDARD
                        .decode(RED_PIXEL_PNG)
                        .unwrap_or_default();
                    ResourceBody::blob(&png)
                }),
        )
        .resource(
            Resource::builder("test://template/{id}/data", "template-data")
                .description("Data for an id")
                .mime_type("application/json")
                .template(|args: TemplateId| {
                    let data = serde_json::json!({
                        "id": args.id,
                        "templateTest": true,
                        "data": format!("Data for ID: {}", args.id),
                    });
                    ResourceBody::text(data.to_string())
                }),
        )
        .prompt(context_prompt());
    input_required_tools()
        .into_iter()
        .fold(builder, airlock::ServerBuilder::tool)
        .build()
}

/// The tools of the 2026-07-28 input-required scenarios: each asks the client through its
/// `CallContext` as a legacy tool does; airlock turns the questions into `input_required`
/// results and the retries' answers back into what the questions return.
fn input_required_tools() -> Vec<Tool> {
    vec![
        Tool::builder("test_input_required_result_elicitation")
            .description("Asks the user's name, then greets them")
            .handler(|_: NoArguments, context: CallContext| async move {
                match ask_name(&context, "user_name", "What is your name?").await {
                    Ok(name) => ToolOutput::text(format!("Hello, {name}!")),
                    Err(output) => output,
                }
            }),
        Tool::builder("test_input_required_result_sampling")
            .description("Asks the client's model a question")
            .handler(|_: NoArguments, context: CallContext| async move {
                let request = Sampling::new("What is the capital of France?").max_tokens(100);
                match context.sample(request).await {
                    Ok(sampled) => ToolOutput::text(format!("The model said: {}", sampled.text)),
                    Err(error) => ToolError::new(error.to_string()).into(),
                }
            }),
        Tool::builder("test_input_required_result_list_roots")
            .description("Lists the client's roots")
            .handler(|_: NoArguments, context: CallContext| async move {
                match context.list_roots().await {
                    Ok(roots) => {
                        ToolOutput::text(format!("{} root(s): {}", roots.len(), uris(&roots)))
                    }
                    Err(error) => ToolError::new(error.to_string()).into(),
                }
            }),
        Tool::builder("test_input_required_result_request_state")
            .description("Asks for a confirmation; says state-ok when its state came back verified")
            .handler(|_: NoArguments, context: CallContext| async move {
                match confirm(&context).await {
                    Ok(()) if context.input_round() > 0 => ToolOutput::text(format!(
                        "state-ok: confirmed in round {}",
                        context.input_round()
                    )),
                    Ok(()) => ToolOutput::text("confirmed without a state"),
                    Err(output) => output,
                }
            }),
        Tool::builder("test_input_required_result_tampered_state")
            .description("Asks for a confirmation")
            .handler(|_: NoArguments, context: CallContext| async move {
                match confirm(&context).await {
                    Ok(()) => ToolOutput::text("confirmed"),
                    Err(output) => output,
                }
            }),
        Tool::builder("test_input_required_result_multiple_inputs")
            .description("Asks a form, the client's model and its roots at once")
            .handler(|_: NoArguments, context: CallContext| async move {
                let (name, greeting, roots) = tokio::join!(
                    ask_name(&context, "user_name", "What is your name?"),
                    context.sample(Sampling::new("Generate a greeting").max_tokens(50)),
                    context.list_roots(),
                );
                match (name, greeting, roots) {
                    (Ok(name), Ok(greeting), Ok(roots)) => ToolOutput::text(format!(
                        "{} {name}; roots: {}",
                        greeting.text,
                        uris(&roots)
                    )),
                    (Err(output), _, _) => output,
                    (_, Err(error), _) | (_, _, Err(error)) => {
                        ToolError::new(error.to_string()).into()
                    }
                }
            }),
        Tool::builder("test_input_required_result_multi_round")
            .description("Asks a name, then a colour, in two rounds")
            .handler(|_: NoArguments, context: CallContext| async move {
                let name = match ask_name(&context, "step1", "Step 1: What is your name?").await {
                    Ok(name) => name,
                    Err(output) => return output,
                };
                let schema = json!({
                    "type": "object",
                    "properties": {"color": {"type": "string", "maxLength": 64}},
                    "required": ["color"]
                });
                let colour = match Elicitation::new("Step 2: What is your favorite color?", schema)
                    .and_then(|form| form.named("step2"))
                {
                    Ok(form) => context.elicit(form).await,
                    Err(error) => return ToolError::new(error.to_string()).into(),
                };
                match colour {
                    Ok(Elicited::Accepted(content)) => ToolOutput::text(format!(
                        "{name} likes {}",
                        content
                            .get("color")
                            .and_then(|colour| colour.as_str())
                            .unwrap_or("?")
                    )),
                    Ok(_) => ToolOutput::text(format!("{name} did not say")),
                    Err(error) => ToolError::new(error.to_string()).into(),
                }
            }),
        Tool::builder("test_input_required_result_capabilities")
            .description("Asks only what the client declared it can answer")
            .handler(|_: NoArguments, context: CallContext| async move {
                let mut said = Vec::new();
                if context.client_declares(Capability::Elicitation) {
                    match ask_name(&context, "user_name", "What is your name?").await {
                        Ok(name) => said.push(format!("name {name}")),
                        Err(output) => return output,
                    }
                }
                if context.client_declares(Capability::Sampling) {
                    match context
                        .sample(Sampling::new("Say hello").max_tokens(20))
                        .await
                    {
                        Ok(sampled) => said.push(format!("model {}", sampled.text)),
                        Err(error) => return ToolError::new(error.to_string()).into(),
                    }
                }
                ToolOutput::text(said.join("; "))
            }),
        Tool::builder("test_missing_capability")
            .description("Needs the client's sampling capability")
            .handler(|_: NoArguments, context: CallContext| async move {
                match context
                    .sample(Sampling::new("Say hello").max_tokens(20))
                    .await
                {
                    Ok(sampled) => ToolOutput::text(sampled.text),
                    Err(error) => ToolError::new(error.to_string()).into(),
                }
            }),
        Tool::builder("test_streaming_elicitation")
            .description("Reports progress, then asks the user a question")
            .handler(|_: NoArguments, context: CallContext| async move {
                context.progress(1.0, Some(2.0), Some("asking"));
                match ask_name(&context, "user_name", "What is your name?").await {
                    Ok(name) => ToolOutput::text(format!("Hello, {name}!")),
                    Err(output) => output,
                }
            }),
    ]
}

/// `test_input_required_result_prompt`: asks the user for its context first (2026-07-28
/// requests that do not give it).
fn context_prompt() -> Prompt {
    let form = Elicitation::new(
        "What context should the prompt use?",
        json!({
            "type": "object",
            "properties": {"context": {"type": "string", "maxLength": 256}},
            "required": ["context"]
        }),
    )
    .and_then(|form| form.named("user_context"));
    let builder = Prompt::builder("test_input_required_result_prompt")
        .description("A prompt that asks the user for its context");
    let builder = match form {
        Ok(form) => builder.asking(form),
        Err(_) => builder,
    };
    builder.dynamic(
        json!({
            "type": "object",
            "properties": {"context": {"type": "string", "description": "The prompt's context"}}
        }),
        |args| {
            let context = args.get("context").map_or("none given", String::as_str);
            vec![PromptMessage::user(format!("Use this context: {context}"))]
        },
    )
}

/// Asks for a name under `key`: the text, or the output to return instead.
async fn ask_name(context: &CallContext, key: &str, message: &str) -> Result<String, ToolOutput> {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 64}},
        "required": ["name"]
    });
    let form = Elicitation::new(message, schema)
        .and_then(|form| form.named(key))
        .map_err(|error| ToolOutput::from(ToolError::new(error.to_string())))?;
    match context.elicit(form).await {
        Ok(Elicited::Accepted(content)) => Ok(content
            .get("name")
            .and_then(|name| name.as_str())
            .unwrap_or_default()
            .to_owned()),
        Ok(_) => Err(ToolOutput::text("No name given.")),
        Err(error) => Err(ToolError::new(error.to_string()).into()),
    }
}

/// Asks for a confirmation (`confirm`: `{ok: boolean}`); `Err` with the output to return when
/// there is none.
async fn confirm(context: &CallContext) -> Result<(), ToolOutput> {
    let schema = json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]
    });
    let form = Elicitation::new("Please confirm", schema)
        .and_then(|form| form.named("confirm"))
        .map_err(|error| ToolOutput::from(ToolError::new(error.to_string())))?;
    match context.elicit(form).await {
        Ok(Elicited::Accepted(content)) if content.get("ok") == Some(&json!(true)) => Ok(()),
        Ok(_) => Err(ToolOutput::text("Not confirmed.")),
        Err(error) => Err(ToolError::new(error.to_string()).into()),
    }
}

fn uris(roots: &[airlock::Root]) -> String {
    roots
        .iter()
        .map(|root| root.uri.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `test://template/{id}/data`'s variable.
#[derive(serde::Deserialize, JsonSchema)]
struct TemplateId {
    id: String,
}

/// Asks the user to fill in the form `schema` and says what came back, after `label`.
async fn elicit(
    context: &CallContext,
    message: &str,
    schema: airlock::serde_json::Value,
    label: &str,
) -> ToolOutput {
    let form = match Elicitation::new(message, schema) {
        Ok(form) => form,
        Err(error) => return ToolError::new(error.to_string()).into(),
    };
    match context.elicit(form).await {
        Ok(Elicited::Accepted(content)) => ToolOutput::text(format!(
            "{label}: action=accept, content={}",
            airlock::serde_json::Value::Object(content)
        )),
        Ok(Elicited::Declined) => ToolOutput::text(format!("{label}: action=decline")),
        Ok(_) => ToolOutput::text(format!("{label}: action=cancel")),
        Err(error) => ToolError::new(error.to_string()).into(),
    }
}

/// `test_sampling`'s argument.
#[derive(serde::Deserialize, JsonSchema)]
struct SamplingArguments {
    /// The prompt to send to the LLM.
    prompt: String,
}

/// `test_elicitation`'s argument.
#[derive(serde::Deserialize, JsonSchema)]
struct ElicitationArguments {
    /// The message to show the user.
    message: String,
}

/// `test_prompt_with_arguments`'s arguments.
#[derive(serde::Deserialize, JsonSchema)]
struct TwoArguments {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// `test_prompt_with_embedded_resource`'s argument.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EmbeddedResource {
    /// URI of the resource to embed.
    resource_uri: String,
}

fn image() -> Content {
    let png = base64::engine::general_purpose::STANDARD
        .decode(RED_PIXEL_PNG)
        .unwrap_or_default();
    Content::image(&png, "image/png")
}

/// A WAV file: 8 kHz, mono, 8-bit, 80 samples of silence (10 ms).
fn silent_wav() -> Vec<u8> {
    let samples = [128_u8; 80];
    let data_len = u32::try_from(samples.len()).unwrap_or(0);
    let mut wav = Vec::with_capacity(samples.len().saturating_add(44));
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&data_len.saturating_add(36).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16_u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1_u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1_u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000_u32.to_le_bytes()); // sample rate
    wav.extend_from_slice(&8000_u32.to_le_bytes()); // byte rate
    wav.extend_from_slice(&1_u16.to_le_bytes()); // block align
    wav.extend_from_slice(&8_u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.extend_from_slice(&samples);
    wav
}
