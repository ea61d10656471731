//! The method table: a checked request in, a result written or a tool call planned.
//!
//! Dispatch never sees bytes, only an [`envelope::Request`](crate::envelope::Request)'s parts.
//! It decides the era of the request (modern `_meta` or the legacy session), then runs the
//! method's handler. Every refusal is an [`McpError`]; the engine writes it. A tool call whose
//! arguments pass the bounds but not the tool's schema is answered here with an `isError`
//! result naming the arguments and rules (SEP-1303); one that passes both becomes a [`Plan`]
//! the engine starts.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::asking::{Answer, ClientCan, Elicitation, Elicited, Question};
use crate::call_log::Client;
use crate::envelope::{ParamKey, Params, RequestMethod};
use crate::error::McpError;
use crate::handler::LogLevel;
use crate::id::{ProgressToken, RequestId};
use crate::json::Text;
use crate::lifecycle::{self, Lifecycle};
use crate::limits::{MAX_CALLED_TOOL_NAME_BYTES, MAX_SUBSCRIPTIONS};
use crate::output::ToolOutput;
use crate::prompts::PromptDef;
use crate::resources::ResourceDef;
use crate::response::{
    self, CacheHints, Capabilities, CompleteResult, DiscoverResult, Empty, GetPromptResult,
    InfoFor, InitializeResult, Modern, PromptsListResult, ReadResourceResult, ResourcesListResult,
    ToolsListResult,
};
use crate::rounds::{Ending, Round, RoundEnd, Step};
use crate::state::Shared;
use crate::tasks::{self as task_table, Final, Owner, TaskId, TaskMode, Waiting};
use crate::tools::{ToolDef, arguments};
use crate::version::ProtocolVersion;

/// What dispatch did with a request.
pub(crate) enum Dispatched {
    /// The reply is written.
    Answered,
    /// A tool call to start; its reply comes when it completes.
    Call(Plan),
    /// A tool call to start as a task.
    Task(Plan, TaskStart),
    /// A `tasks/result` of a task still running: its reply comes when the task ends.
    Wait(Wait),
}

/// How a call becomes a task.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TaskStart {
    /// 2025-11-25: the client asked, to keep it `ttl` ms.
    Asked(Option<u64>),
    /// The 2026-07-28 extension: the server decided. `inline`: the call is answered as an
    /// ordinary one if it ends within `TASK_INLINE_WAIT`, else with its handle.
    Decided {
        /// Whether the call may still be answered plainly.
        inline: bool,
    },
}

/// A `tasks/result` waiting for its task.
pub(crate) struct Wait {
    pub(crate) task: TaskId,
    pub(crate) done: tokio::sync::watch::Receiver<Option<Arc<Final>>>,
    pub(crate) tool: Arc<ToolDef>,
    pub(crate) timeout: std::time::Duration,
}

/// A tool call that passed every check.
pub(crate) struct Plan {
    pub(crate) tool: Arc<ToolDef>,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) version: ProtocolVersion,
    /// The caller's `_meta.progressToken`, if it wants progress.
    pub(crate) progress_token: Option<ProgressToken>,
    /// A modern call's round: the answers it brought, and where its questions go.
    pub(crate) round: Option<Arc<Round>>,
    /// The level a modern call asked its log messages at (`_meta.logLevel`); legacy calls
    /// follow their session's `logging/setLevel`.
    pub(crate) log_level: Option<LogLevel>,
}

/// The session state dispatch may read and change.
pub(crate) struct Context<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) lifecycle: &'a mut Lifecycle,
    pub(crate) log_level: &'a mut Option<LogLevel>,
    pub(crate) subscriptions: &'a mut BTreeSet<Box<str>>,
    pub(crate) client_can: &'a mut ClientCan,
    pub(crate) in_flight: usize,
    /// Whose tasks this session reads (made at its first use of tasks).
    pub(crate) owner: &'a mut Option<Owner>,
    /// Who the peer is.
    pub(crate) client: &'a Client,
}

impl Context<'_> {
    /// The owner of this session's tasks.
    ///
    /// # Errors
    ///
    /// `Internal` if the random source failed.
    pub(crate) fn owner(&mut self) -> Result<Owner, McpError> {
        if let Some(owner) = self.owner.as_ref() {
            return Ok(owner.clone());
        }
        let owner = Owner::of(self.client).ok_or(McpError::Internal("the random source failed"))?;
        *self.owner = Some(owner.clone());
        Ok(owner)
    }
}

/// Runs one request.
///
/// # Errors
///
/// The [`McpError`] to answer with.
pub(crate) fn request(
    cx: Context<'_>,
    id: &RequestId,
    method: RequestMethod,
    mut params: Option<&mut Params<'_>>,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    if !offered(cx.shared, method) {
        // A method of a capability this server does not declare does not exist here.
        return Err(McpError::MethodNotFound);
    }
    let meta = params.as_deref().and_then(|params| params.meta.as_ref());
    let claims_modern = lifecycle::claimed_version(meta).is_some();
    if claims_modern
        && !matches!(
            method,
            RequestMethod::ServerDiscover
                | RequestMethod::ToolsList
                | RequestMethod::ToolsCall
                | RequestMethod::PromptsList
                | RequestMethod::PromptsGet
                | RequestMethod::ResourcesList
                | RequestMethod::ResourcesTemplatesList
                | RequestMethod::ResourcesRead
                | RequestMethod::CompletionComplete
                | RequestMethod::TasksGet
                | RequestMethod::TasksUpdate
                | RequestMethod::TasksCancel
        )
    {
        // `initialize` and `ping` do not exist in the modern era.
        return Err(McpError::MethodNotFound);
    }
    let version = match lifecycle::modern_version(meta)? {
        Some(version) => version,
        None => cx.lifecycle.admit(method)?,
    };
    if method != RequestMethod::ToolsCall {
        cx.shared.quotas.admit_cheap()?;
    }
    match method {
        RequestMethod::Initialize => initialize(cx, id, params.as_deref(), out),
        RequestMethod::Ping => {
            response::write_result(out, id, &Empty {});
            Ok(Dispatched::Answered)
        }
        RequestMethod::ServerDiscover => {
            discover(cx.shared, cx.client, id, out);
            Ok(Dispatched::Answered)
        }
        RequestMethod::ToolsList => tools_list(cx.shared, id, params.as_deref(), version, out),
        RequestMethod::ToolsCall => tools_call(&cx, id, params.take(), version, out),
        RequestMethod::PromptsList => prompts_list(cx.shared, id, params.as_deref(), version, out),
        RequestMethod::PromptsGet => prompts_get(cx.shared, id, params, version, out),
        RequestMethod::ResourcesList => {
            resources_list(cx.shared, id, params.as_deref(), false, version, out)
        }
        RequestMethod::ResourcesTemplatesList => {
            resources_list(cx.shared, id, params.as_deref(), true, version, out)
        }
        RequestMethod::ResourcesRead => {
            resources_read(cx.shared, id, params.as_deref(), version, out)
        }
        RequestMethod::ResourcesSubscribe => subscribe(cx, id, params.as_deref(), true, out),
        RequestMethod::ResourcesUnsubscribe => subscribe(cx, id, params.as_deref(), false, out),
        RequestMethod::CompletionComplete => {
            complete(cx.shared, id, params.as_deref(), version, out)
        }
        RequestMethod::LoggingSetLevel => set_level(cx, id, params.as_deref(), out),
        RequestMethod::TasksGet
        | RequestMethod::TasksResult
        | RequestMethod::TasksList
        | RequestMethod::TasksCancel
        | RequestMethod::TasksUpdate => tasks(cx, id, method, params.as_deref(), version, out),
    }
}

fn initialize(
    cx: Context<'_>,
    id: &RequestId,
    params: Option<&Params<'_>>,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let params = params.ok_or(McpError::InvalidParams("initialize needs params"))?;
    let requested = params
        .protocol_version
        .as_ref()
        .and_then(Text::as_str)
        .ok_or(McpError::InvalidParams("protocolVersion must be a string"))?;
    for (member, kind, is_object) in [
        (
            "capabilities",
            "object",
            params.capabilities.as_ref().map(Value::is_object),
        ),
        ("clientInfo", "object", params.client_info_is_object),
    ] {
        if is_object == Some(false) {
            tracing::debug!(
                member,
                expected = kind,
                "initialize member has the wrong type"
            );
            return Err(McpError::InvalidParams(
                "initialize member has the wrong type",
            ));
        }
    }
    // Echo the client's revision when we speak it, else offer our newest legacy one.
    let version = ProtocolVersion::legacy(requested).unwrap_or(ProtocolVersion::NEWEST_LEGACY);
    let shared = cx.shared;
    response::write_result(
        out,
        id,
        &InitializeResult {
            protocol_version: version.as_str(),
            capabilities: Capabilities {
                logging: true,
                subscribe: subscribable(shared),
                tools_list_changed: shared.tools_may_change(),
                tasks: version.has_tasks() && shared.registry().offers_tasks(),
                ..capabilities(shared)
            },
            server_info: InfoFor {
                info: &shared.info,
                version,
            },
            instructions: shared.instructions.as_deref(),
            meta: shared.info.meta.as_ref(),
        },
    );
    cx.lifecycle.initialized(version);
    *cx.client_can = ClientCan::declared(params.capabilities.as_ref());
    tracing::info!(version = version.as_str(), "session initialized");
    Ok(Dispatched::Answered)
}

fn discover(shared: &Shared, client: &Client, id: &RequestId, out: &mut Vec<u8>) {
    response::write_result(
        out,
        id,
        &Modern {
            body: DiscoverResult {
                supported_versions: ProtocolVersion::MODERN_NAMES,
                capabilities: Capabilities {
                    tasks_extension: shared.registry().offers_tasks()
                        && task_table::serves_extension(client),
                    ..capabilities(shared)
                },
                instructions: shared.instructions.as_deref(),
                cache: cache_hints(shared),
            },
            info: &shared.info,
        },
    );
}

fn tools_list(
    shared: &Shared,
    id: &RequestId,
    params: Option<&Params<'_>>,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let none = Params::default();
    let cursor = list_cursor(params.unwrap_or(&none))?;
    let registry = shared.registry();
    let (page, next_cursor) = registry.page(cursor, shared.limits.tools_page_size.get())?;
    let body = ToolsListResult {
        tools: page.iter().map(|tool| tool.listing(version)).collect(),
        next_cursor,
        cache: version.is_modern().then(|| cache_hints(shared)),
    };
    write_for_version(shared, id, &body, version, out);
    Ok(Dispatched::Answered)
}

/// Whether `method` belongs to a capability this server declares: prompts, resources and
/// completion only when it has something for them; the rest always.
fn offered(shared: &Shared, method: RequestMethod) -> bool {
    match method {
        RequestMethod::PromptsList | RequestMethod::PromptsGet => !shared.prompts.is_empty(),
        RequestMethod::ResourcesList
        | RequestMethod::ResourcesTemplatesList
        | RequestMethod::ResourcesRead => !shared.resources.is_empty(),
        RequestMethod::ResourcesSubscribe | RequestMethod::ResourcesUnsubscribe => {
            subscribable(shared)
        }
        RequestMethod::CompletionComplete => completes(shared),
        RequestMethod::Initialize
        | RequestMethod::Ping
        | RequestMethod::ServerDiscover
        | RequestMethod::ToolsList
        | RequestMethod::ToolsCall
        | RequestMethod::LoggingSetLevel => true,
        RequestMethod::TasksGet
        | RequestMethod::TasksResult
        | RequestMethod::TasksList
        | RequestMethod::TasksCancel
        | RequestMethod::TasksUpdate => shared.registry().offers_tasks(),
    }
}

/// Whether legacy sessions may subscribe to resources: the server was built to announce
/// changes and has resources to subscribe to.
fn subscribable(shared: &Shared) -> bool {
    shared.updates.is_some() && !shared.resources.is_empty()
}

/// What this server declares (a legacy `initialize` adds logging, subscriptions and
/// `tools.listChanged`, which the modern era does not have: a 2026-07-28 client re-reads the
/// list when its `ttlMs` runs out).
fn capabilities(shared: &Shared) -> Capabilities {
    Capabilities {
        prompts: !shared.prompts.is_empty(),
        resources: !shared.resources.is_empty(),
        subscribe: false,
        completions: completes(shared),
        // A modern request's `_meta.logLevel` is honoured (its messages on its own stream).
        logging: true,
        tools_list_changed: false,
        // Declared in a 2025-11-25 `initialize` only: the modern era has no `params.task`.
        tasks: false,
        // Declared in `server/discover` only, for a client it is served to.
        tasks_extension: false,
    }
}

/// `prompts/list`.
fn prompts_list(
    shared: &Shared,
    id: &RequestId,
    params: Option<&Params<'_>>,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let none = Params::default();
    let cursor = list_cursor(params.unwrap_or(&none))?;
    let (page, next_cursor) = shared
        .prompts
        .page(cursor, shared.limits.tools_page_size.get())?;
    let body = PromptsListResult {
        prompts: page.iter().map(PromptDef::listing).collect(),
        next_cursor,
        cache: version.is_modern().then(|| cache_hints(shared)),
    };
    write_for_version(shared, id, &body, version, out);
    Ok(Dispatched::Answered)
}

/// The `cursor` of a list request: `None` for the first page.
fn list_cursor<'p>(params: &'p Params<'_>) -> Result<Option<&'p str>, McpError> {
    only_members(params, &[ParamKey::Cursor, ParamKey::Meta])?;
    match &params.cursor {
        None => Ok(None),
        Some(Text::Str(cursor)) => Ok(Some(&**cursor)),
        Some(Text::NotAString) => Err(McpError::InvalidCursor),
    }
}

/// `resources/list` (`templates` false) or `resources/templates/list`.
fn resources_list(
    shared: &Shared,
    id: &RequestId,
    params: Option<&Params<'_>>,
    templates: bool,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let none = Params::default();
    let cursor = list_cursor(params.unwrap_or(&none))?;
    let (page, next_cursor) =
        shared
            .resources
            .page(templates, cursor, shared.limits.tools_page_size.get())?;
    let body = ResourcesListResult {
        key: if templates {
            "resourceTemplates"
        } else {
            "resources"
        },
        listed: page.iter().map(ResourceDef::listing).collect(),
        next_cursor,
        cache: version.is_modern().then(|| cache_hints(shared)),
    };
    write_for_version(shared, id, &body, version, out);
    Ok(Dispatched::Answered)
}

/// `resources/read`: the contents at `uri`, from a fixed resource or a matching template.
fn resources_read(
    shared: &Shared,
    id: &RequestId,
    params: Option<&Params<'_>>,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let params = params.ok_or(McpError::InvalidParams("resources/read needs params"))?;
    only_members(params, &[ParamKey::Uri, ParamKey::Meta])?;
    let uri = match &params.uri {
        Some(Text::Str(uri)) => &**uri,
        _ => return Err(McpError::MalformedResourceUri),
    };
    let (resource, body) = shared.resources.read(uri)?;
    let body = ReadResourceResult {
        uri,
        mime_type: resource.mime_type(),
        body: &body,
        // A handler gives the contents at each read: nothing says the next read is the same.
        cache: version.is_modern().then_some(CacheHints {
            ttl_ms: 0,
            cache_scope: "public",
        }),
    };
    write_for_version(shared, id, &body, version, out);
    Ok(Dispatched::Answered)
}

/// `resources/subscribe` (`subscribe` true) or `resources/unsubscribe` (sessions of
/// 2025-11-25 and earlier): a subscription names a resource this server has, at most
/// [`MAX_SUBSCRIPTIONS`] per session; subscribing twice or unsubscribing what was never
/// subscribed changes nothing and is answered `{}`, as the state asked for holds.
fn subscribe(
    cx: Context<'_>,
    id: &RequestId,
    params: Option<&Params<'_>>,
    subscribe: bool,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let params = params.ok_or(McpError::InvalidParams("resources/subscribe needs params"))?;
    only_members(params, &[ParamKey::Uri, ParamKey::Meta])?;
    let uri = match &params.uri {
        Some(Text::Str(uri)) => &**uri,
        _ => return Err(McpError::MalformedResourceUri),
    };
    if subscribe {
        if !cx.subscriptions.contains(uri) {
            if !cx.shared.resources.knows(uri) {
                return Err(McpError::UnknownResource);
            }
            if cx.subscriptions.len() >= MAX_SUBSCRIPTIONS {
                return Err(McpError::TooManySubscriptions);
            }
            cx.subscriptions.insert(Box::from(uri));
        }
    } else {
        cx.subscriptions.remove(uri);
    }
    response::write_result(out, id, &Empty {});
    Ok(Dispatched::Answered)
}

/// `logging/setLevel` (sessions of 2025-11-25 and earlier): from now on, log messages of
/// calls at or above `level` reach the client.
fn set_level(
    cx: Context<'_>,
    id: &RequestId,
    params: Option<&Params<'_>>,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let params = params.ok_or(McpError::InvalidParams("logging/setLevel needs params"))?;
    only_members(params, &[ParamKey::Level, ParamKey::Meta])?;
    let level = params
        .level
        .as_ref()
        .and_then(Text::as_str)
        .and_then(LogLevel::parse)
        .ok_or(McpError::InvalidParams("level must be a log level"))?;
    *cx.log_level = Some(level);
    response::write_result(out, id, &Empty {});
    Ok(Dispatched::Answered)
}

/// `value` as text, or `-32602` saying `what` it must be.
fn text<'v>(value: Option<&'v Value>, what: &'static str) -> Result<&'v str, McpError> {
    match value {
        Some(Value::String(text)) => Ok(text.as_str()),
        _ => Err(McpError::InvalidParams(what)),
    }
}

/// Whether there is anything to complete: a prompt or a resource template.
fn completes(shared: &Shared) -> bool {
    !shared.prompts.is_empty() || shared.resources.has_templates()
}

/// `completion/complete`: suggestions for one argument of a prompt (`ref/prompt`) or one
/// variable of a resource template (`ref/resource`), from its completer.
fn complete(
    shared: &Shared,
    id: &RequestId,
    params: Option<&Params<'_>>,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let params = params.ok_or(McpError::InvalidParams("completion/complete needs params"))?;
    only_members(
        params,
        &[
            ParamKey::Ref,
            ParamKey::Argument,
            ParamKey::Context,
            ParamKey::Meta,
        ],
    )?;
    let argument = params.argument.as_ref().ok_or(McpError::InvalidParams(
        "completion/complete needs an argument",
    ))?;
    let name = text(argument.get("name"), "argument.name must be a string")?;
    let typed = text(argument.get("value"), "argument.value must be a string")?;
    if typed.len() > shared.limits.max_string_bytes.get() {
        return Err(McpError::InvalidParams("argument.value is too long"));
    }
    let reference = params
        .reference
        .as_ref()
        .ok_or(McpError::InvalidParams("completion/complete needs a ref"))?;
    let completion = match text(reference.get("type"), "ref.type must be a string")? {
        "ref/prompt" => shared
            .prompts
            .get(text(reference.get("name"), "ref.name must be a string")?)
            .ok_or(McpError::UnknownPrompt)?
            .complete(name, typed),
        "ref/resource" => shared
            .resources
            .template(text(reference.get("uri"), "ref.uri must be a string")?)
            .ok_or(McpError::UnknownResource)?
            .complete(name, typed),
        _ => {
            return Err(McpError::InvalidParams(
                "ref.type must be ref/prompt or ref/resource",
            ));
        }
    }
    .ok_or(McpError::InvalidParams("no such argument to complete"))?;
    write_for_version(shared, id, &CompleteResult { completion }, version, out);
    Ok(Dispatched::Answered)
}

/// `prompts/get`: the prompt's messages for the arguments, checked before its handler runs.
fn prompts_get(
    shared: &Shared,
    id: &RequestId,
    params: Option<&mut Params<'_>>,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let params = params.ok_or(McpError::InvalidParams("prompts/get needs params"))?;
    only_call_members(params, version)?;
    let prompt = match &params.name {
        Some(Text::Str(name)) => shared.prompts.get(name),
        _ => None,
    }
    .ok_or(McpError::UnknownPrompt)?;
    if params.arguments_out_of_range {
        return Err(McpError::NumberOutOfRange);
    }
    let mut arguments = params.arguments.take();
    if let Some(form) = prompt
        .form_for(arguments.as_ref())
        .filter(|_| version.is_modern())
    {
        match ask_before_rendering(shared, prompt, form, params, arguments.as_ref())? {
            Asked::Answered(content) => {
                // The user's answer fills the fields the client left out; the prompt's
                // checks below see them as arguments.
                let mut filled = match arguments {
                    Some(Value::Object(given)) => given,
                    None => Map::new(),
                    Some(_) => return Err(McpError::InvalidPromptArguments),
                };
                for (field, value) in content {
                    filled.entry(field).or_insert(value);
                }
                arguments = Some(Value::Object(filled));
            }
            Asked::NoAnswer => {}
            Asked::InputRequired { requests, state } => {
                response::write_input_required(out, id, &requests, &state, &shared.info);
                return Ok(Dispatched::Answered);
            }
        }
    }
    let messages = prompt.render(arguments, &shared.limits)?;
    let body = GetPromptResult {
        description: prompt.description(),
        messages: &messages,
        version,
    };
    // A prompt may repeat its arguments: its reply is bounded as sent, not by its input.
    let max = crate::limits::MAX_PROMPT_REPLY_BYTES;
    let fits = if version.is_modern() {
        let body = Modern {
            body: &body,
            info: &shared.info,
        };
        response::write_result_within(out, id, &body, max)
    } else {
        response::write_result_within(out, id, &body, max)
    };
    if !fits {
        return Err(McpError::PromptTooLarge);
    }
    Ok(Dispatched::Answered)
}

/// What the user's answer to a prompt's form came to.
enum Asked {
    /// Accepted: the content, checked against the form.
    Answered(Map<String, Value>),
    /// Declined, dismissed, or no answer can come (the round has asked its most): the prompt
    /// renders with the arguments sent.
    NoAnswer,
    /// Not answered yet: the reply asks.
    InputRequired {
        requests: Map<String, Value>,
        state: String,
    },
}

/// Asks a modern `prompts/get`'s form through the request's round: its answer if the retry
/// brought one, else the `input_required` reply to send.
fn ask_before_rendering(
    shared: &Shared,
    prompt: &PromptDef,
    form: &Elicitation,
    params: &mut Params<'_>,
    arguments: Option<&Value>,
) -> Result<Asked, McpError> {
    let empty = Map::new();
    let bound = match arguments {
        Some(Value::Object(arguments)) => arguments,
        None => &empty,
        Some(_) => return Err(McpError::InvalidPromptArguments),
    };
    let can = ClientCan::declared(lifecycle::client_capabilities(params.meta.as_ref()));
    let round = Round::open(
        &shared.request_states,
        ("prompts/get", prompt.name(), bound),
        can,
        params.input_responses.take(),
        params.request_state.as_ref(),
    )?;
    let question = Question::Elicit(form.clone());
    match round.ask(&question, question.key()) {
        Step::Answered(Ok(Answer::Elicited(Elicited::Accepted(content)))) => {
            Ok(Asked::Answered(content))
        }
        Step::Answered(_) => Ok(Asked::NoAnswer),
        Step::Wait => match round.end() {
            Some(RoundEnd(Ending::InputRequired { requests, state })) => {
                Ok(Asked::InputRequired { requests, state })
            }
            Some(RoundEnd(Ending::Refused(error))) => Err(error),
            None => Err(McpError::Internal("a round waited on nothing")),
        },
    }
}

fn tools_call(
    cx: &Context<'_>,
    id: &RequestId,
    params: Option<&mut Params<'_>>,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let params = params.ok_or(McpError::InvalidParams("tools/call needs params"))?;
    only_call_members(params, version)?;
    let task = params.task.take();
    let name = match &params.name {
        Some(Text::Str(name)) if name.len() <= MAX_CALLED_TOOL_NAME_BYTES => &**name,
        _ => return Err(McpError::InvalidToolName),
    };
    let tool = cx.shared.registry().get(name).cloned();
    // Charged before an unknown name is refused: an agent calling a tool it made up is making
    // a client mistake, which the engine does not count toward the garbage cut-off, so the
    // call quota is what slows one that loops on it (`-31429`). Only registered tools have
    // quotas of their own, so an unknown name is charged to the server's alone.
    cx.shared.quotas.admit_call(name)?;
    let tool = tool.ok_or(McpError::UnknownTool)?;
    let task = if version.is_modern() {
        // 2026-07-28: the server decides, for a request that declared the extension (and a
        // client it is served to); a tool that runs only as a task refuses the others with
        // `-32021`, naming the extension.
        let extension =
            task_table::declared(params.meta.as_ref()) && task_table::serves_extension(cx.client);
        match tool.task {
            TaskMode::Never => None,
            TaskMode::Optional => extension.then_some(TaskStart::Decided { inline: true }),
            TaskMode::Always if extension => Some(TaskStart::Decided { inline: false }),
            TaskMode::Always => return Err(McpError::MissingTasksExtension),
        }
    } else {
        // A server that declares no tasks processes an augmented call normally (2025-11-25,
        // a MUST); one that does refuses it for a tool that forbids tasks (a SHOULD), and
        // refuses an ordinary call of a tool that requires one (a MUST).
        match (tool.task, task) {
            (_, Some(_)) if !cx.shared.registry().offers_tasks() => None,
            (TaskMode::Never, Some(_)) | (TaskMode::Always, None) => {
                return Err(McpError::MethodNotFound);
            }
            (TaskMode::Never, None) | (TaskMode::Optional, None) => None,
            (TaskMode::Optional | TaskMode::Always, Some(task)) => {
                Some(TaskStart::Asked(task_ttl(&task)?))
            }
        }
    };
    let progress_token = match &mut params.meta {
        None => None,
        Some(Value::Object(meta)) => meta
            .get_mut("progressToken")
            .map(Value::take)
            .map(ProgressToken::parse)
            .transpose()?,
        Some(_) => return Err(McpError::InvalidParams("_meta must be an object")),
    };
    let limits = &cx.shared.limits;
    // Tasks have their own pool, counted when the task is created.
    if task.is_none() && cx.in_flight >= limits.max_in_flight.get() {
        return Err(McpError::Overloaded {
            limit: limits.max_in_flight.get(),
        });
    }
    let arguments = match params.arguments.take() {
        None => Value::Object(Map::new()),
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => return Err(McpError::InvalidParams("arguments must be an object")),
    };
    if params.arguments_out_of_range {
        // Where the number was, the value reads `null`: refused before anything looks at it.
        return Err(McpError::NumberOutOfRange);
    }
    if let Value::Object(map) = &arguments {
        arguments::check(map, limits)?;
    }
    let violations = tool.validator.validate(&arguments);
    if !violations.is_empty() {
        let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
        let text = format!(
            "Invalid arguments for tool `{}`: {}.",
            tool.name.as_str(),
            listed.join("; ")
        );
        write_call_result(cx.shared, id, &ToolOutput::error(text), version, out);
        return Ok(Dispatched::Answered);
    }
    let Value::Object(arguments) = arguments else {
        return Err(McpError::Internal("arguments changed type"));
    };
    let log_level = if version.is_modern() {
        lifecycle::requested_log_level(params.meta.as_ref())
    } else {
        None
    };
    let round = if version.is_modern() {
        let can = ClientCan::declared(lifecycle::client_capabilities(params.meta.as_ref()));
        Some(Arc::new(Round::open(
            &cx.shared.request_states,
            ("tools/call", tool.name.as_str(), &arguments),
            can,
            params.input_responses.take(),
            params.request_state.as_ref(),
        )?))
    } else {
        None
    };
    let plan = Plan {
        tool,
        arguments,
        version,
        progress_token,
        round,
        log_level,
    };
    Ok(match task {
        Some(start) => Dispatched::Task(plan, start),
        None => Dispatched::Call(plan),
    })
}

/// The `ttl` a call's `task` asks for (milliseconds from creation), if any: `task` is an
/// object whose only member may be `ttl`, a number of at least 0.
fn task_ttl(task: &Value) -> Result<Option<u64>, McpError> {
    const MALFORMED: McpError =
        McpError::InvalidParams("task must be an object with at most a ttl in milliseconds");
    let Value::Object(task) = task else {
        return Err(MALFORMED);
    };
    if task.keys().any(|key| key != "ttl") {
        return Err(MALFORMED);
    }
    match task.get("ttl") {
        None => Ok(None),
        Some(Value::Number(ttl)) => {
            if let Some(ttl) = ttl.as_u64() {
                Ok(Some(ttl))
            } else {
                match ttl.as_f64() {
                    // A fraction of a millisecond, or more milliseconds than a u64 holds.
                    Some(ttl) if ttl >= 0.0 => Ok(Some(u64::MAX)),
                    _ => Err(MALFORMED),
                }
            }
        }
        Some(_) => Err(MALFORMED),
    }
}

/// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (2025-11-25 sessions): every
/// lookup is by this session's owner and the id together, so another owner's task is not
/// found, as an id never issued is not.
fn tasks(
    mut cx: Context<'_>,
    id: &RequestId,
    method: RequestMethod,
    params: Option<&Params<'_>>,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    let none = Params::default();
    let params = params.unwrap_or(&none);
    if version.is_modern() {
        return modern_tasks(cx, id, method, params, out);
    }
    if !version.has_tasks() || method == RequestMethod::TasksUpdate {
        return Err(McpError::MethodNotFound);
    }
    let owner = cx.owner()?;
    let table = &cx.shared.tasks;
    if method == RequestMethod::TasksList {
        if list_cursor(params)?.is_some() {
            // One page holds every task an owner may keep: no cursor is ever issued.
            return Err(McpError::InvalidCursor);
        }
        response::write_result(out, id, &serde_json::json!({ "tasks": table.list(&owner) }));
        return Ok(Dispatched::Answered);
    }
    only_members(params, &[ParamKey::TaskId, ParamKey::Meta])?;
    let task = match &params.task_id {
        Some(Text::Str(task)) => TaskId::parse(task),
        _ => None,
    };
    match method {
        RequestMethod::TasksGet => response::write_result(out, id, &table.get(&owner, task)?),
        RequestMethod::TasksCancel => {
            response::write_result(out, id, &table.cancel(&owner, task)?);
        }
        _ => match table.result(&owner, task)? {
            Waiting::Ended(ended) => {
                let Final::Output(output) = &*ended else {
                    return Err(McpError::ToolPanicked);
                };
                let task = task.map(|task| task.to_string());
                response::write_call_result_of(
                    out,
                    id,
                    output,
                    (version, &cx.shared.info),
                    task.as_deref(),
                );
            }
            Waiting::Running {
                done,
                tool,
                timeout,
            } => {
                if cx.in_flight >= cx.shared.limits.max_in_flight.get() {
                    return Err(McpError::Overloaded {
                        limit: cx.shared.limits.max_in_flight.get(),
                    });
                }
                let task = task.ok_or(McpError::UnknownTask)?;
                return Ok(Dispatched::Wait(Wait {
                    task,
                    done,
                    tool,
                    timeout,
                }));
            }
        },
    }
    Ok(Dispatched::Answered)
}

/// `tasks/get`, `tasks/update` and `tasks/cancel` of the 2026-07-28 extension, for a request
/// that declared it (`-32021` otherwise): looked up by owner and id together, as in
/// 2025-11-25. `tasks/get` shows the result inline once the task ended; `tasks/update` (no task
/// of this server asks for input) and `tasks/cancel` (of a running or an ended task) are
/// acknowledged.
fn modern_tasks(
    mut cx: Context<'_>,
    id: &RequestId,
    method: RequestMethod,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<Dispatched, McpError> {
    if !task_table::declared(params.meta.as_ref()) {
        return Err(McpError::MissingTasksExtension);
    }
    if !task_table::serves_extension(cx.client) {
        // Not offered to this client (`server/discover` did not list it).
        return Err(McpError::MethodNotFound);
    }
    if method == RequestMethod::TasksUpdate {
        only_members(
            params,
            &[ParamKey::TaskId, ParamKey::InputResponses, ParamKey::Meta],
        )?;
    } else {
        only_members(params, &[ParamKey::TaskId, ParamKey::Meta])?;
    }
    let task = match &params.task_id {
        Some(Text::Str(task)) => TaskId::parse(task),
        _ => None,
    };
    let owner = cx.owner()?;
    let table = &cx.shared.tasks;
    let version = ProtocolVersion::V2026_07_28;
    match method {
        RequestMethod::TasksGet => {
            let view = table.get_modern(&owner, task, false)?;
            write_for_version(cx.shared, id, &view, version, out);
        }
        RequestMethod::TasksCancel => {
            table.cancel_modern(&owner, task)?;
            write_for_version(cx.shared, id, &Empty {}, version, out);
        }
        RequestMethod::TasksUpdate => {
            // Answers to input requests this server never makes are ignored, as the
            // extension says of unknown keys; the id must still be the caller's task.
            table.get_modern(&owner, task, true)?;
            write_for_version(cx.shared, id, &Empty {}, version, out);
        }
        _ => return Err(McpError::MethodNotFound),
    }
    Ok(Dispatched::Answered)
}

/// Writes a `tools/call` result in the shape of `version`.
pub(crate) fn write_call_result(
    shared: &Shared,
    id: &RequestId,
    output: &ToolOutput,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) {
    response::write_call_result(out, id, output, version, &shared.info);
}

/// Writes a result as `version` shapes it: a modern one carries `resultType` and
/// `_meta.serverInfo` around the body, a legacy one is the body alone.
fn write_for_version<T: serde::Serialize>(
    shared: &Shared,
    id: &RequestId,
    body: &T,
    version: ProtocolVersion,
    out: &mut Vec<u8>,
) {
    if version.is_modern() {
        response::write_result(
            out,
            id,
            &Modern {
                body,
                info: &shared.info,
            },
        );
    } else {
        response::write_result(out, id, body);
    }
}

fn cache_hints(shared: &Shared) -> CacheHints {
    CacheHints {
        ttl_ms: u64::try_from(shared.limits.tools_list_ttl.as_millis()).unwrap_or(u64::MAX),
        cache_scope: "public",
    }
}

/// Refuses members `tools/call` and `prompts/get` do not define: `name`, `arguments`, `_meta`,
/// and in the modern era a retry's `inputResponses` and `requestState`.
///
/// `task` (a task-augmented call) is defined by 2025-11-25 alone. A server that does not
/// declare `tasks.requests.tools.call` MUST process such a request normally and ignore it
/// (2025-11-25, tasks, "Behavior Requirements"), so there it is allowed and not looked at;
/// in every other revision it is a member the method does not define.
fn only_call_members(params: &Params<'_>, version: ProtocolVersion) -> Result<(), McpError> {
    const LEGACY: [ParamKey; 3] = [ParamKey::Name, ParamKey::Arguments, ParamKey::Meta];
    const TASKS: [ParamKey; 4] = [
        ParamKey::Name,
        ParamKey::Arguments,
        ParamKey::Meta,
        ParamKey::Task,
    ];
    const MODERN: [ParamKey; 5] = [
        ParamKey::Name,
        ParamKey::Arguments,
        ParamKey::Meta,
        ParamKey::InputResponses,
        ParamKey::RequestState,
    ];
    only_members(
        params,
        if version.is_modern() {
            &MODERN
        } else if version.has_tasks() {
            &TASKS
        } else {
            &LEGACY
        },
    )
}

/// Refuses params members a method does not define: an unexpected member is either a client
/// bug or an attempt to smuggle something past a check that does not look at it.
fn only_members(params: &Params<'_>, allowed: &[ParamKey]) -> Result<(), McpError> {
    if params.only(allowed) {
        Ok(())
    } else {
        Err(McpError::InvalidParams(
            "params has a member the method does not define",
        ))
    }
}
