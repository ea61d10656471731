//! Red team of the shared store (`--quota-store redis`): what a client can make reach Redis
//! (session ids of every shape, floods of them), what stays in Redis after an attack (every
//! key expires; no lease outlives its call), sessions across replicas and identities, and a
//! hostile Redis (a fake one on loopback: endless replies, nonsense numbers, wrong shapes,
//! silence), which must neither grow the server's memory nor reach the wire.
//!
//! Real-Redis tests use `redis::Redis` (skipped loudly without `/usr/bin/redis-server`); the
//! fake needs nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::redis::{
    asking_replicas, asks_only_if_declared, bearer, log_of, manifest, quick, tools_list,
};
use crate::support::http::{self, HttpServer, Reply, modern, modern_bytes, post, retry_until};
use crate::support::processes;
use crate::support::processes::rss_kib;
use crate::support::redis::{Redis, replicas};
use crate::support::stdio::{self, REPLY_TIMEOUT};

/// One command to a real Redis at `port` over raw RESP; its reply, as Redis wrote it.
fn redis_command(port: u16, args: &[&str]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    read_resp(&mut reader)
}

/// One RESP2 reply, flattened: bulk strings and simple values one per line.
fn read_resp(reader: &mut impl BufRead) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let line = line.trim_end().to_owned();
    match line.as_bytes().first() {
        Some(b'*') => {
            let count: i64 = line[1..].parse().unwrap();
            (0..count.max(0))
                .map(|_| read_resp(reader))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Some(b'$') => {
            let length: i64 = line[1..].parse().unwrap();
            if length < 0 {
                return String::new();
            }
            let mut value = vec![0_u8; usize::try_from(length).unwrap() + 2];
            reader.read_exact(&mut value).unwrap();
            String::from_utf8_lossy(&value[..value.len() - 2]).into_owned()
        }
        _ => line[1..].to_owned(),
    }
}

/// Every key of the Redis at `port`.
fn keys(port: u16) -> Vec<String> {
    let mut keys: Vec<String> = redis_command(port, &["KEYS", "*"])
        .lines()
        .filter(|key| !key.is_empty())
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

fn send(server: &HttpServer, headers: &[(&str, &str)], body: &str) -> Reply {
    post(server.addr, headers, body)
}

/// A legacy session opened (and confirmed) on `server` by the holder of `token`.
fn open_session(server: &HttpServer, token: &str) -> String {
    let auth = bearer(token);
    http::initialize_with(server.addr, &[("Authorization", &auth)])
}

fn list_in(server: &HttpServer, session: &str, token: &str) -> Reply {
    let auth = bearer(token);
    send(
        server,
        &[
            ("Authorization", &auth),
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        &stdio::request(9, "tools/list", json!({})),
    )
}

fn delete_in(server: &HttpServer, session: &str, token: &str) -> Reply {
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAuthorization: {}\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n",
        server.addr,
        bearer(token)
    );
    http::exchange(server.addr, request.as_bytes())
}

fn assert_unknown_session(reply: &Reply) {
    assert_eq!(reply.status, 404, "{reply:?}");
    assert_eq!(
        reply.json()["error"],
        json!({"code": -32_600, "message": "Invalid request: unknown or expired session."}),
        "{reply:?}"
    );
}

const TOKEN_A: (&str, &str) = ("IT_TOKEN_A", "token-of-client-a-0123456789");
const TOKEN_B: (&str, &str) = ("IT_TOKEN_B", "token-of-client-b-0123456789");

/// Finding: a session a client lost to `--max-sessions-per-client` kept its record in Redis,
/// and the next request with its id took it over again (on the very replica that evicted it,
/// and on every other): the per-client cap bounded nothing and the evicted id was not `404`.
#[test]
fn a_session_lost_to_the_per_client_cap_is_ended_on_every_replica() {
    let Some(redis) = Redis::start("rt-cap", None) else {
        return;
    };
    let servers = replicas(
        2,
        &redis,
        &[
            "--redis-namespace",
            "rt-cap",
            "--auth-token-env",
            TOKEN_A.0,
            "--max-sessions-per-client",
            "2",
        ],
        &[TOKEN_A],
    );
    let first = open_session(&servers[0], TOKEN_A.1);
    let second = open_session(&servers[0], TOKEN_A.1);
    let third = open_session(&servers[0], TOKEN_A.1);
    // The first is gone: here, on the other replica, and in the store.
    assert_unknown_session(&list_in(&servers[0], &first, TOKEN_A.1));
    assert_unknown_session(&list_in(&servers[1], &first, TOKEN_A.1));
    let sessions: Vec<String> = keys(redis.port)
        .into_iter()
        .filter(|key| key.starts_with("airlock:rt-cap:s:"))
        .collect();
    assert_eq!(
        sessions,
        {
            let mut live = vec![
                format!("airlock:rt-cap:s:{second}"),
                format!("airlock:rt-cap:s:{third}"),
            ];
            live.sort();
            live
        },
        "the evicted session's record is still in the store"
    );
    // The others are served on both.
    for session in [&second, &third] {
        for server in &servers {
            let listed = list_in(server, session, TOKEN_A.1);
            assert_eq!(listed.status, 200, "{listed:?}");
        }
    }
}

/// Holds: a session id of any shape but ours reaches no Redis key and gets the fixed `404`;
/// after a flood of calls, sessions, fake ids and refusals by several clients on two
/// replicas, every key in Redis has an expiry, and no lease is left.
#[test]
fn odd_session_ids_reach_no_key_and_every_key_left_by_a_flood_expires() {
    let Some(redis) = Redis::start("rt-keys", None) else {
        return;
    };
    let (dir, manifest) = manifest("rt-keys");
    let servers = replicas(
        2,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "rt-keys",
            "--auth-token-env",
            TOKEN_A.0,
            "--auth-token-env",
            TOKEN_B.0,
            "--client-calls-per-minute",
            "1",
        ],
        &[TOKEN_A, TOKEN_B],
    );
    let hex = "0123456789abcdef".repeat(4);
    let huge = "a".repeat(8 * 1024);
    let odd: Vec<String> = vec![
        "*".into(),
        "airlock:rt-keys:*".into(),
        "{airlock}:s:x".into(),
        "a:b:c".into(),
        hex.to_ascii_uppercase(),
        format!("{}*", &hex[..63]),
        format!("{hex}0"),
        huge,
        "%0d%0aFLUSHALL%0d%0a".into(),
        "\"quoted\"".into(),
    ];
    for id in &odd {
        for server in &servers {
            assert_unknown_session(&list_in(server, id, TOKEN_A.1));
            assert_unknown_session(&delete_in(server, id, TOKEN_A.1));
        }
    }
    // Ours in form, but never made: no key either (a read is not a write).
    assert_unknown_session(&list_in(&servers[0], &hex, TOKEN_A.1));
    let before = keys(redis.port);
    assert!(
        before.iter().all(|key| !key.contains(":s:")),
        "a session key from a made-up id: {before:?}"
    );
    // A tool name that is not registered reaches no key (the server's quota alone).
    let unknown = modern(
        servers[0].addr,
        99,
        "tools/call",
        json!({"name": "airlock:*{rt}:calls", "arguments": {}}),
        &[("Authorization", &bearer(TOKEN_A.1))],
    );
    assert_eq!(unknown.status, 400, "{unknown:?}");
    assert_eq!(unknown.code(), -32_602, "{unknown:?}");
    // The flood: both clients, both replicas, past their call quota (1 a minute, burst 20).
    for id in 0..60_i64 {
        let server = &servers[usize::try_from(id).unwrap() % 2];
        let token = if id % 3 == 0 { TOKEN_B.1 } else { TOKEN_A.1 };
        let reply = quick(server, id, Some(token));
        assert!([200, 429].contains(&reply.status), "{reply:?}");
    }
    let _session = open_session(&servers[1], TOKEN_B.1);
    let all = keys(redis.port);
    assert!(all.iter().all(|key| !key.contains("rt}")), "{all:?}");
    assert!(
        all.iter()
            .any(|key| key == "airlock:rt-keys:q:client-calls:id=IT_TOKEN_A"),
        "{all:?}"
    );
    for key in &all {
        assert!(key.starts_with("airlock:rt-keys:"), "{key}");
        let ttl: i64 = redis_command(redis.port, &["PTTL", key]).parse().unwrap();
        // -2: gone since KEYS; -1 would be a key that never expires.
        assert!(ttl > 0 || ttl == -2, "{key} has no expiry ({ttl})");
    }
    // No lease outlives its call (released as the call ends, asynchronously).
    retry_until(
        "the leases of finished calls to be released",
        || tools_list(&servers[0], 1),
        |_| keys(redis.port).iter().all(|key| !key.contains(":l:")),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Finding: a legacy session ended by `DELETE` on one replica was ended on another only when
/// that replica next saw its id; a call of the session running there went on to its own
/// deadline, holding its leases and its slot. Now the listener's sweep (every 30 s) asks the
/// store about the shared sessions it holds and ends those gone.
#[test]
fn a_session_ended_on_one_replica_stops_its_calls_on_another() {
    let Some(redis) = Redis::start("rt-end", None) else {
        return;
    };
    let (dir, manifest) = manifest("rt-end");
    let servers = replicas(
        2,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "rt-end",
            "--auth-token-env",
            TOKEN_A.0,
            "--redis-lease-ms",
            "3600000",
        ],
        &[TOKEN_A],
    );
    let session = open_session(&servers[0], TOKEN_A.1);
    let addr = servers[1].addr;
    let id = session.clone();
    let call = thread::spawn(move || {
        let auth = bearer(TOKEN_A.1);
        let in_session = [
            ("Authorization", auth.as_str()),
            ("Mcp-Session-Id", id.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        // Read with a deadline past the sweep's: the call ends before its reply comes.
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        stream
            .write_all(&http::post_bytes(
                addr,
                &in_session,
                &stdio::call(1, "nap", json!({})),
            ))
            .unwrap();
        let mut raw = Vec::new();
        let _read = stream.read_to_end(&mut raw);
        raw
    });
    let started = Instant::now();
    while !processes::runs_a_descendant(servers[1].pid(), "sleep") {
        assert!(started.elapsed() < REPLY_TIMEOUT, "the call never started");
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(delete_in(&servers[0], &session, TOKEN_A.1).status, 204);
    let ended = Instant::now();
    while processes::runs_a_descendant(servers[1].pid(), "sleep") {
        assert!(
            ended.elapsed() < Duration::from_secs(45),
            "the session's call still runs on the other replica"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let raw = call.join().unwrap();
    // The call was stopped with its session: no result is owed (204), or the connection went.
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.contains("\"result\""), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Finding: another identity presenting a session's id was refused (`404`), but its request
/// had restarted the session's idle timer in Redis first (`GETEX`): whoever holds an id, with
/// any token, could keep another's session alive for ever. Without a store the refused
/// request touches nothing. Now only the owner's requests restart it.
#[test]
fn another_identity_does_not_keep_a_session_alive() {
    let Some(redis) = Redis::start("rt-alive", None) else {
        return;
    };
    let servers = replicas(
        2,
        &redis,
        &[
            "--redis-namespace",
            "rt-alive",
            "--auth-token-env",
            TOKEN_A.0,
            "--auth-token-env",
            TOKEN_B.0,
        ],
        &[TOKEN_A, TOKEN_B],
    );
    let session = open_session(&servers[0], TOKEN_A.1);
    let key = format!("airlock:rt-alive:s:{session}");
    let ttl = || -> i64 { redis_command(redis.port, &["PTTL", &key]).parse().unwrap() };
    thread::sleep(Duration::from_millis(1500));
    let before = ttl();
    for server in &servers {
        assert_unknown_session(&list_in(server, &session, TOKEN_B.1));
        assert_unknown_session(&delete_in(server, &session, TOKEN_B.1));
    }
    let after = ttl();
    assert!(
        after <= before,
        "another identity restarted the session's idle timer: {before} ms, then {after} ms"
    );
    // Its owner's request does restart it.
    assert_eq!(list_in(&servers[1], &session, TOKEN_A.1).status, 200);
    assert!(
        ttl() > after + 1000,
        "the owner's request did not restart it"
    );
}

/// Finding: a client that hangs up while its call is being admitted (its request dropped
/// after Redis granted the leases, before the reply was read) left its leases in Redis, to
/// lapse only at their expiry: 400 such calls from one address held its 4 in-flight slots
/// and 4 of the server's 8 across the deployment for the whole lease (15 s by default),
/// renewable by doing it again. The admission now finishes in a task of its own.
#[test]
fn a_client_hanging_up_during_admission_leaves_no_lease() {
    let Some(redis) = Redis::start("rt-hangup", None) else {
        return;
    };
    let (dir, manifest) = manifest("rt-hangup");
    let server = replicas(
        1,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "rt-hangup",
            "--redis-lease-ms",
            "3600000",
            "--calls-per-minute",
            "1000000",
            "--client-calls-per-minute",
            "1000000",
            "--client-requests-per-minute",
            "1000000",
        ],
        &[],
    )
    .remove(0);
    let call = modern_bytes(
        server.addr,
        1,
        "tools/call",
        json!({"name": "quick", "arguments": {}}),
        &[],
    );
    for attempt in 0..400_u64 {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.write_all(&call).unwrap();
        thread::sleep(Duration::from_micros((attempt % 20) * 50));
        drop(stream);
    }
    let leases = || {
        keys(redis.port)
            .iter()
            .filter(|key| key.contains(":l:"))
            .map(|key| redis_command(redis.port, &["ZCARD", key]))
            .map(|count| count.parse::<u64>().unwrap())
            .sum::<u64>()
    };
    let started = Instant::now();
    while leases() != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{} leases of calls whose clients hung up are still held",
            leases()
        );
        thread::sleep(Duration::from_millis(50));
    }
    // And the client's slots are free.
    let served = quick(&server, 2, None);
    assert_eq!(served.status, 200, "{served:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Holds: records written into Redis by someone else (SECURITY.md: whoever can write there
/// can make records) serve nobody but the identity they name, in the version they name:
/// another identity's record, garbage, a huge record and a record of another version are
/// `404` or the fixed `400`, never a panic, never their text on the wire. Issue 37: a record
/// of a format no release writes (`3`), or of format 2 with capability letters it never
/// writes, is no session (`404`); one exactly as format 2 writes it is served.
#[test]
fn forged_session_records_serve_no_one_else_and_nothing_else() {
    let Some(redis) = Redis::start("rt-forged", None) else {
        return;
    };
    let servers = replicas(
        2,
        &redis,
        &[
            "--redis-namespace",
            "rt-forged",
            "--auth-token-env",
            TOKEN_A.0,
            "--auth-token-env",
            TOKEN_B.0,
        ],
        &[TOKEN_A, TOKEN_B],
    );
    let huge = format!("1 2025-11-25 1 {}", "A".repeat(1 << 20));
    let forged: [(&str, &str); 8] = [
        ("1", "1 2025-11-25 1 IT_TOKEN_B"),
        ("2", "rt-forged-garbage\r\n-ERR x"),
        ("3", &huge),
        ("4", "1 2025-11-25 1 IT_TOKEN_A extra"),
        ("5", "1 2024-11-05 1 IT_TOKEN_A"),
        ("6", "3 2025-11-25 1 - IT_TOKEN_A"),
        ("7", "2 2025-11-25 1 x IT_TOKEN_A"),
        ("8", "2 2025-11-25 1 - IT_TOKEN_A"),
    ];
    for (digit, record) in forged {
        let id = digit.repeat(64);
        let key = format!("airlock:rt-forged:s:{id}");
        assert_eq!(redis_command(redis.port, &["SET", &key, record]), "OK");
        for server in &servers {
            let reply = list_in(server, &id, TOKEN_A.1);
            if digit == "5" {
                // A's, in 2024-11-05: the 2025-11-25 header does not match it.
                assert_eq!(reply.status, 400, "{reply:?}");
                assert_eq!(reply.code(), -32_600, "{reply:?}");
            } else if digit == "8" {
                // A's, confirmed, no capability declared: taken over and served.
                assert_eq!(reply.status, 200, "{reply:?}");
            } else {
                assert_unknown_session(&reply);
            }
            assert!(!String::from_utf8_lossy(&reply.body).contains("rt-forged"));
        }
    }
    for server in &servers {
        assert!(!log_of(server).contains("panicked"));
    }
}

/// Holds: on another replica, another identity holding a session's id can neither use it
/// nor end it; its owner still can, everywhere.
#[test]
fn another_identity_cannot_end_a_session_on_another_replica() {
    let Some(redis) = Redis::start("rt-bind", None) else {
        return;
    };
    let servers = replicas(
        2,
        &redis,
        &[
            "--redis-namespace",
            "rt-bind",
            "--auth-token-env",
            TOKEN_A.0,
            "--auth-token-env",
            TOKEN_B.0,
        ],
        &[TOKEN_A, TOKEN_B],
    );
    let session = open_session(&servers[0], TOKEN_A.1);
    for server in &servers {
        assert_unknown_session(&list_in(server, &session, TOKEN_B.1));
        assert_unknown_session(&delete_in(server, &session, TOKEN_B.1));
    }
    for server in servers.iter().rev() {
        let listed = list_in(server, &session, TOKEN_A.1);
        assert_eq!(listed.status, 200, "{listed:?}");
    }
    assert_eq!(delete_in(&servers[1], &session, TOKEN_A.1).status, 204);
    for server in &servers {
        assert_unknown_session(&list_in(server, &session, TOKEN_A.1));
    }
}

/// Holds: a call that times out, one whose client hangs up mid-call, and a legacy call
/// cancelled by its client each give their leases back at once (not at the lease expiry).
#[test]
fn leases_come_back_when_calls_time_out_are_cancelled_or_lose_their_client() {
    let Some(redis) = Redis::start("rt-lease", None) else {
        return;
    };
    let (dir, manifest) = http::scratch_manifest(
        "redis-rt-lease",
        "[[tool]]\nname = \"nap\"\ndescription = \"Sleeps a minute\"\n\
         command = [\"sleep\", \"60\"]\n\n\
         [[tool]]\nname = \"short\"\ndescription = \"Sleeps past its limit\"\n\
         command = [\"sleep\", \"60\"]\ntimeout_ms = 1000\n",
    );
    // Leases of an hour: only a release gives them back within the test.
    let server = replicas(
        1,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "rt-lease",
            "--redis-lease-ms",
            "3600000",
        ],
        &[],
    )
    .remove(0);
    let leases = || {
        keys(redis.port)
            .iter()
            .filter(|key| key.contains(":l:"))
            .map(|key| redis_command(redis.port, &["ZCARD", key]))
            .map(|count| count.parse::<u64>().unwrap())
            .sum::<u64>()
    };
    let wait_for = |what: &str, count: u64| {
        let started = Instant::now();
        while leases() != count {
            assert!(started.elapsed() < REPLY_TIMEOUT, "{what}: {}", leases());
            thread::sleep(Duration::from_millis(20));
        }
    };
    // Timed out.
    let timed_out = modern(
        server.addr,
        1,
        "tools/call",
        json!({"name": "short", "arguments": {}}),
        &[],
    );
    assert_eq!(timed_out.json()["result"]["isError"], true, "{timed_out:?}");
    wait_for("the lease of a call that timed out", 0);
    // The client hangs up mid-call.
    let mut held = TcpStream::connect(server.addr).unwrap();
    let nap = modern_bytes(
        server.addr,
        2,
        "tools/call",
        json!({"name": "nap", "arguments": {}}),
        &[],
    );
    held.write_all(&nap).unwrap();
    // Two leases of one call: the server's cap and the client's.
    wait_for("the call to hold its leases", 2);
    drop(held);
    wait_for("the lease of a call whose client left", 0);
    // Cancelled in a legacy session.
    let session = http::initialize(server.addr);
    let in_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let addr = server.addr;
    let id = session.clone();
    let call = thread::spawn(move || {
        let session = id;
        let in_session = [
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        post(addr, &in_session, &stdio::call(3, "nap", json!({})))
    });
    wait_for("the legacy call to hold its leases", 2);
    let cancelled = post(
        server.addr,
        &in_session,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
    );
    assert_eq!(cancelled.status, 202, "{cancelled:?}");
    wait_for("the lease of a cancelled call", 0);
    drop(call.join().unwrap());
    assert!(!log_of(&server).contains("panicked"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Holds: the Redis password (right or wrong) is in no log line even at `trace`, the most
/// verbose level, nor in a reply.
#[test]
fn the_redis_password_is_in_no_log_even_at_trace() {
    let password = "rt-redis-password-5b4a39";
    let Some(redis) = Redis::start("rt-password", Some(password)) else {
        return;
    };
    let trace = [("AIRLOCK_LOG", "trace")];
    let right = replicas(1, &redis, &["--redis-namespace", "rt-pw"], &trace).remove(0);
    let wrong_url = format!("redis://:wrong-{password}@127.0.0.1:{}", redis.port);
    let wrong = HttpServer::airlock(
        &["--quota-store", "redis", "--redis-namespace", "rt-pw"],
        &[("AIRLOCK_REDIS_URL", &wrong_url), ("AIRLOCK_LOG", "trace")],
    );
    let served = tools_list(&right, 1);
    assert_eq!(served.status, 200, "{served:?}");
    let _session = http::initialize(right.addr);
    let refused = tools_list(&wrong, 1);
    assert_eq!(refused.status, 503, "{refused:?}");
    for reply in [&served, &refused] {
        assert!(!String::from_utf8_lossy(&reply.body).contains(password));
    }
    for server in [&right, &wrong] {
        let log = log_of(server);
        assert!(!log.contains(password), "{log}");
        assert!(!log.contains("redis://"), "{log}");
    }
}

/// What a fake Redis answers to a command other than the handshake's and `PING`.
#[derive(Clone)]
enum Answer {
    /// These bytes.
    Bytes(&'static [u8]),
    /// A bulk string announced as 100 GB, then 1 MiB every 16 ms (64 MiB/s) for as long as
    /// the socket takes them.
    Endless,
    /// Nothing, ever.
    Silence,
    /// `PONG` to the first `PING` of all, then (never asked) [`Answer::Endless`]'s stream.
    EndlessUnasked,
}

/// A hostile Redis on a loopback port: answers the client's handshake and `PING` as Redis
/// does, and every other command with what `answer` holds at that moment.
struct FakeRedis {
    port: u16,
    answer: Arc<Mutex<Answer>>,
    /// Commands answered with `answer`.
    asked: Arc<AtomicUsize>,
}

impl FakeRedis {
    fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let answer = Arc::new(Mutex::new(answer));
        let asked = Arc::new(AtomicUsize::new(0));
        let (shared, counted) = (Arc::clone(&answer), Arc::clone(&asked));
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (answer, asked) = (Arc::clone(&shared), Arc::clone(&counted));
                thread::spawn(move || Self::serve(stream, &answer, &asked));
            }
        });
        Self {
            port,
            answer,
            asked,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn set(&self, answer: Answer) {
        *self.answer.lock().unwrap() = answer;
    }

    /// A bulk string announced as 100 GB, then 1 MiB every 16 ms until the socket fails.
    fn endless(writer: &mut TcpStream) -> std::io::Result<()> {
        let chunk = vec![b'x'; 1 << 20];
        let mut written = writer.write_all(b"$100000000000\r\n");
        while written.is_ok() {
            written = writer.write_all(&chunk);
            thread::sleep(Duration::from_millis(16));
        }
        written
    }

    fn serve(stream: TcpStream, answer: &Mutex<Answer>, asked: &AtomicUsize) {
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let Some(count) = line.trim_end().strip_prefix('*') else {
                return;
            };
            let mut args = Vec::new();
            for _ in 0..count.parse::<usize>().unwrap_or(0) {
                let mut length = String::new();
                if reader.read_line(&mut length).unwrap_or(0) == 0 {
                    return;
                }
                let length: usize = length.trim_end()[1..].parse().unwrap_or(0);
                let mut arg = vec![0_u8; length + 2];
                if reader.read_exact(&mut arg).is_err() {
                    return;
                }
                arg.truncate(length);
                args.push(String::from_utf8_lossy(&arg).to_ascii_uppercase());
            }
            let command = args.first().map_or("", String::as_str);
            let written = match command {
                "PING" => {
                    let pong = writer.write_all(b"+PONG\r\n");
                    let unasked = matches!(*answer.lock().unwrap(), Answer::EndlessUnasked);
                    if pong.is_ok() && unasked && asked.fetch_add(1, Ordering::Relaxed) == 0 {
                        Self::endless(&mut writer)
                    } else {
                        pong
                    }
                }
                "CLIENT" | "SELECT" | "AUTH" => writer.write_all(b"+OK\r\n"),
                _ => {
                    asked.fetch_add(1, Ordering::Relaxed);
                    let now = answer.lock().unwrap().clone();
                    match now {
                        Answer::Bytes(bytes) => writer.write_all(bytes),
                        Answer::Silence | Answer::EndlessUnasked => Ok(()),
                        Answer::Endless => Self::endless(&mut writer),
                    }
                }
            };
            if written.is_err() {
                return;
            }
        }
    }
}

/// Resident memory allowed to a server whose Redis streams an endless reply: what it holds
/// at rest plus a few of the 16 MiB a 250 ms call time-out lets through at 64 MiB/s.
const ENDLESS_REPLY_RSS_KIB: u64 = 160 * 1024;

fn assert_store_unreachable(reply: &Reply) {
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(
        reply.json()["error"],
        json!({"code": -31_503, "message": "The shared quota store is unreachable; retry later."}),
        "{reply:?}"
    );
}

/// Finding: a Redis answering with a bulk string that never ends was read, and kept, for as
/// long as it kept sending (the connection outlived the call's time-out): 64 MiB/s of
/// "reply" was 64 MiB/s of the server's memory, with or without requests (2.9 GB in 15 s
/// from a Python loop on loopback). A connection whose call failed is now dropped.
#[test]
fn an_endless_reply_from_redis_is_not_kept() {
    let fake = FakeRedis::start(Answer::Endless);
    let server = HttpServer::airlock(
        &["--quota-store", "redis"],
        &[("AIRLOCK_REDIS_URL", &fake.url())],
    );
    let started = Instant::now();
    let mut peak = 0;
    let mut id = 0;
    while started.elapsed() < Duration::from_secs(4) {
        let reply = tools_list(&server, id);
        assert_store_unreachable(&reply);
        id += 1;
        peak = peak.max(rss_kib(server.pid()));
        thread::sleep(Duration::from_millis(100));
    }
    assert!(
        peak < ENDLESS_REPLY_RSS_KIB,
        "the server holds {peak} KiB of a reply that never ends"
    );
    eprintln!("peak resident memory: {peak} KiB");
    assert!(fake.asked.load(Ordering::Relaxed) >= 1, "Redis was asked");
    assert!(!log_of(&server).contains("panicked"));
}

/// Finding (the same, once fixed for replies to calls): Redis streaming an endless reply to
/// no request at all, on a connection of an idle server, was read and kept for ever (no call
/// failed, so none was replaced). An idle server now pings its connections every second.
#[test]
fn an_endless_reply_to_no_request_is_not_kept_by_an_idle_server() {
    let fake = FakeRedis::start(Answer::EndlessUnasked);
    let server = HttpServer::airlock(
        &["--quota-store", "redis"],
        &[("AIRLOCK_REDIS_URL", &fake.url())],
    );
    let started = Instant::now();
    let mut peak = 0;
    while started.elapsed() < Duration::from_secs(4) {
        peak = peak.max(rss_kib(server.pid()));
        thread::sleep(Duration::from_millis(100));
    }
    assert!(
        peak < ENDLESS_REPLY_RSS_KIB,
        "the server holds {peak} KiB of a reply no one asked for"
    );
    eprintln!("peak resident memory: {peak} KiB");
    // Counted: the `PING`s of this mode (the first of which began the stream).
    assert!(fake.asked.load(Ordering::Relaxed) >= 1);
    assert!(!log_of(&server).contains("panicked"));
}

/// Finding: a Redis answering a quota check with a wait of `i64::MAX` µs put
/// `retryAfterMs: 9223372036854776` on the wire: the store chose the number a client was
/// told. Now a wait is at most one emission interval (the longest GCRA gives). Holds: other
/// nonsense (an unknown index, a wrong arity, a double, an error with text, a RESP3 push, a
/// huge array) is `503` with the fixed text, nothing of Redis on the wire; and a Redis that
/// never answers holds no request past the time-outs.
#[test]
fn a_hostile_redis_neither_reaches_the_wire_nor_stalls_requests() {
    let fake = FakeRedis::start(Answer::Bytes(b"*3\r\n:1\r\n:1\r\n:9223372036854775807\r\n"));
    let server = HttpServer::airlock(
        &["--quota-store", "redis"],
        &[("AIRLOCK_REDIS_URL", &fake.url())],
    );
    // The client's request quota (3,000 a minute): one interval is 20 ms.
    let refused = tools_list(&server, 1);
    assert_eq!(refused.status, 429, "{refused:?}");
    assert_eq!(
        refused.json()["error"],
        json!({"code": -31_429, "message": "Rate limit exceeded; retry later.",
               "data": {"retryAfterMs": 20}}),
        "{refused:?}"
    );
    assert_eq!(refused.header("retry-after"), Some("1"), "{refused:?}");
    let nonsense: [&'static [u8]; 8] = [
        b"*3\r\n:7\r\n:99\r\n:0\r\n",
        b"*3\r\n:2\r\n:-4\r\n:0\r\n",
        b"*2\r\n:0\r\n:0\r\n",
        b"*3\r\n:1\r\n:1\r\n,nan\r\n",
        b"-ERR rt-secret-text-of-redis\r\n",
        b">2\r\n$7\r\nmessage\r\n$15\r\nrt-secret-text!\r\n",
        b"$22\r\nrt-secret-text-of-bulk\r\n",
        b"*100000000\r\n:1\r\n:1\r\n",
    ];
    for answer in nonsense {
        fake.set(Answer::Bytes(answer));
        // Past the retry interval, so that this request asks the store again.
        thread::sleep(Duration::from_millis(1100));
        let asked = fake.asked.load(Ordering::Relaxed);
        let reply = tools_list(&server, 2);
        assert!(fake.asked.load(Ordering::Relaxed) > asked, "not asked");
        let answer_text = String::from_utf8_lossy(answer);
        if reply.status == 429 {
            // A lone `nan` may read as a number; a wait is still GCRA's.
            assert!(answer_text.contains("nan"), "{answer_text}: {reply:?}");
            let wait = reply.json()["error"]["data"]["retryAfterMs"]
                .as_u64()
                .unwrap();
            assert!((1..=20).contains(&wait), "{answer_text}: {reply:?}");
        } else {
            assert_store_unreachable(&reply);
        }
        assert!(
            !String::from_utf8_lossy(&reply.body).contains("rt-secret"),
            "{reply:?}"
        );
    }
    // Silence: every request answered within the time-outs (a probe of the connections and
    // the call, 250 ms each), most at once.
    fake.set(Answer::Silence);
    thread::sleep(Duration::from_millis(1100));
    for id in 0..10 {
        let asked_at = Instant::now();
        assert_store_unreachable(&tools_list(&server, id));
        assert!(
            asked_at.elapsed() < Duration::from_secs(3),
            "a request waited {:?} on a silent Redis",
            asked_at.elapsed()
        );
    }
    let log = log_of(&server);
    assert!(!log.contains("rt-secret"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// Holds: a session's capabilities survive its record being rewritten by another replica
/// (`notifications/initialized` received there, which resumes the session unconfirmed and
/// records it confirmed), and a third replica asks only what the client declared; the record
/// Redis holds is the second form, identity last. Forged second-form records serve no one but
/// the identity at their end, whatever letters they carry.
#[test]
fn capabilities_survive_a_handshake_finished_on_another_replica_and_forged_letters_serve_no_one_else()
 {
    let Some(redis) = Redis::start("rt-can", None) else {
        return;
    };
    let servers = asking_replicas(3, &redis);
    for (capabilities, letters, declared) in [
        (json!({"elicitation": {}, "roots": {}}), "er", true),
        (json!({"sampling": {}}), "s", false),
        (json!({"elicitation": true}), "-", false),
    ] {
        let session = http::open_declaring(servers[0].addr, &[], capabilities);
        let key = format!("airlock:conformance:s:{session}");
        assert_eq!(
            redis_command(redis.port, &["GET", &key]),
            format!("2 2025-11-25 0 {letters} -")
        );
        http::confirm(servers[1].addr, &session, &[]);
        assert_eq!(
            redis_command(redis.port, &["GET", &key]),
            format!("2 2025-11-25 1 {letters} -"),
            "the replica that recorded the handshake kept the capabilities"
        );
        asks_only_if_declared(servers[2].addr, &session, declared);
    }
    // Forged records in the second form: letters or not, only the identity at the end (here
    // anonymous, `-`) is served, and only a record of exactly five fields.
    let forged = [
        ("1", "2 2025-11-25 1 esr IT_TOKEN_B", false),
        ("2", "2 2025-11-25 1 esr - extra", false),
        ("3", "2 2025-11-25 1 esr  -", false),
        ("4", "2 2025-11-25 1 esr -\n", false),
        ("5", "2 2025-11-25 1 rse -", false),
        ("6", "2 2025-11-25 1 - -", true),
        ("7", "2 2025-11-25 1 ALICE -", false),
    ];
    for (digit, record, served) in forged {
        let id = digit.repeat(64);
        let key = format!("airlock:conformance:s:{id}");
        assert_eq!(redis_command(redis.port, &["SET", &key, record]), "OK");
        for server in &servers {
            let reply = post(
                server.addr,
                &http::session_headers(&id),
                &stdio::request(2, "tools/list", json!({})),
            );
            if served {
                assert_eq!(reply.status, 200, "{record:?}: {reply:?}");
            } else {
                assert_unknown_session(&reply);
            }
        }
    }
    for server in &servers {
        assert!(!log_of(server).contains("panicked"));
    }
}
