//! Environment variable names: one rule wherever airlock takes one (a manifest's `env`,
//! `env_allow` and `secret_env`, the variables `--auth-token-env` names, the placeholders
//! `airlock client-config` writes).
//!
//! `[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_VARIABLE_NAME_BYTES`] bytes: the names every shell
//! can set and expand. Anything else (`-`, `=`, `/`, a space, a leading digit) cannot be set
//! with `NAME=value` and is most likely a value given where its variable's name belongs (a
//! token pasted in place of its variable's name), so it is refused without being shown.
//! [`VariableName`] is a name that passed: the one type the manifest, the serving plan and the
//! program hold once a name is checked.

use crate::limits::MAX_VARIABLE_NAME_BYTES;

/// An environment variable name that passed the rule: every place airlock takes one holds
/// this type once it is checked (the manifest's variables, the command line's `--*-env`
/// flags, the names a serving plan keeps from tools).
///
/// ```
/// use airlock::variables::VariableName;
///
/// let name = VariableName::parse("GITHUB_TOKEN").ok_or("refused")?;
/// assert_eq!(name.as_str(), "GITHUB_TOKEN");
/// assert!(VariableName::parse("ghp_abc-123").is_none());
/// # Ok::<(), &str>(())
/// ```
#[derive(Clone, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct VariableName(Box<str>);

impl VariableName {
    /// `name`, if it is an environment variable name airlock accepts (see
    /// [`is_variable_name`]). Whoever refuses it must not show it: it may be a secret given in
    /// its variable's place.
    pub fn parse(name: &str) -> Option<Self> {
        is_variable_name(name).then(|| Self(Box::from(name)))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for VariableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for VariableName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for VariableName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

/// Whether `name` is an environment variable name airlock accepts.
///
/// ```
/// use airlock::variables::is_variable_name;
///
/// assert!(is_variable_name("GITHUB_TOKEN"));
/// assert!(!is_variable_name("ghp_abc-123"));
/// assert!(!is_variable_name("9LIVES"));
/// ```
pub fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= MAX_VARIABLE_NAME_BYTES
        && bytes
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_shell_can_set_and_nothing_else() {
        for name in [
            "A",
            "_",
            "_A1",
            "GITHUB_TOKEN",
            &"N".repeat(MAX_VARIABLE_NAME_BYTES),
        ] {
            assert!(is_variable_name(name), "{name}");
        }
        for name in [
            "",
            "1A",
            "A-B",
            "A=B",
            "A B",
            "A.B",
            "É",
            &"N".repeat(MAX_VARIABLE_NAME_BYTES + 1),
        ] {
            assert!(!is_variable_name(name), "{name}");
            assert_eq!(VariableName::parse(name), None, "{name}");
        }
    }

    #[test]
    fn a_parsed_name_is_the_text_it_was_parsed_from() {
        let name = VariableName::parse("_A1").unwrap();
        assert_eq!(name.as_str(), "_A1");
        assert_eq!(name.to_string(), "_A1");
        assert!(name == *"_A1");
    }
}
