// The corpus replay shared by the fuzzing tests of every crate of the workspace: each crate's
// `fuzzing::tests` module takes it with `include!("../../../fuzz/replay.rs")` (one copy, and
// `CARGO_MANIFEST_DIR` is the including crate's, two levels below the repository). It needs
// `std::path::{Path, PathBuf}` in scope. Test code only: it reads files and panics on failure.

/// The largest file a corpus or the regressions may hold: libFuzzer would read a bigger
/// one whole, but a seed that size is a corpus nobody minimized.
const MAX_SEED_BYTES: usize = 64 * 1024;

/// Replays every input of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` through
/// `run`, as libFuzzer reads them: the empty input first, then every file under the
/// directories, in subdirectories too (but not those whose name starts with `.`), hidden
/// and empty files included. Prints how many inputs came from each directory and returns
/// the total. Fails, naming them, when an input panics (each input still runs), a file is
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
        total = total.saturating_add(files.len());
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
