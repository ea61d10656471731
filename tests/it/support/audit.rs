//! The kernel's audit switch, for the tests of reported sandbox denials: read and set over
//! `NETLINK_AUDIT` (`AUDIT_GET`, `AUDIT_SET`; root with `CAP_AUDIT_CONTROL`), as `auditctl -e`
//! does, and always put back as it was.
//!
//! Tests that need a state hold [`Switch`] (one at a time in this process, and across processes
//! by a lock file: the switch is the kernel's, shared with every checkout testing on this
//! machine): it sets the state and, dropped, restores the one it found, even when the test
//! fails.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustix::net::netlink::SocketAddrNetlink;

const AUDIT_GET: u16 = 1000;
const AUDIT_SET: u16 = 1001;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
/// `AUDIT_STATUS_ENABLED` in `audit_status.mask`.
const STATUS_ENABLED: u32 = 1;

/// The kernel's audit held in one state for as long as it lives.
pub struct Switch {
    found: bool,
    _one_at_a_time: MutexGuard<'static, ()>,
    /// Held (an exclusive `flock`) until the state is put back: dropped after `drop` runs.
    _one_on_this_machine: std::fs::File,
}

impl Switch {
    /// Turns the kernel's audit on (`true`) or off; `Err` says why it cannot be (not root,
    /// not in the initial user namespace, no audit in the kernel).
    pub fn set(enabled: bool) -> Result<Self, String> {
        static ONE: Mutex<()> = Mutex::new(());
        let guard = ONE.lock().unwrap_or_else(PoisonError::into_inner);
        let lock = std::env::temp_dir().join("airlock-tests-kernel-audit.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock)
            .map_err(|error| format!("{}: {error}", lock.display()))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|error| format!("locking {}: {error}", lock.display()))?;
        let found = enabled_now()?;
        set(enabled)?;
        Ok(Self {
            found,
            _one_at_a_time: guard,
            _one_on_this_machine: file,
        })
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        if let Err(why) = set(self.found) {
            eprintln!(
                "could not put the kernel's audit back (enabled={}): {why}",
                self.found
            );
        }
    }
}

fn socket() -> Result<std::os::fd::OwnedFd, String> {
    let socket = rustix::net::socket_with(
        rustix::net::AddressFamily::NETLINK,
        rustix::net::SocketType::RAW,
        rustix::net::SocketFlags::CLOEXEC,
        Some(rustix::net::netlink::AUDIT),
    )
    .map_err(|error| format!("NETLINK_AUDIT socket: {error}"))?;
    rustix::net::sockopt::set_socket_timeout(
        &socket,
        rustix::net::sockopt::Timeout::Recv,
        Some(Duration::from_secs(2)),
    )
    .map_err(|error| format!("socket timeout: {error}"))?;
    Ok(socket)
}

fn send(socket: &std::os::fd::OwnedFd, kind: u16, flags: u16, body: &[u8]) -> Result<(), String> {
    let mut message = Vec::new();
    message.extend_from_slice(&u32::try_from(16 + body.len()).unwrap().to_ne_bytes());
    message.extend_from_slice(&kind.to_ne_bytes());
    message.extend_from_slice(&flags.to_ne_bytes());
    message.extend_from_slice(&1_u32.to_ne_bytes());
    message.extend_from_slice(&0_u32.to_ne_bytes());
    message.extend_from_slice(body);
    rustix::net::sendto(
        socket,
        &message,
        rustix::net::SendFlags::empty(),
        &SocketAddrNetlink::new(0, 0),
    )
    .map_err(|error| format!("sending to the kernel's audit: {error}"))?;
    Ok(())
}

/// The next message's type and payload.
fn receive(socket: &std::os::fd::OwnedFd) -> Result<(u16, Vec<u8>), String> {
    let mut buffer = [0_u8; 1024];
    let (received, _) = rustix::net::recv(socket, &mut buffer[..], rustix::net::RecvFlags::empty())
        .map_err(|error| format!("reading the kernel's audit answer: {error}"))?;
    let kind = u16::from_ne_bytes([buffer[4], buffer[5]]);
    Ok((kind, buffer[16..received].to_vec()))
}

/// Whether the kernel's audit is on now.
pub fn enabled_now() -> Result<bool, String> {
    let socket = socket()?;
    send(&socket, AUDIT_GET, NLM_F_REQUEST, &[])?;
    for _ in 0..4 {
        let (kind, payload) = receive(&socket)?;
        if kind == AUDIT_GET {
            return Ok(u32::from_ne_bytes(payload[4..8].try_into().unwrap()) != 0);
        }
        if kind == NLMSG_ERROR {
            let error = i32::from_ne_bytes(payload[..4].try_into().unwrap());
            return Err(format!("AUDIT_GET refused: errno {}", -error));
        }
    }
    Err("no AUDIT_GET answer".to_owned())
}

fn set(enabled: bool) -> Result<(), String> {
    let socket = socket()?;
    let mut status = Vec::new();
    status.extend_from_slice(&STATUS_ENABLED.to_ne_bytes());
    status.extend_from_slice(&u32::from(enabled).to_ne_bytes());
    // failure, pid, rate_limit, backlog_limit, lost, backlog, version, backlog_wait_time:
    // left alone (the mask names only `enabled`).
    status.extend_from_slice(&[0; 32]);
    send(&socket, AUDIT_SET, NLM_F_REQUEST | NLM_F_ACK, &status)?;
    let (kind, payload) = receive(&socket)?;
    if kind != NLMSG_ERROR {
        return Err(format!("AUDIT_SET answered with message type {kind}"));
    }
    match i32::from_ne_bytes(payload[..4].try_into().unwrap()) {
        0 => Ok(()),
        error => Err(format!(
            "AUDIT_SET refused: errno {} (needs root with CAP_AUDIT_CONTROL in the initial user namespace)",
            -error
        )),
    }
}

/// Where Debian's `auditd` package puts `auditctl` (installed by tests/clients/setup.sh).
const AUDITCTL: &str = "/usr/sbin/auditctl";

/// The syscall audit rules `airlock check --audit-rules` prints, installed with `auditctl` for
/// as long as this lives and removed when it is dropped, even when the test fails. Hold it
/// inside a [`Switch`] (which makes tests one at a time): the rules make every launcher's
/// refused writes reported, in any test that reads denials.
pub struct Rules {
    installed: Vec<Vec<String>>,
}

impl Rules {
    /// Installs each rule printed by `airlock check --audit-rules`. A missing `auditctl` or a
    /// rule refused fails the test, naming it.
    pub fn install(airlock: &std::path::Path) -> Self {
        assert!(
            std::path::Path::new(AUDITCTL).is_file(),
            "{AUDITCTL} is missing: run tests/clients/setup.sh (it installs Debian's auditd \
             package) to run the tests of writes reported through the syscall audit"
        );
        let printed = crate::support::stdio::run(airlock, &["check", "--audit-rules"], &[]);
        assert!(
            printed.status.success(),
            "airlock check --audit-rules failed"
        );
        let text = String::from_utf8_lossy(&printed.stdout).into_owned();
        let mut rules = Self {
            installed: Vec::new(),
        };
        for line in text.lines().filter(|line| line.starts_with("-a ")) {
            let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
            let status = crate::support::stdio::spawn_command(std::path::Path::new(AUDITCTL))
                .args(&words)
                .stdout(std::process::Stdio::null())
                .status()
                .expect("auditctl runs");
            assert!(status.success(), "auditctl refused the rule {line}");
            rules.installed.push(words);
        }
        assert!(!rules.installed.is_empty(), "no rule printed:\n{text}");
        rules
    }
}

impl Drop for Rules {
    fn drop(&mut self) {
        for words in &self.installed {
            let mut removal = words.clone();
            if let Some(first) = removal.first_mut() {
                "-d".clone_into(first);
            }
            let removed = crate::support::stdio::spawn_command(std::path::Path::new(AUDITCTL))
                .args(&removal)
                .stdout(std::process::Stdio::null())
                .status();
            if !removed.is_ok_and(|status| status.success()) {
                eprintln!("could not remove the audit rule {}", words.join(" "));
            }
        }
    }
}
