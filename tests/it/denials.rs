//! Sandbox denials an operator can act on (issue 39): what the sandbox refused a command comes
//! back in the call's result ("the sandbox refused: exec /usr/bin/id; write /dev/full"), in
//! its audit record (`denials`, each with the manifest key that would allow it) and from
//! `airlock check --try`, where the kernel reports it.
//!
//! **What the kernel must offer.** Landlock logs denials from ABI 7 (Linux 6.15), only while
//! the kernel's audit is on, and airlock reads them over the audit multicast, which needs root
//! in the initial user and network namespaces. These tests turn audit on over netlink (as
//! `auditctl -e 1` does) and put it back as they found it (`support::audit::Switch`). A
//! machine that cannot (an older kernel, rootless, a container) fails these tests naming what
//! is missing, unless `AIRLOCK_TEST_KERNEL_CANNOT_REPORT_DENIALS` holds the reason: then they
//! check the other side, that nothing is claimed and `airlock check` says denials are not
//! reported. Never a silent pass.
//!
//! **A connection without `network`** is Landlock's to refuse where it has TCP rules (ABI 4,
//! Linux 6.7): seccomp lets such a tool open a TCP socket, so its connect is refused, and
//! reported, with its address (ABI 7 and audit on, as above). On an older kernel seccomp
//! refuses the socket (`EPERM`), which no kernel reports.
//!
//! **A write outside the grant** is refused by the view (`EROFS` in a read-only bind, `ENOENT`
//! for a path it does not hold) before Landlock looks: only the kernel's syscall audit sees it,
//! where the operator installed the rules `airlock check --audit-rules` prints (any kernel with
//! audit; the launcher must be able to take its audit login uid: root in the initial user
//! namespace). The test installs them with `auditctl` (Debian's `auditd`, from
//! tests/clients/setup.sh: missing, the test fails) and removes them after
//! (`support::audit::Rules`); without them, such a write is not reported.
//!
//! **What no machine reports**, pinned here so a change shows: a UDP socket without `network`
//! is refused by seccomp (`EPERM`), which never reaches a result as a denial.

use std::path::Path;

use serde_json::{Value, json};

use crate::network::records;
use crate::support::audit::{Rules, Switch};
use crate::support::fixtures::SandboxTree;
use crate::support::stdio::{Server, airlock, call, outcome, run};

/// Set to the reason when this machine cannot report denials (see the module docs).
const CANNOT: &str = "AIRLOCK_TEST_KERNEL_CANNOT_REPORT_DENIALS";

/// A bash tool writing to `out` only; with `network`, a networked one.
pub(crate) fn manifest(network: bool) -> String {
    let mut text = String::new();
    for (name, extra) in [
        ("shell", "write = [\"out\"]\n"),
        ("net", "network = [\"listed.example:443\"]\n"),
    ] {
        if name == "net" && !network {
            continue;
        }
        text.push_str(&format!(
            r#"
[[tool]]
name = "{name}"
description = "Runs agent text in bash"
command = ["/usr/bin/bash", "-c", "{{script}}"]
workdir = "work"
stderr = "drop"
accept_risk = ["interpreter_code"]
args.script = {{ type = "string", max_length = 4000 }}
{extra}"#
        ));
    }
    text
}

/// Whether this machine reports denials, with audit held on for the test when it does: `Err`
/// fails the test unless [`CANNOT`] says why the machine cannot.
pub(crate) fn reporting(manifest: &str) -> Option<Switch> {
    let switch = Switch::set(true);
    let check = run(&airlock(), &["check", "--manifest", manifest], &[]);
    let said = String::from_utf8_lossy(&check.stdout).into_owned();
    let reported = said.contains("sandbox denials: reported");
    match (switch, reported, std::env::var(CANNOT)) {
        (Ok(switch), true, _) => Some(switch),
        (_, _, Ok(reason)) if !reason.is_empty() => {
            eprintln!("{CANNOT}: {reason}; checking that nothing is claimed");
            assert!(
                said.contains("sandbox denials: NOT reported"),
                "airlock check must say denials are not reported:\n{said}"
            );
            None
        }
        (switch, _, _) => panic!(
            "this machine does not report sandbox denials, which needs Landlock ABI 7 (Linux \
             6.15), the kernel's audit (CONFIG_AUDIT) and root in the initial user and network \
             namespaces (CAP_AUDIT_READ, CAP_AUDIT_CONTROL); set {CANNOT}=<why> on a machine \
             that cannot.\naudit switch: {:?}\nairlock check said:\n{said}",
            switch.err()
        ),
    }
}

fn serve(scratch: &SandboxTree, network: bool) -> (Server, String) {
    let path = scratch.manifest(&manifest(network));
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
    server.initialize("2025-11-25");
    (server, path)
}

fn bash(server: &mut Server, id: u64, tool: &str, script: &str) -> (bool, String) {
    outcome(&server.request(&call(id, tool, json!({ "script": script }))))
}

/// The `denials` of a record: each as (kind, object, allow, source).
pub(crate) fn denials(record: &Value) -> Vec<(String, String, String, String)> {
    record["denials"]["denials"]
        .as_array()
        .map(|denials| {
            denials
                .iter()
                .map(|denial| {
                    let field = |key: &str| denial[key].as_str().unwrap_or("").to_owned();
                    (
                        field("kind"),
                        field("object"),
                        field("allow"),
                        field("source"),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A program not granted `exec` and a device written are refused by Landlock, and named in the
/// result and the record with the key that would allow them; a write outside the writable
/// directories is refused by the view (`EROFS`), which only the syscall audit's rules report
/// (none installed here: see the last test).
#[test]
fn a_program_outside_exec_and_a_write_outside_the_grant_are_named_where_landlock_refuses() {
    let scratch = SandboxTree::new("denials-files");
    let (mut server, path) = serve(&scratch, false);
    let switch = reporting(&path);
    let (_, text) = bash(
        &mut server,
        1,
        "shell",
        "/usr/bin/id; echo x > /dev/full; echo x > ../beside-work; echo x > out/fine; echo end",
    );
    assert!(text.contains("end"), "{text}");
    assert!(
        !scratch.dir.join("beside-work").exists(),
        "the write outside the grant went through"
    );
    // The same launcher serves the next call: its Landlock domain was announced with the first
    // call's first denial only, and the next call's denials are still its own.
    let (_, again) = bash(&mut server, 2, "shell", "/usr/bin/ls out; echo end");
    let (_, clean) = bash(&mut server, 3, "shell", "echo x > out/clean; echo end");
    let records = records(&mut server);
    let found = denials(&records[0]);
    if switch.is_none() {
        assert!(!text.contains("the sandbox refused"), "{text}");
        assert!(found.is_empty(), "{found:?}");
        return;
    }
    assert!(
        again.contains("the sandbox refused: exec /usr/bin/ls") && !again.contains("/usr/bin/id"),
        "{again}"
    );
    assert!(!clean.contains("the sandbox refused"), "{clean}");
    assert!(records[2]["denials"].is_null(), "{}", records[2]);
    assert!(
        text.contains("the sandbox refused: exec /usr/bin/id; write /dev/full"),
        "{text}"
    );
    assert!(
        !text.contains("beside-work"),
        "EROFS is not reported: {text}"
    );
    assert_eq!(
        found,
        [
            (
                "exec".to_owned(),
                "/usr/bin/id".to_owned(),
                "exec = [\"/usr/bin/id\"]".to_owned(),
                "landlock".to_owned()
            ),
            (
                "write".to_owned(),
                "/dev/full".to_owned(),
                "none: no key lets a command write a device but /dev/null".to_owned(),
                "landlock".to_owned()
            ),
        ]
    );
}

/// A networked tool connecting around the proxy is refused by Landlock, named with its address
/// and the `network` key; a destination the proxy refuses is in the record too (always, it is
/// airlock's own refusal); a tool without `network` connecting to `10.0.0.5:5432` is refused
/// by Landlock too (its TCP socket opens, the connect does not), named with the address and
/// the key; its UDP socket is refused by seccomp, which is never reported.
#[test]
fn a_connection_is_named_with_its_address_with_or_without_network_and_udp_is_not() {
    let scratch = SandboxTree::new("denials-net");
    let (mut server, path) = serve(&scratch, true);
    let switch = reporting(&path);
    // A redirection of `:`, not `exec`: bash goes on after it fails.
    let (_, text) = bash(
        &mut server,
        1,
        "net",
        ": <>/dev/tcp/127.0.0.1/5432 || echo direct-refused",
    );
    assert!(text.contains("direct-refused"), "{text}");
    let (_, proxied) = bash(
        &mut server,
        2,
        "net",
        "exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT unlisted.example:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3; read -r status <&3; echo \"$status\"",
    );
    assert!(proxied.contains("403"), "{proxied}");
    let (_, without) = bash(
        &mut server,
        3,
        "shell",
        ": <>/dev/tcp/10.0.0.5/5432 || echo connect-refused",
    );
    assert!(without.contains("connect-refused"), "{without}");
    let (_, udp) = bash(
        &mut server,
        4,
        "shell",
        ": <>/dev/udp/10.0.0.5/53 || echo socket-refused",
    );
    assert!(udp.contains("socket-refused"), "{udp}");
    assert!(!udp.contains("the sandbox refused"), "{udp}");
    let records = records(&mut server);
    let proxy = denials(&records[1]);
    assert_eq!(
        proxy,
        [(
            "connect".to_owned(),
            "unlisted.example:443".to_owned(),
            "network = [\"unlisted.example:443\"]".to_owned(),
            "proxy".to_owned()
        )]
    );
    assert!(denials(&records[3]).is_empty(), "{:?}", records[3]);
    assert!(records[3]["denials"].is_null(), "{}", records[3]);
    let direct = denials(&records[0]);
    let without_network = denials(&records[2]);
    if switch.is_none() {
        assert!(direct.is_empty(), "{direct:?}");
        assert!(without_network.is_empty(), "{without_network:?}");
        assert!(!text.contains("the sandbox refused"), "{text}");
        assert!(!without.contains("the sandbox refused"), "{without}");
        return;
    }
    assert!(
        without.contains("the sandbox refused: connect 10.0.0.5:5432"),
        "{without}"
    );
    assert_eq!(without_network.len(), 1, "{without_network:?}");
    let (kind, object, allow, source) = &without_network[0];
    assert_eq!(
        (kind.as_str(), object.as_str(), source.as_str()),
        ("connect", "10.0.0.5:5432", "landlock")
    );
    assert!(
        allow.starts_with("network = [\"10.0.0.5:5432\"]"),
        "{allow}"
    );
    assert!(
        text.contains("the sandbox refused: connect 127.0.0.1:5432"),
        "{text}"
    );
    assert_eq!(direct.len(), 1, "{direct:?}");
    let (kind, object, allow, source) = &direct[0];
    assert_eq!(
        (kind.as_str(), object.as_str(), source.as_str()),
        ("connect", "127.0.0.1:5432", "landlock")
    );
    assert!(
        allow.starts_with("network = [\"127.0.0.1:5432\"]"),
        "{allow}"
    );
}

/// `airlock check` says whether denials are reported and what never is; `check --try` runs one
/// call and prints each denial with its key (status 1), or nothing denied (status 0). With the
/// kernel's audit off it says so plainly.
#[test]
fn check_try_prints_each_denial_with_its_key_and_says_when_the_kernel_cannot() {
    let scratch = SandboxTree::new("denials-check");
    let path = scratch.manifest(&manifest(false));
    let try_call = |script: &str| {
        let arguments = json!({ "script": script }).to_string();
        let output = run(
            &airlock(),
            &["check", "--manifest", &path, "--try", "shell", &arguments],
            &[],
        );
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let never = "sandbox denials never reported: a read of a path outside the tool's view \
                 (ENOENT)";
    {
        let switch = reporting(&path);
        let (status, printed) = try_call("/usr/bin/id; echo after");
        assert!(printed.contains("after"), "{printed}");
        assert!(printed.contains(never), "{printed}");
        if switch.is_some() {
            assert!(
                printed.contains(
                    "denied: exec /usr/bin/id (by landlock); allow with: exec = [\"/usr/bin/id\"]"
                ),
                "{printed}"
            );
            assert_eq!(status, Some(1), "{printed}");
        } else {
            assert!(printed.contains("cannot be seen here"), "{printed}");
        }
        let (status, printed) = try_call("echo fine");
        assert_eq!(status, Some(0), "{printed}");
        assert!(printed.contains("fine"), "{printed}");
        if switch.is_some() {
            assert!(
                printed.contains("denied: nothing the kernel or the proxy reported"),
                "{printed}"
            );
        }
        let (status, _) = {
            let output = run(
                &airlock(),
                &["check", "--manifest", &path, "--try", "shell", "[1]"],
                &[],
            );
            (output.status.code(), ())
        };
        assert_eq!(
            status,
            Some(2),
            "arguments that are not an object are a usage error"
        );
    }
    // Audit off, where it can be switched: said plainly, and nothing claimed.
    let Ok(_off) = Switch::set(false) else {
        assert!(
            std::env::var(CANNOT).is_ok_and(|reason| !reason.is_empty()),
            "the kernel's audit could not be switched off"
        );
        return;
    };
    let check = run(&airlock(), &["check", "--manifest", &path], &[]);
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        said.contains("sandbox denials: NOT reported")
            && (said.contains("audit is off") || std::env::var(CANNOT).is_ok()),
        "{said}"
    );
    let (status, printed) = try_call("/usr/bin/id");
    assert_eq!(status, Some(1), "{printed}");
    assert!(
        printed.contains("the kernel's denials cannot be seen here"),
        "{printed}"
    );
    assert!(!printed.contains("by landlock"), "{printed}");
    assert!(Path::new(&path).exists());
}

/// Writes the view refuses are named where the syscall audit's rules are installed (the
/// kernels: any with audit, with the same requirements as [`reporting`] here): a file under
/// `/root`, which the view does not hold (`ENOENT`), with the key `write = ["/root"]`; a file
/// in the workdir, a read-only grant (`EROFS`: the kernel names only the directory); a path
/// outside every grant whose directory the host lacks too, since airlock does not tell the
/// command which hidden directories exist. A command's own `ENOENT` inside a grant (a
/// directory missing in its writable one, on the host too) is not the sandbox's and not
/// named. Without the rules, none is.
#[test]
fn a_write_outside_the_grant_is_named_where_the_syscall_audit_rules_are_installed() {
    let scratch = SandboxTree::new("denials-view");
    let (mut server, path) = serve(&scratch, false);
    let switch = reporting(&path);
    let work = scratch.work().canonicalize().unwrap();
    let target = format!("/root/airlock-denials-view-{}", std::process::id());
    let script = format!(
        "echo x > {target}; echo x > inside-workdir; echo x > /airlock-no-such-dir/x; \
         echo x > out/no-such-dir/x; echo end"
    );
    let (_, before) = bash(&mut server, 1, "shell", &script);
    assert!(before.contains("end"), "{before}");
    assert!(
        !before.contains("write /root"),
        "no rules, nothing named: {before}"
    );
    if switch.is_none() {
        return;
    }
    let rules = Rules::install(&airlock());
    let (_, text) = bash(&mut server, 2, "shell", &script);
    drop(rules);
    assert!(text.contains("end"), "{text}");
    assert!(!Path::new(&target).exists(), "the write went through");
    assert!(
        !work.join("inside-workdir").exists(),
        "the write went through"
    );
    let records = records(&mut server);
    let found = denials(&records[1]);
    assert!(
        text.contains(&format!(
            "the sandbox refused: write {target}; write {}; write /airlock-no-such-dir/x",
            work.display()
        )),
        "{text}"
    );
    assert!(!text.contains("out/no-such-dir"), "{text}");
    assert_eq!(
        found,
        [
            (
                "write".to_owned(),
                target.clone(),
                "write = [\"/root\"]".to_owned(),
                "view".to_owned()
            ),
            (
                "write".to_owned(),
                work.display().to_string(),
                format!("write = [\"{}\"]", work.display()),
                "view".to_owned()
            ),
            (
                "write".to_owned(),
                "/airlock-no-such-dir/x".to_owned(),
                "write = [\"/airlock-no-such-dir\"]".to_owned(),
                "view".to_owned()
            ),
        ],
        "{text}"
    );
    assert!(denials(&records[0]).is_empty(), "{}", records[0]);
}
