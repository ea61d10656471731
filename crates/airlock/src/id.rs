//! Request ids: checked once, echoed byte-for-byte, compared by meaning; and progress tokens,
//! bounded the same way.
//!
//! MCP ids are strings or integers, never null. A [`RequestId`] keeps the exact JSON text the
//! peer sent (so a reply echoes it verbatim: `7` stays `7`, `"7"` stays `"7"`, nothing is
//! rounded through a float) and an [`IdKey`] by which in-flight calls are found, so that `"a"`
//! and `"\u0061"` are the same request. A [`ProgressToken`] is the other value the peer picks
//! and we echo (on each progress notification of its call): a string or an integer, as short as
//! an id must be.

use serde::ser::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{IdFault, McpError};
use crate::limits::{MAX_ID_BYTES, MAX_PROGRESS_TOKEN_BYTES};

/// A request id as the peer wrote it.
#[derive(Clone, Debug)]
pub struct RequestId {
    key: IdKey,
    /// The id's JSON text, exactly as sent.
    text: IdText,
}

/// An id's JSON text: held in place when short (every integer, most strings), so that a
/// request costs no allocation for it.
#[derive(Clone, Debug)]
enum IdText {
    Short {
        len: u8,
        bytes: [u8; SHORT_ID_BYTES],
    },
    Long(Box<str>),
}

/// The longest id text held in place.
const SHORT_ID_BYTES: usize = 22;

/// The longest text of an integer of 64 bits: `-9223372036854775808`.
const MAX_INTEGER_ID_BYTES: usize = 20;

/// The longest text of a string id that can unescape to [`MAX_ID_BYTES`]: six bytes an escape,
/// and the quotes.
const MAX_STRING_ID_TEXT_BYTES: usize = MAX_ID_BYTES.saturating_mul(6).saturating_add(2);

impl IdText {
    fn new(text: &str) -> Self {
        let mut bytes = [0u8; SHORT_ID_BYTES];
        match (bytes.get_mut(..text.len()), u8::try_from(text.len())) {
            (Some(slot), Ok(len)) => {
                slot.copy_from_slice(text.as_bytes());
                Self::Short { len, bytes }
            }
            _ => Self::Long(Box::from(text)),
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Short { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Self::Long(text) => text.as_bytes(),
        }
    }
}

/// What an id means: how in-flight calls and cancellations are matched.
#[derive(Clone, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum IdKey {
    /// An integer id; `i128` holds every `i64` and `u64`.
    Integer(i128),
    /// A string id, unescaped.
    String(Box<str>),
}

impl RequestId {
    /// Checks a raw `id` member: its JSON text, as the strict reader read it (so valid JSON).
    ///
    /// # Errors
    ///
    /// [`IdFault`] for null, booleans, objects, arrays, non-integers, integers beyond 64 bits
    /// and strings longer than [`MAX_ID_BYTES`].
    pub fn parse(text: &str) -> Result<Self, IdFault> {
        // The readers give the bare token; text with whitespace around it (which serde_json
        // would take) is not an id: it would put a line break inside a reply line.
        let padded = |byte: Option<&u8>| matches!(byte, Some(b' ' | b'\t' | b'\n' | b'\r'));
        if padded(text.as_bytes().first()) || padded(text.as_bytes().last()) {
            return Err(IdFault::WrongType);
        }
        let key = match text.as_bytes().first() {
            // Capped before it is unescaped too: an escape (`\u0061`) is at most 6 bytes for
            // one byte of text.
            Some(b'"') if text.len() > MAX_STRING_ID_TEXT_BYTES => return Err(IdFault::TooLong),
            Some(b'"') => {
                let unescaped: String =
                    serde_json::from_str(text).map_err(|_| IdFault::WrongType)?;
                if unescaped.len() > MAX_ID_BYTES {
                    return Err(IdFault::TooLong);
                }
                IdKey::String(unescaped.into_boxed_str())
            }
            // The common id, a small non-negative integer, is read without a second JSON
            // parser: the frame was already checked to be JSON, so these are its digits.
            // Anything else (a sign, a fraction, an exponent, a leading zero) takes the path
            // below, which keeps `-0`, `1.0` and `1e3` refused.
            Some(b'1'..=b'9') if let Some(small) = small_integer(text) => {
                IdKey::Integer(i128::from(small))
            }
            // Capped before it is parsed: no integer of 64 bits takes more than 20 bytes
            // (`-9223372036854775808`, `18446744073709551615`), and JSON allows no leading
            // zeros, so a longer one is out of range whatever it says; a 100,000-digit id
            // costs a length check.
            Some(b'-' | b'0'..=b'9') if text.len() > MAX_INTEGER_ID_BYTES => {
                return Err(IdFault::NotAnInteger);
            }
            Some(b'-' | b'0'..=b'9') => {
                let number: serde_json::Number =
                    serde_json::from_str(text).map_err(|_| IdFault::NotAnInteger)?;
                integer_key(&number).ok_or(IdFault::NotAnInteger)?
            }
            Some(b'n') => return Err(IdFault::Null),
            _ => return Err(IdFault::WrongType),
        };
        Ok(Self {
            key,
            text: IdText::new(text),
        })
    }

    /// The exact JSON text of the id.
    pub fn raw(&self) -> &str {
        // Copied from a `str` whole, so it is UTF-8.
        std::str::from_utf8(self.text.as_bytes()).unwrap_or("null")
    }

    /// Appends the exact JSON text of the id.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.text.as_bytes());
    }

    /// What the id means.
    pub fn key(&self) -> &IdKey {
        &self.key
    }
}

/// The value of at most 18 decimal digits (below 10^18, so it cannot overflow); `None` for
/// anything else.
fn small_integer(text: &str) -> Option<u64> {
    if text.len() > 18 {
        return None;
    }
    text.bytes().try_fold(0u64, |value, byte| {
        let digit = byte.checked_sub(b'0').filter(|digit| *digit <= 9)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

impl IdKey {
    /// The key of an id given as a parsed value (a `requestId` in `notifications/cancelled`).
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(text) if text.len() <= MAX_ID_BYTES => {
                Some(Self::String(text.as_str().into()))
            }
            Value::Number(number) => integer_key(number),
            _ => None,
        }
    }
}

fn integer_key(number: &serde_json::Number) -> Option<IdKey> {
    if let Some(n) = number.as_i64() {
        return Some(IdKey::Integer(i128::from(n)));
    }
    number.as_u64().map(|n| IdKey::Integer(i128::from(n)))
}

/// A checked `_meta.progressToken`: a string of at most [`MAX_PROGRESS_TOKEN_BYTES`] or an
/// integer that fits in 64 bits.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProgressToken(Value);

impl ProgressToken {
    /// Checks a token as the peer sent it.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidProgressToken`] for a longer string, a float, an integer beyond 64
    /// bits, or any other type.
    pub(crate) fn parse(value: Value) -> Result<Self, McpError> {
        let fits = match &value {
            Value::String(text) => text.len() <= MAX_PROGRESS_TOKEN_BYTES,
            Value::Number(number) => number.is_i64() || number.is_u64(),
            Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => false,
        };
        if fits {
            Ok(Self(value))
        } else {
            Err(McpError::InvalidProgressToken)
        }
    }

    /// The token, to echo.
    pub(crate) fn as_value(&self) -> &Value {
        &self.0
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value: &RawValue =
            serde_json::from_str(self.raw()).map_err(|_| serde::ser::Error::custom("id text"))?;
        value.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Result<RequestId, IdFault> {
        RequestId::parse(text)
    }

    /// Red-team finding on the id as text: serde_json allows whitespace after a value, so a
    /// text with a line break after it was taken (and would have been echoed into a reply
    /// line). The readers give the bare token; this keeps the guarantee here too.
    #[test]
    fn an_id_text_with_whitespace_around_it_is_refused() {
        for text in ["1\n", "1 ", "\"a\"\r\n", "-1\t", " 1", "\t\"a\""] {
            assert!(id(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn integers_and_strings_are_kept_verbatim() {
        for text in [
            "0",
            "-1",
            "18446744073709551615",
            "-9223372036854775808",
            r#""a\u0062""#,
        ] {
            let parsed = id(text).unwrap();
            assert_eq!(parsed.raw(), text);
            let mut out = Vec::new();
            parsed.write_to(&mut out);
            assert_eq!(out, text.as_bytes());
            assert_eq!(serde_json::to_string(&parsed).unwrap(), text);
        }
        assert_eq!(
            id(r#""a\u0062""#).unwrap().key(),
            &IdKey::String("ab".into())
        );
        assert_eq!(id("7").unwrap().key(), &IdKey::Integer(7));
        assert_ne!(id("7").unwrap().key(), id(r#""7""#).unwrap().key());
    }

    /// Small ids take a short path and long ones the full parser: both give the same keys.
    #[test]
    fn every_integer_length_gives_its_own_value() {
        let mut text = String::new();
        for digit in "1234567890123456789".chars() {
            text.push(digit);
            let expected: i128 = text.parse().unwrap();
            assert_eq!(
                id(&text).unwrap().key(),
                &IdKey::Integer(expected),
                "{text}"
            );
            let negative = format!("-{text}");
            assert_eq!(id(&negative).unwrap().key(), &IdKey::Integer(-expected));
            for written in [&text, &negative] {
                let mut out = Vec::new();
                id(written).unwrap().write_to(&mut out);
                assert_eq!(out, written.as_bytes(), "written back byte for byte");
            }
        }
        for text in ["1.0", "10e1", "7.5"] {
            assert_eq!(id(text).unwrap_err(), IdFault::NotAnInteger, "{text}");
        }
    }

    #[test]
    fn other_types_are_refused_with_their_fault() {
        assert_eq!(id("null").unwrap_err(), IdFault::Null);
        assert_eq!(id("true").unwrap_err(), IdFault::WrongType);
        assert_eq!(id("{}").unwrap_err(), IdFault::WrongType);
        assert_eq!(id("[1]").unwrap_err(), IdFault::WrongType);
        assert_eq!(id("1.5").unwrap_err(), IdFault::NotAnInteger);
        assert_eq!(id("1e3").unwrap_err(), IdFault::NotAnInteger);
        assert_eq!(id("-0").unwrap_err(), IdFault::NotAnInteger);
        assert_eq!(
            id("18446744073709551616").unwrap_err(),
            IdFault::NotAnInteger
        );
        assert_eq!(
            id("-9223372036854775809").unwrap_err(),
            IdFault::NotAnInteger
        );
        // Out of range for a float too, or longer than any 64-bit integer: refused unparsed.
        for text in ["1e400", "-1e400", &"9".repeat(21), &"9".repeat(100_000)] {
            assert_eq!(id(text).unwrap_err(), IdFault::NotAnInteger, "{text:.30}");
        }
        let long = format!("\"{}\"", "x".repeat(MAX_ID_BYTES + 1));
        assert_eq!(id(&long).unwrap_err(), IdFault::TooLong);
        let edge = format!("\"{}\"", "x".repeat(MAX_ID_BYTES));
        assert!(id(&edge).is_ok());
        let escaped = format!("\"{}\"", "\\u0078".repeat(MAX_ID_BYTES));
        assert_eq!(
            id(&escaped).unwrap().key(),
            &IdKey::String("x".repeat(MAX_ID_BYTES).into())
        );
        let huge = format!("\"{}\"", "x".repeat(100_000));
        assert_eq!(id(&huge).unwrap_err(), IdFault::TooLong);
    }

    #[test]
    fn progress_tokens_are_bounded_like_ids() {
        use serde_json::json;
        let edge = "t".repeat(MAX_PROGRESS_TOKEN_BYTES);
        for good in [
            json!(edge),
            json!(""),
            json!(0),
            json!(-9_223_372_036_854_775_808_i64),
            json!(18_446_744_073_709_551_615_u64),
        ] {
            assert_eq!(
                ProgressToken::parse(good.clone()).unwrap().as_value(),
                &good
            );
        }
        for bad in [
            json!("t".repeat(MAX_PROGRESS_TOKEN_BYTES + 1)),
            json!(1.5),
            json!(18_446_744_073_709_551_616_f64),
            json!(null),
            json!(true),
            json!([1]),
            json!({"a": 1}),
        ] {
            assert_eq!(
                ProgressToken::parse(bad.clone()),
                Err(McpError::InvalidProgressToken),
                "{bad}"
            );
        }
    }

    #[test]
    fn cancellation_ids_match_request_ids() {
        assert_eq!(
            IdKey::from_value(&serde_json::json!("ab")),
            Some(id(r#""ab""#).unwrap().key().clone())
        );
        assert_eq!(
            IdKey::from_value(&serde_json::json!(3)),
            Some(IdKey::Integer(3))
        );
        assert_eq!(IdKey::from_value(&serde_json::json!(3.5)), None);
        assert_eq!(IdKey::from_value(&serde_json::json!(null)), None);
    }
}
