//! `airlock serve` with a manifest's `[[prompt]]` and `[[resource]]`, through the real binary
//! over pipes: prompts rendered in one pass, resource files listed at start and read
//! confined beneath their root, whatever is planted there after start.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::stdio::{Server, airlock, request};

/// A scratch directory with a resource root and a manifest serving it; removed on drop.
struct Docs {
    dir: PathBuf,
}

const SECRET: &str = "outside-the-root-secret";

impl Docs {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("airlock-it-surface-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        let docs = dir.join("docs");
        std::fs::create_dir_all(docs.join("sub")).unwrap();
        std::fs::create_dir_all(docs.join(".git")).unwrap();
        std::fs::write(docs.join("hello.md"), "# Hello\n").unwrap();
        std::fs::write(docs.join("a b.txt"), "spaced").unwrap();
        std::fs::write(docs.join("logo.bin"), [0xff_u8, 0x00, 0x89, 0x50]).unwrap();
        std::fs::write(docs.join("sub/deep.txt"), "deep").unwrap();
        std::fs::write(docs.join("swap.txt"), "swapped later").unwrap();
        std::fs::write(docs.join("pipe.txt"), "a fifo later").unwrap();
        std::fs::write(docs.join("big.txt"), "x".repeat(65)).unwrap();
        std::fs::write(docs.join(".env"), SECRET).unwrap();
        std::fs::write(docs.join(".git/config"), SECRET).unwrap();
        std::fs::write(dir.join("outside.txt"), SECRET).unwrap();
        std::os::unix::fs::symlink(dir.join("outside.txt"), docs.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&dir, docs.join("up")).unwrap();
        std::fs::write(
            dir.join("tools.toml"),
            r#"
[[tool]]
name = "echo"
description = "Says hello"
command = ["echo", "hello"]

[[prompt]]
name = "review"
title = "Review"
description = "Asks for a review"
arguments = [
    { name = "change", description = "The change", required = true },
    { name = "focus" },
]
messages = [
    { role = "user", text = "Review {change} for {focus}; {{braces}} stay." },
    { role = "assistant", text = "I will review {change}." },
]

[[resource]]
name = "docs"
title = "Project docs"
description = "The project's documentation"
root = "docs"
uri = "docs://"
max_bytes = 64
"#,
        )
        .unwrap();
        Self { dir }
    }

    fn serve(&self) -> Server {
        let manifest = self.dir.join("tools.toml");
        let mut server = Server::start(
            &airlock(),
            &["serve", "--manifest", manifest.to_str().unwrap()],
        );
        server.initialize("2025-06-18");
        server
    }

    /// `reply` says nothing of the host's paths, the secret, or an OS message.
    fn assert_clean(&self, reply: &Value) {
        let text = reply.to_string();
        for leak in [
            self.dir.to_str().unwrap(),
            "/tmp",
            SECRET,
            "os error",
            "No such file",
            "denied",
            "symbolic",
        ] {
            assert!(!text.contains(leak), "`{leak}` in {text}");
        }
    }
}

impl Drop for Docs {
    fn drop(&mut self) {
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

fn not_found() -> Value {
    json!({"code": -32602, "message": "Invalid params: resource not found."})
}

fn read(server: &mut Server, id: u64, uri: &str) -> Value {
    server.request(&request(id, "resources/read", json!({ "uri": uri })))
}

#[test]
fn manifest_prompts_are_listed_and_rendered_in_one_pass() {
    let docs = Docs::new("prompts");
    let mut server = docs.serve();
    let list = server.request(&request(1, "prompts/list", json!({})));
    assert_eq!(
        list["result"]["prompts"],
        json!([{
            "name": "review",
            "title": "Review",
            "description": "Asks for a review",
            "arguments": [
                {"name": "change", "description": "The change", "required": true},
                {"name": "focus", "required": false},
            ],
        }])
    );
    let got = server.request(&request(
        2,
        "prompts/get",
        json!({"name": "review", "arguments": {"change": "{focus} #12", "focus": "safety"}}),
    ));
    assert_eq!(
        got["result"]["messages"],
        json!([
            {"role": "user", "content": {"type": "text", "text": "Review {focus} #12 for safety; {braces} stay."}},
            {"role": "assistant", "content": {"type": "text", "text": "I will review {focus} #12."}},
        ])
    );
    let optional_absent = server.request(&request(
        3,
        "prompts/get",
        json!({"name": "review", "arguments": {"change": "#7"}}),
    ));
    assert_eq!(
        optional_absent["result"]["messages"][0]["content"]["text"],
        "Review #7 for ; {braces} stay."
    );
    for (id, arguments) in [
        (4, json!({})),
        (5, json!({"focus": "x"})),
        (6, json!({"change": "x", "other": "y"})),
        (7, json!({"change": 7})),
    ] {
        let refused = server.request(&request(
            id,
            "prompts/get",
            json!({"name": "review", "arguments": arguments}),
        ));
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(!refused.to_string().contains("\"y\""), "{refused}");
    }
    let missing = server.request(&request(8, "prompts/get", json!({"name": "review"})));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
}

#[test]
fn resource_files_are_listed_by_relative_uri_without_links_or_dot_names() {
    let docs = Docs::new("list");
    let mut server = docs.serve();
    let list = server.request(&request(1, "resources/list", json!({})));
    docs.assert_clean(&list);
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|resource| resource["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "docs://a%20b.txt",
            "docs://big.txt",
            "docs://hello.md",
            "docs://logo.bin",
            "docs://pipe.txt",
            "docs://sub/deep.txt",
            "docs://swap.txt",
        ]
    );
    assert_eq!(
        list["result"]["resources"][5],
        json!({
            "uri": "docs://sub/deep.txt",
            "name": "sub/deep.txt",
            "title": "Project docs",
            "description": "The project's documentation",
        })
    );
}

#[test]
fn resource_files_read_as_text_or_blob_and_nothing_else_is_reachable() {
    let docs = Docs::new("read");
    let mut server = docs.serve();
    let text = read(&mut server, 1, "docs://hello.md");
    assert_eq!(
        text["result"]["contents"],
        json!([{"uri": "docs://hello.md", "text": "# Hello\n"}])
    );
    let spaced = read(&mut server, 2, "docs://a%20b.txt");
    assert_eq!(spaced["result"]["contents"][0]["text"], "spaced");
    let blob = read(&mut server, 3, "docs://logo.bin");
    assert_eq!(
        blob["result"]["contents"],
        json!([{"uri": "docs://logo.bin", "blob": "/wCJUA=="}])
    );
    let mut id = 10;
    for uri in [
        "docs://big.txt",
        "docs://.env",
        "docs://.git/config",
        "docs://link.txt",
        "docs://up/outside.txt",
        "docs://../outside.txt",
        "docs://sub/../../outside.txt",
        "docs://%2E%2E/outside.txt",
        "docs://sub%2Fdeep.txt",
        "docs://sub/deep.txt%00",
        "docs:///etc/passwd",
        "/etc/passwd",
        "file:///etc/passwd",
        &format!("file://{}", docs.dir.join("outside.txt").display()),
        "docs://hello.md/",
        "DOCS://hello.md",
    ] {
        id += 1;
        let reply = read(&mut server, id, uri);
        assert_eq!(reply["error"], not_found(), "{uri}: {reply}");
        docs.assert_clean(&reply);
    }
}

#[test]
fn a_link_or_fifo_planted_after_start_is_refused_at_read_time() {
    let docs = Docs::new("planted");
    let mut server = docs.serve();
    let root = docs.dir.join("docs");
    assert_eq!(
        read(&mut server, 1, "docs://swap.txt")["result"]["contents"][0]["text"],
        "swapped later"
    );
    std::fs::remove_file(root.join("swap.txt")).unwrap();
    std::os::unix::fs::symlink(docs.dir.join("outside.txt"), root.join("swap.txt")).unwrap();
    let swapped = read(&mut server, 2, "docs://swap.txt");
    assert_eq!(swapped["error"], not_found(), "{swapped}");
    docs.assert_clean(&swapped);

    // A directory on the path replaced by a link to outside.
    std::fs::remove_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir(docs.dir.join("elsewhere")).unwrap();
    std::fs::write(docs.dir.join("elsewhere/deep.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(docs.dir.join("elsewhere"), root.join("sub")).unwrap();
    let moved = read(&mut server, 3, "docs://sub/deep.txt");
    assert_eq!(moved["error"], not_found(), "{moved}");
    docs.assert_clean(&moved);

    // A hard link to a file outside, under a listed name.
    std::fs::remove_file(root.join("a b.txt")).unwrap();
    std::fs::hard_link(docs.dir.join("outside.txt"), root.join("a b.txt")).unwrap();
    let hard = read(&mut server, 7, "docs://a%20b.txt");
    assert_eq!(hard["error"], not_found(), "{hard}");
    docs.assert_clean(&hard);

    // A FIFO nobody writes: opening it must not block the session.
    std::fs::remove_file(root.join("pipe.txt")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("pipe.txt"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let fifo = read(&mut server, 4, "docs://pipe.txt");
    assert_eq!(fifo["error"], not_found(), "{fifo}");
    let ping = server.request(&request(5, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));

    // A file grown over the cap after start.
    std::fs::write(root.join("hello.md"), "y".repeat(65)).unwrap();
    let grown = read(&mut server, 6, "docs://hello.md");
    assert_eq!(grown["error"], not_found(), "{grown}");
}
