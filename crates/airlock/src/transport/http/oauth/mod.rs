//! OAuth 2.1 resource server (the MCP authorization specification): access tokens checked as
//! JWTs, the protected resource metadata of RFC 9728, and the challenges of RFC 6750.
//!
//! Trusts the operator's configuration: this server's canonical URI (the `resource`, never
//! built from a request's `Host`, which is the peer's), the issuer, the authorization servers
//! named in the metadata, the algorithms allowed, and the keys (`jwks`). Trusts no token: a
//! token is checked, in order, for its length ([`MAX_ACCESS_TOKEN_BYTES`]), its header (an
//! allowed algorithm; `none` does not parse, HMAC is never allowed; no `typ`, or one that
//! says an access token, `at+jwt`, or a plain `JWT`: a JWT the issuer typed as something else,
//! a logout token or a security event, is never taken for one), its key (the `kid` held,
//! of the algorithm's kind), its signature (`crypto`, on ring), then its claims: `iss` the
//! issuer, `aud` holding the resource (RFC 8707: a token minted for another server is
//! refused), `exp` and `nbf` with [`TOKEN_LEEWAY_SECONDS`], a `sub` (and client id) of at
//! most [`MAX_TOKEN_SUBJECT_BYTES`] visible ASCII characters, and at most
//! [`MAX_TOKEN_SCOPES`] well-formed scopes. Any failure is one answer, `401` with
//! `error="invalid_token"`: which check failed is logged at `debug` as a fixed word, never
//! the token nor a claim.
//!
//! A valid token makes a [`Grant`]: the identity `oauth:<sub>` (or `oauth:<sub>#<client>`
//! when the token names its client in `client_id` or `azp`), which keys the client's quotas
//! and binds its legacy sessions (the `oauth:` prefix cannot collide with a static token's
//! identity, a variable name), and the token's scopes, which `tools/call` checks against the
//! tool's. The token itself goes no further: handlers, commands and logs never see it.

mod crypto;
mod jwks;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hyper::Uri;
use hyper::header::HeaderValue;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

pub use jwks::{JwksSource, JwksUri};

use crate::limits::{
    MAX_ACCESS_TOKEN_BYTES, MAX_SCOPE_BYTES, MAX_TOKEN_SCOPES, MAX_TOKEN_SUBJECT_BYTES,
    TOKEN_LEEWAY_SECONDS,
};
use crate::tools::is_scope;
use jwks::Keys;

/// The path of the protected resource metadata (RFC 9728 §3), before the resource's path.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Longest URI accepted in the configuration (resource, issuer, authorization servers).
const MAX_URI_BYTES: usize = 2048;

/// How a server checks OAuth access tokens; see the module documentation.
pub struct OAuth {
    resource: String,
    issuer: String,
    authorization_servers: Vec<String>,
    algorithms: Vec<Algorithm>,
    keys: Arc<Keys>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("authorization_servers", &self.authorization_servers)
            .field("algorithms", &self.algorithms)
            .finish_non_exhaustive()
    }
}

/// Why an OAuth configuration cannot be used; raised at start, never at run time.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The resource is not an absolute `https` URI (or `http` on a loopback host) without
    /// query, fragment or user info.
    #[error(
        "the OAuth resource must be this server's absolute https URI (http on loopback only), \
         without query, fragment or user info, at most 2048 visible characters"
    )]
    Resource,
    /// The issuer or an authorization server is not such a URI.
    #[error(
        "the OAuth issuer and authorization servers must be absolute https URIs (http on \
         loopback only), without fragment or user info"
    )]
    Issuer,
    /// An algorithm that is not one of RS256, RS384, RS512, PS256, PS384, PS512, ES256,
    /// ES384, or no algorithm at all.
    #[error(
        "OAuth algorithms must be among RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 (no \
         HMAC, no none), at least one"
    )]
    Algorithm,
    /// The `jwks_uri` is not `https://…` (or `http://` on a loopback host).
    #[error("the JWKS URI must be https://… (http:// on a loopback host only), without user info")]
    JwksUri,
    /// The CA roots for an `https` JWKS URI cannot be read or hold no certificate.
    #[error("the CA certificates for the JWKS URI cannot be read or hold none")]
    JwksRoots,
    /// The JWKS file cannot be read, or is larger than `MAX_JWKS_BYTES`.
    #[error("the JWKS file cannot be read or is too large")]
    JwksFile,
    /// The JWKS is not a JSON Web Key Set, or holds no usable signing key.
    #[error("the JWKS is not a key set with a usable signing key (RSA, or EC P-256/P-384)")]
    JwksInvalid,
    /// The JWKS could not be fetched.
    #[error("the JWKS could not be fetched: {0}")]
    JwksFetch(&'static str),
}

impl OAuth {
    /// Tokens for `resource` (this server's canonical URI, as clients name it: the token's
    /// `aud` must hold it exactly) issued by `issuer` (the token's `iss`, exactly), signed by
    /// the keys of `keys`. The issuer is also the one authorization server named in the
    /// metadata, and RS256 and ES256 the algorithms allowed, until said otherwise. A JWKS
    /// file is read now.
    ///
    /// # Errors
    ///
    /// [`OAuthError::Resource`], [`OAuthError::Issuer`], or the JWKS file's error.
    pub fn new(resource: &str, issuer: &str, keys: JwksSource) -> Result<Self, OAuthError> {
        if !is_uri(resource, false) {
            return Err(OAuthError::Resource);
        }
        if !is_uri(issuer, true) {
            return Err(OAuthError::Issuer);
        }
        crypto::install();
        Ok(Self {
            resource: resource.to_owned(),
            issuer: issuer.to_owned(),
            authorization_servers: vec![issuer.to_owned()],
            algorithms: vec![Algorithm::RS256, Algorithm::ES256],
            keys: Arc::new(Keys::new(keys)?),
        })
    }

    /// The authorization servers named in the metadata, instead of the issuer alone.
    ///
    /// # Errors
    ///
    /// [`OAuthError::Issuer`] for one that is not an accepted URI, or none.
    pub fn authorization_servers<'a>(
        mut self,
        servers: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, OAuthError> {
        let servers: Vec<String> = servers.into_iter().map(str::to_owned).collect();
        if servers.is_empty() || !servers.iter().all(|server| is_uri(server, true)) {
            return Err(OAuthError::Issuer);
        }
        self.authorization_servers = servers;
        Ok(self)
    }

    /// The algorithms a token may be signed with, by their JWA names, instead of RS256 and
    /// ES256.
    ///
    /// # Errors
    ///
    /// [`OAuthError::Algorithm`] for a name outside the RSA and ECDSA ones, or none.
    pub fn algorithms<'a>(
        mut self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, OAuthError> {
        let mut algorithms = Vec::new();
        for name in names {
            let algorithm = match name {
                "RS256" => Algorithm::RS256,
                "RS384" => Algorithm::RS384,
                "RS512" => Algorithm::RS512,
                "PS256" => Algorithm::PS256,
                "PS384" => Algorithm::PS384,
                "PS512" => Algorithm::PS512,
                "ES256" => Algorithm::ES256,
                "ES384" => Algorithm::ES384,
                _ => return Err(OAuthError::Algorithm),
            };
            if !algorithms.contains(&algorithm) {
                algorithms.push(algorithm);
            }
        }
        if algorithms.is_empty() {
            return Err(OAuthError::Algorithm);
        }
        self.algorithms = algorithms;
        Ok(self)
    }
}

/// Whether `text` is an absolute `https` URI, or `http` on a loopback host, of at most
/// [`MAX_URI_BYTES`] visible ASCII characters other than `"` and `\` (it is quoted in a
/// header), without fragment or user info; with a query only if `query`.
fn is_uri(text: &str, query: bool) -> bool {
    let visible = text
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\' && b != b'#');
    if !visible || text.len() > MAX_URI_BYTES {
        return false;
    }
    let Ok(uri) = text.parse::<Uri>() else {
        return false;
    };
    let Some(authority) = uri.authority() else {
        return false;
    };
    if authority.as_str().contains('@') || (!query && uri.query().is_some()) {
        return false;
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback());
    match uri.scheme_str() {
        Some("https") => true,
        Some("http") => loopback,
        _ => false,
    }
}

/// What a valid access token grants.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    /// `oauth:<sub>` or `oauth:<sub>#<client>`.
    pub(crate) identity: Arc<str>,
    /// The token's scopes, sorted, once each.
    pub(crate) scopes: Arc<[Box<str>]>,
    /// When the token stops being accepted: its `exp` and the leeway. What it opened and
    /// holds open (a `GET` stream) ends then.
    pub(crate) expires: SystemTime,
}

/// Why a token was refused: one fixed word for the `debug` log. The peer gets
/// `invalid_token` whatever it is.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Rejection {
    /// Longer than [`MAX_ACCESS_TOKEN_BYTES`].
    TooLong,
    /// Not three base64url parts with a JSON header, an algorithm not allowed (`none`
    /// included), or a `typ` that is not an access token's.
    Header,
    /// No held key for its `kid` and algorithm, even after a refresh (or the one held has
    /// not the shape the algorithm needs).
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// Expired (past `exp` and the leeway), or no `exp`.
    Expired,
    /// Not yet valid (`nbf` in the future past the leeway).
    NotYetValid,
    /// `iss` is not the issuer.
    Issuer,
    /// `aud` does not hold this resource.
    Audience,
    /// A claim missing or of the wrong type, `sub` or client id too long or with odd
    /// characters, too many or malformed scopes.
    Claims,
}

/// The checks of one server's access tokens, built from an [`OAuth`] at start.
pub(crate) struct Verifier {
    /// Each allowed algorithm with the validation of its tokens (`jsonwebtoken` wants the
    /// algorithms of one validation to be of one family: one each is simplest).
    validations: Vec<(Algorithm, Validation)>,
    /// The issuer: `iss` must be this one string (`jsonwebtoken` also takes a list of them).
    issuer: String,
    keys: Arc<Keys>,
    metadata_paths: [String; 2],
    document: Vec<u8>,
    challenge: HeaderValue,
    invalid: HeaderValue,
    metadata_url: String,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("metadata_url", &self.metadata_url)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// The verifier of `config`, its metadata naming `scopes` (every scope a tool requires)
    /// as `scopes_supported`.
    pub(crate) fn new(config: OAuth, scopes: BTreeSet<&str>) -> Self {
        let OAuth {
            resource,
            issuer,
            authorization_servers,
            algorithms,
            keys,
        } = config;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.leeway = TOKEN_LEEWAY_SECONDS;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.set_audience(&[resource.as_str()]);
        validation.set_issuer(&[issuer.as_str()]);
        // Every claim checked is required.
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // `is_uri` held: the resource has a scheme and an authority.
        let (origin, path) = split_resource(&resource);
        let path = path.trim_end_matches('/');
        let metadata_url = format!("{origin}{METADATA_PATH}{path}");
        let document = serde_json::json!({
            "resource": resource,
            "authorization_servers": authorization_servers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
        })
        .to_string()
        .into_bytes();
        let challenge = format!(r#"Bearer resource_metadata="{metadata_url}""#);
        let invalid = format!(r#"{challenge}, error="invalid_token""#);
        let validations = algorithms
            .iter()
            .map(|algorithm| {
                let mut validation = validation.clone();
                validation.algorithms = vec![*algorithm];
                (*algorithm, validation)
            })
            .collect();
        Self {
            validations,
            issuer,
            keys,
            metadata_paths: [METADATA_PATH.to_owned(), format!("{METADATA_PATH}{path}")],
            document,
            challenge: header_value(&challenge),
            invalid: header_value(&invalid),
            metadata_url,
        }
    }

    /// At start: fetches the keys from `jwks_uri` when they come from there.
    ///
    /// # Errors
    ///
    /// The fetch's [`OAuthError`]: the server does not start without keys.
    pub(crate) async fn load(&self) -> Result<(), OAuthError> {
        self.keys.load().await
    }

    /// Whether `path` is where the metadata is served.
    pub(crate) fn is_metadata_path(&self, path: &str) -> bool {
        self.metadata_paths.iter().any(|served| served == path)
    }

    /// The metadata document (JSON).
    pub(crate) fn document(&self) -> &[u8] {
        &self.document
    }

    /// The `WWW-Authenticate` value of a `401`: for a request that `presented` a token,
    /// with `error="invalid_token"`.
    pub(crate) fn challenge(&self, presented: bool) -> HeaderValue {
        if presented {
            self.invalid.clone()
        } else {
            self.challenge.clone()
        }
    }

    /// The `WWW-Authenticate` value of a `403` for a tool requiring `scopes`.
    pub(crate) fn insufficient_scope(&self, scopes: &[Box<str>]) -> HeaderValue {
        let mut value = String::from(r#"Bearer error="insufficient_scope", scope=""#);
        for (index, scope) in scopes.iter().enumerate() {
            if index > 0 {
                value.push(' ');
            }
            value.push_str(scope);
        }
        // Scopes are scope tokens (checked when the tools were built): no quote, no backslash.
        let _infallible = write!(value, r#"", resource_metadata="{}""#, self.metadata_url);
        header_value(&value)
    }

    /// Checks `token` (the credentials of a `Bearer` header).
    ///
    /// # Errors
    ///
    /// The [`Rejection`]: the first check that failed.
    pub(crate) async fn verify(&self, token: &[u8]) -> Result<Grant, Rejection> {
        if token.len() > MAX_ACCESS_TOKEN_BYTES {
            return Err(Rejection::TooLong);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| Rejection::Header)?;
        if !header.typ.as_deref().is_none_or(is_access_token_type) {
            return Err(Rejection::Header);
        }
        let Some((_, validation)) = self
            .validations
            .iter()
            .find(|(algorithm, _)| *algorithm == header.alg)
        else {
            return Err(Rejection::Header);
        };
        let kid = header.kid.as_deref();
        let mut held = self.keys.held();
        if held.find(kid, header.alg).is_none() {
            held = Arc::clone(&self.keys).refresh_for(kid, header.alg).await;
        } else if self.keys.stale() {
            tokio::spawn(Arc::clone(&self.keys).refresh_in_background());
        }
        let key = held.find(kid, header.alg).ok_or(Rejection::UnknownKey)?;
        let data =
            jsonwebtoken::decode::<Claims>(token, key, validation).map_err(|error| match error
                .kind()
            {
                ErrorKind::InvalidSignature => Rejection::Signature,
                ErrorKind::ExpiredSignature => Rejection::Expired,
                ErrorKind::ImmatureSignature => Rejection::NotYetValid,
                ErrorKind::InvalidIssuer => Rejection::Issuer,
                ErrorKind::InvalidAudience => Rejection::Audience,
                ErrorKind::MissingRequiredClaim(claim) if claim == "exp" => Rejection::Expired,
                // A part that is not base64url: the token is not three such parts.
                ErrorKind::InvalidAlgorithm
                | ErrorKind::InvalidToken
                | ErrorKind::InvalidAlgorithmName
                | ErrorKind::MissingAlgorithm
                | ErrorKind::Base64(_) => Rejection::Header,
                // The held key has not the shape the algorithm needs (`crypto`): no key for it.
                ErrorKind::InvalidKeyFormat => Rejection::UnknownKey,
                _ => Rejection::Claims,
            })?;
        if data.claims.iss != self.issuer {
            return Err(Rejection::Issuer);
        }
        data.claims.grant()
    }
}

/// Whether the JWS `typ` `typ` says an access token: `at+jwt` (RFC 9068 §2.1) or `JWT`, the
/// type most identity providers write, in any case and with or without `application/` (RFC
/// 7515 §4.1.9). Any other type (`logout+jwt`, `secevent+jwt`, `dpop+jwt`…) is another kind
/// of JWT (RFC 8725 §3.11).
fn is_access_token_type(typ: &str) -> bool {
    const PREFIX: &str = "application/";
    let bare = match typ.get(..PREFIX.len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case(PREFIX) => typ.get(PREFIX.len()..),
        _ => Some(typ),
    };
    bare.is_some_and(|bare| bare.eq_ignore_ascii_case("at+jwt") || bare.eq_ignore_ascii_case("jwt"))
}

/// `resource` as its origin (`scheme://authority`) and its path.
fn split_resource(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |at| at.saturating_add(3));
    let path_at = resource
        .get(after_scheme..)
        .and_then(|rest| rest.find('/'))
        .map_or(resource.len(), |at| at.saturating_add(after_scheme));
    resource.split_at_checked(path_at).unwrap_or((resource, ""))
}

/// A header value from text checked to be visible ASCII; an empty one if not (never, as the
/// parts were checked at start).
fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// The claims read past the ones `jsonwebtoken` checks.
#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    /// Required and checked by the validation before this is read (a missing one is
    /// reported as expired, as the validation does).
    /// NumericDate: seconds, which may have a fraction (RFC 7519 §2).
    #[serde(default)]
    exp: Option<serde_json::Number>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScopeList>,
}

/// `scp`: a list (Okta, Entra ID) or a space-separated string.
#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeList {
    List(Vec<String>),
    Text(String),
}

impl Claims {
    fn grant(self) -> Result<Grant, Rejection> {
        if !is_identity_part(&self.sub) {
            return Err(Rejection::Claims);
        }
        let mut identity = format!("oauth:{}", self.sub);
        if let Some(client) = self.client_id.or(self.azp) {
            if !is_identity_part(&client) {
                return Err(Rejection::Claims);
            }
            identity.push('#');
            identity.push_str(&client);
        }
        let listed: Vec<String> = match (self.scope, self.scp) {
            (Some(text), _) | (None, Some(ScopeList::Text(text))) => text
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            (None, Some(ScopeList::List(list))) => list,
            (None, None) => Vec::new(),
        };
        if listed.len() > MAX_TOKEN_SCOPES
            || !listed
                .iter()
                .all(|scope| scope.len() <= MAX_SCOPE_BYTES && is_scope(scope))
        {
            return Err(Rejection::Claims);
        }
        let scopes: BTreeSet<Box<str>> = listed.into_iter().map(String::into_boxed_str).collect();
        let exp = self.exp.ok_or(Rejection::Expired)?;
        let exp = match exp.as_u64() {
            Some(seconds) => Duration::from_secs(seconds),
            None => exp
                .as_f64()
                .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
                .ok_or(Rejection::Expired)?,
        };
        let expires = exp
            .checked_add(Duration::from_secs(TOKEN_LEEWAY_SECONDS))
            .and_then(|exp| UNIX_EPOCH.checked_add(exp))
            .ok_or(Rejection::Expired)?;
        Ok(Grant {
            identity: identity.into(),
            scopes: scopes.into_iter().collect(),
            expires,
        })
    }
}

/// Whether `part` may be a part of an identity: 1 to [`MAX_TOKEN_SUBJECT_BYTES`] visible
/// ASCII characters other than `"`, `\` and `#` (the separator).
fn is_identity_part(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= MAX_TOKEN_SUBJECT_BYTES
        && part
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b'#'))
}

#[cfg(test)]
mod tests;
