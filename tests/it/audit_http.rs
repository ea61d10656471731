//! `airlock audit --url` through the real binary: `airlock serve --http` passes every HTTP case
//! in both eras (the slow ones included), a server that serves any `Host` and `Origin` (and
//! shows every session's tasks to any session) fails the rebinding and task cases with exit
//! status 1, and a remote URL needs `--allow-remote`.

use std::path::Path;

use serde_json::Value;

use crate::support::http::HttpServer;
use crate::support::stdio::{airlock, run};

/// Runs `airlock audit --url URL <flags> --json FILE`; the exit status, the report, the table.
fn audit_url(name: &str, url: &str, flags: &[&str]) -> (Option<i32>, Value, String) {
    let json = std::env::temp_dir().join(format!(
        "airlock-audit-http-{}-{name}.json",
        std::process::id()
    ));
    let json_arg = json.to_str().unwrap().to_owned();
    let mut args = vec!["audit", "--url", url, "--json", json_arg.as_str()];
    args.extend_from_slice(flags);
    let output = run(&airlock(), &args, &[]);
    let table = String::from_utf8(output.stdout).unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| {
        panic!(
            "no JSON report: {table}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    std::fs::remove_file(&json).unwrap();
    (
        output.status.code(),
        serde_json::from_str(&text).unwrap(),
        table,
    )
}

/// The ids `airlock audit --list` gives for the HTTP cases, `slow` ones or the others.
fn listed_http_cases(slow: bool) -> Vec<String> {
    let output = run(&airlock(), &["audit", "--list"], &[]);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("  http."))
        .filter(|rest| rest.ends_with(" [slow]") == slow)
        .map(|rest| format!("http.{}", rest.trim_end_matches(" [slow]")))
        .collect()
}

fn ids(report: &Value) -> Vec<String> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| case["id"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_every_case_passes(status: Option<i32>, report: &Value, table: &str) {
    assert_every_case_passes_but(status, report, table, &[]);
}

/// [`assert_every_case_passes`], the cases `noted` allowed a note (an informational verdict:
/// the case does not apply to this server or this run).
fn assert_every_case_passes_but(status: Option<i32>, report: &Value, table: &str, noted: &[&str]) {
    for case in report["cases"].as_array().unwrap() {
        if noted.iter().any(|id| case["id"] == *id) {
            assert_ne!(case["verdict"], "fail", "{}: {table}", case["id"]);
            continue;
        }
        assert_eq!(case["verdict"], "pass", "{}: {table}", case["id"]);
        assert!(case["findings"].as_array().unwrap().is_empty(), "{table}");
    }
    assert_eq!(report["passed"], true, "{table}");
    assert_eq!(status, Some(0), "{table}");
}

/// A manifest with a read-only tool that may run as a task, which the task cases call.
const TASKED: &str = r#"
[[tool]]
name = "noop"
description = "Does nothing"
command = ["true"]
task = "optional"
annotations = { read_only = true }
"#;

#[test]
fn airlock_serve_over_http_passes_every_quick_case_in_both_eras() {
    let scratch = crate::support::fixtures::Scratch::new("audit-http-quick");
    let manifest = scratch.manifest(TASKED);
    let server = HttpServer::airlock(&["--manifest", &manifest], &[]);
    let url = format!("http://{}/mcp", server.addr);
    let (status, report, table) = audit_url("serve-quick", &url, &["--quick"]);
    assert_every_case_passes(status, &report, &table);
    assert_eq!(ids(&report), listed_http_cases(false), "{table}");
    assert!(ids(&report).iter().any(|id| id.starts_with("http.legacy.")));
    assert!(ids(&report).iter().any(|id| id.starts_with("http.modern.")));
    assert_eq!(
        report["server"]["protocol_version"],
        "2026-07-28 and 2025-11-25"
    );
    assert_eq!(report["url"], url.as_str());
}

#[test]
fn airlock_serve_over_http_closes_slow_and_idle_connections() {
    let server = HttpServer::airlock(&[], &[]);
    let url = format!("http://{}/mcp", server.addr);
    let slow = listed_http_cases(true);
    assert!(slow.len() >= 4, "{slow:?}");
    let only = slow.join(",");
    // airlock's header and body timeouts are 10 s: four 4 s case timeouts leave room.
    let (status, report, table) = audit_url(
        "serve-slow",
        &url,
        &["--only", &only, "--case-timeout-ms", "4000"],
    );
    assert_every_case_passes(status, &report, &table);
    assert_eq!(ids(&report), slow, "{table}");
}

#[test]
fn a_server_that_serves_any_host_and_origin_fails_the_rebinding_cases() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/audit/any_host_http_server.py");
    let server = HttpServer::start(Path::new("python3"), &[fixture.to_str().unwrap()], &[]);
    let url = format!("http://{}/mcp", server.addr);
    let (status, report, table) = audit_url("any-host", &url, &["--quick"]);
    assert_eq!(status, Some(1), "{table}");
    let case = |id: &str| {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|case| case["id"] == id)
            .unwrap_or_else(|| panic!("{id} did not run: {table}"))
            .clone()
    };
    for id in [
        "http.host-rebinding",
        "http.origin-foreign",
        "http.origin-null",
    ] {
        let case = case(id);
        assert_eq!(case["verdict"], "fail", "{id}: {table}");
        assert_eq!(case["severity"], "high", "{id}: {table}");
        assert_eq!(case["fails"], true, "{id}: {table}");
    }
    // Its tasks are the server's, not each session's: another session reads them.
    let tasks = case("http.legacy.task-of-another-session");
    assert_eq!(tasks["verdict"], "fail", "{table}");
    assert_eq!(tasks["severity"], "high", "{table}");
    // What it does right still passes, and the era it does not serve is not tried.
    assert_eq!(
        case("http.legacy.session-unknown")["verdict"],
        "pass",
        "{table}"
    );
    assert!(!ids(&report).iter().any(|id| id.starts_with("http.modern.")));
}

/// Issue 41: the configuration actually deployed has a token, and `--url` had no way to send
/// one (exit 3). With `--auth-token-env` (and `--header`) every quick case passes; without
/// the token the audit still cannot start, and the token is in no report.
#[test]
fn a_token_protected_airlock_serve_is_audited_with_auth_token_env_and_header() {
    let token = "audit-secret-token-0123456789";
    let server = HttpServer::airlock(
        &["--auth-token-env", "IT_AUDIT_SERVER_TOKEN"],
        &[("IT_AUDIT_SERVER_TOKEN", token)],
    );
    let url = format!("http://{}/mcp", server.addr);
    let (status, _, table) = audit_url(
        "token-missing",
        &url,
        &["--quick", "--only", "http.method-put"],
    );
    assert_eq!(status, Some(3), "{table}");

    let json = std::env::temp_dir().join(format!(
        "airlock-audit-http-{}-token.json",
        std::process::id()
    ));
    let sarif = json.with_extension("sarif");
    let output = run(
        &airlock(),
        &[
            "audit",
            "--url",
            &url,
            "--quick",
            "--auth-token-env",
            "IT_AUDIT_CLIENT_TOKEN",
            "--header",
            "X-Audit-Run: it",
            "--json",
            json.to_str().unwrap(),
            "--sarif",
            sarif.to_str().unwrap(),
        ],
        &[("IT_AUDIT_CLIENT_TOKEN", token)],
    );
    let table = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| panic!("{table}\n{stderr}"));
    let sarif_text = std::fs::read_to_string(&sarif).unwrap();
    std::fs::remove_file(&json).unwrap();
    std::fs::remove_file(&sarif).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    // With a token both sessions of the task case are one identity: it notes so.
    assert_every_case_passes_but(
        output.status.code(),
        &report,
        &table,
        &["http.legacy.task-of-another-session"],
    );
    assert_eq!(ids(&report), listed_http_cases(false), "{table}");
    for written in [&text, &sarif_text, &table, &stderr] {
        assert!(!written.contains(token), "the token was written: {written}");
    }

    // A variable that is not set is a usage error, naming the variable and not a value.
    let output = run(
        &airlock(),
        &[
            "audit",
            "--url",
            &url,
            "--auth-token-env",
            "IT_AUDIT_UNSET_TOKEN",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("IT_AUDIT_UNSET_TOKEN"), "{stderr}");
    // A header the audit sets itself, or one that is not NAME:VALUE, is refused.
    for header in ["Host: evil.example", "no colon", "X-A: b\r\nX-B: c"] {
        let output = run(
            &airlock(),
            &["audit", "--url", &url, "--header", header],
            &[],
        );
        assert_eq!(output.status.code(), Some(2), "{header}");
    }
}

#[test]
fn a_remote_url_needs_allow_remote_and_a_url_takes_no_command() {
    let output = run(
        &airlock(),
        &["audit", "--url", "http://192.0.2.1:9/mcp"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("needs --allow-remote"), "{stderr}");
    let output = run(
        &airlock(),
        &["audit", "--url", "http://127.0.0.1:9/mcp", "--", "true"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let output = run(
        &airlock(),
        &["audit", "--url", "https://127.0.0.1:9/mcp"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
}

/// Options that only mean something for a server the audit starts (its memory, the tool its
/// cases call) are refused with `--url` instead of being silently ignored: an operator who
/// set `--max-memory-mib` must not believe the limit was checked.
#[test]
fn options_for_a_started_server_are_refused_with_a_url() {
    for extra in [
        &["--max-memory-mib", "64"][..],
        &["--call-tool", "echo"],
        &["--call-tool", "echo", "--call-args", "{}"],
        &["--no-tool-calls"],
    ] {
        let mut args = vec!["audit", "--url", "http://127.0.0.1:9/mcp"];
        args.extend_from_slice(extra);
        let output = run(&airlock(), &args, &[]);
        assert_eq!(output.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.contains("cannot be used with"),
            "{extra:?}: {stderr}"
        );
    }
}

/// Issue 35, item 7: the audit's cases for refused traffic fail a server that reads the first
/// of repeated MCP headers, checks `Mcp-Name` for `tools/call` only, decodes `=?BASE64?`,
/// holds every partial body and lets a web page's refusals cut the local client off (the
/// fixture does all of these; airlock passes them, above).
#[test]
fn a_careless_modern_server_fails_the_refused_traffic_cases() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/audit/careless_modern_http_server.py");
    let server = HttpServer::start(Path::new("python3"), &[fixture.to_str().unwrap()], &[]);
    let url = format!("http://{}/mcp", server.addr);
    let only = [
        "http.modern.header-repeated",
        "http.modern.name-header-prompt",
        "http.modern.name-header-resource",
        "http.modern.name-header-encoding",
        "http.partial-bodies",
        "http.page-lockout",
    ];
    let (status, report, table) = audit_url("careless", &url, &["--only", &only.join(",")]);
    assert_eq!(status, Some(1), "{table}");
    let severity = |id: &str| {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|case| case["id"] == id)
            .unwrap_or_else(|| panic!("{id} did not run: {table}"))["severity"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(severity("http.modern.header-repeated"), "high", "{table}");
    assert_eq!(
        severity("http.modern.name-header-encoding"),
        "medium",
        "{table}"
    );
    assert_eq!(severity("http.partial-bodies"), "medium", "{table}");
    // The page's refusals cut the audit off: the follow-up fails too.
    assert_eq!(severity("http.page-lockout"), "critical", "{table}");
    // A server without the prompt or resource answers -32602: the check cannot be told
    // from the missing name, so it is low.
    assert_eq!(severity("http.modern.name-header-prompt"), "low", "{table}");
    assert_eq!(
        severity("http.modern.name-header-resource"),
        "low",
        "{table}"
    );
}
