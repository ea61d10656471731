//! `airlock serve --http`'s flags and what they make: the HTTP configuration (origins,
//! tokens, OAuth, TLS, proxies, limits) and the shared store's settings.

use std::net::SocketAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;
use std::time::Duration;

use airlock::transport::http::{
    AllowList, Cidr, HttpConfig, JwksSource, JwksUri, OAuth, OAuthError, OriginError, ProxyHeader,
    SharedStore, StoreError, Tls, TlsError, TokenError, Tokens, TrustedProxies, Unreachable,
};
use airlock::{HttpLimits, Rate};
use airlock_manifest::manifest;

/// `--quota-store`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
pub(crate) enum QuotaStore {
    /// This process.
    Local,
    /// The Redis every replica shares.
    Redis,
}

/// `--redis-unreachable`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
pub(crate) enum RedisUnreachable {
    /// Refuse with -31503 / HTTP 503.
    FailClosed,
    /// Each replica applies its own limits until Redis answers.
    Local,
}

pub(crate) fn parse_proxy_header(text: &str) -> Result<ProxyHeader, String> {
    match text.to_ascii_lowercase().as_str() {
        "x-forwarded-for" => Ok(ProxyHeader::XForwardedFor),
        "forwarded" => Ok(ProxyHeader::Forwarded),
        _ => Err("one of x-forwarded-for, forwarded".to_owned()),
    }
}

/// Serving over HTTP instead of stdio.
#[derive(Debug, clap::Args)]
pub(crate) struct HttpFlags {
    /// Serve MCP over Streamable HTTP at ADDR (e.g. 127.0.0.1:8080), endpoint /mcp.
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    pub(crate) http: Option<SocketAddr>,
    /// Allow a bind address other than loopback (warns when no --auth-token-env is given).
    #[arg(long, requires = "http")]
    pub(crate) allow_remote: bool,
    /// Let web pages on ORIGIN (`http(s)://host[:port]`) use the server: its requests are
    /// accepted and its browser may read the replies (CORS); repeatable. Loopback origins are
    /// accepted without it, but get no CORS headers unless listed.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub(crate) allow_origin: Vec<String>,
    /// Also accept requests whose Host names HOST (any port); repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub(crate) allow_host: Vec<String>,
    /// Require a bearer token, read from the environment variable NAME; repeatable (each
    /// variable is one client identity).
    // Hyphen values are taken: a token given here by mistake that starts with `-` is refused
    // by our check, which never shows it, instead of clap's, which would.
    #[arg(
        long,
        value_name = "NAME",
        requires = "http",
        allow_hyphen_values = true
    )]
    pub(crate) auth_token_env: Vec<String>,
    /// Most HTTP connections open at once.
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) max_connections: Option<NonZeroUsize>,
    /// Most HTTP connections open at once from one address (an IPv6 /64).
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) max_connections_per_address: Option<NonZeroUsize>,
    /// Quota on tools/call per client (token identity, else address): calls per minute.
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) client_calls_per_minute: Option<NonZeroU32>,
    /// Most tool calls in flight per client.
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) client_in_flight: Option<NonZeroUsize>,
    /// Quota on every HTTP request per client: requests per minute.
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) client_requests_per_minute: Option<NonZeroU32>,
    /// Most legacy sessions at once.
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) max_sessions: Option<NonZeroUsize>,
    /// Most legacy sessions per client; its next initialize ends its least recently used one.
    #[arg(long, value_name = "N", requires = "http")]
    pub(crate) max_sessions_per_client: Option<NonZeroUsize>,
    /// Trust the reverse proxy at ADDR[/PREFIX] to say who its clients are, in the header
    /// --trusted-proxy-header names; repeatable.
    #[arg(long, value_name = "CIDR", requires = "http", value_parser = parse_cidr)]
    pub(crate) trusted_proxy: Vec<Cidr>,
    /// The forwarding header the trusted proxies append to, the only one believed (read from
    /// the right, trusted hops skipped); the other is ignored: x-forwarded-for (nginx,
    /// HAProxy, Envoy) or forwarded (RFC 7239).
    #[arg(
        long,
        value_name = "HEADER",
        requires = "trusted_proxy",
        default_value = "x-forwarded-for",
        value_parser = parse_proxy_header
    )]
    pub(crate) trusted_proxy_header: ProxyHeader,
    /// Serve HTTPS (TLS 1.2 and 1.3): the certificate chain, PEM, the server's first.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    pub(crate) tls_key: Option<PathBuf>,
    /// Accept OAuth access tokens (JWTs) for this server's canonical URI, as clients name it
    /// (https://HOST/mcp): tokens must name it in `aud`; the protected resource metadata at
    /// /.well-known/oauth-protected-resource names it.
    #[arg(long, value_name = "URL", requires_all = ["http", "oauth_issuer"])]
    pub(crate) oauth_resource: Option<String>,
    /// The issuer of the access tokens (their `iss`, exactly).
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    pub(crate) oauth_issuer: Option<String>,
    /// An authorization server the metadata names (default: the issuer); repeatable.
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    pub(crate) oauth_authorization_server: Vec<String>,
    /// The issuer's signing keys: a JWKS file, read at start.
    #[arg(
        long,
        value_name = "FILE",
        requires = "oauth_resource",
        conflicts_with = "oauth_jwks_uri"
    )]
    pub(crate) oauth_jwks_file: Option<PathBuf>,
    /// The issuer's signing keys: its jwks_uri (https, or http on loopback), fetched at start
    /// and refreshed.
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    pub(crate) oauth_jwks_uri: Option<String>,
    /// The CA certificates (PEM) an https --oauth-jwks-uri is checked against.
    #[arg(
        long,
        value_name = "FILE",
        requires = "oauth_jwks_uri",
        default_value = "/etc/ssl/certs/ca-certificates.crt"
    )]
    pub(crate) oauth_jwks_ca: PathBuf,
    /// An algorithm tokens may be signed with (RS256 RS384 RS512 PS256 PS384 PS512 ES256
    /// ES384); repeatable; default RS256 and ES256.
    #[arg(long, value_name = "ALG", requires = "oauth_resource")]
    pub(crate) oauth_algorithm: Vec<String>,
    /// Where quotas, in-flight caps and legacy sessions are counted: `local` (this process)
    /// or `redis` (shared by every replica using the same Redis and namespace; the URL is
    /// read from --redis-url-env). Default: the manifest's `[limits] quota_store`, else local.
    #[arg(long, value_name = "STORE", requires = "http", value_enum)]
    pub(crate) quota_store: Option<QuotaStore>,
    /// The environment variable holding the Redis URL (redis://[:PASSWORD@]HOST[:PORT][/DB]);
    /// never the URL itself, which may hold a password.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "AIRLOCK_REDIS_URL",
        allow_hyphen_values = true
    )]
    pub(crate) redis_url_env: String,
    /// The prefix of every key (`[A-Za-z0-9_.-]`, at most 64 bytes): replicas of one deployment
    /// share it, other deployments on the same Redis use their own. Default: the manifest's
    /// `[limits] redis_namespace`, else `airlock`.
    #[arg(long, value_name = "NAME")]
    pub(crate) redis_namespace: Option<String>,
    /// While Redis is unreachable: `fail-closed` (refuse with -31503 / HTTP 503) or `local`
    /// (each replica applies its own limits until Redis answers). Default: the manifest's
    /// `[limits] redis_unreachable`, else fail-closed.
    #[arg(long, value_name = "POLICY", value_enum)]
    pub(crate) redis_unreachable: Option<RedisUnreachable>,
    /// Expiry of an in-flight lease in Redis, in milliseconds (renewed every third of it): how
    /// soon a replica that died gives its calls' slots back. Default: the manifest's
    /// `[limits] redis_lease_ms`, else 15000.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1000..=3_600_000))]
    pub(crate) redis_lease_ms: Option<u64>,
}

/// `--http`: an IP address and port; `localhost:PORT` is taken as `127.0.0.1:PORT` (the
/// name is never resolved: a resolver could say anything).
pub(crate) fn parse_http_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(
        "ADDR is IP:PORT, such as 127.0.0.1:8080, [::1]:8080 or localhost:8080 (taken as \
         127.0.0.1); a host name is not resolved: bind an address, and add --allow-host NAME \
         to accept requests for that name"
            .to_owned(),
    )
}

pub(crate) fn parse_cidr(text: &str) -> Result<Cidr, String> {
    Cidr::parse(text).map_err(str::to_owned)
}

/// Why the HTTP flags cannot be served.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpFlagsError {
    #[error("--auth-token-env: {0}")]
    Token(#[from] TokenError),
    #[error("--allow-origin must be http://HOST[:PORT] or https://HOST[:PORT], not {:?}", .0.0)]
    Origin(#[from] OriginError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("--oauth-*: {0}")]
    OAuth(#[from] OAuthError),
    #[error("--oauth-resource needs --oauth-jwks-file or --oauth-jwks-uri")]
    NoJwks,
    #[error("--quota-store redis: {0}")]
    Store(#[from] StoreError),
    #[error(
        "--quota-store redis: the variable {0} (--redis-url-env) is not set or not UTF-8; put \
         the Redis URL in it"
    )]
    StoreUrlMissing(String),
    #[error("--redis-url-env takes the NAME of an environment variable, not the URL (not shown)")]
    StoreUrlVariable,
}

/// The HTTP configuration the flags (over the manifest's `[limits]` store settings)
/// describe, and the Redis URL as a secret for the redactor when a shared store is used.
pub(crate) fn http_config(
    flags: &HttpFlags,
    manifest: Option<&manifest::StoreSettings>,
) -> Result<(HttpConfig, Option<(String, secrecy::SecretString)>), HttpFlagsError> {
    let tokens = Tokens::from_env(flags.auth_token_env.iter().map(String::as_str))?;
    let mut limits = HttpLimits::default();
    if let Some(max) = flags.max_connections {
        limits.max_connections = max;
    }
    if let Some(max) = flags.max_connections_per_address {
        limits.max_connections_per_address = max;
    }
    if let Some(per_minute) = flags.client_calls_per_minute {
        let burst = airlock::limits::CLIENT_CALL_RATE.burst;
        limits.client_call_rate = Some(Rate { per_minute, burst });
    }
    if let Some(max) = flags.client_in_flight {
        limits.client_in_flight = max;
    }
    if let Some(per_minute) = flags.client_requests_per_minute {
        let burst = airlock::limits::CLIENT_REQUEST_RATE.burst;
        limits.client_request_rate = Some(Rate { per_minute, burst });
    }
    if let Some(max) = flags.max_sessions {
        limits.max_sessions = max;
    }
    if let Some(max) = flags.max_sessions_per_client {
        limits.max_sessions_per_client = max;
    }
    let allow = AllowList::parse(&flags.allow_host, &flags.allow_origin)?;
    let proxies =
        TrustedProxies::new(flags.trusted_proxy.clone()).reading(flags.trusted_proxy_header);
    let mut config = HttpConfig::new(allow, tokens, limits).trusting(proxies);
    if let (Some(cert), Some(key)) = (&flags.tls_cert, &flags.tls_key) {
        config = config.with_tls(Tls::from_pem_files(cert, key)?);
    }
    if let (Some(resource), Some(issuer)) = (&flags.oauth_resource, &flags.oauth_issuer) {
        let keys = match (&flags.oauth_jwks_file, &flags.oauth_jwks_uri) {
            (Some(file), _) => JwksSource::File(file.clone()),
            (None, Some(uri)) => JwksSource::Uri(JwksUri::parse(uri, &flags.oauth_jwks_ca)?),
            (None, None) => return Err(HttpFlagsError::NoJwks),
        };
        let mut oauth = OAuth::new(resource, issuer, keys)?;
        if !flags.oauth_authorization_server.is_empty() {
            oauth = oauth.authorization_servers(
                flags.oauth_authorization_server.iter().map(String::as_str),
            )?;
        }
        if !flags.oauth_algorithm.is_empty() {
            oauth = oauth.algorithms(flags.oauth_algorithm.iter().map(String::as_str))?;
        }
        config = config.with_oauth(oauth);
    }
    let redis = match flags.quota_store {
        Some(store) => store == QuotaStore::Redis,
        None => manifest.is_some(),
    };
    if !redis {
        return Ok((config, None));
    }
    let name = flags.redis_url_env.as_str();
    if !Tokens::is_variable_name(name) {
        return Err(HttpFlagsError::StoreUrlVariable);
    }
    let url = std::env::var(name).map_err(|_| HttpFlagsError::StoreUrlMissing(name.to_owned()))?;
    let url = secrecy::SecretString::from(url);
    let namespace = flags
        .redis_namespace
        .as_deref()
        .or(manifest.and_then(|store| store.namespace.as_deref()))
        .unwrap_or("airlock");
    let unreachable = match flags.redis_unreachable {
        Some(RedisUnreachable::Local) => Unreachable::LocalLimits,
        Some(RedisUnreachable::FailClosed) => Unreachable::FailClosed,
        None if manifest.is_some_and(|store| store.local_when_unreachable) => {
            Unreachable::LocalLimits
        }
        None => Unreachable::FailClosed,
    };
    let mut store = SharedStore::redis(url.clone(), namespace)?.when_unreachable(unreachable);
    let lease = flags
        .redis_lease_ms
        .map(Duration::from_millis)
        .or(manifest.and_then(|store| store.lease_ttl));
    if let Some(lease) = lease {
        store = store.with_lease_ttl(lease)?;
    }
    Ok((config.shared_store(store), Some((name.to_owned(), url))))
}
