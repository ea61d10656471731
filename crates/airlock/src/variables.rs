//! Environment variable names: one rule wherever airlock takes one (a manifest's `env`,
//! `env_allow` and `secret_env`, the variables `--auth-token-env` names, the placeholders
//! `airlock client-config` writes).
//!
//! `[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_VARIABLE_NAME_BYTES`] bytes: the names every shell
//! can set and expand. Anything else (`-`, `=`, `/`, a space, a leading digit) cannot be set
//! with `NAME=value` and is most likely a value given where its variable's name belongs (a
//! token pasted in place of its variable's name), so it is refused without being shown.

use crate::limits::MAX_VARIABLE_NAME_BYTES;

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
        }
    }
}
