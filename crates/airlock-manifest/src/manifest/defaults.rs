//! `[defaults]`, and `~` and `${VAR}` in a manifest's paths: both rewrite the raw tool before
//! it is checked, so every check (and every error, with the path it shows) sees the final
//! value.
//!
//! How `[defaults]` reaches a `[[tool]]` (the tool's own value always wins):
//!
//! - single values (`workdir`, `timeout_ms`, `max_output_bytes`, `stderr`, `network`): the
//!   tool's if set, else the default; `stderr_tail_bytes` only where the tool's mode ends up
//!   `"tail"`;
//! - `env`: merged by name; `env_allow`: the default names are added. A name the tool itself
//!   lists in `env`, `env_allow` or `secret_env` is never taken from the defaults, so the
//!   tool's choice for that variable is the only one;
//! - `read`, `write`, `exec`: the union, the defaults first, each path once (a grant cannot be
//!   taken back by a tool: keep narrow grants in the tools that need them);
//! - `resources`: merged limit by limit;
//! - the sandbox keys (`read`, `write`, `exec`, `network`, `resources`) reach only sandboxed
//!   tools: a tool with `sandbox = "off"` takes none of them.
//!
//! Not in `[defaults]`, on purpose: `secret_env` (a secret goes to the tools named for it),
//! `accept_risk` and `sandbox` (a risk is accepted, and the sandbox turned off, tool by tool).
//!
//! Expanded paths: `workdir`, `read`, `write`, `exec`, each path argument's `within`, and the
//! program (the first element of `command`), in tools and in `[defaults]`. `~` or `~/…` at the
//! start is `$HOME`; `${NAME}` anywhere is that variable of airlock's environment; `$$` is a
//! `$`. An unset, empty or non-UTF-8 variable, a `~user` or a `$` not starting `${NAME}` is an
//! error naming it. The values come from the operator's environment, which is trusted like the
//! manifest; argument values from agents are never expanded.

use std::collections::BTreeSet;

use toml::Spanned;

use super::raw::{RawArg, RawDefaults, RawManifest, RawResources, RawStderr, RawTool};
use super::rule::{ExpandRule, Rule};
use super::{Located, ManifestError};

/// `[defaults]` with its own paths expanded, checked once against `[limits]`.
///
/// # Errors
///
/// Every path that cannot be expanded, and a default that `[limits]` also sets.
pub(super) fn expanded(raw: &mut RawManifest, at: &Located<'_>) -> Result<(), ManifestError> {
    let mut errors = Vec::new();
    let defaults = &mut raw.defaults;
    let twice = [
        (
            defaults.timeout_ms.as_ref().map(|v| v.span().start),
            raw.limits.tool_timeout_ms.is_some(),
            "defaults.timeout_ms",
            "[limits] tool_timeout_ms",
        ),
        (
            defaults.max_output_bytes.as_ref().map(|v| v.span().start),
            raw.limits.max_output_bytes.is_some(),
            "defaults.max_output_bytes",
            "[limits] max_output_bytes",
        ),
    ];
    for (span, also, field, other) in twice {
        if let Some(span) = span
            && also
        {
            errors.push(at.error(Some(span), None, field, Rule::DefaultSetTwice { other }));
        }
    }
    if let Some(dir) = &mut defaults.workdir {
        expand_spanned(dir, at, None, "defaults.workdir", &mut errors);
    }
    for (list, field) in [
        (&mut defaults.read, "defaults.read"),
        (&mut defaults.write, "defaults.write"),
        (&mut defaults.exec, "defaults.exec"),
    ] {
        for entry in list {
            expand_spanned(entry, at, None, field, &mut errors);
        }
    }
    match ManifestError::combined(errors) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// `tool` with its paths expanded and `[defaults]` applied.
///
/// # Errors
///
/// Every path of the tool that cannot be expanded.
pub(super) fn apply(
    defaults: &RawDefaults,
    tool: &mut RawTool,
    at: &Located<'_>,
) -> Result<(), ManifestError> {
    let name = tool.name.get_ref().clone();
    let name = Some(name.as_str());
    let mut errors = Vec::new();
    if let Some(dir) = &mut tool.workdir {
        expand_spanned(dir, at, name, "workdir", &mut errors);
    }
    for (list, field) in [
        (&mut tool.read, "read"),
        (&mut tool.write, "write"),
        (&mut tool.exec, "exec"),
    ] {
        for entry in list {
            expand_spanned(entry, at, name, field, &mut errors);
        }
    }
    let command_at = tool.command.span().start;
    if let Some(program) = tool.command.get_mut().first_mut() {
        match expand(program) {
            Ok(full) => *program = full,
            Err(rule) => errors.push(at.error(Some(command_at), name, "command", rule)),
        }
    }
    for (arg_name, spec) in &mut tool.args {
        let arg_at = spec.span().start;
        if let RawArg::Path(path) = spec.get_mut()
            && let Some(within) = &mut path.within
        {
            match expand(within) {
                Ok(full) => *within = full,
                Err(rule) => errors.push(at.error(
                    Some(arg_at),
                    name,
                    &format!("args.{arg_name}.within"),
                    rule,
                )),
            }
        }
    }
    if let Some(error) = ManifestError::combined(errors) {
        return Err(error);
    }
    merge(defaults, tool);
    Ok(())
}

/// Fills what `tool` leaves unset from `defaults` (the rules are in the module header).
fn merge(defaults: &RawDefaults, tool: &mut RawTool) {
    if tool.workdir.is_none() {
        tool.workdir.clone_from(&defaults.workdir);
    }
    if tool.timeout_ms.is_none() {
        tool.timeout_ms.clone_from(&defaults.timeout_ms);
    }
    if tool.max_output_bytes.is_none() {
        tool.max_output_bytes.clone_from(&defaults.max_output_bytes);
    }
    if tool.stderr.is_none() {
        tool.stderr.clone_from(&defaults.stderr);
    }
    let tail = tool
        .stderr
        .as_ref()
        .is_some_and(|mode| *mode.get_ref() == RawStderr::Tail);
    if tool.stderr_tail_bytes.is_none() && tail {
        tool.stderr_tail_bytes
            .clone_from(&defaults.stderr_tail_bytes);
    }

    let named: BTreeSet<String> = tool
        .env
        .keys()
        .cloned()
        .chain(tool.env_allow.iter().map(|name| name.get_ref().clone()))
        .chain(tool.secret_env.iter().map(|name| name.get_ref().clone()))
        .collect();
    for (variable, value) in &defaults.env {
        if !named.contains(variable) {
            tool.env.insert(variable.clone(), value.clone());
        }
    }
    for variable in &defaults.env_allow {
        if !named.contains(variable.get_ref()) {
            tool.env_allow.push(variable.clone());
        }
    }

    let unsandboxed = tool
        .sandbox
        .as_ref()
        .is_some_and(|switch| switch.get_ref() == "off");
    if unsandboxed {
        return;
    }
    for (own, inherited) in [
        (&mut tool.read, &defaults.read),
        (&mut tool.write, &defaults.write),
        (&mut tool.exec, &defaults.exec),
    ] {
        let mut union: Vec<Spanned<String>> =
            Vec::with_capacity(own.len().saturating_add(inherited.len()));
        let mut seen = BTreeSet::new();
        for entry in inherited.iter().chain(own.iter()) {
            if seen.insert(entry.get_ref().clone()) {
                union.push(entry.clone());
            }
        }
        *own = union;
    }
    if tool.network.is_none() {
        tool.network.clone_from(&defaults.network);
    }
    tool.resources = match (tool.resources.take(), &defaults.resources) {
        (Some(own), Some(inherited)) => {
            let span = own.span();
            let own = own.into_inner();
            let inherited = inherited.get_ref();
            Some(Spanned::new(
                span,
                RawResources {
                    processes: own.processes.or(inherited.processes),
                    memory_mib: own.memory_mib.or(inherited.memory_mib),
                    cpu_seconds: own.cpu_seconds.or(inherited.cpu_seconds),
                    file_size_mib: own.file_size_mib.or(inherited.file_size_mib),
                    open_files: own.open_files.or(inherited.open_files),
                    call_memory_mib: own.call_memory_mib.or(inherited.call_memory_mib),
                    disk_mib: own.disk_mib.or(inherited.disk_mib),
                    disk_files: own.disk_files.or(inherited.disk_files),
                    network_connections: own.network_connections.or(inherited.network_connections),
                    network_up_mib: own.network_up_mib.or(inherited.network_up_mib),
                    network_down_mib: own.network_down_mib.or(inherited.network_down_mib),
                },
            ))
        }
        (own, inherited) => own.or_else(|| inherited.clone()),
    };
}

fn expand_spanned(
    value: &mut Spanned<String>,
    at: &Located<'_>,
    tool: Option<&str>,
    field: &str,
    errors: &mut Vec<ManifestError>,
) {
    let span = value.span().start;
    match expand(value.get_ref()) {
        Ok(full) => *value.get_mut() = full,
        Err(rule) => errors.push(at.error(Some(span), tool, field, rule)),
    }
}

/// `text` with `~` and `${NAME}` expanded from airlock's environment.
///
/// # Errors
///
/// Why it cannot be (fixed text around the variable's name; never a variable's value).
pub(crate) fn expand(text: &str) -> Result<String, ExpandRule> {
    expand_with(text, |name| std::env::var_os(name))
}

/// [`expand`] over the environment `lookup`.
fn expand_with(
    text: &str,
    lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<String, ExpandRule> {
    let variable = |name: &str, shown: &str| -> Result<String, ExpandRule> {
        let value = lookup(name).ok_or_else(|| ExpandRule::Unset {
            shown: shown.to_owned(),
            name: name.to_owned(),
        })?;
        let value = value.into_string().map_err(|_| ExpandRule::NotUtf8 {
            shown: shown.to_owned(),
            name: name.to_owned(),
        })?;
        if value.is_empty() {
            return Err(ExpandRule::Empty {
                shown: shown.to_owned(),
                name: name.to_owned(),
            });
        }
        Ok(value)
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    if let Some(after) = rest.strip_prefix('~') {
        if !(after.is_empty() || after.starts_with('/')) {
            return Err(ExpandRule::OtherUser);
        }
        let home = variable("HOME", "`~`")?;
        if !std::path::Path::new(&home).is_absolute() {
            return Err(ExpandRule::RelativeHome);
        }
        out.push_str(&home);
        rest = after;
    }
    while let Some((before, after)) = rest.split_once('$') {
        out.push_str(before);
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let braced = after
            .strip_prefix('{')
            .and_then(|inner| inner.split_once('}'));
        let Some((name, after)) = braced else {
            return Err(ExpandRule::Dollar);
        };
        let valid = airlock::variables::is_variable_name(name);
        if !valid {
            return Err(ExpandRule::VariableName);
        }
        out.push_str(&variable(name, &format!("`${{{name}}}`"))?);
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::expand_with;

    fn env(name: &str) -> Option<OsString> {
        match name {
            "HOME" => Some("/home/op".into()),
            "PROJECT" => Some("/srv/project".into()),
            "EMPTY" => Some(OsString::new()),
            _ => None,
        }
    }

    #[test]
    fn a_tilde_and_braced_variables_expand_and_other_text_is_kept() {
        assert_eq!(expand_with("~", env).as_deref(), Ok("/home/op"));
        assert_eq!(expand_with("~/src", env).as_deref(), Ok("/home/op/src"));
        assert_eq!(
            expand_with("${PROJECT}/a/${PROJECT}", env).as_deref(),
            Ok("/srv/project/a//srv/project")
        );
        assert_eq!(expand_with("a/~/b$$c", env).as_deref(), Ok("a/~/b$c"));
        assert_eq!(expand_with("plain/path", env).as_deref(), Ok("plain/path"));
    }

    /// The sentence `airlock check` prints.
    fn shown(text: &str, lookup: impl Fn(&str) -> Option<OsString>) -> Result<String, String> {
        expand_with(text, lookup).map_err(|rule| rule.to_string())
    }

    #[test]
    fn an_unset_or_empty_variable_is_an_error_naming_it() {
        assert_eq!(
            shown("${NOPE}/x", env),
            Err(
                "`${NOPE}` names the variable NOPE, which is not set in airlock's environment"
                    .to_owned()
            )
        );
        assert_eq!(
            shown("${EMPTY}/etc", env),
            Err(
                "`${EMPTY}`: the variable EMPTY is empty (the path would change meaning)"
                    .to_owned()
            )
        );
        assert_eq!(
            shown("~/x", |_| None),
            Err(
                "`~` names the variable HOME, which is not set in airlock's environment".to_owned()
            )
        );
    }

    #[test]
    fn a_bare_dollar_a_bad_name_and_tilde_user_are_refused() {
        for text in ["$HOME/x", "${HOME", "a$"] {
            assert_eq!(
                shown(text, env),
                Err(
                    "a `$` starts a variable written `${NAME}` (write `$$` for a `$` itself)"
                        .to_owned()
                ),
                "{text}"
            );
        }
        for text in ["${}", "${1A}", "${A-B}"] {
            assert_eq!(
                shown(text, env),
                Err("`${…}` must hold a variable name ([A-Za-z_][A-Za-z0-9_]*)".to_owned()),
                "{text}"
            );
        }
        assert_eq!(
            shown("~root/x", env),
            Err(
                "only `~` and `~/…` are expanded (to $HOME), not `~user`; write the path out"
                    .to_owned()
            )
        );
    }
}
