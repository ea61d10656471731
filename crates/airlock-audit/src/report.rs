//! An audit's results for people (a table grouped by category, with totals) and for machines
//! (JSON).
//!
//! Everything here formats values the audit already made safe: server-provided text reaches a
//! report only through `judge::shown`.

use super::{AuditReport, CaseReport, Category, Totals, Verdict};

impl AuditReport {
    /// Counts of verdicts.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for case in &self.cases {
            totals.add(case.verdict);
        }
        totals
    }

    /// Whether no case failed and the audit could run.
    pub fn passed(&self) -> bool {
        self.setup_error.is_none() && !self.interrupted && self.totals().fail == 0
    }

    /// The process exit status for this report: 0 no case failed, 1 a case failed, 3 the
    /// audit could not run (the server did not start or finish its handshake), 130
    /// interrupted.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            EXIT_INTERRUPTED
        } else if self.setup_error.is_some() {
            EXIT_SETUP
        } else if self.totals().fail > 0 {
            EXIT_FAILED
        } else {
            0
        }
    }

    /// The report as JSON.
    ///
    /// # Errors
    ///
    /// Serialisation failed (not expected: every field is plain data).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        #[derive(serde::Serialize)]
        struct WithTotals<'a> {
            #[serde(flatten)]
            report: &'a AuditReport,
            totals: Totals,
            passed: bool,
        }
        serde_json::to_string_pretty(&WithTotals {
            report: self,
            totals: self.totals(),
            passed: self.passed(),
        })
    }

    /// The report as a table: a header, one block per category, totals.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let command = self.command.join(" ");
        push_line(&mut out, &format!("airlock audit -- {command}"));
        if let Some(server) = &self.server {
            push_line(
                &mut out,
                &format!(
                    "server:  {} {} (protocol {}), {} tools; calls go to {}",
                    server.name,
                    server.version,
                    server.protocol_version,
                    server.tools,
                    server.probe
                ),
            );
        }
        push_line(
            &mut out,
            &format!(
                "limits:  {} MiB peak RSS of the process tree, {} ms per case{}",
                self.max_memory_mib,
                self.case_timeout_ms,
                if self.quick {
                    " (quick: slow cases left out)"
                } else {
                    ""
                }
            ),
        );
        if let Some(error) = &self.setup_error {
            push_line(&mut out, &format!("could not audit: {error}"));
        }
        let id_width = self
            .cases
            .iter()
            .map(|case| case.id.chars().count())
            .max()
            .unwrap_or(0);
        if !self.cases.is_empty() {
            push_line(&mut out, "");
            push_line(
                &mut out,
                &format!(
                    "  {:<4}  {:<id_width$}  {:>9}  {:>9}  {}",
                    "", "case", "answer", "peak RSS", "what came back"
                ),
            );
        }
        for category in Category::ALL {
            let cases: Vec<&CaseReport> = self
                .cases
                .iter()
                .filter(|case| case.category == category.name())
                .collect();
            if cases.is_empty() {
                continue;
            }
            push_line(&mut out, "");
            push_line(
                &mut out,
                &format!("{} ({})", category.title(), category.name()),
            );
            let mut totals = Totals::default();
            for case in cases {
                totals.add(case.verdict);
                out.push_str(&case_row(case, id_width));
            }
            push_line(&mut out, &format!("  {}", totals.describe()));
        }
        push_line(&mut out, "");
        let mut last = format!(
            "total: {} in {:.1} s",
            self.totals().describe(),
            ms_to_secs(self.duration_ms)
        );
        if self.interrupted {
            last.push_str(" (interrupted)");
        }
        push_line(&mut out, &last);
        out
    }
}

/// One case as a row, and its findings under it.
fn case_row(case: &CaseReport, id_width: usize) -> String {
    let mut row = String::new();
    let answer = case.answer_us.map_or_else(|| "—".to_owned(), format_micros);
    row.push_str(&format!(
        "  {:<4}  {:<id_width$}  {:>9}  {:>9}  {}\n",
        case.verdict.name(),
        case.id,
        answer,
        format_kib(case.peak_rss_kib),
        case.detail
    ));
    for finding in &case.findings {
        row.push_str(&format!("        {finding}\n"));
    }
    row
}

impl Totals {
    fn add(&mut self, verdict: Verdict) {
        self.cases = self.cases.saturating_add(1);
        match verdict {
            Verdict::Pass => self.pass = self.pass.saturating_add(1),
            Verdict::Note => self.note = self.note.saturating_add(1),
            Verdict::Fail => self.fail = self.fail.saturating_add(1),
        }
    }

    /// `12 cases: 10 pass, 1 note, 1 fail`.
    pub fn describe(&self) -> String {
        format!(
            "{} cases: {} pass, {} note, {} fail",
            self.cases, self.pass, self.note, self.fail
        )
    }
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

/// `0.4 ms`, `12 ms`, `1.25 s`.
pub(crate) fn format_micros(micros: u64) -> String {
    let millis = f64::from(u32::try_from(micros).unwrap_or(u32::MAX)) / 1000.0;
    if micros >= 10_000_000 {
        format!("{:.1} s", ms_to_secs(micros / 1000))
    } else if micros >= 1_000_000 {
        format!("{:.2} s", millis / 1000.0)
    } else if micros >= 10_000 {
        format!("{millis:.0} ms")
    } else {
        format!("{millis:.1} ms")
    }
}

/// `8.3 MiB`.
pub(crate) fn format_kib(kib: u64) -> String {
    if kib == 0 {
        return "—".to_owned();
    }
    let mib = f64::from(u32::try_from(kib).unwrap_or(u32::MAX)) / 1024.0;
    if mib >= 100.0 {
        format!("{mib:.0} MiB")
    } else {
        format!("{mib:.1} MiB")
    }
}

fn ms_to_secs(ms: u64) -> f64 {
    f64::from(u32::try_from(ms).unwrap_or(u32::MAX)) / 1000.0
}

/// Exit status when a case failed.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit status when the audit could not run.
pub(crate) const EXIT_SETUP: u8 = 3;
/// Exit status when the audit was interrupted.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

#[cfg(test)]
mod tests {
    use super::super::ServerFacts;
    use super::*;

    fn case(id: &str, category: Category, verdict: Verdict) -> CaseReport {
        CaseReport {
            id: id.to_owned(),
            category: category.name().to_owned(),
            sends: "something".to_owned(),
            expects: "something else".to_owned(),
            verdict,
            detail: "error -32700, id null".to_owned(),
            findings: Vec::new(),
            answer_us: Some(420),
            duration_ms: 12,
            peak_rss_kib: 8 * 1024 + 307,
            exit: None,
            stderr_tail: None,
        }
    }

    fn report() -> AuditReport {
        AuditReport {
            command: vec!["srv".to_owned(), "mcp".to_owned()],
            server: Some(ServerFacts {
                name: "srv".to_owned(),
                version: "1.0".to_owned(),
                protocol_version: "2025-11-25".to_owned(),
                tools: 3,
                probe: "stats {\"text\":\"a\"}".to_owned(),
            }),
            setup_error: None,
            max_memory_mib: 256,
            case_timeout_ms: 10_000,
            quick: true,
            duration_ms: 1500,
            interrupted: false,
            cases: vec![
                case("json.a", Category::Json, Verdict::Pass),
                case("json.b", Category::Json, Verdict::Note),
                case("flood.c", Category::Flood, Verdict::Pass),
            ],
        }
    }

    #[test]
    fn the_table_groups_cases_by_category_with_totals() {
        let table = report().table();
        let expected = "\
airlock audit -- srv mcp
server:  srv 1.0 (protocol 2025-11-25), 3 tools; calls go to stats {\"text\":\"a\"}
limits:  256 MiB peak RSS of the process tree, 10000 ms per case (quick: slow cases left out)

        case        answer   peak RSS  what came back

malformed JSON (json)
  pass  json.a      0.4 ms    8.3 MiB  error -32700, id null
  note  json.b      0.4 ms    8.3 MiB  error -32700, id null
  2 cases: 1 pass, 1 note, 0 fail

floods and stream ends (flood)
  pass  flood.c     0.4 ms    8.3 MiB  error -32700, id null
  1 cases: 1 pass, 0 note, 0 fail

total: 3 cases: 2 pass, 1 note, 0 fail in 1.5 s
";
        assert_eq!(table, expected);
    }

    #[test]
    fn exit_status_is_zero_only_without_failures() {
        let mut report = report();
        assert!(report.passed());
        assert_eq!(report.exit_code(), 0);
        report
            .cases
            .push(case("batch.x", Category::Batch, Verdict::Fail));
        assert!(!report.passed());
        assert_eq!(report.exit_code(), EXIT_FAILED);
        report.setup_error = Some("did not start".to_owned());
        assert_eq!(report.exit_code(), EXIT_SETUP);
        report.interrupted = true;
        assert_eq!(report.exit_code(), EXIT_INTERRUPTED);
    }

    #[test]
    fn findings_are_listed_under_their_case() {
        let mut report = report();
        report.cases.truncate(1);
        report
            .cases
            .first_mut()
            .unwrap()
            .findings
            .push("fail: stdout line that is not one JSON-RPC message: not JSON".to_owned());
        assert!(report.table().contains(
            "error -32700, id null\n        fail: stdout line that is not one JSON-RPC message: not JSON\n"
        ));
    }

    #[test]
    fn json_has_every_case_with_its_verdict() {
        let json: serde_json::Value = serde_json::from_str(&report().to_json().unwrap()).unwrap();
        assert_eq!(json["cases"][1]["id"], "json.b");
        assert_eq!(json["cases"][1]["verdict"], "note");
        assert_eq!(json["cases"][1]["peak_rss_kib"], 8499);
        assert_eq!(json["totals"]["pass"], 2);
        assert_eq!(json["passed"], true);
        assert_eq!(json["server"]["tools"], 3);
    }

    #[test]
    fn durations_and_sizes_read_well() {
        assert_eq!(format_micros(420), "0.4 ms");
        assert_eq!(format_micros(12_345), "12 ms");
        assert_eq!(format_micros(1_250_000), "1.25 s");
        assert_eq!(format_micros(61_000_000), "61.0 s");
        assert_eq!(format_kib(0), "—");
        assert_eq!(format_kib(8499), "8.3 MiB");
        assert_eq!(format_kib(300 * 1024), "300 MiB");
    }
}
