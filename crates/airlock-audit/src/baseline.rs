//! A baseline: the findings of an earlier run, which do not fail this one (`--baseline`).
//!
//! A finding is known by its case id and its kind (`answer` for the reply to the case's own
//! input, else the general finding's name), at a severity: it is suppressed only when the
//! baseline has the same case and kind at the same or a worse severity, so a finding that got
//! worse fails again. The file is either a whole JSON report (`--json`) or the smaller file
//! `--write-baseline` writes (only the findings, sorted, so it diffs well in a repository).
//!
//! What it trusts: nothing in the file beyond its shape. It is read up to
//! [`MAX_BASELINE_BYTES`], parsed with serde_json's nesting limit, and only case ids, kinds
//! and severity names are kept; everything else is ignored.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::AuditReport;
use super::severity::{ANSWER_KIND, Severity};

/// The findings of an earlier run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Baseline {
    /// The worst severity seen for each (case id, kind).
    known: BTreeMap<(String, String), Severity>,
}

/// Why a baseline could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The file could not be opened or read.
    #[error("--baseline: the file cannot be read ({0:?})")]
    Read(std::io::ErrorKind),
    /// The file is larger than 64 MiB.
    #[error("--baseline: the file is larger than 64 MiB")]
    TooLarge,
    /// The file is not a report or a baseline that `airlock audit` writes.
    #[error("--baseline: not a JSON report or baseline written by airlock audit")]
    NotABaseline,
}

/// One finding as a baseline file lists it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Entry {
    case: String,
    kind: String,
    severity: Severity,
}

/// The file `--write-baseline` writes.
#[derive(Debug, Serialize, Deserialize)]
struct File {
    /// Marks the format; always [`FORMAT`].
    airlock_audit_baseline: u32,
    findings: Vec<Entry>,
}

/// The parts of a JSON report a baseline reads.
#[derive(Deserialize)]
struct ReportShape {
    cases: Vec<CaseShape>,
}

#[derive(Deserialize)]
struct CaseShape {
    id: String,
    answer_severity: Option<Severity>,
    #[serde(default)]
    findings: Vec<FindingShape>,
}

#[derive(Deserialize)]
struct FindingShape {
    kind: String,
    severity: Severity,
}

impl Baseline {
    /// Reads a baseline from `path`: a JSON report or a file `--write-baseline` wrote.
    ///
    /// # Errors
    ///
    /// The file cannot be read, is too large, or has neither shape.
    pub fn load(path: &Path) -> Result<Self, BaselineError> {
        let file = std::fs::File::open(path).map_err(|error| BaselineError::Read(error.kind()))?;
        let mut bytes = Vec::new();
        file.take(MAX_BASELINE_BYTES.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| BaselineError::Read(error.kind()))?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_BASELINE_BYTES {
            return Err(BaselineError::TooLarge);
        }
        Self::parse(&bytes)
    }

    /// A baseline from the bytes of a JSON report or a baseline file.
    ///
    /// # Errors
    ///
    /// The bytes have neither shape.
    pub fn parse(bytes: &[u8]) -> Result<Self, BaselineError> {
        let mut baseline = Self::default();
        if let Ok(file) = serde_json::from_slice::<File>(bytes) {
            if file.airlock_audit_baseline != FORMAT {
                return Err(BaselineError::NotABaseline);
            }
            for entry in file.findings {
                baseline.add(entry.case, entry.kind, entry.severity);
            }
            return Ok(baseline);
        }
        let report: ReportShape =
            serde_json::from_slice(bytes).map_err(|_| BaselineError::NotABaseline)?;
        for case in report.cases {
            if let Some(severity) = case.answer_severity {
                baseline.add(case.id.clone(), ANSWER_KIND.to_owned(), severity);
            }
            for finding in case.findings {
                baseline.add(case.id.clone(), finding.kind, finding.severity);
            }
        }
        Ok(baseline)
    }

    /// The findings of `report`, as a baseline.
    pub fn of(report: &AuditReport) -> Self {
        let mut baseline = Self::default();
        for case in &report.cases {
            if let Some(severity) = case.answer_severity {
                baseline.add(case.id.clone(), ANSWER_KIND.to_owned(), severity);
            }
            for finding in &case.findings {
                baseline.add(case.id.clone(), finding.kind.clone(), finding.severity);
            }
        }
        baseline
    }

    /// The baseline as the JSON `--write-baseline` writes.
    ///
    /// # Errors
    ///
    /// Serialisation failed (not expected: plain data).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let findings = self
            .known
            .iter()
            .map(|((case, kind), severity)| Entry {
                case: case.clone(),
                kind: kind.clone(),
                severity: *severity,
            })
            .collect();
        let mut json = serde_json::to_string_pretty(&File {
            airlock_audit_baseline: FORMAT,
            findings,
        })?;
        json.push('\n');
        Ok(json)
    }

    /// Whether the baseline has `kind` for `case` at `severity` or worse.
    pub fn has(&self, case: &str, kind: &str, severity: Severity) -> bool {
        self.known
            .get(&(case.to_owned(), kind.to_owned()))
            .is_some_and(|known| *known >= severity)
    }

    /// How many findings it holds.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    fn add(&mut self, case: String, kind: String, severity: Severity) {
        let known = self.known.entry((case, kind)).or_insert(severity);
        *known = (*known).max(severity);
    }
}

/// The version of the `--write-baseline` format.
const FORMAT: u32 = 1;

/// Largest baseline read: a full report of every case with every finding is far smaller.
pub(crate) const MAX_BASELINE_BYTES: u64 = 64 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_known_at_its_severity_or_milder_only() {
        let baseline = Baseline::parse(
            br#"{"airlock_audit_baseline":1,"findings":[
                {"case":"json.nan","kind":"answer","severity":"medium"}]}"#,
        )
        .unwrap();
        assert!(baseline.has("json.nan", "answer", Severity::Medium));
        assert!(baseline.has("json.nan", "answer", Severity::Low));
        assert!(!baseline.has("json.nan", "answer", Severity::High));
        assert!(!baseline.has("json.nan", "hang", Severity::Low));
        assert!(!baseline.has("json.nul", "answer", Severity::Low));
    }

    #[test]
    fn a_report_reads_as_a_baseline_of_its_findings() {
        let baseline = Baseline::parse(
            br#"{"version":"0.1.0","cases":[
                {"id":"a.b","answer_severity":null,"findings":[
                    {"kind":"hang","severity":"critical","text":"x","count":1}]},
                {"id":"c.d","answer_severity":"high","findings":[]}]}"#,
        )
        .unwrap();
        assert_eq!(baseline.len(), 2);
        assert!(baseline.has("a.b", "hang", Severity::Critical));
        assert!(!baseline.has("a.b", "answer", Severity::Info));
        assert!(baseline.has("c.d", "answer", Severity::High));
        let again = Baseline::parse(baseline.to_json().unwrap().as_bytes()).unwrap();
        assert_eq!(again, baseline);
    }

    #[test]
    fn other_json_is_not_a_baseline() {
        for bytes in [
            &b"[]"[..],
            br#"{"cases":[{"id":1}]}"#,
            br#"{"airlock_audit_baseline":2,"findings":[]}"#,
            br#"{"cases":[{"id":"a","answer_severity":"severe"}]}"#,
            b"not json",
        ] {
            assert!(
                matches!(Baseline::parse(bytes), Err(BaselineError::NotABaseline)),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
