//! Shape errors of a manifest part (a `[[tool]]`, or the file without its tools): every key a
//! table does not take, each with the key it most likely meant, then the first other shape
//! error.
//!
//! serde stops at the first error of a table (`deny_unknown_fields` refuses one key, then
//! nothing more is read), so a misspelt key hid the next. Here an unknown key is taken out of
//! the parsed document and the part read again; another error takes out the smallest piece
//! holding it that the part can do without, so the errors after it are found too. A missing
//! key that a suggestion already named, or that was taken out, is not reported. The text is the
//! operator's and bounded by `MAX_MANIFEST_BYTES`; at most `MAX_MANIFEST_SHAPE_ERRORS` rounds
//! run per part.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use crate::limits::MAX_MANIFEST_SHAPE_ERRORS;

/// One shape error: where, and the message (with "did you mean" when one fits).
pub(super) struct Shape {
    pub(super) span: Option<Range<usize>>,
    pub(super) message: String,
}

/// Reads `part` as a `T`, pushing every unknown key and every other shape error to `errors`;
/// the value when it reads once its unknown keys are out (and only they).
///
/// An unknown key is taken out. Another error takes out the smallest piece holding it whose
/// absence the part survives (`args.m`'s `type`, else `args.m`, else `args`); a required key
/// taken out ends the part, as does an error with no place.
pub(super) fn read<T: serde::de::DeserializeOwned>(
    mut part: Spanned<DeValue<'_>>,
    errors: &mut Vec<Shape>,
) -> Option<T> {
    // Keys suggested or taken out: a "missing field" naming one is no news.
    let mut named: Vec<String> = Vec::new();
    // Whether a piece other than an unknown key was taken out: what reads then is not what the
    // file says, and its checks would report the gap as errors of their own.
    let mut cut = false;
    for _ in 0..MAX_MANIFEST_SHAPE_ERRORS {
        let error = match try_read::<T>(&part) {
            Ok(value) => return (!cut).then_some(value),
            Err(error) => error,
        };
        let original = error.message().trim().to_owned();
        if let Some(missing) = quoted_after(&original, "missing field ")
            && named.iter().any(|name| name == missing)
        {
            return None;
        }
        let suggestion = did_you_mean(&original);
        let message = match &suggestion {
            Some(best) => format!("{original}; did you mean `{best}`?"),
            None => original.clone(),
        };
        let Some(span) = error.span() else {
            errors.push(Shape {
                span: None,
                message,
            });
            return None;
        };
        if let Some(name) = quoted_after(&original, "unknown field ")
            && let Some(key) = remove_key(&mut part, &span, name)
        {
            errors.push(Shape {
                span: Some(key),
                message,
            });
            named.extend(suggestion);
            continue;
        }
        errors.push(Shape {
            span: Some(span.clone()),
            message,
        });
        let path = key_path(&part, &span)?;
        let mut depth = path.len();
        loop {
            let (Some(key), Some(keys)) = (path.get(depth.saturating_sub(1)), path.get(..depth))
            else {
                return None;
            };
            let mut trial = part.clone();
            remove_path(&mut trial, keys);
            let breaks = match try_read::<T>(&trial) {
                Ok(_) => false,
                Err(error) => quoted_after(error.message().trim(), "missing field ") == Some(key),
            };
            if !breaks || depth <= 1 {
                part = trial;
                cut = true;
                named.push(key.clone());
                break;
            }
            depth = depth.saturating_sub(1);
        }
    }
    None
}

fn try_read<T: serde::de::DeserializeOwned>(
    part: &Spanned<DeValue<'_>>,
) -> Result<T, toml::de::Error> {
    T::deserialize(ValueDeserializer::from(part.clone()))
}

/// The keys from `value` down to the innermost one holding `span`.
fn key_path(value: &Spanned<DeValue<'_>>, span: &Range<usize>) -> Option<Vec<String>> {
    let DeValue::Table(table) = value.get_ref() else {
        return None;
    };
    let holds = |outer: Range<usize>| outer.start <= span.start && span.end <= outer.end;
    table.iter().find_map(|(key, inner)| {
        let name = key.get_ref().to_string();
        match key_path(inner, span) {
            Some(mut rest) => {
                rest.insert(0, name);
                Some(rest)
            }
            None if holds(inner.span()) || holds(key.span()) => Some(vec![name]),
            None => None,
        }
    })
}

/// Takes out the key `keys` leads to, table by table.
fn remove_path(value: &mut Spanned<DeValue<'_>>, keys: &[String]) {
    let DeValue::Table(table) = value.get_mut() else {
        return;
    };
    let Some((first, rest)) = keys.split_first() else {
        return;
    };
    let Some(key) = table
        .iter()
        .map(|(key, _)| key)
        .find(|key| key.get_ref() == first.as_str())
        .cloned()
    else {
        return;
    };
    if rest.is_empty() {
        table.remove(&key);
    } else if let Some(inner) = table.get_mut(&key) {
        remove_path(inner, rest);
    }
}

/// Takes the key `name` out of the table the error points at (the key itself, or the table
/// holding it), searching `value` and everything in it; the key's span when found.
fn remove_key(
    value: &mut Spanned<DeValue<'_>>,
    span: &Range<usize>,
    name: &str,
) -> Option<Range<usize>> {
    let whole = value.span();
    match value.get_mut() {
        DeValue::Table(table) => {
            let at_key = table
                .iter()
                .map(|(key, _)| key)
                .find(|key| key.get_ref() == name && key.span() == *span)
                .cloned();
            let in_this = at_key.or_else(|| {
                (whole == *span)
                    .then(|| {
                        table
                            .iter()
                            .map(|(key, _)| key)
                            .find(|key| key.get_ref() == name)
                    })
                    .flatten()
                    .cloned()
            });
            if let Some(key) = in_this {
                table.remove(&key);
                return Some(key.span());
            }
            remove_in_table(table, span, name)
        }
        DeValue::Array(items) => items
            .iter_mut()
            .find_map(|item| remove_key(item, span, name)),
        DeValue::String(_)
        | DeValue::Integer(_)
        | DeValue::Float(_)
        | DeValue::Boolean(_)
        | DeValue::Datetime(_) => None,
    }
}

fn remove_in_table(
    table: &mut DeTable<'_>,
    span: &Range<usize>,
    name: &str,
) -> Option<Range<usize>> {
    table
        .iter_mut()
        .find_map(|(_, value)| remove_key(value, span, name))
}

/// The text between the backquotes right after `lead` at the start of `message`.
fn quoted_after<'a>(message: &'a str, lead: &str) -> Option<&'a str> {
    message
        .strip_prefix(lead)?
        .strip_prefix('`')?
        .split('`')
        .next()
}

/// The expected name nearest to the unknown one in a serde "unknown field" or "unknown
/// variant" message, when it is near enough to be a slip (two edits at most, fewer than the
/// name's length).
fn did_you_mean(message: &str) -> Option<String> {
    let unknown = quoted_after(message, "unknown field ")
        .or_else(|| quoted_after(message, "unknown variant "))?;
    let (_, expected) = message.split_once("expected")?;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|candidate| (edit_distance(unknown, candidate), candidate))
        .filter(|(distance, _)| *distance <= 2 && *distance < unknown.chars().count())
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, best)| best.to_owned())
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours (`nmae` is one edit from `name`), each costing one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back (for swaps), the previous and the current.
    let mut before: Vec<usize> = vec![0; b.len().saturating_add(1)];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i.saturating_add(1); b.len().saturating_add(1)];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous
                .get(j)
                .map_or(usize::MAX, |d| d.saturating_add(usize::from(ca != cb)));
            let delete = previous
                .get(j.saturating_add(1))
                .map_or(usize::MAX, |d| d.saturating_add(1));
            let insert = current.get(j).map_or(usize::MAX, |d| d.saturating_add(1));
            let mut best = substitute.min(delete).min(insert);
            let swapped = i > 0
                && j > 0
                && a.get(i.saturating_sub(1)) == Some(cb)
                && b.get(j.saturating_sub(1)) == Some(ca);
            if swapped {
                let swap = before
                    .get(j.saturating_sub(1))
                    .map_or(usize::MAX, |d| d.saturating_add(1));
                best = best.min(swap);
            }
            if let Some(cell) = current.get_mut(j.saturating_add(1)) {
                *cell = best;
            }
        }
        before = std::mem::replace(&mut previous, current);
    }
    previous.last().copied().unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_a_swap_as_one_edit() {
        assert_eq!(edit_distance("comand", "command"), 1);
        assert_eq!(edit_distance("nmae", "name"), 1);
        assert_eq!(edit_distance("timeout", "timeout_ms"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn the_nearest_expected_name_is_suggested() {
        assert_eq!(
            did_you_mean("unknown field `comand`, expected one of `name`, `command`, `args`"),
            Some("command".to_owned())
        );
        assert_eq!(
            did_you_mean("unknown variant `strng`, expected one of `string`, `integer`"),
            Some("string".to_owned())
        );
        // Too far from everything: no guess.
        assert_eq!(
            did_you_mean("unknown field `colour`, expected one of `name`, `command`"),
            None
        );
        // One letter is not a slip of another letter.
        assert_eq!(did_you_mean("unknown field `x`, expected `y`"), None);
    }
}
