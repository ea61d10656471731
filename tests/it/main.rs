//! Integration tests: the real binaries over real pipes.
//!
//! One test binary (rustls `api.rs`, ripgrep `tests.rs` style). Each module drives a server
//! process through its stdin/stdout and asserts on the exact lines it writes:
//!
//! - `protocol`: handshakes, both eras, listing, calls, the error table, through the example
//!   product CLI (`crates/airlock/examples/product_cli.rs mcp`) and the fixture server;
//! - `hostile`: what an attacker sends — huge lines, bad bytes, deep nesting, batches, floods,
//!   panics, end of input with work in flight;
//! - `serve`: `airlock serve` with manifests, attacked through real child processes, and
//!   `airlock check` on good and bad manifests;
//! - `serve_surface`: a manifest's `[[prompt]]` and `[[resource]]`: prompts rendered in one
//!   pass, resource files read confined beneath their root, links and FIFOs planted after
//!   start refused;
//! - `arguments`: values a program reads as more than data (find's expressions, make's and
//!   awk's assignments, `@file`, interpreters' code, options let through), refused by
//!   `airlock check` unless accepted by name and at call time; absolute paths; literal braces;
//! - `abuse`: quotas, floods, the in-flight cap and cancellation, a client that stops reading;
//! - `asking`: a tool asks the client (elicitation, sampling) over real pipes; hostile answers
//!   reach it as fixed errors;
//! - `audit`: `airlock audit` against our own servers, a rule-breaking server, and process
//!   cleanup (the full battery is an ignored test, run by CI);
//! - `audit_http`: `airlock audit --url` against `airlock serve --http` (both eras, slow and
//!   idle connections) and a fixture that serves any `Host`;
//! - `audit_reports`: the audit as CI consumes it: `--fail-on`, `--baseline`, the SARIF report
//!   against the SARIF 2.1.0 schema, the JUnit report parsed;
//! - `audit_metadata`: the audit's `metadata` category (what a server tells the model):
//!   planted patterns found with their location, a clean server and our own default clean, pins;
//! - `guidance`: what `airlock check` says to get a manifest right (issue 41): shell operators
//!   refused, tar's compressors named, an `enum` of filters not agent text, every shape error
//!   at once with "did you mean", fixed paths outside the grants;
//! - `operator`: the per-call audit record, refusals logged at the HTTP boundary, the
//!   operator-facing commands and messages;
//! - `setup`: what an operator sets airlock up with: `[defaults]` and `${VAR}`
//!   paths, `airlock init` and `airlock schema`, `--log-format json` and `--log-file`, SIGUSR1
//!   without an audit log, shell completions and the man page;
//! - `output`: what a command tool's reply holds: redaction without an oracle, one redactor
//!   for every secret, both streams as the manifest asks, replies inside the memory bound;
//! - `http`: `airlock serve --http` over real TCP on loopback: Host, Origin, caps, tokens, both
//!   eras, per-client quotas, a thousand connections;
//! - `http_abuse`: hostile HTTP clients (a full session table, idle sockets, readers that never
//!   read, garbage) while another client must still be served;
//! - `http_refused`: what refused HTTP traffic costs the operator (issue 35): log and audit
//!   lines counted rather than written per refusal, web pages that cannot lock the local client
//!   out, forwarding headers only as the configured proxy writes them, bounded partial bodies,
//!   repeated and mismatched `Mcp-*` headers, fair shares of the server-wide call quota;
//! - `http_listen`: resource subscriptions over HTTP: a session's `GET` stream carries the
//!   updates of what it subscribed to, one stream per session, ended with the session;
//! - `http_probes`: `/healthz` and `/readyz`: outside the MCP path's checks, fixed bodies,
//!   GET and HEAD only, not ready while the shared store is down under fail-closed;
//! - `http_browser`: CORS preflights and replies to listed origins, and a real headless Chromium
//!   using airlock with `fetch` from a listed origin and refused from another;
//! - `http_oauth`: `--oauth-…`: airlock as an OAuth resource server against a test
//!   authorization server on loopback (keys per run, its JWKS served by the test): valid,
//!   expired, forged and misdirected tokens, scopes per tool, the metadata, a JWKS endpoint
//!   that is slow, huge or down, and the official Python SDK's OAuth client signing in;
//! - `redteam_oauth`: the OAuth resource server attacked as a hostile client (forged,
//!   confused and oddly shaped tokens, claims read two ways, substring scopes, hostile `Host`
//!   headers, another subject's session) and as a hostile JWKS endpoint (redirects, drips,
//!   endless bodies, floods of unknown `kid`s);
//! - `http_tls`: `--tls-cert`/`--tls-key`: the official Python client over https, TLS versions,
//!   plain HTTP and stalled handshakes on the TLS port, start-up errors;
//! - `metrics`: `airlock serve --metrics`: a real Prometheus server scrapes the endpoint and
//!   its HTTP API reports the calls and refusals made; `promtool check metrics`; the endpoint's
//!   fixed refusals; a remote address without `--allow-remote`; `[server] metrics`;
//! - `otel`: `airlock serve --otlp`: spans received by an OTLP/HTTP receiver the test starts
//!   on loopback, decoded with the official `opentelemetry-proto` definitions: names and
//!   attributes by the MCP conventions, the client's `_meta` trace, the command's span a
//!   child and its `TRACEPARENT`, a malformed context a fresh trace, W3C headers over HTTP;
//! - `redis`: replicas of `airlock serve --http --quota-store redis` sharing one real
//!   `redis-server`: global quotas, per-client quotas, legacy sessions across replicas, Redis
//!   stopped and restarted, a replica killed with a call in flight, the URL's password;
//! - `reload`: SIGHUP reloads `airlock serve`'s manifest: a good one replaces the tools and
//!   clients are told (stdio, an HTTP session's `GET` stream), a bad one keeps them and says
//!   why at ERROR, the embedded default still ends;
//! - `clients`: the official Python and TypeScript SDK clients and the Inspector CLI driving
//!   airlock (installed by `tests/clients/setup.sh`);
//! - `input_required`: 2026-07-28 calls that need the client's input (multi round-trip
//!   requests), over real HTTP and real pipes;
//! - `tasks`: MCP tasks (2025-11-25 and the 2026-07-28 extension) of `airlock serve`, from our
//!   own lines and rmcp's clients (`tools/task-client`): a command that outlives its request
//!   created, polled, waited for and recorded; cancel and the end of input kill its sandbox;
//!   the bounds' typed refusals; a task asked of a tool or server that offers none;
//! - `tasks_flood`: a client creating tasks as fast as it may for a minute over HTTP: the
//!   server's peak memory inside its bound, another client's tasks still run (ignored: CI's
//!   audit step runs it);
//! - `product`: the example product CLI used as a CLI (the functions its `mcp` serves);
//! - `network`: network by destination (issue 36): the proxy a networked tool's commands
//!   reach the network through, with names pinned by `--test-hosts` to loopback servers;
//! - `denials`: sandbox denials an operator can act on (issue 39): what Landlock refused a
//!   command (a program outside `exec`, a device written, a connection around the proxy) and
//!   what the proxy refused, in the call's result, its audit record and `airlock check --try`,
//!   with the key that would allow it; a connect without `network` (Landlock's TCP rules); a
//!   write outside the grant (the view's `EROFS`, `ENOENT`) through the syscall audit's rules
//!   `airlock check --audit-rules` prints, installed with `auditctl` and removed; the kernel's
//!   audit switched on and back by the tests; what no machine reports (seccomp's `EPERM`)
//!   pinned;
//! - `sandbox`: the kernel sandbox attacked from inside a call (a shell or Python the agent
//!   drives), each attack beside a control with the sandbox off; section 12 is default deny
//!   (metadata outside the grants, sockets by path, budgets per call, system calls, later code);
//! - `redteam_network`: the network proxy (issue 36) red-teamed from inside a call: addresses
//!   written every way, this machine's own public address, descriptors held by proxied
//!   connections, floods of connections and heads against airlock's memory, and the buffered
//!   copy (slots given back however a call ends, budgets, half-closes and byte order);
//! - `redteam_sandbox`: the sandbox red-teamed from inside a call: set-uid files, later code
//!   the sweep leaves (renamed, stopped calls, past the walk bound), system calls by x32
//!   numbers and high argument bits, the view's way out, socket pairs, daemonised children,
//!   the TCP socket of a tool without the network spelled every way, and its listener;
//! - `redteam_denials`: sandbox denials (issue 39) red-teamed: a denial reaching only its own
//!   call when the next call takes the launcher during the settle, a secret, control bytes
//!   and length in a refused path, audit records a command tries to send, a flood of refusals,
//!   a write through a link and `..` the view refused, named as the command wrote it, refused
//!   writes by audit session through a flood and after `setsid`;
//! - `redteam_tasks`: MCP tasks attacked as a hostile client: ids of every odd shape and
//!   another session's ids, `ttl`s of every type, daemons a task forks killed by cancel, the
//!   end of input and a session's `DELETE`, floods of `tasks/result` waiters, a 2026-07-28
//!   call dropped during its inline wait;
//! - `redteam_metrics`: the metrics endpoint attacked over loopback: `Host` variants, two
//!   `Host` fields, absolute-form targets, methods and paths, agent tool names kept out of
//!   labels, idle connections against the connection cap;
//! - `redteam_otel`: the OTLP exporter against hostile collectors on loopback (never
//!   answering, dripping its head, an endless body, `100 Continue`): serving goes on and the
//!   end of input still ends airlock within the shutdown bound; a string id's line separators
//!   and bidirectional overrides escaped in its span;
//! - `redteam`, `redteam_asking`, `redteam_oauth`, `redteam_redis`, `redteam_resources`,
//!   `redteam_subscriptions`, `redteam_release`, `redteam_sandbox`, `redteam_tasks`,
//!   `redteam_metrics`, `redteam_denials`, `redteam_otel`: regressions of red-team
//!   findings, one file per attacked feature (`redteam_release` against the release
//!   binaries, which the others do not build).
//!
//! Support, not tests: `support` (see its `mod.rs`): `stdio` (a server on real pipes, lines
//! in and out with timeouts), `http` (`airlock serve --http` on loopback, raw requests, parsed
//! replies), `sse` (an event stream on its own connection), `fixtures` (scratch trees and
//! manifests), `processes` (memory, descendants, signals, waiting), `redis` (a `redis-server`
//! per test and replicas on it). A helper two modules need goes there, once; a `redteam_*`
//! file may use the fixtures of the feature it attacks (`redteam_redis` those of `redis`).
//!
//! Where a new test goes: an attack on the JSON-RPC stream itself (bytes, sizes, nesting,
//! ids) in `hostile`; on quotas, floods and in-flight caps over stdio in `abuse`, over HTTP
//! in `http_abuse` (`http_refused` for what refusals cost the operator); on a command
//! tool's sandbox in `sandbox` (with its control), or on its network in `network`; a
//! regression of a red-team finding in the `redteam_*` file of the feature it attacked; a
//! behaviour an operator sees (records, messages, commands) in `operator` or `setup`.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stderr,
    clippy::string_slice,
    clippy::unwrap_used,
    unreachable_pub,
    reason = "test code: a failed expectation is a failed test, and helpers are shared by modules"
)]

mod abuse;
mod arguments;
mod asking;
mod audit;
mod audit_http;
mod audit_metadata;
mod audit_reports;
mod clients;
mod denials;
mod guidance;

mod hostile;
mod http;
mod http_abuse;
mod http_browser;

mod http_listen;
mod http_oauth;
mod http_probes;
mod http_refused;
mod http_tls;
mod input_required;
mod metrics;
mod network;
mod operator;
mod otel;
mod output;
mod product;
mod protocol;
mod redis;
mod redteam;
mod redteam_asking;
mod redteam_denials;
mod redteam_metrics;
mod redteam_network;
mod redteam_oauth;
mod redteam_otel;
mod redteam_redis;
mod redteam_release;
mod redteam_resources;
mod redteam_sandbox;
mod redteam_subscriptions;
mod redteam_tasks;
mod reload;
mod sandbox;
mod serve;
mod serve_surface;
mod setup;
mod support;
mod tasks;
mod tasks_flood;

/// The map above names every module, and every file here is a module: a file left out of the
/// `mod` list is never compiled, so its tests never run, and one left out of the map leaves a
/// newcomer guessing where a test goes.
#[test]
fn every_test_module_is_declared_and_mapped() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let main = std::fs::read_to_string(here.join("main.rs")).unwrap();
    let declared: Vec<&str> = main
        .lines()
        .filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let map: String = main
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    for module in &declared {
        assert!(
            map.contains(&format!("`{module}`")),
            "tests/it/main.rs declares `{module}` but its map does not say what it holds"
        );
    }
    let mut files: Vec<String> = std::fs::read_dir(&here)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter_map(|name| Some(name.strip_suffix(".rs")?.to_owned()))
        .filter(|name| name != "main")
        .collect();
    files.push("support".to_owned());
    for file in &files {
        assert!(
            declared.contains(&file.as_str()),
            "tests/it/{file}.rs is not declared in main.rs: its tests never run"
        );
    }
    let support = std::fs::read_to_string(here.join("support/mod.rs")).unwrap();
    for entry in std::fs::read_dir(here.join("support")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "mod") else {
            continue;
        };
        assert!(
            support.contains(&format!("pub mod {module};"))
                && support.contains(&format!("//! - `{module}`:")),
            "tests/it/support/{name} is not declared and described in support/mod.rs"
        );
    }
}
