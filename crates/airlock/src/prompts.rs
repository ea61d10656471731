//! Prompts: templates a client offers its user (`prompts/list`, `prompts/get`), with typed
//! arguments, frozen at start like tools.
//!
//! A prompt's arguments are one Rust type deriving `Deserialize` and `JsonSchema`, as a tool's
//! are; the protocol carries them as strings only, so every property of the type must be a
//! string (required, or optional as `Option<String>`), and the builder refuses another shape.
//! What the peer sends is checked before the handler sees it: an object (or nothing), every
//! value a string within the argument bounds, no name the prompt does not declare, every
//! required one present. A refusal is `-32602` with a fixed message: nothing of what was sent
//! is echoed.
//!
//! A prompt's handler is synchronous and runs inline, under the engine's panic guard: a
//! prompt is text put together from its arguments, not work. A handler that blocks holds up
//! the session (on stdio, every later request).

use std::collections::BTreeMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::asking::Elicitation;
use crate::completion::{Completers, Completion};
use crate::error::McpError;
use crate::limits::{Limits, MAX_PROMPTS_COUNT, MAX_TOOL_NAME_BYTES};
use crate::output::Content;
use crate::tools::{BuildError, ToolName, arguments, typed};

/// Who says a prompt message.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a prompt: who says it and what (text, an image, audio, an embedded
/// resource).
#[derive(Clone, Debug, PartialEq)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: Content,
}

impl PromptMessage {
    /// A text message from the user.
    ///
    /// ```
    /// use airlock::{PromptMessage, Role};
    ///
    /// let message = PromptMessage::user("Summarise the log.");
    /// assert_eq!(message.role, Role::User);
    /// ```
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: Content::Text(text.into()),
        }
    }

    /// A message from `role` with any content.
    pub fn new(role: Role, content: Content) -> Self {
        Self { role, content }
    }
}

/// A prompt, ready to register with [`ServerBuilder::prompt`](crate::ServerBuilder::prompt).
pub struct Prompt {
    name: String,
    title: Option<String>,
    description: Option<String>,
    schema: Value,
    render: Arc<dyn Render>,
    completers: Completers,
    asks: Option<Elicitation>,
}

impl Prompt {
    /// Starts describing a prompt named `name`; [`PromptBuilder::handler`] finishes it.
    ///
    /// ```
    /// use airlock::schemars::{self, JsonSchema};
    /// use airlock::{Prompt, PromptMessage};
    /// use serde::Deserialize;
    ///
    /// /// Asks for a review of a change.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Review {
    ///     /// The change to review.
    ///     change: String,
    ///     /// What to look at most.
    ///     focus: Option<String>,
    /// }
    ///
    /// let prompt = Prompt::builder("review").handler(|args: Review| {
    ///     let focus = args.focus.unwrap_or_else(|| "correctness".into());
    ///     vec![PromptMessage::user(format!("Review {} for {focus}.", args.change))]
    /// });
    /// ```
    pub fn builder(name: impl Into<String>) -> PromptBuilder {
        PromptBuilder {
            name: name.into(),
            title: None,
            description: None,
            completers: Completers::default(),
            asks: None,
        }
    }
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Describes a prompt; see [`Prompt::builder`].
#[derive(Debug)]
#[must_use]
pub struct PromptBuilder {
    name: String,
    title: Option<String>,
    description: Option<String>,
    completers: Completers,
    asks: Option<Elicitation>,
}

impl PromptBuilder {
    /// What the prompt is for; by default, the argument type's doc comment.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// A human-readable name for clients to show.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Asks the user to fill in `form` before the prompt renders, when a 2026-07-28 request
    /// leaves out one of the form's fields: the `prompts/get` is answered with an
    /// `input_required` result, and its retry with the user's answer renders the prompt with
    /// the form's fields filled in from the answer (arguments the client sent win). Each
    /// field of the form must be a text argument the prompt declares (checked when the server
    /// is built). Legacy sessions are not asked (that `prompts/get` cannot wait): the prompt
    /// renders with the arguments sent. A user who declines renders it with those too.
    ///
    /// ```
    /// use airlock::{Elicitation, Prompt, PromptMessage};
    /// use airlock::serde_json::json;
    ///
    /// # fn main() -> Result<(), airlock::FormError> {
    /// let form = Elicitation::new(
    ///     "What should the review focus on?",
    ///     json!({"type": "object", "properties": {"focus": {"type": "string"}}, "required": ["focus"]}),
    /// )?;
    /// let schema = json!({"type": "object", "properties": {"focus": {"type": "string"}}});
    /// let prompt = Prompt::builder("review")
    ///     .description("Asks for a review")
    ///     .asking(form)
    ///     .dynamic(schema, |args| {
    ///         let focus = args.get("focus").map_or("correctness", String::as_str);
    ///         vec![PromptMessage::user(format!("Review this change for {focus}."))]
    ///     });
    /// # let _ = prompt;
    /// # Ok(())
    /// # }
    /// ```
    pub fn asking(mut self, form: Elicitation) -> Self {
        self.asks = Some(form);
        self
    }

    /// Completes `argument` (`completion/complete`): `complete` gets the text typed so far
    /// (checked: a string within the argument bounds) and returns suggestions, of which at
    /// most 100 of at most 1024 bytes each are sent. It runs inline on the session: it must
    /// not block. An argument the prompt does not declare is refused when the server is built.
    ///
    /// ```
    /// use airlock::{NoArguments, Prompt};
    ///
    /// let cities = ["paris", "park", "party"];
    /// let prompt = Prompt::builder("trip")
    ///     .description("Plans a trip")
    ///     .complete("city", move |typed| {
    ///         cities.iter().filter(|c| c.starts_with(typed)).map(|c| c.to_string()).collect()
    ///     });
    /// # let _ = prompt;
    /// ```
    pub fn complete<F>(mut self, argument: impl Into<String>, complete: F) -> Self
    where
        F: Fn(&str) -> Vec<String> + Send + Sync + 'static,
    {
        self.completers.insert(argument.into(), Arc::new(complete));
        self
    }

    /// Finishes the prompt with its handler: the arguments, checked and decoded, in; its
    /// messages out. It runs inline on the session (see the module's documentation): it must
    /// not block. Use [`NoArguments`](crate::NoArguments) for a prompt without arguments.
    pub fn handler<A, F>(self, handler: F) -> Prompt
    where
        A: DeserializeOwned + JsonSchema + 'static,
        F: Fn(A) -> Vec<PromptMessage> + Send + Sync + 'static,
    {
        let (schema, doc) = typed::input_schema::<A>();
        Prompt {
            name: self.name,
            title: self.title,
            description: self.description.or(doc),
            schema,
            render: Arc::new(Typed {
                handler,
                _arguments: PhantomData::<fn() -> A>,
            }),
            completers: self.completers,
            asks: self.asks,
        }
    }

    /// Finishes the prompt for a caller whose arguments are known only at run time (a
    /// manifest, say), as [`ToolBuilder::dynamic`](crate::ToolBuilder::dynamic) does a tool:
    /// `schema` is a JSON Schema object whose every property is a string (named in `required`
    /// when the argument is), and `render` gets the arguments sent, checked as a typed
    /// prompt's are (declared names only, every value a string within the bounds, every
    /// required one present), by name. It runs inline on the session: it must not block.
    ///
    /// ```
    /// use airlock::{Prompt, PromptMessage};
    /// use serde_json::json;
    ///
    /// let schema = json!({
    ///     "type": "object",
    ///     "properties": {"change": {"type": "string", "description": "The change."}},
    ///     "required": ["change"],
    /// });
    /// let prompt = Prompt::builder("review")
    ///     .description("Asks for a review")
    ///     .dynamic(schema, |args| {
    ///         let change = args.get("change").map_or("", String::as_str);
    ///         vec![PromptMessage::user(format!("Review {change}."))]
    ///     });
    /// # let _ = prompt;
    /// ```
    pub fn dynamic<F>(self, schema: Value, render: F) -> Prompt
    where
        F: Fn(BTreeMap<String, String>) -> Vec<PromptMessage> + Send + Sync + 'static,
    {
        Prompt {
            name: self.name,
            title: self.title,
            description: self.description,
            schema,
            render: Arc::new(Dynamic { render }),
            completers: self.completers,
            asks: self.asks,
        }
    }
}

/// A dynamic prompt's handler: the checked arguments as text, by name.
struct Dynamic<F> {
    render: F,
}

impl<F> Render for Dynamic<F>
where
    F: Fn(BTreeMap<String, String>) -> Vec<PromptMessage> + Send + Sync,
{
    fn render(&self, arguments: Map<String, Value>) -> Result<Vec<PromptMessage>, McpError> {
        let mut text = BTreeMap::new();
        for (name, value) in arguments {
            // `PromptDef::render` let only strings through.
            let Value::String(value) = value else {
                return Err(McpError::InvalidPromptArguments);
            };
            text.insert(name, value);
        }
        Ok((self.render)(text))
    }
}

/// A prompt's handler behind its argument type.
trait Render: Send + Sync {
    fn render(&self, arguments: Map<String, Value>) -> Result<Vec<PromptMessage>, McpError>;
}

struct Typed<F, A> {
    handler: F,
    _arguments: PhantomData<fn() -> A>,
}

impl<F, A> Render for Typed<F, A>
where
    A: DeserializeOwned,
    F: Fn(A) -> Vec<PromptMessage> + Send + Sync,
{
    fn render(&self, arguments: Map<String, Value>) -> Result<Vec<PromptMessage>, McpError> {
        let arguments = serde_json::from_value(Value::Object(arguments)).map_err(|error| {
            // The serde message quotes the input: only its category is logged.
            tracing::debug!(category = ?error.classify(), "prompt arguments do not fit the type");
            McpError::InvalidPromptArguments
        })?;
        Ok((self.handler)(arguments))
    }
}

/// One declared argument, as `prompts/list` shows it.
#[derive(Debug, Serialize)]
pub(crate) struct ArgumentDef {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    required: bool,
}

/// A checked, frozen prompt.
pub(crate) struct PromptDef {
    name: ToolName,
    title: Option<String>,
    description: Option<String>,
    arguments: Vec<ArgumentDef>,
    render: Arc<dyn Render>,
    completers: Completers,
    /// The form asked before rendering, in 2026-07-28 requests that leave one of its fields
    /// out.
    asks: Option<Elicitation>,
}

impl PromptDef {
    fn new(prompt: Prompt) -> Result<Self, BuildError> {
        let name = ToolName::parse(&prompt.name)
            .map_err(|_| BuildError::InvalidPromptName(prompt.name.clone()))?;
        let arguments = declared_arguments(&prompt.schema)
            .ok_or_else(|| BuildError::PromptArgumentNotText(prompt.name.clone()))?;
        let completes_declared = prompt
            .completers
            .names()
            .all(|name| arguments.iter().any(|argument| argument.name == name));
        if !completes_declared {
            return Err(BuildError::InvalidCompletion(prompt.name));
        }
        if let Some(form) = &prompt.asks {
            let fills_arguments = form.form.text_fields().is_some_and(|fields| {
                fields
                    .iter()
                    .all(|field| arguments.iter().any(|argument| argument.name == *field))
            });
            if !fills_arguments {
                return Err(BuildError::InvalidPromptForm(prompt.name));
            }
        }
        Ok(Self {
            name,
            title: prompt.title,
            description: prompt.description,
            arguments,
            render: prompt.render,
            completers: prompt.completers,
            asks: prompt.asks,
        })
    }

    /// The prompt's name.
    pub(crate) fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The form to ask before rendering with `arguments` (as sent): the prompt's, when it has
    /// one and `arguments` leaves one of its fields out.
    pub(crate) fn form_for(&self, arguments: Option<&Value>) -> Option<&Elicitation> {
        let form = self.asks.as_ref()?;
        let given = |field: &str| {
            arguments
                .and_then(|arguments| arguments.get(field))
                .is_some()
        };
        let fields = form.form.text_fields()?;
        (!fields.iter().all(|field| given(field))).then_some(form)
    }

    /// Suggestions for `argument` given `typed`, or `None` when the prompt has no such
    /// argument.
    pub(crate) fn complete(&self, argument: &str, typed: &str) -> Option<Completion> {
        self.arguments
            .iter()
            .any(|declared| declared.name == argument)
            .then(|| self.completers.complete(argument, typed))
    }

    /// What the prompt is for, if said.
    pub(crate) fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The prompt as `prompts/list` shows it.
    pub(crate) fn listing(&self) -> Listing<'_> {
        Listing {
            name: self.name.as_str(),
            title: self.title.as_deref(),
            description: self.description.as_deref(),
            arguments: &self.arguments,
        }
    }

    /// The prompt's messages for the peer's `arguments` (the `arguments` member as sent).
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidPromptArguments`] for arguments that are not an object of strings
    /// within the bounds, name an argument the prompt does not declare, or leave out a
    /// required one; an argument bound's own error when one is crossed.
    pub(crate) fn render(
        &self,
        arguments: Option<Value>,
        limits: &Limits,
    ) -> Result<Vec<PromptMessage>, McpError> {
        let arguments = match arguments {
            None => Map::new(),
            Some(Value::Object(arguments)) => arguments,
            Some(_) => return Err(McpError::InvalidPromptArguments),
        };
        arguments::check(&arguments, limits)?;
        let declared = |name: &str| self.arguments.iter().any(|argument| argument.name == name);
        let all_text = arguments.values().all(Value::is_string);
        let all_declared = arguments.keys().all(|name| declared(name));
        let required_present = self
            .arguments
            .iter()
            .filter(|argument| argument.required)
            .all(|argument| arguments.contains_key(&argument.name));
        if !(all_text && all_declared && required_present) {
            return Err(McpError::InvalidPromptArguments);
        }
        self.render.render(arguments)
    }
}

/// The arguments a schema declares, or `None` when one of its properties is not a string
/// (the protocol carries prompt arguments as strings only).
fn declared_arguments(schema: &Value) -> Option<Vec<ArgumentDef>> {
    let empty = Map::new();
    let properties = match schema.get("properties") {
        None => &empty,
        Some(Value::Object(properties)) => properties,
        Some(_) => return None,
    };
    let required: Vec<&str> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) => return None,
    };
    properties
        .iter()
        .map(|(name, property)| {
            let text = match property.get("type") {
                Some(Value::String(kind)) => kind == "string",
                // `Option<String>`: `["string", "null"]`.
                Some(Value::Array(kinds)) => kinds
                    .iter()
                    .all(|kind| matches!(kind.as_str(), Some("string" | "null"))),
                _ => false,
            };
            text.then(|| ArgumentDef {
                name: name.clone(),
                description: property
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: required.contains(&name.as_str()),
            })
        })
        .collect()
}

/// A prompt as `prompts/list` shows it.
#[derive(Serialize)]
pub(crate) struct Listing<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "<[ArgumentDef]>::is_empty")]
    arguments: &'a [ArgumentDef],
}

/// Every prompt of a server, in registration order, frozen at start.
#[derive(Default)]
pub(crate) struct PromptRegistry {
    prompts: Vec<PromptDef>,
    /// Index by exact name (ordered: no hashing of the peer's text).
    by_name: BTreeMap<Box<str>, usize>,
    /// Names a cursor with the prompt list it pages through.
    fingerprint: u64,
}

impl PromptRegistry {
    /// Checks `prompts` and freezes them.
    ///
    /// # Errors
    ///
    /// The first [`BuildError`] found.
    pub(crate) fn new(prompts: Vec<Prompt>) -> Result<Self, BuildError> {
        if prompts.len() > MAX_PROMPTS_COUNT {
            return Err(BuildError::TooManyPrompts);
        }
        let mut defs = Vec::with_capacity(prompts.len());
        let mut by_name = BTreeMap::new();
        let mut hasher = DefaultHasher::new();
        for prompt in prompts {
            let def = PromptDef::new(prompt)?;
            let name: Box<str> = def.name.as_str().into();
            name.hash(&mut hasher);
            if by_name.insert(name.clone(), defs.len()).is_some() {
                return Err(BuildError::DuplicatePrompt(name.into()));
            }
            defs.push(def);
        }
        Ok(Self {
            prompts: defs,
            by_name,
            fingerprint: hasher.finish(),
        })
    }

    /// Whether there are none (then the `prompts` capability is not declared).
    pub(crate) fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// The prompt named exactly `name`; a name longer than any prompt's is not looked up.
    pub(crate) fn get(&self, name: &str) -> Option<&PromptDef> {
        if name.len() > MAX_TOOL_NAME_BYTES {
            return None;
        }
        self.by_name
            .get(name)
            .and_then(|index| self.prompts.get(*index))
    }

    /// One page of prompts from `cursor` (or the start), and the cursor of the next page.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidCursor`] for a cursor this registry did not issue.
    pub(crate) fn page(
        &self,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<(&[PromptDef], Option<String>), McpError> {
        crate::pages::page(&self.prompts, self.fingerprint, cursor, page_size)
    }
}

impl std::fmt::Debug for PromptRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptRegistry")
            .field("prompts", &self.prompts.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::NoArguments;

    /// Greets.
    #[derive(serde::Deserialize, JsonSchema)]
    struct Greet {
        /// Who.
        name: String,
        /// How.
        tone: Option<String>,
    }

    fn greet() -> PromptDef {
        PromptDef::new(Prompt::builder("greet").handler(|args: Greet| {
            vec![PromptMessage::user(format!(
                "Greet {} {}",
                args.name,
                args.tone.unwrap_or_default()
            ))]
        }))
        .unwrap()
    }

    #[test]
    fn arguments_come_from_the_type_with_their_docs_and_whether_required() {
        let def = greet();
        let listing = serde_json::to_value(def.listing()).unwrap();
        assert_eq!(
            listing,
            serde_json::json!({
                "name": "greet",
                "description": "Greets.",
                "arguments": [
                    {"name": "name", "description": "Who.", "required": true},
                    {"name": "tone", "description": "How.", "required": false},
                ]
            })
        );
    }

    #[test]
    fn a_prompt_argument_that_is_not_text_is_refused_at_build() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[expect(dead_code, reason = "only its schema is looked at")]
        struct Count {
            n: u32,
        }
        let built = PromptDef::new(
            Prompt::builder("count")
                .description("d")
                .handler(|_: Count| Vec::new()),
        );
        assert!(matches!(built, Err(BuildError::PromptArgumentNotText(name)) if name == "count"));
        let stray = PromptDef::new(
            Prompt::builder("p")
                .description("d")
                .complete("nope", |_| Vec::new())
                .handler(|_: NoArguments| Vec::new()),
        );
        assert!(matches!(stray, Err(BuildError::InvalidCompletion(name)) if name == "p"));
        let bad_name = PromptDef::new(
            Prompt::builder("no spaces")
                .description("d")
                .handler(|_: NoArguments| Vec::new()),
        );
        assert!(matches!(bad_name, Err(BuildError::InvalidPromptName(_))));
    }

    #[test]
    fn arguments_are_an_object_of_declared_strings_with_every_required_one() {
        let def = greet();
        let limits = Limits::default();
        let ok = def
            .render(Some(serde_json::json!({"name": "Ada"})), &limits)
            .unwrap();
        assert_eq!(ok, vec![PromptMessage::user("Greet Ada ")]);
        for refused in [
            serde_json::json!([]),
            serde_json::json!("Ada"),
            serde_json::json!({}),
            serde_json::json!({"tone": "warm"}),
            serde_json::json!({"name": 1}),
            serde_json::json!({"name": null}),
            serde_json::json!({"name": {"x": "y"}}),
            serde_json::json!({"name": "Ada", "extra": "x"}),
        ] {
            assert!(
                matches!(
                    def.render(Some(refused.clone()), &limits),
                    Err(McpError::InvalidPromptArguments)
                ),
                "{refused}"
            );
        }
        assert!(matches!(
            def.render(None, &limits),
            Err(McpError::InvalidPromptArguments)
        ));
        let long = "x".repeat(limits.max_string_bytes.get().saturating_add(1));
        assert!(matches!(
            def.render(Some(serde_json::json!({ "name": long })), &limits),
            Err(McpError::ArgumentBound { .. })
        ));
    }

    #[test]
    fn a_dynamic_prompt_gets_its_checked_arguments_as_text_by_name() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Who."},
                "tone": {"type": "string"},
            },
            "required": ["name"],
        });
        let def = PromptDef::new(Prompt::builder("greet").description("Greets").dynamic(
            schema,
            |args| {
                let shown: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
                vec![PromptMessage::user(shown.join(","))]
            },
        ))
        .unwrap();
        assert_eq!(
            serde_json::to_value(def.listing()).unwrap(),
            serde_json::json!({
                "name": "greet",
                "description": "Greets",
                "arguments": [
                    {"name": "name", "description": "Who.", "required": true},
                    {"name": "tone", "required": false},
                ]
            })
        );
        let limits = Limits::default();
        assert_eq!(
            def.render(
                Some(serde_json::json!({"tone": "warm", "name": "Ada"})),
                &limits
            )
            .unwrap(),
            vec![PromptMessage::user("name=Ada,tone=warm")]
        );
        for refused in [
            serde_json::json!({"tone": "warm"}),
            serde_json::json!({"name": 1}),
            serde_json::json!({"name": "Ada", "extra": "x"}),
        ] {
            assert!(
                matches!(
                    def.render(Some(refused.clone()), &limits),
                    Err(McpError::InvalidPromptArguments)
                ),
                "{refused}"
            );
        }
        let not_text = PromptDef::new(Prompt::builder("n").description("d").dynamic(
            serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |_| Vec::new(),
        ));
        assert!(matches!(not_text, Err(BuildError::PromptArgumentNotText(name)) if name == "n"));
    }

    #[test]
    fn a_repeated_prompt_name_is_refused() {
        let prompt = || {
            Prompt::builder("p")
                .description("d")
                .handler(|_: NoArguments| Vec::new())
        };
        assert!(matches!(
            PromptRegistry::new(vec![prompt(), prompt()]),
            Err(BuildError::DuplicatePrompt(name)) if name == "p"
        ));
    }
}
