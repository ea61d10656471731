//! `airlock audit`'s verdicts as a CI consumes them: `--fail-on` exit statuses, `--baseline`
//! suppressing exactly the known findings, the SARIF report checked against the SARIF 2.1.0
//! JSON schema and the JUnit report parsed, a `--call-tool` the server does not list, and the
//! stderr of a server that dies at start.
//!
//! The rule-breaking server is `airlock serve` behind `sed`, which rewrites every parse error
//! (`-32700`) into `-32000`: a wrong error code, so a medium finding for each case that sends
//! bad JSON, and nothing else. The schema check needs the Python `jsonschema` package and the
//! schema file that `tests/clients/setup.sh` installs; without them the test says so and
//! passes, unless `AIRLOCK_REQUIRE_CLIENTS=1` (as CI sets), where it fails.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::fixtures::Scratch;
use crate::support::stdio::{airlock, run, spawn_command};

/// A run's exit status, its JSON report and its table.
struct Ran {
    status: Option<i32>,
    report: Value,
    table: String,
    stderr: String,
}

/// Runs `airlock audit --json <scratch>/report.json <flags> -- <server…>`.
fn audit(scratch: &Scratch, flags: &[&str], server: &[&str]) -> Ran {
    let json = scratch.arg("report.json");
    drop(std::fs::remove_file(&json));
    let mut args = vec!["audit", "--json", json.as_str()];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(server);
    let output = run(&airlock(), &args, &[]);
    let table = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|error| panic!("no JSON report ({error}):\n{table}\n{stderr}"));
    Ran {
        status: output.status.code(),
        report: serde_json::from_str(&text).unwrap(),
        table,
        stderr,
    }
}

/// `airlock serve --manifest examples/git-readonly.toml` answering every parse error with
/// `-32000`. The manifest is the first file the command names (the shell's `$0`), so SARIF
/// results point at it.
fn wrong_codes_server() -> Vec<String> {
    let script = r#""$1" serve --manifest "$0" | sed -u 's/-32700/-32000/'"#;
    vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        script.to_owned(),
        manifest(),
        airlock().to_str().unwrap().to_owned(),
    ]
}

/// The manifest the rule-breaking server serves.
fn manifest() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/git-readonly.toml")
        .to_str()
        .unwrap()
        .to_owned()
}

fn refs(strings: &[String]) -> Vec<&str> {
    strings.iter().map(String::as_str).collect()
}

/// The ids of the cases that fail the run.
fn failing(report: &Value) -> Vec<&str> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|case| case["fails"] == true)
        .map(|case| case["id"].as_str().unwrap())
        .collect()
}

fn case<'r>(report: &'r Value, id: &str) -> &'r Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["id"] == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

const THREE_CASES: &str = "json.nan,json.lone-surrogate,encoding.crlf";

#[test]
fn fail_on_decides_the_exit_status() {
    let scratch = Scratch::new("audit-reports-fail-on");
    let server = wrong_codes_server();
    // The default (high): wrong codes are medium, so the run passes, and says what it found.
    let ran = audit(&scratch, &["--only", THREE_CASES], &refs(&server));
    assert_eq!(ran.status, Some(0), "{}", ran.table);
    assert_eq!(ran.report["fail_on"], "high");
    assert_eq!(ran.report["exit"], 0);
    assert_eq!(ran.report["passed"], true);
    let nan = case(&ran.report, "json.nan");
    assert_eq!(nan["verdict"], "fail");
    assert_eq!(nan["severity"], "medium");
    assert_eq!(nan["answer_severity"], "medium");
    assert_eq!(nan["fails"], false);
    assert_eq!(case(&ran.report, "encoding.crlf")["severity"], Value::Null);
    assert_eq!(ran.report["totals"]["medium"], 2, "{}", ran.table);
    assert!(ran.table.contains("  medium   json.nan"), "{}", ran.table);
    assert!(ran.table.contains("0 cases fail the run"), "{}", ran.table);
    // --fail-on medium: the same findings fail it.
    let ran = audit(
        &scratch,
        &["--only", THREE_CASES, "--fail-on", "medium"],
        &refs(&server),
    );
    assert_eq!(ran.status, Some(1), "{}", ran.table);
    assert_eq!(ran.report["exit"], 1);
    assert_eq!(
        failing(&ran.report),
        vec!["json.lone-surrogate", "json.nan"]
    );
    assert!(ran.table.contains("! medium   json.nan"), "{}", ran.table);
    assert!(ran.table.contains("2 cases fail the run"), "{}", ran.table);
    // --fail-on never: a report only.
    let ran = audit(
        &scratch,
        &["--only", THREE_CASES, "--fail-on", "never"],
        &refs(&server),
    );
    assert_eq!(ran.status, Some(0), "{}", ran.table);
    // An unknown level is a usage error.
    let output = run(
        &airlock(),
        &["audit", "--fail-on", "severe", "--", "/bin/true"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn the_baseline_suppresses_exactly_the_known_findings() {
    let scratch = Scratch::new("audit-reports-baseline");
    let server = wrong_codes_server();
    let baseline = scratch.arg("baseline.json");
    let ran = audit(
        &scratch,
        &[
            "--only",
            THREE_CASES,
            "--fail-on",
            "medium",
            "--write-baseline",
            &baseline,
        ],
        &refs(&server),
    );
    assert_eq!(ran.status, Some(1), "{}", ran.table);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    assert_eq!(
        written,
        serde_json::json!({"airlock_audit_baseline": 1, "findings": [
            {"case": "json.lone-surrogate", "kind": "answer", "severity": "medium"},
            {"case": "json.nan", "kind": "answer", "severity": "medium"},
        ]})
    );
    // The same cases against the baseline: nothing new, so the run passes…
    let ran = audit(
        &scratch,
        &[
            "--only",
            THREE_CASES,
            "--fail-on",
            "medium",
            "--baseline",
            &baseline,
        ],
        &refs(&server),
    );
    assert_eq!(ran.status, Some(0), "{}", ran.table);
    assert_eq!(ran.report["baselined"], true);
    assert_eq!(case(&ran.report, "json.nan")["answer_baselined"], true);
    assert_eq!(ran.report["totals"]["baselined"], 2);
    assert!(ran.table.contains("= medium   json.nan"), "{}", ran.table);
    // …and a case the baseline does not know fails alone. A full JSON report serves as a
    // baseline too.
    let report_baseline = scratch.arg("earlier.json");
    std::fs::write(&report_baseline, ran.report.to_string()).unwrap();
    let ran = audit(
        &scratch,
        &[
            "--only",
            "json.nan,json.lone-surrogate,encoding.crlf,json.truncated",
            "--fail-on",
            "medium",
            "--baseline",
            &report_baseline,
        ],
        &refs(&server),
    );
    assert_eq!(ran.status, Some(1), "{}", ran.table);
    assert_eq!(
        failing(&ran.report),
        vec!["json.truncated"],
        "{}",
        ran.table
    );
    // A file that is not a baseline is a usage error, before any server starts.
    let junk = scratch.arg("junk.json");
    std::fs::write(&junk, "[1,2,3]").unwrap();
    let output = run(
        &airlock(),
        &["audit", "--baseline", &junk, "--", "/bin/true"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr,
        "airlock audit: --baseline: not a JSON report or baseline written by airlock audit\n"
    );
}

/// The Python interpreter with `jsonschema` and the SARIF 2.1.0 schema setup.sh installs, or
/// `None` after saying why they are missing (a failure under `AIRLOCK_REQUIRE_CLIENTS=1`).
fn schema_checker() -> Option<(PathBuf, PathBuf)> {
    let env = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/.env");
    let python = env.join("python/bin/python");
    let schema =
        env.join("audit/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json");
    if let Some(missing) = [&python, &schema].into_iter().find(|path| !path.exists()) {
        let reason = format!(
            "{} is missing: run `bash tests/clients/setup.sh`",
            missing.display()
        );
        let required = std::env::var_os("AIRLOCK_REQUIRE_CLIENTS").is_some_and(|v| v == "1");
        assert!(
            !required,
            "{reason} (AIRLOCK_REQUIRE_CLIENTS=1 requires it)"
        );
        eprintln!("skipped: {reason}");
        return None;
    }
    Some((python, schema))
}

#[test]
fn sarif_validates_against_the_schema_and_junit_parses_with_the_failures() {
    let Some((python, schema)) = schema_checker() else {
        return;
    };
    let scratch = Scratch::new("audit-reports-sarif");
    let server = wrong_codes_server();
    let sarif = scratch.arg("report.sarif");
    let junit = scratch.arg("report.xml");
    let ran = audit(
        &scratch,
        &[
            "--only",
            THREE_CASES,
            "--fail-on",
            "medium",
            "--sarif",
            &sarif,
            "--junit",
            &junit,
        ],
        &refs(&server),
    );
    assert_eq!(ran.status, Some(1), "{}", ran.table);
    let checker = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/audit/check_reports.py");
    let output = spawn_command(&python)
        .args([checker.as_os_str(), schema.as_os_str()])
        .args([&sarif, &junit])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let checked: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(checked["sarif_errors"], serde_json::json!([]), "{checked}");
    assert!(
        checked["broken_sarif_errors"].as_u64().unwrap() >= 3,
        "the schema check accepts a broken log: {checked}"
    );

    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "airlock audit");
    assert_eq!(run["tool"]["driver"]["version"], env!("CARGO_PKG_VERSION"));
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules
        .iter()
        .map(|rule| rule["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec!["json.lone-surrogate", "json.nan", "encoding.crlf"]
    );
    for rule in rules {
        assert!(
            rule["fullDescription"]["text"]
                .as_str()
                .unwrap()
                .starts_with("Sends ")
        );
        assert!(
            rule["help"]["text"]
                .as_str()
                .unwrap()
                .starts_with("What a correct server does: ")
        );
    }
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[1]["ruleId"], "json.nan");
    assert_eq!(results[1]["ruleIndex"], 1);
    assert_eq!(results[1]["level"], "warning");
    assert_eq!(results[1]["properties"]["severity"], "medium");
    assert_eq!(results[1]["properties"]["failsRun"], true);
    assert_eq!(
        results[1]["partialFingerprints"]["airlockAuditFinding/v1"],
        "json.nan/answer"
    );
    assert_eq!(run["invocations"][0]["exitCode"], 1);
    assert_eq!(run["invocations"][0]["executionSuccessful"], true);
    // Issue 41: every result has a physical location (code scanning needs one): the manifest
    // the server command names, line 1; and the evidence, the line the server wrote.
    let artifact = format!("file://{}", manifest());
    assert_eq!(run["artifacts"][0]["location"]["uri"], artifact.as_str());
    for result in results {
        let physical = &result["locations"][0]["physicalLocation"];
        assert_eq!(
            physical["artifactLocation"]["uri"],
            artifact.as_str(),
            "{result}"
        );
        assert_eq!(physical["region"]["startLine"], 1, "{result}");
        assert!(result["locations"][0]["logicalLocations"][0]["name"].is_string());
    }
    let evidence = results[1]["properties"]["evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with(r#"{"jsonrpc":"2.0","#) && evidence.contains("-32000"),
        "{evidence}"
    );
    assert!(
        results[1]["message"]["text"]
            .as_str()
            .unwrap()
            .ends_with(&format!(". What came back: {evidence}")),
        "{}",
        results[1]["message"]
    );
    assert_eq!(ran.report["artifact"], artifact.as_str());
    assert_eq!(case(&ran.report, "json.nan")["evidence"], evidence);
    assert_eq!(case(&ran.report, "encoding.crlf")["evidence"], Value::Null);

    let junit = &checked["junit"];
    assert_eq!(junit["tag"], "testsuites");
    assert_eq!(junit["tests"], "3");
    assert_eq!(junit["failures"], "2");
    let suites = junit["suites"].as_array().unwrap();
    let names: Vec<&str> = suites
        .iter()
        .map(|suite| suite["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["json", "encoding"]);
    assert_eq!(suites[0]["failures"], "2");
    let nan = &suites[0]["cases"][1];
    assert_eq!(nan["name"], "json.nan");
    assert_eq!(nan["classname"], "airlock-audit.json");
    assert_eq!(nan["failure"]["type"], "medium");
    assert_eq!(
        nan["failure"]["message"],
        "error -32000, id null: not an answer a correct server gives"
    );
    assert!(
        nan["failure"]["text"]
            .as_str()
            .unwrap()
            .contains("expects: ")
    );
    assert!(
        nan["failure"]["text"]
            .as_str()
            .unwrap()
            .contains(&format!("  what came back: {evidence}\n")),
        "{}",
        nan["failure"]["text"]
    );
    let crlf = &suites[1]["cases"][0];
    assert_eq!(crlf["name"], "encoding.crlf");
    assert_eq!(crlf["failure"], Value::Null);
}

#[test]
fn a_call_tool_the_server_does_not_list_is_refused_naming_its_tools() {
    let scratch = Scratch::new("audit-reports-call-tool");
    let ran = audit(
        &scratch,
        &["--only", "json.nan", "--call-tool", "no_such_tool"],
        &[airlock().to_str().unwrap(), "serve"],
    );
    assert_eq!(ran.status, Some(3), "{}", ran.table);
    let why = ran.report["setup_error"].as_str().unwrap();
    assert!(
        why.starts_with("--call-tool: the server has no tool called \"no_such_tool\" (it lists: "),
        "{why}"
    );
    assert!(why.contains("list_directory"), "{why}");
    assert_eq!(ran.report["cases"], serde_json::json!([]));
}

#[test]
fn a_server_that_dies_at_start_shows_its_stderr() {
    let scratch = Scratch::new("audit-reports-dies");
    let ran = audit(
        &scratch,
        &["--only", "json.nan"],
        &[
            "/bin/sh",
            "-c",
            "echo 'config.toml: no such file' >&2; exit 2",
        ],
    );
    assert_eq!(ran.status, Some(3), "{}", ran.table);
    assert_eq!(ran.report["setup_stderr"], "config.toml: no such file\n");
    assert!(
        ran.table
            .contains("the server's stderr ended with:\n  | config.toml: no such file\n"),
        "{}",
        ran.table
    );
    assert!(
        ran.stderr.contains("config.toml: no such file"),
        "{}",
        ran.stderr
    );
}
