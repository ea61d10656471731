//! Secret values: held in `secrecy` types from the moment they are read, exposed only to build
//! a child's environment and to find them in its output.
//!
//! A manifest names secrets (`secret_env = ["API_TOKEN"]`); their values are read once at
//! start from airlock's own environment. They never appear in logs (their `Debug` is
//! redacted), in errors, or in anything returned to the agent: every occurrence in a child's
//! stdout or stderr is replaced by [`MARKER`] before the output leaves the process.

use std::ffi::OsString;

use secrecy::{ExposeSecret, SecretString};

/// What a secret's occurrences in tool output become.
pub const MARKER: &[u8] = b"[REDACTED]";

/// Shortest secret accepted: redacting a two-letter value would shred ordinary output, and a
/// value that short is not a secret worth the name.
pub const MIN_SECRET_BYTES: usize = 4;

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

/// Finds secret values in output and replaces them.
pub struct Redactor {
    /// Values, longest first, so a secret containing another is replaced whole.
    values: Vec<SecretString>,
}

impl Redactor {
    /// A redactor for `secrets`.
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Self {
        let mut values: Vec<SecretString> = secrets.into_iter().map(|s| s.value.clone()).collect();
        values.sort_by_key(|value| std::cmp::Reverse(value.expose_secret().len()));
        Self { values }
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `output` with every secret replaced by [`MARKER`]. A secret cut by the edge of the
    /// output leaks no part of [`MIN_SECRET_BYTES`] bytes or more: a tail that is the start of
    /// a secret, or a head that is its end, is dropped too (a command can stop mid-secret on
    /// its own, `head --bytes=n`). When airlock cut the output (`truncated`), any tail that
    /// starts a secret goes, however short.
    pub fn redact(&self, output: &[u8], truncated: bool) -> Vec<u8> {
        let mut text = output.to_vec();
        for value in &self.values {
            let needle = value.expose_secret().as_bytes();
            if needle.is_empty() || memchr::memmem::find(&text, needle).is_none() {
                continue;
            }
            let mut replaced = Vec::with_capacity(text.len());
            let mut rest: &[u8] = &text;
            while let Some(at) = memchr::memmem::find(rest, needle) {
                let (before, after) = rest.split_at(at);
                replaced.extend_from_slice(before);
                replaced.extend_from_slice(MARKER);
                rest = after.get(needle.len()..).unwrap_or_default();
            }
            replaced.extend_from_slice(rest);
            text = replaced;
        }
        let shortest_tail = if truncated { 1 } else { MIN_SECRET_BYTES };
        let keep = self.safe_prefix_len(&text, shortest_tail);
        text.truncate(keep);
        let skip = self.safe_suffix_start(&text);
        text.split_off(skip)
    }

    /// The length of `text` without its longest tail (of at least `shortest` bytes) that is a
    /// proper prefix of a secret.
    fn safe_prefix_len(&self, text: &[u8], shortest: usize) -> usize {
        let mut cut = text.len();
        for value in &self.values {
            let needle = value.expose_secret().as_bytes();
            let longest = needle.len().saturating_sub(1).min(text.len());
            for len in (shortest..=longest).rev() {
                let tail = text
                    .get(text.len().saturating_sub(len)..)
                    .unwrap_or_default();
                if needle.starts_with(tail) {
                    cut = cut.min(text.len().saturating_sub(len));
                    break;
                }
            }
        }
        cut
    }

    /// Where `text` starts once a head of at least [`MIN_SECRET_BYTES`] bytes that is a proper
    /// suffix of a secret is dropped.
    fn safe_suffix_start(&self, text: &[u8]) -> usize {
        let mut start = 0;
        for value in &self.values {
            let needle = value.expose_secret().as_bytes();
            let longest = needle.len().saturating_sub(1).min(text.len());
            for len in (MIN_SECRET_BYTES..=longest).rev() {
                let head = text.get(..len).unwrap_or_default();
                if needle.ends_with(head) {
                    start = start.max(len);
                    break;
                }
            }
        }
        start
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.values.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(values: &[&str]) -> Redactor {
        let secrets: Vec<Secret> = values
            .iter()
            .map(|v| Secret::new("S".into(), SecretString::from(v.to_string())))
            .collect();
        Redactor::new(&secrets)
    }

    #[test]
    fn every_occurrence_is_replaced() {
        let r = redactor(&["hunter22"]);
        assert_eq!(
            r.redact(b"a hunter22 b hunter22", false),
            b"a [REDACTED] b [REDACTED]"
        );
        assert_eq!(r.redact(b"nothing here", false), b"nothing here");
    }

    #[test]
    fn longer_secrets_win_over_ones_they_contain() {
        let r = redactor(&["abcd", "xxabcdyy"]);
        assert_eq!(
            r.redact(b"1 xxabcdyy 2 abcd", false),
            b"1 [REDACTED] 2 [REDACTED]"
        );
    }

    #[test]
    fn a_secret_cut_by_truncation_leaks_no_prefix() {
        let r = redactor(&["s3cr3t-value"]);
        assert_eq!(r.redact(b"output s3cr3t-v", true), b"output ");
        assert_eq!(r.redact(b"output s3c", false), b"output s3c");
        assert_eq!(r.redact(b"plain output", true), b"plain output");
    }

    /// Review finding E4: a command that stops mid-secret on its own (`head --bytes=n`)
    /// leaked the secret's first bytes.
    #[test]
    fn a_secret_cut_at_either_end_of_the_output_leaks_no_part_of_four_bytes_or_more() {
        let r = redactor(&["s3cr3t-T0KEN-value"]);
        assert_eq!(r.redact(b"token=s3cr3t-T0KEN-valu", false), b"token=");
        assert_eq!(r.redact(b"T0KEN-value and more", false), b" and more");
        // Three bytes or fewer at an edge are ordinary text (and say little about the key).
        assert_eq!(r.redact(b"yes s3c", false), b"yes s3c");
        assert_eq!(r.redact(b"yes s3c", true), b"yes ");
    }

    #[test]
    fn debug_never_shows_values() {
        let secret = Secret::new("TOKEN".into(), SecretString::from("topsecret".to_owned()));
        assert!(!format!("{secret:?}").contains("topsecret"));
        assert!(!format!("{:?}", Redactor::new([&secret])).contains("topsecret"));
    }
}
