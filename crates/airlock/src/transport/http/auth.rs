//! Bearer-token authentication: tokens read once from the environment into `secrecy` types,
//! compared in constant time, never logged, never passed on.
//!
//! Each token is named by the environment variable it came from, and that name is the
//! client's identity: per-client quotas and legacy sessions are keyed by it. A token is only
//! ever compared; handlers and child commands never see it (command tools get a cleared
//! environment, and `airlock serve` refuses a manifest that passes the token's variable on),
//! and the command tools' redactor knows it ([`Tokens::secrets`]), so a token that reaches a
//! command's output by another way (a log file) is replaced there.

use std::sync::Arc;

use hyper::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};

use crate::limits::{MAX_AUTH_TOKEN_BYTES, MAX_TOKEN_VARIABLE_BYTES, MIN_AUTH_TOKEN_BYTES};

/// The bearer tokens a server accepts; empty means no authentication.
#[derive(Default)]
pub struct Tokens {
    entries: Vec<(Arc<str>, SecretString)>,
}

/// Why tokens could not be loaded.
///
/// A variable that is not set, or a name that is not a variable name, is told by its position
/// among the names (counting from 1), never by its text: what was given may be the token itself
/// (many tokens, `ghp_…` ones among them, are valid variable names).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The variable is not set or not UTF-8.
    #[error("the environment variable named for token {position} is not set (or not UTF-8)")]
    Missing {
        /// Which name, counting from 1.
        position: usize,
    },
    /// Not `[A-Za-z_][A-Za-z0-9_]*` of at most `MAX_TOKEN_VARIABLE_BYTES`: most likely the
    /// token itself, given where its variable's name was expected.
    #[error(
        "token {position} is not given by the name of an environment variable \
         ([A-Za-z_][A-Za-z0-9_]*, at most {MAX_TOKEN_VARIABLE_BYTES} bytes); put the token in a \
         variable and give that variable's name, never the token (what was given is not shown)"
    )]
    NotAName {
        /// Which name, counting from 1.
        position: usize,
    },
    /// The token is shorter than the minimum.
    #[error("the token in {0} is shorter than {MIN_AUTH_TOKEN_BYTES} bytes")]
    TooShort(String),
    /// The token is longer than the maximum, or holds characters a header cannot carry.
    #[error("the token in {0} must be at most {MAX_AUTH_TOKEN_BYTES} visible ASCII characters")]
    Malformed(String),
}

impl Tokens {
    /// No authentication.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads one token from each environment variable in `names`.
    ///
    /// # Errors
    ///
    /// The first [`TokenError`]. The error names the variable, never its value.
    pub fn from_env<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, TokenError> {
        let names: Vec<&str> = names.into_iter().collect();
        // Every name first: a token given by mistake is refused before anything is read.
        if let Some(index) = names.iter().position(|name| !is_variable_name(name)) {
            return Err(TokenError::NotAName {
                position: index.saturating_add(1),
            });
        }
        let mut entries = Vec::new();
        for (index, name) in names.into_iter().enumerate() {
            let value = std::env::var(name).map_err(|_| TokenError::Missing {
                position: index.saturating_add(1),
            })?;
            entries.push((Arc::from(name), Self::check(name, value)?));
        }
        Ok(Self { entries })
    }

    /// A token given directly (library users; tests), named `identity`: a variable name, as
    /// for [`Tokens::from_env`] (a shared store's session records hold it as a field of their
    /// own, `-` meaning anonymous).
    ///
    /// # Errors
    ///
    /// [`TokenError::NotAName`] (its position that of this token among those given),
    /// [`TokenError::TooShort`] or [`TokenError::Malformed`].
    pub fn with(mut self, identity: &str, token: SecretString) -> Result<Self, TokenError> {
        if !is_variable_name(identity) {
            return Err(TokenError::NotAName {
                position: self.entries.len().saturating_add(1),
            });
        }
        let token = Self::check(identity, token.expose_secret().to_owned())?;
        self.entries.push((Arc::from(identity), token));
        Ok(self)
    }

    fn check(name: &str, value: String) -> Result<SecretString, TokenError> {
        if value.len() < MIN_AUTH_TOKEN_BYTES {
            return Err(TokenError::TooShort(name.to_owned()));
        }
        let visible = value.bytes().all(|b| b.is_ascii_graphic());
        if value.len() > MAX_AUTH_TOKEN_BYTES || !visible {
            return Err(TokenError::Malformed(name.to_owned()));
        }
        Ok(SecretString::from(value))
    }

    /// Whether authentication is on.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tokens, each with its identity, for a redactor of tool output (the command tools'
    /// one, `airlock_manifest::command::server_with`): the one use of a token besides
    /// comparing it. Each value stays in its `secrecy` wrapper.
    pub fn secrets(&self) -> impl Iterator<Item = (&str, &SecretString)> {
        self.entries.iter().map(|(name, token)| (&**name, token))
    }

    /// The identities (variable names) of the tokens, for logs and checks.
    pub fn identities(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(name, _)| &**name)
    }

    /// Checks an `Authorization` header. With no tokens configured, everyone is anonymous.
    ///
    /// # Errors
    ///
    /// [`Denied`] when tokens are configured and the header carries none of them; it says
    /// whether a token was presented at all (for the `WWW-Authenticate` challenge).
    pub(crate) fn check_header(
        &self,
        header: Option<&HeaderValue>,
    ) -> Result<Option<Arc<str>>, Denied> {
        if self.entries.is_empty() {
            return Ok(None);
        }
        let presented = header
            .map(HeaderValue::as_bytes)
            .filter(|value| value.len() <= MAX_AUTH_TOKEN_BYTES.saturating_add(7))
            .and_then(bearer);
        let Some(presented) = presented else {
            return Err(Denied {
                presented: header.is_some_and(|value| is_bearer(value.as_bytes())),
            });
        };
        // Every token is compared, whichever matches: the time taken does not say which one
        // did, nor how much of one matched.
        let mut identity = None;
        for (name, token) in &self.entries {
            if constant_time_eq(token.expose_secret().as_bytes(), presented) {
                identity = Some(Arc::clone(name));
            }
        }
        identity.map(Some).ok_or(Denied { presented: true })
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("identities", &self.identities().collect::<Vec<_>>())
            .finish()
    }
}

use crate::variables::is_variable_name;

/// A request without a valid token.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) struct Denied {
    /// Whether an `Authorization` header was sent (then the challenge says `invalid_token`).
    pub(crate) presented: bool,
}

/// The token of `Bearer <token>` (scheme in any case, then one or more spaces, as RFC 6750
/// §2.1 writes it).
pub(super) fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || !rest.starts_with(b" ") {
        return None;
    }
    let token = rest.trim_ascii_start();
    (!token.is_empty()).then_some(token)
}

/// Whether `value` is a Bearer credential at all (well formed or not): a request that sent
/// another scheme, or none, is told no `error` (RFC 6750 §3.1).
pub(super) fn is_bearer(value: &[u8]) -> bool {
    value.split_at_checked(6).is_some_and(|(scheme, rest)| {
        scheme.eq_ignore_ascii_case(b"bearer") && (rest.is_empty() || rest.starts_with(b" "))
    })
}

/// Compares `presented` with `expected` in time that depends only on `expected`'s length:
/// every byte of `expected` is visited and differences are OR-ed, with no early exit.
fn constant_time_eq(expected: &[u8], presented: &[u8]) -> bool {
    let mut difference = u8::from(expected.len() != presented.len());
    for (index, byte) in expected.iter().enumerate() {
        let other = presented.get(index).copied().unwrap_or(0);
        difference |= byte ^ other;
    }
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens::none()
            .with("ALICE", SecretString::from("alice-token-0123456789"))
            .unwrap()
            .with("BOB", SecretString::from("bob-token-0123456789abc"))
            .unwrap()
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abcdef", b"abcdef"));
        assert!(!constant_time_eq(b"abcdef", b"abcdeg"));
        assert!(!constant_time_eq(b"abcdef", b"abcde"));
        assert!(!constant_time_eq(b"abcdef", b"abcdefg"));
        assert!(!constant_time_eq(b"abc", b""));
    }

    #[test]
    fn a_known_bearer_token_names_its_identity() {
        let tokens = tokens();
        let header = HeaderValue::from_static("Bearer bob-token-0123456789abc");
        assert_eq!(
            tokens.check_header(Some(&header)).unwrap().as_deref(),
            Some("BOB")
        );
        let header = HeaderValue::from_static("bearer alice-token-0123456789");
        assert_eq!(
            tokens.check_header(Some(&header)).unwrap().as_deref(),
            Some("ALICE")
        );
    }

    #[test]
    fn missing_wrong_and_malformed_tokens_are_denied() {
        let tokens = tokens();
        assert_eq!(tokens.check_header(None), Err(Denied { presented: false }));
        for bad in [
            "Bearer alice-token-012345678",
            "Bearer alice-token-01234567890",
            "Bearer ",
            "Bearer",
            "bearer alice-token-0123456789x",
        ] {
            let header = HeaderValue::from_str(bad).unwrap();
            assert_eq!(
                tokens.check_header(Some(&header)),
                Err(Denied { presented: true }),
                "{bad}"
            );
        }
        // Another scheme, or none: no Bearer credential was presented.
        for other in [
            "Basic alice-token-0123456789",
            "alice-token-0123456789",
            "Bearerx alice-token-0123456789",
        ] {
            let header = HeaderValue::from_str(other).unwrap();
            assert_eq!(
                tokens.check_header(Some(&header)),
                Err(Denied { presented: false }),
                "{other}"
            );
        }
        // One or more spaces after the scheme (RFC 6750 §2.1).
        let spaced = HeaderValue::from_static("Bearer   alice-token-0123456789");
        assert!(tokens.check_header(Some(&spaced)).is_ok());
    }

    #[test]
    fn without_tokens_everyone_is_anonymous() {
        assert_eq!(Tokens::none().check_header(None), Ok(None));
    }

    #[test]
    fn short_or_unprintable_tokens_are_refused_at_start() {
        assert!(matches!(
            Tokens::none().with("T", SecretString::from("short")),
            Err(TokenError::TooShort(name)) if name == "T"
        ));
        assert!(matches!(
            Tokens::none().with("T", SecretString::from("has a space in it!!")),
            Err(TokenError::Malformed(_))
        ));
    }

    /// Finding: `with` took any text as the identity, while a shared store's session records
    /// hold it as their last space-separated field, `-` meaning anonymous (`store.rs`). An
    /// identity `-` was read back as anonymous, and one with a space as no record at all:
    /// with a Redis store, its legacy sessions were `404` right after `initialize`, and the
    /// `TOUCH` script matched `ALICE`'s requests against the record of `BOB ALICE`, keeping
    /// that session alive. An identity given directly is a variable name, as one from the
    /// environment is.
    #[test]
    fn an_identity_given_directly_is_a_variable_name() {
        let token = || SecretString::from("a-token-0123456789abcdef");
        for identity in [
            "-",
            "",
            "BOB ALICE",
            "2 2025-06-18 1 esr ALICE",
            "A\nB",
            "1ABC",
        ] {
            assert!(
                matches!(
                    Tokens::none().with(identity, token()),
                    Err(TokenError::NotAName { position: 1 })
                ),
                "{identity:?}"
            );
        }
        let two = Tokens::none().with("ALICE", token()).unwrap();
        assert!(matches!(
            two.with("-", token()),
            Err(TokenError::NotAName { position: 2 })
        ));
        assert!(Tokens::none().with("ALICE_2", token()).is_ok());
    }

    /// A token given where its variable's name belongs is refused, and the
    /// error never holds it.
    #[test]
    fn a_token_given_for_a_variable_name_is_refused_without_being_shown() {
        for name in [
            "TOKEN",
            "_t",
            "a1_B2",
            &"N".repeat(MAX_TOKEN_VARIABLE_BYTES),
        ] {
            assert!(is_variable_name(name), "{name}");
        }
        let long = "N".repeat(MAX_TOKEN_VARIABLE_BYTES + 1);
        for token in [
            "",
            "1abc",
            "s3cr3t-token",
            "a.b",
            "a=b",
            "a/b",
            "tok en",
            "é",
            &long,
        ] {
            assert!(!is_variable_name(token), "{token}");
        }
        let error = Tokens::from_env(["AIRLOCK_TEST_UNSET_A", "s3cr3t-token/xyz"]).unwrap_err();
        assert!(matches!(error, TokenError::NotAName { position: 2 }));
        assert!(!error.to_string().contains("s3cr3t"), "{error}");
        let unset = "ghp_Zx81kQ7TnPq2LmW9vB4cR6yH0sJ3dF5gA1eK";
        let error = Tokens::from_env([unset]).unwrap_err();
        assert!(matches!(error, TokenError::Missing { position: 1 }));
        assert!(!error.to_string().contains("Zx81"), "{error}");
    }

    #[test]
    fn tokens_are_handed_to_a_redactor_by_their_identity() {
        let tokens = tokens();
        let secrets: Vec<(&str, &str)> = tokens
            .secrets()
            .map(|(name, token)| (name, token.expose_secret()))
            .collect();
        assert_eq!(
            secrets,
            [
                ("ALICE", "alice-token-0123456789"),
                ("BOB", "bob-token-0123456789abc")
            ]
        );
    }

    #[test]
    fn debug_output_names_identities_only() {
        let text = format!("{:?}", tokens());
        assert!(text.contains("ALICE") && !text.contains("alice-token"));
    }
}
