//! `airlock serve --http`'s flags, and the HTTP plan they describe (origins, tokens, OAuth,
//! TLS, proxies, limits, the shared store): what they make of it is the plan's
//! (`airlock_manifest::plan::http`).

use std::net::SocketAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;
use std::time::Duration;

use airlock::transport::http::{Cidr, ProxyHeader, Unreachable};
use airlock_manifest::plan::MetricsPlan;
use airlock_manifest::plan::http::{HttpPlan, OAuthPlan, StorePlan};

/// `--quota-store`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
enum QuotaStore {
    /// This process.
    Local,
    /// The Redis every replica shares.
    Redis,
}

/// `--redis-unreachable`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, clap::ValueEnum)]
enum RedisUnreachable {
    /// Refuse with -31503 / HTTP 503.
    FailClosed,
    /// Each replica applies its own limits until Redis answers.
    Local,
}

/// A flag's value that is not one it takes; the text is what clap shows after the value.
#[derive(Debug, thiserror::Error)]
enum ValueError {
    /// `--trusted-proxy-header`.
    #[error("one of x-forwarded-for, forwarded")]
    ProxyHeader,
    /// `--http`.
    #[error(
        "ADDR is IP:PORT, such as 127.0.0.1:8080, [::1]:8080 or localhost:8080 (taken as \
         127.0.0.1); a host name is not resolved: bind an address, and add --allow-host NAME \
         to accept requests for that name"
    )]
    HttpAddr,
    /// `--trusted-proxy`.
    #[error("{0}")]
    Cidr(&'static str),
}

fn parse_proxy_header(text: &str) -> Result<ProxyHeader, ValueError> {
    match text.to_ascii_lowercase().as_str() {
        "x-forwarded-for" => Ok(ProxyHeader::XForwardedFor),
        "forwarded" => Ok(ProxyHeader::Forwarded),
        _ => Err(ValueError::ProxyHeader),
    }
}

/// Serving over HTTP instead of stdio, and the metrics endpoint.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("listeners").multiple(true).args(["http", "metrics"])))]
pub(crate) struct HttpFlags {
    /// Serve MCP over Streamable HTTP at ADDR (e.g. 127.0.0.1:8080), endpoint /mcp.
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    http: Option<SocketAddr>,
    /// Serve Prometheus metrics at ADDR (e.g. 127.0.0.1:9464), endpoint /metrics, on a
    /// listener of its own; with stdio or --http.
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    metrics: Option<SocketAddr>,
    /// Allow a bind address other than loopback for --http and --metrics (warns when --http
    /// has no --auth-token-env).
    #[arg(long, requires = "listeners")]
    allow_remote: bool,
    /// Let web pages on ORIGIN (`http(s)://host[:port]`) use the server: its requests are
    /// accepted and its browser may read the replies (CORS); repeatable. Loopback origins are
    /// accepted without it, but get no CORS headers unless listed.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Also accept requests whose Host names HOST (any port), on --http and --metrics;
    /// repeatable.
    #[arg(long, value_name = "HOST", requires = "listeners")]
    allow_host: Vec<String>,
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
    auth_token_env: Vec<String>,
    /// Most HTTP connections open at once.
    #[arg(long, value_name = "N", requires = "http")]
    max_connections: Option<NonZeroUsize>,
    /// Most HTTP connections open at once from one address (an IPv6 /64).
    #[arg(long, value_name = "N", requires = "http")]
    max_connections_per_address: Option<NonZeroUsize>,
    /// Quota on tools/call per client (token identity, else address): calls per minute.
    #[arg(long, value_name = "N", requires = "http")]
    client_calls_per_minute: Option<NonZeroU32>,
    /// Most tool calls in flight per client.
    #[arg(long, value_name = "N", requires = "http")]
    client_in_flight: Option<NonZeroUsize>,
    /// Quota on every HTTP request per client: requests per minute.
    #[arg(long, value_name = "N", requires = "http")]
    client_requests_per_minute: Option<NonZeroU32>,
    /// Most legacy sessions at once.
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions: Option<NonZeroUsize>,
    /// Most legacy sessions per client; its next initialize ends its least recently used one.
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions_per_client: Option<NonZeroUsize>,
    /// Trust the reverse proxy at ADDR[/PREFIX] to say who its clients are, in the header
    /// --trusted-proxy-header names; repeatable.
    #[arg(long, value_name = "CIDR", requires = "http", value_parser = parse_cidr)]
    trusted_proxy: Vec<Cidr>,
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
    trusted_proxy_header: ProxyHeader,
    /// Serve HTTPS (TLS 1.2 and 1.3): the certificate chain, PEM, the server's first.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// Accept OAuth access tokens (JWTs) for this server's canonical URI, as clients name it
    /// (https://HOST/mcp): tokens must name it in `aud`; the protected resource metadata at
    /// /.well-known/oauth-protected-resource names it.
    #[arg(long, value_name = "URL", requires_all = ["http", "oauth_issuer"])]
    oauth_resource: Option<String>,
    /// The issuer of the access tokens (their `iss`, exactly).
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    oauth_issuer: Option<String>,
    /// An authorization server the metadata names (default: the issuer); repeatable.
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    oauth_authorization_server: Vec<String>,
    /// The issuer's signing keys: a JWKS file, read at start.
    #[arg(
        long,
        value_name = "FILE",
        requires = "oauth_resource",
        conflicts_with = "oauth_jwks_uri"
    )]
    oauth_jwks_file: Option<PathBuf>,
    /// The issuer's signing keys: its jwks_uri (https, or http on loopback), fetched at start
    /// and refreshed.
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    oauth_jwks_uri: Option<String>,
    /// The CA certificates (PEM) an https --oauth-jwks-uri is checked against.
    #[arg(
        long,
        value_name = "FILE",
        requires = "oauth_jwks_uri",
        default_value = "/etc/ssl/certs/ca-certificates.crt"
    )]
    oauth_jwks_ca: PathBuf,
    /// An algorithm tokens may be signed with (RS256 RS384 RS512 PS256 PS384 PS512 ES256
    /// ES384); repeatable; default RS256 and ES256.
    #[arg(long, value_name = "ALG", requires = "oauth_resource")]
    oauth_algorithm: Vec<String>,
    /// Where quotas, in-flight caps and legacy sessions are counted: `local` (this process)
    /// or `redis` (shared by every replica using the same Redis and namespace; the URL is
    /// read from --redis-url-env). Default: the manifest's `[limits] quota_store`, else local.
    #[arg(long, value_name = "STORE", requires = "http", value_enum)]
    quota_store: Option<QuotaStore>,
    /// The environment variable holding the Redis URL (redis://[:PASSWORD@]HOST[:PORT][/DB]);
    /// never the URL itself, which may hold a password.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "AIRLOCK_REDIS_URL",
        allow_hyphen_values = true
    )]
    redis_url_env: String,
    /// The prefix of every key (`[A-Za-z0-9_.-]`, at most 64 bytes): replicas of one deployment
    /// share it, other deployments on the same Redis use their own. Default: the manifest's
    /// `[limits] redis_namespace`, else `airlock`.
    #[arg(long, value_name = "NAME")]
    redis_namespace: Option<String>,
    /// While Redis is unreachable: `fail-closed` (refuse with -31503 / HTTP 503) or `local`
    /// (each replica applies its own limits until Redis answers). Default: the manifest's
    /// `[limits] redis_unreachable`, else fail-closed.
    #[arg(long, value_name = "POLICY", value_enum)]
    redis_unreachable: Option<RedisUnreachable>,
    /// Expiry of an in-flight lease in Redis, in milliseconds (renewed every third of it): how
    /// soon a replica that died gives its calls' slots back. Default: the manifest's
    /// `[limits] redis_lease_ms`, else 15000.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1000..=3_600_000))]
    redis_lease_ms: Option<u64>,
}

/// `--http`: an IP address and port; `localhost:PORT` is taken as `127.0.0.1:PORT` (the
/// name is never resolved: a resolver could say anything).
fn parse_http_addr(text: &str) -> Result<SocketAddr, ValueError> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(ValueError::HttpAddr)
}

fn parse_cidr(text: &str) -> Result<Cidr, ValueError> {
    Cidr::parse(text).map_err(ValueError::Cidr)
}

impl HttpFlags {
    /// The HTTP plan these flags describe, when `--http` was given, and the metrics
    /// endpoint's, when `--metrics` was.
    pub(crate) fn plans(self) -> (Option<HttpPlan>, Option<MetricsPlan>) {
        let metrics = self.metrics.map(|addr| MetricsPlan {
            addr,
            allow_remote: self.allow_remote,
            allow_host: self.allow_host.clone(),
        });
        (self.plan(), metrics)
    }

    /// The HTTP plan these flags describe, when `--http` was given.
    fn plan(self) -> Option<HttpPlan> {
        let addr = self.http?;
        let tls = self.tls_cert.zip(self.tls_key);
        let oauth = self
            .oauth_resource
            .zip(self.oauth_issuer)
            .map(|(resource, issuer)| OAuthPlan {
                resource,
                issuer,
                authorization_servers: self.oauth_authorization_server,
                jwks_file: self.oauth_jwks_file,
                jwks_uri: self.oauth_jwks_uri,
                jwks_ca: self.oauth_jwks_ca,
                algorithms: self.oauth_algorithm,
            });
        let store = StorePlan {
            redis: self.quota_store.map(|store| store == QuotaStore::Redis),
            url_env: self.redis_url_env,
            namespace: self.redis_namespace,
            unreachable: self.redis_unreachable.map(|policy| match policy {
                RedisUnreachable::Local => Unreachable::LocalLimits,
                RedisUnreachable::FailClosed => Unreachable::FailClosed,
            }),
            lease: self.redis_lease_ms.map(Duration::from_millis),
        };
        Some(HttpPlan {
            addr,
            allow_remote: self.allow_remote,
            allow_origin: self.allow_origin,
            allow_host: self.allow_host,
            auth_token_env: self.auth_token_env,
            max_connections: self.max_connections,
            max_connections_per_address: self.max_connections_per_address,
            client_calls_per_minute: self.client_calls_per_minute,
            client_in_flight: self.client_in_flight,
            client_requests_per_minute: self.client_requests_per_minute,
            max_sessions: self.max_sessions,
            max_sessions_per_client: self.max_sessions_per_client,
            trusted_proxy: self.trusted_proxy,
            trusted_proxy_header: self.trusted_proxy_header,
            tls,
            oauth,
            store,
        })
    }
}
