//! Secret values: held in `secrecy` types from the moment they are read, exposed only to build
//! a child's environment and to find them in its output.
//!
//! A manifest names secrets (`secret_env = ["API_TOKEN"]`); their values are read once at
//! start from airlock's own environment. They never appear in logs (their `Debug` is
//! redacted), in errors, or in anything returned to the agent: every occurrence in a child's
//! stdout or stderr is replaced by [`MARKER`] before the output leaves the process, by a rule
//! that depends on nothing but where secrets occur whole and how long they are ([`Redactor`]).

use std::ffi::OsString;

use secrecy::{ExposeSecret, SecretString};

/// What a secret's occurrences in tool output become.
pub const MARKER: &str = "[REDACTED]";

/// One named secret.
pub struct Secret {
    name: String,
    value: SecretString,
}

impl Secret {
    /// A secret called `name` holding `value`.
    pub fn new(name: String, value: SecretString) -> Self {
        Self { name, value }
    }

    /// The environment variable name (not secret).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pair a child's environment gets. The one place a value leaves its wrapper for a
    /// process.
    pub fn expose_to_child(&self) -> (OsString, OsString) {
        (
            OsString::from(&self.name),
            OsString::from(self.value.expose_secret()),
        )
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Finds secret values in output and replaces them, without telling anything about a secret
/// that does not occur whole.
///
/// # The rule, and why it is no oracle
///
/// Every byte of `kept` that belongs to an occurrence of a secret (occurrences may overlap or
/// touch) is *covered*; each maximal run of covered bytes becomes one [`MARKER`]. Nothing else
/// depends on a secret's content. Where airlock cut a stream (at its cap, or keeping only its
/// head or its tail), the bytes beside the cut could be part of a secret that goes on past it;
/// the [`Redactor::window`] bytes next to each cut are withheld whatever they hold, a number
/// that depends only on the secrets' lengths. A stream that ends by itself is not treated at
/// its edges: a command that prints part of a secret on its own shows that part, at an edge
/// or anywhere else (`SECURITY.md`, known gaps).
///
/// So for two sets of secrets of the same lengths, what the same output becomes differs only
/// where a secret of either set occurs whole. The previous rule dropped a tail that began a
/// secret (or a head that ended one): whether bytes vanished told an agent, one guessed
/// character at a time, how its guess compared with a secret it was never shown.
pub struct Redactor {
    /// Every value once, each at least one byte long.
    values: Vec<SecretString>,
    /// Bytes withheld next to a cut: the longest value's length, rounded up.
    window: usize,
}

/// Which edges of kept output are cuts made by airlock rather than the stream's own ends.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Cut {
    /// Bytes before the kept ones were dropped (a stream of which only the tail is kept).
    pub start: bool,
    /// Bytes after the kept ones were dropped or never read (a cap, a stopped command).
    pub end: bool,
}

/// A piece of redacted output, in order.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Piece<'a> {
    /// Bytes shown as they are.
    Text(&'a [u8]),
    /// A run of bytes covered by secrets, shown as [`MARKER`].
    Redacted,
}

impl Redactor {
    /// A redactor for `secrets` (empty values are ignored, a value given twice counts once).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Self {
        let mut values: Vec<SecretString> = Vec::new();
        for secret in secrets {
            let value = secret.value.expose_secret();
            let known = values.iter().any(|v| v.expose_secret() == value);
            if !value.is_empty() && !known {
                values.push(secret.value.clone());
            }
        }
        let longest = values
            .iter()
            .map(|value| value.expose_secret().len())
            .max()
            .unwrap_or(0);
        let window = longest
            .checked_next_multiple_of(WINDOW_ROUNDING_BYTES)
            .unwrap_or(usize::MAX);
        Self { values, window }
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Bytes withheld next to each cut: the longest secret's length rounded up to a multiple
    /// of 64 (so a reply tells at most which 64-byte band that length is in); 0 without
    /// secrets. A secret that a cut splits has at most its length minus one bytes on the
    /// kept side, so none of them is shown.
    pub fn window(&self) -> usize {
        self.window
    }

    /// What `kept` shows once redacted, in pieces: text and [`Piece::Redacted`] markers.
    /// Occurrences are looked for in all of `kept`; then [`Self::window`] bytes are withheld
    /// after the start if `cut.start` and before the end if `cut.end` (a covered run that
    /// reaches into the rest is shown as its marker).
    pub fn pieces<'a>(&'a self, kept: &'a [u8], cut: Cut) -> impl Iterator<Item = Piece<'a>> + 'a {
        let lo = if cut.start {
            self.window.min(kept.len())
        } else {
            0
        };
        let hi = if cut.end {
            kept.len().saturating_sub(self.window)
        } else {
            kept.len()
        };
        let mut needles: Vec<Needle<'a>> = self
            .values
            .iter()
            .map(|value| {
                let bytes = value.expose_secret().as_bytes();
                Needle {
                    finder: memchr::memmem::Finder::new(bytes),
                    len: bytes.len(),
                    next: None,
                }
            })
            .collect();
        for needle in &mut needles {
            needle.search(kept, 0);
        }
        Pieces {
            kept,
            needles,
            pos: 0,
            lo,
            hi: hi.max(lo),
            pending: None,
        }
    }

    /// A host name the proxy kept (lowercase, DNS characters) with every secret that occurs in
    /// it whole, in any case, replaced by [`MARKER`]: a command can put a secret in a name it
    /// asks the proxy for, and the name, lowercased, reaches the reply and the audit record.
    pub fn redact_name(&self, name: &str) -> String {
        let mut shown = name.to_owned();
        for value in &self.values {
            let needle = value.expose_secret().to_ascii_lowercase();
            let mut at = 0;
            while let Some(found) = shown
                .get(at..)
                .and_then(|rest| rest.to_ascii_lowercase().find(&needle))
            {
                let start = at.saturating_add(found);
                let end = start.saturating_add(needle.len());
                shown.replace_range(start..end, MARKER);
                at = start.saturating_add(MARKER.len());
            }
        }
        shown
    }

    /// `kept` with every run of covered bytes replaced by [`MARKER`] and the bytes beside
    /// `cut` withheld; see [`Self::pieces`].
    pub fn redact(&self, kept: &[u8], cut: Cut) -> Vec<u8> {
        let mut text = Vec::with_capacity(kept.len());
        for piece in self.pieces(kept, cut) {
            match piece {
                Piece::Text(bytes) => text.extend_from_slice(bytes),
                Piece::Redacted => text.extend_from_slice(MARKER.as_bytes()),
            }
        }
        text
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.values.len())
            .field("window", &self.window)
            .finish()
    }
}

/// The pieces of one redacted output; see [`Redactor::pieces`]. It holds the secrets'
/// bytes, so it has no `Debug`.
struct Pieces<'a> {
    kept: &'a [u8],
    needles: Vec<Needle<'a>>,
    /// Where the next covered run is looked for.
    pos: usize,
    /// The bytes shown are `kept[lo..hi]`.
    lo: usize,
    hi: usize,
    /// A covered run found after text that was returned first: its end.
    pending: Option<usize>,
}

/// One secret being looked for.
struct Needle<'a> {
    finder: memchr::memmem::Finder<'a>,
    len: usize,
    /// Where its next occurrence starts, at or after the last search's start.
    next: Option<usize>,
}

impl Needle<'_> {
    fn search(&mut self, kept: &[u8], from: usize) {
        self.next = kept
            .get(from..)
            .and_then(|rest| self.finder.find(rest))
            .and_then(|at| at.checked_add(from));
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        if let Some(end) = self.pending.take() {
            self.pos = end;
            return Some(Piece::Redacted);
        }
        loop {
            let from = self.pos.max(self.lo);
            if from >= self.hi {
                return None;
            }
            let kept = self.kept;
            let rest = move |to: usize| kept.get(from..to).map(Piece::Text);
            match self.next_run() {
                // Wholly before the bytes shown.
                Some((_, end)) if end <= self.lo => self.pos = end,
                Some((start, end)) if start < self.hi => {
                    if start > from {
                        self.pending = Some(end);
                        self.pos = start;
                        return rest(start);
                    }
                    self.pos = end;
                    return Some(Piece::Redacted);
                }
                _ => {
                    let text = rest(self.hi);
                    self.pos = self.hi;
                    return text;
                }
            }
        }
    }
}

impl Pieces<'_> {
    /// The next maximal run of covered bytes at or after `pos`, as `(start, end)`; every
    /// needle is left looking past its end.
    fn next_run(&mut self) -> Option<(usize, usize)> {
        let kept = self.kept;
        let pos = self.pos;
        for needle in &mut self.needles {
            if needle.next.is_some_and(|at| at < pos) {
                needle.search(kept, pos);
            }
        }
        let start = self.needles.iter().filter_map(|needle| needle.next).min()?;
        let mut end = start;
        loop {
            let mut grew = false;
            for needle in &mut self.needles {
                // Overlapping and touching occurrences join the run.
                while let Some(at) = needle.next
                    && at <= end
                {
                    end = end.max(at.saturating_add(needle.len));
                    needle.search(kept, at.saturating_add(1));
                    grew = true;
                }
            }
            if !grew {
                return Some((start, end));
            }
        }
    }
}

/// The withheld window is a multiple of this, so its size says little about the secrets'.
const WINDOW_ROUNDING_BYTES: usize = 64;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Red team (issue 36): a secret the command put in a host name is redacted in any case
    /// (the proxy keeps names lowercase), every time it occurs, and nothing else is.
    #[test]
    fn names_are_redacted_of_secrets_in_any_case() {
        let two = redactor(&["AbC123xyZ", "q9"]);
        assert_eq!(
            two.redact_name("abc123xyz.exfil.example"),
            "[REDACTED].exfil.example"
        );
        assert_eq!(
            two.redact_name("x-abc123xyz-abc123xyz.e"),
            "x-[REDACTED]-[REDACTED].e"
        );
        assert_eq!(two.redact_name("abc123xy.example"), "abc123xy.example");
        assert_eq!(
            two.redact_name("q9q9.example"),
            "[REDACTED][REDACTED].example"
        );
        assert_eq!(redactor(&[]).redact_name("a.example"), "a.example");
    }

    fn redactor(values: &[&str]) -> Redactor {
        let secrets: Vec<Secret> = values
            .iter()
            .map(|v| Secret::new("S".into(), SecretString::from(v.to_string())))
            .collect();
        Redactor::new(&secrets)
    }

    const WHOLE: Cut = Cut {
        start: false,
        end: false,
    };
    const CUT_END: Cut = Cut {
        start: false,
        end: true,
    };
    const CUT_START: Cut = Cut {
        start: true,
        end: false,
    };

    #[test]
    fn every_occurrence_is_replaced() {
        let r = redactor(&["hunter22"]);
        assert_eq!(
            r.redact(b"a hunter22 b hunter22", WHOLE),
            b"a [REDACTED] b [REDACTED]"
        );
        assert_eq!(r.redact(b"nothing here", WHOLE), b"nothing here");
    }

    #[test]
    fn overlapping_and_touching_occurrences_become_one_marker() {
        let r = redactor(&["abcd", "xxabcdyy"]);
        assert_eq!(
            r.redact(b"1 xxabcdyy 2 abcd", WHOLE),
            b"1 [REDACTED] 2 [REDACTED]"
        );
        let r = redactor(&["abab"]);
        assert_eq!(r.redact(b"<ababab>", WHOLE), b"<[REDACTED]>");
        assert_eq!(r.redact(b"<abababab>", WHOLE), b"<[REDACTED]>");
        let r = redactor(&["abcd", "cdef"]);
        assert_eq!(
            r.redact(b"abcdef abcdcdef", WHOLE),
            b"[REDACTED] [REDACTED]"
        );
    }

    /// A tail that begins a secret, or a head that ends one, was dropped:
    /// an oracle. Now a stream that ends by itself shows its edges like any other text.
    #[test]
    fn parts_of_a_secret_at_the_edges_of_whole_output_are_text() {
        let r = redactor(&["s3cr3t-T0KEN-value"]);
        assert_eq!(
            r.redact(b"token=s3cr3t-T0KEN-valu", WHOLE),
            b"token=s3cr3t-T0KEN-valu"
        );
        assert_eq!(
            r.redact(b"T0KEN-value and more", WHOLE),
            b"T0KEN-value and more"
        );
        assert_eq!(r.redact(b"hello ghp_Zx81kQ", WHOLE), b"hello ghp_Zx81kQ");
    }

    #[test]
    fn the_window_beside_a_cut_is_withheld_whatever_it_holds() {
        let r = redactor(&["s3cr3t-T0KEN-value"]);
        assert_eq!(r.window(), 64);
        let output: Vec<u8> = (0..100_u8).map(|i| b'a' + i % 26).collect();
        assert_eq!(r.redact(&output, CUT_END), output[..36].to_vec());
        assert_eq!(r.redact(&output, CUT_START), output[64..].to_vec());
        let both = Cut {
            start: true,
            end: true,
        };
        assert_eq!(r.redact(&output, both), b"");
        // Shorter than the window: nothing is shown.
        assert_eq!(r.redact(b"plain", CUT_END), b"");
    }

    #[test]
    fn a_whole_secret_reaching_into_the_window_is_shown_as_its_marker() {
        let r = redactor(&["0123456789"]);
        let mut output = vec![b'.'; 30];
        output.extend_from_slice(b"0123456789");
        output.extend_from_slice(&[b'.'; 60]);
        // 100 bytes, 64 withheld: the secret (bytes 30 to 39) crosses the line at 36.
        let shown = r.redact(&output, CUT_END);
        assert_eq!(shown, [vec![b'.'; 30], MARKER.as_bytes().to_vec()].concat());
    }

    #[test]
    fn without_secrets_nothing_is_withheld() {
        let r = redactor(&[]);
        assert!(r.is_empty());
        assert_eq!(r.window(), 0);
        assert_eq!(r.redact(b"all of it", CUT_END), b"all of it");
    }

    #[test]
    fn the_window_is_the_longest_secret_rounded_up_to_64_bytes() {
        assert_eq!(redactor(&["abcd"]).window(), 64);
        assert_eq!(redactor(&[&"x".repeat(64)]).window(), 64);
        assert_eq!(redactor(&["abcd", &"x".repeat(65)]).window(), 128);
    }

    #[test]
    fn debug_never_shows_values() {
        let secret = Secret::new("TOKEN".into(), SecretString::from("topsecret".to_owned()));
        assert!(!format!("{secret:?}").contains("topsecret"));
        assert!(!format!("{:?}", Redactor::new([&secret])).contains("topsecret"));
    }

    /// The redactor before the oracle was closed: what the differential check must catch.
    fn oracle_redact(output: &[u8], secrets: &[&str], cut: Cut) -> Vec<u8> {
        let mut text = redactor(secrets).redact(output, WHOLE);
        let shortest = if cut.end {
            1
        } else {
            crate::limits::MIN_SECRET_BYTES
        };
        for secret in secrets {
            let needle = secret.as_bytes();
            for len in (shortest..needle.len()).rev() {
                if len <= text.len() && needle.starts_with(&text[text.len() - len..]) {
                    text.truncate(text.len() - len);
                    break;
                }
            }
        }
        text
    }

    #[test]
    fn the_differential_check_catches_the_old_oracle() {
        let cut = WHOLE;
        let output = b"hello ghp_Zx81kQ";
        let check = crate::fuzzing::redaction_differs_only_at_secrets(
            output,
            "ghp_Zx81kQ7vB2",
            "ghp_Qa03rY5uC8",
            cut,
            oracle_redact,
        );
        assert!(check.is_err(), "{check:?}");
        assert_eq!(
            crate::fuzzing::redaction_differs_only_at_secrets(
                output,
                "ghp_Zx81kQ7vB2",
                "ghp_Qa03rY5uC8",
                cut,
                |output, secrets, cut| redactor(secrets).redact(output, cut),
            ),
            Ok(())
        );
    }

    /// Every input of the `redactor` fuzz target's corpus and regressions, replayed through
    /// its entry point.
    #[test]
    fn corpus_replays_redactor() {
        assert!(crate::fuzzing::tests::replay("redactor", crate::fuzzing::redactor) > 0);
    }

    /// Text over a small alphabet, so that secrets occur, overlap and half-occur often.
    fn small(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], len)
    }

    proptest! {
        /// For two secrets of one length, the redacted outputs differ only
        /// where one of them occurs whole; and every output is what the rule says.
        #[test]
        fn two_secrets_of_one_length_give_outputs_that_differ_only_where_one_occurs(
            len in 4_usize..9,
            first in small(8..9),
            second in small(8..9),
            output in small(0..80),
            insert in proptest::option::of((0_usize..80, any::<bool>())),
            start in any::<bool>(),
            end in any::<bool>(),
        ) {
            let first = String::from_utf8(first[..len].to_vec()).unwrap();
            let second = String::from_utf8(second[..len].to_vec()).unwrap();
            let mut output = output;
            if let Some((at, which)) = insert {
                let secret = if which { &first } else { &second };
                let at = at.min(output.len());
                output.splice(at..at, secret.bytes());
            }
            let cut = Cut { start, end };
            prop_assert_eq!(crate::fuzzing::redaction_holds(&output, &first, &second, cut), Ok(()));
        }

        /// The fuzz target's entry point, on any input.
        #[test]
        fn the_redactor_fuzz_entry_point_holds_for_any_input(
            data in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            crate::fuzzing::redactor(&data);
        }

        /// The same with any bytes around printable secrets.
        #[test]
        fn any_output_is_redacted_by_the_rule(
            first in "[ -~]{4,24}",
            second_tail in "[ -~]{0,24}",
            output in proptest::collection::vec(any::<u8>(), 0..200),
            start in any::<bool>(),
            end in any::<bool>(),
        ) {
            let second: String = second_tail.chars().chain(first.chars()).take(first.len()).collect();
            let mut output = output;
            let at = output.len() / 2;
            output.splice(at..at, first.bytes());
            let cut = Cut { start, end };
            prop_assert_eq!(crate::fuzzing::redaction_holds(&output, &first, &second, cut), Ok(()));
        }
    }
}
