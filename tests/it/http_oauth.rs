//! `airlock serve --http --oauth-…`: airlock as an OAuth 2.1 resource server, against a test
//! authorization server started by each test on loopback. Its keys are made per run (an RSA
//! key by `openssl genpkey`, signed with by ring; a P-256 key by ring) and its JWKS is served
//! over HTTP by a thread of the test, which can also answer slowly, hugely or not at all.
//! Every refusal of the issue's list is checked with its exact status and `WWW-Authenticate`.
//! The same test server is also an authorization server (RFC 8414 metadata, a token endpoint
//! for the client_credentials grant) for the official Python SDK's OAuth client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
};
use serde_json::{Value, json};

use crate::support::http::{
    HttpServer, Reply, exchange, modern, parse_reply, post, scratch_manifest,
};
use crate::support::stdio::{self, REPLY_TIMEOUT};

pub(crate) const RESOURCE: &str = "https://airlock.test/mcp";
pub(crate) const ISSUER: &str = "https://issuer.test";
pub(crate) const METADATA_URL: &str =
    "https://airlock.test/.well-known/oauth-protected-resource/mcp";
pub(crate) const STATIC_TOKEN: &str = "it-oauth-static-token-0123456789";

/// `echo` needs the scope `echo:run`; `hello` needs none.
pub(crate) const MANIFEST: &str = r#"
[server]
name = "oauth"

[[tool]]
name = "echo"
description = "Echoes its text."
command = ["echo", "{text}"]
scopes = ["echo:run"]
args.text = { type = "string", max_length = 100, description = "What to echo." }

[[tool]]
name = "hello"
description = "Says hello."
command = ["echo", "hello"]
"#;

pub(crate) fn challenge() -> String {
    format!(r#"Bearer resource_metadata="{METADATA_URL}""#)
}

pub(crate) fn invalid_token() -> String {
    format!(r#"Bearer resource_metadata="{METADATA_URL}", error="invalid_token""#)
}

pub(crate) fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// The test authorization server's keys and tokens.
pub(crate) struct Issuer {
    pub(crate) rsa: RsaKeyPair,
    pub(crate) ec: EcdsaKeyPair,
}

impl Issuer {
    pub(crate) fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("airlock-it-oauth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let der = dir.join(format!("rsa-{}.der", rand_u64()));
        let status = stdio::spawn_command(std::path::Path::new("openssl"))
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
            ])
            .args(["-outform", "DER", "-out"])
            .arg(&der)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl makes the test's RSA key");
        assert!(status.success());
        // OpenSSL 3.0 writes the DER of an RSA key as PKCS#1.
        let rsa = RsaKeyPair::from_der(&std::fs::read(&der).unwrap()).unwrap();
        std::fs::remove_file(&der).unwrap();
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let ec = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self { rsa, ec }
    }

    pub(crate) fn rsa_jwk(&self, kid: &str) -> Value {
        let public: ring::rsa::PublicKeyComponents<Vec<u8>> = self.rsa.public().into();
        json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
               "n": URL_SAFE_NO_PAD.encode(&public.n),
               "e": URL_SAFE_NO_PAD.encode(&public.e)})
    }

    pub(crate) fn ec_jwk(&self, kid: &str) -> Value {
        let point = self.ec.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
               "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
               "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
    }

    /// The JWKS at start: `rsa-1` and `ec-1`.
    pub(crate) fn jwks(&self) -> Value {
        json!({"keys": [self.rsa_jwk("rsa-1"), self.ec_jwk("ec-1")]})
    }

    pub(crate) fn rs256(&self, kid: &str, claims: &Value) -> String {
        let header = json!({"alg": "RS256", "typ": "at+jwt", "kid": kid});
        sign(&header, claims, |message| {
            let mut signature = vec![0; self.rsa.public().modulus_len()];
            self.rsa
                .sign(
                    &RSA_PKCS1_SHA256,
                    &SystemRandom::new(),
                    message,
                    &mut signature,
                )
                .unwrap();
            signature
        })
    }

    pub(crate) fn es256(&self, kid: &str, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
        sign(&header, claims, |message| {
            self.ec
                .sign(&SystemRandom::new(), message)
                .unwrap()
                .as_ref()
                .to_vec()
        })
    }
}

pub(crate) fn rand_u64() -> u64 {
    let mut bytes = [0u8; 8];
    ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut bytes).unwrap();
    u64::from_le_bytes(bytes)
}

/// `base64url(header).base64url(claims).base64url(signature)`.
pub(crate) fn sign(header: &Value, claims: &Value, signer: impl Fn(&[u8]) -> Vec<u8>) -> String {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = signer(message.as_bytes());
    format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// Claims of a valid token for `sub` with `scope`.
pub(crate) fn claims(sub: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": sub, "client_id": "it-agent",
           "iat": now(), "exp": now() + 300, "scope": scope})
}

/// How the JWKS endpoint answers.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Mode {
    /// `200` with the key set.
    Serve,
    /// Takes the connection, reads the request, and answers nothing until released.
    Hold,
    /// `200` with a body of 4 MiB (written until the reader gives up).
    Huge,
    /// Closes the connection at once, unanswered.
    Down,
}

/// The test authorization server's JWKS endpoint on loopback.
pub(crate) struct JwksServer {
    pub(crate) addr: SocketAddr,
    mode: Arc<Mutex<Mode>>,
    pub(crate) keys: Arc<Mutex<Value>>,
    /// Requests received (fetches started by airlock).
    fetches: Arc<AtomicUsize>,
    /// Told when a held fetch arrives; and how to release it.
    pub(crate) held: mpsc::Receiver<()>,
    pub(crate) release: mpsc::Sender<()>,
    /// After a release: whether the held fetch was still waited on.
    pub(crate) still_open: mpsc::Receiver<bool>,
}

impl JwksServer {
    pub(crate) fn start(keys: Value) -> Self {
        Self::serving(keys, None)
    }

    /// With `minter`, also an authorization server: its metadata (RFC 8414) under
    /// `/.well-known/`, and a token endpoint for the client_credentials grant of the client
    /// [`CLIENT_ID`], whose tokens `minter` signs for the `resource` asked for.
    fn serving(keys: Value, minter: Option<Arc<Issuer>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mode = Arc::new(Mutex::new(Mode::Serve));
        let keys = Arc::new(Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (held_tx, held) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let (open_tx, still_open) = mpsc::channel();
        let (thread_mode, thread_keys, thread_fetches) =
            (Arc::clone(&mode), Arc::clone(&keys), Arc::clone(&fetches));
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                let _read = reader.read_line(&mut request_line);
                let mut line = String::new();
                let mut length = 0;
                let mut authorization = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    let lower = line.to_ascii_lowercase();
                    if let Some(value) = lower.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    if lower.starts_with("authorization:") {
                        authorization = line["authorization:".len()..].trim().to_owned();
                    }
                    line.clear();
                }
                let mut body = vec![0; length];
                let _read = reader.read_exact(&mut body);
                let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
                let mode = *thread_mode.lock().unwrap();
                if path.ends_with("/jwks") {
                    thread_fetches.fetch_add(1, Ordering::SeqCst);
                } else if let Some(minter) = &minter {
                    let reply = authorization_server(minter, addr, &path, &authorization, &body);
                    let _sent = stream.write_all(reply.as_bytes());
                    continue;
                }
                match mode {
                    Mode::Serve => {
                        let body = thread_keys.lock().unwrap().to_string();
                        let _sent = stream.write_all(ok_json(&body).as_bytes());
                    }
                    Mode::Hold => {
                        let _told = held_tx.send(());
                        let _released = release_rx.recv_timeout(Duration::from_secs(60));
                        // Whether airlock still waits on this fetch at release (it has not
                        // closed the connection: its fetch timeout has not passed).
                        stream.set_nonblocking(true).unwrap();
                        let open = matches!(
                            stream.read(&mut [0u8; 1]),
                            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock
                        );
                        let _told = open_tx.send(open);
                    }
                    Mode::Huge => {
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                                    Content-Length: 4194304\r\n\r\n{\"keys\":[";
                        let _sent = stream.write_all(head.as_bytes());
                        let filler = vec![b' '; 64 * 1024];
                        for _ in 0..64 {
                            if stream.write_all(&filler).is_err() {
                                break;
                            }
                        }
                    }
                    Mode::Down => {}
                }
            }
        });
        Self {
            addr,
            mode,
            keys,
            fetches,
            held,
            release,
            still_open,
        }
    }

    pub(crate) fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub(crate) fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    pub(crate) fn uri(&self) -> String {
        format!("http://{}/jwks", self.addr)
    }
}

/// A `200` JSON reply closing the connection.
pub(crate) fn ok_json(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The client the test authorization server knows, and its secret.
const CLIENT_ID: &str = "it-sdk-client";
const CLIENT_SECRET: &str = "it-sdk-client-secret";

/// The test authorization server at `addr` (issuer `http://ADDR/issuer`): its metadata, and
/// the client_credentials grant of [`CLIENT_ID`] (HTTP Basic), minting an RS256 token for the
/// form's `resource` and `scope`. Anything else is `404`, a wrong secret `401`.
fn authorization_server(
    minter: &Issuer,
    addr: SocketAddr,
    path: &str,
    authorization: &str,
    body: &[u8],
) -> String {
    let issuer = format!("http://{addr}/issuer");
    if path.starts_with("/.well-known/") && path.ends_with("/issuer") {
        let metadata = json!({
            "issuer": issuer,
            // Required by the SDK's metadata model; the client_credentials grant never uses it.
            "authorization_endpoint": format!("http://{addr}/authorize"),
            "token_endpoint": format!("http://{addr}/token"),
            "jwks_uri": format!("http://{addr}/jwks"),
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "response_types_supported": ["code"],
        });
        return ok_json(&metadata.to_string());
    }
    if path != "/token" {
        return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_owned();
    }
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    if authorization != format!("Basic {basic}") {
        return "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_owned();
    }
    let form: std::collections::HashMap<String, String> = String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), url_decode(v)))
        .collect();
    let resource = form.get("resource").cloned().unwrap_or_default();
    let scope = form.get("scope").cloned().unwrap_or_default();
    let claims = json!({"iss": issuer, "aud": resource, "sub": CLIENT_ID, "client_id": CLIENT_ID,
                        "iat": now(), "exp": now() + 300, "scope": scope});
    let token = minter.rs256("rsa-1", &claims);
    let reply = json!({"access_token": token, "token_type": "Bearer", "expires_in": 300,
                       "scope": scope});
    ok_json(&reply.to_string())
}

/// `application/x-www-form-urlencoded` decoding (`+` and `%XX`).
fn url_decode(text: &str) -> String {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// airlock serving [`MANIFEST`] with OAuth against `jwks`, and the static token too.
pub(crate) fn serve(jwks: &JwksServer) -> (HttpServer, std::path::PathBuf) {
    let (dir, manifest) = scratch_manifest(&format!("oauth-{}", rand_u64()), MANIFEST);
    let uri = jwks.uri();
    let server = HttpServer::airlock(
        &[
            "--manifest",
            manifest.to_str().unwrap(),
            "--oauth-resource",
            RESOURCE,
            "--oauth-issuer",
            ISSUER,
            "--oauth-jwks-uri",
            &uri,
            "--auth-token-env",
            "IT_OAUTH_STATIC",
        ],
        &[("IT_OAUTH_STATIC", STATIC_TOKEN)],
    );
    (server, dir)
}

pub(crate) fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A modern `tools/list` with `token`.
pub(crate) fn list(addr: SocketAddr, token: &str) -> Reply {
    let auth = bearer(token);
    modern(
        addr,
        1,
        "tools/list",
        json!({}),
        &[("Authorization", &auth)],
    )
}

/// A modern `tools/call` of `tool` with `token`.
pub(crate) fn call(addr: SocketAddr, token: &str, tool: &str) -> Reply {
    let auth = bearer(token);
    let params = json!({"name": tool, "arguments": if tool == "echo" {json!({"text": "hi"})} else {json!({})}});
    modern(addr, 2, "tools/call", params, &[("Authorization", &auth)])
}

pub(crate) fn assert_invalid(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {reply:?}");
    assert_eq!(
        reply.header("www-authenticate"),
        Some(invalid_token().as_str()),
        "{what}"
    );
    assert_eq!(reply.code(), -32600, "{what}");
}

#[test]
fn valid_tokens_are_served_and_each_bad_one_gets_its_exact_401() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let body = stdio::request(1, "tools/list", json!({}));

    // No token: the challenge names the metadata, which names the issuer (discovery).
    let none = post(addr, &[], &body);
    assert_eq!(none.status, 401);
    assert_eq!(none.header("www-authenticate"), Some(challenge().as_str()));
    let request = format!(
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {addr}\r\n\
         Connection: close\r\n\r\n"
    );
    let metadata = exchange(addr, request.as_bytes());
    assert_eq!(metadata.status, 200);
    assert_eq!(metadata.header("content-type"), Some("application/json"));
    assert_eq!(
        metadata.json(),
        json!({"resource": RESOURCE, "authorization_servers": [ISSUER],
               "scopes_supported": ["echo:run"], "bearer_methods_supported": ["header"]})
    );
    let root = format!(
        "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: {addr}\r\n\
         Connection: close\r\n\r\n"
    );
    assert_eq!(exchange(addr, root.as_bytes()).json(), metadata.json());

    // Valid tokens, RSA and EC, are served; the static token still is.
    let good = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
    let reply = list(addr, &good);
    assert_eq!(reply.status, 200, "{reply:?}");
    let listed = reply.json();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "hello"], "tools/list shows every tool");
    let echoed = call(addr, &good, "echo");
    assert_eq!(echoed.status, 200, "{echoed:?}");
    assert_eq!(echoed.json()["result"]["content"][0]["text"], "hi\n");
    assert_eq!(
        list(addr, &issuer.es256("ec-1", &claims("bob", ""))).status,
        200
    );
    assert_eq!(list(addr, STATIC_TOKEN).status, 200);
    assert_eq!(
        call(addr, STATIC_TOKEN, "echo").status,
        200,
        "static tokens are unscoped"
    );

    // Each bad token: 401, invalid_token.
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = claims("alice", "echo:run");
        change(&mut claims);
        issuer.rs256("rsa-1", &claims)
    };
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none", "kid": "rsa-1"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims("alice", "echo:run").to_string())
    );
    // HS256 with the RSA public key as the HMAC secret (the algorithm-confusion attack), in
    // the forms a confused verifier would use: the key's DER and its JWK.
    let hmac_with = |secret: &[u8]| {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
        let header = json!({"alg": "HS256", "typ": "at+jwt", "kid": "rsa-1"});
        sign(&header, &claims("alice", "echo:run"), |message| {
            ring::hmac::sign(&key, message).as_ref().to_vec()
        })
    };
    let rsa_der = issuer.rsa.public().as_ref().to_vec();
    let rsa_jwk = issuer.rsa_jwk("rsa-1").to_string();
    let cases = [
        ("expired", with(&|c| c["exp"] = json!(now() - 120))),
        ("not yet valid", with(&|c| c["nbf"] = json!(now() + 120))),
        (
            "wrong issuer",
            with(&|c| c["iss"] = json!("https://evil.test")),
        ),
        (
            "wrong audience",
            with(&|c| c["aud"] = json!("https://airlock.test/other")),
        ),
        (
            "a token for another resource",
            with(&|c| c["aud"] = json!("https://other-server.test/mcp")),
        ),
        (
            "unknown kid",
            issuer.rs256("rsa-9", &claims("alice", "echo:run")),
        ),
        ("alg none", unsigned),
        ("HS256 with the RSA key's DER", hmac_with(&rsa_der)),
        (
            "HS256 with the RSA key's JWK",
            hmac_with(rsa_jwk.as_bytes()),
        ),
        (
            "an EC key's kid on an RSA signature",
            issuer.rs256("ec-1", &claims("alice", "echo:run")),
        ),
        (
            "no sub",
            with(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
        ),
        (
            "over 8 KiB",
            with(&|c| c["pad"] = json!("x".repeat(9 * 1024))),
        ),
        ("garbage", "not-a-jwt".to_owned()),
    ];
    for (what, token) in &cases {
        assert_invalid(&list(addr, token), what);
    }
    assert!(
        server
            .log
            .lock()
            .unwrap()
            .iter()
            .all(|line| !line.contains(&good[..40])),
        "no token is logged"
    );

    // A 1 MiB token: past the head cap, hyper's 431 before any check (no challenge).
    let huge = with(&|c| c["pad"] = json!("x".repeat(1024 * 1024)));
    let reply = oversized(addr, &huge);
    assert_eq!(reply.status, 431);
    assert_eq!(reply.header("www-authenticate"), None);

    // A valid token without the tool's scope: 403 insufficient_scope naming it; a tool that
    // needs no scope is served.
    let unscoped = issuer.rs256("rsa-1", &claims("alice", "files:read"));
    let refused = call(addr, &unscoped, "echo");
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(
        refused.header("www-authenticate"),
        Some(
            format!(
                r#"Bearer error="insufficient_scope", scope="echo:run", resource_metadata="{METADATA_URL}""#
            )
            .as_str()
        )
    );
    assert_eq!(refused.json()["id"], 2);
    assert_eq!(refused.code(), -32600);
    assert_eq!(call(addr, &unscoped, "hello").status, 200);
    assert_eq!(list(addr, &unscoped).status, 200);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Sends a request whose token is `token` (far past the head cap) and reads the reply, the
/// writer on its own thread (the server stops reading at its cap).
pub(crate) fn oversized(addr: SocketAddr, token: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 0\r\n\r\n"
    );
    let mut writer = stream.try_clone().unwrap();
    let writing = thread::spawn(move || {
        let _written = writer.write_all(request.as_bytes());
    });
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            Err(_) => break,
        }
    }
    drop(stream);
    writing.join().unwrap();
    parse_reply(&raw)
}

#[test]
fn a_legacy_session_is_bound_to_the_tokens_subject() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let alice = bearer(&issuer.rs256("rsa-1", &claims("alice", "echo:run")));
    let session = crate::support::http::initialize_with(server.addr, &[("Authorization", &alice)]);
    let list = stdio::request(3, "tools/list", json!({}));
    let in_session = |auth: &str| {
        post(
            server.addr,
            &[
                ("Authorization", auth),
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            &list,
        )
        .status
    };
    // Another token of alice's (a refreshed one) continues it; bob's does not find it.
    let alice_again = bearer(&issuer.es256("ec-1", &claims("alice", "")));
    assert_eq!(in_session(&alice), 200);
    assert_eq!(in_session(&alice_again), 200);
    let bob = bearer(&issuer.rs256("rsa-1", &claims("bob", "echo:run")));
    assert_eq!(in_session(&bob), 404);
    let other_client = {
        let mut claims = claims("alice", "echo:run");
        claims["client_id"] = json!("another-agent");
        bearer(&issuer.rs256("rsa-1", &claims))
    };
    assert_eq!(in_session(&other_client), 404);
    assert_eq!(in_session(&bearer(STATIC_TOKEN)), 404);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_rotated_key_is_fetched_once_and_unknown_kids_cannot_flood_the_issuer() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    assert_eq!(jwks.fetches(), 1, "fetched at start");
    // The issuer rotates: the EC key is now also published as `ec-2`.
    jwks.keys.lock().unwrap()["keys"]
        .as_array_mut()
        .unwrap()
        .push(issuer.ec_jwk("ec-2"));
    let rotated = issuer.es256("ec-2", &claims("alice", ""));
    assert_eq!(list(server.addr, &rotated).status, 200);
    assert_eq!(jwks.fetches(), 2, "one fetch for the new kid");
    assert_eq!(list(server.addr, &rotated).status, 200);
    for n in 0..5 {
        let unknown = issuer.es256(&format!("nope-{n}"), &claims("alice", ""));
        assert_invalid(&list(server.addr, &unknown), "unknown kid");
    }
    assert_eq!(jwks.fetches(), 2, "no fetch within the refetch interval");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_jwks_endpoint_that_is_slow_huge_or_down_does_not_stall_requests_with_cached_keys() {
    let issuer = Issuer::new();
    for mode in [Mode::Hold, Mode::Huge, Mode::Down] {
        let jwks = JwksServer::start(issuer.jwks());
        let (server, dir) = serve(&jwks);
        let addr = server.addr;
        let good = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
        assert_eq!(list(addr, &good).status, 200);
        jwks.set(mode);
        // A token naming an unknown kid starts a fetch, which fails in its own way.
        let unknown = issuer.rs256("rsa-2", &claims("alice", "echo:run"));
        let waiting = thread::spawn(move || list(addr, &unknown));
        if mode == Mode::Hold {
            // While the fetch hangs, tokens whose key is held are served.
            jwks.held
                .recv_timeout(REPLY_TIMEOUT)
                .expect("the fetch arrives");
            assert_eq!(list(addr, &good).status, 200, "{mode:?}");
            assert_eq!(call(addr, &good, "echo").status, 200, "{mode:?}");
            jwks.release.send(()).unwrap();
            let open = jwks.still_open.recv_timeout(REPLY_TIMEOUT).unwrap();
            assert!(
                open,
                "served before the hanging fetch ended, not after it timed out"
            );
        }
        let refused = waiting.join().unwrap();
        assert_invalid(&refused, &format!("{mode:?}"));
        assert_eq!(jwks.fetches(), 2, "{mode:?}");
        // The held keys are kept.
        assert_eq!(list(addr, &good).status, 200, "{mode:?}");
        assert_eq!(
            list(addr, &issuer.es256("ec-1", &claims("bob", ""))).status,
            200,
            "{mode:?}"
        );
        drop(server);
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn oauth_configurations_that_cannot_be_used_stop_the_server_at_start() {
    let jwks_down = TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}/jwks", jwks_down.local_addr().unwrap());
    drop(jwks_down);
    for (args, want) in [
        (
            vec![
                "--oauth-resource",
                "http://airlock.example.com/mcp",
                "--oauth-issuer",
                ISSUER,
                "--oauth-jwks-uri",
                &down,
            ],
            "the OAuth resource must be this server's absolute https URI",
        ),
        (
            vec![
                "--oauth-resource",
                RESOURCE,
                "--oauth-issuer",
                ISSUER,
                "--oauth-jwks-uri",
                "http://jwks.example.com/keys",
            ],
            "the JWKS URI must be https://",
        ),
        (
            vec!["--oauth-resource", RESOURCE, "--oauth-issuer", ISSUER],
            "--oauth-resource needs --oauth-jwks-file or --oauth-jwks-uri",
        ),
        (
            vec![
                "--oauth-resource",
                RESOURCE,
                "--oauth-issuer",
                ISSUER,
                "--oauth-jwks-uri",
                &down,
                "--oauth-algorithm",
                "HS256",
            ],
            "OAuth algorithms must be among",
        ),
        (
            vec![
                "--oauth-resource",
                RESOURCE,
                "--oauth-issuer",
                ISSUER,
                "--oauth-jwks-uri",
                &down,
            ],
            "the JWKS could not be fetched: cannot connect",
        ),
    ] {
        let mut all = vec!["serve", "--http", "127.0.0.1:0"];
        all.extend_from_slice(&args);
        let (status, stderr) = crate::http_browser::start_failure(&all);
        assert_ne!(status, Some(0), "{args:?}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

/// The official Python SDK's OAuth client (client_credentials, `ClientCredentialsOAuthProvider`)
/// signs in from airlock's `401` alone: the challenge's `resource_metadata`, the authorization
/// server it names, a token for the resource (RFC 8707), then lists and calls tools, the
/// scoped one included because it asked for the scope.
#[test]
fn the_official_python_clients_oauth_flow_signs_in_and_calls_a_scoped_tool() {
    let issuer = Arc::new(Issuer::new());
    let server_side = JwksServer::serving(issuer.jwks(), Some(Arc::clone(&issuer)));
    let issuer_url = format!("http://{}/issuer", server_side.addr);
    // The resource names airlock's own address, which the client connects to: a port chosen
    // here (free a moment ago).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let (dir, manifest) = scratch_manifest(&format!("oauth-sdk-{}", rand_u64()), MANIFEST);
    let listen = format!("127.0.0.1:{port}");
    let server = HttpServer::start(
        &stdio::airlock(),
        &[
            "serve",
            "--http",
            &listen,
            "--manifest",
            manifest.to_str().unwrap(),
            "--oauth-resource",
            &resource,
            "--oauth-issuer",
            &issuer_url,
            "--oauth-jwks-uri",
            &server_side.uri(),
        ],
        &[],
    );
    let calls = json!([{"name": "echo", "arguments": {"text": "signed in"}}]).to_string();
    let args: Vec<std::ffi::OsString> = [
        "--url",
        &resource,
        "--calls",
        &calls,
        "--oauth-issuer",
        &issuer_url,
        "--oauth-client-id",
        CLIENT_ID,
        "--oauth-client-secret",
        CLIENT_SECRET,
        "--oauth-scope",
        "echo:run",
    ]
    .iter()
    .map(Into::into)
    .collect();
    let Some(report) = crate::clients::python_report(&args) else {
        std::fs::remove_dir_all(dir).unwrap();
        return;
    };
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "hello"]);
    assert_eq!(
        report["calls"][0]["result"]["content"][0]["text"], "signed in\n",
        "{report}"
    );
    // airlock logged the OAuth identity, never the token.
    let log = server.log.lock().unwrap().join("\n");
    assert!(!log.contains("eyJ"), "a JWT in the log:\n{log}");
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Beyond loopback, a server with OAuth and no static token is not "without authentication":
/// the warning is for servers that check no token at all.
#[test]
fn a_remote_bind_with_oauth_is_not_warned_as_unauthenticated() {
    let issuer = Issuer::new();
    let dir = std::env::temp_dir().join(format!("airlock-it-oauth-remote-{}", rand_u64()));
    std::fs::create_dir_all(&dir).unwrap();
    let jwks = dir.join("jwks.json");
    std::fs::write(&jwks, issuer.jwks().to_string()).unwrap();
    let warned = |oauth: bool| {
        let mut args = vec!["serve", "--http", "0.0.0.0:0", "--allow-remote"];
        if oauth {
            args.extend([
                "--oauth-resource",
                RESOURCE,
                "--oauth-issuer",
                ISSUER,
                "--oauth-jwks-file",
                jwks.to_str().unwrap(),
            ]);
        }
        let server = HttpServer::start(&stdio::airlock(), &args, &[]);
        let log = server.log.lock().unwrap().join("\n");
        log.contains("without authentication")
    };
    assert!(warned(false));
    assert!(!warned(true));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A JWKS served over HTTPS by a thread of the test with a certificate for `127.0.0.1` from
/// `pki`'s CA: one request per connection.
fn https_jwks(pki: &crate::http_tls::Pki, keys: Value) -> (SocketAddr, Arc<AtomicUsize>) {
    use rustls::pki_types::pem::PemObject;
    let chain = rustls::pki_types::CertificateDer::pem_file_iter(&pki.cert_file)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&pki.key_file).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&served);
    thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { continue };
            tcp.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
            let connection = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut tls = rustls::StreamOwned::new(connection, tcp);
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match tls.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            if head.ends_with(b"\r\n\r\n") {
                counter.fetch_add(1, Ordering::SeqCst);
                let _sent = tls.write_all(ok_json(&keys.to_string()).as_bytes());
                tls.conn.send_close_notify();
                let _flushed = tls.flush();
            }
        }
    });
    (addr, served)
}

/// `--oauth-jwks-uri https://…` is fetched over TLS checked against `--oauth-jwks-ca`: with
/// the CA that signed the server's certificate the keys are fetched and tokens served; with
/// another CA the handshake fails and airlock does not start.
#[test]
fn an_https_jwks_uri_is_fetched_against_the_given_ca_roots_only() {
    let issuer = Issuer::new();
    let pki = crate::http_tls::Pki::new("oauth-jwks");
    let other = crate::http_tls::Pki::new("oauth-jwks-other");
    let (addr, served) = https_jwks(&pki, issuer.jwks());
    let uri = format!("https://{addr}/jwks");
    let oauth = |ca: &std::path::Path| {
        vec![
            "serve".to_owned(),
            "--http".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--oauth-resource".to_owned(),
            RESOURCE.to_owned(),
            "--oauth-issuer".to_owned(),
            ISSUER.to_owned(),
            "--oauth-jwks-uri".to_owned(),
            uri.clone(),
            "--oauth-jwks-ca".to_owned(),
            ca.to_str().unwrap().to_owned(),
        ]
    };
    let args = oauth(&other.ca_file);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, stderr) = crate::http_browser::start_failure(&args);
    assert_ne!(status, Some(0));
    assert!(
        stderr.contains("the JWKS could not be fetched: TLS handshake failed"),
        "{stderr}"
    );
    assert_eq!(served.load(Ordering::SeqCst), 0);
    let args = oauth(&pki.ca_file);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = HttpServer::start(&stdio::airlock(), &args, &[]);
    assert_eq!(served.load(Ordering::SeqCst), 1);
    let good = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
    assert_eq!(list(server.addr, &good).status, 200);
}
