//! What a tool may ask the client while it runs (elicitation, sampling), and the checks its
//! answer must pass before the tool sees it.
//!
//! The request is the server's own text, built here from what the tool author gave. The
//! answer is the peer's: it arrives as a JSON-RPC response, is read only when its id names a
//! request this session is waiting on (the engine's business), and then must fit the request:
//! an elicitation's content only the fields of the form, each of its kind and within its
//! bounds, every required one present; a sampling answer only text, of bounded size. A tool
//! gets a typed value or an [`AskError`], whose text is fixed: nothing the client wrote
//! reaches the tool's error path.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::Capability;
use crate::limits::{
    MAX_ANSWER_BYTES, MAX_ASK_TEXT_BYTES, MAX_ELICITED_TEXT_CHARS, MAX_FORM_FIELD_NAME_BYTES,
    MAX_FORM_FIELDS, MAX_FORM_OPTIONS, MAX_INPUT_KEY_BYTES, MAX_ROOT_URI_BYTES, MAX_ROOTS,
    MAX_SAMPLED_MODEL_BYTES,
};

/// A form for the user (`elicitation/create`): a message and the fields to fill in.
///
/// ```
/// use airlock::Elicitation;
/// use airlock::serde_json::json;
///
/// let form = Elicitation::new(
///     "Which branch should be deployed?",
///     json!({
///         "type": "object",
///         "properties": {
///             "branch": {"type": "string", "maxLength": 100},
///             "force": {"type": "boolean", "default": false}
///         },
///         "required": ["branch"]
///     }),
/// );
/// assert!(form.is_ok());
/// assert!(Elicitation::new("?", json!({"type": "object", "properties": {"x": {"type": "object"}}})).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct Elicitation {
    pub(crate) message: String,
    pub(crate) form: Arc<Form>,
    pub(crate) key: Option<String>,
}

impl Elicitation {
    /// A form showing `message`, with the fields `requested_schema` declares: an object schema
    /// whose `properties` are flat fields of the kinds elicitation allows (a string, with
    /// `minLength`/`maxLength`/`format`, or one of an `enum` or a `oneOf` of `const`s; a
    /// `number` or `integer` with `minimum`/`maximum`; a `boolean`; an `array` of such
    /// choices with `minItems`/`maxItems`), each with an optional `title`, `description` and
    /// `default`, and `required` naming some of them. The schema is sent as given.
    ///
    /// # Errors
    ///
    /// [`FormError`] when the schema is not such a form, or the message or the form is over
    /// its bound ([`MAX_ASK_TEXT_BYTES`], [`MAX_FORM_FIELDS`], [`MAX_FORM_OPTIONS`]).
    pub fn new(message: impl Into<String>, requested_schema: Value) -> Result<Self, FormError> {
        let message = message.into();
        if message.len() > MAX_ASK_TEXT_BYTES {
            return Err(FormError("the message is over its bound"));
        }
        let form = Form::compile(requested_schema)?;
        Ok(Self {
            message,
            form: Arc::new(form),
            key: None,
        })
    }

    /// Names the question in a 2026-07-28 call's `inputRequests` (else it is named by its
    /// place among the call's questions: `q1`, `q2`, …): a client that answers it knows it by
    /// this name.
    ///
    /// # Errors
    ///
    /// [`FormError`] unless `key` is 1 to 64 characters of `A-Z a-z 0-9 _ . -`, and not of
    /// the form of the names unnamed questions get (`q` and digits).
    ///
    /// ```
    /// use airlock::Elicitation;
    /// use airlock::serde_json::json;
    ///
    /// # fn main() -> Result<(), airlock::FormError> {
    /// let form = Elicitation::new("Your name?", json!({"type": "object"}))?.named("user_name")?;
    /// # let _ = form;
    /// assert!(Elicitation::new("?", json!({"type": "object"}))?.named("two words").is_err());
    /// assert!(Elicitation::new("?", json!({"type": "object"}))?.named("q2").is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn named(mut self, key: &str) -> Result<Self, FormError> {
        if !is_key(key) {
            return Err(FormError("the name is not 1 to 64 of A-Z a-z 0-9 _ . -"));
        }
        if is_default_key(key) {
            return Err(FormError(
                "names of the form q1, q2, … are the unnamed questions'",
            ));
        }
        self.key = Some(key.to_owned());
        Ok(self)
    }
}

/// Why a schema is not a form elicitation can ask for (the tool author's mistake).
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error("invalid elicitation form: {0}")]
pub struct FormError(&'static str);

/// What the user did with a form.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Elicited {
    /// Submitted: the content, every field checked against the form.
    Accepted(Map<String, Value>),
    /// Declined to answer.
    Declined,
    /// Dismissed the form.
    Cancelled,
}

/// A request for the client's model to write a reply (`sampling/createMessage`).
///
/// ```
/// let request = airlock::Sampling::new("Summarise this diff in one line.").max_tokens(64);
/// # let _ = request;
/// ```
#[derive(Clone, Debug)]
pub struct Sampling {
    pub(crate) prompt: String,
    pub(crate) system_prompt: Option<String>,
    pub(crate) max_tokens: u32,
}

impl Sampling {
    /// Asks for a reply to `prompt` (one user message), of at most 256 tokens unless
    /// [`Sampling::max_tokens`] says otherwise.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            system_prompt: None,
            max_tokens: 256,
        }
    }

    /// The most tokens the reply may have (the client may give fewer).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// A system prompt the client may use.
    #[must_use]
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        self.system_prompt = Some(text.into());
        self
    }
}

/// The client model's reply, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sampled {
    /// The reply's text (its text blocks joined), at most `MAX_ANSWER_BYTES`.
    pub text: String,
    /// The model the client says wrote it (its claim, at most `MAX_SAMPLED_MODEL_BYTES`).
    pub model: String,
    /// Why it stopped, as the client says (`endTurn`, `maxTokens`, …), if it says.
    pub stop_reason: Option<String>,
}

/// One of the client's roots (`roots/list`), as the client names it: its claim, checked for
/// shape and size only. A `file://` URI is where the client says its user works; it grants
/// nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Root {
    /// The root's URI (`file://` only), at most `MAX_ROOT_URI_BYTES` bytes.
    pub uri: String,
    /// Its name, if the client gives one, at most `MAX_SAMPLED_MODEL_BYTES` bytes.
    pub name: Option<String>,
}

/// Why a question to the client got no usable answer. The texts are fixed: a tool may hand
/// them to the agent as they are.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The client did not declare the capability (`elicitation`, `sampling`), or the call
    /// cannot carry a request to it: a 2026-07-28 request, an HTTP reply that is not an
    /// event stream, a session resumed on another replica.
    #[error("the client cannot answer this request")]
    Unsupported,
    /// The session waits on as many answers as it may
    /// ([`MAX_OUTSTANDING_ASKS`](crate::limits::MAX_OUTSTANDING_ASKS)), or cannot take
    /// another request now.
    #[error("the client is asked too much at once")]
    Busy,
    /// No answer within `ANSWER_TIMEOUT` (120 s).
    #[error("the client did not answer in time")]
    TimedOut,
    /// The client answered with an error.
    #[error("the client refused the request")]
    Refused,
    /// The answer did not fit the request (a field the form lacks, a value of the wrong
    /// kind or out of bounds, a required field missing, an answer over its size).
    #[error("the client's answer was not valid")]
    Malformed,
    /// The request is over its bound (a prompt over `MAX_ANSWER_BYTES`).
    #[error("the request to the client is too large")]
    TooLarge,
    /// The call or its session ended first.
    #[error("the session ended before the client answered")]
    Gone,
}

/// A checked answer, as the engine hands it to the waiting tool.
#[derive(Debug)]
pub(crate) enum Answer {
    Elicited(Elicited),
    Sampled(Sampled),
    Roots(Vec<Root>),
}

/// What a tool asks, as the engine sends it.
#[derive(Debug)]
pub(crate) enum Question {
    Elicit(Elicitation),
    Sample(Sampling),
    Roots,
}

impl Question {
    /// The request's method.
    pub(crate) fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => "elicitation/create",
            Self::Sample(_) => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    /// The client capability the question needs.
    pub(crate) fn capability(&self) -> Capability {
        match self {
            Self::Elicit(_) => Capability::Elicitation,
            Self::Sample(_) => Capability::Sampling,
            Self::Roots => Capability::Roots,
        }
    }

    /// The name the tool gave the question, if any.
    pub(crate) fn key(&self) -> Option<&str> {
        match self {
            Self::Elicit(elicitation) => elicitation.key.as_deref(),
            Self::Sample(_) | Self::Roots => None,
        }
    }

    /// The request's params: the server's own text.
    pub(crate) fn params(&self) -> Value {
        match self {
            Self::Elicit(elicitation) => serde_json::json!({
                "message": elicitation.message,
                "requestedSchema": elicitation.form.schema,
            }),
            Self::Sample(sampling) => {
                let mut params = serde_json::json!({
                    "messages": [{
                        "role": "user",
                        "content": {"type": "text", "text": sampling.prompt},
                    }],
                    "maxTokens": sampling.max_tokens,
                });
                if let (Some(system), Some(object)) =
                    (&sampling.system_prompt, params.as_object_mut())
                {
                    object.insert("systemPrompt".to_owned(), Value::from(system.as_str()));
                }
                params
            }
            Self::Roots => Value::Object(Map::new()),
        }
    }

    /// Checks the client's `result` (raw, at most `MAX_ANSWER_BYTES`) against the request.
    pub(crate) fn check(&self, raw: &str) -> Result<Answer, AskError> {
        if raw.len() > MAX_ANSWER_BYTES {
            return Err(AskError::Malformed);
        }
        let value: Value = serde_json::from_str(raw).map_err(|_| AskError::Malformed)?;
        self.check_parsed(value)
    }

    /// Checks an answer given as a value (a 2026-07-28 `inputResponses` member): the same
    /// checks, the same bound on its size as sent.
    pub(crate) fn check_value(&self, value: &Value) -> Result<Answer, AskError> {
        let fits = serde_json::to_vec(value).is_ok_and(|bytes| bytes.len() <= MAX_ANSWER_BYTES);
        if !fits {
            return Err(AskError::Malformed);
        }
        self.check_parsed(value.clone())
    }

    fn check_parsed(&self, value: Value) -> Result<Answer, AskError> {
        let Value::Object(result) = value else {
            return Err(AskError::Malformed);
        };
        match self {
            Self::Elicit(elicitation) => elicitation.form.check(result).map(Answer::Elicited),
            Self::Sample(_) => check_sampled(result).map(Answer::Sampled),
            Self::Roots => check_roots(result).map(Answer::Roots),
        }
    }
}

/// A compiled form: the schema as sent, and the rules its answers must meet.
#[derive(Debug)]
pub(crate) struct Form {
    schema: Value,
    fields: Vec<Field>,
}

#[derive(Debug)]
struct Field {
    name: String,
    required: bool,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Text {
        min_chars: usize,
        max_chars: usize,
    },
    Choice(Vec<String>),
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Flag,
    Choices {
        options: Vec<String>,
        min_items: usize,
        max_items: usize,
    },
}

/// Keywords a field may carry besides those of its kind.
const COMMON_KEYWORDS: [&str; 4] = ["type", "title", "description", "default"];

impl Form {
    /// The names of the form's fields, when every one answers with text (a string, or one
    /// of a set of strings).
    pub(crate) fn text_fields(&self) -> Option<Vec<&str>> {
        self.fields
            .iter()
            .map(|field| match field.kind {
                Kind::Text { .. } | Kind::Choice(_) => Some(field.name.as_str()),
                Kind::Number { .. } | Kind::Flag | Kind::Choices { .. } => None,
            })
            .collect()
    }

    fn compile(schema: Value) -> Result<Self, FormError> {
        let object = schema
            .as_object()
            .ok_or(FormError("the schema is not an object"))?;
        if object.get("type").and_then(Value::as_str) != Some("object") {
            return Err(FormError("the schema's type is not \"object\""));
        }
        for key in object.keys() {
            if !matches!(
                key.as_str(),
                "type" | "properties" | "required" | "$schema" | "title" | "description"
            ) {
                return Err(FormError("the schema has a keyword a form cannot have"));
            }
        }
        let properties = match object.get("properties") {
            None => &Map::new(),
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err(FormError("properties is not an object")),
        };
        if properties.len() > MAX_FORM_FIELDS {
            return Err(FormError("the form has too many fields"));
        }
        let required: Vec<&str> = match object.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|name| {
                    name.as_str()
                        .ok_or(FormError("required holds a non-string"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(FormError("required is not an array")),
        };
        if required.iter().any(|name| !properties.contains_key(*name)) {
            return Err(FormError("required names a field the form lacks"));
        }
        let mut fields = Vec::with_capacity(properties.len());
        for (name, field) in properties {
            if name.is_empty() || name.len() > MAX_FORM_FIELD_NAME_BYTES {
                return Err(FormError("a field name is empty or too long"));
            }
            fields.push(Field {
                name: name.clone(),
                required: required.contains(&name.as_str()),
                kind: compile_field(field)?,
            });
        }
        Ok(Self { schema, fields })
    }

    fn check(&self, mut result: Map<String, Value>) -> Result<Elicited, AskError> {
        let action = match result.remove("action") {
            Some(Value::String(action)) => action,
            _ => return Err(AskError::Malformed),
        };
        let content = result.remove("content");
        result.remove("_meta");
        if !result.is_empty() {
            return Err(AskError::Malformed);
        }
        match action.as_str() {
            "accept" => {}
            "decline" | "cancel" if content.is_none() => {
                return Ok(if action == "decline" {
                    Elicited::Declined
                } else {
                    Elicited::Cancelled
                });
            }
            _ => return Err(AskError::Malformed),
        }
        let content = match content {
            Some(Value::Object(content)) => content,
            None => Map::new(),
            Some(_) => return Err(AskError::Malformed),
        };
        for (name, value) in &content {
            let field = self
                .fields
                .iter()
                .find(|field| field.name == *name)
                .ok_or(AskError::Malformed)?;
            if !field.kind.admits(value) {
                return Err(AskError::Malformed);
            }
        }
        if self
            .fields
            .iter()
            .any(|field| field.required && !content.contains_key(&field.name))
        {
            return Err(AskError::Malformed);
        }
        Ok(Elicited::Accepted(content))
    }
}

fn compile_field(field: &Value) -> Result<Kind, FormError> {
    let field = field
        .as_object()
        .ok_or(FormError("a field is not an object"))?;
    let extra: &[&str] = match field.get("type").and_then(Value::as_str) {
        Some("string") => &[
            "minLength",
            "maxLength",
            "format",
            "enum",
            "enumNames",
            "oneOf",
        ],
        Some("number" | "integer") => &["minimum", "maximum"],
        Some("boolean") => &[],
        Some("array") => &["items", "minItems", "maxItems"],
        _ => return Err(FormError("a field's type is not one a form can have")),
    };
    if field
        .keys()
        .any(|key| !COMMON_KEYWORDS.contains(&key.as_str()) && !extra.contains(&key.as_str()))
    {
        return Err(FormError("a field has a keyword its kind cannot have"));
    }
    for key in ["title", "description"] {
        if field.get(key).is_some_and(|text| !text.is_string()) {
            return Err(FormError("a title or description is not a string"));
        }
    }
    let count = |key: &str| -> Result<Option<usize>, FormError> {
        field
            .get(key)
            .map(|n| {
                n.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or(FormError("a length or count is not a whole number"))
            })
            .transpose()
    };
    let kind = match field.get("type").and_then(Value::as_str) {
        Some("string") => match options(field)? {
            Some(options) => Kind::Choice(options),
            None => {
                let max_chars = count("maxLength")?
                    .unwrap_or(MAX_ELICITED_TEXT_CHARS)
                    .min(MAX_ELICITED_TEXT_CHARS);
                Kind::Text {
                    min_chars: count("minLength")?.unwrap_or(0),
                    max_chars,
                }
            }
        },
        Some(kind @ ("number" | "integer")) => {
            let bound = |key: &str| -> Result<Option<f64>, FormError> {
                field
                    .get(key)
                    .map(|n| n.as_f64().ok_or(FormError("a bound is not a number")))
                    .transpose()
            };
            Kind::Number {
                integer: kind == "integer",
                minimum: bound("minimum")?,
                maximum: bound("maximum")?,
            }
        }
        Some("boolean") => Kind::Flag,
        _ => {
            let items = field
                .get("items")
                .and_then(Value::as_object)
                .ok_or(FormError("an array field has no items object"))?;
            let options = match items.get("anyOf") {
                Some(any_of) => titled(any_of)?,
                None if items.get("type").and_then(Value::as_str) == Some("string") => {
                    strings(items.get("enum"))?
                }
                None => return Err(FormError("an array field's items are not choices")),
            };
            let max_items = count("maxItems")?
                .unwrap_or(options.len())
                .min(options.len());
            Kind::Choices {
                options,
                min_items: count("minItems")?.unwrap_or(0),
                max_items,
            }
        }
    };
    if let Some(default) = field.get("default")
        && !kind.admits(default)
    {
        return Err(FormError("a default does not fit its field"));
    }
    Ok(kind)
}

/// A string field's choices (`enum`, or `oneOf` of `const`s), if it has them.
fn options(field: &Map<String, Value>) -> Result<Option<Vec<String>>, FormError> {
    match (field.get("enum"), field.get("oneOf")) {
        (Some(_), Some(_)) => Err(FormError("a field has both enum and oneOf")),
        (Some(names), None) => {
            let options = strings(Some(names))?;
            if let Some(labels) = field.get("enumNames") {
                let labels = strings(Some(labels))?;
                if labels.len() != options.len() {
                    return Err(FormError("enumNames and enum differ in length"));
                }
            }
            Ok(Some(options))
        }
        (None, Some(one_of)) => titled(one_of).map(Some),
        (None, None) if field.contains_key("enumNames") => Err(FormError("enumNames without enum")),
        (None, None) => Ok(None),
    }
}

/// `[{"const": "…", "title": "…"}, …]`, the values.
fn titled(list: &Value) -> Result<Vec<String>, FormError> {
    let list = list
        .as_array()
        .ok_or(FormError("oneOf or anyOf is not an array"))?;
    let options: Vec<String> = list
        .iter()
        .map(|option| {
            let option = option
                .as_object()
                .filter(|option| {
                    option
                        .keys()
                        .all(|key| matches!(key.as_str(), "const" | "title"))
                })
                .ok_or(FormError("a choice is not {const, title}"))?;
            option
                .get("const")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or(FormError("a choice's const is not a string"))
        })
        .collect::<Result<_, _>>()?;
    bounded_options(options)
}

/// A list of strings (`enum`, `enumNames`).
fn strings(list: Option<&Value>) -> Result<Vec<String>, FormError> {
    let list = list
        .and_then(Value::as_array)
        .ok_or(FormError("enum is not an array"))?;
    let options: Vec<String> = list
        .iter()
        .map(|option| {
            option
                .as_str()
                .map(str::to_owned)
                .ok_or(FormError("enum holds a non-string"))
        })
        .collect::<Result<_, _>>()?;
    bounded_options(options)
}

fn bounded_options(options: Vec<String>) -> Result<Vec<String>, FormError> {
    if options.is_empty() || options.len() > MAX_FORM_OPTIONS {
        return Err(FormError("a field has no choices or too many"));
    }
    if options
        .iter()
        .any(|option| option.len() > MAX_ASK_TEXT_BYTES)
    {
        return Err(FormError("a choice is too long"));
    }
    Ok(options)
}

impl Kind {
    /// Whether `value` is a value of this field.
    fn admits(&self, value: &Value) -> bool {
        match (self, value) {
            (
                Self::Text {
                    min_chars,
                    max_chars,
                },
                Value::String(text),
            ) => {
                // Counted up to one past the cap: a long answer costs no more to refuse.
                let chars = text.chars().take(max_chars.saturating_add(1)).count();
                chars >= *min_chars && chars <= *max_chars
            }
            (Self::Choice(options), Value::String(choice)) => options.contains(choice),
            (
                Self::Number {
                    integer,
                    minimum,
                    maximum,
                },
                Value::Number(number),
            ) => {
                // Written as an integer of at most 64 bits: `30.0` and `3e1` are refused (JSON
                // Schema would take them), so a tool never gets an "integer" that `as_i64`
                // cannot read, or one past 64 bits rounded into a float.
                let whole = number.is_i64() || number.is_u64();
                number.as_f64().is_some_and(|n| {
                    n.is_finite()
                        && (!integer || whole)
                        && minimum.is_none_or(|least| n >= least)
                        && maximum.is_none_or(|most| n <= most)
                })
            }
            (Self::Flag, Value::Bool(_)) => true,
            (
                Self::Choices {
                    options,
                    min_items,
                    max_items,
                },
                Value::Array(chosen),
            ) => {
                chosen.len() >= *min_items
                    && chosen.len() <= *max_items
                    && chosen.iter().enumerate().all(|(at, choice)| {
                        choice
                            .as_str()
                            .is_some_and(|choice| options.iter().any(|option| option == choice))
                            && !chosen.get(..at).unwrap_or_default().contains(choice)
                    })
            }
            _ => false,
        }
    }
}

/// Checks a `roots/list` result: at most [`MAX_ROOTS`] roots, each a `file://` URI of
/// bounded length without control characters, and an optional bounded name.
fn check_roots(mut result: Map<String, Value>) -> Result<Vec<Root>, AskError> {
    let Some(Value::Array(listed)) = result.remove("roots") else {
        return Err(AskError::Malformed);
    };
    result.remove("_meta");
    if !result.is_empty() || listed.len() > MAX_ROOTS {
        return Err(AskError::Malformed);
    }
    let mut roots = Vec::with_capacity(listed.len());
    for root in listed {
        let Value::Object(mut root) = root else {
            return Err(AskError::Malformed);
        };
        let uri = match root.remove("uri") {
            Some(Value::String(uri))
                if uri.len() <= MAX_ROOT_URI_BYTES
                    && uri.starts_with("file://")
                    && !uri.chars().any(char::is_control) =>
            {
                uri
            }
            _ => return Err(AskError::Malformed),
        };
        let name = match root.remove("name") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) if name.len() <= MAX_SAMPLED_MODEL_BYTES => Some(name),
            Some(_) => return Err(AskError::Malformed),
        };
        root.remove("_meta");
        if !root.is_empty() {
            return Err(AskError::Malformed);
        }
        roots.push(Root { uri, name });
    }
    Ok(roots)
}

/// Checks a `sampling/createMessage` result: the assistant's text only.
fn check_sampled(mut result: Map<String, Value>) -> Result<Sampled, AskError> {
    if result.remove("role") != Some(Value::from("assistant")) {
        return Err(AskError::Malformed);
    }
    let model = match result.remove("model") {
        Some(Value::String(model)) if model.len() <= MAX_SAMPLED_MODEL_BYTES => model,
        _ => return Err(AskError::Malformed),
    };
    let stop_reason = match result.remove("stopReason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) if reason.len() <= MAX_SAMPLED_MODEL_BYTES => Some(reason),
        Some(_) => return Err(AskError::Malformed),
    };
    let blocks = match result.remove("content") {
        Some(Value::Array(blocks)) => blocks,
        Some(block @ Value::Object(_)) => vec![block],
        _ => return Err(AskError::Malformed),
    };
    result.remove("_meta");
    if !result.is_empty() || blocks.is_empty() {
        return Err(AskError::Malformed);
    }
    let mut text = String::new();
    for block in blocks {
        let Value::Object(mut block) = block else {
            return Err(AskError::Malformed);
        };
        if block.remove("type") != Some(Value::from("text")) {
            // Images, audio and tool use are not passed on: a tool asked for text.
            return Err(AskError::Malformed);
        }
        let Some(Value::String(part)) = block.remove("text") else {
            return Err(AskError::Malformed);
        };
        block.remove("annotations");
        block.remove("_meta");
        if !block.is_empty() {
            return Err(AskError::Malformed);
        }
        text.push_str(&part);
    }
    Ok(Sampled {
        text,
        model,
        stop_reason,
    })
}

/// What a client said it can answer: a legacy session's in `initialize`, a modern request's
/// in `_meta.clientCapabilities`.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub(crate) struct ClientCan {
    /// `capabilities.elicitation` was an object.
    pub(crate) elicit: bool,
    /// `capabilities.sampling` was an object.
    pub(crate) sample: bool,
    /// `capabilities.roots` was an object.
    pub(crate) roots: bool,
}

impl ClientCan {
    pub(crate) fn declared(capabilities: Option<&Value>) -> Self {
        let has = |name: &str| {
            capabilities
                .and_then(|capabilities| capabilities.get(name))
                .is_some_and(Value::is_object)
        };
        Self {
            elicit: has("elicitation"),
            sample: has("sampling"),
            roots: has("roots"),
        }
    }

    /// Whether the client can answer anything at all.
    pub(crate) fn any(self) -> bool {
        self.elicit || self.sample || self.roots
    }

    /// Whether the client declared `capability`.
    pub(crate) fn declares(self, capability: Capability) -> bool {
        match capability {
            Capability::Elicitation => self.elicit,
            Capability::Sampling => self.sample,
            Capability::Roots => self.roots,
        }
    }
}

/// Whether `key` may name a question: 1 to [`MAX_INPUT_KEY_BYTES`] of `A-Z a-z 0-9 _ . -`.
pub(crate) fn is_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_INPUT_KEY_BYTES
        && key
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'))
}

/// Whether `key` has the form of an unnamed question's name (`q` and digits), which a tool
/// may not give one of its questions: it could be another question's.
pub(crate) fn is_default_key(key: &str) -> bool {
    key.strip_prefix('q')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> Question {
        Question::Elicit(Elicitation::new("m", schema).unwrap())
    }

    fn elicited(question: &Question, result: Value) -> Result<Elicited, AskError> {
        match question.check(&result.to_string()) {
            Ok(Answer::Elicited(elicited)) => Ok(elicited),
            Ok(Answer::Sampled(_) | Answer::Roots(_)) => Err(AskError::Gone),
            Err(error) => Err(error),
        }
    }

    fn every_kind() -> Question {
        form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe", "maxLength": 8},
                "age": {"type": "integer", "default": 30, "minimum": 0, "maximum": 150},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "titled": {"type": "string", "oneOf": [{"const": "v1", "title": "One"}]},
                "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
                "verified": {"type": "boolean", "default": true},
                "many": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}},
                "titledMany": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}]}, "maxItems": 1}
            },
            "required": ["name"]
        }))
    }

    #[test]
    fn an_answer_that_fits_the_form_is_handed_over_as_sent() {
        let question = every_kind();
        let content = json!({
            "name": "Jane", "age": 25, "score": 88, "status": "inactive", "titled": "v1",
            "legacy": "b", "verified": false, "many": ["x", "z"], "titledMany": ["p"]
        });
        assert_eq!(
            elicited(&question, json!({"action": "accept", "content": content})),
            Ok(Elicited::Accepted(content.as_object().unwrap().clone()))
        );
        assert_eq!(
            elicited(&question, json!({"action": "decline"})),
            Ok(Elicited::Declined)
        );
        assert_eq!(
            elicited(&question, json!({"action": "cancel", "_meta": {}})),
            Ok(Elicited::Cancelled)
        );
    }

    #[test]
    fn a_hostile_answer_is_malformed() {
        let question = every_kind();
        for result in [
            json!({"action": "accept"}),
            json!({"action": "accept", "content": {"name": "Jane", "extra": 1}}),
            json!({"action": "accept", "content": {"name": "123456789"}}),
            json!({"action": "accept", "content": {"name": 5}}),
            json!({"action": "accept", "content": {"name": "J", "age": 1.5}}),
            json!({"action": "accept", "content": {"name": "J", "age": 30.0}}),
            json!({"action": "accept", "content": {"name": "J", "age": 151}}),
            json!({"action": "accept", "content": {"name": "J", "status": "gone"}}),
            json!({"action": "accept", "content": {"name": "J", "many": ["x", "x"]}}),
            json!({"action": "accept", "content": {"name": "J", "many": ["w"]}}),
            json!({"action": "accept", "content": {"name": "J", "titledMany": ["p", "p"]}}),
            json!({"action": "accept", "content": {"name": "J", "verified": "yes"}}),
            json!({"action": "accept", "content": ["name"]}),
            json!({"action": "decline", "content": {"name": "J"}}),
            json!({"action": "ACCEPT", "content": {"name": "J"}}),
            json!({"action": 1}),
            json!({"content": {"name": "J"}}),
            json!({"action": "accept", "content": {"name": "J"}, "more": true}),
            json!([]),
        ] {
            assert_eq!(
                elicited(&question, result.clone()),
                Err(AskError::Malformed),
                "{result}"
            );
        }
        let huge = format!(
            r#"{{"action":"accept","content":{{"name":"{}"}}}}"#,
            "x".repeat(MAX_ANSWER_BYTES)
        );
        assert!(matches!(question.check(&huge), Err(AskError::Malformed)));
        assert!(matches!(
            question.check("{\"action\":"),
            Err(AskError::Malformed)
        ));
    }

    #[test]
    fn a_schema_that_is_not_a_flat_form_is_refused() {
        for schema in [
            json!([]),
            json!({"type": "array"}),
            json!({"type": "object", "properties": {"x": {"type": "object"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "a"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]}),
            json!({"type": "object", "properties": {"x": {"type": "string", "enum": []}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "enum": ["a"], "enumNames": []}}}),
            json!({"type": "object", "properties": {"x": {"type": "integer", "default": "1"}}}),
            json!({"type": "object", "properties": {"x": {"type": "array", "items": {"type": "number"}}}}),
            json!({"type": "object", "additionalProperties": true}),
        ] {
            assert!(Elicitation::new("m", schema.clone()).is_err(), "{schema}");
        }
        let fields: Map<String, Value> = (0..=MAX_FORM_FIELDS)
            .map(|n| (format!("f{n}"), json!({"type": "boolean"})))
            .collect();
        assert!(Elicitation::new("m", json!({"type": "object", "properties": fields})).is_err());
        assert!(
            Elicitation::new(
                "x".repeat(MAX_ASK_TEXT_BYTES + 1),
                json!({"type": "object"})
            )
            .is_err()
        );
    }

    fn sampled(result: Value) -> Result<Sampled, AskError> {
        match Question::Sample(Sampling::new("p")).check(&result.to_string()) {
            Ok(Answer::Sampled(sampled)) => Ok(sampled),
            Ok(Answer::Elicited(_) | Answer::Roots(_)) => Err(AskError::Gone),
            Err(error) => Err(error),
        }
    }

    /// The roots an answer gives, both ways in (a legacy response's raw result, a modern
    /// `inputResponses` value), which must agree; `None` when it is malformed.
    fn roots(result: Value) -> Option<Vec<Root>> {
        let raw = Question::Roots.check(&result.to_string());
        let value = Question::Roots.check_value(&result);
        match (raw, value) {
            (Ok(Answer::Roots(a)), Ok(Answer::Roots(b))) if a == b => Some(a),
            (Err(AskError::Malformed), Err(AskError::Malformed)) => None,
            other => panic!("the two checks disagree: {other:?}"),
        }
    }

    #[test]
    fn a_roots_answer_is_file_uris_of_bounded_size() {
        let listed = roots(json!({"roots": [
            {"uri": "file:///home/u/project", "name": "Project"},
            {"uri": "file:///tmp"},
        ]}))
        .unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].name.as_deref(), Some("Project"));
        assert_eq!(listed[1].uri, "file:///tmp");
        assert_eq!(roots(json!({"roots": []})).unwrap(), vec![]);
        let too_many: Vec<Value> = (0..=MAX_ROOTS)
            .map(|_| json!({"uri": "file:///a"}))
            .collect();
        for bad in [
            json!({}),
            json!({"roots": {}}),
            json!({"roots": [{"uri": "https://example.com/"}]}),
            json!({"roots": [{"uri": "file:///a\nb"}]}),
            json!({"roots": [{"uri": format!("file:///{}", "a".repeat(MAX_ROOT_URI_BYTES))}]}),
            json!({"roots": [{"uri": "file:///a", "name": 5}]}),
            json!({"roots": [{"uri": "file:///a", "extra": 1}]}),
            json!({"roots": [{"name": "no uri"}]}),
            json!({"roots": [], "other": true}),
            json!({"roots": too_many}),
        ] {
            assert_eq!(roots(bad.clone()), None, "{bad:.80}");
        }
    }

    #[test]
    fn a_sampling_answer_is_the_assistants_text_only() {
        assert_eq!(
            sampled(
                json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m", "stopReason": "endTurn"})
            ),
            Ok(Sampled {
                text: "hi".into(),
                model: "m".into(),
                stop_reason: Some("endTurn".into())
            })
        );
        assert_eq!(
            sampled(json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "model": "m"})).map(|s| s.text),
            Ok("ab".to_owned())
        );
        for result in [
            json!({"role": "user", "content": {"type": "text", "text": "hi"}, "model": "m"}),
            json!({"role": "assistant", "content": {"type": "image", "data": "", "mimeType": "image/png"}, "model": "m"}),
            json!({"role": "assistant", "content": {"type": "text", "text": 1}, "model": "m"}),
            json!({"role": "assistant", "content": [], "model": "m"}),
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}}),
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m".repeat(MAX_SAMPLED_MODEL_BYTES + 1)}),
            json!({"role": "assistant", "content": {"type": "text", "text": "hi", "x": 1}, "model": "m"}),
        ] {
            assert_eq!(
                sampled(result.clone()),
                Err(AskError::Malformed),
                "{result}"
            );
        }
    }

    #[test]
    fn the_requests_are_the_servers_own_text() {
        let question = Question::Sample(Sampling::new("p").max_tokens(100).system_prompt("s"));
        assert_eq!(question.method(), "sampling/createMessage");
        assert_eq!(
            question.params(),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "p"}}], "maxTokens": 100, "systemPrompt": "s"})
        );
        let schema = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let question = form(schema.clone());
        assert_eq!(question.method(), "elicitation/create");
        assert_eq!(
            question.params(),
            json!({"message": "m", "requestedSchema": schema})
        );
    }
}
