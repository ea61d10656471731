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
    pub(crate) params: Option<Value>,
    /// Whether `result` or `error` is present.
    pub(crate) has_result_or_error: bool,
    /// Whether a member JSON-RPC 2.0 does not define is present.
    pub(crate) has_unknown_member: bool,
    /// Whether `id` appears more than once.
    pub(crate) id_repeated: bool,
    /// Whether any object anywhere in the frame repeats a key.
    pub(crate) repeated_key: bool,
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
    let parsed = TopSeed { checks: &checks }
        .deserialize(&mut deserializer)
        .and_then(|top| deserializer.end().map(|()| top));
    match parsed {
        Ok(mut top) => {
            if let TopLevel::Object(members) = &mut top {
                members.repeated_key |= checks.repeated_key.get();
            }
            Ok(top)
        }
        Err(_) if checks.too_deep.get() => Err(JsonFault::TooDeep),
        Err(_) => Err(JsonFault::Syntax),
    }
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
        Ok(()) => Ok(checks.repeated_key.get()),
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

/// The top-level value.
struct TopSeed<'c> {
    checks: &'c Checks,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = TopLevel<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = TopLevel<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        self.checks.enter(1)?;
        let mut members = Members::default();
        // The members JSON-RPC defines are told apart without allocating; any other key is
        // kept (hostile input only) so that a repeated one is still found.
        let mut seen_known = 0u8;
        // A set, not a list: a hostile frame may hold a hundred thousand unknown keys, and a
        // linear search over them would make this parse quadratic.
        let mut unknown: HashSet<String> = HashSet::new();
        let child = |checks| Build { checks, depth: 2 };
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
                    })?);
                }
                TopKey::Known(Known::Method) => {
                    members.method = Some(map.next_value_seed(TextSeed {
                        checks: self.checks,
                    })?);
                }
                TopKey::Known(Known::Params) => {
                    members.params = Some(map.next_value_seed(child(self.checks))?);
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
        Ok(TopLevel::Object(members))
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
        Ok(TopLevel::Array)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(TopLevel::Scalar)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(TopLevel::Scalar)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(TopLevel::Scalar)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(TopLevel::Scalar)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(TopLevel::Scalar)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(TopLevel::Scalar)
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
        self.skip().visit_map(map).map(|()| Text::NotAString)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text<'de>, A::Error> {
        self.skip().visit_seq(seq).map(|()| Text::NotAString)
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
    /// A member's value sits at depth 2.
    fn skip(&self) -> Skip<'c> {
        Skip {
            checks: self.checks,
            depth: 2,
        }
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

/// Checks a value at a given depth without keeping it.
struct Skip<'c> {
    checks: &'c Checks,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Skip<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.checks.enter(self.depth)?;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key) {
                self.checks.repeated_key.set(true);
            }
            map.next_value_seed(self.child())?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.checks.enter(self.depth)?;
        while seq.next_element_seed(self.child())?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
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
