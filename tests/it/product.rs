//! The example product CLI used as a CLI: the same functions its `mcp` subcommand serves.

use serde_json::Value;

use crate::support::stdio::{example, run};

fn product(args: &[&str]) -> (bool, String, String) {
    let output = run(&example("product_cli"), args, &[]);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn stats_prints_the_same_structure_the_tool_returns() {
    let (ok, stdout, _) = product(&["stats", "the quick brown fox jumps over the lazy dog"]);
    assert!(ok);
    let stats: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(stats["words"], 9);
    assert_eq!(stats["lines"], 1);
    assert_eq!(stats["most_frequent_word"], "the");
    assert_eq!(stats["most_frequent_count"], 2);
}

#[test]
fn convert_refuses_what_the_tool_refuses() {
    let (ok, stdout, _) = product(&["convert", "100", "--from", "celsius", "--to", "fahrenheit"]);
    assert!(ok);
    assert_eq!(stdout.trim(), "212");
    let (ok, _, stderr) = product(&["convert", "-500", "--from", "fahrenheit", "--to", "kelvin"]);
    assert!(!ok);
    assert!(stderr.contains("absolute zero"), "{stderr}");
}

#[test]
fn case_changes_the_style() {
    let (ok, stdout, _) = product(&["case", "Hello wide World", "--style", "kebab"]);
    assert!(ok);
    assert_eq!(stdout.trim(), "hello-wide-world");
}
