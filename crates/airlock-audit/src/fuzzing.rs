//! Fuzzing entry point of the audit: any server output, judged as a case judges it.
//!
//! Built only for tests and with `--cfg fuzzing` (cargo-fuzz sets it), like
//! `airlock::fuzzing`. It trusts nothing in its input, which stands for what a hostile server
//! under audit writes: its stdout lines, its stderr and how it exited. A broken invariant
//! panics: that is how a fuzzer reports it.
//!
//! What runs is the audit's own code: `judge::classify` and `judge::leaks_trace` on every
//! line, `session::screen` and `session::Findings` for the general findings (with their cap),
//! `cases::judge_line` with a catalogue case's arms and sent id, `case_report` and `weigh` for
//! severities, then the JSON, SARIF, JUnit and table renderings, a baseline of the result, and
//! `probe::choose` and `probe::aims` on any tool list in the output. Only the reading of the
//! pipes is replaced (the lines come from the input, not from a process).

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cases::{self, Body, Case};
use crate::evidence::{Evidence, Redactor};
use crate::judge::{Arm, Id, IdIs, Reply, When, classify, leaks_trace, shown_lines};
use crate::probe;
use crate::session::{
    Collected, Findings, MAX_DISTINCT_FINDINGS, MAX_KEPT_REPLIES, OTHER_FINDINGS, Screened, screen,
};
use crate::severity::{FailOn, Severity};
use crate::target::{Exit, STDERR_TAIL_BYTES};
use crate::{AuditReport, Baseline, CaseReport, Options, Verdict, case_report};

/// Judge: any bytes as a server's answer to one line case. The input is four header bytes
/// (the case, the run's `--fail-on` and exit, the exit value, which correct answer to check),
/// then stdout, optionally followed by `\0\0` and stderr.
///
/// Oracles: nothing panics; the same input gives the same report twice; a case keeps at most
/// [`MAX_DISTINCT_FINDINGS`] different texts (then one shared text per kind); no text is over
/// [`MAX_TEXT_BYTES`] nor holds more than [`MAX_RAW_BYTES`] contiguous bytes of what the server
/// wrote; the JSON and SARIF parse back; a baseline of the report makes it pass; every probe
/// the audit would build from a listed tool calls it in one valid JSON line; and the correct
/// answer built from the case's pass arm is judged a pass with no finding (each distinct one
/// once per process).
pub fn judge(data: &[u8]) {
    let Some((header, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let [which, flags, exit_value, answer] = *header;
    let cases = line_cases();
    let index = pick(which, cases.len());
    let Some(case) = cases.get(index) else {
        return;
    };
    let (stdout, stderr) = split_stderr(rest);
    let run = Run {
        fail_on: fail_on(flags),
        exit: exit(flags, exit_value),
        stderr,
    };
    let first = judged(case, stdout, &run);
    same(&first, &judged(case, stdout, &run));
    oracles(&first, rest);
    probes(stdout);
    if first_time(index, case, answer) {
        correct_answer_passes(case, answer);
    }
}

/// Whether the correct answer `selector` picks for the `index`th case is met for the first
/// time in this process. That answer depends on nothing else of the input, and judging it
/// costs as much as judging the input: each distinct one is judged once, not per input.
fn first_time(index: usize, case: &LineCase, selector: u8) -> bool {
    /// Each case's index with an answer judged already.
    type Seen = Option<HashSet<(usize, Vec<u8>)>>;
    static SEEN: std::sync::Mutex<Seen> = std::sync::Mutex::new(None);
    let Some(answer) = correct_answer(case, selector) else {
        return false;
    };
    match SEEN.lock() {
        Ok(mut seen) => seen.get_or_insert_default().insert((index, answer)),
        // A panic while the set was held was a finding already; judge every answer again.
        Err(_) => true,
    }
}

/// Longest finding text or case detail: three replies described (each at most 24 shown id
/// characters of 8 bytes, the longest escape, plus a few words), the longest reason an arm
/// gives (under 300 bytes, see the tests) and the fixed suffixes `judge_line` adds.
pub const MAX_TEXT_BYTES: usize = 2048;

/// Most contiguous bytes of one server line a finding text or detail may hold: the only
/// server text they carry is an id, shown with at most 24 characters (96 bytes) and its two
/// quotes; 128 leaves room for a word of fixed text either side matching by chance. A whole
/// echoed line is longer.
pub const MAX_RAW_BYTES: usize = 128;

/// The catalogue's cases judged by arms, with the id their input carries.
struct LineCase {
    case: Case,
    arms: &'static [Arm],
    sent: Option<Id>,
    echo_check: bool,
}

/// How the run around the case went: the operator's `--fail-on`, and the server's exit and
/// stderr.
struct Run<'a> {
    fail_on: FailOn,
    exit: Option<Exit>,
    stderr: &'a [u8],
}

/// One judging of the input.
struct Judged {
    case: CaseReport,
    report: AuditReport,
    /// JSON, SARIF, JUnit and the table.
    rendered: [String; 4],
}

fn line_cases() -> &'static [LineCase] {
    static CASES: OnceLock<Vec<LineCase>> = OnceLock::new();
    CASES.get_or_init(|| {
        let none = probe::Probe::none();
        cases::catalogue()
            .into_iter()
            .filter_map(|case| match &case.body {
                Body::Line {
                    input,
                    arms,
                    echo_check,
                    ..
                } => {
                    let (arms, echo_check) = (*arms, *echo_check);
                    let sent = input(&none).id.as_deref().and_then(Id::from_json);
                    Some(LineCase {
                        case,
                        arms,
                        sent,
                        echo_check,
                    })
                }
                Body::Custom { .. }
                | Body::Exposure { .. }
                | Body::Asking { .. }
                | Body::Metadata { .. } => None,
            })
            .collect()
    })
}

fn split_stderr(rest: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memmem::find(rest, b"\0\0") {
        Some(at) => {
            let (stdout, stderr) = rest.split_at(at);
            (stdout, stderr.get(2..).unwrap_or_default())
        }
        None => (rest, &[]),
    }
}

fn fail_on(flags: u8) -> FailOn {
    match flags & 0b111 {
        0 => FailOn::Never,
        level => Severity::ALL
            .get(usize::from(level).saturating_sub(1))
            .copied()
            .map_or(FailOn::DEFAULT, FailOn::Level),
    }
}

fn exit(flags: u8, value: u8) -> Option<Exit> {
    match (flags & 0b1000 != 0, flags & 0b1_0000 != 0) {
        (false, _) => None,
        (true, false) => Some(Exit::Code(i32::from(value))),
        (true, true) => Some(Exit::Signal(i32::from(value))),
    }
}

/// The case's marker ping: the audit's third request after a handshake (initialize, the
/// barrier ping), its first without one.
fn marker(case: &Case) -> &'static str {
    if case.handshake() {
        "audit-3"
    } else {
        "audit-1"
    }
}

/// What `Session::collect` and `run_case` make of `stdout`, a server's whole output after the
/// input (stdout then closes, so no hang is recorded).
fn judged(line_case: &LineCase, stdout: &[u8], run: &Run<'_>) -> Judged {
    let case = &line_case.case;
    let marker = Id::Str(marker(case).to_owned());
    let expects_reply = line_case.sent.is_some();
    let mut findings = Findings::default();
    let mut collected = Collected {
        written: true,
        ..Collected::default()
    };
    let (mut marked, mut done) = (false, false);
    let mut first_evidence: Option<Evidence> = None;
    for (line, terminated) in lines(stdout) {
        let class = if terminated {
            classify(line)
        } else {
            crate::judge::Line::Invalid("a last line without its newline")
        };
        let evidence = Evidence::of(line);
        if first_evidence.is_none() {
            first_evidence = Some(evidence.clone());
        }
        let Screened::Reply(reply) = screen(&mut findings, class, leaks_trace(line), &evidence)
        else {
            continue;
        };
        if done {
            findings.unexpected(&reply);
            continue;
        }
        if matches!(&reply, Reply::Single(response) if response.id == marker) {
            marked = true;
            done = !expects_reply || !collected.replies.is_empty();
            continue;
        }
        collected.answer.get_or_insert(Duration::ZERO);
        collected.largest_reply_bytes = collected.largest_reply_bytes.max(line.len());
        if collected.replies.len() < MAX_KEPT_REPLIES {
            collected.replies.push(reply);
        } else {
            findings.find(
                crate::severity::Kind::TooManyReplies,
                "more than 1,000 replies to one input",
            );
        }
        done = marked;
    }
    let judgement = cases::judge_line(
        &collected,
        line_case.arms,
        line_case.sent.as_ref(),
        line_case.echo_check,
    );
    let mut report = case_report(
        case.id,
        case.category,
        case.sends,
        case.expects,
        judgement,
        findings.as_slice(),
        0,
    );
    report.show_evidence(
        findings.as_slice(),
        first_evidence.as_ref(),
        &Redactor::default(),
    );
    report.exit = run.exit.map(Exit::describe);
    if report.verdict == Verdict::Fail && !run.stderr.is_empty() {
        // The last bytes, as the stderr reader keeps them.
        let kept = run
            .stderr
            .len()
            .checked_sub(STDERR_TAIL_BYTES)
            .and_then(|start| run.stderr.get(start..))
            .unwrap_or(run.stderr);
        report.stderr_tail = Some(shown_lines(
            &String::from_utf8_lossy(kept),
            STDERR_TAIL_BYTES,
        ));
    }
    report.weigh(run.fail_on, None);
    let mut options = Options::new(vec!["server".into()]);
    options.fail_on = run.fail_on;
    let mut audit = crate::blank_report(&options);
    audit.started_at = "2026-01-01T00:00:00Z".to_owned();
    audit.cases.push(report.clone());
    let rendered = [
        audit
            .to_json()
            .unwrap_or_else(|_| fail("the JSON report does not serialise")),
        audit
            .to_sarif()
            .unwrap_or_else(|_| fail("the SARIF report does not serialise")),
        audit.to_junit(),
        audit.table(),
    ];
    Judged {
        case: report,
        report: audit,
        rendered,
    }
}

/// The determinism oracle: two judgings of one input render the same.
fn same(first: &Judged, again: &Judged) {
    assert_eq!(
        first.rendered, again.rendered,
        "the same output judged twice differs"
    );
}

/// stdout's lines without their `\n`, and whether each had one.
fn lines(stdout: &[u8]) -> impl Iterator<Item = (&[u8], bool)> {
    let mut pieces: Vec<&[u8]> = stdout.split(|byte| *byte == b'\n').collect();
    // The piece after the last newline: the reader reports it only if it holds bytes.
    let last = pieces.pop().filter(|last| !last.is_empty());
    pieces
        .into_iter()
        .map(|line| (line, true))
        .chain(last.map(|line| (line, false)))
}

fn oracles(judged: &Judged, output: &[u8]) {
    let case = &judged.case;
    let distinct = case
        .findings
        .iter()
        .filter(|finding| finding.text != OTHER_FINDINGS)
        .count();
    assert!(
        distinct <= MAX_DISTINCT_FINDINGS,
        "{distinct} distinct finding texts"
    );
    let mut shared = HashSet::new();
    for finding in case.findings.iter().filter(|f| f.text == OTHER_FINDINGS) {
        assert!(shared.insert(&finding.kind), "two shared texts of one kind");
    }
    let raw = windows(output);
    for text in case
        .findings
        .iter()
        .map(|finding| finding.text.as_str())
        .chain(std::iter::once(case.detail.as_str()))
    {
        assert!(text.len() <= MAX_TEXT_BYTES, "a {}-byte text", text.len());
        if let Some(echoed) = echoed(text, &raw) {
            fail(&format!("a text holds {echoed:?} of the server's output"));
        }
    }
    for evidence in case
        .findings
        .iter()
        .filter_map(|finding| finding.evidence.as_ref())
        .chain(case.evidence.as_ref())
    {
        // At most the shown bytes, each escaped as at most 6 characters (`\u{1b}`), and `…`.
        let most = crate::evidence::MAX_EVIDENCE_BYTES
            .saturating_mul(6)
            .saturating_add(3);
        assert!(evidence.len() <= most, "a {}-byte evidence", evidence.len());
        assert!(
            !evidence.chars().any(char::is_control),
            "a control character in evidence"
        );
    }
    if let Some(tail) = &case.stderr_tail {
        // At most the kept bytes, each shown as at most 8 characters (`\u{2069}`).
        let most = STDERR_TAIL_BYTES.saturating_mul(8).saturating_add(8);
        assert!(tail.len() <= most, "a {}-byte stderr tail", tail.len());
    }
    let [json, sarif, junit, _table] = &judged.rendered;
    for (format, text) in [("JSON", json), ("SARIF", sarif)] {
        if serde_json::from_str::<Value>(text).is_err() {
            fail(&format!("the {format} report does not parse back"));
        }
    }
    assert!(
        !junit
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "a control character in the JUnit report"
    );
    assert_eq!(
        junit.matches("<testcase ").count(),
        1,
        "one case, one testcase"
    );
    // A baseline of this run (through its JSON, as `--baseline` reads it) makes it pass.
    let baseline =
        Baseline::parse(json.as_bytes()).unwrap_or_else(|_| fail("the JSON report is no baseline"));
    let written = Baseline::of(&judged.report)
        .to_json()
        .unwrap_or_else(|_| fail("the baseline does not serialise"));
    let reread = Baseline::parse(written.as_bytes())
        .unwrap_or_else(|_| fail("a written baseline does not parse back"));
    for baseline in [baseline, reread] {
        let mut again = case.clone();
        again.weigh(FailOn::Level(Severity::Info), Some(&baseline));
        assert!(!again.fails, "a baselined case still fails the run");
        assert!(again.findings.iter().all(|finding| finding.baselined));
        assert_eq!(again.answer_baselined, again.answer_severity.is_some());
    }
}

/// Every run of [`MAX_RAW_BYTES`]` + 1` bytes of the output's lines.
fn windows(output: &[u8]) -> HashSet<&[u8]> {
    output
        .split(|byte| *byte == b'\n')
        .flat_map(|line| line.windows(MAX_RAW_BYTES.saturating_add(1)))
        .collect()
}

/// A run of `text` longer than [`MAX_RAW_BYTES`] that the server wrote, if any.
fn echoed<'t>(text: &'t str, raw: &HashSet<&[u8]>) -> Option<&'t [u8]> {
    text.as_bytes()
        .windows(MAX_RAW_BYTES.saturating_add(1))
        .find(|window| raw.contains(window))
}

/// Every tool list in the output: the probe and aims the audit would build from it call a
/// listed tool in one valid JSON line, and describe themselves briefly.
fn probes(stdout: &[u8]) {
    for (line, _) in lines(stdout) {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(tools) = value.get("result").and_then(|result| result.get("tools")) else {
            continue;
        };
        let chosen = probe::choose(Some(tools), None, None, false);
        let aims = probe::aims(Some(tools), None, false);
        assert!(
            chosen.describe().len() <= 2 * 64 * 8 + 8,
            "a long probe text"
        );
        let call: Value = serde_json::from_slice(&chosen.valid_call("7"))
            .unwrap_or_else(|_| fail("the probe's call is not JSON"));
        assert_eq!(
            call.pointer("/params/name").and_then(Value::as_str),
            Some(chosen.name())
        );
        if let Some(name) = &chosen.tool {
            let listed = tools.as_array().is_some_and(|tools| {
                tools
                    .iter()
                    .any(|tool| tool.get("name").and_then(Value::as_str) == Some(name))
            });
            assert!(listed, "the probe calls a tool nobody listed");
        }
        for aim in &aims {
            assert!(
                aim.base.is_object(),
                "an aim's base arguments are no object"
            );
        }
    }
}

/// The correct answer the `selector`th choice of the case's pass arms describes, with the
/// marker's reply after it, is a pass without findings.
fn correct_answer_passes(line_case: &LineCase, selector: u8) {
    let Some(lines) = correct_answer(line_case, selector) else {
        return;
    };
    let run = Run {
        fail_on: FailOn::Level(Severity::Info),
        exit: None,
        stderr: &[],
    };
    let judged = judged(line_case, &lines, &run);
    assert_eq!(
        (judged.case.verdict, judged.case.findings.len()),
        (Verdict::Pass, 0),
        "{}: a correct answer is not a pass: {} ({:?})",
        line_case.case.id,
        judged.case.detail,
        judged.case.findings
    );
}

/// The stdout of a server giving the correct answer the `selector`th choice of the case's pass
/// arms describes (its code and id), then answering the marker ping; `None` when the case has
/// no pass arm.
fn correct_answer(line_case: &LineCase, selector: u8) -> Option<Vec<u8>> {
    let passes: Vec<&Arm> = line_case
        .arms
        .iter()
        .filter(|arm| arm.verdict == Verdict::Pass)
        .collect();
    let arm = passes.get(pick(selector, passes.len()))?;
    let choice = selector.checked_div(8).unwrap_or(0);
    // Ids as JSON text, written as sent: `1e2` must come back as `1e2`, not as `100.0`.
    let id = |ids: &[IdIs]| -> String {
        match ids
            .get(pick(choice, ids.len()))
            .copied()
            .unwrap_or(IdIs::Any)
        {
            IdIs::Null => "null".to_owned(),
            IdIs::Sent => line_case
                .sent
                .as_ref()
                .map_or_else(|| "null".to_owned(), Id::to_json),
            IdIs::Raw(text) => text.to_owned(),
            IdIs::Any => "\"fuzz-any\"".to_owned(),
        }
    };
    let code = |codes: &[i64]| {
        codes
            .get(pick(choice, codes.len()))
            .copied()
            .unwrap_or(-32_000)
    };
    let error = |codes: &[i64], ids: &[IdIs]| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":"m"}}}}"#,
            id(ids),
            code(codes)
        )
    };
    let result = |ids: &[IdIs], is_error: bool| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[],"isError":{is_error}}}}}"#,
            id(ids)
        )
    };
    let replies: Vec<String> = match arm.when {
        When::Silent => Vec::new(),
        When::Error(codes, ids) => vec![error(codes, ids)],
        When::Errors(codes, ids) => vec![error(codes, ids), error(codes, ids)],
        When::ToolError(ids) => vec![result(ids, true)],
        When::Result(ids) => vec![result(ids, false)],
        When::Results(ids) => vec![result(ids, false), result(ids, false)],
        When::Batch => vec![format!("[{}]", result(&[IdIs::Any], false))],
    };
    let marker = json!({"jsonrpc": "2.0", "id": marker(&line_case.case), "result": {}});
    let mut out = Vec::new();
    for line in replies
        .into_iter()
        .chain(std::iter::once(marker.to_string()))
    {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    Some(out)
}

/// The `byte`th of `count` things, wrapping around.
fn pick(byte: u8, count: usize) -> usize {
    usize::from(byte).checked_rem(count).unwrap_or(0)
}

#[expect(clippy::panic, reason = "a fuzz finding is reported by panicking")]
fn fail(broken: &str) -> ! {
    panic!("{broken}")
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::{Path, PathBuf};

    include!("../../../fuzz/replay.rs");

    #[test]
    fn corpus_replays_judge() {
        assert!(replay("judge", judge) > 0);
    }

    #[test]
    fn every_pass_arm_of_the_catalogue_is_reachable_with_every_choice() {
        for (index, line_case) in line_cases().iter().enumerate() {
            for selector in 0..32 {
                correct_answer_passes(line_case, selector);
            }
            assert!(
                correct_answer(line_case, 0).is_some()
                    || line_case
                        .arms
                        .iter()
                        .all(|arm| arm.verdict != Verdict::Pass),
                "case {index}"
            );
        }
    }

    /// A judging of a plain parse-error reply to the first case, to break.
    fn sample() -> (Judged, Vec<u8>) {
        let output = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"a message long enough to be echoed whole into a finding text by a broken judge, which the raw-bytes oracle must notice at once"}}"#.to_vec();
        let run = Run {
            fail_on: FailOn::DEFAULT,
            exit: None,
            stderr: &[],
        };
        (judged(&line_cases()[0], &output, &run), output)
    }

    #[test]
    fn the_sample_keeps_every_oracle() {
        let (judged, output) = sample();
        oracles(&judged, &output);
    }

    #[test]
    #[should_panic(expected = "the same output judged twice differs")]
    fn a_judge_that_answers_twice_differently_is_caught() {
        let (first, _) = sample();
        let (mut again, _) = sample();
        again.rendered[3].push('x');
        same(&first, &again);
    }

    #[test]
    #[should_panic(expected = "65 distinct finding texts")]
    fn findings_past_the_cap_of_distinct_texts_are_caught() {
        let (mut judged, output) = sample();
        let finding = judged
            .case
            .findings
            .first()
            .cloned()
            .unwrap_or(crate::FindingReport {
                kind: "invalid-line".to_owned(),
                severity: Severity::High,
                text: String::new(),
                count: 1,
                baselined: false,
                evidence: None,
            });
        judged.case.findings = (0..65)
            .map(|n| crate::FindingReport {
                text: format!("text {n}"),
                ..finding.clone()
            })
            .collect();
        oracles(&judged, &output);
    }

    #[test]
    #[should_panic(expected = "a 3000-byte text")]
    fn a_text_past_the_length_bound_is_caught() {
        let (mut judged, output) = sample();
        judged.case.detail = "x".repeat(3000);
        oracles(&judged, &output);
    }

    #[test]
    #[should_panic(expected = "of the server's output")]
    fn a_whole_server_line_in_a_text_is_caught() {
        let (mut judged, output) = sample();
        judged.case.detail = format!("echoed: {}", String::from_utf8_lossy(&output));
        oracles(&judged, &output);
    }

    #[test]
    #[should_panic(expected = "the SARIF report does not parse back")]
    fn a_rendering_that_is_not_json_is_caught() {
        let (mut judged, output) = sample();
        let half = judged.rendered[1].len().checked_div(2).unwrap();
        judged.rendered[1].truncate(half);
        oracles(&judged, &output);
    }

    #[test]
    #[should_panic(expected = "a baselined case still fails the run")]
    fn a_finding_the_baseline_does_not_cover_is_caught() {
        let (mut judged, output) = sample();
        judged.case.findings.push(crate::FindingReport {
            kind: "hang".to_owned(),
            severity: Severity::Critical,
            text: "not in the rendered report".to_owned(),
            count: 1,
            baselined: false,
            evidence: None,
        });
        oracles(&judged, &output);
    }

    #[test]
    #[should_panic(expected = "a correct answer is not a pass")]
    fn a_pass_arm_shadowed_by_a_failing_one_is_caught() {
        use crate::judge::{fail as failing, pass};
        static SHADOWED: &[Arm] = &[
            failing(When::Result(&[IdIs::Any]), "shadows the pass arm below"),
            pass(When::Result(&[IdIs::Sent])),
        ];
        let case = cases::catalogue().into_iter().next().unwrap();
        let line_case = LineCase {
            case,
            arms: SHADOWED,
            sent: Id::from_json("7"),
            echo_check: false,
        };
        correct_answer_passes(&line_case, 0);
    }

    #[test]
    fn the_longest_reason_fits_the_text_bound() {
        let longest = line_cases()
            .iter()
            .flat_map(|case| case.arms.iter().map(|arm| arm.why.len()))
            .max()
            .unwrap();
        assert!(longest < 300, "an arm's reason of {longest} bytes");
    }
}
