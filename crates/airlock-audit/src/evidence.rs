//! What came back, as a report shows it: the first bytes of what the server wrote for a
//! finding, with the secrets the audit knows of redacted, cut at a character, and escaped.
//!
//! A reader of a report must see why a case failed without reading the judge's code, so every
//! finding carries its evidence. But a report is uploaded (SARIF to a code-scanning service,
//! JUnit to a CI) and what a server writes is hostile and may hold secrets: a tool that prints
//! its environment returns the CI's tokens. So evidence is kept as at most
//! [`MAX_KEPT_BYTES`] raw bytes, and shown only through [`Redactor::show`]: every secret the
//! audit knows (the values of `--header` and `--auth-token-env`, and of the auditor's own
//! environment variables whose names say they hold one) becomes `[redacted]`, then the text is
//! cut to [`MAX_EVIDENCE_BYTES`] bytes at a character boundary and escaped by `judge::shown`
//! (controls, bidi), so it can carry no terminal escape either.

use std::ffi::OsString;

use super::judge::shown;

/// The first bytes of one thing the server wrote, and how long it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Evidence {
    head: Box<[u8]>,
    total: usize,
}

impl Evidence {
    /// The evidence of `bytes` (its first [`MAX_KEPT_BYTES`] kept).
    pub(crate) fn of(bytes: &[u8]) -> Self {
        Self::head_of(bytes, bytes.len())
    }

    /// The evidence of something `total` bytes long that starts with `bytes`.
    pub(crate) fn head_of(bytes: &[u8], total: usize) -> Self {
        let head = bytes.get(..MAX_KEPT_BYTES).unwrap_or(bytes);
        Self {
            head: head.into(),
            total: total.max(head.len()),
        }
    }

    /// The same evidence with `prefix` (the audit's own words, like an HTTP status) first.
    pub(crate) fn prefixed(&self, prefix: &str) -> Self {
        let mut head = prefix.as_bytes().to_vec();
        head.extend_from_slice(&self.head);
        head.truncate(MAX_KEPT_BYTES);
        Self {
            head: head.into(),
            total: self.total.saturating_add(prefix.len()),
        }
    }
}

/// What the audit hides from evidence: the secrets it knows.
#[derive(Clone, Debug, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret holding another is hidden whole.
    secrets: Vec<Vec<u8>>,
}

impl Redactor {
    /// The secrets of `extra` (header values) and of the auditor's environment `env`: values
    /// of variables whose names say they hold a secret. Values shorter than
    /// [`MIN_SECRET_BYTES`] are left: hiding `1` or `on` everywhere would hide the evidence.
    pub(crate) fn new(
        extra: &[String],
        env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Self {
        let mut secrets: Vec<Vec<u8>> = extra
            .iter()
            .map(|secret| secret.as_bytes().to_vec())
            .collect();
        for (name, value) in env {
            let name = name.to_string_lossy().to_ascii_uppercase();
            if SECRET_NAME_PARTS.iter().any(|part| name.contains(part)) {
                secrets.push(value.as_encoded_bytes().to_vec());
            }
        }
        secrets.retain(|secret| secret.len() >= MIN_SECRET_BYTES);
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Self { secrets }
    }

    /// `evidence` for a report: secrets redacted, at most [`MAX_EVIDENCE_BYTES`] bytes of it
    /// cut at a character boundary, escaped; `…` when more came back than is shown.
    pub(crate) fn show(&self, evidence: &Evidence) -> String {
        let redacted = self.redact(&evidence.head);
        let mut cut = redacted.get(..MAX_EVIDENCE_BYTES).unwrap_or(&redacted);
        let whole = cut.len() == redacted.len() && evidence.total <= evidence.head.len();
        // A character cut in two at the end is dropped rather than shown as U+FFFD.
        if let Err(error) = std::str::from_utf8(cut)
            && error.error_len().is_none()
        {
            cut = cut.get(..error.valid_up_to()).unwrap_or_default();
        }
        let text = String::from_utf8_lossy(cut);
        let mut shown = shown(&text, MAX_EVIDENCE_BYTES);
        if !whole {
            shown.push('…');
        }
        shown
    }

    /// `bytes` with every known secret replaced by `[redacted]`.
    fn redact(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for secret in &self.secrets {
            let finder = memchr::memmem::Finder::new(secret);
            let mut next = Vec::with_capacity(out.len());
            let mut rest = out.as_slice();
            while let Some(at) = finder.find(rest) {
                let (before, after) = rest.split_at(at);
                next.extend_from_slice(before);
                next.extend_from_slice(REDACTED);
                rest = after.get(secret.len()..).unwrap_or_default();
            }
            next.extend_from_slice(rest);
            out = next;
        }
        out
    }
}

/// What a secret becomes.
const REDACTED: &[u8] = b"[redacted]";

/// Parts of a variable's name that say its value is a secret.
const SECRET_NAME_PARTS: [&str; 9] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "PRIVATE",
];

/// Shortest value redacted.
const MIN_SECRET_BYTES: usize = 6;

/// Bytes of evidence a report shows (before escaping).
pub(crate) const MAX_EVIDENCE_BYTES: usize = 512;

/// Raw bytes kept of one thing the server wrote: room for a secret that starts just before
/// [`MAX_EVIDENCE_BYTES`] to be found whole and hidden.
pub(crate) const MAX_KEPT_BYTES: usize = 2048;

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(extra: &[&str], env: &[(&str, &str)]) -> Redactor {
        Redactor::new(
            &extra.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            env.iter()
                .map(|(n, v)| (OsString::from(n), OsString::from(v))),
        )
    }

    #[test]
    fn known_secrets_are_redacted_and_other_values_kept() {
        let r = redactor(
            &["Bearer tok-0123456789", "tok-0123456789"],
            &[
                ("GITHUB_TOKEN", "ghp_abcdefgh"),
                ("HOME", "/home/someone"),
                ("API_KEY", "on"),
            ],
        );
        let line = br#"{"GITHUB_TOKEN":"ghp_abcdefgh","HOME":"/home/someone","API_KEY":"on","h":"Bearer tok-0123456789"}"#;
        assert_eq!(
            r.show(&Evidence::of(line)),
            r#"{"GITHUB_TOKEN":"[redacted]","HOME":"/home/someone","API_KEY":"on","h":"[redacted]"}"#
        );
    }

    #[test]
    fn evidence_is_bounded_cut_at_a_character_and_escaped() {
        let r = Redactor::default();
        let long = "é".repeat(400);
        let shown = r.show(&Evidence::of(long.as_bytes()));
        assert!(shown.ends_with("é…"), "{shown}");
        assert_eq!(shown.chars().filter(|c| *c == 'é').count(), 256);
        assert_eq!(
            r.show(&Evidence::of(b"a\x1b[31mb\n")),
            "a\\u{1b}[31mb\\u{a}"
        );
        assert_eq!(r.show(&Evidence::head_of(b"abc", 10)), "abc…");
        assert_eq!(r.show(&Evidence::of(b"\xff")), "\u{fffd}");
        assert_eq!(
            r.show(&Evidence::of(b"body").prefixed("HTTP 500: ")),
            "HTTP 500: body"
        );
    }

    #[test]
    fn a_secret_straddling_the_shown_bytes_is_hidden_whole() {
        let secret = "s3cr3t-value-0123";
        let r = redactor(&[secret], &[]);
        let text = format!("{}{secret}", "x".repeat(MAX_EVIDENCE_BYTES - 5));
        let shown = r.show(&Evidence::of(text.as_bytes()));
        assert!(!shown.contains("s3cr"), "{shown}");
        assert!(shown.ends_with("[reda…"), "{shown}");
    }
}
