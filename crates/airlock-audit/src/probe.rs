//! Which of the server's tools the audit calls, and with what arguments.
//!
//! Some cases need a real call: a flood of calls, a call in flight at end of input, huge
//! arguments. Calling an arbitrary tool of an unknown server could change something, so by
//! default the audit only calls a tool the server itself marks read-only
//! (`annotations.readOnlyHint: true`, not `destructiveHint: true`), with the smallest
//! arguments its input schema accepts. The operator can name another tool and its arguments,
//! or forbid real calls; without a callable tool those cases call a tool name that cannot
//! exist ([`UNKNOWN_TOOL`]), which every server must refuse.
//!
//! Tool names and schemas come from the server and are untrusted: they are only embedded in
//! requests through serde_json (escaped) and shown through `judge::shown`.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::judge::shown;

/// The tool the audit calls, and how.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Probe {
    /// The tool; `None` calls [`UNKNOWN_TOOL`].
    pub(crate) tool: Option<String>,
    /// Arguments of a valid call (an object).
    pub(crate) arguments: Value,
    /// The argument a huge string goes into (the tool's first string property, if any).
    pub(crate) string_key: String,
}

impl Probe {
    /// No real calls: every call goes to [`UNKNOWN_TOOL`].
    pub(crate) fn none() -> Self {
        Self {
            tool: None,
            arguments: json!({}),
            string_key: DEFAULT_STRING_KEY.to_owned(),
        }
    }

    /// The name calls use.
    pub(crate) fn name(&self) -> &str {
        self.tool.as_deref().unwrap_or(UNKNOWN_TOOL)
    }

    /// The start of a `tools/call` line with id `id` up to and including `"arguments":`;
    /// the caller appends the arguments and [`CALL_TAIL`].
    pub(crate) fn call_head(&self, id: &str) -> Vec<u8> {
        let name = Value::String(self.name().to_owned()).to_string();
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{name},"arguments":"#
        )
        .into_bytes()
    }

    /// A whole `tools/call` line with id `id` and the raw JSON `arguments`.
    pub(crate) fn call_line(&self, id: &str, arguments: &str) -> Vec<u8> {
        let mut line = self.call_head(id);
        line.extend_from_slice(arguments.as_bytes());
        line.extend_from_slice(CALL_TAIL);
        line
    }

    /// A valid call with id `id`.
    pub(crate) fn valid_call(&self, id: &str) -> Vec<u8> {
        self.call_line(id, &self.arguments.to_string())
    }

    /// The probe for a report: `list_directory {}`, or what happens without one.
    pub(crate) fn describe(&self) -> String {
        match &self.tool {
            Some(tool) => format!(
                "{} {}",
                shown(tool, MAX_SHOWN_CHARS),
                shown(&self.arguments.to_string(), MAX_SHOWN_CHARS)
            ),
            None => format!("none (calls go to the unknown tool {UNKNOWN_TOOL})"),
        }
    }
}

/// Picks the probe from a `tools/list` result's `tools` array.
///
/// `wanted` and `arguments` are the operator's choice (`--call-tool`, `--call-args`);
/// `no_calls` forbids real calls.
pub(crate) fn choose(
    tools: Option<&Value>,
    wanted: Option<&str>,
    arguments: Option<&Value>,
    no_calls: bool,
) -> Probe {
    if no_calls {
        return Probe::none();
    }
    let tools = tools
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(wanted) = wanted {
        let schema = tools
            .iter()
            .find(|tool| tool.get("name").and_then(Value::as_str) == Some(wanted))
            .and_then(|tool| tool.get("inputSchema"));
        let arguments = arguments
            .cloned()
            .or_else(|| schema.and_then(synthesize))
            .unwrap_or_else(|| json!({}));
        return Probe {
            tool: Some(wanted.to_owned()),
            arguments,
            string_key: schema.map_or_else(|| DEFAULT_STRING_KEY.to_owned(), string_key),
        };
    }
    tools
        .iter()
        .filter(|tool| read_only(tool))
        .find_map(|tool| {
            let name = tool.get("name")?.as_str()?;
            let schema = tool.get("inputSchema")?;
            Some(Probe {
                tool: Some(name.to_owned()),
                arguments: synthesize(schema)?,
                string_key: string_key(schema),
            })
        })
        .unwrap_or_else(Probe::none)
}

/// Whether the server says the tool only reads.
fn read_only(tool: &Value) -> bool {
    let hint = |name: &str| {
        tool.get("annotations")
            .and_then(|annotations| annotations.get(name))
            .and_then(Value::as_bool)
    };
    hint("readOnlyHint") == Some(true) && hint("destructiveHint") != Some(true)
}

/// The smallest arguments `schema` accepts: each required property gets its first enum value,
/// its minimum, `false`, `"a"` (repeated to `minLength`), `[]` or a nested object. `None` if a
/// required property has a shape this does not know.
pub(crate) fn synthesize(schema: &Value) -> Option<Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut arguments = Map::new();
    for name in required {
        let name = name.as_str()?;
        let property = properties?.get(name)?;
        arguments.insert(name.to_owned(), value_for(property)?);
    }
    Some(Value::Object(arguments))
}

pub(crate) fn value_for(schema: &Value) -> Option<Value> {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return Some(first.clone());
    }
    if let Some(constant) = schema.get("const") {
        return Some(constant.clone());
    }
    let kind = match schema.get("type")? {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")?,
        _ => return None,
    };
    match kind {
        "string" => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1);
            let min = usize::try_from(min.max(1)).ok().filter(|n| *n <= 64)?;
            Some(Value::String("a".repeat(min)))
        }
        "integer" | "number" => {
            let low = schema
                .get("minimum")
                .and_then(Value::as_i64)
                .or_else(|| {
                    schema
                        .get("exclusiveMinimum")
                        .and_then(Value::as_i64)
                        .and_then(|n| n.checked_add(1))
                })
                .unwrap_or(0);
            let high = schema.get("maximum").and_then(Value::as_i64);
            Some(json!(high.map_or(low, |high| low.min(high))))
        }
        "boolean" => Some(Value::Bool(false)),
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            (min == 0).then(|| json!([]))
        }
        "object" => synthesize(schema),
        _ => None,
    }
}

/// The first string property of `schema` (required ones first), else [`DEFAULT_STRING_KEY`].
fn string_key(schema: &Value) -> String {
    let properties = schema.get("properties").and_then(Value::as_object);
    let is_string = |name: &str| match properties
        .and_then(|properties| properties.get(name))
        .and_then(|property| property.get("type"))
    {
        Some(Value::String(kind)) => kind == "string",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "string"),
        _ => false,
    };
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let all = properties
        .into_iter()
        .flat_map(|p| p.keys().map(String::as_str));
    required
        .chain(all)
        .find(|name| is_string(name))
        .map_or_else(|| DEFAULT_STRING_KEY.to_owned(), str::to_owned)
}

/// One string argument of one tool, for the exposure cases.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Aim {
    /// The tool.
    pub(crate) tool: String,
    /// The string argument hostile values go into.
    pub(crate) key: String,
    /// The other arguments: the smallest the schema accepts.
    pub(crate) base: Value,
}

/// Every string argument of every listed tool the audit may call: those the server marks
/// read-only, and the operator's `--call-tool` (at most [`MAX_AIMED_TOOLS`] tools and
/// [`MAX_AIMED_KEYS`] arguments each; tools whose required arguments cannot be synthesized
/// are left out). Hostile values in a tool that writes could change what it writes to, which
/// may lie outside the audit's scratch directory, so other tools are not tried. None with
/// `no_tool_calls`.
pub(crate) fn aims(
    tools: Option<&Value>,
    call_tool: Option<&str>,
    no_tool_calls: bool,
) -> Vec<Aim> {
    if no_tool_calls {
        return Vec::new();
    }
    let listed = tools
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut aims = Vec::new();
    let callable = listed.iter().filter(|tool| {
        read_only(tool)
            || tool
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| Some(name) == call_tool)
    });
    for tool in callable.take(MAX_AIMED_TOOLS) {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let schema = tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let Some(base) = synthesize(&schema) else {
            continue;
        };
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        let strings = properties
            .iter()
            .filter(|(_, property)| match property.get("type") {
                Some(Value::String(kind)) => kind == "string",
                Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "string"),
                _ => false,
            })
            .filter(|(_, property)| {
                property.get("enum").is_none() && property.get("const").is_none()
            })
            .take(MAX_AIMED_KEYS);
        for (key, _) in strings {
            aims.push(Aim {
                tool: name.to_owned(),
                key: key.clone(),
                base: base.clone(),
            });
        }
    }
    aims
}

/// A tool the `asking` cases call, with the arguments of a valid call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Callable {
    /// The tool.
    pub(crate) tool: String,
    /// Its arguments: `--call-args` for the `--call-tool`, else the smallest the schema
    /// accepts.
    pub(crate) arguments: Value,
}

/// The tools the `asking` cases call, chosen as [`aims`] chooses (those the server marks
/// read-only and the operator's `--call-tool`, at most [`MAX_AIMED_TOOLS`]; none with
/// `no_tool_calls`), string arguments or not: they look at what a tool asks, not at its
/// arguments.
pub(crate) fn callable(
    tools: Option<&Value>,
    call_tool: Option<&str>,
    call_arguments: Option<&Value>,
    no_tool_calls: bool,
) -> Vec<Callable> {
    if no_tool_calls {
        return Vec::new();
    }
    let listed = tools
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    listed
        .iter()
        .filter_map(|tool| {
            let name = tool.get("name").and_then(Value::as_str)?;
            let named = Some(name) == call_tool;
            if !read_only(tool) && !named {
                return None;
            }
            let arguments = match call_arguments {
                Some(arguments) if named => arguments.clone(),
                _ => synthesize(tool.get("inputSchema").unwrap_or(&json!({})))?,
            };
            Some(Callable {
                tool: name.to_owned(),
                arguments,
            })
        })
        .take(MAX_AIMED_TOOLS)
        .collect()
}

/// Tools the exposure cases try.
const MAX_AIMED_TOOLS: usize = 32;

/// String arguments of one tool the exposure cases try.
const MAX_AIMED_KEYS: usize = 4;

/// A tool name no server has: what calls go to without a probe.
pub(crate) const UNKNOWN_TOOL: &str = "airlock_audit_no_such_tool";

/// What ends a `tools/call` line after its arguments.
pub(crate) const CALL_TAIL: &[u8] = b"}}\n";

/// The argument a huge string goes into when the tool has no string property.
const DEFAULT_STRING_KEY: &str = "audit";

/// Characters of a tool name or arguments shown in a report.
const MAX_SHOWN_CHARS: usize = 64;

/// The longest time limit one of the tools called `names` declares in its `_meta` (a member
/// whose name, after any `prefix/` or `prefix.`, is `timeoutMs`, `timeout_ms` or
/// `timeout-ms`, a count of milliseconds; or `timeoutSeconds`, `timeout_seconds` or
/// `timeout-seconds`), with that tool's name (escaped, bounded). MCP has no standard field for
/// this; these are the spellings servers use. A value that is not a positive whole number is
/// no declaration.
pub(crate) fn declared_timeout(
    tools: Option<&Value>,
    names: &[&str],
) -> Option<(String, Duration)> {
    let tools = tools?.as_array()?;
    let mut longest: Option<(String, Duration)> = None;
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if !names.contains(&name) {
            continue;
        }
        let Some(meta) = tool.get("_meta").and_then(Value::as_object) else {
            continue;
        };
        for (key, value) in meta {
            let last = key
                .rsplit(['/', '.'])
                .next()
                .unwrap_or(key)
                .to_ascii_lowercase()
                .replace(['_', '-'], "");
            let Some(count) = value.as_u64().filter(|count| *count > 0) else {
                continue;
            };
            let declared = match last.as_str() {
                "timeoutms" => Duration::from_millis(count),
                "timeoutseconds" => Duration::from_secs(count),
                _ => continue,
            };
            if longest.as_ref().is_none_or(|(_, known)| declared > *known) {
                longest = Some((shown(name, MAX_SHOWN_CHARS), declared));
            }
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Value {
        json!([
            {"name": "delete_all", "annotations": {"readOnlyHint": false},
             "inputSchema": {"type": "object"}},
            {"name": "sneaky", "annotations": {"readOnlyHint": true, "destructiveHint": true},
             "inputSchema": {"type": "object"}},
            {"name": "weird", "annotations": {"readOnlyHint": true},
             "inputSchema": {"type": "object", "required": ["x"],
                             "properties": {"x": {"anyOf": [{"type": "string"}]}}}},
            {"name": "convert", "annotations": {"readOnlyHint": true},
             "inputSchema": {"type": "object", "required": ["value", "from", "flag", "text", "n"],
                             "properties": {
                                 "value": {"type": "number", "minimum": -5, "maximum": 5},
                                 "from": {"enum": ["celsius", "kelvin"]},
                                 "flag": {"type": "boolean"},
                                 "text": {"type": ["string", "null"], "minLength": 3},
                                 "n": {"type": "integer", "exclusiveMinimum": 9},
                                 "optional": {"type": "string"}}}}
        ])
    }

    #[test]
    fn exposure_aims_at_string_arguments_of_read_only_tools_and_the_named_one() {
        let mut listed = tools();
        listed.as_array_mut().unwrap().push(json!({
            "name": "write_note", "annotations": {"readOnlyHint": false},
            "inputSchema": {"type": "object", "properties": {"body": {"type": "string"}}}}));
        let keys = |aims: Vec<Aim>| {
            aims.into_iter()
                .map(|aim| format!("{}.{}", aim.tool, aim.key))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys(aims(Some(&listed), None, false)),
            vec!["convert.optional", "convert.text"]
        );
        let named = aims(Some(&listed), Some("write_note"), false);
        assert_eq!(
            keys(named.clone()),
            vec!["convert.optional", "convert.text", "write_note.body"]
        );
        assert_eq!(named[0].base["value"], json!(-5));
        assert!(aims(Some(&listed), Some("write_note"), true).is_empty());
    }

    #[test]
    fn asking_calls_read_only_tools_and_the_named_one_with_or_without_string_arguments() {
        let mut listed = tools();
        listed.as_array_mut().unwrap().push(json!({
            "name": "ask", "annotations": {"readOnlyHint": false},
            "inputSchema": {"type": "object"}}));
        let names = |tools: Vec<Callable>| {
            tools
                .into_iter()
                .map(|tool| format!("{} {}", tool.tool, tool.arguments))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(callable(
                Some(&listed),
                Some("ask"),
                Some(&json!({"k": 1})),
                false
            )),
            vec![
                r#"convert {"flag":false,"from":"celsius","n":10,"text":"aaa","value":-5}"#,
                r#"ask {"k":1}"#
            ]
        );
        assert_eq!(
            names(callable(Some(&listed), Some("ask"), None, false))[1],
            "ask {}"
        );
        assert!(callable(Some(&listed), Some("ask"), None, true).is_empty());
    }

    #[test]
    fn the_first_read_only_tool_with_a_known_schema_is_chosen() {
        let probe = choose(Some(&tools()), None, None, false);
        assert_eq!(probe.tool.as_deref(), Some("convert"));
        assert_eq!(
            probe.arguments,
            json!({"value": -5, "from": "celsius", "flag": false, "text": "aaa", "n": 10})
        );
        assert_eq!(probe.string_key, "text");
    }

    #[test]
    fn without_a_read_only_tool_calls_go_to_a_tool_that_cannot_exist() {
        let only_writers = json!([{"name": "delete_all", "inputSchema": {"type": "object"}}]);
        let probe = choose(Some(&only_writers), None, None, false);
        assert_eq!(probe, Probe::none());
        assert_eq!(probe.name(), UNKNOWN_TOOL);
        assert_eq!(choose(Some(&tools()), None, None, true), Probe::none());
        assert_eq!(choose(None, None, None, false), Probe::none());
    }

    #[test]
    fn the_operator_can_name_the_tool_and_its_arguments() {
        let probe = choose(
            Some(&tools()),
            Some("delete_all"),
            Some(&json!({"dry": true})),
            false,
        );
        assert_eq!(probe.tool.as_deref(), Some("delete_all"));
        assert_eq!(probe.arguments, json!({"dry": true}));
        let unlisted = choose(Some(&tools()), Some("elsewhere"), None, false);
        assert_eq!(unlisted.arguments, json!({}));
    }

    #[test]
    fn call_lines_escape_the_tool_name() {
        let probe = Probe {
            tool: Some("a\"b\n".to_owned()),
            arguments: json!({"k": 1}),
            string_key: "k".to_owned(),
        };
        let line = probe.valid_call("7");
        let parsed: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(parsed["params"]["name"], "a\"b\n");
        assert_eq!(parsed["params"]["arguments"], json!({"k": 1}));
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(probe.describe(), "a\"b\\u{a} {\"k\":1}");
    }

    #[test]
    fn a_called_tool_declaring_a_timeout_in_its_meta_is_found() {
        let tools = json!([
            {"name": "quick", "_meta": {"timeoutMs": 1000}},
            {"name": "slow", "_meta": {"io.example/timeout_ms": 30000, "other": 5}},
            {"name": "slower", "_meta": {"com.example.timeoutSeconds": 60}},
            {"name": "silly", "_meta": {"timeoutMs": "9", "timeout-ms": -1, "timeoutms": 0}},
            {"name": "not-called", "_meta": {"timeoutMs": 999999}},
        ]);
        assert_eq!(
            declared_timeout(Some(&tools), &["quick", "slow"]),
            Some(("slow".to_owned(), Duration::from_secs(30)))
        );
        assert_eq!(
            declared_timeout(Some(&tools), &["quick", "slower", "silly"]),
            Some(("slower".to_owned(), Duration::from_secs(60)))
        );
        assert_eq!(declared_timeout(Some(&tools), &["silly"]), None);
        assert_eq!(declared_timeout(Some(&tools), &[]), None);
        assert_eq!(declared_timeout(None, &["quick"]), None);
    }
}
