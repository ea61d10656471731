//! Fuzzing entry points of the manifest side: the loader and argv building.
//!
//! Built only for tests and with `--cfg fuzzing` (cargo-fuzz sets it), like the protocol
//! core's `airlock::fuzzing`. A broken invariant panics: that is how a fuzzer reports it.

use serde_json::Value;

/// Manifest: any text into the manifest loader; it returns, and an error renders as one
/// non-empty message.
pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(error) = crate::manifest::parse(text, "fuzz.toml", &std::env::temp_dir()) {
        let rendered = error.to_string();
        assert!(rendered.starts_with("fuzz.toml"), "{rendered}");
    }
}

/// argv: any JSON object as arguments of a tool using every placeholder shape; every string
/// value becomes exactly one argv element (or the value part of `--opt=`), literals pass
/// through unchanged and in order, and no value reaches an option position with a leading
/// dash.
pub fn argv(data: &[u8]) {
    use crate::manifest::{ArgKind, Element};
    let Ok(Value::Object(arguments)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let tool = argv_tool();
    let Ok(invocation) = crate::command::argv::build(&tool, &arguments) else {
        return;
    };
    let mut produced = invocation.args.iter();
    for element in &tool.template {
        match element {
            Element::Literal(text) => {
                assert_eq!(
                    produced.next().map(|a| a.to_str()),
                    Some(Some(text.as_str()))
                );
            }
            Element::Value {
                arg,
                prefix,
                suffix,
                after_double_dash,
            } => {
                let Some(spec) = tool.args.get(*arg) else {
                    fail("argument index")
                };
                let value = match arguments.get(&spec.name) {
                    Some(Value::Null) | None => spec.default.clone(),
                    Some(value) => Some(value.clone()),
                };
                let Some(value) = value else { continue };
                let expected: Vec<String> = match (&spec.kind, &value) {
                    (ArgKind::String(_), Value::String(text)) => vec![text.clone()],
                    (ArgKind::Integer { .. }, Value::Number(n)) => vec![n.to_string()],
                    (ArgKind::Boolean { flag: Some(flag) }, Value::Bool(true)) => {
                        vec![flag.clone()]
                    }
                    (ArgKind::Boolean { flag: Some(_) }, Value::Bool(false)) => Vec::new(),
                    (ArgKind::Array { .. }, Value::Array(items)) => items
                        .iter()
                        .map(|item| item.as_str().map(str::to_owned).unwrap_or_default())
                        .collect(),
                    _ => fail("build accepted a value of the wrong type"),
                };
                let whole = prefix.is_empty() && suffix.is_empty();
                for piece in expected {
                    let got = produced
                        .next()
                        .and_then(|a| a.to_str())
                        .unwrap_or_else(|| fail("an element is missing"));
                    assert_eq!(
                        got,
                        format!("{prefix}{piece}{suffix}"),
                        "a value was split or joined"
                    );
                    if whole && !after_double_dash && !matches!(&spec.kind, ArgKind::Boolean { .. })
                    {
                        assert!(!got.starts_with('-'), "a value reached an option position");
                    }
                }
            }
        }
    }
    assert!(produced.next().is_none(), "extra argv elements");
}

fn argv_tool() -> crate::manifest::CommandTool {
    static TOOL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let text = TOOL.get_or_init(|| {
        r#"
[[tool]]
name = "shapes"
description = "every placeholder shape"
command = ["echo", "{word}", "--count={count}", "{verbose}", "--tag={tags}", "{level}", "--", "{rest}", "{files}"]
args.word = { type = "string", max_length = 64 }
args.count = { type = "integer", minimum = 0, maximum = 9, default = 3 }
args.verbose = { type = "boolean", flag = "--verbose" }
args.tags = { type = "array", max_items = 4, default = [] }
args.level = { type = "integer", minimum = 0, maximum = 5, required = false, default = 1 }
args.rest = { type = "string", allow_leading_dash = true, required = false }
args.files = { type = "array", max_items = 3, default = [] }
"#
        .to_owned()
    });
    let manifest = crate::manifest::parse(text, "argv.toml", &std::env::temp_dir())
        .unwrap_or_else(|_| fail("the argv fuzz manifest does not load"));
    manifest
        .tools
        .into_iter()
        .next()
        .unwrap_or_else(|| fail("no tool"))
}

#[expect(clippy::panic, reason = "a fuzz finding is reported by panicking")]
fn fail(broken: &str) -> ! {
    panic!("{broken}")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use std::path::{Path, PathBuf};

    /// The largest file a corpus or the regressions may hold: libFuzzer would read a bigger
    /// one whole, but a seed that size is a corpus nobody minimized.
    const MAX_SEED_BYTES: usize = 64 * 1024;

    /// The replay of the protocol core's `airlock::fuzzing` tests (which this crate's tests
    /// cannot reach), here for the manifest side's targets. Replays every input of
    /// `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` through `run`, as libFuzzer
    /// reads them: the empty input first, then every file under the directories, in
    /// subdirectories too (but not those whose name starts with `.`), hidden and empty files
    /// included. Prints how many inputs came from each directory and returns the total. Fails, naming them, when an input panics (each input still runs), a file is
    /// over 64 KiB, or the corpus is missing or empty. The regressions may be absent.
    #[expect(
        clippy::print_stdout,
        reason = "the count is the replay's report, shown by `cargo test corpus -- --show-output`"
    )]
    pub(crate) fn replay(target: &str, run: fn(&[u8])) -> usize {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        let mut total = 0_usize;
        let mut failures = Vec::new();
        if std::panic::catch_unwind(|| run(&[])).is_err() {
            failures.push(format!("the empty input fails the {target} target"));
        }
        for kind in ["corpus", "regressions"] {
            let dir = fuzz.join(kind).join(target);
            let mut files = Vec::new();
            if dir.exists() || kind == "corpus" {
                files_under(&dir, &mut files);
            }
            files.sort();
            for file in &files {
                let bytes = std::fs::read(file).unwrap();
                let name = format!(
                    "fuzz/{kind}/{target}/{}",
                    file.strip_prefix(&dir).unwrap().display()
                );
                if bytes.len() > MAX_SEED_BYTES {
                    failures.push(format!("{name} is over 64 KiB"));
                    continue;
                }
                if std::panic::catch_unwind(|| run(&bytes)).is_err() {
                    failures.push(format!("{name} fails the {target} target"));
                }
            }
            println!("replayed {} inputs from fuzz/{kind}/{target}", files.len());
            if kind == "corpus" {
                assert!(!files.is_empty(), "fuzz/corpus/{target} holds no input");
            }
            total += files.len();
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        total
    }

    /// The files under `dir` as libFuzzer lists a corpus: recursively, regular files and
    /// symbolic links, skipping subdirectories whose name starts with `.`.
    fn files_under(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                if !entry.file_name().to_string_lossy().starts_with('.') {
                    files_under(&path, files);
                }
            } else {
                files.push(path);
            }
        }
    }

    #[test]
    fn the_entry_points_accept_their_seeds() {
        manifest(crate::manifest::DEFAULT_MANIFEST.as_bytes());
        manifest(b"[[tool]]\nname = 1");
        argv(br#"{"word": "a b; $(x)", "verbose": true, "tags": ["-x", "y"], "rest": "-rf", "files": ["f"]}"#);
        argv(br#"{"word": "-rf"}"#);
    }

    #[test]
    fn corpus_replays_manifest() {
        assert!(replay("manifest", manifest) > 0);
    }

    #[test]
    fn corpus_replays_argv() {
        assert!(replay("argv", argv) > 0);
    }
}
