//! Strict JSON reading for the envelope: one pass over the frame, nesting capped, repeated
//! keys detected, the `id` kept as raw text.
//!
//! serde_json does the tokenising (and refuses invalid UTF-8 in strings, lone surrogates,
//! `NaN`, `Infinity` and trailing garbage); the visitors here add what it does not check:
//! nesting depth against our own limit, and keys repeated in any object. Parsers disagree on
//! which copy of a repeated key wins, which is how checks get smuggled past; we refuse the
//! message instead. A frame is read once: the members the envelope needs come out as values,
//! the rest (`result`, `error`, unknown members, batch items) is checked and dropped.

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
    pub(crate) jsonrpc: Option<Value>,
    /// `id` as raw text, if present.
    pub(crate) id: Option<&'a RawValue>,
    /// `method`, if present.
    pub(crate) method: Option<Value>,
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

/// Parses one frame, checking depth against `max_depth` (the top level is depth 1).
///
/// # Errors
///
/// [`JsonFault`] when the frame is not JSON or is nested too deeply.
pub(crate) fn parse_frame(frame: &[u8], max_depth: usize) -> Result<TopLevel<'_>, JsonFault> {
    let checks = Checks::new(max_depth);
    let mut deserializer = serde_json::Deserializer::from_slice(frame);
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
        let mut seen = HashSet::new();
        let child = |checks| Build { checks, depth: 2 };
        while let Some(key) = map.next_key::<String>()? {
            let repeated = !seen.insert(key.clone());
            members.repeated_key |= repeated;
            match key.as_str() {
                "jsonrpc" => members.jsonrpc = Some(map.next_value_seed(child(self.checks))?),
                "method" => members.method = Some(map.next_value_seed(child(self.checks))?),
                "params" => members.params = Some(map.next_value_seed(child(self.checks))?),
                "id" => {
                    let raw: &'de RawValue = map.next_value()?;
                    members.id_repeated |= repeated;
                    members.id.get_or_insert(raw);
                }
                "result" | "error" => {
                    members.has_result_or_error = true;
                    map.next_value_seed(Skip {
                        checks: self.checks,
                        depth: 2,
                    })?;
                }
                _ => {
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
        match parse_frame(text.as_bytes(), 64).unwrap() {
            TopLevel::Object(members) => members,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn members_are_pulled_out_and_the_id_stays_raw() {
        let members = object(r#"{"jsonrpc":"2.0","id": 1e0 ,"method":"ping","params":{}}"#);
        assert_eq!(members.jsonrpc, Some(Value::from("2.0")));
        assert_eq!(members.id.unwrap().get(), "1e0");
        assert_eq!(members.method, Some(Value::from("ping")));
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
        assert!(parse_frame(nest(63).as_bytes(), 64).is_ok());
        assert_eq!(
            parse_frame(nest(64).as_bytes(), 64).unwrap_err(),
            JsonFault::TooDeep
        );
        let deep = "[".repeat(100_000);
        assert_eq!(
            parse_frame(deep.as_bytes(), 64).unwrap_err(),
            JsonFault::TooDeep
        );
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
                parse_frame(text.as_bytes(), 64).unwrap_err(),
                JsonFault::Syntax,
                "{text}"
            );
        }
        assert_eq!(parse_frame(b"\"\xff\"", 64).unwrap_err(), JsonFault::Syntax);
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
