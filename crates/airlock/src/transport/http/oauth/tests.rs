use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use super::*;

const RESOURCE: &str = "https://mcp.example.com/mcp";
const ISSUER: &str = "https://idp.example.com";

/// A P-256 key made for this run, and the JWKS file naming it `kid`.
struct Signer {
    pair: EcdsaKeyPair,
    kid: &'static str,
}

impl Signer {
    fn new(kid: &'static str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self { pair, kid }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
               "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
               "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
    }

    fn token(&self, header: &Value, claims: &Value) -> String {
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), message.as_bytes())
            .unwrap();
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }

    fn header(&self) -> Value {
        json!({"alg": "ES256", "typ": "at+jwt", "kid": self.kid})
    }
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": "user-1", "client_id": "agent-7",
           "exp": now() + 300, "iat": now(), "scope": "files:read tools:run"})
}

fn verifier(signer: &Signer) -> (Verifier, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    let path = dir.0.join("jwks.json");
    std::fs::write(&path, json!({"keys": [signer.jwk()]}).to_string()).unwrap();
    let config = OAuth::new(RESOURCE, ISSUER, JwksSource::File(path)).unwrap();
    (Verifier::new(config, BTreeSet::from(["files:read"])), dir)
}

mod tempdir {
    pub(super) struct Dir(pub(super) std::path::PathBuf);

    impl Dir {
        pub(super) fn new() -> Self {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).unwrap();
            let name = format!("airlock-oauth-{}", u64::from_le_bytes(bytes));
            let path = std::env::temp_dir().join(name);
            std::fs::create_dir(&path).unwrap();
            Self(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _removed = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn verify(verifier: &Verifier, token: &str) -> Result<Grant, Rejection> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(verifier.verify(token.as_bytes()))
}

#[test]
fn a_valid_token_grants_its_subject_client_and_scopes() {
    let signer = Signer::new("k1");
    let (verifier, _dir) = verifier(&signer);
    let claimed = claims();
    let grant = verify(&verifier, &signer.token(&signer.header(), &claimed)).unwrap();
    assert_eq!(&*grant.identity, "oauth:user-1#agent-7");
    assert_eq!(
        &*grant.scopes,
        [Box::from("files:read"), Box::from("tools:run")]
    );
    // What it opens lives until its `exp` and the leeway.
    let exp = claimed["exp"].as_u64().unwrap();
    assert_eq!(
        grant.expires,
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(exp + TOKEN_LEEWAY_SECONDS)
    );

    let mut scp = claims();
    scp.as_object_mut().unwrap().remove("scope");
    scp.as_object_mut().unwrap().remove("client_id");
    scp["scp"] = json!(["b", "a", "b"]);
    scp["azp"] = json!("web");
    let grant = verify(&verifier, &signer.token(&signer.header(), &scp)).unwrap();
    assert_eq!(&*grant.identity, "oauth:user-1#web");
    assert_eq!(&*grant.scopes, [Box::from("a"), Box::from("b")]);
}

#[test]
fn each_failed_check_is_its_own_rejection() {
    let signer = Signer::new("k1");
    let (verifier, _dir) = verifier(&signer);
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = claims();
        change(&mut claims);
        verify(&verifier, &signer.token(&signer.header(), &claims))
    };
    let leeway = i64::try_from(TOKEN_LEEWAY_SECONDS).unwrap();
    assert_eq!(
        with(&|c| c["exp"] = json!(now() - leeway - 5)).unwrap_err(),
        Rejection::Expired
    );
    assert_eq!(
        with(&|c| {
            c.as_object_mut().unwrap().remove("exp");
        })
        .unwrap_err(),
        Rejection::Expired
    );
    assert_eq!(
        with(&|c| c["nbf"] = json!(now() + leeway + 60)).unwrap_err(),
        Rejection::NotYetValid
    );
    // Inside the leeway, both ways.
    assert!(with(&|c| c["exp"] = json!(now() - 5)).is_ok());
    assert!(with(&|c| c["nbf"] = json!(now() + 5)).is_ok());
    assert_eq!(
        with(&|c| c["iss"] = json!("https://evil.example.com")).unwrap_err(),
        Rejection::Issuer
    );
    assert_eq!(
        with(&|c| c["aud"] = json!("https://other.example.com/mcp")).unwrap_err(),
        Rejection::Audience
    );
    assert!(with(&|c| c["aud"] = json!(["https://other.example.com", RESOURCE])).is_ok());
    // Type confusion: a string `exp`, a numeric `sub`, a list `iss`.
    assert!(with(&|c| c["exp"] = json!("99999999999")).is_err());
    assert!(with(&|c| c["sub"] = json!(12)).is_err());
    assert!(with(&|c| c["iss"] = json!([ISSUER])).is_err());
    for (claim, value) in [
        ("sub", json!("x".repeat(MAX_TOKEN_SUBJECT_BYTES + 1))),
        ("sub", json!("has space")),
        ("sub", json!("a#b")),
        ("sub", json!("")),
        ("client_id", json!("quo\"te")),
        ("scope", json!(42)),
        ("scope", json!("ok bad\"scope")),
    ] {
        assert_eq!(
            with(&|c| c[claim] = value.clone()).unwrap_err(),
            Rejection::Claims,
            "{claim}: {value}"
        );
    }
    let many: Vec<String> = (0..=MAX_TOKEN_SCOPES).map(|i| format!("s{i}")).collect();
    assert_eq!(
        with(&|c| c["scope"] = json!(many.join(" "))).unwrap_err(),
        Rejection::Claims
    );
}

/// Parsers disagree on which copy of a repeated key wins: a token whose claims repeat `exp`
/// (one past, one future), `aud` or `sub` is refused whichever copy comes first.
#[test]
fn claims_with_a_repeated_key_are_refused() {
    let signer = Signer::new("k1");
    let (verifier, _dir) = verifier(&signer);
    let (past, future) = (now() - 3600, now() + 3600);
    for claims in [
        format!(r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"u","exp":{past},"exp":{future}}}"#),
        format!(r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"u","exp":{future},"exp":{past}}}"#),
        format!(
            r#"{{"iss":"{ISSUER}","aud":"https://x.test","aud":"{RESOURCE}","sub":"u","exp":{future}}}"#
        ),
        format!(r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"u","sub":"v","exp":{future}}}"#),
    ] {
        let header = URL_SAFE_NO_PAD.encode(signer.header().to_string());
        let message = format!("{header}.{}", URL_SAFE_NO_PAD.encode(&claims));
        let signature = signer
            .pair
            .sign(&SystemRandom::new(), message.as_bytes())
            .unwrap();
        let token = format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()));
        assert!(verify(&verifier, &token).is_err(), "{claims}");
    }
}

#[test]
fn headers_keys_and_signatures_are_refused_before_any_claim_is_read() {
    let signer = Signer::new("k1");
    let (verifier, _dir) = verifier(&signer);
    let token = signer.token(&signer.header(), &claims());
    // Unknown kid (a file source: no refresh).
    let other = Signer {
        pair: Signer::new("x").pair,
        kid: "k2",
    };
    assert_eq!(
        verify(&verifier, &other.token(&other.header(), &claims())).unwrap_err(),
        Rejection::UnknownKey
    );
    // The right kid, another key: the signature fails.
    let impostor = Signer {
        pair: Signer::new("x").pair,
        kid: "k1",
    };
    assert_eq!(
        verify(&verifier, &impostor.token(&impostor.header(), &claims())).unwrap_err(),
        Rejection::Signature
    );
    // A key carried in the token itself (`jwk`, `jku`, `x5u`) is never used: the attacker's
    // own key under the held kid still fails the signature.
    let embedded = json!({"alg": "ES256", "kid": "k1", "jwk": impostor.jwk(),
                          "jku": "https://evil.example.com/jwks", "x5u": "https://evil.example.com/c"});
    assert_eq!(
        verify(&verifier, &impostor.token(&embedded, &claims())).unwrap_err(),
        Rejection::Signature
    );
    // No kid: the one key that can verify the algorithm is used.
    let no_kid = json!({"alg": "ES256", "typ": "at+jwt"});
    assert!(verify(&verifier, &signer.token(&no_kid, &claims())).is_ok());
    assert_eq!(
        verify(&verifier, &impostor.token(&no_kid, &claims())).unwrap_err(),
        Rejection::Signature
    );
    // `alg: none`, with no signature or with one.
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none", "kid": "k1"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims().to_string())
    );
    assert_eq!(verify(&verifier, &unsigned).unwrap_err(), Rejection::Header);
    // HS256 (an algorithm never allowed), and RS256 (allowed, but no RSA key is held).
    for alg in ["HS256", "RS256", "EdDSA"] {
        let header = json!({"alg": alg, "kid": "k1"});
        let forged = signer.token(&header, &claims());
        let rejection = verify(&verifier, &forged).unwrap_err();
        assert!(
            matches!(rejection, Rejection::Header | Rejection::UnknownKey),
            "{alg}: {rejection:?}"
        );
    }
    // A flipped signature byte, garbage, and an over-long token.
    let mut bytes = token.clone().into_bytes();
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    assert_eq!(
        verify(&verifier, std::str::from_utf8(&bytes).unwrap()).unwrap_err(),
        Rejection::Signature
    );
    assert_eq!(
        verify(&verifier, "not.a.jwt").unwrap_err(),
        Rejection::Header
    );
    assert_eq!(
        verify(&verifier, "onlyonepart").unwrap_err(),
        Rejection::Header
    );
    let long = format!("{token}{}", "A".repeat(MAX_ACCESS_TOKEN_BYTES));
    assert_eq!(verify(&verifier, &long).unwrap_err(), Rejection::TooLong);
    assert!(verify(&verifier, &token).is_ok());
}

#[test]
fn the_metadata_and_challenges_name_the_configured_resource() {
    let signer = Signer::new("k1");
    let (verifier, _dir) = verifier(&signer);
    let document: Value = serde_json::from_slice(verifier.document()).unwrap();
    assert_eq!(
        document,
        json!({"resource": RESOURCE, "authorization_servers": [ISSUER],
               "scopes_supported": ["files:read"], "bearer_methods_supported": ["header"]})
    );
    assert!(verifier.is_metadata_path("/.well-known/oauth-protected-resource"));
    assert!(verifier.is_metadata_path("/.well-known/oauth-protected-resource/mcp"));
    assert!(!verifier.is_metadata_path("/.well-known/oauth-protected-resource/other"));
    let url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    assert_eq!(
        verifier.challenge(false),
        format!(r#"Bearer resource_metadata="{url}""#)
    );
    assert_eq!(
        verifier.challenge(true),
        format!(r#"Bearer resource_metadata="{url}", error="invalid_token""#)
    );
    assert_eq!(
        verifier.insufficient_scope(&[Box::from("a:b"), Box::from("c")]),
        format!(r#"Bearer error="insufficient_scope", scope="a:b c", resource_metadata="{url}""#)
    );
}

#[test]
fn configurations_outside_the_accepted_forms_are_refused_at_start() {
    let keys = || JwksSource::File("/nonexistent/jwks.json".into());
    for resource in [
        "http://mcp.example.com/mcp",
        "https://mcp.example.com/mcp#frag",
        "https://mcp.example.com/mcp?q=1",
        "https://user@mcp.example.com/mcp",
        "mcp.example.com/mcp",
        "https://mcp.example.com/a\"b",
        "/mcp",
    ] {
        assert_eq!(
            OAuth::new(resource, ISSUER, keys()).unwrap_err(),
            OAuthError::Resource,
            "{resource}"
        );
    }
    assert_eq!(
        OAuth::new(RESOURCE, "http://idp.example.com", keys()).unwrap_err(),
        OAuthError::Issuer
    );
    assert_eq!(
        OAuth::new("http://127.0.0.1:8080/mcp", "http://localhost:9/", keys()).unwrap_err(),
        OAuthError::JwksFile
    );
    let dir = tempdir::Dir::new();
    let path = dir.0.join("jwks.json");
    for bad in [
        json!({"keys": []}),
        json!({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}),
        json!({"nokeys": 1}),
    ] {
        std::fs::write(&path, bad.to_string()).unwrap();
        assert_eq!(
            OAuth::new(RESOURCE, ISSUER, JwksSource::File(path.clone())).unwrap_err(),
            OAuthError::JwksInvalid,
            "{bad}"
        );
    }
    std::fs::write(&path, " ".repeat(crate::limits::MAX_JWKS_BYTES + 1)).unwrap();
    assert_eq!(
        OAuth::new(RESOURCE, ISSUER, JwksSource::File(path.clone())).unwrap_err(),
        OAuthError::JwksFile
    );
    let signer = Signer::new("k1");
    std::fs::write(&path, json!({"keys": [signer.jwk()]}).to_string()).unwrap();
    let config = || OAuth::new(RESOURCE, ISSUER, JwksSource::File(path.clone())).unwrap();
    for names in [&["HS256"][..], &["none"], &[], &["EdDSA"]] {
        assert_eq!(
            config().algorithms(names.iter().copied()).unwrap_err(),
            OAuthError::Algorithm
        );
    }
    assert!(config().algorithms(["ES256", "PS256"]).is_ok());
    assert_eq!(
        config().authorization_servers(["ftp://x"]).unwrap_err(),
        OAuthError::Issuer
    );
    assert_eq!(
        JwksUri::parse("http://idp.example.com/jwks", Path::new("/x")).unwrap_err(),
        OAuthError::JwksUri
    );
    assert!(JwksUri::parse("http://127.0.0.1:9/jwks", Path::new("/x")).is_ok());
    assert_eq!(
        JwksUri::parse("https://idp.example.com/jwks", Path::new("/nonexistent")).unwrap_err(),
        OAuthError::JwksRoots
    );
}

/// A JWKS endpoint on loopback: the first fetch (at start) is answered with `first` at once,
/// every later one with `then` after `delay`.
fn slow_jwks(first: Value, then: Value, delay: std::time::Duration) -> JwksSource {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}/jwks", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let body = if n == 0 {
                first.to_string()
            } else {
                std::thread::sleep(delay);
                then.to_string()
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _sent = stream.write_all(reply.as_bytes());
        }
    });
    JwksSource::Uri(JwksUri::parse(&uri, Path::new("/nonexistent")).unwrap())
}

/// Regression (red team): the request that started a fetch for an unknown `kid` cancelled it
/// when it stopped waiting (its client hung up), and the cancelled fetch still counted as
/// the one allowed per `JWKS_MIN_REFETCH_INTERVAL`; a client doing so every 30 s kept the
/// issuer's rotated keys from ever being learned. The fetch now runs to its end whoever
/// waits, and a token of the new key waits for it.
#[test]
fn a_fetch_outlives_the_request_that_started_it() {
    let held = Signer::new("k1");
    let rotated = Signer::new("k2");
    let source = slow_jwks(
        json!({"keys": [held.jwk()]}),
        json!({"keys": [held.jwk(), rotated.jwk()]}),
        std::time::Duration::from_millis(300),
    );
    let config = OAuth::new(RESOURCE, ISSUER, source).unwrap();
    let verifier = Verifier::new(config, BTreeSet::new());
    let token = rotated.token(&rotated.header(), &claims());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            verifier.load().await.unwrap();
            let given_up = tokio::time::timeout(
                std::time::Duration::from_millis(50),
                verifier.verify(token.as_bytes()),
            )
            .await;
            assert!(given_up.is_err(), "the fetch was answered at once");
            assert_eq!(
                &*verifier.verify(token.as_bytes()).await.unwrap().identity,
                "oauth:user-1#agent-7"
            );
        });
}

/// A verifier whose JWKS file holds `keys`, or the start-up error.
fn verifier_of(keys: Value) -> Result<(Verifier, tempdir::Dir), OAuthError> {
    let dir = tempdir::Dir::new();
    let path = dir.0.join("jwks.json");
    std::fs::write(&path, json!({ "keys": keys }).to_string()).unwrap();
    let config = OAuth::new(RESOURCE, ISSUER, JwksSource::File(path))?
        .algorithms(["RS256", "PS256", "ES256", "ES384"])?;
    Ok((Verifier::new(config, BTreeSet::new()), dir))
}

/// The `RS256` signing input of `header`/`claims` and the token made with `signature`.
fn with_signature(header: &Value, claims: &Value, signature: &[u8]) -> (String, String) {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let token = format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature));
    (message, token)
}

/// Red team, the keys a hostile or careless JWKS may hold: an RSA key whose public exponent
/// is 1 (any padded digest is its own signature), one of 1,024 bits, an EC point off its
/// curve or of another curve, a symmetric key, keys labelled for another algorithm or use.
/// None of them can verify a token forged without a private key: they are dropped when read,
/// or refused by ring's checks at verification.
#[test]
fn keys_that_would_make_forgery_trivial_verify_nothing() {
    let rsa_forgery = |n: &[u8], kid: &str| {
        // RSASSA-PKCS1-v1_5 with SHA-256: with e = 1, the encoded message is the signature.
        let header = json!({"alg": "RS256", "kid": kid});
        let (message, _) = with_signature(&header, &claims(), &[]);
        let digest = ring::digest::digest(&ring::digest::SHA256, message.as_bytes());
        let prefix = [
            0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
            0x01, 0x05, 0x00, 0x04, 0x20,
        ];
        let mut encoded = vec![0x00, 0x01];
        encoded.resize(n.len() - prefix.len() - 32 - 1, 0xff);
        encoded.push(0x00);
        encoded.extend_from_slice(&prefix);
        encoded.extend_from_slice(digest.as_ref());
        with_signature(&header, &claims(), &encoded).1
    };
    let n2048 = vec![0xffu8; 256];
    let n1024 = vec![0xffu8; 128];
    let (verifier, _dir) = verifier_of(json!([
        {"kty": "RSA", "kid": "e1", "n": URL_SAFE_NO_PAD.encode(&n2048), "e": "AQ"},
        {"kty": "RSA", "kid": "small", "n": URL_SAFE_NO_PAD.encode(&n1024), "e": "AQ"},
    ]))
    .unwrap();
    for kid in ["e1", "small"] {
        let n = if kid == "e1" { &n2048 } else { &n1024 };
        assert_eq!(
            verify(&verifier, &rsa_forgery(n, kid)).unwrap_err(),
            Rejection::Signature,
            "{kid}"
        );
    }
    // ECDSA: a point off the curve, a P-384 point labelled P-256, r = s = 0 on a good key.
    let signer = Signer::new("good");
    let point = signer.pair.public_key().as_ref().to_vec();
    let mut off_curve = point.clone();
    off_curve[64] ^= 1;
    let (verifier, _dir) = verifier_of(json!([
        {"kty": "EC", "crv": "P-256", "kid": "off", "x": URL_SAFE_NO_PAD.encode(&off_curve[1..33]),
         "y": URL_SAFE_NO_PAD.encode(&off_curve[33..65])},
        {"kty": "EC", "crv": "P-256", "kid": "wide", "x": URL_SAFE_NO_PAD.encode([7u8; 48]),
         "y": URL_SAFE_NO_PAD.encode([9u8; 48])},
        signer.jwk(),
    ]))
    .unwrap();
    let header = |kid: &str| json!({"alg": "ES256", "kid": kid});
    let forged_off = Signer {
        pair: Signer::new("x").pair,
        kid: "off",
    };
    assert!(verify(&verifier, &forged_off.token(&header("off"), &claims())).is_err());
    assert!(verify(&verifier, &signer.token(&header("wide"), &claims())).is_err());
    let (_, zero) = with_signature(&header("good"), &claims(), &[0u8; 64]);
    assert_eq!(verify(&verifier, &zero).unwrap_err(), Rejection::Signature);
    assert!(verify(&verifier, &signer.token(&header("good"), &claims())).is_ok());
    // Keys that are never kept: symmetric, labelled for HMAC, for encryption, or for an
    // algorithm of another kind (a set of only these is no key set at all).
    for key in [
        json!({"kty": "oct", "kid": "h", "k": URL_SAFE_NO_PAD.encode(b"secret")}),
        json!({"kty": "oct", "kid": "h", "alg": "HS256", "k": URL_SAFE_NO_PAD.encode(b"secret")}),
        json!({"kty": "RSA", "kid": "h", "alg": "HS256", "n": URL_SAFE_NO_PAD.encode(&n2048), "e": "AQAB"}),
        json!({"kty": "RSA", "kid": "h", "use": "enc", "n": URL_SAFE_NO_PAD.encode(&n2048), "e": "AQAB"}),
        json!({"kty": "RSA", "kid": "h", "alg": "RSA-OAEP", "n": URL_SAFE_NO_PAD.encode(&n2048), "e": "AQAB"}),
        json!({"kty": "RSA", "kid": "h", "alg": "ES256", "n": URL_SAFE_NO_PAD.encode(&n2048), "e": "AQAB"}),
        json!({"kty": "EC", "crv": "P-256", "kid": "h", "alg": "ES384", "x": "AA", "y": "AA"}),
        json!({"kty": "EC", "crv": "P-521", "kid": "h", "x": "AA", "y": "AA"}),
        json!({"kty": "OKP", "crv": "Ed25519", "kid": "h", "x": URL_SAFE_NO_PAD.encode([1u8; 32])}),
        json!({"kty": "RSA", "kid": "k".repeat(257), "n": URL_SAFE_NO_PAD.encode(&n2048), "e": "AQAB"}),
    ] {
        assert_eq!(
            verifier_of(json!([key])).err(),
            Some(OAuthError::JwksInvalid),
            "{key}"
        );
    }
    // An HS256 token under an `oct` key's kid (the key dropped, alongside a usable one).
    let (verifier, _dir) = verifier_of(json!([
        {"kty": "oct", "kid": "h", "k": URL_SAFE_NO_PAD.encode(b"secret")},
        signer.jwk(),
    ]))
    .unwrap();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"secret");
    let hs_header = json!({"alg": "HS256", "kid": "h"});
    let (message, _) = with_signature(&hs_header, &claims(), &[]);
    let tag = ring::hmac::sign(&key, message.as_bytes());
    let (_, hs) = with_signature(&hs_header, &claims(), tag.as_ref());
    assert_eq!(verify(&verifier, &hs).unwrap_err(), Rejection::Header);
}

/// Red team: a key published for other operations (`key_ops` without `verify`, RFC 7517
/// §4.3: an encryption or key-wrapping key with no `use`) was kept and verified signatures;
/// like a key whose `use` is not `sig`, it is now dropped.
#[test]
fn a_key_whose_operations_exclude_verify_is_dropped() {
    let signer = Signer::new("k1");
    let mut wrapping = signer.jwk();
    let jwk = wrapping.as_object_mut().unwrap();
    jwk.remove("use");
    jwk.remove("alg");
    for ops in [json!(["encrypt", "wrapKey"]), json!(["sign"]), json!([])] {
        wrapping["key_ops"] = ops.clone();
        assert_eq!(
            verifier_of(json!([wrapping])).err(),
            Some(OAuthError::JwksInvalid),
            "{ops}"
        );
    }
    wrapping["key_ops"] = json!(["verify"]);
    let (verifier, _dir) = verifier_of(json!([wrapping])).unwrap();
    assert!(verify(&verifier, &signer.token(&signer.header(), &claims())).is_ok());
}

/// Red team: one key the JWKS writes in a form `jsonwebtoken` cannot read (a numeric `kid`,
/// a string `x5c`, a `use` or `alg` that is not a string) made the whole set unreadable, so
/// airlock did not start, or (fetched later) never learned the set's other, rotated keys.
/// RFC 7517 §5: such a key is ignored, and the others are used.
#[test]
fn a_malformed_key_in_the_set_is_skipped_not_fatal() {
    let signer = Signer::new("k1");
    for odd in [
        json!({"kty": "RSA", "kid": 5, "n": "AQAB", "e": "AQAB"}),
        json!({"kty": "EC", "crv": "P-256", "kid": "x", "x5c": "not a list", "x": "AA", "y": "AA"}),
        json!({"kty": "EC", "crv": "P-256", "kid": "x", "use": 1, "x": "AA", "y": "AA"}),
        json!({"kty": "RSA", "kid": "x", "alg": ["RS256"], "n": "AQAB", "e": "AQAB"}),
        json!({"kty": "RSA", "kid": "x", "key_ops": "verify", "n": "AQAB", "e": "AQAB"}),
        json!("not an object"),
        json!(null),
    ] {
        for keys in [json!([odd, signer.jwk()]), json!([signer.jwk(), odd])] {
            let (verifier, _dir) = verifier_of(keys.clone()).unwrap_or_else(|error| {
                panic!("{keys}: {error}");
            });
            assert!(
                verify(&verifier, &signer.token(&signer.header(), &claims())).is_ok(),
                "{keys}"
            );
        }
    }
    // A key that repeats a member is one of them: skipped, whichever copy a parser believes.
    let repeated = format!(
        r#"{{"keys": [{{"kty":"EC","crv":"P-256","kid":"k1","kid":"k2","x":"{x}","y":"{y}"}}]}}"#,
        x = signer.jwk()["x"].as_str().unwrap(),
        y = signer.jwk()["y"].as_str().unwrap(),
    );
    assert_eq!(
        jwks::KeySet::parse(repeated.as_bytes()).err(),
        Some(OAuthError::JwksInvalid)
    );
    for not_a_set in [
        r#"{"keys": {}}"#,
        r#"{"keys": [], "keys": []}"#,
        "[]",
        r#"{"keys": 1}"#,
    ] {
        assert_eq!(
            jwks::KeySet::parse(not_a_set.as_bytes()).err(),
            Some(OAuthError::JwksInvalid),
            "{not_a_set}"
        );
    }
}

/// Red team: the fixed word logged for a refused token named the wrong check for a part
/// that is not base64url (logged `Claims`, though no claim was read: the token is not three
/// base64url parts, `Header`) and for a held key that cannot verify the algorithm at all (an
/// EC point of another curve's size: `Claims`, though it is no key for it, `UnknownKey`).
#[test]
fn the_logged_rejection_names_the_check_that_failed() {
    let signer = Signer::new("k1");
    let (verifier, _dir) = verifier(&signer);
    let token = signer.token(&signer.header(), &claims());
    let (message, _) = token.rsplit_once('.').unwrap();
    for signature in ["@@@@", "AAA=", "A", "AB+/", "AB CD"] {
        assert_eq!(
            verify(&verifier, &format!("{message}.{signature}")).unwrap_err(),
            Rejection::Header,
            "{signature}"
        );
    }
    // Claims that are not base64url, signed as they are.
    let (header, _) = message.split_once('.').unwrap();
    let odd = format!("{header}.@@@@");
    let signature = signer
        .pair
        .sign(&SystemRandom::new(), odd.as_bytes())
        .unwrap();
    let signed = format!("{odd}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()));
    assert_eq!(verify(&verifier, &signed).unwrap_err(), Rejection::Header);
    let (verifier, _dir) = verifier_of(json!([
        {"kty": "EC", "crv": "P-256", "kid": "wide", "x": URL_SAFE_NO_PAD.encode([7u8; 48]),
         "y": URL_SAFE_NO_PAD.encode([9u8; 48])},
    ]))
    .unwrap();
    let header = json!({"alg": "ES256", "kid": "wide"});
    assert_eq!(
        verify(&verifier, &signer.token(&header, &claims())).unwrap_err(),
        Rejection::UnknownKey
    );
}

/// Red team: a JWT the issuer typed as something else (a back-channel logout token, a
/// security event, a DPoP proof) was taken for an access token when its claims fit.
#[test]
fn only_an_access_tokens_typ_is_accepted() {
    let signer = Signer::new("k1");
    let (verifier, _dir) = verifier(&signer);
    let typed = |typ: Value| {
        let header = json!({"alg": "ES256", "kid": "k1", "typ": typ});
        verify(&verifier, &signer.token(&header, &claims()))
    };
    for typ in [
        "logout+jwt",
        "secevent+jwt",
        "dpop+jwt",
        "application/",
        "at+jwt ",
        "x/at+jwt",
        "",
    ] {
        assert_eq!(typed(json!(typ)).unwrap_err(), Rejection::Header, "{typ}");
    }
    for typ in ["at+jwt", "Application/AT+JWT", "JWT", "application/jwt"] {
        assert!(typed(json!(typ)).is_ok(), "{typ}");
    }
    assert!(typed(Value::Null).is_ok());
}
