//! MCP tasks (2025-11-25) attacked as a hostile client over real pipes and loopback HTTP:
//! ids of every odd shape and another tokenless session's ids answered as ids never issued,
//! `ttl`s of the wrong type refused and huge ones clamped, a command that forks daemons
//! (`setsid`, a double fork, `nohup`) leaves no process after cancel or the end of input, a
//! session's `DELETE` kills its tasks, and a flood of `tasks/result` waiters is held to the
//! client's in-flight share while another identity is still served. Of the 2026-07-28
//! extension: a call dropped (cancelled, the end of input, its connection closed) during its
//! inline wait leaves no daemon, a flood of `tasks/update` of ids never issued is refused one
//! by one, and a tokenless HTTP client is given no task.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fixtures::Scratch;
use crate::support::http::{self, HttpServer};
use crate::support::processes::eventually;
use crate::support::stdio::{Server, airlock, code, request};

/// `nap` sleeps as a task; `daemon` leaves three sleepers its shell does not wait for
/// (each with a marker duration of its own) and sleeps itself, always as a task,
/// `daemon_optional` the same when the server decides (2026-07-28); `quick` is an ordinary
/// call.
const MANIFEST: &str = r#"
[server]
name = "redteam-tasks"
version = "1.0.0"

[[tool]]
name = "nap"
description = "Sleeps"
command = ["sleep", "{seconds}"]
task = "optional"
task_timeout_ms = 60000
args.seconds = { type = "integer", minimum = 1, maximum = 60 }

[[tool]]
name = "daemon"
description = "Forks daemons"
command = ["sh", "-c", "setsid sleep 4711 & (sleep 4712 &) ; nohup sleep 4713 >/dev/null 2>&1 & sleep 4714"]
exec = ["/usr/bin/sleep", "/usr/bin/setsid", "/usr/bin/nohup"]
task = "always"

[[tool]]
name = "daemon_optional"
description = "Forks daemons, as a task when the server decides"
command = ["sh", "-c", "setsid sleep 4721 & (sleep 4722 &) ; nohup sleep 4723 >/dev/null 2>&1 & sleep 4724"]
exec = ["/usr/bin/sleep", "/usr/bin/setsid", "/usr/bin/nohup"]
task = "optional"

[[tool]]
name = "quick"
description = "Says hello"
command = ["echo", "hello"]
"#;

/// The marker durations of `daemon`'s sleepers.
const MARKERS: [&str; 4] = ["4711", "4712", "4713", "4714"];

/// The marker durations of `daemon_optional`'s sleepers.
const INLINE_MARKERS: [&str; 4] = ["4721", "4722", "4723", "4724"];

/// Whether any process on the machine is `sleep` of one of `daemon`'s marker durations.
fn a_daemon_runs() -> bool {
    sleeps_of(&MARKERS)
}

/// Whether any process on the machine is `sleep` of one of `markers`.
fn sleeps_of(markers: &[&str]) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            return false;
        };
        let words: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
        words.len() >= 2
            && words[0].ends_with(b"sleep")
            && markers.iter().any(|marker| words[1] == marker.as_bytes())
    })
}

fn serve(scratch: &Scratch) -> Server {
    let manifest = scratch.manifest(MANIFEST);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &manifest], &[]);
    let init = server.initialize("2025-11-25");
    assert!(
        init["result"]["capabilities"]["tasks"].is_object(),
        "{init}"
    );
    server
}

fn task_id(created: &Value) -> String {
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned()
}

/// Every shape of id that is not one the session was given is answered exactly as an id
/// never issued, by `tasks/get`, `tasks/result` and `tasks/cancel`: no type error, no echo.
#[test]
fn ids_of_every_odd_shape_are_answered_as_ids_never_issued() {
    let scratch = Scratch::new("rt-tasks-ids");
    let mut server = serve(&scratch);
    let real = task_id(&server.request(&request(
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 30}, "task": {}}),
    )));
    let never = server.request(&request(2, "tasks/get", json!({"taskId": "0".repeat(64)})));
    assert_eq!(code(&never), -32602, "{never}");
    let shapes = [
        json!({}),
        json!({"taskId": null}),
        json!({"taskId": 5}),
        json!({"taskId": ""}),
        json!({"taskId": real.to_uppercase()}),
        json!({"taskId": &real[..63]}),
        json!({"taskId": format!("{real}0")}),
        json!({"taskId": format!(" {real}")}),
        json!({"taskId": format!("{real}\u{0}")}),
        json!({"taskId": "０".repeat(32)}),
        json!({"taskId": [real.clone()]}),
        json!({"taskId": {"id": real.clone()}}),
        json!({"taskId": "f".repeat(100_000)}),
    ];
    let mut id = 10;
    for shape in shapes {
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            id += 1;
            let reply = server.request(&request(id, method, shape.clone()));
            assert_eq!(reply["error"], never["error"], "{method} {shape}: {reply}");
        }
    }
    // The real task was not touched by any of them.
    let got = server.request(&request(1000, "tasks/get", json!({"taskId": real})));
    assert_eq!(got["result"]["status"], "working", "{got}");
}

/// A `ttl` of the wrong type is refused; a huge one is kept no longer than the server's keep.
#[test]
fn ttls_of_the_wrong_type_are_refused_and_huge_ones_clamped() {
    let scratch = Scratch::new("rt-tasks-ttl");
    let mut server = serve(&scratch);
    let mut id = 0;
    for ttl in [
        json!(-1),
        json!("1000"),
        json!(true),
        json!([]),
        json!({}),
        json!(null),
    ] {
        id += 1;
        let reply = server.request(&request(
            id,
            "tools/call",
            json!({"name": "nap", "arguments": {"seconds": 1}, "task": {"ttl": ttl}}),
        ));
        assert_eq!(code(&reply), -32602, "ttl {ttl}: {reply}");
    }
    for task in [json!("yes"), json!([]), json!(null)] {
        id += 1;
        let reply = server.request(&request(
            id,
            "tools/call",
            json!({"name": "nap", "arguments": {"seconds": 1}, "task": task}),
        ));
        assert_eq!(code(&reply), -32602, "task {task}: {reply}");
    }
    for ttl in [json!(u64::MAX), json!(1e300)] {
        id += 1;
        let reply = server.request(&request(
            id,
            "tools/call",
            json!({"name": "nap", "arguments": {"seconds": 1}, "task": {"ttl": ttl}}),
        ));
        let kept = reply["result"]["task"]["ttl"].as_u64().unwrap_or(u64::MAX);
        // The tool's task timeout (60 s) plus the ten-minute keep, at most.
        assert!(kept <= 60_000 + 600_000, "ttl {ttl}: {reply}");
    }
}

/// Daemons a task's command forks (a new session, a double fork, `nohup`) die with it when it
/// is cancelled, twice cancelling is refused, and at the end of input.
#[test]
fn a_tasks_daemons_die_on_cancel_and_at_the_end_of_input() {
    let scratch = Scratch::new("rt-tasks-daemon");
    let mut server = serve(&scratch);
    let task = task_id(&server.request(&request(
        1,
        "tools/call",
        json!({"name": "daemon", "arguments": {}, "task": {}}),
    )));
    assert!(eventually(Duration::from_secs(10), a_daemon_runs));
    let cancelled = server.request(&request(2, "tasks/cancel", json!({"taskId": task})));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(
        eventually(Duration::from_secs(5), || !a_daemon_runs()),
        "a daemon outlived its cancelled task"
    );
    let again = server.request(&request(3, "tasks/cancel", json!({"taskId": task})));
    assert_eq!(code(&again), -32602, "{again}");
    server.request(&request(
        4,
        "tools/call",
        json!({"name": "daemon", "arguments": {}, "task": {}}),
    ));
    assert!(eventually(Duration::from_secs(10), a_daemon_runs));
    server.close_stdin();
    assert!(server.wait(Duration::from_secs(10)).success());
    assert!(
        eventually(Duration::from_secs(5), || !a_daemon_runs()),
        "a daemon outlived the end of input"
    );
}

fn post(
    server: &HttpServer,
    session: &str,
    token: Option<&str>,
    id: i64,
    method: &str,
    params: Value,
) -> Value {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let mut headers = http::session_headers(session);
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer));
    }
    let reply = http::post(server.addr, &headers, &request(id, method, params));
    assert_eq!(reply.status, 200, "{reply:?}");
    if reply
        .header("content-type")
        .is_some_and(|kind| kind.starts_with("text/event-stream"))
    {
        reply.events().pop().expect("an event")
    } else {
        reply.json()
    }
}

/// Without tokens each HTTP session owns its tasks: another session reading, waiting on,
/// cancelling or listing them gets what an id never issued gets; the owner's `DELETE` ends
/// them and their process.
#[test]
fn over_http_a_tokenless_session_cannot_reach_anothers_task_and_delete_kills_it() {
    let scratch = Scratch::new("rt-tasks-http");
    let manifest = scratch.manifest(MANIFEST);
    let server = HttpServer::airlock(&["--manifest", &manifest], &[]);
    let owner = http::initialize(server.addr);
    let other = http::initialize(server.addr);
    let task = task_id(&post(
        &server,
        &owner,
        None,
        1,
        "tools/call",
        json!({"name": "daemon", "arguments": {}, "task": {}}),
    ));
    assert!(eventually(Duration::from_secs(10), a_daemon_runs));
    let never = post(
        &server,
        &other,
        None,
        2,
        "tasks/get",
        json!({"taskId": "0".repeat(64)}),
    );
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let reply = post(&server, &other, None, 3, method, json!({"taskId": task}));
        assert_eq!(reply["error"], never["error"], "{method}: {reply}");
    }
    let listed = post(&server, &other, None, 4, "tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let mine = post(
        &server,
        &owner,
        None,
        5,
        "tasks/get",
        json!({"taskId": task}),
    );
    assert_eq!(mine["result"]["status"], "working", "{mine}");
    let deleted = http::exchange(
        server.addr,
        format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {owner}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\r\n",
            server.addr
        )
        .as_bytes(),
    );
    assert_eq!(deleted.status, 204, "{deleted:?}");
    assert!(
        eventually(Duration::from_secs(5), || !a_daemon_runs()),
        "a daemon outlived its session's DELETE"
    );
}

const TOKEN_A: &str = "redteam-task-token-a-0123456789";
const TOKEN_B: &str = "redteam-task-token-b-0123456789";

/// Seventy `tasks/result` waiters of one identity on its running task hold at most its
/// in-flight share: the rest are refused at once, and another identity is still served.
#[test]
fn a_flood_of_result_waiters_holds_one_identitys_share_only() {
    let scratch = Scratch::new("rt-tasks-waiters");
    let manifest = scratch.manifest(MANIFEST);
    let server = HttpServer::airlock(
        &[
            "--manifest",
            &manifest,
            "--auth-token-env",
            "RT_TASKS_A",
            "--auth-token-env",
            "RT_TASKS_B",
        ],
        &[("RT_TASKS_A", TOKEN_A), ("RT_TASKS_B", TOKEN_B)],
    );
    let bearer_a = format!("Bearer {TOKEN_A}");
    let bearer_b = format!("Bearer {TOKEN_B}");
    let a = http::initialize_with(server.addr, &[("Authorization", &bearer_a)]);
    let b = http::initialize_with(server.addr, &[("Authorization", &bearer_b)]);
    let task = task_id(&post(
        &server,
        &a,
        Some(TOKEN_A),
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 6}, "task": {}}),
    ));
    let addr = server.addr;
    let waiters: Vec<_> = (0..70)
        .map(|n| {
            let (a, task, bearer) = (a.clone(), task.clone(), bearer_a.clone());
            std::thread::spawn(move || {
                let mut headers = http::session_headers(&a);
                headers.push(("Authorization", &bearer));
                let body = request(100 + n, "tasks/result", json!({"taskId": task}));
                http::post(addr, &headers, &body)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let started = std::time::Instant::now();
    let quick = post(
        &server,
        &b,
        Some(TOKEN_B),
        2,
        "tools/call",
        json!({"name": "quick", "arguments": {}}),
    );
    assert_eq!(quick["result"]["content"][0]["text"], "hello\n", "{quick}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let (mut answered, mut refused) = (0, 0);
    for waiter in waiters {
        let reply = waiter.join().unwrap();
        let value = if reply
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream"))
        {
            reply.events().pop().expect("an event")
        } else {
            reply.json()
        };
        if value["result"].is_object() {
            answered += 1;
        } else {
            assert!([-31503, -31429].contains(&code(&value)), "{value}");
            refused += 1;
        }
    }
    assert!(
        answered <= 4 && answered + refused == 70,
        "{answered} {refused}"
    );
}

/// `ctl` writes a megabyte of control bytes (each written `\u0001` in JSON, six bytes) and
/// sleeps on; `plain` writes the same and ends, as an ordinary call.
const CONTROL_BYTES: &str = r#"
[server]
name = "redteam-task-output"
version = "1.0.0"

[[tool]]
name = "ctl"
description = "Control bytes, then sleeps"
command = ["sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' '\\1'; sleep 60"]
exec = ["/usr/bin/head", "/usr/bin/tr", "/usr/bin/sleep"]
task = "always"

[[tool]]
name = "plain"
description = "Control bytes"
command = ["sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' '\\1'"]
exec = ["/usr/bin/head", "/usr/bin/tr"]
"#;

/// What a reply may weigh on the wire: an ordinary call's reply of the same output is held
/// to about 1 MiB encoded (1 048 718 bytes here); a little room for the task's fields.
const REPLY_BOUND: usize = 1024 * 1024 + 64 * 1024;

/// A running task's output so far (`tasks/get`'s `_meta["airlock/output"]`, and every
/// running task's in `tasks/list`) is bounded in bytes kept but not in bytes encoded: a
/// megabyte of control bytes is a 6 MB `tasks/get` reply and four such tasks a 24 MB
/// `tasks/list`, where the same output as an ordinary call's reply, or as the task's
/// `tasks/result`, is held to about 1 MiB.
#[test]
fn the_output_so_far_is_held_to_the_reply_bound_encoded() {
    let scratch = Scratch::new("rt-tasks-encoded");
    let manifest = scratch.manifest(CONTROL_BYTES);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &manifest], &[]);
    server.initialize("2025-11-25");
    // The ordinary call's reply is held to the bound: the control.
    server.send(&request(
        1,
        "tools/call",
        json!({"name": "plain", "arguments": {}}),
    ));
    let plain = server.recv_line();
    assert!(
        plain.len() <= REPLY_BOUND,
        "the ordinary call: {}",
        plain.len()
    );
    let mut tasks = Vec::new();
    for id in 2..6 {
        tasks.push(task_id(&server.request(&request(
            id,
            "tools/call",
            json!({"name": "ctl", "arguments": {}, "task": {}}),
        ))));
    }
    std::thread::sleep(Duration::from_secs(3));
    server.send(&request(10, "tasks/get", json!({"taskId": tasks[0]})));
    let got = server.recv_line();
    server.send(&request(11, "tasks/list", json!({})));
    let listed = server.recv_line();
    assert!(
        got.len() <= REPLY_BOUND && listed.len() <= REPLY_BOUND,
        "tasks/get {} bytes, tasks/list {} bytes",
        got.len(),
        listed.len()
    );
}

/// Over HTTP each such reply is built whole: sixteen `tasks/list` of one tokenless client
/// (four sessions, four tasks each) that it does not read hold about 400 MiB of airlock's
/// memory at once (434 MiB peak measured against the release binary), and more connections
/// hold more.
#[test]
fn unread_task_lists_over_http_stay_within_a_memory_bound() {
    let scratch = Scratch::new("rt-tasks-list-memory");
    let manifest = scratch.manifest(CONTROL_BYTES);
    let server = HttpServer::airlock(&["--manifest", &manifest], &[]);
    let sessions: Vec<String> = (0..4).map(|_| http::initialize(server.addr)).collect();
    for (n, session) in sessions.iter().enumerate() {
        for id in 0..4 {
            let created = post(
                &server,
                session,
                None,
                (n * 10 + id) as i64,
                "tools/call",
                json!({"name": "ctl", "arguments": {}, "task": {}}),
            );
            task_id(&created);
        }
    }
    std::thread::sleep(Duration::from_secs(3));
    let before = crate::support::processes::rss_kib(server.pid());
    let held: Vec<std::net::TcpStream> = (0..16)
        .map(|n| {
            let session = &sessions[n % 4];
            let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
            let bytes = http::post_bytes(
                server.addr,
                &http::session_headers(session),
                &request(100 + n as i64, "tasks/list", json!({})),
            );
            std::io::Write::write_all(&mut stream, &bytes).unwrap();
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let peak = crate::support::processes::peak_rss_kib(server.pid());
    drop(held);
    assert!(
        peak < before + 128 * 1024,
        "airlock grew from {before} KiB to {peak} KiB for 16 unread task lists"
    );
}

/// `big` ends at once with a result of about 1 MiB (its output stopped at the output limit).
const BIG: &str = r#"
[server]
name = "redteam-task-budget"
version = "1.0.0"

[[tool]]
name = "big"
description = "A large result"
command = ["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' B"]
exec = ["/usr/bin/head", "/usr/bin/tr"]
task = "always"
"#;

/// Creates tasks of `big` in `session` until it keeps 32 (its own bound) or a bound other
/// than its running one refuses; waits for each; returns the refusal, if any.
fn fill(server: &HttpServer, session: &str) -> Option<Value> {
    let mut kept = Vec::new();
    let mut id = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while kept.len() < 32 {
        assert!(
            std::time::Instant::now() < deadline,
            "filling took too long"
        );
        id += 1;
        let reply = post(
            server,
            session,
            None,
            id,
            "tools/call",
            json!({"name": "big", "arguments": {}, "task": {}}),
        );
        match reply["result"]["task"]["taskId"].as_str() {
            Some(task) => kept.push(task.to_owned()),
            None if reply["error"]["data"]["limit"] == "max_task_bytes" => return Some(reply),
            None => std::thread::sleep(Duration::from_millis(200)),
        }
        if kept.len() % 4 == 0 {
            for task in &kept[kept.len().saturating_sub(4)..] {
                id += 1;
                post(
                    server,
                    session,
                    None,
                    id,
                    "tasks/result",
                    json!({"taskId": task}),
                );
            }
        }
    }
    None
}

/// The 64 MiB result budget is the server's, the kept bound (32) each owner's: two owners
/// keeping 32 results of about 1 MiB filled it, and every other client was refused any task
/// for the ten minutes those results are kept. Now finished results give way to a new task,
/// the heaviest owner's oldest first. Over HTTP without tokens the two owners are two
/// sessions of one client; with tokens, two identities.
#[test]
fn two_owners_cannot_fill_the_task_budget_for_everyone() {
    let scratch = Scratch::new("rt-tasks-budget");
    let manifest = scratch.manifest(BIG);
    let server = HttpServer::airlock(&["--manifest", &manifest], &[]);
    let first = http::initialize(server.addr);
    let second = http::initialize(server.addr);
    assert!(fill(&server, &first).is_none());
    drop(fill(&server, &second));
    let victim = http::initialize(server.addr);
    let reply = post(
        &server,
        &victim,
        None,
        1,
        "tools/call",
        json!({"name": "big", "arguments": {}, "task": {}}),
    );
    assert!(
        reply["result"]["task"]["taskId"].is_string(),
        "a third client is refused: {reply}"
    );
}

/// 2026-07-28 over stdio: a call of an optional tool is held up to the inline wait (1 s) on
/// the task it runs as, whose id nobody has yet. Cancelled in that wait, or left by the end
/// of input, its run must stop with every daemon it forked, and the server go on answering
/// (`tasks/update` of 200 ids never issued meanwhile gets `-32602` each; 256 refusals in a
/// row cut the peer off, as any run of invalid messages does).
#[test]
fn a_2026_call_dropped_in_its_inline_wait_leaves_no_daemon() {
    let scratch = Scratch::new("rt-tasks-inline");
    let manifest = scratch.manifest(MANIFEST);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &manifest], &[]);
    let meta = crate::support::stdio::modern_meta_with_tasks();
    let held = |id: u64| {
        request(
            id,
            "tools/call",
            json!({"name": "daemon_optional", "arguments": {}, "_meta": meta}),
        )
    };
    server.send(&held(1));
    assert!(
        eventually(Duration::from_secs(5), || sleeps_of(&INLINE_MARKERS)),
        "the command never started"
    );
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1, "_meta": meta}})
        .to_string(),
    );
    assert!(
        eventually(Duration::from_secs(5), || !sleeps_of(&INLINE_MARKERS)),
        "a daemon outlived its call cancelled in the inline wait"
    );
    for id in 10..210 {
        server.send(&request(
            id,
            "tasks/update",
            json!({"taskId": format!("{id:064}"), "inputResponses": {"x": {"y": "z"}}, "_meta": meta}),
        ));
    }
    for _ in 10..210 {
        let reply = server.recv();
        assert_ne!(reply["id"], 1, "the cancelled call was answered: {reply}");
        assert_eq!(code(&reply), -32602, "{reply}");
    }
    server.send(&held(2));
    assert!(
        eventually(Duration::from_secs(5), || sleeps_of(&INLINE_MARKERS)),
        "the second command never started"
    );
    server.close_stdin();
    assert!(server.wait(Duration::from_secs(10)).success());
    assert!(
        eventually(Duration::from_secs(5), || !sleeps_of(&INLINE_MARKERS)),
        "a daemon outlived the end of input during its call's inline wait"
    );
}

/// The same over HTTP: a token identity's 2026-07-28 call of an optional tool whose
/// connection closes during the inline wait. Nobody can have the task's handle (it would have
/// been that call's reply), so its run stops with every daemon it forked.
#[test]
fn over_http_a_2026_call_whose_connection_drops_in_its_inline_wait_leaves_no_daemon() {
    const TOKEN: &str = "rt-inline-owner-token-0123456789";
    let scratch = Scratch::new("rt-tasks-inline-http");
    let manifest = scratch.manifest(MANIFEST);
    let server = HttpServer::airlock(
        &[
            "--manifest",
            &manifest,
            "--auth-token-env",
            "RT_INLINE_TOKEN",
        ],
        &[("RT_INLINE_TOKEN", TOKEN)],
    );
    let bearer = format!("Bearer {TOKEN}");
    let bytes = http::modern_bytes(
        server.addr,
        1,
        "tools/call",
        json!({"name": "daemon_optional", "arguments": {},
               "_meta": crate::support::stdio::modern_meta_with_tasks()}),
        &[("Authorization", &bearer)],
    );
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    std::io::Write::write_all(&mut stream, &bytes).unwrap();
    assert!(
        eventually(Duration::from_secs(5), || sleeps_of(&INLINE_MARKERS)),
        "the command never started"
    );
    drop(stream);
    assert!(
        eventually(Duration::from_secs(5), || !sleeps_of(&INLINE_MARKERS)),
        "a daemon outlived its call's connection, closed in the inline wait"
    );
}

/// A tokenless HTTP client of 2026-07-28 has no owner a later request could prove (no
/// session, and an address is shared), so the extension is not offered to it even when it
/// declares it: `server/discover` does not list it, a run past the inline wait is still
/// answered plainly (no handle anybody could read, or another tokenless client guess), a tool
/// that runs only as a task is `-32021`, and `tasks/get` does not exist for it.
#[test]
fn over_http_a_tokenless_2026_client_is_given_no_task() {
    let scratch = Scratch::new("rt-tasks-tokenless-2026");
    let manifest = scratch.manifest(MANIFEST);
    let server = HttpServer::airlock(&["--manifest", &manifest], &[]);
    let meta = crate::support::stdio::modern_meta_with_tasks();
    let ask = |id: i64, method: &str, mut params: Value| {
        params["_meta"] = meta.clone();
        http::modern(server.addr, id, method, params, &[]).json()
    };
    let found = ask(1, "server/discover", json!({}));
    assert!(found["result"]["capabilities"].is_object(), "{found}");
    assert!(
        found["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_null(),
        "{found}"
    );
    let plain = ask(
        2,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 2}}),
    );
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert!(plain["result"]["taskId"].is_null(), "{plain}");
    let always = ask(3, "tools/call", json!({"name": "daemon", "arguments": {}}));
    assert_eq!(code(&always), -32021, "{always}");
    let get = ask(4, "tasks/get", json!({ "taskId": "0".repeat(64) }));
    assert_eq!(code(&get), -32601, "{get}");
}
