//! What a checked manifest says about itself: each tool's `inputSchema`, and the
//! human-readable account `airlock check` prints.

use serde_json::{Map, Value, json};

use super::checked::{CommandTool, Manifest};
use super::template::{ArgKind, ArgSpec, Element, PathKind, StringRule};
use airlock::limits::Rate;

/// The tool's `inputSchema` (JSON Schema 2020-12) from its arguments.
pub(crate) fn input_schema(tool: &CommandTool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in &tool.args {
        let mut schema = match &arg.kind {
            ArgKind::String(rule) => string_schema(rule),
            ArgKind::Integer { minimum, maximum } => {
                json!({"type": "integer", "minimum": minimum, "maximum": maximum})
            }
            ArgKind::Boolean { .. } => json!({"type": "boolean"}),
            ArgKind::Path(rule) => {
                let what = match rule.kind {
                    PathKind::File => "a file",
                    PathKind::Dir => "a directory",
                    PathKind::Any => "a file or directory",
                };
                json!({
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 4096,
                    "description": format!(
                        "Path of {what} inside the tool's directory: relative to it, or absolute."
                    ),
                })
            }
            ArgKind::Array {
                items,
                min_items,
                max_items,
            } => json!({
                "type": "array",
                "items": string_schema(items),
                "minItems": min_items,
                "maxItems": max_items,
            }),
        };
        if let Value::Object(map) = &mut schema {
            if let Some(description) = &arg.description {
                map.insert("description".into(), Value::from(description.as_str()));
            }
            if let Some(default) = &arg.default {
                map.insert("default".into(), default.clone());
            }
        }
        if arg.required {
            required.push(Value::from(arg.name.as_str()));
        }
        properties.insert(arg.name.clone(), schema);
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn string_schema(rule: &StringRule) -> Value {
    let mut schema = json!({
        "type": "string",
        "minLength": rule.min_length,
        "maxLength": rule.max_length,
    });
    if let Value::Object(map) = &mut schema {
        if let Some((_, source)) = &rule.pattern {
            map.insert("pattern".into(), Value::from(source.as_str()));
        }
        if let Some(values) = &rule.values {
            map.insert("enum".into(), json!(values));
        }
    }
    schema
}

impl Manifest {
    /// A human-readable account of what this manifest lets agents run: each tool's argv
    /// template, arguments, limits, environment names (never values) and accepted risks.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, text: &str| {
            out.push_str(text);
            out.push('\n');
        };
        line(
            &mut out,
            &format!("manifest: {} ({} tools)", self.source, self.tools.len()),
        );
        line(
            &mut out,
            &format!("server:   {} {}", self.name, self.version),
        );
        let l = &self.limits;
        let show_rate = |rate: Option<Rate>| {
            rate.map_or_else(
                || "off".to_owned(),
                |r| format!("{}/min burst {}", r.per_minute, r.burst),
            )
        };
        line(
            &mut out,
            &format!(
                "limits:   max_in_flight={} tool_timeout={}ms max_frame_bytes={} max_argument_bytes={} max_string_bytes={}",
                l.max_in_flight,
                l.tool_timeout.as_millis(),
                l.max_frame_bytes,
                l.max_argument_bytes,
                l.max_string_bytes
            ),
        );
        line(
            &mut out,
            &format!(
                "quotas:   tools/call {}; cheap methods {}",
                show_rate(l.tool_call_rate),
                show_rate(l.cheap_method_rate)
            ),
        );
        for tool in &self.tools {
            out.push('\n');
            line(
                &mut out,
                &format!("tool {} — {}", tool.name.as_str(), tool.description),
            );
            let mut argv = vec![tool.program.display().to_string()];
            argv.extend(tool.template.iter().map(|e| match e {
                Element::Literal(text) => shell_quote(text),
                Element::Value {
                    arg,
                    prefix,
                    suffix,
                    ..
                } => {
                    let name = tool.args.get(*arg).map_or("?", |a| a.name.as_str());
                    format!("{prefix}{{{name}}}{suffix}")
                }
            }));
            line(&mut out, &format!("  argv:    {}", argv.join(" ")));
            line(&mut out, &format!("  operands: {}", tool.reading.summary));
            for (i, arg) in tool.args.iter().enumerate() {
                let label = if i == 0 { "  args:   " } else { "          " };
                line(&mut out, &format!("{label} {}", describe_arg(arg)));
            }
            let timeout = tool.timeout.map_or_else(
                || format!("{} ms (server default)", l.tool_timeout.as_millis()),
                |t| format!("{} ms", t.as_millis()),
            );
            let quota = tool.rate.map_or_else(
                || "server quota only".to_owned(),
                |r| format!("{}/min, burst {}", r.per_minute, r.burst),
            );
            line(
                &mut out,
                &format!(
                    "  limits:  timeout {timeout}; output {} bytes per stream and per reply; rate {quota}; success exit codes {:?}; stderr {}",
                    tool.max_output_bytes,
                    tool.success_codes,
                    tool.stderr.describe()
                ),
            );
            if tool.task != airlock::TaskMode::Never {
                let task_timeout = tool.task_timeout.map_or_else(
                    || format!("{} ms (server default)", l.task_timeout.as_millis()),
                    |t| format!("{} ms", t.as_millis()),
                );
                let mode = if tool.task == airlock::TaskMode::Always {
                    "always (a call must ask for a task)"
                } else {
                    "optional (a task when the client asks, else an ordinary call)"
                };
                line(
                    &mut out,
                    &format!("  task:    {mode}; task timeout {task_timeout}"),
                );
            }
            if !tool.scopes.is_empty() {
                line(
                    &mut out,
                    &format!(
                        "  scopes:  {} (an OAuth caller over HTTP needs them all)",
                        tool.scopes.join(" ")
                    ),
                );
            }
            line(&mut out, &format!("  workdir: {}", tool.workdir.display()));
            let mut env: Vec<String> = tool
                .env
                .iter()
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .collect();
            env.extend(
                tool.secrets
                    .iter()
                    .map(|s| format!("{} (secret, redacted from output)", s.name())),
            );
            let env = if env.is_empty() {
                "(empty)".to_owned()
            } else {
                env.join(", ")
            };
            line(&mut out, &format!("  env:     {env}"));
            match &tool.sandbox {
                Some(confinement) => {
                    line(&mut out, "  sandbox: on");
                    out.push_str(&confinement.policy().describe("    "));
                }
                None => line(&mut out, "  sandbox: OFF (accepted risk: unsandboxed)"),
            }
            let risks: Vec<&str> = tool.accepted_risks.iter().map(|r| r.as_str()).collect();
            if !risks.is_empty() {
                line(&mut out, &format!("  ACCEPTED RISKS: {}", risks.join(", ")));
            }
            for warning in &tool.warnings {
                line(&mut out, &format!("  WARNING: {warning}"));
            }
        }
        out
    }
}

fn describe_arg(arg: &ArgSpec) -> String {
    let kind = match &arg.kind {
        ArgKind::String(rule) => describe_string(rule),
        ArgKind::Integer { minimum, maximum } => format!("integer {minimum}..={maximum}"),
        ArgKind::Boolean { flag: Some(flag) } => format!("boolean (adds `{flag}` when true)"),
        ArgKind::Boolean { flag: None } => "boolean (true/false)".to_owned(),
        ArgKind::Path(rule) => format!(
            "path ({}) under {}{}",
            match rule.kind {
                PathKind::File => "file",
                PathKind::Dir => "directory",
                PathKind::Any => "file or directory",
            },
            rule.root.display(),
            if rule.must_exist {
                ""
            } else {
                ", may not exist yet"
            }
        ),
        ArgKind::Array {
            items,
            min_items,
            max_items,
        } => {
            format!(
                "array of {min_items}..={max_items} items, each {}",
                describe_string(items)
            )
        }
    };
    let presence = match (&arg.default, arg.required) {
        (Some(default), _) => format!(", default {default}"),
        (None, true) => ", required".to_owned(),
        (None, false) => ", optional".to_owned(),
    };
    format!("{}: {kind}{presence}", arg.name)
}

fn describe_string(rule: &StringRule) -> String {
    let mut text = format!(
        "string of {}..={} characters",
        rule.min_length, rule.max_length
    );
    if let Some((_, pattern)) = &rule.pattern {
        text.push_str(&format!(" matching `{pattern}`"));
    }
    if let Some(values) = &rule.values {
        text.push_str(&format!(" in {values:?}"));
    }
    if rule.allow_leading_dash {
        text.push_str(", may start with '-'");
    }
    if rule.stdin {
        text.push_str(", sent on stdin");
    }
    text
}

/// Quotes a literal for display when it holds characters a reader could misread.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=./,:@%+".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("{text:?}")
    }
}
