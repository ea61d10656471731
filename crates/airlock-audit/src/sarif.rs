//! The report as SARIF 2.1.0, for code-scanning services: one rule per case that ran (its
//! description and what a correct server does), one result per finding.
//!
//! Each result carries its severity as a SARIF level (critical and high are `error`, medium
//! `warning`, low and info `note`) and as a `security-severity` score, a stable fingerprint
//! (case id and kind), and, when a baseline was given, whether it is new; a finding in the
//! baseline is reported as suppressed. Every result has a physical location, the artifact
//! [`artifact_uri`] names (line 1: the audit judges the server, not a line of it), as
//! code-scanning services require, and the logical one, the case. Server text arrives already escaped and bounded
//! (`judge::shown`); serde_json escapes the rest.

use std::ffi::OsString;
use std::path::Path;

use serde_json::{Value, json};

use airlock_metadata::Rule;

use super::severity::{ANSWER_KIND, Severity};
use super::{AuditReport, CaseReport, Category};

impl AuditReport {
    /// The report as a SARIF 2.1.0 log.
    ///
    /// # Errors
    ///
    /// Serialisation failed (not expected: plain data).
    pub fn to_sarif(&self) -> Result<String, serde_json::Error> {
        let mut rules: Vec<Value> = self.cases.iter().map(rule).collect();
        // Each metadata rule that found something gets a rule of its own, with its help text.
        let mut metadata_rules: Vec<(Rule, usize)> = Vec::new();
        let mut results = Vec::new();
        for (index, case) in self.cases.iter().enumerate() {
            if let Some(severity) = case.answer_severity {
                let found = Found {
                    kind: ANSWER_KIND,
                    severity,
                    text: &case.detail,
                    baselined: case.answer_baselined,
                    evidence: case.evidence.as_deref(),
                };
                results.push(self.result(case, (&case.id, index), &found));
            }
            for finding in &case.findings {
                let found = Found {
                    kind: &finding.kind,
                    severity: finding.severity,
                    text: &finding.text,
                    baselined: finding.baselined,
                    evidence: finding.evidence.as_deref(),
                };
                let metadata = (case.category == Category::Metadata.name())
                    .then(|| crate::metadata::rule_of(&finding.kind))
                    .flatten();
                match metadata {
                    Some(rule) => {
                        let at = match metadata_rules.iter().find(|(known, _)| *known == rule) {
                            Some((_, at)) => *at,
                            None => {
                                let at = rules.len();
                                rules.push(metadata_rule(rule));
                                metadata_rules.push((rule, at));
                                at
                            }
                        };
                        let id = format!("metadata.{}", rule.name());
                        results.push(self.result(case, (&id, at), &found));
                    }
                    None => results.push(self.result(case, (&case.id, index), &found)),
                }
            }
        }
        let mut notifications = Vec::new();
        if let Some(error) = &self.setup_error {
            let mut text = format!("could not audit: {error}");
            if let Some(stderr) = &self.setup_stderr {
                text.push_str(&format!("; the server's stderr ended with:\n{stderr}"));
            }
            notifications.push(json!({"level": "error", "message": {"text": text}}));
        }
        if self.interrupted {
            notifications.push(json!({"level": "warning", "message": {"text": "interrupted"}}));
        }
        let mut invocation = json!({
            "executionSuccessful": self.setup_error.is_none() && !self.interrupted,
            "exitCode": self.exit_code(),
            "startTimeUtc": self.started_at,
            "arguments": self.command,
            "toolExecutionNotifications": notifications,
        });
        if let Some(server) = &self.server
            && let Some(object) = invocation.as_object_mut()
        {
            object.insert(
                "properties".to_owned(),
                json!({
                    "server": {
                        "name": server.name,
                        "version": server.version,
                        "protocolVersion": server.protocol_version,
                        "tools": server.tool_names,
                        "probe": server.probe,
                    }
                }),
            );
        }
        let log = json!({
            "$schema": SCHEMA_URI,
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "airlock audit",
                    "version": self.version,
                    "semanticVersion": self.version,
                    "rules": rules,
                }},
                "artifacts": [{
                    "location": {"uri": self.artifact},
                    "roles": ["analysisTarget"],
                }],
                "invocations": [invocation],
                "results": results,
                "properties": {
                    "failOn": self.fail_on.name(),
                    "quick": self.quick,
                    "maxMemoryMib": self.max_memory_mib,
                    "caseTimeoutMs": self.case_timeout_ms,
                },
            }],
        });
        let mut text = serde_json::to_string_pretty(&log)?;
        text.push('\n');
        Ok(text)
    }

    /// One result: a finding of `case`, under the rule `rule` (its id and index).
    fn result(&self, case: &CaseReport, rule: (&str, usize), found: &Found<'_>) -> Value {
        let (rule_id, index) = rule;
        let Found {
            kind,
            severity,
            text,
            baselined,
            evidence,
        } = *found;
        let fails = !baselined && self.fail_on.fails(severity);
        let mut message = format!("{} ({}): {text}", case.id, severity.name());
        if let Some(evidence) = evidence {
            message.push_str(&format!(". What came back: {evidence}"));
        }
        let mut result = json!({
            "ruleId": rule_id,
            "ruleIndex": index,
            "kind": "fail",
            "level": severity.sarif_level(),
            "message": {"text": message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": self.artifact, "index": 0},
                    "region": {"startLine": 1},
                },
                "logicalLocations": [{
                    "name": case.id,
                    "fullyQualifiedName": format!("airlock-audit/{}/{kind}", case.id),
                    "kind": "test",
                }],
            }],
            "partialFingerprints": {"airlockAuditFinding/v1": format!("{}/{kind}", case.id)},
            "properties": {
                "severity": severity.name(),
                "security-severity": severity.score(),
                "finding": kind,
                "failsRun": fails,
            },
        });
        if let Some(object) = result.as_object_mut() {
            if let Some(evidence) = evidence
                && let Some(properties) =
                    object.get_mut("properties").and_then(Value::as_object_mut)
            {
                properties.insert("evidence".to_owned(), json!(evidence));
            }
            if self.baselined {
                let state = if baselined { "unchanged" } else { "new" };
                object.insert("baselineState".to_owned(), json!(state));
            }
            if baselined {
                object.insert(
                    "suppressions".to_owned(),
                    json!([{
                        "kind": "external",
                        "status": "accepted",
                        "justification": "in the baseline given with --baseline",
                    }]),
                );
            }
        }
        result
    }
}

/// One finding of a case, as a result reports it.
#[derive(Clone, Copy)]
struct Found<'r> {
    kind: &'r str,
    severity: Severity,
    text: &'r str,
    baselined: bool,
    evidence: Option<&'r str>,
}

/// The artifact SARIF results point at, as a URI: the server's manifest when the command
/// names one (`--manifest FILE`, `--manifest=FILE`), else the first argument that names an
/// existing file (`python3 server.py`, `airlock serve airlock.toml`), else the program; for
/// `--url`, the URL. Code-scanning services need a physical location in every result
/// (GitHub's rejects results with only logical ones), and a file of the repository is the
/// most useful one they can show. A relative path stays relative (to the directory the audit
/// ran in, a checkout's root in CI); an absolute one becomes a `file://` URI.
pub(crate) fn artifact_uri(command: &[OsString], url: Option<&str>) -> String {
    if let Some(url) = url {
        return encode(url, true);
    }
    let mut args = command.iter().skip(1);
    let mut manifest = None;
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--manifest" {
            manifest = args.next().cloned();
        } else if let Some(path) = text.strip_prefix("--manifest=") {
            manifest = Some(OsString::from(path));
        }
    }
    let named_file = || {
        command
            .iter()
            .skip(1)
            .find(|arg| !arg.to_string_lossy().starts_with('-') && Path::new(arg).is_file())
            .cloned()
    };
    let chosen = manifest
        .or_else(named_file)
        .or_else(|| command.first().cloned())
        .unwrap_or_else(|| OsString::from("server"));
    let path = chosen.to_string_lossy();
    if path.starts_with('/') {
        format!("file://{}", encode(&path, false))
    } else {
        encode(&path, false)
    }
}

/// `text` percent-encoded for a URI: unreserved characters and `/` kept (and, for a URL the
/// operator gave, its other reserved characters too).
fn encode(text: &str, url: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        let kept = byte.is_ascii_alphanumeric()
            || b"-._~/".contains(&byte)
            || (url && b":?#[]@!$&'()*+,;=%".contains(&byte));
        if kept {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    if out.is_empty() {
        out.push_str("server");
    }
    out
}

/// The rule for one case: what it sends and what a correct server does.
fn rule(case: &CaseReport) -> Value {
    json!({
        "id": case.id,
        "shortDescription": {"text": format!("{}: {}", case.id, case.sends)},
        "fullDescription": {
            "text": format!("Sends {}. A correct server: {}.", case.sends, case.expects)
        },
        "help": {"text": format!("What a correct server does: {}.", case.expects)},
        "defaultConfiguration": {"level": "error"},
        "properties": {"category": case.category, "tags": ["security", "mcp", case.category]},
    })
}

/// The rule of one metadata rule: what it finds, and its help text (why it matters, what to
/// do).
fn metadata_rule(rule: Rule) -> Value {
    json!({
        "id": format!("metadata.{}", rule.name()),
        "shortDescription": {"text": format!("metadata.{}: {}", rule.name(), rule.summary())},
        "fullDescription": {"text": format!(
            "{} in what the server tells the model (airlock metadata rule set v{}).",
            rule.summary(),
            airlock_metadata::RULESET_VERSION
        )},
        "help": {"text": rule.help()},
        "defaultConfiguration": {"level": crate::metadata::severity(rule.level()).sarif_level()},
        "properties": {
            "category": Category::Metadata.name(),
            "tags": ["security", "mcp", "metadata", rule.family().name()],
            "security-severity": crate::metadata::severity(rule.level()).score(),
        },
    })
}

/// The SARIF 2.1.0 schema's own identifier.
const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(command: &[&str]) -> String {
        let command: Vec<OsString> = command.iter().map(OsString::from).collect();
        artifact_uri(&command, None)
    }

    #[test]
    fn the_artifact_is_the_manifest_then_a_named_file_then_the_program() {
        assert_eq!(
            uri(&["airlock", "serve", "--manifest", "deploy/my tools.toml"]),
            "deploy/my%20tools.toml"
        );
        assert_eq!(
            uri(&["/usr/bin/airlock", "serve", "--manifest=/etc/airlock.toml"]),
            "file:///etc/airlock.toml"
        );
        let here = env!("CARGO_MANIFEST_DIR");
        let cargo = format!("{here}/Cargo.toml");
        assert_eq!(uri(&["python3", "-u", &cargo]), format!("file://{cargo}"));
        assert_eq!(uri(&["npx", "-y", "server-everything"]), "npx");
        assert_eq!(
            uri(&["/opt/srv/bin/mcp server"]),
            "file:///opt/srv/bin/mcp%20server"
        );
        assert_eq!(
            artifact_uri(&[], Some("http://127.0.0.1:8080/mcp")),
            "http://127.0.0.1:8080/mcp"
        );
    }
}
