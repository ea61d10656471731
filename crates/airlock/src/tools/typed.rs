//! Typed tools for the library form: serde types in, schemars schemas out.
//!
//! A handler takes a `Deserialize + JsonSchema` argument type; its schema (JSON Schema 2020-12)
//! becomes the tool's `inputSchema`, checked by our validator before the handler runs. Unless
//! the type says otherwise, the root refuses unknown properties: serde would silently drop
//! them, and an argument the tool ignores is one the agent believes it set.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{BoxFuture, Handler, Tool, ToolAnnotations, ToolError, ToolOutput};
use crate::call::CallContext;
use crate::limits::Rate;

/// The argument type of a tool that takes none.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// Describes a tool, then takes its handler. Created by [`Tool::builder`].
#[derive(Debug)]
#[must_use = "a tool builder does nothing until a handler is given"]
pub struct ToolBuilder {
    name: String,
    description: String,
    title: Option<String>,
    annotations: Option<ToolAnnotations>,
    timeout: Option<Duration>,
    rate: Option<Rate>,
}

impl ToolBuilder {
    pub(super) fn new(name: String, description: String) -> Self {
        Self {
            name,
            description,
            title: None,
            annotations: None,
            timeout: None,
            rate: None,
        }
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

    /// A quota of this tool's own, on top of the server's `tool_call_rate`.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// A tool whose handler takes `A` and returns content.
    pub fn handler<A, F, Fut>(self, handler: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        self.handler_with_context(move |arguments: A, _: CallContext| handler(arguments))
    }

    /// A tool whose handler also gets a [`CallContext`], to report progress.
    pub fn handler_with_context<A, F, Fut>(self, handler: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let input_schema = input_schema::<A>();
        self.finish(
            input_schema,
            None,
            Arc::new(Typed {
                handler,
                _types: PhantomData::<fn(A) -> Fut>,
            }),
        )
    }

    /// A tool whose handler takes `A` and returns `O` as `structuredContent` (and as JSON
    /// text), with `O`'s schema as the tool's `outputSchema`.
    pub fn structured<A, O, F, Fut>(self, handler: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        self.structured_with_context(move |arguments: A, _: CallContext| handler(arguments))
    }

    /// A structured tool whose handler also gets a [`CallContext`].
    pub fn structured_with_context<A, O, F, Fut>(self, handler: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + Send + 'static,
        F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let input_schema = input_schema::<A>();
        let output_schema = output_schema::<O>();
        self.finish(
            input_schema,
            Some(output_schema),
            Arc::new(Structured {
                handler,
                _types: PhantomData::<fn(A) -> (O, Fut)>,
            }),
        )
    }

    /// A tool with a schema given as JSON and an untyped handler (used by manifest tools).
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
            description: self.description,
            input_schema,
            output_schema,
            annotations: self.annotations,
            timeout: self.timeout,
            rate: self.rate,
            handler,
        }
    }
}

struct Typed<F, T> {
    handler: F,
    _types: PhantomData<T>,
}

impl<A, F, Fut> Handler for Typed<F, fn(A) -> Fut>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call(&self, arguments: Map<String, Value>, context: CallContext) -> BoxFuture<ToolOutput> {
        let arguments = match decode::<A>(arguments) {
            Ok(arguments) => arguments,
            Err(refusal) => return Box::pin(async move { refusal }),
        };
        let future = (self.handler)(arguments, context);
        Box::pin(async move { future.await.unwrap_or_else(ToolOutput::from) })
    }
}

struct Structured<F, T> {
    handler: F,
    _types: PhantomData<T>,
}

impl<A, O, F, Fut> Handler for Structured<F, fn(A) -> (O, Fut)>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    fn call(&self, arguments: Map<String, Value>, context: CallContext) -> BoxFuture<ToolOutput> {
        let arguments = match decode::<A>(arguments) {
            Ok(arguments) => arguments,
            Err(refusal) => return Box::pin(async move { refusal }),
        };
        let future = (self.handler)(arguments, context);
        Box::pin(async move {
            match future.await {
                Ok(output) => match serde_json::to_value(output) {
                    Ok(value) => ToolOutput::structured(value),
                    Err(_) => {
                        tracing::error!("a tool's structured output could not be encoded");
                        ToolOutput::error("The tool produced output it could not encode.")
                    }
                },
                Err(error) => error.into(),
            }
        })
    }
}

/// Arguments that passed the schema but not serde: a type the schema does not fully describe.
/// The serde message quotes the input, so only the fact is reported.
fn decode<A: DeserializeOwned>(arguments: Map<String, Value>) -> Result<A, ToolOutput> {
    serde_json::from_value(Value::Object(arguments)).map_err(|error| {
        tracing::debug!(category = ?error.classify(), "arguments passed the schema but not the type");
        ToolOutput::error("Invalid arguments: they do not match the tool's input type.")
    })
}

/// The argument type's schema. The root's `title` (the Rust type's name) is dropped: it
/// means nothing to a client and names internals.
fn input_schema<A: JsonSchema>() -> Value {
    let mut schema = schema_for::<A>();
    if let Value::Object(root) = &mut schema {
        root.remove("title");
        if !root.contains_key("additionalProperties") {
            root.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    schema
}

fn output_schema<O: JsonSchema>() -> Value {
    schema_for::<O>()
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
        let tool = Tool::builder("double", "doubles").structured(|args: Args| async move {
            let _ = (args.label, args.mode);
            Ok(Out {
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
        let tool = Tool::builder("double", "doubles").structured(|args: Args| async move {
            if args.count == 0 {
                return Err(ToolError::new("count must not be zero"));
            }
            Ok(Out {
                doubled: u16::from(args.count) * 2,
            })
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
        let schema = input_schema::<Numbers>();
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
        let tool = Tool::builder("now", "says hi")
            .handler(|_: NoArguments| async { Ok(ToolOutput::text("hi")) });
        let registry = Registry::new(vec![tool]).unwrap();
        let def = registry.get("now").unwrap();
        assert!(def.validator.validate(&json!({})).is_empty());
        assert!(!def.validator.validate(&json!({"x": 1})).is_empty());
    }
}
