//! Tools: what a server offers, checked when the server is built and frozen afterwards.
//!
//! A [`Tool`] is a name, a description, an input schema and a [`Handler`]. The [`Registry`]
//! validates every tool once (name rules, a description, a schema the validator supports),
//! then never changes: `tools/list` pages over it with cursors that name the registry they
//! came from, and `tools/call` finds tools in it by exact name. Tool authors are trusted; the
//! arguments their handlers receive have passed the bounds of [`arguments`] and the tool's
//! schema.

pub(crate) mod arguments;
pub(crate) mod schema;
pub(crate) mod typed;

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::error::McpError;
use crate::handler::Handler;
use crate::limits::{MAX_SCOPE_BYTES, MAX_TOOL_NAME_BYTES, MAX_TOOL_SCOPES, MAX_TOOLS_COUNT, Rate};
use crate::version::ProtocolVersion;

pub use typed::{HandlerFn, IntoToolOutput, NoArguments, Structured, ToolBuilder};

/// Hints about a tool's behaviour (MCP `ToolAnnotations`). Clients treat them as untrusted.
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(rename = "readOnlyHint", skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy data (meaningful when not read-only).
    #[serde(rename = "destructiveHint", skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Repeating a call has no further effect (meaningful when not read-only).
    #[serde(rename = "idempotentHint", skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool talks to an open world (the network) rather than a closed one.
    #[serde(rename = "openWorldHint", skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// Read-only, touching only a closed world: the common shape of a safe tool.
    pub fn read_only() -> Self {
        Self {
            read_only: Some(true),
            open_world: Some(false),
            ..Self::default()
        }
    }
}

/// Whether a tool runs as a task when a client asks (2025-11-25's `execution.taskSupport`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum TaskMode {
    /// Never: an ordinary call only (`taskSupport` absent, which means `forbidden`). A call
    /// that asks for a task is refused `-32601` when the server offers tasks at all.
    #[default]
    Never,
    /// As the client asks: a task when it asks for one, else an ordinary call under the
    /// ordinary timeout (`"optional"`).
    Optional,
    /// Only as a task (`"required"`): an ordinary call is refused `-32601`.
    Always,
}

impl TaskMode {
    /// The word `tools/list` shows in `execution.taskSupport`; `None` for [`TaskMode::Never`]
    /// (absent means forbidden).
    pub(crate) fn support(self) -> Option<&'static str> {
        match self {
            Self::Never => None,
            Self::Optional => Some("optional"),
            Self::Always => Some("required"),
        }
    }
}

/// A tool as its author describes it; checked when the server is built.
pub struct Tool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) annotations: Option<ToolAnnotations>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) task: TaskMode,
    pub(crate) task_timeout: Option<Duration>,
    pub(crate) rate: Option<Rate>,
    pub(crate) scopes: Vec<String>,
    pub(crate) handler: Arc<dyn Handler>,
}

impl Tool {
    /// Starts describing a tool named `name`; [`ToolBuilder::handler`] finishes it.
    ///
    /// ```
    /// use airlock::{NoArguments, Tool};
    ///
    /// let tool = Tool::builder("hello")
    ///     .description("Says hello")
    ///     .handler(|_: NoArguments| async { "hello" });
    /// assert_eq!(tool.name(), "hello");
    /// ```
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder::new(name.into())
    }

    /// The tool's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `scope` may be one of a tool's OAuth scopes ([`ToolBuilder::scopes`]): an RFC
    /// 6749 scope token (visible ASCII but `"` and `\`) of 1 to
    /// [`MAX_SCOPE_BYTES`](crate::limits::MAX_SCOPE_BYTES) bytes.
    pub fn is_scope(scope: &str) -> bool {
        is_scope(scope)
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why a set of tools cannot be served. Raised when the server is built, never at run time.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name.
    #[error("tool `{0}` is registered twice")]
    DuplicateTool(String),
    /// A tool name breaks `^[A-Za-z0-9_.-]{{1,64}}$`.
    #[error("tool name {0:?} must be 1 to 64 characters of A-Z a-z 0-9 _ . -")]
    InvalidToolName(String),
    /// A tool without a description (clients and the conformance suite require one): none
    /// given to the builder, and no doc comment on its argument type.
    #[error(
        "tool `{0}` has no description: give one with `.description(…)` or a doc comment on \
         its argument type"
    )]
    MissingDescription(String),
    /// A tool's input schema is outside what the validator supports.
    #[error("tool `{tool}`: input schema: {source}")]
    InputSchema {
        /// The tool.
        tool: String,
        /// Why.
        source: schema::SchemaError,
    },
    /// A tool's output schema does not describe an object.
    #[error("tool `{0}`: the output schema must have \"type\": \"object\"")]
    OutputSchemaNotObject(String),
    /// More tools than [`MAX_TOOLS_COUNT`].
    #[error("more than {MAX_TOOLS_COUNT} tools")]
    TooManyTools,
    /// The operating system's random source failed (the key of request states is drawn
    /// from it).
    #[error("the operating system's random source failed")]
    NoRandomness,
    /// A zero or absurd timeout.
    #[error("tool `{0}`: the timeout must be between 1 ms and 24 h")]
    InvalidTimeout(String),
    /// Two prompts share a name.
    #[error("prompt `{0}` is registered twice")]
    DuplicatePrompt(String),
    /// A prompt name breaks `^[A-Za-z0-9_.-]{{1,64}}$`.
    #[error("prompt name {0:?} must be 1 to 64 characters of A-Z a-z 0-9 _ . -")]
    InvalidPromptName(String),
    /// A prompt whose argument type has a property that is not a string (prompt arguments
    /// are strings on the wire: `String`, or `Option<String>` for an optional one).
    #[error("prompt `{0}`: every argument must be a `String` or an `Option<String>`")]
    PromptArgumentNotText(String),
    /// A prompt whose form ([`PromptBuilder::asking`](crate::PromptBuilder::asking)) has a
    /// field that is not a text argument the prompt declares.
    #[error("prompt `{0}`: every field of its form must be a text argument it declares")]
    InvalidPromptForm(String),
    /// More prompts than [`MAX_PROMPTS_COUNT`](crate::limits::MAX_PROMPTS_COUNT).
    #[error("more than {} prompts", crate::limits::MAX_PROMPTS_COUNT)]
    TooManyPrompts,
    /// Two resources (or templates) share a URI.
    #[error("resource `{0}` is registered twice")]
    DuplicateResource(String),
    /// A resource without a name, or whose URI is empty, longer than
    /// [`MAX_RESOURCE_URI_BYTES`](crate::limits::MAX_RESOURCE_URI_BYTES) or holds a control
    /// character; a fixed one whose URI holds `{` or `}`; a template that is not RFC 6570
    /// level 1 (literals and `{name}`, no two variables side by side) or whose variables are
    /// not exactly the fields of its type, each a `String`.
    #[error("resource {0:?}: not a valid resource URI or template for its type")]
    InvalidResource(String),
    /// A completer for an argument the prompt does not declare (or a variable the template
    /// does not have, or on a fixed resource).
    #[error("`{0}`: a completer names an argument it does not have")]
    InvalidCompletion(String),
    /// More resources than [`MAX_RESOURCES_COUNT`](crate::limits::MAX_RESOURCES_COUNT).
    #[error("more than {} resources", crate::limits::MAX_RESOURCES_COUNT)]
    TooManyResources,
    /// A scope that is not an RFC 6749 scope token of at most `MAX_SCOPE_BYTES`, or more
    /// than `MAX_TOOL_SCOPES` scopes.
    #[error(
        "tool `{0}`: scopes must be at most {MAX_TOOL_SCOPES} words of 1 to {MAX_SCOPE_BYTES} \
         visible ASCII characters other than \" and \\"
    )]
    InvalidScope(String),
    /// A key for `requestState`s
    /// ([`ServerBuilder::request_state_key`](crate::ServerBuilder::request_state_key)) shorter
    /// than [`MIN_REQUEST_STATE_KEY_BYTES`](crate::limits::MIN_REQUEST_STATE_KEY_BYTES).
    #[error(
        "the request state key must be at least {} random bytes",
        crate::limits::MIN_REQUEST_STATE_KEY_BYTES
    )]
    WeakRequestStateKey,
    /// A reload ([`Server::replace_tools`](crate::Server::replace_tools)) would change the
    /// scopes a tool requires, or add a tool that requires any: the OAuth metadata names the
    /// scopes at start, and a call's scope check and its start must see the same tool.
    #[error(
        "tool `{0}`: a reload cannot add or change the scopes a tool requires (restart to \
         change them)"
    )]
    ScopesChanged(String),
}

/// A tool name proven to match `^[A-Za-z0-9_.-]{1,64}$`.
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub struct ToolName(Box<str>);

impl ToolName {
    /// Checks `name`.
    ///
    /// # Errors
    ///
    /// [`BuildError::InvalidToolName`] when the name breaks the rule.
    pub fn parse(name: &str) -> Result<Self, BuildError> {
        let valid = !name.is_empty()
            && name.len() <= MAX_TOOL_NAME_BYTES
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !valid {
            return Err(BuildError::InvalidToolName(name.to_owned()));
        }
        Ok(Self(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A tool checked and ready to serve.
pub(crate) struct ToolDef {
    pub(crate) name: ToolName,
    title: Option<String>,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    annotations: Option<ToolAnnotations>,
    pub(crate) timeout: Option<Duration>,
    /// Whether the tool runs as a task when a client asks.
    pub(crate) task: TaskMode,
    /// The deadline of its task runs, if not the server's `task_timeout`.
    pub(crate) task_timeout: Option<Duration>,
    rate: Option<Rate>,
    /// Scopes an OAuth caller must hold, sorted and without repeats.
    pub(crate) scopes: Box<[Box<str>]>,
    pub(crate) validator: schema::Validator,
    pub(crate) handler: Arc<dyn Handler>,
    /// The tool's metrics series, set when a server with metrics puts the tool in force, so
    /// that a call counts without a lookup.
    #[cfg(feature = "metrics")]
    pub(crate) series: std::sync::OnceLock<Arc<crate::metrics::ToolSeries>>,
}

impl ToolDef {
    fn new(tool: Tool) -> Result<Self, BuildError> {
        let name = ToolName::parse(&tool.name)?;
        if tool.description.trim().is_empty() {
            return Err(BuildError::MissingDescription(tool.name));
        }
        let validator = schema::Validator::compile(&tool.input_schema).map_err(|source| {
            BuildError::InputSchema {
                tool: tool.name.clone(),
                source,
            }
        })?;
        if let Some(output) = &tool.output_schema
            && output.get("type") != Some(&Value::from("object"))
        {
            return Err(BuildError::OutputSchemaNotObject(tool.name));
        }
        if let Some(timeout) = tool.timeout
            && (timeout < Duration::from_millis(1) || timeout > crate::limits::MAX_TOOL_TIMEOUT)
        {
            return Err(BuildError::InvalidTimeout(tool.name));
        }
        if let Some(timeout) = tool.task_timeout
            && (timeout < Duration::from_millis(1) || timeout > crate::limits::MAX_TASK_TIMEOUT)
        {
            return Err(BuildError::InvalidTimeout(tool.name));
        }
        if tool.scopes.len() > MAX_TOOL_SCOPES || !tool.scopes.iter().all(|s| is_scope(s)) {
            return Err(BuildError::InvalidScope(tool.name));
        }
        let scopes: std::collections::BTreeSet<Box<str>> = tool
            .scopes
            .iter()
            .map(|scope| scope.as_str().into())
            .collect();
        Ok(Self {
            name,
            scopes: scopes.into_iter().collect(),
            title: tool.title,
            description: tool.description,
            input_schema: tool.input_schema,
            output_schema: tool.output_schema,
            annotations: tool.annotations,
            timeout: tool.timeout,
            task: tool.task,
            task_timeout: tool.task_timeout,
            rate: tool.rate,
            validator,
            handler: tool.handler,
            #[cfg(feature = "metrics")]
            series: std::sync::OnceLock::new(),
        })
    }

    /// The tool as `tools/list` shows it to a client of `version`.
    pub(crate) fn listing(&self, version: ProtocolVersion) -> Listing<'_> {
        let structured = version.has_structured_output();
        Listing {
            name: self.name.as_str(),
            title: self.title.as_deref().filter(|_| structured),
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: self.output_schema.as_ref().filter(|_| structured),
            annotations: self
                .annotations
                .as_ref()
                .filter(|_| version.has_tool_annotations()),
            execution: self
                .task
                .support()
                .filter(|_| version.has_tasks())
                .map(|task_support| Execution { task_support }),
        }
    }
}

/// Whether `scope` is an RFC 6749 scope token (`%x21 / %x23-5B / %x5D-7E`, so no space, `"`
/// or `\`) of 1 to [`MAX_SCOPE_BYTES`] bytes: the form a token's `scope` claim and a
/// `WWW-Authenticate` challenge can carry unquoted-safe.
pub(crate) fn is_scope(scope: &str) -> bool {
    !scope.is_empty()
        && scope.len() <= MAX_SCOPE_BYTES
        && scope
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}

/// The wire form of one tool in `tools/list`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listing<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a ToolAnnotations>,
    /// 2025-11-25: whether the tool runs as a task (absent: forbidden).
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<Execution>,
}

/// A tool's `execution` (2025-11-25).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Execution {
    task_support: &'static str,
}

/// Every tool of a server, in registration order, frozen at start.
pub(crate) struct Registry {
    tools: Vec<Arc<ToolDef>>,
    /// Index by exact name: ordered, so a lookup by a peer's name costs a few comparisons and
    /// no hashing.
    by_name: BTreeMap<Box<str>, usize>,
    /// Names a cursor with the tool list it pages through.
    fingerprint: u64,
}

impl Registry {
    /// Whether a tool of this set may run as a task (the server then declares `tasks`).
    pub(crate) fn offers_tasks(&self) -> bool {
        self.tools.iter().any(|tool| tool.task != TaskMode::Never)
    }

    /// Checks `tools` and freezes them.
    ///
    /// # Errors
    ///
    /// The first [`BuildError`] found.
    pub(crate) fn new(tools: Vec<Tool>) -> Result<Self, BuildError> {
        if tools.len() > MAX_TOOLS_COUNT {
            return Err(BuildError::TooManyTools);
        }
        let mut defs = Vec::with_capacity(tools.len());
        let mut by_name = BTreeMap::new();
        let mut hasher = DefaultHasher::new();
        for tool in tools {
            let def = ToolDef::new(tool)?;
            let name: Box<str> = def.name.as_str().into();
            name.hash(&mut hasher);
            if by_name.insert(name.clone(), defs.len()).is_some() {
                return Err(BuildError::DuplicateTool(name.into()));
            }
            defs.push(Arc::new(def));
        }
        Ok(Self {
            tools: defs,
            by_name,
            fingerprint: hasher.finish(),
        })
    }

    /// The tools that have a quota of their own, with it.
    pub(crate) fn rates(&self) -> impl Iterator<Item = (&str, Rate)> {
        self.tools
            .iter()
            .filter_map(|tool| tool.rate.map(|rate| (tool.name.as_str(), rate)))
    }

    /// Every scope some tool requires, sorted, once each (RFC 9728 `scopes_supported`).
    #[cfg_attr(
        not(any(feature = "oauth", test)),
        expect(dead_code, reason = "used by OAuth only")
    )]
    pub(crate) fn scopes(&self) -> std::collections::BTreeSet<&str> {
        self.tools
            .iter()
            .flat_map(|tool| tool.scopes.iter().map(|scope| &**scope))
            .collect()
    }

    /// Refuses `next` (a reload's tools) if a tool of it requires other scopes than the tool
    /// of that name here (none for a new name).
    ///
    /// # Errors
    ///
    /// [`BuildError::ScopesChanged`] naming the first such tool.
    pub(crate) fn scopes_kept_by(&self, next: &Self) -> Result<(), BuildError> {
        for tool in &next.tools {
            let before = self
                .get(tool.name.as_str())
                .map_or(&[][..], |old| &old.scopes[..]);
            if *before != *tool.scopes {
                return Err(BuildError::ScopesChanged(tool.name.as_str().to_owned()));
            }
        }
        Ok(())
    }

    /// Gives each tool its series of `metrics` (the same as before for a name seen before).
    #[cfg(feature = "metrics")]
    pub(crate) fn count_in(&self, metrics: &crate::metrics::Metrics) {
        for tool in &self.tools {
            tool.series.get_or_init(|| metrics.tool(tool.name.as_str()));
        }
    }

    /// How many tools there are.
    pub(crate) fn len(&self) -> usize {
        self.tools.len()
    }

    /// The tool named exactly `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<ToolDef>> {
        self.by_name
            .get(name)
            .and_then(|index| self.tools.get(*index))
    }

    /// One page of tools from `cursor` (or the start), and the cursor of the next page.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidCursor`] for a cursor this registry did not issue.
    pub(crate) fn page(
        &self,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<(&[Arc<ToolDef>], Option<String>), McpError> {
        crate::pages::page(&self.tools, self.fingerprint, cursor, page_size)
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.tools.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::{BoxFuture, CallContext};
    use crate::output::ToolOutput;
    use serde_json::{Map, json};

    struct Nothing;

    impl Handler for Nothing {
        fn call(&self, _arguments: Map<String, Value>, _: CallContext) -> BoxFuture<ToolOutput> {
            Box::pin(async { ToolOutput::text("") })
        }
    }

    fn tool(name: &str) -> Tool {
        Tool::builder(name).description("does nothing").dynamic(
            json!({"type": "object"}),
            None,
            Arc::new(Nothing),
        )
    }

    #[test]
    fn tool_names_follow_the_rule() {
        for good in [
            "a",
            "get_user",
            "DATA_EXPORT_v2",
            "admin.tools.list",
            &"x".repeat(64),
        ] {
            assert!(ToolName::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "has space", "slash/name", "ünï", &"x".repeat(65), "a,b"] {
            assert!(
                matches!(ToolName::parse(bad), Err(BuildError::InvalidToolName(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn tool_scopes_are_scope_tokens_kept_sorted_once_each() {
        let scoped = |scopes: &[&str]| {
            Registry::new(vec![
                Tool::builder("s")
                    .description("scoped")
                    .scopes(scopes.iter().copied())
                    .dynamic(json!({"type": "object"}), None, Arc::new(Nothing)),
            ])
        };
        let registry = scoped(&["files:write", "files:read", "files:write"]).unwrap();
        let tool = registry.get("s").unwrap();
        assert_eq!(
            &*tool.scopes,
            [Box::from("files:read"), Box::from("files:write")]
        );
        assert_eq!(
            registry.scopes().into_iter().collect::<Vec<_>>(),
            ["files:read", "files:write"]
        );
        let long = "s".repeat(MAX_SCOPE_BYTES + 1);
        let many: Vec<String> = (0..=MAX_TOOL_SCOPES).map(|i| format!("s{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        for bad in [
            &[""][..],
            &["two words"],
            &["quo\"te"],
            &["back\\slash"],
            &["é"],
            &[long.as_str()],
            &many,
        ] {
            assert!(
                matches!(scoped(bad), Err(BuildError::InvalidScope(name)) if name == "s"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn registries_refuse_duplicates_and_missing_descriptions() {
        assert!(matches!(
            Registry::new(vec![tool("a"), tool("a")]),
            Err(BuildError::DuplicateTool(name)) if name == "a"
        ));
        let blank = Tool::builder("b").description("  ").dynamic(
            json!({"type": "object"}),
            None,
            Arc::new(Nothing),
        );
        assert!(matches!(
            Registry::new(vec![blank]),
            Err(BuildError::MissingDescription(_))
        ));
    }

    #[test]
    fn pages_follow_cursors_and_foreign_cursors_are_refused() {
        let registry = Registry::new((0..5).map(|i| tool(&format!("t{i}"))).collect()).unwrap();
        let (first, next) = registry.page(None, 2).unwrap();
        assert_eq!(first.len(), 2);
        let next = next.unwrap();
        let (second, next) = registry.page(Some(&next), 2).unwrap();
        assert_eq!(second[0].name.as_str(), "t2");
        let (third, last) = registry.page(Some(&next.unwrap()), 2).unwrap();
        assert_eq!((third.len(), last), (1, None));

        let other = Registry::new(vec![tool("x"), tool("y"), tool("z")]).unwrap();
        let (_, foreign) = other.page(None, 2).unwrap();
        for bad in [
            foreign.unwrap(),
            String::new(),
            "zz".into(),
            format!("{:016x}{:08x}", registry.fingerprint, 1),
        ] {
            assert!(
                matches!(registry.page(Some(&bad), 2), Err(McpError::InvalidCursor)),
                "{bad}"
            );
        }
        let upper = registry.page(None, 2).unwrap().1.unwrap().to_uppercase();
        if upper != registry.page(None, 2).unwrap().1.unwrap() {
            assert!(matches!(
                registry.page(Some(&upper), 2),
                Err(McpError::InvalidCursor)
            ));
        }
    }
}
