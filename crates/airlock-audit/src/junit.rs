//! The report as JUnit XML, for CI test views: a test suite per category, a test case per
//! audit case, a `<failure>` for each case that fails the run (a finding at or over
//! `--fail-on`, not in the baseline), the other findings in `<system-out>`.
//!
//! Everything written is escaped for XML 1.0 here: markup characters become entities, and
//! characters XML cannot carry at all (controls other than tab and newline, U+FFFE, U+FFFF)
//! become `\u{…}` text, so a hostile server's text cannot break the document.

use super::{AuditReport, CaseReport, Category};

impl AuditReport {
    /// The report as a JUnit XML document.
    pub fn to_junit(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let totals = self.totals();
        let errors = u64::from(self.setup_error.is_some());
        out.push_str(&format!("<testsuites name=\"airlock audit\" tests=\"{}\" failures=\"{}\" errors=\"{errors}\" time=\"{}\" timestamp=\"{}\">\n",
            totals.cases.saturating_add(errors),
            totals.failing,
            seconds(self.duration_ms),
            xml(&self.started_at)));
        if let Some(error) = &self.setup_error {
            let mut text = error.clone();
            if let Some(stderr) = &self.setup_stderr {
                text.push_str("\nthe server's stderr ended with:\n");
                text.push_str(stderr);
            }
            out.push_str(&format!("  <testsuite name=\"setup\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0\">\n    <testcase classname=\"airlock-audit.setup\" name=\"handshake\" time=\"0\">\n      <error type=\"setup\" message=\"{}\">{}</error>\n    </testcase>\n  </testsuite>\n",
                xml(error),
                xml(&text)));
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
            let failing = cases.iter().filter(|case| case.fails).count();
            let time: u64 = cases
                .iter()
                .fold(0, |sum, case| sum.saturating_add(case.duration_ms));
            out.push_str(&format!("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failing}\" errors=\"0\" skipped=\"0\" time=\"{}\">\n",
                category.name(),
                cases.len(),
                seconds(time)));
            for case in cases {
                testcase(&mut out, case);
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }
}

fn testcase(out: &mut String, case: &CaseReport) {
    out.push_str(&format!(
        "    <testcase classname=\"airlock-audit.{}\" name=\"{}\" time=\"{}\"",
        xml(&case.category),
        xml(&case.id),
        seconds(case.duration_ms)
    ));
    if case.severity.is_none() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    let mut text = String::new();
    if let Some(severity) = case.answer_severity {
        let old = if case.answer_baselined {
            " (in the baseline)"
        } else {
            ""
        };
        text.push_str(&format!("{}: {}{old}\n", severity.name(), case.detail));
        if let Some(evidence) = &case.evidence {
            text.push_str(&format!("  what came back: {evidence}\n"));
        }
    }
    for finding in &case.findings {
        let old = if finding.baselined {
            " (in the baseline)"
        } else {
            ""
        };
        text.push_str(&format!(
            "{}: {} [{}, ×{}]{old}\n",
            finding.severity.name(),
            finding.text,
            finding.kind,
            finding.count
        ));
        if let Some(evidence) = &finding.evidence {
            text.push_str(&format!("  what came back: {evidence}\n"));
        }
    }
    text.push_str(&format!(
        "sends: {}\nexpects: {}\n",
        case.sends, case.expects
    ));
    if let Some(tail) = &case.stderr_tail {
        text.push_str(&format!("the server's stderr ended with:\n{tail}"));
    }
    if case.fails {
        let severity = case.severity.map_or("", |severity| severity.name());
        out.push_str(&format!(
            "      <failure type=\"{severity}\" message=\"{}\">{}</failure>\n",
            xml(&case.detail),
            xml(&text)
        ));
    } else {
        out.push_str(&format!("      <system-out>{}</system-out>\n", xml(&text)));
    }
    out.push_str("    </testcase>\n");
}

/// Milliseconds as seconds with three decimals.
fn seconds(ms: u64) -> String {
    format!(
        "{}.{:03}",
        ms.checked_div(1000).unwrap_or(0),
        ms.checked_rem(1000).unwrap_or(0)
    )
}

/// `text` escaped for an XML 1.0 attribute value or element content.
pub(crate) fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            c if c < ' ' || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_characters_xml_cannot_carry_are_escaped() {
        assert_eq!(
            xml("a<b>&\"c\"'\u{1b}\r\u{fffe}\n"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;\\u{1b}\\u{d}\\u{fffe}\n"
        );
        assert_eq!(seconds(1234), "1.234");
        assert_eq!(seconds(5), "0.005");
    }
}
