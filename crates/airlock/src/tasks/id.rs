//! Task ids: 32 bytes of the operating system's random source as 64 lowercase hex digits, the
//! strength of a session id. An id is never guessed into: whoever did not get it from the
//! server that made it has 2^256 to try. A peer's id is read only in that exact form;
//! anything else names no task, and is answered as one that never existed.

use std::fmt;

/// Bytes drawn from the random source for one id.
const ID_BYTES: usize = 32;

/// The id of one task.
#[derive(Clone, Copy, Eq, Hash, PartialEq)]
pub(crate) struct TaskId([u8; ID_BYTES]);

impl TaskId {
    /// A fresh id; `None` if the random source failed.
    pub(crate) fn random() -> Option<Self> {
        let mut bytes = [0_u8; ID_BYTES];
        getrandom::fill(&mut bytes).ok()?;
        Some(Self(bytes))
    }

    /// The id a peer wrote, if it is exactly 64 lowercase hex digits.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        if text.len() != ID_BYTES.saturating_mul(2) {
            return None;
        }
        let mut bytes = [0_u8; ID_BYTES];
        for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let [high, low] = pair else {
                return None;
            };
            *byte = (digit(*high)? << 4) | digit(*low)?;
        }
        Some(Self(bytes))
    }
}

/// A lowercase hex digit's value.
fn digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte.wrapping_sub(b'0')),
        b'a'..=b'f' => Some(byte.wrapping_sub(b'a').wrapping_add(10)),
        _ => None,
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

/// Ids are not secrets from their owner, but a debug print never needs the whole of one.
impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TaskId(…)")
    }
}

impl serde::Serialize for TaskId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_random_id_is_64_lowercase_hex_and_reads_back() {
        let id = TaskId::random().unwrap();
        let text = id.to_string();
        assert_eq!(text.len(), 64);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(TaskId::parse(&text), Some(id));
        assert_ne!(TaskId::random(), Some(id));
    }

    #[test]
    fn near_misses_name_no_task() {
        let good = "0123456789abcdef".repeat(4);
        assert!(TaskId::parse(&good).is_some());
        for bad in [
            String::new(),
            good.to_uppercase(),
            format!("{good}0"),
            good.get(1..).unwrap().to_owned(),
            format!("{}g", good.get(1..).unwrap()),
            format!("{}é", good.get(2..).unwrap()),
            format!(" {}", good.get(1..).unwrap()),
        ] {
            assert_eq!(TaskId::parse(&bad), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn only_what_an_id_prints_as_parses(text in "\\PC{0,80}") {
            if let Some(id) = TaskId::parse(&text) {
                prop_assert_eq!(id.to_string(), text);
            }
        }

        #[test]
        fn every_id_reads_back(bytes in proptest::array::uniform32(any::<u8>())) {
            let id = TaskId(bytes);
            prop_assert_eq!(TaskId::parse(&id.to_string()), Some(id));
        }
    }
}
