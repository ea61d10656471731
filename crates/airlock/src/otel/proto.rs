//! The protobuf wire format, as much of it as an OTLP trace export needs: varints, fixed
//! 32- and 64-bit fields, and length-delimited strings, bytes and messages.
//!
//! Written straight into one buffer. A nested message whose length is not known before its
//! fields are written is written first and its length put in front of it afterwards (a move
//! of its bytes, which are few except for the one message holding all the spans of an
//! export).

/// The wire types used.
#[derive(Clone, Copy)]
enum Wire {
    Varint,
    Fixed64,
    Delimited,
    Fixed32,
}

impl Wire {
    /// The type's number in a tag's low three bits.
    fn number(self) -> u64 {
        match self {
            Self::Varint => 0,
            Self::Fixed64 => 1,
            Self::Delimited => 2,
            Self::Fixed32 => 5,
        }
    }
}

/// How many bytes `value` takes as a varint.
pub(super) fn varint_len(value: u64) -> usize {
    // 7 bits per byte; zero takes one.
    let bits = u64::BITS.saturating_sub(value.leading_zeros()).max(1);
    usize::try_from(bits.div_ceil(7)).unwrap_or(10)
}

/// Appends `value` as a varint.
pub(super) fn varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        // The low seven bits, with the continuation bit.
        buf.push(u8::try_from(value & 0x7f).unwrap_or(0) | 0x80);
        value >>= 7;
    }
    buf.push(u8::try_from(value).unwrap_or(0));
}

fn tag(buf: &mut Vec<u8>, field: u32, wire: Wire) {
    varint(buf, (u64::from(field) << 3) | wire.number());
}

/// The bytes a field's tag takes (fields below 16 take one).
fn tag_len(field: u32) -> usize {
    varint_len(u64::from(field) << 3)
}

/// A varint field (`uint32`, `uint64`, an enum, or an `int64` in two's complement).
pub(super) fn uint(buf: &mut Vec<u8>, field: u32, value: u64) {
    tag(buf, field, Wire::Varint);
    varint(buf, value);
}

/// A `fixed64` field.
pub(super) fn fixed64(buf: &mut Vec<u8>, field: u32, value: u64) {
    tag(buf, field, Wire::Fixed64);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// A `fixed32` field.
pub(super) fn fixed32(buf: &mut Vec<u8>, field: u32, value: u32) {
    tag(buf, field, Wire::Fixed32);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// A `bytes` or `string` field.
pub(super) fn bytes(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    tag(buf, field, Wire::Delimited);
    varint(buf, len_u64(value.len()));
    buf.extend_from_slice(value);
}

/// A `string` field made of `parts` one after another (a span's name, without joining it
/// first).
pub(super) fn string_of(buf: &mut Vec<u8>, field: u32, parts: &[&str]) {
    tag(buf, field, Wire::Delimited);
    let len = parts.iter().map(|part| part.len()).sum::<usize>();
    varint(buf, len_u64(len));
    for part in parts {
        buf.extend_from_slice(part.as_bytes());
    }
}

/// The bytes of a length-delimited field holding `len` bytes, tag included.
pub(super) fn delimited_len(field: u32, len: usize) -> usize {
    tag_len(field)
        .saturating_add(varint_len(len_u64(len)))
        .saturating_add(len)
}

/// A message field whose body `write` appends.
pub(super) fn message(buf: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    tag(buf, field, Wire::Delimited);
    let start = buf.len();
    write(buf);
    let len = buf.len().saturating_sub(start);
    let mut prefix = Vec::with_capacity(10);
    varint(&mut prefix, len_u64(len));
    buf.extend_from_slice(&prefix);
    if let Some(body) = buf.get_mut(start..) {
        body.rotate_right(prefix.len());
    }
}

/// The header of a message field whose body's length is known: `len` bytes must follow.
pub(super) fn message_head(buf: &mut Vec<u8>, field: u32, len: usize) {
    tag(buf, field, Wire::Delimited);
    varint(buf, len_u64(len));
}

fn len_u64(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_seven_bits_a_byte_low_first() {
        for (value, wire) in [
            (0_u64, &[0_u8][..]),
            (1, &[1]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ] {
            let mut buf = Vec::new();
            varint(&mut buf, value);
            assert_eq!(buf, wire, "{value}");
            assert_eq!(varint_len(value), wire.len(), "{value}");
        }
    }

    #[test]
    fn a_message_gets_its_length_in_front_whatever_its_size() {
        for size in [0_usize, 1, 127, 128, 300, 20_000] {
            let mut buf = vec![0xee];
            message(&mut buf, 2, |buf| {
                buf.extend(std::iter::repeat_n(7_u8, size))
            });
            let mut want = vec![0xee, 0x12];
            varint(&mut want, u64::try_from(size).unwrap());
            want.extend(std::iter::repeat_n(7_u8, size));
            assert_eq!(buf, want, "{size}");
            assert_eq!(delimited_len(2, size), want.len() - 1, "{size}");
        }
    }

    #[test]
    fn fields_carry_their_number_and_wire_type() {
        let mut buf = Vec::new();
        uint(&mut buf, 6, 2);
        fixed64(&mut buf, 7, 1);
        fixed32(&mut buf, 16, 0x301);
        string_of(&mut buf, 5, &["tools/call", " ", "echo"]);
        assert_eq!(
            buf,
            [
                &[0x30, 2][..],
                &[0x39, 1, 0, 0, 0, 0, 0, 0, 0],
                &[0x85, 0x01, 0x01, 0x03, 0, 0],
                &[0x2a, 15],
                b"tools/call echo",
            ]
            .concat()
        );
    }
}
