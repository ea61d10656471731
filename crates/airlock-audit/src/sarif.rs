//! The report as SARIF 2.1.0, for code-scanning services: one rule per case that ran (its
//! description and what a correct server does), one result per finding.
//!
//! Each result carries its severity as a SARIF level (critical and high are `error`, medium
//! `warning`, low and info `note`) and as a `security-severity` score, a stable fingerprint
//! (case id and kind), and, when a baseline was given, whether it is new; a finding in the
//! baseline is reported as suppressed. Server text arrives already escaped and bounded
//! (`judge::shown`); serde_json escapes the rest.

use serde_json::{Value, json};

use super::severity::{ANSWER_KIND, Severity};
use super::{AuditReport, CaseReport};

impl AuditReport {
    /// The report as a SARIF 2.1.0 log.
    ///
    /// # Errors
    ///
    /// Serialisation failed (not expected: plain data).
    pub fn to_sarif(&self) -> Result<String, serde_json::Error> {
        let rules: Vec<Value> = self.cases.iter().map(rule).collect();
        let mut results = Vec::new();
        for (index, case) in self.cases.iter().enumerate() {
            if let Some(severity) = case.answer_severity {
                results.push(self.result(
                    case,
                    index,
                    ANSWER_KIND,
                    severity,
                    &case.detail,
                    case.answer_baselined,
                ));
            }
            for finding in &case.findings {
                results.push(self.result(
                    case,
                    index,
                    &finding.kind,
                    finding.severity,
                    &finding.text,
                    finding.baselined,
                ));
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

    fn result(
        &self,
        case: &CaseReport,
        index: usize,
        kind: &str,
        severity: Severity,
        text: &str,
        baselined: bool,
    ) -> Value {
        let fails = !baselined && self.fail_on.fails(severity);
        let mut result = json!({
            "ruleId": case.id,
            "ruleIndex": index,
            "kind": "fail",
            "level": severity.sarif_level(),
            "message": {"text": format!("{} ({}): {text}", case.id, severity.name())},
            "locations": [{"logicalLocations": [{
                "name": case.id,
                "fullyQualifiedName": format!("airlock-audit/{}/{kind}", case.id),
                "kind": "test",
            }]}],
            "partialFingerprints": {"airlockAuditFinding/v1": format!("{}/{kind}", case.id)},
            "properties": {
                "severity": severity.name(),
                "security-severity": severity.score(),
                "finding": kind,
                "failsRun": fails,
            },
        });
        if let Some(object) = result.as_object_mut() {
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

/// The SARIF 2.1.0 schema's own identifier.
const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
