//! Typed tools for the library form: serde types in, schemars schemas out, one handler shape.
//!
//! [`ToolBuilder::handler`] takes an async function of the tool's arguments, with or without a
//! [`CallContext`] (the [`HandlerFn`] trait names both shapes, as axum's `Handler` does). The
//! argument type is `Deserialize + JsonSchema`: its schema (JSON Schema 2020-12) becomes the
//! tool's `inputSchema`, checked by our validator before the handler runs, and its doc comment
//! the tool's description unless the builder was given one. Unless the type says otherwise,
//! the root refuses unknown properties: serde would silently drop them, and an argument the
//! tool ignores is one the agent believes it set. What the handler returns becomes the result
//! through [`IntoToolOutput`]: text, a [`ToolOutput`], a [`Structured`] value (which also sets
//! the tool's `outputSchema`), or a `Result` of one of them whose error becomes a
//! [`ToolError`].

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{TaskMode, Tool, ToolAnnotations};
use crate::handler::CallContext;
use crate::handler::{BoxFuture, Handler};
use crate::limits::Rate;
use crate::output::{ToolError, ToolOutput};

/// The argument type of a tool that takes none: its schema accepts only `{}`.
///
/// ```
/// use airlock::{NoArguments, Tool};
///
/// let tool = Tool::builder("now")
///     .description("Says what time it is")
///     .handler(|_: NoArguments| async { "noon" });
/// assert_eq!(tool.name(), "now");
/// ```
#[derive(Clone, Copy, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// Written by hand so that the schema carries no description: a tool without arguments gets
/// its description from the builder, never from this type's documentation.
impl JsonSchema for NoArguments {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArguments".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {},
            "additionalProperties": false,
        })
    }
}

/// What a handler may return: anything that becomes a [`ToolOutput`].
///
/// Implemented for a [`ToolOutput`], text (`String`, `&'static str`), a [`ToolError`] (a
/// failed result), a [`Structured`] value, and `Result<T, E>` of any of them whose error
/// converts into a [`ToolError`] (so `?` works in a handler; an [`std::io::Error`] converts
/// to a fixed text that never carries the OS's message).
///
/// ```
/// use airlock::{IntoToolOutput, ToolError, ToolOutput};
///
/// let ok: Result<&'static str, ToolError> = Ok("done");
/// assert_eq!(ok.into_tool_output(), ToolOutput::text("done"));
/// let failed: Result<String, ToolError> = Err(ToolError::new("no such user"));
/// assert!(failed.into_tool_output().is_error());
/// ```
pub trait IntoToolOutput {
    /// The result the client receives.
    fn into_tool_output(self) -> ToolOutput;

    /// The tool's `outputSchema`, when every value of this type is structured content of one
    /// shape ([`Structured`]); `None` otherwise.
    fn output_schema() -> Option<Value> {
        None
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolOutput {
        self
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for ToolError {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::from(self)
    }
}

impl<T, E> IntoToolOutput for Result<T, E>
where
    T: IntoToolOutput,
    E: Into<ToolError>,
{
    fn into_tool_output(self) -> ToolOutput {
        match self {
            Ok(output) => output.into_tool_output(),
            Err(error) => ToolOutput::from(error.into()),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

/// A handler's value returned as `structuredContent` (and as JSON text for clients of
/// revisions without structured output), with `T`'s schema as the tool's `outputSchema`:
/// what axum's `Json` is to a response. `T`'s schema must describe an object.
///
/// ```
/// use airlock::schemars::{self, JsonSchema};
/// use airlock::{NoArguments, Structured, Tool, ToolError};
/// use serde::Serialize;
///
/// #[derive(Serialize, JsonSchema)]
/// struct Counts {
///     files: u32,
/// }
///
/// let tool = Tool::builder("count")
///     .description("Counts the files")
///     .handler(|_: NoArguments| async { Ok::<_, ToolError>(Structured(Counts { files: 3 })) });
/// assert_eq!(tool.name(), "count");
/// ```
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Structured<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolOutput for Structured<T> {
    fn into_tool_output(self) -> ToolOutput {
        match serde_json::to_value(self.0) {
            Ok(value) => ToolOutput::structured(value),
            Err(_) => {
                tracing::error!("a tool's structured output could not be encoded");
                ToolOutput::error("The tool produced output it could not encode.")
            }
        }
    }

    fn output_schema() -> Option<Value> {
        Some(schema_for::<T>())
    }
}

/// An async function [`ToolBuilder::handler`] takes: `Fn(Args) -> impl Future` or
/// `Fn(Args, CallContext) -> impl Future`, whose output is [`IntoToolOutput`]. `Marker` only
/// tells the two shapes apart; it is inferred, never written.
///
/// Implemented for every such closure and function; there is nothing to implement by hand.
///
/// ```
/// use airlock::{CallContext, HandlerFn, NoArguments};
///
/// fn takes<M>(_: impl HandlerFn<M>) {}
/// takes(|_: NoArguments| async { "plain" });
/// takes(|_: NoArguments, context: CallContext| async move {
///     context.progress(1.0, None, None);
///     "with a context"
/// });
/// ```
pub trait HandlerFn<Marker>: Send + Sync + 'static {
    /// The tool's argument type.
    type Arguments: DeserializeOwned + JsonSchema;
    /// What the handler returns.
    type Output: IntoToolOutput;
    /// The handler's future.
    type Future: Future<Output = Self::Output> + Send + 'static;

    /// Starts the handler on `arguments`.
    fn start(&self, arguments: Self::Arguments, context: CallContext) -> Self::Future;
}

impl<F, A, Fut> HandlerFn<fn(A) -> Fut> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolOutput,
{
    type Arguments = A;
    type Output = Fut::Output;
    type Future = Fut;

    fn start(&self, arguments: A, _: CallContext) -> Fut {
        self(arguments)
    }
}

impl<F, A, Fut> HandlerFn<fn(A, CallContext) -> Fut> for F
where
    F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolOutput,
{
    type Arguments = A;
    type Output = Fut::Output;
    type Future = Fut;

    fn start(&self, arguments: A, context: CallContext) -> Fut {
        self(arguments, context)
    }
}

/// Describes a tool, then takes its handler. Created by [`Tool::builder`].
#[derive(Debug)]
#[must_use = "a tool builder does nothing until a handler is given"]
pub struct ToolBuilder {
    name: String,
    description: Option<String>,
    title: Option<String>,
    annotations: Option<ToolAnnotations>,
    timeout: Option<Duration>,
    task: TaskMode,
    task_timeout: Option<Duration>,
    rate: Option<Rate>,
    scopes: Vec<String>,
}

impl ToolBuilder {
    pub(super) fn new(name: String) -> Self {
        Self {
            name,
            description: None,
            title: None,
            annotations: None,
            timeout: None,
            task: TaskMode::Never,
            task_timeout: None,
            rate: None,
            scopes: Vec::new(),
        }
    }

    /// What the tool does, for the model. Without it, a typed tool takes its argument type's
    /// doc comment; a tool with neither is refused when the server is built
    /// ([`BuildError::MissingDescription`](super::BuildError::MissingDescription)).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// A human-friendly display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Behaviour hints for clients.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// This tool's deadline, instead of the server's `tool_timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether a client may run this tool as a task (MCP 2025-11-25): answered at once with a
    /// handle, run on past the request, read with `tasks/get` and `tasks/result`, stopped
    /// with `tasks/cancel`. [`TaskMode::Never`] by default. A task run has its own deadline
    /// ([`ToolBuilder::task_timeout`]); an ordinary call of an [`TaskMode::Optional`] tool
    /// keeps [`ToolBuilder::timeout`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use airlock::{NoArguments, TaskMode, Tool};
    ///
    /// let tool = Tool::builder("build")
    ///     .description("Builds the project")
    ///     .task(TaskMode::Optional)
    ///     .task_timeout(Duration::from_secs(30 * 60))
    ///     .handler(|_: NoArguments| async { "built" });
    /// assert_eq!(tool.name(), "build");
    /// ```
    pub fn task(mut self, mode: TaskMode) -> Self {
        self.task = mode;
        self
    }

    /// The deadline of this tool's task runs, instead of the server's `task_timeout` (1 h by
    /// default); at most [`MAX_TASK_TIMEOUT`](crate::limits::MAX_TASK_TIMEOUT), else
    /// [`BuildError::InvalidTimeout`](super::BuildError::InvalidTimeout) when the server is
    /// built.
    pub fn task_timeout(mut self, timeout: Duration) -> Self {
        self.task_timeout = Some(timeout);
        self
    }

    /// A quota of this tool's own, on top of the server's `tool_call_rate`.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// OAuth scopes a caller's access token must all hold to call this tool over HTTP (see
    /// `transport::http::OAuth`); none by default. Callers with a static token, and stdio,
    /// are not scoped. Each scope is an RFC 6749 scope token (visible ASCII but `"` and `\`)
    /// of at most [`MAX_SCOPE_BYTES`](crate::limits::MAX_SCOPE_BYTES) bytes, at most
    /// [`MAX_TOOL_SCOPES`](crate::limits::MAX_TOOL_SCOPES) of them; anything else is
    /// [`BuildError::InvalidScope`](super::BuildError::InvalidScope) when the server is built.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The tool's handler: an async function of its arguments (`Fn(Args)`), or of its
    /// arguments and a [`CallContext`] for progress reports (`Fn(Args, CallContext)`).
    ///
    /// `Args` is `Deserialize + JsonSchema`: its schema is the tool's `inputSchema` (unknown
    /// properties refused unless the type allows them) and its doc comment the tool's
    /// description unless [`ToolBuilder::description`] gave one. The handler runs only on
    /// arguments that passed the bounds and that schema. What it returns becomes the result
    /// through [`IntoToolOutput`]; a [`Structured`] value also sets the `outputSchema`.
    ///
    /// **The handler's first step runs inline, in the session.** Everything it does before its
    /// first `.await` that waits (and on [`Server::run_stdio`](crate::Server::run_stdio)'s
    /// one-thread runtime, everything between two) holds up every message of the session,
    /// pings and cancellations included. Blocking work (`std::fs` walks, `std::process`, long
    /// computations) belongs in `tokio::task::spawn_blocking`, whose future the handler
    /// awaits. The call's deadline and panic guard hold either way: a panic is answered
    /// `-32603` and the session goes on.
    ///
    /// ```
    /// use airlock::schemars::{self, JsonSchema};
    /// use airlock::{CallContext, Tool, ToolError};
    /// use serde::Deserialize;
    ///
    /// /// Shows the last lines of the application's log.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Tail {
    ///     /// How many lines, at most 100.
    ///     #[schemars(range(max = 100))]
    ///     lines: usize,
    /// }
    ///
    /// async fn tail(args: Tail, context: CallContext) -> Result<String, ToolError> {
    ///     context.progress(0.0, Some(1.0), Some("reading the log"));
    ///     // File-system work blocks: it runs off the session's thread.
    ///     let read = tokio::task::spawn_blocking(|| std::fs::read_to_string("app.log"));
    ///     // `?` on the `io::Error`: the model reads a fixed text, never the OS's message.
    ///     let log = read.await.map_err(|_| ToolError::new("The read was stopped."))??;
    ///     let skip = log.lines().count().saturating_sub(args.lines);
    ///     Ok(log.lines().skip(skip).collect::<Vec<_>>().join("\n"))
    /// }
    ///
    /// let tool = Tool::builder("tail").handler(tail);
    /// assert_eq!(tool.name(), "tail");
    /// ```
    pub fn handler<M, H>(self, handler: H) -> Tool
    where
        M: 'static,
        H: HandlerFn<M>,
    {
        let (input_schema, documented) = input_schema::<H::Arguments>();
        let output_schema = <H::Output as IntoToolOutput>::output_schema();
        let described = Self {
            description: self.description.or(documented),
            ..self
        };
        described.finish(
            input_schema,
            output_schema,
            Arc::new(Typed {
                handler,
                _shape: PhantomData::<fn() -> M>,
            }),
        )
    }

    /// A tool with a schema given as JSON and an untyped [`Handler`] (how the manifest
    /// crate's command tools are built). The same first-step rule as
    /// [`ToolBuilder::handler`] applies.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use airlock::serde_json::{Map, Value, json};
    /// use airlock::{BoxFuture, CallContext, Handler, Tool, ToolOutput};
    ///
    /// struct Hello;
    ///
    /// impl Handler for Hello {
    ///     fn call(&self, _: Map<String, Value>, _: CallContext) -> BoxFuture<ToolOutput> {
    ///         Box::pin(async { ToolOutput::text("hello") })
    ///     }
    /// }
    ///
    /// let tool = Tool::builder("hello")
    ///     .description("Says hello")
    ///     .dynamic(json!({"type": "object"}), None, Arc::new(Hello));
    /// assert_eq!(tool.name(), "hello");
    /// ```
    pub fn dynamic(
        self,
        input_schema: Value,
        output_schema: Option<Value>,
        handler: Arc<dyn Handler>,
    ) -> Tool {
        self.finish(input_schema, output_schema, handler)
    }

    fn finish(
        self,
        input_schema: Value,
        output_schema: Option<Value>,
        handler: Arc<dyn Handler>,
    ) -> Tool {
        Tool {
            name: self.name,
            title: self.title,
            description: self.description.unwrap_or_default(),
            input_schema,
            output_schema,
            annotations: self.annotations,
            timeout: self.timeout,
            task: self.task,
            task_timeout: self.task_timeout,
            rate: self.rate,
            scopes: self.scopes,
            handler,
        }
    }
}

/// A [`HandlerFn`] as the registry's untyped [`Handler`].
struct Typed<H, M> {
    handler: H,
    _shape: PhantomData<fn() -> M>,
}

impl<H, M> Handler for Typed<H, M>
where
    H: HandlerFn<M>,
    M: 'static,
{
    fn call(&self, arguments: Map<String, Value>, context: CallContext) -> BoxFuture<ToolOutput> {
        let Some(arguments) = decode::<H::Arguments>(arguments) else {
            return Box::pin(async {
                ToolOutput::error("Invalid arguments: they do not match the tool's input type.")
            });
        };
        let future = self.handler.start(arguments, context);
        Box::pin(async move { future.await.into_tool_output() })
    }
}

/// The typed arguments; `None` for arguments that passed the schema but not serde: a type the
/// schema does not fully describe. The serde message quotes the input, so only the fact is
/// logged (and the caller answers with a fixed text).
fn decode<A: DeserializeOwned>(arguments: Map<String, Value>) -> Option<A> {
    serde_json::from_value(Value::Object(arguments))
        .inspect_err(|error| {
            tracing::debug!(category = ?error.classify(), "arguments passed the schema but not the type");
        })
        .ok()
}

/// The argument type's schema, and its root `description` (the type's doc comment), taken
/// out: it becomes the tool's description, said once. The root's `title` (the Rust type's
/// name) is dropped: it means nothing to a client and names internals.
pub(crate) fn input_schema<A: JsonSchema>() -> (Value, Option<String>) {
    let mut schema = schema_for::<A>();
    let mut description = None;
    if let Value::Object(root) = &mut schema {
        root.remove("title");
        if let Some(Value::String(text)) = root.remove("description") {
            description = Some(unwrapped(&text));
        }
        if !root.contains_key("additionalProperties") {
            root.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    (schema, description)
}

/// A doc comment as one line per paragraph: the line breaks of a comment wrapped at 100
/// columns mean nothing to a model (clap reads `--help` text the same way).
fn unwrapped(doc: &str) -> String {
    doc.split("\n\n")
        .map(|paragraph| paragraph.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|paragraph| !paragraph.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn schema_for<T: JsonSchema>() -> Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    standard_formats(&mut schema);
    schema
}

/// Replaces the Rust-specific `format`s schemars writes (`uint8` … `int64`, `uint`, `int`,
/// `float`, `double`) with what they mean in standard JSON Schema: an integer's range becomes
/// `minimum`/`maximum`, a float's format goes. Clients' validators warn about unknown formats;
/// the bounds still hold, now in words every validator knows.
fn standard_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let range: Option<(i128, i128)> = match map.get("format").and_then(Value::as_str) {
                Some("uint8") => Some((0, i128::from(u8::MAX))),
                Some("uint16") => Some((0, i128::from(u16::MAX))),
                Some("uint32") => Some((0, i128::from(u32::MAX))),
                Some("uint64" | "uint") => Some((0, i128::from(u64::MAX))),
                Some("int8") => Some((i128::from(i8::MIN), i128::from(i8::MAX))),
                Some("int16") => Some((i128::from(i16::MIN), i128::from(i16::MAX))),
                Some("int32") => Some((i128::from(i32::MIN), i128::from(i32::MAX))),
                Some("int64" | "int") => Some((i128::from(i64::MIN), i128::from(i64::MAX))),
                _ => None,
            };
            if let Some((low, high)) = range {
                map.remove("format");
                tighten(map, "minimum", low, |new, old| new > old);
                tighten(map, "maximum", high, |new, old| new < old);
            } else if matches!(
                map.get("format").and_then(Value::as_str),
                Some("float" | "double")
            ) {
                map.remove("format");
            }
            map.values_mut().for_each(standard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats),
        _ => {}
    }
}

/// Sets `key` to `bound` unless the schema already has a stricter one.
fn tighten(map: &mut Map<String, Value>, key: &str, bound: i128, stricter: fn(i128, i128) -> bool) {
    let existing = map.get(key).and_then(|value| {
        value
            .as_i64()
            .map(i128::from)
            .or_else(|| value.as_u64().map(i128::from))
    });
    let keep_existing = existing.is_some_and(|old| !stricter(bound, old))
        || map.get(key).is_some_and(Value::is_f64);
    if keep_existing {
        return;
    }
    let value = i64::try_from(bound)
        .map(Value::from)
        .or_else(|_| u64::try_from(bound).map(Value::from));
    if let Ok(value) = value {
        map.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;
    use serde_json::json;

    /// Doubles a count,
    /// wrapped in the comment.
    ///
    /// A second paragraph.
    #[derive(serde::Deserialize, JsonSchema)]
    struct Args {
        /// How many.
        count: u8,
        label: Option<String>,
        mode: Mode,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(Serialize, JsonSchema)]
    struct Out {
        doubled: u16,
    }

    fn call(tool: &Tool, arguments: Value) -> ToolOutput {
        let Value::Object(map) = arguments else {
            panic!()
        };
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(tool.handler.call(map, CallContext::detached()))
    }

    #[test]
    fn schemas_from_types_compile_and_refuse_unknown_properties() {
        let tool = Tool::builder("double").handler(|args: Args| async move {
            let _ = (args.label, args.mode);
            Structured(Out {
                doubled: u16::from(args.count) * 2,
            })
        });
        assert_eq!(tool.input_schema["additionalProperties"], json!(false));
        assert_eq!(
            tool.output_schema.as_ref().unwrap()["type"],
            json!("object")
        );
        let registry = Registry::new(vec![tool]).unwrap();
        let def = registry.get("double").unwrap();
        assert!(
            def.validator
                .validate(&json!({"count": 3, "mode": "fast"}))
                .is_empty()
        );
        let refused: Vec<String> = def
            .validator
            .validate(&json!({"count": 300, "mode": "warp", "extra": 1}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            refused,
            [
                "`count` must be at most 255",
                "`arguments` has a property the tool does not accept: `extra` (it accepts \
                 `count`, `label`, `mode`)",
                "`mode` must be one of \"fast\", \"slow\""
            ]
        );
    }

    #[test]
    fn typed_handlers_decode_run_and_encode() {
        let tool = Tool::builder("double").handler(|args: Args| async move {
            if args.count == 0 {
                return Err(ToolError::new("count must not be zero"));
            }
            Ok(Structured(Out {
                doubled: u16::from(args.count) * 2,
            }))
        });
        let out = call(&tool, json!({"count": 21, "mode": "slow"}));
        assert_eq!(out.structured_content(), Some(&json!({"doubled": 42})));
        assert_eq!(out.text_content(), r#"{"doubled":42}"#);
        let out = call(&tool, json!({"count": 0, "mode": "slow"}));
        assert!(out.is_error());
        assert_eq!(out.text_content(), "count must not be zero");
        let out = call(&tool, json!({"count": "secret-value", "mode": "slow"}));
        assert!(out.is_error());
        assert!(!out.text_content().contains("secret-value"));
    }

    #[test]
    fn rust_integer_formats_become_standard_bounds() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[expect(dead_code, reason = "only the type's schema is used")]
        struct Numbers {
            small: u8,
            #[schemars(range(min = 5))]
            count: usize,
            offset: i16,
            ratio: f64,
        }
        let (schema, _) = input_schema::<Numbers>();
        let props = &schema["properties"];
        assert_eq!(
            props["small"],
            json!({"type": "integer", "minimum": 0, "maximum": 255})
        );
        assert_eq!(props["count"]["minimum"], json!(5));
        assert_eq!(props["count"]["maximum"], json!(u64::MAX));
        assert_eq!(props["offset"]["minimum"], json!(-32768));
        assert!(props["ratio"].get("format").is_none());
        assert!(!schema.to_string().contains("\"format\""));
    }

    #[test]
    fn tools_without_arguments_accept_only_an_empty_object() {
        let tool = Tool::builder("now")
            .description("says hi")
            .handler(|_: NoArguments| async { "hi" });
        let registry = Registry::new(vec![tool]).unwrap();
        let def = registry.get("now").unwrap();
        assert!(def.validator.validate(&json!({})).is_empty());
        assert!(!def.validator.validate(&json!({"x": 1})).is_empty());
    }

    #[test]
    fn the_description_defaults_to_the_argument_types_doc_comment_said_once() {
        let tool = Tool::builder("double").handler(|_: Args| async { "" });
        assert_eq!(
            tool.description,
            "Doubles a count, wrapped in the comment.\n\nA second paragraph."
        );
        assert_eq!(tool.input_schema.get("description"), None);
        assert_eq!(tool.output_schema, None);
        let tool = Tool::builder("double")
            .description("Twice the count")
            .handler(|_: Args| async { "" });
        assert_eq!(tool.description, "Twice the count");
        let tool = Tool::builder("now").handler(|_: NoArguments| async { "" });
        assert!(matches!(
            Registry::new(vec![tool]),
            Err(crate::tools::BuildError::MissingDescription(name)) if name == "now"
        ));
    }

    #[test]
    fn both_handler_shapes_and_every_output_kind_reach_the_result() {
        let plain = Tool::builder("a").handler(|_: NoArguments| async { String::from("text") });
        assert_eq!(call(&plain, json!({})), ToolOutput::text("text"));
        let with_context =
            Tool::builder("b").handler(|_: NoArguments, context: CallContext| async move {
                ToolOutput::text(format!("progress wanted: {}", context.wants_progress()))
            });
        assert_eq!(
            call(&with_context, json!({})),
            ToolOutput::text("progress wanted: false")
        );
        let failed = Tool::builder("c").handler(|_: NoArguments| async { ToolError::new("no") });
        assert_eq!(call(&failed, json!({})), ToolOutput::error("no"));
        let structured = Tool::builder("d")
            .handler(|_: NoArguments| async { Ok::<_, ToolError>(Structured(Out { doubled: 4 })) });
        assert_eq!(
            structured.output_schema.as_ref().unwrap()["type"],
            json!("object")
        );
        assert_eq!(
            call(&structured, json!({})).structured_content(),
            Some(&json!({"doubled": 4}))
        );
    }

    /// `?` on an `io::Error` in a handler: the model reads a fixed text, never the OS's
    /// message (which names paths, users, hosts).
    #[test]
    fn an_io_error_raised_with_a_question_mark_is_a_fixed_text() {
        async fn open(_: NoArguments) -> Result<String, ToolError> {
            Err(std::io::Error::other(
                "/home/secret-user/.ssh/id_ed25519: denied",
            ))?
        }
        let out = call(&Tool::builder("open").handler(open), json!({}));
        assert_eq!(
            out,
            ToolOutput::error("The tool failed on a system operation (file, network or process).")
        );
    }
}
