//! An audit's results for people (a table grouped by category, with totals) and for machines
//! (JSON).
//!
//! Everything here formats values the audit already made safe: server-provided text reaches a
//! report only through `judge::shown`.

use std::time::SystemTime;

use super::severity::{FailOn, Severity};
use super::{AuditReport, CaseReport, Category, Totals, Verdict};

impl AuditReport {
    /// Counts of verdicts and severities.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for case in &self.cases {
            totals.add(case);
        }
        totals
    }

    /// Whether the audit could run and no finding fails it.
    pub fn passed(&self) -> bool {
        self.exit_code() == 0
    }

    /// The process exit status for this report: 0 no finding fails the run, 1 one does (at
    /// or over `fail_on`, not in the baseline), 3 the audit could not run (the server did not
    /// start or finish its handshake), 130 interrupted.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            EXIT_INTERRUPTED
        } else if self.setup_error.is_some() {
            EXIT_SETUP
        } else if self.cases.iter().any(|case| case.fails) {
            EXIT_FAILED
        } else {
            0
        }
    }

    /// The report as JSON, with its totals, whether it passed and its exit status.
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
            exit: u8,
        }
        let mut json = serde_json::to_string_pretty(&WithTotals {
            report: self,
            totals: self.totals(),
            passed: self.passed(),
            exit: self.exit_code(),
        })?;
        json.push('\n');
        Ok(json)
    }

    /// The report as a table at most 100 columns wide: a header, one block per
    /// category, totals. Each case's first column is `pass` or its worst severity, marked `!`
    /// when it fails the run and `=` when the baseline had all its findings.
    pub fn table(&self) -> String {
        let mut out = String::new();
        match &self.url {
            Some(url) => push_line(&mut out, &format!("airlock audit --url {url}")),
            None => push_line(
                &mut out,
                &format!("airlock audit -- {}", self.command.join(" ")),
            ),
        }
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
                "limits:  {}, {} ms per case{}",
                if self.url.is_some() {
                    "memory not watched (the server is not the audit's process)".to_owned()
                } else {
                    format!("{} MiB peak RSS of the process tree", self.max_memory_mib)
                },
                self.case_timeout_ms,
                if self.quick {
                    " (quick: slow cases left out)"
                } else {
                    ""
                }
            ),
        );
        push_line(
            &mut out,
            &format!(
                "fails on: {}{}",
                fail_on_words(self.fail_on),
                if self.baselined {
                    "; findings in the baseline do not"
                } else {
                    ""
                }
            ),
        );
        if let Some(error) = &self.setup_error {
            push_line(&mut out, &format!("could not audit: {error}"));
        }
        if let Some(stderr) = &self.setup_stderr {
            push_line(&mut out, "the server's stderr ended with:");
            for line in stderr.lines() {
                push_line(&mut out, &format!("  | {line}"));
            }
        }
        let id_width = self
            .cases
            .iter()
            .map(|case| case.id.chars().count())
            .max()
            .unwrap_or(0)
            .min(MAX_ID_COLUMN);
        if !self.cases.is_empty() {
            push_line(&mut out, "");
            push_line(
                &mut out,
                &format!(
                    "  {:<8} {:<id_width$}  {:>8} {:>9}  {}",
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
                totals.add(case);
                out.push_str(&case_row(case, id_width));
            }
            push_line(&mut out, &format!("  {}", totals.describe()));
        }
        push_line(&mut out, "");
        let totals = self.totals();
        push_line(
            &mut out,
            &fit(&format!("total: {}", totals.describe()), TABLE_WIDTH),
        );
        let mut last = format!(
            "{} in {:.1} s: {}",
            match totals.failing {
                1 => "1 case fails the run".to_owned(),
                many => format!("{many} cases fail the run"),
            },
            ms_to_secs(self.duration_ms),
            match self.exit_code() {
                0 => "exit 0".to_owned(),
                code => format!("exit {code}"),
            }
        );
        if totals.baselined > 0 {
            last.push_str(&format!(" ({} findings in the baseline)", totals.baselined));
        }
        if self.interrupted {
            last.push_str(" (interrupted)");
        }
        push_line(&mut out, &last);
        out
    }
}

/// `high or worse`, `nothing (--fail-on never)`.
fn fail_on_words(fail_on: FailOn) -> String {
    match fail_on {
        FailOn::Level(Severity::Critical) => "critical findings".to_owned(),
        FailOn::Level(level) => format!("{} findings or worse", level.name()),
        FailOn::Never => "nothing (--fail-on never)".to_owned(),
    }
}

/// One case as a row, and its findings under it, each at most [`TABLE_WIDTH`] columns.
fn case_row(case: &CaseReport, id_width: usize) -> String {
    let mut row = String::new();
    let answer = case.answer_us.map_or_else(|| "—".to_owned(), format_micros);
    let all_baselined = case.severity.is_some()
        && (case.answer_severity.is_none() || case.answer_baselined)
        && case.findings.iter().all(|finding| finding.baselined);
    let mark = if case.fails {
        "!"
    } else if all_baselined {
        "="
    } else {
        " "
    };
    let level = case.severity.map_or("pass", Severity::name);
    let id = fit(&case.id, id_width);
    let start = format!(
        "{mark} {level:<8} {id:<id_width$}  {answer:>8} {:>9}  ",
        format_kib(case.peak_rss_kib),
    );
    push_wrapped(&mut row, &start, &case.detail, usize::MAX);
    if let Some(evidence) = &case.evidence {
        push_wrapped(
            &mut row,
            "             came back: ",
            evidence,
            MAX_EVIDENCE_LINES,
        );
    }
    for finding in &case.findings {
        let times = if finding.count > 1 {
            format!(" (×{})", finding.count)
        } else {
            String::new()
        };
        let mark = if finding.baselined { "=" } else { " " };
        let start = format!("  {mark} {:<8} ", finding.severity.name());
        push_wrapped(
            &mut row,
            &start,
            &format!("{}{times}", finding.text),
            usize::MAX,
        );
        if let Some(evidence) = &finding.evidence {
            push_wrapped(
                &mut row,
                "             came back: ",
                evidence,
                MAX_EVIDENCE_LINES,
            );
        }
    }
    row
}

/// `start`, then `text` wrapped to [`TABLE_WIDTH`] columns in at most `max_lines` lines, the
/// continuation lines indented under the text's first character (or by a few columns when
/// that leaves too little room). Lines break between words; a word wider than a line breaks
/// between characters, never inside an escape (`\u{1b}`). What does not fit ends in `…`.
fn push_wrapped(out: &mut String, start: &str, text: &str, max_lines: usize) {
    let start_width = start.chars().count();
    let indent = if TABLE_WIDTH.saturating_sub(start_width) >= MIN_WRAP_WIDTH {
        start_width
    } else {
        CONTINUATION_INDENT
    };
    let first_width = TABLE_WIDTH.saturating_sub(start_width).max(1);
    let rest_width = TABLE_WIDTH.saturating_sub(indent).max(1);
    let lines = wrap(text, first_width, rest_width);
    let shown = lines.len().min(max_lines.max(1));
    for (index, line) in lines.iter().take(shown).enumerate() {
        let mut line = line.clone();
        if index.saturating_add(1) == shown && shown < lines.len() {
            line = fit(
                &format!("{line}…"),
                if index == 0 { first_width } else { rest_width },
            );
        }
        if index == 0 {
            push_line(out, &format!("{start}{line}"));
        } else {
            push_line(out, &format!("{}{line}", " ".repeat(indent)));
        }
    }
    if lines.is_empty() {
        push_line(out, start);
    }
}

/// `text` in lines of at most `first` characters, then `rest`, broken between words where it
/// can be and never inside an escape.
fn wrap(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut width = first;
    let mut line_chars = 0_usize;
    for word in text.split(' ') {
        let word_chars = word.chars().count();
        let needed = if line.is_empty() {
            word_chars
        } else {
            word_chars.saturating_add(1)
        };
        if line_chars.saturating_add(needed) <= width {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
            line_chars = line_chars.saturating_add(needed);
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
            line_chars = 0;
            width = rest;
        }
        for atom in atoms(word) {
            let atom_chars = atom.chars().count();
            if line_chars.saturating_add(atom_chars) > width && !line.is_empty() {
                lines.push(std::mem::take(&mut line));
                line_chars = 0;
                width = rest;
            }
            line.push_str(atom);
            line_chars = line_chars.saturating_add(atom_chars);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `word` split into characters, an escape `\u{…}` kept as one piece.
fn atoms(word: &str) -> Vec<&str> {
    let mut atoms = Vec::new();
    let mut rest = word;
    while let Some(c) = rest.chars().next() {
        let len = if rest.starts_with("\\u{") {
            rest.find('}')
                .map_or(c.len_utf8(), |end| end.saturating_add(1))
        } else {
            c.len_utf8()
        };
        let Some((atom, after)) = rest.split_at_checked(len) else {
            break;
        };
        atoms.push(atom);
        rest = after;
    }
    atoms
}

/// `text` cut to `width` characters, ending in `…` when cut.
pub(crate) fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

impl Totals {
    fn add(&mut self, case: &CaseReport) {
        self.cases = self.cases.saturating_add(1);
        match case.verdict {
            Verdict::Pass => self.pass = self.pass.saturating_add(1),
            Verdict::Note => self.note = self.note.saturating_add(1),
            Verdict::Fail => self.fail = self.fail.saturating_add(1),
        }
        let slot = match case.severity {
            None => None,
            Some(Severity::Critical) => Some(&mut self.critical),
            Some(Severity::High) => Some(&mut self.high),
            Some(Severity::Medium) => Some(&mut self.medium),
            Some(Severity::Low) => Some(&mut self.low),
            Some(Severity::Info) => Some(&mut self.info),
        };
        if let Some(slot) = slot {
            *slot = slot.saturating_add(1);
        }
        if case.fails {
            self.failing = self.failing.saturating_add(1);
        }
        let baselined = case
            .findings
            .iter()
            .filter(|finding| finding.baselined)
            .count();
        self.baselined = self
            .baselined
            .saturating_add(u64::try_from(baselined).unwrap_or(u64::MAX))
            .saturating_add(u64::from(case.answer_baselined));
    }

    /// `12 cases: 9 pass; worst finding 1 critical, 0 high, 1 medium, 1 low, 0 info`.
    pub fn describe(&self) -> String {
        format!(
            "{} cases: {} pass; worst finding {} critical, {} high, {} medium, {} low, {} info",
            self.cases,
            self.cases
                .saturating_sub(self.critical)
                .saturating_sub(self.high)
                .saturating_sub(self.medium)
                .saturating_sub(self.low)
                .saturating_sub(self.info),
            self.critical,
            self.high,
            self.medium,
            self.low,
            self.info
        )
    }
}

/// `time` as RFC 3339 in UTC, to the second (`1970-01-01T00:00:00Z` for a time before it).
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let secs = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let days = secs.checked_div(86_400).unwrap_or(0);
    let of_day = secs.checked_rem(86_400).unwrap_or(0);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day.checked_div(3600).unwrap_or(0),
        of_day
            .checked_rem(3600)
            .and_then(|rest| rest.checked_div(60))
            .unwrap_or(0),
        of_day.checked_rem(60).unwrap_or(0)
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`,
/// for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days.saturating_add(719_468);
    let era = z.checked_div(146_097).unwrap_or(0);
    let doe = z.saturating_sub(era.saturating_mul(146_097));
    let yoe = doe
        .saturating_sub(doe.checked_div(1460).unwrap_or(0))
        .saturating_add(doe.checked_div(36_524).unwrap_or(0))
        .saturating_sub(doe.checked_div(146_096).unwrap_or(0))
        .checked_div(365)
        .unwrap_or(0);
    let doy = doe.saturating_sub(
        yoe.saturating_mul(365)
            .saturating_add(yoe.checked_div(4).unwrap_or(0))
            .saturating_sub(yoe.checked_div(100).unwrap_or(0)),
    );
    let mp = doy
        .saturating_mul(5)
        .saturating_add(2)
        .checked_div(153)
        .unwrap_or(0);
    let day = doy
        .saturating_sub(
            mp.saturating_mul(153)
                .saturating_add(2)
                .checked_div(5)
                .unwrap_or(0),
        )
        .saturating_add(1);
    let month = if mp < 10 {
        mp.saturating_add(3)
    } else {
        mp.saturating_sub(9)
    };
    let year = yoe
        .saturating_add(era.saturating_mul(400))
        .saturating_add(u64::from(month <= 2));
    (year, month, day)
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

/// Widest table row, in characters.
pub(crate) const TABLE_WIDTH: usize = 100;

/// Lines of evidence the table shows (the JSON, SARIF and JUnit reports have all of it).
const MAX_EVIDENCE_LINES: usize = 2;

/// Narrowest room for wrapped text after its start; less, and continuation lines are
/// indented by [`CONTINUATION_INDENT`] instead.
const MIN_WRAP_WIDTH: usize = 30;

/// Indent of continuation lines when the start leaves too little room.
const CONTINUATION_INDENT: usize = 13;

/// Widest case id column (longer ids are cut; the JSON has them whole).
const MAX_ID_COLUMN: usize = 34;

/// Exit status when a case failed.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit status when the audit could not run.
pub(crate) const EXIT_SETUP: u8 = 3;
/// Exit status when the audit was interrupted.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

#[cfg(test)]
mod tests {
    use super::super::{Baseline, FindingReport, ServerFacts};
    use super::*;

    fn case(id: &str, category: Category, severity: Option<Severity>) -> CaseReport {
        let verdict = match severity {
            None => Verdict::Pass,
            Some(level) if level >= Severity::Medium => Verdict::Fail,
            Some(_) => Verdict::Note,
        };
        CaseReport {
            id: id.to_owned(),
            category: category.name().to_owned(),
            sends: "something".to_owned(),
            expects: "something else".to_owned(),
            verdict,
            severity,
            fails: false,
            detail: "error -32700, id null".to_owned(),
            answer_severity: severity,
            answer_baselined: false,
            findings: Vec::new(),
            answer_us: Some(420),
            duration_ms: 12,
            peak_rss_kib: 8 * 1024 + 307,
            exit: None,
            stderr_tail: None,
            evidence: None,
        }
    }

    fn report() -> AuditReport {
        let mut report = AuditReport {
            version: "0.1.0".to_owned(),
            started_at: "2026-01-31T12:00:00Z".to_owned(),
            command: vec!["srv".to_owned(), "mcp".to_owned()],
            url: None,
            artifact: "srv".to_owned(),
            server: Some(ServerFacts {
                name: "srv".to_owned(),
                version: "1.0".to_owned(),
                protocol_version: "2025-11-25".to_owned(),
                tools: 3,
                tool_names: vec!["stats".to_owned(), "a".to_owned(), "b".to_owned()],
                probe: "stats {\"text\":\"a\"}".to_owned(),
                declared_timeout_ms: None,
                declared_by: None,
            }),
            setup_error: None,
            setup_stderr: None,
            fail_on: FailOn::DEFAULT,
            baselined: false,
            max_memory_mib: 256,
            case_timeout_ms: 10_000,
            quick: true,
            duration_ms: 1500,
            interrupted: false,
            catalog_digest: None,
            catalog: None,
            cases: vec![
                case("json.a", Category::Json, None),
                case("json.b", Category::Json, Some(Severity::Low)),
                case("flood.c", Category::Flood, None),
            ],
        };
        reweigh(&mut report, None);
        report
    }

    fn reweigh(report: &mut AuditReport, baseline: Option<&Baseline>) {
        report.baselined = baseline.is_some();
        for case in &mut report.cases {
            case.weigh(report.fail_on, baseline);
        }
    }

    fn hang() -> FindingReport {
        FindingReport {
            kind: "hang".to_owned(),
            severity: Severity::Critical,
            text: "hangs: no answer to a ping sent after the input".to_owned(),
            count: 1,
            baselined: false,
            evidence: None,
        }
    }

    #[test]
    fn the_table_groups_cases_by_category_with_totals() {
        let table = report().table();
        let expected = "\
airlock audit -- srv mcp
server:  srv 1.0 (protocol 2025-11-25), 3 tools; calls go to stats {\"text\":\"a\"}
limits:  256 MiB peak RSS of the process tree, 10000 ms per case (quick: slow cases left out)
fails on: high findings or worse

           case       answer  peak RSS  what came back

malformed JSON (json)
  pass     json.a     0.4 ms   8.3 MiB  error -32700, id null
  low      json.b     0.4 ms   8.3 MiB  error -32700, id null
  2 cases: 1 pass; worst finding 0 critical, 0 high, 0 medium, 1 low, 0 info

floods and stream ends (flood)
  pass     flood.c    0.4 ms   8.3 MiB  error -32700, id null
  1 cases: 1 pass; worst finding 0 critical, 0 high, 0 medium, 0 low, 0 info

total: 3 cases: 2 pass; worst finding 0 critical, 0 high, 0 medium, 1 low, 0 info
0 cases fail the run in 1.5 s: exit 0
";
        assert_eq!(table, expected);
    }

    #[test]
    fn every_table_row_fits_100_columns() {
        let mut report = report();
        let long = "x".repeat(300);
        report.cases.push(CaseReport {
            detail: long.clone(),
            findings: vec![FindingReport {
                text: long,
                ..hang()
            }],
            ..case(
                "envelope.a-case-id-far-longer-than-any-in-the-catalogue",
                Category::Envelope,
                Some(Severity::Critical),
            )
        });
        reweigh(&mut report, None);
        let table = report.table();
        for line in table.lines() {
            assert!(line.chars().count() <= TABLE_WIDTH, "{line}");
        }
        assert!(table.contains("! critical"), "{table}");
        assert!(table.contains("…"), "{table}");
    }

    /// Issue 41: the "what came back" column was cut at 100 columns, mid-word or mid-escape.
    #[test]
    fn a_long_detail_wraps_whole_and_evidence_is_shown_under_its_row() {
        let mut report = report();
        let detail = "error -32000, id null: not an answer a correct server gives; the input \
                      was not written whole (the server stopped reading it); a 2000000-byte \
                      reply: the server echoes \\u{1b}\\u{1b}\\u{1b} what the peer sent";
        let evidence = format!(
            "{{\"jsonrpc\":\"2.0\",\"x\":\"{}\\u{{1b}}\"}}",
            "é".repeat(200)
        );
        report.cases.push(CaseReport {
            detail: detail.to_owned(),
            evidence: Some(evidence.clone()),
            findings: vec![FindingReport {
                evidence: Some("HTTP 500: boom".to_owned()),
                ..hang()
            }],
            ..case("json.nan", Category::Json, Some(Severity::Medium))
        });
        reweigh(&mut report, None);
        let table = report.table();
        for line in table.lines() {
            assert!(line.chars().count() <= TABLE_WIDTH, "{line}");
        }
        let words: Vec<&str> = table
            .lines()
            .skip_while(|line| !line.contains("json.nan"))
            .take_while(|line| !line.contains("came back"))
            .flat_map(|line| line.split_whitespace())
            .collect();
        let detail_words: Vec<&str> = detail.split_whitespace().collect();
        assert!(
            words
                .windows(detail_words.len())
                .any(|window| window == detail_words),
            "the detail is not whole:\n{table}"
        );
        let shown: Vec<&str> = table
            .lines()
            .filter(|line| {
                line.trim_start().starts_with("came back: ")
                    || line.starts_with("                         ")
            })
            .collect();
        assert!(
            shown
                .iter()
                .any(|line| line.contains(r#"{"jsonrpc":"2.0","x":"ééé"#)),
            "{table}"
        );
        assert!(
            table.contains("             came back: HTTP 500: boom\n"),
            "{table}"
        );
        // Two lines of evidence, the second ending in `…`.
        let evidence_lines: Vec<&str> = table
            .lines()
            .skip_while(|line| !line.contains("came back: {"))
            .take(2)
            .collect();
        assert!(evidence_lines[1].ends_with('…'), "{table}");
    }

    #[test]
    fn wrapping_breaks_between_words_and_never_inside_an_escape() {
        assert_eq!(wrap("aa bb cc", 5, 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh", 3, 3), vec!["abc", "def", "gh"]);
        assert_eq!(wrap("ab\\u{1b}cd", 4, 8), vec!["ab", "\\u{1b}cd"]);
        assert_eq!(wrap("ééé", 2, 2), vec!["éé", "é"]);
        assert!(wrap("", 5, 5).is_empty());
    }

    #[test]
    fn exit_status_follows_fail_on_and_the_baseline() {
        let mut report = report();
        assert!(report.passed());
        assert_eq!(report.exit_code(), 0);
        report
            .cases
            .push(case("batch.x", Category::Batch, Some(Severity::Medium)));
        reweigh(&mut report, None);
        assert_eq!(report.exit_code(), 0, "medium does not fail at the default");
        report.fail_on = FailOn::Level(Severity::Medium);
        reweigh(&mut report, None);
        assert!(!report.passed());
        assert_eq!(report.exit_code(), EXIT_FAILED);
        report.fail_on = FailOn::Level(Severity::Low);
        reweigh(&mut report, None);
        assert_eq!(report.totals().failing, 2, "json.b's low note fails too");
        report.fail_on = FailOn::Never;
        reweigh(&mut report, None);
        assert_eq!(report.exit_code(), 0);
        report.fail_on = FailOn::DEFAULT;
        report.cases.push(CaseReport {
            findings: vec![hang()],
            ..case("flood.y", Category::Flood, None)
        });
        reweigh(&mut report, None);
        assert_eq!(report.exit_code(), EXIT_FAILED, "a hang fails by default");
        let baseline = Baseline::of(&report);
        reweigh(&mut report, Some(&baseline));
        assert_eq!(report.exit_code(), 0, "every finding is in the baseline");
        assert_eq!(report.totals().baselined, 3);
        report.setup_error = Some("did not start".to_owned());
        assert_eq!(report.exit_code(), EXIT_SETUP);
        report.interrupted = true;
        assert_eq!(report.exit_code(), EXIT_INTERRUPTED);
    }

    #[test]
    fn the_baseline_suppresses_known_findings_only() {
        let mut earlier = report();
        earlier.cases.push(CaseReport {
            findings: vec![hang()],
            ..case("flood.y", Category::Flood, None)
        });
        let baseline = Baseline::of(&earlier);
        let mut now = report();
        now.cases.push(CaseReport {
            findings: vec![hang()],
            ..case("flood.y", Category::Flood, None)
        });
        // New: a case that passed before; worse: json.b went from low to high.
        now.cases
            .push(case("flood.z", Category::Flood, Some(Severity::High)));
        now.cases[1].answer_severity = Some(Severity::High);
        now.cases[1].severity = Some(Severity::High);
        reweigh(&mut now, Some(&baseline));
        let failing: Vec<&str> = now
            .cases
            .iter()
            .filter(|case| case.fails)
            .map(|case| case.id.as_str())
            .collect();
        assert_eq!(failing, vec!["json.b", "flood.z"]);
        assert!(now.cases[3].findings[0].baselined);
        assert!(!now.cases[1].answer_baselined);
        assert!(now.table().contains("= critical"), "{}", now.table());
    }

    #[test]
    fn findings_are_listed_under_their_case() {
        let mut report = report();
        report.cases.truncate(1);
        report.cases[0].findings.push(FindingReport {
            kind: "invalid-line".to_owned(),
            severity: Severity::High,
            text: "stdout line that is not one JSON-RPC message: not JSON".to_owned(),
            count: 2,
            baselined: false,
            evidence: None,
        });
        reweigh(&mut report, None);
        assert!(report.table().contains(
            "error -32700, id null\n    high     stdout line that is not one JSON-RPC message: not JSON (×2)\n"
        ), "{}", report.table());
    }

    #[test]
    fn json_has_every_case_with_its_severity_and_the_run_facts() {
        let json: serde_json::Value = serde_json::from_str(&report().to_json().unwrap()).unwrap();
        assert_eq!(json["cases"][1]["id"], "json.b");
        assert_eq!(json["cases"][1]["verdict"], "note");
        assert_eq!(json["cases"][1]["severity"], "low");
        assert_eq!(json["cases"][0]["severity"], serde_json::Value::Null);
        assert_eq!(json["cases"][1]["peak_rss_kib"], 8499);
        assert_eq!(json["totals"]["pass"], 2);
        assert_eq!(json["totals"]["low"], 1);
        assert_eq!(json["passed"], true);
        assert_eq!(json["exit"], 0);
        assert_eq!(json["fail_on"], "high");
        assert_eq!(json["version"], "0.1.0");
        assert_eq!(json["started_at"], "2026-01-31T12:00:00Z");
        assert_eq!(json["server"]["tools"], 3);
        assert_eq!(json["server"]["tool_names"][0], "stats");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let at = |secs: u64| rfc3339(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_769_860_799), "2026-01-31T11:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
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
