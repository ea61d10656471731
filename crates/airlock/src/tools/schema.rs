//! A tool's `inputSchema`, compiled once at start, and the checks of arguments against it.
//!
//! Schemas come from trusted code (schemars) or a validated manifest, but the arguments they
//! check are hostile, so the validator is ours and bounded: a closed subset of JSON Schema
//! 2020-12 (the keywords schemars emits and the manifest uses), local `$ref`s only (never
//! fetched, as MCP 2026-07-28 requires), reference cycles refused at compile time, and a step
//! budget per validation. A schema using any other keyword is refused when the server is
//! built: silently ignoring a keyword would make the check looser than the schema reads.
//!
//! A violation is reported with the argument's path and the rule, in fixed words; the value is
//! never quoted. Path segments are property names from the schema or indices we count; a key
//! that only the peer named (one admitted by `additionalProperties`) appears as `*`. The one
//! peer text a violation may hold is the name of a property the tool does not accept, so that
//! an agent can correct its call, and only when that name is a plain identifier
//! (`is_plain_name`: no markup, no spaces, no control characters); the rule lists the
//! properties the schema accepts.

use std::collections::HashMap;
use std::fmt::{self, Write as _};

use regex::{Regex, RegexBuilder};
use serde_json::{Map, Number, Value};

use crate::limits::{MAX_PATTERN_AUTOMATON_BYTES, MAX_REPORTED_VIOLATIONS, MAX_SCHEMA_NODES};

/// Schema nodes visited per validation before giving up (and refusing the arguments).
const VALIDATION_STEP_BUDGET: usize = 200_000;

/// The dialect URI we accept in `$schema`.
const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Why a schema could not be compiled.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A keyword outside the supported subset.
    #[error("keyword `{0}` is not supported by airlock's validator")]
    UnsupportedKeyword(String),
    /// A keyword whose value has the wrong type or range.
    #[error("keyword `{0}` has an invalid value")]
    InvalidKeyword(&'static str),
    /// A `$ref` that is not local or does not resolve.
    #[error("reference `{0}` does not resolve to a local definition")]
    UnresolvedReference(String),
    /// A `$schema` other than 2020-12.
    #[error("only the JSON Schema 2020-12 dialect is supported")]
    UnsupportedDialect,
    /// References that loop without descending into the instance.
    #[error("the schema's references form a cycle that never descends")]
    ReferenceCycle,
    /// More nodes than [`MAX_SCHEMA_NODES`].
    #[error("the schema has more than {MAX_SCHEMA_NODES} nodes")]
    TooLarge,
    /// The root does not accept exactly objects.
    #[error("the root schema must have \"type\": \"object\"")]
    RootNotObject,
    /// A `pattern` that does not compile.
    #[error("a pattern does not compile or is too large")]
    BadPattern,
}

/// A compiled schema.
#[derive(Debug)]
pub(crate) struct Validator {
    nodes: Vec<Node>,
}

/// The longest unexpected property name a violation repeats.
const MAX_NAMED_PROPERTY_BYTES: usize = 64;

/// The most accepted properties a violation lists.
const MAX_LISTED_PROPERTIES: usize = 24;

/// Whether a peer's property name is safe to repeat: 1 to 64 of `A-Z a-z 0-9 _ -`.
fn is_plain_name(name: &str) -> bool {
    (1..=MAX_NAMED_PROPERTY_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// The rule for a property `node` does not accept: its name if plain, and the accepted ones.
fn unexpected_property(key: &str, node: &Node) -> String {
    let named = if is_plain_name(key) {
        format!("`{key}`")
    } else {
        "one whose name is not shown".to_owned()
    };
    let accepted: Vec<String> = node
        .properties
        .iter()
        .take(MAX_LISTED_PROPERTIES)
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    let more = if node.properties.len() > MAX_LISTED_PROPERTIES {
        ", …"
    } else {
        ""
    };
    if accepted.is_empty() {
        format!("has a property the tool does not accept: {named} (it accepts none)")
    } else {
        format!(
            "has a property the tool does not accept: {named} (it accepts {}{more})",
            accepted.join(", ")
        )
    }
}

/// One violation: where and which rule.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) struct Violation {
    /// The argument's path (`count`, `options.level`, `files[2]`), or `arguments` for the root.
    pub path: String,
    /// The rule, as a predicate (`must be at most 200`).
    pub rule: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` {}", self.path, self.rule)
    }
}

impl Validator {
    /// Compiles `schema`, whose root must be an object schema.
    ///
    /// # Errors
    ///
    /// [`SchemaError`] for anything outside the supported subset.
    pub(crate) fn compile(schema: &Value) -> Result<Self, SchemaError> {
        let mut compiler = Compiler {
            root: schema,
            nodes: Vec::new(),
            refs: HashMap::new(),
        };
        if let Value::Object(map) = schema {
            match map.get("$schema") {
                None => {}
                Some(Value::String(uri)) if uri.trim_end_matches('#') == DIALECT_2020_12 => {}
                Some(_) => return Err(SchemaError::UnsupportedDialect),
            }
            if map.get("type") != Some(&Value::from("object")) {
                return Err(SchemaError::RootNotObject);
            }
        } else {
            return Err(SchemaError::RootNotObject);
        }
        let root = compiler.node(schema, true)?;
        if root != 0 {
            return Err(SchemaError::InvalidKeyword("$ref"));
        }
        let validator = Self {
            nodes: compiler.nodes,
        };
        validator.refuse_cycles()?;
        Ok(validator)
    }

    /// Checks `arguments` (the `tools/call` arguments object); returns at most
    /// [`MAX_REPORTED_VIOLATIONS`] violations, first found first. An empty list means the
    /// arguments conform.
    pub(crate) fn validate(&self, arguments: &Value) -> Vec<Violation> {
        let mut run = Run {
            nodes: &self.nodes,
            steps: 0,
            violations: Vec::new(),
            collect: true,
            exhausted: false,
        };
        run.check(0, arguments, &Path::root());
        if run.exhausted {
            return vec![Violation {
                path: "arguments".into(),
                rule: "are too complex to validate".into(),
            }];
        }
        run.violations
    }

    /// Refuses in-place reference loops (`$ref`, `allOf`, `anyOf`, `oneOf`, `not` leading back
    /// to a node without consuming part of the instance): validation would never end.
    fn refuse_cycles(&self) -> Result<(), SchemaError> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Active,
            Done,
        }
        let mut marks = vec![Mark::New; self.nodes.len()];
        for start in 0..self.nodes.len() {
            if marks.get(start) != Some(&Mark::New) {
                continue;
            }
            // Iterative depth-first search over in-place edges.
            let mut stack = vec![(start, 0usize)];
            if let Some(mark) = marks.get_mut(start) {
                *mark = Mark::Active;
            }
            while let Some((node, edge)) = stack.pop() {
                let next = self.nodes.get(node).and_then(|n| n.in_place_edge(edge));
                match next {
                    None => {
                        if let Some(mark) = marks.get_mut(node) {
                            *mark = Mark::Done;
                        }
                    }
                    Some(target) => {
                        stack.push((node, edge.saturating_add(1)));
                        match marks.get(target) {
                            Some(Mark::Active) => return Err(SchemaError::ReferenceCycle),
                            Some(Mark::New) => {
                                if let Some(mark) = marks.get_mut(target) {
                                    *mark = Mark::Active;
                                }
                                stack.push((target, 0));
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Index of a node in `Validator::nodes`.
type NodeId = usize;

#[derive(Debug, Default)]
struct Node {
    /// `false` schema: nothing conforms.
    never: bool,
    types: Option<TypeSet>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<Num>,
    maximum: Option<Num>,
    exclusive_minimum: Option<Num>,
    exclusive_maximum: Option<Num>,
    multiple_of: Option<u64>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    pattern: Option<(Regex, String)>,
    items: Option<NodeId>,
    min_items: Option<usize>,
    max_items: Option<usize>,
    unique_items: bool,
    properties: Vec<(String, NodeId)>,
    required: Vec<String>,
    additional: Additional,
    min_properties: Option<usize>,
    max_properties: Option<usize>,
    all_of: Vec<NodeId>,
    any_of: Vec<NodeId>,
    one_of: Vec<NodeId>,
    not: Option<NodeId>,
    reference: Option<NodeId>,
}

impl Node {
    /// The `index`-th in-place edge (applicators that do not descend into the instance).
    fn in_place_edge(&self, index: usize) -> Option<NodeId> {
        self.reference
            .iter()
            .chain(&self.all_of)
            .chain(&self.any_of)
            .chain(&self.one_of)
            .chain(&self.not)
            .nth(index)
            .copied()
    }
}

#[derive(Debug, Default)]
enum Additional {
    #[default]
    Any,
    Deny,
    Schema(NodeId),
}

/// A set of JSON types, one bit each.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
struct TypeSet(u8);

impl TypeSet {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 2;
    const INTEGER: u8 = 4;
    const NUMBER: u8 = 8;
    const STRING: u8 = 16;
    const ARRAY: u8 = 32;
    const OBJECT: u8 = 64;

    fn bit(name: &str) -> Option<u8> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => return None,
        })
    }

    fn admits(self, value: &Value) -> bool {
        let bit = match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(n) if is_integer(n) => {
                return self.0 & (Self::INTEGER | Self::NUMBER) != 0;
            }
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        };
        self.0 & bit != 0
    }

    /// "an integer", "a string or null", …
    fn describe(self) -> String {
        let names = [
            (Self::OBJECT, "an object"),
            (Self::ARRAY, "an array"),
            (Self::STRING, "a string"),
            (Self::INTEGER, "an integer"),
            (Self::NUMBER, "a number"),
            (Self::BOOLEAN, "a boolean"),
            (Self::NULL, "null"),
        ];
        let parts: Vec<&str> = names
            .iter()
            .filter(|(bit, _)| self.0 & bit != 0)
            .map(|(_, name)| *name)
            .collect();
        parts.join(" or ")
    }
}

/// A number from a schema or an instance, compared exactly when both are integers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn of(number: &Number) -> Self {
        if let Some(n) = number.as_i64() {
            return Self::Int(i128::from(n));
        }
        if let Some(n) = number.as_u64() {
            return Self::Int(i128::from(n));
        }
        Self::Float(number.as_f64().unwrap_or(f64::NAN))
    }

    /// `self` compared with `other`; `None` only for NaN, which JSON cannot carry.
    fn cmp(self, other: Self) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }

    #[expect(
        clippy::as_conversions,
        reason = "int to float for mixed comparisons; rounding only past 2^53, where JSON numbers are approximate anyway"
    )]
    fn as_f64(self) -> f64 {
        match self {
            Self::Int(n) => n as f64,
            Self::Float(f) => f,
        }
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(n) => n.fmt(f),
            Self::Float(x) => x.fmt(f),
        }
    }
}

fn is_integer(number: &Number) -> bool {
    number.is_i64() || number.is_u64()
}

struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    /// `$ref` string → its node, so shared and recursive definitions compile once.
    refs: HashMap<String, NodeId>,
}

impl<'s> Compiler<'s> {
    fn node(&mut self, schema: &'s Value, is_root: bool) -> Result<NodeId, SchemaError> {
        if self.nodes.len() >= MAX_SCHEMA_NODES {
            return Err(SchemaError::TooLarge);
        }
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        let map = match schema {
            Value::Bool(true) => return Ok(id),
            Value::Bool(false) => {
                self.set(id, |n| n.never = true);
                return Ok(id);
            }
            Value::Object(map) => map,
            _ => return Err(SchemaError::InvalidKeyword("schema")),
        };
        let mut node = Node::default();
        for (keyword, value) in map {
            self.keyword(&mut node, keyword, value, is_root)?;
        }
        if let Some(slot) = self.nodes.get_mut(id) {
            *slot = node;
        }
        Ok(id)
    }

    fn set(&mut self, id: NodeId, f: impl FnOnce(&mut Node)) {
        if let Some(node) = self.nodes.get_mut(id) {
            f(node);
        }
    }

    fn keyword(
        &mut self,
        node: &mut Node,
        keyword: &str,
        value: &'s Value,
        is_root: bool,
    ) -> Result<(), SchemaError> {
        match keyword {
            // Annotations: no effect on validation.
            "title" | "description" | "default" | "examples" | "deprecated" | "readOnly"
            | "writeOnly" | "$comment" | "contentEncoding" | "contentMediaType" => {}
            "$schema" if is_root => {}
            "$defs" | "definitions" if is_root => {}
            "format" => node_format(node, value)?,
            "type" => node.types = Some(types(value)?),
            "enum" => match value {
                Value::Array(values) => node.enumeration = Some(values.clone()),
                _ => return Err(SchemaError::InvalidKeyword("enum")),
            },
            "const" => node.constant = Some(value.clone()),
            "minimum" => node.minimum = Some(number(value, "minimum")?),
            "maximum" => node.maximum = Some(number(value, "maximum")?),
            "exclusiveMinimum" => {
                node.exclusive_minimum = Some(number(value, "exclusiveMinimum")?);
            }
            "exclusiveMaximum" => {
                node.exclusive_maximum = Some(number(value, "exclusiveMaximum")?);
            }
            "multipleOf" => match value.as_u64() {
                Some(m) if m > 0 => node.multiple_of = Some(m),
                _ => {
                    return Err(SchemaError::UnsupportedKeyword(
                        "multipleOf (non-integer)".into(),
                    ));
                }
            },
            "minLength" => node.min_length = Some(count(value, "minLength")?),
            "maxLength" => node.max_length = Some(count(value, "maxLength")?),
            "pattern" => {
                let Value::String(source) = value else {
                    return Err(SchemaError::InvalidKeyword("pattern"));
                };
                let regex = RegexBuilder::new(source)
                    .size_limit(MAX_PATTERN_AUTOMATON_BYTES)
                    .dfa_size_limit(MAX_PATTERN_AUTOMATON_BYTES)
                    .build()
                    .map_err(|_| SchemaError::BadPattern)?;
                node.pattern = Some((regex, source.clone()));
            }
            "items" => node.items = Some(self.node(value, false)?),
            "minItems" => node.min_items = Some(count(value, "minItems")?),
            "maxItems" => node.max_items = Some(count(value, "maxItems")?),
            "uniqueItems" => match value {
                Value::Bool(unique) => node.unique_items = *unique,
                _ => return Err(SchemaError::InvalidKeyword("uniqueItems")),
            },
            "properties" => {
                let Value::Object(properties) = value else {
                    return Err(SchemaError::InvalidKeyword("properties"));
                };
                for (name, schema) in properties {
                    let child = self.node(schema, false)?;
                    node.properties.push((name.clone(), child));
                }
            }
            "required" => {
                let Value::Array(names) = value else {
                    return Err(SchemaError::InvalidKeyword("required"));
                };
                for name in names {
                    let Value::String(name) = name else {
                        return Err(SchemaError::InvalidKeyword("required"));
                    };
                    node.required.push(name.clone());
                }
            }
            "additionalProperties" => {
                node.additional = match value {
                    Value::Bool(true) => Additional::Any,
                    Value::Bool(false) => Additional::Deny,
                    schema => Additional::Schema(self.node(schema, false)?),
                };
            }
            "minProperties" => node.min_properties = Some(count(value, "minProperties")?),
            "maxProperties" => node.max_properties = Some(count(value, "maxProperties")?),
            "allOf" => node.all_of = self.list(value, "allOf")?,
            "anyOf" => node.any_of = self.list(value, "anyOf")?,
            "oneOf" => node.one_of = self.list(value, "oneOf")?,
            "not" => node.not = Some(self.node(value, false)?),
            "$ref" => {
                let Value::String(reference) = value else {
                    return Err(SchemaError::InvalidKeyword("$ref"));
                };
                node.reference = Some(self.reference(reference)?);
            }
            other => return Err(SchemaError::UnsupportedKeyword(other.to_owned())),
        }
        Ok(())
    }

    fn list(
        &mut self,
        value: &'s Value,
        keyword: &'static str,
    ) -> Result<Vec<NodeId>, SchemaError> {
        let Value::Array(schemas) = value else {
            return Err(SchemaError::InvalidKeyword(keyword));
        };
        if schemas.is_empty() {
            return Err(SchemaError::InvalidKeyword(keyword));
        }
        schemas
            .iter()
            .map(|schema| self.node(schema, false))
            .collect()
    }

    /// Resolves `#`, `#/$defs/Name` or `#/definitions/Name`.
    fn reference(&mut self, reference: &str) -> Result<NodeId, SchemaError> {
        if let Some(id) = self.refs.get(reference) {
            return Ok(*id);
        }
        let unresolved = || SchemaError::UnresolvedReference(reference.to_owned());
        if reference == "#" {
            return Ok(0);
        }
        let pointer = reference.strip_prefix('#').ok_or_else(unresolved)?;
        let mut segments = pointer.split('/').skip(1);
        let container = segments.next().ok_or_else(unresolved)?;
        let name = segments.next().ok_or_else(unresolved)?;
        if segments.next().is_some() || !matches!(container, "$defs" | "definitions") {
            return Err(unresolved());
        }
        let name = name.replace("~1", "/").replace("~0", "~");
        let target = self
            .root
            .get(container)
            .and_then(|defs| defs.get(&name))
            .ok_or_else(unresolved)?;
        // Reserve the id before compiling so a recursive definition finds itself.
        let id = self.nodes.len();
        self.refs.insert(reference.to_owned(), id);
        let compiled = self.node(target, false)?;
        if compiled != id {
            return Err(SchemaError::InvalidKeyword("$ref"));
        }
        Ok(id)
    }
}

fn types(value: &Value) -> Result<TypeSet, SchemaError> {
    let mut bits = 0u8;
    let mut add = |name: &Value| match name.as_str().and_then(TypeSet::bit) {
        Some(bit) => {
            bits |= bit;
            Ok(())
        }
        None => Err(SchemaError::InvalidKeyword("type")),
    };
    match value {
        Value::Array(names) if !names.is_empty() => names.iter().try_for_each(&mut add)?,
        Value::String(_) => add(value)?,
        _ => return Err(SchemaError::InvalidKeyword("type")),
    }
    Ok(TypeSet(bits))
}

/// `format` is an annotation in 2020-12, except that the integer formats schemars emits
/// (`uint8` … `int64`) say which range the Rust type holds: enforcing it turns an overflow
/// into a named rule instead of a deserialisation failure.
fn node_format(node: &mut Node, value: &Value) -> Result<(), SchemaError> {
    let Value::String(format) = value else {
        return Err(SchemaError::InvalidKeyword("format"));
    };
    let range: Option<(i128, i128)> = match format.as_str() {
        "uint8" => Some((0, i128::from(u8::MAX))),
        "uint16" => Some((0, i128::from(u16::MAX))),
        "uint32" => Some((0, i128::from(u32::MAX))),
        "uint64" | "uint" => Some((0, i128::from(u64::MAX))),
        "int8" => Some((i128::from(i8::MIN), i128::from(i8::MAX))),
        "int16" => Some((i128::from(i16::MIN), i128::from(i16::MAX))),
        "int32" => Some((i128::from(i32::MIN), i128::from(i32::MAX))),
        "int64" | "int" => Some((i128::from(i64::MIN), i128::from(i64::MAX))),
        _ => None,
    };
    if let Some((low, high)) = range {
        node.minimum = Some(tighter(
            node.minimum,
            Num::Int(low),
            std::cmp::Ordering::Greater,
        ));
        node.maximum = Some(tighter(
            node.maximum,
            Num::Int(high),
            std::cmp::Ordering::Less,
        ));
    }
    Ok(())
}

/// The stricter of an existing bound and a new one.
fn tighter(existing: Option<Num>, new: Num, stricter: std::cmp::Ordering) -> Num {
    match existing {
        Some(old) if old.cmp(new) == Some(stricter) => old,
        _ => new,
    }
}

fn number(value: &Value, keyword: &'static str) -> Result<Num, SchemaError> {
    match value {
        Value::Number(n) => Ok(Num::of(n)),
        _ => Err(SchemaError::InvalidKeyword(keyword)),
    }
}

fn count(value: &Value, keyword: &'static str) -> Result<usize, SchemaError> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(SchemaError::InvalidKeyword(keyword))
}

/// The path of the value being checked: a chain of segments on the stack as the walk
/// descends, written out only when a violation is recorded (a valid call allocates nothing
/// for it).
#[derive(Clone, Copy)]
struct Path<'p> {
    up: Option<(&'p Path<'p>, Segment<'p>)>,
}

impl Path<'_> {
    fn root() -> Path<'static> {
        Path { up: None }
    }

    fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut at = self;
        while let Some((parent, segment)) = at.up {
            segments.push(segment);
            at = parent;
        }
        if segments.is_empty() {
            return "arguments".to_owned();
        }
        let mut text = String::new();
        for segment in segments.iter().rev() {
            // Writing to a String cannot fail.
            let _written = match segment {
                Segment::Property(name) if text.is_empty() => text.write_str(name),
                Segment::Property(name) => write!(text, ".{name}"),
                Segment::AnyProperty if text.is_empty() => text.write_str("*"),
                Segment::AnyProperty => text.write_str(".*"),
                Segment::Index(i) => write!(text, "[{i}]"),
            };
        }
        text
    }

    /// Runs `f` with `segment` appended.
    fn with<T>(&self, segment: Segment<'_>, f: impl FnOnce(&Path<'_>) -> T) -> T {
        f(&Path {
            up: Some((self, segment)),
        })
    }
}

#[derive(Clone, Copy)]
enum Segment<'a> {
    /// A property named by the schema.
    Property(&'a str),
    /// A property only the peer named: never echoed.
    AnyProperty,
    Index(usize),
}

struct Run<'v> {
    nodes: &'v [Node],
    steps: usize,
    violations: Vec<Violation>,
    /// Whether violations are recorded (false while probing `anyOf`/`oneOf`/`not` branches).
    collect: bool,
    exhausted: bool,
}

impl Run<'_> {
    /// Checks `value` against node `id`; returns whether it conforms.
    fn check(&mut self, id: NodeId, value: &Value, path: &Path<'_>) -> bool {
        self.steps = self.steps.saturating_add(1);
        if self.steps > VALIDATION_STEP_BUDGET {
            self.exhausted = true;
        }
        if self.exhausted {
            return false;
        }
        let Some(node) = self.nodes.get(id) else {
            return false;
        };
        if node.never {
            return self.fail(path, "is not allowed".into());
        }
        if let Some(types) = node.types
            && !types.admits(value)
        {
            // Nothing else about a value of the wrong type is worth saying.
            return self.fail(path, format!("must be {}", types.describe()));
        }
        let mut ok = true;
        if let Some(allowed) = &node.enumeration
            && !allowed.contains(value)
        {
            ok = self.fail(path, format!("must be one of {}", list_values(allowed)));
        }
        if let Some(constant) = &node.constant
            && constant != value
        {
            ok = self.fail(path, format!("must be {}", show_value(constant)));
        }
        match value {
            Value::Number(number) => ok &= self.number(node, &Num::of(number), path),
            Value::String(text) => ok &= self.string(node, text, path),
            Value::Array(items) => ok &= self.array(node, items, path),
            Value::Object(object) => ok &= self.object(node, object, path),
            Value::Null | Value::Bool(_) => {}
        }
        ok &= self.applicators(node, value, path);
        ok
    }

    fn fail(&mut self, path: &Path, rule: String) -> bool {
        if self.collect && self.violations.len() < MAX_REPORTED_VIOLATIONS {
            self.violations.push(Violation {
                path: path.render(),
                rule,
            });
        }
        false
    }

    fn number(&mut self, node: &Node, n: &Num, path: &Path<'_>) -> bool {
        use std::cmp::Ordering::{Greater, Less};
        let mut ok = true;
        if let Some(min) = node.minimum
            && n.cmp(min) == Some(Less)
        {
            ok = self.fail(path, format!("must be at least {min}"));
        }
        if let Some(max) = node.maximum
            && n.cmp(max) == Some(Greater)
        {
            ok = self.fail(path, format!("must be at most {max}"));
        }
        if let Some(min) = node.exclusive_minimum
            && n.cmp(min) != Some(Greater)
        {
            ok = self.fail(path, format!("must be greater than {min}"));
        }
        if let Some(max) = node.exclusive_maximum
            && n.cmp(max) != Some(Less)
        {
            ok = self.fail(path, format!("must be less than {max}"));
        }
        if let Some(m) = node.multiple_of {
            let multiple = match n {
                Num::Int(i) => i.checked_rem(i128::from(m)) == Some(0),
                Num::Float(_) => false,
            };
            if !multiple {
                ok = self.fail(path, format!("must be a multiple of {m}"));
            }
        }
        ok
    }

    fn string(&mut self, node: &Node, text: &str, path: &Path<'_>) -> bool {
        let mut ok = true;
        if node.min_length.is_some() || node.max_length.is_some() {
            let chars = text.chars().count();
            if let Some(min) = node.min_length
                && chars < min
            {
                ok = self.fail(path, format!("must be at least {min} characters long"));
            }
            if let Some(max) = node.max_length
                && chars > max
            {
                ok = self.fail(path, format!("must be at most {max} characters long"));
            }
        }
        if let Some((regex, source)) = &node.pattern
            && !regex.is_match(text)
        {
            ok = self.fail(path, format!("must match the pattern `{source}`"));
        }
        ok
    }

    fn array(&mut self, node: &Node, items: &[Value], path: &Path<'_>) -> bool {
        let mut ok = true;
        if let Some(min) = node.min_items
            && items.len() < min
        {
            ok = self.fail(path, format!("must have at least {min} items"));
        }
        if let Some(max) = node.max_items
            && items.len() > max
        {
            ok = self.fail(path, format!("must have at most {max} items"));
        }
        if node.unique_items && !self.all_distinct(items) {
            ok = self.fail(path, "must not repeat items".into());
        }
        if let Some(schema) = node.items {
            for (index, item) in items.iter().enumerate() {
                ok &= path.with(Segment::Index(index), |path| self.check(schema, item, path));
            }
        }
        ok
    }

    fn all_distinct(&mut self, items: &[Value]) -> bool {
        for (i, a) in items.iter().enumerate() {
            for b in items.iter().skip(i.saturating_add(1)) {
                self.steps = self.steps.saturating_add(1);
                if self.steps > VALIDATION_STEP_BUDGET {
                    self.exhausted = true;
                    return false;
                }
                if a == b {
                    return false;
                }
            }
        }
        true
    }

    fn object(&mut self, node: &Node, object: &Map<String, Value>, path: &Path<'_>) -> bool {
        let mut ok = true;
        for name in &node.required {
            if !object.contains_key(name) {
                ok = path.with(Segment::Property(name), |path| {
                    self.fail(path, "is required".into())
                }) && ok;
            }
        }
        if let Some(min) = node.min_properties
            && object.len() < min
        {
            ok = self.fail(path, format!("must have at least {min} properties"));
        }
        if let Some(max) = node.max_properties
            && object.len() > max
        {
            ok = self.fail(path, format!("must have at most {max} properties"));
        }
        for (key, value) in object {
            let declared = node.properties.iter().find(|(name, _)| name == key);
            match (declared, &node.additional) {
                (Some((name, schema)), _) => {
                    ok &= path.with(Segment::Property(name), |path| {
                        self.check(*schema, value, path)
                    });
                }
                (None, Additional::Any) => {}
                (None, Additional::Deny) => {
                    ok = self.fail(path, unexpected_property(key, node));
                }
                (None, Additional::Schema(schema)) => {
                    ok &= path.with(Segment::AnyProperty, |path| {
                        self.check(*schema, value, path)
                    });
                }
            }
        }
        ok
    }

    fn applicators(&mut self, node: &Node, value: &Value, path: &Path<'_>) -> bool {
        let mut ok = true;
        if let Some(target) = node.reference {
            ok &= self.check(target, value, path);
        }
        for schema in &node.all_of {
            ok &= self.check(*schema, value, path);
        }
        if !node.any_of.is_empty() {
            let matched = node
                .any_of
                .iter()
                .any(|schema| self.probe(*schema, value, path));
            if !matched {
                ok = self.fail(path, "does not match any of the accepted forms".into());
            }
        }
        if !node.one_of.is_empty() {
            let matches = node
                .one_of
                .iter()
                .filter(|schema| self.probe(**schema, value, path))
                .count();
            if matches != 1 {
                ok = self.fail(path, "must match exactly one of the accepted forms".into());
            }
        }
        if let Some(schema) = node.not
            && self.probe(schema, value, path)
        {
            ok = self.fail(path, "matches a form the tool refuses".into());
        }
        ok
    }

    /// Checks without recording violations.
    fn probe(&mut self, id: NodeId, value: &Value, path: &Path<'_>) -> bool {
        let collect = std::mem::replace(&mut self.collect, false);
        let ok = self.check(id, value, path);
        self.collect = collect;
        ok
    }
}

/// A schema value for a message: short scalars as JSON, anything else described.
fn show_value(value: &Value) -> String {
    match value {
        Value::String(text) if text.len() <= 64 => Value::from(text.as_str()).to_string(),
        Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "the value the tool expects".to_owned(),
    }
}

fn list_values(values: &[Value]) -> String {
    const SHOWN: usize = 16;
    let mut shown: Vec<String> = values.iter().take(SHOWN).map(show_value).collect();
    if values.len() > SHOWN {
        shown.push("…".to_owned());
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn violations(schema: Value, arguments: Value) -> Vec<String> {
        let validator = Validator::compile(&schema).unwrap();
        validator
            .validate(&arguments)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 200},
                "unit": {"type": "string", "enum": ["celsius", "kelvin"]},
                "name": {"type": ["string", "null"], "maxLength": 3, "pattern": "^[a-z]+$"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2,
                         "uniqueItems": true},
                "nested": {"$ref": "#/$defs/Nested"}
            },
            "required": ["count"],
            "additionalProperties": false,
            "$defs": {"Nested": {"type": "object", "properties": {"level": {"type": "integer"}},
                                 "additionalProperties": {"type": "boolean"}}}
        })
    }

    #[test]
    fn conforming_arguments_pass() {
        assert!(
            violations(
                schema(),
                json!({"count": 5, "unit": "kelvin", "name": null})
            )
            .is_empty()
        );
        assert!(
            violations(
                schema(),
                json!({"count": 1, "tags": ["a"], "nested": {"level": 2, "x": true}})
            )
            .is_empty()
        );
    }

    #[test]
    fn each_rule_names_the_argument_and_never_the_value() {
        assert_eq!(violations(schema(), json!({})), ["`count` is required"]);
        assert_eq!(
            violations(schema(), json!({"count": 500})),
            ["`count` must be at most 200"]
        );
        assert_eq!(
            violations(schema(), json!({"count": 0})),
            ["`count` must be at least 1"]
        );
        assert_eq!(
            violations(schema(), json!({"count": "5"})),
            ["`count` must be an integer"]
        );
        assert_eq!(
            violations(schema(), json!({"count": 1.5})),
            ["`count` must be an integer"]
        );
        assert_eq!(
            violations(schema(), json!({"count": 1, "unit": "rankine"})),
            ["`unit` must be one of \"celsius\", \"kelvin\""]
        );
        assert_eq!(
            violations(schema(), json!({"count": 1, "name": "ABCD"})),
            [
                "`name` must be at most 3 characters long",
                "`name` must match the pattern `^[a-z]+$`"
            ]
        );
        // The agent learns which property to drop; a name that is not a plain
        // identifier is not repeated.
        assert_eq!(
            violations(schema(), json!({"count": 1, "secret-key-xyz": 1})),
            [
                "`arguments` has a property the tool does not accept: `secret-key-xyz` (it \
                 accepts `count`, `name`, `nested`, `tags`, `unit`)"
            ]
        );
        assert_eq!(
            violations(schema(), json!({"count": 1, "<b>ignore previous</b>": 1})),
            [
                "`arguments` has a property the tool does not accept: one whose name is not \
                 shown (it accepts `count`, `name`, `nested`, `tags`, `unit`)"
            ]
        );
        assert_eq!(
            violations(schema(), json!({"count": 1, "tags": ["a", "a", 3]})),
            [
                "`tags` must have at most 2 items",
                "`tags` must not repeat items",
                "`tags[2]` must be a string"
            ]
        );
        assert_eq!(
            violations(
                schema(),
                json!({"count": 1, "nested": {"level": "x", "hostile<key>": 1}})
            ),
            [
                "`nested.*` must be a boolean",
                "`nested.level` must be an integer"
            ]
        );
    }

    #[test]
    fn integer_formats_bound_the_range() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint8"}}});
        assert_eq!(
            violations(schema.clone(), json!({"n": 256})),
            ["`n` must be at most 255"]
        );
        assert_eq!(
            violations(schema, json!({"n": -1})),
            ["`n` must be at least 0"]
        );
    }

    #[test]
    fn unsupported_shapes_are_refused_at_compile_time() {
        let compile = |schema: Value| Validator::compile(&schema).unwrap_err();
        assert_eq!(
            compile(json!({"type": "object", "patternProperties": {}})),
            SchemaError::UnsupportedKeyword("patternProperties".into())
        );
        assert_eq!(
            compile(json!({"type": "string"})),
            SchemaError::RootNotObject
        );
        assert_eq!(
            compile(
                json!({"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"})
            ),
            SchemaError::UnsupportedDialect
        );
        assert!(matches!(
            compile(json!({"type": "object", "properties": {"a": {"$ref": "https://evil/x"}}})),
            SchemaError::UnresolvedReference(_)
        ));
        assert_eq!(
            compile(
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
                           "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/B"}]}, "B": {"$ref": "#/$defs/A"}}})
            ),
            SchemaError::ReferenceCycle
        );
        assert_eq!(
            compile(
                json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "(?=x)"}}})
            ),
            SchemaError::BadPattern
        );
    }

    #[test]
    fn recursive_definitions_that_descend_are_accepted() {
        let schema = json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Tree"}},
            "$defs": {"Tree": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}
        });
        assert!(
            violations(
                schema.clone(),
                json!({"tree": {"children": [{"children": []}]}})
            )
            .is_empty()
        );
        assert_eq!(
            violations(schema, json!({"tree": {"children": [{"children": [1]}]}})),
            ["`tree.children[0].children[0]` must be an object"]
        );
    }

    #[test]
    fn one_of_and_any_of_report_one_violation_for_the_whole_value() {
        let schema = json!({"type": "object", "properties": {"v": {"oneOf": [
            {"type": "string", "const": "a"}, {"type": "string", "const": "b"}]}}});
        assert!(violations(schema.clone(), json!({"v": "a"})).is_empty());
        assert_eq!(
            violations(schema, json!({"v": "c"})),
            ["`v` must match exactly one of the accepted forms"]
        );
    }

    #[test]
    fn exponential_schemas_run_out_of_budget_instead_of_time() {
        // Each level doubles the work: 2^30 paths without the budget.
        let mut defs = Map::new();
        for level in 0..30 {
            let next = format!("#/$defs/L{}", level + 1);
            defs.insert(
                format!("L{level}"),
                json!({"anyOf": [{"$ref": next, "type": "integer", "minimum": 5}, {"$ref": next}]}),
            );
        }
        defs.insert("L30".into(), json!({"type": "string"}));
        let schema =
            json!({"type": "object", "properties": {"v": {"$ref": "#/$defs/L0"}}, "$defs": defs});
        assert_eq!(
            violations(schema, json!({"v": 1})),
            ["`arguments` are too complex to validate"]
        );
    }
}
