//! Arguments through the real binary (issue 15): absolute paths inside a path argument's root,
//! and a template's literal braces.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::harness::{Server, airlock, call, run};

/// A scratch tree: `work/` (the tools' workdir, with `data/lib.rs`, a Makefile and an awk
/// program) and a sibling `outside/secret.txt` no tool may read.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "airlock-it-arguments-{name}-{}",
            std::process::id()
        ));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("work/data")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(dir.join("work/data/lib.rs"), "// rust\n").unwrap();
        std::fs::write(
            dir.join("work/Makefile"),
            "$(info made $(MAKECMDGOALS))\nall:\n",
        )
        .unwrap();
        std::fs::write(dir.join("work/count.awk"), "{ n++ } END { print n + 0 }\n").unwrap();
        std::fs::write(dir.join("outside/secret.txt"), "TOPSECRET-outside\n").unwrap();
        Self {
            dir: dir.canonicalize().unwrap(),
        }
    }

    fn write_manifest(&self, text: &str) -> String {
        let path = self.dir.join("tools.toml");
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }

    /// `airlock check` on `text`: its exit code and what it printed (stdout, then stderr).
    fn check(&self, text: &str) -> (Option<i32>, String) {
        let path = self.write_manifest(text);
        let output = run(&airlock(), &["check", "--manifest", &path], &[]);
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.code(), printed)
    }

    /// Serves `text` (which `airlock check` must accept), handshake done.
    fn serve(&self, text: &str) -> Server {
        let (code, printed) = self.check(text);
        assert_eq!(
            code,
            Some(0),
            "airlock check refused the manifest:\n{printed}"
        );
        let path = self.write_manifest(text);
        let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
        server.initialize("2025-11-25");
        server
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {reply}"))
        .to_owned()
}

fn is_error(reply: &Value) -> bool {
    reply["result"]["isError"] == json!(true)
}

/// Item 7: an absolute path is accepted when it resolves inside the root, and refused with the
/// one message for "missing" and "outside" otherwise.
#[test]
fn absolute_paths_inside_the_root_are_accepted() {
    let scratch = Scratch::new("absolute");
    let mut server = scratch.serve(
        r#"
[[tool]]
name = "read"
description = "Reads a file inside work"
command = ["cat", "--", "{file}"]
workdir = "work"
args.file = { type = "path", kind = "file" }
"#,
    );
    let inside = scratch.dir.join("work/data/lib.rs");
    let reply = server.request(&call(1, "read", json!({"file": inside.to_str().unwrap()})));
    assert!(!is_error(&reply), "{reply}");
    assert_eq!(text(&reply), "// rust\n");
    let dotted = format!("{}/work/data/../data/lib.rs", scratch.dir.display());
    let reply = server.request(&call(2, "read", json!({"file": dotted})));
    assert_eq!(text(&reply), "// rust\n");
    let refused =
        "Invalid arguments: `file` must name an existing file inside the tool's directory.";
    for (id, path) in [
        (3, scratch.dir.join("outside/secret.txt")),
        (4, scratch.dir.join("work/../outside/secret.txt")),
        (5, PathBuf::from("/etc/passwd")),
        (6, scratch.dir.join("work/no-such-file")),
        (7, PathBuf::from("/no/such/file")),
        (8, scratch.dir.join("work/data")),
    ] {
        let reply = server.request(&call(id, "read", json!({"file": path.to_str().unwrap()})));
        assert!(is_error(&reply), "{}: {reply}", path.display());
        assert_eq!(text(&reply), refused, "{}", path.display());
    }
}

/// Item 8: `{{` and `}}` stand for literal braces, so `find … -exec cat {} +` can be written.
#[test]
fn doubled_braces_are_literal_braces_in_a_template() {
    let scratch = Scratch::new("braces");
    let manifest = r#"
[[tool]]
name = "braces"
description = "Echoes braces around a word"
command = ["echo", "{{}}", "{{{word}", "a}}b"]
accept_risk = ["embedded_placeholder"]
args.word = { type = "string" }

[[tool]]
name = "cat_all"
description = "Prints every Rust file under data"
command = ["find", "data", "-name", "*.rs", "-exec", "cat", "{{}}", "+"]
workdir = "work"
exec = ["cat"]
"#;
    let (code, printed) = scratch.check(manifest);
    assert_eq!(code, Some(0), "{printed}");
    assert!(
        printed.contains(r#"  argv:    /usr/bin/find data -name "*.rs" -exec cat "{}" +"#),
        "{printed}"
    );
    let mut server = scratch.serve(manifest);
    let reply = server.request(&call(1, "braces", json!({"word": "w"})));
    assert_eq!(text(&reply), "{} {w a}b\n");
    let reply = server.request(&call(2, "cat_all", json!({})));
    assert_eq!(text(&reply), "// rust\n");
}
