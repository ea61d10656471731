//! `airlock serve --http … --tls-cert … --tls-key …` over real TCP: the
//! official Python client over https against a certificate made in the test (a CA and a leaf
//! for `localhost` and `127.0.0.1`, by rcgen), TLS 1.2 and 1.3 served and TLS 1.1 refused,
//! plain HTTP and stalled handshakes on the TLS port, and the start-up errors, which never
//! echo what the files hold.

use std::ffi::OsString;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, ProtocolVersion, StreamOwned};
use serde_json::json;

use crate::http_browser::start_failure;
use crate::support::http::{HttpServer, Reply, modern_bytes, parse_reply};
use crate::support::processes;
use crate::support::stdio::{self, REPLY_TIMEOUT};

/// A tool to call over https.
const ECHO_MANIFEST: &str = r#"
[server]
name = "tls"

[[tool]]
name = "echo"
description = "Echoes its text."
command = ["echo", "{text}"]
args.text = { type = "string", max_length = 100, description = "What to echo." }
"#;

/// A test CA, a server certificate it signed for `localhost` and `127.0.0.1`, and the server's
/// key, as PEM files in a scratch directory (removed on drop).
pub struct Pki {
    dir: PathBuf,
    ca: CertificateDer<'static>,
    pub ca_file: PathBuf,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl Pki {
    pub fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("airlock-it-tls-{name}-{}", std::process::id()));
        let _stale = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "airlock test CA");
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap())
            .unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let pki = Self {
            ca: ca.der().clone(),
            ca_file: dir.join("ca.pem"),
            cert_file: dir.join("cert.pem"),
            key_file: dir.join("key.pem"),
            dir,
        };
        std::fs::write(&pki.ca_file, ca.pem()).unwrap();
        std::fs::write(&pki.cert_file, leaf.pem()).unwrap();
        std::fs::write(&pki.key_file, key.serialize_pem()).unwrap();
        pki
    }

    /// `--tls-cert` and `--tls-key` with this PKI's files.
    fn flags(&self) -> [String; 4] {
        [
            "--tls-cert".into(),
            self.cert_file.to_str().unwrap().into(),
            "--tls-key".into(),
            self.key_file.to_str().unwrap().into(),
        ]
    }

    fn server(&self, extra: &[&str]) -> HttpServer {
        let flags = self.flags();
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.extend_from_slice(extra);
        HttpServer::airlock(&args, &[])
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _removed = std::fs::remove_dir_all(&self.dir);
    }
}

/// A rustls client trusting only `ca`, offering only `versions`, and http/1.1.
fn client(
    ca: &CertificateDer<'static>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Sends `request` over TLS on a new connection; the reply and the version negotiated.
fn https_exchange(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    request: &[u8],
) -> std::io::Result<(Reply, ProtocolVersion)> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(REPLY_TIMEOUT))?;
    let name = ServerName::try_from("localhost").unwrap();
    let connection = ClientConnection::new(config, name).map_err(std::io::Error::other)?;
    let mut tls = StreamOwned::new(connection, tcp);
    tls.write_all(request)?;
    tls.flush()?;
    let mut raw = Vec::new();
    match tls.read_to_end(&mut raw) {
        Ok(_) => {}
        // A peer that closes without close_notify, after its whole reply.
        Err(error) if error.kind() == ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        Err(error) => return Err(error),
    }
    let version = tls
        .conn
        .protocol_version()
        .ok_or_else(|| std::io::Error::other("no version negotiated"))?;
    Ok((parse_reply(&raw), version))
}

fn tools_list(addr: SocketAddr) -> Vec<u8> {
    modern_bytes(addr, 1, "tools/list", json!({}), &[])
}

fn tool_names(reply: &Reply) -> Vec<String> {
    reply.json()["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {reply:?}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_official_python_client_lists_and_calls_tools_over_https() {
    let pki = Pki::new("python");
    let manifest = pki.dir.join("echo.toml");
    std::fs::write(&manifest, ECHO_MANIFEST).unwrap();
    let server = pki.server(&["--manifest", manifest.to_str().unwrap()]);
    let url = format!("https://127.0.0.1:{}/mcp", server.addr.port());
    let calls = json!([
        {"name": "echo", "arguments": {"text": "over https"}},
        {"name": "no_such_tool", "arguments": {}},
    ]);
    for (era, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let args: Vec<OsString> = [
            "--era",
            era,
            "--calls",
            &calls.to_string(),
            "--url",
            &url,
            "--cafile",
            pki.ca_file.to_str().unwrap(),
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let Some(report) = crate::clients::python_report(&args) else {
            return;
        };
        assert_eq!(report["protocolVersion"], version, "{era}: {report}");
        assert_eq!(report["serverInfo"]["name"], "tls", "{era}");
        let tools: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["echo"], "{era}");
        let calls = report["calls"].as_array().unwrap();
        assert_eq!(
            calls[0]["result"]["content"][0]["text"], "over https\n",
            "{era}: {report}"
        );
        assert_eq!(calls[0]["result"]["isError"], false, "{era}");
        assert_eq!(calls[1]["error"]["code"], -32602, "{era}: {report}");
    }
    // Without the test CA the client refuses the certificate: it is really verified.
    let args: Vec<OsString> = ["--era", "modern", "--url", &url]
        .iter()
        .map(OsString::from)
        .collect();
    let refused = std::panic::catch_unwind(|| crate::clients::python_report(&args));
    assert!(refused.is_err(), "an untrusted certificate was accepted");
}

#[test]
fn tls_1_2_and_1_3_are_served_and_tls_1_1_is_refused() {
    let pki = Pki::new("versions");
    let server = pki.server(&[]);
    for (version, expected) in [
        (&rustls::version::TLS12, ProtocolVersion::TLSv1_2),
        (&rustls::version::TLS13, ProtocolVersion::TLSv1_3),
    ] {
        let (reply, negotiated) = https_exchange(
            server.addr,
            client(&pki.ca, &[version]),
            &tools_list(server.addr),
        )
        .unwrap_or_else(|error| panic!("{expected:?}: {error}"));
        assert_eq!(negotiated, expected);
        assert_eq!(reply.status, 200, "{expected:?}: {reply:?}");
        assert_eq!(tool_names(&reply), stdio::DEFAULT_TOOLS, "{expected:?}");
    }
    // A ClientHello of TLS 1.1 (legacy_version 3.2, no supported_versions extension) that is
    // otherwise acceptable: a fatal protocol_version alert, no ServerHello. The control: the
    // same hello saying 3.3 (TLS 1.2) gets a ServerHello.
    let answer = |version: u8| {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        stream.write_all(&client_hello(version)).unwrap();
        let mut head = [0_u8; 7];
        stream.read_exact(&mut head).unwrap();
        head
    };
    let refused = answer(2);
    assert_eq!(refused[0], 0x15, "not an alert record: {refused:02x?}");
    assert_eq!(
        &refused[5..7],
        &[2, 70],
        "not a fatal protocol_version: {refused:02x?}"
    );
    let accepted = answer(3);
    assert_eq!(
        (accepted[0], accepted[5]),
        (0x16, 0x02),
        "TLS 1.2 got no ServerHello: {accepted:02x?}"
    );
}

/// A ClientHello with legacy_version 3.`minor` and no supported_versions extension: ECDHE-ECDSA
/// with AES-128-GCM (a TLS 1.2 suite rustls serves), P-256, ecdsa_secp256r1_sha256.
fn client_hello(minor: u8) -> Vec<u8> {
    let mut body = vec![0x03, minor];
    body.extend_from_slice(&[0x5a; 32]); // random
    body.push(0); // no session id
    body.extend_from_slice(&[0x00, 0x02, 0xc0, 0x2b]); // cipher suites
    body.extend_from_slice(&[0x01, 0x00]); // null compression
    let extensions: &[u8] = &[
        0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, 0x04, 0x03, // signature_algorithms
        0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x17, // supported_groups: secp256r1
        0x00, 0x0b, 0x00, 0x02, 0x01, 0x00, // ec_point_formats: uncompressed
    ];
    body.extend_from_slice(&u16::try_from(extensions.len()).unwrap().to_be_bytes());
    body.extend_from_slice(extensions);
    let mut handshake = vec![0x01, 0x00];
    handshake.extend_from_slice(&u16::try_from(body.len()).unwrap().to_be_bytes());
    handshake.extend_from_slice(&body);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend_from_slice(&u16::try_from(handshake.len()).unwrap().to_be_bytes());
    record.extend_from_slice(&handshake);
    record
}

#[test]
fn plain_http_to_the_tls_port_gets_no_http_reply_and_tls_still_works() {
    let pki = Pki::new("plain");
    let server = pki.server(&[]);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    stream.write_all(&tools_list(server.addr)).unwrap();
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => {}
        Err(error) if error.kind() == ErrorKind::ConnectionReset => {}
        Err(error) => panic!("reading the answer to plain HTTP: {error}"),
    }
    assert!(
        !answer.starts_with(b"HTTP/"),
        "plain HTTP was answered: {}",
        String::from_utf8_lossy(&answer)
    );
    assert!(!String::from_utf8_lossy(&answer).contains("tools"));
    let config = client(&pki.ca, &[&rustls::version::TLS13]);
    let (reply, _) = https_exchange(server.addr, config, &tools_list(server.addr)).unwrap();
    assert_eq!(reply.status, 200);
}

#[test]
fn a_stalled_handshake_holds_its_connection_slot_only_until_the_first_request_deadline() {
    let pki = Pki::new("stalled");
    let server = pki.server(&["--max-connections-per-address", "2"]);
    // One socket says nothing; the other starts a record of 16 KiB and sends no more of it.
    let silent = TcpStream::connect(server.addr).unwrap();
    let mut partial = TcpStream::connect(server.addr).unwrap();
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x40, 0x00, 0x01])
        .unwrap();
    // Both hold this address's two slots: a real client is refused meanwhile.
    std::thread::sleep(Duration::from_millis(300));
    let config = client(&pki.ca, &[&rustls::version::TLS13]);
    let refused = https_exchange(server.addr, Arc::clone(&config), &tools_list(server.addr));
    assert!(
        refused.is_err(),
        "a third connection was served: {refused:?}"
    );
    // The server closes both at the first-request deadline (5 s); the read timeout here only
    // detects a hang.
    for (what, mut stream) in [("silent", silent), ("partial", partial)] {
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        let mut rest = Vec::new();
        match stream.read_to_end(&mut rest) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::ConnectionReset => {}
            Err(error) => panic!("{what}: still open ({error})"),
        }
        assert!(!rest.starts_with(b"HTTP/"), "{what}");
    }
    let (reply, _) = https_exchange(server.addr, config, &tools_list(server.addr)).unwrap();
    assert_eq!(reply.status, 200);
}

#[test]
fn tls_files_that_cannot_be_used_stop_the_server_at_start_without_echoing_them() {
    let pki = Pki::new("bad-files");
    let planted = "PLANTED-7f3a";
    let garbage = pki.dir.join("garbage.pem");
    std::fs::write(
        &garbage,
        format!("-----BEGIN PRIVATE KEY-----\n{planted}{planted}\n-----END PRIVATE KEY-----\n"),
    )
    .unwrap();
    let unterminated = pki.dir.join("unterminated.pem");
    std::fs::write(
        &unterminated,
        format!("-----BEGIN CERTIFICATE-----\n{planted}\n"),
    )
    .unwrap();
    let other = Pki::new("bad-files-other");
    let missing = pki.dir.join("missing.pem");
    let path = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let cases: [(String, String, &str); 6] = [
        (
            path(&missing),
            path(&pki.key_file),
            "the TLS certificate file cannot be read",
        ),
        (
            path(&pki.key_file),
            path(&pki.key_file),
            "the TLS certificate file holds no PEM certificate",
        ),
        (
            path(&unterminated),
            path(&pki.key_file),
            "the TLS certificate file holds no PEM certificate",
        ),
        (
            path(&pki.cert_file),
            path(&missing),
            "the TLS key file cannot be read",
        ),
        (
            path(&pki.cert_file),
            path(&garbage),
            "the TLS key file holds no usable private key",
        ),
        (
            path(&pki.cert_file),
            path(&other.key_file),
            "the TLS key does not match the certificate",
        ),
    ];
    for (cert, key, message) in &cases {
        let (status, stderr) = start_failure(&[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ]);
        assert_eq!(status, Some(1), "{message}: {stderr}");
        assert!(stderr.contains(message), "{message}: {stderr}");
        assert!(!stderr.contains(planted), "{message}: {stderr}");
        assert!(!stderr.contains("PRIVATE KEY"), "{message}: {stderr}");
    }
    // The two flags go together, and only with --http.
    let cert = path(&pki.cert_file);
    let key = path(&pki.key_file);
    for args in [
        vec!["serve", "--http", "127.0.0.1:0", "--tls-cert", &cert],
        vec!["serve", "--http", "127.0.0.1:0", "--tls-key", &key],
        vec!["serve", "--tls-cert", &cert, "--tls-key", &key],
    ] {
        let (status, stderr) = start_failure(&args);
        assert_eq!(status, Some(2), "{args:?}: {stderr}");
    }
}

/// Peak resident memory allowed to the server while HTTPS clients that never read hold their
/// replies: the plain-HTTP bound (`http_abuse`), which rustls' capped buffer keeps.
const NON_READING_TLS_CLIENTS_RSS_KIB: u64 = 128 * 1024;

/// Item 1's slow readers over TLS: 100 clients each ask for 1 MiB of control bytes (escaped to
/// six bytes each in the reply) and never read. The write watchdog sits below TLS and rustls
/// holds at most `MAX_TLS_BUFFERED_BYTES` per connection, so memory stays within the bound.
#[test]
fn https_clients_that_never_read_their_replies_hold_bounded_memory() {
    let pki = Pki::new("slow-readers");
    let manifest = pki.dir.join("read.toml");
    std::fs::write(
        &manifest,
        r#"
[server]
name = "slow-readers"

[[tool]]
name = "read_file"
description = "Reads a file"
command = ["head", "--bytes=1048576", "--", "{path}"]
args.path = { type = "path", kind = "file" }
"#,
    )
    .unwrap();
    std::fs::write(pki.dir.join("control.bin"), vec![1_u8; 1024 * 1024]).unwrap();
    let server = pki.server(&[
        "--manifest",
        manifest.to_str().unwrap(),
        "--client-calls-per-minute",
        "1000000",
        "--client-requests-per-minute",
        "1000000",
        "--client-in-flight",
        "8",
        "--max-connections-per-address",
        "1024",
    ]);
    let call = modern_bytes(
        server.addr,
        1,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "control.bin"}}),
        &[("Connection", "keep-alive")],
    );
    let config = client(&pki.ca, &[&rustls::version::TLS13]);
    let mut clients = Vec::new();
    for _ in 0..100 {
        let tcp = TcpStream::connect(server.addr).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let connection = ClientConnection::new(Arc::clone(&config), name).unwrap();
        let mut tls = StreamOwned::new(connection, tcp);
        // The handshake first: a connection refused at accept fails here, not silently.
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock).unwrap();
        }
        tls.write_all(&call).unwrap();
        tls.flush().unwrap();
        clients.push(tls);
        std::thread::sleep(Duration::from_millis(40));
    }
    // Until the server has done what it will with them: its memory stops moving.
    let rss = |pid: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap()
    };
    let (mut last, mut still) = (0_u64, 0);
    for _ in 0..150 {
        std::thread::sleep(Duration::from_millis(200));
        let now = rss(server.pid());
        still = if now.abs_diff(last) < 1024 {
            still + 1
        } else {
            0
        };
        last = now;
        if still >= 10 {
            break;
        }
    }
    let peak = processes::peak_rss_kib(server.pid());
    drop(clients);
    eprintln!(
        "100 non-reading HTTPS clients: peak RSS {} MiB",
        peak / 1024
    );
    assert!(
        peak <= NON_READING_TLS_CLIENTS_RSS_KIB,
        "peak RSS {peak} KiB past the bound of {NON_READING_TLS_CLIENTS_RSS_KIB} KiB"
    );
}
