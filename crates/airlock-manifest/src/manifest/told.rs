//! What a manifest's tools tell the model, against the metadata rules `airlock audit` uses
//! (`airlock_metadata`, one shared copy): a tool whose name, title, description or argument
//! text hides characters from a reviewer, or addresses the model (read a secret, hide this
//! from the user, ignore your instructions, call another tool, a tool the manifest does not
//! have), is refused at load unless it accepts the risk by name: `hidden_text` or
//! `model_instructions`.
//!
//! What it trusts: nothing in the text; the manifest's author may have pasted it from
//! anywhere. The rules of level low (oversized text) are the audit's to report, not a
//! refusal here.

use serde_json::{Map, Value, json};

use airlock_metadata::{Catalog, Family, Level, Place};

use super::risk::Risk;
use super::rule::Rule;
use super::{Located, ManifestError};

/// The risk a rule's family is accepted by.
fn risk(family: Family) -> Risk {
    match family {
        Family::HiddenText => Risk::HiddenText,
        Family::ModelInstructions => Risk::ModelInstructions,
    }
}

/// What a checked tool says to the model, and the risks it accepts (`checked` builds these;
/// this module does not read its types, which import it).
pub(super) struct ToolText<'t> {
    /// The tool's name.
    pub(super) name: &'t str,
    /// Its title.
    pub(super) title: Option<&'t str>,
    /// Its description.
    pub(super) description: &'t str,
    /// Each argument's name, description and default.
    pub(super) args: Vec<(&'t str, Option<&'t str>, Option<&'t Value>)>,
    /// The risks it accepts.
    pub(super) accepted: &'t [Risk],
}

/// A tool as the rules read it: its texts only (argument names, descriptions and defaults
/// under `inputSchema`, where a client finds them), no types, so the schema rules, which
/// airlock's own bounds answer, do not apply.
fn listed(tool: &ToolText<'_>) -> Value {
    let mut properties = Map::new();
    for &(name, description, default) in &tool.args {
        let mut property = Map::new();
        if let Some(description) = description {
            property.insert("description".into(), Value::from(description));
        }
        if let Some(default) = default {
            property.insert("default".into(), default.clone());
        }
        properties.insert(name.to_owned(), Value::Object(property));
    }
    let mut listed = json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": {"properties": properties},
    });
    if let (Some(title), Some(object)) = (tool.title, listed.as_object_mut()) {
        object.insert("title".into(), Value::from(title));
    }
    listed
}

/// The field a finding's pointer names, as a manifest spells it: `description`,
/// `args.path.description`.
fn field(pointer: &str) -> String {
    let inner = pointer.trim_start_matches('/');
    match inner.strip_prefix("inputSchema/properties/") {
        Some(arg) => format!("args.{}", arg.replace('/', ".")),
        None => inner.replace('/', "."),
    }
}

/// Refuses each tool whose text breaks a rule of medium or high level that it does not
/// accept.
pub(super) fn refuse_unaccepted(
    tools: &[ToolText<'_>],
    at: &Located<'_>,
) -> Result<(), ManifestError> {
    let catalog = Catalog {
        tools: tools.iter().map(listed).collect(),
        ..Catalog::default()
    };
    let mut errors = Vec::new();
    for spot in airlock_metadata::review(&catalog) {
        if spot.rule.level() == Level::Low && spot.rule.family() == Family::ModelInstructions {
            continue;
        }
        let Place::Tool(name) = &spot.place else {
            continue;
        };
        let Some(tool) = tools.iter().find(|tool| tool.name == name) else {
            continue;
        };
        let accept = risk(spot.rule.family());
        if tool.accepted.contains(&accept) {
            continue;
        }
        errors.push(at.error(
            None,
            Some(name),
            &field(&spot.pointer),
            Rule::Told {
                rule: spot.rule,
                offset: spot.offset,
                excerpt: spot.excerpt.clone(),
                risk: accept,
            },
        ));
    }
    ManifestError::combined(errors).map_or(Ok(()), Err)
}
