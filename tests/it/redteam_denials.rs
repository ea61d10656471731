//! Sandbox denials (issue 39) red-teamed from inside a call and as a client: a denial must go
//! to the call that was refused and to no other, a refused path is agent text (escaped, cut,
//! and a secret in it redacted wherever it is shown, the key that would allow it included),
//! a command cannot write audit records of its own, a flood of refusals is cheap for airlock,
//! bounded in the result and blinds no launcher for good, and a denial names what was
//! refused (an open finding: a device ioctl is reported as a write), a write the view refused
//! named as the command wrote it, never as a directory inside its grant.
//!
//! Like `denials`, these need a machine that reports denials (Landlock ABI 7, the kernel's
//! audit, root in the initial namespaces); on one that cannot, set
//! `AIRLOCK_TEST_KERNEL_CANNOT_REPORT_DENIALS` and they check only that nothing is claimed.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::denials::{manifest, reporting};
use crate::network::records;
use crate::sandbox::{Mode, python_tool};
use crate::support::audit::Switch;
use crate::support::fixtures::SandboxTree;
use crate::support::stdio::{Server, airlock, call, outcome, request};

/// Sends the calls `(id, tool, arguments)` at once and returns their replies' texts by id.
fn replies(server: &mut Server, ids: &[u64]) -> HashMap<u64, (bool, String)> {
    let mut out = HashMap::new();
    while out.len() < ids.len() {
        let reply = server.recv();
        if let Some(id) = reply["id"].as_u64()
            && ids.contains(&id)
        {
            out.insert(id, outcome(&reply));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 1. Attribution: a launcher serves the next call while the last one's denials settle

/// A launcher goes back to its pool as soon as its call's program has ended, while that call
/// still waits `SANDBOX_DENIAL_SETTLE` (20 ms) for its records: the next call of the tool may
/// take that very launcher in those 20 ms. Each pair here is a call refused nothing (`true`)
/// and, sent a little later, one refused `/usr/bin/id` in a loop, sent at steps of 2 ms around
/// the moment the first call's program ends, so some land in its settle. The quiet call must
/// never show the other's denial, and the refused call must always show its own.
#[test]
fn a_denial_goes_to_its_own_call_when_the_next_call_takes_the_launcher_during_the_settle() {
    let scratch = SandboxTree::new("rt-denials-settle");
    let path = scratch.manifest(&manifest(false));
    // 128 calls in a few seconds: past the default quota's burst.
    let mut server = Server::start_with(
        &airlock(),
        &[
            "serve",
            "--manifest",
            &path,
            "--calls-per-minute",
            "100000",
            "--call-burst",
            "1000",
        ],
        &[],
    );
    server.initialize("2025-11-25");
    let switch = reporting(&path);
    let quiet = |id: u64| call(id, "shell", json!({ "script": "true" }));
    let refused = |id: u64| {
        call(
            id,
            "shell",
            json!({ "script": "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; \
                               do /usr/bin/id; done 2>/dev/null; echo refused-done" }),
        )
    };
    // Warm the pool, then time a quiet call alone: its reply comes the settle after its end.
    for id in 1..=3 {
        server.request(&quiet(id));
    }
    let mut alone = Duration::MAX;
    for id in 4..=8 {
        let started = Instant::now();
        server.request(&quiet(id));
        alone = alone.min(started.elapsed());
    }
    let mut wrong = Vec::new();
    let mut lost = Vec::new();
    let mut id = 100;
    for round in 0..3 {
        for step in 0..20_u64 {
            id += 2;
            // From 34 ms before the quiet call's reply to 4 ms after it.
            let delay = alone
                .saturating_sub(Duration::from_millis(34))
                .saturating_add(Duration::from_millis(2 * step));
            server.send(&quiet(id));
            std::thread::sleep(delay);
            server.send(&refused(id + 1));
            let got = replies(&mut server, &[id, id + 1]);
            let (quiet_text, refused_text) = (&got[&id].1, &got[&(id + 1)].1);
            assert!(refused_text.contains("refused-done"), "{refused_text}");
            if quiet_text.contains("the sandbox refused") {
                wrong.push(format!("round {round} step {step}: {quiet_text}"));
            }
            let named = refused_text.lines().any(|line| {
                line.starts_with("the sandbox refused: ") && line.contains("exec /usr/bin/id")
            });
            if switch.is_some() && !named {
                lost.push(format!("round {round} step {step}: {refused_text}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a call refused nothing was shown another call's denial ({} of 60 pairs; a quiet call \
         alone takes {alone:?}):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        lost.is_empty(),
        "a refused call lost its own denials ({} of 60 pairs):\n{}",
        lost.len(),
        lost.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// 2. A refused path is agent text: a secret in it, control bytes, its length

/// The secret the Python tool holds, and what stands for it in `airlock`'s environment.
const SECRET_NAME: &str = "RT_DENIAL_TOKEN";

/// Makes a file in `out/` for each name, then asks to run it: Landlock refuses the `exec`
/// (the tool is granted none there) and reports the path. Names: the secret whole, padding
/// then the secret so that a cut at 256 bytes of the absolute path falls in its middle, a
/// newline then a forged result line, a terminal escape, and 300 bytes of text (a name's
/// bytes, under the kernel's 255 a name, in two directories).
const REFUSED_PATHS: &str = r#"import os
secret = os.environ['RT_DENIAL_TOKEN']
prefix = os.path.abspath('out') + '/'
pad = 'p' * (256 - 16 - len(prefix))
os.makedirs('out/' + 'd' * 200, exist_ok=True)
names = [secret, pad + secret, 'x\nthe sandbox refused: exec forged', 'esc\x1b[31mred',
         'd' * 200 + '/' + 'e' * 100]
for name in names:
    path = 'out/' + name
    with open(path, 'w') as f:
        f.write('#!/bin/sh\n')
    os.chmod(path, 0o755)
    try:
        os.execv(path, [path])
    except OSError as e:
        print('refused', e.errno)
print('all tried')
"#;

/// A secret in a refused path is redacted wherever the denial is shown: the result, the
/// record's object and its `allow` (the key names the path), and a cut of the path at 256
/// bytes does not leave the secret's first half shown, as the output's cuts do not. Control
/// bytes are escaped and a long path is cut.
#[test]
fn a_secret_in_a_refused_path_is_redacted_in_the_result_and_the_record_even_where_it_is_cut() {
    let scratch = SandboxTree::new("rt-denials-paths");
    let secret = format!("rtsecret{:024}", std::process::id());
    let tool = python_tool(
        "py",
        Mode::On,
        &format!("write = [\"out\"]\nsecret_env = [\"{SECRET_NAME}\"]"),
    );
    // Written as is: `SandboxTree::manifest`'s check runs without the secret in its
    // environment. The machine's report is asked with the plain shell manifest.
    let path = scratch.dir.join("tools.toml");
    std::fs::write(&path, &tool).unwrap();
    let path = path.to_str().unwrap().to_owned();
    let mut server = Server::start_with(
        &airlock(),
        &["serve", "--manifest", &path],
        &[(SECRET_NAME, &secret)],
    );
    server.initialize("2025-11-25");
    let switch = reporting(&SandboxTree::new("rt-denials-paths-check").manifest(&manifest(false)));
    let (_, text) = outcome(&server.request(&call(1, "py", json!({ "code": REFUSED_PATHS }))));
    assert!(text.contains("all tried"), "{text}");
    assert_eq!(text.matches("refused 13").count(), 5, "{text}");
    let record = records(&mut server).remove(0);
    let record_text = record.to_string();
    let half = &secret[..16];
    for (place, shown) in [("result", &text), ("record", &record_text)] {
        assert!(
            !shown.contains(half),
            "the secret's first half in the {place}: {shown}"
        );
    }
    if switch.is_none() {
        assert!(!text.contains("the sandbox refused"), "{text}");
        return;
    }
    let line = text
        .lines()
        .find(|line| line.starts_with("the sandbox refused: "))
        .unwrap_or_else(|| panic!("no denials line: {text}"));
    assert!(
        !text
            .lines()
            .any(|line| line.starts_with("the sandbox refused: exec forged")),
        "a path's newline forged a line: {text}"
    );
    assert!(
        !text.contains('\x1b'),
        "a terminal escape reached the result: {text:?}"
    );
    assert!(line.contains("[REDACTED]"), "{line}");
    assert!(line.contains("x\\nthe sandbox refused"), "{line}");
    let found = crate::denials::denials(&record);
    assert_eq!(found.len(), 5, "{found:?}");
    for (kind, object, allow, _) in &found {
        assert_eq!(kind, "exec", "{found:?}");
        assert!(object.len() <= 256 + '…'.len_utf8(), "{object}");
        assert!(allow.len() <= 256 + '…'.len_utf8(), "{allow}");
        assert!(
            !object.contains('\x1b') && !object.contains('\n'),
            "{object:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Forging: a command writing audit records of its own

/// A command opens a `NETLINK_AUDIT` socket and sends a user message (`AUDIT_USER`) and two
/// records typed as Landlock's, each text shaped like a denial of its own launcher: whether
/// the socket or the message is refused (a user message wants `CAP_AUDIT_WRITE` in the
/// initial namespaces; Landlock's types are the kernel's own), no forged denial reaches the
/// result or the record.
#[test]
fn a_command_cannot_send_audit_records_that_become_denials() {
    let scratch = SandboxTree::new("rt-denials-forge");
    let tool = python_tool("py", Mode::On, "write = [\"out\"]");
    let path = scratch.manifest(&tool);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
    server.initialize("2025-11-25");
    let _switch = reporting(&path);
    let code = r#"import os, socket, struct
for kind in (1100, 1423, 1424):
    text = b'domain=1 blockers=fs.execute path="/forged" status=allocated pid=%d' % os.getppid()
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)
        s.sendto(struct.pack('=IHHII', 16 + len(text), kind, 5, 1, 0) + text, (0, 0))
        print('sent', kind)
    except OSError as e:
        print('refused', kind, e.errno)
"#;
    let (_, text) = outcome(&server.request(&call(1, "py", json!({ "code": code }))));
    assert_eq!(
        text.matches("refused").count() + text.matches("sent").count(),
        3,
        "{text}"
    );
    assert!(!text.contains("/forged"), "{text}");
    let found = crate::denials::denials(&records(&mut server)[0]);
    assert!(found.is_empty(), "{found:?}");
}

// ---------------------------------------------------------------------------------------------
// 4. A flood of refusals

/// airlock's CPU time so far (user and system), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(") ").unwrap().1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// A command refused device writes and runs of 40 programs in a loop for 1.5 s: the result names
/// at most 16 denials and counts the rest, and airlock answers a ping meanwhile; the reader's
/// work (every record parsed) is printed as airlock's CPU time, a measure.
#[test]
fn a_flood_of_refusals_is_bounded_in_the_result_and_cheap_for_airlock() {
    let scratch = SandboxTree::new("rt-denials-flood");
    let tool = python_tool("py", Mode::On, "write = [\"out\"]");
    let path = scratch.manifest(&tool);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
    server.initialize("2025-11-25");
    let switch = reporting(&path);
    let code = r#"import os, time
for i in range(40):
    path = 'out/p%d' % i
    open(path, 'w').write('#!/bin/sh\n')
    os.chmod(path, 0o755)
refused = n = 0
end = time.time() + 1.5
while time.time() < end:
    try:
        os.open('/dev/full', os.O_WRONLY)
    except OSError:
        refused += 1
    if n % 10 == 0:
        try:
            os.execv('out/p%d' % (n // 10 % 40), ['x'])
        except OSError:
            refused += 1
    n += 1
print('refused', refused)
"#;
    let before = cpu_ticks(server.pid());
    let started = Instant::now();
    server.send(&call(1, "py", json!({ "code": code })));
    std::thread::sleep(Duration::from_millis(200));
    let ping_sent = Instant::now();
    server.send(&request(2, "ping", json!({})));
    let mut ping = None;
    let mut result = None;
    while result.is_none() {
        let reply: Value = server.recv();
        match reply["id"].as_u64() {
            Some(2) => ping = Some(ping_sent.elapsed()),
            Some(1) => result = Some(outcome(&reply)),
            _ => {}
        }
    }
    let took = started.elapsed();
    let spent = cpu_ticks(server.pid()) - before;
    let (_, text) = result.unwrap();
    let refused: u64 = text
        .split("refused ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("the probe did not run: {text}"));
    assert!(refused > 1000, "{text}");
    let ping = ping.unwrap_or_else(|| panic!("no ping answer before the call's: {text}"));
    assert!(ping < Duration::from_secs(1), "a ping waited {ping:?}");
    // 100 ticks a second: airlock's own share while its command was refused in a loop.
    let spent_ms = spent * 10;
    eprintln!(
        "flood: {refused} refusals, the call took {took:?}, airlock spent {spent_ms} ms of CPU, \
         ping {ping:?}"
    );
    // What the flood costs airlock's CPU is a measure, printed above, not asserted: the
    // suite runs debug builds side by side on a busy machine (250 ms alone, 730 ms beside
    // the whole suite, for about 120,000 refusals in 1.5 s). What must hold is that the
    // session still answers (the ping above) and that the result and record stay bounded.
    let record = records(&mut server).remove(0);
    let found = crate::denials::denials(&record);
    assert!(found.len() <= 16, "{found:?}");
    if switch.is_some() {
        assert_eq!(found.len(), 16, "{found:?}");
        assert!(
            record["denials"]["unrecorded"].as_u64().unwrap_or(0) > 0,
            "{record}"
        );
        assert!(text.contains("more"), "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// 5. What a denial says it was

/// A device ioctl Landlock refuses (`fs.ioctl_dev`: here `TCGETS` on `/dev/null`, which bash
/// makes on its own whenever a command it runs fails with stderr sent there) was reported as
/// "write /dev/null", a write the tool is granted: the operator read that writes to
/// `/dev/null` are refused and could do nothing about it. Device ioctls are now left out of
/// the report (programs asking whether a stream is a terminal would fill it), so it is never
/// shown as a write.
#[test]
fn a_refused_device_ioctl_is_not_reported_as_a_write() {
    let scratch = SandboxTree::new("rt-denials-ioctl");
    let tool = python_tool("py", Mode::On, "write = [\"out\"]");
    let path = scratch.manifest(&tool);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
    server.initialize("2025-11-25");
    let switch = reporting(&path);
    let code = "import fcntl, termios\nwith open('/dev/null', 'w') as null:\n    null.write('x')\n    \
                try:\n        fcntl.ioctl(null, termios.TCGETS, bytes(64))\n    \
                except OSError as e:\n        print('ioctl', e.errno)\nprint('wrote')";
    let (_, text) = outcome(&server.request(&call(1, "py", json!({ "code": code }))));
    assert!(text.contains("wrote"), "{text}");
    let found = crate::denials::denials(&records(&mut server).remove(0));
    if switch.is_none() {
        assert!(found.is_empty(), "{found:?}");
        return;
    }
    assert!(
        !found
            .iter()
            .any(|(kind, object, _, _)| kind == "write" && object == "/dev/null"),
        "the ioctl was reported as a write of /dev/null, which the tool may write: {found:?}\n{text}"
    );
}

/// `airlock serve` of two Python tools that may write `out`, `flood` and `probe`, initialized,
/// with denials reported while the switch lives (`None` where this machine cannot).
fn flood_and_probe(name: &str) -> (SandboxTree, Server, Option<Switch>) {
    let scratch = SandboxTree::new(name);
    let tools = format!(
        "{}{}",
        python_tool("flood", Mode::On, "write = [\"out\"]"),
        python_tool("probe", Mode::On, "write = [\"out\"]")
    );
    let path = scratch.manifest(&tools);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
    server.initialize("2025-11-25");
    let switch = reporting(&path);
    (scratch, server, switch)
}

/// A flood of refusals in one call overflows the kernel's audit backlog (64 records, for the
/// whole host) and the reader's socket: records are lost, another call's too (measured: a
/// concurrent call's one denial missing in 2 of 5 runs). A launcher's domain is learned from
/// the record that comes with its first logged denial; were that one lost for good, every
/// later denial of the launcher would be. Here a call makes its first denial during another
/// tool's flood and its second once the flood is over: the second must be reported.
#[test]
fn a_flood_in_another_call_does_not_blind_a_launcher_for_good() {
    let (_scratch, mut server, switch) = flood_and_probe("rt-denials-blind");
    let flood = "import os, time\nend = time.time() + 2\nwhile time.time() < end:\n    \
                 try:\n        os.open('/dev/full', os.O_WRONLY)\n    except OSError:\n        pass\n";
    let probe = "import os, time\ndef refused(p):\n    open(p, 'w').write('#!/bin/sh')\n    \
                 os.chmod(p, 0o755)\n    try:\n        os.execv(p, [p])\n    \
                 except OSError as e:\n        print('refused', e.errno)\n\
                 refused('out/during')\ntime.sleep(2.5)\nrefused('out/after')\n";
    server.send(&call(1, "flood", json!({ "code": flood })));
    std::thread::sleep(Duration::from_millis(500));
    server.send(&call(2, "probe", json!({ "code": probe })));
    let got = replies(&mut server, &[1, 2]);
    let text = &got[&2].1;
    eprintln!("probe: {text}");
    assert_eq!(text.matches("refused 13").count(), 2, "{text}");
    if switch.is_some() {
        assert!(text.contains("out/after"), "after the flood: {text}");
    } else {
        assert!(!text.contains("the sandbox refused"), "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Writes the view refused, from the syscall audit's rules

/// Finding (fixed): a refused write's path is the command's name for it, and the reader
/// resolved its `..` by name. Through a link the command made in its writable directory
/// (`out/u` to `/usr`), `out/u/../etc/x` is `/etc/x` to the kernel, which refused it
/// (`EROFS`); the result said "write WORK/out/etc" with the key `write = ["WORK/out/etc"]`: a
/// directory inside the grant, which the command never wrote to, named as refused, and the
/// one the kernel refused not named. A `..` after a name of the command's is now kept as
/// written. (Needs the syscall audit's rules: installed here as `denials` does.)
#[test]
fn a_write_through_a_link_and_dot_dot_is_not_claimed_inside_the_grant() {
    let scratch = SandboxTree::new("rt-denials-dotdot");
    let tool = python_tool("py", Mode::On, "write = [\"out\"]");
    let path = scratch.manifest(&tool);
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
    server.initialize("2025-11-25");
    let switch = reporting(&path);
    let work = scratch.work().canonicalize().unwrap();
    let code = "import os\nos.symlink('/usr', 'out/u')\n\
                for p in ('out/u/../etc/x', 'out/u/../usr/lib/x'):\n    \
                try:\n        open(p, 'w').write('x')\n        print('wrote', p)\n    \
                except OSError as e:\n        print('refused', e.errno)\n";
    let rules = switch
        .as_ref()
        .map(|_| crate::support::audit::Rules::install(&airlock()));
    let (_, text) = outcome(&server.request(&call(1, "py", json!({ "code": code }))));
    drop(rules);
    assert_eq!(text.matches("refused 30").count(), 2, "{text}");
    let inside = work.join("out");
    let found = crate::denials::denials(&records(&mut server).remove(0));
    for (kind, object, allow, _) in &found {
        let claimed = Path::new(object);
        assert!(
            !(kind == "write" && claimed.starts_with(&inside) && !object.contains("..")),
            "a write inside the grant the command never made is named as refused: \
             {object} ({allow})\n{text}"
        );
    }
    if switch.is_none() {
        assert!(found.is_empty(), "{found:?}");
        return;
    }
    assert!(
        text.contains(&format!("write {}/out/u/../etc", work.display())),
        "{text}"
    );
}

/// Two launchers' audit sessions: a flood of writes the view refuses in one call (2 s of
/// failed `open`s and `mkdir`s) and, in a call of another tool beside it, one refused write
/// during the flood and one after it. Each result names only its own paths, the flood's at
/// most 16 with the rest counted, the write after the flood is named, and airlock answers a
/// ping before the calls end. The write during the flood may go unnamed: the kernel's audit
/// backlog is the host's, and a flood overflows it (SECURITY.md; a CI run beside the whole
/// suite lost it). (Held: kept so that it goes on holding.)
#[test]
fn refused_writes_go_by_audit_session_to_their_own_call_through_a_flood() {
    let (_scratch, mut server, switch) = flood_and_probe("rt-denials-sessions");
    let flood = "import os, time\nend = time.time() + 2\nn = 0\nwhile time.time() < end:\n    \
                 for i in range(32):\n        try:\n            os.open('/root/flood%d' % i, os.O_WRONLY | os.O_CREAT)\n        \
                 except OSError:\n            n += 1\n        try:\n            os.mkdir('/usr/flood%d' % i)\n        \
                 except OSError:\n            n += 1\nprint('refused', n)\n";
    let probe = "import time\ntime.sleep(0.5)\ntry:\n    open('/root/probe-during', 'w')\n\
                 except OSError as e:\n    print('probe', e.errno)\ntime.sleep(2.5)\ntry:\n    \
                 open('/root/probe-after', 'w')\nexcept OSError as e:\n    print('after', e.errno)\n";
    let rules = switch
        .as_ref()
        .map(|_| crate::support::audit::Rules::install(&airlock()));
    server.send(&call(1, "flood", json!({ "code": flood })));
    server.send(&call(2, "probe", json!({ "code": probe })));
    std::thread::sleep(Duration::from_millis(800));
    let ping_sent = Instant::now();
    server.send(&request(3, "ping", json!({})));
    let mut ping = None;
    let mut got = HashMap::new();
    while got.len() < 2 {
        let reply: Value = server.recv();
        match reply["id"].as_u64() {
            Some(3) => ping = Some(ping_sent.elapsed()),
            Some(id) => {
                got.insert(id, outcome(&reply).1);
            }
            None => {}
        }
    }
    drop(rules);
    let ping = ping.unwrap_or_else(|| panic!("no ping answer before the calls': {got:?}"));
    let (flooded, probed) = (&got[&1], &got[&2]);
    assert!(flooded.contains("refused "), "{flooded}");
    assert!(
        probed.contains("probe 2") && probed.contains("after 2"),
        "{probed}"
    );
    assert!(
        !probed.contains("flood"),
        "the flood's paths in the probe's: {probed}"
    );
    assert!(
        !flooded.contains("probe-"),
        "the probe's path in the flood's: {flooded}"
    );
    eprintln!("a ping during the flood was answered in {ping:?}");
    let records = records(&mut server);
    for record in &records {
        assert!(crate::denials::denials(record).len() <= 16, "{record}");
    }
    if switch.is_none() {
        assert!(!probed.contains("the sandbox refused"), "{probed}");
        return;
    }
    assert!(
        probed.contains("the sandbox refused: ") && probed.contains("write /root/probe-after"),
        "{probed}"
    );
    assert!(
        flooded.contains("the sandbox refused: write /root/flood") && flooded.contains("more"),
        "{flooded}"
    );
}

/// A command cannot leave its launcher's audit session: after `setsid` (a new process
/// session) in a forked child, its refused write is still its call's; `/proc/self/loginuid`
/// and `sessionid`, where a login uid would be changed, are not in the view (and changing a
/// set one needs `CAP_AUDIT_CONTROL`, which no command holds). (Held: kept as a test.)
#[test]
fn a_new_process_session_keeps_the_audit_session() {
    let scratch = SandboxTree::new("rt-denials-setsid");
    let path = scratch.manifest(&python_tool("py", Mode::On, "write = [\"out\"]"));
    let mut server = Server::start_with(&airlock(), &["serve", "--manifest", &path], &[]);
    server.initialize("2025-11-25");
    let switch = reporting(&path);
    let code = "import os\n\
                for f in ('/proc/self/loginuid', '/proc/self/sessionid'):\n    \
                try:\n        open(f, 'w').write('0')\n        print('changed', f, flush=True)\n    \
                except OSError as e:\n        print('kept', e.errno, flush=True)\n\
                pid = os.fork()\nif pid == 0:\n    os.setsid()\n    \
                try:\n        open('/root/after-setsid', 'w')\n    \
                except OSError as e:\n        print('refused', e.errno, flush=True)\n    \
                os._exit(0)\nos.waitpid(pid, 0)\n";
    let rules = switch
        .as_ref()
        .map(|_| crate::support::audit::Rules::install(&airlock()));
    let (_, text) = outcome(&server.request(&call(1, "py", json!({ "code": code }))));
    drop(rules);
    assert_eq!(text.matches("kept 2").count(), 2, "{text}");
    assert!(text.contains("refused 2"), "{text}");
    if switch.is_none() {
        assert!(!text.contains("the sandbox refused"), "{text}");
        return;
    }
    assert!(text.contains("write /root/after-setsid"), "{text}");
}
