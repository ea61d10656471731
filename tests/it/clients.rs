//! The official MCP clients against our servers: the Python SDK (`mcp`), the TypeScript SDK
//! (v1 `@modelcontextprotocol/sdk`, v2 `@modelcontextprotocol/client`) and the Inspector's CLI,
//! at the versions `tests/clients/setup.sh` pins. `tests/clients/client.py` and `client.mjs`
//! spawn a server, connect in one era, list every tool, make the calls they are given, use
//! the prompts, resources, completion and logging the server declares as they are asked,
//! answer the server's questions (elicitation, sampling, roots: server-to-client requests in
//! a legacy session, `input_required` results their SDK's own driver retries in a modern
//! one), and print one JSON report; these tests assert on the reports, for every SDK and era.
//!
//! The clients live outside cargo's reach. When they are missing these tests fail if
//! `AIRLOCK_REQUIRE_CLIENTS=1` (CI sets it) and otherwise skip, saying why on stderr.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::stdio::{DEFAULT_TOOLS, airlock, example, tool_names};

/// Set to `1` to make missing clients a failure instead of a skip.
const REQUIRE_CLIENTS: &str = "AIRLOCK_REQUIRE_CLIENTS";

/// Longest one client run may take before the test calls it hung. Each request inside it has
/// its own 20 s limit (the scripts' default `--timeout`).
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// What the legacy clients offer in `initialize`, and what we must echo.
const LEGACY: &str = "2025-11-25";
/// The modern era: `server/discover`, then the version in every request's `_meta`.
const MODERN: &str = "2026-07-28";

/// One way to connect: a client script, its options, and the version the session must use.
struct Sdk {
    label: &'static str,
    script: Script,
    /// The package whose pinned version the report must name.
    package: &'static str,
    args: &'static [&'static str],
    version: &'static str,
}

#[derive(Clone, Copy)]
enum Script {
    Python,
    TypeScript,
}

const SDKS: &[Sdk] = &[
    Sdk {
        label: "Python SDK, legacy",
        script: Script::Python,
        package: "mcp",
        args: &["--era", "legacy"],
        version: LEGACY,
    },
    Sdk {
        label: "Python SDK, modern",
        script: Script::Python,
        package: "mcp",
        args: &["--era", "modern"],
        version: MODERN,
    },
    // `mcp.Client`'s default: probe `server/discover`, fall back to `initialize`.
    Sdk {
        label: "Python SDK, auto",
        script: Script::Python,
        package: "mcp",
        args: &["--era", "auto"],
        version: MODERN,
    },
    Sdk {
        label: "TypeScript SDK v1",
        script: Script::TypeScript,
        package: "@modelcontextprotocol/sdk",
        args: &["--sdk", "v1"],
        version: LEGACY,
    },
    Sdk {
        label: "TypeScript SDK v2, legacy",
        script: Script::TypeScript,
        package: "@modelcontextprotocol/client",
        args: &["--sdk", "v2", "--era", "legacy"],
        version: LEGACY,
    },
    Sdk {
        label: "TypeScript SDK v2, modern",
        script: Script::TypeScript,
        package: "@modelcontextprotocol/client",
        args: &["--sdk", "v2", "--era", "modern"],
        version: MODERN,
    },
    Sdk {
        label: "TypeScript SDK v2, auto",
        script: Script::TypeScript,
        package: "@modelcontextprotocol/client",
        args: &["--sdk", "v2", "--era", "auto"],
        version: MODERN,
    },
];

#[test]
fn official_sdks_use_the_default_manifest_in_both_eras() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("default");
    let server = [path_str(&airlock()), "serve".into()];
    let calls = json!([
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "list_directory", "arguments": {}},
        {"name": "search_text", "arguments": {"text": "beta"}},
        {"name": "read_file", "arguments": {"path": "notes.txt", "max_bytes": "PLANTED-7f3a"}},
        {"name": "read_file", "arguments": {"path": "/etc/passwd"}},
        {"name": "no_such_tool", "arguments": {}},
        {"name": "count_lines", "arguments": {"path": "notes.txt"}},
    ]);
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report(sdk, &dir.0, &server, &calls);
        assert_connected(&clients, sdk, &report, "airlock");
        assert_tools(sdk, &report, &DEFAULT_TOOLS);
        for tool in report["tools"].as_array().unwrap() {
            assert_eq!(tool["annotations"]["readOnlyHint"], true, "{label}");
        }
        let calls = report["calls"].as_array().unwrap();
        assert_eq!(text(sdk, &calls[0]), NOTES, "{label}");
        assert!(text(sdk, &calls[1]).contains("notes.txt"), "{label}");
        assert_eq!(text(sdk, &calls[2]), "./notes.txt:2:beta\n", "{label}");
        assert_refused(sdk, &calls[3], "max_bytes", "PLANTED");
        assert_refused(sdk, &calls[4], "path", "root:");
        assert_eq!(code(sdk, &calls[5]), -32602);
        // The session survived the refusals and the protocol error.
        let counts = text(sdk, &calls[6]);
        let counts: Vec<&str> = counts.split_whitespace().collect();
        assert_eq!(counts, ["2", "3", "17", "./notes.txt"], "{label}");
    }
}

#[test]
fn official_sdks_use_the_git_readonly_example() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("git");
    let manifest = repo().join("examples/git-readonly.toml");
    let server = [
        path_str(&airlock()),
        "serve".into(),
        "--manifest".into(),
        path_str(&manifest),
    ];
    let calls = json!([
        {"name": "git_log", "arguments": {"count": 1}},
        {"name": "git_show", "arguments": {"revision": "HEAD"}},
        {"name": "git_grep", "arguments": {"text": "name = \"airlock\"", "path": "Cargo.toml"}},
        {"name": "git_show", "arguments": {"revision": "--output=PLANTED-7f3a"}},
        {"name": "no_such_tool", "arguments": {}},
        {"name": "git_status", "arguments": {}},
    ]);
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report(sdk, &dir.0, &server, &calls);
        assert_connected(&clients, sdk, &report, "git-readonly");
        assert_tools(
            sdk,
            &report,
            &["git_log", "git_show", "git_status", "git_grep"],
        );
        let calls = report["calls"].as_array().unwrap();
        assert_eq!(text(sdk, &calls[0]).lines().count(), 1, "{label}");
        assert!(text(sdk, &calls[1]).starts_with("commit "), "{label}");
        let found = text(sdk, &calls[2]);
        assert!(found.starts_with("Cargo.toml:"), "{label}: {found}");
        assert!(found.contains("name = \"airlock\""), "{label}: {found}");
        assert_refused(sdk, &calls[3], "revision", "PLANTED");
        assert_eq!(code(sdk, &calls[4]), -32602);
        assert!(text(sdk, &calls[5]).starts_with("## "), "{label}");
    }
}

#[test]
fn official_sdks_use_the_product_cli_and_its_structured_output() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("product");
    let server = [path_str(&example("product_cli")), "mcp".into()];
    let calls = json!([
        {"name": "stats", "arguments": {"text": "the cat saw the dog"}},
        {"name": "convert", "arguments": {"value": 100, "from": "celsius", "to": "fahrenheit"}},
        {"name": "case", "arguments": {"text": "Hello wide World", "style": "kebab"}},
        {"name": "convert", "arguments": {"value": 1, "from": "PLANTED-7f3a", "to": "kelvin"}},
        {"name": "no_such_tool", "arguments": {}},
        {"name": "stats", "arguments": {"text": "b a b"}},
    ]);
    let stats = json!({
        "lines": 1, "words": 5, "characters": 19, "bytes": 19, "unique_words": 4,
        "most_frequent_word": "the", "most_frequent_count": 2
    });
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report(sdk, &dir.0, &server, &calls);
        assert_connected(&clients, sdk, &report, "product-cli");
        assert_tools(sdk, &report, &["stats", "convert", "case"]);
        let tools = report["tools"].as_array().unwrap();
        assert_eq!(tools[0]["outputSchema"]["type"], "object", "{label}");
        assert!(tools[1].get("outputSchema").is_none(), "{label}");
        let calls = report["calls"].as_array().unwrap();
        assert_eq!(calls[0]["result"]["structuredContent"], stats, "{label}");
        // The same object as text, for clients that read only the content blocks.
        let as_text: Value = serde_json::from_str(&text(sdk, &calls[0])).unwrap();
        assert_eq!(as_text, stats, "{label}");
        assert_eq!(text(sdk, &calls[1]), "212", "{label}");
        assert_eq!(calls[1]["result"]["structuredContent"], Value::Null);
        assert_eq!(text(sdk, &calls[2]), "hello-wide-world", "{label}");
        assert_refused(sdk, &calls[3], "from", "PLANTED");
        assert_eq!(code(sdk, &calls[4]), -32602);
        let later = &calls[5]["result"]["structuredContent"];
        assert_eq!(later["most_frequent_word"], "b", "{label}");
    }
}

#[test]
fn official_sdks_see_a_timed_out_command_as_a_tool_error_and_carry_on() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("timeout");
    let manifest = dir.0.join("slow.toml");
    std::fs::write(&manifest, SLOW_MANIFEST).unwrap();
    let server = [
        path_str(&airlock()),
        "serve".into(),
        "--manifest".into(),
        path_str(&manifest),
    ];
    let calls = json!([
        {"name": "sleep", "arguments": {}},
        {"name": "echo", "arguments": {"text": "still here"}},
    ]);
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report(sdk, &dir.0, &server, &calls);
        assert_connected(&clients, sdk, &report, "slow");
        assert_tools(sdk, &report, &["sleep", "echo"]);
        let calls = report["calls"].as_array().unwrap();
        let stopped = tool_error(sdk, &calls[0]);
        assert!(stopped.contains("time limit of 300 ms"), "{label}");
        assert_eq!(text(sdk, &calls[1]), "still here\n", "{label}");
    }
}

#[test]
fn official_sdks_follow_next_cursor_through_every_page() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("pages");
    let server = [path_str(&example("fixture_server")), "--fillers".into()];
    let calls = json!([{"name": "echo", "arguments": {"text": "last page reached"}}]);
    let mut first: Option<Vec<String>> = None;
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report(sdk, &dir.0, &server, &calls);
        assert_connected(&clients, sdk, &report, "fixture");
        assert!(report["pages"].as_u64().unwrap() >= 2, "{label}");
        let names: Vec<String> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        // The 60 fillers and the fixture's own tools, each once, the same for every client.
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{label}: a tool listed twice");
        for i in 0..60 {
            let filler = format!("filler_{i:02}");
            assert!(names.contains(&filler), "{label}: {filler} missing");
        }
        assert!(names.iter().any(|name| name == "echo"), "{label}");
        assert_eq!(
            *first.get_or_insert_with(|| names.clone()),
            names,
            "{label}"
        );
        let calls = report["calls"].as_array().unwrap();
        assert_eq!(text(sdk, &calls[0]), "last page reached", "{label}");
    }
}

/// What the surface example's prompts, resources and completions are asked, by every client;
/// `PLANTED` marks what a refusal must not say back.
fn surface_options() -> Vec<String> {
    let prompts = json!([
        {"name": "summarize", "arguments": {"topic": "security", "style": "tersely"}},
        {"name": "summarize", "arguments": {"topic": "sandbox"}},
        {"name": "greet"},
        // A required argument missing, an argument the prompt does not have, no such prompt.
        {"name": "summarize", "arguments": {"style": "PLANTED-7f3a"}},
        {"name": "summarize", "arguments": {"topic": "sandbox", "PLANTED-7f3a": "x"}},
        {"name": "PLANTED-7f3a"},
    ]);
    let reads = json!([
        "notes://readme",
        "notes://logo",
        "notes://topic/caf%C3%A9",
        "notes://day/2026-12-01/entry",
        // No such resource; a template value that climbs, plain and escaped; one that
        // would span segments.
        "notes://PLANTED-7f3a",
        "notes://topic/..",
        "notes://topic/%2E%2E",
        "notes://topic/PLANTED%2F..%2F..%2Fetc",
        "notes://day/PLANTED/../../entry",
        // An empty value, one over 256 bytes, a right-to-left override, a fixed URI's
        // neighbour.
        "notes://topic/",
        format!("notes://topic/PLANTED{}", "a".repeat(256)),
        "notes://topic/PLANTED%E2%80%AEtxt",
        "notes://readme/PLANTED",
    ]);
    let completions = json!([
        {"ref": {"type": "ref/prompt", "name": "summarize"},
         "argument": {"name": "topic", "value": "se"}},
        {"ref": {"type": "ref/resource", "uri": "notes://topic/{name}"},
         "argument": {"name": "name", "value": "s"}},
        // An argument without a completer completes to nothing; no such prompt or argument.
        {"ref": {"type": "ref/prompt", "name": "summarize"},
         "argument": {"name": "style", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "PLANTED-7f3a"},
         "argument": {"name": "topic", "value": ""}},
        {"ref": {"type": "ref/resource", "uri": "notes://topic/{name}"},
         "argument": {"name": "PLANTED-7f3a", "value": ""}},
        {"ref": {"type": "ref/resource", "uri": "notes://PLANTED/{name}"},
         "argument": {"name": "name", "value": ""}},
    ]);
    [
        ("--prompts", prompts.to_string()),
        ("--reads", reads.to_string()),
        ("--completions", completions.to_string()),
        ("--log-level", "warning".to_owned()),
    ]
    .into_iter()
    .flat_map(|(option, value)| [option.to_owned(), value])
    .collect()
}

#[test]
fn official_sdks_get_prompts_read_resources_complete_and_log_in_both_eras() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("surface");
    let server = [path_str(&example("surface_server"))];
    let calls = json!([
        {"name": "log_every_level", "arguments": {}},
        {"name": "log_every_level", "arguments": {}},
    ]);
    let options = surface_options();
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report_with(sdk, &dir.0, &server, &calls, &options);
        assert_connected(&clients, sdk, &report, "surface");
        assert_prompts_listed(sdk, &report);
        assert_prompts_got(sdk, &report);
        assert_resources_listed(sdk, &report);
        assert_resources_read(sdk, &report);
        assert_completions(sdk, &report);

        // Logging, in both eras, at the level the client asked for: a legacy session with
        // `logging/setLevel`, a modern call in its own `_meta` (Python's `log_level`, v2's
        // request `_meta`: it has no option of its own).
        assert!(report["capabilities"]["logging"].is_object(), "{label}");
        let (via, sent) = if sdk.version == LEGACY {
            (json!({"level": "warning", "result": {}}), json!([null]))
        } else {
            let via = match sdk.script {
                Script::Python => "log_level",
                Script::TypeScript => "_meta",
            };
            (json!({"level": "warning", "via": via}), json!(["warning"]))
        };
        assert_eq!(report["logLevel"], via, "{label}");
        let calls = report["calls"].as_array().unwrap();
        for call in calls {
            assert_eq!(text(sdk, call), "logged", "{label}");
            assert_eq!(call["logs"], logged_at_warning(), "{label}");
            if let Some(level) = call.get("logLevelSent") {
                assert_eq!(level, &sent, "{label}");
            }
        }
    }
}

/// What `log_every_level` sends at `warning`: that level and above, in order.
fn logged_at_warning() -> Value {
    json!([
        {"level": "warning", "data": "warning message"},
        {"level": "error", "data": "error message"},
        {"level": "critical", "data": "critical message"},
        {"level": "alert", "data": "alert message"},
        {"level": "emergency", "data": "emergency message"},
    ])
}

/// A modern call that asks for no level gets no log messages: 2026-07-28 logging is opt-in
/// per request, and the server still declares `logging`.
#[test]
fn official_sdks_get_no_log_messages_in_the_modern_era_without_a_level() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("surface-quiet");
    let server = [path_str(&example("surface_server"))];
    let calls = json!([
        {"name": "log_every_level", "arguments": {}},
        {"name": "log_every_level", "arguments": {}},
    ]);
    for sdk in SDKS.iter().filter(|sdk| sdk.version == MODERN) {
        let label = sdk.label;
        let report = clients.report(sdk, &dir.0, &server, &calls);
        assert_connected(&clients, sdk, &report, "surface");
        assert!(report["capabilities"]["logging"].is_object(), "{label}");
        assert!(report.get("logLevel").is_none(), "{label}");
        for call in report["calls"].as_array().unwrap() {
            assert_eq!(text(sdk, call), "logged", "{label}");
            assert_eq!(call["logs"], json!([]), "{label}");
            if let Some(level) = call.get("logLevelSent") {
                assert_eq!(level, &json!([null]), "{label}");
            }
        }
    }
}

/// The conformance server's questions, answered: `--elicit` once per form (each client picks
/// the answer whose fields are the form's), the model's text and one root.
fn asking_options(elicit: &[Value]) -> Vec<String> {
    let mut options = Vec::new();
    for answer in elicit {
        options.extend(["--elicit".to_owned(), answer.to_string()]);
    }
    options.extend(["--sample".to_owned(), "hi there".to_owned()]);
    let roots = json!([{"uri": "file:///tmp/notes", "name": "notes"}]);
    options.extend(["--roots".to_owned(), roots.to_string()]);
    options
}

/// An elicitation answered with `content`.
fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// A tool asks the same way in both eras and gets the same answers: in a legacy session
/// through server-to-client requests, in a modern one through `input_required` results that
/// each SDK's own driver answers with the same handlers and retries. TypeScript SDK v1 has no
/// 2026-07-28 (its supported versions stop at 2025-11-25), so it has no input_required
/// support to drive: it takes the legacy path only.
#[test]
fn official_sdks_answer_an_elicitation_and_a_sampling_request() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("asking");
    let server = [path_str(&example("conformance_server"))];
    let calls = json!([
        {"name": "test_elicitation", "arguments": {"message": "Who are you?"}},
        {"name": "test_sampling", "arguments": {"prompt": "Say hi"}},
        {"name": "test_input_required_result_multi_round", "arguments": {}},
        {"name": "test_input_required_result_list_roots", "arguments": {}},
        {"name": "test_input_required_result_request_state", "arguments": {}},
        {"name": "test_input_required_result_multiple_inputs", "arguments": {}},
    ]);
    let mut options = asking_options(&[
        accept(json!({"username": "ada", "email": "ada@example.com"})),
        accept(json!({"name": "Ada"})),
        accept(json!({"color": "teal"})),
        accept(json!({"ok": true})),
        accept(json!({"context": "the notes"})),
    ]);
    let prompts = json!([
        {"name": "test_input_required_result_prompt"},
        {"name": "test_input_required_result_prompt", "arguments": {"context": "given"}},
    ]);
    options.extend(["--prompts".to_owned(), prompts.to_string()]);
    let elicited = |message: &str, fields: &[&str]| {
        let method = "elicitation/create";
        json!({"method": method, "message": message, "fields": fields})
    };
    let sampled = |prompt: &str| json!({"method": "sampling/createMessage", "prompt": prompt});
    let roots = json!({"method": "roots/list"});
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report_with(sdk, &dir.0, &server, &calls, &options);
        assert_connected(&clients, sdk, &report, "airlock-conformance");
        if sdk.package == "@modelcontextprotocol/sdk" {
            let versions = report["versions"].as_array().unwrap();
            assert_eq!(versions[0], LEGACY, "{label}: {versions:?}");
            assert!(!versions.contains(&json!(MODERN)), "{label}: {versions:?}");
        }
        let legacy = sdk.version == LEGACY;
        // Each SDK's own handler answered each question once, in the order asked: a modern
        // prompt get asks for the context it was not given first; a legacy one is not asked.
        let mut asked = report["asked"].as_array().unwrap().clone();
        let at_once = asked.split_off(asked.len().saturating_sub(3));
        let mut expected = vec![
            elicited("Who are you?", &["email", "username"]),
            sampled("Say hi"),
            elicited("Step 1: What is your name?", &["name"]),
            elicited("Step 2: What is your favorite color?", &["color"]),
            roots.clone(),
            elicited("Please confirm", &["ok"]),
        ];
        if !legacy {
            expected.insert(
                0,
                elicited("What context should the prompt use?", &["context"]),
            );
        }
        assert_eq!(asked, expected, "{label}");
        // Three questions at once: answered concurrently, in any order.
        let mut at_once: Vec<String> = at_once.iter().map(Value::to_string).collect();
        at_once.sort_unstable();
        let mut three = [
            elicited("What is your name?", &["name"]).to_string(),
            sampled("Generate a greeting").to_string(),
            roots.to_string(),
        ];
        three.sort_unstable();
        assert_eq!(at_once, three, "{label}");

        // The tools got the answers, in both eras alike.
        let calls = report["calls"].as_array().unwrap();
        assert_eq!(
            text(sdk, &calls[0]),
            r#"User response: action=accept, content={"email":"ada@example.com","username":"ada"}"#,
            "{label}"
        );
        assert_eq!(text(sdk, &calls[1]), "LLM response: hi there", "{label}");
        assert_eq!(text(sdk, &calls[2]), "Ada likes teal", "{label}");
        assert_eq!(
            text(sdk, &calls[3]),
            "1 root(s): file:///tmp/notes",
            "{label}"
        );
        // The state came back as it was sent: the tool saw its signature verified.
        let confirmed = if legacy {
            "confirmed without a state"
        } else {
            "state-ok: confirmed in round 1"
        };
        assert_eq!(text(sdk, &calls[4]), confirmed, "{label}");
        assert_eq!(
            text(sdk, &calls[5]),
            "hi there Ada; roots: file:///tmp/notes",
            "{label}"
        );
        // The rounds each took: one retry per question asked at a time, two for the tool that
        // asks its second question after the first answer; none in a legacy session.
        let rounds = |answers: &Value| -> Vec<u64> {
            answers
                .as_array()
                .unwrap()
                .iter()
                .map(|answer| answer["rounds"].as_u64().unwrap())
                .collect()
        };
        let (call_rounds, get_rounds) = if legacy {
            (vec![0; 6], vec![0, 0])
        } else {
            (vec![1, 1, 2, 1, 1, 1], vec![1, 0])
        };
        assert_eq!(rounds(&report["calls"]), call_rounds, "{label}");
        assert_eq!(rounds(&report["gets"]), get_rounds, "{label}");

        // The prompt: a modern get that leaves out `context` is filled in by the user's
        // answer; a legacy one renders without it; a given context is used as given.
        let gets = report["gets"].as_array().unwrap();
        let said =
            |text: &str| json!([{"role": "user", "content": {"type": "text", "text": text}}]);
        let filled = if legacy {
            "Use this context: none given"
        } else {
            "Use this context: the notes"
        };
        assert_eq!(
            gets[0]["result"]["messages"],
            said(filled),
            "{label}: {}",
            gets[0]
        );
        assert_eq!(
            gets[1]["result"]["messages"],
            said("Use this context: given"),
            "{label}: {}",
            gets[1]
        );
    }
}

/// The client's answers are hostile input: one that does not fit its form is refused
/// without being said back (a modern retry with `-32602`, a legacy tool with a tool error),
/// and the session carries on.
#[test]
fn official_sdks_see_an_answer_that_does_not_fit_its_form_refused() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("asking-refused");
    let server = [path_str(&example("conformance_server"))];
    let calls = json!([
        {"name": "test_input_required_result_elicitation", "arguments": {}},
        {"name": "test_input_required_result_sampling", "arguments": {}},
    ]);
    // Over the form's 64 (name) and 256 (context) characters.
    let mut options = asking_options(&[
        accept(json!({"name": format!("PLANTED-7f3a{}", "a".repeat(64))})),
        accept(json!({"context": format!("PLANTED-7f3a{}", "a".repeat(256))})),
    ]);
    let prompts = json!([{"name": "test_input_required_result_prompt"}]);
    options.extend(["--prompts".to_owned(), prompts.to_string()]);
    for sdk in SDKS {
        let label = sdk.label;
        let report = clients.report_with(sdk, &dir.0, &server, &calls, &options);
        let calls = report["calls"].as_array().unwrap();
        let gets = report["gets"].as_array().unwrap();
        if sdk.version == LEGACY {
            assert_eq!(
                tool_error(sdk, &calls[0]),
                "the client's answer was not valid",
                "{label}"
            );
            assert!(!calls[0].to_string().contains("PLANTED"), "{label}");
            let none = json!([{"role": "user",
                "content": {"type": "text", "text": "Use this context: none given"}}]);
            assert_eq!(gets[0]["result"]["messages"], none, "{label}");
        } else {
            for refused in [&calls[0], &gets[0]] {
                assert_protocol_refusal(sdk, refused, "PLANTED");
                assert_eq!(
                    refused["error"]["message"],
                    "Invalid params: an input response does not answer its input request.",
                    "{label}"
                );
            }
        }
        assert_eq!(text(sdk, &calls[1]), "The model said: hi there", "{label}");
    }
}

/// Every prompt, in the order registered, across both pages, with its arguments.
fn assert_prompts_listed(sdk: &Sdk, report: &Value) {
    let label = sdk.label;
    assert_eq!(report["promptPages"], 2, "{label}");
    let prompts = report["prompts"].as_array().unwrap();
    let names: Vec<&str> = prompts
        .iter()
        .map(|prompt| prompt["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greet", "summarize", "review"], "{label}");
    assert_eq!(
        prompts[1]["description"], "Summarizes a topic of the notes",
        "{label}"
    );
    // Each argument with its description and whether it is required (listed in the order
    // of the schema's properties, which schemars sorts by name).
    let mut arguments: Vec<(&str, &str, bool)> = prompts[1]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|argument| {
            let required = argument["required"].as_bool().unwrap_or(false);
            let description = argument["description"].as_str().unwrap();
            (argument["name"].as_str().unwrap(), description, required)
        })
        .collect();
    arguments.sort_unstable();
    assert_eq!(
        arguments,
        [
            ("style", "How to write it (plain unless given).", false),
            ("topic", "What to summarize.", true),
        ],
        "{label}"
    );
    assert!(prompts[0].get("arguments").is_none_or(|a| a == &json!([])));
}

/// The prompts got: their messages for the arguments given; the refusals `-32602` without
/// what was sent.
fn assert_prompts_got(sdk: &Sdk, report: &Value) {
    let label = sdk.label;
    let gets = report["gets"].as_array().unwrap();
    let messages = |get: &Value| get["result"]["messages"].clone();
    let said =
        |role: &str, text: &str| json!({"role": role, "content": {"type": "text", "text": text}});
    assert_eq!(
        messages(&gets[0]),
        json!([
            said("user", "Summarize the notes on security."),
            said("assistant", "I will write it tersely."),
        ]),
        "{label}: {}",
        gets[0]
    );
    assert_eq!(
        gets[0]["result"]["description"], "Summarizes a topic of the notes",
        "{label}"
    );
    assert_eq!(
        messages(&gets[1]),
        json!([
            said("user", "Summarize the notes on sandbox."),
            said("assistant", "I will write it plain."),
        ]),
        "{label}"
    );
    assert_eq!(
        messages(&gets[2]),
        json!([said("user", "Hello from the notes.")]),
        "{label}"
    );
    for refused in &gets[3..] {
        assert_protocol_refusal(sdk, refused, "PLANTED");
    }
}

/// Every resource and template, in the order registered, across both pages of each list.
fn assert_resources_listed(sdk: &Sdk, report: &Value) {
    let label = sdk.label;
    assert_eq!(report["resourcePages"], 2, "{label}");
    assert_eq!(report["templatePages"], 2, "{label}");
    let listed = |key: &str, field: &str| -> Vec<(String, String)> {
        report[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let uri = item[field].as_str().unwrap().to_owned();
                (uri, item["mimeType"].as_str().unwrap().to_owned())
            })
            .collect()
    };
    let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    assert_eq!(
        listed("resources", "uri"),
        owned(&[
            ("notes://readme", "text/markdown"),
            ("notes://logo", "image/png"),
            ("notes://changelog", "text/plain"),
        ]),
        "{label}"
    );
    assert_eq!(
        listed("resourceTemplates", "uriTemplate"),
        owned(&[
            ("notes://topic/{name}", "text/plain"),
            ("notes://day/{date}/entry", "text/plain"),
            ("notes://tag/{tag}", "text/plain"),
        ]),
        "{label}"
    );
    assert_eq!(report["resources"][0]["name"], "readme", "{label}");
    assert_eq!(
        report["resourceTemplates"][0]["description"], "The notes on one topic",
        "{label}"
    );
}

/// The reads: text, a blob, template values decoded; the refusals `-32602` without the URI.
fn assert_resources_read(sdk: &Sdk, report: &Value) {
    let label = sdk.label;
    let reads = report["reads"].as_array().unwrap();
    let contents = |read: &Value| read["result"]["contents"].clone();
    assert_eq!(
        contents(&reads[0]),
        json!([{"uri": "notes://readme", "mimeType": "text/markdown",
                "text": "# Notes\nRead me first.\n"}]),
        "{label}: {}",
        reads[0]
    );
    // The eight bytes 89 50 4E 47 00 FF FE 01, in base64.
    assert_eq!(
        contents(&reads[1]),
        json!([{"uri": "notes://logo", "mimeType": "image/png", "blob": "iVBORwD//gE="}]),
        "{label}"
    );
    assert_eq!(
        contents(&reads[2]),
        json!([{"uri": "notes://topic/caf%C3%A9", "mimeType": "text/plain",
                "text": "Notes on café."}]),
        "{label}"
    );
    assert_eq!(
        contents(&reads[3]),
        json!([{"uri": "notes://day/2026-12-01/entry", "mimeType": "text/plain",
                "text": "Entry of 2026-12-01."}]),
        "{label}"
    );
    for refused in &reads[4..] {
        assert_protocol_refusal(sdk, refused, "PLANTED");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(!message.contains(".."), "{label}: {message}");
        assert!(!message.contains("notes:"), "{label}: {message}");
    }
}

/// The completions: a prompt's argument and a template's variable complete from what was
/// typed; an argument without a completer to nothing; unknown references are refused.
fn assert_completions(sdk: &Sdk, report: &Value) {
    let label = sdk.label;
    let completions = report["completions"].as_array().unwrap();
    let values = |completion: &Value| completion["result"]["values"].clone();
    assert_eq!(
        values(&completions[0]),
        json!(["security", "sessions"]),
        "{label}: {}",
        completions[0]
    );
    assert_eq!(
        values(&completions[1]),
        json!(["sandbox", "schemas", "security", "sessions"]),
        "{label}"
    );
    assert_eq!(values(&completions[2]), json!([]), "{label}");
    for completion in &completions[..3] {
        assert_ne!(completion["result"]["hasMore"], true, "{label}");
    }
    for refused in &completions[3..] {
        assert_protocol_refusal(sdk, refused, "PLANTED");
    }
}

/// Checks a request refused with `-32602`, its message free of `planted`.
fn assert_protocol_refusal(sdk: &Sdk, answer: &Value, planted: &str) {
    let label = sdk.label;
    assert_eq!(code(sdk, answer), -32602, "{label}: {answer}");
    let error = answer["error"].to_string();
    assert!(!error.contains(planted), "{label}: {error}");
    assert!(answer.get("result").is_none(), "{label}: {answer}");
}

#[test]
fn the_inspector_cli_lists_and_calls_tools_in_both_eras() {
    let Some(clients) = Clients::find() else {
        return;
    };
    let dir = Scratch::with_notes("inspector");
    let default = [path_str(&airlock()), "serve".into()];
    let product = [path_str(&example("product_cli")), "mcp".into()];
    for era in ["legacy", "modern"] {
        // --strict: a schema the Inspector finds unportable at error severity fails the run.
        let (status, listed) = clients.inspect(&dir, era, &default, "tools/list", &["--strict"]);
        assert!(status.success(), "{era}: {listed}");
        assert_eq!(tool_names(&listed), DEFAULT_TOOLS, "{era}");

        let read = |arguments| ["--tool-name", "read_file", "--tool-args-json", arguments];
        let args = read(r#"{"path": "notes.txt"}"#);
        let (status, called) = clients.inspect(&dir, era, &default, "tools/call", &args);
        assert!(status.success(), "{era}: {called}");
        assert_eq!(called["result"]["content"][0]["text"], NOTES, "{era}");
        // A modern result names its server in `_meta`; a legacy one has no `_meta` to need it.
        let stamp = &called["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"];
        let expected = if era == "modern" {
            json!("airlock")
        } else {
            Value::Null
        };
        assert_eq!(*stamp, expected, "{era}");

        // The Inspector exits 5 on `isError: true` and still prints the result.
        let args = read(r#"{"path": "notes.txt", "max_bytes": "PLANTED"}"#);
        let (status, refused) = clients.inspect(&dir, era, &default, "tools/call", &args);
        assert_eq!(status.code(), Some(5), "{era}: {refused}");
        assert_eq!(refused["result"]["isError"], true, "{era}");
        assert!(!refused.to_string().contains("PLANTED"), "{era}: {refused}");

        let (status, listed) = clients.inspect(&dir, era, &product, "tools/list", &["--strict"]);
        assert!(status.success(), "{era}: {listed}");
        assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 3);
        let convert = [
            "--tool-name",
            "convert",
            "--tool-args-json",
            r#"{"value": 100, "from": "celsius", "to": "fahrenheit"}"#,
        ];
        let (status, called) = clients.inspect(&dir, era, &product, "tools/call", &convert);
        assert!(status.success(), "{era}: {called}");
        assert_eq!(called["result"]["content"][0]["text"], "212", "{era}");
    }
}

/// The installed clients.
struct Clients {
    dir: PathBuf,
    python: PathBuf,
    node: PathBuf,
    inspector: PathBuf,
}

impl Clients {
    /// The clients `setup.sh` installed, or `None` after saying on stderr why they are not
    /// there; fails instead when [`REQUIRE_CLIENTS`] is `1`.
    fn find() -> Option<Self> {
        let dir = repo().join("tests/clients");
        let env = dir.join(".env");
        let clients = Self {
            python: env.join("python/bin/python"),
            node: env.join("node/node_modules/.bin/node"),
            inspector: env.join("node/node_modules/.bin/mcp-inspector"),
            dir,
        };
        // setup.sh writes each stamp last, after its half installed completely.
        let needed = [
            env.join("python/.stamp"),
            env.join("node/.stamp"),
            clients.python.clone(),
            clients.node.clone(),
            clients.inspector.clone(),
        ];
        let Some(missing) = needed.iter().find(|path| !path.exists()) else {
            return Some(clients);
        };
        let reason = format!(
            "the official MCP clients are not installed ({} is missing): run \
             `bash tests/clients/setup.sh`",
            missing.display()
        );
        let required = std::env::var_os(REQUIRE_CLIENTS).is_some_and(|value| value == "1");
        assert!(!required, "{reason} ({REQUIRE_CLIENTS}=1 requires them)");
        eprintln!("skipped: {reason}");
        None
    }

    /// Runs `sdk`'s client script against the `server` command line, started in `cwd`, with
    /// `calls`; returns its report after checking that nothing but a call's JSON-RPC error
    /// went wrong.
    fn report(&self, sdk: &Sdk, cwd: &Path, server: &[String], calls: &Value) -> Value {
        self.report_with(sdk, cwd, server, calls, &[])
    }

    /// [`Clients::report`] with more of the script's options (`--prompts`, `--reads`, ...).
    fn report_with(
        &self,
        sdk: &Sdk,
        cwd: &Path,
        server: &[String],
        calls: &Value,
        options: &[String],
    ) -> Value {
        let (program, script) = match sdk.script {
            Script::Python => (&self.python, "client.py"),
            Script::TypeScript => (&self.node, "client.mjs"),
        };
        let mut args: Vec<OsString> = vec![self.dir.join(script).into()];
        args.extend(sdk.args.iter().map(OsString::from));
        args.extend(options.iter().map(OsString::from));
        args.extend(["--calls".into(), calls.to_string().into(), "--".into()]);
        args.extend(server.iter().map(OsString::from));
        let ran = run(program, &args, cwd, &[]);
        let report: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|error| {
            panic!(
                "{}: no JSON report ({error}); stdout:\n{}\nstderr:\n{}",
                sdk.label, ran.stdout, ran.stderr
            )
        });
        assert!(
            ran.status.success() && report["failures"] == json!([]),
            "{}: {} ({}); stderr:\n{}",
            sdk.label,
            report["failures"],
            ran.status,
            ran.stderr
        );
        report
    }

    /// Runs the Inspector's CLI in `era` against `server`: `method` with `args`; returns its
    /// exit status and the JSON it printed.
    fn inspect(
        &self,
        dir: &Scratch,
        era: &str,
        server: &[String],
        method: &str,
        args: &[&str],
    ) -> (ExitStatus, Value) {
        let mut all: Vec<OsString> = vec![self.inspector.clone().into()];
        let options = [
            "--cli",
            "--format",
            "json",
            "--protocol-era",
            era,
            "--method",
            method,
        ];
        all.extend(options.iter().chain(args).map(OsString::from));
        all.push("--".into());
        all.extend(server.iter().map(OsString::from));
        // Its own home: the Inspector keeps a catalog and secrets under ~/.mcp-inspector. Beside
        // the served directory, not in it: the default manifest refuses to serve a directory
        // that holds the home directory.
        let mut home = dir.0.clone().into_os_string();
        home.push("-home");
        let home = std::path::PathBuf::from(home);
        std::fs::create_dir_all(&home).unwrap();
        let ran = run(&self.node, &all, &dir.0, &[("HOME", &home)]);
        let printed = serde_json::from_str(&ran.stdout).unwrap_or_else(|error| {
            panic!(
                "Inspector, {era}: no JSON ({error}); stdout:\n{}\nstderr:\n{}",
                ran.stdout, ran.stderr
            )
        });
        (ran.status, printed)
    }
}

/// The Python SDK's `client.py` for tests in other modules (HTTPS in `http_tls`): runs it with
/// `args` (its options; `--url` instead of a server command) and returns its report after
/// checking that nothing but a call's JSON-RPC error went wrong. `None` when the client is not
/// installed, after saying so on stderr; fails instead when [`REQUIRE_CLIENTS`] is `1`.
pub fn python_report(args: &[OsString]) -> Option<Value> {
    let clients = Clients::find()?;
    let mut all: Vec<OsString> = vec![clients.dir.join("client.py").into()];
    all.extend_from_slice(args);
    let ran = run(&clients.python, &all, &clients.dir, &[]);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|error| {
        panic!(
            "Python SDK: no JSON report ({error}); stdout:\n{}\nstderr:\n{}",
            ran.stdout, ran.stderr
        )
    });
    assert!(
        ran.status.success() && report["failures"] == json!([]),
        "Python SDK: {} ({}); stderr:\n{}",
        report["failures"],
        ran.status,
        ran.stderr
    );
    let pinned = format!("mcp {} ", pinned_version(&clients, "mcp"));
    let reported = format!("{} ", report["sdk"].as_str().unwrap_or_default());
    assert!(
        reported.starts_with(&pinned),
        "{reported} is not the pinned {pinned}"
    );
    Some(report)
}

/// Checks the session: the era's version on both sides, who the server is, and (from the
/// pins) that the report comes from the SDK version setup.sh installs.
fn assert_connected(clients: &Clients, sdk: &Sdk, report: &Value, server: &str) {
    let label = sdk.label;
    let pinned = format!("{} {} ", sdk.package, pinned_version(clients, sdk.package));
    let reported = report["sdk"].as_str().unwrap();
    assert!(
        format!("{reported} ").starts_with(&pinned),
        "{label}: {reported} is not the pinned {pinned}: run `bash tests/clients/setup.sh`"
    );
    assert_eq!(report["protocolVersion"], sdk.version, "{label}");
    assert_eq!(report["serverInfo"]["name"], server, "{label}");
    assert!(report["capabilities"]["tools"].is_object(), "{label}");
    // What the client asked for, as it went on the wire (TypeScript) or as the SDK offers it
    // (Python): a legacy client's `initialize` version is echoed; a modern client stamps every
    // request with its version and never sends `initialize`.
    if let Some(offered) = report["offered"]
        .as_str()
        .filter(|offered| *offered != "auto")
    {
        assert_eq!(offered, sdk.version, "{label}");
    }
    if let Some(wire) = report["wire"].as_array() {
        if sdk.version == LEGACY {
            assert_eq!(
                wire[0],
                json!({"method": "initialize", "version": LEGACY}),
                "{label}"
            );
        } else {
            assert!(
                wire.iter()
                    .all(|sent| sent["version"] == MODERN && sent["method"] != "initialize"),
                "{label}: {wire:?}"
            );
        }
    }
}

/// Checks the listing: exactly `names`, in order, each with a description and schemas a
/// client can use (an object at the root, `required` naming only declared properties).
fn assert_tools(sdk: &Sdk, report: &Value, names: &[&str]) {
    let label = sdk.label;
    let tools = report["tools"].as_array().unwrap();
    let listed: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, names, "{label}");
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            !tool["description"].as_str().unwrap().is_empty(),
            "{label}: {name}"
        );
        for key in ["inputSchema", "outputSchema"] {
            let Some(schema) = tool.get(key) else {
                continue;
            };
            assert_eq!(schema["type"], "object", "{label}: {name} {key}");
            let properties = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().unwrap_or(&Vec::new()) {
                let required = required.as_str().unwrap();
                assert!(properties.contains_key(required), "{label}: {name} {key}");
            }
        }
        assert_eq!(tool["inputSchema"]["additionalProperties"], false);
    }
    // The Python client checks each schema against the JSON Schema 2020-12 meta-schema.
    if let Some(problems) = report.get("schemaProblems") {
        assert_eq!(*problems, json!({}), "{label}");
    }
}

/// The text of a successful call.
fn text(sdk: &Sdk, call: &Value) -> String {
    let result = &call["result"];
    assert_eq!(result["isError"], false, "{}: {call}", sdk.label);
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no result: {call}", sdk.label))
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect()
}

/// The text of a call answered with `isError: true`.
fn tool_error(sdk: &Sdk, call: &Value) -> String {
    let result = &call["result"];
    assert_eq!(result["isError"], true, "{}: {call}", sdk.label);
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// Checks a refused call: a tool error naming `argument`, without `planted` (the value sent,
/// or what reading it would have shown) anywhere in it.
fn assert_refused(sdk: &Sdk, call: &Value, argument: &str, planted: &str) {
    let text = tool_error(sdk, call);
    assert!(
        text.contains(&format!("`{argument}`")),
        "{}: {text}",
        sdk.label
    );
    assert!(!call.to_string().contains(planted), "{}: {call}", sdk.label);
}

/// The JSON-RPC error code a call got.
fn code(sdk: &Sdk, call: &Value) -> i64 {
    call["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("{}: not a JSON-RPC error: {call}", sdk.label))
}

/// The version of `package` that setup.sh installs: from requirements.txt or package.json.
fn pinned_version(clients: &Clients, package: &str) -> String {
    if package == "mcp" {
        let requirements = std::fs::read_to_string(clients.dir.join("requirements.txt")).unwrap();
        return requirements
            .lines()
            .find_map(|line| line.strip_prefix("mcp=="))
            .expect("mcp pinned in requirements.txt")
            .to_owned();
    }
    let manifest = std::fs::read_to_string(clients.dir.join("package.json")).unwrap();
    let manifest: Value = serde_json::from_str(&manifest).unwrap();
    manifest["dependencies"][package]
        .as_str()
        .unwrap_or_else(|| panic!("{package} pinned in package.json"))
        .to_owned()
}

/// A file the default-manifest tools read: 2 lines, 3 words, 17 bytes.
const NOTES: &str = "alpha gamma\nbeta\n";

/// Two tools: one whose command outlives its 300 ms deadline, one that answers.
const SLOW_MANIFEST: &str = r#"
[server]
name = "slow"

[[tool]]
name = "sleep"
description = "Sleeps for five seconds, past its deadline."
command = ["sleep", "5"]
timeout_ms = 300

[[tool]]
name = "echo"
description = "Echoes its text."
command = ["echo", "{text}"]
args.text = { type = "string", max_length = 100, description = "What to echo." }
"#;

/// A scratch directory holding `notes.txt`; removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn with_notes(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("airlock-it-clients-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), NOTES).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _removed = std::fs::remove_dir_all(&self.0);
        // The Inspector's home, kept beside the directory (see `inspect`).
        let mut home = self.0.clone().into_os_string();
        home.push("-home");
        let _removed = std::fs::remove_dir_all(home);
    }
}

/// The repository root.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn path_str(path: &Path) -> String {
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// What a finished client printed.
struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `program args…` in `cwd` to completion; fails the test after [`RUN_TIMEOUT`].
fn run(program: &Path, args: &[OsString], cwd: &Path, env: &[(&str, &Path)]) -> Ran {
    let mut command = crate::support::stdio::spawn_command(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", program.display()));
    // Read both pipes while waiting: a client blocked on a full pipe would never exit.
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _killed = child.kill();
            let _reaped = child.wait();
            panic!(
                "{} {args:?} did not finish within {RUN_TIMEOUT:?}",
                program.display()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    Ran {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn read_all(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _read = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
