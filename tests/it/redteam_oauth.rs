//! Red team of the OAuth resource server (`--oauth-…`): the real binary attacked as a
//! hostile remote client would (forged, confused and oddly shaped tokens, claims built to be
//! read two ways, scopes that are substrings of others, hostile `Host` headers, another
//! subject's session id) and as a hostile identity provider's JWKS endpoint would (redirects,
//! a drip, an endless body, a flood of unknown `kid`s). Each case asserts the exact status and
//! `WWW-Authenticate`; what held is kept as a regression guard.
//!
//! What broke, each with its regression test at the end of the file: a client hanging up
//! cancelled the JWKS fetch it started while spending the refetch interval (rotated keys
//! never learned); one unreadable key made the whole JWKS unreadable; a key for encryption
//! only (`key_ops`) verified tokens; a JWT typed as something else (`logout+jwt`) was served
//! as an access token; refusals were logged with the wrong word.
//!
//! The test authorization server, its keys and its JWKS endpoint are `http_oauth`'s.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use serde_json::{Value, json};

use crate::http_oauth::{
    ISSUER, Issuer, JwksServer, METADATA_URL, RESOURCE, STATIC_TOKEN, assert_invalid, bearer, call,
    challenge, claims, invalid_token, list, now, ok_json, rand_u64, serve, sign,
};
use crate::support::http::{HttpServer, Reply, exchange, modern, post, scratch_manifest};
use crate::support::stdio::{self, REPLY_TIMEOUT};

/// `base64url(header).base64url(claims)` signed RS256 by the issuer's RSA key, the header
/// and claims given as text (so that they may repeat a key).
fn rs256_raw(issuer: &Issuer, header: &str, claims: impl AsRef<[u8]>) -> String {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let signature = rsa_signature(issuer, &ring::signature::RSA_PKCS1_SHA256, &message);
    format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
}

fn rsa_signature(
    issuer: &Issuer,
    scheme: &'static dyn ring::signature::RsaEncoding,
    message: &str,
) -> Vec<u8> {
    let mut signature = vec![0; issuer.rsa.public().modulus_len()];
    issuer
        .rsa
        .sign(
            scheme,
            &SystemRandom::new(),
            message.as_bytes(),
            &mut signature,
        )
        .unwrap();
    signature
}

/// A token with `header`, signed RS256 by the issuer's RSA key whatever the header says.
fn rs256_with(issuer: &Issuer, header: &Value, claims: &Value) -> String {
    rs256_raw(issuer, &header.to_string(), claims.to_string())
}

/// A token with `header`, signed ES256 by the issuer's P-256 key whatever the header says.
fn es256_with(issuer: &Issuer, header: &Value, claims: &Value) -> String {
    sign(header, claims, |message| {
        issuer
            .ec
            .sign(&SystemRandom::new(), message)
            .unwrap()
            .as_ref()
            .to_vec()
    })
}

/// A token with `header` and `claims` and the given signature bytes.
fn with_signature(header: &Value, claims: &Value, signature: &[u8]) -> String {
    sign(header, claims, |_| signature.to_vec())
}

/// A modern `tools/list` whose `Authorization` header is `value` exactly.
fn list_with_authorization(addr: SocketAddr, value: &str) -> Reply {
    modern(
        addr,
        1,
        "tools/list",
        json!({}),
        &[("Authorization", value)],
    )
}

/// Every reply shows only the fixed challenge and the fixed body: nothing the client sent.
fn assert_nothing_echoed(reply: &Reply, sent: &str, what: &str) {
    let body = String::from_utf8_lossy(&reply.body);
    for (name, value) in &reply.headers {
        assert!(
            sent.len() < 8 || !value.contains(sent),
            "{what}: header {name} echoes the token"
        );
    }
    assert!(
        sent.len() < 8 || !body.contains(sent),
        "{what}: the body echoes the token"
    );
}

/// Algorithm confusion in every spelling, and keys or key references carried by the token
/// itself: all `401 invalid_token`, and no URL a token names is ever fetched.
#[test]
fn forged_and_confused_tokens_are_refused_and_their_key_urls_never_fetched() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let good_claims = claims("alice", "echo:run");
    // A listener a `jku`/`x5u` points at: airlock must never connect to it.
    let bait = TcpListener::bind("127.0.0.1:0").unwrap();
    bait.set_nonblocking(true).unwrap();
    let bait_url = format!("http://{}/keys", bait.local_addr().unwrap());

    let public: ring::rsa::PublicKeyComponents<Vec<u8>> = issuer.rsa.public().into();
    let hmac_with = |alg: &str, secret: &[u8]| {
        let algorithm = match alg {
            "HS256" => ring::hmac::HMAC_SHA256,
            "HS384" => ring::hmac::HMAC_SHA384,
            _ => ring::hmac::HMAC_SHA512,
        };
        let key = ring::hmac::Key::new(algorithm, secret);
        let header = json!({"alg": alg, "typ": "at+jwt", "kid": "rsa-1"});
        sign(&header, &good_claims, |message| {
            ring::hmac::sign(&key, message).as_ref().to_vec()
        })
    };
    let ec_point = ring::signature::KeyPair::public_key(&issuer.ec)
        .as_ref()
        .to_vec();
    let mut cases: Vec<(String, String)> = Vec::new();
    for alg in ["none", "None", "nOnE", "NONE", ""] {
        let header = json!({"alg": alg, "kid": "rsa-1"});
        let unsigned = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(good_claims.to_string())
        );
        cases.push((format!("alg {alg:?}, no signature"), unsigned));
        // `none` with the real RSA signature of the same bytes.
        cases.push((
            format!("alg {alg:?}, an RS256 signature"),
            rs256_with(&issuer, &header, &good_claims),
        ));
    }
    cases.push((
        "no alg at all".to_owned(),
        rs256_with(&issuer, &json!({"kid": "rsa-1"}), &good_claims),
    ));
    for alg in ["HS256", "HS384", "HS512"] {
        for (form, secret) in [
            ("DER", issuer.rsa.public().as_ref().to_vec()),
            ("modulus", public.n.clone()),
            ("JWK", issuer.rsa_jwk("rsa-1").to_string().into_bytes()),
            ("EC point", ec_point.clone()),
            ("empty", Vec::new()),
        ] {
            cases.push((format!("{alg} with the {form}"), hmac_with(alg, &secret)));
        }
    }
    // ES384 and ES512 naming the P-256 key (a curve mismatch), PS256 with the RS256 key's
    // PKCS#1 signature, EdDSA, an RSA signature under the EC key's kid.
    for alg in ["ES384", "ES512"] {
        cases.push((
            format!("{alg} on the P-256 key"),
            es256_with(&issuer, &json!({"alg": alg, "kid": "ec-1"}), &good_claims),
        ));
    }
    cases.push((
        "PS256 header, PKCS#1 signature".to_owned(),
        rs256_with(
            &issuer,
            &json!({"alg": "PS256", "kid": "rsa-1"}),
            &good_claims,
        ),
    ));
    cases.push((
        "EdDSA".to_owned(),
        es256_with(
            &issuer,
            &json!({"alg": "EdDSA", "kid": "ec-1"}),
            &good_claims,
        ),
    ));
    cases.push((
        "RS256 on the EC key's kid, no kid".to_owned(),
        rs256_with(&issuer, &json!({"alg": "ES256"}), &good_claims),
    ));
    // ECDSA with r = s = 0 (CVE-2022-21449), with r = s = n, and an empty signature.
    let es_header = json!({"alg": "ES256", "kid": "ec-1"});
    cases.push((
        "ES256 r = s = 0".to_owned(),
        with_signature(&es_header, &good_claims, &[0u8; 64]),
    ));
    let order = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
    cases.push((
        "ES256 r = s = n".to_owned(),
        with_signature(&es_header, &good_claims, &[order.clone(), order].concat()),
    ));
    cases.push((
        "ES256 empty signature".to_owned(),
        with_signature(&es_header, &good_claims, &[]),
    ));
    // The attacker's own key, carried in the token under a held kid, and key URLs.
    let attacker = {
        let rng = SystemRandom::new();
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &rng,
        )
        .unwrap();
        ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8.as_ref(),
            &rng,
        )
        .unwrap()
    };
    let attacker_point = ring::signature::KeyPair::public_key(&attacker)
        .as_ref()
        .to_vec();
    let attacker_jwk = json!({"kty": "EC", "crv": "P-256", "kid": "ec-1",
        "x": URL_SAFE_NO_PAD.encode(&attacker_point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&attacker_point[33..65])});
    let by_attacker = |header: &Value| {
        sign(header, &good_claims, |message| {
            attacker
                .sign(&SystemRandom::new(), message)
                .unwrap()
                .as_ref()
                .to_vec()
        })
    };
    for (what, header) in [
        (
            "jwk",
            json!({"alg": "ES256", "kid": "ec-1", "jwk": attacker_jwk}),
        ),
        ("jwk, no kid", json!({"alg": "ES256", "jwk": attacker_jwk})),
        (
            "jku",
            json!({"alg": "ES256", "kid": "ec-1", "jku": bait_url}),
        ),
        (
            "jku, unknown kid",
            json!({"alg": "ES256", "kid": "attacker", "jku": bait_url}),
        ),
        (
            "x5u",
            json!({"alg": "ES256", "kid": "attacker-2", "x5u": bait_url}),
        ),
        (
            "x5c",
            json!({"alg": "ES256", "kid": "ec-1", "x5c": [STANDARD.encode(b"not a certificate")]}),
        ),
    ] {
        cases.push((
            format!("the attacker's key by {what}"),
            by_attacker(&header),
        ));
    }
    // `crit` naming what airlock does not understand, or empty; `b64: false` (RFC 7797).
    for header in [
        json!({"alg": "RS256", "kid": "rsa-1", "crit": ["exp"]}),
        json!({"alg": "RS256", "kid": "rsa-1", "crit": ["x-custom"], "x-custom": true}),
        json!({"alg": "RS256", "kid": "rsa-1", "crit": []}),
        json!({"alg": "RS256", "kid": "rsa-1", "crit": ["b64"], "b64": false}),
        json!({"alg": "RS256", "kid": "rsa-1", "crit": ["b64", "b64"], "b64": true}),
        json!({"alg": "RS256", "kid": "rsa-1", "b64": false}),
        json!({"alg": "RS256", "kid": "rsa-1", "crit": "b64"}),
    ] {
        cases.push((
            format!("crit/b64 {header}"),
            rs256_with(&issuer, &header, &good_claims),
        ));
    }
    // Odd `kid`s (never a path, never a query, never logged), each signed by the real key.
    for kid in [
        "../../../../etc/passwd".to_owned(),
        "rsa-1/../rsa-1".to_owned(),
        "rsa-1\u{0}".to_owned(),
        "rsa-1\n".to_owned(),
        "\u{1b}[31mrsa-1".to_owned(),
        "' OR '1'='1".to_owned(),
        "RSA-1".to_owned(),
        " rsa-1".to_owned(),
        "k".repeat(5000),
    ] {
        let header = json!({"alg": "RS256", "kid": kid});
        cases.push((
            format!("kid {:?}", kid.get(..20).unwrap_or(&kid)),
            rs256_with(&issuer, &header, &good_claims),
        ));
    }
    // A kid that is not a string, and headers that repeat a member: whichever copy a
    // parser believes, the token is refused.
    cases.push((
        "numeric kid".to_owned(),
        rs256_with(&issuer, &json!({"alg": "RS256", "kid": 1}), &good_claims),
    ));
    let claims_text = good_claims.to_string();
    for header in [
        r#"{"alg":"HS256","alg":"RS256","kid":"rsa-1"}"#,
        r#"{"alg":"RS256","alg":"RS256","kid":"rsa-1"}"#,
        r#"{"alg":"RS256","kid":"nope","kid":"rsa-1"}"#,
        r#"{"alg":"RS256","kid":"rsa-1","kid":"rsa-1"}"#,
        r#"{"alg":"RS256","kid":"rsa-1","crit":["b64"],"b64":true,"b64":false}"#,
    ] {
        cases.push((
            format!("repeated header member {header}"),
            rs256_raw(&issuer, header, &claims_text),
        ));
    }

    let good = issuer.rs256("rsa-1", &good_claims);
    for (index, (what, token)) in cases.iter().enumerate() {
        let reply = list(addr, token);
        assert_invalid(&reply, what);
        assert_nothing_echoed(&reply, token, what);
        // A valid request now and then: the address's garbage run never reaches the cut-off.
        if index % 50 == 49 {
            assert_eq!(list(addr, &good).status, 200);
        }
    }
    assert!(
        matches!(bait.accept(), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "a URL named by a token was fetched"
    );
    // The JWKS itself was fetched at start, and at most once for all the unknown kids.
    assert!(jwks.fetches() <= 2, "{} fetches", jwks.fetches());
    assert_eq!(list(addr, &good).status, 200);
    std::fs::remove_dir_all(dir).unwrap();
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap())
        .collect()
}

/// The shape of the token and of its `Authorization` header: anything but exactly
/// `Bearer <header>.<claims>.<signature>` in unpadded base64url is refused (the scheme's case
/// is free, RFC 9110 §11.1).
#[test]
fn tokens_and_headers_of_any_other_shape_are_refused() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let good = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
    let parts: Vec<&str> = good.split('.').collect();
    let (h, c, s) = (parts[0], parts[1], parts[2]);
    let decoded = |part: &str| URL_SAFE_NO_PAD.decode(part).unwrap();
    let padded = |part: &str| URL_SAFE.encode(decoded(part));
    let standard = |part: &str| STANDARD.encode(decoded(part));
    // Signed over its own (odd) encoding, so only the shape can fail it.
    let signed_padded = {
        let message = format!("{}.{}", padded(h), padded(c));
        let signature = rsa_signature(&issuer, &ring::signature::RSA_PKCS1_SHA256, &message);
        format!("{message}.{}", URL_SAFE.encode(signature))
    };
    let signed_with_space = {
        let message = format!("{h} .{c}");
        let signature = rsa_signature(&issuer, &ring::signature::RSA_PKCS1_SHA256, &message);
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
    };
    let shapes = [
        ("two parts", format!("{h}.{c}")),
        ("four parts", format!("{h}.{c}.{s}.{s}")),
        ("five parts (a JWE's shape)", format!("{h}.{c}.{s}.{s}.{s}")),
        ("JWE-like with empty parts", format!("{h}...{s}.")),
        ("empty parts", "..".to_owned()),
        ("empty signature", format!("{h}.{c}.")),
        ("empty claims", format!("{h}..{s}")),
        ("empty header", format!(".{c}.{s}")),
        ("a leading dot", format!(".{good}")),
        ("a trailing dot", format!("{good}.")),
        ("padded signature", format!("{h}.{c}.{}", padded(s))),
        ("padded header", format!("{}.{c}.{s}", padded(h))),
        (
            "standard alphabet",
            format!("{}.{}.{}", standard(h), standard(c), standard(s)),
        ),
        ("signed over padded parts", signed_padded),
        ("signed with a space in it", signed_with_space),
        ("a space inside", format!("{h}.{c} .{s}")),
        ("a tab inside", format!("{h}.{c}\t.{s}")),
        (
            "quotes and a fake parameter",
            format!(r#"{good}", error="none"#),
        ),
        (
            "percent-encoded",
            good.replace('-', "%2D").replace('_', "%5F"),
        ),
        ("a comma and another token", format!("{good}, {good}")),
    ];
    for (what, token) in &shapes {
        let reply = list(addr, token);
        assert_invalid(&reply, what);
        assert_nothing_echoed(&reply, token, what);
    }
    // The header around the token: a malformed Bearer credential is invalid_token; another
    // scheme (or none) is no Bearer credential, told no error code (RFC 6750 §3.1); one or
    // more spaces after the scheme are one credential (§2.1).
    for value in [
        format!("Bearer {good} extra"),
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
    ] {
        let reply = list_with_authorization(addr, &value);
        assert_invalid(&reply, &value);
    }
    for value in [
        format!("Bearer\t{good}"),
        format!("Bearer{good}"),
        format!("Token {good}"),
        format!("Basic {}", STANDARD.encode(format!("alice:{good}"))),
        format!("Bearer: {good}"),
        format!("DPoP {good}"),
    ] {
        let reply = list_with_authorization(addr, &value);
        assert_eq!(reply.status, 401, "{value}");
        assert_eq!(
            reply.header("www-authenticate"),
            Some(crate::http_oauth::challenge().as_str()),
            "{value}"
        );
    }
    assert_eq!(
        list_with_authorization(addr, &format!("Bearer  {good}")).status,
        200
    );
    // A token anywhere but the header (the query, RFC 6750 §2.3, which MCP forbids; a form
    // body, §2.2; a cookie) is not read: the challenge of a request that presented none.
    let body = stdio::request(1, "tools/list", json!({}));
    for (target, extra) in [
        (format!("/mcp?access_token={good}"), String::new()),
        (
            "/mcp".to_owned(),
            format!("Cookie: access_token={good}\r\n"),
        ),
        ("/mcp".to_owned(), format!("X-Access-Token: {good}\r\n")),
    ] {
        let request = format!(
            "POST {target} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{extra}Connection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let reply = exchange(addr, request.as_bytes());
        assert_eq!(reply.status, 401, "{target} {extra}");
        assert_eq!(reply.header("www-authenticate"), Some(challenge().as_str()));
    }
    let form = format!("access_token={good}");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    );
    let reply = exchange(addr, request.as_bytes());
    assert_eq!(reply.status, 401);
    assert_eq!(reply.header("www-authenticate"), Some(challenge().as_str()));
    // The scheme in any case; whitespace around the value is not part of it (RFC 9110 §5.5).
    for value in [
        format!("bearer {good}"),
        format!("BEARER {good}"),
        format!("bEaReR {good}"),
        format!("Bearer {good}   "),
    ] {
        assert_eq!(list_with_authorization(addr, &value).status, 200, "{value}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Claims read two ways, or out of their type or range: every one refused but the few RFC
/// 7519 allows (a fractional NumericDate, an `aud` list holding the resource).
#[test]
fn claim_tricks_are_refused() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = claims("alice", "echo:run");
        change(&mut claims);
        issuer.rs256("rsa-1", &claims)
    };
    let remove = |name: &'static str| {
        move |c: &mut Value| {
            c.as_object_mut().unwrap().remove(name);
        }
    };
    let many_audiences: Vec<String> = (0..400).map(|i| format!("https://a{i}.test")).collect();
    let mut many_with_ours = vec![RESOURCE.to_owned()];
    many_with_ours.extend((0..120).map(|i| format!("https://a{i}.test")));
    let refused: Vec<(&str, String)> = vec![
        (
            "exp a string",
            with(&|c| c["exp"] = json!((now() + 300).to_string())),
        ),
        ("exp 1e400", {
            let text = claims("alice", "echo:run")
                .to_string()
                .replace(&format!("\"exp\":{}", now() + 300), "\"exp\":1e400");
            assert!(text.contains("1e400"), "the claims kept their order");
            rs256_raw(&issuer, r#"{"alg":"RS256","kid":"rsa-1"}"#, &text)
        }),
        ("exp negative", with(&|c| c["exp"] = json!(-1))),
        ("exp -1e30", with(&|c| c["exp"] = json!(-1e30))),
        ("exp null", with(&|c| c["exp"] = Value::Null)),
        ("exp true", with(&|c| c["exp"] = json!(true))),
        ("exp a list", with(&|c| c["exp"] = json!([now() + 300]))),
        ("exp an object", with(&|c| c["exp"] = json!({"$gt": 0}))),
        ("exp missing", with(&remove("exp"))),
        ("exp 0", with(&|c| c["exp"] = json!(0))),
        (
            "exp past the leeway",
            with(&|c| c["exp"] = json!(now() - 32)),
        ),
        (
            "nbf past the leeway",
            with(&|c| c["nbf"] = json!(now() + 32)),
        ),
        (
            "nbf a string",
            with(&|c| c["nbf"] = json!(now().to_string())),
        ),
        ("nbf null", with(&|c| c["nbf"] = Value::Null)),
        ("nbf 1e400", {
            let text = claims("alice", "echo:run")
                .to_string()
                .replacen('{', "{\"nbf\":1e400,", 1);
            rs256_raw(&issuer, r#"{"alg":"RS256","kid":"rsa-1"}"#, &text)
        }),
        ("iss missing", with(&remove("iss"))),
        (
            "iss with a trailing slash",
            with(&|c| c["iss"] = json!(format!("{ISSUER}/"))),
        ),
        (
            "iss in capitals",
            with(&|c| c["iss"] = json!(ISSUER.to_uppercase())),
        ),
        ("iss a list of it", with(&|c| c["iss"] = json!([ISSUER]))),
        (
            "iss a list with it",
            with(&|c| c["iss"] = json!([ISSUER, "https://evil.test"])),
        ),
        ("iss null", with(&|c| c["iss"] = Value::Null)),
        ("iss empty", with(&|c| c["iss"] = json!(""))),
        ("aud missing", with(&remove("aud"))),
        (
            "aud with a trailing slash",
            with(&|c| c["aud"] = json!(format!("{RESOURCE}/"))),
        ),
        (
            "aud the origin",
            with(&|c| c["aud"] = json!("https://airlock.test")),
        ),
        (
            "aud in capitals",
            with(&|c| c["aud"] = json!(RESOURCE.to_uppercase())),
        ),
        (
            "aud a prefix",
            with(&|c| c["aud"] = json!("https://airlock.test/mc")),
        ),
        (
            "aud longer",
            with(&|c| c["aud"] = json!(format!("{RESOURCE}x"))),
        ),
        ("aud empty list", with(&|c| c["aud"] = json!([]))),
        (
            "aud list without it",
            with(&|c| c["aud"] = json!(["https://x.test", "https://y.test"])),
        ),
        (
            "aud list of non-strings",
            with(&|c| c["aud"] = json!([1, RESOURCE])),
        ),
        (
            "aud an object",
            with(&|c| c["aud"] = json!({RESOURCE: true})),
        ),
        ("aud null", with(&|c| c["aud"] = Value::Null)),
        (
            "aud of 400 (past 8 KiB)",
            with(&|c| c["aud"] = json!(many_audiences)),
        ),
        ("sub missing", with(&remove("sub"))),
        ("sub null", with(&|c| c["sub"] = Value::Null)),
        (
            "sub 129 bytes",
            with(&|c| c["sub"] = json!("a".repeat(129))),
        ),
        ("sub 4 KiB", with(&|c| c["sub"] = json!("a".repeat(4096)))),
        (
            "sub a newline",
            with(&|c| c["sub"] = json!("alice\nlevel=ERROR forged")),
        ),
        ("sub a CR", with(&|c| c["sub"] = json!("alice\r"))),
        ("sub ANSI", with(&|c| c["sub"] = json!("\u{1b}[31malice"))),
        ("sub NUL", with(&|c| c["sub"] = json!("alice\u{0}"))),
        ("sub DEL", with(&|c| c["sub"] = json!("alice\u{7f}"))),
        ("sub non-ASCII", with(&|c| c["sub"] = json!("alіce"))),
        ("sub a space", with(&|c| c["sub"] = json!("alice bob"))),
        ("sub a hash", with(&|c| c["sub"] = json!("alice#it-agent"))),
        ("sub a quote", with(&|c| c["sub"] = json!("alice\""))),
        ("sub a backslash", with(&|c| c["sub"] = json!("alice\\"))),
        ("sub a list", with(&|c| c["sub"] = json!(["alice"]))),
        (
            "client_id a newline",
            with(&|c| c["client_id"] = json!("agent\n")),
        ),
        ("client_id empty", with(&|c| c["client_id"] = json!(""))),
        ("client_id a number", with(&|c| c["client_id"] = json!(7))),
        (
            "azp ANSI, no client_id",
            with(&|c| {
                c.as_object_mut().unwrap().remove("client_id");
                c["azp"] = json!("\u{1b}[0m");
            }),
        ),
        ("scope a list", with(&|c| c["scope"] = json!(["echo:run"]))),
        (
            "scope a tab",
            with(&|c| c["scope"] = json!("echo:run\textra")),
        ),
        (
            "scope a newline",
            with(&|c| c["scope"] = json!("echo:run\nextra")),
        ),
        (
            "scope a NUL",
            with(&|c| c["scope"] = json!("echo:run\u{0}")),
        ),
        (
            "scope a quote",
            with(&|c| c["scope"] = json!("echo:run \"")),
        ),
        (
            "scope non-ASCII",
            with(&|c| c["scope"] = json!("echo:run écho")),
        ),
        (
            "scp a list holding a space",
            with(&|c| {
                c.as_object_mut().unwrap().remove("scope");
                c["scp"] = json!(["echo:run extra"]);
            }),
        ),
        (
            "scp a list holding a non-string",
            with(&|c| {
                c.as_object_mut().unwrap().remove("scope");
                c["scp"] = json!(["echo:run", 1]);
            }),
        ),
        (
            "65 scopes",
            with(&|c| {
                let many: Vec<String> = (0..65).map(|i| format!("s{i}")).collect();
                c["scope"] = json!(many.join(" "));
            }),
        ),
        (
            "a 129-byte scope",
            with(&|c| c["scope"] = json!("s".repeat(129))),
        ),
    ];
    let claims_text = |exp_first: i64, exp_second: i64| {
        format!(
            r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"alice","exp":{exp_first},"exp":{exp_second}}}"#
        )
    };
    let header = r#"{"alg":"RS256","kid":"rsa-1"}"#;
    let repeated = [
        (
            "exp twice, past first",
            claims_text(now() - 3600, now() + 3600),
        ),
        (
            "exp twice, past last",
            claims_text(now() + 3600, now() - 3600),
        ),
        (
            "sub twice",
            format!(
                r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"alice","sub":"bob","exp":{}}}"#,
                now() + 300
            ),
        ),
        (
            "iss twice",
            format!(
                r#"{{"iss":"https://evil.test","iss":"{ISSUER}","aud":"{RESOURCE}","sub":"a","exp":{}}}"#,
                now() + 300
            ),
        ),
        (
            "aud twice",
            format!(
                r#"{{"iss":"{ISSUER}","aud":"https://x.test","aud":"{RESOURCE}","sub":"a","exp":{}}}"#,
                now() + 300
            ),
        ),
        (
            "scope twice",
            format!(
                r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"a","exp":{},"scope":"","scope":"echo:run"}}"#,
                now() + 300
            ),
        ),
        (
            "client_id twice",
            format!(
                r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"a","exp":{},"client_id":"x","client_id":"y"}}"#,
                now() + 300
            ),
        ),
        (
            "nbf twice",
            format!(
                r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"a","exp":{},"nbf":0,"nbf":{}}}"#,
                now() + 300,
                now() + 3600
            ),
        ),
        ("claims not an object", format!("[{}]", claims("alice", ""))),
        ("claims a string", "\"alice\"".to_owned()),
        (
            "claims with trailing bytes",
            format!("{} x", claims("alice", "")),
        ),
    ];
    let mut all = refused;
    for (what, text) in &repeated {
        all.push((*what, rs256_raw(&issuer, header, text)));
    }
    let not_utf8 = format!(r#"{{"iss":"{ISSUER}","aud":"{RESOURCE}","sub":"a"#);
    let not_utf8 = [not_utf8.as_bytes(), b"\xff\"}"].concat();
    all.push(("claims not UTF-8", rs256_raw(&issuer, header, not_utf8)));
    let good = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
    for (index, (what, token)) in all.iter().enumerate() {
        let reply = list(addr, token);
        assert_invalid(&reply, what);
        if index % 50 == 49 {
            assert_eq!(list(addr, &good).status, 200);
        }
    }
    // Allowed by RFC 7519: a NumericDate with a fraction; an `aud` list holding the resource
    // among others; `nbf` and `exp` inside the 30 s leeway.
    for (what, token) in [
        (
            "a fractional exp",
            with(&|c| c["exp"] = json!(now() as f64 + 300.5)),
        ),
        (
            "aud a list holding it",
            with(&|c| c["aud"] = json!(["https://x.test", RESOURCE])),
        ),
        (
            "aud 121 entries holding it",
            with(&|c| c["aud"] = json!(many_with_ours)),
        ),
        (
            "nbf inside the leeway",
            with(&|c| c["nbf"] = json!(now() + 28)),
        ),
        (
            "exp inside the leeway",
            with(&|c| c["exp"] = json!(now() - 28)),
        ),
    ] {
        assert_eq!(list(addr, &token).status, 200, "{what}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A scope is a whole token of the space-separated list: never a substring, a prefix, another
/// case, or part of a list element.
#[test]
fn scopes_are_matched_whole_never_as_substrings() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let token = |scope: Option<&str>, scp: Option<Value>| {
        let mut claims = claims("carol", "");
        let object = claims.as_object_mut().unwrap();
        object.remove("scope");
        if let Some(scope) = scope {
            object.insert("scope".into(), json!(scope));
        }
        if let Some(scp) = scp {
            object.insert("scp".into(), scp);
        }
        issuer.rs256("rsa-1", &claims)
    };
    let insufficient = format!(
        r#"Bearer error="insufficient_scope", scope="echo:run", resource_metadata="{METADATA_URL}""#
    );
    for (what, scope, scp) in [
        ("a longer scope", Some("echo:runx"), None),
        ("a prefix", Some("echo:ru"), None),
        ("its first half", Some("echo"), None),
        ("in capitals", Some("ECHO:RUN"), None),
        ("a comma list", Some("echo:run,hello"), None),
        ("a semicolon list", Some("echo:run;x"), None),
        ("prefixed", Some("xecho:run"), None),
        ("a wildcard", Some("*"), None),
        ("echo:*", Some("echo:*"), None),
        ("nothing", None, None),
        ("empty", Some(""), None),
        ("spaces only", Some("   "), None),
        // `scope` wins over `scp`, even empty.
        (
            "empty scope, scp holding it",
            Some(""),
            Some(json!(["echo:run"])),
        ),
        ("scp a longer scope", None, Some(json!(["echo:runx"]))),
    ] {
        let reply = call(addr, &token(scope, scp), "echo");
        assert_eq!(reply.status, 403, "{what}: {reply:?}");
        assert_eq!(
            reply.header("www-authenticate"),
            Some(insufficient.as_str()),
            "{what}"
        );
    }
    for (what, scope, scp) in [
        ("exactly", Some("echo:run"), None),
        ("among others", Some("files:read echo:run admin"), None),
        ("with extra spaces", Some("  echo:run  "), None),
        ("scp a list", None, Some(json!(["echo:run"]))),
        ("scp a string", None, Some(json!("hello echo:run"))),
    ] {
        let reply = call(addr, &token(scope, scp), "echo");
        assert_eq!(reply.status, 200, "{what}: {reply:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `MANIFEST` of `http_oauth` plus a tool that prints its whole environment and one that
/// prints its arguments: what a token could reach if it leaked into a command.
const LEAK_MANIFEST: &str = r#"
[server]
name = "oauth-leak"

[[tool]]
name = "env"
description = "Prints its environment."
command = ["env"]

[[tool]]
name = "args"
description = "Prints its arguments."
command = ["echo", "{text}"]
scopes = ["echo:run"]
args.text = { type = "string", max_length = 100, description = "What to echo." }
"#;

/// airlock serving `manifest` with OAuth against the JWKS at `uri`, the static token too,
/// with `env` added to its environment.
fn serve_manifest(
    manifest: &str,
    uri: &str,
    env: &[(&str, &str)],
) -> (HttpServer, std::path::PathBuf) {
    let (dir, path) = scratch_manifest(&format!("rt-oauth-{}", rand_u64()), manifest);
    let mut all = vec![("IT_OAUTH_STATIC", STATIC_TOKEN)];
    all.extend_from_slice(env);
    let server = HttpServer::airlock(
        &[
            "--manifest",
            path.to_str().unwrap(),
            "--oauth-resource",
            RESOURCE,
            "--oauth-issuer",
            ISSUER,
            "--oauth-jwks-uri",
            uri,
            "--auth-token-env",
            "IT_OAUTH_STATIC",
        ],
        &all,
    );
    (server, dir)
}

/// At the most verbose log level, no part of any token (valid, refused, over the cap) is in
/// airlock's log, and a command tool sees neither the token nor its claims, in its
/// environment or its arguments.
#[test]
fn no_part_of_a_token_reaches_the_log_at_trace_or_a_command() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve_manifest(
        LEAK_MANIFEST,
        &jwks.uri(),
        &[("AIRLOCK_LOG", "trace"), ("RUST_LOG", "trace")],
    );
    let addr = server.addr;
    let mut secret_claims = claims("dave", "echo:run");
    secret_claims["marker"] = json!("claim-marker-7f3a9c");
    let good = issuer.rs256("rsa-1", &secret_claims);
    let expired = {
        let mut claims = secret_claims.clone();
        claims["exp"] = json!(now() - 3600);
        issuer.rs256("rsa-1", &claims)
    };
    let unknown = issuer.rs256("kid-marker-55e1", &secret_claims);
    let forged = format!("{}x", &good[..good.len() - 1]);
    let env = call(addr, &good, "env");
    assert_eq!(env.status, 200, "{env:?}");
    let printed = env.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let args = modern(
        addr,
        3,
        "tools/call",
        json!({"name": "args", "arguments": {"text": "plain"}}),
        &[("Authorization", &bearer(&good))],
    );
    assert_eq!(args.status, 200, "{args:?}");
    for token in [&expired, &unknown, &forged] {
        assert_invalid(&list(addr, token), "refused");
    }
    assert_eq!(
        crate::http_oauth::oversized(addr, &format!("{good}{}", "A".repeat(20_000))).status,
        431
    );
    assert_eq!(list(addr, &"A".repeat(9000)).status, 401);
    // The log holds what trace logs of the exchanges, and never a token's part.
    thread::sleep(Duration::from_millis(200));
    let log = server.log.lock().unwrap().join("\n");
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "not verbose:\n{log}"
    );
    let mut needles: Vec<String> = Vec::new();
    for token in [&good, &expired, &unknown, &forged] {
        needles.extend(
            token
                .split('.')
                .map(|part| part[..part.len().min(24)].to_owned()),
        );
    }
    needles.extend(["claim-marker-7f3a9c", "kid-marker-55e1", "eyJ", "Bearer "].map(str::to_owned));
    for needle in &needles {
        assert!(
            !log.contains(needle.as_str()),
            "{needle:?} is in the log:\n{log}"
        );
        assert!(
            !printed.contains(needle.as_str()),
            "{needle:?} reached the command's environment"
        );
    }
    // Each refusal is logged with the word of the check that failed (a signature that is
    // not base64url was once `Claims`, though no claim was read).
    for word in ["Expired", "UnknownKey", "TooLong"] {
        assert!(log.contains(&format!("rejection={word}")), "{word}:\n{log}");
    }
    assert!(!log.contains("rejection=Claims"), "{log}");
    assert!(!printed.contains("IT_OAUTH_STATIC"), "{printed}");
    assert!(!printed.contains(STATIC_TOKEN), "{printed}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The metadata and the challenges come from the configuration alone: a hostile `Host` is
/// refused before the document is served, and forwarded-host headers, an absolute-form
/// request target and odd paths change nothing in it.
#[test]
fn hostile_host_headers_never_reach_the_metadata_or_the_challenge() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let metadata_get = |target: &str, host: &str, extra: &str| {
        let request =
            format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n");
        exchange(addr, request.as_bytes())
    };
    let path = "/.well-known/oauth-protected-resource/mcp";
    let document = json!({"resource": RESOURCE, "authorization_servers": [ISSUER],
        "scopes_supported": ["echo:run"], "bearer_methods_supported": ["header"]});
    for host in [
        "evil.test",
        "airlock.test",
        "evil.test:80",
        "127.0.0.1.evil.test",
        "localhost@evil.test",
    ] {
        let reply = metadata_get(path, host, "");
        assert_eq!(reply.status, 421, "Host {host}");
        assert!(
            !String::from_utf8_lossy(&reply.body).contains("evil"),
            "{host}"
        );
        let refused = post(
            addr,
            &[("Host", host)],
            &stdio::request(1, "tools/list", json!({})),
        );
        // post() writes its own Host first; hyper sees two and refuses, or airlock's check.
        assert_ne!(refused.status, 200, "Host {host}");
        assert!(
            refused
                .header("www-authenticate")
                .is_none_or(|v| !v.contains("evil"))
        );
    }
    let host = addr.to_string();
    for (target, extra) in [
        (
            path.to_owned(),
            "X-Forwarded-Host: evil.test\r\nX-Forwarded-Proto: http\r\n".to_owned(),
        ),
        (
            path.to_owned(),
            "Forwarded: host=evil.test;proto=http\r\n".to_owned(),
        ),
        (format!("http://evil.test{path}"), String::new()),
        (format!("{path}?resource=https://evil.test"), String::new()),
        (
            "/.well-known/oauth-protected-resource".to_owned(),
            "X-Original-URL: /evil\r\n".to_owned(),
        ),
    ] {
        let reply = metadata_get(&target, &host, &extra);
        if reply.status == 200 {
            assert_eq!(reply.json(), document, "{target} {extra}");
        } else {
            assert_eq!(reply.status, 421, "{target} {extra}: {reply:?}");
        }
    }
    // Paths that are not the metadata's.
    for target in [
        "/.well-known/oauth-protected-resource/",
        "/.well-known/oauth-protected-resource/mcp/",
        "/.well-known/oauth-protected-resource/evil",
        "/.well-known/oauth-protected-resource/../oauth-protected-resource/mcp",
        "/.well-known/OAUTH-PROTECTED-RESOURCE/mcp",
        "/.well-known/oauth-authorization-server",
        "//.well-known/oauth-protected-resource/mcp",
    ] {
        assert_eq!(metadata_get(target, &host, "").status, 404, "{target}");
    }
    // The 401 challenge, whatever the request said.
    let body = stdio::request(1, "tools/list", json!({}));
    for extra in [
        vec![("X-Forwarded-Host", "evil.test")],
        vec![("Forwarded", "host=evil.test")],
        vec![(
            "Authorization",
            r#"Bearer x", resource_metadata="https://evil.test"#,
        )],
    ] {
        let reply = post(addr, &extra, &body);
        assert_eq!(reply.status, 401);
        let expected = if extra[0].0 == "Authorization" {
            invalid_token()
        } else {
            challenge()
        };
        assert_eq!(reply.header("www-authenticate"), Some(expected.as_str()));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A legacy session is its subject's: another subject (or client, or a static token, or a
/// subject named like the static token's variable) can neither use it, end it, nor listen on
/// it, and the owner carries on.
#[test]
fn another_subject_can_neither_use_end_nor_listen_on_a_session() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let alice = bearer(&issuer.rs256("rsa-1", &claims("alice", "echo:run")));
    let session = crate::support::http::initialize_with(addr, &[("Authorization", &alice)]);
    let static_session =
        crate::support::http::initialize_with(addr, &[("Authorization", &bearer(STATIC_TOKEN))]);
    let named_like_static = {
        let mut claims = claims("IT_OAUTH_STATIC", "echo:run");
        claims.as_object_mut().unwrap().remove("client_id");
        bearer(&issuer.rs256("rsa-1", &claims))
    };
    let others = [
        bearer(&issuer.rs256("rsa-1", &claims("bob", "echo:run"))),
        bearer(&issuer.rs256("rsa-1", &{
            let mut claims = claims("alice", "echo:run");
            claims.as_object_mut().unwrap().remove("client_id");
            claims
        })),
        bearer(&issuer.rs256("rsa-1", &{
            let mut claims = claims("alice", "echo:run");
            claims["client_id"] = json!("it-agent2");
            claims
        })),
        bearer(&issuer.rs256("rsa-1", &{
            let mut claims = claims("alice", "echo:run");
            claims.as_object_mut().unwrap().remove("client_id");
            claims["azp"] = json!("web-agent");
            claims
        })),
        bearer(STATIC_TOKEN),
    ];
    let request = |method: &str, auth: &str, id: &str| {
        let body = stdio::request(3, "tools/list", json!({}));
        let length = if method == "POST" { body.len() } else { 0 };
        let text = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\n\
             Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Connection: close\r\nContent-Length: {length}\r\n\r\n{}",
            if method == "POST" { body.as_str() } else { "" }
        );
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        stream.write_all(text.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let mut chunk = [0u8; 4096];
        // A GET stream that was accepted stays open: its head is enough.
        while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&chunk[..n]),
            }
        }
        String::from_utf8_lossy(&raw)
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .unwrap_or(0)
    };
    // A server of a manifest file reloads on SIGHUP, so a legacy session has a GET stream
    // (`notifications/tools/list_changed`): another subject's GET finds no session, as its
    // POST and DELETE do.
    for other in &others {
        for (method, refused) in [("POST", 404), ("GET", 404), ("DELETE", 404)] {
            assert_eq!(
                request(method, other, &session),
                refused,
                "{method} {other:.30}"
            );
        }
    }
    for (method, refused) in [("POST", 404), ("GET", 404), ("DELETE", 404)] {
        assert_eq!(
            request(method, &named_like_static, &static_session),
            refused,
            "{method}"
        );
    }
    assert_eq!(request("POST", &alice, &session), 200);
    assert_eq!(request("GET", &alice, &session), 200);
    assert_eq!(request("POST", &bearer(STATIC_TOKEN), &static_session), 200);
    // Its owner, with another token of its own, ends it.
    let alice_again = bearer(&issuer.es256("ec-1", &claims("alice", "")));
    assert_eq!(request("DELETE", &alice_again, &session), 204);
    assert_eq!(request("POST", &alice, &session), 404);
    std::fs::remove_dir_all(dir).unwrap();
}

/// How the hostile JWKS endpoint answers the fetches after the first (which serves the
/// issuer's keys, so that airlock starts).
#[derive(Clone)]
enum Answer {
    /// `status` with `extra` head lines and the body.
    Reply {
        status: &'static str,
        extra: String,
        body: Vec<u8>,
    },
    /// The reply's bytes one at a time, `every` apart, until airlock hangs up.
    Drip { bytes: Vec<u8>, every: Duration },
    /// `200`, chunked, `{"keys":[` and then whitespace chunks for as long as airlock reads.
    EndlessChunks,
    /// `200` with `keys` after `delay`, unless airlock hangs up first; says which on
    /// `outcome`.
    Slow {
        delay: Duration,
        keys: Value,
        outcome: mpsc::Sender<&'static str>,
    },
}

/// A JWKS endpoint on loopback that serves `first` once, then `then` for every fetch; counts
/// fetches and notes when airlock hung up on a drip.
struct HostileJwks {
    addr: SocketAddr,
    fetches: Arc<AtomicUsize>,
    /// Bytes airlock took of the answers after the first, all connections together.
    taken: Arc<AtomicUsize>,
}

impl HostileJwks {
    fn start(first: Value, then: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fetches = Arc::new(AtomicUsize::new(0));
        let taken = Arc::new(AtomicUsize::new(0));
        let (counter, taken_by) = (Arc::clone(&fetches), Arc::clone(&taken));
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let then = then.clone();
                let first = first.clone();
                let taken = Arc::clone(&taken_by);
                thread::spawn(move || {
                    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    if n == 0 {
                        let _sent = stream.write_all(ok_json(&first.to_string()).as_bytes());
                        return;
                    }
                    let count = |sent: usize| taken.fetch_add(sent, Ordering::SeqCst);
                    match then {
                        Answer::Reply {
                            status,
                            extra,
                            body,
                        } => {
                            let head = format!(
                                "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\n\
                                 Connection: close\r\n\r\n",
                                body.len()
                            );
                            if stream.write_all(head.as_bytes()).is_ok()
                                && stream.write_all(&body).is_ok()
                            {
                                count(head.len() + body.len());
                            }
                        }
                        Answer::Drip { bytes, every } => {
                            for byte in bytes {
                                if stream.write_all(&[byte]).is_err() {
                                    return;
                                }
                                count(1);
                                thread::sleep(every);
                            }
                        }
                        Answer::Slow {
                            delay,
                            keys,
                            outcome,
                        } => {
                            let until = std::time::Instant::now() + delay;
                            stream
                                .set_read_timeout(Some(Duration::from_millis(20)))
                                .unwrap();
                            while std::time::Instant::now() < until {
                                if matches!(stream.read(&mut byte), Ok(0)) {
                                    let _told = outcome.send("airlock hung up");
                                    return;
                                }
                            }
                            let reply = ok_json(&keys.to_string());
                            let sent = stream.write_all(reply.as_bytes());
                            count(reply.len());
                            let _told = outcome.send(if sent.is_ok() { "answered" } else { "cut" });
                        }
                        Answer::EndlessChunks => {
                            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                                        Transfer-Encoding: chunked\r\n\r\n9\r\n{\"keys\":[\r\n";
                            if stream.write_all(head.as_bytes()).is_err() {
                                return;
                            }
                            let chunk = format!("4000\r\n{}\r\n", " ".repeat(0x4000));
                            // At most 64 MiB: far past the cap, and an end if it is not kept.
                            for _ in 0..4096 {
                                if stream.write_all(chunk.as_bytes()).is_err() {
                                    return;
                                }
                                count(chunk.len());
                            }
                        }
                    }
                });
            }
        });
        Self {
            addr,
            fetches,
            taken,
        }
    }

    fn uri(&self) -> String {
        format!("http://{}/jwks", self.addr)
    }
}

/// A key set the issuer publishes after rotating: its keys plus `ec-2`.
fn rotated(issuer: &Issuer) -> Value {
    json!({"keys": [issuer.rsa_jwk("rsa-1"), issuer.ec_jwk("ec-1"), issuer.ec_jwk("ec-2")]})
}

/// Whatever a hostile JWKS endpoint answers to the fetch an unknown `kid` starts (a redirect
/// to a host serving the new key, another status, a body or head past the caps, an endless
/// chunked body), the new key is not learned from it, the fetch ends, and the held keys go on
/// verifying; a redirect is never followed.
#[test]
fn a_hostile_jwks_answer_is_never_taken_and_the_held_keys_are_kept() {
    let issuer = Issuer::new();
    let elsewhere = JwksServer::start(rotated(&issuer));
    let new_key_set = rotated(&issuer).to_string().into_bytes();
    let padded = |total: usize| {
        let mut body = new_key_set.clone();
        body.truncate(body.len() - 1);
        body.resize(total - 1, b' ');
        body.push(b'}');
        body
    };
    let cap = 64 * 1024;
    let reply = |status: &'static str, extra: String, body: Vec<u8>| Answer::Reply {
        status,
        extra,
        body,
    };
    // Controls first: the same setup learns the new key from a plain answer, and from one
    // exactly at the cap.
    let mut answers: Vec<(String, Answer)> = vec![
        (
            "control: the new key".to_owned(),
            reply("200 OK", String::new(), new_key_set.clone()),
        ),
        (
            "control: the new key at the 64 KiB cap".to_owned(),
            reply("200 OK", String::new(), padded(cap)),
        ),
    ];
    for status in [
        "301 Moved Permanently",
        "302 Found",
        "307 Temporary Redirect",
        "308 Permanent Redirect",
    ] {
        answers.push((
            format!("a {status} to a host serving the new key"),
            reply(
                status,
                format!("Location: {}\r\n", elsewhere.uri()),
                new_key_set.clone(),
            ),
        ));
    }
    for status in [
        "201 Created",
        "203 Non-Authoritative Information",
        "206 Partial Content",
        "500 Internal Server Error",
        "404 Not Found",
    ] {
        answers.push((
            format!("the new key with {status}"),
            reply(status, String::new(), new_key_set.clone()),
        ));
    }
    answers.push((
        "the new key past the 64 KiB cap".to_owned(),
        reply("200 OK", String::new(), padded(cap + 1)),
    ));
    answers.push((
        "a 1 MiB header".to_owned(),
        reply(
            "200 OK",
            format!("X-Pad: {}\r\n", "a".repeat(1024 * 1024)),
            new_key_set.clone(),
        ),
    ));
    answers.push((
        "10,000 headers".to_owned(),
        reply("200 OK", "X-Pad: a\r\n".repeat(10_000), new_key_set.clone()),
    ));
    answers.push((
        "gzip".to_owned(),
        reply(
            "200 OK",
            "Content-Encoding: gzip\r\n".to_owned(),
            b"\x1f\x8b\x08\x00garbage".to_vec(),
        ),
    ));
    answers.push(("an endless chunked body".to_owned(), Answer::EndlessChunks));
    answers.push((
        "the new key with an oct key of the same kid first".to_owned(),
        reply(
            "200 OK",
            String::new(),
            json!({"keys": [{"kty": "oct", "kid": "ec-2", "k": URL_SAFE_NO_PAD.encode(b"attacker secret")}]})
                .to_string()
                .into_bytes(),
        ),
    ));
    let servers: Vec<_> = answers
        .into_iter()
        .map(|(what, answer)| {
            let issuer_keys = issuer.jwks();
            thread::spawn(move || {
                let jwks = HostileJwks::start(issuer_keys, answer);
                (what, jwks)
            })
        })
        .map(|started| started.join().unwrap())
        .collect();
    let checks: Vec<_> = servers
        .into_iter()
        .map(|(what, jwks)| {
            let good = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
            let new = issuer.es256("ec-2", &claims("alice", "echo:run"));
            let hmac = {
                let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"attacker secret");
                sign(
                    &json!({"alg": "HS256", "kid": "ec-2"}),
                    &claims("alice", "echo:run"),
                    |m| ring::hmac::sign(&key, m).as_ref().to_vec(),
                )
            };
            thread::spawn(move || {
                let (server, dir) = serve_manifest(crate::http_oauth::MANIFEST, &jwks.uri(), &[]);
                assert_eq!(list(server.addr, &good).status, 200, "{what}");
                if what.starts_with("control") {
                    assert_eq!(list(server.addr, &new).status, 200, "{what}");
                } else {
                    assert_invalid(&list(server.addr, &new), &what);
                }
                assert_eq!(jwks.fetches.load(Ordering::SeqCst), 2, "{what}");
                assert_invalid(&list(server.addr, &hmac), &what);
                assert_eq!(list(server.addr, &good).status, 200, "{what}");
                assert!(
                    jwks.taken.load(Ordering::SeqCst) < 8 * 1024 * 1024,
                    "{what}: {} bytes taken",
                    jwks.taken.load(Ordering::SeqCst)
                );
                std::fs::remove_dir_all(dir).unwrap();
            })
        })
        .collect();
    for check in checks {
        check.join().unwrap();
    }
    assert_eq!(elsewhere.fetches(), 0, "a redirect was followed");
}

/// A JWKS that drips its answer (the new key in it) a byte at a time: the fetch is
/// abandoned at its time-out, long before the answer is whole; the request that waited for it
/// is refused, the held keys never waited.
#[test]
fn a_dripping_jwks_answer_is_abandoned_at_the_fetch_timeout() {
    let issuer = Issuer::new();
    let body = rotated(&issuer).to_string();
    let bytes = ok_json(&body).into_bytes();
    let jwks = HostileJwks::start(
        issuer.jwks(),
        Answer::Drip {
            bytes,
            every: Duration::from_millis(50),
        },
    );
    let (server, dir) = serve_manifest(crate::http_oauth::MANIFEST, &jwks.uri(), &[]);
    let addr = server.addr;
    let good = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
    let new = issuer.es256("ec-2", &claims("alice", "echo:run"));
    let waiting = thread::spawn(move || list(addr, &new));
    assert_eq!(list(addr, &good).status, 200);
    assert_invalid(&waiting.join().unwrap(), "drip");
    // 5 s at 20 bytes a second: about 100 of the answer's bytes, never all of it.
    let taken = jwks.taken.load(Ordering::SeqCst);
    assert!(taken < ok_json(&body).len(), "{taken} bytes");
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Many requests at once, each naming a `kid` airlock does not hold (or none, or a held one
/// with another algorithm): one fetch for all of them, every one refused, and the held keys
/// served meanwhile.
#[test]
fn a_flood_of_unknown_kids_costs_the_issuer_one_fetch() {
    let issuer = Arc::new(Issuer::new());
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let floods: Vec<_> = (0..48)
        .map(|n| {
            let issuer = Arc::clone(&issuer);
            thread::spawn(move || {
                let claims = claims("mallory", "echo:run");
                let token = match n % 4 {
                    0 => issuer.rs256(&format!("made-up-{n}"), &claims),
                    1 => issuer.es256(&format!("made-up-{n}"), &claims),
                    2 => rs256_with(&issuer, &json!({"alg": "RS256"}), &claims),
                    _ => rs256_with(&issuer, &json!({"alg": "RS256", "kid": "ec-1"}), &claims),
                };
                // No kid and one RSA key held: that one verifies (the RFC 7515 default).
                let reply = list(addr, &token);
                if n % 4 == 2 {
                    assert_eq!(reply.status, 200);
                } else {
                    assert_invalid(&reply, &format!("flood {n}"));
                }
            })
        })
        .collect();
    let good = issuer.es256("ec-1", &claims("alice", ""));
    assert_eq!(list(addr, &good).status, 200);
    for flood in floods {
        flood.join().unwrap();
    }
    assert_eq!(
        jwks.fetches(),
        2,
        "one fetch at start, one for the whole flood"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// The issuer rotates a key out: the fetch a new `kid` starts replaces the held set, and a
/// token of the removed key is refused from then on; a later answer with no usable key
/// keeps the set held.
#[test]
fn a_key_rotated_out_of_the_jwks_stops_verifying_after_the_next_fetch() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let old = issuer.rs256("rsa-1", &claims("alice", "echo:run"));
    assert_eq!(list(addr, &old).status, 200);
    *jwks.keys.lock().unwrap() = json!({"keys": [issuer.ec_jwk("ec-2")]});
    let new = issuer.es256("ec-2", &claims("alice", ""));
    assert_eq!(list(addr, &new).status, 200);
    assert_invalid(&list(addr, &old), "rotated out");
    assert_invalid(
        &list(addr, &issuer.es256("ec-1", &claims("alice", ""))),
        "rotated out",
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Regression (red team): a client that sent a token with an unknown `kid` and hung up
/// while the fetch it started ran cancelled that fetch, and the fetch still counted as the
/// one allowed per 30 s (the background refresh waits for it too). Once every 30 s, such a
/// client kept airlock from ever learning the issuer's new keys (every token signed by a
/// rotated key refused) or dropping a key the issuer withdrew. A fetch now runs to its end
/// (within its time-out) whoever waits for it.
#[test]
fn a_client_hanging_up_during_a_jwks_fetch_does_not_cancel_it() {
    let issuer = Issuer::new();
    let (outcome, outcomes) = mpsc::channel();
    let jwks = HostileJwks::start(
        issuer.jwks(),
        Answer::Slow {
            delay: Duration::from_millis(1500),
            keys: rotated(&issuer),
            outcome,
        },
    );
    let (server, dir) = serve_manifest(crate::http_oauth::MANIFEST, &jwks.uri(), &[]);
    let addr = server.addr;
    // The attacker: a made-up kid, and a hang-up as soon as the fetch has started.
    let made_up = issuer.es256("made-up", &claims("mallory", ""));
    let request = crate::support::http::modern_bytes(
        addr,
        1,
        "tools/list",
        json!({}),
        &[("Authorization", &bearer(&made_up))],
    );
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(&request).unwrap();
    let started = std::time::Instant::now();
    while jwks.fetches.load(Ordering::SeqCst) < 2 {
        assert!(started.elapsed() < REPLY_TIMEOUT, "the fetch never started");
        thread::sleep(Duration::from_millis(10));
    }
    drop(stream);
    assert_eq!(
        outcomes.recv_timeout(REPLY_TIMEOUT).unwrap(),
        "answered",
        "the fetch was abandoned with the client that started it"
    );
    // The issuer's new key was learned: a token it signed is served without another fetch.
    let rotated_token = issuer.es256("ec-2", &claims("alice", ""));
    assert_eq!(list(addr, &rotated_token).status, 200);
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Regression (red team): one key of the issuer's JWKS that `jsonwebtoken` cannot read (here
/// a numeric `kid`) made the whole set unreadable and airlock did not start; and a key
/// published for encryption only (`key_ops` without `verify`) verified tokens. The first is
/// now skipped and the others served; the second is dropped.
#[test]
fn a_jwks_with_a_malformed_or_non_signing_key_serves_its_signing_keys_only() {
    let issuer = Issuer::new();
    let mut wrapping = issuer.ec_jwk("ec-1");
    wrapping.as_object_mut().unwrap().remove("use");
    wrapping["key_ops"] = json!(["encrypt", "wrapKey"]);
    let odd = json!({"kty": "RSA", "kid": 5, "n": "AQAB", "e": "AQAB"});
    let jwks = JwksServer::start(json!({"keys": [odd, issuer.rsa_jwk("rsa-1"), wrapping]}));
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    assert_eq!(
        list(addr, &issuer.rs256("rsa-1", &claims("alice", ""))).status,
        200
    );
    assert_invalid(
        &list(addr, &issuer.es256("ec-1", &claims("alice", ""))),
        "a key not for verifying",
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Red team: a JWT the issuer signed as something other than an access token (its `typ`
/// says so: an OpenID Connect back-channel logout token, a security event, a DPoP proof, an
/// introspection response, RFC 8725 §3.11) was taken for an access token whenever its claims
/// fit. A `typ` other than an access token's (`at+jwt`, RFC 9068) or a plain `JWT` (which
/// most identity providers still write), or none, is now refused.
#[test]
fn a_jwt_typed_as_something_else_is_not_an_access_token() {
    let issuer = Issuer::new();
    let jwks = JwksServer::start(issuer.jwks());
    let (server, dir) = serve(&jwks);
    let addr = server.addr;
    let claims = claims("alice", "echo:run");
    for typ in [
        "logout+jwt",
        "secevent+jwt",
        "dpop+jwt",
        "token-introspection+jwt",
        "application/logout+jwt",
        "id_token",
        "JWE",
        "",
    ] {
        let header = json!({"alg": "RS256", "kid": "rsa-1", "typ": typ});
        assert_invalid(&list(addr, &rs256_with(&issuer, &header, &claims)), typ);
    }
    let header = json!({"alg": "RS256", "kid": "rsa-1", "typ": 7});
    assert_invalid(
        &list(addr, &rs256_with(&issuer, &header, &claims)),
        "numeric typ",
    );
    for typ in [
        "at+jwt",
        "AT+JWT",
        "application/at+jwt",
        "JWT",
        "jwt",
        "application/jwt",
    ] {
        let header = json!({"alg": "RS256", "kid": "rsa-1", "typ": typ});
        assert_eq!(
            list(addr, &rs256_with(&issuer, &header, &claims)).status,
            200,
            "{typ}"
        );
    }
    let untyped = json!({"alg": "RS256", "kid": "rsa-1"});
    assert_eq!(
        list(addr, &rs256_with(&issuer, &untyped, &claims)).status,
        200
    );
    std::fs::remove_dir_all(dir).unwrap();
}
