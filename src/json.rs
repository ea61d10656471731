//! Strict JSON reading for the envelope: one pass over the frame, nesting capped, repeated
//! keys detected, the `id` kept as raw text.
//!
//! serde_json does the tokenising (and refuses invalid UTF-8 in strings, lone surrogates,
//! `NaN`, `Infinity` and trailing garbage); the visitors here add what it does not check:
//! nesting depth against our own limit, and keys repeated in any object. Parsers disagree on
//! which copy of a repeated key wins, which is how checks get smuggled past; we refuse the
//! message instead. A frame is read once: the members the envelope needs come out as values,
//! the rest (`result`, `error`, unknown members, batch items) is checked and dropped.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A hard fault: the frame cannot be read at all.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum JsonFault {
    /// Not valid JSON.
    Syntax,
    /// Nested deeper than the limit.
    TooDeep,
}

/// The shape of the top-level value.
#[derive(Debug)]
pub(crate) enum TopLevel<'a> {
    /// An object, with the members JSON-RPC defines pulled out.
    Object(Members<'a>),
    /// An array (a batch).
    Array,
    /// A string, number, boolean or null.
    Scalar,
}

/// The members of a top-level object.
#[derive(Debug, Default)]
pub(crate) struct Members<'a> {
    /// `jsonrpc`, if present.
    pub(crate) jsonrpc: Option<Text<'a>>,
    /// `id` as raw text, if present.
    pub(crate) id: Option<&'a RawValue>,
    /// `method`, if present.
    pub(crate) method: Option<Text<'a>>,
    /// `params`, if present.
    pub(crate) params: Option<ParamsMember<'a>>,
    /// Whether `result` or `error` is present.
    pub(crate) has_result_or_error: bool,
    /// Whether a member JSON-RPC 2.0 does not define is present.
    pub(crate) has_unknown_member: bool,
    /// Whether `id` appears more than once.
    pub(crate) id_repeated: bool,
    /// Whether any object anywhere in the frame repeats a key.
    pub(crate) repeated_key: bool,
}

/// The `params` member: an object with its members pulled out, or anything else (checked for
/// depth and repeated keys like the rest, then dropped).
#[derive(Debug)]
pub(crate) enum ParamsMember<'a> {
    /// An object. Boxed: every frame's members are moved a few times on their way to dispatch,
    /// and most frames (pings, notifications) have no params to carry.
    Object(Box<Params<'a>>),
    /// Any other value.
    NotAnObject,
}

/// The members of a request's or notification's `params` that some method reads, pulled out
/// without allocating for their names: strings borrowed from the frame when they hold no
/// escape, objects and ids as values. Any other member is only noted (its value is checked
/// like the rest of the frame, then dropped): methods that define no such member refuse it.
#[derive(Debug, Default)]
pub struct Params<'a> {
    /// `name` (`tools/call`).
    pub(crate) name: Option<Text<'a>>,
    /// `cursor` (`tools/list`).
    pub(crate) cursor: Option<Text<'a>>,
    /// `protocolVersion` (`initialize`).
    pub(crate) protocol_version: Option<Text<'a>>,
    /// `arguments` (`tools/call`).
    pub(crate) arguments: Option<Value>,
    /// `_meta` (any request).
    pub(crate) meta: Option<Value>,
    /// Whether `capabilities` (`initialize`), when present, is an object.
    pub(crate) capabilities_is_object: Option<bool>,
    /// Whether `clientInfo` (`initialize`), when present, is an object.
    pub(crate) client_info_is_object: Option<bool>,
    /// `requestId` (`notifications/cancelled`).
    pub(crate) request_id: Option<Value>,
    /// Which members are present, as [`ParamKey`] bits.
    present: u16,
}

/// The `params` members some method reads, and one bit for all others.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum ParamKey {
    Name,
    Cursor,
    ProtocolVersion,
    Arguments,
    Meta,
    Capabilities,
    ClientInfo,
    RequestId,
    /// `task` (task-augmented calls, 2025-11-25).
    Task,
    /// Any other member (`reason` of a cancellation, or a name no method defines).
    Other,
}

impl ParamKey {
    fn parse(key: &str) -> Self {
        match key {
            "name" => Self::Name,
            "cursor" => Self::Cursor,
            "protocolVersion" => Self::ProtocolVersion,
            "arguments" => Self::Arguments,
            "_meta" => Self::Meta,
            "capabilities" => Self::Capabilities,
            "clientInfo" => Self::ClientInfo,
            "requestId" => Self::RequestId,
            "task" => Self::Task,
            _ => Self::Other,
        }
    }

    fn bit(self) -> u16 {
        match self {
            Self::Name => 1,
            Self::Cursor => 1 << 1,
            Self::ProtocolVersion => 1 << 2,
            Self::Arguments => 1 << 3,
            Self::Meta => 1 << 4,
            Self::Capabilities => 1 << 5,
            Self::ClientInfo => 1 << 6,
            Self::RequestId => 1 << 7,
            Self::Task => 1 << 8,
            Self::Other => 1 << 9,
        }
    }
}

impl Params<'_> {
    /// Whether `key` is present.
    pub(crate) fn has(&self, key: ParamKey) -> bool {
        self.present & key.bit() != 0
    }

    /// Whether every member present is one of `allowed`.
    pub(crate) fn only(&self, allowed: &[ParamKey]) -> bool {
        let allowed = allowed.iter().fold(0, |bits, key| bits | key.bit());
        self.present & !allowed == 0
    }
}

/// A member that should be a string (`jsonrpc`, `method`): borrowed from the frame when it
/// has no escapes, so the common case allocates nothing.
#[derive(Debug, Eq, PartialEq)]
pub(crate) enum Text<'a> {
    /// A string, unescaped.
    Str(Cow<'a, str>),
    /// Any other value (checked for depth and repeated keys like the rest, then dropped).
    NotAString,
}

impl Text<'_> {
    /// The string, if it is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(text) => Some(text),
            Self::NotAString => None,
        }
    }
}

/// Parses one frame, checking depth against `max_depth` (the top level is depth 1).
///
/// # Errors
///
/// [`JsonFault`] when the frame is not JSON or is nested too deeply.
pub(crate) fn parse_frame(frame: &str, max_depth: usize) -> Result<TopLevel<'_>, JsonFault> {
    let checks = Checks::new(max_depth);
    // From `str`: the frame's UTF-8 was checked once, as a whole, so serde_json does not check
    // each string again.
    let mut deserializer = serde_json::Deserializer::from_str(frame);
    // The members are written in place: returned by value through serde's layers, a struct
    // this size would be copied several times per frame.
    let mut members = Members::default();
    let parsed = TopSeed {
        checks: &checks,
        members: &mut members,
    }
    .deserialize(&mut deserializer)
    .and_then(|shape| deserializer.end().map(|()| shape));
    match parsed {
        Ok(Shape::Object) => {
            members.repeated_key |= checks.repeated_key.get();
            Ok(TopLevel::Object(members))
        }
        Ok(Shape::Array) => Ok(TopLevel::Array),
        Ok(Shape::Scalar) => Ok(TopLevel::Scalar),
        Err(_) if checks.too_deep.get() => Err(JsonFault::TooDeep),
        Err(_) => Err(JsonFault::Syntax),
    }
}

/// What the top-level value is, its members written aside.
enum Shape {
    Object,
    Array,
    Scalar,
}

/// Checks a raw value (an `id` that is an object or array) the way the frame would have been:
/// depth counted from `depth`, repeated keys found.
///
/// Returns whether a key was repeated.
///
/// # Errors
///
/// [`JsonFault`] when nested too deeply (the text is already known to be JSON).
pub(crate) fn check_raw(raw: &RawValue, depth: usize, max_depth: usize) -> Result<bool, JsonFault> {
    let checks = Checks::new(max_depth);
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    match (Skip {
        checks: &checks,
        depth,
    })
    .deserialize(&mut deserializer)
    {
        Ok(_) => Ok(checks.repeated_key.get()),
        Err(_) if checks.too_deep.get() => Err(JsonFault::TooDeep),
        Err(_) => Err(JsonFault::Syntax),
    }
}

/// What the visitors found besides the value, shared across the whole parse.
struct Checks {
    max_depth: usize,
    too_deep: Cell<bool>,
    repeated_key: Cell<bool>,
}

impl Checks {
    fn new(max_depth: usize) -> Self {
        Self {
            max_depth,
            too_deep: Cell::new(false),
            repeated_key: Cell::new(false),
        }
    }

    /// Refuses entering a container at `depth`.
    fn enter<E: de::Error>(&self, depth: usize) -> Result<(), E> {
        if depth > self.max_depth {
            self.too_deep.set(true);
            return Err(E::custom("nesting limit"));
        }
        Ok(())
    }
}

/// The top-level value; an object's members go to `members`.
struct TopSeed<'c, 'm, 'a> {
    checks: &'c Checks,
    members: &'m mut Members<'a>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, '_, 'de> {
    type Value = Shape;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, '_, 'de> {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        self.checks.enter(1)?;
        let members = self.members;
        // The members JSON-RPC defines are told apart without allocating; any other key is
        // kept (hostile input only) so that a repeated one is still found.
        let mut seen_known = 0u8;
        // A set, not a list: a hostile frame may hold a hundred thousand unknown keys, and a
        // linear search over them would make this parse quadratic.
        let mut unknown: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let repeated = match &key {
                TopKey::Known(known) => {
                    let bit = known.bit();
                    let repeated = seen_known & bit != 0;
                    seen_known |= bit;
                    repeated
                }
                TopKey::Other(name) => !unknown.insert(name.clone()),
            };
            members.repeated_key |= repeated;
            match key {
                TopKey::Known(Known::Jsonrpc) => {
                    members.jsonrpc = Some(map.next_value_seed(TextSeed {
                        checks: self.checks,
                        depth: 2,
                    })?);
                }
                TopKey::Known(Known::Method) => {
                    members.method = Some(map.next_value_seed(TextSeed {
                        checks: self.checks,
                        depth: 2,
                    })?);
                }
                TopKey::Known(Known::Params) => {
                    let slot = members.params.insert(ParamsMember::Object(Box::default()));
                    if let ParamsMember::Object(params) = slot {
                        let object = map.next_value_seed(ParamsSeed {
                            checks: self.checks,
                            params,
                        })?;
                        if !object {
                            *slot = ParamsMember::NotAnObject;
                        }
                    }
                }
                TopKey::Known(Known::Id) => {
                    let raw: &'de RawValue = map.next_value()?;
                    members.id_repeated |= repeated;
                    members.id.get_or_insert(raw);
                }
                TopKey::Known(Known::Result | Known::Error) => {
                    members.has_result_or_error = true;
                    map.next_value_seed(Skip {
                        checks: self.checks,
                        depth: 2,
                    })?;
                }
                TopKey::Other(_) => {
                    members.has_unknown_member = true;
                    map.next_value_seed(Skip {
                        checks: self.checks,
                        depth: 2,
                    })?;
                }
            }
        }
        Ok(Shape::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        self.checks.enter(1)?;
        while seq
            .next_element_seed(Skip {
                checks: self.checks,
                depth: 2,
            })?
            .is_some()
        {}
        Ok(Shape::Array)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Shape::Scalar)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Shape::Scalar)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Shape::Scalar)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Shape::Scalar)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Shape::Scalar)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Shape::Scalar)
    }
}

/// A key of the top-level object.
enum TopKey {
    /// A member JSON-RPC defines.
    Known(Known),
    /// Anything else, unescaped.
    Other(String),
}

/// The members JSON-RPC 2.0 defines.
#[derive(Clone, Copy)]
enum Known {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
}

impl Known {
    fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "jsonrpc" => Self::Jsonrpc,
            "id" => Self::Id,
            "method" => Self::Method,
            "params" => Self::Params,
            "result" => Self::Result,
            "error" => Self::Error,
            _ => return None,
        })
    }

    /// Its bit in the set of members seen.
    fn bit(self) -> u8 {
        match self {
            Self::Jsonrpc => 1,
            Self::Id => 2,
            Self::Method => 4,
            Self::Params => 8,
            Self::Result => 16,
            Self::Error => 32,
        }
    }
}

/// Reads a top-level key (already unescaped by serde_json: `"\u0069d"` is `id`).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = TopKey;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<TopKey, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = TopKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, key: &str) -> Result<TopKey, E> {
        Ok(Known::parse(key).map_or_else(|| TopKey::Other(key.to_owned()), TopKey::Known))
    }
}

/// Reads a member that should be a string; anything else is checked like a skipped value.
struct TextSeed<'c> {
    checks: &'c Checks,
    /// The depth of the member's value.
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for TextSeed<'_> {
    type Value = Text<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Text<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed<'_> {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Owned(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text<'de>, A::Error> {
        self.skip().visit_map(map).map(|_| Text::NotAString)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text<'de>, A::Error> {
        self.skip().visit_seq(seq).map(|_| Text::NotAString)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_unit<E>(self) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }
}

impl<'c> TextSeed<'c> {
    fn skip(&self) -> Skip<'c> {
        Skip {
            checks: self.checks,
            depth: self.depth,
        }
    }
}

/// Reads `params` (depth 2): an object's members some method reads are kept, the others
/// checked and dropped.
/// The members go to `params`; the value says whether `params` was an object.
struct ParamsSeed<'c, 'm, 'a> {
    checks: &'c Checks,
    params: &'m mut Params<'a>,
}

impl<'de> DeserializeSeed<'de> for ParamsSeed<'_, '_, 'de> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed<'_, '_, 'de> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        self.checks.enter(2)?;
        let params = self.params;
        // Names of members outside the known set, to find one repeated (as at the top level:
        // a set, so that many of them cost linear time).
        let mut others: HashSet<String> = HashSet::new();
        let value = || Build {
            checks: self.checks,
            depth: 3,
        };
        let text = || TextSeed {
            checks: self.checks,
            depth: 3,
        };
        let skip = || Skip {
            checks: self.checks,
            depth: 3,
        };
        while let Some(name) = map.next_key_seed(ParamKeySeed)? {
            let (key, other) = match name {
                ParamName::Known(key) => (key, None),
                ParamName::Other(name) => (ParamKey::Other, Some(name)),
            };
            let repeated = match other {
                Some(name) => !others.insert(name),
                None => params.has(key),
            };
            if repeated {
                self.checks.repeated_key.set(true);
            }
            params.present |= key.bit();
            match key {
                ParamKey::Name => params.name = Some(map.next_value_seed(text())?),
                ParamKey::Cursor => params.cursor = Some(map.next_value_seed(text())?),
                ParamKey::ProtocolVersion => {
                    params.protocol_version = Some(map.next_value_seed(text())?);
                }
                ParamKey::Arguments => params.arguments = Some(map.next_value_seed(value())?),
                ParamKey::Meta => params.meta = Some(map.next_value_seed(value())?),
                ParamKey::Capabilities => {
                    params.capabilities_is_object = Some(map.next_value_seed(skip())?);
                }
                ParamKey::ClientInfo => {
                    params.client_info_is_object = Some(map.next_value_seed(skip())?);
                }
                ParamKey::RequestId => params.request_id = Some(map.next_value_seed(value())?),
                ParamKey::Task | ParamKey::Other => {
                    map.next_value_seed(skip())?;
                }
            }
        }
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.skip().visit_seq(seq).map(|_| false)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(false)
    }
}

impl<'c> ParamsSeed<'c, '_, '_> {
    fn skip(&self) -> Skip<'c> {
        Skip {
            checks: self.checks,
            depth: 2,
        }
    }
}

/// A member name of `params`, unescaped.
enum ParamName {
    Known(ParamKey),
    Other(String),
}

/// Reads a member name of `params` without allocating for the known ones.
struct ParamKeySeed;

impl<'de> DeserializeSeed<'de> for ParamKeySeed {
    type Value = ParamName;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ParamName, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for ParamKeySeed {
    type Value = ParamName;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<ParamName, E> {
        Ok(match ParamKey::parse(name) {
            ParamKey::Other => ParamName::Other(name.to_owned()),
            known => ParamName::Known(known),
        })
    }
}

/// Builds a [`Value`] at a given depth, with the checks.
struct Build<'c> {
    checks: &'c Checks,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Build<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Build<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.checks.enter(self.depth)?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.child())?;
            if object.insert(key, value).is_some() {
                self.checks.repeated_key.set(true);
            }
        }
        Ok(Value::Object(object))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.checks.enter(self.depth)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.child())? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // serde_json never yields a non-finite float from text; `Null` would be its mapping.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

impl<'c> Build<'c> {
    fn child(&self) -> Build<'c> {
        Build {
            checks: self.checks,
            depth: self.depth.saturating_add(1),
        }
    }
}

/// Checks a value at a given depth without keeping it; says whether it was an object.
struct Skip<'c> {
    checks: &'c Checks,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Skip<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        self.checks.enter(self.depth)?;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key) {
                self.checks.repeated_key.set(true);
            }
            map.next_value_seed(self.child())?;
        }
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        self.checks.enter(self.depth)?;
        while seq.next_element_seed(self.child())?.is_some() {}
        Ok(false)
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

impl<'c> Skip<'c> {
    fn child(&self) -> Skip<'c> {
        Skip {
            checks: self.checks,
            depth: self.depth.saturating_add(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(text: &str) -> Members<'_> {
        match parse_frame(text, 64).unwrap() {
            TopLevel::Object(members) => members,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn members_are_pulled_out_and_the_id_stays_raw() {
        let members = object(r#"{"jsonrpc":"2.0","id": 1e0 ,"method":"ping","params":{}}"#);
        assert_eq!(members.jsonrpc, Some(Text::Str("2.0".into())));
        assert_eq!(members.id.unwrap().get(), "1e0");
        assert_eq!(members.method, Some(Text::Str("ping".into())));
        assert!(!members.repeated_key && !members.has_unknown_member);
    }

    #[test]
    fn repeated_keys_are_found_at_any_depth_even_when_escaped() {
        assert!(object(r#"{"method":"a","method":"b"}"#).repeated_key);
        assert!(object(r#"{"params":{"x":{"k":1,"\u006b":2}}}"#).repeated_key);
        assert!(object(r#"{"result":{"k":1,"k":2}}"#).repeated_key);
        assert!(object(r#"{"id":1,"id":2}"#).id_repeated);
        assert!(!object(r#"{"params":{"a":{"k":1},"b":{"k":1}}}"#).repeated_key);
    }

    fn params(text: &str) -> (Params<'_>, bool) {
        let members = object(text);
        match members.params {
            Some(ParamsMember::Object(params)) => (*params, members.repeated_key),
            other => panic!("params not an object: {other:?}"),
        }
    }

    #[test]
    fn params_members_are_pulled_out_by_their_unescaped_names() {
        let (p, repeated) = params(
            r#"{"params":{"\u006eame":"echo","arguments":{"a":[1]},"_meta":{"progressToken":3},"reason":"x"}}"#,
        );
        assert!(!repeated);
        assert_eq!(p.name, Some(Text::Str("echo".into())));
        assert_eq!(p.arguments, Some(serde_json::json!({"a": [1]})));
        assert_eq!(p.meta, Some(serde_json::json!({"progressToken": 3})));
        assert!(p.has(ParamKey::Other) && !p.has(ParamKey::Cursor));
        assert!(!p.only(&[ParamKey::Name, ParamKey::Arguments, ParamKey::Meta]));
        assert!(p.only(&[
            ParamKey::Name,
            ParamKey::Arguments,
            ParamKey::Meta,
            ParamKey::Other
        ]));
        let (p, _) = params(r#"{"params":{"name":7,"cursor":null,"task":{}}}"#);
        assert_eq!(p.name, Some(Text::NotAString));
        assert_eq!(p.cursor, Some(Text::NotAString));
        assert!(p.has(ParamKey::Task));
    }

    #[test]
    fn repeated_params_members_are_found_known_or_not() {
        assert!(params(r#"{"params":{"name":"a","name":"b"}}"#).1);
        assert!(params(r#"{"params":{"name":"a","n\u0061me":"b"}}"#).1);
        assert!(params(r#"{"params":{"x":1,"x":2}}"#).1);
        assert!(params(r#"{"params":{"arguments":{"k":1,"k":2}}}"#).1);
        assert!(!params(r#"{"params":{"x":1,"y":2,"name":"a"}}"#).1);
        assert!(matches!(
            object(r#"{"params":[1]}"#).params,
            Some(ParamsMember::NotAnObject)
        ));
    }

    #[test]
    fn params_members_count_their_depth() {
        // top (1) › params (2) › n arrays as a member's value: the deepest is at depth n + 2.
        for member in ["arguments", "name", "reason"] {
            let nest = |n: usize| {
                format!(
                    "{{\"params\":{{\"{member}\":{}{}}}}}",
                    "[".repeat(n),
                    "]".repeat(n)
                )
            };
            assert!(parse_frame(&nest(62), 64).is_ok(), "{member}");
            assert_eq!(
                parse_frame(&nest(63), 64).unwrap_err(),
                JsonFault::TooDeep,
                "{member}"
            );
        }
    }

    #[test]
    fn depth_is_counted_from_the_top_level_object() {
        let nest = |n: usize| format!("{{\"params\":{}{}}}", "[".repeat(n), "]".repeat(n));
        // top object (1) + n arrays: the deepest array is at depth n + 1.
        assert!(parse_frame(&nest(63), 64).is_ok());
        assert_eq!(parse_frame(&nest(64), 64).unwrap_err(), JsonFault::TooDeep);
        let deep = "[".repeat(100_000);
        assert_eq!(parse_frame(&deep, 64).unwrap_err(), JsonFault::TooDeep);
    }

    #[test]
    fn non_json_is_a_syntax_fault() {
        for text in [
            "{",
            "NaN",
            "[Infinity]",
            "{\"a\":1,}",
            "{'a':1}",
            "\"\\ud800\"",
            "1 2",
            "{\"a\":01}",
            "\"\u{1}\"",
        ] {
            assert_eq!(
                parse_frame(text, 64).unwrap_err(),
                JsonFault::Syntax,
                "{text}"
            );
        }
    }

    /// Found reviewing the single-pass parser: unknown top-level keys were kept in a list,
    /// so a frame with 100,000 of them took quadratic time. With a set it is linear.
    #[test]
    fn many_unknown_top_level_keys_are_checked_in_linear_time() {
        let mut frame = String::from("{");
        for i in 0..100_000 {
            frame.push_str(&format!("\"k{i}\":0,"));
        }
        frame.push_str("\"k0\":1}");
        let started = std::time::Instant::now();
        let TopLevel::Object(members) = parse_frame(&frame, 64).unwrap() else {
            panic!()
        };
        assert!(members.repeated_key && members.has_unknown_member);
        // Not a timing assertion on the product: a generous bound that only a quadratic
        // algorithm (10^10 comparisons) could miss.
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn raw_ids_are_checked_like_the_frame() {
        let members = object(r#"{"id":[[[{"a":1,"a":2}]]]}"#);
        assert!(check_raw(members.id.unwrap(), 2, 64).unwrap());
        let deep = format!("{{\"id\":{}{}}}", "[".repeat(70), "]".repeat(70));
        let members = object(&deep);
        assert_eq!(
            check_raw(members.id.unwrap(), 2, 64).unwrap_err(),
            JsonFault::TooDeep
        );
    }
}
