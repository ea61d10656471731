//! Red-team regressions for a manifest's `[[resource]]` roots, through the real binary: a
//! hostile agent sending URIs, other local users changing the tree under the root while the
//! server lists and reads it, hostile HTTP clients, and a careless operator's manifest.
//!
//! Findings (each test failed against the code it was written for):
//!
//! - names with invisible characters outside the few the listing checks (Unicode tags, the
//!   Arabic letter mark, soft hyphen, line separator, variation selectors, fillers) are
//!   listed and served;
//! - the walk at start follows a directory swapped for a symbolic link while it lists, so
//!   names of files outside the root are listed;
//! - a file renamed over a listed name (a dot-file of the root, a file from outside it) is
//!   served: one name, so the hard-link check does not see it;
//! - HTTP clients that never read the reply to a `resources/read` of a 1 MiB file each
//!   hold the whole reply (six times the file when it is control bytes): no call slot bounds
//!   them;
//! - roots that hold every user's home directory or the system's caches, backups or mail
//!   are accepted when `HOME` is not inside them;
//! - URI prefixes of schemes a client acts on (`javascript:`, `data:`, `ftp:`, `smb:`) are
//!   accepted;
//! - (informational) redaction makes a read longer than its `max_bytes`.
//!
//! Everything else here held, and is kept so that it goes on holding.

use std::io::Write as _;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::stdio::{Server, airlock, request, run};

pub(crate) const SECRET: &str = "outside-the-root-secret";

/// A scratch directory holding `docs/` (the root), `outside.txt` beside it (holding
/// [`SECRET`]) and `tools.toml`; removed on drop. Shared with `redteam_release`.
pub(crate) struct Tree {
    pub(crate) dir: PathBuf,
}

pub(crate) const ECHO: &str = r#"
[[tool]]
name = "echo"
description = "Says hello"
command = ["echo", "hello"]
"#;

pub(crate) const DOCS: &str = r#"
[[resource]]
name = "docs"
root = "docs"
uri = "docs://"
"#;

impl Tree {
    pub(crate) fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "airlock-it-rt-resources-{name}-{}",
            std::process::id()
        ));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("docs")).unwrap();
        std::fs::write(dir.join("outside.txt"), SECRET).unwrap();
        Self { dir }
    }

    pub(crate) fn docs(&self) -> PathBuf {
        self.dir.join("docs")
    }

    fn write(&self, relative: &str, contents: impl AsRef<[u8]>) {
        let path = self.docs().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }

    pub(crate) fn manifest(&self, text: &str) -> PathBuf {
        let path = self.dir.join("tools.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    pub(crate) fn serve_with(&self, text: &str, env: &[(&str, &str)]) -> Server {
        let manifest = self.manifest(text);
        let mut server = Server::start_with(
            &airlock(),
            &["serve", "--manifest", manifest.to_str().unwrap()],
            env,
        );
        server.initialize("2025-11-25");
        server
    }

    fn serve(&self) -> Server {
        self.serve_with(&format!("{ECHO}{DOCS}"), &[])
    }

    /// `reply` says nothing of the host's paths, the secret or an OS message.
    fn assert_clean(&self, reply: &Value) {
        let text = reply.to_string();
        for leak in [
            self.dir.to_str().unwrap(),
            "/tmp",
            SECRET,
            "OUTSIDE",
            "os error",
            "No such file",
            "denied",
            "symbolic",
        ] {
            assert!(!text.contains(leak), "`{leak}` in {text}");
        }
    }
}

impl Drop for Tree {
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

fn listed_uris(server: &mut Server, id: u64) -> Vec<String> {
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.map_or_else(|| json!({}), |cursor| json!({ "cursor": cursor }));
        let list = server.request(&request(id, "resources/list", params));
        let page = list["result"]["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("not a resources/list result: {list}"));
        uris.extend(
            page.iter()
                .map(|resource| resource["uri"].as_str().unwrap().to_owned()),
        );
        match list["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return uris,
        }
    }
}

fn text_of(reply: &Value) -> &str {
    reply["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a text read: {reply}"))
}

// --- Findings ---------------------------------------------------------------------------

/// Finding (low): the listing skips names with control characters and a few invisible ones
/// (U+200B to U+200F, U+202A to U+202E, U+2060 to U+2069, U+FEFF), and promises names "free
/// of control and invisible characters". Others that show nothing pass: Unicode tag
/// characters (U+E0000 block: invisible ASCII a model reads, the "ASCII smuggling" of prompt
/// injection), the Arabic letter mark (U+061C, a bidirectional mark like U+200E/U+200F),
/// the soft hyphen, the line and paragraph separators (line breaks to JavaScript), the
/// Mongolian vowel separator, variation selectors, the combining grapheme joiner and the
/// Hangul fillers. Anyone who can create a file under the root shows the agent and the
/// client a `name` that reads differently from the one served.
#[test]
fn names_with_invisible_characters_are_not_listed() {
    let tree = Tree::new("invisible");
    tree.write("plain.md", "plain");
    for name in [
        "tag\u{E0049}\u{E0067}\u{E006E}.md",
        "alm\u{061C}.md",
        "shy\u{00AD}.md",
        "ls\u{2028}x.md",
        "ps\u{2029}x.md",
        "mvs\u{180E}.md",
        "vs\u{FE0F}.md",
        "cgj\u{034F}.md",
        "hf\u{3164}.md",
        "hw\u{FFA0}.md",
        "ia\u{FFF9}x.md",
    ] {
        tree.write(name, "hidden");
    }
    let mut server = tree.serve();
    assert_eq!(listed_uris(&mut server, 1), ["docs://plain.md"]);
}

/// Finding (low): the walk at start lists each directory by path (`read_dir` of
/// `root/relative`), and a path follows symbolic links. A directory seen as a directory when
/// its parent was read, then swapped for a link (one `renameat2(RENAME_EXCHANGE)`) before the
/// walk reaches it, is listed through the link: the names of files outside the root (any
/// directory airlock's user can read) reach the agent. Reads still refuse them (`openat2`
/// beneath the root), so names leak, not contents. Won within the first two starts here
/// (and in 12 of 30 with a slower flipper in Python).
#[test]
fn the_walk_at_start_never_lists_through_a_directory_swapped_for_a_link() {
    let tree = Tree::new("walk-race");
    tree.write("sub/inside.txt", "inside");
    for i in 0..200 {
        tree.write(&format!("f{i:03}.txt"), "x");
    }
    let private = tree.dir.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::write(private.join("OUTSIDE-NAME.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(&private, tree.docs().join("link")).unwrap();
    let manifest = tree.manifest(&format!("{ECHO}{DOCS}"));

    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        let (sub, link) = (tree.docs().join("sub"), tree.docs().join("link"));
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    sub.as_path(),
                    rustix::fs::CWD,
                    link.as_path(),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
            }
        })
    };
    let mut leaked = Vec::new();
    for attempt in 0..60 {
        let mut server = Server::start(
            &airlock(),
            &["serve", "--manifest", manifest.to_str().unwrap()],
        );
        server.initialize("2025-11-25");
        let uris = listed_uris(&mut server, 1);
        leaked.extend(
            uris.into_iter()
                .filter(|uri| uri.contains("OUTSIDE"))
                .map(|uri| format!("start {attempt}: {uri}")),
        );
        if !leaked.is_empty() {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    assert!(leaked.is_empty(), "listed outside the root: {leaked:?}");
}

/// Finding (low to medium, by what the root holds): a file renamed over a listed name is
/// served, because it has one name: the hard-link check (`st_nlink == 1`) is there so that a
/// file from elsewhere cannot appear under a listed name, and a rename does just that without
/// a second name. Whoever can write a directory of the root (a group-writable project, no
/// sticky bit) but cannot read the operator's `0600` `.env` in it renames it over `hello.md`
/// and has the agent read it; so for any file of airlock's user in a directory they can
/// write on the same file system. The contents of a file the listing skipped on purpose, and
/// of a file that was outside the root, are served.
#[test]
fn a_file_renamed_over_a_listed_name_is_not_served() {
    let tree = Tree::new("renamed");
    tree.write("hello.md", "# Hello\n");
    tree.write("notes.md", "notes");
    tree.write(".env", format!("API_KEY={SECRET}"));
    let mut server = tree.serve();
    assert_eq!(
        listed_uris(&mut server, 1),
        ["docs://hello.md", "docs://notes.md"]
    );
    std::fs::rename(tree.docs().join(".env"), tree.docs().join("hello.md")).unwrap();
    let dot_file = read(&mut server, 2, "docs://hello.md");
    tree.assert_clean(&dot_file);
    std::fs::rename(tree.dir.join("outside.txt"), tree.docs().join("notes.md")).unwrap();
    let outside = read(&mut server, 3, "docs://notes.md");
    tree.assert_clean(&outside);
}

/// Peak resident memory allowed to the server with clients that never read their replies
/// (`SECURITY.md`: 48 MiB with the defaults).
/// Peak RSS allowed to the server while clients never read their `resources/read` replies:
/// the replies hold call slots now, so at most `max_in_flight` (8) of them wait, each at most
/// 6 MiB here (1 MiB of control bytes escaped), beside the process itself (SECURITY.md).
const NON_READING_CLIENTS_RSS_KIB: u64 = 64 * 1024;

/// Was a finding (medium), fixed: over HTTP, a `resources/read` reply was a cheap method's,
/// holding no call slot while it waited for a reader, so each client that sent one and never
/// read kept the whole reply until its connection's write timeout (and a client that takes a
/// byte now and then never reaches it). A 1 MiB file of control bytes is a 6 MiB reply: 40
/// clients, within the defaults, took the server to about 270 to 290 MiB. Now a large reply
/// (`resources/read`, `prompts/get`) holds the server's and the client's slots until it is
/// written, as a call's does: about 48 MiB.
#[test]
fn http_clients_that_never_read_resource_replies_hold_bounded_memory() {
    crate::support::processes::raise_open_files(4096);
    let tree = Tree::new("http-unread");
    tree.write("control.txt", vec![1_u8; 1024 * 1024]);
    let manifest = tree.manifest(&format!("{ECHO}{DOCS}"));
    let server =
        crate::support::http::HttpServer::airlock(&["--manifest", manifest.to_str().unwrap()], &[]);
    let read = crate::support::http::modern_bytes(
        server.addr,
        1,
        "resources/read",
        json!({"uri": "docs://control.txt"}),
        &[("Connection", "keep-alive")],
    );
    let mut sockets = Vec::new();
    for _ in 0..40 {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        // A small receive window: what the client does not take stays in the server.
        socket.set_recv_buffer_size(4096).unwrap();
        socket.connect(&server.addr.into()).unwrap();
        let mut socket: TcpStream = socket.into();
        socket.write_all(&read).unwrap();
        sockets.push(socket);
        thread::sleep(Duration::from_millis(20));
    }
    let settle = Instant::now();
    let mut last = 0;
    while settle.elapsed() < Duration::from_secs(8) {
        thread::sleep(Duration::from_millis(250));
        let now = crate::support::processes::peak_rss_kib(server.pid());
        if now == last && settle.elapsed() > Duration::from_secs(2) {
            break;
        }
        last = now;
    }
    let peak = crate::support::processes::peak_rss_kib(server.pid());
    drop(sockets);
    eprintln!(
        "40 non-reading clients of a 1 MiB resource: peak RSS {} MiB",
        peak / 1024
    );
    assert!(
        peak <= NON_READING_CLIENTS_RSS_KIB,
        "peak RSS {peak} KiB past the bound of {NON_READING_CLIENTS_RSS_KIB} KiB"
    );
}

/// `airlock check` of a manifest serving `root`, with `HOME` set to `home`; (success, output).
fn check_root(tree: &Tree, root: &str, uri: &str, home: &Path) -> (bool, String) {
    let manifest = tree.manifest(&format!(
        "{ECHO}\n[[resource]]\nname = \"docs\"\nroot = \"{root}\"\nuri = \"{uri}\"\n"
    ));
    let output = run(
        &airlock(),
        &["check", manifest.to_str().unwrap()],
        &[("HOME", home.to_str().unwrap())],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// Finding (low, an operator's mistake let through): a root is refused when it is, holds or
/// lies in a tree no sandboxed command may *write*, or the home directory named by `HOME`.
/// Reading is another matter: `/home` holds every user's home directory and is refused only
/// when `HOME` happens to be inside it (airlock run as root, as a service user, or with
/// another `HOME`, serves every user's non-dot files); `/var/cache` holds debconf's
/// `passwords.dat`, `/var/backups` the `shadow` and `gshadow` backups, `/var/mail` the mail
/// spool, and airlock running as root reads them all. (`/var` itself is refused, for holding
/// `/var/lib`.)
#[test]
fn roots_holding_other_users_homes_or_system_state_are_refused() {
    let tree = Tree::new("roots");
    let home = tree.dir.join("home");
    std::fs::create_dir(&home).unwrap();
    let mut accepted = Vec::new();
    for root in ["/home", "/var/cache", "/var/backups", "/var/mail"] {
        if !Path::new(root).is_dir() {
            continue;
        }
        let (ok, text) = check_root(&tree, root, "docs://", &home);
        if ok || !text.contains("may not be a resource root") {
            let last = text.trim().lines().last().unwrap_or_default().to_owned();
            accepted.push(format!("{root}: {last}"));
        }
    }
    assert!(accepted.is_empty(), "roots not refused: {accepted:#?}");
}

/// Finding (low): the URI prefix refuses `file`, `http` and `https` "a client could fetch
/// those itself, or take them for a host path", and takes every other scheme: a client that
/// shows resource URIs as links runs `javascript://…` (a listed name with U+2028, which the
/// listing lets through, ends the `//` comment), opens `data:`, and fetches `ftp://` or
/// `smb://` itself, where the first segment of a file's path is the host (a file named
/// `attacker.example` under an `smb://` root is a link to that host).
#[test]
fn uri_prefixes_of_schemes_clients_act_on_are_refused() {
    let tree = Tree::new("schemes");
    tree.write("a.txt", "a");
    let mut accepted = Vec::new();
    for uri in [
        "javascript://",
        "data://",
        "vbscript://",
        "ftp://",
        "smb://",
    ] {
        let (ok, text) = check_root(&tree, "docs", uri, &tree.dir);
        if ok {
            accepted.push(uri);
        } else {
            assert!(text.contains("`uri`"), "{uri}: {text}");
        }
    }
    assert!(accepted.is_empty(), "prefixes accepted: {accepted:?}");
}

/// Was a finding (informational), fixed: `max_bytes` was the largest file read, and what a
/// read gave could be larger: each occurrence of a secret becomes the 10-byte marker, so a 64-byte file of a
/// 4-byte secret (the shortest allowed) repeated gives 142 bytes, up to about 2.2 times the
/// cap. Now a file redacted past its cap is not served (whole or not at all).
#[test]
fn redaction_does_not_make_a_read_longer_than_its_cap() {
    let tree = Tree::new("redaction-cap");
    tree.write("many.txt", ["ABCD"; 13].join(" "));
    let mut server = tree.serve_with(
        r#"
[[tool]]
name = "echo"
description = "Says hello"
command = ["echo", "hello"]
secret_env = ["SHORT_TOKEN"]

[[resource]]
name = "docs"
root = "docs"
uri = "docs://"
max_bytes = 64
"#,
        &[("SHORT_TOKEN", "ABCD")],
    );
    // Whole or not at all: redacted past its cap, the file is not served.
    let reply = read(&mut server, 1, "docs://many.txt");
    assert_eq!(reply["error"], not_found(), "{reply}");
    assert!(!reply.to_string().contains("ABCD"), "{reply}");
    tree.write("few.txt", "one ABCD here");
    drop(server);
    let mut server = tree.serve_with(
        r#"
[[tool]]
name = "echo"
description = "Says hello"
command = ["echo", "hello"]
secret_env = ["SHORT_TOKEN"]

[[resource]]
name = "docs"
root = "docs"
uri = "docs://"
max_bytes = 64
"#,
        &[("SHORT_TOKEN", "ABCD")],
    );
    let reply = read(&mut server, 2, "docs://few.txt");
    assert_eq!(text_of(&reply), "one [REDACTED] here");
}

// --- Attacks that held ------------------------------------------------------------------

/// Holds: URIs beyond `serve_surface.rs`'s sixteen (encodings, normalisation, fragments,
/// whitespace, another root's prefix, huge) match nothing and are not echoed.
#[test]
fn hostile_uris_match_nothing_and_are_not_echoed() {
    let tree = Tree::new("uris");
    tree.write("hello.md", "# Hello\n");
    tree.write("a b.txt", "spaced");
    tree.write("sub/deep.txt", "deep");
    tree.write("\u{e9}.txt", "nfc");
    let mut server = tree.serve_with(
        &format!(
            "{ECHO}{DOCS}\n[[resource]]\nname = \"guide\"\nroot = \"docs/sub\"\nuri = \"docs://guide/\"\n"
        ),
        &[],
    );
    assert_eq!(
        listed_uris(&mut server, 1),
        [
            "docs://%C3%A9.txt",
            "docs://a%20b.txt",
            "docs://hello.md",
            "docs://sub/deep.txt",
            "docs://guide/deep.txt",
        ]
    );
    assert_eq!(text_of(&read(&mut server, 2, "docs://%C3%A9.txt")), "nfc");
    assert_eq!(
        text_of(&read(&mut server, 3, "docs://guide/deep.txt")),
        "deep"
    );
    let long = format!("docs://{}", "a/".repeat(1500));
    let huge = format!("docs://{}", "x".repeat(600_000));
    let mut id = 10;
    for uri in [
        "docs://hello.md#x",
        "docs://hello.md?x=1",
        "docs://hello.md;x",
        "docs://./hello.md",
        "docs://sub//deep.txt",
        "docs://sub/./deep.txt",
        "docs://sub/%2e%2e/hello.md",
        "docs://sub/deep.txt/.",
        "docs://sub/deep.txt/..",
        "docs://guide/../hello.md",
        "docs://guide/",
        "docs://guide",
        "docs://",
        "docs:",
        "",
        "docs://%68ello.md",
        "docs://hello%2Emd",
        "docs://a%2520b.txt",
        "docs://a+b.txt",
        "docs://%c3%a9.txt",
        "docs://\u{e9}.txt",
        "docs://e\u{301}.txt",
        "docs://e%CC%81.txt",
        "docs://%C0%AE%C0%AE/outside.txt",
        "docs://%%32%65%%32%65/outside.txt",
        "docs://\u{FF0E}\u{FF0E}/outside.txt",
        "\u{FF44}ocs://hello.md",
        "docs:/hello.md",
        "docs:hello.md",
        " docs://hello.md",
        "docs://hello.md ",
        "docs://hello.md\n",
        "docs://hello.md\u{0}",
        "docs://HELLO.MD",
        "docs://sub\\deep.txt",
        "docs://sub%5Cdeep.txt",
        "docs://hello.md%",
        "docs://hello.md%0",
        &long,
        &huge,
    ] {
        id += 1;
        let reply = read(&mut server, id, uri);
        assert_eq!(reply["error"], not_found(), "{uri:?}: {reply}");
        tree.assert_clean(&reply);
        assert!(
            uri.len() < 8 || !reply.to_string().contains(uri),
            "{uri:?} echoed: {reply}"
        );
    }
    for (id, params) in [
        (100, json!({"uri": 7})),
        (101, json!({"uri": null})),
        (102, json!({"uri": ["docs://hello.md"]})),
        (103, json!({"uri": {"uri": "docs://hello.md"}})),
        (104, json!({})),
    ] {
        let reply = server.request(&request(id, "resources/read", params));
        assert_eq!(reply["error"], not_found(), "{reply}");
    }
    let smuggled = server.request(&request(
        105,
        "resources/read",
        json!({"uri": "docs://hello.md", "path": "/etc/passwd"}),
    ));
    assert_eq!(smuggled["error"]["code"], -32602, "{smuggled}");
    assert!(smuggled["result"].is_null(), "{smuggled}");
    // Two `uri` members: refused whole, neither read.
    for (id, first, second) in [
        (106, "docs://hello.md", "docs://../outside.txt"),
        (107, "docs://../outside.txt", "docs://hello.md"),
    ] {
        server.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"{first}","uri":"{second}"}}}}"#
        ));
        let reply = server.recv();
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        tree.assert_clean(&reply);
    }
    // Raw overlong UTF-8 for `..`: not even JSON text.
    let mut line =
        br#"{"jsonrpc":"2.0","id":108,"method":"resources/read","params":{"uri":"docs://"#.to_vec();
    line.extend_from_slice(b"\xc0\xae\xc0\xae/outside.txt\"}}\n");
    server.write(&line);
    let reply = server.recv();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    let ping = server.request(&request(109, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

/// Holds: a listed file replaced after start by a directory, a socket, a sparse 1 TiB file,
/// or (as root) a device node, or hard-linked to another listed file, is refused at once;
/// the session goes on.
#[test]
fn listed_files_replaced_by_what_is_no_plain_file_are_refused_at_once() {
    let tree = Tree::new("replaced");
    for name in [
        "dir.txt",
        "sock.txt",
        "sparse.txt",
        "dev.txt",
        "twin.txt",
        "hello.md",
    ] {
        tree.write(name, "original");
    }
    let mut server = tree.serve();
    let docs = tree.docs();
    std::fs::remove_file(docs.join("dir.txt")).unwrap();
    std::fs::create_dir(docs.join("dir.txt")).unwrap();
    std::fs::write(docs.join("dir.txt/inside"), SECRET).unwrap();
    std::fs::remove_file(docs.join("sock.txt")).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(docs.join("sock.txt")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(docs.join("sparse.txt"))
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    std::fs::remove_file(docs.join("dev.txt")).unwrap();
    let device = rustix::fs::mknodat(
        rustix::fs::CWD,
        docs.join("dev.txt"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(1, 5),
    );
    if device.is_err() {
        // Not root: a FIFO stands in (serve_surface.rs has one too).
        rustix::fs::mknodat(
            rustix::fs::CWD,
            docs.join("dev.txt"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }
    std::fs::remove_file(docs.join("twin.txt")).unwrap();
    std::fs::hard_link(docs.join("hello.md"), docs.join("twin.txt")).unwrap();
    let mut id = 0;
    for uri in [
        "docs://dir.txt",
        "docs://sock.txt",
        "docs://sparse.txt",
        "docs://dev.txt",
        "docs://twin.txt",
        "docs://hello.md",
    ] {
        id += 1;
        let started = Instant::now();
        let reply = read(&mut server, id, uri);
        assert_eq!(reply["error"], not_found(), "{uri}: {reply}");
        tree.assert_clean(&reply);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{uri} took long"
        );
    }
    let ping = server.request(&request(99, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

/// Holds: another process holding a write lease (`F_SETLEASE`) on a listed file would make a
/// blocking `open` wait for the lease break (45 s by default); the read's `O_NONBLOCK` makes
/// it fail at once instead. Needs `python3` to hold the lease; skipped without it.
#[test]
fn a_lease_on_a_listed_file_cannot_stall_the_session() {
    let tree = Tree::new("lease");
    tree.write("leased.txt", "leased");
    let mut server = tree.serve();
    let holder = crate::support::stdio::spawn_command(Path::new("python3"))
        .args([
            "-c",
            "import fcntl, os, signal, sys, time\n\
             signal.signal(signal.SIGIO, signal.SIG_IGN)\n\
             fd = os.open(sys.argv[1], os.O_RDONLY)\n\
             fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)\n\
             print('held', flush=True)\n\
             time.sleep(60)\n",
        ])
        .arg(tree.docs().join("leased.txt"))
        .stdout(std::process::Stdio::piped())
        .spawn();
    let Ok(mut holder) = holder else {
        eprintln!("python3 not found: the lease attack is not run");
        return;
    };
    let mut held = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut held,
    )
    .unwrap();
    if held.trim() != "held" {
        let _killed = holder.kill();
        eprintln!("no lease could be taken here: the lease attack is not run");
        return;
    }
    let started = Instant::now();
    let reply = read(&mut server, 1, "docs://leased.txt");
    let took = started.elapsed();
    let _killed = holder.kill();
    let _reaped = holder.wait();
    assert_eq!(reply["error"], not_found(), "{reply}");
    assert!(took < Duration::from_secs(5), "the read waited {took:?}");
    let ping = server.request(&request(2, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

/// Holds: the root is held open from the load: renamed away and replaced by a link to
/// another directory (or by a new directory) holding the same names, it goes on serving what
/// the directory opened at load holds; deleted, it serves nothing, and the session goes on.
#[test]
fn a_root_replaced_after_start_goes_on_serving_the_directory_opened_at_load() {
    let tree = Tree::new("root-swap");
    tree.write("hello.md", "# Hello\n");
    let mut server = tree.serve();
    let evil = tree.dir.join("evil");
    std::fs::create_dir(&evil).unwrap();
    std::fs::write(evil.join("hello.md"), SECRET).unwrap();
    std::fs::rename(tree.docs(), tree.dir.join("docs.old")).unwrap();
    std::os::unix::fs::symlink(&evil, tree.docs()).unwrap();
    assert_eq!(
        text_of(&read(&mut server, 1, "docs://hello.md")),
        "# Hello\n"
    );
    std::fs::remove_file(tree.docs()).unwrap();
    std::fs::create_dir(tree.docs()).unwrap();
    std::fs::write(tree.docs().join("hello.md"), SECRET).unwrap();
    assert_eq!(
        text_of(&read(&mut server, 2, "docs://hello.md")),
        "# Hello\n"
    );
    std::fs::remove_dir_all(tree.dir.join("docs.old")).unwrap();
    let gone = read(&mut server, 3, "docs://hello.md");
    assert_eq!(gone["error"], not_found(), "{gone}");
    tree.assert_clean(&gone);
    let ping = server.request(&request(4, "ping", json!({})));
    assert_eq!(ping["result"], json!({}));
}

/// Holds: roots reached through `/proc` and `/dev` magic links and symbolic links to system
/// trees are refused by their real path; a file is no root; a root whose file would have the
/// URI of another root's file (`docs://` holding `guide/x.txt` beside `docs://guide/`) is
/// refused.
#[test]
fn roots_through_magic_links_and_links_to_system_trees_are_refused() {
    let tree = Tree::new("root-links");
    tree.write("guide/x.txt", "x");
    std::fs::create_dir(tree.dir.join("g2")).unwrap();
    std::fs::write(tree.dir.join("g2/x.txt"), "y").unwrap();
    std::os::unix::fs::symlink("/etc", tree.dir.join("etc-link")).unwrap();
    std::os::unix::fs::symlink("/proc/self", tree.dir.join("proc-link")).unwrap();
    let home = tree.dir.join("home");
    std::fs::create_dir(&home).unwrap();
    for root in [
        "/proc/self",
        "/proc/self/root",
        "/proc/self/fd",
        "/dev/fd",
        "/dev/shm",
        "/run/user",
        "/sys/fs",
        "//etc",
        "/etc/../etc/.",
        "etc-link",
        "proc-link",
        "outside.txt",
    ] {
        if root.starts_with('/') && !Path::new(root).exists() {
            continue;
        }
        let (ok, text) = check_root(&tree, root, "docs://", &home);
        assert!(!ok, "{root} accepted: {text}");
        assert!(text.contains("`root`"), "{root}: {text}");
    }
    let manifest = tree.manifest(&format!(
        "{ECHO}{DOCS}\n[[resource]]\nname = \"guide\"\nroot = \"g2\"\nuri = \"docs://guide/\"\n"
    ));
    let output = run(&airlock(), &["check", manifest.to_str().unwrap()], &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("another resource has the same URI"), "{text}");
}

/// Holds: a secret of the manifest is redacted from a text file and from a binary one
/// (before it is base64-encoded); a secret in another encoding is not (a known gap,
/// `SECURITY.md`: "Secrets in other encodings, or in pieces"), so none of it is asserted.
#[test]
fn secrets_are_redacted_from_text_and_binary_files() {
    let secret = "s3cr3t-T0KEN-value";
    let tree = Tree::new("redaction");
    tree.write("text.txt", format!("token={secret} end"));
    let mut binary = vec![0xff_u8, 0x00];
    binary.extend_from_slice(secret.as_bytes());
    binary.push(0xfe);
    tree.write("bin.dat", &binary);
    let mut server = tree.serve_with(
        r#"
[[tool]]
name = "echo"
description = "Says hello"
command = ["echo", "hello"]
secret_env = ["API_TOKEN"]

[[resource]]
name = "docs"
root = "docs"
uri = "docs://"
"#,
        &[("API_TOKEN", secret)],
    );
    let text = read(&mut server, 1, "docs://text.txt");
    assert_eq!(text_of(&text), "token=[REDACTED] end");
    let blob = read(&mut server, 2, "docs://bin.dat");
    let encoded = blob["result"]["contents"][0]["blob"].as_str().unwrap();
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert_eq!(decoded, b"\xff\x00[REDACTED]\xfe");
}

/// Holds: what the manifest does not offer about resources says nothing of files:
/// subscriptions are no method, there are no templates, and without prompts there is no
/// completion (a listed URI as a template reference included).
#[test]
fn subscriptions_templates_and_completion_offer_nothing_of_the_files() {
    let tree = Tree::new("surface");
    tree.write("hello.md", "# Hello\n");
    let mut server = tree.serve();
    for (id, method, params) in [
        (1, "resources/subscribe", json!({"uri": "docs://hello.md"})),
        (
            2,
            "resources/unsubscribe",
            json!({"uri": "docs://hello.md"}),
        ),
        (
            3,
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "docs://hello.md"},
                   "argument": {"name": "x", "value": "y"}}),
        ),
    ] {
        let reply = server.request(&request(id, method, params));
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
        tree.assert_clean(&reply);
    }
    let templates = server.request(&request(4, "resources/templates/list", json!({})));
    assert_eq!(templates["result"]["resourceTemplates"], json!([]));
    for (id, cursor) in [(5, "/etc/passwd"), (6, "0000000000000000000000ff")] {
        let reply = server.request(&request(id, "resources/list", json!({"cursor": cursor})));
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert!(!reply.to_string().contains(cursor), "{reply}");
    }
}

/// Peak resident memory of the airlock process at the default caps (`SECURITY.md`).
const STDIO_RSS_KIB: u64 = 32 * 1024;

/// Holds: over stdio, a peer that sends fifty reads of a 1 MiB file of control bytes (a
/// 6 MiB reply each) and reads none of the replies leaves the server under the 32 MiB bound:
/// it stops reading requests while a reply waits for the pipe (measured 25 MiB, debug
/// build; at `max_bytes = 4194304`, 46 MiB, which the bound, stated for the defaults, does
/// not cover).
#[test]
fn a_stdio_peer_that_reads_no_resource_replies_holds_bounded_memory() {
    let tree = Tree::new("stdio-unread");
    tree.write("control.txt", vec![1_u8; 1024 * 1024]);
    let manifest = tree.manifest(&format!("{ECHO}{DOCS}"));
    let mut server = crate::support::stdio::Unread::start(
        &airlock(),
        &["serve", "--manifest", manifest.to_str().unwrap()],
    );
    let mut stdin = server.stdin.take().unwrap();
    let writer = thread::spawn(move || {
        let mut lines = vec![
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "it", "version": "1"}}})
            .to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        ];
        lines.extend(
            (1..=50).map(|id| request(id, "resources/read", json!({"uri": "docs://control.txt"}))),
        );
        for line in lines {
            if stdin.write_all(format!("{line}\n").as_bytes()).is_err() {
                return;
            }
        }
    });
    thread::sleep(Duration::from_secs(4));
    let peak = crate::support::processes::peak_rss_kib(server.child.id());
    eprintln!(
        "50 unread 6 MiB resource replies over stdio: peak RSS {} MiB",
        peak / 1024
    );
    let _killed = server.child.kill();
    let _reaped = server.child.wait();
    let _done = writer.join();
    assert!(
        peak <= STDIO_RSS_KIB,
        "peak RSS {peak} KiB past the bound of {STDIO_RSS_KIB} KiB"
    );
}

/// Holds: over HTTP the bearer token is one of the secrets redacted from a resource file (a
/// proxy's log that recorded it, say).
#[test]
fn the_http_bearer_token_is_redacted_from_resource_files() {
    let token = format!("tok-{}", "Z".repeat(40));
    let tree = Tree::new("http-token");
    tree.write("proxy.log", format!("Authorization: Bearer {token}\n"));
    let manifest = tree.manifest(&format!("{ECHO}{DOCS}"));
    let server = crate::support::http::HttpServer::airlock(
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--auth-token-env",
            "RT_RESOURCE_TOKEN",
        ],
        &[("RT_RESOURCE_TOKEN", &token)],
    );
    let bearer = format!("Bearer {token}");
    let reply = crate::support::http::modern(
        server.addr,
        1,
        "resources/read",
        json!({"uri": "docs://proxy.log"}),
        &[("Authorization", &bearer)],
    );
    let body = reply.json();
    assert_eq!(
        body["result"]["contents"][0]["text"], "Authorization: Bearer [REDACTED]\n",
        "{body}"
    );
    assert!(!body.to_string().contains(&token), "{body}");
}

/// A tmpfs mounted at `dir`, unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    /// Mounts a small tmpfs at `dir`; the test cannot run without it (root, as on CI).
    fn tmpfs(dir: &Path) -> Self {
        let status = crate::support::stdio::spawn_command(Path::new("mount"))
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount(8)");
        assert!(
            status.success(),
            "this test needs to mount a tmpfs (run as root, as CI does): mount failed"
        );
        Self(dir.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _unmounted = crate::support::stdio::spawn_command(Path::new("umount"))
            .arg(&self.0)
            .status();
    }
}

/// Holds (RESOLVE_NO_XDEV): a file system mounted inside the root is not crossed, by the
/// listing or by a read: a mount over a listed directory after start does not serve what it
/// holds under the listed names (a FUSE or network mount there could also stall a read).
#[test]
fn a_mount_inside_the_root_is_neither_listed_nor_read() {
    let tree = Tree::new("mounts");
    tree.write("plain.md", "plain");
    tree.write("over/x.txt", "listed at start");
    std::fs::create_dir_all(tree.docs().join("mnt")).unwrap();
    let early = Mounted::tmpfs(&tree.docs().join("mnt"));
    std::fs::write(tree.docs().join("mnt/mounted.txt"), SECRET).unwrap();
    let mut server = tree.serve();
    assert_eq!(
        listed_uris(&mut server, 1),
        ["docs://over/x.txt", "docs://plain.md"]
    );
    assert_eq!(
        text_of(&read(&mut server, 2, "docs://over/x.txt")),
        "listed at start"
    );
    let late = Mounted::tmpfs(&tree.docs().join("over"));
    std::fs::write(tree.docs().join("over/x.txt"), SECRET).unwrap();
    let reply = read(&mut server, 3, "docs://over/x.txt");
    assert_eq!(reply["error"], not_found(), "{reply}");
    tree.assert_clean(&reply);
    drop(server);
    drop(late);
    drop(early);
}
