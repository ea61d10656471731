//! Issue 20: `airlock serve --http --quota-store redis`, replicas sharing one real
//! `redis-server` (Debian's package, installed by `tests/clients/setup.sh`). Each test starts
//! its own Redis on a free loopback port, in a scratch directory, without persistence, and
//! kills it at the end. Without `/usr/bin/redis-server` the tests say so loudly and pass,
//! unless `AIRLOCK_REQUIRE_CLIENTS=1` (as CI sets), where they fail.
//!
//! Shown here: replicas admit the configured burst plus rate together, not each; one client's
//! quota holds across replicas while another is served; a legacy session opened on one
//! replica is served (and ended) by another, which asks its client only what the client
//! declared in `initialize`; Redis stopped mid-run fails closed (or falls back
//! to local limits, as configured), with one log line each way and recovery once it is back;
//! a replica killed with a call in flight gives its lease back within the lease expiry; the
//! password in the Redis URL reaches neither the log nor the wire.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::http::{
    self, Connection, HttpServer, Reply, modern, modern_bytes, post, retry_until,
};
use crate::support::processes;
use crate::support::redis::{Redis, replicas};
use crate::support::sse::Stream;
use crate::support::stdio::{self, REPLY_TIMEOUT};

/// A manifest with a tool that returns at once and one that sleeps a minute.
pub(crate) fn manifest(name: &str) -> (PathBuf, PathBuf) {
    http::scratch_manifest(
        &format!("redis-{name}"),
        "[[tool]]\nname = \"quick\"\ndescription = \"Returns at once\"\n\
         command = [\"true\"]\n\n\
         [[tool]]\nname = \"nap\"\ndescription = \"Sleeps a minute\"\n\
         command = [\"sleep\", \"60\"]\n",
    )
}

pub(crate) fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

pub(crate) fn quick(server: &HttpServer, id: i64, token: Option<&str>) -> Reply {
    let auth = token.map(bearer);
    let mut extra = Vec::new();
    if let Some(auth) = &auth {
        extra.push(("Authorization", auth.as_str()));
    }
    modern(
        server.addr,
        id,
        "tools/call",
        json!({"name": "quick", "arguments": {}}),
        &extra,
    )
}

pub(crate) fn log_of(server: &HttpServer) -> String {
    server.log.lock().unwrap().join("\n")
}

/// How many times `server` logged that the store went away.
fn switches(server: &HttpServer) -> usize {
    log_of(server)
        .lines()
        .filter(|line| line.contains("the shared quota store is unreachable"))
        .count()
}

#[test]
fn three_replicas_admit_the_configured_burst_plus_rate_together_not_three_times_it() {
    let Some(redis) = Redis::start("burst", None) else {
        return;
    };
    let (dir, manifest) = manifest("burst");
    // 6 a minute (one per 10 s), bursts of 20; the per-client quotas out of the way.
    let servers = replicas(
        3,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "it-burst",
            "--calls-per-minute",
            "6",
            "--call-burst",
            "20",
            "--client-calls-per-minute",
            "1000000",
            "--client-requests-per-minute",
            "1000000",
        ],
        &[],
    );
    let mut connections: Vec<Connection> = servers
        .iter()
        .map(|server| Connection::open(server.addr))
        .collect();
    let call = |addr, id| {
        modern_bytes(
            addr,
            id,
            "tools/call",
            json!({"name": "quick", "arguments": {}}),
            &[],
        )
    };
    let started = Instant::now();
    let (mut admitted, mut refused) = (0_u64, 0_u64);
    for id in 0..10_000_i64 {
        let replica = usize::try_from(id).unwrap() % 3;
        let reply = connections[replica].send(&call(servers[replica].addr, id));
        match reply.status {
            200 => {
                assert!(reply.json()["result"]["content"].is_array(), "{reply:?}");
                admitted += 1;
            }
            429 => {
                assert_eq!(reply.code(), -31_429);
                assert!(
                    reply.json()["error"]["data"]["retryAfterMs"]
                        .as_u64()
                        .unwrap()
                        > 0
                );
                refused += 1;
            }
            other => panic!("call {id} on replica {replica}: status {other}: {reply:?}"),
        }
    }
    let elapsed = started.elapsed();
    // The burst, plus one per started 10 s of the run: for the three together.
    let rate_part = elapsed.as_secs() / 10 + 1;
    eprintln!(
        "10,000 calls over 3 replicas in {elapsed:?}: {admitted} admitted, {refused} refused \
         (burst 20 + at most {rate_part} from the rate)"
    );
    assert!(admitted >= 20, "the burst was not admitted: {admitted}");
    assert!(
        admitted <= 20 + rate_part,
        "{admitted} admitted: more than the burst plus the rate (three replicas counted apart?)"
    );
    assert_eq!(admitted + refused, 10_000);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn one_clients_quota_holds_across_replicas_while_another_client_is_served() {
    let Some(redis) = Redis::start("client", None) else {
        return;
    };
    let (dir, manifest) = manifest("client");
    let env = [
        ("IT_TOKEN_A", "token-of-client-a-0123456789"),
        ("IT_TOKEN_B", "token-of-client-b-0123456789"),
    ];
    // Per client: one call a minute, bursts of 20 (the default burst).
    let servers = replicas(
        3,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "it-client",
            "--auth-token-env",
            "IT_TOKEN_A",
            "--auth-token-env",
            "IT_TOKEN_B",
            "--client-calls-per-minute",
            "1",
        ],
        &env,
    );
    let (a, b) = (env[0].1, env[1].1);
    // A, round robin: exactly its burst of 20 across the three, then refused everywhere.
    let mut admitted = 0;
    let mut id = 0;
    loop {
        let reply = quick(&servers[id % 3], i64::try_from(id).unwrap(), Some(a));
        id += 1;
        if reply.status == 429 {
            assert_eq!(reply.code(), -31_429);
            break;
        }
        assert_eq!(reply.status, 200, "{reply:?}");
        admitted += 1;
        assert!(
            admitted <= 20,
            "client A got more than its burst across replicas"
        );
    }
    assert_eq!(admitted, 20);
    for (index, server) in servers.iter().enumerate() {
        let refused = quick(server, 100 + i64::try_from(index).unwrap(), Some(a));
        assert_eq!(refused.status, 429, "replica {index}: {refused:?}");
        assert!(refused.header("retry-after").is_some());
        // B, on every replica at the same moment, is served.
        let served = quick(server, 200 + i64::try_from(index).unwrap(), Some(b));
        assert_eq!(served.status, 200, "replica {index}: {served:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_legacy_session_opened_on_one_replica_is_served_and_ended_by_the_others() {
    let Some(redis) = Redis::start("session", None) else {
        return;
    };
    let (dir, manifest) = manifest("session");
    let env = [
        ("IT_TOKEN_A", "token-of-client-a-0123456789"),
        ("IT_TOKEN_B", "token-of-client-b-0123456789"),
    ];
    // The store chosen by the manifest this time (`[limits] quota_store`), not a flag.
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        format!("[limits]\nquota_store = \"redis\"\nredis_namespace = \"it-session\"\n\n{text}"),
    )
    .unwrap();
    let url = redis.url();
    let servers: Vec<HttpServer> = (0..3)
        .map(|_| {
            HttpServer::airlock(
                &[
                    "--manifest",
                    manifest.to_str().unwrap(),
                    "--auth-token-env",
                    "IT_TOKEN_A",
                    "--auth-token-env",
                    "IT_TOKEN_B",
                ],
                &[env[0], env[1], ("AIRLOCK_REDIS_URL", &url)],
            )
        })
        .collect();
    assert!(log_of(&servers[0]).contains("shared by every replica"));
    let (auth_a, auth_b) = (bearer(env[0].1), bearer(env[1].1));
    // Opened on replica 0 in 2025-06-18.
    let opened = post(
        servers[0].addr,
        &[("Authorization", &auth_a)],
        &stdio::request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "it", "version": "1"}}),
        ),
    );
    assert_eq!(opened.status, 200, "{opened:?}");
    assert_eq!(opened.json()["result"]["protocolVersion"], "2025-06-18");
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let in_session = |auth: &str| {
        vec![
            ("Authorization", auth.to_owned()),
            ("Mcp-Session-Id", session.clone()),
            ("MCP-Protocol-Version", "2025-06-18".to_owned()),
        ]
    };
    let send = |server: &HttpServer, auth: &str, body: &str| {
        let headers = in_session(auth);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post(server.addr, &headers, body)
    };
    // Before the handshake is confirmed, replica 1 answers as replica 0 would.
    let early = send(
        &servers[1],
        &auth_a,
        &stdio::request(1, "tools/list", json!({})),
    );
    assert_eq!(early.status, 200, "{early:?}");
    assert_eq!(stdio::code(&early.json()), -32_602, "{early:?}");
    // Confirmed on replica 1.
    let confirmed = send(
        &servers[1],
        &auth_a,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(confirmed.status, 202, "{confirmed:?}");
    // Listed on replica 2, in the negotiated revision; called on replica 0 (which opened it
    // and learns of the confirmation from the store).
    let listed = send(
        &servers[2],
        &auth_a,
        &stdio::request(2, "tools/list", json!({})),
    );
    assert_eq!(listed.status, 200, "{listed:?}");
    assert_eq!(stdio::tool_names(&listed.json()), ["quick", "nap"]);
    let called = send(&servers[0], &auth_a, &stdio::call(3, "quick", json!({})));
    assert_eq!(called.status, 200, "{called:?}");
    assert!(called.json()["result"]["content"].is_array(), "{called:?}");
    // Another identity holding the id is not let in, on any replica.
    for server in &servers {
        let stolen = send(server, &auth_b, &stdio::request(4, "tools/list", json!({})));
        assert_eq!(stolen.status, 404, "{stolen:?}");
    }
    // Ended on replica 2: gone on every replica.
    let headers = in_session(&auth_a);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut request = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        servers[2].addr
    );
    for (name, value) in &headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let ended = http::exchange(servers[2].addr, request.as_bytes());
    assert_eq!(ended.status, 204, "{ended:?}");
    for server in &servers {
        let gone = send(server, &auth_a, &stdio::request(5, "tools/list", json!({})));
        assert_eq!(gone.status, 404, "{gone:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Replicas of the conformance fixture (its tools ask the client questions), all on
/// `redis`, namespace `conformance`.
pub(crate) fn asking_replicas(count: usize, redis: &Redis) -> Vec<HttpServer> {
    let url = redis.url();
    (0..count)
        .map(|_| {
            HttpServer::start(
                &stdio::example("conformance_server"),
                &["--http", "127.0.0.1:0"],
                &[("CONFORMANCE_REDIS_URL", &url)],
            )
        })
        .collect()
}

/// Calls the fixture's `test_elicitation` in `session` on `addr`: the question must be asked
/// when the client `declared` elicitation, and otherwise the tool is told the client cannot
/// answer (an `isError` result, no question).
pub(crate) fn asks_only_if_declared(addr: SocketAddr, session: &str, declared: bool) {
    let mut stream = Stream::call(
        addr,
        session,
        1,
        "test_elicitation",
        json!({"message": "Your name?"}),
    );
    if declared {
        assert!(
            stream.hears("elicitation/create", REPLY_TIMEOUT),
            "the question is asked of a client that declared elicitation: {stream:?}"
        );
    } else {
        assert!(stream.ends(REPLY_TIMEOUT), "{stream:?}");
        let body = stream.text();
        assert!(
            !body.contains("elicitation/create"),
            "no question for a client that did not declare elicitation: {body}"
        );
        assert!(body.contains(r#""isError":true"#), "{body}");
    }
}

#[test]
fn a_replica_that_takes_a_session_over_asks_only_what_its_client_declared() {
    let Some(redis) = Redis::start("capabilities", None) else {
        return;
    };
    let servers = asking_replicas(2, &redis);
    for (capabilities, declared) in [(json!({"elicitation": {}}), true), (json!({}), false)] {
        // Opened and confirmed on replica 0; called on replica 1, which takes it over.
        let session = http::initialize_declaring(servers[0].addr, capabilities);
        asks_only_if_declared(servers[1].addr, &session, declared);
    }
}

pub(crate) fn tools_list(server: &HttpServer, id: i64) -> Reply {
    modern(server.addr, id, "tools/list", json!({}), &[])
}

#[test]
fn redis_stopped_mid_run_fails_closed_or_falls_back_as_configured_and_both_recover() {
    let Some(mut redis) = Redis::start("outage", None) else {
        return;
    };
    let closed = replicas(1, &redis, &["--redis-namespace", "it-outage"], &[]).remove(0);
    let local = replicas(
        1,
        &redis,
        &[
            "--redis-namespace",
            "it-outage",
            "--redis-unreachable",
            "local",
        ],
        &[],
    )
    .remove(0);
    assert_eq!(tools_list(&closed, 1).status, 200);
    assert_eq!(tools_list(&local, 1).status, 200);
    redis.stop();
    // Failing closed: 503 and -31503 with the fixed text, nothing of Redis on the wire.
    let refused = retry_until(
        "a refusal while Redis is down",
        || tools_list(&closed, 2),
        |r| r.status != 200,
    );
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(
        refused.json()["error"],
        json!({"code": -31_503, "message": "The shared quota store is unreachable; retry later."})
    );
    let call = quick_default(&closed, 3);
    assert_eq!(call.status, 503, "{call:?}");
    assert_eq!(call.code(), -31_503);
    // Falling back: served on this replica's own limits.
    for id in 2..12 {
        let served = tools_list(&local, id);
        assert_eq!(served.status, 200, "{served:?}");
    }
    // A legacy session opened on local limits during the outage.
    let session = http::initialize(local.addr);
    // More requests while it is down: no more lines saying so (one per switch; a loaded
    // machine may have timed out a call before the outage, hence "no more", not "one").
    let before = [switches(&closed), switches(&local)];
    assert!(before.iter().all(|&n| n >= 1), "{before:?}");
    for id in 4..14 {
        assert_eq!(tools_list(&closed, id).status, 503);
        assert_eq!(tools_list(&local, id).status, 200);
    }
    assert_eq!([switches(&closed), switches(&local)], before);
    assert!(log_of(&closed).contains("requests it would count are refused (-31503)"));
    assert!(log_of(&local).contains("each replica applies its local limits"));
    // Back: both recover without a restart of theirs (the local one serves throughout, so
    // its recovery shows in its log).
    redis.restart();
    retry_until("recovery", || tools_list(&closed, 20), |r| r.status == 200);
    let started = Instant::now();
    while !log_of(&local).contains("the shared quota store answers again") {
        assert_eq!(tools_list(&local, 20).status, 200);
        assert!(started.elapsed() < REPLY_TIMEOUT, "{}", log_of(&local));
        thread::sleep(Duration::from_millis(20));
    }
    for server in [&closed, &local] {
        let log = log_of(server);
        assert!(
            log.contains("the shared quota store answers again"),
            "{log}"
        );
        assert!(!log.contains("panicked"), "{log}");
    }
    assert_eq!(quick_default(&closed, 21).status, 200);
    // The session opened during the outage lives on once Redis is back, and is now shared:
    // the other replica serves it too.
    let in_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    for server in [&local, &closed] {
        let listed = post(
            server.addr,
            &in_session,
            &stdio::request(30, "tools/list", json!({})),
        );
        assert_eq!(listed.status, 200, "{listed:?}");
        assert!(listed.json()["result"]["tools"].is_array(), "{listed:?}");
    }
}

/// `count_lines` of the embedded default manifest (a quick command).
fn quick_default(server: &HttpServer, id: i64) -> Reply {
    modern(
        server.addr,
        id,
        "tools/call",
        json!({"name": "count_lines", "arguments": {"path": "."}}),
        &[],
    )
}

#[test]
fn a_replica_killed_with_a_call_in_flight_gives_its_lease_back_within_the_expiry() {
    let Some(redis) = Redis::start("lease", None) else {
        return;
    };
    let (dir, manifest) = manifest("lease");
    let env = [("IT_TOKEN_A", "token-of-client-a-0123456789")];
    let lease = Duration::from_millis(1500);
    let mut servers = replicas(
        2,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "it-lease",
            "--auth-token-env",
            "IT_TOKEN_A",
            "--client-in-flight",
            "1",
            "--redis-lease-ms",
            "1500",
        ],
        &env,
    );
    let auth = bearer(env[0].1);
    // Client A's only slot, taken on replica 0 by a call that does not end by itself.
    let mut held = TcpStream::connect(servers[0].addr).unwrap();
    let nap = modern_bytes(
        servers[0].addr,
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {}}),
        &[("Authorization", &auth)],
    );
    held.write_all(&nap).unwrap();
    let started = Instant::now();
    while !processes::runs_a_descendant(servers[0].pid(), "sleep") {
        assert!(
            started.elapsed() < REPLY_TIMEOUT,
            "the slow call never started"
        );
        thread::sleep(Duration::from_millis(10));
    }
    // Replica 1 sees A's slot taken: 503, -31503, client_in_flight; for longer than a lease
    // expiry, as replica 0 renews it.
    thread::sleep(lease * 2);
    let busy = quick(&servers[1], 2, Some(env[0].1));
    assert_eq!(busy.status, 503, "{busy:?}");
    assert_eq!(busy.json()["error"]["data"]["limit"], "client_in_flight");
    // Replica 0 dies (SIGKILL: no release); its lease lapses at its expiry.
    let killed_at = Instant::now();
    drop(servers.remove(0));
    // Polled every 20 ms: past the quota's burst the poller itself gets 429, which says
    // nothing of the lease, so that is waited through too.
    let served = retry_until(
        "the dead replica's lease to lapse",
        || quick(&servers[0], 3, Some(env[0].1)),
        |reply| !matches!(reply.status, 503 | 429),
    );
    let waited = killed_at.elapsed();
    assert_eq!(served.status, 200, "{served:?}");
    eprintln!("the lease of a killed replica lapsed after {waited:?} (expiry {lease:?})");
    // A generous bound, to tell "lapsed at its expiry" from "never released by the store".
    assert!(waited < lease * 4, "took {waited:?} for a {lease:?} lease");
    drop(held);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_redis_password_reaches_neither_the_log_nor_the_wire() {
    let password = "hunter2-redis-password-9f8e7d";
    let Some(redis) = Redis::start("password", Some(password)) else {
        return;
    };
    let debug = [("AIRLOCK_LOG", "debug")];
    let right = replicas(1, &redis, &["--redis-namespace", "it-password"], &debug).remove(0);
    let served = tools_list(&right, 1);
    assert_eq!(served.status, 200, "{served:?}");
    // A wrong password: refused by Redis, so the store is unreachable; fail closed.
    let wrong_url = format!("redis://:wrong-{password}@127.0.0.1:{}", redis.port);
    let wrong = HttpServer::airlock(
        &["--quota-store", "redis", "--redis-namespace", "it-password"],
        &[("AIRLOCK_REDIS_URL", &wrong_url), ("AIRLOCK_LOG", "debug")],
    );
    let refused = tools_list(&wrong, 1);
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.code(), -31_503);
    let body = String::from_utf8_lossy(&refused.body).into_owned();
    assert!(!body.contains(password), "{body}");
    for server in [&right, &wrong] {
        let log = log_of(server);
        assert!(
            !log.contains(password),
            "the password is in the log:\n{log}"
        );
        assert!(!log.contains("redis://"), "the URL is in the log:\n{log}");
    }
    // And a URL given where the variable's name belongs is refused without being shown.
    let output = stdio::run(
        &stdio::airlock(),
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--quota-store",
            "redis",
            "--redis-url-env",
            &redis.url(),
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--redis-url-env takes the NAME"),
        "{stderr}"
    );
    assert!(!stderr.contains(password), "{stderr}");
}

#[test]
fn a_store_setting_in_the_manifest_is_checked_and_the_url_never_comes_from_it() {
    let cases: &[(&str, &str)] = &[
        ("quota_store = \"memcached\"", "unknown variant `memcached`"),
        (
            "quota_store = \"redis\"\nredis_namespace = \"a:b\"",
            "limits.redis_namespace",
        ),
        (
            "quota_store = \"redis\"\nredis_lease_ms = 10",
            "limits.redis_lease_ms",
        ),
        (
            "redis_namespace = \"prod\"",
            "needs quota_store = \"redis\"",
        ),
        (
            "quota_store = \"redis\"\nredis_url = \"redis://x\"",
            "unknown field `redis_url`",
        ),
    ];
    for (limits, expected) in cases {
        let (dir, manifest) = http::scratch_manifest(
            "redis-manifest",
            &format!(
                "[limits]\n{limits}\n\n[[tool]]\nname = \"quick\"\n\
                 description = \"Returns at once\"\ncommand = [\"true\"]\n"
            ),
        );
        let output = stdio::run(
            &stdio::airlock(),
            &["check", "--manifest", manifest.to_str().unwrap()],
            &[],
        );
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned()
            + &String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{limits}: {stderr}");
        assert!(stderr.contains(expected), "{limits}: {stderr}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Tasks are not shared by replicas (OPERATOR-GUIDE.md, "Scale-out"): a task lives on the
/// replica that created it, which alone runs, shows and cancels it. Asked of another replica,
/// even by its owner in a session every replica serves, it is what an id never issued is:
/// the documented failure is a clean "no such task", never another task nor a leak, and the
/// replica that has it still serves it.
#[test]
fn a_task_lives_on_the_replica_that_created_it_and_is_unknown_elsewhere() {
    let Some(redis) = Redis::start("tasks", None) else {
        return;
    };
    let (_dir, manifest) = http::scratch_manifest(
        "redis-tasks",
        "[[tool]]\nname = \"nap\"\ndescription = \"Sleeps\"\n\
         command = [\"sleep\", \"{seconds}\"]\ntask = \"optional\"\n\
         args.seconds = { type = \"integer\", minimum = 1, maximum = 30 }\n",
    );
    let token = "task-owner-on-replicas-0123456789";
    let servers = replicas(
        2,
        &redis,
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--redis-namespace",
            "it-tasks",
            "--auth-token-env",
            "IT_TASK_TOKEN",
        ],
        &[("IT_TASK_TOKEN", token)],
    );
    let auth = bearer(token);
    let session = http::initialize_with(servers[0].addr, &[("Authorization", &auth)]);
    let send = |server: &HttpServer, id: i64, method: &str, params: serde_json::Value| {
        let mut headers = http::session_headers(&session);
        headers.push(("Authorization", &auth));
        let reply = post(server.addr, &headers, &stdio::request(id, method, params));
        assert_eq!(reply.status, 200, "{reply:?}");
        reply.json()
    };
    let created = send(
        &servers[0],
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"seconds": 2}, "task": {}}),
    );
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let never = "0".repeat(64);
    for (id, method) in [(2, "tasks/get"), (3, "tasks/result"), (4, "tasks/cancel")] {
        let elsewhere = send(&servers[1], id, method, json!({ "taskId": task }));
        let unknown = send(&servers[1], id, method, json!({ "taskId": never }));
        assert_eq!(elsewhere, unknown, "{method}");
        assert_eq!(elsewhere["error"]["code"], -32_602, "{elsewhere}");
    }
    let listed = send(&servers[1], 5, "tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    // The replica that created it runs it to its end, untouched by the others' answers.
    let result = send(&servers[0], 6, "tasks/result", json!({ "taskId": task }));
    assert_ne!(result["result"]["isError"], true, "{result}");
    let done = send(&servers[0], 7, "tasks/get", json!({ "taskId": task }));
    assert_eq!(done["result"]["status"], "completed", "{done}");
}
