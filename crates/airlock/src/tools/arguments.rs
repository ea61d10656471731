//! Bounds on `tools/call` arguments: size, depth, keys, items, string bytes.
//!
//! These run before any schema or handler sees the arguments and answer with a protocol error
//! (`-32602`): an argument object past these bounds is not a request any tool can serve, and
//! checking it against a schema would already cost what the bounds exist to prevent. One walk
//! measures everything and stops at the first bound passed.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::error::{ArgumentBound, McpError};
use crate::limits::Limits;

/// Checks `arguments` against the argument bounds of `limits`.
///
/// # Errors
///
/// [`McpError::ArgumentBound`] naming the first bound passed.
pub fn check(arguments: &Map<String, Value>, limits: &Limits) -> Result<(), McpError> {
    let mut walk = Walk { limits, bytes: 0 };
    walk.object(arguments, 1)
}

struct Walk<'l> {
    limits: &'l Limits,
    /// Compact JSON size so far.
    bytes: usize,
}

impl Walk<'_> {
    fn refuse(&self, bound: ArgumentBound) -> McpError {
        let limit = match bound {
            ArgumentBound::Bytes => self.limits.max_argument_bytes,
            ArgumentBound::Depth => self.limits.max_argument_depth,
            ArgumentBound::Items => self.limits.max_array_items,
            ArgumentBound::Keys => self.limits.max_object_keys,
            ArgumentBound::StringBytes => self.limits.max_string_bytes,
        };
        McpError::ArgumentBound {
            bound,
            limit: limit.get(),
        }
    }

    fn add(&mut self, bytes: usize) -> Result<(), McpError> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.limits.max_argument_bytes.get() {
            return Err(self.refuse(ArgumentBound::Bytes));
        }
        Ok(())
    }

    fn enter(&self, depth: usize) -> Result<(), McpError> {
        if depth > self.limits.max_argument_depth.get() {
            return Err(self.refuse(ArgumentBound::Depth));
        }
        Ok(())
    }

    fn object(&mut self, object: &Map<String, Value>, depth: usize) -> Result<(), McpError> {
        self.enter(depth)?;
        if object.len() > self.limits.max_object_keys.get() {
            return Err(self.refuse(ArgumentBound::Keys));
        }
        // `{` `}`, then per entry a `:` and (after the first) a `,`.
        self.add(punctuation(object.len(), 2))?;
        for (key, value) in object {
            self.string(key)?;
            self.value(value, depth.saturating_add(1))?;
        }
        Ok(())
    }

    fn value(&mut self, value: &Value, depth: usize) -> Result<(), McpError> {
        match value {
            Value::Null => self.add(4),
            Value::Bool(true) => self.add(4),
            Value::Bool(false) => self.add(5),
            Value::Number(number) => {
                // An integer's size is its digits (and a sign): counted, not formatted.
                if let Some(bytes) = integer_len(number) {
                    return self.add(bytes);
                }
                let mut counter = Counter(0);
                // Writing to a counter cannot fail; a failure would only undercount.
                if write!(counter, "{number}").is_err() {
                    return Err(McpError::Internal("number formatting failed"));
                }
                self.add(counter.0)
            }
            Value::String(text) => self.string(text),
            Value::Array(items) => {
                self.enter(depth)?;
                if items.len() > self.limits.max_array_items.get() {
                    return Err(self.refuse(ArgumentBound::Items));
                }
                self.add(punctuation(items.len(), 1))?;
                for item in items {
                    self.value(item, depth.saturating_add(1))?;
                }
                Ok(())
            }
            Value::Object(object) => self.object(object, depth),
        }
    }

    fn string(&mut self, text: &str) -> Result<(), McpError> {
        if text.len() > self.limits.max_string_bytes.get() {
            return Err(self.refuse(ArgumentBound::StringBytes));
        }
        // Most strings hold nothing to escape: then their size is their length and the quotes,
        // and only a string that does is counted byte by byte.
        let escaped: usize = if text.bytes().any(needs_escape) {
            text.bytes().map(escaped_len).fold(2, usize::saturating_add)
        } else {
            text.len().saturating_add(2)
        };
        self.add(escaped)
    }
}

/// The bytes serde_json writes for `number` when it is an integer (its digits, and a `-`);
/// `None` for a float.
fn integer_len(number: &serde_json::Number) -> Option<usize> {
    if let Some(n) = number.as_u64() {
        return Some(decimal_digits(n));
    }
    number
        .as_i64()
        .map(|n| decimal_digits(n.unsigned_abs()).saturating_add(usize::from(n < 0)))
}

/// How many decimal digits `n` takes (`0` takes one).
fn decimal_digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| {
        usize::try_from(log).map_or(usize::MAX, |log| log.saturating_add(1))
    })
}

/// Whether serde_json writes `byte` of a string as more than itself.
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Brackets plus separators of a container of `len` entries, each needing `per_entry` bytes
/// of punctuation (a `,` between entries, and for objects a `:`).
fn punctuation(len: usize, per_entry: usize) -> usize {
    len.saturating_mul(per_entry).saturating_add(1).max(2)
}

/// Bytes serde_json writes for one byte of a string.
fn escaped_len(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t' => 2,
        0..=0x1f => 6,
        _ => 1,
    }
}

struct Counter(usize);

impl std::fmt::Write for Counter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 = self.0.saturating_add(s.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::num::NonZeroUsize;

    fn limits() -> Limits {
        Limits::default()
    }

    fn bound_of(arguments: Value, limits: &Limits) -> Option<ArgumentBound> {
        let Value::Object(map) = arguments else {
            panic!()
        };
        match check(&map, limits) {
            Ok(()) => None,
            Err(McpError::ArgumentBound { bound, .. }) => Some(bound),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_bound_is_enforced() {
        let l = limits();
        assert_eq!(bound_of(json!({"a": [1, {"b": "c"}]}), &l), None);
        let long = "x".repeat(l.max_string_bytes.get() + 1);
        assert_eq!(
            bound_of(json!({"a": long}), &l),
            Some(ArgumentBound::StringBytes)
        );
        let long_key: Map<String, Value> = [("k".repeat(70_000), json!(1))].into_iter().collect();
        assert_eq!(
            bound_of(Value::Object(long_key), &l),
            Some(ArgumentBound::StringBytes)
        );
        let many: Map<String, Value> = (0..257).map(|i| (i.to_string(), json!(i))).collect();
        assert_eq!(bound_of(Value::Object(many), &l), Some(ArgumentBound::Keys));
        assert_eq!(
            bound_of(json!({"a": vec![0; 1025]}), &l),
            Some(ArgumentBound::Items)
        );
        let mut deep = json!(1);
        for _ in 0..16 {
            deep = json!([deep]);
        }
        assert_eq!(bound_of(json!({"a": deep}), &l), Some(ArgumentBound::Depth));
        let big: Vec<String> = (0..5).map(|_| "y".repeat(60_000)).collect();
        assert_eq!(bound_of(json!({"a": big}), &l), Some(ArgumentBound::Bytes));
    }

    #[test]
    fn depth_counts_the_arguments_object_as_level_one() {
        let mut l = limits();
        l.max_argument_depth = NonZeroUsize::new(2).unwrap();
        assert_eq!(bound_of(json!({"a": [1]}), &l), None);
        assert_eq!(
            bound_of(json!({"a": [[1]]}), &l),
            Some(ArgumentBound::Depth)
        );
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[\\x00-\\x7f\u{e9}\u{1F600}]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z\"\\\\]{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn integers_are_counted_as_serde_json_writes_them() {
        for n in [
            json!(0),
            json!(7),
            json!(10),
            json!(-1),
            json!(-10),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(1.5),
            json!(-0.0),
        ] {
            let Value::Number(number) = &n else { panic!() };
            let written = serde_json::to_string(number).unwrap().len();
            match integer_len(number) {
                Some(len) => assert_eq!(len, written, "{n}"),
                None => assert!(number.is_f64(), "{n}"),
            }
        }
    }

    #[test]
    fn strings_with_and_without_escapes_are_counted_as_written() {
        for text in [
            "",
            "hello",
            "a\"b",
            "back\\slash",
            "tab\there",
            "\u{1}",
            "caf\u{e9}",
        ] {
            let mut walk = Walk {
                limits: &limits(),
                bytes: 0,
            };
            walk.string(text).unwrap();
            assert_eq!(
                walk.bytes,
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn the_byte_count_is_exactly_the_compact_serialisation(
            entries in proptest::collection::btree_map("[a-z]{1,4}", arb_json(), 0..6)
        ) {
            let map: Map<String, Value> = entries.into_iter().collect();
            let exact = serde_json::to_vec(&map).unwrap().len();
            let mut l = limits();
            l.max_argument_bytes = NonZeroUsize::new(exact).unwrap_or(NonZeroUsize::MIN);
            prop_assert!(check(&map, &l).is_ok() || exact == 0);
            if exact > 1 {
                l.max_argument_bytes = NonZeroUsize::new(exact - 1).unwrap();
                let refused = matches!(
                    check(&map, &l),
                    Err(McpError::ArgumentBound { bound: ArgumentBound::Bytes, .. })
                );
                prop_assert!(refused);
            }
        }
    }
}
