//! What we write: one JSON-RPC message per line, results and errors.
//!
//! Every line leaves through [`write_result`], [`write_error`] or [`write_notification`], so
//! output is always strict JSON (serde_json never writes `NaN`) on exactly one line (it never
//! writes a raw newline: newlines in strings are escaped). Error objects come only from
//! [`McpError::to_wire`].

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use crate::error::McpError;
use crate::id::RequestId;
use crate::output::{Content, ResourceBody, ToolOutput};
use crate::prompts::PromptMessage;
use crate::tools::Listing;
use crate::version::ProtocolVersion;

/// Appends a result line for `id`.
pub(crate) fn write_result<T: Serialize>(out: &mut Vec<u8>, id: &RequestId, result: &T) {
    write_reply(out, Some(id), b"result", result);
}

/// [`write_result`], unless the result is over `max` bytes as serialised: then nothing is
/// appended and `false` returned. Serialising stops as soon as it passes `max`, so a result
/// that would be huge never takes more than `max` bytes of memory here.
pub(crate) fn write_result_within<T: Serialize>(
    out: &mut Vec<u8>,
    id: &RequestId,
    result: &T,
    max: usize,
) -> bool {
    let start = out.len();
    write_head(out, Some(id), b"result");
    let capped = Capped {
        out: &mut *out,
        left: max,
    };
    let fits = serde_json::to_writer(capped, result).is_ok();
    if fits {
        out.extend_from_slice(b"}\n");
    } else {
        out.truncate(start);
    }
    fits
}

/// Writes into a buffer until `left` bytes are used, then fails.
struct Capped<'a> {
    out: &'a mut Vec<u8>,
    left: usize,
}

impl std::io::Write for Capped<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.left = self
            .left
            .checked_sub(bytes.len())
            .ok_or_else(|| std::io::Error::other("over the cap"))?;
        self.out.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Appends an error line for `id` (`null` when the id could not be read).
pub(crate) fn write_error(out: &mut Vec<u8>, id: Option<&RequestId>, error: &McpError) {
    write_reply(out, id, b"error", &error.to_wire());
}

/// Appends `{"jsonrpc":"2.0","id":…,"<member>":…}` and a newline. The fixed parts are copied
/// as bytes rather than serialised field by field; the id is the peer's checked JSON text,
/// echoed verbatim (one token: a string or an integer, which holds no raw newline). On a
/// (never expected) serialisation failure the partial bytes are rolled back, so the stream
/// stays one message per line.
fn write_reply<T: Serialize>(out: &mut Vec<u8>, id: Option<&RequestId>, member: &[u8], body: &T) {
    let start = out.len();
    write_head(out, id, member);
    match serde_json::to_writer(&mut *out, body) {
        Ok(()) => out.extend_from_slice(b"}\n"),
        Err(_) => {
            out.truncate(start);
            tracing::error!("a reply could not be serialised and was dropped");
        }
    }
}

/// `{"jsonrpc":"2.0","id":…,"<member>":`, the part of a reply before its body.
fn write_head(out: &mut Vec<u8>, id: Option<&RequestId>, member: &[u8]) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    match id {
        Some(id) => id.write_to(out),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"");
    out.extend_from_slice(member);
    out.extend_from_slice(b"\":");
}

/// Appends a notification line.
pub(crate) fn write_notification<T: Serialize>(
    out: &mut Vec<u8>,
    method: &'static str,
    params: &T,
) {
    write_line(
        out,
        &NotificationLine {
            jsonrpc: "2.0",
            method,
            params,
        },
    );
}

/// Appends a request the server sends the client (elicitation, sampling) as one line: the
/// id is the server's own number, the params the server's own text.
pub(crate) fn write_request<T: Serialize>(
    out: &mut Vec<u8>,
    id: u64,
    method: &'static str,
    params: &T,
) {
    write_line(
        out,
        &RequestLine {
            jsonrpc: "2.0",
            id,
            method,
            params,
        },
    );
}

#[derive(Serialize)]
struct RequestLine<'a, T> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: &'a T,
}

#[derive(Serialize)]
struct NotificationLine<'a, T> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a T,
}

/// `notifications/progress` params.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProgressParams<'a> {
    pub(crate) progress_token: &'a Value,
    pub(crate) progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<&'a str>,
}

/// Serialises `message` and a newline; on a (never expected) serialisation failure, rolls the
/// partial bytes back so the stream stays one message per line.
fn write_line<T: Serialize>(out: &mut Vec<u8>, message: &T) {
    let start = out.len();
    match serde_json::to_writer(&mut *out, message) {
        Ok(()) => out.push(b'\n'),
        Err(_) => {
            out.truncate(start);
            tracing::error!("a reply could not be serialised and was dropped");
        }
    }
}

/// The server's self-description (MCP `Implementation`).
#[derive(Clone, Debug)]
pub(crate) struct ServerInfo {
    /// Machine name.
    pub(crate) name: String,
    /// Version string.
    pub(crate) version: String,
    /// Display name (sent to clients of 2025-06-18 and later).
    pub(crate) title: Option<String>,
    /// Members the operator publishes beside the server's description: the `_meta` of the
    /// `initialize` result, and beside `io.modelcontextprotocol/serverInfo` in a 2026-07-28
    /// result's `_meta` (`airlock serve` publishes its catalog's digest there).
    pub(crate) meta: Option<serde_json::Map<String, Value>>,
}

/// `serverInfo` as a client of a given revision may see it.
pub(crate) struct InfoFor<'a> {
    pub(crate) info: &'a ServerInfo,
    pub(crate) version: ProtocolVersion,
}

impl Serialize for InfoFor<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.info.name)?;
        map.serialize_entry("version", &self.info.version)?;
        if let Some(title) = &self.info.title
            && self.version.has_implementation_title()
        {
            map.serialize_entry("title", title)?;
        }
        map.end()
    }
}

/// The capabilities we declare: tools, prompts when there are any; of the lists, only the
/// tools' may change while we run (a reload), and only legacy sessions are told.
pub(crate) struct Capabilities {
    /// Whether the server has prompts.
    pub(crate) prompts: bool,
    /// Whether the server has resources.
    pub(crate) resources: bool,
    /// Whether `resources/subscribe` is served (legacy sessions of a server built with
    /// subscriptions).
    pub(crate) subscribe: bool,
    /// Whether `completion/complete` is served (there is a prompt or a template).
    pub(crate) completions: bool,
    /// Whether the server logs to the client: `logging/setLevel` (legacy sessions), a request's
    /// `_meta.logLevel` (2026-07-28).
    pub(crate) logging: bool,
    /// Whether legacy sessions are told that the tool list changed (the server reloads).
    pub(crate) tools_list_changed: bool,
    /// Whether `tools/call` may run as a task, with `tasks/list` and `tasks/cancel`
    /// (2025-11-25 sessions of a server with a task tool).
    pub(crate) tasks: bool,
    /// Whether the 2026-07-28 tasks extension is served to this client
    /// (`extensions["io.modelcontextprotocol/tasks"]` in `server/discover`).
    pub(crate) tasks_extension: bool,
}

impl Serialize for Capabilities {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if self.completions {
            map.serialize_entry("completions", &serde_json::json!({}))?;
        }
        if self.logging {
            map.serialize_entry("logging", &serde_json::json!({}))?;
        }
        if self.prompts {
            map.serialize_entry("prompts", &serde_json::json!({"listChanged": false}))?;
        }
        if self.resources && self.subscribe {
            map.serialize_entry(
                "resources",
                &serde_json::json!({"listChanged": false, "subscribe": true}),
            )?;
        } else if self.resources {
            map.serialize_entry("resources", &serde_json::json!({"listChanged": false}))?;
        }
        if self.tasks_extension {
            map.serialize_entry(
                "extensions",
                &serde_json::json!({ crate::version::TASKS_EXTENSION: {} }),
            )?;
        }
        if self.tasks {
            map.serialize_entry(
                "tasks",
                &serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
            )?;
        }
        map.serialize_entry(
            "tools",
            &serde_json::json!({"listChanged": self.tools_list_changed}),
        )?;
        map.end()
    }
}

/// Legacy `initialize` result.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeResult<'a> {
    pub(crate) protocol_version: &'static str,
    pub(crate) capabilities: Capabilities,
    pub(crate) server_info: InfoFor<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instructions: Option<&'a str>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<&'a serde_json::Map<String, Value>>,
}

/// An empty result (`ping`).
#[derive(Serialize)]
pub(crate) struct Empty {}

/// `tools/list` result.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolsListResult<'a> {
    pub(crate) tools: Vec<Listing<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) cache: Option<CacheHints>,
}

/// `prompts/list` result.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptsListResult<'a> {
    pub(crate) prompts: Vec<crate::prompts::Listing<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) cache: Option<CacheHints>,
}

/// `prompts/get` result: the prompt's description and its messages, each content block as a
/// tool result's (audio only for clients of 2025-03-26 and later).
pub(crate) struct GetPromptResult<'a> {
    pub(crate) description: Option<&'a str>,
    pub(crate) messages: &'a [PromptMessage],
    pub(crate) version: ProtocolVersion,
}

impl Serialize for GetPromptResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Message<'a>(&'a PromptMessage);
        impl Serialize for Message<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("role", &self.0.role)?;
                map.serialize_entry("content", &Block(&self.0.content))?;
                map.end()
            }
        }
        struct Messages<'a>(&'a [PromptMessage], bool);
        impl Serialize for Messages<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let audio = self.1;
                serializer.collect_seq(
                    self.0
                        .iter()
                        .filter(|message| {
                            audio || !matches!(message.content, Content::Audio { .. })
                        })
                        .map(Message),
                )
            }
        }
        let mut map = serializer.serialize_map(None)?;
        if let Some(description) = self.description {
            map.serialize_entry("description", description)?;
        }
        map.serialize_entry(
            "messages",
            &Messages(self.messages, self.version.has_tool_annotations()),
        )?;
        map.end()
    }
}

/// `resources/list` or `resources/templates/list` result (`key` names the list).
pub(crate) struct ResourcesListResult<'a> {
    pub(crate) key: &'static str,
    pub(crate) listed: Vec<crate::resources::Listing<'a>>,
    pub(crate) next_cursor: Option<String>,
    pub(crate) cache: Option<CacheHints>,
}

impl Serialize for ResourcesListResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.key, &self.listed)?;
        if let Some(cursor) = &self.next_cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        if let Some(cache) = &self.cache {
            map.serialize_entry("ttlMs", &cache.ttl_ms)?;
            map.serialize_entry("cacheScope", cache.cache_scope)?;
        }
        map.end()
    }
}

/// `resources/read` result: one contents entry, text or base64 blob; for a modern request,
/// caching hints too.
pub(crate) struct ReadResourceResult<'a> {
    pub(crate) uri: &'a str,
    pub(crate) mime_type: Option<&'a str>,
    pub(crate) body: &'a ResourceBody,
    pub(crate) cache: Option<CacheHints>,
}

impl Serialize for ReadResourceResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(
            "contents",
            &[ResourceContents {
                uri: self.uri,
                mime_type: self.mime_type,
                body: self.body,
            }],
        )?;
        if let Some(cache) = &self.cache {
            map.serialize_entry("ttlMs", &cache.ttl_ms)?;
            map.serialize_entry("cacheScope", cache.cache_scope)?;
        }
        map.end()
    }
}

/// `completion/complete` result.
#[derive(Serialize)]
pub(crate) struct CompleteResult {
    pub(crate) completion: crate::completion::Completion,
}

/// Modern caching fields (`ttlMs`, `cacheScope`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CacheHints {
    pub(crate) ttl_ms: u64,
    pub(crate) cache_scope: &'static str,
}

/// Modern `server/discover` result body.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DiscoverResult<'a> {
    pub(crate) supported_versions: [&'static str; 1],
    pub(crate) capabilities: Capabilities,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instructions: Option<&'a str>,
    #[serde(flatten)]
    pub(crate) cache: CacheHints,
}

/// Appends the result line of a `tools/call` for `id`, shaped for `version`: audio blocks
/// only from 2025-03-26, `structuredContent` only from 2025-06-18, and for a modern request
/// `resultType` and `_meta` with `info`. The member names are copied as bytes; every string
/// and value inside is written by serde_json (escaped, one line). On a (never expected)
/// serialisation failure the partial bytes are rolled back.
pub(crate) fn write_call_result(
    out: &mut Vec<u8>,
    id: &RequestId,
    output: &ToolOutput,
    version: ProtocolVersion,
    info: &ServerInfo,
) {
    write_call_result_of(out, id, output, (version, info), None);
}

/// [`write_call_result`] of a task's run (`tasks/result`, 2025-11-25): its `_meta` names
/// the task (`io.modelcontextprotocol/related-task`), as that revision requires.
pub(crate) fn write_call_result_of(
    out: &mut Vec<u8>,
    id: &RequestId,
    output: &ToolOutput,
    (version, info): (ProtocolVersion, &ServerInfo),
    task: Option<&str>,
) {
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    id.write_to(out);
    out.extend_from_slice(br#","result":"#);
    let mut written = write_call_body(out, output, version);
    if version.is_modern() {
        out.extend_from_slice(br#","resultType":"complete","_meta":"#);
        let meta = MetaInfo(InfoFor {
            info,
            version: ProtocolVersion::V2026_07_28,
        });
        written = written.and_then(|()| serde_json::to_writer(&mut *out, &meta));
    } else if let Some(task) = task {
        out.extend_from_slice(br#","_meta":"#);
        let meta = serde_json::json!({
            "io.modelcontextprotocol/related-task": {"taskId": task},
        });
        written = written.and_then(|()| serde_json::to_writer(&mut *out, &meta));
    }
    out.extend_from_slice(b"}}\n");
    if written.is_err() {
        out.truncate(start);
        tracing::error!("a reply could not be serialised and was dropped");
    }
}

/// A tool's result as a 2026-07-28 task shows it once ended (`tasks/get`'s `result`): what
/// the `tools/call` would have answered, without the server's `_meta`; `None` if it could not
/// be serialised (logged).
pub(crate) fn call_result_raw(output: &ToolOutput) -> Option<Box<serde_json::value::RawValue>> {
    let mut out = Vec::new();
    let written = write_call_body(&mut out, output, ProtocolVersion::V2026_07_28);
    out.extend_from_slice(br#","resultType":"complete"}"#);
    let raw = written
        .ok()
        .and_then(|()| String::from_utf8(out).ok())
        .and_then(|text| serde_json::value::RawValue::from_string(text).ok());
    if raw.is_none() {
        tracing::error!("a task's result could not be serialised");
    }
    raw
}

/// Writes a `tools/call` result's members as `version` shapes them, from its opening brace
/// to before its closing one: `content`, `structuredContent`, `isError`.
fn write_call_body(
    out: &mut Vec<u8>,
    output: &ToolOutput,
    version: ProtocolVersion,
) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"content":["#);
    let audio = version.has_tool_annotations();
    let blocks = output
        .content
        .as_slice()
        .iter()
        .filter(|block| audio || !matches!(block, Content::Audio { .. }));
    let mut written = Ok(());
    for (index, block) in blocks.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        written = written.and_then(|()| match block {
            Content::Text(text) => {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                serde_json::to_writer(&mut *out, text).map(|()| out.push(b'}'))
            }
            other => serde_json::to_writer(&mut *out, &Block(other)),
        });
    }
    out.push(b']');
    if let Some(structured) = &output.structured
        && version.has_structured_output()
    {
        out.extend_from_slice(br#","structuredContent":"#);
        written = written.and_then(|()| serde_json::to_writer(&mut *out, structured));
    }
    if output.is_error {
        out.extend_from_slice(br#","isError":true"#);
    }
    written
}

/// One content block on the wire.
struct Block<'a>(&'a Content);

impl Serialize for Block<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.0 {
            Content::Text(text) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
            }
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
                let kind = if matches!(self.0, Content::Image { .. }) {
                    "image"
                } else {
                    "audio"
                };
                map.serialize_entry("type", kind)?;
                map.serialize_entry("data", data)?;
                map.serialize_entry("mimeType", mime_type)?;
            }
            Content::Resource {
                uri,
                mime_type,
                body,
            } => {
                map.serialize_entry("type", "resource")?;
                map.serialize_entry(
                    "resource",
                    &ResourceContents {
                        uri,
                        mime_type: mime_type.as_deref(),
                        body,
                    },
                )?;
            }
        }
        map.end()
    }
}

struct ResourceContents<'a> {
    uri: &'a str,
    mime_type: Option<&'a str>,
    body: &'a ResourceBody,
}

impl Serialize for ResourceContents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("uri", self.uri)?;
        if let Some(mime_type) = self.mime_type {
            map.serialize_entry("mimeType", mime_type)?;
        }
        match self.body {
            ResourceBody::Text(text) => map.serialize_entry("text", text)?,
            ResourceBody::Blob(blob) => map.serialize_entry("blob", blob)?,
        }
        map.end()
    }
}

/// A modern result: the body, plus `resultType` and `_meta.serverInfo`.
/// Writes a 2026-07-28 `input_required` result: the questions, and the state to send back.
pub(crate) fn write_input_required(
    out: &mut Vec<u8>,
    id: &RequestId,
    requests: &serde_json::Map<String, Value>,
    state: &str,
    info: &ServerInfo,
) {
    write_result(
        out,
        id,
        &InputRequired {
            requests,
            state,
            info,
        },
    );
}

struct InputRequired<'a> {
    requests: &'a serde_json::Map<String, Value>,
    state: &'a str,
    info: &'a ServerInfo,
}

impl Serialize for InputRequired<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("resultType", "input_required")?;
        map.serialize_entry("inputRequests", self.requests)?;
        map.serialize_entry("requestState", self.state)?;
        map.serialize_entry(
            "_meta",
            &MetaInfo(InfoFor {
                info: self.info,
                version: ProtocolVersion::V2026_07_28,
            }),
        )?;
        map.end()
    }
}

pub(crate) struct Modern<'a, T> {
    pub(crate) body: T,
    pub(crate) info: &'a ServerInfo,
}

impl<T: Serialize> Serialize for Modern<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        modern(&self.body, self.info, "complete", serializer)
    }
}

/// A 2026-07-28 `CreateTaskResult`: the task's fields, `resultType: "task"` (the one result
/// of that type) and the server's `_meta`.
pub(crate) struct TaskCreated<'a, T> {
    pub(crate) body: T,
    pub(crate) info: &'a ServerInfo,
}

impl<T: Serialize> Serialize for TaskCreated<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        modern(&self.body, self.info, "task", serializer)
    }
}

/// A 2026-07-28 result: `body`'s members, `resultType`, and `_meta` holding the server's
/// description and the body's own `_meta` members.
fn modern<T: Serialize, S: Serializer>(
    body: &T,
    info: &ServerInfo,
    result_type: &'static str,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    // Flattening through a Value keeps this generic over any body; results are small.
    let body = serde_json::to_value(body).map_err(serde::ser::Error::custom)?;
    let mut meta = serde_json::to_value(MetaInfo(InfoFor {
        info,
        version: ProtocolVersion::V2026_07_28,
    }))
    .map_err(serde::ser::Error::custom)?;
    let mut map = serializer.serialize_map(None)?;
    if let Value::Object(fields) = &body {
        for (key, value) in fields {
            if key == "_meta" {
                if let (Value::Object(meta), Value::Object(own)) = (&mut meta, value) {
                    for (key, value) in own {
                        meta.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
            } else {
                map.serialize_entry(key, value)?;
            }
        }
    }
    map.serialize_entry("resultType", result_type)?;
    map.serialize_entry("_meta", &meta)?;
    map.end()
}

struct MetaInfo<'a>(InfoFor<'a>);

/// The `_meta` member a 2026-07-28 result carries the server's description in.
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

impl Serialize for MetaInfo<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(SERVER_INFO_META, &self.0)?;
        for (key, value) in self.0.info.meta.iter().flatten() {
            // The server's own description is the library's to write.
            if key != SERVER_INFO_META {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> RequestId {
        RequestId::parse(text).unwrap()
    }

    /// The `result` of a call's reply line, as a client reads it.
    fn call_result(output: &ToolOutput, version: ProtocolVersion) -> Value {
        let info = ServerInfo {
            name: "t".into(),
            version: "1".into(),
            title: None,
            meta: None,
        };
        let mut out = Vec::new();
        write_call_result(&mut out, &id("5"), output, version, &info);
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(out.last(), Some(&b'\n'));
        let line: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(line["jsonrpc"], "2.0");
        assert_eq!(line["id"], 5);
        line["result"].clone()
    }

    #[test]
    fn lines_are_single_json_messages_with_the_id_verbatim() {
        let mut out = Vec::new();
        write_result(&mut out, &id("18446744073709551615"), &Empty {});
        write_error(&mut out, None, &McpError::Batch);
        write_result(
            &mut out,
            &id(r#""line\nbreak""#),
            &ToolOutput::text("a\nb").text_content(),
        );
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#
        );
        assert!(lines[1].starts_with(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600"#));
        assert_eq!(
            lines[2],
            r#"{"jsonrpc":"2.0","id":"line\nbreak","result":"a\nb"}"#
        );
    }

    #[test]
    fn media_and_resource_blocks_have_their_wire_shape() {
        let output = ToolOutput::content(vec![
            Content::image(b"png", "image/png"),
            Content::audio(b"wav", "audio/wav"),
            Content::resource_text("test://r", "text/plain", "hi"),
            Content::resource_blob("test://b", "application/octet-stream", b"\x00"),
        ]);
        let wire = call_result(&output, ProtocolVersion::V2025_11_25);
        assert_eq!(
            wire["content"],
            serde_json::json!([
                {"type": "image", "data": "cG5n", "mimeType": "image/png"},
                {"type": "audio", "data": "d2F2", "mimeType": "audio/wav"},
                {"type": "resource", "resource":
                    {"uri": "test://r", "mimeType": "text/plain", "text": "hi"}},
                {"type": "resource", "resource":
                    {"uri": "test://b", "mimeType": "application/octet-stream", "blob": "AA=="}},
            ])
        );
        let old = call_result(&output, ProtocolVersion::V2024_11_05);
        assert_eq!(
            old["content"].as_array().unwrap().len(),
            3,
            "no audio in 2024-11-05"
        );
    }

    #[test]
    fn call_results_escape_text_and_carry_the_modern_members() {
        let output = ToolOutput::error("a \"quoted\"\nline\u{2028}and \\ more");
        let legacy = call_result(&output, ProtocolVersion::V2025_11_25);
        assert_eq!(
            legacy,
            serde_json::json!({
                "content": [{"type": "text", "text": "a \"quoted\"\nline\u{2028}and \\ more"}],
                "isError": true
            })
        );
        let modern = call_result(&ToolOutput::text("ok"), ProtocolVersion::V2026_07_28);
        assert_eq!(
            modern["content"],
            serde_json::json!([{"type": "text", "text": "ok"}])
        );
        assert_eq!(modern["resultType"], "complete");
        assert_eq!(
            modern["_meta"]["io.modelcontextprotocol/serverInfo"],
            serde_json::json!({"name": "t", "version": "1"})
        );
        assert!(modern.get("isError").is_none());
        let empty = call_result(
            &ToolOutput::content(Vec::new()),
            ProtocolVersion::V2024_11_05,
        );
        assert_eq!(empty, serde_json::json!({"content": []}));
    }

    #[test]
    fn structured_content_is_left_out_for_older_revisions() {
        let output = ToolOutput::structured(serde_json::json!({"n": 1}));
        let new = call_result(&output, ProtocolVersion::V2025_06_18);
        assert_eq!(new["structuredContent"], serde_json::json!({"n": 1}));
        let old = call_result(&output, ProtocolVersion::V2025_03_26);
        assert!(old.get("structuredContent").is_none());
        assert_eq!(old["content"][0]["text"], r#"{"n":1}"#);
    }
}
