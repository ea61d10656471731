//! A tool's declared arguments read from the raw manifest: each type's rules checked (lengths,
//! patterns, ranges, path roots), defaults checked against them.

use std::path::Path;

use serde_json::{Value, json};

use super::raw::{
    RawArg, RawArrayArg, RawBooleanArg, RawIntegerArg, RawPathArg, RawPathKind, RawStringArg,
};
use super::rule::ArgumentRule;
use super::template::{ArgKind, ArgSpec, PathKind, PathRule, StringRule};
use crate::limits::{DEFAULT_ARRAY_ARG_ITEMS, DEFAULT_STRING_ARG_CHARS};
use crate::locate::directory;
use airlock::limits::MAX_ARRAY_ITEMS;

pub(super) fn arg(
    name: &str,
    raw: &RawArg,
    workdir: &Path,
    max_string: usize,
) -> Result<ArgSpec, ArgumentRule> {
    let (kind, default, description, required) = match raw {
        RawArg::String(s) => string_arg(s, max_string)?,
        RawArg::Integer(i) => integer_arg(i)?,
        RawArg::Boolean(b) => boolean_arg(b)?,
        RawArg::Path(p) => path_arg(p, workdir)?,
        RawArg::Array(a) => array_arg(a, max_string)?,
    };
    if required == Some(true) && default.is_some() {
        return Err(ArgumentRule::RequiredWithDefault);
    }
    let required = required.unwrap_or(default.is_none());
    Ok(ArgSpec {
        name: name.to_owned(),
        description,
        required,
        default,
        kind,
    })
}

type Parsed = (ArgKind, Option<Value>, Option<String>, Option<bool>);

fn string_rule(
    max_string: usize,
    max_length: Option<u64>,
    min_length: Option<u64>,
    pattern: Option<&str>,
    values: Option<&Vec<String>>,
    allow_leading_dash: bool,
    stdin: bool,
) -> Result<StringRule, ArgumentRule> {
    let max_length = match max_length {
        None => DEFAULT_STRING_ARG_CHARS.min(max_string),
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| (1..=max_string).contains(n))
            .ok_or(ArgumentRule::MaxLength { max_string })?,
    };
    let min_length = usize::try_from(min_length.unwrap_or(0)).unwrap_or(usize::MAX);
    if min_length > max_length {
        return Err(ArgumentRule::MinOverMaxLength);
    }
    let pattern = match pattern {
        None => None,
        Some(source) => {
            let regex = regex::RegexBuilder::new(source)
                .size_limit(airlock::limits::MAX_PATTERN_AUTOMATON_BYTES)
                .build()
                .map_err(|_| ArgumentRule::Pattern)?;
            Some((regex, source.to_owned()))
        }
    };
    if let Some(values) = values {
        if values.is_empty() {
            return Err(ArgumentRule::EmptyEnum);
        }
        if values
            .iter()
            .any(|v| v.chars().count() > max_length || v.contains('\0'))
        {
            return Err(ArgumentRule::EnumValue);
        }
    }
    Ok(StringRule {
        min_length,
        max_length,
        pattern,
        values: values.cloned(),
        allow_leading_dash,
        stdin,
    })
}

fn string_arg(raw: &RawStringArg, max_string: usize) -> Result<Parsed, ArgumentRule> {
    let rule = string_rule(
        max_string,
        raw.max_length,
        raw.min_length,
        raw.pattern.as_deref(),
        raw.values.as_ref(),
        raw.allow_leading_dash,
        raw.stdin,
    )?;
    if let Some(default) = &raw.default
        && !rule.admits(default)
    {
        return Err(ArgumentRule::Default);
    }
    Ok((
        ArgKind::String(rule),
        raw.default.clone().map(Value::from),
        raw.description.clone(),
        raw.required,
    ))
}

fn integer_arg(raw: &RawIntegerArg) -> Result<Parsed, ArgumentRule> {
    let minimum = raw.minimum.unwrap_or(i64::MIN);
    let maximum = raw.maximum.unwrap_or(i64::MAX);
    if minimum > maximum {
        return Err(ArgumentRule::MinOverMax);
    }
    if let Some(default) = raw.default
        && !(minimum..=maximum).contains(&default)
    {
        return Err(ArgumentRule::DefaultOutOfRange);
    }
    Ok((
        ArgKind::Integer { minimum, maximum },
        raw.default.map(Value::from),
        raw.description.clone(),
        raw.required,
    ))
}

fn boolean_arg(raw: &RawBooleanArg) -> Result<Parsed, ArgumentRule> {
    if let Some(flag) = &raw.flag
        && (!flag.starts_with('-') || flag.contains(['{', '}', '\0', '=']) || flag.len() > 128)
    {
        return Err(ArgumentRule::Flag);
    }
    Ok((
        ArgKind::Boolean {
            flag: raw.flag.clone(),
        },
        Some(Value::Bool(raw.default.unwrap_or(false))),
        raw.description.clone(),
        Some(false),
    ))
}

fn path_arg(raw: &RawPathArg, workdir: &Path) -> Result<Parsed, ArgumentRule> {
    let within = raw.within.as_deref().unwrap_or(".");
    let root = directory(workdir, within).ok_or_else(|| ArgumentRule::Within {
        path: workdir.join(within),
    })?;
    let kind = match raw.kind.unwrap_or(RawPathKind::Any) {
        RawPathKind::File => PathKind::File,
        RawPathKind::Dir => PathKind::Dir,
        RawPathKind::Any => PathKind::Any,
    };
    if let Some(default) = &raw.default
        && (default.is_empty() || default.starts_with('/') || default.contains('\0'))
    {
        return Err(ArgumentRule::PathDefault);
    }
    Ok((
        ArgKind::Path(PathRule {
            root,
            must_exist: raw.must_exist.unwrap_or(true),
            kind,
        }),
        raw.default.clone().map(Value::from),
        raw.description.clone(),
        raw.required,
    ))
}

fn array_arg(raw: &RawArrayArg, max_string: usize) -> Result<Parsed, ArgumentRule> {
    let items = string_rule(
        max_string,
        raw.item_max_length,
        None,
        raw.item_pattern.as_deref(),
        raw.item_enum.as_ref(),
        raw.allow_leading_dash,
        false,
    )?;
    let max_items = match raw.max_items {
        None => DEFAULT_ARRAY_ARG_ITEMS,
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_ARRAY_ITEMS).contains(n))
            .ok_or(ArgumentRule::MaxItems {
                ceiling: MAX_ARRAY_ITEMS,
            })?,
    };
    let min_items = usize::try_from(raw.min_items.unwrap_or(0)).unwrap_or(usize::MAX);
    if min_items > max_items {
        return Err(ArgumentRule::MinOverMaxItems);
    }
    if let Some(default) = &raw.default
        && (default.len() > max_items
            || default.len() < min_items
            || !default.iter().all(|item| items.admits(item)))
    {
        return Err(ArgumentRule::Default);
    }
    Ok((
        ArgKind::Array {
            items,
            min_items,
            max_items,
        },
        raw.default.clone().map(|items| json!(items)),
        raw.description.clone(),
        raw.required,
    ))
}
