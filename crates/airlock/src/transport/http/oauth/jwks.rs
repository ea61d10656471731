//! The keys access tokens are checked against: a JWKS read from a file at start, or fetched
//! from the issuer's `jwks_uri` and kept, refreshed at a bounded rate.
//!
//! Trusts the operator's configuration (the file, the URI, the CA roots) and, once fetched
//! over HTTPS from that URI (or plain HTTP on loopback), the identity provider's keys; never
//! a token. What a fetch may cost is capped: [`JWKS_FETCH_TIMEOUT`] from connect to the last
//! body byte, [`MAX_JWKS_BYTES`] of body, [`MAX_JWKS_KEYS`] keys kept. A fetch happens at
//! start (the server does not start without keys), when a token names a `kid` not held (at
//! most once per [`JWKS_MIN_REFETCH_INTERVAL`], whatever the number of such tokens; the
//! fetch at start does not count), and in
//! the background once the held set is older than [`JWKS_REFRESH_AFTER`]. A fetch that fails
//! (slow, huge, down, garbage) keeps the held keys: a request whose key is held never waits
//! for the network, and one whose key is unknown waits for at most one fetch. A fetch runs
//! in a task of its own, to its end or its time-out: a request that stops waiting for it (its
//! client hung up) does not cancel it, so no client can spend the refetch interval on fetches
//! that never finish and keep the issuer's new keys from being learned.
//!
//! Only signing keys of the kinds `crypto` verifies are kept: RSA, and EC on P-256 or P-384;
//! `oct` (symmetric) keys, keys whose `use` is not `sig` or whose `key_ops` lack `verify`,
//! and keys of other types are dropped.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper::header;
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyOperations, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use tokio_rustls::TlsConnector;

use super::OAuthError;
use crate::limits::{
    JWKS_FETCH_TIMEOUT, JWKS_MIN_REFETCH_INTERVAL, JWKS_REFRESH_AFTER, MAX_JWKS_BYTES,
    MAX_JWKS_KEYS, MAX_TLS_FILE_BYTES,
};

/// Where the keys come from.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum JwksSource {
    /// A JWKS file, read once at start (no network).
    File(PathBuf),
    /// The issuer's `jwks_uri`, fetched and kept.
    Uri(JwksUri),
}

/// A `jwks_uri` checked at start: `https://…`, or `http://…` on a loopback host only (a
/// sidecar, a test); no user info, no fragment.
#[derive(Clone)]
pub struct JwksUri {
    uri: Uri,
    host: String,
    port: u16,
    /// For HTTPS: the connector with the operator's CA roots.
    tls: Option<TlsConnector>,
}

impl std::fmt::Debug for JwksUri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksUri").field("uri", &self.uri).finish()
    }
}

impl JwksUri {
    /// Checks `text`; an `https` URI is verified against the PEM certificates in `roots`
    /// (a CA bundle such as `/etc/ssl/certs/ca-certificates.crt`).
    ///
    /// # Errors
    ///
    /// [`OAuthError::JwksUri`] for a URI that is not one of the accepted forms,
    /// [`OAuthError::JwksRoots`] for roots that cannot be read or hold no certificate.
    pub fn parse(text: &str, roots: &Path) -> Result<Self, OAuthError> {
        let uri: Uri = text.parse().map_err(|_| OAuthError::JwksUri)?;
        let authority = uri.authority().ok_or(OAuthError::JwksUri)?;
        if authority.as_str().contains('@') || text.contains('#') {
            return Err(OAuthError::JwksUri);
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") if is_loopback(&host) => false,
            _ => return Err(OAuthError::JwksUri),
        };
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https { Some(connector(roots)?) } else { None };
        Ok(Self {
            uri,
            host,
            port,
            tls,
        })
    }
}

/// Whether `host` names this machine: `localhost`, `127.0.0.0/8` or `::1`.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// A TLS client (ring, TLS 1.2 and 1.3) trusting the certificates of the PEM file `roots`.
fn connector(roots: &Path) -> Result<TlsConnector, OAuthError> {
    let pem = read_capped(roots, MAX_TLS_FILE_BYTES).map_err(|_| OAuthError::JwksRoots)?;
    let mut store = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        let certificate = certificate.map_err(|_| OAuthError::JwksRoots)?;
        // A bundle may hold a certificate rustls cannot use; the others still count.
        if store.add(certificate).is_err() {
            tracing::debug!("a CA certificate of the JWKS roots was skipped");
        }
    }
    if store.is_empty() {
        return Err(OAuthError::JwksRoots);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|_| OAuthError::JwksRoots)?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The first `cap` bytes of the file at `path`, or `None` when it is longer or unreadable.
fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ()> {
    let file = std::fs::File::open(path).map_err(|_| ())?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|_| ())?;
    if u64::try_from(bytes.len()).map_or(true, |len| len > cap) {
        return Err(());
    }
    Ok(bytes)
}

/// One usable key.
struct Key {
    kid: Option<Box<str>>,
    /// The JWK's `alg`, when it names one: the key is then used with that algorithm only.
    alg: Option<Algorithm>,
    /// The kinds of algorithm the key can verify.
    kind: KeyKind,
    key: DecodingKey,
}

#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
}

impl KeyKind {
    fn verifies(self, algorithm: Algorithm) -> bool {
        match self {
            Self::Rsa => matches!(
                algorithm,
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ),
            Self::P256 => algorithm == Algorithm::ES256,
            Self::P384 => algorithm == Algorithm::ES384,
        }
    }
}

/// The keys of one JWKS document.
pub(super) struct KeySet {
    keys: Vec<Key>,
    /// When it was read.
    at: Instant,
}

impl KeySet {
    /// Parses a JWKS document of at most [`MAX_JWKS_BYTES`], keeping the usable keys. A key
    /// that cannot be read as a JWK (a member of the wrong type, a repeated member) is
    /// skipped like an unusable one (RFC 7517 §5): it does not make the others unreadable.
    ///
    /// # Errors
    ///
    /// [`OAuthError::JwksInvalid`] when it is not a JWKS, or holds no usable key.
    pub(super) fn parse(bytes: &[u8]) -> Result<Self, OAuthError> {
        if bytes.len() > MAX_JWKS_BYTES {
            return Err(OAuthError::JwksInvalid);
        }
        let set: RawSet<'_> = serde_json::from_slice(bytes).map_err(|_| OAuthError::JwksInvalid)?;
        let mut keys = Vec::new();
        for raw in set.keys {
            if keys.len() == MAX_JWKS_KEYS {
                tracing::warn!(
                    kept = MAX_JWKS_KEYS,
                    "the JWKS has more keys; the rest ignored"
                );
                break;
            }
            let Ok(jwk) = serde_json::from_str::<Jwk>(raw.get()) else {
                tracing::debug!("a JWKS key that is not a readable JWK was skipped");
                continue;
            };
            match usable(&jwk) {
                Some(key) => keys.push(key),
                None => tracing::debug!(kid = ?jwk.common.key_id, "a JWKS key was skipped"),
            }
        }
        if keys.is_empty() {
            return Err(OAuthError::JwksInvalid);
        }
        Ok(Self {
            keys,
            at: Instant::now(),
        })
    }

    /// The key for a token signed with `alg` naming `kid`: the key with that `kid` (or,
    /// for a token without one, the only key that can verify `alg`), if it can verify
    /// `alg` and its own `alg`, when it has one, is `alg`.
    pub(super) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<&DecodingKey> {
        let fits = |key: &&Key| key.kind.verifies(alg) && key.alg.is_none_or(|own| own == alg);
        match kid {
            Some(kid) => self
                .keys
                .iter()
                .filter(fits)
                .find(|key| key.kid.as_deref() == Some(kid))
                .map(|key| &key.key),
            None => {
                let mut fitting = self.keys.iter().filter(fits);
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => Some(&only.key),
                    _ => None,
                }
            }
        }
    }

    /// How many keys are held.
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }
}

/// A JWKS document, each key left unread until [`KeySet::parse`] reads it alone.
#[derive(serde::Deserialize)]
struct RawSet<'a> {
    #[serde(borrow)]
    keys: Vec<&'a serde_json::value::RawValue>,
}

/// `jwk` as a key, if it is a signing key of a kind `crypto` verifies: no `use` other than
/// `sig`, no `key_ops` without `verify` (RFC 7517 §4.2, §4.3).
fn usable(jwk: &Jwk) -> Option<Key> {
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|usage| *usage != PublicKeyUse::Signature)
    {
        return None;
    }
    if jwk
        .common
        .key_operations
        .as_ref()
        .is_some_and(|operations| !operations.contains(&KeyOperations::Verify))
    {
        return None;
    }
    let kind = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => KeyKind::Rsa,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => KeyKind::P256,
            EllipticCurve::P384 => KeyKind::P384,
            _ => return None,
        },
        _ => return None,
    };
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(named) => Some(Algorithm::try_from(named).ok()?),
    };
    if alg.is_some_and(|alg| !kind.verifies(alg)) {
        return None;
    }
    let kid = match &jwk.common.key_id {
        Some(kid) if kid.len() > MAX_KID_BYTES => return None,
        Some(kid) => Some(kid.as_str().into()),
        None => None,
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key {
        kid,
        alg,
        kind,
        key,
    })
}

/// Longest `kid` kept; a token's `kid` is compared with these.
const MAX_KID_BYTES: usize = 256;

/// The held keys and what refreshes them.
pub(super) struct Keys {
    source: JwksSource,
    held: RwLock<Arc<KeySet>>,
    /// When a fetch last started; held while one runs (by the task running it), so only one
    /// runs at a time.
    fetching: Arc<tokio::sync::Mutex<Option<Instant>>>,
}

impl Keys {
    /// The keys of `source`: a file is read now; a URI is fetched by [`Keys::load`].
    ///
    /// # Errors
    ///
    /// [`OAuthError::JwksFile`] or [`OAuthError::JwksInvalid`] for a file that cannot be used.
    pub(super) fn new(source: JwksSource) -> Result<Self, OAuthError> {
        let held = match &source {
            JwksSource::File(path) => {
                let cap = u64::try_from(MAX_JWKS_BYTES).unwrap_or(u64::MAX);
                let bytes = read_capped(path, cap).map_err(|()| OAuthError::JwksFile)?;
                Some(KeySet::parse(&bytes)?)
            }
            JwksSource::Uri(_) => None,
        };
        let held = held.unwrap_or(KeySet {
            keys: Vec::new(),
            at: Instant::now(),
        });
        Ok(Self {
            source,
            held: RwLock::new(Arc::new(held)),
            fetching: Arc::new(tokio::sync::Mutex::new(None)),
        })
    }

    /// At start: fetches the keys of a URI source (a file source has them already).
    ///
    /// # Errors
    ///
    /// [`OAuthError::JwksFetch`] or [`OAuthError::JwksInvalid`]: the server does not start
    /// without keys.
    pub(super) async fn load(&self) -> Result<(), OAuthError> {
        let JwksSource::Uri(uri) = &self.source else {
            return Ok(());
        };
        // Not counted against the refetch interval: a key rotated just after start is
        // fetched by the first token naming it.
        let set = fetch_set(uri).await?;
        tracing::info!(keys = set.len(), "JWKS fetched");
        self.install(set);
        Ok(())
    }

    /// The keys held now.
    pub(super) fn held(&self) -> Arc<KeySet> {
        Arc::clone(&self.held.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn install(&self, set: KeySet) {
        *self.held.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(set);
    }

    /// For a token whose key is not held: one fetch, unless one ran less than
    /// [`JWKS_MIN_REFETCH_INTERVAL`] ago; waits at most for that fetch (or another one
    /// running). Returns the keys held afterwards.
    ///
    /// The fetch is a task holding the lock until it ends: dropping this future (the
    /// request's client hung up) leaves it running, and the next request for the key waits
    /// for it rather than finding the interval spent on nothing.
    pub(super) async fn refresh_for(
        self: Arc<Self>,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Arc<KeySet> {
        if !matches!(self.source, JwksSource::Uri(_)) {
            return self.held();
        }
        let lock = Arc::clone(&self.fetching).lock_owned();
        let Ok(mut last) = timeout(JWKS_FETCH_TIMEOUT, lock).await else {
            return self.held();
        };
        // A fetch that ran while this request waited may have brought the key.
        let held = self.held();
        if held.find(kid, alg).is_some() || recent(*last) {
            return held;
        }
        *last = Some(Instant::now());
        let keys = Arc::clone(&self);
        let fetch = tokio::spawn(async move {
            let _fetching = last;
            keys.fetch_into().await;
        });
        if fetch.await.is_err() {
            tracing::error!("the JWKS fetch task ended abnormally; the keys held are kept");
        }
        self.held()
    }

    /// Whether the held set is old enough for a background refresh; if so, also marks a
    /// refresh as due so that one request only starts it (see [`Keys::refresh_in_background`]).
    pub(super) fn stale(&self) -> bool {
        matches!(self.source, JwksSource::Uri(_))
            && self.held().at.elapsed() >= JWKS_REFRESH_AFTER
            && self.fetching.try_lock().is_ok_and(|last| !recent(*last))
    }

    /// A refresh that no request waits for (the held set is stale).
    pub(super) async fn refresh_in_background(self: Arc<Self>) {
        let Ok(mut last) = self.fetching.try_lock() else {
            return;
        };
        if recent(*last) {
            return;
        }
        *last = Some(Instant::now());
        self.fetch_into().await;
    }

    /// One fetch (of a URI source; a file source has nothing to fetch); its keys replace the
    /// held ones only if it succeeded.
    async fn fetch_into(&self) {
        let JwksSource::Uri(uri) = &self.source else {
            return;
        };
        match fetch_set(uri).await {
            Ok(set) => {
                tracing::info!(keys = set.len(), "JWKS refreshed");
                self.install(set);
            }
            Err(error) => {
                tracing::warn!(%error, "JWKS refresh failed; the keys held are kept");
            }
        }
    }
}

/// Whether a fetch started less than [`JWKS_MIN_REFETCH_INTERVAL`] ago.
fn recent(last: Option<Instant>) -> bool {
    last.is_some_and(|at| at.elapsed() < JWKS_MIN_REFETCH_INTERVAL)
}

/// Fetches and parses the JWKS at `uri`, all within [`JWKS_FETCH_TIMEOUT`].
async fn fetch_set(uri: &JwksUri) -> Result<KeySet, OAuthError> {
    let body = timeout(JWKS_FETCH_TIMEOUT, fetch(uri))
        .await
        .map_err(|_| OAuthError::JwksFetch("timed out"))??;
    KeySet::parse(&body)
}

/// `GET uri`: the body of a `200` reply, at most [`MAX_JWKS_BYTES`].
async fn fetch(uri: &JwksUri) -> Result<Bytes, OAuthError> {
    let tcp = TcpStream::connect((uri.host.as_str(), uri.port))
        .await
        .map_err(|_| OAuthError::JwksFetch("cannot connect"))?;
    match &uri.tls {
        None => get(tcp, uri).await,
        Some(connector) => {
            let name = ServerName::try_from(uri.host.clone())
                .map_err(|_| OAuthError::JwksFetch("not a TLS server name"))?;
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|_| OAuthError::JwksFetch("TLS handshake failed"))?;
            get(tls, uri).await
        }
    }
}

/// One HTTP/1.1 `GET` on `stream`.
async fn get<S>(stream: S, uri: &JwksUri) -> Result<Bytes, OAuthError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| OAuthError::JwksFetch("HTTP handshake failed"))?;
    // The connection is driven beside the request, and ends with it: when the fetch is
    // done, or when its timeout drops this future (a slow server keeps no task alive).
    let _driver = AbortOnDrop(tokio::spawn(connection));
    let authority = uri.uri.authority().map_or("", |a| a.as_str()).to_owned();
    let path = uri
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let request = Request::get(path)
        .header(header::HOST, authority)
        .header(header::ACCEPT, "application/json, application/jwk-set+json")
        .body(Empty::<Bytes>::new())
        .map_err(|_| OAuthError::JwksFetch("bad request"))?;
    let reply = sender.send_request(request).await;
    async {
        let reply = reply.map_err(|_| OAuthError::JwksFetch("no reply"))?;
        if reply.status() != StatusCode::OK {
            return Err(OAuthError::JwksFetch("status other than 200"));
        }
        let body = Limited::new(reply.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(|_| OAuthError::JwksFetch("body too large or cut"))?;
        Ok(body.to_bytes())
    }
    .await
}

/// A task aborted when this is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
