//! The common frame, read in one pass without serde: the strict reader's answer for the
//! frames almost every session sends, for a fraction of its cost.
//!
//! A well-behaved client's requests are plain: strings without escapes, integers, members
//! JSON-RPC defines, `params` members some method reads, each once. For such a frame this
//! reader builds exactly the [`Members`] the full reader ([`super::parse_frame`]) would, and
//! for anything else it gives up (`None`) and the full reader decides, faults included. It
//! never refuses and never reports: every way a frame can be unusual (an escape, a control
//! character, a float, an exponent, `-0`, an integer of more than 18 digits, a repeated key,
//! a member the envelope does not keep, `result`/`error`, nesting past [`FAST_DEPTH`] or the
//! limit, anything after the object, any syntax error) is a reason to give up. Giving up
//! costs the bytes read so far; agreeing with the full reader whenever it answers is what
//! the property test below and the `envelope` fuzz target check.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{KeptParams, Known, Members, ParamsMember, ParamsShape, Take, Taken, Text};

/// The deepest container this reader builds (the frame's object is depth 1); deeper frames
/// go to the full reader, whose own recursion limit is far above this.
const FAST_DEPTH: usize = 32;

/// Digits of the longest integer read here: every such integer fits `i64` and `u64`, and is
/// read by serde_json as an integer too.
const MAX_DIGITS: usize = 18;

/// The frame's members when it is a plain frame (see the module's documentation); `None`
/// when the full reader must decide.
pub(super) fn parse<S: ParamsShape>(frame: &str, max_depth: usize) -> Option<Members<'_, S>> {
    let limit = max_depth.min(FAST_DEPTH);
    let mut reader = Reader {
        text: frame,
        bytes: frame.as_bytes(),
        at: 0,
    };
    if limit < 1 {
        return None;
    }
    reader.take(b'{')?;
    let mut members = Members::<S> {
        jsonrpc: None,
        id: None,
        id_out_of_range: false,
        method: None,
        params: None,
        has_result_or_error: false,
        has_unknown_member: false,
        id_repeated: false,
        repeated_key: false,
    };
    let mut seen = 0u8;
    if !reader.empty(b'}')? {
        loop {
            let key = reader.string()?;
            reader.take(b':')?;
            let known = Known::parse(key)?;
            if seen & known.bit() != 0 {
                return None;
            }
            seen |= known.bit();
            match known {
                Known::Jsonrpc => {
                    members.jsonrpc = Some(Text::Str(Cow::Borrowed(reader.string()?)))
                }
                Known::Method => members.method = Some(Text::Str(Cow::Borrowed(reader.string()?))),
                Known::Id => members.id = Some(Cow::Borrowed(reader.id()?)),
                Known::Params => {
                    // Filled in place: the kept members are a large struct, and moving it
                    // into its box would copy it.
                    let mut params = Box::<S::Kept<'_>>::default();
                    reader.params(&mut *params, limit)?;
                    members.params = Some(ParamsMember::Object(params));
                }
                Known::Result | Known::Error => return None,
            }
            if reader.after_member(b'}')? {
                break;
            }
        }
    }
    reader.skip_whitespace();
    (reader.at == reader.bytes.len()).then_some(members)
}

/// A position in the frame.
struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// JSON's whitespace (RFC 8259 §2), exactly: space, tab, line feed, carriage return.
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at = self.at.saturating_add(1);
        }
    }

    /// The next byte after whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes.get(self.at).copied()
    }

    /// Takes `byte` after whitespace (`None` when another byte is there).
    fn take(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at = self.at.saturating_add(1))
    }

    /// Right after a container opened: whether it closes at once with `close` (taken).
    fn empty(&mut self, close: u8) -> Option<bool> {
        let empty = self.peek()? == close;
        if empty {
            self.at = self.at.saturating_add(1);
        }
        Some(empty)
    }

    /// After a member or an item: `true` at `close`, `false` at a comma (both taken).
    fn after_member(&mut self, close: u8) -> Option<bool> {
        let next = self.peek()?;
        self.at = self.at.saturating_add(1);
        match next {
            b',' => Some(false),
            byte if byte == close => Some(true),
            _ => None,
        }
    }

    /// A string with no escape and no control character, borrowed from the frame (the frame
    /// is UTF-8, checked whole, and a quote never falls inside a character).
    #[inline(always)]
    fn string(&mut self) -> Option<&'a str> {
        // Members are usually written without whitespace before them: look first.
        if self.bytes.get(self.at) != Some(&b'"') && self.peek()? != b'"' {
            return None;
        }
        let start = self.at.saturating_add(1);
        let end = start.saturating_add(plain_length(self.bytes.get(start..)?));
        if self.bytes.get(end) != Some(&b'"') {
            return None;
        }
        self.at = end.saturating_add(1);
        self.text.get(start..end)
    }

    /// A plain integer, `-?(0|[1-9][0-9]*)` of at most [`MAX_DIGITS`] digits, and not `-0`
    /// (which serde_json reads as a float); its text and its value.
    fn integer(&mut self) -> Option<(&'a str, Value)> {
        self.skip_whitespace();
        let start = self.at;
        let negative = self.bytes.get(start) == Some(&b'-');
        let digits_start = start.saturating_add(usize::from(negative));
        // One pass: digits counted and added up together, stopping past the longest allowed.
        let mut end = digits_start;
        let mut magnitude = 0u64;
        while let Some(&byte) = self.bytes.get(end) {
            if !byte.is_ascii_digit() {
                break;
            }
            if end.wrapping_sub(digits_start) == MAX_DIGITS {
                return None;
            }
            // At most 18 digits: no overflow.
            magnitude = magnitude
                .wrapping_mul(10)
                .wrapping_add(u64::from(byte.wrapping_sub(b'0')));
            end = end.saturating_add(1);
        }
        let digits = end.wrapping_sub(digits_start);
        if digits == 0 || (digits > 1 && self.bytes.get(digits_start) == Some(&b'0')) {
            return None;
        }
        if matches!(self.bytes.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let value = if negative {
            if magnitude == 0 {
                return None;
            }
            Value::from(i64::try_from(magnitude).ok()?.checked_neg()?)
        } else {
            Value::from(magnitude)
        };
        self.at = end;
        Some((self.text.get(start..end)?, value))
    }

    /// The `id`: a plain string or integer, as its JSON text.
    fn id(&mut self) -> Option<&'a str> {
        match self.peek()? {
            b'"' => {
                let start = self.at;
                self.string()?;
                self.text.get(start..self.at)
            }
            _ => self.integer().map(|(text, _)| text),
        }
    }

    /// `literal` (`true`, `false`, `null`), taken.
    fn literal(&mut self, literal: &[u8]) -> Option<()> {
        let end = self.at.checked_add(literal.len())?;
        (self.bytes.get(self.at..end)? == literal).then(|| self.at = end)
    }

    /// A value at `depth`; a container must be at most `limit` deep.
    fn value(&mut self, depth: usize, limit: usize) -> Option<Value> {
        match self.peek()? {
            b'"' => self.string().map(|text| Value::String(text.to_owned())),
            b'{' => {
                if depth > limit {
                    return None;
                }
                self.at = self.at.saturating_add(1);
                let mut object = Map::new();
                if !self.empty(b'}')? {
                    loop {
                        let key = self.string()?;
                        self.take(b':')?;
                        let value = self.value(depth.saturating_add(1), limit)?;
                        if object.insert(key.to_owned(), value).is_some() {
                            return None;
                        }
                        if self.after_member(b'}')? {
                            break;
                        }
                    }
                }
                Some(Value::Object(object))
            }
            b'[' => {
                if depth > limit {
                    return None;
                }
                self.at = self.at.saturating_add(1);
                let mut items = Vec::new();
                if !self.empty(b']')? {
                    loop {
                        items.push(self.value(depth.saturating_add(1), limit)?);
                        if self.after_member(b']')? {
                            break;
                        }
                    }
                }
                Some(Value::Array(items))
            }
            b't' => self.literal(b"true").map(|()| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|()| Value::Null),
            _ => self.integer().map(|(_, value)| value),
        }
    }

    /// `params` (depth 2): an object of members `K` keeps, each taken as a string or a value.
    fn params<K: KeptParams<'a>>(&mut self, params: &mut K, limit: usize) -> Option<()> {
        if limit < 2 {
            return None;
        }
        self.take(b'{')?;
        if self.empty(b'}')? {
            return Some(());
        }
        loop {
            let name = self.string()?;
            self.take(b':')?;
            let (member, take) = K::member(name)?;
            let taken = match take {
                Take::Text => Taken::Text(Text::Str(Cow::Borrowed(self.string()?))),
                Take::Value => Taken::Value(self.value(3, limit)?),
                Take::Flagged => Taken::Flagged(self.value(3, limit)?, false),
                Take::IsObject | Take::Skip => return None,
            };
            if params.keep(member, taken) {
                return None;
            }
            if self.after_member(b'}')? {
                return Some(());
            }
        }
    }
}

/// Whether a byte ends a plain string: a quote, a backslash or a control character.
fn ends_plain(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// How many bytes of `bytes` come before the first that [`ends_plain`] (all of them when none
/// does), looked at eight at a time: each test below sets a byte's high bit where that byte
/// is such a byte, and may set bits above the first one found, never below it.
fn plain_length(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGH_BITS: u64 = ONES << 7;
    let mut chunks = bytes.chunks_exact(8);
    let mut length = 0usize;
    for chunk in &mut chunks {
        let Ok(eight) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(eight);
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let found = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGH_BITS;
        if found != 0 {
            let first = usize::try_from(found.trailing_zeros() / 8).unwrap_or(0);
            return length.saturating_add(first);
        }
        length = length.saturating_add(8);
    }
    let rest = chunks.remainder();
    length.saturating_add(
        rest.iter()
            .position(|&byte| ends_plain(byte))
            .unwrap_or(rest.len()),
    )
}

#[cfg(test)]
mod tests;
