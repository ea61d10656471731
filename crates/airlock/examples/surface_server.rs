//! A server with every part of the protocol besides tools that airlock serves: prompts,
//! resources (fixed text, fixed binary, a URI template), completion of a prompt's argument and
//! of a template's variable, and a tool that logs at every level. `tests/it/clients.rs` drives
//! the official Python and TypeScript clients against it, in both eras.
//!
//! Pages hold two items (`tools_page_size`, which prompts and resources share), so each list
//! takes more than one page and a client must follow `nextCursor` to see all of it. Only test
//! data lives here; the production binary carries none of it. Everything it sends is fixed
//! text or the checked, decoded values the library hands its handlers.

use std::num::NonZeroUsize;
use std::process::ExitCode;

use airlock::schemars::{self, JsonSchema};
use airlock::{
    CallContext, Limits, LogLevel, NoArguments, Prompt, PromptMessage, Resource, ResourceBody,
    Role, Server, Tool, ToolOutput,
};
use serde::Deserialize;

/// The bytes of `notes://logo`: not UTF-8, so a client must carry them as a blob.
const LOGO: &[u8] = &[0x89, b'P', b'N', b'G', 0x00, 0xff, 0xfe, 0x01];

/// Every level, least severe first: what `log_every_level` logs, one message each.
const LEVELS: [(LogLevel, &str); 8] = [
    (LogLevel::Debug, "debug message"),
    (LogLevel::Info, "info message"),
    (LogLevel::Notice, "notice message"),
    (LogLevel::Warning, "warning message"),
    (LogLevel::Error, "error message"),
    (LogLevel::Critical, "critical message"),
    (LogLevel::Alert, "alert message"),
    (LogLevel::Emergency, "emergency message"),
];

/// The topics `summarize`'s `topic` and `notes://topic/{name}` complete to.
const TOPICS: [&str; 4] = ["sandbox", "schemas", "security", "sessions"];

/// `summarize`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct Summarize {
    /// What to summarize.
    topic: String,
    /// How to write it (plain unless given).
    style: Option<String>,
}

/// `notes://topic/{name}`'s variable.
#[derive(Deserialize, JsonSchema)]
struct Topic {
    /// The topic's name.
    name: String,
}

fn main() -> ExitCode {
    match server() {
        Ok(server) => server.run_stdio(),
        Err(_) => ExitCode::FAILURE,
    }
}

fn server() -> Result<Server, airlock::BuildError> {
    let mut limits = Limits::default();
    limits.tools_page_size = NonZeroUsize::MIN.saturating_add(1);
    Server::builder("surface", "1.0.0")
        .limits(limits)
        .tool(
            Tool::builder("log_every_level")
                .description("Logs one message at each level, least severe first, then answers")
                .handler(|_: NoArguments, context: CallContext| async move {
                    for (level, text) in LEVELS {
                        context.log(level, text);
                    }
                    ToolOutput::text("logged")
                }),
        )
        .prompt(
            Prompt::builder("greet")
                .description("A greeting without arguments")
                .handler(|_: NoArguments| vec![PromptMessage::user("Hello from the notes.")]),
        )
        .prompt(
            Prompt::builder("summarize")
                .description("Summarizes a topic of the notes")
                .complete("topic", complete_topic)
                .handler(|args: Summarize| {
                    let style = args.style.unwrap_or_else(|| "plain".to_owned());
                    vec![
                        PromptMessage::user(format!("Summarize the notes on {}.", args.topic)),
                        PromptMessage::new(
                            Role::Assistant,
                            airlock::Content::Text(format!("I will write it {style}.")),
                        ),
                    ]
                }),
        )
        .prompt(
            Prompt::builder("review")
                .description("Reviews the notes")
                .handler(|_: NoArguments| vec![PromptMessage::user("Review the notes.")]),
        )
        .resource(
            Resource::builder("notes://readme", "readme")
                .description("The notes' readme")
                .mime_type("text/markdown")
                .fixed(|| ResourceBody::text("# Notes\nRead me first.\n")),
        )
        .resource(
            Resource::builder("notes://logo", "logo")
                .description("The notes' logo, eight bytes that are not UTF-8")
                .mime_type("image/png")
                .fixed(|| ResourceBody::blob(LOGO)),
        )
        .resource(
            Resource::builder("notes://changelog", "changelog")
                .description("What changed")
                .mime_type("text/plain")
                .fixed(|| ResourceBody::text("Nothing yet.")),
        )
        .resource(
            Resource::builder("notes://topic/{name}", "topic")
                .description("The notes on one topic")
                .mime_type("text/plain")
                .complete("name", complete_topic)
                .template(|args: Topic| ResourceBody::text(format!("Notes on {}.", args.name))),
        )
        .resource(
            Resource::builder("notes://day/{date}/entry", "day")
                .description("One day's entry")
                .mime_type("text/plain")
                .template(|args: Day| ResourceBody::text(format!("Entry of {}.", args.date))),
        )
        .resource(
            Resource::builder("notes://tag/{tag}", "tag")
                .description("The notes with one tag")
                .mime_type("text/plain")
                .template(|args: Tag| ResourceBody::text(format!("Tagged {}.", args.tag))),
        )
        .build()
}

/// `notes://day/{date}/entry`'s variable.
#[derive(Deserialize, JsonSchema)]
struct Day {
    /// The day, as `YYYY-MM-DD`.
    date: String,
}

/// `notes://tag/{tag}`'s variable.
#[derive(Deserialize, JsonSchema)]
struct Tag {
    /// The tag.
    tag: String,
}

/// The topics that start with what was typed.
fn complete_topic(typed: &str) -> Vec<String> {
    TOPICS
        .iter()
        .filter(|topic| topic.starts_with(typed))
        .map(|topic| (*topic).to_owned())
        .collect()
}
