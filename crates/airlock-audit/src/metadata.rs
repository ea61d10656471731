//! The `metadata` category: what the server tells the model, as opposed to how it answers.
//!
//! Discovery gathers the catalog once (`gather`: the instructions of `initialize`, every page
//! of `tools/list`, and `prompts/list`, `resources/list` and `resources/templates/list` when
//! the server declares them); the catalog cases judge it with the shared rules of
//! `airlock_metadata` (no server started), and `metadata.results` reviews the results of the
//! calls the audit may make. Each finding names the rule, the item, the JSON pointer and the
//! byte offset; its kind (`rule@item/pointer`) is what baselines and SARIF fingerprints key
//! on, so a known finding stays known when text around it moves, and a new place fails.
//!
//! With a pin (`--check-pin`), the catalog is compared with the pinned one: each change is a
//! finding of the `metadata.pin` report, naming the item and the field.
//!
//! What it trusts: nothing the server lists. Everything shown is escaped and bounded by
//! `airlock_metadata` (and again by `judge::shown`); the catalog is bounded in pages and
//! items.

use std::time::Instant;

use airlock_metadata::{Catalog, Family, Level, Pin, Rule, Spot};
use serde_json::{Value, json};

use super::judge::{self, Outcome, shown};
use super::session::Session;
use super::severity::Severity;
use super::{CaseReport, Category, Context, FindingReport, Judgement, Verdict};

/// What a metadata case looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Characters a reviewer does not see.
    HiddenText,
    /// Sentences addressed to the model.
    ModelInstructions,
    /// References to tools the server does not have.
    Shadowing,
    /// Unbounded string inputs asking for secrets or paths.
    InputSchemas,
    /// Text longer than a reviewer reads.
    Oversized,
    /// The text of the results of the calls the audit may make.
    Results,
}

impl Check {
    /// Whether the case calls tools (and so starts a server).
    pub(crate) fn calls(self) -> bool {
        self == Self::Results
    }

    /// Whether a finding of `rule` belongs to this case.
    fn covers(self, rule: Rule) -> bool {
        match self {
            Self::HiddenText => rule.family() == Family::HiddenText,
            Self::ModelInstructions => matches!(
                rule,
                Rule::ReadSecrets
                    | Rule::HideFromUser
                    | Rule::OverrideInstructions
                    | Rule::AddressedToModel
                    | Rule::CallOtherTools
            ),
            Self::Shadowing => rule == Rule::Shadowing,
            Self::InputSchemas => {
                matches!(rule, Rule::UnboundedSecretInput | Rule::UnboundedPathInput)
            }
            Self::Oversized => rule == Rule::Oversized,
            // Results are reviewed by every text rule.
            Self::Results => true,
        }
    }
}

/// The audit's severity for a rule's level.
pub(crate) fn severity(level: Level) -> Severity {
    match level {
        Level::High => Severity::High,
        Level::Medium => Severity::Medium,
        Level::Low => Severity::Low,
    }
}

/// The kind of a finding of `spot`: `rule@item/pointer` (escaped, bounded).
fn kind(spot: &Spot) -> String {
    let item = match spot.place.name() {
        Some(name) => format!("{}/{}", spot.place.kind(), shown(name, MAX_KIND_NAME_CHARS)),
        None => spot.place.kind().to_owned(),
    };
    format!(
        "{}@{item}{}",
        spot.rule.name(),
        shown(&spot.pointer, MAX_KIND_POINTER_CHARS)
    )
}

/// The rule a metadata finding's kind names, for SARIF's per-rule help.
pub(crate) fn rule_of(kind: &str) -> Option<Rule> {
    kind.split_once('@').and_then(|(rule, _)| Rule::parse(rule))
}

fn finding(spot: &Spot) -> FindingReport {
    FindingReport {
        kind: kind(spot),
        severity: severity(spot.rule.level()),
        text: shown(&spot.describe(), MAX_FINDING_CHARS),
        count: u64::try_from(spot.count).unwrap_or(u64::MAX),
        baselined: false,
        evidence: None,
    }
}

/// Adds `findings` to `report`: its verdict and severity become the worst of them.
pub(crate) fn add_findings(report: &mut CaseReport, findings: Vec<FindingReport>) {
    for found in &findings {
        let verdict = if found.severity >= Severity::Medium {
            Verdict::Fail
        } else {
            Verdict::Note
        };
        report.verdict = report.verdict.max(verdict);
        report.severity = report.severity.max(Some(found.severity));
    }
    report.findings.extend(findings);
}

/// The findings of `check` among `spots`, the catalog's.
pub(crate) fn catalog_findings(check: Check, spots: &[Spot]) -> Vec<FindingReport> {
    spots
        .iter()
        .filter(|spot| check.covers(spot.rule))
        .map(finding)
        .collect()
}

/// A case's report when it passed or holds only `findings`.
pub(crate) fn report_of(
    id: &str,
    sends: &str,
    expects: &str,
    detail: String,
    findings: Vec<FindingReport>,
    duration_ms: u64,
) -> CaseReport {
    let passed = Judgement {
        verdict: Verdict::Pass,
        severity: None,
        detail,
        answer: None,
        follow_up: false,
    };
    let mut report = super::case_report(
        id,
        Category::Metadata,
        sends,
        expects,
        passed,
        &[],
        duration_ms,
    );
    add_findings(&mut report, findings);
    report
}

/// What the catalog holds, in a few words.
pub(crate) fn describe(catalog: &Catalog) -> String {
    format!(
        "{} tools, {} prompts, {} resources, {} resource templates{}",
        catalog.tools.len(),
        catalog.prompts.len(),
        catalog.resources.len(),
        catalog.resource_templates.len(),
        if catalog.instructions.is_some() {
            ", instructions"
        } else {
            ""
        }
    )
}

/// `metadata.results`: calls the probe tool and the tools the asking cases call (each once,
/// with the arguments of a valid call), and reviews the text of their results.
pub(crate) fn results(
    session: &mut Session<'_>,
    context: &Context,
    deadline: Instant,
) -> (Judgement, Vec<FindingReport>) {
    let mut calls: Vec<(String, Value)> = Vec::new();
    if let Some(tool) = &context.probe.tool {
        calls.push((tool.clone(), context.probe.arguments.clone()));
    }
    for callable in &context.callable {
        if !calls.iter().any(|(tool, _)| *tool == callable.tool) {
            calls.push((callable.tool.clone(), callable.arguments.clone()));
        }
    }
    calls.truncate(MAX_RESULT_CALLS);
    let mut findings = Vec::new();
    let mut reviewed = 0_usize;
    for (tool, arguments) in &calls {
        let id = session.request(
            "tools/call",
            Some(json!({"name": tool, "arguments": arguments})),
        );
        let Ok(reply) = session.await_reply(&id, deadline) else {
            break;
        };
        if let Outcome::Result {
            value: Some(value), ..
        } = &reply.outcome
        {
            reviewed = reviewed.saturating_add(1);
            findings.extend(
                airlock_metadata::review_result(tool, value, &context.catalog)
                    .iter()
                    .map(finding),
            );
        }
    }
    let detail = if calls.is_empty() {
        "no tool the audit may call (none is marked read-only; see --call-tool)".to_owned()
    } else {
        format!("{reviewed} of {} calls' results reviewed", calls.len())
    };
    let judgement = Judgement {
        verdict: Verdict::Pass,
        severity: None,
        detail,
        answer: None,
        follow_up: true,
    };
    (judgement, findings)
}

/// The `metadata.pin` report: each difference between `pin` and `catalog` is a high finding
/// naming the item and the field.
pub(crate) fn pin_report(pin: &Pin, catalog: &Catalog) -> CaseReport {
    let now = catalog.digest();
    let changes = pin.diff(catalog);
    let findings = changes
        .iter()
        .map(|line| FindingReport {
            kind: format!(
                "pin-changed@{}",
                shown(
                    line.split_once(':').map_or(line.as_str(), |(item, _)| item),
                    MAX_KIND_NAME_CHARS
                )
            ),
            severity: Severity::High,
            text: shown(line, MAX_FINDING_CHARS),
            count: 1,
            baselined: false,
            evidence: None,
        })
        .collect();
    let detail = if now == pin.digest {
        format!("the catalog matches the pin ({now})")
    } else {
        format!("the catalog is {now}, the pin {}", shown(&pin.digest, 80))
    };
    report_of(
        PIN_CASE,
        "compares the catalog with the pin given with --check-pin",
        "the same catalog, to the byte",
        detail,
        findings,
        0,
    )
}

/// The id of the pin's report.
pub(crate) const PIN_CASE: &str = "metadata.pin";

/// Gathers the catalog after the handshake: `info` is the `initialize` result, `tools` and
/// `cursor` the first `tools/list` page's. Lists the server does not declare are not asked
/// for; a list that fails is left empty (the other cases judge how the server answers).
pub(crate) fn gather(
    session: &mut Session<'_>,
    deadline: Instant,
    info: Option<&Value>,
    tools: Option<&Value>,
    cursor: Option<String>,
) -> Catalog {
    let mut catalog = Catalog {
        instructions: info
            .and_then(|info| info.get("instructions"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        tools: tools.and_then(Value::as_array).cloned().unwrap_or_default(),
        ..Catalog::default()
    };
    let mut rest = paged(session, deadline, "tools/list", "tools", cursor);
    catalog.tools.append(&mut rest);
    catalog.tools.truncate(MAX_CATALOG_ITEMS);
    let declared = |name: &str| {
        info.and_then(|info| info.get("capabilities"))
            .and_then(|capabilities| capabilities.get(name))
            .is_some()
    };
    if declared("prompts") {
        catalog.prompts = paged(
            session,
            deadline,
            "prompts/list",
            "prompts",
            Some(String::new()),
        );
    }
    if declared("resources") {
        catalog.resources = paged(
            session,
            deadline,
            "resources/list",
            "resources",
            Some(String::new()),
        );
        catalog.resource_templates = paged(
            session,
            deadline,
            "resources/templates/list",
            "resourceTemplates",
            Some(String::new()),
        );
    }
    catalog
}

/// The items of `key` in every page of `method` from `cursor` on (an empty cursor: the first
/// page), at most [`MAX_CATALOG_PAGES`] pages and [`MAX_CATALOG_ITEMS`] items.
fn paged(
    session: &mut Session<'_>,
    deadline: Instant,
    method: &str,
    key: &str,
    mut cursor: Option<String>,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut pages = 0_usize;
    while let Some(at) = cursor.take() {
        if pages >= MAX_CATALOG_PAGES || items.len() >= MAX_CATALOG_ITEMS {
            break;
        }
        pages = pages.saturating_add(1);
        let params = (!at.is_empty()).then(|| json!({"cursor": at}));
        let id = session.request(method, params);
        let Ok(reply) = session.await_reply(&id, deadline) else {
            break;
        };
        let judge::Outcome::Result {
            value: Some(value), ..
        } = reply.outcome
        else {
            break;
        };
        if let Some(page) = value.get(key).and_then(Value::as_array) {
            items.extend(page.iter().cloned());
        }
        cursor = value
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|next| !next.is_empty())
            .map(str::to_owned);
    }
    items.truncate(MAX_CATALOG_ITEMS);
    items
}

/// Pages of one list the audit reads (a server that always answers with a next cursor must
/// not keep it listing).
const MAX_CATALOG_PAGES: usize = 64;

/// Items of one list kept.
const MAX_CATALOG_ITEMS: usize = 10_000;

/// Calls `metadata.results` makes.
const MAX_RESULT_CALLS: usize = 8;

/// Characters of a finding's text.
const MAX_FINDING_CHARS: usize = 400;

/// Characters of an item's name in a finding's kind.
const MAX_KIND_NAME_CHARS: usize = 64;

/// Characters of a pointer in a finding's kind.
const MAX_KIND_POINTER_CHARS: usize = 120;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_kind_names_the_rule_the_item_and_the_pointer() {
        let catalog = Catalog {
            tools: vec![json!({"name": "add", "description": "Adds.\u{200b}"})],
            ..Catalog::default()
        };
        let spots = airlock_metadata::review(&catalog);
        let found = catalog_findings(Check::HiddenText, &spots);
        assert_eq!(found.len(), 1);
        let first = found.first().unwrap();
        assert_eq!(first.kind, "invisible-character@tool/add/description");
        assert_eq!(first.severity, Severity::High);
        assert!(
            first
                .text
                .starts_with("tool \"add\" /description, byte 5: "),
            "{}",
            first.text
        );
        assert_eq!(rule_of(&first.kind), Some(Rule::InvisibleCharacter));
        assert!(catalog_findings(Check::ModelInstructions, &spots).is_empty());
    }
}
