//! A tool's argv template read from the raw manifest: literals, whole-element placeholders
//! and `--opt={x}`, with the shapes that would let a value be read as something else refused.

use std::collections::BTreeMap;

use super::risk::Risk;
use super::rule::TemplateRule;
use super::template::{ArgKind, ArgSpec, Element};

/// Parses the argv template: literals, whole-element placeholders and `--opt={x}`.
pub(super) fn template(
    elements: &[String],
    args: &[ArgSpec],
    risks: &[Risk],
) -> Result<Vec<Element>, TemplateRule> {
    let index: BTreeMap<&str, usize> = args
        .iter()
        .enumerate()
        .map(|(i, arg)| (arg.name.as_str(), i))
        .collect();
    let mut used = vec![false; args.len()];
    let mut after_double_dash = false;
    let mut out = Vec::with_capacity(elements.len());
    for element in elements {
        if element.contains('\0') {
            return Err(TemplateRule::Nul);
        }
        let (prefix, name, suffix) = match split_element(element)? {
            Split::Literal(text) => {
                if text == "--" {
                    after_double_dash = true;
                }
                out.push(Element::Literal(text));
                continue;
            }
            Split::Placeholder {
                prefix,
                name,
                suffix,
            } => (prefix, name, suffix),
        };
        let (prefix, name, suffix) = (prefix.as_str(), name.as_str(), suffix.as_str());
        if name.is_empty() {
            return Err(TemplateRule::EmptyPlaceholder {
                element: element.clone(),
            });
        }
        let Some(&arg) = index.get(name) else {
            return Err(TemplateRule::Undeclared {
                name: name.to_owned(),
            });
        };
        // The index was built from `args`: never out of range.
        let spec = args.get(arg).ok_or_else(|| TemplateRule::Undeclared {
            name: name.to_owned(),
        })?;
        if used.get(arg).copied().unwrap_or(true) {
            return Err(TemplateRule::UsedTwice {
                name: name.to_owned(),
            });
        }
        if let Some(slot) = used.get_mut(arg) {
            *slot = true;
        }
        let option_form = !prefix.is_empty() && suffix.is_empty() && is_option_prefix(prefix);
        let embedded = (!prefix.is_empty() && !option_form) || !suffix.is_empty();
        if embedded && !risks.contains(&Risk::EmbeddedPlaceholder) {
            return Err(TemplateRule::Embedded {
                element: element.clone(),
                name: name.to_owned(),
            });
        }
        check_placement(
            spec,
            prefix.is_empty(),
            suffix.is_empty(),
            after_double_dash,
            out.last(),
        )?;
        out.push(Element::Value {
            arg,
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            after_double_dash,
        });
    }
    for (spec, used) in args.iter().zip(&used) {
        let stdin = matches!(&spec.kind, ArgKind::String(rule) if rule.stdin);
        match (stdin, used) {
            (true, true) => {
                return Err(TemplateRule::StdinInCommand {
                    name: spec.name.clone(),
                });
            }
            (false, false) => {
                return Err(TemplateRule::Unused {
                    name: spec.name.clone(),
                });
            }
            _ => {}
        }
    }
    if args
        .iter()
        .filter(|a| matches!(&a.kind, ArgKind::String(r) if r.stdin))
        .count()
        > 1
    {
        return Err(TemplateRule::TwoStdin);
    }
    Ok(out)
}

/// A template element read: `{{` and `}}` are literal braces, `{name}` a placeholder.
enum Split {
    /// No placeholder.
    Literal(String),
    /// One placeholder, with the text around it.
    Placeholder {
        prefix: String,
        name: String,
        suffix: String,
    },
}

/// Reads a template element; at most one placeholder.
fn split_element(element: &str) -> Result<Split, TemplateRule> {
    let mut before = String::new();
    let mut name: Option<String> = None;
    let mut after = String::new();
    let mut chars = element.chars().peekable();
    while let Some(c) = chars.next() {
        let placed = name.is_some();
        let out = if placed { &mut after } else { &mut before };
        match c {
            '{' | '}' if chars.next_if_eq(&c).is_some() => out.push(c),
            '{' if placed => {
                return Err(TemplateRule::TwoPlaceholders {
                    element: element.to_owned(),
                });
            }
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some('{') | None => {
                            return Err(TemplateRule::UnmatchedOpen {
                                element: element.to_owned(),
                            });
                        }
                        Some(c) => inner.push(c),
                    }
                }
                name = Some(inner);
            }
            '}' => {
                return Err(TemplateRule::UnmatchedClose {
                    element: element.to_owned(),
                });
            }
            c => out.push(c),
        }
    }
    Ok(match name {
        None => Split::Literal(before),
        Some(name) => Split::Placeholder {
            prefix: before,
            name,
            suffix: after,
        },
    })
}

/// `-x=` or `--long-name=`.
fn is_option_prefix(prefix: &str) -> bool {
    let Some(body) = prefix.strip_suffix('=') else {
        return false;
    };
    let name = body.strip_prefix("--").or_else(|| body.strip_prefix('-'));
    name.is_some_and(|name| {
        name.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    })
}

/// Shapes that would let a value be read as something else.
fn check_placement(
    spec: &ArgSpec,
    starts: bool,
    ends: bool,
    after_double_dash: bool,
    previous: Option<&Element>,
) -> Result<(), TemplateRule> {
    let whole = starts && ends;
    match &spec.kind {
        ArgKind::Boolean { flag: None } if whole => {
            return Err(TemplateRule::BooleanNeedsFlag {
                name: spec.name.clone(),
            });
        }
        ArgKind::Boolean { flag: Some(_) } if !whole => {
            return Err(TemplateRule::FlagNotWhole {
                name: spec.name.clone(),
            });
        }
        // After an option that takes a value, the second item would become an operand
        // (`grep -e {patterns}` → `grep -e root /etc/passwd`); which options take values
        // cannot be known from outside, so lists go after `--` or into `--opt={x}`.
        ArgKind::Array { .. } if whole && !after_double_dash => {
            return Err(TemplateRule::ArrayBeforeDoubleDash {
                name: spec.name.clone(),
            });
        }
        // `{n}` and `{n}.5` alike: a value that starts an element is read as an option.
        ArgKind::Integer { minimum, .. } if starts && !after_double_dash && *minimum < 0 => {
            return Err(TemplateRule::NegativeInteger {
                name: spec.name.clone(),
            });
        }
        _ => {}
    }
    let optional = !spec.required && spec.default.is_none();
    let dangling =
        matches!(previous, Some(Element::Literal(text)) if text.starts_with('-') && text != "--");
    if whole && optional && dangling {
        return Err(TemplateRule::Dangling {
            name: spec.name.clone(),
        });
    }
    Ok(())
}
