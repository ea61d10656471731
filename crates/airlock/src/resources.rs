//! Resources: data a client may read by URI (`resources/list`, `resources/templates/list`,
//! `resources/read`), fixed ones and URI templates, frozen at start like tools.
//!
//! A fixed resource has one URI; a template (RFC 6570 level 1: literal text and `{name}`
//! variables) stands for many. A URI the peer sends is read only when it is a string of at
//! most [`MAX_RESOURCE_URI_BYTES`] bytes that is exactly a fixed resource's URI, or that a
//! template matches. A template variable matches 1 to [`MAX_TEMPLATE_VALUE_BYTES`] bytes of
//! unreserved characters and percent-escapes (`A-Z a-z 0-9 - . _ ~`, `%XX`), and the value the
//! handler gets is decoded and guaranteed free of `/`, `\`, control characters, invisible
//! ones (bidirectional overrides, zero-width characters) and of being
//! `.` or `..`: a variable never spans or climbs path segments, however the handler uses it.
//! Anything else is `-32602` `Invalid params: resource not found.`, with nothing of the URI
//! said back (the specification suggests `data.uri`; airlock echoes no peer text).
//!
//! Handlers are synchronous and run inline, under the engine's panic guard, as prompts' do:
//! a resource of the library is data the program has, not work. A handler that blocks holds
//! up the session.

use std::collections::BTreeMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::completion::{Completers, Completion};
use crate::error::McpError;
use crate::limits::{MAX_RESOURCE_URI_BYTES, MAX_RESOURCES_COUNT, MAX_TEMPLATE_VALUE_BYTES};
use crate::output::ResourceBody;
use crate::tools::{BuildError, typed};

/// A fixed resource or a template, ready to register with
/// [`ServerBuilder::resource`](crate::ServerBuilder::resource).
pub struct Resource {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    read: Read,
    completers: Completers,
}

/// A fixed resource's reader: `None` when its contents cannot be given now.
type FixedRead = Arc<dyn Fn() -> Option<ResourceBody> + Send + Sync>;

enum Read {
    Fixed(FixedRead),
    Template {
        schema: Value,
        render: Arc<dyn RenderTemplate>,
    },
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// Starts describing the resource at `uri` (or, for [`ResourceBuilder::template`], the URI
    /// template), called `name`.
    ///
    /// ```
    /// use airlock::schemars::{self, JsonSchema};
    /// use airlock::{Resource, ResourceBody};
    /// use serde::Deserialize;
    ///
    /// let readme = Resource::builder("docs://readme", "readme")
    ///     .mime_type("text/markdown")
    ///     .fixed(|| ResourceBody::Text("# Hello".into()));
    ///
    /// /// One page of the manual.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Page {
    ///     /// The page's name.
    ///     page: String,
    /// }
    /// let manual = Resource::builder("docs://manual/{page}", "manual")
    ///     .template(|args: Page| ResourceBody::Text(format!("The page {}", args.page)));
    /// ```
    pub fn builder(uri: impl Into<String>, name: impl Into<String>) -> ResourceBuilder {
        ResourceBuilder {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            completers: Completers::default(),
        }
    }
}

/// Describes a resource; see [`Resource::builder`].
#[derive(Debug)]
#[must_use]
pub struct ResourceBuilder {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    completers: Completers,
}

impl ResourceBuilder {
    /// What the resource is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// A human-readable name for clients to show.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Its MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Completes a template's `variable` (`completion/complete`), as
    /// [`PromptBuilder::complete`](crate::PromptBuilder::complete) does a prompt's argument.
    /// A variable the template does not have, or a completer on a fixed resource, is refused
    /// when the server is built.
    pub fn complete<F>(mut self, variable: impl Into<String>, complete: F) -> Self
    where
        F: Fn(&str) -> Vec<String> + Send + Sync + 'static,
    {
        self.completers.insert(variable.into(), Arc::new(complete));
        self
    }

    /// Finishes a fixed resource: `read` gives its contents each time it is read. It runs
    /// inline on the session: it must not block.
    pub fn fixed<F>(self, read: F) -> Resource
    where
        F: Fn() -> ResourceBody + Send + Sync + 'static,
    {
        self.with(Read::Fixed(Arc::new(move || Some(read()))))
    }

    /// Finishes a fixed resource whose reading can fail (a file, say): `read` gives its
    /// contents, or `None` when they cannot be given now, which the peer gets as `-32602`
    /// `Invalid params: resource not found.`, the same answer as for a URI no resource has,
    /// with nothing of why. It runs inline on the session: it must not block.
    ///
    /// ```
    /// use airlock::{Resource, ResourceBody};
    ///
    /// let motd = Resource::builder("docs://motd", "motd").fallible(|| {
    ///     let text = std::fs::read_to_string("/nonexistent/motd").ok()?;
    ///     Some(ResourceBody::Text(text))
    /// });
    /// # let _ = motd;
    /// ```
    pub fn fallible<F>(self, read: F) -> Resource
    where
        F: Fn() -> Option<ResourceBody> + Send + Sync + 'static,
    {
        self.with(Read::Fixed(Arc::new(read)))
    }

    /// Finishes a template: the URI given to [`Resource::builder`] is a URI template whose
    /// variables are the fields of `A` (each a `String`), and `read` gives the contents for
    /// the values a read URI holds, checked and decoded (see the module's documentation). It
    /// runs inline on the session: it must not block.
    pub fn template<A, F>(self, read: F) -> Resource
    where
        A: DeserializeOwned + JsonSchema + 'static,
        F: Fn(A) -> ResourceBody + Send + Sync + 'static,
    {
        let (schema, doc) = typed::input_schema::<A>();
        let description = self.description.clone().or(doc);
        let mut resource = self.with(Read::Template {
            schema,
            render: Arc::new(Typed {
                read,
                _arguments: PhantomData::<fn() -> A>,
            }),
        });
        resource.description = description;
        resource
    }

    fn with(self, read: Read) -> Resource {
        Resource {
            uri: self.uri,
            name: self.name,
            title: self.title,
            description: self.description,
            mime_type: self.mime_type,
            read,
            completers: self.completers,
        }
    }
}

/// A template's handler behind its variables' type.
trait RenderTemplate: Send + Sync {
    fn render(&self, values: Map<String, Value>) -> Result<ResourceBody, McpError>;
}

struct Typed<F, A> {
    read: F,
    _arguments: PhantomData<fn() -> A>,
}

impl<F, A> RenderTemplate for Typed<F, A>
where
    A: DeserializeOwned,
    F: Fn(A) -> ResourceBody + Send + Sync,
{
    fn render(&self, values: Map<String, Value>) -> Result<ResourceBody, McpError> {
        let values = serde_json::from_value(Value::Object(values)).map_err(|error| {
            tracing::debug!(category = ?error.classify(), "template values do not fit the type");
            McpError::UnknownResource
        })?;
        Ok((self.read)(values))
    }
}

/// A URI template, parsed: literal text and variables, alternating, never two variables side
/// by side (where one ends would be a guess).
#[derive(Debug)]
struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, PartialEq)]
enum Part {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Parses level-1 `template`, or `None` for anything else (an operator such as `{+x}`,
    /// an empty or unclosed `{}`, a variable name outside `[A-Za-z0-9_]`, two variables side
    /// by side, or no variable at all).
    fn parse(template: &str) -> Option<Self> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let close = rest.find('}')?;
                    let name = rest.get(1..close)?;
                    let valid = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    if !valid || matches!(parts.last(), Some(Part::Variable(_))) {
                        return None;
                    }
                    parts.push(Part::Variable(name.to_owned()));
                    rest = rest.get(close.checked_add(1)?..)?;
                }
                found => {
                    let end = found.unwrap_or(rest.len());
                    let literal = rest.get(..end)?;
                    if literal.contains('}') {
                        return None;
                    }
                    parts.push(Part::Literal(literal.to_owned()));
                    rest = rest.get(end..)?;
                }
            }
        }
        parts
            .iter()
            .any(|part| matches!(part, Part::Variable(_)))
            .then_some(Self { parts })
    }

    fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The decoded values of `uri`'s variables, or `None` when the template does not match
    /// it or a value breaks the rule of the module's documentation.
    fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut values = Map::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    // The value runs to the next literal's first occurrence, or to the end.
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = rest.get(..end)?;
                    values.insert(name.clone(), Value::String(decoded(raw)?));
                    rest = rest.get(end..)?;
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

/// A variable's raw value decoded, or `None` when it is empty, longer than
/// [`MAX_TEMPLATE_VALUE_BYTES`], holds a character that is neither unreserved nor part of a
/// percent-escape, or decodes to text that is not UTF-8, holds `/`, `\`, a control
/// character or an invisible one ([`is_invisible`]), or is `.` or `..`.
fn decoded(raw: &str) -> Option<String> {
    if raw.is_empty() || raw.len() > MAX_TEMPLATE_VALUE_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(raw.len());
    let mut input = raw.bytes();
    while let Some(byte) = input.next() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => bytes.push(byte),
            b'%' => {
                let high = hex(input.next()?)?;
                let low = hex(input.next()?)?;
                bytes.push(high.checked_mul(16)?.checked_add(low)?);
            }
            _ => return None,
        }
    }
    let text = String::from_utf8(bytes).ok()?;
    let refused = text
        .chars()
        .any(|c| c == '/' || c == '\\' || c.is_control() || is_invisible(c))
        || text == "."
        || text == "..";
    (!refused).then_some(text)
}

/// Whether `c` changes how the text around it reads without being seen, or is not seen at
/// all: bidirectional marks, overrides and isolates, zero-width and other default-ignorable
/// characters (soft hyphen, joiners, fillers, variation selectors, tag characters, which
/// can carry hidden ASCII a model reads), line and paragraph separators, interlinear
/// annotations and other format controls. A name or value holding one could show a client
/// (or an operator reading a log) another text than the one read. Control characters are
/// refused on their own (`char::is_control`).
///
/// ```
/// assert!(airlock::is_invisible('\u{202E}'));
/// assert!(airlock::is_invisible('\u{E0041}'));
/// assert!(!airlock::is_invisible('é'));
/// ```
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

/// A checked, frozen resource or template.
pub(crate) struct ResourceDef {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    read: FrozenRead,
    completers: Completers,
}

enum FrozenRead {
    Fixed(FixedRead),
    Template {
        template: UriTemplate,
        render: Arc<dyn RenderTemplate>,
    },
}

impl ResourceDef {
    fn new(resource: Resource) -> Result<Self, BuildError> {
        let refused = || BuildError::InvalidResource(resource.uri.clone());
        let named = !resource.name.is_empty()
            && !resource.uri.is_empty()
            && resource.uri.len() <= MAX_RESOURCE_URI_BYTES
            && !resource.uri.chars().any(char::is_control);
        if !named {
            return Err(refused());
        }
        let read = match resource.read {
            Read::Fixed(read) => {
                if resource.uri.contains(['{', '}']) {
                    return Err(refused());
                }
                if resource.completers.names().next().is_some() {
                    return Err(BuildError::InvalidCompletion(resource.uri));
                }
                FrozenRead::Fixed(read)
            }
            Read::Template { schema, render } => {
                let template = UriTemplate::parse(&resource.uri).ok_or_else(refused)?;
                let completes_variables = resource
                    .completers
                    .names()
                    .all(|name| template.variables().any(|variable| variable == name));
                if !variables_fit(&template, &schema) {
                    return Err(refused());
                }
                if !completes_variables {
                    return Err(BuildError::InvalidCompletion(resource.uri));
                }
                FrozenRead::Template { template, render }
            }
        };
        Ok(Self {
            uri: resource.uri,
            name: resource.name,
            title: resource.title,
            description: resource.description,
            mime_type: resource.mime_type,
            read,
            completers: resource.completers,
        })
    }

    /// Suggestions for a template's `variable` given `typed`, or `None` when this is no
    /// template or has no such variable.
    pub(crate) fn complete(&self, variable: &str, typed: &str) -> Option<Completion> {
        match &self.read {
            FrozenRead::Template { template, .. }
                if template.variables().any(|name| name == variable) =>
            {
                Some(self.completers.complete(variable, typed))
            }
            _ => None,
        }
    }

    fn is_template(&self) -> bool {
        matches!(self.read, FrozenRead::Template { .. })
    }

    /// The resource as `resources/list` (or, for a template, `resources/templates/list`)
    /// shows it.
    pub(crate) fn listing(&self) -> Listing<'_> {
        let (uri, uri_template) = if self.is_template() {
            (None, Some(self.uri.as_str()))
        } else {
            (Some(self.uri.as_str()), None)
        };
        Listing {
            uri,
            uri_template,
            name: &self.name,
            title: self.title.as_deref(),
            description: self.description.as_deref(),
            mime_type: self.mime_type.as_deref(),
        }
    }

    /// Its MIME type, if said.
    pub(crate) fn mime_type(&self) -> Option<&str> {
        self.mime_type.as_deref()
    }
}

/// Whether the template's variables are exactly the type's properties, each a string and
/// required (a variable always has a value).
fn variables_fit(template: &UriTemplate, schema: &Value) -> bool {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return false;
    };
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let variables: Vec<&str> = template.variables().collect();
    let mut unique = variables.clone();
    unique.sort_unstable();
    unique.dedup();
    unique.len() == variables.len()
        && variables.len() == properties.len()
        && properties.iter().all(|(name, property)| {
            variables.contains(&name.as_str())
                && required.contains(&name.as_str())
                && property.get("type") == Some(&Value::String("string".into()))
        })
}

/// A resource or template as the list methods show it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listing<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_template: Option<&'a str>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
}

/// Every resource and template of a server, in registration order, frozen at start.
#[derive(Default)]
pub(crate) struct ResourceRegistry {
    fixed: Vec<ResourceDef>,
    templates: Vec<ResourceDef>,
    /// Fixed resources by exact URI (ordered: no hashing of the peer's text).
    by_uri: BTreeMap<Box<str>, usize>,
    fixed_fingerprint: u64,
    templates_fingerprint: u64,
}

impl ResourceRegistry {
    /// Checks `resources` and freezes them.
    ///
    /// # Errors
    ///
    /// The first [`BuildError`] found.
    pub(crate) fn new(resources: Vec<Resource>) -> Result<Self, BuildError> {
        if resources.len() > MAX_RESOURCES_COUNT {
            return Err(BuildError::TooManyResources);
        }
        let mut registry = Self::default();
        let mut fixed_hash = DefaultHasher::new();
        let mut templates_hash = DefaultHasher::new();
        for resource in resources {
            let def = ResourceDef::new(resource)?;
            let uri: Box<str> = def.uri.as_str().into();
            let repeated = registry
                .fixed
                .iter()
                .chain(&registry.templates)
                .any(|other| other.uri == def.uri);
            if repeated {
                return Err(BuildError::DuplicateResource(uri.into()));
            }
            if def.is_template() {
                uri.hash(&mut templates_hash);
                registry.templates.push(def);
            } else {
                uri.hash(&mut fixed_hash);
                registry.by_uri.insert(uri, registry.fixed.len());
                registry.fixed.push(def);
            }
        }
        registry.fixed_fingerprint = fixed_hash.finish();
        registry.templates_fingerprint = templates_hash.finish();
        Ok(registry)
    }

    /// Whether there are none (then the `resources` capability is not declared).
    pub(crate) fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.templates.is_empty()
    }

    /// One page of fixed resources, or of templates, from `cursor`.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidCursor`] for a cursor this registry did not issue for that list.
    pub(crate) fn page(
        &self,
        templates: bool,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<(&[ResourceDef], Option<String>), McpError> {
        if templates {
            crate::pages::page(
                &self.templates,
                self.templates_fingerprint,
                cursor,
                page_size,
            )
        } else {
            crate::pages::page(&self.fixed, self.fixed_fingerprint, cursor, page_size)
        }
    }

    /// The template whose URI template is exactly `template`.
    pub(crate) fn template(&self, template: &str) -> Option<&ResourceDef> {
        self.templates.iter().find(|def| def.uri == template)
    }

    /// Whether there are templates.
    pub(crate) fn has_templates(&self) -> bool {
        !self.templates.is_empty()
    }

    /// The contents at `uri`, and the resource that gave them.
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownResource`] when no fixed resource has that URI and no template
    /// matches it (see the module's documentation), or when the fixed resource's reader
    /// gives nothing ([`ResourceBuilder::fallible`]).
    pub(crate) fn read(&self, uri: &str) -> Result<(&ResourceDef, ResourceBody), McpError> {
        if uri.len() > MAX_RESOURCE_URI_BYTES {
            return Err(McpError::UnknownResource);
        }
        if let Some(def) = self
            .by_uri
            .get(uri)
            .and_then(|index| self.fixed.get(*index))
            && let FrozenRead::Fixed(read) = &def.read
        {
            return read()
                .map(|body| (def, body))
                .ok_or(McpError::UnknownResource);
        }
        for def in &self.templates {
            if let FrozenRead::Template { template, render } = &def.read
                && let Some(values) = template.matches(uri)
            {
                return Ok((def, render.render(values)?));
            }
        }
        Err(McpError::UnknownResource)
    }
}

/// Announces that resources changed, to every session subscribed to them
/// (`notifications/resources/updated`): give a clone to
/// [`ServerBuilder::resource_subscriptions`] and keep others where resources change (a
/// tool's handler, a watcher thread).
///
/// Cheap to clone and to call from any thread; nothing waits for the sessions. A session that
/// has fallen `RESOURCE_UPDATES_QUEUE` announcements behind is told that each of its
/// subscriptions may have changed: a client re-reads what it cares about, never less.
///
/// [`ServerBuilder::resource_subscriptions`]: crate::ServerBuilder::resource_subscriptions
/// `RESOURCE_UPDATES_QUEUE`: crate::limits::RESOURCE_UPDATES_QUEUE
///
/// ```
/// use airlock::{NoArguments, Resource, ResourceBody, ResourceUpdates, Server, Tool};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let updates = ResourceUpdates::new();
/// let announcer = updates.clone();
/// let touch = Tool::builder("touch")
///     .description("Marks today's notes changed")
///     .handler(move |_: NoArguments| {
///         announcer.updated("notes://today");
///         async { "touched" }
///     });
/// let notes = Resource::builder("notes://today", "today")
///     .fixed(|| ResourceBody::text("nothing yet"));
/// let server = Server::builder("notes", "1.0.0")
///     .tool(touch)
///     .resource(notes)
///     .resource_subscriptions(updates)
///     .build()?;
/// assert!(server.resource_updates().is_some());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ResourceUpdates {
    sender: tokio::sync::broadcast::Sender<Arc<str>>,
}

impl Default for ResourceUpdates {
    fn default() -> Self {
        Self::new()
    }
}

impl ResourceUpdates {
    /// An announcer no server listens to yet.
    pub fn new() -> Self {
        let (sender, _) = tokio::sync::broadcast::channel(crate::limits::RESOURCE_UPDATES_QUEUE);
        Self { sender }
    }

    /// Announces that the resource at `uri` changed. Sessions subscribed to exactly this URI
    /// are told; a URI longer than [`MAX_RESOURCE_URI_BYTES`] names nothing and is ignored.
    pub fn updated(&self, uri: &str) {
        if uri.len() > MAX_RESOURCE_URI_BYTES {
            return;
        }
        // No session listening is not an error: nobody is subscribed.
        let _listeners = self.sender.send(Arc::from(uri));
    }

    /// A session's view of the announcements from now on.
    pub(crate) fn listen(&self) -> tokio::sync::broadcast::Receiver<Arc<str>> {
        self.sender.subscribe()
    }
}

impl ResourceRegistry {
    /// Whether `uri` names a fixed resource or matches a template: what a subscription may
    /// name. Nothing is read (a template's reader may be costly or refuse the values).
    pub(crate) fn knows(&self, uri: &str) -> bool {
        if uri.len() > MAX_RESOURCE_URI_BYTES {
            return false;
        }
        self.by_uri.contains_key(uri)
            || self.templates.iter().any(|def| {
                matches!(&def.read, FrozenRead::Template { template, .. } if template.matches(uri).is_some())
            })
    }
}

impl std::fmt::Debug for ResourceRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceRegistry")
            .field("fixed", &self.fixed.len())
            .field("templates", &self.templates.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    struct Id {
        id: String,
    }

    fn registry() -> ResourceRegistry {
        ResourceRegistry::new(vec![
            Resource::builder("test://static", "static")
                .mime_type("text/plain")
                .fixed(|| ResourceBody::Text("fixed".into())),
            Resource::builder("test://item/{id}/data", "item")
                .template(|args: Id| ResourceBody::Text(format!("item {}", args.id))),
        ])
        .unwrap()
    }

    fn text(body: ResourceBody) -> String {
        match body {
            ResourceBody::Text(text) | ResourceBody::Blob(text) => text,
        }
    }

    #[test]
    fn fixed_uris_are_read_exactly_and_templates_by_their_values() {
        let registry = registry();
        assert_eq!(text(registry.read("test://static").unwrap().1), "fixed");
        assert_eq!(
            text(registry.read("test://item/123/data").unwrap().1),
            "item 123"
        );
        assert_eq!(
            text(registry.read("test://item/a%20b/data").unwrap().1),
            "item a b"
        );
        assert_eq!(
            text(registry.read("test://item/%C3%A9/data").unwrap().1),
            "item é"
        );
    }

    #[test]
    fn a_fallible_resource_that_gives_nothing_reads_as_not_found() {
        let registry = ResourceRegistry::new(vec![
            Resource::builder("test://gone", "gone").fallible(|| None),
            Resource::builder("test://here", "here")
                .fallible(|| Some(ResourceBody::Text("here".into()))),
        ])
        .unwrap();
        assert!(matches!(
            registry.read("test://gone"),
            Err(McpError::UnknownResource)
        ));
        assert_eq!(text(registry.read("test://here").unwrap().1), "here");
    }

    #[test]
    fn a_value_that_would_climb_or_span_segments_matches_nothing() {
        let registry = registry();
        let long = format!(
            "test://item/{}/data",
            "x".repeat(MAX_TEMPLATE_VALUE_BYTES + 1)
        );
        for uri in [
            "test://static/",
            "TEST://static",
            "test://item//data",
            "test://item/../data",
            "test://item/./data",
            "test://item/%2E%2E/data",
            "test://item/a/b/data",
            "test://item/a%2Fb/data",
            "test://item/a%5Cb/data",
            "test://item/%00/data",
            "test://item/%0A/data",
            "test://item/%E2%80%AE/data",
            "test://item/a%E2%80%8Bb/data",
            "test://item/%EF%BB%BF/data",
            "test://item/%ZZ/data",
            "test://item/%4/data",
            "test://item/%FF/data",
            "test://item/a b/data",
            "test://item/a?b/data",
            "test://item/123/data/",
            "test://item/123/dat",
            long.as_str(),
            "",
        ] {
            assert!(
                matches!(registry.read(uri), Err(McpError::UnknownResource)),
                "{uri:?}"
            );
        }
        let huge = "x".repeat(MAX_RESOURCE_URI_BYTES + 1);
        assert!(matches!(
            registry.read(&huge),
            Err(McpError::UnknownResource)
        ));
    }

    #[test]
    fn templates_beyond_level_one_or_that_do_not_fit_their_type_are_refused_at_build() {
        for template in [
            "test://{+path}",
            "test://{a}{id}",
            "test://{}",
            "test://{id",
            "test://id}",
            "test://{i d}",
            "test://none",
            "test://{other}",
            "test://{id}/{id}",
        ] {
            let built = ResourceRegistry::new(vec![
                Resource::builder(template, "t")
                    .template(|_: Id| ResourceBody::Text(String::new())),
            ]);
            assert!(
                matches!(built, Err(BuildError::InvalidResource(_))),
                "{template}"
            );
        }
        let fixed_with_braces = ResourceRegistry::new(vec![
            Resource::builder("test://{id}", "f").fixed(|| ResourceBody::Text(String::new())),
        ]);
        assert!(matches!(
            fixed_with_braces,
            Err(BuildError::InvalidResource(_))
        ));
        let twice = ResourceRegistry::new(vec![
            Resource::builder("test://a", "a").fixed(|| ResourceBody::Text(String::new())),
            Resource::builder("test://a", "b").fixed(|| ResourceBody::Text(String::new())),
        ]);
        assert!(matches!(twice, Err(BuildError::DuplicateResource(uri)) if uri == "test://a"));
    }

    #[test]
    fn lists_show_fixed_resources_and_templates_apart() {
        let registry = registry();
        let (fixed, _) = registry.page(false, None, 10).unwrap();
        let (templates, _) = registry.page(true, None, 10).unwrap();
        assert_eq!(
            serde_json::to_value(fixed.iter().map(ResourceDef::listing).collect::<Vec<_>>())
                .unwrap(),
            serde_json::json!([{"uri": "test://static", "name": "static", "mimeType": "text/plain"}])
        );
        assert_eq!(
            serde_json::to_value(
                templates
                    .iter()
                    .map(ResourceDef::listing)
                    .collect::<Vec<_>>()
            )
            .unwrap(),
            serde_json::json!([{"uriTemplate": "test://item/{id}/data", "name": "item"}])
        );
    }
}
